/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for guest benchmark programs run by `./build/gki bench`: failing
 * with a message, dropping the page cache, a monotonic clock, a median,
 * the 'BENCH {json}' line the host collects, and the pipe ping-pong that
 * wake-up round trips are compared with.
 */
#ifndef GKI_BENCH_H
#define GKI_BENCH_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A step that failed: what, with errno's text; the benchmark exits 1. */
static inline _Noreturn void gki_die(const char *what)
{
	perror(what);
	exit(1);
}

/* Write everything back, then empty the page cache: reads go to disk. */
static inline void gki_drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd < 0 || write(fd, "3", 1) != 1)
		gki_die("/proc/sys/vm/drop_caches");
	close(fd);
}

static inline double gki_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int gki_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of n samples; sorts them in place. */
static inline double gki_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), gki_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * One figure.  baseline, when not NULL, names the figure measured in the
 * same run that this one is compared with (the host prints the ratio).
 */
static inline void gki_bench_report(const char *name, double value, const char *unit,
				    const char *baseline)
{
	printf("BENCH {\"name\": \"%s\", \"value\": %.6g, \"unit\": \"%s\"", name, value, unit);
	if (baseline)
		printf(", \"baseline\": \"%s\"", baseline);
	printf("}\n");
	fflush(stdout);
}

/*
 * Mean round trip, in µs, of a one-byte pipe ping-pong between this process
 * and a child, over rounds round trips; -1 on error.
 */
static inline double gki_pipe_round_trip_us(int rounds)
{
	int ping[2], pong[2], i = 0;
	char c = 0;
	pid_t pid;
	double t;

	if (pipe(ping) || pipe(pong))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(ping[1]);
		close(pong[0]);
		while (read(ping[0], &c, 1) == 1 && write(pong[1], &c, 1) == 1)
			;
		_exit(0);
	}
	close(ping[0]);
	close(pong[1]);
	t = gki_now_ns();
	for (; i < rounds; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			break;
	t = (gki_now_ns() - t) / rounds / 1e3;
	/* The child sees EOF and exits. */
	close(ping[1]);
	close(pong[0]);
	waitpid(pid, NULL, 0);
	return i == rounds ? t : -1;
}

#endif /* GKI_BENCH_H */
