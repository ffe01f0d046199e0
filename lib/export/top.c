/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hottest stacks per event type (top.h). Rows are interned as
 * "EVENT\0KEY" with their count; printing groups them by event type and
 * sorts. A stack key is its frames joined by " <- ", innermost first, so
 * the frames can be split back for JSON and for the call graph (sorted by
 * symbol: each event's first frame, its callers as a calltree.h tree) or
 * the children view (each function with what ran under it). Making that text for every
 * sample would cost more than decoding it: a sample whose frames are
 * addresses of a known symbol table (its scope) is first looked up by
 * those, and only a new one is named.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "calltree.h"
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
	[TOP_SORT_SYMBOL] = "symbol",
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
	case TOP_SORT_SYMBOL:
		if (!s->nr_frames)
			return buf_printf(&t->key, "[no stack]");
		for (size_t i = 0; r >= 0 && i < s->nr_frames; i++)
			r = buf_printf(&t->key, "%s%s", i ? STACK_SEP : "",
				       sample_frame_name(&s->frames[i], buf, sizeof(buf)));
		return r;
	case TOP_SORT_CALLSITE:
		if (s->call_site)
			return buf_printf(&t->key, "%s", s->call_site);
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

	if (!s->scope || (t->sort != TOP_SORT_STACK && t->sort != TOP_SORT_SYMBOL &&
			  (t->sort != TOP_SORT_CALLSITE || s->call_site)))
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

static double percent(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

/* The next frame of a stack key at *p: its length, *p moved past it; 0 at the end. */
static size_t next_frame(const char **p, const char **ret_frame)
{
	const char *e = strstr(*p, STACK_SEP);
	size_t len = e ? (size_t)(e - *p) : strlen(*p);

	*ret_frame = *p;
	*p += len + (e ? strlen(STACK_SEP) : 0);
	return len;
}

static void json_frames(struct json_writer *w, const char *key)
{
	const char *f;
	size_t len;

	json_array_open(w, "frames");
	for (const char *p = key; *p;) {
		len = next_frame(&p, &f);
		json_add_stringn(w, NULL, f, len);
	}
	json_array_close(w);
}

/* ---- one row per key: stack, call site, comm, pid ---- */

static void print_flat(const struct top *t, const struct row *rows, size_t n, FILE *f,
		       struct json_writer *w, const struct top_view *v)
{
	_cleanup_free_ char *line = NULL;
	size_t size = 0;

	for (size_t i = 0; i < n && (!v->limit || i < v->limit); i++) {
		const struct row *r = &rows[i];
		FILE *m;

		if (w) {
			json_object_open(w, NULL);
			json_add_uint(w, "count", r->count);
			json_add_double(w, "percent", percent(r->count, r->total));
			json_add_string(w, "key", r->key);
			if (t->sort == TOP_SORT_STACK)
				json_frames(w, r->key);
			json_object_close(w);
			continue;
		}
		free(line);
		line = NULL;
		m = open_memstream(&line, &size);
		if (!m)
			return;
		fprintf(m, "%10.2f%% %10" PRIu64 "  %s", percent(r->count, r->total), r->count,
			r->key);
		if (fclose(m) == 0)
			calltree_put_line(f, line, v->width);
	}
}

/* ---- by symbol: each event's first frame, with the tree of its callers ---- */

/* The stacks of rows[0..n) as a tree: root's children are first frames, theirs their callers. */
static int build_tree(struct calltree_node *root, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct calltree_node *cur = root;
		const char *fr;
		size_t len;

		for (const char *p = rows[i].key; *p;) {
			len = next_frame(&p, &fr);
			cur = calltree_child(cur, fr, len);
			if (!cur)
				return -ENOMEM;
			cur->count += rows[i].count;
		}
	}
	calltree_sort(root);
	return 0;
}

/* The stacks of rows[0..n) whose first frame is name[0..len), as the array "stacks". */
static void json_stacks(struct json_writer *w, const struct row *rows, size_t n, const char *name,
			size_t len)
{
	json_array_open(w, "stacks");
	for (size_t i = 0; i < n; i++) {
		const char *p = rows[i].key, *fr;

		if (next_frame(&p, &fr) != len || memcmp(fr, name, len))
			continue;
		json_object_open(w, NULL);
		json_add_uint(w, "count", rows[i].count);
		json_add_double(w, "percent", percent(rows[i].count, rows[i].total));
		json_frames(w, rows[i].key);
		json_object_close(w);
	}
	json_array_close(w);
}

static int print_graph(const struct row *rows, size_t n, FILE *f, struct json_writer *w,
		       const struct top_view *v)
{
	struct calltree_node root = {};
	uint64_t total = n ? rows[0].total : 0;
	char line[4200];
	int r;

	r = build_tree(&root, rows, n);
	for (size_t i = 0; r >= 0 && i < root.nr_kids && (!v->limit || i < v->limit); i++) {
		const struct calltree_node *e = &root.kids[i];

		if (w) {
			json_object_open(w, NULL);
			json_add_uint(w, "count", e->count);
			json_add_double(w, "percent", percent(e->count, total));
			json_add_stringn(w, "key", e->name, e->len);
			json_stacks(w, rows, n, e->name, e->len);
			json_object_close(w);
			continue;
		}
		(void)snprintf(line, sizeof(line), "%10.2f%% %10" PRIu64 "  %.*s",
			       percent(e->count, total), e->count, (int)MIN(e->len, (size_t)4096),
			       e->name);
		calltree_put_line(f, line, v->width);
		calltree_print(e, f, "             ", total, v->min_percent, v->width);
		if (e->nr_kids && i + 1 < root.nr_kids && (!v->limit || i + 1 < v->limit))
			fputc('\n', f);
	}
	calltree_done(&root);
	return r;
}

/* ---- children: every function with the events under it, and its own ---- */

struct func {
	const char *name;
	size_t len;
	uint64_t children, self;
};

static int func_cmp(const void *a, const void *b)
{
	const struct func *x = a, *y = b;
	int d;

	if (x->children != y->children)
		return x->children > y->children ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	d = memcmp(x->name, y->name, MIN(x->len, y->len));
	return d ? d : x->len < y->len ? -1 : x->len > y->len;
}

static int print_children(const struct row *rows, size_t n, FILE *f, struct json_writer *w,
			  const struct top_view *v)
{
	_cleanup_(strmap_freep) struct strmap *names = strmap_new();
	_cleanup_free_ struct func *funcs = NULL;
	_cleanup_free_ size_t *seen = NULL;
	uint64_t total = n ? rows[0].total : 0;
	size_t nr_funcs = 0, cap = 0, nr_seen, cap_seen = 0;
	char line[4200];

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *fr;
		size_t len, idx;

		nr_seen = 0;
		for (const char *p = rows[i].key; *p;) {
			bool first = p == rows[i].key, again = false;
			int r;

			len = next_frame(&p, &fr);
			r = strmap_intern(names, fr, len, &idx);
			if (r < 0)
				return r;
			if (GREEDY_REALLOC(funcs, cap, idx + 1) < 0)
				return -ENOMEM;
			if (idx >= nr_funcs) {
				funcs[idx] = (struct func){ .name = fr, .len = len };
				nr_funcs = idx + 1;
			}
			/* a recursive function counts an event once */
			for (size_t k = 0; k < nr_seen && !again; k++)
				again = seen[k] == idx;
			if (first)
				funcs[idx].self += rows[i].count;
			if (again)
				continue;
			if (GREEDY_REALLOC(seen, cap_seen, nr_seen + 1) < 0)
				return -ENOMEM;
			seen[nr_seen++] = idx;
			funcs[idx].children += rows[i].count;
		}
	}
	if (nr_funcs)
		qsort(funcs, nr_funcs, sizeof(*funcs), func_cmp);
	if (!w)
		fprintf(f, "%10s %10s %10s  %s\n", "children", "self", "count", "symbol");
	for (size_t i = 0; i < nr_funcs && (!v->limit || i < v->limit); i++) {
		const struct func *fn = &funcs[i];

		if (w) {
			json_object_open(w, NULL);
			json_add_uint(w, "count", fn->children);
			json_add_double(w, "percent", percent(fn->children, total));
			json_add_uint(w, "self", fn->self);
			json_add_double(w, "self_percent", percent(fn->self, total));
			json_add_stringn(w, "key", fn->name, fn->len);
			json_object_close(w);
			continue;
		}
		(void)snprintf(line, sizeof(line), "%9.2f%% %9.2f%% %10" PRIu64 "  %.*s",
			       percent(fn->children, total), percent(fn->self, total), fn->children,
			       (int)MIN(fn->len, (size_t)4096), fn->name);
		calltree_put_line(f, line, v->width);
	}
	return 0;
}

