// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the incfs on-disk format code (format.c): encoding,
 * checksums, name rules (name_rules.c), and the walk of the metadata chain
 * over images built in memory, whole, cut at every byte and corrupted.  A second suite
 * covers the pure helpers of incfs.h (pending-read serials).
 *
 * format.c and name_rules.c are included rather than linked, so that this
 * module has its own copy of the code (see Kbuild).
 */
#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/module.h>
#include <linux/stat.h>

#include "../format.c"
#include "../incfs.h"
#include "../name_rules.c"

#define IMG_CAP		(32 * 1024)
#define IMG_MAX_RECS	16
#define BME_SIZE	sizeof(struct incfs_blockmap_entry)
#define NEXT_POS	offsetof(struct incfs_md_header, h_next_md_offset)
#define FIRST_MD_POS	offsetof(struct incfs_super_block, s_first_md_offset)

struct img_rec {
	loff_t off;
	u8 type;
	size_t size;
};

/* An image in memory: the read callback sees its first @size bytes. */
struct img {
	u8 *buf;
	loff_t len;			/* bytes written */
	loff_t size;			/* bytes visible to reads */
	loff_t last;			/* offset of the last record, 0: none */
	loff_t link_pos;		/* where the link to a new record goes */
	struct img_rec recs[IMG_MAX_RECS];
	int nr_recs;
};

/* Records and offsets of the image built by img_standard(). */
struct std_img {
	struct img *im;
	loff_t file_base;		/* blockmap area of STD_FILE */
	loff_t data1, data0;		/* blocks 1 and 0 of STD_FILE */
};

#define STD_ROOT	2
#define STD_FILE	10
#define STD_DIR		11
#define STD_FILE_SIZE	6144
enum { R_FILE, R_FILE_BM, R_ADD_FILE, R_DIR, R_ADD_DIR, R_ADD_LINK, R_RM_FILE, R_COUNT };

static ssize_t img_read(void *ctx, void *buf, size_t len, loff_t pos)
{
	struct img *im = ctx;
	size_t n;

	if (pos < 0)
		return -EINVAL;
	if (pos >= im->size)
		return 0;
	n = min_t(loff_t, len, im->size - pos);
	memcpy(buf, im->buf + pos, n);
	return n;
}

static ssize_t failing_read(void *ctx, void *buf, size_t len, loff_t pos)
{
	return -EIO;
}

static void put_le64(u8 *p, u64 v)
{
	__le64 x = cpu_to_le64(v);

	memcpy(p, &x, sizeof(x));
}

static void put_le16(u8 *p, u16 v)
{
	__le16 x = cpu_to_le16(v);

	memcpy(p, &x, sizeof(x));
}

/* A new image holding a fresh superblock. */
static struct img *img_new(struct kunit *test)
{
	struct img *im = kunit_kzalloc(test, sizeof(*im), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, im);
	im->buf = kunit_kzalloc(test, IMG_CAP, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, im->buf);
	incfs_sb_init((struct incfs_super_block *)im->buf);
	im->len = sizeof(struct incfs_super_block);
	im->size = im->len;
	im->link_pos = FIRST_MD_POS;
	return im;
}

static loff_t img_append(struct kunit *test, struct img *im, const void *p,
			 size_t n)
{
	loff_t off = im->len;

	KUNIT_ASSERT_LE(test, im->len + (loff_t)n, (loff_t)IMG_CAP);
	if (p)
		memcpy(im->buf + off, p, n);
	else
		memset(im->buf + off, 0, n);
	im->len += n;
	im->size = im->len;
	return off;
}

/* Append a record after the last one and link it, as the module does. */
static loff_t img_append_md(struct kunit *test, struct img *im,
			    union incfs_md_record *rec)
{
	size_t size = le16_to_cpu(rec->h.h_record_size);
	loff_t off;

	KUNIT_ASSERT_LT(test, im->nr_recs, IMG_MAX_RECS);
	incfs_md_seal(rec, im->last);
	off = img_append(test, im, rec, size);
	put_le64(im->buf + im->link_pos, off);
	im->link_pos = off + NEXT_POS;
	im->last = off;
	im->recs[im->nr_recs].off = off;
	im->recs[im->nr_recs].type = rec->h.h_md_entry_type;
	im->recs[im->nr_recs].size = size;
	im->nr_recs++;
	return off;
}

static void img_add_inode(struct kunit *test, struct img *im, u64 ino,
			  u64 size, u16 mode)
{
	union incfs_md_record rec;

	incfs_encode_inode(&rec.inode, ino, size, mode);
	img_append_md(test, im, &rec);
}

/* A blockmap area for a file of @size bytes, then its record; the base. */
static loff_t img_add_blockmap(struct kunit *test, struct img *im, u64 ino,
			       u64 size)
{
	u32 count = incfs_blocks_for_size(size);
	union incfs_md_record rec;
	loff_t base;

	base = img_append(test, im, NULL, count * BME_SIZE);
	incfs_encode_blockmap(&rec.bm, ino, base, count);
	img_append_md(test, im, &rec);
	return base;
}

/* Append @len bytes of @fill as block @index and point its entry at them. */
static loff_t img_add_block(struct kunit *test, struct img *im, loff_t base,
			    u32 index, u16 len, u8 fill)
{
	struct incfs_blockmap_entry e;
	u8 *data = kunit_kzalloc(test, len, GFP_KERNEL);
	loff_t off;

	KUNIT_ASSERT_NOT_NULL(test, data);
	memset(data, fill, len);
	off = img_append(test, im, data, len);
	incfs_encode_bme(&e, off, len, 0, crc32_le(0, data, len));
	memcpy(im->buf + base + index * BME_SIZE, &e, sizeof(e));
	return off;
}

static void img_add_da(struct kunit *test, struct img *im, u8 type, u64 dir,
		       u64 child, const char *name)
{
	union incfs_md_record rec;

	incfs_encode_dir_action(&rec.da, type, dir, child, name, strlen(name));
	img_append_md(test, im, &rec);
}

/*
 * A file with a blockmap and a block stored before the next record, a
 * directory, names added and removed, and a last block after the last
 * record (see the R_* indexes).
 */
static void img_standard(struct kunit *test, struct std_img *s)
{
	struct img *im = img_new(test);

	img_add_inode(test, im, STD_FILE, STD_FILE_SIZE, S_IFREG | 0444);
	s->file_base = img_add_blockmap(test, im, STD_FILE, STD_FILE_SIZE);
	s->data1 = img_add_block(test, im, s->file_base, 1, 2048, 'b');
	img_add_da(test, im, INCFS_DIRA_ADD_ENTRY, STD_ROOT, STD_FILE, "file");
	img_add_inode(test, im, STD_DIR, 0, S_IFDIR | 0555);
	img_add_da(test, im, INCFS_DIRA_ADD_ENTRY, STD_ROOT, STD_DIR, "dir");
	img_add_da(test, im, INCFS_DIRA_ADD_ENTRY, STD_DIR, STD_FILE, "link");
	img_add_da(test, im, INCFS_DIRA_REMOVE_ENTRY, STD_ROOT, STD_FILE,
		   "file");
	s->data0 = img_add_block(test, im, s->file_base, 0, 4096, 'a');
	KUNIT_ASSERT_EQ(test, im->nr_recs, R_COUNT);
	s->im = im;
}

/* Re-seal record @i with @prev as its prev link, keeping its next link. */
static void img_reseal(struct img *im, int i, loff_t prev)
{
	union incfs_md_record rec;
	loff_t off = im->recs[i].off;
	__le64 next;

	memcpy(&rec, im->buf + off, im->recs[i].size);
	next = rec.h.h_next_md_offset;
	incfs_md_seal(&rec, prev);
	rec.h.h_next_md_offset = next;
	memcpy(im->buf + off, &rec, im->recs[i].size);
}

static int walk_start(struct incfs_walk *w, struct img *im)
{
	return incfs_walk_start(w, img_read, im, im->size);
}

/*
 * Walk the whole chain; returns the last result of incfs_walk_next() (or
 * of incfs_walk_start() when it is not 0) and the record count in @nr.
 */
static int walk_all(struct incfs_walk *w, struct img *im, int *nr)
{
	int r = walk_start(w, im);

	*nr = 0;
	if (r)
		return r;
	while ((r = incfs_walk_next(w)) == 1)
		(*nr)++;
	return r;
}

