/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * top: the known sample stream, sorted by stack, call site, comm and pid,
 * as text and JSON; limits; unknown sort keys; samples looked up by their
 * addresses within a scope, named once per scope. By symbol: the call
 * graph of callers, the children view, lines cut to a width. The tracing
 * machinery's frames: which are, and that stacks differing only in them
 * are one row once they are left out.
 */
#include "ctl-proto.h"
#include "helpers.h"
#include "sample-stream.h"
#include "top.h"

static char *print_view(enum top_sort sort, const struct top_view *v)
{
	_cleanup_(top_freep) struct top *t = top_new(sort);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(t && f);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(top_add(t, &test_samples[i]) == 0);
	CHECK(top_print(t, f, v) == 0);
	fclose(f);
	return text;
}

static char *print(enum top_sort sort, bool json, size_t limit)
{
	return print_view(sort, &(struct top_view){ .json = json, .limit = limit });
}

/*
 * Within a scope the same addresses are the same row; another scope may
 * name them otherwise (another boot); rows are by name, so different
 * addresses of one function are one row.
 */
static void check_scopes(enum top_sort sort, const char *expect)
{
	_cleanup_(top_freep) struct top *t = top_new(sort);
	const struct sample_frame a[] = { { 0x1000, "alloc" }, { 0x2000, "caller" } };
	const struct sample_frame a2[] = { { 0x1008, "alloc" }, { 0x2000, "caller" } };
	const struct sample_frame b[] = { { 0x1000, "other" }, { 0x2000, "caller" } };
	const struct sample_frame text[] = { { 0, "alloc" }, { 0, "caller" } };
	const struct { uint64_t scope; const struct sample_frame *f; } in[] = {
		{ 1, a }, { 1, a }, { 1, a2 }, { 2, b }, { 2, b }, { 3, a }, { 0, a }, { 1, text },
	};
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(t && f);
	for (size_t i = 0; i < ARRAY_SIZE(in); i++) {
		struct sample s = { .event = "kmalloc", .nr_frames = 2, .frames = in[i].f,
				    .scope = in[i].scope };

		CHECK(top_add(t, &s) == 0);
	}
	CHECK(top_print(t, f, &(struct top_view){}) == 0);
	fclose(f);
	CHECK_MSG(streq(out, expect), "%s", out);
	free(out);
}

/* Samples of kmem_cache_alloc with these stacks (innermost first, "a,b,c"), as sample-source makes them. */
static char *print_stacks(const char *const *stacks, size_t n, const struct top_view *v,
			  enum top_sort sort, bool strip)
{
	_cleanup_(top_freep) struct top *t = top_new(sort);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(t && f);
	for (size_t i = 0; i < n; i++) {
		struct sample_frame fr[16];
		char names[16][64];
		size_t nr = 0, skip;
		struct sample s;

		for (const char *p = stacks[i]; *p && nr < 16;) {
			size_t l = strcspn(p, ",");

			(void)snprintf(names[nr], sizeof(names[nr]), "%.*s", (int)l, p);
			fr[nr] = (struct sample_frame){ 0x1000 * (nr + 1), names[nr] };
			nr++;
			p += l + (p[l] == ',');
		}
		skip = strip ? sample_machinery_frames(fr, nr, "kmem_cache_alloc") : 0;
		s = (struct sample){ .event = "kmem_cache_alloc", .nr_frames = nr - skip,
				     .frames = fr + skip };
		CHECK(top_add(t, &s) == 0);
	}
	CHECK(top_print(t, f, v) == 0);
	fclose(f);
	return out;
}

