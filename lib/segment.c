/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The segment format (doc/segment-format.md): write, read, verify, recover.
 *
 * Every byte of a segment is covered by a check: the prologue and each
 * record header by their own CRC, payloads by the CRC in their header, the
 * footer by its CRC and fixed fields. A reader therefore never hands out
 * damaged data: it stops at the first record that does not check out and
 * says where, and everything before that point is intact.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "buf.h"
#include "crc32c.h"
#include "segment.h"
#include "util.h"

#define INDEX_HDR_SIZE 16
#define INDEX_CPU_SIZE 56

/* Decoded record header. */
struct rec_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t cpu;
	uint32_t stored_len;
	uint32_t raw_len;
	uint32_t seq;
	uint32_t payload_crc;
};

static void put_le16(void *p, uint16_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && streq(s + a - b, suffix);
}

static void prologue_encode(uint8_t p[SEGMENT_PROLOGUE_SIZE])
{
	memcpy(p, SEGMENT_MAGIC, 8);
	put_le32(p + 8, SEGMENT_VERSION);
	put_le32(p + 12, crc32c(0, p, 12));
}

static void rec_hdr_encode(const struct rec_hdr *h, uint8_t p[SEGMENT_REC_HDR_SIZE])
{
	put_le32(p, SEGMENT_REC_MAGIC);
	put_le16(p + 4, h->type);
	put_le16(p + 6, h->flags);
	put_le32(p + 8, h->cpu);
	put_le32(p + 12, h->stored_len);
	put_le32(p + 16, h->raw_len);
	put_le32(p + 20, h->seq);
	put_le32(p + 24, h->payload_crc);
	put_le32(p + 28, crc32c(0, p, 28));
}

static void footer_encode(uint64_t index_off, uint8_t p[SEGMENT_FOOTER_SIZE])
{
	put_le64(p, index_off);
	put_le32(p + 8, crc32c(0, p, 8));
	put_le32(p + 12, 0);
	memcpy(p + 16, SEGMENT_END_MAGIC, 8);
}

const char *segment_rec_type_name(unsigned int type)
{
	static const char *const names[SEGMENT_REC_MAX] = {
		[SEGMENT_REC_META] = "META",
		[SEGMENT_REC_FILE] = "FILE",
		[SEGMENT_REC_PAGES] = "PAGES",
		[SEGMENT_REC_STACKS] = "STACKS",
		[SEGMENT_REC_GENERATION] = "GENERATION",
		[SEGMENT_REC_STATS] = "STATS",
		[SEGMENT_REC_NOTE] = "NOTE",
		[SEGMENT_REC_INDEX] = "INDEX",
	};

	return type < SEGMENT_REC_MAX ? names[type] : NULL;
}

/* ---- payload codecs ---- */

void segment_generation_encode(const struct segment_generation *g,
			       uint8_t out[SEGMENT_GENERATION_SIZE])
{
	put_le32(out, g->generation);
	put_le32(out + 4, g->prev_generation);
	put_le32(out + 8, g->kind);
	put_le32(out + 12, g->flags);
	put_le64(out + 16, g->window_begin);
	put_le64(out + 24, g->window_end);
}

int segment_generation_decode(const void *buf, size_t len, struct segment_generation *ret)
{
	const uint8_t *p = buf;

	/* Longer payloads may carry fields of a later writer: read ours. */
	if (!buf || len < SEGMENT_GENERATION_SIZE)
		return -EBADMSG;
	*ret = (struct segment_generation){
		.generation = get_le32(p),
		.prev_generation = get_le32(p + 4),
		.kind = get_le32(p + 8),
		.flags = get_le32(p + 12),
		.window_begin = get_le64(p + 16),
		.window_end = get_le64(p + 24),
	};
	return 0;
}

