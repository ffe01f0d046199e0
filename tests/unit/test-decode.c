/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The segment decoder. Real ring-buffer pages (tests/data/pages) are written
 * into segments for two CPUs and read back through the decoder: the merged
 * stream must hold exactly the events a direct kbuffer walk of the pages
 * finds, in timestamp order, with kernel_stack frames, lost-event counts
 * and owners. Then the same pages transcoded by the daemon's transcoder
 * (stack_ref entries, stack table at the end of the segment), synthetic
 * stack_id pages with reset windows and strict per-CPU boundaries, several
 * segments in a row, damaged, missing and unfinished segments, the
 * bounded lookahead, and the running kernel's symbols for a segment of
 * this boot without its own.
 */
#include <fcntl.h>

#include <event-parse.h>
#include <kbuffer.h>

#include "stack-audit.h"
#include "buf.h"
#include "decode.h"
#include "helpers.h"
#include "ksyms.h"
#include "page-walk.h"
#include "segment.h"
#include "stacktab-resolve.h"
#include "stacktab.h"
#include "transcode.h"
#include "util.h"

#include "synth-segment.h"

#define PAGE 4096
#define NR_PAGES 16
#define CPU1_SHIFT 777		/* ns added to CPU 0's pages to make CPU 1's */
#define STACK_REF_ID 9999
#define MAX_REF 4096

static char *dir;
static uint8_t raw[NR_PAGES][PAGE];

/* ---- building segments ---- */

/* Pages [from, to) of CPU 0's capture, as CPU cpu (timestamps shifted for CPU 1), compacted. */
static void add_pages(struct segment_writer *w, unsigned cpu, int from, int to)
{
	struct buf b = {};

	for (int i = from; i < to; i++) {
		uint8_t pg[PAGE];
		int len;

		memcpy(pg, raw[i], PAGE);
		if (cpu == 1)
			put_le64(pg, get_le64(pg) + CPU1_SHIFT);
		len = page_walk_stored_len(&(struct page_format){ 8, false, PAGE }, pg, PAGE);
		CHECK(len > 0);
		CHECK(buf_append(&b, pg, (size_t)len) == 0);
	}
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, cpu, b.data, b.len, 1, NULL) == 0);
	buf_done(&b);
}

/* ---- the reference: the same pages walked directly ---- */

struct ref {
	uint64_t ts;
	unsigned cpu;
	unsigned seq;
	int size;
	uint16_t type;
	uint64_t sum;
	uint16_t nr;			/* kernel_stack: frames */
	uint64_t ips[64];
};

static struct ref refs[MAX_REF];
static size_t nr_refs;

static uint64_t data_sum(const void *p, int size)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (int i = 0; i < size; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void ref_pages(unsigned cpu, int from, int to)
{
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);

	for (int i = from; i < to; i++) {
		static uint8_t pg[PAGE];
		unsigned long long ts;
		void *d;

		memcpy(pg, raw[i], PAGE);
		if (cpu == 1)
			put_le64(pg, get_le64(pg) + CPU1_SHIFT);
		CHECK(kbuffer_load_subbuffer(kb, pg) == 0);
		for (d = kbuffer_read_event(kb, &ts); d; d = kbuffer_next_event(kb, &ts)) {
			struct ref *r = &refs[nr_refs];

			if (nr_refs >= MAX_REF) {
				fprintf(stderr, "too many events\n");
				exit(99);
			}
			*r = (struct ref){ .ts = ts, .cpu = cpu, .seq = (unsigned)nr_refs,
					   .size = kbuffer_event_size(kb), .type = get_le16(d) };
			r->sum = data_sum(d, r->size);
			if (r->type == 4) {
				int n = (int)get_le32((uint8_t *)d + 8);

				for (int k = 0; k < n && k < 64 && 16 + 8 * k + 8 <= r->size; k++)
					r->ips[r->nr++] = get_le64((uint8_t *)d + 16 + 8 * k);
			}
			nr_refs++;
		}
	}
	kbuffer_free(kb);
}

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- decoding ---- */

struct got {
	size_t events, stacks, with_owner, mismatches, frame_mismatches, out_of_order;
	size_t errors;
	char error[512];
	long long lost_first;
};

/* Decode paths and compare event by event with refs[skip_from..skip_to) left out. */
static void decode_compare(const char *const *paths, size_t n, size_t lookahead, bool stack_refs,
			   size_t skip_from, size_t skip_to, struct got *g)
{
	struct decoder *d;
	struct decoded_event ev;
	size_t k = 0;
	uint64_t last_ts = 0;
	int r;

	*g = (struct got){ .lost_first = 0 };
	CHECK(decoder_open(paths, n, &d) == 0);
	if (lookahead)
		decoder_set_lookahead_limit(d, lookahead);
	while ((r = decoder_next(d, &ev)) != 0) {
		const struct ref *rf;

		if (r < 0) {
			g->errors++;
			snprintf(g->error, sizeof(g->error), "%s", decoder_error(d));
			CHECK(r != -ENOMEM);
			if (r == -ENOMEM)
				break;
			continue;
		}
		if (k == skip_from)
			k = skip_to;
		if (g->events == 0)
			g->lost_first = ev.lost_before;
		g->events++;
		if (ev.ts < last_ts)
			g->out_of_order++;
		last_ts = ev.ts;
		if (k >= nr_refs) {
			g->mismatches++;
			continue;
		}
		rf = &refs[k++];
		if (ev.ts != rf->ts || ev.cpu != rf->cpu || ev.record->cpu != (int)rf->cpu ||
		    (!stack_refs && (ev.record->size != rf->size ||
				     data_sum(ev.record->data, ev.record->size) != rf->sum))) {
			g->mismatches++;
			continue;
		}
		if (rf->type != 4) {
			if (ev.is_stack)
				g->mismatches++;
			if (!ev.event)
				g->mismatches++;
			continue;
		}
		g->stacks++;
		if (ev.kind != (stack_refs ? DECODED_STACK_REF : DECODED_KERNEL_STACK) ||
		    !ev.resolved || ev.text || ev.nr != rf->nr ||
		    memcmp(ev.ips, rf->ips, sizeof(uint64_t) * rf->nr) != 0)
			g->frame_mismatches++;
		if (ev.owner && streq(ev.owner->name, "kmem_cache_alloc"))
			g->with_owner++;
	}
	if (k == skip_from)
		k = skip_to;
	if (k != nr_refs)
		g->mismatches++;
	decoder_free(d);
}

