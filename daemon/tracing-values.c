/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bottom of the tracing module, used by every other file of it and
 * using none: paths of tracefs files, plain reads and writes of their
 * small values, and the entries of the undo log (what a change must put
 * back), which tracing-undo.c (when to record and put back) and
 * tracing-saved.c (the log on disk, adopted at open) both fill.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>

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

int tracing_write_value(const char *path, const char *value, bool truncate)
{
	_cleanup_close_ int fd = -1;

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
