/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The backing image's layout, for the guest programs that read and write
 * images byte by byte (incfs_images, incfs_fuzz): the records and blockmap
 * entries of vendor_modules/incfs/format.h, little-endian and packed, with
 * the byte helpers and CRCs they are checked with.
 *
 * It is the tests' own statement of the format, written from the README's
 * image layout and not shared with the module: a test that included
 * format.h would follow a change to it instead of catching it.  The sizes
 * below are the on-disk ones and must never change.
 */
#ifndef INCFS_LAYOUT_H
#define INCFS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/incrementalfs.h>	/* INCFS_DATA_FILE_BLOCK_SIZE, the magic */

#ifndef __packed
#define __packed	__attribute__((packed))
#endif

struct d_super {
	uint64_t magic;
	uint64_t version;
	uint16_t sb_size;
	uint32_t flags;
	uint64_t first_md;
	uint16_t block_size;
} __packed;

/* Every metadata record starts with it. */
struct d_hdr {
	uint8_t type;
	uint16_t size;
	uint32_t crc;		/* of the record with crc and next zero */
	uint64_t next;
	uint64_t prev;
} __packed;

struct d_inode {
	struct d_hdr h;
	uint64_t ino;
	uint64_t size;
	uint16_t mode;
	uint32_t flags;
} __packed;

struct d_blockmap {
	struct d_hdr h;
	uint64_t ino;
	uint64_t base;
	uint32_t count;
} __packed;

struct d_dir_action {
	struct d_hdr h;
	uint64_t dir;
	uint64_t child;
	uint8_t type;
	uint8_t name_len;
	char name[255];
} __packed;

/* A blockmap entry: a 48-bit data offset, the stored size, flags, CRC. */
struct d_bme {
	uint32_t off_lo;
	uint16_t off_hi;
	uint16_t size;
	uint16_t flags;
	uint32_t crc;
} __packed;

_Static_assert(sizeof(struct d_super) == 32, "superblock");
_Static_assert(sizeof(struct d_hdr) == 23, "record header");
_Static_assert(sizeof(struct d_inode) == 45, "inode record");
_Static_assert(sizeof(struct d_blockmap) == 43, "blockmap record");
_Static_assert(sizeof(struct d_dir_action) == 296, "dir action record");
_Static_assert(sizeof(struct d_bme) == 14, "blockmap entry");

enum { MD_INODE = 1, MD_BLOCKMAP = 2, MD_DIR_ACTION = 3 };
enum { DA_ADD = 1, DA_REMOVE = 2 };
#define BME_LZ4		1

#define SB_SIZE		sizeof(struct d_super)
#define HDR		sizeof(struct d_hdr)
#define BME		sizeof(struct d_bme)
#define OFF_FIRST	offsetof(struct d_super, first_md)
#define OFF_SIZE	offsetof(struct d_hdr, size)
#define OFF_CRC		offsetof(struct d_hdr, crc)
#define OFF_NEXT	offsetof(struct d_hdr, next)
#define OFF_PREV	offsetof(struct d_hdr, prev)
#define OFF_I_NO	offsetof(struct d_inode, ino)
#define OFF_I_SIZE	offsetof(struct d_inode, size)
#define OFF_I_MODE	offsetof(struct d_inode, mode)
#define OFF_I_FLAGS	offsetof(struct d_inode, flags)
#define OFF_M_INO	offsetof(struct d_blockmap, ino)
#define OFF_M_BASE	offsetof(struct d_blockmap, base)
#define OFF_M_COUNT	offsetof(struct d_blockmap, count)
#define OFF_DA_DIR	offsetof(struct d_dir_action, dir)
#define OFF_DA_CHILD	offsetof(struct d_dir_action, child)
#define OFF_DA_TYPE	offsetof(struct d_dir_action, type)
#define OFF_DA_LEN	offsetof(struct d_dir_action, name_len)
#define OFF_DA_NAME	offsetof(struct d_dir_action, name)
#define OFF_E_SIZE	offsetof(struct d_bme, size)
#define OFF_E_FLAGS	offsetof(struct d_bme, flags)
#define OFF_E_CRC	offsetof(struct d_bme, crc)

/* ===== bytes ===== */

static inline uint64_t get_le(const unsigned char *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static inline void put_le(unsigned char *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = v >> (8 * i);
}

static inline void put16(unsigned char *p, uint16_t v)
{
	put_le(p, v, 2);
}

static inline void put32(unsigned char *p, uint32_t v)
{
	put_le(p, v, 4);
}

static inline void put64(unsigned char *p, uint64_t v)
{
	put_le(p, v, 8);
}

/* ===== CRCs ===== */

/*
 * The kernel's crc32_le(), table-driven: the fuzzer checks thousands of
 * blocks.  gki_crc32_le() (gki_test.h) is the slow reference it is tested
 * against.
 */
static inline uint32_t crc32le(uint32_t crc, const void *buf, size_t len)
{
	static uint32_t table[256];
	const unsigned char *p = buf;

	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/*
 * A record's CRC: of all its @size bytes (as its size field says, even when
 * that is not its type's size), its crc and next fields taken as 0; 0 for a
 * size shorter than a header.  @rec must hold @size bytes.
 */
static inline uint32_t md_crc(const unsigned char *rec, size_t size)
{
	unsigned char h[HDR];

	if (size < HDR)
		return 0;
	memcpy(h, rec, HDR);
	memset(h + OFF_CRC, 0, 4);
	memset(h + OFF_NEXT, 0, 8);
	return crc32le(crc32le(0, h, HDR), rec + HDR, size - HDR);
}

/* ===== records and blocks ===== */

/* The size of a record of @type; 0 for a type the format does not have. */
static inline size_t rec_size(uint8_t type)
{
	switch (type) {
	case MD_INODE:
		return sizeof(struct d_inode);
	case MD_BLOCKMAP:
		return sizeof(struct d_blockmap);
	case MD_DIR_ACTION:
		return sizeof(struct d_dir_action);
	}
	return 0;
}

static inline uint32_t nblocks_of(uint64_t size)
{
	return (size + INCFS_DATA_FILE_BLOCK_SIZE - 1) / INCFS_DATA_FILE_BLOCK_SIZE;
}

/* The length of block @i of a file of @size bytes; 0 past its end. */
static inline uint32_t block_len(uint64_t size, uint32_t i)
{
	uint64_t start = (uint64_t)i * INCFS_DATA_FILE_BLOCK_SIZE;

	if (start >= size)
		return 0;
	return size - start < INCFS_DATA_FILE_BLOCK_SIZE ? size - start :
	       INCFS_DATA_FILE_BLOCK_SIZE;
}

#endif /* INCFS_LAYOUT_H */
