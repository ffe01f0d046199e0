/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel stack map (ftrace "stackmap", top-level instance only), as the
 * daemon keeps it: detection, snapshots, generations, resets, detection of
 * resets the daemon did not make, and the per-segment stack tables.
 *
 * A generation is one lifetime of the kernel map between two resets.
 * Generations are numbered 1.. per daemon run; generation 1 is the map as
 * found at start (ADOPTED, never reset at start). For each generation the
 * module keeps the union of its snapshots, indexed by id: within one
 * generation an id keeps its stack, so an id that vanishes or changes
 * frames proves a reset somebody else made.
 *
 * The reset protocol (markers, reader flushes, tracing_on) is driven by the
 * recorder with the step functions below; doc/stackmap.md describes it.
 * All timestamps are trace-clock values taken from ring-buffer events
 * (usually trace_marker writes the recorder made and then read back).
 * Not thread-safe: the main thread owns the object. The module is
 * stackmap.c (tracefs, snapshots, resets), stackmap-store.c and
 * stackmap-tables.c; lib/kernel/stackmap-export.c parses the exports.
 */
#ifndef STACKMAPD_STACKMAP_H
#define STACKMAPD_STACKMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "segment.h"
#include "stackmap-export.h"

struct config;
struct stackmap;

/* Snapshot content kept for at most this many generations (oldest dropped first). */
#define STACKMAP_MAX_KEPT_GENERATIONS 256

/* trace_marker text written right before snapshot N (see stackmap_marker_seen()). */
#define STACKMAP_SNAP_MARKER_PREFIX "stackmapd: snap "

/*
 * Every marker a run writes ends with " KEY", a per-run secret of
 * STACKMAP_MARKER_KEY_LEN hex digits: a line that anyone else writes to
 * trace_marker can never pass for one of ours (end or begin a
 * generation, date a snapshot).
 */
#define STACKMAP_MARKER_KEY_LEN 16

/* A fresh key from getrandom(), NUL-terminated. Returns 0 or -errno. */
int stackmap_marker_key_new(char key[static STACKMAP_MARKER_KEY_LEN + 1]);

/*
 * If text (len bytes, trailing newlines and NULs ignored) ends with
 * " KEY", the length of what precedes it in *ret_len and 1; else 0.
 */
int stackmap_marker_unkey(const char *text, size_t len, const char *key, size_t *ret_len);

/* stackmap_snapshot() result bits. */
#define STACKMAP_SNAP_EXTERNAL 0x1	/* the map was reset by someone else: begin a generation */
#define STACKMAP_SNAP_DISABLED 0x2	/* options/stackmap went to 0 (reported once; switching
					 * it on again is reported as EXTERNAL) */

/* Why stackmap_reset_due() wants a reset. */
enum stackmap_reset_reason {
	STACKMAP_RESET_NONE,
	STACKMAP_RESET_FILL,		/* entries >= reset_fill percent of capacity */
	STACKMAP_RESET_DROPS,		/* drops grew by reset_drops since the generation began */
	STACKMAP_RESET_INTERVAL,	/* the generation is older than reset_interval */
	STACKMAP_RESET_REASON_MAX
};

struct stackmap_stats {
	bool have_stat;			/* stack_map_stat exists: the counters below are sampled */
	bool have_bin;			/* stack_map_bin exists */
	bool enabled;			/* options/stackmap read 1 at the last snapshot */
	uint64_t entries;		/* stat "entries", else the ids of the last snapshot */
	uint64_t capacity;		/* stat, 0 if unknown */
	uint64_t table_size;		/* stat, else 0 */
	uint64_t successes;
	uint64_t drops;
	unsigned success_rate;		/* percent, as the kernel prints it */
	uint32_t generation;		/* current generation */
	uint64_t resets_own;		/* resets this daemon made */
	uint64_t resets_external;	/* resets detected but not made here */
	uint64_t last_reset_usec;	/* duration of the last write of "0" to stack_map */
	uint64_t reset_busy;		/* resets given up: stack_map stayed busy (EBUSY) */
	uint64_t snapshots;		/* snapshots taken */
	uint64_t snapshot_errors;	/* snapshots that failed */
	uint64_t text_snapshots;	/* snapshots read from the text export */
	uint64_t stored_stacks;		/* distinct stacks held in memory */
	uint64_t foreign_markers;	/* marker lines without this run's key, ignored */
	uint64_t realtime_refused;	/* lossless resets run without real-time priority */
};

