/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test helpers: CHECK() records a failure and goes on, so one run
 * reports every broken case; tests_done() turns the count into the exit
 * status Automake expects.
 */
#ifndef STACKMAPD_TEST_HELPERS_H
#define STACKMAPD_TEST_HELPERS_H

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

static int tests_failed;
static int tests_checked;
static char tests_skipped[256];	/* what part of the test did not run, and why */

#define CHECK(cond)                                                                  \
	do {                                                                         \
		tests_checked++;                                                     \
		if (!(cond)) {                                                       \
			tests_failed++;                                              \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
		}                                                                    \
	} while (0)

#define CHECK_MSG(cond, ...)                                                         \
	do {                                                                         \
		tests_checked++;                                                     \
		if (!(cond)) {                                                       \
			tests_failed++;                                              \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, \
				#cond);                                              \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
		}                                                                    \
	} while (0)

/*
 * A misuse that is our own bug (NULL where a pointer is required, a state
 * or size the caller guarantees) stops at an assert(): stmt runs in a
 * child process, which must end with SIGABRT. Its assert message is not
 * shown.
 */
#define CHECK_ABORTS(stmt)                                                           \
	do {                                                                         \
		pid_t pid_ = fork();                                                 \
		int status_ = 0;                                                     \
									     \
		if (pid_ == 0) {                                                     \
			(void)!freopen("/dev/null", "w", stderr);                    \
			stmt;                                                        \
			_exit(0);                                                    \
		}                                                                    \
		CHECK_MSG(pid_ > 0 && waitpid(pid_, &status_, 0) == pid_ &&          \
			  WIFSIGNALED(status_) && WTERMSIG(status_) == SIGABRT,      \
			  "%s did not stop at an assertion", #stmt);                  \
	} while (0)

/* Deterministic pseudo-random numbers (xorshift64), the same sequence in every run. */
static inline uint64_t test_random(void)
{
	static uint64_t state = 0x9e3779b97f4a7c15ULL;

	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

/* Create a temporary directory; returns its path (static storage per call site is not shared). */
static inline char *test_tmpdir(void)
{
	char tmpl[] = "/tmp/stackmapd-test.XXXXXX";
	char *d = mkdtemp(tmpl);

	if (!d) {
		perror("mkdtemp");
		exit(99);
	}
	return strdup(d);
}

/* Remove a directory tree made by test_tmpdir(), subdirectories too (links are not followed). */
static inline void test_rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[4096];

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= (int)sizeof(p))
			continue;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			test_rmtree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/*
 * Read a file of tests/data/pages (captured from a real kernel by
 * tests/data/capture-pages.sh) into a NUL-terminated buffer the caller
 * frees; *len (may be NULL) gets its length. Exits 99 (hard error) if the
 * file cannot be read.
 */
static inline char *test_page_data(const char *name, size_t *len)
{
	const char *top = getenv("top_srcdir");
	_cleanup_free_ char *p = NULL;
	char *buf;

	if (strprintf(&p, "%s/tests/data/pages/%s", top ? top : ".", name) < 0)
		exit(99);
	if (read_file(p, &buf, len) < 0) {
		fprintf(stderr, "cannot read %s\n", p);
		exit(99);
	}
	return buf;
}

/*
 * Whether TOOL is in PATH. Without it the part of the test that needs it,
 * WHAT, cannot run: with CI=true that is a failure (CI installs every tool
 * the suite uses), elsewhere the whole test ends as SKIP with the reason
 * (tests_done()), never as a pass.
 */
static inline bool test_have_tool(const char *tool, const char *what)
{
	char cmd[256];
	const char *ci = getenv("CI");

	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1", tool);
	if (system(cmd) == 0)
		return true;
	if (ci && strcmp(ci, "true") == 0) {
		tests_failed++;
		fprintf(stderr, "CHECK failed: '%s' is not installed, so %s cannot run\n", tool, what);
	} else {
		snprintf(tests_skipped, sizeof(tests_skipped), "'%s' is not installed: %s skipped",
			 tool, what);
	}
	return false;
}

/* The exit status Automake expects: 1 on a failure, 77 (SKIP) if a part was skipped. */
static inline int tests_done(const char *name)
{
	fprintf(stderr, "%s: %d checks, %d failed\n", name, tests_checked, tests_failed);
	if (tests_failed)
		return 1;
	if (tests_skipped[0]) {
		printf("SKIP: %s\n", tests_skipped);
		return 77;
	}
	return 0;
}

#endif
