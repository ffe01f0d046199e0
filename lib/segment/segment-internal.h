/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the parts of the segment format (segment.h): the record header
 * and the footer, which the writer encodes and the reader checks with one
 * codec (segment.c), and the writer's entry point for recovery. Not for
 * other modules.
 */
#ifndef STACKMAPD_SEGMENT_INTERNAL_H
#define STACKMAPD_SEGMENT_INTERNAL_H

#include <stdint.h>

#include "segment.h"

/* Decoded record header. */
struct rec_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t cpu;
	uint32_t stored_len;
	uint32_t raw_len;
	uint32_t seq;
	uint32_t payload_crc;
};

/* Encode h into p: magic, fields, header CRC (doc/segment-format.md). */
void segment_rec_hdr_encode(const struct rec_hdr *h, uint8_t p[SEGMENT_REC_HDR_SIZE]);

/*
 * Decode the record header at p into *ret. Returns 0, -EBADMSG when the
 * magic is wrong or -EBADE when the header CRC does not match; *ret is
 * written only on success. What the fields say is for the caller to check.
 */
int segment_rec_hdr_decode(const uint8_t p[SEGMENT_REC_HDR_SIZE], struct rec_hdr *ret);

/* Encode the footer that points at the INDEX record at index_off into p. */
void segment_footer_encode(uint64_t index_off, uint8_t p[SEGMENT_FOOTER_SIZE]);

/*
 * Decode the footer at p: the offset of the INDEX record in *ret_index_off.
 * Returns 0, -EBADMSG when the end magic is wrong, -EBADE when the CRC
 * does not match, or -EPROTO when the reserved field is not zero.
 */
int segment_footer_decode(const uint8_t p[SEGMENT_FOOTER_SIZE], uint64_t *ret_index_off);

/*
 * A writer that appends to the existing file part_path (in dir, borrowed)
 * after cutting it to keep_off bytes, which hold keep_records valid
 * records: what recovery uses to add its NOTE and the trailer. Returns 0
 * and *ret (owned), or -errno.
 */
int segment_writer_resume(const char *dir, const char *part_path, uint64_t keep_off,
			  uint32_t keep_records, struct segment_writer **ret);

#endif
