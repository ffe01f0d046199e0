/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hottest stacks (or call sites, tasks, pids) per event type, with
 * counts and shares, sorted: what `stackmapctl top` prints, in the spirit
 * of `perf report --stdio --no-children`. Samples go in; a table or one
 * JSON document comes out.
 */
#ifndef STACKMAPD_TOP_H
#define STACKMAPD_TOP_H

#include <stdbool.h>
#include <stdio.h>

#include "sample.h"
#include "util.h"

enum top_sort {
	TOP_SORT_STACK,		/* the whole stack (function names) */
	TOP_SORT_CALLSITE,	/* the innermost frame */
	TOP_SORT_COMM,
	TOP_SORT_PID,
	TOP_SORT_MAX
};

/* "stack", "callsite", "comm", "pid" to enum top_sort; -EINVAL for others. */
int top_sort_from_string(const char *s);

struct top;

/* A new table sorted by sort, or NULL without memory. */
struct top *top_new(enum top_sort sort);

struct top *top_free(struct top *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct top *, top_free);

/* Count one sample (borrowed). Samples without a stack count under "[no stack]". */
int top_add(struct top *t, const struct sample *s);

/*
 * Print to f (borrowed), event types by decreasing count, each with its
 * rows by decreasing count (ties by key), at most limit rows per event
 * type (0: all). As text:
 *   # kmalloc: 6 events
 *       50.00%        3  __kmalloc <- do_sys_open <- entry_SYSCALL_64
 * or as JSON: {"sort":..., "events":[{"event","total","rows":[{"count",
 * "percent","key"}, and "frames" (innermost first) when sorted by stack]}]}.
 * Returns 0 or -errno.
 */
int top_print(const struct top *t, FILE *f, bool json, size_t limit);

#endif
