/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Segments -> time-ordered events (decode.h).
 *
 * decode-segment.c reads each segment's tables and hands out each CPU's
 * records of it. Here one cursor per CPU walks that CPU's pages with
 * kbuffer, each page checked by the page walker first (a malformed page
 * is counted and reported, never parsed), and carries the CPU's stream
 * from one segment into the next; a heap merges the cursors by timestamp. At most two consecutive segments
 * are open: a cursor that reaches the end of the newer one waits until
 * every cursor has left the older one, which is then closed and its
 * problems reported.
 */
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>

#include <event-parse.h>
#include <kbuffer.h>

#include "budget.h"
#include "decode-internal.h"
#include "page-walk.h"
#include "segment.h"
#include "stacktab-resolve.h"
#include "util.h"

/* What the CPUs' cursors may hold at once: half of DECODE_MAX_HELD. */
#define DEFAULT_LOOKAHEAD (DECODE_MAX_HELD / 2)

/*
 * Zeroed room after each page buffer: an event's fields are checked
 * against its record before it is printed (decode_event_fits()), but a
 * string that is not terminated in the page must still end in zeros.
 */
#define PAGE_SLACK ((size_t)4096)

static void *mfree(void *p)
{
	free(p);
	return NULL;
}

/* ---- cursors and the merge ---- */

enum cursor_state {
	CURSOR_IN,	/* reading its segment */
	CURSOR_PARKED,	/* at the end of the newer open segment, waiting for the older to close */
	CURSOR_DONE,
};

struct cursor {
	unsigned int cpu;
	size_t seg;
	enum cursor_state state;
	struct item *item;	/* the PAGES payload being read */
	size_t pos;		/* next page in it */
	uint8_t *page;		/* page_size + PAGE_SLACK bytes, zero after page_dirty */
	size_t page_cap, page_dirty, page_len;
	bool page_loaded;
	struct kbuffer *kbuf;

	bool has_head;		/* the next event of this CPU: */
	void *data;
	int size;
	unsigned long long ts;
	long long lost;		/* events lost before it */

	uint64_t lost_total;
	struct tep_event *owner;
	uint64_t *ips;
	size_t ips_cap;

	/*
	 * Whether the last event's stack is still to come (stack-expect.h);
	 * missing: it never came, say so before the next event.
	 */
	struct stack_expect expect;
	bool missing;
	uint64_t want_ts;
	struct tep_event *want_event;
	size_t want_seg;

	/* with a time window: whether the last event was in it (none yet: no) */
	bool event_in_window;
	/* whether the last event was read from another copy (decoder_segment_overlapped()) */
	bool overlap_skipped;
};

struct seg_slot {
	const char *path;
	struct decoder_segment *s;	/* NULL until opened, after closing, or if unreadable */
	int open_error;
	char *open_message;
	unsigned int users;		/* cursors inside */
	bool opened;
};

struct msg {
	int code;
	char *text;
};

struct decoder {
	struct seg_slot *segs;
	size_t nr_segs;
	size_t cur;			/* oldest segment not closed */
	struct cursor **cursors;	/* by CPU, NULL if none */
	size_t nr_cursors, cap_cursors;
	struct cursor **heap;		/* cursors with a head, min-heap on (ts, cpu) */
	size_t heap_len, cap_heap;
	struct cursor **pending;	/* cursors that need their next event read */
	size_t nr_pending, cap_pending;
	struct cursor *last;		/* whose event decoder_next() returned last */
	struct msg *msgs;		/* problems to report, oldest first */
	size_t nr_msgs, first_msg, cap_msgs;
	char *error;
	struct tep_record record;
	struct stacktab_stats stats;	/* of closed segments */
	size_t lookahead;
	size_t held;			/* payload and page bytes the cursors hold */
	uint64_t bad_pages;		/* pages the page walker rejected */
	struct decoder_filter filter;
	uint64_t frames_read;		/* by closed segments */
	uint64_t bad_events;		/* events whose fields do not fit their record */
	/*
	 * Stacks lost in a strict reset pause (DECODED_STACK_MISSING), and
	 * stack ids written after the boundary that followed their event
	 */
	uint64_t missing;
	size_t charged;			/* the cursors' share of the readers' budget */
	const struct decoder_overlap_plan *plan;	/* borrowed; NULL: none */
};

