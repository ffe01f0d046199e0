/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <tracefs.h>

#include "buf.h"
#include "config.h"
#include "config-check.h"
#include "log.h"
#include "tracing.h"
#include "util.h"

#define TRACEFS_MOUNT_POINT "/sys/kernel/tracing"
#define CPU_POSSIBLE_PATH "/sys/devices/system/cpu/possible"
#define CPU_ONLINE_PATH "/sys/devices/system/cpu/online"

/*
 * One change we made: writing value to path puts back what was there
 * before. Trigger files are written without O_TRUNC: a truncating open of
 * a trigger file removes every hist trigger on the event, including ones
 * that are not ours.
 */
struct undo {
	char *path;
	char *value;
	bool truncate;
};

struct tracing {
	const struct config *config;	/* borrowed from the caller */
	char *dir;			/* top-level tracefs directory */
	char *instance_dir;
	char *name;			/* "" for the top level */
	struct tracefs_instance *instance;
	bool given_dir;			/* dir passed in: plain files, no mount */
	bool created;			/* we created the instance: remove it at exit */
	int nr_cpus;
	int marker_fd;

	struct undo *undo;
	size_t n_undo;
	size_t cap_undo;
};


static int pathf(char buf[static PATH_MAX], const char *fmt, ...) _printf_(2, 3);
static int pathf(char buf[static PATH_MAX], const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Read a small tracefs file without its trailing newline. */
static int read_value(const char *path, char **ret)
{
	char *s;
	size_t len;
	int r;

	r = read_file(path, &s, &len);
	if (r < 0)
		return r;
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		s[--len] = '\0';
	*ret = s;
	return 0;
}

static int write_value(const char *path, const char *value, bool truncate)
{
	_cleanup_close_ int fd = -1;

	fd = open(path, O_WRONLY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
	if (fd < 0)
		return -errno;
	return write_all(fd, value, strlen(value));
}

static void undo_entry_free(struct undo *u)
{
	free(u->path);
	free(u->value);
}

static int undo_push(struct tracing *t, const char *path, const char *value, bool truncate)
{
	struct undo u = { .truncate = truncate };

	if (t->n_undo == t->cap_undo) {
		size_t cap = t->cap_undo ? t->cap_undo * 2 : 32;
		struct undo *n = reallocarray(t->undo, cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->undo = n;
		t->cap_undo = cap;
	}
	u.path = strdup(path);
	u.value = strdup(value);
	if (!u.path || !u.value) {
		undo_entry_free(&u);
		return -ENOMEM;
	}
	t->undo[t->n_undo++] = u;
	return 0;
}

/* Put back everything recorded after mark, newest first. */
static void undo_to(struct tracing *t, size_t mark)
{
	while (t->n_undo > mark) {
		struct undo *u = &t->undo[--t->n_undo];
		int r;

		r = write_value(u->path, u->value, u->truncate);
		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot restore '%s' to '%s', continuing", u->path,
				  u->value);
		undo_entry_free(u);
	}
}

static void undo_drop(struct tracing *t)
{
	while (t->n_undo > 0)
		undo_entry_free(&t->undo[--t->n_undo]);
}

/*
 * Write value and remember old as the value to restore. The undo entry is
 * recorded first so that a change that reached the kernel is never lost.
 */
static int change(struct tracing *t, const char *path, const char *value, const char *old,
		  bool truncate)
{
	int r;

	r = undo_push(t, path, old, truncate);
	if (r < 0)
		return r;
	r = write_value(path, value, truncate);
	if (r < 0)
		undo_entry_free(&t->undo[--t->n_undo]);
	return r;
}

/* Set a single-value file (option, enable, tracing_on) unless it already holds value. */
static int set_value(struct tracing *t, const char *path, const char *value)
{
	_cleanup_free_ char *cur = NULL;
	int r;

	r = read_value(path, &cur);
	if (r < 0)
		return r;
	if (streq(cur, value))
		return 0;
	return change(t, path, value, cur, true);
}

/* Set options/NAME of the instance; options the instance does not have are left alone. */
static int set_option(struct tracing *t, const char *name, bool on)
{
	char path[PATH_MAX];
	int r;

	r = pathf(path, "%s/options/%s", t->instance_dir, name);
	if (r < 0)
		return r;
	if (!exists(path))
		return 0;
	return set_value(t, path, on ? "1" : "0");
}

static bool option_is_on(const struct tracing *t, const char *name)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];

	if (pathf(path, "%s/options/%s", t->instance_dir, name) < 0)
		return false;
	return read_value(path, &cur) >= 0 && streq(cur, "1");
}

