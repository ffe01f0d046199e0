/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack table of a segment: the STACKS entry codec, and the resolver
 * that turns an event's stack reference into frames following the
 * generation rules of doc/segment-format.md. Resolution never guesses: an
 * id whose generation cannot be proven, or whose entries disagree, is
 * reported unresolved with the reason.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "budget.h"
#include "stacktab.h"
#include "util.h"

#define ENTRY_HDR_SIZE 16
#define KNOWN_FLAGS (SEGMENT_STACK_F_ABSENT | SEGMENT_STACK_F_TEXT)

int stacktab_encode(struct buf *b, const struct stack_entry *e)
{
	size_t need = ENTRY_HDR_SIZE;
	int r;

	if (e->flags & ~KNOWN_FLAGS)
		return -EINVAL;
	if ((e->flags & SEGMENT_STACK_F_ABSENT) && e->nr)
		return -EINVAL;
	if (e->nr && !(e->flags & SEGMENT_STACK_F_TEXT) && !e->ips)
		return -EINVAL;
	if (e->nr && (e->flags & SEGMENT_STACK_F_TEXT) && !e->text)
		return -EINVAL;

	if (e->flags & SEGMENT_STACK_F_TEXT) {
		for (uint16_t i = 0; i < e->nr; i++) {
			if (!e->text[i])
				return -EINVAL;
			need += strlen(e->text[i]) + 1;
		}
	} else
		need += (size_t)e->nr * 8;

	/* Reserve everything first: the appends below cannot fail, b is never half-written. */
	r = buf_reserve(b, need);
	if (r < 0)
		return r;
	(void)buf_append_u32(b, e->generation);
	(void)buf_append_u32(b, e->id);
	(void)buf_append_u32(b, e->refs);
	(void)buf_append_u16(b, e->nr);
	(void)buf_append_u16(b, e->flags);
	for (uint16_t i = 0; i < e->nr; i++) {
		if (e->flags & SEGMENT_STACK_F_TEXT)
			(void)buf_append(b, e->text[i], strlen(e->text[i]) + 1);
		else
			(void)buf_append_u64(b, e->ips[i]);
	}
	return 0;
}

