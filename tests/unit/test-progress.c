/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Progress bar: drawn and erased on a terminal (a pseudo-terminal here),
 * nothing at all on a pipe.
 */
#include <fcntl.h>
#include <poll.h>

#include "helpers.h"
#include "progress.h"

/* What is readable on fd now (the pty's other side), NUL-terminated, at most len - 1 bytes. */
static size_t drain(int fd, char *buf, size_t len)
{
	size_t got = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (got + 1 < len && poll(&pfd, 1, 200) == 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

static void test_terminal(void)
{
	struct progress p;
	char out[4096];
	int master = posix_openpt(O_RDWR | O_NOCTTY), slave;

	CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	CHECK(slave >= 0);

	progress_init(&p, slave, "export", 200);
	CHECK(p.enabled);
	progress_update(&p, 0);
	progress_update(&p, 100);	/* within 0.1 s of the last draw: skipped */
	progress_update(&p, 200);	/* 100% is always drawn */
	progress_done(&p);
	drain(master, out, sizeof(out));
	CHECK_MSG(strstr(out, "\rexport [..............................]   0%"), "%s", out);
	CHECK_MSG(!strstr(out, " 50%"), "%s", out);
	CHECK_MSG(strstr(out, "\rexport [##############################] 100%\r\033[K"), "%s", out);
	close(slave);
	close(master);
}

/* With a delay, a run that ends before it draws nothing on the terminal. */
static void test_delay(void)
{
	struct progress p;
	char out[4096];
	int master = posix_openpt(O_RDWR | O_NOCTTY), slave;

	CHECK(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	CHECK(slave >= 0);
	progress_init(&p, slave, "top", 10);
	p.delay_usec = 60 * USEC_PER_SEC;
	for (uint64_t i = 0; i <= 10; i++)
		progress_update(&p, i);
	progress_done(&p);
	CHECK_MSG(drain(master, out, sizeof(out)) == 0, "%s", out);
	p.delay_usec = 0;
	progress_update(&p, 5);
	progress_done(&p);
	drain(master, out, sizeof(out));
	CHECK_MSG(strstr(out, "\rtop [###############...............]  50%"), "%s", out);
	close(slave);
	close(master);
}

static void test_pipe(void)
{
	struct progress p;
	char out[64];
	int fds[2];

	CHECK(pipe2(fds, O_NONBLOCK) == 0);
	progress_init(&p, fds[1], "export", 10);
	CHECK(!p.enabled);
	for (uint64_t i = 0; i <= 10; i++)
		progress_update(&p, i);
	progress_done(&p);
	CHECK(read(fds[0], out, sizeof(out)) < 0 && errno == EAGAIN);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	test_terminal();
	test_delay();
	test_pipe();
	return tests_done("test-progress");
}
