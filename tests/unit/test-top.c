/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * top: the known sample stream, sorted by stack, call site, comm and pid,
 * as text and JSON; limits; unknown sort keys.
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

	CHECK(top_sort_from_string("callsite") == TOP_SORT_CALLSITE);
	CHECK(top_sort_from_string("dso") == -EINVAL);
	return tests_done("test-top");
}
