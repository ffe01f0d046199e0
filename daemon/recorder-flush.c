/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The bottom of the recorder module, used by the files above it and using
 * none of them: the flush barrier that snapshots, rotations, stack-map
 * resets, the periodic flush and stop wait on until every reader has
 * flushed (rec->ops, struct flush_op in recorder-internal.h), and the
 * record mode they all ask about.
 */
#include "config.h"
#include "cpu-reader.h"
#include "recorder-internal.h"
#include "util.h"

bool recorder_flight(const struct recorder *rec)
{
	return rec->cfg->record_mode == CONFIG_RECORD_FLIGHT;
}

struct flush_op *recorder_flush_all(struct recorder *rec, const struct segment_generation *boundary,
				    void (*cont)(struct recorder *, struct flush_op *),
				    recorder_done_fn done, void *userdata)
{
	struct flush_op *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	op->tokens = calloc(rec->nr_readers ? rec->nr_readers : 1, sizeof(*op->tokens));
	if (!op->tokens) {
		free(op);
		return NULL;
	}
	op->nr_tokens = rec->nr_readers;
	op->cont = cont;
	op->done = done;
	op->userdata = userdata;
	op->next = rec->ops;
	rec->ops = op;
	for (unsigned i = 0; i < rec->nr_readers; i++)
		op->tokens[i] = cpu_reader_request_flush(rec->readers[i], boundary);
	return op;
}

static void flush_op_free(struct flush_op *op)
{
	free(op->tokens);
	free(op);
}

void recorder_process_ops(struct recorder *rec)
{
	struct flush_op **pp = &rec->ops;

	while (*pp) {
		struct flush_op *op = *pp;
		bool all = true;

		/* a reader added since (CPU hotplug) had nothing to flush for it */
		for (unsigned i = 0; i < op->nr_tokens && all; i++)
			all = cpu_reader_flushed(rec->readers[i], op->tokens[i]);
		if (!all) {
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		op->cont(rec, op);
		flush_op_free(op);
		/* cont may have added operations: start over */
		pp = &rec->ops;
	}
}

void recorder_cancel_ops(struct recorder *rec)
{
	while (rec->ops) {
		struct flush_op *op = rec->ops;

		rec->ops = op->next;
		if (op->done)
			op->done(op->userdata, -ECANCELED, NULL);
		flush_op_free(op);
	}
}
