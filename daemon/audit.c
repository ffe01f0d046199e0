/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counting the stack ids of a finished segment that its own tables cannot
 * resolve (audit.h), for the index, info and status. Two passes over the
 * file: the tables and generation windows first (they are written at the
 * end of a segment), then the pages in file order, so that per-CPU strict
 * boundaries take effect where they stand in each CPU's stream. Only the page walk (lib/page-walk.c) and the resolution run per
 * event: no event formatting, no libtraceevent.
 */
#include "audit.h"
#include "segment.h"
#include "stacktab.h"
#include "util.h"


static int load_tables(const char *path, struct stacktab *t)
{
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
		} else if (rec.type == SEGMENT_REC_GENERATION) {
			r = segment_generation_decode(rec.data, rec.len, &g);
			if (r == 0)
				r = stacktab_add_generation(t, rec.cpu, &g);
		}
		if (r < 0)
			return r;
	}
	return r;
}

static int audit_pages(struct stacktab *t, const struct page_layout *l, uint32_t cpu,
		       const uint8_t *data, size_t len, uint64_t *refs, uint64_t *unresolved)
{
	struct page_format f = page_layout_format(l);
	struct page_walk w;
	size_t off = 0;
	int r;

	while ((r = page_walk_payload_next(&w, &f, data, len, &off)) > 0) {
		struct page_entry ev;

		while ((r = page_walk_next(&w, &ev)) > 0) {
			int32_t id;

			if (ev.type != l->stack_id_id || ev.len < 12)
				continue;
			memcpy(&id, ev.payload + 8, 4);
			(*refs)++;
			if (id < 0 || stacktab_resolve(t, cpu, ev.ts, STACKTAB_KERNEL_ID, (uint32_t)id,
						       NULL, NULL) <= 0)
				(*unresolved)++;
		}
		if (r < 0)
			return -EBADMSG;
	}
	return r < 0 ? -EBADMSG : 0;
}

int audit_unresolved(const char *path, const struct page_layout *l, uint64_t *ret_refs,
		     uint64_t *ret_unresolved)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct stacktab *t;
	struct segment_record rec;
	uint64_t refs = 0, unresolved = 0;
	int r;

	if (l->stack_id_id < 0)
		return -EOPNOTSUPP;
	t = stacktab_new();
	if (!t)
		return -ENOMEM;
	r = load_tables(path, t);
	if (r < 0)
		goto out;
	r = segment_reader_open(path, &rd);
	if (r < 0)
		goto out;
	while ((r = segment_reader_next(rd, &rec)) > 0) {
		struct segment_generation g;

		if (rec.type == SEGMENT_REC_GENERATION && rec.cpu != SEGMENT_NO_CPU &&
		    segment_generation_decode(rec.data, rec.len, &g) == 0)
			r = stacktab_cpu_boundary(t, rec.cpu, g.generation);
		else if (rec.type == SEGMENT_REC_PAGES)
			r = audit_pages(t, l, rec.cpu, rec.data, rec.len, &refs, &unresolved);
		if (r < 0)
			goto out;
	}
	if (r == 0) {
		*ret_refs = refs;
		*ret_unresolved = unresolved;
	}
out:
	stacktab_free(t);
	return r;
}
