// SPDX-License-Identifier: GPL-2.0
/*
 * incfs against hostile or faulty callers.  What any user can make it do
 * must not stall others: a user who can read a directory can hand
 * getdents64() a buffer that is a private mapping of an incfs file whose
 * next page is an absent block; copying the names faults there and waits
 * for the loader (up to read_timeout_ms).  Lookups, instructions and
 * sync() go on meanwhile: readdir copies names under the tree's lock,
 * never to user memory.  And a loader's mistake loses nothing: a read() of
 * .cmd into a bad buffer fails with EFAULT and leaves the pending reads
 * for the next read().  A backing file its owner made append-only or
 * immutable is refused at mount: incfs would rewrite it in place.
 */
#include <grp.h>
#include <linux/fs.h>
#include <sys/mman.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

/* Long enough that anything queued behind the reader would still wait. */
#define SLOW_MS		10000
#define USER		1000

FIXTURE(hostile) {
	struct incfs_mnt m;
	struct incfs_file f;	/* "f": 2 blocks, block 0 present, 1 absent */
	__u64 d;		/* "d": a directory with a few names */
};

FIXTURE_SETUP(hostile)
{
	struct incfs_file g;
	char name[16];

	ASSERT_EQ(0, incfs_setup(&self->m, SLOW_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &self->f, 2 * INCFS_BS, 7,
				     false)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send_range(self->m.cmd, &self->f, 0, 1, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(self->m.cmd, INCFS_ROOT_INODE, "d", &self->d))
		TH_LOG("%s", incfs_err);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		ASSERT_EQ(0, incfs_make_file(self->m.cmd, self->d, name, &g, 1, i, true))
			TH_LOG("%s", incfs_err);
	}
}

FIXTURE_TEARDOWN_PARENT(hostile)
{
	incfs_teardown(&self->m);
}

/*
 * As an unprivileged user: getdents64() of "d" into f's private mapping,
 * placed so that ".", ".." land at the end of the present page 0 and the
 * first name on page 1, whose block is absent.  Exits 0 when the call
 * returned the names once the block came.
 */
