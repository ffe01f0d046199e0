/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small building blocks of lib/base: growing arrays (util.h) and the
 * byte-order accessors (byteorder.h).
 */
#include "byteorder.h"
#include "helpers.h"
#include "util.h"

struct pair {
	uint64_t a, b;
};

static void test_greedy_realloc(void)
{
	struct pair *v = NULL;
	uint8_t *bytes = NULL;
	uint32_t *z = NULL;
	size_t cap = 0, bcap = 0, zcap = 0, reallocs = 0;

	/* one element at a time: the contents stay, the room only doubles */
	for (size_t i = 0; i < 10000; i++) {
		size_t before = cap;
		struct pair *old = v;

		CHECK(GREEDY_REALLOC(v, cap, i + 1) == 0);
		CHECK(cap >= i + 1);
		if (cap != before) {
			reallocs++;
			CHECK_MSG(before == 0 || cap == 2 * before, "%zu -> %zu", before, cap);
		} else {
			CHECK(v == old);
		}
		v[i] = (struct pair){ i, ~i };
	}
	for (size_t i = 0; i < 10000; i++)
		CHECK_MSG(v[i].a == i && v[i].b == ~i, "element %zu", i);
	CHECK_MSG(reallocs <= 15, "%zu reallocations for 10000 appends", reallocs);
	/* the first allocation holds 64 bytes' worth */
	CHECK(GREEDY_REALLOC(bytes, bcap, 1) == 0 && bcap == 64);
	/* a jump past twice the room gives exactly what was asked */
	CHECK(GREEDY_REALLOC(bytes, bcap, 1000) == 0 && bcap == 1000);
	/* asking for less than there is changes nothing */
	CHECK(GREEDY_REALLOC(bytes, bcap, 10) == 0 && bcap == 1000);

	/* the zeroing variant clears all the new room, also after a grow */
	CHECK(GREEDY_REALLOC0(z, zcap, 3) == 0 && zcap == 16);
	for (size_t i = 0; i < zcap; i++) {
		CHECK(z[i] == 0);
		z[i] = 0xdeadbeef;
	}
	CHECK(GREEDY_REALLOC0(z, zcap, 17) == 0 && zcap == 32);
	for (size_t i = 0; i < zcap; i++)
		CHECK_MSG(z[i] == (i < 16 ? 0xdeadbeef : 0), "z[%zu] = %x", i, z[i]);

	/* what cannot be allocated is an error, and nothing changes */
	{
		struct pair *keep = v;
		size_t keep_cap = cap;

		CHECK(GREEDY_REALLOC(v, cap, SIZE_MAX / 4) == -ENOMEM);
		CHECK(v == keep && cap == keep_cap && v[9999].a == 9999);
	}
	free(v);
	free(bytes);
	free(z);
}

static void test_byteorder(void)
{
	uint8_t p[8];

	put_le16(p, 0x0102);
	CHECK(p[0] == 2 && p[1] == 1 && get_le16(p) == 0x0102 && get_be16(p) == 0x0201);
	put_le32(p, 0x01020304);
	CHECK(p[0] == 4 && p[3] == 1 && get_le32(p) == 0x01020304 && get_be32(p) == 0x04030201);
	put_le64(p, UINT64_C(0x0102030405060708));
	CHECK(p[0] == 8 && p[7] == 1 && get_le64(p) == UINT64_C(0x0102030405060708));
}

int main(void)
{
	test_greedy_realloc();
	test_byteorder();
	return tests_done("test-base");
}
