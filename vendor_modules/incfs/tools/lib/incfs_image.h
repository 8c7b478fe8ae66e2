/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libincfs-image: reading, checking, writing and compacting incfs backing
 * images in user space (the layout of vendor_modules/incfs/format.h), for
 * incfs-image and incfs-loader, on the host and on the device.
 */
#ifndef INCFS_IMAGE_H
#define INCFS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/incrementalfs.h>	/* INCFS_DATA_FILE_BLOCK_SIZE, ... */

/* One problem found in an image. */
struct incfs_img_problem {
	uint64_t offset;
	bool repairable;	/* a torn tail: --repair can cut it */
	char what[160];
};

struct incfs_img_entry {		/* a decoded blockmap entry */
	uint64_t data_offset;		/* 0: absent */
	uint16_t stored_size;
	uint16_t flags;			/* 1: LZ4 */
	uint32_t crc;
};

struct incfs_img_file {
	uint64_t ino;
	uint16_t mode;			/* S_IFREG or S_IFDIR | perms */
	uint64_t size;
	uint64_t blockmap_offset;	/* 0: none */
	uint32_t block_count;
	/*
	 * block_count entries; NULL (every block absent) until the file's
	 * blockmap record is replayed, so that a hostile image cannot make the
	 * reader allocate more than the image holds.
	 */
	struct incfs_img_entry *blocks;
};

struct incfs_img_name {
	uint64_t dir_ino;
	uint64_t child_ino;
	char name[256];
};

enum incfs_img_status { INCFS_IMG_CLEAN = 0, INCFS_IMG_REPAIRABLE = 1, INCFS_IMG_BROKEN = 2 };

/* One metadata record met on the chain (for dump). */
struct incfs_img_record {
	uint64_t offset;
	uint64_t next;
	uint64_t prev;
	uint8_t type;			/* 1 inode, 2 blockmap, 3 dir action */
	uint16_t size;
	bool crc_ok;
	bool applied;			/* replayed (not refused) */
};

/* The replayed state of an image (what a mount would show). */
struct incfs_img {
	int fd;
	uint64_t size;			/* of the image file */
	struct incfs_img_file *files;	/* in order of declaration */
	size_t nfiles;
	struct incfs_img_name *names;	/* live names, in order of addition */
	size_t nnames;
	uint64_t last_record;		/* offset of the last valid record */
	uint64_t valid_end;		/* end of the last valid record */
	size_t nrecords;
	struct incfs_img_problem *problems;
	size_t nproblems;
	enum incfs_img_status status;

	/* For incfs-image (dump, fsck --repair) and incfs_img_file(2). */
	struct incfs_img_file root;	/* ino 2: never stored */
	struct incfs_img_record *records;	/* nrecords entries */
	uint64_t first_md_offset;	/* from the superblock */
	bool short_image;		/* shorter than a superblock */
	bool torn;			/* the chain ends in a cut record */
	uint64_t torn_link_pos;		/* where the link to it is stored */
	uint64_t *torn_entries;		/* offsets of entries with cut data */
	size_t ntorn;
	bool oom;
};

/*
 * Open and replay an image read-only; 0 or -errno (the file cannot be
 * opened or read, or memory ran out).  Anything wrong in the image itself
 * is reported through @status and @problems, not the return value: check
 * @status before using @files.  The replayed state is what the kernel's
 * mount would show (torn entries absent); on a BROKEN image it is a best
 * effort past the refused records.  Stored data is not read (see
 * incfs_img_check_blocks()).
 */
int incfs_img_open(struct incfs_img *img, const char *path);
void incfs_img_close(struct incfs_img *img);
struct incfs_img_file *incfs_img_file(struct incfs_img *img, uint64_t ino);
/* Is block @index of file @ino present (and within the image)? */
bool incfs_img_block_present(struct incfs_img *img, uint64_t ino, uint32_t index);
/*
 * Read and check (CRC, LZ4) block @index into @buf (INCFS_DATA_FILE_BLOCK_SIZE bytes); returns its length or -errno:
 * -ENOENT no such file, -EISDIR, -ERANGE index past the end, -ENODATA absent,
 * -EIO short read, -EBADMSG CRC mismatch or bad LZ4 data.
 */
int incfs_img_read_block(struct incfs_img *img, uint64_t ino, uint32_t index, void *buf);
/* Read the stored (maybe compressed) bytes of a present block into @buf (INCFS_DATA_FILE_BLOCK_SIZE bytes); CRC checked. */
int incfs_img_read_raw(struct incfs_img *img, uint64_t ino, uint32_t index, void *buf);
/* Check every present block's CRC and LZ4 data; adds problems; returns their count or -errno. */
int incfs_img_check_blocks(struct incfs_img *img);
/* "clean", "repairable" or "broken". */
const char *incfs_img_status_name(int status);

/* Writing a new image from scratch, as the kernel would. */
struct incfs_img_writer;
struct incfs_img_writer *incfs_img_create(const char *path);
/* Declare a file (S_IFREG) or directory (S_IFDIR); returns the inode number or 0 with errno set. */
uint64_t incfs_img_new_file(struct incfs_img_writer *w, uint16_t mode, uint64_t size);
/* The same with a given inode number (> 2, unused); returns it or 0 with errno set. */
uint64_t incfs_img_new_file_ino(struct incfs_img_writer *w, uint64_t ino, uint16_t mode,
				uint64_t size);
int incfs_img_add_name(struct incfs_img_writer *w, uint64_t dir, uint64_t child, const char *name);
/* Remove a name, as INCFS_INSTRUCTION_REMOVE_DIR_ENTRY does. */
int incfs_img_remove_name(struct incfs_img_writer *w, uint64_t dir, uint64_t child,
			  const char *name);
/* Store block @index of @ino from @data (its full length); LZ4 when it shrinks and @lz4. */
int incfs_img_put_block(struct incfs_img_writer *w, uint64_t ino, uint32_t index,
			const void *data, size_t len, bool lz4);
/* Store a block as stored elsewhere (@flags 1: LZ4 data); @crc must match. */
int incfs_img_put_raw(struct incfs_img_writer *w, uint64_t ino, uint32_t index,
		      const void *data, size_t stored, uint16_t flags, uint32_t crc);
int incfs_img_finish(struct incfs_img_writer *w);	/* writes, fsyncs, frees */
/* Functions return -errno; a failed writer keeps failing; finish returns the first error. */

/*
 * fsck: print problems to @out; with @repair, cut a torn tail. Returns enum incfs_img_status
 * (CLEAN after a successful repair), or -errno when the image cannot be read or repaired.
 */
int incfs_img_fsck(const char *path, bool repair, FILE *out);
/* dump: superblock, records with offsets and CRC status, tree, block presence; 0 or -errno. */
int incfs_img_dump(const char *path, FILE *out);
/*
 * gc: a compacted copy holding only files reachable by a name from the root.
 * Inode numbers and names (in their order) are kept, blocks are copied as
 * stored.  Returns 0, -EUCLEAN when @in is broken, or -errno.
 */
int incfs_img_gc(const char *in, const char *out);

#endif /* INCFS_IMAGE_H */
