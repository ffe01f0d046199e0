/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's lifecycle: new (binding to tracefs), start (in the order
 * tracefs and the archive need it), snapshot, flush, reset, stop, reload
 * and free, on top of the other files of the module, which never call
 * back up here: the readers recorder-readers.c, the loop's timers
 * recorder-timers.c, the segments' heads and tails recorder-segment.c,
 * the clock pairs recorder-clock.c, the health check recorder-health.c,
 * the flight recorder recorder-flight.c, status recorder-status.c, and at
 * the bottom the flush barrier they all wait on, recorder-flush.c.
 */
#include <assert.h>
#include <fcntl.h>
#include <sys/eventfd.h>

#include "archive.h"
#include "config.h"
#include "cpu-reader.h"
#include "generations.h"
#include "ksyms.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"

#define DEDUP_MAX_STACKS (1u << 20)

int recorder_new(const struct config *c, struct recorder **ret, char **ret_error)
{
	struct recorder *rec;
	int r;

	assert(c);
	assert(ret);

	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	rec->cfg = c;
	rec->notify_fd = -1;
	rec->health_rl = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	rec->state = RECORDER_STOPPED;
	r = tracing_open(NULL, c, &rec->tracing);
	if (r < 0) {
		(void)strprintf(ret_error, "cannot open tracefs: %s", strerror(-r));
		recorder_free(rec);
		return r;
	}
	r = tracing_validate(rec->tracing, ret_error);
	if (r < 0) {
		recorder_free(rec);
		return r;
	}
	*ret = rec;
	return 0;
}

/* The flush barrier offered to the stack-map generations (struct generations_ops). */
static void gens_flushed(struct recorder *rec, struct flush_op *op)
{
	op->gens_cont(op->gens);
}

static int gens_flush(void *userdata, const struct segment_generation *boundary,
		      void (*cont)(struct generations *g), struct generations *g)
{
	struct flush_op *op = recorder_flush_all(userdata, boundary, gens_flushed, NULL, NULL);

	if (!op)
		return -ENOMEM;
	op->gens_cont = cont;
	op->gens = g;
	return 0;
}

static void gens_rotate(void *userdata, const char *why)
{
	(void)recorder_rotate_now(userdata, why, NULL);
}

static const struct generations_ops gens_ops = {
	.flush = gens_flush,
	.rotate = gens_rotate,
};

/* Hand the markers the readers have read back to their owners. */
static void take_markers(struct recorder *rec)
{
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		struct page_marker m[16];
		size_t n;

		while ((n = cpu_reader_take_markers(rec->readers[i], m, ARRAY_SIZE(m))) > 0)
			for (size_t k = 0; k < n; k++)
				if (!recorder_clock_marker(rec, &m[k]) && rec->gens)
					generations_marker(rec->gens, &m[k]);
	}
}

static int on_notify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct recorder *rec = userdata;
	uint64_t v;

	(void)!read(fd, &v, sizeof(v));
	take_markers(rec);
	recorder_process_ops(rec);
	return 0;
}

/*
 * Whether this run records full stacks but the ring buffer it keeps may
 * hold stack ids: a run in stack-map mode left events behind (killed, or
 * stopped with keep_tracing) and the map is still on. Only the map as it
 * is now resolves those ids, and this run turns it off.
 */
static bool kept_ids(struct recorder *rec)
{
	_cleanup_free_ char *path = NULL, *v = NULL;

	if (recorder_flight(rec) || !tracing_has_stackmap(rec->tracing) ||
	    !tracing_buffer_has_data(rec->tracing))
		return false;
	if (strprintf(&path, "%s/options/stackmap", tracing_dir(rec->tracing)) < 0 ||
	    read_file(path, &v, NULL) < 0)
		return false;
	return v[0] == '1';
}

/*
 * The kernel stack map, where the config wants it and the kernel has it.
 * Returns 1 when it is used only for the events kept at start (kept_ids()):
 * the recorder lets it go once their segment is finished.
 */
