/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the fuzz targets: hand the input to an API that wants a path
 * (a file under /tmp, reused for every input of the process), and silence
 * the subcommands' output so that only sanitizer reports reach stderr.
 */
#ifndef STACKMAPD_FUZZ_COMMON_H
#define STACKMAPD_FUZZ_COMMON_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Write data to a per-process file named with suffix; returns its path (static) or NULL. */
static inline const char *fuzz_write_file(const uint8_t *data, size_t len, const char *suffix)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "/tmp/smfuzz-%d-00000001-20260101T000000%s", (int)getpid(),
		 suffix);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n <= 0) {
			close(fd);
			return NULL;
		}
		data += n;
		len -= (size_t)n;
	}
	close(fd);
	return path;
}

/* stdout and stderr of the code under test go nowhere, unless SMFUZZ_VERBOSE is set. */
static inline void fuzz_quiet(void)
{
	int fd;

	if (getenv("SMFUZZ_VERBOSE"))
		return;
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)dup2(fd, STDOUT_FILENO);
	close(fd);
}

#endif
