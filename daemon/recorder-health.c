/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's health check, run from a timer on the main loop: CPUs
 * that came online get a reader without a restart (hotplug), reader
 * threads that ended by themselves make the recorder unhealthy (the
 * watchdog then stops pinging, so that the service manager restarts the
 * daemon rather than believe that every CPU is recorded), and tracefs is
 * checked for changes made under our feet (tracing_check()).
 */
#include "config.h"
#include "cpu-reader.h"
#include "generations.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

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
	for (unsigned i = 0; i < rec->nr_readers; i++)
		if (!cpu_reader_alive(rec->readers[i]))
			return "a CPU reader stopped";
	return NULL;
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
