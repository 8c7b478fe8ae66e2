// SPDX-License-Identifier: GPL-2.0
/*
 * Baseline latencies other benchmarks compare against: a trivial system
 * call, and a one-byte pipe ping-pong between two processes (the yardstick
 * for any wake-up round trip, such as an incfs pending read).
 */
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gki_bench.h"

#define ROUNDS	7
#define PINGS	2000
#define CALLS	200000

static double syscall_ns(void)
{
	double t = gki_now_ns();

	for (int i = 0; i < CALLS; i++)
		syscall(SYS_getppid);
	return (gki_now_ns() - t) / CALLS;
}

static double pipe_round_trip_us(void)
{
	int ping[2], pong[2];
	char c = 0;
	pid_t pid;
	double t;

	if (pipe(ping) || pipe(pong))
		exit(1);
	pid = fork();
	if (pid < 0)
		exit(1);
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
	for (int i = 0; i < PINGS; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			exit(1);
	t = (gki_now_ns() - t) / PINGS / 1e3;
	close(ping[1]);
	close(pong[0]);
	waitpid(pid, NULL, 0);
	return t;
}

int main(void)
{
	double sys[ROUNDS], pp[ROUNDS];

	for (int i = 0; i < ROUNDS; i++) {
		sys[i] = syscall_ns();
		pp[i] = pipe_round_trip_us();
	}
	gki_bench_report("getppid_ns", gki_median(sys, ROUNDS), "ns", NULL);
	gki_bench_report("pipe_round_trip_us", gki_median(pp, ROUNDS), "us", NULL);
	return 0;
}
