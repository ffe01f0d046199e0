/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl top: the hottest stacks per event type of some segments
 * (lib/export/top.h over client/sample-source.h). With --follow, like perf top:
 * every second, the last N seconds of the archive, the segment being
 * written included (read up to its last complete record), redrawn on a
 * terminal or printed as one block per interval otherwise. Exit status as
 * report's.
 */
#include <getopt.h>
#include <signal.h>
#include <time.h>

#include "commands-export.h"
#include "log.h"
#include "sample-source.h"
#include "selection.h"
#include "top.h"

static const char top_usage[] =
	"Usage: stackmapctl top [--sort stack|callsite|comm|pid] [--limit N] [--json]\n"
	"                       [--follow [--window SECONDS] [--iterations N]] [OPTIONS]\n"
	"                       [SEGMENT|DIRECTORY...]\n"
	"  --follow       every second, the last --window seconds (default 10) of the\n"
	"                 archive while the daemon writes it, like perf top\n"
	"  --iterations N with --follow: stop after N refreshes (default: until interrupted)\n"
	SELECTION_USAGE;

struct top_args {
	int sort;
	unsigned long limit;
	bool json;
	bool follow;
	unsigned long window;		/* seconds, with follow */
	unsigned long iterations;	/* refreshes, with follow; 0: until interrupted */
	int first;			/* index of the first source */
};

static const struct option top_opts[] = {
	{ "sort", required_argument, NULL, 's' },
	{ "limit", required_argument, NULL, 'n' },
	{ "json", no_argument, NULL, 'j' },
	{ "follow", no_argument, NULL, 'f' },
	{ "window", required_argument, NULL, 'w' },
	{ "iterations", required_argument, NULL, 'i' },
	{ "help", no_argument, NULL, 'h' },
	SELECTION_OPTIONS,
	{}
};

static int top_sample(const struct sample *s, void *userdata)
{
	return top_add(userdata, s);
}

/* Parse argv into *a and sel. Returns 0, 1 (help printed) or -1 (usage error, logged). */
static int parse_args(int argc, char **argv, struct top_args *a, struct selection *sel)
{
	unsigned long *n;
	char *end;
	int c;

	*a = (struct top_args){ .sort = TOP_SORT_STACK, .window = 10 };
	optind = 0;
	while ((c = selection_getopt(sel, argc, argv, "+hc:", top_opts)) > 0) {
		switch (c) {
		case 's':
			a->sort = top_sort_from_string(optarg);
			if (a->sort < 0) {
				log_err("unknown sort key '%s'", optarg);
				return -1;
			}
			break;
		case 'n':
		case 'w':
		case 'i':
			n = c == 'n' ? &a->limit : c == 'w' ? &a->window : &a->iterations;
			errno = 0;
			*n = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-' || (c != 'n' && !*n)) {
				log_err("bad number '%s'", optarg);
				return -1;
			}
			break;
		case 'j':
			a->json = true;
			break;
		case 'f':
			a->follow = true;
			break;
		case 'h':
			printf("%s", top_usage);
			return 1;
		default:
			fprintf(stderr, "%s", top_usage);
			return -1;
		}
	}
	if (c < 0)
		return -1;
	if (a->iterations && !a->follow) {
		log_err("--iterations needs --follow");
		return -1;
	}
	a->first = optind;
	return 0;
}

/* One table of what sel selects. Returns as sample_source_run(). */
static int top_once(struct selection *sel, const struct top_args *a, const char *heading)
{
	struct sample_source_options so = {};
	_cleanup_(top_freep) struct top *t = top_new(a->sort);
	int r;

	if (!t) {
		log_errno(LOG_ERR, -ENOMEM, "cannot count stacks");
		return -1;
	}
	r = sample_source_run(sel, &so, top_sample, t);
	if (r < 0)
		return r;
	if (heading)
		printf("%s", heading);
	if (top_print(t, stdout, a->json, a->limit) < 0 || fflush(stdout) != 0) {
		log_errno(LOG_ERR, -errno, "cannot write the table");
		return -1;
	}
	return r;
}

/* --follow: a fresh selection of the last window every second, until interrupted or done. */
static int top_follow(int argc, char **argv, const struct top_args *a)
{
	bool redraw = isatty(STDOUT_FILENO) && !a->json;
	char since[32], heading[96];

	(void)snprintf(since, sizeof(since), "-%lus", a->window);
	for (unsigned long i = 0; !a->iterations || i < a->iterations; i++) {
		_cleanup_(selection_done) struct selection sel;
		struct top_args ignored;
		time_t now = time(NULL);
		struct tm tm;

		selection_init(&sel);
		sel.quiet_unfinished = true;	/* the segment being written ends anywhere */
		if (parse_args(argc, argv, &ignored, &sel) != 0 ||
		    selection_option(&sel, SELECTION_OPT_SINCE, since) < 0)
			return 2;
		(void)localtime_r(&now, &tm);
		(void)snprintf(heading, sizeof(heading), "%s# %02d:%02d:%02d, last %lu s\n",
			       redraw ? "\033[H\033[2J" : a->json ? "" : "\n", tm.tm_hour, tm.tm_min,
			       tm.tm_sec, a->window);
		if (selection_resolve(&sel, argc - a->first, argv + a->first) < 0)
			printf("%s(nothing recorded in the window)\n", heading);
		else if (top_once(&sel, a, heading) < 0)
			return 1;
		(void)fflush(stdout);
		if (a->iterations && i + 1 == a->iterations)
			break;
		(void)nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	_cleanup_(selection_done) struct selection sel;
	struct top_args a;
	int r;

	selection_init(&sel);
	r = parse_args(argc, argv, &a, &sel);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (a.follow)
		return top_follow(argc, argv, &a);
	if (selection_resolve(&sel, argc - a.first, argv + a.first) < 0)
		return 1;
	r = top_once(&sel, &a, NULL);
	return r < 0 ? 1 : r;
}
