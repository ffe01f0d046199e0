/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging: the rate limit shows the first error of an interval, counts the
 * rest, and says how many it suppressed when the next one gets through.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "log.h"

/* Run fn with stderr captured into buf. */
static void capture(char *buf, size_t size, void (*fn)(void))
{
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	fflush(stderr);
	(void)dup2(fileno(f), STDERR_FILENO);
	fn();
	fflush(stderr);
	(void)dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static struct log_ratelimit rl = LOG_RATELIMIT_INIT;

static void burst(void)
{
	for (int i = 0; i < 5; i++)
		CHECK(log_ratelimit_errno(&rl, LOG_ERR, -ENOSPC, "cannot write frame %d", i) ==
		      -ENOSPC);
}

static void after_interval(void)
{
	(void)log_ratelimit_errno(&rl, LOG_ERR, -EIO, "cannot write frame %d", 5);
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

int main(void)
{
	char out[4096];

	log_set_program("test-log");
	rl.interval_usec = 100 * USEC_PER_MSEC;

	capture(out, sizeof(out), burst);
	CHECK_MSG(count_lines(out) == 1, "one line for a burst, got: %s", out);
	CHECK(strstr(out, "cannot write frame 0: No space left on device") != NULL);
	CHECK(rl.total == 5);
	CHECK(rl.suppressed == 4);

	usleep(150 * 1000);
	capture(out, sizeof(out), after_interval);
	CHECK_MSG(strstr(out, "frame 5: Input/output error (4 more since the last message)") != NULL,
		  "suppressed count shown, got: %s", out);
	CHECK(rl.suppressed == 0);
	CHECK(rl.total == 6);
	return tests_done("log");
}
