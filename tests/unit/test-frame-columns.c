/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column-encoded frames: every frame must come back bit for bit, whether
 * it is made of real pages (tests/data/pages, as read and as transcoded),
 * of synthetic pages with every kind of entry and damage, or of bytes that
 * are not pages at all, in every encoding version still written; damaged
 * encodings must be refused or decode within their bounds, never crash.
 * Time deltas that follow from the code path before the event cost nothing
 * in version 3.
 */
#include "frame-columns.h"
#include "helpers.h"
#include "transcode.h"
#include "util.h"

#define PAGE 4096
#define KMEM_ID 659
#define STACK_REF_ID 65000

static struct frame_columns *fc;

/* Encode, decode, compare; returns the encoded length (0 on failure). */
static size_t round_trip(const char *what, const uint8_t *frame, size_t len)
{
	_cleanup_(buf_done) struct buf enc = { 0 }, dec = { 0 };
	int r;

	CHECK_MSG(frame_columns_encode(fc, frame, len, &enc) == 0, "%s: encode", what);
	r = frame_columns_decode(fc, enc.data, enc.len, len, &dec);
	CHECK_MSG(r == (int)len, "%s: decode returned %d for %zu bytes", what, r, len);
	CHECK_MSG(dec.len == len && (!len || memcmp(dec.data, frame, len) == 0),
		  "%s: decoded frame differs", what);
	return r == (int)len ? enc.len : 0;
}

/* Declare a captured event format; returns its id. */
static int add_format(const char *name)
{
	_cleanup_free_ char *text = test_page_data(name, NULL);
	int id = frame_columns_add_format(fc, text);

	CHECK_MSG(id > 0, "format %s", name);
	return id;
}

/* The captured pages, compacted as the daemon stores them, then transcoded. */
static void test_real_pages(struct buf *frame)
{
	_cleanup_free_ char *raw = NULL, *hp = NULL;
	struct frame_columns_stats st;
	struct page_layout l = { 0 };
	struct stackdedup *dd;
	struct transcoder t;
	struct buf tframe = { 0 }, fmt = { 0 };
	size_t rawlen, enc;

	raw = test_page_data("cpu0.raw", &rawlen);
	hp = test_page_data("header_page", NULL);
	for (size_t off = 0; off + PAGE <= rawlen; off += PAGE) {
		uint64_t cw = get_le64(raw + off + 8);
		size_t n = 16 + (size_t)(cw & PAGE_COMMIT_MASK) + (cw & PAGE_MISSED_STORED ? 8 : 0);

		CHECK(buf_append(frame, raw + off, n) == 0);
	}
	enc = round_trip("captured pages", frame->data, frame->len);
	frame_columns_get_stats(fc, &st);
	CHECK(st.pages == rawlen / PAGE && st.verbatim_pages == 0 && st.tail_bytes == 0);
	CHECK(st.entries > 100 && st.raw_entries < st.entries / 10);
	CHECK_MSG(enc < frame->len / 2, "encoded %zu of %zu bytes", enc, frame->len);

	CHECK(page_layout_parse(hp, &l) == 0);
	l.page_size = PAGE;
	l.kernel_stack_id = add_format("ftrace/kernel_stack.format");
	l.print_id = add_format("ftrace/print.format");
	l.stack_id_id = -1;
	l.stack_ref_id = STACK_REF_ID;
	dd = stackdedup_new(1000);
	CHECK(dd && transcoder_init(&t, &l, dd) == 0);
	for (size_t off = 0; off + PAGE <= rawlen; off += PAGE) {
		struct page_summary sum;

		CHECK(transcoder_page(&t, (const uint8_t *)raw + off, PAGE, &tframe, &sum) == 0);
	}
	CHECK(page_layout_stack_ref_format(STACK_REF_ID, &fmt) == 0 && buf_append(&fmt, "", 1) == 0);
	CHECK(frame_columns_add_format(fc, (const char *)fmt.data) == STACK_REF_ID);
	round_trip("transcoded pages", tframe.data, tframe.len);
	frame_columns_get_stats(fc, &st);
	CHECK(st.verbatim_pages == 0 && st.raw_entries < st.entries / 10);
	transcoder_done(&t);
	stackdedup_free(dd);
	buf_done(&tframe);
	buf_done(&fmt);
}

