/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wall-clock time for trace-clock data (wallclock.h): the CLOCK payload
 * codec, parsing the times users give, and mapping between the trace clock
 * and CLOCK_REALTIME through the pairs of one boot.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "byteorder.h"
#include "util.h"
#include "wallclock.h"

void wallclock_pair_encode(const struct wallclock_pair *p, uint8_t out[WALLCLOCK_PAIR_SIZE])
{
	assert(p);
	assert(out);

	put_le64(out, p->trace);
	put_le64(out + 8, p->realtime);
	put_le64(out + 16, p->boottime);
}

int wallclock_pairs_decode(const void *buf, size_t len, struct wallclock_pair **pairs, size_t *n,
			   size_t *cap)
{
	const uint8_t *b = buf;
	size_t k = len / WALLCLOCK_PAIR_SIZE;

	assert(buf || len == 0);
	assert(pairs);
	assert(n);
	assert(cap);

	if (!len || len % WALLCLOCK_PAIR_SIZE)
		return -EBADMSG;
	if (GREEDY_REALLOC(*pairs, *cap, *n + k) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < k; i++, b += WALLCLOCK_PAIR_SIZE)
		(*pairs)[*n + i] = (struct wallclock_pair){ get_le64(b), get_le64(b + 8),
							   get_le64(b + 16) };
	*n += k;
	return (int)k;
}

static int pair_cmp(const void *x, const void *y)
{
	const struct wallclock_pair *a = x, *b = y;

	if (a->trace != b->trace)
		return a->trace < b->trace ? -1 : 1;
	if (a->realtime != b->realtime)
		return a->realtime < b->realtime ? -1 : 1;
	return 0;
}

size_t wallclock_pairs_sort(struct wallclock_pair *pairs, size_t n)
{
	size_t k = 0;

	assert(pairs || n == 0);

	if (!n)
		return 0;
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	for (size_t i = 1; i < n; i++)
		if (pair_cmp(&pairs[k], &pairs[i]))
			pairs[++k] = pairs[i];
	return k + 1;
}

/* Index of the last pair with trace <= t, or 0. */
static size_t pair_at(const struct wallclock_pair *p, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].trace <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t shift(uint64_t base, uint64_t from, uint64_t to)
{
	if (to >= from)
		return base + (to - from);
	return base > from - to ? base - (from - to) : 0;
}

uint64_t wallclock_to_realtime(const struct wallclock_pair *pairs, size_t n, uint64_t trace)
{
	const struct wallclock_pair *p;

	assert(pairs && n > 0);
	p = &pairs[pair_at(pairs, n, trace)];
	return shift(p->realtime, p->trace, trace);
}

uint64_t wallclock_to_trace(const struct wallclock_pair *pairs, size_t n, uint64_t realtime)
{
	assert(pairs && n > 0);
	if (realtime < pairs[0].realtime)
		return shift(pairs[0].trace, pairs[0].realtime, realtime);
	for (size_t i = 0; i + 1 < n; i++) {
		const struct wallclock_pair *p = &pairs[i], *next = &pairs[i + 1];
		uint64_t span = next->trace - p->trace;

		if (realtime >= p->realtime && realtime - p->realtime < span)
			return p->trace + (realtime - p->realtime);
		if (realtime < next->realtime)
			return next->trace;	/* suspended, or the clock stepped forward */
	}
	return shift(pairs[n - 1].trace, pairs[n - 1].realtime, realtime);
}

/* base + (to - from), saturating at 0 and UINT64_MAX. */
static uint64_t shift_sat(uint64_t base, uint64_t from, uint64_t to)
{
	if (to >= from)
		return to - from > UINT64_MAX - base ? UINT64_MAX : base + (to - from);
	return base > from - to ? base - (from - to) : 0;
}

/*
 * Pair i places the trace times from its own up to the next pair's (the
 * first pair also those before it) at a constant offset, so each piece
 * maps a real-time window back to one trace-time interval.
 */
