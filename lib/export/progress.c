/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Terminal progress bar (progress.h). Written with write(2) on the fd so
 * that it never mixes with stdio buffers of the same stream; errors are
 * ignored, a progress bar is not worth failing an export for.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "util.h"

#define BAR_WIDTH 30

void progress_init(struct progress *p, int fd, const char *label, uint64_t total)
{
	assert(p);

	*p = (struct progress){
		.fd = fd,
		.enabled = isatty(fd) == 1,
		.label = label,
		.total = total,
		.shown = -1,
		.start_usec = now_usec(CLOCK_MONOTONIC),
	};
}

void progress_update(struct progress *p, uint64_t done)
{
	char line[160], bar[BAR_WIDTH + 1];
	uint64_t now;
	int pct, n, len;

	assert(p);

	if (!p->enabled || !p->total)
		return;
	pct = (int)(MIN(done, p->total) * 100 / p->total);
	now = now_usec(CLOCK_MONOTONIC);
	/* a run that ends within the delay draws nothing */
	if (p->shown < 0 && now - p->start_usec < p->delay_usec)
		return;
	if (pct == p->shown || (p->shown >= 0 && pct < 100 && now - p->last_usec < 100000))
		return;
	n = pct * BAR_WIDTH / 100;
	memset(bar, '#', (size_t)n);
	memset(bar + n, '.', (size_t)(BAR_WIDTH - n));
	bar[BAR_WIDTH] = '\0';
	len = snprintf(line, sizeof(line), "\r%s [%s] %3d%%", p->label, bar, pct);
	if (len > 0)
		(void)write_all(p->fd, line, MIN((size_t)len, sizeof(line) - 1));
	p->shown = pct;
	p->last_usec = now;
}

void progress_done(struct progress *p)
{
	assert(p);

	/* carriage return, erase to the end of the line */
	if (p->enabled && p->shown >= 0)
		(void)write_all(p->fd, "\r\033[K", 4);
	p->shown = -1;
}
