/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CSV export for SQL engines, two tables (RFC 4180, with a header line):
 *
 *   events: time,cpu,pid,comm,event,stack_id
 *   stacks: stack_id,depth,frames
 *
 * time is the trace clock in seconds with nanoseconds ("1701.333346123");
 * stack_id numbers the distinct stacks from 1 in order of first use (0:
 * the event has no stack); frames are the function names (an address
 * when there is none) from the innermost to the outermost, joined by ';'.
 * Stacks with the same function names are one stack, as in folded output.
 */
#ifndef STACKMAPD_CSV_H
#define STACKMAPD_CSV_H

#include <stdio.h>

#include "sample.h"
#include "util.h"

struct csv_export;

/*
 * Start an export whose event rows go to events (borrowed; written as
 * samples come, the header now). Returns 0 and *ret, or -errno.
 */
int csv_export_new(FILE *events, struct csv_export **ret);

/* Free it (does not close the files). Accepts NULL; returns NULL. */
struct csv_export *csv_export_free(struct csv_export *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct csv_export *, csv_export_free);

/* Write the event row of s (borrowed) and number its stack. Returns 0 or -errno. */
int csv_export_add(struct csv_export *c, const struct sample *s);

/* Write the stack table to stacks (borrowed) and flush both files. Returns 0 or -errno. */
int csv_export_finish(struct csv_export *c, FILE *stacks);

#endif