int segment_index_encode(const struct segment_index *idx, uint8_t **ret, size_t *ret_len)
{
	uint8_t *p, *q;
	size_t len;

	if (idx->nr_cpus && !idx->cpus)
		return -EINVAL;
	if (idx->nr_cpus > (SEGMENT_MAX_RAW - INDEX_HDR_SIZE) / INDEX_CPU_SIZE)
		return -EFBIG;
	len = INDEX_HDR_SIZE + (size_t)idx->nr_cpus * INDEX_CPU_SIZE;
	p = malloc(len);
	if (!p)
		return -ENOMEM;
	put_le32(p, idx->nr_cpus);
	put_le32(p + 4, idx->flags);
	put_le64(p + 8, idx->unresolved);
	q = p + INDEX_HDR_SIZE;
	for (uint32_t i = 0; i < idx->nr_cpus; i++, q += INDEX_CPU_SIZE) {
		const struct segment_cpu_index *c = &idx->cpus[i];

		put_le32(q, c->cpu);
		put_le32(q + 4, 0);
		put_le64(q + 8, c->pages);
		put_le64(q + 16, c->events);
		put_le64(q + 24, c->first_ts);
		put_le64(q + 32, c->last_ts);
		put_le64(q + 40, c->lost_events);
		put_le64(q + 48, c->bytes);
	}
	*ret = p;
	*ret_len = len;
	return 0;
}

int segment_index_decode(const void *buf, size_t len, struct segment_index *ret)
{
	struct segment_cpu_index *cpus = NULL;
	const uint8_t *p = buf, *q;
	uint32_t n;

	if (!buf || len < INDEX_HDR_SIZE)
		return -EBADMSG;
	n = get_le32(p);
	/* The count is checked against the length before anything is allocated. */
	if (n > (len - INDEX_HDR_SIZE) / INDEX_CPU_SIZE ||
	    len != INDEX_HDR_SIZE + (size_t)n * INDEX_CPU_SIZE)
		return -EBADMSG;
	if (n) {
		cpus = calloc(n, sizeof(*cpus));
		if (!cpus)
			return -ENOMEM;
	}
	q = p + INDEX_HDR_SIZE;
	for (uint32_t i = 0; i < n; i++, q += INDEX_CPU_SIZE)
		cpus[i] = (struct segment_cpu_index){
			.cpu = get_le32(q),
			.pages = get_le64(q + 8),
			.events = get_le64(q + 16),
			.first_ts = get_le64(q + 24),
			.last_ts = get_le64(q + 32),
			.lost_events = get_le64(q + 40),
			.bytes = get_le64(q + 48),
		};
	*ret = (struct segment_index){
		.flags = get_le32(p + 4),
		.unresolved = get_le64(p + 8),
		.nr_cpus = n,
		.cpus = cpus,
	};
	return 0;
}

/* ---- writing ---- */

struct segment_writer {
	int fd;
	char *dir;
	char *path;		/* DIR/NAME.smseg.part */
	uint64_t size;
	uint32_t records;
	int error;		/* first write error: the writer refuses to go on */
	ZSTD_CCtx *cctx;	/* the writer's own context, made on first use */
	struct buf zbuf;	/* compressed payload */
	struct buf scratch;	/* FILE payload assembly */
};

struct segment_writer *segment_writer_free(struct segment_writer *w)
{
	if (!w)
		return NULL;
	if (w->fd >= 0)
		(void)close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	buf_done(&w->zbuf);
	buf_done(&w->scratch);
	free(w->dir);
	free(w->path);
	free(w);
	return NULL;
}


static struct segment_writer *writer_alloc(const char *dir, const char *path)
{
	struct segment_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = -1;
	w->dir = strdup(dir);
	w->path = strdup(path);
	if (!w->dir || !w->path)
		return segment_writer_free(w);
	return w;
}

