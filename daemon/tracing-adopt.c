/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Whose is an instance that already exists when the daemon starts. tracefs
 * cannot hold a mark of ours, so the daemon records the name of each
 * instance it creates or adopts in a file next to its control socket
 * ("SOCKET.instance"), and removes the file at a clean stop. An existing
 * instance named there is the leftover of a run that did not stop cleanly:
 * it is taken over completely (one we created is removed and created
 * afresh; one we adopted has its events, filters and triggers cleared, all
 * of which were ours). Any other existing instance is adopted only if it
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

/*
 * What the record file says of this instance: 0 nothing, 1 a run of ours
 * created it, 2 a run of ours adopted it while it held no settings (so
 * every setting it holds now is ours).
 */
static int recorded_as_ours(const struct tracing *t)
{
	_cleanup_free_ char *text = NULL;
	char path[PATH_MAX];
	size_t n = strlen(t->name);

	if (record_path(t, path) < 0 || tracing_read_value(path, &text) < 0 ||
	    strncmp(text, t->name, n) != 0)
		return 0;
	if (!text[n])
		return 1;
	return streq(text + n, " adopted") ? 2 : 0;
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
	if (r >= 0 && !t->created)
		r = write_all(fd, " adopted", strlen(" adopted"));
	if (r >= 0)
		r = write_all(fd, "\n", 1);
	if (r < 0)
		log_errno(LOG_WARNING, r, "cannot record instance '%s' in '%s': a crash would leave "
			  "it for the next start to refuse, continuing", t->name, path);
}

/* Remove every trigger of one event, without truncating (that would drop hist triggers at once). */
static void clear_triggers(const char *path)
{
	_cleanup_free_ char *text = NULL;
	char *line, *save = NULL;

	if (read_file(path, &text, NULL) < 0)
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char cmd[128];

		if (line[0] == '#' || !line[0])
			continue;
		(void)snprintf(cmd, sizeof(cmd), "!%.*s", (int)strcspn(line, " :"), line);
		(void)tracing_write_value(path, cmd, false);
	}
}

static void clear_event(const char *dir)
{
	char path[PATH_MAX];

	if (tracing_pathf(path, "%s/trigger", dir) == 0)
		clear_triggers(path);
	if (tracing_pathf(path, "%s/enable", dir) == 0)
		(void)tracing_write_value(path, "0", true);
	if (tracing_pathf(path, "%s/filter", dir) == 0)
		(void)tracing_write_value(path, "0", true);
}

static int walk_events(struct tracing *t, int (*cb)(struct tracing *t, const char *system,
						     const char *event, const char *dir, void *u),
		       void *u);

static int clear_cb(struct tracing *t, const char *system, const char *event, const char *dir,
		    void *u)
{
	clear_event(dir);
	return 0;
}

int tracing_take_over(struct tracing *t)
{
	int how;

	if (t->given_dir || t->created || !*t->name)
		return 0;
	how = recorded_as_ours(t);
	if (!how)
		return 0;
	t->ours = true;
	if (how == 2 && !t->config->keep_tracing) {
		/* not ours to remove: clear the settings, all of which are ours */
		log_notice("instance '%s' was adopted by a run of stackmapd that did not stop "
			   "cleanly: clearing its events, filters and triggers", t->name);
		return walk_events(t, clear_cb, NULL);
	}
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

static int walk_events(struct tracing *t, int (*cb)(struct tracing *t, const char *system,
						     const char *event, const char *dir, void *u),
		       void *u)
{
	char path[PATH_MAX];
	struct dirent *sd;
	DIR *systems;
	int r = 0;

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

			if (ed->d_name[0] == '.' || tracing_pathf(edir, "%s/%s", sdir, ed->d_name) < 0)
				continue;
			r = cb(t, sd->d_name, ed->d_name, edir, u);
		}
		closedir(events);
	}
	closedir(systems);
	return r;
}

static int foreign_cb(struct tracing *t, const char *system, const char *event, const char *dir,
		      void *u)
{
	const char *what = event_foreign(dir);

	if (!what)
		return 0;
	(void)strprintf(u, "tracing instance '%s' already exists with settings that stackmapd did "
			"not make (events/%s/%s/%s): remove it or configure another instance",
			t->name, system, event, what);
	return -EEXIST;
}

int tracing_check_foreign(struct tracing *t, char **ret_error)
{
	int r;

	if (t->given_dir || t->created || !*t->name)
		return 0;
	if (!t->ours) {
		r = walk_events(t, foreign_cb, ret_error);
		if (r < 0)
			return r;
	}
	/* from here on its settings are ours: a crash leaves them for the next start to clear */
	tracing_record_ours(t, true);
	return 0;
}