/* ---- all event types ---- */

static int print_event(const struct top *t, const struct row *rows, size_t n, FILE *f,
		       struct json_writer *w, const struct top_view *v)
{
	if (t->sort == TOP_SORT_SYMBOL && v->children)
		return print_children(rows, n, f, w, v);
	if (t->sort == TOP_SORT_SYMBOL)
		return print_graph(rows, n, f, w, v);
	print_flat(t, rows, n, f, w, v);
	return 0;
}

static int print_rows(const struct top *t, const struct row *rows, size_t n, FILE *f,
		      const struct top_view *v)
{
	_cleanup_free_ char *text = NULL;
	struct json_writer w;
	int r = 0;

	if (v->json) {
		json_writer_init(&w, SIZE_MAX);
		json_object_open(&w, NULL);
		json_add_string(&w, "sort", sort_names[t->sort]);
		if (t->sort == TOP_SORT_SYMBOL)
			json_add_bool(&w, "children", v->children);
		json_array_open(&w, "events");
	}
	for (size_t i = 0, end; r >= 0 && i < n; i = end) {
		for (end = i + 1; end < n && streq(rows[end].event, rows[i].event);)
			end++;
		if (v->json) {
			json_object_open(&w, NULL);
			json_add_string(&w, "event", rows[i].event);
			json_add_uint(&w, "total", rows[i].total);
			json_array_open(&w, "rows");
		} else
			fprintf(f, "%s# %s: %" PRIu64 " events\n", i ? "\n" : "", rows[i].event,
				rows[i].total);
		r = print_event(t, rows + i, end - i, f, v->json ? &w : NULL, v);
		if (v->json) {
			json_array_close(&w);
			json_object_close(&w);
		}
	}
	if (v->json) {
		json_array_close(&w);
		json_object_close(&w);
		if (r >= 0)
			r = json_writer_finish(&w, &text, NULL);
		json_writer_done(&w);
		if (r >= 0)
			fprintf(f, "%s\n", text);
	}
	return r;
}

int top_print(const struct top *t, FILE *f, const struct top_view *v)
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
	r = print_rows(t, rows, n, f, v);
	if (r < 0)
		return r;
	if (fflush(f) != 0 || ferror(f))
		return errno > 0 ? -errno : -EIO;
	return 0;
}

uint64_t top_total(const struct top *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < strmap_size(t->events); i++)
		n += *strmap_counter(t->events, i);
	return n;
}
