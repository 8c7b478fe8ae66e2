/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: time, for the rate limit, latencies and progress.
 */
#ifndef INCFS_LOADER_CLOCK_H
#define INCFS_LOADER_CLOCK_H

double ld_now(void);		/* monotonic seconds */
void ld_sleep(double s);	/* s seconds, resumed after signals */

#endif /* INCFS_LOADER_CLOCK_H */