/* The walk fails with @err at @off after @nr_good records, with a reason. */
static void expect_walk_fails(struct kunit *test, struct img *im, int err,
			      loff_t off, int nr_good)
{
	struct incfs_walk w;
	int nr, r;

	r = walk_all(&w, im, &nr);
	KUNIT_EXPECT_EQ(test, r, err);
	KUNIT_EXPECT_EQ(test, nr, nr_good);
	KUNIT_EXPECT_EQ(test, w.bad_off, off);
	KUNIT_EXPECT_NOT_NULL(test, w.why);
}

/* The whole standard image walks again. */
static void expect_walk_ok(struct kunit *test, struct img *im)
{
	struct incfs_walk w;
	int nr;

	KUNIT_EXPECT_EQ(test, walk_all(&w, im, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, im->nr_recs);
	KUNIT_EXPECT_FALSE(test, w.torn);
}

static void test_layout(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct incfs_super_block), 32);
	KUNIT_EXPECT_EQ(test, sizeof(struct incfs_md_header), 23);
	KUNIT_EXPECT_EQ(test, sizeof(struct incfs_inode), 45);
	KUNIT_EXPECT_EQ(test, sizeof(struct incfs_blockmap), 43);
	KUNIT_EXPECT_EQ(test, sizeof(struct incfs_dir_action), 296);
	/* The 2019 posting's entry: offset lo/hi, size, flags, crc. */
	KUNIT_EXPECT_EQ(test, sizeof(struct incfs_blockmap_entry), 14);
	KUNIT_EXPECT_EQ(test, FIRST_MD_POS, 22);
	KUNIT_EXPECT_EQ(test, NEXT_POS, 7);
	KUNIT_EXPECT_EQ(test, offsetof(struct incfs_md_header, h_record_crc), 3);
	KUNIT_EXPECT_EQ(test, offsetof(struct incfs_md_header, h_prev_md_offset), 15);
	KUNIT_EXPECT_EQ(test, offsetof(struct incfs_dir_action, da_name), 41);
	KUNIT_EXPECT_EQ(test, incfs_md_size(INCFS_MD_INODE), 45);
	KUNIT_EXPECT_EQ(test, incfs_md_size(INCFS_MD_BLOCK_MAP), 43);
	KUNIT_EXPECT_EQ(test, incfs_md_size(INCFS_MD_DIR_ACTION), 296);
	KUNIT_EXPECT_EQ(test, incfs_md_size(INCFS_MD_NONE), 0);
	KUNIT_EXPECT_EQ(test, incfs_md_size(4), 0);
}

static void test_sb_init_round_trip(struct kunit *test)
{
	static const u8 expect[32] = {
		'I', 'N', 'C', 'F', 'S', 0, 0, 0,	/* magic */
		1, 0, 0, 0, 0, 0, 0, 0,			/* version */
		32, 0,					/* superblock size */
		0, 0, 0, 0,				/* flags */
		0, 0, 0, 0, 0, 0, 0, 0,			/* first record */
		0x00, 0x10,				/* block size */
	};
	struct incfs_super_block *sb;
	struct incfs_walk w;
	struct img *im;

	im = img_new(test);
	sb = (struct incfs_super_block *)im->buf;
	memset(sb, 0xff, sizeof(*sb));
	incfs_sb_init(sb);
	KUNIT_EXPECT_MEMEQ(test, sb, expect, sizeof(expect));
	KUNIT_EXPECT_EQ(test, le64_to_cpu(sb->s_magic), INCFS_MAGIC_NUMBER);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(sb->s_version), INCFS_FORMAT_V1);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(sb->s_data_block_size),
			INCFS_DATA_FILE_BLOCK_SIZE);

	KUNIT_ASSERT_EQ(test, walk_start(&w, im), 0);
	KUNIT_EXPECT_EQ(test, w.next, 0);
	KUNIT_EXPECT_EQ(test, w.link_pos, FIRST_MD_POS);
	KUNIT_EXPECT_EQ(test, w.prev_end, 32);
	KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 0);
	KUNIT_EXPECT_FALSE(test, w.torn);
	KUNIT_EXPECT_NULL(test, w.why);
}

/* The CRC covers every byte but itself and the next link. */
static void test_md_crc(struct kunit *test)
{
	/* Room past the record: a flipped size byte makes it 297 or 40. */
	u8 *buf = kunit_kzalloc(test, 1024, GFP_KERNEL);
	union incfs_md_record *rec = (union incfs_md_record *)buf;
	size_t size = sizeof(struct incfs_dir_action), i;
	u32 crc;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	incfs_encode_dir_action(&rec->da, INCFS_DIRA_ADD_ENTRY, 2, 77,
				"some-name", 9);
	incfs_md_seal(rec, 1234);
	crc = le32_to_cpu(rec->h.h_record_crc);
	KUNIT_EXPECT_EQ(test, incfs_md_crc(rec), crc);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec->h.h_prev_md_offset), 1234);
	KUNIT_EXPECT_EQ(test, rec->h.h_next_md_offset, 0);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(rec->h.h_record_size), size);

	for (i = 0; i < size; i++) {
		bool covered = i < 3 || i >= NEXT_POS + 8;

		buf[i] ^= 0x01;
		if (covered)
			KUNIT_EXPECT_NE_MSG(test, incfs_md_crc(rec), crc,
					    "byte %zu", i);
		else
			KUNIT_EXPECT_EQ_MSG(test, incfs_md_crc(rec), crc,
					    "byte %zu", i);
		buf[i] ^= 0x01;
	}
	put_le64(buf + NEXT_POS, 0x123456789aULL);
	KUNIT_EXPECT_EQ(test, incfs_md_crc(rec), crc);
	/* Sealing again after a link gives the same CRC. */
	incfs_md_seal(rec, 1234);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(rec->h.h_record_crc), crc);
	KUNIT_EXPECT_EQ(test, rec->h.h_next_md_offset, 0);
	/* Another prev link: another CRC. */
	incfs_md_seal(rec, 1235);
	KUNIT_EXPECT_NE(test, le32_to_cpu(rec->h.h_record_crc), crc);
}

static void test_encode_records(struct kunit *test)
{
	union incfs_md_record rec;
	char name[INCFS_MAX_NAME_LEN];

	incfs_encode_inode(&rec.inode, 0x1122334455667788ULL, 6144,
			   S_IFREG | 0444);
	KUNIT_EXPECT_EQ(test, rec.h.h_md_entry_type, INCFS_MD_INODE);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(rec.h.h_record_size), 45);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec.inode.i_no), 0x1122334455667788ULL);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec.inode.i_size), 6144);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(rec.inode.i_mode), S_IFREG | 0444);
	KUNIT_EXPECT_EQ(test, rec.inode.i_flags, 0);

	incfs_encode_blockmap(&rec.bm, 10, 0x123456789abLL, 7);
	KUNIT_EXPECT_EQ(test, rec.h.h_md_entry_type, INCFS_MD_BLOCK_MAP);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(rec.h.h_record_size), 43);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec.bm.m_inode), 10);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec.bm.m_base_offset), 0x123456789abLL);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(rec.bm.m_block_count), 7);

	memset(name, 'n', sizeof(name));
	incfs_encode_dir_action(&rec.da, INCFS_DIRA_REMOVE_ENTRY, 2, 3, name,
				INCFS_MAX_NAME_LEN);
	KUNIT_EXPECT_EQ(test, rec.h.h_md_entry_type, INCFS_MD_DIR_ACTION);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(rec.h.h_record_size), 296);
	KUNIT_EXPECT_EQ(test, rec.da.da_type, INCFS_DIRA_REMOVE_ENTRY);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec.da.da_dir_inode), 2);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(rec.da.da_entry_inode), 3);
	KUNIT_EXPECT_EQ(test, rec.da.da_name_len, INCFS_MAX_NAME_LEN);
	KUNIT_EXPECT_MEMEQ(test, rec.da.da_name, name, INCFS_MAX_NAME_LEN);

	/* A short name leaves the rest of the field zero (CRC-stable). */
	memset(&rec, 0xff, sizeof(rec));
	incfs_encode_dir_action(&rec.da, INCFS_DIRA_ADD_ENTRY, 2, 3, "ab", 2);
	KUNIT_EXPECT_EQ(test, rec.da.da_name_len, 2);
	KUNIT_EXPECT_EQ(test, rec.da.da_name[2], 0);
	KUNIT_EXPECT_EQ(test, rec.da.da_name[INCFS_MAX_NAME_LEN - 1], 0);
	KUNIT_EXPECT_EQ(test, rec.h.h_prev_md_offset, 0);
}

