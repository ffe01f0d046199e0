/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wall-clock time for trace-clock data: the CLOCK record's pairs of (trace
 * clock, CLOCK_REALTIME, CLOCK_BOOTTIME) (doc/segment-format.md), the
 * times a user gives (`2026-12-01 03:12`, `03:12`, `-10min`, ISO 8601 with
 * a zone, or trace-clock seconds), and the mapping between the two clocks
 * through the pairs of one boot, so that a wall-clock window becomes a
 * trace-clock window and a trace timestamp a date. Shared by the daemon
 * (encoding) and stackmapctl (everything else).
 */
#ifndef STACKMAPD_WALLCLOCK_H
#define STACKMAPD_WALLCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NSEC_PER_SEC UINT64_C(1000000000)

/* One sample of the three clocks, nanoseconds each. */
struct wallclock_pair {
	uint64_t trace;
	uint64_t realtime;
	uint64_t boottime;
};

#define WALLCLOCK_PAIR_SIZE 24

/* A CLOCK payload holds one or more pairs: 24 bytes each, three u64 LE. */
void wallclock_pair_encode(const struct wallclock_pair *p, uint8_t out[WALLCLOCK_PAIR_SIZE]);

/*
 * Append the pairs of a CLOCK payload to the array *pairs of *n entries
 * with room for *cap (grown with GREEDY_REALLOC(), so many small records
 * cost linear time; *pairs is the caller's). Returns the number added,
 * -EBADMSG (length not a multiple of 24, or empty) or -ENOMEM.
 */
int wallclock_pairs_decode(const void *buf, size_t len, struct wallclock_pair **pairs, size_t *n,
			   size_t *cap);

/* Sort pairs by trace clock and drop exact duplicates. Returns the new count. */
size_t wallclock_pairs_sort(struct wallclock_pair *pairs, size_t n);

/* A point in time as the user wrote it. */
struct wallclock_time {
	bool set;
	bool trace;			/* ns is trace clock; else CLOCK_REALTIME */
	uint64_t ns;
};

/*
 * Parse text: "YYYY-MM-DD[ T]HH:MM[:SS[.frac]][Z|+HH[:MM]|-HH[:MM]]",
 * "YYYY-MM-DD", "HH:MM[:SS]" (local time today, or yesterday if that is
 * after now), "-N{s,sec,min,m,h,d}" (before now), or "N[.frac]" (trace
 * clock seconds). Dates without a zone are local time. now is
 * CLOCK_REALTIME ns. Returns 0 and *ret, or -EINVAL.
 */
int wallclock_parse(const char *text, uint64_t now, struct wallclock_time *ret);

/*
 * Trace clock to CLOCK_REALTIME through pairs (sorted, n >= 1): the
 * offset of the last pair at or before trace (the first pair before all).
 */
uint64_t wallclock_to_realtime(const struct wallclock_pair *pairs, size_t n, uint64_t trace);

/*
 * CLOCK_REALTIME to trace clock, the inverse of wallclock_to_realtime():
 * each pair covers the real time from its own up to where the next pair's
 * trace clock begins; a real time no pair covers (the machine was
 * suspended, or the clock stepped forward) maps to the next pair's trace
 * time. Saturates at 0.
 */
uint64_t wallclock_to_trace(const struct wallclock_pair *pairs, size_t n, uint64_t realtime);

/*
 * The trace-clock span of a CLOCK_REALTIME window [rt_since, rt_until]
 * (inclusive; UINT64_MAX: open) under wallclock_to_realtime(): from the
 * first to the last trace time whose real time lies in it. After a clock
 * step backwards, the span also holds what lies between the times that
 * map into the window; it never misses one. Returns false if no trace time
 * maps into the window, else true and *ret_since, *ret_until.
 */
bool wallclock_trace_span(const struct wallclock_pair *pairs, size_t n, uint64_t rt_since,
			  uint64_t rt_until, uint64_t *ret_since, uint64_t *ret_until);

/* Format realtime ns as "YYYY-MM-DD HH:MM:SS.uuuuuu" in local time into buf (>= 32 bytes). */
void wallclock_format(uint64_t realtime, char *buf, size_t len);

#endif
