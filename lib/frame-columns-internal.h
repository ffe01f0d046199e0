/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the column encoder (frame-columns.c) and decoder
 * (frame-columns-decode.c) share: the stream numbering, entry kinds, column
 * transforms and varint helpers of the encoding in doc/segment-format.md.
 */
#ifndef STACKMAPD_FRAME_COLUMNS_INTERNAL_H
#define STACKMAPD_FRAME_COLUMNS_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "frame-columns.h"

/* Fixed streams, in this order, before the columns of the event types. */
enum {
	FC_S_PAGE,		/* per page: kind, timestamp delta, flags, missed, entries, tail */
	FC_S_KIND,		/* per entry: one byte */
	FC_S_DELTA,		/* per entry: its time delta (varint) */
	FC_S_LEN,		/* per entry: its length code */
	FC_S_RAW,		/* bytes stored as they are */
	FC_S_FIXED
};

/* Page kinds (FC_S_PAGE). */
#define FC_PAGE_COLUMNS 0
#define FC_PAGE_VERBATIM 1

/* Entry kinds (FC_S_KIND); FC_K_EVENT + k is an event of the frame's type k. */
#define FC_K_RAW 0
#define FC_K_EXTEND 1
#define FC_K_STAMP 2
#define FC_K_EVENT 3

/* Column transforms. */
enum {
	FC_T_RAW,		/* the value's bytes */
	FC_T_VARINT,		/* varint; zigzag of the sign-extended value if signed */
	FC_T_DELTA,		/* zigzag varint of the difference to the previous value */
	FC_T_DICT,		/* index into the column's dictionary; a new index is followed by the value */
	FC_T_MAX
};

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

	memcpy(&v, p, size);	/* little-endian hosts only; see frame-columns.c */
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

struct fc_format {
	uint16_t fixed;		/* end of the last column; bytes after it are the event's tail */
	uint16_t nr;
	struct fc_column cols[FRAME_COLUMNS_MAX_FIELDS];
	uint8_t t[FRAME_COLUMNS_MAX_FIELDS + 1];	/* transforms last chosen, the tail's last */
	uint64_t chosen;	/* frame number + 1 of that choice, 0: never */
};

/* An event type present in the frame being encoded. */
struct fc_ftype {
	struct fc_format *fmt;
	uint16_t id;
	struct buf ev;		/* per event: u32 payload offset in the frame, u32 payload length */
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
	uint64_t frame_no;
	struct frame_columns_stats stats;
	struct buf dcols;		/* decoder: column states */
	struct buf dict;		/* decoder: dictionary slots */
};

#endif
