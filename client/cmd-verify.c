/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl verify: whether each segment given is intact, checked record
 * by record by the segment reader; where the first damage is and how much
 * before it is usable. Exit status 0 only when every segment is ok.
 */
#include <inttypes.h>

#include "cmd-common.h"
#include "commands.h"
#include "log.h"
#include "segment.h"
#include "util.h"

static int verify_one(const char *path, bool json)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	struct segment_record rec;
	const char *status, *msg = NULL;
	uint64_t records = 0, off = 0;
	bool truncated = false;
	uint64_t intact;
	int k;

	k = segment_reader_open(path, &r);
	if (k < 0 && !cmd_segment_open_error(k)) {
		log_errno(LOG_ERR, k, "cannot open '%s'", path);
		status = "unreadable";
		msg = strerror(-k);
	} else if (k < 0) {
		status = "damaged";
		msg = cmd_segment_open_error(k);
	} else {
		while ((k = segment_reader_next(r, &rec)) > 0)
			records++;
		if (k < 0 && k != -EBADMSG) {
			log_errno(LOG_ERR, k, "cannot read '%s'", path);
			status = "unreadable";
			msg = strerror(-k);
			off = segment_reader_good_offset(r);
		} else if (k < 0) {
			status = "damaged";
			msg = segment_reader_error(r);
			off = segment_reader_error_offset(r);
		} else if (!segment_reader_complete(r)) {
			status = "unfinished";
		} else {
			status = "ok";
			truncated = segment_reader_index(r)->flags & SEGMENT_INDEX_F_TRUNCATED;
		}
	}

	/* Bytes known good: the whole file when it is intact. */
	intact = !r			? 0
		 : streq(status, "ok")	? segment_reader_file_size(r)
					: segment_reader_good_offset(r);
	if (json) {
		struct json_writer w;

		json_writer_init(&w, SIZE_MAX);
		json_object_open(&w, NULL);
		json_add_string(&w, "path", path);
		json_add_string(&w, "status", status);
		json_add_bool(&w, "complete", r && segment_reader_complete(r));
		json_add_bool(&w, "truncated", truncated);
		json_add_uint(&w, "records", records);
		json_add_uint(&w, "bytes", intact);
		if (msg) {
			json_add_uint(&w, "error_offset", off);
			json_add_string(&w, "error", msg);
			/* only the last record runs past the end: a writer's unfinished tail */
			json_add_bool(&w, "cut_short", r && segment_reader_cut_short(r));
		}
		json_object_close(&w);
		if (cmd_json_print(&w) < 0)
			return 1;
	} else if (streq(status, "ok")) {
		printf("%s: ok, %" PRIu64 " records (%" PRIu64 " bytes)%s\n", path, records, intact,
		       truncated ? ", recovered after an unclean stop (truncated)" : "");
	} else if (streq(status, "unfinished")) {
		printf("%s: unfinished (no trailer), %" PRIu64 " records intact\n", path, records);
	} else if (streq(status, "damaged")) {
		printf("%s: offset %" PRIu64 ": %s; %" PRIu64 " records (%" PRIu64
		       " bytes) before it are intact\n", path, off, msg, records, intact);
	}
	return streq(status, "ok") ? 0 : 1;
}

int cmd_verify(int argc, char **argv)
{
	return cmd_segment_each(argc, argv, verify_one, false);
}
