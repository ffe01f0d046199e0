/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl flamegraph: an interactive SVG flame graph of some segments
 * (lib/export/flamegraph.h over client/sample-source.h), differential against
 * baseline segments given with --diff or another window of the same ones
 * (--diff-since/--diff-until). Exit status as report's.
 */
#include <getopt.h>

#include "commands-export.h"
#include "flamegraph.h"
#include "log.h"
#include "sample-source.h"
#include "selection.h"
#include "strmap.h"

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
	struct strmap *events;		/* names of the events drawn, for the title */
};

static int fg_sample(const struct sample *s, void *userdata)
{
	struct fg_ctx *ctx = userdata;
	size_t idx;
	int r;

	if (!ctx->before) {
		r = strmap_intern(ctx->events, s->event, strlen(s->event), &idx);
		if (r < 0)
			return r;
	}
	return flamegraph_add_sample(ctx->fg, s, ctx->before);
}

/*
 * The default title: what is drawn, of which window, from where:
 * "kmem_cache_alloc, kmalloc: 03:10 .. 03:15, /var/lib/stackmapd"
 * ("... against ..." for a differential graph). Returns 0 or -ENOMEM.
 */
static int make_title(const struct fg_ctx *ctx, const struct selection *sel, int nsrc,
		      char **src, bool diff, char **ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;
	fputs(diff ? "Differential flame graph of " : "Flame graph of ", f);
	for (size_t i = 0; i < strmap_size(ctx->events) && i < 6; i++)
		fprintf(f, "%s%s", i ? ", " : "", strmap_get(ctx->events, i, NULL));
	if (strmap_size(ctx->events) > 6)
		fprintf(f, ", ... (%zu events)", strmap_size(ctx->events));
	if (!strmap_size(ctx->events))
		fputs("no events", f);
	if (sel->since_arg || sel->until_arg)
		fprintf(f, ", %s .. %s", sel->since_arg ?: "start", sel->until_arg ?: "end");
	fputs(", ", f);
	for (int i = 0; i < nsrc && i < 3; i++)
		fprintf(f, "%s%s", i ? " " : "", src[i]);
	if (nsrc > 3)
		fprintf(f, " ... (%d sources)", nsrc);
	if (!nsrc)
		fputs(sel->config ?: "the configured archive", f);
	if (fclose(f) != 0)
		return -ENOMEM;
	*ret = steal_ptr(text);
	return 0;
}

static int write_svg(const struct flamegraph *fg, const char *path, const char *title)
{
	struct flamegraph_options o = { .title = title, .count_name = "events" };
	_cleanup_free_ char *tmp = NULL;
	FILE *f;
	int r;

	if (strprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	r = flamegraph_write(fg, f, &o);
	if (fclose(f) != 0 && r >= 0)
		r = -errno;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		(void)unlink(tmp);
	return r;
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
	_cleanup_(strmap_freep) struct strmap *events = strmap_new();
	_cleanup_free_ char *auto_title = NULL;
	struct fg_ctx ctx = { .fg = fg, .events = events };
	int c, r, nbase = 0, ret = 0;

	selection_init(&sel);
	selection_init(&bsel);
	if (!fg || !base || !events) {
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
		if (r > 0)
			continue;
		switch (c) {
		case SAMPLE_SOURCE_OPT_RAW_STACKS:
			so.raw_stacks = true;
			break;
		case 'S':
			diff_since = optarg;
			break;
		case 'U':
			diff_until = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 't':
			title = optarg;
			break;
		case 'd':
			base[nbase++] = optarg;
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
	if (!title) {
		r = make_title(&ctx, &sel, argc - optind, argv + optind,
			       nbase || diff_since || diff_until, &auto_title);
		if (r < 0) {
			log_errno(LOG_ERR, r, "cannot write '%s'", out);
			return 1;
		}
		title = auto_title;
	}
	r = write_svg(fg, out, title);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot write '%s'", out);
		return 1;
	}
	return ret;
}
