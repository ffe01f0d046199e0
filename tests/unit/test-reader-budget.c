/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The readers' memory budget and time on files built to exhaust or stall
 * them (doc/reading-archives.md, "Memory budget"): repeated compressed
 * FILE records, 300,000 CLOCK records, 250,000 GENERATION windows, windows
 * that all overlap, a column-encoded frame that claims 200 MiB, and a
 * valid segment of more frames than a 4 MiB INDEX holds. Each is decoded
 * in a child under the budget stackmapctl sets, with an alarm; the parent
 * checks how it ended, its peak RSS and its time.
 */
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <zstd.h>

#include "budget.h"
#include "buf.h"
#include "decode-internal.h"
#include "decode.h"
#include "helpers.h"
#include "segment.h"
#include "stacktab.h"
#include "util.h"
#include "wallclock.h"

static char *dir;

enum outcome {
	DECODED = 0,		/* to the end, within the budget */
	REFUSED = 4,		/* stopped by the budget, with its message */
};

struct run {
	int status;		/* enum outcome, other exit codes, or -1 (a signal: the alarm) */
	long peak_mib;
	double secs;
	char error[512];	/* the first error the decoder reported */
};

static double now_secs(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Decode path in a child with a budget of budget_mib (0: none) and an
 * alarm of 60 s; the first error message comes back through a pipe.
 */
static struct run child_decode(const char *path, unsigned budget_mib)
{
	static const char *const outcomes[] = { [DECODED] = "decoded", [REFUSED] = "refused" };
	struct run run = { .status = -1, .peak_mib = -1 };
	struct rusage ru;
	double t0 = now_secs();
	int fds[2], status;
	pid_t pid;

	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct decoder *d;
		struct decoded_event ev;
		bool told = false;
		int r;

		close(fds[0]);
		alarm(60);
		budget_set_limit((uint64_t)budget_mib << 20);
		budget_clear_error();
		if (decoder_open((const char *const[]){ path }, 1, &d) < 0)
			_exit(2);
		while ((r = decoder_next(d, &ev)) != 0) {
			const char *e = r == -ENOMEM && budget_error() ? budget_error() :
					r < 0 ? decoder_error(d) : NULL;

			if (e && !told) {
				(void)!write(fds[1], e, strlen(e));
				told = true;
			}
			if (r == -ENOMEM)
				_exit(budget_error() ? REFUSED : 3);
		}
		decoder_free(d);
		_exit(budget_used() == 0 ? DECODED : 5);
	}
	close(fds[1]);
	CHECK(pid > 0);
	{
		ssize_t n = read(fds[0], run.error, sizeof(run.error) - 1);

		run.error[n > 0 ? n : 0] = '\0';
	}
	close(fds[0]);
	if (pid > 0 && wait4(pid, &status, 0, &ru) == pid) {
		run.secs = now_secs() - t0;
		run.peak_mib = ru.ru_maxrss / 1024;
		run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	printf("%s: %s, %.2f s, peak RSS %ld MiB\n", strrchr(path, '/') + 1,
	       run.status == DECODED || run.status == REFUSED ? outcomes[run.status] : "failed",
	       run.secs, run.peak_mib);
	return run;
}

/*
 * The reading commands on the FILE bomb (with $STACKMAPCTL, as make check
 * sets it): exit status 1 and one error naming what was too big, under
 * the default budget, --memory-limit and $STACKMAPCTL_MEMORY_LIMIT.
 */
static void command_refuses(const char *path)
{
	static const char *const cmds[] = {
		"report", "folded", "top", "report --memory-limit 128M",
		"flamegraph -o /dev/null", "export --format pprof -o /dev/null",
	};
	const char *ctl = getenv("STACKMAPCTL");
	char cmd[8192], out[4096];

	if (!ctl)
		return;
	for (size_t i = 0; i <= ARRAY_SIZE(cmds); i++) {
		FILE *p;
		size_t n;
		int status;

		if (i < ARRAY_SIZE(cmds)) {
			snprintf(cmd, sizeof(cmd), "%s %s %s", ctl, cmds[i], path);
		} else {
			snprintf(cmd, sizeof(cmd), "STACKMAPCTL_MEMORY_LIMIT=160M %s report %s", ctl, path);
		}
		strcat(cmd, " 2>&1 >/dev/null");
		p = popen(cmd, "r");
		CHECK(p);
		if (!p)
			continue;
		n = fread(out, 1, sizeof(out) - 1, p);
		out[n] = '\0';
		status = pclose(p);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
			  strstr(out, "would be exceeded by FILE records"),
			  "'%s': status %d, '%s'", cmd, status, out);
		if (i == 3 || i == ARRAY_SIZE(cmds))
			CHECK_MSG(strstr(out, i == 3 ? "limit of 128 MiB" : "limit of 160 MiB"),
				  "'%s': '%s'", cmd, out);
	}
	snprintf(cmd, sizeof(cmd), "%s report --memory-limit 1M %s >/dev/null 2>&1", ctl, path);
	CHECK_MSG(WEXITSTATUS(system(cmd)) == 2, "a memory limit below the minimum is a usage error");
}