static void test_name_valid(struct kunit *test)
{
	char name[INCFS_MAX_NAME_LEN + 1];

	KUNIT_EXPECT_TRUE(test, incfs_name_valid("a", 1));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid("file.txt", 8));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid("...", 3));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid(".a", 2));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid("a.", 2));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid("..a", 3));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid("\xff\x01 \\", 4));
	/* Only @len bytes count. */
	KUNIT_EXPECT_TRUE(test, incfs_name_valid("ab/", 2));

	/* Empty, too long. */
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("", 0));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("a", 0));
	memset(name, 'x', sizeof(name));
	KUNIT_EXPECT_TRUE(test, incfs_name_valid(name, INCFS_MAX_NAME_LEN));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid(name, INCFS_MAX_NAME_LEN + 1));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid(name, SIZE_MAX));

	/* '/' or NUL anywhere. */
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("/", 1));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("a/b", 3));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("/a", 2));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("a/", 2));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("\0", 1));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("a\0b", 3));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("ab\0", 3));
	name[INCFS_MAX_NAME_LEN - 1] = '/';
	KUNIT_EXPECT_FALSE(test, incfs_name_valid(name, INCFS_MAX_NAME_LEN));

	/* "." and "..", but only those. */
	KUNIT_EXPECT_FALSE(test, incfs_name_valid(".", 1));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("..", 2));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("..", 1));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid(".a", 1));
	KUNIT_EXPECT_FALSE(test, incfs_name_valid("./", 2));
}

static void test_blocks_for_size(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(0), 0);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(1), 1);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(4095), 1);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(4096), 1);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(4097), 2);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(6144), 2);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(8192), 2);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(INCFS_MAX_FILE_SIZE),
			16 * 1024 * 1024);
	KUNIT_EXPECT_EQ(test, incfs_blocks_for_size(INCFS_MAX_FILE_SIZE + 1),
			16 * 1024 * 1024 + 1);
}

static void test_block_len(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, incfs_block_len(0, 0), 0);
	KUNIT_EXPECT_EQ(test, incfs_block_len(1, 0), 1);
	KUNIT_EXPECT_EQ(test, incfs_block_len(1, 1), 0);
	KUNIT_EXPECT_EQ(test, incfs_block_len(4096, 0), 4096);
	KUNIT_EXPECT_EQ(test, incfs_block_len(4096, 1), 0);
	KUNIT_EXPECT_EQ(test, incfs_block_len(4097, 0), 4096);
	KUNIT_EXPECT_EQ(test, incfs_block_len(4097, 1), 1);
	KUNIT_EXPECT_EQ(test, incfs_block_len(4097, 2), 0);
	KUNIT_EXPECT_EQ(test, incfs_block_len(6144, 0), 4096);
	KUNIT_EXPECT_EQ(test, incfs_block_len(6144, 1), 2048);
	KUNIT_EXPECT_EQ(test, incfs_block_len(6144, 2), 0);
	/* No 32-bit overflow of index * 4096. */
	KUNIT_EXPECT_EQ(test, incfs_block_len(6144, 0x100001), 0);
	KUNIT_EXPECT_EQ(test, incfs_block_len(6144, U32_MAX), 0);
	KUNIT_EXPECT_EQ(test, incfs_block_len(INCFS_MAX_FILE_SIZE,
					      16 * 1024 * 1024 - 1), 4096);
	KUNIT_EXPECT_EQ(test, incfs_block_len(INCFS_MAX_FILE_SIZE,
					      16 * 1024 * 1024), 0);
}

static void test_bme_encode_decode(struct kunit *test)
{
	static const u8 expect[14] = {
		0xbc, 0x9a, 0x78, 0x56,		/* offset, low 32 bits */
		0x34, 0x12,			/* offset, high 16 bits */
		0x00, 0x08,			/* size 2048 */
		0x01, 0x00,			/* flags: LZ4 */
		0xef, 0xbe, 0xad, 0xde,		/* crc */
	};
	struct incfs_blockmap_entry e;

	incfs_encode_bme(&e, 0x123456789abcLL, 2048, INCFS_BLOCK_COMPRESSED_LZ4,
			 0xdeadbeef);
	KUNIT_EXPECT_MEMEQ(test, &e, expect, sizeof(expect));
	KUNIT_EXPECT_EQ(test, incfs_bme_offset(&e), 0x123456789abcLL);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e.me_data_size), 2048);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e.me_flags), INCFS_BLOCK_COMPRESSED_LZ4);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e.me_data_crc), 0xdeadbeef);

	incfs_encode_bme(&e, INCFS_MAX_DATA_OFFSET, 4096, 0, 1);
	KUNIT_EXPECT_EQ(test, incfs_bme_offset(&e), INCFS_MAX_DATA_OFFSET);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e.me_data_offset_hi), 0xffff);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e.me_data_offset_lo), 0xffffffff);

	incfs_encode_bme(&e, 1ULL << 32, 1, 0, 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e.me_data_offset_lo), 0);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e.me_data_offset_hi), 1);
	KUNIT_EXPECT_EQ(test, incfs_bme_offset(&e), 1LL << 32);

	incfs_encode_bme(&e, 0x80000000LL, 1, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_bme_offset(&e), 0x80000000LL);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e.me_data_offset_hi), 0);
}

static void test_walk_valid_chain(struct kunit *test)
{
	struct std_img s;
	struct incfs_walk w;
	struct img *im;
	int i;

	img_standard(test, &s);
	im = s.im;
	KUNIT_ASSERT_EQ(test, walk_start(&w, im), 0);
	KUNIT_EXPECT_EQ(test, w.next, im->recs[0].off);
	KUNIT_EXPECT_EQ(test, w.size, im->len);

	for (i = 0; i < R_COUNT; i++) {
		loff_t prev = i ? im->recs[i - 1].off : 0;
		loff_t prev_end = i ? prev + im->recs[i - 1].size : 32;

		KUNIT_ASSERT_EQ_MSG(test, incfs_walk_next(&w), 1, "record %d", i);
		KUNIT_EXPECT_EQ(test, w.rec_off, im->recs[i].off);
		KUNIT_EXPECT_EQ(test, w.rec.h.h_md_entry_type, im->recs[i].type);
		KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.h.h_prev_md_offset), prev);
		KUNIT_EXPECT_EQ(test, w.prev, im->recs[i].off);
		KUNIT_EXPECT_EQ(test, w.gap_start, prev_end);
		KUNIT_EXPECT_EQ(test, w.prev_end, im->recs[i].off + im->recs[i].size);
		KUNIT_EXPECT_EQ(test, w.link_pos, im->recs[i].off + NEXT_POS);
		KUNIT_EXPECT_EQ(test, w.next,
				i + 1 < R_COUNT ? im->recs[i + 1].off : 0);
	}
	KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 0);
	KUNIT_EXPECT_FALSE(test, w.torn);
	KUNIT_EXPECT_NULL(test, w.why);
	KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 0);
	KUNIT_EXPECT_EQ(test, w.link_pos, im->recs[R_COUNT - 1].off + NEXT_POS);
}

