// SPDX-License-Identifier: GPL-2.0
/*
 * /bin/incfs-image against the module (vendor_modules/incfs/tools/README.md):
 * images the module wrote must fsck clean and dump as what was made;
 * images incfs-image created must mount and read back byte for byte; a cut
 * module-made image must be repairable (fsck exits 1, --repair 0) and
 * mount after the repair; gc of a module-made image with an unlinked file
 * must mount with the same tree, inode numbers and content.
 */
#include <ftw.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TOOL		"/bin/incfs-image"
#define TIMEOUT_MS	100
#define OUT_MAX		(256 * 1024)

/* Shared with the parent (FIXTURE_TEARDOWN_PARENT): no heap pointers. */
FIXTURE(tool) {
	struct incfs_mnt m;
	char top[128];
	char out[OUT_MAX];
};

FIXTURE_SETUP(tool)
{
	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	snprintf(self->top, sizeof(self->top), "%s", self->m.top);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

FIXTURE_TEARDOWN_PARENT(tool)
{
	incfs_teardown(&self->m);
	/* What the tests added next to the backing file. */
	if (self->top[0] && !access(self->top, F_OK))
		nftw(self->top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Run the tool; stdout and stderr together in out.  Its exit status, or -1. */
static int tool(char *out, const char *a0, const char *a1, const char *a2,
		const char *a3)
{
	char *argv[] = { TOOL, (char *)a0, (char *)a1, (char *)a2, (char *)a3, NULL };
	size_t len = 0;
	int p[2], status;
	ssize_t n;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(TOOL, argv);
		_exit(127);
	}
	close(p[1]);
	while (len < OUT_MAX - 1 && (n = read(p[0], out + len, OUT_MAX - 1 - len)) > 0)
		len += n;
	out[len] = '\0';
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const char *in_top(FIXTURE_DATA(tool) *self, const char *name)
{
	static char bufs[4][PATH_MAX];
	static int i;
	char *p = bufs[i++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", self->top, name);
	return p;
}

/* The "present ..." text of a dump for a file's blocks: "0,2,4" style. */
static void even_ranges(char *buf, size_t size, unsigned int last)
{
	size_t len = 0;

	for (unsigned int b = 0; b <= last; b += 2)
		len += snprintf(buf + len, size - len, b ? ",%u" : "%u", b);
}

TEST_F(tool, module_image_fsck_clean_and_dump)
{
	struct incfs_tree t;
	char line[256], ranges[128];

	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, 10)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);

	ASSERT_EQ(0, tool(self->out, "fsck", self->m.backing, NULL, NULL))
		TH_LOG("fsck:\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, ": clean,")) TH_LOG("%s", self->out);

	ASSERT_EQ(0, tool(self->out, "dump", self->m.backing, NULL, NULL))
		TH_LOG("dump:\n%s", self->out);
	EXPECT_NE(NULL, gki_find_line(self->out, "superblock: magic 0x5346434e49 version 1 size 32 flags 0x0 first_md 32 block_size 4096"))
		TH_LOG("%s", self->out);
	EXPECT_NE(NULL, gki_find_line(self->out, "  / ino 2 mode 040555 size 0 nlink 4\n"))
		TH_LOG("%s", self->out);
	snprintf(line, sizeof(line), "  /d1/big ino %llu mode 0100555 size %llu nlink 2\n",
		 (unsigned long long)t.big.ino, (unsigned long long)t.big.size);
	EXPECT_NE(NULL, gki_find_line(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	snprintf(line, sizeof(line), "  /d1/d2/big-link ino %llu mode 0100555 size %llu nlink 2\n",
		 (unsigned long long)t.big.ino, (unsigned long long)t.big.size);
	EXPECT_NE(NULL, gki_find_line(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	snprintf(line, sizeof(line), "  /one ino %llu mode 0100555 size 1 nlink 1\n",
		 (unsigned long long)t.one.ino);
	EXPECT_NE(NULL, gki_find_line(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	snprintf(line, sizeof(line), "  /emptydir ino %llu mode 040555 size 0 nlink 2\n",
		 (unsigned long long)t.emptydir);
	EXPECT_NE(NULL, gki_find_line(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	even_ranges(ranges, sizeof(ranges), 20);
	snprintf(line, sizeof(line), "  ino %llu: present %s (11/21) blockmap @",
		 (unsigned long long)t.big.ino, ranges);
	EXPECT_NE(NULL, gki_find_line(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	snprintf(line, sizeof(line), "  ino %llu: present 0-7 (8/8) lz4 ",
		 (unsigned long long)t.lz.ino);
	EXPECT_NE(NULL, gki_find_line(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	snprintf(line, sizeof(line), ": remove dir 2 child %llu name \"gone\"\n",
		 (unsigned long long)t.one.ino);
	EXPECT_NE(NULL, strstr(self->out, line)) TH_LOG("no %s in\n%s", line, self->out);
	EXPECT_EQ(NULL, strstr(self->out, "crc BAD")) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, gki_find_line(self->out, "status: clean")) TH_LOG("%s", self->out);
}

/* A file of @size bytes of the generator's content at @path. */
static int write_gen(const char *path, const struct incfs_file *f)
{
	unsigned char buf[INCFS_BS];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ret = 0;

	if (fd < 0)
		return -errno;
	for (__u32 b = 0; !ret && b < incfs_nblocks(f->size); b++) {
		incfs_block_content(f, b, buf);
		if (write(fd, buf, incfs_block_len(f, b)) != incfs_block_len(f, b))
			ret = -EIO;
	}
	close(fd);
	return ret;
}

TEST_F(tool, created_image_mounts_and_reads_back)
{
	static const struct {
		const char *rel, *src;
		__u64 size;
		bool compressible;
	} files[] = {
		{ "a", "src/a", 3 * INCFS_BS + 5, false },
		{ "sub/b", "src/sub/b", 40 * INCFS_BS, true },
		{ "sub/deep/c", "src/sub/deep/c", 1, false },
		{ "sub/deep/empty", "src/sub/deep/empty", 0, false },
		{ "mixed", "src/mixed", 9 * INCFS_BS + 1000, true },
	};
	struct incfs_file f[5];
	struct stat s1, s2;

	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkdir(in_top(self, "src"), 0755));
	ASSERT_EQ(0, mkdir(in_top(self, "src/sub"), 0755));
	ASSERT_EQ(0, mkdir(in_top(self, "src/sub/deep"), 0755));
	ASSERT_EQ(0, mkdir(in_top(self, "src/emptydir"), 0755));
	for (int i = 0; i < 5; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].size = files[i].size;
		f[i].seed = 500 + i;
		f[i].compressible = files[i].compressible;
		ASSERT_EQ(0, write_gen(in_top(self, files[i].src), &f[i]));
	}
	ASSERT_EQ(0, link(in_top(self, "src/a"), in_top(self, "src/sub/a-link")));
	ASSERT_EQ(0, unlink(self->m.backing));

	ASSERT_EQ(0, tool(self->out, "create", "--lz4", in_top(self, "src"),
			  self->m.backing)) TH_LOG("create:\n%s", self->out);
	ASSERT_EQ(0, tool(self->out, "fsck", self->m.backing, NULL, NULL))
		TH_LOG("fsck:\n%s", self->out);
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, files[i].rel), &f[i]))
			TH_LOG("%s: %s", files[i].rel, incfs_err);
	}
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "sub/a-link"), &f[0]))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "a"), &s1));
	ASSERT_EQ(0, stat(incfs_path(&self->m, "sub/a-link"), &s2));
	EXPECT_EQ(s1.st_ino, s2.st_ino);
	EXPECT_EQ(2, s1.st_nlink);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "emptydir"), &s1));
	EXPECT_TRUE(S_ISDIR(s1.st_mode));
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "emptydir"), NULL, 0, false))
		TH_LOG("%s", incfs_err);
}

