/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Page transcoding: walk one raw ring-buffer page, summarize it (events,
 * timestamps, lost events, markers, kernel stack ids) and compact it for
 * the segment, replacing every full kernel_stack entry by a stack_ref
 * entry that names a stack in the daemon's deduplicated stack table.
 * Timestamps stay exact: the event headers (and their time deltas) are kept.
 *
 * The stack table (struct stackdedup) is shared by all CPU readers; each
 * reader owns a struct transcoder with a lock-free cache in front of it.
 */
#ifndef STACKMAPD_TRANSCODE_H
#define STACKMAPD_TRANSCODE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hashtab.h"
#include "page-walk.h"
#include "util.h"

/* Where the fields of a page header are, and which event ids matter. */
struct page_layout {
	unsigned commit_offset;		/* 8 on 64-bit kernels */
	unsigned commit_size;		/* 8 or 4 */
	unsigned data_offset;		/* 16 or 12 */
	unsigned page_size;		/* sub-buffer size */
	int kernel_stack_id;		/* ftrace/kernel_stack, -1 if unknown */
	int stack_id_id;		/* ftrace/stack_id, -1 if the kernel has none */
	int print_id;			/* ftrace/print (trace_marker) */
	int stack_ref_id;		/* our synthetic stackmapd/stack_ref; -1: do not transcode */
};

#define STACK_REF_EVENT_SIZE 16		/* common fields (8) + stack_ref + nr_frames */
#define MARKER_PREFIX "stackmapd: "

/*
 * Parse events/header_page text into *ret (commit/data offsets; the event
 * ids and page size are set by the caller). Returns 0, or -EPROTO when the
 * page layout is not one we know how to walk (the caller then stores pages
 * without transcoding).
 */
int page_layout_parse(const char *header_page, struct page_layout *ret);

/*
 * The synthetic stackmapd/stack_ref event format file for a given id,
 * appended to out (see doc/segment-format.md).
 */
int page_layout_stack_ref_format(int id, struct buf *out);

/* The name of that format among a segment's FILE records. */
#define STACK_REF_FORMAT_NAME "events/stackmapd/stack_ref/format"

/*
 * The id of the stack_ref event: preferred, or the first below it that no
 * event format of files[0..nr) (borrowed) uses. The daemon's own
 * stack_ref format among them is not a clash: a layout set up again (a
 * sub-buffer size switched after the kept events were read) keeps the
 * id that format, already stored, names.
 */
int page_layout_stack_ref_id(const struct named_text *files, size_t nr, int preferred);

/* The page format of the running kernel that a layout describes, for the page walker. */
struct page_format page_layout_format(const struct page_layout *l);

/* One deduplicated kernel stack. Immutable after creation except the marks. */
struct dstack {
	uint64_t hash;
	uint64_t emitted_seq;		/* segment it was last written to; archive lock */
	uint32_t id;
	uint16_t nr;
	uint64_t ips[];
};

struct stackdedup;

/* A table holding at most max_stacks stacks. Returns NULL on ENOMEM. */
struct stackdedup *stackdedup_new(size_t max_stacks);
struct stackdedup *stackdedup_free(struct stackdedup *d);

/* Number of stacks stored, and kernel_stack entries left as they were because the table was full. */
size_t stackdedup_count(struct stackdedup *d);
uint64_t stackdedup_overflows(struct stackdedup *d);

/* Summary of one page (or of a batch, when accumulated). */
struct page_summary {
	uint64_t events;		/* ring-buffer events, stack entries included */
	uint64_t first_ts;		/* 0 when no event */
	uint64_t last_ts;
	uint64_t lost_events;		/* from the page's missed-events flag/count */
	bool lost_unknown;		/* events were lost, count not stored */
	bool parse_error;		/* page copied verbatim */
};

#define TRANSCODER_MAX_MARKERS 16
struct page_marker {
	uint64_t ts;
	uint32_t cpu;		/* whose buffer held it: set by the CPU reader */
	char text[96];
};

/*
 * Per-reader transcoding state. It collects, for the frame being built,
 * the distinct kernel stack ids and daemon stacks that its pages reference.
 */
struct transcoder {
	const struct page_layout *layout;	/* borrowed */
	struct stackdedup *dedup;		/* borrowed, shared; NULL: no transcoding */

	struct dstack **cache;			/* direct-mapped, TRANSCODER_CACHE slots */

	/* references of the current frame */
	struct dstack **refs;
	size_t nr_refs, refs_cap;
	struct hashtab ref_set;			/* the refs, to add each once */
	uint32_t *ids;				/* kernel stack ids */
	size_t nr_ids, ids_cap;
	struct hashtab id_set;			/* the ids, each + 1 */

	/* markers seen since the last transcoder_take_markers() */
	struct page_marker markers[TRANSCODER_MAX_MARKERS];
	unsigned nr_markers;

	/* stack_ref entries take their event's time (trace.stack_time = event) */
	bool stack_time_event;

	uint64_t parse_errors;
};

int transcoder_init(struct transcoder *t, const struct page_layout *layout, struct stackdedup *dedup);
void transcoder_done(struct transcoder *t);

/*
 * Walk one page as read from trace_pipe_raw (len bytes, normally the
 * sub-buffer size), append its compacted (and, with a dedup table,
 * transcoded) form to out and fill *sum. Never fails on bad page content:
 * a page it cannot walk is appended as read (compacted to its commit
 * length when that is sane) with sum->parse_error set. Returns 0 or
 * -ENOMEM.
 */
int transcoder_page(struct transcoder *t, const uint8_t *page, size_t len, struct buf *out,
		    struct page_summary *sum);

/* Forget the frame's references (after the frame was handed to the archive). */
void transcoder_reset_refs(struct transcoder *t);

#endif
