/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one validating walker of ring-buffer pages (doc/segment-format.md,
 * PAGES payload). It owns the commit-word constants and the rules for
 * what a well-formed page is: every entry (data event, padding, time
 * extend, absolute timestamp) lies inside the page's committed data, each
 * step moves forward, and the missed-event count fits. The daemon's
 * transcoder, stackmapctl info and audit walk pages with it, and the
 * decoder runs page_walk_check() on every page before kbuffer sees it, so
 * that a page which would make kbuffer loop or read past the page is
 * rejected instead.
 */
#ifndef STACKMAPD_PAGE_WALK_H
#define STACKMAPD_PAGE_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The commit word of a page header. */
#define PAGE_COMMIT_MASK 0xfffffULL		/* bytes of event data */
#define PAGE_COMMIT_UNUSED 0x3ff00000ULL	/* bits 20-29: always 0 */
#define PAGE_MISSED_STORED (1ULL << 30)		/* a missed-event count follows the data */
#define PAGE_MISSED_EVENTS (1ULL << 31)		/* events were lost before this page */

/*
 * The fields every ftrace event's data starts with, as the "format:" lines
 * of the kernel's events/SYSTEM/NAME/format files write them (no '%': the
 * text may stand in a printf format).
 */
#define FTRACE_COMMON_FIELDS_FORMAT                                                    \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"         \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"         \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"

/* Event header type_len values with a meaning of their own. */
#define PAGE_TYPE_PADDING 29
#define PAGE_TYPE_TIME_EXTEND 30
#define PAGE_TYPE_TIME_STAMP 31

/* How the traced kernel lays out a page. */
struct page_format {
	unsigned int long_size;		/* 4 or 8: size of the commit word and the missed count */
	bool big_endian;		/* byte order of the traced machine */
	size_t page_size;		/* sub-buffer size; 0 if unknown */
};

enum page_entry_kind {
	PAGE_ENTRY_DATA,
	PAGE_ENTRY_PADDING,
	PAGE_ENTRY_TIME_EXTEND,
	PAGE_ENTRY_TIME_STAMP,
	PAGE_ENTRY_MAX
};

/* One entry of a page, as page_walk_next() hands it out. */
struct page_entry {
	enum page_entry_kind kind;
	size_t offset;			/* of the entry header, from the start of the event data */
	size_t total;			/* header and payload bytes */
	unsigned int delta;		/* the header's 27-bit time delta */
	uint64_t ts;			/* timestamp after this entry */
	const uint8_t *payload;		/* data events only, else NULL; borrowed from the page */
	size_t len;			/* payload bytes */
	int type;			/* common_type of a data event, -1 otherwise */
};

/*
 * The id that a stack_id entry (../shared/STACKMAP-ABI.md) carries: the
 * s32 after the common fields, at payload offset 8, in the host's byte
 * order (the daemon reads the pages of its own machine). Returns true with
 * *ret when the payload holds it (12 bytes or more), false if not. The
 * caller has checked that e is a stack_id entry.
 */
#define PAGE_STACK_ID_OFFSET 8
static inline bool page_entry_stack_id(const struct page_entry *e, int32_t *ret)
{
	if (e->len < PAGE_STACK_ID_OFFSET + 4)
		return false;
	memcpy(ret, e->payload + PAGE_STACK_ID_OFFSET, 4);
	return true;
}

/* A walk over one page. Fields are read-only for callers. */
struct page_walk {
	const uint8_t *page;		/* borrowed */
	const uint8_t *data;		/* first event: page + 8 + long_size */
	size_t header_size;		/* 8 + long_size */
	size_t commit;			/* bytes of event data */
	size_t stored_len;		/* header, data and missed count */
	uint64_t commit_word;		/* flags included */
	uint64_t missed;		/* stored missed-event count, 0 if none */
	bool big_endian;
	size_t off;			/* next entry, from data */
	uint64_t ts;
	size_t error_offset;		/* after -EBADMSG: from the start of the page */
	const char *error;		/* after -EBADMSG: static description */
};

/*
 * Start walking the page at page (len bytes available: a page as read, or
 * one compacted page followed by others). Checks the header: the commit
 * word has none of bits 20-29 set, the data and the missed count (with
 * MISSED_STORED) fit in len and, when f->page_size is known, in a page.
 * Returns 0, -EBADMSG (w->error_offset and w->error say why) or -EINVAL
 * for a long_size other than 4 or 8. w borrows page.
 */
