/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Segment format: round trips, the trailer and index, cuts at every byte,
 * flipped bytes, hand-made bad records, garbage, recovery, names.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include <zstd.h>

#include "buf.h"
#include "crc32c.h"
#include "helpers.h"
#include "segment-meta.h"
#include "segment.h"
#include "util.h"

#define NOCPU SEGMENT_NO_CPU

static char *tmpdir;

struct exp_rec {
	unsigned int type;
	uint32_t cpu;
	uint16_t flags;
	uint8_t *data;
	size_t len;
	uint64_t offset;
	uint64_t end;		/* offset just past the record */
};

struct expect {
	struct exp_rec recs[64];
	size_t n;
	uint8_t *file;		/* whole file as written */
	size_t size;
};

static void expect_done(struct expect *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->recs[i].data);
	free(e->file);
	memset(e, 0, sizeof(*e));
}

static char *path_in(const char *name)
{
	char *p = NULL;

	if (strprintf(&p, "%s/%s", tmpdir, name) < 0)
		exit(99);
	return p;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);

	if (fd < 0 || write_all(fd, data, len) < 0) {
		perror(path);
		exit(99);
	}
}

static uint8_t *slurp(const char *path, size_t *len)
{
	char *s = NULL;

	if (read_file(path, &s, len) < 0) {
		perror(path);
		exit(99);
	}
	return (uint8_t *)s;
}

static void fill(uint8_t *p, size_t len, bool compressible)
{
	for (size_t i = 0; i < len; i++)
		p[i] = compressible ? (uint8_t)("stack frame "[i % 12] + (i / 4096)) : (uint8_t)test_random();
}

static const char meta[] = "format_version=1\nproducer=stackmapd test\nhostname=h\n"
			   "page_size=4096\nnr_cpus=2\nlong_size=8\nbyte_order=little\n";

/*
 * Read path to its end, comparing records with e. Returns the number of
 * records that matched before the first difference or end; *ret gets the
 * last return of segment_reader_next(), *ret_err_off the error offset.
 */
static size_t read_compare(const char *path, const struct expect *e, int *ret, uint64_t *ret_err_off,
			   bool *ret_complete)
{
	struct segment_reader *r = NULL;
	struct segment_record rec;
	size_t n = 0;
	int k;

	k = segment_reader_open(path, &r);
	if (k < 0) {
		*ret = k;
		*ret_err_off = 0;
		*ret_complete = false;
		return 0;
	}
	*ret_complete = segment_reader_complete(r);
	while ((k = segment_reader_next(r, &rec)) > 0) {
		const struct exp_rec *x = n < e->n ? &e->recs[n] : NULL;

		if (!x || rec.type != x->type || rec.cpu != x->cpu || rec.flags != x->flags ||
		    rec.len != x->len || rec.offset != x->offset || rec.seq != n ||
		    memcmp(rec.data, x->data, x->len) != 0) {
			CHECK_MSG(false, "%s: record %zu differs from what was written", path, n);
			k = -EUCLEAN;
			break;
		}
		n++;
	}
	*ret = k;
	*ret_err_off = segment_reader_error_offset(r);
	/* The end is sticky. */
	if (k == 0 || k == -EBADMSG)
		CHECK(segment_reader_next(r, &rec) == k);
	segment_reader_free(r);
	return n;
}

/* Read a finished file back once and record what it holds. */
static void expect_load(struct expect *e, const char *path)
{
	struct segment_reader *r = NULL;
	struct segment_record rec;
	int k;

	CHECK(segment_reader_open(path, &r) == 0);
	if (!r)
		exit(1);
	while ((k = segment_reader_next(r, &rec)) > 0) {
		struct exp_rec *x = &e->recs[e->n++];

		assert(e->n <= ARRAY_SIZE(e->recs));
		*x = (struct exp_rec){ .type = rec.type, .cpu = rec.cpu, .flags = rec.flags,
				       .len = rec.len, .offset = rec.offset,
				       .end = rec.offset + SEGMENT_REC_HDR_SIZE + rec.stored_len };
		x->data = malloc(rec.len + 1);
		memcpy(x->data, rec.data, rec.len);
	}
	CHECK(k == 0);
	segment_reader_free(r);
	e->file = slurp(path, &e->size);
}

/* A small multi-record segment: META, FILE, PAGES of 2 CPUs, STACKS, NOTE. */
static char *write_small(const char *name, bool finish)
{
	struct segment_cpu_index cpus[2] = {
		{ .cpu = 0, .pages = 1, .events = 3, .first_ts = 10, .last_ts = 20, .bytes = 40 },
		{ .cpu = 1, .pages = 1, .events = 1, .first_ts = 15, .last_ts = 15, .bytes = 300 },
	};
	struct segment_index idx = { .nr_cpus = 2, .cpus = cpus };
	struct segment_writer *w = NULL;
	uint8_t pages[300];
	char *path = NULL;

	fill(pages, sizeof(pages), true);
	CHECK(segment_writer_open(tmpdir, name, &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, NOCPU, meta, strlen(meta), 0,
				    NULL) == 0);
	CHECK(segment_writer_append_file(w, "header_page", "field: u64 timestamp;", 21, 0) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, pages, 40, 0, NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 1, pages, sizeof(pages), 1, NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, NOCPU, "", 0, 0, NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_NOTE, NOCPU, "hello", 5, 0, NULL) == 0);
	if (finish) {
		CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	} else {
		path = strdup(segment_writer_path(w));
		segment_writer_free(w);
	}
	return path;
}

