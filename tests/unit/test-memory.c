/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memory: allocations paired with their frees from a table of samples.
 * The peak and its stacks stay what they were when later frees change the
 * live figures; --at; what is live at the end and its ages; churn; the
 * gaps (frees of what was not read, pointers allocated twice, lost events,
 * a new boot); --pid/--event choose allocations but every free pairs; the
 * verdicts for input without frees; the index stays within the live set;
 * the curve merges its points as the span grows; the budget; JSON, SVG
 * and flame graph output; the hook that is told of every pair.
 */
#include <stdarg.h>

#include "budget.h"
#include "flamegraph.h"
#include "helpers.h"
#include "json.h"
#include "memory-internal.h"
#include "memory.h"

#define SEC UINT64_C(1000000000)

static const struct sample_frame st_pipe[] = {
	{ 0x1000, "__kmalloc_noprof" }, { 0x2000, "alloc_pipe_info" }, { 0x3000, "do_pipe2" },
};
static const struct sample_frame st_file[] = {
	{ 0x1100, "kmem_cache_alloc_noprof" }, { 0x2100, "alloc_empty_file" }, { 0x3000, "do_pipe2" },
};
static const struct sample_frame st_page[] = {
	{ 0x1200, "__alloc_pages_noprof" }, { 0x2200, "pipe_write" },
};

/* One sample: an allocation (bytes != 0), or a free, of ptr (pfn for pages). */
struct ev {
	const char *event;
	uint64_t t;			/* ns */
	uint64_t ptr;
	uint64_t bytes;			/* order for pages */
	const struct sample_frame *frames;
	size_t nr;
	int pid;
	long long lost;
	const char *boot;
};

static int feed(struct memory *m, const struct ev *e)
{
	char ptr[32], bytes[32];
	struct sample_field fields[3];
	struct sample_origin o = { .path = "x", .host = "h", .boot_id = e->boot ?: "boot-a",
				   .recording_id = "rec", .kernel = "k", .serial = e->boot ? 2 : 1 };
	bool pages = strstr(e->event, "page") != NULL;
	struct sample s = { .event = e->event, .system = "kmem", .ts = e->t, .wall_ns = e->t,
			    .pid = e->pid ?: 100, .comm = "smload", .frames = e->frames,
			    .nr_frames = e->nr, .lost_before = e->lost, .origin = &o,
			    .fields = fields };

	/* the call_site field's function: the allocator's caller */
	if (e->bytes && e->nr > 1)
		s.call_site = e->frames[1].sym;

	snprintf(ptr, sizeof(ptr), "%" PRIu64, e->ptr);
	snprintf(bytes, sizeof(bytes), "%" PRIu64, e->bytes);
	fields[s.nr_fields++] = (struct sample_field){ pages ? "pfn" : "ptr", ptr };
	if (e->bytes)
		fields[s.nr_fields++] = (struct sample_field){ pages ? "order" : "bytes_alloc", bytes };
	if (streq(e->event, "kmem_cache_alloc"))
		fields[s.nr_fields++] = (struct sample_field){ "name", "filp" };
	return memory_add(m, &s);
}

#define A(ev, t, p, b, st) { ev, t, p, b, st, ARRAY_SIZE(st), 0, 0, NULL }
#define F(ev, t, p) { ev, t, p, 0, NULL, 0, 0, 0, NULL }

static struct memory *run(const struct memory_options *o, const struct ev *evs, size_t n)
{
	struct memory *m = memory_new(o);

	CHECK(m);
	for (size_t i = 0; m && i < n; i++)
		CHECK_MSG(feed(m, &evs[i]) == 0, "sample %zu", i);
	return m;
}

static char *print(struct memory *m, bool json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f);
	CHECK(memory_print(m, f, &(struct memory_view){ .json = json, .min_percent = 0.5 }) == 0);
	fclose(f);
	return text;
}

/* The stack figures at moment k of the stack whose key starts with prefix. */
static struct mem_live stack_at(const struct memory *m, int k, const char *prefix)
{
	for (size_t i = 0; i < m->nr_stacks; i++)
		if (startswith(strmap_get(m->keys, m->stacks[i].key, NULL), prefix))
			return k < 0 ? m->stacks[i].live
				     : mem_at(m, m->stacks[i].snap, &m->stacks[i].live, k);
	return (struct mem_live){};
}

