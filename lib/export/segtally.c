/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-segment tallies of samples (segtally.h). A sample finds its segment
 * by its origin's serial, remembered on first sight by the path; the last
 * hit is tried first, since samples come in runs of one segment. A
 * segment's CPUs are kept sorted, so that a sample finds its CPU and a
 * loss row its tally by binary search: segments of thousands of CPUs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "segtally.h"
#include "util.h"

void segtally_init(struct segtally *t)
{
	*t = (struct segtally){};
}

static void segment_done(struct segtally_segment *s)
{
	free(s->path);
	segment_meta_done(&s->meta);
	free(s->index);
	free(s->cpus);
}

void segtally_done(struct segtally *t)
{
	for (size_t i = 0; i < t->nr_segs; i++)
		segment_done(&t->segs[i]);
	free(t->segs);
	*t = (struct segtally){};
}

static struct segtally_cpu *cpu_of(struct segtally_segment *seg, unsigned int cpu);

/*
 * The events a write outage of the device dropped, from the STATS records
 * that say so (doc/segment-format.md, "Write loss"): for a segment whose
 * index lost its figures (recovered after a crash), where the index would
 * have counted them. Reads every record but the pages' payloads.
 */
static int read_write_loss(struct segtally_segment *s, struct segment_reader *rd)
{
	struct segment_record rec;
	int r;

	segment_reader_skip_pages(rd, true);
	while ((r = segment_reader_next(rd, &rec)) > 0) {
		struct segment_meta m = {};
		struct segtally_cpu *c;
		uint64_t n = 0, first = 0, last = 0;

		if (rec.type != SEGMENT_REC_STATS || rec.cpu == SEGMENT_NO_CPU)
			continue;
		r = segment_meta_parse(&m, rec.data, rec.len);
		if (r >= 0 && segment_meta_u64(&m, "write_dropped_events", &n) == 0 && n) {
			(void)segment_meta_u64(&m, "write_dropped_first_ts", &first);
			(void)segment_meta_u64(&m, "write_dropped_last_ts", &last);
		}
		segment_meta_done(&m);
		if (r < 0)
			return r;
		if (!n)
			continue;
		c = cpu_of(s, rec.cpu);
		if (!c)
			return -ENOMEM;
		c->write_lost += n;
		if (first && (!c->write_first_ts || first < c->write_first_ts))
			c->write_first_ts = first;
		c->write_last_ts = MAX(c->write_last_ts, last);
	}
	/* damage after what was read: the export reading the pages reports it */
	return r == -EBADMSG ? 0 : r;
}

/* The META and intact index of the segment at s->path. */
static int read_segment(struct segtally_segment *s)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	const struct segment_index *idx;
	struct segment_record rec;
	int r;

	r = segment_reader_open(s->path, &rd);
	if (r < 0)
		return r;
	r = segment_reader_next(rd, &rec);
	if (r < 0)
		return r;
	if (r == 0 || rec.type != SEGMENT_REC_META)
		return -EBADMSG;
	r = segment_meta_parse(&s->meta, rec.data, rec.len);
	if (r < 0)
		return r;
	(void)segment_meta_u64(&s->meta, "segment_seq", &s->seq);
	s->host = segment_meta_get(&s->meta, "hostname") ?: "";
	s->boot_id = segment_meta_get(&s->meta, "boot_id") ?: "";
	s->recording_id = segment_meta_get(&s->meta, "recording_id") ?: "";
	s->kernel = segment_meta_get(&s->meta, "kernel_release") ?: "";
	s->bytes = segment_reader_file_size(rd);
	idx = segment_reader_index(rd);
	/* a recovered segment's index lost its figures: its pages and STATS say what was lost */
	if (!idx || !idx->nr_cpus || (idx->flags & SEGMENT_INDEX_F_TRUNCATED))
		return read_write_loss(s, rd);
	s->index = calloc(idx->nr_cpus, sizeof(*s->index));
	if (!s->index)
		return -ENOMEM;
	memcpy(s->index, idx->cpus, idx->nr_cpus * sizeof(*s->index));
	s->nr_index = idx->nr_cpus;
	return 0;
}

int segtally_add_segment(struct segtally *t, const char *path)
{
	struct segtally_segment s = {};
	int r;

	s.path = strdup(path);
	if (!s.path)
		return -ENOMEM;
	r = read_segment(&s);
	if (r < 0) {
		segment_done(&s);
		return r;
	}
	if (GREEDY_REALLOC(t->segs, t->cap_segs, t->nr_segs + 1) < 0) {
		segment_done(&s);
		return -ENOMEM;
	}
	t->segs[t->nr_segs++] = s;
	return 0;
}

static struct segtally_segment *segment_of(struct segtally *t, const struct sample_origin *o)
{
	if (!o)
		return NULL;
	if (t->last < t->nr_segs && t->segs[t->last].serial == o->serial)
		return &t->segs[t->last];
	for (size_t i = 0; i < t->nr_segs; i++)
		if (t->segs[i].serial == o->serial) {
			t->last = i;
			return &t->segs[i];
		}
	for (size_t i = 0; i < t->nr_segs; i++)
		if (!t->segs[i].serial && streq(t->segs[i].path, o->path)) {
			t->segs[i].serial = o->serial;
			t->last = i;
			return &t->segs[i];
		}
	return NULL;
}

