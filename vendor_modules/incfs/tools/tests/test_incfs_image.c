// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of libincfs-image and of the incfs-image CLI: a
 * kselftest-harness program (KTAP on stdout, one result line per case).
 *
 * The cli.* cases run the incfs-image named by the environment variable
 * INCFS_IMAGE (qemu/gkiqemu/tests/test_vendor_tools.py builds the host
 * tool and sets it): unset, they are skipped; set to anything but an
 * executable, they fail.  Each case works in a fresh folder under $TMPDIR
 * (or /tmp), removed when the case passes.  Built with
 * -fsanitize=address,undefined, a case that passes is also checked for
 * leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "tools_test.h"

#include "../../format.h"
#include "incfs_image.h"

#define BS	INCFS_DATA_FILE_BLOCK_SIZE
#define OFF_FIRST_MD	offsetof(struct incfs_super_block, s_first_md_offset)
#define OFF_NEXT	offsetof(struct incfs_md_header, h_next_md_offset)
#define OFF_CRC		offsetof(struct incfs_md_header, h_record_crc)
/* For the cases that write an image per byte: minutes under ASan on a disk. */
#define SLOW_TIMEOUT	900

/* The case's scratch folder and the CLI under test (set by the fixtures). */
static const char *tmpdir;
static const char *cli;

static void scratch_setup(struct __test_metadata *_metadata, char *dir,
			  size_t size)
{
	const char *base = getenv("TMPDIR");

	snprintf(dir, size, "%s/test_incfs_image.XXXXXX",
		 base && *base ? base : "/tmp");
	ASSERT_NE(NULL, mkdtemp(dir))
		TH_LOG("mkdtemp %s: %s", dir, strerror(errno));
	tmpdir = dir;
}

/* Library cases. */
FIXTURE(image) {
	char dir[PATH_MAX];
};

FIXTURE_SETUP(image)
{
	scratch_setup(_metadata, self->dir, sizeof(self->dir));
}

FIXTURE_TEARDOWN(image)
{
	tools_test_cleanup(_metadata, self->dir);
}

/* CLI cases: skipped without INCFS_IMAGE, failed if it is not a program. */
FIXTURE(cli) {
	char dir[PATH_MAX];
};

FIXTURE_SETUP(cli)
{
	static char path[PATH_MAX];

	cli = getenv("INCFS_IMAGE");
	if (!cli || !*cli)
		SKIP(return, "INCFS_IMAGE (the incfs-image to test) is not set");
	ASSERT_EQ(0, access(cli, X_OK))
		TH_LOG("INCFS_IMAGE=%s: %s", cli, strerror(errno));
	/* Absolute, for the cases that work in their own folder. */
	ASSERT_NE(NULL, realpath(cli, path));
	cli = path;
	scratch_setup(_metadata, self->dir, sizeof(self->dir));
}

FIXTURE_TEARDOWN(cli)
{
	tools_test_cleanup(_metadata, self->dir);
}

static const char *tpath(const char *name)
{
	static char buf[32][512];
	static int i;

	i = (i + 1) % 32;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

/* Deterministic content: compressible when @text, else random-looking. */
static void content(uint64_t seed, uint32_t block, bool text, char *buf,
		    size_t len)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + block + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = text ? "incfs image "[(i + block) % 12] : (char)x;
	}
}

static uint32_t blen(uint64_t size, uint32_t b)
{
	uint64_t s = (uint64_t)b * BS;

	return size - s < BS ? size - s : BS;
}

static int read_file(const char *path, char **buf, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return -1;
	*len = st.st_size;
	*buf = malloc(*len + 1);
	if (!*buf || pread(fd, *buf, *len, 0) != (ssize_t)*len) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, buf, len) == (ssize_t)len;
	close(fd);
	return ok ? 0 : -1;
}

/* ===== the golden image ===== */

struct gfile {
	uint64_t ino, size;
	bool text;
	const char *present;	/* per block: '1' raw, 'z' lz4 wanted, '0' absent */
};

/*
 * Root: d (dir), d/a (6 blocks, text, some absent), b (2 blocks random,
 * tail), d/hard = b, c (1 full random), empty, and "gone": named, blocks,
 * then unnamed (dead for gc).
 */
static struct gfile gf[] = {
	{ 0, 5 * BS + 100, true, "zz0z1z" },
	{ 0, BS + BS / 2, false, "11" },
	{ 0, BS, false, "1" },
	{ 0, 0, false, "" },
	{ 0, 3 * BS, false, "111" },
};

#define NGF ARRAY_SIZE(gf)
static uint64_t gdir;

static void make_golden(struct __test_metadata *_metadata, const char *path)
{
	struct incfs_img_writer *w = incfs_img_create(path);
	char buf[BS];
	size_t i;
	uint32_t b;

	ASSERT_NE(NULL, w);
	gdir = incfs_img_new_file(w, S_IFDIR | 0755, 0);
	ASSERT_EQ(3, gdir);
	for (i = 0; i < NGF; i++) {
		gf[i].ino = incfs_img_new_file(w, S_IFREG | 0644, gf[i].size);
		ASSERT_EQ(4 + i, gf[i].ino);
	}
	ASSERT_EQ(0, incfs_img_add_name(w, 2, gdir, "d"));
	ASSERT_EQ(0, incfs_img_add_name(w, gdir, gf[0].ino, "a"));
	ASSERT_EQ(0, incfs_img_add_name(w, 2, gf[1].ino, "b"));
	ASSERT_EQ(0, incfs_img_add_name(w, gdir, gf[1].ino, "hard"));
	ASSERT_EQ(0, incfs_img_add_name(w, 2, gf[2].ino, "c"));
	ASSERT_EQ(0, incfs_img_add_name(w, 2, gf[3].ino, "empty"));
	ASSERT_EQ(0, incfs_img_add_name(w, 2, gf[4].ino, "gone"));
	for (i = 0; i < NGF; i++) {
		for (b = 0; gf[i].present[b]; b++) {
			if (gf[i].present[b] == '0')
				continue;
			content(i, b, gf[i].text, buf, blen(gf[i].size, b));
			ASSERT_EQ(0, incfs_img_put_block(w, gf[i].ino, b, buf,
							 blen(gf[i].size, b),
							 gf[i].present[b] == 'z'));
		}
	}
	ASSERT_EQ(0, incfs_img_remove_name(w, 2, gf[4].ino, "gone"));
	ASSERT_EQ(0, incfs_img_finish(w));
}

