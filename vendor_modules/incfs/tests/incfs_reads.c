// SPDX-License-Identifier: GPL-2.0
/*
 * incfs: reads of absent blocks.  They wait until a data loader delivers
 * the block (ETIME after read_timeout_ms, EINTR on a signal, ENODEV on a
 * forced unmount), show as pending reads on .cmd (poll, read, serial
 * numbers), and readahead never waits.  Readers and loaders run in child
 * processes; page faults (mmap, execve) wait too.
 */
#include <sys/mman.h>
#include <sys/sendfile.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

/* Where a timeout is the point. */
#define SHORT_MS	200
/* Where data comes: reads must not time out. */
#define LONG_MS		10000

FIXTURE(rd) {
	struct incfs_mnt m;
};

FIXTURE_SETUP(rd)
{
	memset(&self->m, 0, sizeof(self->m));
	self->m.cmd = -1;
	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(rd)
{
	incfs_teardown(&self->m);
}

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static int set_handler(int flags)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = flags };

	sigemptyset(&sa.sa_mask);
	return sigaction(SIGUSR1, &sa, NULL);
}

/* A file in the root of m, of size bytes, nothing delivered. */
static int mkfile(struct incfs_mnt *m, const char *name, struct incfs_file *f, __u64 size,
		  __u64 seed)
{
	return incfs_make_file(m->cmd, INCFS_ROOT_INODE, name, f, size, seed, false);
}

/* Deliver blocks first .. first + count - 1 of f, uncompressed. */
static int deliver(struct incfs_mnt *m, const struct incfs_file *f, __u32 first, __u32 count)
{
	return incfs_send_range(m->cmd, f, first, count, INCFS_SEND_NONE);
}

/* ===== timeouts ===== */

TEST_F(rd, absent_block_times_out)
{
	struct incfs_file f;
	char buf[INCFS_BS];
	long long t0, ms;
	ssize_t n;
	int fd;

	ASSERT_EQ(0, incfs_setup(&self->m, SHORT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 1)) TH_LOG("%s", incfs_err);
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	t0 = incfs_now_ms();
	n = pread(fd, buf, INCFS_BS, INCFS_BS);
	ms = incfs_now_ms() - t0;
	EXPECT_EQ(-1, n);
	EXPECT_EQ(ETIME, errno) TH_LOG("%s", strerror(errno));
	EXPECT_LE(150, ms) TH_LOG("failed after %lld ms with read_timeout_ms=%d", ms, SHORT_MS);
	EXPECT_GT(LONG_MS, ms);
	/* read() too, and again: a timed-out block is not cached as anything. */
	EXPECT_EQ(-1, read(fd, buf, 100));
	EXPECT_EQ(ETIME, errno);
	EXPECT_EQ(0, incfs_check_absent(fd, &f, 1)) TH_LOG("%s", incfs_err);
	/* Delivered, it reads. */
	ASSERT_EQ(0, deliver(&self->m, &f, 1, 1)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_block(fd, &f, 1)) TH_LOG("%s", incfs_err);
	close(fd);
}

TEST_F(rd, zero_timeout_fails_at_once)
{
	struct incfs_file f;
	char buf[INCFS_BS];
	long long t0;
	int fd;

	ASSERT_EQ(0, incfs_setup(&self->m, 0)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 2 * INCFS_BS, 2)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &f, 1, 1)) TH_LOG("%s", incfs_err);
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	t0 = incfs_now_ms();
	EXPECT_EQ(-1, pread(fd, buf, INCFS_BS, 0));
	EXPECT_EQ(ETIME, errno) TH_LOG("%s", strerror(errno));
	EXPECT_GT(LONG_MS, incfs_now_ms() - t0);
	/* Present blocks read as usual. */
	EXPECT_EQ(0, incfs_check_block(fd, &f, 1)) TH_LOG("%s", incfs_err);
	close(fd);
}

