/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The archive (archive.h): the segment being written and the appends to
 * it, and rotation. What the directory holds at start is archive-scan.c;
 * write errors are archive-outage.c; which finished segments go is
 * archive-retention.c; the figures for status are archive-status.c.
 */
#include <assert.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/stat.h>

#include "archive-internal.h"
#include "stacktab.h"
#include "transcode.h"
#include "util.h"

int archive_open(const struct archive_params *p, struct archive **ret)
{
	struct archive *a;
	int r;

	assert(p);
	assert(ret);

	r = archive_make_directory(p->directory);
	if (r < 0)
		return r;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	a->rotate_fd = -1;
	a->dir = strdup(p->directory);
	a->nr_cpus = p->nr_cpus;
	a->level = p->compression_level;
	a->sync = p->sync;
	a->policy = p->policy;
	a->hooks = p->hooks;
	a->userdata = p->userdata;
	a->next_seq = 1;
	a->rotate_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!a->dir || a->rotate_fd < 0) {
		r = a->rotate_fd < 0 ? -errno : -ENOMEM;
		archive_free(a);
		return r;
	}
	r = outage_init(&a->out, a->nr_cpus);
	if (r >= 0)
		r = archive_scan_directory(a);
	if (r < 0) {
		archive_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

void archive_set_policy(struct archive *a, const struct rotation_policy *policy, bool sync,
			int compression_level)
{
	assert(a);
	assert(policy);
	pthread_mutex_lock(&a->lock);
	a->policy = *policy;
	a->sync = sync;
	a->level = compression_level;
	pthread_mutex_unlock(&a->lock);
}

static struct archive_segment *segment_free_state(struct archive_segment *s)
{
	if (!s)
		return NULL;
	s->writer = segment_writer_free(s->writer);
	free(s->name);
	free(s->id_bitmap);
	free(s->cpus);
	buf_done(&s->addrs);
	buf_done(&s->seek);
	free(s);
	return NULL;
}

static int open_segment(struct archive *a, struct archive_segment **ret)
{
	struct archive_segment *s;
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->seq = a->next_seq;
	s->nr_cpus = a->nr_cpus;
	s->cpus = calloc(a->nr_cpus, sizeof(*s->cpus));
	s->id_bitmap = calloc(ARCHIVE_ID_BITS / 64, sizeof(uint64_t));
	(void)gmtime_r(&now, &tm);
	(void)strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	if (!s->cpus || !s->id_bitmap ||
	    strprintf(&s->name, "%08" PRIu64 "-%s", s->seq, stamp) < 0) {
		segment_free_state(s);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < s->nr_cpus; i++)
		s->cpus[i].cpu = i;
	s->opened_realtime_usec = now_usec(CLOCK_REALTIME);
	s->opened_mono_usec = now_usec(CLOCK_MONOTONIC);

	r = segment_writer_open(a->dir, s->name, &s->writer);
	if (r < 0) {
		segment_free_state(s);
		return r;
	}
	a->next_seq++;
	if (a->hooks && a->hooks->begin) {
		r = a->hooks->begin(a->userdata, s);
		if (r < 0) {
			/* an unusable head: remove the file, nothing of value is in it */
			(void)unlink(segment_writer_path(s->writer));
			segment_free_state(s);
			return r;
		}
	}
	*ret = s;
	return 0;
}

int archive_start(struct archive *a)
{
	struct archive_segment *s;
	bool began = false;
	int r;

	assert(a);

	r = open_segment(a, &s);
	if (r < 0) {
		if (!archive_error_transient(r))
			return r;
		/* record meanwhile: drop and count until archive_tick() opens it */
		pthread_mutex_lock(&a->lock);
		a->want_segment = true;
		if (!a->out.active || outage_may_write_locked(&a->out))
			began = outage_failed_locked(&a->out, r);
		pthread_mutex_unlock(&a->lock);
		atomic_fetch_add(&a->write_errors, 1);
		if (began)
			outage_log_begin(a, r);
		else
			outage_log_retry(a, r);
		return 0;
	}
	pthread_mutex_lock(&a->lock);
	a->cur = s;
	a->want_segment = false;
	pthread_mutex_unlock(&a->lock);
	return 0;
}

static int write_stacks_locked(struct archive *a, struct archive_segment *s,
			       struct dstack *const *refs, size_t n)
{
	size_t addrs_len = s->addrs.len;
	int r;

	buf_reset(&a->stacks);
	for (size_t i = 0; i < n; i++) {
		struct dstack *d = refs[i];
		struct stack_entry e = {
			.generation = 0,
			.id = d->id,
			.nr = d->nr,
			.ips = d->ips,
		};

		if (d->emitted_seq == s->seq)
			continue;
		r = stacktab_encode(&a->stacks, &e);
		if (r >= 0)
			r = buf_append(&s->addrs, d->ips, 8u * d->nr);
		if (r < 0)
			goto fail;
	}
	if (!a->stacks.len)
		return 0;
	r = segment_writer_append(s->writer, SEGMENT_REC_STACKS, SEGMENT_NO_CPU, a->stacks.data,
				  a->stacks.len, a->level, NULL);
	if (r < 0)
		goto fail;
	/* only once they are in the segment: otherwise a later frame writes them */
	for (size_t i = 0; i < n; i++)
		if (refs[i]->emitted_seq != s->seq) {
			refs[i]->emitted_seq = s->seq;
			s->dstacks++;
		}
	return 0;
fail:
	s->addrs.len = addrs_len;
	return r;
}

/* The rotation policy's one decision, for the segment being written. */
static bool segment_due_locked(const struct archive *a, const struct archive_segment *s)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);

	/* a full seek table finishes the segment: readers accept no larger INDEX */
	if (s->seek.len / sizeof(struct segment_seek) + 1 >= SEGMENT_MAX_INDEX_FRAMES)
		return true;
	return rotation_due(&a->policy, segment_writer_size(s->writer),
			    now > s->opened_mono_usec ? now - s->opened_mono_usec : 0);
}

