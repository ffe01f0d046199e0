/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Wall-clock time (lib/segment/wallclock.h): the CLOCK payload codec, the times a
 * user gives, and the mapping between the trace clock and CLOCK_REALTIME
 * across a suspend (the trace clock stood still while the wall clock went
 * on) and a wall-clock step back, both ways: a time and a window.
 */
#include <stdlib.h>

#include "helpers.h"
#include "util.h"
#include "wallclock.h"

#define S NSEC_PER_SEC

static void test_codec(void)
{
	struct wallclock_pair in[2] = { { 1, 2, 3 }, { UINT64_MAX, 1ull << 40, 7 } }, *out = NULL;
	uint8_t buf[2 * WALLCLOCK_PAIR_SIZE];
	size_t n = 0, cap = 0;

	wallclock_pair_encode(&in[0], buf);
	wallclock_pair_encode(&in[1], buf + WALLCLOCK_PAIR_SIZE);
	CHECK(buf[0] == 1 && buf[8] == 2 && buf[16] == 3);	/* little endian */
	CHECK(wallclock_pairs_decode(buf, sizeof(buf), &out, &n, &cap) == 2);
	CHECK(n == 2 && out[1].trace == UINT64_MAX && out[1].realtime == 1ull << 40);
	CHECK(wallclock_pairs_decode(buf, sizeof(buf) - 1, &out, &n, &cap) == -EBADMSG);
	CHECK(wallclock_pairs_decode(buf, 0, &out, &n, &cap) == -EBADMSG);
	CHECK(wallclock_pairs_decode(buf, WALLCLOCK_PAIR_SIZE, &out, &n, &cap) == 1 && n == 3);
	CHECK(wallclock_pairs_sort(out, n) == 2);	/* the duplicate goes */
	CHECK(out[0].trace == 1 && out[1].trace == UINT64_MAX);
	free(out);
}

static void test_parse(void)
{
	/* 2026-12-01 12:00:00 UTC */
	const uint64_t now = UINT64_C(1796126400) * S;
	struct wallclock_time t;

	CHECK(setenv("TZ", "UTC", 1) == 0);
	tzset();
	CHECK(wallclock_parse("2026-12-01 03:12", now, &t) == 0 && !t.trace &&
	      t.ns == now - (8 * 3600 + 48 * 60) * S);
	CHECK(wallclock_parse("2026-12-01T03:12:07.5Z", now, &t) == 0 &&
	      t.ns == now - (8 * 3600 + 48 * 60 - 7) * S + S / 2);
	CHECK(wallclock_parse("2026-12-01T04:12:00+01:00", now, &t) == 0 &&
	      t.ns == now - (8 * 3600 + 48 * 60) * S);
	CHECK(wallclock_parse("2026-12-01T02:42:00-0030", now, &t) == 0 &&
	      t.ns == now - (8 * 3600 + 48 * 60) * S);
	CHECK(wallclock_parse("2026-12-01", now, &t) == 0 && t.ns == now - 12 * 3600 * S);
	/* a time of day: today, or yesterday when still to come */
	CHECK(wallclock_parse("03:12", now, &t) == 0 && t.ns == now - (8 * 3600 + 48 * 60) * S);
	CHECK(wallclock_parse("13:00", now, &t) == 0 && t.ns == now - 23 * 3600 * S);
	CHECK(wallclock_parse("-10min", now, &t) == 0 && t.ns == now - 600 * S);
	CHECK(wallclock_parse("-2hours", now, &t) == 0 && t.ns == now - 7200 * S);
	CHECK(wallclock_parse("-30s", now, &t) == 0 && t.ns == now - 30 * S);
	CHECK(wallclock_parse("-250ms", now, &t) == 0 && t.ns == now - S / 4);
	CHECK(wallclock_parse("1701.25", now, &t) == 0 && t.trace && t.ns == 1701 * S + S / 4);
	CHECK(wallclock_parse("42", now, &t) == 0 && t.trace && t.ns == 42 * S);
	CHECK(wallclock_parse("", now, &t) == -EINVAL);
	CHECK(wallclock_parse("-10", now, &t) == -EINVAL);
	CHECK(wallclock_parse("-10 parsecs", now, &t) == -EINVAL);
	CHECK(wallclock_parse("25:00", now, &t) == -EINVAL);
	CHECK(wallclock_parse("2026-13-01", now, &t) == -EINVAL);
	CHECK(wallclock_parse("2026-12-01 03:12 tomorrow", now, &t) == -EINVAL);
	CHECK(wallclock_parse("1.2.3", now, &t) == -EINVAL);
}

