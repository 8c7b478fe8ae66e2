/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: delivering the blocks and reporting progress (load.c).
 */
#ifndef INCFS_LOADER_LOAD_H
#define INCFS_LOADER_LOAD_H

#include <stdint.h>

#include "app.h"
#include "options.h"
#include "transport.h"

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

#endif /* INCFS_LOADER_LOAD_H */
