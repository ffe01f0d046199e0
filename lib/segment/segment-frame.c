/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Encoding the payload of a PAGES record (segment-frame.h): the other half
 * of what segment-reader.c does with one. The frame is column-encoded when
 * set up to, then compressed in one call: zstd's own entropy tables per
 * block do nearly as well on the whole encoding as blocks cut at stream
 * boundaries, for less CPU (doc/performance.md).
 */
#include <zstd.h>

#include "buf.h"
#include "frame-columns.h"
#include "segment-frame.h"
#include "segment.h"

struct segment_frame_encoder {
	ZSTD_CCtx *cctx;
	uint8_t *zbuf;
	size_t zcap;
	struct frame_columns *fc;	/* NULL: frames are stored as pages */
	struct buf enc;			/* the column encoding of the frame */
};

struct segment_frame_encoder *segment_frame_encoder_free(struct segment_frame_encoder *e)
{
	if (!e)
		return NULL;
	frame_columns_free(e->fc);
	buf_done(&e->enc);
	free(e->zbuf);
	ZSTD_freeCCtx(e->cctx);
	free(e);
	return NULL;
}

/* The column encoder, with the layout of every recorded event (the stack_ref format included). */
static int setup_columns(struct segment_frame_encoder *e, const struct segment_frame_params *p)
{
	if (!p->columns || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return 0;
	e->fc = frame_columns_new(p->long_size);
	if (!e->fc)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_formats; i++) {
		int k = frame_columns_add_format(e->fc, p->formats[i]);

		/* an event without a usable format is stored verbatim */
		if (k == -ENOMEM)
			return k;
	}
	return 0;
}

int segment_frame_encoder_new(const struct segment_frame_params *p,
			      struct segment_frame_encoder **ret)
{
	_cleanup_(segment_frame_encoder_freep) struct segment_frame_encoder *e = NULL;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/*
	 * The column encoding of a frame is at most a little longer than the
	 * frame (a few varints per page); one that is longer than this room
	 * allows is stored as pages.
	 */
	e->zcap = ZSTD_compressBound(p->max_frame + 65536);
	e->zbuf = malloc(e->zcap);
	e->cctx = ZSTD_createCCtx();
	if (!e->zbuf || !e->cctx)
		return -ENOMEM;
	(void)ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_compressionLevel, p->compression_level);
	/* readers check the frame's content size against the record's raw length */
	(void)ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_contentSizeFlag, 1);
	r = setup_columns(e, p);
	if (r < 0)
		return r;
	*ret = steal_ptr(e);
	return 0;
}

int segment_frame_encode(struct segment_frame_encoder *e, const void *frame, size_t len,
			 struct segment_frame *ret)
{
	bool failed = false;
	size_t z;

	if (e->fc) {
		buf_reset(&e->enc);
		if (frame_columns_encode(e->fc, frame, len, &e->enc) == 0 &&
		    e->enc.len <= SEGMENT_MAX_RAW) {
			z = ZSTD_compress2(e->cctx, e->zbuf, e->zcap, e->enc.data, e->enc.len);
			if (!ZSTD_isError(z)) {
				*ret = (struct segment_frame){
					.stored = e->zbuf,
					.stored_len = z,
					.raw_len = e->enc.len,
					.flags = SEGMENT_REC_F_COLUMNS,
				};
				return 0;
			}
		}
		failed = true;
	}
	z = ZSTD_compress2(e->cctx, e->zbuf, e->zcap, frame, len);
	if (ZSTD_isError(z))
		return -EIO;
	*ret = (struct segment_frame){
		.stored = e->zbuf,
		.stored_len = z,
		.raw_len = len,
		.columns_failed = failed,
	};
	return 0;
}
