/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Offline decoding of segments (doc/segment-format.md) into a time-ordered
 * stream of events, with their stacks resolved through each segment's own
 * stack table and event formats (libtraceevent). Used by stackmapctl
 * report/stacks/folded. Segments of one recording given in order read as
 * one trace: per-CPU streams continue from one segment into the next, and
 * events are merged across CPUs by timestamp.
 *
 * Not thread-safe; one decoder per thread.
 */
#ifndef STACKMAPD_DECODE_H
#define STACKMAPD_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacktab-resolve.h"

struct tep_handle;
struct tep_event;
struct tep_record;
struct decoder_segment;
struct wallclock_pair;

/* Which kind of stack entry an event is. */
enum decoded_stack {
	DECODED_NOT_STACK,	/* an ordinary event */
	DECODED_KERNEL_STACK,	/* ftrace kernel_stack: the addresses are in the event */
	DECODED_STACK_ID,	/* ftrace stack_id: a kernel stack map id */
	DECODED_STACK_REF,	/* stackmapd stack_ref: an id in the daemon's stack table */
	/*
	 * No entry in the data: the event before it on its CPU wants a stack
	 * (the segment's config records one with it), but tracing was paused
	 * for a strict stack map reset before the kernel wrote it. Never
	 * resolved; record and event are NULL, ts is that event's.
	 */
	DECODED_STACK_MISSING,
	DECODED_STACK_MAX
};

/*
 * One event. Every pointer is borrowed from the decoder and valid until the
 * next decoder_next() or decoder_free() call.
 */
struct decoded_event {
	unsigned int cpu;
	uint64_t ts;			/* trace clock, as recorded */
	const char *segment;		/* path of the segment it comes from */
	const struct decoder_segment *seg; /* that segment (see decoder_segment_*() below) */
	struct tep_handle *tep;		/* that segment's formats, symbols, comms */
	struct tep_record *record;	/* ts, cpu, data, size: for tep_print_event() */
	struct tep_event *event;	/* its format, NULL if the segment has none for its type */

	/*
	 * Events the kernel lost on this CPU just before this one (the page
	 * it starts had missed events): 0 none, > 0 how many, -1 some (the
	 * count was not stored).
	 */
	long long lost_before;

	/* Stack entries (kind != DECODED_NOT_STACK): */
	enum decoded_stack kind;
	bool is_stack;			/* kind != DECODED_NOT_STACK */
	uint32_t stack_id;		/* the id (STACK_ID) or ref (STACK_REF) */
	bool resolved;			/* frames below are valid (always for KERNEL_STACK) */
	const char *unresolved_reason;	/* when !resolved: why (stacktab_resolve() reasons) */
	uint16_t nr;			/* frames, innermost first */
	bool text;			/* frames are symbolized strings (TEXT entries) */
	const uint64_t *ips;		/* nr addresses, when !text */
	const char *const *frames;	/* nr strings, when text */
	/*
	 * The event of the same CPU that this stack follows (the kernel
	 * writes a stack right after its event), or NULL if that event was
	 * not seen (start of the data, lost events). When that event ends
	 * the segment before (of the same boot), this is its format in the
	 * stack's own segment: compare owners by name, not by address.
	 */
	struct tep_event *owner;
};

struct decoder;

/*
 * Which events to decode: a CPU and a time window (trace clock, ns,
 * inclusive), and a window in CLOCK_REALTIME (ns, inclusive), which each
 * segment places in its trace clock through its own CLOCK pairs
 * (wallclock_trace_span()). Segments and frames outside are not read at
 * all when the segment has a seek table, a frame partly inside is; events
 * outside are dropped, by their own time mapped through the pairs. A
 * segment without CLOCK pairs cannot place the real-time window: it is
 * read whole, its events are returned, and decoder_segment_wall_placed()
 * says so (the caller places them).
 */