/* ---- synthetic pages ---- */

struct page {
	uint8_t b[PAGE];
	size_t len;	/* of the data */
};

static void put_hdr(struct page *p, unsigned int type_len, uint32_t delta)
{
	uint32_t h = delta << 5 | type_len;

	memcpy(p->b + 16 + p->len, &h, 4);
	p->len += 4;
}

static void put_u32(struct page *p, uint32_t v)
{
	memcpy(p->b + 16 + p->len, &v, 4);
	p->len += 4;
}

/* A kmem_cache_alloc-like event of id (64 bytes of payload), fields varied by i. */
static void put_event(struct page *p, uint16_t id, unsigned int i, bool long_form)
{
	uint8_t e[64] = { 0 };
	uint64_t call_site = 0xffffffff81000000ULL + 0x40 * (i % 3), ptr = 0xffff888000000000ULL + 64 * i;
	int32_t pid = 1000 + (int32_t)(i % 2), node = -1;

	memcpy(e, &id, 2);
	e[2] = (uint8_t)i;
	memcpy(e + 4, &pid, 4);
	memcpy(e + 8, &call_site, 8);
	memcpy(e + 16, &ptr, 8);
	memcpy(e + 56, &node, 4);
	snprintf((char *)e + 24, 32, "name-%u", i % 4);
	if (long_form) {
		put_hdr(p, 0, 100 + i);
		put_u32(p, sizeof(e) + 4);
	} else {
		put_hdr(p, sizeof(e) / 4, 100 + i);
	}
	memcpy(p->b + 16 + p->len, e, sizeof(e));
	p->len += sizeof(e);
}

static void finish(struct page *p, struct buf *frame, uint64_t ts, uint64_t flags, bool missed)
{
	uint64_t cw = flags | p->len;

	memcpy(p->b, &ts, 8);
	memcpy(p->b + 8, &cw, 8);
	CHECK(buf_append(frame, p->b, 16 + p->len) == 0);
	if (missed)
		CHECK(buf_append_u64(frame, 12345) == 0);
	memset(p, 0, sizeof(*p));
}

