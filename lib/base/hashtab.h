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
 * memory). The hash functions below suit keys of words and of bytes.
 * Not thread-safe: a shared table needs its owner's lock.
 */
#ifndef STACKMAPD_HASHTAB_H
#define STACKMAPD_HASHTAB_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
 * A hash of len bytes at p (stacks of addresses, strings): FNV-1a a word
 * at a time, then a multiply-xorshift so that the low bits, which pick
 * the slot, depend on every word. Cheap: the transcoder hashes every
 * kernel stack it meets.
 */
static inline uint64_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *s = p;
	size_t words = len / 8;
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ len, w;

	for (size_t i = 0; i < words; i++) {
		memcpy(&w, s + 8 * i, 8);
		h = (h ^ w) * UINT64_C(0x100000001b3);
	}
	if (len % 8) {
		w = 0;
		memcpy(&w, s + 8 * words, len % 8);
		h = (h ^ w) * UINT64_C(0x100000001b3);
	}
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	return h ^ h >> 33;
}

#endif
