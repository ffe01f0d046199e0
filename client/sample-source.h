/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Segments as a stream of samples (lib/export/sample.h) for the exporters: each
 * event with the kernel stack that follows it on the same CPU. Built on
 * lib/decode/decode.h's decoding loop.
 */
#ifndef STACKMAPCTL_SAMPLE_SOURCE_H
#define STACKMAPCTL_SAMPLE_SOURCE_H

#include <stdbool.h>

#include "sample.h"

struct selection;

struct sample_source_options {
	const char *progress_label;	/* draw a progress bar on a terminal stderr, NULL: none */
	bool raw_stacks;		/* keep the tracing machinery's frames (sample.h) */
	bool call_sites;		/* fill sample.call_site from the event's field */
	/*
	 * A stack entry whose event was not seen (lost, or before the data)
	 * becomes a sample of its own, of its owner's event type or
	 * "[unknown]" (as `folded` counts it), instead of being left out.
	 */
	bool orphan_stacks;
	/*
	 * With orphan_stacks: each entry counts in the segment that holds it.
	 * A stack that starts a segment after its event ended the one before
	 * still pairs with that event (whose sample then counts the event's
	 * entry only), and is also a sample of its own in its segment, as if
	 * that segment were read alone (no event, "[unknown]"): what each
	 * segment's samples count does not depend on the segments read with
	 * it (the fleet's exactly-once rows).
	 */
	bool segment_entries;
	/*
	 * Fill sample.fields with these fields of the event (a NULL-terminated
	 * list of at most SAMPLE_SOURCE_MAX_FIELDS names; NULL: none), those
	 * its type has, in this order: numbers in decimal, strings as they are.
	 */
	const char *const *fields;
};

#define SAMPLE_SOURCE_MAX_FIELDS 8

/* getopt_long entry and usage line of --raw-stacks, for the commands built on this */
#define SAMPLE_SOURCE_OPT_RAW_STACKS 0x1100
#define SAMPLE_SOURCE_OPTIONS { "raw-stacks", no_argument, NULL, SAMPLE_SOURCE_OPT_RAW_STACKS }
#define SAMPLE_SOURCE_USAGE \
	"  --raw-stacks    keep the tracing machinery's frames (trace_event_raw_event_*,\n" \
	"                  __traceiter_*, ...) at the top of each stack\n"

/*
 * Samples carry their wall-clock time (through their segment's CLOCK
 * pairs, or the pairs of the other segments of the recording), their
 * origin (the segment's META) and the events lost before them.
 *
 * Decode what sel selects (client/selection.h, resolved) and call fn for
 * every event that passes its filters as a sample (borrowed for the
 * call). Damaged segments are logged and
 * skipped as by `report`; fn returning a negative errno stops. Returns 0
 * when everything decoded, 1 when something was damaged or fn failed, 2
 * when a filter names what the selection does not hold, or a negative
 * errno (logged) when nothing could be decoded.
 */
int sample_source_run(struct selection *sel, const struct sample_source_options *o,
		      int (*fn)(const struct sample *s, void *userdata), void *userdata);

#endif
