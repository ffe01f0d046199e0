/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: decoding a segment's events as `stackmapctl report`,
 * `folded` and `stacks` do (lib/decode/decode.h, libtraceevent printing included).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../client/commands.h"

#include "fuzz-common.h"
#include "fuzz-segmut.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char *path = fuzz_write_file(data, len, ".smseg");
	char *rep[] = { (char *)"report", (char *)path, NULL };
	char *fol[] = { (char *)"folded", (char *)path, NULL };
	char *stk[] = { (char *)"stacks", (char *)path, NULL };

	if (!path)
		abort();
	(void)cmd_report(2, rep);
	(void)cmd_folded(2, fol);
	(void)cmd_stacks(2, stk);
	unlink(path);
	return 0;
}
