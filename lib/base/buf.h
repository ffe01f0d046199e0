/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A growable byte buffer for building payloads (and, through byteorder.h, the LE helpers). */
#ifndef STACKMAPD_BUF_H
#define STACKMAPD_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "byteorder.h"

struct buf {
	uint8_t *data;
	size_t len;
	size_t cap;
};

/* The least room a buffer gets: its first allocation. */
#define BUF_MIN_ROOM ((size_t)256)

/*
 * Make room for n more bytes (GREEDY_REALLOC(), and at least BUF_MIN_ROOM).
 * Returns 0 or -ENOMEM.
 */
int buf_reserve(struct buf *b, size_t n);
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_u16(struct buf *b, uint16_t v);	/* little-endian */
int buf_append_u32(struct buf *b, uint32_t v);	/* little-endian */
int buf_append_u64(struct buf *b, uint64_t v);	/* little-endian */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_reset(struct buf *b);			/* len = 0, keeps memory */
void buf_done(struct buf *b);			/* frees memory */

#endif
