/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Our tracefs instance: find tracefs, configure events, filters, stack
 * traces, buffer size and clock as the config says, remember every change
 * and put it all back on exit. libtracefs errors are converted to -errno
 * here so the rest of the daemon sees one convention.
 */
#ifndef STACKMAPD_TRACING_H
#define STACKMAPD_TRACING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct config;
struct tracefs_instance;

struct tracing;

struct tracing_cpu_stats {
	uint64_t entries;
	uint64_t overrun;
	uint64_t commit_overrun;
	uint64_t bytes;
	uint64_t dropped;
	uint64_t read_events;
};

/*
 * Locate tracefs (dir NULL: the mounted tracefs, mounting it at
 * /sys/kernel/tracing if needed; otherwise use dir as is, e.g. a fixture
 * tree in tests) and bind to the instance that config names, creating it
 * if it does not exist. Changes nothing else. An instance that already
 * existed is adopted: it is configured but never removed. With a dir, CPUs
 * are the per_cpu/cpuN directories of the tree. c is borrowed and must
 * outlive the tracing object. On success *ret owns it. Returns 0, -EINVAL
 * for an instance name that cannot be a directory name, or -errno.
 */
int tracing_open(const char *dir, const struct config *c, struct tracing **ret);

/*
 * Check, without changing anything, that everything the config asks for is
 * possible here and in our instance: config_check_tracefs() (the same
 * checker as "stackmapd --check" and reload) on our tree. Returns 0 or
 * -errno with *ret_error ("PATH:LINE: KEY: what is wrong", caller frees).
 */
int tracing_validate(struct tracing *t, char **ret_error);

/* Top-level tracefs directory, e.g. "/sys/kernel/tracing". Borrowed. */
const char *tracing_dir(const struct tracing *t);

/* Directory of our instance (top-level dir for the top instance). Borrowed. */
const char *tracing_instance_dir(const struct tracing *t);

/*
 * The libtracefs instance handle, NULL for the top level of the system
 * tracefs (with a dir given to tracing_open(), a handle on that tree's
 * top level). Borrowed.
 */
struct tracefs_instance *tracing_instance(const struct tracing *t);

/* Instance name, "" for the top level. */
const char *tracing_instance_name(const struct tracing *t);

/* Number of possible CPUs and whether cpu is online. */
int tracing_nr_cpus(const struct tracing *t);
bool tracing_cpu_online(const struct tracing *t, int cpu);

/* True if the instance's ring buffer holds unread events on any CPU. */
bool tracing_buffer_has_data(struct tracing *t);

/*
 * Apply the changes that do not clear the ring buffer: enable events,
 * filters, stacktrace triggers or options/stacktrace, overwrite mode,
 * record-tgid/record-cmd, options/stackmap = 0 if the config says
 * stackmap = off (turning it on is stackmap_enable()'s job), tracing_on =
 * 1. What is already as wanted (e.g. enabled at boot) is left alone; each
 * change is remembered for tracing_restore(). A stacktrace trigger on a
 * filtered event carries the filter ("stacktrace if ..."), since the
 * kernel fires triggers for events the filter discards.
 * Returns 0 or -errno (after undoing what it did).
 */
int tracing_setup_events(struct tracing *t);

/*
 * Apply the changes that clear the ring buffer (buffer_size_kb per CPU,
 * trace_clock) only where they differ from the current state. Callers
 * drain the buffer first. Returns 0 or -errno.
 */
int tracing_setup_buffer(struct tracing *t);

/*
 * Set the ring buffer's sub-buffer size to the configured one (undone at
 * exit). Changing it empties the buffer, and every page read afterwards
 * has the new size. Returns 1 if it changed, 0 if it already had that
 * size, none is configured or the kernel refused the default size
 * (tracing_subbuf_refused()), -EOPNOTSUPP if the kernel cannot change it
 * (before Linux 6.8), other -errno.
 */
int tracing_setup_subbuf(struct tracing *t);

/* Whether tracing_setup_subbuf() would change the sub-buffer size. */
bool tracing_subbuf_pending(struct tracing *t);

