// SPDX-License-Identifier: GPL-2.0
/*
 * incfs keeps one cached copy of a file's bytes, in its own page cache:
 * with the backing file on ext4 (the scratch disk), whole blocks are read
 * from the disk with direct I/O, and delivered blocks leave the backing
 * file's page cache once syncfs has made them durable.  What is cached is
 * seen with mincore() on a mapping of each file; every read is checked
 * byte for byte, and a block changed on the disk fails its CRC.  Blocks
 * read at once after delivery, LZ4 blocks and a file's tail, which take
 * other paths, read right too.  A direct read ends on a per-CPU,
 * high-priority queue with a rescuer.  incfs's own reads leave the backing
 * file's access time alone, and are checked as reads of the backing file
 * (fanotify's permission events).
 */
#include <poll.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TIMEOUT_MS	1000
#define BLOCKS		1024		/* 4 MiB */
/*
 * The backing file's pages besides the data that may stay cached: the
 * superblock, the records, the blockmap entries written by the flush.
 */
#define METADATA_PAGES	4

FIXTURE(cache) {
	struct incfs_mnt m;
	struct incfs_file f;
	int fd;			/* the incfs file */
};

FIXTURE_SETUP(cache)
{
	struct statfs st;

	self->fd = -1;
	ASSERT_EQ(0, statfs(incfs_scratch(), &st));
	ASSERT_EQ(INCFS_EXT4_MAGIC, st.f_type) TH_LOG("%s is not ext4", incfs_scratch());
	ASSERT_EQ(0, incfs_setup_at(&self->m, incfs_scratch(), TIMEOUT_MS))
		TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(cache)
{
	incfs_teardown(&self->m);
}

static long backing_resident(const struct incfs_mnt *m)
{
	struct stat st;

	if (stat(m->backing, &st))
		return -errno;
	return incfs_resident(m->backing, st.st_size);
}

static int forget_cached_pages(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int ret = 0;

	sync();
	if (fd < 0 || write(fd, "3", 1) != 1)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The file "f" of size bytes, delivered whole as mode says, and opened. */
static int deliver(struct incfs_mnt *m, struct incfs_file *f, __u64 size, bool compressible,
		   enum incfs_send_mode mode)
{
	int fd, ret;

	memset(f, 0, sizeof(*f));
	f->size = size;
	f->seed = size ^ 0x5eed;
	f->compressible = compressible;
	ret = incfs_make(m->cmd, INCFS_ROOT_INODE, "f", S_IFREG | 0555, size, &f->ino);
	if (!ret)
		ret = incfs_send_all(m->cmd, f, mode);
	if (ret)
		return ret;
	fd = open(incfs_path(m, "f"), O_RDONLY);
	return fd < 0 ? -errno : fd;
}

TEST_F(cache, syncfs_drops_the_backing_copy_of_delivered_blocks)
{
	long after;

	/* Flushes on the way (every 512 blocks, 100 ms) drop some already. */
	self->fd = deliver(&self->m, &self->f, BLOCKS * INCFS_BS, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	after = backing_resident(&self->m);
	EXPECT_LE(0, after);
	EXPECT_GE(METADATA_PAGES, after) TH_LOG("%ld pages of the backing file cached", after);
	/* The blocks now come from the disk, whole. */
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 1 << 20)) TH_LOG("%s", incfs_err);
}

TEST_F(cache, a_sequential_read_caches_one_copy)
{
	__u64 size = BLOCKS * INCFS_BS;

	self->fd = deliver(&self->m, &self->f, size, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	ASSERT_EQ(0, forget_cached_pages());
	ASSERT_EQ(0, incfs_resident(incfs_path(&self->m, "f"), size));
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 1 << 20)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(BLOCKS, incfs_resident(incfs_path(&self->m, "f"), size));
	EXPECT_EQ(0, backing_resident(&self->m));
}

TEST_F(cache, random_reads_and_page_faults_cache_one_copy)
{
	__u64 size = BLOCKS * INCFS_BS;
	unsigned char exp[INCFS_BS];
	unsigned char *map;

	self->fd = deliver(&self->m, &self->f, size, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	ASSERT_EQ(0, forget_cached_pages());
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_RANDOM));
	for (__u32 b = 0; b < BLOCKS; b += 7)
		ASSERT_EQ(0, incfs_check_block(self->fd, &self->f, b)) TH_LOG("%s", incfs_err);
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	/* No read-around: each fault reads its one block (read_folio). */
	ASSERT_EQ(0, madvise(map, size, MADV_RANDOM));
	for (__u32 b = 3; b < BLOCKS; b += 5) {
		incfs_block_content(&self->f, b, exp);
		ASSERT_EQ(0, memcmp(map + (size_t)b * INCFS_BS, exp, INCFS_BS))
			TH_LOG("block %u through mmap", b);
	}
	munmap(map, size);
	EXPECT_EQ(0, backing_resident(&self->m));
}

