/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whose is an instance that already exists when the daemon starts. tracefs
 * cannot hold a mark of ours, so the daemon records the name of each
 * instance it creates in a file next to its control socket
 * ("SOCKET.instance"), and removes the file with the instance. An existing
 * instance named there is the leftover of a run that did not stop cleanly:
 * it is taken over completely (removed and created afresh, so that none of
 * its settings survive). Any other existing instance is adopted only if it
 * holds nothing that would change what is recorded or that the daemon
 * would have to leave as found while changing it: no event enabled, no
 * filter, no trigger. Otherwise startup refuses, changing nothing. With
 * keep_tracing = yes an instance of ours is left running at stop and
 * adopted as it is at the next start, so that its buffer is drained.
 */
#include <dirent.h>
#include <fcntl.h>

#include <tracefs.h>

#include "config.h"
#include "log.h"
#include "tracing-internal.h"
#include "util.h"

static int record_path(const struct tracing *t, char path[static PATH_MAX])
{
	const char *sock = t->config->socket_path;

	if (!sock || !*sock)
		return -ENOENT;
	return tracing_pathf(path, "%s.instance", sock);
}

/* Whether the record file names this instance: proof that a run of ours created it. */
static bool recorded_as_ours(const struct tracing *t)
{
	_cleanup_free_ char *name = NULL;
	char path[PATH_MAX];

	if (record_path(t, path) < 0 || tracing_read_value(path, &name) < 0)
		return false;
	return streq(name, t->name);
}

void tracing_record_ours(struct tracing *t, bool ours)
{
	char path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	int r;

	if (t->given_dir || !*t->name || record_path(t, path) < 0)
		return;
	if (!ours) {
		if (unlink(path) < 0 && errno != ENOENT)
			log_errno(LOG_WARNING, -errno, "cannot remove '%s', continuing", path);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	r = fd < 0 ? -errno : write_all(fd, t->name, strlen(t->name));
	if (r >= 0)
		r = write_all(fd, "\n", 1);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot record instance '%s' in '%s': a crash would leave "
			  "it for the next start to refuse, continuing", t->name, path);
}

int tracing_take_over(struct tracing *t)
{
	if (t->given_dir || t->created || !*t->name || !recorded_as_ours(t))
		return 0;
	t->ours = true;
	/* left running on purpose at the last stop: its buffer is drained, not thrown away */
	if (t->config->keep_tracing) {
		log_info("adopting instance '%s', left running by the last stop (keep_tracing)",
			 t->name);
		return 0;
	}
	log_notice("instance '%s' was left by a run of stackmapd that did not stop cleanly: "
		   "taking it over (removed and created afresh)", t->name);
	if (tracefs_instance_destroy(t->instance) < 0)
		return negative_errno();
	tracefs_instance_free(t->instance);
	errno = 0;
	t->instance = tracefs_instance_create(t->name);
	if (!t->instance)
		return negative_errno();
	t->created = tracefs_instance_is_new(t->instance);
	return 0;
}

/* The first foreign setting of one event directory, in *ret ("enable", "filter", "trigger"). */
static const char *event_foreign(const char *dir)
{
	static const char *const files[] = { "enable", "filter", "trigger" };
	static const char *const idle[] = { "0", "none", "" };

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		_cleanup_free_ char *v = NULL;
		char path[PATH_MAX];

		if (tracing_pathf(path, "%s/%s", dir, files[i]) < 0 ||
		    tracing_read_value(path, &v) < 0)
			continue;
		/* the trigger file lists the available commands as comments */
		if (i == 2 && (v[0] == '#' || !v[0]))
			continue;
		if (!streq(v, idle[i]))
			return files[i];
	}
	return NULL;
}

int tracing_check_foreign(struct tracing *t, char **ret_error)
{
	char path[PATH_MAX];
	struct dirent *sd;
	DIR *systems;
	int r = 0;

	if (t->given_dir || t->created || t->ours || !*t->name)
		return 0;
	if (tracing_pathf(path, "%s/events", t->instance_dir) < 0 || !(systems = opendir(path)))
		return 0;
	while (r == 0 && (sd = readdir(systems))) {
		char sdir[PATH_MAX];
		struct dirent *ed;
		DIR *events;

		if (sd->d_name[0] == '.' || tracing_pathf(sdir, "%s/%s", path, sd->d_name) < 0 ||
		    !(events = opendir(sdir)))
			continue;
		while (r == 0 && (ed = readdir(events))) {
			char edir[PATH_MAX];
			const char *what;

			if (ed->d_name[0] == '.' || tracing_pathf(edir, "%s/%s", sdir, ed->d_name) < 0)
				continue;
			what = event_foreign(edir);
			if (!what)
				continue;
			(void)strprintf(ret_error, "tracing instance '%s' already exists with settings "
					"that stackmapd did not make (events/%s/%s/%s): remove it or "
					"configure another instance", t->name, sd->d_name, ed->d_name,
					what);
			r = -EEXIST;
		}
		closedir(events);
	}
	closedir(systems);
	return r;
}
