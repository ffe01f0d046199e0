/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column-encoded frames in real segment files and the seek table: frames
 * written as the daemon writes them (encoded, compressed, flagged COLUMNS)
 * read back bit for bit, damaged ones are reported as invalid records,
 * version-1 segments still read, and the decoder reads only the frames of
 * the CPU and time window asked for (it counts the frames it reads), also
 * for a window in wall-clock time placed through the segment's CLOCK pairs.
 * The daemon's frame encoder (segment-frame.h) gives the bytes of
 * column-encoding and compressing a frame in one zstd call, and its frames
 * read back too.
 */
#include <fcntl.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <zstd.h>

#include "buf.h"
#include "crc32c.h"
#include "decode.h"
#include "frame-columns.h"
#include "helpers.h"
#include "page-walk.h"
#include "segment-frame.h"
#include "segment.h"
#include "util.h"
#include "wallclock.h"

#include "synth-segment.h"

#define PAGE 4096
#define NR_PAGES 16
#define CPU1_SHIFT 777
#define NR_FRAMES (2 * NR_PAGES)

static char *dir;
static uint8_t raw[NR_PAGES][PAGE];
static const struct page_format pf = { 8, false, PAGE };

/* One frame per page and CPU, in the order they are written. */
struct frame {
	unsigned cpu;
	struct buf pages;		/* compacted, as a PAGES payload */
	uint64_t first_ts, last_ts;
	uint64_t events;
};
static struct frame frames[NR_FRAMES];

/* Page i as CPU cpu: compacted, timestamps shifted for CPU 1. */
static void make_frame(struct frame *f, unsigned cpu, int i)
{
	struct page_walk w;
	struct page_entry e;
	uint8_t pg[PAGE];
	int len;

	memcpy(pg, raw[i], PAGE);
	if (cpu == 1)
		put_le64(pg, get_le64(pg) + CPU1_SHIFT);
	len = page_walk_stored_len(&pf, pg, PAGE);
	CHECK(len > 0);
	*f = (struct frame){ .cpu = cpu };
	CHECK(buf_append(&f->pages, pg, (size_t)len) == 0);
	CHECK(page_walk_init(&w, &pf, pg, (size_t)len) == 0);
	while (page_walk_next(&w, &e) > 0) {
		if (e.kind != PAGE_ENTRY_DATA)
			continue;
		if (!f->first_ts)
			f->first_ts = e.ts;
		f->last_ts = e.ts;
		f->events++;
	}
}

static struct segment_writer *seg_open2(const char *name)
{
	return seg_open_version(dir, name, 2, NULL);
}

/*
 * Append frame f as the daemon does: column-encoded (cut short by cut
 * bytes, to damage it), one zstd frame, flag COLUMNS. Fills *seek.
 */
static void append_frame(struct segment_writer *w, struct frame_columns *fc, const struct frame *f,
			 size_t cut, struct segment_seek *seek)
{
	struct buf enc = {};
	size_t bound, z;
	void *zb;

	CHECK(frame_columns_encode(fc, f->pages.data, f->pages.len, &enc) == 0);
	CHECK(enc.len > cut);
	enc.len -= cut;
	bound = ZSTD_compressBound(enc.len);
	zb = malloc(bound);
	CHECK(zb != NULL);
	z = ZSTD_compress(zb, bound, enc.data, enc.len, 1);
	CHECK(!ZSTD_isError(z));
	*seek = (struct segment_seek){ .cpu = f->cpu, .offset = segment_writer_size(w),
				       .first_ts = f->first_ts, .last_ts = f->last_ts };
	CHECK(segment_writer_append_compressed(w, SEGMENT_REC_PAGES, f->cpu, zb, z, enc.len,
					       SEGMENT_REC_F_COLUMNS) == 0);
	free(zb);
	buf_done(&enc);
}

static struct frame_columns *encoder(void)
{
	struct frame_columns *fc = frame_columns_new(8);