/*
 * Three pipes (1024 B) and two files (256 B) held, the peak at 3 s; then
 * the pipes are freed and one more file comes. At the peak: 3 pipes and 2
 * files, whatever came after.
 */
static const struct ev basic[] = {
	A("kmalloc", 1 * SEC, 0xa000, 1024, st_pipe),
	A("kmem_cache_alloc", 1 * SEC + 1, 0xb000, 256, st_file),
	A("kmalloc", 2 * SEC, 0xa400, 1024, st_pipe),
	A("kmem_cache_alloc", 2 * SEC + 1, 0xb100, 256, st_file),
	A("kmalloc", 3 * SEC, 0xa800, 1024, st_pipe),
	F("kfree", 4 * SEC, 0xa000),
	F("kfree", 4 * SEC + 10, 0xa400),
	F("kfree", 4 * SEC + 20, 0xa800),
	A("kmem_cache_alloc", 5 * SEC, 0xb200, 256, st_file),
	F("kmem_cache_free", 5 * SEC + 100, 0xb200),	/* churn: freed within 1 s */
	F("kfree", 6 * SEC, 0x9999),			/* allocated before what was read */
	{ "sched_switch", 7 * SEC, 0, 0, NULL, 0, 0, 0, NULL },
};

static void test_basic(void)
{
	struct memory_options o = { .pid = -1 };
	_cleanup_(memory_freep) struct memory *m = run(&o, basic, ARRAY_SIZE(basic));
	struct mem_live v;
	_cleanup_free_ char *text = NULL;

	if (!m)
		return;
	CHECK(memory_check(m) == MEMORY_OK);
	CHECK(m->moment[MEM_PEAK].set);
	CHECK_MSG(m->moment[MEM_PEAK].t == 3 * SEC, "peak at %" PRIu64, m->moment[MEM_PEAK].t);
	CHECK(m->moment[MEM_PEAK].total.bytes == 3 * 1024 + 2 * 256);
	CHECK(m->moment[MEM_PEAK].total.objs == 5);
	v = stack_at(m, MEM_PEAK, "kmalloc;__kmalloc_noprof;alloc_pipe_info");
	CHECK_MSG(v.bytes == 3072 && v.objs == 3, "pipes at the peak: %" PRIu64, v.bytes);
	v = stack_at(m, MEM_PEAK, "kmem_cache_alloc;kmem_cache_alloc_noprof;alloc_empty_file");
	CHECK(v.bytes == 512 && v.objs == 2);
	/* now: two files live, no pipe */
	CHECK(stack_at(m, -1, "kmalloc;").bytes == 0);
	CHECK(m->total.bytes == 512 && m->total.objs == 2);
	CHECK(m->unknown_frees[MEM_SLAB] == 1 && m->lost_frees == 0);
	CHECK(m->frees[MEM_SLAB] == 5);
	text = print(m, false);
	CHECK_MSG(strstr(text, "# peak: 3.5 KiB in 5 objects at "), "%s", text);
	CHECK_MSG(strstr(text, "     3.0 KiB          3      1.0 s  kmalloc: __kmalloc_noprof <- "
			       "alloc_pipe_info <- do_pipe2\n"), "%s", text);
	/* the tree: the allocating function, then its callers */
	CHECK(strstr(text, "     85.71%    3.0 KiB  __kmalloc_noprof\n"));
	CHECK(strstr(text, "# still live at the end: 512 B in 2 objects"));
	CHECK(strstr(text, "      1-10 s        512 B          2\n"));
	/* churn: the third file, freed after 100 ns */
	CHECK_MSG(strstr(text, "           1        256 B            3  kmem_cache_alloc: "), "%s",
		  text);
	CHECK(strstr(text, "frees of allocations not read (made before the selection): 1 slab"));
	CHECK(strstr(text, "no events lost: every pair is certain"));
}

