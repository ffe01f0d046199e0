/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's side of the crash buffer (crash-buffer.h): at start,
 * before anything new is recorded, the previous boot's black box becomes
 * a segment of its own (its boot id, marked as a crash capture, with how
 * the boot ended, its clock pairs, kernel symbols placed with the text
 * delta, its pages as the kernel kept them); then the buffer is armed for
 * this boot, a timer writes its clock markers, and a clean stop says so
 * in it. The META and NOTE fields are in doc/segment-format.md.
 */
#include <dirent.h>
#include <inttypes.h>
#include <sys/statvfs.h>

#include "archive.h"
#include "config.h"
#include "cpu-reader.h"
#include "crash-buffer.h"
#include "ksyms.h"
#include "page-walk.h"
#include "log.h"
#include "recorder-internal.h"
#include "segment.h"
#include "segment-meta.h"
#include "tracing.h"
#include "util.h"

static bool kernel_changed(const struct recorder *rec, const struct crash_previous *p)
{
	/* the version is in the boot marker only, which overwriting may have taken */
	return !p->kernel_release || !streq(p->kernel_release, rec->uts.release) ||
	       (p->kernel_version && !streq(p->kernel_version, rec->uts.version));
}

int recorder_crash_meta(struct recorder *rec, struct buf *m)
{
	const struct crash_previous *p = rec->capture;
	uint64_t first = p->nr_pairs ? p->pairs[0].realtime / 1000 : 0;
	uint64_t last = 0;

	uint64_t stop = 0;

	/* wall-clock times of the last line and of the clean stop, by the pairs */
	if (p->nr_pairs) {
		last = wallclock_to_realtime(p->pairs, p->nr_pairs, p->last_ts) / 1000;
		if (p->stop_ts)
			stop = wallclock_to_realtime(p->pairs, p->nr_pairs, p->stop_ts) / 1000;
	}
	int r;

	if (p->nr_overlap) {
		r = buf_printf(m, "capture_overlap=");
		for (unsigned cpu = 0, n = 0; r == 0 && cpu < p->nr_overlap; cpu++)
			if (p->overlap[cpu])
				r = buf_printf(m, "%s%u:%" PRIu64, n++ ? "," : "", cpu,
					       p->overlap[cpu]);
		if (r == 0)
			r = buf_printf(m, "\n");
		if (r < 0)
			return r;
	}
	return buf_printf(m,
			  "capture=crash\ncapture_boot_end=%s\ncapture_first_usec=%" PRIu64
			  "\ncapture_last_usec=%" PRIu64 "\ncapture_stop_usec=%" PRIu64
			  "\ncapture_last_ts=%" PRIu64
			  "\ncapture_stop_ts=%" PRIu64 "\ncapture_text_delta=%" PRId64
			  "\ncapture_kernel_changed=%s\ncapture_current_boot_id=%s\n",
			  p->markers_lost ? "unknown" : p->clean ? "clean" : "unclean", first, last,
			  stop, p->last_ts, p->stop_ts,
			  p->text_delta, kernel_changed(rec, p) ? "yes" : "no",
			  rec->boot_id ?: "");
}

