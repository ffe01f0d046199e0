/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What memory.c found, shown (memory.h): text tables (the curve, the peak
 * and --at moment with their stacks as a table and as top's tree of
 * callers, the growth since --baseline, what is still live at the end by
 * age and by stack, churn, gaps), or one JSON document with the same.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calltree.h"
#include "json.h"
#include "memory-internal.h"

#define NSEC_PER_SEC UINT64_C(1000000000)
#define CURVE_KINDS 4			/* kinds with a column in the text curve */
#define JSON_MAX ((size_t)64 << 20)

/* Ages of what is still live at the end. */
static const struct {
	const char *name;
	uint64_t below_s;		/* 0: no bound */
} bands[] = {
	{ "< 1 s", 1 }, { "1-10 s", 10 }, { "10-60 s", 60 }, { "1-10 min", 600 },
	{ "10-60 min", 3600 }, { "1-6 h", 6 * 3600 }, { ">= 6 h", 0 },
};
#define NR_BANDS ARRAY_SIZE(bands)

struct row {
	size_t stack;
	struct mem_live v;
	uint64_t sort;
};

double mem_secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

const char *mem_human(char *buf, size_t len, uint64_t bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (!u)
		(void)snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		(void)snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* "2026-12-05 11:20:01.123456" of a CLOCK_REALTIME time, local. */
static const char *date(char *buf, size_t len, uint64_t wall)
{
	time_t s = (time_t)(wall / NSEC_PER_SEC);
	struct tm tm;
	size_t n;

	if (!localtime_r(&s, &tm) || !(n = strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm)))
		(void)snprintf(buf, len, "%" PRIu64, wall);
	else
		(void)snprintf(buf + n, len - n, ".%06" PRIu64, wall % NSEC_PER_SEC / 1000);
	return buf;
}

/* How a moment reads: its date (when known), offset and trace-clock time. */
const char *mem_moment_text(char *buf, size_t len, const struct memory *m, uint64_t t,
			    uint64_t ts)
{
	char d[64];

	if (m->wall_known)
		(void)snprintf(buf, len, "%s (+%.3f s; trace %.6f)", date(d, sizeof(d), t),
			       mem_secs(t - m->t0), mem_secs(ts));
	else
		(void)snprintf(buf, len, "trace %.6f (+%.3f s)", mem_secs(ts), mem_secs(t - m->t0));
	return buf;
}

const char *mem_stack_key(const struct memory *m, size_t stack)
{
	return strmap_get(m->keys, m->stacks[stack].key, NULL);
}

/* The next ';'-separated part of *p: its start in *ret and its length. */
static size_t next_part(const char **p, const char **ret)
{
	size_t len = strcspn(*p, ";");

	*ret = *p;
	*p += len;
	if (**p == ';')
		(*p)++;
	return len;
}

/* "kmalloc: a <- b <- c" of a stack key. */
static int stack_line(char **ret, const char *key)
{
	_cleanup_free_ char *t = NULL;
	const char *p = key, *part;
	size_t len;
	int r, i = 0;

	r = strextendf(&t, "%s", "");
	while (r >= 0 && *p) {
		len = next_part(&p, &part);
		r = strextendf(&t, "%s%.*s", i == 0 ? "" : i == 1 ? ": " : " <- ", (int)len, part);
		i++;
	}
	if (r < 0)
		return r;
	*ret = steal_ptr(t);
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->sort != y->sort)
		return x->sort > y->sort ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Stacks with their figures at moment k (-1: now), those holding something, sorted by bytes. */
static int rows_at(const struct memory *m, int k, struct row **ret, size_t *ret_n)
{
	struct row *rows = calloc(m->nr_stacks ?: 1, sizeof(*rows));
	size_t n = 0;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_stacks; i++) {
		const struct mem_stack *st = &m->stacks[i];
		struct mem_live v = k < 0 ? st->live : mem_at(m, st->snap, &st->live, k);

		if (v.bytes)
			rows[n++] = (struct row){ i, v, v.bytes };
	}
	qsort(rows, n, sizeof(*rows), row_cmp);
	*ret = rows;
	*ret_n = n;
	return 0;
}

/* Mean age at time t of the objects of v. */
static double mean_age(const struct memory *m, const struct mem_live *v, uint64_t t)
{
	double mean;

	if (!v->objs)
		return 0;
	mean = v->tsum / (double)v->objs + (double)m->t0;
	return mean < (double)t ? ((double)t - mean) / 1e9 : 0;
}