/* Every present block of @img reads back as the generator's. */
static void check_content(struct __test_metadata *_metadata,
			  struct incfs_img *img, bool all_present)
{
	char want[BS], got[BS];
	size_t i;
	uint32_t b;
	int n;

	for (i = 0; i < NGF; i++) {
		struct incfs_img_file *f = incfs_img_file(img, gf[i].ino);

		if (!f)
			continue;
		for (b = 0; b < f->block_count; b++) {
			bool want_present = gf[i].present[b] != '0';

			if (!incfs_img_block_present(img, gf[i].ino, b)) {
				ASSERT_TRUE(!all_present || !want_present);
				ASSERT_EQ(-ENODATA, incfs_img_read_block(img, gf[i].ino, b, got));
				continue;
			}
			ASSERT_TRUE(want_present);
			n = incfs_img_read_block(img, gf[i].ino, b, got);
			ASSERT_EQ((int)blen(gf[i].size, b), n)
				TH_LOG("ino %llu block %u: %d",
				       (unsigned long long)gf[i].ino, b, n);
			content(i, b, gf[i].text, want, n);
			ASSERT_EQ(0, memcmp(want, got, n));
		}
	}
}

TEST_F(image, write_then_open)
{
	struct incfs_img img;
	struct incfs_img_file *f;
	const char *p = tpath("golden");
	char buf[BS];

	make_golden(_metadata, p);
	ASSERT_EQ(0, incfs_img_open(&img, p));
	ASSERT_EQ(INCFS_IMG_CLEAN, img.status);
	ASSERT_EQ(0, img.nproblems);
	ASSERT_EQ(NGF + 1, img.nfiles);
	ASSERT_EQ(6, img.nnames);
	ASSERT_TRUE(img.names[3].dir_ino == gdir && !strcmp(img.names[3].name, "hard"));
	ASSERT_EQ(gf[1].ino, img.names[3].child_ino);
	f = incfs_img_file(&img, gdir);
	ASSERT_TRUE(f && f->mode == (S_IFDIR | 0555));
	f = incfs_img_file(&img, gf[0].ino);
	ASSERT_TRUE(f && f->mode == (S_IFREG | 0444) && f->size == gf[0].size);
	ASSERT_TRUE(f->block_count == 6 && f->blockmap_offset);
	ASSERT_EQ(0, incfs_img_block_present(&img, gf[0].ino, 2));
	ASSERT_TRUE(f->blocks[0].flags == 1 && f->blocks[4].flags == 0);
	/* The kernel's layout: full raw blocks aligned, area before its record. */
	ASSERT_TRUE(f->blocks[4].data_offset % BS == 0);
	ASSERT_NE(NULL, incfs_img_file(&img, 2));
	ASSERT_EQ(NULL, incfs_img_file(&img, 99));
	ASSERT_EQ(-ENOENT, incfs_img_read_block(&img, 99, 0, buf));
	ASSERT_EQ(-EISDIR, incfs_img_read_block(&img, gdir, 0, buf));
	ASSERT_EQ(-ERANGE, incfs_img_read_block(&img, gf[0].ino, 6, buf));
	for (size_t i = 0; i < img.nrecords; i++) {
		ASSERT_TRUE(img.records[i].crc_ok && img.records[i].applied);
		if (img.records[i].type == INCFS_MD_BLOCK_MAP) {
			struct incfs_img_file *g = NULL;

			for (size_t j = 0; j < img.nfiles; j++)
				if (img.files[j].blockmap_offset &&
				    img.files[j].blockmap_offset +
				    img.files[j].block_count * 14 ==
				    img.records[i].offset)
					g = &img.files[j];
			ASSERT_NE(NULL, g);
		}
	}
	check_content(_metadata, &img, true);
	ASSERT_EQ(0, incfs_img_check_blocks(&img));
	incfs_img_close(&img);
}

TEST_F(image, writer_refuses_what_the_kernel_refuses)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("refuse"));
	uint64_t d, e, f;
	char buf[BS] = { 0 };

	ASSERT_NE(NULL, w);
	d = incfs_img_new_file(w, S_IFDIR | 0755, 0);
	e = incfs_img_new_file(w, S_IFDIR | 0755, 0);
	f = incfs_img_new_file(w, S_IFREG | 0644, 10);
	ASSERT_TRUE(d && e && f);
	ASSERT_TRUE(incfs_img_new_file(w, S_IFLNK | 0777, 0) == 0 && errno == EINVAL);
	ASSERT_TRUE(incfs_img_new_file(w, S_IFREG, (64ULL << 30) + 1) == 0 && errno == EFBIG);
	ASSERT_EQ(-EEXIST, incfs_img_add_name(w, 2, f, ".cmd"));
	ASSERT_EQ(-EINVAL, incfs_img_add_name(w, 2, f, ".."));
	ASSERT_EQ(-EINVAL, incfs_img_add_name(w, 2, f, "a/b"));
	ASSERT_EQ(-ENOTDIR, incfs_img_add_name(w, f, d, "x"));
	ASSERT_EQ(0, incfs_img_add_name(w, 2, d, "d"));
	ASSERT_TRUE(incfs_img_add_name(w, 2, d, "d2") == -EEXIST ||
		    incfs_img_add_name(w, 2, d, "d2") == -EMLINK);
	ASSERT_EQ(-EMLINK, incfs_img_add_name(w, 2, d, "d3"));
	ASSERT_EQ(0, incfs_img_add_name(w, d, e, "e"));
	ASSERT_EQ(-EMLINK, incfs_img_add_name(w, e, 2, "root"));
	ASSERT_EQ(0, incfs_img_add_name(w, e, f, "f"));
	ASSERT_EQ(-ENOTEMPTY, incfs_img_remove_name(w, d, e, "e"));
	ASSERT_EQ(-ENOENT, incfs_img_remove_name(w, e, d, "f"));
	ASSERT_EQ(-EINVAL, incfs_img_put_block(w, f, 0, buf, 9, false));
	ASSERT_EQ(-ERANGE, incfs_img_put_block(w, f, 1, buf, 10, false));
	ASSERT_EQ(-EISDIR, incfs_img_put_block(w, d, 0, buf, 10, false));
	ASSERT_EQ(0, incfs_img_put_block(w, f, 0, buf, 10, true));
	ASSERT_EQ(0, incfs_img_finish(w));
}