/* --at: the state after the last event at or before it. */
static void test_at(void)
{
	struct memory_options o = { .pid = -1, .at = 4 * SEC + 5 };
	_cleanup_(memory_freep) struct memory *m = run(&o, basic, ARRAY_SIZE(basic));
	_cleanup_free_ char *json = NULL;
	struct json_value *doc = NULL;
	const struct json_value *at;

	if (!m)
		return;
	json = print(m, true);
	CHECK(m->moment[MEM_AT].set);
	/* after the first kfree at 4 s, before the second at 4 s + 10 ns */
	CHECK_MSG(m->moment[MEM_AT].total.bytes == 2 * 1024 + 2 * 256, "%" PRIu64,
		  m->moment[MEM_AT].total.bytes);
	CHECK(stack_at(m, MEM_AT, "kmalloc;").objs == 2);
	CHECK(stack_at(m, MEM_PEAK, "kmalloc;").objs == 3);
	CHECK(json_parse(json, strlen(json), &doc) == 0);
	at = doc ? json_get(doc, "at") : NULL;
	CHECK(at && json_get(at, "bytes") && json_get(at, "bytes")->integer == 2560);
	CHECK(doc && json_get(json_get(doc, "peak"), "bytes")->integer == 3584);
	CHECK(doc && json_get(json_get(doc, "gaps"), "unknown_slab_frees")->integer == 1);
	json_value_free(doc);

	/* a moment past the end: the state at the end */
	o.at = 100 * SEC;
	memory_free(run(&o, basic, 3));
	{
		_cleanup_(memory_freep) struct memory *m2 = run(&o, basic, 3);
		_cleanup_free_ char *t = m2 ? print(m2, false) : NULL;

		CHECK(m2 && m2->moment[MEM_AT].set && m2->moment[MEM_AT].total.objs == 3);
		CHECK(t && strstr(t, "# at: 2.2 KiB in 3 objects"));
	}
}

/*
 * --callers: the slab allocations that count by call site, as perf kmem
 * stat --caller counts them (every allocation, freed or not); pages are not
 * call sites of the slab allocator. Without it, no such table.
 */
static void test_callers(void)
{
	static const struct ev more[] = {
		A("kmalloc", 1 * SEC, 0xa000, 1024, st_pipe),
		A("mm_page_alloc", 1 * SEC + 5, 0x77, 1, st_page),
		F("kfree", 2 * SEC, 0xa000),
		A("kmalloc", 3 * SEC, 0xa000, 512, st_pipe),
		{ "kmalloc", 4 * SEC, 0xc000, 64, NULL, 0, 0, 0, NULL },	/* no call site */
		{ "kmalloc", 4 * SEC + 1, 0xc100, 64, st_pipe, 3, 200, 0, NULL }, /* not selected */
	};
	struct memory_options o = { .pid = 100, .callers = true };
	_cleanup_(memory_freep) struct memory *m = run(&o, more, ARRAY_SIZE(more));
	_cleanup_free_ char *json = NULL, *text = NULL, *plain = NULL;
	struct json_value *doc = NULL;
	const struct json_value *c;

	if (!m)
		return;
	json = print(m, true);
	text = print(m, false);
	CHECK(json_parse(json, strlen(json), &doc) == 0);
	c = doc ? json_get(doc, "callers") : NULL;
	CHECK_MSG(c && c->nr_items == 2, "%s", json);
	if (c && c->nr_items == 2) {
		CHECK(streq(json_get_string(c->items[0], "call_site"), "alloc_pipe_info"));
		CHECK(json_get(c->items[0], "allocations")->integer == 2);
		CHECK(json_get(c->items[0], "bytes")->integer == 1536);
		CHECK(streq(json_get_string(c->items[1], "call_site"), "[unknown]"));
		CHECK(json_get(c->items[1], "allocations")->integer == 1);
		CHECK(json_get(c->items[1], "bytes")->integer == 64);
	}
	json_value_free(doc);
	CHECK_MSG(strstr(text, "# slab allocations by call site (2 call sites)\n"), "%s", text);
	CHECK_MSG(strstr(text, "           2      1.5 KiB        768  alloc_pipe_info\n"), "%s", text);
	o.callers = false;
	memory_free(m);
	m = run(&o, more, ARRAY_SIZE(more));
	plain = m ? print(m, false) : NULL;
	CHECK(plain && !strstr(plain, "by call site"));
}