TEST_F(rd, short_read_up_to_absent_block)
{
	struct incfs_file f;
	char buf[4 * INCFS_BS];
	ssize_t n;
	int fd;

	ASSERT_EQ(0, incfs_setup(&self->m, SHORT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 3)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send(self->m.cmd, &f, (__u32[]){ 0, 2, 3 }, 3, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	n = pread(fd, buf, sizeof(buf), 0);
	EXPECT_EQ(INCFS_BS, n) TH_LOG("pread returned %zd (%s)", n, n < 0 ? strerror(errno) : "");
	n = pread(fd, buf, sizeof(buf), 100);
	EXPECT_EQ(INCFS_BS - 100, n)
		TH_LOG("pread returned %zd (%s)", n, n < 0 ? strerror(errno) : "");
	/* read() advances to the absent block, then fails there. */
	n = read(fd, buf, sizeof(buf));
	EXPECT_EQ(INCFS_BS, n);
	EXPECT_EQ(INCFS_BS, lseek(fd, 0, SEEK_CUR));
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ(ETIME, errno);
	EXPECT_EQ(0, incfs_check_pread(fd, &f, 2 * INCFS_BS, 2 * INCFS_BS)) TH_LOG("%s", incfs_err);
	close(fd);
}

/* ===== signals ===== */

/* How a reader reads: each waits for an absent block interruptibly. */
enum reader { BY_PREAD, BY_SPLICE, BY_SENDFILE };

static const char *const reader_name[] = { "pread", "splice", "sendfile" };

/* Read @len bytes at @pos of @fd by @how (into a pipe for splice/sendfile). */
static ssize_t read_by(enum reader how, int fd, off_t pos, size_t len, void *buf, int pipe_in)
{
	loff_t lpos = pos;

	switch (how) {
	case BY_PREAD:
		return pread(fd, buf, len, pos);
	case BY_SPLICE:
		return splice(fd, &lpos, pipe_in, NULL, len, 0);
	case BY_SENDFILE:
		return sendfile(pipe_in, fd, &pos, len);
	}
	return -1;
}

/* Blocks 0 and 1 of @f, present, through a pipe by @how. */
static void check_pipe_read(struct __test_metadata *_metadata, struct incfs_mnt *m,
			    const struct incfs_file *f, enum reader how)
{
	unsigned char got[2 * INCFS_BS], want[2 * INCFS_BS];
	int fd = open(incfs_path(m, "f"), O_RDONLY), p[2];

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ((ssize_t)sizeof(got), read_by(how, fd, 0, sizeof(got), NULL, p[1]))
		TH_LOG("%s: %s", reader_name[how], strerror(errno));
	EXPECT_EQ((ssize_t)sizeof(got), read(p[0], got, sizeof(got)));
	incfs_fill(f, 0, sizeof(want), want);
	EXPECT_EQ(0, memcmp(got, want, sizeof(got)));
	close(p[0]);
	close(p[1]);
	close(fd);
}

/*
 * A read of absent block 1 by @how ends with EINTR on a signal (without
 * SA_RESTART); for splice and sendfile the bytes then go through the pipe
 * once delivered.
 */
static void check_wait_ends_on_signal(struct __test_metadata *_metadata,
				      FIXTURE_DATA(rd) *self, enum reader how)
{
	struct incfs_file f;
	pid_t pid;
	int ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 4 + how)) TH_LOG("%s", incfs_err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char buf[INCFS_BS];
		int fd = open(incfs_path(&self->m, "f"), O_RDONLY), p[2];
		ssize_t n;

		if (fd < 0 || pipe(p) || set_handler(0))
			_exit(100);
		n = read_by(how, fd, INCFS_BS, INCFS_BS, buf, p[1]);
		if (n == -1 && errno == EINTR && got_signal == SIGUSR1)
			_exit(0);
		_exit(n < 0 ? errno : 101);
	}
	ASSERT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, 1, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	ret = incfs_wait_child(pid, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("%s: %d (%s; 101: the read succeeded)", reader_name[how], ret,
				 incfs_strerr(ret));
	if (how == BY_PREAD)
		return;
	/* Once delivered, the bytes come through the pipe. */
	ASSERT_EQ(0, deliver(&self->m, &f, 0, 2)) TH_LOG("%s", incfs_err);
	check_pipe_read(_metadata, &self->m, &f, how);
}

TEST_F(rd, signal_interrupts_wait_eintr)
{
	check_wait_ends_on_signal(_metadata, self, BY_PREAD);
}

TEST_F(rd, splice_wait_ends_on_a_signal)
{
	check_wait_ends_on_signal(_metadata, self, BY_SPLICE);
}

TEST_F(rd, sendfile_wait_ends_on_a_signal)
{
	check_wait_ends_on_signal(_metadata, self, BY_SENDFILE);
}

TEST_F(rd, signal_with_sa_restart_restarts_wait)
{
	struct incfs_file f;
	int ret, status = 0;
	pid_t pid;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 5)) TH_LOG("%s", incfs_err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open(incfs_path(&self->m, "f"), O_RDONLY);

		if (fd < 0 || set_handler(SA_RESTART))
			_exit(100);
		ret = incfs_check_block(fd, &f, 1);
		if (!ret && got_signal != SIGUSR1)
			_exit(101);
		incfs_child_exit("reader", ret);
	}
	ASSERT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, 1, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	incfs_sleep_ms(300);
	/* Still waiting, for the same block. */
	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG)) TH_LOG("the reader ended: 0x%x", status);
	EXPECT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, 1, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &f, 1, 1)) TH_LOG("%s", incfs_err);
	ret = incfs_wait_child(pid, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("reader: %d (101: no signal seen)", ret);
}

