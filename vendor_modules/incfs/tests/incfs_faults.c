// SPDX-License-Identifier: GPL-2.0
/*
 * Every error path unwinds: each allocation that a mount, an instruction,
 * a delivery or a read makes is made to fail in turn, with the kernel's
 * fault injection (/proc/thread-self/fail-nth, with failslab and
 * fail_page_alloc told to fail sleeping allocations too).  The call must
 * succeed or fail with ENOMEM or EIO, and leave nothing half done: the
 * same call without the fault succeeds (after a remount when a failed
 * backing write stopped the mount's changes), and after a remount every
 * name and block reads back.  KASAN,
 * lockdep and kmemleak, in the debug variant, judge the unwinding itself.
 *
 * A kernel without CONFIG_FAULT_INJECTION (the release) skips, naming it.
 */
#include <sys/statfs.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TIMEOUT_MS	200
#define MAX_NTH		400	/* more fault sites than any call here has */
#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define DEBUGFS		"/sys/kernel/debug"
#define NFILES		4
#define FILE_BLOCKS	16

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/*
 * Let fail-nth fail every allocation: by default failslab and
 * fail_page_alloc spare the sleeping ones, which are nearly all of
 * incfs's, and fail_page_alloc order-0 pages; and keep them quiet.
 */
static int injection_setup(void)
{
	static const char *const knobs[][2] = {
		{ DEBUGFS "/failslab/ignore-gfp-wait", "N" },
		{ DEBUGFS "/failslab/verbose", "0" },
		{ DEBUGFS "/fail_page_alloc/ignore-gfp-wait", "N" },
		{ DEBUGFS "/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ DEBUGFS "/fail_page_alloc/min-order", "0" },
		{ DEBUGFS "/fail_page_alloc/verbose", "0" },
	};
	int ret = 0;

	for (size_t i = 0; i < ARRAY_SIZE(knobs) && !ret; i++) {
		ret = write_text(knobs[i][0], knobs[i][1]);
		if (ret)
			incfs_fail("%s: %s", knobs[i][0], strerror(-ret));
	}
	return ret;
}

/* Make the calling thread's nth fault site fail (0: none). */
static int arm(int fd, int nth)
{
	char text[16];
	int len = snprintf(text, sizeof(text), "%d", nth);

	return pwrite(fd, text, len, 0) == len ? 0 : -errno;
}

/* Was the armed fault injected?  1 yes, 0 no (the call had fewer sites). */
static int fired(int fd)
{
	char text[16] = "";
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	if (n <= 0)
		return -EIO;
	return atoi(text) == 0;
}

FIXTURE(faults) {
	struct incfs_mnt m;
	struct incfs_file f[NFILES];
	int nth;		/* fail-nth, of this thread */
};

FIXTURE_SETUP(faults)
{
	self->nth = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (self->nth < 0 && errno == ENOENT)
		SKIP(return, "no %s: CONFIG_FAULT_INJECTION is not set", FAIL_NTH);
	ASSERT_LE(0, self->nth) TH_LOG("%s: %s", FAIL_NTH, strerror(errno));
	ASSERT_EQ(0, injection_setup()) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_setup_at(&self->m, incfs_scratch(), TIMEOUT_MS))
		TH_LOG("%s", incfs_err);
	for (int i = 0; i < NFILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, name, &self->f[i],
					     FILE_BLOCKS * INCFS_BS - 10, 100 + i, false))
			TH_LOG("%s", incfs_err);
		self->f[i].compressible = i & 1;
	}
}

FIXTURE_TEARDOWN_PARENT(faults)
{
	incfs_teardown(&self->m);
}

/*
 * The call's errno is one an allocation failure may give: ENOMEM, or EIO
 * when it failed a write of the backing file (after which the mount takes
 * no more changes until a remount: README, "Backing errors") or, for a
 * read, the page.
 */
static bool allowed(int err)
{
	return err == ENOMEM || err == EIO;
}

/*
 * An instruction again, with no fault: after a remount when the mount
 * stopped taking changes.  0 or -errno.
 */
static int instr_again(struct incfs_mnt *m, struct incfs_instruction *inst)
{
	if (!ioctl(m->cmd, INCFS_IOC_PROCESS_INSTRUCTION, inst))
		return 0;
	if (errno != EIO || incfs_remount(m, TIMEOUT_MS))
		return -errno;
	return ioctl(m->cmd, INCFS_IOC_PROCESS_INSTRUCTION, inst) ? -errno : 0;
}

/*
 * Remount, and check that each file's blocks in [0, delivered) read back and
 * the others are absent (ETIME once the wait times out).
 */
