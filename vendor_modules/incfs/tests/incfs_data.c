// SPDX-License-Identifier: GPL-2.0
/*
 * incfs: data blocks written through .cmd and read back byte-exact (read,
 * pread, mmap), uncompressed and LZ4; every row of the data-error table in
 * vendor_modules/incfs/README.md; batched writes that stop at a bad record
 * or where the backing filesystem is full; and the state after a remount.
 * Each case runs with the backing file on tmpfs and on ext4 (the scratch
 * disk).
 */
#include <sys/mman.h>
#include <sys/statfs.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

/* Short: the absence of a block is seen as ETIME after this. */
#define TIMEOUT_MS	200

FIXTURE(data) {
	struct incfs_mnt m;
};

FIXTURE_VARIANT(data) {
	bool ext4;
};

FIXTURE_VARIANT_ADD(data, tmpfs) {
	.ext4 = false,
};

FIXTURE_VARIANT_ADD(data, ext4) {
	.ext4 = true,
};

FIXTURE_SETUP(data)
{
	const char *base = "/tmp";
	struct statfs st;

	if (variant->ext4) {
		base = incfs_scratch();
		if (statfs(base, &st) || st.f_type != INCFS_EXT4_MAGIC)
			SKIP(return, "%s is not an ext4 mount", base);
	}
	ASSERT_EQ(0, incfs_setup_at(&self->m, base, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(data)
{
	incfs_teardown(&self->m);
}

/*
 * A file of size bytes delivered whole (in one write), then checked with
 * read() in several chunk sizes, pread() around every block boundary and
 * past the end.
 */
static int roundtrip(struct __test_metadata *_metadata, struct incfs_mnt *m, __u64 size,
		     bool compressible, enum incfs_send_mode mode, int *lz4)
{
	const size_t chunks[] = { 1, 4096, 3000, 65536, 1 << 20 };
	struct incfs_batch b;
	struct incfs_file f;
	__u32 n = incfs_nblocks(size);
	__u32 *blocks = calloc(n + 1, sizeof(*blocks));
	struct stat st;
	int fd, ret;

	if (!blocks)
		return -ENOMEM;
	memset(&f, 0, sizeof(f));
	f.size = size;
	f.seed = size * 31 + 5;
	f.compressible = compressible;
	ret = incfs_make(m->cmd, INCFS_ROOT_INODE, "file", S_IFREG | 0555, size, &f.ino);
	if (ret) {
		TH_LOG("%s", incfs_err);
		free(blocks);
		return ret;
	}
	for (__u32 i = 0; i < n; i++)
		blocks[i] = i;
	ret = incfs_batch_init(&b, &f, blocks, n, mode);
	free(blocks);
	if (ret)
		return ret;
	if (lz4)
		*lz4 = b.lz4;
	ret = n ? incfs_write_records(m->cmd, b.rec, n) : 0;
	incfs_batch_free(&b);
	if (ret) {
		TH_LOG("%s", incfs_err);
		return ret;
	}

	fd = open(incfs_path(m, "file"), O_RDONLY);
	if (fd < 0)
		return -errno;
	EXPECT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(size, st.st_size);
	for (unsigned int i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		if (chunks[i] == 1 && size > 3 * INCFS_BS)
			continue;
		ret = incfs_check_read_all(fd, &f, chunks[i]);
		EXPECT_EQ(0, ret) TH_LOG("chunk %zu: %s", chunks[i], incfs_err);
	}
	for (__u64 off = 0; off <= size + INCFS_BS; off += INCFS_BS) {
		const __u64 starts[] = { off, off ? off - 1 : 0, off + 1, off ? off - 100 : 0 };

		for (unsigned int i = 0; i < 4; i++) {
			ret = incfs_check_pread(fd, &f, starts[i], 200);
			EXPECT_EQ(0, ret) TH_LOG("%s", incfs_err);
			if (ret)
				break;
		}
		if (ret)
			break;
	}
	EXPECT_EQ(0, incfs_check_pread(fd, &f, 0, size + 5000)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_pread(fd, &f, size, 10)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_pread(fd, &f, size + 12345, 10)) TH_LOG("%s", incfs_err);
	close(fd);
	return 0;
}

TEST_F(data, file_of_0_bytes)
{
	struct incfs_new_data_block rec = { 0 };
	char buf[16];
	struct stat st;
	__u64 ino;
	int fd;

	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 0, false, INCFS_SEND_NONE, NULL));
	ASSERT_EQ(0, stat(incfs_path(&self->m, "file"), &st));
	ino = st.st_ino;
	fd = open(incfs_path(&self->m, "file"), O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, read(fd, buf, sizeof(buf)));
	close(fd);
	/* It has no block 0. */
	rec.file_ino = ino;
	rec.data_len = 1;
	rec.data = (__u64)(unsigned long)buf;
	EXPECT_EQ(-1, write(self->m.cmd, &rec, sizeof(rec)));
	EXPECT_EQ(ERANGE, errno);
}

TEST_F(data, file_of_1_byte)
{
	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 1, false, INCFS_SEND_NONE, NULL));
}