struct decoder_filter {
	int cpu;		/* -1: every CPU */
	uint64_t since;		/* 0: from the start */
	uint64_t until;		/* UINT64_MAX: to the end */
	uint64_t wall_since;	/* 0: from the start */
	uint64_t wall_until;	/* UINT64_MAX: to the end */
};
#define DECODER_FILTER_ALL                                                                    \
	((struct decoder_filter){ .cpu = -1, .since = 0, .until = UINT64_MAX, .wall_since = 0, \
				  .wall_until = UINT64_MAX })


/*
 * Prepare decoding of n segment files (paths borrowed; they must stay valid
 * while the decoder lives), in the order given, which should be recording
 * order. Nothing is read yet: problems with a file are reported by
 * decoder_next(). On success *ret owns the decoder. Returns 0, -EINVAL
 * (n == 0) or -ENOMEM.
 */
int decoder_open(const char *const *paths, size_t n, struct decoder **ret);

/*
 * The next event in timestamp order (ties: lower CPU first) into *ev.
 * Returns 1 for an event, 0 at the end of all segments, or a negative errno:
 *   -ENOMEM: fatal, stop.
 *   -EINPROGRESS: not a problem: a segment was unfinished (see
 *   decoder_segment_unfinished()); decoder_error() says so.
 *   anything else: one segment was unreadable, corrupt or truncated; every
 *   event before the damage has been returned, decoder_error() describes
 *   it, and decoding continues with the following call.
 */
int decoder_next(struct decoder *d, struct decoded_event *ev);

/*
 * Message for the last negative decoder_next() result, naming the segment
 * path and, for damaged data, the file offset. Borrowed; valid until the
 * next decoder_next() call.
 */
const char *decoder_error(const struct decoder *d);

/* Per-CPU count of events the kernel reported lost in the pages read so far. */
uint64_t decoder_lost_events(const struct decoder *d, unsigned int cpu);

/*
 * Pages rejected as malformed so far (each is also reported, with its
 * offset, as a problem of its segment); their events are not returned.
 */
uint64_t decoder_bad_pages(const struct decoder *d);

/* Events skipped because their record is shorter than their format's fields. */
uint64_t decoder_bad_events(const struct decoder *d);

/* Resolution counters over all segments decoded so far. */
void decoder_get_stats(const struct decoder *d, struct stacktab_stats *ret);

/*
 * Bytes of other CPUs' data the decoder may hold while looking ahead in a
 * segment for one CPU's next record (default 256 MiB). Beyond it, that CPU
 * reads the segment again on its own instead (slower, bounded memory).
 */
void decoder_set_lookahead_limit(struct decoder *d, size_t bytes);

/*
 * Decode only what f says (copied). Before the first decoder_next().
 * Returns 0 or -EINVAL (a window that ends before it starts).
 */
int decoder_set_filter(struct decoder *d, const struct decoder_filter *f);

/*
 * Which copy of the events a crash capture shares with the recorded
 * segments of its boot is read. Normally the recorded one (the capture
 * skips what they hold, META capture_overlap). But a segment in stack-map
 * mode that was never finished (recovered after a panic) has no stack map
 * tables: its stack ids do not resolve, while the capture holds the same
 * events with full stacks. Such a segment then yields to the capture from
 * the capture's first entry on, on each CPU both hold, and the capture
 * skips only what came before it. A plan is made once from all the
 * segments that may be read (paths borrowed for the call; the capture and
 * those segments are in different recordings, so in different decoders)
 * and given to each decoder. Returns 0 and *ret (owned; it may say
 * nothing), or -ENOMEM.
 */
struct decoder_overlap_plan;
int decoder_overlap_plan_new(const char *const *paths, size_t n,
			     struct decoder_overlap_plan **ret);
struct decoder_overlap_plan *decoder_overlap_plan_free(struct decoder_overlap_plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct decoder_overlap_plan *, decoder_overlap_plan_free);

/* How many segments the plan changes. */
size_t decoder_overlap_plan_size(const struct decoder_overlap_plan *p);

/* Read by plan p (borrowed, must outlive d; NULL: none). Before the first decoder_next(). */
void decoder_set_overlap_plan(struct decoder *d, const struct decoder_overlap_plan *p);

