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
 * Retention: sizes[0..n) are the finished segments, oldest first;
 * current_size is the segment being written (never deleted, but it counts
 * toward max_size and max_segments); fs_total/fs_free describe the file
 * system (bytes). Returns how many of the oldest segments to delete so that
 * every limit holds, as far as deleting finished segments can make it hold.
 */
size_t rotation_retention(const struct rotation_policy *p, const uint64_t *sizes, size_t n,
			  uint64_t current_size, uint64_t fs_total, uint64_t fs_free);

#endif