/* The entry of cpu in seg->cpus (sorted by CPU), or where it would go. */
static size_t cpu_pos(const struct segtally_segment *seg, uint32_t cpu)
{
	size_t lo = 0, hi = seg->nr_cpus;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (seg->cpus[mid].cpu < cpu)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The tally of cpu, added if new. A binary search: a segment of thousands
 * of CPUs costs a few comparisons per sample, not a scan of them all.
 */
static struct segtally_cpu *cpu_of(struct segtally_segment *seg, unsigned int cpu)
{
	struct segtally_cpu *a;
	size_t i;

	if (seg->last_cpu < seg->nr_cpus && seg->cpus[seg->last_cpu].cpu == cpu)
		return &seg->cpus[seg->last_cpu];
	i = cpu_pos(seg, cpu);
	if (i < seg->nr_cpus && seg->cpus[i].cpu == cpu) {
		seg->last_cpu = i;
		return &seg->cpus[i];
	}
	if (GREEDY_REALLOC(seg->cpus, seg->cap_cpus, seg->nr_cpus + 1) < 0)
		return NULL;
	a = seg->cpus;
	memmove(&a[i + 1], &a[i], (seg->nr_cpus - i) * sizeof(*a));
	a[i] = (struct segtally_cpu){ .cpu = cpu, .first_ts = UINT64_MAX };
	seg->nr_cpus++;
	seg->last_cpu = i;
	return &a[i];
}

static void span_add(uint64_t *first, uint64_t *last, uint64_t v)
{
	if (!v)
		return;
	if (!*first || v < *first)
		*first = v;
	if (v > *last)
		*last = v;
}

int segtally_add(struct segtally *t, const struct sample *s, unsigned int entries,
		 struct segtally_segment **ret)
{
	struct segtally_segment *seg = segment_of(t, s->origin);
	struct segtally_cpu *cpu;

	if (!seg)
		return -EINVAL;
	cpu = cpu_of(seg, s->cpu);
	if (!cpu)
		return -ENOMEM;
	seg->rows++;
	seg->entries += entries;
	span_add(&seg->first_wall, &seg->last_wall, s->wall_ns);
	span_add(&cpu->first_wall, &cpu->last_wall, s->wall_ns);
	cpu->first_ts = MIN(cpu->first_ts, s->ts);
	cpu->last_ts = MAX(cpu->last_ts, s->ts);
	if (s->lost_before > 0)
		cpu->page_lost += (uint64_t)s->lost_before;
	else if (s->lost_before < 0)
		cpu->page_lost_unknown++;
	if (ret)
		*ret = seg;
	return 0;
}

/* The loss row of cpu (its index line x, NULL without an index), whose tally is t or NULL. */
static struct segtally_loss loss_of(const struct segtally_segment *seg, uint32_t cpu,
				    const struct segment_cpu_index *x, const struct segtally_cpu *t)
{
	static const struct segtally_cpu none = { .first_ts = UINT64_MAX };
	struct segtally_loss l;

	if (!t)
		t = &none;
	l = (struct segtally_loss){
		.cpu = cpu,
		/* the index counts write outages itself; without it, their STATS do */
		.lost = x ? x->lost_events : t->page_lost + t->write_lost,
		.lost_unknown = t->page_lost_unknown,
		.first_wall = t->first_wall ?: seg->first_wall,
		.last_wall = t->first_wall ? t->last_wall : seg->last_wall,
		.first_ts = x ? x->first_ts : t->first_ts,
		.last_ts = x ? x->last_ts : t->last_ts,
	};
	if (l.first_ts == UINT64_MAX) {
		/* no sample of this CPU: the span of what the outage dropped, if known */
		l.first_ts = t->write_first_ts;
		l.last_ts = t->write_last_ts;
	}
	return l;
}

int segtally_losses(const struct segtally_segment *seg, struct segtally_loss **ret,
		    size_t *ret_n)
{
	_cleanup_free_ struct segtally_loss *a = NULL;
	size_t n = seg->index ? seg->nr_index : seg->nr_cpus, k = 0;

	if (n) {
		a = calloc(n, sizeof(*a));
		if (!a)
			return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct segment_cpu_index *x = seg->index ? &seg->index[i] : NULL;
		const struct segtally_cpu *t = x ? NULL : &seg->cpus[i];
		struct segtally_loss l;

		if (x) {
			size_t j = cpu_pos(seg, x->cpu);

			if (j < seg->nr_cpus && seg->cpus[j].cpu == x->cpu)
				t = &seg->cpus[j];
		}
		l = loss_of(seg, x ? x->cpu : t->cpu, x, t);
		if (l.lost || l.lost_unknown)
			a[k++] = l;
	}
	*ret = steal_ptr(a);
	*ret_n = k;
	return 0;
}