/* ===== waiting readers ===== */

TEST_F(rd, child_procs_waiting_for_data)
{
	struct incfs_file f1, f2;
	const struct { struct incfs_file *f; __u32 block; } waits[] = {
		{ &f1, 1 }, { &f1, 3 }, { &f1, 3 }, { &f1, 5 }, { &f2, 0 }, { &f2, 2 },
	};
	pid_t pids[8];
	int n = 0, ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f1", &f1, 6 * INCFS_BS, 6)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f2", &f2, 3 * INCFS_BS - 5, 7)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send(self->m.cmd, &f1, (__u32[]){ 0, 2, 4 }, 3, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	for (unsigned int i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		const char *path = incfs_path(&self->m, waits[i].f == &f1 ? "f1" : "f2");

		pids[n] = incfs_fork_reader(path, waits[i].f, (__u64)waits[i].block * INCFS_BS,
					    INCFS_BS);
		ASSERT_LT(0, pids[n]);
		n++;
	}
	/* Whole-file readers, waiting at their first absent block. */
	pids[n] = incfs_fork_reader(incfs_path(&self->m, "f1"), &f1, 0, f1.size);
	ASSERT_LT(0, pids[n++]);
	pids[n] = incfs_fork_reader(incfs_path(&self->m, "f2"), &f2, 100, f2.size);
	ASSERT_LT(0, pids[n++]);
	for (unsigned int i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		ASSERT_EQ(0, incfs_wait_pending_block(&self->m, waits[i].f->ino, waits[i].block,
						      LONG_MS)) TH_LOG("%s", incfs_err);
	}
	ASSERT_EQ(0, incfs_send(self->m.cmd, &f1, (__u32[]){ 1, 3, 5 }, 3, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send_all(self->m.cmd, &f2, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < n; i++) {
		ret = incfs_wait_child(pids[i], LONG_MS);
		EXPECT_EQ(0, ret) TH_LOG("reader %d: %d (%s)", i, ret, incfs_strerr(ret));
	}
}

/* ===== pending reads on .cmd ===== */

TEST_F(rd, pending_reads)
{
	struct incfs_pending_read_info r[16];
	struct pollfd pfd = { .events = POLLIN };
	__u32 s1, s2;
	struct incfs_file f;
	char small[INCFS_PENDING];
	pid_t r1, r2;
	int fd1, fd2, fd3, n;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 16 * INCFS_BS, 8)) TH_LOG("%s", incfs_err);
	fd1 = incfs_open_cmd(&self->m, O_RDWR);
	ASSERT_LE(0, fd1);
	pfd.fd = fd1;
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("POLLIN with nothing pending");

	/* A reader waits: POLLIN, and a record for its block. */
	r1 = incfs_fork_reader(incfs_path(&self->m, "f"), &f, 5 * INCFS_BS, INCFS_BS);
	ASSERT_LT(0, r1);
	ASSERT_EQ(1, poll(&pfd, 1, LONG_MS));
	EXPECT_TRUE(pfd.revents & POLLIN) TH_LOG("revents 0x%x", pfd.revents);
	n = incfs_read_pending(fd1, r, 16);
	ASSERT_EQ(1, n) TH_LOG("%s", n < 0 ? incfs_err : "");
	EXPECT_EQ(f.ino, r[0].file_ino);
	EXPECT_EQ(5, r[0].block_index);
	s1 = r[0].serial_number;

	/* Seen: no POLLIN, and read() has nothing newer. */
	EXPECT_EQ(0, poll(&pfd, 1, 0)) TH_LOG("POLLIN after the record was read");
	ASSERT_EQ(0, fcntl(fd1, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-EAGAIN, incfs_read_pending(fd1, r, 16));

	/* Another open of .cmd has not seen it. */
	fd2 = incfs_open_cmd(&self->m, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, fd2);
	pfd.fd = fd2;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	n = incfs_read_pending(fd2, r, 16);
	ASSERT_EQ(1, n);
	EXPECT_EQ(f.ino, r[0].file_ino);
	EXPECT_EQ(5, r[0].block_index);
	EXPECT_EQ(s1, r[0].serial_number);

	/* A buffer smaller than one record. */
	fd3 = incfs_open_cmd(&self->m, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, fd3);
	EXPECT_EQ(-1, read(fd3, small, INCFS_PENDING - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(fd3, small, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(fd3, small, 0));
	EXPECT_EQ(EINVAL, errno);

	/* A second reader: the first open file gets only the newer record. */
	r2 = incfs_fork_reader(incfs_path(&self->m, "f"), &f, 9 * INCFS_BS, 100);
	ASSERT_LT(0, r2);
	pfd.fd = fd1;
	ASSERT_EQ(1, poll(&pfd, 1, LONG_MS));
	n = incfs_read_pending(fd1, r, 16);
	ASSERT_EQ(1, n);
	EXPECT_EQ(f.ino, r[0].file_ino);
	EXPECT_EQ(9, r[0].block_index);
	s2 = r[0].serial_number;
	EXPECT_LT(s1, s2);

	/* Oldest first, as many as fit. */
	EXPECT_EQ(INCFS_PENDING, read(fd3, r, INCFS_PENDING + 10));
	EXPECT_EQ(5, r[0].block_index);
	EXPECT_EQ(s1, r[0].serial_number);
	EXPECT_EQ(INCFS_PENDING, read(fd3, r, 2 * INCFS_PENDING - 1));
	EXPECT_EQ(9, r[0].block_index);
	EXPECT_EQ(s2, r[0].serial_number);
	EXPECT_EQ(-EAGAIN, incfs_read_pending(fd3, r, 16));

	ASSERT_EQ(0, incfs_send(self->m.cmd, &f, (__u32[]){ 5, 9 }, 2, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_wait_child(r1, LONG_MS));
	EXPECT_EQ(0, incfs_wait_child(r2, LONG_MS));
	/* Served reads are not pending any more. */
	close(fd3);
	fd3 = incfs_open_cmd(&self->m, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, fd3);
	EXPECT_EQ(-EAGAIN, incfs_read_pending(fd3, r, 16));
	close(fd1);
	close(fd2);
	close(fd3);
}

TEST_F(rd, poll_with_several_waiters)
{
	const __u32 blocks[] = { 1, 3, 5, 7 };
	struct incfs_pending_read_info r[16];
	struct pollfd pfd = { .events = POLLIN };
	bool seen[4] = { false };
	struct incfs_file f;
	pid_t pids[4];
	int n, fd;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 8 * INCFS_BS, 9)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < 4; i++) {
		pids[i] = incfs_fork_reader(incfs_path(&self->m, "f"), &f,
					    (__u64)blocks[i] * INCFS_BS, INCFS_BS);
		ASSERT_LT(0, pids[i]);
	}
	/* One read() of a fresh open returns all four. */
	n = incfs_wait_pending(&self->m, 0, 0, 4, r, 16, LONG_MS);
	ASSERT_EQ(4, n) TH_LOG("%s", n < 0 ? incfs_err : "");
	for (int i = 0; i < n; i++) {
		int k;

		EXPECT_EQ(f.ino, r[i].file_ino);
		for (k = 0; k < 4; k++)
			if (blocks[k] == r[i].block_index)
				break;
		ASSERT_GT(4, k) TH_LOG("pending read of block %u", r[i].block_index);
		EXPECT_FALSE(seen[k]) TH_LOG("block %u twice", r[i].block_index);
		seen[k] = true;
		if (i) {
			EXPECT_LT(r[i - 1].serial_number, r[i].serial_number)
				TH_LOG("serials %u then %u", r[i - 1].serial_number,
				       r[i].serial_number);
		}
	}

	/* poll() on a fresh open; none after reading them all. */
	fd = incfs_open_cmd(&self->m, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, fd);
	pfd.fd = fd;
	EXPECT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLIN);
	EXPECT_EQ(4, incfs_read_pending(fd, r, 16));
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	/* Serving two leaves two, and no POLLIN for them again. */
	ASSERT_EQ(0, incfs_send(self->m.cmd, &f, blocks, 2, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_wait_child(pids[0], LONG_MS));
	EXPECT_EQ(0, incfs_wait_child(pids[1], LONG_MS));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	n = incfs_wait_pending(&self->m, 0, 0, 2, r, 16, LONG_MS);
	EXPECT_EQ(2, n);
	if (n == 2) {
		EXPECT_EQ(blocks[2] + blocks[3], r[0].block_index + r[1].block_index);
		EXPECT_NE(r[0].block_index, r[1].block_index);
		EXPECT_LE(blocks[2], r[0].block_index);
		EXPECT_LE(blocks[2], r[1].block_index);
	}
	ASSERT_EQ(0, incfs_send(self->m.cmd, &f, blocks + 2, 2, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_wait_child(pids[2], LONG_MS));
	EXPECT_EQ(0, incfs_wait_child(pids[3], LONG_MS));
	close(fd);
}

TEST_F(rd, cmd_read_blocks_until_pending)
{
	struct incfs_pending_read_info r[4];
	struct incfs_file f;
	int ready[2], ret, status = 0;
	pid_t waiter, reader;
	long long end;
	char c;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 10)) TH_LOG("%s", incfs_err);

	/* A blocking read() on .cmd returns once a read waits. */
	waiter = fork();
	ASSERT_LE(0, waiter);
	if (!waiter) {
		int fd = incfs_open_cmd(&self->m, O_RDWR), n;

		if (fd < 0)
			_exit(100);
		n = incfs_read_pending(fd, r, 4);
		if (n < 0)
			_exit(-n);
		_exit(n >= 1 && r[0].file_ino == f.ino && r[0].block_index == 2 ? 0 : 101);
	}
	incfs_sleep_ms(300);
	EXPECT_EQ(0, waitpid(waiter, &status, WNOHANG)) TH_LOG("read() of .cmd did not block");
	reader = incfs_fork_reader(incfs_path(&self->m, "f"), &f, 2 * INCFS_BS, INCFS_BS);
	ASSERT_LT(0, reader);
	ret = incfs_wait_child(waiter, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("waiter: %d", ret);
	ASSERT_EQ(0, deliver(&self->m, &f, 2, 1)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_wait_child(reader, LONG_MS));

	/* A signal ends a blocking read() of .cmd with EINTR. */
	ASSERT_EQ(0, pipe(ready));
	waiter = fork();
	ASSERT_LE(0, waiter);
	if (!waiter) {
		int fd = incfs_open_cmd(&self->m, O_RDWR);
		ssize_t n;

		if (fd < 0 || set_handler(0) || write(ready[1], "r", 1) != 1)
			_exit(100);
		n = read(fd, r, sizeof(r));
		_exit(n == -1 && errno == EINTR ? 0 : n < 0 ? errno : 101);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	/* Until it ends: the first signal may come before read() waits. */
	end = incfs_now_ms() + LONG_MS;
	do {
		kill(waiter, SIGUSR1);
		ret = incfs_poll_child(waiter, 100);
	} while (ret == -ETIMEDOUT && incfs_now_ms() < end);
	if (ret == -ETIMEDOUT)
		incfs_wait_child(waiter, 0);
	EXPECT_EQ(0, ret) TH_LOG("waiter: %d (101: read() returned records)", ret);
	close(ready[0]);
	close(ready[1]);
}

/* ===== readahead ===== */

TEST_F(rd, readahead_never_waits)
{
	struct incfs_pending_read_info r[16];
	struct incfs_file fa, fb, fc;
	unsigned char want[INCFS_BS];
	long long t0;
	char *p;
	int a, b, c, early;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "a", &fa, 64 * INCFS_BS, 11)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "b", &fb, 64 * INCFS_BS, 12)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "c", &fc, 64 * INCFS_BS, 13)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &fa, 0, 1)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &fb, 0, 1)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &fc, 0, 1)) TH_LOG("%s", incfs_err);
	early = incfs_open_cmd(&self->m, O_RDWR | O_NONBLOCK);
	ASSERT_LE(0, early);
	a = open(incfs_path(&self->m, "a"), O_RDONLY);
	b = open(incfs_path(&self->m, "b"), O_RDONLY);
	c = open(incfs_path(&self->m, "c"), O_RDONLY);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, c);

	/* read() of block 0 (its readahead window holds absent blocks). */
	t0 = incfs_now_ms();
	EXPECT_EQ(0, incfs_check_block(a, &fa, 0)) TH_LOG("%s", incfs_err);
	EXPECT_GT(LONG_MS / 2, incfs_now_ms() - t0) TH_LOG("read of block 0 waited");

	/* readahead(2) and fadvise over the whole file. */
	t0 = incfs_now_ms();
	EXPECT_EQ(0, readahead(c, 0, 64 * INCFS_BS)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, posix_fadvise(c, 0, 0, POSIX_FADV_WILLNEED));
	EXPECT_GT(LONG_MS / 2, incfs_now_ms() - t0) TH_LOG("readahead waited");
	EXPECT_EQ(0, incfs_check_block(c, &fc, 0)) TH_LOG("%s", incfs_err);

	/* A page fault on page 0 (fault-around and read-around of the rest). */
	p = mmap(NULL, 64 * INCFS_BS, PROT_READ, MAP_SHARED, b, 0);
	ASSERT_NE(MAP_FAILED, p);
	incfs_block_content(&fb, 0, want);
	t0 = incfs_now_ms();
	EXPECT_EQ(0, memcmp(p, want, INCFS_BS));
	EXPECT_GT(LONG_MS / 2, incfs_now_ms() - t0) TH_LOG("fault on page 0 waited");
	munmap(p, 64 * INCFS_BS);

	/* Nobody waited for anything, then or now. */
	incfs_sleep_ms(300);
	EXPECT_EQ(-EAGAIN, incfs_read_pending(early, r, 16))
		TH_LOG("ino %llu block %u was pending", (unsigned long long)r[0].file_ino,
		       r[0].block_index);
	EXPECT_EQ(0, incfs_wait_pending(&self->m, 0, 0, 0, r, 16, 0))
		TH_LOG("ino %llu block %u is pending", (unsigned long long)r[0].file_ino,
		       r[0].block_index);
	close(early);
	close(a);
	close(b);
	close(c);
}

