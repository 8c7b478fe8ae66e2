/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: the user-space data loader of incfs.  Shared declarations
 * of its parts: the app description (app.c), the transports (transport.c),
 * the namespace (names.c) and the block loop (load.c).  README.md has the
 * design.
 */
#ifndef INCFS_LOADER_H
#define INCFS_LOADER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LD_BS		4096
#define LD_BATCH	64	/* records per write() on .cmd */
#define LD_RUN		16	/* blocks per transport request */

/* ===== the app ===== */

enum ld_type { LD_DIR, LD_FILE, LD_LINK };

struct ld_entry {
	enum ld_type type;
	char *path;		/* relative to the mount root, no leading '/' */
	const char *name;	/* its last component */
	int parent;		/* entry of the parent directory; -1: the root */
	uint16_t mode;		/* permission bits */
	uint64_t size;		/* LD_FILE */
	uint64_t blob_off;	/* LD_FILE, manifest input: offset in the blob */
	char *src;		/* LD_FILE, --dir input: the source file */
	char *target;		/* LD_LINK: the existing path */
	int target_idx;		/* LD_LINK: its entry */
	uint64_t ino;		/* incfs inode number once declared */
	uint32_t nblocks;
	uint64_t first;		/* global index of block 0 */
	int src_fd;		/* --dir: open source, or -1 */
};

struct ld_hot {
	int file;		/* entry */
	uint32_t first, count;
};

struct ld_app {
	struct ld_entry *e;
	size_t n, cap;
	struct ld_hot *hot;
	size_t nhot, hotcap;
	bool from_dir;
	size_t nfiles, ndirs, nlinks;
	uint64_t total_blocks;
	uint64_t blob_need;	/* bytes of the blob the manifest uses */
};

int app_parse_manifest(struct ld_app *a, const char *path, bool hot_only);
int app_from_dir(struct ld_app *a, const char *dir);
int app_finish(struct ld_app *a);
int app_find(const struct ld_app *a, const char *path);
uint32_t ld_block_len(const struct ld_entry *f, uint32_t blk);

/* ===== transports ===== */

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
bool xport_ready(struct ld_xport *x, uint64_t off, uint64_t len);
int xport_pread(struct ld_xport *x, int fd, uint64_t off, void *buf, size_t len);
const uint8_t *xport_data(struct ld_xport *x, uint64_t off);

/* ===== the namespace ===== */

int names_declare(struct ld_app *a, const char *mnt, int cmd, uint64_t *created,
		  uint64_t *present);

/* ===== loading ===== */

struct ld_opts {
	const char *dir, *manifest, *blob, *hot;
	const char *mount, *attach, *backing;
	int timeout_ms;
	double rate, latency;
	bool serve, json, umount;
};

struct ld_stats {
	uint64_t names_created, names_present;
	uint64_t present_at_start, sent, sent_lz4, pending_served;
	double median_us;
	double seconds;
};

int load_run(struct ld_app *a, struct ld_xport *x, int cmd, const struct ld_opts *o,
	     struct ld_stats *st);
void load_report(const struct ld_app *a, const struct ld_xport *x, const struct ld_opts *o,
		 const struct ld_stats *st, const char *event, int code);

#endif /* INCFS_LOADER_H */
