/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The crash buffer's tracefs side: finding the boot-mapped instance,
 * reading back the markers a previous boot left in it, and running it as
 * a black box for this boot (events, stacks, markers). See crash-buffer.h
 * and doc/crash-buffer.md.
 */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>

#include <tracefs.h>

#include "buf.h"
#include "config.h"
#include "crash-buffer.h"
#include "log.h"
#include "util.h"

struct crash_buffer {
	const struct config *cfg;		/* borrowed */
	char boot_id[64];			/* this boot's, for the clock markers */
	char release[128];
	char *dir;				/* instances/NAME */
	struct tracefs_instance *instance;
	int marker_fd;
	bool armed;
	int record_error;			/* the armed record could not be written */
};

void crash_previous_done(struct crash_previous *p)
{
	assert(p);
	free(p->boot_id);
	free(p->kernel_release);
	free(p->kernel_version);
	free(p->pairs);
	free(p->overlap);
	*p = (struct crash_previous){};
}

static int instance_dir(const char *tracefs_dir, char **ret)
{
	return strprintf(ret, "%s/instances/%s", tracefs_dir, CONFIG_CRASH_INSTANCE);
}

int crash_buffer_probe(const char *tracefs_dir, char **ret_why)
{
	_cleanup_free_ char *dir = NULL, *info = NULL;
	struct stat st;

	assert(tracefs_dir);

	if (instance_dir(tracefs_dir, &dir) < 0 || strprintf(&info, "%s/last_boot_info", dir) < 0)
		return -ENOMEM;
	if (stat(dir, &st) < 0) {
		(void)strprintf(ret_why, "the kernel was not booted with the crash buffer (no "
				"instance '%s'): add the arguments of 'stackmapctl boot-cmdline' to "
				"its command line", CONFIG_CRASH_INSTANCE);
		return -ENOENT;
	}
	if (stat(info, &st) < 0) {
		(void)strprintf(ret_why, "instance '%s' exists but is not kept across reboots (no "
				"last_boot_info: a kernel older than 6.12, or the instance was not "
				"made by trace_instance=%s@%s)", CONFIG_CRASH_INSTANCE,
				CONFIG_CRASH_INSTANCE, CONFIG_CRASH_INSTANCE);
		return -ENOENT;
	}
	return 0;
}

int crash_buffer_open(const char *tracefs_dir, const struct config *c, struct crash_buffer **ret)
{
	struct crash_buffer *cb;

	assert(tracefs_dir);
	assert(c);
	assert(ret);

	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	cb->cfg = c;
	cb->marker_fd = -1;
	if (instance_dir(tracefs_dir, &cb->dir) < 0) {
		crash_buffer_free(cb);
		return -ENOMEM;
	}
	cb->instance = tracefs_instance_alloc(tracefs_dir, CONFIG_CRASH_INSTANCE);
	if (!cb->instance) {
		int r = errno ? -errno : -ENOENT;

		crash_buffer_free(cb);
		return r;
	}
	*ret = cb;
	return 0;
}

struct tracefs_instance *crash_buffer_instance(const struct crash_buffer *cb)
{
	assert(cb);
	return cb->instance;
}

bool crash_buffer_armed(const struct crash_buffer *cb)
{
	return cb && cb->armed;
}

static int write_in(struct crash_buffer *cb, const char *name, const char *value)
{
	_cleanup_free_ char *path = NULL;

	if (strprintf(&path, "%s/%s", cb->dir, name) < 0)
		return -ENOMEM;
	return write_file(path, value);
}

/* Whether the file holds value ("[local] global" counts as local). */
static bool option_is(struct crash_buffer *cb, const char *name, const char *value)
{
	_cleanup_free_ char *path = NULL, *v = NULL, *want = NULL;

	if (strprintf(&path, "%s/%s", cb->dir, name) < 0 || read_file(path, &v, NULL) < 0 ||
	    strprintf(&want, "[%s]", value) < 0)
		return false;
	v[strcspn(v, "\n")] = '\0';
	return streq(v, value) || strstr(v, want);
}

uint64_t crash_buffer_cpu_bytes(const struct crash_buffer *cb)
{
	_cleanup_free_ char *path = NULL, *v = NULL;

	assert(cb);

	if (strprintf(&path, "%s/buffer_size_kb", cb->dir) < 0 || read_file(path, &v, NULL) < 0)
		return 0;
	return strtoull(v, NULL, 10) * 1024;
}

