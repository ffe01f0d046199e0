/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A growable byte buffer for building payloads. */
#ifndef STACKMAPD_BUF_H
#define STACKMAPD_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

/* Make room for n more bytes. Returns 0 or -ENOMEM. */
int buf_reserve(struct buf *b, size_t n);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_u16(struct buf *b, uint16_t v);	/* little-endian */
int buf_append_u32(struct buf *b, uint32_t v);	/* little-endian */
int buf_append_u64(struct buf *b, uint64_t v);	/* little-endian */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);			/* len = 0, keeps memory */
void buf_done(struct buf *b);			/* frees memory */

static inline uint16_t get_le16(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t get_le32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint64_t get_le64(const void *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32((const uint8_t *)p + 4) << 32;
}

static inline void put_le32(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static inline void put_le64(void *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#endif
