/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: decoding a segment's events as `stackmapctl report`,
 * `folded` and `stacks` do (lib/decode/decode.h, libtraceevent printing
 * included), within the readers' memory budget (budget.h).
 *
 * One command per input, chosen by the input's CRC, so that each input
 * is decoded once (a third of the time of running all three, for the
 * same coverage over a campaign). After it, everything the readers
 * charged to the budget must have been given back.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../client/commands.h"
#include "budget.h"
#include "crc32c.h"

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
	char *argv[] = { NULL, (char *)path, NULL };
	unsigned int which = crc32c(0, data, len) % 3;

	if (!path)
		abort();
	budget_clear_error();
	argv[0] = (char *)(which == 0 ? "report" : which == 1 ? "folded" : "stacks");
	if (which == 0)
		(void)cmd_report(2, argv);
	else if (which == 1)
		(void)cmd_folded(2, argv);
	else
		(void)cmd_stacks(2, argv);
	unlink(path);
	/* every charge has its release: a reader that forgets one would starve the next segment */
	if (budget_used() != 0) {
		fprintf(stderr, "fuzz-report: %llu bytes still charged to the budget after '%s'\n",
			(unsigned long long)budget_used(), argv[0]);
		abort();
	}
	return 0;
}
