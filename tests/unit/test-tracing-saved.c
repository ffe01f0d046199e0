/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tracefs state saved on disk (daemon/tracing-saved.c), on a fixture
 * tree of plain files standing for tracefs: what tracing_on held before
 * the first change comes back at stop, also after a strict reset switched
 * it off; a run that ends without restoring (a child that exits at once,
 * as kill -9 would) leaves the file, and the next run adopts it and puts
 * back the original at its clean stop; a file of another instance is put
 * back at start; a damaged file is set aside; a file that others could
 * have written (owner, mode, directory) is not used. A default sub-buffer size the
 * kernel refuses leaves the kernel's size and nothing to put back; a
 * configured one it refuses is an error.
 */
#include <sys/wait.h>

#include "config.h"
#include "helpers.h"
#include "log.h"
#include "tracing.h"
#include "util.h"

static void put(const char *dir, const char *name, const char *value)
{
	_cleanup_free_ char *p = NULL;

	FILE *f;

	CHECK(strprintf(&p, "%s/%s", dir, name) >= 0);
	f = fopen(p, "we");
	CHECK(f && fputs(value, f) >= 0);
	if (f)
		CHECK(fclose(f) == 0);
}

static char *get(const char *dir, const char *name)
{
	_cleanup_free_ char *p = NULL;
	char *s = NULL;
	size_t n;

	if (strprintf(&p, "%s/%s", dir, name) < 0 || read_file(p, &s, &n) < 0)
		return strdup("(none)");
	while (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	return s;
}

static bool exists(const char *dir, const char *name)
{
	_cleanup_free_ char *p = NULL;

	return strprintf(&p, "%s/%s", dir, name) >= 0 && access(p, F_OK) == 0;
}

#define EXPECT_FILE(dir, name, want)                                                    \
	do {                                                                            \
		_cleanup_free_ char *_v = get(dir, name);                               \
		CHECK_MSG(streq(_v, want), "%s is '%s', want '%s'", name, _v, want);     \
	} while (0)

static void mkdirs(const char *dir, const char *sub)
{
	_cleanup_free_ char *p = NULL;

	CHECK(strprintf(&p, "%s/%s", dir, sub) >= 0);
	CHECK(mkdir(p, 0755) == 0 || errno == EEXIST);
}

/* A top-level tracefs tree as found before any run. */
static char *new_tree(void)
{
	char *dir = test_tmpdir();

	mkdirs(dir, "options");
	mkdirs(dir, "events");
	mkdirs(dir, "events/kmem");
	mkdirs(dir, "events/kmem/kmalloc");
	mkdirs(dir, "instances");
	mkdirs(dir, "run");
	put(dir, "tracing_on", "1\n");
	put(dir, "options/overwrite", "1\n");
	put(dir, "options/record-tgid", "0\n");
	put(dir, "options/record-cmd", "1\n");
	put(dir, "events/kmem/kmalloc/enable", "0\n");
	put(dir, "events/kmem/kmalloc/filter", "none\n");
	put(dir, "events/kmem/kmalloc/trigger", "# Available triggers:\n");
	return dir;
}

static void expect_original(const char *dir)
{
	EXPECT_FILE(dir, "tracing_on", "1");
	EXPECT_FILE(dir, "options/overwrite", "1");
	EXPECT_FILE(dir, "options/record-tgid", "0");
	EXPECT_FILE(dir, "events/kmem/kmalloc/enable", "0");
}

struct fixture {
	struct config c;
	struct config_event ev;
	char sock[4096];
};

static void fixture_init(struct fixture *f, const char *dir, const char *instance)
{
	memset(f, 0, sizeof(*f));
	f->ev = (struct config_event){ .system = (char *)"kmem", .name = (char *)"kmalloc" };
	f->c.events = &f->ev;
	f->c.nr_events = 1;
	f->c.stackmap = CONFIG_STACKMAP_AUTO;
	f->c.instance = (char *)instance;
	(void)snprintf(f->sock, sizeof(f->sock), "%s/run/control", dir);
	f->c.socket_path = f->sock;
}

/* Open and set up as the recorder does; NULL on failure. */
static struct tracing *start(const char *dir, struct fixture *f)
{
	struct tracing *t = NULL;

	CHECK(tracing_open(dir, &f->c, &t) == 0);
	if (!t)
		return NULL;
	CHECK(tracing_setup_events(t) == 0);
	EXPECT_FILE(dir, "tracing_on", "1");
	EXPECT_FILE(dir, "options/overwrite", "0");
	EXPECT_FILE(dir, "events/kmem/kmalloc/enable", "1");
	return t;
}

/* A strict reset switches tracing_on off; a stop then must not keep that. */
static void test_stop_during_strict_reset(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct fixture f;
	struct tracing *t;

	fixture_init(&f, dir, NULL);
	t = start(dir, &f);
	CHECK(exists(dir, "run/control.tracefs"));
	CHECK(tracing_set_on(t, false) == 0);		/* the strict reset's pause */
	CHECK(tracing_stop(t) == 0);
	EXPECT_FILE(dir, "tracing_on", "0");
	tracing_restore(t);
	expect_original(dir);
	CHECK(!exists(dir, "run/control.tracefs"));
	tracing_free(t);
	test_rmtree(dir);
}

/* kill -9, then a second run: the original comes back at its clean stop. */
static void test_crash_then_restart(void)
{
	_cleanup_free_ char *dir = new_tree();
	_cleanup_free_ char *text = NULL;
	struct fixture f;
	struct tracing *t;
	int status = -1;
	pid_t pid;

	fixture_init(&f, dir, NULL);
	pid = fork();
	if (pid == 0) {
		t = start(dir, &f);
		_exit(t && tests_failed == 0 ? 0 : 1);	/* no restore: as after kill -9 */
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK(exists(dir, "run/control.tracefs"));
	CHECK(!exists(dir, "run/control.tracefs.new"));
	text = get(dir, "run/control.tracefs");
	CHECK_MSG(startswith(text, "stackmapd-tracefs-state 1\ninstance\t\nset\ttracing_on\t1\n"),
		  "%s", text);
	CHECK(strstr(text, "set\toptions/overwrite\t1\n"));
	CHECK(strstr(text, "set\tevents/kmem/kmalloc/enable\t0"));
	EXPECT_FILE(dir, "options/overwrite", "0");	/* left as the crashed run set it */

	/* the second run: finds everything as it wants it, changes nothing */
	t = start(dir, &f);
	CHECK(tracing_set_on(t, false) == 0);
	CHECK(tracing_stop(t) == 0);
	tracing_restore(t);
	expect_original(dir);
	CHECK(!exists(dir, "run/control.tracefs"));
	tracing_free(t);

	/* the same after a crash, with a second run that records another instance */
	pid = fork();
	if (pid == 0) {
		t = start(dir, &f);
		_exit(t && tests_failed == 0 ? 0 : 1);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	mkdirs(dir, "instances/other");
	fixture_init(&f, dir, "other");
	t = NULL;
	CHECK(tracing_open(dir, &f.c, &t) == 0);
	expect_original(dir);			/* put back at once */
	CHECK(!exists(dir, "run/control.tracefs"));
	tracing_free(t);
	test_rmtree(dir);
}

/* A file that is not a saved state is never used nor deleted. */
static void test_damaged(void)
{
	_cleanup_free_ char *dir = new_tree();
	struct fixture f;
	struct tracing *t;

	fixture_init(&f, dir, NULL);
	put(dir, "run/control.tracefs", "stackmapd-tracefs-state 1\ninstance\t\nset\t../../etc/x\t1\n");
	t = NULL;
	CHECK(tracing_open(dir, &f.c, &t) == 0);
	CHECK(!exists(dir, "run/control.tracefs"));
	CHECK(exists(dir, "run/control.tracefs.damaged"));
	tracing_free(t);
	expect_original(dir);

	/* escaped values of an instance that is not ours: put back at once, as they were */
	put(dir, "run/control.tracefs",
	    "stackmapd-tracefs-state 1\ninstance\tgone\nset\toptions/record-cmd\ta\\nb\\x09c\\\\\n"
	    "set\tinstances/gone/tracing_on\t0\n");
	t = NULL;
	CHECK(tracing_open(dir, &f.c, &t) == 0);
	CHECK(!exists(dir, "run/control.tracefs"));
	EXPECT_FILE(dir, "options/record-cmd", "a\nb\tc\\");
	tracing_free(t);
	test_rmtree(dir);
}

/*
 * A saved state that someone else could have written (the socket in a
 * shared directory) is never written into tracefs: not when the file is
 * writable by a group or by others or belongs to another user, nor when
 * its directory is; it is left where it is. Root's file in root's
 * directory is put back.
 */
static void test_untrusted(void)
{
	_cleanup_free_ char *dir = new_tree(), *file = NULL, *run = NULL;
	const char *planted = "stackmapd-tracefs-state 1\ninstance\tgone\n"
			      "set\toptions/record-tgid\tplanted\n";
	struct {
		const char *what;
		mode_t file_mode, dir_mode;
		uid_t file_uid, dir_uid;
	} cases[] = {
		{ "a world-writable file", 0666, 0755, 0, 0 },
		{ "a group-writable file", 0620, 0755, 0, 0 },
		{ "another user's file", 0600, 0755, 65534, 0 },
		{ "a world-writable directory", 0600, 0777, 0, 0 },
		{ "a sticky world-writable directory", 0600, 01777, 0, 0 },
		{ "a group-writable directory", 0600, 0775, 0, 0 },
		{ "another user's directory", 0600, 0755, 0, 65534 },
	};
	struct fixture f;
	struct tracing *t;

	if (geteuid() != 0) {
		printf("test-tracing-saved: not root, the ownership cases are skipped\n");
		test_rmtree(dir);
		return;
	}
	CHECK(strprintf(&file, "%s/run/control.tracefs", dir) >= 0);
	CHECK(strprintf(&run, "%s/run", dir) >= 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fixture_init(&f, dir, NULL);
		put(dir, "run/control.tracefs", planted);
		CHECK(chmod(file, cases[i].file_mode) == 0 && chown(file, cases[i].file_uid, 0) == 0);
		CHECK(chmod(run, cases[i].dir_mode) == 0 && chown(run, cases[i].dir_uid, 0) == 0);
		t = NULL;
		CHECK(tracing_open(dir, &f.c, &t) == 0);
		CHECK_MSG(exists(dir, "run/control.tracefs") && !exists(dir, "run/control.tracefs.damaged"),
			  "%s: the file is left where it is", cases[i].what);
		{
			_cleanup_free_ char *v = get(dir, "options/record-tgid");

			CHECK_MSG(streq(v, "0"), "%s was trusted: record-tgid is '%s'", cases[i].what, v);
		}
		tracing_free(t);
		(void)unlink(file);	/* the stop removes it: nothing to put back */
	}
	/* root's file in root's directory, neither writable by others: put back */
	CHECK(chmod(run, 0755) == 0 && chown(run, 0, 0) == 0);
	fixture_init(&f, dir, NULL);
	put(dir, "run/control.tracefs", planted);
	CHECK(chmod(file, 0600) == 0);
	t = NULL;
	CHECK(tracing_open(dir, &f.c, &t) == 0);
	EXPECT_FILE(dir, "options/record-tgid", "planted");
	CHECK(!exists(dir, "run/control.tracefs"));
	tracing_free(t);
	test_rmtree(dir);
}

/*
 * buffer_subbuf_size_kb that reads but cannot be written (a kernel that
 * refuses the change): /proc/version answers a write with EIO.
 */
static void test_subbuf_refused(void)
{
	_cleanup_free_ char *dir = new_tree(), *link = NULL;
	struct fixture f;
	struct tracing *t = NULL;
	char *saved;

	CHECK(strprintf(&link, "%s/buffer_subbuf_size_kb", dir) >= 0);
	CHECK(symlink("/proc/version", link) == 0);
	put(dir, "buffer_size_kb", "1408\n");

	for (int configured = 0; configured < 2; configured++) {
		fixture_init(&f, dir, NULL);
		f.c.subbuf_size_kb = 8;
		f.c.subbuf_size_auto = !configured;
		CHECK(tracing_open(dir, &f.c, &t) == 0);
		if (!t)
			return;
		CHECK(tracing_subbuf_pending(t));
		if (!configured) {
			CHECK_MSG(tracing_setup_subbuf(t) == 0, "a refused default is not an error");
			CHECK(tracing_subbuf_refused(t) == EIO);
			CHECK_MSG(!tracing_subbuf_pending(t), "a refused default is not tried again");
			CHECK(tracing_setup_subbuf(t) == 0);
		} else {
			CHECK(tracing_setup_subbuf(t) == -EIO);
			CHECK(tracing_subbuf_refused(t) == 0);
		}
		EXPECT_FILE(dir, "buffer_size_kb", "1408");
		saved = get(dir, "run/control.tracefs");
		CHECK_MSG(configured || !strstr(saved, "buffer_s"), "nothing changed, nothing to put back: %s", saved);
		free(saved);
		tracing_restore(t);
		CHECK(!exists(dir, "run/control.tracefs"));
		tracing_free(t);
		t = NULL;
	}
	test_rmtree(dir);
}

int main(void)
{
	log_set_max_level(LOG_CRIT);
	test_stop_during_strict_reset();
	test_crash_then_restart();
	test_damaged();
	test_untrusted();
	test_subbuf_refused();
	return tests_done("test-tracing-saved");
}
