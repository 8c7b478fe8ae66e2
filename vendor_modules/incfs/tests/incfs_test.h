/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the incfs guest suites: loading the module, fresh
 * mounts, instructions and data blocks through .cmd, a deterministic
 * content generator, readers and a data loader in child processes.
 *
 * Helpers return 0 (or a count) on success and a negative errno on
 * failure, and describe the failure in incfs_err for TH_LOG().  A child
 * process started here exits with 0 or with the (positive) errno of what
 * failed; a read that returned other bytes than the generator's exits with
 * EBADMSG, a read that returned fewer bytes than expected with ENODATA.
 */
#ifndef INCFS_TEST_H
#define INCFS_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lz4.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "gki_test.h"

#define INCFS_MODULE_PATH	"/modules/vendor/incfs/incrementalfs.ko"
#define INCFS_MODULE_NAME	"incrementalfs"
#define INCFS_VERSION_FILE	"/sys/fs/incremental-fs/version"
#define INCFS_BS		INCFS_DATA_FILE_BLOCK_SIZE
#define INCFS_REC		sizeof(struct incfs_new_data_block)
#define INCFS_PENDING		sizeof(struct incfs_pending_read_info)
#define INCFS_EXT4_MAGIC	0xef53

/* What the last failing helper saw. */
static char incfs_err[512];

static inline void incfs_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(incfs_err, sizeof(incfs_err), fmt, ap);
	va_end(ap);
}

static inline long long incfs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static inline void incfs_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Pages of path's first len bytes in the page cache, or -errno. */
static inline long incfs_resident(const char *path, size_t len)
{
	size_t pages = (len + INCFS_BS - 1) / INCFS_BS;
	unsigned char *vec = malloc(pages ? pages : 1);
	long n = 0;
	void *map;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !vec) {
		n = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	if (!len)
		goto out;
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		n = -errno;
		goto out;
	}
	if (mincore(map, len, vec))
		n = -errno;
	for (size_t i = 0; n >= 0 && i < pages; i++)
		n += vec[i] & 1;
	munmap(map, len);
out:
	if (fd >= 0)
		close(fd);
	free(vec);
	return n;
}

static inline const char *incfs_scratch(void)
{
	const char *dir = getenv("GKI_SCRATCH");

	return dir ? dir : "/mnt/scratch";
}

static inline int incfs_boot_number(void)
{
	const char *boot = getenv("GKI_BOOT");

	return boot ? atoi(boot) : 1;
}

/* ===== the module ===== */

static inline bool incfs_module_loaded(void)
{
	return access("/sys/module/" INCFS_MODULE_NAME, F_OK) == 0;
}

/* Load the module unless it is loaded. */
static inline int incfs_load_module(void)
{
	int ret;

	if (incfs_module_loaded())
		return 0;
	ret = gki_load_module(INCFS_MODULE_PATH, "");
	if (ret == -EEXIST)
		return 0;
	if (ret)
		incfs_fail("loading %s: %s", INCFS_MODULE_PATH, strerror(-ret));
	return ret;
}

static inline int incfs_unload_module(void)
{
	return gki_unload_module(INCFS_MODULE_NAME);
}

/* ===== mounts ===== */

struct incfs_mnt {
	char top[128];		/* a fresh directory holding the two below */
	char dir[160];		/* the mount point */
	char backing[160];	/* the backing file */
	int cmd;		/* dir/.cmd opened O_RDWR, or -1 */
	bool mounted;
};

/* mount(2) of incfs on dir with the given option string; 0 or -errno. */
static inline int incfs_mount_opts(const char *dir, const char *opts)
{
	return mount(INCFS_NAME, dir, INCFS_NAME, 0, opts) ? -errno : 0;
}

/* Mount backing on dir with backing_fd and read_timeout_ms; 0 or -errno. */
static inline int incfs_mount_file(const char *dir, const char *backing, unsigned int timeout_ms)
{
	char opts[64];
	int fd, ret;

	fd = open(backing, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		incfs_fail("open backing file %s: %s", backing, strerror(errno));
		return ret;
	}
	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=%u", fd, timeout_ms);
	ret = incfs_mount_opts(dir, opts);
	if (ret)
		incfs_fail("mount(%s, \"%s\"): %s", dir, opts, strerror(-ret));
	/* The descriptor may be closed once mount() returns. */
	close(fd);
	return ret;
}

static inline const char *incfs_path(const struct incfs_mnt *m, const char *rel)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *p = bufs[next++ % 8];

	snprintf(p, PATH_MAX, "%s/%s", m->dir, rel);
	return p;
}

static inline int incfs_open_cmd(const struct incfs_mnt *m, int flags)
{
	int fd = open(incfs_path(m, ".cmd"), flags | O_CLOEXEC);

	if (fd < 0) {
		fd = -errno;
		incfs_fail("open %s/.cmd: %s", m->dir, strerror(errno));
	}
	return fd;
}

/* Mount m->backing on m->dir and open .cmd. */
static inline int incfs_mount(struct incfs_mnt *m, unsigned int timeout_ms)
{
	int ret = incfs_mount_file(m->dir, m->backing, timeout_ms);

	if (ret)
		return ret;
	m->mounted = true;
	m->cmd = incfs_open_cmd(m, O_RDWR);
	if (m->cmd < 0) {
		ret = m->cmd;
		umount2(m->dir, MNT_DETACH);
		m->mounted = false;
	}
	return ret;
}

