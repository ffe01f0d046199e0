/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What memory.c found, drawn (memory.h): the curve as a small SVG written
 * by hand (a polyline and the peak's mark, nothing to run), and the stacks
 * of a moment, or the growth since the baseline, for the flame graph
 * writer (flamegraph.h).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "memory-internal.h"

/* Add the stack key of v.bytes to fg (to its baseline if before). */
static int fg_add(const struct memory *m, struct flamegraph *fg, size_t stack, uint64_t bytes,
		  bool before)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_free_ const char **fr = NULL;
	size_t n = 1, nf = 0;

	if (!bytes)
		return 0;
	copy = strdup(mem_stack_key(m, stack));
	if (!copy)
		return -ENOMEM;
	for (const char *p = copy; *p; p++)
		n += *p == ';';
	fr = calloc(n, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	/* the key is "EVENT;inner;...;outer": the graph wants EVENT;outer;...;inner */
	for (char *p = copy, *e; p; p = e) {
		e = strchr(p, ';');
		if (e)
			*e++ = '\0';
		fr[nf++] = p;
	}
	for (size_t a = 1, b = nf - 1; a < b; a++, b--) {
		const char *t = fr[a];

		fr[a] = fr[b];
		fr[b] = t;
	}
	return flamegraph_add(fg, fr, nf, bytes, before);
}

int memory_flamegraph(struct memory *m, struct flamegraph *fg)
{
	bool diff = m->o.baseline != 0;
	int k, r;

	assert(m);
	assert(fg);
	mem_finish(m);
	k = m->moment[MEM_AT].set ? MEM_AT : MEM_PEAK;
	for (size_t i = 0; i < m->nr_stacks; i++) {
		const struct mem_stack *st = &m->stacks[i];

		if (diff) {
			r = fg_add(m, fg, i, mem_at(m, st->snap, &st->live, MEM_BASE).bytes, true);
			if (r >= 0)
				r = fg_add(m, fg, i, mem_growth_to(m, st->snap, &st->live).bytes,
					   false);
		} else {
			r = fg_add(m, fg, i, mem_at(m, st->snap, &st->live, k).bytes, false);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int memory_write_svg(struct memory *m, FILE *f, const char *title)
{
	const double W = 800, H = 320, left = 80, right = 20, top = 40, bottom = 40;
	const double pw = W - left - right, ph = H - top - bottom;
	const struct mem_moment *pk = &m->moment[MEM_PEAK];
	size_t n = m->cur + 1, ip;
	uint64_t ymax = 1;
	char b1[32], when[160];

	assert(m);
	assert(f);
	for (size_t i = 0; i < n; i++)
		ymax = MAX(ymax, m->curve[i].max_bytes);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		W, H, W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fputs("<text x=\"10\" y=\"20\" font-size=\"14\">", f);
	for (const char *p = title ?: "live memory"; *p; p++) {
		if (*p == '<' || *p == '>' || *p == '&')
			fputs(*p == '<' ? "&lt;" : *p == '>' ? "&gt;" : "&amp;", f);
		else
			fputc(*p, f);
	}
	fputs("</text>\n", f);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
		left, top + ph, left + pw, top + ph);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n",
		left, top, left, top + ph);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", left - 4, top + 4,
		mem_human(b1, sizeof(b1), ymax));
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>\n", left - 4,
		top + ph);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">+0 s</text>\n", left, top + ph + 16);
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">+%.3f s</text>\n", left + pw,
		top + ph + 16, mem_secs(n * m->width));
	fputs("<polyline id=\"curve\" fill=\"none\" stroke=\"#c03030\" stroke-width=\"1.5\" "
	      "points=\"", f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%.2f,%.2f", i ? " " : "", left + ((double)i + 0.5) / (double)n * pw,
			top + ph - (double)m->curve[i].max_bytes / (double)ymax * ph);
	fputs("\"/>\n", f);
	if (pk->set) {
		ip = MIN((size_t)((pk->t - m->t0) / m->width), n - 1);
		fprintf(f, "<circle id=\"peak\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"none\" "
			"stroke=\"black\" data-bytes=\"%" PRIu64 "\" data-time=\"%.6f\"/>\n",
			left + ((double)ip + 0.5) / (double)n * pw,
			top + ph - (double)pk->total.bytes / (double)ymax * ph, pk->total.bytes,
			mem_secs(pk->t - m->t0));
		fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">peak %s at %s</text>\n",
			MIN(left + ((double)ip + 0.5) / (double)n * pw + 8, W - 300),
			MAX(top + ph - (double)pk->total.bytes / (double)ymax * ph - 6, top + 12),
			mem_human(b1, sizeof(b1), pk->total.bytes),
			mem_moment_text(when, sizeof(when), m, pk->t, pk->ts));
	}
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