int stacktab_decode(const void *payload, size_t len,
		    int (*cb)(const struct stack_entry *e, void *userdata), void *userdata)
{
	_cleanup_free_ uint64_t *ips = NULL;
	_cleanup_free_ const char **text = NULL;
	size_t ips_cap = 0, text_cap = 0;
	const uint8_t *p = payload, *end = p + len;
	int r;

	while (p < end) {
		struct stack_entry e = {};

		if ((size_t)(end - p) < ENTRY_HDR_SIZE)
			return -EBADMSG;
		e.generation = get_le32(p);
		e.id = get_le32(p + 4);
		e.refs = get_le32(p + 8);
		e.nr = get_le16(p + 12);
		e.flags = get_le16(p + 14);
		p += ENTRY_HDR_SIZE;

		if ((e.flags & SEGMENT_STACK_F_ABSENT) && e.nr)
			return -EBADMSG;
		if (e.nr > STACKTAB_MAX_DEPTH)
			return -EBADMSG;

		if (e.flags & SEGMENT_STACK_F_TEXT) {
			if (e.nr > text_cap) {
				const char **n = realloc(text, sizeof(*text) * e.nr);

				if (!n)
					return -ENOMEM;
				text = n;
				text_cap = e.nr;
			}
			for (uint16_t i = 0; i < e.nr; i++) {
				const uint8_t *nul = memchr(p, 0, (size_t)(end - p));

				if (!nul)
					return -EBADMSG;
				text[i] = (const char *)p;
				p = nul + 1;
			}
			e.text = text;
		} else {
			if ((size_t)(end - p) / 8 < e.nr)
				return -EBADMSG;
			if (e.nr > ips_cap) {
				uint64_t *n = realloc(ips, sizeof(*ips) * e.nr);

				if (!n)
					return -ENOMEM;
				ips = n;
				ips_cap = e.nr;
			}
			for (uint16_t i = 0; i < e.nr; i++, p += 8)
				ips[i] = get_le64(p);
			e.ips = ips;
		}

		r = cb(&e, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

int stacktab_frames_equal(const struct stack_entry *a, const struct stack_entry *b)
{
	const uint16_t mask = SEGMENT_STACK_F_ABSENT | SEGMENT_STACK_F_TEXT;

	if ((a->flags & mask) != (b->flags & mask) || a->nr != b->nr)
		return 0;
	for (uint16_t i = 0; i < a->nr; i++) {
		if (a->flags & SEGMENT_STACK_F_TEXT) {
			if (!streq(a->text[i], b->text[i]))
				return 0;
		} else if (a->ips[i] != b->ips[i])
			return 0;
	}
	return 1;
}

/* ---- the resolver ---- */

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

/* A generation window, and (once sorted) the window that may overlap it. */
struct window {
	struct segment_generation g;
	size_t order;		/* of its GENERATION record: the first of equal windows stays */
	size_t other;		/* sorted: a later window of another reset with the lowest begin; SIZE_MAX none */
};

struct stacktab {
	struct tab_entry **slots;	/* open addressing, linear probing; NULL = free */
	size_t nr_slots;		/* power of two, 0 before the first insert */
	size_t nr_entries;
	size_t bytes;			/* of the entries' copies */

	struct window *windows;
	size_t nr_windows;
	bool windows_sorted;
	bool windows_overlap;

	struct gen_record *gens;	/* every GENERATION record, in the order added */
	size_t nr_gens;

	struct cpu_state *cpus;
	size_t nr_cpus;

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
	for (size_t i = 0; i < t->nr_slots; i++)
		free(t->slots[i]);
	free(t->slots);
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

static size_t key_hash(uint64_t k)
{
	/* splitmix64 finalizer: ids are hash-table slots, generations small; spread both. */
	k ^= k >> 30;
	k *= UINT64_C(0xbf58476d1ce4e5b9);
	k ^= k >> 27;
	k *= UINT64_C(0x94d049bb133111eb);
	k ^= k >> 31;
	return (size_t)k;
}

static struct tab_entry **find_slot(struct tab_entry **slots, size_t nr_slots, uint64_t key)
{
	size_t mask = nr_slots - 1;

	for (size_t i = key_hash(key) & mask;; i = (i + 1) & mask) {
		struct tab_entry *te = slots[i];

		if (!te || entry_key(te->e.generation, te->e.id) == key)
			return &slots[i];
	}
}

static const struct tab_entry *lookup(const struct stacktab *t, uint32_t generation, uint32_t id)
{
	if (!t->nr_slots)
		return NULL;
	return *find_slot(t->slots, t->nr_slots, entry_key(generation, id));
}

static int grow(struct stacktab *t)
{
	size_t n = t->nr_slots ? t->nr_slots * 2 : 1024;
	struct tab_entry **slots;

	if (t->nr_entries * 2 < t->nr_slots)
		return 0;
	if (budget_charge(&t->charged, n * sizeof(*slots), "the stack table") < 0)
		return -ENOMEM;
	slots = calloc(n, sizeof(*slots));
	if (!slots) {
		budget_release(&t->charged, n * sizeof(*slots));
		return -ENOMEM;
	}
	budget_release(&t->charged, t->nr_slots * sizeof(*slots));
	for (size_t i = 0; i < t->nr_slots; i++) {
		struct tab_entry *te = t->slots[i];

		if (te)
			*find_slot(slots, n, entry_key(te->e.generation, te->e.id)) = te;
	}
	free(t->slots);
	t->slots = slots;
	t->nr_slots = n;
	return 0;
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
	struct tab_entry **slot, *te = NULL;
	size_t size = entry_size(e);
	int r;

	/* Whatever a segment claims, the table stays within its limits. */
	if (t->nr_entries >= STACKTAB_MAX_ENTRIES || t->bytes + size > STACKTAB_MAX_BYTES)
		return -EFBIG;
	r = grow(t);
	if (r < 0)
		return r;
	slot = find_slot(t->slots, t->nr_slots, entry_key(e->generation, e->id));
	te = *slot;
	if ((!te || (!te->conflict && !(e->flags & SEGMENT_STACK_F_ABSENT) &&
		     (te->e.flags & SEGMENT_STACK_F_ABSENT))) &&
	    budget_charge(&t->charged, size, "the stack table") < 0)
		return -ENOMEM;
	if (!te) {
		te = entry_dup(e);
		if (!te)
			return -ENOMEM;
		*slot = te;
		t->nr_entries++;
		t->bytes += size;
		return 0;
	}
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
		*slot = n;
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
	return stacktab_decode(payload, len, add_entry, t);
}

static int cpu_state(struct stacktab *t, uint32_t cpu, struct cpu_state **ret)
{
	if (cpu >= STACKTAB_MAX_CPUS)
		return -EINVAL;
	if (cpu >= t->nr_cpus) {
		size_t n = MAX((size_t)cpu + 1, t->nr_cpus * 2);
		struct cpu_state *c;

		n = MIN(n, (size_t)STACKTAB_MAX_CPUS);
		if (budget_charge(&t->charged, (n - t->nr_cpus) * sizeof(*c), "the stack table") < 0)
			return -ENOMEM;
		c = realloc(t->cpus, n * sizeof(*c));
		if (!c)
			return -ENOMEM;
		memset(c + t->nr_cpus, 0, (n - t->nr_cpus) * sizeof(*c));
		t->cpus = c;
		t->nr_cpus = n;
	}
	*ret = &t->cpus[cpu];
	return 0;
}

static int append(struct stacktab *t, void *pptr, size_t *nr, size_t size, const void *item)
{
	void **p = pptr;
	void *n;

	/* The capacity is implied by nr: 4, then doubled whenever nr reaches a power of two. */
	if (*nr == 0 || (*nr >= 4 && (*nr & (*nr - 1)) == 0)) {
		if (budget_charge(&t->charged, size * (*nr ? *nr : 4), "generation records") < 0)
			return -ENOMEM;
		n = realloc(*p, size * (*nr ? *nr * 2 : 4));
		if (!n)
			return -ENOMEM;
		*p = n;
	}
	memcpy((uint8_t *)*p + size * *nr, item, size);
	(*nr)++;
	return 0;
}

static bool same_generation(const struct segment_generation *a, const struct segment_generation *b)
{
	return a->generation == b->generation && a->prev_generation == b->prev_generation &&
	       a->window_begin == b->window_begin && a->window_end == b->window_end;
}

int stacktab_add_generation(struct stacktab *t, uint32_t cpu, const struct segment_generation *g)
{
	struct gen_record rec = { .cpu = cpu, .g = *g };
	struct window w = { .g = *g, .order = t->nr_gens, .other = SIZE_MAX };
	struct cpu_state *c = NULL;
	int r;

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
	r = append(t, &t->gens, &t->nr_gens, sizeof(rec), &rec);
	if (r < 0)
		return r;
	if (!c) {
		r = append(t, &t->windows, &t->nr_windows, sizeof(w), &w);
		if (r < 0) {
			t->nr_gens--;
			return r;
		}
		t->windows_sorted = false;
	} else if (!c->strict) {
		c->strict = true;
		c->current = g->prev_generation;
	}
	return 0;
}

int stacktab_cpu_boundary(struct stacktab *t, uint32_t cpu, uint32_t generation)
{
	struct cpu_state *c;
	int r;

	r = cpu_state(t, cpu, &c);
	if (r < 0)
		return r;
	c->strict = true;
	c->current = generation;
	return 0;
}

static int window_cmp(const void *a, const void *b)
{
	const struct window *wx = a, *wy = b;
	const struct segment_generation *x = &wx->g, *y = &wy->g;

	if (x->window_end != y->window_end)
		return x->window_end < y->window_end ? -1 : 1;
	if (x->window_begin != y->window_begin)
		return x->window_begin < y->window_begin ? -1 : 1;
	if (x->generation != y->generation)
		return x->generation < y->generation ? -1 : 1;
	if (x->prev_generation != y->prev_generation)
		return x->prev_generation < y->prev_generation ? -1 : 1;
	return wx->order < wy->order ? -1 : wx->order > wy->order;
}

/* Two windows of one reset: an event in both is placed all the same. */
static bool same_reset(const struct window *a, const struct window *b)
{
	return a->g.generation == b->g.generation && a->g.prev_generation == b->g.prev_generation;
}

/*
 * Sort the windows by end, drop repeated ones, and find for each window
 * the later window (by end) of another reset that begins first: an event
 * in a window is ambiguous between resets exactly when that one has begun
 * by then. One pass from the end keeps the lowest begin of the windows
 * seen and the lowest begin among those of another reset than that one.
 */
static void sort_windows(struct stacktab *t)
{
	struct window *w = t->windows;
	size_t n = 0, best = SIZE_MAX, second = SIZE_MAX;

	if (t->windows_sorted)
		return;
	if (t->nr_windows > 1)
		qsort(w, t->nr_windows, sizeof(*w), window_cmp);
	for (size_t i = 0; i < t->nr_windows; i++)
		if (!n || !same_generation(&w[n - 1].g, &w[i].g))
			w[n++] = w[i];
	t->nr_windows = n;
	t->windows_overlap = false;
	for (size_t i = 1; i < n; i++)
		if (w[i].g.window_begin <= w[i - 1].g.window_end)
			t->windows_overlap = true;
	for (size_t i = n; i-- > 0;) {
		w[i].other = best == SIZE_MAX || !same_reset(&w[best], &w[i]) ? best : second;
		if (best == SIZE_MAX || same_reset(&w[best], &w[i])) {
			if (best == SIZE_MAX || w[i].g.window_begin < w[best].g.window_begin)
				best = i;
		} else if (w[i].g.window_begin < w[best].g.window_begin) {
			second = best;
			best = i;
		} else if (second == SIZE_MAX || w[i].g.window_begin < w[second].g.window_begin) {
			second = i;
		}
	}
	t->windows_sorted = true;
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

static int resolve_by_time(struct stacktab *t, uint64_t ts, uint32_t id,
			   const struct stack_entry **ret_entry, const char **ret_reason)
{
	const struct window *ws;
	const struct segment_generation *w;
	size_t lo = 0, hi, n;

	sort_windows(t);
	ws = t->windows;
	n = t->nr_windows;

	/* First window that ends at or after ts. */
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ws[mid].g.window_end < ts)
			lo = mid + 1;
		else
			hi = mid;
	}

	if (lo < n && ws[lo].g.window_begin <= ts) {
		/*
		 * Windows of different resets never overlap when the daemon serializes
		 * resets; if they do, an event in both cannot be placed. Two windows of
		 * the same reset are one window.
		 */
		w = &ws[lo].g;
		if (t->windows_overlap && ws[lo].other != SIZE_MAX &&
		    ws[ws[lo].other].g.window_begin <= ts) {
			const struct segment_generation *o = &ws[ws[lo].other].g;

			return unresolved(t, STACKTAB_KERNEL_ID, ret_reason,
					  "ambiguous between generations %" PRIu32 " and %" PRIu32,
					  MIN(w->prev_generation, o->prev_generation),
					  MAX(w->generation, o->generation));
		}
		if (!w->prev_generation)
			return resolve_in(t, STACKTAB_KERNEL_ID, w->generation, id, ret_entry,
					  ret_reason);
		return resolve_ambiguous(t, w->prev_generation, w->generation, id, ret_entry,
					 ret_reason);
	}
	if (lo > 0)
		return resolve_in(t, STACKTAB_KERNEL_ID, ws[lo - 1].g.generation, id, ret_entry,
				  ret_reason);
	/*
	 * Before the first window: the generation it replaced. A window without
	 * a previous generation (a map adopted at start) is the only map there
	 * is, so earlier events used it.
	 */
	return resolve_in(t, STACKTAB_KERNEL_ID, ws[0].g.prev_generation ?: ws[0].g.generation, id,
			  ret_entry, ret_reason);
}

int stacktab_resolve(struct stacktab *t, uint32_t cpu, uint64_t ts, enum stacktab_kind kind,
		     uint32_t id, const struct stack_entry **ret_entry, const char **ret_reason)
{
	if (kind == STACKTAB_DAEMON_REF)
		return resolve_in(t, kind, 0, id, ret_entry, ret_reason);

	if (cpu < t->nr_cpus && t->cpus[cpu].strict) {
		if (!t->cpus[cpu].current)
			return unresolved(t, kind, ret_reason, "no generation information");
		return resolve_in(t, kind, t->cpus[cpu].current, id, ret_entry, ret_reason);
	}
	if (!t->nr_windows)
		return unresolved(t, kind, ret_reason, "no generation information");
	return resolve_by_time(t, ts, id, ret_entry, ret_reason);
}

void stacktab_get_stats(const struct stacktab *t, struct stacktab_stats *ret)
{
	*ret = t->stats;
}

size_t stacktab_size(const struct stacktab *t)
{
	return t->nr_entries;
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

	if (!t->nr_entries)
		return 0;
	all = malloc(sizeof(*all) * t->nr_entries);
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_slots; i++)
		if (t->slots[i])
			all[n++] = t->slots[i];
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

	/* the windows kept by sort_windows(), in the order added */
	sort_windows(t);
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
