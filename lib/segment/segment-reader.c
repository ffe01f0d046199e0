/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading a segment (segment.h) record by record, checking everything:
 * the prologue, each record header and payload CRC, the sequence numbers,
 * the zstd frames, the column-encoded frames (decoded here, so that every
 * reader sees the pages bit for bit as the kernel wrote them), and the
 * footer and INDEX of a finished segment. A reader never hands out damaged
 * data: it stops at the first record that does not check out and says
 * where; everything before it is intact. It also reads single records at an
 * offset, and the seek table, for readers that want only some frames.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "buf.h"
#include "budget.h"
#include "crc32c.h"
#include "frame-columns.h"
#include "segment-internal.h"
#include "util.h"

struct segment_reader {
	int fd;
	uint64_t size;
	uint64_t off;		/* next record header */
	uint64_t good;		/* just past the last valid record */
	uint32_t seq;		/* expected sequence number of the next record */
	bool complete;
	bool after_index;	/* the last record was INDEX: the footer comes next */
	uint64_t index_off;	/* of the INDEX record the footer points at, if complete */
	uint64_t last_index_off;	/* of the last INDEX record read */
	struct segment_index index;
	int state;		/* 0 reading, 1 at the end, < 0 failed (sticky) */
	uint64_t err_off;
	bool cut_short;		/* the error is a record running past the end of the file */
	uint32_t max_raw;	/* 0: SEGMENT_MAX_RAW */
	char err[192];
	ZSTD_DCtx *dctx;
	struct buf stored;
	struct buf raw;
	uint32_t version;
	bool skip_pages;
	uint64_t pages_read;
	struct frame_columns *fc;
	unsigned int fc_long_size;
	struct buf cols;	/* decoded column frame */
	struct segment_seek *scan;	/* seek table built by a scan, when the INDEX has none */
	size_t nr_scan;
	bool scanned;
	size_t charged;		/* bytes held, in the readers' budget (budget.h) */
};

struct segment_reader *segment_reader_free(struct segment_reader *r)
{
	if (!r)
		return NULL;
	if (r->fd >= 0)
		(void)close(r->fd);
	budget_release_all(&r->charged);
	segment_index_done(&r->index);
	ZSTD_freeDCtx(r->dctx);
	buf_done(&r->stored);
	buf_done(&r->raw);
	frame_columns_free(r->fc);
	buf_done(&r->cols);
	free(r->scan);
	free(r);
	return NULL;
}


_printf_(3, 4) static int bad(struct segment_reader *r, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->err_off = off;
	return -EBADMSG;
}

/* err (from bad()) for a record that runs past the end of the file. */
static int cut_short(struct segment_reader *r, int err)
{
	r->cut_short = true;
	return err;
}

/*
 * Read and check the record header at off (avail bytes from off to the end
 * of the file) into *h. Returns 0, -EBADMSG or another -errno.
 */
