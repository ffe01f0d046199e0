/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the stack-map module remembers: stacks (immutable once created,
 * shared between the generations that hold them, freed with their last
 * user), each generation's slots sorted by id (the union of its
 * snapshots), the merge of a snapshot into them and the consistency check
 * that tells a reset nobody announced, and the list of generations with
 * its bounds (records kept, contents kept) and the markers that date them.
 */
#include "stackmap-internal.h"
#include "util.h"

uint64_t sm_sat_sub(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static void stack_put(struct stackmap *sm, struct sm_stack *s)
{
	if (s && --s->users == 0) {
		free(s);
		sm->counters.stored_stacks--;
	}
}

void sm_slots_clear(struct stackmap *sm, struct sm_slots *s)
{
	for (size_t i = 0; i < s->n; i++)
		stack_put(sm, s->v[i].stack);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static const struct sm_slot *slots_find(const struct sm_slots *s, uint32_t id)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].id < id)
			lo = mid + 1;
		else if (s->v[mid].id > id)
			hi = mid;
		else
			return &s->v[mid];
	}
	return NULL;
}

/*
 * Same stack? Text and address forms of one stack cannot be compared here
 * (symbolizing needs the segment's kallsyms), so across forms only the
 * depth is compared: the map is read as text only when the binary export
 * is busy or missing.
 */
static bool stack_equal_raw(const struct sm_stack *s, const struct stackmap_export *sn,
			    const struct stackmap_export_entry *e)
{
	const uint8_t *d = sn->data.data + e->off;

	if (s->nr != e->nr)
		return false;
	if (!!(s->flags & SEGMENT_STACK_F_TEXT) != sn->text)
		return true;
	if (!sn->text)
		return memcmp(s->ips, d, (size_t)e->nr * sizeof(uint64_t)) == 0;
	for (uint32_t i = 0; i < e->nr; i++) {
		size_t l = strlen((const char *)d);

		if (strcmp(s->text[i], (const char *)d) != 0)
			return false;
		d += l + 1;
	}
	return true;
}

/* Only for sharing between generations: same form, same frames. */
static bool stack_same_form_equal(const struct sm_stack *s, const struct stackmap_export *sn,
				  const struct stackmap_export_entry *e)
{
	return !!(s->flags & SEGMENT_STACK_F_TEXT) == sn->text && stack_equal_raw(s, sn, e);
}

static struct sm_stack *stack_new(struct stackmap *sm, const struct stackmap_export *sn,
				  const struct stackmap_export_entry *e)
{
	const uint8_t *d = sn->data.data + e->off;
	struct sm_stack *s;
	size_t size = sizeof(*s);

	if (sn->text)
		size += (size_t)e->nr * sizeof(char *) + e->len;
	else
		size += (size_t)e->nr * sizeof(uint64_t);
	s = malloc(size);
	if (!s)
		return NULL;
	s->users = 1;
	s->nr = (uint16_t)e->nr;
	s->flags = sn->text ? SEGMENT_STACK_F_TEXT : 0;
	s->ips = NULL;
	s->text = NULL;
	if (sn->text) {
		char *p;

		s->text = (char **)(s + 1);
		p = (char *)(s->text + e->nr);
		memcpy(p, d, e->len);
		for (uint32_t i = 0; i < e->nr; i++) {
			s->text[i] = p;
			p += strlen(p) + 1;
		}
	} else {
		s->ips = (uint64_t *)(s + 1);
		memcpy(s->ips, d, (size_t)e->nr * sizeof(uint64_t));
	}
	sm->counters.stored_stacks++;
	return s;
}

/*
 * Merge a snapshot into slots (assumed consistent with it): known ids get
 * the new reference count, new ids a stack, shared with share (another
 * generation) when it holds the same stack under the same id.
 */
