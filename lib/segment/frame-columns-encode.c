/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column encoder (frame-columns.h), first half: the page walk that splits
 * a frame into streams, and the encoding that frame-columns-streams.c
 * completes with the templates and columns.
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
#include <assert.h>

#include "frame-columns-internal.h"
#include "page-walk.h"

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
 * Put the entry e (as the page walker found it) of the page whose data
 * starts at frame + data into the streams. Returns 0 or -ENOMEM.
 */
static int put_entry(struct frame_columns *fc, const uint8_t *frame, size_t data,
		     const struct page_entry *e)
{
	size_t pos = data + e->offset, total = e->total, dlen = 0;
	const uint8_t *p = frame + pos;
	uint32_t hdr = get_le32(p), arr = 0;
	unsigned int type_len = hdr & 31;
	uint8_t kind = FC_K_RAW;
	int k;

	if (type_len == 0 || type_len >= FC_TYPE_PADDING)
		arr = get_le32(p + 4);
	if (e->kind == PAGE_ENTRY_TIME_EXTEND) {
		kind = FC_K_EXTEND;
	} else if (e->kind == PAGE_ENTRY_TIME_STAMP) {
		kind = FC_K_STAMP;
	} else if (e->kind == PAGE_ENTRY_DATA && (type_len || (arr >= 6 && !(arr & 3)))) {
		dlen = type_len ? total - 4 : arr - 4;
		k = frame_type(fc, (uint16_t)e->type);
		if (k >= 0 && dlen >= fc->types[k].fmt->fixed)
			kind = (uint8_t)(FC_K_EVENT + k);
	}

	if (fc_room(&fc->kinds, 1) < 0 || fc_room(&fc->s[FC_S_DELTA], 10) < 0 ||
	    fc_room(&fc->s[FC_S_LEN], 10) < 0)
		return -ENOMEM;
	fc->kinds.data[fc->kinds.len++] = kind;
	if (kind == FC_K_RAW) {
		fc->stats.raw_entries++;
		fc_vput(&fc->s[FC_S_LEN], total);
		if (buf_append(&fc->s[FC_S_RAW], p, total) < 0)
			return -ENOMEM;
	} else if (kind < FC_K_EVENT) {
		fc_vput(&fc->s[FC_S_DELTA], (uint64_t)arr << 27 | hdr >> 5);
		if (kind == FC_K_EXTEND)
			fc->page_sum += (uint64_t)arr << 27 | hdr >> 5;
	} else {
		fc->page_sum += hdr >> 5;
		struct buf *ev = &fc->types[kind - FC_K_EVENT].ev;
		struct fc_ent *en;

		if (fc_room(ev, 4) < 0 || fc_room(&fc->ents, sizeof(*en)) < 0)
			return -ENOMEM;
		put_le32(ev->data + ev->len, (uint32_t)(fc->ents.len / sizeof(*en)));
		ev->len += 4;
		en = (struct fc_ent *)(void *)(fc->ents.data + fc->ents.len);
		*en = (struct fc_ent){ (uint32_t)(pos + total - dlen), (uint32_t)dlen, arr, hdr >> 5,
				       UINT32_MAX,
				       (uint8_t)(kind - FC_K_EVENT), (uint8_t)type_len, false, 0 };
		fc->ents.len += sizeof(*en);
	}
	fc->stats.entries++;
	return 0;
}

/* Undo the streams to the given lengths (a page that turned out not to walk). */
static void truncate_streams(struct frame_columns *fc, const size_t *lens, const size_t *evlens)
{
	for (size_t i = 0; i < FC_S_FIXED; i++)
		fc->s[i].len = lens[i];
	fc->kinds.len = lens[FC_S_FIXED];
	fc->ents.len = lens[FC_S_FIXED + 1];
	for (size_t i = 0; i < fc->nr_types; i++)
		fc->types[i].ev.len = evlens[i];
}

/*
 * Walk the page w (at frame + pos) into the streams. Returns the offset in
 * its data where its tail starts (an end-of-page padding, or the commit
 * length), with *ret_entries; -EBADMSG if the walker rejects the page (the
 * streams then hold part of it); -ENOMEM.
 */
static ssize_t walk_page(struct frame_columns *fc, struct page_walk *w, const uint8_t *frame,
			 size_t pos, uint64_t *ret_entries)
{
	struct page_entry e;
	uint64_t entries = 0;
	int n;

	fc->page_sum = 0;
	while ((n = page_walk_next(w, &e)) > 0) {
		if (e.kind == PAGE_ENTRY_PADDING && e.delta == 0)
			break;	/* the rest of the data is the page's tail */
		n = put_entry(fc, frame, pos + w->header_size, &e);
		if (n < 0)
			return n;
		entries++;
	}
	if (n < 0)
		return n;
	*ret_entries = entries;
	return (ssize_t)(n > 0 ? e.offset : w->commit);
}

/*
 * One whole page w (at frame + pos). prev: the previous column page's
 * timestamp and the sum of its time deltas (version 3 codes the timestamp
 * against their sum, version 2 against the timestamp). Returns 0 or -ENOMEM.
 */