int recorder_crash_segment_begin(struct recorder *rec, struct archive_segment *seg)
{
	const struct crash_previous *p = rec->capture;
	_cleanup_free_ char *note = NULL;
	int r;

	for (size_t i = 0; i < p->nr_pairs; i++) {
		uint8_t b[WALLCLOCK_PAIR_SIZE];

		wallclock_pair_encode(&p->pairs[i], b);
		r = segment_writer_append(seg->writer, SEGMENT_REC_CLOCK, SEGMENT_NO_CPU, b,
					  sizeof(b), 0, NULL);
		if (r < 0)
			return r;
	}
	r = strprintf(&note, "crash capture: the last %s of boot %s, saved from the crash buffer "
		      "at the next boot (%s); %s",
		      p->nr_pairs ? "seconds" : "events", p->boot_id, rec->boot_id ?: "unknown",
		      p->markers_lost && p->nr_pairs ?
				 "the events overwrote every marker: how the boot ended is not "
				 "known, and the clock pairs are those of that boot's recording" :
		      p->markers_lost ? "the events overwrote every marker: how the boot ended "
					"and the wall-clock times are not known" :
		      p->clean ? "the daemon had stopped cleanly" :
				 "the boot ended without a clean stop of the daemon");
	if (r < 0)
		return r;
	r = segment_writer_append(seg->writer, SEGMENT_REC_NOTE, SEGMENT_NO_CPU, note,
				  strlen(note), 0, NULL);
	if (r < 0 || !kernel_changed(rec, p))
		return r;
	free(note);
	note = NULL;
	if (strprintf(&note, "the kernel changed since that boot (%s %s, now %s %s): event "
		      "formats and symbols are this kernel's and may not fit its events",
		      p->kernel_release ?: "?", p->kernel_version ?: "?", rec->uts.release,
		      rec->uts.version) < 0)
		return -ENOMEM;
	return segment_writer_append(seg->writer, SEGMENT_REC_NOTE, SEGMENT_NO_CPU, note,
				     strlen(note), 0, NULL);
}

