/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The archive's figures (archive.h): status, the finished segments, each
 * CPU's losses to write outages, the directory. Reads under the archive's
 * lock what the writers change.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

#include "archive-internal.h"
#include "util.h"

void archive_get_status(struct archive *a, struct archive_status *ret, char **ret_path)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);

	assert(a);
	assert(ret);

	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < a->nr_done; i++)
		ret->bytes += a->done[i].bytes;
	ret->segments = a->nr_done;
	pthread_mutex_lock(&a->lock);
	if (a->cur) {
		ret->current_bytes = segment_writer_size(a->cur->writer);
		ret->current_age_usec = now - a->cur->opened_mono_usec;
		if (ret_path)
			*ret_path = strdup(segment_writer_path(a->cur->writer));
	} else if (ret_path) {
		*ret_path = NULL;
	}
	pthread_mutex_unlock(&a->lock);
	ret->bytes += ret->current_bytes;
	ret->frames = atomic_load(&a->frames);
	ret->write_errors = atomic_load(&a->write_errors);
	ret->deleted = a->deleted;
	ret->recovered = a->recovered;
	ret->unrecovered = a->nr_unrecovered;
	ret->salvaged = a->salvaged;
	ret->quarantined = a->quarantined;
	pthread_mutex_lock(&a->lock);
	ret->outage = a->out.active;
	ret->outage_error = a->out.active ? a->out.error : 0;
	ret->outage_since_usec = a->out.active ? a->out.begin_realtime_usec : 0;
	ret->outages = a->out.total_outages;
	ret->dropped_events = a->out.total_events;
	ret->dropped_bytes = a->out.total_bytes;
	pthread_mutex_unlock(&a->lock);
}

int archive_foreach(struct archive *a, int (*cb)(const char *path, uint64_t bytes, void *userdata),
		    void *userdata)
{
	assert(a);
	assert(cb);
	for (size_t i = 0; i < a->nr_done; i++) {
		_cleanup_free_ char *path = NULL;
		int r;

		if (strprintf(&path, "%s/%s", a->dir, a->done[i].name) < 0)
			return -ENOMEM;
		r = cb(path, a->done[i].bytes, userdata);
		if (r < 0)
			return r;
	}
	return 0;
}

uint64_t archive_cpu_dropped(struct archive *a, unsigned cpu, uint64_t *ret_bytes)
{
	uint64_t events = 0, bytes = 0;

	assert(a);

	pthread_mutex_lock(&a->lock);
	if (cpu < a->nr_cpus) {
		events = a->out.total_cpu_events[cpu];
		bytes = a->out.total_cpu_bytes[cpu];
	}
	pthread_mutex_unlock(&a->lock);
	if (ret_bytes)
		*ret_bytes = bytes;
	return events;
}

const char *archive_directory(const struct archive *a)
{
	assert(a);
	return a->dir;
}
