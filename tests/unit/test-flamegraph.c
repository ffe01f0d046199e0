/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flame graph SVG writer: the known sample stream and folded lines give
 * frames with the right counts, widths, titles and diff colours, names are
 * escaped, malformed folded lines are refused. Set FLAMEGRAPH_KEEP=DIR to
 * keep the SVGs (for looking at them in a browser).
 */
#include "flamegraph.h"
#include "helpers.h"
#include "sample-stream.h"

static char *render(const struct flamegraph *fg, const char *title, const char *keep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct flamegraph_options o = { .title = title };

	CHECK(f);
	CHECK(flamegraph_write(fg, f, &o) == 0);
	fclose(f);
	if (keep && getenv("FLAMEGRAPH_KEEP")) {
		_cleanup_free_ char *p = NULL;
		_cleanup_fclose_ FILE *out = NULL;

		CHECK(strprintf(&p, "%s/%s", getenv("FLAMEGRAPH_KEEP"), keep) == 0);
		out = fopen(p, "w");
		if (out)
			fputs(text, out);
	}
	return text;
}

static size_t count_str(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* The <g> of the frame whose title starts with title, or NULL. */
static const char *frame(const char *svg, const char *title)
{
	_cleanup_free_ char *pat = NULL;
	const char *p;

	if (strprintf(&pat, "<title>%s", title) < 0)
		return NULL;
	p = strstr(svg, pat);
	return p;
}

static void test_samples_stream(void)
{
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	_cleanup_free_ char *svg = NULL;
	const char *p;

	CHECK(fg);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(flamegraph_add_sample(fg, &test_samples[i], false) == 0);
	CHECK(flamegraph_total(fg, false) == 9);
	svg = render(fg, "test <stream>", "stream.svg");

	CHECK(startswith(svg, "<?xml"));
	CHECK(strstr(svg, "</svg>\n"));
	CHECK(strstr(svg, "test &lt;stream&gt;"));
	/* all, 3 events, kmalloc: entry, open/read/module + kmalloc each, sched: 3 */
	CHECK_MSG(count_str(svg, "<g data-x") == 1 + 3 + 1 + 3 + 3 + 3, "%zu frames",
		  count_str(svg, "<g data-x"));
	CHECK(frame(svg, "all (9 samples, 100.00%)"));
	CHECK(frame(svg, "kmalloc (6 samples, 66.67%)"));
	CHECK(frame(svg, "do_sys_open (3 samples, 33.33%)"));
	CHECK(frame(svg, "0xffffffffc0001234 (1 samples, 11.11%)"));
	CHECK(frame(svg, "irq_handler_entry (1 samples, 11.11%)"));
	/* no external resources: the only URL is the SVG namespace */
	CHECK(count_str(svg, "http") == 1);
	CHECK(!strstr(svg, "href"));
	/* the root spans the whole usable width: 1200 - 2 * 10 */
	p = frame(svg, "all (");
	CHECK(p && strstr(p, "width=\"1180.00\""));
	/* kmalloc (6 of 9) follows irq_handler_entry (1 of 9): names sorted; 10 + 1180 / 9 */
	p = frame(svg, "kmalloc (");
	CHECK_MSG(p && strstr(p, "<rect x=\"141.11\" y=\"84.0\" width=\"786.67\""),
		  "%.120s", p ? p : "(none)");
	CHECK(strstr(svg, "function fg_init"));
}

static void test_diff(void)
{
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	_cleanup_free_ char *svg = NULL;
	const char *p;

	CHECK(fg);
	/*
	 * before: a, b, x;y 10 each; after: a 30, b 10, x;y 40 (80: the
	 * baseline scales by 8/3). Colours follow each frame's whole count:
	 * x has no samples of its own, yet it grew with y.
	 */
	CHECK(flamegraph_add_folded(fg, "main;a 10\n", true) == 0);
	CHECK(flamegraph_add_folded(fg, "main;b 10", true) == 0);
	CHECK(flamegraph_add_folded(fg, "main;x;y 10", true) == 0);
	CHECK(flamegraph_add_folded(fg, "main;a 30", false) == 0);
	CHECK(flamegraph_add_folded(fg, "main;b 10", false) == 0);
	CHECK(flamegraph_add_folded(fg, "main;x;y 40", false) == 0);
	CHECK(flamegraph_add_folded(fg, "main;c;d 0", false) == 0);
	CHECK(flamegraph_total(fg, true) == 30 && flamegraph_total(fg, false) == 80);
	svg = render(fg, NULL, "diff.svg");

	CHECK(strstr(svg, "Differential Flame Graph"));
	p = frame(svg, "a (30 samples, 37.50%; before 10, change +4.17% of the total, self +4.17%)");
	CHECK_MSG(p && strstr(p, "fill=\"rgb(255,179,179)\""), "%.200s", p ? p : "(none)");
	p = frame(svg, "b (10 samples, 12.50%; before 10, change -20.83% of the total, self -20.83%)");
	CHECK_MSG(p && strstr(p, "fill=\"rgb(0,0,255)\""), "%.200s", p ? p : "(none)");
	p = frame(svg, "x (40 samples, 50.00%; before 10, change +16.67% of the total, self +0.00%)");
	CHECK_MSG(p && strstr(p, "fill=\"rgb(255,4"), "%.200s", p ? p : "(none)");
	p = frame(svg, "main (80 samples");
	CHECK(p && strstr(p, "fill=\"rgb(225,225,225)\""));
	/* zero-width frames are left out */
	CHECK(!frame(svg, "d ("));

	CHECK(flamegraph_add_folded(fg, "main;a", false) == -EINVAL);
	CHECK(flamegraph_add_folded(fg, "main;a x", false) == -EINVAL);
	CHECK(flamegraph_add_folded(fg, " 5", false) == -EINVAL);
	CHECK(flamegraph_add(fg, NULL, 0, 1, false) == -EINVAL);
}

static void test_empty_and_narrow(void)
{
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	_cleanup_free_ char *svg = NULL;
	const char *deep[] = { "x", "y<&>\"" };

	CHECK(fg);
	svg = render(fg, NULL, NULL);
	CHECK(strstr(svg, "</svg>") && !strstr(svg, "<g data-x"));
	free(svg);
	CHECK(flamegraph_add(fg, deep, 2, 1, false) == 0);
	svg = render(fg, NULL, NULL);
	CHECK(strstr(svg, "y&lt;&amp;&gt;&quot; (1 samples"));
}

int main(void)
{
	test_samples_stream();
	test_diff();
	test_empty_and_narrow();
	return tests_done("test-flamegraph");
}