static void check_machinery(void)
{
	static const char *const stacks[] = {
		"trace_event_raw_event_kmem_cache_alloc,__traceiter_kmem_cache_alloc,"
		"kmem_cache_alloc_noprof,getname_flags,do_sys_openat2",
		"trace_event_raw_event_kmem_cache_alloc,kmem_cache_alloc_noprof,getname_flags,"
		"do_sys_openat2",
		"perf_trace_kmem_cache_alloc,trace_kmem_cache_alloc,kmem_cache_alloc_noprof,"
		"getname_flags,do_sys_openat2",
		"trace_event_raw_event_kmem_cache_alloc,kmem_cache_alloc_noprof,alloc_empty_file,"
		"path_openat,do_sys_openat2",
		/* a function named trace_* further out is the traced code's own */
		"trace_event_raw_event_kmem_cache_alloc,kmem_cache_alloc_noprof,trace_kmalloc,"
		"do_sys_openat2",
	};
	_cleanup_free_ char *raw = print_stacks(stacks, 5, &(struct top_view){}, TOP_SORT_STACK,
						 false);
	_cleanup_free_ char *flat = print_stacks(stacks, 5, &(struct top_view){}, TOP_SORT_STACK,
						  true);
	_cleanup_free_ char *graph = print_stacks(stacks, 5, &(struct top_view){ .width = 0 },
						   TOP_SORT_SYMBOL, true);
	_cleanup_free_ char *narrow = print_stacks(stacks, 5, &(struct top_view){ .width = 30 },
						    TOP_SORT_SYMBOL, true);
	_cleanup_free_ char *children = print_stacks(stacks, 5,
						      &(struct top_view){ .children = true,
									  .limit = 3 },
						      TOP_SORT_SYMBOL, true);
	_cleanup_free_ char *json = print_stacks(stacks, 5, &(struct top_view){ .json = true },
						  TOP_SORT_SYMBOL, true);
	struct json_value *v = NULL;

	CHECK(sample_frame_is_machinery("__traceiter_kmalloc", "kmalloc"));
	CHECK(sample_frame_is_machinery("__probestub_kmalloc", NULL));
	CHECK(sample_frame_is_machinery("trace_kmalloc", "kmalloc"));
	CHECK(!sample_frame_is_machinery("trace_kmalloc", "kmem_cache_alloc"));
	CHECK(!sample_frame_is_machinery("kmem_cache_alloc_noprof", "kmem_cache_alloc"));
	CHECK(!sample_frame_is_machinery(NULL, "kmalloc"));

	CHECK_MSG(startswith(raw, "# kmem_cache_alloc: 5 events\n     20.00%          1  "
				  "perf_trace_kmem_cache_alloc <- "), "%s", raw);
	CHECK_MSG(streq(flat, "# kmem_cache_alloc: 5 events\n"
			      "     60.00%          3  kmem_cache_alloc_noprof <- getname_flags <- "
			      "do_sys_openat2\n"
			      "     20.00%          1  kmem_cache_alloc_noprof <- alloc_empty_file <- "
			      "path_openat <- do_sys_openat2\n"
			      "     20.00%          1  kmem_cache_alloc_noprof <- trace_kmalloc <- "
			      "do_sys_openat2\n"), "%s", flat);
	CHECK_MSG(streq(graph, "# kmem_cache_alloc: 5 events\n"
			       "    100.00%          5  kmem_cache_alloc_noprof\n"
			       "             |--60.00%--getname_flags\n"
			       "             |          do_sys_openat2\n"
			       "             |--20.00%--alloc_empty_file\n"
			       "             |          path_openat\n"
			       "             |          do_sys_openat2\n"
			       "              --20.00%--trace_kmalloc\n"
			       "                        do_sys_openat2\n"), "%s", graph);
	CHECK_MSG(strstr(narrow, "\n             |--60.00%--get...\n"), "%s", narrow);
	for (const char *p = narrow; *p; p = strchr(p, '\n') + 1)
		CHECK_MSG(strcspn(p, "\n") <= 30, "%s", narrow);
	CHECK_MSG(streq(children, "# kmem_cache_alloc: 5 events\n"
				  "  children       self      count  symbol\n"
				  "   100.00%    100.00%          5  kmem_cache_alloc_noprof\n"
				  "   100.00%      0.00%          5  do_sys_openat2\n"
				  "    60.00%      0.00%          3  getname_flags\n"), "%s", children);
	CHECK_MSG(json_parse(json, strlen(json), &v) == 0, "%s", json);
	CHECK_MSG(strstr(json, "\"key\":\"kmem_cache_alloc_noprof\",\"stacks\":[{\"count\":3,"
			       "\"percent\":60,\"frames\":[\"kmem_cache_alloc_noprof\","
			       "\"getname_flags\",\"do_sys_openat2\"]}"), "%s", json);
	json_value_free(v);
}

