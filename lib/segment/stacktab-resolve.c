/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack table of a segment (stacktab-resolve.h): the entries of its
 * STACKS records, its GENERATION records, and the resolver that turns an
 * event's stack reference into frames following the generation rules of
 * doc/segment-format.md. Resolution never guesses: an id whose generation
 * cannot be proven, or whose entries disagree, is reported unresolved
 * with the reason. Used by the decoder and by the daemon's count of a
 * segment's unresolved stacks, so it lives with the format.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "budget.h"
#include "hashtab.h"
#include "stacktab-resolve.h"
#include "util.h"

/* One (generation, id) of the table. e's frame pointers point into the same allocation. */
struct tab_entry {
	struct stack_entry e;
	bool conflict;		/* two different stacks were seen: never resolves */
};

struct cpu_state {
	bool strict;		/* per-CPU boundaries exist: timestamps do not matter */
	uint32_t current;	/* generation of this CPU's events at the reader's position */
};

struct gen_record {
	uint32_t cpu;
	struct segment_generation g;
};

/*
 * A time window as recorded, the bounds the resolver may rely on, and
 * (once sorted) the window that may overlap it (see sort_windows()).
 */
struct window {
	struct segment_generation g;
	uint64_t begin, end;
	size_t order;		/* of its GENERATION record: the first of equal windows stays */
	size_t other;		/* sorted: a later window of another reset with the lowest begin; SIZE_MAX none */
};

struct stacktab {
	struct hashtab entries;		/* values: struct tab_entry *, owned */
	size_t bytes;			/* of the entries' copies */

	struct window *windows;
	size_t nr_windows, cap_windows;
	bool windows_sorted;
	bool windows_overlap;

	struct gen_record *gens;	/* every GENERATION record, in the order added */
	size_t nr_gens, cap_gens;

	struct cpu_state *cpus;
	size_t nr_cpus;			/* room in cpus, zeroed past the CPUs seen */

	struct stacktab_stats stats;
	char reason[96];
	size_t charged;			/* bytes held, in the readers' budget (budget.h) */
};

struct stacktab *stacktab_new(void)
{
	return calloc(1, sizeof(struct stacktab));
}

struct stacktab *stacktab_free(struct stacktab *t)
{
	if (!t)
		return NULL;
	budget_release_all(&t->charged);
	hashtab_done_free(&t->entries);
	free(t->windows);
	free(t->gens);
	free(t->cpus);
	free(t);
	return NULL;
}

static uint64_t entry_key(uint32_t generation, uint32_t id)
{
	return (uint64_t)generation << 32 | id;
}

/* ids are slots of the kernel's hash table and generations small: spread both */
static uint64_t key_hash(uint64_t key)
{
	return hash_u64(key);
}

/* The slot holding the entry of key (of hash h), or NULL. */
static struct hashtab_slot *find(const struct stacktab *t, uint64_t key, uint64_t h)
{
	struct hashtab_slot *slot;

	hashtab_foreach_candidate(slot, &t->entries, h) {
		const struct tab_entry *te = (const struct tab_entry *)slot->val;

		if (entry_key(te->e.generation, te->e.id) == key)
			return slot;
	}
	return NULL;
}

static const struct tab_entry *lookup(const struct stacktab *t, uint32_t generation, uint32_t id)
{
	uint64_t key = entry_key(generation, id);
	const struct hashtab_slot *slot = find(t, key, key_hash(key));

	return slot ? (const struct tab_entry *)slot->val : NULL;
}

static size_t entry_size(const struct stack_entry *e)
{
	size_t size = sizeof(struct tab_entry);

	if (e->flags & SEGMENT_STACK_F_TEXT) {
		size += sizeof(char *) * e->nr;
		for (uint16_t i = 0; i < e->nr; i++)
			size += strlen(e->text[i]) + 1;
	} else
		size += sizeof(uint64_t) * e->nr;
	return size;
}

/* A private copy of e: one allocation holding the entry and its frames. */
static struct tab_entry *entry_dup(const struct stack_entry *e)
{
	size_t size = entry_size(e);
	struct tab_entry *te;