int recorder_crash_segment_end(struct recorder *rec, struct archive_segment *seg)
{
	static const char *const event_functions[] = { "tracing_mark_write",
						       "tracing_mark_raw_write" };
	const struct crash_previous *p = rec->capture;
	struct buf syms = { 0 };
	_cleanup_free_ uint64_t *addrs = NULL;
	size_t n = seg->addrs.len / 8;
	int r;

	if (!rec->ksyms || kernel_changed(rec, p))
		return 0;
	addrs = calloc(n + ARRAY_SIZE(event_functions), sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	memcpy(addrs, seg->addrs.data, n * sizeof(*addrs));
	/* the previous boot's addresses of the functions that print markers */
	for (size_t i = 0; i < ARRAY_SIZE(event_functions); i++) {
		uint64_t a = ksyms_address_of(rec->ksyms, event_functions[i]);

		if (a)
			addrs[n++] = a - (uint64_t)p->text_delta;
	}
	/* the stacks hold the previous boot's addresses: this kernel's are text_delta higher */
	r = ksyms_subset_moved(rec->ksyms, addrs, n, p->text_delta, &syms);
	if (r >= 0 && syms.len)
		r = segment_writer_append_file(seg->writer, "kallsyms", syms.data, syms.len,
					       rec->cfg->compression_level);
	buf_done(&syms);
	return r < 0 ? r : 0;
}

/*
 * Read every CPU of the crash buffer into side's segment, with the
 * instance's page size (a copy of the layout: the recording's readers may
 * be running on rec->layout).
 */
static int drain_crash_buffer(struct recorder *rec, struct archive *side)
{
	struct page_layout layout = rec->layout;
	int n = tracing_nr_cpus(rec->tracing);

	layout.page_size = rec->capture->page_size;
	for (int cpu = 0; cpu < n; cpu++) {
		struct cpu_reader_params p =
			recorder_reader_params(rec, crash_buffer_instance(rec->crash), cpu);
		struct cpu_reader *reader = NULL;
		int r;

		p.archive = side;
		p.layout = &layout;
		p.notify_fd = -1;	/* drained here, no thread to hear from */
		/* an offline CPU kept its pages too, but has no trace_pipe_raw to read now */
		if (!tracing_cpu_online(rec->tracing, cpu))
			continue;
		r = cpu_reader_new(&p, &reader);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot open CPU %d of the crash buffer", cpu);
		r = cpu_reader_drain(reader);
		cpu_reader_free(reader);
		if (r < 0)
			return log_errno(LOG_ERR, r, "cannot read CPU %d of the crash buffer", cpu);
	}
	return 0;
}

/*
 * One finished segment: if the previous boot's recording wrote it (its
 * boot id and clock, not a capture), raise each CPU's overlap to its last
 * event. 0, or -ENOMEM.
 */
static int raise_overlap(struct crash_previous *prev, uint32_t cpu, uint64_t ts)
{
	if (cpu >= 4096 || !ts)
		return 0;
	if (cpu >= prev->nr_overlap) {
		if (GREEDY_REALLOC0(prev->overlap, prev->cap_overlap, (size_t)cpu + 1) < 0)
			return -ENOMEM;
		prev->nr_overlap = cpu + 1;
	}
	prev->overlap[cpu] = MAX(prev->overlap[cpu], ts);
	return 0;
}

/*
 * Every marker overwritten: the previous boot's recording dates the
 * capture, with its CLOCK records (the same boot and trace clock).
 */
static int borrow_pairs(struct crash_previous *prev, const struct segment_record *rec)
{
	int k;

	if (!prev->markers_lost || rec->type != SEGMENT_REC_CLOCK)
		return 0;
	k = wallclock_pairs_decode(rec->data, rec->len, &prev->pairs, &prev->nr_pairs,
				   &prev->cap_pairs);
	return k == -ENOMEM ? k : 0;
}

/*
 * A segment recovered after the crash has no per-CPU lines in its index:
 * walk its pages for each CPU's last event.
 */
static int overlap_from_pages(struct segment_reader *rd, const struct segment_meta *meta,
			      struct crash_previous *prev)
{
	struct page_format f;
	struct segment_record rec;
	int k;

	/* written by this daemon on this machine: what is guessed is right */
	(void)segment_meta_page_format(meta, &f);
	segment_reader_skip_pages(rd, false);
	while ((k = segment_reader_next(rd, &rec)) > 0) {
		struct page_walk w;
		size_t off = 0;
		uint64_t last = 0;

		k = borrow_pairs(prev, &rec);
		if (k < 0)
			return k;
		if (rec.type != SEGMENT_REC_PAGES)
			continue;
		while (page_walk_payload_next(&w, &f, rec.data, rec.len, &off) > 0) {
			struct page_entry e;

			while (page_walk_next(&w, &e) > 0)
				if (e.kind == PAGE_ENTRY_DATA)
					last = e.ts;
		}
		k = raise_overlap(prev, rec.cpu, last);
		if (k < 0)
			return k;
	}
	return 0;
}

static int overlap_of(const char *path, const char *clock, struct crash_previous *prev)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct segment_meta meta = {};
	const struct segment_index *idx;
	struct segment_record r;
	const char *b, *c;
	int k = 0;

	if (segment_reader_open(path, &rd) < 0)
		return 0;
	segment_reader_skip_pages(rd, true);
	if (segment_reader_next(rd, &r) <= 0 || r.type != SEGMENT_REC_META ||
	    segment_meta_parse(&meta, r.data, r.len) < 0)
		goto out;
	b = segment_meta_get(&meta, "boot_id");
	c = segment_meta_get(&meta, "clock");
	idx = segment_reader_index(rd);
	if (!b || !streq(b, prev->boot_id) || !c || !clock || !streq(c, clock) || !idx ||
	    segment_meta_get(&meta, "capture"))
		goto out;
	if (!idx->nr_cpus || (idx->flags & SEGMENT_INDEX_F_TRUNCATED)) {
		k = overlap_from_pages(rd, &meta, prev);
		goto out;
	}
	for (uint32_t i = 0; i < idx->nr_cpus && k == 0; i++)
		k = raise_overlap(prev, idx->cpus[i].cpu, idx->cpus[i].last_ts);
	while (k == 0 && prev->markers_lost && segment_reader_next(rd, &r) > 0)
		k = borrow_pairs(prev, &r);
out:
	segment_meta_done(&meta);
	return k;
}

