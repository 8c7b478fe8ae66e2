/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the incfs benchmarks share: loading the module, and the block
 * contents they load (the same bytes for a block index in every program,
 * so their figures compare).
 */
#ifndef INCFS_BENCH_DATA_H
#define INCFS_BENCH_DATA_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/incrementalfs.h>

#define INCFS_BENCH_KO	"/modules/vendor/incfs/incrementalfs.ko"

/* Load incfs unless it is loaded; 0 or the shell's status. */
static inline int incfs_bench_load_module(void)
{
	return system("grep -q '^incrementalfs ' /proc/modules || insmod " INCFS_BENCH_KO);
}

/* Text-like, so that LZ4 has something to find: words from a dictionary. */
static inline void incfs_bench_block(uint8_t *buf, uint32_t index)
{
	static const char *const words[] = {
		"incremental ", "file ", "system ", "block ", "loader ", "read ",
		"pending ", "kernel ", "arm64 ", "page ", "cache ", "backing ",
		"android ", "vendor ", "module ", "symbol ",
	};
	const size_t bs = INCFS_DATA_FILE_BLOCK_SIZE;
	uint64_t x = 0x9e3779b97f4a7c15ULL * (index + 1);
	size_t n = 0;

	while (n < bs) {
		const char *w;
		size_t len;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w = words[x % 16];
		len = strlen(w);
		if (len > bs - n)
			len = bs - n;
		memcpy(buf + n, w, len);
		n += len;
	}
	memcpy(buf, &index, sizeof(index));
}

#endif /* INCFS_BENCH_DATA_H */
