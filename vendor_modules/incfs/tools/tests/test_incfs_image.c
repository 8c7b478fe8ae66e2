// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of libincfs-image and of the incfs-image CLI.
 *
 * Usage: test_incfs_image [PATH_TO_incfs-image]
 * Without the CLI's path, the CLI cases are skipped.  Prints one
 * "ok N name" / "not ok N name" line per case and "N passed, N failed";
 * exits 1 on any failure.  Build with -fsanitize=address,undefined.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "incfs_format_user.h"
#include "incfs_image.h"

#define BS	4096

static const char *cli;
static char tmpdir[256];
static int ncase, npass, nfail;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "  %s:%d: check failed: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		return 1;						\
	}								\
} while (0)

#define CHECKF(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "  %s:%d: check failed: %s: ",		\
			__FILE__, __LINE__, #cond);			\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
		return 1;						\
	}								\
} while (0)

static void run(const char *name, int (*fn)(void))
{
	int r = fn();

	ncase++;
	if (r < 0) {
		printf("ok %d %s # skip\n", ncase, name);
		npass++;
	} else if (r) {
		printf("not ok %d %s\n", ncase, name);
		nfail++;
	} else {
		printf("ok %d %s\n", ncase, name);
		npass++;
	}
	fflush(stdout);
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
#define NGF (sizeof(gf) / sizeof(gf[0]))
static uint64_t gdir;

static int make_golden(const char *path)
{
	struct incfs_img_writer *w = incfs_img_create(path);
	char buf[BS];
	size_t i;
	uint32_t b;

	CHECK(w);
	gdir = incfs_img_new_file(w, S_IFDIR | 0755, 0);
	CHECK(gdir == 3);
	for (i = 0; i < NGF; i++) {
		gf[i].ino = incfs_img_new_file(w, S_IFREG | 0644, gf[i].size);
		CHECK(gf[i].ino == 4 + i);
	}
	CHECK(!incfs_img_add_name(w, 2, gdir, "d"));
	CHECK(!incfs_img_add_name(w, gdir, gf[0].ino, "a"));
	CHECK(!incfs_img_add_name(w, 2, gf[1].ino, "b"));
	CHECK(!incfs_img_add_name(w, gdir, gf[1].ino, "hard"));
	CHECK(!incfs_img_add_name(w, 2, gf[2].ino, "c"));
	CHECK(!incfs_img_add_name(w, 2, gf[3].ino, "empty"));
	CHECK(!incfs_img_add_name(w, 2, gf[4].ino, "gone"));
	for (i = 0; i < NGF; i++) {
		for (b = 0; gf[i].present[b]; b++) {
			if (gf[i].present[b] == '0')
				continue;
			content(i, b, gf[i].text, buf, blen(gf[i].size, b));
			CHECK(!incfs_img_put_block(w, gf[i].ino, b, buf,
						   blen(gf[i].size, b),
						   gf[i].present[b] == 'z'));
		}
	}
	CHECK(!incfs_img_remove_name(w, 2, gf[4].ino, "gone"));
	CHECK(incfs_img_finish(w) == 0);
	return 0;
}

/* Every present block of @img reads back as the generator's. */
static int check_content(struct incfs_img *img, bool all_present)
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
				CHECK(!all_present || !want_present);
				CHECK(incfs_img_read_block(img, gf[i].ino, b, got) ==
				      -ENODATA);
				continue;
			}
			CHECK(want_present);
			n = incfs_img_read_block(img, gf[i].ino, b, got);
			CHECKF(n == (int)blen(gf[i].size, b), "ino %llu block %u: %d",
			       (unsigned long long)gf[i].ino, b, n);
			content(i, b, gf[i].text, want, n);
			CHECK(!memcmp(want, got, n));
		}
	}
	return 0;
}

