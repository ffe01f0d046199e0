/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * smload: a load generator for tests and benchmarks. Each worker thread
 * ping-pongs a byte over a pipe pair (sched_switch, sched_wakeup) and opens,
 * stats and closes files and sockets (kmem_cache_alloc/kfree with varied
 * stacks). Runs for -t SECONDS or -n ITERATIONS per thread, as fast as it
 * can or at most -r RATE iterations per second per thread.
 *
 *   smload [-j THREADS] [-t SECONDS] [-n ITERATIONS] [-r RATE] [-q]
 *
 * Prints "smload: N iterations" at the end unless -q.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double seconds = 1.0;
static long iterations;
static double rate;		/* iterations per second per thread; 0: as fast as possible */
static atomic_long total;
static atomic_bool stop;

static void *pinger(void *arg)
{
	int *fds = arg;
	char c = 0;

	while (read(fds[0], &c, 1) == 1)
		if (write(fds[3], &c, 1) != 1)
			break;
	return NULL;
}

static void *worker(void *arg)
{
	int p1[2], p2[2], fds[4];
	pthread_t t;
	struct timespec start;
	long n = 0;
	char c = 1;

	(void)arg;
	if (pipe(p1) || pipe(p2))
		return NULL;
	fds[0] = p1[0];
	fds[1] = p1[1];
	fds[2] = p2[0];
	fds[3] = p2[1];
	pthread_create(&t, NULL, pinger, fds);
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!atomic_load(&stop) && (!iterations || n < iterations)) {
		struct stat st;
		int fd, s;

		if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1)
			break;
		fd = open("/proc/self/stat", O_RDONLY);
		if (fd >= 0) {
			(void)fstat(fd, &st);
			close(fd);
		}
		s = socket(AF_UNIX, SOCK_DGRAM, 0);
		if (s >= 0)
			close(s);
		n++;
		if (rate > 0 && n % 16 == 0) {
			/* paced: sleep until iteration n is due */
			double due = (double)n / rate;
			struct timespec ts = start;

			ts.tv_sec += (time_t)due;
			ts.tv_nsec += (long)((due - (double)(time_t)due) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
	close(p1[1]);
	pthread_join(t, NULL);
	close(p1[0]);
	close(p2[0]);
	close(p2[1]);
	atomic_fetch_add(&total, n);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 2, opt;
	bool quiet = false;
	pthread_t *tids;

	while ((opt = getopt(argc, argv, "j:t:n:r:q")) != -1) {
		switch (opt) {
		case 'j':
			threads = atoi(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'n':
			iterations = atol(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		default:
			fprintf(stderr, "usage: smload [-j THREADS] [-t SECONDS] [-n ITERATIONS] [-r RATE] [-q]\n");
			return 2;
		}
	}
	if (threads < 1)
		threads = 1;
	tids = calloc((size_t)threads, sizeof(*tids));
	if (!tids)
		return 1;
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, NULL);
	if (!iterations) {
		struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };

		nanosleep(&ts, NULL);
		atomic_store(&stop, true);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	if (!quiet)
		printf("smload: %ld iterations\n", atomic_load(&total));
	free(tids);
	return 0;
}
