/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hash table: open addressing with linear probing, at most half full,
 * growing by doubling. A slot holds a 64-bit hash and a non-zero value
 * (an index + 1, or a pointer); what a key is and when two keys are equal
 * is the caller's, who looks at the candidates of a hash:
 *
 *	struct hashtab_slot *s;
 *
 *	hashtab_foreach_candidate(s, &t, h)
 *		if (key_equal(s->val, key))
 *			return s->val;			(found)
 *	r = hashtab_add(&t, h, val);			(not found: add it)
 *
 * Lookups, and adding into room made by hashtab_reserve(), never
 * allocate; entries are never removed one by one (hashtab_clear() empties the table, keeping its
 * memory). The hash functions below, for keys of words and of bytes, are
 * the tree's only ones (tests/check-base.sh).
 * Not thread-safe: a shared table needs its owner's lock.
 */
#ifndef STACKMAPD_HASHTAB_H
#define STACKMAPD_HASHTAB_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "byteorder.h"

struct hashtab_slot {
	uint64_t hash;
	uintptr_t val;			/* 0: free */
};

struct hashtab {
	struct hashtab_slot *slots;	/* owned */
	size_t nr_slots;		/* a power of two, or 0 before the first reserve */
	size_t nr;			/* entries */
};

/* The one free slot of a table that has none: lookups in it find nothing. Never written. */
extern struct hashtab_slot hashtab_no_slot;

/*
 * Make room for n entries in all (the table stays at most half full), so
 * that inserting up to n - t->nr entries allocates nothing. Returns 0, or
 * -ENOMEM with the table unchanged (and still usable).
 */
int hashtab_reserve(struct hashtab *t, size_t n);

/* Forget every entry; the memory stays for the next ones. */
void hashtab_clear(struct hashtab *t);

/* Free the slots (not what the values point to) and reset *t to empty. */
void hashtab_done(struct hashtab *t);

/* hashtab_done() for a table whose values are pointers it owns: free() each first. */
void hashtab_done_free(struct hashtab *t);

/* The first slot to look at for hash h (free, or a candidate to compare). */
static inline struct hashtab_slot *hashtab_first(const struct hashtab *t, uint64_t h)
{
	if (!t->nr_slots)
		return &hashtab_no_slot;
	return &t->slots[h & (t->nr_slots - 1)];
}

/* The slot after s, wrapping around. */
static inline struct hashtab_slot *hashtab_next(const struct hashtab *t, const struct hashtab_slot *s)
{
	size_t i = (size_t)(s - t->slots) + 1;

	return &t->slots[i & (t->nr_slots - 1)];
}

/*
 * For each slot s holding an entry of hash h, run the statement that
 * follows. The table must not change during the loop.
 */
#define hashtab_foreach_candidate(s, t, h)                                              \
	for ((s) = hashtab_first((t), (h)); (s)->val; (s) = hashtab_next((t), (s)))     \
		if ((s)->hash != (h)) {                                                 \
		} else

/*
 * Add val (not 0) with hash h; the caller knows its key is not in the table
 * yet. Allocates only when there is no reserved room. Returns 0 or
 * -ENOMEM (then the table is unchanged).
 */
static inline int hashtab_add(struct hashtab *t, uint64_t h, uintptr_t val)
{
	struct hashtab_slot *s;
	int r;

	assert(val);
	r = hashtab_reserve(t, t->nr + 1);
	if (r < 0)
		return r;
	for (s = hashtab_first(t, h); s->val; s = hashtab_next(t, s))
		;
	s->hash = h;
	s->val = val;
	t->nr++;
	return 0;
}

/*
 * The hash functions of the tree, for tables (this one, the column
 * encoder's dictionaries, caches): hash_u64() for a word, hash_bytes()
 * for bytes, and hash_bytes_more() with hash_end() for keys of several
 * parts. Their values live in memory only and may change with any
 * version. hash_fnv1a() is the exception: a format whose values are
 * stored (below).
 */

/* FNV-1a, 64 bits: its offset basis and prime. */
#define HASH_FNV1A_BASIS UINT64_C(0xcbf29ce484222325)
#define HASH_FNV1A_PRIME UINT64_C(0x100000001b3)

/* One FNV-1a step: h takes in w (a byte, or, for hash_bytes(), a word). */
static inline uint64_t hash_fnv1a_step(uint64_t h, uint64_t w)
{
	return (h ^ w) * HASH_FNV1A_PRIME;
}

/*
 * FNV-1a of len bytes at p, a byte at a time, from h (HASH_FNV1A_BASIS
 * for a new hash): the standard function, unlike the others here a
 * format. Its values are stored (ClickHouse's stack_key, doc/fleet.md,
 * ch_stack_key()) and must never change.
 */
static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len)
{
	const uint8_t *s = p;

	for (size_t i = 0; i < len; i++)
		h = hash_fnv1a_step(h, s[i]);
	return h;
}

/* A hash of a 64-bit key (a word, an id, a pointer): every bit moves every bit. */
static inline uint64_t hash_u64(uint64_t k)
{
	k ^= k >> 30;
	k *= UINT64_C(0xbf58476d1ce4e5b9);
	k ^= k >> 27;
	k *= UINT64_C(0x94d049bb133111eb);
	k ^= k >> 31;
	return k;
}

/*
 * Take len bytes at p into the running hash h: FNV-1a a word at a time,
 * the words read little-endian and the last partial one padded with
 * zeros. Cheap: the transcoder hashes every kernel stack it meets, the
 * column encoder every template and text value.
 */
static inline uint64_t hash_bytes_more(uint64_t h, const void *p, size_t len)
{
	const uint8_t *s = p;
	size_t words = len / 8, t = len % 8;

	for (size_t i = 0; i < words; i++)
		h = hash_fnv1a_step(h, get_le64(s + 8 * i));
	s += 8 * words;
	/* the tail in two overlapping reads, not a call to memcpy() */
	if (t >= 4)
		h = hash_fnv1a_step(h, get_le32(s) | (uint64_t)get_le32(s + t - 4) << 8 * (t - 4));
	else if (t >= 2)
		h = hash_fnv1a_step(h, get_le16(s) | (uint64_t)get_le16(s + t - 2) << 8 * (t - 2));
	else if (t)
		h = hash_fnv1a_step(h, s[0]);
	return h;
}

/* The hash of what h has taken in: a multiply-xorshift, so that the low bits depend on every word. */
static inline uint64_t hash_end(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	return h ^ h >> 33;
}

/* A hash of len bytes at p (stacks of addresses, strings). */
static inline uint64_t hash_bytes(const void *p, size_t len)
{
	return hash_end(hash_bytes_more(HASH_FNV1A_BASIS ^ len, p, len));
}

#endif
