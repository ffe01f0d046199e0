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

#endif
