// SPDX-License-Identifier: GPL-2.0
/*
 * incfs benchmarks, each a ratio against a baseline measured in the same
 * run, passes interleaved:
 *
 *  - sequential and random 4 KiB reads of a fully loaded 64 MiB file on
 *    incfs against the same bytes in a plain file on the backing ext4
 *    (the scratch disk), page cache dropped before every pass; the
 *    sequential read also against ext4's read plus the CRC32 of its bytes
 *    (what incfs must do at least), and the page cache each read leaves
 *    (Cached in /proc/meminfo: incfs should cache the bytes once);
 *  - the same reads of the file stored as LZ4 blocks against uncompressed;
 *  - the same reads with the read log on (the default) against a mount of
 *    the same image with read_log_records=0: what logging every block
 *    costs;
 *  - a pending-read round trip (reader blocks, loader wakes from poll(),
 *    reads .cmd, writes the block, reader returns) against a one-byte pipe
 *    ping-pong between two processes;
 *  - loading the file through .cmd, uncompressed and LZ4 (MiB/s);
 *  - CRC32 of 64 MiB with the arm64 CRC32 instructions the kernel's
 *    crc32_le() uses, for scale: incfs checks every block it reads, and
 *    under QEMU TCG each of those instructions is a call into the emulator.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/incrementalfs.h>
#include <lz4.h>

#include "gki_bench.h"
#include "incfs_bench_data.h"

#define BS		INCFS_DATA_FILE_BLOCK_SIZE
#define FILE_SIZE	(64 << 20)
#define BLOCKS		(FILE_SIZE / BS)
#define PASSES		5
#define RANDOM_READS	2048
#define ROUND_TRIPS	500
#define BATCH		64

static const char *scratch = "/mnt/scratch";

__attribute__((target("crc")))
static double crc32_ms(void)
{
	static uint8_t buf[BS];
	uint32_t crc = 0;
	double t;

	incfs_bench_block(buf, 0);
	t = gki_now_ns();
	for (uint32_t i = 0; i < BLOCKS; i++)
		for (size_t j = 0; j < BS; j += 8)
			crc = __builtin_arm_crc32d(crc, *(uint64_t *)(buf + j));
	t = gki_now_ns() - t;
	if (crc == 1)	/* keep the loop */
		printf("# crc %u\n", crc);
	return t / 1e6;
}

static void make_plain(const char *path)
{
	uint8_t buf[BS];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		gki_die(path);
	for (uint32_t i = 0; i < BLOCKS; i++) {
		incfs_bench_block(buf, i);
		if (write(fd, buf, BS) != BS)
			gki_die("write plain");
	}
	fsync(fd);
	close(fd);
}

struct incfs {
	char dir[64];
	char file[96];
	int bfd;
	int cmd;
	uint64_t ino;
};

static void incfs_mount(struct incfs *fs, const char *name, int timeout_ms)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = { .size = FILE_SIZE, .mode = S_IFREG | 0555 },
	};
	char path[128], opts[64];

	snprintf(fs->dir, sizeof(fs->dir), "/tmp/%s", name);
	snprintf(fs->file, sizeof(fs->file), "%s/data", fs->dir);
	snprintf(path, sizeof(path), "%s/%s.img", scratch, name);
	mkdir(fs->dir, 0755);
	fs->bfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fs->bfd < 0)
		gki_die(path);
	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=%d", fs->bfd,
		 timeout_ms);
	if (mount(INCFS_NAME, fs->dir, INCFS_NAME, 0, opts))
		gki_die("mount incfs");
	snprintf(path, sizeof(path), "%s/.cmd", fs->dir);
	fs->cmd = open(path, O_RDWR);
	if (fs->cmd < 0 || ioctl(fs->cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst))
		gki_die("new file");
	fs->ino = inst.file.ino_out;
	inst.type = INCFS_INSTRUCTION_ADD_DIR_ENTRY;
	memset(&inst.dir_entry, 0, sizeof(inst.dir_entry));
	inst.dir_entry.dir_ino = INCFS_ROOT_INODE;
	inst.dir_entry.child_ino = fs->ino;
	inst.dir_entry.name = (uintptr_t)"data";
	inst.dir_entry.name_len = 4;
	if (ioctl(fs->cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst))
		gki_die("add dir entry");
}

/* Mount fs's image again, with the read log on or off. */
static void incfs_remount(struct incfs *fs, int log)
{
	char path[128], opts[96];

	close(fs->cmd);
	if (umount(fs->dir))
		gki_die("umount");
	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=1000%s", fs->bfd,
		 log ? "" : ",read_log_records=0");
	if (mount(INCFS_NAME, fs->dir, INCFS_NAME, 0, opts))
		gki_die("mount incfs again");
	snprintf(path, sizeof(path), "%s/.cmd", fs->dir);
	fs->cmd = open(path, O_RDWR);
	if (fs->cmd < 0)
		gki_die(path);
}