/* A pointer allocated twice is a lost free; a loss of events makes live bytes uncertain. */
static void test_gaps(void)
{
	const struct ev evs[] = {
		A("kmalloc", 1 * SEC, 0xa000, 1024, st_pipe),
		A("kmalloc", 2 * SEC, 0xa000, 1024, st_pipe),	/* its free was not seen */
		A("kmem_cache_alloc", 3 * SEC, 0xb000, 256, st_file),
		{ "kfree", 4 * SEC, 0x77777, 0, NULL, 0, 0, 17, NULL },	/* CPU lost 17 events */
		A("kmalloc", 5 * SEC, 0xa800, 1024, st_pipe),
		F("kmem_cache_free", 6 * SEC, 0xb000),
		/* a new boot: what was live is dropped; this free pairs with nothing */
		{ "kfree", 7 * SEC, 0xa800, 0, NULL, 0, 0, 0, "boot-b" },
		{ "kmalloc", 8 * SEC, 0xc000, 64, st_pipe, 3, 0, 0, "boot-b" },
		{ "kfree", 9 * SEC, 0xc000, 0, NULL, 0, 0, 0, "boot-b" },
	};
	struct memory_options o = { .pid = -1 };
	_cleanup_(memory_freep) struct memory *m = run(&o, evs, 6);
	_cleanup_free_ char *text = NULL;

	if (!m)
		return;
	CHECK(m->lost_frees == 1 && m->lost_free_bytes == 1024);
	CHECK(m->total.bytes == 2048);
	/* at the loss 1024 + 256 were live; the 256 were freed since */
	CHECK_MSG(m->uncertain == 1024, "%" PRIu64, m->uncertain);
	CHECK(m->all_losses == 1 && m->nr_losses == 1 && m->losses[0].live_bytes == 1280);
	text = print(m, false);
	CHECK_MSG(strstr(text, "(1.0 KiB uncertain: may have been freed in events lost)"), "%s",
		  text);
	CHECK(strstr(text, "CPU 0 lost 17 events, 1.2 KiB uncertain"));
	CHECK(strstr(text, "lost frees (allocated again before a free was seen): 1 (1.0 KiB)\n"
			   "           1  kmalloc: __kmalloc_noprof <- alloc_pipe_info <- do_pipe2\n"));
	memory_free(steal_ptr(m));

	m = run(&o, evs, ARRAY_SIZE(evs));
	if (!m)
		return;
	CHECK(m->boots == 2 && m->dropped_objs == 2 && m->dropped_bytes == 2048);
	CHECK(m->unknown_frees[MEM_SLAB] == 2);	/* 0x77777, and 0xa800 of the old boot */
	CHECK(m->total.bytes == 0 && m->uncertain == 0);
}

/*
 * A segment whose index counts losses its pages do not place: what is live
 * when it starts and all allocated in it are uncertain, until a later
 * segment's samples.
 */
static void test_segment_loss(void)
{
	struct memory_options o = { .pid = -1 };
	_cleanup_(memory_freep) struct memory *m = memory_new(&o);
	struct sample_origin seg2 = { .path = "/a/00000002.smseg", .host = "h", .boot_id = "boot-a",
				      .recording_id = "rec", .kernel = "k", .serial = 2 };
	struct sample s = { .event = "sched_switch", .ts = 2 * SEC, .wall_ns = 2 * SEC,
			    .origin = &seg2 };
	struct ev first = A("kmalloc", 1 * SEC, 0xa000, 1024, st_pipe);
	_cleanup_free_ char *text = NULL;

	if (!m)
		return;
	CHECK(feed(m, &first) == 0);		/* segment 1 */
	CHECK(memory_add(m, &s) == 0);
	CHECK(memory_segment_loss(m, &s, 1, 500) == 0);
	CHECK(m->uncertain == 1024);
	/* allocated in the lossy segment: uncertain too (feed() gives serial 1; say 2) */
	m->last_origin = NULL;
	{
		struct sample_field fields[] = { { "ptr", "41984" }, { "bytes_alloc", "1024" } };
		struct sample a = { .event = "kmalloc", .system = "kmem", .ts = 3 * SEC,
				    .wall_ns = 3 * SEC, .frames = st_pipe,
				    .nr_frames = ARRAY_SIZE(st_pipe), .origin = &seg2,
				    .fields = fields, .nr_fields = 2 };

		CHECK(memory_add(m, &a) == 0);
	}
	CHECK_MSG(m->uncertain == 2048, "%" PRIu64, m->uncertain);
	/* a later segment: what it allocates is certain */
	seg2.serial = 3;
	{
		struct sample_field fields[] = { { "ptr", "43008" }, { "bytes_alloc", "1024" } };
		struct sample a = { .event = "kmalloc", .system = "kmem", .ts = 4 * SEC,
				    .wall_ns = 4 * SEC, .frames = st_pipe,
				    .nr_frames = ARRAY_SIZE(st_pipe), .origin = &seg2,
				    .fields = fields, .nr_fields = 2 };

		CHECK(memory_add(m, &a) == 0);
	}
	CHECK(m->uncertain == 2048 && m->total.bytes == 3072 && !m->loss_open);
	text = print(m, false);
	CHECK_MSG(strstr(text, "# still live at the end: 3.0 KiB in 3 objects (2.0 KiB uncertain"),
		  "%s", text);
	CHECK_MSG(strstr(text, "CPU 1 lost 500 events somewhere in 00000002.smseg (its pages do not "
			       "say where): 1.0 KiB uncertain, and all allocated until its end\n"),
		  "%s", text);
}

