/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ring-buffer page format walked here is the kernel's (see
 * kernel/trace/ring_buffer.c and events/header_event): a page header
 * (u64 timestamp, local_t commit with the missed-events flags in bits 31 and
 * 30), then events with a 32-bit header, type_len in the low 5 bits and
 * time_delta in the high 27:
 *   0       data length in array[0] (including array[0] itself), data after it
 *   1..28   type_len * 4 bytes of data
 *   29      padding (discarded event), length in array[0]; time_delta 0 means
 *           the rest of the page is empty
 *   30      time extend: delta = array[0] << 27 | time_delta
 *   31      absolute timestamp (59 bits; the top bits come from the current time)
 * Every event keeps its header when copied, so the time deltas and therefore
 * all timestamps are preserved exactly; only a kernel_stack entry's payload
 * is replaced by a shorter one.
 */
#include <pthread.h>

#include "segment.h"
#include "transcode.h"
#include "util.h"

#define TYPE_PADDING 29
#define TYPE_TIME_EXTEND 30
#define TYPE_TIME_STAMP 31
#define TS_SHIFT 27
#define TS_MSB (0xf8ULL << 56)
#define TRANSCODER_CACHE 4096
#define DEDUP_BUCKETS_MIN 4096

struct stackdedup {
	pthread_mutex_t lock;
	struct dstack **buckets;
	size_t nr_buckets;
	size_t count;
	size_t max_stacks;
	atomic_uint_fast64_t overflows;
};

static int find_field(const char *text, const char *name, unsigned *ret_offset, unsigned *ret_size)
{
	const char *p = strstr(text, name);

	if (!p)
		return -EPROTO;
	p = strstr(p, "offset:");
	if (!p || sscanf(p, "offset:%u;\tsize:%u;", ret_offset, ret_size) != 2)
		return -EPROTO;
	return 0;
}

int page_layout_parse(const char *header_page, struct page_layout *ret)
{
	unsigned off, size, doff, dsize;

	if (find_field(header_page, "timestamp;", &off, &size) < 0 || off != 0 || size != 8)
		return -EPROTO;
	if (find_field(header_page, "commit;", &off, &size) < 0 || (size != 8 && size != 4))
		return -EPROTO;
	if (find_field(header_page, "data;", &doff, &dsize) < 0 || doff != off + size)
		return -EPROTO;
	ret->commit_offset = off;
	ret->commit_size = size;
	ret->data_offset = doff;
	return 0;
}

int page_layout_stack_ref_format(int id, struct buf *out)
{
	return buf_printf(out,
			  "name: stack_ref\n"
			  "ID: %d\n"
			  "format:\n"
			  "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			  "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
			  "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
			  "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
			  "\n"
			  "\tfield:unsigned int stack_ref;\toffset:8;\tsize:4;\tsigned:0;\n"
			  "\tfield:unsigned int nr_frames;\toffset:12;\tsize:4;\tsigned:0;\n"
			  "\n"
			  "print fmt: \"<stack_ref %%u>\", REC->stack_ref\n",
			  id);
}

/* ---- the shared stack table ---- */

