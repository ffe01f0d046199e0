/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which copy of a crash capture's events to read: where the earlier
 * copies of the same boot cannot resolve their stacks (the boot's last
 * segment, recovered after a panic, never got its stack map tables), the
 * plan reads the capture's copies instead, and the earlier segment yields
 * to it (decoder_overlap_plan_new(), decode_apply_plan()).
 */
#include <assert.h>
#include <errno.h>
#include <event-parse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode-internal.h"
#include "segment-meta.h"
#include "segment.h"
#include "stacktab-resolve.h"
#include "util.h"

/* What a plan changes in one segment. */
struct plan_entry {
	char *path;
	bool capture;
	/* per CPU: capture: read its entries after this (0: all); else: skip from this on (0: none) */
	uint64_t *at;
	size_t nr;
};

struct decoder_overlap_plan {
	struct plan_entry *e;
	size_t n, cap;
};

/* What a plan needs of a segment: its META and INDEX. */
struct head {
	const char *path;		/* borrowed */
	char *boot;
	bool capture, stackmap;
	uint64_t *overlap;		/* capture: capture_overlap */
	size_t nr_overlap, cap_overlap;
	struct segment_cpu_index *cpus;	/* the INDEX's CPU lines */
	size_t nr_cpus;
};

static void head_done(struct head *h)
{
	free(h->boot);
	free(h->overlap);
	free(h->cpus);
}

/* 0, or < 0 when the segment cannot be read (it is then left as it is). */
static int head_read(const char *path, struct head *h)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct segment_meta m = {};
	const struct segment_index *idx;
	struct segment_record rec;
	const char *mode;
	int r;

	*h = (struct head){ .path = path };
	r = segment_reader_open(path, &rd);
	if (r < 0)
		return r;
	r = segment_reader_next(rd, &rec);
	if (r != 1 || rec.type != SEGMENT_REC_META || segment_meta_parse(&m, rec.data, rec.len) < 0)
		return -EBADMSG;
	h->boot = strdup(segment_meta_get(&m, "boot_id") ?: "");
	h->capture = segment_meta_get(&m, "capture_overlap") != NULL;
	mode = segment_meta_get(&m, "stack_mode");
	h->stackmap = mode && streq(mode, "stackmap");
	if (h->capture)
		decode_parse_overlap(segment_meta_get(&m, "capture_overlap"), &h->overlap, &h->nr_overlap,
			      &h->cap_overlap);
	segment_meta_done(&m);
	idx = segment_reader_index(rd);
	if (idx && idx->nr_cpus) {
		h->cpus = calloc(idx->nr_cpus, sizeof(*h->cpus));
		if (!h->cpus)
			return -ENOMEM;
		memcpy(h->cpus, idx->cpus, idx->nr_cpus * sizeof(*h->cpus));
		h->nr_cpus = idx->nr_cpus;
	}
	return h->boot ? 0 : -ENOMEM;
}

static const struct segment_cpu_index *head_cpu(const struct head *h, unsigned int cpu)
{
	for (size_t i = 0; i < h->nr_cpus; i++)
		if (h->cpus[i].cpu == cpu && h->cpus[i].events)
			return &h->cpus[i];
	return NULL;
}

static int count_gen(uint32_t cpu, const struct segment_generation *g, void *userdata)
{
	(void)cpu;
	(void)g;
	++*(size_t *)userdata;
	return 0;
}

/*
 * Whether a segment in stack-map mode holds stack ids that nothing in it
 * resolves: it has the stack_id event but no GENERATION record (it was
 * never finished: recovered after a crash, its tables never written).
 */
static bool ids_unresolvable(const char *path)
{
	_cleanup_(decoder_segment_freep) struct decoder_segment *s = NULL;
	size_t gens = 0;

	if (decoder_segment_load(path, &s, NULL) < 0)
		return false;
	if (s->stack_type[DECODED_STACK_ID] < 0)
		return false;
	(void)stacktab_foreach_generation(s->tab, count_gen, &gens);
	return gens == 0;
}

static struct plan_entry *plan_entry(struct decoder_overlap_plan *p, const char *path,
				     bool capture, size_t nr)
{
	struct plan_entry *e;

	for (size_t i = 0; i < p->n; i++)
		if (streq(p->e[i].path, path))
			return &p->e[i];
	if (GREEDY_REALLOC(p->e, p->cap, p->n + 1) < 0)
		return NULL;
	e = &p->e[p->n];
	*e = (struct plan_entry){ .path = strdup(path), .capture = capture,
				  .at = calloc(nr ?: 1, sizeof(uint64_t)), .nr = nr };
	if (!e->path || !e->at) {
		free(e->path);
		free(e->at);
		return NULL;
	}
	/* a capture's CPUs without a pair keep their bound */
	for (size_t cpu = 0; capture && cpu < nr; cpu++)
		e->at[cpu] = UINT64_MAX;
	p->n++;
	return e;
}