static int t_write_then_open(void)
{
	struct incfs_img img;
	struct incfs_img_file *f;
	const char *p = tpath("golden");
	char buf[BS];

	CHECK(!make_golden(p));
	CHECK(!incfs_img_open(&img, p));
	CHECK(img.status == INCFS_IMG_CLEAN);
	CHECK(img.nproblems == 0);
	CHECK(img.nfiles == NGF + 1);
	CHECK(img.nnames == 6);
	CHECK(img.names[3].dir_ino == gdir && !strcmp(img.names[3].name, "hard"));
	CHECK(img.names[3].child_ino == gf[1].ino);
	f = incfs_img_file(&img, gdir);
	CHECK(f && f->mode == (S_IFDIR | 0555));
	f = incfs_img_file(&img, gf[0].ino);
	CHECK(f && f->mode == (S_IFREG | 0444) && f->size == gf[0].size);
	CHECK(f->block_count == 6 && f->blockmap_offset);
	CHECK(!incfs_img_block_present(&img, gf[0].ino, 2));
	CHECK(f->blocks[0].flags == 1 && f->blocks[4].flags == 0);
	/* The kernel's layout: full raw blocks aligned, area before its record. */
	CHECK(f->blocks[4].data_offset % BS == 0);
	CHECK(incfs_img_file(&img, 2) && incfs_img_file(&img, 99) == NULL);
	CHECK(incfs_img_read_block(&img, 99, 0, buf) == -ENOENT);
	CHECK(incfs_img_read_block(&img, gdir, 0, buf) == -EISDIR);
	CHECK(incfs_img_read_block(&img, gf[0].ino, 6, buf) == -ERANGE);
	for (size_t i = 0; i < img.nrecords; i++) {
		CHECK(img.records[i].crc_ok && img.records[i].applied);
		if (img.records[i].type == IF_MD_BLOCK_MAP) {
			struct incfs_img_file *g = NULL;

			for (size_t j = 0; j < img.nfiles; j++)
				if (img.files[j].blockmap_offset &&
				    img.files[j].blockmap_offset +
				    img.files[j].block_count * 14 ==
				    img.records[i].offset)
					g = &img.files[j];
			CHECK(g);
		}
	}
	CHECK(!check_content(&img, true));
	CHECK(incfs_img_check_blocks(&img) == 0);
	incfs_img_close(&img);
	return 0;
}

static int t_writer_refuses(void)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("refuse"));
	uint64_t d, e, f;
	char buf[BS] = { 0 };

	CHECK(w);
	d = incfs_img_new_file(w, S_IFDIR | 0755, 0);
	e = incfs_img_new_file(w, S_IFDIR | 0755, 0);
	f = incfs_img_new_file(w, S_IFREG | 0644, 10);
	CHECK(d && e && f);
	CHECK(incfs_img_new_file(w, S_IFLNK | 0777, 0) == 0 && errno == EINVAL);
	CHECK(incfs_img_new_file(w, S_IFREG, (64ULL << 30) + 1) == 0 && errno == EFBIG);
	CHECK(incfs_img_add_name(w, 2, f, ".cmd") == -EEXIST);
	CHECK(incfs_img_add_name(w, 2, f, "..") == -EINVAL);
	CHECK(incfs_img_add_name(w, 2, f, "a/b") == -EINVAL);
	CHECK(incfs_img_add_name(w, f, d, "x") == -ENOTDIR);
	CHECK(!incfs_img_add_name(w, 2, d, "d"));
	CHECK(incfs_img_add_name(w, 2, d, "d2") == -EEXIST ||
	      incfs_img_add_name(w, 2, d, "d2") == -EMLINK);
	CHECK(incfs_img_add_name(w, 2, d, "d3") == -EMLINK);
	CHECK(!incfs_img_add_name(w, d, e, "e"));
	CHECK(incfs_img_add_name(w, e, 2, "root") == -EMLINK);
	CHECK(!incfs_img_add_name(w, e, f, "f"));
	CHECK(incfs_img_remove_name(w, d, e, "e") == -ENOTEMPTY);
	CHECK(incfs_img_remove_name(w, e, d, "f") == -ENOENT);
	CHECK(incfs_img_put_block(w, f, 0, buf, 9, false) == -EINVAL);
	CHECK(incfs_img_put_block(w, f, 1, buf, 10, false) == -ERANGE);
	CHECK(incfs_img_put_block(w, d, 0, buf, 10, false) == -EISDIR);
	CHECK(!incfs_img_put_block(w, f, 0, buf, 10, true));
	CHECK(incfs_img_finish(w) == 0);
	return 0;
}

