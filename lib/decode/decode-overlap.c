/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash captures for the decoder: the entries of a capture that earlier
 * segments of the same boot already hold (META capture_overlap, see
 * doc/segment-format.md), which the cursors skip so that each event is
 * read once. Which copy to read where the earlier ones cannot resolve
 * their stacks is decode-plan.c.
 */
#include <assert.h>
#include <errno.h>
#include <event-parse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode-internal.h"
#include "segment-meta.h"
#include "segment.h"
#include "stacktab-resolve.h"
#include "util.h"

void decode_parse_overlap(const char *v, uint64_t **ret, size_t *ret_n, size_t *ret_cap)
{
	while (v && *v) {
		unsigned long cpu;
		unsigned long long ts;
		int n = 0;

		if (sscanf(v, "%lu:%llu%n", &cpu, &ts, &n) != 2 || cpu >= DECODE_MAX_CPUS)
			break;
		if (cpu >= *ret_n) {
			if (GREEDY_REALLOC0(*ret, *ret_cap, (size_t)cpu + 1) < 0)
				break;
			*ret_n = cpu + 1;
		}
		(*ret)[cpu] = ts;
		v += n;
		v += *v == ',';
	}
}

/* "CPU:TS,CPU:TS" of a crash capture's META (doc/segment-format.md). */
void decode_read_overlap(struct decoder_segment *s)
{
	const char *pe = segment_meta_get(&s->meta, "print_event_id");

	s->print_type = pe ? atoi(pe) : -1;
	decode_parse_overlap(segment_meta_get(&s->meta, "capture_overlap"), &s->overlap, &s->nr_overlap,
		      &s->cap_overlap);
}

bool decoder_segment_overlapped(const struct decoder_segment *s, unsigned int cpu, uint64_t ts,
				const void *data, int size, bool *skipped)
{
	struct tep_record rec = { .data = (void *)data, .size = size };
	int type = tep_data_type(s->tep, &rec);
	bool held = cpu < s->nr_overlap && ts <= s->overlap[cpu];

	/* markers: each copy has its own (the crash buffer's, the recording's) */
	if (type == s->print_type)
		return false;
	/* a stack goes with the event before it (the capture's, held elsewhere, by its time too) */
	for (int k = DECODED_KERNEL_STACK; k <= DECODED_STACK_REF; k++)
		if (type == s->stack_type[k])
			return *skipped || held;
	*skipped = held || (cpu < s->nr_yield && s->yield[cpu] && ts >= s->yield[cpu]);
	return *skipped;
}
