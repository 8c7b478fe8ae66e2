/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces the shared format code (../../format.[ch],
 * ../../name_rules.[ch]) uses, for user space: just enough for that code
 * to build unchanged here, and nothing it does not use.
 */
#ifndef INCFS_KERNCOMPAT_H
#define INCFS_KERNCOMPAT_H

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <linux/incrementalfs.h>
#include <linux/types.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef unsigned short umode_t;

#ifndef __packed
#define __packed		__attribute__((packed))
#endif

#define cpu_to_le16(x)		htole16(x)
#define cpu_to_le32(x)		htole32(x)
#define cpu_to_le64(x)		htole64(x)
#define le16_to_cpu(x)		le16toh(x)
#define le32_to_cpu(x)		le32toh(x)
#define le64_to_cpu(x)		le64toh(x)

#define lower_32_bits(n)	((u32)((n) & 0xffffffff))
#define upper_32_bits(n)	((u32)(((n) >> 16) >> 16))
#define DIV_ROUND_UP_ULL(n, d)	(((unsigned long long)(n) + (d) - 1) / (d))
#define round_up(x, y)		((((x) - 1) | ((__typeof__(x))(y) - 1)) + 1)
#define min_t(type, a, b)	((type)(a) < (type)(b) ? (type)(a) : (type)(b))

/* The kernel's crc32_le(): reflected CRC-32, no inversion (crc32.c). */
u32 crc32_le(u32 crc, const unsigned char *p, size_t len);

#endif /* INCFS_KERNCOMPAT_H */
