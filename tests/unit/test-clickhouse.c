/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/export/clickhouse.c and segtally.c: the ClickHouse rows of the known
 * sample stream (tests/sample-stream.h) from a segment whose META and
 * index are written here: stack keys that depend on function names only,
 * each stack once, TabSeparated escaping, entries, losses from the index
 * (with a CPU's wall-clock span) and the loads row; a recovered segment's
 * losses from its pages and its write outage's STATS (in info too); the
 * loss rows of a segment of 8192 CPUs in one pass; allocations paired with
 * their frees, and the frees rows of what crosses a segment.
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

static void close_files(struct ch_files *f)
{
	for (FILE **p = (FILE *[]){ f->events, f->stacks, f->losses, f->loads, f->allocations,
				    f->frees, NULL };
	     *p; p++)
		fclose(*p);
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
	struct ch_files files = { tmpfile(), tmpfile(), tmpfile(), tmpfile(), tmpfile(),
				  tmpfile() };
	struct sample s = test_samples[0];
	struct ch_export *c = NULL;
	char want[512];

	CHECK(files.events && files.stacks && files.losses && files.loads && files.allocations &&
	      files.frees);
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
	close_files(&files);
}

/* The losses and loads rows of an export of samples of the segment at path. */
static void export_rows(const char *path, const struct sample *samples, size_t n, char **ret_losses,
			char **ret_loads)
{
	struct sample_origin origin = { .path = path, .serial = 9 };
	struct ch_files files = { tmpfile(), tmpfile(), tmpfile(), tmpfile(), tmpfile(),
				  tmpfile() };
	struct ch_export *c = NULL;

	CHECK(files.events && files.stacks && files.losses && files.loads && files.allocations &&
	      files.frees);
	CHECK(ch_export_new(&files, 78, 99, &c) == 0);
	CHECK(ch_export_add_segment(c, path) == 0);
	for (size_t i = 0; i < n; i++) {
		struct sample s = samples[i];

		s.origin = &origin;
		CHECK(ch_export_add(c, &s) == 0);
	}
	CHECK(ch_export_finish(c) == 0);
	*ret_losses = slurp_file(files.losses);
	*ret_loads = slurp_file(files.loads);
	ch_export_free(c);
	close_files(&files);
}

/* `stackmapctl info --json path` (with $STACKMAPCTL, as make check sets it): its lost_events. */
static long long info_lost(const char *path)
{
	const char *ctl = getenv("STACKMAPCTL");
	char cmd[4096], out[65536], *p;
	FILE *f;
	size_t n;

	if (!ctl)
		return -1;
	(void)snprintf(cmd, sizeof(cmd), "%s info --json '%s'", ctl, path);
	f = popen(cmd, "r");
	CHECK(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	CHECK_MSG(pclose(f) == 0, "'%s' failed: %s", cmd, out);
	/* the segment's total comes before its CPUs' */
	p = strstr(out, "\"lost_events\":");
	CHECK_MSG(p, "no lost_events in '%s'", out);
	return p ? strtoll(p + strlen("\"lost_events\":"), NULL, 10) : -1;
}

/*
 * A segment recovered after a crash (index flag TRUNCATED: its figures are
 * not to be trusted) whose write outage dropped 500 events of CPU 1 and 40
 * of CPU 2: they count as lost, besides what its pages counted (3 on CPU 1).
 */
static void test_recovered_write_loss(void)
{
	static const char meta[] = "hostname=web\nboot_id=b00t\nrecording_id=rec1\n"
				   "kernel_release=6.12.58\nsegment_seq=43\n";
	static const char stats1[] = "write_error=No space left on device\nwrite_dropped_events=500\n"
				     "write_dropped_bytes=65536\nwrite_dropped_frames=2\n"
				     "write_dropped_first_ts=900\nwrite_dropped_last_ts=950\n";
	static const char stats2[] = "write_error=No space left on device\nwrite_dropped_events=40\n"
				     "write_dropped_first_ts=910\nwrite_dropped_last_ts=990\n";
	static const char stats3[] = "entries=5\nlost_events=0\n";
	/* the index the recovery wrote: its figures lost (0) */
	struct segment_cpu_index cpus[1] = { { .cpu = 0 } };
	struct segment_index idx = { .nr_cpus = 1, .cpus = cpus, .flags = SEGMENT_INDEX_F_TRUNCATED };
	struct sample samples[3] = { test_samples[0], test_samples[1], test_samples[2] };
	struct segment_writer *w = NULL;
	_cleanup_free_ char *path = NULL, *lo = NULL, *ld = NULL;

	CHECK(segment_writer_open(tmpdir, "00000043-20261201T000000", &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_STATS, 1, stats1, strlen(stats1), 0, NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_STATS, 2, stats2, strlen(stats2), 0, NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_STATS, 0, stats3, strlen(stats3), 0, NULL) == 0);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);

	samples[1].lost_before = 3;		/* CPU 1: its page counted 3 */
	export_rows(path, samples, ARRAY_SIZE(samples), &lo, &ld);
	CHECK_MSG(streq(lo, "web\tb00t\trec1\t43\t78\t1\t503\t0\t0\t0\t1000001000\t1000001000\n"
			    "web\tb00t\trec1\t43\t78\t2\t40\t0\t0\t0\t910\t990\n"),
		  "losses of a recovered segment: %s", lo);
	CHECK_MSG(strstr(ld, "\t3\t3\t543\t0\t0\n"), "%s", ld);
	/* info counts the same (no pages: 540 from STATS) */
	if (getenv("STACKMAPCTL"))
		CHECK_MSG(info_lost(path) == 540, "info: %lld lost", info_lost(path));
}

/*
 * A segment of 8192 CPUs, each with a loss in its index and a sample: its
 * loss rows are built in one pass (a search per CPU took minutes before).
 */
static void test_many_cpus(void)
{
	enum { NR = 8192 };
	static const char meta[] = "hostname=big\nboot_id=b\nrecording_id=r\nsegment_seq=1\n";
	struct segment_cpu_index *cpus = calloc(NR, sizeof(*cpus));
	struct sample *samples = calloc(NR, sizeof(*samples));
	struct segment_index idx = { .nr_cpus = NR, .cpus = cpus };
	struct segment_writer *w = NULL;
	_cleanup_free_ char *path = NULL, *lo = NULL, *ld = NULL;
	char want[128];

	CHECK(cpus && samples);
	for (unsigned i = 0; i < NR; i++) {
		cpus[i] = (struct segment_cpu_index){ .cpu = i, .events = 1, .first_ts = 1000 + i,
						      .last_ts = 1000 + i, .lost_events = i + 1 };
		/* newest CPU first: each sample's CPU goes before those seen */
		samples[i] = (struct sample){ .event = "tick", .ts = 1000 + NR - 1 - i,
					      .cpu = NR - 1 - i, .comm = "t" };
	}
	CHECK(segment_writer_open(tmpdir, "00000001-20261201T000000", &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	export_rows(path, samples, NR, &lo, &ld);
	CHECK_MSG(count_lines(lo) == NR, "%zu loss rows", count_lines(lo));
	CHECK_MSG(startswith(lo, "big\tb\tr\t1\t78\t0\t1\t0\t"), "%.100s", lo);
	CHECK(strstr(lo, "\n" "big\tb\tr\t1\t78\t8191\t8192\t0\t"));
	(void)snprintf(want, sizeof(want), "\t%d\t%d\t%llu\t", NR, NR,
		       (unsigned long long)NR * (NR + 1) / 2);
	CHECK_MSG(strstr(ld, want), "%s", ld);
	free(cpus);
	free(samples);
}

/* A finished segment of host h, boot b00t, of sequence number seq, without losses. */
static char *write_plain_segment(const char *name, unsigned int seq)
{
	char meta[256];
	struct segment_cpu_index cpus[1] = { { .cpu = 0, .events = 4 } };
	struct segment_index idx = { .nr_cpus = 1, .cpus = cpus };
	struct segment_writer *w = NULL;
	char *path = NULL;

	(void)snprintf(meta, sizeof(meta), "hostname=h\nboot_id=b00t\nrecording_id=rec1\n"
		       "kernel_release=6.12.58\nsegment_seq=%u\n", seq);
	CHECK(segment_writer_open(tmpdir, name, &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

/*
 * Allocations of two segments: one freed in its own segment (no frees
 * row), one freed in the next (a frees row there), a free of an
 * allocation not read (a frees row), a pointer allocated twice without a
 * free between ('lost'), and one still live at the end ('live', NULL).
 */
static void test_allocations(void)
{
	_cleanup_free_ char *pa = write_plain_segment("00000050-20261201T000000", 50);
	_cleanup_free_ char *pb = write_plain_segment("00000051-20261201T000001", 51);
	_cleanup_free_ char *al = NULL, *fr = NULL;
	struct sample_origin oa = { .path = pa, .host = "h", .boot_id = "b00t", .recording_id = "rec1",
				    .serial = 1 };
	struct sample_origin ob = { .path = pb, .host = "h", .boot_id = "b00t", .recording_id = "rec1",
				    .serial = 2 };
	struct ch_files files = { tmpfile(), tmpfile(), tmpfile(), tmpfile(), tmpfile(),
				  tmpfile() };
	static const struct {
		const char *event, *ptr;
		bool b;			/* of the second segment */
	} evs[] = {
		{ "kmalloc", "4096", false },	{ "kfree", "4096", false },
		{ "kmalloc", "8192", false },	{ "kfree", "0", false },
		{ "kfree", "8192", true },	{ "kfree", "12288", true },
		{ "kmalloc", "16384", true },	{ "kmalloc", "16384", true },
	};
	struct ch_export *c = NULL;
	char want[512];

	CHECK(files.events && files.stacks && files.losses && files.loads && files.allocations &&
	      files.frees);
	CHECK(ch_export_new(&files, 79, 99, &c) == 0);
	CHECK(ch_export_add_segment(c, pa) == 0);
	CHECK(ch_export_add_segment(c, pb) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(evs); i++) {
		struct sample_field f[] = { { "ptr", evs[i].ptr }, { "bytes_alloc", "64" } };
		struct sample s = { .event = evs[i].event, .system = "kmem", .ts = 1000 * (i + 1),
				    .wall_ns = 5000000 + 1000 * (i + 1), .comm = "x",
				    .origin = evs[i].b ? &ob : &oa, .fields = f,
				    .nr_fields = startswith(evs[i].event, "kmalloc") ? 2 : 1 };

		if (startswith(evs[i].event, "kmalloc")) {
			s.frames = stack_open;
			s.nr_frames = ARRAY_SIZE(stack_open);
		}
		CHECK(ch_export_add(c, &s) == 0);
	}
	CHECK(ch_export_finish(c) == 0);
	al = slurp_file(files.allocations);
	fr = slurp_file(files.frees);
	CHECK_MSG(count_lines(al) == 4, "%s", al);
	(void)snprintf(want, sizeof(want),
		       "h\tb00t\trec1\t50\t79\tslab\tkmalloc-64\tkmalloc\t4096\t64\t5001000\t1000\t"
		       "free\t5002000\t2000\t%" PRIu64 "\n", ch_stack_key(stack_open, 3));
	CHECK_MSG(strstr(al, want), "%s", al);
	CHECK_MSG(strstr(al, "\t50\t79\tslab\tkmalloc-64\tkmalloc\t8192\t64\t5003000\t3000\t"
			     "free\t5005000\t5000\t"), "%s", al);
	CHECK_MSG(strstr(al, "\t51\t79\tslab\tkmalloc-64\tkmalloc\t16384\t64\t5007000\t7000\t"
			     "lost\t5008000\t8000\t"), "%s", al);
	CHECK_MSG(strstr(al, "\t51\t79\tslab\tkmalloc-64\tkmalloc\t16384\t64\t5008000\t8000\t"
			     "live\t\\N\t\\N\t"), "%s", al);
	/* the free of the first segment's allocation, and the free of one not read; not kfree(NULL) */
	CHECK_MSG(streq(fr, "h\tb00t\trec1\t51\t79\tslab\t8192\t5005000\t5000\n"
			    "h\tb00t\trec1\t51\t79\tslab\t12288\t5006000\t6000\n"), "%s", fr);
	ch_export_free(c);
	close_files(&files);
}

int main(void)
{
	tmpdir = test_tmpdir();
	test_stack_key();
	test_rows();
	test_recovered_write_loss();
	test_many_cpus();
	test_allocations();
	test_rmtree(tmpdir);
	free(tmpdir);
	return tests_done("test-clickhouse");
}
