/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's state, shared by recorder.c (start, stop, segments,
 * requests) and generations.c (the kernel stack map). Nothing else includes
 * this header.
 */
#ifndef STACKMAPD_RECORDER_INTERNAL_H
#define STACKMAPD_RECORDER_INTERNAL_H

#include <sys/utsname.h>

#include "archive.h"
#include "cpu_reader.h"
#include "recorder.h"
#include "tracing.h"
#include "transcode.h"

struct generations;

struct file_item {
	char *name;
	void *data;
	size_t len;
};

struct flush_op {
	struct flush_op *next;
	uint64_t *tokens;			/* per reader */
	void (*cont)(struct recorder *rec, struct flush_op *op);
	recorder_done_fn done;
	void *userdata;
};

struct recorder {
	const struct config *cfg;
	struct tracing *tracing;
	struct archive *archive;
	struct stackdedup *dedup;
	struct page_layout layout;
	struct ksyms *ksyms;
	struct cpu_reader **readers;
	unsigned nr_readers;
	unsigned nr_cpus;
	enum recorder_state state;

	sd_event *event;
	sd_event_source *notify_src, *rotate_src, *age_timer, *flush_timer, *trigger_timer;
	int notify_fd;
	struct flush_op *ops;
	void (*on_segment)(void *userdata, const char *path);
	void *userdata;

	struct file_item *files;		/* decode files, collected once */
	size_t nr_files;
	char recording_id[33];
	char *boot_id;
	struct utsname uts;
	char hostname[256];

	struct generations *gens;		/* NULL: no kernel stack map */
	struct tracing_cpu_stats *kstats_base;	/* per cpu, at segment start */
	uint64_t *rate_events;			/* per reader, at the last status sample */
	uint64_t rate_usec;
	struct recorder_cpu_status *cpu_status;
	uint64_t unresolved;
};

/*
 * Ask every reader to flush (with an optional per-CPU generation boundary
 * after its frame); cont runs on the main loop once all have. Returns the
 * operation or NULL (ENOMEM).
 */
struct flush_op *recorder_flush_all(struct recorder *rec, const struct segment_generation *boundary,
				    void (*cont)(struct recorder *rec, struct flush_op *op),
				    recorder_done_fn done, void *userdata);

/* Finish the current segment now (no flush). Returns 0 or -errno; logs. */
int recorder_rotate_now(struct recorder *rec, const char *why, char **ret_path);

#endif
