/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Seed segments for the segment fuzz targets, written by the real writer
 * (lib/segment): small, so that each input decodes in a millisecond, and
 * holding what recordings rarely give a short capture: column-encoded
 * frames, CLOCK pairs, GENERATION windows that overlap or repeat,
 * per-CPU strict boundaries, kernel stack ids resolved through them, an
 * ABSENT entry, a seek table, and a segment cut before its INDEX.
 *
 *   make-seeds SRCDIR OUTDIR     (SRCDIR: the source tree, for tests/data)
 *
 * tests/fuzz/build builds it; the seeds it writes are committed under
 * tests/fuzz/corpus/{report,verify,recover}/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "buf.h"
#include "frame-columns.h"
#include "segment.h"
#include "stacktab.h"
#include "wallclock.h"

#define PAGE 4096
#define STACK_ID_EVENT 20
#define TICK_EVENT 30

static const char *outdir;
static char *header_page;
static size_t header_page_len;

static const char common[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

static char stack_id_format[1024], tick_format[1024];

static void die(const char *what, int r)
{
	fprintf(stderr, "make-seeds: %s: %s\n", what, strerror(r < 0 ? -r : r));
	exit(1);
}

static void check(int r, const char *what)
{
	if (r < 0)
		die(what, r);
}

/* The records' offsets, for the seek table. */
struct seeds {
	struct segment_writer *w;
	struct segment_seek frames[64];
	uint32_t nr_frames;
	struct frame_columns *fc;	/* column-encode PAGES when set */
};

static void open_seg(struct seeds *s, const char *name, const char *mode)
{
	char meta[512];
	const char kallsyms[] = "ffffffff81000000 T start_kernel\nffffffff81000100 T do_tick\n"
				"ffffffff81000200 ? .end\n";
	const char cmdlines[] = "1000 smload\n1001 kworker/0:1\n";

	check(segment_writer_open(outdir, name, &s->w), name);
	snprintf(meta, sizeof(meta),
		 "format_version=2\nproducer=make-seeds\nboot_id=00000000-0000-4000-8000-000000000001\n"
		 "page_size=4096\nnr_cpus=2\nlong_size=8\nbyte_order=little\nclock=local\n"
		 "stack_mode=%s\nstack_id_event_id=%d\n", mode, STACK_ID_EVENT);
	check(segment_writer_append(s->w, SEGMENT_REC_META, SEGMENT_NO_CPU, meta, strlen(meta), 0,
				    NULL), "META");
	check(segment_writer_append_file(s->w, "header_page", header_page, header_page_len, 1),
	      "FILE");
	check(segment_writer_append_file(s->w, "events/ftrace/stack_id/format", stack_id_format,
					 strlen(stack_id_format), 1), "FILE");
	check(segment_writer_append_file(s->w, "events/test/tick/format", tick_format,
					 strlen(tick_format), 1), "FILE");
	check(segment_writer_append_file(s->w, "kallsyms", kallsyms, strlen(kallsyms), 1), "FILE");
	check(segment_writer_append_file(s->w, "saved_cmdlines", cmdlines, strlen(cmdlines), 1),
	      "FILE");
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* One compacted page of cpu: at each timestamp a tick and its stack_id (id). */
static void add_page(struct seeds *s, unsigned cpu, uint64_t t0, uint64_t step, size_t n,
		     uint32_t id)
{
	uint8_t pg[PAGE] = { 0 };
	size_t off = 16;
	struct segment_seek *e = &s->frames[s->nr_frames++];

	put64(pg, t0);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			uint32_t delta = k || !i ? 0 : (uint32_t)step;

			put32(pg + off, delta << 5 | 3);	/* 12 bytes of data */
			pg[off + 4] = k ? STACK_ID_EVENT : TICK_EVENT;
			put32(pg + off + 8, 1000 + cpu);
			put32(pg + off + 12, k ? id : (uint32_t)i);
			off += 16;
		}
	}
	put64(pg + 8, off - 16);
	*e = (struct segment_seek){ .cpu = cpu, .offset = segment_writer_size(s->w),
				    .first_ts = t0, .last_ts = t0 + step * (n - 1) };
	if (s->fc) {
		struct buf enc = { 0 };
		size_t bound;
		void *z;
		size_t zlen;

		check(frame_columns_encode(s->fc, pg, off, &enc), "encode");
		bound = ZSTD_compressBound(enc.len);
		z = malloc(bound);
		if (!z)
			die("compress", -ENOMEM);
		zlen = ZSTD_compress(z, bound, enc.data, enc.len, 3);
		if (ZSTD_isError(zlen))
			die("compress", -EIO);
		check(segment_writer_append_compressed(s->w, SEGMENT_REC_PAGES, cpu, z, zlen, enc.len,
						       SEGMENT_REC_F_COLUMNS), "PAGES");
		free(z);
		buf_done(&enc);
	} else {
		check(segment_writer_append(s->w, SEGMENT_REC_PAGES, cpu, pg, off, 1, NULL), "PAGES");
	}
}

