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
 *
 *   smload -H N [-t SECONDS]
 *
 * instead holds N pipes (kernel objects of one allocation path,
 * alloc_pipe_info) for SECONDS (default 1), between a quiet 0.3 s before
 * and after, and prints the CLOCK_REALTIME nanoseconds of each step:
 * "smload: opening N", "smload: opened N", "smload: closing N",
 * "smload: closed N", each followed by the time.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
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

static void say(const char *what, long n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("smload: %s %ld %lld\n", what, n, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	fflush(stdout);
}

static void pause_for(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* -H: hold n pipes for seconds. */
static int hold(long n)
{
	struct rlimit rl;
	int *fds = calloc((size_t)n * 2, sizeof(int));

	if (!fds)
		return 1;
	/* two descriptors a pipe */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)(2 * n + 16)) {
		rl.rlim_cur = (rlim_t)(2 * n + 16);
		if (rl.rlim_max < rl.rlim_cur)
			rl.rlim_max = rl.rlim_cur;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			perror("smload: setrlimit");
			return 1;
		}
	}
	pause_for(0.3);
	say("opening", n);
	for (long i = 0; i < n; i++)
		if (pipe(fds + 2 * i) < 0) {
			perror("smload: pipe");
			return 1;
		}
	say("opened", n);
	pause_for(seconds);
	say("closing", n);
	for (long i = 0; i < 2 * n; i++)
		close(fds[i]);
	say("closed", n);
	pause_for(0.3);
	free(fds);
	return 0;
}

int main(int argc, char **argv)
{
	long hold_pipes = 0;
	int threads = 2, opt;
	bool quiet = false;
	pthread_t *tids;

	while ((opt = getopt(argc, argv, "j:t:n:r:qH:")) != -1) {
		switch (opt) {
		case 'H':
			hold_pipes = atol(optarg);
			break;
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
			fprintf(stderr, "usage: smload [-j THREADS] [-t SECONDS] [-n ITERATIONS] [-r RATE] [-q]\n"
					"       smload -H PIPES [-t SECONDS]\n");
			return 2;
		}
	}
	if (hold_pipes > 0)
		return hold(hold_pipes);
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
