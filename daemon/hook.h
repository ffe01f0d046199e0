/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The segment hook ([archive] hook): runs a program with each finished
 * segment's path, without a shell and without ever blocking recording.
 * The program is started with execve() from an argument vector (the
 * configured words, split at blanks with no quoting, then the segment path
 * as one more argument, whatever characters it holds), as an ordinary
 * process: no signal blocked or ignored, none of the daemon's files
 * beyond stdin, stdout and stderr. At most HOOK_MAX_RUNNING run at once;
 * a segment that comes while they all run waits in a queue (at most
 * HOOK_MAX_QUEUED, oldest first; beyond it the oldest is dropped, logged
 * and counted) and its hook starts when one exits. Their exit is collected
 * on the sd-event loop and a failure logged as a warning. The daemon does
 * not wait for running or queued hooks when it stops; it logs them.
 */
#ifndef STACKMAPD_HOOK_H
#define STACKMAPD_HOOK_H

#include <stdint.h>

#include <systemd/sd-event.h>

struct hook;

#define HOOK_MAX_RUNNING 8
#define HOOK_MAX_QUEUED 256

struct hook_stats {
	unsigned running;
	unsigned queued;		/* waiting now */
	uint64_t started;		/* since start */
	uint64_t deferred;		/* had to wait for a free slot */
	uint64_t dropped;		/* the queue was full: not run */
	uint64_t failed;		/* could not be started, or exited with an error */
};

/*
 * Create a hook runner on loop e (referenced). SIGCHLD must be blocked in
 * the calling thread, as sd_event_add_child() needs. On success *ret is
 * owned by the caller (free with hook_free()). Returns 0 or -ENOMEM.
 */
int hook_new(sd_event *e, struct hook **ret);

/*
 * Stop watching the hooks: collect and report those that have exited,
 * log those still running (they run on, their exit no longer collected)
 * and the queued ones, which are not run. Accepts NULL; returns NULL.
 */
struct hook *hook_free(struct hook *h);

/*
 * Start argv[0] (an absolute path) with the arguments argv[1..] and path
 * appended; argv is NULL-terminated and borrowed for the call (a queued
 * run keeps a copy), NULL or empty meaning no hook. Returns 0 when started
 * or there is no hook, 1 when queued because HOOK_MAX_RUNNING are still
 * running (logs when the queue overflows), or -errno when it cannot be
 * started (a hook that started but cannot be watched counts as started).
 */
int hook_run(struct hook *h, char *const *argv, const char *path);

/* Counters, for status. */
void hook_get_stats(const struct hook *h, struct hook_stats *ret);

#endif