/* Parse a CPU list such as "0-3,5": the highest CPU, and whether cpu is in it. */
static int cpulist_parse(const char *s, int cpu, bool *ret_has, int *ret_max)
{
	bool has = false;
	int max = -1;

	while (*s && !isspace((unsigned char)*s)) {
		char *end;
		long a, b;

		errno = 0;
		a = strtol(s, &end, 10);
		if (end == s || a < 0 || a > INT_MAX || errno)
			return -EINVAL;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > INT_MAX || errno)
				return -EINVAL;
			s = end;
		}
		if (cpu >= a && cpu <= b)
			has = true;
		max = MAX(max, (int)b);
		if (*s == ',')
			s++;
		else if (*s && !isspace((unsigned char)*s))
			return -EINVAL;
	}
	if (ret_has)
		*ret_has = has;
	if (ret_max)
		*ret_max = max;
	return 0;
}

static int sysfs_cpulist(const char *path, int cpu, bool *ret_has, int *ret_max)
{
	_cleanup_free_ char *s = NULL;
	int r;

	r = read_value(path, &s);
	if (r < 0)
		return r;
	return cpulist_parse(s, cpu, ret_has, ret_max);
}

/* Highest per_cpu/cpuN of a tracefs tree plus one, or 0. */
static int count_tree_cpus(const char *instance_dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (pathf(path, "%s/per_cpu", instance_dir) < 0)
		return 0;
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char *end;
		long cpu;

		if (!startswith(de->d_name, "cpu"))
			continue;
		cpu = strtol(de->d_name + 3, &end, 10);
		if (end != de->d_name + 3 && !*end && cpu >= 0 && cpu < INT_MAX)
			n = MAX(n, (int)cpu + 1);
	}
	closedir(d);
	return n;
}

static bool instance_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len > NAME_MAX || streq(name, ".") || streq(name, ".."))
		return false;
	for (const char *p = name; *p; p++)
		if (!isgraph((unsigned char)*p) || *p == '/')
			return false;
	return true;
}

