/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * splice-floor: the cheapest possible recorder, as a floor for the
 * benchmark. One thread per CPU splices whole pages from the instance's
 * per_cpu/cpuN/trace_pipe_raw into a pipe and from the pipe into
 * OUTDIR/cpuN.raw, like trace-cmd's recorder, without compression or any
 * parsing. Its own threads are left out of the instance
 * (set_event_notrace_pid). On SIGINT/SIGTERM it turns the instance's
 * tracing_on off (as trace-cmd does: its own writes would otherwise keep
 * the last page refilling), drains what is left (full pages by splice, the
 * last partial page by read) and exits.
 *
 *   splice-floor record INSTANCE_DIR OUTDIR
 *   splice-floor read INSTANCE_DIR OUTDIR
 *   splice-floor count TRACING_DIR OUTDIR [SYSTEM...]
 *
 * "record" writes OUTDIR/cpuN.raw and OUTDIR/page_size, and prints the
 * bytes written per CPU when it ends.
 *
 * "read" is the floor of a recorder that looks at its pages, as stackmapd's
 * reader does before it parses them: up to 64 pages spliced into a pipe of
 * 64 slots per call, read out of it into memory 8 pages per read(), and
 * each page's entries walked by their headers alone and counted. Nothing is
 * stored; the counts go to OUTDIR/counts.
 *
 * "count" prints "events N stacks N other N missed N pages N bytes N":
 * stack entries (kernel_stack, stack_id) are counted apart from the events
 * they belong to, and missed events are those the page headers report
 * lost. After "record" it parses the recorded pages (libtraceevent's
 * kbuffer) with the formats of the given event systems (and ftrace's; all
 * of them when none is given); after "read" it prints OUTDIR/counts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event-parse.h>
#include <kbuffer.h>
#include <tracefs.h>

#include "page-walk.h"
#include "util.h"

#define POLL_TIMEOUT_MS 100
#define READ_SPLICE_PAGES 64
#define READ_BATCH_PAGES 8

struct reader {
	int cpu;
	int in_fd;
	int out_fd;
	int pipe_fds[2];
	size_t page_size;
	uint64_t bytes;
	int error;			/* first errno seen, 0 if none */
	pthread_t thread;
	/* read mode */
	bool read_mode;
	int stack_types[2];
	uint8_t *batch;
	size_t piped;
	uint64_t events, stacks, missed, pages;
};

static atomic_bool stopping;

static size_t instance_page_size(const char *instance_dir)
{
	char path[PATH_MAX], buf[32];
	size_t size = (size_t)sysconf(_SC_PAGESIZE);
	ssize_t n;
	int fd;

	/* Sub-buffers can be larger than a page since 6.8 (buffer_subbuf_size_kb). */
	snprintf(path, sizeof(path), "%s/buffer_subbuf_size_kb", instance_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return size;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		if (strtoul(buf, NULL, 10) > 0)
			size = strtoul(buf, NULL, 10) * 1024;
	}
	return size;
}

/* Move everything the pipe holds into the output file. */
static int pipe_to_file(struct reader *r, size_t len)
{
	while (len > 0) {
		ssize_t n = splice(r->pipe_fds[0], NULL, r->out_fd, NULL, len, SPLICE_F_MOVE);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		len -= (size_t)n;
		r->bytes += (uint64_t)n;
	}
	return 0;
}

/* Splice full pages until the kernel has none. Returns 0 or -errno. */
static int splice_full_pages(struct reader *r)
{
	for (;;) {
		ssize_t n = splice(r->in_fd, NULL, r->pipe_fds[1], NULL, r->page_size,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		int e;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		if (n == 0)
			return 0;
		e = pipe_to_file(r, (size_t)n);
		if (e < 0)
			return e;
	}
}

/* At the end: partial pages are only handed out by read(). */
static int read_partial_pages(struct reader *r)
{
	char *page = malloc(r->page_size);
	int e = 0;

	if (!page)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(r->in_fd, page, r->page_size);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				e = -errno;
			break;
		}
		/* 0 means "no page right now"; after a stop that is the end. */
		if (n == 0)
			break;
		if (write(r->out_fd, page, (size_t)n) != n) {
			e = -EIO;
			break;
		}
		r->bytes += (uint64_t)n;
	}
	free(page);
	return e;
}

/*
 * Count the entries of one page with the project's page walker, by their
 * headers and event types (a page of this machine's kernel: the host's long
 * size and byte order). A page the walker rejects ends its count there.
 */
