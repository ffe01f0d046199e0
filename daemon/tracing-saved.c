/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tracefs state before the daemon's first change, on disk: the undo
 * log (tracing-undo.c) is written next to the control socket
 * ("SOCKET.tracefs", format in doc/tracefs-state.md) each time it grows,
 * atomically and before the change it records is made, and removed once a
 * clean stop has put everything back. A run that finds the file was
 * preceded by one that did not stop cleanly (kill -9, a crash, a power
 * cut with a persistent runtime directory): for its own instance it
 * adopts the file as the original state, which its clean stop puts back;
 * for another instance (the configuration changed), or one it creates
 * afresh, it puts the saved values back at once.
 */
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "log.h"
#include "tracing-internal.h"
#include "util.h"

#define SAVED_MAGIC "stackmapd-tracefs-state 1"
#define SAVED_MAX_SIZE (4u << 20)

static int saved_path(const struct tracing *t, char path[static PATH_MAX])
{
	const char *sock = t->config->socket_path;

	if (!sock || !*sock)
		return -ENOENT;
	return tracing_pathf(path, "%s.tracefs", sock);
}

/* path relative to the tracefs directory, or NULL if it is not under it. */
static const char *relative(const struct tracing *t, const char *path)
{
	size_t n = strlen(t->dir);

	if (strncmp(path, t->dir, n) != 0 || path[n] != '/')
		return NULL;
	return path + n + 1;
}

/* Append s with backslash, newline, tab and other control bytes escaped. */
static int put_escaped(struct buf *b, const char *s)
{
	int r = 0;

	for (; *s && r >= 0; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\\')
			r = buf_printf(b, "\\\\");
		else if (c == '\n')
			r = buf_printf(b, "\\n");
		else if (c == '\t')
			r = buf_printf(b, "\\t");
		else if (c < 0x20 || c == 0x7f)
			r = buf_printf(b, "\\x%02x", c);
		else
			r = buf_append(b, s, 1);
	}
	return r;
}

/* Undo put_escaped() in place. Returns 0 or -EBADMSG. */
static int unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (*s != '\\') {
			*w++ = *s;
			continue;
		}
		s++;
		if (*s == '\\')
			*w++ = '\\';
		else if (*s == 'n')
			*w++ = '\n';
		else if (*s == 't')
			*w++ = '\t';
		else if (*s == 'x' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
			char hex[3] = { s[1], s[2], 0 };

			*w++ = (char)strtoul(hex, NULL, 16);
			s += 2;
		} else
			return -EBADMSG;
	}
	*w = '\0';
	return 0;
}

static int format(const struct tracing *t, struct buf *b)
{
	int r;

	r = buf_printf(b, "%s\ninstance\t", SAVED_MAGIC);
	if (r >= 0)
		r = put_escaped(b, t->name);
	if (r >= 0)
		r = buf_printf(b, "\n");
	for (size_t i = 0; r >= 0 && i < t->n_undo; i++) {
		const struct undo *u = &t->undo[i];
		const char *rel = relative(t, u->path);

		if (!rel)
			continue;
		r = buf_printf(b, "%s\t", u->truncate ? "set" : "append");
		if (r >= 0)
			r = put_escaped(b, rel);
		if (r >= 0)
			r = buf_printf(b, "\t");
		if (r >= 0)
			r = put_escaped(b, u->value);
		if (r >= 0)
			r = buf_printf(b, "\n");
	}
	return r;
}

void tracing_saved_write(struct tracing *t)
{
	struct buf b = { 0 };
	char path[PATH_MAX];
	int r;

	if (saved_path(t, path) < 0)
		return;
	r = format(t, &b);
	if (r >= 0)
		r = write_file_atomic(path, b.data, b.len);
	buf_done(&b);
	if (r < 0 && !t->saved_failed) {
		t->saved_failed = true;
		log_errno(LOG_WARNING, r, "cannot save the tracefs state in '%s': after a crash the "
			  "next start cannot put it back, continuing", path);
	}
}

void tracing_saved_remove(struct tracing *t)
{
	char path[PATH_MAX];

	if (saved_path(t, path) < 0)
		return;
	if (unlink(path) < 0 && errno != ENOENT)
		log_errno(LOG_WARNING, -errno, "cannot remove '%s', continuing", path);
}

/* A file that is not ours to trust is kept aside for a human, never used nor deleted. */
static void set_aside(const char *path, const char *why)
{
	_cleanup_free_ char *aside = NULL;

	if (strprintf(&aside, "%s.damaged", path) < 0 || rename(path, aside) < 0) {
		log_errno(LOG_ERR, -errno, "'%s' %s and cannot be set aside; tracefs settings of a run "
			  "that did not stop cleanly may be left, continuing", path, why);
		return;
	}
	log_err("'%s' %s: kept as '%s'; tracefs settings of a run that did not stop cleanly may "
		"be left, continuing", path, why, aside);
}

