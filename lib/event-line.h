/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The start of a report line (COMM-PID [CPU] TIME:), as libtraceevent prints it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest comm written; libtraceevent's task names are at most this long. */
#define EVENT_LINE_COMM_MAX 256
/* Room event_line_task() and event_line_time() need together, at most. */
#define EVENT_LINE_MAX (EVENT_LINE_COMM_MAX + 64)

/*
 * "%16s-%-5d [%03d]" of comm, pid, cpu into buf; returns the length (no
 * NUL), or 0 for a comm longer than EVENT_LINE_COMM_MAX.
 */
size_t event_line_task(char *buf, const char *comm, int pid, int cpu);

/* " %6.1000d:" of a nanosecond time: " SSSSS.UUUUUU:". */
size_t event_line_time(char *buf, uint64_t ts_ns);