static struct segment_writer *seg_open(const char *name)
{
	static const char meta[] = "format_version=2\nproducer=test\npage_size=4096\nlong_size=8\n"
				   "byte_order=little\nclock=local\n";
	struct segment_writer *w;

	CHECK(segment_writer_open(dir, name, &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	return w;
}

static char *seg_finish(struct segment_writer *w, const struct segment_index *idx)
{
	char *path = NULL;

	CHECK(segment_writer_finish(w, idx ? idx : &(struct segment_index){}, false, &path) == 0);
	return path;
}

/* Append the same compressed payload (raw bytes compressed once) n times. */
static void append_repeated(struct segment_writer *w, enum segment_rec_type type, uint32_t cpu,
			    const void *raw, size_t len, uint16_t flags, size_t n)
{
	size_t bound = ZSTD_compressBound(len), zlen;
	void *z = malloc(bound);

	CHECK(z);
	if (!z)
		return;
	zlen = ZSTD_compress(z, bound, raw, len, 1);
	CHECK(!ZSTD_isError(zlen));
	for (size_t i = 0; i < n; i++)
		CHECK(segment_writer_append_compressed(w, type, cpu, z, zlen, len, flags) == 0);
	free(z);
}

/*
 * 40 FILE records of 16 MiB each, a few hundred bytes compressed: 640 MiB
 * for a reader that kept them all. Under a 128 MiB budget the decoder
 * stops with the budget's message, naming FILE records.
 */
static void test_file_bomb(void)
{
	_cleanup_free_ char *path = NULL;
	const size_t len = 16u << 20;
	struct segment_writer *w;
	struct run run;
	char *raw = calloc(1, len);

	CHECK(raw);
	if (!raw)
		return;
	memcpy(raw, "config", 7);
	w = seg_open("00000001-files");
	append_repeated(w, SEGMENT_REC_FILE, SEGMENT_NO_CPU, raw, len, 0, 40);
	free(raw);
	path = seg_finish(w, NULL);

	run = child_decode(path, 128);
	command_refuses(path);
	CHECK_MSG(run.status == REFUSED && strstr(run.error, "FILE records"),
		  "FILE bomb: status %d, '%s'", run.status, run.error);
	CHECK_MSG(run.peak_mib >= 0 && run.peak_mib < 256 && run.secs < 30,
		  "FILE bomb: peak RSS %ld MiB, %.1f s", run.peak_mib, run.secs);
}

/* 300,000 CLOCK records of one pair (17 MB): read in linear time. */
static void test_clock_flood(void)
{
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w;
	struct run run;

	w = seg_open("00000002-clocks");
	for (uint32_t i = 0; i < 300000; i++) {
		/* not in order: sorting after every record was the quadratic part */
		struct wallclock_pair p = { .trace = (uint64_t)(i * 7919u % 300000u) * 1000,
					    .realtime = 1764600000000000000ull + i, .boottime = i };
		uint8_t b[WALLCLOCK_PAIR_SIZE];

		wallclock_pair_encode(&p, b);
		CHECK(segment_writer_append(w, SEGMENT_REC_CLOCK, SEGMENT_NO_CPU, b, sizeof(b), 0,
					    NULL) == 0);
	}
	path = seg_finish(w, NULL);

	run = child_decode(path, 256);
	CHECK_MSG(run.status == DECODED && run.secs < 20,
		  "CLOCK flood: status %d after %.1f s, '%s'", run.status, run.secs, run.error);
}

/* 250,000 GENERATION windows, every one overlapping the others, a third written twice. */
static void test_generation_flood(void)
{
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w;
	struct run run;

	w = seg_open("00000003-generations");
	for (uint32_t i = 0; i < 250000; i++) {
		uint32_t g = i % 3 == 2 ? i - 1 : i + 2;
		struct segment_generation gen = {
			.generation = g, .prev_generation = g - 1, .kind = SEGMENT_GEN_RESET_LOSSLESS,
			.window_begin = 1000, .window_end = 2000 + (uint64_t)g * 10,
		};
		uint8_t b[SEGMENT_GENERATION_SIZE];

		segment_generation_encode(&gen, b);
		CHECK(segment_writer_append(w, SEGMENT_REC_GENERATION, SEGMENT_NO_CPU, b, sizeof(b),
					    0, NULL) == 0);
	}
	path = seg_finish(w, NULL);

	run = child_decode(path, 256);
	CHECK_MSG(run.status == DECODED && run.secs < 10,
		  "GENERATION flood: status %d after %.1f s, '%s'", run.status, run.secs,
		  run.error);
}

/*
 * 300,000 windows of one reset (written with different ends, so not
 * repeats) and 300,000 stack ids resolved inside them: whether another
 * reset's window also holds an event is found in constant time, not by a
 * scan of every later window. Then one window of another reset: events
 * in both are ambiguous, events before it are not.
 */
static void test_overlapping_windows(void)
{
	struct stacktab *t = stacktab_new();
	const char *why = NULL;
	double t0;

	CHECK(t);
	if (!t)
		return;
	for (uint32_t i = 0; i < 300000; i++) {
		struct segment_generation g = {
			.generation = 2, .prev_generation = 1, .kind = SEGMENT_GEN_RESET_LOSSLESS,
			.window_begin = 1000, .window_end = 1000000 + (uint64_t)i,
		};

		CHECK(stacktab_add_generation(t, SEGMENT_NO_CPU, &g) == 0);
	}
	t0 = now_secs();
	for (uint32_t i = 0; i < 300000; i++)
		CHECK(stacktab_resolve(t, 0, 500000 + i, STACKTAB_KERNEL_ID, 5, NULL, &why) == 0);
	CHECK_MSG(now_secs() - t0 < 10, "300,000 events in 300,000 windows: %.1f s",
		  now_secs() - t0);
	CHECK_MSG(why && !strstr(why, "generations 1 and 3"), "one reset: '%s'",
		  why ? why : "");

	CHECK(stacktab_add_generation(t, SEGMENT_NO_CPU, &(struct segment_generation){
		.generation = 3, .prev_generation = 2, .kind = SEGMENT_GEN_RESET_LOSSLESS,
		.window_begin = 400000, .window_end = 2000000 }) == 0);
	CHECK(stacktab_resolve(t, 0, 500000, STACKTAB_KERNEL_ID, 5, NULL, &why) == 0);
	CHECK_MSG(why && strstr(why, "generations 1 and 3"), "two resets: '%s'",
		  why ? why : "");
	CHECK(stacktab_resolve(t, 0, 300000, STACKTAB_KERNEL_ID, 5, NULL, &why) == 0);
	CHECK_MSG(why && !strstr(why, "generations 1 and 3"), "before the second: '%s'",
		  why ? why : "");
	stacktab_free(t);
}

/* A column-encoded frame of a few bytes that claims 200 MiB decoded. */
static void test_column_bomb(void)
{
	_cleanup_free_ char *path = NULL;
	/* version 3, long_size 8, F = 200 MiB (LEB128), 1 page, no tail, no types, ... */
	const uint8_t enc[] = { 3, 8, 0x80, 0x80, 0x80, 0x64, 1, 0, 0, 6, 0, 0, 0, 0, 0, 0 };
	struct segment_writer *w;
	struct run run;

	w = seg_open("00000004-columns");
	for (unsigned cpu = 0; cpu < 8; cpu++)
		append_repeated(w, SEGMENT_REC_PAGES, cpu, enc, sizeof(enc), SEGMENT_REC_F_COLUMNS, 1);
	path = seg_finish(w, NULL);

	run = child_decode(path, 256);
	CHECK_MSG(run.status == DECODED && strstr(run.error, "exceeds the reader's limit"),
		  "column bomb: status %d, '%s'", run.status, run.error);
	CHECK_MSG(run.peak_mib >= 0 && run.peak_mib < 256, "column bomb: peak RSS %ld MiB",
		  run.peak_mib);
}

/*
 * 140,000 frames with a seek table: an INDEX of 4.5 MB, which readers
 * refused as "implausibly large" below 4 MiB while the writer wrote it.
 * Writers and readers now share one limit, and the writer refuses more.
 */
static void test_big_index(void)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	_cleanup_free_ char *path = NULL;
	const uint32_t n = 140000;
	struct segment_seek *frames = calloc(SEGMENT_MAX_INDEX_FRAMES + 1, sizeof(*frames));
	struct segment_cpu_index cpu = { .cpu = 0, .pages = n };
	struct segment_index idx = { .flags = SEGMENT_INDEX_F_SEEK, .nr_cpus = 1, .cpus = &cpu,
				     .frames = frames, .nr_frames = n };
	struct segment_writer *w;
	uint8_t page[16] = {};
	uint8_t *enc;
	size_t len;

	CHECK(frames);
	if (!frames)
		return;
	w = seg_open("00000005-frames");
	for (uint32_t i = 0; i < n; i++) {
		put_le64(page, 1000 + i);
		frames[i] = (struct segment_seek){ .cpu = 0, .offset = segment_writer_size(w) };
		CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, page, sizeof(page), 0, NULL) ==
		      0);
	}
	path = seg_finish(w, &idx);
	CHECK(segment_reader_open(path, &r) == 0);
	CHECK_MSG(r && segment_reader_complete(r), "a segment of %u frames reads as incomplete", n);
	CHECK(r && segment_reader_index(r) && segment_reader_index(r)->nr_frames == n);

	idx.nr_frames = SEGMENT_MAX_INDEX_FRAMES;
	CHECK(segment_index_encode(&idx, &enc, &len) == 0 && len <= SEGMENT_MAX_INDEX);
	free(enc);
	idx.nr_frames = SEGMENT_MAX_INDEX_FRAMES + 1;
	CHECK(segment_index_encode(&idx, &enc, &len) == -EFBIG);
	free(frames);
}