int segment_writer_open(const char *dir, const char *name, struct segment_writer **ret)
{
	_cleanup_(segment_writer_freep) struct segment_writer *w = NULL;
	_cleanup_free_ char *path = NULL;
	uint8_t prologue[SEGMENT_PROLOGUE_SIZE];
	int r;

	if (!dir || !name || !*name || strchr(name, '/'))
		return -EINVAL;
	r = strprintf(&path, "%s/%s%s", dir, name, SEGMENT_PART_SUFFIX);
	if (r < 0)
		return r;
	w = writer_alloc(dir, path);
	if (!w)
		return -ENOMEM;
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (w->fd < 0)
		return -errno;

	prologue_encode(prologue);
	r = write_all(w->fd, prologue, sizeof(prologue));
	if (r < 0) {
		/* Nothing in it is worth recovering. */
		(void)unlink(path);
		return r;
	}
	w->size = SEGMENT_PROLOGUE_SIZE;
	*ret = steal_ptr(w);
	return 0;
}

/* writev() all of iov, retrying on EINTR and short writes. Modifies iov. */
static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t k = writev(fd, iov, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

#define MAX_PAYLOAD_IOV 3

/*
 * Write one record whose stored payload is the concatenation of payload[],
 * followed by tail (the footer, when finishing), with one writev.
 */
static int emit(struct segment_writer *w, uint16_t type, uint32_t cpu, uint16_t flags,
		const struct iovec *payload, int n, size_t raw_len, const void *tail,
		size_t tail_len)
{
	struct iovec iov[MAX_PAYLOAD_IOV + 2];
	uint8_t hdr[SEGMENT_REC_HDR_SIZE];
	size_t stored = 0;
	uint32_t crc = 0;
	int k = 0, r;

	assert(n <= MAX_PAYLOAD_IOV);
	if (w->records == UINT32_MAX)
		return -EOVERFLOW;
	iov[k++] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
	for (int i = 0; i < n; i++) {
		if (payload[i].iov_len > SEGMENT_MAX_STORED - stored)
			return -EFBIG;
		stored += payload[i].iov_len;
		crc = crc32c(crc, payload[i].iov_base, payload[i].iov_len);
		iov[k++] = payload[i];
	}
	if (raw_len > SEGMENT_MAX_RAW)
		return -EFBIG;
	if (tail_len)
		iov[k++] = (struct iovec){ .iov_base = (void *)tail, .iov_len = tail_len };

	rec_hdr_encode(&(struct rec_hdr){
			       .type = type,
			       .flags = flags,
			       .cpu = cpu,
			       .stored_len = (uint32_t)stored,
			       .raw_len = (uint32_t)raw_len,
			       .seq = w->records,
			       .payload_crc = crc,
		       },
		       hdr);
	r = writev_all(w->fd, iov, k);
	if (r < 0) {
		/* Leave the file ending on a record boundary if the disk lets us. */
		w->error = r;
		(void)ftruncate(w->fd, (off_t)w->size);
		return r;
	}
	w->size += SEGMENT_REC_HDR_SIZE + stored + tail_len;
	w->records++;
	return 0;
}

static int check_append(const struct segment_writer *w, unsigned int type)
{
	if (!w)
		return -EINVAL;
	if (w->error)
		return w->error;
	/* INDEX is written by segment_writer_finish() only. */
	if (type < SEGMENT_REC_META || type >= SEGMENT_REC_MAX || type == SEGMENT_REC_INDEX)
		return -EINVAL;
	/* META first, so that every reader knows what it is reading. */
	if ((w->records == 0) != (type == SEGMENT_REC_META))
		return -EINVAL;
	return 0;
}

static int zstd_errno(size_t z)
{
	return ZSTD_getErrorCode(z) == ZSTD_error_memory_allocation ? -ENOMEM : -EINVAL;
}

int segment_writer_append(struct segment_writer *w, enum segment_rec_type type, uint32_t cpu,
			  const void *payload, size_t len, int compress_level, void *cctx)
{
	ZSTD_CCtx *c = cctx;
	size_t bound, z;
	int r;

	r = check_append(w, type);
	if (r < 0)
		return r;
	if ((len && !payload) || compress_level < 0)
		return -EINVAL;
	if (len > SEGMENT_MAX_RAW)
		return -EFBIG;
	if (compress_level == 0)
		return emit(w, type, cpu, 0,
			    &(struct iovec){ .iov_base = (void *)payload, .iov_len = len }, 1, len,
			    NULL, 0);

	if (!c) {
		if (!w->cctx) {
			w->cctx = ZSTD_createCCtx();
			if (!w->cctx)
				return -ENOMEM;
		}
		c = w->cctx;
	}
	bound = ZSTD_compressBound(len);
	w->zbuf.len = 0;
	r = buf_reserve(&w->zbuf, bound);
	if (r < 0)
		return r;
	z = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, compress_level);
	if (ZSTD_isError(z))
		return zstd_errno(z);
	/* Readers check the frame's content size against raw_len: keep it in. */
	z = ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
	if (ZSTD_isError(z))
		return zstd_errno(z);
	z = ZSTD_compress2(c, w->zbuf.data, w->zbuf.cap, payload ? payload : "", len);
	if (ZSTD_isError(z))
		return zstd_errno(z);
	return emit(w, type, cpu, SEGMENT_REC_F_COMPRESSED,
		    &(struct iovec){ .iov_base = w->zbuf.data, .iov_len = z }, 1, len, NULL, 0);
}

