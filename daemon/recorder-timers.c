/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's sources on the main loop besides the flush barrier's:
 * rotation when the archive asks for it (the segment is full) or the
 * segment is old enough, retention on a timer (space is freed even when
 * no segment is finished), the periodic flush that bounds what a power
 * cut can lose and drives the clock samples and the stack map's tick, and
 * the timers of the health check and the flight trigger.
 */
#include "archive.h"
#include "config.h"
#include "generations.h"
#include "log.h"
#include "recorder-internal.h"
#include "util.h"

#define RETENTION_INTERVAL_USEC USEC_PER_SEC

int recorder_rotate_now(struct recorder *rec, const char *why, char **ret_path)
{
	static struct log_ratelimit rl = LOG_RATELIMIT_INIT;
	int r = archive_rotate(rec->archive, false, ret_path);

	if (r < 0)
		return log_ratelimit_errno(&rl, LOG_ERR, r,
					   "cannot finish the segment (%s), continuing in it", why);
	return 0;
}

static int on_rotate_request(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct recorder *rec = userdata;

	/* a reset in progress ends with a rotation of its own */
	if (archive_take_rotate_request(rec->archive) && rec->state == RECORDER_RECORDING &&
	    !(rec->gens && generations_busy(rec->gens)))
		(void)recorder_rotate_now(rec, "size or age", NULL);
	return 0;
}

void recorder_arm_age_timer(struct recorder *rec)
{
	uint64_t left = archive_age_left(rec->archive);

	if (left == UINT64_MAX) {
		(void)sd_event_source_set_enabled(rec->age_timer, SD_EVENT_OFF);
		return;
	}
	(void)sd_event_source_set_time_relative(rec->age_timer, MAX(left, USEC_PER_SEC / 10));
	(void)sd_event_source_set_enabled(rec->age_timer, SD_EVENT_ONESHOT);
}

static int on_age_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;

	if (rec->state == RECORDER_RECORDING && archive_rotation_due(rec->archive) &&
	    !(rec->gens && generations_busy(rec->gens)))
		(void)recorder_rotate_now(rec, "age", NULL);
	recorder_arm_age_timer(rec);
	return 0;
}

/*
 * Retention on a timer too: space is freed even when no segment is
 * finished (a full disk); and what a write error left to do is retried.
 */
static int on_retention_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;

	if (rec->state == RECORDER_RECORDING && !(rec->gens && generations_busy(rec->gens)))
		archive_tick(rec->archive);
	return sd_event_source_set_time_relative(s, RETENTION_INTERVAL_USEC);
}

static void flushed_periodic(struct recorder *rec, struct flush_op *op)
{
}

void recorder_flush_soon(struct recorder *rec)
{
	uint64_t due;

	if (!rec->flush_timer)
		return;
	if (sd_event_source_get_time(rec->flush_timer, &due) < 0 ||
	    due > now_usec(CLOCK_MONOTONIC) + FLUSH_SOON_USEC)
		(void)sd_event_source_set_time_relative(rec->flush_timer, FLUSH_SOON_USEC);
}

static int on_flush_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;

	/*
	 * Barriers complete when a reader reports; with every reader's thread
	 * ended none does: finish what waits for nobody now, so nothing piles up.
	 */
	recorder_process_ops(rec);
	/* bound what a power cut can lose: partial pages go to the archive too */
	if (rec->state == RECORDER_RECORDING && !recorder_flight(rec)) {
		(void)recorder_flush_all(rec, NULL, flushed_periodic, NULL, NULL);
		recorder_clock_tick(rec);
		if (rec->gens)
			generations_tick(rec->gens);
	}
	(void)sd_event_source_set_time_relative(s, rec->cfg->snapshot_interval_usec);
	return 0;
}

int recorder_add_timers(struct recorder *rec)
{
	int r;

	r = sd_event_add_io(rec->event, &rec->rotate_src, archive_rotate_fd(rec->archive), EPOLLIN,
			    on_rotate_request, rec);
	if (r < 0)
		return r;
	r = sd_event_add_time_relative(rec->event, &rec->age_timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0,
				       on_age_timer, rec);
	if (r < 0)
		return r;
	recorder_arm_age_timer(rec);
	/* a segment open now has just opened: its clock marker is read soon */
	r = sd_event_add_time_relative(rec->event, &rec->flush_timer, CLOCK_MONOTONIC,
				       archive_is_open(rec->archive) ? FLUSH_SOON_USEC :
				       rec->cfg->snapshot_interval_usec, 0, on_flush_timer, rec);
	if (r < 0)
		return r;
	r = sd_event_source_set_enabled(rec->flush_timer, SD_EVENT_ON);
	if (r < 0)
		return r;
	r = sd_event_add_time_relative(rec->event, &rec->retention_timer, CLOCK_MONOTONIC,
				       RETENTION_INTERVAL_USEC, 0, on_retention_timer, rec);
	if (r >= 0)
		r = sd_event_source_set_enabled(rec->retention_timer, SD_EVENT_ON);
	if (r < 0)
		return r;
	r = sd_event_add_time_relative(rec->event, &rec->health_timer, CLOCK_MONOTONIC,
				       HEALTH_CHECK_USEC, 0, recorder_on_health_timer, rec);
	if (r >= 0)
		r = sd_event_source_set_enabled(rec->health_timer, SD_EVENT_ON);
	if (r < 0 || !recorder_flight(rec) || !rec->cfg->flight_trigger)
		return r;
	r = sd_event_add_time_relative(rec->event, &rec->trigger_timer, CLOCK_MONOTONIC,
				       TRIGGER_POLL_USEC, 0, flight_on_trigger_timer, rec);
	if (r < 0)
		return r;
	return sd_event_source_set_enabled(rec->trigger_timer, SD_EVENT_ON);
}
