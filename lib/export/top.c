/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hottest stacks per event type (top.h). Rows are interned as
 * "EVENT\0KEY" with their count; printing groups them by event type and
 * sorts. A stack key is its frames joined by " <- ", innermost first, so
 * the frames can be split back for JSON. Making that text for every
 * sample would cost more than decoding it: a sample whose frames are
 * addresses of a known symbol table (its scope) is first looked up by
 * those, and only a new one is named.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json.h"
#include "strmap.h"
#include "top.h"
#include "util.h"

#define STACK_SEP " <- "

struct top {
	enum top_sort sort;
	struct strmap *rows;		/* "EVENT\0KEY"; counter = count */
	struct strmap *events;		/* event names; counter = total */
	struct strmap *seen;		/* "EVENT\0" scope addresses; counter = its row + 1 */
	struct buf key, addr_key;
};

static const char *const sort_names[TOP_SORT_MAX] = {
	[TOP_SORT_STACK] = "stack",
	[TOP_SORT_CALLSITE] = "callsite",
	[TOP_SORT_COMM] = "comm",
	[TOP_SORT_PID] = "pid",
};

int top_sort_from_string(const char *s)
{
	for (int i = 0; i < TOP_SORT_MAX; i++)
		if (streq(s, sort_names[i]))
			return i;
	return -EINVAL;
}

struct top *top_free(struct top *t)
{
	if (!t)
		return NULL;
	strmap_free(t->rows);
	strmap_free(t->events);
	strmap_free(t->seen);
	buf_done(&t->key);
	buf_done(&t->addr_key);
	free(t);
	return NULL;
}

struct top *top_new(enum top_sort sort)
{
	_cleanup_(top_freep) struct top *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->sort = sort;
	t->rows = strmap_new();
	t->events = strmap_new();
	t->seen = strmap_new();
	if (!t->rows || !t->events || !t->seen)
		return NULL;
	return steal_ptr(t);
}

static int append_key(struct top *t, const struct sample *s)
{
	char buf[SAMPLE_FRAME_NAME_MAX];
	int r = 0;

	switch (t->sort) {
	case TOP_SORT_STACK:
		if (!s->nr_frames)
			return buf_printf(&t->key, "[no stack]");
		for (size_t i = 0; r >= 0 && i < s->nr_frames; i++)
			r = buf_printf(&t->key, "%s%s", i ? STACK_SEP : "",
				       sample_frame_name(&s->frames[i], buf, sizeof(buf)));
		return r;
	case TOP_SORT_CALLSITE:
		if (!s->nr_frames)
			return buf_printf(&t->key, "[no stack]");
		return buf_printf(&t->key, "%s", sample_frame_name(&s->frames[0], buf, sizeof(buf)));
	case TOP_SORT_COMM:
		return buf_printf(&t->key, "%s", s->comm ?: "<...>");
	default:
		return buf_printf(&t->key, "%d", s->pid);
	}
}

/*
 * The row of s by its frames' addresses, as "EVENT\0" scope nr addresses
 * in t->addr_key; false when its key is not made of those alone.
 */
static bool make_addr_key(struct top *t, const struct sample *s)
{
	size_t nr = t->sort == TOP_SORT_CALLSITE ? MIN(s->nr_frames, (size_t)1) : s->nr_frames;
	uint64_t head[2] = { s->scope, nr };

	if (!s->scope || (t->sort != TOP_SORT_STACK && t->sort != TOP_SORT_CALLSITE))
		return false;
	buf_reset(&t->addr_key);
	if (buf_append(&t->addr_key, s->event, strlen(s->event) + 1) < 0 ||
	    buf_append(&t->addr_key, head, sizeof(head)) < 0)
		return false;
	for (size_t i = 0; i < nr; i++)
		if (!s->frames[i].addr ||
		    buf_append(&t->addr_key, &s->frames[i].addr, sizeof(s->frames[i].addr)) < 0)
			return false;
	return true;
}

/* The row of s by its text, interned: its index in t->rows. */
static int row_of(struct top *t, const struct sample *s, size_t *ret_idx)
{
	int r;

	buf_reset(&t->key);
	r = buf_append(&t->key, s->event, strlen(s->event) + 1);
	if (r >= 0)
		r = append_key(t, s);
	if (r >= 0)
		r = strmap_intern(t->rows, (const char *)t->key.data, t->key.len, ret_idx);
	return r;
}

