/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Validating walk over one ring-buffer page (page-walk.h). The layout is
 * the kernel's (kernel/trace/ring_buffer.c, events/header_page and
 * header_event): a header of a u64 timestamp and a commit word (a long:
 * data length in bits 0-19, MISSED_STORED and MISSED_EVENTS in bits 30 and
 * 31), then entries with a 32-bit header, type_len in the low 5 bits (the
 * high 5 on big-endian machines) and time_delta in the other 27:
 *   0       data length in array[0] (including array[0] itself), data after it
 *   1..28   type_len * 4 bytes of data
 *   29      padding (a discarded event), length in array[0]; time_delta 0
 *           means the rest of the page is empty
 *   30      time extend: delta = array[0] << 27 | time_delta
 *   31      absolute timestamp (59 bits; the top bits come from the current time)
 *
 * kbuffer follows the same lengths without checking them, in 32-bit
 * arithmetic: a padding length of 0xfffffffc makes it loop forever, and a
 * length past the data makes it read whatever follows. Here every entry
 * must lie inside the data and move forward, so that on a page this walker
 * accepts, kbuffer takes exactly the same steps.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "byteorder.h"
#include "page-walk.h"

#define TS_SHIFT 27
#define TS_MSB (0xf8ULL << 56)

static uint32_t get_u32(bool big_endian, const uint8_t *p)
{
	return big_endian ? get_be32(p) : get_le32(p);
}

static uint64_t get_uint(bool big_endian, const uint8_t *p, unsigned int size)
{
	if (size == 8)
		return big_endian ? get_be64(p) : get_le64(p);
	return big_endian ? get_be32(p) : get_le32(p);
}

static int walk_fail(struct page_walk *w, size_t page_off, const char *why)
{
	w->error_offset = page_off;
	w->error = why;
	return -EBADMSG;
}

int page_walk_init(struct page_walk *w, const struct page_format *f, const void *page, size_t len)
{
	const uint8_t *p = page;
	size_t hdr, total;
	uint64_t cw;

	assert(w);
	assert(f);
	assert(page || len == 0);

	*w = (struct page_walk){ .page = p, .big_endian = f->big_endian };
	if (f->long_size != 4 && f->long_size != 8)
		return -EINVAL;
	hdr = 8 + f->long_size;
	w->header_size = hdr;
	if (len < hdr)
		return walk_fail(w, 0, "page header cut short");
	w->data = p + hdr;
	w->ts = get_uint(f->big_endian, p, 8);
	cw = get_uint(f->big_endian, p + 8, f->long_size);
	w->commit_word = cw;
	/*
	 * Bits 32 and up are ignored: the kernel adds RB_MISSED_EVENTS as the
	 * int (1 << 31), which 64-bit kernels sign-extend into them. Bits
	 * 20-29 are never set by the kernel; kbuffer masks 27 bits, so with
	 * them set it would read past the data.
	 */
	if (cw & PAGE_COMMIT_UNUSED)
		return walk_fail(w, 8, "commit word has unused bits set");
	w->commit = (size_t)(cw & PAGE_COMMIT_MASK);
	total = hdr + w->commit;
	if (cw & PAGE_MISSED_STORED) {
		w->missed = total + f->long_size <= len ?
			    get_uint(f->big_endian, p + total, f->long_size) : 0;
		total += f->long_size;
	}
	if (total > len)
		return walk_fail(w, 8, "commit length past the end of the page");
	if (f->page_size && total > f->page_size)
		return walk_fail(w, 8, "commit length larger than a page");
	w->stored_len = total;
	return 0;
}

/* Fill *e for the entry at w->off; its array[0] is arr when it has one. */
static int decode_entry(struct page_walk *w, uint32_t hdr, uint32_t arr, struct page_entry *e)
{
	unsigned int type_len = w->big_endian ? hdr >> 27 : hdr & 31;
	unsigned int delta = w->big_endian ? hdr & ((1u << 27) - 1) : hdr >> 5;
	size_t off = w->off;

	*e = (struct page_entry){ .offset = off, .delta = delta, .type = -1 };
	switch (type_len) {
	case 0:
		if (arr < 4)
			return walk_fail(w, w->header_size + off, "event length below its own size");
		e->kind = PAGE_ENTRY_DATA;
		e->len = arr - 4;
		e->payload = w->data + off + 8;
		e->total = 4 + (((size_t)arr + 3) & ~(size_t)3);
		w->ts += delta;
		break;
	case PAGE_TYPE_PADDING:
		e->kind = PAGE_ENTRY_PADDING;
		e->total = 4 + (size_t)arr;
		/* A null event ends the data; kbuffer still jumps by its length. */
		if (delta == 0 && e->total != w->commit - off)
			return walk_fail(w, w->header_size + off,
					 "end-of-page padding does not end at the commit length");
		w->ts += delta;
		break;
	case PAGE_TYPE_TIME_EXTEND:
		e->kind = PAGE_ENTRY_TIME_EXTEND;
		e->total = 8;
		w->ts += ((uint64_t)arr << TS_SHIFT) | delta;
		break;
	case PAGE_TYPE_TIME_STAMP: {
		uint64_t abs = ((uint64_t)arr << TS_SHIFT) | delta;

		if (w->ts & TS_MSB) {
			abs |= w->ts & TS_MSB;
			if (abs < w->ts)
				abs += 1ULL << 59;
		}
		e->kind = PAGE_ENTRY_TIME_STAMP;
		e->total = 8;
		w->ts = abs;
		break;
	}
	default:
		e->kind = PAGE_ENTRY_DATA;
		e->len = (size_t)type_len * 4;
		e->payload = w->data + off + 4;
		e->total = 4 + e->len;
		w->ts += delta;
		break;
	}
	e->ts = w->ts;
	return 0;
}

