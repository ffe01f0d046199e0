/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * How `stackmapctl report` and `info` print timestamps: a space after the
 * CPU field whatever the width, nanosecond clocks as seconds.microseconds,
 * counter clocks (x86-tsc) as raw counts in report and in info's spans.
 * And info on an unfinished segment whose INDEX record is malformed says
 * damaged and exits 1. --boot -1 finds a crash capture's boot saved after
 * the next boot's first segment. Segments are written with the library's writer;
 * the stackmapctl built next to the test prints them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>

#include "buf.h"
#include "crc32c.h"
#include "helpers.h"
#include "page-walk.h"
#include "segment.h"
#include "util.h"

static char *dir;
static int run_status;

static const char tick_format[] =
	"name: tick\nID: 30\nformat:\n"
	FTRACE_COMMON_FIELDS_FORMAT "\n"
	"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"n=%d\", REC->n\n";

/* A segment with two ticks on CPU 1 at ts and ts + delta, more META lines in extra. */
static char *make_meta(const char *name, const char *clock, uint64_t ts, uint32_t delta,
		       const char *extra)
{
	struct segment_writer *w;
	struct segment_index idx = {};
	uint8_t pg[64] = {};
	char *path = NULL, meta[1024];

	snprintf(meta, sizeof(meta), "format_version=1\nproducer=test\npage_size=4096\n"
		 "long_size=8\nbyte_order=little\nclock=%s\n%s", clock, extra);
	CHECK(segment_writer_open(dir, name, &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	CHECK(segment_writer_append_file(w, "events/test/tick/format", tick_format,
					 strlen(tick_format), 1) == 0);
	put_le64(pg, ts);
	for (int i = 0; i < 2; i++) {
		put_le32(pg + 16 + 16 * i, (i ? delta : 0) << 5 | 3);
		pg[20 + 16 * i] = 30;
		put_le32(pg + 24 + 16 * i, 42);
		put_le32(pg + 28 + 16 * i, (uint32_t)i);
	}
	put_le64(pg + 8, 32);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 1, pg, 48, 0, NULL) == 0);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

static char *make(const char *name, const char *clock, uint64_t ts, uint32_t delta)
{
	return make_meta(name, clock, ts, delta, "");
}

/*
 * An unfinished segment ending in a CRC-valid INDEX record that does not
 * decode: path's footer and INDEX (the last record, seq 3) replaced.
 */
static void bad_index(const char *path)
{
	uint8_t foot[24], h[32 + 3] = { 0 };
	uint64_t ioff;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;

	CHECK(size > 24 && pread(fd, foot, sizeof(foot), size - 24) == sizeof(foot));
	ioff = get_le64(foot);
	put_le32(h, 0x43524D53u);		/* record magic */
	h[4] = SEGMENT_REC_INDEX;
	put_le32(h + 8, SEGMENT_NO_CPU);
	put_le32(h + 12, 3);
	put_le32(h + 16, 3);
	put_le32(h + 20, 3);			/* seq */
	memcpy(h + 32, "bad", 3);
	put_le32(h + 24, crc32c(0, h + 32, 3));
	put_le32(h + 28, crc32c(0, h, 28));
	CHECK(ftruncate(fd, (off_t)ioff) == 0);
	CHECK(pwrite(fd, h, sizeof(h), (off_t)ioff) == sizeof(h));
	close(fd);
}

/* The output of `stackmapctl ARGS`. */
static char *run(const char *args)
{
	char cmd[1024], chunk[4096];
	struct buf out = {};
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "./stackmapctl %s 2>&1", args);
	p = popen(cmd, "r");
	CHECK(p);
	if (!p)
		return strdup("");
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		CHECK(buf_append(&out, chunk, n) == 0);
	run_status = pclose(p);
	CHECK(buf_append(&out, "", 1) == 0);
	return (char *)out.data;
}

static void expect(const char *args, const char *want)
{
	_cleanup_free_ char *out = run(args);

	CHECK_MSG(strstr(out, want), "'stackmapctl %s' lacks '%s':\n%s", args, want, out);
}

int main(void)
{
	_cleanup_free_ char *tsc = NULL, *ns = NULL, *a = NULL, *b = NULL, *c = NULL, *d = NULL;

	if (access("./stackmapctl", X_OK) != 0) {
		fprintf(stderr, "test-report-format: ./stackmapctl not built\n");
		return 77;
	}
	dir = test_tmpdir();
	tsc = make("00000001-tsc", "x86-tsc", 102865877788ULL, 1000);
	ns = make("00000002-ns", "local", 102865877788123456ULL, 1000000);

	CHECK(strprintf(&a, "report %s", tsc) == 0 && strprintf(&b, "report %s", ns) == 0);
	CHECK(strprintf(&c, "info %s", tsc) == 0 && strprintf(&d, "info %s", ns) == 0);
	/* 12 digits of counts: still a space after the CPU, and no seconds */
	expect(a, "[001] 102865877788: tick:");
	expect(a, "[001] 102865878788: tick:");
	/* a nanosecond clock with 9 digits of seconds */
	expect(b, "[001] 102865877.788123: tick:");
	expect(c, "time span:    102865877788 .. 102865878788 (1000 counts)");
	expect(d, "time span:    102865877.788123 .. 102865877.789123 (0.001000 s)");

	/* An unfinished segment with a malformed INDEX: damaged, exit status 1. */
	free(c);
	c = NULL;
	bad_index(tsc);
	CHECK(strprintf(&c, "info %s", tsc) == 0);
	expect(c, "malformed INDEX record");
	CHECK_MSG(WIFEXITED(run_status) && WEXITSTATUS(run_status) == 1, "info exit status %d",
		  run_status);
	expect(c, "state:        damaged");

	test_rmtree(dir);
	free(dir);

	/*
	 * --boot -1 is the boot before the last also when that boot's crash
	 * capture was saved after the last boot's first segment (it waited
	 * for room in the archive): the capture's boot came first.
	 */
	dir = test_tmpdir();
	free(make_meta("00000001-live", "local", 2000000000ULL, 1000,
		       "boot_id=bbbb2222\nopened_usec=1700000100000000\n"));
	free(make_meta("00000002-capture", "local", 9000000000ULL, 1000,
		       "boot_id=aaaa1111\nopened_usec=1700000101000000\ncapture=crash\n"
		       "capture_current_boot_id=bbbb2222\ncapture_last_usec=1700000050000000\n"));
	free(a);
	a = NULL;
	CHECK(strprintf(&a, "report --boot -1 %s", dir) == 0);
	expect(a, " 9.000000: tick:");
	{
		_cleanup_free_ char *out = run(a);

		CHECK_MSG(!strstr(out, " 2.000000: tick:"), "--boot -1 holds the last boot:\n%s",
			  out);
	}
	test_rmtree(dir);
	free(dir);
	return tests_done("test-report-format");
}
