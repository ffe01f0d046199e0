/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The segment format's shared encodings (segment.h, doc/segment-format.md):
 * record type names, the prologue, the record header and the footer, the
 * GENERATION and INDEX payloads, and segment file names. Writing, reading
 * and recovery are segment-writer.c, segment-reader.c and
 * segment-recover.c; PAGES payloads are encoded by segment-frame.c.
 */
#include <assert.h>
#include <inttypes.h>

#include "buf.h"
#include "crc32c.h"
#include "segment-internal.h"
#include "segment.h"
#include "util.h"

#define INDEX_HDR_SIZE 16
#define INDEX_CPU_SIZE 56
#define INDEX_SEEK_HDR_SIZE 8
#define INDEX_SEEK_SIZE 32

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a > b && streq(s + a - b, suffix);
}
void segment_prologue_encode(uint8_t p[SEGMENT_PROLOGUE_SIZE])
{
	memcpy(p, SEGMENT_MAGIC, 8);
	put_le32(p + 8, SEGMENT_VERSION);
	put_le32(p + 12, crc32c(0, p, 12));
}

void segment_rec_hdr_encode(const struct rec_hdr *h, uint8_t p[SEGMENT_REC_HDR_SIZE])
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

int segment_rec_hdr_decode(const uint8_t p[SEGMENT_REC_HDR_SIZE], struct rec_hdr *ret)
{
	if (get_le32(p) != SEGMENT_REC_MAGIC)
		return -EBADMSG;
	if (get_le32(p + 28) != crc32c(0, p, 28))
		return -EBADE;
	*ret = (struct rec_hdr){
		.type = get_le16(p + 4),
		.flags = get_le16(p + 6),
		.cpu = get_le32(p + 8),
		.stored_len = get_le32(p + 12),
		.raw_len = get_le32(p + 16),
		.seq = get_le32(p + 20),
		.payload_crc = get_le32(p + 24),
	};
	return 0;
}

void segment_footer_encode(uint64_t index_off, uint8_t p[SEGMENT_FOOTER_SIZE])
{
	put_le64(p, index_off);
	put_le32(p + 8, crc32c(0, p, 8));
	put_le32(p + 12, 0);
	memcpy(p + 16, SEGMENT_END_MAGIC, 8);
}

int segment_footer_decode(const uint8_t p[SEGMENT_FOOTER_SIZE], uint64_t *ret_index_off)
{
	if (memcmp(p + 16, SEGMENT_END_MAGIC, 8) != 0)
		return -EBADMSG;
	if (get_le32(p + 8) != crc32c(0, p, 8))
		return -EBADE;
	if (get_le32(p + 12) != 0)
		return -EPROTO;
	*ret_index_off = get_le64(p);
	return 0;
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
		[SEGMENT_REC_CLOCK] = "CLOCK",
	};

	return type < SEGMENT_REC_MAX ? names[type] : NULL;
}
/* ---- payload codecs ---- */

void segment_generation_encode(const struct segment_generation *g,
			       uint8_t out[SEGMENT_GENERATION_SIZE])
{
	assert(g);
	assert(out);

	put_le32(out, g->generation);
	put_le32(out + 4, g->prev_generation);
	put_le32(out + 8, g->kind);
	put_le32(out + 12, g->flags);
	put_le64(out + 16, g->window_begin);
	put_le64(out + 24, g->window_end);
	put_le32(out + 32, g->begin_cpu);
	put_le32(out + 36, g->end_cpu);
	put_le64(out + 40, g->guard);
}

int segment_generation_decode(const void *buf, size_t len, struct segment_generation *ret)
{
	const uint8_t *p = buf;

	assert(ret);

	/* Longer payloads may carry fields of a later writer: read ours. */
	if (!buf || len < SEGMENT_GENERATION_MIN_SIZE)
		return -EBADMSG;
	*ret = (struct segment_generation){
		.generation = get_le32(p),
		.prev_generation = get_le32(p + 4),
		.kind = get_le32(p + 8),
		.flags = get_le32(p + 12),
		.window_begin = get_le64(p + 16),
		.window_end = get_le64(p + 24),
		.begin_cpu = SEGMENT_NO_CPU,
		.end_cpu = SEGMENT_NO_CPU,
	};
	if (len >= SEGMENT_GENERATION_SIZE) {
		ret->begin_cpu = get_le32(p + 32);
		ret->end_cpu = get_le32(p + 36);
		ret->guard = get_le64(p + 40);
	}
	return 0;
}