static void incfs_umount(struct incfs *fs)
{
	close(fs->cmd);
	if (umount(fs->dir))
		gki_die("umount");
	close(fs->bfd);
}

/* Write blocks [first, first + n) in one write(); lz4 when it shrinks. */
static void load_blocks(struct incfs *fs, uint32_t first, uint32_t n, int lz4)
{
	static uint8_t data[BATCH][BS], packed[BATCH][BS];
	struct incfs_new_data_block rec[BATCH];

	for (uint32_t i = 0; i < n; i++) {
		int len = 0;

		incfs_bench_block(data[i], first + i);
		if (lz4)
			len = LZ4_compress_default((char *)data[i], (char *)packed[i],
						   BS, BS - 1);
		rec[i] = (struct incfs_new_data_block){
			.file_ino = fs->ino,
			.block_index = first + i,
			.data_len = len > 0 ? len : BS,
			.data = (uintptr_t)(len > 0 ? packed[i] : data[i]),
			.compression = len > 0 ? COMPRESSION_LZ4 : COMPRESSION_NONE,
		};
	}
	if (write(fs->cmd, rec, n * sizeof(rec[0])) != (ssize_t)(n * sizeof(rec[0])))
		gki_die("write blocks");
}

static double load_all(struct incfs *fs, int lz4)
{
	double t = gki_now_ns();

	for (uint32_t b = 0; b < BLOCKS; b += BATCH)
		load_blocks(fs, b, BATCH, lz4);
	t = gki_now_ns() - t;
	return FILE_SIZE / (1024.0 * 1024.0) / (t / 1e9);
}

/* The page cache, in KiB: Cached in /proc/meminfo. */
static long cached_kib(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long kib = -1;

	if (!f)
		gki_die("/proc/meminfo");
	while (kib < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "Cached: %ld kB", &kib) != 1)
			kib = -1;
	fclose(f);
	if (kib < 0)
		gki_die("no Cached line in /proc/meminfo");
	return kib;
}

/* One read of the whole file; *growth_mib: the page cache it added. */
static double seq_read_ms(const char *path, double *growth_mib)
{
	static uint8_t buf[1 << 20];
	long before;
	int fd;
	double t;

	gki_drop_caches();
	before = cached_kib();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		gki_die(path);
	t = gki_now_ns();
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	t = gki_now_ns() - t;
	close(fd);
	*growth_mib = (cached_kib() - before) / 1024.0;
	return t / 1e6;
}

static double random_read_ms(const char *path)
{
	uint8_t buf[BS];
	uint64_t x = 42;
	int fd;
	double t;

	gki_drop_caches();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		gki_die(path);
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	t = gki_now_ns();
	for (int i = 0; i < RANDOM_READS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (pread(fd, buf, BS, (off_t)(x % BLOCKS) * BS) != BS)
			gki_die("pread");
	}
	t = gki_now_ns() - t;
	close(fd);
	return t / 1e6;
}

/* Serve every pending read of fs->cmd until killed. */
static void serve_pending(struct incfs *fs)
{
	struct incfs_pending_read_info reads[BATCH];
	struct pollfd p = { .fd = fs->cmd, .events = POLLIN };

	for (;;) {
		ssize_t n;

		if (poll(&p, 1, -1) < 0)
			_exit(1);
		n = read(fs->cmd, reads, sizeof(reads));
		for (ssize_t i = 0; i < n / (ssize_t)sizeof(reads[0]); i++)
			load_blocks(fs, reads[i].block_index, 1, 0);
	}
}

/* Each read blocks on an absent block that the loader then supplies. */
static double pending_round_trip_us(struct incfs *fs, uint32_t first)
{
	uint8_t buf[BS];
	pid_t pid = fork();
	int fd;
	double t;

	if (pid < 0)
		gki_die("fork");
	if (!pid)
		serve_pending(fs);
	fd = open(fs->file, O_RDONLY);
	if (fd < 0)
		gki_die(fs->file);
	t = gki_now_ns();
	for (uint32_t i = first; i < first + ROUND_TRIPS; i++)
		if (pread(fd, buf, BS, (off_t)i * BS) != BS)
			gki_die("pending pread");
	t = gki_now_ns() - t;
	close(fd);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return t / ROUND_TRIPS / 1e3;
}