/* The mounted tracefs, mounting it if nothing is mounted. */
static int find_tracefs(char **ret)
{
	const char *d = tracefs_tracing_dir();
	char path[PATH_MAX];
	char *s;

	if (d && pathf(path, "%s/trace", d) == 0 && exists(path)) {
		s = strdup(d);
	} else {
		if (mount("nodev", TRACEFS_MOUNT_POINT, "tracefs", 0, NULL) < 0 && errno != EBUSY)
			return -errno;
		if (!exists(TRACEFS_MOUNT_POINT "/trace"))
			return -ENOENT;
		/* Keep libtracefs (instances, tracefs_cpu) on the same directory. */
		if (tracefs_set_tracing_dir((char *)TRACEFS_MOUNT_POINT) < 0)
			return negative_errno();
		s = strdup(TRACEFS_MOUNT_POINT);
	}
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static int open_instance(struct tracing *t)
{
	char path[PATH_MAX];
	int r;

	if (!*t->name) {
		t->instance_dir = strdup(t->dir);
		if (!t->instance_dir)
			return -ENOMEM;
		if (t->given_dir) {
			t->instance = tracefs_instance_alloc(t->dir, NULL);
			if (!t->instance)
				return negative_errno();
		}
		return 0;
	}

	r = pathf(path, "%s/instances/%s", t->dir, t->name);
	if (r < 0)
		return r;
	t->instance_dir = strdup(path);
	if (!t->instance_dir)
		return -ENOMEM;

	if (t->given_dir) {
		/* The same mkdir that tracefs_instance_create() does, under our directory. */
		if (mkdir(path, 0750) == 0)
			t->created = true;
		else if (errno != EEXIST)
			return -errno;
		t->instance = tracefs_instance_alloc(t->dir, t->name);
	} else {
		errno = 0;
		t->instance = tracefs_instance_create(t->name);
		if (t->instance)
			t->created = tracefs_instance_is_new(t->instance);
	}
	if (!t->instance)
		return negative_errno();
	return 0;
}

int tracing_open(const char *dir, const struct config *c, struct tracing **ret)
{
	_cleanup_(tracing_freep) struct tracing *t = NULL;
	const char *name = c->instance ? c->instance : "";
	int r;

	if (*name && !instance_name_valid(name))
		return -EINVAL;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->config = c;
	t->marker_fd = -1;
	t->given_dir = dir != NULL;
	t->name = strdup(name);
	if (!t->name)
		return -ENOMEM;

	if (dir) {
		t->dir = strdup(dir);
		if (!t->dir)
			return -ENOMEM;
	} else {
		r = find_tracefs(&t->dir);
		if (r < 0)
			return r;
	}

	r = open_instance(t);
	if (r < 0)
		return r;

	if (t->given_dir)
		t->nr_cpus = count_tree_cpus(t->instance_dir);
	if (t->nr_cpus <= 0) {
		int max;

		if (sysfs_cpulist(CPU_POSSIBLE_PATH, 0, NULL, &max) >= 0 && max >= 0)
			t->nr_cpus = max + 1;
		else
			t->nr_cpus = (int)MAX(sysconf(_SC_NPROCESSORS_CONF), 1L);
	}

	*ret = steal_ptr(t);
	return 0;
}

const char *tracing_dir(const struct tracing *t)
{
	return t->dir;
}

const char *tracing_instance_dir(const struct tracing *t)
{
	return t->instance_dir;
}

struct tracefs_instance *tracing_instance(const struct tracing *t)
{
	return t->instance;
}

const char *tracing_instance_name(const struct tracing *t)
{
	return t->name;
}

int tracing_nr_cpus(const struct tracing *t)
{
	return t->nr_cpus;
}

bool tracing_cpu_online(const struct tracing *t, int cpu)
{
	char path[PATH_MAX];
	bool has;

	if (cpu < 0 || cpu >= t->nr_cpus)
		return false;
	/* A given tree stands for its own machine: a CPU is there if its directory is. */
	if (t->given_dir)
		return pathf(path, "%s/per_cpu/cpu%d", t->instance_dir, cpu) == 0 && exists(path);
	if (sysfs_cpulist(CPU_ONLINE_PATH, cpu, &has, NULL) < 0)
		return cpu == 0;
	return has;
}

bool tracing_has_stackmap(struct tracing *t)
{
	char path[PATH_MAX];

	if (pathf(path, "%s/stack_map", t->dir) < 0 || !exists(path))
		return false;
	return pathf(path, "%s/options/stackmap", t->dir) == 0 && exists(path);
}

int tracing_cpu_stats(struct tracing *t, int cpu, struct tracing_cpu_stats *ret)
{
	static const struct {
		const char *key;
		size_t offset;
	} keys[] = {
		{ "entries", offsetof(struct tracing_cpu_stats, entries) },
		{ "overrun", offsetof(struct tracing_cpu_stats, overrun) },
		{ "commit overrun", offsetof(struct tracing_cpu_stats, commit_overrun) },
		{ "bytes", offsetof(struct tracing_cpu_stats, bytes) },
		{ "dropped events", offsetof(struct tracing_cpu_stats, dropped) },
		{ "read events", offsetof(struct tracing_cpu_stats, read_events) },
	};
	struct tracing_cpu_stats st = {};
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	char *line, *save = NULL;
	int r;

	r = pathf(path, "%s/per_cpu/cpu%d/stats", t->instance_dir, cpu);
	if (r < 0)
		return r;
	r = read_file(path, &text, NULL);
	if (r < 0)
		return r;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		*colon = '\0';
		for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
			if (streq(line, keys[i].key)) {
				uint64_t *v = (uint64_t *)((char *)&st + keys[i].offset);

				*v = strtoull(colon + 1, NULL, 10);
			}
		}
	}
	*ret = st;
	return 0;
}

