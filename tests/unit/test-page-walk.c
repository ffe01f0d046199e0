/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The page walker against real pages (tests/data/pages) and hostile ones.
 * Every captured page must walk to its end with the events and timestamps
 * kbuffer reads from it; every hostile page (a padding length that makes
 * kbuffer loop, a jump backwards, a length past the page, a zero length, a
 * cut-short time extend, a bad commit word) must be rejected, with the
 * offset of the bad entry. The inline walk of common entries decodes
 * exactly as the general one.
 */
#include <errno.h>

#include <kbuffer.h>

#include "buf.h"
#include "helpers.h"
#include "page-walk.h"
#include "util.h"

#define PAGE 4096
#define HDR 16

static const struct page_format le64 = { 8, false, PAGE };

static uint32_t ev_hdr(unsigned int type_len, unsigned int delta)
{
	return delta << 5 | type_len;
}

/* Events and timestamps of a page as kbuffer reads them; -1 if it refuses the page. */
static int kbuffer_walk(struct kbuffer *kb, const uint8_t *page, unsigned long long *ts, int max)
{
	static uint8_t copy[PAGE + 64];
	unsigned long long t;
	void *d;
	int n = 0;

	memset(copy, 0, sizeof(copy));
	memcpy(copy, page, PAGE);
	if (kbuffer_load_subbuffer(kb, copy) < 0)
		return -1;
	for (d = kbuffer_read_event(kb, &t); d && n < max; d = kbuffer_next_event(kb, &t))
		ts[n++] = t;
	return n;
}

static void test_captured(void)
{
	static unsigned long long kts[PAGE / 4];
	_cleanup_free_ char *raw = NULL;
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	size_t rawlen, pages = 0;

	raw = test_page_data("cpu0.raw", &rawlen);
	CHECK(kb != NULL);
	for (size_t off = 0; off + PAGE <= rawlen; off += PAGE) {
		const uint8_t *page = (const uint8_t *)raw + off;
		struct page_walk w;
		struct page_entry e;
		int n, k, r, kinds[PAGE_ENTRY_MAX] = { 0 };

		n = kbuffer_walk(kb, page, kts, (int)ARRAY_SIZE(kts));
		CHECK(page_walk_init(&w, &le64, page, PAGE) == 0);
		for (k = 0; (r = page_walk_next(&w, &e)) > 0;) {
			kinds[e.kind]++;
			if (e.kind != PAGE_ENTRY_DATA)
				continue;
			CHECK_MSG(k < n && kts[k] == e.ts, "page %zu event %d: ts %llu, walker %llu",
				  off / PAGE, k, k < n ? kts[k] : 0ULL, (unsigned long long)e.ts);
			CHECK(e.type >= 0 && e.len >= 8);
			k++;
		}
		CHECK_MSG(r == 0, "page %zu: %s at %zu", off / PAGE, w.error, w.error_offset);
		CHECK_MSG(k == n, "page %zu: %d events, kbuffer %d", off / PAGE, k, n);
		CHECK(page_walk_check(&le64, page, PAGE, NULL, NULL) ==
		      (int)(HDR + (get_le64(page + 8) & PAGE_COMMIT_MASK) +
			    ((get_le64(page + 8) & PAGE_MISSED_STORED) ? 8 : 0)));
		pages++;
	}
	CHECK(pages >= 8);
	kbuffer_free(kb);
}

/* A page of events [ 4-byte event x n ]: each entry a type_len 2 event (8 bytes of data). */
static void make_page(uint8_t *page, unsigned int nr_events)
{
	memset(page, 0, PAGE);
	put_le64(page, 1000);
	put_le64(page + 8, nr_events * 12);
	for (unsigned int i = 0; i < nr_events; i++) {
		put_le32(page + HDR + 12 * i, ev_hdr(2, 10));
		put_le32(page + HDR + 12 * i + 4, 7);	/* common_type */
	}
}

static void expect_bad(const uint8_t *page, size_t want_off, const char *what)
{
	size_t off = SIZE_MAX;
	const char *why = NULL;
	int r = page_walk_check(&le64, page, PAGE, &off, &why);

	CHECK_MSG(r == -EBADMSG, "%s: accepted (%d)", what, r);
	CHECK_MSG(off == want_off, "%s: bad offset %zu, expected %zu", what, off, want_off);
	CHECK_MSG(why != NULL, "%s: no reason", what);
}