static void json_frames(struct json_writer *w, const char *key)
{
	const char *p = key, *part;
	size_t len;

	len = next_part(&p, &part);
	json_add_stringn(w, "event", part, len);
	json_array_open(w, "frames");
	while (*p) {
		len = next_part(&p, &part);
		json_add_stringn(w, NULL, part, len);
	}
	json_array_close(w);
}

/* The caller tree of rows[0..n): root's children are first frames, theirs their callers. */
static int build_tree(const struct memory *m, struct calltree_node *root, const struct row *rows,
		      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *p = mem_stack_key(m, rows[i].stack), *part;
		struct calltree_node *cur = root;
		size_t len = 0;

		(void)next_part(&p, &part);	/* the event */
		while (*p) {
			len = next_part(&p, &part);
			cur = calltree_child(cur, part, len);
			if (!cur)
				return -ENOMEM;
			cur->count += rows[i].v.bytes;
		}
	}
	calltree_sort(root);
	return 0;
}

/* A moment as text: figures, stacks table, tree; or as a JSON object. */
static int print_moment(struct memory *m, FILE *f, struct json_writer *w,
			const struct memory_view *v, int k, const char *what)
{
	const struct mem_moment *mo = &m->moment[k];
	_cleanup_free_ struct row *rows = NULL;
	struct calltree_node root = {};
	char when[160], b1[32], b2[32];
	size_t n, limit = v->limit ?: 10;
	int r;

	r = rows_at(m, k, &rows, &n);
	if (r < 0)
		return r;
	if (w) {
		json_object_open(w, what);
		json_add_uint(w, "time_ns", mo->t);
		json_add_double(w, "offset_s", mem_secs(mo->t - m->t0));
		json_add_double(w, "trace_s", mem_secs(mo->ts));
		if (m->wall_known)
			json_add_string(w, "date", date(when, sizeof(when), mo->t));
		json_add_uint(w, "bytes", mo->total.bytes);
		json_add_uint(w, "objects", mo->total.objs);
		json_add_uint(w, "uncertain_bytes", mo->uncertain);
		json_array_open(w, "kinds");
		for (size_t i = 0; i < m->nr_kinds; i++) {
			const struct mem_kind *kd = &m->kinds[i];
			struct mem_live kv = mem_at(m, kd->snap, &kd->live, k);

			if (!kv.bytes)
				continue;
			json_object_open(w, NULL);
			json_add_string(w, "kind", strmap_get(m->kind_names, kd->name, NULL));
			json_add_uint(w, "bytes", kv.bytes);
			json_add_uint(w, "objects", kv.objs);
			json_object_close(w);
		}
		json_array_close(w);
		json_array_open(w, "stacks");
		for (size_t i = 0; i < n && i < limit; i++) {
			json_object_open(w, NULL);
			json_add_uint(w, "bytes", rows[i].v.bytes);
			json_add_uint(w, "objects", rows[i].v.objs);
			json_add_double(w, "mean_age_s", mean_age(m, &rows[i].v, mo->t));
			json_frames(w, mem_stack_key(m, rows[i].stack));
			json_object_close(w);
		}
		json_array_close(w);
		json_object_close(w);
		return 0;
	}
	fprintf(f, "\n# %s: %s in %" PRIu64 " objects at %s\n", what,
		mem_human(b1, sizeof(b1), mo->total.bytes), mo->total.objs,
		mem_moment_text(when, sizeof(when), m, mo->t, mo->ts));
	if (mo->uncertain)
		fprintf(f, "#   %s of it uncertain: may have been freed in events lost (gaps)\n",
			mem_human(b1, sizeof(b1), mo->uncertain));
	fprintf(f, "%12s %10s %10s  %s\n", "bytes", "objects", "mean age",
		"stack (innermost first)");
	for (size_t i = 0; i < n && i < limit; i++) {
		_cleanup_free_ char *s = NULL, *line = NULL;

		if (stack_line(&s, mem_stack_key(m, rows[i].stack)) < 0 ||
		    strprintf(&line, "%12s %10" PRIu64 " %8.1f s  %s",
			      mem_human(b2, sizeof(b2), rows[i].v.bytes), rows[i].v.objs,
			      mean_age(m, &rows[i].v, mo->t), s) < 0)
			return -ENOMEM;
		calltree_put_line(f, line, v->width);
	}
	if (n > limit)
		fprintf(f, "%12s  (%zu more stacks)\n", "", n - limit);
	fprintf(f, "\n# %s by allocating function, with the tree of its callers (share of %s)\n",
		what, mem_human(b1, sizeof(b1), mo->total.bytes));
	r = build_tree(m, &root, rows, n);
	for (size_t i = 0; r >= 0 && i < root.nr_kids && i < limit; i++) {
		const struct calltree_node *e = &root.kids[i];
		char line[4200];

		(void)snprintf(line, sizeof(line), "%10.2f%% %10s  %.*s",
			       100.0 * (double)e->count / (double)MAX(mo->total.bytes, 1),
			       mem_human(b2, sizeof(b2), e->count), (int)MIN(e->len, (size_t)4096),
			       e->name);
		calltree_put_line(f, line, v->width);
		calltree_print(e, f, "             ", mo->total.bytes, v->min_percent, v->width);
	}
	calltree_done(&root);
	return r;
}

