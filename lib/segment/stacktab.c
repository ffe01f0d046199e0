/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The STACKS record's entries (stacktab.h): encoding, decoding with every
 * length checked, and the comparison of two entries' frames. The table
 * that resolves references by generation is stacktab-resolve.c.
 */
#include <assert.h>

#include "stacktab.h"
#include "util.h"

#define ENTRY_HDR_SIZE 16
#define KNOWN_FLAGS (SEGMENT_STACK_F_ABSENT | SEGMENT_STACK_F_TEXT)

int stacktab_encode(struct buf *b, const struct stack_entry *e)
{
	size_t need = ENTRY_HDR_SIZE;
	int r;

	assert(b);
	assert(e);

	if (e->flags & ~KNOWN_FLAGS)
		return -EINVAL;
	if ((e->flags & SEGMENT_STACK_F_ABSENT) && e->nr)
		return -EINVAL;
	if (e->nr && !(e->flags & SEGMENT_STACK_F_TEXT) && !e->ips)
		return -EINVAL;
	if (e->nr && (e->flags & SEGMENT_STACK_F_TEXT) && !e->text)
		return -EINVAL;

	if (e->flags & SEGMENT_STACK_F_TEXT) {
		for (uint16_t i = 0; i < e->nr; i++) {
			if (!e->text[i])
				return -EINVAL;
			need += strlen(e->text[i]) + 1;
		}
	} else
		need += (size_t)e->nr * 8;

	/* Reserve everything first: the appends below cannot fail, b is never half-written. */
	r = buf_reserve(b, need);
	if (r < 0)
		return r;
	(void)buf_append_u32(b, e->generation);
	(void)buf_append_u32(b, e->id);
	(void)buf_append_u32(b, e->refs);
	(void)buf_append_u16(b, e->nr);
	(void)buf_append_u16(b, e->flags);
	for (uint16_t i = 0; i < e->nr; i++) {
		if (e->flags & SEGMENT_STACK_F_TEXT)
			(void)buf_append(b, e->text[i], strlen(e->text[i]) + 1);
		else
			(void)buf_append_u64(b, e->ips[i]);
	}
	return 0;
}

int stacktab_decode(const void *payload, size_t len,
		    int (*cb)(const struct stack_entry *e, void *userdata), void *userdata)
{
	_cleanup_free_ uint64_t *ips = NULL;
	_cleanup_free_ const char **text = NULL;
	size_t ips_cap = 0, text_cap = 0;
	const uint8_t *p = payload, *end = p + len;
	int r;

	assert(payload || len == 0);
	assert(cb);

	while (p < end) {
		struct stack_entry e = {};

		if ((size_t)(end - p) < ENTRY_HDR_SIZE)
			return -EBADMSG;
		e.generation = get_le32(p);
		e.id = get_le32(p + 4);
		e.refs = get_le32(p + 8);
		e.nr = get_le16(p + 12);
		e.flags = get_le16(p + 14);
		p += ENTRY_HDR_SIZE;

		if ((e.flags & SEGMENT_STACK_F_ABSENT) && e.nr)
			return -EBADMSG;
		if (e.nr > STACKTAB_MAX_DEPTH)
			return -EBADMSG;

		if (e.flags & SEGMENT_STACK_F_TEXT) {
			if (e.nr > text_cap) {
				const char **n = realloc(text, sizeof(*text) * e.nr);

				if (!n)
					return -ENOMEM;
				text = n;
				text_cap = e.nr;
			}
			for (uint16_t i = 0; i < e.nr; i++) {
				const uint8_t *nul = memchr(p, 0, (size_t)(end - p));

				if (!nul)
					return -EBADMSG;
				text[i] = (const char *)p;
				p = nul + 1;
			}
			e.text = text;
		} else {
			if ((size_t)(end - p) / 8 < e.nr)
				return -EBADMSG;
			if (e.nr > ips_cap) {
				uint64_t *n = realloc(ips, sizeof(*ips) * e.nr);

				if (!n)
					return -ENOMEM;
				ips = n;
				ips_cap = e.nr;
			}
			for (uint16_t i = 0; i < e.nr; i++, p += 8)
				ips[i] = get_le64(p);
			e.ips = ips;
		}

		r = cb(&e, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

int stacktab_frames_equal(const struct stack_entry *a, const struct stack_entry *b)
{
	const uint16_t mask = SEGMENT_STACK_F_ABSENT | SEGMENT_STACK_F_TEXT;

	assert(a);
	assert(b);

	if ((a->flags & mask) != (b->flags & mask) || a->nr != b->nr)
		return 0;
	for (uint16_t i = 0; i < a->nr; i++) {
		if (a->flags & SEGMENT_STACK_F_TEXT) {
			if (!streq(a->text[i], b->text[i]))
				return 0;
		} else if (a->ips[i] != b->ips[i])
			return 0;
	}
	return 1;
}