static void test_synthetic(void)
{
	static struct page p;
	struct frame_columns_stats st;
	struct buf frame = { 0 };
	uint8_t junk[40];

	/* events in both length forms, time extends, absolute stamps, padding */
	for (unsigned int i = 0; i < 20; i++)
		put_event(&p, KMEM_ID, i, i % 5 == 0);
	put_hdr(&p, 30, 12345);
	put_u32(&p, 7);
	put_event(&p, KMEM_ID, 21, false);
	put_hdr(&p, 31, 999);
	put_u32(&p, 3);
	put_hdr(&p, 29, 5);	/* discarded event: array[0] counts itself */
	put_u32(&p, 12);
	memset(p.b + 16 + p.len, 0xab, 8);
	p.len += 8;
	put_event(&p, 4321, 1, false);	/* no format */
	put_event(&p, KMEM_ID, 22, false);
	finish(&p, &frame, 1000000, 0, false);
	round_trip("entries of every kind", frame.data, frame.len);
	frame_columns_get_stats(fc, &st);
	CHECK_MSG(st.pages == 1 && st.raw_entries == 2 && st.entries == 26, "%" PRIu64 " %" PRIu64 " %" PRIu64, st.pages, st.raw_entries, st.entries);

	/* an empty page, lost events (counted, and the 64-bit negative form) */
	finish(&p, &frame, 2000000, 0, false);
	put_event(&p, KMEM_ID, 1, false);
	finish(&p, &frame, 1500000, PAGE_MISSED_EVENTS | PAGE_MISSED_STORED, true);
	put_event(&p, KMEM_ID, 2, false);
	finish(&p, &frame, 3000000, 0xffffffff80000000ULL, false);
	/* the rest of the page unused (padding with delta 0), and bytes after it */
	put_event(&p, KMEM_ID, 3, false);
	put_hdr(&p, 29, 0);
	put_u32(&p, 0);
	memset(p.b + 16 + p.len, 0x5a, 10);
	p.len += 10;
	finish(&p, &frame, 4000000, 0, false);
	/* 3 bytes left at the end, an event shorter than its format */
	put_event(&p, KMEM_ID, 4, false);
	put_hdr(&p, 2, 7);
	put_u32(&p, KMEM_ID);
	put_u32(&p, 1);
	memset(p.b + 16 + p.len, 1, 3);
	p.len += 3;
	finish(&p, &frame, 5000000, 0, false);
	round_trip("page flags and tails", frame.data, frame.len);
	frame_columns_get_stats(fc, &st);
	/*
	 * The last two pages are not well-formed for the page walker (bytes
	 * after the end-of-page padding; an entry header cut short): stored
	 * verbatim, as the decoder would reject them anyway.
	 */
	CHECK_MSG(st.pages == 4 && st.verbatim_pages == 2, "%" PRIu64 " %" PRIu64, st.pages, st.verbatim_pages);

	/* an entry running past the commit length: the page is kept as it is */
	put_event(&p, KMEM_ID, 5, false);
	put_hdr(&p, 0, 1);
	put_u32(&p, 400);
	finish(&p, &frame, 6000000, 0, false);
	/* a page with bits 20-29 set, then half a page: the frame's tail */
	put_event(&p, KMEM_ID, 6, false);
	finish(&p, &frame, 7000000, 1u << 22, false);
	put_event(&p, KMEM_ID, 7, false);
	finish(&p, &frame, 8000000, 0, false);
	frame.len -= 30;
	round_trip("damaged pages", frame.data, frame.len);
	frame_columns_get_stats(fc, &st);
	CHECK_MSG(st.pages == 4 && st.verbatim_pages == 3 && st.tail_bytes > 0, "%" PRIu64 " %" PRIu64 " %" PRIu64, st.pages, st.verbatim_pages, st.tail_bytes);

	round_trip("empty frame", (const uint8_t *)"", 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37);
	for (size_t n = 0; n <= sizeof(junk); n++)
		round_trip("short junk", junk, n);
	buf_done(&frame);
}

/*
 * Frames of many events from a few code paths, as a real load makes them:
 * fields that repeat as whole tuples go into templates, pointers near the
 * previous one of the same path become small deltas, and all of it comes
 * back bit for bit, frame after frame, across choices of transforms.
 */
static void test_templates(void)
{
	static struct page p;
	_cleanup_(buf_done) struct buf frame = { 0 }, enc = { 0 };
	struct frame_columns_stream st;
	size_t total = 0, streams = 0, enc_len = 0;
	bool ptr_tdelta = false, site_template = false;

	for (unsigned int f = 0; f < 3 * 16 + 1; f++) {
		buf_reset(&frame);
		for (unsigned int pg = 0; pg < 8; pg++) {
			for (unsigned int i = 0; i < 50; i++) {
				unsigned int n = f * 400 + pg * 50 + i;

				put_event(&p, KMEM_ID, (n % 3) * 4 + (n / 7) % 2 * 24 + n / 1000 * 96,
					  n % 17 == 0);
				/* each path allocates from its own cache, objects near each other */
				memcpy(p.b + 16 + p.len - 64 + 16,
				       &(uint64_t){ 0xffff888000000000ULL + (uint64_t)(n % 3) * 0x10000000 +
						    64 * (n / 3) + 8 * ((n * 2654435761u >> 20) % 8) }, 8);
				/* the tail (a string) independent of the other template fields */
				memset(p.b + 16 + p.len - 3, 'a' + (int)(n / 5 % 2), 2);
			}
			finish(&p, &frame, 1000000ULL * (f * 8 + pg), 0, false);
		}
		enc_len = round_trip("template frames", frame.data, frame.len);
	}
	buf_reset(&enc);
	CHECK(frame_columns_encode(fc, frame.data, frame.len, &enc) == 0);
	for (size_t i = 0; frame_columns_get_stream(fc, i, &st) == 0; i++) {
		CHECK_MSG(st.start + st.len <= enc.len, "stream %zu at %zu+%zu of %zu", i, st.start, st.len,
			  enc.len);
		CHECK_MSG(st.start == (i ? total : st.start), "stream %zu starts at %zu, not %zu", i,
			  st.start, total);
		total = st.start + st.len;
		streams++;
		if (st.name)
			continue;
		CHECK(st.id == KMEM_ID);
		ptr_tdelta |= st.offset == 16 && st.transform == 4;	/* TDELTA */
		site_template |= st.offset == 8 && st.transform == 5;	/* TEMPLATE */
	}
	CHECK_MSG(total == enc.len && streams > 6, "%zu streams end at %zu of %zu", streams, total, enc.len);
	CHECK(ptr_tdelta && site_template);
	/* uncompressed, an event takes a few bytes rather than 68 */
	CHECK_MSG(enc_len * 6 < frame.len, "encoded %zu of %zu bytes", enc_len, frame.len);
}