TEST_F(data, file_of_4096_bytes)
{
	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 4096, false, INCFS_SEND_NONE, NULL));
}

TEST_F(data, file_of_6144_bytes)
{
	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 6144, false, INCFS_SEND_NONE, NULL));
}

TEST_F_TIMEOUT(data, file_of_600_blocks, 120)
{
	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 2457600 + 123, false, INCFS_SEND_NONE,
			       NULL));
}

TEST_F(data, lz4_blocks)
{
	int lz4 = 0;

	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 10 * INCFS_BS + 500, true, INCFS_SEND_LZ4,
			       &lz4));
	/* Every block, the tail too, went compressed. */
	EXPECT_EQ(11, lz4);
}

TEST_F(data, mixed_none_and_lz4_blocks)
{
	int lz4 = 0;

	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 16 * INCFS_BS + 1000, true,
			       INCFS_SEND_MIXED, &lz4));
	EXPECT_EQ(8, lz4);
}

TEST_F(data, lz4_where_it_shrinks_random_blocks_plain)
{
	int lz4 = -1;

	/* Random data does not shrink: the helper sends it uncompressed. */
	ASSERT_EQ(0, roundtrip(_metadata, &self->m, 4 * INCFS_BS, false, INCFS_SEND_LZ4, &lz4));
	EXPECT_EQ(0, lz4);
}