/* "  text delta:\t-268435456" lines of last_boot_info. */
static void read_last_boot_info(struct crash_buffer *cb, struct crash_previous *p)
{
	_cleanup_free_ char *path = NULL, *v = NULL;
	const char *s;

	if (strprintf(&path, "%s/last_boot_info", cb->dir) < 0 || read_file(path, &v, NULL) < 0)
		return;
	s = strstr(v, "text delta:");
	if (s) {
		p->text_delta = strtoll(s + strlen("text delta:"), NULL, 10);
		p->text_delta_known = true;
	}
}

/*
 * The timestamp of a trace line: "  comm-pid  [cpu] flags  SECS.USECS: ...".
 * Returns ns, or 0 if the line has none (a clock printed as a counter
 * is taken as it is).
 */
static uint64_t line_ts(const char *line)
{
	const char *p = strchr(line, ']');
	unsigned long long sec, usec;
	int n = 0;

	if (!p)
		return 0;
	p++;
	p += strspn(p, " ");
	p += strcspn(p, " ");		/* irq/preempt flags */
	p += strspn(p, " ");
	if (sscanf(p, "%llu.%llu:%n", &sec, &usec, &n) == 2 && n > 0)
		return sec * UINT64_C(1000000000) + usec * 1000;
	if (sscanf(p, "%llu:%n", &sec, &n) == 1 && n > 0)
		return sec;
	return 0;
}

static int add_pair(struct crash_previous *p, uint64_t ts, uint64_t real, uint64_t boot)
{
	if (GREEDY_REALLOC(p->pairs, p->cap_pairs, p->nr_pairs + 1) < 0)
		return -ENOMEM;
	p->pairs[p->nr_pairs++] = (struct wallclock_pair){ .trace = ts, .realtime = real,
							   .boottime = boot };
	return 0;
}

/* One marker of ours, from its text after CRASH_MARKER_PREFIX. */
static int parse_marker(struct crash_previous *p, const char *text, uint64_t ts)
{
	unsigned long long real, boot;
	char id[64];

	if (sscanf(text, "boot %63s", id) == 1) {
		const char *rel = strstr(text, " release ");
		const char *ver = strstr(text, " version ");

		/* the last boot marker wins: a restarted daemon armed it again */
		free(p->boot_id);
		free(p->kernel_release);
		free(p->kernel_version);
		p->boot_id = strdup(id);
		p->kernel_release = rel ? strndup(rel + 9, strcspn(rel + 9, " ")) : NULL;
		p->kernel_version = ver ? strdup(ver + 9) : NULL;
		p->clean = false;
		p->stop_ts = 0;
		return p->boot_id ? 0 : -ENOMEM;
	}
	if (sscanf(text, "clock %llu %llu %63s", &real, &boot, id) >= 2) {
		/* the boot marker may be overwritten: each clock marker names the boot too */
		const char *rel = strstr(text, " release ");

		if (!p->boot_id && strlen(id) > 8) {
			p->boot_id = strdup(id);
			if (!p->boot_id)
				return -ENOMEM;
		}
		if (!p->kernel_release && rel) {
			p->kernel_release = strndup(rel + 9, strcspn(rel + 9, " "));
			if (!p->kernel_release)
				return -ENOMEM;
		}
		return ts ? add_pair(p, ts, real, boot) : 0;
	}
	if (startswith(text, "stop clean")) {
		p->clean = true;
		p->stop_ts = ts;
	} else if (startswith(text, "start")) {
		/* the daemon started again in that boot after a clean stop */
		p->clean = false;
		p->stop_ts = 0;
	}
	return 0;
}

static int record_path(const struct crash_buffer *cb, char **ret)
{
	return strprintf(ret, "%s/" CRASH_ARMED_RECORD, cb->cfg->directory);
}

/* "boot ID release R version V\n" after prefix: the boot marker, and the armed record. */
static void boot_line(char *buf, size_t len, const char *prefix, const char *boot_id,
		      const char *release, const char *version)
{
	(void)snprintf(buf, len, "%sboot %s release %s version %s\n", prefix,
		       boot_id ?: "unknown", release ?: "unknown", version ?: "unknown");
}

/*
 * No marker left (the buffer wrapped on every CPU between two clock
 * markers): the armed record names the boot that recorded what the buffer
 * holds, since that boot emptied it before writing the record.
 */
static int previous_from_record(struct crash_buffer *cb, const char *this_boot_id,
				struct crash_previous *p)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	char id[64], release[128];
	int r;

	if (record_path(cb, &path) < 0)
		return -ENOMEM;
	if (read_file(path, &text, NULL) < 0)
		return 0;
	text[strcspn(text, "\n")] = '\0';
	/* the boot marker's text: read as one, once it names a boot and a kernel */
	if (sscanf(text, "boot %63s release %127s", id, release) != 2 ||
	    (this_boot_id && streq(id, this_boot_id)))
		return 0;
	r = parse_marker(p, text, 0);
	if (r == 0)
		p->markers_lost = true;
	return r;
}

