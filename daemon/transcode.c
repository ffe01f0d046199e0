/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Page transcoding (transcode.h). Pages are walked with the page walker
 * (lib/segment/page-walk.c), which decides what a well-formed page is. Every event
 * keeps its header when copied, so the time deltas and therefore all
 * timestamps are preserved exactly; only a kernel_stack entry's payload is
 * replaced by a shorter one. The deduplicated stack table that the readers
 * share lives here too.
 */
#include <assert.h>
#include <pthread.h>

#include "hashtab.h"
#include "transcode.h"
#include "util.h"

#define TRANSCODER_CACHE 4096
#define DEDUP_RESERVE 4096

struct stackdedup {
	pthread_mutex_t lock;
	struct hashtab stacks;		/* values: struct dstack *, owned */
	size_t count;
	size_t max_stacks;
	atomic_uint_fast64_t overflows;
};

int page_layout_parse(const char *header_page, struct page_layout *ret)
{
	unsigned int size;
	int r;

	assert(header_page);
	assert(ret);

	r = page_walk_header_commit_size(header_page, &size);
	if (r < 0)
		return r;
	ret->commit_offset = 8;
	ret->commit_size = size;
	ret->data_offset = 8 + size;
	return 0;
}

int page_layout_stack_ref_format(int id, struct buf *out)
{
	assert(out);
	return buf_printf(out,
			  "name: stack_ref\n"
			  "ID: %d\n"
			  "format:\n"
			  FTRACE_COMMON_FIELDS_FORMAT
			  "\n"
			  "\tfield:unsigned int stack_ref;\toffset:8;\tsize:4;\tsigned:0;\n"
			  "\tfield:unsigned int nr_frames;\toffset:12;\tsize:4;\tsigned:0;\n"
			  "\n"
			  "print fmt: \"<stack_ref %%u>\", REC->stack_ref\n",
			  id);
}

int page_layout_stack_ref_id(const struct named_text *files, size_t nr, int preferred)
{
	int id = preferred;

	for (bool clash = true; clash; ) {
		clash = false;
		for (size_t i = 0; i < nr; i++) {
			const char *p = strstr(files[i].data, "\nID: ");

			if (streq(files[i].name, STACK_REF_FORMAT_NAME))
				continue;
			if (startswith(files[i].name, "events/") && p && atoi(p + 5) == id) {
				id--;
				clash = true;
			}
		}
	}
	return id;
}

/* ---- the shared stack table ---- */

struct stackdedup *stackdedup_new(size_t max_stacks)
{
	struct stackdedup *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	/* room for the first stacks, so that boot does not rehash under the lock */
	if (hashtab_reserve(&d->stacks, DEDUP_RESERVE) < 0) {
		free(d);
		return NULL;
	}
	d->max_stacks = max_stacks;
	pthread_mutex_init(&d->lock, NULL);
	return d;
}

struct stackdedup *stackdedup_free(struct stackdedup *d)
{
	if (!d)
		return NULL;
	hashtab_done_free(&d->stacks);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return NULL;
}

size_t stackdedup_count(struct stackdedup *d)
{
	size_t n;

	assert(d);

	pthread_mutex_lock(&d->lock);
	n = d->count;
	pthread_mutex_unlock(&d->lock);
	return n;
}

uint64_t stackdedup_overflows(struct stackdedup *d)
{
	assert(d);
	return atomic_load(&d->overflows);
}

static bool dstack_matches(const struct dstack *s, uint64_t hash, const uint8_t *ips, uint16_t nr)
{
	return s->hash == hash && s->nr == nr && memcmp(s->ips, ips, 8u * nr) == 0;
}

/* Find or insert; NULL when the table is full or memory ran out. */
static struct dstack *dedup_get(struct stackdedup *d, uint64_t hash, const uint8_t *ips, uint16_t nr)
{
	struct hashtab_slot *slot;
	struct dstack *s;

