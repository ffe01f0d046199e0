/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Running the segment hook: posix_spawn() of the configured program with
 * an argument vector (the exec is an execve(), no shell ever parses the
 * words or the path), the collection of its exit on the loop, and the
 * queue of segments waiting for a free slot.
 */
#include <assert.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "hook.h"
#include "log.h"
#include "util.h"

struct hook {
	sd_event *event;
	/*
	 * The running hooks: pid 0 is a free slot. source is NULL for a
	 * hook started after the loop finished (at the stop), which the loop
	 * can no longer watch.
	 */
	struct child {
		pid_t pid;
		sd_event_source *source;
	} children[HOOK_MAX_RUNNING];
	char **queue[HOOK_MAX_QUEUED];	/* ring of owned argument vectors, path included */
	size_t head, nr_queued;
	struct hook_stats stats;
};

static char **strv_free(char **v)
{
	if (!v)
		return NULL;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
	return NULL;
}

/* The segment path: the last argument. */
static const char *strv_last(char **v)
{
	size_t n = 0;

	while (v[n])
		n++;
	return n ? v[n - 1] : "?";
}

static int start_argv(struct hook *h, char **v);

/* Start the oldest waiting hooks while a slot is free. Logs what cannot start. */
static void drain_queue(struct hook *h)
{
	while (h->nr_queued) {
		char **v = h->queue[h->head];
		int r;

		r = start_argv(h, v);
		if (r == -EBUSY)
			return;
		h->head = (h->head + 1) % HOOK_MAX_QUEUED;
		h->nr_queued--;
		if (r < 0) {
			h->stats.failed++;
			log_errno(LOG_WARNING, r, "cannot run the segment hook for '%s', continuing",
				  strv_last(v));
			strv_free(v);
		}
	}
}

int hook_new(sd_event *e, struct hook **ret)
{
	struct hook *h = calloc(1, sizeof(*h));

	assert(ret);

	if (!h)
		return -ENOMEM;
	h->event = sd_event_ref(e);
	*ret = h;
	return 0;
}

/* Count and log a hook that did not exit with status 0. */
static void report_exit(struct hook *h, const siginfo_t *si)
{
	if (si->si_code == CLD_EXITED && si->si_status == 0)
		return;
	h->stats.failed++;
	log_warn("segment hook (pid %d) failed with %s %d, continuing", (int)si->si_pid,
		 si->si_code == CLD_EXITED ? "status" : "signal", si->si_status);
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata)
{
	struct hook *h = userdata;

	for (size_t i = 0; i < HOOK_MAX_RUNNING; i++)
		if (h->children[i].source == s)
			h->children[i] = (struct child){ 0 };
	report_exit(h, si);
	sd_event_source_unref(s);
	drain_queue(h);
	return 0;
}

/*
 * The hooks at the stop: one that has exited since the loop last ran is
 * collected and reported like any other; one still running is logged as
 * left to run; queued ones are logged as not run. Each hook started is
 * thus accounted for in the log.
 */
static void account_at_stop(struct hook *h)
{
	for (size_t i = 0; i < HOOK_MAX_RUNNING; i++) {
		pid_t pid = h->children[i].pid;
		siginfo_t si = { 0 };

		if (!pid)
			continue;
		sd_event_source_disable_unref(h->children[i].source);
		h->children[i] = (struct child){ 0 };
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG) == 0 && si.si_pid == pid)
			report_exit(h, &si);
		else
			log_info("segment hook (pid %d) still running at the stop, not waited for",
				 (int)pid);
	}
	if (h->nr_queued)
		log_warn("%zu segment hooks waiting at the stop are not run, the first for '%s'",
			 h->nr_queued, strv_last(h->queue[h->head]));
}

struct hook *hook_free(struct hook *h)
{
	if (!h)
		return NULL;
	account_at_stop(h);
	for (size_t i = 0; i < h->nr_queued; i++)
		strv_free(h->queue[(h->head + i) % HOOK_MAX_QUEUED]);
	sd_event_unref(h->event);
	free(h);
	return NULL;
}

