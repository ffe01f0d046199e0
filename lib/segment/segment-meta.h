/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a segment's META record (doc/segment-format.md, META keys): the
 * one parser of its key=value lines, and the one place that decides what
 * a reader assumes when a key that describes the traced machine is
 * missing or invalid. Used by the decoder and by stackmapctl info.
 */
#ifndef STACKMAPD_SEGMENT_META_H
#define STACKMAPD_SEGMENT_META_H

#include <stddef.h>
#include <stdint.h>

#include "page-walk.h"
#include "util.h"

/* Largest page_size a reader accepts from META. */
#define SEGMENT_META_MAX_PAGE_SIZE ((size_t)64 << 20)

struct segment_meta_kv {
	const char *key;
	const char *value;
};

struct segment_meta {
	char *text;			/* the payload, split in place; owned */
	struct segment_meta_kv *kv;	/* in file order; owned, pointing into text */
	size_t n;
};

/*
 * Parse a META payload (data, len bytes, borrowed) into *m, replacing what
 * it held. Lines without '=' are skipped; a later duplicate key does not
 * replace the first one. Returns 0 or -ENOMEM (then *m is empty).
 */
int segment_meta_parse(struct segment_meta *m, const void *data, size_t len);

/* Free what *m holds; it is then empty. */
void segment_meta_done(struct segment_meta *m);

/* Value of key, or NULL. Borrowed from m. */
const char *segment_meta_get(const struct segment_meta *m, const char *key);

/* An unsigned decimal value: 0 and *ret, -ENOENT if absent or empty, -EINVAL if not a number. */
int segment_meta_u64(const struct segment_meta *m, const char *key, uint64_t *ret);

/* Keys of segment_meta_page_format() that were missing or invalid. */
#define SEGMENT_META_GUESSED_LONG_SIZE 0x1	/* the host's long size was assumed */
#define SEGMENT_META_GUESSED_BYTE_ORDER 0x2	/* the host's byte order was assumed */
#define SEGMENT_META_GUESSED_PAGE_SIZE 0x4	/* page size unknown (0) */

/*
 * The traced machine's page format from long_size, byte_order and
 * page_size (64 bytes .. SEGMENT_META_MAX_PAGE_SIZE). Returns a mask of
 * SEGMENT_META_GUESSED_* for the keys that were missing or invalid.
 */
unsigned int segment_meta_page_format(const struct segment_meta *m, struct page_format *ret);

#endif
