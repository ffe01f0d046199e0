/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counting the stack ids of a finished segment that its own tables cannot
 * resolve (stack-audit.h), for the index, info and status. Two passes over
 * the file: the tables and generation windows first (they are written at
 * the end of a segment), then the pages in file order, so that per-CPU
 * strict boundaries take effect where they stand in each CPU's stream.
 * Only the page walk (lib/segment/page-walk.c) and the resolution run per
 * event: no event formatting, no libtraceevent.
 *
 * A stack that never came counts too, by the rule the decoder applies
 * (lib/config/stack-expect.h): it would have been a stack id.
 */
#include <assert.h>
#include <stdio.h>

#include "config.h"
#include "page-walk.h"
#include "segment.h"
#include "stack-audit.h"
#include "stack-expect.h"
#include "stacktab-resolve.h"
#include "util.h"

struct audit {
	struct stacktab *tab;
	struct named_text *files;		/* the config and the event formats */
	size_t nr_files;
	struct stack_expect_types wants;	/* event types recorded with a stack */
	struct stack_expect *cpus;
	size_t nr_cpus, cap_cpus;
	uint64_t refs, unresolved;
};

static void audit_done(struct audit *a)
{
	stacktab_free(a->tab);
	named_texts_free(&a->files, &a->nr_files);
	free(a->cpus);
}

/* Keep what tells which events want a stack: the config and the event formats. */
static int keep_file(struct audit *a, const struct segment_record *rec)
{
	const uint8_t *content;
	const char *name;
	size_t len;

	if (segment_file_split(rec, &name, &content, &len) < 0 ||
	    (!streq(name, "config") && !startswith(name, "events/")))
		return 0;
	return named_texts_append(&a->files, &a->nr_files, name, content, len);
}

static struct stack_expect *audit_cpu(struct audit *a, uint32_t cpu)
{
	if (cpu >= STACKTAB_MAX_CPUS)
		return NULL;
	if (cpu >= a->nr_cpus) {
		if (GREEDY_REALLOC0(a->cpus, a->cap_cpus, (size_t)cpu + 1) < 0)
			return NULL;
		a->nr_cpus = cpu + 1;
	}
	return &a->cpus[cpu];
}

/* The stack of the CPU's last event did not come before the pause: count it. */
static void count_lost(struct audit *a, bool lost)
{
	if (lost) {
		a->refs++;
		a->unresolved++;
	}
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
		(void)stack_expect_types_load(&a->wants, a->files, a->nr_files);
	return r;
}

static int audit_pages(struct audit *a, const struct page_layout *l, uint32_t cpu,
		       const uint8_t *data, size_t len)
{
	struct page_format f = page_layout_format(l);
	struct stack_expect *c = audit_cpu(a, cpu);
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
				if (ev.type == l->kernel_stack_id || ev.type == l->stack_ref_id)
					(void)stack_expect_stack(c);
				else
					count_lost(a, stack_expect_event(c,
						stack_expect_types_has(&a->wants, ev.type)));
				continue;
			}
			if (!page_entry_stack_id(&ev, &id))
				continue;
			a->refs++;
			if (stack_expect_stack(c))
				a->unresolved++;	/* looked up before the pause */
			else if (id < 0 || stacktab_resolve(a->tab, cpu, ev.ts, STACKTAB_KERNEL_ID,
							    (uint32_t)id, NULL, NULL) <= 0)
				a->unresolved++;
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

	assert(path);
	assert(l);
	assert(ret_refs);
	assert(ret_unresolved);

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
		struct stack_expect *c;

		if (rec.type == SEGMENT_REC_GENERATION && rec.cpu != SEGMENT_NO_CPU &&
		    segment_generation_decode(rec.data, rec.len, &g) == 0) {
			r = stacktab_cpu_boundary(a->tab, rec.cpu, g.generation);
			c = audit_cpu(a, rec.cpu);
			if (c)
				stack_expect_boundary(c);
		} else if (rec.type == SEGMENT_REC_PAGES) {
			r = audit_pages(a, l, rec.cpu, rec.data, rec.len);
		}
		if (r < 0)
			goto out;
	}
	if (r == 0) {
		/* the segment ends after a boundary, before the stack */
		for (size_t i = 0; i < a->nr_cpus; i++)
			count_lost(a, stack_expect_end(&a->cpus[i]));
		*ret_refs = a->refs;
		*ret_unresolved = a->unresolved;
	}
out:
	audit_done(a);
	free(a);
	return r;
}