static void test_real_pages(void)
{
	_cleanup_free_ char *path = NULL, *p1 = NULL, *p2 = NULL;
	struct segment_writer *w;
	struct got g;
	size_t first_half;

	nr_refs = 0;
	ref_pages(0, 0, NR_PAGES);
	ref_pages(1, 0, NR_PAGES);
	qsort(refs, nr_refs, sizeof(*refs), ref_cmp);

	/* one segment, records of the two CPUs interleaved */
	w = seg_open(dir, "00000001-a", NULL);
	add_pages(w, 0, 0, 8);
	add_pages(w, 1, 0, 8);
	add_pages(w, 0, 8, NR_PAGES);
	add_pages(w, 1, 8, NR_PAGES);
	path = seg_finish(w);

	decode_compare((const char *const[]){ path }, 1, 0, false, SIZE_MAX, 0, &g);
	CHECK_MSG(g.events == nr_refs && g.mismatches == 0 && g.errors == 0,
		  "events %zu/%zu mismatches %zu errors %zu %s", g.events, nr_refs, g.mismatches,
		  g.errors, g.error);
	CHECK(g.out_of_order == 0);
	CHECK(g.stacks > 100 && g.frame_mismatches == 0);
	/* every stack follows the kmem_cache_alloc event that triggered it */
	CHECK_MSG(g.with_owner + 2 >= g.stacks, "%zu of %zu", g.with_owner, g.stacks);
	/* the first page of the capture had lost events, and said how many */
	CHECK_MSG(g.lost_first > 0, "%lld", g.lost_first);

	/* a lookahead of one byte: every CPU reads the segment on its own, same result */
	decode_compare((const char *const[]){ path }, 1, 1, false, SIZE_MAX, 0, &g);
	CHECK_MSG(g.events == nr_refs && g.mismatches == 0 && g.errors == 0,
		  "events %zu/%zu mismatches %zu", g.events, nr_refs, g.mismatches);

	/* The same pages in two segments: one continuous trace. */
	w = seg_open(dir, "00000002-a", NULL);
	add_pages(w, 0, 0, 8);
	add_pages(w, 1, 0, 5);
	p1 = seg_finish(w);
	w = seg_open(dir, "00000003-a", NULL);
	add_pages(w, 1, 5, NR_PAGES);
	add_pages(w, 0, 8, NR_PAGES);
	p2 = seg_finish(w);
	decode_compare((const char *const[]){ p1, p2 }, 2, 0, false, SIZE_MAX, 0, &g);
	CHECK_MSG(g.events == nr_refs && g.mismatches == 0 && g.errors == 0,
		  "events %zu/%zu mismatches %zu errors %zu %s", g.events, nr_refs, g.mismatches,
		  g.errors, g.error);

	/* The first segment alone: exactly its events. */
	first_half = 0;
	for (size_t i = 0; i < nr_refs; i++)
		if (refs[i].ts < get_le64(raw[8]) && (refs[i].cpu == 0 || refs[i].ts <
						      get_le64(raw[5]) + CPU1_SHIFT))
			first_half++;
	{
		struct decoder *d;
		struct decoded_event ev;
		size_t n = 0;

		CHECK(decoder_open((const char *const[]){ p1 }, 1, &d) == 0);
		while (decoder_next(d, &ev) > 0)
			n++;
		CHECK_MSG(n == first_half, "%zu %zu", n, first_half);
		decoder_free(d);
	}
}

/*
 * The entries of refs (one CPU's) in the window [since, until]: an event by
 * its time, a stack (type 4) with the event before it, if any.
 */
static size_t refs_in_window(uint64_t since, uint64_t until)
{
	bool last = false;
	size_t n = 0;

	for (size_t i = 0; i < nr_refs; i++) {
		if (refs[i].type != 4)
			last = refs[i].ts >= since && refs[i].ts <= until;
		n += last;
	}
	return n;
}

/* The entries a window [since, until] of segments of CPU 0's pages yields: times, whether stacks. */
static size_t decode_window_of(const char *const *paths, size_t nr_paths, uint64_t since,
			       uint64_t until, uint64_t *ts, bool *stack, size_t max)
{
	struct decoder_filter f = DECODER_FILTER_ALL;
	struct decoder *d;
	struct decoded_event ev;
	size_t n = 0;

	f.since = since;
	f.until = until;
	CHECK(decoder_open(paths, nr_paths, &d) == 0);
	CHECK(decoder_set_filter(d, &f) == 0);
	while (decoder_next(d, &ev) > 0 && n < max) {
		ts[n] = ev.ts;
		stack[n++] = ev.is_stack;
	}
	decoder_free(d);
	return n;
}

static size_t decode_window(const char *path, uint64_t since, uint64_t until, uint64_t *ts,
			    bool *stack, size_t max)
{
	return decode_window_of((const char *const[]){ path }, 1, since, until, ts, stack, max);
}

/*
 * A stack goes with its event through a time window: the kernel stamps it
 * after unwinding, later than its event. An event at the window's end
 * keeps its stack stamped past the end; an event before the start does
 * not leave in the window a stack stamped inside it.
 */
static void test_window_stacks(void)
{
	_cleanup_free_ char *path = NULL;
	static uint64_t ts[MAX_REF];
	static bool stack[MAX_REF];
	struct segment_writer *w;
	size_t pair = 0, n;

	nr_refs = 0;
	ref_pages(0, 0, NR_PAGES);
	w = seg_open(dir, "00000010-w", NULL);
	add_pages(w, 0, 0, NR_PAGES);
	path = seg_finish(w);

	/* an event in the middle whose stack came strictly later */
	for (size_t i = nr_refs / 2; i + 1 < nr_refs && !pair; i++)
		if (refs[i].type != 4 && refs[i + 1].type == 4 && refs[i + 1].ts > refs[i].ts &&
		    (i + 2 == nr_refs || refs[i + 2].ts > refs[i + 1].ts))
			pair = i;
	CHECK_MSG(pair, "no event in the pages has a stack stamped after it");
	if (!pair)
		return;

	/* until the event: it and its stack end the window */
	n = decode_window(path, 0, refs[pair].ts, ts, stack, MAX_REF);
	CHECK_MSG(n == refs_in_window(0, refs[pair].ts) && n && stack[n - 1] &&
		  ts[n - 1] == refs[pair + 1].ts,
		  "%zu entries, want %zu, the last %s at %" PRIu64, n, refs_in_window(0, refs[pair].ts),
		  n && stack[n - 1] ? "a stack" : "an event", n ? ts[n - 1] : 0);

	/* since the stack: the window starts after it, with an event */
	n = decode_window(path, refs[pair + 1].ts, UINT64_MAX, ts, stack, MAX_REF);
	CHECK_MSG(n == nr_refs - pair - 2 && n && !stack[0],
		  "%zu entries, want %zu, the first %s", n, nr_refs - pair - 2,
		  n && stack[0] ? "a stack" : "an event");
}

