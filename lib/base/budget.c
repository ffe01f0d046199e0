/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The readers' memory budget (budget.h): a limit, a counter, the first refusal. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "util.h"

static _Atomic uint64_t limit_bytes;
static _Atomic uint64_t used_bytes;
static _Atomic uint64_t peak_bytes;
static _Atomic int refused;
static char refusal[256];

void budget_set_limit(uint64_t limit)
{
	atomic_store(&limit_bytes, limit);
}

uint64_t budget_limit(void)
{
	return atomic_load(&limit_bytes);
}

uint64_t budget_used(void)
{
	return atomic_load(&used_bytes);
}

uint64_t budget_peak(void)
{
	return atomic_load(&peak_bytes);
}

static void note_refusal(size_t n, const char *what, uint64_t used, uint64_t limit)
{
	/* the first refusal wins: later ones are usually its consequences */
	if (atomic_exchange(&refused, 1))
		return;
	(void)snprintf(refusal, sizeof(refusal),
		       "the memory limit of %" PRIu64 " MiB would be exceeded by %s (%zu bytes more, "
		       "%" PRIu64 " MiB held); --memory-limit or $" BUDGET_ENV " raises it",
		       limit >> 20, what, n, used >> 20);
}

int budget_charge(size_t *charged, size_t n, const char *what)
{
	uint64_t limit = atomic_load(&limit_bytes), used = atomic_load(&used_bytes), peak;

	do {
		if (limit && (n > limit || used > limit - n)) {
			note_refusal(n, what, used, limit);
			return -ENOMEM;
		}
	} while (!atomic_compare_exchange_weak(&used_bytes, &used, used + n));
	used += n;
	peak = atomic_load(&peak_bytes);
	while (used > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, used))
		;
	*charged += n;
	return 0;
}

void budget_release(size_t *charged, size_t n)
{
	if (n > *charged)
		n = *charged;
	atomic_fetch_sub(&used_bytes, n);
	*charged -= n;
}

int budget_buf_reserve(size_t *charged, struct buf *b, size_t n, const char *what)
{
	size_t cap;
	int r;

	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX - b->len)
		return -ENOMEM;
	/* the room buf_reserve() will ask for */
	cap = greedy_capacity(b->cap, MAX(b->len + n, BUF_MIN_ROOM), 1);
	if (!cap)
		return -ENOMEM;
	r = budget_charge(charged, cap - b->cap, what);
	if (r < 0)
		return r;
	r = buf_reserve(b, n);
	/* less when the doubled room did not fit; nothing on failure */
	budget_release(charged, cap - b->cap);
	return r;
}

static int greedy_charged(bool zero, size_t *charged, void **p, size_t *cap, size_t need,
			  size_t size, const char *what)
{
	size_t want;
	int r;

	if (need <= *cap)
		return 0;
	want = greedy_capacity(*cap, need, size);
	if (!want)
		return -ENOMEM;
	r = budget_charge(charged, (want - *cap) * size, what);
	if (r < 0)
		return r;
	r = zero ? greedy_realloc0(p, cap, need, size) : greedy_realloc(p, cap, need, size);
	/* less when the doubled room did not fit; nothing on failure */
	budget_release(charged, (want - *cap) * size);
	return r;
}

int budget_greedy_realloc(size_t *charged, void **p, size_t *cap, size_t need, size_t size,
			  const char *what)
{
	return greedy_charged(false, charged, p, cap, need, size, what);
}

int budget_greedy_realloc0(size_t *charged, void **p, size_t *cap, size_t need, size_t size,
			   const char *what)
{
	return greedy_charged(true, charged, p, cap, need, size, what);
}

void budget_buf_done(size_t *charged, struct buf *b)
{
	budget_release(charged, b->cap);
	buf_done(b);
}

const char *budget_error(void)
{
	return atomic_load(&refused) ? refusal : NULL;
}

void budget_clear_error(void)
{
	atomic_store(&refused, 0);
}

int budget_parse_size(const char *s, uint64_t *ret)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *e;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || e == s)
		return -EINVAL;
	switch (*e) {
	case 'K': case 'k':
		shift = 10;
		break;
	case 'M': case 'm':
		shift = 20;
		break;
	case 'G': case 'g':
		shift = 30;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (*e)
		e++;
	if (*e && strcmp(e, "iB") && strcmp(e, "B") && strcmp(e, "b"))
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}

int budget_setup(const char *arg, const char **ret_bad)
{
	const char *s = arg ? arg : getenv(BUDGET_ENV);
	uint64_t limit = BUDGET_DEFAULT_LIMIT;

	if (s && *s && (budget_parse_size(s, &limit) < 0 || limit < BUDGET_MIN_LIMIT)) {
		*ret_bad = s;
		return -EINVAL;
	}
	budget_set_limit(limit);
	return 0;
}
