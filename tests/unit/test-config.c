/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration: unit parsers, good configs with their values, bad
 * configs with the exact "FILE:LINE: KEY:" prefix of their message, rules
 * across keys, the shipped conf/stackmapd.conf, reload comparison and the
 * kernel command line (lib/config/config*.c), and the checks against tracefs
 * (daemon/config-check.c), which use a fixture tree in a temp dir (event
 * formats copied from /sys/kernel/tracing when readable, else a built-in
 * one) and are the same for --check and for tracing_validate() at start.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "config-check.h"
#include "helpers.h"
#include "page-walk.h"
#include "tracing.h"
#include "util.h"

#define NAME "t.conf"

static char *fixture;		/* fake tracing dir */

/* Format of a kmem allocation event, used when tracefs is not readable. */
#define MINIMAL_FORMAT \
	"name: %s\n" \
	"ID: %d\n" \
	"format:\n" \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n" \
	"\n" \
	"\tfield:unsigned long call_site;\toffset:8;\tsize:8;\tsigned:0;\n" \
	"\tfield:const void * ptr;\toffset:16;\tsize:8;\tsigned:0;\n" \
	"\tfield:size_t bytes_req;\toffset:24;\tsize:8;\tsigned:0;\n" \
	"\tfield:size_t bytes_alloc;\toffset:32;\tsize:8;\tsigned:0;\n" \
	"\tfield:unsigned long gfp_flags;\toffset:40;\tsize:8;\tsigned:0;\n" \
	"\tfield:int node;\toffset:48;\tsize:4;\tsigned:1;\n" \
	"\n" \
	"print fmt: \"call_site=%%pS ptr=%%p bytes_req=%%zu bytes_alloc=%%zu node=%%d\", "	\
	"(void *)REC->call_site, REC->ptr, REC->bytes_req, REC->bytes_alloc, REC->node\n"

static const char minimal_sched_switch[] =
	"name: sched_switch\n"
	"ID: 300\n"
	"format:\n"
	FTRACE_COMMON_FIELDS_FORMAT
	"\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"prev_comm=%s prev_pid=%d next_comm=%s next_pid=%d\", REC->prev_comm, "
	"REC->prev_pid, REC->next_comm, REC->next_pid\n";

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(99);
	}
}

static void make_event(const char *system, const char *name)
{
	char path[4096], real[4096];
	char *text = NULL;

	snprintf(path, sizeof(path), "%s/events/%s", fixture, system);
	(void)mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/events/%s/%s", fixture, system, name);
	if (mkdir(path, 0755) < 0) {
		perror(path);
		exit(99);
	}
	snprintf(real, sizeof(real), "/sys/kernel/tracing/events/%s/%s/format", system, name);
	if (read_file(real, &text, NULL) < 0) {
		if (streq(name, "sched_switch"))
			text = strdup(minimal_sched_switch);
		else if (strprintf(&text, MINIMAL_FORMAT, name, 500) < 0)
			text = NULL;
		if (!text)
			exit(99);
	}
	snprintf(path, sizeof(path), "%s/events/%s/%s/format", fixture, system, name);
	write_text(path, text);
	free(text);
}

static void make_fixture(void)
{
	char path[4096];

	fixture = test_tmpdir();
	snprintf(path, sizeof(path), "%s/events", fixture);
	if (mkdir(path, 0755) < 0) {
		perror(path);
		exit(99);
	}
	make_event("kmem", "kmem_cache_alloc");
	make_event("kmem", "kmalloc");
	make_event("kmem", "kfree");		/* the shipped file's frees */
	make_event("kmem", "kmem_cache_free");
	make_event("sched", "sched_switch");
	snprintf(path, sizeof(path), "%s/trace_clock", fixture);
	write_text(path, "[local] global counter uptime perf mono mono_raw boot\n");
	/* a kernel with the stack map */
	snprintf(path, sizeof(path), "%s/stack_map", fixture);
	write_text(path, "");
	snprintf(path, sizeof(path), "%s/options", fixture);
	if (mkdir(path, 0755) < 0) {
		perror(path);
		exit(99);
	}
	snprintf(path, sizeof(path), "%s/options/stackmap", fixture);
	write_text(path, "0\n");
}

/*
 * Load text into a fresh config; if check, apply the rules across keys
 * and, if tracing, check it against the fixture tree, in the daemon's
 * order. Returns r; *ret_error set on error.
 */
static int load(struct config *c, const char *text, bool tracing, bool check, char **ret_error)
{
	int r;

	*ret_error = NULL;
	r = config_init(c);
	if (r < 0)
		return r;
	r = config_load_string(c, NAME, text, ret_error);
	if (r >= 0 && check)
		r = config_check(c, ret_error);
	if (r >= 0 && tracing)
		r = config_check_tracefs(c, fixture, NULL, ret_error);
	return r;
}

static void test_parsers(void)
{
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} sizes[] = {
		{ "4096", 0, 4096 },
		{ "0", 0, 0 },
		{ "512K", 0, 512 * 1024 },
		{ "64M", 0, UINT64_C(64) << 20 },
		{ "64MB", 0, UINT64_C(64) << 20 },
		{ "1G", 0, UINT64_C(1) << 30 },
		{ "2t", 0, UINT64_C(2) << 40 },
		{ "16777215T", 0, UINT64_C(16777215) << 40 },
		{ "16777216T", -ERANGE, 0 },
		{ "99999999999999999999", -ERANGE, 0 },
		{ "64Q", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "M", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "1.5G", -EINVAL, 0 },
		{ "64 M", -EINVAL, 0 },
		{ "64MiB", -EINVAL, 0 },
	};
	static const struct {
		const char *s;
		int r;
		uint64_t v;
	} durations[] = {
		{ "500ms", 0, 500000 },
		{ "30s", 0, 30000000 },
		{ "10min", 0, 600000000 },
		{ "2h", 0, UINT64_C(7200000000) },
		{ "1d", 0, UINT64_C(86400000000) },
		{ "250us", 0, 250 },
		{ "0", 0, 0 },
		{ "30", -EINVAL, 0 },
		{ "10m", -EINVAL, 0 },
		{ "1 h", -EINVAL, 0 },
		{ "s", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "999999999999999d", -ERANGE, 0 },
	};
	static const struct {
		const char *s;
		int r;
		bool v;
	} bools[] = {
		{ "yes", 0, true }, { "true", 0, true }, { "on", 0, true }, { "1", 0, true },
		{ "YES", 0, true }, { "no", 0, false }, { "false", 0, false }, { "off", 0, false },
		{ "0", 0, false }, { "maybe", -EINVAL, false }, { "", -EINVAL, false },
		{ "2", -EINVAL, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint64_t v = 12345;
		int r = config_parse_size(sizes[i].s, &v);

		CHECK_MSG(r == sizes[i].r, "size '%s': %d", sizes[i].s, r);
		CHECK_MSG(r < 0 ? v == 12345 : v == sizes[i].v, "size '%s': %" PRIu64, sizes[i].s,
			  v);
	}
	for (size_t i = 0; i < ARRAY_SIZE(durations); i++) {
		uint64_t v = 12345;
		int r = config_parse_duration(durations[i].s, &v);

		CHECK_MSG(r == durations[i].r, "duration '%s': %d", durations[i].s, r);
		CHECK_MSG(r < 0 ? v == 12345 : v == durations[i].v, "duration '%s': %" PRIu64,
			  durations[i].s, v);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bools); i++) {
		bool v = !bools[i].v;
		int r = config_parse_bool(bools[i].s, &v);

		CHECK_MSG(r == bools[i].r, "bool '%s': %d", bools[i].s, r);
		if (r == 0)
			CHECK_MSG(v == bools[i].v, "bool '%s'", bools[i].s);
	}
}