/* A segment in d of CPU 0's pages [from, to) in one frame, with the INDEX the daemon writes. */
static char *seg_indexed_in(const char *d, const char *name, const char *boot, int from, int to,
			    uint64_t first_ts, uint64_t last_ts)
{
	_cleanup_free_ char *meta = NULL;
	struct segment_writer *w;

	CHECK(asprintf(&meta, "boot_id=%s\n", boot) > 0);
	w = seg_open(d, name, meta);
	struct segment_cpu_index cpu = { .cpu = 0, .pages = (uint64_t)(to - from), .events = 1,
					 .first_ts = first_ts, .last_ts = last_ts };
	struct segment_seek seek = { .cpu = 0, .offset = segment_writer_size(w),
				     .first_ts = first_ts, .last_ts = last_ts };
	struct segment_index idx = { .flags = SEGMENT_INDEX_F_SEEK, .nr_cpus = 1, .cpus = &cpu,
				     .nr_frames = 1, .frames = &seek };
	char *path = NULL;

	add_pages(w, 0, from, to);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

/* The page split_segments() splits at, and in *ret_last the event before it; 0: none. */
static int split_at(size_t *ret_last)
{
	size_t last = 0;
	int split = 0;

	/* a page boundary between an event and its later stack */
	nr_refs = 0;
	ref_pages(0, 0, 1);
	for (int i = 1; i < NR_PAGES; i++) {
		size_t start = nr_refs;

		ref_pages(0, i, i + 1);
		if (!split && refs[start - 1].type != 4 && refs[start].type == 4 &&
		    refs[start].ts > refs[start - 1].ts) {
			split = i;
			last = start - 1;
		}
	}
	CHECK_MSG(split, "no page of the capture starts with the stack of the last event before it");
	*ret_last = last;
	return split;
}

/*
 * CPU 0's capture as two segments in d, split at the first page that
 * starts with the stack of the event ending the page before it (refs
 * holds the capture, refs[*ret_last] that event). Returns false, with a
 * failed check, when the capture has no such page.
 */
static bool split_segments(const char *d, const char *name1, const char *name2, const char *boot2,
			   char **ret_p1, char **ret_p2, size_t *ret_last)
{
	size_t last = 0;
	int split = split_at(&last);

	if (!split)
		return false;
	*ret_p1 = seg_indexed_in(d, name1, "test-split", 0, split, refs[0].ts, refs[last].ts);
	*ret_p2 = seg_indexed_in(d, name2, boot2, split, NR_PAGES, refs[last + 1].ts,
				 refs[nr_refs - 1].ts);
	*ret_last = last;
	return true;
}

/*
 * The same across segments: the window's last event ends one segment and
 * its stack, stamped after the window, starts the next, whose span then
 * lies wholly after the window.
 */
static void test_window_stacks_segments(void)
{
	_cleanup_free_ char *p1 = NULL, *p2 = NULL;
	static uint64_t ts[MAX_REF];
	static bool stack[MAX_REF];
	size_t last, n;

	if (!split_segments(dir, "00000016-w", "00000017-w", "test-split", &p1, &p2, &last))
		return;
	n = decode_window_of((const char *const[]){ p1, p2 }, 2, 0, refs[last].ts, ts, stack, MAX_REF);
	CHECK_MSG(n == refs_in_window(0, refs[last].ts) && n && stack[n - 1] &&
		  ts[n - 1] == refs[last + 1].ts,
		  "%zu entries, want %zu, the last %s at %" PRIu64, n, refs_in_window(0, refs[last].ts),
		  n && stack[n - 1] ? "a stack" : "an event", n ? ts[n - 1] : 0);
}

/*
 * A stack that starts the next segment follows the event that ended the
 * one before: its owner is that event (as a format of its own segment),
 * so that top, folded and the exports pair them as report shows them.
 * Not across boots: a stack cannot follow an event of an earlier boot.
 */
static void test_split_stack_owner(void)
{
	_cleanup_free_ char *p1 = NULL, *p2 = NULL, *p3 = NULL, *name = NULL;
	struct decoded_event ev;
	struct decoder *d;
	size_t last, k = 0;
	bool seen = false;

	if (!split_segments(dir, "00000018-o", "00000019-o", "test-split", &p1, &p2, &last))
		return;
	CHECK(decoder_open((const char *const[]){ p1, p2 }, 2, &d) == 0);
	while (decoder_next(d, &ev) > 0) {
		if (k == last)
			name = strdup(ev.event ? ev.event->name : "?");
		if (k++ == last + 1) {
			CHECK_MSG(ev.is_stack && ev.segment && streq(ev.segment, p2),
				  "entry %zu is not the stack that starts the second segment", k - 1);
			CHECK_MSG(ev.owner && name && streq(ev.owner->name, name),
				  "the stack starting the second segment has owner %s, want %s",
				  ev.owner ? ev.owner->name : "none", name ?: "?");
			seen = true;
		}
	}
	decoder_free(d);
	CHECK(seen);

	/* the same second segment, but of another boot */
	free(p1);
	p1 = NULL;
	if (!split_segments(dir, "00000020-o", "00000021-o", "another-boot", &p1, &p3, &last))
		return;
	CHECK(decoder_open((const char *const[]){ p1, p3 }, 2, &d) == 0);
	k = 0;
	while (decoder_next(d, &ev) > 0)
		if (k++ == last + 1)
			CHECK_MSG(!ev.is_stack || !ev.owner, "a stack followed an event of another boot");
	decoder_free(d);
}

/* A finished segment of synthetic entries of CPU 0, with an INDEX line for them. */
static char *seg_synth(const char *name, const char *meta, const struct synth_entry *e, size_t n)
{
	struct segment_writer *w = seg_open(dir, name, meta);
	struct segment_cpu_index cpu = { .cpu = 0, .pages = 1, .events = n, .first_ts = e[0].ts,
					 .last_ts = e[n - 1].ts };
	struct segment_index idx = { .nr_cpus = 1, .cpus = &cpu };
	char *path = NULL;

	add_synth_formats(w);
	add_entries(w, 0, e, n);
	CHECK(segment_writer_finish(w, &idx, false, &path) == 0);
	return path;
}

/* What decoding paths[0..n) one by one (one decoder each, as groups are) with plan p gives. */
static void decode_each(const char *const *paths, size_t n, const struct decoder_overlap_plan *p,
			char *out, size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		struct decoder *d;
		struct decoded_event ev;

		CHECK(decoder_open(&paths[i], 1, &d) == 0);
		decoder_set_overlap_plan(d, p);
		while (decoder_next(d, &ev) > 0 && off + 32 < len)
			off += (size_t)snprintf(out + off, len - off, "%s%" PRIu64 "%s", off ? " " : "",
						ev.ts, !ev.is_stack ? "" : ev.resolved ? "s" : "u");
		decoder_free(d);
	}
}

/*
 * After a panic: the boot's last segment, recovered without its stack map
 * tables (stack ids that do not resolve), and the crash capture, which
 * holds the same events from 195 on with full stacks, slightly earlier
 * (its probe runs first), and says the recorded segments hold everything
 * up to 301. The capture's copies are read from its first entry on, the
 * segment's own before it; each event once. Without the plan the capture
 * is skipped whole and the unresolved copies are read.
 */
