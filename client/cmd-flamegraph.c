/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl flamegraph: an interactive SVG flame graph of some segments
 * (lib/flamegraph.h over client/sample-source.h), differential against
 * baseline segments given with --diff. Exit status as report's.
 */
#include <getopt.h>

#include "commands-export.h"
#include "flamegraph.h"
#include "log.h"
#include "sample-source.h"

static const char fg_usage[] =
	"Usage: stackmapctl flamegraph -o FILE.svg [--event NAME] [--title TEXT]\n"
	"                              [--diff BASELINE_SEGMENT]... SEGMENT...\n";

struct fg_ctx {
	struct flamegraph *fg;
	bool before;
};

static int fg_sample(const struct sample *s, void *userdata)
{
	struct fg_ctx *ctx = userdata;

	return flamegraph_add_sample(ctx->fg, s, ctx->before);
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
		{ "event", required_argument, NULL, 'e' },
		{ "title", required_argument, NULL, 't' },
		{ "diff", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	_cleanup_(flamegraph_freep) struct flamegraph *fg = flamegraph_new();
	_cleanup_free_ char **base = calloc((size_t)argc, sizeof(char *));
	struct sample_source_options so = { .progress_label = "flamegraph" };
	const char *out = NULL, *title = NULL;
	struct fg_ctx ctx = { .fg = fg };
	int c, r, nbase = 0, ret = 0;

	if (!fg || !base) {
		log_errno(LOG_ERR, -ENOMEM, "cannot build the flame graph");
		return 1;
	}
	optind = 0;
	while ((c = getopt_long(argc, argv, "+ho:", opts, NULL)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'e':
			so.event = optarg;
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
	if (optind >= argc || !out) {
		fprintf(stderr, "%s", fg_usage);
		return 2;
	}
	if (nbase) {
		ctx.before = true;
		r = sample_source_run(base, nbase, &so, fg_sample, &ctx);
		if (r < 0)
			return 1;
		ret |= r;
		ctx.before = false;
	}
	r = sample_source_run(argv + optind, argc - optind, &so, fg_sample, &ctx);
	if (r < 0)
		return 1;
	ret |= r;
	r = write_svg(fg, out, title);
	if (r < 0) {
		log_errno(LOG_ERR, r, "cannot write '%s'", out);
		return 1;
	}
	return ret;
}
