/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recording: tracing setup, one reader per CPU, the archive and the
 * kernel stack map, driven from the main sd-event loop. Operations that
 * need every CPU's buffer read first (snapshot, rotate on request, reset,
 * stop) run as flush barriers: each reader flushes, and the operation
 * continues when all have reported.
 */
#ifndef STACKMAPD_RECORDER_H
#define STACKMAPD_RECORDER_H

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "buf.h"

struct config;
struct recorder;

enum recorder_state {
	RECORDER_STARTING,
	RECORDER_RECORDING,
	RECORDER_STOPPING,
	RECORDER_STOPPED,
};

struct recorder_cpu_status {
	int cpu;
	uint64_t events;
	uint64_t pages;
	uint64_t raw_bytes;
	uint64_t stored_bytes;
	uint64_t lost_events;		/* page flags + kernel dropped/overrun since start */
	uint64_t dropped_events;	/* read but not written (write errors) since start */
	uint64_t dropped_bytes;		/* their raw page bytes */
	uint64_t read_errors;		/* poll, read or frame errors of its reader */
	bool alive;			/* its reader thread runs (or is not meant to) */
	double events_per_s;		/* over the last status interval */
};

struct recorder_status {
	enum recorder_state state;
	const char *instance;		/* borrowed */
	bool stackmap;			/* kernel stack map in use */
	uint32_t generation;
	uint64_t map_entries, map_capacity, map_drops;
	double map_success_rate;	/* percent, -1 unknown */
	uint64_t resets;
	uint64_t map_reset_busy;	/* resets given up: stack_map stayed busy */
	uint64_t unresolved;
	uint64_t dedup_stacks;		/* stacks in the daemon's own table */
	unsigned nr_cpus;
	struct recorder_cpu_status *cpus;	/* owned by the recorder, valid until the next call */
	char *segment_path;		/* allocated, caller frees */
	uint64_t segment_bytes;
	uint64_t segment_age_usec;
	const char *directory;		/* borrowed */
	uint64_t archive_bytes;
	uint64_t archive_max_bytes;
	uint64_t archive_segments;
	uint64_t write_errors;
	uint64_t dropped_events;	/* not written because writing failed, since start */
	uint64_t dropped_bytes;
	bool write_outage;		/* writing fails now */
	int write_outage_error;		/* -errno */
	uint64_t write_outage_since_usec;	/* CLOCK_REALTIME */
	uint64_t write_outages;		/* since start */
	uint64_t quarantined;		/* files set aside at start */
	uint64_t recovered;		/* unfinished segments of earlier runs finished */
	uint64_t unrecovered;		/* ... not yet (a write error): retried every second */
	uint64_t salvaged;		/* segments finished by recovery after a write error */
	const char *unhealthy;		/* static reason, NULL when healthy */
	unsigned cpus_offline;
	uint64_t cpus_added;		/* CPUs that came online and got a reader */
	uint64_t tracefs_repairs;	/* our tracefs settings found changed and set back */
	uint64_t foreign_markers;	/* stack-map marker lines without this run's key */
	uint64_t realtime_refused;	/* lossless resets run without real-time priority */
	const char *crash_buffer;	/* static: "off", "armed" or why it is not */
	uint64_t crash_captured;	/* previous boots saved from it at start */
};

/*
 * Bind to tracefs and check the config against this kernel, changing
 * nothing. c is borrowed and must outlive the recorder (reload swaps it
 * with recorder_reload()). On a problem the config cannot express
 * (stackmap = on without kernel support...) returns -EINVAL with
 * *ret_error set (caller frees). On success *ret owns the recorder.
 */
int recorder_new(const struct config *c, struct recorder **ret, char **ret_error);

/*
 * Start recording: recover the archive, drain what the buffer already
 * holds, configure tracing, start the readers; sources are added to e.
 * on_segment (may be NULL) is called with each finished segment's path.
 * Returns 0 or -errno (tracing is restored on failure).
 */
int recorder_start(struct recorder *rec, sd_event *e,
		   void (*on_segment)(void *userdata, const char *path), void *userdata);

/* Stop: readers flush and exit, the last segment is finished, tracing restored. */
void recorder_stop(struct recorder *rec);

/* Completion of an asynchronous operation: r < 0 on failure; path of a finished segment or NULL. */
typedef void (*recorder_done_fn)(void *userdata, int r, const char *path);

/*
 * Flush every CPU, take a fresh stack-map snapshot and finish the current
 * segment; done() gets its path (the "snapshot" and "rotate" requests; the
 * flight recorder saves its buffer instead). Returns 0 (done will be
 * called) or -errno.
 */
int recorder_snapshot(struct recorder *rec, recorder_done_fn done, void *userdata);

/*
 * Flush every CPU into the segment being written, without finishing it
 * (the "flush" request: a reader of the live segment, top --follow, then
 * sees the last moment). done() gets NULL for the path. Returns 0 (done
 * will be called), -EOPNOTSUPP in flight mode (reading the buffer would
 * empty the recording) or -errno.
 */
int recorder_flush(struct recorder *rec, recorder_done_fn done, void *userdata);

/* Start a new kernel stack-map generation now; done() gets NULL path. -EOPNOTSUPP without stackmap. */
int recorder_reset(struct recorder *rec, recorder_done_fn done, void *userdata);

/*
 * Apply a new valid config: rotation, retention, compression, snapshot and
 * reset policy take effect now. Keys that need a restart must hold the
 * running values (config_keep_running()). The recorder borrows c from
 * then on. Returns 0 or -errno.
 */
int recorder_reload(struct recorder *rec, const struct config *c);

/* Current figures. Free ret->segment_path. */
void recorder_get_status(struct recorder *rec, struct recorder_status *ret);

/* One-line summary for STATUS= and the periodic log line. */
int recorder_summary(struct recorder *rec, char *buf, size_t len);

/* Each finished segment, oldest first. */
int recorder_foreach_segment(struct recorder *rec,
			     int (*cb)(const char *path, uint64_t bytes, void *userdata),
			     void *userdata);

enum recorder_state recorder_state(const struct recorder *rec);

/*
 * False while a CPU is not being recorded (a reader thread ended by
 * itself, the instance was removed): the watchdog then stops pinging.
 * *ret_why (may be NULL) gets a static reason or NULL.
 */
bool recorder_healthy(struct recorder *rec, const char **ret_why);

struct recorder *recorder_free(struct recorder *rec);

#endif