static int setup_stackmap(struct recorder *rec)
{
	const struct config *c = rec->cfg;
	struct generations_params p = {
		.tracing = rec->tracing,
		.archive = rec->archive,
		.event = rec->event,
		.cfg = c,
		.ops = &gens_ops,
		.userdata = rec,
		.flight = recorder_flight(rec),
	};
	bool kept_only = false;
	int r;

	if (c->instance && *c->instance)
		return 0;
	if (c->stackmap == CONFIG_STACKMAP_OFF) {
		if (!kept_ids(rec))
			return 0;
		kept_only = true;
	}
	r = generations_new(&p, &rec->gens);
	if (r == -EOPNOTSUPP && c->stackmap == CONFIG_STACKMAP_AUTO) {
		log_info("this kernel has no stack map: recording full stacks");
		return 0;
	}
	if (r < 0 && kept_only) {
		log_errno(LOG_WARNING, r, "cannot snapshot the kernel stack map for the stack ids "
			  "of the events kept at start: they stay unresolved, continuing");
		return 0;
	}
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot use the kernel stack map");
	if (kept_only) {
		log_info("the events kept at start may carry stack ids: their segment stores the "
			 "kernel stack map's stacks, then full stacks are recorded");
		return 1;
	}
	log_info("using the kernel stack map: stacks are stored once per segment");
	return 0;
}

/*
 * The events kept at start are read: turn the map off, read what got an
 * id until then, finish their segment with the map's tables, let it go.
 */
static int leave_stackmap(struct recorder *rec)
{
	int r;

	r = generations_leave(rec->gens);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot turn the kernel stack map off before recording "
			  "full stacks; ids given since the last snapshot stay unresolved, continuing");
	/* a segment of the kept events' clock (keep_buffered() finished one if it is to change) */
	if (!archive_is_open(rec->archive)) {
		r = archive_start(rec->archive);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot start a segment in '%s'",
					 rec->cfg->directory);
	}
	recorder_drain_all(rec);
	if (archive_is_open(rec->archive)) {
		r = archive_rotate(rec->archive, true, NULL);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot finish the segment of drained events");
	}
	rec->gens = generations_free(rec->gens);
	return 0;
}

static struct rotation_policy policy_of(const struct config *c)
{
	struct rotation_policy p = {
		.segment_size = c->segment_size,
		.segment_age_usec = c->segment_age_usec,
		.max_size = c->max_size,
		.max_segments = c->max_segments,
		.keep_free_percent = c->keep_free_percent,
	};

	return p;
}

/* Close the readers and put tracing back as it was. */
static void release_tracing(struct recorder *rec)
{
	/* an instance cannot be removed while its trace_pipe_raw files are open */
	for (unsigned i = 0; i < rec->nr_readers; i++)
		rec->readers[i] = cpu_reader_free(rec->readers[i]);
	rec->nr_readers = 0;
	generations_restore(rec->gens);
	tracing_restore(rec->tracing);
	rec->state = RECORDER_STOPPED;
}