/* PAGES records (frames) read and decompressed so far, over all segments. */
uint64_t decoder_frames_read(const struct decoder *d);

/* Free the decoder (NULL is fine). Returns NULL. */
struct decoder *decoder_free(struct decoder *d);

/* ---- one segment's tables, without its events ---- */

/*
 * Read a whole segment (path borrowed) for its META, FILE, STACKS and
 * GENERATION records: event formats, symbols, comms and the stack table.
 * A segment that is damaged after its META record still loads, with what
 * precedes the damage, and decoder_segment_error() says so. Returns 0 and
 * *ret (owned; decoder_segment_free()), or -errno if the file cannot be
 * read at all (then *ret_error, if not NULL, gets an allocated message).
 */
int decoder_segment_load(const char *path, struct decoder_segment **ret, char **ret_error);

struct decoder_segment *decoder_segment_free(struct decoder_segment *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct decoder_segment *, decoder_segment_free);

/*
 * Problems found in the segment (damaged, cut short, recovered after a
 * crash, malformed records): the i-th message (from 0), or NULL after the
 * last one; decoder_segment_error(s, 0) == NULL means intact. Borrowed.
 */
const char *decoder_segment_error(const struct decoder_segment *s, size_t i);

/*
 * For an unfinished segment file (named *.smseg.part: the one the daemon
 * is writing, or one a crash left for the next start to recover) that
 * ends cleanly after its last complete record: a note saying so, which is
 * not a problem (not among decoder_segment_error()); NULL otherwise.
 * Borrowed. decoder_next() reports it as -EINPROGRESS.
 */
const char *decoder_segment_unfinished(const struct decoder_segment *s);

/* The segment's stack table. Borrowed. */
struct stacktab *decoder_segment_stacktab(const struct decoder_segment *s);

/* The segment's tep_handle (formats, kallsyms, comms). Borrowed. */
struct tep_handle *decoder_segment_tep(const struct decoder_segment *s);

/* Value of a META key, or NULL. Borrowed. */
const char *decoder_segment_meta(const struct decoder_segment *s, const char *key);

/*
 * A number no other segment loaded by this process has (from 1): what a
 * cache of per-segment results is keyed by. A closed segment's address
 * (and its path's) may come back for the next one; its serial does not.
 */
uint64_t decoder_segment_serial(const struct decoder_segment *s);

/*
 * The i-th FILE record of the segment (from 0), as stored: its name
 * ("header_page", "events/SYSTEM/EVENT/format", "kallsyms", ...) and
 * content (NUL-terminated, len bytes without the NUL). Borrowed. Returns 0
 * or -ENOENT after the last one.
 */
int decoder_segment_file(const struct decoder_segment *s, size_t i, const char **ret_name,
			 const char **ret_data, size_t *ret_len);

/*
 * The segment's CLOCK pairs (lib/segment/wallclock.h), sorted by trace clock;
 * *ret_n = 0 for a segment without any. Borrowed.
 */
const struct wallclock_pair *decoder_segment_clocks(const struct decoder_segment *s,
						    size_t *ret_n);

/*
 * Whether the decoder applied the filter's CLOCK_REALTIME window to the
 * events of s (it has CLOCK pairs), so that they need no more checks.
 */
bool decoder_segment_wall_placed(const struct decoder_segment *s);

/*
 * Symbolize a kernel address with the segment's kallsyms (for a segment
 * without a subset, recorded in the current boot: the running kernel's,
 * as for every reader of it; see ksyms_live_for_boot()): with_offset
 * gives "func+0x12/0x80" (and " [module]"), otherwise "func". The ftrace
 * trampoline marker gives "[FTRACE TRAMPOLINE]"; an unknown address
 * "0xffffffff81234567". buf is always NUL-terminated. Returns the length or
 * -ENOBUFS (truncated).
 */
int decoder_segment_symbolize(const struct decoder_segment *s, uint64_t addr, bool with_offset,
			      char *buf, size_t len);

/* The address stack_id/kernel_stack entries use for the ftrace trampoline. */
#define DECODE_FTRACE_TRAMPOLINE 0x7fffffffu

#endif
