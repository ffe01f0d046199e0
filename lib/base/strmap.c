/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * String interning (strmap.h): strings in an array in insertion order,
 * found through a hash table (hashtab.h) of their indexes.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashtab.h"
#include "strmap.h"

struct strmap_item {
	char *s;
	size_t len;
	uint64_t counter;
};

struct strmap {
	struct strmap_item *items;
	size_t nr, cap;
	struct hashtab index;		/* values: index in items + 1 */
};

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
	hashtab_done(&m->index);
	free(m);
	return NULL;
}

int strmap_intern(struct strmap *m, const char *s, size_t len, size_t *ret_idx)
{
	struct hashtab_slot *slot;
	char *copy;
	uint64_t h;

	assert(m);
	assert(s || len == 0);
	assert(ret_idx);

	h = hash_bytes(s, len);
	hashtab_foreach_candidate(slot, &m->index, h) {
		const struct strmap_item *it = &m->items[slot->val - 1];

		if (it->len == len && !memcmp(it->s, s, len)) {
			*ret_idx = slot->val - 1;
			return 0;
		}
	}
	if (hashtab_reserve(&m->index, m->nr + 1) < 0 ||
	    GREEDY_REALLOC(m->items, m->cap, m->nr + 1) < 0)
		return -ENOMEM;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len);
	copy[len] = '\0';
	m->items[m->nr] = (struct strmap_item){ .s = copy, .len = len };
	(void)hashtab_add(&m->index, h, ++m->nr);	/* cannot fail: reserved */
	*ret_idx = m->nr - 1;
	return 1;
}

size_t strmap_size(const struct strmap *m)
{
	assert(m);
	return m->nr;
}

const char *strmap_get(const struct strmap *m, size_t idx, size_t *ret_len)
{
	assert(m);

	if (ret_len)
		*ret_len = m->items[idx].len;
	return m->items[idx].s;
}

uint64_t *strmap_counter(struct strmap *m, size_t idx)
{
	assert(m);
	return &m->items[idx].counter;
}