/* The backing file's size, or -1. */
static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

TEST_F(tool, cut_module_image_is_repaired_and_mounts)
{
	struct incfs_tree t;
	struct incfs_file late;
	__u64 extra;
	long long size;
	int fd;

	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, 20)) TH_LOG("%s", incfs_err);
	/* A last record after the blocks: a name, cut below. */
	ASSERT_EQ(0, incfs_new_file(self->m.cmd, S_IFREG | 0555, 0, &extra))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(self->m.cmd, t.emptydir, extra, "cut-away"))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);

	size = file_size(self->m.backing);
	ASSERT_LT(300, size);
	ASSERT_EQ(0, truncate(self->m.backing, size - 5));
	EXPECT_EQ(1, tool(self->out, "fsck", self->m.backing, NULL, NULL))
		TH_LOG("fsck of a cut image:\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "torn tail")) TH_LOG("%s", self->out);
	EXPECT_EQ(0, tool(self->out, "fsck", "--repair", self->m.backing, NULL))
		TH_LOG("fsck --repair:\n%s", self->out);
	EXPECT_EQ(0, tool(self->out, "fsck", self->m.backing, NULL, NULL))
		TH_LOG("fsck after repair:\n%s", self->out);
	EXPECT_GE(size - 296, file_size(self->m.backing));

	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, false)) TH_LOG("%s", incfs_err);

	/* A file whose last block is the last thing in the image... */
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "late", &late, 2 * INCFS_BS,
				     22, true)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);

	/* ... cut inside its data: the block's entry is torn. */
	size = file_size(self->m.backing);
	ASSERT_EQ(0, truncate(self->m.backing, size - 3));
	EXPECT_EQ(1, tool(self->out, "fsck", self->m.backing, NULL, NULL))
		TH_LOG("fsck of an image cut in its data:\n%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "block 1: data at")) TH_LOG("%s", self->out);
	EXPECT_EQ(0, tool(self->out, "fsck", "--repair", self->m.backing, NULL))
		TH_LOG("%s", self->out);
	EXPECT_EQ(0, tool(self->out, "fsck", self->m.backing, NULL, NULL))
		TH_LOG("%s", self->out);
	EXPECT_EQ(size - INCFS_BS, file_size(self->m.backing));
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	fd = open(incfs_path(&self->m, "late"), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, incfs_check_block(fd, &late, 0)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_absent(fd, &late, 1)) TH_LOG("%s", incfs_err);
	close(fd);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "one"), &t.one)) TH_LOG("%s", incfs_err);
}