/* Close .cmd and unmount; the caller has closed its files on the mount. */
static inline int incfs_umount(struct incfs_mnt *m)
{
	if (m->cmd >= 0)
		close(m->cmd);
	m->cmd = -1;
	if (!m->mounted)
		return 0;
	if (umount2(m->dir, 0)) {
		int ret = -errno;

		incfs_fail("umount %s: %s", m->dir, strerror(errno));
		return ret;
	}
	m->mounted = false;
	return 0;
}

static inline int incfs_remount(struct incfs_mnt *m, unsigned int timeout_ms)
{
	int ret = incfs_umount(m);

	return ret ? ret : incfs_mount(m, timeout_ms);
}

/*
 * A fresh mount under base (a tmpfs or ext4 directory): base/incfs.XXXXXX
 * holding the mount point "mnt" and the backing file "backing.img".  Undoes
 * everything on failure.
 */
static inline int incfs_setup_at(struct incfs_mnt *m, const char *base, unsigned int timeout_ms)
{
	int ret;

	memset(m, 0, sizeof(*m));
	m->cmd = -1;
	ret = incfs_load_module();
	if (ret)
		return ret;
	snprintf(m->top, sizeof(m->top), "%s/incfs.XXXXXX", base);
	if (!mkdtemp(m->top)) {
		ret = -errno;
		incfs_fail("mkdtemp %s: %s", m->top, strerror(errno));
		m->top[0] = '\0';
		return ret;
	}
	/* Non-root callers in the security suite walk through it. */
	chmod(m->top, 0755);
	snprintf(m->dir, sizeof(m->dir), "%s/mnt", m->top);
	snprintf(m->backing, sizeof(m->backing), "%s/backing.img", m->top);
	if (mkdir(m->dir, 0755)) {
		ret = -errno;
		incfs_fail("mkdir %s: %s", m->dir, strerror(errno));
		rmdir(m->top);
		m->top[0] = '\0';
		return ret;
	}
	ret = incfs_mount(m, timeout_ms);
	if (ret) {
		unlink(m->backing);
		rmdir(m->dir);
		rmdir(m->top);
		m->top[0] = '\0';
	}
	return ret;
}

static inline int incfs_setup(struct incfs_mnt *m, unsigned int timeout_ms)
{
	return incfs_setup_at(m, "/tmp", timeout_ms);
}

/*
 * Undo incfs_setup_at(), even after a failed test: from the harness's
 * parent process (FIXTURE_TEARDOWN_PARENT), whose descriptors are not the
 * test's, so m->cmd is not closed here.  A mount still busy (a child
 * still running) is forced off and detached.
 */
static inline void incfs_teardown(struct incfs_mnt *m)
{
	if (m->mounted && umount2(m->dir, 0))
		umount2(m->dir, MNT_FORCE | MNT_DETACH);
	m->mounted = false;
	if (!m->top[0])
		return;
	unlink(m->backing);
	rmdir(m->dir);
	rmdir(m->top);
	m->top[0] = '\0';
}

/* ===== instructions ===== */

static inline int incfs_instr(int cmd, struct incfs_instruction *inst)
{
	return ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, inst) ? -errno : 0;
}

static inline int incfs_new_file(int cmd, __u16 mode, __u64 size, __u64 *ino)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = { .size = size, .mode = mode },
	};
	int ret = incfs_instr(cmd, &inst);

	if (ret)
		incfs_fail("NEW_FILE(mode 0%o, size %llu): %s", mode,
			   (unsigned long long)size, strerror(-ret));
	else if (ino)
		*ino = inst.file.ino_out;
	return ret;
}

static inline int incfs_dir_entry_len(int cmd, int type, __u64 dir, __u64 child,
				      const char *name, __u32 len)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = type,
		.dir_entry = {
			.dir_ino = dir,
			.child_ino = child,
			.name = (__u64)(unsigned long)name,
			.name_len = len,
		},
	};
	int ret = incfs_instr(cmd, &inst);

	if (ret)
		incfs_fail("%s(dir %llu, child %llu, \"%.*s\"): %s",
			   type == INCFS_INSTRUCTION_ADD_DIR_ENTRY ? "ADD_DIR_ENTRY" :
			   "REMOVE_DIR_ENTRY", (unsigned long long)dir,
			   (unsigned long long)child, (int)(len < 64 ? len : 64), name,
			   strerror(-ret));
	return ret;
}

static inline int incfs_add_entry(int cmd, __u64 dir, __u64 child, const char *name)
{
	return incfs_dir_entry_len(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, dir, child, name,
				   strlen(name));
}

static inline int incfs_remove_entry(int cmd, __u64 dir, __u64 child, const char *name)
{
	return incfs_dir_entry_len(cmd, INCFS_INSTRUCTION_REMOVE_DIR_ENTRY, dir, child, name,
				   strlen(name));
}

