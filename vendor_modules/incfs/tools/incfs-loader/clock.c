// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: the monotonic clock and sleeping on it.
 */
#include <errno.h>
#include <time.h>

#include "clock.h"

double ld_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void ld_sleep(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
