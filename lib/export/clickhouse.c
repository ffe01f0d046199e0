/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ClickHouse export (clickhouse.h). Event rows and new stacks are streamed
 * as samples come; what a segment adds up to (its losses per CPU and its
 * loads row) is tallied per announced segment (segtally.h) and written at
 * the end, since the samples of two consecutive segments interleave. Strings are written
 * escaped as TabSeparated wants them, arrays as quoted literals.
 *
 * Allocations are paired by memory.h's analysis, one per host and boot
 * (samples of several hosts interleave in time), through its hook: what
 * the row of an allocation needs besides the pair (its segment, times,
 * event and stack key) waits in a pool slot, the cookie, until it ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "clickhouse.h"
#include "hashtab.h"
#include "memory.h"
#include "segtally.h"
#include "strmap.h"

/* What an allocation's row needs until it ends. */
struct ch_alloc {
	uint32_t seg;			/* in tally.segs */
	uint32_t event;			/* in ch_export.events */
	uint64_t ts, wall, stack_key;
};

struct ch_export {
	struct ch_files f;		/* borrowed */
	uint64_t load_id, loaded_ns;
	struct segtally tally;
	struct strmap *stacks;		/* keys written, 8 bytes each */

	struct memory_hook hook;
	struct strmap *boots;		/* "host\nboot_id" -> its analysis in mems */
	struct memory **mems;
	size_t cap_mems;
	struct strmap *events;		/* allocation event names */
	struct ch_alloc *allocs;	/* pool, indexed by cookie */
	size_t nr_allocs, cap_allocs;
	uint32_t *spare;		/* free slots of allocs */
	size_t nr_spare, cap_spare;
	size_t charged;			/* budget, of allocs and spare */
	uint32_t cur_seg;		/* the segment of the sample being added */
	uint64_t cur_key;		/* its stack key */
};

struct ch_export *ch_export_free(struct ch_export *c)
{
	if (!c)
		return NULL;
	segtally_done(&c->tally);
	strmap_free(c->stacks);
	for (size_t i = 0; c->boots && i < strmap_size(c->boots) && i < c->cap_mems; i++)
		memory_free(c->mems[i]);
	free(c->mems);
	strmap_free(c->boots);
	strmap_free(c->events);
	free(c->allocs);
	free(c->spare);
	budget_release_all(&c->charged);
	free(c);
	return NULL;
}

static int hook_alloc(const struct sample *s, void *userdata, uint64_t *ret_cookie);
static int hook_pair(const struct memory_pair *p, void *userdata);
static int hook_unknown_free(const struct sample *s, bool pages, uint64_t key, void *userdata);

int ch_export_new(const struct ch_files *files, uint64_t load_id, uint64_t loaded_ns,
		  struct ch_export **ret)
{
	_cleanup_(ch_export_freep) struct ch_export *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->stacks = strmap_new();
	c->boots = strmap_new();
	c->events = strmap_new();
	if (!c->stacks || !c->boots || !c->events)
		return -ENOMEM;
	c->hook = (struct memory_hook){ .alloc = hook_alloc, .pair = hook_pair,
					.unknown_free = hook_unknown_free, .userdata = c };
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

/* The row of a free in frees.tsv: of segment seg, s the freeing sample. */
static int put_free(struct ch_export *c, uint32_t seg, bool pages, uint64_t key,
		    const struct sample *s)
{
	const struct segtally_segment *g = &c->tally.segs[seg];
	FILE *f = c->f.frees;

	put_field(f, g->host);
	fputc('\t', f);
	put_field(f, g->boot_id);
	fputc('\t', f);
	put_field(f, g->recording_id);
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
		g->seq, c->load_id, pages ? "page" : "slab", key, s->wall_ns, s->ts);
	return file_error(f);
}

static int hook_alloc(const struct sample *s, void *userdata, uint64_t *ret_cookie)
{
	struct ch_export *c = userdata;
	size_t idx, ev;
	int r;

	r = strmap_intern(c->events, s->event, strlen(s->event), &ev);
	if (r < 0)
		return r;
	if (c->nr_spare) {
		idx = c->spare[--c->nr_spare];
	} else {
		if (c->nr_allocs >= UINT32_MAX)
			return -E2BIG;
		r = BUDGET_GREEDY_REALLOC(&c->charged, c->allocs, c->cap_allocs, c->nr_allocs + 1,
					  "the live allocations");
		if (r < 0)
			return r;
		idx = c->nr_allocs++;
	}
	c->allocs[idx] = (struct ch_alloc){ .seg = c->cur_seg, .event = (uint32_t)ev, .ts = s->ts,
					    .wall = s->wall_ns, .stack_key = c->cur_key };
	*ret_cookie = idx;
	return 0;
}