	te = malloc(size);
	if (!te)
		return NULL;
	te->e = *e;
	te->e.ips = NULL;
	te->e.text = NULL;
	te->conflict = false;
	if (e->flags & SEGMENT_STACK_F_TEXT) {
		const char **text = (const char **)(te + 1);
		char *s = (char *)(text + e->nr);

		for (uint16_t i = 0; i < e->nr; i++) {
			size_t l = strlen(e->text[i]) + 1;

			memcpy(s, e->text[i], l);
			text[i] = s;
			s += l;
		}
		te->e.text = text;
	} else if (e->nr) {
		uint64_t *ips = (uint64_t *)(te + 1);

		memcpy(ips, e->ips, sizeof(uint64_t) * e->nr);
		te->e.ips = ips;
	}
	return te;
}

static int add_entry(const struct stack_entry *e, void *userdata)
{
	struct stacktab *t = userdata;
	uint64_t key = entry_key(e->generation, e->id), h = key_hash(key);
	size_t size = entry_size(e);
	struct hashtab_slot *slot;
	struct tab_entry *te;

	/* Whatever a segment claims, the table stays within its limits. */
	if (t->entries.nr >= STACKTAB_MAX_ENTRIES || t->bytes + size > STACKTAB_MAX_BYTES)
		return -EFBIG;
	slot = find(t, key, h);
	if ((!slot || (!((struct tab_entry *)slot->val)->conflict &&
		       !(e->flags & SEGMENT_STACK_F_ABSENT) &&
		       (((struct tab_entry *)slot->val)->e.flags & SEGMENT_STACK_F_ABSENT))) &&
	    budget_charge(&t->charged, size + 2 * sizeof(struct hashtab_slot), "the stack table") < 0)
		return -ENOMEM;
	if (!slot) {
		if (hashtab_reserve(&t->entries, t->entries.nr + 1) < 0)
			return -ENOMEM;
		te = entry_dup(e);
		if (!te)
			return -ENOMEM;
		(void)hashtab_add(&t->entries, h, (uintptr_t)te);	/* cannot fail: reserved */
		t->bytes += size;
		return 0;
	}
	te = (struct tab_entry *)slot->val;
	if (te->conflict || (e->flags & SEGMENT_STACK_F_ABSENT)) {
		/* Known to conflict, or a later ABSENT never undoes a stack seen before. */
		te->e.refs = MAX(te->e.refs, e->refs);
		return 0;
	}
	if (te->e.flags & SEGMENT_STACK_F_ABSENT) {
		struct tab_entry *n = entry_dup(e);

		if (!n)
			return -ENOMEM;
		free(te);
		slot->val = (uintptr_t)n;
		t->bytes += size;
		return 0;
	}
	if (stacktab_frames_equal(&te->e, e))
		te->e.refs = MAX(te->e.refs, e->refs);
	else
		te->conflict = true;
	return 0;
}

int stacktab_add_stacks(struct stacktab *t, const void *payload, size_t len)
{
	assert(t);
	assert(payload || len == 0);
	return stacktab_decode(payload, len, add_entry, t);
}

static int cpu_state(struct stacktab *t, uint32_t cpu, struct cpu_state **ret)
{
	if (cpu >= STACKTAB_MAX_CPUS)
		return -EINVAL;
	if (BUDGET_GREEDY_REALLOC0(&t->charged, t->cpus, t->nr_cpus, (size_t)cpu + 1,
				   "the stack table") < 0)
		return -ENOMEM;
	*ret = &t->cpus[cpu];
	return 0;
}


static bool same_generation(const struct segment_generation *a, const struct segment_generation *b)
{
	return a->generation == b->generation && a->prev_generation == b->prev_generation &&
	       a->window_begin == b->window_begin && a->window_end == b->window_end;
}