static void test_capture_copy(void)
{
	_cleanup_free_ char *part = NULL, *cap = NULL, *other = NULL;
	_cleanup_(decoder_overlap_plan_freep) struct decoder_overlap_plan *p = NULL;
	char got[512];

	part = seg_synth("00000030-p", "boot_id=b1\nstack_mode=stackmap\nstack_id_event_id=20\n",
			 ENTRIES({ 30, 100 }, { 20, 101 }, { 30, 200 }, { 20, 201 }, { 30, 300 },
				 { 20, 301 }));
	cap = seg_synth("00000031-c", "boot_id=b1\nstack_mode=full\ncapture=crash\n"
			"capture_overlap=0:301\ncapture_current_boot_id=b2\n",
			ENTRIES({ 30, 195 }, { 4, 196 }, { 30, 295 }, { 4, 296 }));

	decode_each((const char *const[]){ part, cap }, 2, NULL, got, sizeof(got));
	CHECK_MSG(streq(got, "100 101u 200 201u 300 301u"), "without a plan: %s", got);

	CHECK(decoder_overlap_plan_new((const char *const[]){ part, cap }, 2, &p) == 0);
	CHECK(decoder_overlap_plan_size(p) == 2);
	decode_each((const char *const[]){ part, cap }, 2, p, got, sizeof(got));
	CHECK_MSG(streq(got, "100 101u 195 196s 295 296s"), "with the plan: %s", got);
	p = decoder_overlap_plan_free(p);

	/* the same with the part as recovery leaves it: an INDEX without CPU lines */
	{
		struct segment_writer *w = seg_open(dir, "00000034-p", "boot_id=b1\n"
						    "stack_mode=stackmap\nstack_id_event_id=20\n");

		add_synth_formats(w);
		add_entries(w, 0, ENTRIES({ 30, 100 }, { 20, 101 }, { 30, 200 }, { 20, 201 },
					  { 30, 300 }, { 20, 301 }));
		free(part);
		part = seg_finish(w);
	}
	CHECK(decoder_overlap_plan_new((const char *const[]){ part, cap }, 2, &p) == 0);
	CHECK(decoder_overlap_plan_size(p) == 2);
	decode_each((const char *const[]){ part, cap }, 2, p, got, sizeof(got));
	CHECK_MSG(streq(got, "100 101u 195 196s 295 296s"), "recovered, with the plan: %s", got);
	p = decoder_overlap_plan_free(p);

	/* one of another boot keeps its copies */
	other = seg_synth("00000032-p", "boot_id=b0\nstack_mode=stackmap\nstack_id_event_id=20\n",
			  ENTRIES({ 30, 100 }, { 20, 101 }, { 30, 200 }, { 20, 201 }));
	CHECK(decoder_overlap_plan_new((const char *const[]){ other, cap }, 2, &p) == 0);
	CHECK(decoder_overlap_plan_size(p) == 0);
	p = decoder_overlap_plan_free(p);
	free(other);

	/* and so does one whose ids resolve (it has its tables) */
	{
		struct segment_writer *w = seg_open(dir, "00000033-p", "boot_id=b1\n"
						    "stack_mode=stackmap\nstack_id_event_id=20\n");
		struct segment_cpu_index cpu = { .cpu = 0, .pages = 1, .events = 4, .first_ts = 100,
						 .last_ts = 201 };
		struct segment_index idx = { .nr_cpus = 1, .cpus = &cpu };

		add_synth_formats(w);
		add_entries(w, 0, ENTRIES({ 30, 100 }, { 20, 101 }, { 30, 200 }, { 20, 201 }));
		add_id5_stacks(w, 1);
		add_gen(w, SEGMENT_NO_CPU, 1, 0, 0, 0);
		other = NULL;
		CHECK(segment_writer_finish(w, &idx, false, &other) == 0);
	}
	CHECK(decoder_overlap_plan_new((const char *const[]){ other, cap }, 2, &p) == 0);
	CHECK(decoder_overlap_plan_size(p) == 0);
	decode_each((const char *const[]){ other }, 1, p, got, sizeof(got));
	CHECK_MSG(streq(got, "100 101s 200 201s"), "a segment with its tables: %s", got);
}

/* A CPU without data in some segments: its stream goes on in a later one. */
static void test_idle_cpu(void)
{
	_cleanup_free_ char *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL, *q2 = NULL;
	struct segment_writer *w;
	struct got g;

	w = seg_open(dir, "00000011-i", NULL);
	add_pages(w, 0, 0, 4);
	add_pages(w, 1, 0, 4);
	p1 = seg_finish(w);
	w = seg_open(dir, "00000012-i", NULL);
	add_pages(w, 0, 4, 8);
	p2 = seg_finish(w);
	w = seg_open(dir, "00000013-i", NULL);
	add_pages(w, 1, 4, NR_PAGES);
	add_pages(w, 0, 8, NR_PAGES);
	p3 = seg_finish(w);

	/* CPU 1 skips the second segment: still one ordered stream */
	decode_compare((const char *const[]){ p1, p2, p3 }, 3, 0, false, SIZE_MAX, 0, &g);
	CHECK_MSG(g.events == nr_refs && g.mismatches == 0 && g.errors == 0 &&
		  g.out_of_order == 0, "events %zu/%zu mismatches %zu errors %zu order %zu",
		  g.events, nr_refs, g.mismatches, g.errors, g.out_of_order);

	/*
	 * Two segments without CPU 1: its later events wait until the first of
	 * them is closed (two segments open at most). Nothing is lost.
	 */
	w = seg_open(dir, "00000014-i", NULL);
	add_pages(w, 0, 4, 6);
	q2 = seg_finish(w);
	w = seg_open(dir, "00000015-i", NULL);
	add_pages(w, 0, 6, 8);
	p4 = seg_finish(w);
	{
		struct decoder *d;
		struct decoded_event ev;
		size_t n = 0;
		int r;

		CHECK(decoder_open((const char *const[]){ p1, q2, p4, p3 }, 4, &d) == 0);
		while ((r = decoder_next(d, &ev)) != 0)
			if (r > 0)
				n++;
		CHECK_MSG(n == nr_refs, "%zu %zu", n, nr_refs);
		decoder_free(d);
	}
}