/* The text curve: one row per one or two points, total and the largest kinds. */
static void print_curve(const struct memory *m, FILE *f)
{
	size_t n = m->cur + 1, g = (n + m->o.rows - 1) / m->o.rows, cols[CURVE_KINDS], nc = 0;
	char b[32];

	/* the kinds with the most at their own peak */
	for (size_t i = 0; i < m->nr_kinds; i++) {
		size_t j = nc < CURVE_KINDS ? nc++ : CURVE_KINDS - 1;

		if (j == CURVE_KINDS - 1 && nc == CURVE_KINDS && j < i &&
		    m->kinds[cols[j]].max_bytes >= m->kinds[i].max_bytes)
			continue;
		cols[j] = i;
		for (; j > 0 && m->kinds[cols[j]].max_bytes > m->kinds[cols[j - 1]].max_bytes;
		     j--) {
			size_t t = cols[j];

			cols[j] = cols[j - 1];
			cols[j - 1] = t;
		}
	}
	fprintf(f, "\n# live bytes every %.3f s: the most in each step, what was left at its "
		"end%s\n",
		mem_secs(m->width * g),
		m->nr_kinds > nc ? "; the most of the kinds that held the most" : "");
	fprintf(f, "%12s %12s %12s %10s", "offset", "most", "at end", "objects");
	for (size_t c = 0; c < nc; c++)
		fprintf(f, " %14.14s", strmap_get(m->kind_names, m->kinds[cols[c]].name, NULL));
	fputc('\n', f);
	for (size_t i = 0; i < n; i += g) {
		size_t last = MIN(i + g, n) - 1;
		uint64_t max = 0;

		for (size_t j = i; j <= last; j++)
			max = MAX(max, m->curve[j].max_bytes);
		fprintf(f, "%10.3f s %12s", mem_secs(i * m->width), mem_human(b, sizeof(b), max));
		fprintf(f, " %12s %10" PRIu64, mem_human(b, sizeof(b), m->curve[last].end_bytes),
			m->curve[last].end_objs);
		for (size_t c = 0; c < nc; c++) {
			const struct mem_point *p = m->kinds[cols[c]].curve;
			uint64_t km = 0;

			for (size_t j = i; j <= last; j++)
				km = MAX(km, p[j].max_bytes);
			fprintf(f, " %14s", mem_human(b, sizeof(b), km));
		}
		fputc('\n', f);
	}
}

static void json_curve(const struct memory *m, struct json_writer *w)
{
	json_object_open(w, "curve");
	json_add_uint(w, "step_ns", m->width);
	json_array_open(w, "points");
	for (size_t i = 0; i <= m->cur; i++) {
		json_object_open(w, NULL);
		json_add_double(w, "offset_s", mem_secs(i * m->width));
		json_add_uint(w, "max_bytes", m->curve[i].max_bytes);
		json_add_uint(w, "bytes", m->curve[i].end_bytes);
		json_add_uint(w, "objects", m->curve[i].end_objs);
		json_object_open(w, "kinds");
		for (size_t k = 0; k < m->nr_kinds; k++)
			if (m->kinds[k].curve[i].max_bytes)
				json_add_uint(w, strmap_get(m->kind_names, m->kinds[k].name, NULL),
					      m->kinds[k].curve[i].max_bytes);
		json_object_close(w);
		json_object_close(w);
	}
	json_array_close(w);
	json_object_close(w);
}

