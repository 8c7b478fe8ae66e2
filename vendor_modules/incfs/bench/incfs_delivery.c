// SPDX-License-Identifier: GPL-2.0
/*
 * Delivery throughput: a 64 MiB file loaded into incfs through .cmd
 * write()s of 64 struct incfs_new_data_block records (the backing file on
 * the ext4 scratch disk), against write()s of the same bytes, 64 blocks
 * at a time, to a plain file on that disk.
 *
 * Every block is generated, and compressed for the LZ4 runs, before the
 * first pass, and each run's records are filled in before its clock
 * starts: only the delivery is timed.  Each of PASSES passes runs, in
 * turn, ext4, incfs uncompressed and incfs LZ4, first without and then
 * with a syncfs() at the end inside the timed region (on the incfs mount,
 * which writes the blockmap entries and syncs the backing file; on ext4,
 * on the file's filesystem).  Every run starts on a fresh file, with the
 * page cache dropped after its set-up (mount, NEW_FILE).
 *
 * Figures: MiB/s from each case's median time, and the median over passes
 * of each pass's incfs time / ext4 time (same syncfs setting).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/incrementalfs.h>
#include <lz4.h>

#include "gki_bench.h"
#include "incfs_bench_data.h"

#define BS		INCFS_DATA_FILE_BLOCK_SIZE
#define FILE_SIZE	(64 << 20)
#define BLOCKS		(FILE_SIZE / BS)
#define BATCH		64
#define PASSES		5
#define MNT		"/tmp/incfs-delivery"

enum target { EXT4, INCFS, INCFS_LZ4, TARGETS };

static const char *const target_name[TARGETS] = { "ext4", "incfs", "incfs lz4" };

static char backing[128], plain[128];
static uint8_t *data;		/* every block, BLOCKS * BS */
static uint8_t *packed;		/* block i's LZ4 at i * BS, packed_len[i] bytes */
static int packed_len[BLOCKS];	/* 0: LZ4 would not shrink it, sent as is */
static struct incfs_new_data_block rec[BLOCKS];

/* Every block and its LZ4 form, once, before any pass. */
static void generate(void)
{
	uint64_t lz4_bytes = 0;
	uint32_t lz4_blocks = 0;

	data = malloc((size_t)BLOCKS * BS);
	packed = malloc((size_t)BLOCKS * BS);
	if (!data || !packed)
		gki_die("malloc");
	for (uint32_t i = 0; i < BLOCKS; i++) {
		int len;

		incfs_bench_block(data + (size_t)i * BS, i);
		len = LZ4_compress_default((char *)data + (size_t)i * BS,
					   (char *)packed + (size_t)i * BS, BS, BS - 1);
		packed_len[i] = len > 0 ? len : 0;
		lz4_blocks += len > 0;
		lz4_bytes += len > 0 ? len : BS;
	}
	printf("# lz4: %u of %u blocks compressed, %.1f of %d MiB sent\n", lz4_blocks, BLOCKS,
	       lz4_bytes / 1048576.0, FILE_SIZE >> 20);
	fflush(stdout);
}

/* The records of one incfs run: file ino, uncompressed or LZ4. */
static void fill_records(uint64_t ino, int lz4)
{
	for (uint32_t i = 0; i < BLOCKS; i++) {
		int z = lz4 && packed_len[i];

		rec[i] = (struct incfs_new_data_block){
			.file_ino = ino,
			.block_index = i,
			.data_len = z ? packed_len[i] : BS,
			.data = (uintptr_t)(z ? packed : data) + (uintptr_t)i * BS,
			.compression = z ? COMPRESSION_LZ4 : COMPRESSION_NONE,
		};
	}
}

static void unlink_if_there(const char *path)
{
	if (unlink(path) && errno != ENOENT)
		gki_die(path);
}

static void instruction(int cmd, struct incfs_instruction *inst, const char *what)
{
	inst->version = INCFS_HEADER_VER;
	if (ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, inst))
		gki_die(what);
}

struct mount {
	int bfd;
	int cmd;
};

