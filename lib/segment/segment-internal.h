/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the parts of the segment format (segment.h): the decoded record
 * header that the writer encodes and the reader checks, and the writer's
 * entry point for recovery. Not for other modules.
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

/*
 * A writer that appends to the existing file part_path (in dir, borrowed)
 * after cutting it to keep_off bytes, which hold keep_records valid
 * records: what recovery uses to add its NOTE and the trailer. Returns 0
 * and *ret (owned), or -errno.
 */
int segment_writer_resume(const char *dir, const char *part_path, uint64_t keep_off,
			  uint32_t keep_records, struct segment_writer **ret);

#endif