/* What is live at the end: ages by band, and the oldest per stack (leak candidates). */
static int print_end(struct memory *m, FILE *f, struct json_writer *w, const struct memory_view *v)
{
	uint64_t band_bytes[NR_BANDS] = {}, band_objs[NR_BANDS] = {}, uncertain = 0;
	uint64_t end = m->t_last;
	_cleanup_free_ struct row *rows = NULL;
	size_t n, limit = v->limit ?: 10;
	char b1[32], b2[32];
	int r;

	for (size_t i = 0; i < m->nr_stacks; i++)
		m->stacks[i].end_min_t = UINT64_MAX;
	for (size_t i = 0; i < m->nr_objs; i++) {
		const struct mem_obj *o = &m->objs[i];
		uint64_t age;
		size_t b = 0;

		if (!o->live || !o->selected)
			continue;
		age = (end - o->t) / NSEC_PER_SEC;
		while (bands[b].below_s && age >= bands[b].below_s)
			b++;
		band_bytes[b] += o->bytes;
		band_objs[b]++;
		m->stacks[o->stack].end_min_t = MIN(m->stacks[o->stack].end_min_t, o->t);
		if (m->last_loss_t && o->t <= m->last_loss_t)
			uncertain += o->bytes;
	}
	r = rows_at(m, -1, &rows, &n);
	if (r < 0)
		return r;
	if (w) {
		json_object_open(w, "end");
		json_add_uint(w, "time_ns", end);
		json_add_uint(w, "bytes", m->total.bytes);
		json_add_uint(w, "objects", m->total.objs);
		json_add_uint(w, "uncertain_bytes", uncertain);
		json_array_open(w, "ages");
		for (size_t b = 0; b < NR_BANDS; b++) {
			json_object_open(w, NULL);
			json_add_string(w, "age", bands[b].name);
			json_add_uint(w, "bytes", band_bytes[b]);
			json_add_uint(w, "objects", band_objs[b]);
			json_object_close(w);
		}
		json_array_close(w);
		json_array_open(w, "stacks");
	} else {
		fprintf(f, "\n# still live at the end: %s in %" PRIu64 " objects",
			mem_human(b1, sizeof(b1), m->total.bytes), m->total.objs);
		if (uncertain)
			fprintf(f, " (%s uncertain: may have been freed in events lost)",
				mem_human(b2, sizeof(b2), uncertain));
		fprintf(f, "\n%12s %12s %10s\n", "age", "bytes", "objects");
		for (size_t b = 0; b < NR_BANDS; b++)
			if (band_objs[b])
				fprintf(f, "%12s %12s %10" PRIu64 "\n", bands[b].name,
					mem_human(b1, sizeof(b1), band_bytes[b]), band_objs[b]);
		fprintf(f, "\n# still live at the end by stack (leak candidates: many, and old)\n");
		fprintf(f, "%12s %10s %10s %10s  %s\n", "bytes", "objects", "mean age", "oldest",
			"stack (innermost first)");
	}
	for (size_t i = 0; i < n && i < limit; i++) {
		const struct mem_stack *st = &m->stacks[rows[i].stack];
		double oldest = st->end_min_t <= end ? mem_secs(end - st->end_min_t) : 0;
		_cleanup_free_ char *s = NULL, *line = NULL;

		if (w) {
			json_object_open(w, NULL);
			json_add_uint(w, "bytes", rows[i].v.bytes);
			json_add_uint(w, "objects", rows[i].v.objs);
			json_add_double(w, "mean_age_s", mean_age(m, &rows[i].v, end));
			json_add_double(w, "oldest_age_s", oldest);
			json_frames(w, mem_stack_key(m, rows[i].stack));
			json_object_close(w);
			continue;
		}
		if (stack_line(&s, mem_stack_key(m, rows[i].stack)) < 0 ||
		    strprintf(&line, "%12s %10" PRIu64 " %8.1f s %8.1f s  %s",
			      mem_human(b1, sizeof(b1), rows[i].v.bytes), rows[i].v.objs,
			      mean_age(m, &rows[i].v, end), oldest, s) < 0)
			return -ENOMEM;
		calltree_put_line(f, line, v->width);
	}
	if (w) {
		json_array_close(w);
		json_object_close(w);
	}
	return 0;
}

