/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the parsers of the kernel's stack map exports in
 * daemon/stackmap.c (they are static there, so the file is included):
 * stack_map_bin, the text stack_map, and stack_map_stat. The first input
 * byte picks the parser; the rest is the file's content.
 */
#include "../../daemon/stackmap.c"

static void snap_free(struct snap *sn)
{
	free(sn->v);
	buf_done(&sn->data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct snap sn = {};
	struct stat_sample st;

	if (len < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		(void)snap_parse_bin(&sn, data + 1, len - 1, STACKMAP_MAX_IDS);
		break;
	case 1: {
		FILE *f = fmemopen((void *)(data + 1), len - 1, "r");

		if (f) {
			(void)snap_parse_text(&sn, f, (uint32_t)(data[0] / 3 % 2 ? 64 : STACKMAP_MAX_IDS));
			fclose(f);
		}
		break;
	}
	default: {
		char *text = strndup((const char *)data + 1, len - 1);

		if (text)
			(void)parse_stat(text, &st);
		free(text);
		break;
	}
	}
	snap_free(&sn);
	return 0;
}