static int read_header(struct segment_reader *r, uint64_t off, uint64_t avail,
		       int64_t expect_seq, struct rec_hdr *h)
{
	uint8_t p[SEGMENT_REC_HDR_SIZE];
	ssize_t n;
	int k;

	if (avail < SEGMENT_REC_HDR_SIZE)
		return cut_short(r, bad(r, off, "truncated record header: %" PRIu64 " of %d bytes", avail,
			   SEGMENT_REC_HDR_SIZE));
	n = read_full(r->fd, p, sizeof(p), (int64_t)off);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p))
		return cut_short(r, bad(r, off, "truncated record header: %zd of %d bytes (file shrank)", n,
			   SEGMENT_REC_HDR_SIZE));
	k = segment_rec_hdr_decode(p, h);
	if (k == -EBADMSG)
		return bad(r, off, "bad record magic 0x%08" PRIx32, get_le32(p));
	if (k < 0)
		return bad(r, off, "record header CRC mismatch");
	if (expect_seq >= 0 && h->seq != (uint64_t)expect_seq)
		return bad(r, off, "sequence number %" PRIu32 ", expected %" PRIi64, h->seq,
			   expect_seq);
	if (expect_seq == 0 && h->type != SEGMENT_REC_META)
		return bad(r, off, "first record has type %u, not META", h->type);
	/* A flag we do not know could change what the payload means: stop. */
	if (h->flags & ~(SEGMENT_REC_F_COMPRESSED | SEGMENT_REC_F_COLUMNS) ||
	    ((h->flags & SEGMENT_REC_F_COLUMNS) &&
	     (r->version < 2 || h->type != SEGMENT_REC_PAGES)))
		return bad(r, off, "unknown record flags 0x%04x", h->flags);
	if (h->stored_len > SEGMENT_MAX_STORED)
		return bad(r, off, "stored length %" PRIu32 " exceeds the limit of %u bytes",
			   h->stored_len, SEGMENT_MAX_STORED);
	if (h->raw_len > SEGMENT_MAX_RAW)
		return bad(r, off, "raw length %" PRIu32 " exceeds the limit of %u bytes",
			   h->raw_len, SEGMENT_MAX_RAW);
	if (r->max_raw && (h->raw_len > r->max_raw ||
			   h->stored_len > r->max_raw + r->max_raw / 64 + 4096))
		return bad(r, off, "record of %" PRIu32 " bytes exceeds the reader's limit of %" PRIu32
			   " bytes", MAX(h->raw_len, h->stored_len), r->max_raw);
	/* The INDEX reached from the footer, read at open: never larger than a writer writes it. */
	if (expect_seq < 0 && (h->raw_len > SEGMENT_MAX_INDEX || h->stored_len > SEGMENT_MAX_INDEX))
		return bad(r, off, "INDEX record of %" PRIu32 " bytes exceeds the limit of %zu bytes",
			   MAX(h->raw_len, h->stored_len), (size_t)SEGMENT_MAX_INDEX);
	/* A second META would change what the records before it meant: the format forbids it. */
	if (expect_seq > 0 && h->type == SEGMENT_REC_META)
		return bad(r, off, "a second META record");
	if (!(h->flags & SEGMENT_REC_F_COMPRESSED) && h->raw_len != h->stored_len)
		return bad(r, off, "uncompressed record with raw length %" PRIu32
			   " and stored length %" PRIu32, h->raw_len, h->stored_len);
	return 0;
}

/*
 * Decompress the stored payload of the record at off (header *h) into the
 * reader's raw buffer: one zstd frame that records its content size, equal
 * to the raw length, and fills the payload exactly. Returns 0, -EBADMSG or
 * another -errno.
 */
static int decompress_payload(struct segment_reader *r, uint64_t off, const struct rec_hdr *h,
			      const uint8_t *payload)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(payload, h->stored_len);
	size_t z;
	int k;

	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return bad(r, off, "zstd frame header is invalid");
	if (fcs == ZSTD_CONTENTSIZE_UNKNOWN)
		return bad(r, off, "zstd frame does not record its content size");
	if (fcs != h->raw_len)
		return bad(r, off, "zstd frame content size %llu, expected %" PRIu32, fcs,
			   h->raw_len);
	z = ZSTD_findFrameCompressedSize(payload, h->stored_len);
	if (ZSTD_isError(z))
		return bad(r, off, "zstd frame does not decompress: %s", ZSTD_getErrorName(z));
	if (z != h->stored_len)
		return bad(r, off,
			   "zstd frame is %zu bytes, payload %" PRIu32 " (one frame expected)", z,
			   h->stored_len);
	if (!r->dctx) {
		r->dctx = ZSTD_createDCtx();
		if (!r->dctx)
			return -ENOMEM;
	}
	r->raw.len = 0;
	k = budget_buf_reserve(&r->charged, &r->raw, (size_t)h->raw_len + 1, "record payloads");
	if (k < 0)
		return k;
	z = ZSTD_decompressDCtx(r->dctx, r->raw.data, h->raw_len, payload, h->stored_len);
	if (ZSTD_isError(z)) {
		if (ZSTD_getErrorCode(z) == ZSTD_error_memory_allocation)
			return -ENOMEM;
		return bad(r, off, "zstd frame does not decompress: %s", ZSTD_getErrorName(z));
	}
	if (z != h->raw_len)
		return bad(r, off, "zstd frame decompresses to %zu bytes, expected %" PRIu32, z,
			   h->raw_len);
	return 0;
}

