/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading trace_pipe_raw: a plain read() hands back a page as soon as it
 * holds anything (pages 5-18% full under load, many wake-ups, loss), while
 * splice moves only full pages. So full pages are spliced into a pipe of
 * our own, many per call, and read back out of it many per read(): two
 * system calls per batch instead of one or two per page. Partial pages are
 * read from the file itself, only on a flush, once the pipe is empty, so
 * that pages stay in order.
 *
 * The file is opened non-blocking and the thread waits in its own poll()
 * on it and a wake eventfd, so that a flush never blocks and never ends
 * the reader. The kernel wakes a poller when buffer_percent of the buffer
 * is filled.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <tracefs.h>

#include "archive.h"
#include "cpu-reader.h"
#include "log.h"
#include "segment-frame.h"
#include "util.h"

#define READER_NICE -10
#define SPLICE_PAGES 64			/* pages moved into the pipe by one splice, at most */
#define READ_PAGES 8			/* pages read out of it by one read(), at most */

static struct log_ratelimit columns_rl = LOG_RATELIMIT_INIT;

struct cpu_reader {
	struct cpu_reader_params p;
	int fd;				/* trace_pipe_raw */
	int pipe[2];			/* full pages spliced out of fd */
	size_t piped;			/* bytes in the pipe, whole pages */
	int wake_fd;
	pthread_t thread;
	bool running;

	uint8_t *batch;			/* pages read out of the pipe, or one partial page */
	size_t batch_size;
	size_t page_size;
	struct buf frame;		/* raw pages of the frame being built */
	struct segment_frame_encoder *enc;
	struct transcoder tc;
	struct page_summary acc;	/* of the frame being built */
	uint64_t frame_pages;

	atomic_bool stop;
	atomic_bool dead;		/* the thread ended by itself */
	bool joined;			/* main: the thread was found ended and joined */
#ifdef STACKMAPD_FAULTS
	char *fault_exit_path;		/* tests: end the thread at a flush once this exists */
#endif
	atomic_uint_fast64_t st_read_errors;
	struct log_ratelimit read_rl;
	int tid;			/* the thread's id, set before it signals started */
	pthread_mutex_t start_lock;
	pthread_cond_t started;
	atomic_uint_fast64_t flush_requested;
	atomic_uint_fast64_t flush_done;
	pthread_mutex_t req_lock;	/* boundary of a pending flush; markers */
	struct segment_generation boundary;
	uint64_t boundary_token;	/* flush token the boundary belongs to, 0: none */
	struct page_marker markers[64];
	size_t nr_markers;

	atomic_uint_fast64_t st_pages, st_events, st_raw, st_read, st_stored;
	atomic_uint_fast64_t st_lost, st_lost_unknown, st_parse_errors, st_write_errors, st_last_ts;
};

static void signal_fd(int fd)
{
	uint64_t one = 1;

	if (fd >= 0)
		(void)!write(fd, &one, sizeof(one));
}

#ifdef STACKMAPD_FAULTS
/*
 * Fault injection, compiled only into the test build of the daemon
 * (tests/fault/stackmapd-faults): STACKMAPD_FAULT_READER_EXIT=CPU:PATH
 * makes the reader of CPU end its thread at the first flush request after
 * PATH exists, without flushing, marking itself or telling anyone: as a
 * thread that dies unexpectedly would. Finding it is the main loop's job.
 */
static void fault_setup(struct cpu_reader *r)
{
	const char *e = getenv("STACKMAPD_FAULT_READER_EXIT");
	char *end;
	long cpu;

	if (!e)
		return;
	cpu = strtol(e, &end, 10);
	if (end != e && *end == ':' && cpu == r->p.cpu)
		r->fault_exit_path = strdup(end + 1);
}

static bool fault_exit_due(const struct cpu_reader *r)
{
	return r->fault_exit_path && access(r->fault_exit_path, F_OK) == 0;
}
#else
static void fault_setup(struct cpu_reader *r)
{
}