static void check_default_others(const struct config *c, bool paths);

/* paths: also the build-time directory and socket defaults. */
static void check_defaults(const struct config *c, bool paths)
{
	CHECK(c->nr_events == 2);
	if (c->nr_events == 2) {
		CHECK(streq(c->events[0].system, "kmem") &&
		      streq(c->events[0].name, "kmem_cache_alloc"));
		CHECK(streq(c->events[1].system, "kmem") && streq(c->events[1].name, "kmalloc"));
		CHECK(c->events[0].stacktrace && c->events[1].stacktrace);
		CHECK(!c->events[0].filter && !c->events[1].filter);
	}
	CHECK(c->stacktrace_all);
	check_default_others(c, paths);
}

/*
 * The events the shipped file records: the slab allocator's allocations
 * with their stacks, its frees without (stackmapctl memory pairs them).
 */
static void check_shipped_events(const struct config *c)
{
	static const char *const names[] = { "kmem_cache_alloc", "kmalloc", "kfree",
					     "kmem_cache_free" };

	CHECK(c->nr_events == ARRAY_SIZE(names));
	for (size_t i = 0; i < c->nr_events && i < ARRAY_SIZE(names); i++) {
		CHECK_MSG(streq(c->events[i].system, "kmem") && streq(c->events[i].name, names[i]),
			  "event %zu", i);
		CHECK_MSG(c->events[i].stacktrace == (i < 2), "stacktrace of %s", names[i]);
		CHECK(!c->events[i].filter);
	}
	CHECK(!c->stacktrace_all);
}

static void check_default_others(const struct config *c, bool paths)
{
	CHECK(streq(c->instance, ""));
	CHECK(c->buffer_size_kb == 0);
	CHECK(c->subbuf_size_kb == CONFIG_SUBBUF_DEFAULT_KB && c->subbuf_size_auto);
	CHECK(c->stack_time == CONFIG_STACK_TIME_EVENT);
	CHECK(c->clock == NULL);
	CHECK(c->stackmap == CONFIG_STACKMAP_AUTO);
	CHECK(!c->keep_tracing);
	CHECK(c->record_mode == CONFIG_RECORD_STREAM);
	CHECK(c->snapshot_interval_usec == 10 * USEC_PER_SEC);
	CHECK(c->reset_fill_percent == 90);
	CHECK(c->reset_drops == 1000);
	CHECK(c->reset_interval_usec == 0);
	CHECK(c->reset_mode == CONFIG_RESET_LOSSLESS);
	CHECK(c->reset_guard_usec == USEC_PER_MSEC);
	CHECK(c->reset_realtime);
	CHECK(!paths || streq(c->directory, ARCHIVEDIR));
	CHECK(c->compression_level == 1);
	CHECK(c->frame_size == 256 * 1024);
	CHECK(c->segment_size == 64 << 20);
	CHECK(c->segment_age_usec == UINT64_C(3600) * USEC_PER_SEC);
	CHECK(c->max_size == UINT64_C(1) << 30);
	CHECK(c->max_segments == 0);
	CHECK(c->keep_free_percent == 5);
	CHECK(c->sync);
	CHECK(c->hook == NULL && c->hook_argv == NULL);
	CHECK(!paths || streq(c->socket_path, RUNSTATEDIR "/stackmapd/control"));
	CHECK(c->socket_group == NULL);
	CHECK(c->status_interval_usec == 60 * USEC_PER_SEC);
}

static void test_defaults(void)
{
	struct config c;
	char *err = NULL;

	CHECK(config_init(&c) == 0);
	check_defaults(&c, true);
	CHECK(config_check(&c, &err) == 0);
	free(err);
	config_done(&c);

	/* An empty file is the defaults; with the fixture the default events must exist. */
	CHECK(load(&c, "", true, true, &err) == 0);
	CHECK_MSG(!err, "%s", err);
	check_defaults(&c, true);
	CHECK(streq(c.path, NAME) && streq(c.text, ""));
	free(err);
	config_done(&c);
}

/*
 * The shipped file: every key at its default but the events, and its boot
 * command line records the same.
 */
static void test_shipped(void)
{
	const char *top = getenv("top_srcdir");
	char path[4096];
	struct config c;
	char *err = NULL;
	int r;

	if (top)
		snprintf(path, sizeof(path), "%s/conf/stackmapd.conf", top);
	else	/* run by hand: find the tree from this file's path */
		snprintf(path, sizeof(path), "%.*s/conf/stackmapd.conf",
			 (int)(strlen(__FILE__) - strlen("/tests/unit/test-config.c")), __FILE__);
	CHECK(config_init(&c) == 0);
	r = config_load(&c, path, &err);
	CHECK_MSG(r == 0, "%s: %s", path, err ? err : strerror(-r));
	if (r == 0) {
		r = config_check(&c, &err);
		if (r == 0)
			r = config_check_tracefs(&c, fixture, NULL, &err);
		CHECK_MSG(r == 0, "%s", err);
		check_shipped_events(&c);
		check_default_others(&c, true);
		CHECK(c.text && strstr(c.text, "[archive]"));
	}
	if (r == 0) {
		_cleanup_free_ char *line = NULL;

		CHECK(config_boot_cmdline(&c, &line) == 0);
		CHECK_MSG(line && streq(line, "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc,"
					"kmem:kfree,kmem:kmem_cache_free "
					"trace_options=stackmap,nooverwrite "
					"trace_trigger=kmem_cache_alloc.stacktrace,kmalloc.stacktrace"),
			  "%s", line);
	}
	free(err);
	config_done(&c);

	/* Uncommenting every "#key = value" line gives the defaults too. */
	{
		_cleanup_free_ char *text = NULL;
		char *out, *o;

		CHECK(read_file(path, &text, NULL) == 0);
		if (!text)
			return;
		out = o = calloc(1, strlen(text) + 1);
		for (const char *l = text; *l;) {
			size_t n = strcspn(l, "\n");

			/* "#key = value" (no space after '#') is a commented-out setting */
			if (l[0] == '#' && (isalpha((unsigned char)l[1])) && memchr(l, '=', n)) {
				memcpy(o, l + 1, n - 1);
				o += n - 1;
			} else {
				memcpy(o, l, n);
				o += n;
			}
			l += n;
			if (*l == '\n') {
				*o++ = '\n';
				l++;
			}
		}
		r = load(&c, out, true, true, &err);
		CHECK_MSG(r == 0, "uncommented shipped config: %s", err);
		if (r == 0) {
			check_shipped_events(&c);
			check_default_others(&c, false);
			CHECK(streq(c.directory, "/var/lib/stackmapd"));
			CHECK(streq(c.socket_path, "/run/stackmapd/control"));
		}
		CHECK(strstr(out, "\nsegment_size = 64M") != NULL);
		free(err);
		free(out);
		config_done(&c);
	}
}

