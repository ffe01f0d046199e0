/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The decoder on segments built to hurt it: format texts that would reach
 * libtraceevent's parser bugs, events shorter than their format, a second
 * META, stacks of 65,535 frames and a stack table far beyond the reader's
 * limits, and zstd bombs on many CPUs. Each must be rejected or limited,
 * and a reader decoding them must stay far below 256 MiB (measured in a
 * child process with getrusage()).
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <event-parse.h>

#include "buf.h"
#include "crc32c.h"
#include "decode-internal.h"
#include "decode.h"
#include "helpers.h"
#include "page-walk.h"
#include "segment.h"
#include "stacktab.h"
#include "util.h"

static char *dir;

#define COMMON_FIELDS FTRACE_COMMON_FIELDS_FORMAT "\n"

static const char tick_format[] =
	"name: tick\nID: 30\nformat:\n" COMMON_FIELDS
	"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"n=%d\", REC->n\n";

static void test_format_checks(void)
{
	static const char *const bad[] = {
		/* division by a field: libtraceevent divides by the record's value */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", 100 / REC->n\n",
		/* a field far outside any record */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:4000000;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", REC->n\n",
		/* an array whose length does not divide its size */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n[3];\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", REC->n\n",
		/* a field the format lacks: libtraceevent dereferences NULL */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", REC->m\n",
		/* no common fields */
		"name: t\nID: 30\nformat:\n"
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", REC->n\n",
		/* unterminated print fmt string */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d, REC->n\n",
		/* an expression cut short, and brackets that do not match */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%s\", (REC->n & ((1 | 2) ? __print_flags(REC->n, \"|\", { 1, \"A\" }\n",
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", (REC->n]\n",
		/* an index followed by an operator libtraceevent does not know: it crashes */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n[2];\toffset:8;\tsize:8;\tsigned:1;\n\n"
		"print fmt: \"%d %d\", REC->n[0] = REC->n[1]\n",
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n[2];\toffset:8;\tsize:8;\tsigned:1;\n\n"
		"print fmt: \"%d %d\", REC->n[0] . (int)REC->n[1]\n",
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n[2];\toffset:8;\tsize:8;\tsigned:1;\n\n"
		"print fmt: \"%d %d\", REC->n[0] += 1, REC->n[1]\n",
		/* a character that is not C outside the strings */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS
		"\tfield:int n[2];\toffset:8;\tsize:8;\tsigned:1;\n\n"
		"print fmt: \"%d %d\", REC->n[0], $REC->n[1]\n",
		/* a line of no known kind, a bad ID, no print fmt */
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS "garbage\nprint fmt: \"x\"\n",
		"name: t\nID: 0\nformat:\n" COMMON_FIELDS "print fmt: \"x\"\n",
		"name: t\nID: 30\nformat:\n" COMMON_FIELDS,
		"",
	};
	const char *why;

	/* As tracefs has them: a newline inside the string, a division by sizeof() */
	static const char *const good[] = {
		tick_format,
		"name: t\nID: 31\nformat:\n" COMMON_FIELDS
		"\tfield:__data_loc u64[] a;\toffset:8;\tsize:4;\tsigned:0;\n\n"
		"print fmt: \"a=%s\n\", __print_array(__get_dynamic_array(a), "
		"__get_dynamic_array_len(a) / sizeof(u64), sizeof(u64))\n",
		"name: t\nID: 32\nformat:\n" COMMON_FIELDS
		"\tfield:int n[2];\toffset:8;\tsize:8;\tsigned:1;\n\n"
		"print fmt: \"n=%d\nmore\", REC->n[0] / 4\n",
		/* brackets inside strings do not count */
		"name: t\nID: 33\nformat:\n" COMMON_FIELDS
		"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"(n=%s]\", (REC->n) ? __print_flags(REC->n, \"|\", { 1, \"{A\" }) : \"R\"\n",
		/* an index compared, and the empty [] of a declaration (kvmmmu has one) */
		"name: t\nID: 34\nformat:\n" COMMON_FIELDS
		"\tfield:int n[2];\toffset:8;\tsize:8;\tsigned:1;\n\n"
		"print fmt: \"%d %s\", REC->n[0] == 1, ({ static const char *s[] = { \"$\" }; 1; })\n",
	};

	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		CHECK_MSG(decode_check_format(good[i], strlen(good[i]), &why) == 0,
			  "good format %zu rejected: %s", i, why);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int r = decode_check_format(bad[i], strlen(bad[i]), &why);

		CHECK_MSG(r == -EBADMSG && why, "bad format %zu accepted", i);
	}
	/* NUL and control characters */
	CHECK(decode_check_format("name: t\0ID: 30\n", 15, &why) == -EBADMSG);

	CHECK(decode_check_printk_formats("0xffffffff81000000 : \"hello\\n\"\n", 31) == 0);
	CHECK(decode_check_printk_formats("0xffffffff81000000 : \"hello\n", 28) == -EBADMSG);
	CHECK(decode_check_printk_formats("ffffffff81000000 : \"x\"\n", 23) == -EBADMSG);
	CHECK(decode_check_printk_formats("0x1 :\n", 6) == -EBADMSG);
	{
		/* strings under two characters are left out of what libtraceevent parses */
		char t[] = "0xa : \"ok\"\n0xb : \"\"\n0xc : \"x\"\n0xd : \"end\"";
		const char *want = "0xa : \"ok\"\n0xd : \"end\"";
		size_t n;

		CHECK(decode_check_printk_formats(t, strlen(t)) == 0);
		n = decode_drop_short_printk(t, strlen(t));
		CHECK_MSG(n == strlen(want) && streq(t, want), "%zu: '%s'", n, t);
	}
}