static int t_too_many_inodes(void)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("many"));
	struct incfs_img img;
	int i;

	CHECK(w);
	for (i = 0; i < 999; i++)
		CHECK(incfs_img_new_file(w, S_IFREG | 0444, 0));
	CHECK(incfs_img_new_file(w, S_IFREG | 0444, 0) == 0 && errno == ENFILE);
	CHECK(!incfs_img_finish(w));
	CHECK(!incfs_img_open(&img, tpath("many")));
	CHECK(img.status == INCFS_IMG_CLEAN && img.nfiles == 999);
	incfs_img_close(&img);
	return 0;
}

static int t_lz4_and_mixed(void)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("lz4"));
	struct incfs_img img;
	char in[BS], out[BS];
	uint64_t f;
	uint32_t b;

	CHECK(w);
	f = incfs_img_new_file(w, S_IFREG | 0444, 4 * BS + 7);
	CHECK(f);
	for (b = 0; b < 5; b++) {
		content(7, b, b % 2 == 0, in, blen(4 * BS + 7, b));
		CHECK(!incfs_img_put_block(w, f, b, in, blen(4 * BS + 7, b), true));
	}
	CHECK(!incfs_img_finish(w));
	CHECK(!incfs_img_open(&img, tpath("lz4")));
	CHECK(img.status == INCFS_IMG_CLEAN);
	for (b = 0; b < 5; b++) {
		const struct incfs_img_entry *e = &img.files[0].blocks[b];

		content(7, b, b % 2 == 0, in, blen(4 * BS + 7, b));
		/* Text shrinks; random data and the 7-byte tail do not. */
		CHECK((e->flags == 1) == (b % 2 == 0 && b != 4));
		CHECK(e->flags || e->stored_size == blen(4 * BS + 7, b));
		CHECK(incfs_img_read_block(&img, f, b, out) == (int)blen(4 * BS + 7, b));
		CHECK(!memcmp(in, out, blen(4 * BS + 7, b)));
	}
	incfs_img_close(&img);
	return 0;
}

/* ===== cuts and corruption ===== */

struct golden {
	char *data;
	size_t size;
	struct incfs_img img;		/* open on the golden image */
};

