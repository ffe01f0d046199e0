/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Allocations paired with their frees, in one pass (memory.h). Live
 * objects sit in a pool indexed by the one hash table (hashtab.h), which
 * never removes an entry: a freed object's slot stays, stale, until the
 * stale slots outnumber the live ones, when the index is rebuilt from the
 * live objects alone, so that it stays within twice the live set. A stale
 * slot is harmless: a candidate counts only when it is live and has the
 * key looked for.
 *
 * The curve has a fixed number of points per kind; when the span outgrows
 * them, neighbours merge and each point covers twice as long, so it is
 * built in one pass without knowing the span beforehand.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "memory-internal.h"

#define FIRST_WIDTH_NS UINT64_C(1000000)	/* 1 ms per point to start */
#define PAGE_BYTES UINT64_C(4096)

/* The field names, compared by address first: sources pass memory_fields' own pointers. */
static const char F_PTR[] = "ptr", F_BYTES[] = "bytes_alloc", F_NAME[] = "name", F_PFN[] = "pfn",
		  F_ORDER[] = "order";

const char *const memory_fields[] = { F_PTR, F_BYTES, F_NAME, F_PFN, F_ORDER, NULL };

enum op { OP_NONE, OP_ALLOC, OP_FREE };

struct memory *memory_free(struct memory *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->nr_kinds; i++)
		free(m->kinds[i].curve);
	free(m->kinds);
	free(m->stacks);
	strmap_free(m->keys);
	strmap_free(m->kind_names);
	strmap_free(m->site_names);
	free(m->sites);
	free(m->objs);
	free(m->spare);
	hashtab_done(&m->index);
	free(m->curve);
	free(m->losses);
	buf_done(&m->key);
	budget_release_all(&m->charged);
	free(m);
	return NULL;
}

struct memory *memory_new(const struct memory_options *o)
{
	_cleanup_(memory_freep) struct memory *m = NULL;

	assert(o);
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->o = *o;
	if (!m->o.churn_ns)
		m->o.churn_ns = 1000000000;
	if (!m->o.rows)
		m->o.rows = 60;
	m->nr_points = 2 * m->o.rows;
	m->width = FIRST_WIDTH_NS;
	m->keys = strmap_new();
	m->kind_names = strmap_new();
	if (m->o.callers) {
		m->site_names = strmap_new();
		if (!m->site_names)
			return NULL;
	}
	m->curve = calloc(m->nr_points, sizeof(*m->curve));
	if (!m->keys || !m->kind_names || !m->curve)
		return NULL;
	return steal_ptr(m);
}

static int index_add(struct memory *m, uint64_t h, size_t idx)
{
	int r;

	if ((m->index.nr + 1) > m->index.nr_slots / 2) {
		r = budget_charge(&m->charged, MAX(m->index.nr_slots, (size_t)64) *
					       sizeof(struct hashtab_slot), "the live allocations");
		if (r < 0)
			return r;
	}
	return hashtab_add(&m->index, h, idx + 1);
}

static uint64_t obj_hash(int cls, uint64_t key)
{
	return hash_u64(key ^ ((uint64_t)cls << 62));
}

/* Rebuild the index from the live objects when stale slots outnumber them. */
static void index_compact(struct memory *m)
{
	if (m->index.nr < 2 * m->live + 1024)
		return;
	hashtab_clear(&m->index);
	for (size_t i = 0; i < m->nr_objs; i++) {
		const struct mem_obj *o = &m->objs[i];

		if (o->live)	/* room is there: fewer entries than before */
			(void)hashtab_add(&m->index, obj_hash(o->cls, o->key), i + 1);
	}
}

/*
 * The live object of key, or NULL. *ret_stale (if not NULL) is set to a
 * slot of the same hash that no longer names its object (freed, or its
 * index reused for another key), or NULL: a new object of this key takes
 * it over, so that a pointer allocated and freed again and again keeps
 * one slot rather than leaving a chain of stale ones to walk.
 */
