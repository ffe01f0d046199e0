/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging: one line per message on stderr with a "<N>" syslog priority
 * prefix, which journald records as the priority when stderr is the journal
 * stream. Helpers never log; the caller that decides what happens logs once.
 */
#ifndef STACKMAPD_LOG_H
#define STACKMAPD_LOG_H

#include <pthread.h>
#include <syslog.h>

#include "util.h"

/* Messages above this priority (numerically greater) are dropped. */
void log_set_max_level(int level);
int log_get_max_level(void);

/* Prefix each line with PROGRAM: (for interactive tools), or not (daemon under systemd). */
void log_set_program(const char *name);

/*
 * Send messages to the journal with structured fields instead of stderr.
 * Chosen by the daemon when $JOURNAL_STREAM matches its stderr.
 */
void log_set_journal(bool on);

void log_msg(int level, const char *fmt, ...) _printf_(2, 3);

/*
 * Log fmt plus ": <strerror(-r)>" and return r (a negative errno), so that
 * callers can write  return log_errno(LOG_ERR, r, "cannot open '%s'", p);
 */
int log_errno(int level, int r, const char *fmt, ...) _printf_(3, 4);

/*
 * Log with extra journal fields: fields is a NULL-terminated list of
 * "KEY=value" strings, sent as structured fields to the journal and
 * ignored on stderr.
 */
void log_struct(int level, const char *const *fields, const char *fmt, ...) _printf_(3, 4);

/*
 * A rate limit for an error that can repeat (a write error per frame, a
 * failing poll per wakeup): the first occurrence in each interval is logged,
 * the ones after it are counted, and the next message that gets through says
 * how many were suppressed. Nothing is dropped silently. Embed one per
 * call site (static, or in the object that owns the error); zero-initialised
 * is ready to use with the default interval. Thread-safe.
 */
struct log_ratelimit {
	uint64_t interval_usec;		/* 0: LOG_RATELIMIT_INTERVAL_USEC */
	uint64_t begin_usec;		/* start of the current interval */
	uint64_t suppressed;		/* messages not shown in it */
	uint64_t total;			/* every occurrence, shown or not */
	pthread_mutex_t lock;
};

#define LOG_RATELIMIT_INTERVAL_USEC (60 * USEC_PER_SEC)
#define LOG_RATELIMIT_INIT { 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER }

/*
 * Like log_errno(), but at most once per interval of rl; returns r whether
 * or not the message was shown. A shown message after suppressed ones ends
 * with "(N more since the last message)".
 */
int log_ratelimit_errno(struct log_ratelimit *rl, int level, int r, const char *fmt, ...)
	_printf_(4, 5);

#define log_ratelimit_warn_errno(rl, r, ...) log_ratelimit_errno(rl, LOG_WARNING, r, __VA_ARGS__)
#define log_ratelimit_err_errno(rl, r, ...) log_ratelimit_errno(rl, LOG_ERR, r, __VA_ARGS__)

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)

#endif