/*
 * The errno with which the kernel refused the default sub-buffer size
 * (subbuf_size not configured), 0 if it did not. A refused default is not
 * an error: tracing_setup_subbuf() returned 0 and the kernel's size stays.
 */
int tracing_subbuf_refused(struct tracing *t);

/*
 * Undo every change in reverse order and remove the instance if we
 * created it (after tracing_on = 0), then the saved state on disk
 * (doc/tracefs-state.md). With keep_tracing in the config, change nothing
 * and forget the changes: the capture keeps running, and the saved state
 * stays for a later run to put back. An
 * instance cannot be removed while files in it are open: stop the CPU
 * readers first. Failures are logged as warnings. Safe to call more than
 * once.
 */
void tracing_restore(struct tracing *t);

/* Free (calls tracing_restore() first). Returns NULL. */
struct tracing *tracing_free(struct tracing *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct tracing *, tracing_free);

/* per_cpu/cpuN/stats of our instance. Returns 0 or -errno. */
int tracing_cpu_stats(struct tracing *t, int cpu, struct tracing_cpu_stats *ret);

/*
 * Call cb once for each file a segment needs to decode offline (see the
 * FILE table in doc/segment-format.md), except kallsyms and config:
 * header_page, header_event, formats of enabled events and of the ftrace
 * entries, printk_formats, saved_cmdlines, saved_tgids. data is borrowed
 * for the duration of the call. Stops at and returns the first negative
 * value cb returns; else 0.
 */
int tracing_collect_files(struct tracing *t,
			  int (*cb)(const char *name, const void *data, size_t len, void *userdata),
			  void *userdata);

/* Only saved_cmdlines and saved_tgids (they change while recording). */
int tracing_collect_tasks(struct tracing *t,
			  int (*cb)(const char *name, const void *data, size_t len, void *userdata),
			  void *userdata);

/* Event type id of SYSTEM/NAME from its format file, or -ENOENT. */
int tracing_event_id(struct tracing *t, const char *system, const char *name);

/*
 * Keep these tasks' events out of the instance (set_event_notrace_pid), so
 * that the recorder does not record itself. Restored by tracing_restore().
 * Returns 0, -EOPNOTSUPP (kernel without the file), or -errno.
 */
int tracing_exclude_pids(struct tracing *t, const int *pids, size_t n);

/*
 * Health check, from a timer: the instance is still there, and every
 * enable, filter and option we set still holds our value (someone else
 * may change them under our feet; each is set back, logged at a bounded
 * rate and counted); with expect_on, tracing_on reads 1 (set back if
 * not). Returns the number of settings set back now, -ENOENT if the
 * instance is gone, or -errno.
 */
int tracing_check(struct tracing *t, bool expect_on);

/* Settings set back by tracing_check() since the start. */
uint64_t tracing_repairs(const struct tracing *t);

/* Write text to the instance's trace_marker. Returns 0 or -errno. */
int tracing_write_marker(struct tracing *t, const char *text);

/*
 * With a flight trigger configured: true when the trigger event fired and
 * stopped the buffer (tracing_on reads 0).
 */
bool tracing_flight_triggered(struct tracing *t);

/* Set tracing_on of the instance. Returns 0 or -errno. */
int tracing_set_on(struct tracing *t, bool on);

/*
 * Record what path (a tracefs file another module changes itself, e.g.
 * options/stackmap) holds now as the value to put back at exit, in the
 * undo log and in the saved state on disk, unless it is recorded already.
 * Call it before the first change. Returns 0 or -errno.
 */
int tracing_remember(struct tracing *t, const char *path);

/*
 * Stop the producers before the last flush at exit: tracing_on = 0, and
 * tracing_restore() puts back the value tracing_on had before the daemon
 * first changed anything (after everything else, so that our events are
 * gone by then). Returns 0 or -errno.
 */
int tracing_stop(struct tracing *t);

/* Sub-buffer (page) size in bytes of the instance's ring buffer. */
int tracing_page_size(struct tracing *t);

/* Name of the trace clock in use (allocated) or NULL. */
char *tracing_clock(struct tracing *t);

/*
 * True if this kernel has the ftrace stack map: stack_map and
 * options/stackmap exist in the top-level tracefs directory.
 */
bool tracing_has_stackmap(struct tracing *t);

#endif