int stacktab_add_generation(struct stacktab *t, uint32_t cpu, const struct segment_generation *g)
{
	struct gen_record rec;
	struct cpu_state *c = NULL;
	int r;

	assert(t);
	assert(g);
	rec = (struct gen_record){ .cpu = cpu, .g = *g };
	/*
	 * The daemon may write a window again (when a reset happens, and with
	 * the segment's tables): sort_windows() keeps one of equal windows,
	 * once for all, so that adding is constant time whatever a file holds.
	 */
	if (cpu != SEGMENT_NO_CPU) {
		r = cpu_state(t, cpu, &c);
		if (r < 0)
			return r;
	}
	/* room grows by doubling: twice what is added bounds what is held */
	if (budget_charge(&t->charged, 2 * (sizeof(rec) + (c ? 0 : sizeof(struct window))),
			  "generation records") < 0)
		return -ENOMEM;
	if (GREEDY_REALLOC(t->gens, t->cap_gens, t->nr_gens + 1) < 0)
		return -ENOMEM;
	if (!c) {
		if (GREEDY_REALLOC(t->windows, t->cap_windows, t->nr_windows + 1) < 0)
			return -ENOMEM;
		t->windows[t->nr_windows++] = (struct window){ .g = *g, .order = t->nr_gens,
							       .other = SIZE_MAX };
		t->windows_sorted = false;
	} else if (!c->strict) {
		c->strict = true;
		c->current = g->prev_generation;
	}
	t->gens[t->nr_gens++] = rec;
	return 0;
}

int stacktab_cpu_boundary(struct stacktab *t, uint32_t cpu, uint32_t generation)
{
	struct cpu_state *c;
	int r;

	assert(t);

	r = cpu_state(t, cpu, &c);
	if (r < 0)
		return r;
	c->strict = true;
	c->current = generation;
	return 0;
}

static int window_cmp(const void *a, const void *b)
{
	const struct window *x = a, *y = b;

	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->g.generation != y->g.generation)
		return x->g.generation < y->g.generation ? -1 : 1;
	if (x->g.prev_generation != y->g.prev_generation)
		return x->g.prev_generation < y->g.prev_generation ? -1 : 1;
	/* equal windows: as recorded, so that the first stays */
	if (x->g.window_begin != y->g.window_begin)
		return x->g.window_begin < y->g.window_begin ? -1 : 1;
	if (x->g.window_end != y->g.window_end)
		return x->g.window_end < y->g.window_end ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Two windows of one reset: an event in both is placed all the same. */
static bool same_reset(const struct window *a, const struct window *b)
{
	return a->g.generation == b->g.generation && a->g.prev_generation == b->g.prev_generation;
}

static int window_gen_cmp(const void *a, const void *b)
{
	const struct window *const *x = a, *const *y = b;

	return (*x)->g.generation < (*y)->g.generation ? -1 : (*x)->g.generation > (*y)->g.generation;
}

/* The earliest begin of the windows of generation gen (by[] sorted by generation), or 0 if none. */
static uint64_t earliest_begin(struct window *const *by, size_t n, uint32_t gen)
{
	size_t lo = 0, hi = n;
	uint64_t begin = UINT64_MAX;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (by[mid]->g.generation < gen)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && by[lo]->g.generation == gen; lo++)
		begin = MIN(begin, by[lo]->begin);
	return begin == UINT64_MAX ? 0 : begin;
}

/*
 * The bounds each window may be trusted with. A window spans both of its
 * markers whatever their order (CPUs whose clocks disagree). A begin that
 * is no time (SEGMENT_WINDOW_UNKNOWN: derived from a marker never read
 * back) proves nothing: a reset happens after the one before it, so the
 * window begins where the previous generation's does, or at 0 without
 * one. Resolving by that begin instead would place an event of the new
 * map in a window that closed two generations back.
 */