TEST_F(cache, blocks_read_at_once_after_delivery_then_from_the_disk)
{
	self->fd = deliver(&self->m, &self->f, 64 * INCFS_BS, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	/* Still in the backing file's page cache, perhaps not written back. */
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 4096)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	EXPECT_EQ(0, incfs_resident(incfs_path(&self->m, "f"), self->f.size));
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 65536)) TH_LOG("%s", incfs_err);
	EXPECT_GE(METADATA_PAGES, backing_resident(&self->m));
}

TEST_F(cache, lz4_blocks_and_the_tail_read_right_from_the_disk)
{
	self->fd = deliver(&self->m, &self->f, 100 * INCFS_BS + 1, true, INCFS_SEND_MIXED);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	ASSERT_EQ(0, forget_cached_pages());
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 1 << 20)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_RANDOM));
	for (__u32 b = 0; b <= 100; b++)
		ASSERT_EQ(0, incfs_check_block(self->fd, &self->f, b)) TH_LOG("%s", incfs_err);
}

/*
 * incfs's reads of the backing file are its own, not a user's: the mount's
 * scan and every block read, direct or through the page cache, leave the
 * backing file's access time alone (O_NOATIME).
 */
TEST_F(cache, reads_leave_the_backing_files_atime_alone)
{
	/* Long before the last change: relatime would bring it forward. */
	const struct timespec times[2] = { { .tv_sec = 1000000000 }, { .tv_nsec = UTIME_OMIT } };
	struct stat before, after;

	self->fd = deliver(&self->m, &self->f, 100 * INCFS_BS + 1, true, INCFS_SEND_MIXED);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, utimensat(AT_FDCWD, self->m.backing, times, 0));
	ASSERT_EQ(0, forget_cached_pages());
	ASSERT_EQ(0, stat(self->m.backing, &before));
	ASSERT_EQ(times[0].tv_sec, before.st_atim.tv_sec);

	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	self->fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 1 << 20)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_DONTNEED));
	ASSERT_EQ(0, posix_fadvise(self->fd, 0, 0, POSIX_FADV_RANDOM));
	for (__u32 b = 0; b <= 100; b += 3)
		ASSERT_EQ(0, incfs_check_block(self->fd, &self->f, b)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(self->m.backing, &after));
	EXPECT_EQ(before.st_atim.tv_sec, after.st_atim.tv_sec)
		TH_LOG("the backing file's atime moved from %lld to %lld",
		       (long long)before.st_atim.tv_sec, (long long)after.st_atim.tv_sec);
}

/*
 * Answer every fanotify permission event on fan with response until child
 * exits (its wait status in *status); returns the number of access
 * permission events answered, or -1 (the child killed after 30 s).
 */
