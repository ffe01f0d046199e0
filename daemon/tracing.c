/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Our tracefs instance: find (or mount) tracefs or use a given tree,
 * create or adopt the instance the config names, its CPUs and their
 * statistics, the checks before anything changes (config-check.c),
 * markers, tracing_on, and putting everything back on exit through the
 * undo log. libtracefs errors are converted to -errno here so the rest of
 * the daemon sees one convention. Setup is in tracing-setup.c, the files
 * for segments in tracing-files.c.
 */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <tracefs.h>

#include "config.h"
#include "config-check.h"
#include "log.h"
#include "tracing-internal.h"
#include "util.h"

#define TRACEFS_MOUNT_POINT "/sys/kernel/tracing"
#define CPU_POSSIBLE_PATH "/sys/devices/system/cpu/possible"
#define CPU_ONLINE_PATH "/sys/devices/system/cpu/online"

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

	r = tracing_read_value(path, &s);
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

	if (tracing_pathf(path, "%s/per_cpu", instance_dir) < 0)
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

	if (d && tracing_pathf(path, "%s/trace", d) == 0 && tracing_exists(path)) {
		s = strdup(d);
	} else {
		if (mount("nodev", TRACEFS_MOUNT_POINT, "tracefs", 0, NULL) < 0 && errno != EBUSY)
			return -errno;
		if (!tracing_exists(TRACEFS_MOUNT_POINT "/trace"))
			return -ENOENT;
		/* Keep libtracefs (instances, their files) on the same directory. */
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

	r = tracing_pathf(path, "%s/instances/%s", t->dir, t->name);
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
	const char *name;
	int r;

	assert(c);
	assert(ret);

	name = c->instance ? c->instance : "";
	if (*name && !instance_name_valid(name))
		return -EINVAL;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->config = c;
	t->marker_fd = -1;
	t->health_rl = (struct log_ratelimit)LOG_RATELIMIT_INIT;
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
	r = tracing_take_over(t);
	if (r < 0)
		return r;
	if (t->created)
		tracing_record_ours(t, true);
	r = tracing_saved_load(t);
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
	assert(t);
	return t->dir;
}

const char *tracing_instance_dir(const struct tracing *t)
{
	assert(t);
	return t->instance_dir;
}

struct tracefs_instance *tracing_instance(const struct tracing *t)
{
	assert(t);
	return t->instance;
}

const char *tracing_instance_name(const struct tracing *t)
{
	assert(t);
	return t->name;
}

int tracing_nr_cpus(const struct tracing *t)
{
	assert(t);
	return t->nr_cpus;
}

bool tracing_cpu_online(const struct tracing *t, int cpu)
{
	char path[PATH_MAX];
	bool has;

	assert(t);

	if (cpu < 0 || cpu >= t->nr_cpus)
		return false;
	/* A given tree stands for its own machine: a CPU is there if its directory is. */
	if (t->given_dir)
		return tracing_pathf(path, "%s/per_cpu/cpu%d", t->instance_dir, cpu) == 0 && tracing_exists(path);
	if (sysfs_cpulist(CPU_ONLINE_PATH, cpu, &has, NULL) < 0)
		return cpu == 0;
	return has;
}

bool tracing_has_stackmap(struct tracing *t)
{
	char path[PATH_MAX];

	assert(t);

	if (tracing_pathf(path, "%s/stack_map", t->dir) < 0 || !tracing_exists(path))
		return false;
	return tracing_pathf(path, "%s/options/stackmap", t->dir) == 0 && tracing_exists(path);
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

	assert(t);
	assert(ret);

	r = tracing_pathf(path, "%s/per_cpu/cpu%d/stats", t->instance_dir, cpu);
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
	assert(t);
	for (int cpu = 0; cpu < t->nr_cpus; cpu++) {
		struct tracing_cpu_stats st;

		if (tracing_cpu_stats(t, cpu, &st) >= 0 && st.entries > 0)
			return true;
	}
	return false;
}

int tracing_validate(struct tracing *t, char **ret_error)
{
	int r;

	assert(t);

	r = tracing_check_foreign(t, ret_error);
	if (r < 0)
		return r;
	return config_check_tracefs(t->config, t->dir, t->instance_dir, ret_error);
}

char *tracing_parse_clock(const char *s)
{
	const char *open = strchr(s, '['), *close;

	if (!open)
		return NULL;
	close = strchr(open, ']');
	if (!close)
		return NULL;
	return strndup(open + 1, (size_t)(close - open - 1));
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
		/* left running on purpose: the saved state stays for the run that puts it back */
		tracing_undo_drop(t);
		t->created = false;
		return;
	}
	/* tracing_on, recorded first, comes back last: our events are off by then */
	tracing_undo_to(t, 0);		/* and the saved state with it */
	if (!t->created)
		tracing_record_ours(t, false);
	if (!t->created)
		return;
	t->created = false;

	/* Our events are off and our triggers gone already; stop the rest. */
	if (tracing_pathf(path, "%s/tracing_on", t->instance_dir) == 0)
		(void)tracing_write_value(path, "0", true);
	if (t->given_dir)
		r = rmdir(t->instance_dir) < 0 ? -errno : 0;
	else
		r = tracefs_instance_destroy(t->instance) < 0 ? negative_errno() : 0;
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot remove tracing instance '%s', continuing",
			  t->instance_dir);
	else
		tracing_record_ours(t, false);
}

struct tracing *tracing_free(struct tracing *t)
{
	if (!t)
		return NULL;
	tracing_restore(t);
	tracing_undo_drop(t);
	free(t->undo);
	pthread_mutex_destroy(&t->health_rl.lock);
	tracefs_instance_free(t->instance);
	free(t->dir);
	free(t->instance_dir);
	free(t->name);
	free(t);
	return NULL;
}

int tracing_write_marker(struct tracing *t, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;

	assert(t);
	assert(text);

	if (t->marker_fd < 0) {
		char path[PATH_MAX];
		int r;

		r = tracing_pathf(path, "%s/trace_marker", t->instance_dir);
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

	assert(t);

	r = tracing_pathf(path, "%s/tracing_on", t->instance_dir);
	if (r < 0)
		return r;
	return tracing_write_value(path, on ? "1" : "0", true);
}

int tracing_stop(struct tracing *t)
{
	char path[PATH_MAX];
	int r;

	assert(t);

	/*
	 * What tracing_on held before our first change is in the undo log
	 * (recorded with that change), never what it holds now: a strict
	 * reset or the flight trigger may have switched it off.
	 */
	r = tracing_pathf(path, "%s/tracing_on", t->instance_dir);
	if (r < 0)
		return r;
	if (!t->config->keep_tracing) {
		r = tracing_remember(t, path);
		if (r < 0)
			return r;
	}
	return tracing_write_value(path, "0", true);
}

int tracing_page_size(struct tracing *t)
{
	_cleanup_free_ char *s = NULL;
	char path[PATH_MAX];
	unsigned long kb;

	assert(t);

	/* buffer_subbuf_size_kb appeared in 6.8; before it a sub-buffer is one page. */
	if (tracing_pathf(path, "%s/buffer_subbuf_size_kb", t->instance_dir) == 0 &&
	    tracing_read_value(path, &s) >= 0) {
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

	assert(t);

	if (tracing_pathf(path, "%s/trace_clock", t->instance_dir) < 0 ||
	    tracing_read_value(path, &text) < 0)
		return NULL;
	return tracing_parse_clock(text);
}