/* incfs on MNT with a new backing file, holding one FILE_SIZE file "data". */
static uint64_t incfs_mount(struct mount *m)
{
	struct incfs_instruction inst = {
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = { .size = FILE_SIZE, .mode = S_IFREG | 0555 },
	};
	char opts[64];
	uint64_t ino;

	unlink_if_there(backing);
	m->bfd = open(backing, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (m->bfd < 0)
		gki_die(backing);
	snprintf(opts, sizeof(opts), "backing_fd=%d", m->bfd);
	if (mount(INCFS_NAME, MNT, INCFS_NAME, 0, opts))
		gki_die("mount incfs");
	m->cmd = open(MNT "/.cmd", O_RDWR);
	if (m->cmd < 0)
		gki_die(MNT "/.cmd");
	instruction(m->cmd, &inst, "NEW_FILE");
	ino = inst.file.ino_out;
	memset(&inst, 0, sizeof(inst));
	inst.type = INCFS_INSTRUCTION_ADD_DIR_ENTRY;
	inst.dir_entry.dir_ino = INCFS_ROOT_INODE;
	inst.dir_entry.child_ino = ino;
	inst.dir_entry.name = (uintptr_t)"data";
	inst.dir_entry.name_len = 4;
	instruction(m->cmd, &inst, "ADD_DIR_ENTRY");
	return ino;
}

static void incfs_umount(struct mount *m)
{
	if (close(m->cmd) || umount(MNT) || close(m->bfd))
		gki_die("umount incfs");
	unlink_if_there(backing);
}

/* One incfs run: the whole file through .cmd; returns its time in ns. */
static double run_incfs(int lz4, int sync_end)
{
	struct mount m;
	double t;

	fill_records(incfs_mount(&m), lz4);
	gki_drop_caches();
	t = gki_now_ns();
	for (uint32_t b = 0; b < BLOCKS; b += BATCH)
		if (write(m.cmd, rec + b, sizeof(rec[0]) * BATCH) !=
		    (ssize_t)(sizeof(rec[0]) * BATCH))
			gki_die("write blocks to .cmd");
	if (sync_end && syncfs(m.cmd))
		gki_die("syncfs incfs");
	t = gki_now_ns() - t;
	incfs_umount(&m);
	return t;
}

/* One ext4 run: the same bytes to a new plain file; returns ns. */
static double run_ext4(int sync_end)
{
	double t;
	int fd;

	unlink_if_there(plain);
	fd = open(plain, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		gki_die(plain);
	gki_drop_caches();
	t = gki_now_ns();
	for (uint32_t b = 0; b < BLOCKS; b += BATCH)
		if (write(fd, data + (size_t)b * BS, (size_t)BATCH * BS) != (ssize_t)BATCH * BS)
			gki_die("write plain");
	if (sync_end && syncfs(fd))
		gki_die("syncfs ext4");
	t = gki_now_ns() - t;
	if (close(fd))
		gki_die(plain);
	unlink_if_there(plain);
	return t;
}

static double run(enum target tg, int sync_end)
{
	return tg == EXT4 ? run_ext4(sync_end) : run_incfs(tg == INCFS_LZ4, sync_end);
}

static double mib_s(double ns)
{
	return FILE_SIZE / 1048576.0 / (ns / 1e9);
}

/* Median of n samples, leaving them as they are. */
static double median(const double *v)
{
	double copy[PASSES];

	memcpy(copy, v, sizeof(copy));
	return gki_median(copy, PASSES);
}

static void report(double ns[2][TARGETS][PASSES])
{
	static const char *const mib[2][TARGETS] = {
		{ "ext4_write_mib_s", "incfs_delivery_mib_s", "incfs_delivery_lz4_mib_s" },
		{ "ext4_write_syncfs_mib_s", "incfs_delivery_syncfs_mib_s",
		  "incfs_delivery_lz4_syncfs_mib_s" },
	};
	static const char *const ratio[2][TARGETS] = {
		{ NULL, "incfs_delivery_ext4_ratio", "incfs_delivery_lz4_ext4_ratio" },
		{ NULL, "incfs_delivery_syncfs_ext4_ratio",
		  "incfs_delivery_lz4_syncfs_ext4_ratio" },
	};
	double r[PASSES];

	for (int s = 0; s < 2; s++)
		for (int tg = 0; tg < TARGETS; tg++)
			gki_bench_report(mib[s][tg], mib_s(median(ns[s][tg])), "MiB/s", NULL);
	/* Each pass's incfs time over the ext4 time measured beside it. */
	for (int s = 0; s < 2; s++)
		for (int tg = EXT4 + 1; tg < TARGETS; tg++) {
			for (int i = 0; i < PASSES; i++)
				r[i] = ns[s][tg][i] / ns[s][EXT4][i];
			gki_bench_report(ratio[s][tg], median(r), "ratio", NULL);
		}
}

int main(void)
{
	static double ns[2][TARGETS][PASSES];
	const char *scratch = getenv("GKI_SCRATCH");

	if (incfs_bench_load_module()) {
		fprintf(stderr, "incfs_delivery: cannot load incrementalfs.ko\n");
		return 1;
	}
	if (!scratch)
		scratch = "/mnt/scratch";
	snprintf(backing, sizeof(backing), "%s/incfs-delivery.img", scratch);
	snprintf(plain, sizeof(plain), "%s/incfs-delivery.bin", scratch);
	if (mkdir(MNT, 0755) && errno != EEXIST)
		gki_die(MNT);
	generate();
	for (int i = 0; i < PASSES; i++) {
		for (int s = 0; s < 2; s++)
			for (int tg = 0; tg < TARGETS; tg++)
				ns[s][tg][i] = run(tg, s);
		printf("# pass %d, MiB/s without / with syncfs:", i + 1);
		for (int tg = 0; tg < TARGETS; tg++)
			printf(" %s %.1f / %.1f%s", target_name[tg], mib_s(ns[0][tg][i]),
			       mib_s(ns[1][tg][i]), tg < TARGETS - 1 ? "," : "\n");
		fflush(stdout);
	}
	report(ns);
	return 0;
}
