/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hash table (hashtab.h): growing rehashes from the stored hashes, so
 * that no key needs to be looked at again.
 */
#include <errno.h>
#include <stdlib.h>

#include "hashtab.h"
#include "util.h"

#define HASHTAB_MIN_SLOTS 16

struct hashtab_slot hashtab_no_slot;

int hashtab_reserve(struct hashtab *t, size_t n)
{
	struct hashtab_slot *slots;
	size_t nr_slots;

	if (n <= t->nr_slots / 2)
		return 0;
	if (n > SIZE_MAX / 2 / sizeof(*slots))
		return -ENOMEM;
	nr_slots = t->nr_slots ? t->nr_slots : HASHTAB_MIN_SLOTS;
	while (n > nr_slots / 2)
		nr_slots *= 2;
	slots = calloc(nr_slots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_slots; i++) {
		const struct hashtab_slot *o = &t->slots[i];
		size_t k;

		if (!o->val)
			continue;
		for (k = o->hash & (nr_slots - 1); slots[k].val; k = (k + 1) & (nr_slots - 1))
			;
		slots[k] = *o;
	}
	free(t->slots);
	t->slots = slots;
	t->nr_slots = nr_slots;
	return 0;
}

void hashtab_clear(struct hashtab *t)
{
	if (t->nr)
		memset(t->slots, 0, t->nr_slots * sizeof(*t->slots));
	t->nr = 0;
}

void hashtab_done(struct hashtab *t)
{
	free(t->slots);
	*t = (struct hashtab){ 0 };
}

void hashtab_done_free(struct hashtab *t)
{
	for (size_t i = 0; i < t->nr_slots; i++)
		free((void *)t->slots[i].val);
	hashtab_done(t);
}