/* What the segments' heads need from the kernel, read once at start. Logs. */
static int load_kernel_facts(struct recorder *rec)
{
	int r;

	recorder_read_host_identity(rec);
	r = tracing_collect_files(rec->tracing, recorder_collect_file, rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot read the event formats");
	r = recorder_setup_layout(rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot read the ring-buffer page format");
	r = recorder_add_stack_ref_format(rec);
	if (r >= 0)
		r = task_lines_new(rec->files, rec->nr_files, &rec->task_lines);
	if (r < 0)
		return log_errno(LOG_ERR, r, "out of memory");
	r = ksyms_load("/proc/kallsyms", &rec->ksyms);
	if (r < 0 || !ksyms_usable(rec->ksyms)) {
		log_warn("kernel addresses are hidden (kptr_restrict) or /proc/kallsyms is unreadable: "
			 "stacks are stored without symbols, continuing");
		rec->ksyms = ksyms_free(rec->ksyms);
	}
	rec->dedup = stackdedup_new(DEDUP_MAX_STACKS);
	rec->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!rec->dedup || rec->notify_fd < 0)
		return log_errno(LOG_ERR, -ENOMEM, "out of memory");
	return 0;
}

/* Boot capture may have filled the buffer: keep it before anything can clear it. Logs. */
static int keep_buffered(struct recorder *rec)
{
	_cleanup_free_ char *clock = NULL;
	int r;

	recorder_drain_all(rec);
	log_info("kept the events the ring buffer held at start");
	clock = tracing_clock(rec->tracing);
	if (rec->cfg->clock && *rec->cfg->clock && clock && !streq(clock, rec->cfg->clock)) {
		/*
		 * Timestamps of one segment share a clock, and its head names
		 * it: the next segment opens once the configured clock is set.
		 */
		r = archive_rotate(rec->archive, true, NULL);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot finish the segment of drained events");
	}
	return 0;
}

/* The configured sub-buffer size; a default the kernel refuses leaves its own. Logs. */
static int setup_subbuf(struct recorder *rec)
{
	int r = tracing_setup_subbuf(rec->tracing);

	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot set the ring buffer's sub-buffer size");
	if (tracing_subbuf_refused(rec->tracing))
		log_errno(LOG_WARNING, -tracing_subbuf_refused(rec->tracing),
			  "the kernel refused the default sub-buffer size of %" PRIu64
			  " KiB; recording with its own", rec->cfg->subbuf_size_kb);
	return 0;
}

/*
 * After a boot capture was saved: the configured sub-buffer size, with a
 * segment of its own (a segment's head names its page size) and readers
 * that read pages of that size. Logs.
 */
static int switch_subbuf(struct recorder *rec)
{
	int r;

	if (!tracing_subbuf_pending(rec->tracing))
		return 0;
	if (archive_is_open(rec->archive)) {
		r = archive_rotate(rec->archive, true, NULL);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot finish the segment of drained events");
	}
	for (unsigned i = 0; i < rec->nr_readers; i++)
		rec->readers[i] = cpu_reader_free(rec->readers[i]);
	rec->nr_readers = 0;
	r = setup_subbuf(rec);
	if (r < 0)
		return r;
	r = recorder_setup_layout(rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot read the ring-buffer page format");
	r = recorder_open_online_readers(rec);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot open the readers");
	return 0;
}

int recorder_start(struct recorder *rec, sd_event *e,
		   void (*on_segment)(void *userdata, const char *path), void *userdata)
{
	struct archive_params ap;
	bool map_for_kept;
	int r;

	assert(rec);

	ap = (struct archive_params){
		.directory = rec->cfg->directory,
		.compression_level = rec->cfg->compression_level,
		.sync = rec->cfg->sync,
		.policy = policy_of(rec->cfg),
		.hooks = &recorder_archive_hooks,
		.userdata = rec,
	};
	rec->state = RECORDER_STARTING;
	rec->event = sd_event_ref(e);
	rec->on_segment = on_segment;
	rec->userdata = userdata;
	/*
	 * The sub-buffer size first, so that the page layout and the readers
	 * have it; a buffer holding a boot capture is kept at its size until
	 * its events are saved (switch_subbuf()).
	 */
	if (recorder_flight(rec) || !tracing_buffer_has_data(rec->tracing)) {
		r = setup_subbuf(rec);
		if (r < 0)
			goto fail;
	}
	r = load_kernel_facts(rec);
	if (r < 0)
		goto fail;

	r = tracing_nr_cpus(rec->tracing);
	ap.nr_cpus = r > 0 ? (unsigned)r : 1;
	r = archive_open(&ap, &rec->archive);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot open the archive directory '%s'", rec->cfg->directory);
		goto fail;
	}
	/* the previous boot's black box, before this boot records anything */
	r = recorder_crash_start(rec);
	if (r < 0)
		goto fail;
	r = recorder_open_readers(rec);
	if (r < 0)
		goto fail;
	/* before the first segment opens, so that its head says which stacks it holds */
	r = setup_stackmap(rec);
	if (r < 0)
		goto fail_tracing;
	map_for_kept = r > 0;
	/* boot capture may have filled the buffer: keep it before the clock or size clears it */
	if (!recorder_flight(rec) && tracing_buffer_has_data(rec->tracing)) {
		r = archive_start(rec->archive);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot start a segment in '%s'", rec->cfg->directory);
			goto fail;
		}
		r = keep_buffered(rec);
		if (r < 0)
			goto fail;
		if (map_for_kept) {
			r = leave_stackmap(rec);
			if (r < 0)
				goto fail;
		}
		r = switch_subbuf(rec);
		if (r < 0)
			goto fail;
	}
	/* the buffer was emptied in between: nothing kept, no id to resolve */
	if (map_for_kept)
		rec->gens = generations_free(rec->gens);
	r = tracing_setup_buffer(rec->tracing);
	if (r < 0)
		goto fail_tracing;
	/* opened after the clock is set: its head names the clock of its timestamps */
	if (!recorder_flight(rec) && !archive_is_open(rec->archive)) {
		r = archive_start(rec->archive);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot start a segment in '%s'", rec->cfg->directory);
			goto fail;
		}
	}
	/*
	 * Kernel drop counters are reported per segment, from here on: taken
	 * before the events are enabled (and after the buffer set-up, which
	 * may reset them), since the buffer can fill and drop events before
	 * the readers run.
	 */
	for (unsigned i = 0; i < rec->nr_readers; i++) {
		int cpu = cpu_reader_cpu(rec->readers[i]);

		(void)tracing_cpu_stats(rec->tracing, cpu, &rec->kstats_base[cpu]);
	}
	r = tracing_setup_events(rec->tracing);
	if (r < 0)
		goto fail_tracing;
	/* the flight recorder reads only when asked to: the buffer is the recording */
	for (unsigned i = 0; i < rec->nr_readers && !recorder_flight(rec); i++) {
		r = cpu_reader_start(rec->readers[i]);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot start the reader of CPU %d",
				  cpu_reader_cpu(rec->readers[i]));
			goto fail_tracing;
		}
	}
	recorder_exclude_self(rec);
	r = sd_event_add_io(rec->event, &rec->notify_src, rec->notify_fd, EPOLLIN, on_notify, rec);
	if (r >= 0)
		r = recorder_add_timers(rec);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot set up the event loop");
		goto fail_tracing;
	}
	rec->rate_usec = now_usec(CLOCK_MONOTONIC);
	rec->state = RECORDER_RECORDING;
	log_info("%s %u CPUs of instance '%s' into '%s'",
		 recorder_flight(rec) ? "flight recorder on" : "recording", rec->nr_readers,
		 tracing_instance_name(rec->tracing), rec->cfg->directory);
	return 0;