/* --pid and --event choose the allocations; frees of any task pair with them. */
static void test_filters(void)
{
	const struct ev evs[] = {
		{ "kmalloc", 1 * SEC, 0xa000, 1024, st_pipe, 3, 7, 0, NULL },
		{ "kmalloc", 2 * SEC, 0xa400, 1024, st_pipe, 3, 8, 0, NULL },
		{ "kmem_cache_alloc", 3 * SEC, 0xb000, 256, st_file, 3, 7, 0, NULL },
		{ "kfree", 4 * SEC, 0xa000, 0, NULL, 0, 8, 0, NULL },
		{ "kfree", 5 * SEC, 0xa400, 0, NULL, 0, 7, 0, NULL },
		{ "mm_page_alloc", 6 * SEC, 0x100, 2, st_page, 2, 7, 0, NULL },
		{ "mm_page_free", 7 * SEC, 0x100, 0, NULL, 0, 9, 0, NULL },
	};
	struct memory_options o = { .pid = 7 };
	_cleanup_(memory_freep) struct memory *m = run(&o, evs, ARRAY_SIZE(evs));

	if (!m)
		return;
	CHECK(memory_check(m) == MEMORY_OK);
	CHECK(m->selected == 3);
	/* the pages (16 KiB, order 2) are the peak, the kmalloc of pid 8 never counted */
	CHECK_MSG(m->moment[MEM_PEAK].total.bytes == 256 + 16384, "%" PRIu64,
		  m->moment[MEM_PEAK].total.bytes);
	CHECK(m->unknown_frees[MEM_SLAB] == 0 && m->unknown_frees[MEM_PAGES] == 0);
	CHECK(m->total.bytes == 256);
	memory_free(steal_ptr(m));

	o = (struct memory_options){ .pid = -1, .event = "kmem:kmalloc" };
	m = run(&o, evs, ARRAY_SIZE(evs));
	CHECK(m && m->selected == 2 && m->moment[MEM_PEAK].total.bytes == 2048);
	memory_free(steal_ptr(m));

	o = (struct memory_options){ .pid = 12345 };
	m = run(&o, evs, ARRAY_SIZE(evs));
	CHECK(m && memory_check(m) == MEMORY_NOTHING_SELECTED);
	memory_free(steal_ptr(m));

	/* without frees there is nothing to pair */
	o = (struct memory_options){ .pid = -1 };
	m = run(&o, evs, 3);
	CHECK(m && memory_check(m) == MEMORY_NO_SLAB_FREES);
	memory_free(steal_ptr(m));
	m = run(&o, evs + 5, 1);
	CHECK(m && memory_check(m) == MEMORY_NO_PAGE_FREES);
	memory_free(steal_ptr(m));
	m = run(&o, evs + 3, 1);
	CHECK(m && memory_check(m) == MEMORY_NO_ALLOCATIONS);
}

/*
 * Many objects allocated and freed over an hour, a few hundred live at a
 * time: the index stays near the live set, the curve has at most 2 x rows
 * points whose largest is the peak, and the SVG marks that point.
 */