/* The fields of each kind of record come back as written. */
static void test_walk_record_fields(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why = NULL;
	struct incfs_walk w;
	struct std_img s;
	struct img *im;

	img_standard(test, &s);
	im = s.im;
	KUNIT_ASSERT_EQ(test, walk_start(&w, im), 0);

	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_EQ(test, w.rec.h.h_md_entry_type, INCFS_MD_INODE);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.inode.i_no), STD_FILE);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.inode.i_size), STD_FILE_SIZE);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(w.rec.inode.i_mode), S_IFREG | 0444);
	KUNIT_EXPECT_EQ(test, w.rec.inode.i_flags, 0);

	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_EQ(test, w.rec.h.h_md_entry_type, INCFS_MD_BLOCK_MAP);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.bm.m_inode), STD_FILE);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.bm.m_base_offset), s.file_base);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(w.rec.bm.m_block_count), 2);
	/* The area lies right after the inode and right before its record. */
	KUNIT_EXPECT_EQ(test, s.file_base, w.gap_start);
	KUNIT_EXPECT_EQ(test, s.file_base + 2 * (loff_t)BME_SIZE, w.rec_off);
	KUNIT_EXPECT_EQ(test, incfs_check_blockmap(&w, STD_FILE_SIZE), 0);
	KUNIT_EXPECT_NULL(test, w.why);

	/* Both blocks, through their entries. */
	memcpy(&e, im->buf + s.file_base, sizeof(e));
	KUNIT_EXPECT_EQ(test, incfs_bme_offset(&e), s.data0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, im->size, 4096, &why),
			INCFS_BME_PRESENT);
	memcpy(&e, im->buf + s.file_base + BME_SIZE, sizeof(e));
	KUNIT_EXPECT_EQ(test, incfs_bme_offset(&e), s.data1);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, im->size, 2048, &why),
			INCFS_BME_PRESENT);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e.me_data_crc),
			crc32_le(0, im->buf + s.data1, 2048));

	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_EQ(test, w.rec.h.h_md_entry_type, INCFS_MD_DIR_ACTION);
	KUNIT_EXPECT_EQ(test, w.rec.da.da_type, INCFS_DIRA_ADD_ENTRY);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.da.da_dir_inode), STD_ROOT);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.da.da_entry_inode), STD_FILE);
	KUNIT_EXPECT_EQ(test, w.rec.da.da_name_len, 4);
	KUNIT_EXPECT_MEMEQ(test, w.rec.da.da_name, "file", 4);
	/* The data block before it is a gap, not metadata. */
	KUNIT_EXPECT_EQ(test, w.gap_start, s.data1);
	KUNIT_EXPECT_EQ(test, w.rec_off, s.data1 + 2048);

	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.inode.i_no), STD_DIR);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(w.rec.inode.i_mode), S_IFDIR | 0555);

	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_MEMEQ(test, w.rec.da.da_name, "dir", 3);
	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(w.rec.da.da_dir_inode), STD_DIR);
	KUNIT_EXPECT_MEMEQ(test, w.rec.da.da_name, "link", 4);
	KUNIT_ASSERT_EQ(test, incfs_walk_next(&w), 1);
	KUNIT_EXPECT_EQ(test, w.rec.da.da_type, INCFS_DIRA_REMOVE_ENTRY);
	KUNIT_EXPECT_MEMEQ(test, w.rec.da.da_name, "file", 4);
	KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 0);
	KUNIT_EXPECT_FALSE(test, w.torn);
}

static void test_walk_empty_image(struct kunit *test)
{
	struct incfs_walk w;
	struct img *im = img_new(test);

	im->size = 0;
	KUNIT_EXPECT_EQ(test, walk_start(&w, im), INCFS_IMAGE_EMPTY);
	KUNIT_EXPECT_NULL(test, w.why);
}

/* Every prefix of a fresh superblock is a crash while creating it. */
static void test_walk_cut_fresh_superblock(struct kunit *test)
{
	struct incfs_walk w;
	struct img *im = img_new(test);
	loff_t cut;

	for (cut = 0; cut < 32; cut++) {
		im->size = cut;
		KUNIT_EXPECT_EQ_MSG(test, walk_start(&w, im), INCFS_IMAGE_EMPTY,
				    "cut at %lld", cut);
		KUNIT_EXPECT_NULL(test, w.why);
	}
	im->size = 32;
	KUNIT_EXPECT_EQ(test, walk_start(&w, im), 0);
	KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 0);
	KUNIT_EXPECT_FALSE(test, w.torn);
}

/*
 * Cut the standard image at every byte: the walk returns exactly the
 * records wholly before the cut, then 0, torn when a linked record was
 * cut.  A cut inside the superblock is a fresh image only while its bytes
 * are those of a fresh superblock (before s_first_md_offset was set).
 */
static void test_walk_cut_everywhere(struct kunit *test)
{
	struct incfs_super_block fresh;
	struct incfs_walk w;
	struct std_img s;
	struct img *im;
	loff_t cut;
	int i, r;

	img_standard(test, &s);
	im = s.im;
	incfs_sb_init(&fresh);
	for (cut = 0; cut <= im->len; cut++) {
		int whole = 0;

		im->size = cut;
		r = walk_start(&w, im);
		if (cut < 32) {
			if (!memcmp(im->buf, &fresh, cut)) {
				KUNIT_EXPECT_EQ_MSG(test, r, INCFS_IMAGE_EMPTY,
						    "cut at %lld", cut);
			} else {
				KUNIT_EXPECT_EQ_MSG(test, r, -EINVAL,
						    "cut at %lld", cut);
				KUNIT_EXPECT_NOT_NULL(test, w.why);
			}
			continue;
		}
		KUNIT_ASSERT_EQ_MSG(test, r, 0, "cut at %lld", cut);
		while (whole < R_COUNT &&
		       im->recs[whole].off + (loff_t)im->recs[whole].size <= cut)
			whole++;
		for (i = 0; (r = incfs_walk_next(&w)) == 1; i++) {
			if (i >= whole)
				break;
			KUNIT_EXPECT_EQ_MSG(test, w.rec_off, im->recs[i].off,
					    "cut at %lld", cut);
			if (w.rec.h.h_md_entry_type == INCFS_MD_BLOCK_MAP)
				KUNIT_EXPECT_EQ_MSG(test,
						    incfs_check_blockmap(&w, STD_FILE_SIZE),
						    0, "cut at %lld", cut);
		}
		KUNIT_EXPECT_EQ_MSG(test, r, 0, "cut at %lld", cut);
		KUNIT_EXPECT_EQ_MSG(test, i, whole, "cut at %lld", cut);
		KUNIT_EXPECT_EQ_MSG(test, w.torn, whole < R_COUNT,
				    "cut at %lld", cut);
		KUNIT_EXPECT_NULL_MSG(test, w.why, "cut at %lld", cut);
		/* The end stays the end. */
		KUNIT_EXPECT_EQ_MSG(test, incfs_walk_next(&w), 0, "cut at %lld", cut);
	}
}

/* Data blocks past a cut are torn, the others still present. */
static void test_walk_cut_blocks(struct kunit *test)
{
	struct incfs_blockmap_entry e0, e1;
	const char *why = NULL;
	struct std_img s;
	struct img *im;
	loff_t cut;

	img_standard(test, &s);
	im = s.im;
	memcpy(&e0, im->buf + s.file_base, sizeof(e0));
	memcpy(&e1, im->buf + s.file_base + BME_SIZE, sizeof(e1));
	for (cut = s.file_base + 2 * BME_SIZE; cut <= im->len; cut++) {
		KUNIT_EXPECT_EQ_MSG(test, incfs_check_bme(&e1, 0, cut, 2048, &why),
				    cut >= s.data1 + 2048 ? INCFS_BME_PRESENT :
				    INCFS_BME_TORN, "cut at %lld", cut);
		KUNIT_EXPECT_EQ_MSG(test, incfs_check_bme(&e0, 0, cut, 4096, &why),
				    cut >= s.data0 + 4096 ? INCFS_BME_PRESENT :
				    INCFS_BME_TORN, "cut at %lld", cut);
	}
}

static void test_walk_read_error(struct kunit *test)
{
	struct incfs_walk w;

	KUNIT_EXPECT_EQ(test, incfs_walk_start(&w, failing_read, NULL, 4096),
			-EIO);
	KUNIT_EXPECT_NOT_NULL(test, w.why);
	KUNIT_EXPECT_EQ(test, incfs_walk_start(&w, failing_read, NULL, 5), -EIO);
	KUNIT_EXPECT_NOT_NULL(test, w.why);
}

static void test_bad_magic(struct kunit *test)
{
	struct img *im = img_new(test);
	int i;

	for (i = 0; i < 8; i++) {
		im->buf[i] ^= 0x20;
		expect_walk_fails(test, im, -EINVAL, 0, 0);
		im->buf[i] ^= 0x20;
	}
}

static void test_bad_version(struct kunit *test)
{
	struct img *im = img_new(test);

	put_le64(im->buf + 8, 0);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	put_le64(im->buf + 8, 2);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	put_le64(im->buf + 8, 1ULL << 32 | 1);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
}

static void test_bad_sb_sizes(struct kunit *test)
{
	struct img *im = img_new(test);

	put_le16(im->buf + 16, 33);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	put_le16(im->buf + 16, 0);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	put_le16(im->buf + 16, 32);
	put_le16(im->buf + 30, 1024);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	put_le16(im->buf + 30, 4097);
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	put_le16(im->buf + 30, 4096);
	KUNIT_EXPECT_EQ(test, walk_start(&(struct incfs_walk){}, im), 0);
}