int sm_slots_merge(struct stackmap *sm, struct sm_slots *s, const struct stackmap_export *sn,
		       const struct sm_slots *share)
{
	struct sm_slot *v;
	size_t i = 0, j = 0, k = 0, added = 0;

	while (j < sn->n) {
		if (i < s->n && s->v[i].id < sn->v[j].id) {
			i++;
		} else if (i < s->n && s->v[i].id == sn->v[j].id) {
			s->v[i].refs = sn->v[j].refs;
			i++;
			j++;
		} else {
			added++;
			j++;
		}
	}
	if (!added)
		return 0;

	v = malloc((s->n + added) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	i = j = 0;
	while (i < s->n || j < sn->n) {
		const struct stackmap_export_entry *e;
		const struct sm_slot *o;
		struct sm_stack *st;

		if (j >= sn->n || (i < s->n && s->v[i].id < sn->v[j].id)) {
			v[k++] = s->v[i++];
			continue;
		}
		if (i < s->n && s->v[i].id == sn->v[j].id) {
			v[k++] = s->v[i++];
			j++;
			continue;
		}
		e = &sn->v[j++];
		o = share ? slots_find(share, e->id) : NULL;
		if (o && stack_same_form_equal(o->stack, sn, e)) {
			st = o->stack;
			st->users++;
		} else {
			st = stack_new(sm, sn, e);
			if (!st) {
				/* Keep what is merged so far consistent: drop the new stacks. */
				for (size_t x = 0; x < k; x++)
					if (!slots_find(s, v[x].id))
						stack_put(sm, v[x].stack);
				free(v);
				return -ENOMEM;
			}
		}
		v[k++] = (struct sm_slot){ .id = e->id, .refs = e->refs, .stack = st };
	}
	free(s->v);
	s->v = v;
	s->n = k;
	return 0;
}

/* Does the snapshot agree with what the generation holds? */
bool sm_slots_consistent(const struct sm_slots *s, const struct stackmap_export *sn)
{
	size_t i = 0, j = 0;

	while (i < s->n) {
		while (j < sn->n && sn->v[j].id < s->v[i].id)
			j++;
		if (j >= sn->n || sn->v[j].id != s->v[i].id)
			return false;		/* vanished */
		if (!stack_equal_raw(s->v[i].stack, sn, &sn->v[j]))
			return false;		/* changed */
		i++;
		j++;
	}
	return true;
}

const struct sm_gen *sm_gen_cur_const(const struct stackmap *sm)
{
	return sm->nr_gens ? &sm->gens[sm->nr_gens - 1] : NULL;
}

struct sm_gen *sm_gen_cur(struct stackmap *sm)
{
	return sm->nr_gens ? &sm->gens[sm->nr_gens - 1] : NULL;
}

int sm_gen_append(struct stackmap *sm, struct sm_gen **ret)
{
	if (sm->nr_gens == MAX_GENERATION_RECORDS) {
		/* Forget the oldest quarter of the generation records. */
		size_t drop = MAX_GENERATION_RECORDS / 4;

		for (size_t i = 0; i < drop; i++)
			sm_slots_clear(sm, &sm->gens[i].slots);
		memmove(sm->gens, sm->gens + drop, (sm->nr_gens - drop) * sizeof(*sm->gens));
		sm->nr_gens -= drop;
		sm->base += (uint32_t)drop;
	}
	if (GREEDY_REALLOC(sm->gens, sm->cap_gens, sm->nr_gens + 1) < 0)
		return -ENOMEM;
	*ret = &sm->gens[sm->nr_gens++];
	**ret = (struct sm_gen){ 0 };
	return 0;
}

void sm_enforce_kept(struct stackmap *sm)
{
	size_t kept = 0;

	for (size_t i = sm->nr_gens; i-- > 0;) {
		struct sm_gen *g = &sm->gens[i];

		if (g->dropped)
			continue;
		if (++kept > STACKMAP_MAX_KEPT_GENERATIONS) {
			sm_slots_clear(sm, &g->slots);
			g->dropped = true;
		}
	}
}

static bool marker_ts(const struct stackmap *sm, uint64_t seq, uint64_t *ret)
{
	bool found = false;
	uint64_t best_seq = 0, ts = 0;

	/* The marker itself, else the latest earlier one: earlier is the safe side. */
	for (size_t i = 0; i < NR_MARKERS; i++) {
		const struct marker *m = &sm->markers[i];

		if (!m->seq || m->seq > seq || (found && m->seq <= best_seq))
			continue;
		found = true;
		best_seq = m->seq;
		ts = m->ts;
	}
	if (found)
		*ret = ts;
	return found;
}

/*
 * Earliest time an unnoticed reset can have happened: the marker written
 * before the last snapshot that still matched the generation (the reset
 * came after that snapshot was read), else the generation's own start.
 */
uint64_t sm_external_begin_raw(const struct stackmap *sm, const struct sm_gen *cur)
{
	uint64_t ts;

	if (cur->last_good_seq == LAST_GOOD_BEGIN && cur->begin_marker_ts &&
	    cur->begin_marker_ts < SEGMENT_WINDOW_UNKNOWN)
		return cur->begin_marker_ts;
	if (cur->last_good_seq && cur->last_good_seq != LAST_GOOD_BEGIN &&
	    marker_ts(sm, cur->last_good_seq, &ts))
		return ts;
	/* a window that is no time bounds nothing: a reset follows the one before it */
	return cur->g.window_begin < SEGMENT_WINDOW_UNKNOWN ? cur->g.window_begin : 0;
}