static void test_long(void)
{
	struct memory_options o = { .pid = -1, .rows = 10 };
	_cleanup_(memory_freep) struct memory *m = memory_new(&o);
	uint64_t max = 0, t = 0;
	size_t peak_point = 0;
	char *svg = NULL;
	size_t len = 0;
	FILE *f;

	if (!m)
		return;
	for (uint64_t i = 0; i < 200000; i++) {
		struct ev a = A("kmalloc", t, 0x10000 + 64 * (i % 997), 64, st_pipe);
		/* a hump of 300 live objects around the middle */
		struct ev fr = F("kfree", t + 1, 0x10000 + 64 * (i % 997));

		t += 18000000;		/* an hour in all */
		CHECK(feed(m, &a) == 0);
		if (!(i > 90000 && i < 90300))
			CHECK(feed(m, &fr) == 0);
	}
	CHECK_MSG(m->live <= 997 + 300, "live %zu", m->live);
	CHECK_MSG(m->index.nr < 2 * m->live + 1100, "index %zu, live %zu", m->index.nr, m->live);
	CHECK(m->cur < m->nr_points && m->nr_points == 20);
	for (size_t i = 0; i <= m->cur; i++)
		if (m->curve[i].max_bytes > max) {
			max = m->curve[i].max_bytes;
			peak_point = i;
		}
	CHECK_MSG(max == m->moment[MEM_PEAK].total.bytes, "%" PRIu64 " vs %" PRIu64, max,
		  m->moment[MEM_PEAK].total.bytes);
	CHECK(peak_point == (m->moment[MEM_PEAK].t - m->t0) / m->width);
	f = open_memstream(&svg, &len);
	CHECK(f && memory_write_svg(m, f, "t<1>") == 0);
	fclose(f);
	CHECK(svg && strstr(svg, "<circle id=\"peak\""));
	CHECK(svg && strstr(svg, "t&lt;1&gt;"));
	free(svg);
}

/* --baseline: the growth per stack from it to --at or to the end, and its flame graph. */
static void test_baseline(void)
{
	struct memory_options o = { .pid = -1, .baseline = 2 * SEC + 5, .at = 3 * SEC + 5 };
	_cleanup_(memory_freep) struct memory *m = run(&o, basic, ARRAY_SIZE(basic));
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	_cleanup_free_ char *text = NULL, *json = NULL;
	struct json_value *doc = NULL;
	const struct json_value *g;

	if (!m || !fg)
		return;
	text = print(m, false);
	/* 2 pipes and 2 files then, 3 pipes and 2 files at --at: the pipes grew by one */
	CHECK_MSG(strstr(text, "# growth from "), "%s", text);
	CHECK_MSG(strstr(text, "to the end") == NULL && strstr(text, ": 2.5 KiB -> 3.5 KiB\n"), "%s",
		  text);
	CHECK_MSG(strstr(text, "    +1.0 KiB      2.0 KiB      3.0 KiB         +1  kmalloc: "
			       "__kmalloc_noprof <- alloc_pipe_info <- do_pipe2\n"), "%s", text);
	CHECK(memory_flamegraph(m, fg) == 0);
	CHECK(flamegraph_total(fg, true) == 2560 && flamegraph_total(fg, false) == 3584);

	/* to the end: the pipes are gone */
	memory_free(steal_ptr(m));
	o.at = 0;
	m = run(&o, basic, ARRAY_SIZE(basic));
	json = m ? print(m, true) : NULL;
	CHECK(json && json_parse(json, strlen(json), &doc) == 0);
	g = doc ? json_get(doc, "growth") : NULL;
	CHECK(g && json_get(json_get(g, "from"), "bytes")->integer == 2560);
	CHECK(g && json_get(json_get(g, "to"), "bytes")->integer == 512);
	g = g ? json_get(g, "stacks") : NULL;
	CHECK(g && g->nr_items == 1 && json_get(g->items[0], "growth_bytes")->integer == -2048);
	json_value_free(doc);
}

/* A pointer allocated and freed again and again keeps one slot of the index. */
static void test_hot_pointer(void)
{
	struct memory_options o = { .pid = -1 };
	_cleanup_(memory_freep) struct memory *m = memory_new(&o);

	for (uint64_t i = 0; m && i < 5000; i++) {
		struct ev a = A("kmalloc", 2 * i, 0xa000, 64, st_pipe), f = F("kfree", 2 * i + 1, 0xa000);

		CHECK(feed(m, &a) == 0 && feed(m, &f) == 0);
	}
	CHECK_MSG(m && m->index.nr == 1, "%zu slots", m ? m->index.nr : 0);
	CHECK(m && m->live == 0 && m->stacks[0].churn == 5000);
}