static void test_unknown_sb_flags(struct kunit *test)
{
	struct img *im = img_new(test);

	im->buf[18] = 1;
	expect_walk_fails(test, im, -EINVAL, 0, 0);
	im->buf[18] = 0;
	im->buf[21] = 0x80;
	expect_walk_fails(test, im, -EINVAL, 0, 0);
}

/* Less than a superblock that is not a prefix of a fresh one. */
static void test_short_garbage(struct kunit *test)
{
	struct img *im = img_new(test);
	loff_t cut;

	memcpy(im->buf, "not an incfs image", 18);
	im->size = 18;
	expect_walk_fails(test, im, -EINVAL, 0, 0);

	/* A fresh superblock but for one byte, at every length that has it. */
	incfs_sb_init((struct incfs_super_block *)im->buf);
	im->buf[12] ^= 0x01;
	for (cut = 13; cut < 32; cut++) {
		im->size = cut;
		expect_walk_fails(test, im, -EINVAL, 0, 0);
	}
	im->size = 12;
	KUNIT_EXPECT_EQ(test, walk_start(&(struct incfs_walk){}, im),
			INCFS_IMAGE_EMPTY);
}

static void test_unknown_record_type(struct kunit *test)
{
	static const u8 types[] = { INCFS_MD_NONE, 4, 0x80, 0xff };
	struct std_img s;
	struct img *im;
	loff_t off;
	int i;

	img_standard(test, &s);
	im = s.im;
	off = im->recs[R_DIR].off;
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		im->buf[off] = types[i];
		expect_walk_fails(test, im, -EINVAL, off, R_DIR);
	}
}

static void test_bad_record_size(struct kunit *test)
{
	static const u16 sizes[] = { 295, 297, 0, 23, 45, 0xffff };
	struct std_img s;
	struct img *im;
	loff_t off;
	int i;

	img_standard(test, &s);
	im = s.im;
	off = im->recs[R_ADD_DIR].off;
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		put_le16(im->buf + off + 1, sizes[i]);
		expect_walk_fails(test, im, -EINVAL, off, R_ADD_DIR);
	}
	/* Even when the record would run past the end of the image. */
	off = im->recs[R_FILE].off;
	put_le16(im->buf + off + 1, 0xffff);
	expect_walk_fails(test, im, -EINVAL, off, 0);
}

/* A flipped byte anywhere but the next link fails the CRC. */
static void test_flipped_record_byte(struct kunit *test)
{
	struct std_img s;
	struct img *im;
	int r, i;

	img_standard(test, &s);
	im = s.im;
	for (r = 0; r < R_COUNT; r++) {
		loff_t off = im->recs[r].off;

		/* Bytes 0-2 (type, size) fail as malformed, see above. */
		for (i = 3; i < im->recs[r].size; i++) {
			if (i >= NEXT_POS && i < NEXT_POS + 8)
				continue;
			im->buf[off + i] ^= 0x10;
			expect_walk_fails(test, im, -EBADMSG, off, r);
			im->buf[off + i] ^= 0x10;
		}
	}
	expect_walk_ok(test, im);
}

static void test_chain_backwards(struct kunit *test)
{
	struct std_img s;
	struct img *im;
	loff_t link, prev_end;

	img_standard(test, &s);
	im = s.im;
	link = im->recs[R_ADD_FILE].off + NEXT_POS;
	prev_end = im->recs[R_ADD_FILE].off + im->recs[R_ADD_FILE].size;

	put_le64(im->buf + link, im->recs[R_FILE].off);
	expect_walk_fails(test, im, -EILSEQ, im->recs[R_FILE].off, R_DIR);
	/* Into the record just read, at its last byte. */
	put_le64(im->buf + link, prev_end - 1);
	expect_walk_fails(test, im, -EILSEQ, prev_end - 1, R_DIR);
	/* A negative offset. */
	put_le64(im->buf + link, -1ULL);
	expect_walk_fails(test, im, -EILSEQ, -1, R_DIR);
}

static void test_chain_into_superblock(struct kunit *test)
{
	struct std_img s;
	struct img *im;
	loff_t link;

	img_standard(test, &s);
	im = s.im;
	put_le64(im->buf + FIRST_MD_POS, 16);
	expect_walk_fails(test, im, -EILSEQ, 16, 0);
	put_le64(im->buf + FIRST_MD_POS, 31);
	expect_walk_fails(test, im, -EILSEQ, 31, 0);
	put_le64(im->buf + FIRST_MD_POS, im->recs[R_FILE].off);

	link = im->recs[R_DIR].off + NEXT_POS;
	put_le64(im->buf + link, 8);
	expect_walk_fails(test, im, -EILSEQ, 8, R_ADD_DIR);
}

static void test_chain_to_itself(struct kunit *test)
{
	struct std_img s;
	struct img *im;
	loff_t off;

	img_standard(test, &s);
	im = s.im;
	off = im->recs[R_ADD_LINK].off;
	put_le64(im->buf + off + NEXT_POS, off);
	expect_walk_fails(test, im, -EILSEQ, off, R_ADD_LINK + 1);

	/* The first record, linked from the superblock and from itself. */
	off = im->recs[R_FILE].off;
	put_le64(im->buf + off + NEXT_POS, off);
	expect_walk_fails(test, im, -EILSEQ, off, 1);
}

static void test_prev_link_mismatch(struct kunit *test)
{
	struct std_img s;
	struct img *im;

	img_standard(test, &s);
	im = s.im;
	/* The CRC is right: only the prev link is wrong. */
	img_reseal(im, R_DIR, im->recs[R_FILE_BM].off);
	expect_walk_fails(test, im, -EILSEQ, im->recs[R_DIR].off, R_DIR);
	img_reseal(im, R_DIR, 0);
	expect_walk_fails(test, im, -EILSEQ, im->recs[R_DIR].off, R_DIR);
	img_reseal(im, R_DIR, im->recs[R_DIR].off);
	expect_walk_fails(test, im, -EILSEQ, im->recs[R_DIR].off, R_DIR);
	/* The first record must have none. */
	img_reseal(im, R_DIR, im->recs[R_ADD_FILE].off);
	img_reseal(im, R_FILE, 32);
	expect_walk_fails(test, im, -EILSEQ, im->recs[R_FILE].off, 0);
	img_reseal(im, R_FILE, 0);
	expect_walk_ok(test, im);
}

/*
 * fsck's walk (@go_on): a bad CRC and a bad prev link are each reported
 * once, with the record, and the walk reaches every other record.
 */
static void test_walk_goes_on_past_bad_records(struct kunit *test)
{
	struct incfs_walk w;
	struct std_img s;
	struct img *im;
	int r, ret;

	img_standard(test, &s);
	im = s.im;
	im->buf[im->recs[R_DIR].off + 30] ^= 0x10;
	img_reseal(im, R_ADD_DIR, im->recs[R_FILE].off);

	KUNIT_ASSERT_EQ(test, walk_start(&w, im), 0);
	w.go_on = true;
	for (r = 0; r < R_COUNT; r++) {
		ret = incfs_walk_next(&w);
		KUNIT_EXPECT_EQ(test, w.rec_off, im->recs[r].off);
		if (r == R_DIR || r == R_ADD_DIR) {
			KUNIT_EXPECT_EQ_MSG(test, ret, INCFS_WALK_BAD, "record %d", r);
			KUNIT_EXPECT_EQ(test, w.bad_off, im->recs[r].off);
			KUNIT_EXPECT_EQ(test, strcmp(w.why, r == R_DIR ?
						     "bad record CRC" :
						     "prev link does not match"), 0);
		} else {
			KUNIT_EXPECT_EQ_MSG(test, ret, 1, "record %d", r);
		}
	}
	KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 0);
	KUNIT_EXPECT_FALSE(test, w.torn);

	/* A mount's walk stops at the first. */
	expect_walk_fails(test, im, -EBADMSG, im->recs[R_DIR].off, R_DIR);
}

