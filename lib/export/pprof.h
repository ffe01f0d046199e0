/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pprof export: samples in, one gzip-compressed profile.proto
 * (lib/export/profile.proto) out, as pprof and continuous-profiling backends read
 * it. Each event type is one sample type (unit "count"); identical
 * (event, stack, comm, pid, cpu) samples are counted together; each
 * distinct address is a location of one kernel mapping, each distinct
 * symbol a function (an address without a symbol is a function named by
 * the address); labels "comm", "pid" and "cpu" say where it ran.
 */
#ifndef STACKMAPD_PPROF_H
#define STACKMAPD_PPROF_H

#include <stdbool.h>
#include <stdint.h>

#include "sample.h"
#include "util.h"

struct pprof;

/* An empty profile, or NULL without memory. */
struct pprof *pprof_new(void);

/* Free it. Accepts NULL; returns NULL. */
struct pprof *pprof_free(struct pprof *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct pprof *, pprof_free);

/* Count one sample (borrowed; copied as needed). Returns 0 or -ENOMEM. */
int pprof_add(struct pprof *p, const struct sample *s);

/*
 * Time span of the profile: start as Unix time in ns (0: unknown) and
 * duration in ns; written as time_nanos and duration_nanos.
 */
void pprof_set_time(struct pprof *p, uint64_t start_ns, uint64_t duration_ns);

/*
 * Encode, gzip and write the profile to fd (borrowed). Returns 0 or
 * -errno (-ENOMEM, write errors).
 */
int pprof_write(struct pprof *p, int fd);

/* ---- profile comments, sample labels, lost events ---- */

/* Pseudo addresses of frames that are not the kernel's. */
#define PPROF_LOST_ADDR 1		/* "[lost events]" */
#define PPROF_UNRESOLVED_ADDR 2		/* "[unresolved stack]" */

/* With on false, samples get no "pid" and "cpu" labels (default: they do). */
void pprof_set_pid_cpu_labels(struct pprof *p, bool on);

/*
 * Add a comment to the profile (text copied): pprof shows comments with
 * -comments; the exporter writes profile-level labels as "key=value".
 * Returns 0 or -ENOMEM.
 */
int pprof_add_comment(struct pprof *p, const char *text);

/*
 * Add count events lost on cpu as a sample of the one frame "[lost events]"
 * to every sample type (event) the profile has so far, without changing
 * which one is most frequent. Returns 0 or -ENOMEM.
 */
int pprof_add_lost(struct pprof *p, uint64_t count, unsigned int cpu);

#endif