int page_walk_init(struct page_walk *w, const struct page_format *f, const void *page, size_t len);

/*
 * The next entry of the page into *ret: 1, 0 at the end of the data, or
 * -EBADMSG when the entry does not lie inside the data, would not move
 * forward, or is a data event too short for its common fields (then
 * w->error_offset and w->error say where and why). A padding entry with
 * time delta 0 ends the page; it must then cover the rest of the data.
 * After an error, further calls return the same error.
 */
int page_walk_next_entry(struct page_walk *w, struct page_entry *ret);

/*
 * The same, with the entries nearly every page is made of taken inline:
 * the data events of a little-endian page, their length in type_len or in
 * array[0]. They are decoded here exactly as page_walk_next_entry() would;
 * everything else goes there.
 */
static inline int page_walk_next(struct page_walk *w, struct page_entry *ret)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	size_t off = w->off, len, skip, total;
	uint32_t hdr, arr;
	uint16_t type;

	if (w->big_endian || w->error || off >= w->commit || w->commit - off < 12)
		return page_walk_next_entry(w, ret);
	memcpy(&hdr, w->data + off, 4);
	if ((hdr & 31) == 0) {
		memcpy(&arr, w->data + off + 4, 4);
		if (arr < 12)
			return page_walk_next_entry(w, ret);
		len = (size_t)arr - 4;
		skip = 8;
		total = 4 + (((size_t)arr + 3) & ~(size_t)3);	/* stored rounded up to 4 bytes */
	} else {
		/* 8..112 bytes: enough for the common fields, and not a padding or time entry */
		if ((hdr & 31) < 2 || (hdr & 31) >= PAGE_TYPE_PADDING)
			return page_walk_next_entry(w, ret);
		len = 4 * (size_t)(hdr & 31);
		skip = 4;
		total = 4 + len;
	}
	if (total > w->commit - off)
		return page_walk_next_entry(w, ret);
	w->ts += hdr >> 5;
	memcpy(&type, w->data + off + skip, 2);
	*ret = (struct page_entry){
		.kind = PAGE_ENTRY_DATA,
		.offset = off,
		.total = total,
		.delta = hdr >> 5,
		.ts = w->ts,
		.payload = w->data + off + skip,
		.len = len,
		.type = type,
	};
	w->off = off + total;
	return 1;
#else
	return page_walk_next_entry(w, ret);
#endif
}

/*
 * Start walking the next page of a PAGES payload (data, len bytes of
 * compacted pages, borrowed) at *pos: 1 with w set up for that page and
 * *pos moved past it, 0 at the end of the payload, -EBADMSG when the page
 * header is bad (w->error_offset is then from the start of that page; the
 * pages after it cannot be found, and *pos is set to len), -EINVAL for a
 * bad long_size.
 */
int page_walk_payload_next(struct page_walk *w, const struct page_format *f, const void *data,
			   size_t len, size_t *pos);

/*
 * Move *pos past the pages of a PAGES payload that hold nothing: a header
 * whose commit word is 0 (no data, no loss flag), whatever its timestamp.
 * Returns how many. A few KiB of a hostile file decompress to millions of
 * them; one by one, through page_walk_payload_next(), they stalled readers.
 */
size_t page_walk_skip_empty(const struct page_format *f, const void *data, size_t len,
			    size_t *pos);

/*
 * Validate a whole page: page_walk_init() and every entry. Returns the
 * page's stored length (> 0), or -EBADMSG with *ret_bad_offset (if not
 * NULL) set to the offset of the first bad byte from the start of the page
 * and *ret_error (if not NULL) to a static description; -EINVAL for a bad
 * long_size.
 */
int page_walk_check(const struct page_format *f, const void *page, size_t len,
		    size_t *ret_bad_offset, const char **ret_error);

/*
 * Length of the compacted page at the start of buf (len bytes available):
 * 8 + long_size header bytes, commit data bytes and, with MISSED_STORED, a
 * long_size missed-event count. Checks the header only, as
 * page_walk_init(). Returns the length (> 0), -EBADMSG or -EINVAL.
 */
int page_walk_stored_len(const struct page_format *f, const void *buf, size_t len);

/*
 * The size of the commit word (4 or 8) from the text of events/header_page,
 * after checking that the header is laid out as this walker expects: u64
 * timestamp at offset 0, commit word at 8, data right after it. Returns 0
 * and *ret_size, or -EPROTO for another layout.
 */
int page_walk_header_commit_size(const char *header_page, unsigned int *ret_size);

#endif