/*
 * Decode the column-encoded frame data (len bytes) of the record at off
 * into the reader's column buffer. Returns 0, -EBADMSG or -ENOMEM.
 */
static int decode_columns(struct segment_reader *r, uint64_t off, const uint8_t *data, size_t len)
{
	unsigned int long_size = len >= 2 ? data[1] : 0;
	uint64_t flen = 0;
	size_t max;
	int k;

	if (long_size != 4 && long_size != 8)
		return bad(r, off, "column-encoded frame: bad long size %u", long_size);
	if (r->fc && r->fc_long_size != long_size)
		r->fc = frame_columns_free(r->fc);
	if (!r->fc) {
		r->fc = frame_columns_new(long_size);
		if (!r->fc)
			return -ENOMEM;
		r->fc_long_size = long_size;
	}
	/* the decoded size, F, is bounded by the reader's own limit, and charged before */
	r->cols.len = 0;
	max = r->max_raw ? r->max_raw : SEGMENT_MAX_RAW;
	for (size_t i = 2, shift = 0; i < len && shift < 64; i++, shift += 7) {
		flen |= (uint64_t)(data[i] & 0x7f) << shift;
		if (!(data[i] & 0x80))
			break;
	}
	if (flen > max)
		return bad(r, off, "column-encoded frame of %" PRIu64 " bytes exceeds the reader's "
			   "limit of %zu bytes", flen, max);
	k = budget_buf_reserve(&r->charged, &r->cols, (size_t)flen + 1, "column-encoded frames");
	if (k < 0)
		return k;
	k = frame_columns_decode(r->fc, data, len, max, &r->cols);
	if (k == -ENOMEM)
		return k;
	if (k == -EPROTONOSUPPORT)
		return bad(r, off, "column-encoded frame of an unknown encoding version %u", data[0]);
	if (k < 0)
		return bad(r, off, "column-encoded frame does not decode (%s)", strerror(-k));
	return 0;
}

/*
 * Read and check the record at off. expect_seq < 0: do not check the
 * sequence number (the INDEX record reached from the footer). On success
 * *h and the payload (in the reader's buffers) are filled in. Returns 0,
 * -EBADMSG (described by r->err, r->err_off) or another -errno.
 */
static int read_record(struct segment_reader *r, uint64_t off, int64_t expect_seq,
		       struct rec_hdr *h, const uint8_t **ret_data)
{
	uint64_t avail = off < r->size ? r->size - off : 0;
	const uint8_t *data;
	uint8_t *payload;
	ssize_t n;
	int k;

	k = read_header(r, off, avail, expect_seq, h);
	if (k < 0)
		return k;
	avail -= SEGMENT_REC_HDR_SIZE;
	if (h->stored_len > avail)
		return cut_short(r, bad(r, off, "truncated record payload: %" PRIu64 " of %" PRIu32 " bytes",
			   avail, h->stored_len));
	if (r->complete && off < r->index_off &&
	    off + SEGMENT_REC_HDR_SIZE + h->stored_len > r->index_off)
		return bad(r, off, "record overlaps the INDEX record at offset %" PRIu64,
			   r->index_off);
	if (r->skip_pages && h->type == SEGMENT_REC_PAGES && expect_seq >= 0) {
		*ret_data = NULL;
		return 0;
	}

