/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ClickHouse export: samples of many hosts' segments as tab-separated rows
 * (ClickHouse's TabSeparated format) for the tables of
 * clickhouse/schema.sql, one file per table, every row tagged with the
 * load id the loader chose, so that a load counts only once it is
 * committed (doc/fleet.md):
 *
 *   events.tsv  host boot_id recording_id segment_seq load_id kernel cpu pid
 *               comm system event ts wall_ns stack_key entries
 *   stacks.tsv  stack_key depth frames
 *   losses.tsv  host boot_id recording_id segment_seq load_id cpu lost
 *               lost_unknown begin_ns end_ns begin_ts end_ts
 *   loads.tsv   load_id loaded_ns host boot_id recording_id segment_seq
 *               kernel path bytes events entries lost begin_ns end_ns
 *   allocations.tsv  host boot_id recording_id segment_seq load_id allocator
 *               kind event ptr bytes alloc_ns alloc_ts ended free_ns free_ts
 *               stack_key
 *   frees.tsv   host boot_id recording_id segment_seq load_id allocator ptr
 *               free_ns free_ts
 *
 * The allocations are paired with their frees by the memory analysis
 * (memory.h), one per host and boot, over the export's samples: one row
 * per allocation, in its segment, ended 'free' (free_ns: its free),
 * 'lost' (free_ns: the pointer allocated again, no free seen between) or
 * 'live' (free_ns \N: no end in this export). A free goes to frees.tsv
 * when its allocation is in another segment or was not read, so that a
 * view can pair what crosses segments whichever loads hold them
 * (clickhouse/schema.sql, doc/fleet.md).
 *
 * A stack's key is the 64-bit FNV-1a hash of its frames' function names
 * (an address when a frame has none), innermost first, each followed by
 * a NUL byte: the same stack has the same key on every host and kernel
 * build. Key 0 is "no stack" (the row "[no stack]" in stacks.tsv); an
 * unresolved stack is the one frame "[unresolved]". Each stack is written
 * once per export. `entries` is the number of ring-buffer entries a row
 * stands for (the event, and its stack entry if it has one), so that
 * sum(entries) is what `stackmapctl info` counts as events. Losses are
 * per segment and CPU, from the segment's index (the kernel's count,
 * write outages included), else from its pages; their span is the
 * wall-clock span of that CPU's events in the segment.
 */
#ifndef STACKMAPD_CLICKHOUSE_H
#define STACKMAPD_CLICKHOUSE_H

#include <stdint.h>
#include <stdio.h>

#include "sample.h"
#include "util.h"

/* The output files, borrowed. */
struct ch_files {
	FILE *events, *stacks, *losses, *loads, *allocations, *frees;
};

struct ch_export;

/*
 * Start an export of rows tagged with load_id, committed at loaded_ns
 * (CLOCK_REALTIME ns), into files (borrowed; they must outlive the
 * export). Returns 0 and *ret, or -ENOMEM.
 */
int ch_export_new(const struct ch_files *files, uint64_t load_id, uint64_t loaded_ns,
		  struct ch_export **ret);

/* Free it (does not close the files). Accepts NULL; returns NULL. */
struct ch_export *ch_export_free(struct ch_export *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct ch_export *, ch_export_free);

/*
 * Announce a segment file (path copied) before its samples: it gets a
 * loads row even when none of its events is read. Reads its META and
 * index. Returns 0, -ENOMEM, or -errno when the file cannot be read as a
 * segment (nothing is added then).
 */
int ch_export_add_segment(struct ch_export *c, const char *path);

/*
 * Write the row of s (borrowed; s->origin set, its path announced) and
 * its stack, if new. Returns 0 or -errno (-EINVAL: a segment not
 * announced).
 */
int ch_export_add(struct ch_export *c, const struct sample *s);

/*
 * Write the allocations still live, the losses and loads rows, and flush
 * every file. Returns 0 or -errno.
 */
int ch_export_finish(struct ch_export *c);

/* The stack key of n frames (innermost first), as described above. */
uint64_t ch_stack_key(const struct sample_frame *frames, size_t n);

#endif