static void test_damaged(void)
{
	_cleanup_free_ char *p1 = NULL, *p2 = NULL, *p3 = NULL, *part = NULL;
	_cleanup_free_ char *missing = NULL;
	uint64_t offsets[8];
	size_t nr_off = 0, lost = 0, part_events = 0;
	struct segment_writer *w;
	struct segment_reader *rd;
	struct segment_record rec;
	int fd;

	/* the same split as above, with CPU 1's second record damaged on disk */
	w = seg_open(dir, "00000004-b", NULL);
	add_pages(w, 0, 0, 8);
	add_pages(w, 1, 0, 5);
	p1 = seg_finish(w);
	w = seg_open(dir, "00000005-b", NULL);
	add_pages(w, 0, 8, NR_PAGES);
	add_pages(w, 1, 5, NR_PAGES);
	p2 = seg_finish(w);

	CHECK(segment_reader_open(p2, &rd) == 0);
	while (segment_reader_next(rd, &rec) > 0)
		if (rec.type == SEGMENT_REC_PAGES && nr_off < ARRAY_SIZE(offsets))
			offsets[nr_off++] = rec.offset;
	segment_reader_free(rd);
	CHECK(nr_off == 2);
	fd = open(p2, O_RDWR);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, "XXXX", 4, (off_t)offsets[1] + SEGMENT_REC_HDR_SIZE + 8) == 4);
	close(fd);

	CHECK(strprintf(&missing, "%s/00000006-nothere.smseg", dir) == 0);

	/* an unfinished segment: the .part of a writer that never finished */
	w = seg_open(dir, "00000007-c", NULL);
	add_pages(w, 0, 0, 1);
	CHECK(strprintf(&part, "%s", segment_writer_path(w)) == 0);
	segment_writer_free(w);

	/* CPU 1's events from page 5 on are lost with the damaged record; the .part adds page 0 */
	for (size_t i = 0; i < nr_refs; i++) {
		if (refs[i].cpu == 1 && refs[i].ts >= get_le64(raw[5]) + CPU1_SHIFT)
			lost++;
		if (refs[i].cpu == 0 && refs[i].ts < get_le64(raw[1]))
			part_events++;
	}
	{
		struct decoder *d;
		struct decoded_event ev;
		size_t events = 0, cpu1_after = 0, errors = 0, after_error = 0;
		bool saw_damage = false, saw_missing = false, saw_part = false;
		int r;

		CHECK(decoder_open((const char *const[]){ p1, p2, missing, part }, 4, &d) == 0);
		while ((r = decoder_next(d, &ev)) != 0) {
			if (r == -EINPROGRESS) {
				/* not an error: the segment a writer has not finished */
				saw_part = strstr(decoder_error(d), part) &&
					   strstr(decoder_error(d), "unfinished");
				continue;
			}
			if (r < 0) {
				const char *e = decoder_error(d);
				char off[32];

				errors++;
				snprintf(off, sizeof(off), "%" PRIu64, offsets[1]);
				if (strstr(e, p2) && strstr(e, off))
					saw_damage = true;
				if (strstr(e, missing))
					saw_missing = true;
				continue;
			}
			events++;
			if (saw_damage)
				after_error++;
			if (ev.cpu == 1 && ev.ts >= get_le64(raw[5]) + CPU1_SHIFT &&
			    streq(ev.segment, p2))
				cpu1_after++;
		}
		decoder_free(d);
		CHECK(saw_damage && saw_missing && saw_part);
		CHECK_MSG(errors == 2, "%zu", errors);
		CHECK(cpu1_after == 0);
		CHECK_MSG(events == nr_refs - lost + part_events, "%zu %zu", events,
			  nr_refs - lost + part_events);
		CHECK(after_error > 0);
	}

	/* the damaged segment alone: CPU 0's events of it, then the error */
	{
		struct decoder *d;
		struct decoded_event ev;
		size_t events = 0, expect = 0;
		int r, last = 0;

		for (size_t i = 0; i < nr_refs; i++)
			if (refs[i].cpu == 0 && refs[i].ts >= get_le64(raw[8]))
				expect++;
		CHECK(decoder_open((const char *const[]){ p2 }, 1, &d) == 0);
		while ((r = decoder_next(d, &ev)) != 0) {
			if (r > 0)
				events++;
			last = r;
		}
		CHECK(last == -EBADMSG);
		CHECK_MSG(events == expect, "%zu %zu", events, expect);
		decoder_free(d);
	}

	/*
	 * The writer's record cut short at the end of the file: the tail of the
	 * segment being written, not damage; the same cut in a finished
	 * segment's name is damage.
	 */
	for (int named_part = 0; named_part <= 1; named_part++) {
		_cleanup_free_ char *cut = NULL, *data = NULL;
		struct decoder *d;
		struct decoded_event ev;
		size_t len = 0;
		int r, out, notes = 0, damage = 0;

		CHECK(strprintf(&cut, "%s/00000009-cut%s", dir,
				named_part ? SEGMENT_PART_SUFFIX : SEGMENT_SUFFIX) == 0);
		CHECK(read_file(part, &data, &len) == 0 && len > 7);
		out = open(cut, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(out >= 0 && write(out, data, len - 7) == (ssize_t)(len - 7));
		close(out);
		CHECK(decoder_open((const char *const[]){ cut }, 1, &d) == 0);
		while ((r = decoder_next(d, &ev)) != 0) {
			notes += r == -EINPROGRESS;
			damage += r < 0 && r != -EINPROGRESS;
		}
		decoder_free(d);
		CHECK_MSG(notes == named_part && damage == !named_part, "%s: %d notes, %d errors",
			  cut, notes, damage);
	}
}

/* ---- stack_ref pages from the daemon's transcoder ---- */

static void test_stack_refs(void)
{
	_cleanup_free_ char *path = NULL, *hp = NULL;
	struct page_layout layout;
	struct stackdedup *dd;
	struct transcoder t;
	struct segment_writer *w;
	struct buf stacks = {}, fmt = {};
	struct got g;
	char meta[64];

	hp = test_page_data("header_page", NULL);
	CHECK(page_layout_parse(hp, &layout) == 0);
	layout.page_size = PAGE;
	layout.kernel_stack_id = 4;
	layout.stack_id_id = -1;
	layout.print_id = 5;
	layout.stack_ref_id = STACK_REF_ID;
	dd = stackdedup_new(100000);
	CHECK(dd && transcoder_init(&t, &layout, dd) == 0);

	snprintf(meta, sizeof(meta), "stack_ref_event_id=%d\n", STACK_REF_ID);
	w = seg_open(dir, "00000008-r", meta);
	CHECK(page_layout_stack_ref_format(STACK_REF_ID, &fmt) == 0);
	CHECK(segment_writer_append_file(w, "events/stackmapd/stack_ref/format", fmt.data, fmt.len,
					 0) == 0);
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		struct buf out = {};

		for (int i = 0; i < NR_PAGES; i++) {
			struct page_summary sum;
			uint8_t pg[PAGE];

			memcpy(pg, raw[i], PAGE);
			if (cpu == 1)
				put_le64(pg, get_le64(pg) + CPU1_SHIFT);
			CHECK(transcoder_page(&t, pg, PAGE, &out, &sum) == 0);
			CHECK(!sum.parse_error);
		}
		CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, cpu, out.data, out.len, 1, NULL) ==
		      0);
		buf_done(&out);
	}
	/* the daemon writes the table at the end of the segment */
	for (size_t i = 0; i < t.nr_refs; i++) {
		struct stack_entry e = { .generation = 0, .id = t.refs[i]->id, .refs = 1,
					 .nr = t.refs[i]->nr, .ips = t.refs[i]->ips };

		CHECK(stacktab_encode(&stacks, &e) == 0);
	}
	CHECK(t.nr_refs > 3);
	CHECK(segment_writer_append(w, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, stacks.data, stacks.len,
				    1, NULL) == 0);
	path = seg_finish(w);

	decode_compare((const char *const[]){ path }, 1, 0, true, SIZE_MAX, 0, &g);
	CHECK_MSG(g.events == nr_refs && g.mismatches == 0 && g.errors == 0,
		  "events %zu/%zu mismatches %zu errors %zu %s", g.events, nr_refs, g.mismatches,
		  g.errors, g.error);
	CHECK_MSG(g.stacks > 100 && g.frame_mismatches == 0, "%zu %zu", g.stacks,
		  g.frame_mismatches);
	{
		struct decoder *d;
		struct decoded_event ev;
		struct stacktab_stats st;

		CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
		while (decoder_next(d, &ev) > 0)
			;
		decoder_get_stats(d, &st);
		CHECK(st.resolved[STACKTAB_DAEMON_REF] == g.stacks);
		CHECK(st.unresolved[STACKTAB_DAEMON_REF] == 0);
		decoder_free(d);
	}

	buf_done(&stacks);
	buf_done(&fmt);
	transcoder_done(&t);
	stackdedup_free(dd);
}

