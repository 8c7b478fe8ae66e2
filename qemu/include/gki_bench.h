/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for guest benchmark programs run by `./build/gki bench`: a
 * monotonic clock, a median, and the 'BENCH {json}' line the host collects.
 */
#ifndef GKI_BENCH_H
#define GKI_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

#endif /* GKI_BENCH_H */
