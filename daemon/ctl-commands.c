/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control commands the daemon serves (ctl-commands.h): each request from
 * the control socket calls one module (status from the recorder, snapshot,
 * rotate, reset, reload) and builds the JSON reply of
 * doc/control-protocol.md.
 */
#include <assert.h>

#include "ctl-commands.h"
#include "config.h"
#include "hook.h"
#include "recorder.h"
#include "segment.h"
#include "util.h"

#define LIST_BUDGET (900u << 10)	/* stay well below the 1 MiB reply limit */
/* the recorder's -ESRCH */
#define READER_LOST "a CPU reader stopped, not every CPU is recorded (see status)"

static const char *state_name(enum recorder_state s)
{
	switch (s) {
	case RECORDER_STARTING:
		return "starting";
	case RECORDER_RECORDING:
		return "recording";
	default:
		return "stopping";
	}
}

static int reply_status(struct commands *c, struct ctl_request *req)
{
	const struct config *cfg = *c->cfg;
	struct recorder_status st;
	struct json_writer w;

	recorder_get_status(c->rec, &st);
	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	json_add_string(&w, "state", state_name(st.state));
	json_add_string(&w, "mode", cfg->record_mode == CONFIG_RECORD_FLIGHT ? "flight" : "stream");
	json_add_string(&w, "instance", st.instance ? st.instance : "");
	json_add_string(&w, "stack_mode", st.stackmap ? "stackmap" : "full");
	json_add_uint(&w, "generation", st.generation);
	if (st.stackmap) {
		json_object_open(&w, "map");
		json_add_uint(&w, "entries", st.map_entries);
		json_add_uint(&w, "capacity", st.map_capacity);
		json_add_uint(&w, "drops", st.map_drops);
		if (st.map_success_rate >= 0)
			json_add_double(&w, "success_rate", st.map_success_rate);
		else
			json_add_null(&w, "success_rate");
		json_add_uint(&w, "resets", st.resets);
		json_add_uint(&w, "reset_busy", st.map_reset_busy);
		json_add_uint(&w, "foreign_markers", st.foreign_markers);
		json_add_uint(&w, "realtime_refused", st.realtime_refused);
		json_object_close(&w);
	} else {
		json_add_null(&w, "map");
	}
	json_array_open(&w, "cpus");
	for (unsigned i = 0; i < st.nr_cpus; i++) {
		const struct recorder_cpu_status *cs = &st.cpus[i];

		json_object_open(&w, NULL);
		json_add_int(&w, "cpu", cs->cpu);
		json_add_uint(&w, "events", cs->events);
		json_add_uint(&w, "pages", cs->pages);
		json_add_uint(&w, "bytes", cs->stored_bytes);
		json_add_uint(&w, "raw_bytes", cs->raw_bytes);
		json_add_uint(&w, "lost_events", cs->lost_events);
		json_add_uint(&w, "dropped_events", cs->dropped_events);
		json_add_uint(&w, "dropped_bytes", cs->dropped_bytes);
		json_add_uint(&w, "read_errors", cs->read_errors);
		json_add_bool(&w, "reading", cs->alive);
		json_add_double(&w, "rate_events_per_s", cs->events_per_s);
		json_object_close(&w);
	}
	json_array_close(&w);
	if (st.segment_path) {
		json_object_open(&w, "segment");
		json_add_string(&w, "path", st.segment_path);
		json_add_uint(&w, "bytes", st.segment_bytes);
		json_add_double(&w, "age_s", (double)st.segment_age_usec / 1e6);
		json_object_close(&w);
	} else {
		json_add_null(&w, "segment");
	}
	json_object_open(&w, "archive");
	json_add_string(&w, "directory", st.directory ? st.directory : cfg->directory);
	json_add_uint(&w, "bytes", st.archive_bytes - st.segment_bytes);
	json_add_uint(&w, "max_bytes", st.archive_max_bytes);
	json_add_uint(&w, "segments", st.archive_segments);
	json_object_close(&w);
	json_add_uint(&w, "unresolved", st.unresolved);
	json_add_uint(&w, "dedup_stacks", st.dedup_stacks);
	json_add_uint(&w, "write_errors", st.write_errors);
	ctl_request_add_stats(req, &w);
	json_object_open(&w, "write_outage");
	json_add_bool(&w, "active", st.write_outage);
	if (st.write_outage) {
		json_add_string(&w, "error", strerror(-st.write_outage_error));
		json_add_uint(&w, "since_usec", st.write_outage_since_usec);
	}
	json_add_uint(&w, "outages", st.write_outages);
	json_add_uint(&w, "dropped_events", st.dropped_events);
	json_add_uint(&w, "dropped_bytes", st.dropped_bytes);
	json_object_close(&w);
	json_add_uint(&w, "quarantined", st.quarantined);
	json_add_uint(&w, "recovered", st.recovered);
	json_add_uint(&w, "unrecovered", st.unrecovered);
	json_add_uint(&w, "salvaged", st.salvaged);
	if (c->hook) {
		struct hook_stats hs;

		hook_get_stats(c->hook, &hs);
		json_object_open(&w, "hook");
		json_add_uint(&w, "running", hs.running);
		json_add_uint(&w, "queued", hs.queued);
		json_add_uint(&w, "started", hs.started);
		json_add_uint(&w, "deferred", hs.deferred);
		json_add_uint(&w, "dropped", hs.dropped);
		json_add_uint(&w, "failed", hs.failed);
		json_object_close(&w);
	}
	json_object_open(&w, "health");
	if (st.unhealthy)
		json_add_string(&w, "problem", st.unhealthy);
	else
		json_add_null(&w, "problem");
	json_add_uint(&w, "cpus_offline", st.cpus_offline);
	json_add_uint(&w, "cpus_added", st.cpus_added);
	json_add_uint(&w, "tracefs_repairs", st.tracefs_repairs);
	json_add_string(&w, "crash_buffer", st.crash_buffer ?: "off");
	json_add_uint(&w, "crash_captured", st.crash_captured);
	json_object_close(&w);
	json_object_close(&w);
	free(st.segment_path);
	return ctl_reply(req, &w);
}