static void test_round_trip(void)
{
	struct segment_cpu_index cpus[3] = {
		{ .cpu = 0, .pages = 2, .events = 100, .first_ts = 1000, .last_ts = 2000,
		  .lost_events = 3, .bytes = 8192 },
		{ .cpu = 1, .pages = 7, .events = 1, .first_ts = UINT64_MAX - 1,
		  .last_ts = UINT64_MAX, .bytes = 1 },
		{ .cpu = 7 },
	};
	struct segment_index idx = { .flags = SEGMENT_INDEX_F_FINAL, .unresolved = 42,
				     .nr_cpus = 3, .cpus = cpus };
	const enum segment_rec_type pages = SEGMENT_REC_PAGES;
	struct segment_generation g = { .generation = 2, .prev_generation = 1,
					.kind = SEGMENT_GEN_RESET_LOSSLESS,
					.window_begin = 5, .window_end = 9 };
	const struct segment_index *ri;
	struct segment_writer *w = NULL;
	struct segment_reader *r = NULL;
	struct segment_record rec;
	_cleanup_free_ char *path = NULL, *part = NULL;
	_cleanup_free_ uint8_t *big = NULL, *frame = NULL;
	uint8_t gen[SEGMENT_GENERATION_SIZE];
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	struct {
		unsigned int type;
		uint32_t cpu;
		const void *data;
		size_t len;
		bool compressed;
	} want[32];
	size_t nwant = 0, frame_len, big_len = 1 << 20, n;
	struct stat st;
	int k;

	big = malloc(big_len);
	fill(big, big_len, true);
	segment_generation_encode(&g, gen);

	CHECK(segment_writer_open(tmpdir, "00000001-20261129T100000", &w) == 0);
	if (!w)
		return;
	CHECK(segment_writer_open(tmpdir, "00000001-20261129T100000",
				  &(struct segment_writer *){ NULL }) == -EEXIST);
	CHECK(segment_writer_size(w) == SEGMENT_PROLOGUE_SIZE);
	CHECK(segment_writer_records(w) == 0);
	part = path_in("00000001-20261129T100000.smseg.part");
	CHECK(streq(segment_writer_path(w), part));
	CHECK(stat(part, &st) == 0 && (st.st_mode & 0777) == 0640);

	/* META must come first; INDEX only from finish. */
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, big, 10, 0, NULL) == -EINVAL);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, NOCPU, meta, strlen(meta), 3, NULL) == 0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_META, NOCPU, meta, strlen(meta), true };
	/* META only first. */
	CHECK(segment_writer_append(w, SEGMENT_REC_META, NOCPU, meta, 5, 0, NULL) == -EINVAL);
	CHECK(segment_writer_append(w, SEGMENT_REC_INDEX, NOCPU, big, 16, 0, NULL) == -EINVAL);
	CHECK(segment_writer_append(w, 0, NOCPU, big, 16, 0, NULL) == -EINVAL);
	CHECK(segment_writer_append(w, SEGMENT_REC_MAX, NOCPU, big, 16, 0, NULL) == -EINVAL);
	/* our own bugs: a negative level (the config checks it), data without a pointer */
	CHECK_ABORTS(segment_writer_append(w, SEGMENT_REC_NOTE, NOCPU, big, 16, -1, NULL));
	CHECK_ABORTS(segment_writer_append(w, SEGMENT_REC_NOTE, NOCPU, NULL, 16, 0, NULL));
	CHECK_ABORTS(segment_writer_append(NULL, SEGMENT_REC_NOTE, NOCPU, big, 16, 0, NULL));
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, big, SEGMENT_MAX_RAW + 1ul, 0, NULL) ==
	      -EFBIG);

	/* Every other type, stored and compressed (own context and the caller's). */
	for (unsigned int t = SEGMENT_REC_FILE; t < SEGMENT_REC_INDEX; t++) {
		const void *d = t == SEGMENT_REC_GENERATION ? (const void *)gen : big + t;
		size_t len = t == SEGMENT_REC_GENERATION ? sizeof(gen) : 1000 + t;
		uint32_t cpu = t == SEGMENT_REC_PAGES ? t : NOCPU;

		CHECK(segment_writer_append(w, t, cpu, d, len, 0, NULL) == 0);
		want[nwant++] = (typeof(want[0])){ t, cpu, d, len, false };
		CHECK(segment_writer_append(w, t, cpu, d, len, 3, t & 1 ? cctx : NULL) == 0);
		want[nwant++] = (typeof(want[0])){ t, cpu, d, len, true };
	}
	/* Empty payloads. */
	CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, NOCPU, NULL, 0, 0, NULL) == 0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_STACKS, NOCPU, "", 0, false };
	CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, NOCPU, NULL, 0, 1, NULL) == 0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_STACKS, NOCPU, "", 0, true };
	/* A large frame, compressed by the caller (the daemon's reader threads). */
	frame = malloc(ZSTD_compressBound(big_len));
	frame_len = ZSTD_compressCCtx(cctx, frame, ZSTD_compressBound(big_len), big, big_len, 1);
	CHECK(!ZSTD_isError(frame_len));
	CHECK(segment_writer_append_compressed(w, pages, 1, frame, frame_len, big_len, 0) == 0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_PAGES, 1, big, big_len, true };
	CHECK(segment_writer_append_compressed(w, pages, 1, frame, frame_len, big_len - 1, 0) == -EINVAL);
	CHECK(segment_writer_append_compressed(w, pages, 1, frame, frame_len - 1, big_len, 0) == -EINVAL);
	CHECK(segment_writer_append_compressed(w, pages, 1, big, 100, 100, 0) == -EINVAL);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, big, big_len, 1, cctx) == 0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_PAGES, 0, big, big_len, true };
	/* FILE records, stored and compressed. */
	CHECK(segment_writer_append_file(w, "events/sched/sched_switch/format", "name: x\n", 8, 0) ==
	      0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_FILE, NOCPU,
					   "events/sched/sched_switch/format\0name: x\n", 41, false };
	CHECK(segment_writer_append_file(w, "kallsyms", big, 5000, 1) == 0);
	want[nwant++] = (typeof(want[0])){ SEGMENT_REC_FILE, NOCPU, NULL, 9 + 5000, true };
	CHECK(segment_writer_append_file(w, "", big, 5, 1) == -EINVAL);

	CHECK(segment_writer_records(w) == nwant);
	{
		uint64_t size = segment_writer_size(w);

		CHECK(stat(part, &st) == 0 && (uint64_t)st.st_size == size);
	}
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	CHECK(path && segment_name_is_finished(path));
	CHECK(access(part, F_OK) < 0 && errno == ENOENT);
	if (!path)
		return;

	CHECK(segment_reader_open(path, &r) == 0);
	if (!r)
		return;
	CHECK(segment_reader_complete(r));
	CHECK(stat(path, &st) == 0 && segment_reader_file_size(r) == (uint64_t)st.st_size);
	ri = segment_reader_index(r);
	CHECK(ri && ri->flags == idx.flags && ri->unresolved == 42 && ri->nr_cpus == 3);
	if (ri && ri->nr_cpus == 3)
		CHECK(memcmp(ri->cpus, cpus, sizeof(cpus)) == 0);
	n = 0;
	while ((k = segment_reader_next(r, &rec)) > 0) {
		if (rec.type == SEGMENT_REC_INDEX) {
			struct segment_index d;

			CHECK(n == nwant);
			CHECK(segment_index_decode(rec.data, rec.len, &d) == 0);
			CHECK(d.nr_cpus == 3 && d.unresolved == 42);
			free(d.cpus);
			n++;
			continue;
		}
		CHECK_MSG(n < nwant, "extra record %zu", n);
		if (n >= nwant)
			break;
		CHECK_MSG(rec.type == want[n].type && rec.cpu == want[n].cpu && rec.seq == n &&
			  rec.len == want[n].len &&
			  !!(rec.flags & SEGMENT_REC_F_COMPRESSED) == want[n].compressed,
			  "record %zu: type %d cpu %u len %zu", n, rec.type, rec.cpu, rec.len);
		if (want[n].data)
			CHECK_MSG(rec.len == want[n].len &&
				  memcmp(rec.data, want[n].data, rec.len) == 0,
				  "record %zu payload", n);
		else
			CHECK(rec.len == 9 + 5000 && memcmp(rec.data, "kallsyms", 9) == 0 &&
			      memcmp(rec.data + 9, big, 5000) == 0);
		if (rec.type == SEGMENT_REC_GENERATION) {
			struct segment_generation d;

			CHECK(segment_generation_decode(rec.data, rec.len, &d) == 0);
			CHECK(memcmp(&d, &g, sizeof(d)) == 0);
		}
		n++;
	}
	CHECK(k == 0);
	CHECK(n == nwant + 1);
	CHECK(segment_reader_next(r, &rec) == 0);
	CHECK(segment_reader_good_offset(r) == segment_reader_file_size(r) - SEGMENT_FOOTER_SIZE);
	segment_reader_free(r);

	/* Finishing without META is refused (and frees the writer). */
	CHECK(segment_writer_open(tmpdir, "00000002-20261129T100000", &w) == 0);
	CHECK(segment_writer_finish(w, NULL, false, NULL) == -EINVAL);
	CHECK_ABORTS(segment_writer_finish(NULL, NULL, false, NULL));
	ZSTD_freeCCtx(cctx);
}

