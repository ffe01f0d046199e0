/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/export/clickhouse.c and segtally.c: the ClickHouse rows of the known
 * sample stream (tests/sample-stream.h) from a segment whose META and
 * index are written here: stack keys that depend on function names only,
 * each stack once, TabSeparated escaping, entries, losses from the index
 * (with a CPU's wall-clock span) and the loads row.
 */
#include "clickhouse.h"
#include "helpers.h"
#include "sample-stream.h"
#include "segment.h"
#include "segtally.h"

static char *tmpdir;

/* A finished segment whose host name holds a tab and a backslash; CPU 1 lost 7 events. */
static char *write_segment(void)
{
	static const char meta[] = "hostname=web\t1\\x\nboot_id=b00t\nrecording_id=rec1\n"
				   "kernel_release=6.12.58\nsegment_seq=42\n";
	struct segment_cpu_index cpus[2] = {
		{ .cpu = 0, .events = 9, .first_ts = 1000000000, .last_ts = 1000005000 },
		{ .cpu = 1, .events = 8, .first_ts = 1000001000, .last_ts = 1000007000,
		  .lost_events = 7 },
	};
	struct segment_index idx = { .nr_cpus = 2, .cpus = cpus };
	struct segment_writer *w = NULL;
	char *path = NULL;

	CHECK(segment_writer_open(tmpdir, "00000042-20261201T000000", &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

static char *slurp_file(FILE *f)
{
	long n;
	char *s;

	CHECK(fflush(f) == 0);
	n = ftell(f);
	CHECK(n >= 0);
	s = calloc(1, (size_t)n + 1);
	CHECK(s);
	rewind(f);
	CHECK(fread(s, 1, (size_t)n, f) == (size_t)n);
	return s;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_stack_key(void)
{
	/* the same names at other addresses (another kernel build): the same key */
	struct sample_frame moved[ARRAY_SIZE(stack_open)];
	struct sample_frame split[2] = { { 0, "ab" }, { 0, "c" } }, joined[2] = { { 0, "a" }, { 0, "bc" } };

	for (size_t i = 0; i < ARRAY_SIZE(moved); i++)
		moved[i] = (struct sample_frame){ stack_open[i].addr + 0x1000, stack_open[i].sym };
	CHECK(ch_stack_key(stack_open, 3) == ch_stack_key(moved, 3));
	CHECK(ch_stack_key(stack_open, 3) != ch_stack_key(stack_read, 3));
	CHECK(ch_stack_key(stack_open, 3) != ch_stack_key(stack_open, 2));
	CHECK(ch_stack_key(split, 2) != ch_stack_key(joined, 2));
	CHECK(ch_stack_key(stack_open, 3) != 0);
	/* FNV-1a 64 of "x\0", as doc/fleet.md defines the key */
	CHECK(ch_stack_key(&(struct sample_frame){ 0, "x" }, 1) == UINT64_C(0x08f0d807b58d20e5));
}

static void test_rows(void)
{
	_cleanup_free_ char *path = write_segment(), *ev = NULL, *st = NULL, *lo = NULL, *ld = NULL;
	struct sample_origin origin = { .path = path, .serial = 5 };
	struct ch_files files = { tmpfile(), tmpfile(), tmpfile(), tmpfile() };
	struct sample s = test_samples[0];
	struct ch_export *c = NULL;
	char want[512];

	CHECK(files.events && files.stacks && files.losses && files.loads);
	CHECK(ch_export_new(&files, 77, 99, &c) == 0);
	/* a sample of a segment not announced */
	s.origin = &origin;
	CHECK(ch_export_add(c, &s) == -EINVAL);
	CHECK(ch_export_add_segment(c, "/nonexistent/segment.smseg") < 0);
	CHECK(ch_export_add_segment(c, path) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++) {
		s = test_samples[i];
		s.origin = &origin;
		s.system = "kmem";
		s.wall_ns = s.ts + 1700000000000000000ull;
		s.stack_entry = s.nr_frames > 0;
		CHECK(ch_export_add(c, &s) == 0);
	}
	CHECK(ch_export_finish(c) == 0);
	ev = slurp_file(files.events);
	st = slurp_file(files.stacks);
	lo = slurp_file(files.losses);
	ld = slurp_file(files.loads);

	CHECK(count_lines(ev) == ARRAY_SIZE(test_samples));
	(void)snprintf(want, sizeof(want),
		       "web\\t1\\\\x\tb00t\trec1\t42\t77\t6.12.58\t0\t100\tbash\tkmem\tkmalloc\t"
		       "1000000000\t1700000001000000000\t%" PRIu64 "\t2\n",
		       ch_stack_key(stack_open, 3));
	CHECK_MSG(!strncmp(ev, want, strlen(want)), "first row: %.200s", ev);
	/* the event without a stack: key 0, one entry */
	CHECK(strstr(ev, "\tirq_handler_entry\t1000005500\t1700000001000005500\t0\t1\n"));
	/* four distinct stacks and "no stack", each once; a frame without a symbol by its address */
	CHECK_MSG(count_lines(st) == 5, "%s", st);
	CHECK(strstr(st, "0\t0\t['[no stack]']\n"));
	CHECK(strstr(st, "\t3\t['__kmalloc','0xffffffffc0001234','entry_SYSCALL_64']\n"));
	/* CPU 1's loss from the index, over its samples' wall-clock span */
	CHECK_MSG(streq(lo, "web\\t1\\\\x\tb00t\trec1\t42\t77\t1\t7\t0\t1700000001000001000\t"
			    "1700000001000007000\t1000001000\t1000007000\n"), "%s", lo);
	/* the loads row: 9 rows, 17 entries (8 with a stack), 7 lost */
	(void)snprintf(want, sizeof(want), "77\t99\tweb\\t1\\\\x\tb00t\trec1\t42\t6.12.58\t%s\t",
		       path);
	CHECK_MSG(!strncmp(ld, want, strlen(want)), "%s", ld);
	CHECK_MSG(strstr(ld, "\t9\t17\t7\t1700000001000000000\t1700000001000007000\n"), "%s", ld);
	ch_export_free(c);
	fclose(files.events);
	fclose(files.stacks);
	fclose(files.losses);
	fclose(files.loads);
}

int main(void)
{
	tmpdir = test_tmpdir();
	test_stack_key();
	test_rows();
	test_rmtree(tmpdir);
	free(tmpdir);
	return tests_done("test-clickhouse");
}
