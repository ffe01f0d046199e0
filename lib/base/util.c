/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers (util.h) that need more than a line: growing arrays,
 * formatting into a new string, reading and writing whole files (tracefs reports size 0, so
 * files are read to EOF), complete writes, and fsync of a directory.
 */
#include <assert.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "util.h"

int strprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vstrprintf(ret, fmt, ap);
	va_end(ap);
	return r;
}

int vstrprintf(char **ret, const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}

size_t greedy_capacity(size_t cap, size_t need, size_t size)
{
	size_t n;

	assert(size > 0);
	/* checked here, not by the allocator: sanitizers treat an overflowing request as a bug */
	if (need > SIZE_MAX / size)
		return 0;
	n = MIN(cap, SIZE_MAX / size / 2) * 2;
	n = MAX(n, need);
	return MAX(n, 64 / size);
}

int greedy_realloc(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n;
	void *q;

	assert(size > 0);
	if (need <= *cap)
		return 0;
	n = greedy_capacity(*cap, need, size);
	if (!n)
		return -ENOMEM;
	q = realloc(*p, n * size);
	if (!q && n > need) {
		/* doubling is only a wish: the exact size may still fit */
		n = need;
		q = realloc(*p, n * size);
	}
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

int greedy_realloc0(void **p, size_t *cap, size_t need, size_t size)
{
	size_t old = *cap;
	int r;

	r = greedy_realloc(p, cap, need, size);
	if (r < 0)
		return r;
	memset((uint8_t *)*p + old * size, 0, (*cap - old) * size);
	return 0;
}

int strextendf(char **s, const char *fmt, ...)
{
	_cleanup_free_ char *add = NULL;
	size_t have = *s ? strlen(*s) : 0, n;
	va_list ap;
	char *t;
	int r;

	va_start(ap, fmt);
	r = vstrprintf(&add, fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	n = strlen(add);
	t = realloc(*s, have + n + 1);
	if (!t)
		return -ENOMEM;
	memcpy(t + have, add, n + 1);
	*s = t;
	return 0;
}

int read_file(const char *path, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		size_t want;
		ssize_t n;

		/* a first read of 4 KiB, then at least one byte and the NUL */
		if (GREEDY_REALLOC(buf, cap, MAX(len + 2, (size_t)4096)) < 0)
			return -ENOMEM;
		want = cap - len - 1;
		n = read_full(fd, buf + len, want, -1);
		if (n < 0)
			return (int)n;
		len += (size_t)n;
		if ((size_t)n < want)
			break;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = steal_ptr(buf);
	return 0;
}

ssize_t read_full(int fd, void *buf, size_t len, int64_t off)
{
	size_t done = 0;

	while (done < len) {
		uint8_t *p = (uint8_t *)buf + done;
		ssize_t n = off < 0 ? read(fd, p, len - done)
				    : pread(fd, p, len - done, (off_t)off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int write_file(const char *path, const char *s)
{
	_cleanup_close_ int fd = -1;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return write_all(fd, s, strlen(s));
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	_cleanup_free_ char *tmp = NULL, *dcopy = NULL;
	_cleanup_close_ int fd = -1, dfd = -1;
	int r;

	r = strprintf(&tmp, "%s.new", path);
	if (r < 0)
		return r;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlink(tmp);
		return r;
	}
	/* the rename itself must reach the disk before the change it protects */
	dcopy = strdup(path);
	if (!dcopy)
		return -ENOMEM;
	dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0)
		return -errno;
	return 0;
}

int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t k = writev(fd, iov, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return len ? writev_all(fd, &iov, 1) : 0;
}

int fsync_dir(const char *dir)
{
	_cleanup_close_ int fd = -1;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		return -errno;
	return 0;
}

int named_texts_append(struct named_text **v, size_t *n, const char *name, const void *data,
		       size_t len)
{
	struct named_text *a = reallocarray(*v, *n + 1, sizeof(**v));
	struct named_text *t;

	if (!a)
		return -ENOMEM;
	*v = a;
	t = &a[*n];
	t->name = strdup(name);
	t->data = malloc(len + 1);
	if (!t->name || !t->data) {
		free(t->name);
		free(t->data);
		return -ENOMEM;
	}
	memcpy(t->data, data, len);
	t->data[len] = '\0';
	t->len = len;
	(*n)++;
	return 0;
}

void named_texts_free(struct named_text **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free((*v)[i].name);
		free((*v)[i].data);
	}
	free(*v);
	*v = NULL;
	*n = 0;
}
