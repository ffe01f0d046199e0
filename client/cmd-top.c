/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl top: the hottest stacks per event type of some segments
 * (lib/export/top.h over client/sample-source.h). With --follow, like perf top:
 * every second, the last N seconds of the archive, the segment being
 * written included (read up to its last complete record), redrawn on a
 * terminal or printed as one block per interval otherwise. Exit status as
 * report's.
 */
#include <assert.h>
#include <getopt.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <time.h>

#include "commands-export.h"
#include "commands.h"
#include "log.h"
#include "sample-source.h"
#include "selection.h"
#include "top.h"

static const char top_usage[] =
	"Usage: stackmapctl top [--sort symbol|stack|callsite|comm|pid] [--children] [--limit N]\n"
	"                       [--width N] [--percent-limit P] [--raw-stacks] [--json]\n"
	"                       [--follow [--window SECONDS] [--iterations N]] [OPTIONS]\n"
	"                       [SEGMENT|DIRECTORY...]\n"
	"  --sort symbol  (default) per event type, the function that hit it, with the\n"
	"                 tree of its callers, like perf report --stdio --no-children\n"
	"  --sort stack   one line per stack, innermost frame first\n"
	"  --sort callsite  the event's call site: its call_site field, else the first\n"
	"                 frame outside the tracing machinery\n"
	"  --children     every function with the events under it (like perf report\n"
	"                 --children); --no-children: the default\n"
	"  --limit N      at most N rows per event type\n"
	"  --width N      cut lines to N columns (0: never; default: the terminal's, 80\n"
	"                 when not a terminal)\n"
	"  --percent-limit P  leave out call graph branches under P %% (default 0.5)\n"
	SAMPLE_SOURCE_USAGE
	"  --follow       every second, the last --window seconds (default 10) of the\n"
	"                 archive while the daemon writes it, like perf top\n"
	"  --interval SECONDS  with --follow: refresh this often (default 1)\n"
	"  --iterations N with --follow: stop after N refreshes (default: until interrupted)\n"
	SELECTION_USAGE;

struct top_args {
	int sort;
	unsigned long limit;
	bool json;
	bool children;
	bool raw_stacks;
	long width;			/* -1: from the terminal */
	double min_percent;
	bool follow;
	unsigned long window;		/* seconds, with follow */
	unsigned long iterations;	/* refreshes, with follow; 0: until interrupted */
	double interval;		/* seconds between refreshes, with follow */
	int first;			/* index of the first source */
};

static const struct option top_opts[] = {
	{ "sort", required_argument, NULL, 's' },
	{ "limit", required_argument, NULL, 'n' },
	{ "json", no_argument, NULL, 'j' },
	{ "follow", no_argument, NULL, 'f' },
	{ "window", required_argument, NULL, 'w' },
	{ "iterations", required_argument, NULL, 'i' },
	{ "interval", required_argument, NULL, 'I' },
	{ "children", no_argument, NULL, 'C' },
	{ "no-children", no_argument, NULL, 'N' },
	{ "width", required_argument, NULL, 'W' },
	{ "percent-limit", required_argument, NULL, 'P' },
	{ "help", no_argument, NULL, 'h' },
	SAMPLE_SOURCE_OPTIONS,
	SELECTION_OPTIONS,
	{}
};

static int top_sample(const struct sample *s, void *userdata)
{
	return top_add(userdata, s);
}

