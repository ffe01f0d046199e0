/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column encoder, second half (frame-columns.h): what the walk of a frame
 * (frame-columns-encode.c) has collected becomes streams. Most fields of an event
 * follow from the code path that emitted it (call site, sizes, flags, pid,
 * stack reference): those columns form the event's template, a tuple kept
 * once per frame, and an event names its template in one code, usually "the
 * one that followed the previous event's template last time". The other
 * columns are coded one stream each, raw, as varints, as deltas to the
 * previous value in the column or in the same template, or as dictionary
 * indexes, whichever is smallest. Which columns belong to the template and
 * how the others are coded is chosen again every FC_CHOOSE_EVERY frames.
 */
#include <stdlib.h>

#include "frame-columns-internal.h"

/* ---- hashing (lib/base/hashtab.h) and dictionaries ---- */

/*
 * A fresh dictionary for up to n values. Returns 0 or -ENOMEM.
 *
 * This is the one hash table that is not lib/base/hashtab.h: it is emptied
 * for every column of every frame, which the stamp makes free (clearing a
 * hashtab writes all its slots), and each slot keeps the value's key, index
 * and place inline, so that a probe touches one slot and no other memory.
 */
static int dict_start(struct frame_columns *fc, size_t n)
{
	if (fc->nr_slots < 2 * n) {
		size_t cap = fc->nr_slots ? fc->nr_slots : 1024;

		while (cap < 2 * n)
			cap *= 2;
		free(fc->slots);
		fc->slots = calloc(cap, sizeof(*fc->slots));
		fc->nr_slots = fc->slots ? cap : 0;
		fc->stamp = 0;
		if (!fc->slots)
			return -ENOMEM;
	}
	if (++fc->stamp == 0) {
		memset(fc->slots, 0, fc->nr_slots * sizeof(*fc->slots));
		fc->stamp = 1;
	}
	return 0;
}

/*
 * Look value v up (a blob when p != NULL: len bytes at frame offset off,
 * key its hash); insert it with index *next if absent. Returns its index.
 */
static uint32_t dict_find(struct frame_columns *fc, uint64_t key, const uint8_t *frame,
			  uint32_t off, uint32_t len, bool blob, uint32_t *next)
{
	size_t mask = fc->nr_slots - 1, i = hash_u64(key) & mask;

	for (;; i = (i + 1) & mask) {
		struct fc_slot *s = &fc->slots[i];

		if (s->stamp != fc->stamp) {
			*s = (struct fc_slot){ key, fc->stamp, (*next)++, off, len };
			return s->idx;
		}
		if (s->key == key &&
		    (!blob || (s->len == len && !memcmp(frame + s->off, frame + off, len))))
			return s->idx;
	}
}

/* ---- one column of one type ---- */

struct col_ref {
	const uint8_t *frame;
	const struct fc_ent *ents;
	const uint8_t *ev;	/* u32 indexes into ents */
	size_t n;
	unsigned int offset, size;	/* size 0: the tail, from offset to the payload's end */
	bool blob, sgn;
};

static void col_ref_init(struct col_ref *c, const struct fc_format *f, unsigned int i)
{
	if (i < f->nr) {
		c->offset = f->cols[i].offset;
		c->size = f->cols[i].size;
		c->blob = f->cols[i].blob;
		c->sgn = f->cols[i].flags & FC_F_SIGNED;
	} else {
		c->offset = f->fixed;
		c->size = 0;
		c->blob = true;
		c->sgn = false;
	}
}

static inline const struct fc_ent *col_ent(const struct col_ref *c, size_t i)
{
	return &c->ents[get_le32(c->ev + 4 * i)];
}

static inline void col_value(const struct col_ref *c, const struct fc_ent *e, uint32_t *off,
			     uint32_t *len)
{
	*off = e->off + c->offset;
	*len = c->size ? c->size : e->dlen - c->offset;
}

static inline uint64_t int_literal(const struct col_ref *c, uint64_t v)
{
	return c->sgn ? fc_zigzag(fc_sext(v, c->size)) : v;
}

/* What TDELTA codes value v against: the template's previous value, else the column's. */
static inline uint64_t tdelta_base(const struct col_ref *c, const struct fc_ent *e, uint64_t prev)
{
	return e->prev == UINT32_MAX ? prev : fc_get(c->frame + e->prev + c->offset, c->size);
}

