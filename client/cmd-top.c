/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl top: the hottest stacks per event type of some segments
 * (lib/top.h over client/sample-source.h). Exit status as report's.
 */
#include <getopt.h>

#include "commands-export.h"
#include "log.h"
#include "sample-source.h"
#include "selection.h"
#include "top.h"

static const char top_usage[] =
	"Usage: stackmapctl top [--sort stack|callsite|comm|pid] [--limit N] [--json] [OPTIONS]\n"
	"                       [SEGMENT|DIRECTORY...]\n" SELECTION_USAGE;

static int top_sample(const struct sample *s, void *userdata)
{
	return top_add(userdata, s);
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "limit", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		SELECTION_OPTIONS,
		{}
	};
	_cleanup_(selection_done) struct selection sel;
	struct sample_source_options so = {};
	_cleanup_(top_freep) struct top *t = NULL;
	int sort = TOP_SORT_STACK, c, r;
	unsigned long limit = 0;
	bool json = false;
	char *end;

	selection_init(&sel);
	optind = 0;
	while ((c = getopt_long(argc, argv, "+hc:", opts, NULL)) >= 0) {
		r = selection_option(&sel, c, optarg);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (c) {
		case 's':
			sort = top_sort_from_string(optarg);
			if (sort < 0) {
				log_err("unknown sort key '%s'", optarg);
				return 2;
			}
			break;
		case 'n':
			limit = strtoul(optarg, &end, 10);
			if (*end || !*optarg) {
				log_err("bad limit '%s'", optarg);
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			printf("%s", top_usage);
			return 0;
		default:
			fprintf(stderr, "%s", top_usage);
			return 2;
		}
	}
	if (selection_resolve(&sel, argc - optind, argv + optind) < 0)
		return 1;
	t = top_new(sort);
	if (!t) {
		log_errno(LOG_ERR, -ENOMEM, "cannot count stacks");
		return 1;
	}
	r = sample_source_run(&sel, &so, top_sample, t);
	if (r < 0)
		return 1;
	if (top_print(t, stdout, json, limit) < 0) {
		log_errno(LOG_ERR, -errno, "cannot write the table");
		return 1;
	}
	return r;
}