/*
 * Bind to the stack map of the top-level tracefs directory tracing_dir (a
 * fixture tree in tests) and find which nodes exist. Reads nothing else
 * and changes nothing. c is borrowed for the call: the reset policy, guard,
 * trace clock and keep_tracing are copied (see stackmap_set_config()).
 * Returns 0 and *ret (owned by the caller, free with stackmap_free()),
 * -EOPNOTSUPP if the kernel has no stack map (no stack_map node), -ENOMEM.
 */
int stackmap_new(const char *tracing_dir, const struct config *c, struct stackmap **ret);

/* Free sm and everything it owns (does not restore options). Accepts NULL; returns NULL. */
struct stackmap *stackmap_free(struct stackmap *sm);

/* Take a reloaded config's [stackmap] policy and guard (c borrowed for the call). */
void stackmap_set_config(struct stackmap *sm, const struct config *c);

/*
 * Set options/stackmap to 1, remembering the previous value for
 * stackmap_restore(); if it is already 1 it is adopted as is. Returns 0,
 * -EOPNOTSUPP (no option, or the kernel refuses: its map failed to
 * initialize), or -errno.
 */
int stackmap_enable(struct stackmap *sm);

/*
 * Put options/stackmap back as stackmap_enable() found it, unless the
 * config says keep_tracing or nothing was changed. Returns 0 or -errno.
 */
int stackmap_restore(struct stackmap *sm);

/*
 * Take the first snapshot and open generation 1 (ADOPTED, window [0, 0]):
 * the map as found, filled by boot-time capture perhaps; it is not reset.
 * *ret_gen (may be NULL) gets its GENERATION payload. Returns 0 or -errno
 * (the snapshot could not be read at all).
 */
int stackmap_start(struct stackmap *sm, struct segment_generation *ret_gen);

/*
 * Record the timestamp of a trace_marker the recorder read back. Markers
 * "stackmapd: snap N" (STACKMAP_SNAP_MARKER_PREFIX) are remembered (the
 * last 64); others are ignored. text need not be NUL-terminated (len
 * bytes, a trailing newline is fine). Returns 1 if taken, 0 if not ours.
 */
int stackmap_marker_seen(struct stackmap *sm, const char *text, size_t len, uint64_t ts);

/*
 * Read the map (stack_map_bin, or the text export when the binary one is
 * missing or busy), stack_map_stat and options/stackmap, and merge the
 * snapshot into the current generation. seq is the N of the
 * "stackmapd: snap N" marker written just before (0: none written).
 * Returns a mask of STACKMAP_SNAP_* bits (0: consistent) or -errno.
 * With STACKMAP_SNAP_EXTERNAL the snapshot is kept aside for the next
 * generation: write a marker, flush the readers, and call
 * stackmap_begin_generation() (EXTERNAL, begin_ts 0, end_ts its ts)
 * before taking more snapshots (they return -EBUSY until then, as they do
 * between stackmap_write_reset() and stackmap_begin_generation()).
 * Call it also after the last pages of a segment were read and before
 * stackmap_segment_tables(), so that the tables cover every id read.
 */
int stackmap_snapshot(struct stackmap *sm, uint64_t seq);

