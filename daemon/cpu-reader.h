/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One reader per CPU: a thread that splices whole ring-buffer pages from
 * trace_pipe_raw into a pipe of its own, transcodes them into a frame,
 * has its own encoder column-encode it unless told not to and compress it
 * (segment-frame.h), and hands it to the archive. It owns its file, pipe,
 * buffers and counters; main talks to it only through
 * requests (flush, stop) and the counters, all atomics.
 */
#ifndef STACKMAPD_CPU_READER_H
#define STACKMAPD_CPU_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment.h"
#include "transcode.h"

struct archive;
struct tracefs_instance;

struct cpu_reader_params {
	struct tracefs_instance *instance;	/* borrowed; NULL: top level */
	int cpu;
	const struct page_layout *layout;	/* borrowed */
	struct stackdedup *dedup;		/* borrowed; NULL: store stacks as the kernel wrote them */
	struct archive *archive;		/* borrowed */
	size_t frame_size;			/* raw bytes per compressed frame */
	int compression_level;
	bool columns;				/* column-encode frames (little-endian traces only) */
	bool stack_time_event;			/* daemon stacks take their event's time */
	const char *const *formats;		/* event format texts for the encoder, borrowed */
	size_t nr_formats;
	int notify_fd;				/* eventfd main polls: flush done, markers seen */
};

struct cpu_reader_stats {
	uint64_t pages;
	uint64_t events;
	uint64_t raw_bytes;			/* pages as stored, before compression */
	uint64_t read_bytes;			/* as read from the kernel */
	uint64_t stored_bytes;			/* compressed */
	uint64_t lost_events;			/* from page flags */
	uint64_t lost_unknown;			/* pages flagged with losses of unknown count */
	uint64_t parse_errors;
	uint64_t write_errors;
	uint64_t read_errors;			/* poll, read or frame errors (logged, rate-limited) */
	uint64_t last_ts;
};

struct cpu_reader;

/* Open the CPU's trace_pipe_raw and allocate buffers. On success *ret owns the reader. */
int cpu_reader_new(const struct cpu_reader_params *p, struct cpu_reader **ret);

/* Start the reading thread. Returns 0 or -errno. */
int cpu_reader_start(struct cpu_reader *r);

/*
 * Without a thread: read everything the buffer holds now (full and partial
 * pages) and hand it to the archive. Used at start to drain what boot
 * capture left before changing the buffer. Returns 0 or -errno.
 */
int cpu_reader_drain(struct cpu_reader *r);

/*
 * Ask the thread to read everything the buffer holds now, hand it over as a
 * frame and, if boundary is not NULL, append that per-CPU generation
 * boundary right after it. Returns the request's token; completion is
 * signalled on notify_fd and checked with cpu_reader_flushed().
 */
uint64_t cpu_reader_request_flush(struct cpu_reader *r, const struct segment_generation *boundary);

/*
 * True once the flush with this token (or a later one) has completed, or
 * once the thread has ended by itself (it owes no flush any more).
 */
bool cpu_reader_flushed(struct cpu_reader *r, uint64_t token);

/* Move the markers seen so far into out (at most max). Returns how many. */
size_t cpu_reader_take_markers(struct cpu_reader *r, struct page_marker *out, size_t max);

/* Stop: the thread flushes the buffer, hands over its last frame and exits; joined here. */
void cpu_reader_stop(struct cpu_reader *r);

void cpu_reader_get_stats(struct cpu_reader *r, struct cpu_reader_stats *ret);
int cpu_reader_cpu(const struct cpu_reader *r);

/*
 * False once the thread has ended by itself (an error it cannot go on
 * after, or ended without saying so: found by joining it): the CPU is no
 * longer recorded. True before start and after stop. Main thread only.
 */
bool cpu_reader_alive(struct cpu_reader *r);

/* Kernel task id of the reader thread once started (0 before). */
int cpu_reader_tid(const struct cpu_reader *r);

/* Stops the thread if running, closes everything. Returns NULL. */
struct cpu_reader *cpu_reader_free(struct cpu_reader *r);

#endif
