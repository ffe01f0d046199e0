/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl flamegraph: an interactive SVG flame graph of some segments
 * (lib/export/flamegraph.h over client/sample-source.h), differential against
 * baseline segments given with --diff or another window of the same ones
 * (--diff-since/--diff-until). The title names the events; the subtitle
 * the window, the filters and the source. Exit status as report's.
 */
#include <assert.h>
#include <getopt.h>

#include "cmd-common.h"
#include "commands-export.h"
#include "flamegraph.h"
#include "log.h"
#include "sample-source.h"
#include "selection.h"

static const char fg_usage[] =
	"Usage: stackmapctl flamegraph -o FILE.svg [--title TEXT] [--diff BASELINE]...\n"
	"                              [--diff-since TIME] [--diff-until TIME] [OPTIONS]\n"
	"                              [SEGMENT|DIRECTORY...]\n"
	"  --diff BASELINE    compare with these segments or archive (repeatable)\n"
	"  --diff-since/--diff-until TIME  compare with this window (of BASELINE, or of\n"
	"                     the same segments)\n" SAMPLE_SOURCE_USAGE SELECTION_USAGE;

struct fg_ctx {
	struct flamegraph *fg;
	bool before;
};

static int fg_sample(const struct sample *s, void *userdata)
{
	struct fg_ctx *ctx = userdata;

	return flamegraph_add_sample(ctx->fg, s, ctx->before);
}

static int oom(void)
{
	log_errno(LOG_ERR, -ENOMEM, "cannot build the flame graph");
	return 1;
}

/* The options as given, for the subtitle: "--since -10min --cpu 1". */
static int note_option(char **text, const struct option *opts, int c, const char *arg)
{
	for (const struct option *o = opts; o->name; o++)
		if (o->val == c)
			return strextendf(text, "%s--%s %s", *text ? " " : "", o->name, arg);
	return 0;
}

/* "window and filters; N segments of SOURCE[; against ...]" */
static int subtitle(char **ret, const char *filters, const struct selection *sel, int nsrc,
		    char **src, const char *baseline)
{
	_cleanup_free_ char *t = NULL;
	int r;

	r = strextendf(&t, "%s; %zu segment%s of ", filters ?: "all events",
		       sel->nr_paths, sel->nr_paths == 1 ? "" : "s");
	for (int i = 0; r >= 0 && i < nsrc && i < 3; i++)
		r = strextendf(&t, "%s%s", i ? ", " : "", src[i]);
	if (r >= 0 && nsrc > 3)
		r = strextendf(&t, " and %d more", nsrc - 3);
	if (r >= 0 && nsrc == 0)
		r = strextendf(&t, "the configured archive");
	if (r >= 0 && baseline)
		r = strextendf(&t, "; against %s", baseline);
	if (r < 0)
		return r;
	*ret = steal_ptr(t);
	return 0;
}

struct svg_job {
	const struct flamegraph *fg;
	const struct flamegraph_options *o;
};

static int svg_to(void *data, FILE *f)
{
	const struct svg_job *j = data;

	return flamegraph_write(j->fg, f, j->o);
}

static int write_svg(const struct flamegraph *fg, const char *path, const char *title,
		     const char *sub)
{
	struct flamegraph_options o = { .title = title, .subtitle = sub, .count_name = "events" };
	struct svg_job j = { fg, &o };

	return cmd_output_write(path, svg_to, &j);
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "title", required_argument, NULL, 't' },
		{ "diff", required_argument, NULL, 'd' },
		{ "diff-since", required_argument, NULL, 'S' },
		{ "diff-until", required_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },
		SAMPLE_SOURCE_OPTIONS,
		SELECTION_OPTIONS,
		{}
	};
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	_cleanup_free_ char **base = calloc((size_t)argc, sizeof(char *));
	_cleanup_(selection_done) struct selection sel, bsel;
	struct sample_source_options so = { .progress_label = "flamegraph" };
	const char *diff_since = NULL, *diff_until = NULL;
	const char *out = NULL, *title = NULL;
	_cleanup_free_ char *filters = NULL, *against = NULL, *sub = NULL;
	struct fg_ctx ctx = { .fg = fg };
	int c, r, nbase = 0, ret = 0;

	assert(argv);

	selection_init(&sel);
	selection_init(&bsel);
	if (!fg || !base) {
		log_errno(LOG_ERR, -ENOMEM, "cannot build the flame graph");
		return 1;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, "+ho:c:", opts, NULL)) >= 0) {
		r = selection_option(&sel, c, optarg);
		if (r > 0)
			r = selection_option(&bsel, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0) {
			if (c != SELECTION_OPT_CONFIG && note_option(&filters, opts, c, optarg) < 0)
				return oom();
			continue;
		}
		switch (c) {
		case SAMPLE_SOURCE_OPT_RAW_STACKS:
			so.raw_stacks = true;
			break;
		case 'S':
			diff_since = optarg;
			if (note_option(&against, opts, c, optarg) < 0)
				return oom();
			break;
		case 'U':
			diff_until = optarg;
			if (note_option(&against, opts, c, optarg) < 0)
				return oom();
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			title = optarg;
			break;
		case 'd':
			base[nbase++] = optarg;
			if (strextendf(&against, "%s%s", against ? ", " : "", optarg) < 0)
				return oom();
			break;
		case 'h':
			printf("%s", fg_usage);
			return 0;
		default:
			fprintf(stderr, "%s", fg_usage);
			return 2;
		}
	}
	if (!out) {
		fprintf(stderr, "%s", fg_usage);
		return 2;
	}
	/* the baseline's own window replaces the one it shares with the graph */
	if ((diff_since && selection_option(&bsel, SELECTION_OPT_SINCE, diff_since) < 0) ||
	    (diff_until && selection_option(&bsel, SELECTION_OPT_UNTIL, diff_until) < 0))
		return 2;
	r = selection_resolve(&sel, argc - optind, argv + optind);
	if (r < 0)
		return selection_resolve_status(r);
	if (nbase || diff_since || diff_until) {
		/* the baseline: other segments, or the same ones in another window */
		r = nbase ? selection_resolve(&bsel, nbase, base)
			  : selection_resolve(&bsel, argc - optind, argv + optind);
		if (r < 0)
			return selection_resolve_status(r);
		ctx.before = true;
		r = sample_source_run(&bsel, &so, fg_sample, &ctx);
		if (r < 0 || r == 2)
			return r < 0 ? 1 : r;
		ret |= r;
		ctx.before = false;
	}
	r = sample_source_run(&sel, &so, fg_sample, &ctx);
	if (r < 0 || r == 2)
		return r < 0 ? 1 : r;	/* 2: the filters named what is not there */
	ret |= r;
	if (subtitle(&sub, filters, &sel, argc - optind, argv + optind, against) < 0)
		return oom();
	r = write_svg(fg, out, title, sub);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot write '%s'", out);
		return 1;
	}
	return ret;
}