TEST_F(data, errors_on_overwrite)
{
	struct incfs_file f, other;
	__u32 blocks[] = { 0, 1, 2 };
	int cmd = self->m.cmd;

	ASSERT_EQ(0, incfs_make_file(cmd, INCFS_ROOT_INODE, "f", &f, 3 * INCFS_BS - 10, 11, false))
		TH_LOG("%s", incfs_err);
	f.compressible = true;
	ASSERT_EQ(0, incfs_send(cmd, &f, blocks, 2, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	/* The same data again, alone, in a batch, and compressed. */
	EXPECT_EQ(0, incfs_send(cmd, &f, blocks, 1, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_send(cmd, &f, blocks, 3, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_send(cmd, &f, blocks, 3, INCFS_SEND_LZ4)) TH_LOG("%s", incfs_err);
	/* Other data for present blocks: taken, and nothing changes. */
	other = f;
	other.seed = 12;
	other.compressible = false;
	EXPECT_EQ(0, incfs_send(cmd, &other, blocks, 3, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	other.compressible = true;
	EXPECT_EQ(0, incfs_send(cmd, &other, blocks, 3, INCFS_SEND_LZ4)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &f)) TH_LOG("%s", incfs_err);
	/* Not in the page cache only: the backing file holds the first data. */
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &f)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_send(self->m.cmd, &other, blocks, 3, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &f)) TH_LOG("%s", incfs_err);
}

/* ----- the data-error table ----- */

/*
 * A file "f" of 2.5 blocks, nothing delivered, and a valid record for its
 * block 0 (compressible content) to be spoiled by each case.
 */
struct target {
	struct incfs_file f;
	struct incfs_batch b;
	unsigned char junk[8192];
};

static int make_target(struct incfs_mnt *m, struct target *t, __u32 block)
{
	int ret = incfs_make_file(m->cmd, INCFS_ROOT_INODE, "f", &t->f, 2 * INCFS_BS + 2048, 21,
				  false);

	if (ret)
		return ret;
	t->f.compressible = true;
	for (size_t i = 0; i < sizeof(t->junk); i++)
		t->junk[i] = incfs_mix(i) >> 7;
	return incfs_batch_init(&t->b, &t->f, &block, 1, INCFS_SEND_NONE);
}

/* write() of one record: 0 or -errno. */
static int write_one(int cmd, const struct incfs_new_data_block *rec)
{
	ssize_t n = write(cmd, rec, sizeof(*rec));

	if (n < 0)
		return -errno;
	return n == sizeof(*rec) ? 0 : -ENODATA;
}

/* The rejected records left the block absent; the good one then works. */
static void check_still_absent(struct __test_metadata *_metadata, struct incfs_mnt *m,
			       struct target *t)
{
	__u32 block = t->b.rec[0].block_index;
	int fd = open(incfs_path(m, "f"), O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, incfs_check_absent(fd, &t->f, block)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, write_one(m->cmd, &t->b.rec[0]));
	EXPECT_EQ(0, incfs_check_block(fd, &t->f, block)) TH_LOG("%s", incfs_err);
	close(fd);
	incfs_batch_free(&t->b);
}

TEST_F(data, block_index_beyond_end_erange)
{
	struct incfs_new_data_block rec;
	struct target t;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	rec = t.b.rec[0];
	rec.block_index = 3;
	EXPECT_EQ(-ERANGE, write_one(self->m.cmd, &rec));
	rec.block_index = 1000000;
	EXPECT_EQ(-ERANGE, write_one(self->m.cmd, &rec));
	rec.block_index = 0xffffffff;
	EXPECT_EQ(-ERANGE, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &t);
}

TEST_F(data, bad_lengths_einval)
{
	struct incfs_new_data_block rec;
	struct target t, tail;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	rec = t.b.rec[0];
	rec.data_len = 0;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = INCFS_BS + 1;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = 8192;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.compression = COMPRESSION_LZ4;
	rec.data_len = INCFS_BS + 1;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = 0;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	/* A short block that is not the last one. */
	rec = t.b.rec[0];
	rec.data_len = 100;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = INCFS_BS - 1;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = 2048;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &t);

	/* The tail block (2048 bytes) with another length. */
	ASSERT_EQ(0, incfs_batch_init(&tail.b, &t.f, (__u32[]){ 2 }, 1, INCFS_SEND_NONE));
	tail.f = t.f;
	rec = tail.b.rec[0];
	ASSERT_EQ(2048, rec.data_len);
	rec.data_len = INCFS_BS;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = 2047;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = 2049;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.data_len = 1;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &tail);
}

TEST_F(data, bad_lz4_ebadmsg)
{
	unsigned char raw[INCFS_BS], lz[INCFS_BS];
	struct incfs_new_data_block rec;
	struct target t, tail;
	int n, fd;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	/* Not LZ4 at all (liblz4 agrees that it does not make a block). */
	ASSERT_NE(INCFS_BS, LZ4_decompress_safe((const char *)t.junk, (char *)raw, 1000,
						 INCFS_BS));
	ASSERT_NE(INCFS_BS, LZ4_decompress_safe((const char *)t.junk, (char *)raw, INCFS_BS,
						 INCFS_BS));
	rec = t.b.rec[0];
	rec.compression = COMPRESSION_LZ4;
	rec.data = (__u64)(unsigned long)t.junk;
	rec.data_len = 1000;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	rec.data_len = INCFS_BS;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	/* Valid LZ4 of the block, cut short. */
	incfs_block_content(&t.f, 0, raw);
	n = LZ4_compress_default((const char *)raw, (char *)lz, INCFS_BS, INCFS_BS - 1);
	ASSERT_LT(10, n);
	rec.data = (__u64)(unsigned long)lz;
	rec.data_len = n - 5;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	/* Valid LZ4 that decompresses to fewer bytes than the block. */
	n = LZ4_compress_default((const char *)raw, (char *)lz, INCFS_BS - 1, INCFS_BS - 1);
	ASSERT_LT(0, n);
	rec.data_len = n;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	n = LZ4_compress_default((const char *)raw, (char *)lz, 100, INCFS_BS - 1);
	ASSERT_LT(0, n);
	rec.data_len = n;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &t);

	/* For the 2048-byte tail: LZ4 of a whole block, and of 2047 bytes. */
	ASSERT_EQ(0, incfs_batch_init(&tail.b, &t.f, (__u32[]){ 2 }, 1, INCFS_SEND_NONE));
	tail.f = t.f;
	rec = tail.b.rec[0];
	rec.compression = COMPRESSION_LZ4;
	incfs_block_content(&t.f, 2, raw);
	n = LZ4_compress_default((const char *)raw, (char *)lz, INCFS_BS, INCFS_BS - 1);
	ASSERT_LT(0, n);
	rec.data = (__u64)(unsigned long)lz;
	rec.data_len = n;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	n = LZ4_compress_default((const char *)raw, (char *)lz, 2047, INCFS_BS - 1);
	ASSERT_LT(0, n);
	rec.data_len = n;
	EXPECT_EQ(-EBADMSG, write_one(self->m.cmd, &rec));
	/* The right LZ4 for the tail is taken. */
	n = LZ4_compress_default((const char *)raw, (char *)lz, 2048, INCFS_BS - 1);
	ASSERT_LT(0, n);
	ASSERT_GT(2048, n);
	rec.data_len = n;
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, incfs_check_absent(fd, &t.f, 2)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, write_one(self->m.cmd, &rec));
	EXPECT_EQ(0, incfs_check_block(fd, &t.f, 2)) TH_LOG("%s", incfs_err);
	close(fd);
	incfs_batch_free(&tail.b);
}

