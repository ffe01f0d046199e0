/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the two halves of the decoder: decode-segment.c reads a
 * segment's tables and hands out each CPU's records of it; decode.c walks
 * the pages and merges the CPUs. Not for other modules.
 */
#ifndef STACKMAPD_DECODE_INTERNAL_H
#define STACKMAPD_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "segment-meta.h"
#include "stack-expect.h"
#include "util.h"
#include "wallclock.h"

struct ksyms;
struct segment_reader;
struct tep_format_field;
struct tep_handle;

#define DECODE_MAX_ERRORS 16

/*
 * How long after its event a stack entry can be stamped: the kernel stamps
 * it once it has unwound the stack, microseconds later. A segment or frame
 * that starts at most this long after a time window's end is read, because
 * its first entry may be the stack of the window's last event.
 */
#define DECODE_STACK_LAG_NS UINT64_C(1000000000)

/*
 * Reader limits (doc/segment-format.md, "Reader limits"): whatever a
 * segment claims, a reader holds no more than this.
 */
#define DECODE_MAX_CPUS 4096			/* CPUs with data in one segment */
#define DECODE_MAX_RECORD_RAW ((size_t)SEGMENT_MAX_DECODE_RECORD)	/* a record's payload */
#define DECODE_MAX_HELD ((size_t)96 << 20)	/* payloads and pages held by all CPUs */
#define DECODE_MAX_FORMAT_LEN ((size_t)64 << 10)
#define DECODE_MAX_FORMAT_LINES 1024
#define DECODE_MAX_PRINT_DEPTH 128	/* brackets nested in a print fmt */
#define DECODE_MAX_FIELDS 256
#define DECODE_MAX_RECORD 65535			/* field offset + size in an event record */
#define DECODE_COMMON_END 8			/* the common fields end here in every kernel */
#define DECODE_MAX_PRINTK_LEN ((size_t)16 << 20)
#define DECODE_MAX_PRINTK_LINES 200000
#define DECODE_MAX_EVENT_TYPES 65536		/* event type ids are 16 bits */
/* event format FILE records parsed per segment: libtraceevent inserts each in a sorted array */
#define DECODE_MAX_FORMATS 4096

/* One item of a CPU's stream in a segment: a PAGES payload, or a strict boundary. */
struct item {
	struct item *next;
	uint64_t offset;	/* of its record */
	bool boundary;
	uint32_t generation;	/* boundary: the generation that starts */
	size_t len;
	uint8_t data[];
};

/* Where one item of a CPU's stream is: a PAGES record to read, or a boundary. */
struct item_ref {
	uint64_t offset;	/* of its record */
	bool boundary;
	uint32_t generation;	/* boundary: the generation that starts */
	uint64_t first_ts, last_ts;	/* frame: from the seek table; 0, UINT64_MAX: unknown */
};

struct cpu_stream {
	uint32_t total;		/* items the first pass selected */
	uint32_t read;		/* items handed out so far */
	struct item_ref *refs;	/* total entries, in file order */
	size_t cap;
};

struct decoder_segment {
	char *path;
	uint64_t serial;		/* unique among the segments loaded by this process */
	char *errors[DECODE_MAX_ERRORS];
	size_t nr_errors;
	char *unfinished;		/* a .part without its trailer: read as far as it goes */
	struct tep_handle *tep;
	const struct ksyms *ks;		/* own_ks, or the running kernel's (ksyms_live_for_boot()) */
	struct ksyms *own_ks;		/* the segment's kallsyms subset */
	struct stacktab *tab;
	struct segment_meta meta;
	unsigned int long_size;
	bool big_endian;
	size_t page_size;	/* 0: unknown */
	int stack_type[DECODED_STACK_MAX];	/* event type id of each stack kind, -1: none */
	struct tep_format_field *caller_field, *size_field, *id_field, *ref_field;
	uint64_t data_end;	/* records at or after this offset are not used */
	struct named_text *files;	/* FILE records, as stored (for exporters) */
	size_t nr_files;
	size_t nr_formats;		/* event format FILE records handed to libtraceevent */
	struct wallclock_pair *clocks;	/* CLOCK pairs, sorted by trace clock */
	size_t nr_clocks, cap_clocks;
	bool wall_placed;		/* the filter's real-time window applies, by clocks */
	uint64_t wall_since, wall_until;	/* that window */
	/*
	 * A crash capture (META capture_overlap): per CPU, the trace time up
	 * to which its events are also in the archive's segments of that
	 * boot; 0: none. print_type: markers, which only the capture holds.
	 */
	uint64_t *overlap;
	size_t nr_overlap, cap_overlap;
	int print_type;
	/*
	 * A segment whose stack ids do not resolve, of a boot with a crash
	 * capture (decoder_overlap_plan_new()): per CPU, the trace time from
	 * which the capture's copies are read instead of its own; 0: none.
	 */
	uint64_t *yield;
	size_t nr_yield;
	/* event types recorded with a stack, by the stored config (stack-expect.h) */
	struct stack_expect_types wants_stack;

