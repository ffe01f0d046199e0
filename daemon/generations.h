/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Driving the kernel stack map from the recorder: periodic snapshots with
 * trace markers, the reset protocols (lossless: tracing runs on and the
 * reset is bracketed by markers; strict: tracing paused, every CPU drained,
 * a per-CPU boundary in each stream), resets made by someone else, and
 * the stack-map tables of each segment. See doc/stackmap.md.
 */
#ifndef STACKMAPD_GENERATIONS_H
#define STACKMAPD_GENERATIONS_H

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "buf.h"
#include "segment.h"
#include "stackmap.h"
#include "transcode.h"

struct archive;
struct archive_segment;
struct config;
struct generations;
struct tracing;

/* Completion of a reset: r < 0 on failure; path is always NULL here. */
typedef void (*generations_done_fn)(void *userdata, int r, const char *path);

/* What the module asks of the one that drives the readers (the recorder). */
struct generations_ops {
	/*
	 * Ask every CPU reader to flush what its buffer holds (each appending
	 * a per-CPU GENERATION record boundary after its frame, unless
	 * boundary is NULL), then call cont(g) on the loop once all have.
	 * Returns 0 (cont will be called) or -ENOMEM.
	 */
	int (*flush)(void *userdata, const struct segment_generation *boundary,
		     void (*cont)(struct generations *g), struct generations *g);
	/* Finish the current segment now (no flush); failures are the callee's to log. */
	void (*rotate)(void *userdata, const char *why);
};

struct generations_params {
	struct tracing *tracing;	/* borrowed: markers, tracing_on */
	struct archive *archive;	/* borrowed: GENERATION records */
	sd_event *event;		/* borrowed: the retry timer */
	const struct config *cfg;	/* borrowed until generations_set_config() */
	const struct generations_ops *ops;	/* borrowed */
	void *userdata;			/* passed to ops */
	bool flight;			/* flight recorder: the buffer is the recording, never
					 * read for a reset (resets are refused, a reset made
					 * elsewhere begins a generation without markers) */
};

/*
 * Enable the kernel stack map (adopting it if boot capture enabled it) and
 * open generation 1 from the map as found. p is copied; what it points to
 * must outlive the object. Returns 0, -EOPNOTSUPP when the kernel has no
 * usable stack map, or -errno. On success *ret is owned by the caller.
 */
int generations_new(const struct generations_params *p, struct generations **ret);

/* A trace marker read back from a CPU's pages. */
void generations_marker(struct generations *g, const struct page_marker *m);

/* Periodic: snapshot the map, detect resets made elsewhere, reset when the policy says so. */
void generations_tick(struct generations *g);

/*
 * Reset now (request). done() runs when the new generation has begun.
 * Returns 0, -EBUSY while a reset runs, -EOPNOTSUPP for the flight
 * recorder (bounding a reset means reading, and so emptying, the buffer
 * that is the recording), or -errno.
 */
int generations_reset(struct generations *g, generations_done_fn done, void *userdata);

/* True while a reset is in progress (rotations wait for it). */
bool generations_busy(const struct generations *g);

/*
 * The recorder stops: its readers have read everything and their markers
 * were passed on. A reset in progress that has reset the map begins its
 * generation now, without a rotation (the last segment records it); one
 * that has not is abandoned. tracing_stays_on: the recorder leaves
 * tracing on (keep_tracing), so a strict reset turns it back on.
 */
void generations_stop(struct generations *g, bool tracing_stays_on);

/* Segment hooks: note the generation in force; write the stack-map tables. */
void generations_segment_begin(struct generations *g, struct archive_segment *seg);
int generations_segment_end(struct generations *g, struct archive_segment *seg);

/* A reloaded config (borrowed from then on). */
void generations_set_config(struct generations *g, const struct config *c);

/* The stack map's counters, for status. */
void generations_get_stats(const struct generations *g, struct stackmap_stats *ret);

/* STATS keys for a segment's tail. */
int generations_stats(struct generations *g, struct buf *b);

/*
 * Stop using the kernel stack map before the run records full stacks (it
 * was used only for the stack ids of the events kept at start): turn
 * options/stackmap off, so that no event gets an id any more, and take a
 * last snapshot, which holds every id given until then (turning the map
 * off does not clear it). A clean stop puts the option back. Returns 0 or
 * -errno.
 */
int generations_leave(struct generations *g);

/* Put options/stackmap back (unless keep_tracing). */
void generations_restore(struct generations *g);

struct generations *generations_free(struct generations *g);

#endif
