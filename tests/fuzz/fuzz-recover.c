/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: recovery of a .part file left in the archive (what the
 * daemon does at every start to whatever it finds there), then verify of
 * what recovery produced.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../client/commands.h"
#include "segment.h"

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
	const char *path = fuzz_write_file(data, len, ".smseg.part");
	char *done = NULL;
	int r;

	if (!path)
		abort();
	r = segment_recover(path, NULL, "fuzz", &done);
	if (r >= 0 && done) {
		char *v[] = { (char *)"verify", done, NULL };

		/* what recovery wrote must be a complete segment */
		if (cmd_verify(2, v) != 0 && getenv("SMFUZZ_STRICT"))
			abort();
		unlink(done);
	}
	free(done);
	unlink(path);
	return 0;
}
