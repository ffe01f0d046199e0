/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The crash buffer ([crash] in stackmapd.conf): a tracefs instance whose
 * ring buffer lives in memory the kernel keeps across a warm reboot
 * (reserve_mem= and trace_instance=NAME@LABEL, Linux 6.12). While the
 * machine runs it is a black box in overwrite mode that nobody reads: the
 * same events as the recording, each with a full kernel stack, and the
 * markers needed to read it at the next boot (this boot's id and kernel,
 * the trace clock against the wall clock every clock_interval, and a last
 * marker when the daemon stops cleanly). At the next boot the markers
 * are read back from the instance's trace file before its pages are
 * saved (daemon/recorder-crash.c), then the buffer is cleared and armed
 * for this boot. Only the main thread uses it.
 */
#ifndef STACKMAPD_CRASH_BUFFER_H
#define STACKMAPD_CRASH_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "wallclock.h"

struct config;
struct tracefs_instance;

#define CRASH_MARKER_PREFIX "stackmapd: crash "

/*
 * The armed record, a file in the archive directory: "boot ID release R
 * version V", the last boot that armed the buffer. The old one is removed
 * (and the directory synced) before the buffer is emptied, and the new one
 * written once it is empty and before it records, so whatever the buffer
 * holds at the next boot is that boot's, also when overwriting took every
 * marker; a record that could not be written leaves none, never the old.
 */
#define CRASH_ARMED_RECORD ".crash-armed"

/* What the previous boot left in the buffer, as its markers tell. */
struct crash_previous {
	char *boot_id;			/* NULL: no boot marker (nothing of ours) */
	char *kernel_release;		/* of the boot that wrote it */
	char *kernel_version;
	bool clean;			/* the daemon stopped cleanly (marker) */
	uint64_t stop_ts;		/* trace clock of the clean-stop marker; 0 none */
	uint64_t last_ts;		/* trace clock of the last line read; 0 none */
	struct wallclock_pair *pairs;	/* trace clock against the wall clock */
	size_t nr_pairs, cap_pairs;
	int64_t text_delta;		/* last_boot_info: this boot's text minus that one's */
	bool text_delta_known;
	uint64_t lines;			/* event lines in the trace file */
	bool markers_lost;		/* none left: boot and kernel from the armed record,
					 * pairs (if any) from that boot's recording */
	uint64_t *overlap;		/* per CPU: last trace time already archived; 0 none */
	unsigned nr_overlap;		/* set by the recorder (recorder-crash.c) */
	size_t cap_overlap;
	bool overlap_found;		/* the recorder looked for it (once) */
	unsigned page_size;		/* the instance's, set by the recorder */
};

void crash_previous_done(struct crash_previous *p);

struct crash_buffer;

/*
 * Whether this kernel was booted with the crash buffer: the instance
 * CONFIG_CRASH_INSTANCE exists under tracefs_dir and has last_boot_info
 * (only a boot-mapped instance has it). Returns 0, or -ENOENT with
 * *ret_why (caller frees) saying what is missing.
 */
int crash_buffer_probe(const char *tracefs_dir, char **ret_why);

/*
 * Bind to the instance (crash_buffer_probe() first). c is borrowed and
 * must outlive it. On success *ret owns it. Returns 0, -ENOENT, -errno.
 */
int crash_buffer_open(const char *tracefs_dir, const struct config *c,
		      struct crash_buffer **ret);

/* The libtracefs handle of the instance, for CPU readers. Borrowed. */
struct tracefs_instance *crash_buffer_instance(const struct crash_buffer *cb);

/*
 * Read the markers the buffer holds (its trace file; nothing is consumed)
 * and last_boot_info. A buffer with the markers of this_boot_id (a daemon
 * restart in the same boot) has nothing of a previous boot: ret->boot_id
 * stays NULL. A buffer that holds lines but no marker of ours takes the
 * boot and kernel of the armed record, with markers_lost set, unless the
 * record names this boot or there is none. Returns 0 or -errno.
 */
int crash_buffer_read_previous(struct crash_buffer *cb, const char *this_boot_id,
			       struct crash_previous *ret);

/*
 * Start the black box for this boot: tracing off, the old armed record
 * removed (if that fails: -errno, the buffer left as it is), buffer
 * cleared, the armed record written (crash_buffer_record_error()), the trace clock of
 * the recording, overwrite on, the events (with their
 * filters) and stack traces of the config, tracing on, then the boot
 * marker (boot id, kernel release and version) and a first clock marker.
 * Returns 0, -EUCLEAN when the instance is not in overwrite mode (it
 * cannot be switched on this kernel, see crash-buffer.c), or -errno.
 */
int crash_buffer_arm(struct crash_buffer *cb, const char *boot_id, const char *release,
		     const char *version, const char *clock);

/*
 * The -errno of writing the armed record at the last crash_buffer_arm(),
 * 0 if it was written. Without it the next boot needs a surviving marker.
 */
int crash_buffer_record_error(const struct crash_buffer *cb);

/* Keep these tasks (the daemon's) out of the crash buffer. Returns 0 or -errno. */
int crash_buffer_exclude_pids(struct crash_buffer *cb, const int *pids, size_t n);

/*
 * Write a clock marker now (the periodic tick), one on each CPU the
 * calling thread may run on (it is moved to each in turn, then back): a
 * marker goes to the buffer of the CPU that writes it. Returns 0 or -errno.
 */
int crash_buffer_mark_clock(struct crash_buffer *cb);

/*
 * The daemon stops cleanly: write the clean-stop marker. The black box
 * keeps recording (the shutdown after it is kept too). Returns 0 or -errno.
 */
int crash_buffer_mark_stop(struct crash_buffer *cb);

/* Whether crash_buffer_arm() succeeded. */
bool crash_buffer_armed(const struct crash_buffer *cb);

/* Bytes per CPU of the instance's buffer (buffer_size_kb), 0 if unknown. */
uint64_t crash_buffer_cpu_bytes(const struct crash_buffer *cb);

struct crash_buffer *crash_buffer_free(struct crash_buffer *cb);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct crash_buffer *, crash_buffer_free);

#endif
