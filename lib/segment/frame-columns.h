/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Column encoding of frames (doc/segment-format.md, "Column-encoded
 * frames"): a reversible transform of a frame, the compacted ring-buffer
 * pages of one CPU that a PAGES record carries, into streams that compress
 * far better than the pages: page headers; per entry a code that names
 * the event's template (the tuple of its low-entropy fields, such as call
 * site, sizes, flags, pid and stack reference, kept once per frame);
 * per event type its time deltas and each other field as a column of its
 * own, coded as raw bytes, varints, deltas (to the previous value, or to
 * the previous value in the same template) or dictionary indexes,
 * whichever is smallest. Decoding restores
 * the frame bit for bit. Whatever the encoder does not understand (an event
 * id without a format, odd lengths, a damaged page) is stored verbatim.
 *
 * The encoder needs each event's field layout (frame_columns_add_format()
 * with the format file text, or frame_columns_add_event()); the encoded
 * frame carries what the decoder needs, so decoding needs no formats. The
 * encoding is defined for little-endian traces only. Neither side
 * compresses: the caller compresses the encoded frame (one zstd frame) as
 * it does pages. Not thread-safe: one context per thread; the context keeps
 * its buffers from frame to frame so that steady-state encoding allocates
 * nothing.
 */
#ifndef STACKMAPD_FRAME_COLUMNS_H
#define STACKMAPD_FRAME_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "util.h"

#define FRAME_COLUMNS_VERSION 3		/* written by default */
#define FRAME_COLUMNS_VERSION_MIN 2	/* the oldest still read (and written on request) */
#define FRAME_COLUMNS_MAX_FIELDS 64	/* columns per event type, gaps included */
#define FRAME_COLUMNS_MAX_TYPES 253	/* event types with columns in one frame */

/* One field of an event's format, as the format file gives it. */
struct frame_columns_field {
	uint16_t offset;
	uint16_t size;
	bool is_signed;
};

/* What the encoder did with the last frame (for statistics and tests). */
struct frame_columns_stats {
	uint64_t pages;			/* encoded as columns */
	uint64_t verbatim_pages;	/* pages stored as they are */
	uint64_t entries;		/* entries in column pages */
	uint64_t raw_entries;		/* of which stored as they are */
	uint64_t tail_bytes;		/* bytes after the last whole page, stored as they are */
};

/* One stream of the last encoding (for measurements). */
struct frame_columns_stream {
	const char *name;	/* a fixed stream's name; NULL for a column */
	int column;		/* -1: a fixed stream; else the stream's index in its event's
				 * streams: columns, tail, time low bytes, time high parts */
	uint16_t id;		/* a column's event id */
	uint16_t offset, size;	/* where the column is in the payload; size 0: the tail */
	uint8_t transform;	/* the column's or time's transform, as in doc/segment-format.md */
	size_t start, len;	/* where the stream is in what the encoding appended */
};

struct frame_columns;

/*
 * A context for pages of a kernel with the given long size (4 or 8: the
 * size of the page header's commit word, META long_size). Returns NULL on
 * ENOMEM or a bad long_size. The caller owns it.
 */
struct frame_columns *frame_columns_new(unsigned int long_size);
struct frame_columns *frame_columns_free(struct frame_columns *fc);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct frame_columns *, frame_columns_free);

/*
 * Write encoding version (FRAME_COLUMNS_VERSION_MIN..FRAME_COLUMNS_VERSION)
 * from the next frame on; the default is FRAME_COLUMNS_VERSION. Decoding
 * reads every version in that range whatever this says. Returns 0 or
 * -EINVAL.
 */
int frame_columns_set_version(struct frame_columns *fc, unsigned int version);

/*
 * Declare the layout of event id: n fields (borrowed) as in its format
 * file, common_type included or not. Overlapping and empty fields are
 * ignored, gaps become byte columns. A later call for the same id replaces
 * the earlier one. Returns 0, -EINVAL (too many fields, or none beyond
 * common_type's two bytes is needed: that is fine too, returns 0) or -ENOMEM.
 */
int frame_columns_add_event(struct frame_columns *fc, uint16_t id,
			    const struct frame_columns_field *fields, size_t n);

/*
 * Parse an event format file (the text of events/SYSTEM/EVENT/format,
 * NUL-terminated) and declare its layout. Returns the event id (>= 0),
 * -EINVAL if the text has no ID or no field line, or -ENOMEM.
 */
int frame_columns_add_format(struct frame_columns *fc, const char *text);

/*
 * Append the encoding of frame (len bytes of compacted pages, borrowed) to
 * out. Any input is accepted: what does not parse is stored verbatim.
 * Returns 0 or -ENOMEM (out may then hold a partial encoding past its
 * previous length).
 */
int frame_columns_encode(struct frame_columns *fc, const void *frame, size_t len,
			 struct buf *out);

/* Statistics of the last frame_columns_encode(). */
void frame_columns_get_stats(const struct frame_columns *fc, struct frame_columns_stats *ret);

/*
 * Stream i (0-based) of the last frame_columns_encode(). Returns 0, or
 * -ENOENT if there are not that many.
 */
int frame_columns_get_stream(const struct frame_columns *fc, size_t i,
			     struct frame_columns_stream *ret);

/*
 * Append the frame encoded in enc (len bytes, borrowed; untrusted) to out.
 * max_len bounds the decoded size: a frame that says it is longer is
 * rejected before anything is allocated for it. The context's long size
 * must be the encoded frame's. Returns the decoded length (>= 0), -EBADMSG
 * if enc is not a valid encoding (out is then restored to its previous
 * length), -EFBIG over max_len, -EPROTONOSUPPORT for another encoding
 * version, or -ENOMEM.
 */
int frame_columns_decode(struct frame_columns *fc, const void *enc, size_t len, size_t max_len,
			 struct buf *out);

#endif