/* Reserved bytes (an inode's flags, a name's tail) must be zero. */
static void test_reserved_bytes(struct kunit *test)
{
	struct std_img s;
	struct img *im;
	loff_t off;

	img_standard(test, &s);
	im = s.im;
	off = im->recs[R_FILE].off;
	im->buf[off + offsetof(struct incfs_inode, i_flags)] = 1;
	img_reseal(im, R_FILE, 0);
	expect_walk_fails(test, im, -EINVAL, off, 0);
	im->buf[off + offsetof(struct incfs_inode, i_flags)] = 0;
	img_reseal(im, R_FILE, 0);
	expect_walk_ok(test, im);

	/* "file" and then a byte after the name. */
	off = im->recs[R_ADD_FILE].off;
	im->buf[off + offsetof(struct incfs_dir_action, da_name) + 4] = 'x';
	img_reseal(im, R_ADD_FILE, im->recs[R_FILE_BM].off);
	expect_walk_fails(test, im, -EINVAL, off, R_ADD_FILE);
	im->buf[off + offsetof(struct incfs_dir_action, da_name) + 4] = 0;
	im->buf[off + sizeof(struct incfs_dir_action) - 1] = 1;
	img_reseal(im, R_ADD_FILE, im->recs[R_FILE_BM].off);
	expect_walk_fails(test, im, -EINVAL, off, R_ADD_FILE);
}

static void test_maybe_torn(struct kunit *test)
{
	u8 v[14];

	memset(v, 0x11, sizeof(v));
	/* No sector boundary inside: never torn. */
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 14, 0));
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 14, 512 - 14));
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 8, 1024 + 100));
	/* A boundary inside, with bytes on both sides. */
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 14, 512 - 13));
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 14, 4096 - 1));
	/* Only the bytes before the boundary (3 or more) reached the disk. */
	memset(v + 3, 0, sizeof(v) - 3);
	KUNIT_EXPECT_TRUE(test, incfs_maybe_torn(v, 14, 512 - 3));
	KUNIT_EXPECT_TRUE(test, incfs_maybe_torn(v, 14, 512 - 4));
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 14, 512 - 2));
	/* Only the bytes after it. */
	memset(v, 0x11, sizeof(v));
	memset(v, 0, 5);
	KUNIT_EXPECT_TRUE(test, incfs_maybe_torn(v, 14, 2048 - 5));
	KUNIT_EXPECT_FALSE(test, incfs_maybe_torn(v, 14, 2048 - 6));
}

/* Records are placed so that their next link never crosses a sector. */
static void test_md_pos(struct kunit *test)
{
	loff_t end, pos, link;

	for (end = 0; end < 3 * INCFS_SECTOR_SIZE; end++) {
		pos = incfs_md_pos(end);
		link = pos + NEXT_POS;
		KUNIT_EXPECT_GE(test, pos, end);
		KUNIT_EXPECT_LT(test, pos - end, 8);
		KUNIT_EXPECT_EQ_MSG(test, link / INCFS_SECTOR_SIZE,
				    (link + 7) / INCFS_SECTOR_SIZE, "end %lld", end);
		if ((end + NEXT_POS) / INCFS_SECTOR_SIZE ==
		    (end + NEXT_POS + 7) / INCFS_SECTOR_SIZE)
			KUNIT_EXPECT_EQ(test, pos, end);
	}
}

/*
 * An entry written across a sector boundary of which one side was lost:
 * at mount it is absent (INCFS_BME_TORN) where it is malformed, never
 * refused; the same bytes where no boundary splits them are refused.
 */
static void test_bme_torn_entry(struct kunit *test)
{
	struct incfs_blockmap_entry wholes[2], e;
	const char *why;
	int i, k, side, r, flat;

	/* A full block (aligned, as stored) and an LZ4 block anywhere. */
	incfs_encode_bme(&wholes[0], 0x12345000, 4096, 0, 0xdeadbeef);
	incfs_encode_bme(&wholes[1], 0x12345, 801, INCFS_BLOCK_COMPRESSED_LZ4,
			 0xdeadbeef);
	for (i = 0; i < 2; i++) {
		for (k = 1; k < (int)sizeof(e); k++) {
			for (side = 0; side < 2; side++) {
				e = wholes[i];
				if (side)
					memset(&e, 0, k);
				else
					memset((u8 *)&e + k, 0, sizeof(e) - k);
				flat = incfs_check_bme(&e, 0, 1LL << 40, 4096, &why);
				why = NULL;
				r = incfs_check_bme(&e, 512 - k, 1LL << 40, 4096, &why);
				/*
				 * Fields still valid: the read's CRC check
				 * finds it; nothing left: absent.
				 */
				if (flat == INCFS_BME_PRESENT || flat == INCFS_BME_ABSENT) {
					KUNIT_EXPECT_EQ(test, r, flat);
					continue;
				}
				KUNIT_EXPECT_EQ_MSG(test, flat, -EINVAL, "%d k %d side %d",
						    i, k, side);
				KUNIT_EXPECT_EQ_MSG(test, r, INCFS_BME_TORN, "%d k %d side %d",
						    i, k, side);
				KUNIT_EXPECT_EQ(test, strcmp(why, "entry torn by a crash"), 0);
				/* And on the read's path. */
				KUNIT_EXPECT_TRUE_MSG(test, incfs_bme_maybe_torn(&e, 512 - k, 4096),
						      "%d k %d side %d", i, k, side);
			}
		}
	}
}

/*
 * An entry that starts at the last byte of a sector has one byte before
 * the boundary: the low byte of its data offset, zero in every entry of a
 * full block (stored aligned).  Losing it changes nothing, so a malformed
 * entry there is refused and a CRC mismatch is an error, as anywhere
 * else; where that byte is part of an LZ4 block's offset, a tear is still
 * what it may be.
 */
static void test_bme_at_the_last_byte_of_a_sector(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why = NULL;

	incfs_encode_bme(&e, 0x12345000, 4096, 0, 0xdeadbeef);
	KUNIT_EXPECT_FALSE(test, incfs_bme_maybe_torn(&e, 511, 4096));
	e.me_flags = cpu_to_le16(0x8000);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 511, 1 << 20, 4096, &why), -EINVAL);
	KUNIT_EXPECT_EQ(test, strcmp(why, "bad blockmap entry"), 0);

	/* The tail of a 100-byte file: 100 bytes stored, anywhere. */
	incfs_encode_bme(&e, 0x12300, 100, 0, 0xdeadbeef);
	KUNIT_EXPECT_TRUE(test, incfs_bme_maybe_torn(&e, 511, 100));
	incfs_encode_bme(&e, 0x12300, 801, INCFS_BLOCK_COMPRESSED_LZ4, 0xdeadbeef);
	KUNIT_EXPECT_TRUE(test, incfs_bme_maybe_torn(&e, 511, 4096));
	/* A full block whose offset is not aligned is not whole. */
	incfs_encode_bme(&e, 0x12345100, 4096, 0, 0xdeadbeef);
	KUNIT_EXPECT_FALSE(test, incfs_bme_maybe_torn(&e, 511, 4096));
	/* No boundary inside: never torn. */
	incfs_encode_bme(&e, 0, 0, 0, 0);
	KUNIT_EXPECT_FALSE(test, incfs_bme_maybe_torn(&e, 0, 4096));
}

/*
 * The link to the last record written across a sector boundary, one side
 * lost: the chain ends before that record (torn, as for a cut tail), while
 * the same bad link elsewhere is refused.
 */
