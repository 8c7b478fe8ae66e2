/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs on-disk format: the layout of the backing file, and the pure code
 * that encodes and checks it (no VFS, no locks; unit-tested by KUnit).
 *
 * A backing file is a superblock followed by an append-only mix of
 * metadata records, blockmap areas and data blocks.  The records form a
 * chain: the superblock holds the offset of the first one, each record the
 * offset of the next (0 at the end).  A record is written first and linked
 * second, so a crash leaves either an unlinked record or a link to a record
 * that was cut off; both are treated as the end of the chain.
 *
 *	+------------------+
 *	| incfs_super_block|--+   s_first_md_offset
 *	+------------------+  |
 *	| incfs_inode      |<-+--+   h_next_md_offset
 *	+------------------+     |
 *	| blockmap area    |<-+  |   m_base_offset: one incfs_blockmap_entry
 *	+------------------+  |  |   per block of the file
 *	| incfs_blockmap   |--+<-+--+
 *	+------------------+        |
 *	| data blocks ...  |        |   found through the blockmap entries
 *	+------------------+        |
 *	| incfs_dir_action |<-------+
 *	+------------------+
 *
 * All integers are little-endian and all structures packed; the layouts
 * are those of the 2019 posting.
 *
 * This header and format.c, name_rules.h and name_rules.c are the one
 * implementation of the format: they build unchanged in the module and in
 * the user-space tools, where tools/lib/kerncompat.h stands in for the
 * kernel headers.
 */
#ifndef _INCFS_FORMAT_H
#define _INCFS_FORMAT_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/crc32.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>
#include <uapi/linux/incrementalfs.h>
#else
#include "kerncompat.h"
#endif

#define INCFS_FORMAT_V1		1
#define INCFS_MAX_NAME_LEN	255
/* Files are limited so that a file's in-memory blockmap stays reasonable. */
#define INCFS_MAX_FILE_SIZE	(64ULL << 30)
/* Data offsets are 48-bit in a blockmap entry. */
#define INCFS_MAX_DATA_OFFSET	((1ULL << 48) - 1)
/*
 * Inode numbers an image may hold and NEW_FILE may give: far above what
 * INCFS_MAX_FILES needs, far below where the next number would wrap.
 */
#define INCFS_MAX_INO		((1ULL << 32) - 1)
/*
 * Names (hard links included) per mount: each costs memory for as long as
 * the mount lasts, so a loader or an image cannot add them without bound.
 */
#define INCFS_MAX_NAMES		(128U * 1024)

enum incfs_metadata_type {
	INCFS_MD_NONE = 0,
	INCFS_MD_INODE = 1,
	INCFS_MD_BLOCK_MAP = 2,
	INCFS_MD_DIR_ACTION = 3,
};

/* Starts every metadata record. */
struct incfs_md_header {
	__u8 h_md_entry_type;		/* enum incfs_metadata_type */
	__le16 h_record_size;		/* of the whole record */
	/* CRC32 of the whole record with this field and h_next_md_offset 0 */
	__le32 h_record_crc;
	__le64 h_next_md_offset;	/* 0: the last record */
	__le64 h_prev_md_offset;	/* 0: the first record */
} __packed;

struct incfs_super_block {
	__le64 s_magic;			/* INCFS_MAGIC_NUMBER */
	__le64 s_version;		/* INCFS_FORMAT_V1 */
	__le16 s_super_block_size;	/* sizeof(struct incfs_super_block) */
	__le32 s_flags;			/* 0 */
	__le64 s_first_md_offset;	/* 0: no records yet */
	__le16 s_data_block_size;	/* INCFS_DATA_FILE_BLOCK_SIZE */
} __packed;

/* A file or a directory (INCFS_MD_INODE). */
struct incfs_inode {
	struct incfs_md_header i_header;
	__le64 i_no;
	__le64 i_size;
	__le16 i_mode;
	__le32 i_flags;			/* 0 */
} __packed;

enum incfs_blockmap_entry_flags {
	INCFS_BLOCK_COMPRESSED_LZ4 = 1 << 0,
};

/* Where one block of a file is stored; all zero while it is absent. */
struct incfs_blockmap_entry {
	__le32 me_data_offset_lo;
	__le16 me_data_offset_hi;
	__le16 me_data_size;		/* bytes stored (compressed size) */
	__le16 me_flags;		/* enum incfs_blockmap_entry_flags */
	__le32 me_data_crc;		/* CRC32 of the stored bytes */
} __packed;

/* A file's blockmap area (INCFS_MD_BLOCK_MAP). */
struct incfs_blockmap {
	struct incfs_md_header m_header;
	__le64 m_inode;
	__le64 m_base_offset;
	__le32 m_block_count;
} __packed;