/* Write what a frame holds to s. Locked. Returns 0 or -errno. */
static int write_frame_locked(struct archive *a, struct archive_segment *s,
			      const struct archive_frame *f)
{
	int r;

	r = write_stacks_locked(a, s, f->refs, f->nr_refs);
	if (r < 0)
		return r;
	if (f->stored) {
		struct segment_seek e = {
			.cpu = f->cpu,
			.offset = segment_writer_size(s->writer),
			.first_ts = f->first_ts,
			.last_ts = f->last_ts,
		};

		r = segment_writer_append_compressed(s->writer, SEGMENT_REC_PAGES, f->cpu, f->stored,
						     f->stored_len, f->raw_len, f->flags);
		if (r < 0)
			return r;
		/* without room for its line the table is dropped: readers then scan */
		if (s->seek.len / sizeof(e) >= SEGMENT_MAX_INDEX_FRAMES ||
		    buf_append(&s->seek, &e, sizeof(e)) < 0)
			s->seek_failed = true;
	}
	if (f->cpu < s->nr_cpus) {
		struct segment_cpu_index *ci = &s->cpus[f->cpu];

		ci->pages += f->pages;
		ci->events += f->events;
		ci->lost_events += f->lost_events;
		ci->bytes += f->raw_len;
		if (f->first_ts && !ci->first_ts)
			ci->first_ts = f->first_ts;
		if (f->last_ts)
			ci->last_ts = f->last_ts;
	}
	for (size_t i = 0; i < f->nr_ids; i++) {
		uint32_t id = f->ids[i];

		if (id < ARCHIVE_ID_BITS) {
			s->id_bitmap[id / 64] |= UINT64_C(1) << (id % 64);
			s->any_ids = true;
		}
	}
	if (f->boundary) {
		uint8_t g[SEGMENT_GENERATION_SIZE];

		segment_generation_encode(f->boundary, g);
		/* the pages are in: a lost boundary is a write error, not lost events */
		(void)segment_writer_append(s->writer, SEGMENT_REC_GENERATION, f->cpu, g, sizeof(g),
					    0, NULL);
	}
	return 0;
}