/* ---- synthetic stack_id pages: generations ---- */

/* One compacted page: a tick then a stack_id 5 at each timestamp. */
static void add_synth(struct segment_writer *w, unsigned cpu, const uint64_t *ts, size_t n)
{
	uint8_t pg[PAGE] = {};
	size_t off = 16;
	uint64_t prev = ts[0];

	put_le64(pg, ts[0]);
	for (size_t i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			uint32_t delta = k ? 0 : (uint32_t)(ts[i] - prev);

			put_le32(pg + off, delta << 5 | 3);	/* type_len 3: 12 bytes of data */
			pg[off + 4] = k ? 20 : 30;		/* common_type */
			put_le32(pg + off + 8, 1000 + cpu);	/* common_pid */
			put_le32(pg + off + 12, k ? 5 : (uint32_t)i);
			off += 16;
		}
		prev = ts[i];
	}
	put_le64(pg + 8, off - 16);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, cpu, pg, off, 0, NULL) == 0);
}

static void test_stack_ids(void)
{
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w;
	struct decoder *d;
	struct decoded_event ev;
	const struct {
		unsigned cpu;
		uint64_t ts;
		uint64_t frame;		/* 0: unresolved */
		const char *reason;
	} expect[] = {
		{ 0, 50, 0xa1, NULL },
		{ 1, 55, 0xb1, NULL },	/* strict: generation 2 before CPU 1's boundary */
		{ 1, 58, 0xb1, NULL },
		{ 0, 60, 0xa1, NULL },
		{ 1, 65, 0xc1, NULL },	/* after the boundary record: generation 3 */
		{ 0, 150, 0, "ambiguous between generations 1 and 2" },
		{ 0, 300, 0xb1, NULL },
	};
	size_t k = 0, ticks = 0;
	int r;

	w = seg_open(dir, "00000009-s", "stack_id_event_id=20\n");
	CHECK(segment_writer_append_file(w, "events/ftrace/stack_id/format", stack_id_format,
					 strlen(stack_id_format), 0) == 0);
	CHECK(segment_writer_append_file(w, "events/test/tick/format", tick_format,
					 strlen(tick_format), 0) == 0);
	add_synth(w, 0, (const uint64_t[]){ 50, 60 }, 2);
	add_synth(w, 1, (const uint64_t[]){ 55, 58 }, 2);
	add_gen(w, 1, 3, 2, 1000, 1100);	/* strict: its time window does not matter */
	add_synth(w, 1, (const uint64_t[]){ 65 }, 1);
	add_synth(w, 0, (const uint64_t[]){ 150, 300 }, 2);
	/* the table and the windows come last, as the daemon writes them */
	add_id5_stacks(w, 3);
	add_gen(w, SEGMENT_NO_CPU, 2, 1, 100, 200);
	path = seg_finish(w);

	CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
	while ((r = decoder_next(d, &ev)) != 0) {
		CHECK_MSG(r > 0, "%s", decoder_error(d));
		if (r < 0)
			continue;
		if (!ev.is_stack) {
			CHECK(ev.event && streq(ev.event->name, "tick"));
			ticks++;
			continue;
		}
		CHECK(ev.kind == DECODED_STACK_ID && ev.stack_id == 5);
		CHECK(ev.owner && streq(ev.owner->name, "tick"));
		if (k >= ARRAY_SIZE(expect)) {
			CHECK(!"too many stacks");
			continue;
		}
		CHECK_MSG(ev.cpu == expect[k].cpu && ev.ts == expect[k].ts, "%zu: cpu %u ts %lu", k,
			  ev.cpu, (unsigned long)ev.ts);
		if (expect[k].frame)
			CHECK_MSG(ev.resolved && ev.nr == 2 && ev.ips[0] == expect[k].frame,
				  "%zu: %s", k, ev.resolved ? "wrong frames" : ev.unresolved_reason);
		else
			CHECK_MSG(!ev.resolved && streq(ev.unresolved_reason, expect[k].reason),
				  "%zu: %s", k, ev.resolved ? "resolved" : ev.unresolved_reason);
		k++;
	}
	CHECK(k == ARRAY_SIZE(expect) && ticks == ARRAY_SIZE(expect));
	decoder_free(d);

	/* the tables alone, for `stacks` */
	{
		struct decoder_segment *s;
		char sym[64];

		CHECK(decoder_segment_load(path, &s, NULL) == 0);
		CHECK(decoder_segment_error(s, 0) == NULL);
		CHECK(stacktab_size(decoder_segment_stacktab(s)) == 3);
		CHECK(streq(decoder_segment_meta(s, "stack_id_event_id"), "20"));
		CHECK(decoder_segment_symbolize(s, DECODE_FTRACE_TRAMPOLINE, true, sym,
						sizeof(sym)) > 0 &&
		      streq(sym, "[FTRACE TRAMPOLINE]"));
		CHECK(decoder_segment_symbolize(s, 0x1234, false, sym, sizeof(sym)) > 0 &&
		      streq(sym, "0x1234"));
		CHECK(decoder_segment_symbolize(s, 0x1234, false, sym, 3) == -ENOBUFS);
		decoder_segment_free(s);
	}
}

/* ---- stacks lost in a strict reset pause ---- */

static char *lost_stack_segment(void)
{
	static const char conf[] = "[trace]\nevents = test:tick test:tock\nstacktrace = test:tick\n";
	struct segment_writer *w;
	char *path;

	w = seg_open(dir, "00000010-l", "stack_id_event_id=20\nstack_mode=stackmap\n");
	add_synth_formats(w);
	CHECK(segment_writer_append_file(w, "config", conf, strlen(conf), 0) == 0);
	/* CPU 0: tick 20 loses its stack in the pause before boundary 2 */
	add_entries(w, 0, ENTRIES({ 30, 10 }, { 20, 11 }, { 30, 20 }));
	add_gen(w, 0, 2, 1, 0, 0);
	add_entries(w, 0, ENTRIES({ 30, 30 }, { 20, 31 }, { 30, 40 }));
	/* tick 40's id was looked up before the pause, written after it */
	add_gen(w, 0, 3, 2, 0, 0);
	add_entries(w, 0, ENTRIES({ 20, 45 }, { 30, 50 }, { 20, 51 }, { 30, 60 }));
	/* the segment ends after a boundary, before tick 60's stack */
	add_gen(w, 0, 4, 3, 0, 0);
	/* CPU 1: none lost: no boundary after tick 15, tock has no stack, tick 25 has one */
	add_entries(w, 1, ENTRIES({ 30, 15 }, { 30, 25 }, { 20, 26 }, { 31, 55 }));
	add_gen(w, 1, 2, 1, 0, 0);
	add_entries(w, 1, ENTRIES({ 30, 65 }, { 20, 66 }));
	add_id5_stacks(w, 4);
	path = seg_finish(w);
	return path;
}

/*
 * Events lost before a page are reported before its first event, also
 * when the page starts with a time extend (kbuffer_missed_events() answers
 * only for an event at offset 0); without the count stored, as unknown.
 */