int crash_buffer_read_previous(struct crash_buffer *cb, const char *this_boot_id,
			       struct crash_previous *ret)
{
	struct crash_previous p = {};
	_cleanup_free_ char *path = NULL, *line = NULL;
	_cleanup_(fclosep) FILE *f = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	assert(cb);
	assert(ret);

	if (strprintf(&path, "%s/trace", cb->dir) < 0)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		const char *m;
		uint64_t ts;

		if (line[0] == '#')
			continue;
		p.lines++;
		m = strstr(line, CRASH_MARKER_PREFIX);
		ts = line_ts(line);
		if (ts)
			p.last_ts = ts;
		if (!m)
			continue;
		line[strcspn(line, "\n")] = '\0';
		r = parse_marker(&p, m + strlen(CRASH_MARKER_PREFIX), ts);
		if (r < 0)
			break;
	}
	if (r == 0 && ferror(f))
		r = -EIO;
	if (r == 0 && p.boot_id && this_boot_id && streq(p.boot_id, this_boot_id)) {
		free(p.boot_id);
		p.boot_id = NULL;
	} else if (r == 0 && !p.boot_id && p.lines) {
		r = previous_from_record(cb, this_boot_id, &p);
	}
	if (r < 0) {
		crash_previous_done(&p);
		return r;
	}
	read_last_boot_info(cb, &p);
	p.nr_pairs = wallclock_pairs_sort(p.pairs, p.nr_pairs);
	*ret = p;
	return 0;
}