int decoder_open(const char *const *paths, size_t n, struct decoder **ret)
{
	struct decoder *d;

	assert(ret);

	if (n == 0)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->segs = calloc(n, sizeof(*d->segs));
	/* what the cursors may hold (held, below) is taken from the budget at once */
	if (!d->segs || budget_charge(&d->charged, DECODE_MAX_HELD / 2,
				      "the pages and frames held for merging CPUs") < 0) {
		free(d->segs);
		free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		d->segs[i].path = paths[i];
	d->nr_segs = n;
	d->lookahead = DEFAULT_LOOKAHEAD;
	d->filter = DECODER_FILTER_ALL;
	*ret = d;
	return 0;
}

int decoder_set_filter(struct decoder *d, const struct decoder_filter *f)
{
	assert(d);

	if (!f || f->cpu < -1 || f->since > f->until || f->wall_since > f->wall_until)
		return -EINVAL;
	d->filter = *f;
	return 0;
}

void decoder_set_overlap_plan(struct decoder *d, const struct decoder_overlap_plan *p)
{
	assert(d);
	d->plan = p;
}

uint64_t decoder_frames_read(const struct decoder *d)
{
	uint64_t n;

	assert(d);
	n = d->frames_read;
	for (size_t k = d->cur; k < d->nr_segs; k++)
		n += decoder_segment_frames_read(d->segs[k].s);
	return n;
}

void decoder_set_lookahead_limit(struct decoder *d, size_t bytes)
{
	assert(d);
	d->lookahead = MIN(bytes, DEFAULT_LOOKAHEAD);
}

const char *decoder_error(const struct decoder *d)
{
	assert(d);
	return d->error;
}

uint64_t decoder_lost_events(const struct decoder *d, unsigned int cpu)
{
	assert(d);
	return cpu < d->nr_cursors && d->cursors[cpu] ? d->cursors[cpu]->lost_total : 0;
}

uint64_t decoder_bad_pages(const struct decoder *d)
{
	assert(d);
	return d->bad_pages;
}

uint64_t decoder_bad_events(const struct decoder *d)
{
	assert(d);
	return d->bad_events;
}

static void add_stats(struct stacktab_stats *to, const struct stacktab *t)
{
	struct stacktab_stats st;

	stacktab_get_stats(t, &st);
	for (int k = 0; k < STACKTAB_KIND_MAX; k++) {
		to->resolved[k] += st.resolved[k];
		to->unresolved[k] += st.unresolved[k];
	}
}

void decoder_get_stats(const struct decoder *d, struct stacktab_stats *ret)
{
	assert(d);
	assert(ret);

	*ret = d->stats;
	/* a stack lost in a reset pause would have been a kernel stack id */
	ret->unresolved[STACKTAB_KERNEL_ID] += d->missing;
	for (size_t i = d->cur; i < d->nr_segs; i++)
		if (d->segs[i].s)
			add_stats(ret, d->segs[i].s->tab);
}

static int push_msg(struct decoder *d, int code, char *text)
{
	if (!text)
		return -ENOMEM;
	if (GREEDY_REALLOC(d->msgs, d->cap_msgs, d->nr_msgs + 1) < 0) {
		free(text);
		return -ENOMEM;
	}
	d->msgs[d->nr_msgs++] = (struct msg){ code, text };
	return 0;
}

static bool cursor_before(const struct cursor *a, const struct cursor *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->cpu < b->cpu);
}

