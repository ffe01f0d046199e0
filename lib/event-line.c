/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The start of a report line, `COMM-PID [CPU] TIME:`, written without
 * printf: report prints it once per event and per stack, and
 * tep_print_event() would parse its format string every time. The text is
 * what libtraceevent prints for "%16s-%-5d [%03d]" and " %6.1000d:": the
 * comm right-aligned in 16 columns, the pid left-aligned in 5, the CPU
 * zero-padded to 3; the time rounded to microseconds (the rounding wraps
 * at 2^64 ns) and printed as "%5llu.%06llu". tests/unit/test-event-line
 * compares the two.
 */
#include <string.h>

#include "event-line.h"

/* The decimal digits of v, most significant first, into p; returns their count. */
static size_t put_digits(char *p, uint64_t v)
{
	char tmp[20];
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/* v in at least width columns: right-aligned with pad ' ' or '0', or left-aligned. */
static char *put_num(char *p, uint64_t v, bool negative, size_t width, char pad, bool left)
{
	char digits[21];
	size_t n = 0, len;

	if (negative)
		digits[n++] = '-';
	n += put_digits(digits + n, v);
	len = n;
	if (!left && len < width) {
		if (pad == '0' && negative) {
			*p++ = '-';
			memmove(digits, digits + 1, --n);
			len--;
			width--;
		}
		memset(p, pad, width - len);
		p += width - len;
	}
	memcpy(p, digits, n);
	p += n;
	if (left && len < width) {
		memset(p, ' ', width - len);
		p += width - len;
	}
	return p;
}

static char *put_int(char *p, int v, size_t width, char pad, bool left)
{
	uint64_t mag = v < 0 ? (uint64_t)-(int64_t)v : (uint64_t)v;

	return put_num(p, mag, v < 0, width, pad, left);
}

size_t event_line_task(char *buf, const char *comm, int pid, int cpu)
{
	size_t len = strlen(comm);
	char *p = buf;

	if (len > EVENT_LINE_COMM_MAX)
		return 0;
	if (len < 16) {
		memset(p, ' ', 16 - len);
		p += 16 - len;
	}
	memcpy(p, comm, len);
	p += len;
	*p++ = '-';
	p = put_int(p, pid, 5, ' ', true);
	*p++ = ' ';
	*p++ = '[';
	p = put_int(p, cpu, 3, '0', false);
	*p++ = ']';
	return (size_t)(p - buf);
}

size_t event_line_time(char *buf, uint64_t ts_ns)
{
	uint64_t us = (ts_ns + 500) / 1000;	/* rounded, and wrapping, as libtraceevent does */
	char *p = buf;

	*p++ = ' ';
	p = put_num(p, us / 1000000, false, 5, ' ', false);
	*p++ = '.';
	p = put_num(p, us % 1000000, false, 6, '0', false);
	*p++ = ':';
	return (size_t)(p - buf);
}
