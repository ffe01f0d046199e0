/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a segment needs to decode offline, read from tracefs: the page
 * and event headers, the formats of the recorded events and of the
 * ftrace entries in stacks, printk formats, and the task names and tgids
 * (collected again at each segment's end, since they change: the recorder
 * stores only the lines that changed, task-lines.h); and event ids from
 * their formats.
 */
#include <assert.h>

#include "config.h"
#include "tracing-internal.h"
#include "util.h"

/* The format of every event we record, and of the ftrace entries in stacks. */
static const struct {
	const char *system;
	const char *name;
	bool required;
} ftrace_formats[] = {
	{ "ftrace", "kernel_stack", true },
	{ "ftrace", "stack_id", false },	/* only with the stackmap series */
	{ "ftrace", "print", true },
	{ "ftrace", "bprint", false },
};

static int emit_file(const struct tracing *t, const char *name, bool required,
		     int (*cb)(const char *, const void *, size_t, void *), void *userdata)
{
	_cleanup_free_ char *data = NULL;
	char path[PATH_MAX];
	size_t len;
	int r;

	r = tracing_pathf(path, "%s/%s", t->dir, name);
	if (r < 0)
		return r;
	r = read_file(path, &data, &len);
	if (r == -ENOENT && !required)
		return 0;
	if (r < 0)
		return r;
	/* segments name the page and event headers without the directory */
	r = cb(startswith(name, "events/header_") ? name + strlen("events/") : name, data, len,
	       userdata);
	return r < 0 ? r : 0;
}

static int emit_format(const struct tracing *t, const char *system, const char *event,
		       bool required, int (*cb)(const char *, const void *, size_t, void *),
		       void *userdata)
{
	char name[PATH_MAX];
	int r;

	r = tracing_pathf(name, "events/%s/%s/format", system, event);
	if (r < 0)
		return r;
	return emit_file(t, name, required, cb, userdata);
}

static bool is_config_event(const struct config *c, const char *system, const char *name)
{
	for (unsigned i = 0; i < c->nr_events; i++)
		if (streq(c->events[i].system, system) && streq(c->events[i].name, name))
			return true;
	return false;
}

int tracing_collect_files(struct tracing *t,
			  int (*cb)(const char *name, const void *data, size_t len, void *userdata),
			  void *userdata)
{
	const struct config *c;
	int r;

	assert(t);
	assert(cb);

	c = t->config;
	r = emit_file(t, "events/header_page", true, cb, userdata);
	if (r < 0)
		return r;
	r = emit_file(t, "events/header_event", true, cb, userdata);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < c->nr_events; i++) {
		r = emit_format(t, c->events[i].system, c->events[i].name, true, cb, userdata);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ftrace_formats); i++) {
		if (is_config_event(c, ftrace_formats[i].system, ftrace_formats[i].name))
			continue;
		r = emit_format(t, ftrace_formats[i].system, ftrace_formats[i].name,
				ftrace_formats[i].required, cb, userdata);
		if (r < 0)
			return r;
	}
	r = emit_file(t, "printk_formats", false, cb, userdata);
	if (r < 0)
		return r;
	return tracing_collect_tasks(t, cb, userdata);
}

int tracing_collect_tasks(struct tracing *t,
			  int (*cb)(const char *name, const void *data, size_t len, void *userdata),
			  void *userdata)
{
	int r;

	assert(t);
	assert(cb);

	r = emit_file(t, "saved_cmdlines", true, cb, userdata);
	if (r < 0)
		return r;
	return emit_file(t, "saved_tgids", false, cb, userdata);
}

static int format_id(const char *format)
{
	const char *p = format;

	for (; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (startswith(p, "ID:")) {
			char *end;
			long id;

			errno = 0;
			id = strtol(p + 3, &end, 10);
			if (end == p + 3 || errno || id < 0 || id > INT_MAX)
				return -EINVAL;
			return (int)id;
		}
	}
	return -EINVAL;
}

int tracing_event_id(struct tracing *t, const char *system, const char *name)
{
	_cleanup_free_ char *format = NULL;
	char path[PATH_MAX];
	int r;

	assert(t);
	assert(system);
	assert(name);

	r = tracing_pathf(path, "%s/events/%s/%s/format", t->dir, system, name);
	if (r < 0)
		return r;
	r = read_file(path, &format, NULL);
	if (r < 0)
		return r;
	return format_id(format);
}