static void bench_reads(void)
{
	double plain_seq[PASSES], incfs_seq[PASSES], lz4_seq[PASSES];
	double plain_rnd[PASSES], incfs_rnd[PASSES], lz4_rnd[PASSES];
	double plain_cache[PASSES], incfs_cache[PASSES], lz4_cache[PASSES];
	double load_none, load_lz4, crc[PASSES], plain_crc[PASSES];
	double nolog_seq[PASSES], nolog_rnd[PASSES], nolog_cache[PASSES];
	struct incfs none, lz4;
	char plain[96];

	snprintf(plain, sizeof(plain), "%s/plain.bin", scratch);
	make_plain(plain);
	incfs_mount(&none, "incfs-none", 1000);
	incfs_mount(&lz4, "incfs-lz4", 1000);
	load_none = load_all(&none, 0);
	load_lz4 = load_all(&lz4, 1);

	for (int i = 0; i < PASSES; i++) {
		plain_seq[i] = seq_read_ms(plain, &plain_cache[i]);
		incfs_seq[i] = seq_read_ms(none.file, &incfs_cache[i]);
		lz4_seq[i] = seq_read_ms(lz4.file, &lz4_cache[i]);
		plain_rnd[i] = random_read_ms(plain);
		incfs_rnd[i] = random_read_ms(none.file);
		lz4_rnd[i] = random_read_ms(lz4.file);
		incfs_remount(&none, 0);
		nolog_seq[i] = seq_read_ms(none.file, &nolog_cache[i]);
		nolog_rnd[i] = random_read_ms(none.file);
		incfs_remount(&none, 1);
		crc[i] = crc32_ms();
		plain_crc[i] = plain_seq[i] + crc[i];
	}
	gki_bench_report("incfs_load_mib_s", load_none, "MiB/s", NULL);
	gki_bench_report("incfs_load_lz4_mib_s", load_lz4, "MiB/s", "incfs_load_mib_s");
	gki_bench_report("ext4_seq_read_ms", gki_median(plain_seq, PASSES), "ms", NULL);
	gki_bench_report("incfs_seq_read_ms", gki_median(incfs_seq, PASSES), "ms",
			 "ext4_seq_read_ms");
	gki_bench_report("incfs_lz4_seq_read_ms", gki_median(lz4_seq, PASSES), "ms",
			 "incfs_seq_read_ms");
	gki_bench_report("crc32_64mib_ms", gki_median(crc, PASSES), "ms",
			 "ext4_seq_read_ms");
	gki_bench_report("ext4_seq_read_plus_crc32_ms", gki_median(plain_crc, PASSES), "ms",
			 NULL);
	gki_bench_report("incfs_seq_read_vs_read_plus_crc32_ms",
			 gki_median(incfs_seq, PASSES), "ms", "ext4_seq_read_plus_crc32_ms");
	gki_bench_report("ext4_read_cache_growth_mib", gki_median(plain_cache, PASSES), "MiB",
			 NULL);
	gki_bench_report("incfs_read_cache_growth_mib", gki_median(incfs_cache, PASSES),
			 "MiB", "ext4_read_cache_growth_mib");
	gki_bench_report("incfs_lz4_read_cache_growth_mib", gki_median(lz4_cache, PASSES),
			 "MiB", "ext4_read_cache_growth_mib");
	gki_bench_report("ext4_random_read_ms", gki_median(plain_rnd, PASSES), "ms", NULL);
	gki_bench_report("incfs_random_read_ms", gki_median(incfs_rnd, PASSES), "ms",
			 "ext4_random_read_ms");
	gki_bench_report("incfs_lz4_random_read_ms", gki_median(lz4_rnd, PASSES), "ms",
			 "incfs_random_read_ms");
	gki_bench_report("incfs_seq_read_log_off_ms", gki_median(nolog_seq, PASSES), "ms", NULL);
	gki_bench_report("incfs_seq_read_log_on_ms", gki_median(incfs_seq, PASSES), "ms",
			 "incfs_seq_read_log_off_ms");
	gki_bench_report("incfs_random_read_log_off_ms", gki_median(nolog_rnd, PASSES), "ms",
			 NULL);
	gki_bench_report("incfs_random_read_log_on_ms", gki_median(incfs_rnd, PASSES), "ms",
			 "incfs_random_read_log_off_ms");
	incfs_umount(&none);
	incfs_umount(&lz4);
	unlink(plain);
}

static void bench_round_trip(void)
{
	double pending[PASSES], pipes[PASSES];
	struct incfs fs;

	incfs_mount(&fs, "incfs-rt", 10000);
	for (int i = 0; i < PASSES; i++) {
		pipes[i] = gki_pipe_round_trip_us(ROUND_TRIPS);
		if (pipes[i] < 0)
			gki_die("pipe ping-pong");
		pending[i] = pending_round_trip_us(&fs, i * ROUND_TRIPS);
	}
	gki_bench_report("pipe_pingpong_us", gki_median(pipes, PASSES), "us", NULL);
	gki_bench_report("incfs_pending_read_round_trip_us",
			 gki_median(pending, PASSES), "us", "pipe_pingpong_us");
	incfs_umount(&fs);
}

int main(void)
{
	if (incfs_bench_load_module())
		gki_die("insmod incrementalfs");
	bench_reads();
	bench_round_trip();
	return 0;
}