static int bound_windows(struct stacktab *t)
{
	_cleanup_free_ struct window **by = NULL;
	bool unknown = false;

	for (size_t i = 0; i < t->nr_windows; i++) {
		struct window *w = &t->windows[i];

		w->begin = MIN(w->g.window_begin, w->g.window_end);
		w->end = MAX(w->g.window_begin, w->g.window_end);
		if (w->g.window_begin >= SEGMENT_WINDOW_UNKNOWN)
			unknown = true;
	}
	if (!unknown)
		return 0;
	by = malloc(sizeof(*by) * t->nr_windows);
	if (!by)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_windows; i++)
		by[i] = &t->windows[i];
	qsort(by, t->nr_windows, sizeof(*by), window_gen_cmp);
	/* in generation order: a previous generation's begin is final before it is used */
	for (size_t i = 0; i < t->nr_windows; i++) {
		struct window *w = by[i];

		if (w->g.window_begin < SEGMENT_WINDOW_UNKNOWN)
			continue;
		w->begin = w->g.prev_generation && w->g.prev_generation < w->g.generation ?
			earliest_begin(by, i, w->g.prev_generation) : 0;
	}
	return 0;
}

/*
 * Bound the windows, sort them by end, drop repeated ones, and find for
 * each window the later window (by end) of another reset that begins
 * first: an event in a window is ambiguous between resets exactly when
 * that one has begun by then. One pass from the end keeps the lowest
 * begin of the windows seen and the lowest begin among those of another
 * reset than that one, so that resolving an event takes constant time
 * after the binary search, whatever a file holds.
 */
static int sort_windows(struct stacktab *t)
{
	struct window *w = t->windows;
	size_t n = 0, best = SIZE_MAX, second = SIZE_MAX;
	int r;

	if (t->windows_sorted)
		return 0;
	r = bound_windows(t);
	if (r < 0)
		return r;
	if (t->nr_windows > 1)
		qsort(w, t->nr_windows, sizeof(*w), window_cmp);
	for (size_t i = 0; i < t->nr_windows; i++)
		if (!n || !same_generation(&w[n - 1].g, &w[i].g))
			w[n++] = w[i];
	t->nr_windows = n;
	t->windows_overlap = false;
	for (size_t i = 1; i < n; i++)
		if (w[i].begin <= w[i - 1].end)
			t->windows_overlap = true;
	for (size_t i = n; i-- > 0;) {
		w[i].other = best == SIZE_MAX || !same_reset(&w[best], &w[i]) ? best : second;
		if (best == SIZE_MAX || same_reset(&w[best], &w[i])) {
			if (best == SIZE_MAX || w[i].begin < w[best].begin)
				best = i;
		} else if (w[i].begin < w[best].begin) {
			second = best;
			best = i;
		} else if (second == SIZE_MAX || w[i].begin < w[second].begin) {
			second = i;
		}
	}
	t->windows_sorted = true;
	return 0;
}

static int resolved(struct stacktab *t, enum stacktab_kind kind, const struct tab_entry *te,
		    const struct stack_entry **ret_entry)
{
	t->stats.resolved[kind]++;
	if (ret_entry)
		*ret_entry = &te->e;
	return 1;
}

_printf_(4, 5)
static int unresolved(struct stacktab *t, enum stacktab_kind kind, const char **ret_reason,
		      const char *fmt, ...)
{
	va_list ap;

	t->stats.unresolved[kind]++;
	va_start(ap, fmt);
	(void)vsnprintf(t->reason, sizeof(t->reason), fmt, ap);
	va_end(ap);
	if (ret_reason)
		*ret_reason = t->reason;
	return 0;
}

static bool is_stack(const struct tab_entry *te)
{
	return te && !te->conflict && !(te->e.flags & SEGMENT_STACK_F_ABSENT);
}

/* The id in one known generation. */
static int resolve_in(struct stacktab *t, enum stacktab_kind kind, uint32_t generation, uint32_t id,
		      const struct stack_entry **ret_entry, const char **ret_reason)
{
	const struct tab_entry *te = lookup(t, generation, id);

	if (te && te->conflict)
		return unresolved(t, kind, ret_reason, "conflicting entries");
	if (!is_stack(te))
		return unresolved(t, kind, ret_reason, "id absent from generation %" PRIu32,
				  generation);
	return resolved(t, kind, te, ret_entry);
}