static void test_mapping(void)
{
	/*
	 * trace 100 s = wall 1000 s; 60 s later a pair; then a suspend of
	 * 500 s (trace clock stood still); then the wall clock is set back
	 * by 100 s.
	 */
	const struct wallclock_pair p[] = {
		{ 100 * S, 1000 * S, 100 * S },
		{ 160 * S, 1060 * S, 160 * S },
		{ 170 * S, 1570 * S, 670 * S },	/* after resume */
		{ 230 * S, 1530 * S, 730 * S },	/* after the step back */
	};
	const size_t n = ARRAY_SIZE(p);

	CHECK(wallclock_to_realtime(p, n, 50 * S) == 950 * S);	/* before the first pair */
	CHECK(wallclock_to_realtime(p, n, 130 * S) == 1030 * S);
	CHECK(wallclock_to_realtime(p, n, 165 * S) == 1065 * S);	/* just before suspending */
	CHECK(wallclock_to_realtime(p, n, 175 * S) == 1575 * S);	/* after resuming */
	CHECK(wallclock_to_realtime(p, n, 240 * S) == 1540 * S);	/* after the step */

	CHECK(wallclock_to_trace(p, n, 950 * S) == 50 * S);
	CHECK(wallclock_to_trace(p, n, 1030 * S) == 130 * S);
	CHECK(wallclock_to_trace(p, n, 1065 * S) == 165 * S);
	/* during the suspend: the first event after resuming */
	CHECK(wallclock_to_trace(p, n, 1300 * S) == 170 * S);
	CHECK(wallclock_to_trace(p, n, 1575 * S) == 175 * S);
	CHECK(wallclock_to_trace(p, n, 1700 * S) == 400 * S);	/* after the last pair */
	CHECK(wallclock_to_trace(p, 1, 10 * S) == 0);		/* saturates */
}

/* A wall-clock window as the trace-clock span that holds every time mapped into it. */
static void test_span(void)
{
	const struct wallclock_pair p[] = {
		{ 100 * S, 1000 * S, 100 * S },
		{ 160 * S, 1060 * S, 160 * S },
		{ 170 * S, 1570 * S, 670 * S },	/* after a suspend of 500 s */
		{ 230 * S, 1530 * S, 730 * S },	/* the wall clock set back by 100 s */
	};
	const size_t n = ARRAY_SIZE(p);
	uint64_t lo = 0, hi = 0;

	CHECK(wallclock_trace_span(p, n, 1030 * S, 1050 * S, &lo, &hi) && lo == 130 * S &&
	      hi == 150 * S);
	/* open ends: everything before, everything after */
	CHECK(wallclock_trace_span(p, n, 0, 1010 * S, &lo, &hi) && lo == 0 && hi == 110 * S);
	CHECK(wallclock_trace_span(p, n, 1700 * S, UINT64_MAX, &lo, &hi) && lo == 400 * S &&
	      hi == UINT64_MAX);
	/* into the suspend: up to the last time before it */
	CHECK(wallclock_trace_span(p, n, 1065 * S, 1525 * S, &lo, &hi) && lo == 165 * S &&
	      hi == 170 * S - 1);
	/* ... and 1530 s to 1575 s came again after the step back */
	CHECK(wallclock_trace_span(p, n, 1065 * S, 1575 * S, &lo, &hi) && lo == 165 * S &&
	      hi == 275 * S);
	/* within the suspend: no trace time */
	CHECK(!wallclock_trace_span(p, n, 1100 * S, 1500 * S, &lo, &hi));
	/* the hour repeated by the step back: both times, and all between */
	CHECK(wallclock_trace_span(p, n, 1580 * S, 1590 * S, &lo, &hi) && lo == 180 * S &&
	      hi == 290 * S);
	for (uint64_t t = 0; t < 400 * S; t += S / 2) {
		uint64_t rt = wallclock_to_realtime(p, n, t);

		if (rt >= 1580 * S && rt <= 1590 * S)
			CHECK_MSG(t >= lo && t <= hi, "%" PRIu64 " outside the span", t);
	}
	CHECK(!wallclock_trace_span(p, n, 20 * S, 10 * S, &lo, &hi));
	/* two pairs at the same trace time: the later one holds from there */
	CHECK(wallclock_trace_span((const struct wallclock_pair[]){ { 10 * S, 100 * S, 0 },
								    { 10 * S, 500 * S, 0 } },
				   2, 95 * S, 505 * S, &lo, &hi) &&
	      lo == 5 * S && hi == 15 * S);
}

int main(void)
{
	test_codec();
	test_parse();
	test_mapping();
	test_span();
	return tests_done("test-wallclock");
}
