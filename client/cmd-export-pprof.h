/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * stackmapctl export --format pprof (client/cmd-export-pprof.c): one
 * profile of what a selection holds, or one profile per wall-clock slice, host,
 * kernel and event, for continuous-profiling backends (doc/fleet.md).
 */
#ifndef STACKMAPCTL_CMD_EXPORT_PPROF_H
#define STACKMAPCTL_CMD_EXPORT_PPROF_H

#include <stdbool.h>
#include <stdint.h>

struct selection;
struct sample_source_options;

struct export_pprof_options {
	uint64_t slice_ns;		/* 0: one profile; else slices of this length */
	bool pid_cpu_labels;		/* per-sample "pid" and "cpu" labels */
};

/*
 * Write the profile(s) of sel (resolved) to out: a file, or with slices a
 * directory that gets SLICE_HOST_KERNEL_EVENT.pb.gz files. Returns the
 * exit status (0, 1 when something was damaged or could not be written).
 */
int export_pprof(struct selection *sel, struct sample_source_options *so,
		 const struct export_pprof_options *o, const char *out);

/* "60s", "5min", "2h", "90" (seconds) into ns, whole seconds. Returns 0 or -EINVAL. */
int export_pprof_parse_slice(const char *s, uint64_t *ret_ns);

#endif
