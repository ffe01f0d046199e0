/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pprof export (pprof.h). Samples are aggregated as they come: strings,
 * event types, locations (by address), functions (by name) and samples
 * (by a binary key of event, task, CPU and location indexes) are each
 * interned in a strmap, whose counter holds the sample count. Writing
 * builds the protobuf-c message from the tables in one go, packs it and
 * gzips it with zlib (the format pprof reads is a gzipped message).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "buf.h"
#include "pprof.h"
#include "profile.pb-c.h"
#include "strmap.h"

struct pprof {
	struct strmap *strings;		/* string table; index 0 is "" */
	struct strmap *events;		/* event names, in sample_type order */
	struct strmap *locations;	/* 8-byte addresses */
	size_t *loc_function;		/* per location: function index */
	size_t loc_cap;
	struct strmap *functions;	/* function names */
	struct strmap *samples;		/* struct sample_key + location indexes; counter = count */
	uint64_t start_ns, duration_ns;
	bool no_pid_cpu;		/* samples without pid and cpu labels */
	int64_t *comments;		/* string indexes */
	size_t nr_comments, cap_comments;
};

struct sample_key {
	uint32_t event;
	int32_t pid;
	uint32_t cpu;
	uint32_t comm;			/* string index */
	uint32_t nr;			/* location indexes that follow (uint32_t each) */
};

struct pprof *pprof_free(struct pprof *p)
{
	if (!p)
		return NULL;
	strmap_free(p->strings);
	strmap_free(p->events);
	strmap_free(p->locations);
	strmap_free(p->functions);
	strmap_free(p->samples);
	free(p->loc_function);
	free(p->comments);
	free(p);
	return NULL;
}

struct pprof *pprof_new(void)
{
	_cleanup_(pprof_freep) struct pprof *p = calloc(1, sizeof(*p));
	size_t idx;

	if (!p)
		return NULL;
	p->strings = strmap_new();
	p->events = strmap_new();
	p->locations = strmap_new();
	p->functions = strmap_new();
	p->samples = strmap_new();
	if (!p->strings || !p->events || !p->locations || !p->functions || !p->samples)
		return NULL;
	if (strmap_intern(p->strings, "", 0, &idx) < 0)
		return NULL;
	return steal_ptr(p);
}

void pprof_set_time(struct pprof *p, uint64_t start_ns, uint64_t duration_ns)
{
	assert(p);

	p->start_ns = start_ns;
	p->duration_ns = duration_ns;
}

static int string(struct pprof *p, const char *s, uint32_t *ret)
{
	size_t idx;
	int r = strmap_intern(p->strings, s, strlen(s), &idx);

	if (r < 0)
		return r;
	*ret = (uint32_t)idx;
	return 0;
}

/* Index of the location of frame f, created with its function if new. */
static int location(struct pprof *p, const struct sample_frame *f, uint32_t *ret)
{
	char buf[SAMPLE_FRAME_NAME_MAX];
	const char *name;
	size_t idx, fn;
	int r;

	r = strmap_intern(p->locations, (const char *)&f->addr, sizeof(f->addr), &idx);
	if (r < 0)
		return r;
	*ret = (uint32_t)idx;
	if (r == 0)
		return 0;
	if (GREEDY_REALLOC(p->loc_function, p->loc_cap, idx + 1) < 0)
		return -ENOMEM;
	name = sample_frame_name(f, buf, sizeof(buf));
	r = strmap_intern(p->functions, name, strlen(name), &fn);
	if (r < 0)
		return r;
	p->loc_function[idx] = fn;
	return 0;
}

/* Count s n times (the event's total too). */
static int add_sample(struct pprof *p, const struct sample *s, uint64_t n)
{
	_cleanup_(buf_done) struct buf key = {};
	struct sample_key k = { .pid = p->no_pid_cpu ? 0 : s->pid, .cpu = p->no_pid_cpu ? 0 : s->cpu,
				.nr = (uint32_t)s->nr_frames };
	size_t idx;
	int r;

	assert(p);

	r = strmap_intern(p->events, s->event, strlen(s->event), &idx);
	if (r < 0)
		return r;
	k.event = (uint32_t)idx;
	*strmap_counter(p->events, idx) += n;
	r = string(p, s->comm ?: "<...>", &k.comm);
	if (r < 0)
		return r;
	r = buf_append(&key, &k, sizeof(k));
	for (size_t i = 0; r >= 0 && i < s->nr_frames; i++) {
		uint32_t loc;

		r = location(p, &s->frames[i], &loc);
		if (r >= 0)
			r = buf_append(&key, &loc, sizeof(loc));
	}
	if (r < 0)
		return r;
	r = strmap_intern(p->samples, (const char *)key.data, key.len, &idx);
	if (r < 0)
		return r;
	*strmap_counter(p->samples, idx) += n;
	return 0;
}

int pprof_add(struct pprof *p, const struct sample *s)
{
	return add_sample(p, s, 1);
}