static void test_part(void)
{
	_cleanup_free_ char *path = write_small("00000003-20261129T100000", false);
	struct segment_reader *r = NULL;
	struct segment_record rec;
	unsigned int n = 0;
	int k;

	CHECK(segment_name_is_part(path));
	CHECK(segment_reader_open(path, &r) == 0);
	if (!r)
		return;
	CHECK(!segment_reader_complete(r));
	CHECK(segment_reader_index(r) == NULL);
	while ((k = segment_reader_next(r, &rec)) > 0)
		n++;
	CHECK(k == 0 && n == 6);
	CHECK(segment_reader_good_offset(r) == segment_reader_file_size(r));
	segment_reader_free(r);
}

/* Records that end at or before cut. */
static size_t records_before(const struct expect *e, uint64_t cut)
{
	size_t n = 0;

	while (n < e->n && e->recs[n].end <= cut)
		n++;
	return n;
}

/* The reader of path opens and says it is cut short before its first record. */
static bool prologue_cut_short(const char *path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	struct segment_record rec;

	return segment_reader_open(path, &r) == 0 && segment_reader_next(r, &rec) == -EBADMSG &&
	       segment_reader_cut_short(r) && segment_reader_good_offset(r) == 0;
}

static void test_truncation(void)
{
	_cleanup_free_ char *path = write_small("00000004-20261129T100000", true);
	_cleanup_free_ char *cut_path = path_in("cut.smseg");
	struct expect e = { 0 };

	expect_load(&e, path);
	CHECK(e.n == 7);
	for (size_t cut = 0; cut <= e.size; cut++) {
		uint64_t err_off;
		bool complete, boundary = false;
		size_t n;
		int k;

		write_bytes(cut_path, e.file, cut);
		n = read_compare(cut_path, &e, &k, &err_off, &complete);
		if (cut < SEGMENT_PROLOGUE_SIZE) {
			/* a writer stopped inside its prologue: cut short at 0, not foreign */
			CHECK_MSG(k == -EBADMSG && n == 0 && err_off == 0, "cut %zu: end %d at %" PRIu64,
				  cut, k, err_off);
			CHECK_MSG(prologue_cut_short(cut_path), "cut %zu: not cut short", cut);
			continue;
		}
		for (size_t i = 0; i < e.n; i++)
			boundary |= e.recs[i].end == cut;
		boundary |= cut == SEGMENT_PROLOGUE_SIZE;
		CHECK_MSG(n == records_before(&e, cut), "cut %zu: %zu records, expected %zu", cut, n,
			  records_before(&e, cut));
		CHECK_MSG(complete == (cut == e.size), "cut %zu: complete %d", cut, complete);
		if (cut == e.size || boundary)
			CHECK_MSG(k == 0, "cut %zu: end %d", cut, k);
		else
			CHECK_MSG(k == -EBADMSG && err_off <= cut, "cut %zu: end %d at %" PRIu64, cut,
				  k, err_off);
	}
	unlink(cut_path);
	expect_done(&e);
}

