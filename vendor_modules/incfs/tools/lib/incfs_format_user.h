/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space copy of the incfs on-disk format (vendor_modules/incfs/format.h):
 * packed little-endian structures, sizes and limits.  Private to
 * libincfs-image.
 */
#ifndef INCFS_FORMAT_USER_H
#define INCFS_FORMAT_USER_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>

#define IF_MAGIC		0x5346434e49ULL
#define IF_VERSION		1
#define IF_BS			4096
#define IF_MAX_NAME_LEN		255
#define IF_MAX_FILE_SIZE	(64ULL << 30)
#define IF_MAX_DATA_OFFSET	((1ULL << 48) - 1)
#define IF_MAX_FILES		1000		/* the root included */
#define IF_ROOT_INO		2
#define IF_MAX_INO		((1ULL << 32) - 1)	/* format.h: INCFS_MAX_INO */
#define IF_BME_LZ4		1

enum { IF_MD_INODE = 1, IF_MD_BLOCK_MAP = 2, IF_MD_DIR_ACTION = 3 };
enum { IF_DA_ADD = 1, IF_DA_REMOVE = 2 };

struct if_md_header {
	uint8_t type;
	uint16_t size;
	uint32_t crc;		/* with crc and next zero */
	uint64_t next;
	uint64_t prev;
} __attribute__((packed));

struct if_super {
	uint64_t magic;
	uint64_t version;
	uint16_t sb_size;
	uint32_t flags;
	uint64_t first_md;
	uint16_t block_size;
} __attribute__((packed));

struct if_inode {
	struct if_md_header h;
	uint64_t ino;
	uint64_t size;
	uint16_t mode;
	uint32_t flags;
} __attribute__((packed));

struct if_blockmap {
	struct if_md_header h;
	uint64_t ino;
	uint64_t base;
	uint32_t count;
} __attribute__((packed));

struct if_dir_action {
	struct if_md_header h;
	uint64_t dir;
	uint64_t child;
	uint8_t type;
	uint8_t name_len;
	char name[IF_MAX_NAME_LEN];
} __attribute__((packed));

struct if_bme {
	uint32_t off_lo;
	uint16_t off_hi;
	uint16_t size;
	uint16_t flags;
	uint32_t crc;
} __attribute__((packed));

union if_record {
	struct if_md_header h;
	struct if_inode inode;
	struct if_blockmap bm;
	struct if_dir_action da;
};

_Static_assert(sizeof(struct if_super) == 32, "superblock");
_Static_assert(sizeof(struct if_md_header) == 23, "record header");
_Static_assert(sizeof(struct if_inode) == 45, "inode record");
_Static_assert(sizeof(struct if_blockmap) == 43, "blockmap record");
_Static_assert(sizeof(struct if_dir_action) == 296, "dir action record");
_Static_assert(sizeof(struct if_bme) == 14, "blockmap entry");

#define IF_OFF_FIRST_MD		offsetof(struct if_super, first_md)
#define IF_OFF_NEXT		offsetof(struct if_md_header, next)
#define IF_OFF_CRC		offsetof(struct if_md_header, crc)

/* The kernel's crc32_le(0, ...): reflected CRC-32, seed 0, no inversion. */
uint32_t incfs_crc32(uint32_t crc, const void *buf, size_t len);

#endif /* INCFS_FORMAT_USER_H */