/* ===== readers and writers at once ===== */

TEST_F_TIMEOUT(rd, concurrent_reads_and_writes, 60)
{
	struct incfs_file files[2];
	struct incfs_loader l;
	pid_t pids[6];
	int n = 0, ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f0", &files[0], 64 * INCFS_BS + 100, 14))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f1", &files[1], 40 * INCFS_BS, 15)) TH_LOG("%s", incfs_err);
	files[1].compressible = true;
	for (int i = 0; i < 4; i++) {
		pids[n] = incfs_fork_block_reader(incfs_path(&self->m, i % 2 ? "f1" : "f0"),
						  &files[i % 2], 100 + i);
		ASSERT_LT(0, pids[n++]);
	}
	pids[n] = incfs_fork_reader(incfs_path(&self->m, "f0"), &files[0], 0, files[0].size);
	ASSERT_LT(0, pids[n++]);
	pids[n] = incfs_fork_reader(incfs_path(&self->m, "f1"), &files[1], 5000, files[1].size);
	ASSERT_LT(0, pids[n++]);
	ASSERT_EQ(0, incfs_loader_start(&l, &self->m, files, 2, true, INCFS_SEND_MIXED, 1));
	for (int i = 0; i < n; i++) {
		ret = incfs_wait_child(pids[i], 4 * LONG_MS);
		EXPECT_EQ(0, ret) TH_LOG("reader %d: %d (%s)", i, ret, incfs_strerr(ret));
	}
	ret = incfs_loader_stop(&l, 4 * LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("loader: %d (%s)", ret, incfs_strerr(ret));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, i ? "f1" : "f0"), &files[i]))
			TH_LOG("%s", incfs_err);
	}
}