/* Allocations freed within churn_ns, by stack. */
static int print_churn(struct memory *m, FILE *f, struct json_writer *w,
		       const struct memory_view *v)
{
	_cleanup_free_ struct row *rows = calloc(m->nr_stacks ?: 1, sizeof(*rows));
	size_t n = 0, limit = v->limit ?: 10;
	char b1[32];

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_stacks; i++)
		if (m->stacks[i].churn)
			rows[n++] = (struct row){ .stack = i, .sort = m->stacks[i].churn };
	qsort(rows, n, sizeof(*rows), row_cmp);
	if (w) {
		json_object_open(w, "churn");
		json_add_double(w, "within_s", mem_secs(m->o.churn_ns));
		json_array_open(w, "stacks");
	} else {
		fprintf(f, "\n# churn: allocations freed within %.3f s, by stack\n",
			mem_secs(m->o.churn_ns));
		fprintf(f, "%12s %12s %12s  %s\n", "freed soon", "bytes", "allocations",
			"stack (innermost first)");
	}
	for (size_t i = 0; i < n && i < limit; i++) {
		const struct mem_stack *st = &m->stacks[rows[i].stack];
		_cleanup_free_ char *s = NULL, *line = NULL;

		if (w) {
			json_object_open(w, NULL);
			json_add_uint(w, "freed_soon", st->churn);
			json_add_uint(w, "freed_soon_bytes", st->churn_bytes);
			json_add_uint(w, "allocations", st->allocs);
			json_frames(w, mem_stack_key(m, rows[i].stack));
			json_object_close(w);
			continue;
		}
		if (stack_line(&s, mem_stack_key(m, rows[i].stack)) < 0 ||
		    strprintf(&line, "%12" PRIu64 " %12s %12" PRIu64 "  %s", st->churn,
			      mem_human(b1, sizeof(b1), st->churn_bytes), st->allocs, s) < 0)
			return -ENOMEM;
		calltree_put_line(f, line, v->width);
	}
	if (w) {
		json_array_close(w);
		json_object_close(w);
	}
	return 0;
}

/* Slab allocations by call site (with callers), most bytes first. */
static int print_callers(const struct memory *m, FILE *f, struct json_writer *w,
			 const struct memory_view *v)
{
	_cleanup_free_ struct row *rows = calloc(m->nr_sites ?: 1, sizeof(*rows));
	size_t limit = v->limit ?: 10;
	char b1[32];

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_sites; i++)
		rows[i] = (struct row){ .stack = i, .sort = m->sites[i].bytes };
	qsort(rows, m->nr_sites, sizeof(*rows), row_cmp);
	if (w) {
		json_array_open(w, "callers");
	} else {
		fprintf(f, "\n# slab allocations by call site (%zu call sites)\n", m->nr_sites);
		fprintf(f, "%12s %12s %10s  %s\n", "allocations", "bytes", "per alloc", "call site");
	}
	for (size_t i = 0; i < m->nr_sites && i < limit; i++) {
		const struct mem_site *site = &m->sites[rows[i].stack];
		const char *name = strmap_get(m->site_names, site->name, NULL);

		if (w) {
			json_object_open(w, NULL);
			json_add_string(w, "call_site", name);
			json_add_uint(w, "allocations", site->allocs);
			json_add_uint(w, "bytes", site->bytes);
			json_object_close(w);
			continue;
		}
		fprintf(f, "%12" PRIu64 " %12s %10" PRIu64 "  %s\n", site->allocs,
			mem_human(b1, sizeof(b1), site->bytes),
			site->allocs ? site->bytes / site->allocs : 0, name);
	}
	if (w)
		json_array_close(w);
	else if (m->nr_sites > limit)
		fprintf(f, "%12s (%zu more call sites)\n", "", m->nr_sites - limit);
	return 0;
}

