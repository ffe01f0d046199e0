/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The undo log of the tracing module: every tracefs value we change is
 * recorded with the value it had, before the write, so that
 * tracing_restore() (and a failed setup step) can put back exactly what we
 * changed, newest first, and nothing else. Also the plain reads and writes
 * of small tracefs files that the log is made of.
 */
#include <ctype.h>
#include <fcntl.h>

#include "log.h"
#include "tracing-internal.h"
#include "util.h"


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

	/* a buffer holding pages is never resized: the kernel's page counts go wrong */
	if (tracing_path_resizes(path))
		(void)tracing_clear_for_resize(path);
	fd = open(path, O_WRONLY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
	if (fd < 0)
		return -errno;
	return write_all(fd, value, strlen(value));
}

static void undo_entry_free(struct undo *u)
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
		undo_entry_free(&u);
		return -ENOMEM;
	}
	t->undo[t->n_undo++] = u;
	return 0;
}

static bool undo_has(const struct tracing *t, const char *path)
{
	for (size_t i = 0; i < t->n_undo; i++)
		if (streq(t->undo[i].path, path))
			return true;
	return false;
}

/*
 * tracing_on is switched off and on again outside the undo log (strict
 * resets, the flight trigger, the stop): what it held before our first
 * change is recorded first, so that it is put back last, once our events
 * are off.
 */
static int record_tracing_on(struct tracing *t)
{
	_cleanup_free_ char *cur = NULL;
	char path[PATH_MAX];
	int r;

	if (t->created)
		return 0;
	r = tracing_pathf(path, "%s/tracing_on", t->instance_dir);
	if (r < 0 || undo_has(t, path) || tracing_read_value(path, &cur) < 0)
		return r < 0 ? r : 0;
	return tracing_undo_push(t, path, cur, true);
}

int tracing_undo_record(struct tracing *t, const char *path, const char *value, bool truncate)
{
	int r;

	r = record_tracing_on(t);
	if (r >= 0)
		r = tracing_undo_push(t, path, value, truncate);
	if (r < 0)
		return r;
	tracing_saved_write(t);
	return 0;
}

int tracing_remember(struct tracing *t, const char *path)
{
	_cleanup_free_ char *cur = NULL;
	int r;

	if (undo_has(t, path))
		return 0;
	r = tracing_read_value(path, &cur);
	if (r < 0)
		return r;
	return tracing_undo_record(t, path, cur, true);
}

/* Put back everything recorded after mark, newest first. */
void tracing_undo_to(struct tracing *t, size_t mark)
{
	while (t->n_undo > mark) {
		struct undo *u = &t->undo[--t->n_undo];
		int r;

		r = tracing_write_value(u->path, u->value, u->truncate);
		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot restore '%s' to '%s', continuing", u->path,
				  u->value);
		undo_entry_free(u);
	}
	/* what was put back is off the file: it says what is left to put back, if anything */
	if (t->n_undo)
		tracing_saved_write(t);
	else
		tracing_saved_remove(t);
}

void tracing_undo_drop(struct tracing *t)
{
	while (t->n_undo > 0)
		undo_entry_free(&t->undo[--t->n_undo]);
}

/*
 * Write value and remember old as the value to restore. The undo entry is
 * recorded first so that a change that reached the kernel is never lost.
 */
int tracing_change(struct tracing *t, const char *path, const char *value, const char *old,
		  bool truncate)
{
	int r;

	r = tracing_undo_record(t, path, old, truncate);
	if (r < 0)
		return r;
	t->undo[t->n_undo - 1].want = strdup(value);
	if (!t->undo[t->n_undo - 1].want) {
		undo_entry_free(&t->undo[--t->n_undo]);
		return -ENOMEM;
	}
	r = tracing_write_value(path, value, truncate);
	if (r < 0)
		undo_entry_free(&t->undo[--t->n_undo]);
	return r;
}

/* Set a single-value file (option, enable, tracing_on) unless it already holds value. */
int tracing_set_value(struct tracing *t, const char *path, const char *value)
{
	_cleanup_free_ char *cur = NULL;
	int r;

	r = tracing_read_value(path, &cur);
	if (r < 0)
		return r;
	if (streq(cur, value)) {
		/* set by a run that did not stop cleanly: ours to watch from now on */
		for (size_t i = t->n_undo; i-- > 0;)
			if (streq(t->undo[i].path, path)) {
				if (!t->undo[i].want)
					t->undo[i].want = strdup(value);
				break;
			}
		return 0;
	}
	return tracing_change(t, path, value, cur, true);
}
