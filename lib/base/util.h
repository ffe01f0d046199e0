/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small helpers shared by the daemon, the client and the tests: cleanup
 * attributes, ownership transfer, growing arrays, time, and checked string
 * formatting; and the rule that assert() is never compiled out.
 */
#ifndef STACKMAPD_UTIL_H
#define STACKMAPD_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * assert() checks our own bugs at the entry points of lib/ (a NULL where
 * a pointer is required, a size or state the caller guarantees): it stays
 * on in every build, or a wrong caller fails later somewhere else.
 */
#ifdef NDEBUG
#error "stackmapd is built with assert() on: do not define NDEBUG"
#endif

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_USEC UINT64_C(1000)

/* Hand ownership of *p to the caller and clear the source. */
#define steal_ptr(p)                            \
	({                                      \
		typeof(p) _p_ = (p);            \
		(p) = NULL;                     \
		_p_;                            \
	})

static inline int steal_fd(int *fd)
{
	int r = *fd;

	*fd = -1;
	return r;
}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;

		(void)close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}

/*
 * DEFINE_TRIVIAL_CLEANUP_FUNC(struct foo *, foo_free) defines foo_freep(), for
 * _cleanup_(foo_freep). The destructor must accept NULL.
 */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
	static inline _unused_ void func##p(type *p)            \
	{                                                       \
		func(*p);                                       \
	}

/* The same for destructors that do not accept NULL (tep_free, ...). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC_NONNULL(type, func)         \
	static inline _unused_ void func##p(type *p)            \
	{                                                       \
		if (*p)                                         \
			func(*p);                               \
	}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/*
 * Make room in the array *p, which has room for *cap elements of size
 * bytes, for need elements. When need > *cap the array is reallocated to
 * greedy_capacity(*cap, need, size) elements, or to exactly need when
 * that much does not fit, so that appending one element at a time costs
 * amortized O(1); the elements past the old *cap are uninitialized.
 * Returns 0, or -ENOMEM with *p and *cap unchanged (also when need
 * elements would not fit in a size_t). Use GREEDY_REALLOC() or
 * GREEDY_REALLOC0() rather than calling it; budget.h has the same charged
 * to the readers' memory budget.
 */
int greedy_realloc(void **p, size_t *cap, size_t need, size_t size);

/*
 * The room, in elements of size bytes, that greedy_realloc() asks for when
 * an array with room for cap elements must hold need > cap: the larger of
 * need and twice cap, and at least 64 bytes' worth. 0 when need elements
 * do not fit in a size_t.
 *
 * The one place that doubles a capacity: outside lib/base, arrays grow
 * with GREEDY_REALLOC() (or budget.h's BUDGET_GREEDY_REALLOC()), never by
 * a doubling or a realloc() one element larger of their own
 * (tests/check-base.sh). Hash tables, whose sizes are powers of two, size
 * their slots themselves (hashtab.c, the column encoder's dictionaries);
 * named_texts_append() grows its short lists by one.
 */
size_t greedy_capacity(size_t cap, size_t need, size_t size);

/* greedy_realloc(), and the elements past the old *cap are zeroed. */
int greedy_realloc0(void **p, size_t *cap, size_t need, size_t size);

#define GREEDY_REALLOC_IMPL(func, array, cap, need)                                     \
	({                                                                              \
		size_t _need_ = (need);                                                 \
		int _r_ = 0;                                                            \
		if (_unlikely_(_need_ > (cap))) {                                       \
			void *_p_ = (array);                                            \
			_r_ = func(&_p_, &(cap), _need_, sizeof((array)[0]));           \
			(array) = _p_;                                                  \
		}                                                                       \
		_r_;                                                                    \
	})

/*
 * Grow array (any pointer lvalue) whose room, in elements, is the size_t
 * lvalue cap, to hold at least need elements; array and cap are updated in
 * place. Costs one comparison when there is room. Returns 0 or -ENOMEM.
 */
#define GREEDY_REALLOC(array, cap, need) GREEDY_REALLOC_IMPL(greedy_realloc, array, cap, need)

/* GREEDY_REALLOC(), with the new elements zeroed. */
#define GREEDY_REALLOC0(array, cap, need) GREEDY_REALLOC_IMPL(greedy_realloc0, array, cap, need)

/* Negative errno of the last failure, never 0 (libraries do not always set errno). */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static inline uint64_t now_usec(clockid_t clock)
{
	struct timespec ts;

	(void)clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / NSEC_PER_USEC;
}

static inline uint64_t now_nsec(clockid_t clock)
{
	struct timespec ts;

	(void)clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC * NSEC_PER_USEC + (uint64_t)ts.tv_nsec;
}

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static inline bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Format into a newly allocated string stored in *ret (caller frees).
 * Returns 0 or -ENOMEM; *ret is untouched on failure.
 */
int strprintf(char **ret, const char *fmt, ...) _printf_(2, 3);

/* strprintf() with the arguments as a va_list. */
int vstrprintf(char **ret, const char *fmt, va_list ap) _printf_(2, 0);

/*
 * Append the formatted text to the allocated string *s (NULL: start one).
 * Returns 0 or -ENOMEM; *s is untouched on failure.
 */
int strextendf(char **s, const char *fmt, ...) _printf_(2, 3);

/*
 * Read a whole file (tracefs files report size 0, so read until EOF).
 * On success *ret holds a NUL-terminated buffer owned by the caller and
 * *ret_len (if not NULL) its length without the NUL. Returns 0 or -errno.
 */
int read_file(const char *path, char **ret, size_t *ret_len);

/*
 * Replace path's content with len bytes of data, crash-safe: through
 * path.new, fsync'ed, renamed over path, and the directory fsync'ed.
 * Returns 0 or -errno (path.new is removed on failure).
 */
int write_file_atomic(const char *path, const void *data, size_t len);

/*
 * Read up to len bytes into buf: at offset off with pread(), or with read()
 * at the file position when off is -1; retries on EINTR and short reads.
 * Returns the number read (short only at EOF) or -errno.
 */
ssize_t read_full(int fd, void *buf, size_t len, int64_t off);

/* Write a string to a file (O_WRONLY|O_TRUNC, no create). Returns 0 or -errno. */
int write_file(const char *path, const char *s);

/* write() all of buf, retrying on EINTR and short writes. Returns 0 or -errno. */
int write_all(int fd, const void *buf, size_t len);

/*
 * Write all of iov[0..n) (advanced as it is written), retrying on EINTR.
 * Returns 0 or -errno; -EIO when the file takes nothing.
 */
struct iovec;
int writev_all(int fd, struct iovec *iov, int n);

/* A named text (a file's name and content), as kept in lists of them. */
struct named_text {
	char *name;
	char *data;		/* NUL-terminated copy */
	size_t len;		/* without the NUL */
};

/*
 * Append copies of name and data[0..len) to the array *v of *n entries
 * (grown by one; *v is owned by the caller). Returns 0 or -ENOMEM, then
 * *v and *n unchanged in content.
 */
int named_texts_append(struct named_text **v, size_t *n, const char *name, const void *data,
		       size_t len);

/* Free the array and its copies; *v and *n are reset. */
void named_texts_free(struct named_text **v, size_t *n);

/* fsync the directory that holds path (or path itself if it is a directory). */
int fsync_dir(const char *dir);

#endif