static void check_after_remount(struct __test_metadata *_metadata,
				FIXTURE_DATA(faults) *self, const __u32 *delivered)
{
	unsigned char buf[INCFS_BS];

	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < NFILES; i++) {
		char name[16];
		int fd;

		snprintf(name, sizeof(name), "f%d", i);
		fd = open(incfs_path(&self->m, name), O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("%s: %s", name, strerror(errno));
		for (__u32 b = 0; b < FILE_BLOCKS; b++) {
			if (b < delivered[i]) {
				EXPECT_EQ(0, incfs_check_block(fd, &self->f[i], b))
					TH_LOG("%s block %u: %s", name, b, incfs_err);
			} else {
				EXPECT_EQ(-1, pread(fd, buf, sizeof(buf), (off_t)b * INCFS_BS));
				EXPECT_EQ(ETIME, errno) TH_LOG("%s block %u", name, b);
			}
		}
		close(fd);
	}
}

/* NEW_FILE and ADD_DIR_ENTRY, each with its nth fault site failing. */
TEST_F(faults, instructions_fail_whole_or_not_at_all)
{
	const __u32 none[NFILES] = { 0 };
	int nth, hit = 0;

	for (nth = 1; nth <= MAX_NTH; nth++) {
		struct incfs_instruction inst = {
			.version = INCFS_HEADER_VER,
			.type = INCFS_INSTRUCTION_NEW_FILE,
			.file = { .size = 3 * INCFS_BS, .mode = S_IFREG | 0444 },
		};
		char name[32];
		int ret, err, f;

		ASSERT_EQ(0, arm(self->nth, nth));
		ret = ioctl(self->m.cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst);
		err = errno;
		f = fired(self->nth);
		ASSERT_EQ(0, arm(self->nth, 0));
		ASSERT_LE(0, f);
		if (!f)
			break;
		hit++;
		EXPECT_TRUE(!ret || allowed(err)) TH_LOG("NEW_FILE, fault %d: %s", nth,
							 strerror(err));
		if (ret)
			ASSERT_EQ(0, instr_again(&self->m, &inst))
				TH_LOG("NEW_FILE after fault %d: %s", nth, strerror(errno));
		snprintf(name, sizeof(name), "n%d", nth);
		inst.type = INCFS_INSTRUCTION_ADD_DIR_ENTRY;
		inst.dir_entry = (struct incfs_dir_entry_instruction){
			.dir_ino = INCFS_ROOT_INODE, .child_ino = inst.file.ino_out,
			.name = (__u64)(unsigned long)name, .name_len = strlen(name),
		};
		ASSERT_EQ(0, arm(self->nth, nth));
		ret = ioctl(self->m.cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst);
		err = errno;
		f = fired(self->nth);
		ASSERT_EQ(0, arm(self->nth, 0));
		EXPECT_TRUE(!ret || !f || allowed(err))
			TH_LOG("ADD_DIR_ENTRY, fault %d: %s", nth, strerror(err));
		if (ret)
			ASSERT_EQ(0, instr_again(&self->m, &inst))
				TH_LOG("ADD_DIR_ENTRY after fault %d: %s", nth, strerror(errno));
		EXPECT_EQ(0, access(incfs_path(&self->m, name), F_OK)) TH_LOG("%s", name);
	}
	EXPECT_LT(0, hit) TH_LOG("NEW_FILE met no fault site");
	TH_LOG("NEW_FILE: %d fault sites, each failed once", hit);
	EXPECT_GE(MAX_NTH, nth);
	check_after_remount(_metadata, self, none);
	for (int n = 1; n <= hit; n++) {
		char name[32];

		snprintf(name, sizeof(name), "n%d", n);
		EXPECT_EQ(0, access(incfs_path(&self->m, name), F_OK)) TH_LOG("%s", name);
	}
}

/* A write of blocks to .cmd with its nth fault site failing. */
TEST_F(faults, deliveries_store_whole_blocks_or_none)
{
	__u32 delivered[NFILES] = { 0 };
	int nth, hit = 0;

	for (nth = 1; nth <= MAX_NTH; nth++) {
		int i = nth % NFILES;
		__u32 first = delivered[i] < FILE_BLOCKS ? delivered[i] : 0;
		__u32 blocks[2] = { first, first + 1 };
		struct incfs_batch b;
		ssize_t ret, done;
		int err, f;

		if (first + 1 >= FILE_BLOCKS)
			break;
		ASSERT_EQ(0, incfs_batch_init(&b, &self->f[i], blocks, 2,
					      self->f[i].compressible ? INCFS_SEND_LZ4 :
					      INCFS_SEND_NONE));
		ASSERT_EQ(0, arm(self->nth, nth));
		ret = write(self->m.cmd, b.rec, 2 * INCFS_REC);
		err = errno;
		f = fired(self->nth);
		ASSERT_EQ(0, arm(self->nth, 0));
		ASSERT_LE(0, f);
		if (!f) {
			EXPECT_EQ(2 * (ssize_t)INCFS_REC, ret) TH_LOG("%s", strerror(err));
			incfs_batch_free(&b);
			delivered[i] += 2;
			break;
		}
		hit++;
		/* Whole records only: the blocks stored counted, or an errno. */
		EXPECT_TRUE(ret == 2 * (ssize_t)INCFS_REC || ret == INCFS_REC ||
			    (ret < 0 && allowed(err)))
			TH_LOG("fault %d: %zd, %s", nth, ret, strerror(err));
		/* Delivering what the fault left out stores it. */
		done = ret > 0 ? ret / INCFS_REC : 0;
		if (done < 2) {
			ret = write(self->m.cmd, b.rec + done, (2 - done) * INCFS_REC);
			if (ret < 0 && errno == EIO) {
				ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS))
					TH_LOG("%s", incfs_err);
				ret = write(self->m.cmd, b.rec + done, (2 - done) * INCFS_REC);
			}
			EXPECT_EQ((ssize_t)((2 - done) * INCFS_REC), ret)
				TH_LOG("after fault %d: %s", nth, strerror(errno));
		}
		incfs_batch_free(&b);
		delivered[i] += 2;
	}
	EXPECT_LT(0, hit) TH_LOG("a delivery met no fault site");
	TH_LOG("deliveries: %d faults injected", hit);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	check_after_remount(_metadata, self, delivered);
}