/*
 * A provider: delivers the blocks of f whose index % 3 != skip, in a random
 * order, in batches of 1 to 8 records.
 */
static pid_t fork_provider(const struct incfs_mnt *m, const struct incfs_file *f, __u32 skip,
			   unsigned int seed)
{
	__u32 n = incfs_nblocks(f->size), count = 0, *order;
	pid_t pid = fork();
	int cmd, ret = 0;

	if (pid)
		return pid;
	order = malloc(n * sizeof(*order));
	if (!order)
		_exit(ENOMEM);
	for (__u32 i = 0; i < n; i++)
		if (i % 3 != skip)
			order[count++] = i;
	for (__u32 i = count; i > 1; i--) {
		__u32 j = incfs_mix(seed * 31ull + i) % i, t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	cmd = incfs_open_cmd(m, O_RDWR);
	if (cmd < 0)
		incfs_child_exit("provider", cmd);
	for (__u32 i = 0; !ret && i < count;) {
		__u32 batch = 1 + incfs_mix(seed + i) % 8;

		if (batch > count - i)
			batch = count - i;
		ret = incfs_send(cmd, f, order + i, batch,
				 i % 2 ? INCFS_SEND_LZ4 : INCFS_SEND_NONE);
		i += batch;
	}
	incfs_child_exit("provider", ret);
}

TEST_F_TIMEOUT(rd, multiple_providers, 60)
{
	struct incfs_file files[2];
	pid_t readers[4], providers[4];
	int ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f0", &files[0], 50 * INCFS_BS + 1, 16))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f1", &files[1], 33 * INCFS_BS, 17)) TH_LOG("%s", incfs_err);
	files[0].compressible = true;
	for (int i = 0; i < 4; i++) {
		readers[i] = incfs_fork_block_reader(incfs_path(&self->m, i % 2 ? "f1" : "f0"),
						     &files[i % 2], 200 + i);
		ASSERT_LT(0, readers[i]);
	}
	/* Blocks with index % 3 == 2 come from both. */
	for (int i = 0; i < 4; i++) {
		providers[i] = fork_provider(&self->m, &files[i / 2], i % 2, 300 + i);
		ASSERT_LT(0, providers[i]);
	}
	for (int i = 0; i < 4; i++) {
		ret = incfs_wait_child(providers[i], 4 * LONG_MS);
		EXPECT_EQ(0, ret) TH_LOG("provider %d: %d (%s)", i, ret, incfs_strerr(ret));
	}
	for (int i = 0; i < 4; i++) {
		ret = incfs_wait_child(readers[i], 4 * LONG_MS);
		EXPECT_EQ(0, ret) TH_LOG("reader %d: %d (%s)", i, ret, incfs_strerr(ret));
	}
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, i ? "f1" : "f0"), &files[i]))
			TH_LOG("%s", incfs_err);
	}
}

