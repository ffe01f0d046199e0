/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack-map tables of one finished segment (doc/stackmap.md, "Segment
 * tables"): which generations it needs, the entry (or ABSENT) of each id
 * its events reference in each of them, their GENERATION records, and the
 * addresses for its kallsyms subset; and the release of generations no
 * segment can need any more.
 */
#include <assert.h>

#include "stackmap-internal.h"
#include "stacktab.h"
#include "util.h"

/* Address the kernel prints as "[FTRACE TRAMPOLINE]": no symbol to keep. */
#define TRAMPOLINE_MARKER UINT64_C(0x7fffffff)

/* Lifetime of generation index i: its window begin to the next window's end. */
static void gen_lifetime(const struct stackmap *sm, size_t i, uint64_t *begin, uint64_t *end)
{
	*begin = sm->gens[i].g.window_begin;
	*end = i + 1 < sm->nr_gens ? sm->gens[i + 1].g.window_end : UINT64_MAX;
}

static int append_entry(struct buf *stacks, const struct stack_entry *e)
{
	return stacktab_encode(stacks, e);
}

static int append_addrs(struct buf *addrs, const struct sm_stack *s)
{
	if (!addrs || (s->flags & SEGMENT_STACK_F_TEXT))
		return 0;
	for (uint16_t i = 0; i < s->nr; i++) {
		uint64_t a = s->ips[i];
		int r;

		if (a == TRAMPOLINE_MARKER)
			continue;
		r = buf_append(addrs, &a, sizeof(a));
		if (r < 0)
			return r;
	}
	return 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x, y;

	memcpy(&x, a, sizeof(x));
	memcpy(&y, b, sizeof(y));
	return x < y ? -1 : x > y;
}

static void addrs_sort_unique(struct buf *addrs)
{
	size_t n = addrs->len / sizeof(uint64_t), k = 0;
	uint8_t *p = addrs->data;

	if (n < 2)
		return;
	qsort(p, n, sizeof(uint64_t), u64_cmp);
	for (size_t i = 1; i < n; i++)
		if (memcmp(p + i * 8, p + k * 8, 8) != 0)
			memmove(p + ++k * 8, p + i * 8, 8);
	addrs->len = (k + 1) * sizeof(uint64_t);
}

static int gen_tables(const struct sm_gen *g, const uint64_t *bitmap, size_t nbits,
		      struct buf *stacks, struct buf *addrs)
{
	size_t words = (nbits + 63) / 64, si = 0;

	if (g->dropped)
		return 0;
	for (size_t w = 0; w < words; w++) {
		uint64_t bits = bitmap[w];

		if (w == words - 1 && nbits % 64)
			bits &= (UINT64_C(1) << (nbits % 64)) - 1;
		while (bits) {
			uint32_t id = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
			struct stack_entry e = { .generation = g->g.generation, .id = id };
			int r;

			bits &= bits - 1;
			while (si < g->slots.n && g->slots.v[si].id < id)
				si++;
			if (si < g->slots.n && g->slots.v[si].id == id) {
				const struct sm_slot *s = &g->slots.v[si];

				e.refs = s->refs;
				e.nr = s->stack->nr;
				e.flags = s->stack->flags;
				e.ips = s->stack->ips;
				e.text = (const char *const *)s->stack->text;
				r = append_addrs(addrs, s->stack);
				if (r < 0)
					return r;
			} else {
				e.flags = SEGMENT_STACK_F_ABSENT;
			}
			r = append_entry(stacks, &e);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int stackmap_segment_tables(struct stackmap *sm, const uint64_t *id_bitmap, size_t nbits,
			    uint32_t first_gen, uint32_t last_gen, uint64_t min_ts, uint64_t max_ts,
			    struct buf *stacks, struct buf *generations, struct buf *addrs)
{
	int n = 0, r;

	assert(sm);
	assert(stacks);
	assert(generations);

	for (size_t i = 0; i < sm->nr_gens; i++) {
		const struct sm_gen *g = &sm->gens[i];
		uint8_t rec[SEGMENT_GENERATION_SIZE];
		uint64_t lb, le;
		bool pick;

		gen_lifetime(sm, i, &lb, &le);
		pick = g->g.generation >= first_gen && g->g.generation <= last_gen;
		if (!pick && min_ts <= max_ts)
			pick = lb <= max_ts && le >= min_ts;
		if (!pick)
			continue;
		r = gen_tables(g, id_bitmap, nbits, stacks, addrs);
		if (r < 0)
			return r;
		segment_generation_encode(&g->g, rec);
		r = buf_append(generations, rec, sizeof(rec));
		if (r < 0)
			return r;
		n++;
	}
	if (sm_reset_unbegun(sm)) {
		/*
		 * A reset was made (by us, or found made by somebody else) but
		 * its generation has not begun: events of this segment after
		 * the last matching snapshot may carry ids of the new map.
		 * Declare it with an open window so those ids resolve only
		 * where both maps agree or the new one lacks them. The new
		 * map's content was read again after this segment's events
		 * (stackmap_refresh_pending()); if the map changed once more
		 * since, its content proves nothing and no entry is written:
		 * those ids stay unresolved.
		 */
		const struct sm_gen *cur = sm_gen_cur_const(sm);
		struct sm_gen prov = {
			.g = {
				.generation = cur->g.generation + 1,
				.prev_generation = cur->g.generation,
				.kind = SEGMENT_GEN_RESET_EXTERNAL,
				.window_begin = sm_sat_sub(sm_external_begin_raw(sm, cur), sm->guard),
				.window_end = UINT64_MAX,
				.begin_cpu = SEGMENT_NO_CPU,
				.end_cpu = SEGMENT_NO_CPU,
			},
			.slots = sm->pending,
		};
		uint8_t rec[SEGMENT_GENERATION_SIZE];

		r = sm->pending_stale ? 0 : gen_tables(&prov, id_bitmap, nbits, stacks, addrs);
		if (r < 0)
			return r;
		segment_generation_encode(&prov.g, rec);
		r = buf_append(generations, rec, sizeof(rec));
		if (r < 0)
			return r;
		n++;
	}
	if (addrs)
		addrs_sort_unique(addrs);
	return n;
}

int stackmap_release_before(struct stackmap *sm, uint32_t gen)
{
	int n = 0;

	assert(sm);

	for (size_t i = 0; i < sm->nr_gens; i++) {
		struct sm_gen *g = &sm->gens[i];

		if (g->g.generation >= gen)
			break;
		if (g->dropped)
			continue;
		sm_slots_clear(sm, &g->slots);
		g->dropped = true;
		n++;
	}
	return n;
}