fail_tracing:
	log_errno(LOG_ERR, r, "cannot configure tracing");
fail:
	/* nothing recorded yet is kept: put tracefs back as it was, instance included */
	release_tracing(rec);
	return r;
}

void recorder_stop(struct recorder *rec)
{
	int r;

	assert(rec);

	if (rec->state != RECORDER_RECORDING && rec->state != RECORDER_STARTING)
		return;
	rec->state = RECORDER_STOPPING;
	/* a trigger that fired since the last poll is saved too (before tracing_on means "stopped by us") */
	if (recorder_flight(rec) && tracing_flight_triggered(rec->tracing))
		flight_trigger_save(rec);
	/*
	 * Stop the producers first, or the final flush races new events and
	 * leaves a tail in the buffer; with keep_tracing, the next start drains it.
	 */
	/* the last segment's closing CLOCK pair: its marker is in the final flush */
	if (archive_is_open(rec->archive))
		recorder_clock_sample(rec);
	if (!rec->cfg->keep_tracing)
		(void)tracing_stop(rec->tracing);
	/* readers flush what the buffer holds, hand over their last frame and exit */
	for (unsigned i = 0; i < rec->nr_readers; i++)
		cpu_reader_stop(rec->readers[i]);
	take_markers(rec);
	recorder_cancel_ops(rec);
	if (rec->gens)
		generations_stop(rec->gens, rec->cfg->keep_tracing);
	recorder_crash_stop(rec);
	r = rec->archive && archive_is_open(rec->archive) ?
		archive_rotate(rec->archive, true, NULL) : 0;
	if (r < 0)
		log_errno(LOG_ERR, r, "cannot finish the last segment; it is recovered at the next start");
	release_tracing(rec);
}

static void finish_after_flush(struct recorder *rec, struct flush_op *op)
{
	_cleanup_free_ char *path = NULL;
	int r;

	/* what the other CPUs recorded is finished all the same */
	r = archive_rotate(rec->archive, false, &path);
	recorder_arm_age_timer(rec);
	if (r >= 0 && recorder_readers_lost(rec))
		r = -ESRCH;
	if (op->done)
		op->done(op->userdata, r, path);
}