/* ===== page faults ===== */

TEST_F(rd, mmap_of_partially_loaded_file)
{
	unsigned char want[INCFS_BS];
	struct incfs_loader l;
	struct incfs_file f;
	unsigned char *p;
	int fd, ret;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 8 * INCFS_BS, 18)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &f, 0, 4)) TH_LOG("%s", incfs_err);
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	p = mmap(NULL, f.size, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	incfs_block_content(&f, 0, want);
	EXPECT_EQ(0, memcmp(p, want, INCFS_BS));
	incfs_block_content(&f, 3, want);
	EXPECT_EQ(0, memcmp(p + 3 * INCFS_BS, want, INCFS_BS));
	/* Absent pages: the fault waits for the loader. */
	ASSERT_EQ(0, incfs_loader_start(&l, &self->m, &f, 1, false, INCFS_SEND_NONE, 2));
	incfs_block_content(&f, 6, want);
	EXPECT_EQ(0, memcmp(p + 6 * INCFS_BS, want, INCFS_BS));
	incfs_block_content(&f, 4, want);
	EXPECT_EQ(0, memcmp(p + 4 * INCFS_BS, want, INCFS_BS));
	ret = incfs_loader_stop(&l, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("loader: %d (%s)", ret, incfs_strerr(ret));
	munmap(p, f.size);
	close(fd);
}

TEST_F(rd, mmap_absent_page_sigbus)
{
	struct incfs_file f;
	pid_t pid;
	int ret;

	ASSERT_EQ(0, incfs_setup(&self->m, SHORT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 19)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &f, 0, 1)) TH_LOG("%s", incfs_err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char want[INCFS_BS];
		volatile unsigned char *p;
		int fd = open(incfs_path(&self->m, "f"), O_RDONLY);

		if (fd < 0)
			_exit(100);
		p = mmap(NULL, f.size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(101);
		incfs_block_content(&f, 0, want);
		if (memcmp((void *)p, want, INCFS_BS))
			_exit(102);
		_exit(p[2 * INCFS_BS] == 0x5a ? 103 : 104);
	}
	ret = incfs_wait_child(pid, LONG_MS);
	EXPECT_EQ(128 + SIGBUS, ret) TH_LOG("child: %d (103/104: the fault returned data)", ret);
}

TEST_F(rd, mmap_fault_waits_through_signals)
{
	struct incfs_file f;
	int ret, status = 0;
	pid_t pid;

	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 21)) TH_LOG("%s", incfs_err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char want[INCFS_BS];
		unsigned char *p;
		int fd = open(incfs_path(&self->m, "f"), O_RDONLY);

		if (fd < 0 || set_handler(0))
			_exit(100);
		p = mmap(NULL, f.size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(101);
		incfs_block_content(&f, 1, want);
		if (memcmp(p + INCFS_BS, want, INCFS_BS))
			_exit(102);
		_exit(got_signal == SIGUSR1 ? 0 : 103);
	}
	ASSERT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, 1, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, kill(pid, SIGUSR1));
	incfs_sleep_ms(300);
	/* A page fault waits killably: the signal does not end it. */
	EXPECT_EQ(0, waitpid(pid, &status, WNOHANG)) TH_LOG("the child ended: 0x%x", status);
	EXPECT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, 1, LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, deliver(&self->m, &f, 1, 1)) TH_LOG("%s", incfs_err);
	ret = incfs_wait_child(pid, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("child: %d (102: wrong bytes, 103: no signal seen)", ret);
}

