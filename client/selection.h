/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an offline command reads (client/selection.c): the segments named
 * on the command line (files, or archive directories read whole, or the
 * configured archive when none is named), grouped by recording so that
 * each boot's trace clock is read on its own, and the filters every
 * offline command shares: --since/--until (wall clock or trace clock),
 * --cpu, --pid, --comm, --event.
 */
#ifndef STACKMAPCTL_SELECTION_H
#define STACKMAPCTL_SELECTION_H

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stacktab-resolve.h"
#include "wallclock.h"

struct decoded_event;
struct decoder;
struct selection_seen;
struct selection_state;

enum {
	SELECTION_OPT_SINCE = 0x1000,
	SELECTION_OPT_UNTIL,
	SELECTION_OPT_CPU,
	SELECTION_OPT_PID,
	SELECTION_OPT_COMM,
	SELECTION_OPT_EVENT,
	SELECTION_OPT_CONFIG,
	SELECTION_OPT_MARKERS,
	SELECTION_OPT_BOOT,
	SELECTION_OPT_LAST,
	SELECTION_OPT_MEMORY_LIMIT,
};

/* getopt_long entries for the shared options; put them in a command's table. */
#define SELECTION_OPTIONS                                                \
	{ "since", required_argument, NULL, SELECTION_OPT_SINCE },       \
	{ "until", required_argument, NULL, SELECTION_OPT_UNTIL },       \
	{ "cpu", required_argument, NULL, SELECTION_OPT_CPU },           \
	{ "pid", required_argument, NULL, SELECTION_OPT_PID },           \
	{ "comm", required_argument, NULL, SELECTION_OPT_COMM },         \
	{ "event", required_argument, NULL, SELECTION_OPT_EVENT },       \
	{ "config", required_argument, NULL, SELECTION_OPT_CONFIG },     \
	{ "markers", no_argument, NULL, SELECTION_OPT_MARKERS },      \
	{ "boot", required_argument, NULL, SELECTION_OPT_BOOT },         \
	{ "last", required_argument, NULL, SELECTION_OPT_LAST },           \
	{ "memory-limit", required_argument, NULL, SELECTION_OPT_MEMORY_LIMIT }

/* Usage text of the shared options, for a command's --help. */
/* The daemon's markers, left out unless --markers, as messages name them. */
#define SELECTION_MARKERS "stackmapd: clock, snap, gen, crash"

#define SELECTION_USAGE                                                                      \
	"  --since TIME, --until TIME  only events in this window: 2026-12-01 03:12, 03:12,\n"   \
	"                  -10min, ISO 8601 with a zone, or trace-clock seconds (1701.5)\n"      \
	"  --cpu LIST      only these CPUs (0,2-3)\n"                                            \
	"  --pid PID       only this task\n"                                                     \
	"  --comm NAME     only tasks of this name\n"                                            \
	"  --event NAME    only this event (name or system:name), with its stacks\n"             \
	"  --markers       also the daemon's own markers (" SELECTION_MARKERS ")\n"        \
	"  --boot N|ID     only one boot: 0 the last the archive knows, -1 the one before\n"    \
	"                  (its crash capture included), or a boot id (or its start)\n"        \
	"  --last DURATION only the last DURATION (5s, 2min) of the last boot selected\n"     \
	"  -c, --config FILE  without SEGMENT: read the archive this file configures\n"          \
	"  --memory-limit SIZE  what the readers may hold (256M; $STACKMAPCTL_MEMORY_LIMIT)\n"  \
	"SEGMENT is a segment file or an archive directory (all its segments, in order);\n"     \
	"none: the configured archive.\n"

struct selection {
	/* filters; set by selection_option() */
	struct wallclock_time since, until;
	const char *since_arg, *until_arg;	/* as given, for messages */
	bool *cpus;			/* STACKTAB_MAX_CPUS flags, NULL: all */
	long pid;			/* -1: all */
	const char *comm;
	const char *event;		/* "name" or "system:name" */
	const char *config;		/* -c FILE */
	const char *boot;		/* --boot: "0", "-1", ... or a boot id prefix; NULL: all */
	uint64_t last_ns;		/* --last; 0: not set */
	const char *memory_limit;	/* --memory-limit SIZE, NULL: the environment's or the default */
	uint64_t now;			/* CLOCK_REALTIME ns when options were parsed */
	bool quiet_unfinished;		/* do not report .part segments as cut short */
	bool markers;			/* keep the daemon's markers (--markers) */
	bool every_file;		/* keep .part files that hold no record yet (verify, info) */