/* Damaged encodings: refused, or decoded within bounds. */
static void test_damage(const struct buf *frame)
{
	_cleanup_(buf_done) struct buf enc = { 0 }, dec = { 0 }, bad = { 0 };
	int accepted = 0;

	CHECK(frame_columns_encode(fc, frame->data, frame->len, &enc) == 0);
	CHECK(frame_columns_decode(fc, enc.data, enc.len, frame->len - 1, &dec) == -EFBIG);
	CHECK(dec.len == 0);
	CHECK(buf_append(&bad, enc.data, enc.len) == 0);
	bad.data[0] = FRAME_COLUMNS_VERSION + 1;
	CHECK(frame_columns_decode(fc, bad.data, bad.len, SIZE_MAX, &dec) == -EPROTONOSUPPORT);
	bad.data[0] = FRAME_COLUMNS_VERSION_MIN - 1;
	CHECK(frame_columns_decode(fc, bad.data, bad.len, SIZE_MAX, &dec) == -EPROTONOSUPPORT);
	for (size_t n = 0; n < enc.len; n += 1 + n / 8)
		CHECK_MSG(frame_columns_decode(fc, enc.data, n, SIZE_MAX, &dec) < 0,
			  "truncated to %zu of %zu bytes, accepted", n, enc.len);
	CHECK(dec.len == 0);

	srand(7);
	for (int round = 0; round < 3000; round++) {
		int r, flips = 1 + rand() % 4;

		memcpy(bad.data, enc.data, enc.len);
		bad.len = enc.len;
		for (int k = 0; k < flips; k++)
			bad.data[rand() % bad.len] ^= (uint8_t)(1 + rand() % 255);
		if (round % 3 == 0)
			bad.len = (size_t)rand() % bad.len;
		buf_reset(&dec);
		r = frame_columns_decode(fc, bad.data, bad.len, 2 * frame->len, &dec);
		CHECK_MSG(r < 0 ? dec.len == 0 : (size_t)r == dec.len && dec.len <= 2 * frame->len,
			  "round %d: %d, %zu bytes", round, r, dec.len);
		accepted += r >= 0;
	}
	/* most damage is noticed (the record CRC catches the rest in a segment) */
	CHECK_MSG(accepted < 1500, "%d of 3000 damaged encodings accepted", accepted);
}

/*
 * Each version is marked in the frame and read by one decoder; a version 3
 * frame read as version 2 has a time transform version 2 does not know.
 */
static void test_versions(const struct buf *frame)
{
	_cleanup_(frame_columns_freep) struct frame_columns *reader = frame_columns_new(8);
	_cleanup_(buf_done) struct buf enc = { 0 }, dec = { 0 };

	CHECK(reader != NULL);
	for (unsigned int v = FRAME_COLUMNS_VERSION_MIN; v <= FRAME_COLUMNS_VERSION; v++) {
		buf_reset(&enc);
		buf_reset(&dec);
		CHECK(frame_columns_set_version(fc, v) == 0);
		CHECK(frame_columns_encode(fc, frame->data, frame->len, &enc) == 0);
		CHECK_MSG(enc.data[0] == v, "version byte %u, not %u", enc.data[0], v);
		CHECK(frame_columns_decode(reader, enc.data, enc.len, frame->len, &dec) == (int)frame->len);
		CHECK(dec.len == frame->len && memcmp(dec.data, frame->data, frame->len) == 0);
	}
	buf_reset(&dec);
	enc.data[0] = 2;
	CHECK(frame_columns_decode(reader, enc.data, enc.len, frame->len, &dec) == -EBADMSG);
	CHECK(dec.len == 0);
	CHECK(frame_columns_set_version(fc, FRAME_COLUMNS_VERSION) == 0);
}