static struct segment_writer *seg_open(const char *name, bool format)
{
	static const char meta[] = "format_version=1\nproducer=test\npage_size=4096\nlong_size=8\n"
				   "byte_order=little\nclock=local\n";
	struct segment_writer *w;

	CHECK(segment_writer_open(dir, name, &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL) == 0);
	if (format)
		CHECK(segment_writer_append_file(w, "events/test/tick/format", tick_format,
						 strlen(tick_format), 1) == 0);
	return w;
}

static char *seg_finish(struct segment_writer *w)
{
	struct segment_index idx = {};
	char *path = NULL;

	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

/* Decode path to its end: events, problems reported, events skipped as too short. */
static size_t decode_all(const char *path, size_t *ret_errors, uint64_t *ret_bad_events)
{
	struct decoder *d;
	struct decoded_event ev;
	size_t events = 0, errors = 0;
	int r;

	CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
	while ((r = decoder_next(d, &ev)) != 0) {
		CHECK(r != -ENOMEM);
		if (r > 0)
			events++;
		else
			errors++;
	}
	*ret_errors = errors;
	if (ret_bad_events)
		*ret_bad_events = decoder_bad_events(d);
	decoder_free(d);
	return events;
}

/* A tick whose record ends before its field n: skipped, never printed. */
static void test_short_event(void)
{
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w;
	uint8_t pg[64] = {};
	uint64_t bad_events;
	size_t errors;

	w = seg_open("00000001-short", true);
	put_le64(pg, 1000);
	put_le32(pg + 16, 1u << 5 | 2);		/* type_len 2: 8 bytes, common fields only */
	pg[20] = 30;
	put_le32(pg + 24, 42);
	put_le32(pg + 28, 1u << 5 | 3);		/* type_len 3: 12 bytes, a whole tick */
	pg[32] = 30;
	put_le32(pg + 36, 42);
	put_le32(pg + 40, 7);
	put_le64(pg + 8, 28);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, pg, 44, 0, NULL) == 0);
	path = seg_finish(w);

	CHECK(decode_all(path, &errors, &bad_events) == 1);
	CHECK_MSG(bad_events == 1 && errors == 1, "bad events %" PRIu64 ", errors %zu", bad_events,
		  errors);
}

/* The format forbids a second META: every reader stops there. */
static void test_second_meta(void)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w;
	struct segment_record rec;
	int k, n = 0;

	uint8_t h[SEGMENT_REC_HDR_SIZE];
	uint64_t off;
	int fd;

	/* The writer refuses a second META: write a FILE, then make it one. */
	w = seg_open("00000002-meta2", false);
	off = segment_writer_size(w);
	CHECK(segment_writer_append_file(w, "config", "clock=x86-tsc\n", 14, 0) == 0);
	path = seg_finish(w);
	fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0 && pread(fd, h, sizeof(h), (off_t)off) == sizeof(h));
	h[4] = SEGMENT_REC_META;
	h[5] = 0;
	put_le32(h + 28, crc32c(0, h, 28));
	CHECK(pwrite(fd, h, sizeof(h), (off_t)off) == sizeof(h));
	close(fd);
	CHECK(segment_reader_open(path, &r) == 0);
	while ((k = segment_reader_next(r, &rec)) > 0)
		n++;
	CHECK(k == -EBADMSG && n == 1);
	CHECK(strstr(segment_reader_error(r), "second META"));
}

/*
 * An address the segment's kallsyms subset cannot place prints as an
 * address, through the decoder and through libtraceevent alike.
 */
