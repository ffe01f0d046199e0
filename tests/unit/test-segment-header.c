/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The record header and footer codecs that the segment writer and reader
 * share (segment-internal.h): every field at the offset
 * doc/segment-format.md gives it, a round trip, and the errors for a wrong
 * magic, a wrong CRC and a set reserved field.
 */
#include "byteorder.h"
#include "crc32c.h"
#include "helpers.h"
#include "segment-internal.h"
#include "util.h"

static void test_rec_hdr(void)
{
	const struct rec_hdr h = {
		.type = 0x0102, .flags = 0x0304, .cpu = 0x05060708, .stored_len = 0x090a0b0c,
		.raw_len = 0x0d0e0f10, .seq = 0x11121314, .payload_crc = 0x15161718,
	};
	uint8_t p[SEGMENT_REC_HDR_SIZE];
	struct rec_hdr d = { 0 };

	memset(p, 0xee, sizeof(p));
	segment_rec_hdr_encode(&h, p);
	CHECK(get_le32(p) == SEGMENT_REC_MAGIC);
	CHECK(get_le16(p + 4) == h.type && get_le16(p + 6) == h.flags);
	CHECK(get_le32(p + 8) == h.cpu && get_le32(p + 12) == h.stored_len);
	CHECK(get_le32(p + 16) == h.raw_len && get_le32(p + 20) == h.seq);
	CHECK(get_le32(p + 24) == h.payload_crc && get_le32(p + 28) == crc32c(0, p, 28));

	CHECK(segment_rec_hdr_decode(p, &d) == 0);
	CHECK(memcmp(&d, &h, sizeof(d)) == 0);

	/* every bit of the header is covered by the magic or the CRC */
	for (size_t bit = 0; bit < 8 * SEGMENT_REC_HDR_SIZE; bit++) {
		struct rec_hdr u = { .seq = 77 };
		int want = bit < 32 ? -EBADMSG : -EBADE;

		p[bit / 8] ^= (uint8_t)(1u << bit % 8);
		CHECK_MSG(segment_rec_hdr_decode(p, &u) == want && u.seq == 77, "bit %zu", bit);
		p[bit / 8] ^= (uint8_t)(1u << bit % 8);
	}
	CHECK(segment_rec_hdr_decode(p, &d) == 0 && d.seq == h.seq);
}

static void test_footer(void)
{
	uint8_t p[SEGMENT_FOOTER_SIZE];
	uint64_t off = 0;

	segment_footer_encode(UINT64_C(0x0102030405060708), p);
	CHECK(get_le64(p) == UINT64_C(0x0102030405060708));
	CHECK(get_le32(p + 8) == crc32c(0, p, 8) && get_le32(p + 12) == 0);
	CHECK(memcmp(p + 16, SEGMENT_END_MAGIC, 8) == 0);
	CHECK(segment_footer_decode(p, &off) == 0 && off == UINT64_C(0x0102030405060708));

	p[3] ^= 1;
	off = 5;
	CHECK(segment_footer_decode(p, &off) == -EBADE && off == 5);
	p[3] ^= 1;
	p[12] = 1;
	CHECK(segment_footer_decode(p, &off) == -EPROTO && off == 5);
	p[12] = 0;
	p[23] ^= 0x20;
	CHECK(segment_footer_decode(p, &off) == -EBADMSG && off == 5);
}

int main(void)
{
	test_rec_hdr();
	test_footer();
	return tests_done("test-segment-header");
}