	CHECK(fc != NULL);
	for (size_t i = 0; i < ARRAY_SIZE(synth_formats); i++) {
		_cleanup_free_ char *text = test_page_data(synth_formats[i][1], NULL);

		CHECK(frame_columns_add_format(fc, text) > 0);
	}
	return fc;
}

/* A segment of every frame, CPUs interleaved; finished with a seek table unless part. */
static char *write_segment(const char *name, bool finish)
{
	_cleanup_(frame_columns_freep) struct frame_columns *fc = encoder();
	struct segment_seek seek[NR_FRAMES];
	struct segment_writer *w = seg_open2(name);
	struct segment_index idx = { .flags = SEGMENT_INDEX_F_SEEK, .nr_frames = NR_FRAMES,
				     .frames = seek };
	char *path = NULL;

	for (size_t i = 0; i < NR_FRAMES; i++)
		append_frame(w, fc, &frames[i], 0, &seek[i]);
	if (!finish) {
		path = strdup(segment_writer_path(w));
		CHECK(path != NULL);
		segment_writer_free(w);
		return path;
	}
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

/* Every PAGES record reads back as the pages that were encoded, flagged COLUMNS. */
static void test_round_trip(const char *path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	const struct segment_seek *seek;
	struct segment_record rec;
	size_t k = 0, stored = 0, plain = 0;
	int r;

	CHECK(segment_reader_open(path, &rd) == 0);
	CHECK(segment_reader_version(rd) == SEGMENT_VERSION);
	CHECK(segment_reader_complete(rd));
	while ((r = segment_reader_next(rd, &rec)) > 0) {
		if (rec.type != SEGMENT_REC_PAGES)
			continue;
		CHECK(k < NR_FRAMES);
		CHECK(rec.flags & SEGMENT_REC_F_COLUMNS);
		CHECK(rec.cpu == frames[k].cpu);
		CHECK_MSG(rec.len == frames[k].pages.len &&
			  memcmp(rec.data, frames[k].pages.data, rec.len) == 0, "frame %zu", k);
		stored += rec.stored_len;
		plain += ZSTD_compressBound(rec.len);
		k++;
	}
	CHECK(r == 0 && k == NR_FRAMES);
	CHECK(segment_reader_pages_read(rd) == NR_FRAMES);

	/* the seek table, from the INDEX; a record read at its offset */
	CHECK(segment_reader_seek_table(rd, &seek) == NR_FRAMES);
	CHECK(seek[3].cpu == frames[3].cpu && seek[3].first_ts == frames[3].first_ts &&
	      seek[3].last_ts == frames[3].last_ts);
	CHECK(segment_reader_read_at(rd, seek[5].offset, &rec) == 0);
	CHECK(rec.type == SEGMENT_REC_PAGES && rec.len == frames[5].pages.len &&
	      memcmp(rec.data, frames[5].pages.data, rec.len) == 0);
	CHECK(segment_reader_read_at(rd, seek[5].offset + 1, &rec) == -EBADMSG);
}

/* One zstd frame of len bytes at level 1, with its content size: as the daemon always stored. */
static void compress_ref(const void *data, size_t len, struct buf *out)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t z;

	CHECK(cc != NULL);
	buf_reset(out);
	CHECK(buf_reserve(out, ZSTD_compressBound(len)) == 0);
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1)));
	z = ZSTD_compress2(cc, out->data, out->cap, data, len);
	CHECK(!ZSTD_isError(z));
	out->len = z;
	ZSTD_freeCCtx(cc);
}

/*
 * The frame encoder: with columns, each frame is the column encoding (a
 * context of the same formats, fed the same frames) compressed in one
 * call; without, the pages compressed. Frames of both read back.
 */
