/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The service manager's side channel (sd_notify): readiness, reload and
 * stop notifications, the status line, the watchdog. Every function is a
 * no-op when the daemon does not run under systemd ($NOTIFY_SOCKET unset),
 * and failures to notify are ignored: they never stop the daemon.
 */
#ifndef STACKMAPD_NOTIFY_H
#define STACKMAPD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* READY=1: startup is complete (every CPU reader runs), or a reload finished. */
void notify_ready(void);

/*
 * RELOADING=1 with MONOTONIC_USEC=now (systemd 253 wants both to match a
 * reload to its completion; 252 ignores MONOTONIC_USEC). Follow with
 * notify_ready() when the reload is done, whether it succeeded or not.
 */
void notify_reloading(void);

/* STOPPING=1: shutdown has begun. */
void notify_stopping(void);

/* STATUS=<formatted text>, shown by "systemctl status"; one line, kept short. */
void notify_status(const char *fmt, ...) _printf_(1, 2);

/* ERRNO=<error> (positive or negative errno) before exiting on a failure. */
void notify_errno(int error);

/* WATCHDOG=1: keep-alive ping; call it from a timer at half notify_watchdog_usec(). */
void notify_watchdog(void);

/*
 * Whether the service manager expects watchdog pings (WatchdogSec= and
 * $WATCHDOG_PID is us). Returns 1 and the interval in *ret_usec when it
 * does, 0 when not (also outside systemd), or a negative errno when the
 * environment is malformed.
 */
int notify_watchdog_usec(uint64_t *ret_usec);

/*
 * True when stderr is connected to the journal: $JOURNAL_STREAM
 * ("DEVICE:INODE") names the same file as fd 2. Then the daemon can log
 * with structured fields (log_set_journal(true)).
 */
bool notify_journal_stderr(void);

#endif
