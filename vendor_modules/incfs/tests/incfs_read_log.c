// SPDX-License-Identifier: GPL-2.0
/*
 * incfs: the read log (README.md, "The read log").  Every block a reader
 * asks incfs for, present or not, is recorded once in .log with its file,
 * time, uid and pid; a block in the page cache is not asked for again.
 * Only the mounter reads .log, in whole records, waiting for one unless
 * O_NONBLOCK; a reader more than the ring behind loses the oldest and
 * INCFS_IOC_READ_LOG_STATE says how many.  read_log_records=0 turns the log
 * off, and the root reserves the name .log.
 */
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define SHORT_MS	200
#define LONG_MS		10000
#define MAX_RECS	1024
#define NOBODY		65534

typedef struct incfs_read_log_record rec_t;

FIXTURE(rlog) {
	struct incfs_mnt m;
	struct incfs_file f;
	rec_t recs[MAX_RECS];
};

FIXTURE_SETUP(rlog)
{
	memset(&self->m, 0, sizeof(self->m));
	self->m.cmd = -1;
	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(rlog)
{
	incfs_teardown(&self->m);
}

/* Mount m again with @extra options after the usual ones. */
static int remount_with(struct incfs_mnt *m, unsigned int timeout_ms, const char *extra)
{
	char opts[128];
	int fd, ret = incfs_umount(m);

	if (ret)
		return ret;
	fd = open(m->backing, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=%u,%s", fd, timeout_ms,
		 extra);
	ret = incfs_mount_opts(m->dir, opts);
	close(fd);
	if (ret)
		return ret;
	m->mounted = true;
	m->cmd = incfs_open_cmd(m, O_RDWR);
	return m->cmd < 0 ? m->cmd : 0;
}

/* A file of @blocks blocks in the root, every block delivered. */
static int delivered_file(struct incfs_mnt *m, const char *name, struct incfs_file *f,
			  __u32 blocks, __u64 seed)
{
	int ret = incfs_make_file(m->cmd, INCFS_ROOT_INODE, name, f, (__u64)blocks * INCFS_BS,
				  seed, false);

	return ret ?: incfs_send_all(m->cmd, f, INCFS_SEND_NONE);
}

static int open_log(const struct incfs_mnt *m, int flags)
{
	int fd = open(incfs_path(m, INCFS_LOG_FILENAME), flags | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Every record .log has for this reader now; their count, or -errno. */
static int drain(int fd, rec_t *recs, int max)
{
	int n = 0;

	while (n < max) {
		ssize_t got = read(fd, recs + n, (max - n) * sizeof(*recs));

		if (got < 0)
			return errno == EAGAIN ? n : -errno;
		if (got == 0 || got % sizeof(*recs))
			return -EBADMSG;
		n += got / sizeof(*recs);
	}
	return n;
}

/* pread() block @block of @path with readahead off; 0 or -errno. */
static int read_block(const char *path, __u32 block)
{
	char buf[INCFS_BS];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (pread(fd, buf, sizeof(buf), (off_t)block * INCFS_BS) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int log_state(int fd, struct incfs_read_log_state *st)
{
	return ioctl(fd, INCFS_IOC_READ_LOG_STATE, st) ? -errno : 0;
}

/* How many of recs[0..n) are of file @ino, block @block. */
static int count_of(const rec_t *recs, int n, __u64 ino, __u32 block)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		c += recs[i].file_ino == ino && recs[i].block_index == block;
	return c;
}

/* ===== the interface ===== */

/* The layouts and the ioctl number a loader is compiled against. */
TEST(the_uapi_layouts_are_fixed)
{
	EXPECT_EQ(32, sizeof(struct incfs_read_log_record));
	EXPECT_EQ(0, offsetof(struct incfs_read_log_record, file_ino));
	EXPECT_EQ(8, offsetof(struct incfs_read_log_record, timestamp_us));
	EXPECT_EQ(16, offsetof(struct incfs_read_log_record, block_index));
	EXPECT_EQ(20, offsetof(struct incfs_read_log_record, uid));
	EXPECT_EQ(24, offsetof(struct incfs_read_log_record, pid));
	EXPECT_EQ(32, sizeof(struct incfs_read_log_state));
	EXPECT_EQ(24, offsetof(struct incfs_read_log_state, capacity));
	EXPECT_EQ(0x80206740U, INCFS_IOC_READ_LOG_STATE);
	EXPECT_STREQ(".log", INCFS_LOG_FILENAME);
}

/* ===== what a record holds ===== */

TEST_F(rlog, a_read_is_logged_with_its_file_block_time_uid_and_pid)
{
	long long t0, t1;
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 8, 1)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd) TH_LOG("open .log: %s", strerror(-fd));
	ASSERT_EQ(0, drain(fd, self->recs, MAX_RECS));

	t0 = now_us();
	ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), 5));
	t1 = now_us();
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(1, n) TH_LOG("records after one block read: %d", n);
	EXPECT_EQ(self->f.ino, self->recs[0].file_ino);
	EXPECT_EQ(5, self->recs[0].block_index);
	EXPECT_EQ(getuid(), self->recs[0].uid);
	EXPECT_EQ(getpid(), self->recs[0].pid);
	EXPECT_LE(t0, (long long)self->recs[0].timestamp_us);
	EXPECT_GE(t1, (long long)self->recs[0].timestamp_us);
	EXPECT_EQ(0, self->recs[0].reserved);
	close(fd);
}