static void test_encoder(void)
{
	const char *texts[ARRAY_SIZE(synth_formats)];
	char *owned[ARRAY_SIZE(synth_formats)];
	_cleanup_(frame_columns_freep) struct frame_columns *fc = encoder();
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w = seg_open2("00000003-encoder");
	struct buf enc = {}, ref = {};

	for (size_t i = 0; i < ARRAY_SIZE(synth_formats); i++)
		texts[i] = owned[i] = test_page_data(synth_formats[i][1], NULL);
	for (int columns = 1; columns >= 0; columns--) {
		_cleanup_(segment_frame_encoder_freep) struct segment_frame_encoder *e = NULL;
		struct segment_frame_params p = {
			.max_frame = PAGE,
			.compression_level = 1,
			.columns = columns,
			.long_size = 8,
			.formats = texts,
			.nr_formats = ARRAY_SIZE(texts),
		};

		CHECK(segment_frame_encoder_new(&p, &e) == 0);
		for (size_t i = 0; i < NR_FRAMES; i++) {
			const struct frame *f = &frames[i];
			struct segment_frame sf;

			CHECK(segment_frame_encode(e, f->pages.data, f->pages.len, &sf) == 0);
			CHECK(!sf.columns_failed);
			if (columns) {
				buf_reset(&enc);
				CHECK(frame_columns_encode(fc, f->pages.data, f->pages.len, &enc) == 0);
				compress_ref(enc.data, enc.len, &ref);
				CHECK_MSG(sf.flags == SEGMENT_REC_F_COLUMNS && sf.raw_len == enc.len,
					  "frame %zu: flags %u, %zu bytes", i, sf.flags, sf.raw_len);
			} else {
				compress_ref(f->pages.data, f->pages.len, &ref);
				CHECK(sf.flags == 0 && sf.raw_len == f->pages.len);
			}
			CHECK_MSG(sf.stored_len == ref.len && memcmp(sf.stored, ref.data, ref.len) == 0,
				  "frame %zu (columns %d): other bytes than one zstd call", i, columns);
			CHECK(segment_writer_append_compressed(w, SEGMENT_REC_PAGES, f->cpu, sf.stored,
							       sf.stored_len, sf.raw_len,
							       sf.flags) == 0);
		}
	}
	CHECK(segment_writer_finish(w, NULL, false, &path) == 0);

	{
		_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
		struct segment_record rec;
		size_t k = 0;
		int r;

		CHECK(segment_reader_open(path, &rd) == 0);
		while ((r = segment_reader_next(rd, &rec)) > 0) {
			const struct frame *f = &frames[k % NR_FRAMES];

			if (rec.type != SEGMENT_REC_PAGES)
				continue;
			CHECK(!(rec.flags & SEGMENT_REC_F_COLUMNS) == (k >= NR_FRAMES));
			CHECK_MSG(rec.len == f->pages.len && memcmp(rec.data, f->pages.data, rec.len) == 0,
				  "frame %zu", k);
			k++;
		}
		CHECK(r == 0 && k == 2 * NR_FRAMES);
	}
	for (size_t i = 0; i < ARRAY_SIZE(owned); i++)
		free(owned[i]);
	buf_done(&enc);
	buf_done(&ref);
}

/*
 * Reference events (kbuffer on the original pages) of the frames f selects.
 * With a window, a kernel_stack (type 4) is in it when the event before it
 * on its CPU is (none: it is not).
 */
static void reference(const struct decoder_filter *f, uint64_t *ret_events, uint64_t *ret_sum)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	bool in_window[2] = { false, false };
	bool windowed = f->since != 0 || f->until != UINT64_MAX;

	*ret_events = *ret_sum = 0;
	for (size_t i = 0; i < NR_FRAMES; i++) {
		static uint8_t pg[PAGE];
		unsigned long long ts;
		void *d;

		if (f->cpu >= 0 && frames[i].cpu != (unsigned)f->cpu)
			continue;
		memset(pg, 0, PAGE);
		memcpy(pg, frames[i].pages.data, frames[i].pages.len);
		CHECK(kbuffer_load_subbuffer(kb, pg) == 0);
		for (d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts)) {
			bool *last = &in_window[frames[i].cpu];
			bool in = ts >= f->since && ts <= f->until;

			if (get_le16(d) == 4 && windowed)
				in = *last;
			else if (get_le16(d) != 4)
				*last = in;
			if (!in)
				continue;
			(*ret_events)++;
			*ret_sum += ts * 31 + (uint64_t)kbuffer_event_size(kb) + get_le16(d) +
				    frames[i].cpu;
		}
	}
	kbuffer_free(kb);
}

