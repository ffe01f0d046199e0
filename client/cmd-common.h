/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by stackmapctl's offline segment commands (cmd-common.c). */
#ifndef STACKMAPCTL_CMD_COMMON_H
#define STACKMAPCTL_CMD_COMMON_H

#include <stdbool.h>
#include <stdio.h>

#include "json.h"
#include "progress.h"

/*
 * Print the finished JSON text of w as one line on stdout and free w's
 * memory (the writer is left empty). Returns 0 or the writer's -errno.
 */
int cmd_json_print(struct json_writer *w);

struct selection;

/*
 * Run a command of the form "NAME [--json] [-c CONFIG] [SEGMENT|DIRECTORY...]"
 * (argv[0] is NAME): call one() on every segment named (directories and
 * the configured archive expanded, see client/selection.h), with an empty
 * line between two segments' text when blank_line is set. Returns the exit
 * status: 0 when every one() returned 0 (or help was printed), 2 on a usage
 * error, else 1.
 */
int cmd_segment_each(int argc, char **argv, int (*one)(const char *path, bool json),
		     bool blank_line);

/*
 * A progress bar over total units (segments) for a command whose output
 * streams to stdout while it reads (report, stacks, verify): drawn
 * on stderr when that is a terminal and stdout goes to a file (or
 * /dev/null), after the first second. Never with --json, never when
 * stdout is the terminal (the bar would cut through the lines) or a pipe
 * (its reader may share the terminal). STACKMAPCTL_PROGRESS=never turns
 * every bar off, =always draws it from the start, also for short reads.
 */
void cmd_progress_init(struct progress *p, const char *label, uint64_t total, bool json);

/* The delay before any bar is drawn: a second, or what STACKMAPCTL_PROGRESS says. */
void cmd_progress_policy(struct progress *p);

/* What a segment_reader_open() error means for a user, or NULL for a plain -errno. Static. */
const char *cmd_segment_open_error(int r);

/*
 * Whether timestamps of the trace clock a segment's META names count
 * cycles or ticks (x86-tsc, counter, ppc-tb, ...) rather than nanoseconds:
 * they are then shown as raw counts, never as seconds. A missing clock is
 * the kernel's default, local (nanoseconds).
 */
bool cmd_clock_is_counter(const char *clock);

/*
 * An output file that is written whole or not at all: a regular file
 * (or a new one) is written as PATH.tmp and renamed over PATH by
 * cmd_output_finish(); anything else (/dev/null, a FIFO, a terminal) is
 * written in place, since a rename would put a file where the device was.
 */
struct cmd_output {
	char *path;		/* borrowed */
	char *tmp;		/* owned; NULL: written in place */
	int fd;			/* -1 once closed (or handed to a FILE) */
};

/* Open o for path. Returns the file descriptor (o->fd) or -errno. */
int cmd_output_open(struct cmd_output *o, const char *path);

/*
 * Close o's descriptor (if still open) and, when r >= 0, put the file in
 * place; on an error the temporary file is removed. Returns r, or the
 * -errno of closing or renaming.
 */
int cmd_output_finish(struct cmd_output *o, int r);

/*
 * Write path whole or not at all (struct cmd_output) through a stdio
 * stream: fn(data, f) writes it and returns >= 0 or -errno. Returns that,
 * or the -errno of opening, closing or renaming.
 */
int cmd_output_write(const char *path, int (*fn)(void *data, FILE *f), void *data);

#endif