static void walk_page(struct reader *r, const uint8_t *page, size_t len)
{
	const struct page_format f = { .long_size = sizeof(long),
				       .big_endian = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__,
				       .page_size = r->page_size };
	struct page_walk w;
	struct page_entry e;

	if (page_walk_init(&w, &f, page, len) < 0)
		return;
	r->pages++;
	r->missed += w.missed;
	while (page_walk_next(&w, &e) > 0) {
		if (e.kind != PAGE_ENTRY_DATA)
			continue;
		if (e.type == r->stack_types[0] || e.type == r->stack_types[1])
			r->stacks++;
		else
			r->events++;
	}
}

/* Splice full pages into the pipe and read them out in batches. */
static int read_full_pages(struct reader *r)
{
	for (;;) {
		ssize_t n;

		if (!r->piped) {
			n = splice(r->in_fd, NULL, r->pipe_fds[1], NULL, READ_SPLICE_PAGES * r->page_size,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return 0;
			if (n <= 0)
				return n < 0 ? -errno : 0;
			r->piped = (size_t)n;
		}
		n = read(r->pipe_fds[0], r->batch, r->piped < READ_BATCH_PAGES * r->page_size ?
			 r->piped : READ_BATCH_PAGES * r->page_size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		r->piped -= (size_t)n;
		r->bytes += (uint64_t)n;
		for (size_t off = 0; off < (size_t)n; off += r->page_size)
			walk_page(r, r->batch + off, (size_t)n - off < r->page_size ? (size_t)n - off : r->page_size);
	}
}

static int read_last_pages(struct reader *r)
{
	for (;;) {
		ssize_t n = read(r->in_fd, r->batch, r->page_size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 && errno != EAGAIN ? -errno : 0;
		r->bytes += (uint64_t)n;
		walk_page(r, r->batch, (size_t)n);
	}
}

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	struct pollfd pfd = { .fd = r->in_fd, .events = POLLIN };
	int e;

	while (!atomic_load(&stopping)) {
		/* poll wakes at buffer_percent, so pages arrive in batches. */
		if (poll(&pfd, 1, POLL_TIMEOUT_MS) < 0 && errno != EINTR) {
			r->error = errno;
			return NULL;
		}
		e = r->read_mode ? read_full_pages(r) : splice_full_pages(r);
		if (e < 0) {
			r->error = -e;
			return NULL;
		}
	}
	e = r->read_mode ? read_full_pages(r) : splice_full_pages(r);
	if (e == 0)
		e = r->read_mode ? read_last_pages(r) : read_partial_pages(r);
	if (e < 0)
		r->error = -e;
	return NULL;
}

/* The event id of ftrace/NAME in the instance, or -1. */
static int instance_event_id(const char *instance_dir, const char *name)
{
	char path[PATH_MAX], line[256];
	FILE *f;
	int id = -1;

	/* ftrace's own events have no id file: the id is in their format */
	snprintf(path, sizeof(path), "%s/events/ftrace/%s/format", instance_dir, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ID: %d", &id) == 1)
			break;
	fclose(f);
	return id;
}

static int reader_open(struct reader *r, const char *instance_dir, const char *outdir, int cpu)
{
	char path[PATH_MAX];

	r->cpu = cpu;
	r->page_size = instance_page_size(instance_dir);
	snprintf(path, sizeof(path), "%s/per_cpu/cpu%d/trace_pipe_raw", instance_dir, cpu);
	r->in_fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->in_fd < 0)
		return -errno;
	if (r->read_mode) {
		r->stack_types[0] = instance_event_id(instance_dir, "kernel_stack");
		r->stack_types[1] = instance_event_id(instance_dir, "stack_id");
		r->batch = malloc(READ_BATCH_PAGES * r->page_size);
		if (!r->batch || pipe2(r->pipe_fds, O_CLOEXEC) < 0)
			return -ENOMEM;
		/* a slot per spliced page: a sub-buffer larger than a page takes several */
		(void)fcntl(r->pipe_fds[1], F_SETPIPE_SZ, (int)(READ_SPLICE_PAGES * r->page_size));
		r->out_fd = -1;
		return 0;
	}
	snprintf(path, sizeof(path), "%s/cpu%d.raw", outdir, cpu);
	r->out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (r->out_fd < 0)
		return -errno;
	if (pipe2(r->pipe_fds, O_CLOEXEC) < 0)
		return -errno;
	return 0;
}

static int online_cpus(const char *instance_dir, int *ret_max)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int max = -1;

	snprintf(path, sizeof(path), "%s/per_cpu", instance_dir);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "cpu", 3) == 0 && atoi(de->d_name + 3) > max)
			max = atoi(de->d_name + 3);
	closedir(d);
	if (max < 0)
		return -ENOENT;
	*ret_max = max;
	return 0;
}

static int write_page_size(const char *outdir, size_t size)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/page_size", outdir);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "%zu\n", size);
	if (fclose(f) != 0)
		return -errno;
	return 0;
}