	r->stored.len = 0;
	k = budget_buf_reserve(&r->charged, &r->stored, (size_t)h->stored_len + 1,
			       "record payloads");
	if (k < 0)
		return k;
	payload = r->stored.data;
	n = read_full(r->fd, payload, h->stored_len, (int64_t)(off + SEGMENT_REC_HDR_SIZE));
	if (n < 0)
		return (int)n;
	if ((size_t)n < h->stored_len)
		return cut_short(r, bad(r, off,
			   "truncated record payload: %zd of %" PRIu32 " bytes (file shrank)", n,
			   h->stored_len));
	if (crc32c(0, payload, h->stored_len) != h->payload_crc)
		return bad(r, off, "record payload CRC mismatch");
	data = payload;
	if (h->flags & SEGMENT_REC_F_COMPRESSED) {
		k = decompress_payload(r, off, h, payload);
		if (k < 0)
			return k;
		data = r->raw.data;
	}
	if (h->type == SEGMENT_REC_PAGES)
		r->pages_read++;
	if (h->flags & SEGMENT_REC_F_COLUMNS) {
		k = decode_columns(r, off, data, h->raw_len);
		if (k < 0)
			return k;
		data = r->cols.data;
		h->raw_len = (uint32_t)r->cols.len;
	}
	*ret_data = data;
	return 0;
}

/* Check the footer at off, which must point at the INDEX record at index_off and end the file. */
static int check_footer(struct segment_reader *r, uint64_t off, uint64_t index_off)
{
	uint8_t p[SEGMENT_FOOTER_SIZE];
	uint64_t avail = off < r->size ? r->size - off : 0, at;
	ssize_t n;
	int k;

	if (avail < SEGMENT_FOOTER_SIZE)
		return bad(r, off, "truncated footer: %" PRIu64 " of %d bytes", avail,
			   SEGMENT_FOOTER_SIZE);
	n = read_full(r->fd, p, sizeof(p), (int64_t)off);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p))
		return bad(r, off, "truncated footer (file shrank)");
	k = segment_footer_decode(p, &at);
	if (k == -EBADMSG)
		return bad(r, off, "footer magic mismatch");
	if (k == -EBADE)
		return bad(r, off, "footer CRC mismatch");
	if (k < 0)
		return bad(r, off, "footer reserved field is not zero");
	if (at != index_off)
		return bad(r, off,
			   "footer points at offset %" PRIu64 ", the INDEX record is at %" PRIu64,
			   at, index_off);
	if (avail > SEGMENT_FOOTER_SIZE)
		return bad(r, off + SEGMENT_FOOTER_SIZE, "%" PRIu64 " bytes after the footer",
			   avail - SEGMENT_FOOTER_SIZE);
	return 0;
}

/*
 * Decide completeness from the end of the file: a valid footer pointing at a
 * valid INDEX record that ends where the footer begins. Returns 0 whether or
 * not the segment is complete, -errno on I/O or memory errors.
 */
static int check_trailer(struct segment_reader *r)
{
	uint8_t p[SEGMENT_FOOTER_SIZE];
	uint64_t foot, ioff;
	const uint8_t *data;
	struct rec_hdr h;
	ssize_t n;
	int k;

	if (r->size < SEGMENT_PROLOGUE_SIZE + 2 * SEGMENT_REC_HDR_SIZE + SEGMENT_FOOTER_SIZE)
		return 0;
	foot = r->size - SEGMENT_FOOTER_SIZE;
	n = read_full(r->fd, p, sizeof(p), (int64_t)foot);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p) || segment_footer_decode(p, &ioff) < 0)
		return 0;
	/* META comes before the INDEX, so the INDEX cannot start right after the prologue. */
	if (ioff < SEGMENT_PROLOGUE_SIZE + SEGMENT_REC_HDR_SIZE ||
	    ioff > foot - SEGMENT_REC_HDR_SIZE)
		return 0;
	k = read_record(r, ioff, -1, &h, &data);
	if (k == -EBADMSG)
		goto incomplete;
	if (k < 0)
		return k;
	if (h.type != SEGMENT_REC_INDEX || ioff + SEGMENT_REC_HDR_SIZE + h.stored_len != foot)
		goto incomplete;
	/* the decoded index takes about as much memory as its payload */
	k = budget_charge(&r->charged, h.raw_len, "the INDEX record");
	if (k < 0)
		return k;
	k = segment_index_decode(data, h.raw_len, &r->index);
	if (k == -EBADMSG)
		goto incomplete;
	if (k < 0)
		return k;
	r->complete = true;
	r->index_off = ioff;
