/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Crash captures (segments the daemon saved from the previous boot's
 * crash buffer, META capture=crash, doc/segment-format.md) as the client
 * shows them: one line saying which boot, how it ended and how much of it.
 */
#ifndef STACKMAPCTL_CAPTURE_H
#define STACKMAPCTL_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct segment_meta;

/*
 * "previous boot ID, ended without a clean stop at DATE, last N s" (or
 * "..., the daemon stopped cleanly at DATE, ...") into buf, for a segment
 * with this META whose events span span_ns of trace clock. Dates in local
 * time. Returns 1 if meta is a crash capture's, 0 if not.
 */
int capture_describe(const struct segment_meta *meta, uint64_t span_ns, char *buf, size_t len);

/* The same from a segment file (its META and INDEX). 1, 0, or -errno. */
int capture_describe_file(const char *path, char *buf, size_t len);

#endif