TEST_F_TIMEOUT(rd, exec_while_loading, 120)
{
	static const char want[] = "incfs-exec-ok\n";
	struct incfs_loader l;
	struct incfs_file f;
	char out[256], *path;
	size_t len = 0, size;
	int pipefd[2], ret;
	pid_t pid;

	memset(&f, 0, sizeof(f));
	f.content = (unsigned char *)gki_read_file("/bin/busybox", &size);
	ASSERT_NE(NULL, f.content) TH_LOG("/bin/busybox: %s", strerror(errno));
	f.size = size;
	ASSERT_EQ(0, incfs_setup(&self->m, LONG_MS)) TH_LOG("%s", incfs_err);
	/* Nothing delivered up front. */
	ASSERT_EQ(0, incfs_make(self->m.cmd, INCFS_ROOT_INODE, "busybox", S_IFREG | 0755, f.size,
				&f.ino)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_loader_start(&l, &self->m, &f, 1, true, INCFS_SEND_LZ4, 3));
	path = strdup(incfs_path(&self->m, "busybox"));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		execl(path, "busybox", "echo", "incfs-exec-ok", NULL);
		_exit(errno);
	}
	close(pipefd[1]);
	for (;;) {
		struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 6 * LONG_MS) != 1)
			break;
		n = read(pipefd[0], out + len, sizeof(out) - 1 - len);
		if (n <= 0)
			break;
		len += n;
	}
	out[len] = '\0';
	close(pipefd[0]);
	ret = incfs_wait_child(pid, LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("busybox from incfs: %d (%s)", ret, incfs_strerr(ret));
	EXPECT_STREQ(want, out);
	/* It stops once it has streamed every block. */
	ret = incfs_loader_stop(&l, 6 * LONG_MS);
	EXPECT_EQ(0, ret) TH_LOG("loader: %d (%s)", ret, incfs_strerr(ret));
	/* All arrived, byte-exact. */
	EXPECT_EQ(0, incfs_check_path(path, &f)) TH_LOG("%s", incfs_err);
	free(path);
	free((void *)f.content);
}