/* What happened to a write, for logging outside the lock. */
struct write_outcome {
	int r;
	bool began, ended;
	struct outage_summary summary;
};

/*
 * Write through the outage state (locked): during an outage and before its
 * next retry, nothing is tried. A loss not yet recorded is written first.
 */
static int write_guarded_locked(struct archive *a, struct archive_segment *s,
				const struct archive_frame *f, enum segment_rec_type type,
				uint32_t cpu, const void *payload, size_t len,
				struct write_outcome *o)
{
	int r;

	if (!outage_may_write_locked(&a->out)) {
		r = a->out.error;
		goto fail;
	}
	r = outage_record_locked(&a->out, s, a->nr_cpus);
	if (r < 0)
		goto fail;
	if (f)
		r = write_frame_locked(a, s, f);
	else
		r = segment_writer_append(s->writer, type, cpu, payload, len,
					  len > 256 ? a->level : 0, NULL);
	if (r >= 0) {
		/* over only once more than the loss record fits */
		o->ended = outage_end_locked(&a->out, &o->summary);
		return o->r = 0;
	}
fail:
	if (r == -EINVAL || r == -EFBIG || r == -ENOMEM)
		return o->r = r;	/* about the record, not the disk */
	if (f)
		outage_drop_locked(&a->out, f, a->nr_cpus);
	if (r != a->out.error || !a->out.active || outage_may_write_locked(&a->out))
		o->began = outage_failed_locked(&a->out, r);
	return o->r = r;
}

static void log_outcome(struct archive *a, const struct write_outcome *o)
{
	if (o->ended)
		outage_log_end(a, &o->summary);
	if (o->began)
		outage_log_begin(a, o->r);
	else if (o->r < 0 && o->r != -ESHUTDOWN)
		outage_log_retry(a, o->r);
}

int archive_append_frame(struct archive *a, const struct archive_frame *f)
{
	struct write_outcome o = { 0 };
	struct archive_segment *s;
	bool due = false;

	assert(a);
	assert(f);

	pthread_mutex_lock(&a->lock);
	s = a->cur;
	if (!s && a->want_segment) {
		/* no segment could be opened yet: the frame is lost, and counted */
		outage_drop_locked(&a->out, f, a->nr_cpus);
		o.r = a->out.error ? a->out.error : -EIO;
		goto out;
	}
	if (!s) {
		o.r = -ESHUTDOWN;
		goto out;
	}
	if (write_guarded_locked(a, s, f, 0, 0, NULL, 0, &o) < 0)
		goto out;
	atomic_fetch_add(&a->frames, 1);
	/* under the lock: a request always belongs to the segment that is current */
	due = segment_due_locked(a, s) && !atomic_exchange(&a->rotate_requested, true);
out:
	pthread_mutex_unlock(&a->lock);
	if (o.r < 0 && o.r != -ESHUTDOWN)
		atomic_fetch_add(&a->write_errors, 1);
	log_outcome(a, &o);
	if (due) {
		uint64_t one = 1;

		(void)!write(a->rotate_fd, &one, sizeof(one));
	}
	return o.r;
}

int archive_append_record(struct archive *a, enum segment_rec_type type, uint32_t cpu,
			  const void *payload, size_t len)
{
	struct write_outcome o = { .r = -ESHUTDOWN };

	assert(a);
	assert(payload || len == 0);

	pthread_mutex_lock(&a->lock);
	if (a->cur)
		(void)write_guarded_locked(a, a->cur, NULL, type, cpu, payload, len, &o);
	pthread_mutex_unlock(&a->lock);
	if (o.r < 0 && o.r != -ESHUTDOWN)
		atomic_fetch_add(&a->write_errors, 1);
	log_outcome(a, &o);
	return o.r;
}