int segment_index_encode(const struct segment_index *idx, uint8_t **ret, size_t *ret_len)
{
	uint8_t *p, *q;
	size_t len;

	assert(idx);
	assert(ret);
	assert(ret_len);

	if (idx->nr_cpus && !idx->cpus)
		return -EINVAL;
	if (idx->nr_cpus > SEGMENT_MAX_INDEX_CPUS)
		return -EFBIG;
	if (idx->nr_frames && !idx->frames)
		return -EINVAL;
	if (idx->nr_frames > SEGMENT_MAX_INDEX_FRAMES)
		return -EFBIG;
	len = INDEX_HDR_SIZE + (size_t)idx->nr_cpus * INDEX_CPU_SIZE;
	if (idx->flags & SEGMENT_INDEX_F_SEEK)
		len += INDEX_SEEK_HDR_SIZE + (size_t)idx->nr_frames * INDEX_SEEK_SIZE;
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
	if (idx->flags & SEGMENT_INDEX_F_SEEK) {
		put_le32(q, idx->nr_frames);
		put_le32(q + 4, 0);
		q += INDEX_SEEK_HDR_SIZE;
		for (uint32_t i = 0; i < idx->nr_frames; i++, q += INDEX_SEEK_SIZE) {
			const struct segment_seek *f = &idx->frames[i];

			put_le32(q, f->cpu);
			put_le32(q + 4, 0);
			put_le64(q + 8, f->offset);
			put_le64(q + 16, f->first_ts);
			put_le64(q + 24, f->last_ts);
		}
	}
	*ret = p;
	*ret_len = len;
	return 0;
}

/* The seek table after the CPU lines (p, len bytes), into *ret. Returns 0, -EBADMSG or -ENOMEM. */
static int seek_decode(const uint8_t *p, size_t len, struct segment_index *ret)
{
	uint32_t m;

	if (len < INDEX_SEEK_HDR_SIZE)
		return -EBADMSG;
	m = get_le32(p);
	if (get_le32(p + 4) != 0 || m > (len - INDEX_SEEK_HDR_SIZE) / INDEX_SEEK_SIZE ||
	    len != INDEX_SEEK_HDR_SIZE + (size_t)m * INDEX_SEEK_SIZE)
		return -EBADMSG;
	if (m) {
		ret->frames = calloc(m, sizeof(*ret->frames));
		if (!ret->frames)
			return -ENOMEM;
	}
	p += INDEX_SEEK_HDR_SIZE;
	for (uint32_t i = 0; i < m; i++, p += INDEX_SEEK_SIZE)
		ret->frames[i] = (struct segment_seek){
			.cpu = get_le32(p),
			.offset = get_le64(p + 8),
			.first_ts = get_le64(p + 16),
			.last_ts = get_le64(p + 24),
		};
	ret->nr_frames = m;
	return 0;
}

int segment_index_decode(const void *buf, size_t len, struct segment_index *ret)
{
	struct segment_index idx = { 0 };
	const uint8_t *p = buf, *q;
	size_t cpus_end;
	uint32_t n;
	int r;

	assert(buf || len == 0);
	assert(ret);

	if (!buf || len < INDEX_HDR_SIZE)
		return -EBADMSG;
	n = get_le32(p);
	idx.flags = get_le32(p + 4);
	/* The count is checked against the length before anything is allocated. */
	if (n > (len - INDEX_HDR_SIZE) / INDEX_CPU_SIZE)
		return -EBADMSG;
	cpus_end = INDEX_HDR_SIZE + (size_t)n * INDEX_CPU_SIZE;
	if (!(idx.flags & SEGMENT_INDEX_F_SEEK) && len != cpus_end)
		return -EBADMSG;
	if (n) {
		idx.cpus = calloc(n, sizeof(*idx.cpus));
		if (!idx.cpus)
			return -ENOMEM;
	}
	q = p + INDEX_HDR_SIZE;
	for (uint32_t i = 0; i < n; i++, q += INDEX_CPU_SIZE)
		idx.cpus[i] = (struct segment_cpu_index){
			.cpu = get_le32(q),
			.pages = get_le64(q + 8),
			.events = get_le64(q + 16),
			.first_ts = get_le64(q + 24),
			.last_ts = get_le64(q + 32),
			.lost_events = get_le64(q + 40),
			.bytes = get_le64(q + 48),
		};
	if (idx.flags & SEGMENT_INDEX_F_SEEK) {
		r = seek_decode(q, len - cpus_end, &idx);
		if (r < 0) {
			segment_index_done(&idx);
			return r;
		}
	}
	idx.unresolved = get_le64(p + 8);
	idx.nr_cpus = n;
	*ret = idx;
	return 0;
}

void segment_index_done(struct segment_index *idx)
{
	free(idx->cpus);
	free(idx->frames);
	idx->cpus = NULL;
	idx->frames = NULL;
	idx->nr_cpus = idx->nr_frames = 0;
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

	assert(ret_seq);

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

int segment_file_split(const struct segment_record *rec, const char **ret_name,
		       const uint8_t **ret_content, size_t *ret_len)
{
	const uint8_t *nul;

	assert(rec);
	nul = memchr(rec->data, 0, MIN(rec->len, (size_t)256));
	if (!nul)
		return -EBADMSG;
	*ret_name = (const char *)rec->data;
	*ret_content = nul + 1;
	*ret_len = rec->len - (size_t)(nul + 1 - rec->data);
	return 0;
}
