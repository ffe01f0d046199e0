/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flame graph SVG writer (flamegraph.h). Stacks are merged into a tree of
 * frames (children kept sorted by name, so equal inputs give equal
 * pictures); the tree is laid out with the root at the bottom, each frame
 * as wide as its count. Every frame is one <g> carrying its position as
 * fractions of the whole (data-x, data-w) and its depth (data-d): the
 * embedded script zooms and searches by rewriting the rect and text
 * geometry from those, so the SVG needs nothing but itself.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"

#define FRAME_H 16
#define PAD_X 10
#define PAD_TOP 36
#define PAD_BOTTOM 28
#define FONT_W 7.0		/* average glyph width of 12px sans, for truncating labels */
#define MIN_PX 0.1		/* frames narrower than this are left out */

struct node {
	char *name;
	uint64_t value;			/* after (or only) counts, self + children */
	uint64_t before;		/* baseline counts, self + children */
	struct node *children;		/* sorted by name */
	size_t nr, cap;
};

struct flamegraph {
	struct node root;
	bool has_before;
};

struct flamegraph *flamegraph_new(void)
{
	return calloc(1, sizeof(struct flamegraph));
}

static void node_done(struct node *n)
{
	for (size_t i = 0; i < n->nr; i++)
		node_done(&n->children[i]);
	free(n->children);
	free(n->name);
}

struct flamegraph *flamegraph_free(struct flamegraph *fg)
{
	if (!fg)
		return NULL;
	node_done(&fg->root);
	free(fg);
	return NULL;
}

/* The child called name[0..len), created in sorted position if missing; NULL without memory. */
static struct node *child(struct node *n, const char *name, size_t len)
{
	size_t lo = 0, hi = n->nr;
	struct node *c;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = strncmp(n->children[mid].name, name, len);

		if (d == 0 && n->children[mid].name[len])
			d = 1;
		if (d == 0)
			return &n->children[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (n->nr == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 4;
		struct node *a = reallocarray(n->children, cap, sizeof(*a));

		if (!a)
			return NULL;
		n->children = a;
		n->cap = cap;
	}
	c = &n->children[lo];
	memmove(c + 1, c, (n->nr - lo) * sizeof(*c));
	*c = (struct node){ .name = strndup(name, len) };
	if (!c->name) {
		memmove(c, c + 1, (n->nr - lo) * sizeof(*c));
		return NULL;
	}
	n->nr++;
	return c;
}

static void count(struct node *n, uint64_t v, bool before)
{
	if (before)
		n->before += v;
	else
		n->value += v;
}

int flamegraph_add(struct flamegraph *fg, const char *const *frames, size_t n, uint64_t v,
		   bool before)
{
	struct node *cur = &fg->root;

	if (n == 0)
		return -EINVAL;
	count(cur, v, before);
	for (size_t i = 0; i < n; i++) {
		cur = child(cur, frames[i], strlen(frames[i]));
		if (!cur)
			return -ENOMEM;
		count(cur, v, before);
	}
	fg->has_before |= before;
	return 0;
}

int flamegraph_add_folded(struct flamegraph *fg, const char *line, bool before)
{
	size_t len = strcspn(line, "\n");
	const char *sp, *p;
	struct node *cur = &fg->root;
	char *end;
	uint64_t v;

	while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
		len--;
	sp = memrchr(line, ' ', len);
	if (!sp || sp == line)
		return -EINVAL;
	errno = 0;
	v = strtoull(sp + 1, &end, 10);
	if (errno || end != line + len || end == sp + 1)
		return -EINVAL;
	count(cur, v, before);
	for (p = line; p < sp;) {
		size_t flen = strcspn(p, ";");

		if (p + flen > sp)
			flen = (size_t)(sp - p);
		cur = child(cur, p, flen);
		if (!cur)
			return -ENOMEM;
		count(cur, v, before);
		p += flen + 1;
	}
	fg->has_before |= before;
	return 0;
}

int flamegraph_add_sample(struct flamegraph *fg, const struct sample *s, bool before)
{
	struct node *cur = &fg->root;

	count(cur, 1, before);
	cur = child(cur, s->event, strlen(s->event));
	if (!cur)
		return -ENOMEM;
	count(cur, 1, before);
	for (size_t i = s->nr_frames; i-- > 0;) {
		char buf[SAMPLE_FRAME_NAME_MAX];
		const char *name = sample_frame_name(&s->frames[i], buf, sizeof(buf));

		cur = child(cur, name, strlen(name));
		if (!cur)
			return -ENOMEM;
		count(cur, 1, before);
	}
	fg->has_before |= before;
	return 0;
}

uint64_t flamegraph_total(const struct flamegraph *fg, bool before)
{
	return before ? fg->root.before : fg->root.value;
}

static void put_escaped(FILE *f, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max; i++) {
		switch (s[i]) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			/* control characters are not allowed in XML 1.0 */
			fputc((unsigned char)s[i] < 0x20 ? '?' : s[i], f);
		}
	}
}

struct layout {
	FILE *f;
	double width;			/* usable pixels */
	double total;			/* after count of the root */
	double scale;			/* baseline -> after total */
	double max_delta;		/* largest |self delta| in the graph, for colours */
	unsigned int height;
	const char *count_name;
	bool diff;
};

static uint64_t self_value(const struct node *n, bool before)
{
	uint64_t v = before ? n->before : n->value;

	for (size_t i = 0; i < n->nr; i++)
		v -= before ? n->children[i].before : n->children[i].value;
	return v;
}

static double self_delta(const struct node *n, double scale)
{
	return (double)self_value(n, false) - (double)self_value(n, true) * scale;
}

