/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small known stream of samples for the exporter tests: 6 kmalloc
 * events over three stacks (3, 2 and 1 of them; the last one has a frame
 * without a symbol), 2 sched_switch events and one irq_handler_entry
 * event without a stack, from two tasks on two CPUs.
 */
#ifndef STACKMAPD_TEST_SAMPLE_STREAM_H
#define STACKMAPD_TEST_SAMPLE_STREAM_H

#include "sample.h"

#define A_ENTRY 0xffffffff81003030ull
#define A_KMALLOC 0xffffffff81001010ull
#define A_OPEN 0xffffffff81002020ull
#define A_READ 0xffffffff81002040ull
#define A_MODULE 0xffffffffc0001234ull
#define A_SCHED 0xffffffff81004010ull
#define A_SCHEDULE 0xffffffff81004080ull

static const struct sample_frame stack_open[] = {
	{ A_KMALLOC, "__kmalloc" }, { A_OPEN, "do_sys_open" }, { A_ENTRY, "entry_SYSCALL_64" },
};
static const struct sample_frame stack_read[] = {
	{ A_KMALLOC + 8, "__kmalloc" }, { A_READ, "seq_read" }, { A_ENTRY, "entry_SYSCALL_64" },
};
static const struct sample_frame stack_module[] = {
	{ A_KMALLOC, "__kmalloc" }, { A_MODULE, NULL }, { A_ENTRY, "entry_SYSCALL_64" },
};
static const struct sample_frame stack_sched[] = {
	{ A_SCHED, "__schedule" }, { A_SCHEDULE, "schedule" }, { A_ENTRY, "entry_SYSCALL_64" },
};
static const struct sample_field fields_kmalloc[] = {
	{ "bytes_req", "64" }, { "gfp_flags", "GFP_KERNEL" },
};

#define S(ev, t, c, p, cm, st) \
	{ .event = ev, .ts = t, .cpu = c, .pid = p, .comm = cm, .nr_frames = ARRAY_SIZE(st), \
	  .frames = st, .nr_fields = 2, .fields = fields_kmalloc }

static const struct sample test_samples[] = {
	S("kmalloc", 1000000000, 0, 100, "bash", stack_open),
	S("kmalloc", 1000001000, 1, 200, "cat", stack_read),
	S("kmalloc", 1000002000, 0, 100, "bash", stack_open),
	S("sched_switch", 1000003000, 0, 100, "bash", stack_sched),
	S("kmalloc", 1000004000, 1, 200, "cat", stack_module),
	S("kmalloc", 1000005000, 0, 100, "bash", stack_open),
	{ .event = "irq_handler_entry", .ts = 1000005500, .cpu = 1, .pid = 0, .comm = "<idle>" },
	S("kmalloc", 1000006000, 1, 200, "cat", stack_read),
	S("sched_switch", 1000007000, 1, 200, "cat", stack_sched),
};

#undef S

#endif
