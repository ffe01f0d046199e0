/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's state, shared by the files of the recorder module and
 * nothing else: recorder.c (lifecycle), recorder-readers.c,
 * recorder-timers.c, recorder-segment.c (segment heads and tails),
 * recorder-clock.c, recorder-health.c, recorder-flight.c (the flight
 * recorder), recorder-status.c and recorder-flush.c (the flush barrier).
 * Other modules, generations.c included, see only recorder.h or the
 * callbacks the recorder hands them. Calls between these files go down
 * only: recorder.c at the top, recorder-flush.c at the bottom
 * (tests/check-layering.sh).
 */
#ifndef STACKMAPD_RECORDER_INTERNAL_H
#define STACKMAPD_RECORDER_INTERNAL_H

#include <sys/utsname.h>

#include "archive.h"
#include "cpu-reader.h"
#include "log.h"
#include "recorder.h"
#include "tracing.h"
#include "task-lines.h"
#include "transcode.h"
#include "wallclock.h"

struct crash_buffer;
struct crash_previous;
struct generations;

#define TRIGGER_POLL_USEC (250 * USEC_PER_MSEC)
#define HEALTH_CHECK_USEC USEC_PER_SEC

struct flush_op {
	struct flush_op *next;
	uint64_t *tokens;			/* per reader */
	unsigned nr_tokens;			/* readers when it began (CPUs may come online) */
	void (*cont)(struct recorder *rec, struct flush_op *op);
	recorder_done_fn done;
	void *userdata;
	void (*gens_cont)(struct generations *g);	/* for the generations' barriers */
	struct generations *gens;
};

/* CLOCK samples (recorder-clock.c): markers written, waiting to be read back. */
struct recorder_clock_pending {
	uint64_t seq;			/* 0: free */
	struct wallclock_pair pair;	/* trace filled in when the marker is read back */
};

struct recorder_clock {
	uint64_t seq;
	struct recorder_clock_pending pending[8];
	uint64_t last_boot;		/* CLOCK_BOOTTIME of the last sample */
	int64_t real_off, boot_off;	/* REALTIME - BOOTTIME, BOOTTIME - MONOTONIC then */
};

struct recorder {
	const struct config *cfg;
	struct tracing *tracing;
	struct archive *archive;
	struct stackdedup *dedup;
	struct page_layout layout;
	struct ksyms *ksyms;
	struct cpu_reader **readers;
	unsigned nr_readers;
	unsigned nr_cpus;
	enum recorder_state state;

	sd_event *event;
	sd_event_source *notify_src, *rotate_src, *age_timer, *flush_timer, *trigger_timer;
	sd_event_source *retention_timer;
	sd_event_source *health_timer;
	int notify_fd;
	struct flush_op *ops;
	void (*on_segment)(void *userdata, const char *path);
	void *userdata;

	struct named_text *files;		/* decode files, collected once */
	size_t nr_files;
	struct task_lines *task_lines;		/* the task files' lines among them */
	char **formats;				/* event format texts among files, borrowed */
	size_t nr_formats;
	char recording_id[33];
	char *boot_id;
	struct utsname uts;
	char hostname[256];

	struct generations *gens;		/* NULL: no kernel stack map */
	struct tracing_cpu_stats *kstats_base;	/* per cpu, at segment start */
	uint64_t *rate_events;			/* per reader, at the last status sample */
	uint64_t rate_usec;
	struct recorder_cpu_status *cpu_status;
	bool *reader_lost;			/* per reader: its thread ended by itself (logged) */
	uint64_t unresolved;

	struct log_ratelimit health_rl;
	const char *unhealthy;			/* why not every CPU is recorded; NULL: healthy */
	unsigned cpus_offline;
	uint64_t cpus_added;			/* readers added for CPUs that came online */
	struct recorder_clock clock;

	struct crash_buffer *crash;		/* NULL: no crash buffer */
	sd_event_source *crash_timer;		/* its clock markers */
	const struct crash_previous *capture;	/* set while the previous boot's is saved */
	struct crash_previous *crash_pending;	/* not saved yet (a full disk): retried */
	uint64_t crash_captured;		/* previous boots saved at this start */
};

/* recorder-flush.c: whether the config says flight recorder. */
bool recorder_flight(const struct recorder *rec);

/*
 * recorder-flush.c: ask every reader to flush (with an optional per-CPU
 * generation boundary after its frame); cont runs on the main loop once
 * all have. Returns the operation (owned by the recorder) or NULL (ENOMEM).
 */
struct flush_op *recorder_flush_all(struct recorder *rec, const struct segment_generation *boundary,
				    void (*cont)(struct recorder *rec, struct flush_op *op),
				    recorder_done_fn done, void *userdata);

/*
 * Bring the periodic flush forward to FLUSH_SOON_USEC from now: a segment's
 * opening clock marker usually sits on a quiet CPU's partial page, and until
 * it is read the segment's events have no wall-clock time (top --follow,
 * --since on the segment being written). The first segment opens before
 * the timer exists; the timer is then made with that delay.
 */
#define FLUSH_SOON_USEC (100 * USEC_PER_MSEC)
void recorder_flush_soon(struct recorder *rec);

