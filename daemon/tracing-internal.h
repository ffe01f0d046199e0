/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the files of the tracing module (daemon/tracing*.c) and by
 * nothing else: struct tracing, the undo log of the tracefs values we
 * changed, and small helpers for tracefs files. The public interface is
 * tracing.h.
 */
#ifndef STACKMAPD_TRACING_INTERNAL_H
#define STACKMAPD_TRACING_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "log.h"
#include "tracing.h"
#include "util.h"

/*
 * One change we made: writing value to path puts back what was there
 * before. Trigger files are written without O_TRUNC: a truncating open of
 * a trigger file removes every hist trigger on the event, including ones
 * that are not ours.
 */
struct undo {
	char *path;
	char *value;
	char *want;			/* what we wrote (NULL: not checked by tracing_check()) */
	bool truncate;
};

struct tracing {
	const struct config *config;	/* borrowed from the caller */
	char *dir;			/* top-level tracefs directory */
	char *instance_dir;
	char *name;			/* "" for the top level */
	struct tracefs_instance *instance;
	bool given_dir;			/* dir passed in: plain files, no mount */
	bool created;			/* we created the instance: remove it at exit */
	bool ours;			/* existed, recorded as created by an earlier run */
	uint64_t repairs;		/* settings of ours found changed and set back */
	struct log_ratelimit health_rl;
	int nr_cpus;
	int marker_fd;
	bool saved_failed;		/* the state file could not be written (logged once) */
	int subbuf_refused;		/* errno of the kernel refusing the default sub-buffer size */

	struct undo *undo;
	size_t n_undo;
	size_t cap_undo;
};

/* tracefs paths: PATH_MAX at most, else -ENAMETOOLONG (tracing.c). */
int tracing_pathf(char buf[static PATH_MAX], const char *fmt, ...) _printf_(2, 3);
bool tracing_exists(const char *path);

/* The current clock, the bracketed word of trace_clock's text (allocated), or NULL. */
char *tracing_parse_clock(const char *text);

/* Read a small tracefs file without its trailing newline (tracing-undo.c). */
int tracing_read_value(const char *path, char **ret);
int tracing_write_value(const char *path, const char *value, bool truncate);

/*
 * Whether writing path resizes a ring buffer or changes its sub-buffer
 * size, and the emptying of that buffer that must come first, logged
 * (tracing-resize.c).
 */
bool tracing_path_resizes(const char *path);
int tracing_clear_for_resize(const char *path);

/* Remember that path held value before we changed it (tracing-undo.c), in memory only. */
int tracing_undo_push(struct tracing *t, const char *path, const char *value, bool truncate);

/*
 * The same, and on disk before the caller changes path (tracing-saved.c):
 * the first change of a run records tracing_on first, so that it is put
 * back last.
 */
int tracing_undo_record(struct tracing *t, const char *path, const char *value, bool truncate);

/*
 * Put back everything recorded after mark (an index into t->undo), newest
 * first; the saved state then holds what is left (removed when nothing is).
 */
void tracing_undo_to(struct tracing *t, size_t mark);

/* Forget every recorded change without putting anything back. */
void tracing_undo_drop(struct tracing *t);

/* Write value to path, remembering old as the value to restore. Returns 0 or -errno. */
int tracing_change(struct tracing *t, const char *path, const char *value, const char *old,
		   bool truncate);

/* Set a single-value file (option, enable, tracing_on) unless it already holds value. */
int tracing_set_value(struct tracing *t, const char *path, const char *value);

/*
 * tracing-adopt.c: an existing instance recorded as ours (next to the
 * control socket) is removed and created afresh; record or forget that
 * our instance exists; refuse an adopted instance with foreign settings
 * (-EEXIST and *ret_error).
 */
int tracing_take_over(struct tracing *t);

/*
 * tracing-saved.c: the undo log on disk, next to the control socket.
 * tracing_saved_load() at open: adopt a file left by a run that did not
 * stop cleanly as the first entries of the undo log (our instance), or
 * put it back at once (another instance, or ours created afresh); a file
 * that is not one is set aside and logged. Returns 0 or -ENOMEM.
 * tracing_saved_write(): write the undo log atomically (failures logged
 * once). tracing_saved_remove(): once nothing is left to put back.
 */
int tracing_saved_load(struct tracing *t);
void tracing_saved_write(struct tracing *t);
void tracing_saved_remove(struct tracing *t);
void tracing_record_ours(struct tracing *t, bool ours);
int tracing_check_foreign(struct tracing *t, char **ret_error);

#endif