/*
 * While a reset is made but its generation has not begun (our reset is
 * written, or somebody else's was found): read the new map again and add
 * what it gained to the content kept for the next generation. Call it
 * where stackmap_snapshot() is not allowed, after the last pages of a
 * segment were read and before stackmap_segment_tables(): an id the new
 * map lacks then was not in it when those events were written. Returns 0
 * (also with nothing to do), -ESTALE if the map was reset once more (the
 * kept content then proves nothing until the generation begins), other
 * -errno.
 */
int stackmap_refresh_pending(struct stackmap *sm);

/*
 * Whether the config's policy wants a reset now (now_usec: CLOCK_MONOTONIC,
 * compared with when the generation began; counters from the last
 * snapshot). Fill and drop rules need stack_map_stat. Returns a
 * STACKMAP_RESET_* reason, STACKMAP_RESET_NONE if not due or while a
 * reset is in progress.
 */
enum stackmap_reset_reason stackmap_reset_due(struct stackmap *sm, uint64_t now_usec);

/* Static name of a reason ("fill", "drops", "interval", "none"). */
const char *stackmap_reset_reason_to_string(enum stackmap_reset_reason reason);

/*
 * Reset, step 1: the last snapshot of the current generation, taken after
 * the recorder wrote its "gen G end" marker (lossless) or stopped tracing
 * and drained the readers (strict). Returns STACKMAP_SNAP_* bits or -errno
 * like stackmap_snapshot(); with STACKMAP_SNAP_EXTERNAL go on anyway:
 * stackmap_write_reset() then skips the write.
 */
int stackmap_snapshot_final(struct stackmap *sm);

/*
 * Reset, step 2: read the map once more (ids assigned since the final
 * snapshot), then write "0" to stack_map (retrying for a while if another
 * reset is running), timing it. Returns 0 when the map was reset, 1 when
 * nothing was written because a snapshot showed the map was already
 * reset by someone else (the next generation becomes
 * RESET_EXTERNAL with a wider window; in strict mode do not write per-CPU
 * boundaries for it), -EBUSY if another reset kept the map busy (the
 * current generation goes on; no generation to begin), -EPERM without
 * stackmap_snapshot_final() first, other -errno.
 */
int stackmap_write_reset(struct stackmap *sm);

/*
 * Lossless reset, between steps 1 and 2 (binary export only): take the
 * look at the map right before the reset now. The kernel takes the
 * binary export's snapshot when it is opened, so this opens it, and
 * stackmap_write_reset() then writes the reset without reading first;
 * the marker that opens the reset window may follow this call. Returns
 * 1 when the export is open, 0 when there is nothing to do (no binary
 * export, the map found reset by someone else, not after
 * stackmap_snapshot_final()), -errno when it cannot be opened (then
 * stackmap_write_reset() reads the map before the reset as without it).
 */
int stackmap_open_last_look(struct stackmap *sm);

/*
 * After stackmap_write_reset() returned 0, once the marker after the
 * reset is written: read the snapshot stackmap_open_last_look() took and
 * add its ids to the old generation. Returns 0 (also when there was no
 * such snapshot), STACKMAP_SNAP_EXTERNAL when it shows the map was reset
 * by someone else after the final snapshot (the next generation is then
 * RESET_EXTERNAL, with a window opening at the last snapshot that
 * matched), -errno when it cannot be read (its ids then stay unknown).
 */
int stackmap_merge_last_look(struct stackmap *sm);

/*
 * Whether stackmap_write_reset() reads the map once more before it
 * writes the reset (the binary export is there): then every id of an
 * event written before that look is in the old generation, and the
 * marker that opens the reset window may follow the final snapshot.
 */
bool stackmap_rereads_before_reset(const struct stackmap *sm);