/* Decode path with f, expecting the events ref selects; returns the frames the decoder read. */
static uint64_t decode_as(const char *path, const struct decoder_filter *f,
			  const struct decoder_filter *ref, size_t *ret_errors)
{
	struct decoder *d;
	struct decoded_event ev;
	uint64_t events = 0, sum = 0, want_events, want_sum, n;
	int r;

	*ret_errors = 0;
	CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
	CHECK(decoder_set_filter(d, f) == 0);
	while ((r = decoder_next(d, &ev)) != 0) {
		if (r < 0) {
			(*ret_errors)++;
			CHECK(r != -ENOMEM);
			continue;
		}
		events++;
		sum += ev.ts * 31 + (uint64_t)ev.record->size + get_le16(ev.record->data) + ev.cpu;
	}
	reference(ref, &want_events, &want_sum);
	CHECK_MSG(events == want_events && sum == want_sum, "%s: events %" PRIu64 " of %" PRIu64,
		  path, events, want_events);
	n = decoder_frames_read(d);
	decoder_free(d);
	return n;
}

static uint64_t decode(const char *path, const struct decoder_filter *f, size_t *ret_errors)
{
	return decode_as(path, f, f, ret_errors);
}

/*
 * Frames whose time span meets f's window, of f's CPU, and the frame after
 * a CPU's last one in the window (it may start with the stack of the
 * window's last event).
 */
static uint64_t frames_in(const struct decoder_filter *f)
{
	bool after_kept[2] = { false, false };
	uint64_t n = 0;

	for (size_t i = 0; i < NR_FRAMES; i++) {
		bool *after = &after_kept[frames[i].cpu];
		bool meets = frames[i].events && frames[i].last_ts >= f->since &&
			     frames[i].first_ts <= f->until;

		if ((f->cpu < 0 || frames[i].cpu == (unsigned)f->cpu) &&
		    (meets || (*after && frames[i].events && frames[i].first_ts > f->until)))
			n++;
		*after = meets;
	}
	return n;
}

static void test_seek(const char *path, const char *part)
{
	struct decoder_filter f = DECODER_FILTER_ALL;
	uint64_t n;
	size_t errors;

	/* everything, each frame read once */
	n = decode(path, &f, &errors);
	CHECK_MSG(n == NR_FRAMES && errors == 0, "%" PRIu64 " frames read", n);

	/* one CPU: only its frames */
	f.cpu = 1;
	n = decode(path, &f, &errors);
	CHECK_MSG(n == NR_PAGES && errors == 0, "%" PRIu64 " frames read", n);

	/* a window of a few pages of both CPUs: only the frames that meet it */
	f = DECODER_FILTER_ALL;
	f.since = frames[8].first_ts + 1;
	f.until = frames[12].last_ts;
	CHECK(frames_in(&f) < NR_FRAMES / 2);
	n = decode(path, &f, &errors);
	CHECK_MSG(n == frames_in(&f) && errors == 0, "%" PRIu64 " frames read, %" PRIu64 " meet",
		  n, frames_in(&f));

	/* window and CPU */
	f.cpu = 0;
	n = decode(path, &f, &errors);
	CHECK_MSG(n == frames_in(&f) && errors == 0, "%" PRIu64 " frames read", n);

	/* a window after the end: not a frame */
	f = DECODER_FILTER_ALL;
	f.since = frames[NR_FRAMES - 1].last_ts + 1000000;
	n = decode(path, &f, &errors);
	CHECK(n == 0);

	/* an unfinished segment has no seek table: every frame of the CPU is read, same events */
	f = DECODER_FILTER_ALL;
	f.cpu = 1;
	f.since = frames[8].first_ts + 1;
	f.until = frames[12].last_ts;
	n = decode(part, &f, &errors);
	CHECK_MSG(n == NR_PAGES, "%" PRIu64 " frames read", n);
	CHECK(errors == 1);	/* the note that it is unfinished */
	{
		_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
		const struct segment_seek *seek;

		CHECK(segment_reader_open(part, &rd) == 0);
		CHECK(segment_reader_seek_table(rd, &seek) == NR_FRAMES);
		CHECK(seek[1].cpu == 1 && seek[1].last_ts == UINT64_MAX);
		CHECK(segment_reader_pages_read(rd) == 0);
	}
}

