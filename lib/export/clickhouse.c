/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ClickHouse export (clickhouse.h). Event rows and new stacks are streamed
 * as samples come; what a segment adds up to (its losses per CPU and its
 * loads row) is tallied per announced segment (segtally.h) and written at
 * the end, since the samples of two consecutive segments interleave. Strings are written
 * escaped as TabSeparated wants them, arrays as quoted literals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse.h"
#include "hashtab.h"
#include "segtally.h"
#include "strmap.h"

struct ch_export {
	struct ch_files f;		/* borrowed */
	uint64_t load_id, loaded_ns;
	struct segtally tally;
	struct strmap *stacks;		/* keys written, 8 bytes each */
};

struct ch_export *ch_export_free(struct ch_export *c)
{
	if (!c)
		return NULL;
	segtally_done(&c->tally);
	strmap_free(c->stacks);
	free(c);
	return NULL;
}

int ch_export_new(const struct ch_files *files, uint64_t load_id, uint64_t loaded_ns,
		  struct ch_export **ret)
{
	_cleanup_(ch_export_freep) struct ch_export *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->stacks = strmap_new();
	if (!c->stacks)
		return -ENOMEM;
	segtally_init(&c->tally);
	c->f = *files;
	c->load_id = load_id;
	c->loaded_ns = loaded_ns;
	*ret = steal_ptr(c);
	return 0;
}

uint64_t ch_stack_key(const struct sample_frame *frames, size_t n)
{
	uint64_t h = HASH_FNV1A_BASIS;

	/* a stored format (doc/fleet.md): FNV-1a, whose values never change */
	for (size_t i = 0; i < n; i++) {
		char buf[SAMPLE_FRAME_NAME_MAX];
		const char *name = sample_frame_name(&frames[i], buf, sizeof(buf));

		/* the NUL ends each name: ["ab", "c"] and ["a", "bc"] differ */
		h = hash_fnv1a(h, name, strlen(name) + 1);
	}
	return h ?: 1;		/* 0 is "no stack" */
}

/* s as a TabSeparated field: backslash, tab, line breaks and NUL escaped. */
static void put_field(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* s as an element of an array literal: 'text', quote and backslash escaped. */
static void put_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			fputc('\\', f);
		if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static int file_error(FILE *f)
{
	if (ferror(f))
		return errno > 0 ? -errno : -EIO;
	return 0;
}

/* Write the stacks row of key (frames innermost first) unless this export wrote it. */
static int put_stack(struct ch_export *c, uint64_t key, const struct sample_frame *frames,
		     size_t n)
{
	size_t idx;
	int r = strmap_intern(c->stacks, (const char *)&key, sizeof(key), &idx);

	if (r <= 0)
		return r;
	fprintf(c->f.stacks, "%" PRIu64 "\t%zu\t[", key, n);
	if (!n)
		put_quoted(c->f.stacks, "[no stack]");
	for (size_t i = 0; i < n; i++) {
		char buf[SAMPLE_FRAME_NAME_MAX];

		if (i)
			fputc(',', c->f.stacks);
		put_quoted(c->f.stacks, sample_frame_name(&frames[i], buf, sizeof(buf)));
	}
	fputs("]\n", c->f.stacks);
	return file_error(c->f.stacks);
}

int ch_export_add_segment(struct ch_export *c, const char *path)
{
	return segtally_add_segment(&c->tally, path);
}

int ch_export_add(struct ch_export *c, const struct sample *s)
{
	struct segtally_segment *seg;
	unsigned int entries = (s->no_event ? 0 : 1) + (s->stack_entry ? 1 : 0);
	uint64_t key = s->nr_frames ? ch_stack_key(s->frames, s->nr_frames) : 0;
	FILE *f = c->f.events;
	int r;

	r = segtally_add(&c->tally, s, entries, &seg);
	if (r >= 0)
		r = put_stack(c, key, s->frames, s->nr_frames);
	if (r < 0)
		return r;
	put_field(f, seg->host);
	fputc('\t', f);
	put_field(f, seg->boot_id);
	fputc('\t', f);
	put_field(f, seg->recording_id);
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t", seg->seq, c->load_id);
	put_field(f, seg->kernel);
	fprintf(f, "\t%u\t%d\t", s->cpu, s->pid);
	put_field(f, s->comm ?: "<...>");
	fputc('\t', f);
	put_field(f, s->system ?: "");
	fputc('\t', f);
	put_field(f, s->event);
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%u\n", s->ts, s->wall_ns, key,
		entries);
	return file_error(f);
}

/* The segment's rows of the losses table; adds what it lost to *ret_lost. */
static int put_losses(struct ch_export *c, const struct segtally_segment *seg, uint64_t *ret_lost)
{
	_cleanup_free_ struct segtally_loss *ls = NULL;
	FILE *f = c->f.losses;
	size_t n;
	int r;

	*ret_lost = 0;
	r = segtally_losses(seg, &ls, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct segtally_loss *l = &ls[i];

		put_field(f, seg->host);
		fputc('\t', f);
		put_field(f, seg->boot_id);
		fputc('\t', f);
		put_field(f, seg->recording_id);
		fprintf(f,
			"\t%" PRIu64 "\t%" PRIu64 "\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
			seg->seq, c->load_id, l->cpu, l->lost, l->lost_unknown, l->first_wall,
			l->last_wall, l->first_ts, l->last_ts);
		*ret_lost += l->lost;
	}
	return file_error(f);
}

static int put_load(struct ch_export *c, const struct segtally_segment *seg, uint64_t lost)
{
	FILE *f = c->f.loads;

	fprintf(f, "%" PRIu64 "\t%" PRIu64 "\t", c->load_id, c->loaded_ns);
	put_field(f, seg->host);
	fputc('\t', f);
	put_field(f, seg->boot_id);
	fputc('\t', f);
	put_field(f, seg->recording_id);
	fprintf(f, "\t%" PRIu64 "\t", seg->seq);
	put_field(f, seg->kernel);
	fputc('\t', f);
	put_field(f, seg->path);
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
		seg->bytes, seg->rows, seg->entries, lost, seg->first_wall, seg->last_wall);
	return file_error(f);
}

int ch_export_finish(struct ch_export *c)
{
	int r = 0;

	for (size_t i = 0; r >= 0 && i < c->tally.nr_segs; i++) {
		uint64_t lost;

		r = put_losses(c, &c->tally.segs[i], &lost);
		if (r >= 0)
			r = put_load(c, &c->tally.segs[i], lost);
	}
	if (r < 0)
		return r;
	/* the loads rows last: a loader that inserts them last commits the rest */
	for (FILE **f = (FILE *[]){ c->f.events, c->f.stacks, c->f.losses, c->f.loads, NULL }; *f;
	     f++)
		if (fflush(*f) != 0 || ferror(*f))
			return errno > 0 ? -errno : -EIO;
	return 0;
}