/*
 * What the previous boot's recording already wrote to the archive: per
 * CPU, its last event. The black box's probes run before the recording's
 * (its events are enabled first), so the kernel gives an event's copy in
 * the crash buffer an earlier time than the recorded one: every capture
 * entry of a CPU at or before that time is in the archive already.
 */
static int find_overlap(struct recorder *rec, const char *clock, struct crash_previous *prev)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	d = opendir(rec->cfg->directory);
	if (!d)
		return 0;
	while (r == 0 && (de = readdir(d))) {
		_cleanup_free_ char *path = NULL;

		if (!segment_name_is_finished(de->d_name))
			continue;
		if (strprintf(&path, "%s/%s", rec->cfg->directory, de->d_name) < 0)
			r = -ENOMEM;
		else
			r = overlap_of(path, clock, prev);
	}
	closedir(d);
	return r;
}

/*
 * The crash instance's page size: the kernel made it at boot with its own,
 * whatever [trace] subbuf_size gives the recording.
 */
static unsigned crash_page_size(struct recorder *rec)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	unsigned long kb = 0;

	if (strprintf(&path, "%s/instances/%s/buffer_subbuf_size_kb", tracing_dir(rec->tracing),
		      CONFIG_CRASH_INSTANCE) == 0 && read_file(path, &text, NULL) == 0)
		kb = strtoul(text, NULL, 10);
	return kb ? (unsigned)(kb * 1024) : (unsigned)getpagesize();
}

/* A save that failed on these (a full disk, a device error) is tried again later. */
static bool save_retried(int r)
{
	return r == -ENOSPC || r == -EDQUOT || r == -EIO;
}

/*
 * Room for the whole buffer as read (before compression) on the archive's
 * file system, after retention: a drain stopped by a full disk would have
 * consumed the pages it could not write.
 */
static int capture_room(struct recorder *rec)
{
	uint64_t need = crash_buffer_cpu_bytes(rec->crash) * rec->nr_cpus;
	struct statvfs sv;

	archive_enforce_retention(rec->archive);
	if (statvfs(rec->cfg->directory, &sv) < 0)
		return -errno;
	return (uint64_t)sv.f_bavail * sv.f_frsize >= need ? 0 : -ENOSPC;
}

/*
 * The previous boot's pages as a segment of their own, beside the
 * recording's (the archive's side segment: the recording may be running
 * when this is retried). Returns 0 when saved, -ENOSPC (or another error
 * opening the segment) when nothing was read: the buffer is as it was,
 * for a later try. Logs.
 */
static int save_previous(struct recorder *rec, const char *clock, struct crash_previous *prev)
{
	_cleanup_free_ char *path = NULL;
	char when[64] = "an unknown time";
	struct archive *side = NULL;
	uint64_t failed = 0;
	int r;

	/* the recording's readers use these: collected once */
	if (!rec->formats) {
		r = recorder_collect_formats(rec);
		if (r < 0)
			return r;
	}
	r = tracing_nr_cpus(rec->tracing);
	rec->nr_cpus = r > 0 ? (unsigned)r : 1;
	if (!prev->overlap_found) {
		r = find_overlap(rec, clock, prev);
		if (r < 0)
			return r;
		prev->overlap_found = true;
		prev->nr_pairs = wallclock_pairs_sort(prev->pairs, prev->nr_pairs);
		prev->page_size = crash_page_size(rec);
	}
	r = capture_room(rec);
	rec->capture = prev;
	if (r >= 0)
		r = archive_open_side(rec->archive, &side);
	if (r < 0) {
		rec->capture = NULL;
		if (!save_retried(r))
			log_errno(LOG_ERR, r, "cannot start the crash capture segment");
		return r;
	}
	r = drain_crash_buffer(rec, side);
	/* a failed CPU still leaves the others' pages: finish what was written */
	if (archive_close_side(rec->archive, side, &path, &failed) < 0 && r == 0)
		r = -EIO;
	rec->capture = NULL;
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot save the crash buffer of boot %s", prev->boot_id);
		/* its pages were read (consumed): not tried again */
		return save_retried(r) ? -ECANCELED : r;
	}
	if (failed)
		log_err("the crash capture '%s' of boot %s is incomplete: %" PRIu64 " writes of its "
			"frames failed", path ?: "?", prev->boot_id, failed);
	if (prev->nr_pairs) {
		const struct wallclock_pair *lp = &prev->pairs[prev->nr_pairs - 1];

		wallclock_format(lp->realtime + (prev->last_ts >= lp->trace ?
						  prev->last_ts - lp->trace : 0), when, sizeof(when));
	}
	log_notice("saved the crash buffer of the previous boot %s (%s at %s) as '%s'",
		   prev->boot_id, prev->markers_lost ? "its markers overwritten, named by the "
		   "armed record" : prev->clean ? "the daemon had stopped cleanly" :
		   "ended without a clean stop", when, path ?: "?");
	rec->crash_captured++;
	return 0;
}

