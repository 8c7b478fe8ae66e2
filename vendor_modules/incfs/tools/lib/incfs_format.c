// SPDX-License-Identifier: GPL-2.0
/*
 * The module's format and name-rules code, compiled for user space: the
 * one implementation the kernel uses (see ../../format.h), with
 * kerncompat.h in place of the kernel headers, and the kernel's CRC-32.
 */
#include "../../format.c"
#include "../../name_rules.c"

static u32 crc_table[256];

/* Filled before main(), so that threads can share it without locking. */
__attribute__((constructor)) static void crc_init(void)
{
	u32 c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320 : c >> 1;
		crc_table[i] = c;
	}
}

u32 crc32_le(u32 crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