/* Run read_block(f, @block) in a child as uid and gid @id; its exit status. */
static int read_as(const struct incfs_mnt *m, __u32 block, uid_t id, bool new_pid_ns,
		   pid_t *pid)
{
	int status;

	*pid = fork();
	if (*pid < 0)
		return -errno;
	if (!*pid) {
		if ((new_pid_ns && getpid() != 1) || setgid(id) || setuid(id))
			_exit(100);
		_exit(read_block(incfs_path(m, "f"), block) ? 101 : 0);
	}
	if (waitpid(*pid, &status, 0) != *pid)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(rlog, a_reader_of_another_uid_is_logged_by_its_uid)
{
	pid_t child;
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 4, 2)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, read_as(&self->m, 3, NOBODY, false, &child));
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(1, n);
	EXPECT_EQ(3, self->recs[0].block_index);
	EXPECT_EQ(NOBODY, self->recs[0].uid);
	EXPECT_EQ(child, self->recs[0].pid);
	close(fd);
}

/* pid 1 of a new pid namespace is logged by its pid in the initial one (this test's). */
TEST_F(rlog, a_reader_in_another_pid_namespace_is_logged_by_its_initial_pid)
{
	pid_t child;
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 4, 12)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	if (unshare(CLONE_NEWPID)) {
		ASSERT_EQ(EINVAL, errno) TH_LOG("unshare: %s", strerror(errno));
		close(fd);
		SKIP(return, "the kernel has no pid namespaces (CONFIG_PID_NS)");
	}
	ASSERT_EQ(0, read_as(&self->m, 1, 0, true, &child));
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(1, n);
	EXPECT_EQ(1, self->recs[0].block_index);
	EXPECT_EQ(child, self->recs[0].pid);
	close(fd);
}

/* ===== which reads are logged ===== */

TEST_F(rlog, a_sequential_read_logs_every_block_once)
{
	const __u32 blocks = 64;
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, blocks, 3)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &self->f))
		TH_LOG("%s", incfs_err);
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(blocks, n);
	for (__u32 b = 0; b < blocks; b++) {
		EXPECT_EQ(1, count_of(self->recs, n, self->f.ino, b)) TH_LOG("block %u", b);
	}
	close(fd);
}

TEST_F(rlog, a_block_in_the_page_cache_is_not_logged_again)
{
	struct incfs_read_log_state st;
	int fd;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 4, 4)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), 1));
	ASSERT_EQ(0, log_state(fd, &st));
	ASSERT_EQ(1, st.logged);
	ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), 1));
	ASSERT_EQ(0, log_state(fd, &st));
	EXPECT_EQ(1, st.logged);
	close(fd);
}

TEST_F(rlog, an_absent_block_is_logged_when_asked_for)
{
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, SHORT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &self->f,
				     4 * INCFS_BS, 5, false)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ETIME, read_block(incfs_path(&self->m, "f"), 2));
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(1, n);
	EXPECT_EQ(self->f.ino, self->recs[0].file_ino);
	EXPECT_EQ(2, self->recs[0].block_index);
	close(fd);
}

/* ===== reading .log ===== */

TEST_F(rlog, reads_return_whole_records)
{
	char buf[3 * sizeof(rec_t) + 7];
	int fd;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 8, 6)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, read(fd, buf, sizeof(rec_t) - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno);
	for (__u32 b = 0; b < 5; b++)
		ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), b));
	EXPECT_EQ(3 * sizeof(rec_t), read(fd, buf, sizeof(buf)));
	EXPECT_EQ(2 * sizeof(rec_t), read(fd, buf, sizeof(buf)));
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ(EAGAIN, errno);
	close(fd);
}

TEST_F(rlog, a_reader_waits_for_a_record_and_poll_says_when)
{
	struct pollfd p;
	pid_t child;
	int fd, ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 4, 7)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY);
	ASSERT_LE(0, fd);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	EXPECT_EQ(0, poll(&p, 1, 0));
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		rec_t r;

		/* Blocks until the parent's read below is logged. */
		_exit(read(fd, &r, sizeof(r)) == sizeof(r) && r.block_index == 2 ? 0 : 1);
	}
	incfs_sleep_ms(100);
	ASSERT_EQ(-ETIMEDOUT, incfs_poll_child(child, 0));
	ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), 2));
	ret = incfs_wait_child(child, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("reader: %s", incfs_strerr(ret));
	ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), 3));
	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_EQ(POLLIN, p.revents & POLLIN);
	close(fd);
}