static int write_marker(struct crash_buffer *cb, const char *text)
{
	ssize_t n;

	if (cb->marker_fd < 0) {
		_cleanup_free_ char *path = NULL;

		if (strprintf(&path, "%s/trace_marker", cb->dir) < 0)
			return -ENOMEM;
		cb->marker_fd = open(path, O_WRONLY | O_CLOEXEC);
		if (cb->marker_fd < 0)
			return -errno;
	}
	/* one write() is one marker event */
	do
		n = write(cb->marker_fd, text, strlen(text));
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

static int write_clock_marker(struct crash_buffer *cb)
{
	char text[320];
	uint64_t real, boot;
	struct timespec ts;

	/* the wall clock read just before the write: the marker's time is within µs of it */
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	real = (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
	(void)clock_gettime(CLOCK_BOOTTIME, &ts);
	boot = (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
	(void)snprintf(text, sizeof(text), CRASH_MARKER_PREFIX "clock %" PRIu64 " %" PRIu64
		       " %s release %s\n", real, boot, cb->boot_id, cb->release);
	return write_marker(cb, text);
}

/*
 * A marker lands in the buffer of the CPU that writes it, and a busy CPU
 * overwrites its buffer within a second: one marker per CPU (the thread
 * moved to each CPU it may run on in turn), so that the least busy CPU
 * keeps the boot id and a recent clock pair whatever the others do.
 */
int crash_buffer_mark_clock(struct crash_buffer *cb)
{
	cpu_set_t allowed, one;
	int r = 0, k;

	assert(cb);

	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
		return write_clock_marker(cb);
	for (int cpu = 0; cpu < CPU_SETSIZE && r == 0; cpu++) {
		if (!CPU_ISSET(cpu, &allowed))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		/* a CPU gone offline meanwhile: skip it */
		if (sched_setaffinity(0, sizeof(one), &one) < 0)
			continue;
		r = write_clock_marker(cb);
	}
	k = sched_setaffinity(0, sizeof(allowed), &allowed);
	if (r == 0 && k < 0)
		r = -errno;
	return r;
}

int crash_buffer_mark_stop(struct crash_buffer *cb)
{
	int r;

	assert(cb);

	if (!cb->armed)
		return 0;
	r = crash_buffer_mark_clock(cb);
	if (r == 0)
		r = write_marker(cb, CRASH_MARKER_PREFIX "stop clean\n");
	return r;
}

int crash_buffer_exclude_pids(struct crash_buffer *cb, const int *pids, size_t n)
{
	struct buf b = { 0 };
	int r = 0;

	assert(cb);
	assert(pids || n == 0);

	for (size_t i = 0; r == 0 && i < n; i++)
		r = buf_printf(&b, "%s%d", i ? " " : "", pids[i]);
	if (r == 0 && n)
		r = write_in(cb, "set_event_notrace_pid", (const char *)b.data);
	buf_done(&b);
	return r;
}

/* One event: filter, stack trace (trigger unless every event has one), enable. */
static int arm_event(struct crash_buffer *cb, const struct config_event *ev)
{
	_cleanup_free_ char *base = NULL, *cmd = NULL;
	int r;

	if (strprintf(&base, "events/%s/%s/", ev->system, ev->name) < 0)
		return -ENOMEM;
	if (ev->filter) {
		_cleanup_free_ char *name = NULL;

		if (strprintf(&name, "%sfilter", base) < 0)
			return -ENOMEM;
		r = write_in(cb, name, ev->filter);
		if (r < 0)
			return r;
	}
	if (ev->stacktrace && !cb->cfg->stacktrace_all) {
		_cleanup_free_ char *name = NULL;

		/* the kernel fires triggers for events its filter discards */
		if (strprintf(&name, "%strigger", base) < 0 ||
		    (ev->filter ? strprintf(&cmd, "stacktrace if %s", ev->filter) :
				  strprintf(&cmd, "stacktrace")) < 0)
			return -ENOMEM;
		r = write_in(cb, name, cmd);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	free(cmd);
	cmd = NULL;
	if (strprintf(&cmd, "%senable", base) < 0)
		return -ENOMEM;
	return write_in(cb, cmd, "1");
}

static int write_record(struct crash_buffer *cb, const char *boot_id, const char *release,
			const char *version)
{
	_cleanup_free_ char *path = NULL;
	char text[512];

	if (record_path(cb, &path) < 0)
		return -ENOMEM;
	boot_line(text, sizeof(text), "", boot_id, release, version);
	return write_file_atomic(path, text, strlen(text));
}

/*
 * The armed record names the boot of whatever the buffer holds: it goes,
 * on disk, before the buffer is emptied, so that a record found later was
 * always written after the emptying it speaks for. Kept (a write of the
 * new one that fails leaves the old one in place), it would give this
 * boot's events to the boot that armed the buffer before. Returns 0 or
 * -errno: the buffer must then be left as it is.
 */
static int remove_record(struct crash_buffer *cb)
{
	_cleanup_free_ char *path = NULL, *tmp = NULL;

	if (record_path(cb, &path) < 0 || strprintf(&tmp, "%s.new", path) < 0)
		return -ENOMEM;
	(void)unlink(tmp);
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	return fsync_dir(cb->cfg->directory);
}

int crash_buffer_record_error(const struct crash_buffer *cb)
{
	return cb ? cb->record_error : 0;
}

int crash_buffer_arm(struct crash_buffer *cb, const char *boot_id, const char *release,
		     const char *version, const char *clock)
{
	char text[512];
	int r;

	assert(cb);

	cb->armed = false;
	(void)snprintf(cb->boot_id, sizeof(cb->boot_id), "%s", boot_id ?: "unknown");
	(void)snprintf(cb->release, sizeof(cb->release), "%s", release ?: "unknown");
	r = write_in(cb, "tracing_on", "0");
	/* the previous boot's data is saved by now (or given up): start empty */
	if (r == 0)
		r = remove_record(cb);
	if (r == 0)
		r = write_in(cb, "trace", "0");
	/* one clock with the recording: the two can be compared at the next boot */
	if (r == 0 && clock && *clock && !option_is(cb, "trace_clock", clock))
		r = write_in(cb, "trace_clock", clock);
	/*
	 * Never switched on here: Linux 6.12 dereferences the missing snapshot
	 * buffer of a boot-mapped instance when overwrite is set back to 1
	 * (an oops). It is on unless trace_options=nooverwrite was given at
	 * boot, which instances made at boot inherit.
	 */
	if (r == 0 && !option_is(cb, "options/overwrite", "1"))
		return -EUCLEAN;
	/* empty, not yet recording: whatever it holds from now on is this boot's */
	if (r == 0)
		cb->record_error = write_record(cb, boot_id, release, version);
	if (r == 0)
		r = write_in(cb, "options/stacktrace", cb->cfg->stacktrace_all ? "1" : "0");
	for (unsigned i = 0; r == 0 && i < cb->cfg->nr_events; i++)
		r = arm_event(cb, &cb->cfg->events[i]);
	if (r == 0)
		r = write_in(cb, "tracing_on", "1");
	if (r < 0)
		return r;
	boot_line(text, sizeof(text), CRASH_MARKER_PREFIX, boot_id, release, version);
	/* a marker holds at most TRACE_BUF_SIZE bytes (1 KiB): this fits */
	r = write_marker(cb, text);
	if (r == 0)
		r = crash_buffer_mark_clock(cb);
	if (r == 0)
		cb->armed = true;
	return r;
}

struct crash_buffer *crash_buffer_free(struct crash_buffer *cb)
{
	if (!cb)
		return NULL;
	if (cb->marker_fd >= 0)
		close(cb->marker_fd);
	tracefs_instance_free(cb->instance);
	free(cb->dir);
	free(cb);
	return NULL;
}
