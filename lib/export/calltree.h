/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A tree of call chains with counts, printed as `perf report --stdio`
 * draws its call graphs: each entry, then the chains of its callers, split
 * where they part, each branch with its share of the event type. Names are
 * borrowed (pointer and length) from strings that outlive the tree.
 */
#ifndef STACKMAPD_CALLTREE_H
#define STACKMAPD_CALLTREE_H

#include <stdint.h>
#include <stdio.h>


struct calltree_node {
	const char *name;		/* borrowed; not NUL-terminated: len */
	size_t len;
	uint64_t count;
	struct calltree_node *kids;	/* owned; after calltree_sort(): by count, then name */
	size_t nr_kids, cap_kids;
};

/* The child of n named name[0..len), added with count 0 if new; NULL without memory. */
struct calltree_node *calltree_child(struct calltree_node *n, const char *name, size_t len);

/* Free what n owns (its descendants); n itself is the caller's. */
void calltree_done(struct calltree_node *n);

/* Sort the children of n and of all its descendants by decreasing count, then name. */
void calltree_sort(struct calltree_node *n);

/*
 * Print n's descendants to f as branches under prefix: a branch per child
 * whose share of total is at least min_percent, a chain of callers on one
 * column while it does not split. Lines are cut to width columns (0: not
 * cut). n must be sorted.
 */
void calltree_print(const struct calltree_node *n, FILE *f, const char *prefix, uint64_t total,
		    double min_percent, unsigned int width);

/* Print text to f cut to width columns (0: whole), ending in "..." when cut, then a newline. */
void calltree_put_line(FILE *f, const char *text, unsigned int width);

#endif
