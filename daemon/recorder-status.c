/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's figures for "stackmapctl status", STATUS= and the
 * periodic log line: per-CPU counters and rates, the stack map, the
 * archive; and the walk over finished segments for "list".
 */
#include <assert.h>
#include <inttypes.h>

#include "archive.h"
#include "config.h"
#include "cpu-reader.h"
#include "generations.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

static void stackmap_status(const struct generations *g, struct recorder_status *st)
{
	struct stackmap_stats s;

	generations_get_stats(g, &s);
	st->stackmap = true;
	st->generation = s.generation;
	st->map_entries = s.entries;
	st->map_capacity = s.capacity;
	st->map_drops = s.drops;
	st->map_success_rate = s.have_stat ? (double)s.success_rate : -1;
	st->resets = s.resets_own + s.resets_external;
	st->map_reset_busy = s.reset_busy;
	st->foreign_markers = s.foreign_markers;
	st->realtime_refused = s.realtime_refused;
}

void recorder_get_status(struct recorder *rec, struct recorder_status *ret)
{
	struct archive_status as = { 0 };
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	double dt;

	assert(rec);
	assert(ret);

	dt = rec->rate_usec && now > rec->rate_usec ? (double)(now - rec->rate_usec) / 1e6 : 0;
	memset(ret, 0, sizeof(*ret));
	ret->state = rec->state;
	ret->instance = tracing_instance_name(rec->tracing);
	ret->map_success_rate = -1;
	ret->unresolved = rec->unresolved;
	ret->dedup_stacks = rec->dedup ? stackdedup_count(rec->dedup) : 0;
	ret->nr_cpus = rec->nr_readers;
	ret->cpus = rec->cpu_status;
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		struct cpu_reader_stats rs;
		struct tracing_cpu_stats ks = { 0 };
		struct recorder_cpu_status *c = &rec->cpu_status[i];
		int cpu = cpu_reader_cpu(rec->readers[i]);

		cpu_reader_get_stats(rec->readers[i], &rs);
		(void)tracing_cpu_stats(rec->tracing, cpu, &ks);
		c->cpu = cpu;
		c->events = rs.events;
		c->pages = rs.pages;
		c->raw_bytes = rs.raw_bytes;
		c->stored_bytes = rs.stored_bytes;
		c->read_errors = rs.read_errors;
		c->alive = cpu_reader_alive(rec->readers[i]);
		/* overwritten events are counted by the kernel and on the pages read after them */
		c->lost_events = MAX(rs.lost_events, ks.overrun) + ks.dropped;
		c->dropped_events = rec->archive ?
			archive_cpu_dropped(rec->archive, (unsigned)cpu, &c->dropped_bytes) : 0;
		if (dt >= 1.0) {
			c->events_per_s = (double)(rs.events - rec->rate_events[i]) / dt;
			rec->rate_events[i] = rs.events;
		}
	}
	if (dt >= 1.0)
		rec->rate_usec = now;
	if (rec->gens)
		stackmap_status(rec->gens, ret);
	if (rec->archive) {
		archive_get_status(rec->archive, &as, &ret->segment_path);
		ret->directory = archive_directory(rec->archive);
	}
	ret->segment_bytes = as.current_bytes;
	ret->segment_age_usec = as.current_age_usec;
	ret->archive_bytes = as.bytes;
	ret->archive_max_bytes = rec->cfg->max_size;
	ret->archive_segments = as.segments;
	ret->write_errors = as.write_errors;
	ret->dropped_events = as.dropped_events;
	ret->dropped_bytes = as.dropped_bytes;
	ret->write_outage = as.outage;
	ret->write_outage_error = as.outage_error;
	ret->write_outage_since_usec = as.outage_since_usec;
	ret->write_outages = as.outages;
	ret->quarantined = as.quarantined;
	ret->recovered = as.recovered;
	ret->unrecovered = as.unrecovered;
	ret->salvaged = as.salvaged;
	(void)recorder_healthy(rec, &ret->unhealthy);
	ret->cpus_offline = rec->cpus_offline;
	ret->cpus_added = rec->cpus_added;
	ret->tracefs_repairs = tracing_repairs(rec->tracing);
	ret->crash_buffer = recorder_crash_state(rec);
	ret->crash_captured = rec->crash_captured;
}

int recorder_summary(struct recorder *rec, char *buf, size_t len)
{
	struct recorder_status st;
	uint64_t events = 0, lost = 0;
	double rate = 0;

	assert(rec);
	assert(buf || len == 0);

	recorder_get_status(rec, &st);
	for (unsigned i = 0; i < st.nr_cpus; i++) {
		events += st.cpus[i].events;
		lost += st.cpus[i].lost_events;
		rate += st.cpus[i].events_per_s;
	}
	free(st.segment_path);
	return snprintf(buf, len,
			"recording %u CPUs: %" PRIu64 " events (%.0f/s), %" PRIu64
			" lost, archive %" PRIu64 " MiB in %" PRIu64 " segments%s%s%s",
			st.nr_cpus, events, rate, lost, st.archive_bytes >> 20,
			st.archive_segments + 1, st.write_outage ? ", WRITE FAILING (" : "",
			st.write_outage ? strerror(-st.write_outage_error) : "",
			st.write_outage ? "): events dropped" : "");
}

int recorder_foreach_segment(struct recorder *rec,
			     int (*cb)(const char *path, uint64_t bytes, void *userdata),
			     void *userdata)
{
	assert(rec);
	assert(cb);
	return archive_foreach(rec->archive, cb, userdata);
}

enum recorder_state recorder_state(const struct recorder *rec)
{
	assert(rec);
	return rec->state;
}