bool wallclock_trace_span(const struct wallclock_pair *pairs, size_t n, uint64_t rt_since,
			  uint64_t rt_until, uint64_t *ret_since, uint64_t *ret_until)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	bool any = false;

	assert(pairs || n == 0);
	assert(ret_since && ret_until);
	for (size_t i = 0; i < n && rt_since <= rt_until; i++) {
		const struct wallclock_pair *p = &pairs[i];
		uint64_t from = i ? p->trace : 0, to = UINT64_MAX, a, b;

		if (i + 1 < n && pairs[i + 1].trace == p->trace) {
			/* the next pair takes over at once; the first keeps what lies before */
			if (i || !p->trace)
				continue;
			to = p->trace - 1;
		} else if (i + 1 < n) {
			to = pairs[i + 1].trace - 1;
		}
		a = rt_since ? MAX(shift_sat(p->trace, p->realtime, rt_since), from) : from;
		b = rt_until != UINT64_MAX ? MIN(shift_sat(p->trace, p->realtime, rt_until), to) : to;
		if (a > b || shift_sat(p->realtime, p->trace, b) < rt_since)
			continue;	/* rt_since lies before what real time saturates to */
		lo = MIN(lo, a);
		hi = MAX(hi, b);
		any = true;
	}
	if (!any)
		return false;
	*ret_since = lo;
	*ret_until = hi;
	return true;
}

void wallclock_format(uint64_t realtime, char *buf, size_t len)
{
	time_t sec = (time_t)(realtime / NSEC_PER_SEC);
	struct tm tm;
	char day[24];

	assert(buf && len >= 32);

	if (!localtime_r(&sec, &tm) || !strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm)) {
		(void)snprintf(buf, len, "@%" PRIu64, realtime);
		return;
	}
	(void)snprintf(buf, len, "%s.%06" PRIu64, day, realtime % NSEC_PER_SEC / 1000);
}

/* ---- parsing ---- */

/* Read exactly digits decimal digits at *s. Returns the value or -1. */
static int num(const char **s, int digits)
{
	int v = 0;

	for (int i = 0; i < digits; i++, (*s)++) {
		if (!isdigit((unsigned char)**s))
			return -1;
		v = v * 10 + (**s - '0');
	}
	return v;
}

/* ".123456789" -> ns; advances *s. */
static uint64_t fraction(const char **s)
{
	uint64_t ns = 0, scale = NSEC_PER_SEC / 10;

	if (**s != '.' && **s != ',')
		return 0;
	for ((*s)++; isdigit((unsigned char)**s); (*s)++, scale /= 10)
		ns += (uint64_t)(**s - '0') * scale;
	return ns;
}

/* "HH:MM[:SS[.frac]]" into tm; returns the fraction or -EINVAL. */
static int parse_clock_time(const char **s, struct tm *tm, uint64_t *ret_frac)
{
	int h = num(s, 2), m;

	if (h < 0 || h > 23 || *(*s)++ != ':')
		return -EINVAL;
	m = num(s, 2);
	if (m < 0 || m > 59)
		return -EINVAL;
	tm->tm_hour = h;
	tm->tm_min = m;
	tm->tm_sec = 0;
	*ret_frac = 0;
	if (**s == ':') {
		(*s)++;
		tm->tm_sec = num(s, 2);
		if (tm->tm_sec < 0 || tm->tm_sec > 60)
			return -EINVAL;
		*ret_frac = fraction(s);
	}
	return 0;
}

/* "Z", "+HH", "+HH:MM", "+HHMM" -> seconds east of UTC; 1 if present, 0 if none, -EINVAL. */
static int parse_zone(const char **s, long *ret_east)
{
	int sign, h, m = 0;

	if (**s == 'Z' || **s == 'z') {
		(*s)++;
		*ret_east = 0;
		return 1;
	}
	if (**s != '+' && **s != '-')
		return 0;
	sign = *(*s)++ == '-' ? -1 : 1;
	h = num(s, 2);
	if (h < 0 || h > 14)
		return -EINVAL;
	if (**s == ':')
		(*s)++;
	if (isdigit((unsigned char)**s)) {
		m = num(s, 2);
		if (m < 0 || m > 59)
			return -EINVAL;
	}
	*ret_east = sign * (h * 3600L + m * 60L);
	return 1;
}