int archive_rotate_fd(const struct archive *a)
{
	assert(a);
	return a->rotate_fd;
}

bool archive_take_rotate_request(struct archive *a)
{
	uint64_t v;

	assert(a);

	(void)!read(a->rotate_fd, &v, sizeof(v));
	return atomic_exchange(&a->rotate_requested, false);
}

bool archive_rotation_due(struct archive *a)
{
	bool due;

	assert(a);

	pthread_mutex_lock(&a->lock);
	due = a->cur && segment_due_locked(a, a->cur);
	pthread_mutex_unlock(&a->lock);
	return due;
}

uint64_t archive_age_left(struct archive *a)
{
	uint64_t opened, now = now_usec(CLOCK_MONOTONIC);

	assert(a);

	pthread_mutex_lock(&a->lock);
	opened = a->cur ? a->cur->opened_mono_usec : now;
	pthread_mutex_unlock(&a->lock);
	return rotation_age_left(&a->policy, now > opened ? now - opened : 0);
}

/* The last segment of a run takes a loss that no later segment will. Logs. */
static void record_loss_last(struct archive *a, struct archive_segment *s)
{
	struct outage_summary sum;
	bool ended = false;
	int r;

	pthread_mutex_lock(&a->lock);
	r = outage_record_locked(&a->out, s, a->nr_cpus);
	if (r >= 0)
		ended = outage_end_locked(&a->out, &sum);
	pthread_mutex_unlock(&a->lock);
	if (ended)
		outage_log_end(a, &sum);
	else if (r < 0)
		log_errno(LOG_ERR, r, "the events dropped since writing to '%s' failed cannot be "
			  "recorded in the archive either", a->dir);
}

/* At the stop, with no segment to record a loss in: the log has it. */
static void record_loss_unwritten(struct archive *a)
{
	uint64_t events, bytes;

	pthread_mutex_lock(&a->lock);
	events = a->out.total_events;
	bytes = a->out.total_bytes;
	pthread_mutex_unlock(&a->lock);
	if (events || bytes)
		log_err("%" PRIu64 " events (%" PRIu64 " bytes) were dropped since writing to '%s' "
			"failed; no segment could be written to record them", events, bytes, a->dir);
}

/*
 * A segment whose tail could not be written: make it a valid segment that
 * ends with its last complete record, as a start would. Logs.
 */
static int salvage(struct archive *a, const char *part, uint32_t index_flags, int error)
{
	_cleanup_free_ char *final = NULL;
	/* what the segment's end knew about itself (TABLES_MISSING) stays known */
	struct segment_index idx = { .flags = index_flags };
	int r;

	r = segment_recover(part, &idx,
			    "finished after a write error: records after the last complete one "
			    "are lost", &final);
	if (r < 0) {
		if (archive_error_transient(r) &&
		    archive_defer_recovery(a, strrchr(part, '/') + 1) >= 0) {
			log_errno(LOG_ERR, error, "cannot finish the segment '%s' (%s either); it is "
				  "recovered once writing works again", part, strerror(-r));
			return 0;
		}
		return log_errno(LOG_ERR, error, "cannot finish the segment '%s'; it is recovered "
				 "at the next start", part);
	}
	log_errno(LOG_WARNING, error, "could not finish the segment '%s' normally; kept its "
		  "complete records as '%s'", part, final ? final : "(nothing to keep)");
	if (final) {
		a->salvaged++;
		archive_add_recovered(a, final);
	}
	return 0;
}

