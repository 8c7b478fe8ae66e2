/* SPDX-License-Identifier: GPL-2.0 */
/*
 * liblog-writes: the log of Linux's dm-log-writes target in user space.
 * Reading and checking a log, the crash points it allows, their specs
 * (text), and replaying one onto a target.  For replay-log (see
 * ../replay-log/README.md), on the host and on the device.
 *
 * Nothing here exits or prints to stderr: a failing call returns a
 * negative errno, says what it was about in log->fault and why in
 * log->err, for the caller to print.
 */
#ifndef LOG_WRITES_H
#define LOG_WRITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The on-disk format, as drivers/md/dm-log-writes.c writes it (the kernel
 * keeps these structs in the .c file, not in a UAPI header); every field
 * is little-endian.  A "log sector" is super.sectorsize bytes, the logical
 * block size of the logged device.  The super block fills log sector 0;
 * from log sector 1 on, each entry is one log sector holding its struct
 * (and, for a mark, the mark's name right after it), then nr_sectors log
 * sectors of the data written, except for a discard, which has none.
 * entry.sector and entry.nr_sectors count log sectors, not 512-byte ones.
 */
#define LW_MAGIC	0x6a736677736872ULL
#define LW_VERSION	1
#define LW_FLUSH	0x01	/* REQ_PREFLUSH */
#define LW_FUA		0x02	/* REQ_FUA */
#define LW_DISCARD	0x04	/* REQ_OP_DISCARD */
#define LW_MARK		0x08	/* "dmsetup message ... mark NAME" */
#define LW_METADATA	0x10	/* REQ_META */
#define LW_FLAGS	0x1f		/* every flag the kernel sets */

struct lw_disk_super {
	uint64_t magic;
	uint64_t version;
	uint64_t nr_entries;
	uint32_t sectorsize;
};

struct lw_disk_entry {
	uint64_t sector;
	uint64_t nr_sectors;
	uint64_t flags;
	uint64_t data_len;	/* a mark's name length; 0 otherwise */
};

#define LW_NONE		UINT64_MAX	/* no such entry */
#define LW_ERR_LEN	256

/* What the last error was about; replay-log exits with 1, 2 or 3. */
enum lw_fault {
	LW_FAULT_NONE,
	LW_FAULT_INPUT,		/* a bad spec or argument */
	LW_FAULT_LOG,		/* a bad or truncated log, or reading it */
	LW_FAULT_TARGET,	/* writing the target, reading the base */
};

/* One entry of the log, as indexed by lw_log_open(). */
struct lw_entry {
	uint64_t pos;		/* byte offset of its header in the log */
	uint64_t sector;	/* where it writes, in log sectors */
	uint64_t nr_sectors;	/* in log sectors */
	uint32_t flags;
	uint32_t mark_len;
	char *mark;		/* a mark's name, NUL-terminated; else NULL */
	uint64_t prev_mark;	/* the last mark at or before it, or LW_NONE */
};

/* A range of the target, in bytes: [start, end). */
struct lw_range {
	uint64_t start, end;
};

struct lw_log {
	int fd;			/* not owned */
	uint32_t sectorsize;
	uint64_t size;		/* of the log, in bytes */
	uint64_t nr_entries;
	struct lw_entry *entries;
	/* The flush boundaries, increasing: 0 first, nr_entries last. */
	uint64_t *bounds;
	size_t nr_bounds;
	/*
	 * Where a write may tear (lw_set_tearable()), sorted, disjoint and
	 * not adjacent; none: anywhere.
	 */
	struct lw_range *tearable;
	size_t nr_tearable;
	enum lw_fault fault;
	char err[LW_ERR_LEN];
};

/*
 * What a crash point applies past its prefix: a whole entry, or a torn
 * one's sectors before its split (LW_FIRST) or from it on (LW_SECOND).
 */
enum lw_part { LW_WHOLE, LW_FIRST, LW_SECOND };

struct lw_pick {
	uint64_t index;
	enum lw_part part;
	/*
	 * A torn pick's split, in log sectors: from 1 to the entry's
	 * nr_sectors - 1 ("~T:first@K"), or 0 for its middle, nr_sectors / 2
	 * ("~T:first").
	 */
	uint64_t at;
};

/*
 * A crash point: entries [0, prefix), then picks, by increasing index;
 * at most one pick is torn (not LW_WHOLE).
 */
struct lw_point {
	uint64_t prefix;
	size_t nr_picks;
	struct lw_pick *picks;
};

struct lw_points {
	struct lw_point *v;
	size_t len, cap;
};

/* Reading a log. */
int lw_log_open(struct lw_log *log, int fd);
void lw_log_free(struct lw_log *log);
bool lw_has_data(const struct lw_entry *e);
bool lw_writes(const struct lw_entry *e);
uint64_t lw_next_bound(const struct lw_log *log, uint64_t p);
const char *lw_mark_before(const struct lw_log *log, uint64_t prefix);
size_t lw_flags_str(uint32_t flags, char *buf, size_t size);
int lw_print_name(FILE *out, const char *name, size_t len);
int lw_print_list(struct lw_log *log, FILE *out);
int lw_set_tearable(struct lw_log *log, FILE *in, const char *name);
bool lw_tearable(const struct lw_log *log, const struct lw_entry *e);

/* Crash points and their specs. */
int lw_point_parse(struct lw_log *log, const char *spec, struct lw_point *pt);
char *lw_point_str(const struct lw_point *pt);
int lw_point_cmp(const struct lw_point *a, const struct lw_point *b);
void lw_point_free(struct lw_point *pt);
int lw_points(struct lw_log *log, uint64_t seed, unsigned int subsets,
	      struct lw_points *pts);
/* A point's weight in a sample: a whole, untorn point weighs this. */
#define LW_WEIGHT	720720	/* divisible by 1 to 16 */
uint64_t lw_point_weight(const struct lw_log *log, const struct lw_point *pt);
int lw_sample(struct lw_log *log, struct lw_points *pts, size_t n,
	      uint64_t seed);
int lw_print_points(struct lw_log *log, const struct lw_points *pts,
		    FILE *out);
void lw_points_free(struct lw_points *pts);

/* Replaying one onto a target. */
int lw_copy_base(struct lw_log *log, int base_fd, int dev_fd);
int lw_replay(struct lw_log *log, const struct lw_point *pt, int dev_fd);

#endif /* LOG_WRITES_H */