static _Noreturn void faulting_reader(const struct incfs_mnt *m)
{
	char path[200];
	char *map;
	int dfd, fd;
	long n;

	if (setgroups(0, NULL) || setresgid(USER, USER, USER) || setresuid(USER, USER, USER))
		incfs_child_exit("reader", -EPERM);
	snprintf(path, sizeof(path), "%s/d", m->dir);
	dfd = open(path, O_RDONLY | O_DIRECTORY);
	snprintf(path, sizeof(path), "%s/f", m->dir);
	fd = open(path, O_RDONLY);
	if (dfd < 0 || fd < 0)
		incfs_child_exit("reader", -errno);
	map = mmap(NULL, 2 * INCFS_BS, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		incfs_child_exit("reader", -errno);
	map[0] = 1;	/* page 0 is present: fault it in (a private copy) now */
	/* Two 24-byte records for the dots, then the names on page 1. */
	n = syscall(SYS_getdents64, dfd, map + INCFS_BS - 48, 4096);
	incfs_child_exit("reader", n > 48 ? 0 : n < 0 ? -errno : -ENODATA);
}

TEST_F(hostile, readdir_faulting_on_an_absent_block_blocks_no_one)
{
	struct incfs_file late;
	struct stat st;
	pid_t pid;
	int status;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		faulting_reader(&self->m);
	/* The reader waits for block 1 (under tree_mutex, were it held). */
	ASSERT_EQ(0, incfs_wait_pending_block(&self->m, self->f.ino, 1, 10000))
		TH_LOG("%s", incfs_err);

	/* An instruction, a lookup never made before, sync(): none waits. */
	EXPECT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "late", &late, 1, 9, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, stat(incfs_path(&self->m, "d/n3"), &st)) TH_LOG("%s", strerror(errno));
	sync();
	/* Done while the reader still waits: nothing queued behind it. */
	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG));
	EXPECT_EQ(0, incfs_wait_pending_block(&self->m, self->f.ino, 1, 0))
		TH_LOG("%s", incfs_err);

	/* The block comes: the reader gets its names. */
	ASSERT_EQ(0, incfs_send_range(self->m.cmd, &self->f, 1, 1, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	status = incfs_wait_child(pid, 10000);
	EXPECT_EQ(0, status) TH_LOG("reader: %s", incfs_strerr(status));
}

TEST_F(hostile, cmd_read_into_a_bad_buffer_loses_no_pending_read)
{
	struct incfs_pending_read_info r[4];
	void *bad;
	pid_t pid;
	int fd, status;

	pid = incfs_fork_reader(incfs_path(&self->m, "f"), &self->f, INCFS_BS, INCFS_BS);
	ASSERT_LE(0, pid);
	ASSERT_EQ(0, incfs_wait_pending_block(&self->m, self->f.ino, 1, 10000))
		TH_LOG("%s", incfs_err);
	bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, bad);
	fd = incfs_open_cmd(&self->m, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, fd) TH_LOG("%s", incfs_err);

	EXPECT_EQ(-1, read(fd, bad, sizeof(r)));
	EXPECT_EQ(EFAULT, errno);
	/* The same descriptor still has the read to serve. */
	ASSERT_EQ(1, incfs_read_pending(fd, r, 4)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(self->f.ino, r[0].file_ino);
	EXPECT_EQ(1, r[0].block_index);
	/* Once returned, it is not returned again. */
	EXPECT_EQ(-1, read(fd, r, sizeof(r)));
	EXPECT_EQ(EAGAIN, errno);

	ASSERT_EQ(0, incfs_send_range(self->m.cmd, &self->f, 1, 1, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	status = incfs_wait_child(pid, 10000);
	EXPECT_EQ(0, status) TH_LOG("reader: %s", incfs_strerr(status));
	close(fd);
}

/* Set or clear an inode flag (FS_APPEND_FL, FS_IMMUTABLE_FL): 0 or -errno. */
static int set_flag(int fd, int flag, bool on)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		return -errno;
	flags = on ? flags | flag : flags & ~flag;
	return ioctl(fd, FS_IOC_SETFLAGS, &flags) ? -errno : 0;
}

/* mount() with backing_fd fd: 0 or -errno; a mount that worked is undone. */
static int try_mount(const char *dir, int fd)
{
	char opts[64];
	int ret;

	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=100", fd);
	ret = incfs_mount_opts(dir, opts);
	if (!ret)
		umount(dir);
	return ret;
}

TEST(append_only_or_immutable_backing_file_is_refused)
{
	char top[128], dir[160], backing[160];
	int fd;

	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
	/* ext4 (the scratch disk): tmpfs need not support the flags. */
	snprintf(top, sizeof(top), "%s/incfs.XXXXXX", incfs_scratch());
	ASSERT_NE(NULL, mkdtemp(top)) TH_LOG("%s: %s", top, strerror(errno));
	snprintf(dir, sizeof(dir), "%s/mnt", top);
	snprintf(backing, sizeof(backing), "%s/backing.img", top);
	ASSERT_EQ(0, mkdir(dir, 0755));
	fd = open(backing, O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);

	/* Append-only: writable only through O_APPEND, as opened here. */
	ASSERT_EQ(0, set_flag(fd, FS_APPEND_FL, true));
	close(fd);
	fd = open(backing, O_RDWR | O_APPEND);
	ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
	EXPECT_EQ(-EPERM, try_mount(dir, fd));
	ASSERT_EQ(0, set_flag(fd, FS_APPEND_FL, false));
	/* Immutable after the open. */
	ASSERT_EQ(0, set_flag(fd, FS_IMMUTABLE_FL, true));
	EXPECT_EQ(-EPERM, try_mount(dir, fd));
	ASSERT_EQ(0, set_flag(fd, FS_IMMUTABLE_FL, false));
	/* Neither: the same descriptor mounts. */
	EXPECT_EQ(0, try_mount(dir, fd));

	close(fd);
	unlink(backing);
	rmdir(dir);
	rmdir(top);
}

TEST_HARNESS_MAIN