/* Write text to instance_dir/file. Returns 0 or -errno. */
static int write_instance_file(const char *instance_dir, const char *file, const char *text)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", instance_dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : n < 0 ? -errno : -EIO;
}

/*
 * Leave our own threads out of the instance, as stackmapd does: splice
 * allocates kernel memory per page, and with kmem events enabled a reader
 * would otherwise record its own allocations, each with a stack that the
 * kernel unwinds on the reader's time. event-fork passes the exclusion on
 * to the threads made after it.
 */
static int exclude_self(const char *instance_dir)
{
	char pid[32];
	int e;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	e = write_instance_file(instance_dir, "options/event-fork", "1");
	if (e == 0)
		e = write_instance_file(instance_dir, "set_event_notrace_pid", pid);
	return e;
}

static int tracing_off(const char *instance_dir)
{
	return write_instance_file(instance_dir, "tracing_on", "0");
}

static int write_counts(const char *outdir, const struct reader *readers, int nr)
{
	uint64_t events = 0, stacks = 0, missed = 0, pages = 0, bytes = 0;
	char path[PATH_MAX];
	FILE *f;

	for (int i = 0; i < nr; i++) {
		events += readers[i].events;
		stacks += readers[i].stacks;
		missed += readers[i].missed;
		pages += readers[i].pages;
		bytes += readers[i].bytes;
	}
	snprintf(path, sizeof(path), "%s/counts", outdir);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "events %llu stacks %llu other 0 missed %llu pages %llu bytes %llu\n",
		(unsigned long long)events, (unsigned long long)stacks, (unsigned long long)missed,
		(unsigned long long)pages, (unsigned long long)bytes);
	return fclose(f) != 0 ? -errno : 0;
}

