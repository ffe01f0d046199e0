/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CSV export: the known sample stream gives the expected rows and stack
 * table, awkward names are quoted, and sqlite3 loads both files and
 * answers "top 5 stacks of kmalloc" (skipped without sqlite3, failing
 * with CI=true).
 */
#include "csv.h"
#include "helpers.h"
#include "sample-stream.h"

static char *run(const char *cmd)
{
	char *out = NULL;
	size_t len = 0;
	char chunk[4096];
	size_t n;
	FILE *f = popen(cmd, "r");

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *o = realloc(out, len + n + 1);

		if (!o)
			break;
		out = o;
		memcpy(out + len, chunk, n);
		len += n;
		out[len] = '\0';
	}
	CHECK(pclose(f) == 0);
	return out ?: strdup("");
}

static void check_sqlite(const char *dir)
{
	_cleanup_free_ char *cmd = NULL, *out = NULL, *comm = NULL;

	if (!test_have_tool("sqlite3", "the SQL check of the CSV files"))
		return;
	CHECK(strprintf(&cmd,
			"cd '%s' && sqlite3 -batch :memory: "
			"'.import --csv events.csv events' '.import --csv stacks.csv stacks' "
			"'SELECT count(*) AS n, s.frames FROM events e JOIN stacks s "
			"ON s.stack_id = e.stack_id WHERE e.event = \"kmalloc\" "
			"GROUP BY s.stack_id ORDER BY n DESC, s.frames LIMIT 5' 2>&1",
			dir) == 0);
	out = run(cmd);
	CHECK_MSG(out && streq(out, "3|__kmalloc;do_sys_open;entry_SYSCALL_64\n"
				   "2|__kmalloc;seq_read;entry_SYSCALL_64\n"
				   "1|__kmalloc;0xffffffffc0001234;entry_SYSCALL_64\n"),
		  "%s", out);
	free(cmd);
	CHECK(strprintf(&cmd,
			"cd '%s' && sqlite3 -batch :memory: '.import --csv events.csv events' "
			"'SELECT comm, time, stack_id FROM events WHERE pid = \"300\"' 2>&1",
			dir) == 0);
	comm = run(cmd);
	CHECK_MSG(comm && streq(comm, "a,\"b c|2.000000001|0\n"), "%s", comm);
}

int main(void)
{
	_cleanup_free_ char *dir = test_tmpdir(), *ev = NULL, *st = NULL, *text = NULL;
	_cleanup_(csv_export_freep) struct csv_export *c = NULL;
	struct sample odd = { .event = "kmalloc", .ts = 2000000001, .cpu = 3, .pid = 300,
			      .comm = "a,\"b c" };
	FILE *fe, *fs;

	CHECK(strprintf(&ev, "%s/events.csv", dir) == 0);
	CHECK(strprintf(&st, "%s/stacks.csv", dir) == 0);
	fe = fopen(ev, "w");
	fs = fopen(st, "w");
	CHECK(fe && fs);
	CHECK(csv_export_new(fe, &c) == 0);
	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(csv_export_add(c, &test_samples[i]) == 0);
	CHECK(csv_export_add(c, &odd) == 0);
	CHECK(csv_export_finish(c, fs) == 0);
	fclose(fe);
	fclose(fs);

	CHECK(read_file(ev, &text, NULL) == 0);
	CHECK(startswith(text, "time,cpu,pid,comm,event,stack_id\r\n"
			       "1.000000000,0,100,bash,kmalloc,1\r\n"
			       "1.000001000,1,200,cat,kmalloc,2\r\n"));
	CHECK(strstr(text, "1.000005500,1,0,<idle>,irq_handler_entry,0\r\n"));
	CHECK(strstr(text, "2.000000001,3,300,\"a,\"\"b c\",kmalloc,0\r\n"));
	free(text);
	CHECK(read_file(st, &text, NULL) == 0);
	CHECK_MSG(streq(text, "stack_id,depth,frames\r\n"
			      "1,3,__kmalloc;do_sys_open;entry_SYSCALL_64\r\n"
			      "2,3,__kmalloc;seq_read;entry_SYSCALL_64\r\n"
			      "3,3,__schedule;schedule;entry_SYSCALL_64\r\n"
			      "4,3,__kmalloc;0xffffffffc0001234;entry_SYSCALL_64\r\n"),
		  "%s", text);

	check_sqlite(dir);
	test_rmtree(dir);
	return tests_done("test-csv");
}
