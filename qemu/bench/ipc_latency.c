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

int main(void)
{
	double sys[ROUNDS], pp[ROUNDS];

	for (int i = 0; i < ROUNDS; i++) {
		sys[i] = syscall_ns();
		pp[i] = gki_pipe_round_trip_us(PINGS);
		if (pp[i] < 0)
			return 1;
	}
	gki_bench_report("getppid_ns", gki_median(sys, ROUNDS), "ns", NULL);
	gki_bench_report("pipe_round_trip_us", gki_median(pp, ROUNDS), "us", NULL);
	return 0;
}