incomplete:
	r->err[0] = '\0';
	r->err_off = 0;
	return 0;
}

int segment_reader_open(const char *path, struct segment_reader **ret)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	uint8_t p[SEGMENT_PROLOGUE_SIZE];
	struct stat st;
	ssize_t n;
	int k;

	assert(path);
	assert(ret);

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	if (fstat(r->fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	r->size = (uint64_t)st.st_size;

	n = read_full(r->fd, p, sizeof(p), 0);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p) && memcmp(p, SEGMENT_MAGIC, MIN((size_t)n, 8)) == 0) {
		/*
		 * Empty, or the start of a prologue: a writer stopped between
		 * creating the file and writing its first bytes. That is a
		 * segment cut short before its first record, not a foreign file.
		 */
		r->version = SEGMENT_VERSION;
		r->state = cut_short(r, bad(r, 0, "prologue cut short: %zd of %d bytes", n,
					    SEGMENT_PROLOGUE_SIZE));
		*ret = steal_ptr(r);
		return 0;
	}
	if ((size_t)n < sizeof(p) || memcmp(p, SEGMENT_MAGIC, 8) != 0 ||
	    get_le32(p + 12) != crc32c(0, p, 12))
		return -EBADMSG;
	r->version = get_le32(p + 8);
	if (r->version < SEGMENT_VERSION_MIN || r->version > SEGMENT_VERSION)
		return -EPROTONOSUPPORT;
	r->off = r->good = SEGMENT_PROLOGUE_SIZE;

	k = check_trailer(r);
	if (k < 0)
		return k;
	*ret = steal_ptr(r);
	return 0;
}

int segment_reader_next(struct segment_reader *r, struct segment_record *rec)
{
	const uint8_t *data = NULL;
	struct rec_hdr h;
	int k;

	assert(r);
	assert(rec);

	if (r->state < 0)
		return r->state;
	if (r->state > 0)
		return 0;

	if (r->off == r->size) {
		/* A .part that ends on a record boundary (possibly right after INDEX). */
		r->state = 1;
		return 0;
	}
	if (r->after_index) {
		/* Only the footer may follow the INDEX record. */
		k = check_footer(r, r->off, r->last_index_off);
		if (k < 0) {
			r->state = k;
			return k;
		}
		r->state = 1;
		return 0;
	}

	k = read_record(r, r->off, r->seq, &h, &data);
	if (k < 0) {
		/* Only format errors are final; an I/O error may be retried. */
		if (k == -EBADMSG)
			r->state = k;
		return k;
	}
	*rec = (struct segment_record){
		.type = h.type,
		.flags = h.flags,
		.cpu = h.cpu,
		.seq = h.seq,
		.offset = r->off,
		.stored_len = h.stored_len,
		.data = data,
		.len = h.raw_len,
	};
	if (h.type == SEGMENT_REC_INDEX) {
		r->after_index = true;
		r->last_index_off = r->off;
	}
	r->off += SEGMENT_REC_HDR_SIZE + (uint64_t)h.stored_len;
	r->good = r->off;
	r->seq++;
	return 1;
}

void segment_reader_set_max_raw(struct segment_reader *r, uint32_t max_raw)
{
	assert(r);
	r->max_raw = max_raw;
}