/* The recording's clock, so that both can be compared at the next boot; NULL if unknown. */
static char *crash_clock(struct recorder *rec)
{
	return rec->cfg->clock ? strdup(rec->cfg->clock) : tracing_clock(rec->tracing);
}


/* Arm the black box for this boot. Logs. */
static void arm(struct recorder *rec)
{
	_cleanup_free_ char *clock = crash_clock(rec);
	int r;

	r = crash_buffer_arm(rec->crash, rec->boot_id, rec->uts.release, rec->uts.version, clock);
	if (r == -EUCLEAN) {
		log_warn("the crash buffer is not in overwrite mode (it took trace_options="
			 "nooverwrite from the kernel command line) and would keep the oldest "
			 "events, not the last: remove nooverwrite (stackmapctl boot-cmdline); "
			 "continuing without it");
		return;
	}
	if (r < 0) {
		log_errno(LOG_WARNING, r, "cannot start the crash buffer, continuing without it");
		return;
	}
	log_info("crash buffer armed: %" PRIu64 " KiB per CPU in instance '%s'",
		 crash_buffer_cpu_bytes(rec->crash) / 1024, CONFIG_CRASH_INSTANCE);
	r = crash_buffer_record_error(rec->crash);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot write the armed record '%s/%s': at the next boot "
			  "the crash buffer is saved only if one of its markers is left, continuing",
			  rec->cfg->directory, CRASH_ARMED_RECORD);
}

/* A save that failed at start, tried again; armed once it is saved. */
static void retry_save(struct recorder *rec)
{
	static struct log_ratelimit rl = LOG_RATELIMIT_INIT;
	_cleanup_free_ char *clock = crash_clock(rec);
	int r;

	r = save_previous(rec, clock, rec->crash_pending);
	if (save_retried(r)) {
		log_ratelimit_errno(&rl, LOG_WARNING, r, "the crash buffer of boot %s is still not "
				    "saved: no room in '%s' for it, retrying",
				    rec->crash_pending->boot_id, rec->cfg->directory);
		return;
	}
	/* saved, or given up (logged): this boot's black box from now on */
	crash_previous_done(rec->crash_pending);
	free(rec->crash_pending);
	rec->crash_pending = NULL;
	arm(rec);
	/* the recording's tasks run already: out of the black box too */
	if (crash_buffer_armed(rec->crash))
		recorder_exclude_self(rec);
}

/* How often a save that found no room is tried again. */
#define CRASH_RETRY_USEC (1 * USEC_PER_SEC)

static int on_crash_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct recorder *rec = userdata;
	static struct log_ratelimit rl = LOG_RATELIMIT_INIT;
	int r;

	if (rec->crash_pending)
		retry_save(rec);
	else if (crash_buffer_armed(rec->crash)) {
		r = crash_buffer_mark_clock(rec->crash);
		if (r < 0)
			log_ratelimit_errno(&rl, LOG_WARNING, r,
					    "cannot write a clock marker to the crash buffer, continuing");
	}
	return sd_event_source_set_time_relative(s, rec->crash_pending ? CRASH_RETRY_USEC :
						 rec->cfg->crash_clock_interval_usec);
}