/* The stacks whose objects lost their frees, most first, as JSON or text lines. */
static int lost_free_stacks(const struct memory *m, FILE *f, struct json_writer *w,
			    const struct memory_view *v)
{
	_cleanup_free_ struct row *rows = calloc(m->nr_stacks ?: 1, sizeof(*rows));
	size_t n = 0, limit = v->limit ?: 10;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_stacks; i++)
		if (m->stacks[i].lost_frees)
			rows[n++] = (struct row){ .stack = i, .sort = m->stacks[i].lost_frees };
	qsort(rows, n, sizeof(*rows), row_cmp);
	if (w)
		json_array_open(w, "lost_free_stacks");
	for (size_t i = 0; i < n && i < limit; i++) {
		_cleanup_free_ char *s = NULL, *line = NULL;

		if (w) {
			json_object_open(w, NULL);
			json_add_uint(w, "lost_frees", rows[i].sort);
			json_frames(w, mem_stack_key(m, rows[i].stack));
			json_object_close(w);
			continue;
		}
		if (stack_line(&s, mem_stack_key(m, rows[i].stack)) < 0 ||
		    strprintf(&line, "%12" PRIu64 "  %s", rows[i].sort, s) < 0)
			return -ENOMEM;
		calltree_put_line(f, line, v->width);
	}
	if (w)
		json_array_close(w);
	return 0;
}

static const char *const loss_kinds[MEM_LOSS_KIND_MAX] = {
	[MEM_LOSS_CPU] = "cpu",
	[MEM_LOSS_RECORDING] = "recording",
	[MEM_LOSS_SEGMENT] = "segment",
};

/* What could not be paired, and where pairs are uncertain. */
static int print_gaps(const struct memory *m, FILE *f, struct json_writer *w,
		      const struct memory_view *v)
{
	char b1[32], when[160];
	int r;

	if (w) {
		json_object_open(w, "gaps");
		json_add_uint(w, "unknown_slab_frees", m->unknown_frees[MEM_SLAB]);
		json_add_uint(w, "unknown_page_frees", m->unknown_frees[MEM_PAGES]);
		json_add_uint(w, "lost_frees", m->lost_frees);
		json_add_uint(w, "lost_free_bytes", m->lost_free_bytes);
		r = lost_free_stacks(m, f, w, v);
		if (r < 0)
			return r;
		json_add_uint(w, "boots", m->boots);
		json_add_uint(w, "dropped_at_boot_end_objects", m->dropped_objs);
		json_add_uint(w, "dropped_at_boot_end_bytes", m->dropped_bytes);
		json_add_uint(w, "losses", m->all_losses);
		json_array_open(w, "loss_list");
		for (size_t i = 0; i < m->nr_losses; i++) {
			const struct mem_loss *l = &m->losses[i];

			json_object_open(w, NULL);
			json_add_double(w, "offset_s", mem_secs(l->t - m->t0));
			json_add_double(w, "trace_s", mem_secs(l->ts));
			json_add_string(w, "kind", loss_kinds[l->kind]);
			if (l->kind == MEM_LOSS_RECORDING)
				json_add_null(w, "cpu");
			else
				json_add_uint(w, "cpu", l->cpu);
			if (l->kind == MEM_LOSS_SEGMENT)
				json_add_string(w, "segment", l->segment);
			json_add_int(w, "lost_events", l->lost);
			json_add_uint(w, "uncertain_bytes", l->live_bytes);
			json_object_close(w);
		}
		json_array_close(w);
		json_object_close(w);
		return 0;
	}
	fprintf(f, "\n# gaps\n");
	fprintf(f, "frees of allocations not read (made before the selection): %" PRIu64
		" slab, %" PRIu64 " page\n", m->unknown_frees[MEM_SLAB],
		m->unknown_frees[MEM_PAGES]);
	fprintf(f, "lost frees (allocated again before a free was seen): %" PRIu64 " (%s)\n",
		m->lost_frees, mem_human(b1, sizeof(b1), m->lost_free_bytes));
	r = lost_free_stacks(m, f, NULL, v);
	if (r < 0)
		return r;
	if (m->boots > 1)
		fprintf(f, "%zu boots: %" PRIu64
			" objects (%s) live at a boot's end were dropped\n", m->boots,
			m->dropped_objs, mem_human(b1, sizeof(b1), m->dropped_bytes));
	if (!m->all_losses) {
		fprintf(f, "no events lost: every pair is certain\n");
		return 0;
	}
	fprintf(f, "events lost %" PRIu64
		" times; what was live then may have been freed unseen:\n", m->all_losses);
	for (size_t i = 0; i < m->nr_losses; i++) {
		const struct mem_loss *l = &m->losses[i];

		if (l->kind == MEM_LOSS_RECORDING)
			fprintf(f, "  %s: a new recording of the boot, %s uncertain\n",
				mem_moment_text(when, sizeof(when), m, l->t, l->ts),
				mem_human(b1, sizeof(b1), l->live_bytes));
		else if (l->kind == MEM_LOSS_SEGMENT)
			fprintf(f, "  %s: CPU %u lost %lld events somewhere in %s (its pages do not "
				"say where): %s uncertain, and all allocated until its end\n",
				mem_moment_text(when, sizeof(when), m, l->t, l->ts), l->cpu,
				l->lost, l->segment, mem_human(b1, sizeof(b1), l->live_bytes));
		else
			fprintf(f, "  %s: CPU %u lost %lld events, %s uncertain\n",
				mem_moment_text(when, sizeof(when), m, l->t, l->ts), l->cpu,
				l->lost, mem_human(b1, sizeof(b1), l->live_bytes));
	}
	if (m->all_losses > m->nr_losses)
		fprintf(f, "  (%" PRIu64 " more)\n", m->all_losses - m->nr_losses);
	return 0;
}