static int hook_pair(const struct memory_pair *p, void *userdata)
{
	static const char *const ends[MEMORY_END_MAX] = {
		[MEMORY_FREED] = "free", [MEMORY_FREE_LOST] = "lost", [MEMORY_LIVE] = "live",
	};
	struct ch_export *c = userdata;
	const struct ch_alloc *a = &c->allocs[p->cookie];
	const struct segtally_segment *g = &c->tally.segs[a->seg];
	FILE *f = c->f.allocations;
	int r;

	put_field(f, g->host);
	fputc('\t', f);
	put_field(f, g->boot_id);
	fputc('\t', f);
	put_field(f, g->recording_id);
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t%s\t", g->seq, c->load_id,
		p->pages ? "page" : "slab");
	put_field(f, p->kind ?: "");
	fputc('\t', f);
	put_field(f, strmap_get(c->events, a->event, NULL));
	fprintf(f, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\t", p->key, p->bytes,
		a->wall, a->ts, ends[p->end]);
	if (p->end_sample)
		fprintf(f, "%" PRIu64 "\t%" PRIu64, p->end_sample->wall_ns, p->end_sample->ts);
	else
		fputs("\\N\t\\N", f);
	fprintf(f, "\t%" PRIu64 "\n", a->stack_key);
	r = file_error(f);
	/* a free of another segment's allocation: also a row of its own, for the views */
	if (r >= 0 && p->end == MEMORY_FREED && a->seg != c->cur_seg)
		r = put_free(c, c->cur_seg, p->pages, p->key, p->end_sample);
	if (r < 0)
		return r;
	r = BUDGET_GREEDY_REALLOC(&c->charged, c->spare, c->cap_spare, c->nr_spare + 1,
				  "the live allocations");
	if (r < 0)
		return r;
	c->spare[c->nr_spare++] = (uint32_t)p->cookie;
	return 0;
}

static int hook_unknown_free(const struct sample *s, bool pages, uint64_t key, void *userdata)
{
	struct ch_export *c = userdata;

	return put_free(c, c->cur_seg, pages, key, s);
}

/* Pair the allocations and frees of s, in the analysis of its host and boot. */
static int add_memory(struct ch_export *c, const struct segtally_segment *seg,
		      const struct sample *s)
{
	_cleanup_free_ char *name = NULL;
	size_t idx;
	int r;

	if (strprintf(&name, "%s\n%s", seg->host, seg->boot_id) < 0)
		return -ENOMEM;
	r = strmap_intern(c->boots, name, strlen(name), &idx);
	if (r < 0)
		return r;
	if (r > 0) {
		if (GREEDY_REALLOC(c->mems, c->cap_mems, idx + 1) < 0)
			return -ENOMEM;	/* the name stays without its analysis: the export fails */
		c->mems[idx] = memory_new(&(struct memory_options){ .pid = -1, .hook = &c->hook });
	}
	if (idx >= c->cap_mems || !c->mems[idx])
		return -ENOMEM;
	c->cur_seg = (uint32_t)(seg - c->tally.segs);
	return memory_add(c->mems[idx], s);
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
	c->cur_key = key;
	if (r >= 0)
		r = add_memory(c, seg, s);
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

	for (size_t i = 0; r >= 0 && i < strmap_size(c->boots); i++)
		r = i < c->cap_mems && c->mems[i] ? memory_end_live(c->mems[i]) : -ENOMEM;
	for (size_t i = 0; r >= 0 && i < c->tally.nr_segs; i++) {
		uint64_t lost;

		r = put_losses(c, &c->tally.segs[i], &lost);
		if (r >= 0)
			r = put_load(c, &c->tally.segs[i], lost);
	}
	if (r < 0)
		return r;
	/* the loads rows last: a loader that inserts them last commits the rest */
	for (FILE **f = (FILE *[]){ c->f.events, c->f.stacks, c->f.losses, c->f.allocations,
				    c->f.frees, c->f.loads, NULL };
	     *f; f++)
		if (fflush(*f) != 0 || ferror(*f))
			return errno > 0 ? -errno : -EIO;
	return 0;
}