TEST_F(image, too_many_inodes)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("many"));
	struct incfs_img img;
	int i;

	ASSERT_NE(NULL, w);
	for (i = 0; i < 999; i++)
		ASSERT_TRUE(incfs_img_new_file(w, S_IFREG | 0444, 0));
	ASSERT_TRUE(incfs_img_new_file(w, S_IFREG | 0444, 0) == 0 && errno == ENFILE);
	ASSERT_EQ(0, incfs_img_finish(w));
	ASSERT_EQ(0, incfs_img_open(&img, tpath("many")));
	ASSERT_TRUE(img.status == INCFS_IMG_CLEAN && img.nfiles == 999);
	incfs_img_close(&img);
}

TEST_F(image, lz4_and_mixed)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("lz4"));
	struct incfs_img img;
	char in[BS], out[BS];
	uint64_t f;
	uint32_t b;

	ASSERT_NE(NULL, w);
	f = incfs_img_new_file(w, S_IFREG | 0444, 4 * BS + 7);
	ASSERT_TRUE(f);
	for (b = 0; b < 5; b++) {
		content(7, b, b % 2 == 0, in, blen(4 * BS + 7, b));
		ASSERT_EQ(0, incfs_img_put_block(w, f, b, in, blen(4 * BS + 7, b), true));
	}
	ASSERT_EQ(0, incfs_img_finish(w));
	ASSERT_EQ(0, incfs_img_open(&img, tpath("lz4")));
	ASSERT_EQ(INCFS_IMG_CLEAN, img.status);
	for (b = 0; b < 5; b++) {
		const struct incfs_img_entry *e = &img.files[0].blocks[b];

		content(7, b, b % 2 == 0, in, blen(4 * BS + 7, b));
		/* Text shrinks; random data and the 7-byte tail do not. */
		ASSERT_EQ((b % 2 == 0 && b != 4), (e->flags == 1));
		ASSERT_TRUE(e->flags || e->stored_size == blen(4 * BS + 7, b));
		ASSERT_EQ((int)blen(4 * BS + 7, b), incfs_img_read_block(&img, f, b, out));
		ASSERT_EQ(0, memcmp(in, out, blen(4 * BS + 7, b)));
	}
	incfs_img_close(&img);
}

/* ===== cuts and corruption ===== */

struct golden {
	char *data;
	size_t size;
	struct incfs_img img;		/* open on the golden image */
};

static void golden_load(struct __test_metadata *_metadata, struct golden *g)
{
	make_golden(_metadata, tpath("golden"));
	ASSERT_EQ(0, read_file(tpath("golden"), &g->data, &g->size));
	ASSERT_EQ(0, incfs_img_open(&g->img, tpath("golden")));
	ASSERT_TRUE(g->img.status == INCFS_IMG_CLEAN);
}

static void golden_free(struct golden *g)
{
	incfs_img_close(&g->img);
	free(g->data);
}

/* Is the golden image cut at @len clean as it is? */
static bool cut_clean(struct golden *g, size_t len)
{
	size_t i;
	uint32_t b;

	if (len < 32)
		return false;
	for (i = 0; i < g->img.nrecords; i++)
		if (g->img.records[i].offset + g->img.records[i].size > len)
			return false;
	for (i = 0; i < g->img.nfiles; i++)
		for (b = 0; g->img.files[i].blocks && b < g->img.files[i].block_count; b++) {
			const struct incfs_img_entry *e = &g->img.files[i].blocks[b];

			if (e->stored_size && e->data_offset + e->stored_size > len)
				return false;
		}
	return true;
}

TEST_F_TIMEOUT(image, cut_at_every_offset_then_repair, SLOW_TIMEOUT)
{
	struct golden g;
	struct incfs_img img;
	FILE *null = fopen("/dev/null", "w");
	const char *p = tpath("cut");
	size_t len, i, kept;
	int st;

	ASSERT_NE(NULL, null);
	golden_load(_metadata, &g);
	for (len = 0; len <= g.size; len++) {
		ASSERT_EQ(0, write_file(p, g.data, len));
		ASSERT_EQ(0, incfs_img_open(&img, p));
		if (len > OFF_FIRST_MD && len < 32) {
			/*
			 * Not a prefix of a fresh superblock: its first link
			 * was written, so no crash can have cut it there.
			 */
			ASSERT_EQ(INCFS_IMG_BROKEN, img.status);
			incfs_img_close(&img);
			ASSERT_EQ(INCFS_IMG_BROKEN, incfs_img_fsck(p, true, null));
			continue;
		}
		ASSERT_EQ(cut_clean(&g, len) ? INCFS_IMG_CLEAN : INCFS_IMG_REPAIRABLE,
			  img.status)
			TH_LOG("cut at %zu: %s", len,
			       incfs_img_status_name(img.status));
		incfs_img_close(&img);
		st = incfs_img_fsck(p, true, null);
		ASSERT_EQ(INCFS_IMG_CLEAN, st) TH_LOG("cut at %zu: repair %d", len, st);
		ASSERT_EQ(0, incfs_img_open(&img, p));
		ASSERT_EQ(INCFS_IMG_CLEAN, img.status) TH_LOG("cut at %zu: after repair", len);
		for (i = 0, kept = 0; i < g.img.nrecords; i++)
			kept += g.img.records[i].offset + g.img.records[i].size <= len;
		ASSERT_EQ(kept, img.nrecords)
			TH_LOG("cut at %zu: %zu records, want %zu", len,
			       img.nrecords, kept);
		ASSERT_TRUE(img.size <= (len < 32 ? 32 : len));
		check_content(_metadata, &img, len == g.size);
		ASSERT_EQ(0, incfs_img_check_blocks(&img));
		incfs_img_close(&img);
	}
	golden_free(&g);
	fclose(null);
}

static void fix_crc(char *data, const struct incfs_img_record *r)
{
	union incfs_md_record rec;
	uint32_t crc;

	memcpy(&rec, data + r->offset, r->size);
	rec.h.h_record_crc = 0;
	rec.h.h_next_md_offset = 0;
	crc = cpu_to_le32(crc32_le(0, (const unsigned char *)&rec, r->size));
	memcpy(data + r->offset + OFF_CRC, &crc, sizeof(crc));
}

