/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers for struct sample (sample.h): the display name of a frame. */
#include <inttypes.h>
#include <stdio.h>

#include "sample.h"

const char *sample_frame_name(const struct sample_frame *f, char *buf, size_t len)
{
	if (f->sym && *f->sym)
		return f->sym;
	(void)snprintf(buf, len, "0x%" PRIx64, f->addr);
	return buf;
}
