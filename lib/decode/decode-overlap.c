/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash captures for the decoder: the entries of a capture that earlier
 * segments of the same boot already hold (META capture_overlap, see
 * doc/segment-format.md), which the cursors skip so that each event is
 * read once.
 */
#include <event-parse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode-internal.h"
#include "segment-meta.h"
#include "util.h"

/* "CPU:TS,CPU:TS" of a crash capture's META (doc/segment-format.md). */
void decode_read_overlap(struct decoder_segment *s)
{
	const char *v = segment_meta_get(&s->meta, "capture_overlap");
	const char *pe = segment_meta_get(&s->meta, "print_event_id");

	s->print_type = pe ? atoi(pe) : -1;
	while (v && *v) {
		unsigned long cpu;
		unsigned long long ts;
		int n = 0;

		if (sscanf(v, "%lu:%llu%n", &cpu, &ts, &n) != 2 || cpu >= DECODE_MAX_CPUS)
			break;
		if (cpu >= s->nr_overlap) {
			if (GREEDY_REALLOC0(s->overlap, s->cap_overlap, (size_t)cpu + 1) < 0)
				break;
			s->nr_overlap = cpu + 1;
		}
		s->overlap[cpu] = ts;
		v += n;
		v += *v == ',';
	}
}

bool decoder_segment_overlapped(const struct decoder_segment *s, unsigned int cpu, uint64_t ts,
				const void *data, int size)
{
	struct tep_record rec = { .data = (void *)data, .size = size };

	if (cpu >= s->nr_overlap || ts > s->overlap[cpu])
		return false;
	return tep_data_type(s->tep, &rec) != s->print_type;
}