/* The number of distinct values of column c. */
static int count_distinct(struct frame_columns *fc, const struct col_ref *c, uint32_t *ret)
{
	uint32_t next = 0;
	int r;

	r = dict_start(fc, c->n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		uint32_t off, len;

		col_value(c, col_ent(c, i), &off, &len);
		if (c->blob)
			(void)dict_find(fc, hash_bytes(c->frame + off, len), c->frame, off, len, true, &next);
		else
			(void)dict_find(fc, fc_get(c->frame + off, c->size), c->frame, 0, 0, false, &next);
	}
	*ret = next;
	return 0;
}

/* The transform that makes column c (not in the template) smallest, by the bytes it would take. */
static int choose(struct frame_columns *fc, const struct col_ref *c, uint8_t *ret)
{
	uint64_t cost[FC_T_TEMPLATE] = { 0 }, prev = 0;
	uint32_t next = 0;
	int r;

	r = dict_start(fc, c->n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		const struct fc_ent *e = col_ent(c, i);
		uint32_t off, len, idx, before;
		uint64_t v;

		col_value(c, e, &off, &len);
		cost[FC_T_RAW] += len;
		before = next;
		if (c->blob) {
			idx = dict_find(fc, hash_bytes(c->frame + off, len), c->frame, off, len, true, &next);
			cost[FC_T_DICT] += fc_varint_len(idx) + (next != before ? len : 0);
			continue;
		}
		v = fc_get(c->frame + off, c->size);
		cost[FC_T_VARINT] += fc_varint_len(int_literal(c, v));
		cost[FC_T_DELTA] += fc_varint_len(fc_zigzag(fc_sext(v - prev, c->size)));
		cost[FC_T_TDELTA] +=
			fc_varint_len(fc_zigzag(fc_sext(v - tdelta_base(c, e, prev), c->size)));
		prev = v;
		idx = dict_find(fc, v, c->frame, 0, 0, false, &next);
		cost[FC_T_DICT] += fc_varint_len(idx) + (next != before ? fc_varint_len(int_literal(c, v)) : 0);
	}
	*ret = FC_T_RAW;
	for (uint8_t t = FC_T_VARINT; t < FC_T_TEMPLATE; t++)
		if ((!c->blob || t == FC_T_DICT) && cost[t] < cost[*ret])
			*ret = t;
	return 0;
}

/* Append column c with transform t to fc->cols. Returns 0 or -ENOMEM. */
static int encode_column(struct frame_columns *fc, const struct col_ref *c, uint8_t t)
{
	struct buf *o = &fc->cols;
	uint64_t prev = 0;
	uint32_t next = 0;
	int r;

	if (t == FC_T_TEMPLATE)
		return 0;
	if (t == FC_T_DICT) {
		r = dict_start(fc, c->n);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct fc_ent *e = col_ent(c, i);
		uint32_t off, len, idx, before;
		uint64_t v;

		col_value(c, e, &off, &len);
		if (fc_room(o, 20 + (size_t)len) < 0)
			return -ENOMEM;
		if (t == FC_T_RAW) {
			memcpy(o->data + o->len, c->frame + off, len);
			o->len += len;
			continue;
		}
		v = c->blob ? hash_bytes(c->frame + off, len) : fc_get(c->frame + off, c->size);
		switch (t) {
		case FC_T_VARINT:
			fc_vput(o, int_literal(c, v));
			break;
		case FC_T_DELTA:
			fc_vput(o, fc_zigzag(fc_sext(v - prev, c->size)));
			prev = v;
			break;
		case FC_T_TDELTA:
			fc_vput(o, fc_zigzag(fc_sext(v - tdelta_base(c, e, prev), c->size)));
			prev = v;
			break;
		default:
			before = next;
			idx = dict_find(fc, v, c->frame, off, len, c->blob, &next);
			fc_vput(o, idx);
			if (next == before)
				break;
			if (c->blob) {
				memcpy(o->data + o->len, c->frame + off, len);
				o->len += len;
			} else {
				fc_vput(o, int_literal(c, v));
			}
			break;
		}
	}
	return 0;
}