	/* second pass: the first pass's reader fetches each selected frame at its offset */
	struct cpu_stream *cpus;	/* indexed by CPU */
	size_t nr_cpus, cap_cpus;
	struct segment_reader *rd;
	size_t charged;			/* bytes held, in the readers' budget (budget.h) */
};

/*
 * Record a problem of segment s (at most DECODE_MAX_ERRORS are kept); the
 * decoder reports them when it is done with the segment.
 */
void decoder_segment_add_error(struct decoder_segment *s, const char *fmt, ...) _printf_(2, 3);

/*
 * The next item of cpu's stream in segment s (NULL: a segment that could
 * not be read): 1 and *ret (owned by the caller, free()), 0 when the CPU
 * has nothing more in s, or -ENOMEM. Each frame is read at its offset when
 * it is needed, so that no CPU's records are queued for another. A frame
 * longer than room (what the caller may still hold) is skipped, with an
 * error noted in s, before anything is allocated for it.
 */
int decoder_segment_next_item(struct decoder_segment *s, unsigned int cpu, size_t room,
			      struct item **ret);

/*
 * Read the tables of the segment at path as decoder_segment_load() does,
 * and select the frames that f (NULL: all) asks for, by the seek table.
 */
int decoder_segment_load_filtered(const char *path, const struct decoder_filter *f,
				  struct decoder_segment **ret, char **ret_error);

/*
 * Whether an event at trace time ts of segment s passes f: its trace
 * window, and its real-time window when s could place it.
 */
bool decoder_segment_wants_ts(const struct decoder_segment *s, const struct decoder_filter *f,
			      uint64_t ts);

/*
 * "CPU:TS,CPU:TS" (META capture_overlap) into *ret (per CPU, 0: none;
 * owned, *ret_cap its room) and *ret_n; stops at the first malformed pair.
 */
void decode_parse_overlap(const char *v, uint64_t **ret, size_t *ret_n, size_t *ret_cap);

/* Read a crash capture's capture_overlap and print_event_id from s->meta. */
void decode_read_overlap(struct decoder_segment *s);

/*
 * Whether the entry at data (trace time ts, on cpu) is read from another
 * segment: an entry of a crash capture that an earlier segment of its
 * boot also holds (capture_overlap), or one of a segment that yields to
 * the capture's copies (yield). Each event is then reported once. Markers
 * are never skipped; a stack entry goes with the event before it:
 * *skipped holds, per CPU, whether that event was.
 */
bool decoder_segment_overlapped(const struct decoder_segment *s, unsigned int cpu, uint64_t ts,
				const void *data, int size, bool *skipped);

/* Apply what plan (may be NULL) says of s, by its path. 0 or -ENOMEM. */
int decode_apply_plan(const struct decoder_overlap_plan *p, struct decoder_segment *s);

/* PAGES records the segment's reader decompressed so far. */
uint64_t decoder_segment_frames_read(const struct decoder_segment *s);

/*
 * Whether the text of an events/SYSTEM/EVENT/format FILE has the shape
 * tracefs gives it, so that libtraceevent may parse it: 0, or -EBADMSG
 * and *ret_why (static text).
 */
int decode_check_format(const char *text, size_t len, const char **ret_why);

/* The same for the header_page FILE and the printk_formats FILE: 0 or -EBADMSG. */
int decode_check_header_page(const char *text, size_t len);
int decode_check_printk_formats(const char *text, size_t len);

/*
 * Drop, in place, the lines of a checked printk_formats text whose string
 * has fewer than two characters (libtraceevent 1.7 reads before the start
 * of such a string). Returns the new length; text stays NUL-terminated.
 */
size_t decode_drop_short_printk(char *text, size_t len);

/*
 * Whether an event record of segment s (size bytes at data) holds the
 * common fields and every field of its event's format, dynamic ones
 * included (for the stack entries: the fields the decoder reads): only
 * then may libtraceevent print it.
 */
bool decode_record_fits(const struct decoder_segment *s, const void *data, int size);

/*
 * The frames of a kernel_stack entry (size bytes at data) into ev, in
 * *ips (grown as needed, *ips_cap entries). Returns 0 or -ENOMEM.
 */
int decode_read_callers(const struct decoder_segment *s, const void *data, int size,
			uint64_t **ips, size_t *ips_cap, struct decoded_event *ev);

/*
 * Resolve the stack_id or stack_ref entry at data (ev's kind, cpu and ts
 * set) into ev; with refuse, only read its id and leave it unresolved for
 * that reason (not counted by the stack table).
 */
void decode_resolve_ref(struct decoder_segment *s, const void *data, struct decoded_event *ev,
			const char *refuse);

#endif
