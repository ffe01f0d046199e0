/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Growable byte buffers (buf.h): the payloads of segment records, control
 * replies and JSON text are assembled in them. Allocation failures are
 * returned, never fatal; a failed append leaves the buffer as it was.
 */
#include <stdarg.h>

#include "buf.h"
#include "util.h"

int buf_reserve(struct buf *b, size_t n)
{
	/* the column encoder reserves for every value: keep the common case to one test */
	if (_likely_(b->cap - b->len >= n))
		return 0;
	if (n > SIZE_MAX - b->len)
		return -ENOMEM;
	return GREEDY_REALLOC(b->data, b->cap, MAX(b->len + n, BUF_MIN_ROOM));
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	int r = buf_reserve(b, n);

	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int buf_append_u16(struct buf *b, uint16_t v)
{
	uint8_t x[2];

	put_le16(x, v);
	return buf_append(b, x, sizeof(x));
}

int buf_append_u32(struct buf *b, uint32_t v)
{
	uint8_t x[4];

	put_le32(x, v);
	return buf_append(b, x, sizeof(x));
}

int buf_append_u64(struct buf *b, uint64_t v)
{
	uint8_t x[8];

	put_le64(x, v);
	return buf_append(b, x, sizeof(x));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	r = buf_reserve(b, (size_t)n + 1);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	(void)vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
}

void buf_done(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
