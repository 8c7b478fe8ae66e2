/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: the command line, as main.c parses it (README.md, "Usage").
 */
#ifndef INCFS_LOADER_OPTIONS_H
#define INCFS_LOADER_OPTIONS_H

#include <stdbool.h>

struct ld_opts {
	const char *dir, *manifest, *blob, *hot, *learn_hot;
	const char *mount, *attach, *backing;
	int timeout_ms;
	long read_log_records;	/* -1: the module's default */
	double rate, latency;
	bool serve, json, umount;
};

#endif /* INCFS_LOADER_OPTIONS_H */
