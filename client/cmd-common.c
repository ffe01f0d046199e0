/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the offline segment commands (info, verify, stacks) share: their
 * argument parsing, the words for a segment that cannot be opened, and
 * printing a JSON document built with the JSON writer.
 */
#include <stdio.h>

#include "cmd-common.h"
#include "log.h"
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

/* Returns 0 (go on), 1 (help printed) or -1 (usage error, logged). */
int cmd_segment_args(int argc, char **argv, bool *ret_json, int *ret_first)
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
		} else if (streq(argv[i], "-h") || streq(argv[i], "--help")) {
			printf("Usage: stackmapctl %s [--json] SEGMENT...\n", argv[0]);
			return 1;
		} else {
			log_err("%s: unknown option '%s'", argv[0], argv[i]);
			return -1;
		}
	}
	if (i >= argc) {
		log_err("usage: stackmapctl %s [--json] SEGMENT...", argv[0]);
		return -1;
	}
	*ret_json = json;
	*ret_first = i;
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