TEST_F(data, unknown_compression_einval)
{
	const __u32 algs[] = { 2, 7, 0x80000000, 0xffffffff };
	struct incfs_new_data_block rec;
	struct target t;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	rec = t.b.rec[0];
	for (unsigned int i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
		rec.compression = algs[i];
		EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec)) TH_LOG("compression %u", algs[i]);
	}
	check_still_absent(_metadata, &self->m, &t);
}

/* Reserved fields of a record must be zero: EINVAL, nothing stored. */
TEST_F(data, reserved_fields_einval)
{
	struct incfs_new_data_block rec;
	struct target t;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	rec = t.b.rec[0];
	rec.reserved1 = 1;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	rec.reserved1 = 0;
	rec.reserved2 = 1ULL << 63;
	EXPECT_EQ(-EINVAL, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &t);
}

TEST_F(data, unknown_ino_enoent)
{
	struct incfs_new_data_block rec;
	struct target t;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	rec = t.b.rec[0];
	rec.file_ino = 1000000;
	EXPECT_EQ(-ENOENT, write_one(self->m.cmd, &rec));
	rec.file_ino = t.f.ino + 1000;
	EXPECT_EQ(-ENOENT, write_one(self->m.cmd, &rec));
	rec.file_ino = 0;
	EXPECT_EQ(-ENOENT, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &t);
}

TEST_F(data, directory_ino_eisdir)
{
	struct incfs_new_data_block rec;
	struct target t;
	__u64 dir;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(self->m.cmd, INCFS_ROOT_INODE, "d", &dir))
		TH_LOG("%s", incfs_err);
	rec = t.b.rec[0];
	rec.file_ino = dir;
	EXPECT_EQ(-EISDIR, write_one(self->m.cmd, &rec));
	rec.file_ino = INCFS_ROOT_INODE;
	EXPECT_EQ(-EISDIR, write_one(self->m.cmd, &rec));
	check_still_absent(_metadata, &self->m, &t);
}

TEST_F(data, write_size_einval)
{
	const size_t sizes[] = { 0, 1, INCFS_REC - 1, INCFS_REC + 1, 2 * INCFS_REC - 1,
				 3 * INCFS_REC + 20 };
	struct incfs_new_data_block recs[4];
	struct target t;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < 4; i++)
		recs[i] = t.b.rec[0];
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		errno = 0;
		EXPECT_EQ(-1, write(self->m.cmd, recs, sizes[i])) TH_LOG("size %zu", sizes[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("size %zu: %s", sizes[i], strerror(errno));
	}
	check_still_absent(_metadata, &self->m, &t);
}