bool tracing_buffer_has_data(struct tracing *t)
{
	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct tracing_cpu_stats st;

		if (tracing_cpu_stats(t, cpu, &st) >= 0 && st.entries > 0)
			return true;
	}
	return false;
}

int tracing_validate(struct tracing *t, char **ret_error)
{
	return config_check_tracefs(t->config, t->dir, t->instance_dir, ret_error);
}

static bool event_wants_stack(const struct config *c, const struct config_event *ev)
{
	return c->stacktrace_all || ev->stacktrace;
}

/*
 * Global options. Returns in *ret_option_stacks whether options/stacktrace
 * gives every event its stack, so no per-event trigger is needed.
 */
static int setup_options(struct tracing *t, bool *ret_option_stacks)
{
	const struct config *c = t->config;
	bool all_want = c->nr_events > 0, option_stacks = false;
	char path[PATH_MAX];
	int r;

	/*
	 * Streaming wants overwrite off: when we fall behind, the kernel drops
	 * new events and counts them ("dropped events"), instead of silently
	 * overwriting pages we have not read yet.
	 */
	r = set_option(t, "overwrite", c->record_mode == CONFIG_RECORD_FLIGHT);
	if (r < 0)
		return r;
	/* saved_tgids and saved_cmdlines are only filled while these are on. */
	r = set_option(t, "record-tgid", true);
	if (r < 0)
		return r;
	r = set_option(t, "record-cmd", true);
	if (r < 0)
		return r;

	/*
	 * stackmap = off records full stacks even when the boot command line
	 * turned the stack map on. Turning it on is the stack-map module's
	 * job: it takes its first snapshot around that moment.
	 */
	if (c->stackmap == CONFIG_STACKMAP_OFF) {
		r = set_option(t, "stackmap", false);
		if (r < 0)
			return r;
	}

	r = pathf(path, "%s/options/stacktrace", t->instance_dir);
	if (r < 0)
		return r;
	if (exists(path)) {
		for (unsigned i = 0; i < c->nr_events; i++)
			if (!event_wants_stack(c, &c->events[i]))
				all_want = false;
		if (c->stacktrace_all) {
			r = set_value(t, path, "1");
			option_stacks = true;
		} else if (option_is_on(t, "stacktrace")) {
			/* Already on (boot capture): keep it if it is what we want anyway. */
			option_stacks = all_want;
			if (!all_want)
				r = set_value(t, path, "0");
		}
		if (r < 0)
			return r;
	}
	*ret_option_stacks = option_stacks;
	return 0;
}

static bool has_stacktrace_trigger(const char *triggers)
{
	const char *p = triggers;

	while (p && *p) {
		if (*p != '#' && startswith(p, "stacktrace"))
			return true;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static int event_path(const struct tracing *t, const struct config_event *ev, const char *file,
		      char path[static PATH_MAX])
{
	return pathf(path, "%s/events/%s/%s/%s", t->instance_dir, ev->system, ev->name, file);
}

static int setup_filter(struct tracing *t, const struct config_event *ev)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];
	int r;

	r = event_path(t, ev, "filter", path);
	if (r < 0)
		return r;
	r = read_value(path, &cur);
	if (r < 0)
		return r;
	if (ev->filter && !streq(cur, ev->filter))
		return change(t, path, ev->filter, streq(cur, "none") ? "0" : cur, true);
	if (!ev->filter && !streq(cur, "none"))
		return change(t, path, "0", cur, true);
	return 0;
}