static unsigned int depth_of(const struct node *n)
{
	unsigned int d = 0;

	for (size_t i = 0; i < n->nr; i++)
		d = MAX(d, depth_of(&n->children[i]) + 1);
	return d;
}

/* The change of n's whole count (self and callees) against the baseline scaled to the same total. */
static double total_delta(const struct node *n, double scale)
{
	return (double)n->value - (double)n->before * scale;
}

static double max_delta(const struct node *n, double scale)
{
	double d = total_delta(n, scale);

	if (d < 0)
		d = -d;
	for (size_t i = 0; i < n->nr; i++)
		d = MAX(d, max_delta(&n->children[i], scale));
	return d;
}

/*
 * A stable warm colour per name (hashed) or, in a diff, by the change of
 * the frame's whole count: red grew, blue shrank, the deeper the more.
 */
static void colour(const struct layout *l, const struct node *n, const char *name, char *buf,
		   size_t len)
{
	uint32_t h = 2166136261u;

	if (l->diff) {
		double d = total_delta(n, l->scale);
		double k = l->max_delta > 0 ? (d < 0 ? -d : d) / l->max_delta : 0;
		int c = (int)(225.0 * (1.0 - k));

		if (d > 0)
			(void)snprintf(buf, len, "rgb(255,%d,%d)", c, c);
		else if (d < 0)
			(void)snprintf(buf, len, "rgb(%d,%d,255)", c, c);
		else
			(void)snprintf(buf, len, "rgb(225,225,225)");
		return;
	}
	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	(void)snprintf(buf, len, "rgb(%u,%u,%u)", 205 + h % 51, 90 + (h >> 8) % 141,
		       30 + (h >> 16) % 51);
}

static void write_frame(const struct layout *l, const struct node *n, double x0,
			unsigned int depth)
{
	double px = PAD_X + x0 / l->total * l->width, pw = (double)n->value / l->total * l->width;
	double y = l->height - PAD_BOTTOM - (depth + 1) * FRAME_H;
	size_t chars = pw > 6 ? (size_t)((pw - 6) / FONT_W) : 0;
	const char *name = depth ? n->name : "all";
	char fill[32];

	colour(l, n, name, fill, sizeof(fill));
	fprintf(l->f, "<g data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\">", x0 / l->total,
		(double)n->value / l->total, depth);
	fputs("<title>", l->f);
	put_escaped(l->f, name, SIZE_MAX);
	fprintf(l->f, " (%" PRIu64 " %s, %.2f%%", n->value, l->count_name,
		100.0 * (double)n->value / l->total);
	if (l->diff)
		fprintf(l->f, "; before %" PRIu64 ", change %+.2f%% of the total, self %+.2f%%",
			n->before, 100.0 * total_delta(n, l->scale) / l->total,
			100.0 * self_delta(n, l->scale) / l->total);
	fprintf(l->f, ")</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
		      "fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		px, y, pw, FRAME_H - 1, fill, px + 3, y + 11.5);
	if (chars >= strlen(name))
		put_escaped(l->f, name, SIZE_MAX);
	else if (chars >= 3) {
		put_escaped(l->f, name, chars - 2);
		fputs("..", l->f);
	}
	fputs("</text></g>\n", l->f);
}

/* Write n and its subtree; x0 is n's start in counts. */
static void write_tree(const struct layout *l, const struct node *n, double x0, unsigned int depth)
{
	if ((double)n->value / l->total * l->width < MIN_PX)
		return;
	write_frame(l, n, x0, depth);
	for (size_t i = 0; i < n->nr; i++) {
		write_tree(l, &n->children[i], x0, depth + 1);
		x0 += (double)n->children[i].value;
	}
}

#include "flamegraph-script.h"

int flamegraph_write(const struct flamegraph *fg, FILE *f, const struct flamegraph_options *o)
{
	static const struct flamegraph_options defaults = {};
	unsigned int width;
	struct layout l;

	if (!o)
		o = &defaults;
	width = o->width ? o->width : 1200;
	l = (struct layout){
		.f = f,
		.width = width - 2 * PAD_X,
		.total = fg->root.value ? (double)fg->root.value : 1,
		.scale = fg->root.before ? (double)fg->root.value / (double)fg->root.before : 1,
		.height = PAD_TOP + PAD_BOTTOM + (depth_of(&fg->root) + 1) * FRAME_H,
		.count_name = o->count_name ?: "samples",
		.diff = fg->has_before,
	};
	if (l.diff)
		l.max_delta = max_delta(&fg->root, l.scale);

	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		   "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		   "xmlns=\"http://www.w3.org/2000/svg\" onload=\"fg_init(evt)\">\n",
		width, l.height, width, l.height);
	fprintf(f, "<style>%s</style>\n<script type=\"text/ecmascript\"><![CDATA[%s]]></script>\n",
		flamegraph_css, flamegraph_js);
	fprintf(f, "<rect id=\"background\" x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
		   "fill=\"#f8f8f8\"/>\n", width, l.height);
	fprintf(f, "<text id=\"title\" x=\"%u\" y=\"24\">", width / 2);
	put_escaped(f, o->title ?: (l.diff ? "Differential Flame Graph" : "Flame Graph"),
		    SIZE_MAX);
	fprintf(f, "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		   "<text id=\"search\" x=\"%u\" y=\"24\">Search</text>\n"
		   "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		   "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n<g id=\"frames\">\n",
		PAD_X, width - PAD_X - 100, PAD_X, l.height - 10, width - PAD_X - 100,
		l.height - 10);
	if (fg->root.value)
		write_tree(&l, &fg->root, 0, 0);
	fputs("</g>\n</svg>\n", f);
	if (fflush(f) != 0 || ferror(f))
		return errno > 0 ? -errno : -EIO;
	return 0;
}