/* Everything pprof_write() allocates for the message, freed at once. */
struct message {
	Perftools__Profiles__Profile prof;
	Perftools__Profiles__ValueType *types, **typep;
	Perftools__Profiles__Mapping map, *mapp;
	Perftools__Profiles__Location *locs, **locp;
	Perftools__Profiles__Line *lines, **linep;
	Perftools__Profiles__Function *funcs, **funcp;
	Perftools__Profiles__Sample *samples, **samplep;
	Perftools__Profiles__Label *labels, **labelp;
	uint64_t *loc_ids;
	int64_t *values;
	char **strings;
};

static void message_done(struct message *m)
{
	free(m->types);
	free(m->typep);
	free(m->locs);
	free(m->locp);
	free(m->lines);
	free(m->linep);
	free(m->funcs);
	free(m->funcp);
	free(m->samples);
	free(m->samplep);
	free(m->labels);
	free(m->labelp);
	free(m->loc_ids);
	free(m->values);
	free(m->strings);
}

/* The string index of s, which must have been interned. */
static int64_t str_index(struct pprof *p, const char *s)
{
	size_t idx = 0;

	(void)strmap_intern(p->strings, s, strlen(s), &idx);
	return (int64_t)idx;
}

static int build_tables(struct pprof *p, struct message *m)
{
	size_t nt = strmap_size(p->events), nl = strmap_size(p->locations);
	size_t nf = strmap_size(p->functions);
	uint64_t best = 0;

	m->types = calloc(nt, sizeof(*m->types));
	m->typep = calloc(nt, sizeof(*m->typep));
	m->locs = calloc(nl, sizeof(*m->locs));
	m->locp = calloc(nl, sizeof(*m->locp));
	m->lines = calloc(nl, sizeof(*m->lines));
	m->linep = calloc(nl, sizeof(*m->linep));
	m->funcs = calloc(nf, sizeof(*m->funcs));
	m->funcp = calloc(nf, sizeof(*m->funcp));
	if ((nt && (!m->types || !m->typep)) || (nl && (!m->locs || !m->locp || !m->lines ||
							  !m->linep)) ||
	    (nf && (!m->funcs || !m->funcp)))
		return -ENOMEM;
	for (size_t i = 0; i < nt; i++) {
		uint64_t total = *strmap_counter(p->events, i);

		perftools__profiles__value_type__init(&m->types[i]);
		m->types[i].type = str_index(p, strmap_get(p->events, i, NULL));
		m->types[i].unit = str_index(p, "count");
		m->typep[i] = &m->types[i];
		/* pprof shows the default sample type first: the most frequent event */
		if (total > best) {
			best = total;
			m->prof.default_sample_type = m->types[i].type;
		}
	}
	for (size_t i = 0; i < nf; i++) {
		perftools__profiles__function__init(&m->funcs[i]);
		m->funcs[i].id = i + 1;
		m->funcs[i].name = str_index(p, strmap_get(p->functions, i, NULL));
		m->funcs[i].system_name = m->funcs[i].name;
		m->funcp[i] = &m->funcs[i];
	}
	for (size_t i = 0; i < nl; i++) {
		uint64_t addr;

		memcpy(&addr, strmap_get(p->locations, i, NULL), sizeof(addr));
		perftools__profiles__line__init(&m->lines[i]);
		m->lines[i].function_id = p->loc_function[i] + 1;
		m->linep[i] = &m->lines[i];
		perftools__profiles__location__init(&m->locs[i]);
		m->locs[i].id = i + 1;
		m->locs[i].mapping_id = 1;
		m->locs[i].address = addr;
		m->locs[i].n_line = 1;
		m->locs[i].line = &m->linep[i];
		m->locp[i] = &m->locs[i];
	}
	m->prof.n_sample_type = nt;
	m->prof.sample_type = m->typep;
	m->prof.n_function = nf;
	m->prof.function = m->funcp;
	m->prof.n_location = nl;
	m->prof.location = m->locp;

	/* One mapping for the kernel: its locations come with their functions. */
	perftools__profiles__mapping__init(&m->map);
	m->map.id = 1;
	m->map.memory_start = 0;
	m->map.memory_limit = UINT64_MAX;
	m->map.filename = str_index(p, "[kernel.kallsyms]");
	m->map.has_functions = true;
	m->mapp = &m->map;
	m->prof.n_mapping = 1;
	m->prof.mapping = &m->mapp;
	return 0;
}