	pthread_mutex_lock(&d->lock);
	hashtab_foreach_candidate(slot, &d->stacks, hash) {
		s = (struct dstack *)slot->val;
		if (dstack_matches(s, hash, ips, nr))
			goto out;
	}
	s = NULL;
	/* the room first: a stack that cannot be indexed is never made */
	if (d->count >= d->max_stacks || hashtab_reserve(&d->stacks, d->count + 1) < 0)
		goto out;
	s = malloc(sizeof(*s) + 8u * nr);
	if (!s)
		goto out;
	s->hash = hash;
	s->nr = nr;
	s->emitted_seq = UINT64_MAX;
	s->id = (uint32_t)++d->count;
	memcpy(s->ips, ips, 8u * nr);
	(void)hashtab_add(&d->stacks, hash, (uintptr_t)s);	/* cannot fail: reserved */
out:
	pthread_mutex_unlock(&d->lock);
	return s;
}

/* ---- per reader ---- */

int transcoder_init(struct transcoder *t, const struct page_layout *layout, struct stackdedup *dedup)
{
	assert(t);
	assert(layout);
	memset(t, 0, sizeof(*t));
	t->layout = layout;
	t->dedup = dedup;
	t->cache = calloc(TRANSCODER_CACHE, sizeof(*t->cache));
	if (!t->cache || hashtab_reserve(&t->ref_set, 512) < 0 ||
	    hashtab_reserve(&t->id_set, 512) < 0) {
		transcoder_done(t);
		return -ENOMEM;
	}
	return 0;
}

void transcoder_done(struct transcoder *t)
{
	assert(t);
	free(t->cache);
	free(t->refs);
	hashtab_done(&t->ref_set);
	free(t->ids);
	hashtab_done(&t->id_set);
	memset(t, 0, sizeof(*t));
}

void transcoder_reset_refs(struct transcoder *t)
{
	assert(t);
	hashtab_clear(&t->ref_set);
	hashtab_clear(&t->id_set);
	t->nr_refs = 0;
	t->nr_ids = 0;
}

static int add_ref(struct transcoder *t, struct dstack *s)
{
	struct hashtab_slot *slot;

	hashtab_foreach_candidate(slot, &t->ref_set, s->hash)
		if (slot->val == (uintptr_t)s)
			return 0;
	if (GREEDY_REALLOC(t->refs, t->refs_cap, t->nr_refs + 1) < 0 ||
	    hashtab_add(&t->ref_set, s->hash, (uintptr_t)s) < 0)
		return -ENOMEM;
	t->refs[t->nr_refs++] = s;
	return 0;
}

static int add_id(struct transcoder *t, uint32_t id)
{
	uint64_t h = hash_u64(id);
	struct hashtab_slot *slot;

	hashtab_foreach_candidate(slot, &t->id_set, h)
		if (slot->val == (uintptr_t)id + 1)
			return 0;
	if (GREEDY_REALLOC(t->ids, t->ids_cap, t->nr_ids + 1) < 0 ||
	    hashtab_add(&t->id_set, h, (uintptr_t)id + 1) < 0)
		return -ENOMEM;
	t->ids[t->nr_ids++] = id;
	return 0;
}

static struct dstack *lookup_stack(struct transcoder *t, const uint8_t *ips, uint16_t nr)
{
	uint64_t hash = hash_bytes(ips, 8u * nr);
	struct dstack **slot = &t->cache[hash & (TRANSCODER_CACHE - 1)];
	struct dstack *s = *slot;

	if (s && dstack_matches(s, hash, ips, nr))
		return s;
	s = dedup_get(t->dedup, hash, ips, nr);
	if (s)
		*slot = s;
	else
		atomic_fetch_add(&t->dedup->overflows, 1);
	return s;
}

static void write_commit(const struct page_layout *l, uint8_t *page, uint64_t v)
{
	if (l->commit_size == 8) {
		memcpy(page + l->commit_offset, &v, 8);
	} else {
		uint32_t w = (uint32_t)v;

		memcpy(page + l->commit_offset, &w, 4);
	}
}

struct page_format page_layout_format(const struct page_layout *l)
{
	assert(l);
	return (struct page_format){
		.long_size = l->commit_size,
		.big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__,
		.page_size = l->page_size,
	};
}