static int cmd_record(const char *instance_dir, const char *outdir, bool read_mode)
{
	struct reader *readers;
	sigset_t set;
	int max_cpu, nr, sig, e, status = 0;

	e = online_cpus(instance_dir, &max_cpu);
	if (e < 0) {
		fprintf(stderr, "splice-floor: %s/per_cpu: %s\n", instance_dir, strerror(-e));
		return 1;
	}
	nr = max_cpu + 1;
	readers = calloc((size_t)nr, sizeof(*readers));
	if (!readers)
		return 1;

	/* Block the stop signals in every thread; main waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	e = write_page_size(outdir, instance_page_size(instance_dir));
	if (e < 0) {
		fprintf(stderr, "splice-floor: %s/page_size: %s\n", outdir, strerror(-e));
		return 1;
	}
	for (int cpu = 0; cpu < nr; cpu++) {
		readers[cpu].read_mode = read_mode;
		e = reader_open(&readers[cpu], instance_dir, outdir, cpu);
		if (e < 0) {
			fprintf(stderr, "splice-floor: cpu%d: %s\n", cpu, strerror(-e));
			return 1;
		}
	}
	e = exclude_self(instance_dir);
	if (e < 0) {
		fprintf(stderr, "splice-floor: %s/set_event_notrace_pid: %s\n", instance_dir, strerror(-e));
		return 1;
	}
	for (int cpu = 0; cpu < nr; cpu++)
		if (pthread_create(&readers[cpu].thread, NULL, reader_run, &readers[cpu]) != 0) {
			fprintf(stderr, "splice-floor: cannot start a thread\n");
			return 1;
		}
	fprintf(stderr, "splice-floor: recording %d CPUs\n", nr);

	(void)sigwait(&set, &sig);
	e = tracing_off(instance_dir);
	if (e < 0)
		fprintf(stderr, "splice-floor: %s/tracing_on: %s, continuing\n", instance_dir,
			strerror(-e));
	atomic_store(&stopping, true);
	for (int cpu = 0; cpu < nr; cpu++) {
		struct reader *r = &readers[cpu];

		pthread_join(r->thread, NULL);
		if (r->error) {
			fprintf(stderr, "splice-floor: cpu%d: %s\n", cpu, strerror(r->error));
			status = 1;
		}
		printf("cpu%d %llu bytes\n", cpu, (unsigned long long)r->bytes);
		close(r->in_fd);
		if (r->out_fd >= 0)
			close(r->out_fd);
		close(r->pipe_fds[0]);
		close(r->pipe_fds[1]);
		free(r->batch);
	}
	if (read_mode) {
		e = write_counts(outdir, readers, nr);
		if (e < 0) {
			fprintf(stderr, "splice-floor: %s/counts: %s\n", outdir, strerror(-e));
			status = 1;
		}
	}
	free(readers);
	return status;
}

struct counts {
	uint64_t events, stacks, other, missed, pages, bytes;
};

static int count_file(struct tep_handle *tep, struct kbuffer *kbuf, const char *path,
		      size_t page_size, int stack_types[2], struct counts *c)
{
	char *page = malloc(page_size);
	FILE *f = fopen(path, "re");

	if (!page || !f) {
		free(page);
		if (f)
			fclose(f);
		return -errno;
	}
	while (fread(page, 1, page_size, f) == page_size) {
		unsigned long long ts;
		void *data;
		int missed;

		c->pages++;
		c->bytes += page_size;
		if (kbuffer_load_subbuffer(kbuf, page) < 0)
			continue;
		missed = kbuffer_missed_events(kbuf);
		if (missed > 0)
			c->missed += (uint64_t)missed;
		for (data = kbuffer_read_event(kbuf, &ts); data; data = kbuffer_next_event(kbuf, &ts)) {
			unsigned short type;
			struct tep_event *ev;

			memcpy(&type, data, sizeof(type));
			if (type == stack_types[0] || type == stack_types[1]) {
				c->stacks++;
				continue;
			}
			ev = tep_find_event(tep, type);
			if (ev && strcmp(ev->system, "ftrace") != 0)
				c->events++;
			else
				c->other++;
		}
	}
	fclose(f);
	free(page);
	return 0;
}

static int event_id(struct tep_handle *tep, const char *name)
{
	struct tep_event *ev = tep_find_event_by_name(tep, "ftrace", name);

	return ev ? ev->id : -1;
}

static int cmd_count(const char *tracing_dir, const char *outdir, char **systems, int nr_systems)
{
	const char *wanted[64];
	struct counts c = { 0 };
	struct tep_handle *tep;
	struct kbuffer *kbuf;
	int stack_types[2];
	size_t page_size = 0;
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/counts", outdir);
	f = fopen(path, "re");
	if (f) {
		char line[256];
		bool ok = fgets(line, sizeof(line), f) != NULL;

		fclose(f);
		if (!ok)
			return 1;
		fputs(line, stdout);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/page_size", outdir);
	f = fopen(path, "re");
	if (!f || fscanf(f, "%zu", &page_size) != 1 || page_size < 64) {
		fprintf(stderr, "splice-floor: cannot read %s\n", path);
		return 1;
	}
	fclose(f);
	/* only the formats the pages need: parsing them all takes a while */
	if (nr_systems > (int)ARRAY_SIZE(wanted) - 2) {
		fprintf(stderr, "splice-floor: too many event systems\n");
		return 1;
	}
	for (int i = 0; i < nr_systems; i++)
		wanted[i] = systems[i];
	wanted[nr_systems] = "ftrace";
	wanted[nr_systems + 1] = NULL;
	tep = nr_systems ? tracefs_local_events_system(tracing_dir, wanted)
			 : tracefs_local_events(tracing_dir);
	if (!tep) {
		fprintf(stderr, "splice-floor: cannot load event formats from %s\n", tracing_dir);
		return 1;
	}
	stack_types[0] = event_id(tep, "kernel_stack");
	stack_types[1] = event_id(tep, "stack_id");
	kbuf = kbuffer_alloc(KBUFFER_LSIZE_SAME_AS_HOST, KBUFFER_ENDIAN_SAME_AS_HOST);
	if (!kbuf)
		return 1;
	for (int cpu = 0;; cpu++) {
		snprintf(path, sizeof(path), "%s/cpu%d.raw", outdir, cpu);
		if (access(path, R_OK) < 0)
			break;
		if (count_file(tep, kbuf, path, page_size, stack_types, &c) < 0) {
			fprintf(stderr, "splice-floor: %s: %m\n", path);
			return 1;
		}
	}
	printf("events %llu stacks %llu other %llu missed %llu pages %llu bytes %llu\n",
	       (unsigned long long)c.events, (unsigned long long)c.stacks,
	       (unsigned long long)c.other, (unsigned long long)c.missed,
	       (unsigned long long)c.pages, (unsigned long long)c.bytes);
	kbuffer_free(kbuf);
	tep_free(tep);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "record") == 0)
		return cmd_record(argv[2], argv[3], false);
	if (argc == 4 && strcmp(argv[1], "read") == 0)
		return cmd_record(argv[2], argv[3], true);
	if (argc >= 4 && strcmp(argv[1], "count") == 0)
		return cmd_count(argv[2], argv[3], argv + 4, argc - 4);
	fprintf(stderr, "usage: splice-floor record INSTANCE_DIR OUTDIR\n"
			"       splice-floor read INSTANCE_DIR OUTDIR\n"
			"       splice-floor count TRACING_DIR OUTDIR [SYSTEM...]\n");
	return 2;
}
