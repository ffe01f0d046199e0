/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The payload of a PAGES record, made before the writer takes it: a frame
 * (the compacted ring-buffer pages of one CPU), column-encoded
 * (frame-columns.h) when set up to, and compressed into one zstd frame
 * that records its content size: what segment_writer_append_compressed()
 * takes, and what segment-reader.c undoes. It lets each of the daemon's
 * reader threads compress its own frames, outside the archive's lock. Not
 * thread-safe: one encoder per thread; it keeps its context and buffers
 * from frame to frame, so that steady-state encoding allocates nothing.
 */
#ifndef STACKMAPD_SEGMENT_FRAME_H
#define STACKMAPD_SEGMENT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct segment_frame_params {
	size_t max_frame;		/* the longest frame that will be encoded, in bytes */
	int compression_level;		/* zstd level */
	bool columns;			/* column-encode frames (little-endian traces and hosts only) */
	unsigned int long_size;		/* the kernel's (4 or 8), for the column encoder */
	const char *const *formats;	/* event format texts for the column encoder, borrowed */
	size_t nr_formats;
};

/* One encoded frame: what segment_writer_append_compressed() takes. */
struct segment_frame {
	const void *stored;		/* one zstd frame, the encoder's: valid until its next call */
	size_t stored_len;
	size_t raw_len;			/* its content size */
	uint16_t flags;			/* 0, or SEGMENT_REC_F_COLUMNS */
	bool columns_failed;		/* the column encoding failed: the frame is stored as pages */
};

struct segment_frame_encoder;

/*
 * An encoder with its zstd context and buffers; with p->columns (and a
 * little-endian host), a column encoder that knows the layout of every
 * event in p->formats (an event whose format it cannot use is stored
 * verbatim). p is borrowed. Returns 0 and *ret (the caller owns it), or
 * -ENOMEM.
 */
int segment_frame_encoder_new(const struct segment_frame_params *p,
			      struct segment_frame_encoder **ret);

/*
 * Encode and compress a frame of len bytes (frame, borrowed; len at most
 * max_frame). A frame that the column encoding fails on (no memory, or an
 * encoding beyond the format's limits) is stored as pages, and
 * ret->columns_failed says so. Returns 0 with *ret, or -EIO when zstd
 * fails.
 */
int segment_frame_encode(struct segment_frame_encoder *e, const void *frame, size_t len,
			 struct segment_frame *ret);

/* Free e with its context and buffers (NULL is fine). Returns NULL. */
struct segment_frame_encoder *segment_frame_encoder_free(struct segment_frame_encoder *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct segment_frame_encoder *, segment_frame_encoder_free);

#endif
