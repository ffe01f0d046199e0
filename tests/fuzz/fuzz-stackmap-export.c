/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the parsers of the kernel's stack map exports
 * (lib/kernel/stackmap-export.h): stack_map_bin, the text stack_map, and
 * stack_map_stat. The first input byte picks the parser; the rest is the
 * file's content.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stackmap-export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct stackmap_export sn = {};
	struct stackmap_stat st;

	if (len < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		(void)stackmap_export_parse_bin(&sn, data + 1, len - 1, STACKMAP_MAX_IDS);
		break;
	case 1: {
		FILE *f = fmemopen((void *)(data + 1), len - 1, "r");

		if (f) {
			(void)stackmap_export_parse_text(&sn, f, data[0] / 3 % 2 ? 64 :
							 STACKMAP_MAX_IDS);
			fclose(f);
		}
		break;
	}
	default: {
		char *text = strndup((const char *)data + 1, len - 1);

		if (text)
			(void)stackmap_stat_parse(text, &st);
		free(text);
		break;
	}
	}
	stackmap_export_done(&sn);
	return 0;
}
