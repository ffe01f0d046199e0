/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Call chains as a tree with counts (calltree.h), drawn in the layout of
 * perf report's call graphs: "|--12.34%--name" for a branch, 11 columns
 * per level, a chain that does not split continued on the name's column.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "util.h"

#define INDENT 11

struct calltree_node *calltree_child(struct calltree_node *n, const char *name, size_t len)
{
	for (size_t i = 0; i < n->nr_kids; i++)
		if (n->kids[i].len == len && !memcmp(n->kids[i].name, name, len))
			return &n->kids[i];
	if (GREEDY_REALLOC(n->kids, n->cap_kids, n->nr_kids + 1) < 0)
		return NULL;
	n->kids[n->nr_kids] = (struct calltree_node){ .name = name, .len = len };
	return &n->kids[n->nr_kids++];
}

void calltree_done(struct calltree_node *n)
{
	for (size_t i = 0; i < n->nr_kids; i++)
		calltree_done(&n->kids[i]);
	free(n->kids);
	n->kids = NULL;
	n->nr_kids = n->cap_kids = 0;
}

static int node_cmp(const void *a, const void *b)
{
	const struct calltree_node *x = a, *y = b;
	int d;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	d = memcmp(x->name, y->name, MIN(x->len, y->len));
	return d ? d : x->len < y->len ? -1 : x->len > y->len;
}

void calltree_sort(struct calltree_node *n)
{
	if (n->nr_kids > 1)
		qsort(n->kids, n->nr_kids, sizeof(*n->kids), node_cmp);
	for (size_t i = 0; i < n->nr_kids; i++)
		calltree_sort(&n->kids[i]);
}

void calltree_put_line(FILE *f, const char *text, unsigned int width)
{
	size_t len = strlen(text);

	if (width >= 4 && len > width)
		fprintf(f, "%.*s...\n", (int)(width - 3), text);
	else
		fprintf(f, "%s\n", text);
}

static bool shown(const struct calltree_node *n, uint64_t total, double min_percent)
{
	return total && 100.0 * (double)n->count / (double)total >= min_percent;
}

void calltree_print(const struct calltree_node *n, FILE *f, const char *prefix, uint64_t total,
		    double min_percent, unsigned int width)
{
	size_t plen = strlen(prefix), nr = 0;
	char *line, *sub;

	for (size_t i = 0; i < n->nr_kids; i++)
		nr += shown(&n->kids[i], total, min_percent);
	if (!nr)
		return;
	line = malloc(plen + INDENT + 64 + 4096);
	sub = malloc(plen + INDENT + 1);
	if (!line || !sub) {
		free(line);
		free(sub);
		return;
	}
	for (size_t i = 0, k = 0; i < n->nr_kids; i++) {
		const struct calltree_node *c = &n->kids[i];
		bool last;

		if (!shown(c, total, min_percent))
			continue;
		last = ++k == nr;
		(void)snprintf(line, plen + INDENT + 64 + 4096, "%s%s%.2f%%--%.*s", prefix,
			       last ? " --" : "|--", 100.0 * (double)c->count / (double)total,
			       (int)MIN(c->len, (size_t)4000), c->name);
		calltree_put_line(f, line, width);
		(void)snprintf(sub, plen + INDENT + 1, "%s%-*s", prefix, INDENT, last ? "" : "|");
		/* a chain that does not split: one caller per line, on one column */
		while (c->nr_kids == 1 && c->kids[0].count == c->count) {
			c = &c->kids[0];
			(void)snprintf(line, plen + INDENT + 64 + 4096, "%s%.*s", sub,
				       (int)MIN(c->len, (size_t)4000), c->name);
			calltree_put_line(f, line, width);
		}
		calltree_print(c, f, sub, total, min_percent, width);
	}
	free(line);
	free(sub);
}