static int finish_segment(struct archive *a, struct archive_segment *s, bool final, char **ret_path)
{
	struct segment_index idx = { 0 };
	_cleanup_free_ char *path = NULL, *part = NULL;
	struct stat st;
	uint64_t seq = s->seq;
	int r, end = 0;

	part = strdup(segment_writer_path(s->writer));
	if (!part) {
		segment_free_state(s);
		return -ENOMEM;
	}
	if (final)
		record_loss_last(a, s);
	/* a tail that fails part-way leaves the writer on a record boundary: finish anyway */
	if (a->hooks && a->hooks->end)
		end = a->hooks->end(a->userdata, s);
	idx.flags = s->index_flags | (final ? SEGMENT_INDEX_F_FINAL : 0);
	idx.unresolved = s->unresolved;
	idx.nr_cpus = s->nr_cpus;
	idx.cpus = s->cpus;
	if (!s->seek_failed) {
		idx.flags |= SEGMENT_INDEX_F_SEEK;
		idx.frames = (struct segment_seek *)(void *)s->seek.data;
		idx.nr_frames = (uint32_t)(s->seek.len / sizeof(struct segment_seek));
	}
	r = segment_writer_finish(s->writer, &idx, a->sync, &path);
	s->writer = NULL;
	if (r < 0) {
		segment_free_state(s);
		(void)salvage(a, part, idx.flags & SEGMENT_INDEX_F_TABLES_MISSING, r);
		return r;
	}
	if (end < 0)
		log_errno(LOG_WARNING, end, "the tail records of '%s' are incomplete", path);
	if (stat(path, &st) == 0)
		(void)archive_add_finished(a, strrchr(path, '/') + 1, seq, (uint64_t)st.st_size);
	if (a->hooks && a->hooks->finished)
		a->hooks->finished(a->userdata, path, s);
	segment_free_state(s);
	if (ret_path)
		*ret_path = steal_ptr(path);
	return 0;
}

int archive_rotate(struct archive *a, bool final, char **ret_path)
{
	struct archive_segment *next = NULL, *old;
	int r;

	assert(a);

	if (!final) {
		r = open_segment(a, &next);
		if (r < 0)
			return r;
	}
	pthread_mutex_lock(&a->lock);
	old = a->cur;
	a->cur = next;
	if (next)
		a->want_segment = false;
	/*
	 * Frames appended while the next segment was being opened asked again
	 * for the rotation that this is: without this, an empty segment would
	 * follow.
	 */
	atomic_store(&a->rotate_requested, false);
	pthread_mutex_unlock(&a->lock);
	if (!old && final && a->want_segment) {
		/* none could be opened: one last try, for the record of the loss */
		a->want_segment = false;
		r = open_segment(a, &old);
		if (r < 0) {
			record_loss_unwritten(a);
			return 0;
		}
	}
	if (!old)
		return next ? 0 : -ESHUTDOWN;

	r = finish_segment(a, old, final, ret_path);
	archive_enforce_retention(a);
	return r;
}

int archive_close(struct archive *a, char **ret_path)
{
	struct archive_segment *old;
	int r;

	assert(a);

	pthread_mutex_lock(&a->lock);
	old = a->cur;
	a->cur = NULL;
	atomic_store(&a->rotate_requested, false);
	pthread_mutex_unlock(&a->lock);
	if (!old)
		return -ESHUTDOWN;
	r = finish_segment(a, old, false, ret_path);
	archive_enforce_retention(a);
	return r;
}

int archive_open_side(struct archive *a, struct archive **ret)
{
	struct archive_segment *seg;
	struct archive *s;
	int r;

	assert(a);
	assert(ret);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	/* no retention of its own (a zero policy): a's counts its segment with the others */
	pthread_mutex_lock(&a->lock);
	s->sync = a->sync;
	s->level = a->level;
	pthread_mutex_unlock(&a->lock);
	s->dir = strdup(a->dir);
	s->nr_cpus = a->nr_cpus;
	s->hooks = a->hooks;
	s->userdata = a->userdata;
	/* the next number of the directory: segments open in the main thread only */
	s->next_seq = a->next_seq;
	s->rotate_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!s->dir || s->rotate_fd < 0) {
		r = s->rotate_fd < 0 ? -errno : -ENOMEM;
		archive_free(s);
		return r;
	}
	r = outage_init(&s->out, s->nr_cpus);
	if (r >= 0)
		r = open_segment(s, &seg);
	if (r < 0) {
		archive_free(s);
		return r;
	}
	a->next_seq = MAX(a->next_seq, s->next_seq);
	s->cur = seg;
	*ret = s;
	return 0;
}

