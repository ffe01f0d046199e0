/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hottest stacks (or call sites, tasks, pids) per event type, with
 * counts and shares, sorted: what `stackmapctl top` prints, as `perf report
 * --stdio --no-children` does (each event's first frame, the tree of its
 * callers beneath) or, with children, as `perf report --children`.
 * Samples go in; a table or one JSON document comes out.
 */
#ifndef STACKMAPD_TOP_H
#define STACKMAPD_TOP_H

#include <stdbool.h>
#include <stdio.h>

#include "sample.h"
#include "util.h"

enum top_sort {
	TOP_SORT_STACK,		/* the whole stack (function names), one line */
	TOP_SORT_CALLSITE,	/* the event's call_site field, else the innermost frame */
	TOP_SORT_COMM,
	TOP_SORT_PID,
	TOP_SORT_SYMBOL,	/* the innermost frame, with the tree of its callers */
	TOP_SORT_MAX
};

/* "stack", "callsite", "comm", "pid", "symbol" to enum top_sort; -EINVAL for others. */
int top_sort_from_string(const char *s);

struct top;

/* A new table sorted by sort, or NULL without memory. */
struct top *top_new(enum top_sort sort);

struct top *top_free(struct top *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct top *, top_free);

/* Count one sample (borrowed). Samples without a stack count under "[no stack]". */
int top_add(struct top *t, const struct sample *s);

/* How top_print() shows the table. */
struct top_view {
	bool json;
	size_t limit;		/* rows per event type, 0: all */
	bool children;		/* by symbol: every function with the events under it */
	unsigned int width;	/* text lines cut to this many columns, 0: not cut */
	double min_percent;	/* call graph branches under this share are left out */
};

/*
 * Print to f (borrowed), event types by decreasing count, each with its
 * rows by decreasing count (ties by key), at most v->limit rows per event
 * type. As text:
 *   # kmalloc: 6 events
 *       50.00%          3  __kmalloc <- do_sys_open <- entry_SYSCALL_64
 * by symbol, each first frame with the tree of its callers (calltree.h);
 * with children, "children% self% count symbol" lines. As JSON: {"sort",
 * "children" (by symbol), "events":[{"event","total","rows":[{"count",
 * "percent","key"}, "frames" (innermost first) when sorted by stack,
 * "stacks" by symbol (each
 * {"count","percent","frames"}: the stacks that start with that symbol), "self" and "self_percent" with
 * children]}]}. Returns 0 or -errno.
 */
int top_print(const struct top *t, FILE *f, const struct top_view *v);

/* How many samples were counted. */
uint64_t top_total(const struct top *t);

#endif