/* Parse argv into *a and sel. Returns 0, 1 (help printed) or -EINVAL (usage error, logged). */
static int parse_args(int argc, char **argv, struct top_args *a, struct selection *sel)
{
	unsigned long *n;
	char *end;
	int c;

	*a = (struct top_args){ .sort = TOP_SORT_SYMBOL, .window = 10, .width = -1,
				.min_percent = 0.5, .interval = 1.0 };
	optind = 0;
	while ((c = selection_getopt(sel, argc, argv, "+hc:", top_opts)) > 0) {
		switch (c) {
		case 's':
			a->sort = top_sort_from_string(optarg);
			if (a->sort < 0) {
				log_err("unknown sort key '%s' (symbol, stack, callsite, comm or pid)", optarg);
				return -EINVAL;
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
				return -EINVAL;
			}
			break;
		case 'j':
			a->json = true;
			break;
		case 'C':
		case 'N':
			a->children = c == 'C';
			break;
		case SAMPLE_SOURCE_OPT_RAW_STACKS:
			a->raw_stacks = true;
			break;
		case 'W':
			errno = 0;
			a->width = strtol(optarg, &end, 10);
			if (errno || *end || !*optarg || a->width < 0 || a->width > 100000 ||
			    (a->width && a->width < 20)) {
				log_err("bad width '%s' (0, or 20 columns and more)", optarg);
				return -EINVAL;
			}
			break;
		case 'I':
			errno = 0;
			a->interval = strtod(optarg, &end);
			if (errno || *end || !*optarg || !(a->interval >= 0.1 && a->interval <= 3600)) {
				log_err("bad interval '%s' (0.1 to 3600 seconds)", optarg);
				return -EINVAL;
			}
			break;
		case 'P':
			errno = 0;
			a->min_percent = strtod(optarg, &end);
			if (errno || *end || !*optarg || !(a->min_percent >= 0 && a->min_percent <= 100)) {
				log_err("bad percentage '%s' (0 to 100)", optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			a->follow = true;
			break;
		case 'h':
			printf("%s", top_usage);
			return 1;
		default:
			fprintf(stderr, "%s", top_usage);
			return -EINVAL;
		}
	}
	if (c < 0)
		return c;
	if (a->iterations && !a->follow) {
		log_err("--iterations needs --follow");
		return -EINVAL;
	}
	if (a->children && a->sort != TOP_SORT_SYMBOL) {
		log_err("--children needs --sort symbol (the default)");
		return -EINVAL;
	}
	a->first = optind;
	return 0;
}

/* The columns text may take: --width, else the terminal's, else 80. */
static unsigned int top_width(const struct top_args *a)
{
	struct winsize ws;
	const char *cols;
	long n;

	if (a->width >= 0)
		return (unsigned int)a->width;
	if (!isatty(STDOUT_FILENO))
		return 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	cols = getenv("COLUMNS");
	n = cols ? strtol(cols, NULL, 10) : 0;
	return n >= 20 && n <= 100000 ? (unsigned int)n : 80;
}

/* One table of what sel selects. Returns as sample_source_run(). */
static int top_once(struct selection *sel, const struct top_args *a, const char *heading)
{
	struct sample_source_options so = { .raw_stacks = a->raw_stacks,
					    .call_sites = a->sort == TOP_SORT_CALLSITE,
					    /* a bar on a terminal, but not between follow's tables */
					    .progress_label = a->json || a->follow ? NULL : "top" };
	struct top_view v = { .json = a->json, .limit = a->limit, .children = a->children,
			      .width = a->json ? 0 : top_width(a), .min_percent = a->min_percent };
	_cleanup_(top_freep) struct top *t = top_new(a->sort);
	int r, k;

	if (!t)
		return log_errno(LOG_ERR, -ENOMEM, "cannot count stacks");
	sel->markers_in_output = true;	/* in the table's last line */
	r = sample_source_run(sel, &so, top_sample, t);
	if (r < 0)
		return r;
	if (heading)
		printf("%s", heading);
	k = top_print(t, stdout, &v);
	if (k >= 0 && !a->json && sel->markers_hidden &&
	    printf("\n# not shown: %" PRIu64 " of the daemon's own markers (%s); --markers shows "
		   "them\n", sel->markers_hidden, SELECTION_MARKERS) < 0)
		k = -errno;
	if (k >= 0 && fflush(stdout) != 0)
		k = -errno;
	if (k < 0)
		return log_errno(LOG_ERR, k, "cannot write the table");
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
		/* the live segment up to now, not up to the daemon's last periodic flush */
		(void)ctl_flush_quietly(sel.config);
		if (selection_resolve(&sel, argc - a->first, argv + a->first) < 0)
			printf("%s(nothing recorded in the window)\n", heading);
		else if (top_once(&sel, a, heading) < 0)
			return 1;
		(void)fflush(stdout);
		if (a->iterations && i + 1 == a->iterations)
			break;
		(void)nanosleep(&(struct timespec){
					.tv_sec = (time_t)a->interval,
					.tv_nsec = (long)((a->interval - (double)(time_t)a->interval) * 1e9) },
				NULL);
	}
	return 0;
}

int cmd_top(int argc, char **argv)
{
	_cleanup_(selection_done) struct selection sel;
	struct top_args a;
	int r;

	assert(argv);

	selection_init(&sel);
	r = parse_args(argc, argv, &a, &sel);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (a.follow)
		return top_follow(argc, argv, &a);
	r = selection_resolve(&sel, argc - a.first, argv + a.first);
	if (r < 0)
		return selection_resolve_status(r);
	r = top_once(&sel, &a, NULL);
	return r < 0 ? 1 : r;
}
