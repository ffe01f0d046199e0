/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memory budget of a process that reads untrusted segment files
 * (doc/reading-archives.md, "Memory budget"): one limit for every byte
 * the readers hold (record buffers, FILE records, stack tables, clock
 * pairs, frames and pages), charged before the allocation, whatever a
 * file claims. A charge that would pass the limit is refused, and the
 * first refusal is kept as a message naming what was too big.
 *
 * A process that never sets a limit has none (the daemon); stackmapctl's
 * reading commands set one. Objects keep what they charged in a size_t of
 * their own and give it back when they are freed. Thread-safe counters.
 */
#ifndef STACKMAPD_BUDGET_H
#define STACKMAPD_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define BUDGET_DEFAULT_LIMIT ((uint64_t)256 << 20)
#define BUDGET_MIN_LIMIT ((uint64_t)64 << 20)
#define BUDGET_ENV "STACKMAPCTL_MEMORY_LIMIT"

/* Set the limit in bytes (0: none). What is charged already stays charged. */
void budget_set_limit(uint64_t limit);
uint64_t budget_limit(void);

/* Bytes charged now, and the most ever charged at once. */
uint64_t budget_used(void);
uint64_t budget_peak(void);

/*
 * Charge n bytes for what (static text, e.g. "FILE records") and add them
 * to *charged. Returns 0, or -ENOMEM when the limit would be passed
 * (nothing is charged; budget_error() says what and how much).
 */
int budget_charge(size_t *charged, size_t n, const char *what);

/* Give back n of the bytes in *charged (all of them if n is larger). */
void budget_release(size_t *charged, size_t n);

/* Give back everything in *charged. */
static inline void budget_release_all(size_t *charged)
{
	budget_release(charged, SIZE_MAX);
}

/*
 * buf_reserve(b, n) with the growth charged to *charged first: what stays
 * charged is the room the buffer gets. Returns 0 or -ENOMEM (over the
 * budget, or no memory).
 */
int budget_buf_reserve(size_t *charged, struct buf *b, size_t n, const char *what);

/*
 * greedy_realloc() (util.h) with the growth, in bytes, charged to *charged
 * first for what: what stays charged is the room the array gets. Returns
 * 0, or -ENOMEM (over the budget, or no memory) with *p, *cap and
 * *charged unchanged. Use BUDGET_GREEDY_REALLOC() rather than calling it.
 */
int budget_greedy_realloc(size_t *charged, void **p, size_t *cap, size_t need, size_t size,
			  const char *what);

/* budget_greedy_realloc(), and the elements past the old *cap are zeroed. */
int budget_greedy_realloc0(size_t *charged, void **p, size_t *cap, size_t need, size_t size,
			   const char *what);

#define BUDGET_GREEDY_REALLOC_IMPL(func, charged, array, cap, need, what)                       \
	({                                                                                      \
		size_t _need_ = (need);                                                         \
		int _r_ = 0;                                                                    \
		if (_need_ > (cap)) {                                                           \
			void *_p_ = (array);                                                    \
			_r_ = func((charged), &_p_, &(cap), _need_, sizeof((array)[0]), (what)); \
			(array) = _p_;                                                          \
		}                                                                               \
		_r_;                                                                            \
	})

/*
 * GREEDY_REALLOC(array, cap, need) with the growth charged to *charged
 * (a size_t *) for what first. Returns 0 or -ENOMEM.
 */
#define BUDGET_GREEDY_REALLOC(charged, array, cap, need, what) \
	BUDGET_GREEDY_REALLOC_IMPL(budget_greedy_realloc, charged, array, cap, need, what)

/* BUDGET_GREEDY_REALLOC(), with the new elements zeroed. */
#define BUDGET_GREEDY_REALLOC0(charged, array, cap, need, what) \
	BUDGET_GREEDY_REALLOC_IMPL(budget_greedy_realloc0, charged, array, cap, need, what)

/* buf_done(b) and the release of what budget_buf_reserve() charged for it. */
void budget_buf_done(size_t *charged, struct buf *b);

/*
 * The first refusal since the last budget_clear_error(), as a sentence
 * ("the memory limit of 256 MiB would be exceeded by FILE records
 * (...)"), or NULL. Borrowed.
 */
const char *budget_error(void);
void budget_clear_error(void);

/*
 * Parse a size: bytes with an optional K, M or G suffix (powers of 1024;
 * "MiB" and "MB" read as M). Returns 0 and *ret, or -EINVAL.
 */
int budget_parse_size(const char *s, uint64_t *ret);

/*
 * The limit for a reading command: arg (--memory-limit) if not NULL, else
 * $STACKMAPCTL_MEMORY_LIMIT if set, else BUDGET_DEFAULT_LIMIT; limits below
 * BUDGET_MIN_LIMIT are refused. Sets it. Returns 0, or -EINVAL and
 * *ret_bad the text that does not parse (borrowed).
 */
int budget_setup(const char *arg, const char **ret_bad);

#endif