/* The flame graph of a moment; the budget. */
static void test_flamegraph_budget(void)
{
	struct memory_options o = { .pid = -1 };
	_cleanup_(memory_freep) struct memory *m = run(&o, basic, ARRAY_SIZE(basic));
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	struct memory *small;
	int r = 0;

	CHECK(m && fg);
	if (!m || !fg)
		return;
	CHECK(memory_flamegraph(m, fg) == 0);
	CHECK(flamegraph_total(fg, false) == 3584);
	CHECK(flamegraph_total(fg, true) == 0);

	budget_clear_error();
	budget_set_limit(budget_used() + 200000);
	small = memory_new(&o);
	CHECK(small);
	for (uint64_t i = 0; small && i < 100000 && r == 0; i++) {
		struct ev a = A("kmalloc", i, 0x10000 + 64 * i, 64, st_pipe);

		r = feed(small, &a);
	}
	CHECK(r == -ENOMEM);
	CHECK_MSG(budget_error() && strstr(budget_error(), "the live allocations"), "%s",
		  budget_error() ?: "(none)");
	memory_free(small);
	budget_set_limit(0);
	budget_clear_error();
}

/* What a hook was told, one line each. */
static char hook_log[2048];

static void hook_note(const char *fmt, ...)
{
	size_t n = strlen(hook_log);
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(hook_log + n, sizeof(hook_log) - n, fmt, ap);
	va_end(ap);
}

static int hook_alloc(const struct sample *s, void *userdata, uint64_t *ret_cookie)
{
	(void)userdata;
	*ret_cookie = s->ts;
	hook_note("alloc %" PRIu64 "\n", s->ts);
	return 0;
}

static int hook_pair(const struct memory_pair *p, void *userdata)
{
	static const char *const ends[] = { "freed", "lost", "live" };

	(void)userdata;
	hook_note("%s %" PRIu64 " %s %#" PRIx64 " %" PRIu64 " %s %" PRIu64 "\n", ends[p->end],
		  p->cookie, p->pages ? "page" : "slab", p->key, p->bytes, p->kind,
		  p->end_sample ? p->end_sample->ts : 0);
	return 0;
}

static int hook_unknown(const struct sample *s, bool pages, uint64_t key, void *userdata)
{
	(void)userdata;
	hook_note("unknown %" PRIu64 " %s %#" PRIx64 "\n", s->ts, pages ? "page" : "slab", key);
	return 0;
}

/*
 * The hook is told each selected allocation and how it ends: freed, its
 * pointer allocated again, live at its boot's end or at the end; a free
 * of what was not read; nothing of an allocation --pid leaves out, even
 * when it is freed.
 */
static void test_hook(void)
{
	static const struct ev evs[] = {
		A("kmalloc", 10, 0xa000, 1024, st_pipe),
		F("kfree", 20, 0xa000),
		{ "kmalloc", 30, 0xc000, 64, st_pipe, ARRAY_SIZE(st_pipe), 7, 0, NULL },
		F("kfree", 35, 0xc000),
		A("kmalloc", 40, 0xd000, 512, st_pipe),
		A("kmalloc", 50, 0xd000, 512, st_pipe),
		F("kfree", 60, 0xe000),
		A("mm_page_alloc", 70, 0x10, 1, st_page),
		{ "kmalloc", 80, 0xf000, 256, st_pipe, ARRAY_SIZE(st_pipe), 0, 0, "boot-b" },
	};
	struct memory_hook h = { .alloc = hook_alloc, .pair = hook_pair,
				 .unknown_free = hook_unknown };
	_cleanup_(memory_freep) struct memory *m = NULL;

	hook_log[0] = '\0';
	m = run(&(struct memory_options){ .pid = 100, .hook = &h }, evs, ARRAY_SIZE(evs));
	CHECK(m && memory_end_live(m) == 0);
	CHECK_MSG(streq(hook_log, "alloc 10\n"
				  "freed 10 slab 0xa000 1024 kmalloc-1024 20\n"
				  "alloc 40\n"
				  "lost 40 slab 0xd000 512 kmalloc-512 50\n"
				  "alloc 50\n"
				  "unknown 60 slab 0xe000\n"
				  "alloc 70\n"
				  "live 50 slab 0xd000 512 kmalloc-512 0\n"
				  "live 70 page 0x10 8192 pages-order1 0\n"
				  "alloc 80\n"
				  "live 80 slab 0xf000 256 kmalloc-256 0\n"),
		  "%s", hook_log);
}

int main(void)
{
	test_basic();
	test_at();
	test_baseline();
	test_gaps();
	test_segment_loss();
	test_filters();
	test_long();
	test_hot_pointer();
	test_flamegraph_budget();
	test_callers();
	test_hook();
	return tests_done("test-memory");
}