int recorder_crash_start(struct recorder *rec)
{
	struct crash_previous prev = {};
	_cleanup_free_ char *why = NULL, *clock = NULL;
	int r;

	if (!rec->cfg->crash_buffer_size)
		return 0;
	r = crash_buffer_probe(tracing_dir(rec->tracing), &why);
	if (r < 0) {
		log_warn("%s; no crash buffer, continuing", why ?: "no crash buffer");
		return 0;
	}
	r = crash_buffer_open(tracing_dir(rec->tracing), rec->cfg, &rec->crash);
	if (r < 0)
		return log_errno(LOG_ERR, r, "cannot open the crash buffer instance '%s'",
				 CONFIG_CRASH_INSTANCE);
	/* the clock the previous boot's crash buffer ran on: the recording's, then as now */
	clock = crash_clock(rec);
	r = crash_buffer_read_previous(rec->crash, rec->boot_id, &prev);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot read the crash buffer, continuing without what "
			  "it holds");
	else if (prev.boot_id)
		r = save_previous(rec, clock, &prev);
	else if (prev.lines)
		log_info("the crash buffer holds %" PRIu64 " lines of this boot or of no stackmapd "
			 "run (no marker, no armed record of another boot): not saved", prev.lines);
	if (prev.boot_id && save_retried(r)) {
		/*
		 * No room even after retention: the black box is left as it is
		 * (tracing off keeps its pages) and saved once there is room,
		 * before it is armed for this boot.
		 */
		log_errno(LOG_WARNING, r, "cannot save the crash buffer of the previous boot %s now: "
			  "no room in '%s'; it is kept in the buffer, unarmed, and saved as soon as "
			  "there is room", prev.boot_id, rec->cfg->directory);
		rec->crash_pending = malloc(sizeof(*rec->crash_pending));
		if (!rec->crash_pending) {
			crash_previous_done(&prev);
			return log_errno(LOG_ERR, -ENOMEM, "out of memory");
		}
		*rec->crash_pending = prev;
	} else {
		crash_previous_done(&prev);
		arm(rec);
		if (!crash_buffer_armed(rec->crash))
			return 0;
	}
	r = sd_event_add_time_relative(rec->event, &rec->crash_timer, CLOCK_MONOTONIC,
				       rec->crash_pending ? CRASH_RETRY_USEC :
				       rec->cfg->crash_clock_interval_usec, 0, on_crash_timer, rec);
	if (r >= 0)
		r = sd_event_source_set_enabled(rec->crash_timer, SD_EVENT_ON);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot set the crash buffer's %s timer, continuing",
			  rec->crash_pending ? "retry" : "clock");
	return 0;
}

void recorder_crash_stop(struct recorder *rec)
{
	int r;

	if (!crash_buffer_armed(rec->crash))
		return;
	r = crash_buffer_mark_stop(rec->crash);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot mark the clean stop in the crash buffer");
}

const char *recorder_crash_state(const struct recorder *rec)
{
	if (!rec->cfg->crash_buffer_size)
		return "off";
	if (rec->crash_pending)
		return "not armed: the previous boot's crash buffer waits for room in the archive";
	if (crash_buffer_armed(rec->crash))
		return "armed";
	if (!rec->crash)
		return "not armed: the kernel was not booted with it (stackmapctl boot-cmdline)";
	return "not armed (see the log)";
}

void recorder_crash_free(struct recorder *rec)
{
	rec->crash_timer = sd_event_source_disable_unref(rec->crash_timer);
	if (rec->crash_pending)
		crash_previous_done(rec->crash_pending);
	free(rec->crash_pending);
	rec->crash_pending = NULL;
	rec->crash = crash_buffer_free(rec->crash);
}