/* NEW_FILE then ADD_DIR_ENTRY. */
static inline int incfs_make(int cmd, __u64 dir, const char *name, __u16 mode, __u64 size,
			     __u64 *ino)
{
	__u64 child;
	int ret = incfs_new_file(cmd, mode, size, &child);

	if (!ret)
		ret = incfs_add_entry(cmd, dir, child, name);
	if (!ret && ino)
		*ino = child;
	return ret;
}

static inline int incfs_make_dir(int cmd, __u64 parent, const char *name, __u64 *ino)
{
	return incfs_make(cmd, parent, name, S_IFDIR | 0555, 0, ino);
}

/* ===== content ===== */

/*
 * A file of the test: its content is a function of (seed, block index),
 * random or, for LZ4, compressible; or, with content set, those bytes.
 */
struct incfs_file {
	__u64 ino;
	__u64 size;
	__u64 seed;
	bool compressible;
	const unsigned char *content;
};

static inline __u32 incfs_nblocks(__u64 size)
{
	return (size + INCFS_BS - 1) / INCFS_BS;
}

/* The length of a block: INCFS_BS, the tail for the last one, 0 beyond. */
static inline __u32 incfs_block_len(const struct incfs_file *f, __u32 block)
{
	__u64 off = (__u64)block * INCFS_BS;

	if (off >= f->size)
		return 0;
	return f->size - off < INCFS_BS ? f->size - off : INCFS_BS;
}

static inline __u64 incfs_mix(__u64 x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* INCFS_BS bytes of block; the file holds a prefix of it for the tail. */
static inline void incfs_block_content(const struct incfs_file *f, __u32 block,
				       unsigned char *buf)
{
	__u64 x;

	if (f->content) {
		__u32 len = incfs_block_len(f, block);

		memcpy(buf, f->content + (__u64)block * INCFS_BS, len);
		memset(buf + len, 0, INCFS_BS - len);
		return;
	}
	if (f->compressible) {
		/* 16-byte lines: block index, line index, seed. */
		for (__u32 i = 0; i < INCFS_BS; i += 16) {
			__u32 line = i / 16;

			memcpy(buf + i, &block, 4);
			memcpy(buf + i + 4, &line, 4);
			memcpy(buf + i + 8, &f->seed, 8);
		}
		return;
	}
	x = incfs_mix(f->seed ^ incfs_mix(block)) | 1;
	for (__u32 i = 0; i < INCFS_BS; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + i, &x, 8);
	}
}

/* The bytes [off, off + len) of the file; len must not pass its end. */
static inline void incfs_fill(const struct incfs_file *f, __u64 off, size_t len,
			      unsigned char *out)
{
	unsigned char block[INCFS_BS];

	while (len) {
		__u32 index = off / INCFS_BS, in = off % INCFS_BS;
		size_t n = INCFS_BS - in < len ? INCFS_BS - in : len;

		incfs_block_content(f, index, block);
		memcpy(out, block + in, n);
		out += n;
		off += n;
		len -= n;
	}
}

/* ===== data blocks ===== */

enum incfs_send_mode {
	INCFS_SEND_NONE,	/* uncompressed */
	INCFS_SEND_LZ4,		/* LZ4 where it shrinks the block */
	INCFS_SEND_MIXED,	/* LZ4 (where it shrinks) for odd blocks only */
};

/* Records for some blocks of a file, ready for one write() on .cmd. */
struct incfs_batch {
	struct incfs_new_data_block *rec;
	unsigned char *data;
	int n;
	int lz4;	/* how many records are LZ4 */
};

static inline void incfs_batch_free(struct incfs_batch *b)
{
	free(b->rec);
	free(b->data);
	b->rec = NULL;
	b->data = NULL;
}

static inline int incfs_batch_init(struct incfs_batch *b, const struct incfs_file *f,
				   const __u32 *blocks, int n, enum incfs_send_mode mode)
{
	unsigned char raw[INCFS_BS];

	b->n = n;
	b->lz4 = 0;
	b->rec = calloc(n ? n : 1, sizeof(*b->rec));
	b->data = malloc((size_t)(n ? n : 1) * INCFS_BS);
	if (!b->rec || !b->data) {
		incfs_batch_free(b);
		incfs_fail("out of memory for %d blocks", n);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct incfs_new_data_block *r = &b->rec[i];
		unsigned char *dst = b->data + (size_t)i * INCFS_BS;
		__u32 len = incfs_block_len(f, blocks[i]);
		int clen = 0;

		incfs_block_content(f, blocks[i], raw);
		if (len > 1 && (mode == INCFS_SEND_LZ4 ||
				(mode == INCFS_SEND_MIXED && blocks[i] % 2)))
			clen = LZ4_compress_default((const char *)raw, (char *)dst, len,
						    len - 1);
		r->file_ino = f->ino;
		r->block_index = blocks[i];
		r->data = (__u64)(unsigned long)dst;
		if (clen > 0) {
			r->compression = COMPRESSION_LZ4;
			r->data_len = clen;
			b->lz4++;
		} else {
			r->compression = COMPRESSION_NONE;
			r->data_len = len;
			memcpy(dst, raw, len);
		}
	}
	return 0;
}