bool segment_reader_cut_short(const struct segment_reader *r)
{
	assert(r);
	return r->state == -EBADMSG && r->cut_short;
}

uint64_t segment_reader_error_offset(const struct segment_reader *r)
{
	assert(r);
	return r->err_off;
}

const char *segment_reader_error(const struct segment_reader *r)
{
	assert(r);
	return r->err;
}

uint64_t segment_reader_good_offset(const struct segment_reader *r)
{
	assert(r);
	return r->good;
}

bool segment_reader_complete(const struct segment_reader *r)
{
	assert(r);
	return r->complete;
}

const struct segment_index *segment_reader_index(const struct segment_reader *r)
{
	assert(r);
	return r->complete ? &r->index : NULL;
}

uint64_t segment_reader_file_size(const struct segment_reader *r)
{
	assert(r);
	return r->size;
}

void segment_reader_skip_pages(struct segment_reader *r, bool skip)
{
	assert(r);
	r->skip_pages = skip;
}

int segment_reader_read_at(struct segment_reader *r, uint64_t offset, struct segment_record *rec)
{
	const uint8_t *data;
	struct rec_hdr h;
	int k;

	assert(r);
	assert(rec);

	if (offset < SEGMENT_PROLOGUE_SIZE || offset >= r->size)
		return bad(r, offset, "no record at offset %" PRIu64, offset);
	k = read_record(r, offset, -1, &h, &data);
	if (k < 0)
		return k;
	*rec = (struct segment_record){
		.type = h.type,
		.flags = h.flags,
		.cpu = h.cpu,
		.seq = h.seq,
		.offset = offset,
		.stored_len = h.stored_len,
		.data = data,
		.len = h.raw_len,
	};
	return 0;
}

/* The seek table of a segment without one in its INDEX: record headers only. */
static int scan_seek(struct segment_reader *r)
{
	uint64_t off = SEGMENT_PROLOGUE_SIZE, err_off = r->err_off;
	size_t cap = 0;
	char err[sizeof(r->err)];

	memcpy(err, r->err, sizeof(err));
	r->scanned = true;
	for (uint32_t seq = 0; off < r->size; seq++) {
		struct rec_hdr h;
		int k;

		k = read_header(r, off, r->size - off, seq, &h);
		if (k == -EBADMSG || (k == 0 && h.stored_len > r->size - off - SEGMENT_REC_HDR_SIZE))
			break;	/* the sequential read reports it */
		if (k < 0)
			return k;
		if (h.type == SEGMENT_REC_INDEX)
			break;
		if (h.type == SEGMENT_REC_PAGES) {
			k = BUDGET_GREEDY_REALLOC(&r->charged, r->scan, cap, r->nr_scan + 1,
						  "the frame table");
			if (k < 0)
				return k;
			r->scan[r->nr_scan++] = (struct segment_seek){
				.cpu = h.cpu, .offset = off, .first_ts = 0, .last_ts = UINT64_MAX,
			};
		}
		off += SEGMENT_REC_HDR_SIZE + (uint64_t)h.stored_len;
	}
	memcpy(r->err, err, sizeof(err));
	r->err_off = err_off;
	return 0;
}

int segment_reader_seek_table(struct segment_reader *r, const struct segment_seek **ret)
{
	int k;

	assert(r);
	assert(ret);

	if (r->complete && (r->index.flags & SEGMENT_INDEX_F_SEEK)) {
		*ret = r->index.frames;
		return (int)MIN(r->index.nr_frames, (uint32_t)INT_MAX);
	}
	if (!r->scanned) {
		k = scan_seek(r);
		if (k < 0)
			return k;
	}
	*ret = r->scan;
	return (int)MIN(r->nr_scan, (size_t)INT_MAX);
}

uint64_t segment_reader_pages_read(const struct segment_reader *r)
{
	assert(r);
	return r->pages_read;
}

uint32_t segment_reader_version(const struct segment_reader *r)
{
	assert(r);
	return r->version;
}