/* Open, check blocks, read everything: must not crash. */
static void poke(struct __test_metadata *_metadata, const char *p,
		 enum incfs_img_status *st)
{
	struct incfs_img img;
	char buf[BS];
	size_t i;
	uint32_t b;

	ASSERT_EQ(0, incfs_img_open(&img, p));
	ASSERT_TRUE(incfs_img_check_blocks(&img) >= 0);
	for (i = 0; i < img.nfiles; i++)
		for (b = 0; b < img.files[i].block_count && b < 16; b++)
			incfs_img_read_block(&img, img.files[i].ino, b, buf);
	*st = img.status;
	incfs_img_close(&img);
}

TEST_F_TIMEOUT(image, corrupt_every_record_byte, SLOW_TIMEOUT)
{
	struct golden g;
	enum incfs_img_status st;
	const char *p = tpath("corrupt");
	size_t i, j, valid = 0;
	int fix;

	golden_load(_metadata, &g);
	for (i = 0; i < g.img.nrecords; i++) {
		const struct incfs_img_record *r = &g.img.records[i];
		char saved[sizeof(union incfs_md_record)];

		memcpy(saved, g.data + r->offset, r->size);
		for (j = 0; j < r->size; j++) {
			bool in_next = j >= OFF_NEXT && j < OFF_NEXT + 8;

			for (fix = 0; fix < 2; fix++) {
				g.data[r->offset + j] ^= 0x5a;
				if (fix)
					fix_crc(g.data, r);
				ASSERT_EQ(0, write_file(p, g.data, g.size));
				poke(_metadata, p, &st);
				/* The CRC covers all but the link to the next record. */
				ASSERT_TRUE(fix || in_next || st == INCFS_IMG_BROKEN)
					TH_LOG("record @%llu byte %zu: %s",
					       (unsigned long long)r->offset, j,
					       incfs_img_status_name(st));
				valid += st == INCFS_IMG_CLEAN;
				memcpy(g.data + r->offset, saved, r->size);
			}
		}
	}
	TH_LOG("%zu corruptions with a fixed CRC still make a valid image", valid);
	golden_free(&g);
}

/* Inode numbers stop at INCFS_MAX_INO, for the writer and the reader alike. */
TEST_F(image, inode_number_bound)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("bound"));
	struct incfs_img img;
	size_t size, i;
	uint64_t past = htole64(INCFS_MAX_INO + 1);
	char *data = NULL;

	ASSERT_NE(NULL, w);
	ASSERT_TRUE(incfs_img_new_file_ino(w, INCFS_MAX_INO + 1, S_IFREG | 0444, 0) == 0 &&
		    errno == EINVAL);
	ASSERT_EQ(INCFS_MAX_INO, incfs_img_new_file_ino(w, INCFS_MAX_INO, S_IFREG | 0444, 0));
	ASSERT_TRUE(incfs_img_new_file(w, S_IFREG | 0444, 0) == 0 && errno == ENOSPC);
	ASSERT_EQ(0, incfs_img_finish(w));
	ASSERT_EQ(0, incfs_img_open(&img, tpath("bound")));
	ASSERT_TRUE(img.status == INCFS_IMG_CLEAN && img.nfiles == 1);
	ASSERT_EQ(1, img.nrecords);

	/* The same image with the number one past the bound is broken. */
	ASSERT_EQ(0, read_file(tpath("bound"), &data, &size));
	memcpy(data + img.records[0].offset + offsetof(struct incfs_inode, i_no), &past, 8);
	fix_crc(data, &img.records[0]);
	ASSERT_EQ(0, write_file(tpath("bound"), data, size));
	incfs_img_close(&img);
	ASSERT_EQ(0, incfs_img_open(&img, tpath("bound")));
	EXPECT_EQ(INCFS_IMG_BROKEN, img.status);
	for (i = 0; i < img.nrecords; i++)
		EXPECT_FALSE(img.records[i].applied);
	incfs_img_close(&img);
	free(data);
}

TEST_F(image, corrupt_superblock_and_entries)
{
	struct golden g;
	enum incfs_img_status st;
	const char *p = tpath("corrupt2");
	size_t j, i;
	uint32_t b;

	golden_load(_metadata, &g);
	for (j = 0; j < 32; j++) {
		bool in_first = j >= OFF_FIRST_MD && j < OFF_FIRST_MD + 8;

		g.data[j] ^= 0x81;
		ASSERT_EQ(0, write_file(p, g.data, g.size));
		g.data[j] ^= 0x81;
		poke(_metadata, p, &st);
		ASSERT_TRUE(in_first ? st != INCFS_IMG_CLEAN : st == INCFS_IMG_BROKEN)
			TH_LOG("superblock byte %zu: %s", j,
			       incfs_img_status_name(st));
	}
	for (i = 0; i < g.img.nfiles; i++) {
		struct incfs_img_file *f = &g.img.files[i];

		for (b = 0; f->blockmap_offset && b < f->block_count; b++) {
			for (j = 0; j < 14; j++) {
				size_t at = f->blockmap_offset + b * 14 + j;

				g.data[at] ^= 0x10;
				ASSERT_EQ(0, write_file(p, g.data, g.size));
				g.data[at] ^= 0x10;
				poke(_metadata, p, &st);
				ASSERT_NE(INCFS_IMG_CLEAN, st) TH_LOG("entry @%zu: clean", at);
			}
		}
	}
	golden_free(&g);
}

TEST_F_TIMEOUT(image, fuzz, SLOW_TIMEOUT)
{
	struct golden g;
	enum incfs_img_status st;
	const char *p = tpath("fuzz");
	char *copy;
	int i, k;

	golden_load(_metadata, &g);
	copy = malloc(g.size);
	ASSERT_NE(NULL, copy);
	srand(12345);
	for (i = 0; i < 3000; i++) {
		memcpy(copy, g.data, g.size);
		for (k = 0; k < 1 + i % 8; k++)
			copy[rand() % (g.size < 4096 ? g.size : 4096)] = rand();
		ASSERT_EQ(0, write_file(p, copy, g.size - (i % 3 ? 0 : rand() % 100)));
		poke(_metadata, p, &st);
	}
	free(copy);
	golden_free(&g);
}