static void test_lost_before_time_extend(void)
{
	_cleanup_free_ char *path = NULL;
	struct segment_writer *w;
	struct decoder *d;
	struct decoded_event ev;
	long long lost[2] = { 0, 0 };
	size_t events = 0;

	w = seg_open(dir, "00000011-m", NULL);
	CHECK(segment_writer_append_file(w, "events/test/tick/format", tick_format,
					 strlen(tick_format), 0) == 0);
	for (int stored = 1; stored >= 0; stored--) {
		uint8_t pg[PAGE] = {};
		size_t off = 16;

		put_le64(pg, 1000 + 1000000000ull * (uint64_t)!stored);
		put_le32(pg + off, (uint32_t)(1u << 5 | 30));	/* time extend: 1 << 27 + 1 ns */
		put_le32(pg + off + 4, 1);
		off += 8;
		put_le32(pg + off, 5u << 5 | 3);			/* tick, 5 ns later */
		pg[off + 4] = 30;
		put_le32(pg + off + 8, 1000);
		off += 16;
		put_le64(pg + 8, (off - 16) | PAGE_MISSED_EVENTS | (stored ? PAGE_MISSED_STORED : 0));
		if (stored) {
			put_le64(pg + off, 42);
			off += 8;
		}
		CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, pg, off, 0, NULL) == 0);
	}
	path = seg_finish(w);
	CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
	while (decoder_next(d, &ev) > 0)
		if (events < 2)
			lost[events++] = ev.lost_before;
	decoder_free(d);
	CHECK_MSG(events == 2, "%zu events", events);
	CHECK_MSG(lost[0] == 42 && lost[1] == -1, "lost before: %lld, %lld", lost[0], lost[1]);
}

static void test_lost_stacks(void)
{
	_cleanup_free_ char *path = lost_stack_segment();
	static const char *const lost = "no stack: tracing was paused for a stack map reset "
					"before it was written";
	const struct {
		unsigned cpu;
		uint64_t ts;
		enum decoded_stack kind;
		uint64_t frame;		/* 0: unresolved */
		const char *reason;
	} expect[] = {
		{ 0, 11, DECODED_STACK_ID, 0xa1, NULL },
		{ 0, 20, DECODED_STACK_MISSING, 0, NULL },
		{ 1, 26, DECODED_STACK_ID, 0xa1, NULL },
		{ 0, 31, DECODED_STACK_ID, 0xb1, NULL },
		{ 0, 45, DECODED_STACK_ID, 0, "its event came before a strict generation boundary" },
		{ 0, 51, DECODED_STACK_ID, 0xc1, NULL },
		{ 0, 60, DECODED_STACK_MISSING, 0, NULL },
		{ 1, 66, DECODED_STACK_ID, 0xb1, NULL },
	};
	struct stacktab_stats st;
	struct page_layout layout;
	struct decoded_event ev;
	struct decoder *d;
	uint64_t audited = 0, unresolved = 0;
	unsigned prev_cpu = 99;
	uint64_t prev_ts = 0;
	size_t k = 0;
	int r;

	CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
	while ((r = decoder_next(d, &ev)) != 0) {
		CHECK_MSG(r > 0, "%s", decoder_error(d));
		if (r < 0)
			continue;
		if (!ev.is_stack) {
			prev_cpu = ev.cpu;
			prev_ts = ev.ts;
			continue;
		}
		if (k >= ARRAY_SIZE(expect)) {
			CHECK(!"too many stacks");
			continue;
		}
		CHECK_MSG(ev.cpu == expect[k].cpu && ev.ts == expect[k].ts &&
			  ev.kind == expect[k].kind, "%zu: cpu %u ts %lu kind %d", k, ev.cpu,
			  (unsigned long)ev.ts, ev.kind);
		/* right after the event it belongs to, which it names */
		CHECK_MSG(prev_cpu == ev.cpu && ev.owner && streq(ev.owner->name, "tick"), "%zu", k);
		if (ev.kind == DECODED_STACK_MISSING)
			CHECK(prev_ts == ev.ts && !ev.resolved && !ev.record &&
			      streq(ev.unresolved_reason, lost));
		else if (expect[k].frame)
			CHECK_MSG(ev.resolved && ev.ips[0] == expect[k].frame, "%zu: %s", k,
				  ev.resolved ? "wrong frames" : ev.unresolved_reason);
		else
			CHECK_MSG(!ev.resolved && streq(ev.unresolved_reason, expect[k].reason),
				  "%zu: %s", k, ev.resolved ? "resolved" : ev.unresolved_reason);
		prev_cpu = 99;
		k++;
	}
	CHECK_MSG(k == ARRAY_SIZE(expect), "%zu stacks", k);
	decoder_get_stats(d, &st);
	CHECK_MSG(st.unresolved[STACKTAB_KERNEL_ID] == 3 && st.resolved[STACKTAB_KERNEL_ID] == 5,
		  "%lu unresolved, %lu resolved", (unsigned long)st.unresolved[STACKTAB_KERNEL_ID],
		  (unsigned long)st.resolved[STACKTAB_KERNEL_ID]);
	decoder_free(d);

	/* the daemon's count for the index and status says the same */
	synth_layout(&layout);
	CHECK(stack_audit_unresolved(path, &layout, &audited, &unresolved) == 0);
	CHECK_MSG(audited == 8 && unresolved == 3, "%lu of %lu", (unsigned long)unresolved,
		  (unsigned long)audited);
}

/* Decode one segment to its end; returns the events, *ret_errors the problems reported. */
static size_t decode_count(const char *path, size_t *ret_errors, uint64_t *ret_bad_pages,
			   bool *ret_saw_offset, uint64_t rec_off)
{
	struct decoder *d;
	struct decoded_event ev;
	size_t events = 0, errors = 0;
	char off[32];
	int r;

	snprintf(off, sizeof(off), "%" PRIu64, rec_off);
	*ret_saw_offset = false;
	CHECK(decoder_open((const char *const[]){ path }, 1, &d) == 0);
	while ((r = decoder_next(d, &ev)) != 0) {
		if (r > 0) {
			events++;
			continue;
		}
		errors++;
		if (strstr(decoder_error(d), "malformed page") && strstr(decoder_error(d), off))
			*ret_saw_offset = true;
	}
	*ret_errors = errors;
	*ret_bad_pages = decoder_bad_pages(d);
	decoder_free(d);
	return events;
}

/*
 * A page whose padding length is -4 makes kbuffer loop for ever: the
 * decoder rejects it with its offset, and decodes the pages around it.
 */
