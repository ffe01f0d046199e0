/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CSV export (csv.h). Event rows are streamed; stacks are interned
 * by their joined frame text, which is also what the stack table prints,
 * so the table is written from the intern table at the end.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "csv.h"
#include "strmap.h"

struct csv_export {
	FILE *events;			/* borrowed */
	struct strmap *stacks;		/* joined frames; counter = depth */
	struct buf line;
};

struct csv_export *csv_export_free(struct csv_export *c)
{
	if (!c)
		return NULL;
	strmap_free(c->stacks);
	buf_done(&c->line);
	free(c);
	return NULL;
}

static int file_error(FILE *f)
{
	if (ferror(f))
		return errno > 0 ? -errno : -EIO;
	return 0;
}

int csv_export_new(FILE *events, struct csv_export **ret)
{
	_cleanup_(csv_export_freep) struct csv_export *c = calloc(1, sizeof(*c));

	assert(events);
	assert(ret);

	if (!c)
		return -ENOMEM;
	c->stacks = strmap_new();
	if (!c->stacks)
		return -ENOMEM;
	c->events = events;
	fputs("time,cpu,pid,comm,event,stack_id\r\n", events);
	if (file_error(events) < 0)
		return file_error(events);
	*ret = steal_ptr(c);
	return 0;
}

/* s as one CSV field: quoted when it holds a separator, a quote or a line break. */
static void put_field(FILE *f, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")] && s[0] != ' ' && (!*s || s[strlen(s) - 1] != ' ')) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Stack id of s (1...), 0 without a stack. */
static int stack_id(struct csv_export *c, const struct sample *s, size_t *ret)
{
	size_t idx;
	int r = 0;

	*ret = 0;
	if (!s->nr_frames)
		return 0;
	buf_reset(&c->line);
	for (size_t i = 0; r >= 0 && i < s->nr_frames; i++) {
		char addr[SAMPLE_FRAME_NAME_MAX];
		const char *name = sample_frame_name(&s->frames[i], addr, sizeof(addr));

		r = buf_printf(&c->line, "%s%s", i ? ";" : "", name);
	}
	if (r < 0)
		return r;
	r = strmap_intern(c->stacks, (const char *)c->line.data, c->line.len, &idx);
	if (r < 0)
		return r;
	*strmap_counter(c->stacks, idx) = s->nr_frames;
	*ret = idx + 1;
	return 0;
}

int csv_export_add(struct csv_export *c, const struct sample *s)
{
	size_t id;
	int r;

	assert(c);
	assert(s);

	r = stack_id(c, s, &id);
	if (r < 0)
		return r;
	fprintf(c->events, "%" PRIu64 ".%09" PRIu64 ",%u,%d,", s->ts / 1000000000,
		s->ts % 1000000000, s->cpu, s->pid);
	put_field(c->events, s->comm ?: "<...>");
	fputc(',', c->events);
	put_field(c->events, s->event);
	fprintf(c->events, ",%zu\r\n", id);
	return file_error(c->events);
}

int csv_export_finish(struct csv_export *c, FILE *stacks)
{
	assert(c);
	assert(stacks);

	fputs("stack_id,depth,frames\r\n", stacks);
	for (size_t i = 0; i < strmap_size(c->stacks); i++) {
		fprintf(stacks, "%zu,%" PRIu64 ",", i + 1, *strmap_counter(c->stacks, i));
		put_field(stacks, strmap_get(c->stacks, i, NULL));
		fputs("\r\n", stacks);
	}
	if (fflush(stacks) != 0 || fflush(c->events) != 0)
		return errno > 0 ? -errno : -EIO;
	return file_error(stacks) ?: file_error(c->events);
}
