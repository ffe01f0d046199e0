/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trace-cmd data files (trace.dat, version 6 as described in
 * trace-cmd.dat.v6(5)) written from events: the kernel's header_page, the
 * event formats, kallsyms, printk formats and task names go into the
 * header; events are packed into ring-buffer pages per CPU, in the
 * kernel's own page and event encoding, so that `trace-cmd report` and
 * KernelShark read them like a recording of their own. Kernel stacks are
 * written as ftrace kernel_stack events.
 *
 * libtracecmd's installed header (trace-cmd/trace-cmd.h, 1.3) only
 * declares the reading side; its writer is internal to trace-cmd, so the
 * file is written here, from the documented format.
 *
 * Events of one CPU must be added in timestamp order. Page data is kept
 * in memory until tracedat_write().
 */
#ifndef STACKMAPD_TRACEDAT_H
#define STACKMAPD_TRACEDAT_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct tracedat_info {
	const char *header_page;	/* the kernel's events/header_page text (required) */
	const char *kallsyms;		/* /proc/kallsyms text, NULL: none */
	const char *printk_formats;	/* printk_formats text, NULL: none */
	const char *cmdlines;		/* saved_cmdlines text ("PID COMM" lines), NULL: none */
	unsigned int nr_cpus;		/* CPUs 0..nr_cpus-1 (>= 1) */
	unsigned int page_size;		/* 0: 4096 */
};

struct tracedat;

/*
 * A new file description; the strings of info are copied. Returns 0 and
 * *ret (free with tracedat_free()), -EINVAL or -ENOMEM.
 */
int tracedat_new(const struct tracedat_info *info, struct tracedat **ret);

struct tracedat *tracedat_free(struct tracedat *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct tracedat *, tracedat_free);

enum tracedat_text {
	TRACEDAT_KALLSYMS,
	TRACEDAT_PRINTK_FORMATS,
	TRACEDAT_CMDLINES,
	TRACEDAT_TEXT_MAX
};

/*
 * Replace one of the texts given in tracedat_info (text copied; NULL:
 * none), for writers that learn them while adding events. Returns 0,
 * -EINVAL or -ENOMEM.
 */
int tracedat_set_text(struct tracedat *t, enum tracedat_text which, const char *text);

/*
 * Add an event format file (text borrowed, copied) of system ("ftrace" for
 * ftrace's own events such as kernel_stack). Without a kernel_stack
 * format, tracedat_add_stack() adds the kernel's. Returns 0 or -ENOMEM.
 */
int tracedat_add_format(struct tracedat *t, const char *system, const char *text);

/*
 * Append one raw event (len bytes, as in the ring buffer: common_type,
 * flags, preempt count, pid, fields) of cpu at timestamp ts. Returns 0,
 * -EINVAL (cpu out of range, event too large for a page, ts going back)
 * or -ENOMEM.
 */
int tracedat_add_event(struct tracedat *t, unsigned int cpu, uint64_t ts, const void *data,
		       size_t len);

/*
 * Append a kernel_stack event of task pid with the nr addresses ips
 * (innermost first). Returns as tracedat_add_event().
 */
int tracedat_add_stack(struct tracedat *t, unsigned int cpu, uint64_t ts, int pid,
		       const uint64_t *ips, size_t nr);

/* Write the file to fd (borrowed). Returns 0 or -errno. */
int tracedat_write(struct tracedat *t, int fd);

#endif
