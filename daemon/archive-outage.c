/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Write outages of the archive (a full disk, an I/O error): while writing
 * fails, the readers go on draining the kernel buffers and their frames are
 * dropped here and counted per CPU (events, raw bytes, time span); writes
 * are retried on a backoff, and the first write that succeeds is preceded
 * by STATS records that say what was lost and when (doc/segment-format.md),
 * with the lost events added to that segment's index. Logged once when an
 * outage starts, rate-limited while it lasts, and summed up when it ends.
 * All state is under the archive's lock; logging is done outside it.
 */
#include <inttypes.h>

#include "archive-internal.h"
#include "util.h"

#define RETRY_MIN_USEC (100 * USEC_PER_MSEC)
#define RETRY_MAX_USEC (2 * USEC_PER_SEC)
#define OUTAGE_LOG_INTERVAL_USEC (30 * USEC_PER_SEC)

bool archive_error_transient(int r)
{
	return r == -ENOSPC || r == -EDQUOT || r == -EIO;
}

int outage_init(struct outage *o, unsigned nr_cpus)
{
	o->cpus = calloc(nr_cpus ? nr_cpus : 1, sizeof(*o->cpus));
	o->total_cpu_events = calloc(nr_cpus ? nr_cpus : 1, sizeof(uint64_t));
	o->total_cpu_bytes = calloc(nr_cpus ? nr_cpus : 1, sizeof(uint64_t));
	pthread_mutex_init(&o->rl.lock, NULL);
	o->rl.interval_usec = OUTAGE_LOG_INTERVAL_USEC;
	if (!o->cpus || !o->total_cpu_events || !o->total_cpu_bytes)
		return -ENOMEM;
	return 0;
}

void outage_done(struct outage *o)
{
	free(o->cpus);
	free(o->total_cpu_events);
	free(o->total_cpu_bytes);
	pthread_mutex_destroy(&o->rl.lock);
}

bool outage_may_write_locked(const struct outage *o)
{
	return !o->active || now_usec(CLOCK_MONOTONIC) >= o->next_retry_usec;
}

bool outage_failed_locked(struct outage *o, int r)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	bool begin = !o->active;

	if (begin) {
		o->active = true;
		o->pending = true;
		o->error = r;
		o->begin_realtime_usec = now_usec(CLOCK_REALTIME);
		o->begin_mono_usec = now;
		o->failed_writes = 0;
		o->sum = (struct outage_summary){ 0 };
		o->backoff_usec = RETRY_MIN_USEC;
		o->total_outages++;
	} else {
		o->backoff_usec = MIN(o->backoff_usec * 2, RETRY_MAX_USEC);
	}
	o->failed_writes++;
	o->next_retry_usec = now + o->backoff_usec;
	return begin;
}

void outage_drop_locked(struct outage *o, const struct archive_frame *f, unsigned nr_cpus)
{
	struct outage_cpu *c;

	if (f->cpu >= nr_cpus)
		return;
	c = &o->cpus[f->cpu];
	c->events += f->events + f->lost_events;
	c->bytes += f->raw_len;
	c->frames++;
	if (f->first_ts && (!c->first_ts || f->first_ts < c->first_ts))
		c->first_ts = f->first_ts;
	if (f->last_ts > c->last_ts)
		c->last_ts = f->last_ts;
	o->total_events += f->events + f->lost_events;
	o->total_bytes += f->raw_len;
	o->total_cpu_events[f->cpu] += f->events + f->lost_events;
	o->total_cpu_bytes[f->cpu] += f->raw_len;
	o->pending = true;
}

static int write_loss(const struct outage *o, struct archive_segment *s, uint32_t cpu,
		      const struct outage_cpu *c, uint64_t end_usec)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = strprintf(&text,
		      "write_error=%s\nwrite_outage_begin_usec=%" PRIu64
		      "\nwrite_outage_end_usec=%" PRIu64 "\nwrite_failed=%" PRIu64
		      "\nwrite_dropped_events=%" PRIu64 "\nwrite_dropped_bytes=%" PRIu64
		      "\nwrite_dropped_frames=%" PRIu64 "\nwrite_dropped_first_ts=%" PRIu64
		      "\nwrite_dropped_last_ts=%" PRIu64 "\n",
		      strerror(-o->error), o->begin_realtime_usec, end_usec, o->failed_writes,
		      c ? c->events : 0, c ? c->bytes : 0, c ? c->frames : 0, c ? c->first_ts : 0,
		      c ? c->last_ts : 0);
	if (r < 0)
		return r;
	return segment_writer_append(s->writer, SEGMENT_REC_STATS, cpu, text, strlen(text), 0,
				     NULL);
}

int outage_record_locked(struct outage *o, struct archive_segment *s, unsigned nr_cpus)
{
	uint64_t end = now_usec(CLOCK_REALTIME);
	unsigned cpus = 0;
	int r;

	if (!o->pending)
		return 0;
	/*
	 * All records or none count: a failure part-way leaves the loss
	 * pending, and the records already written are repeated later (a
	 * reader adds up distinct segments only).
	 */
	for (unsigned i = 0; i < nr_cpus; i++) {
		if (!o->cpus[i].frames)
			continue;
		r = write_loss(o, s, i, &o->cpus[i], end);
		if (r < 0)
			return r;
		cpus++;
	}
	if (!cpus) {
		r = write_loss(o, s, SEGMENT_NO_CPU, NULL, end);
		if (r < 0)
			return r;
	}
	for (unsigned i = 0; i < nr_cpus; i++) {
		struct outage_cpu *c = &o->cpus[i];

		if (i < s->nr_cpus)
			s->cpus[i].lost_events += c->events;
		if (c->frames)
			o->sum.cpus |= i < 64 ? UINT64_C(1) << i : 0;
		o->sum.events += c->events;
		o->sum.bytes += c->bytes;
		*c = (struct outage_cpu){ 0 };
	}
	o->pending = false;
	o->end_realtime_usec = end;
	return 1;
}

bool outage_end_locked(struct outage *o, struct outage_summary *ret)
{
	if (!o->active || o->pending)
		return false;
	*ret = o->sum;
	ret->error = o->error;
	ret->failed_writes = o->failed_writes;
	ret->usec = now_usec(CLOCK_MONOTONIC) - o->begin_mono_usec;
	o->active = false;
	return true;
}

void outage_log_begin(struct archive *a, int r)
{
	pthread_mutex_lock(&a->out.rl.lock);
	a->out.rl.begin_usec = 0;
	a->out.rl.suppressed = 0;
	pthread_mutex_unlock(&a->out.rl.lock);
	(void)log_ratelimit_errno(&a->out.rl, LOG_ERR, r,
				  "cannot write to the archive '%s'; dropping and counting events "
				  "until writing works again", a->dir);
}

void outage_log_retry(struct archive *a, int r)
{
	(void)log_ratelimit_errno(&a->out.rl, LOG_ERR, r,
				  "still cannot write to the archive '%s', dropping events", a->dir);
}

void outage_log_end(struct archive *a, const struct outage_summary *s)
{
	log_warn("writing to the archive '%s' works again after %.1f s (%s): %" PRIu64
		 " events (%" PRIu64 " bytes) on %d CPUs were dropped and are recorded as lost, "
		 "%" PRIu64 " writes failed",
		 a->dir, (double)s->usec / 1e6, strerror(-s->error), s->events, s->bytes, __builtin_popcountll(s->cpus),
		 s->failed_writes);
}