enum incfs_dir_action_type {
	INCFS_DIRA_NONE = 0,
	INCFS_DIRA_ADD_ENTRY = 1,
	INCFS_DIRA_REMOVE_ENTRY = 2,
};

/* A name added to or removed from a directory (INCFS_MD_DIR_ACTION). */
struct incfs_dir_action {
	struct incfs_md_header da_header;
	__le64 da_dir_inode;
	__le64 da_entry_inode;
	__u8 da_type;			/* enum incfs_dir_action_type */
	__u8 da_name_len;
	char da_name[INCFS_MAX_NAME_LEN];
} __packed;

union incfs_md_record {
	struct incfs_md_header h;
	struct incfs_inode inode;
	struct incfs_blockmap bm;
	struct incfs_dir_action da;
};

#ifdef __KERNEL__
#define INCFS_LAYOUT_CHECK(cond)	BUILD_BUG_ON(!(cond))
#else
#define INCFS_LAYOUT_CHECK(cond)	_Static_assert(cond, #cond)
#endif
#define INCFS_CHECK_FIELD(type, field, off) \
	INCFS_LAYOUT_CHECK(offsetof(struct type, field) == (off))

/*
 * The on-disk layout, byte for byte: a compiler or an edit that moved a
 * field fails the build.  Called from module init; in user space the
 * assertions are checked wherever this header is compiled.
 */
static inline void incfs_check_layout(void)
{
	INCFS_LAYOUT_CHECK(sizeof(struct incfs_super_block) == 32);
	INCFS_CHECK_FIELD(incfs_super_block, s_magic, 0);
	INCFS_CHECK_FIELD(incfs_super_block, s_version, 8);
	INCFS_CHECK_FIELD(incfs_super_block, s_super_block_size, 16);
	INCFS_CHECK_FIELD(incfs_super_block, s_flags, 18);
	INCFS_CHECK_FIELD(incfs_super_block, s_first_md_offset, 22);
	INCFS_CHECK_FIELD(incfs_super_block, s_data_block_size, 30);

	INCFS_LAYOUT_CHECK(sizeof(struct incfs_md_header) == 23);
	INCFS_CHECK_FIELD(incfs_md_header, h_md_entry_type, 0);
	INCFS_CHECK_FIELD(incfs_md_header, h_record_size, 1);
	INCFS_CHECK_FIELD(incfs_md_header, h_record_crc, 3);
	INCFS_CHECK_FIELD(incfs_md_header, h_next_md_offset, 7);
	INCFS_CHECK_FIELD(incfs_md_header, h_prev_md_offset, 15);

	INCFS_LAYOUT_CHECK(sizeof(struct incfs_inode) == 45);
	INCFS_CHECK_FIELD(incfs_inode, i_no, 23);
	INCFS_CHECK_FIELD(incfs_inode, i_size, 31);
	INCFS_CHECK_FIELD(incfs_inode, i_mode, 39);
	INCFS_CHECK_FIELD(incfs_inode, i_flags, 41);

	INCFS_LAYOUT_CHECK(sizeof(struct incfs_blockmap_entry) == 14);
	INCFS_CHECK_FIELD(incfs_blockmap_entry, me_data_offset_lo, 0);
	INCFS_CHECK_FIELD(incfs_blockmap_entry, me_data_offset_hi, 4);
	INCFS_CHECK_FIELD(incfs_blockmap_entry, me_data_size, 6);
	INCFS_CHECK_FIELD(incfs_blockmap_entry, me_flags, 8);
	INCFS_CHECK_FIELD(incfs_blockmap_entry, me_data_crc, 10);

	INCFS_LAYOUT_CHECK(sizeof(struct incfs_blockmap) == 43);
	INCFS_CHECK_FIELD(incfs_blockmap, m_inode, 23);
	INCFS_CHECK_FIELD(incfs_blockmap, m_base_offset, 31);
	INCFS_CHECK_FIELD(incfs_blockmap, m_block_count, 39);

	INCFS_LAYOUT_CHECK(sizeof(struct incfs_dir_action) == 296);
	INCFS_CHECK_FIELD(incfs_dir_action, da_dir_inode, 23);
	INCFS_CHECK_FIELD(incfs_dir_action, da_entry_inode, 31);
	INCFS_CHECK_FIELD(incfs_dir_action, da_type, 39);
	INCFS_CHECK_FIELD(incfs_dir_action, da_name_len, 40);
	INCFS_CHECK_FIELD(incfs_dir_action, da_name, 41);

	INCFS_LAYOUT_CHECK(INCFS_DATA_FILE_BLOCK_SIZE == 4096);
	INCFS_LAYOUT_CHECK(INCFS_MAX_FILE_SIZE / INCFS_DATA_FILE_BLOCK_SIZE <=
			   (u32)-1);
}

