/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bottom of the tracing module, used by every other file of it and
 * using none: paths of tracefs files, plain reads and writes of their
 * small values (a write that resizes a ring buffer empties it first),
 * and the entries of the undo log (what a change must put
 * back), which tracing-undo.c (when to record and put back) and
 * tracing-saved.c (the log on disk, adopted at open) both fill.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>

#include "tracing-internal.h"
#include "util.h"

int tracing_pathf(char buf[static PATH_MAX], const char *fmt, ...)
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

bool tracing_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Read a small tracefs file without its trailing newline. */
int tracing_read_value(const char *path, char **ret)
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

/*
 * Writes that resize a buffer. A ring buffer is resized or given another sub-buffer size only while it
 * is empty. The kernel keeps, per CPU, how many pages the writer touched,
 * how many it lost (overwritten, or removed by a resize) and how many the
 * reader took, and checks them against each other whenever a reader waits
 * for a fill level (ring_buffer_nr_dirty_pages(): "WARN_ON_ONCE(cnt <
 * lost)", "WARN_ON_ONCE(read > cnt + 1)"). Linux 6.12 books a removed
 * page that holds events as lost even when the reader took it already,
 * and a sub-buffer change replaces the pages under counts that describe
 * the old ones: after either, the next overrun with a waiting reader
 * makes the kernel warn (a panic with panic_on_warn). Emptying the buffer
 * first (a truncating open of its `trace` file) zeroes the three counts
 * and every page's entries, so that the change leaves them consistent.
 */
static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && streq(s + n - k, suffix);
}

static bool path_resizes(const char *path)
{
	return has_suffix(path, "/buffer_size_kb") || has_suffix(path, "/buffer_subbuf_size_kb");
}

struct counts {
	uint64_t unread, read, lost;
};

static uint64_t field(const char *text, const char *name)
{
	const char *p = strstr(text, name);

	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

/* Add one CPU's stats file: what emptying the buffer zeroes. */
static void add_stats(const char *stats, struct counts *c)
{
	_cleanup_free_ char *text = NULL;

	if (read_file(stats, &text, NULL) < 0)
		return;
	c->unread += field(text, "\nentries:") + (startswith(text, "entries:") ?
						  strtoull(text + strlen("entries:"), NULL, 10) : 0);
	c->read += field(text, "\nread events:");
	c->lost += field(text, "\noverrun:") + field(text, "\ndropped events:");
}

/* The counts of the buffer dir/trace empties: one CPU's or all of them. */
static struct counts buffer_counts(const char *dir)
{
	struct counts c = { 0 };
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (tracing_pathf(path, "%s/stats", dir) == 0 && tracing_exists(path)) {
		add_stats(path, &c);
		return c;
	}
	if (tracing_pathf(path, "%s/per_cpu", dir) < 0)
		return c;
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char stats[PATH_MAX];

		if (startswith(de->d_name, "cpu") &&
		    tracing_pathf(stats, "%s/per_cpu/%s/stats", dir, de->d_name) == 0)
			add_stats(stats, &c);
	}
	if (d)
		(void)closedir(d);
	return c;
}

static int clear_for_resize(const char *path)
{
	_cleanup_close_ int fd = -1;
	char dir[PATH_MAX], trace[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct counts c;

	if (!slash || tracing_pathf(dir, "%.*s", (int)(slash - path), path) < 0 ||
	    tracing_pathf(trace, "%s/trace", dir) < 0)
		return -EINVAL;
	c = buffer_counts(dir);
	fd = open(trace, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return log_errno(LOG_WARNING, -errno, "cannot empty '%s' before changing '%s', continuing",
				 trace, path);
	/* the kernel's counts go with it: said here, for whoever compares them */
	log_msg(c.unread ? LOG_NOTICE : LOG_INFO, "emptied the ring buffer '%s' before writing '%s': "
		"the kernel had read %" PRIu64 " events and lost %" PRIu64 "; %" PRIu64 " unread "
		"discarded", dir, strrchr(path, '/') + 1, c.read, c.lost, c.unread);
	return 0;
}

int tracing_write_value(const char *path, const char *value, bool truncate)
{
	_cleanup_close_ int fd = -1;

	/* a buffer holding pages is never resized: the kernel's page counts go wrong */
	if (path_resizes(path))
		(void)clear_for_resize(path);
	fd = open(path, O_WRONLY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
	if (fd < 0)
		return -errno;
	return write_all(fd, value, strlen(value));
}

void tracing_undo_entry_free(struct undo *u)
{
	free(u->path);
	free(u->value);
	free(u->want);
}

int tracing_undo_push(struct tracing *t, const char *path, const char *value, bool truncate)
{
	struct undo u = { .truncate = truncate };

	if (GREEDY_REALLOC(t->undo, t->cap_undo, t->n_undo + 1) < 0)
		return -ENOMEM;
	u.path = strdup(path);
	u.value = strdup(value);
	if (!u.path || !u.value) {
		tracing_undo_entry_free(&u);
		return -ENOMEM;
	}
	t->undo[t->n_undo++] = u;
	return 0;
}
