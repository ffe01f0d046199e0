/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench/frame-columns: what column-encoding frames (lib/segment/frame-columns.h)
 * saves on disk and costs in CPU, against compressing the pages as they
 * are. Reads the PAGES records of segments, cuts each CPU's pages into
 * frames as the daemon does (a frame is closed when one more page read
 * could take it past the frame size), and for each method compresses every
 * frame and decompresses it again, timing both (best of the repetitions),
 * and checks that every frame comes back bit for bit.
 *
 *   frame-columns [-f FRAME_KB] [-r REPS] [-l LEVEL] [-v VERSION] [-b] SEGMENT...
 *
 * Prints, per method, bytes per event (frames only; "other" is what the
 * segments' other records take per event, the same for every method) and
 * CPU seconds per million events to encode (and of that, zstd's part) and
 * to decode. Events are trace events, not counting stack entries
 * (stack_ref, kernel_stack) or time extends. With -b, also where the
 * bytes of the column encoding are: each stream compressed on its own,
 * summed over the frames per stream name or event field, in bytes per
 * event (the sum is what compressing the streams separately would store,
 * without the encoding's header). With -v, the column methods write that
 * version of the encoding (default: the newest).
 */
#include <getopt.h>
#include <time.h>

#include <zstd.h>

#include "buf.h"
#include "crc32c.h"
#include "frame-columns.h"
#include "page-walk.h"
#include "segment.h"
#include "util.h"

struct frames {
	struct buf data;	/* every frame, back to back */
	struct buf ends;	/* u64 end offset of each frame */
	uint64_t events, other_bytes, frames;
	unsigned int long_size, page_size;
	int stack_ids[2];
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *meta_value(const char *meta, size_t len, const char *key, char *out, size_t cap)
{
	size_t kl = strlen(key);

	for (const char *p = meta; p && p < meta + len; p = memchr(p, '\n', (size_t)(meta + len - p))) {
		if (*p == '\n')
			p++;
		if ((size_t)(meta + len - p) > kl && !memcmp(p, key, kl) && p[kl] == '=') {
			const char *e = memchr(p, '\n', (size_t)(meta + len - p));
			size_t n = e ? (size_t)(e - p - kl - 1) : (size_t)(meta + len - p - kl - 1);

			n = MIN(n, cap - 1);
			memcpy(out, p + kl + 1, n);
			out[n] = 0;
			return out;
		}
	}
	return NULL;
}

/* Events in a compacted page, not counting stack entries and time extends. */
static uint64_t count_events(const struct frames *f, const uint8_t *page, size_t len)
{
	size_t hdr = 8 + f->long_size, off = 0, commit;
	uint64_t cw = 0, n = 0;

	memcpy(&cw, page + 8, f->long_size);
	commit = MIN((size_t)(cw & 0xfffff), len - hdr);
	page += hdr;
	while (off + 4 <= commit) {
		uint32_t h, arr = 0;
		unsigned int tl;
		size_t total;
		uint16_t type;

		memcpy(&h, page + off, 4);
		tl = h & 31;
		if ((tl == 0 || tl >= 29) && off + 8 <= commit)
			memcpy(&arr, page + off + 4, 4);
		if (tl == 29 && !(h >> 5))
			break;
		total = tl == 0 ? 4 + (((size_t)arr + 3) & ~(size_t)3) : tl == 29 ? 4 + (size_t)arr :
			tl >= 30 ? 8 : 4 + 4 * (size_t)tl;
		if (total > commit - off)
			break;
		if (tl < 29 && total >= 10) {
			memcpy(&type, page + off + (tl ? 4 : 8), 2);
			if (type != f->stack_ids[0] && type != f->stack_ids[1])
				n++;
		}
		off += total;
	}
	return n;
}

/* Field names by (event id, offset), from the format files; and per-stream sizes. */
#define MAX_NAMES 512
struct name {
	uint16_t id, offset;
	char text[48];
	uint64_t raw, packed;
	uint8_t transform;
};
static struct name names[MAX_NAMES];
static size_t nr_names;

static struct name *name_of(uint16_t id, uint16_t offset, bool add)
{
	for (size_t i = 0; i < nr_names; i++)
		if (names[i].id == id && names[i].offset == offset)
			return &names[i];
	if (!add || nr_names == MAX_NAMES)
		return NULL;
	names[nr_names] = (struct name){ .id = id, .offset = offset };
	snprintf(names[nr_names].text, sizeof(names[0].text), "%u@%u", id, offset);
	return &names[nr_names++];
}

static void add_names(const char *text)
{
	const char *ev = strstr(text, "name: "), *p;
	char evname[32] = "";
	unsigned int id;

	if (!ev || sscanf(ev, "name: %31s", evname) != 1 || !(p = strstr(text, "ID: ")) ||
	    sscanf(p, "ID: %u", &id) != 1)
		return;
	for (p = strstr(text, "field:"); p; p = strstr(p + 6, "field:")) {
		const char *semi = strchr(p, ';'), *q = semi, *o = strstr(p, "offset:");
		unsigned int off;
		struct name *n;

		if (!semi || !o || sscanf(o, "offset:%u", &off) != 1)
			continue;
		while (q > p && q[-1] != ' ' && q[-1] != '*')
			q--;
		if ((n = name_of((uint16_t)id, (uint16_t)off, true)))
			snprintf(n->text, sizeof(n->text), "%.12s.%.*s", evname, (int)(semi - q), q);
	}
	if ((p = strstr(text, "print fmt")) && (ev = strstr(text, "field:"))) {
		/* the tail: after the last field */
		const char *last = NULL;
		unsigned int off = 0, size = 0;

		for (const char *f = ev; f && f < p; f = strstr(f + 6, "field:"))
			last = f;
		if (last && (last = strstr(last, "offset:")) &&
		    sscanf(last, "offset:%u;\tsize:%u;", &off, &size) == 2) {
			struct name *n = name_of((uint16_t)id, (uint16_t)(off + size), true);

			if (n && !strchr(n->text, '.'))
				snprintf(n->text, sizeof(n->text), "%.12s.(tail)", evname);
		}
	}
}

static void add_frame(struct frames *f, struct buf *cur)
{
	if (!cur->len)
		return;
	if (buf_append(&f->data, cur->data, cur->len) < 0 || buf_append_u64(&f->ends, f->data.len) < 0)
		exit(1);
	f->frames++;
	buf_reset(cur);
}

static int load_segment(const char *path, struct frames *f, struct frame_columns **fc,
			size_t frame_size, struct buf *cur, int ncpu_max)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	struct segment_record rec;
	char v[64];
	int k;

	if (segment_reader_open(path, &r) < 0)
		return -1;
	while ((k = segment_reader_next(r, &rec)) > 0) {
		if (rec.type == SEGMENT_REC_META) {
			const char *m = (const char *)rec.data;

			f->long_size = meta_value(m, rec.len, "long_size", v, sizeof(v)) ? (unsigned)atoi(v) : 8;
			f->page_size = meta_value(m, rec.len, "page_size", v, sizeof(v)) ? (unsigned)atoi(v) : 4096;
			f->stack_ids[0] = meta_value(m, rec.len, "stack_ref_event_id", v, sizeof(v)) ? atoi(v) : -1;
			f->stack_ids[1] = meta_value(m, rec.len, "kernel_stack_event_id", v, sizeof(v)) ? atoi(v) : -1;
			if (!*fc && !(*fc = frame_columns_new(f->long_size)))
				return -1;
		}
		if (rec.type == SEGMENT_REC_FILE && *fc && !strncmp((const char *)rec.data, "events/", 7)) {
			size_t nl = strnlen((const char *)rec.data, rec.len);
			_cleanup_free_ char *text = strndup((const char *)rec.data + nl + 1, rec.len - nl - 1);

			if (text && nl < rec.len) {
				(void)frame_columns_add_format(*fc, text);
				add_names(text);
			}
		}
		if (rec.type != SEGMENT_REC_PAGES) {
			f->other_bytes += SEGMENT_REC_HDR_SIZE + rec.stored_len;
			continue;
		}
		f->other_bytes += SEGMENT_REC_HDR_SIZE;	/* the header stays */
		if ((int)rec.cpu >= ncpu_max)
			continue;
		for (size_t off = 0; off < rec.len;) {
			struct page_format pf = { .long_size = f->long_size, .page_size = f->page_size };
			int n = page_walk_stored_len(&pf, rec.data + off, rec.len - off);

			if (n <= 0)
				break;
			if (cur[rec.cpu].len && cur[rec.cpu].len + f->page_size > frame_size)
				add_frame(f, &cur[rec.cpu]);
			if (buf_append(&cur[rec.cpu], rec.data + off, (size_t)n) < 0)
				return -1;
			f->events += count_events(f, rec.data + off, (size_t)n);
			off += (size_t)n;
		}
	}
	return k < 0 ? -1 : 0;
}

/* Add each stream of the frame just encoded (enc) to its name's totals. */
static void breakdown(const struct frame_columns *fc, const struct buf *enc, ZSTD_CCtx *cc)
{
	static const char *const fixed[] = { "page", "code", "delta", "len", "raw", "tval", "(header)" };
	_cleanup_(buf_done) struct buf z = { 0 };
	struct frame_columns_stream st;
	size_t head = SIZE_MAX;

	for (size_t i = 0; frame_columns_get_stream(fc, i, &st) == 0; i++) {
		struct name *n;
		size_t zl;

		head = MIN(head, st.start);
		if (st.name) {
			n = NULL;
			for (size_t j = 0; j < ARRAY_SIZE(fixed); j++)
				if (!strcmp(st.name, fixed[j]))
					n = name_of(0xffff, (uint16_t)j, true);
			if (n)
				snprintf(n->text, sizeof(n->text), "(%s)", st.name);
		} else if (st.size == 0 && st.column > 0 && st.offset == 0) {
			n = name_of(st.id, (uint16_t)(0xfff0 + st.column), true);
			if (n && strchr(n->text, '@')) {
				struct name *ev = NULL;

				for (size_t j = 0; j < nr_names && !ev; j++)
					if (names[j].id == st.id && strchr(names[j].text, '.'))
						ev = &names[j];
				snprintf(n->text, sizeof(n->text), "%.*s.time[%d]",
					 ev ? (int)(strchr(ev->text, '.') - ev->text) : 0, ev ? ev->text : "",
					 st.column);
			}
		} else {
			n = name_of(st.id, st.offset, true);
		}
		if (!n || !st.len)
			continue;
		if (buf_reserve(&z, ZSTD_compressBound(st.len)) < 0)
			exit(1);
		zl = ZSTD_compress2(cc, z.data, z.cap, enc->data + st.start, st.len);
		if (ZSTD_isError(zl))
			exit(1);
		n->raw += st.len;
		n->packed += zl;
		n->transform = st.column > 0 && !st.size && !st.offset ? (uint8_t)(16 + st.transform) : st.transform;
	}
	if (head != SIZE_MAX) {
		struct name *n = name_of(0xffff, 6, true);

		if (n) {
			snprintf(n->text, sizeof(n->text), "(header)");
			n->raw += head;
			n->packed += head;
		}
	}
}

static void print_breakdown(uint64_t events)
{
	static const char *const tn[] = { "raw", "varint", "delta", "dict", "tdelta", "template", "?", "?",
					  "?", "?", "?", "?", "?", "?", "?", "?", "time", "time-tdelta",
					  "time-pair" };
	uint64_t total = 0;

	printf("\n%-34s %9s %9s  %s\n", "stream (compressed alone)", "raw B/ev", "zst B/ev", "transform");
	for (size_t i = 0; i < nr_names; i++) {
		const struct name *n = &names[i];

		if (!n->raw)
			continue;
		total += n->packed;
		printf("%-34s %9.3f %9.3f  %s\n", n->text, (double)n->raw / (double)events,
		       (double)n->packed / (double)events,
		       n->id == 0xffff ? "" : n->transform < ARRAY_SIZE(tn) ? tn[n->transform] : "?");
	}
	printf("%-34s %9s %9.3f\n", "total, streams compressed alone", "", (double)total / (double)events);
}

/*
 * One zstd frame for the encoding, ending a block at each stream boundary
 * so that every stream gets entropy tables of its own. Returns the length.
 */
static size_t compress_blocks(ZSTD_CCtx *cc, const struct frame_columns *fc, const struct buf *enc,
			      struct buf *z)
{
	struct frame_columns_stream st;
	ZSTD_outBuffer ob = { z->data, z->cap, 0 };
	ZSTD_inBuffer ib = { enc->data, 0, 0 };
	size_t r;

	for (size_t i = 0;; i++) {
		bool last = frame_columns_get_stream(fc, i, &st) < 0;

		ib.size = last ? enc->len : st.start + st.len;
		if (!last && st.len < 1024)
			continue;	/* small ones share a block */
		do
			r = ZSTD_compressStream2(cc, &ob, &ib, last ? ZSTD_e_end : ZSTD_e_flush);
		while (!ZSTD_isError(r) && r);
		if (ZSTD_isError(r))
			exit(1);
		if (last)
			return ob.pos;
	}
}

struct result {
	uint64_t stored;
	double enc, zenc, dec;	/* zenc: the part of enc that zstd took */
	uint32_t crc;		/* crc32c of what the first repetition encoded */
	bool exact;
};

/* Compress every frame (columns: encode first), then decode all and compare. */
static void run(const struct frames *f, struct frame_columns *fc, int method, int level,
		int reps, bool split, struct result *res)
{
	_cleanup_(buf_done) struct buf enc = { 0 }, z = { 0 }, dec = { 0 }, back = { 0 };
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	bool columns = method > 0;

	(void)ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	res->enc = res->zenc = res->dec = 1e9;
	res->exact = true;
	for (int rep = 0; rep < reps; rep++) {
		uint64_t start = 0, stored = 0;
		double t0, tz, now, t1 = 0, t2 = 0, t3 = 0;

		for (uint64_t i = 0; i < f->frames; i++) {
			uint64_t end = get_le64(f->ends.data + 8 * i);
			const uint8_t *p = f->data.data + start;
			size_t len = (size_t)(end - start), zl, dl;
			const void *in = p;
			size_t inlen = len;

			t0 = cpu_now();
			if (columns) {
				buf_reset(&enc);
				if (frame_columns_encode(fc, p, len, &enc) < 0)
					exit(1);
				in = enc.data;
				inlen = enc.len;
			}
			if (buf_reserve(&z, ZSTD_compressBound(inlen)) < 0)
				exit(1);
			tz = cpu_now();
			zl = method == 2 ? compress_blocks(cc, fc, &enc, &z) :
					   ZSTD_compress2(cc, z.data, z.cap, in, inlen);
			if (ZSTD_isError(zl))
				exit(1);
			now = cpu_now();
			t1 += now - t0;
			t3 += now - tz;
			stored += zl;
			if (rep == 0)
				res->crc = crc32c(res->crc, in, inlen);
			if (method == 1 && split && rep == 0)
				breakdown(fc, &enc, cc);

			t0 = cpu_now();
			if (buf_reserve(&dec, inlen) < 0)
				exit(1);
			dl = ZSTD_decompressDCtx(dc, dec.data, dec.cap, z.data, zl);
			if (ZSTD_isError(dl) || dl != inlen)
				res->exact = false;
			buf_reset(&back);
			if (columns && frame_columns_decode(fc, dec.data, dl, SEGMENT_MAX_RAW, &back) < 0)
				res->exact = false;
			t2 += cpu_now() - t0;
			if (columns ? back.len != len || memcmp(back.data, p, len) :
				      memcmp(dec.data, p, len))
				res->exact = false;
			start = end;
		}
		res->stored = stored;
		if (t1 < res->enc) {
			res->enc = t1;
			res->zenc = t3;
		}
		res->dec = MIN(res->dec, t2);
	}
	ZSTD_freeCCtx(cc);
	ZSTD_freeDCtx(dc);
}

int main(int argc, char **argv)
{
	_cleanup_(frame_columns_freep) struct frame_columns *fc = NULL;
	struct frames f = { 0 };
	struct buf cur[256] = { { 0 } };
	struct frame_columns_stats st = { 0 };
	size_t frame_kb = 256;
	int reps = 3, level = 1, version = FRAME_COLUMNS_VERSION, opt;
	bool split = false;
	uint32_t crc = 0;

	while ((opt = getopt(argc, argv, "f:r:l:v:b")) != -1) {
		switch (opt) {
		case 'f':
			frame_kb = (size_t)atol(optarg);
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'l':
			level = atoi(optarg);
			break;
		case 'b':
			split = true;
			break;
		case 'v':
			version = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: frame-columns [-f FRAME_KB] [-r REPS] [-l LEVEL] [-v VERSION] [-b] SEGMENT...\n");
			return 2;
		}
	}
	for (int i = optind; i < argc; i++)
		if (load_segment(argv[i], &f, &fc, frame_kb << 10, cur, 256) < 0) {
			fprintf(stderr, "frame-columns: cannot read '%s'\n", argv[i]);
			return 1;
		}
	for (size_t i = 0; i < 256; i++) {
		add_frame(&f, &cur[i]);
		buf_done(&cur[i]);
	}
	if (!fc || !f.events) {
		fprintf(stderr, "frame-columns: no events\n");
		return 1;
	}
	if (frame_columns_set_version(fc, (unsigned int)version) < 0) {
		fprintf(stderr, "frame-columns: no encoding version %d\n", version);
		return 2;
	}
	printf("events %" PRIu64 ", frames %" PRIu64 ", page bytes/event %.1f, other records bytes/event %.2f\n",
	       f.events, f.frames, (double)f.data.len / (double)f.events,
	       (double)f.other_bytes / (double)f.events);
	printf("%-18s %10s %9s %12s %12s %12s %6s\n", "method", "bytes", "B/event", "enc s/Mev",
	       "of it zstd", "dec s/Mev", "exact");
	for (int m = 0; m < 3; m++) {
		static const char *const mname[] = { "zstd (pages)", "columns+zstd", "columns+zstd/blk" };
		struct result res = { 0 };

		run(&f, fc, m, level, reps, split, &res);
		if (m == 1)
			crc = res.crc;
		printf("%-18s %10" PRIu64 " %9.3f %12.3f %12.3f %12.3f %6s\n",
		       mname[m], res.stored,
		       (double)res.stored / (double)f.events, res.enc * 1e6 / (double)f.events,
		       res.zenc * 1e6 / (double)f.events, res.dec * 1e6 / (double)f.events,
		       res.exact ? "yes" : "NO");
		if (m)
			frame_columns_get_stats(fc, &st);
	}
	printf("(last frame: %" PRIu64 " column pages, %" PRIu64 " verbatim, %" PRIu64 " entries, %" PRIu64 " raw)\n",
	       st.pages, st.verbatim_pages, st.entries, st.raw_entries);
	printf("(column encoding: crc32c %08x; an encoder change that keeps it keeps the output)\n",
	       crc);
	if (split)
		print_breakdown(f.events);
	buf_done(&f.data);
	buf_done(&f.ends);
	return 0;
}