int recorder_snapshot(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	assert(rec);
	if (rec->state != RECORDER_RECORDING)
		return -EAGAIN;
	if (recorder_readers_lost(rec))
		return -ESRCH;
	if (recorder_flight(rec))
		return flight_capture(rec, done, userdata);
	if (!recorder_flush_all(rec, NULL, finish_after_flush, done, userdata))
		return -ENOMEM;
	return 0;
}

static void done_after_flush(struct recorder *rec, struct flush_op *op)
{
	if (op->done)
		op->done(op->userdata, recorder_readers_lost(rec) ? -ESRCH : 0, NULL);
}

int recorder_flush(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	assert(rec);
	if (rec->state != RECORDER_RECORDING)
		return -EAGAIN;
	if (recorder_readers_lost(rec))
		return -ESRCH;
	if (recorder_flight(rec))
		return -EOPNOTSUPP;
	if (!recorder_flush_all(rec, NULL, done_after_flush, done, userdata))
		return -ENOMEM;
	return 0;
}

struct reset_wait {
	struct recorder *rec;
	recorder_done_fn done;
	void *userdata;
};

/* A reset whose barriers went on without a reader that ended says so to whoever waits. */
static void reset_done(void *userdata, int r, const char *path)
{
	struct reset_wait *w = userdata;

	if (r >= 0 && recorder_readers_lost(w->rec))
		r = -ESRCH;
	w->done(w->userdata, r, path);
	free(w);
}

int recorder_reset(struct recorder *rec, recorder_done_fn done, void *userdata)
{
	struct reset_wait *w;
	int r;

	assert(rec);

	if (!rec->gens)
		return -EOPNOTSUPP;
	if (rec->state != RECORDER_RECORDING)
		return -EAGAIN;
	if (recorder_readers_lost(rec))
		return -ESRCH;
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct reset_wait){ .rec = rec, .done = done, .userdata = userdata };
	r = generations_reset(rec->gens, reset_done, w);
	if (r < 0)
		free(w);
	return r;
}

int recorder_reload(struct recorder *rec, const struct config *c)
{
	struct rotation_policy p = policy_of(c);

	assert(rec);
	assert(c);

	rec->cfg = c;
	archive_set_policy(rec->archive, &p, c->sync, c->compression_level);
	if (rec->gens)
		generations_set_config(rec->gens, c);
	if (rec->flush_timer)
		(void)sd_event_source_set_time_relative(rec->flush_timer, c->snapshot_interval_usec);
	if (rec->archive) {
		recorder_arm_age_timer(rec);
		archive_enforce_retention(rec->archive);
	}
	return 0;
}

struct recorder *recorder_free(struct recorder *rec)
{
	if (!rec)
		return NULL;
	recorder_stop(rec);
	for (unsigned i = 0; i < rec->nr_readers; i++)
		cpu_reader_free(rec->readers[i]);
	free(rec->readers);
	free(rec->formats);
	sd_event_source_disable_unref(rec->notify_src);
	sd_event_source_disable_unref(rec->rotate_src);
	sd_event_source_disable_unref(rec->age_timer);
	sd_event_source_disable_unref(rec->flush_timer);
	sd_event_source_disable_unref(rec->retention_timer);
	sd_event_source_disable_unref(rec->trigger_timer);
	sd_event_source_disable_unref(rec->health_timer);
	recorder_crash_free(rec);
	pthread_mutex_destroy(&rec->health_rl.lock);
	sd_event_unref(rec->event);
	generations_free(rec->gens);
	archive_free(rec->archive);
	stackdedup_free(rec->dedup);
	ksyms_free(rec->ksyms);
	tracing_free(rec->tracing);
	recorder_files_free(rec);
	free(rec->kstats_base);
	free(rec->rate_events);
	free(rec->cpu_status);
	free(rec->reader_lost);
	free(rec->boot_id);
	if (rec->notify_fd >= 0)
		close(rec->notify_fd);
	free(rec);
	return NULL;
}