TEST_F(data, bad_pointer_efault)
{
	struct incfs_new_data_block rec;
	struct target t;
	void *gone;

	ASSERT_EQ(0, make_target(&self->m, &t, 0)) TH_LOG("%s", incfs_err);
	gone = mmap(NULL, 2 * INCFS_BS, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, 2 * INCFS_BS));
	rec = t.b.rec[0];
	rec.data = 8;
	EXPECT_EQ(-EFAULT, write_one(self->m.cmd, &rec));
	rec.data = (__u64)(unsigned long)gone;
	EXPECT_EQ(-EFAULT, write_one(self->m.cmd, &rec));
	rec.compression = COMPRESSION_LZ4;
	rec.data_len = 1000;
	EXPECT_EQ(-EFAULT, write_one(self->m.cmd, &rec));
	/* The records themselves unreadable. */
	errno = 0;
	EXPECT_EQ(-1, write(self->m.cmd, gone, INCFS_REC));
	EXPECT_EQ(EFAULT, errno);
	check_still_absent(_metadata, &self->m, &t);
}

/* ----- a batch stops at its first bad record ----- */

TEST_F(data, batch_stops_at_bad_record)
{
	struct incfs_batch b;
	struct incfs_file f;
	__u32 blocks[6] = { 0, 1, 2, 3, 4, 5 };
	ssize_t n;
	int cmd = self->m.cmd, fd;

	ASSERT_EQ(0, incfs_make_file(cmd, INCFS_ROOT_INODE, "f", &f, 6 * INCFS_BS, 31, false))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_batch_init(&b, &f, blocks, 6, INCFS_SEND_NONE));
	b.rec[3].compression = 7;
	n = write(cmd, b.rec, 6 * INCFS_REC);
	EXPECT_EQ(3 * INCFS_REC, n) TH_LOG("write returned %zd (%s)", n, strerror(errno));
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	for (__u32 i = 0; i < 3; i++) {
		EXPECT_EQ(0, incfs_check_block(fd, &f, i)) TH_LOG("%s", incfs_err);
	}
	for (__u32 i = 3; i < 6; i++) {
		EXPECT_EQ(0, incfs_check_absent(fd, &f, i)) TH_LOG("%s", incfs_err);
	}

	/* A bad first record: the error, and nothing stored. */
	b.rec[4].block_index = 99;
	n = write(cmd, &b.rec[3], 3 * INCFS_REC);
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EINVAL, errno);
	n = write(cmd, &b.rec[4], 2 * INCFS_REC);
	EXPECT_EQ(-1, n);
	EXPECT_EQ(ERANGE, errno);
	EXPECT_EQ(0, incfs_check_absent(fd, &f, 5)) TH_LOG("%s", incfs_err);

	/* Present, present, bad: 2 records taken. */
	b.rec[4].block_index = 4;
	b.rec[3].compression = COMPRESSION_NONE;
	b.rec[5].data_len = 0;
	n = write(cmd, &b.rec[3], 3 * INCFS_REC);
	EXPECT_EQ(2 * INCFS_REC, n) TH_LOG("write returned %zd (%s)", n, strerror(errno));
	EXPECT_EQ(0, incfs_check_block(fd, &f, 3)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_block(fd, &f, 4)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_absent(fd, &f, 5)) TH_LOG("%s", incfs_err);
	close(fd);
	incfs_batch_free(&b);
}

/* ----- a batch stops where the backing filesystem is full ----- */

/* The backing file on a tmpfs with room for a few blocks. */
#define FULL_TMPFS_OPTS	"size=32k,mode=0755"
#define FULL_BLOCKS	64

FIXTURE(full) {
	char top[64];
	struct incfs_mnt m;
};

