/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * systemd notification (notify.h): READY=1, STATUS=, RELOADING=1,
 * STOPPING=1, WATCHDOG=1 and ERRNO= through sd_notify(), and whether
 * stderr is the journal stream (then logging sends structured entries).
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "notify.h"

/* sd_notify() returns 0 without $NOTIFY_SOCKET, < 0 on failure: both are fine to ignore here. */

void notify_ready(void)
{
	(void)sd_notify(0, "READY=1");
}

void notify_reloading(void)
{
	(void)sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
}

void notify_stopping(void)
{
	(void)sd_notify(0, "STOPPING=1");
}

void notify_status(const char *fmt, ...)
{
	char status[256];
	va_list ap;

	assert(fmt);

	if (!getenv("NOTIFY_SOCKET"))
		return;
	va_start(ap, fmt);
	(void)vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	/* A newline would start a new assignment in the notification. */
	for (char *p = status; *p; p++)
		if (*p == '\n')
			*p = ' ';
	(void)sd_notifyf(0, "STATUS=%s", status);
}

void notify_errno(int error)
{
	(void)sd_notifyf(0, "ERRNO=%d", error < 0 ? -error : error);
}

void notify_watchdog(void)
{
	(void)sd_notify(0, "WATCHDOG=1");
}

int notify_watchdog_usec(uint64_t *ret_usec)
{
	uint64_t usec = 0;
	int r;

	assert(ret_usec);

	r = sd_watchdog_enabled(0, &usec);
	if (r > 0)
		*ret_usec = usec;
	return r > 0 ? 1 : r;
}

bool notify_journal_stderr(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}
