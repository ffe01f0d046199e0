/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Segments built for the decoder's tests and the stack rule's: a head
 * with the test data's header_page and event formats, synthetic pages of
 * small events (tick, tock, stack_id, kernel_stack), strict and lossless
 * generation records, and a table of stack id 5 in each generation.
 * Include after helpers.h.
 */
#ifndef STACKMAPD_TEST_SYNTH_SEGMENT_H
#define STACKMAPD_TEST_SYNTH_SEGMENT_H

#include "buf.h"
#include "page-walk.h"
#include "segment.h"
#include "stacktab.h"
#include "transcode.h"
#include "util.h"

#define SYNTH_PAGE 4096

static const char *const synth_formats[][2] = {
	{ "events/ftrace/kernel_stack/format", "ftrace/kernel_stack.format" },
	{ "events/ftrace/print/format", "ftrace/print.format" },
	{ "events/kmem/kmem_cache_alloc/format", "kmem/kmem_cache_alloc.format" },
	{ "events/sched/sched_switch/format", "sched/sched_switch.format" },
};

static const char stack_id_format[] =
	"name: stack_id\nID: 20\nformat:\n"
	FTRACE_COMMON_FIELDS_FORMAT "\n"
	"\tfield:int stack_id;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"<stack_id %d>\", REC->stack_id\n";

static const char tick_format[] =
	"name: tick\nID: 30\nformat:\n"
	FTRACE_COMMON_FIELDS_FORMAT "\n"
	"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"n=%d\", REC->n\n";

static const char tock_format[] =
	"name: tock\nID: 31\nformat:\n"
	FTRACE_COMMON_FIELDS_FORMAT "\n"
	"\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
	"print fmt: \"n=%d\", REC->n\n";

/*
 * A segment <dir>/<name> with META of the given format version (plus
 * extra_meta lines), header_page and the test data's event formats.
 */
static inline struct segment_writer *seg_open_version(const char *dir, const char *name,
						      unsigned version, const char *extra_meta)
{
	struct segment_writer *w;
	struct buf m = {};
	size_t len;
	char *f;

	CHECK(segment_writer_open(dir, name, &w) == 0);
	CHECK(buf_printf(&m, "format_version=%u\nproducer=test\npage_size=4096\nlong_size=8\n"
			     "byte_order=little\nclock=local\nnr_cpus=2\nkernel_stack_event_id=4\n"
			     "%s", version, extra_meta ? extra_meta : "") == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, SEGMENT_NO_CPU, m.data, m.len, 0, NULL) ==
	      0);
	buf_done(&m);
	f = test_page_data("header_page", &len);
	CHECK(segment_writer_append_file(w, "header_page", f, len, 1) == 0);
	free(f);
	for (size_t i = 0; i < ARRAY_SIZE(synth_formats); i++) {
		f = test_page_data(synth_formats[i][1], &len);
		CHECK(segment_writer_append_file(w, synth_formats[i][0], f, len, 1) == 0);
		free(f);
	}
	return w;
}

/* The same, format version 1. */
static inline struct segment_writer *seg_open(const char *dir, const char *name,
					      const char *extra_meta)
{
	return seg_open_version(dir, name, 1, extra_meta);
}

/* The formats of the synthetic events: stack_id, tick and tock. */
static inline void add_synth_formats(struct segment_writer *w)
{
	CHECK(segment_writer_append_file(w, "events/ftrace/stack_id/format", stack_id_format,
					 strlen(stack_id_format), 0) == 0);
	CHECK(segment_writer_append_file(w, "events/test/tick/format", tick_format,
					 strlen(tick_format), 0) == 0);
	CHECK(segment_writer_append_file(w, "events/test/tock/format", tock_format,
					 strlen(tock_format), 0) == 0);
}

/* Finish w; returns its path (caller frees). */
static inline char *seg_finish(struct segment_writer *w)
{
	struct segment_index idx = {};
	char *path = NULL;

	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

/* A GENERATION record: a strict boundary of cpu, or a lossless window (SEGMENT_NO_CPU). */
static inline void add_gen(struct segment_writer *w, uint32_t cpu, uint32_t gen, uint32_t prev,
			   uint64_t begin, uint64_t end)
{
	struct segment_generation g = { .generation = gen, .prev_generation = prev,
					.kind = cpu == SEGMENT_NO_CPU ? SEGMENT_GEN_RESET_LOSSLESS :
									SEGMENT_GEN_RESET_STRICT,
					.window_begin = begin, .window_end = end };
	uint8_t p[SEGMENT_GENERATION_SIZE];

	segment_generation_encode(&g, p);
	CHECK(segment_writer_append(w, SEGMENT_REC_GENERATION, cpu, p, sizeof(p), 0, NULL) == 0);
}

/* The table of stack id 5 in generations 1 to nr, another first frame in each. */
static inline void add_id5_stacks(struct segment_writer *w, uint32_t nr)
{
	struct buf stacks = {};

	for (uint32_t gen = 1; gen <= nr; gen++) {
		uint64_t ips[2] = { 0xa1 + 0x10 * (gen - 1), 0xffffffff81000000 };
		struct stack_entry e = { .generation = gen, .id = 5, .refs = 1, .nr = 2, .ips = ips };

		CHECK(stacktab_encode(&stacks, &e) == 0);
	}
	CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, stacks.data, stacks.len,
				    1, NULL) == 0);
	buf_done(&stacks);
}

struct synth_entry {
	uint8_t type;		/* 30 tick, 31 tock, 20 stack_id 5, 4 kernel_stack (no frames) */
	uint64_t ts;
};

/* One compacted page of the given entries, 16 bytes of data each. */
static inline void add_entries(struct segment_writer *w, unsigned cpu,
			       const struct synth_entry *e, size_t n)
{
	uint8_t pg[SYNTH_PAGE] = {};
	size_t off = 16;
	uint64_t prev = e[0].ts;

	CHECK(16 + n * 20 <= sizeof(pg));
	put_le64(pg, e[0].ts);
	for (size_t i = 0; i < n && off + 20 <= sizeof(pg); i++) {
		uint32_t v = (uint32_t)i;

		if (e[i].type == 20)
			v = 5;
		else if (e[i].type == 4)
			v = 0;		/* kernel_stack: size 0, no callers */
		put_le32(pg + off, (uint32_t)(e[i].ts - prev) << 5 | 4);
		pg[off + 4] = e[i].type;
		put_le32(pg + off + 8, 1000 + cpu);
		put_le32(pg + off + 12, v);
		off += 20;
		prev = e[i].ts;
	}
	put_le64(pg + 8, off - 16);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, cpu, pg, off, 0, NULL) == 0);
}

/* The page layout the daemon would have for these segments (for its count of unresolved stacks). */
static inline void synth_layout(struct page_layout *ret)
{
	_cleanup_free_ char *hp = test_page_data("header_page", NULL);

	CHECK(page_layout_parse(hp, ret) == 0);
	ret->page_size = SYNTH_PAGE;
	ret->kernel_stack_id = 4;
	ret->stack_id_id = 20;
	ret->print_id = 5;
	ret->stack_ref_id = -1;
}

#define ENTRIES(...) (const struct synth_entry[]){ __VA_ARGS__ }, \
	ARRAY_SIZE(((const struct synth_entry[]){ __VA_ARGS__ }))

#endif