static int golden_load(struct golden *g)
{
	CHECK(!make_golden(tpath("golden")));
	CHECK(!read_file(tpath("golden"), &g->data, &g->size));
	CHECK(!incfs_img_open(&g->img, tpath("golden")));
	CHECK(g->img.status == INCFS_IMG_CLEAN);
	return 0;
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

static int t_cut_every_offset(void)
{
	struct golden g;
	struct incfs_img img;
	FILE *null = fopen("/dev/null", "w");
	const char *p = tpath("cut");
	size_t len, i, kept;
	int st;

	CHECK(null && !golden_load(&g));
	for (len = 0; len <= g.size; len++) {
		CHECK(!write_file(p, g.data, len));
		CHECK(!incfs_img_open(&img, p));
		if (len > IF_OFF_FIRST_MD && len < 32) {
			/*
			 * Not a prefix of a fresh superblock: its first link
			 * was written, so no crash can have cut it there.
			 */
			CHECK(img.status == INCFS_IMG_BROKEN);
			incfs_img_close(&img);
			CHECK(incfs_img_fsck(p, true, null) == INCFS_IMG_BROKEN);
			continue;
		}
		CHECKF(img.status == (cut_clean(&g, len) ? INCFS_IMG_CLEAN :
				      INCFS_IMG_REPAIRABLE),
		       "cut at %zu: %s", len, incfs_img_status_name(img.status));
		incfs_img_close(&img);
		st = incfs_img_fsck(p, true, null);
		CHECKF(st == INCFS_IMG_CLEAN, "cut at %zu: repair %d", len, st);
		CHECK(!incfs_img_open(&img, p));
		CHECKF(img.status == INCFS_IMG_CLEAN, "cut at %zu: after repair", len);
		for (i = 0, kept = 0; i < g.img.nrecords; i++)
			kept += g.img.records[i].offset + g.img.records[i].size <= len;
		CHECKF(img.nrecords == kept, "cut at %zu: %zu records, want %zu",
		       len, img.nrecords, kept);
		CHECK(img.size <= (len < 32 ? 32 : len));
		CHECK(!check_content(&img, len == g.size));
		CHECK(incfs_img_check_blocks(&img) == 0);
		incfs_img_close(&img);
	}
	golden_free(&g);
	fclose(null);
	return 0;
}

static void fix_crc(char *data, const struct incfs_img_record *r)
{
	union if_record rec;
	uint32_t crc;

	memcpy(&rec, data + r->offset, r->size);
	rec.h.crc = 0;
	rec.h.next = 0;
	crc = htole32(incfs_crc32(0, &rec, r->size));
	memcpy(data + r->offset + IF_OFF_CRC, &crc, sizeof(crc));
}

/* Open, check blocks, read everything: must not crash. */
static int poke(const char *p, enum incfs_img_status *st)
{
	struct incfs_img img;
	char buf[BS];
	size_t i;
	uint32_t b;

	CHECK(!incfs_img_open(&img, p));
	CHECK(incfs_img_check_blocks(&img) >= 0);
	for (i = 0; i < img.nfiles; i++)
		for (b = 0; b < img.files[i].block_count && b < 16; b++)
			incfs_img_read_block(&img, img.files[i].ino, b, buf);
	*st = img.status;
	incfs_img_close(&img);
	return 0;
}

static int t_corrupt_records(void)
{
	struct golden g;
	enum incfs_img_status st;
	const char *p = tpath("corrupt");
	size_t i, j, valid = 0;
	int fix;

	CHECK(!golden_load(&g));
	for (i = 0; i < g.img.nrecords; i++) {
		const struct incfs_img_record *r = &g.img.records[i];
		char saved[sizeof(union if_record)];

		memcpy(saved, g.data + r->offset, r->size);
		for (j = 0; j < r->size; j++) {
			bool in_next = j >= IF_OFF_NEXT && j < IF_OFF_NEXT + 8;

			for (fix = 0; fix < 2; fix++) {
				g.data[r->offset + j] ^= 0x5a;
				if (fix)
					fix_crc(g.data, r);
				CHECK(!write_file(p, g.data, g.size));
				CHECK(!poke(p, &st));
				/* The CRC covers all but the link to the next record. */
				CHECKF(fix || in_next || st == INCFS_IMG_BROKEN,
				       "record @%llu byte %zu: %s",
				       (unsigned long long)r->offset, j,
				       incfs_img_status_name(st));
				valid += st == INCFS_IMG_CLEAN;
				memcpy(g.data + r->offset, saved, r->size);
			}
		}
	}
	fprintf(stderr, "  # %zu corruptions with a fixed CRC still make a valid image\n",
		valid);
	golden_free(&g);
	return 0;
}

static int t_corrupt_super_and_entries(void)
{
	struct golden g;
	enum incfs_img_status st;
	const char *p = tpath("corrupt2");
	size_t j, i;
	uint32_t b;

	CHECK(!golden_load(&g));
	for (j = 0; j < 32; j++) {
		bool in_first = j >= IF_OFF_FIRST_MD && j < IF_OFF_FIRST_MD + 8;

		g.data[j] ^= 0x81;
		CHECK(!write_file(p, g.data, g.size));
		g.data[j] ^= 0x81;
		CHECK(!poke(p, &st));
		CHECKF(in_first ? st != INCFS_IMG_CLEAN : st == INCFS_IMG_BROKEN,
		       "superblock byte %zu: %s", j, incfs_img_status_name(st));
	}
	for (i = 0; i < g.img.nfiles; i++) {
		struct incfs_img_file *f = &g.img.files[i];

		for (b = 0; f->blockmap_offset && b < f->block_count; b++) {
			for (j = 0; j < 14; j++) {
				size_t at = f->blockmap_offset + b * 14 + j;

				g.data[at] ^= 0x10;
				CHECK(!write_file(p, g.data, g.size));
				g.data[at] ^= 0x10;
				CHECK(!poke(p, &st));
				CHECKF(st != INCFS_IMG_CLEAN, "entry @%zu: clean", at);
			}
		}
	}
	golden_free(&g);
	return 0;
}

static int t_fuzz(void)
{
	struct golden g;
	enum incfs_img_status st;
	const char *p = tpath("fuzz");
	char *copy;
	int i, k;

	CHECK(!golden_load(&g));
	copy = malloc(g.size);
	CHECK(copy);
	srand(12345);
	for (i = 0; i < 3000; i++) {
		memcpy(copy, g.data, g.size);
		for (k = 0; k < 1 + i % 8; k++)
			copy[rand() % (g.size < 4096 ? g.size : 4096)] = rand();
		CHECK(!write_file(p, copy, g.size - (i % 3 ? 0 : rand() % 100)));
		CHECK(!poke(p, &st));
	}
	free(copy);
	golden_free(&g);
	return 0;
}

static int t_data_crc(void)
{
	struct golden g;
	struct incfs_img_file *f;
	const char *p = tpath("datacrc");
	char want[128], *out = NULL, buf[BS];
	size_t outlen = 0;
	FILE *mem;
	int st;

	CHECK(!golden_load(&g));
	f = incfs_img_file(&g.img, gf[1].ino);
	CHECK(f && f->blocks[1].stored_size == BS / 2);
	g.data[f->blocks[1].data_offset + 100] ^= 1;
	CHECK(!write_file(p, g.data, g.size));
	g.data[f->blocks[1].data_offset + 100] ^= 1;
	mem = open_memstream(&out, &outlen);
	CHECK(mem);
	st = incfs_img_fsck(p, true, mem);
	fclose(mem);
	CHECK(st == INCFS_IMG_BROKEN);
	snprintf(want, sizeof(want), "offset %llu: ino %llu block 1: data CRC mismatch",
		 (unsigned long long)f->blocks[1].data_offset,
		 (unsigned long long)gf[1].ino);
	CHECKF(strstr(out, want), "%s", out);
	free(out);
	/* --repair left the broken image alone. */
	{
		char *after;
		size_t alen;

		CHECK(!read_file(p, &after, &alen));
		CHECK(alen == g.size);
		CHECK(memcmp(after, g.data, alen) != 0);
		free(after);
	}
	/* LZ4 garbage with a matching CRC. */
	f = incfs_img_file(&g.img, gf[0].ino);
	{
		const struct incfs_img_entry *e = &f->blocks[0];
		struct incfs_img img;
		uint32_t crc;
		size_t at;

		CHECK(e->flags == 1);
		memset(g.data + e->data_offset, 0xff, e->stored_size);
		crc = htole32(incfs_crc32(0, g.data + e->data_offset, e->stored_size));
		at = f->blockmap_offset + 10;
		memcpy(g.data + at, &crc, 4);
		CHECK(!write_file(p, g.data, g.size));
		CHECK(!incfs_img_open(&img, p));
		CHECK(img.status == INCFS_IMG_CLEAN);
		CHECK(incfs_img_read_block(&img, gf[0].ino, 0, buf) == -EBADMSG);
		CHECK(incfs_img_check_blocks(&img) == 1);
		CHECK(strstr(img.problems[0].what, "bad LZ4 data"));
		CHECK(img.problems[0].offset == e->data_offset);
		CHECK(img.status == INCFS_IMG_BROKEN);
		incfs_img_close(&img);
	}
	golden_free(&g);
	return 0;
}

static int t_hostile(void)
{
	struct incfs_img_writer *w = incfs_img_create(tpath("host"));
	struct incfs_img img;
	char *d;
	size_t len;
	uint64_t f;
	struct if_blockmap *bm;

	CHECK(w);
	f = incfs_img_new_file(w, S_IFREG | 0444, 3 * BS);
	CHECK(f);
	CHECK(!incfs_img_finish(w));
	CHECK(!read_file(tpath("host"), &d, &len));
	/* inode @32, area @77 (42 bytes), blockmap @119 */
	bm = (struct if_blockmap *)(d + 119);
	CHECK(bm->h.type == IF_MD_BLOCK_MAP);
	{
		static const uint64_t bases[] = { 0, 31, 76, 78, 1ULL << 62,
						  0x7fffffffffffffffULL,
						  0xffffffffffffff00ULL };
		size_t i;
		struct incfs_img_record r = { .offset = 119, .size = 43 };

		for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
			bm->base = htole64(bases[i]);
			fix_crc(d, &r);
			CHECK(!write_file(tpath("host2"), d, len));
			CHECK(!incfs_img_open(&img, tpath("host2")));
			CHECKF(img.status == INCFS_IMG_BROKEN, "base %llx",
			       (unsigned long long)bases[i]);
			incfs_img_close(&img);
		}
		bm->base = htole64(77);
		bm->count = htole32(0xffffffff);
		fix_crc(d, &r);
		CHECK(!write_file(tpath("host2"), d, len));
		CHECK(!incfs_img_open(&img, tpath("host2")));
		CHECK(img.status == INCFS_IMG_BROKEN);
		incfs_img_close(&img);
	}
	/* A link into the superblock, and far past the end. */
	{
		uint64_t link = htole64(8);

		memcpy(d + IF_OFF_FIRST_MD, &link, 8);
		CHECK(!write_file(tpath("host2"), d, len));
		CHECK(!incfs_img_open(&img, tpath("host2")));
		CHECK(img.status == INCFS_IMG_BROKEN);
		incfs_img_close(&img);
		link = htole64(0x8000000000000000ULL);
		memcpy(d + IF_OFF_FIRST_MD, &link, 8);
		CHECK(!write_file(tpath("host2"), d, len));
		CHECK(!incfs_img_open(&img, tpath("host2")));
		CHECK(img.status == INCFS_IMG_BROKEN);
		incfs_img_close(&img);
		link = htole64(1ULL << 40);
		memcpy(d + IF_OFF_FIRST_MD, &link, 8);
		CHECK(!write_file(tpath("host2"), d, len));
		CHECK(!incfs_img_open(&img, tpath("host2")));
		CHECKF(img.status == INCFS_IMG_REPAIRABLE && img.torn, "%s: %s",
		       incfs_img_status_name(img.status),
		       img.nproblems ? img.problems[0].what : "");
		incfs_img_close(&img);
	}
	/* Not an image at all. */
	memset(d, 'x', len);
	CHECK(!write_file(tpath("host2"), d, 20));
	CHECK(!incfs_img_open(&img, tpath("host2")));
	CHECK(img.status == INCFS_IMG_BROKEN);
	incfs_img_close(&img);
	CHECK(incfs_img_open(&img, tmpdir) == -EINVAL);
	CHECK(incfs_img_open(&img, tpath("nonexistent")) == -ENOENT);
	free(d);
	return 0;
}

