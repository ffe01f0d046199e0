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
	/*
	 * A stack entry whose event was not seen (lost, or before the data)
	 * becomes a sample of its own, of event "[unknown]" (as `folded`
	 * counts it), instead of being left out.
	 */
	bool orphan_stacks;
};

/*
 * Samples carry their wall-clock time (through their segment's CLOCK
 * pairs, or the pairs of the other segments of the recording), their
 * origin (the segment's META) and the events lost before them.
 *
 * Decode what sel selects (client/selection.h, resolved) and call fn for
 * every event that passes its filters as a sample (borrowed for the
 * call). Damaged segments are logged and
 * skipped as by `report`; fn returning a negative errno stops. Returns 0
 * when everything decoded, 1 when something was damaged or fn failed,
 * -1 when nothing could be decoded.
 */
int sample_source_run(struct selection *sel, const struct sample_source_options *o,
		      int (*fn)(const struct sample *s, void *userdata), void *userdata);

#endif
