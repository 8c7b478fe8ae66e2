/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: declaring the app's names in the mount (names.c).
 */
#ifndef INCFS_LOADER_NAMES_H
#define INCFS_LOADER_NAMES_H

#include <stdint.h>

#include "app.h"

int names_declare(struct ld_app *a, const char *mnt, int cmd, uint64_t *created,
		  uint64_t *present);

#endif /* INCFS_LOADER_NAMES_H */
