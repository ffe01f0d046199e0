/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit test helpers: CHECK() records a failure and goes on, so one run
 * reports every broken case; tests_done() turns the count into the exit
 * status Automake expects.
 */
#ifndef STACKMAPD_TEST_HELPERS_H
#define STACKMAPD_TEST_HELPERS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int tests_failed;
static int tests_checked;

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

/* Remove a directory tree made by test_tmpdir() (one level of files). */
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

static inline int tests_done(const char *name)
{
	fprintf(stderr, "%s: %d checks, %d failed\n", name, tests_checked, tests_failed);
	return tests_failed ? 1 : 0;
}

#endif