	/* segments; set by selection_resolve() */
	char **paths;
	size_t nr_paths, cap_paths;
	size_t *group_start;		/* index of each group's first path */
	size_t nr_groups;

	struct selection_state *state;	/* filtering state while decoding */
	struct selection_seen *seen;	/* what the filters found (selection-check.c) */
	struct stacktab_stats stats;	/* resolution counters of all groups decoded */
	uint64_t markers_hidden;	/* the daemon's markers left out (no --markers) */
	bool markers_in_output;		/* the command says so itself (else a notice does) */
};

void selection_init(struct selection *s);
void selection_done(struct selection *s);

/*
 * Handle option c (a SELECTION_OPT_*) of a command's getopt loop. Returns
 * 1 if handled, 0 if c is not a shared option, -EINVAL on a bad value
 * (logged).
 */
int selection_option(struct selection *s, int c, const char *arg);

/*
 * getopt_long() for a command whose table holds SELECTION_OPTIONS: the
 * shared options (and -c) go to selection_option(), and the next other
 * option is returned; 0 at the end of the options, -EINVAL after a bad
 * value of a shared option (logged). The table must not use getopt_long
 * flags (a returned 0 would read as the end).
 */
int selection_getopt(struct selection *s, int argc, char **argv, const char *shortopts,
		     const struct option *longopts);

/* True when any filter is set (not counting --config). */
bool selection_filtering(const struct selection *s);

/*
 * Expand argv[0..argc) (files and directories; none: the configured
 * archive) into s->paths in reading order, grouped by recording (boot
 * and daemon run, from META). Logs and returns -errno when nothing can be
 * read (a directory without segments, an unreadable config), -EDOM when
 * the filters cannot match (a window that ends before it begins, a CPU
 * beyond those recorded): a usage mistake.
 */
int selection_resolve(struct selection *s, int argc, char **argv);

/* The exit status for a selection_resolve() failure r: 2 for a usage mistake, else 1. */
static inline int selection_resolve_status(int r)
{
	return r == -EDOM ? 2 : 1;
}

/* Label of group g: "host HOST boot BOOT_ID" (static buffer until the next call). */
const char *selection_group_label(const struct selection *s, size_t g);

/*
 * Whether ev passes the filters. A stack passes when the event it follows
 * on its CPU passed. Call for every event in decoding order.
 */
bool selection_wanted(struct selection *s, const struct decoded_event *ev);

/* CLOCK_REALTIME of a trace timestamp of ev's segment; false if no pair is known. */
bool selection_wall(struct selection *s, const struct decoded_event *ev, uint64_t *ret);

/*
 * client/selection-check.c. selection_check_options(): -EDOM (logged) when
 * the window ends before it begins or a CPU is nr_cpus (0: unknown) or
 * more. selection_seen_event(): count ev (passed: it passed the filters).
 * selection_verdict(): the exit status for ret (selection_decode()'s)
 * when nothing matched: 2 (logged) when --event, --comm or --pid names
 * what the events read do not hold, else ret, after a "no events
 * matched" notice.
 */
int selection_check_options(struct selection *s, unsigned int nr_cpus);
void selection_seen_event(struct selection *s, const struct decoded_event *ev, bool passed);
int selection_verdict(struct selection *s, int ret);
void selection_seen_free(struct selection *s);

/*
 * Decode every group, one decoder per group, and call fn for each event
 * that passes the filters; group(s, g, userdata) (may be NULL) before each
 * group's first event when there is more than one group. Errors of damaged
 * segments are logged and decoding goes on; fn or group returning < 0
 * stops; progress (may be NULL) gets the index of the path being read.
 * s->stats sums the decoders' resolution counters. Returns 0 when
 * everything decoded, 1 when something was damaged or fn failed, 2 when a
 * filter names what the selection does not hold (selection_verdict()), or
 * a negative errno (logged) when nothing could be decoded.
 */
struct selection_run {
	int (*event)(struct decoded_event *ev, void *userdata);
	int (*group)(struct selection *s, size_t g, void *userdata);
	void (*progress)(size_t paths_done, void *userdata);
	void *userdata;
};
int selection_decode(struct selection *s, const struct selection_run *run);

#endif