/* The event's time delta of the page being built (put_event wrote it). */
static void set_last_delta(struct page *p, uint32_t delta)
{
	uint8_t *h = p->b + 16 + p->len - 68;

	put_le32(h, delta << 5 | (get_le32(h) & 31));
}

/*
 * Three code paths X Y X Z ..., where how long X takes to come depends on
 * what ran before it: version 3 predicts every delta once it has seen each
 * pair, so the time stream is all zeros but for the first events; version
 * 2, which predicts from the template's previous event alone, is not.
 */
static size_t pair_time_nonzero(unsigned int version, size_t *ret_len)
{
	static const unsigned int path[4] = { 0, 1, 0, 2 };
	static const uint32_t delta[4] = { 1000, 500, 3000, 700 };	/* X after Z, Y, X after Y, Z */
	static struct page p;
	_cleanup_(buf_done) struct buf frame = { 0 }, enc = { 0 };
	struct frame_columns_stream st, hi = { 0 };
	size_t nonzero = 0;

	CHECK(frame_columns_set_version(fc, version) == 0);
	for (unsigned int pg = 0; pg < 4; pg++) {
		for (unsigned int i = 0; i < 40; i++) {
			put_event(&p, KMEM_ID, path[i % 4], false);
			set_last_delta(&p, delta[i % 4] + (pg == 0 && i == 0 ? 77 : 0));
		}
		finish(&p, &frame, 1000000ULL * (pg + 1), 0, false);
	}
	round_trip("pair times", frame.data, frame.len);
	CHECK(frame_columns_encode(fc, frame.data, frame.len, &enc) == 0);
	for (size_t i = 0; frame_columns_get_stream(fc, i, &st) == 0; i++)
		if (!st.name && st.id == KMEM_ID)
			hi = st;	/* a type's last stream: the high parts of its times */
	CHECK(hi.transform == (version >= 3 ? 2 : 1));
	for (size_t i = 0; i < hi.len; i++)
		nonzero += enc.data[hi.start + i] != 0;
	*ret_len = hi.len;
	CHECK(frame_columns_set_version(fc, FRAME_COLUMNS_VERSION) == 0);
	return nonzero;
}

static void test_pair_times(void)
{
	size_t len, nonzero;

	nonzero = pair_time_nonzero(3, &len);
	/* the first X, Y, Z, X after Y and X after Z: two bytes each */
	CHECK_MSG(len == 165 && nonzero == 10, "version 3: %zu of %zu bytes not 0", nonzero, len);
	nonzero = pair_time_nonzero(2, &len);
	CHECK_MSG(nonzero > 40, "version 2: %zu of %zu bytes not 0", nonzero, len);
}

int main(void)
{
	struct buf frame = { 0 };

	fc = frame_columns_new(8);
	CHECK(fc != NULL);
	CHECK(frame_columns_new(3) == NULL);
	CHECK(add_format("kmem/kmem_cache_alloc.format") == KMEM_ID);
	add_format("sched/sched_switch.format");
	add_format("ftrace/kernel_stack.format");
	add_format("ftrace/print.format");
	CHECK(frame_columns_add_format(fc, "name: x\nformat:\n") == -EINVAL);

	CHECK(frame_columns_set_version(fc, 1) == -EINVAL);
	CHECK(frame_columns_set_version(fc, FRAME_COLUMNS_VERSION + 1) == -EINVAL);
	for (unsigned int v = FRAME_COLUMNS_VERSION_MIN; v <= FRAME_COLUMNS_VERSION; v++) {
		CHECK(frame_columns_set_version(fc, v) == 0);
		buf_reset(&frame);
		test_real_pages(&frame);
		test_synthetic();
		test_templates();
		test_damage(&frame);
	}
	test_versions(&frame);
	test_pair_times();

	buf_done(&frame);
	frame_columns_free(fc);
	return tests_done("test-frame-columns");
}
