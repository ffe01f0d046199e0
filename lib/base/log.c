/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging (log.h): one line per message on stderr with a "<N>" priority
 * prefix, or a structured journal entry when stderr is the journal; and the
 * rate limit that logs the first of a repeating error per interval and
 * counts the rest, so that nothing repeats silently or floods the journal.
 */
#include <pthread.h>
#include <stdarg.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static const char *program;
static bool use_journal;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

void log_set_program(const char *name)
{
	program = name;
}

void log_set_journal(bool on)
{
	use_journal = on;
}

static void log_emit_suffix(int level, const char *const *fields, const char *fmt, va_list ap,
			    int r, uint64_t suppressed)
{
	char msg[2048];
	int n;

	if (level > max_level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if (r < 0 && (size_t)n < sizeof(msg))
		n += snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(-r));
	if (suppressed > 0 && n >= 0 && (size_t)n < sizeof(msg))
		(void)snprintf(msg + n, sizeof(msg) - (size_t)n,
			       " (%" PRIu64 " more since the last message)", suppressed);

	if (use_journal) {
		struct iovec iov[16];
		char prio[32];
		_cleanup_free_ char *m = NULL;
		size_t k = 0;

		(void)snprintf(prio, sizeof(prio), "PRIORITY=%d", level);
		if (strprintf(&m, "MESSAGE=%s", msg) == 0) {
			iov[k].iov_base = m;
			iov[k++].iov_len = strlen(m);
			iov[k].iov_base = prio;
			iov[k++].iov_len = strlen(prio);
			for (size_t i = 0; fields && fields[i] && k < ARRAY_SIZE(iov); i++) {
				iov[k].iov_base = (void *)fields[i];
				iov[k++].iov_len = strlen(fields[i]);
			}
			if (sd_journal_sendv(iov, (int)k) >= 0)
				return;
		}
	}

	pthread_mutex_lock(&log_lock);
	if (program)
		fprintf(stderr, "%s: %s\n", program, msg);
	else
		fprintf(stderr, "<%d>%s\n", level, msg);
	pthread_mutex_unlock(&log_lock);
}

static void log_emit(int level, const char *const *fields, const char *fmt, va_list ap, int r)
{
	log_emit_suffix(level, fields, fmt, ap, r, 0);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(level, NULL, fmt, ap, 0);
	va_end(ap);
}

int log_errno(int level, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(level, NULL, fmt, ap, r);
	va_end(ap);
	return r;
}

void log_struct(int level, const char *const *fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(level, fields, fmt, ap, 0);
	va_end(ap);
}

int log_ratelimit_errno(struct log_ratelimit *rl, int level, int r, const char *fmt, ...)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC), interval, suppressed = 0;
	bool show = false;
	va_list ap;

	interval = rl->interval_usec ? rl->interval_usec : LOG_RATELIMIT_INTERVAL_USEC;
	pthread_mutex_lock(&rl->lock);
	rl->total++;
	if (rl->begin_usec == 0 || now - rl->begin_usec >= interval) {
		rl->begin_usec = now;
		suppressed = rl->suppressed;
		rl->suppressed = 0;
		show = true;
	} else {
		rl->suppressed++;
	}
	pthread_mutex_unlock(&rl->lock);

	if (show) {
		va_start(ap, fmt);
		log_emit_suffix(level, NULL, fmt, ap, r, suppressed);
		va_end(ap);
	}
	return r;
}