/* write() of n records; 0 when all were taken, or -errno. */
static inline int incfs_write_records(int cmd, const struct incfs_new_data_block *rec, int n)
{
	ssize_t ret = write(cmd, rec, n * INCFS_REC);

	if (ret < 0) {
		int err = -errno;

		incfs_fail("write of %d records (ino %llu, first block %u): %s", n,
			   (unsigned long long)rec[0].file_ino, rec[0].block_index,
			   strerror(errno));
		return err;
	}
	if (ret != (ssize_t)(n * INCFS_REC)) {
		incfs_fail("write of %d records (ino %llu) returned %zd, expected %zu", n,
			   (unsigned long long)rec[0].file_ino, ret, n * INCFS_REC);
		return -ENODATA;
	}
	return 0;
}

/* Deliver blocks[0..n) of f in one write(). */
static inline int incfs_send(int cmd, const struct incfs_file *f, const __u32 *blocks, int n,
			     enum incfs_send_mode mode)
{
	struct incfs_batch b;
	int ret = incfs_batch_init(&b, f, blocks, n, mode);

	if (ret)
		return ret;
	ret = incfs_write_records(cmd, b.rec, n);
	incfs_batch_free(&b);
	return ret;
}

/* Deliver blocks first .. first + count - 1 of f in one write(). */
static inline int incfs_send_range(int cmd, const struct incfs_file *f, __u32 first,
				   __u32 count, enum incfs_send_mode mode)
{
	__u32 *blocks = malloc((count ? count : 1) * sizeof(*blocks));
	int ret;

	if (!blocks)
		return -ENOMEM;
	for (__u32 i = 0; i < count; i++)
		blocks[i] = first + i;
	ret = incfs_send(cmd, f, blocks, count, mode);
	free(blocks);
	return ret;
}

static inline int incfs_send_all(int cmd, const struct incfs_file *f, enum incfs_send_mode mode)
{
	__u32 n = incfs_nblocks(f->size);

	return n ? incfs_send_range(cmd, f, 0, n, mode) : 0;
}

/* Create a named file with the generator's content; optionally deliver it all. */
static inline int incfs_make_file(int cmd, __u64 dir, const char *name, struct incfs_file *f,
				  __u64 size, __u64 seed, bool deliver)
{
	int ret;

	memset(f, 0, sizeof(*f));
	f->size = size;
	f->seed = seed;
	ret = incfs_make(cmd, dir, name, S_IFREG | 0555, size, &f->ino);
	if (!ret && deliver)
		ret = incfs_send_all(cmd, f, INCFS_SEND_NONE);
	return ret;
}

/* ===== reading and checking ===== */

/*
 * pread() of len bytes at off must return the file's bytes there (fewer at
 * the end of the file, none past it).
 */
static inline int incfs_check_pread(int fd, const struct incfs_file *f, __u64 off, size_t len)
{
	size_t want = off >= f->size ? 0 : (f->size - off < len ? f->size - off : len);
	unsigned char *got = malloc(len + 1), *exp = malloc(want + 1);
	ssize_t n;
	int ret = 0;

	if (!got || !exp) {
		free(got);
		free(exp);
		return -ENOMEM;
	}
	n = pread(fd, got, len, off);
	if (n < 0) {
		ret = -errno;
		incfs_fail("pread(ino %llu, off %llu, len %zu): %s", (unsigned long long)f->ino,
			   (unsigned long long)off, len, strerror(errno));
	} else if ((size_t)n != want) {
		ret = -ENODATA;
		incfs_fail("pread(ino %llu, off %llu, len %zu) returned %zd, expected %zu",
			   (unsigned long long)f->ino, (unsigned long long)off, len, n, want);
	} else {
		incfs_fill(f, off, want, exp);
		for (size_t i = 0; i < want; i++) {
			if (got[i] != exp[i]) {
				ret = -EBADMSG;
				incfs_fail("ino %llu: byte %llu (block %llu) is 0x%02x, not 0x%02x",
					   (unsigned long long)f->ino,
					   (unsigned long long)(off + i),
					   (unsigned long long)(off + i) / INCFS_BS,
					   got[i], exp[i]);
				break;
			}
		}
	}
	free(got);
	free(exp);
	return ret;
}

static inline int incfs_check_block(int fd, const struct incfs_file *f, __u32 block)
{
	return incfs_check_pread(fd, f, (__u64)block * INCFS_BS, INCFS_BS);
}