/* The budget itself: limits, refusals and their message, sizes. */
static void test_budget(void)
{
	size_t a = 0, b = 0;
	uint64_t v;
	const char *bad;

	budget_set_limit(1u << 20);
	budget_clear_error();
	CHECK(budget_charge(&a, 600u << 10, "first") == 0 && a == 600u << 10);
	CHECK(budget_charge(&b, 600u << 10, "second thing") == -ENOMEM && b == 0);
	CHECK(budget_error() && strstr(budget_error(), "second thing"));
	budget_release_all(&a);
	CHECK(a == 0 && budget_used() == 0);
	CHECK(budget_charge(&b, 600u << 10, "second thing") == 0);
	budget_release_all(&b);
	budget_set_limit(0);
	CHECK(budget_charge(&b, SIZE_MAX / 2, "anything") == 0);
	budget_release_all(&b);

	CHECK(budget_parse_size("256M", &v) == 0 && v == 256u << 20);
	CHECK(budget_parse_size("1GiB", &v) == 0 && v == 1u << 30);
	CHECK(budget_parse_size("4096", &v) == 0 && v == 4096);
	CHECK(budget_parse_size("12X", &v) == -EINVAL);
	CHECK(budget_parse_size("-1", &v) == -EINVAL);
	CHECK(budget_setup("1M", &bad) == -EINVAL && streq(bad, "1M"));
	CHECK(budget_setup("512M", &bad) == 0 && budget_limit() == 512u << 20);
	budget_set_limit(0);
	budget_clear_error();
}

int main(void)
{
	dir = test_tmpdir();

	test_budget();
	test_file_bomb();
	test_clock_flood();
	test_generation_flood();
	test_overlapping_windows();
	test_column_bomb();
	test_big_index();

	test_rmtree(dir);
	free(dir);
	return tests_done("test-reader-budget");
}