static int encode_page(struct frame_columns *fc, struct page_walk *w, const uint8_t *frame,
		       size_t pos, uint64_t prev[2])
{
	size_t hdr = w->header_size, commit = w->commit, plen = w->stored_len;
	size_t lens[FC_S_FIXED + 2], evlens[FRAME_COLUMNS_MAX_TYPES];
	struct buf *pg = &fc->s[FC_S_PAGE];
	uint64_t cw = w->commit_word, ts = fc_get(frame + pos, 8), entries = 0;
	uint64_t saved_entries = fc->stats.entries, saved_raw = fc->stats.raw_entries;
	unsigned int saved_types = fc->nr_types;
	ssize_t off;

	for (size_t i = 0; i < FC_S_FIXED; i++)
		lens[i] = fc->s[i].len;
	lens[FC_S_FIXED] = fc->kinds.len;
	lens[FC_S_FIXED + 1] = fc->ents.len;
	for (size_t i = 0; i < fc->nr_types; i++)
		evlens[i] = fc->types[i].ev.len;
	off = walk_page(fc, w, frame, pos, &entries);
	if (off == -ENOMEM)
		return -ENOMEM;
	if (fc_room(pg, 60) < 0)
		return -ENOMEM;
	if (off < 0) {
		/* damaged: store the page as it is */
		truncate_streams(fc, lens, evlens);
		for (size_t i = saved_types; i < fc->nr_types; i++)
			fc->ftype_of[fc->types[i].id] = 0;
		fc->nr_types = saved_types;
		fc->stats.entries = saved_entries;
		fc->stats.raw_entries = saved_raw;
		fc->stats.verbatim_pages++;
		fc_vput(pg, FC_PAGE_VERBATIM);
		fc_vput(pg, plen);
		return buf_append(&fc->s[FC_S_RAW], frame + pos, plen);
	}
	fc->stats.pages++;
	fc_vput(pg, FC_PAGE_COLUMNS);
	fc_vput(pg, fc_zigzag((int64_t)(ts - prev[0] - (fc->version >= 3 ? prev[1] : 0))));
	prev[0] = ts;
	prev[1] = fc->page_sum;
	fc_vput(pg, cw >> FC_FLAGS_SHIFT);
	if (cw & FC_MISSED_STORED)
		fc_vput(pg, fc_get(frame + pos + hdr + commit, fc->long_size));
	fc_vput(pg, entries);
	fc_vput(pg, commit - (size_t)off);
	return buf_append(&fc->s[FC_S_RAW], frame + pos + hdr + off, commit - (size_t)off);
}

/*
 * Split the frame into pages with the page walker and encode them. A page
 * whose header does not check out ends the pages: it and what follows are
 * the frame's tail. Returns the length of the tail, or -ENOMEM.
 */
static ssize_t walk_frame(struct frame_columns *fc, const uint8_t *frame, size_t len,
			  uint64_t *ret_pages)
{
	const struct page_format f = { .long_size = fc->long_size };
	uint64_t prev[2] = { 0, 0 }, pages = 0;
	size_t pos = 0;
	int r;

	while (pos < len) {
		struct page_walk w;

		if (page_walk_init(&w, &f, frame + pos, len - pos) < 0)
			break;
		r = encode_page(fc, &w, frame, pos, prev);
		if (r < 0)
			return r;
		pos += w.stored_len;
		pages++;
	}
	fc->stats.tail_bytes = len - pos;
	if (buf_append(&fc->s[FC_S_RAW], frame + pos, len - pos) < 0)
		return -ENOMEM;
	*ret_pages = pages;
	return (ssize_t)(len - pos);
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
	buf_reset(&fc->kinds);
	buf_reset(&fc->ents);
	memset(&fc->stats, 0, sizeof(fc->stats));
}

int frame_columns_encode(struct frame_columns *fc, const void *frame, size_t len,
			 struct buf *out)
{
	uint64_t pages = 0;
	size_t nr_streams, start = out->len;
	ssize_t tail;
	int r;

	assert(fc);
	assert(frame || len == 0);

	if (len > INT32_MAX)
		return -EFBIG;
	frame_reset(fc);
	fc->frame_no++;
	tail = walk_frame(fc, frame, len, &pages);
	if (tail < 0)
		return (int)tail;
	for (unsigned int k = 0; k < fc->nr_types; k++) {
		r = fc_choose_template(fc, frame, k);
		if (r < 0)
			return r;
	}
	r = fc_encode_templates(fc, frame);
	if (r < 0)
		return r;
	for (unsigned int k = 0; k < fc->nr_types; k++) {
		r = fc_encode_type(fc, frame, k);
		if (r < 0)
			return r;
	}
	nr_streams = FC_S_FIXED + fc->lens.len / 4;
	r = fc_room(out, 2 + 10 * 5 + fc->table.len + 10 * nr_streams);
	if (r < 0)
		return r;
	out->data[out->len++] = fc->version;
	out->data[out->len++] = (uint8_t)fc->long_size;
	fc_vput(out, len);
	fc_vput(out, pages);
	fc_vput(out, (uint64_t)tail);
	fc_vput(out, fc->nr_types);
	memcpy(out->data + out->len, fc->table.data, fc->table.len);
	out->len += fc->table.len;
	fc_vput(out, nr_streams);
	for (size_t i = 0; i < FC_S_FIXED; i++)
		fc_vput(out, fc->s[i].len);
	for (size_t i = 0; i < fc->lens.len / 4; i++)
		fc_vput(out, get_le32(fc->lens.data + 4 * i));
	fc->head_len = out->len - start;
	for (size_t i = 0; i < FC_S_FIXED; i++) {
		r = buf_append(out, fc->s[i].data, fc->s[i].len);
		if (r < 0)
			return r;
	}
	return buf_append(out, fc->cols.data, fc->cols.len);
}