TEST_F(image, data_crc_and_lz4_errors)
{
	struct golden g;
	struct incfs_img_file *f;
	const char *p = tpath("datacrc");
	char want[128], *out = NULL, buf[BS];
	size_t outlen = 0;
	FILE *mem;
	int st;

	golden_load(_metadata, &g);
	f = incfs_img_file(&g.img, gf[1].ino);
	ASSERT_TRUE(f && f->blocks[1].stored_size == BS / 2);
	g.data[f->blocks[1].data_offset + 100] ^= 1;
	ASSERT_EQ(0, write_file(p, g.data, g.size));
	g.data[f->blocks[1].data_offset + 100] ^= 1;
	mem = open_memstream(&out, &outlen);
	ASSERT_NE(NULL, mem);
	st = incfs_img_fsck(p, true, mem);
	fclose(mem);
	ASSERT_EQ(INCFS_IMG_BROKEN, st);
	snprintf(want, sizeof(want), "offset %llu: ino %llu block 1: data CRC mismatch",
		 (unsigned long long)f->blocks[1].data_offset,
		 (unsigned long long)gf[1].ino);
	ASSERT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	free(out);
	/* --repair left the broken image alone. */
	{
		char *after;
		size_t alen;

		ASSERT_EQ(0, read_file(p, &after, &alen));
		ASSERT_EQ(g.size, alen);
		ASSERT_NE(0, memcmp(after, g.data, alen));
		free(after);
	}
	/* LZ4 garbage with a matching CRC. */
	f = incfs_img_file(&g.img, gf[0].ino);
	{
		const struct incfs_img_entry *e = &f->blocks[0];
		struct incfs_img img;
		uint32_t crc;
		size_t at;

		ASSERT_TRUE(e->flags == 1);
		memset(g.data + e->data_offset, 0xff, e->stored_size);
		crc = cpu_to_le32(crc32_le(0, (const unsigned char *)g.data + e->data_offset, e->stored_size));
		at = f->blockmap_offset + 10;
		memcpy(g.data + at, &crc, 4);
		ASSERT_EQ(0, write_file(p, g.data, g.size));
		ASSERT_EQ(0, incfs_img_open(&img, p));
		ASSERT_EQ(INCFS_IMG_CLEAN, img.status);
		ASSERT_EQ(-EBADMSG, incfs_img_read_block(&img, gf[0].ino, 0, buf));
		ASSERT_EQ(1, incfs_img_check_blocks(&img));
		ASSERT_NE(NULL, strstr(img.problems[0].what, "bad LZ4 data"));
		ASSERT_TRUE(img.problems[0].offset == e->data_offset);
		ASSERT_EQ(INCFS_IMG_BROKEN, img.status);
		incfs_img_close(&img);
	}
	golden_free(&g);
}

/*
 * A blockmap entry written across a 512-byte sector boundary of which one
 * side was lost in a crash: fsck finds it (malformed, or its data fails
 * the CRC) as repairable, never broken; --repair clears it, and the block
 * is absent while every other block reads back.
 */
TEST_F(image, torn_entries_are_repaired_as_absent)
{
	const uint32_t nb = 300;	/* 4,200 bytes of entries: 8 boundaries */
	const char *p = tpath("torn"), *q = tpath("torn-cut");
	struct incfs_img_writer *w = incfs_img_create(p);
	struct incfs_img img;
	char *data, *cut, buf[BS], want[BS];
	uint64_t ino, base, pos;
	uint32_t b, c;
	size_t len;
	int side, k, st, tested = 0;
	FILE *devnull = fopen("/dev/null", "w");
	bool absent;

	ASSERT_NE(NULL, w);
	ASSERT_NE(NULL, devnull);
	ino = incfs_img_new_file(w, S_IFREG | 0644, (uint64_t)nb * BS);
	for (b = 0; b < nb; b++) {
		content(7, b, false, buf, BS);
		ASSERT_EQ(0, incfs_img_put_block(w, ino, b, buf, BS, false));
	}
	ASSERT_EQ(0, incfs_img_finish(w));
	ASSERT_EQ(0, incfs_img_open(&img, p));
	base = incfs_img_file(&img, ino)->blockmap_offset;
	incfs_img_close(&img);
	ASSERT_EQ(0, read_file(p, &data, &len));

	for (b = 0; b < nb; b++) {
		pos = base + (uint64_t)b * sizeof(struct incfs_blockmap_entry);
		k = INCFS_SECTOR_SIZE - pos % INCFS_SECTOR_SIZE;
		if (k >= (int)sizeof(struct incfs_blockmap_entry))
			continue;
		for (side = 0; side < 2; side++) {
			cut = malloc(len);
			ASSERT_NE(NULL, cut);
			memcpy(cut, data, len);
			if (side)
				memset(cut + pos, 0, k);
			else
				memset(cut + pos + k, 0, sizeof(struct incfs_blockmap_entry) - k);
			if (!memcmp(cut, data, len)) {
				free(cut);
				continue;	/* that side held zeros anyway */
			}
			ASSERT_EQ(0, write_file(q, cut, len));
			/* What reached the disk may be only zeros: an absent entry. */
			absent = incfs_all_zero(cut + pos, sizeof(struct incfs_blockmap_entry));
			free(cut);
			st = incfs_img_fsck(q, false, devnull);
			EXPECT_EQ(absent ? INCFS_IMG_CLEAN : INCFS_IMG_REPAIRABLE, st)
				TH_LOG("block %u side %d k %d", b, side, k);
			ASSERT_EQ(INCFS_IMG_CLEAN, incfs_img_fsck(q, true, devnull));
			ASSERT_EQ(0, incfs_img_open(&img, q));
			EXPECT_EQ(-ENODATA, incfs_img_read_block(&img, ino, b, buf));
			for (c = 0; c < nb; c++) {
				if (c == b)
					continue;
				content(7, c, false, want, BS);
				ASSERT_EQ(BS, incfs_img_read_block(&img, ino, c, buf));
				ASSERT_EQ(0, memcmp(buf, want, BS));
			}
			incfs_img_close(&img);
			tested++;
		}
	}
	free(data);
	fclose(devnull);
	EXPECT_LE(8, tested);
}

