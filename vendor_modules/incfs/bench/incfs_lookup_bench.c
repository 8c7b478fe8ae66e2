// SPDX-License-Identifier: GPL-2.0
/*
 * incfs namespace benchmarks, each against a baseline in the same run:
 *
 *  - a directory of 10,000 names: stat() of every name in a random order,
 *    and a readdir of the whole directory (getdents64, 32 KiB at a time),
 *    on incfs against an ext4 directory (the scratch disk) of 10,000 hard
 *    links; caches dropped before every pass, median of 5 interleaved
 *    passes.  incfs's namespace lives in memory, so its backing file is on
 *    tmpfs here: the 20,000 records are then written in seconds.
 *  - mount-time replay of an image of 1,000, 10,000 and 100,000 names:
 *    the time of mount() per name, median of 3 mounts each.  The figure
 *    should stay flat as the image grows.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "gki_bench.h"
#include "incfs_bench_data.h"

#define NAMES		10000
#define PASSES		5
#define MOUNTS		3

static const char *scratch = "/mnt/scratch";

static void name_of(char *buf, size_t size, uint32_t i)
{
	snprintf(buf, size, "resource-%06u.arsc", i);
}

struct incfs {
	char dir[64];
	char backing[64];
	int cmd;
	uint64_t file;		/* every name links to it */
	uint64_t names_dir;	/* "d" */
};

static void instr(struct incfs *fs, struct incfs_instruction *inst, const char *what)
{
	inst->version = INCFS_HEADER_VER;
	if (ioctl(fs->cmd, INCFS_IOC_PROCESS_INSTRUCTION, inst))
		gki_die(what);
}

static void add_name(struct incfs *fs, uint64_t dir, uint64_t child, const char *name)
{
	struct incfs_instruction inst = {
		.type = INCFS_INSTRUCTION_ADD_DIR_ENTRY,
		.dir_entry = {
			.dir_ino = dir,
			.child_ino = child,
			.name = (uintptr_t)name,
			.name_len = strlen(name),
		},
	};

	instr(fs, &inst, name);
}

static uint64_t new_file(struct incfs *fs, uint16_t mode, uint64_t size)
{
	struct incfs_instruction inst = {
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = { .size = size, .mode = mode },
	};

	instr(fs, &inst, "new file");
	return inst.file.ino_out;
}

static double mount_ms(struct incfs *fs)
{
	char opts[64], cmd[96];
	double t;
	int bfd = open(fs->backing, O_RDWR | O_CREAT, 0600);

	if (bfd < 0)
		gki_die(fs->backing);
	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=1000", bfd);
	t = gki_now_ns();
	if (mount(INCFS_NAME, fs->dir, INCFS_NAME, 0, opts))
		gki_die("mount incfs");
	t = gki_now_ns() - t;
	close(bfd);
	snprintf(cmd, sizeof(cmd), "%s/.cmd", fs->dir);
	fs->cmd = open(cmd, O_RDWR);
	if (fs->cmd < 0)
		gki_die(cmd);
	return t / 1e6;
}

static void incfs_umount(struct incfs *fs)
{
	close(fs->cmd);
	if (umount(fs->dir))
		gki_die("umount");
}

/* A new mount on tmpfs with a file "f", a directory "d" and n names in it. */
static void incfs_make(struct incfs *fs, const char *tag, uint32_t n)
{
	char name[64];

	snprintf(fs->dir, sizeof(fs->dir), "/tmp/%s", tag);
	snprintf(fs->backing, sizeof(fs->backing), "/tmp/%s.img", tag);
	mkdir(fs->dir, 0755);
	unlink(fs->backing);
	mount_ms(fs);
	fs->file = new_file(fs, S_IFREG | 0555, 1);
	add_name(fs, INCFS_ROOT_INODE, fs->file, "f");
	fs->names_dir = new_file(fs, S_IFDIR | 0555, 0);
	add_name(fs, INCFS_ROOT_INODE, fs->names_dir, "d");
	for (uint32_t i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		add_name(fs, fs->names_dir, fs->file, name);
	}
}

