/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The rotation and retention policy (rotation.h) as pure functions: when
 * the segment being written is due to be finished, and which finished
 * segments retention deletes to keep the archive within its limits.
 */
#include <assert.h>

#include "rotation.h"

bool rotation_due(const struct rotation_policy *p, uint64_t size, uint64_t age_usec)
{
	assert(p);
	if (p->segment_size && size >= p->segment_size)
		return true;
	if (p->segment_age_usec && age_usec >= p->segment_age_usec)
		return true;
	return false;
}

uint64_t rotation_age_left(const struct rotation_policy *p, uint64_t age_usec)
{
	assert(p);
	if (!p->segment_age_usec)
		return UINT64_MAX;
	return age_usec >= p->segment_age_usec ? 0 : p->segment_age_usec - age_usec;
}

size_t rotation_retention_select(const struct rotation_policy *p, const uint64_t *sizes,
				 const uint64_t *frees, size_t n, uint64_t current_size,
				 uint64_t fs_total, uint64_t fs_free, bool *ret_delete)
{
	uint64_t total = current_size, freed = 0, pending = 0, want_free = 0;
	size_t del = 0, k;

	assert(p);
	assert(sizes || n == 0);
	assert(ret_delete || n == 0);

	for (size_t i = 0; i < n; i++) {
		total += sizes[i];
		ret_delete[i] = false;
	}
	if (p->keep_free_percent && fs_total)
		want_free = fs_total / 100 * p->keep_free_percent;

	/* max_size and max_segments: the oldest, whatever deleting them frees */
	for (; del < n; del++) {
		bool over = false;

		if (p->max_size && total > p->max_size)
			over = true;
		/* the current segment counts as one */
		if (p->max_segments && n - del + 1 > p->max_segments)
			over = true;
		if (!over)
			break;
		ret_delete[del] = true;
		total -= sizes[del];
		freed += frees ? frees[del] : sizes[del];
	}
	k = del;
	if (!want_free || fs_free + freed >= want_free)
		return k;
	/*
	 * Free space: first the oldest segments whose deletion frees space. A
	 * segment with another name (a hard link: the uploader's spool holds
	 * it until it is sent, or refused/ keeps it) frees nothing, and
	 * deleting it with every other would empty the archive for nothing.
	 */
	for (size_t i = del; i < n && fs_free + freed < want_free; i++) {
		uint64_t f = frees ? frees[i] : sizes[i];

		if (!f)
			continue;
		ret_delete[i] = true;
		freed += f;
		k++;
	}
	/*
	 * Still short: only segments the spool holds are left. Their archive
	 * names go, oldest first and as many as their sizes cover, so that
	 * the uploader, which drops unsent segments that have no other name
	 * left when the disk is about to fill (its min_free), can free them.
	 */
	for (size_t i = del; i < n && fs_free + freed + pending < want_free; i++) {
		if (ret_delete[i])
			continue;
		ret_delete[i] = true;
		pending += sizes[i];
		k++;
	}
	return k;
}