static void note_marker(struct transcoder *t, const uint8_t *data, size_t len, uint64_t ts)
{
	const char *s = (const char *)data + 16;
	size_t n, plen = strlen(MARKER_PREFIX);
	struct page_marker *m;

	if (len <= 16 + plen || memcmp(s, MARKER_PREFIX, plen) != 0)
		return;
	if (t->nr_markers >= TRANSCODER_MAX_MARKERS)
		return;
	m = &t->markers[t->nr_markers++];
	m->ts = ts;
	n = strnlen(s, len - 16);
	if (n >= sizeof(m->text))
		n = sizeof(m->text) - 1;
	memcpy(m->text, s, n);
	/* trace_marker appends a newline when the writer did not */
	while (n > 0 && (m->text[n - 1] == '\n' || m->text[n - 1] == '\0'))
		n--;
	m->text[n] = '\0';
}

/* Replace a kernel_stack entry by a stack_ref entry. Returns 1 if done, 0 if not, -ENOMEM. */
static int transcode_stack(struct transcoder *t, const struct page_entry *ev, struct buf *out)
{
	const struct page_layout *l = t->layout;
	uint8_t *rec;
	uint32_t h, v;
	uint16_t ref_type = (uint16_t)l->stack_ref_id;
	struct dstack *s;
	int32_t size;
	size_t nr;
	int r;

	if (ev->len < 16)
		return 0;
	memcpy(&size, ev->payload + 8, 4);
	nr = size < 0 ? 0 : (size_t)size;
	nr = MIN(nr, (ev->len - 16) / 8);
	nr = MIN(nr, (size_t)UINT16_MAX);
	s = lookup_stack(t, ev->payload + 16, (uint16_t)nr);
	if (!s)
		return 0;
	r = add_ref(t, s);
	if (r < 0)
		return r;
	/* in the room transcoder_page() reserved: never longer than the entry it replaces */
	assert(out->cap - out->len >= ev->total && ev->total >= 4 + STACK_REF_EVENT_SIZE);
	rec = out->data + out->len;
	h = (uint32_t)ev->delta << 5 | (STACK_REF_EVENT_SIZE / 4);
	memcpy(rec, &h, 4);
	memcpy(rec + 4, ev->payload, 8);
	memcpy(rec + 4, &ref_type, 2);
	memcpy(rec + 12, &s->id, 4);
	v = (uint32_t)nr;
	memcpy(rec + 16, &v, 4);
	out->len += 4 + STACK_REF_EVENT_SIZE;
	return 1;
}

/*
 * stack_time = event: a stack_ref written at out offset off gets its
 * event's time (delta 0), and the entry after it takes over the delta, so
 * that every later timestamp stays exact. What the stack loses is the time
 * the kernel took to unwind it: about a byte per event of nanosecond noise
 * on disk.
 */
struct stack_fold {
	size_t off;		/* of the stack_ref's header in out; SIZE_MAX: none pending */
	uint32_t delta;		/* its delta, to hand on */
};

static void put_delta(uint8_t *hdr, uint32_t delta)
{
	uint32_t h;

	memcpy(&h, hdr, 4);
	h = (h & 0x1f) | delta << 5;
	memcpy(hdr, &h, 4);
}

/*
 * Hand a pending stack delta on to the entry just appended at out offset
 * at (a data event or a time extend can take it; a delta that would not
 * fit in 27 bits, or any other entry, gives it back to the stack).
 */
static void fold_hand_on(struct stack_fold *f, struct buf *out, const struct page_entry *ev,
			 size_t at)
{
	uint64_t sum = (uint64_t)ev->delta + f->delta;

	if (f->off == SIZE_MAX)
		return;
	if (ev->kind == PAGE_ENTRY_DATA && sum < (1u << 27)) {
		put_delta(out->data + at, (uint32_t)sum);
	} else if (ev->kind == PAGE_ENTRY_TIME_EXTEND && ev->total >= 8) {
		uint32_t hi;
		uint64_t v;

		memcpy(&hi, out->data + at + 4, 4);
		v = ((uint64_t)hi << 27 | ev->delta) + f->delta;
		if (v >> 59) {
			put_delta(out->data + f->off, f->delta);
		} else {
			put_delta(out->data + at, (uint32_t)(v & ((1u << 27) - 1)));
			hi = (uint32_t)(v >> 27);
			memcpy(out->data + at + 4, &hi, 4);
		}
	} else {
		put_delta(out->data + f->off, f->delta);
	}
	f->off = SIZE_MAX;
}