static int setup_trigger(struct tracing *t, const struct config_event *ev)
{
	_cleanup_free_ char *cur = NULL, *cmd = NULL;
	char path[PATH_MAX];
	int r;

	r = event_path(t, ev, "trigger", path);
	if (r < 0)
		return r;
	r = read_file(path, &cur, NULL);
	if (r < 0)
		return r;
	if (has_stacktrace_trigger(cur))
		return 0;
	/*
	 * A stacktrace trigger also fires for events that the event filter
	 * then discards: it needs the filter too, or the buffer fills with
	 * stacks that belong to no recorded event.
	 */
	if (ev->filter)
		r = strprintf(&cmd, "stacktrace if %s", ev->filter);
	else
		r = strprintf(&cmd, "stacktrace");
	if (r < 0)
		return r;
	return change(t, path, cmd, "!stacktrace", false);
}

static int setup_enable(struct tracing *t, const struct config_event *ev)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];
	int r;

	/*
	 * enable reads "0*" or "1*" while a trigger holds the event in soft
	 * mode (our stacktrace trigger does): only the digit says whether it
	 * records, and "0" is what turns it off again.
	 */
	r = event_path(t, ev, "enable", path);
	if (r < 0)
		return r;
	r = read_value(path, &cur);
	if (r < 0)
		return r;
	if (cur[0] == '1')
		return 0;
	return change(t, path, "1", "0", true);
}

/* Filter and trigger before enabling, so that no event is recorded without them. */
static int setup_event(struct tracing *t, const struct config_event *ev, bool trigger)
{
	int r;

	r = setup_filter(t, ev);
	if (r < 0)
		return r;
	if (trigger) {
		r = setup_trigger(t, ev);
		if (r < 0)
			return r;
	}
	return setup_enable(t, ev);
}

/*
 * Flight recorder trigger: the kernel's traceoff trigger stops the buffer
 * at the moment the event fires, so what led up to it stays in the buffer
 * until the daemon saves it (tracing_flight_triggered()).
 */
static int setup_flight_trigger(struct tracing *t)
{
	const char *spec = t->config->flight_trigger, *colon, *end;
	_cleanup_free_ char *cur = NULL, *cmd = NULL;
	char path[PATH_MAX];
	int r;

	if (!spec)
		return 0;
	colon = strchr(spec, ':');
	end = spec + strcspn(spec, " \t");
	if (!colon || colon > end)
		return -EINVAL;
	r = pathf(path, "%s/events/%.*s/%.*s/trigger", t->instance_dir, (int)(colon - spec), spec,
		  (int)(end - colon - 1), colon + 1);
	if (r < 0)
		return r;
	r = read_file(path, &cur, NULL);
	if (r < 0)
		return r;
	if (strstr(cur, "\ntraceoff") || startswith(cur, "traceoff"))
		return 0;
	/* "traceoff" or "traceoff if FILTER": the condition after the event name */
	r = strprintf(&cmd, "traceoff%s", end);
	if (r < 0)
		return r;
	return change(t, path, cmd, "!traceoff", false);
}

bool tracing_flight_triggered(struct tracing *t)
{
	_cleanup_free_ char *on = NULL;
	char path[PATH_MAX];

	if (!t->config->flight_trigger || pathf(path, "%s/tracing_on", t->instance_dir) < 0 ||
	    read_value(path, &on) < 0)
		return false;
	return streq(on, "0");
}