TEST_F(image, hostile_offsets)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("host"));
	struct incfs_img img;
	char *d;
	size_t len;
	uint64_t f;
	struct incfs_blockmap *bm;

	ASSERT_NE(NULL, w);
	f = incfs_img_new_file(w, S_IFREG | 0444, 3 * BS);
	ASSERT_TRUE(f);
	ASSERT_EQ(0, incfs_img_finish(w));
	ASSERT_EQ(0, read_file(tpath("host"), &d, &len));
	/* inode @32, area @77 (42 bytes), blockmap @119 */
	bm = (struct incfs_blockmap *)(d + 119);
	{
		static const uint64_t bases[] = { 0, 31, 76, 78, 1ULL << 62,
						  0x7fffffffffffffffULL,
						  0xffffffffffffff00ULL };
		size_t i;
		struct incfs_img_record r = { .offset = 119, .size = 43 };

		ASSERT_EQ(INCFS_MD_BLOCK_MAP, bm->m_header.h_md_entry_type);
		for (i = 0; i < ARRAY_SIZE(bases); i++) {
			bm->m_base_offset = htole64(bases[i]);
			fix_crc(d, &r);
			ASSERT_EQ(0, write_file(tpath("host2"), d, len));
			ASSERT_EQ(0, incfs_img_open(&img, tpath("host2")));
			ASSERT_EQ(INCFS_IMG_BROKEN, img.status)
				TH_LOG("base %llx", (unsigned long long)bases[i]);
			incfs_img_close(&img);
		}
		bm->m_base_offset = htole64(77);
		bm->m_block_count = htole32(0xffffffff);
		fix_crc(d, &r);
		ASSERT_EQ(0, write_file(tpath("host2"), d, len));
		ASSERT_EQ(0, incfs_img_open(&img, tpath("host2")));
		ASSERT_EQ(INCFS_IMG_BROKEN, img.status);
		incfs_img_close(&img);
	}
	/* A link into the superblock, and far past the end. */
	{
		uint64_t link = htole64(8);

		memcpy(d + OFF_FIRST_MD, &link, 8);
		ASSERT_EQ(0, write_file(tpath("host2"), d, len));
		ASSERT_EQ(0, incfs_img_open(&img, tpath("host2")));
		ASSERT_EQ(INCFS_IMG_BROKEN, img.status);
		incfs_img_close(&img);
		link = htole64(0x8000000000000000ULL);
		memcpy(d + OFF_FIRST_MD, &link, 8);
		ASSERT_EQ(0, write_file(tpath("host2"), d, len));
		ASSERT_EQ(0, incfs_img_open(&img, tpath("host2")));
		ASSERT_EQ(INCFS_IMG_BROKEN, img.status);
		incfs_img_close(&img);
		link = htole64(1ULL << 40);
		memcpy(d + OFF_FIRST_MD, &link, 8);
		ASSERT_EQ(0, write_file(tpath("host2"), d, len));
		ASSERT_EQ(0, incfs_img_open(&img, tpath("host2")));
		ASSERT_TRUE(img.status == INCFS_IMG_REPAIRABLE && img.torn)
			TH_LOG("%s: %s", incfs_img_status_name(img.status),
			       img.nproblems ? img.problems[0].what : "");
		incfs_img_close(&img);
	}
	/* Not an image at all. */
	memset(d, 'x', len);
	ASSERT_EQ(0, write_file(tpath("host2"), d, 20));
	ASSERT_EQ(0, incfs_img_open(&img, tpath("host2")));
	ASSERT_EQ(INCFS_IMG_BROKEN, img.status);
	incfs_img_close(&img);
	ASSERT_EQ(-EINVAL, incfs_img_open(&img, tmpdir));
	ASSERT_EQ(-ENOENT, incfs_img_open(&img, tpath("nonexistent")));
	free(d);
}

/* ===== gc and dump ===== */

TEST_F(image, gc_drops_unreachable_and_dead_space)
{
	struct incfs_img a, b;
	const char *in = tpath("golden"), *out = tpath("gc");
	FILE *null = fopen("/dev/null", "w");
	size_t i;

	ASSERT_NE(NULL, null);
	make_golden(_metadata, in);
	ASSERT_EQ(0, incfs_img_gc(in, out));
	ASSERT_EQ(INCFS_IMG_CLEAN, incfs_img_fsck(out, false, null));
	ASSERT_TRUE(!incfs_img_open(&a, in) && !incfs_img_open(&b, out));
	ASSERT_TRUE(b.size < a.size);
	ASSERT_EQ(a.nfiles - 1, b.nfiles);
	ASSERT_EQ(NULL, incfs_img_file(&b, gf[4].ino));	/* "gone" dropped */
	ASSERT_EQ(a.nnames, b.nnames);
	for (i = 0; i < a.nnames; i++) {
		ASSERT_EQ(b.names[i].dir_ino, a.names[i].dir_ino);
		ASSERT_EQ(b.names[i].child_ino, a.names[i].child_ino);
		ASSERT_EQ(0, strcmp(a.names[i].name, b.names[i].name));
	}
	for (i = 0; i < b.nfiles; i++) {
		struct incfs_img_file *fa = incfs_img_file(&a, b.files[i].ino);
		struct incfs_img_file *fb = &b.files[i];
		uint32_t k;

		ASSERT_TRUE(fa && fa->mode == fb->mode && fa->size == fb->size);
		for (k = 0; fb->blocks && k < fb->block_count; k++) {
			ASSERT_TRUE(fa->blocks[k].stored_size == fb->blocks[k].stored_size);
			ASSERT_TRUE(fa->blocks[k].flags == fb->blocks[k].flags);
			ASSERT_TRUE(fa->blocks[k].crc == fb->blocks[k].crc);
		}
	}
	check_content(_metadata, &b, true);
	/* No dead space: only the alignment of the first full block. */
	{
		uint64_t used = 32;

		for (i = 0; i < b.nrecords; i++)
			used += b.records[i].size;
		for (i = 0; i < b.nfiles; i++) {
			uint32_t k;

			used += (uint64_t)b.files[i].block_count * 14;
			for (k = 0; b.files[i].blocks && k < b.files[i].block_count; k++)
				used += b.files[i].blocks[k].stored_size;
		}
		ASSERT_TRUE(b.size - used < BS)
			TH_LOG("size %llu used %llu", (unsigned long long)b.size,
			       (unsigned long long)used);
	}
	incfs_img_close(&a);
	incfs_img_close(&b);
	/* gc of a gc is the same image. */
	{
		char *x, *y;
		size_t xl, yl;

		ASSERT_EQ(0, incfs_img_gc(out, tpath("gc2")));
		ASSERT_TRUE(!read_file(out, &x, &xl) && !read_file(tpath("gc2"), &y, &yl));
		ASSERT_TRUE(xl == yl && !memcmp(x, y, xl));
		free(x);
		free(y);
	}
	/* A broken image is refused. */
	{
		char *x;
		size_t xl;

		ASSERT_EQ(0, read_file(in, &x, &xl));
		x[40] ^= 1;
		ASSERT_EQ(0, write_file(tpath("broken"), x, xl));
		free(x);
		ASSERT_EQ(-EUCLEAN, incfs_img_gc(tpath("broken"), tpath("gc3")));
	}
	fclose(null);
}

