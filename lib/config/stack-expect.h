/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one rule of which events carry a kernel stack, and of when a stack
 * that an event expected never came. The daemon applies it when it sets
 * up tracing (stacktrace triggers, options/stacktrace) and when it counts
 * a finished segment's unresolved stacks for the index and status
 * (daemon/stack-audit.c); the decoder applies it when it reads events
 * back (lib/decode/decode.c). Both readers share it so that the counts
 * `info` and `status` show are the ones `report` prints.
 *
 * Which events: those the config stored in the segment records with a
 * stack (stacktrace = all, or the event in trace.stacktrace), identified
 * by the ID line of their stored events/SYSTEM/EVENT/format file. A
 * filter does not change it: the stacktrace trigger carries the event's
 * filter, so every recorded event of such a type has its stack.
 *
 * When a stack never came: each CPU's stream is followed in order. An
 * event that wants a stack, then a strict generation boundary of its CPU
 * (tracing was paused for a stack map reset), then another event or the
 * end of the CPU's stream in the segment: its stack was lost. A stack_id
 * that comes after such a boundary was looked up before the pause and
 * written after it: its generation is not known, it must not be resolved.
 * A full stack (kernel_stack, stack_ref) carries its frames and is fine
 * either way.
 */
#ifndef STACKMAPD_STACK_EXPECT_H
#define STACKMAPD_STACK_EXPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "util.h"

#define STACK_EXPECT_MAX_TYPES 65536		/* event type ids are 16 bits */

/* Event types recorded with a stack, a bit per type. */
struct stack_expect_types {
	uint8_t bits[STACK_EXPECT_MAX_TYPES / 8];
};

/*
 * Whether the daemon records ev of config c with a kernel stack. Both
 * pointers are borrowed and must not be NULL.
 */
bool stack_expect_config(const struct config *c, const struct config_event *ev);

/*
 * Fill *ret from the FILE records of a segment (files[0..nr), borrowed;
 * files may be NULL when nr is 0): the first one named "config" says which
 * events want a stack, the events/SYSTEM/EVENT/format ones give their type
 * ids. *ret is cleared first. Returns 0; -errno when the config does not
 * load (then no type is known to want a stack: nothing can be counted as
 * lost), -ENOENT when there is no config.
 */
int stack_expect_types_load(struct stack_expect_types *ret, const struct named_text *files,
			    size_t nr_files);

/* Whether events of type (any int; out of range: no) are recorded with a stack. */
bool stack_expect_types_has(const struct stack_expect_types *t, int type);

/*
 * The state of one CPU's stream: the last event wants a stack that has
 * not come yet (want), and a strict generation boundary passed since
 * (crossed). Zero-initialized at the start of a CPU's stream.
 */
struct stack_expect {
	bool want, crossed;
};

/*
 * Whether the stack the CPU's last event wanted is lost, should the next
 * entry be an event or the end of the stream. Changes nothing.
 */
bool stack_expect_lost(const struct stack_expect *x);

/*
 * An entry that is not a stack (wants_stack: its type is recorded with
 * one). Returns true when the stack of the previous event was lost.
 */
bool stack_expect_event(struct stack_expect *x, bool wants_stack);

/*
 * A stack entry of the CPU (kernel_stack, stack_ref or stack_id). Returns
 * true when it came after a strict boundary that followed its event: for
 * a stack_id, its generation is not known (it counts as unresolved).
 */
bool stack_expect_stack(struct stack_expect *x);

/* A strict generation boundary of the CPU (a per-CPU GENERATION record). */
void stack_expect_boundary(struct stack_expect *x);

/* The CPU's stream ends in this segment. Returns true when the last event's stack was lost. */
bool stack_expect_end(struct stack_expect *x);

#endif