int tracing_setup_events(struct tracing *t)
{
	const struct config *c = t->config;
	size_t mark = t->n_undo;
	bool option_stacks = false;
	char path[PATH_MAX];
	int r;

	/*
	 * A trigger set before its event is enabled fires in soft mode and
	 * records stacks without events: in an instance we created (it holds
	 * nothing yet) tracing stays off until everything is in place. An
	 * adopted instance keeps running, so that boot capture loses nothing.
	 */
	if (t->created) {
		r = pathf(path, "%s/tracing_on", t->instance_dir);
		if (r == 0)
			r = set_value(t, path, "0");
		if (r < 0)
			goto fail;
	}
	r = setup_options(t, &option_stacks);
	if (r < 0)
		goto fail;
	for (unsigned i = 0; i < c->nr_events; i++) {
		const struct config_event *ev = &c->events[i];

		r = setup_event(t, ev, !option_stacks && event_wants_stack(c, ev));
		if (r < 0)
			goto fail;
	}
	r = setup_flight_trigger(t);
	if (r < 0)
		goto fail;
	r = pathf(path, "%s/tracing_on", t->instance_dir);
	if (r < 0)
		goto fail;
	r = set_value(t, path, "1");
	if (r < 0)
		goto fail;
	return 0;

fail:
	undo_to(t, mark);
	return r;
}

/*
 * buffer_size_kb reads "N", "N (expanded: M)" while the top-level buffer
 * is still at its boot minimum (M is what it grows to when tracing
 * starts), or "X" when CPUs differ. Returns the effective size or 0 for X.
 */
static int parse_buffer_size(const char *s, uint64_t *ret)
{
	const char *exp = strstr(s, "(expanded:");
	char *end;

	if (streq(s, "X")) {
		*ret = 0;
		return 0;
	}
	if (exp)
		s = exp + strlen("(expanded:");
	errno = 0;
	*ret = strtoull(s, &end, 10);
	if (end == s || errno)
		return -EINVAL;
	return 0;
}

static int setup_buffer_size(struct tracing *t, uint64_t want)
{
	_cleanup_free_ char *cur = NULL, *subbuf = NULL;
	char path[PATH_MAX], value[32], old[32];
	uint64_t size, page_kb = 4;
	int r;

	r = pathf(path, "%s/buffer_subbuf_size_kb", t->instance_dir);
	if (r < 0)
		return r;
	if (read_value(path, &subbuf) >= 0)
		page_kb = MAX(strtoull(subbuf, NULL, 10), 1ULL);

	r = pathf(path, "%s/buffer_size_kb", t->instance_dir);
	if (r < 0)
		return r;
	r = read_value(path, &cur);
	if (r < 0)
		return r;
	r = parse_buffer_size(cur, &size);
	if (r < 0)
		return r;
	/* The kernel rounds up to whole sub-buffers: within one of them is the same size. */
	if (size >= want && size - want <= page_kb)
		return 0;

	if (size == 0) {
		/* Per-CPU sizes differ: remember each of them. */
		for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
			char cpath[PATH_MAX];
			_cleanup_free_ char *v = NULL;

			r = pathf(cpath, "%s/per_cpu/cpu%d/buffer_size_kb", t->instance_dir, cpu);
			if (r < 0)
				return r;
			if (read_value(cpath, &v) < 0)
				continue;
			r = undo_push(t, cpath, v, true);
			if (r < 0)
				return r;
		}
		(void)snprintf(value, sizeof(value), "%" PRIu64, want);
		return write_value(path, value, true);
	}

	(void)snprintf(value, sizeof(value), "%" PRIu64, want);
	(void)snprintf(old, sizeof(old), "%" PRIu64, size);
	return change(t, path, value, old, true);
}

static char *parse_clock(const char *s)
{
	const char *open = strchr(s, '['), *close;

	if (!open)
		return NULL;
	close = strchr(open, ']');
	if (!close)
		return NULL;
	return strndup(open + 1, (size_t)(close - open - 1));
}

static int setup_clock(struct tracing *t, const char *want)
{
	_cleanup_free_ char *text = NULL, *cur = NULL;
	char path[PATH_MAX];
	int r;

	r = pathf(path, "%s/trace_clock", t->instance_dir);
	if (r < 0)
		return r;
	r = read_value(path, &text);
	if (r < 0)
		return r;
	cur = parse_clock(text);
	if (!cur)
		return -EINVAL;
	if (streq(cur, want))
		return 0;
	return change(t, path, want, cur, true);
}