static int build_samples(struct pprof *p, struct message *m)
{
	size_t ns = strmap_size(p->samples), nt = strmap_size(p->events), nloc = 0;
	int64_t key_comm = str_index(p, "comm"), key_pid = str_index(p, "pid");
	int64_t key_cpu = str_index(p, "cpu"), unit = str_index(p, "id");

	for (size_t i = 0; i < ns; i++) {
		struct sample_key k;

		memcpy(&k, strmap_get(p->samples, i, NULL), sizeof(k));
		nloc += k.nr;
	}
	m->samples = calloc(ns, sizeof(*m->samples));
	m->samplep = calloc(ns, sizeof(*m->samplep));
	m->labels = calloc(ns * 3, sizeof(*m->labels));
	m->labelp = calloc(ns * 3, sizeof(*m->labelp));
	m->loc_ids = calloc(nloc ?: 1, sizeof(*m->loc_ids));
	m->values = calloc(ns * nt ?: 1, sizeof(*m->values));
	if ((ns && (!m->samples || !m->samplep || !m->labels || !m->labelp)) || !m->loc_ids ||
	    !m->values)
		return -ENOMEM;
	nloc = 0;
	for (size_t i = 0; i < ns; i++) {
		Perftools__Profiles__Sample *s = &m->samples[i];
		Perftools__Profiles__Label *l = &m->labels[i * 3];
		const char *key = strmap_get(p->samples, i, NULL);
		struct sample_key k;

		memcpy(&k, key, sizeof(k));
		perftools__profiles__sample__init(s);
		s->location_id = &m->loc_ids[nloc];
		s->n_location_id = k.nr;
		for (uint32_t j = 0; j < k.nr; j++) {
			uint32_t loc;

			memcpy(&loc, key + sizeof(k) + j * sizeof(loc), sizeof(loc));
			m->loc_ids[nloc++] = loc + 1;
		}
		s->value = &m->values[i * nt];
		s->n_value = nt;
		s->value[k.event] = (int64_t)*strmap_counter(p->samples, i);
		for (int j = 0; j < 3; j++) {
			perftools__profiles__label__init(&l[j]);
			m->labelp[i * 3 + j] = &l[j];
		}
		l[0].key = key_comm;
		l[0].str = k.comm;
		l[1].key = key_pid;
		l[1].num = k.pid;
		/* pprof drops numeric labels that are 0 unless they have a unit */
		l[1].num_unit = unit;
		l[2].num_unit = unit;
		l[2].key = key_cpu;
		l[2].num = k.cpu;
		s->label = &m->labelp[i * 3];
		s->n_label = p->no_pid_cpu ? 1 : 3;
		m->samplep[i] = s;
	}
	m->prof.n_sample = ns;
	m->prof.sample = m->samplep;
	return 0;
}

/* gzip len bytes at data into out. */
static int gzip(const uint8_t *data, size_t len, struct buf *out)
{
	z_stream z = {};
	int r;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	r = buf_reserve(out, deflateBound(&z, len) + 32);
	if (r < 0) {
		deflateEnd(&z);
		return r;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = out->data;
	z.avail_out = (uInt)(out->cap);
	r = deflate(&z, Z_FINISH);
	out->len = z.total_out;
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -EIO;
}

int pprof_write(struct pprof *p, int fd)
{
	_cleanup_(message_done) struct message m = {};
	_cleanup_(buf_done) struct buf packed = {}, gz = {};
	size_t n;
	int r;

	assert(p);

	perftools__profiles__profile__init(&m.prof);
	/* every string the tables refer to must exist before the table is copied out */
	(void)str_index(p, "count");
	r = build_tables(p, &m);
	if (r >= 0)
		r = build_samples(p, &m);
	if (r < 0)
		return r;
	m.prof.time_nanos = (int64_t)p->start_ns;
	m.prof.duration_nanos = (int64_t)p->duration_ns;
	m.prof.comment = p->comments;
	m.prof.n_comment = p->nr_comments;

	n = strmap_size(p->strings);
	m.strings = calloc(n, sizeof(*m.strings));
	if (!m.strings)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		m.strings[i] = (char *)strmap_get(p->strings, i, NULL);
	m.prof.n_string_table = n;
	m.prof.string_table = m.strings;

	r = buf_reserve(&packed, perftools__profiles__profile__get_packed_size(&m.prof));
	if (r < 0)
		return r;
	packed.len = perftools__profiles__profile__pack(&m.prof, packed.data);
	r = gzip(packed.data, packed.len, &gz);
	if (r < 0)
		return r;
	return write_all(fd, gz.data, gz.len);
}

/* ---- profile comments, sample labels, lost events ---- */

void pprof_set_pid_cpu_labels(struct pprof *p, bool on)
{
	p->no_pid_cpu = !on;
}

int pprof_add_comment(struct pprof *p, const char *text)
{
	uint32_t idx;
	int r;

	if (GREEDY_REALLOC(p->comments, p->cap_comments, p->nr_comments + 1) < 0)
		return -ENOMEM;
	r = string(p, text, &idx);
	if (r < 0)
		return r;
	p->comments[p->nr_comments++] = idx;
	return 0;
}

int pprof_add_lost(struct pprof *p, uint64_t count, unsigned int cpu)
{
	static const struct sample_frame lost = { PPROF_LOST_ADDR, "[lost events]" };
	size_t n = strmap_size(p->events);

	for (size_t i = 0; i < n; i++) {
		struct sample s = { .event = strmap_get(p->events, i, NULL), .cpu = cpu,
				    .comm = "", .nr_frames = 1, .frames = &lost };
		uint64_t before = *strmap_counter(p->events, i);
		int r = add_sample(p, &s, count);

		if (r < 0)
			return r;
		/* the default sample type stays the most frequent event */
		*strmap_counter(p->events, i) = before;
	}
	return 0;
}
