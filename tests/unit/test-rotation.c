/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * When to cut a segment and which finished ones retention deletes
 * (daemon/rotation.c): size and age, max_size and max_segments counting
 * the segment being written, keep_free_percent counting only what deleting
 * frees (nothing for a file with another link), and never the current one.
 */
#include "helpers.h"
#include "rotation.h"

#define MB (UINT64_C(1) << 20)

/* Without links: how many of the oldest go (they must be the oldest). */
static size_t retention(const struct rotation_policy *p, const uint64_t *sizes, size_t n,
			uint64_t current_size, uint64_t fs_total, uint64_t fs_free)
{
	bool del[16];
	size_t k = rotation_retention_select(p, sizes, NULL, n, current_size, fs_total, fs_free,
					     del);

	for (size_t i = 0; i < n; i++)
		CHECK(del[i] == (i < k));
	return k;
}

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
	CHECK(retention(&p, sizes, 5, 1, 0, 0) == 0);

	/* max_size counts the current segment */
	p.max_size = 200 * MB;
	CHECK(retention(&p, sizes, 5, 20 * MB, 0, 0) == 2);	/* 64+10+64+20 <= 200 */
	p.max_size = 0;

	/* max_segments counts the current segment as one */
	p.max_segments = 3;
	CHECK(retention(&p, sizes, 5, 1, 0, 0) == 3);
	p.max_segments = 0;

	/* keep 10% of a 1000 MB file system free with 50 MB free: free 50 MB more */
	p.keep_free_percent = 10;
	CHECK(retention(&p, sizes, 5, 1, 1000 * MB, 50 * MB) == 1);
	/* cannot free more than all finished segments; never the current one */
	CHECK(retention(&p, sizes, 5, 1, 100000 * MB, 0) == 5);
	CHECK(retention(&p, sizes, 0, 1, 100000 * MB, 0) == 0);

	/*
	 * What deleting a segment with another link (the uploader's spool)
	 * frees: nothing. 10 MB short: the first frees nothing, the second
	 * 64 MB: only the second goes. 100 MB short: the second, then the
	 * linked ones, oldest first, as many as their sizes cover (the
	 * uploader frees them). max_size deletes the oldest whatever they free.
	 */
	{
		uint64_t frees[] = { 0, 64 * MB, 0, 0, 0 };
		bool del[5];

		CHECK(rotation_retention_select(&p, sizes, frees, 5, 1, 1000 * MB, 90 * MB, del) == 1);
		CHECK(!del[0] && del[1] && !del[2] && !del[3] && !del[4]);
		CHECK(rotation_retention_select(&p, sizes, frees, 5, 1, 1000 * MB, 0, del) == 2);
		CHECK(del[0] && del[1] && !del[2] && !del[3] && !del[4]);
		p.max_size = 200 * MB;
		CHECK(rotation_retention_select(&p, sizes, frees, 5, 20 * MB, 1000 * MB, 90 * MB, del) == 2);
		CHECK(del[0] && del[1] && !del[2]);
		p.max_size = 0;
	}
	return tests_done("test-rotation");
}
