/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The archive directory: the segment being written (shared by all CPU
 * readers: frames are appended under one short lock), rotation (a new
 * segment is swapped in first, the old one is finished and fsynced outside
 * the lock), retention, and recovery of unfinished segments at start.
 */
#ifndef STACKMAPD_ARCHIVE_H
#define STACKMAPD_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "rotation.h"
#include "segment.h"

struct dstack;

#define ARCHIVE_ID_BITS (1u << 19)	/* kernel stack ids: table size is at most 2^19 */

/* What one CPU reader hands over: a compressed PAGES payload and what it references. */
struct archive_frame {
	uint32_t cpu;
	const void *stored;			/* one zstd frame; NULL: no pages */
	size_t stored_len;
	size_t raw_len;
	uint16_t flags;				/* SEGMENT_REC_F_COLUMNS or 0 */
	uint64_t pages;
	uint64_t events;
	uint64_t first_ts, last_ts;		/* 0: no event */
	uint64_t lost_events;
	struct dstack *const *refs;		/* daemon stacks referenced by the pages */
	size_t nr_refs;
	const uint32_t *ids;			/* kernel stack ids referenced by the pages */
	size_t nr_ids;
	const struct segment_generation *boundary; /* strict reset: per-CPU boundary after the frame */
};

/* The segment being written, as the hooks see it. */
struct archive_segment {
	uint64_t seq;
	char *name;				/* "00000042-20261129T100000" */
	uint64_t opened_realtime_usec;
	uint64_t opened_mono_usec;
	uint64_t *id_bitmap;			/* ARCHIVE_ID_BITS bits: kernel ids referenced */
	bool any_ids;
	struct buf addrs;			/* u64 addresses of the daemon stacks written */
	unsigned nr_cpus;
	struct segment_cpu_index *cpus;		/* nr_cpus entries, indexed by cpu */
	struct buf seek;			/* struct segment_seek per PAGES record */
	bool seek_failed;			/* ENOMEM on the way: no seek table */
	uint64_t dstacks;			/* daemon stack entries written */
	uint32_t first_gen, last_gen;		/* kernel map generations; set by the owner */
	uint64_t unresolved;
	uint32_t index_flags;
	struct segment_writer *writer;
};

struct archive_hooks {
	/* A segment was opened: write its head records (main thread). */
	int (*begin)(void *userdata, struct archive_segment *seg);
	/* No more frames go to seg: write its tail records (main thread). */
	int (*end)(void *userdata, struct archive_segment *seg);
	/* seg was finished as path (main thread). */
	void (*finished)(void *userdata, const char *path, const struct archive_segment *seg);
	/*
	 * A segment was finished by recovery as path: one a crash left
	 * unfinished (at start, or later when a full disk kept it from being
	 * recovered at start), or one whose end could not be written (main
	 * thread).
	 */
	void (*recovered)(void *userdata, const char *path);
};

struct archive_params {
	const char *directory;
	unsigned nr_cpus;
	int compression_level;
	bool sync;
	struct rotation_policy policy;
	const struct archive_hooks *hooks;
	void *userdata;
};

struct archive_status {
	uint64_t bytes;				/* finished segments + current */
	uint64_t segments;			/* finished */
	uint64_t current_bytes;
	uint64_t current_age_usec;
	uint64_t frames;
	uint64_t write_errors;
	uint64_t deleted;			/* by retention since start */
	uint64_t recovered;			/* unfinished segments of earlier runs finished */
	uint64_t unrecovered;			/* ... not yet: a write error, retried */
	uint64_t salvaged;			/* segments finished by recovery after a write error */
	uint64_t quarantined;			/* files named like segments set aside at start */
	bool outage;				/* writing fails now: frames are dropped */
	int outage_error;			/* -errno of the current outage */
	uint64_t outage_since_usec;		/* CLOCK_REALTIME start of the current outage */
	uint64_t outages;			/* since start */
	uint64_t dropped_events;		/* not written because writing failed, since start */
	uint64_t dropped_bytes;			/* their raw page bytes */
};

struct archive;

/*
 * Open the directory (create it and its parents 0750 if missing), recover
 * every unfinished segment of ours in it and set aside (rename to
 * NAME.damaged-STAMP, logged) whatever is named like one but is not
 * provably ours, learn the finished ones for retention and numbering.
 * Does not open a segment yet. p is copied (hooks/userdata borrowed).
 * On success *ret owns the archive. Returns 0 or -errno.
 */
int archive_open(const struct archive_params *p, struct archive **ret);