static struct mem_obj *obj_find(struct memory *m, int cls, uint64_t key,
				struct hashtab_slot **ret_stale)
{
	uint64_t h = obj_hash(cls, key);
	struct hashtab_slot *s, *stale = NULL;

	hashtab_foreach_candidate(s, &m->index, h) {
		struct mem_obj *o = &m->objs[s->val - 1];

		if (o->live && o->key == key && o->cls == cls)
			return o;
		if (!stale && (!o->live || obj_hash(o->cls, o->key) != h))
			stale = s;
	}
	if (ret_stale)
		*ret_stale = stale;
	return NULL;
}

/* Before live figures change: keep what they were at each moment set since they last changed. */
static void touch(const struct memory *m, struct mem_snap *snap, const struct mem_live *v)
{
	for (int k = 0; k < MEM_MOMENT_MAX; k++)
		if (m->moment[k].set && snap[k].version != m->moment[k].version)
			snap[k] = (struct mem_snap){ *v, m->moment[k].version };
}

static void live_add(struct mem_live *v, const struct mem_obj *o, uint64_t t0, int sign)
{
	double t = (double)(o->t - t0);

	if (sign > 0) {
		v->bytes += o->bytes;
		v->objs++;
		v->tsum += t;
	} else {
		v->bytes -= o->bytes;
		v->objs--;
		v->tsum -= t;
		if (!v->objs)
			v->tsum = 0;	/* no rounding left over */
	}
}

static void point_note(struct mem_point *p, const struct mem_live *v)
{
	p->end_bytes = v->bytes;
	p->end_objs = v->objs;
	p->max_bytes = MAX(p->max_bytes, v->bytes);
}

/* Add (sign 1) or take away (-1) a selected object from its stack, kind and the total. */
static void account(struct memory *m, const struct mem_obj *o, int sign)
{
	struct mem_stack *st = &m->stacks[o->stack];
	struct mem_kind *k = &m->kinds[o->kind];

	touch(m, st->snap, &st->live);
	touch(m, k->snap, &k->live);
	live_add(&st->live, o, m->t0, sign);
	live_add(&k->live, o, m->t0, sign);
	live_add(&m->total, o, m->t0, sign);
	k->max_bytes = MAX(k->max_bytes, k->live.bytes);
	point_note(&k->curve[m->cur], &k->live);
	point_note(&m->curve[m->cur], &m->total);
	if (sign > 0 && m->loss_open)
		m->uncertain += o->bytes;
	else if (sign < 0 && m->last_loss_t && o->t <= m->last_loss_t)
		m->uncertain -= MIN(m->uncertain, o->bytes);
}

void mem_moment_set(struct memory *m, int k)
{
	struct mem_moment *mo = &m->moment[k];

	*mo = (struct mem_moment){ .set = true, .t = m->t_last, .ts = m->ts_last,
				   .wall = m->wall_known ? m->wall_last : 0, .total = m->total,
				   .uncertain = m->uncertain, .version = mo->version + 1 };
}

/* Tell the hook, if any, that the selected o ended so (by s, NULL when live). */
static int tell_end(struct memory *m, const struct mem_obj *o, enum memory_end end,
		    const struct sample *s)
{
	const struct memory_hook *h = m->o.hook;
	struct memory_pair p;

	if (!h || !h->pair || !o->selected)
		return 0;
	p = (struct memory_pair){ .end = end, .end_sample = s, .pages = o->cls == MEM_PAGES,
				  .key = o->key, .bytes = o->bytes, .cookie = o->cookie,
				  .kind = strmap_get(m->kind_names, m->kinds[o->kind].name, NULL) };
	return h->pair(&p, h->userdata);
}

