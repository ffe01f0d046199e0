/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* stackmapctl info's parts: one segment in detail (cmd-info.c), the summary (cmd-info-summary.c). */
#ifndef STACKMAPCTL_INFO_H
#define STACKMAPCTL_INFO_H

#include <stdbool.h>

/*
 * Print what the segment at path holds, as text or one JSON line; its
 * pages are read only when read_pages is set or its index cannot give the
 * figures. Returns the exit status (0, or 1 when it is unreadable or damaged).
 */
int info_segment(const char *path, bool json, bool read_pages);

#endif