static void test_flips(void)
{
	_cleanup_free_ char *path = write_small("00000005-20261129T100000", true);
	_cleanup_free_ char *flip_path = path_in("flip.smseg");
	struct expect e = { 0 };

	expect_load(&e, path);
	for (size_t i = 0; i < e.size; i++) {
		uint64_t err_off, at = e.size - SEGMENT_FOOTER_SIZE;
		size_t n, before = e.n;
		bool complete;
		int k;

		for (size_t j = 0; j < e.n; j++)
			if (e.recs[j].offset <= i && i < e.recs[j].end) {
				at = e.recs[j].offset;
				before = j;
			}
		e.file[i] ^= (uint8_t)(1u << (i % 8));
		write_bytes(flip_path, e.file, e.size);
		e.file[i] ^= (uint8_t)(1u << (i % 8));
		n = read_compare(flip_path, &e, &k, &err_off, &complete);
		if (i < SEGMENT_PROLOGUE_SIZE) {
			CHECK_MSG(k == -EBADMSG, "flip %zu: open %d", i, k);
			continue;
		}
		/* Same data or an error at the damaged record; here every byte is checked. */
		CHECK_MSG(k == -EBADMSG && err_off == at && n == before,
			  "flip %zu: end %d at %" PRIu64 " after %zu records (expected %" PRIu64
			  ", %zu)", i, k, err_off, n, at, before);
		if (i >= e.recs[e.n - 1].offset)
			CHECK_MSG(!complete, "flip %zu: still complete", i);
	}
	unlink(flip_path);
	expect_done(&e);
}

/* ---- hand-made records ---- */

struct craft {
	struct buf b;
	uint32_t seq;
};

static void craft_start(struct craft *c)
{
	uint8_t p[SEGMENT_PROLOGUE_SIZE];

	memcpy(p, SEGMENT_MAGIC, 8);
	put_le32(p + 8, SEGMENT_VERSION);
	put_le32(p + 12, crc32c(0, p, 12));
	buf_reset(&c->b);
	c->seq = 0;
	buf_append(&c->b, p, sizeof(p));
}