/* A read of a block from the disk with its nth fault site failing. */
TEST_F(faults, reads_fail_and_read_again)
{
	__u32 delivered[NFILES];
	unsigned char buf[INCFS_BS];
	int nth, hit = 0, fd;

	for (int i = 0; i < NFILES; i++) {
		ASSERT_EQ(0, incfs_send_all(self->m.cmd, &self->f[i],
					    self->f[i].compressible ? INCFS_SEND_LZ4 :
					    INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
		delivered[i] = FILE_BLOCKS;
	}
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	for (nth = 1; nth <= MAX_NTH; nth++) {
		int i = nth % NFILES;
		__u32 block = (nth / NFILES) % FILE_BLOCKS;
		char name[16];
		ssize_t ret;
		int err, f;

		snprintf(name, sizeof(name), "f%d", i);
		fd = open(incfs_path(&self->m, name), O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd);
		/* From the disk: nothing of the file cached. */
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(0, arm(self->nth, nth));
		ret = pread(fd, buf, sizeof(buf), (off_t)block * INCFS_BS);
		err = errno;
		f = fired(self->nth);
		ASSERT_EQ(0, arm(self->nth, 0));
		ASSERT_LE(0, f);
		if (f) {
			hit++;
			EXPECT_TRUE(ret >= 0 || allowed(err))
				TH_LOG("f%d block %u, fault %d: %s", i, block, nth, strerror(err));
		}
		/* Whatever failed, the block reads right now. */
		EXPECT_EQ(0, incfs_check_block(fd, &self->f[i], block))
			TH_LOG("f%d block %u after fault %d: %s", i, block, nth, incfs_err);
		close(fd);
		if (!f && nth > 4 * NFILES)
			break;
	}
	EXPECT_LT(0, hit) TH_LOG("a read met no fault site");
	TH_LOG("reads: %d faults injected", hit);
	check_after_remount(_metadata, self, delivered);
}

/* A mount with its nth fault site failing: it fails, or mounts all of it. */
TEST_F(faults, mounts_fail_whole)
{
	__u32 delivered[NFILES];
	int nth, hit = 0;

	for (int i = 0; i < NFILES; i++) {
		ASSERT_EQ(0, incfs_send_range(self->m.cmd, &self->f[i], 0, FILE_BLOCKS / 2,
					      INCFS_SEND_MIXED)) TH_LOG("%s", incfs_err);
		delivered[i] = FILE_BLOCKS / 2;
	}
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	for (nth = 1; nth <= MAX_NTH; nth++) {
		int fd = open(self->m.backing, O_RDWR | O_CLOEXEC);
		char opts[64];
		int ret, err, f;

		ASSERT_LE(0, fd);
		snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=%d", fd, TIMEOUT_MS);
		ASSERT_EQ(0, arm(self->nth, nth));
		ret = mount(INCFS_NAME, self->m.dir, INCFS_NAME, 0, opts);
		err = errno;
		f = fired(self->nth);
		ASSERT_EQ(0, arm(self->nth, 0));
		close(fd);
		ASSERT_LE(0, f);
		if (!ret)
			ASSERT_EQ(0, umount2(self->m.dir, 0));
		if (!f)
			break;
		hit++;
		EXPECT_TRUE(!ret || allowed(err)) TH_LOG("fault %d: %s", nth, strerror(err));
	}
	EXPECT_LT(0, hit) TH_LOG("the mount met no fault site");
	TH_LOG("mount: %d fault sites, each failed once", hit);
	EXPECT_GE(MAX_NTH, nth);
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	check_after_remount(_metadata, self, delivered);
}

TEST_HARNESS_MAIN