/* The id of an event that may belong to prev or to gen (inside a reset window). */
static int resolve_ambiguous(struct stacktab *t, uint32_t prev, uint32_t gen, uint32_t id,
			     const struct stack_entry **ret_entry, const char **ret_reason)
{
	const struct tab_entry *p = lookup(t, prev, id), *n = lookup(t, gen, id);
	const enum stacktab_kind kind = STACKTAB_KERNEL_ID;

	if ((p && p->conflict) || (n && n->conflict))
		return unresolved(t, kind, ret_reason, "conflicting entries");
	if (is_stack(p) && is_stack(n) && stacktab_frames_equal(&p->e, &n->e))
		return resolved(t, kind, p, ret_entry);
	/* Proven absent from the new map: the event can only have used the old one. */
	if (is_stack(p) && n && (n->e.flags & SEGMENT_STACK_F_ABSENT))
		return resolved(t, kind, p, ret_entry);
	return unresolved(t, kind, ret_reason,
			  "ambiguous between generations %" PRIu32 " and %" PRIu32, prev, gen);
}

/*
 * An event inside a lossless window, on the CPU that held one of its
 * markers: that marker orders it exactly (a CPU's events are in the order
 * their slots were reserved, and the stack lookup happens before the
 * next reservation there). Before the marker written ahead of the reset,
 * its id was in the old map when the map was last read; after the one
 * written once the reset was done, it is of the new map. Returns the
 * generation, or 0 when only the guard can tell.
 */
static uint32_t window_side(const struct segment_generation *g, uint32_t cpu, uint64_t ts)
{
	/* markers in order, the guard on both sides: anything else is not ours to trust */
	if (!g->guard || !g->prev_generation || cpu == SEGMENT_NO_CPU || g->guard > UINT64_MAX / 2 ||
	    g->window_begin > g->window_end || g->window_end - g->window_begin < 2 * g->guard)
		return 0;
	if (cpu == g->begin_cpu && ts < g->window_begin + g->guard)
		return g->prev_generation;
	if (cpu == g->end_cpu && ts > g->window_end - g->guard)
		return g->generation;
	return 0;
}

static int resolve_by_time(struct stacktab *t, uint32_t cpu, uint64_t ts, uint32_t id,
			   const struct stack_entry **ret_entry, const char **ret_reason)
{
	const struct window *w;
	uint32_t side;
	size_t lo = 0, hi, n;

	if (sort_windows(t) < 0)
		return unresolved(t, STACKTAB_KERNEL_ID, ret_reason, "out of memory");
	w = t->windows;
	n = t->nr_windows;

	/* First window that ends at or after ts. */
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w[mid].end < ts)
			lo = mid + 1;
		else
			hi = mid;
	}

	if (lo < n && w[lo].begin <= ts) {
		/*
		 * Windows of different resets never overlap when the daemon serializes
		 * resets; if they do, an event in both cannot be placed. Two windows of
		 * the same reset are one window.
		 */
		if (t->windows_overlap && w[lo].other != SIZE_MAX && w[w[lo].other].begin <= ts) {
			const struct window *o = &w[w[lo].other];

			return unresolved(t, STACKTAB_KERNEL_ID, ret_reason,
					  "ambiguous between generations %" PRIu32 " and %" PRIu32,
					  MIN(w[lo].g.prev_generation, o->g.prev_generation),
					  MAX(w[lo].g.generation, o->g.generation));
		}
		if (!w[lo].g.prev_generation)
			return resolve_in(t, STACKTAB_KERNEL_ID, w[lo].g.generation, id, ret_entry,
					  ret_reason);
		side = window_side(&w[lo].g, cpu, ts);
		if (side)
			return resolve_in(t, STACKTAB_KERNEL_ID, side, id, ret_entry, ret_reason);
		return resolve_ambiguous(t, w[lo].g.prev_generation, w[lo].g.generation, id,
					 ret_entry, ret_reason);
	}
	if (lo > 0)
		return resolve_in(t, STACKTAB_KERNEL_ID, w[lo - 1].g.generation, id, ret_entry,
				  ret_reason);
	/*
	 * Before the first window: the generation it replaced. A window without
	 * a previous generation (a map adopted at start) is the only map there
	 * is, so earlier events used it.
	 */
	return resolve_in(t, STACKTAB_KERNEL_ID, w[0].g.prev_generation ?: w[0].g.generation, id,
			  ret_entry, ret_reason);
}