int segment_writer_append_compressed(struct segment_writer *w, enum segment_rec_type type,
				     uint32_t cpu, const void *stored, size_t stored_len,
				     size_t raw_len)
{
	int r;

	r = check_append(w, type);
	if (r < 0)
		return r;
	if (!stored || stored_len == 0)
		return -EINVAL;
	if (stored_len > SEGMENT_MAX_STORED || raw_len > SEGMENT_MAX_RAW)
		return -EFBIG;
	/*
	 * Both checks only parse frame and block headers; they catch a frame
	 * that readers would reject before it is on disk.
	 */
	if (ZSTD_getFrameContentSize(stored, stored_len) != (unsigned long long)raw_len ||
	    ZSTD_findFrameCompressedSize(stored, stored_len) != stored_len)
		return -EINVAL;
	return emit(w, type, cpu, SEGMENT_REC_F_COMPRESSED,
		    &(struct iovec){ .iov_base = (void *)stored, .iov_len = stored_len }, 1,
		    raw_len, NULL, 0);
}

int segment_writer_append_file(struct segment_writer *w, const char *name, const void *data,
			       size_t len, int compress_level)
{
	size_t name_len;
	int r;

	r = check_append(w, SEGMENT_REC_FILE);
	if (r < 0)
		return r;
	if (!name || !*name || (len && !data) || compress_level < 0)
		return -EINVAL;
	name_len = strlen(name);
	if (len > SEGMENT_MAX_RAW || name_len + 1 > SEGMENT_MAX_RAW - len)
		return -EFBIG;
	if (compress_level == 0) {
		struct iovec iov[MAX_PAYLOAD_IOV] = {
			{ .iov_base = (void *)name, .iov_len = name_len + 1 },
			{ .iov_base = (void *)data, .iov_len = len },
		};

		return emit(w, SEGMENT_REC_FILE, SEGMENT_NO_CPU, 0, iov, 2, name_len + 1 + len,
			    NULL, 0);
	}
	/* FILE records are written a few times per segment: one copy is fine. */
	buf_reset(&w->scratch);
	r = buf_append(&w->scratch, name, name_len + 1);
	if (r >= 0)
		r = buf_append(&w->scratch, data, len);
	if (r < 0)
		return r;
	return segment_writer_append(w, SEGMENT_REC_FILE, SEGMENT_NO_CPU, w->scratch.data,
				     w->scratch.len, compress_level, NULL);
}