/* ===== gc and dump ===== */

static int t_gc(void)
{
	struct incfs_img a, b;
	const char *in = tpath("golden"), *out = tpath("gc");
	FILE *null = fopen("/dev/null", "w");
	size_t i;

	CHECK(null && !make_golden(in));
	CHECK(!incfs_img_gc(in, out));
	CHECK(incfs_img_fsck(out, false, null) == INCFS_IMG_CLEAN);
	CHECK(!incfs_img_open(&a, in) && !incfs_img_open(&b, out));
	CHECK(b.size < a.size);
	CHECK(b.nfiles == a.nfiles - 1);
	CHECK(incfs_img_file(&b, gf[4].ino) == NULL);	/* "gone" dropped */
	CHECK(b.nnames == a.nnames);
	for (i = 0; i < a.nnames; i++) {
		CHECK(a.names[i].dir_ino == b.names[i].dir_ino);
		CHECK(a.names[i].child_ino == b.names[i].child_ino);
		CHECK(!strcmp(a.names[i].name, b.names[i].name));
	}
	for (i = 0; i < b.nfiles; i++) {
		struct incfs_img_file *fa = incfs_img_file(&a, b.files[i].ino);
		struct incfs_img_file *fb = &b.files[i];
		uint32_t k;

		CHECK(fa && fa->mode == fb->mode && fa->size == fb->size);
		for (k = 0; fb->blocks && k < fb->block_count; k++) {
			CHECK(fa->blocks[k].stored_size == fb->blocks[k].stored_size);
			CHECK(fa->blocks[k].flags == fb->blocks[k].flags);
			CHECK(fa->blocks[k].crc == fb->blocks[k].crc);
		}
	}
	CHECK(!check_content(&b, true));
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
		CHECKF(b.size - used < BS, "size %llu used %llu",
		       (unsigned long long)b.size, (unsigned long long)used);
	}
	incfs_img_close(&a);
	incfs_img_close(&b);
	/* gc of a gc is the same image. */
	CHECK(!incfs_img_gc(out, tpath("gc2")));
	{
		char *x, *y;
		size_t xl, yl;

		CHECK(!read_file(out, &x, &xl) && !read_file(tpath("gc2"), &y, &yl));
		CHECK(xl == yl && !memcmp(x, y, xl));
		free(x);
		free(y);
	}
	/* A broken image is refused. */
	{
		char *x;
		size_t xl;

		CHECK(!read_file(in, &x, &xl));
		x[40] ^= 1;
		CHECK(!write_file(tpath("broken"), x, xl));
		free(x);
		CHECK(incfs_img_gc(tpath("broken"), tpath("gc3")) == -EUCLEAN);
	}
	fclose(null);
	return 0;
}

