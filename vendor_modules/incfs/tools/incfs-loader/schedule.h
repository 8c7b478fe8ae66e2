/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: which blocks go next (schedule.c).  Decided without I/O,
 * from the app, the blocks the image has (present at the start, or sent),
 * the pending reads seen on .cmd and how much of the blob can be read.
 */
#ifndef INCFS_LOADER_SCHEDULE_H
#define INCFS_LOADER_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app.h"

enum ld_kind {
	LD_PENDING,		/* a block a read waits for */
	LD_HOT,			/* from the hot list */
	LD_BULK,		/* any other block */
};

/* Blocks [blk, blk + count) of the file of entry file, to send next. */
struct ld_run {
	enum ld_kind kind;
	int file;
	uint32_t blk, count;
	double asked;		/* LD_PENDING: when the read was seen */
};

struct ld_want {		/* a pending read not served yet */
	int file;
	uint32_t blk;
	double asked;
};

struct ld_sched {
	const struct ld_app *a;
	uint8_t *have;		/* per global block: present or sent */
	uint64_t remaining;	/* blocks not in have */
	struct ld_want *want;	/* in the order they were seen */
	size_t nwant, wantcap;
	size_t hot_pos;		/* the hot list's cursor: entry, block in it */
	uint32_t hot_off;
	int *order;		/* files, in bulk order */
	size_t nord;
	size_t ord_pos;		/* the bulk cursor: file, block; files before it are done */
	uint32_t ord_blk;
};

/* What sched_want() did with a pending read. */
enum { LD_WANT_QUEUED, LD_WANT_SENT, LD_WANT_NOT_OURS };

int sched_init(struct ld_sched *s, const struct ld_app *a, bool blob_order);
void sched_free(struct ld_sched *s);
bool sched_has(const struct ld_sched *s, int file, uint32_t blk);
bool sched_have(struct ld_sched *s, int file, uint32_t blk);
int sched_want(struct ld_sched *s, int file, uint32_t blk, double asked);
bool sched_next(struct ld_sched *s, uint32_t limit, uint64_t avail, struct ld_run *r);

#endif /* INCFS_LOADER_SCHEDULE_H */
