/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trace.dat writer: the known sample stream, written as events with their
 * kernel stacks, reads back with `trace-cmd report` as the expected lines
 * in the layout of stackmapctl report (skipped without trace-cmd, failing
 * with CI=true); pages fill and split,
 * large time gaps and large events encode. TRACEDAT_KEEP=PATH keeps the
 * file of the stream.
 */
#include <fcntl.h>

#include "buf.h"
#include "helpers.h"
#include "page-walk.h"
#include "sample-stream.h"
#include "tracedat.h"

static const char header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char common[] =
	"format:\n"
	FTRACE_COMMON_FIELDS_FORMAT "\n"
	"\tfield:unsigned long bytes_req;\toffset:8;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"bytes_req=%lu\", REC->bytes_req\n";

static const char *const events[] = { "kmalloc", "sched_switch", "irq_handler_entry" };

static int event_id(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(events); i++)
		if (streq(events[i], name))
			return 100 + (int)i;
	return -1;
}

static int add_sample(struct tracedat *t, const struct sample *s)
{
	uint8_t rec[16] = {};
	uint64_t ips[16];
	int id = event_id(s->event), r;

	rec[0] = (uint8_t)id;
	put_le32(rec + 4, (uint32_t)s->pid);
	for (size_t i = 0; i < s->nr_fields; i++)
		if (streq(s->fields[i].name, "bytes_req"))
			put_le64(rec + 8, strtoull(s->fields[i].value, NULL, 10));
	r = tracedat_add_event(t, s->cpu, s->ts, rec, sizeof(rec));
	if (r < 0 || !s->nr_frames)
		return r;
	for (size_t i = 0; i < s->nr_frames; i++)
		ips[i] = s->frames[i].addr;
	return tracedat_add_stack(t, s->cpu, s->ts, s->pid, ips, s->nr_frames);
}

static struct tracedat *new_tracedat(unsigned int page_size)
{
	struct tracedat_info info = {
		.header_page = header_page,
		.kallsyms = "ffffffff81001000 T __kmalloc\n"
			    "ffffffff81002000 T do_sys_open\n"
			    "ffffffff81002040 T seq_read\n"
			    "ffffffff81003000 T entry_SYSCALL_64\n"
			    "ffffffff81004000 T __schedule\n"
			    "ffffffff81004080 T schedule\n"
			    "ffffffff81005000 T _etext\n",
		.cmdlines = "100 bash\n200 cat\n",
		.nr_cpus = 2,
		.page_size = page_size,
	};
	struct tracedat *t = NULL;

	CHECK(tracedat_new(&info, &t) == 0);
	for (size_t i = 0; t && i < ARRAY_SIZE(events); i++) {
		_cleanup_free_ char *text = NULL;

		CHECK(strprintf(&text, "name: %s\nID: %d\n%s", events[i], 100 + (int)i, common) == 0);
		/* a system of its own: trace-cmd's plugins would reformat kmem and sched events */
		CHECK(tracedat_add_format(t, "smtest", text) == 0);
	}
	return t;
}

static char *write_and_report(struct tracedat *t, const char *keep)
{
	_cleanup_free_ char *dir = test_tmpdir(), *path = NULL, *cmd = NULL;
	char *out = NULL, chunk[4096];
	size_t len = 0, n;
	FILE *f;
	int fd;

	CHECK(strprintf(&path, "%s/trace.dat", keep ? keep : dir) == 0);
	if (keep)
		(void)unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK(tracedat_write(t, fd) == 0);
	close(fd);
	CHECK(strprintf(&cmd, "trace-cmd report -i '%s' 2>&1", path) == 0);
	f = popen(cmd, "r");
	while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		char *o = realloc(out, len + n + 1);

		if (!o)
			break;
		out = o;
		memcpy(out + len, chunk, n);
		len += n;
		out[len] = '\0';
	}
	if (f)
		CHECK(pclose(f) == 0);
	test_rmtree(dir);
	return out ?: strdup("");
}


