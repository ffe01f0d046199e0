/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The crash buffer's tracefs side (daemon/crash-buffer.c) on a fixture
 * tree: whether a kernel has the boot-mapped instance, the markers of a
 * previous boot read back from its trace file (boot id, kernel, clock
 * pairs, a clean stop, a restart, an overwritten boot marker, this boot's
 * own markers; none left, and the armed record names the boot), and
 * arming: the files it writes (the armed record too), and the refusal to
 * touch an instance that is not in overwrite mode.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "crash-buffer.h"
#include "helpers.h"
#include "util.h"

static char *root;

static bool endswith(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && streq(s + a - b, suffix);
}

static void put(const char *rel, const char *text)
{
	_cleanup_free_ char *p = NULL;
	FILE *f;

	CHECK(strprintf(&p, "%s/%s", root, rel) == 0);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static char *get(const char *rel)
{
	_cleanup_free_ char *p = NULL;
	char *v = NULL;

	if (strprintf(&p, "%s/%s", root, rel) < 0 || read_file(p, &v, NULL) < 0)
		return strdup("(unreadable)");
	return v;
}

static void mkdirs(const char *rel)
{
	_cleanup_free_ char *p = NULL;

	CHECK(strprintf(&p, "%s/%s", root, rel) == 0);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			(void)mkdir(p, 0755);
			*s = '/';
		}
	(void)mkdir(p, 0755);
}

static void rmdirs(const char *rel)
{
	_cleanup_free_ char *p = NULL;

	CHECK(strprintf(&p, "%s/%s", root, rel) == 0);
	CHECK_MSG(rmdir(p) == 0, "rmdir %s: %m", p);
}

#define I "instances/" CONFIG_CRASH_INSTANCE "/"
#define BOOT1 "8d1cec80-6b9d-4305-827e-d9545a3f45a8"
#define BOOT2 "2f0e1b7c-1a5d-4c1e-9d0a-6f1f6b2c9e11"

static void make_instance(void)
{
	mkdirs(I "options");
	mkdirs(I "events/kmem/kmem_cache_alloc");
	put(I "last_boot_info", "text delta:\t-4096\ndata delta:\t-4096\n");
	put(I "tracing_on", "0\n");
	put(I "trace_clock", "[local] global counter\n");
	put(I "options/overwrite", "1\n");
	put(I "options/stacktrace", "0\n");
	put(I "events/kmem/kmem_cache_alloc/enable", "0\n");
	put(I "events/kmem/kmem_cache_alloc/filter", "none\n");
	put(I "events/kmem/kmem_cache_alloc/trigger", "\n");
	put(I "set_event_notrace_pid", "\n");
	put(I "trace_marker", "");
	put(I "buffer_size_kb", "2032\n");
}

static const char trace_head[] =
	"# tracer: nop\n#\n# entries-in-buffer/entries-written: 9/9   #P:2\n#\n";

static void test_probe(void)
{
	char *why = NULL;

	CHECK(crash_buffer_probe(root, &why) == -ENOENT);
	CHECK_MSG(why && strstr(why, "boot-cmdline"), "%s", why);
	free(why);
	why = NULL;
	mkdirs(I);
	CHECK(crash_buffer_probe(root, &why) == -ENOENT);
	CHECK_MSG(why && strstr(why, "last_boot_info"), "%s", why);
	free(why);
	why = NULL;
	make_instance();
	CHECK(crash_buffer_probe(root, &why) == 0);
	free(why);
}

static void read_prev(const char *trace, const char *this_boot, struct crash_previous *p)
{
	struct config c;
	_cleanup_(crash_buffer_freep) struct crash_buffer *cb = NULL;
	_cleanup_free_ char *text = NULL;

	CHECK(strprintf(&text, "%s%s", trace_head, trace) == 0);
	put(I "trace", text);
	CHECK(config_init(&c) == 0);
	free(c.directory);
	c.directory = strdup(root);		/* the armed record's */
	CHECK(crash_buffer_open(root, &c, &cb) == 0);
	*p = (struct crash_previous){};
	if (cb)
		CHECK(crash_buffer_read_previous(cb, this_boot, p) == 0);
	config_done(&c);
}

