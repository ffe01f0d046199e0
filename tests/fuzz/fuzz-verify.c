/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: `stackmapctl verify` and `stackmapctl info` (text and JSON)
 * on one segment file, finished and unfinished (.part), plus the reader
 * API loop that both are built on.
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

static void read_all(const char *path)
{
	_cleanup_(segment_reader_freep) struct segment_reader *r = NULL;
	struct segment_record rec;

	if (segment_reader_open(path, &r) < 0)
		return;
	(void)segment_reader_complete(r);
	(void)segment_reader_index(r);
	while (segment_reader_next(r, &rec) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const char *const suffixes[] = { ".smseg", ".smseg.part" };

	for (size_t i = 0; i < 2; i++) {
		const char *path = fuzz_write_file(data, len, suffixes[i]);
		char *v[] = { (char *)"verify", (char *)path, NULL };
		char *vi[] = { (char *)"info", (char *)path, NULL };
		char *vj[] = { (char *)"info", (char *)"--json", (char *)path, NULL };

		if (!path)
			abort();
		read_all(path);
		(void)cmd_verify(2, v);
		(void)cmd_info(2, vi);
		if (i == 0)
			(void)cmd_info(3, vj);
		unlink(path);
	}
	return 0;
}