FIXTURE_SETUP(full)
{
	snprintf(self->top, sizeof(self->top), "/tmp/full.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->top)) TH_LOG("mkdtemp: %s", strerror(errno));
	ASSERT_EQ(0, mount("tmpfs", self->top, "tmpfs", 0, FULL_TMPFS_OPTS))
		TH_LOG("mount tmpfs %s: %s", FULL_TMPFS_OPTS, strerror(errno));
	ASSERT_EQ(0, incfs_setup_at(&self->m, self->top, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(full)
{
	incfs_teardown(&self->m);
	umount2(self->top, MNT_DETACH);
	rmdir(self->top);
}

/*
 * The backing file fills up in the middle of a write: write() returns the
 * length of the records stored before that point (each readable), not the
 * error, and the block it stopped at is still absent.
 */
TEST_F(full, batch_cut_short_counts_stored_blocks)
{
	__u32 blocks[FULL_BLOCKS];
	struct incfs_batch b;
	struct incfs_file f;
	ssize_t n;
	__u32 k;
	int fd;

	for (__u32 i = 0; i < FULL_BLOCKS; i++)
		blocks[i] = i;
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &f,
				     FULL_BLOCKS * INCFS_BS, 47, false)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_batch_init(&b, &f, blocks, FULL_BLOCKS, INCFS_SEND_NONE));
	n = write(self->m.cmd, b.rec, FULL_BLOCKS * INCFS_REC);
	ASSERT_LT(0, n) TH_LOG("write returned %zd (%s): the stored blocks are not counted",
			       n, strerror(errno));
	ASSERT_EQ(0, n % INCFS_REC);
	k = n / INCFS_REC;
	ASSERT_GT(FULL_BLOCKS, k) TH_LOG("all %u blocks fit in a %s tmpfs", k, FULL_TMPFS_OPTS);
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	for (__u32 i = 0; i < k; i++) {
		EXPECT_EQ(0, incfs_check_block(fd, &f, i)) TH_LOG("%s", incfs_err);
	}
	EXPECT_EQ(0, incfs_check_absent(fd, &f, k)) TH_LOG("%s", incfs_err);

	/* The first record the backing file refuses: its error. */
	errno = 0;
	EXPECT_EQ(-1, write(self->m.cmd, &b.rec[k], INCFS_REC));
	EXPECT_EQ(ENOSPC, errno);
	close(fd);
	incfs_batch_free(&b);
}

/* ----- remount ----- */

TEST_F(data, work_after_remount)
{
	struct incfs_tree t;

	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, 100)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, false)) TH_LOG("before: %s", incfs_err);
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, false)) TH_LOG("remounted: %s", incfs_err);
	/* The blocks not delivered before can be delivered now. */
	ASSERT_EQ(0, incfs_tree_complete(&t, self->m.cmd)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, true)) TH_LOG("completed: %s", incfs_err);
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, true)) TH_LOG("remounted: %s", incfs_err);
}

/* ----- mmap ----- */

TEST_F(data, mmap_of_loaded_file)
{
	size_t size = 9 * INCFS_BS + 1234, len = 10 * INCFS_BS;
	unsigned char *want = malloc(size), *p, *q;
	struct incfs_file f;
	int fd;

	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &f, size, 41, true))
		TH_LOG("%s", incfs_err);
	incfs_fill(&f, 0, size, want);
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, q) TH_LOG("mmap: %s", strerror(errno));
	/* Backwards, so that each page is a fault of its own. */
	for (int page = 9; page >= 0; page--) {
		size_t off = (size_t)page * INCFS_BS;
		size_t n = size - off < INCFS_BS ? size - off : INCFS_BS;

		EXPECT_EQ(0, memcmp(p + off, want + off, n)) TH_LOG("page %d", page);
		EXPECT_EQ(0, memcmp(q + off, want + off, n)) TH_LOG("page %d", page);
	}
	/* Past the end of the file, the last page is zero-filled. */
	for (size_t i = size; i < len; i++) {
		if (p[i]) {
			EXPECT_EQ(0, p[i]) TH_LOG("byte %zu past the end", i);
			break;
		}
	}
	/* A private copy can be written; the file stays as it was. */
	q[0] ^= 0xff;
	EXPECT_EQ(want[0], p[0]);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	EXPECT_EQ(EACCES, errno);
	munmap(p, len);
	munmap(q, len);
	close(fd);
	free(want);
}

TEST_HARNESS_MAIN
