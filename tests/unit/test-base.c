/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The small building blocks of lib/base: growing arrays (util.h), the
 * byte-order accessors (byteorder.h), the hash table (hashtab.h) and the
 * string map built on it (strmap.h).
 */
#include "byteorder.h"
#include "hashtab.h"
#include "helpers.h"
#include "strmap.h"
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

/* Keys 0..n-1 with values key + 1; hash_of decides which keys collide. */
static uint64_t weak_hash(uint64_t key)
{
	return key % 7;		/* seven chains, all in a few slots: collisions everywhere */
}

static bool table_has(const struct hashtab *t, uint64_t key, uint64_t (*hash_of)(uint64_t))
{
	struct hashtab_slot *s;

	hashtab_foreach_candidate(s, t, hash_of(key)) {
		if (s->val == key + 1)
			return true;
	}
	return false;
}

static void test_hashtab_keys(uint64_t (*hash_of)(uint64_t), size_t n)
{
	struct hashtab t = { 0 };

	/* empty: every lookup finds nothing, and nothing is allocated */
	CHECK(!table_has(&t, 1, hash_of) && t.slots == NULL && t.nr_slots == 0);
	for (size_t k = 0; k < n; k++) {
		CHECK_MSG(!table_has(&t, k, hash_of), "key %zu before", k);
		CHECK(hashtab_add(&t, hash_of(k), k + 1) == 0);
		CHECK_MSG(t.nr == k + 1 && t.nr_slots >= 2 * t.nr, "%zu in %zu slots", t.nr,
			  t.nr_slots);
	}
	/* every key survived the growth, and no other key is found */
	for (size_t k = 0; k < n; k++)
		CHECK_MSG(table_has(&t, k, hash_of), "key %zu after", k);
	for (size_t k = n; k < 2 * n; k++)
		CHECK_MSG(!table_has(&t, k, hash_of), "key %zu never added", k);
	/* cleared: empty, the memory kept for the next entries */
	{
		struct hashtab_slot *slots = t.slots;
		size_t nr_slots = t.nr_slots;

		hashtab_clear(&t);
		CHECK(t.nr == 0 && t.slots == slots && t.nr_slots == nr_slots);
		for (size_t k = 0; k < n; k++)
			CHECK(!table_has(&t, k, hash_of));
		CHECK(hashtab_add(&t, hash_of(3), 4) == 0 && table_has(&t, 3, hash_of));
	}
	hashtab_done(&t);
	CHECK(t.slots == NULL && t.nr == 0 && t.nr_slots == 0);
}

static void test_hashtab(void)
{
	struct hashtab t = { 0 };
	struct hashtab_slot *slots;

	test_hashtab_keys(hash_u64, 5000);
	test_hashtab_keys(weak_hash, 300);

	/* reserved room: adding into it never moves the slots */
	CHECK(hashtab_reserve(&t, 100) == 0 && t.nr_slots >= 200);
	slots = t.slots;
	for (uint64_t k = 0; k < 100; k++)
		CHECK(hashtab_add(&t, hash_u64(k), k + 1) == 0);
	CHECK(t.slots == slots && t.nr == 100);
	CHECK(hashtab_reserve(&t, 50) == 0 && t.slots == slots);
	/* a request that cannot be met leaves the table as it was */
	CHECK(hashtab_reserve(&t, SIZE_MAX / 2) == -ENOMEM);
	CHECK(t.slots == slots && t.nr == 100 && table_has(&t, 42, hash_u64));
	hashtab_done(&t);

	/* a table that owns its values frees them (a leak shows under the sanitizers) */
	for (uint64_t k = 0; k < 40; k++) {
		uint64_t *v = malloc(sizeof(*v));

		CHECK(v && hashtab_add(&t, hash_u64(k), (uintptr_t)v) == 0);
	}
	hashtab_done_free(&t);
	CHECK(t.slots == NULL && t.nr == 0);

	/* the hashes spread small keys and keys that differ in one byte */
	CHECK(hash_u64(1) != hash_u64(2) && (hash_u64(1) & 0xffff) != (hash_u64(2) & 0xffff));
	CHECK(hash_bytes("abcdefghi", 9) != hash_bytes("abcdefghj", 9));
	CHECK(hash_bytes("abcdefgh", 8) != hash_bytes("abcdefgh\0", 9));
	CHECK(hash_bytes("", 0) == hash_bytes("x", 0));
}

static void test_strmap(void)
{
	_cleanup_(strmap_freep) struct strmap *m = strmap_new();
	char key[32];
	size_t idx, len;

	CHECK(m != NULL);
	for (int i = 0; i < 3000; i++) {
		int n = snprintf(key, sizeof(key), "key-%d", i);

		CHECK(strmap_intern(m, key, (size_t)n, &idx) == 1 && idx == (size_t)i);
		(*strmap_counter(m, idx)) += (uint64_t)i;
	}
	/* known strings keep their index; bytes after a NUL count */
	CHECK(strmap_intern(m, "key-17", 6, &idx) == 0 && idx == 17);
	CHECK(strmap_intern(m, "key-17\0x", 8, &idx) == 1 && idx == 3000);
	CHECK(strmap_size(m) == 3001);
	CHECK(streq(strmap_get(m, 2999, &len), "key-2999") && len == 8);
	CHECK(*strmap_counter(m, 2999) == 2999);
}

int main(void)
{
	test_greedy_realloc();
	test_byteorder();
	test_hashtab();
	test_strmap();
	return tests_done("test-base");
}
