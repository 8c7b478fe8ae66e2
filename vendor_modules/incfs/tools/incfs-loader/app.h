/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: the app, what to load (app.c): its entries in the order
 * they are declared, and the hot list.
 */
#ifndef INCFS_LOADER_APP_H
#define INCFS_LOADER_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/incrementalfs.h>

#define LD_BS		INCFS_DATA_FILE_BLOCK_SIZE

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
void app_free(struct ld_app *a);
int app_find(const struct ld_app *a, const char *path);
uint32_t ld_block_len(const struct ld_entry *f, uint32_t blk);
uint64_t ld_blob_off(const struct ld_entry *f, uint32_t blk);

#endif /* INCFS_LOADER_APP_H */