int page_walk_next_entry(struct page_walk *w, struct page_entry *ret)
{
	struct page_entry e;
	uint32_t hdr, arr = 0;
	unsigned int type_len;
	size_t off;
	int r;

	assert(w);
	assert(ret);
	off = w->off;
	if (w->error)
		return -EBADMSG;
	if (off >= w->commit)
		return 0;
	if (w->commit - off < 4)
		return walk_fail(w, w->header_size + off, "event header cut short");
	hdr = get_u32(w->big_endian, w->data + off);
	type_len = w->big_endian ? hdr >> 27 : hdr & 31;
	if (type_len == 0 || type_len >= PAGE_TYPE_PADDING) {
		if (w->commit - off < 8)
			return walk_fail(w, w->header_size + off, "event header cut short");
		arr = get_u32(w->big_endian, w->data + off + 4);
	}
	r = decode_entry(w, hdr, arr, &e);
	if (r < 0)
		return r;
	if (e.total > w->commit - off)
		return walk_fail(w, w->header_size + off, "event length past the commit length");
	if (e.payload) {
		if (e.len < 8)
			return walk_fail(w, w->header_size + off, "event too short for its common fields");
		e.type = w->big_endian ? get_be16(e.payload) : get_le16(e.payload);
	}
	w->off = off + e.total;
	*ret = e;
	return 1;
}

int page_walk_payload_next(struct page_walk *w, const struct page_format *f, const void *data,
			   size_t len, size_t *pos)
{
	int r;

	assert(w);
	assert(f);
	assert(data || len == 0);
	assert(pos);

	if (*pos >= len)
		return 0;
	r = page_walk_init(w, f, (const uint8_t *)data + *pos, len - *pos);
	if (r < 0) {
		*pos = len;
		return r;
	}
	*pos += w->stored_len;
	return 1;
}

size_t page_walk_skip_empty(const struct page_format *f, const void *data, size_t len,
			    size_t *pos)
{
	const uint8_t *p = data;
	size_t hdr, at, n = 0;
	uint64_t cw;

	assert(f);
	assert(data || len == 0);
	assert(pos);

	if (f->long_size != 4 && f->long_size != 8)
		return 0;
	hdr = 8 + f->long_size;
	/* 0 reads the same in either byte order */
	for (at = *pos; at <= len && len - at >= hdr; at += hdr, n++) {
		cw = 0;
		memcpy(&cw, p + at + 8, f->long_size);
		if (cw)
			break;
	}
	*pos = at;
	return n;
}

int page_walk_check(const struct page_format *f, const void *page, size_t len,
		    size_t *ret_bad_offset, const char **ret_error)
{
	struct page_walk w;
	struct page_entry e;
	int r;

	assert(f);
	assert(page || len == 0);

	r = page_walk_init(&w, f, page, len);
	if (r == 0)
		while ((r = page_walk_next(&w, &e)) > 0)
			;
	if (r == -EBADMSG) {
		if (ret_bad_offset)
			*ret_bad_offset = w.error_offset;
		if (ret_error)
			*ret_error = w.error;
	}
	return r < 0 ? r : (int)w.stored_len;
}

int page_walk_stored_len(const struct page_format *f, const void *buf, size_t len)
{
	struct page_walk w;
	int r;

	assert(f);
	assert(buf || len == 0);

	r = page_walk_init(&w, f, buf, len);
	return r < 0 ? r : (int)w.stored_len;
}

static int find_field(const char *text, const char *name, unsigned int *ret_offset,
		      unsigned int *ret_size)
{
	const char *p = strstr(text, name);

	if (!p)
		return -EPROTO;
	p = strstr(p, "offset:");
	if (!p || sscanf(p, "offset:%u;\tsize:%u;", ret_offset, ret_size) != 2)
		return -EPROTO;
	return 0;
}

int page_walk_header_commit_size(const char *header_page, unsigned int *ret_size)
{
	unsigned int off, size, doff, dsize;

	assert(header_page);
	assert(ret_size);

	if (find_field(header_page, "timestamp;", &off, &size) < 0 || off != 0 || size != 8)
		return -EPROTO;
	if (find_field(header_page, "commit;", &off, &size) < 0 || off != 8 ||
	    (size != 8 && size != 4))
		return -EPROTO;
	if (find_field(header_page, "data;", &doff, &dsize) < 0 || doff != off + size)
		return -EPROTO;
	*ret_size = size;
	return 0;
}