static void append_clock(struct segment_writer *w, uint64_t trace, uint64_t realtime)
{
	uint8_t p[WALLCLOCK_PAIR_SIZE];

	wallclock_pair_encode(&(struct wallclock_pair){ trace, realtime, trace }, p);
	CHECK(segment_writer_append(w, SEGMENT_REC_CLOCK, SEGMENT_NO_CPU, p, sizeof(p), 0, NULL) ==
	      0);
}

/*
 * A wall-clock window reads only the frames that meet it, placed through
 * the segment's own CLOCK pairs: one written when it opens, one at its end
 * after the wall clock was stepped forward by 10 s halfway through. The
 * end pair comes after every frame, as the daemon writes it.
 */
static void test_wall_window(void)
{
	_cleanup_(frame_columns_freep) struct frame_columns *fc = encoder();
	_cleanup_free_ char *path = NULL;
	struct segment_seek seek[NR_FRAMES];
	struct segment_writer *w = seg_open2("00000005-wall");
	struct segment_index idx = { .flags = SEGMENT_INDEX_F_SEEK, .nr_frames = NR_FRAMES,
				     .frames = seek };
	const uint64_t off = UINT64_C(1796126400) * NSEC_PER_SEC - frames[0].first_ts;
	const uint64_t step_at = frames[NR_FRAMES / 2].first_ts, step = 10 * NSEC_PER_SEC;
	struct decoder_filter f = DECODER_FILTER_ALL, ref = DECODER_FILTER_ALL;
	uint64_t n;
	size_t errors;

	append_clock(w, frames[0].first_ts, frames[0].first_ts + off);
	for (size_t i = 0; i < NR_FRAMES; i++)
		append_frame(w, fc, &frames[i], 0, &seek[i]);
	append_clock(w, step_at, step_at + off + step);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);

	/* before the step: a few pages of both CPUs */
	ref.since = frames[8].first_ts + 1;
	ref.until = frames[12].last_ts;
	f.wall_since = ref.since + off;
	f.wall_until = ref.until + off;
	CHECK(frames_in(&ref) < NR_FRAMES / 2);
	n = decode_as(path, &f, &ref, &errors);
	CHECK_MSG(n == frames_in(&ref) && errors == 0, "%" PRIu64 " frames read, %" PRIu64 " meet",
		  n, frames_in(&ref));

	/* after the step, with one CPU: the later pair places it */
	ref.since = frames[NR_FRAMES / 2 + 4].first_ts;
	ref.until = frames[NR_FRAMES / 2 + 9].last_ts;
	ref.cpu = f.cpu = 1;
	f.wall_since = ref.since + off + step;
	f.wall_until = ref.until + off + step;
	n = decode_as(path, &f, &ref, &errors);
	CHECK_MSG(n == frames_in(&ref) && n > 0 && errors == 0, "%" PRIu64 " frames read, %"
		  PRIu64 " meet", n, frames_in(&ref));

	/* the 10 s the step skipped: not a frame */
	f = DECODER_FILTER_ALL;
	f.wall_since = step_at + off + 1;
	f.wall_until = step_at + off + step - 1;
	CHECK(decode_as(path, &f, &(struct decoder_filter){ .cpu = -1, .since = 1, .until = 0 },
			&errors) == 0);
}