static void test_walk_torn_link(struct kunit *test)
{
	/* Record A's next link at 511..518: one byte before the boundary. */
	const loff_t a_off = 512 - 1 - NEXT_POS;
	loff_t shift, link, b_off;
	struct incfs_walk w;
	struct img *im;
	int side, nr;
	u64 torn;

	for (shift = 0; shift < 2; shift++) {
		for (side = 0; side < 2; side++) {
			im = img_new(test);
			img_append(test, im, NULL, a_off + shift - im->len);
			img_add_inode(test, im, STD_FILE, 0, S_IFREG | 0444);
			img_add_inode(test, im, STD_DIR, 0, S_IFDIR | 0555);
			link = im->recs[0].off + NEXT_POS;
			b_off = im->recs[1].off;
			/* Both sides of the boundary hold link bytes. */
			KUNIT_ASSERT_NE(test, b_off & 0xff, 0);
			KUNIT_ASSERT_NE(test, b_off >> 8, 0);
			torn = side ? b_off & ~0xffULL : b_off & 0xff;
			put_le64(im->buf + link, torn);
			KUNIT_ASSERT_EQ(test, walk_start(&w, im), 0);
			KUNIT_EXPECT_EQ(test, incfs_walk_next(&w), 1);
			if (!shift) {
				KUNIT_EXPECT_EQ_MSG(test, incfs_walk_next(&w), 0,
						    "side %d", side);
				KUNIT_EXPECT_TRUE(test, w.torn);
				KUNIT_EXPECT_TRUE(test, w.torn_link);
				KUNIT_EXPECT_EQ(test, w.link_pos, link);
			} else {
				KUNIT_EXPECT_LT_MSG(test, incfs_walk_next(&w), 0,
						    "side %d", side);
				KUNIT_EXPECT_FALSE(test, w.torn);
			}
		}
	}
	/* The record the link was written for, damaged: refused, not torn. */
	im = img_new(test);
	img_append(test, im, NULL, a_off - im->len);
	img_add_inode(test, im, STD_FILE, 0, S_IFREG | 0444);
	img_add_inode(test, im, STD_DIR, 0, S_IFDIR | 0555);
	im->buf[im->recs[1].off + 30] ^= 1;
	expect_walk_fails(test, im, -EBADMSG, im->recs[1].off, 1);
	/* Untouched, the chain is whole. */
	im = img_new(test);
	img_append(test, im, NULL, a_off - im->len);
	img_add_inode(test, im, STD_FILE, 0, S_IFREG | 0444);
	img_add_inode(test, im, STD_DIR, 0, S_IFDIR | 0555);
	KUNIT_EXPECT_EQ(test, walk_all(&w, im, &nr), 0);
	KUNIT_EXPECT_EQ(test, nr, 2);
	KUNIT_EXPECT_FALSE(test, w.torn);
}

/* An image with an inode of @size bytes and a blockmap record (@base). */
static struct img *img_blockmap_only(struct kunit *test, u64 size,
				     loff_t base_delta, u32 count)
{
	struct img *im = img_new(test);
	union incfs_md_record rec;
	loff_t base;

	img_add_inode(test, im, 5, size, S_IFREG | 0444);
	base = img_append(test, im, NULL, count * BME_SIZE);
	incfs_encode_blockmap(&rec.bm, 5, base + base_delta, count);
	img_append_md(test, im, &rec);
	return im;
}

/* Walk to the blockmap record of img_blockmap_only() and check it. */
static int check_blockmap_of(struct kunit *test, struct img *im, u64 size,
			     struct incfs_walk *w)
{
	KUNIT_EXPECT_EQ(test, walk_start(w, im), 0);
	KUNIT_EXPECT_EQ(test, incfs_walk_next(w), 1);
	KUNIT_EXPECT_EQ(test, incfs_walk_next(w), 1);
	KUNIT_EXPECT_EQ(test, w->rec.h.h_md_entry_type, INCFS_MD_BLOCK_MAP);
	return incfs_check_blockmap(w, size);
}

static void test_blockmap_count_mismatch(struct kunit *test)
{
	struct incfs_walk w;
	struct img *im;

	im = img_blockmap_only(test, 6144, 0, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 4097, &w), 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 8192, &w), 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 8193, &w), -EINVAL);
	KUNIT_EXPECT_EQ(test, w.bad_off, im->recs[1].off);
	KUNIT_EXPECT_NOT_NULL(test, w.why);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 4096, &w), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, w.why);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 0, &w), -EINVAL);

	/* One block short, the area still in place. */
	im = img_blockmap_only(test, 6144, BME_SIZE, 1);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, w.why);

	/* An empty file has an empty area. */
	im = img_blockmap_only(test, 0, 0, 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 0, &w), 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 1, &w), -EINVAL);
}

static void test_blockmap_overlaps_previous(struct kunit *test)
{
	struct incfs_walk w;
	struct img *im;

	im = img_blockmap_only(test, 6144, -1, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	KUNIT_EXPECT_EQ(test, w.bad_off, im->recs[1].off);
	KUNIT_EXPECT_NOT_NULL(test, w.why);

	/* Over the inode record, or the superblock. */
	im = img_blockmap_only(test, 6144, -45, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	im = img_blockmap_only(test, 6144, -77, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	/* A negative base. */
	im = img_blockmap_only(test, 6144, -(32 + 45 + 1000), 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	/* An empty area before the previous record's end. */
	im = img_blockmap_only(test, 0, -1, 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 0, &w), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, w.why);
}

static void test_blockmap_past_own_record(struct kunit *test)
{
	struct incfs_walk w;
	struct img *im;

	im = img_blockmap_only(test, 6144, 1, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	KUNIT_EXPECT_EQ(test, w.bad_off, im->recs[1].off);
	KUNIT_EXPECT_NOT_NULL(test, w.why);

	/* At or after its record. */
	im = img_blockmap_only(test, 6144, 28, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	im = img_blockmap_only(test, 6144, 4096, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	/* So far that base + size would overflow a signed offset. */
	im = img_blockmap_only(test, 6144, S64_MAX - 32 - 45 - 8, 2);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 6144, &w), -EINVAL);
	/* An empty area after its record. */
	im = img_blockmap_only(test, 0, 1, 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 0, &w), -EINVAL);
	/* But an empty area may sit anywhere in the gap before it. */
	im = img_blockmap_only(test, 0, 0, 0);
	KUNIT_EXPECT_EQ(test, check_blockmap_of(test, im, 0, &w), 0);
}

static void test_bme_absent(struct kunit *test)
{
	struct incfs_blockmap_entry e = {};
	const char *why = NULL;

	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why),
			INCFS_BME_ABSENT);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 32, 100, &why),
			INCFS_BME_ABSENT);
	/* A CRC alone is not an empty entry. */
	incfs_encode_bme(&e, 0, 0, 0, 1);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
}

static void test_bme_present(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why = NULL;

	incfs_encode_bme(&e, 32, 4096, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 32 + 4096, 4096, &why),
			INCFS_BME_PRESENT);
	incfs_encode_bme(&e, 1000, 100, 0, 0x1234);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1100, 100, &why),
			INCFS_BME_PRESENT);
	/* Compressed: any stored size up to a block. */
	incfs_encode_bme(&e, 1000, 17, INCFS_BLOCK_COMPRESSED_LZ4, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1017, 4096, &why),
			INCFS_BME_PRESENT);
	incfs_encode_bme(&e, 1000, 4096, INCFS_BLOCK_COMPRESSED_LZ4, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 5096, 4096, &why),
			INCFS_BME_PRESENT);
	/* 48-bit offsets. */
	incfs_encode_bme(&e, INCFS_MAX_DATA_OFFSET - 4096, 4096, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, INCFS_MAX_DATA_OFFSET, 4096,
					      &why), INCFS_BME_PRESENT);
}

static void test_bme_torn(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why = NULL;

	incfs_encode_bme(&e, 1000, 4096, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 5095, 4096, &why),
			INCFS_BME_TORN);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1000, 4096, &why),
			INCFS_BME_TORN);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 32, 4096, &why),
			INCFS_BME_TORN);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 5096, 4096, &why),
			INCFS_BME_PRESENT);
	/* High offset bits count. */
	incfs_encode_bme(&e, (1LL << 32) + 1000, 4096, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why),
			INCFS_BME_TORN);
	incfs_encode_bme(&e, INCFS_MAX_DATA_OFFSET, 1, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, INCFS_MAX_DATA_OFFSET, 1,
					      &why), INCFS_BME_TORN);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, INCFS_MAX_DATA_OFFSET + 1, 1,
					      &why), INCFS_BME_PRESENT);
}

static void test_bme_bad_size(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why;

	why = NULL;
	incfs_encode_bme(&e, 1000, 0, 0, 0x1234);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 0, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	why = NULL;
	incfs_encode_bme(&e, 1000, 0, INCFS_BLOCK_COMPRESSED_LZ4, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	why = NULL;
	incfs_encode_bme(&e, 1000, 4097, INCFS_BLOCK_COMPRESSED_LZ4, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	why = NULL;
	incfs_encode_bme(&e, 1000, 0xffff, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
}

static void test_bme_bad_flags(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why = NULL;
	int bit;

	for (bit = 1; bit < 16; bit++) {
		why = NULL;
		incfs_encode_bme(&e, 1000, 4096, 1 << bit, 0);
		KUNIT_EXPECT_EQ_MSG(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why),
				    -EINVAL, "flag bit %d", bit);
		KUNIT_EXPECT_NOT_NULL(test, why);
		incfs_encode_bme(&e, 1000, 100,
				 INCFS_BLOCK_COMPRESSED_LZ4 | 1 << bit, 0);
		KUNIT_EXPECT_EQ_MSG(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why),
				    -EINVAL, "flag bit %d", bit);
	}
	/* Flags alone are not an empty entry. */
	incfs_encode_bme(&e, 0, 0, INCFS_BLOCK_COMPRESSED_LZ4, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why), -EINVAL);
}