TEST_F(image, dump_lines)
{
	const char *in = tpath("golden");
	char *out = NULL;
	size_t len = 0;
	FILE *mem;
	static const char *const want[] = {
		"superblock: magic 0x5346434e49 version 1 size 32 flags 0x0 first_md 32 block_size 4096\n",
		"  @32 inode size 45 crc ok next 77 prev 0: ino 3 mode 040555 size 0\n",
		"  / ino 2 mode 040555 size 0 nlink 3\n",
		"  /d ino 3 mode 040555 size 0 nlink 2\n",
		"  /d/a ino 4 mode 0100444 size 20580 nlink 1\n",
		"  /d/hard ino 5 mode 0100444 size 6144 nlink 2\n",
		"  /b ino 5 mode 0100444 size 6144 nlink 2\n",
		"  /c ino 6 mode 0100444 size 4096 nlink 1\n",
		"  /empty ino 7 mode 0100444 size 0 nlink 1\n",
		"  (unreachable) ino 8 mode 0100444 size 12288 nlink 0\n",
		"  ino 4: present 0-1,3-5 (5/6) lz4 4 blockmap @",
		"  ino 8: present 0-2 (3/3) blockmap @",
		"remove dir 2 child 8 name \"gone\"\n",
		"status: clean\n",
	};
	size_t i;

	make_golden(_metadata, in);
	mem = open_memstream(&out, &len);
	ASSERT_NE(NULL, mem);
	ASSERT_EQ(0, incfs_img_dump(in, mem));
	fclose(mem);
	for (i = 0; i < ARRAY_SIZE(want); i++)
		ASSERT_NE(NULL, strstr(out, want[i])) TH_LOG("missing: %s\n%s", want[i], out);
	free(out);
}

/* ===== the CLI ===== */