static const char expected[] =
	"            bash-100   [000]     1.000000: kmalloc:              bytes_req=64\n"
	"            bash-100   [000]     1.000000: kernel_stack:         <stack trace >\n"
	"=> __kmalloc (ffffffff81001010)\n"
	"=> do_sys_open (ffffffff81002020)\n"
	"=> entry_SYSCALL_64 (ffffffff81003030)\n"
	"             cat-200   [001]     1.000001: kmalloc:              bytes_req=64\n"
	"             cat-200   [001]     1.000001: kernel_stack:         <stack trace >\n"
	"=> __kmalloc (ffffffff81001018)\n"
	"=> seq_read (ffffffff81002040)\n"
	"=> entry_SYSCALL_64 (ffffffff81003030)\n";

static void test_stream(void)
{
	_cleanup_(tracedat_freep) struct tracedat *t = new_tracedat(0);
	_cleanup_free_ char *out = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(test_samples); i++)
		CHECK(add_sample(t, &test_samples[i]) == 0);
	if (!test_have_tool("trace-cmd", "the trace-cmd report checks"))
		return;
	out = write_and_report(t, getenv("TRACEDAT_KEEP"));
	CHECK_MSG(strstr(out, expected), "%s", out);
	CHECK_MSG(strstr(out, "             cat-200   [001]     1.000004: kernel_stack:         "
			      "<stack trace >\n=> __kmalloc (ffffffff81001010)\n"
			      "=> ffffffffc0001234\n"),
		  "%s", out);
	CHECK_MSG(strstr(out, "          <idle>-0     [001]     1.000006: irq_handler_entry:    "
			      "bytes_req=0\n"),
		  "%s", out);
	CHECK_MSG(strstr(out, "             cat-200   [001]     1.000007: sched_switch:"), "%s", out);
}

/*
 * Many events on small pages (trace-cmd reads, rather than maps, pages
 * smaller than its own), a gap beyond 2^27 ns and an event that needs a
 * length word.
 */
static void test_pages(void)
{
	_cleanup_(tracedat_freep) struct tracedat *t = new_tracedat(256);
	_cleanup_free_ char *out = NULL;
	uint8_t big[200] = { 100 };
	uint64_t ts = 5000000000;
	size_t lines = 0;

	for (int i = 0; i < 100; i++) {
		uint8_t rec[16] = { 100 };

		put_le32(rec + 4, 100);
		put_le64(rec + 8, (uint64_t)i);
		CHECK(tracedat_add_event(t, 0, ts, rec, sizeof(rec)) == 0);
		ts += i == 50 ? UINT64_C(3000000000) : 1000;
	}
	put_le32(big + 4, 200);
	put_le64(big + 8, 4242);
	CHECK(tracedat_add_event(t, 1, ts, big, sizeof(big)) == 0);
	CHECK(tracedat_add_event(t, 1, ts - 1, big, sizeof(big)) == -EINVAL);
	CHECK(tracedat_add_event(t, 2, ts, big, sizeof(big)) == -EINVAL);
	if (!test_have_tool("trace-cmd", "the trace-cmd report checks"))
		return;
	out = write_and_report(t, NULL);
	for (const char *p = out; (p = strstr(p, "kmalloc:")); p++)
		lines++;
	CHECK_MSG(lines == 101, "%zu lines\n%s", lines, out);
	CHECK_MSG(strstr(out, "bash-100   [000]     5.000050: kmalloc:              bytes_req=50\n"
			      "            bash-100   [000]     8.000050: kmalloc:              "
			      "bytes_req=51\n"),
		  "%s", out);
	CHECK_MSG(strstr(out, "cat-200   [001]     8.000099: kmalloc:              bytes_req=4242\n"),
		  "%s", out);
}

int main(void)
{
	test_stream();
	test_pages();
	return tests_done("test-tracedat");
}
