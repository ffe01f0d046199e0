/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * top: the known sample stream, sorted by stack, call site, comm and pid,
 * as text and JSON; limits; unknown sort keys; samples looked up by their
 * addresses within a scope, named once per scope.
 */
#include "ctl-proto.h"
#include "helpers.h"
#include "sample-stream.h"
#include "top.h"

static char *print(enum top_sort sort, bool json, size_t limit)
{
	_cleanup_(top_freep) struct top *t = top_new(sort);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(t && f);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(top_add(t, &test_samples[i]) == 0);
	CHECK(top_print(t, f, json, limit) == 0);
	fclose(f);
	return text;
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
	CHECK(top_print(t, f, false, 0) == 0);
	fclose(f);
	CHECK_MSG(streq(out, expect), "%s", out);
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

	CHECK(top_sort_from_string("callsite") == TOP_SORT_CALLSITE);
	CHECK(top_sort_from_string("dso") == -EINVAL);
	return tests_done("test-top");
}