/* Take o out of the live set: freed at t (freed), or its free was lost. */
static int obj_remove(struct memory *m, struct mem_obj *o, uint64_t t, bool freed)
{
	int r;

	if (o->selected) {
		account(m, o, -1);
		if (freed && t - o->t <= m->o.churn_ns) {
			m->stacks[o->stack].churn++;
			m->stacks[o->stack].churn_bytes += o->bytes;
		}
	}
	o->live = false;
	m->live--;
	r = BUDGET_GREEDY_REALLOC(&m->charged, m->spare, m->cap_spare, m->nr_spare + 1,
				  "the live allocations");
	if (r < 0)
		return r;
	m->spare[m->nr_spare++] = (uint32_t)(o - m->objs);
	return 0;
}

/* Merge neighbouring points of curve c: each then covers twice as long. */
static void curve_halve(struct mem_point *c, size_t n, size_t cur)
{
	for (size_t i = 0; i < n / 2; i++) {
		struct mem_point a = c[2 * i], b = c[2 * i + 1];

		if (2 * i + 1 <= cur)
			a = (struct mem_point){ b.end_bytes, b.end_objs,
						MAX(a.max_bytes, b.max_bytes) };
		c[i] = a;
	}
	memset(c + n / 2, 0, (n - n / 2) * sizeof(*c));
}

static void curve_step(struct mem_point *c, size_t i)
{
	c[i] = (struct mem_point){ c[i - 1].end_bytes, c[i - 1].end_objs, c[i - 1].end_bytes };
}

/* Move the curves' current point to time t. */
static void curve_advance(struct memory *m, uint64_t t)
{
	uint64_t b = (t - m->t0) / m->width;

	while (b >= m->nr_points) {
		curve_halve(m->curve, m->nr_points, m->cur);
		for (size_t k = 0; k < m->nr_kinds; k++)
			curve_halve(m->kinds[k].curve, m->nr_points, m->cur);
		m->cur /= 2;
		m->width *= 2;
		b = (t - m->t0) / m->width;
	}
	while (m->cur < b) {
		m->cur++;
		curve_step(m->curve, m->cur);
		for (size_t k = 0; k < m->nr_kinds; k++)
			curve_step(m->kinds[k].curve, m->cur);
	}
}

/* The numeric field name of s; false when it has none. */
static bool field_u64(const struct sample *s, const char *name, uint64_t *ret)
{
	for (size_t i = 0; i < s->nr_fields; i++)
		if (s->fields[i].name == name || streq(s->fields[i].name, name)) {
			char *end;

			if (i < 32 && (s->numeric_fields >> i) & 1) {
				*ret = s->numbers[i];
				return true;
			}
			errno = 0;
			*ret = strtoull(s->fields[i].value, &end, 0);
			return !errno && end != s->fields[i].value && !*end;
		}
	return false;
}

static const char *field_str(const struct sample *s, const char *name)
{
	for (size_t i = 0; i < s->nr_fields; i++)
		if (s->fields[i].name == name || streq(s->fields[i].name, name))
			return s->fields[i].value;
	return NULL;
}

/* What s does to memory, of which class. */
static enum op classify(const struct sample *s, int *ret_cls)
{
	static const struct {
		const char *name;
		enum op op;
		int cls;
	} events[] = {
		{ "kmalloc", OP_ALLOC, MEM_SLAB },
		{ "kmem_cache_alloc", OP_ALLOC, MEM_SLAB },
		{ "kmalloc_node", OP_ALLOC, MEM_SLAB },		/* before Linux 6.1 */
		{ "kmem_cache_alloc_node", OP_ALLOC, MEM_SLAB },
		{ "kfree", OP_FREE, MEM_SLAB },
		{ "kmem_cache_free", OP_FREE, MEM_SLAB },
		{ "mm_page_alloc", OP_ALLOC, MEM_PAGES },
		{ "mm_page_free", OP_FREE, MEM_PAGES },
		{ "mm_page_free_batched", OP_FREE, MEM_PAGES },
	};