/* Run the CLI; its exit status, or -1. stdout+stderr into @out if given. */
static int cli_run(char **out, const char *fmt, ...)
{
	char cmd[2048], *buf = NULL;
	size_t len = 0;
	va_list ap;
	FILE *p;
	int st, c;

	va_start(ap, fmt);
	snprintf(cmd, sizeof(cmd), "'%s' ", cli);
	vsnprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	FILE *mem = open_memstream(&buf, &len);

	while ((c = fgetc(p)) != EOF)
		fputc(c, mem);
	fclose(mem);
	st = pclose(p);
	if (out)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int mkfile(const char *path, uint64_t seed, size_t size, bool text)
{
	char *buf = malloc(size + 1);
	int ret;

	if (!buf)
		return -1;
	content(seed, 0, text, buf, size);
	ret = write_file(path, buf, size);
	free(buf);
	return ret;
}

TEST_F(cli, create_and_read_back)
{
	static const struct {
		const char *path;
		size_t size;
		bool text;
	} files[] = {
		{ "src/one", 12345, false },
		{ "src/sub/two", 3 * BS, true },
		{ "src/sub/deeper/three", BS + 1, false },
		{ "src/sub/deeper/empty", 0, false },
		{ "src/big", 300 * 1024 + 17, true },
	};
	struct incfs_img img;
	char *out;
	size_t i;
	int lz4;

	ASSERT_EQ(0, mkdir(tpath("src"), 0755));
	ASSERT_EQ(0, mkdir(tpath("src/sub"), 0755));
	ASSERT_EQ(0, mkdir(tpath("src/sub/deeper"), 0755));
	ASSERT_EQ(0, mkdir(tpath("src/emptydir"), 0755));
	for (i = 0; i < ARRAY_SIZE(files); i++)
		ASSERT_EQ(0, mkfile(tpath(files[i].path), i, files[i].size, files[i].text));
	ASSERT_EQ(0, link(tpath("src/one"), tpath("src/sub/one-link")));
	for (lz4 = 0; lz4 < 2; lz4++) {
		char im[512];

		snprintf(im, sizeof(im), "%s", tpath(lz4 ? "cli-lz4.img" : "cli.img"));

		ASSERT_EQ(0, cli_run(NULL, "create %s '%s' '%s'",
				     lz4 ? "--lz4" : "", tpath("src"), im));
		ASSERT_EQ(0, cli_run(NULL, "fsck '%s'", im));
		ASSERT_EQ(0, incfs_img_open(&img, im));
		ASSERT_EQ(INCFS_IMG_CLEAN, img.status);
		ASSERT_EQ(8, img.nfiles);		/* 3 dirs, 6 files, one a link */
		ASSERT_EQ(9, img.nnames);
		/* Read every file back by its path. */
		for (i = 0; i < ARRAY_SIZE(files); i++) {
			const char *path = files[i].path + 4, *slash;
			uint64_t dir = 2, ino = 0;
			char *want, buf[BS];
			size_t wl, k;
			uint32_t b;

			while (path) {
				slash = strchr(path, '/');
				size_t nl = slash ? (size_t)(slash - path) : strlen(path);

				ino = 0;
				for (k = 0; k < img.nnames; k++)
					if (img.names[k].dir_ino == dir &&
					    strlen(img.names[k].name) == nl &&
					    !strncmp(img.names[k].name, path, nl))
						ino = img.names[k].child_ino;
				ASSERT_TRUE(ino) TH_LOG("%s", files[i].path);
				dir = ino;
				path = slash ? slash + 1 : NULL;
			}
			ASSERT_EQ(0, read_file(tpath(files[i].path), &want, &wl));
			ASSERT_TRUE(incfs_img_file(&img, ino)->size == wl);
			for (b = 0; (uint64_t)b * BS < wl; b++) {
				int n = incfs_img_read_block(&img, ino, b, buf);

				ASSERT_EQ((int)blen(wl, b), n);
				ASSERT_EQ(0, memcmp(buf, want + (size_t)b * BS, n));
			}
			free(want);
		}
		if (lz4)
			ASSERT_NE(NULL, incfs_img_file(&img, img.names[0].child_ino));
		incfs_img_close(&img);
		ASSERT_EQ(0, cli_run(&out, "dump '%s'", im));
		ASSERT_NE(NULL, strstr(out, "  /sub/one-link ino ")) TH_LOG("%s", out);
		ASSERT_NE(NULL, strstr(out, " nlink 2\n"));
		/* The 17-byte tail does not shrink. */
		ASSERT_NE(NULL, strstr(out, lz4 ?
					"present 0-75 (76/76) lz4 75 blockmap" :
					"present 0-75 (76/76) blockmap"))
			TH_LOG("%s", out);
		free(out);
	}
	/* Refuses to overwrite; --force replaces. */
	ASSERT_EQ(1, cli_run(&out, "create '%s' '%s'", tpath("src"), tpath("cli.img")));
	ASSERT_NE(NULL, strstr(out, "exists"));
	free(out);
	ASSERT_EQ(0, cli_run(NULL, "create --force '%s' '%s'", tpath("src"), tpath("cli.img")));
	/* A failure leaves nothing behind. */
	ASSERT_EQ(0, mkfifo(tpath("src/fifo"), 0644));
	ASSERT_EQ(1, cli_run(&out, "create '%s' '%s'", tpath("src"), tpath("fail.img")));
	ASSERT_TRUE(access(tpath("fail.img"), F_OK) && errno == ENOENT);
	free(out);
	ASSERT_EQ(0, unlink(tpath("src/fifo")));
}

TEST_F(cli, fsck_gc_usage)
{
	char g[512], c[512], *data, *out;
	size_t len;

	snprintf(g, sizeof(g), "%s", tpath("golden"));
	snprintf(c, sizeof(c), "%s", tpath("cli-cut"));
	make_golden(_metadata, g);
	ASSERT_EQ(0, read_file(g, &data, &len));
	ASSERT_EQ(0, cli_run(NULL, "fsck '%s'", g));
	ASSERT_EQ(0, write_file(c, data, len - 50));
	ASSERT_EQ(1, cli_run(&out, "fsck '%s'", c));
	ASSERT_NE(NULL, strstr(out, "repairable"));
	free(out);
	ASSERT_EQ(0, cli_run(NULL, "fsck --repair '%s'", c));
	ASSERT_EQ(0, cli_run(NULL, "fsck '%s'", c));
	data[100] ^= 4;
	ASSERT_EQ(0, write_file(c, data, len - 50));
	ASSERT_EQ(2, cli_run(&out, "fsck --repair '%s'", c));
	ASSERT_NE(NULL, strstr(out, "bad record CRC"));
	free(out);
	{
		char *after;
		size_t al;

		ASSERT_EQ(0, read_file(c, &after, &al));
		ASSERT_TRUE(al == len - 50 && !memcmp(after, data, al));
		free(after);
	}
	ASSERT_EQ(0, cli_run(NULL, "gc '%s' '%s'", g, tpath("cli-gc")));
	ASSERT_EQ(0, cli_run(NULL, "fsck '%s'", tpath("cli-gc")));
	ASSERT_EQ(1, cli_run(NULL, "gc '%s' '%s'", g, tpath("cli-gc")));
	ASSERT_EQ(1, cli_run(NULL, "gc '%s' '%s'", c, tpath("cli-gc2")));
	ASSERT_TRUE(access(tpath("cli-gc2"), F_OK));
	ASSERT_EQ(3, cli_run(NULL, "fsck '%s'", tpath("nonexistent")));
	ASSERT_EQ(64, cli_run(&out, ""));
	ASSERT_NE(NULL, strstr(out, "usage:"));
	free(out);
	ASSERT_EQ(0, cli_run(&out, "-h"));
	ASSERT_TRUE(strstr(out, "create") && strstr(out, "gc"));
	free(out);
	ASSERT_EQ(64, cli_run(&out, "frob"));
	ASSERT_EQ(out + strlen(out) - 1, strchr(out, '\n'));
	free(out);
	ASSERT_EQ(64, cli_run(NULL, "fsck --lz4 x"));
	ASSERT_EQ(64, cli_run(NULL, "fsck a b"));
	ASSERT_EQ(64, cli_run(NULL, "gc a"));
	free(data);
}

/* fixtures/NAME, found beside this file so that the case runs anywhere. */
static int read_fixture(const char *name, char **buf, size_t *len)
{
	const char *slash = strrchr(__FILE__, '/');
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%.*sfixtures/%s",
		 slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__, name);
	if (read_file(path, buf, len))
		return -1;
	(*buf)[*len] = '\0';
	return 0;
}

/*
 * Images written by an earlier incfs-image (fixtures/README.md) still dump
 * and check exactly as they did then.
 */
TEST_F(cli, old_images)
{
	static const char *const names[] = { "plain", "lz4", "gc", "torn" };
	char name[64], *data, *want, *out;
	size_t len, i;

	ASSERT_EQ(0, chdir(tmpdir));
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		snprintf(name, sizeof(name), "v1-%s.img", names[i]);
		ASSERT_EQ(0, read_fixture(name, &data, &len))
			TH_LOG("fixtures/%s: %s", name, strerror(errno));
		ASSERT_EQ(0, write_file(name, data, len));
		free(data);

		snprintf(name, sizeof(name), "v1-%s.dump", names[i]);
		ASSERT_EQ(0, read_fixture(name, &want, &len));
		ASSERT_EQ(0, cli_run(&out, "dump v1-%s.img", names[i]));
		EXPECT_STREQ(want, out);
		free(want);
		free(out);

		snprintf(name, sizeof(name), "v1-%s.fsck", names[i]);
		ASSERT_EQ(0, read_fixture(name, &want, &len));
		EXPECT_EQ(strcmp(names[i], "torn") ? 0 : 1,
			  cli_run(&out, "fsck v1-%s.img", names[i]));
		EXPECT_STREQ(want, out);
		free(want);
		free(out);
	}
}

TEST_HARNESS_MAIN