static void test_symbol_gap(void)
{
	static const char subset[] =
		"ffffffff81000110 T schedule\n"
		"ffffffff810001d0 ? .end\n"
		"ffffffff81200000 T __x64_sys_timer_gettime\n"
		"ffffffff81200100 ? .end\n";
	_cleanup_free_ char *path = NULL, *msg = NULL;
	struct decoder_segment *s = NULL;
	struct segment_writer *w;
	char text[128];
	const char *f;

	w = seg_open("00000005-syms", true);
	CHECK(segment_writer_append_file(w, "kallsyms", subset, strlen(subset), 1) == 0);
	path = seg_finish(w);
	CHECK(decoder_segment_load(path, &s, &msg) == 0);
	if (!s)
		return;
	CHECK(decoder_segment_symbolize(s, 0xffffffff81000120ULL, true, text, sizeof(text)) > 0 &&
	      streq(text, "schedule+0x10/0xc0"));
	/* tracing_mark_write, say: not in the subset, above __x64_sys_timer_gettime's end */
	CHECK(decoder_segment_symbolize(s, 0xffffffff81200180ULL, true, text, sizeof(text)) > 0 &&
	      streq(text, "0xffffffff81200180"));
	CHECK(decoder_segment_symbolize(s, 0xffffffff81200180ULL, false, text, sizeof(text)) > 0 &&
	      streq(text, "0xffffffff81200180"));
	CHECK(decoder_segment_symbolize(s, 0xffffffff81100000ULL, false, text, sizeof(text)) > 0 &&
	      streq(text, "0xffffffff81100000"));
	f = tep_find_function(decoder_segment_tep(s), 0xffffffff81200180ULL);
	CHECK_MSG(!f, "libtraceevent places it in %s", f);
	f = tep_find_function(decoder_segment_tep(s), 0xffffffff81200010ULL);
	CHECK(f && streq(f, "__x64_sys_timer_gettime"));
	decoder_segment_free(s);
}

/* Decode path in a child; its peak RSS in MiB (-1 if the child failed). */
static long child_peak_mib(const char *path)
{
	struct rusage ru;
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct decoder *d;
		struct decoded_event ev;
		int r;

		alarm(120);
		if (decoder_open((const char *const[]){ path }, 1, &d) < 0)
			_exit(2);
		while ((r = decoder_next(d, &ev)) != 0)
			if (r == -ENOMEM)
				_exit(3);
		decoder_free(d);
		_exit(0);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		return -1;
	return ru.ru_maxrss / 1024;
}

/*
 * Stacks of 65,535 frames, then a table of 256-frame stacks far beyond the
 * table's limit: 2 GiB of frames claimed in a few hundred KiB of file.
 */
static void test_stack_bomb(void)
{
	_cleanup_free_ char *path = NULL;
	const size_t entry = 16 + 8 * STACKTAB_MAX_DEPTH, per_rec = (16u << 20) / entry;
	struct segment_writer *w;
	struct buf b = {};
	uint32_t id = 1;
	long peak;

	w = seg_open("00000003-stacks", true);
	/* 65,535 frames: malformed for a reader */
	CHECK(buf_reserve(&b, 16 + 8 * 65535) == 0);
	memset(b.data, 0, 16 + 8 * 65535);
	put_le32(b.data + 4, id++);
	b.data[12] = 0xff;	/* nr: 65535 */
	b.data[13] = 0xff;
	b.len = 16 + 8 * 65535;
	CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, b.data, b.len, 1,
				    NULL) == 0);
	for (int r = 0; r < 128; r++) {
		buf_reset(&b);
		CHECK(buf_reserve(&b, per_rec * entry) == 0);
		memset(b.data, 0x11, per_rec * entry);
		for (size_t i = 0; i < per_rec; i++) {
			uint8_t *e = b.data + i * entry;

			put_le32(e, 0);
			put_le32(e + 4, id++);
			put_le32(e + 8, 1);
			put_le32(e + 12, STACKTAB_MAX_DEPTH);	/* nr, no flags */
		}
		b.len = per_rec * entry;
		CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, b.data, b.len, 3,
					    NULL) == 0);
	}
	buf_done(&b);
	path = seg_finish(w);

	peak = child_peak_mib(path);
	CHECK_MSG(peak >= 0 && peak < 256, "peak RSS %ld MiB decoding stack bombs", peak);
}

/* On each of 16 CPUs, PAGES records that decompress to 20 MiB, and one of 200 MiB. */
static void test_zstd_bomb(void)
{
	_cleanup_free_ char *path = NULL;
	const size_t len = DECODE_MAX_RECORD_RAW;
	struct segment_writer *w;
	uint8_t *zero;
	long peak;

	zero = calloc(1, 200u << 20);
	CHECK(zero);
	if (!zero)
		return;
	w = seg_open("00000004-zstd", true);
	for (int round = 0; round < 4; round++)
		for (unsigned cpu = 0; cpu < 16; cpu++)
			CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, cpu, zero, len, 3, NULL) ==
			      0);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 3, zero, 200u << 20, 3, NULL) == 0);
	free(zero);
	path = seg_finish(w);

	peak = child_peak_mib(path);
	CHECK_MSG(peak >= 0 && peak < 256, "peak RSS %ld MiB decoding zstd bombs", peak);
}

int main(void)
{
	dir = test_tmpdir();

	test_format_checks();
	test_short_event();
	test_second_meta();
	test_symbol_gap();
	test_stack_bomb();
	test_zstd_bomb();

	test_rmtree(dir);
	free(dir);
	return tests_done("test-decode-hostile");
}