static int answer_until_exit(int fan, pid_t child, __u32 response, int *status)
{
	struct fanotify_event_metadata buf[64], *e;
	int answered = 0;

	for (int ms = 0; ms < 30000; ms += 10) {
		struct pollfd p = { .fd = fan, .events = POLLIN };
		ssize_t len;

		if (waitpid(child, status, WNOHANG) == child)
			return answered;
		if (poll(&p, 1, 10) <= 0)
			continue;
		len = read(fan, buf, sizeof(buf));
		if (len <= 0)
			break;
		for (e = buf; FAN_EVENT_OK(e, len); e = FAN_EVENT_NEXT(e, len)) {
			struct fanotify_response r = { .fd = e->fd, .response = response };

			if (e->fd < 0)
				continue;
			if (write(fan, &r, sizeof(r)) != sizeof(r))
				ms = 30000;
			close(e->fd);
			answered += !!(e->mask & FAN_ACCESS_PERM);
		}
	}
	kill(child, SIGKILL);
	waitpid(child, status, 0);
	return -1;
}

/*
 * A direct read of the backing file is checked as any read of it is
 * (rw_verify_area()): a fanotify listener with a permission mark on the
 * backing file is asked, and its refusal fails the incfs read.  The kernel
 * decides at open whether a file's reads ask (file_set_fsnotify_mode()), so
 * the mark comes first and incfs is mounted after it, its scan's reads
 * allowed.
 */
TEST_F(cache, direct_reads_ask_the_backing_files_permission)
{
	unsigned char buf[INCFS_BS];
	int fan, status, fd;
	pid_t child;

	self->fd = deliver(&self->m, &self->f, 64 * INCFS_BS, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_LARGEFILE);
	ASSERT_LE(0, fan) TH_LOG("fanotify_init: %s", strerror(errno));
	ASSERT_EQ(0, fanotify_mark(fan, FAN_MARK_ADD, FAN_ACCESS_PERM, AT_FDCWD,
				   self->m.backing));
	child = fork();
	ASSERT_LE(0, child);
	if (!child)
		_exit(incfs_mount_file(self->m.dir, self->m.backing, TIMEOUT_MS) ? 1 : 0);
	answer_until_exit(fan, child, FAN_ALLOW, &status);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("the mount failed");
	self->m.mounted = true;
	ASSERT_EQ(0, forget_cached_pages());
	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);

	child = fork();
	ASSERT_LE(0, child);
	if (!child)
		_exit(pread(fd, buf, sizeof(buf), 0) < 0 ? 0 : 1);
	EXPECT_LT(0, answer_until_exit(fan, child, FAN_DENY, &status))
		TH_LOG("no permission event for a read from the disk");
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("a refused read succeeded");

	/* Allowed, every block reads right. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child)
		_exit(incfs_check_read_all(fd, &self->f, 65536) ? 1 : 0);
	EXPECT_LT(0, answer_until_exit(fan, child, FAN_ALLOW, &status));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
	close(fan);
}

/* ===== one copy, however the image was filled ===== */

#define IMAGE_BLOCKS	2048		/* 8 MiB and a tail, per file */
#define IMAGE_TOOL	"/bin/incfs-image"

/*
 * A file of the image tests: plain (random bytes) or mixed (its first half
 * compressible, then random), IMAGE_BLOCKS blocks and a 100-byte tail.
 */
static unsigned char *image_content(struct incfs_file *f, bool mixed, __u64 seed)
{
	struct incfs_file gen = { .size = (__u64)IMAGE_BLOCKS * INCFS_BS + 100, .seed = seed };
	unsigned char *buf = malloc(gen.size + INCFS_BS);

	if (!buf)
		return NULL;
	for (__u32 b = 0; b <= IMAGE_BLOCKS; b++) {
		gen.compressible = mixed && b < IMAGE_BLOCKS / 2;
		incfs_block_content(&gen, b, buf + (size_t)b * INCFS_BS);
	}
	memset(f, 0, sizeof(*f));
	f->size = gen.size;
	f->content = buf;
	return buf;
}

/* Bytes of a blockmap entry on disk (format.h). */
#define BME_SIZE	14

/*
 * Pages the backing file may keep cached once a file of the image tests
 * was read: the superblock and records, the blockmaps of both files (the
 * mount's scan reads them) and their tails' pages.  Not one page of data
 * more, LZ4 blocks included.
 */
