/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * String interning (strmap.h): strings in an array in insertion order, an
 * open-addressing hash of indexes (multiply-xorshift by words, linear
 * probing) kept at most half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"

struct strmap_item {
	char *s;
	size_t len;
	uint64_t counter;
};

struct strmap {
	struct strmap_item *items;
	size_t nr, cap;
	size_t *slots;			/* index + 1; 0 is empty */
	size_t nr_slots;
};

static size_t hash(const char *s, size_t len)
{
	const uint64_t k = UINT64_C(0x9e3779b97f4a7c15);
	uint64_t h = len * k, w;

	/* a word at a time: keys of frame addresses are a few hundred bytes */
	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, s, len);
	h = (h ^ w) * k;
	return (size_t)(h ^ h >> 32);
}

struct strmap *strmap_new(void)
{
	return calloc(1, sizeof(struct strmap));
}

struct strmap *strmap_free(struct strmap *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->nr; i++)
		free(m->items[i].s);
	free(m->items);
	free(m->slots);
	free(m);
	return NULL;
}

static size_t *find_slot(const struct strmap *m, const char *s, size_t len)
{
	size_t mask = m->nr_slots - 1;

	for (size_t i = hash(s, len) & mask;; i = (i + 1) & mask) {
		size_t k = m->slots[i];

		if (!k || (m->items[k - 1].len == len && !memcmp(m->items[k - 1].s, s, len)))
			return &m->slots[i];
	}
}

static int grow(struct strmap *m)
{
	size_t n = m->nr_slots ? m->nr_slots * 2 : 64;
	size_t *old = m->slots;

	m->slots = calloc(n, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->nr_slots = n;
	for (size_t i = 0; i < m->nr; i++)
		*find_slot(m, m->items[i].s, m->items[i].len) = i + 1;
	free(old);
	return 0;
}

int strmap_intern(struct strmap *m, const char *s, size_t len, size_t *ret_idx)
{
	size_t *slot;
	char *copy;
	int r;

	if ((m->nr + 1) * 2 > m->nr_slots) {
		r = grow(m);
		if (r < 0)
			return r;
	}
	slot = find_slot(m, s, len);
	if (*slot) {
		*ret_idx = *slot - 1;
		return 0;
	}
	if (GREEDY_REALLOC(m->items, m->cap, m->nr + 1) < 0)
		return -ENOMEM;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	m->items[m->nr] = (struct strmap_item){ .s = copy, .len = len };
	*slot = ++m->nr;
	*ret_idx = m->nr - 1;
	return 1;
}

size_t strmap_size(const struct strmap *m)
{
	return m->nr;
}

const char *strmap_get(const struct strmap *m, size_t idx, size_t *ret_len)
{
	if (ret_len)
		*ret_len = m->items[idx].len;
	return m->items[idx].s;
}

uint64_t *strmap_counter(struct strmap *m, size_t idx)
{
	return &m->items[idx].counter;
}
