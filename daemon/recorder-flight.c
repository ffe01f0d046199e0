/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The flight recorder ([trace] record = flight): the ring buffer is the
 * recording, read only when asked. A snapshot request, or the trigger
 * event that stopped the buffer (polled every TRIGGER_POLL_USEC), drains
 * every CPU into one segment and finishes it.
 */
#include "archive.h"
#include "config.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

/* Flight recorder: drain the buffer into the open segment and finish it. */
static int flight_save(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	_cleanup_free_ char *path = NULL;
	int r;

	recorder_drain_all(rec);
	r = archive_close(rec->archive, &path);
	if (done)
		done(userdata, r, path);
	return r;
}

/* Flight recorder: save what the buffer holds now into one segment. */
int flight_capture(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	int r;

	r = archive_start(rec->archive);
	if (r < 0)
		return r;
	(void)flight_save(rec, done, userdata);
	return 0;
}

/* The trigger event stopped the buffer: save it, as a snapshot would. */
void flight_trigger_save(struct recorder *rec)
{
	_cleanup_free_ char *note = NULL;
	int r;

	log_info("flight trigger '%s' fired, saving the buffer", rec->cfg->flight_trigger);
	r = archive_start(rec->archive);
	if (r >= 0 && strprintf(&note, "saved by the flight trigger %s",
				rec->cfg->flight_trigger) == 0)
		(void)archive_append_record(rec->archive, SEGMENT_REC_NOTE, SEGMENT_NO_CPU, note,
					    strlen(note));
	if (r >= 0)
		r = flight_save(rec, NULL, NULL);
	if (r < 0)
		log_errno(LOG_ERR, r, "cannot save the flight buffer, continuing");
}

int flight_on_trigger_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;
	int r;

	if (rec->state == RECORDER_RECORDING && tracing_flight_triggered(rec->tracing)) {
		flight_trigger_save(rec);
		/* arm it again */
		r = tracing_set_on(rec->tracing, true);
		if (r < 0)
			log_errno(LOG_ERR, r, "cannot restart tracing after the flight trigger");
	}
	return sd_event_source_set_time_relative(s, TRIGGER_POLL_USEC);
}