static bool choice_due(const struct frame_columns *fc, const struct fc_format *f)
{
	return !f->chosen || fc->frame_no - f->chosen >= FC_CHOOSE_EVERY;
}

/*
 * Choose the template columns of frame type k (when due): those with few
 * distinct values in this frame. Adjacent ones are merged into the ranges
 * that templates are hashed and compared by.
 */
int fc_choose_template(struct frame_columns *fc, const uint8_t *frame, unsigned int k)
{
	const struct fc_ftype *ft = &fc->types[k];
	struct fc_format *f = ft->fmt;
	struct col_ref c = { frame, (const struct fc_ent *)(void *)fc->ents.data, ft->ev.data,
			     ft->ev.len / 4, 0, 0, false, false };
	uint32_t distinct;
	int r;

	if (!choice_due(fc, f))
		return 0;
	f->nr_rng = 0;
	for (unsigned int i = 0; i <= f->nr; i++) {
		col_ref_init(&c, f, i);
		r = count_distinct(fc, &c, &distinct);
		if (r < 0)
			return r;
		f->t[i] = distinct <= 1 || (size_t)distinct * FC_TEMPLATE_RATIO <= c.n ?
			FC_T_TEMPLATE : FC_T_RAW;
		if (f->t[i] != FC_T_TEMPLATE || i == f->nr)
			continue;
		if (f->nr_rng && f->rng[f->nr_rng - 1].off + f->rng[f->nr_rng - 1].len == c.offset)
			f->rng[f->nr_rng - 1].len = (uint16_t)(f->rng[f->nr_rng - 1].len + c.size);
		else
			f->rng[f->nr_rng++] = (struct fc_range){ (uint16_t)c.offset, (uint16_t)c.size };
	}
	f->tail_tpl = f->t[f->nr] == FC_T_TEMPLATE;
	return 0;
}

static inline unsigned int bit_len(uint64_t v)
{
	return v ? 64 - (unsigned int)__builtin_clzll(v) : 0;
}

/* What an event's time delta is coded as under time transform t. */
static inline uint64_t time_value(const struct col_ref *c, const struct fc_ent *e, uint8_t t)
{
	uint32_t base;

	if (t == FC_TIME_PLAIN)
		return e->delta;
	if (t == FC_TIME_PAIR)
		return e->has_base ? fc_zigzag((int64_t)e->delta - (int64_t)e->base) : e->delta;
	base = e->prev == UINT32_MAX ? 0 : get_le32(c->frame + e->prev - (e->type_len ? 4 : 8)) >> 5;
	return fc_zigzag((int64_t)e->delta - (int64_t)base);
}

/*
 * The time streams of type c. Version 3: FC_TIME_PAIR, one varint per
 * event in the second stream, which with zstd takes about 5% less than the
 * others (zstd finds the repeats of whole values). Version 2: the
 * transform that takes fewer bits, if due, split into low bytes and high
 * parts.
 */
