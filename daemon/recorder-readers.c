/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's per-CPU readers: opening one for each online CPU (and
 * later for a CPU that comes online, from the health check), what each
 * reads with, and draining what the ring buffer holds on every CPU into
 * the archive.
 */
#include "config.h"
#include "cpu-reader.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

int recorder_collect_formats(struct recorder *rec)
{
	/* the column encoder needs every recorded event's layout; the texts stay in files */
	free(rec->formats);
	rec->formats = calloc(rec->nr_files + 1, sizeof(*rec->formats));
	if (!rec->formats)
		return -ENOMEM;
	rec->nr_formats = 0;
	for (size_t i = 0; i < rec->nr_files; i++)
		if (startswith(rec->files[i].name, "events/") &&
		    strstr(rec->files[i].name, "/format"))
			rec->formats[rec->nr_formats++] = rec->files[i].data;
	return 0;
}

int recorder_open_readers(struct recorder *rec)
{
	int n = tracing_nr_cpus(rec->tracing);

	if (n <= 0)
		return -ENODEV;
	rec->nr_cpus = (unsigned)n;
	rec->readers = calloc(rec->nr_cpus, sizeof(*rec->readers));
	if (recorder_collect_formats(rec) < 0)
		return -ENOMEM;
	rec->kstats_base = calloc(rec->nr_cpus, sizeof(*rec->kstats_base));
	rec->rate_events = calloc(rec->nr_cpus, sizeof(*rec->rate_events));
	rec->cpu_status = calloc(rec->nr_cpus, sizeof(*rec->cpu_status));
	rec->reader_lost = calloc(rec->nr_cpus, sizeof(*rec->reader_lost));
	if (!rec->readers || !rec->kstats_base || !rec->rate_events || !rec->cpu_status ||
	    !rec->reader_lost)
		return -ENOMEM;
	return recorder_open_online_readers(rec);
}

int recorder_open_online_readers(struct recorder *rec)
{
	for (int cpu = 0; cpu < (int)rec->nr_cpus; cpu++) {
		int r;

		/* one that comes online later is added by the health check */
		if (!tracing_cpu_online(rec->tracing, cpu))
			continue;
		r = recorder_open_reader(rec, cpu);
		if (r < 0)
			return r;
	}
	return 0;
}

struct cpu_reader_params recorder_reader_params(struct recorder *rec,
						 struct tracefs_instance *instance, int cpu)
{
	return (struct cpu_reader_params){
		.instance = instance,
		.cpu = cpu,
		.layout = &rec->layout,
		.dedup = rec->layout.stack_ref_id >= 0 ? rec->dedup : NULL,
		.archive = rec->archive,
		.frame_size = rec->cfg->frame_size,
		.compression_level = rec->cfg->compression_level,
		.columns = rec->cfg->frame_encoding == CONFIG_FRAME_COLUMNS,
		.stack_time_event = rec->cfg->stack_time == CONFIG_STACK_TIME_EVENT,
		.formats = (const char *const *)rec->formats,
		.nr_formats = rec->nr_formats,
		.notify_fd = rec->notify_fd,
	};
}

int recorder_open_reader(struct recorder *rec, int cpu)
{
	struct cpu_reader_params p = recorder_reader_params(rec, tracing_instance(rec->tracing), cpu);
	int r;

	r = cpu_reader_new(&p, &rec->readers[rec->nr_readers]);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot open the ring buffer of CPU %d", cpu);
	rec->nr_readers++;
	return 0;
}

void recorder_drain_all(struct recorder *rec)
{
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		int r = cpu_reader_drain(rec->readers[i]);

		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot read the buffer of CPU %d, continuing",
				  cpu_reader_cpu(rec->readers[i]));
	}
}