#define IMAGE_BACKING_PAGES \
	(METADATA_PAGES + 2 * ((IMAGE_BLOCKS + 1) * BME_SIZE / INCFS_BS + 2 + 1))

/* Run incfs-image create [--lz4] --force src image; its exit status, or -1. */
static int image_create(const char *src, const char *image, bool lz4)
{
	char *argv[8] = { IMAGE_TOOL, "create", "--force" };
	int argc = 3, status;
	pid_t pid;

	if (lz4)
		argv[argc++] = "--lz4";
	argv[argc++] = (char *)src;
	argv[argc++] = (char *)image;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		execv(IMAGE_TOOL, argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Write path from f's content. */
static int write_source(const char *path, const struct incfs_file *f)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, f->content, f->size);
	close(fd);
	return n == (ssize_t)f->size ? 0 : -EIO;
}

/*
 * With no page of either file cached, mount m, read both files whole, then
 * random blocks: incfs holds every page, the backing file no more than
 * IMAGE_BACKING_PAGES.
 */
static void check_one_copy(struct __test_metadata *_metadata, struct incfs_mnt *m,
			   const struct incfs_file *files)
{
	static const char *const names[] = { "plain", "mixed" };

	ASSERT_EQ(0, forget_cached_pages());
	ASSERT_EQ(0, incfs_mount(m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < 2; i++) {
		const struct incfs_file *f = &files[i];
		const char *path = incfs_path(m, names[i]);
		long allowed = IMAGE_BACKING_PAGES;
		long got;
		int fd = open(path, O_RDONLY);

		ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_EQ(0, incfs_check_read_all(fd, f, 1 << 20)) TH_LOG("%s: %s", path, incfs_err);
		EXPECT_EQ(incfs_nblocks(f->size), incfs_resident(path, f->size));
		got = backing_resident(m);
		ksft_print_msg("%s, %s read whole: %ld pages of the backing file cached, %ld allowed\n",
			       _metadata->name, names[i], got, allowed);
		EXPECT_GE(allowed, got)
			TH_LOG("%s read whole: %ld pages of the backing file cached, %ld allowed",
			       names[i], got, allowed);
		/* Read again at random from the disk. */
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
		ASSERT_EQ(0, posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM));
		for (__u32 b = 1; b < incfs_nblocks(f->size); b += 13)
			ASSERT_EQ(0, incfs_check_block(fd, f, b)) TH_LOG("%s: %s", path, incfs_err);
		got = backing_resident(m);
		ksft_print_msg("%s, %s read at random: %ld pages of the backing file cached\n",
			       _metadata->name, names[i], got);
		EXPECT_GE(allowed, got)
			TH_LOG("%s read at random: %ld pages of the backing file cached, %ld allowed",
			       names[i], got, allowed);
		close(fd);
		ASSERT_EQ(0, forget_cached_pages());
	}
}

/* The two files written by incfs-image create, with --lz4 or not. */
static void check_created_image(struct __test_metadata *_metadata, struct incfs_mnt *m,
				bool lz4)
{
	struct incfs_file files[2];
	unsigned char *bufs[2];
	char src[PATH_MAX], path[PATH_MAX + 8];

	bufs[0] = image_content(&files[0], false, 1);
	bufs[1] = image_content(&files[1], true, 2);
	ASSERT_TRUE(bufs[0] && bufs[1]);
	snprintf(src, sizeof(src), "/tmp/incfs-cache-src.%d", getpid());
	ASSERT_EQ(0, mkdir(src, 0755));
	snprintf(path, sizeof(path), "%s/plain", src);
	ASSERT_EQ(0, write_source(path, &files[0]));
	snprintf(path, sizeof(path), "%s/mixed", src);
	ASSERT_EQ(0, write_source(path, &files[1]));
	ASSERT_EQ(0, incfs_umount(m)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, image_create(src, m->backing, lz4));
	unlink(path);
	snprintf(path, sizeof(path), "%s/plain", src);
	unlink(path);
	rmdir(src);
	check_one_copy(_metadata, m, files);
	free(bufs[0]);
	free(bufs[1]);
}

