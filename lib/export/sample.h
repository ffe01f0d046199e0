/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sample: one event as the exporters (flame graph, pprof, CSV, top)
 * see it, independent of how it was decoded: event name, time, CPU, task
 * and its kernel stack as addresses with their symbols. Producers fill it
 * from the decoder (or, in tests, from a table); consumers copy what they
 * keep, so every pointer in a sample is borrowed for the call it is passed to.
 */
#ifndef STACKMAPD_SAMPLE_H
#define STACKMAPD_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One stack frame. */
struct sample_frame {
	uint64_t addr;
	const char *sym;		/* function name without offset, or NULL: unknown */
};

/* One decoded field of the event, as text. */
struct sample_field {
	const char *name;
	const char *value;
};

/*
 * Where a sample was recorded: its segment's META, for exporters that keep
 * many hosts' events apart (lib/export/clickhouse.h). Strings are "" when
 * the segment does not say.
 */
struct sample_origin {
	const char *path;		/* the segment file */
	const char *host;		/* META hostname */
	const char *boot_id;
	const char *recording_id;
	const char *kernel;		/* META kernel_release */
	uint64_t segment_seq;
	uint64_t serial;		/* as decoder_segment_serial(): unique per segment read */
};

struct sample {
	const char *event;		/* event name ("kmalloc"), never NULL */
	uint64_t ts;			/* trace clock, nanoseconds */
	unsigned int cpu;
	int pid;
	const char *comm;		/* NULL: unknown */
	size_t nr_frames;		/* 0: the event has no stack */
	const struct sample_frame *frames; /* innermost first */
	/*
	 * Frames of samples with the same nonzero scope and the same
	 * addresses have the same symbols (the scope names one symbol table,
	 * for the life of the process); 0: no such promise.
	 */
	uint64_t scope;
	/*
	 * The function of the event's own call_site field (kmalloc,
	 * kmem_cache_alloc, ...), NULL when it has none or it is unknown.
	 */
	const char *call_site;
	size_t nr_fields;
	const struct sample_field *fields;
	/*
	 * Bit i set: fields[i] is a number, its value numbers[i], so that a
	 * consumer need not parse the text back (i < 32). 0: none said.
	 */
	uint32_t numeric_fields;
	const uint64_t *numbers;

	/* Filled by client/sample-source.c (zero from other producers): */
	uint64_t wall_ns;		/* CLOCK_REALTIME of ts, ns; 0: not known */
	const struct sample_origin *origin; /* NULL: not known */
	/*
	 * Events the kernel lost on this CPU just before this one, as its
	 * page says: 0 none, > 0 how many, -1 some (the count was not kept).
	 */
	long long lost_before;
	/*
	 * The stack is an entry of the data (a kernel_stack, stack_id or
	 * stack_ref right after the event); false without a stack, or when
	 * it is the missing stack of a strict reset pause ("[unresolved]").
	 */
	bool stack_entry;
	/* A stack entry alone, whose event was not seen (event "[unknown]"). */
	bool no_event;
	const char *system;		/* the event's system ("kmem"), NULL: not known */
};

/*
 * The name a frame is shown under: its symbol, or its address as
 * "0xffffffff81234567" in buf (at least 19 bytes) when it has none.
 * Returns sym or buf.
 */
const char *sample_frame_name(const struct sample_frame *f, char *buf, size_t len);

#define SAMPLE_FRAME_NAME_MAX 24

/*
 * Whether sym (a function name, may be NULL) belongs to the tracing
 * machinery that wrote an event (trace_event_raw_event_*, __traceiter_*,
 * perf_trace_*, ..., and trace_EVENT itself), not to the code that hit it.
 */
bool sample_frame_is_machinery(const char *sym, const char *event);

/*
 * How many innermost frames of frames[0..nr) (a stack of event) are
 * tracing machinery: the frames to leave out to start at the event's call
 * site. 0 when none are, or when all are (such a stack is shown whole).
 */
size_t sample_machinery_frames(const struct sample_frame *frames, size_t nr, const char *event);

#endif