TEST_F(rlog, a_forced_unmount_ends_a_waiting_reader)
{
	pid_t child;
	int fd, ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY);
	ASSERT_LE(0, fd);
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		rec_t r;

		_exit(read(fd, &r, sizeof(r)) == 0 ? 0 : 1);
	}
	close(fd);
	incfs_sleep_ms(100);
	close(self->m.cmd);
	self->m.cmd = -1;
	ASSERT_EQ(0, umount2(self->m.dir, MNT_FORCE | MNT_DETACH)) TH_LOG("%s", strerror(errno));
	self->m.mounted = false;
	ret = incfs_wait_child(child, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("reader: %s", incfs_strerr(ret));
}

/* ===== the ring ===== */

TEST_F(rlog, a_reader_that_falls_behind_learns_how_many_it_lost)
{
	struct incfs_read_log_state st;
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 20, 8)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, remount_with(&self->m, LONG_MS, "read_log_records=8"))
		TH_LOG("%s", incfs_err);
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	for (__u32 b = 0; b < 20; b++)
		ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), b));
	ASSERT_EQ(0, log_state(fd, &st));
	EXPECT_EQ(20, st.logged);
	EXPECT_EQ(8, st.capacity);
	EXPECT_EQ(12, st.lost);
	EXPECT_EQ(12, st.position);
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(8, n);
	for (int i = 0; i < n; i++)
		EXPECT_EQ(12 + i, self->recs[i].block_index);
	ASSERT_EQ(0, log_state(fd, &st));
	EXPECT_EQ(20, st.position);
	EXPECT_EQ(12, st.lost);
	close(fd);
}

TEST_F(rlog, a_new_reader_starts_at_the_oldest_record_held)
{
	struct incfs_read_log_state st;
	int fd, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 12, 9)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, remount_with(&self->m, LONG_MS, "read_log_records=4"))
		TH_LOG("%s", incfs_err);
	for (__u32 b = 0; b < 10; b++)
		ASSERT_EQ(0, read_block(incfs_path(&self->m, "f"), b));
	fd = open_log(&self->m, O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, log_state(fd, &st));
	EXPECT_EQ(6, st.position);
	EXPECT_EQ(0, st.lost);
	n = drain(fd, self->recs, MAX_RECS);
	ASSERT_EQ(4, n);
	EXPECT_EQ(6, self->recs[0].block_index);
	EXPECT_EQ(9, self->recs[3].block_index);
	close(fd);
}

/* ===== who may read it, and when there is none ===== */

TEST_F(rlog, only_the_mounter_reads_the_log)
{
	struct stat st;
	pid_t child;
	int fd, ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, INCFS_LOG_FILENAME), &st));
	EXPECT_EQ(S_IFREG | 0400, st.st_mode);
	EXPECT_EQ(getuid(), st.st_uid);
	fd = open_log(&self->m, O_RDWR);
	EXPECT_EQ(-EPERM, fd);
	fd = open_log(&self->m, O_WRONLY);
	EXPECT_EQ(-EPERM, fd);
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		if (setgid(NOBODY) || setuid(NOBODY))
			_exit(100);
		_exit(-open_log(&self->m, O_RDONLY));
	}
	ret = incfs_wait_child(child, LONG_MS);
	EXPECT_EQ(EACCES, ret) TH_LOG("another uid opening .log: %s", incfs_strerr(ret));
}

TEST_F(rlog, read_log_records_0_turns_the_log_off)
{
	struct stat st;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, delivered_file(&self->m, "f", &self->f, 2, 10)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, remount_with(&self->m, LONG_MS, "read_log_records=0"))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, INCFS_LOG_FILENAME), &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &self->f))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(-EINVAL, remount_with(&self->m, LONG_MS, "read_log_records=1048577"));
}

TEST_F(rlog, the_root_reserves_the_name_log)
{
	__u64 dir;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &self->f, INCFS_BS,
				     11, false)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-EEXIST, incfs_add_entry(self->m.cmd, INCFS_ROOT_INODE, self->f.ino,
					   INCFS_LOG_FILENAME));
	ASSERT_EQ(0, incfs_make_dir(self->m.cmd, INCFS_ROOT_INODE, "d", &dir))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_add_entry(self->m.cmd, dir, self->f.ino, INCFS_LOG_FILENAME))
		TH_LOG("%s", incfs_err);
	/* Off or on, the name stays reserved: an image stays one with a log. */
	ASSERT_EQ(0, remount_with(&self->m, LONG_MS, "read_log_records=0"))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(-EEXIST, incfs_add_entry(self->m.cmd, INCFS_ROOT_INODE, self->f.ino,
					   INCFS_LOG_FILENAME));
}

TEST_HARNESS_MAIN
