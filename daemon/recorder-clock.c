/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's CLOCK records (doc/segment-format.md): pairs of the trace
 * clock with CLOCK_REALTIME and CLOCK_BOOTTIME, so that readers can show
 * dates and select by wall-clock time. The trace clock cannot be read from
 * user space for every clock the kernel offers (local and global are
 * sched_clock based), so a pair is made the one way that works for all of
 * them: a trace marker is written between two readings of the other
 * clocks, and its event's timestamp, read back from the ring buffer with
 * the other markers, is the trace clock at the midpoint. Samples are taken
 * when a segment opens, every minute, and as soon as a clock step or a
 * suspend is seen (the offsets between the clocks changed).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "archive.h"
#include "log.h"
#include "recorder-internal.h"
#include "tracing.h"
#include "util.h"
#include "wallclock.h"

#define CLOCK_MARKER_PREFIX MARKER_PREFIX "clock "
#define CLOCK_PERIOD_NS (60 * NSEC_PER_SEC)
#define CLOCK_JUMP_NS (10 * NSEC_PER_SEC / 1000)
#define CLOCK_BRACKET_NS (NSEC_PER_SEC / 1000)	/* readings around a marker, at most */
#define CLOCK_TRIES 4

static struct log_ratelimit clock_rl = LOG_RATELIMIT_INIT;
static struct log_ratelimit wide_rl = LOG_RATELIMIT_INIT;

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	(void)clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int64_t diff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

#ifdef STACKMAPD_FAULTS
/*
 * Fault injection, compiled only into the test build of the daemon
 * (tests/fault/stackmapd-faults): STACKMAPD_FAULT_CLOCK_STALL=MS stalls the
 * first try of every sample for MS milliseconds between the first readings
 * and the marker, as a preempted daemon would be; MS:all stalls every try.
 */
static void fault_stall(unsigned try)
{
	const char *e = getenv("STACKMAPD_FAULT_CLOCK_STALL");
	char *end;
	unsigned long ms;

	if (!e)
		return;
	ms = strtoul(e, &end, 10);
	if (try == 0 || streq(end, ":all"))
		(void)nanosleep(&(struct timespec){ (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 },
				NULL);
}
#else
static void fault_stall(unsigned try)
{
	(void)try;
}
#endif

void recorder_clock_sample(struct recorder *rec)
{
	struct recorder_clock *c = &rec->clock;
	struct recorder_clock_pending best = { 0 };
	uint64_t best_width = UINT64_MAX;
	char text[64];
	unsigned try;
	int r = 0;

	/*
	 * The pair is as good as the readings around the marker are close: a
	 * daemon preempted between them would date every event by up to half
	 * the gap. Try again while they are far apart, keep the closest; the
	 * markers of the other tries are not pending and are passed over.
	 */
	for (try = 0; try < CLOCK_TRIES && best_width > CLOCK_BRACKET_NS; try++) {
		uint64_t real0, boot0, real1, boot1, mono;

		c->seq++;
		(void)snprintf(text, sizeof(text), CLOCK_MARKER_PREFIX "%" PRIu64, c->seq);
		real0 = now_ns(CLOCK_REALTIME);
		boot0 = now_ns(CLOCK_BOOTTIME);
		fault_stall(try);
		r = tracing_write_marker(rec->tracing, text);
		if (r < 0)
			break;
		boot1 = now_ns(CLOCK_BOOTTIME);
		real1 = now_ns(CLOCK_REALTIME);
		mono = now_ns(CLOCK_MONOTONIC);
		c->last_boot = boot1;
		c->real_off = diff(real1, boot1);
		c->boot_off = diff(boot1, mono);
		if (boot1 - boot0 < best_width) {
			best_width = boot1 - boot0;
			best = (struct recorder_clock_pending){
				.seq = c->seq,
				.pair = { 0, real0 + (real1 - real0) / 2, boot0 + (boot1 - boot0) / 2 },
			};
		}
	}
	if (r < 0)
		(void)log_ratelimit_warn_errno(&clock_rl, r, "cannot write the clock marker");
	if (!best.seq)
		return;
	if (best_width > CLOCK_BRACKET_NS)
		(void)log_ratelimit_warn_errno(&wide_rl, 0,
					       "the clock pair is uncertain by %" PRIu64 " ms after %u tries "
					       "(the daemon was preempted): dates may be off by half of it "
					       "until the next pair", best_width / 1000000, try);
	c->pending[best.seq % ARRAY_SIZE(c->pending)] = best;
}

void recorder_clock_tick(struct recorder *rec)
{
	struct recorder_clock *c = &rec->clock;
	uint64_t real = now_ns(CLOCK_REALTIME), boot = now_ns(CLOCK_BOOTTIME);
	uint64_t mono = now_ns(CLOCK_MONOTONIC);
	int64_t dr = diff(real, boot) - c->real_off, db = diff(boot, mono) - c->boot_off;

	/* a minute passed, the wall clock stepped, or the machine was suspended */
	if (boot - c->last_boot >= CLOCK_PERIOD_NS || dr > (int64_t)CLOCK_JUMP_NS ||
	    -dr > (int64_t)CLOCK_JUMP_NS || db > (int64_t)CLOCK_JUMP_NS)
		recorder_clock_sample(rec);
}

bool recorder_clock_marker(struct recorder *rec, const struct page_marker *m)
{
	struct recorder_clock_pending *p;
	uint8_t payload[WALLCLOCK_PAIR_SIZE];
	uint64_t seq;
	int r;

	if (!startswith(m->text, CLOCK_MARKER_PREFIX))
		return false;
	if (sscanf(m->text + strlen(CLOCK_MARKER_PREFIX), "%" SCNu64, &seq) != 1)
		return true;
	p = &rec->clock.pending[seq % ARRAY_SIZE(rec->clock.pending)];
	if (p->seq != seq)
		return true;	/* another run's marker, or too old */
	p->pair.trace = m->ts;
	p->seq = 0;
	wallclock_pair_encode(&p->pair, payload);
	r = archive_append_record(rec->archive, SEGMENT_REC_CLOCK, SEGMENT_NO_CPU, payload,
				  sizeof(payload));
	if (r < 0)
		(void)log_ratelimit_warn_errno(&clock_rl, r, "cannot write a CLOCK record");
	return true;
}
