/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the offline segment commands (info, verify, stacks) share: their
 * argument parsing, the words for a segment that cannot be opened, and
 * printing a JSON document built with the JSON writer.
 */
#include <stdio.h>

#include "cmd-common.h"
#include "log.h"
#include "selection.h"
#include "util.h"

/* Print the finished JSON text of w as one line, and free w's memory. Returns 0 or -errno. */
int cmd_json_print(struct json_writer *w)
{
	_cleanup_free_ char *text = NULL;
	int r;

	r = json_writer_finish(w, &text, NULL);
	json_writer_done(w);
	if (r < 0)
		return r;
	printf("%s\n", text);
	return 0;
}

/* Returns 0 (go on), 1 (help printed), -1 (usage error, logged) or -2 (nothing to read). */
int cmd_segment_args(int argc, char **argv, bool *ret_json, struct selection *sel)
{
	bool json = false;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (streq(argv[i], "--")) {
			i++;
			break;
		}
		if (streq(argv[i], "--json")) {
			json = true;
		} else if ((streq(argv[i], "-c") || streq(argv[i], "--config")) && i + 1 < argc) {
			sel->config = argv[++i];
		} else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
			printf("Usage: stackmapctl %s [--json] [-c CONFIG] [SEGMENT|DIRECTORY...]\n",
			       argv[0]);
			return 1;
		} else {
			log_err("%s: unknown option '%s'", argv[0], argv[i]);
			return -1;
		}
	}
	if (selection_resolve(sel, argc - i, argv + i) < 0)
		return -2;
	*ret_json = json;
	return 0;
}

const char *cmd_segment_open_error(int r)
{
	if (r == -EBADMSG)
		return "not a segment, or its prologue is damaged";
	if (r == -EPROTONOSUPPORT)
		return "unsupported segment format version";
	return NULL;
}

bool cmd_clock_is_counter(const char *clock)
{
	return clock && *clock && !streq(clock, "local") && !streq(clock, "global") &&
	       !streq(clock, "uptime") && !streq(clock, "perf") && !startswith(clock, "mono") &&
	       !streq(clock, "boot") && !streq(clock, "tai");
}
