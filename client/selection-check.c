/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Filters that cannot match (selection.h): a window that ends before it
 * begins and a CPU beyond those recorded are refused before anything is
 * read; after decoding, when nothing matched, an event type, task name or
 * pid that the selection does not hold is named, with what it does hold
 * and the closest name, as a usage mistake (exit status 2); a valid filter
 * that matched nothing gets "no events matched".
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#include "decode.h"
#include "log.h"
#include "selection.h"
#include "strmap.h"
#include "suggest.h"
#include "util.h"

struct selection_seen {
	uint64_t matched;		/* events (not stacks) that passed */
	uint64_t segment;		/* serial of the last segment whose event types were taken */
	struct strmap *events;		/* "system:name" of every event type of the segments read */
	struct strmap *comms;		/* task names of the events read (with --comm) */
	bool pid_seen;			/* an event of --pid was read */
	struct strmap *tasks;		/* "PID (COMM)" of the events read (with --pid) */
};

void selection_seen_free(struct selection *s)
{
	assert(s);

	if (!s->seen)
		return;
	strmap_free(s->seen->events);
	strmap_free(s->seen->comms);
	strmap_free(s->seen->tasks);
	free(s->seen);
	s->seen = NULL;
}

/* "0-1" or "0-3,6" for the CPUs that nr_cpus counts from 0. */
int selection_check_options(struct selection *s, unsigned int nr_cpus)
{
	assert(s);

	if (s->since.set && s->until.set && s->since.trace == s->until.trace &&
	    s->since.ns > s->until.ns) {
		log_err("--since %s is after --until %s: the window is empty", s->since_arg ?: "",
			s->until_arg ?: "");
		return -EDOM;
	}
	if (s->cpus && nr_cpus) {
		for (unsigned int c = nr_cpus; c < STACKTAB_MAX_CPUS; c++) {
			if (!s->cpus[c])
				continue;
			if (nr_cpus == 1)
				log_err("--cpu %u: the selection was recorded on CPU 0 only", c);
			else
				log_err("--cpu %u: the selection was recorded on CPUs 0-%u", c,
					nr_cpus - 1);
			return -EDOM;
		}
	}
	return 0;
}

/* The event types of ev's segment, once per segment, but ftrace's and stackmapd's own. */
static int take_events(struct selection_seen *seen, const struct decoded_event *ev)
{
	struct tep_event **list;
	char name[256];
	size_t idx;

	seen->segment = decoder_segment_serial(ev->seg);
	list = tep_list_events(ev->tep, TEP_EVENT_SORT_ID);
	for (size_t i = 0; list && list[i]; i++) {
		int r;

		if (streq(list[i]->system, "ftrace") || streq(list[i]->system, "stackmapd"))
			continue;
		(void)snprintf(name, sizeof(name), "%s:%s", list[i]->system, list[i]->name);
		r = strmap_intern(seen->events, name, strlen(name), &idx);
		if (r < 0)
			return r;
	}
	return 0;
}

void selection_seen_event(struct selection *s, const struct decoded_event *ev, bool passed)
{
	struct selection_seen *seen;
	const char *comm;
	int pid;
	size_t idx;

	assert(s);
	assert(ev);

	seen = s->seen;
	if (!seen) {
		seen = s->seen = calloc(1, sizeof(*seen));
		if (!seen)
			return;
		seen->events = strmap_new();
		seen->comms = strmap_new();
		seen->tasks = strmap_new();
	}
	seen->matched += passed;
	if (seen->matched)
		return;		/* nothing to explain */
	if (s->event && seen->events && decoder_segment_serial(ev->seg) != seen->segment)
		(void)take_events(seen, ev);
	if (s->pid < 0 && !s->comm)
		return;
	pid = tep_data_pid(ev->tep, ev->record);
	seen->pid_seen |= pid == s->pid;
	comm = tep_data_comm_from_pid(ev->tep, pid);
	if (s->pid >= 0 && seen->tasks) {
		char task[64];
		int len = snprintf(task, sizeof(task), "%d (%s)", pid, comm ?: "<...>");

		if (len > 0)
			(void)strmap_intern(seen->tasks, task, MIN((size_t)len, sizeof(task) - 1), &idx);
	}
	if (s->comm && seen->comms && comm)
		(void)strmap_intern(seen->comms, comm, strlen(comm), &idx);
}

/* The names of m (borrowed), with only what follows ':' when short. */
static const char **names_of(struct strmap *m, bool short_names, size_t *ret_n)
{
	size_t n = m ? strmap_size(m) : 0;
	const char **a = calloc(n ?: 1, sizeof(*a));

	if (!a)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *name = strmap_get(m, i, NULL), *colon = strchr(name, ':');

		a[i] = short_names && colon ? colon + 1 : name;
	}
	*ret_n = n;
	return a;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first 20 of names[0..n) joined by ", ", then ", ... (N in all)"; NULL without memory. */
