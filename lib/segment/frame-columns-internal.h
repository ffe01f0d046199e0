/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the column encoder (frame-columns-encode.c, frame-columns-streams.c)
 * and decoder (frame-columns-decode.c) share with the context they work
 * in (frame-columns.c): the stream numbering, entry kinds, column
 * transforms and varint helpers of the encoding in doc/segment-format.md,
 * and the context's state.
 */
#ifndef STACKMAPD_FRAME_COLUMNS_INTERNAL_H
#define STACKMAPD_FRAME_COLUMNS_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "frame-columns.h"
#include "hashtab.h"

/* Fixed streams, in this order, before the columns of the event types. */
enum {
	FC_S_PAGE,		/* per page: kind, timestamp delta, flags, missed, entries, tail */
	FC_S_CODE,		/* per entry: its code (FC_C_*), and a new template's type */
	FC_S_DELTA,		/* per entry: its time delta (varint) */
	FC_S_LEN,		/* verbatim entries' lengths, new templates' length codes */
	FC_S_RAW,		/* bytes stored as they are */
	FC_S_TVAL,		/* new templates' template bytes */
	FC_S_FIXED
};

/* Page kinds (FC_S_PAGE). */
#define FC_PAGE_COLUMNS 0
#define FC_PAGE_VERBATIM 1

/*
 * Entry kinds, as the encoder's walk notes them (FC_K_EVENT + k: an event
 * of the frame's type k), and entry codes (FC_S_CODE): the successor of
 * the previous event's template, a non-event entry, or FC_C_TPL + i,
 * template i (i = the number of templates so far: a new one).
 */
#define FC_K_RAW 0
#define FC_K_EXTEND 1
#define FC_K_STAMP 2
#define FC_K_EVENT 3

#define FC_C_NEXT 0
#define FC_C_RAW 1
#define FC_C_EXTEND 2
#define FC_C_STAMP 3
#define FC_C_TPL 4

/* Column transforms. */
enum {
	FC_T_RAW,		/* the value's bytes */
	FC_T_VARINT,		/* varint; zigzag of the sign-extended value if signed */
	FC_T_DELTA,		/* zigzag varint of the difference to the previous value */
	FC_T_DICT,		/* index into the column's dictionary; a new index is followed by the value */
	FC_T_TDELTA,		/* as DELTA, against the previous value in events of the same template */
	FC_T_TEMPLATE,		/* part of the event's template */
	FC_T_MAX
};

/*
 * Time transforms: an event's time delta, or the zigzag of its difference
 * to the delta of the previous event of its template, split into a low
 * byte and a varint of the rest, in two streams of the event's type; or
 * (version 3) the zigzag of its difference to the delta its template had
 * after the same predecessor (else after any), as one varint in the second
 * stream. FC_TIME_PAIR_SLOTS predecessors are remembered per template.
 */
#define FC_TIME_PLAIN 0
#define FC_TIME_TEMPLATE 1
#define FC_TIME_PAIR 2
#define FC_TIME_STREAMS 2	/* after the tail: low bytes, high parts */
#define FC_TIME_PAIR_SLOTS 2	/* fc_pair_base() and fc_pair_learn() know it */

/*
 * The time memory of a template for FC_TIME_PAIR: the delta of its last
 * event, and for its last FC_TIME_PAIR_SLOTS predecessors (template + 1,
 * 0: none) the delta of its last event after each.
 */
struct fc_pair {
	uint32_t last;
	bool any;		/* it has had an event */
	uint32_t pred[FC_TIME_PAIR_SLOTS];
	uint32_t delta[FC_TIME_PAIR_SLOTS];
};

/*
 * What FC_TIME_PAIR predicts for an event of a template with memory m
 * after template pred (UINT32_MAX: none); false if nothing.
 */
