/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flame graphs as self-contained interactive SVG: stacks with counts go
 * in (folded stacks: frames from the outermost to the innermost), one SVG
 * comes out, with hover details, click to zoom and a search, all in
 * embedded JavaScript and CSS, no external resources.
 *
 * A differential graph has a baseline ("before") besides the stacks
 * ("after"): frames are as wide as the after counts; their colour says
 * how their whole count (their own and their callees') changed against
 * the baseline scaled to the same total: red grew, blue shrank, grey
 * unchanged.
 */
#ifndef STACKMAPD_FLAMEGRAPH_H
#define STACKMAPD_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sample.h"
#include "util.h"

struct flamegraph;

/* An empty graph, or NULL without memory. */
struct flamegraph *flamegraph_new(void);

/* Free the graph. Accepts NULL; returns NULL. */
struct flamegraph *flamegraph_free(struct flamegraph *fg);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct flamegraph *, flamegraph_free);

/*
 * Count count samples of the stack frames[0..n) (outermost first; strings
 * borrowed, copied as needed), to the baseline if before. n == 0 is
 * -EINVAL. Returns 0 or -ENOMEM.
 */
int flamegraph_add(struct flamegraph *fg, const char *const *frames, size_t n, uint64_t count,
		   bool before);

/*
 * The same for one line of folded text, "outer;...;inner COUNT" (a
 * trailing newline is fine; line borrowed). Returns 0, -EINVAL for a line
 * without a count, or -ENOMEM.
 */
int flamegraph_add_folded(struct flamegraph *fg, const char *line, bool before);

/*
 * Count one sample (borrowed): its event name is the outermost frame,
 * then its stack from the outermost frame to the innermost (unknown
 * symbols as addresses); a sample without a stack counts under its event
 * alone. Returns 0 or -ENOMEM.
 */
int flamegraph_add_sample(struct flamegraph *fg, const struct sample *s, bool before);

/* Total of the counts added, to the baseline if before. */
uint64_t flamegraph_total(const struct flamegraph *fg, bool before);

struct flamegraph_options {
	const char *title;		/* NULL: "Flame Graph" */
	unsigned int width;		/* pixels; 0: 1200 */
	const char *count_name;		/* what a count is, NULL: "samples" */
};

/*
 * Write the graph as SVG to f (borrowed). A graph with a baseline is
 * differential. Returns 0 or -errno (write errors, -ENOMEM).
 */
int flamegraph_write(const struct flamegraph *fg, FILE *f, const struct flamegraph_options *o);

#endif