	if (s->no_event || (s->system && *s->system && !streq(s->system, "kmem")))
		return OP_NONE;
	for (size_t i = 0; i < ARRAY_SIZE(events); i++)
		if (streq(s->event, events[i].name)) {
			*ret_cls = events[i].cls;
			return events[i].op;
		}
	return OP_NONE;
}

static bool selected(const struct memory *m, const struct sample *s)
{
	const char *e = m->o.event, *colon;

	if (m->o.pid >= 0 && s->pid != m->o.pid)
		return false;
	if (m->o.comm && (!s->comm || !streq(s->comm, m->o.comm)))
		return false;
	if (!e)
		return true;
	colon = strchr(e, ':');
	if (colon)
		return s->system && !strncmp(e, s->system, (size_t)(colon - e)) &&
		       !s->system[colon - e] && streq(colon + 1, s->event);
	return streq(e, s->event);
}

/* The index of the stack of s ("EVENT;inner;...;outer"), made if new. */
static int stack_of(struct memory *m, const struct sample *s, uint32_t *ret)
{
	char name[SAMPLE_FRAME_NAME_MAX];
	size_t idx;
	int r;

	buf_reset(&m->key);
	r = buf_append(&m->key, s->event, strlen(s->event));
	for (size_t i = 0; r >= 0 && i < s->nr_frames; i++) {
		const char *f = sample_frame_name(&s->frames[i], name, sizeof(name));

		r = buf_append(&m->key, ";", 1);
		if (r >= 0)
			r = buf_append(&m->key, f, strlen(f));
	}
	if (r >= 0 && !s->nr_frames)
		r = buf_append(&m->key, ";[no stack]", strlen(";[no stack]"));
	if (r < 0)
		return r;
	r = strmap_intern(m->keys, (const char *)m->key.data, m->key.len, &idx);
	if (r < 0)
		return r;
	if (idx == m->nr_stacks) {
		r = budget_charge(&m->charged, m->key.len + 64, "the allocation stacks");
		if (r >= 0)
			r = BUDGET_GREEDY_REALLOC(&m->charged, m->stacks, m->cap_stacks, m->nr_stacks + 1,
						  "the allocation stacks");
		if (r < 0)
			return r;
		m->stacks[m->nr_stacks++] = (struct mem_stack){ .key = idx };
	}
	*ret = (uint32_t)idx;
	return 0;
}

/* The index of the kind of an allocation of s (cache name, kmalloc size, page order). */
static int kind_of(struct memory *m, const struct sample *s, int cls, uint64_t bytes,
		   uint64_t order, uint32_t *ret)
{
	const char *name = field_str(s, F_NAME);
	char text[96];
	size_t idx;
	int r;

	if (cls == MEM_PAGES)
		(void)snprintf(text, sizeof(text), "pages-order%" PRIu64, order);
	else if (name && *name && !startswith(s->event, "kmalloc"))
		(void)snprintf(text, sizeof(text), "%s", name);
	else
		(void)snprintf(text, sizeof(text), "%s-%" PRIu64,
			       startswith(s->event, "kmalloc") ? "kmalloc" : "cache", bytes);
	r = strmap_intern(m->kind_names, text, strlen(text), &idx);
	if (r < 0)
		return r;
	if (idx == m->nr_kinds) {
		struct mem_kind *k;

		r = budget_charge(&m->charged, m->nr_points * sizeof(struct mem_point) + 128,
				  "the allocation kinds");
		if (r >= 0)
			r = BUDGET_GREEDY_REALLOC(&m->charged, m->kinds, m->cap_kinds, m->nr_kinds + 1,
						  "the allocation kinds");
		if (r < 0)
			return r;
		k = &m->kinds[m->nr_kinds];
		*k = (struct mem_kind){ .name = idx, .cls = cls };
		k->curve = calloc(m->nr_points, sizeof(*k->curve));
		if (!k->curve)
			return -ENOMEM;
		m->nr_kinds++;
	}
	*ret = (uint32_t)idx;
	return 0;
}

