/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The archive's state, shared by the files of the archive module only:
 * archive.c (segments, appends, rotation, retention), archive-scan.c (the
 * directory at start: create it, recover or set aside what it holds) and
 * archive-outage.c (write errors: which ones pass, dropping and counting
 * what cannot be written, retrying, and the record of the loss). Calls go
 * one way: archive.c uses the other two, archive-scan.c uses
 * archive-outage.c, which uses neither; this header holds declarations
 * only, so that it ties none of them to another.
 */
#ifndef STACKMAPD_ARCHIVE_INTERNAL_H
#define STACKMAPD_ARCHIVE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "archive.h"
#include "log.h"

struct finished {
	char *name;		/* file name in the directory */
	uint64_t seq;
	uint64_t bytes;
};

/* What was dropped on one CPU while writing failed. */
struct outage_cpu {
	uint64_t events;
	uint64_t bytes;		/* raw page bytes */
	uint64_t frames;
	uint64_t first_ts, last_ts;
};

/* An outage so far, for its last log line. */
struct outage_summary {
	int error;
	uint64_t usec;
	uint64_t events, bytes, failed_writes;
	uint64_t cpus;		/* bit per CPU (the first 64) that dropped events */
};

/* A write outage (ENOSPC, EIO...): under the archive's lock. */
struct outage {
	bool active;		/* writes fail: frames are dropped until a retry succeeds */
	bool pending;		/* drops not yet recorded in a segment */
	int error;		/* first error of the outage */
	uint64_t begin_realtime_usec, end_realtime_usec;
	uint64_t begin_mono_usec;
	uint64_t next_retry_usec;	/* monotonic */
	uint64_t backoff_usec;
	uint64_t failed_writes;		/* of this outage */
	struct outage_cpu *cpus;	/* nr_cpus, of the drops not yet recorded */
	struct outage_summary sum;	/* of the drops recorded during this outage */
	/* since start, for status */
	uint64_t total_events, total_bytes, total_outages;
	uint64_t *total_cpu_events, *total_cpu_bytes;	/* nr_cpus */
	struct log_ratelimit rl;
};

struct archive {
	char *dir;
	unsigned nr_cpus;
	int level;
	bool sync;
	struct rotation_policy policy;
	const struct archive_hooks *hooks;
	void *userdata;

	/* lock protects cur, the writer's file, the stacks/cpus of cur and the outage */
	pthread_mutex_t lock;
	struct archive_segment *cur;
	struct buf stacks;		/* scratch for STACKS records, under lock */
	uint64_t next_seq;
	struct outage out;

	int rotate_fd;
	atomic_bool rotate_requested;

	/*
	 * A segment is wanted but none could be opened (a full disk at
	 * start): frames are dropped and counted, the open is retried by
	 * archive_tick(). Under lock.
	 */
	bool want_segment;

	/* main thread only */
	struct finished *done;
	size_t nr_done, done_cap;
	char **unrecovered;		/* .part names whose recovery failed on a write error */
	size_t nr_unrecovered, cap_unrecovered;

	atomic_uint_fast64_t frames;
	atomic_uint_fast64_t write_errors;
	uint64_t deleted;
	uint64_t recovered;
	uint64_t quarantined;
	uint64_t salvaged;		/* segments finished by recovery after a write error */
};

/* archive-scan.c: create the directory (mkdir -p, 0750). Returns 0 or -errno. */
int archive_make_directory(const char *dir);

/* archive-scan.c: recover or set aside what the directory holds; learn the finished segments. */
int archive_scan_directory(struct archive *a);

/* archive-scan.c: remember a finished segment (main thread). Returns 0 or -ENOMEM. */
int archive_add_finished(struct archive *a, const char *name, uint64_t seq, uint64_t bytes);

/*
 * archive-scan.c: a segment finished by recovery (at start, later, or after
 * a write error) as path: remember it (in order) and hand it to the
 * finished hook. Main thread.
 */
void archive_add_recovered(struct archive *a, const char *path);

/*
 * archive-scan.c: retry the recovery of the unfinished segments that a
 * write error kept from being recovered. Main thread; logs.
 */
void archive_retry_recoveries(struct archive *a);

/* archive-scan.c: remember dir/name (a .part) for archive_retry_recoveries(). */
int archive_defer_recovery(struct archive *a, const char *name);

/*
 * archive-outage.c: true for a write error the device may get over (full,
 * I/O error): wait and retry, do not give up.
 */
bool archive_error_transient(int r);

/* archive-outage.c: allocate/free the per-CPU counters. */
int outage_init(struct outage *o, unsigned nr_cpus);
void outage_done(struct outage *o);

/* True when a write may be tried now: no outage, or its next retry is due. Locked. */
bool outage_may_write_locked(const struct outage *o);

/*
 * A write failed with r (locked): start an outage or push the next retry
 * back. Returns true when the caller must log the start of the outage
 * (outside the lock) with outage_log_begin().
 */
bool outage_failed_locked(struct outage *o, int r);

/* A frame that was not written: count it (locked). */
void outage_drop_locked(struct outage *o, const struct archive_frame *f, unsigned nr_cpus);

/*
 * Before writing to s (locked): if drops are pending, write the loss
 * record(s) and add the dropped events to s's index. Returns 1 if it did,
 * 0 if there was nothing to record, or -errno (still pending).
 */
int outage_record_locked(struct outage *o, struct archive_segment *s, unsigned nr_cpus);

/*
 * After a write succeeded (locked): if an outage was on and its loss is
 * recorded, it ends here: true with *ret for outage_log_end().
 */
bool outage_end_locked(struct outage *o, struct outage_summary *ret);

/* Log lines for the start and end of an outage (no lock needed; logs). */
void outage_log_begin(struct archive *a, int r);
void outage_log_end(struct archive *a, const struct outage_summary *summary);

/* Log a failure during an outage, rate-limited. */
void outage_log_retry(struct archive *a, int r);

#endif
