/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counting the stack ids of a finished segment that its own tables cannot
 * resolve (stack-audit.h), for the index, info and status. Two passes over the
 * file: the tables and generation windows first (they are written at the
 * end of a segment), then the pages in file order, so that per-CPU strict
 * boundaries take effect where they stand in each CPU's stream. Only the
 * page walk (lib/segment/page-walk.c) and the resolution run per event: no event
 * formatting, no libtraceevent.
 *
 * A stack that never came counts too, as the decoder (lib/decode/decode.c) says
 * it: an event that the segment's stored config records with a stack,
 * then a strict boundary of its CPU before its stack (tracing was paused
 * in between), then another event or the end of the segment; and a
 * stack id that comes after such a boundary, whose generation is not
 * known.
 */
#include <stdio.h>

#include "stack-audit.h"
#include "config.h"
#include "segment.h"
#include "stacktab.h"
#include "util.h"

#define MAX_EVENT_TYPES 65536

struct audit {
	struct stacktab *tab;
	char *config;				/* the stored config, NULL if none */
	struct named_text *formats;		/* "SYSTEM/EVENT" and its ID line */
	size_t nr_formats;
	uint8_t wants[MAX_EVENT_TYPES / 8];	/* event types recorded with a stack */
	struct audit_cpu {
		bool want, crossed;
	} *cpus;
	size_t nr_cpus;
	uint64_t refs, unresolved;
};

static void audit_done(struct audit *a)
{
	stacktab_free(a->tab);
	free(a->config);
	named_texts_free(&a->formats, &a->nr_formats);
	free(a->cpus);
}

/* Keep what tells which events want a stack: the config and the event ids. */
static int keep_file(struct audit *a, const struct segment_record *rec)
{
	const char *name = (const char *)rec->data, *content, *id;
	const uint8_t *nul = memchr(rec->data, 0, MIN(rec->len, (size_t)256));
	char sysev[256];
	size_t len;

	if (!nul)
		return 0;
	content = (const char *)nul + 1;
	len = rec->len - (size_t)(nul + 1 - rec->data);
	if (streq(name, "config") && !a->config) {
		a->config = strndup(content, len);
		return a->config ? 0 : -ENOMEM;
	}
	/* events/SYSTEM/EVENT/format */
	if (!startswith(name, "events/") || strlen(name) < 16 ||
	    !streq(name + strlen(name) - 7, "/format") || strlen(name) - 14 >= sizeof(sysev))
		return 0;
	(void)snprintf(sysev, sizeof(sysev), "%.*s", (int)(strlen(name) - 14), name + 7);
	id = memmem(content, len, "\nID: ", 5);
	if (!id || !strchr(sysev, '/'))
		return 0;
	*strchr(sysev, '/') = ':';
	return named_texts_append(&a->formats, &a->nr_formats, sysev, id + 5,
				  strnlen(id + 5, len - (size_t)(id + 5 - content)));
}

static void want_stack(const char *system, const char *name, void *userdata)
{
	struct audit *a = userdata;
	char key[256];

	(void)snprintf(key, sizeof(key), "%s:%s", system, name);
	for (size_t k = 0; k < a->nr_formats; k++) {
		long id = strtol(a->formats[k].data, NULL, 10);

		if (streq(a->formats[k].name, key) && id >= 0 && id < MAX_EVENT_TYPES)
			a->wants[id / 8] |= (uint8_t)(1u << (id % 8));
	}
}

static void find_wants(struct audit *a)
{
	/* a config this reader cannot parse: no event is known to want a stack */
	if (a->config)
		(void)config_stack_events(a->config, want_stack, a);
}

static bool wants_stack(const struct audit *a, int type)
{
	return type >= 0 && type < MAX_EVENT_TYPES && (a->wants[type / 8] & (1u << (type % 8)));
}

static struct audit_cpu *audit_cpu(struct audit *a, uint32_t cpu)
{
	if (cpu >= STACKTAB_MAX_CPUS)
		return NULL;
	if (cpu >= a->nr_cpus) {
		struct audit_cpu *n = reallocarray(a->cpus, cpu + 1, sizeof(*n));

		if (!n)
			return NULL;
		memset(n + a->nr_cpus, 0, (cpu + 1 - a->nr_cpus) * sizeof(*n));
		a->cpus = n;
		a->nr_cpus = cpu + 1;
	}
	return &a->cpus[cpu];
}