/* read() from offset 0 in chunks of chunk bytes: the whole file, then EOF. */
static inline int incfs_check_read_all(int fd, const struct incfs_file *f, size_t chunk)
{
	unsigned char *got = malloc(chunk), *exp = malloc(chunk);
	__u64 off = 0;
	int ret = 0;

	if (!got || !exp) {
		free(got);
		free(exp);
		return -ENOMEM;
	}
	if (lseek(fd, 0, SEEK_SET)) {
		ret = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, got, chunk);

		if (n < 0) {
			ret = -errno;
			incfs_fail("read(ino %llu) at %llu: %s", (unsigned long long)f->ino,
				   (unsigned long long)off, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (off + n > f->size) {
			ret = -EMSGSIZE;
			incfs_fail("read(ino %llu) returned %llu bytes, the size is %llu",
				   (unsigned long long)f->ino, (unsigned long long)(off + n),
				   (unsigned long long)f->size);
			break;
		}
		incfs_fill(f, off, n, exp);
		if (memcmp(got, exp, n)) {
			ssize_t i = 0;

			while (got[i] == exp[i])
				i++;
			ret = -EBADMSG;
			incfs_fail("read(ino %llu): byte %llu is 0x%02x, not 0x%02x",
				   (unsigned long long)f->ino, (unsigned long long)(off + i),
				   got[i], exp[i]);
			break;
		}
		off += n;
	}
	if (!ret && off != f->size) {
		ret = -ENODATA;
		incfs_fail("read(ino %llu) reached EOF at %llu, the size is %llu",
			   (unsigned long long)f->ino, (unsigned long long)off,
			   (unsigned long long)f->size);
	}
out:
	free(got);
	free(exp);
	return ret;
}

/* Open path and check it whole with read() and with one pread(). */
static inline int incfs_check_path(const char *path, const struct incfs_file *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0) {
		ret = -errno;
		incfs_fail("open %s: %s", path, strerror(errno));
		return ret;
	}
	ret = incfs_check_read_all(fd, f, 3000);
	if (!ret)
		ret = incfs_check_pread(fd, f, 0, f->size + 1);
	close(fd);
	return ret;
}

/*
 * The block is absent: a pread() of it fails with ETIME (the mount's
 * read_timeout_ms should be short).
 */
static inline int incfs_check_absent(int fd, const struct incfs_file *f, __u32 block)
{
	char buf[INCFS_BS];
	ssize_t n = pread(fd, buf, INCFS_BS, (__u64)block * INCFS_BS);
	int err = errno;

	if (n < 0 && err == ETIME)
		return 0;
	if (n < 0)
		incfs_fail("pread of absent block %u of ino %llu: %s, expected ETIME", block,
			   (unsigned long long)f->ino, strerror(err));
	else
		incfs_fail("pread of absent block %u of ino %llu returned %zd, expected ETIME",
			   block, (unsigned long long)f->ino, n);
	return n < 0 ? -err : -EEXIST;
}

static inline int incfs_check_absent_path(const char *path, const struct incfs_file *f,
					  __u32 block)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0) {
		ret = -errno;
		incfs_fail("open %s: %s", path, strerror(errno));
		return ret;
	}
	ret = incfs_check_absent(fd, f, block);
	close(fd);
	return ret;
}

/*
 * The entries of a directory are exactly names[0..n) plus "." and ".." (and
 * ".cmd" in the mount root, which a listing may or may not show); each
 * entry's d_ino and d_type agree with lstat().
 */
static inline int incfs_check_dir(const char *dir, const char *const *names, int n,
				  bool is_root)
{
	bool seen[64] = { false }, dot = false, dotdot = false;
	char path[PATH_MAX];
	struct dirent *e;
	int ret = 0;
	DIR *d;

	if (n > 64)
		return -E2BIG;
	d = opendir(dir);
	if (!d) {
		ret = -errno;
		incfs_fail("opendir %s: %s", dir, strerror(errno));
		return ret;
	}
	while (!ret && (errno = 0, e = readdir(d))) {
		struct stat st;
		int i;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
			bool *flag = e->d_name[1] ? &dotdot : &dot;

			if (*flag) {
				ret = -EEXIST;
				incfs_fail("%s lists \"%s\" twice", dir, e->d_name);
			}
			*flag = true;
			continue;
		}
		if (is_root && !strcmp(e->d_name, ".cmd"))
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(e->d_name, names[i]))
				break;
		if (i == n) {
			ret = -EEXIST;
			incfs_fail("%s lists \"%s\", which it should not hold", dir, e->d_name);
			break;
		}
		if (seen[i]) {
			ret = -EEXIST;
			incfs_fail("%s lists \"%s\" twice", dir, e->d_name);
			break;
		}
		seen[i] = true;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lstat(path, &st)) {
			ret = -errno;
			incfs_fail("lstat %s (listed): %s", path, strerror(errno));
		} else if (st.st_ino != e->d_ino) {
			ret = -EBADMSG;
			incfs_fail("%s: d_ino %llu, st_ino %llu", path,
				   (unsigned long long)e->d_ino, (unsigned long long)st.st_ino);
		} else if (e->d_type != DT_UNKNOWN &&
			   e->d_type != (S_ISDIR(st.st_mode) ? DT_DIR : DT_REG)) {
			ret = -EBADMSG;
			incfs_fail("%s: d_type %u, st_mode 0%o", path, e->d_type, st.st_mode);
		}
	}
	if (!ret && errno) {
		ret = -errno;
		incfs_fail("readdir %s: %s", dir, strerror(errno));
	}
	closedir(d);
	if (ret)
		return ret;
	if (!dot || !dotdot) {
		incfs_fail("%s does not list \"%s\"", dir, dot ? ".." : ".");
		return -ENOENT;
	}
	for (int i = 0; i < n; i++)
		if (!seen[i]) {
			incfs_fail("%s does not list \"%s\"", dir, names[i]);
			return -ENOENT;
		}
	return 0;
}

/* ===== child processes ===== */

/*
 * Wait up to timeout_ms for a child: its exit status, 128 + the signal that
 * killed it, or -ETIMEDOUT while it still runs.
 */