static bool fault_exit_due(const struct cpu_reader *r)
{
	return false;
}
#endif

int cpu_reader_new(const struct cpu_reader_params *p, struct cpu_reader **ret)
{
	struct cpu_reader *r;
	int rr;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->p = *p;
	r->read_rl = (struct log_ratelimit)LOG_RATELIMIT_INIT;
	r->wake_fd = -1;
	r->fd = -1;
	r->pipe[0] = r->pipe[1] = -1;
	pthread_mutex_init(&r->req_lock, NULL);
	pthread_mutex_init(&r->start_lock, NULL);
	pthread_cond_init(&r->started, NULL);
	{
		char path[64];

		(void)snprintf(path, sizeof(path), "per_cpu/cpu%d/trace_pipe_raw", p->cpu);
		r->fd = tracefs_instance_file_open(p->instance, path, O_RDONLY | O_NONBLOCK);
		if (r->fd < 0) {
			rr = negative_errno();
			goto fail;
		}
	}
	r->page_size = p->layout->page_size;
	if (pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		rr = negative_errno();
		goto fail;
	}
	/*
	 * A pipe slot (a system page of the pipe's size) per spliced page,
	 * whatever the sub-buffer size; the default 16 slots would do, more
	 * means fewer calls.
	 */
	(void)fcntl(r->pipe[1], F_SETPIPE_SZ, SPLICE_PAGES * getpagesize());
	r->batch_size = READ_PAGES * r->page_size;
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->batch = malloc(r->batch_size);
	if (r->wake_fd < 0 || !r->batch ||
	    buf_reserve(&r->frame, p->frame_size + r->page_size * 2) < 0) {
		rr = -ENOMEM;
		goto fail;
	}
	/* the layout of every recorded event (the stack_ref format included) */
	rr = segment_frame_encoder_new(&(struct segment_frame_params){
						.max_frame = p->frame_size + r->page_size * 2,
						.compression_level = p->compression_level,
						.columns = p->columns,
						.long_size = p->layout->commit_size,
						.formats = p->formats,
						.nr_formats = p->nr_formats,
					}, &r->enc);
	if (rr < 0)
		goto fail;
	rr = transcoder_init(&r->tc, p->layout, p->dedup);
	if (rr < 0)
		goto fail;
	r->tc.stack_time_event = p->stack_time_event;
	fault_setup(r);
	*ret = r;
	return 0;
fail:
	cpu_reader_free(r);
	return rr;
}

static int emit_frame(struct cpu_reader *r, const struct segment_generation *boundary)
{
	struct archive_frame f = {
		.cpu = (uint32_t)r->p.cpu,
		.pages = r->frame_pages,
		.events = r->acc.events,
		.first_ts = r->acc.first_ts,
		.last_ts = r->acc.last_ts,
		.lost_events = r->acc.lost_events,
		.refs = r->tc.refs,
		.nr_refs = r->tc.nr_refs,
		.ids = r->tc.ids,
		.nr_ids = r->tc.nr_ids,
		.boundary = boundary,
	};
	int rr;

	if (!r->frame.len && !boundary)
		return 0;
	if (r->frame.len) {
		struct segment_frame sf;

		rr = segment_frame_encode(r->enc, r->frame.data, r->frame.len, &sf);
		if (rr < 0)
			return rr;
		if (sf.columns_failed)
			(void)log_ratelimit_warn_errno(&columns_rl, -ENOMEM,
						       "CPU %d: frame stored without column encoding",
						       r->p.cpu);
		f.stored = sf.stored;
		f.stored_len = sf.stored_len;
		f.raw_len = sf.raw_len;
		f.flags = sf.flags;
		atomic_fetch_add(&r->st_stored, sf.stored_len);
	}
	rr = archive_append_frame(r->p.archive, &f);
	if (rr < 0)
		atomic_fetch_add(&r->st_write_errors, 1);
	buf_reset(&r->frame);
	transcoder_reset_refs(&r->tc);
	memset(&r->acc, 0, sizeof(r->acc));
	r->frame_pages = 0;
	return rr;
}