static void reply_path(void *userdata, int r, const char *path)
{
	struct ctl_request *req = userdata;
	struct json_writer w;

	if (r == -ESRCH) {
		(void)ctl_reply_error(req, r, "%s failed: %s", ctl_request_command(req), READER_LOST);
		return;
	}
	if (r < 0) {
		(void)ctl_reply_error(req, r, "%s failed: %s", ctl_request_command(req), strerror(-r));
		return;
	}
	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	if (path)
		json_add_string(&w, "path", path);
	else
		json_add_null(&w, "path");
	json_object_close(&w);
	(void)ctl_reply(req, &w);
}

struct reset_reply {
	struct commands *c;
	struct ctl_request *req;
};

static void reply_reset(void *userdata, int r, const char *path)
{
	struct reset_reply *rr = userdata;
	struct recorder_status st;
	struct json_writer w;

	if (r < 0) {
		(void)ctl_reply_error(rr->req, r, "reset failed: %s",
				      r == -ESRCH ? READER_LOST : strerror(-r));
		free(rr);
		return;
	}
	recorder_get_status(rr->c->rec, &st);
	free(st.segment_path);
	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	json_add_uint(&w, "generation", st.generation);
	json_object_close(&w);
	(void)ctl_reply(rr->req, &w);
	free(rr);
}

struct list_ctx {
	struct json_writer *w;
	size_t budget;
	size_t skipped;
};

