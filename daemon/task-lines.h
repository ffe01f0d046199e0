/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The task files (saved_cmdlines, saved_tgids) change while recording, so
 * a segment holds them twice: in its head the copy read when the daemon
 * started, and at its end the kernel's copy of that moment. Most lines of
 * the second are lines of the first (a saved_tgids of 32 000 pids is 360
 * KiB of text, 70 KiB compressed, and a few of its lines change in a
 * minute). The end copy therefore keeps only the lines that the head copy
 * does not have: a reader reads both copies in order, and a line it has
 * read already changes nothing, so it learns the same names and tgids.
 *
 * The index is the head copy's lines in byte order, as offsets into that
 * copy (borrowed: it must outlive the index), and a look-up compares
 * bytes, so no line is ever dropped for a hash collision.
 */
#ifndef STACKMAPD_TASK_LINES_H
#define STACKMAPD_TASK_LINES_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "util.h"

struct task_lines;

/*
 * Index the head copies among files (those named saved_cmdlines and
 * saved_tgids). Returns 0 or -ENOMEM; *ret is owned by the caller.
 */
int task_lines_new(const struct named_text *files, size_t nr_files, struct task_lines **ret);

/* Accepts NULL; returns NULL. */
struct task_lines *task_lines_free(struct task_lines *tl);

/* Whether a FILE record of this name is a task file (saved_cmdlines, saved_tgids). */
bool task_lines_is_task_file(const char *name);

/*
 * Append to out the lines of data[0..len), a later copy of the file name,
 * that its head copy does not have; all of them when there is no head copy
 * of that name (or tl is NULL). Lines are compared without their newline;
 * a last line without one is copied as it is. Returns 0 or -ENOMEM.
 */
int task_lines_changed(const struct task_lines *tl, const char *name, const char *data, size_t len,
		       struct buf *out);

#endif