int archive_close_side(struct archive *a, struct archive *side, char **ret_path,
		       uint64_t *ret_failed)
{
	int r;

	assert(a);
	assert(side);
	assert(ret_failed);

	r = archive_close(side, ret_path);
	*ret_failed = atomic_load(&side->write_errors);
	/* the main archive's retention counts it from now on */
	for (size_t i = 0; i < side->nr_done; i++)
		(void)archive_add_finished(a, side->done[i].name, side->done[i].seq,
					   side->done[i].bytes);
	for (size_t i = 0; i < side->nr_unrecovered; i++)
		(void)archive_defer_recovery(a, side->unrecovered[i]);
	archive_free(side);
	return r;
}

bool archive_is_open(struct archive *a)
{
	bool open;

	pthread_mutex_lock(&a->lock);
	open = a->cur != NULL || a->want_segment;
	pthread_mutex_unlock(&a->lock);
	return open;
}

/* Open the segment archive_start() could not, once the outage's next retry is due. */
static void retry_open(struct archive *a)
{
	struct archive_segment *s;
	bool due;
	int r;

	pthread_mutex_lock(&a->lock);
	due = a->want_segment && !a->cur && outage_may_write_locked(&a->out);
	pthread_mutex_unlock(&a->lock);
	if (!due)
		return;
	r = open_segment(a, &s);
	pthread_mutex_lock(&a->lock);
	if (r >= 0) {
		a->cur = s;
		a->want_segment = false;
	} else {
		(void)outage_failed_locked(&a->out, r);
	}
	pthread_mutex_unlock(&a->lock);
	if (r < 0) {
		atomic_fetch_add(&a->write_errors, 1);
		outage_log_retry(a, r);
	} else {
		log_info("opened the segment '%s' after the write outage",
			 segment_writer_path(s->writer));
	}
}

/*
 * A writer that a failed write left unusable (its cut back failed too)
 * never takes a record again: without this, the outage would last until
 * the segment is due by age, forever with segment_age = 0. Once a new
 * segment opens (the device works again), the old one is finished by
 * recovery.
 */
static void replace_broken(struct archive *a)
{
	int broken = 0;
	int r;

	/* not on the outage's backoff: the readers' attempts keep pushing it back */
	pthread_mutex_lock(&a->lock);
	if (a->cur)
		broken = segment_writer_error(a->cur->writer);
	pthread_mutex_unlock(&a->lock);
	if (!broken)
		return;
	r = archive_rotate(a, false, NULL);
	if (r < 0 && r != -ESHUTDOWN) {
		pthread_mutex_lock(&a->lock);
		(void)outage_failed_locked(&a->out, r);
		pthread_mutex_unlock(&a->lock);
		outage_log_retry(a, r);
	}
}

void archive_tick(struct archive *a)
{
	assert(a);
	archive_enforce_retention(a);
	archive_retry_recoveries(a);
	retry_open(a);
	replace_broken(a);
}

struct archive *archive_free(struct archive *a)
{
	if (!a)
		return NULL;
	a->cur = segment_free_state(a->cur);
	for (size_t i = 0; i < a->nr_done; i++)
		free(a->done[i].name);
	free(a->done);
	for (size_t i = 0; i < a->nr_unrecovered; i++)
		free(a->unrecovered[i]);
	free(a->unrecovered);
	outage_done(&a->out);
	buf_done(&a->stacks);
	if (a->rotate_fd >= 0)
		close(a->rotate_fd);
	pthread_mutex_destroy(&a->lock);
	free(a->dir);
	free(a);
	return NULL;
}