TEST_F(cache, an_image_from_incfs_image_create_caches_one_copy)
{
	check_created_image(_metadata, &self->m, false);
}

TEST_F(cache, an_lz4_image_from_incfs_image_create_caches_one_copy)
{
	check_created_image(_metadata, &self->m, true);
}

/* Delivered through .cmd (LZ4 for the mixed file's odd blocks), remounted. */
TEST_F(cache, a_remounted_image_filled_through_cmd_caches_one_copy)
{
	struct incfs_file files[2];
	unsigned char *bufs[2];
	__u64 ino;

	bufs[0] = image_content(&files[0], false, 3);
	bufs[1] = image_content(&files[1], true, 4);
	ASSERT_TRUE(bufs[0] && bufs[1]);
	ASSERT_EQ(0, incfs_make(self->m.cmd, INCFS_ROOT_INODE, "plain", S_IFREG | 0555,
				files[0].size, &ino));
	files[0].ino = ino;
	ASSERT_EQ(0, incfs_send_all(self->m.cmd, &files[0], INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make(self->m.cmd, INCFS_ROOT_INODE, "mixed", S_IFREG | 0555,
				files[1].size, &ino));
	files[1].ino = ino;
	ASSERT_EQ(0, incfs_send_all(self->m.cmd, &files[1], INCFS_SEND_MIXED)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	check_one_copy(_metadata, &self->m, files);
	free(bufs[0]);
	free(bufs[1]);
}

/* The offset of needle (len bytes) in the file at path, or -1. */
static off_t find_bytes(const char *path, const void *needle, size_t len)
{
	struct stat st;
	off_t at = -1;
	char *map;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		goto out;
	map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	for (off_t i = 0; at < 0 && i + (off_t)len <= st.st_size; i += INCFS_BS)
		if (!memcmp(map + i, needle, len))
			at = i;
	munmap(map, st.st_size);
out:
	if (fd >= 0)
		close(fd);
	return at;
}

TEST_F(cache, a_block_read_directly_is_checked_against_its_crc)
{
	unsigned char block[INCFS_BS], got[INCFS_BS];
	const __u32 bad = 10;
	char byte;
	off_t at;
	int bfd;

	self->fd = deliver(&self->m, &self->f, 64 * INCFS_BS, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	close(self->fd);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	/* One byte of block 10 changed on the disk. */
	incfs_block_content(&self->f, bad, block);
	at = find_bytes(self->m.backing, block, INCFS_BS);
	ASSERT_LE(0, at) TH_LOG("block %u not found in the backing file", bad);
	bfd = open(self->m.backing, O_RDWR);
	ASSERT_LE(0, bfd);
	byte = block[100] ^ 0x40;
	ASSERT_EQ(1, pwrite(bfd, &byte, 1, at + 100));
	ASSERT_EQ(0, fsync(bfd));
	close(bfd);
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, forget_cached_pages());
	self->fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, self->fd);
	/* In order: readahead reads blocks 0-31 directly, in one run. */
	for (__u32 b = 0; b < 64; b++) {
		ssize_t n = pread(self->fd, got, INCFS_BS, (off_t)b * INCFS_BS);

		if (b == bad) {
			EXPECT_EQ(-1, n);
			EXPECT_EQ(EIO, errno);
			continue;
		}
		ASSERT_EQ(INCFS_BS, n) TH_LOG("block %u: %s", b, strerror(errno));
		incfs_block_content(&self->f, b, block);
		EXPECT_EQ(0, memcmp(got, block, INCFS_BS)) TH_LOG("block %u", b);
	}
}

/* ----- the queue that ends direct reads ----- */

#define TRACING		"/sys/kernel/tracing"

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* Trace the queueing of incfs_read's work and the start of every work. */
static int start_tracing(void)
{
	if (access(TRACING "/events", F_OK) &&
	    mount("tracefs", TRACING, "tracefs", 0, NULL))
		return -errno;
	if (write_file(TRACING "/tracing_on", "0") || write_file(TRACING "/trace", "") ||
	    write_file(TRACING "/events/workqueue/workqueue_queue_work/filter",
		       "workqueue == \"incfs_read\"") ||
	    write_file(TRACING "/events/workqueue/workqueue_queue_work/enable", "1") ||
	    write_file(TRACING "/events/workqueue/workqueue_execute_start/enable", "1"))
		return -EIO;
	return write_file(TRACING "/tracing_on", "1");
}

static void stop_tracing(void)
{
	write_file(TRACING "/tracing_on", "0");
	write_file(TRACING "/events/workqueue/workqueue_queue_work/enable", "0");
	write_file(TRACING "/events/workqueue/workqueue_execute_start/enable", "0");
	write_file(TRACING "/events/workqueue/workqueue_queue_work/filter", "0");
}

/*
 * Each direct read ends in a work item of incfs's read queue: queued on a
 * CPU's own pool (cpu=N, not -1 as an unbound queue's), and run by a
 * high-priority worker (kworker/N:MH).
 */
TEST_F(cache, direct_reads_end_on_a_per_cpu_high_priority_queue)
{
	int queued = 0, ran = 0, named = 0;
	char line[512];
	FILE *trace;

	self->fd = deliver(&self->m, &self->f, BLOCKS * INCFS_BS, false, INCFS_SEND_NONE);
	ASSERT_LE(0, self->fd) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, syncfs(self->m.cmd));
	ASSERT_EQ(0, forget_cached_pages());
	ASSERT_EQ(0, start_tracing()) TH_LOG("tracefs at %s: %s", TRACING, strerror(errno));
	EXPECT_EQ(0, incfs_check_read_all(self->fd, &self->f, 1 << 20)) TH_LOG("%s", incfs_err);
	write_file(TRACING "/tracing_on", "0");
	trace = fopen(TRACING "/trace", "re");
	ASSERT_NE(NULL, trace);
	while (fgets(line, sizeof(line), trace)) {
		char *at = strstr(line, "workqueue=incfs_read ");
		char comm[64];
		int cpu, got;

		if (at) {
			queued++;
			got = sscanf(strstr(at, " cpu=") ?: "", " cpu=%d", &cpu);
			ASSERT_EQ(1, got) TH_LOG("%s", line);
			EXPECT_LE(0, cpu) TH_LOG("queued on no CPU's pool (unbound): %s", line);
		}
		if (!strstr(line, "function run_work"))
			continue;
		ran++;
		/* "  kworker/1:2H-45  [001] ...": the task before its pid. */
		if (sscanf(line, " %63s", comm) != 1 || !strncmp(comm, "<...>", 5))
			continue;
		named++;
		*(strrchr(comm, '-') ?: comm) = '\0';
		EXPECT_EQ('H', comm[strlen(comm) - 1]) TH_LOG("ran by %s, not high priority", comm);
	}
	fclose(trace);
	stop_tracing();
	EXPECT_LT(0, queued) TH_LOG("no direct read was queued on incfs_read");
	EXPECT_LT(0, ran);
	EXPECT_LT(0, named) TH_LOG("no worker of run_work was named in the trace");
}

/* A page fault under memory pressure may wait on the queue: it has a rescuer. */
TEST_F(cache, the_read_queue_has_a_rescuer)
{
	struct dirent *d;
	bool found = false;
	DIR *proc = opendir("/proc");

	ASSERT_NE(NULL, proc);
	while (!found && (d = readdir(proc))) {
		char path[64], comm[32] = "";
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		/* "kworker/R-incfs_read", cut to 15 characters or not. */
		if (fgets(comm, sizeof(comm), f))
			found = !strncmp(comm, "kworker/R-incfs", 15);
		fclose(f);
	}
	closedir(proc);
	EXPECT_TRUE(found) TH_LOG("no rescuer kworker/R-incfs_read (WQ_MEM_RECLAIM)");
}

TEST_HARNESS_MAIN