static void test_good(void)
{
	static const char full[] =
		"\xEF\xBB\xBF# every key\r\n"
		"[trace]\r\n"
		"instance = \r\n"
		"events = kmem:kmalloc   sched:sched_switch\n"
		"stacktrace = sched:sched_switch\n"
		"filter.kmem:kmalloc = bytes_req > 256 && (gfp_flags & 0x10 || node == -1)\n"
		"filter.sched:sched_switch=prev_comm ~ \"kworker*\" || next_comm == 'bash'\n"
		"buffer_size = 8M\n"
		"subbuf_size =\n"
		"clock = global\n"
		"stackmap = on\n"
		"keep_tracing = yes\n"
		"mode = flight\n"
		"\n"
		"[stackmap]\n"
		"; a comment\n"
		"snapshot_interval = 100ms\n"
		"reset_fill = 0%\n"
		"reset_drops = 0\n"
		"reset_interval = 10min\n"
		"reset_mode = strict\n"
		"reset_guard = 0\n"
		"reset_realtime = no\n"
		"[archive]\n"
		"directory = /srv/trace\n"
		"compression_level = 19\n"
		"frame_size = 64K\n"
		"segment_size = 0\n"
		"segment_age = 30d ; inline comment\n"
		"max_size = 0\n"
		"max_segments = 0\n"
		"keep_free = 90\n"
		"sync = off\n"
		"hook = /usr/bin/logger -t  stackmapd\n"
		"[control]\n"
		"socket = /tmp/sm.sock\n"
		"group = root\n"
		"[service]\n"
		"status_interval = 1d\n";
	struct config c;
	char *err = NULL;
	int r;

	r = load(&c, full, true, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	if (r == 0) {
		CHECK(streq(c.instance, ""));
		CHECK(c.nr_events == 2);
		CHECK(streq(c.events[0].name, "kmalloc") && !c.events[0].stacktrace);
		CHECK(streq(c.events[1].system, "sched") && c.events[1].stacktrace);
		CHECK(!c.stacktrace_all);
		CHECK(c.events[0].filter && streq(c.events[0].filter,
						  "bytes_req > 256 && (gfp_flags & 0x10 || node == -1)"));
		CHECK(c.events[1].filter && startswith(c.events[1].filter, "prev_comm ~"));
		CHECK(c.buffer_size_kb == 8192);
		CHECK(c.subbuf_size_kb == 0 && !c.subbuf_size_auto);	/* set empty: as it is */
		CHECK(c.clock && streq(c.clock, "global"));
		CHECK(c.stackmap == CONFIG_STACKMAP_ON);
		CHECK(c.keep_tracing);
		CHECK(c.record_mode == CONFIG_RECORD_FLIGHT);
		CHECK(c.snapshot_interval_usec == 100000);
		CHECK(c.reset_fill_percent == 0 && c.reset_drops == 0);
		CHECK(c.reset_interval_usec == UINT64_C(600000000));
		CHECK(c.reset_mode == CONFIG_RESET_STRICT && c.reset_guard_usec == 0);
		CHECK(!c.reset_realtime);
		CHECK(streq(c.directory, "/srv/trace"));
		CHECK(c.compression_level == 19 && c.frame_size == 65536);
		CHECK(c.segment_size == 0 && c.segment_age_usec == UINT64_C(30) * 86400000000);
		CHECK(c.max_size == 0 && c.max_segments == 0 && c.keep_free_percent == 90);
		CHECK(!c.sync);
		CHECK(c.hook && streq(c.hook, "/usr/bin/logger -t  stackmapd"));
		CHECK(c.hook_argv && streq(c.hook_argv[0], "/usr/bin/logger") &&
		      streq(c.hook_argv[1], "-t") && streq(c.hook_argv[2], "stackmapd") &&
		      !c.hook_argv[3]);
		CHECK(streq(c.socket_path, "/tmp/sm.sock") && streq(c.socket_group, "root"));
		CHECK(c.status_interval_usec == UINT64_C(86400000000));
		CHECK(c.text && startswith(c.text, "\xEF\xBB\xBF# every key"));
	}
	config_done(&c);

	/* Lists continue on indented lines (comments and blank lines may come between). */
	r = load(&c, "[trace]\nevents = kmem:kmalloc\n\tkmem:kmem_cache_alloc\n# note\n"
		 "    sched:sched_switch\nstacktrace =\n  kmem:kmalloc\n  sched:sched_switch\n"
		 "[archive]\nsync = no\n", true, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	CHECK(c.nr_events == 3 && !c.sync);
	if (c.nr_events == 3) {
		CHECK(streq(c.events[2].name, "sched_switch") && c.events[2].stacktrace);
		CHECK(c.events[0].stacktrace && !c.events[1].stacktrace && !c.stacktrace_all);
	}
	config_done(&c);

	/* stacktrace = none; a named instance turns stackmap = auto off. */
	r = load(&c, "[trace]\ninstance = sm_test-1.a\nstacktrace = none\n", false, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	CHECK(streq(c.instance, "sm_test-1.a"));
	CHECK(c.stackmap == CONFIG_STACKMAP_OFF);
	CHECK(!c.stacktrace_all && !c.events[0].stacktrace && !c.events[1].stacktrace);
	config_done(&c);

	/* subbuf_size: auto is the default; a size is explicit */
	r = load(&c, "[trace]\nsubbuf_size = auto\n", false, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	CHECK(c.subbuf_size_kb == CONFIG_SUBBUF_DEFAULT_KB && c.subbuf_size_auto);
	config_done(&c);
	r = load(&c, "[trace]\nsubbuf_size = 16K\n", false, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	CHECK(c.subbuf_size_kb == 16 && !c.subbuf_size_auto);
	config_done(&c);

	/* Values that are limits, and filters only checked for structure without tracefs. */
	r = load(&c,
		 "[trace]\nevents = foo:bar\n"
		 "filter.foo:bar = anything == 1 && x.function == kfree\n"
		 "buffer_size = 1G\nclock = x86-tsc\n"
		 "[archive]\nsegment_size = 64G\nmax_size = 128G\nmax_segments = 2\nkeep_free = 0\n"
		 "segment_age = 1s\n",
		 false, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	CHECK(c.buffer_size_kb == 1024 * 1024 && c.segment_size == UINT64_C(64) << 30);
	CHECK(c.events[0].filter && c.max_segments == 2);
	config_done(&c);

	/* Newer kernel filter syntax is accepted with tracefs too. */
	r = load(&c,
		 "[trace]\nfilter.kmem:kmalloc = call_site.function == kfree || "
		 "common_cpu & CPUS{0-3}\n",
		 true, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	config_done(&c);
}

struct bad {
	const char *text;
	bool tracing;		/* check against the fixture tracing dir */
	const char *prefix;	/* exact start of the message */
	const char *detail;	/* somewhere in the message */
};

static const struct bad bad_configs[] = {
	/* file structure */
	{ "[bogus]\nx = 1\n", false, NAME ":1: [bogus]: unknown section", "[trace]" },
	{ "[trace]\n[bogus]\n", false, NAME ":2: [bogus]: unknown section", NULL },
	{ "[trace\n", false, NAME ":1: '[trace': missing ']'", NULL },
	{ "[trace]\nbogus = 1\n", false, NAME ":2: trace.bogus: unknown key", "events" },
	{ "[archive]\nsync = yes\n\nsync = no\n", false,
	  NAME ":4: archive.sync: duplicate key (first set on line 2)", NULL },
	{ "[archive]\nsync = yes\n[archive]\nsync = no\n", false,
	  NAME ":4: archive.sync: duplicate key", NULL },
	{ "[trace]\nevents kmem:kmalloc\n", false, NAME ":2: 'events kmem:kmalloc': expected "
	  "'key = value'", NULL },
	{ "[trace]\nevents: kmem:kmalloc\n", false, NAME ":2: 'events: kmem:kmalloc': expected "
	  "'key = value'", NULL },
	{ "[trace]\nstackmap = on\n  stacktrace = all\n", false,
	  NAME ":3: line starts with white space", "indentation" },
	{ "[archive]\nsync = no\n\tyes\n", false, NAME ":3: line starts with white space", NULL },
	{ "[trace]\n  [archive]\n", false, NAME ":2: line starts with white space", NULL },
	{ "[trace]\nevents = kmem:kmalloc\n\tkmem:kmalloc\n", false,
	  NAME ":2: trace.events: 'kmem:kmalloc' is listed twice", NULL },
	{ "segment_size = 64M\n", false, NAME ":1: segment_size: key outside a section", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1 && bytes_req > 2 && bytes_req > 3 && "
	  "bytes_req > 4 && bytes_req > 5 && bytes_req > 6 && bytes_req > 7 && bytes_req > 8 && "
	  "bytes_req > 9 && bytes_req > 10 && bytes_req > 11 && bytes_req > 12\n",
	  false, NAME ":2: line is too long", NULL },
	/* sizes */
	{ "[archive]\nsegment_size = 64Q\n", false,
	  NAME ":2: archive.segment_size: '64Q' is not a size (use K, M, G", NULL },
	{ "[archive]\nsegment_size = 512K\n", false,
	  NAME ":2: archive.segment_size: '512K' is out of range (1M..64G, or 0 to disable)",
	  NULL },
	{ "[archive]\nsegment_size = 65G\n", false,
	  NAME ":2: archive.segment_size: '65G' is out of range", NULL },
	{ "[archive]\nmax_size = 99999999999999999999\n", false,
	  NAME ":2: archive.max_size: '99999999999999999999' is too large", NULL },
	{ "[archive]\nmax_size = 512K\n", false, NAME ":2: archive.max_size: '512K' is too small "
	  "(at least 1M, or 0 for no limit)", NULL },
	{ "[archive]\nframe_size = 32K\n", false,
	  NAME ":2: archive.frame_size: '32K' is out of range (64K..16M)", NULL },
	{ "[archive]\nframe_size = 0\n", false, NAME ":2: archive.frame_size: '0' is out of range",
	  NULL },
	{ "[trace]\nbuffer_size = 2K\n", false,
	  NAME ":2: trace.buffer_size: '2K' is out of range (4K..1G)", NULL },
	{ "[trace]\nbuffer_size = 5000\n", false,
	  NAME ":2: trace.buffer_size: '5000' is not a whole number of kilobytes", NULL },
	{ "[trace]\nbuffer_size = lots\n", false,
	  NAME ":2: trace.buffer_size: 'lots' is not a size", NULL },
	/* durations */
	{ "[archive]\nsegment_age = 1fortnight\n", false,
	  NAME ":2: archive.segment_age: '1fortnight' is not a duration", NULL },
	{ "[archive]\nsegment_age = 30\n", false,
	  NAME ":2: archive.segment_age: '30' has no unit (add ms, s, min, h or d)", NULL },
	{ "[archive]\nsegment_age = 31d\n", false,
	  NAME ":2: archive.segment_age: '31d' is out of range (1s..30d, or 0 to disable)", NULL },
	{ "[stackmap]\nsnapshot_interval = 50ms\n", false,
	  NAME ":2: stackmap.snapshot_interval: '50ms' is out of range (100ms..1d)", NULL },
	{ "[stackmap]\nsnapshot_interval = 0\n", false,
	  NAME ":2: stackmap.snapshot_interval: '0' is out of range", NULL },
	{ "[stackmap]\nreset_guard = 2s\n", false,
	  NAME ":2: stackmap.reset_guard: '2s' is out of range (0..1s)", NULL },
	{ "[service]\nstatus_interval = 10m\n", false,
	  NAME ":2: service.status_interval: '10m' is not a duration", NULL },
	/* booleans, enums, numbers */
	{ "[archive]\nsync = maybe\n", false,
	  NAME ":2: archive.sync: 'maybe' is not a boolean (use yes or no)", NULL },
	{ "[trace]\nstackmap = sometimes\n", false,
	  NAME ":2: trace.stackmap: 'sometimes' is not one of: auto, on, off", NULL },
	{ "[trace]\nmode = replay\n", false, NAME ":2: trace.mode: 'replay' is not one of: stream, "
	  "flight", NULL },
	{ "[stackmap]\nreset_mode = lazy\n", false,
	  NAME ":2: stackmap.reset_mode: 'lazy' is not one of: lossless, strict", NULL },
	{ "[archive]\ncompression_level = 0\n", false,
	  NAME ":2: archive.compression_level: '0' is out of range (1..19)", NULL },
	{ "[archive]\ncompression_level = 20\n", false,
	  NAME ":2: archive.compression_level: '20' is out of range (1..19)", NULL },
	{ "[archive]\nmax_segments = 99999999999999999999\n", false,
	  NAME ":2: archive.max_segments: '99999999999999999999' is too large", NULL },
	{ "[archive]\ncompression_level = fast\n", false,
	  NAME ":2: archive.compression_level: 'fast' is not a whole number", NULL },
	{ "[archive]\nmax_segments = 1\n", false,
	  NAME ":2: archive.max_segments: '1' is out of range (2..4294967295, or 0 for no limit)",
	  NULL },
	{ "[stackmap]\nreset_drops = -1\n", false,
	  NAME ":2: stackmap.reset_drops: '-1' is not a whole number", NULL },
	{ "[stackmap]\nreset_fill = 101\n", false,
	  NAME ":2: stackmap.reset_fill: '101' is out of range (0..100%)", NULL },
	{ "[stackmap]\nreset_fill = 50%%\n", false,
	  NAME ":2: stackmap.reset_fill: '50%%' is not a percentage", NULL },
	{ "[stackmap]\nreset_fill = half\n", false,
	  NAME ":2: stackmap.reset_fill: 'half' is not a percentage", NULL },
	{ "[archive]\nkeep_free = 95\n", false,
	  NAME ":2: archive.keep_free: '95' is out of range (0..90%)", NULL },
	/* paths, names */
	{ "[archive]\ndirectory = var/lib/stackmapd\n", false,
	  NAME ":2: archive.directory: 'var/lib/stackmapd' is not an absolute path", NULL },
	{ "[archive]\ndirectory =\n", false,
	  NAME ":2: archive.directory: '' is not an absolute path", NULL },
	{ "[control]\nsocket = stackmapd.sock\n", false,
	  NAME ":2: control.socket: 'stackmapd.sock' is not an absolute path", NULL },
	{ "[control]\nsocket = /run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", false,
	  NAME ":2: control.socket: '/run/", "longer than a unix socket path can be (107 bytes)" },
	{ "[control]\ngroup = nosuchgroup-stackmapd-test\n", false,
	  NAME ":2: control.group: group 'nosuchgroup-stackmapd-test' does not exist", NULL },
	{ "[archive]\nhook = gzip -9\n", false,
	  NAME ":2: archive.hook: 'gzip -9' must start with the absolute path of a program", NULL },
	{ "[trace]\ninstance = a/b\n", false, NAME ":2: trace.instance: 'a/b' is not an instance "
	  "name", NULL },
	{ "[trace]\ninstance = ..\n", false,
	  NAME ":2: trace.instance: '..' is not an instance name", NULL },
	/* events, stacktrace, filters */
	{ "[trace]\nevents =\n", false,
	  NAME ":2: trace.events: no events (name at least one, e.g. kmem:kmalloc)", NULL },
	{ "[trace]\nevents = kmalloc\n", false,
	  NAME ":2: trace.events: 'kmalloc' is not system:event", NULL },
	{ "[trace]\nevents = kmem:*\n", false,
	  NAME ":2: trace.events: 'kmem:*': wildcards are not supported", NULL },
	{ "[trace]\nevents = kmem:kmalloc,sched:sched_switch\n", false,
	  NAME ":2: trace.events: 'kmem:kmalloc,sched:sched_switch': separate events with spaces, "
	  "not commas", NULL },
	{ "[trace]\nevents = kmem:kmalloc kmem:kfree\nstacktrace = kmem:kmalloc,kmem:kfree\n", false,
	  NAME ":3: trace.stacktrace: 'kmem:kmalloc,kmem:kfree': separate events with spaces, "
	  "not commas", NULL },
	{ "[trace]\nevents = kmem:kmalloc kmem:kfree kmem:kmalloc\n", false,
	  NAME ":2: trace.events: 'kmem:kmalloc' is listed twice", NULL },
	{ "[trace]\nevents = kmem:nope\n", true,
	  NAME ":2: trace.events: event 'kmem:nope' does not exist (no ", "/events/kmem/nope)" },
	{ "[trace]\nevents = nosys:kmalloc\n", true,
	  NAME ":2: trace.events: event 'nosys:kmalloc' does not exist", NULL },
	{ "[trace]\nstacktrace = sched:sched_switch\nevents = kmem:kmalloc\n", false,
	  NAME ":2: trace.stacktrace: 'sched:sched_switch' is not in trace.events", NULL },
	{ "[trace]\nstacktrace = all kmem:kmalloc\n", false,
	  NAME ":2: trace.stacktrace: 'all' cannot be combined with event names", NULL },
	{ "[trace]\nstacktrace = kmem:kmalloc kmem:kmalloc\n", false,
	  NAME ":2: trace.stacktrace: 'kmem:kmalloc' is listed twice", NULL },
	{ "[trace]\nstacktrace = some\n", false,
	  NAME ":2: trace.stacktrace: 'some' is not system:event, all or none", NULL },
	{ "[trace]\nfilter.sched:sched_switch = prev_pid == 1\n", false,
	  NAME ":2: trace.filter.sched:sched_switch: 'sched:sched_switch' is not in trace.events",
	  NULL },
	{ "[trace]\nfilter.kmalloc = bytes_req > 1\n", false,
	  NAME ":2: trace.filter.kmalloc: 'kmalloc' is not system:event", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1\nfilter.kmem:kmalloc = bytes_req > 2\n",
	  false, NAME ":3: trace.filter.kmem:kmalloc: duplicate key (first set on line 2)", NULL },
	{ "[trace]\nfilter.kmem:kmalloc =\n", false,
	  NAME ":2: trace.filter.kmem:kmalloc: empty filter", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req >\n", false,
	  NAME ":2: trace.filter.kmem:kmalloc: expression ends where a value was expected", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1 &&\n", true,
	  NAME ":2: trace.filter.kmem:kmalloc: expression ends where a condition was expected",
	  NULL },
	{ "[trace]\nfilter.kmem:kmalloc = (bytes_req > 1\n", true,
	  NAME ":2: trace.filter.kmem:kmalloc: missing ')'", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1)\n", false,
	  NAME ":2: trace.filter.kmem:kmalloc: unexpected ')' after a complete condition", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1 node == 0\n", true,
	  NAME ":2: trace.filter.kmem:kmalloc: unexpected 'node == 0'", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req = 1\n", false,
	  NAME ":2: trace.filter.kmem:kmalloc: '=' is not an operator (use ==)", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 12ab\n", false,
	  NAME ":2: trace.filter.kmem:kmalloc: '12ab' is not a number", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = nosuch == 1\n", true,
	  NAME ":2: trace.filter.kmem:kmalloc: 'nosuch' is not a field of kmem:kmalloc (fields: ",
	  "bytes_req" },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req == \"big\"\n", true,
	  NAME ":2: trace.filter.kmem:kmalloc: numeric fields compare with a number", NULL },
	{ "[trace]\nfilter.kmem:kmalloc = bytes_req ~ 12\n", true,
	  NAME ":2: trace.filter.kmem:kmalloc: '~' cannot compare the numeric field 'bytes_req'",
	  NULL },
	{ "[trace]\nevents = sched:sched_switch\nfilter.sched:sched_switch = prev_comm > 1\n", true,
	  NAME ":3: trace.filter.sched:sched_switch: '>' cannot compare the text field 'prev_comm'",
	  NULL },
	{ "[trace]\nevents = sched:sched_switch\nfilter.sched:sched_switch = prev_comm == bash\n",
	  true, NAME ":3: trace.filter.sched:sched_switch: expected a number or a quoted string",
	  NULL },
	{ "[trace]\nfilter.kmem:kmalloc = comm == \"bash\n", false,
	  NAME ":2: trace.filter.kmem:kmalloc: unterminated string", NULL },
	{ "[trace]\nclock = sundial\n", true,
	  NAME ":2: trace.clock: 'sundial' is not a trace clock of this kernel (available: [local] "
	  "global", NULL },
	{ "[trace]\nclock = bad clock\n", false, NAME ":2: trace.clock: 'bad clock' is not a clock "
	  "name", NULL },
	/* the first error is the one reported */
	{ "[archive]\nsync = maybe\nsegment_size = 64Q\n[bogus]\n", false,
	  NAME ":2: archive.sync: 'maybe'", NULL },
	{ "[archive]\nsegment_size 64M\nsync = maybe\n", false, NAME ":2: 'segment_size 64M'",
	  NULL },
	{ "[trace]\nmode = flight\nflight_trigger = oom\n", false,
	  NAME ":3: trace.flight_trigger: 'oom' is not system:event", NULL },
	{ "[trace]\nmode = flight\nflight_trigger = sched:sched_nope\n", true,
	  NAME ":3: trace.flight_trigger: event 'sched:sched_nope' does not exist", NULL },
	{ "[trace]\nmode = flight\nflight_trigger = sched:sched_switch when x\n", false,
	  NAME ":3: trace.flight_trigger: 'sched:sched_switch when x': expected", NULL },
	{ "[trace]\nmode = flight\nflight_trigger = sched:sched_switch if nofield == 1\n", true,
	  NAME ":3: trace.flight_trigger: filter 'nofield == 1':", NULL },
	/* rules across keys (config_check) */
	{ "[archive]\nsegment_size = 64M\nmax_size = 100M\n", false,
	  NAME ": archive.max_size = 100M must be at least twice archive.segment_size = 64M",
	  NULL },
	{ "[trace]\ninstance = named\nstackmap = on\n", false,
	  NAME ": stackmap = on needs the top-level instance (stackmap is not available in named "
	  "instances)", NULL },
	{ "[trace]\nflight_trigger = sched:sched_switch\n", false,
	  NAME ": trace.flight_trigger needs trace.mode = flight", NULL },
	{ "[archive]\nsegment_size = 0\nsegment_age = 0\n", false,
	  NAME ": archive.max_size and archive.max_segments delete finished segments", NULL },
};

static void test_bad(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_configs); i++) {
		const struct bad *b = &bad_configs[i];
		struct config c;
		char *err = NULL;
		int r;

		r = load(&c, b->text, b->tracing, true, &err);
		CHECK_MSG(r == -EINVAL, "case %zu (%s): r = %d", i, b->prefix, r);
		CHECK_MSG(err && startswith(err, b->prefix), "case %zu: got '%s', expected '%s...'",
			  i, err ? err : "(none)", b->prefix);
		if (b->detail)
			CHECK_MSG(err && strstr(err, b->detail), "case %zu: '%s' lacks '%s'", i,
				  err ? err : "(none)", b->detail);
		CHECK_MSG(!err || !strchr(err, '\n'), "case %zu: message spans lines: %s", i, err);
		if (getenv("VERBOSE"))
			printf("%s\n", err ? err : "(none)");
		free(err);
		config_done(&c);
	}
}

static void test_load_file(void)
{
	char path[4096];
	struct config c;
	char *err = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/bad.conf", fixture);
	write_text(path, "[archive]\n\n# comment\nsegment_size = 64Q\n");
	CHECK(config_init(&c) == 0);
	r = config_load(&c, path, &err);
	CHECK(r == -EINVAL);
	{
		char expect[4200];

		snprintf(expect, sizeof(expect),
			 "%s:4: archive.segment_size: '64Q' is not a size (use K, M, G", path);
		CHECK_MSG(err && startswith(err, expect), "%s", err);
	}
	free(err);
	err = NULL;
	config_done(&c);

	snprintf(path, sizeof(path), "%s/nonexistent.conf", fixture);
	CHECK(config_init(&c) == 0);
	r = config_load(&c, path, &err);
	CHECK(r == -ENOENT);
	CHECK_MSG(err && strstr(err, "nonexistent.conf: cannot read"), "%s", err);
	free(err);
	config_done(&c);
}

/* The client's look-up of the socket: that key only, whatever else the file holds. */
static void test_socket_path(void)
{
	char path[4096], *socket = NULL;

	snprintf(path, sizeof(path), "%s/socket.conf", fixture);
	write_text(path, "[control]\nsocket = /tmp/a\n[nonsense]\nkey = ?\n"
		   "[control]\nsocket = /tmp/b\nsocket =\n");
	CHECK(config_socket_path(path, &socket) == 0);
	CHECK_MSG(socket && streq(socket, "/tmp/b"), "%s", socket);
	free(socket);
	socket = NULL;

	write_text(path, "[trace]\nsocket = /tmp/c\n");
	CHECK(config_socket_path(path, &socket) == 0);
	CHECK_MSG(socket && streq(socket, RUNSTATEDIR "/stackmapd/control"), "%s", socket);
	free(socket);
	socket = NULL;

	snprintf(path, sizeof(path), "%s/nonexistent.conf", fixture);
	CHECK(config_socket_path(path, &socket) == -ENOENT);
	CHECK(!socket);
	CHECK_ABORTS(config_socket_path(NULL, &socket));
}

static char *cmdline(const char *text, int *ret_r)
{
	struct config c;
	char *err = NULL, *line = NULL;
	int r;

	r = load(&c, text, false, true, &err);
	CHECK_MSG(r == 0, "%s", err);
	free(err);
	if (r == 0)
		r = config_boot_cmdline(&c, &line);
	config_done(&c);
	*ret_r = r;
	return line;
}

static void test_boot_cmdline(void)
{
	static const struct {
		const char *text;
		int r;
		const char *line;
	} cases[] = {
		{ "", 0, "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc "
			 "trace_options=stackmap,stacktrace,nooverwrite" },
		{ "[trace]\nstackmap = on\n", 0, "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc "
						  "trace_options=stackmap,stacktrace,nooverwrite" },
		{ "[trace]\nstackmap = off\n", 0, "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc "
						   "trace_options=stacktrace,nooverwrite" },
		{ "[trace]\nstacktrace = kmem:kmalloc\n", 0,
		  "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc trace_options=stackmap,nooverwrite "
		  "trace_trigger=kmalloc.stacktrace" },
		{ "[trace]\nevents = kmem:kmalloc sched:sched_switch irq:irq_handler_entry\n"
		  "stacktrace = irq:irq_handler_entry kmem:kmalloc\nstackmap = off\nmode = flight\n", 0,
		  "trace_event=kmem:kmalloc,sched:sched_switch,irq:irq_handler_entry "
		  "trace_trigger=kmalloc.stacktrace,irq_handler_entry.stacktrace" },
		{ "[trace]\nstacktrace = none\n", 0, "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc "
						      "trace_options=nooverwrite" },
		{ "[trace]\nstacktrace = none\nmode = flight\n", 0,
		  "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc" },
		{ "[trace]\nbuffer_size = 8M\nclock = global\nmode = flight\n", 0,
		  "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc trace_options=stackmap,stacktrace "
		  "trace_buf_size=8M trace_clock=global" },
		{ "[trace]\nbuffer_size = 4100K\n", 0,
		  "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc "
		  "trace_options=stackmap,stacktrace,nooverwrite trace_buf_size=4100K" },
		/* filters have no boot-time equivalent: the line is the same as without them */
		{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 4096\nmode = flight\n", 0,
		  "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc trace_options=stackmap,stacktrace" },
		{ "[trace]\ninstance = mine\n", -EINVAL, NULL },
		/* the kernel matches trace_trigger= by bare event name */
		{ "[trace]\nevents = a:ev b:ev\nstacktrace = a:ev\n", -ENOTUNIQ, NULL },
		{ "[trace]\nevents = a:ev b:ev\nstacktrace = a:ev b:ev\nmode = flight\n", 0,
		  "trace_event=a:ev,b:ev trace_options=stackmap trace_trigger=ev.stacktrace" },
		/* the crash buffer's instance inherits the options: it must stay in overwrite mode */
		{ "[crash]\nbuffer_size = 8M\n", 0, "trace_event=kmem:kmem_cache_alloc,kmem:kmalloc "
						      "trace_options=stackmap,stacktrace" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int r = 0;
		char *line = cmdline(cases[i].text, &r);

		CHECK_MSG(r == cases[i].r, "case %zu: r = %d", i, r);
		if (cases[i].line)
			CHECK_MSG(line && streq(line, cases[i].line), "case %zu: got '%s'", i,
				  line ? line : "(none)");
		free(line);
	}

	/* At most 32 trace_trigger= entries; long lists continue on indented lines. */
	{
		char text[4096] = "[trace]\nevents =";
		char *line;
		int r = 0;

		for (int i = 0; i < 34; i++)
			sprintf(text + strlen(text), "%s s:e%d", i % 8 ? "" : "\n", i);
		strcat(text, "\nstacktrace =");
		for (int i = 0; i < 33; i++)
			sprintf(text + strlen(text), "%s s:e%d", i % 8 ? "" : "\n", i);
		strcat(text, "\n");
		line = cmdline(text, &r);
		CHECK_MSG(r == -E2BIG, "r = %d", r);
		free(line);
	}
}

/* The crash buffer's arguments: reserve_mem= and trace_instance= with the events, tracing off. */
static void test_crash_cmdline(void)
{
	static const struct {
		const char *text;
		int r;
		const char *line;
	} cases[] = {
		{ "", -ENODATA, NULL },
		{ "[crash]\nbuffer_size = 0\n", -ENODATA, NULL },
		{ "[crash]\nbuffer_size = 16M\n", 0,
		  "reserve_mem=16M:4096:stackmapd_crash trace_instance=stackmapd_crash^traceoff"
		  "@stackmapd_crash,kmem:kmem_cache_alloc,kmem:kmalloc" },
		{ "[trace]\ninstance = mine\nevents = sched:sched_switch\n[crash]\n"
		  "buffer_size = 1G\nclock_interval = 5s\n", 0,
		  "reserve_mem=1G:4096:stackmapd_crash trace_instance=stackmapd_crash^traceoff"
		  "@stackmapd_crash,sched:sched_switch" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct config c;
		char *err = NULL, *line = NULL;
		int r;

		r = load(&c, cases[i].text, false, true, &err);
		CHECK_MSG(r == 0, "case %zu: %s", i, err);
		free(err);
		if (r == 0)
			r = config_crash_cmdline(&c, &line);
		CHECK_MSG(r == cases[i].r, "case %zu: r = %d", i, r);
		if (cases[i].line)
			CHECK_MSG(line && streq(line, cases[i].line), "case %zu: got '%s'", i,
				  line ? line : "(none)");
		free(line);
		config_done(&c);
	}

	/* bad values are errors with the key's name */
	{
		static const char *const bad[] = {
			"[crash]\nbuffer_size = 512K\n", "[crash]\nbuffer_size = 5G\n",
			"[crash]\nbuffer_size = lots\n", "[crash]\nclock_interval = 2\n",
			"[crash]\nclock_interval = 1h\n", "[crash]\nsize = 1M\n",
		};

		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			struct config c;
			char *err = NULL;

			CHECK_MSG(load(&c, bad[i], false, true, &err) < 0, "accepted: %s", bad[i]);
			CHECK_MSG(err && strstr(err, "crash."), "%s: %s", bad[i], err);
			free(err);
			config_done(&c);
		}
	}
}

static void test_needs_restart(void)
{
	static const struct {
		const char *a, *b;
		const char *keys;	/* NULL: no restart */
	} cases[] = {
		{ "", "", NULL },
		{ "", "[archive]\nsegment_size = 128M\nmax_size = 2G\nhook = /bin/true\n", NULL },
		{ "", "[stackmap]\nreset_fill = 50\n[service]\nstatus_interval = 5s\n", NULL },
		{ "", "[trace]\nkeep_tracing = yes\n[control]\ngroup = root\n", NULL },
		{ "", "[trace]\nbuffer_size = 4M\n", "trace.buffer_size" },
		{ "", "[trace]\nclock = global\n", "trace.clock" },
		{ "", "[trace]\ninstance = other\n", "trace.instance, trace.stackmap" },
		{ "", "[trace]\nstackmap = on\n", "trace.stackmap" },
		{ "", "[trace]\nmode = flight\n", "trace.mode" },
		{ "", "[control]\nsocket = /run/x.sock\n", "control.socket" },
		/* the same events in another order are the same capture */
		{ "", "[trace]\nevents = kmem:kmalloc kmem:kmem_cache_alloc\n", NULL },
		{ "", "[trace]\nevents = kmem:kmalloc\n", "trace.events, trace.stacktrace" },
		{ "", "[trace]\nstacktrace = kmem:kmalloc\n", "trace.stacktrace" },
		{ "", "[trace]\nstacktrace = kmem:kmalloc kmem:kmem_cache_alloc\n", "trace.stacktrace" },
		{ "", "[trace]\nfilter.kmem:kmalloc = bytes_req > 1\n", "trace.filter" },
		{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1\n",
		  "[trace]\nfilter.kmem:kmalloc = bytes_req > 2\n", "trace.filter" },
		{ "[trace]\nfilter.kmem:kmalloc = bytes_req > 1\n",
		  "[trace]\nfilter.kmem:kmalloc = bytes_req > 1\n", NULL },
		{ "", "[trace]\nbuffer_size = 4M\nclock = mono\n[control]\nsocket = /x\n",
		  "trace.buffer_size, trace.clock, control.socket" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct config a, b;
		char *err = NULL, *keys = NULL;
		bool restart;

		CHECK(load(&a, cases[i].a, false, true, &err) == 0);
		free(err);
		CHECK_MSG(load(&b, cases[i].b, false, true, &err) == 0, "case %zu: %s", i, err);
		free(err);
		restart = config_needs_restart(&a, &b, &keys);
		CHECK_MSG(restart == !!cases[i].keys, "case %zu", i);
		if (cases[i].keys)
			CHECK_MSG(keys && streq(keys, cases[i].keys), "case %zu: '%s'", i,
				  keys ? keys : "(none)");
		else
			CHECK_MSG(!keys, "case %zu: '%s'", i, keys);
		CHECK(config_needs_restart(&b, &a, NULL) == restart);
		/* the lines of the kept keys move with their values */
		{
			unsigned clock_a = config_key_line(&a, "trace.clock");
			unsigned sync_b = config_key_line(&b, "archive.sync");

			config_keep_running(&b, &a);
			CHECK(config_key_line(&b, "trace.clock") == clock_a);
			CHECK(config_key_line(&b, "archive.sync") == sync_b);
		}
		free(keys);
		config_done(&a);
		config_done(&b);
	}
}

/*
 * What only the kernel can tell is checked after parsing by one checker,
 * with the file, line and key the parser recorded: "stackmapd --check"
 * and reload call config_check_tracefs(), startup tracing_validate() on
 * the opened tree; both must give the same verdict and message.
 */
static void test_check_tracefs(void)
{
	static const struct {
		const char *text;
		const char *prefix;	/* NULL: valid */
	} cases[] = {
		{ "[trace]\nevents = kmem:kmalloc\n\nfilter.kmem:kmalloc = bytes_req > 1\n", NULL },
		{ "[trace]\nkeep_tracing = no\nclock = sundial\n",
		  NAME ":3: trace.clock: 'sundial' is not a trace clock of this kernel" },
		{ "[trace]\nclock = mono\n", NULL },
		{ "[trace]\nevents = kmem:kmalloc\n\nfilter.kmem:kmalloc = nosuch == 1\n",
		  NAME ":4: trace.filter.kmem:kmalloc: 'nosuch' is not a field of kmem:kmalloc" },
		{ "[trace]\n\nevents = kmem:kmalloc kmem:nope\n",
		  NAME ":3: trace.events: event 'kmem:nope' does not exist (no " },
		{ "[trace]\nmode = flight\n# why\nflight_trigger = sched:sched_switch if prev_x == 1\n",
		  NAME ":4: trace.flight_trigger: filter 'prev_x == 1': 'prev_x' is not a field" },
		{ "[trace]\nmode = flight\nflight_trigger = nosys:nothing\n",
		  NAME ":3: trace.flight_trigger: event 'nosys:nothing' does not exist" },
		{ "[trace]\nstackmap = on\n", NULL },
	};
	char path[4096];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_(tracing_freep) struct tracing *t = NULL;
		char *err = NULL, *err2 = NULL;
		struct config c;
		int r, r2;

		r = load(&c, cases[i].text, true, true, &err);
		CHECK_MSG(cases[i].prefix ? r == -EINVAL : r == 0, "case %zu: r = %d (%s)", i, r,
			  err ? err : "");
		if (cases[i].prefix)
			CHECK_MSG(err && startswith(err, cases[i].prefix), "case %zu: got '%s'", i,
				  err ? err : "(none)");
		r2 = tracing_open(fixture, &c, &t);
		CHECK_MSG(r2 == 0, "case %zu: tracing_open: %d", i, r2);
		if (r2 == 0) {
			r2 = tracing_validate(t, &err2);
			CHECK_MSG(r2 == r, "case %zu: tracing_validate %d, --check %d", i, r2, r);
			CHECK_MSG((!err && !err2) || (err && err2 && streq(err, err2)),
				  "case %zu: '%s' vs '%s'", i, err ? err : "", err2 ? err2 : "");
		}
		free(err);
		free(err2);
		config_done(&c);
	}

	/* A kernel without the stack map refuses stackmap = on. */
	snprintf(path, sizeof(path), "%s/stack_map", fixture);
	{
		char moved[4200];
		struct config c;
		char *err = NULL;

		snprintf(moved, sizeof(moved), "%s/stack_map.off", fixture);
		CHECK(rename(path, moved) == 0);
		CHECK(load(&c, "[trace]\nclock = mono\nstackmap = on\n", true, true, &err) == -EINVAL);
		CHECK_MSG(err && startswith(err, NAME ":3: trace.stackmap: stackmap = on but this "
					    "kernel has no stackmap"), "%s", err);
		free(err);
		config_done(&c);
		CHECK(rename(moved, path) == 0);
	}
}

static void test_check_filter(void)
{
	char *err = NULL;

	CHECK(config_check_filter(fixture, "kmem", "kmalloc", "bytes_req > 1", &err) == 0);
	CHECK(config_check_filter(fixture, "kmem", "kmalloc", "bytes_req >", &err) == -EINVAL);
	CHECK(err && streq(err, "expression ends where a value was expected"));
	free(err);
	CHECK(config_check_filter(fixture, "kmem", "kmalloc", "bytes_req >", NULL) == -EINVAL);
	err = NULL;
	CHECK(config_check_filter(fixture, "kmem", "nope", "x == 1", &err) == -EINVAL);
	CHECK_MSG(err && startswith(err, "cannot read"), "%s", err);
	free(err);
	CHECK(config_check_filter(NULL, "kmem", "nope", "x == 1 && !(y < -0x1f)", NULL) == 0);
}

int main(void)
{
	make_fixture();
	test_parsers();
	test_defaults();
	test_shipped();
	test_good();
	test_bad();
	test_load_file();
	test_socket_path();
	test_boot_cmdline();
	test_crash_cmdline();
	test_needs_restart();
	test_check_filter();
	test_check_tracefs();
	test_rmtree(fixture);
	free(fixture);
	return tests_done("test-config");
}