uint64_t segment_writer_size(const struct segment_writer *w)
{
	return w->size;
}

uint32_t segment_writer_records(const struct segment_writer *w)
{
	return w->records;
}

const char *segment_writer_path(const struct segment_writer *w)
{
	return w->path;
}

/* Write INDEX and footer, sync, rename. Frees w. */
static int writer_finish(struct segment_writer *wp, const struct segment_index *idx, bool sync,
			 char **ret_path)
{
	_cleanup_(segment_writer_freep) struct segment_writer *w = wp;
	_cleanup_free_ uint8_t *payload = NULL;
	_cleanup_free_ char *final = NULL;
	uint8_t footer[SEGMENT_FOOTER_SIZE];
	size_t len;
	int r, fd;

	if (w->error)
		return w->error;
	if (w->records == 0)
		return -EINVAL;
	r = segment_index_encode(idx ? idx : &(struct segment_index){ 0 }, &payload, &len);
	if (r < 0)
		return r;
	footer_encode(w->size, footer);
	r = emit(w, SEGMENT_REC_INDEX, SEGMENT_NO_CPU, 0,
		 &(struct iovec){ .iov_base = payload, .iov_len = len }, 1, len, footer,
		 sizeof(footer));
	if (r < 0)
		return r;
	if (sync && fsync(w->fd) < 0)
		return -errno;
	fd = steal_fd(&w->fd);
	if (close(fd) < 0 && errno != EINTR)
		return -errno;

	final = strndup(w->path, strlen(w->path) - strlen(".part"));
	if (!final)
		return -ENOMEM;
	if (rename(w->path, final) < 0)
		return -errno;
	if (sync) {
		r = fsync_dir(w->dir);
		if (r < 0)
			return r;
	}
	if (ret_path)
		*ret_path = steal_ptr(final);
	return 0;
}

int segment_writer_finish(struct segment_writer *w, const struct segment_index *idx, bool sync,
			  char **ret_path)
{
	if (!w)
		return -EINVAL;
	return writer_finish(w, idx, sync, ret_path);
}

/* ---- reading ---- */

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
	char err[192];
	ZSTD_DCtx *dctx;
	struct buf stored;
	struct buf raw;
};