static void ext4_make(const char *dir, uint32_t n)
{
	char target[128], path[192], name[64];
	int fd;

	mkdir(dir, 0755);
	snprintf(target, sizeof(target), "%s.target", dir);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	if (fd < 0)
		gki_die(target);
	close(fd);
	for (uint32_t i = 0; i < n; i++) {
		name_of(name, sizeof(name), i);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (link(target, path) && errno != EEXIST)
			gki_die(path);
	}
}

/* stat() of each of the n names of dir, in a random order. */
static double stat_ms(const char *dir, uint32_t n)
{
	char path[192], name[64];
	struct stat st;
	uint64_t x = 88172645463325252ull;
	double t;

	gki_drop_caches();
	t = gki_now_ns();
	for (uint32_t k = 0; k < n; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		name_of(name, sizeof(name), x % n);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (stat(path, &st))
			gki_die(path);
	}
	return (gki_now_ns() - t) / 1e6;
}

/* A whole listing of dir; it must hold at least n entries. */
static double readdir_ms(const char *dir, uint32_t n)
{
	static char buf[32768];
	uint32_t entries = 0;
	double t;
	long got;
	int fd;

	gki_drop_caches();
	t = gki_now_ns();
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		gki_die(dir);
	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < got; entries++)
			off += ((struct dirent64 *)(buf + off))->d_reclen;
	t = gki_now_ns() - t;
	if (got < 0)
		gki_die("getdents64");
	close(fd);
	if (entries < n)
		gki_die("a listing too short");
	return t / 1e6;
}

static void bench_directory(void)
{
	double ext4_stat[PASSES], incfs_stat[PASSES], ext4_list[PASSES], incfs_list[PASSES];
	char ext4_dir[96], incfs_dir[96];
	struct incfs fs;

	snprintf(ext4_dir, sizeof(ext4_dir), "%s/names", scratch);
	ext4_make(ext4_dir, NAMES);
	incfs_make(&fs, "incfs-names", NAMES);
	snprintf(incfs_dir, sizeof(incfs_dir), "%s/d", fs.dir);
	for (int i = 0; i < PASSES; i++) {
		ext4_stat[i] = stat_ms(ext4_dir, NAMES);
		incfs_stat[i] = stat_ms(incfs_dir, NAMES);
		ext4_list[i] = readdir_ms(ext4_dir, NAMES);
		incfs_list[i] = readdir_ms(incfs_dir, NAMES);
	}
	gki_bench_report("ext4_stat_10k_names_ms", gki_median(ext4_stat, PASSES), "ms", NULL);
	gki_bench_report("incfs_stat_10k_names_ms", gki_median(incfs_stat, PASSES), "ms",
			 "ext4_stat_10k_names_ms");
	gki_bench_report("ext4_readdir_10k_names_ms", gki_median(ext4_list, PASSES), "ms",
			 NULL);
	gki_bench_report("incfs_readdir_10k_names_ms", gki_median(incfs_list, PASSES), "ms",
			 "ext4_readdir_10k_names_ms");
	incfs_umount(&fs);
	unlink(fs.backing);
}

/* Mount time per name of an image of n names, in µs. */
static double replay_us_per_name(uint32_t n)
{
	double t[MOUNTS];
	struct incfs fs;

	incfs_make(&fs, "incfs-replay", n);
	incfs_umount(&fs);
	for (int i = 0; i < MOUNTS; i++) {
		t[i] = mount_ms(&fs);
		incfs_umount(&fs);
	}
	unlink(fs.backing);
	return gki_median(t, MOUNTS) * 1e3 / n;
}

static void bench_replay(void)
{
	gki_bench_report("incfs_replay_1k_names_us_per_name", replay_us_per_name(1000), "us",
			 NULL);
	gki_bench_report("incfs_replay_10k_names_us_per_name", replay_us_per_name(10000), "us",
			 "incfs_replay_1k_names_us_per_name");
	gki_bench_report("incfs_replay_100k_names_us_per_name", replay_us_per_name(100000),
			 "us", "incfs_replay_1k_names_us_per_name");
}

int main(void)
{
	if (incfs_bench_load_module())
		gki_die("insmod incrementalfs");
	bench_directory();
	bench_replay();
	return 0;
}