static void test_read_previous(void)
{
	struct crash_previous p;

	/* a full buffer: boot marker, clock pairs, events with a stack, a clean stop */
	read_prev("  stackmapd-70 [001] .....  5.027240: tracing_mark_write: stackmapd: crash boot "
		  BOOT1 " release 6.12.117-stackmap version #1 SMP Sun Nov 29 08:08:56 UTC 2026\n"
		  "  stackmapd-70 [001] .....  5.027462: tracing_mark_write: stackmapd: crash clock "
		  "1796195015027462791 4027470523 " BOOT1 " release 6.12.117-stackmap\n"
		  "  smload-82 [000] .....  6.200652: kmem_cache_alloc: call_site=x ptr=y\n"
		  "  smload-82 [000] .....  6.200655: <stack trace>\n"
		  " => kmem_cache_alloc_noprof\n"
		  "  stackmapd-70 [000] .....  7.027100: tracing_mark_write: stackmapd: crash clock "
		  "1796195017027100000 6027100000 " BOOT1 " release 6.12.117-stackmap\n"
		  "  stackmapd-70 [000] .....  7.500000: tracing_mark_write: stackmapd: crash stop clean\n"
		  "  systemd-1 [001] .....  8.250000: kmem_cache_alloc: call_site=x ptr=z\n",
		  "f93f6385-58a1-4d01-b7e4-0e4458827a80", &p);
	CHECK_MSG(p.boot_id && streq(p.boot_id, BOOT1), "%s", p.boot_id);
	CHECK(p.kernel_release && streq(p.kernel_release, "6.12.117-stackmap"));
	CHECK_MSG(p.kernel_version && streq(p.kernel_version, "#1 SMP Sun Nov 29 08:08:56 UTC 2026"),
		  "'%s'", p.kernel_version);
	CHECK(p.clean);
	CHECK(p.stop_ts == UINT64_C(7500000000));
	CHECK_MSG(p.last_ts == UINT64_C(8250000000), "%" PRIu64, p.last_ts);
	CHECK(p.nr_pairs == 2);
	if (p.nr_pairs == 2) {
		CHECK(p.pairs[0].trace == UINT64_C(5027462000));
		CHECK(p.pairs[0].realtime == UINT64_C(1796195015027462791));
		CHECK(p.pairs[1].boottime == UINT64_C(6027100000));
	}
	CHECK(p.text_delta_known && p.text_delta == -4096);
	crash_previous_done(&p);

	/* overwriting took the boot marker: the clock markers name the boot; no stop: unclean */
	read_prev("  smload-82 [000] .....  6.200652: kmem_cache_alloc: call_site=x ptr=y\n"
		  "  stackmapd-70 [000] .....  7.027100: tracing_mark_write: stackmapd: crash clock "
		  "1796195017027100000 6027100000 " BOOT1 " release 6.12.117-stackmap\n"
		  "  smload-82 [001] .....  7.900000: kmem_cache_alloc: call_site=x ptr=y\n",
		  NULL, &p);
	CHECK(p.boot_id && streq(p.boot_id, BOOT1));
	CHECK(p.kernel_release && streq(p.kernel_release, "6.12.117-stackmap"));
	CHECK(!p.kernel_version);
	CHECK(!p.clean && !p.stop_ts);
	CHECK(p.nr_pairs == 1 && p.last_ts == UINT64_C(7900000000));
	crash_previous_done(&p);

	/* armed again after a clean stop in the same boot: the last run's end counts */
	read_prev("  stackmapd-70 [001] .....  5.0: tracing_mark_write: stackmapd: crash boot " BOOT1
		  " release r version v\n"
		  "  stackmapd-70 [001] .....  6.0: tracing_mark_write: stackmapd: crash stop clean\n"
		  "  stackmapd-90 [001] .....  9.0: tracing_mark_write: stackmapd: crash boot " BOOT1
		  " release r version v\n", NULL, &p);
	CHECK(p.boot_id && !p.clean);
	crash_previous_done(&p);

	/* this boot's own buffer (a restarted daemon), or none of ours: nothing to save */
	read_prev("  stackmapd-70 [001] .....  5.0: tracing_mark_write: stackmapd: crash boot " BOOT1
		  " release r version v\n", BOOT1, &p);
	CHECK(!p.boot_id);
	crash_previous_done(&p);
	read_prev("  smload-82 [000] .....  6.2: kmem_cache_alloc: call_site=x ptr=y\n", NULL, &p);
	CHECK(!p.boot_id && p.lines == 1 && !p.markers_lost);
	crash_previous_done(&p);

	/* every marker overwritten: the armed record names the boot */
	put(CRASH_ARMED_RECORD, "boot " BOOT1 " release 6.12.117-stackmap version #1 SMP Sun\n");
	read_prev("  smload-82 [000] .....  6.2: kmem_cache_alloc: call_site=x ptr=y\n"
		  "  smload-82 [001] .....  6.900000: kmem_cache_alloc: call_site=x ptr=z\n", NULL, &p);
	CHECK_MSG(p.boot_id && streq(p.boot_id, BOOT1), "%s", p.boot_id);
	CHECK(p.markers_lost && !p.clean && !p.nr_pairs);
	CHECK(p.kernel_release && streq(p.kernel_release, "6.12.117-stackmap"));
	CHECK_MSG(p.kernel_version && streq(p.kernel_version, "#1 SMP Sun"), "'%s'",
		  p.kernel_version);
	CHECK(p.lines == 2 && p.last_ts == UINT64_C(6900000000));
	crash_previous_done(&p);
	/* ... unless it names this boot, or the buffer is empty; a marker wins over it */
	read_prev("  smload-82 [000] .....  6.2: kmem_cache_alloc: call_site=x ptr=y\n", BOOT1, &p);
	CHECK(!p.boot_id && !p.markers_lost);
	crash_previous_done(&p);
	read_prev("", NULL, &p);
	CHECK(!p.boot_id && !p.markers_lost);
	crash_previous_done(&p);
	read_prev("  stackmapd-70 [000] .....  7.0: tracing_mark_write: stackmapd: crash clock "
		  "1796195017027100000 6027100000 f93f6385-58a1-4d01-b7e4-0e4458827a80 release r\n",
		  NULL, &p);
	CHECK(p.boot_id && startswith(p.boot_id, "f93f6385") && !p.markers_lost);
	crash_previous_done(&p);
	put(CRASH_ARMED_RECORD, "damaged\n");
	read_prev("  smload-82 [000] .....  6.2: kmem_cache_alloc: call_site=x ptr=y\n", NULL, &p);
	CHECK(!p.boot_id && !p.markers_lost);
	crash_previous_done(&p);
	{
		_cleanup_free_ char *path = NULL;

		CHECK(strprintf(&path, "%s/" CRASH_ARMED_RECORD, root) == 0);
		CHECK(unlink(path) == 0);
	}
}

