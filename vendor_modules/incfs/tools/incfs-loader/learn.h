/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader --learn-hot: a hot list learned from a mount's read log
 * (README.md, "Learning a hot list").
 */
#ifndef INCFS_LOADER_LEARN_H
#define INCFS_LOADER_LEARN_H

#include <stddef.h>
#include <stdint.h>

#include <linux/incrementalfs.h>

/* Blocks [first, first + count) of file ino, read in that order. */
struct ld_run {
	uint64_t ino;
	uint32_t first, count;
};

/*
 * The runs of @recs: each block once, at its first read, in the order of
 * the reads; a block right after the previous one of the same file joins
 * its run.  Returns their number, *runs (free() it) set, or -EX_INTERNAL.
 */
long learn_runs(const struct incfs_read_log_record *recs, size_t n, struct ld_run **runs);

/*
 * Read everything the read log of the mount at @mnt holds, and write the
 * hot lines of its regular files' blocks to @out (replaced whole, or left
 * as it was on failure).  0 or -EX_*.
 */
int learn_hot(const char *mnt, const char *out);

#endif /* INCFS_LOADER_LEARN_H */
