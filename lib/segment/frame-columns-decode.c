/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column decoder (frame-columns.h): rebuilds the pages of a frame from its
 * streams, in the order the encoder (frame-columns-encode.c) wrote them. The input
 * is untrusted: every count and length is checked against what is left of
 * its stream and of the declared frame length before it is used, memory is
 * sized only by the declared frame length (after the caller's bound) and
 * by the input's own length, and every stream must be used up exactly.
 */
#include <stdlib.h>

#include "budget.h"
#include "frame-columns-internal.h"

struct dcol {
	struct fc_in in;
	uint16_t offset;	/* in the payload */
	uint16_t size;		/* 0: the event's tail */
	uint8_t t;
	bool blob, sgn;
	uint64_t prev;
	uint64_t *dict;		/* ints: values; blobs: offset << 32 | length in the input */
	size_t nr_dict, dict_cap;
};

struct dtype {
	uint16_t id, fixed;
	size_t first, nr;	/* its columns (the tail is first + nr, then the time streams) */
	uint8_t time;		/* time transform */
};

/* A template: its first event holds its template columns' bytes. */
struct dtpl {
	size_t first, last;	/* payload offsets in the output; last SIZE_MAX: none before */
	uint32_t succ;		/* + 1, 0: none */
	uint32_t arr;
	uint8_t k, type_len;
	struct fc_pair pair;
};

struct dstate {
	const uint8_t *base;	/* the encoded frame */
	uint8_t *start;		/* the decoded frame */
	struct dtpl *tpls;
	size_t nr_tpls, cap_tpls;
	size_t prev_tpl;	/* SIZE_MAX: none yet */
	struct fc_in s[FC_S_FIXED];
	struct dtype types[FRAME_COLUMNS_MAX_TYPES];
	unsigned int nr_types;
	struct dcol *cols;
	size_t nr_cols;
	uint8_t *out, *end;	/* where the next byte goes, end of the declared frame */
	unsigned int long_size;
	uint8_t version;
	uint64_t page_sum;	/* time deltas of the page being decoded */
};

#define BAD -EBADMSG

static int get_v(struct fc_in *in, uint64_t max, uint64_t *ret)
{
	if (fc_get_varint(in, ret) < 0 || *ret > max)
		return BAD;
	return 0;
}

/* Room for n more bytes of output. */
static bool fits(const struct dstate *d, uint64_t n)
{
	return n <= (uint64_t)(d->end - d->out);
}

static int copy_raw(struct dstate *d, uint64_t n)
{
	const uint8_t *p;

	if (n == 0)
		return 0;	/* an empty frame has no output buffer at all */
	if (!fits(d, n) || !(p = fc_get_bytes(&d->s[FC_S_RAW], (size_t)n)))
		return BAD;
	memcpy(d->out, p, (size_t)n);
	d->out += n;
	return 0;
}

/* Parse the type table into d->types and the column states (in fc->dcols). */
static int parse_types(struct frame_columns *fc, struct dstate *d, struct fc_in *in)
{
	uint64_t nr_types, v;
	int r;

	if (get_v(in, FRAME_COLUMNS_MAX_TYPES, &nr_types) < 0)
		return BAD;
	buf_reset(&fc->dcols);
	for (unsigned int k = 0; k < nr_types; k++) {
		struct dtype *t = &d->types[k];
		uint64_t id, fixed, nr, pos = 2;

		if (get_v(in, UINT16_MAX, &id) < 0 || get_v(in, UINT16_MAX, &fixed) < 0 ||
		    fixed < 2 || get_v(in, FRAME_COLUMNS_MAX_FIELDS, &nr) < 0)
			return BAD;
		t->id = (uint16_t)id;
		t->fixed = (uint16_t)fixed;
		t->first = fc->dcols.len / sizeof(struct dcol);
		t->nr = (size_t)nr;
		r = budget_buf_reserve(&fc->charged, &fc->dcols,
				       (nr + 1 + FC_TIME_STREAMS) * sizeof(struct dcol),
				       "column-encoded frames");
		if (r < 0)
			return r;
		for (unsigned int i = 0; i <= nr; i++) {
			struct dcol *c = (struct dcol *)(void *)(fc->dcols.data + fc->dcols.len);
			const uint8_t *b;

			memset(c, 0, sizeof(*c));
			if (i < nr) {
				if (get_v(in, fixed - pos, &v) < 0 || v == 0 || !(b = fc_get_bytes(in, 1)) ||
				    *b > FC_F_SIGNED)
					return BAD;
				c->offset = (uint16_t)pos;
				c->size = (uint16_t)v;
				c->blob = !(v == 1 || v == 2 || v == 4 || v == 8);
				c->sgn = *b & FC_F_SIGNED;
				if (c->blob && c->sgn)
					return BAD;
				pos += v;
			} else if (pos != fixed) {
				return BAD;	/* the columns must tile the fixed part */
			} else {
				c->offset = (uint16_t)pos;
				c->blob = true;
			}
			if (!(b = fc_get_bytes(in, 1)) || *b >= FC_T_MAX ||
			    (c->blob && *b != FC_T_RAW && *b != FC_T_DICT && *b != FC_T_TEMPLATE))
				return BAD;
			c->t = *b;
			fc->dcols.len += sizeof(*c);
		}
		const uint8_t *tt = fc_get_bytes(in, 1);

		if (!tt || *tt > (d->version >= 3 ? FC_TIME_PAIR : FC_TIME_TEMPLATE))
			return BAD;
		t->time = *tt;
		memset(fc->dcols.data + fc->dcols.len, 0, FC_TIME_STREAMS * sizeof(struct dcol));
		fc->dcols.len += FC_TIME_STREAMS * sizeof(struct dcol);
	}
	d->nr_types = (unsigned int)nr_types;
	d->cols = (struct dcol *)(void *)fc->dcols.data;
	d->nr_cols = fc->dcols.len / sizeof(struct dcol);
	return 0;
}

/* The stream directory: every stream's length, then the streams, which must fill the input. */
static int parse_streams(struct frame_columns *fc, struct dstate *d, struct fc_in *in)
{
	uint64_t nr, lens[FC_S_FIXED], v, total = 0, slots = 0;
	size_t ntpls;
	const uint8_t *p;
	int r;

	if (get_v(in, FC_S_FIXED + d->nr_cols, &nr) < 0 || nr != FC_S_FIXED + d->nr_cols)
		return BAD;
	for (size_t i = 0; i < FC_S_FIXED; i++) {
		if (get_v(in, (uint64_t)(in->end - in->p), &lens[i]) < 0)
			return BAD;
		total += lens[i];
	}
	for (size_t i = 0; i < d->nr_cols; i++) {
		if (get_v(in, (uint64_t)(in->end - in->p), &v) < 0)
			return BAD;
		d->cols[i].in.p = (const uint8_t *)(uintptr_t)v;	/* the length, for now */
		total += v;
		if (d->cols[i].t == FC_T_DICT)
			slots += v;	/* each new entry takes at least its index byte */
	}
	if (total != (uint64_t)(in->end - in->p))
		return BAD;
	for (size_t i = 0; i < FC_S_FIXED; i++) {
		p = fc_get_bytes(in, (size_t)lens[i]);
		d->s[i] = (struct fc_in){ p, p + lens[i] };
	}
	buf_reset(&fc->dict);
	r = budget_buf_reserve(&fc->charged, &fc->dict, (size_t)slots * sizeof(uint64_t),
			       "column-encoded frames");
	if (r < 0)
		return r;
	/*
	 * A new template takes at least a byte of the code stream, and its
	 * first event at least 8 bytes of the frame (header, id, 2 bytes).
	 */
	buf_reset(&fc->dtpls);
	ntpls = MIN((size_t)lens[FC_S_CODE], (size_t)(d->end - d->start) / 8 + 1);
	r = budget_buf_reserve(&fc->charged, &fc->dtpls, ntpls * sizeof(struct dtpl),
			       "column-encoded frames");
	if (r < 0)
		return r;
	d->tpls = (struct dtpl *)(void *)fc->dtpls.data;
	d->cap_tpls = ntpls;
	d->prev_tpl = SIZE_MAX;
	slots = 0;
	for (size_t i = 0; i < d->nr_cols; i++) {
		struct dcol *c = &d->cols[i];
		size_t n = (size_t)(uintptr_t)c->in.p;

		p = fc_get_bytes(in, n);
		c->in = (struct fc_in){ p, p ? p + n : NULL };
		if (c->t == FC_T_DICT) {
			/* no dictionary stream at all leaves the buffer unallocated (NULL) */
			c->dict = fc->dict.data ? (uint64_t *)(void *)fc->dict.data + slots : NULL;
			c->dict_cap = n;
			slots += n;
		}
	}
	return 0;
}

static int int_value(struct dstate *d, const struct dtpl *t, struct dcol *c, uint64_t *ret)
{
	const uint8_t *p;
	uint64_t x, idx;

	switch (c->t) {
	case FC_T_RAW:
		if (!(p = fc_get_bytes(&c->in, c->size)))
			return BAD;
		*ret = fc_get(p, c->size);
		return 0;
	case FC_T_VARINT:
		if (fc_get_varint(&c->in, &x) < 0)
			return BAD;
		*ret = c->sgn ? (uint64_t)fc_unzigzag(x) : x;
		return 0;
	case FC_T_DELTA:
		if (fc_get_varint(&c->in, &x) < 0)
			return BAD;
		c->prev += (uint64_t)fc_unzigzag(x);
		*ret = c->prev;
		return 0;
	case FC_T_TDELTA:
		if (fc_get_varint(&c->in, &x) < 0)
			return BAD;
		if (t->last != SIZE_MAX)
			c->prev = fc_get(d->start + t->last + c->offset, c->size);
		c->prev += (uint64_t)fc_unzigzag(x);
		*ret = c->prev;
		return 0;
	default:
		if (get_v(&c->in, c->nr_dict, &idx) < 0)
			return BAD;
		if (idx < c->nr_dict) {
			*ret = c->dict[idx];
			return 0;
		}
		if (c->nr_dict == c->dict_cap || fc_get_varint(&c->in, &x) < 0)
			return BAD;
		*ret = c->sgn ? (uint64_t)fc_unzigzag(x) : x;
		c->dict[c->nr_dict++] = *ret;
		return 0;
	}
}

/* len bytes of blob column c at d->out (room checked by the caller). */
static int blob_value(struct dstate *d, struct dcol *c, size_t len)
{
	const uint8_t *p;
	uint64_t idx;

	if (c->t == FC_T_DICT) {
		if (get_v(&c->in, c->nr_dict, &idx) < 0)
			return BAD;
		if (idx < c->nr_dict) {
			if ((c->dict[idx] & UINT32_MAX) != len)
				return BAD;
			p = d->base + (c->dict[idx] >> 32);
		} else {
			if (c->nr_dict == c->dict_cap || !(p = fc_get_bytes(&c->in, len)))
				return BAD;
			c->dict[c->nr_dict++] = (uint64_t)(p - d->base) << 32 | len;
		}
	} else if (!(p = fc_get_bytes(&c->in, len))) {
		return BAD;
	}
	memcpy(d->out, p, len);
	d->out += len;
	return 0;
}

/* len bytes of template column c of t (new: from TVAL, else from t's first event). */
static int template_value(struct dstate *d, const struct dtpl *t, const struct dcol *c, size_t len,
			  bool new)
{
	const uint8_t *p;

	if (!new)
		p = d->start + t->first + c->offset;
	else if (!(p = fc_get_bytes(&d->s[FC_S_TVAL], len)))
		return BAD;
	memcpy(d->out, p, len);
	d->out += len;
	return 0;
}

/* The time delta of an event of template t, from its type's time streams. */
static int time_delta(struct dstate *d, const struct dtype *ty, const struct dtpl *t, uint64_t *ret)
{
	struct dcol *lo = &d->cols[ty->first + ty->nr + 1], *hi = lo + 1;
	const uint8_t *b;
	uint64_t v, base = 0;
	uint32_t pb;
	int64_t delta;

	if (ty->time == FC_TIME_PAIR) {
		/* a delta and its prediction are below 2^27: their zigzag difference below 2^28 */
		if (get_v(&hi->in, (1 << 28) - 1, &v) < 0)
			return BAD;
		delta = fc_pair_base(&t->pair, (uint32_t)MIN(d->prev_tpl, (size_t)UINT32_MAX), &pb) ?
			(int64_t)pb + fc_unzigzag(v) : (int64_t)v;
		if (delta < 0 || delta >= (1 << 27))
			return BAD;
		*ret = (uint64_t)delta;
		return 0;
	}
	b = fc_get_bytes(&lo->in, 1);
	if (!b || get_v(&hi->in, UINT64_MAX >> 8, &v) < 0)
		return BAD;
	v = v << 8 | *b;
	if (ty->time == FC_TIME_PLAIN) {
		delta = (int64_t)v;
	} else {
		if (t->last != SIZE_MAX)
			base = get_le32(d->start + t->last - (t->type_len ? 4 : 8)) >> 5;
		delta = (int64_t)base + fc_unzigzag(v);
	}
	if (delta < 0 || delta >= (1 << 27))
		return BAD;
	*ret = (uint64_t)delta;
	return 0;
}

/* One event of template t: its header, then its payload from the template and the columns. */
static int decode_event(struct dstate *d, struct dtpl *t, bool new)
{
	const struct dtype *ty = &d->types[t->k];
	uint64_t delta, dlen = t->type_len ? 4 * (uint64_t)t->type_len : (uint64_t)t->arr - 4;
	size_t payload;
	uint32_t hdr;
	int r;

	if (time_delta(d, ty, t, &delta) < 0 || !fits(d, 4 + (t->type_len ? 0 : 4) + dlen))
		return BAD;
	fc_pair_learn(&t->pair, (uint32_t)MIN(d->prev_tpl, (size_t)UINT32_MAX), (uint32_t)delta);
	d->page_sum += delta;
	hdr = (uint32_t)(delta << 5 | t->type_len);
	memcpy(d->out, &hdr, 4);
	d->out += 4;
	if (!t->type_len) {
		fc_put(d->out, t->arr, 4);
		d->out += 4;
	}
	payload = (size_t)(d->out - d->start);
	if (new)
		t->first = payload;
	fc_put(d->out, ty->id, 2);
	d->out += 2;
	for (size_t i = 0; i <= ty->nr; i++) {
		struct dcol *c = &d->cols[ty->first + i];
		size_t len = c->size ? c->size : (size_t)(dlen - ty->fixed);
		uint64_t v;

		if (c->t == FC_T_TEMPLATE)
			r = template_value(d, t, c, len, new);
		else if (c->blob)
			r = blob_value(d, c, len);
		else if ((r = int_value(d, t, c, &v)) >= 0) {
			fc_put(d->out, v, c->size);
			d->out += c->size;
		}
		if (r < 0)
			return r;
	}
	t->last = payload;
	return 0;
}

/* A new template: its type and length code from CODE. */
static int new_template(struct dstate *d, struct dtpl **ret)
{
	struct fc_in *in = &d->s[FC_S_CODE];
	uint64_t k, type_len, arr = 0, dlen;
	struct dtpl *t;

	if (d->nr_tpls == d->cap_tpls || get_v(in, (uint64_t)d->nr_types - 1, &k) < 0 ||
	    !d->nr_types || get_v(in, FC_TYPE_PADDING - 1, &type_len) < 0)
		return BAD;
	if (!type_len && (get_v(in, UINT32_MAX, &arr) < 0 || arr < 6 || arr & 3))
		return BAD;
	dlen = type_len ? type_len * 4 : arr - 4;
	if (dlen < d->types[k].fixed)
		return BAD;
	t = &d->tpls[d->nr_tpls++];
	*t = (struct dtpl){ 0, SIZE_MAX, 0, (uint32_t)arr, (uint8_t)k, (uint8_t)type_len, { 0 } };
	*ret = t;
	return 0;
}

/* An event entry with code c (>= FC_C_TPL, or FC_C_NEXT). */
static int decode_template_entry(struct dstate *d, uint64_t c)
{
	struct dtpl *t;
	bool new = false;
	size_t idx;
	int r;

	if (c == FC_C_NEXT) {
		if (d->prev_tpl == SIZE_MAX || !d->tpls[d->prev_tpl].succ)
			return BAD;
		idx = d->tpls[d->prev_tpl].succ - 1;
	} else {
		if (c - FC_C_TPL > d->nr_tpls)
			return BAD;
		idx = (size_t)(c - FC_C_TPL);
		new = idx == d->nr_tpls;
	}
	if (new) {
		r = new_template(d, &t);
		if (r < 0)
			return r;
	} else {
		t = &d->tpls[idx];
	}
	r = decode_event(d, t, new);
	if (r < 0)
		return r;
	if (d->prev_tpl != SIZE_MAX)
		d->tpls[d->prev_tpl].succ = (uint32_t)idx + 1;
	d->prev_tpl = idx;
	return 0;
}

static int decode_entry(struct dstate *d)
{
	uint64_t code, v;
	uint32_t w;

	if (fc_get_varint(&d->s[FC_S_CODE], &code) < 0)
		return BAD;
	switch (code) {
	case FC_C_RAW:
		if (get_v(&d->s[FC_S_LEN], UINT32_MAX, &v) < 0)
			return BAD;
		return copy_raw(d, v);
	case FC_C_EXTEND:
	case FC_C_STAMP:
		if (get_v(&d->s[FC_S_DELTA], (1ULL << 59) - 1, &v) < 0 || !fits(d, 8))
			return BAD;
		w = (uint32_t)((v & ((1u << 27) - 1)) << 5) |
		    (code == FC_C_EXTEND ? FC_TYPE_TIME_EXTEND : FC_TYPE_TIME_STAMP);
		memcpy(d->out, &w, 4);
		w = (uint32_t)(v >> 27);
		memcpy(d->out + 4, &w, 4);
		d->out += 8;
		if (code == FC_C_EXTEND)
			d->page_sum += v;
		return 0;
	default:
		return decode_template_entry(d, code);
	}
}

/*
 * One page. prev: the previous column page's timestamp and the sum of its
 * time deltas, which version 3 codes the timestamp against.
 */
static int decode_page(struct dstate *d, uint64_t prev[2])
{
	struct fc_in *pg = &d->s[FC_S_PAGE];
	size_t ls = d->long_size, hdr = 8 + ls;
	uint64_t kind, v, hi, missed = 0, entries, tail;
	uint8_t *page, *data;
	int r;

	if (get_v(pg, FC_PAGE_VERBATIM, &kind) < 0)
		return BAD;
	if (kind == FC_PAGE_VERBATIM)
		return get_v(pg, UINT32_MAX, &v) < 0 ? BAD : copy_raw(d, v);
	if (fc_get_varint(pg, &v) < 0 || get_v(pg, fc_mask(ls) >> FC_FLAGS_SHIFT, &hi) < 0 ||
	    !fits(d, hdr))
		return BAD;
	if (hi << FC_FLAGS_SHIFT & FC_MISSED_STORED && get_v(pg, fc_mask(ls), &missed) < 0)
		return BAD;
	if (fc_get_varint(pg, &entries) < 0 || fc_get_varint(pg, &tail) < 0)
		return BAD;
	page = d->out;
	prev[0] += (d->version >= 3 ? prev[1] : 0) + (uint64_t)fc_unzigzag(v);
	fc_put(page, prev[0], 8);
	d->page_sum = 0;
	d->out += hdr;
	data = d->out;
	/* each entry takes a byte of the code stream: the loop ends with it */
	for (uint64_t i = 0; i < entries; i++) {
		r = decode_entry(d);
		if (r < 0)
			return r;
	}
	r = copy_raw(d, tail);
	if (r < 0)
		return r;
	if ((uint64_t)(d->out - data) > FC_COMMIT_MASK)
		return BAD;
	fc_put(page + 8, hi << FC_FLAGS_SHIFT | (uint64_t)(d->out - data), (unsigned int)ls);
	if (hi << FC_FLAGS_SHIFT & FC_MISSED_STORED) {
		if (!fits(d, ls))
			return BAD;
		fc_put(d->out, missed, (unsigned int)ls);
		d->out += ls;
	}
	prev[1] = d->page_sum;
	return 0;
}

static int decode_body(struct frame_columns *fc, struct dstate *d, struct fc_in *in,
		       uint64_t pages, uint64_t tail)
{
	uint64_t prev[2] = { 0, 0 };
	int r;

	r = parse_types(fc, d, in);
	if (r < 0)
		return r;
	r = parse_streams(fc, d, in);
	if (r < 0)
		return r;
	/* each page takes at least a byte of the page stream: the loop ends with it */
	for (uint64_t i = 0; i < pages; i++) {
		r = decode_page(d, prev);
		if (r < 0)
			return r;
	}
	r = copy_raw(d, tail);
	if (r < 0)
		return r;
	if (d->out != d->end)
		return BAD;
	for (size_t i = 0; i < FC_S_FIXED; i++)
		if (d->s[i].p != d->s[i].end)
			return BAD;
	for (size_t i = 0; i < d->nr_cols; i++)
		if (d->cols[i].in.p != d->cols[i].in.end)
			return BAD;
	return 0;
}

int frame_columns_decode(struct frame_columns *fc, const void *enc, size_t len, size_t max_len,
			 struct buf *out)
{
	struct fc_in in = { enc, (const uint8_t *)enc + len };
	struct dstate d = { .base = enc, .long_size = fc->long_size };
	uint64_t flen, pages, tail;
	size_t start = out->len;
	int r;

	if (len < 2)
		return BAD;
	if (in.p[0] < FRAME_COLUMNS_VERSION_MIN || in.p[0] > FRAME_COLUMNS_VERSION)
		return -EPROTONOSUPPORT;
	d.version = in.p[0];
	if (in.p[1] != fc->long_size)
		return BAD;
	in.p += 2;
	if (fc_get_varint(&in, &flen) < 0 || fc_get_varint(&in, &pages) < 0 ||
	    fc_get_varint(&in, &tail) < 0)
		return BAD;
	if (flen > max_len || flen > INT32_MAX)
		return -EFBIG;
	if (tail > flen)
		return BAD;
	/* a byte more: an empty frame still gets a buffer to point into */
	r = buf_reserve(out, (size_t)flen + 1);
	if (r < 0)
		return r;
	d.out = d.start = out->data + start;
	d.end = d.out + flen;
	r = decode_body(fc, &d, &in, pages, tail);
	if (r < 0)
		return r;
	out->len = start + (size_t)flen;
	return (int)flen;
}
