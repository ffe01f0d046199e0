/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state of the stack-map module, shared by its three files and
 * nothing else: stackmap.c (reading the kernel, the snapshot and reset
 * protocol, the public calls), stackmap-store.c (immutable stacks, the
 * per-generation slot arrays and the list of generations) and
 * stackmap-tables.c (what one segment stores). Everything here runs on
 * the main thread.
 */
#ifndef STACKMAPD_STACKMAP_INTERNAL_H
#define STACKMAPD_STACKMAP_INTERNAL_H

#include "stackmap-export.h"
#include "stackmap.h"

#define NR_MARKERS 64
#define MAX_GENERATION_RECORDS 65536
/* last_good_seq of a generation whose first snapshot matched its own begin marker */
#define LAST_GOOD_BEGIN UINT64_MAX

/* One stack, immutable once created, shared by the generations that hold it. */
struct sm_stack {
	uint32_t users;
	uint16_t nr;
	uint16_t flags;			/* SEGMENT_STACK_F_TEXT */
	uint64_t *ips;			/* nr addresses (in this block), !TEXT */
	char **text;			/* nr strings (in this block), TEXT */
};

struct sm_slot {
	uint32_t id;
	uint32_t refs;			/* kernel ref_count at the last snapshot */
	struct sm_stack *stack;
};

/* Slots sorted by id. */
struct sm_slots {
	struct sm_slot *v;
	size_t n;
};

struct sm_gen {
	struct segment_generation g;
	uint64_t begin_marker_ts;	/* raw ts of the marker after the reset (0: none) */
	uint64_t start_usec;		/* CLOCK_MONOTONIC when it began */
	struct sm_slots slots;
	bool dropped;			/* content released: ids stay unresolved */
	uint64_t last_good_seq;		/* snap marker of the last consistent snapshot, 0 none */
	bool have_successes;
	uint64_t successes;		/* last sample in this generation */
	uint64_t drops_base;		/* drops when it began */
};

enum sm_state {
	SM_IDLE,		/* before stackmap_start() */
	SM_RUNNING,
	SM_FINAL,		/* final snapshot taken, reset not yet written */
	SM_RESET,		/* reset written (or found done): begin the next generation */
	SM_EXTERNAL,		/* external reset found: begin the next generation */
};

struct marker {
	uint64_t seq;
	uint64_t ts;
};

struct stackmap {
	char *path_map, *path_bin, *path_stat, *path_opt;
	bool have_bin, have_stat;
	/*
	 * Writes the reset to the open stack_map (0 or -errno); NULL: "0".
	 * A seam for the unit test, which cannot make a plain file say EBUSY.
	 */
	int (*write_reset)(int fd);

	/* policy, copied from the config */
	unsigned reset_fill;
	uint64_t reset_drops;
	uint64_t reset_interval_usec;
	uint64_t guard;			/* trace-clock units */
	bool keep_tracing;

	int opt_prev;			/* options/stackmap as found, -1 unknown */
	bool opt_changed;
	bool opt_off_seen;

	enum sm_state state;
	struct sm_gen *gens;		/* gens[i] is generation base + i */
	size_t nr_gens, cap_gens;
	uint32_t base;

	struct sm_slots pending;	/* content of the next generation after a reset */
	bool pending_external;
	bool pending_stale;		/* the map changed again since: pending proves nothing */

	struct stackmap_export snap;
	struct buf bin;
	int last_look_fd;		/* stack_map_bin opened for the look before a reset, or -1 */
	struct stackmap_stat stat;
	size_t last_snap_ids;

	struct marker markers[NR_MARKERS];
	size_t marker_next;

	struct stackmap_stats counters;
};


/* a - b, or 0 if b > a. */
uint64_t sm_sat_sub(uint64_t a, uint64_t b);

/* Drop every slot of s, releasing their stacks. */
void sm_slots_clear(struct stackmap *sm, struct sm_slots *s);

/*
 * Merge snapshot sn into s (assumed consistent with it): known ids get the
 * new reference count, new ids a stack, shared with share (may be NULL)
 * where it holds the same stack under the same id. Returns 0 or -ENOMEM
 * (s unchanged).
 */
int sm_slots_merge(struct stackmap *sm, struct sm_slots *s, const struct stackmap_export *sn,
		   const struct sm_slots *share);

/* Whether snapshot sn agrees with s: every id of s is in sn with the same stack. */
bool sm_slots_consistent(const struct sm_slots *s, const struct stackmap_export *sn);

/* The current (last) generation, NULL before the first. */
struct sm_gen *sm_gen_cur(struct stackmap *sm);
const struct sm_gen *sm_gen_cur_const(const struct stackmap *sm);

/*
 * Append a zeroed generation record (forgetting the oldest quarter when
 * MAX_GENERATION_RECORDS are held); *ret points into sm->gens until the
 * next append. Returns 0 or -ENOMEM.
 */
int sm_gen_append(struct stackmap *sm, struct sm_gen **ret);

/* Drop the content of all but the newest STACKMAP_MAX_KEPT_GENERATIONS generations. */
void sm_enforce_kept(struct stackmap *sm);

/*
 * Earliest raw timestamp at which a reset not made here can have happened
 * in generation cur (see stackmap-store.c).
 */
uint64_t sm_external_begin_raw(const struct stackmap *sm, const struct sm_gen *cur);
bool sm_reset_unbegun(const struct stackmap *sm);

#endif