void mem_finish(struct memory *m)
{
	if (m->o.at && !m->moment[MEM_AT].set)
		mem_moment_set(m, MEM_AT);
	if (m->o.baseline && !m->moment[MEM_BASE].set)
		mem_moment_set(m, MEM_BASE);
}

struct growth_row {
	size_t stack;
	struct mem_live before, after;
	int64_t growth;
};

static int growth_cmp(const void *a, const void *b)
{
	const struct growth_row *x = a, *y = b;

	if (x->growth != y->growth)
		return x->growth > y->growth ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

struct mem_live mem_growth_to(const struct memory *m, const struct mem_snap *s,
			      const struct mem_live *v)
{
	return m->moment[MEM_AT].set ? mem_at(m, s, v, MEM_AT) : *v;
}

static void json_growth_end(struct json_writer *w, const char *key, const struct memory *m,
			    uint64_t t, uint64_t ts, const struct mem_live *v)
{
	char d[64];

	json_object_open(w, key);
	json_add_uint(w, "time_ns", t);
	json_add_double(w, "offset_s", mem_secs(t - m->t0));
	json_add_double(w, "trace_s", mem_secs(ts));
	if (m->wall_known)
		json_add_string(w, "date", date(d, sizeof(d), t));
	json_add_uint(w, "bytes", v->bytes);
	json_add_uint(w, "objects", v->objs);
	json_object_close(w);
}

/* --baseline: what each stack held more (or less) at --at, or at the end, than then. */
static int print_growth(const struct memory *m, FILE *f, struct json_writer *w,
			const struct memory_view *v)
{
	const struct mem_moment *b = &m->moment[MEM_BASE], *a = &m->moment[MEM_AT];
	_cleanup_free_ struct growth_row *rows = calloc(m->nr_stacks ?: 1, sizeof(*rows));
	struct mem_live to = a->set ? a->total : m->total;
	uint64_t t = a->set ? a->t : m->t_last, ts = a->set ? a->ts : m->ts_last;
	size_t n = 0, limit = v->limit ?: 10;
	char b1[32], b2[32], b3[32], when[160], when2[160];

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_stacks; i++) {
		const struct mem_stack *st = &m->stacks[i];
		struct growth_row r = { .stack = i,
					.before = mem_at(m, st->snap, &st->live, MEM_BASE),
					.after = mem_growth_to(m, st->snap, &st->live) };

		r.growth = (int64_t)r.after.bytes - (int64_t)r.before.bytes;
		if (r.growth)
			rows[n++] = r;
	}
	qsort(rows, n, sizeof(*rows), growth_cmp);
	if (w) {
		json_object_open(w, "growth");
		json_growth_end(w, "from", m, b->t, b->ts, &b->total);
		json_growth_end(w, "to", m, t, ts, &to);
		json_array_open(w, "stacks");
	} else {
		fprintf(f, "\n# growth from %s to %s: %s -> %s\n",
			mem_moment_text(when, sizeof(when), m, b->t, b->ts),
			a->set ? mem_moment_text(when2, sizeof(when2), m, t, ts) : "the end",
			mem_human(b1, sizeof(b1), b->total.bytes),
			mem_human(b2, sizeof(b2), to.bytes));
		fprintf(f, "%12s %12s %12s %10s  %s\n", "growth", "before", "after", "objects",
			"stack (innermost first)");
	}
	for (size_t i = 0; i < n && i < limit; i++) {
		const struct growth_row *r = &rows[i];
		uint64_t change = (uint64_t)(r->growth < 0 ? -r->growth : r->growth);
		_cleanup_free_ char *sl = NULL, *line = NULL;

		if (w) {
			json_object_open(w, NULL);
			json_add_int(w, "growth_bytes", r->growth);
			json_add_uint(w, "before_bytes", r->before.bytes);
			json_add_uint(w, "after_bytes", r->after.bytes);
			json_add_uint(w, "before_objects", r->before.objs);
			json_add_uint(w, "after_objects", r->after.objs);
			json_frames(w, mem_stack_key(m, r->stack));
			json_object_close(w);
			continue;
		}
		(void)snprintf(b3, sizeof(b3), "%s%s", r->growth < 0 ? "-" : "+",
			       mem_human(b1, sizeof(b1), change));
		if (stack_line(&sl, mem_stack_key(m, r->stack)) < 0 ||
		    strprintf(&line, "%12s %12s %12s %+10" PRId64 "  %s", b3,
			      mem_human(b1, sizeof(b1), r->before.bytes),
			      mem_human(b2, sizeof(b2), r->after.bytes),
			      (int64_t)r->after.objs - (int64_t)r->before.objs, sl) < 0)
			return -ENOMEM;
		calltree_put_line(f, line, v->width);
	}
	if (w) {
		json_array_close(w);
		json_object_close(w);
	}
	return 0;
}

