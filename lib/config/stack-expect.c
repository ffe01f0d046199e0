/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which events carry a kernel stack and when an expected stack never
 * came (stack-expect.h): the rule shared by the daemon's setup, its
 * count of a segment's unresolved stacks, and the decoder.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "stack-expect.h"

bool stack_expect_config(const struct config *c, const struct config_event *ev)
{
	assert(c);
	assert(ev);
	return c->stacktrace_all || ev->stacktrace;
}

/* The type id in the text of a stored format file ("ID: N" on a line of its own); -1: none. */
static long format_id(const struct named_text *f)
{
	const char *p = startswith(f->data, "ID: ") ? f->data : strstr(f->data, "\nID: ");
	char *end;
	long id;

	if (!p)
		return -1;
	p += *p == '\n' ? 5 : 4;
	errno = 0;
	id = strtol(p, &end, 10);
	if (errno || end == p || (*end && *end != '\n') || id < 0 || id >= STACK_EXPECT_MAX_TYPES)
		return -1;
	return id;
}

/* Whether f is the stored format of system:name ("events/SYSTEM/EVENT/format"). */
static bool format_of(const struct named_text *f, const char *system, const char *name)
{
	const char *p = f->name + strlen("events/");
	size_t ls = strlen(system), ln = strlen(name);

	return startswith(f->name, "events/") && strncmp(p, system, ls) == 0 && p[ls] == '/' && strncmp(p + ls + 1, name, ln) == 0 &&
	       streq(p + ls + 1 + ln, "/format");
}

int stack_expect_types_load(struct stack_expect_types *ret, const struct named_text *files,
			    size_t nr_files)
{
	const char *text = NULL;
	struct config c;
	int r;

	assert(ret);
	assert(files || nr_files == 0);
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < nr_files && !text; i++)
		if (streq(files[i].name, "config"))
			text = files[i].data;
	if (!text)
		return -ENOENT;
	r = config_init(&c);
	if (r < 0)
		return r;
	/* a config this reader cannot load: no event is known to want a stack */
	r = config_load_string(&c, "config", text, NULL);
	for (unsigned e = 0; r >= 0 && e < c.nr_events; e++) {
		if (!stack_expect_config(&c, &c.events[e]))
			continue;
		for (size_t i = 0; i < nr_files; i++) {
			long id;

			if (!format_of(&files[i], c.events[e].system, c.events[e].name))
				continue;
			id = format_id(&files[i]);
			if (id >= 0)
				ret->bits[id / 8] |= (uint8_t)(1u << (id % 8));
		}
	}
	config_done(&c);
	return r < 0 ? r : 0;
}

bool stack_expect_types_has(const struct stack_expect_types *t, int type)
{
	assert(t);
	return type >= 0 && type < STACK_EXPECT_MAX_TYPES && (t->bits[type / 8] & (1u << (type % 8)));
}

bool stack_expect_lost(const struct stack_expect *x)
{
	assert(x);
	return x->want && x->crossed;
}

bool stack_expect_event(struct stack_expect *x, bool wants_stack)
{
	bool lost = stack_expect_lost(x);

	x->want = wants_stack;
	x->crossed = false;
	return lost;
}

bool stack_expect_stack(struct stack_expect *x)
{
	bool after_pause = stack_expect_lost(x);

	x->want = x->crossed = false;
	return after_pause;
}

void stack_expect_boundary(struct stack_expect *x)
{
	assert(x);
	/* only a stack still expected can be cut off by the pause */
	x->crossed = x->want;
}

bool stack_expect_end(struct stack_expect *x)
{
	return stack_expect_event(x, false);
}