/* --sort callsite: the event's call_site field where it has one, else the first frame. */
static void check_call_site_field(void)
{
	_cleanup_(top_freep) struct top *t = top_new(TOP_SORT_CALLSITE);
	const struct sample_frame fr[] = { { 0x1000, "__kmalloc" }, { 0x2000, "seq_read" } };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	CHECK(t && f);
	for (int i = 0; i < 4; i++) {
		struct sample s = { .event = "kmalloc", .nr_frames = 2, .frames = fr, .scope = 1,
				    .call_site = i < 3 ? (i ? "seq_read" : "single_open") : NULL };

		CHECK(top_add(t, &s) == 0);
	}
	CHECK(top_print(t, f, &(struct top_view){}) == 0);
	fclose(f);
	CHECK_MSG(streq(out, "# kmalloc: 4 events\n     50.00%          2  seq_read\n"
			     "     25.00%          1  __kmalloc\n     25.00%          1  single_open\n"),
		  "%s", out);
	free(out);
}

int main(void)
{
	_cleanup_free_ char *stack = print(TOP_SORT_STACK, false, 0);
	_cleanup_free_ char *site = print(TOP_SORT_CALLSITE, false, 0);
	_cleanup_free_ char *comm = print(TOP_SORT_COMM, false, 1);
	_cleanup_free_ char *pid = print(TOP_SORT_PID, false, 0);
	_cleanup_free_ char *json = print(TOP_SORT_STACK, true, 2);
	struct json_value *v = NULL;

	CHECK_MSG(streq(stack, "# kmalloc: 6 events\n"
			       "     50.00%          3  __kmalloc <- do_sys_open <- entry_SYSCALL_64\n"
			       "     33.33%          2  __kmalloc <- seq_read <- entry_SYSCALL_64\n"
			       "     16.67%          1  __kmalloc <- 0xffffffffc0001234 <- "
			       "entry_SYSCALL_64\n"
			       "\n# sched_switch: 2 events\n"
			       "    100.00%          2  __schedule <- schedule <- entry_SYSCALL_64\n"
			       "\n# irq_handler_entry: 1 events\n"
			       "    100.00%          1  [no stack]\n"),
		  "%s", stack);
	CHECK_MSG(startswith(site, "# kmalloc: 6 events\n    100.00%          6  __kmalloc\n"), "%s",
		  site);
	CHECK_MSG(startswith(comm, "# kmalloc: 6 events\n     50.00%          3  bash\n\n"), "%s",
		  comm);
	CHECK_MSG(strstr(pid, "# sched_switch: 2 events\n     50.00%          1  100\n"
			      "     50.00%          1  200\n"),
		  "%s", pid);

	CHECK_MSG(json_parse(json, strlen(json), &v) == 0, "%s", json);
	CHECK_MSG(strstr(json, "\"sort\":\"stack\",\"events\":[{\"event\":\"kmalloc\",\"total\":6,"
			       "\"rows\":[{\"count\":3,"),
		  "%s", json);
	CHECK_MSG(strstr(json, "\"frames\":[\"__kmalloc\",\"do_sys_open\",\"entry_SYSCALL_64\"]"),
		  "%s", json);
	CHECK_MSG(!strstr(json, "0xffffffffc0001234"), "limit 2: %s", json);
	json_value_free(v);

	check_scopes(TOP_SORT_STACK, "# kmalloc: 8 events\n"
				     "     75.00%          6  alloc <- caller\n"
				     "     25.00%          2  other <- caller\n");
	check_scopes(TOP_SORT_CALLSITE, "# kmalloc: 8 events\n"
					"     75.00%          6  alloc\n"
					"     25.00%          2  other\n");

	check_machinery();
	check_call_site_field();
	CHECK(top_sort_from_string("callsite") == TOP_SORT_CALLSITE);
	CHECK(top_sort_from_string("symbol") == TOP_SORT_SYMBOL);
	CHECK(top_sort_from_string("dso") == -EINVAL);
	return tests_done("test-top");
}