/* A frame whose encoding does not decode is an invalid record, reported with its offset. */
static void test_damaged(void)
{
	_cleanup_(frame_columns_freep) struct frame_columns *fc = encoder();
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w = seg_open2("00000003-damaged");
	struct segment_index idx = {};
	struct segment_seek seek[3];
	struct segment_record rec;
	int r;

	append_frame(w, fc, &frames[0], 0, &seek[0]);
	append_frame(w, fc, &frames[1], 1, &seek[1]);
	append_frame(w, fc, &frames[2], 0, &seek[2]);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	CHECK(segment_reader_open(path, &rd) == 0);
	while ((r = segment_reader_next(rd, &rec)) > 0)
		CHECK(rec.offset < seek[1].offset);
	CHECK(r == -EBADMSG);
	CHECK_MSG(segment_reader_error_offset(rd) == seek[1].offset &&
		  strstr(segment_reader_error(rd), "column"), "%s",
		  segment_reader_error(rd));
}

/* Patch the prologue of path to say version v. */
static void set_version(const char *path, uint32_t v)
{
	uint8_t p[SEGMENT_PROLOGUE_SIZE];
	int fd = open(path, O_RDWR | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(pread(fd, p, sizeof(p), 0) == (ssize_t)sizeof(p));
	put_le32(p + 8, v);
	put_le32(p + 12, crc32c(0, p, 12));
	CHECK(pwrite(fd, p, sizeof(p), 0) == (ssize_t)sizeof(p));
	close(fd);
}

/* Version 1 (plain pages) still reads; in version 1 a COLUMNS flag is invalid. */
static void test_version1(const char *columns_path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	_cleanup_free_ char *path = NULL;
	struct decoder_filter f = DECODER_FILTER_ALL;
	struct segment_writer *w = seg_open2("00000004-v1");
	struct segment_record rec;
	size_t errors;
	int r;

	for (size_t i = 0; i < NR_FRAMES; i++)
		CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, frames[i].cpu,
					    frames[i].pages.data, frames[i].pages.len, 1,
					    NULL) == 0);
	CHECK(segment_writer_finish(w, &(struct segment_index){}, false, &path) == 0);
	set_version(path, 1);
	CHECK(segment_reader_open(path, &rd) == 0);
	CHECK(segment_reader_version(rd) == 1);
	rd = segment_reader_free(rd);
	/* no seek table: all frames read, all events there */
	CHECK(decode(path, &f, &errors) == NR_FRAMES && errors == 0);
	f.cpu = 0;
	CHECK(decode(path, &f, &errors) == NR_PAGES && errors == 0);

	set_version(columns_path, 1);
	CHECK(segment_reader_open(columns_path, &rd) == 0);
	while ((r = segment_reader_next(rd, &rec)) > 0)
		CHECK(rec.type != SEGMENT_REC_PAGES);
	CHECK(r == -EBADMSG && strstr(segment_reader_error(rd), "flags"));
	set_version(columns_path, 3);
	rd = segment_reader_free(rd);
	CHECK(segment_reader_open(columns_path, &rd) == -EPROTONOSUPPORT);
}

int main(void)
{
	_cleanup_free_ char *pages = NULL, *path = NULL, *part = NULL;
	size_t len = 0;

	pages = test_page_data("cpu0.raw", &len);
	if (len < sizeof(raw)) {
		fprintf(stderr, "tests/data/pages/cpu0.raw is too short\n");
		return 99;
	}
	memcpy(raw, pages, sizeof(raw));
	dir = test_tmpdir();
	for (int i = 0; i < NR_PAGES; i++) {
		make_frame(&frames[2 * i], 0, i);
		make_frame(&frames[2 * i + 1], 1, i);
	}

	path = write_segment("00000001-frames", true);
	part = write_segment("00000002-part", false);
	test_round_trip(path);
	test_seek(path, part);
	test_wall_window();
	test_damaged();
	test_version1(path);
	test_encoder();

	for (size_t i = 0; i < NR_FRAMES; i++)
		buf_done(&frames[i].pages);
	test_rmtree(dir);
	free(dir);
	return tests_done("test-segment-frames");
}