/* ===== unmount ===== */

TEST_F(rd, umount_force_fails_waiters_enodev)
{
	struct incfs_file f;
	pid_t pids[2];
	long long t0;
	int ret;

	ASSERT_EQ(0, incfs_setup(&self->m, 3 * LONG_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, mkfile(&self->m, "f", &f, 4 * INCFS_BS, 20)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < 2; i++) {
		pids[i] = incfs_fork_reader(incfs_path(&self->m, "f"), &f, (__u64)i * INCFS_BS,
					    INCFS_BS);
		ASSERT_LT(0, pids[i]);
		ASSERT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, i, LONG_MS))
			TH_LOG("%s", incfs_err);
	}
	close(self->m.cmd);
	self->m.cmd = -1;
	t0 = incfs_now_ms();
	ASSERT_EQ(0, umount2(self->m.dir, MNT_FORCE | MNT_DETACH)) TH_LOG("%s", strerror(errno));
	self->m.mounted = false;
	for (int i = 0; i < 2; i++) {
		/* Well before read_timeout_ms (30 s). */
		ret = incfs_wait_child(pids[i], LONG_MS);
		EXPECT_EQ(ENODEV, ret) TH_LOG("reader %d: %d (%s) after %lld ms", i, ret,
					      incfs_strerr(ret), incfs_now_ms() - t0);
	}
}

TEST_HARNESS_MAIN
