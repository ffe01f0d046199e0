/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The INFO text of an event (what tep_print_event(tep, s, record, "%s",
 * TEP_PRINT_INFO) prints), produced without libtraceevent's per-record
 * interpretation of the print format: each event type's print format and
 * argument tree are compiled once into a small program of literal text,
 * field reads and conversions, which then runs per record with its own
 * digit code. Only shapes whose libtraceevent 1.7 output is known exactly
 * are compiled; any other event type is left to libtraceevent, decided
 * once per event type. The start of a report line, which report prints
 * once per event and per stack, is written the same way.
 */
#ifndef STACKMAPD_EVENT_FORMAT_H
#define STACKMAPD_EVENT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>

#include <event-parse.h>

#include "util.h"

struct event_format_cache;

/*
 * Count of event types compiled (fast) and left to libtraceevent
 * (fallback), and of records printed each way by event_format_info().
 */
struct event_format_stats {
	size_t types_fast;
	size_t types_fallback;
	unsigned long long records_fast;
	unsigned long long records_fallback;
};

/* A cache of compiled formats; NULL when out of memory. Free with event_format_cache_free(). */
struct event_format_cache *event_format_cache_new(void);

/*
 * Free the cache and its programs, and release the references it holds
 * on tep handles (a handle the cache has programs for stays allocated
 * until the cache lets go of it, so its address cannot be reused by
 * another handle while programs for it exist). Accepts NULL; returns NULL.
 */
struct event_format_cache *event_format_cache_free(struct event_format_cache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct event_format_cache *, event_format_cache_free);

/*
 * Append the INFO text of record (of type event, parsed in event->tep) to
 * s, byte for byte what libtraceevent would append. Returns false, with s
 * untouched, when the caller must ask libtraceevent instead: the event type
 * has a shape this module does not compile, or this record is unusual
 * (a field beyond the record's end, a string without its terminator).
 * c, event and record are borrowed; c takes a reference on event->tep.
 */
bool event_format_info(struct event_format_cache *c, struct trace_seq *s, struct tep_event *event,
		       struct tep_record *record);

/*
 * Append the start of a report line to s as libtraceevent's
 * tep_print_event() prints "%16s-%-5d [%03d]" of comm, pid and cpu and,
 * with with_time, " %6.1000d:" of the nanosecond time ts_ns (rounded to
 * microseconds: " SSSSS.UUUUUU:"). Returns false, with s untouched, when
 * out of memory.
 */
bool event_format_task_time(struct event_format_cache *c, struct trace_seq *s, const char *comm,
			    int pid, int cpu, bool with_time, unsigned long long ts_ns);

/* The counts so far. */
void event_format_stats(const struct event_format_cache *c, struct event_format_stats *ret);

#endif