int stacktab_resolve(struct stacktab *t, uint32_t cpu, uint64_t ts, enum stacktab_kind kind,
		     uint32_t id, const struct stack_entry **ret_entry, const char **ret_reason)
{
	assert(t);
	assert(kind < STACKTAB_KIND_MAX);

	if (kind == STACKTAB_DAEMON_REF)
		return resolve_in(t, kind, 0, id, ret_entry, ret_reason);

	if (cpu < t->nr_cpus && t->cpus[cpu].strict) {
		if (!t->cpus[cpu].current)
			return unresolved(t, kind, ret_reason, "no generation information");
		return resolve_in(t, kind, t->cpus[cpu].current, id, ret_entry, ret_reason);
	}
	if (!t->nr_windows)
		return unresolved(t, kind, ret_reason, "no generation information");
	return resolve_by_time(t, cpu, ts, id, ret_entry, ret_reason);
}

void stacktab_get_stats(const struct stacktab *t, struct stacktab_stats *ret)
{
	assert(t);
	assert(ret);
	*ret = t->stats;
}

size_t stacktab_size(const struct stacktab *t)
{
	assert(t);
	return t->entries.nr;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct tab_entry *x = *(const struct tab_entry *const *)a;
	const struct tab_entry *y = *(const struct tab_entry *const *)b;
	uint64_t kx = entry_key(x->e.generation, x->e.id), ky = entry_key(y->e.generation, y->e.id);

	return kx < ky ? -1 : kx > ky;
}

int stacktab_foreach(const struct stacktab *t,
		     int (*cb)(const struct stack_entry *e, bool conflict, void *userdata),
		     void *userdata)
{
	_cleanup_free_ const struct tab_entry **all = NULL;
	size_t n = 0;
	int r;

	assert(t);
	assert(cb);

	if (!t->entries.nr)
		return 0;
	all = malloc(sizeof(*all) * t->entries.nr);
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < t->entries.nr_slots; i++)
		if (t->entries.slots[i].val)
			all[n++] = (const struct tab_entry *)t->entries.slots[i].val;
	qsort(all, n, sizeof(*all), entry_cmp);
	for (size_t i = 0; i < n; i++) {
		r = cb(&all[i]->e, all[i]->conflict, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

static int order_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

int stacktab_foreach_generation(struct stacktab *t,
				int (*cb)(uint32_t cpu, const struct segment_generation *g,
					  void *userdata),
				void *userdata)
{
	_cleanup_free_ size_t *keep = NULL;
	size_t k = 0, charged = 0;
	int r;

	assert(t);
	assert(cb);

	/* the windows kept by sort_windows(), in the order added */
	r = sort_windows(t);
	if (r < 0)
		return r;
	r = budget_charge(&charged, (t->nr_windows + 1) * sizeof(*keep), "generation records");
	if (r < 0)
		return r;
	keep = malloc((t->nr_windows + 1) * sizeof(*keep));
	if (!keep) {
		budget_release_all(&charged);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nr_windows; i++)
		keep[i] = t->windows[i].order;
	qsort(keep, t->nr_windows, sizeof(*keep), order_cmp);
	keep[t->nr_windows] = SIZE_MAX;
	r = 0;
	for (size_t i = 0; i < t->nr_gens && r >= 0; i++) {
		if (t->gens[i].cpu == SEGMENT_NO_CPU) {
			if (keep[k] != i)
				continue;
			k++;
		}
		r = cb(t->gens[i].cpu, &t->gens[i].g, userdata);
	}
	budget_release_all(&charged);
	return r < 0 ? r : 0;
}
