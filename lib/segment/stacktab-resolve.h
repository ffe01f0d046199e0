/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack table of one segment: its STACKS entries and GENERATION
 * records, and the resolution of stack references to stacks across
 * generations (doc/segment-format.md).
 */
#ifndef STACKMAPD_STACKTAB_RESOLVE_H
#define STACKMAPD_STACKTAB_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment.h"
#include "stacktab.h"

/* What an event's 4-byte stack reference is. */
enum stacktab_kind {
	STACKTAB_KERNEL_ID,	/* ftrace stack_id: kernel map id, generation per the rules */
	STACKTAB_DAEMON_REF,	/* stackmapd stack_ref: daemon table, generation 0 */
	STACKTAB_KIND_MAX
};

/* Counters of stacktab_resolve() results, per kind. */
struct stacktab_stats {
	uint64_t resolved[STACKTAB_KIND_MAX];
	uint64_t unresolved[STACKTAB_KIND_MAX];
};

/*
 * Reader limits (doc/segment-format.md): entries and frame bytes of one
 * table. Entries beyond them are not kept (stacktab_add_stacks() says
 * -EFBIG). The frames of one stack: STACKTAB_MAX_DEPTH.
 */
#define STACKTAB_MAX_ENTRIES (1u << 20)
#define STACKTAB_MAX_BYTES ((size_t)64 << 20)

/* Per-CPU GENERATION boundaries are accepted for CPUs below this. */
#define STACKTAB_MAX_CPUS 8192

struct stacktab;

/* A new empty table, or NULL without memory. Free with stacktab_free(). */
struct stacktab *stacktab_new(void);

/* Free the table and everything it owns. Accepts NULL; returns NULL. */
struct stacktab *stacktab_free(struct stacktab *t);

/*
 * Add the entries of one STACKS record payload (len bytes, borrowed; the
 * table copies what it keeps). A later entry for a (generation, id) that is
 * already known replaces it only if the known one is ABSENT; the same stack
 * again just raises refs to the larger count; a different stack marks the
 * id conflicting (it never resolves). Returns 0, -ENOMEM, -EBADMSG if
 * the payload is malformed (entries before the bad one are kept), or
 * -EFBIG when the table would exceed STACKTAB_MAX_ENTRIES or
 * STACKTAB_MAX_BYTES (entries before are kept).
 */
int stacktab_add_stacks(struct stacktab *t, const void *payload, size_t len);

/*
 * Add one GENERATION record (g borrowed). With cpu == SEGMENT_NO_CPU, a
 * time window: stack_id events are attributed by timestamp (a window added
 * again, same generations and bounds, is ignored). Otherwise a
 * strict per-CPU boundary: from now on that CPU's stack_id events use
 * strict attribution, and until stacktab_cpu_boundary() is called for it
 * they belong to g->prev_generation (for the first boundary of that CPU).
 * Returns 0, -ENOMEM, or -EINVAL (cpu >= STACKTAB_MAX_CPUS).
 */
int stacktab_add_generation(struct stacktab *t, uint32_t cpu, const struct segment_generation *g);

/*
 * The reader of that CPU's events passed the position of a per-CPU
 * GENERATION record in the segment: its following stack_id events belong
 * to generation. Returns 0, -ENOMEM or -EINVAL (cpu too large).
 */
int stacktab_cpu_boundary(struct stacktab *t, uint32_t cpu, uint32_t generation);

/*
 * Resolve the stack reference id of an event of cpu with timestamp ts.
 * Kernel ids use the CPU's strict boundaries if it has any, else the time
 * windows (doc/segment-format.md): inside a window [begin, end] the id
 * resolves only if both generations name the same frames, or it is present
 * in the previous one and ABSENT from the new one; before the first window
 * it belongs to that window's previous generation (to the window's own if it
 * has none: a map adopted at start). Windows of one reset act as one; an
 * event inside windows of different resets never resolves. Daemon refs are
 * looked up in generation 0.
 * Returns 1 and sets *ret_entry (borrowed, valid until stacktab_free()), or
 * 0 and sets *ret_reason (a message borrowed from t, valid until the next
 * call or stacktab_free()). Either output may be NULL. Counts the result.
 */
int stacktab_resolve(struct stacktab *t, uint32_t cpu, uint64_t ts, enum stacktab_kind kind,
		     uint32_t id, const struct stack_entry **ret_entry, const char **ret_reason);

/* Copy the result counters into *ret. */
void stacktab_get_stats(const struct stacktab *t, struct stacktab_stats *ret);

/* Number of distinct (generation, id) entries. */
size_t stacktab_size(const struct stacktab *t);

/*
 * Call cb for every entry in (generation, id) order. conflict is true for
 * an id with two different stacks (e is then the first one). e is
 * borrowed for the call. Returns 0, -ENOMEM, or the first negative value
 * cb returns (which stops the walk).
 */
int stacktab_foreach(const struct stacktab *t,
		     int (*cb)(const struct stack_entry *e, bool conflict, void *userdata),
		     void *userdata);

/*
 * Call cb for every GENERATION record added (a window added again only
 * once), in the order added; cpu is SEGMENT_NO_CPU for windows. Returns 0 or the first negative value of cb.
 */
int stacktab_foreach_generation(struct stacktab *t,
				int (*cb)(uint32_t cpu, const struct segment_generation *g,
					  void *userdata),
				void *userdata);

#endif