static inline bool fc_pair_base(const struct fc_pair *m, uint32_t pred, uint32_t *ret)
{
	if (pred != UINT32_MAX && (m->pred[0] == pred + 1 || m->pred[1] == pred + 1)) {
		*ret = m->delta[m->pred[0] == pred + 1 ? 0 : 1];
		return true;
	}
	*ret = m->last;
	return m->any;
}

/*
 * The memory learns an event's delta: its predecessor comes first (a
 * predecessor in the second slot moves up, a new one pushes the second
 * out).
 */
static inline void fc_pair_learn(struct fc_pair *m, uint32_t pred, uint32_t delta)
{
	if (pred == UINT32_MAX || m->pred[0] != pred + 1) {
		m->pred[1] = m->pred[0];
		m->delta[1] = m->delta[0];
		m->pred[0] = pred + 1;
	}
	m->delta[0] = delta;
	m->last = delta;
	m->any = true;
}

/* Field flags in the type table. */
#define FC_F_SIGNED 0x1

#define FC_TYPE_PADDING 29
#define FC_TYPE_TIME_EXTEND 30
#define FC_TYPE_TIME_STAMP 31
#define FC_COMMIT_MASK 0xfffffULL
#define FC_MISSED_STORED (1ULL << 30)
#define FC_FLAGS_SHIFT 20

static inline uint64_t fc_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t fc_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Sign-extend the low size bytes of v. */
static inline int64_t fc_sext(uint64_t v, unsigned int size)
{
	unsigned int sh = 64 - 8 * size;

	return sh ? (int64_t)(v << sh) >> sh : (int64_t)v;
}

static inline uint64_t fc_mask(unsigned int size)
{
	return size >= 8 ? UINT64_MAX : ((uint64_t)1 << (8 * size)) - 1;
}

/* Little-endian unsigned integer of size 1, 2, 4 or 8 bytes. */
static inline uint64_t fc_get(const uint8_t *p, unsigned int size)
{
	uint64_t v = 0;

	memcpy(&v, p, size);	/* little-endian hosts only; see frame-columns-encode.c */
	return v;
}

static inline void fc_put(uint8_t *p, uint64_t v, unsigned int size)
{
	memcpy(p, &v, size);
}