static inline int incfs_poll_child(pid_t pid, int timeout_ms)
{
	long long end = incfs_now_ms() + timeout_ms;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (r < 0)
			return -errno;
		if (incfs_now_ms() >= end)
			return -ETIMEDOUT;
		incfs_sleep_ms(5);
	}
}

/* As incfs_poll_child(), but a child still running then is killed. */
static inline int incfs_wait_child(pid_t pid, int timeout_ms)
{
	int ret = incfs_poll_child(pid, timeout_ms);

	if (ret == -ETIMEDOUT) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ret;
}

/* A child's status as incfs_wait_child() returns it, in words. */
static inline const char *incfs_strerr(int status)
{
	static char buf[64];

	if (status == -ETIMEDOUT)
		return "still running, killed";
	if (status >= 128)
		snprintf(buf, sizeof(buf), "killed by signal %d", status - 128);
	else if (status < 0)
		snprintf(buf, sizeof(buf), "wait: %s", strerror(-status));
	else
		snprintf(buf, sizeof(buf), "%s", status ? strerror(status) : "ok");
	return buf;
}

/* In a child: report a failure on the test's output and exit with its errno. */
static inline _Noreturn void incfs_child_exit(const char *who, int ret)
{
	if (ret) {
		fprintf(stderr, "# %s (pid %d): %s\n", who, getpid(), incfs_err);
		fflush(stderr);
	}
	_exit(ret < 0 ? -ret : ret);
}

/*
 * A child that opens path and checks [off, off + len) with one pread() (it
 * waits there for absent blocks).
 */
static inline pid_t incfs_fork_reader(const char *path, const struct incfs_file *f, __u64 off,
				      size_t len)
{
	pid_t pid = fork();
	int fd, ret;

	if (pid)
		return pid;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		incfs_fail("open %s: %s", path, strerror(errno));
		incfs_child_exit("reader", ret);
	}
	incfs_child_exit("reader", incfs_check_pread(fd, f, off, len));
}

/* A child that reads every block of path once, in an order from seed. */
static inline pid_t incfs_fork_block_reader(const char *path, const struct incfs_file *f,
					    unsigned int seed)
{
	__u32 n = incfs_nblocks(f->size), *order;
	pid_t pid = fork();
	int fd, ret = 0;

	if (pid)
		return pid;
	order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		_exit(ENOMEM);
	for (__u32 i = 0; i < n; i++)
		order[i] = i;
	for (__u32 i = n; i > 1; i--) {
		__u32 j = incfs_mix(seed + i) % i, t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		incfs_fail("open %s: %s", path, strerror(errno));
	}
	for (__u32 i = 0; !ret && i < n; i++)
		ret = incfs_check_block(fd, f, order[i]);
	incfs_child_exit("block reader", ret);
}

/* ===== pending reads ===== */

/* read() on .cmd: the number of records, or -errno. */
static inline int incfs_read_pending(int fd, struct incfs_pending_read_info *r, int max)
{
	ssize_t n = read(fd, r, max * INCFS_PENDING);

	if (n < 0) {
		int err = -errno;

		incfs_fail("read of .cmd: %s", strerror(errno));
		return err;
	}
	if (n % INCFS_PENDING) {
		incfs_fail("read of .cmd returned %zd bytes, not a multiple of %zu", n,
			   INCFS_PENDING);
		return -EPROTO;
	}
	return n / INCFS_PENDING;
}

/*
 * Wait until a fresh open of .cmd reports at least count pending reads, or,
 * with ino non-zero, a pending read of (ino, block).  Returns the number of
 * records of that snapshot (stored in out, at most max) or -ETIMEDOUT.
 */
static inline int incfs_wait_pending(const struct incfs_mnt *m, __u64 ino, __u32 block,
				     int count, struct incfs_pending_read_info *out, int max,
				     int timeout_ms)
{
	long long end = incfs_now_ms() + timeout_ms;
	int n = 0;

	for (;;) {
		int fd = incfs_open_cmd(m, O_RDWR | O_NONBLOCK);
		bool found = false;

		if (fd < 0)
			return fd;
		n = incfs_read_pending(fd, out, max);
		close(fd);
		if (n == -EAGAIN)
			n = 0;
		if (n < 0)
			return n;
		for (int i = 0; ino && i < n; i++)
			if (out[i].file_ino == ino && out[i].block_index == block)
				found = true;
		if (ino ? found : n >= count)
			return n;
		if (incfs_now_ms() >= end)
			break;
		incfs_sleep_ms(10);
	}
	if (ino)
		incfs_fail("no pending read of ino %llu block %u within %d ms (%d others)",
			   (unsigned long long)ino, block, timeout_ms, n);
	else
		incfs_fail("%d pending reads within %d ms, expected %d", n, timeout_ms, count);
	return -ETIMEDOUT;
}

static inline int incfs_wait_pending_block(const struct incfs_mnt *m, __u64 ino, __u32 block,
					   int timeout_ms)
{
	struct incfs_pending_read_info r[64];
	int n = incfs_wait_pending(m, ino, block, 0, r, 64, timeout_ms);

	return n < 0 ? n : 0;
}

/* ===== a data loader ===== */

struct incfs_loader {
	pid_t pid;
	int stop;	/* write end of a pipe; closing it stops the loader */
};