static int t_dump(void)
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

	CHECK(!make_golden(in));
	mem = open_memstream(&out, &len);
	CHECK(mem);
	CHECK(incfs_img_dump(in, mem) == 0);
	fclose(mem);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		CHECKF(strstr(out, want[i]), "missing: %s\n%s", want[i], out);
	free(out);
	return 0;
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

static int t_cli_create_read_back(void)
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

	if (!cli)
		return -1;
	CHECK(!mkdir(tpath("src"), 0755));
	CHECK(!mkdir(tpath("src/sub"), 0755));
	CHECK(!mkdir(tpath("src/sub/deeper"), 0755));
	CHECK(!mkdir(tpath("src/emptydir"), 0755));
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		CHECK(!mkfile(tpath(files[i].path), i, files[i].size, files[i].text));
	CHECK(!link(tpath("src/one"), tpath("src/sub/one-link")));
	for (lz4 = 0; lz4 < 2; lz4++) {
		char im[512];

		snprintf(im, sizeof(im), "%s", tpath(lz4 ? "cli-lz4.img" : "cli.img"));

		CHECK(cli_run(NULL, "create %s '%s' '%s'", lz4 ? "--lz4" : "",
			      tpath("src"), im) == 0);
		CHECK(cli_run(NULL, "fsck '%s'", im) == 0);
		CHECK(!incfs_img_open(&img, im));
		CHECK(img.status == INCFS_IMG_CLEAN);
		CHECK(img.nfiles == 8);		/* 3 dirs, 6 files, one a link */
		CHECK(img.nnames == 9);
		/* Read every file back by its path. */
		for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
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
				CHECKF(ino, "%s", files[i].path);
				dir = ino;
				path = slash ? slash + 1 : NULL;
			}
			CHECK(!read_file(tpath(files[i].path), &want, &wl));
			CHECK(incfs_img_file(&img, ino)->size == wl);
			for (b = 0; (uint64_t)b * BS < wl; b++) {
				int n = incfs_img_read_block(&img, ino, b, buf);

				CHECK(n == (int)blen(wl, b));
				CHECK(!memcmp(buf, want + (size_t)b * BS, n));
			}
			free(want);
		}
		if (lz4)
			CHECK(incfs_img_file(&img, img.names[0].child_ino));
		incfs_img_close(&img);
		CHECK(cli_run(&out, "dump '%s'", im) == 0);
		CHECKF(strstr(out, "  /sub/one-link ino "), "%s", out);
		CHECK(strstr(out, " nlink 2\n"));
		/* The 17-byte tail does not shrink. */
		CHECKF(strstr(out, lz4 ? "present 0-75 (76/76) lz4 75 blockmap" :
			      "present 0-75 (76/76) blockmap"), "%s", out);
		free(out);
	}
	/* Refuses to overwrite; --force replaces. */
	CHECK(cli_run(&out, "create '%s' '%s'", tpath("src"), tpath("cli.img")) == 1);
	CHECK(strstr(out, "exists"));
	free(out);
	CHECK(cli_run(NULL, "create --force '%s' '%s'", tpath("src"), tpath("cli.img")) == 0);
	/* A failure leaves nothing behind. */
	CHECK(!mkfifo(tpath("src/fifo"), 0644));
	CHECK(cli_run(&out, "create '%s' '%s'", tpath("src"), tpath("fail.img")) == 1);
	CHECK(access(tpath("fail.img"), F_OK) && errno == ENOENT);
	free(out);
	CHECK(!unlink(tpath("src/fifo")));
	return 0;
}