/* recorder-readers.c: read what every CPU's ring buffer holds into the archive now; logs. */
void recorder_drain_all(struct recorder *rec);

/*
 * recorder-readers.c: allocate the per-CPU tables and open (not start) a
 * reader for each online CPU. Returns 0 or -errno; logs what it can name.
 */
int recorder_open_readers(struct recorder *rec);

/* recorder-readers.c: the event formats the column encoder needs, from the collected files. 0 or -ENOMEM. */
int recorder_collect_formats(struct recorder *rec);

/*
 * Open (not start) a reader for each online CPU into the tables
 * recorder_open_readers() allocated, which hold none. Returns 0 or -errno.
 */
int recorder_open_online_readers(struct recorder *rec);

/* What a reader of cpu in instance (borrowed) reads with: the recorder's layout, tables and settings. */
struct cpu_reader_params recorder_reader_params(struct recorder *rec,
						 struct tracefs_instance *instance, int cpu);

/* Open (not start) a reader for cpu as readers[nr_readers++]. Returns 0 or -errno; logs. */
int recorder_open_reader(struct recorder *rec, int cpu);

/* recorder-health.c: keep the daemon's tasks (readers included) out of the recording. Logs. */
void recorder_exclude_self(struct recorder *rec);

/*
 * recorder-timers.c: add the loop's sources for rotation (the archive's
 * request, the age timer), retention, the periodic flush, the health
 * check and, for a flight recorder with a trigger, its poll. Returns 0 or
 * a negative errno from sd-event.
 */
int recorder_add_timers(struct recorder *rec);

/* recorder-timers.c: (re)arm the age timer for the open segment, or disable it. */
void recorder_arm_age_timer(struct recorder *rec);

/* recorder-flush.c: run the continuation of each flush barrier whose readers have all flushed. */
void recorder_process_ops(struct recorder *rec);

/* recorder-flush.c: at stop, drop every flush barrier still waiting; its done() gets -ECANCELED. */
void recorder_cancel_ops(struct recorder *rec);

/* recorder-health.c: hotplug, reader threads, tracefs under our feet. */
void recorder_health_check(struct recorder *rec);

/*
 * Whether a reader thread ended by itself. Found here (the main loop: on
 * the health timer, on a reader's notification and whenever status or the
 * watchdog ask), it is logged once, the recorder is unhealthy, and the
 * flush barriers waiting for it go on without it.
 */
bool recorder_readers_lost(struct recorder *rec);
int recorder_on_health_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* recorder-timers.c: finish the current segment now (no flush). Returns 0 or -errno; logs. */
int recorder_rotate_now(struct recorder *rec, const char *why, char **ret_path);

/* recorder-clock.c: write a clock marker now (at segment start). */
void recorder_clock_sample(struct recorder *rec);

/* Periodic: sample when a minute passed or the clocks jumped against each other. */
void recorder_clock_tick(struct recorder *rec);

/* A marker read back: if it is a clock marker, append its CLOCK record; true if it was. */
bool recorder_clock_marker(struct recorder *rec, const struct page_marker *m);

/* recorder-segment.c: the archive's hooks (userdata: the recorder). */
extern const struct archive_hooks recorder_archive_hooks;

/* Collect one decode file (event format...) for every segment's head; a tracing callback. */
int recorder_collect_file(const char *name, const void *data, size_t len, void *userdata);
void recorder_files_free(struct recorder *rec);

/* Page layout and event ids from tracefs, for the transcoder and META. Returns 0 or -errno. */
int recorder_setup_layout(struct recorder *rec);

/* Add the format of the daemon's own stack_ref event to the decode files. 0 or -ENOMEM. */
int recorder_add_stack_ref_format(struct recorder *rec);

/* uname, hostname, boot id and a random recording id, for META. */
void recorder_read_host_identity(struct recorder *rec);

/* recorder-flight.c: save what the buffer holds now into one segment; done() gets its path. */
int flight_capture(struct recorder *rec, recorder_done_fn done, void *userdata);

/* recorder-flight.c: the trigger stopped the buffer: save it (logs). */
void flight_trigger_save(struct recorder *rec);

/* recorder-flight.c: timer callback polling the trigger every TRIGGER_POLL_USEC (userdata: rec). */
int flight_on_trigger_timer(sd_event_source *s, uint64_t usec, void *userdata);

/*
 * recorder-crash.c: save the previous boot's crash buffer as a segment,
 * then arm it for this boot (after load_kernel_facts() and archive_open(),
 * before anything is recorded). Failures are logged; only out of memory
 * is returned.
 */
int recorder_crash_start(struct recorder *rec);

/* A clean stop: say so in the crash buffer. */
void recorder_crash_stop(struct recorder *rec);

/* The head and tail of the crash capture segment (rec->capture set), and its META keys. */
int recorder_crash_segment_begin(struct recorder *rec, struct archive_segment *seg);
int recorder_crash_segment_end(struct recorder *rec, struct archive_segment *seg);
int recorder_crash_meta(struct recorder *rec, struct buf *m);

void recorder_crash_free(struct recorder *rec);

/* For status: "off", "armed", or why the crash buffer is not armed (static). */
const char *recorder_crash_state(const struct recorder *rec);

#endif