static void test_hostile(void)
{
	static uint8_t page[PAGE];
	struct page_walk w;
	struct page_entry e;

	make_page(page, 4);
	CHECK(page_walk_check(&le64, page, PAGE, NULL, NULL) == HDR + 48);

	/* padding of length -4: kbuffer would stand still on it for ever */
	make_page(page, 4);
	put_le32(page + HDR + 12, ev_hdr(PAGE_TYPE_PADDING, 1));
	put_le32(page + HDR + 16, 0xfffffffc);
	expect_bad(page, HDR + 12, "padding 0xfffffffc");

	/* a jump backwards */
	make_page(page, 4);
	put_le32(page + HDR + 24, ev_hdr(PAGE_TYPE_PADDING, 1));
	put_le32(page + HDR + 28, 0xffffffe0);
	expect_bad(page, HDR + 24, "backwards jump");

	/* an event length past the page */
	make_page(page, 4);
	put_le32(page + HDR + 12, ev_hdr(0, 1));
	put_le32(page + HDR + 16, 8000);
	expect_bad(page, HDR + 12, "length past the page");

	/* an event length inside the page but past the commit length */
	make_page(page, 4);
	put_le32(page + HDR + 36, ev_hdr(0, 1));
	put_le32(page + HDR + 40, 16);
	expect_bad(page, HDR + 36, "length past the commit");

	/* a zero length */
	make_page(page, 4);
	put_le32(page + HDR, ev_hdr(0, 1));
	put_le32(page + HDR + 4, 0);
	expect_bad(page, HDR, "zero length");

	/* a time extend cut short by the commit length */
	make_page(page, 4);
	put_le64(page + 8, 48 + 4);
	put_le32(page + HDR + 48, ev_hdr(PAGE_TYPE_TIME_EXTEND, 1));
	expect_bad(page, HDR + 48, "truncated time extend");

	/* end-of-page padding that does not end the data */
	make_page(page, 4);
	put_le32(page + HDR + 12, ev_hdr(PAGE_TYPE_PADDING, 0));
	put_le32(page + HDR + 16, 4);
	expect_bad(page, HDR + 12, "early end-of-page padding");

	/* a data event too short for its common fields */
	make_page(page, 4);
	put_le32(page + HDR + 12, ev_hdr(1, 1));
	expect_bad(page, HDR + 12, "short event");

	/* commit words: unused bits, past the page, missed count past the page */
	make_page(page, 4);
	put_le64(page + 8, 48 | 1u << 24);
	expect_bad(page, 8, "commit unused bits");
	put_le64(page + 8, PAGE);
	expect_bad(page, 8, "commit past the page");
	put_le64(page + 8, (PAGE - HDR) | PAGE_MISSED_STORED);
	expect_bad(page, 8, "missed count past the page");

	/* Well-formed: end-of-page padding over the rest, time extend, time stamp. */
	make_page(page, 2);
	put_le32(page + HDR + 24, ev_hdr(PAGE_TYPE_TIME_EXTEND, 5));
	put_le32(page + HDR + 28, 1);
	put_le32(page + HDR + 32, ev_hdr(2, 10));
	put_le32(page + HDR + 36, 7);
	put_le32(page + HDR + 44, ev_hdr(PAGE_TYPE_PADDING, 0));
	put_le32(page + HDR + 48, 12);
	put_le64(page + 8, 60 | PAGE_MISSED_EVENTS | PAGE_MISSED_STORED);
	put_le64(page + HDR + 60, 3);
	CHECK(page_walk_init(&w, &le64, page, PAGE) == 0);
	CHECK(w.missed == 3 && w.stored_len == HDR + 60 + 8);
	CHECK(page_walk_next(&w, &e) == 1 && e.kind == PAGE_ENTRY_DATA && e.ts == 1010 &&
	      e.type == 7);
	CHECK(page_walk_next(&w, &e) == 1 && e.ts == 1020);
	CHECK(page_walk_next(&w, &e) == 1 && e.kind == PAGE_ENTRY_TIME_EXTEND &&
	      e.ts == 1020 + (1ULL << 27 | 5));
	CHECK(page_walk_next(&w, &e) == 1 && e.kind == PAGE_ENTRY_DATA &&
	      e.ts == 1030 + (1ULL << 27 | 5));
	CHECK(page_walk_next(&w, &e) == 1 && e.kind == PAGE_ENTRY_PADDING && e.total == 16);
	CHECK(page_walk_next(&w, &e) == 0);
}