struct segment_reader *segment_reader_free(struct segment_reader *r)
{
	if (!r)
		return NULL;
	if (r->fd >= 0)
		(void)close(r->fd);
	free(r->index.cpus);
	ZSTD_freeDCtx(r->dctx);
	buf_done(&r->stored);
	buf_done(&r->raw);
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

/* pread() up to len bytes at off; returns the number read (short only at EOF) or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
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
	uint8_t p[SEGMENT_REC_HDR_SIZE];
	uint64_t avail;
	uint8_t *payload;
	ssize_t n;
	size_t z;
	int k;

	avail = off < r->size ? r->size - off : 0;
	if (avail < SEGMENT_REC_HDR_SIZE)
		return bad(r, off, "truncated record header: %" PRIu64 " of %d bytes", avail,
			   SEGMENT_REC_HDR_SIZE);
	n = pread_full(r->fd, p, sizeof(p), off);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p))
		return bad(r, off, "truncated record header: %zd of %d bytes (file shrank)", n,
			   SEGMENT_REC_HDR_SIZE);
	if (get_le32(p) != SEGMENT_REC_MAGIC)
		return bad(r, off, "bad record magic 0x%08" PRIx32, get_le32(p));
	if (get_le32(p + 28) != crc32c(0, p, 28))
		return bad(r, off, "record header CRC mismatch");
	*h = (struct rec_hdr){
		.type = get_le16(p + 4),
		.flags = get_le16(p + 6),
		.cpu = get_le32(p + 8),
		.stored_len = get_le32(p + 12),
		.raw_len = get_le32(p + 16),
		.seq = get_le32(p + 20),
		.payload_crc = get_le32(p + 24),
	};
	if (expect_seq >= 0 && h->seq != (uint64_t)expect_seq)
		return bad(r, off, "sequence number %" PRIu32 ", expected %" PRIi64, h->seq,
			   expect_seq);
	if (expect_seq == 0 && h->type != SEGMENT_REC_META)
		return bad(r, off, "first record has type %u, not META", h->type);
	/* A flag we do not know could change what the payload means: stop. */
	if (h->flags & ~SEGMENT_REC_F_COMPRESSED)
		return bad(r, off, "unknown record flags 0x%04x", h->flags);
	if (h->stored_len > SEGMENT_MAX_STORED)
		return bad(r, off, "stored length %" PRIu32 " exceeds the limit of %u bytes",
			   h->stored_len, SEGMENT_MAX_STORED);
	if (h->raw_len > SEGMENT_MAX_RAW)
		return bad(r, off, "raw length %" PRIu32 " exceeds the limit of %u bytes",
			   h->raw_len, SEGMENT_MAX_RAW);
	if (!(h->flags & SEGMENT_REC_F_COMPRESSED) && h->raw_len != h->stored_len)
		return bad(r, off, "uncompressed record with raw length %" PRIu32
			   " and stored length %" PRIu32, h->raw_len, h->stored_len);
	avail -= SEGMENT_REC_HDR_SIZE;
	if (h->stored_len > avail)
		return bad(r, off, "truncated record payload: %" PRIu64 " of %" PRIu32 " bytes",
			   avail, h->stored_len);
	if (r->complete && off < r->index_off &&
	    off + SEGMENT_REC_HDR_SIZE + h->stored_len > r->index_off)
		return bad(r, off, "record overlaps the INDEX record at offset %" PRIu64,
			   r->index_off);

	r->stored.len = 0;
	k = buf_reserve(&r->stored, (size_t)h->stored_len + 1);
	if (k < 0)
		return k;
	payload = r->stored.data;
	n = pread_full(r->fd, payload, h->stored_len, off + SEGMENT_REC_HDR_SIZE);
	if (n < 0)
		return (int)n;
	if ((size_t)n < h->stored_len)
		return bad(r, off,
			   "truncated record payload: %zd of %" PRIu32 " bytes (file shrank)", n,
			   h->stored_len);
	if (crc32c(0, payload, h->stored_len) != h->payload_crc)
		return bad(r, off, "record payload CRC mismatch");
	if (!(h->flags & SEGMENT_REC_F_COMPRESSED)) {
		*ret_data = payload;
		return 0;
	}

	{
		unsigned long long fcs = ZSTD_getFrameContentSize(payload, h->stored_len);

		if (fcs == ZSTD_CONTENTSIZE_ERROR)
			return bad(r, off, "zstd frame header is invalid");
		if (fcs == ZSTD_CONTENTSIZE_UNKNOWN)
			return bad(r, off, "zstd frame does not record its content size");
		if (fcs != h->raw_len)
			return bad(r, off, "zstd frame content size %llu, expected %" PRIu32, fcs,
				   h->raw_len);
	}
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
	k = buf_reserve(&r->raw, (size_t)h->raw_len + 1);
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
	*ret_data = r->raw.data;
	return 0;
}