/* Append a record with valid CRCs; stored_len/raw_len as given. */
static void craft_rec(struct craft *c, uint16_t type, uint16_t flags, uint32_t seq, const void *payload,
		      size_t len, uint32_t stored_len, uint32_t raw_len)
{
	uint8_t h[SEGMENT_REC_HDR_SIZE];

	put_le32(h, SEGMENT_REC_MAGIC);
	h[4] = (uint8_t)type;
	h[5] = (uint8_t)(type >> 8);
	h[6] = (uint8_t)flags;
	h[7] = (uint8_t)(flags >> 8);
	put_le32(h + 8, NOCPU);
	put_le32(h + 12, stored_len);
	put_le32(h + 16, raw_len);
	put_le32(h + 20, seq);
	put_le32(h + 24, crc32c(0, payload, len));
	put_le32(h + 28, crc32c(0, h, 28));
	buf_append(&c->b, h, sizeof(h));
	buf_append(&c->b, payload, len);
}

static void craft_plain(struct craft *c, uint16_t type, const void *payload, size_t len)
{
	craft_rec(c, type, 0, c->seq++, payload, len, (uint32_t)len, (uint32_t)len);
}

/* Read a crafted file: expect n good records, then -EBADMSG at off with msg in the text. */
static void check_crafted(const char *what, struct craft *c, size_t nrecs, int end, uint64_t off,
			  const char *msg)
{
	_cleanup_free_ char *path = path_in("crafted.smseg");
	struct segment_reader *r = NULL;
	struct segment_record rec;
	size_t n = 0;
	int k;

	write_bytes(path, c->b.data, c->b.len);
	CHECK_MSG(segment_reader_open(path, &r) == 0, "%s: open", what);
	if (!r)
		return;
	while ((k = segment_reader_next(r, &rec)) > 0)
		n++;
	CHECK_MSG(n == nrecs && k == end, "%s: %zu records, end %d", what, n, k);
	if (end == -EBADMSG) {
		CHECK_MSG(segment_reader_error_offset(r) == off, "%s: offset %" PRIu64, what,
			  segment_reader_error_offset(r));
		CHECK_MSG(strstr(segment_reader_error(r), msg), "%s: message '%s'", what,
			  segment_reader_error(r));
		CHECK(segment_reader_good_offset(r) == off);
	}
	segment_reader_free(r);
	unlink(path);
}

static void test_crafted(void)
{
	struct craft c = { 0 };
	uint8_t raw[200], frame[512];
	size_t flen, at;

	fill(raw, sizeof(raw), true);
	flen = ZSTD_compress(frame, sizeof(frame), raw, sizeof(raw), 1);
	CHECK(!ZSTD_isError(flen));

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "a=b\n", 4);
	craft_plain(&c, 99, "future", 6);
	craft_rec(&c, SEGMENT_REC_PAGES, SEGMENT_REC_F_COMPRESSED, c.seq++, frame, flen,
		  (uint32_t)flen, sizeof(raw));
	check_crafted("unknown type is returned", &c, 3, 0, 0, NULL);

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_PAGES, "x", 1);
	check_crafted("first not META", &c, 0, -EBADMSG, 16, "not META");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_NOTE, 0, 5, "x", 1, 1, 1);
	check_crafted("sequence", &c, 1, -EBADMSG, at, "sequence number 5, expected 1");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_NOTE, 0x8, 1, "x", 1, 1, 1);
	check_crafted("unknown flag", &c, 1, -EBADMSG, at, "unknown record flags");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_NOTE, 0, 1, "x", 1, SEGMENT_MAX_STORED + 1, 1);
	check_crafted("stored limit", &c, 1, -EBADMSG, at, "exceeds the limit");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_NOTE, SEGMENT_REC_F_COMPRESSED, 1, frame, flen, (uint32_t)flen,
		  SEGMENT_MAX_RAW + 1);
	check_crafted("raw limit", &c, 1, -EBADMSG, at, "exceeds the limit");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_NOTE, 0, 1, "xy", 2, 2, 3);
	check_crafted("raw != stored", &c, 1, -EBADMSG, at, "uncompressed record");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_NOTE, 0, 1, "xyz", 3, 1000, 1000);
	check_crafted("short payload", &c, 1, -EBADMSG, at,
		      "truncated record payload: 3 of 1000 bytes");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_PAGES, SEGMENT_REC_F_COMPRESSED, 1, raw, 50, 50, 50);
	check_crafted("not zstd", &c, 1, -EBADMSG, at, "zstd frame header is invalid");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_PAGES, SEGMENT_REC_F_COMPRESSED, 1, frame, flen, (uint32_t)flen,
		  sizeof(raw) - 1);
	check_crafted("content size", &c, 1, -EBADMSG, at, "content size 200, expected 199");

	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	at = c.b.len;
	craft_rec(&c, SEGMENT_REC_PAGES, SEGMENT_REC_F_COMPRESSED, 1, frame, flen - 2,
		  (uint32_t)flen - 2, sizeof(raw));
	check_crafted("cut frame", &c, 1, -EBADMSG, at, "zstd frame does not decompress");

	{
		uint8_t two[1024];

		memcpy(two, frame, flen);
		memcpy(two + flen, frame, flen);
		craft_start(&c);
		craft_plain(&c, SEGMENT_REC_META, "", 0);
		at = c.b.len;
		craft_rec(&c, SEGMENT_REC_PAGES, SEGMENT_REC_F_COMPRESSED, 1, two, 2 * flen,
			  2 * (uint32_t)flen, sizeof(raw));
		check_crafted("two frames", &c, 1, -EBADMSG, at, "one frame expected");
	}
	{
		/* A frame without its content size. */
		ZSTD_CCtx *cc = ZSTD_createCCtx();
		uint8_t out[512];
		size_t olen;

		ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
		olen = ZSTD_compress2(cc, out, sizeof(out), raw, sizeof(raw));
		CHECK(!ZSTD_isError(olen));
		ZSTD_freeCCtx(cc);
		craft_start(&c);
		craft_plain(&c, SEGMENT_REC_META, "", 0);
		at = c.b.len;
		craft_rec(&c, SEGMENT_REC_PAGES, SEGMENT_REC_F_COMPRESSED, 1, out, olen,
			  (uint32_t)olen, sizeof(raw));
		check_crafted("no content size", &c, 1, -EBADMSG, at,
			      "does not record its content size");
	}

	/* An INDEX followed by something that is not its footer. */
	craft_start(&c);
	craft_plain(&c, SEGMENT_REC_META, "", 0);
	{
		uint8_t idx[16] = { 0 };

		at = c.b.len;
		craft_plain(&c, SEGMENT_REC_INDEX, idx, sizeof(idx));
		craft_plain(&c, SEGMENT_REC_NOTE, "x", 1);
		check_crafted("record after INDEX", &c, 2, -EBADMSG, at + 48, "footer");
	}
	buf_done(&c.b);
}