static int parse_relative(const char *s, uint64_t now, struct wallclock_time *ret)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "ms", NSEC_PER_SEC / 1000 }, { "s", NSEC_PER_SEC }, { "sec", NSEC_PER_SEC }, { "m", 60 * NSEC_PER_SEC },
		{ "min", 60 * NSEC_PER_SEC }, { "h", 3600 * NSEC_PER_SEC },
		{ "hour", 3600 * NSEC_PER_SEC }, { "d", 86400 * NSEC_PER_SEC },
		{ "day", 86400 * NSEC_PER_SEC },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isdigit((unsigned char)*s))
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		size_t l = strlen(units[i].unit);
		uint64_t d;

		/* the unit, or its plural ("mins", "hours") */
		if (strncmp(end, units[i].unit, l) || (end[l] && !(end[l] == 's' && !end[l + 1])))
			continue;
		d = (uint64_t)(v * (double)units[i].ns);
		*ret = (struct wallclock_time){ .set = true, .ns = now > d ? now - d : 0 };
		return 0;
	}
	return -EINVAL;
}

static int parse_trace_seconds(const char *s, struct wallclock_time *ret)
{
	const char *p = s;
	uint64_t sec = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (sec > UINT64_MAX / NSEC_PER_SEC / 10)
			return -EINVAL;
		sec = sec * 10 + (uint64_t)(*p - '0');
	}
	if (*p && *p != '.')
		return -EINVAL;
	*ret = (struct wallclock_time){ .set = true, .trace = true };
	ret->ns = sec * NSEC_PER_SEC + fraction(&p);
	return *p ? -EINVAL : 0;
}

static int tm_to_ns(struct tm *tm, int zone, long east, uint64_t frac, uint64_t *ret)
{
	time_t t;

	if (zone) {
		t = timegm(tm);
		if (t == (time_t)-1)
			return -EINVAL;
		t -= east;
	} else {
		tm->tm_isdst = -1;
		t = mktime(tm);
		if (t == (time_t)-1)
			return -EINVAL;
	}
	if (t < 0)
		return -EINVAL;
	*ret = (uint64_t)t * NSEC_PER_SEC + frac;
	return 0;
}

int wallclock_parse(const char *text, uint64_t now, struct wallclock_time *ret)
{
	struct tm tm = {};
	const char *s = text;
	uint64_t frac = 0, ns;
	long east = 0;
	int zone, r;

	assert(ret);

	if (!text || !*text)
		return -EINVAL;
	if (text[0] == '-')
		return parse_relative(text + 1, now, ret);
	if (strlen(text) >= 5 && text[2] == ':') {
		time_t today = (time_t)(now / NSEC_PER_SEC);

		if (!localtime_r(&today, &tm) || parse_clock_time(&s, &tm, &frac) < 0)
			return -EINVAL;
		zone = parse_zone(&s, &east);
		if (zone < 0 || *s || tm_to_ns(&tm, zone, east, frac, &ns) < 0)
			return -EINVAL;
		if (ns > now)
			ns = ns >= 86400 * NSEC_PER_SEC ? ns - 86400 * NSEC_PER_SEC : 0;
		*ret = (struct wallclock_time){ .set = true, .ns = ns };
		return 0;
	}
	if (strlen(text) >= 10 && text[4] == '-' && text[7] == '-') {
		tm.tm_year = num(&s, 4) - 1900;
		s++;
		tm.tm_mon = num(&s, 2) - 1;
		s++;
		tm.tm_mday = num(&s, 2);
		if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
		    tm.tm_mday > 31)
			return -EINVAL;
		if (*s == ' ' || *s == 'T' || *s == 't') {
			s++;
			r = parse_clock_time(&s, &tm, &frac);
			if (r < 0)
				return r;
		}
		zone = parse_zone(&s, &east);
		if (zone < 0 || *s || tm_to_ns(&tm, zone, east, frac, &ns) < 0)
			return -EINVAL;
		*ret = (struct wallclock_time){ .set = true, .ns = ns };
		return 0;
	}
	return parse_trace_seconds(text, ret);
}
