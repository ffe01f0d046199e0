/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Real-time priority around a lossless stack-map reset (daemon/generations.c)
 * is held for the few system calls between the markers, never over the
 * read of the whole text map that a kernel without the binary export
 * needs for the final snapshot: a thread samples the resetting thread's
 * policy while it reads a map of 60,000 stacks from a temporary directory
 * that plays tracefs. Needs CAP_SYS_NICE and two CPUs (skipped without,
 * failing with CI=true).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "archive.h"
#include "buf.h"
#include "config.h"
#include "generations.h"
#include "helpers.h"
#include "log.h"
#include "tracing.h"
#include "util.h"

static pid_t resetter;
static atomic_bool sampling, started;
static uint64_t longest_rt_usec, rt_samples, samples;

static cpu_set_t sampler_cpu;

static void *sample(void *arg)
{
	uint64_t since = 0;

	(void)arg;
	/* on another CPU than the resetter's: a real-time thread would keep it from running */
	CHECK(sched_setaffinity(0, sizeof(sampler_cpu), &sampler_cpu) == 0);
	while (atomic_load(&sampling)) {
		int policy = sched_getscheduler(resetter);
		uint64_t now = now_usec(CLOCK_MONOTONIC);

		if (++samples == 100)
			atomic_store(&started, true);
		if (policy >= 0 && (policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO) {
			rt_samples++;
			if (!since)
				since = now;
			longest_rt_usec = MAX(longest_rt_usec, now - since);
		} else {
			since = 0;
		}
	}
	return NULL;
}

/* A test that cannot run: a failure with CI=true, else a skip. */
static int skip_status(void)
{
	const char *ci = getenv("CI");

	return ci && streq(ci, "true") ? 1 : 77;
}

static void put(const char *dir, const char *name, const void *data, size_t len)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_close_ int fd = -1;

	CHECK(strprintf(&p, "%s/%s", dir, name) >= 0);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && write_all(fd, data, len) >= 0);
}

static int flush_nothing(void *userdata, const struct segment_generation *boundary,
			 void (*cont)(struct generations *g), struct generations *g)
{
	(void)userdata, (void)boundary, (void)cont, (void)g;
	return 0;
}

static void rotate_nothing(void *userdata, const char *why)
{
	(void)userdata, (void)why;
}

int main(void)
{
	static const struct generations_ops ops = { .flush = flush_nothing,
						    .rotate = rotate_nothing };
	_cleanup_free_ char *dir = NULL, *opts = NULL, *adir = NULL;
	struct archive *a = NULL;
	struct sched_param rt = { .sched_priority = 1 }, normal = { 0 };
	struct generations *g = NULL;
	struct tracing *t = NULL;
	struct buf map = { 0 };
	sd_event *e = NULL;
	struct config c;
	pthread_t th;
	uint64_t t0, took;

	log_set_max_level(LOG_ERR);
	if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0) {
		printf("test-reset-priority: SKIP: real-time priority refused (%m)\n");
		return skip_status();
	}
	CHECK(sched_setscheduler(0, SCHED_OTHER, &normal) == 0);
	{
		cpu_set_t allowed, mine;
		int first = -1, second = -1;

		CHECK(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
		for (int cpu = 0; cpu < CPU_SETSIZE && second < 0; cpu++)
			if (CPU_ISSET(cpu, &allowed)) {
				if (first < 0)
					first = cpu;
				else
					second = cpu;
			}
		if (second < 0) {
			printf("test-reset-priority: SKIP: one CPU only\n");
			return skip_status();
		}
		CPU_ZERO(&mine);
		CPU_SET(first, &mine);
		CPU_ZERO(&sampler_cpu);
		CPU_SET(second, &sampler_cpu);
		CHECK(sched_setaffinity(0, sizeof(mine), &mine) == 0);
	}

	dir = test_tmpdir();
	CHECK(strprintf(&opts, "%s/options", dir) >= 0 && mkdir(opts, 0755) == 0);
	put(dir, "options/stackmap", "1\n", 2);
	put(dir, "tracing_on", "1\n", 2);
	put(dir, "trace_marker", "", 0);
	/* a text map only (no stack_map_bin): the final snapshot reads all of it */
	for (unsigned id = 1; id <= 60000; id++) {
		CHECK(buf_printf(&map, "stack_id %u [ref 1, depth 8]\n", id) == 0);
		for (unsigned k = 0; k < 8; k++)
			CHECK(buf_printf(&map, "  [%u] fn_%x_%u+0x10/0x40\n", k, id, k) == 0);
		CHECK(buf_printf(&map, "\n") == 0);
	}
	put(dir, "stack_map", map.data, map.len);
	buf_done(&map);

	CHECK(config_init(&c) == 0);
	c.stackmap = CONFIG_STACKMAP_ON;
	c.reset_mode = CONFIG_RESET_LOSSLESS;
	c.reset_realtime = true;
	free(c.socket_path);
	c.socket_path = NULL;
	CHECK(sd_event_default(&e) >= 0);
	CHECK(tracing_open(dir, &c, &t) == 0);
	/* GENERATION records go to an archive without a segment: nowhere */
	CHECK(strprintf(&adir, "%s/archive", dir) >= 0);
	{
		struct archive_params ap = { .directory = adir, .nr_cpus = 1 };

		CHECK(archive_open(&ap, &a) == 0);
	}
	if (t && a) {
		struct generations_params p = { .tracing = t, .archive = a, .event = e, .cfg = &c,
						.ops = &ops };

		CHECK(generations_new(&p, &g) == 0);
	}
	if (g) {
		resetter = (pid_t)syscall(SYS_gettid);
		atomic_store(&sampling, true);
		CHECK(pthread_create(&th, NULL, sample, NULL) == 0);
		/* sampling before the reset begins */
		for (int i = 0; i < 10000 && !atomic_load(&started); i++)
			(void)usleep(1000);
		t0 = now_usec(CLOCK_MONOTONIC);
		CHECK(generations_reset(g, NULL, NULL) == 0);
		took = now_usec(CLOCK_MONOTONIC) - t0;
		atomic_store(&sampling, false);
		CHECK(pthread_join(th, NULL) == 0);
		printf("test-reset-priority: the reset took %" PRIu64 " us; real-time in %" PRIu64
		       " of %" PRIu64 " samples, %" PRIu64 " us at most in a row\n", took, rt_samples,
		       samples, longest_rt_usec);
		CHECK_MSG(took > 5000, "the text map read in %" PRIu64 " us: too fast to tell", took);
		/* the reset's own calls on a file: well under a millisecond, a busy machine aside */
		CHECK_MSG(longest_rt_usec < took / 4, "real-time priority held for %" PRIu64 " us of "
			  "the %" PRIu64 " us reset: over the text map's read", longest_rt_usec, took);
		CHECK(sched_getscheduler(0) == SCHED_OTHER);
		generations_stop(g, false);
		generations_restore(g);
		g = generations_free(g);
	}
	t = tracing_free(t);
	a = archive_free(a);
	sd_event_unref(e);
	config_done(&c);
	test_rmtree(dir);
	return tests_done("test-reset-priority");
}