int tracing_setup_buffer(struct tracing *t)
{
	const struct config *c = t->config;
	size_t mark = t->n_undo;
	int r = 0;

	if (c->buffer_size_kb > 0)
		r = setup_buffer_size(t, c->buffer_size_kb);
	if (r >= 0 && c->clock && *c->clock)
		r = setup_clock(t, c->clock);
	if (r < 0)
		undo_to(t, mark);
	return r < 0 ? r : 0;
}

void tracing_restore(struct tracing *t)
{
	char path[PATH_MAX];
	int r;

	if (!t)
		return;
	/* Open files pin an instance: rmdir would fail with EBUSY. */
	if (t->marker_fd >= 0)
		(void)close(t->marker_fd);
	t->marker_fd = -1;

	if (t->config->keep_tracing) {
		undo_drop(t);
		t->created = false;
		return;
	}
	undo_to(t, 0);
	if (!t->created)
		return;
	t->created = false;

	/* Our events are off and our triggers gone already; stop the rest. */
	if (pathf(path, "%s/tracing_on", t->instance_dir) == 0)
		(void)write_value(path, "0", true);
	if (t->given_dir)
		r = rmdir(t->instance_dir) < 0 ? -errno : 0;
	else
		r = tracefs_instance_destroy(t->instance) < 0 ? negative_errno() : 0;
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot remove tracing instance '%s', continuing",
			  t->instance_dir);
}

struct tracing *tracing_free(struct tracing *t)
{
	if (!t)
		return NULL;
	tracing_restore(t);
	undo_drop(t);
	free(t->undo);
	tracefs_instance_free(t->instance);
	free(t->dir);
	free(t->instance_dir);
	free(t->name);
	free(t);
	return NULL;
}

/* The format of every event we record, and of the ftrace entries in stacks. */
static const struct {
	const char *system;
	const char *name;
	bool required;
} ftrace_formats[] = {
	{ "ftrace", "kernel_stack", true },
	{ "ftrace", "stack_id", false },	/* only with the stackmap series */
	{ "ftrace", "print", true },
	{ "ftrace", "bprint", false },
};

static int emit_file(const struct tracing *t, const char *name, bool required,
		     int (*cb)(const char *, const void *, size_t, void *), void *userdata)
{
	_cleanup_free_ char *data = NULL;
	char path[PATH_MAX];
	size_t len;
	int r;

	r = pathf(path, "%s/%s", t->dir, name);
	if (r < 0)
		return r;
	r = read_file(path, &data, &len);
	if (r == -ENOENT && !required)
		return 0;
	if (r < 0)
		return r;
	/* segments name the page and event headers without the directory */
	r = cb(startswith(name, "events/header_") ? name + strlen("events/") : name, data, len,
	       userdata);
	return r < 0 ? r : 0;
}

static int emit_format(const struct tracing *t, const char *system, const char *event,
		       bool required, int (*cb)(const char *, const void *, size_t, void *),
		       void *userdata)
{
	char name[PATH_MAX];
	int r;

	r = pathf(name, "events/%s/%s/format", system, event);
	if (r < 0)
		return r;
	return emit_file(t, name, required, cb, userdata);
}

static bool is_config_event(const struct config *c, const char *system, const char *name)
{
	for (unsigned i = 0; i < c->nr_events; i++)
		if (streq(c->events[i].system, system) && streq(c->events[i].name, name))
			return true;
	return false;
}

int tracing_collect_files(struct tracing *t,
			  int (*cb)(const char *name, const void *data, size_t len, void *userdata),
			  void *userdata)
{
	const struct config *c = t->config;
	int r;

	r = emit_file(t, "events/header_page", true, cb, userdata);
	if (r < 0)
		return r;
	r = emit_file(t, "events/header_event", true, cb, userdata);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < c->nr_events; i++) {
		r = emit_format(t, c->events[i].system, c->events[i].name, true, cb, userdata);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ftrace_formats); i++) {
		if (is_config_event(c, ftrace_formats[i].system, ftrace_formats[i].name))
			continue;
		r = emit_format(t, ftrace_formats[i].system, ftrace_formats[i].name,
				ftrace_formats[i].required, cb, userdata);
		if (r < 0)
			return r;
	}
	r = emit_file(t, "printk_formats", false, cb, userdata);
	if (r < 0)
		return r;
	return tracing_collect_tasks(t, cb, userdata);
}

