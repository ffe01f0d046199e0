/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-segment tallies of samples (segtally.h). A sample finds its segment
 * by its origin's serial, remembered on first sight by the path; the last
 * hit is tried first, since samples come in runs of one segment.
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
	/* a recovered segment's index lost its figures: its pages say what was lost */
	if (idx && idx->nr_cpus && !(idx->flags & SEGMENT_INDEX_F_TRUNCATED)) {
		s->index = calloc(idx->nr_cpus, sizeof(*s->index));
		if (!s->index)
			return -ENOMEM;
		memcpy(s->index, idx->cpus, idx->nr_cpus * sizeof(*s->index));
		s->nr_index = idx->nr_cpus;
	}
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

static struct segtally_cpu *cpu_of(struct segtally_segment *seg, unsigned int cpu)
{
	for (size_t i = 0; i < seg->nr_cpus; i++)
		if (seg->cpus[i].cpu == cpu)
			return &seg->cpus[i];
	if (GREEDY_REALLOC(seg->cpus, seg->cap_cpus, seg->nr_cpus + 1) < 0)
		return NULL;
	seg->cpus[seg->nr_cpus] = (struct segtally_cpu){ .cpu = cpu, .first_ts = UINT64_MAX };
	return &seg->cpus[seg->nr_cpus++];
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

int segtally_loss(const struct segtally_segment *seg, size_t i, struct segtally_loss *ret)
{
	const bool by_index = seg->index != NULL;
	size_t n = by_index ? seg->nr_index : seg->nr_cpus;

	for (size_t k = 0; k < n; k++) {
		uint32_t cpu = by_index ? seg->index[k].cpu : seg->cpus[k].cpu;
		struct segtally_cpu none = { .cpu = cpu, .first_ts = UINT64_MAX };
		const struct segtally_cpu *x = &none;
		struct segtally_loss l;

		for (size_t j = 0; j < seg->nr_cpus; j++)
			if (seg->cpus[j].cpu == cpu)
				x = &seg->cpus[j];
		l = (struct segtally_loss){
			.cpu = cpu,
			.lost = by_index ? seg->index[k].lost_events : x->page_lost,
			.lost_unknown = x->page_lost_unknown,
			.first_wall = x->first_wall ?: seg->first_wall,
			.last_wall = x->first_wall ? x->last_wall : seg->last_wall,
			.first_ts = by_index ? seg->index[k].first_ts : x->first_ts,
			.last_ts = by_index ? seg->index[k].last_ts : x->last_ts,
		};
		if (l.first_ts == UINT64_MAX)
			l.first_ts = l.last_ts = 0;
		if (!l.lost && !l.lost_unknown)
			continue;
		if (i-- == 0) {
			*ret = l;
			return 0;
		}
	}
	return -ENOENT;
}