static void publish_markers(struct cpu_reader *r)
{
	if (!r->tc.nr_markers)
		return;
	pthread_mutex_lock(&r->req_lock);
	for (unsigned i = 0; i < r->tc.nr_markers && r->nr_markers < ARRAY_SIZE(r->markers); i++) {
		r->markers[r->nr_markers] = r->tc.markers[i];
		r->markers[r->nr_markers++].cpu = (uint32_t)r->p.cpu;
	}
	pthread_mutex_unlock(&r->req_lock);
	r->tc.nr_markers = 0;
	signal_fd(r->p.notify_fd);
}

static int process_page(struct cpu_reader *r, const uint8_t *page, size_t len)
{
	struct page_summary sum;
	size_t before;
	int rr;

	if (r->frame.len && r->frame.len + len > r->p.frame_size) {
		rr = emit_frame(r, NULL);
		/* a frame the archive could not write is dropped and counted there: read on */
		if (rr < 0 && rr != -ESHUTDOWN && r->frame.len)
			return rr;
	}
	before = r->frame.len;
	rr = transcoder_page(&r->tc, page, len, &r->frame, &sum);
	if (rr < 0)
		return rr;
	r->frame_pages++;
	r->acc.events += sum.events;
	r->acc.lost_events += sum.lost_events;
	if (sum.first_ts && !r->acc.first_ts)
		r->acc.first_ts = sum.first_ts;
	if (sum.last_ts)
		r->acc.last_ts = sum.last_ts;
	atomic_fetch_add(&r->st_pages, 1);
	atomic_fetch_add(&r->st_events, sum.events);
	atomic_fetch_add(&r->st_read, len);
	atomic_fetch_add(&r->st_raw, r->frame.len - before);
	if (sum.lost_events)
		atomic_fetch_add(&r->st_lost, sum.lost_events);
	if (sum.lost_unknown)
		atomic_fetch_add(&r->st_lost_unknown, 1);
	if (sum.parse_error)
		atomic_fetch_add(&r->st_parse_errors, 1);
	if (sum.last_ts)
		atomic_store(&r->st_last_ts, sum.last_ts);
	publish_markers(r);
	return 0;
}