static void test_arm(void)
{
	struct config c;
	_cleanup_(crash_buffer_freep) struct crash_buffer *cb = NULL;
	char *err = NULL, *v;

	CHECK(config_init(&c) == 0);
	CHECK(config_load_string(&c, "t", "[trace]\nevents = kmem:kmem_cache_alloc\n"
				 "stacktrace = all\n[crash]\nbuffer_size = 4M\n", &err) == 0);
	free(err);
	free(c.directory);
	c.directory = strdup(root);
	CHECK(crash_buffer_open(root, &c, &cb) == 0);
	if (!cb) {
		config_done(&c);
		return;
	}

	/* not in overwrite mode: refused, nothing enabled, tracing left off */
	put(I "options/overwrite", "0\n");
	CHECK(crash_buffer_arm(cb, BOOT1, "r", "v", "local") == -EUCLEAN);
	CHECK(!crash_buffer_armed(cb));
	v = get(I "events/kmem/kmem_cache_alloc/enable");
	CHECK_MSG(streq(v, "0\n"), "%s", v);
	free(v);
	v = get(I "options/overwrite");
	CHECK_MSG(streq(v, "0\n"), "the option was written: %s", v);
	free(v);
	v = get(CRASH_ARMED_RECORD);
	CHECK_MSG(streq(v, "(unreadable)"), "an armed record for an unarmed buffer: %s", v);
	free(v);

	put(I "options/overwrite", "1\n");
	CHECK(crash_buffer_arm(cb, BOOT1, "6.12.117-stackmap", "#1 SMP", "local") == 0);
	CHECK(crash_buffer_armed(cb));
	v = get(I "tracing_on");
	CHECK(streq(v, "1"));
	free(v);
	v = get(I "options/stacktrace");
	CHECK(streq(v, "1"));
	free(v);
	v = get(I "events/kmem/kmem_cache_alloc/enable");
	CHECK(streq(v, "1"));
	free(v);
	v = get(CRASH_ARMED_RECORD);
	CHECK_MSG(streq(v, "boot " BOOT1 " release 6.12.117-stackmap version #1 SMP\n"), "%s", v);
	free(v);
	CHECK(crash_buffer_record_error(cb) == 0);
	/* the clock already in use is not written again */
	v = get(I "trace_clock");
	CHECK_MSG(streq(v, "[local] global counter\n"), "%s", v);
	free(v);
	/* the markers, one write each (a plain file here keeps them all, in order) */
	v = get(I "trace_marker");
	CHECK_MSG(startswith(v, CRASH_MARKER_PREFIX "boot " BOOT1 " release 6.12.117-stackmap "
			     "version #1 SMP\n" CRASH_MARKER_PREFIX "clock ") &&
		  strstr(v, " " BOOT1 " release 6.12.117-stackmap\n"), "%s", v);
	free(v);
	CHECK(crash_buffer_mark_stop(cb) == 0);
	v = get(I "trace_marker");
	CHECK_MSG(endswith(v, "release 6.12.117-stackmap\n" CRASH_MARKER_PREFIX "stop clean\n"),
		  "%s", v);
	free(v);
	CHECK(crash_buffer_cpu_bytes(cb) == 2032 * 1024);
	{
		const int pids[] = { 42, 43 };

		CHECK(crash_buffer_exclude_pids(cb, pids, 2) == 0);
		v = get(I "set_event_notrace_pid");
		CHECK(streq(v, "42 43"));
		free(v);
	}

	/*
	 * Armed again (a restart) while the record cannot be written (its
	 * temporary file is a directory here, as ENOSPC or EROFS would fail
	 * it): no record is left, not the old one, so a buffer whose markers
	 * were all overwritten is not given to the boot that armed it before.
	 */
	mkdirs(CRASH_ARMED_RECORD ".new/x");
	CHECK(crash_buffer_arm(cb, BOOT2, "6.12.117-stackmap", "#1 SMP", "local") == 0);
	CHECK(crash_buffer_record_error(cb) < 0);
	v = get(CRASH_ARMED_RECORD);
	CHECK_MSG(streq(v, "(unreadable)"), "the old armed record is left: %s", v);
	free(v);
	{
		struct crash_previous p;

		read_prev("  smload-82 [000] .....  6.2: kmem_cache_alloc: call_site=x ptr=y\n", BOOT2,
			  &p);
		CHECK_MSG(!p.boot_id && !p.markers_lost, "this boot's events taken for boot %s",
			  p.boot_id);
		crash_previous_done(&p);
	}
	rmdirs(CRASH_ARMED_RECORD ".new/x");
	rmdirs(CRASH_ARMED_RECORD ".new");

	/* a record that cannot be removed: the buffer is left as it is, not armed */
	mkdirs(CRASH_ARMED_RECORD "/x");
	put(I "trace", "previous\n");
	CHECK(crash_buffer_arm(cb, BOOT2, "r", "v", "local") < 0);
	CHECK(!crash_buffer_armed(cb));
	v = get(I "trace");
	CHECK_MSG(streq(v, "previous\n"), "the buffer was cleared: %s", v);
	free(v);
	rmdirs(CRASH_ARMED_RECORD "/x");
	rmdirs(CRASH_ARMED_RECORD);
	config_done(&c);
}

int main(void)
{
	root = test_tmpdir();
	test_probe();
	test_read_previous();
	test_arm();
	test_rmtree(root);
	free(root);
	return tests_done("test-crash-buffer");
}