/* Check the footer at off, which must point at the INDEX record at index_off and end the file. */
static int check_footer(struct segment_reader *r, uint64_t off, uint64_t index_off)
{
	uint8_t p[SEGMENT_FOOTER_SIZE];
	uint64_t avail = off < r->size ? r->size - off : 0;
	ssize_t n;

	if (avail < SEGMENT_FOOTER_SIZE)
		return bad(r, off, "truncated footer: %" PRIu64 " of %d bytes", avail,
			   SEGMENT_FOOTER_SIZE);
	n = pread_full(r->fd, p, sizeof(p), off);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p))
		return bad(r, off, "truncated footer (file shrank)");
	if (memcmp(p + 16, SEGMENT_END_MAGIC, 8) != 0)
		return bad(r, off, "footer magic mismatch");
	if (get_le32(p + 8) != crc32c(0, p, 8))
		return bad(r, off, "footer CRC mismatch");
	if (get_le32(p + 12) != 0)
		return bad(r, off, "footer reserved field is not zero");
	if (get_le64(p) != index_off)
		return bad(r, off,
			   "footer points at offset %" PRIu64 ", the INDEX record is at %" PRIu64,
			   get_le64(p), index_off);
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
	n = pread_full(r->fd, p, sizeof(p), foot);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p) || memcmp(p + 16, SEGMENT_END_MAGIC, 8) != 0 ||
	    get_le32(p + 8) != crc32c(0, p, 8) || get_le32(p + 12) != 0)
		return 0;
	ioff = get_le64(p);
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

	n = pread_full(r->fd, p, sizeof(p), 0);
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(p) || memcmp(p, SEGMENT_MAGIC, 8) != 0 ||
	    get_le32(p + 12) != crc32c(0, p, 12))
		return -EBADMSG;
	if (get_le32(p + 8) != SEGMENT_VERSION)
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

uint64_t segment_reader_error_offset(const struct segment_reader *r)
{
	return r->err_off;
}

const char *segment_reader_error(const struct segment_reader *r)
{
	return r->err;
}

uint64_t segment_reader_good_offset(const struct segment_reader *r)
{
	return r->good;
}

bool segment_reader_complete(const struct segment_reader *r)
{
	return r->complete;
}

const struct segment_index *segment_reader_index(const struct segment_reader *r)
{
	return r->complete ? &r->index : NULL;
}

uint64_t segment_reader_file_size(const struct segment_reader *r)
{
	return r->size;
}

/* ---- recovery ---- */

static int remove_part(const char *path, const char *dir)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return fsync_dir(dir);
}

/* A .part that is a whole segment (stopped between finishing and renaming it). */
static int rename_complete(const char *path, const char *dir, char **ret_path)
{
	_cleanup_free_ char *final = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		return -errno;
	final = strndup(path, strlen(path) - strlen(".part"));
	if (!final)
		return -ENOMEM;
	if (rename(path, final) < 0)
		return -errno;
	r = fsync_dir(dir);
	if (r < 0)
		return r;
	if (ret_path)
		*ret_path = steal_ptr(final);
	return 0;
}