int tracing_collect_tasks(struct tracing *t,
			  int (*cb)(const char *name, const void *data, size_t len, void *userdata),
			  void *userdata)
{
	int r;

	r = emit_file(t, "saved_cmdlines", true, cb, userdata);
	if (r < 0)
		return r;
	return emit_file(t, "saved_tgids", false, cb, userdata);
}

static int format_id(const char *format)
{
	const char *p = format;

	for (; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (startswith(p, "ID:")) {
			char *end;
			long id;

			errno = 0;
			id = strtol(p + 3, &end, 10);
			if (end == p + 3 || errno || id < 0 || id > INT_MAX)
				return -EINVAL;
			return (int)id;
		}
	}
	return -EINVAL;
}

int tracing_event_id(struct tracing *t, const char *system, const char *name)
{
	_cleanup_free_ char *format = NULL;
	char path[PATH_MAX];
	int r;

	r = pathf(path, "%s/events/%s/%s/format", t->dir, system, name);
	if (r < 0)
		return r;
	r = read_file(path, &format, NULL);
	if (r < 0)
		return r;
	return format_id(format);
}

int tracing_exclude_pids(struct tracing *t, const int *pids, size_t n)
{
	_cleanup_free_ char *old = NULL;
	char path[PATH_MAX];
	struct buf next = { 0 };
	int r;

	r = pathf(path, "%s/set_event_notrace_pid", t->instance_dir);
	if (r < 0)
		return r;
	if (!exists(path))
		return -EOPNOTSUPP;
	r = read_value(path, &old);
	if (r < 0)
		return r;
	/* the file lists one pid per line; writing accepts any white space */
	for (char *p = old; *p; p++)
		if (*p == '\n')
			*p = ' ';
	r = buf_printf(&next, "%s", old);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = buf_printf(&next, " %d", pids[i]);
	if (r == 0)
		r = change(t, path, (const char *)next.data, old, true);
	buf_done(&next);
	return r;
}

int tracing_write_marker(struct tracing *t, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;

	if (t->marker_fd < 0) {
		char path[PATH_MAX];
		int r;

		r = pathf(path, "%s/trace_marker", t->instance_dir);
		if (r < 0)
			return r;
		t->marker_fd = open(path, O_WRONLY | O_CLOEXEC);
		if (t->marker_fd < 0)
			return -errno;
	}
	/* One write() is one marker event: never split it. */
	do
		n = write(t->marker_fd, text, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EMSGSIZE;
}

int tracing_set_on(struct tracing *t, bool on)
{
	char path[PATH_MAX];
	int r;

	r = pathf(path, "%s/tracing_on", t->instance_dir);
	if (r < 0)
		return r;
	return write_value(path, on ? "1" : "0", true);
}

int tracing_page_size(struct tracing *t)
{
	_cleanup_free_ char *s = NULL;
	char path[PATH_MAX];
	unsigned long kb;

	/* buffer_subbuf_size_kb appeared in 6.8; before it a sub-buffer is one page. */
	if (pathf(path, "%s/buffer_subbuf_size_kb", t->instance_dir) == 0 &&
	    read_value(path, &s) >= 0) {
		kb = strtoul(s, NULL, 10);
		if (kb > 0 && kb <= INT_MAX / 1024)
			return (int)(kb * 1024);
	}
	return getpagesize();
}

char *tracing_clock(struct tracing *t)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];

	if (pathf(path, "%s/trace_clock", t->instance_dir) < 0 || read_value(path, &text) < 0)
		return NULL;
	return parse_clock(text);
}
