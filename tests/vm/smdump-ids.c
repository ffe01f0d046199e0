/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For the VM tests: print the raw stack reference of every stack entry in
 * segments, in the order `stackmapctl report` prints the events:
 *   CPU TIMESTAMP KIND ID
 * KIND is "id" (kernel stack_id), "ref" (stackmapd stack_ref) or "full"
 * (kernel_stack, ID 0). Lets a test resolve ids its own way (e.g. the
 * naive way, with one map dump for everything) and compare.
 *   smdump-ids SEGMENT...
 * Built by the VM tests against the build tree's libstackmap.a.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "decode.h"

int main(int argc, char **argv)
{
	struct decoder *d = NULL;
	struct decoded_event ev;
	int r;

	if (argc < 2) {
		fprintf(stderr, "Usage: smdump-ids SEGMENT...\n");
		return 2;
	}
	if (decoder_open((const char *const *)argv + 1, (size_t)(argc - 1), &d) < 0)
		return 1;
	while ((r = decoder_next(d, &ev)) != 0) {
		if (r == -ENOMEM)
			return 1;
		if (r < 0 || !ev.is_stack || ev.kind == DECODED_STACK_MISSING)
			continue;
		printf("%u %" PRIu64 " %s %" PRIu32 "\n", ev.cpu, ev.ts,
		       ev.kind == DECODED_STACK_ID ? "id" : ev.kind == DECODED_STACK_REF ? "ref" : "full",
		       ev.kind == DECODED_KERNEL_STACK ? 0 : ev.stack_id);
	}
	decoder_free(d);
	return fflush(stdout) ? 1 : 0;
}