static int t_cli_fsck_gc_usage(void)
{
	char g[512], c[512], *data, *out;
	size_t len;

	if (!cli)
		return -1;
	snprintf(g, sizeof(g), "%s", tpath("golden"));
	snprintf(c, sizeof(c), "%s", tpath("cli-cut"));
	CHECK(!make_golden(g));
	CHECK(!read_file(g, &data, &len));
	CHECK(cli_run(NULL, "fsck '%s'", g) == 0);
	CHECK(!write_file(c, data, len - 50));
	CHECK(cli_run(&out, "fsck '%s'", c) == 1);
	CHECK(strstr(out, "repairable"));
	free(out);
	CHECK(cli_run(NULL, "fsck --repair '%s'", c) == 0);
	CHECK(cli_run(NULL, "fsck '%s'", c) == 0);
	data[100] ^= 4;
	CHECK(!write_file(c, data, len - 50));
	CHECK(cli_run(&out, "fsck --repair '%s'", c) == 2);
	CHECK(strstr(out, "bad record CRC"));
	free(out);
	{
		char *after;
		size_t al;

		CHECK(!read_file(c, &after, &al));
		CHECK(al == len - 50 && !memcmp(after, data, al));
		free(after);
	}
	CHECK(cli_run(NULL, "gc '%s' '%s'", g, tpath("cli-gc")) == 0);
	CHECK(cli_run(NULL, "fsck '%s'", tpath("cli-gc")) == 0);
	CHECK(cli_run(NULL, "gc '%s' '%s'", g, tpath("cli-gc")) == 1);
	CHECK(cli_run(NULL, "gc '%s' '%s'", c, tpath("cli-gc2")) == 1);
	CHECK(access(tpath("cli-gc2"), F_OK));
	CHECK(cli_run(NULL, "fsck '%s'", tpath("nonexistent")) == 3);
	CHECK(cli_run(&out, "") == 64);
	CHECK(strstr(out, "usage:"));
	free(out);
	CHECK(cli_run(&out, "-h") == 0);
	CHECK(strstr(out, "create") && strstr(out, "gc"));
	free(out);
	CHECK(cli_run(&out, "frob") == 64);
	CHECK(strchr(out, '\n') == out + strlen(out) - 1);
	free(out);
	CHECK(cli_run(NULL, "fsck --lz4 x") == 64);
	CHECK(cli_run(NULL, "fsck a b") == 64);
	CHECK(cli_run(NULL, "gc a") == 64);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	char cmd[300];

	if (argc > 1)
		cli = argv[1];
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_incfs_image.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	run("write_then_open", t_write_then_open);
	run("writer_refuses_what_the_kernel_refuses", t_writer_refuses);
	run("too_many_inodes", t_too_many_inodes);
	run("lz4_and_mixed", t_lz4_and_mixed);
	run("cut_at_every_offset_then_repair", t_cut_every_offset);
	run("corrupt_every_record_byte", t_corrupt_records);
	run("corrupt_superblock_and_entries", t_corrupt_super_and_entries);
	run("fuzz", t_fuzz);
	run("data_crc_and_lz4_errors", t_data_crc);
	run("hostile_offsets", t_hostile);
	run("gc_drops_unreachable_and_dead_space", t_gc);
	run("dump_lines", t_dump);
	run("cli_create_and_read_back", t_cli_create_read_back);
	run("cli_fsck_gc_usage", t_cli_fsck_gc_usage);
	printf("%d passed, %d failed\n", npass, nfail);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (!nfail && system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmpdir);
	return nfail ? 1 : 0;
}
