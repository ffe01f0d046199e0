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

size_t rotation_retention(const struct rotation_policy *p, const uint64_t *sizes, size_t n,
			  uint64_t current_size, uint64_t fs_total, uint64_t fs_free)
{
	uint64_t total = current_size, freed = 0, want_free = 0;
	size_t del = 0;

	assert(p);
	assert(sizes || n == 0);

	for (size_t i = 0; i < n; i++)
		total += sizes[i];
	if (p->keep_free_percent && fs_total)
		want_free = fs_total / 100 * p->keep_free_percent;

	while (del < n) {
		bool over = false;

		if (p->max_size && total > p->max_size)
			over = true;
		/* the current segment counts as one */
		if (p->max_segments && n - del + 1 > p->max_segments)
			over = true;
		if (want_free && fs_free + freed < want_free)
			over = true;
		if (!over)
			break;
		total -= sizes[del];
		freed += sizes[del];
		del++;
	}
	return del;
}
