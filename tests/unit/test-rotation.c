/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * When to cut a segment and which finished ones retention deletes
 * (daemon/rotation.c): size and age, max_size and max_segments counting
 * the segment being written, keep_free_percent, and never the current one.
 */
#include "helpers.h"
#include "rotation.h"

#define MB (UINT64_C(1) << 20)

int main(void)
{
	struct rotation_policy p = { .segment_size = 64 * MB, .segment_age_usec = 3600000000ULL };
	uint64_t sizes[] = { 64 * MB, 64 * MB, 64 * MB, 10 * MB, 64 * MB };

	CHECK(!rotation_due(&p, 63 * MB, 0));
	CHECK(rotation_due(&p, 64 * MB, 0));
	CHECK(rotation_due(&p, 1, 3600000000ULL));
	CHECK(rotation_age_left(&p, 1000) == 3600000000ULL - 1000);
	p.segment_age_usec = 0;
	CHECK(!rotation_due(&p, 1, UINT64_MAX));
	CHECK(rotation_age_left(&p, 5) == UINT64_MAX);

	/* no limits: keep everything */
	CHECK(rotation_retention(&p, sizes, 5, 1, 0, 0) == 0);

	/* max_size counts the current segment */
	p.max_size = 200 * MB;
	CHECK(rotation_retention(&p, sizes, 5, 20 * MB, 0, 0) == 2);	/* 64+10+64+20 <= 200 */
	p.max_size = 0;

	/* max_segments counts the current segment as one */
	p.max_segments = 3;
	CHECK(rotation_retention(&p, sizes, 5, 1, 0, 0) == 3);
	p.max_segments = 0;

	/* keep 10% of a 1000 MB file system free with 50 MB free: free 50 MB more */
	p.keep_free_percent = 10;
	CHECK(rotation_retention(&p, sizes, 5, 1, 1000 * MB, 50 * MB) == 1);
	/* cannot free more than all finished segments; never the current one */
	CHECK(rotation_retention(&p, sizes, 5, 1, 100000 * MB, 0) == 5);
	CHECK(rotation_retention(&p, sizes, 0, 1, 100000 * MB, 0) == 0);

	return tests_done("test-rotation");
}