/* Read every full page available now. Returns pages read or -errno. */
static int read_full_pages(struct cpu_reader *r)
{
	int n = 0, err = 0;

	for (;;) {
		ssize_t k;

		if (!r->piped) {
			k = splice(r->fd, NULL, r->pipe[1], NULL, SPLICE_PAGES * r->page_size,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (k <= 0)
				return k < 0 && errno != EAGAIN && errno != EINTR ? -errno : n;
			r->piped = (size_t)k;
		}
		k = read(r->pipe[0], r->batch, MIN(r->piped, r->batch_size));
		if (k <= 0) {
			/* the pipe holds what splice said it moved: anything else is lost pages */
			if (k < 0 && errno == EINTR)
				continue;
			r->piped = 0;
			return k < 0 ? -errno : -EIO;
		}
		r->piped -= (size_t)k;
		/* a page that cannot be stored is lost alone, as if read one by one */
		for (size_t off = 0; off < (size_t)k; off += r->page_size, n++) {
			int rr = process_page(r, r->batch + off, MIN(r->page_size, (size_t)k - off));

			if (rr < 0 && err == 0)
				err = rr;
		}
		if (err < 0)
			return err;
	}
}

/* Read everything, partial pages too. */
static int read_all(struct cpu_reader *r)
{
	int rr = read_full_pages(r);

	if (rr < 0)
		return rr;
	for (;;) {
		ssize_t k = read(r->fd, r->batch, r->page_size);

		if (k <= 0)
			return k < 0 && errno != EAGAIN ? -errno : 0;
		rr = process_page(r, r->batch, (size_t)k);
		if (rr < 0)
			return rr;
	}
}

/* A reader error is never silent: counted for status, logged at a bounded rate. */
static void read_error(struct cpu_reader *r, int err, const char *what)
{
	atomic_fetch_add(&r->st_read_errors, 1);
	log_ratelimit_err_errno(&r->read_rl, err, "CPU %d: %s failed, continuing", r->p.cpu, what);
}

static void do_flush(struct cpu_reader *r)
{
	uint64_t token = atomic_load(&r->flush_requested);
	struct segment_generation b;
	bool with_boundary = false;
	int rr;

	rr = read_all(r);
	if (rr < 0)
		read_error(r, rr, "reading the ring buffer");
	pthread_mutex_lock(&r->req_lock);
	if (r->boundary_token && r->boundary_token <= token) {
		b = r->boundary;
		with_boundary = true;
		r->boundary_token = 0;
	}
	pthread_mutex_unlock(&r->req_lock);
	(void)emit_frame(r, with_boundary ? &b : NULL);
	atomic_store(&r->flush_done, token);
	signal_fd(r->p.notify_fd);
}

static void *reader_thread(void *arg)
{
	struct cpu_reader *r = arg;
	struct pollfd pfd[2] = {
		{ .fd = r->fd, .events = POLLIN },
		{ .fd = r->wake_fd, .events = POLLIN },
	};
	int idle_timeout = -1;

	/*
	 * A reader that waits behind the load it records loses events once the
	 * buffer fills: run ahead of ordinary tasks where allowed (root, or
	 * CAP_SYS_NICE); otherwise keep the inherited priority.
	 */
	pthread_mutex_lock(&r->start_lock);
	r->tid = (int)syscall(SYS_gettid);
	pthread_cond_signal(&r->started);
	pthread_mutex_unlock(&r->start_lock);
	(void)setpriority(PRIO_PROCESS, (id_t)r->tid, READER_NICE);

	while (!atomic_load(&r->stop)) {
		uint64_t v;
		int n;

		n = poll(pfd, 2, idle_timeout);
		if (n < 0 && errno != EINTR) {
			read_error(r, -errno, "poll");
			atomic_store(&r->dead, true);
			break;
		}
		if (pfd[1].revents & POLLIN)
			(void)!read(r->wake_fd, &v, sizeof(v));
		if (atomic_load(&r->stop))
			break;
		if (atomic_load(&r->flush_requested) != atomic_load(&r->flush_done)) {
			if (fault_exit_due(r))
				return NULL;
			do_flush(r);
			idle_timeout = -1;
			continue;
		}
		n = read_full_pages(r);
		if (n < 0) {
			read_error(r, n, "reading the ring buffer");
			n = 0;
		}
		/*
		 * With buffer_percent = 0 the kernel reports the file readable
		 * while no page is full yet; then wait on the wake fd alone for
		 * a while instead of spinning.
		 */
		if (n == 0 && (pfd[0].revents & POLLIN)) {
			pfd[0].events = 0;
			idle_timeout = 50;
		} else {
			pfd[0].events = POLLIN;
			idle_timeout = -1;
		}
	}
	/* final flush: every event the buffer holds goes into the archive */
	do_flush(r);
	return NULL;
}

int cpu_reader_start(struct cpu_reader *r)
{
	int rr;

	pthread_mutex_lock(&r->start_lock);
	rr = pthread_create(&r->thread, NULL, reader_thread, r);
	if (rr) {
		pthread_mutex_unlock(&r->start_lock);
		return -rr;
	}
	while (!r->tid)
		pthread_cond_wait(&r->started, &r->start_lock);
	pthread_mutex_unlock(&r->start_lock);
	r->running = true;
	return 0;
}

bool cpu_reader_alive(struct cpu_reader *r)
{
	/*
	 * A thread that ended without saying so (its flag is set only on the
	 * errors it knows of) is found by joining it: only the main thread
	 * calls this, and nothing else joins a running reader.
	 */
	if (r->running && !atomic_load(&r->stop) && !atomic_load(&r->dead) &&
	    pthread_tryjoin_np(r->thread, NULL) == 0) {
		r->joined = true;
		atomic_store(&r->dead, true);
	}
	return !atomic_load(&r->dead);
}

int cpu_reader_tid(const struct cpu_reader *r)
{
	return r->tid;
}

int cpu_reader_drain(struct cpu_reader *r)
{
	int rr = read_all(r);

	if (rr < 0)
		return rr;
	return emit_frame(r, NULL);
}

uint64_t cpu_reader_request_flush(struct cpu_reader *r, const struct segment_generation *boundary)
{
	uint64_t token;

	pthread_mutex_lock(&r->req_lock);
	token = atomic_fetch_add(&r->flush_requested, 1) + 1;
	if (boundary) {
		r->boundary = *boundary;
		r->boundary_token = token;
	}
	pthread_mutex_unlock(&r->req_lock);
	if (atomic_load(&r->dead))
		return token;		/* nobody reads it: cpu_reader_flushed() says so */
	if (!r->running) {
		do_flush(r);
		return token;
	}
	signal_fd(r->wake_fd);
	return token;
}

bool cpu_reader_flushed(struct cpu_reader *r, uint64_t token)
{
	/* a reader whose thread ended owes no flush: a barrier must not wait for it */
	return atomic_load(&r->flush_done) >= token || atomic_load(&r->dead);
}

size_t cpu_reader_take_markers(struct cpu_reader *r, struct page_marker *out, size_t max)
{
	size_t n;

	pthread_mutex_lock(&r->req_lock);
	n = MIN(max, r->nr_markers);
	memcpy(out, r->markers, n * sizeof(*out));
	memmove(r->markers, r->markers + n, (r->nr_markers - n) * sizeof(*out));
	r->nr_markers -= n;
	pthread_mutex_unlock(&r->req_lock);
	return n;
}

void cpu_reader_stop(struct cpu_reader *r)
{
	if (!r->running)
		return;
	atomic_store(&r->stop, true);
	signal_fd(r->wake_fd);
	if (!r->joined)
		(void)pthread_join(r->thread, NULL);
	r->running = false;
}

void cpu_reader_get_stats(struct cpu_reader *r, struct cpu_reader_stats *ret)
{
	ret->pages = atomic_load(&r->st_pages);
	ret->events = atomic_load(&r->st_events);
	ret->raw_bytes = atomic_load(&r->st_raw);
	ret->read_bytes = atomic_load(&r->st_read);
	ret->stored_bytes = atomic_load(&r->st_stored);
	ret->lost_events = atomic_load(&r->st_lost);
	ret->lost_unknown = atomic_load(&r->st_lost_unknown);
	ret->parse_errors = atomic_load(&r->st_parse_errors);
	ret->write_errors = atomic_load(&r->st_write_errors);
	ret->read_errors = atomic_load(&r->st_read_errors);
	ret->last_ts = atomic_load(&r->st_last_ts);
}

int cpu_reader_cpu(const struct cpu_reader *r)
{
	return r->p.cpu;
}

struct cpu_reader *cpu_reader_free(struct cpu_reader *r)
{
	if (!r)
		return NULL;
	cpu_reader_stop(r);
	if (r->fd >= 0)
		close(r->fd);
	if (r->pipe[0] >= 0)
		close(r->pipe[0]);
	if (r->pipe[1] >= 0)
		close(r->pipe[1]);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	transcoder_done(&r->tc);
	buf_done(&r->frame);
	segment_frame_encoder_free(r->enc);
	free(r->batch);
	pthread_mutex_destroy(&r->read_rl.lock);
	pthread_mutex_destroy(&r->req_lock);
	pthread_mutex_destroy(&r->start_lock);
	pthread_cond_destroy(&r->started);
#ifdef STACKMAPD_FAULTS
	free(r->fault_exit_path);
#endif
	free(r);
	return NULL;
}