static int encode_time(struct frame_columns *fc, const struct col_ref *c, struct fc_format *f,
		       bool again)
{
	struct buf *o = &fc->cols;
	size_t start = o->len;
	int r;

	if (fc->version >= 3) {
		f->time = FC_TIME_PAIR;
		r = buf_append_u32(&fc->lens, 0);
		for (size_t i = 0; r >= 0 && i < c->n; i++) {
			if (fc_room(o, 10) < 0)
				return -ENOMEM;
			fc_vput(o, time_value(c, col_ent(c, i), FC_TIME_PAIR));
		}
		return r < 0 ? r : buf_append_u32(&fc->lens, (uint32_t)(o->len - start));
	}
	if (again) {
		uint64_t bits[2] = { 0, 0 };

		for (size_t i = 0; i < c->n; i++) {
			const struct fc_ent *e = col_ent(c, i);

			bits[0] += bit_len(time_value(c, e, FC_TIME_PLAIN));
			bits[1] += bit_len(time_value(c, e, FC_TIME_TEMPLATE));
		}
		f->time = bits[1] < bits[0] ? FC_TIME_TEMPLATE : FC_TIME_PLAIN;
	}
	if (fc_room(o, c->n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		o->data[o->len++] = (uint8_t)time_value(c, col_ent(c, i), f->time);
	r = buf_append_u32(&fc->lens, (uint32_t)(o->len - start));
	if (r < 0)
		return r;
	start = o->len;
	for (size_t i = 0; i < c->n; i++) {
		if (fc_room(o, 10) < 0)
			return -ENOMEM;
		fc_vput(o, time_value(c, col_ent(c, i), f->time) >> 8);
	}
	return buf_append_u32(&fc->lens, (uint32_t)(o->len - start));
}

/* Columns of frame type k, and their entries in the type table. */
int fc_encode_type(struct frame_columns *fc, const uint8_t *frame, unsigned int k)
{
	const struct fc_ftype *ft = &fc->types[k];
	struct fc_format *f = ft->fmt;
	bool again = choice_due(fc, f);
	struct col_ref c = { frame, (const struct fc_ent *)(void *)fc->ents.data, ft->ev.data,
			     ft->ev.len / 4, 0, 0, false, false };
	struct buf *tb = &fc->table;
	int r;

	if (fc_room(tb, 31 + 12 * (size_t)f->nr) < 0)
		return -ENOMEM;
	fc_vput(tb, ft->id);
	fc_vput(tb, f->fixed);
	fc_vput(tb, f->nr);
	for (unsigned int i = 0; i <= f->nr; i++) {
		size_t start = fc->cols.len;

		col_ref_init(&c, f, i);
		if (again && f->t[i] != FC_T_TEMPLATE) {
			r = choose(fc, &c, &f->t[i]);
			if (r < 0)
				return r;
		}
		r = encode_column(fc, &c, f->t[i]);
		if (r < 0)
			return r;
		if (i < f->nr) {
			fc_vput(tb, c.size);
			tb->data[tb->len++] = f->cols[i].flags;
		}
		tb->data[tb->len++] = f->t[i];
		r = buf_append_u32(&fc->lens, (uint32_t)(fc->cols.len - start));
		if (r < 0)
			return r;
	}
	r = encode_time(fc, &c, f, again);
	if (r < 0)
		return r;
	tb->data[tb->len++] = f->time;
	if (again)
		f->chosen = fc->frame_no;
	return 0;
}

/* ---- templates ---- */

static uint64_t tpl_hash(const uint8_t *frame, const struct fc_format *f, const struct fc_ent *e)
{
	const uint8_t *p = frame + e->off;
	uint64_t h = hash_fnv1a_step(HASH_FNV1A_BASIS, (uint64_t)e->k << 8 | e->type_len);

	h = hash_fnv1a_step(h, (uint64_t)e->arr + 1);
	for (unsigned int i = 0; i < f->nr_rng; i++)
		h = hash_bytes_more(h, p + f->rng[i].off, f->rng[i].len);
	if (f->tail_tpl)
		h = hash_bytes_more(h, p + f->fixed, e->dlen - f->fixed);
	return hash_end(h);
}

/*
 * Whether n bytes at a and b are equal. A last partial word is read as the
 * 8 bytes that end at a + n and b + n: the ranges compared are payload
 * bytes, which follow a page and an event header.
 * Template ranges are a few words long, shorter than memcmp's set-up.
 */
static inline bool bytes_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t x, y;

	for (; n >= 8; a += 8, b += 8, n -= 8) {
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		if (x != y)
			return false;
	}
	if (!n)
		return true;
	memcpy(&x, a + n - 8, 8);
	memcpy(&y, b + n - 8, 8);
	return (x ^ y) >> (64 - 8 * n) == 0;
}

/* Whether event e has template t (the hash aside). */
static bool tpl_same(const uint8_t *frame, const struct fc_format *f, const struct fc_tpl *t,
		     const struct fc_ent *e)
{
	const uint8_t *a = frame + t->first, *b = frame + e->off;

	if (t->k != e->k || t->type_len != e->type_len || t->arr != e->arr)
		return false;
	for (unsigned int i = 0; i < f->nr_rng; i++)
		if (!bytes_equal(a + f->rng[i].off, b + f->rng[i].off, f->rng[i].len))
			return false;
	return !f->tail_tpl || bytes_equal(a + f->fixed, b + f->fixed, e->dlen - f->fixed);
}

/* Append a new template's code, type, length code and template bytes. */
static int put_new_template(struct frame_columns *fc, const uint8_t *frame, const struct fc_format *f,
			    const struct fc_ent *e, uint32_t idx)
{
	struct buf *code = &fc->s[FC_S_CODE], *tv = &fc->s[FC_S_TVAL];
	const uint8_t *p = frame + e->off;

	if (fc_room(code, 40) < 0)
		return -ENOMEM;
	fc_vput(code, FC_C_TPL + (uint64_t)idx);
	fc_vput(code, e->k);
	fc_vput(code, e->type_len);
	if (!e->type_len)
		fc_vput(code, e->arr);
	for (unsigned int i = 0; i < f->nr_rng; i++)
		if (buf_append(tv, p + f->rng[i].off, f->rng[i].len) < 0)
			return -ENOMEM;
	if (f->tail_tpl && buf_append(tv, p + f->fixed, e->dlen - f->fixed) < 0)
		return -ENOMEM;
	return 0;
}

/* An empty template table for n events. Returns 0 or -ENOMEM. */
static int templates_start(struct frame_columns *fc, size_t n)
{
	/*
	 * The table keeps the size of the frame with the most templates so
	 * far: it grows only while that rises, and clearing it costs little.
	 */
	hashtab_clear(&fc->tslots);
	buf_reset(&fc->tpls);
	return buf_reserve(&fc->tpls, n * sizeof(struct fc_tpl));
}

/*
 * Give every entry its code, in entry order: non-event entries their kind,
 * events their template (and each event the offset of the previous event of
 * its template, for TDELTA). Returns 0 or -ENOMEM.
 */
int fc_encode_templates(struct frame_columns *fc, const uint8_t *frame)
{
	struct fc_ent *ents = (struct fc_ent *)(void *)fc->ents.data;
	size_t n = fc->ents.len / sizeof(*ents), e = 0;
	struct buf *code = &fc->s[FC_S_CODE];
	struct fc_tpl *tpls;
	uint32_t prev = UINT32_MAX, nr = 0;
	int r;

	r = templates_start(fc, n);
	if (r < 0)
		return r;
	tpls = (struct fc_tpl *)(void *)fc->tpls.data;
	for (size_t j = 0; j < fc->kinds.len; j++) {
		uint8_t kind = fc->kinds.data[j];
		struct fc_ent *en;
		const struct fc_format *f;
		struct hashtab_slot *s;
		uint32_t idx = UINT32_MAX;
		uint64_t h;

		if (fc_room(code, 10) < 0)
			return -ENOMEM;
		if (kind < FC_K_EVENT) {
			code->data[code->len++] = (uint8_t)(kind + FC_C_RAW);
			continue;
		}
		en = &ents[e++];
		f = fc->types[en->k].fmt;
		/* most events have the template that followed the previous one's last time */
		if (prev != UINT32_MAX && tpls[prev].succ &&
		    tpl_same(frame, f, &tpls[tpls[prev].succ - 1], en)) {
			idx = tpls[prev].succ - 1;
			code->data[code->len++] = FC_C_NEXT;
		} else {
			h = tpl_hash(frame, f, en);
			hashtab_foreach_candidate(s, &fc->tslots, h)
				if (tpls[s->val - 1].hash == h && tpl_same(frame, f, &tpls[s->val - 1], en)) {
					idx = (uint32_t)s->val - 1;
					break;
				}
			if (idx != UINT32_MAX)
				fc_vput(code, FC_C_TPL + (uint64_t)idx);
		}
		if (idx != UINT32_MAX) {
			en->prev = tpls[idx].last;
			en->has_base = fc_pair_base(&tpls[idx].pair, prev, &en->base);
		} else {
			idx = nr++;
			r = hashtab_add(&fc->tslots, h, idx + 1);
			if (r < 0)
				return r;
			tpls[idx] = (struct fc_tpl){ h, en->off, en->off, 0, en->arr, en->k, en->type_len,
						     { 0 } };
			en->has_base = false;
			r = put_new_template(fc, frame, f, en, idx);
			if (r < 0)
				return r;
		}
		tpls[idx].last = en->off;
		fc_pair_learn(&tpls[idx].pair, prev, en->delta);
		if (prev != UINT32_MAX)
			tpls[prev].succ = idx + 1;
		prev = idx;
	}
	fc->tpls.len = nr * sizeof(*tpls);
	return 0;
}