static void add_gen(struct seeds *s, uint32_t cpu, uint32_t gen, uint32_t prev, uint64_t begin,
		    uint64_t end)
{
	struct segment_generation g = {
		.generation = gen, .prev_generation = prev,
		.kind = cpu == SEGMENT_NO_CPU ? SEGMENT_GEN_RESET_LOSSLESS : SEGMENT_GEN_RESET_STRICT,
		.window_begin = begin, .window_end = end,
	};
	uint8_t p[SEGMENT_GENERATION_SIZE];

	segment_generation_encode(&g, p);
	check(segment_writer_append(s->w, SEGMENT_REC_GENERATION, cpu, p, sizeof(p), 0, NULL),
	      "GENERATION");
}

static void add_clock(struct seeds *s, uint64_t trace, uint64_t realtime)
{
	struct wallclock_pair pr = { trace, realtime, trace + 5 };
	uint8_t p[WALLCLOCK_PAIR_SIZE];

	wallclock_pair_encode(&pr, p);
	check(segment_writer_append(s->w, SEGMENT_REC_CLOCK, SEGMENT_NO_CPU, p, sizeof(p), 0, NULL),
	      "CLOCK");
}

/* Stack id 5 in generations 1..3 (another first frame in each), id 6 ABSENT from 2. */
static void add_stacks(struct seeds *s)
{
	struct buf b = { 0 };

	for (uint32_t gen = 1; gen <= 3; gen++) {
		uint64_t ips[2] = { 0xffffffff81000110 + 8 * gen, 0xffffffff81000010 };

		check(stacktab_encode(&b, &(struct stack_entry){ .generation = gen, .id = 5,
								  .refs = 1, .nr = 2, .ips = ips }),
		      "STACKS");
	}
	check(stacktab_encode(&b, &(struct stack_entry){ .generation = 2, .id = 6,
							  .flags = SEGMENT_STACK_F_ABSENT }), "STACKS");
	check(segment_writer_append(s->w, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, b.data, b.len, 1, NULL),
	      "STACKS");
	buf_done(&b);
}

static void finish(struct seeds *s)
{
	struct segment_cpu_index cpus[2] = { { .cpu = 0 }, { .cpu = 1 } };
	struct segment_index idx = { .flags = SEGMENT_INDEX_F_SEEK, .nr_cpus = 2, .cpus = cpus,
				     .frames = s->frames, .nr_frames = s->nr_frames };

	for (uint32_t i = 0; i < s->nr_frames; i++) {
		struct segment_cpu_index *c = &cpus[s->frames[i].cpu];

		c->pages++;
		c->events += 8;
		if (!c->first_ts)
			c->first_ts = s->frames[i].first_ts;
		c->last_ts = s->frames[i].last_ts;
	}
	check(segment_writer_finish(s->w, &idx, false, NULL), "finish");
	s->w = NULL;
}

