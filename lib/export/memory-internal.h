/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What lib/export/memory.c (the pairing) keeps for lib/export/memory-print.c
 * (tables, JSON) and lib/export/memory-graph.c (SVG, flame graph).
 *
 * A moment (the peak, --at) is kept without copying every stack's figures
 * each time the peak moves: a moment has a version, bumped when it is set;
 * a stack or kind copies its live figures into its snapshot of the moment
 * the first time they change after the bump (copy on write). Its figures at
 * the moment are the snapshot when the versions match, else its current
 * ones, which have not changed since.
 */
#ifndef STACKMAPD_MEMORY_INTERNAL_H
#define STACKMAPD_MEMORY_INTERNAL_H

#include "buf.h"
#include "hashtab.h"
#include "memory.h"
#include "strmap.h"

enum { MEM_SLAB, MEM_PAGES, MEM_CLASS_MAX };
enum { MEM_PEAK, MEM_AT, MEM_BASE, MEM_MOMENT_MAX };

/* Live figures: bytes, objects, and the sum of their allocation times (ns after t0). */
struct mem_live {
	uint64_t bytes, objs;
	double tsum;
};

struct mem_snap {
	struct mem_live v;
	uint64_t version;
};

struct mem_point {
	uint64_t end_bytes, end_objs;	/* at the step's end */
	uint64_t max_bytes;		/* the most in the step */
};

struct mem_stack {
	size_t key;			/* in memory.keys: "EVENT;inner;...;outer" */
	struct mem_live live;
	struct mem_snap snap[MEM_MOMENT_MAX];
	uint64_t allocs, alloc_bytes;
	uint64_t churn, churn_bytes;	/* freed within churn_ns */
	uint64_t lost_frees;		/* its pointer allocated again before a free was seen */
	uint64_t end_min_t;		/* oldest live at the end (set when printing) */
};

struct mem_kind {
	size_t name;			/* in memory.kind_names */
	int cls;
	struct mem_live live;
	struct mem_snap snap[MEM_MOMENT_MAX];
	uint64_t max_bytes;
	struct mem_point *curve;	/* memory.nr_points */
};

/* Slab allocations by call site (memory_options.callers). */
struct mem_site {
	size_t name;			/* in memory.site_names */
	uint64_t allocs, bytes;
};

struct mem_obj {
	uint64_t key;			/* pointer or pfn */
	uint64_t t;			/* allocated at */
	uint64_t bytes;
	uint64_t cookie;		/* the hook's, if any */
	uint32_t stack, kind;
	uint8_t cls;
	bool live, selected;
};

struct mem_moment {
	bool set;
	uint64_t t, ts, wall;		/* analysis time, trace clock, realtime (0: none) */
	struct mem_live total;
	uint64_t uncertain;		/* live bytes allocated before a loss of events */
	uint64_t version;
};

enum mem_loss_kind {
	MEM_LOSS_CPU,			/* a CPU's page says events were lost before it */
	MEM_LOSS_RECORDING,		/* a new recording of the boot: nothing in between */
	MEM_LOSS_SEGMENT,		/* a segment's index counts losses its pages do not place */
	MEM_LOSS_KIND_MAX
};

struct mem_loss {
	uint64_t t, ts, wall;
	unsigned int cpu;
	long long lost;			/* -1: the kernel did not count them */
	uint64_t live_bytes;		/* what became uncertain */
	enum mem_loss_kind kind;
	char segment[64];		/* MEM_LOSS_SEGMENT: the file's name */
};

#define MEM_MAX_LOSSES 100

struct memory {
	struct memory_options o;
	size_t charged;			/* budget */

	struct strmap *keys, *kind_names;
	struct mem_stack *stacks;
	size_t nr_stacks, cap_stacks;
	struct mem_kind *kinds;
	size_t nr_kinds, cap_kinds;
	struct strmap *site_names;	/* with callers */
	struct mem_site *sites;
	size_t nr_sites, cap_sites;

	struct mem_obj *objs;		/* pool; live ones are in index */
	size_t nr_objs, cap_objs;
	uint32_t *spare;		/* indices of dead objs to reuse */
	size_t nr_spare, cap_spare;
	struct hashtab index;		/* (class, key) -> obj index + 1; and stale slots */
	size_t live;			/* live objects, selected or not */

	struct mem_live total;		/* selected live */
	uint64_t uncertain;
	struct mem_moment moment[MEM_MOMENT_MAX];

	bool started;
	uint64_t t0, ts0, t_last, ts_last, wall_last;
	bool wall_known;		/* every sample had a wall-clock time */

	uint64_t width;			/* ns per curve point */
	size_t nr_points, cur;		/* points per curve (2 x rows), the current one */
	struct mem_point *curve;	/* the total */

	const struct sample_origin *last_origin; /* borrowed, compared only; with its serial */
	uint64_t last_serial;
	char boot_id[64], recording_id[64];
	size_t boots;
	uint64_t dropped_objs, dropped_bytes;	/* live at a boot's end */

	uint64_t allocs[MEM_CLASS_MAX], frees[MEM_CLASS_MAX], selected;
	uint64_t unknown_frees[MEM_CLASS_MAX];
	uint64_t lost_frees, lost_free_bytes;
	uint64_t last_loss_t;		/* this boot; 0: none; objects up to it are uncertain */
	bool loss_open;			/* a segment with unplaced losses is being read */
	uint64_t loss_serial;		/* that segment's sample_origin serial */
	struct mem_loss *losses;
	size_t nr_losses, cap_losses;
	uint64_t all_losses;

	struct buf key;			/* scratch */
};

/* Set moment k to now: the state after the last sample (memory.c). */
void mem_moment_set(struct memory *m, int k);

/*
 * memory-print.c, for memory-graph.c too. mem_finish(): set the --at and
 * --baseline moments that no event came after (call before reading them).
 * mem_growth_to(): a stack's figures at the end of a comparison, at --at,
 * else now. mem_stack_key(): "EVENT;inner;...;outer" (borrowed).
 * mem_secs(): ns as seconds. mem_human(): bytes as "1.2 MiB" in buf, which
 * is returned. mem_moment_text(): a moment as its date (when known),
 * offset and trace-clock time, in buf, which is returned.
 */
void mem_finish(struct memory *m);
struct mem_live mem_growth_to(const struct memory *m, const struct mem_snap *s,
			      const struct mem_live *v);
const char *mem_stack_key(const struct memory *m, size_t stack);
double mem_secs(uint64_t ns);
const char *mem_human(char *buf, size_t len, uint64_t bytes);
const char *mem_moment_text(char *buf, size_t len, const struct memory *m, uint64_t t,
			    uint64_t ts);

/* The figures of v at moment k: its snapshot if taken since the moment was set. */
static inline struct mem_live mem_at(const struct memory *m, const struct mem_snap *s,
				     const struct mem_live *v, int k)
{
	return s[k].version == m->moment[k].version ? s[k].v : *v;
}

#endif
