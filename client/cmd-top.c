/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl top: the hottest stacks per event type of some segments
 * (lib/top.h over client/sample-source.h). Exit status as report's.
 */
#include <getopt.h>

#include "commands-export.h"
#include "log.h"
#include "sample-source.h"
#include "top.h"

static const char top_usage[] =
	"Usage: stackmapctl top [--sort stack|callsite|comm|pid] [--event NAME] [--limit N]\n"
	"                       [--json] SEGMENT...\n";

static int top_sample(const struct sample *s, void *userdata)
{
	return top_add(userdata, s);
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sort", required_argument, NULL, 's' },
		{ "event", required_argument, NULL, 'e' },
		{ "limit", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct sample_source_options so = {};
	_cleanup_(top_freep) struct top *t = NULL;
	int sort = TOP_SORT_STACK, c, r;
	unsigned long limit = 0;
	bool json = false;
	char *end;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) >= 0) {
		switch (c) {
		case 's':
			sort = top_sort_from_string(optarg);
			if (sort < 0) {
				log_err("unknown sort key '%s'", optarg);
				return 2;
			}
			break;
		case 'e':
			so.event = optarg;
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
	if (optind >= argc) {
		fprintf(stderr, "%s", top_usage);
		return 2;
	}
	t = top_new(sort);
	if (!t) {
		log_errno(LOG_ERR, -ENOMEM, "cannot count stacks");
		return 1;
	}
	r = sample_source_run(argv + optind, argc - optind, &so, top_sample, t);
	if (r < 0)
		return 1;
	if (top_print(t, stdout, json, limit) < 0) {
		log_errno(LOG_ERR, -errno, "cannot write the table");
		return 1;
	}
	return r;
}
