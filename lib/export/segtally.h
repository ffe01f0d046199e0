/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What each segment's samples add up to, for exporters that report per
 * segment: its META, the rows and ring-buffer entries its samples stand
 * for, the span of each CPU's samples (trace clock and wall clock), and
 * the events each CPU lost. Losses come from the segment's index when it
 * is intact (the kernel's count, buffer-full drops and write outages
 * included: what `stackmapctl info` shows), else from the page headers
 * of its samples and the STATS records of a write outage (as info counts
 * them too). Samples of consecutive segments interleave, so the
 * tally is read once every sample is in.
 */
#ifndef STACKMAPD_SEGTALLY_H
#define STACKMAPD_SEGTALLY_H

#include <stdint.h>

#include "sample.h"
#include "segment-meta.h"
#include "segment.h"

struct segtally_cpu {
	uint32_t cpu;
	uint64_t first_ts, last_ts;	/* of its samples; first_ts UINT64_MAX: none */
	uint64_t first_wall, last_wall;	/* 0: no sample with a wall-clock time */
	uint64_t page_lost;		/* events lost, counted in page headers */
	uint64_t page_lost_unknown;	/* losses the kernel did not count */
	/* dropped by a write outage, from STATS (segments without an intact index only) */
	uint64_t write_lost;
	uint64_t write_first_ts, write_last_ts;	/* their trace-clock span, 0: unknown */
};

struct segtally_segment {
	char *path;
	struct segment_meta meta;
	const char *host, *boot_id, *recording_id, *kernel; /* from meta; "" if absent */
	uint64_t seq, bytes;
	uint64_t serial;		/* sample_origin serial of its samples, 0: none yet */
	struct segment_cpu_index *index; /* the intact index's CPU lines, NULL without one */
	uint32_t nr_index;
	uint64_t rows, entries;		/* samples, and the ring-buffer entries they stand for */
	uint64_t first_wall, last_wall;
	struct segtally_cpu *cpus;	/* sorted by cpu */
	size_t nr_cpus, cap_cpus;
	size_t last_cpu;		/* the CPU looked up last */
};

/* One CPU's losses in a segment. */
struct segtally_loss {
	uint32_t cpu;
	uint64_t lost, lost_unknown;
	uint64_t first_wall, last_wall;	/* the CPU's samples; the segment's if it has none */
	uint64_t first_ts, last_ts;
};

struct segtally {
	struct segtally_segment *segs;
	size_t nr_segs, cap_segs;
	size_t last;			/* the segment looked up last */
};

void segtally_init(struct segtally *t);
void segtally_done(struct segtally *t);

/*
 * Announce a segment file (path copied) before its samples; reads its
 * META and index. Returns 0, -ENOMEM, or -errno when it cannot be read as
 * a segment (nothing is added then).
 */
int segtally_add_segment(struct segtally *t, const char *path);

/*
 * Count sample s (borrowed; s->origin names an announced segment) as one
 * row standing for entries ring-buffer entries. Returns 0 and, if ret is
 * not NULL, its segment (owned by t), -EINVAL (no announced segment) or
 * -ENOMEM.
 */
int segtally_add(struct segtally *t, const struct sample *s, unsigned int entries,
		 struct segtally_segment **ret);

/*
 * The CPUs of seg with losses, in one pass: index order when it has an
 * intact index, else by CPU. *ret (NULL when *ret_n is 0) is the caller's
 * to free. Returns 0 or -ENOMEM.
 */
int segtally_losses(const struct segtally_segment *seg, struct segtally_loss **ret,
		    size_t *ret_n);

#endif