struct stackdedup *stackdedup_new(size_t max_stacks)
{
	struct stackdedup *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->nr_buckets = DEDUP_BUCKETS_MIN;
	d->buckets = calloc(d->nr_buckets, sizeof(*d->buckets));
	if (!d->buckets) {
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
	for (size_t i = 0; i < d->nr_buckets; i++) {
		struct dstack *s = d->buckets[i];

		while (s) {
			struct dstack *n = s->next;

			free(s);
			s = n;
		}
	}
	free(d->buckets);
	pthread_mutex_destroy(&d->lock);
	free(d);
	return NULL;
}

size_t stackdedup_count(struct stackdedup *d)
{
	size_t n;

	pthread_mutex_lock(&d->lock);
	n = d->count;
	pthread_mutex_unlock(&d->lock);
	return n;
}

uint64_t stackdedup_overflows(struct stackdedup *d)
{
	return atomic_load(&d->overflows);
}

static uint64_t hash_ips(const uint8_t *ips, uint16_t nr)
{
	/* FNV-1a over 64-bit words, then a final mix: cheap and good enough. */
	uint64_t h = 0xcbf29ce484222325ULL ^ nr;

	for (uint16_t i = 0; i < nr; i++) {
		uint64_t v;

		memcpy(&v, ips + 8 * i, 8);
		h = (h ^ v) * 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static bool dstack_matches(const struct dstack *s, uint64_t hash, const uint8_t *ips, uint16_t nr)
{
	return s->hash == hash && s->nr == nr && memcmp(s->ips, ips, 8u * nr) == 0;
}

static void dedup_grow(struct stackdedup *d)
{
	size_t n = d->nr_buckets * 2;
	struct dstack **b = calloc(n, sizeof(*b));

	if (!b)
		return;			/* longer chains, still correct */
	for (size_t i = 0; i < d->nr_buckets; i++) {
		struct dstack *s = d->buckets[i];

		while (s) {
			struct dstack *next = s->next;
			size_t k = s->hash & (n - 1);

			s->next = b[k];
			b[k] = s;
			s = next;
		}
	}
	free(d->buckets);
	d->buckets = b;
	d->nr_buckets = n;
}

/* Find or insert; NULL when the table is full or memory ran out. */
static struct dstack *dedup_get(struct stackdedup *d, uint64_t hash, const uint8_t *ips, uint16_t nr)
{
	struct dstack *s;

	pthread_mutex_lock(&d->lock);
	for (s = d->buckets[hash & (d->nr_buckets - 1)]; s; s = s->next)
		if (dstack_matches(s, hash, ips, nr))
			goto out;
	if (d->count >= d->max_stacks)
		goto out;
	s = malloc(sizeof(*s) + 8u * nr);
	if (!s)
		goto out;
	s->hash = hash;
	s->nr = nr;
	s->emitted_seq = UINT64_MAX;
	s->id = (uint32_t)++d->count;
	memcpy(s->ips, ips, 8u * nr);
	s->next = d->buckets[hash & (d->nr_buckets - 1)];
	d->buckets[hash & (d->nr_buckets - 1)] = s;
	if (d->count > d->nr_buckets * 2)
		dedup_grow(d);
out:
	pthread_mutex_unlock(&d->lock);
	return s;
}

/* ---- per reader ---- */

int transcoder_init(struct transcoder *t, const struct page_layout *layout, struct stackdedup *dedup)
{
	memset(t, 0, sizeof(*t));
	t->layout = layout;
	t->dedup = dedup;
	t->cache = calloc(TRANSCODER_CACHE, sizeof(*t->cache));
	t->ref_set_cap = 1024;
	t->ref_set = calloc(t->ref_set_cap, sizeof(*t->ref_set));
	t->id_set_cap = 1024;
	t->id_set = calloc(t->id_set_cap, sizeof(*t->id_set));
	if (!t->cache || !t->ref_set || !t->id_set) {
		transcoder_done(t);
		return -ENOMEM;
	}
	return 0;
}

void transcoder_done(struct transcoder *t)
{
	free(t->cache);
	free(t->refs);
	free(t->ref_set);
	free(t->ids);
	free(t->id_set);
	memset(t, 0, sizeof(*t));
}

void transcoder_reset_refs(struct transcoder *t)
{
	if (t->nr_refs)
		memset(t->ref_set, 0, t->ref_set_cap * sizeof(*t->ref_set));
	if (t->nr_ids)
		memset(t->id_set, 0, t->id_set_cap * sizeof(*t->id_set));
	t->nr_refs = 0;
	t->nr_ids = 0;
}

static int grow_sets_refs(struct transcoder *t)
{
	size_t cap = t->ref_set_cap * 2;
	struct dstack **set = calloc(cap, sizeof(*set));

	if (!set)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_refs; i++) {
		size_t k = t->refs[i]->hash & (cap - 1);

		while (set[k])
			k = (k + 1) & (cap - 1);
		set[k] = t->refs[i];
	}
	free(t->ref_set);
	t->ref_set = set;
	t->ref_set_cap = cap;
	return 0;
}

static int add_ref(struct transcoder *t, struct dstack *s)
{
	size_t k;

	if ((t->nr_refs + 1) * 2 > t->ref_set_cap && grow_sets_refs(t) < 0)
		return -ENOMEM;
	for (k = s->hash & (t->ref_set_cap - 1); t->ref_set[k]; k = (k + 1) & (t->ref_set_cap - 1))
		if (t->ref_set[k] == s)
			return 0;
	if (t->nr_refs == t->refs_cap) {
		size_t cap = t->refs_cap ? t->refs_cap * 2 : 256;
		struct dstack **r = realloc(t->refs, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->refs = r;
		t->refs_cap = cap;
	}
	t->ref_set[k] = s;
	t->refs[t->nr_refs++] = s;
	return 0;
}

static uint32_t id_hash(uint32_t id)
{
	return id * 2654435761u;
}

static int add_id(struct transcoder *t, uint32_t id)
{
	size_t k;

	if ((t->nr_ids + 1) * 2 > t->id_set_cap) {
		size_t cap = t->id_set_cap * 2;
		uint32_t *set = calloc(cap, sizeof(*set));

		if (!set)
			return -ENOMEM;
		for (size_t i = 0; i < t->nr_ids; i++) {
			size_t j = id_hash(t->ids[i]) & (cap - 1);

			while (set[j])
				j = (j + 1) & (cap - 1);
			set[j] = t->ids[i] + 1;
		}
		free(t->id_set);
		t->id_set = set;
		t->id_set_cap = cap;
	}
	for (k = id_hash(id) & (t->id_set_cap - 1); t->id_set[k]; k = (k + 1) & (t->id_set_cap - 1))
		if (t->id_set[k] == id + 1)
			return 0;
	if (t->nr_ids == t->ids_cap) {
		size_t cap = t->ids_cap ? t->ids_cap * 2 : 256;
		uint32_t *r = realloc(t->ids, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		t->ids = r;
		t->ids_cap = cap;
	}
	t->id_set[k] = id + 1;
	t->ids[t->nr_ids++] = id;
	return 0;
}

static struct dstack *lookup_stack(struct transcoder *t, const uint8_t *ips, uint16_t nr)
{
	uint64_t hash = hash_ips(ips, nr);
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

static uint64_t read_commit(const struct page_layout *l, const uint8_t *page)
{
	if (l->commit_size == 8) {
		uint64_t v;

		memcpy(&v, page + l->commit_offset, 8);
		return v;
	} else {
		uint32_t v;

		memcpy(&v, page + l->commit_offset, 4);
		return v;
	}
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

int page_iter_init(struct page_iter *it, const struct page_layout *l, const uint8_t *page,
		   size_t len)
{
	uint64_t cw;

	if (len < l->data_offset)
		return -EPROTO;
	memset(it, 0, sizeof(*it));
	memcpy(&it->ts, page, 8);
	cw = read_commit(l, page);
	it->commit = (size_t)(cw & PAGE_COMMIT_MASK);
	if (it->commit > len - l->data_offset)
		return -EPROTO;
	it->data = page + l->data_offset;
	return 0;
}

int page_iter_next(struct page_iter *it, struct page_event *ev)
{
	const uint8_t *data = it->data;
	size_t off = it->off, commit = it->commit;

	while (off + 4 <= commit) {
		uint32_t hdr, arr = 0;
		unsigned type_len, delta;
		size_t total, dlen = 0;
		const uint8_t *payload = NULL;

		memcpy(&hdr, data + off, 4);
		type_len = hdr & 31;
		delta = hdr >> 5;
		if (type_len == 0 || type_len >= TYPE_PADDING) {
			if (off + 8 > commit) {
				it->off = commit;
				return type_len == TYPE_PADDING && delta == 0 ? 0 : -EPROTO;
			}
			memcpy(&arr, data + off + 4, 4);
		}

		switch (type_len) {
		case 0:
			if (arr < 4)
				return -EPROTO;
			dlen = arr - 4;
			payload = data + off + 8;
			total = 4 + (((size_t)arr + 3) & ~(size_t)3);
			it->ts += delta;
			break;
		case TYPE_PADDING:
			if (delta == 0) {
				/* the rest of the page is unused */
				it->off = commit;
				return 0;
			}
			total = 4 + (size_t)arr;
			it->ts += delta;
			break;
		case TYPE_TIME_EXTEND:
			total = 8;
			it->ts += ((uint64_t)arr << TS_SHIFT) | delta;
			break;
		case TYPE_TIME_STAMP: {
			uint64_t abs = ((uint64_t)arr << TS_SHIFT) | delta;

			if (it->ts & TS_MSB) {
				abs |= it->ts & TS_MSB;
				if (abs < it->ts)
					abs += 1ULL << 59;
			}
			it->ts = abs;
			total = 8;
			break;
		}
		default:
			dlen = (size_t)type_len * 4;
			payload = data + off + 4;
			total = 4 + dlen;
			it->ts += delta;
			break;
		}
		if (total > commit - off)
			return -EPROTO;
		ev->offset = off;
		ev->total = total;
		ev->delta = delta;
		ev->ts = it->ts;
		ev->payload = payload;
		ev->len = dlen;
		ev->type = -1;
		off += total;
		it->off = off;
		if (payload) {
			uint16_t type;

			if (dlen < 8)
				return -EPROTO;
			memcpy(&type, payload, 2);
			ev->type = type;
		}
		return 1;
	}
	it->off = off;
	return off == commit ? 0 : -EPROTO;
}

/* Replace a kernel_stack entry by a stack_ref entry. Returns 1 if done, 0 if not, -ENOMEM. */
static int transcode_stack(struct transcoder *t, const struct page_event *ev, struct buf *out)
{
	const struct page_layout *l = t->layout;
	uint8_t rec[4 + STACK_REF_EVENT_SIZE];
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
	h = (uint32_t)ev->delta << 5 | (STACK_REF_EVENT_SIZE / 4);
	memcpy(rec, &h, 4);
	memcpy(rec + 4, ev->payload, 8);
	memcpy(rec + 4, &ref_type, 2);
	memcpy(rec + 12, &s->id, 4);
	v = (uint32_t)nr;
	memcpy(rec + 16, &v, 4);
	r = buf_append(out, rec, sizeof(rec));
	return r < 0 ? r : 1;
}

/*
 * Walk the events of one page: summarize, collect stack ids and markers,
 * and with out != NULL append the transcoded events. Returns 0, -EPROTO
 * when the page does not walk cleanly, -ENOMEM.
 */
static int walk_page(struct transcoder *t, const uint8_t *page, size_t len, struct buf *out,
		     struct page_summary *sum)
{
	const struct page_layout *l = t->layout;
	struct page_iter it;
	struct page_event ev;
	int r;

	r = page_iter_init(&it, l, page, len);
	if (r < 0)
		return r;
	while ((r = page_iter_next(&it, &ev)) > 0) {
		if (ev.payload) {
			sum->events++;
			if (!sum->first_ts)
				sum->first_ts = ev.ts;
			sum->last_ts = ev.ts;

			if (ev.type == l->stack_id_id && ev.len >= 12) {
				int32_t id;

				memcpy(&id, ev.payload + 8, 4);
				if (id >= 0) {
					r = add_id(t, (uint32_t)id);
					if (r < 0)
						return r;
				}
			} else if (ev.type == l->print_id) {
				note_marker(t, ev.payload, ev.len, ev.ts);
			} else if (out && t->dedup && ev.type == l->kernel_stack_id) {
				r = transcode_stack(t, &ev, out);
				if (r < 0)
					return r;
				if (r > 0)
					continue;
			}
		}
		if (out) {
			r = buf_append(out, it.data + ev.offset, ev.total);
			if (r < 0)
				return r;
		}
	}
	return r;
}

int transcoder_page(struct transcoder *t, const uint8_t *page, size_t len, struct buf *out,
		    struct page_summary *sum)
{
	const struct page_layout *l = t->layout;
	size_t start = out->len, commit, extra = 0, hdr = l->data_offset;
	bool transcode = t->dedup && l->stack_ref_id >= 0;
	uint64_t cw;
	int r;

	memset(sum, 0, sizeof(*sum));
	if (len < hdr)
		goto drop;
	cw = read_commit(l, page);
	commit = (size_t)(cw & PAGE_COMMIT_MASK);
	if (commit > len - hdr)
		goto drop;
	if (cw & PAGE_MISSED_STORED) {
		if (commit + 8 > len - hdr)
			goto drop;
		extra = 8;
	}

	r = buf_append(out, page, hdr);
	if (r < 0)
		return r;
	r = walk_page(t, page, len, transcode ? out : NULL, sum);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		/* Keep the page as the kernel wrote it; readers decode it with kbuffer. */
		t->parse_errors++;
		out->len = start + hdr;
		memset(sum, 0, sizeof(*sum));
		sum->parse_error = true;
		transcode = false;
	}
	if (!transcode) {
		r = buf_append(out, page + hdr, commit);
		if (r < 0)
			return r;
	} else {
		/* the page got shorter: fix its commit length, keep the flags */
		size_t newlen = out->len - start - hdr;

		write_commit(l, out->data + start, (cw & ~PAGE_COMMIT_MASK) | newlen);
	}
	if (extra) {
		uint64_t missed;

		memcpy(&missed, page + hdr + commit, 8);
		sum->lost_events += missed;
		r = buf_append(out, page + hdr + commit, extra);
		if (r < 0)
			return r;
	} else if (cw & PAGE_MISSED_EVENTS) {
		sum->lost_unknown = true;
	}
	return 0;

drop:
	/* A page whose length cannot be trusted cannot be stored self-delimited. */
	t->parse_errors++;
	sum->parse_error = true;
	sum->lost_unknown = true;
	return 0;
}
