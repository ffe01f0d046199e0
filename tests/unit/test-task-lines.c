/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The end copy of a segment's task files (daemon/task-lines.c): exactly
 * the lines that the head copy does not have, byte for byte and in the
 * order of the later copy; a changed line (a pid with another name) is
 * kept, a line shared with the head is not, a file without a head copy is
 * kept whole. Reading the head copy and then the end copy line by line,
 * the last line of each pid wins: the same map as from the whole later
 * copy, on a large random pair of copies.
 */
#include <stdlib.h>

#include "helpers.h"
#include "task-lines.h"
#include "util.h"

static char *changed(const struct task_lines *tl, const char *name, const char *text)
{
	struct buf out = { 0 };
	char *s;

	CHECK(task_lines_changed(tl, name, text, strlen(text), &out) == 0);
	s = strndup(out.data ? (const char *)out.data : "", out.len);
	buf_done(&out);
	return s;
}

#define NR_PIDS 4000

/* Apply "pid value" lines of text to map (by pid); 0 is no entry. */
static void apply(unsigned *map, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		unsigned pid, v;

		if (sscanf(p, "%u %u", &pid, &v) == 2 && pid < NR_PIDS)
			map[pid] = v;
		p = memchr(p, '\n', (size_t)(end - p));
		p = p ? p + 1 : end;
	}
}

int main(void)
{
	struct named_text *files = NULL;
	size_t nr = 0;
	struct task_lines *tl = NULL;
	char *s;

	CHECK(named_texts_append(&files, &nr, "saved_cmdlines", "1 init\n2 kthreadd\n30 bash\n", 26) == 0);
	CHECK(named_texts_append(&files, &nr, "saved_tgids", "1 1\n2 2\n31 30", 13) == 0);
	CHECK(named_texts_append(&files, &nr, "config", "[trace]\n", 8) == 0);
	CHECK(task_lines_new(files, nr, &tl) == 0);

	static const struct {
		const char *why, *file, *later, *expect;
	} cases[] = {
		{ "shared lines go, new and changed ones stay, in the later copy's order",
		  "saved_cmdlines", "30 bash\n40 smload\n1 init\n2 kthreadx\n", "40 smload\n2 kthreadx\n" },
		{ "a last line without its newline is compared and copied as it is",
		  "saved_tgids", "1 1\n31 30\n32 30", "32 30" },
		{ "a line is the same line without its newline",
		  "saved_tgids", "31 30\n1 1\n", "" },
		{ "a prefix of a line is another line",
		  "saved_cmdlines", "30 bas\n30 bash2\n", "30 bas\n30 bash2\n" },
		{ "the same copy: nothing",
		  "saved_cmdlines", "1 init\n2 kthreadd\n30 bash\n", "" },
		{ "an empty copy: nothing",
		  "saved_cmdlines", "", "" },
		{ "no head copy of that name: all of it",
		  "printk_formats", "1 init\n", "1 init\n" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		s = changed(tl, cases[i].file, cases[i].later);
		CHECK_MSG(streq(s, cases[i].expect), "%s: got '%s'", cases[i].why, s);
		free(s);
	}
	/* no index: all of it */
	s = changed(NULL, "saved_tgids", "1 1\n");
	CHECK(streq(s, "1 1\n"));
	free(s);
	tl = task_lines_free(tl);
	named_texts_free(&files, &nr);

	/* random copies: head then end copy give the later copy's map */
	for (unsigned round = 0; round < 20; round++) {
		struct buf head = { 0 }, later = { 0 }, out = { 0 };
		unsigned *want = calloc(NR_PIDS, sizeof(*want)), *got = calloc(NR_PIDS, sizeof(*got));
		char line[64];

		srand(round + 1);
		CHECK(want && got);
		for (unsigned pid = 1; pid < NR_PIDS; pid++) {
			unsigned v = (unsigned)rand() % 50;
			int n;

			if (rand() % 4) {
				n = snprintf(line, sizeof(line), "%u %u\n", pid, v);
				CHECK(buf_append(&head, line, (size_t)n) == 0);
			}
			if (rand() % 4) {
				if (rand() % 10 == 0)
					v = (unsigned)rand() % 50;
				n = snprintf(line, sizeof(line), "%u %u\n", pid, v);
				CHECK(buf_append(&later, line, (size_t)n) == 0);
				want[pid] = v;
			}
		}
		CHECK(named_texts_append(&files, &nr, "saved_tgids", (const char *)head.data, head.len) == 0);
		CHECK(task_lines_new(files, nr, &tl) == 0);
		CHECK(task_lines_changed(tl, "saved_tgids", (const char *)later.data, later.len, &out) == 0);
		CHECK(out.len < later.len);
		apply(got, files[0].data, files[0].len);
		apply(got, out.data ? (const char *)out.data : "", out.len);
		for (unsigned pid = 1; pid < NR_PIDS; pid++)
			if (want[pid])
				CHECK_MSG(got[pid] == want[pid], "round %u pid %u: %u, want %u", round, pid,
					  got[pid], want[pid]);
		tl = task_lines_free(tl);
		named_texts_free(&files, &nr);
		buf_done(&head);
		buf_done(&later);
		buf_done(&out);
		free(want);
		free(got);
	}
	return tests_done("test-task-lines");
}
