/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * When to cut a segment, and which old segments retention deletes. Pure
 * decisions on numbers: the archive does the I/O.
 */
#ifndef STACKMAPD_ROTATION_H
#define STACKMAPD_ROTATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rotation_policy {
	uint64_t segment_size;		/* 0: no size limit */
	uint64_t segment_age_usec;	/* 0: no age limit */
	uint64_t max_size;		/* 0: unlimited total */
	unsigned max_segments;		/* 0: unlimited count */
	unsigned keep_free_percent;	/* 0: do not look at free space */
};

/* True when a segment of size bytes opened age_usec ago must be finished. */
bool rotation_due(const struct rotation_policy *p, uint64_t size, uint64_t age_usec);

/* Microseconds until a segment opened age_usec ago is due by age (UINT64_MAX: never). */
uint64_t rotation_age_left(const struct rotation_policy *p, uint64_t age_usec);

/*
 * Retention: sizes[0..n) are the finished segments, oldest first, and
 * frees[0..n) what deleting each really frees (borrowed; NULL: sizes[i]),
 * 0 for a file with another link (the uploader's spool); current_size is
 * the segment being written (never deleted, but it counts toward max_size
 * and max_segments); fs_total/fs_free describe the file system (bytes).
 * Sets ret_delete[0..n) to the segments to delete so that every limit
 * holds, as far as deleting finished segments can make it hold, and
 * returns how many they are. max_size and max_segments delete the oldest.
 * For keep_free_percent only what is freed counts: the oldest segments
 * that free space go first, and segments with another link only when
 * those are not enough (oldest first, as many as their sizes cover: the
 * uploader frees them then). Without links, the oldest go first.
 */
size_t rotation_retention_select(const struct rotation_policy *p, const uint64_t *sizes,
				 const uint64_t *frees, size_t n, uint64_t current_size,
				 uint64_t fs_total, uint64_t fs_free, bool *ret_delete);

#endif