int segment_recover(const char *part_path, const struct segment_index *idx, const char *note,
		    char **ret_path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	_cleanup_(segment_writer_freep) struct segment_writer *w = NULL;
	_cleanup_free_ struct segment_cpu_index *own_cpus = NULL;
	_cleanup_free_ char *dir = NULL, *text = NULL, *reason = NULL;
	struct segment_index own = { 0 }, out;
	uint64_t keep_off = SEGMENT_PROLOGUE_SIZE;
	uint32_t keep_records = 0;
	bool have_own = false;
	const char *slash;
	int k;

	if (!part_path || !has_suffix(part_path, SEGMENT_PART_SUFFIX))
		return -EINVAL;
	slash = strrchr(part_path, '/');
	dir = slash ? strndup(part_path, slash == part_path ? 1 : (size_t)(slash - part_path))
		    : strdup(".");
	if (!dir)
		return -ENOMEM;

	k = segment_reader_open(part_path, &rd);
	if (k == -EBADMSG) {
		/* Not even a prologue: nothing to keep. */
		k = remove_part(part_path, dir);
		if (k >= 0 && ret_path)
			*ret_path = NULL;
		return k;
	}
	if (k < 0)
		return k;

	for (;;) {
		struct segment_record rec;

		k = segment_reader_next(rd, &rec);
		if (k == 0 || k == -EBADMSG)
			break;
		if (k < 0)
			return k;
		if (rec.type == SEGMENT_REC_INDEX) {
			/*
			 * An INDEX without a valid footer: the writer stopped
			 * while finishing, all data is there. Cut before this
			 * INDEX but keep what it says.
			 */
			free(own_cpus);
			own_cpus = NULL;
			have_own = segment_index_decode(rec.data, rec.len, &own) >= 0;
			own_cpus = have_own ? own.cpus : NULL;
			continue;
		}
		keep_off = rec.offset + SEGMENT_REC_HDR_SIZE + rec.stored_len;
		keep_records = rec.seq + 1;
	}
	if (k == 0 && segment_reader_complete(rd))
		return rename_complete(part_path, dir, ret_path);
	if (keep_records <= 1) {
		k = remove_part(part_path, dir);
		if (k >= 0 && ret_path)
			*ret_path = NULL;
		return k;
	}

	if (k == -EBADMSG)
		k = strprintf(&reason, "cut at offset %" PRIu64 ": %s",
			      segment_reader_error_offset(rd), segment_reader_error(rd));
	else
		k = strprintf(&reason, "ended at offset %" PRIu64 " without a trailer",
			      segment_reader_good_offset(rd));
	if (k < 0)
		return k;
	k = strprintf(&text, "%s: kept %" PRIu32 " records (%" PRIu64 " bytes), %s",
		      note ? note : "segment recovered after an unclean stop", keep_records,
		      keep_off, reason);
	if (k < 0)
		return k;
	rd = segment_reader_free(rd);

	w = writer_alloc(dir, part_path);
	if (!w)
		return -ENOMEM;
	w->fd = open(part_path, O_WRONLY | O_CLOEXEC);
	if (w->fd < 0)
		return -errno;
	if (ftruncate(w->fd, (off_t)keep_off) < 0)
		return -errno;
	if (lseek(w->fd, (off_t)keep_off, SEEK_SET) < 0)
		return -errno;
	w->size = keep_off;
	w->records = keep_records;

	k = emit(w, SEGMENT_REC_NOTE, SEGMENT_NO_CPU, 0,
		 &(struct iovec){ .iov_base = text, .iov_len = strlen(text) }, 1, strlen(text),
		 NULL, 0);
	if (k < 0)
		return k;

	/* The segment's own INDEX knows more than a caller's rebuilt one. */
	out = have_own ? own : idx ? *idx : (struct segment_index){ 0 };
	out.flags |= SEGMENT_INDEX_F_TRUNCATED;
	return writer_finish(steal_ptr(w), &out, true, ret_path);
}

/* ---- names ---- */

bool segment_name_is_finished(const char *name)
{
	return name && has_suffix(name, SEGMENT_SUFFIX);
}

bool segment_name_is_part(const char *name)
{
	return name && has_suffix(name, SEGMENT_PART_SUFFIX);
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

int segment_name_seq(const char *name, uint64_t *ret_seq)
{
	const char *s, *slash;
	uint64_t seq = 0;
	size_t n = 0;

	if (!name)
		return -EINVAL;
	slash = strrchr(name, '/');
	s = slash ? slash + 1 : name;
	for (; s[n] >= '0' && s[n] <= '9'; n++) {
		unsigned int d = (unsigned int)(s[n] - '0');

		if (seq > (UINT64_MAX - d) / 10)
			return -EINVAL;
		seq = seq * 10 + d;
	}
	if (n == 0 || s[n] != '-')
		return -EINVAL;
	s += n + 1;
	/* YYYYmmddTHHMMSS */
	if (strnlen(s, 15) < 15 || !digits(s, 8) || s[8] != 'T' || !digits(s + 9, 6))
		return -EINVAL;
	s += 15;
	if (!streq(s, SEGMENT_SUFFIX) && !streq(s, SEGMENT_PART_SUFFIX))
		return -EINVAL;
	*ret_seq = seq;
	return 0;
}