static inline unsigned int fc_varint_len(uint64_t v)
{
	unsigned int n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Write a varint at p (room for 10 bytes); returns the new end. */
static inline uint8_t *fc_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Make room for n more bytes in b, cheaply when there is. */
static inline int fc_room(struct buf *b, size_t n)
{
	return b->cap - b->len >= n ? 0 : buf_reserve(b, n);
}

/* Append a varint to b (room for 10 bytes checked by the caller). */
static inline void fc_vput(struct buf *b, uint64_t v)
{
	b->len = (size_t)(fc_put_varint(b->data + b->len, v) - b->data);
}

/* A bounded reader of one stream. */
struct fc_in {
	const uint8_t *p, *end;
};

static inline int fc_get_varint(struct fc_in *in, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; shift < 64 && in->p < in->end; shift += 7) {
		uint8_t b = *in->p++;

		if (shift == 63 && b > 1)
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* n bytes from the stream; NULL if it has fewer. */
static inline const uint8_t *fc_get_bytes(struct fc_in *in, size_t n)
{
	const uint8_t *p = in->p;

	if ((size_t)(in->end - in->p) < n)
		return NULL;
	in->p += n;
	return p;
}

#define FC_NR_IDS 65536

struct fc_column {
	uint16_t offset, size;
	uint8_t flags;
	bool blob;		/* size is not 1, 2, 4 or 8 */
};

/* A byte range of a payload. */
struct fc_range {
	uint16_t off, len;
};

struct fc_format {
	uint16_t fixed;		/* end of the last column; bytes after it are the event's tail */
	uint16_t nr;
	struct fc_column cols[FRAME_COLUMNS_MAX_FIELDS];
	uint8_t t[FRAME_COLUMNS_MAX_FIELDS + 1];	/* transforms last chosen, the tail's last */
	struct fc_range rng[FRAME_COLUMNS_MAX_FIELDS];	/* template columns, adjacent ones merged */
	uint8_t nr_rng;
	bool tail_tpl;		/* the tail is part of the template */
	uint8_t time;		/* time transform: FC_TIME_* */
	uint64_t chosen;	/* frame number of that choice, 0: never */
};

/* An event entry of the frame being encoded. */
struct fc_ent {
	uint32_t off, dlen;	/* payload offset in the frame, payload length */
	uint32_t arr;		/* array[0] if type_len is 0 */
	uint32_t delta;		/* its time delta */
	uint32_t prev;		/* payload offset of the previous event of its template, or UINT32_MAX */
	uint8_t k, type_len;
	bool has_base;
	uint32_t base;		/* what FC_TIME_PAIR predicts for its delta, if has_base */
};

/* A template: an event type, a length code and the bytes of the template columns. */
struct fc_tpl {
	uint64_t hash;
	uint32_t first, last;	/* payload offsets of its first and last event */
	uint32_t succ;		/* template of the event that last followed one of it, + 1 */
	uint32_t arr;
	uint8_t k, type_len;
	struct fc_pair pair;
};

/* An event type present in the frame being encoded. */
struct fc_ftype {
	struct fc_format *fmt;
	uint16_t id;
	struct buf ev;		/* its events: u32 indexes into the frame's entries */
};

/* Dictionary slot; valid only when stamp is the current column's. */
struct fc_slot {
	uint64_t key;
	uint32_t stamp;
	uint32_t idx;
	uint32_t off, len;	/* blobs: where the value's first occurrence is */
};

struct frame_columns {
	unsigned int long_size;
	uint8_t version;		/* of the encoding written: 2 or FRAME_COLUMNS_VERSION */
	uint64_t page_sum;		/* time deltas of the page being walked */
	struct fc_format **fmt;		/* by event id, NULL: unknown */
	uint8_t *ftype_of;		/* by event id: frame type + 1, 0: none yet */
	struct fc_ftype types[FRAME_COLUMNS_MAX_TYPES];
	unsigned int nr_types;
	struct buf s[FC_S_FIXED];
	struct buf cols;		/* the column streams, back to back */
	struct buf lens;		/* their lengths, u32 each */
	struct buf table;		/* the encoded type table */
	struct fc_slot *slots;
	size_t nr_slots;		/* a power of two */
	uint32_t stamp;
	struct buf kinds;		/* the frame's entry kinds (FC_K_*), one byte each */
	struct buf ents;		/* the frame's events (struct fc_ent) */
	struct buf tpls;		/* the frame's templates (struct fc_tpl) */
	struct hashtab tslots;		/* templates of the frame: index + 1 */
	uint64_t frame_no;
	struct frame_columns_stats stats;
	size_t head_len;		/* of the last encoding: bytes before the streams */
	struct buf dcols;		/* decoder: column states */
	struct buf dict;		/* decoder: dictionary slots */
	struct buf dtpls;		/* decoder: templates */
	size_t charged;			/* decoder: bytes of the three above, in the budget */
};

/*
 * Choosing costs about as much as encoding and the best choice changes
 * slowly with the load: it is made again only every so many frames (and
 * for a format new to the context). A column is part of the template when
 * it has at most one distinct value per FC_TEMPLATE_RATIO events.
 */
#define FC_CHOOSE_EVERY 16
#define FC_TEMPLATE_RATIO 8

/* frame-columns-streams.c, for frame-columns-encode.c once the walk is done */
int fc_choose_template(struct frame_columns *fc, const uint8_t *frame, unsigned int k);
int fc_encode_templates(struct frame_columns *fc, const uint8_t *frame);
int fc_encode_type(struct frame_columns *fc, const uint8_t *frame, unsigned int k);

#endif