/* Count a slab allocation of bytes under the call site of s. */
static int site_count(struct memory *m, const struct sample *s, uint64_t bytes)
{
	const char *name = s->call_site ?: "[unknown]";
	size_t idx;
	int r;

	r = strmap_intern(m->site_names, name, strlen(name), &idx);
	if (r < 0)
		return r;
	if (idx == m->nr_sites) {
		r = budget_charge(&m->charged, strlen(name) + 64, "the call sites");
		if (r >= 0)
			r = BUDGET_GREEDY_REALLOC(&m->charged, m->sites, m->cap_sites, m->nr_sites + 1,
						  "the call sites");
		if (r < 0)
			return r;
		m->sites[m->nr_sites++] = (struct mem_site){ .name = idx };
	}
	m->sites[idx].allocs++;
	m->sites[idx].bytes += bytes;
	return 0;
}

static int alloc(struct memory *m, const struct sample *s, int cls, uint64_t t)
{
	uint64_t key, bytes, order = 0, idx;
	struct hashtab_slot *stale;
	struct mem_obj *o;
	int r;

	if (cls == MEM_PAGES) {
		if (!field_u64(s, F_PFN, &key) || key == UINT64_MAX ||
		    !field_u64(s, F_ORDER, &order) || order > 20)
			return 0;	/* a failed allocation */
		bytes = PAGE_BYTES << order;
	} else if (!field_u64(s, F_PTR, &key) || key <= 16 ||
		   !field_u64(s, F_BYTES, &bytes)) {
		return 0;		/* failed (NULL), or not of a known format */
	}
	m->allocs[cls]++;
	o = obj_find(m, cls, key, NULL);
	if (o) {
		/* allocated again: the free in between was not recorded */
		if (o->selected) {
			m->lost_frees++;
			m->lost_free_bytes += o->bytes;
			m->stacks[o->stack].lost_frees++;
		}
		r = tell_end(m, o, MEMORY_FREE_LOST, s);
		if (r >= 0)
			r = obj_remove(m, o, t, false);
		if (r < 0)
			return r;
	}
	index_compact(m);
	(void)obj_find(m, cls, key, &stale);	/* a slot of this key's last object, now dead */
	if (m->nr_spare) {
		idx = m->spare[--m->nr_spare];
	} else {
		r = BUDGET_GREEDY_REALLOC(&m->charged, m->objs, m->cap_objs, m->nr_objs + 1,
					  "the live allocations");
		if (r < 0)
			return r;
		idx = m->nr_objs++;
	}
	o = &m->objs[idx];
	*o = (struct mem_obj){ .key = key, .t = t, .bytes = bytes, .cls = (uint8_t)cls,
			       .live = true, .selected = selected(m, s) };
	m->live++;
	if (stale) {
		stale->val = idx + 1;		/* same hash: the slot names the new object */
	} else {
		r = index_add(m, obj_hash(cls, key), idx);
		if (r < 0) {
			o->live = false;
			m->live--;
			return r;
		}
	}
	if (!o->selected)
		return 0;
	m->selected++;
	r = stack_of(m, s, &o->stack);
	if (r >= 0)
		r = kind_of(m, s, cls, bytes, order, &o->kind);
	if (r >= 0 && m->o.callers && cls == MEM_SLAB)
		r = site_count(m, s, bytes);
	if (r < 0) {
		o->selected = false;
		return r;
	}
	m->stacks[o->stack].allocs++;
	m->stacks[o->stack].alloc_bytes += bytes;
	account(m, o, 1);
	if (m->total.bytes > m->moment[MEM_PEAK].total.bytes || !m->moment[MEM_PEAK].set)
		mem_moment_set(m, MEM_PEAK);
	if (m->o.hook && m->o.hook->alloc)
		return m->o.hook->alloc(s, m->o.hook->userdata, &o->cookie);
	return 0;
}