/* Random garbage after a prologue, and random headers with valid CRCs: no crash, an end. */
static void test_garbage(void)
{
	_cleanup_free_ char *path = path_in("garbage.smseg");
	struct craft c = { 0 };

	for (int round = 0; round < 300; round++) {
		struct segment_reader *r = NULL;
		struct segment_record rec;
		size_t len = test_random() % 4096;
		uint8_t junk[4096];
		int k, n = 0;

		fill(junk, len, false);
		craft_start(&c);
		if (round % 3 == 0)
			craft_plain(&c, SEGMENT_REC_META, "", 0);
		if (round % 3 == 1) {
			/* Headers with random fields but valid CRCs. */
			for (int i = 0; i < 4; i++) {
				uint8_t h[SEGMENT_REC_HDR_SIZE];

				fill(h, sizeof(h), false);
				put_le32(h, SEGMENT_REC_MAGIC);
				if (i == 0) {
					h[4] = SEGMENT_REC_META;
					h[5] = 0;
					put_le32(h + 20, 0);
				}
				put_le32(h + 28, crc32c(0, h, 28));
				buf_append(&c.b, h, sizeof(h));
			}
		}
		buf_append(&c.b, junk, len);
		if (round % 5 == 0) {
			/* A footer pointing somewhere. */
			uint8_t f[SEGMENT_FOOTER_SIZE] = { 0 };

			put_le64(f, test_random() % (c.b.len + 64));
			put_le32(f + 8, crc32c(0, f, 8));
			memcpy(f + 16, SEGMENT_END_MAGIC, 8);
			buf_append(&c.b, f, sizeof(f));
		}
		write_bytes(path, c.b.data, c.b.len);
		CHECK(segment_reader_open(path, &r) == 0);
		if (!r)
			continue;
		while ((k = segment_reader_next(r, &rec)) > 0 && n < 1000)
			n++;
		CHECK(k == 0 || k == -EBADMSG);
		segment_reader_free(r);
	}
	unlink(path);
	buf_done(&c.b);
}

/* ---- recovery ---- */