/* Windows of two resets that overlap, one written twice, and events inside them. */
static void seed_windows(const char *name, bool columns)
{
	struct seeds s = { 0 };

	if (columns) {
		s.fc = frame_columns_new(8);
		if (!s.fc || frame_columns_add_format(s.fc, stack_id_format) < 0 ||
		    frame_columns_add_format(s.fc, tick_format) < 0)
			die("frame_columns", -ENOMEM);
	}
	open_seg(&s, name, "stackmap");
	add_clock(&s, 1000, 1764600000000000000ull);
	add_page(&s, 0, 1000, 250, 4, 5);
	add_page(&s, 1, 1100, 300, 4, 5);
	add_gen(&s, SEGMENT_NO_CPU, 2, 1, 2000, 3000);
	add_clock(&s, 2600, 1764600000000001600ull);
	add_page(&s, 0, 2100, 250, 4, 5);
	add_gen(&s, SEGMENT_NO_CPU, 3, 2, 2900, 4000);
	add_page(&s, 1, 3100, 300, 4, 6);
	add_gen(&s, SEGMENT_NO_CPU, 2, 1, 2000, 3000);
	add_page(&s, 0, 4100, 100, 4, 5);
	add_clock(&s, 4200, 1764600000000003000ull);
	add_stacks(&s);
	finish(&s);
	frame_columns_free(s.fc);
}

/* Per-CPU strict boundaries, with pages before and after each. */
static void seed_strict(const char *name)
{
	struct seeds s = { 0 };

	open_seg(&s, name, "stackmap");
	add_clock(&s, 1000, 1764600000000000000ull);
	add_gen(&s, SEGMENT_NO_CPU, 1, 0, 500, 600);
	add_page(&s, 0, 1000, 250, 4, 5);
	add_page(&s, 1, 1100, 300, 4, 5);
	add_gen(&s, 0, 2, 1, 0, 0);
	add_page(&s, 0, 2100, 250, 4, 5);
	add_page(&s, 1, 2200, 100, 4, 6);
	add_gen(&s, 1, 2, 1, 0, 0);
	add_page(&s, 1, 3100, 300, 4, 5);
	add_gen(&s, 0, 3, 2, 0, 0);
	add_page(&s, 0, 4100, 100, 4, 5);
	add_stacks(&s);
	finish(&s);
}

/* A copy of the finished segment name, cut before its INDEX: what a crash leaves. */
static void seed_cut(const char *name)
{
	char path[4096], *data;
	uint64_t ioff = 0;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s%s", outdir, name, SEGMENT_SUFFIX);
	check(read_file(path, &data, &len), path);
	if (len < SEGMENT_FOOTER_SIZE)
		die(path, -EINVAL);
	for (int i = 7; i >= 0; i--)
		ioff = ioff << 8 | (uint8_t)data[len - SEGMENT_FOOTER_SIZE + i];
	if (ioff >= len)
		die(path, -EINVAL);
	snprintf(path, sizeof(path), "%s/%s-cut%s", outdir, name, SEGMENT_PART_SUFFIX);
	f = fopen(path, "we");
	if (!f || fwrite(data, 1, ioff, f) != ioff || fclose(f) != 0)
		die(path, -EIO);
	free(data);
}

int main(int argc, char **argv)
{
	char path[4096];

	if (argc != 3) {
		fprintf(stderr, "usage: make-seeds SRCDIR OUTDIR\n");
		return 2;
	}
	outdir = argv[2];
	snprintf(path, sizeof(path), "%s/tests/data/pages/header_page", argv[1]);
	check(read_file(path, &header_page, &header_page_len), path);
	snprintf(stack_id_format, sizeof(stack_id_format),
		 "name: stack_id\nID: %d\nformat:\n%s\tfield:int stack_id;\toffset:8;\tsize:4;"
		 "\tsigned:1;\n\nprint fmt: \"<stack_id %%d>\", REC->stack_id\n",
		 STACK_ID_EVENT, common);
	snprintf(tick_format, sizeof(tick_format),
		 "name: tick\nID: %d\nformat:\n%s\tfield:int n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		 "print fmt: \"n=%%d\", REC->n\n", TICK_EVENT, common);

	seed_windows("00000001-20261201T000000-windows", false);
	seed_windows("00000002-20261201T000000-columns", true);
	seed_strict("00000003-20261201T000000-strict");
	seed_cut("00000002-20261201T000000-columns");
	free(header_page);
	return 0;
}