/*
 * The file is written into tracefs by root at start: it is trusted only
 * when no one but us could have put it there, that is when it and its
 * directory belong to root (or to us) and neither is writable by a group
 * or by others. A file that fails the check is left as it is (renaming it
 * inside a directory others control is no safer) and not used. Returns 0
 * when it can be trusted, -ENOENT when there is none, else -EPERM (logged).
 */
static int check_trusted(const char *path)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(path, '/');
	struct stat st;
	uid_t me = geteuid();

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? -ENOENT : log_errno(LOG_ERR, -errno, "cannot check '%s': the "
							      "saved tracefs state is not used", path);
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != me) || (st.st_mode & 022)) {
		log_err("'%s' is not a regular file of root's that only its owner can write (uid %u, "
			"mode %04o): the saved tracefs state is not used, nor put back; remove the file, "
			"or move [control] socket into a directory of root's", path,
			(unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	if (stat(dir, &st) < 0)
		return log_errno(LOG_ERR, -errno, "cannot check '%s': the saved tracefs state '%s' is "
				 "not used", dir, path);
	if ((st.st_uid != 0 && st.st_uid != me) || (st.st_mode & 022)) {
		log_err("the directory '%s' of the saved tracefs state '%s' does not belong to root or is "
			"writable by a group or by others (uid %u, mode %04o): the state is not used, nor "
			"put back; move [control] socket into a directory of root's", dir, path,
			(unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

struct saved_entry {
	bool truncate;
	char *rel, *value;
};

/* Parse the file's lines into entries (pointing into text). Returns the count or -EBADMSG. */
static int parse(char *text, char **ret_instance, struct saved_entry *v, size_t max)
{
	char *line, *save = NULL;
	size_t n = 0;
	bool header = false;

	*ret_instance = NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f1 = line, *f2, *f3;

		if (!header) {
			if (!streq(line, SAVED_MAGIC))
				return -EBADMSG;
			header = true;
			continue;
		}
		f2 = strchr(f1, '\t');
		if (!f2)
			return -EBADMSG;
		*f2++ = '\0';
		if (streq(f1, "instance")) {
			if (*ret_instance || unescape(f2) < 0)
				return -EBADMSG;
			*ret_instance = f2;
			continue;
		}
		f3 = strchr(f2, '\t');
		if (!f3 || n == max || (!streq(f1, "set") && !streq(f1, "append")))
			return -EBADMSG;
		*f3++ = '\0';
		if (unescape(f2) < 0 || unescape(f3) < 0 || !*f2 || f2[0] == '/' ||
		    strstr(f2, "..") || strchr(f2, '\n'))
			return -EBADMSG;
		v[n++] = (struct saved_entry){ .truncate = streq(f1, "set"), .rel = f2, .value = f3 };
	}
	return header && *ret_instance ? (int)n : -EBADMSG;
}

int tracing_saved_load(struct tracing *t)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ struct saved_entry *v = NULL;
	char path[PATH_MAX], *instance;
	size_t len, max;
	int n, r;

	if (saved_path(t, path) < 0)
		return 0;
	if (check_trusted(path) < 0)
		return 0;
	r = read_file(path, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		set_aside(path, "cannot be read");
		return 0;
	}
	if (len > SAVED_MAX_SIZE || strlen(text) != len) {
		set_aside(path, "is not a saved tracefs state");
		return 0;
	}
	max = len / 8 + 1;
	v = calloc(max, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = parse(text, &instance, v, max);
	if (n < 0) {
		set_aside(path, "is not a saved tracefs state");
		return 0;
	}
	if (!t->created && streq(instance, t->name)) {
		/* ours to adopt: its values go first in the undo log, put back last */
		for (int i = 0; i < n; i++) {
			char full[PATH_MAX];

			r = tracing_pathf(full, "%s/%s", t->dir, v[i].rel);
			if (r >= 0)
				r = tracing_undo_push(t, full, v[i].value, v[i].truncate);
			if (r < 0)
				return r;
		}
		log_notice("found the tracefs state saved by a run of stackmapd that did not stop "
			   "cleanly ('%s', %d values): it is put back at stop", path, n);
		return 0;
	}
	/*
	 * Another instance's (or ours, made afresh: what was saved inside it
	 * went with the old one): put it back now, newest first.
	 */
	for (int i = n - 1; i >= 0; i--) {
		char full[PATH_MAX];

		if (t->created && streq(instance, t->name) && *t->name &&
		    startswith(v[i].rel, "instances/") &&
		    startswith(v[i].rel + strlen("instances/"), t->name) &&
		    v[i].rel[strlen("instances/") + strlen(t->name)] == '/')
			continue;
		r = tracing_pathf(full, "%s/%s", t->dir, v[i].rel);
		if (r >= 0 && tracing_exists(full))
			r = tracing_write_value(full, v[i].value, v[i].truncate);
		if (r < 0)
			log_errno(LOG_WARNING, r, "cannot restore '%s' to '%s', continuing", full,
				  v[i].value);
	}
	log_notice("put back the tracefs state saved by a run of stackmapd that did not stop "
		   "cleanly (instance '%s', %d values)", instance, n);
	tracing_saved_remove(t);
	return 0;
}