/* Whether h is a recorded segment (not a capture) of c's boot. */
static bool of_boot(const struct head *h, const struct head *c)
{
	return !h->capture && h->boot && c->boot && streq(h->boot, c->boot);
}

/*
 * Capture c, against the segments of its boot among h[0..n) whose ids do
 * not resolve (yield[j]): on each CPU the capture has, they skip their
 * entries from the capture's first on, and the capture skips only what
 * its boot's other segments hold (their INDEX's last time there). A
 * recovered segment's INDEX has no CPU lines: where one of those others
 * has none, its span is not known and the capture keeps its bound (and
 * its segments their copies).
 */
static int plan_capture(struct decoder_overlap_plan *p, const struct head *c,
			const struct head *h, const bool *yield, size_t n)
{
	struct plan_entry *ec;

	for (size_t j = 0; j < n; j++)
		if (of_boot(&h[j], c) && !yield[j] && !h[j].nr_cpus)
			return 0;
	ec = plan_entry(p, c->path, true, c->nr_overlap);
	if (!ec)
		return -ENOMEM;
	for (unsigned int cpu = 0; cpu < c->nr_overlap; cpu++) {
		const struct segment_cpu_index *cc = head_cpu(c, cpu);
		uint64_t held = 0;

		if (!c->overlap[cpu] || !cc)
			continue;
		for (size_t j = 0; j < n; j++) {
			const struct segment_cpu_index *hc = head_cpu(&h[j], cpu);

			if (of_boot(&h[j], c) && !yield[j] && hc)
				held = MAX(held, MIN(hc->last_ts, c->overlap[cpu]));
		}
		ec->at[cpu] = MIN(ec->at[cpu], held);
		for (size_t j = 0; j < n; j++) {
			struct plan_entry *eh;

			if (!yield[j])
				continue;
			eh = plan_entry(p, h[j].path, false, c->nr_overlap);
			if (!eh)
				return -ENOMEM;
			eh->at[cpu] = cc->first_ts ? cc->first_ts : 1;
		}
	}
	return 0;
}

int decoder_overlap_plan_new(const char *const *paths, size_t n,
			     struct decoder_overlap_plan **ret)
{
	struct decoder_overlap_plan *p;
	struct head *h;
	bool *yield;
	int r = 0;

	assert(ret);
	p = calloc(1, sizeof(*p));
	h = calloc(n ?: 1, sizeof(*h));
	yield = calloc(n ?: 1, sizeof(*yield));
	if (!p || !h || !yield) {
		free(p);
		free(h);
		free(yield);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && r != -ENOMEM; i++)
		r = head_read(paths[i], &h[i]);
	for (size_t i = 0; i < n && r != -ENOMEM; i++) {
		bool any = false;

		if (!h[i].capture)
			continue;
		for (size_t j = 0; j < n; j++) {
			bool meets = !h[j].nr_cpus;	/* recovered: its span is not in its INDEX */

			yield[j] = false;
			if (!of_boot(&h[j], &h[i]) || !h[j].stackmap)
				continue;
			for (unsigned int cpu = 0; cpu < h[i].nr_overlap && !meets; cpu++) {
				const struct segment_cpu_index *hc = head_cpu(&h[j], cpu);
				const struct segment_cpu_index *cc = head_cpu(&h[i], cpu);

				meets = hc && cc && h[i].overlap[cpu] &&
					hc->first_ts <= h[i].overlap[cpu] && hc->last_ts >= cc->first_ts;
			}
			yield[j] = meets && ids_unresolvable(h[j].path);
			any |= yield[j];
		}
		r = any ? plan_capture(p, &h[i], h, yield, n) : 0;
	}
	for (size_t i = 0; i < n; i++)
		head_done(&h[i]);
	free(h);
	free(yield);
	if (r == -ENOMEM) {
		decoder_overlap_plan_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

struct decoder_overlap_plan *decoder_overlap_plan_free(struct decoder_overlap_plan *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n; i++) {
		free(p->e[i].path);
		free(p->e[i].at);
	}
	free(p->e);
	free(p);
	return NULL;
}

size_t decoder_overlap_plan_size(const struct decoder_overlap_plan *p)
{
	return p ? p->n : 0;
}

int decode_apply_plan(const struct decoder_overlap_plan *p, struct decoder_segment *s)
{
	const struct plan_entry *e = NULL;

	for (size_t i = 0; p && i < p->n && !e; i++)
		if (streq(p->e[i].path, s->path))
			e = &p->e[i];
	if (!e)
		return 0;
	if (e->capture) {
		for (size_t cpu = 0; cpu < e->nr && cpu < s->nr_overlap; cpu++)
			s->overlap[cpu] = MIN(s->overlap[cpu], e->at[cpu]);
		return 0;
	}
	s->yield = calloc(e->nr ?: 1, sizeof(*s->yield));
	if (!s->yield)
		return -ENOMEM;
	memcpy(s->yield, e->at, e->nr * sizeof(*s->yield));
	s->nr_yield = e->nr;
	return 0;
}