static int release(struct memory *m, const struct sample *s, int cls, uint64_t t)
{
	uint64_t key;
	struct mem_obj *o;
	int r;

	if (!field_u64(s, cls == MEM_PAGES ? F_PFN : F_PTR, &key) || (cls == MEM_SLAB && key <= 16))
		return 0;	/* kfree(NULL) */
	m->frees[cls]++;
	o = obj_find(m, cls, key, NULL);
	if (!o) {
		m->unknown_frees[cls]++;	/* allocated before what was read */
		if (m->o.hook && m->o.hook->unknown_free)
			return m->o.hook->unknown_free(s, cls == MEM_PAGES, key,
						       m->o.hook->userdata);
		return 0;
	}
	r = tell_end(m, o, MEMORY_FREED, s);
	if (r < 0)
		return r;
	return obj_remove(m, o, t, true);
}

/*
 * Events were lost (by a CPU before s, between two recordings, or somewhere
 * in the segment of s): every live byte is uncertain, and with a segment's
 * loss, every one allocated until a later segment.
 */
static int note_loss(struct memory *m, const struct sample *s, uint64_t t,
		     enum mem_loss_kind kind, unsigned int cpu, long long lost)
{
	struct mem_loss *l;
	int r;

	m->all_losses++;
	m->uncertain = m->total.bytes;
	if (kind == MEM_LOSS_SEGMENT) {
		m->loss_open = true;
		m->loss_serial = s->origin->serial;
		m->last_loss_t = UINT64_MAX;
	} else if (!m->loss_open) {
		m->last_loss_t = MAX(t, (uint64_t)1) - 1;	/* what came before s */
	}
	if (m->nr_losses >= MEM_MAX_LOSSES)
		return 0;
	r = BUDGET_GREEDY_REALLOC(&m->charged, m->losses, m->cap_losses, m->nr_losses + 1,
				  "the event losses");
	if (r < 0)
		return r;
	l = &m->losses[m->nr_losses++];
	*l = (struct mem_loss){ .t = t, .ts = s->ts, .wall = s->wall_ns, .cpu = cpu, .lost = lost,
				.live_bytes = m->total.bytes, .kind = kind };
	if (kind == MEM_LOSS_SEGMENT) {
		const char *name = strrchr(s->origin->path, '/');

		(void)snprintf(l->segment, sizeof(l->segment), "%s",
			       name ? name + 1 : s->origin->path);
	}
	return 0;
}

int memory_segment_loss(struct memory *m, const struct sample *s, unsigned int cpu,
			uint64_t lost)
{
	uint64_t t = 0;

	assert(m);
	assert(s);
	assert(s->origin);
	if (m->started)
		t = MAX(m->t_last, m->wall_known ? s->wall_ns : s->ts);
	return note_loss(m, s, t, MEM_LOSS_SEGMENT, cpu, lost > LLONG_MAX ? -1 : (long long)lost);
}

/* A new boot: no pair crosses it, so what was live is dropped (and counted). */
static int new_boot(struct memory *m)
{
	for (size_t i = 0; i < m->nr_objs; i++) {
		struct mem_obj *o = &m->objs[i];
		int r;

		if (!o->live)
			continue;
		if (o->selected) {
			m->dropped_objs++;
			m->dropped_bytes += o->bytes;
		}
		r = tell_end(m, o, MEMORY_LIVE, NULL);
		if (r >= 0)
			r = obj_remove(m, o, m->t_last, false);
		if (r < 0)
			return r;
	}
	hashtab_clear(&m->index);
	m->last_loss_t = 0;
	m->loss_open = false;
	m->uncertain = 0;
	return 0;
}

