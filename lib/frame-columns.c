/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column encoder (frame-columns.h): event layouts, the page walk that
 * splits a frame into streams, and the per-column choice of transform.
 *
 * The walk follows the kernel's page format (see daemon/transcode.c): a
 * 32-bit event header with type_len in the low 5 bits and time_delta in
 * the high 27, type_len 0 with the length in array[0], 29 padding, 30 time
 * extend, 31 absolute timestamp. Every byte of a page goes to exactly one
 * stream, and the decoder rebuilds them in the same order, so any page the
 * walk accepts comes back bit for bit; what it does not accept is stored
 * verbatim. Field values are read as little-endian integers: the encoding
 * is only used for little-endian traces, on little-endian hosts.
 */
#include <stdlib.h>

#include "frame-columns-internal.h"

struct frame_columns *frame_columns_new(unsigned int long_size)
{
	struct frame_columns *fc;

	if (long_size != 4 && long_size != 8)
		return NULL;
	fc = calloc(1, sizeof(*fc));
	if (!fc)
		return NULL;
	fc->long_size = long_size;
	fc->fmt = calloc(FC_NR_IDS, sizeof(*fc->fmt));
	fc->ftype_of = calloc(FC_NR_IDS, 1);
	if (!fc->fmt || !fc->ftype_of)
		return frame_columns_free(fc);
	return fc;
}

struct frame_columns *frame_columns_free(struct frame_columns *fc)
{
	if (!fc)
		return NULL;
	if (fc->fmt)
		for (size_t i = 0; i < FC_NR_IDS; i++)
			free(fc->fmt[i]);
	free(fc->fmt);
	free(fc->ftype_of);
	for (size_t i = 0; i < FRAME_COLUMNS_MAX_TYPES; i++)
		buf_done(&fc->types[i].ev);
	for (size_t i = 0; i < FC_S_FIXED; i++)
		buf_done(&fc->s[i]);
	buf_done(&fc->cols);
	buf_done(&fc->lens);
	buf_done(&fc->table);
	buf_done(&fc->dcols);
	buf_done(&fc->dict);
	free(fc->slots);
	free(fc);
	return NULL;
}

