/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * event_format_task_time() writes the start of a report line as
 * libtraceevent's tep_print_event() prints "%16s-%-5d [%03d]" and
 * " %6.1000d:". Both are run on the same records (short, exact-width,
 * long, very long and unknown comms;
 * pids and CPUs of every width, negative ones; times around the rounding
 * and the one-second switch, and random ones) and must agree byte for byte.
 */
#include <limits.h>

#include <event-parse.h>

#include "event-format.h"
#include "helpers.h"
#include "page-walk.h"

static const char tick_format[] =
	"name: tick\nID: 30\nformat:\n"
	FTRACE_COMMON_FIELDS_FORMAT "\n"
	"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"n=%d\", REC->n\n";

/* One record of pid on cpu at ts: both writers must print the same start. */
static void compare(struct event_format_cache *c, struct tep_handle *tep, int pid, int cpu,
		    uint64_t ts)
{
	uint8_t data[12] = { 30, 0 };
	struct tep_record rec = { .ts = ts, .cpu = cpu, .data = data, .size = sizeof(data) };
	struct trace_seq want, got;

	memcpy(data + 4, &pid, sizeof(pid));
	trace_seq_init(&want);
	tep_print_event(tep, &want, &rec, "%16s-%-5d [%03d]", TEP_PRINT_COMM, TEP_PRINT_PID,
			TEP_PRINT_CPU);
	tep_print_event(tep, &want, &rec, " %6.1000d:", TEP_PRINT_TIME);
	trace_seq_terminate(&want);

	trace_seq_init(&got);
	CHECK(event_format_task_time(c, &got, tep_data_comm_from_pid(tep, pid), pid, cpu, true, ts));
	trace_seq_terminate(&got);
	CHECK_MSG(strcmp(got.buffer, want.buffer) == 0, "pid %d cpu %d ts %llu: got '%s', want '%s'",
		  pid, cpu, (unsigned long long)ts, got.buffer, want.buffer);
	trace_seq_destroy(&got);
	trace_seq_destroy(&want);
}

int main(void)
{
	static const int pids[] = { 0, 1, 7, 42, 1234, 12345, 99999, 123456, 4194304,
				    INT_MAX, -1, -42, -12345, INT_MIN, 31337 };
	static const int cpus[] = { 0, 1, 9, 10, 99, 100, 999, 1000, 4095, -1 };
	static const uint64_t times[] = {
		0, 1, 499, 500, 999, 1000, 999999499, 999999500, 1000000000,
		1000000499, 1000000500, 1000001499, 1000001500, 9999999999,
		99999999999, 100000000000, 123456789012345, UINT64_MAX / 2,
		UINT64_MAX - 1000, UINT64_MAX,
	};
	_cleanup_(event_format_cache_freep) struct event_format_cache *fc = event_format_cache_new();
	struct tep_handle *tep = tep_alloc();
	char name[300];

	CHECK(tep != NULL && fc != NULL);
	if (!tep || !fc)
		return tests_done("test-event-line");
	tep_set_long_size(tep, 8);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	CHECK(tep_parse_event(tep, tick_format, sizeof(tick_format) - 1, "test") == 0);
	tep_register_comm(tep, "bash", 1234);
	tep_register_comm(tep, "kworker/u16:3-events_unbound", 42);	/* longer than 16 */
	tep_register_comm(tep, "sixteen-chars-xx", 7);			/* exactly 16 */
	tep_register_comm(tep, "", 31337);
	memset(name, 'c', 299);
	name[299] = '\0';
	tep_register_comm(tep, name, 99999);		/* far longer than 16 */

	for (size_t p = 0; p < ARRAY_SIZE(pids); p++)
		for (size_t c = 0; c < ARRAY_SIZE(cpus); c++)
			for (size_t t = 0; t < ARRAY_SIZE(times); t++)
				compare(fc, tep, pids[p], cpus[c], times[t]);
	for (int i = 0; i < 100000; i++)
		compare(fc, tep, (int)(test_random() % 200000) - 1000, (int)(test_random() % 300),
			test_random() >> (test_random() % 64));

	tep_free(tep);
	return tests_done("test-event-line");
}