/*
 * In-place updates (a blockmap entry, a record's next link) turn zero
 * bytes into a value.  Disks write sectors of at least this many bytes
 * whole, but a crash can tear a write that crosses a sector boundary: one
 * side reaches the disk, the other keeps its zeros.  Both fields are
 * shorter than a sector, so at most one boundary splits them.
 */
#define INCFS_SECTOR_SIZE	512

/* Reads len bytes at pos; returns the count read or a negative errno. */
typedef ssize_t (*incfs_read_fn)(void *ctx, void *buf, size_t len, loff_t pos);

/*
 * Walks the metadata chain of an image.  Filled by incfs_walk_start(),
 * advanced by incfs_walk_next().  On an error, @bad_off and @why say where
 * and what.  A mount stops at the first bad record; fsck and dump set
 * @go_on to hear of a record with a bad CRC or prev link and walk on
 * through its link (INCFS_WALK_BAD).
 */
struct incfs_walk {
	incfs_read_fn read;
	void *ctx;
	loff_t size;			/* of the image */
	bool go_on;

	loff_t next;			/* offset of the record to read next */
	loff_t link_pos;		/* where the link to @next is stored */
	loff_t prev;			/* offset of the last record read */
	loff_t prev_end;		/* end of the last record (or superblock) */
	bool torn;			/* the chain ended in a cut-off record */
	bool torn_link;			/* ... or at a link torn by a crash */

	union incfs_md_record rec;	/* the record just read */
	loff_t rec_off;
	loff_t gap_start;		/* end of the record before it */

	loff_t bad_off;
	const char *why;
};

static inline u32 incfs_blocks_for_size(u64 size)
{
	return DIV_ROUND_UP_ULL(size, INCFS_DATA_FILE_BLOCK_SIZE);
}

/* Bytes of block @index in a file of @size bytes (4096 but for the tail). */
static inline u32 incfs_block_len(u64 size, u32 index)
{
	u64 start = (u64)index * INCFS_DATA_FILE_BLOCK_SIZE;

	if (start >= size)
		return 0;
	return min_t(u64, size - start, INCFS_DATA_FILE_BLOCK_SIZE);
}

static inline loff_t incfs_bme_offset(const struct incfs_blockmap_entry *e)
{
	return (loff_t)le16_to_cpu(e->me_data_offset_hi) << 32 |
	       le32_to_cpu(e->me_data_offset_lo);
}

void incfs_sb_init(struct incfs_super_block *sb);
u32 incfs_md_crc(const union incfs_md_record *rec);
void incfs_md_seal(union incfs_md_record *rec, loff_t prev);
size_t incfs_md_size(u8 type);

void incfs_encode_inode(struct incfs_inode *r, u64 ino, u64 size, u16 mode);
void incfs_encode_blockmap(struct incfs_blockmap *r, u64 ino, loff_t base,
			   u32 count);
void incfs_encode_dir_action(struct incfs_dir_action *r, u8 type, u64 dir,
			     u64 child, const char *name, u8 len);
void incfs_encode_bme(struct incfs_blockmap_entry *e, loff_t off, u16 size,
		      u16 flags, u32 crc);

bool incfs_name_valid(const char *name, size_t len);
loff_t incfs_md_pos(loff_t end);
bool incfs_all_zero(const void *p, size_t len);
bool incfs_maybe_torn(const void *p, size_t len, loff_t pos);
bool incfs_bme_maybe_torn(const struct incfs_blockmap_entry *e, loff_t pos,
			  u32 block_len);

int incfs_walk_start(struct incfs_walk *w, incfs_read_fn read, void *ctx,
		     loff_t size);
int incfs_walk_next(struct incfs_walk *w);
int incfs_check_blockmap(struct incfs_walk *w, u64 file_size);
int incfs_check_bme(const struct incfs_blockmap_entry *e, loff_t pos,
		    loff_t image_size, u32 block_len, const char **why);

/* incfs_walk_start() results besides 0 and -errno. */
#define INCFS_IMAGE_EMPTY	1	/* empty or a torn fresh superblock */
/* incfs_walk_next() results besides 0, 1 and -errno. */
#define INCFS_WALK_BAD		2	/* @go_on: a bad record, read past */
/* incfs_check_bme() results besides -errno. */
#define INCFS_BME_PRESENT	0
#define INCFS_BME_ABSENT	1
#define INCFS_BME_TORN		2	/* lost in a crash: @why says how */

#endif /* _INCFS_FORMAT_H */