static int list_one(const char *path, uint64_t bytes, void *userdata)
{
	struct list_ctx *lc = userdata;
	struct segment_reader *r = NULL;
	const struct segment_index *idx = NULL;
	uint64_t first = UINT64_MAX, last = 0;

	if (lc->budget < 512) {
		lc->skipped++;
		return 0;
	}
	lc->budget -= MIN(lc->budget, strlen(path) + 128);
	if (segment_reader_open(path, &r) == 0)
		idx = segment_reader_index(r);
	for (uint32_t i = 0; idx && i < idx->nr_cpus; i++) {
		if (idx->cpus[i].first_ts)
			first = MIN(first, idx->cpus[i].first_ts);
		last = MAX(last, idx->cpus[i].last_ts);
	}
	json_object_open(lc->w, NULL);
	json_add_string(lc->w, "path", path);
	json_add_uint(lc->w, "bytes", bytes);
	if (idx && first != UINT64_MAX) {
		json_add_uint(lc->w, "first_ts", first);
		json_add_uint(lc->w, "last_ts", last);
	} else {
		json_add_null(lc->w, "first_ts");
		json_add_null(lc->w, "last_ts");
	}
	if (idx)
		json_add_bool(lc->w, "complete", !(idx->flags & SEGMENT_INDEX_F_TRUNCATED));
	else
		json_add_null(lc->w, "complete");
	json_object_close(lc->w);
	segment_reader_free(r);
	return 0;
}

static int reply_list(struct commands *c, struct ctl_request *req)
{
	struct json_writer w;
	struct list_ctx lc = { .w = &w, .budget = LIST_BUDGET };

	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	json_add_string(&w, "directory", (*c->cfg)->directory);
	json_array_open(&w, "segments");
	(void)recorder_foreach_segment(c->rec, list_one, &lc);
	json_array_close(&w);
	json_add_bool(&w, "truncated", lc.skipped > 0);
	json_object_close(&w);
	return ctl_reply(req, &w);
}

static int reply_reload(struct commands *c, struct ctl_request *req)
{
	_cleanup_free_ char *error = NULL, *restart = NULL;
	struct json_writer w;
	int r;

	r = c->reload(c->userdata, &error, &restart);
	if (r < 0)
		return ctl_reply_error(req, r, "%s", error ? error : strerror(-r));
	json_writer_init(&w, 0);
	ctl_reply_begin(&w, true);
	json_array_open(&w, "restart_needed");
	for (char *k = restart ? strtok(restart, " ,") : NULL; k; k = strtok(NULL, " ,"))
		json_add_string(&w, NULL, k);
	json_array_close(&w);
	json_object_close(&w);
	return ctl_reply(req, &w);
}

int commands_request(void *userdata, struct ctl_request *req, const char *command,
		     const struct ctl_args *args)
{
	struct commands *c = userdata;
	int r;

	assert(req);
	assert(command);
	assert(args);

	if (args->n > 0)
		return -EINVAL;
	if (streq(command, "status"))
		return reply_status(c, req);
	if (streq(command, "list"))
		return reply_list(c, req);
	if (streq(command, "reload"))
		return reply_reload(c, req);
	if (streq(command, "snapshot") || streq(command, "rotate")) {
		r = recorder_snapshot(c->rec, reply_path, req);
		if (r == -ESRCH)
			return ctl_reply_error(req, r, "%s: %s", command, READER_LOST);
		return r;
	}
	if (streq(command, "flush")) {
		r = recorder_flush(c->rec, reply_path, req);
		if (r == -ESRCH)
			return ctl_reply_error(req, r, "flush: %s", READER_LOST);
		if (r == -EOPNOTSUPP)
			return ctl_reply_error(req, r, "flush: refused in flight mode, it would empty "
					       "the buffer that holds the recording");
		return r;
	}
	if (streq(command, "reset")) {
		struct reset_reply *rr = calloc(1, sizeof(*rr));

		if (!rr)
			return -ENOMEM;
		rr->c = c;
		rr->req = req;
		r = recorder_reset(c->rec, reply_reset, rr);
		if (r < 0)
			free(rr);
		if (r == -EOPNOTSUPP && (*c->cfg)->record_mode == CONFIG_RECORD_FLIGHT)
			return ctl_reply_error(req, r, "reset: refused in flight mode, it would empty "
					       "the buffer that holds the recording");
		if (r == -EOPNOTSUPP)
			return ctl_reply_error(req, r, "reset: this recording stores full stacks, it has "
					       "no kernel stack map");
		if (r == -ESRCH)
			return ctl_reply_error(req, r, "reset: %s", READER_LOST);
		return r;
	}
	return -EOPNOTSUPP;
}