/* Where s was recorded: a new boot or recording is noted. */
static int origin(struct memory *m, const struct sample *s, uint64_t t)
{
	const struct sample_origin *o = s->origin;
	int r;

	if (!o || (o == m->last_origin && o->serial == m->last_serial))
		return 0;		/* the segment of the last sample */
	m->last_origin = o;
	m->last_serial = o->serial;
	if (m->loss_open && o->serial > m->loss_serial) {
		/* past the segment that lost events somewhere: from here on, pairs are certain */
		m->loss_open = false;
		m->last_loss_t = MAX(t, (uint64_t)1) - 1;
	}
	if (!m->boots || strncmp(m->boot_id, o->boot_id, sizeof(m->boot_id) - 1)) {
		if (m->boots) {
			r = new_boot(m);
			if (r < 0)
				return r;
		}
		m->boots++;
		(void)snprintf(m->boot_id, sizeof(m->boot_id), "%s", o->boot_id);
		(void)snprintf(m->recording_id, sizeof(m->recording_id), "%s", o->recording_id);
		return 0;
	}
	if (strncmp(m->recording_id, o->recording_id, sizeof(m->recording_id) - 1)) {
		/* the same boot, recorded again: what happened in between is not there */
		(void)snprintf(m->recording_id, sizeof(m->recording_id), "%s", o->recording_id);
		return note_loss(m, s, t, MEM_LOSS_RECORDING, s->cpu, 0);
	}
	return 0;
}

/* Whether s lies past a moment given as at (0: none) of the trace clock if trace. */
static bool past(const struct sample *s, uint64_t at, bool trace)
{
	if (!at)
		return false;
	return trace ? s->ts > at : s->wall_ns > at;
}

int memory_add(struct memory *m, const struct sample *s)
{
	enum op op;
	uint64_t t;
	int cls = MEM_SLAB, r;

	assert(m);
	assert(s);
	op = classify(s, &cls);
	if (op == OP_NONE && !s->lost_before)
		return 0;
	if (!m->started) {
		/* wall-clock time when known: it goes on across boots, the trace clock does not */
		m->wall_known = s->wall_ns != 0;
		m->started = true;
		m->t0 = m->t_last = m->wall_known ? s->wall_ns : s->ts;
		m->ts0 = s->ts;
	}
	t = m->wall_known ? (s->wall_ns ?: m->t_last) : s->ts;
	t = MAX(t, m->t_last);		/* a clock pair's step back: keep time monotonic */
	if (!m->moment[MEM_AT].set && past(s, m->o.at, m->o.at_trace))
		mem_moment_set(m, MEM_AT);
	if (!m->moment[MEM_BASE].set && past(s, m->o.baseline, m->o.baseline_trace))
		mem_moment_set(m, MEM_BASE);
	m->t_last = t;
	m->ts_last = s->ts;
	m->wall_last = s->wall_ns;
	curve_advance(m, t);
	r = origin(m, s, t);
	if (r >= 0 && s->lost_before)
		r = note_loss(m, s, t, MEM_LOSS_CPU, s->cpu, s->lost_before);
	if (r < 0)
		return r;
	switch (op) {
	case OP_ALLOC:
		return alloc(m, s, cls, t);
	case OP_FREE:
		return release(m, s, cls, t);
	default:
		return 0;
	}
}

int memory_end_live(struct memory *m)
{
	assert(m);
	for (size_t i = 0; i < m->nr_objs; i++) {
		int r;

		if (!m->objs[i].live)
			continue;
		r = tell_end(m, &m->objs[i], MEMORY_LIVE, NULL);
		if (r < 0)
			return r;
	}
	return 0;
}

uint64_t memory_allocations(const struct memory *m)
{
	assert(m);
	return m->allocs[MEM_SLAB] + m->allocs[MEM_PAGES];
}

enum memory_verdict memory_check(const struct memory *m)
{
	assert(m);
	if (!memory_allocations(m))
		return MEMORY_NO_ALLOCATIONS;
	if (m->allocs[MEM_SLAB] && !m->frees[MEM_SLAB])
		return MEMORY_NO_SLAB_FREES;
	if (m->allocs[MEM_PAGES] && !m->frees[MEM_PAGES])
		return MEMORY_NO_PAGE_FREES;
	if (!m->selected)
		return MEMORY_NOTHING_SELECTED;
	return MEMORY_OK;
}