int top_add(struct top *t, const struct sample *s)
{
	uint64_t *row = NULL;
	size_t idx;
	int r;

	assert(t);
	assert(s);

	r = strmap_intern(t->events, s->event, strlen(s->event), &idx);
	if (r < 0)
		return r;
	(*strmap_counter(t->events, idx))++;
	if (make_addr_key(t, s)) {
		r = strmap_intern(t->seen, (const char *)t->addr_key.data, t->addr_key.len, &idx);
		if (r < 0)
			return r;
		row = strmap_counter(t->seen, idx);
		if (*row) {
			(*strmap_counter(t->rows, *row - 1))++;
			return 0;
		}
	}
	r = row_of(t, s, &idx);
	if (r < 0)
		return r;
	if (row)
		*row = idx + 1;
	(*strmap_counter(t->rows, idx))++;
	return 0;
}

struct row {
	const char *event;
	const char *key;
	uint64_t count;
	uint64_t total;			/* of its event */
};

/* Event types by decreasing total, then rows by decreasing count, ties by name. */
static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int d;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	d = strcmp(x->event, y->event);
	if (d)
		return d;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->key, y->key);
}

static void json_row(struct json_writer *w, const struct row *r, enum top_sort sort)
{
	json_object_open(w, NULL);
	json_add_uint(w, "count", r->count);
	json_add_double(w, "percent", 100.0 * (double)r->count / (double)r->total);
	json_add_string(w, "key", r->key);
	if (sort == TOP_SORT_STACK) {
		json_array_open(w, "frames");
		for (const char *p = r->key; *p;) {
			const char *e = strstr(p, STACK_SEP);
			size_t len = e ? (size_t)(e - p) : strlen(p);

			json_add_stringn(w, NULL, p, len);
			p += len + (e ? strlen(STACK_SEP) : 0);
		}
		json_array_close(w);
	}
	json_object_close(w);
}

static void close_event(struct json_writer *w)
{
	json_array_close(w);		/* rows */
	json_object_close(w);
}

static int print_rows(const struct top *t, const struct row *rows, size_t n, FILE *f, bool json,
		      size_t limit)
{
	_cleanup_free_ char *text = NULL;
	struct json_writer w;
	size_t shown = 0;
	int r = 0;

	if (json) {
		json_writer_init(&w, SIZE_MAX);
		json_object_open(&w, NULL);
		json_add_string(&w, "sort", sort_names[t->sort]);
		json_array_open(&w, "events");
	}
	for (size_t i = 0; i < n; i++) {
		bool first = i == 0 || !streq(rows[i - 1].event, rows[i].event);

		if (first) {
			if (json && i)
				close_event(&w);
			if (json) {
				json_object_open(&w, NULL);
				json_add_string(&w, "event", rows[i].event);
				json_add_uint(&w, "total", rows[i].total);
				json_array_open(&w, "rows");
			} else
				fprintf(f, "%s# %s: %" PRIu64 " events\n", i ? "\n" : "",
					rows[i].event, rows[i].total);
			shown = 0;
		}
		if (limit && shown++ >= limit)
			continue;
		if (json)
			json_row(&w, &rows[i], t->sort);
		else
			fprintf(f, "%10.2f%% %10" PRIu64 "  %s\n",
				100.0 * (double)rows[i].count / (double)rows[i].total, rows[i].count,
				rows[i].key);
	}
	if (json) {
		if (n)
			close_event(&w);
		json_array_close(&w);
		json_object_close(&w);
		r = json_writer_finish(&w, &text, NULL);
		json_writer_done(&w);
		if (r >= 0)
			fprintf(f, "%s\n", text);
	}
	return r;
}

int top_print(const struct top *t, FILE *f, bool json, size_t limit)
{
	size_t n = strmap_size(t->rows);
	_cleanup_free_ struct row *rows = calloc(n ?: 1, sizeof(*rows));
	int r;

	assert(f);
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *k = strmap_get(t->rows, i, NULL);
		size_t ev;

		(void)strmap_intern(t->events, k, strlen(k), &ev);	/* known: no allocation */
		rows[i] = (struct row){
			.event = k,
			.key = k + strlen(k) + 1,
			.count = *strmap_counter(t->rows, i),
			.total = *strmap_counter(t->events, ev),
		};
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	r = print_rows(t, rows, n, f, json, limit);
	if (r < 0)
		return r;
	if (fflush(f) != 0 || ferror(f))
		return errno > 0 ? -errno : -EIO;
	return 0;
}