static void test_hostile_page(void)
{
	_cleanup_free_ char *good = NULL, *bad = NULL;
	struct segment_writer *w;
	struct buf b = {};
	uint64_t bad_pages, rec_off = 0;
	size_t errors, n_good, n_bad;
	bool saw;

	w = seg_open(dir, "00000020-good", NULL);
	add_pages(w, 0, 0, 1);
	add_pages(w, 0, 2, 4);
	good = seg_finish(w);

	w = seg_open(dir, "00000021-bad", NULL);
	for (int i = 0; i < 4; i++) {
		uint8_t pg[PAGE];
		int len;

		memcpy(pg, raw[i], PAGE);
		if (i == 1) {
			put_le32(pg + 16, 1u << 5 | 29);	/* padding, delta 1 */
			put_le32(pg + 20, 0xfffffffc);
		}
		len = page_walk_stored_len(&(struct page_format){ 8, false, PAGE }, pg, PAGE);
		CHECK(len > 0);
		CHECK(buf_append(&b, pg, (size_t)len) == 0);
	}
	rec_off = segment_writer_size(w);
	CHECK(segment_writer_append(w, SEGMENT_REC_PAGES, 0, b.data, b.len, 1, NULL) == 0);
	buf_done(&b);
	bad = seg_finish(w);

	alarm(60);	/* a hang fails the test instead of stalling the suite */
	n_good = decode_count(good, &errors, &bad_pages, &saw, rec_off);
	CHECK(errors == 0 && bad_pages == 0);
	n_bad = decode_count(bad, &errors, &bad_pages, &saw, rec_off);
	alarm(0);
	CHECK_MSG(n_bad == n_good, "%zu events around the bad page, %zu without it", n_bad, n_good);
	CHECK(n_good > 0);
	CHECK(errors == 1 && bad_pages == 1);
	CHECK(saw);
}

static void test_open_errors(void)
{
	_cleanup_free_ char *junk = NULL, *msg = NULL;
	struct decoder_segment *s = NULL;
	struct decoder *d;
	struct decoded_event ev;
	int fd;

	CHECK(decoder_open(NULL, 0, &d) == -EINVAL);
	CHECK_ABORTS(decoder_next(NULL, &ev));
	CHECK_ABORTS(decoder_segment_load("x.smseg", NULL, NULL));
	CHECK(strprintf(&junk, "%s/junk.smseg", dir) == 0);
	fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "not a segment at all, not at all", 32) == 32);
	close(fd);
	CHECK(decoder_segment_load(junk, &s, &msg) == -EBADMSG);
	CHECK(msg && strstr(msg, junk));
	CHECK(decoder_open((const char *const[]){ junk }, 1, &d) == 0);
	CHECK(decoder_next(d, &ev) == -EBADMSG);
	CHECK(strstr(decoder_error(d), junk));
	CHECK(decoder_next(d, &ev) == 0);
	decoder_free(d);
	CHECK(decoder_free(NULL) == NULL && decoder_segment_free(NULL) == NULL);
}

static int put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

/*
 * A segment without a kallsyms subset (being written, or cut short) is
 * symbolized with the running kernel's symbols if it is of the current
 * boot, and only then; one with a subset uses its own.
 */
static void test_live_symbols(void)
{
	static const char live[] = "ffffffff81000000 T _stext\nffffffff81000100 T live_func\n"
				   "ffffffff81000200 T live_next\n";
	static const char own[] = "ffffffff81000100 T own_func\nffffffff81000180 ? .end\n";
	_cleanup_free_ char *boot = NULL, *syms = NULL, *bare = NULL, *with = NULL;
	struct decoder_segment *s;
	struct segment_writer *w;
	char sym[64];
	uint64_t serial;

	CHECK(asprintf(&boot, "%s/boot_id", dir) > 0 && asprintf(&syms, "%s/kallsyms", dir) > 0);
	CHECK(put_file(syms, live) == 0);
	bare = seg_finish(seg_open(dir, "0000000a-nosyms", "boot_id=1b2c-this\n"));
	w = seg_open(dir, "0000000b-syms", "boot_id=1b2c-this\n");
	CHECK(segment_writer_append_file(w, "kallsyms", own, strlen(own), 0) == 0);
	with = seg_finish(w);

	/* this boot */
	CHECK(put_file(boot, "1b2c-this\n") == 0);
	ksyms_live_set_source(boot, syms);
	CHECK(decoder_segment_load(bare, &s, NULL) == 0);
	CHECK(decoder_segment_symbolize(s, 0xffffffff81000110, false, sym, sizeof(sym)) > 0);
	CHECK_MSG(streq(sym, "live_func"), "%s", sym);
	CHECK(tep_find_function(decoder_segment_tep(s), 0xffffffff81000120) &&
	      streq(tep_find_function(decoder_segment_tep(s), 0xffffffff81000120), "live_func"));
	serial = decoder_segment_serial(s);
	CHECK(serial > 0);
	decoder_segment_free(s);
	/* its own subset wins, also where it places nothing */
	CHECK(decoder_segment_load(with, &s, NULL) == 0);
	/* a segment loaded after another was freed is told apart, whatever its address */
	CHECK(decoder_segment_serial(s) > serial);
	CHECK(decoder_segment_symbolize(s, 0xffffffff81000110, false, sym, sizeof(sym)) > 0 &&
	      streq(sym, "own_func"));
	CHECK(decoder_segment_symbolize(s, 0xffffffff81000210, false, sym, sizeof(sym)) > 0 &&
	      streq(sym, "0xffffffff81000210"));
	decoder_segment_free(s);

	/* another boot: addresses */
	CHECK(put_file(boot, "9f8e-other\n") == 0);
	ksyms_live_set_source(boot, syms);
	CHECK(decoder_segment_load(bare, &s, NULL) == 0);
	CHECK(decoder_segment_symbolize(s, 0xffffffff81000110, false, sym, sizeof(sym)) > 0);
	CHECK_MSG(streq(sym, "0xffffffff81000110"), "%s", sym);
	CHECK(!tep_find_function(decoder_segment_tep(s), 0xffffffff81000110));
	decoder_segment_free(s);

	/* no boot id in META: never the running kernel's */
	free(bare);
	bare = seg_finish(seg_open(dir, "0000000c-noboot", NULL));
	CHECK(put_file(boot, "\n") == 0);
	ksyms_live_set_source(boot, syms);
	CHECK(decoder_segment_load(bare, &s, NULL) == 0);
	CHECK(decoder_segment_symbolize(s, 0xffffffff81000110, false, sym, sizeof(sym)) > 0 &&
	      streq(sym, "0xffffffff81000110"));
	decoder_segment_free(s);
	ksyms_live_set_source("/proc/sys/kernel/random/boot_id", "/proc/kallsyms");
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *pages = NULL;
	size_t len = 0;

	pages = test_page_data("cpu0.raw", &len);
	if (len < sizeof(raw)) {
		fprintf(stderr, "tests/data/pages/cpu0.raw is too short\n");
		return 99;
	}
	memcpy(raw, pages, sizeof(raw));
	/* --split DIR: only write the two segments of test_split_stack_owner() (for the CLI tests) */
	if (argc == 3 && streq(argv[1], "--split")) {
		_cleanup_free_ char *p1 = NULL, *p2 = NULL;

		if (split_segments(argv[2], "00000001-split", "00000002-split", "test-split", &p1,
				   &p2, &len))
			printf("%s\n%s\n", p1, p2);
		return tests_done("test-decode --split");
	}
	dir = test_tmpdir();

	test_real_pages();
	test_idle_cpu();
	test_damaged();
	test_stack_refs();
	test_stack_ids();
	test_lost_stacks();
	test_lost_before_time_extend();
	test_open_errors();
	test_hostile_page();
	test_live_symbols();
	test_window_stacks();
	test_window_stacks_segments();
	test_split_stack_owner();
	test_capture_copy();

	test_rmtree(dir);
	free(dir);
	return tests_done("test-decode");
}