/*
 * Start a data loader: a child that opens dir/.cmd itself, serves every
 * pending read of files[0..nfiles) first and, with stream, also delivers
 * every block of them in a random order from seed, one write() a block,
 * in the send mode given.  It runs until incfs_loader_stop() and, with
 * stream, until it has sent every block.
 */
static inline int incfs_loader_start(struct incfs_loader *l, const struct incfs_mnt *m,
				     const struct incfs_file *files, int nfiles, bool stream,
				     enum incfs_send_mode mode, unsigned int seed)
{
	struct incfs_pending_read_info r[64];
	__u32 *first, total = 0, next = 0, *order = NULL;
	int pipefd[2], cmd, ret = 0;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	l->pid = fork();
	if (l->pid < 0) {
		ret = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return ret;
	}
	if (l->pid) {
		close(pipefd[0]);
		l->stop = pipefd[1];
		return 0;
	}
	close(pipefd[1]);
	first = calloc(nfiles + 1, sizeof(*first));
	if (!first)
		_exit(ENOMEM);
	for (int i = 0; i < nfiles; i++) {
		first[i] = total;
		total += incfs_nblocks(files[i].size);
	}
	first[nfiles] = total;
	if (stream) {
		order = malloc((total ? total : 1) * sizeof(*order));
		if (!order)
			_exit(ENOMEM);
		for (__u32 i = 0; i < total; i++)
			order[i] = i;
		for (__u32 i = total; i > 1; i--) {
			__u32 j = incfs_mix(seed * 7919ull + i) % i, t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
	} else {
		total = 0;
	}
	cmd = incfs_open_cmd(m, O_RDWR | O_NONBLOCK);
	if (cmd < 0)
		incfs_child_exit("loader", cmd);
	while (!ret) {
		struct pollfd pfd[2] = {
			{ .fd = cmd, .events = POLLIN },
			{ .fd = pipefd[0], .events = POLLIN },
		};
		int n;

		if (poll(pfd, 2, next < total ? 0 : 1000) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			incfs_fail("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents && next >= total)
			break;
		n = 0;
		if (pfd[0].revents & POLLIN) {
			n = incfs_read_pending(cmd, r, 64);
			if (n == -EAGAIN)
				n = 0;
			if (n < 0)
				ret = n;
		}
		for (int i = 0; !ret && i < n; i++) {
			int k;

			for (k = 0; k < nfiles; k++)
				if (files[k].ino == r[i].file_ino)
					break;
			if (k == nfiles) {
				ret = -EPROTO;
				incfs_fail("pending read of unknown ino %llu block %u",
					   (unsigned long long)r[i].file_ino, r[i].block_index);
			} else if (r[i].block_index >= incfs_nblocks(files[k].size)) {
				ret = -EPROTO;
				incfs_fail("pending read of ino %llu block %u, past its end",
					   (unsigned long long)r[i].file_ino, r[i].block_index);
			} else {
				ret = incfs_send(cmd, &files[k], &r[i].block_index, 1, mode);
			}
		}
		if (!ret && !n && next < total) {
			__u32 g = order[next++];
			int k = 0;

			while (g >= first[k + 1])
				k++;
			g -= first[k];
			ret = incfs_send(cmd, &files[k], &g, 1, mode);
		}
	}
	incfs_child_exit("loader", ret);
}

/* Stop the loader: its exit status (0, or the errno it failed with). */
static inline int incfs_loader_stop(struct incfs_loader *l, int timeout_ms)
{
	close(l->stop);
	return incfs_wait_child(l->pid, timeout_ms);
}

/* ===== a sample tree, for remounts ===== */

/*
 * /one (1 byte), /emptydir, /d1/big (20 blocks and 100 bytes; its even
 * blocks and its tail delivered), /d1/empty (0 bytes), /d1/d2/lz (8
 * blocks, LZ4), /d1/d2/big-link (a second name of big); a name "gone" for
 * one was added then removed.  Plain data, so that it can be stored.
 */
struct incfs_tree {
	__u64 d1, d2, emptydir;
	struct incfs_file one, big, empty, lz;
};

static inline int incfs_tree_build(struct incfs_tree *t, int cmd, __u64 seed)
{
	__u32 even[11];
	int ret;

	memset(t, 0, sizeof(*t));
	ret = incfs_make_dir(cmd, INCFS_ROOT_INODE, "d1", &t->d1);
	if (!ret)
		ret = incfs_make_dir(cmd, t->d1, "d2", &t->d2);
	if (!ret)
		ret = incfs_make_dir(cmd, INCFS_ROOT_INODE, "emptydir", &t->emptydir);
	if (!ret)
		ret = incfs_make_file(cmd, INCFS_ROOT_INODE, "one", &t->one, 1, seed + 1, true);
	if (!ret)
		ret = incfs_make_file(cmd, t->d1, "big", &t->big, 20 * INCFS_BS + 100,
				      seed + 2, false);
	if (!ret)
		ret = incfs_make_file(cmd, t->d1, "empty", &t->empty, 0, seed + 3, false);
	if (!ret)
		ret = incfs_make_file(cmd, t->d2, "lz", &t->lz, 8 * INCFS_BS, seed + 4, false);
	if (!ret)
		ret = incfs_add_entry(cmd, t->d2, t->big.ino, "big-link");
	if (!ret)
		ret = incfs_add_entry(cmd, INCFS_ROOT_INODE, t->one.ino, "gone");
	if (!ret)
		ret = incfs_remove_entry(cmd, INCFS_ROOT_INODE, t->one.ino, "gone");
	if (ret)
		return ret;
	for (int i = 0; i < 11; i++)
		even[i] = 2 * i;
	ret = incfs_send(cmd, &t->big, even, 11, INCFS_SEND_NONE);
	if (ret)
		return ret;
	t->lz.compressible = true;
	return incfs_send_all(cmd, &t->lz, INCFS_SEND_LZ4);
}

/* Deliver what incfs_tree_build() left out: the odd blocks of big. */
static inline int incfs_tree_complete(struct incfs_tree *t, int cmd)
{
	__u32 odd[10];

	for (int i = 0; i < 10; i++)
		odd[i] = 2 * i + 1;
	return incfs_send(cmd, &t->big, odd, 10, INCFS_SEND_NONE);
}

static inline int incfs_check_stat(const char *path, __u64 ino, __u64 size, mode_t mode,
				   nlink_t nlink)
{
	struct stat st;

	if (stat(path, &st)) {
		int ret = -errno;

		incfs_fail("stat %s: %s", path, strerror(errno));
		return ret;
	}
	if (st.st_ino != ino || st.st_mode != mode || st.st_nlink != nlink ||
	    (S_ISREG(mode) && (__u64)st.st_size != size)) {
		incfs_fail("stat %s: ino %llu mode 0%o nlink %lu size %lld; "
			   "expected ino %llu mode 0%o nlink %lu size %llu", path,
			   (unsigned long long)st.st_ino, st.st_mode, (unsigned long)st.st_nlink,
			   (long long)st.st_size,
			   (unsigned long long)ino, mode, (unsigned long)nlink,
			   (unsigned long long)size);
		return -EBADMSG;
	}
	return 0;
}

/*
 * The tree is there: names, inode numbers, sizes, link counts and the
 * delivered content; with complete, all of big, else its odd blocks are
 * absent (the mount's read_timeout_ms should be short).
 */
static inline int incfs_tree_check(const struct incfs_tree *t, const struct incfs_mnt *m,
				   bool complete)
{
	static const char *const root[] = { "d1", "emptydir", "one" };
	static const char *const d1[] = { "d2", "big", "empty" };
	static const char *const d2[] = { "lz", "big-link" };
	const __u32 absent[] = { 1, 9, 19 };
	int ret, fd;

	ret = incfs_check_dir(m->dir, root, 3, true);
	if (!ret)
		ret = incfs_check_dir(incfs_path(m, "d1"), d1, 3, false);
	if (!ret)
		ret = incfs_check_dir(incfs_path(m, "d1/d2"), d2, 2, false);
	if (!ret)
		ret = incfs_check_dir(incfs_path(m, "emptydir"), NULL, 0, false);
	if (!ret)
		ret = incfs_check_stat(m->dir, INCFS_ROOT_INODE, 0, S_IFDIR | 0555, 4);
	if (!ret)
		ret = incfs_check_stat(incfs_path(m, "d1"), t->d1, 0, S_IFDIR | 0555, 3);
	if (!ret)
		ret = incfs_check_stat(incfs_path(m, "d1/d2"), t->d2, 0, S_IFDIR | 0555, 2);
	if (!ret)
		ret = incfs_check_stat(incfs_path(m, "one"), t->one.ino, 1, S_IFREG | 0555, 1);
	if (!ret)
		ret = incfs_check_stat(incfs_path(m, "d1/big"), t->big.ino, t->big.size,
				       S_IFREG | 0555, 2);
	if (!ret)
		ret = incfs_check_stat(incfs_path(m, "d1/d2/big-link"), t->big.ino,
				       t->big.size, S_IFREG | 0555, 2);
	if (!ret)
		ret = incfs_check_stat(incfs_path(m, "d1/empty"), t->empty.ino, 0,
				       S_IFREG | 0555, 1);
	if (!ret)
		ret = incfs_check_path(incfs_path(m, "one"), &t->one);
	if (!ret)
		ret = incfs_check_path(incfs_path(m, "d1/empty"), &t->empty);
	if (!ret)
		ret = incfs_check_path(incfs_path(m, "d1/d2/lz"), &t->lz);
	if (ret)
		return ret;
	if (complete) {
		ret = incfs_check_path(incfs_path(m, "d1/big"), &t->big);
		return ret ? ret : incfs_check_path(incfs_path(m, "d1/d2/big-link"), &t->big);
	}
	fd = open(incfs_path(m, "d1/d2/big-link"), O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		incfs_fail("open d1/d2/big-link: %s", strerror(errno));
		return ret;
	}
	for (__u32 b = 0; !ret && b <= 20; b += 2)
		ret = incfs_check_block(fd, &t->big, b);
	for (int i = 0; !ret && i < 3; i++)
		ret = incfs_check_absent(fd, &t->big, absent[i]);
	close(fd);
	return ret;
}

#endif /* INCFS_TEST_H */