/* The same events in a big-endian page with a 4-byte commit word. */
static void test_big_endian(void)
{
	static uint8_t page[PAGE];
	const struct page_format be32 = { 4, true, PAGE };
	struct page_walk w;
	struct page_entry e;
	uint32_t h = 10u << 27 >> 27 | 2u << 27;	/* type_len 2 in the high bits, delta 10 */

	memset(page, 0, sizeof(page));
	page[7] = 100;			/* timestamp 100 */
	page[11] = 12;			/* commit 12 */
	page[12] = (uint8_t)(h >> 24);
	page[15] = (uint8_t)h;
	page[17] = 9;			/* common_type 9, big-endian */
	CHECK(page_walk_init(&w, &be32, page, PAGE) == 0);
	CHECK(w.stored_len == 12 + 12);
	CHECK(page_walk_next(&w, &e) == 1 && e.ts == 110 && e.type == 9 && e.len == 8);
	CHECK(page_walk_next(&w, &e) == 0);
}

/* A PAGES payload: compacted pages back to back, then one whose header is bad. */
static void test_payload(void)
{
	static uint8_t payload[3 * PAGE];
	uint8_t page[PAGE];
	struct page_walk w;
	size_t len = 0, pos = 0;
	int n = 0, r;

	for (int i = 1; i <= 2; i++) {
		make_page(page, (unsigned int)i);
		memcpy(payload + len, page, HDR + 12 * (size_t)i);
		len += HDR + 12 * (size_t)i;
	}
	while ((r = page_walk_payload_next(&w, &le64, payload, len, &pos)) > 0)
		n++;
	CHECK(r == 0 && n == 2 && pos == len);

	make_page(page, 1);
	put_le64(page + 8, 12 | 1u << 25);
	memcpy(payload + len, page, HDR + 12);
	len += HDR + 12;
	pos = 0;
	n = 0;
	while ((r = page_walk_payload_next(&w, &le64, payload, len, &pos)) > 0)
		n++;
	CHECK(r == -EBADMSG && n == 2 && pos == len && w.error_offset == 8 && w.error);
}

/* A stack_id entry's id, where the transcoder and the audit read it; none from a short payload. */
static void test_stack_id(void)
{
	uint8_t payload[16] = { 0 };
	struct page_entry e = { .kind = PAGE_ENTRY_DATA, .payload = payload, .len = 12 };
	int32_t id = 0;

	put_le32(payload + 4, 4242);	/* common_pid */
	put_le32(payload + 8, 1337);
	put_le32(payload + 12, 99);
	CHECK(page_entry_stack_id(&e, &id) && id == 1337);
	put_le32(payload + 8, (uint32_t)-7);
	CHECK(page_entry_stack_id(&e, &id) && id == -7);
	e.len = 11;
	id = 5;
	CHECK(!page_entry_stack_id(&e, &id) && id == 5);
}

static int plen(const void *page, size_t len, unsigned int long_size, bool big_endian,
		size_t page_size)
{
	return page_walk_stored_len(&(struct page_format){ long_size, big_endian, page_size }, page,
				    len);
}

static void test_stored_len(void)
{
	uint8_t page[4096] = { 0 };

	put_le32(page + 8, 100);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == 116);
	CHECK(plen(page, 115, 8, false, 4096) == -EBADMSG);
	CHECK(plen(page, 116, 8, false, 0) == 116);
	CHECK(plen(page, sizeof(page), 4, false, 4096) == 112);
	CHECK(plen(page, sizeof(page), 8, false, 100) == -EBADMSG);
	CHECK(plen(page, sizeof(page), 3, false, 4096) == -EINVAL);
	put_le32(page + 8, 100 | PAGE_MISSED_EVENTS | PAGE_MISSED_STORED);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == 124);
	CHECK(plen(page, sizeof(page), 4, false, 4096) == 116);
	/* A 64-bit kernel sign-extends RB_MISSED_EVENTS into the upper half. */
	put_le64(page + 8, 0xffffffffc0000000ull | 100);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == 124);
	put_le64(page + 8, 0xffffffff80000000ull | 100);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == 116);
	put_le64(page + 8, 100 | 1u << 24);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == -EBADMSG);
	put_le64(page + 8, 100 | 1u << 29);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == -EBADMSG);
	put_le64(page + 8, 0);
	put_le32(page + 8, 4096);
	CHECK(plen(page, sizeof(page), 8, false, 4096) == -EBADMSG);
	/* Big-endian 64-bit commit word. */
	memset(page + 8, 0, 8);
	page[15] = 100;
	page[12] = 0xc0;
	CHECK(plen(page, sizeof(page), 8, true, 4096) == 124);
	put_le32(page + 8, 0);
	page[11] = 100;
	CHECK(plen(page, sizeof(page), 4, true, 4096) == 112);
}