TEST_F(tool, broken_image_is_not_changed)
{
	struct incfs_tree t;
	char *before, *after;
	size_t blen, alen;
	int fd;

	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, 30)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	/* A byte of the first record's ino: a CRC mismatch. */
	fd = open(self->m.backing, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, pwrite(fd, "\xff", 1, 32 + 23));
	close(fd);
	before = gki_read_file(self->m.backing, &blen);
	ASSERT_NE(NULL, before);
	EXPECT_EQ(2, tool(self->out, "fsck", "--repair", self->m.backing, NULL))
		TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "offset 32: bad record CRC")) TH_LOG("%s", self->out);
	after = gki_read_file(self->m.backing, &alen);
	ASSERT_NE(NULL, after);
	EXPECT_TRUE(alen == blen && !memcmp(before, after, alen));
	free(before);
	free(after);
	EXPECT_EQ(-EBADMSG, incfs_mount(&self->m, TIMEOUT_MS));
}

TEST_F(tool, gc_of_module_image_mounts_and_reads_identically)
{
	struct incfs_tree t;
	struct incfs_file tmp;
	long long in, out;

	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, 40)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_tree_complete(&t, self->m.cmd)) TH_LOG("%s", incfs_err);
	/* A file with data, then unlinked: dead for gc. */
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, t.d1, "tmp", &tmp, 30 * INCFS_BS, 41, true))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_remove_entry(self->m.cmd, t.d1, tmp.ino, "tmp"))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);

	ASSERT_EQ(0, tool(self->out, "gc", self->m.backing, in_top(self, "gc.img"), NULL))
		TH_LOG("gc:\n%s", self->out);
	ASSERT_EQ(0, tool(self->out, "fsck", in_top(self, "gc.img"), NULL, NULL))
		TH_LOG("fsck of the gc output:\n%s", self->out);
	in = file_size(self->m.backing);
	out = file_size(in_top(self, "gc.img"));
	EXPECT_GT(in - 30 * INCFS_BS, out) TH_LOG("in %lld out %lld", in, out);
	ASSERT_EQ(0, tool(self->out, "dump", in_top(self, "gc.img"), NULL, NULL));
	EXPECT_EQ(NULL, strstr(self->out, "unreachable")) TH_LOG("%s", self->out);

	ASSERT_EQ(0, rename(in_top(self, "gc.img"), self->m.backing));
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, true)) TH_LOG("%s", incfs_err);
	/* The mount goes on from the compacted image. */
	EXPECT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "new", &tmp, 5000, 42, true))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "new"), &tmp)) TH_LOG("%s", incfs_err);
}

TEST(usage)
{
	char out[4096];
	char *argv[] = { TOOL, "frob", NULL };
	int p[2], status, n;
	ssize_t len;
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(p[1], 2);
		execv(TOOL, argv);
		_exit(127);
	}
	close(p[1]);
	n = 0;
	while (n < (int)sizeof(out) - 1 && (len = read(p[0], out + n, sizeof(out) - 1 - n)) > 0)
		n += len;
	close(p[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(64, WEXITSTATUS(status));
	ASSERT_LT(0, n);
	out[n] = '\0';
	EXPECT_EQ(out + n - 1, strchr(out, '\n')) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