/* A copy of argv with path appended (owned). NULL on ENOMEM. */
static char **argv_with(char *const *argv, const char *path)
{
	size_t n = 0;
	char **v;

	while (argv[n])
		n++;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i <= n; i++) {
		v[i] = strdup(i < n ? argv[i] : path);
		if (!v[i])
			return strv_free(v);
	}
	return v;
}

/*
 * An ordinary process: not the signal mask of the event loop (SIGTERM
 * blocked, and more), nor its handlers, nor its files. A hook holding
 * trace_pipe_raw open would keep the instance from being removed.
 */
static int spawn(char *const *argv, pid_t *ret_pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int r;

	sigemptyset(&none);
	sigfillset(&all);
	r = posix_spawnattr_init(&attr);
	if (r != 0)
		return -r;
	r = posix_spawn_file_actions_init(&fa);
	if (r == 0) {
		(void)posix_spawnattr_setsigmask(&attr, &none);
		(void)posix_spawnattr_setsigdefault(&attr, &all);
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
		if (r == 0)
			r = posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
		/* posix_spawn, not posix_spawnp: argv[0] is the absolute path executed */
		if (r == 0)
			r = posix_spawn(ret_pid, argv[0], &fa, &attr, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	posix_spawnattr_destroy(&attr);
	return -r;
}

/* Start v in a free slot. v stays the caller's. Returns 0, -EBUSY or -errno. */
static int start_argv(struct hook *h, char **v)
{
	size_t slot;
	pid_t pid;
	int r;

	for (slot = 0; slot < HOOK_MAX_RUNNING && h->children[slot].pid; slot++)
		;
	if (slot == HOOK_MAX_RUNNING)
		return -EBUSY;
	r = spawn(v, &pid);
	if (r < 0)
		return r;
	h->stats.started++;
	/*
	 * The slot is freed by on_child_exit(), or at the stop by
	 * account_at_stop(). Once the loop has finished it cannot watch a
	 * child: the slot keeps the pid for the stop. A hook that cannot be
	 * watched while the loop runs runs on unwatched, its slot free.
	 */
	r = sd_event_add_child(h->event, &h->children[slot].source, pid, WEXITED, on_child_exit, h);
	if (r >= 0 || sd_event_get_state(h->event) == SD_EVENT_FINISHED)
		h->children[slot].pid = pid;
	else
		log_errno(LOG_WARNING, r, "cannot watch the segment hook (pid %d), continuing",
			  (int)pid);
	strv_free(v);
	return 0;
}

int hook_run(struct hook *h, char *const *argv, const char *path)
{
	char **v;
	int r;

	assert(h);

	if (!argv || !argv[0])
		return 0;
	v = argv_with(argv, path);
	if (!v)
		return -ENOMEM;
	/* the waiting ones first, in order */
	drain_queue(h);
	r = h->nr_queued ? -EBUSY : start_argv(h, v);
	if (r != -EBUSY) {
		if (r < 0) {
			h->stats.failed++;
			strv_free(v);
		}
		return r;
	}
	if (h->nr_queued == HOOK_MAX_QUEUED) {
		char **old = h->queue[h->head];

		log_warn("%d segment hooks waiting: not running it for '%s', continuing",
			 HOOK_MAX_QUEUED, strv_last(old));
		h->head = (h->head + 1) % HOOK_MAX_QUEUED;
		h->nr_queued--;
		h->stats.dropped++;
		strv_free(old);
	}
	h->queue[(h->head + h->nr_queued) % HOOK_MAX_QUEUED] = v;
	h->nr_queued++;
	h->stats.deferred++;
	return 1;
}

void hook_get_stats(const struct hook *h, struct hook_stats *ret)
{
	assert(h);
	assert(ret);
	*ret = h->stats;
	ret->queued = (unsigned)h->nr_queued;
	ret->running = 0;
	for (size_t i = 0; i < HOOK_MAX_RUNNING; i++)
		ret->running += h->children[i].pid != 0;
}