/* Change the rotation/retention policy (reload). Main thread. */
void archive_set_policy(struct archive *a, const struct rotation_policy *policy, bool sync,
			int compression_level);

/*
 * Open the first segment (calls hooks->begin). Main thread. Returns 0 or
 * -errno. On a write error the device may get over (ENOSPC, EDQUOT, EIO)
 * it returns 0 and an outage begins: frames are dropped and counted until
 * archive_tick() manages to open the segment.
 */
int archive_start(struct archive *a);

/*
 * Append a frame to the current segment: the daemon stacks it references
 * that the segment does not hold yet, the PAGES record, and the boundary.
 * Any thread. Returns 0 or -errno (write error; counted). On a write error
 * (ENOSPC, EIO...) an outage begins: frames are dropped and counted per
 * CPU, writes are retried on a backoff, and the first that succeeds is
 * preceded by STATS records of the loss (logged at start and end).
 */
int archive_append_frame(struct archive *a, const struct archive_frame *f);

/* Append any record to the current segment (main thread or readers). Returns 0 or -errno. */
int archive_append_record(struct archive *a, enum segment_rec_type type, uint32_t cpu,
			  const void *payload, size_t len);

/*
 * Finish the current segment: unless final, a new segment is opened and
 * swapped in first (no frame is ever lost or duplicated). Then
 * hooks->end, the trailer, fsync, rename, hooks->finished and retention.
 * final also sets the FINAL index flag. Main thread. *ret_path (may be
 * NULL) gets the finished path (caller frees). Returns 0 or -errno.
 */
int archive_rotate(struct archive *a, bool final, char **ret_path);

/*
 * Finish the current segment without opening another (flight recorder:
 * the next capture calls archive_start() again). Main thread. Returns 0 or
 * -errno; *ret_path as for archive_rotate().
 */
int archive_close(struct archive *a, char **ret_path);

/*
 * A second archive on a's directory, with one segment open in it now (its
 * number the next of a's, its head by a's hooks): written beside a's
 * current segment, whose frames never go into it. Unlike archive_start(),
 * a segment that cannot be opened (a full disk) is an error, with no
 * outage begun. Main thread. Returns 0 or -errno.
 */
int archive_open_side(struct archive *a, struct archive **ret);

/*
 * Finish side's segment (its path in *ret_path), hand it to a's retention,
 * and free side. *ret_failed: the writes into it that failed (their frames
 * are not in it). Main thread. Returns 0 or -errno.
 */
int archive_close_side(struct archive *a, struct archive *side, char **ret_path,
		       uint64_t *ret_failed);

/* True while a segment is open, or wanted (archive_start() on a full disk). */
bool archive_is_open(struct archive *a);

/*
 * An eventfd that becomes readable when a reader saw the segment become
 * due (archive_rotation_due()); main reads it and calls archive_rotate().
 * Borrowed.
 */
int archive_rotate_fd(const struct archive *a);
/* Clear the rotate request (after reading the eventfd). True if one was pending. */
bool archive_take_rotate_request(struct archive *a);

/*
 * Whether the segment being written must be finished now, by size or age
 * (rotation_due(), the one rotation decision; readers ask it after each
 * frame). False while no segment is open.
 */
bool archive_rotation_due(struct archive *a);

/* Microseconds until the current segment is due by age (UINT64_MAX: never), for timers. */
uint64_t archive_age_left(struct archive *a);

/* Delete the oldest finished segments as the policy says. Main thread. */
void archive_enforce_retention(struct archive *a);

/*
 * Every second (main thread): retention; then what a write error left to
 * do once the device works again: recover the unfinished segments that
 * could not be recovered, open the segment that could not be opened, and
 * replace a segment whose writer a failed write made unusable (it is
 * finished by recovery). Logs.
 */
void archive_tick(struct archive *a);

/* Events (and raw bytes, if ret_bytes) dropped on cpu by write errors since start. */
uint64_t archive_cpu_dropped(struct archive *a, unsigned cpu, uint64_t *ret_bytes);

/* Counters; path of the current segment (caller frees) if ret_path. */
void archive_get_status(struct archive *a, struct archive_status *ret, char **ret_path);

/* Call cb for each finished segment, oldest first (path is borrowed). */
int archive_foreach(struct archive *a, int (*cb)(const char *path, uint64_t bytes, void *userdata),
		    void *userdata);

/* Directory. Borrowed. */
const char *archive_directory(const struct archive *a);

/* Free without finishing the current segment (it stays .part). Returns NULL. */
struct archive *archive_free(struct archive *a);

#endif