static void heap_down(struct decoder *d, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct cursor *t;

		if (l < d->heap_len && cursor_before(d->heap[l], d->heap[m]))
			m = l;
		if (l + 1 < d->heap_len && cursor_before(d->heap[l + 1], d->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		t = d->heap[i];
		d->heap[i] = d->heap[m];
		d->heap[m] = t;
		i = m;
	}
}

static void heap_push(struct decoder *d, struct cursor *c)
{
	size_t i = d->heap_len++;

	d->heap[i] = c;
	while (i > 0 && cursor_before(d->heap[i], d->heap[(i - 1) / 2])) {
		struct cursor *t = d->heap[i];

		d->heap[i] = d->heap[(i - 1) / 2];
		d->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct decoder *d)
{
	d->heap[0] = d->heap[--d->heap_len];
	heap_down(d, 0);
}

static struct cursor *cursor_free(struct cursor *c)
{
	if (!c)
		return NULL;
	free(c->item);
	free(c->page);
	if (c->kbuf)
		kbuffer_free(c->kbuf);
	free(c->ips);
	free(c);
	return NULL;
}

/* Prepare c to read pages of s (long size and byte order may differ between segments). */
static int cursor_setup(struct cursor *c, const struct decoder_segment *s)
{
	if (c->kbuf)
		kbuffer_free(c->kbuf);
	c->kbuf = kbuffer_alloc(s->long_size == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
				s->big_endian ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	if (!c->kbuf)
		return -ENOMEM;
	if (tep_is_old_format(s->tep))
		kbuffer_set_old_format(c->kbuf);
	c->page_loaded = false;
	c->overlap_skipped = false;
	return 0;
}

/*
 * The event c's next stack follows, as an event of s: the kernel writes a
 * stack after its event, so the first entry of a segment can be the stack
 * of the last event of the one before (the window rule of
 * entry_in_window() follows the same event across). from is the segment
 * c leaves (NULL: none, or unreadable); events of another boot are not
 * followed.
 */
static struct tep_event *owner_in(const struct cursor *c, const struct decoder_segment *from,
				  const struct decoder_segment *s)
{
	const char *b1, *b2;

	if (!c->owner || !from || !s)
		return NULL;
	b1 = decoder_segment_meta(from, "boot_id");
	b2 = decoder_segment_meta(s, "boot_id");
	if (b1 && b2 && !streq(b1, b2))
		return NULL;
	return tep_find_event_by_name(s->tep, c->owner->system, c->owner->name);
}

static int add_pending(struct decoder *d, struct cursor *c)
{
	if (GREEDY_REALLOC(d->pending, d->cap_pending, d->nr_pending + 1) < 0)
		return -ENOMEM;
	d->pending[d->nr_pending++] = c;
	return 0;
}

static int cursor_join(struct decoder *d, struct cursor *c, size_t k);

/* Read segment k's tables; give every CPU it has data for and that has no cursor yet one. */
static int slot_open(struct decoder *d, size_t k)
{
	struct seg_slot *slot = &d->segs[k];
	struct decoder_segment *s;
	int r;

	if (slot->opened)
		return 0;
	slot->opened = true;
	r = decoder_segment_load_filtered(slot->path, &d->filter, &slot->s, &slot->open_message);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		slot->open_error = r;
		return 0;
	}
	s = slot->s;
	r = decode_apply_plan(d->plan, s);
	if (r < 0)
		return r;
	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
		struct cursor *c;

		if (!s->cpus[cpu].total || (cpu < d->nr_cursors && d->cursors[cpu]))
			continue;
		if (cpu >= d->nr_cursors) {
			/* the heap holds at most one cursor per CPU */
			if (GREEDY_REALLOC0(d->cursors, d->cap_cursors, (size_t)cpu + 1) < 0 ||
			    GREEDY_REALLOC(d->heap, d->cap_heap, (size_t)cpu + 1) < 0)
				return -ENOMEM;
			d->nr_cursors = cpu + 1;
		}
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		d->cursors[cpu] = c;
		c->cpu = cpu;
		r = cursor_join(d, c, k);
		if (r < 0)
			return r;
	}
	return 0;
}

static int slot_close(struct decoder *d, size_t k)
{
	struct seg_slot *slot = &d->segs[k];
	int r = 0;

	if (slot->open_error) {
		if (!slot->open_message && asprintf(&slot->open_message, "'%s': %s", slot->path,
						    strerror(-slot->open_error)) < 0)
			slot->open_message = NULL;
		r = push_msg(d, slot->open_error, steal_ptr(slot->open_message));
	}
	if (slot->s) {
		if (slot->s->unfinished)
			r = push_msg(d, -EINPROGRESS, steal_ptr(slot->s->unfinished));
		for (size_t i = 0; r >= 0 && i < slot->s->nr_errors; i++)
			r = push_msg(d, -EBADMSG, steal_ptr(slot->s->errors[i]));
		add_stats(&d->stats, slot->s->tab);
		d->frames_read += decoder_segment_frames_read(slot->s);
		slot->s = decoder_segment_free(slot->s);
	}
	return r;
}

static int cursor_enter(struct decoder *d, struct cursor *c, size_t k)
{
	int r;

	r = slot_open(d, k);
	if (r < 0)
		return r;
	/* the segment c leaves is still open: it closes once no cursor is in it */
	c->owner = owner_in(c, d->segs[c->seg].s, d->segs[k].s);
	c->seg = k;
	c->state = CURSOR_IN;
	d->segs[k].users++;
	if (d->segs[k].s) {
		r = cursor_setup(c, d->segs[k].s);
		if (r < 0)
			return r;
	}
	return 1;
}

/* c has read all of its segment: go on into the next one, or wait, or stop. */
static int cursor_leave(struct decoder *d, struct cursor *c)
{
	d->segs[c->seg].users--;
	/* the segment ends after a boundary, before the stack: it is lost */
	c->missing = stack_expect_end(&c->expect);
	if (c->seg + 1 >= d->nr_segs) {
		c->state = CURSOR_DONE;
		return 0;
	}
	if (c->seg > d->cur) {
		c->state = CURSOR_PARKED;
		return 0;
	}
	return cursor_enter(d, c, c->seg + 1);
}

/* Enter segment k with a cursor that is not pending (new or parked), and make it pending. */
static int cursor_join(struct decoder *d, struct cursor *c, size_t k)
{
	int r;

	r = cursor_enter(d, c, k);
	if (r < 0)
		return r;
	return add_pending(d, c);
}

/*
 * A page that the walker rejects is counted and reported, never handed to
 * kbuffer. When its header is bad, the next page cannot be found: the rest
 * of the record goes with it.
 */
static void cursor_bad_page(struct decoder *d, struct cursor *c, struct decoder_segment *s,
			    size_t page_off, size_t bad_off, const char *why, bool rest)
{
	d->bad_pages++;
	decoder_segment_add_error(s, "'%s': CPU %u: malformed page at offset %zu of the record at "
				  "offset %" PRIu64 " (byte %zu: %s), %s", s->path, c->cpu,
				  page_off, c->item->offset, bad_off, why,
				  rest ? "the rest of that record is skipped" : "page skipped");
}

/*
 * Room for a page of len bytes and its slack in c's page buffer, within
 * the decoder's memory limit: 1, 0 if over the limit, or -ENOMEM.
 */
static int page_room(struct decoder *d, struct cursor *c, size_t len)
{
	size_t need = len + PAGE_SLACK;
	uint8_t *n;

	if (c->page_cap >= need)
		return 1;
	if (d->held - c->page_cap + need > DECODE_MAX_HELD / 2)
		return 0;
	n = calloc(1, need);
	if (!n)
		return -ENOMEM;
	free(c->page);
	d->held = d->held - c->page_cap + need;
	c->page = n;
	c->page_cap = need;
	c->page_dirty = 0;
	return 1;
}

/*
 * Copy the next well-formed page of the current payload into the page
 * buffer and load it into kbuffer; malformed pages are reported and
 * skipped. Returns 1, 0 when the payload has no more pages, or -ENOMEM
 * when the page buffer cannot grow.
 */
static int cursor_load_page(struct decoder *d, struct cursor *c, struct decoder_segment *s)
{
	struct page_format f;
	const char *why = NULL;
	size_t bad = 0;
	int len, missed, r;

	if (!s)
		return 0;
	f = (struct page_format){ s->long_size, s->big_endian, s->page_size };
	while (c->item && c->pos < c->item->len) {
		const uint8_t *p;
		size_t page_off;
		struct page_walk w;

		(void)page_walk_skip_empty(&f, c->item->data, c->item->len, &c->pos);
		if (c->pos >= c->item->len)
			break;
		p = c->item->data + c->pos;
		page_off = c->pos;
		if (page_walk_payload_next(&w, &f, c->item->data, c->item->len, &c->pos) < 0) {
			cursor_bad_page(d, c, s, page_off, w.error_offset,
					w.error ? w.error : "bad page format", true);
			continue;
		}
		len = page_walk_check(&f, p, w.stored_len, &bad, &why);
		if (len < 0) {
			cursor_bad_page(d, c, s, page_off, bad, why, false);
			continue;
		}
		r = page_room(d, c, (size_t)len);
		if (r < 0)
			return r;
		if (r == 0) {
			cursor_bad_page(d, c, s, page_off, 0, "beyond the reader's memory limit", false);
			continue;
		}
		memcpy(c->page, p, (size_t)len);
		if (c->page_dirty > (size_t)len)
			memset(c->page + len, 0, c->page_dirty - (size_t)len);
		c->page_dirty = c->page_len = (size_t)len;
		if (kbuffer_load_subbuffer(c->kbuf, c->page) < 0) {
			cursor_bad_page(d, c, s, page_off, 0, "kbuffer refused it", false);
			continue;
		}
		c->page_loaded = true;
		/*
		 * From the header: kbuffer_missed_events() answers only while
		 * its first event is at offset 0, not after a time extend.
		 */
		missed = !(w.commit_word & PAGE_MISSED_EVENTS) ? 0 :
			 (w.commit_word & PAGE_MISSED_STORED) && w.missed <= INT_MAX ? (int)w.missed : -1;
		if (missed) {
			c->lost = (missed < 0 || c->lost < 0) ? -1 : c->lost + missed;
			if (missed > 0)
				c->lost_total += (uint64_t)missed;
		}
		return 1;
	}
	return 0;
}

/* An event whose record its format does not fit is counted and reported, never printed. */
static bool event_fits(struct decoder *d, struct cursor *c, struct decoder_segment *s,
		       const void *data, int size)
{
	if (decode_record_fits(s, data, size))
		return true;
	d->bad_events++;
	decoder_segment_add_error(s, "'%s': CPU %u: an event in the record at offset %" PRIu64
				  " is shorter than its format, skipped", s->path, c->cpu,
				  c->item->offset);
	return false;
}

/* Whether the entry at data is a stack entry of s. */
static bool entry_is_stack(const struct decoder_segment *s, void *data, int size)
{
	struct tep_record rec = { .data = data, .size = size };
	int type = tep_data_type(s->tep, &rec);

	for (int k = DECODED_KERNEL_STACK; k <= DECODED_STACK_REF; k++)
		if (type == s->stack_type[k])
			return true;
	return false;
}

/*
 * Whether the entry at data (time ts) lies in the time window asked for. A
 * stack entry goes with the event before it on its CPU, which it follows
 * by the time the kernel took to unwind: it is in the window when that
 * event is. So an event at the window's end keeps its stack, and an event
 * just before its start (or one not read) leaves no stack in the window.
 */
static bool entry_in_window(const struct decoder *d, struct cursor *c,
			    const struct decoder_segment *s, unsigned long long ts, void *data,
			    int size)
{
	bool in = decoder_segment_wants_ts(s, &d->filter, ts);

	if (d->filter.since == 0 && d->filter.until == UINT64_MAX &&
	    !decoder_segment_wall_placed(s))
		return true;
	if (entry_is_stack(s, data, size))
		return c->event_in_window;
	c->event_in_window = in;
	return in;
}

/* Find c's next event: afterwards c has a head, or is parked or done. 0 or -ENOMEM. */
static int cursor_next(struct decoder *d, struct cursor *c)
{
	unsigned long long ts = 0;
	void *data = NULL;
	int r;

	c->has_head = false;
	if (c->page_loaded)
		data = kbuffer_next_event(c->kbuf, &ts);
	for (;;) {
		struct decoder_segment *s = d->segs[c->seg].s;
		struct item *it;

		if (data) {
			size_t off = (size_t)((uint8_t *)data - c->page);
			int size = kbuffer_event_size(c->kbuf);

			if (size >= 0 && off + (size_t)size <= c->page_len &&
			    (!entry_in_window(d, c, s, ts, data, size) ||
			     ((s->nr_overlap || s->nr_yield) &&
			      decoder_segment_overlapped(s, c->cpu, ts, data, size,
							 &c->overlap_skipped)) ||
			     !event_fits(d, c, s, data, size))) {
				/* outside the window asked for, or its fields do not fit its record */
				data = kbuffer_next_event(c->kbuf, &ts);
				continue;
			}
			if (size >= 0 && off + (size_t)size <= c->page_len) {
				c->data = data;
				c->size = size;
				c->ts = ts;
				c->has_head = true;
				if (stack_expect_lost(&c->expect) && !entry_is_stack(s, c->data, c->size))
					c->missing = true;
				return 0;
			}
			r = -EBADMSG;
		} else {
			r = cursor_load_page(d, c, s);
			if (r == -ENOMEM)
				return r;
		}
		if (r > 0) {
			data = kbuffer_read_event(c->kbuf, &ts);
			continue;
		}
		data = NULL;
		c->page_loaded = false;
		if (r < 0) {
			decoder_segment_add_error(s, "'%s': CPU %u: malformed page in the record at offset %" PRIu64
				  ", the rest of that record is skipped", s->path, c->cpu,
				  c->item->offset);
			c->pos = c->item->len;
			c->owner = NULL;
			continue;
		}

		if (c->item)
			d->held -= c->item->len;
		c->item = mfree(c->item);
		r = decoder_segment_next_item(s, c->cpu, DECODE_MAX_HELD / 2 - MIN(d->held, DECODE_MAX_HELD / 2), &it);
		if (r < 0)
			return r;
		if (r > 0 && it->boundary) {
			stack_expect_boundary(&c->expect);
			r = stacktab_cpu_boundary(s->tab, c->cpu, it->generation);
			free(it);
			if (r == -ENOMEM)
				return r;
			continue;
		}
		if (r > 0) {
			d->held += it->len;
			c->item = it;
			c->pos = 0;
			continue;
		}
		r = cursor_leave(d, c);
		if (r <= 0)
			return r;
	}
}

/* Close the oldest segment once no cursor is inside; let waiting cursors go on. */
static int advance_window(struct decoder *d)
{
	int r;

	while (d->cur < d->nr_segs) {
		r = slot_open(d, d->cur);
		if (r < 0)
			return r;
		if (d->segs[d->cur].users > 0)
			return 0;
		r = slot_close(d, d->cur);
		if (r < 0)
			return r;
		d->cur++;
		for (size_t i = 0; i < d->nr_cursors; i++) {
			struct cursor *c = d->cursors[i];

			if (!c || c->state != CURSOR_PARKED)
				continue;
			r = cursor_join(d, c, c->seg + 1);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int fill_event(struct decoder *d, struct cursor *c, struct decoded_event *ev)
{
	struct decoder_segment *s = d->segs[c->seg].s;
	bool after_pause;
	int type, r = 0;

	d->record = (struct tep_record){
		.ts = c->ts, .cpu = (int)c->cpu, .data = c->data, .size = c->size,
		.record_size = c->size, .missed_events = c->lost, .locked = 1,
	};
	*ev = (struct decoded_event){
		.cpu = c->cpu, .ts = c->ts, .segment = s->path, .seg = s, .tep = s->tep,
		.record = &d->record, .lost_before = c->lost,
	};
	if (c->lost)
		c->owner = NULL;
	c->lost = 0;

	type = tep_data_type(s->tep, &d->record);
	ev->event = tep_find_event(s->tep, type);
	for (int k = DECODED_KERNEL_STACK; k <= DECODED_STACK_REF; k++)
		if (type == s->stack_type[k])
			ev->kind = (enum decoded_stack)k;
	if (ev->kind == DECODED_NOT_STACK) {
		c->owner = ev->event;
		/* a lost stack was reported when this event became the head */
		(void)stack_expect_event(&c->expect, stack_expect_types_has(&s->wants_stack, type));
		c->want_ts = c->ts;
		c->want_event = ev->event;
		c->want_seg = c->seg;
		return 0;
	}
	ev->is_stack = true;
	ev->owner = c->owner;
	after_pause = stack_expect_stack(&c->expect);
	if (ev->kind == DECODED_KERNEL_STACK) {
		r = decode_read_callers(s, c->data, c->size, &c->ips, &c->ips_cap, ev);
	} else if (ev->kind == DECODED_STACK_ID && after_pause) {
		/* looked up before the pause, written after it: its generation is not known */
		decode_resolve_ref(s, c->data, ev, "its event came before a strict generation boundary");
		d->missing++;
	} else {
		decode_resolve_ref(s, c->data, ev, NULL);
	}
	return r;
}

/* The stack that c's last event wanted never came: a DECODED_STACK_MISSING entry. */
static void fill_missing(struct decoder *d, struct cursor *c, struct decoded_event *ev)
{
	struct decoder_segment *s = d->segs[c->want_seg].s;

	if (!s)
		s = d->segs[c->seg].s;
	*ev = (struct decoded_event){
		.cpu = c->cpu, .ts = c->want_ts, .segment = s ? s->path : d->segs[c->seg].path,
		.seg = s, .tep = s ? s->tep : NULL, .kind = DECODED_STACK_MISSING,
		.is_stack = true, .owner = c->want_event,
		.unresolved_reason = "no stack: tracing was paused for a stack map reset before "
				     "it was written",
	};
	c->missing = false;
	d->missing++;
}

int decoder_next(struct decoder *d, struct decoded_event *ev)
{
	int r;

	assert(d);
	assert(ev);

	d->error = mfree(d->error);
	if (d->last) {
		struct cursor *c = d->last;

		/* The previous event's data lived in c's page: only now may c move on. */
		d->last = NULL;
		r = cursor_next(d, c);
		if (r < 0)
			return r;
		if (c->has_head)
			heap_down(d, 0);
		else
			heap_pop(d);
		/* right after the event it belongs to, before any other */
		if (c->missing) {
			fill_missing(d, c, ev);
			return 1;
		}
	}
	for (;;) {
		if (d->first_msg < d->nr_msgs) {
			struct msg *m = &d->msgs[d->first_msg++];

			d->error = steal_ptr(m->text);
			return m->code;
		}
		if (d->nr_pending) {
			struct cursor *c = d->pending[--d->nr_pending];

			r = cursor_next(d, c);
			if (r < 0)
				return r;
			if (c->has_head)
				heap_push(d, c);
			continue;
		}
		r = advance_window(d);
		if (r < 0)
			return r;
		if (d->first_msg < d->nr_msgs || d->nr_pending)
			continue;
		if (!d->heap_len)
			return 0;
		break;
	}
	r = fill_event(d, d->heap[0], ev);
	if (r < 0)
		return r;
	d->last = d->heap[0];
	return 1;
}

struct decoder *decoder_free(struct decoder *d)
{
	if (!d)
		return NULL;
	for (size_t i = 0; i < d->nr_cursors; i++)
		cursor_free(d->cursors[i]);
	free(d->cursors);
	for (size_t i = 0; i < d->nr_segs; i++) {
		decoder_segment_free(d->segs[i].s);
		free(d->segs[i].open_message);
	}
	free(d->segs);
	for (size_t i = d->first_msg; i < d->nr_msgs; i++)
		free(d->msgs[i].text);
	free(d->msgs);
	free(d->heap);
	free(d->pending);
	free(d->error);
	budget_release_all(&d->charged);
	free(d);
	return NULL;
}