static char *names_list(const char *const *names, size_t n)
{
	char *list = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&list, &len);
	if (!f)
		return NULL;
	for (size_t i = 0; i < n && i < 20; i++)
		fprintf(f, "%s%s", i ? ", " : "", names[i]);
	if (n > 20)
		fprintf(f, ", ... (%zu in all)", n);
	if (fclose(f) != 0) {
		free(list);
		return NULL;
	}
	return list;
}

/* Log that what (an option's value) is not among m's names, listing some and the closest. */
static void not_held(const char *option, const char *what, struct strmap *m, bool short_names,
		     const char *kind)
{
	_cleanup_free_ const char **names = NULL;
	_cleanup_free_ char *list = NULL;
	const char *close;
	size_t n = 0;

	names = names_of(m, short_names, &n);
	if (!names || !n) {
		log_err("%s %s: the selection holds no %s of that name", option, what, kind);
		return;
	}
	qsort(names, n, sizeof(*names), str_cmp);
	close = suggest_closest(what, names, n);
	list = names_list(names, n);
	if (!list)
		return;
	if (close)
		log_err("%s %s: no %s of that name in the selection; did you mean '%s'? It holds: %s",
			option, what, kind, close, list);
	else
		log_err("%s %s: no %s of that name in the selection. It holds: %s", option, what,
			kind, list);
}

static int task_cmp(const void *a, const void *b)
{
	long x = strtol(*(const char *const *)a, NULL, 10), y = strtol(*(const char *const *)b, NULL, 10);

	return x < y ? -1 : x > y;
}

/*
 * Log that no event of pid was read, naming the tasks that were ("PID
 * (COMM)", by pid) and the one whose pid is closest to a typo of it.
 */
static void pid_not_held(long pid, struct strmap *tasks)
{
	_cleanup_free_ const char **names = NULL, **pids = NULL;
	_cleanup_free_ char *list = NULL, *digits = NULL;
	char want[24];
	const char *close;
	size_t n = 0, at = 0;

	names = names_of(tasks, false, &n);
	if (!names || !n) {
		log_err("--pid %ld: no event of that task in the selection", pid);
		return;
	}
	qsort(names, n, sizeof(*names), task_cmp);
	/* the pids alone, for the closest: each name up to its space */
	pids = calloc(n, sizeof(*pids));
	digits = calloc(n, sizeof(want));
	if (!pids || !digits)
		return;
	for (size_t i = 0; i < n; i++) {
		pids[i] = digits + i * sizeof(want);
		(void)snprintf(digits + i * sizeof(want), sizeof(want), "%.*s",
			       (int)strcspn(names[i], " "), names[i]);
	}
	(void)snprintf(want, sizeof(want), "%ld", pid);
	close = suggest_closest(want, pids, n);
	list = names_list(names, n);
	if (!list)
		return;
	if (!close) {
		log_err("--pid %ld: no event of that task in the selection. It holds: %s", pid, list);
		return;
	}
	while (pids[at] != close)	/* borrowed from pids: one of them */
		at++;
	log_err("--pid %ld: no event of that task in the selection; did you mean %s? It holds: %s",
		pid, names[at], list);
}

/* Whether the event filter names one of the types read (as event_matches() would). */
static bool event_held(struct strmap *m, const char *filter)
{
	bool full = strchr(filter, ':');

	for (size_t i = 0; m && i < strmap_size(m); i++) {
		const char *name = strmap_get(m, i, NULL);

		if (streq(full ? name : strchr(name, ':') + 1, filter))
			return true;
	}
	return false;
}

static bool name_held(struct strmap *m, const char *name)
{
	for (size_t i = 0; i < strmap_size(m); i++)
		if (streq(strmap_get(m, i, NULL), name))
			return true;
	return false;
}

int selection_verdict(struct selection *s, int ret)
{
	struct selection_seen *seen;

	assert(s);

	seen = s->seen;
	if (ret < 0 || (seen && seen->matched))
		return ret;
	if (seen && s->event && strmap_size(seen->events) && !event_held(seen->events, s->event)) {
		not_held("--event", s->event, seen->events, !strchr(s->event, ':'), "event type");
		return 2;
	}
	if (seen && s->comm && seen->comms && strmap_size(seen->comms) &&
	    !name_held(seen->comms, s->comm)) {
		not_held("--comm", s->comm, seen->comms, false, "task");
		return 2;
	}
	if (seen && s->pid >= 0 && !seen->pid_seen) {
		pid_not_held(s->pid, seen->tasks);
		return 2;
	}
	if (!s->quiet_unfinished)
		log_notice("no events matched");
	return ret;
}
