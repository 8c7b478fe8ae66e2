/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: the transports (transport.c), where the blob's bytes come
 * from, through the rate limit.
 */
#ifndef INCFS_LOADER_TRANSPORT_H
#define INCFS_LOADER_TRANSPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LD_RUN		16	/* blocks per transport request */

struct ld_xport {
	bool stream;		/* a pipe or socket: read in order into buf */
	int fd;			/* the blob; -1 for --dir */
	double rate;		/* bytes/s; 0: unlimited */
	double latency;		/* seconds per request or chunk */
	double tokens, cap, last;
	_Atomic uint64_t pulled;	/* bytes taken from the transport */
	/* stream only */
	uint8_t *buf;
	uint64_t need;
	_Atomic uint64_t received;
	_Atomic int err;	/* -errno, -ENODATA: ended before need */
	int efd;		/* eventfd: the reader thread made progress */
	pthread_t thread;
	bool started;
};

int xport_open(struct ld_xport *x, const char *spec, uint64_t need);
int xport_start(struct ld_xport *x);
double xport_wait_time(struct ld_xport *x, size_t n);
uint64_t xport_available(struct ld_xport *x);
int xport_pread(struct ld_xport *x, int fd, uint64_t off, void *buf, size_t len,
		const char *path, uint32_t last_blk);
const uint8_t *xport_data(struct ld_xport *x, uint64_t off);

#endif /* INCFS_LOADER_TRANSPORT_H */