int memory_print(struct memory *m, FILE *f, const struct memory_view *v)
{
	struct json_writer jw, *w = NULL;
	char b1[32], when[160];
	int r;

	assert(m);
	assert(f);
	assert(v);
	mem_finish(m);
	if (v->json) {
		json_writer_init(&jw, JSON_MAX);
		w = &jw;
		json_object_open(w, NULL);
		json_object_open(w, "events");
		json_add_uint(w, "slab_allocations", m->allocs[MEM_SLAB]);
		json_add_uint(w, "slab_frees", m->frees[MEM_SLAB]);
		json_add_uint(w, "page_allocations", m->allocs[MEM_PAGES]);
		json_add_uint(w, "page_frees", m->frees[MEM_PAGES]);
		json_add_uint(w, "selected_allocations", m->selected);
		json_object_close(w);
		json_add_bool(w, "wall_clock", m->wall_known);
		json_add_uint(w, "start_ns", m->t0);
		json_add_double(w, "span_s", mem_secs(m->t_last - m->t0));
		json_curve(m, w);
	} else {
		fprintf(f, "# live memory: %" PRIu64 " slab allocations, %" PRIu64
			" frees; %" PRIu64 " page allocations, %" PRIu64 " frees; %" PRIu64
			" allocations counted\n",
			m->allocs[MEM_SLAB], m->frees[MEM_SLAB], m->allocs[MEM_PAGES],
			m->frees[MEM_PAGES], m->selected);
		fprintf(f, "# from %s for %.3f s\n",
			mem_moment_text(when, sizeof(when), m, m->t0, m->ts0),
			mem_secs(m->t_last - m->t0));
		print_curve(m, f);
	}
	r = print_moment(m, f, w, v, MEM_PEAK, "peak");
	if (r >= 0 && m->moment[MEM_AT].set)
		r = print_moment(m, f, w, v, MEM_AT, "at");
	if (r >= 0 && m->moment[MEM_BASE].set)
		r = print_growth(m, f, w, v);
	if (r >= 0)
		r = print_end(m, f, w, v);
	if (r >= 0)
		r = print_churn(m, f, w, v);
	if (r >= 0 && m->o.callers)
		r = print_callers(m, f, w, v);
	if (r >= 0)
		r = print_gaps(m, f, w, v);
	if (w) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		json_object_close(w);
		if (r >= 0)
			r = json_writer_finish(w, &text, &len);
		if (r >= 0 && (fwrite(text, 1, len, f) != len || fputc('\n', f) == EOF))
			r = -EIO;
		json_writer_done(w);
	}
	(void)b1;
	return r;
}