static void test_recover(void)
{
	struct segment_cpu_index cpu = { .cpu = 3, .pages = 9 };
	struct segment_index idx = { .unresolved = 4, .nr_cpus = 1, .cpus = &cpu };
	struct expect e = { 0 };
	_cleanup_free_ char *full = write_small("00000006-20261129T100000", true);
	_cleanup_free_ char *part = path_in("00000007-20261129T100000.smseg.part");
	const struct segment_index *ri;
	struct segment_reader *r = NULL;
	struct segment_record rec;
	char *out = NULL;
	bool note = false;
	size_t n = 0;
	int k;

	expect_load(&e, full);

	/* Cut in the middle of the 4th record (PAGES of CPU 1). */
	write_bytes(part, e.file, e.recs[3].offset + 40);
	CHECK(segment_recover(part, &idx, "stackmapd was killed", &out) == 0);
	CHECK(out && segment_name_is_finished(out) && access(part, F_OK) < 0);
	if (!out)
		goto done;
	CHECK(segment_reader_open(out, &r) == 0);
	if (!r)
		goto done;
	CHECK(segment_reader_complete(r));
	ri = segment_reader_index(r);
	CHECK(ri && ri->flags == SEGMENT_INDEX_F_TRUNCATED && ri->unresolved == 4 &&
	      ri->nr_cpus == 1 && ri->cpus[0].cpu == 3 && ri->cpus[0].pages == 9);
	while ((k = segment_reader_next(r, &rec)) > 0) {
		if (n < 3)
			CHECK(rec.type == e.recs[n].type && rec.len == e.recs[n].len &&
			      memcmp(rec.data, e.recs[n].data, rec.len) == 0);
		if (n == 3) {
			CHECK(rec.type == SEGMENT_REC_NOTE);
			note = rec.len > 20 && memmem(rec.data, rec.len, "stackmapd was killed", 20);
		}
		if (n == 4)
			CHECK(rec.type == SEGMENT_REC_INDEX);
		n++;
	}
	CHECK(k == 0 && n == 5 && note);
	r = segment_reader_free(r);
	unlink(out);
	free(out);
	out = NULL;

	/* INDEX written, footer cut: everything kept, the segment's own index used. */
	write_bytes(part, e.file, e.size - 10);
	CHECK(segment_recover(part, NULL, NULL, &out) == 0);
	CHECK(out != NULL);
	if (out && segment_reader_open(out, &r) == 0) {
		ri = segment_reader_index(r);
		CHECK(ri && ri->flags == SEGMENT_INDEX_F_TRUNCATED && ri->nr_cpus == 2 &&
		      ri->cpus[1].bytes == 300);
		n = 0;
		while ((k = segment_reader_next(r, &rec)) > 0)
			n++;
		CHECK(k == 0 && n == 8);	/* 6 records, NOTE, INDEX */
		r = segment_reader_free(r);
	}
	if (out)
		unlink(out);
	free(out);
	out = NULL;

	/* Finished but not renamed: renamed as it is. */
	write_bytes(part, e.file, e.size);
	CHECK(segment_recover(part, &idx, NULL, &out) == 0);
	if (out && segment_reader_open(out, &r) == 0) {
		ri = segment_reader_index(r);
		CHECK(ri && ri->flags == 0 && ri->nr_cpus == 2);
		CHECK(segment_reader_file_size(r) == e.size);
		r = segment_reader_free(r);
	}
	if (out)
		unlink(out);
	free(out);
	out = (char *)"unchanged";

	/* Only META, nothing, or garbage: deleted. */
	write_bytes(part, e.file, e.recs[1].offset + 3);
	CHECK(segment_recover(part, &idx, NULL, &out) == 0 && out == NULL);
	CHECK(access(part, F_OK) < 0);
	write_bytes(part, e.file, e.recs[1].offset);
	CHECK(segment_recover(part, &idx, NULL, NULL) == 0 && access(part, F_OK) < 0);
	write_bytes(part, "", 0);
	CHECK(segment_recover(part, &idx, NULL, NULL) == 0 && access(part, F_OK) < 0);
	write_bytes(part, "garbage garbage garbage", 23);
	CHECK(segment_recover(part, &idx, NULL, NULL) == 0 && access(part, F_OK) < 0);
	CHECK(segment_recover(full, &idx, NULL, NULL) == -EINVAL);
	CHECK(segment_recover(part, &idx, NULL, NULL) == -ENOENT);
done:
	expect_done(&e);
}

/* ---- small codecs and names ---- */

static void test_codecs(void)
{
	struct segment_index d = { 0 };
	struct segment_generation g;
	uint8_t buf[64] = { 0 }, *p = NULL;
	size_t len = 0;

	CHECK(segment_generation_decode(buf, SEGMENT_GENERATION_MIN_SIZE - 1, &g) == -EBADMSG);
	/* the marker CPUs and the guard round-trip; an older writer's payload has none */
	segment_generation_encode(&(struct segment_generation){ .generation = 3, .prev_generation = 2,
		.kind = SEGMENT_GEN_RESET_LOSSLESS, .window_begin = 100, .window_end = 200,
		.begin_cpu = 1, .end_cpu = 0, .guard = 7 }, buf);
	CHECK(segment_generation_decode(buf, SEGMENT_GENERATION_SIZE, &g) == 0 && g.generation == 3 &&
	      g.window_end == 200 && g.begin_cpu == 1 && g.end_cpu == 0 && g.guard == 7);
	CHECK(segment_generation_decode(buf, SEGMENT_GENERATION_MIN_SIZE, &g) == 0 &&
	      g.window_begin == 100 && g.begin_cpu == SEGMENT_NO_CPU && g.end_cpu == SEGMENT_NO_CPU &&
	      g.guard == 0);
	memset(buf, 0, sizeof(buf));
	CHECK(segment_index_encode(&(struct segment_index){ 0 }, &p, &len) == 0 && len == 16);
	CHECK(segment_index_decode(p, len, &d) == 0 && d.nr_cpus == 0 && d.cpus == NULL);
	free(p);
	CHECK(segment_index_decode(buf, 15, &d) == -EBADMSG);
	put_le32(buf, 1);
	CHECK(segment_index_decode(buf, 16, &d) == -EBADMSG);
	CHECK(segment_index_decode(buf, 16 + 56 + 1, &d) == -EBADMSG);
	put_le32(buf, UINT32_MAX);
	CHECK(segment_index_decode(buf, 64, &d) == -EBADMSG);

	CHECK(segment_rec_type_name(SEGMENT_REC_GENERATION) &&
	      streq(segment_rec_type_name(SEGMENT_REC_GENERATION), "GENERATION"));
	CHECK(segment_rec_type_name(0) == NULL && segment_rec_type_name(99) == NULL);
}

