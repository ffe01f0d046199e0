/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging: one line per message on stderr with a "<N>" syslog priority
 * prefix, which journald records as the priority when stderr is the journal
 * stream. Helpers never log; the caller that decides what happens logs once.
 */
#ifndef STACKMAPD_LOG_H
#define STACKMAPD_LOG_H

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

#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)

#endif