/* The stack_ref at out offset at gives its delta (if any) to whatever follows. */
static void fold_take(struct stack_fold *f, struct buf *out, size_t at)
{
	uint32_t h;

	memcpy(&h, out->data + at, 4);
	if (h >> 5) {
		*f = (struct stack_fold){ at, h >> 5 };
		put_delta(out->data + at, 0);
	}
}

/*
 * Walk the events of one page (its header already checked by w): summarize,
 * collect stack ids and markers, and with out != NULL append the
 * transcoded events. Returns 0, -EBADMSG when the page does not walk
 * cleanly, -ENOMEM.
 */
static int walk_page(struct transcoder *t, struct page_walk *w, struct buf *out,
		     struct page_summary *sum)
{
	const struct page_layout *l = t->layout;
	struct stack_fold fold = { SIZE_MAX, 0 };
	struct page_entry ev;
	int r;

	while ((r = page_walk_next(w, &ev)) > 0) {
		if (ev.payload) {
			int32_t id;

			sum->events++;
			if (!sum->first_ts)
				sum->first_ts = ev.ts;
			sum->last_ts = ev.ts;

			if (ev.type == l->stack_id_id && page_entry_stack_id(&ev, &id)) {
				if (id >= 0) {
					r = add_id(t, (uint32_t)id);
					if (r < 0)
						return r;
				}
			} else if (ev.type == l->print_id) {
				note_marker(t, ev.payload, ev.len, ev.ts);
			} else if (out && t->dedup && ev.type == l->kernel_stack_id) {
				size_t at = out->len;

				r = transcode_stack(t, &ev, out);
				if (r < 0)
					return r;
				if (r > 0) {
					fold_hand_on(&fold, out, &ev, at);
					if (t->stack_time_event)
						fold_take(&fold, out, at);
					continue;
				}
			}
		}
		if (out) {
			size_t at = out->len;

			assert(out->cap - out->len >= ev.total);
			memcpy(out->data + out->len, w->data + ev.offset, ev.total);
			out->len += ev.total;
			fold_hand_on(&fold, out, &ev, at);
		}
	}
	return r;
}

int transcoder_page(struct transcoder *t, const uint8_t *page, size_t len, struct buf *out,
		    struct page_summary *sum)
{
	const struct page_layout *l;
	struct page_format f;
	size_t start, hdr;
	bool transcode;
	struct page_walk w;
	int r;

	assert(t);
	assert(page || len == 0);
	assert(out);
	assert(sum);

	l = t->layout;
	f = page_layout_format(l);
	start = out->len;
	hdr = l->data_offset;
	transcode = t->dedup && l->stack_ref_id >= 0;
	memset(sum, 0, sizeof(*sum));
	/* A page whose length cannot be trusted cannot be stored self-delimited: drop it. */
	if (page_walk_init(&w, &f, page, len) < 0) {
		t->parse_errors++;
		sum->parse_error = true;
		sum->lost_unknown = true;
		return 0;
	}

	/* the whole page, so that walk_page() writes without checking for room */
	r = buf_reserve(out, hdr + w.commit + f.long_size);
	if (r < 0)
		return r;
	memcpy(out->data + out->len, page, hdr);
	out->len += hdr;
	r = walk_page(t, &w, transcode ? out : NULL, sum);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		/* Keep the page as the kernel wrote it; readers count it as malformed. */
		t->parse_errors++;
		out->len = start + hdr;
		memset(sum, 0, sizeof(*sum));
		sum->parse_error = true;
		transcode = false;
	}
	if (!transcode) {
		r = buf_append(out, w.data, w.commit);
		if (r < 0)
			return r;
	} else {
		/* the page got shorter: fix its commit length, keep the flags */
		size_t newlen = out->len - start - hdr;

		write_commit(l, out->data + start, (w.commit_word & ~PAGE_COMMIT_MASK) | newlen);
	}
	if (w.commit_word & PAGE_MISSED_STORED) {
		sum->lost_events += w.missed;
		r = buf_append(out, w.data + w.commit, f.long_size);
		if (r < 0)
			return r;
	} else if (w.commit_word & PAGE_MISSED_EVENTS) {
		sum->lost_unknown = true;
	}
	return 0;
}
