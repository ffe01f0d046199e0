/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writing a segment (segment.h): the prologue, records (compressed here or
 * by the caller), and the trailer (INDEX record and footer), then fsync
 * and the rename from .part to the final name. Every header and payload
 * gets its CRC here, so that a reader can trust what checks out.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "buf.h"
#include "crc32c.h"
#include "segment-internal.h"
#include "util.h"

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

	assert(ret);

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

	segment_prologue_encode(prologue);
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

int segment_writer_resume(const char *dir, const char *part_path, uint64_t keep_off,
			  uint32_t keep_records, struct segment_writer **ret)
{
	_cleanup_(segment_writer_freep) struct segment_writer *w = NULL;

	assert(dir);
	assert(part_path);
	assert(ret);

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
	*ret = steal_ptr(w);
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

	segment_rec_hdr_encode(&(struct rec_hdr){
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
		/*
		 * Cut the file back to the last complete record (a full disk
		 * still lets a file shrink): then the writer can go on once
		 * space returns. Only if that fails is the writer done for.
		 */
		if (ftruncate(w->fd, (off_t)w->size) < 0 ||
		    lseek(w->fd, (off_t)w->size, SEEK_SET) != (off_t)w->size)
			w->error = r;
		return r;
	}
	w->size += SEGMENT_REC_HDR_SIZE + stored + tail_len;
	w->records++;
	return 0;
}

static int check_append(const struct segment_writer *w, unsigned int type)
{
	assert(w);
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
	/* the caller's own data and the level its config checked */
	assert(payload || len == 0);
	assert(compress_level >= 0);
	if (len > SEGMENT_MAX_RAW)
		return -EFBIG;
	if (type == SEGMENT_REC_NOTE)
		len = MIN(len, (size_t)SEGMENT_MAX_NOTE);
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
				     size_t raw_len, uint16_t flags)
{
	int r;

	r = check_append(w, type);
	if (r < 0)
		return r;
	if (!stored || stored_len == 0)
		return -EINVAL;
	if (flags & ~SEGMENT_REC_F_COLUMNS || (flags && type != SEGMENT_REC_PAGES))
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
	return emit(w, type, cpu, SEGMENT_REC_F_COMPRESSED | flags,
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
	assert(w);
	return w->size;
}

uint32_t segment_writer_records(const struct segment_writer *w)
{
	assert(w);
	return w->records;
}

int segment_writer_error(const struct segment_writer *w)
{
	return w->error;
}

const char *segment_writer_path(const struct segment_writer *w)
{
	assert(w);
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
	segment_footer_encode(w->size, footer);
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
	assert(w);
	return writer_finish(w, idx, sync, ret_path);
}
