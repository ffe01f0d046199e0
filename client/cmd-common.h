/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by stackmapctl's offline segment commands (cmd-common.c). */
#ifndef STACKMAPCTL_CMD_COMMON_H
#define STACKMAPCTL_CMD_COMMON_H

#include <stdbool.h>

#include "json.h"

/*
 * Print the finished JSON text of w as one line on stdout and free w's
 * memory (the writer is left empty). Returns 0 or the writer's -errno.
 */
int cmd_json_print(struct json_writer *w);

struct selection;

/*
 * Parse "[--json] [-c CONFIG] [SEGMENT|DIRECTORY...]" (argv[0] is the
 * command's name) and resolve the segments into sel (initialized; see
 * client/selection.h). Returns 0 with *ret_json, 1 when help was printed,
 * -1 on a usage error, -2 when nothing can be read (logged).
 */
int cmd_segment_args(int argc, char **argv, bool *ret_json, struct selection *sel);

/* Exit status for a cmd_segment_args() result other than 0. */
static inline int cmd_segment_args_status(int k)
{
	return k == 1 ? 0 : k == -1 ? 2 : 1;
}

/* What a segment_reader_open() error means for a user, or NULL for a plain -errno. Static. */
const char *cmd_segment_open_error(int r);

/*
 * Whether timestamps of the trace clock a segment's META names count
 * cycles or ticks (x86-tsc, counter, ppc-tb, ...) rather than nanoseconds:
 * they are then shown as raw counts, never as seconds. A missing clock is
 * the kernel's default, local (nanoseconds).
 */
bool cmd_clock_is_counter(const char *clock);

#endif