static void test_names(void)
{
	uint64_t seq = 0;

	CHECK(segment_name_is_finished("00000042-20261129T100000.smseg"));
	CHECK(!segment_name_is_finished("00000042-20261129T100000.smseg.part"));
	CHECK(!segment_name_is_finished(".smseg"));
	CHECK(segment_name_is_part("00000042-20261129T100000.smseg.part"));
	CHECK(!segment_name_is_part("00000042-20261129T100000.smseg"));
	CHECK(!segment_name_is_part("foo.part"));

	CHECK(segment_name_seq("00000042-20261129T100000.smseg", &seq) == 0 && seq == 42);
	CHECK(segment_name_seq("/var/lib/stackmapd/00000043-20261129T100000.smseg.part", &seq) == 0 &&
	      seq == 43);
	CHECK(segment_name_seq("123456789-20261129T100000.smseg", &seq) == 0 && seq == 123456789);
	seq = 7;
	CHECK(segment_name_seq("00000042-20261129T100000.smseg.tmp", &seq) == -EINVAL);
	CHECK(segment_name_seq("-20261129T100000.smseg", &seq) == -EINVAL);
	CHECK(segment_name_seq("00000042_20261129T100000.smseg", &seq) == -EINVAL);
	CHECK(segment_name_seq("00000042-20261129X100000.smseg", &seq) == -EINVAL);
	CHECK(segment_name_seq("00000042-2026112T100000.smseg", &seq) == -EINVAL);
	CHECK(segment_name_seq("99999999999999999999999-20261129T100000.smseg", &seq) == -EINVAL);
	CHECK(segment_name_seq("", &seq) == -EINVAL);
	CHECK(seq == 7);
}

static void test_meta(void)
{
	static const char text[] = "format_version=1\nnoequals\nlong_size=4\nbyte_order=big\n"
				   "page_size=8192\nhostname=a=b\nlong_size=8\nempty=\nbad=12x";
	struct segment_meta m = { 0 };
	struct page_format f;
	uint64_t v = 0;

	CHECK(segment_meta_parse(&m, text, strlen(text)) == 0);
	CHECK(m.n == 8);
	CHECK(streq(segment_meta_get(&m, "hostname"), "a=b"));
	CHECK(streq(segment_meta_get(&m, "long_size"), "4"));	/* the first one counts */
	CHECK(segment_meta_get(&m, "noequals") == NULL);
	CHECK(segment_meta_u64(&m, "page_size", &v) == 0 && v == 8192);
	CHECK(segment_meta_u64(&m, "empty", &v) == -ENOENT);
	CHECK(segment_meta_u64(&m, "missing", &v) == -ENOENT);
	CHECK(segment_meta_u64(&m, "bad", &v) == -EINVAL);
	CHECK(segment_meta_page_format(&m, &f) == 0);
	CHECK(f.long_size == 4 && f.big_endian && f.page_size == 8192);

	/* A payload without a trailing newline, then a bad one: what a reader assumes. */
	CHECK(segment_meta_parse(&m, "long_size=3\nbyte_order=middle\npage_size=-1", 42) == 0);
	CHECK(m.n == 3 && streq(segment_meta_get(&m, "page_size"), "-1"));
	CHECK(segment_meta_page_format(&m, &f) == (SEGMENT_META_GUESSED_LONG_SIZE |
						   SEGMENT_META_GUESSED_BYTE_ORDER |
						   SEGMENT_META_GUESSED_PAGE_SIZE));
	CHECK(f.long_size == sizeof(long) && f.page_size == 0);
	segment_meta_done(&m);
	CHECK(m.n == 0 && m.kv == NULL && m.text == NULL);
	segment_meta_done(&m);
}

/* A writer cuts a NOTE at SEGMENT_MAX_NOTE: readers show no more of one. */
static void test_long_note(void)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	struct segment_writer *w = NULL;
	struct segment_record rec;
	size_t n = SEGMENT_MAX_NOTE + 1000, notes = 0;
	char *note = malloc(n), *path = NULL;
	int k;

	CHECK(note != NULL);
	memset(note, 'n', n);
	CHECK(segment_writer_open(tmpdir, "00000009-20260101T000000", &w) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_META, NOCPU, "version=1", 9, 0, NULL) == 0);
	CHECK(segment_writer_append(w, SEGMENT_REC_NOTE, NOCPU, note, n, 1, NULL) == 0);
	path = strdup(segment_writer_path(w));
	segment_writer_free(w);
	CHECK(path && segment_reader_open(path, &r) == 0);
	while ((k = segment_reader_next(r, &rec)) > 0)
		if (rec.type == SEGMENT_REC_NOTE) {
			notes++;
			CHECK_MSG(rec.len == SEGMENT_MAX_NOTE, "a note of %zu bytes", (size_t)rec.len);
		}
	CHECK(notes == 1);
	free(path);
	free(note);
}

int main(void)
{
	test_meta();
	tmpdir = test_tmpdir();
	test_names();
	test_codecs();
	test_round_trip();
	test_part();
	test_truncation();
	test_flips();
	test_crafted();
	test_garbage();
	test_recover();
	test_long_note();
	test_rmtree(tmpdir);
	free(tmpdir);
	return tests_done("test-segment");
}
