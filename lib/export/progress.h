/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A progress bar for long exports, drawn on one terminal line
 * ("label [#######.............]  35%") and erased at the end. Only when
 * the fd is a terminal: piped or redirected, nothing is written, so logs
 * and scripts see no control characters. Redrawn only when the shown
 * percentage changes, at most ten times a second.
 */
#ifndef STACKMAPD_PROGRESS_H
#define STACKMAPD_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress {
	int fd;				/* borrowed */
	bool enabled;			/* fd is a terminal */
	const char *label;		/* borrowed */
	uint64_t total;
	int shown;			/* percentage on screen, -1: none */
	uint64_t last_usec;
	uint64_t start_usec;		/* CLOCK_MONOTONIC at progress_init() */
	uint64_t delay_usec;		/* draw nothing before this long (0: at once); set after init */
};

/* Start a bar for total units on fd (usually STDERR_FILENO), labelled label (borrowed). */
void progress_init(struct progress *p, int fd, const char *label, uint64_t total);

/* done of total units are finished. */
void progress_update(struct progress *p, uint64_t done);

/* Erase the bar. The struct may be reused after progress_init(). */
void progress_done(struct progress *p);

#endif
