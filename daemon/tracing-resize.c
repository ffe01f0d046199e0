/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A ring buffer is resized or given another sub-buffer size only while it
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
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>

#include "tracing-internal.h"
#include "util.h"

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && streq(s + n - k, suffix);
}

bool tracing_path_resizes(const char *path)
{
	return has_suffix(path, "/buffer_size_kb") || has_suffix(path, "/buffer_subbuf_size_kb");
}

/* The unread entries of one CPU's stats file, 0 when it cannot be read. */
static uint64_t stats_entries(const char *stats)
{
	_cleanup_free_ char *text = NULL;
	const char *p;

	if (read_file(stats, &text, NULL) < 0)
		return 0;
	p = strstr(text, "entries:");
	return p ? strtoull(p + strlen("entries:"), NULL, 10) : 0;
}

/* The unread entries of the buffer dir/trace empties: one CPU's or all of them. */
static uint64_t unread_entries(const char *dir)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	uint64_t n = 0;

	if (tracing_pathf(path, "%s/stats", dir) == 0 && tracing_exists(path))
		return stats_entries(path);
	if (tracing_pathf(path, "%s/per_cpu", dir) < 0)
		return 0;
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char stats[PATH_MAX];

		if (startswith(de->d_name, "cpu") &&
		    tracing_pathf(stats, "%s/per_cpu/%s/stats", dir, de->d_name) == 0)
			n += stats_entries(stats);
	}
	if (d)
		(void)closedir(d);
	return n;
}

int tracing_clear_for_resize(const char *path)
{
	_cleanup_close_ int fd = -1;
	char dir[PATH_MAX], trace[PATH_MAX];
	const char *slash = strrchr(path, '/');
	uint64_t unread;

	if (!slash || tracing_pathf(dir, "%.*s", (int)(slash - path), path) < 0 ||
	    tracing_pathf(trace, "%s/trace", dir) < 0)
		return -EINVAL;
	unread = unread_entries(dir);
	fd = open(trace, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return log_errno(LOG_WARNING, -errno, "cannot empty '%s' before changing '%s', continuing",
				 trace, path);
	if (unread)
		log_notice("%" PRIu64 " unread events discarded from '%s' before changing '%s'", unread,
			   dir, path);
	return 0;
}