static void test_header_page(void)
{
	_cleanup_free_ char *hp = test_page_data("header_page", NULL);
	unsigned int size = 0;

	CHECK(page_walk_header_commit_size(hp, &size) == 0 && size == 8);
	CHECK(page_walk_header_commit_size("field: u64 timestamp;\toffset:0;\tsize:8;\n",
					   &size) == -EPROTO);
}

/* Empty pages (commit word 0, any timestamp) are passed over in one call; others stop it. */
static void test_skip_empty(void)
{
	const struct page_format le32 = { 4, false, PAGE };
	uint8_t buf[16 * 5 + 8] = { 0 };
	size_t pos = 0;

	put_le64(buf + 16, 12345);			/* a timestamp, still empty */
	put_le64(buf + 48 + 8, 1ULL << 31);		/* the fourth: MISSED_EVENTS, not empty */
	CHECK(page_walk_skip_empty(&le64, buf, sizeof(buf), &pos) == 3 && pos == 48);
	CHECK(page_walk_skip_empty(&le64, buf, sizeof(buf), &pos) == 0 && pos == 48);
	pos = 64;
	/* the last 8 bytes are no whole header */
	CHECK(page_walk_skip_empty(&le64, buf, sizeof(buf), &pos) == 1 && pos == 80);
	pos = 0;
	CHECK(page_walk_skip_empty(&le32, buf, 36, &pos) == 3 && pos == 36);
	pos = 0;
	CHECK(page_walk_skip_empty(&(struct page_format){ 2, false, PAGE }, buf, 36, &pos) == 0 &&
	      pos == 0);
}

/* Whether a and b are the same entry. */
static bool same_entry(const struct page_entry *a, const struct page_entry *b)
{
	return a->kind == b->kind && a->offset == b->offset && a->total == b->total &&
	       a->delta == b->delta && a->ts == b->ts && a->payload == b->payload &&
	       (!a->payload || a->len == b->len) && a->type == b->type;
}

/*
 * page_walk_next() decodes the common data events inline and hands the
 * rest to page_walk_next_entry(): on random pages (valid entries of every
 * kind, lengths that run past the data, hostile array words) both give the
 * same entries, results, timestamps and errors.
 */
static void test_inline_walk(void)
{
	static uint8_t page[PAGE];
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	unsigned int fast = 0;

	for (int round = 0; round < 20000; round++) {
		struct page_walk a, b;
		struct page_entry ea, eb;
		size_t pos = HDR, commit;
		int ra, rb;

		memset(page, 0, PAGE);
		put_le64(page, 1000 + (uint64_t)round);
		while (pos < HDR + 600) {
			uint32_t v[3];

			for (int i = 0; i < 3; i++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				v[i] = (uint32_t)(seed >> 32);
			}
			/* mostly sane entries: a type_len, or array[0] a small length */
			put_le32(page + pos, v[0] % 8 ? (v[1] & ~31u) | (v[0] >> 3) % 32 : v[1]);
			put_le32(page + pos + 4, v[0] % 4 ? v[2] % 200 : v[2]);
			put_le32(page + pos + 8, v[2] >> 16);
			pos += 4 + 4 * (v[0] % 30);
		}
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		commit = (seed >> 33) % 640;
		put_le64(page + 8, commit);
		if (page_walk_init(&a, &le64, page, PAGE) < 0)
			continue;
		b = a;
		do {
			ra = page_walk_next(&a, &ea);
			rb = page_walk_next_entry(&b, &eb);
			CHECK_MSG(ra == rb, "round %d: %d against %d", round, ra, rb);
			if (ra != rb)
				return;
			if (ra > 0) {
				CHECK_MSG(same_entry(&ea, &eb), "round %d: entries differ at %zu", round,
					  eb.offset);
				fast += ea.kind == PAGE_ENTRY_DATA;
			}
			CHECK(a.off == b.off && a.ts == b.ts && a.error == b.error &&
			      a.error_offset == b.error_offset);
		} while (ra > 0);
	}
	CHECK_MSG(fast > 10000, "only %u data entries walked", fast);
}

int main(void)
{
	test_captured();
	test_hostile();
	test_big_endian();
	test_payload();
	test_stack_id();
	test_stored_len();
	test_header_page();
	test_skip_empty();
	test_inline_walk();
	return tests_done("test-page-walk");
}