static void test_bme_offset_in_superblock(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why;
	loff_t off;

	for (off = 0; off < 32; off++) {
		why = NULL;
		incfs_encode_bme(&e, off, 4096, 0, 0x55);
		KUNIT_EXPECT_EQ_MSG(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why),
				    -EINVAL, "offset %lld", off);
		KUNIT_EXPECT_NOT_NULL(test, why);
	}
	incfs_encode_bme(&e, 32, 4096, 0, 0x55);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why),
			INCFS_BME_PRESENT);
}

static void test_bme_size_not_block_len(struct kunit *test)
{
	struct incfs_blockmap_entry e;
	const char *why;

	why = NULL;
	incfs_encode_bme(&e, 1000, 4096, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 2048, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	why = NULL;
	incfs_encode_bme(&e, 1000, 2048, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 4096, &why), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, why);
	/* A block past the end of the file has no length at all. */
	incfs_encode_bme(&e, 1000, 1, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20, 0, &why), -EINVAL);
	/* The tail block of a 6144-byte file. */
	incfs_encode_bme(&e, 1000, 2048, 0, 0);
	KUNIT_EXPECT_EQ(test, incfs_check_bme(&e, 0, 1 << 20,
					      incfs_block_len(6144, 1), &why),
			INCFS_BME_PRESENT);
}

/*
 * A namespace for the name rules: the root (2) holding directory 3 as
 * "d", which holds something, and file 4; @names is what it claims to hold.
 */
struct fake_ns {
	unsigned long names;
};

static umode_t fake_mode(void *ns, u64 ino)
{
	return ino == 2 || ino == 3 ? S_IFDIR | 0555 : ino == 4 ? S_IFREG | 0444 : 0;
}

static u64 fake_lookup(void *ns, u64 dir, const char *name, size_t len)
{
	return dir == 2 && len == 1 && name[0] == 'd' ? 3 : 0;
}

static u64 fake_parent(void *ns, u64 ino)
{
	return ino == 3 ? 2 : 0;
}

static bool fake_has_entries(void *ns, u64 dir)
{
	return dir == 2 || dir == 3;
}

static unsigned long fake_names(void *ns)
{
	return ((struct fake_ns *)ns)->names;
}

static const struct incfs_ns_ops fake_ops = {
	.mode = fake_mode,
	.lookup = fake_lookup,
	.parent = fake_parent,
	.has_entries = fake_has_entries,
	.names = fake_names,
};

/* A namespace holding INCFS_MAX_NAMES names takes no other: -ENOSPC. */
static void test_names_per_mount(struct kunit *test)
{
	struct fake_ns ns = { .names = INCFS_MAX_NAMES - 1 };
	const u8 add = INCFS_DIRA_ADD_ENTRY, rm = INCFS_DIRA_REMOVE_ENTRY;

	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 2, 4, "f", 1), 0);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 3, 4, "f", 1), 0);
	ns.names = INCFS_MAX_NAMES;
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 2, 4, "f", 1),
			-ENOSPC);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 3, 4, "f", 1),
			-ENOSPC);
	/* Other errors come first; removing a name is always possible. */
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 2, 4, "d", 1),
			-EEXIST);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 2, 9, "f", 1),
			-ENOENT);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, add, 3, 3, "e", 1),
			-EMLINK);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, rm, 2, 3, "d", 1),
			-ENOTEMPTY);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, rm, 3, 4, "f", 1),
			-ENOENT);
}

/*
 * Removing a name the directory does not hold is -ENOENT whatever the
 * child's number, 0 (lookup()'s "no such name") too: it once passed, and
 * the tree then removed a name it could not find (found by incfs_fuzz).
 */
static void test_remove_of_an_absent_name(struct kunit *test)
{
	struct fake_ns ns = { .names = 3 };
	const u8 rm = INCFS_DIRA_REMOVE_ENTRY;

	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, rm, 2, 0, "x", 1),
			-ENOENT);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, rm, 3, 0, "d", 1),
			-ENOENT);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, rm, 2, 4, "x", 1),
			-ENOENT);
	KUNIT_EXPECT_EQ(test, incfs_name_rules_check(&fake_ops, &ns, rm, 2, 0, "d", 1),
			-ENOENT);
}

static struct kunit_case incfs_format_cases[] = {
	KUNIT_CASE(test_layout),
	KUNIT_CASE(test_sb_init_round_trip),
	KUNIT_CASE(test_md_crc),
	KUNIT_CASE(test_encode_records),
	KUNIT_CASE(test_name_valid),
	KUNIT_CASE(test_blocks_for_size),
	KUNIT_CASE(test_block_len),
	KUNIT_CASE(test_bme_encode_decode),
	KUNIT_CASE(test_walk_valid_chain),
	KUNIT_CASE(test_walk_record_fields),
	KUNIT_CASE(test_walk_empty_image),
	KUNIT_CASE(test_walk_cut_fresh_superblock),
	KUNIT_CASE(test_walk_cut_everywhere),
	KUNIT_CASE(test_walk_cut_blocks),
	KUNIT_CASE(test_walk_read_error),
	KUNIT_CASE(test_bad_magic),
	KUNIT_CASE(test_bad_version),
	KUNIT_CASE(test_bad_sb_sizes),
	KUNIT_CASE(test_unknown_sb_flags),
	KUNIT_CASE(test_short_garbage),
	KUNIT_CASE(test_unknown_record_type),
	KUNIT_CASE(test_bad_record_size),
	KUNIT_CASE(test_flipped_record_byte),
	KUNIT_CASE(test_chain_backwards),
	KUNIT_CASE(test_chain_into_superblock),
	KUNIT_CASE(test_chain_to_itself),
	KUNIT_CASE(test_prev_link_mismatch),
	KUNIT_CASE(test_walk_goes_on_past_bad_records),
	KUNIT_CASE(test_reserved_bytes),
	KUNIT_CASE(test_maybe_torn),
	KUNIT_CASE(test_md_pos),
	KUNIT_CASE(test_walk_torn_link),
	KUNIT_CASE(test_names_per_mount),
	KUNIT_CASE(test_remove_of_an_absent_name),
	KUNIT_CASE(test_blockmap_count_mismatch),
	KUNIT_CASE(test_blockmap_overlaps_previous),
	KUNIT_CASE(test_blockmap_past_own_record),
	KUNIT_CASE(test_bme_absent),
	KUNIT_CASE(test_bme_present),
	KUNIT_CASE(test_bme_torn),
	KUNIT_CASE(test_bme_torn_entry),
	KUNIT_CASE(test_bme_at_the_last_byte_of_a_sector),
	KUNIT_CASE(test_bme_bad_size),
	KUNIT_CASE(test_bme_bad_flags),
	KUNIT_CASE(test_bme_offset_in_superblock),
	KUNIT_CASE(test_bme_size_not_block_len),
	{}
};

static struct kunit_suite incfs_format_suite = {
	.name = "incfs_format",
	.test_cases = incfs_format_cases,
};

/* Serials wrap after 2^32 pending reads; order must survive the wrap. */
static void test_serial_after(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, incfs_serial_after(2, 1));
	KUNIT_EXPECT_FALSE(test, incfs_serial_after(1, 1));
	KUNIT_EXPECT_FALSE(test, incfs_serial_after(1, 2));
	KUNIT_EXPECT_TRUE(test, incfs_serial_after(0, U32_MAX));
	KUNIT_EXPECT_TRUE(test, incfs_serial_after(5, U32_MAX - 5));
	KUNIT_EXPECT_FALSE(test, incfs_serial_after(U32_MAX, 0));
	KUNIT_EXPECT_FALSE(test, incfs_serial_after(U32_MAX - 5, 5));
}

static struct kunit_case incfs_helper_cases[] = {
	KUNIT_CASE(test_serial_after),
	{}
};

static struct kunit_suite incfs_helper_suite = {
	.name = "incfs_helpers",
	.test_cases = incfs_helper_cases,
};

kunit_test_suites(&incfs_format_suite, &incfs_helper_suite);

MODULE_DESCRIPTION("KUnit tests of the incfs on-disk format");
MODULE_LICENSE("GPL");