/* The stack of the CPU's last event did not come before the pause: count it. */
static void lost_stack(struct audit *a, struct audit_cpu *c)
{
	if (c->want && c->crossed) {
		a->refs++;
		a->unresolved++;
	}
	c->want = c->crossed = false;
}

static int load_tables(const char *path, struct audit *a)
{
	struct stacktab *t = a->tab;
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct segment_record rec;
	int r;

	r = segment_reader_open(path, &rd);
	if (r < 0)
		return r;
	while ((r = segment_reader_next(rd, &rec)) > 0) {
		struct segment_generation g;

		if (rec.type == SEGMENT_REC_STACKS) {
			r = stacktab_add_stacks(t, rec.data, rec.len);
		} else if (rec.type == SEGMENT_REC_FILE) {
			r = keep_file(a, &rec);
		} else if (rec.type == SEGMENT_REC_GENERATION) {
			r = segment_generation_decode(rec.data, rec.len, &g);
			if (r == 0)
				r = stacktab_add_generation(t, rec.cpu, &g);
		}
		if (r < 0)
			return r;
	}
	if (r == 0)
		find_wants(a);
	return r;
}

static int audit_pages(struct audit *a, const struct page_layout *l, uint32_t cpu,
		       const uint8_t *data, size_t len)
{
	struct page_format f = page_layout_format(l);
	struct audit_cpu *c = audit_cpu(a, cpu);
	struct page_walk w;
	size_t off = 0;
	int r;

	if (!c)
		return -ENOMEM;
	while ((r = page_walk_payload_next(&w, &f, data, len, &off)) > 0) {
		struct page_entry ev;

		while ((r = page_walk_next(&w, &ev)) > 0) {
			int32_t id;

			if (ev.type < 0)
				continue;
			if (ev.type != l->stack_id_id) {
				if (ev.type == l->kernel_stack_id || ev.type == l->stack_ref_id) {
					c->want = c->crossed = false;
					continue;
				}
				lost_stack(a, c);
				c->want = wants_stack(a, ev.type);
				continue;
			}
			if (ev.len < 12)
				continue;
			memcpy(&id, ev.payload + 8, 4);
			a->refs++;
			if (c->want && c->crossed)
				a->unresolved++;	/* looked up before the pause */
			else if (id < 0 || stacktab_resolve(a->tab, cpu, ev.ts, STACKTAB_KERNEL_ID,
							    (uint32_t)id, NULL, NULL) <= 0)
				a->unresolved++;
			c->want = c->crossed = false;
		}
		if (r < 0)
			return -EBADMSG;
	}
	return r < 0 ? -EBADMSG : 0;
}

int stack_audit_unresolved(const char *path, const struct page_layout *l, uint64_t *ret_refs,
			   uint64_t *ret_unresolved)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct segment_record rec;
	struct audit *a;
	int r;

	if (l->stack_id_id < 0)
		return -EOPNOTSUPP;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->tab = stacktab_new();
	r = a->tab ? load_tables(path, a) : -ENOMEM;
	if (r < 0)
		goto out;
	r = segment_reader_open(path, &rd);
	if (r < 0)
		goto out;
	while ((r = segment_reader_next(rd, &rec)) > 0) {
		struct segment_generation g;
		struct audit_cpu *c;

		if (rec.type == SEGMENT_REC_GENERATION && rec.cpu != SEGMENT_NO_CPU &&
		    segment_generation_decode(rec.data, rec.len, &g) == 0) {
			r = stacktab_cpu_boundary(a->tab, rec.cpu, g.generation);
			c = audit_cpu(a, rec.cpu);
			if (c)
				c->crossed = c->want;
		} else if (rec.type == SEGMENT_REC_PAGES) {
			r = audit_pages(a, l, rec.cpu, rec.data, rec.len);
		}
		if (r < 0)
			goto out;
	}
	if (r == 0) {
		/* the segment ends after a boundary, before the stack */
		for (size_t i = 0; i < a->nr_cpus; i++)
			lost_stack(a, &a->cpus[i]);
		*ret_refs = a->refs;
		*ret_unresolved = a->unresolved;
	}
out:
	audit_done(a);
	free(a);
	return r;
}