/*
 * Reset, step 3 (also after STACKMAP_SNAP_EXTERNAL): open the next
 * generation. kind: SEGMENT_GEN_RESET_LOSSLESS, _STRICT or _EXTERNAL.
 * w->begin_ts / w->end_ts: raw trace-clock timestamps of the marker written
 * before the reset ("gen G end", written before tracing_on=0 in strict
 * mode) and of the one written after it ("gen G+1 begin", after
 * tracing_on=1); the module widens them by the configured guard, except
 * for STRICT (tracing was off in between: the markers are exact). For
 * EXTERNAL, begin_ts 0 means "from the marker of the last snapshot that
 * still matched the old generation", which the module knows. A pending
 * external reset turns any kind into EXTERNAL with that wider window.
 * end_ts at or above SEGMENT_WINDOW_UNKNOWN: the marker after the reset was
 * not read back (the window stays open, and nothing later is dated from
 * it). The window written never ends before it begins: when the earliest
 * known moment of an external reset lies after end_ts, it opens where the
 * current generation's window does. w->begin_cpu / w->end_cpu: the CPUs
 * whose buffers held those markers (SEGMENT_NO_CPU: unknown); written
 * into a lossless window, they let readers order the events of those
 * CPUs by the markers themselves, without the guard.
 * Takes the new generation's first snapshot (a failure there is counted,
 * not returned: the generation exists anyway). *ret_gen (may be NULL)
 * gets its GENERATION payload. Returns 0, -EPERM out of sequence,
 * -EINVAL (end_ts 0 or before begin_ts), -ENOMEM.
 */
struct stackmap_window {
	uint64_t begin_ts, end_ts;
	uint32_t begin_cpu, end_cpu;
};
int stackmap_begin_generation(struct stackmap *sm, enum segment_gen_kind kind,
			      const struct stackmap_window *w, struct segment_generation *ret_gen);

/* Current generation number (>= 1 after stackmap_start(), else 0). */
uint32_t stackmap_generation(const struct stackmap *sm);

/*
 * Build the stack-map part of one segment's tables. Generations selected:
 * every g in [first_gen, last_gen] and every g whose lifetime (its window
 * begin to the next generation's window end) intersects [min_ts, max_ts].
 * For each selected g and each id set in id_bitmap (bit i of word i / 64,
 * nbits bits): the entry of g's stored snapshot, or an ABSENT entry,
 * encoded with stacktab_encode() and appended to stacks (no entries for a
 * generation whose content was dropped: its ids stay unresolved, never
 * wrong). Appends the GENERATION payloads of the selected generations to
 * generations, SEGMENT_GENERATION_SIZE bytes each (one record each).
 * addrs (may be NULL): native-endian uint64_t addresses of the frames
 * written are appended and the whole array is sorted and deduplicated (for
 * the segment's kallsyms subset). While a reset is made but its generation
 * has not begun, the next generation is included with the content kept for
 * it (see stackmap_refresh_pending()) and a window open to the end of time. Buffers are
 * the caller's. Returns the
 * number of generations written or -errno (buffers may hold a partial
 * result).
 */
int stackmap_segment_tables(struct stackmap *sm, const uint64_t *id_bitmap, size_t nbits,
			    uint32_t first_gen, uint32_t last_gen, uint64_t min_ts, uint64_t max_ts,
			    struct buf *stacks, struct buf *generations, struct buf *addrs);

/*
 * Drop the stored snapshots of generations older than gen (no segment will
 * need them any more). Their GENERATION windows are kept. Returns the
 * number of generations dropped.
 */
int stackmap_release_before(struct stackmap *sm, uint32_t gen);

/* Copy the counters into *ret. */
void stackmap_get_stats(const struct stackmap *sm, struct stackmap_stats *ret);

/*
 * Append the global STATS keys (stackmap_entries, stackmap_capacity,
 * stackmap_successes, stackmap_drops, generation, plus stackmap_resets,
 * stackmap_external_resets, stackmap_last_reset_usec, stackmap_reset_busy)
 * as key=value lines
 * to b. Returns 0 or -ENOMEM.
 */
int stackmap_stats_format(const struct stackmap *sm, struct buf *b);

#endif
