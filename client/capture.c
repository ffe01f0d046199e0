/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash captures as the client shows them (capture.h): info prints the
 * line under a segment's head, list under its row.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "capture.h"
#include "segment-meta.h"
#include "segment.h"
#include "util.h"

static void format_date(uint64_t usec, char *buf, size_t len)
{
	time_t sec = (time_t)(usec / USEC_PER_SEC);
	struct tm tm;

	if (!usec || !localtime_r(&sec, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		(void)snprintf(buf, len, "an unknown time");
}

int capture_describe(const struct segment_meta *meta, uint64_t span_ns, char *buf, size_t len)
{
	const char *capture, *end, *boot;
	uint64_t last = 0, stop = 0;
	char date[64];
	bool clean;

	assert(meta);
	assert(buf);

	capture = segment_meta_get(meta, "capture");
	end = segment_meta_get(meta, "capture_boot_end");
	boot = segment_meta_get(meta, "boot_id");
	if (!capture || !streq(capture, "crash"))
		return 0;
	clean = end && streq(end, "clean");
	(void)segment_meta_u64(meta, "capture_last_usec", &last);
	(void)segment_meta_u64(meta, "capture_stop_usec", &stop);
	format_date(clean && stop ? stop : last, date, sizeof(date));
	(void)snprintf(buf, len, "previous boot %s, %s at %s, last %.1f s%s", boot ?: "?",
		       clean ? "the daemon stopped cleanly" :
		       end && streq(end, "unknown") ? "its markers overwritten: ended" :
						      "ended without a clean stop", date,
		       (double)span_ns / 1e9,
		       streq(segment_meta_get(meta, "capture_kernel_changed") ?: "no", "yes") ?
		       " (another kernel: symbols may be wrong)" : "");
	return 1;
}

int capture_describe_file(const char *path, char *buf, size_t len)
{
	_cleanup_(segment_reader_freep) struct segment_reader *rd = NULL;
	struct segment_meta meta = {};
	const struct segment_index *idx;
	struct segment_record rec;
	uint64_t first = UINT64_MAX, last = 0;
	int r;

	assert(path);
	assert(buf);

	r = segment_reader_open(path, &rd);
	if (r < 0)
		return r;
	segment_reader_skip_pages(rd, true);
	r = segment_reader_next(rd, &rec);
	if (r <= 0 || rec.type != SEGMENT_REC_META)
		return r < 0 ? r : 0;
	r = segment_meta_parse(&meta, rec.data, rec.len);
	if (r < 0)
		return r;
	idx = segment_reader_index(rd);
	for (uint32_t i = 0; idx && i < idx->nr_cpus; i++) {
		if (!idx->cpus[i].events)
			continue;
		first = MIN(first, idx->cpus[i].first_ts);
		last = MAX(last, idx->cpus[i].last_ts);
	}
	r = capture_describe(&meta, last > first ? last - first : 0, buf, len);
	segment_meta_done(&meta);
	return r;
}
