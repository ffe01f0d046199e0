/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's health check, run from a timer on the main loop: CPUs
 * that came online get a reader without a restart (hotplug), reader
 * threads that ended by themselves make the recorder unhealthy (the
 * watchdog then stops pinging, so that the service manager restarts the
 * daemon rather than believe that every CPU is recorded), and tracefs is
 * checked for changes made under our feet (tracing_check()). Also keeping
 * the daemon's own threads out of the recording and the crash buffer, at
 * start and whenever a reader is added.
 */
#include <assert.h>

#include "config.h"
#include "cpu-reader.h"
#include "crash-buffer.h"
#include "generations.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

/*
 * Reading pages allocates and schedules: left in, the recorder would record
 * itself (tens of thousands of events a second on an idle machine).
 */
void recorder_exclude_self(struct recorder *rec)
{
	int pids[1 + 256];
	size_t n = 0;
	int r;

	pids[n++] = getpid();
	for (unsigned i = 0; i < rec->nr_readers && n < ARRAY_SIZE(pids); i++)
		if (cpu_reader_tid(rec->readers[i]))
			pids[n++] = cpu_reader_tid(rec->readers[i]);
	r = tracing_exclude_pids(rec->tracing, pids, n);
	if (r < 0 && r != -EOPNOTSUPP)
		log_errno(LOG_WARNING, r, "cannot exclude the recorder's own tasks, continuing");
	if (!crash_buffer_armed(rec->crash))
		return;
	r = crash_buffer_exclude_pids(rec->crash, pids, n);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot keep the daemon's tasks out of the crash buffer, "
			  "continuing");
}

static bool has_reader(const struct recorder *rec, int cpu)
{
	for (unsigned i = 0; i < rec->nr_readers; i++)
		if (cpu_reader_cpu(rec->readers[i]) == cpu)
			return true;
	return false;
}

/* A CPU came online that has no reader yet: record it from now on. */
static void add_cpu(struct recorder *rec, int cpu)
{
	int r;

	if (rec->nr_readers >= rec->nr_cpus)
		return;
	r = recorder_open_reader(rec, cpu);
	if (r >= 0 && !recorder_flight(rec))
		r = cpu_reader_start(rec->readers[rec->nr_readers - 1]);
	if (r < 0) {
		log_ratelimit_err_errno(&rec->health_rl, r, "CPU %d came online, cannot record it", cpu);
		return;
	}
	rec->cpus_added++;
	log_notice("CPU %d came online: recording it", cpu);
	recorder_exclude_self(rec);
}

static void check_cpus(struct recorder *rec)
{
	unsigned offline = 0;

	for (int cpu = 0; cpu < (int)rec->nr_cpus; cpu++) {
		if (!tracing_cpu_online(rec->tracing, cpu))
			offline++;
		else if (!has_reader(rec, cpu))
			add_cpu(rec, cpu);
	}
	if (offline != rec->cpus_offline)
		log_info("%u of %u CPUs offline", offline, rec->nr_cpus);
	rec->cpus_offline = offline;
}

static const char *check_readers(struct recorder *rec)
{
	return recorder_readers_lost(rec) ? "a CPU reader stopped" : NULL;
}

bool recorder_readers_lost(struct recorder *rec)
{
	bool lost = false, news = false;

	for (unsigned i = 0; i < rec->nr_readers; i++) {
		if (cpu_reader_alive(rec->readers[i]))
			continue;
		lost = true;
		if (rec->reader_lost[i])
			continue;
		rec->reader_lost[i] = news = true;
		log_err("CPU %d: its reader thread ended: the CPU is no longer recorded; flushes "
			"go on without it and the watchdog is no longer pinged, so that the service "
			"manager restarts the daemon", cpu_reader_cpu(rec->readers[i]));
	}
	/* barriers waiting for it can go on now; their continuations may ask again */
	if (news)
		recorder_process_ops(rec);
	return lost;
}

void recorder_health_check(struct recorder *rec)
{
	/* tracing_on is ours to switch off for a strict reset, and the flight trigger's */
	bool expect_on = !(rec->gens && generations_busy(rec->gens)) &&
			 !rec->cfg->flight_trigger;
	int r;

	if (rec->state != RECORDER_RECORDING)
		return;
	check_cpus(rec);
	rec->unhealthy = check_readers(rec);
	r = tracing_check(rec->tracing, expect_on);
	if (r == -ENOENT)
		rec->unhealthy = "the tracing instance was removed";
}

bool recorder_healthy(struct recorder *rec, const char **ret_why)
{
	assert(rec);
	if (rec->state == RECORDER_RECORDING && !rec->unhealthy)
		rec->unhealthy = check_readers(rec);
	if (ret_why)
		*ret_why = rec->unhealthy;
	return !rec->unhealthy;
}

int recorder_on_health_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	recorder_health_check(userdata);
	return sd_event_source_set_time_relative(s, HEALTH_CHECK_USEC);
}