static int cmp_field(const void *a, const void *b)
{
	const struct frame_columns_field *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void add_column(struct fc_format *f, unsigned int offset, unsigned int size, bool sgn)
{
	struct fc_column *c = &f->cols[f->nr++];

	c->offset = (uint16_t)offset;
	c->size = (uint16_t)size;
	c->blob = !(size == 1 || size == 2 || size == 4 || size == 8);
	c->flags = sgn && !c->blob ? FC_F_SIGNED : 0;
}

int frame_columns_add_event(struct frame_columns *fc, uint16_t id,
			    const struct frame_columns_field *fields, size_t n)
{
	_cleanup_free_ struct frame_columns_field *sorted = NULL;
	_cleanup_free_ struct fc_format *f = NULL;
	unsigned int pos = 2;

	sorted = malloc((n ? n : 1) * sizeof(*sorted));
	f = calloc(1, sizeof(*f));
	if (!sorted || !f)
		return -ENOMEM;
	if (n)
		memcpy(sorted, fields, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_field);
	for (size_t i = 0; i < n; i++) {
		unsigned int off = sorted[i].offset, size = sorted[i].size;

		/* common_type is the entry's type; overlaps are already covered */
		if (size == 0 || off < pos || off + size > UINT16_MAX)
			continue;
		if (f->nr + (off > pos) + 1 > FRAME_COLUMNS_MAX_FIELDS)
			return -EINVAL;
		if (off > pos)
			add_column(f, pos, off - pos, false);
		add_column(f, off, size, sorted[i].is_signed);
		pos = off + size;
	}
	f->fixed = (uint16_t)pos;
	free(fc->fmt[id]);
	fc->fmt[id] = steal_ptr(f);
	return 0;
}

int frame_columns_add_format(struct frame_columns *fc, const char *text)
{
	struct frame_columns_field fields[FRAME_COLUMNS_MAX_FIELDS];
	const char *p;
	size_t n = 0;
	unsigned int id;
	int r;

	p = strncmp(text, "ID: ", 4) == 0 ? text : strstr(text, "\nID: ");
	if (!p || sscanf(p + (*p == '\n'), "ID: %u", &id) != 1 || id >= FC_NR_IDS)
		return -EINVAL;
	for (p = strstr(text, "field:"); p; p = strstr(p + 6, "field:")) {
		unsigned int off, size, sgn;
		const char *q = strstr(p, "offset:");
		const char *eol = strchr(p, '\n');

		if (!q || (eol && q > eol) || sscanf(q, "offset:%u;\tsize:%u;\tsigned:%u;", &off, &size, &sgn) != 3)
			continue;
		if (off > UINT16_MAX || size > UINT16_MAX)
			continue;
		if (n == FRAME_COLUMNS_MAX_FIELDS)
			return -EINVAL;
		fields[n++] = (struct frame_columns_field){ (uint16_t)off, (uint16_t)size, sgn != 0 };
	}
	if (n == 0)
		return -EINVAL;
	r = frame_columns_add_event(fc, (uint16_t)id, fields, n);
	return r < 0 ? r : (int)id;
}

void frame_columns_get_stats(const struct frame_columns *fc, struct frame_columns_stats *ret)
{
	*ret = fc->stats;
}

/* ---- the walk ---- */

/* Make room for n more bytes in b, cheaply when there is. */
static inline int room(struct buf *b, size_t n)
{
	return b->cap - b->len >= n ? 0 : buf_reserve(b, n);
}

static inline void vput(struct buf *b, uint64_t v)
{
	b->len = (size_t)(fc_put_varint(b->data + b->len, v) - b->data);
}

/* Frame type of event id (with a format), or -1: unknown, or the frame has too many types. */
static int frame_type(struct frame_columns *fc, uint16_t id)
{
	struct fc_ftype *t;

	if (fc->ftype_of[id])
		return fc->ftype_of[id] - 1;
	if (!fc->fmt[id] || fc->nr_types == FRAME_COLUMNS_MAX_TYPES)
		return -1;
	t = &fc->types[fc->nr_types];
	t->fmt = fc->fmt[id];
	t->id = id;
	buf_reset(&t->ev);
	fc->ftype_of[id] = (uint8_t)++fc->nr_types;
	return fc->nr_types - 1;
}

/*
 * One entry at data + off (avail bytes up to the commit length). Returns its
 * length (> 0), 0 if the page ends here (what is left is the page's tail),
 * -EPROTO if it runs past the commit length, -ENOMEM.
 */
static int walk_entry(struct frame_columns *fc, const uint8_t *frame, size_t pos, size_t avail)
{
	const uint8_t *e = frame + pos;
	uint32_t hdr, arr = 0;
	unsigned int type_len;
	size_t total, dlen = 0;
	uint8_t kind = FC_K_RAW;
	int k;

	if (avail < 4)
		return 0;
	memcpy(&hdr, e, 4);
	type_len = hdr & 31;
	if (type_len == 0 || type_len >= FC_TYPE_PADDING) {
		if (avail < 8)
			return type_len == FC_TYPE_PADDING && !(hdr >> 5) ? 0 : -EPROTO;
		memcpy(&arr, e + 4, 4);
	}
	if (type_len == FC_TYPE_PADDING && !(hdr >> 5))
		return 0;
	if (type_len == FC_TYPE_PADDING)
		total = 4 + (size_t)arr;
	else if (type_len >= FC_TYPE_TIME_EXTEND)
		total = 8;
	else if (type_len == 0)
		total = 4 + (((size_t)arr + 3) & ~(size_t)3);
	else
		total = 4 + (size_t)type_len * 4;
	if (total > avail || total > INT32_MAX)
		return -EPROTO;

	if (type_len >= FC_TYPE_TIME_EXTEND) {
		kind = type_len == FC_TYPE_TIME_EXTEND ? FC_K_EXTEND : FC_K_STAMP;
	} else if (type_len != FC_TYPE_PADDING && (type_len || (arr >= 6 && !(arr & 3)))) {
		dlen = type_len ? total - 4 : arr - 4;
		k = frame_type(fc, (uint16_t)fc_get(e + total - dlen, 2));
		if (k >= 0 && dlen >= fc->types[k].fmt->fixed)
			kind = (uint8_t)(FC_K_EVENT + k);
	}

	if (room(&fc->s[FC_S_KIND], 1) < 0 || room(&fc->s[FC_S_DELTA], 10) < 0 ||
	    room(&fc->s[FC_S_LEN], 10) < 0)
		return -ENOMEM;
	fc->s[FC_S_KIND].data[fc->s[FC_S_KIND].len++] = kind;
	if (kind == FC_K_RAW) {
		fc->stats.raw_entries++;
		vput(&fc->s[FC_S_LEN], total);
		if (buf_append(&fc->s[FC_S_RAW], e, total) < 0)
			return -ENOMEM;
	} else if (kind < FC_K_EVENT) {
		vput(&fc->s[FC_S_DELTA], (uint64_t)arr << 27 | hdr >> 5);
	} else {
		struct buf *ev = &fc->types[kind - FC_K_EVENT].ev;

		vput(&fc->s[FC_S_DELTA], hdr >> 5);
		vput(&fc->s[FC_S_LEN], type_len);
		if (!type_len)
			vput(&fc->s[FC_S_LEN], arr);
		if (room(ev, 8) < 0)
			return -ENOMEM;
		put_le32(ev->data + ev->len, (uint32_t)(pos + total - dlen));
		put_le32(ev->data + ev->len + 4, (uint32_t)dlen);
		ev->len += 8;
	}
	fc->stats.entries++;
	return (int)total;
}

/* Undo the streams to the given lengths (a page that turned out not to walk). */
static void truncate_streams(struct frame_columns *fc, const size_t *lens, const size_t *evlens)
{
	for (size_t i = 0; i < FC_S_FIXED; i++)
		fc->s[i].len = lens[i];
	for (size_t i = 0; i < fc->nr_types; i++)
		fc->types[i].ev.len = evlens[i];
}

/* One whole page of plen bytes at frame + pos, commit word cw. Returns 0 or -ENOMEM. */
static int encode_page(struct frame_columns *fc, const uint8_t *frame, size_t pos, size_t plen,
		       uint64_t cw, uint64_t *prev_ts)
{
	size_t hdr = 8 + fc->long_size, commit = (size_t)(cw & FC_COMMIT_MASK), off = 0;
	size_t lens[FC_S_FIXED], evlens[FRAME_COLUMNS_MAX_TYPES];
	struct buf *pg = &fc->s[FC_S_PAGE];
	uint64_t ts = fc_get(frame + pos, 8), entries = 0, saved_entries = fc->stats.entries;
	uint64_t saved_raw = fc->stats.raw_entries;
	unsigned int saved_types = fc->nr_types;
	int n;

	for (size_t i = 0; i < FC_S_FIXED; i++)
		lens[i] = fc->s[i].len;
	for (size_t i = 0; i < fc->nr_types; i++)
		evlens[i] = fc->types[i].ev.len;
	while ((n = walk_entry(fc, frame, pos + hdr + off, commit - off)) > 0) {
		off += (size_t)n;
		entries++;
	}
	if (n == -ENOMEM)
		return n;
	if (room(pg, 60) < 0)
		return -ENOMEM;
	if (n < 0) {
		/* damaged: store the page as it is */
		truncate_streams(fc, lens, evlens);
		for (size_t i = saved_types; i < fc->nr_types; i++)
			fc->ftype_of[fc->types[i].id] = 0;
		fc->nr_types = saved_types;
		fc->stats.entries = saved_entries;
		fc->stats.raw_entries = saved_raw;
		fc->stats.verbatim_pages++;
		vput(pg, FC_PAGE_VERBATIM);
		vput(pg, plen);
		return buf_append(&fc->s[FC_S_RAW], frame + pos, plen);
	}
	fc->stats.pages++;
	vput(pg, FC_PAGE_COLUMNS);
	vput(pg, fc_zigzag((int64_t)(ts - *prev_ts)));
	*prev_ts = ts;
	vput(pg, cw >> FC_FLAGS_SHIFT);
	if (cw & FC_MISSED_STORED)
		vput(pg, fc_get(frame + pos + hdr + commit, fc->long_size));
	vput(pg, entries);
	vput(pg, commit - off);
	return buf_append(&fc->s[FC_S_RAW], frame + pos + hdr + off, commit - off);
}

/* Split the frame into pages and walk them. Returns the length of the frame's tail, or -ENOMEM. */
static ssize_t walk_frame(struct frame_columns *fc, const uint8_t *frame, size_t len,
			  uint64_t *ret_pages)
{
	size_t pos = 0, hdr = 8 + fc->long_size;
	uint64_t prev_ts = 0, pages = 0;
	int r;

	while (len - pos >= hdr) {
		uint64_t cw = fc_get(frame + pos + 8, fc->long_size);
		size_t plen = hdr + (size_t)(cw & FC_COMMIT_MASK);

		if (cw & FC_MISSED_STORED)
			plen += fc->long_size;
		/* bits 20-29 are never set in a page we can read (segment_page_len()) */
		if ((cw >> FC_FLAGS_SHIFT) & 0x3ff || plen > len - pos)
			break;
		r = encode_page(fc, frame, pos, plen, cw, &prev_ts);
		if (r < 0)
			return r;
		pos += plen;
		pages++;
	}
	fc->stats.tail_bytes = len - pos;
	if (buf_append(&fc->s[FC_S_RAW], frame + pos, len - pos) < 0)
		return -ENOMEM;
	*ret_pages = pages;
	return (ssize_t)(len - pos);
}

/* ---- columns ---- */

/*
 * Choosing a column's transform costs about as much as encoding it; the
 * best one changes slowly with the load, so it is chosen again only every
 * so many frames (and for a new format, and after a format changes).
 */
#define FC_CHOOSE_EVERY 16

static uint64_t hash_key(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return v;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return hash_key(h);
}

/* A fresh dictionary for up to n values. Returns 0 or -ENOMEM. */
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
	size_t mask = fc->nr_slots - 1, i = hash_key(key) & mask;

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

struct col_ref {
	const uint8_t *frame;
	const uint8_t *ev;	/* (offset, length) pairs */
	size_t n;
	unsigned int offset, size;	/* size 0: the tail, from offset to the payload's end */
	bool blob, sgn;
};

static inline void col_value(const struct col_ref *c, size_t i, uint32_t *off, uint32_t *len)
{
	uint32_t po = get_le32(c->ev + 8 * i), pl = get_le32(c->ev + 8 * i + 4);

	*off = po + c->offset;
	*len = c->size ? c->size : pl - c->offset;
}

static inline uint64_t int_literal(const struct col_ref *c, uint64_t v)
{
	return c->sgn ? fc_zigzag(fc_sext(v, c->size)) : v;
}

/* The transform that makes column c smallest, by the bytes it would take. */
static int choose(struct frame_columns *fc, const struct col_ref *c, uint8_t *ret)
{
	uint64_t raw = 0, var = 0, delta = 0, dict = 0, prev = 0;
	uint32_t next = 0;
	int r;

	r = dict_start(fc, c->n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->n; i++) {
		uint32_t off, len, idx, before;
		uint64_t v;

		col_value(c, i, &off, &len);
		raw += len;
		before = next;
		if (c->blob) {
			idx = dict_find(fc, hash_bytes(c->frame + off, len), c->frame, off, len, true, &next);
			dict += fc_varint_len(idx) + (next != before ? len : 0);
			continue;
		}
		v = fc_get(c->frame + off, c->size);
		var += fc_varint_len(int_literal(c, v));
		delta += fc_varint_len(fc_zigzag(fc_sext(v - prev, c->size)));
		prev = v;
		idx = dict_find(fc, v, c->frame, 0, 0, false, &next);
		dict += fc_varint_len(idx) + (next != before ? fc_varint_len(int_literal(c, v)) : 0);
	}
	*ret = FC_T_RAW;
	if (!c->blob && var < raw)
		*ret = FC_T_VARINT;
	if (!c->blob && delta < MIN(raw, var))
		*ret = FC_T_DELTA;
	if (dict < MIN(raw, c->blob ? raw : MIN(var, delta)))
		*ret = FC_T_DICT;
	return 0;
}

/* Append column c with transform t to fc->cols. Returns 0 or -ENOMEM. */
static int encode_column(struct frame_columns *fc, const struct col_ref *c, uint8_t t)
{
	struct buf *o = &fc->cols;
	uint64_t prev = 0;
	uint32_t next = 0;
	int r;

	if (t == FC_T_DICT) {
		r = dict_start(fc, c->n);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < c->n; i++) {
		uint32_t off, len, idx, before;
		uint64_t v;

		col_value(c, i, &off, &len);
		if (room(o, 20 + (size_t)len) < 0)
			return -ENOMEM;
		if (t == FC_T_RAW) {
			memcpy(o->data + o->len, c->frame + off, len);
			o->len += len;
			continue;
		}
		v = c->blob ? hash_bytes(c->frame + off, len) : fc_get(c->frame + off, c->size);
		switch (t) {
		case FC_T_VARINT:
			vput(o, int_literal(c, v));
			break;
		case FC_T_DELTA:
			vput(o, fc_zigzag(fc_sext(v - prev, c->size)));
			prev = v;
			break;
		default:
			before = next;
			idx = dict_find(fc, v, c->frame, off, len, c->blob, &next);
			vput(o, idx);
			if (next == before)
				break;
			if (c->blob) {
				memcpy(o->data + o->len, c->frame + off, len);
				o->len += len;
			} else {
				vput(o, int_literal(c, v));
			}
			break;
		}
	}
	return 0;
}

/* Columns of frame type k, and their entries in the type table. */
static int encode_type(struct frame_columns *fc, const uint8_t *frame, unsigned int k)
{
	const struct fc_ftype *ft = &fc->types[k];
	struct fc_format *f = ft->fmt;
	bool again = !f->chosen || fc->frame_no - f->chosen >= FC_CHOOSE_EVERY;
	struct col_ref c = { frame, ft->ev.data, ft->ev.len / 8, 0, 0, false, false };
	struct buf *tb = &fc->table;
	uint8_t t;
	int r;

	if (room(tb, 30 + 12 * (size_t)f->nr) < 0)
		return -ENOMEM;
	vput(tb, ft->id);
	vput(tb, f->fixed);
	vput(tb, f->nr);
	for (unsigned int i = 0; i <= f->nr; i++) {
		size_t start = fc->cols.len;

		if (i < f->nr) {
			c.offset = f->cols[i].offset;
			c.size = f->cols[i].size;
			c.blob = f->cols[i].blob;
			c.sgn = f->cols[i].flags & FC_F_SIGNED;
		} else {
			c.offset = f->fixed;
			c.size = 0;
			c.blob = true;
			c.sgn = false;
		}
		if (again) {
			r = choose(fc, &c, &f->t[i]);
			if (r < 0)
				return r;
		}
		t = f->t[i];
		r = encode_column(fc, &c, t);
		if (r < 0)
			return r;
		if (i < f->nr) {
			vput(tb, c.size);
			tb->data[tb->len++] = f->cols[i].flags;
		}
		tb->data[tb->len++] = t;
		r = buf_append_u32(&fc->lens, (uint32_t)(fc->cols.len - start));
		if (r < 0)
			return r;
	}
	if (again)
		f->chosen = fc->frame_no;
	return 0;
}

static void frame_reset(struct frame_columns *fc)
{
	for (unsigned int i = 0; i < fc->nr_types; i++)
		fc->ftype_of[fc->types[i].id] = 0;
	fc->nr_types = 0;
	for (size_t i = 0; i < FC_S_FIXED; i++)
		buf_reset(&fc->s[i]);
	buf_reset(&fc->cols);
	buf_reset(&fc->lens);
	buf_reset(&fc->table);
	memset(&fc->stats, 0, sizeof(fc->stats));
}

int frame_columns_encode(struct frame_columns *fc, const void *frame, size_t len,
			 struct buf *out)
{
	uint64_t pages = 0;
	size_t nr_streams;
	ssize_t tail;
	int r;

	if (len > INT32_MAX)
		return -EFBIG;
	frame_reset(fc);
	fc->frame_no++;
	tail = walk_frame(fc, frame, len, &pages);
	if (tail < 0)
		return (int)tail;
	for (unsigned int k = 0; k < fc->nr_types; k++) {
		r = encode_type(fc, frame, k);
		if (r < 0)
			return r;
	}
	nr_streams = FC_S_FIXED + fc->lens.len / 4;
	r = room(out, 2 + 10 * 5 + fc->table.len + 10 * nr_streams);
	if (r < 0)
		return r;
	out->data[out->len++] = FRAME_COLUMNS_VERSION;
	out->data[out->len++] = (uint8_t)fc->long_size;
	vput(out, len);
	vput(out, pages);
	vput(out, (uint64_t)tail);
	vput(out, fc->nr_types);
	memcpy(out->data + out->len, fc->table.data, fc->table.len);
	out->len += fc->table.len;
	vput(out, nr_streams);
	for (size_t i = 0; i < FC_S_FIXED; i++)
		vput(out, fc->s[i].len);
	for (size_t i = 0; i < fc->lens.len / 4; i++)
		vput(out, get_le32(fc->lens.data + 4 * i));
	for (size_t i = 0; i < FC_S_FIXED; i++) {
		r = buf_append(out, fc->s[i].data, fc->s[i].len);
		if (r < 0)
			return r;
	}
	return buf_append(out, fc->cols.data, fc->cols.len);
}
