// SPDX-License-Identifier: GPL-2.0
/*
 * Power loss, for real: crash-point replay.
 *
 * A delivery workload runs on incfs whose backing file is on ext4 on a
 * dm-log-writes device, which records every write, flush and FUA the disk
 * gets, and a mark after each step whose result the workload was told is
 * durable.  replay-log (qemu/tools/replay-log/) then rebuilds the disk at
 * crash points: each flush boundary, subsets of the writes in flight
 * between two flushes, and writes of the backing file torn at every
 * sector.  Each is mounted
 * and checked against the workload's schedule: incfs mounts, without
 * incfs-image fsck --repair (the kernel repairs crash states itself; a
 * point that needs it is judged after the repair), a block that reads back
 * reads its delivered bytes, no present block fails its CRC, every name
 * leads to an inode, and what a step's return promised is there.
 *
 * The first two tests record and replay; the others each judge one of
 * those properties from the counts the replay left in RESULTS.
 *
 * The backing_error tests fail the backing file's blocks for real (the
 * device-mapper "error" target under ext4) and check that the mount stops
 * taking changes, while it is mounted, until a remount.
 *
 * Environment: INCFS_CRASH_POINTS, how many crash points to check (default
 * DEFAULT_POINTS, spread over the log; "all" for every one);
 * INCFS_CRASH_SEED, the seed of the sample and of the subsets (default 1);
 * INCFS_CRASH_SUBSETS, random subsets of the writes in flight per interval
 * between two flushes (default DEFAULT_SUBSETS); INCFS_CRASH_KEEP=always
 * keeps the log in the scratch folder even when every point passes (a
 * failing point's always is).
 */
#include <linux/dm-ioctl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <sys/sysmacros.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define DEFAULT_POINTS	48
#define DEFAULT_SUBSETS	4	/* random subsets per interval between flushes */
#define WORK		"/tmp/crash"
#define BASE		WORK "/base.img"	/* the disk when the log starts */
#define DISK		WORK "/disk.img"	/* the recorded disk */
#define LOG		WORK "/log.img"		/* dm-log-writes' log */
#define REPLAY		WORK "/replay.img"	/* a crash point's disk */
#define RESULTS		WORK "/results"
#define TEARABLE	WORK "/tearable"	/* the backing file's sectors */
#define FAILING		WORK "/failing"		/* the specs of failing points */
#define KEPT		"incfs-crash"	/* in the scratch folder: a kept log */
#define DISK_MNT	WORK "/disk"		/* ext4 */
#define APP_MNT		WORK "/app"		/* incfs */
#define APP_IMG		"app.img"		/* the backing file, on ext4 */
#define BLANK_EXT4	"/data/blank.ext4"
#define LOG_MB		64
#define DM_NAME		"incfs-crash"
#define MAX_MARKS	16
#define MAX_SHOWN	20	/* violations described in the log */

/* ===== the workload's schedule ===== */

/*
 * Files and names.  A name is added at step added and removed at step
 * removed (-1: never); file is the index of its file in files[] (-1 for a
 * directory).
 */
static struct incfs_file files[] = {
	{ .size = 40 * INCFS_BS + 100, .seed = 0xa11 },
	{ .size = 9 * INCFS_BS, .seed = 0xb22, .compressible = true },
	{ .size = 1 * INCFS_BS - 7, .seed = 0xc33 },
	{ .size = 20 * INCFS_BS, .seed = 0xd44 },
};

#define NFILES	ARRAY_SIZE(files)

struct name {
	const char *path;
	int file;
	int added, removed;
};

static const struct name names[] = {
	{ "dir", -1, 0, -1 },
	{ "a.bin", 0, 0, -1 },
	{ "b.bin", 1, 0, 5 },
	{ "dir/c.bin", 2, 0, -1 },
	{ "dir/a.link", 0, 3, -1 },
	{ "d.bin", 3, 6, -1 },
};

/* Blocks [first, first + count) of a file, delivered at step. */
struct delivery {
	int step, file;
	__u32 first, count;
	enum incfs_send_mode mode;
};

static const struct delivery deliveries[] = {
	{ 1, 0, 0, 12, INCFS_SEND_NONE },
	{ 2, 1, 0, 9, INCFS_SEND_MIXED },
	{ 2, 0, 12, 8, INCFS_SEND_LZ4 },
	{ 4, 0, 20, 21, INCFS_SEND_MIXED },
	{ 4, 2, 0, 1, INCFS_SEND_NONE },
	{ 6, 3, 0, 10, INCFS_SEND_NONE },
	{ 7, 3, 10, 10, INCFS_SEND_NONE },
};

#define NSTEPS	8	/* step 7 ends with the unmount, not syncfs */

/* The step that delivers block b of file f; -1 if none does. */
static int delivered_at(int f, __u32 b)
{
	for (size_t i = 0; i < ARRAY_SIZE(deliveries); i++) {
		const struct delivery *d = &deliveries[i];

		if (d->file == f && b >= d->first && b < d->first + d->count)
			return d->step;
	}
	return -1;
}

/* ===== loop devices and device-mapper ===== */

/* Attach file to a free loop device: its open descriptor, or -errno. */
static int loop_attach(const char *file, char *dev, size_t len)
{
	struct loop_config cfg = { 0 };
	int ctl, n, fd, ret;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	ret = n < 0 ? -errno : 0;
	close(ctl);
	if (ret)
		return ret;
	snprintf(dev, len, "/dev/loop%d", n);
	fd = open(dev, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cfg.fd = open(file, O_RDWR | O_CLOEXEC);
	if (cfg.fd < 0) {
		ret = -errno;
		goto err_close;
	}
	ret = ioctl(fd, LOOP_CONFIGURE, &cfg) ? -errno : 0;
	close(cfg.fd);
	if (ret)
		goto err_close;
	/*
	 * Keep a read-only descriptor for LOOP_CLR_FD: the GKI does not let
	 * a block device that someone has open for writing be mounted
	 * (BLK_DEV_WRITE_MOUNTED is off).
	 */
	n = open(dev, O_RDONLY | O_CLOEXEC);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	return n;

err_close:
	close(fd);
	return ret;
}

static void loop_detach(int fd)
{
	ioctl(fd, LOOP_CLR_FD);
	close(fd);
}

/* An ioctl on /dev/mapper/control with a buffer of size bytes. */
static int dm_call(unsigned long req, struct dm_ioctl *io)
{
	int fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, req, io) ? -errno : 0;
	close(fd);
	return ret;
}

static struct dm_ioctl *dm_init(void *buf, size_t size, const char *name)
{
	struct dm_ioctl *io = buf;

	memset(buf, 0, size);
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = size;
	io->data_start = sizeof(*io);
	snprintf(io->name, sizeof(io->name), "%s", name);
	return io;
}

/*
 * A log-writes device over data, logging to log, active; its device
 * number in *dev.
 */
static int dm_log_writes_create(dev_t data, dev_t log, __u64 sectors, dev_t *dev)
{
	__u64 buf[512];
	struct dm_ioctl *io = dm_init(buf, sizeof(buf), DM_NAME);
	struct dm_target_spec *spec = (void *)(io + 1);
	int ret;

	ret = dm_call(DM_DEV_CREATE, io);
	if (ret)
		return ret;
	*dev = io->dev;

	io = dm_init(buf, sizeof(buf), DM_NAME);
	io->target_count = 1;
	spec->length = sectors;
	snprintf(spec->target_type, sizeof(spec->target_type), "log-writes");
	snprintf((char *)(spec + 1), sizeof(buf) - sizeof(*io) - sizeof(*spec), "%u:%u %u:%u",
		 major(data), minor(data), major(log), minor(log));
	ret = dm_call(DM_TABLE_LOAD, io);
	if (!ret)
		ret = dm_call(DM_DEV_SUSPEND, dm_init(buf, sizeof(buf), DM_NAME));
	if (ret)
		dm_call(DM_DEV_REMOVE, dm_init(buf, sizeof(buf), DM_NAME));
	return ret;
}

/* A mark in the log: "mark step-N" to the target. */
static int dm_mark(int step)
{
	__u64 buf[128];
	struct dm_ioctl *io = dm_init(buf, sizeof(buf), DM_NAME);
	struct dm_target_msg *msg = (void *)(io + 1);

	snprintf(msg->message, sizeof(buf) - sizeof(*io) - sizeof(*msg), "mark step-%d", step);
	return dm_call(DM_TARGET_MSG, io);
}

static int dm_remove(void)
{
	__u64 buf[128];

	return dm_call(DM_DEV_REMOVE, dm_init(buf, sizeof(buf), DM_NAME));
}

/* ===== small file helpers ===== */

static int copy_file(const char *from, const char *to)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "cp %s %s", from, to);
	return system(cmd) ? -EIO : 0;
}

static int make_file(const char *path, off_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int ret;

	if (fd < 0)
		return -errno;
	ret = ftruncate(fd, size) ? -errno : 0;
	close(fd);
	return ret;
}

static __u64 sectors_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_size >> 9;
}

static dev_t rdev_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_rdev;
}

/* ===== recording ===== */

struct recorder {
	int data_loop, log_loop;
	char dm_dev[64];
	bool dm, ext4;
	struct incfs_mnt m;
};

static int mkdirs(void)
{
	static const char * const dirs[] = { WORK, DISK_MNT, APP_MNT };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if (mkdir(dirs[i], 0755) && errno != EEXIST)
			return -errno;
	return 0;
}

/* ===== where a file's blocks are ===== */

#define MAX_SEGS	32

struct seg {
	__u64 start, len;	/* 512-byte sectors */
	bool error;
};

/*
 * The extents of the file open at @fd, sorted by place, into @segs (at
 * most MAX_SEGS, each marked @error); their count, or -errno.  Extents
 * whose place is not known yet (delayed allocation) are an error.
 */
static int file_extents(int fd, struct seg *segs, bool error)
{
	__u64 buf[(sizeof(struct fiemap) + MAX_SEGS * sizeof(struct fiemap_extent)) / 8];
	struct fiemap *fm = (void *)buf;
	int n = 0;

	memset(buf, 0, sizeof(buf));
	fm->fm_length = FIEMAP_MAX_OFFSET;
	fm->fm_extent_count = MAX_SEGS;
	if (ioctl(fd, FS_IOC_FIEMAP, fm))
		return -errno;
	if (fm->fm_mapped_extents == MAX_SEGS &&
	    !(fm->fm_extents[MAX_SEGS - 1].fe_flags & FIEMAP_EXTENT_LAST))
		return -E2BIG;
	for (__u32 i = 0; i < fm->fm_mapped_extents; i++) {
		const struct fiemap_extent *e = &fm->fm_extents[i];

		if (e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_NOT_ALIGNED))
			return -EINVAL;
		segs[n++] = (struct seg){ e->fe_physical >> 9, e->fe_length >> 9, error };
	}
	/* The extents of one file never overlap; sort them by place. */
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && segs[k].start < segs[k - 1].start; k--) {
			struct seg s = segs[k];

			segs[k] = segs[k - 1];
			segs[k - 1] = s;
		}
	return n;
}

/*
 * The backing file's sectors on the disk, for replay-log --tear-within:
 * torn points tear incfs's writes, not ext4's own metadata, whose blocks
 * ext4 relies on not tearing inside (replay-log's README says why).
 */
static int save_tearable(const char *path)
{
	struct seg segs[MAX_SEGS];
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;
	FILE *f;

	if (fd < 0)
		return -errno;
	n = file_extents(fd, segs, false);
	close(fd);
	if (n < 0)
		return n;
	f = fopen(TEARABLE, "we");
	if (!f)
		return -errno;
	for (int i = 0; i < n; i++)
		fprintf(f, "%llu %llu\n", (unsigned long long)segs[i].start,
			(unsigned long long)segs[i].len);
	return fclose(f) ? -errno : 0;
}

/* The disk: ext4 on log-writes on a loop device, logging to another. */
static int record_start(struct recorder *r)
{
	char dev[32];
	dev_t dm;
	int ret;

	r->data_loop = -1;
	r->log_loop = -1;
	ret = mkdirs();
	if (!ret)
		ret = copy_file(BLANK_EXT4, BASE);
	if (!ret)
		ret = copy_file(BASE, DISK);
	if (!ret)
		ret = make_file(LOG, (off_t)LOG_MB << 20);
	if (ret) {
		incfs_fail("preparing %s: %s", WORK, strerror(-ret));
		return ret;
	}
	r->data_loop = loop_attach(DISK, dev, sizeof(dev));
	if (r->data_loop < 0) {
		incfs_fail("loop device for %s: %s", DISK, strerror(-r->data_loop));
		return r->data_loop;
	}
	r->log_loop = loop_attach(LOG, dev, sizeof(dev));
	if (r->log_loop < 0) {
		incfs_fail("loop device for %s: %s", LOG, strerror(-r->log_loop));
		return r->log_loop;
	}
	ret = dm_log_writes_create(rdev_of(r->data_loop), rdev_of(r->log_loop),
				   sectors_of(BASE), &dm);
	if (ret) {
		incfs_fail("dm-log-writes device: %s", strerror(-ret));
		return ret;
	}
	r->dm = true;
	snprintf(r->dm_dev, sizeof(r->dm_dev), WORK "/dm");
	unlink(r->dm_dev);
	if (mknod(r->dm_dev, S_IFBLK | 0600, dm) ||
	    mount(r->dm_dev, DISK_MNT, "ext4", 0, NULL)) {
		ret = -errno;
		incfs_fail("ext4 on %s: %s", r->dm_dev, strerror(errno));
		return ret;
	}
	r->ext4 = true;
	return 0;
}

/* Undo record_start(); the log is complete once the target is gone. */
static int record_stop(struct recorder *r)
{
	int ret = 0;

	if (r->m.mounted)
		incfs_umount(&r->m);
	if (r->ext4 && umount(DISK_MNT))
		ret = -errno;
	r->ext4 = false;
	if (r->dm && !ret)
		ret = dm_remove();
	r->dm = false;
	if (r->log_loop >= 0)
		loop_detach(r->log_loop);
	if (r->data_loop >= 0)
		loop_detach(r->data_loop);
	r->data_loop = -1;
	r->log_loop = -1;
	return ret;
}

static int step_namespace(struct recorder *r, int step)
{
	static __u64 dir;	/* the one directory's inode */
	int ret = 0;

	for (size_t i = 0; i < ARRAY_SIZE(names) && !ret; i++) {
		const struct name *n = &names[i];
		const char *base = strrchr(n->path, '/');
		__u64 parent = base ? dir : INCFS_ROOT_INODE;
		struct incfs_file *f = n->file >= 0 ? &files[n->file] : NULL;

		base = base ? base + 1 : n->path;
		if (n->added == step && !f)
			ret = incfs_make_dir(r->m.cmd, parent, base, &dir);
		else if (n->added == step && f->ino)
			ret = incfs_add_entry(r->m.cmd, parent, f->ino, base);
		else if (n->added == step)
			ret = incfs_make(r->m.cmd, parent, base, S_IFREG | 0555, f->size, &f->ino);
		else if (n->removed == step)
			ret = incfs_remove_entry(r->m.cmd, parent, f->ino, base);
	}
	return ret;
}

static int step_deliver(struct recorder *r, int step)
{
	int ret = 0;

	for (size_t i = 0; i < ARRAY_SIZE(deliveries) && !ret; i++) {
		const struct delivery *d = &deliveries[i];

		if (d->step == step)
			ret = incfs_send_range(r->m.cmd, &files[d->file], d->first, d->count,
					       d->mode);
	}
	return ret;
}

/*
 * Step by step: its instructions (durable when they return), its blocks,
 * syncfs (which makes them durable), then the step's mark.  The last
 * step is made durable by the unmount.
 */
static int record_workload(struct recorder *r)
{
	int ret;

	snprintf(r->m.dir, sizeof(r->m.dir), APP_MNT);
	snprintf(r->m.backing, sizeof(r->m.backing), DISK_MNT "/" APP_IMG);
	r->m.cmd = -1;
	ret = incfs_mount(&r->m, 0);
	for (int step = 0; step < NSTEPS && !ret; step++) {
		ret = step_namespace(r, step);
		if (!ret)
			ret = step_deliver(r, step);
		if (!ret && step < NSTEPS - 1 && syncfs(r->m.cmd))
			ret = -errno;
		if (!ret && step == NSTEPS - 1)
			ret = incfs_umount(&r->m);
		if (!ret)
			ret = dm_mark(step);
	}
	return ret;
}

/* ===== the log ===== */

struct mark {
	unsigned long index;
	int step;
};

struct log_info {
	unsigned long entries, flushes;
	struct mark marks[MAX_MARKS];
	int nmarks;
};

/* `replay-log --list`: the entries' count, the flushes and the marks. */
static int read_log(struct log_info *li)
{
	char *out = gki_command_output("replay-log --log " LOG " --list"), *line, *save;

	memset(li, 0, sizeof(*li));
	if (!out) {
		incfs_fail("replay-log --list failed");
		return -EIO;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long index, sector, n;
		char flags[64], mark[64];
		int step;

		if (sscanf(line, "%lu %lu %lu %63s %63s", &index, &sector, &n, flags, mark) != 5)
			continue;
		li->entries = index + 1;
		if (strstr(flags, "flush"))
			li->flushes++;
		if (sscanf(mark, "step-%d", &step) == 1 && li->nmarks < MAX_MARKS)
			li->marks[li->nmarks++] = (struct mark){ index, step };
	}
	free(out);
	return 0;
}

/* ===== one crash point ===== */

/* What a crash point's disk must show, and what it may. */
struct expect {
	int durable;	/* steps up to this one completed before the crash */
	int started;	/* steps after this one had not begun */
};

struct counts {
	unsigned long points, prefixes, subsets, torn, judged;
	unsigned long replay_failed, unmountable, repaired;
	unsigned long wrong_bytes, bad_crc, dangling, lost, early;
};

static struct counts counts;
static char crash_log[4096];	/* the first violations, for TH_LOG */

static void violation(unsigned long *counter, const char *spec, const char *fmt, ...)
{
	size_t len = strlen(crash_log);
	char what[256];
	va_list ap;

	FILE *f = fopen(FAILING, "ae");

	(*counter)++;
	if (f) {
		fprintf(f, "%s\n", spec);
		fclose(f);
	}
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	/* Whole lines only; a long spec is cut short. */
	if (len + 400 < sizeof(crash_log))
		snprintf(crash_log + len, sizeof(crash_log) - len, "point %.80s: %s\n", spec,
			 what);
}

/*
 * A spec is P[+I,J,...][~T:first|second]: the prefix P, and the highest
 * entry it applies.
 */
static struct expect expect_of(const char *spec, const struct log_info *li)
{
	unsigned long prefix = strtoul(spec, NULL, 10), last = prefix ? prefix - 1 : 0;
	struct expect e = { -1, -1 };

	for (const char *p = spec; *p; p++)
		if ((*p == '+' || *p == ',' || *p == '~') && p[1] >= '0' && p[1] <= '9') {
			unsigned long i = strtoul(p + 1, NULL, 10);

			last = i > last ? i : last;
		}
	for (int i = 0; i < li->nmarks; i++) {
		if (li->marks[i].index < prefix)
			e.durable = li->marks[i].step;
		if (li->marks[i].index <= last)
			e.started = li->marks[i].step;
	}
	/* The step after the last mark it reached may have begun. */
	e.started++;
	return e;
}

static bool name_required(const struct name *n, const struct expect *e)
{
	return n->added <= e->durable && (n->removed < 0 || n->removed > e->started);
}

static bool name_forbidden(const struct name *n, const struct expect *e)
{
	return n->added > e->started || (n->removed >= 0 && n->removed <= e->durable);
}

/* Every block of a present file: its bytes, absent, or a violation. */
static void check_blocks(const char *spec, const char *path, int fi, const struct expect *e)
{
	const struct incfs_file *f = &files[fi];
	unsigned char got[INCFS_BS], want[INCFS_BS];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		violation(&counts.dangling, spec, "open %s: %s", path, strerror(errno));
		return;
	}
	for (__u32 b = 0; b < incfs_nblocks(f->size); b++) {
		__u32 len = incfs_block_len(f, b);
		ssize_t n = pread(fd, got, len, (off_t)b * INCFS_BS);
		int step = delivered_at(fi, b);

		if (n < 0 && errno == ETIME) {
			if (step >= 0 && step <= e->durable)
				violation(&counts.lost, spec, "%s block %u (step %d) is absent",
					  path, b, step);
			continue;
		}
		if (n < 0 && errno == EIO) {
			violation(&counts.bad_crc, spec, "%s block %u: EIO", path, b);
			continue;
		}
		incfs_block_content(f, b, want);
		if (n != len || memcmp(got, want, len))
			violation(&counts.wrong_bytes, spec, "%s block %u: %zd bytes, not its own",
				  path, b, n);
		else if (step < 0 || step > e->started)
			violation(&counts.early, spec, "%s block %u present before its step %d",
				  path, b, step);
	}
	close(fd);
}

/* Every entry of dir leads to an inode. */
static void check_dir(const char *spec, const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d) {
		violation(&counts.dangling, spec, "opendir %s: %s", dir, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st))
			violation(&counts.dangling, spec, "%s is listed, lstat: %s", path,
				  strerror(errno));
	}
	closedir(d);
}

static void check_app(const char *spec, const struct expect *e)
{
	char path[PATH_MAX];
	struct stat st;

	check_dir(spec, APP_MNT);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const struct name *n = &names[i];
		bool there;

		snprintf(path, sizeof(path), APP_MNT "/%s", n->path);
		there = !lstat(path, &st);
		if (!there && errno != ENOENT)
			violation(&counts.dangling, spec, "lstat %s: %s", path, strerror(errno));
		else if (!there && name_required(n, e))
			violation(&counts.lost, spec, "%s (step %d) is missing", n->path,
				  n->added);
		else if (there && name_forbidden(n, e))
			violation(&counts.early, spec, "%s is there at steps %d..%d", n->path,
				  e->durable, e->started);
		else if (there && n->file < 0)
			check_dir(spec, path);
		else if (there)
			check_blocks(spec, path, n->file, e);
	}
}

/*
 * Mount the app's image.  The kernel repairs what a crash leaves, so a
 * point that needs incfs-image fsck --repair first is a violation of its
 * own; it is judged after the repair all the same.
 */
static int mount_app(const char *spec, const char *img)
{
	char cmd[256], first[256];

	if (!incfs_mount_file(APP_MNT, img, 0))
		return 0;
	snprintf(first, sizeof(first), "%s", incfs_err);
	snprintf(cmd, sizeof(cmd), "incfs-image fsck --repair %s >/dev/null 2>&1", img);
	system(cmd);
	if (!incfs_mount_file(APP_MNT, img, 0)) {
		violation(&counts.repaired, spec,
			  "incfs mounts only after incfs-image fsck --repair: %s", first);
		return 0;
	}
	violation(&counts.unmountable, spec, "incfs does not mount, even after repair: %s",
		  incfs_err);
	return -EIO;
}

static void check_point(const char *spec, const struct log_info *li)
{
	struct expect e = expect_of(spec, li);
	char *cmd, dev[32];
	struct stat st;
	int loop;

	if (asprintf(&cmd, "replay-log --log %s --replay %s --base %s --point %s",
		     LOG, REPLAY, BASE, spec) < 0) {
		violation(&counts.replay_failed, spec, "out of memory");
		return;
	}
	if (make_file(REPLAY, 0) || system(cmd)) {
		violation(&counts.replay_failed, spec, "replay-log --replay failed");
		free(cmd);
		return;
	}
	free(cmd);
	loop = loop_attach(REPLAY, dev, sizeof(dev));
	if (loop < 0) {
		violation(&counts.replay_failed, spec, "loop device: %s", strerror(-loop));
		return;
	}
	counts.judged++;
	if (mount(dev, DISK_MNT, "ext4", 0, NULL)) {
		violation(&counts.unmountable, spec, "ext4 does not mount: %s", strerror(errno));
		goto out_loop;
	}
	if (stat(DISK_MNT "/" APP_IMG, &st) || !st.st_size) {
		/* Before the first instruction returned, there is nothing yet. */
		if (e.durable >= 0)
			violation(&counts.lost, spec, "the image is missing after step %d",
				  e.durable);
	} else if (!mount_app(spec, DISK_MNT "/" APP_IMG)) {
		check_app(spec, &e);
		if (umount(APP_MNT))
			violation(&counts.unmountable, spec, "umount incfs: %s", strerror(errno));
	}
	umount(DISK_MNT);
out_loop:
	loop_detach(loop);
}

static int replay_all(const struct log_info *li, const char *which, unsigned long seed,
		      unsigned long subsets)
{
	char cmd[256], *out, *line, *save;

	snprintf(cmd, sizeof(cmd),
		 "replay-log --log %s --points --tear-within %s --seed %lu --subsets %lu%s%s",
		 LOG, TEARABLE, seed, subsets, strcmp(which, "all") ? " --sample " : "",
		 strcmp(which, "all") ? which : "");
	out = gki_command_output(cmd);
	if (!out) {
		incfs_fail("%s failed", cmd);
		return -EIO;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "SPEC MARK": a subset of a long interval makes a long spec. */
		char *spec = line, *end = strchr(line, ' ');

		if (!end)
			continue;
		*end = '\0';
		counts.points++;
		if (strchr(spec, '~'))
			counts.torn++;
		else if (strchr(spec, '+'))
			counts.subsets++;
		else
			counts.prefixes++;
		check_point(spec, li);
	}
	free(out);
	return 0;
}

/* ===== results between the tests ===== */

static int save_counts(void)
{
	FILE *f = fopen(RESULTS, "w");

	if (!f)
		return -errno;
	fwrite(&counts, sizeof(counts), 1, f);
	return fclose(f) ? -EIO : 0;
}

/*
 * The replay's counts; false (and the test fails) unless it ran and every
 * crash point was rebuilt and judged.
 */
static bool load_counts(struct counts *c)
{
	FILE *f = fopen(RESULTS, "r");
	bool ok;

	if (!f)
		return false;
	ok = fread(c, sizeof(*c), 1, f) == 1;
	fclose(f);
	return ok && c->points > 0 && c->judged == c->points;
}

/* ===== backing I/O errors ===== */

/*
 * The backing file's blocks fail on demand: ext4 on a device-mapper device
 * whose table maps the disk linearly, or with the backing file's extents
 * (preallocated, so that they do not move) on the "error" target.  Only
 * that file's I/O fails: ext4's journal and inode table stay writable.
 */
#define EIO_DISK	WORK "/eio.img"
#define EIO_DEV		WORK "/eio-dm"
#define EIO_MNT		WORK "/eio"		/* ext4 */
#define EIO_APP		WORK "/eio-app"		/* incfs */
#define EIO_DM		"incfs-eio"
#define EIO_PREALLOC	(4 << 20)
#define EIO_TIMEOUT_MS	100

struct eio_disk {
	int loop;
	dev_t loop_dev;
	__u64 sectors;
	struct seg bad[MAX_SEGS];	/* the backing file's extents, sorted */
	int nbad;
	bool dm, ext4;
	struct incfs_mnt m;
	struct incfs_file f;		/* 8 blocks, block 0 delivered */
};

/* Load @segs as EIO_DM's table and make it live (creating the device). */
static int eio_table(const struct seg *segs, int n, dev_t under, bool create, dev_t *dev)
{
	__u64 buf[1024];
	struct dm_ioctl *io = dm_init(buf, sizeof(buf), EIO_DM);
	char *p = (char *)(io + 1), *end = (char *)buf + sizeof(buf);
	int ret;

	if (create) {
		ret = dm_call(DM_DEV_CREATE, io);
		if (ret)
			return ret;
		*dev = io->dev;
		io = dm_init(buf, sizeof(buf), EIO_DM);
	}
	for (int i = 0; i < n; i++) {
		struct dm_target_spec *spec = (void *)p;
		char *params = (char *)(spec + 1);
		int len;

		spec->sector_start = segs[i].start;
		spec->length = segs[i].len;
		snprintf(spec->target_type, sizeof(spec->target_type), "%s",
			 segs[i].error ? "error" : "linear");
		if (segs[i].error)
			len = params < end ? (*params = '\0', 0) : -1;	/* no parameters */
		else
			len = snprintf(params, end - params, "%u:%u %llu", major(under),
				       minor(under), (unsigned long long)segs[i].start);
		if (len < 0 || len >= end - params)
			return -ENOSPC;
		spec->next = (sizeof(*spec) + len + 1 + 7) & ~7UL;
		p += spec->next;
	}
	io->target_count = n;
	ret = dm_call(DM_TABLE_LOAD, io);
	return ret ? ret : dm_call(DM_DEV_SUSPEND, dm_init(buf, sizeof(buf), EIO_DM));
}

/* The disk with the backing file's extents failing (@fail) or not. */
static int eio_switch(struct eio_disk *d, bool fail)
{
	struct seg segs[2 * MAX_SEGS + 1];
	__u64 at = 0;
	int n = 0;

	for (int i = 0; fail && i < d->nbad; i++) {
		if (d->bad[i].start > at)
			segs[n++] = (struct seg){ at, d->bad[i].start - at, false };
		segs[n++] = d->bad[i];
		at = d->bad[i].start + d->bad[i].len;
	}
	if (at < d->sectors)
		segs[n++] = (struct seg){ at, d->sectors - at, false };
	return eio_table(segs, n, d->loop_dev, false, NULL);
}

/* Where the backing file's blocks are, preallocated ones included. */
static int eio_extents(struct eio_disk *d, int fd)
{
	__u64 sectors = 0;
	int n = file_extents(fd, d->bad, true);

	if (n < 0)
		return n;
	d->nbad = n;
	for (int i = 0; i < n; i++)
		sectors += d->bad[i].len;
	return sectors << 9 >= EIO_PREALLOC ? 0 : -ENOSPC;
}

/*
 * ext4 on EIO_DM on a loop device, an incfs mount whose backing file is on
 * it, one file of 8 blocks with block 0 delivered and made durable.
 */
static int eio_start(struct eio_disk *d)
{
	char loop[32];
	dev_t dm;
	int fd, ret;

	d->loop = -1;
	d->m.cmd = -1;
	ret = mkdirs();
	if (!ret && mkdir(EIO_MNT, 0755) && errno != EEXIST)
		ret = -errno;
	if (!ret && mkdir(EIO_APP, 0755) && errno != EEXIST)
		ret = -errno;
	if (!ret)
		ret = copy_file(BLANK_EXT4, EIO_DISK);
	if (ret) {
		incfs_fail("preparing %s: %s", EIO_DISK, strerror(-ret));
		return ret;
	}
	d->sectors = sectors_of(EIO_DISK);
	d->loop = loop_attach(EIO_DISK, loop, sizeof(loop));
	if (d->loop < 0) {
		incfs_fail("loop device for %s: %s", EIO_DISK, strerror(-d->loop));
		return d->loop;
	}
	d->loop_dev = rdev_of(d->loop);
	ret = eio_table(&(struct seg){ 0, d->sectors, false }, 1, d->loop_dev, true, &dm);
	if (ret) {
		incfs_fail("dm device %s: %s", EIO_DM, strerror(-ret));
		return ret;
	}
	d->dm = true;
	unlink(EIO_DEV);
	if (mknod(EIO_DEV, S_IFBLK | 0600, dm) || mount(EIO_DEV, EIO_MNT, "ext4", 0, NULL)) {
		ret = -errno;
		incfs_fail("ext4 on %s: %s", EIO_DEV, strerror(errno));
		return ret;
	}
	d->ext4 = true;
	snprintf(d->m.dir, sizeof(d->m.dir), EIO_APP);
	snprintf(d->m.backing, sizeof(d->m.backing), EIO_MNT "/" APP_IMG);
	fd = open(d->m.backing, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, EIO_PREALLOC)) {
		ret = -errno;
		incfs_fail("preallocating %s: %s", d->m.backing, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	ret = eio_extents(d, fd);
	close(fd);
	if (ret) {
		incfs_fail("the extents of %s: %s", d->m.backing, strerror(-ret));
		return ret;
	}
	ret = incfs_mount(&d->m, EIO_TIMEOUT_MS);
	if (!ret)
		ret = incfs_make_file(d->m.cmd, INCFS_ROOT_INODE, "a", &d->f, 8 * INCFS_BS, 7,
				      false);
	if (!ret)
		ret = incfs_send_range(d->m.cmd, &d->f, 0, 1, INCFS_SEND_NONE);
	if (!ret && syncfs(d->m.cmd))
		ret = -errno;
	return ret;
}

/* Undo eio_start(): 0, or the first step that failed, in incfs_err. */
static int eio_stop(struct eio_disk *d)
{
	__u64 buf[128];
	int ret = incfs_umount(&d->m);

	if (d->ext4 && umount(EIO_MNT)) {
		if (!ret) {
			ret = -errno;
			incfs_fail("umount %s: %s", EIO_MNT, strerror(errno));
		}
		umount2(EIO_MNT, MNT_DETACH);
	}
	if (d->dm) {
		int err = dm_call(DM_DEV_REMOVE, dm_init(buf, sizeof(buf), EIO_DM));

		if (err && !ret) {
			ret = err;
			incfs_fail("removing %s: %s", EIO_DM, strerror(-err));
		}
	}
	if (d->loop >= 0)
		loop_detach(d->loop);
	unlink(EIO_DISK);
	return ret;
}

/* ===== the tests ===== */

/*
 * One fixture, so that the tests run in this order (the harness runs a
 * fixture's tests in order), and for the time limits.
 */
FIXTURE(crash) {
	int unused;
};

FIXTURE_SETUP(crash)
{
}

FIXTURE_TEARDOWN(crash)
{
}

TEST_F_TIMEOUT(crash, workload_is_recorded, 120)
{
	struct recorder r = { 0 };
	struct log_info li;
	int ret;

	unlink(RESULTS);
	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
	unlink(TEARABLE);
	ret = record_start(&r);
	if (!ret)
		ret = record_workload(&r);
	EXPECT_EQ(0, ret) TH_LOG("%s", incfs_err);
	if (!ret) {
		ret = save_tearable(DISK_MNT "/" APP_IMG);
		EXPECT_EQ(0, ret) TH_LOG("the extents of the backing file: %s", strerror(-ret));
	}
	ASSERT_EQ(0, record_stop(&r)) TH_LOG("tearing the recording down");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, read_log(&li)) TH_LOG("%s", incfs_err);
	/* Every step's mark, in order, and flushes between them. */
	ASSERT_EQ(NSTEPS, li.nmarks);
	for (int i = 0; i < NSTEPS; i++)
		EXPECT_EQ(i, li.marks[i].step);
	EXPECT_LE(NSTEPS, li.flushes);
	TH_LOG("%lu entries, %lu flushes", li.entries, li.flushes);
}

/*
 * Keep what replays the failing points (or, with INCFS_CRASH_KEEP=always,
 * every point) in the scratch folder, which the harness keeps on the host
 * until the next run (README, "Crash-point replay"): the log, the disk it
 * starts from, the backing file's sectors and the failing specs.
 */
static int keep_log(void)
{
	static const char *const files[][2] = {
		{ LOG, "log.img" }, { BASE, "base.img" }, { TEARABLE, "tearable" },
		{ FAILING, "failing" },
	};
	char dir[PATH_MAX], to[PATH_MAX + 16];
	int ret = 0;

	snprintf(dir, sizeof(dir), "%s/" KEPT, incfs_scratch());
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(files) && !ret; i++) {
		snprintf(to, sizeof(to), "%s/%s", dir, files[i][1]);
		if (access(files[i][0], R_OK) && errno == ENOENT)
			ret = make_file(to, 0);		/* no failing point */
		else
			ret = copy_file(files[i][0], to);
	}
	if (!ret)
		sync();
	return ret;
}

TEST_F_TIMEOUT(crash, crash_points_are_replayed, 1200)
{
	const char *which = getenv("INCFS_CRASH_POINTS");
	const char *seed = getenv("INCFS_CRASH_SEED");
	const char *subsets = getenv("INCFS_CRASH_SUBSETS");
	char sample[16];
	struct log_info li;

	const char *keep = getenv("INCFS_CRASH_KEEP");
	int kept = 1;

	snprintf(sample, sizeof(sample), "%d", DEFAULT_POINTS);
	unlink(FAILING);
	ASSERT_EQ(0, read_log(&li)) TH_LOG("%s (did the recording run?)", incfs_err);
	ASSERT_EQ(0, replay_all(&li, which ? which : sample, seed ? strtoul(seed, NULL, 0) : 1,
				subsets ? strtoul(subsets, NULL, 0) : DEFAULT_SUBSETS))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, save_counts());
	if (!access(FAILING, F_OK) || (keep && !strcmp(keep, "always"))) {
		kept = keep_log();
		EXPECT_EQ(0, kept) TH_LOG("keeping the log in %s/%s: %s", incfs_scratch(), KEPT,
					  strerror(-kept));
	}
	if (!kept)
		TH_LOG("the log is kept in the scratch disk's %s/ (README, \"Crash-point replay\")",
		       KEPT);
	TH_LOG("%lu crash points (%lu flush boundaries, %lu with writes in flight, %lu torn)",
	       counts.points, counts.prefixes, counts.subsets, counts.torn);
	TH_LOG("%lu mounted only after fsck --repair", counts.repaired);
	TH_LOG("violations: %lu unmountable, %lu wrong bytes, %lu early, %lu bad CRC,",
	       counts.unmountable, counts.wrong_bytes, counts.early, counts.bad_crc);
	TH_LOG("violations: %lu dangling names, %lu lost", counts.dangling, counts.lost);
	if (crash_log[0])
		TH_LOG("%s", crash_log);
	ASSERT_LT(0, counts.points);
	EXPECT_LT(0, counts.prefixes);
	EXPECT_EQ(0, counts.replay_failed);
}

TEST_F(crash, every_crash_point_mounts)
{
	struct counts c;

	ASSERT_TRUE(load_counts(&c)) TH_LOG("the crash points were not all judged");
	EXPECT_EQ(0, c.unmountable);
}

/* The kernel repairs crash states itself: none needs incfs-image fsck. */
TEST_F(crash, every_crash_point_mounts_without_fsck)
{
	struct counts c;

	ASSERT_TRUE(load_counts(&c)) TH_LOG("the crash points were not all judged");
	EXPECT_EQ(0, c.repaired);
}

TEST_F(crash, present_blocks_read_their_delivered_bytes)
{
	struct counts c;

	ASSERT_TRUE(load_counts(&c)) TH_LOG("the crash points were not all judged");
	EXPECT_EQ(0, c.wrong_bytes);
	EXPECT_EQ(0, c.early);
}

TEST_F(crash, no_present_block_fails_its_crc)
{
	struct counts c;

	ASSERT_TRUE(load_counts(&c)) TH_LOG("the crash points were not all judged");
	EXPECT_EQ(0, c.bad_crc);
}

TEST_F(crash, names_never_lead_to_missing_inodes)
{
	struct counts c;

	ASSERT_TRUE(load_counts(&c)) TH_LOG("the crash points were not all judged");
	EXPECT_EQ(0, c.dangling);
}

TEST_F(crash, what_a_step_made_durable_survives)
{
	struct counts c;

	ASSERT_TRUE(load_counts(&c)) TH_LOG("the crash points were not all judged");
	EXPECT_EQ(0, c.lost);
}

/*
 * A backing I/O error stops the mount's changes (README, "Backing
 * errors"): each case starts with a NEW_FILE whose sync failed on the
 * failing disk, then gives the disk back.  The cases use EXPECT, never
 * ASSERT: after an assertion the harness may skip the teardown (its child
 * pid is not volatile across the longjmp), which would leave the device
 * behind for the next case.
 */
FIXTURE(backing_error) {
	struct eio_disk d;
};

FIXTURE_SETUP(backing_error)
{
	int ret, failed = 0;
	__u64 ino;

	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
	ret = eio_start(&self->d);
	if (!ret)
		ret = eio_switch(&self->d, true);
	if (!ret)
		failed = incfs_new_file(self->d.m.cmd, S_IFREG | 0555, INCFS_BS, &ino);
	if (!ret)
		ret = eio_switch(&self->d, false);
	/* The teardown runs only after a setup that completed. */
	if (ret || failed != -EIO)
		eio_stop(&self->d);
	ASSERT_EQ(0, ret) TH_LOG("%s", incfs_err);
	ASSERT_EQ(-EIO, failed) TH_LOG("NEW_FILE with the backing file's blocks failing");
}

FIXTURE_TEARDOWN(backing_error)
{
	EXPECT_EQ(0, eio_stop(&self->d)) TH_LOG("%s", incfs_err);
}

TEST_F(backing_error, instructions_fail_after_the_disk_recovers)
{
	__u64 ino;

	EXPECT_EQ(-EIO, incfs_new_file(self->d.m.cmd, S_IFREG | 0555, INCFS_BS, &ino));
	EXPECT_EQ(-EIO, incfs_add_entry(self->d.m.cmd, INCFS_ROOT_INODE, self->d.f.ino, "b"));
	EXPECT_EQ(-1, syncfs(self->d.m.cmd));
	EXPECT_EQ(EIO, errno);
}

TEST_F(backing_error, blocks_are_refused_after_the_disk_recovers)
{
	EXPECT_EQ(-EIO, incfs_send_range(self->d.m.cmd, &self->d.f, 1, 2, INCFS_SEND_NONE));
}

TEST_F(backing_error, present_blocks_still_read)
{
	int fd = open(incfs_path(&self->d.m, "a"), O_RDONLY | O_CLOEXEC);

	EXPECT_LE(0, fd);
	EXPECT_EQ(0, incfs_check_block(fd, &self->d.f, 0)) TH_LOG("%s", incfs_err);
	close(fd);
}

TEST_F(backing_error, reads_of_absent_blocks_fail_at_once)
{
	char buf[16];
	int fd = open(incfs_path(&self->d.m, "a"), O_RDONLY | O_CLOEXEC);

	EXPECT_LE(0, fd);
	EXPECT_EQ(-1, pread(fd, buf, sizeof(buf), 3 * INCFS_BS));
	EXPECT_EQ(EIO, errno);
	close(fd);
}

TEST_F(backing_error, the_loader_sees_the_end)
{
	struct incfs_pending_read_info pr;
	struct pollfd p = { .fd = self->d.m.cmd, .events = POLLIN };

	EXPECT_EQ(1, poll(&p, 1, 0));
	EXPECT_TRUE(p.revents & POLLHUP);
	/* Without the end, the read would block. */
	if (p.revents & POLLHUP)
		EXPECT_EQ(0, read(self->d.m.cmd, &pr, sizeof(pr)));
}

TEST_F(backing_error, a_remount_takes_changes_again)
{
	int fd;

	EXPECT_EQ(0, incfs_remount(&self->d.m, EIO_TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_send_range(self->d.m.cmd, &self->d.f, 1, 2, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	fd = open(incfs_path(&self->d.m, "a"), O_RDONLY | O_CLOEXEC);
	EXPECT_LE(0, fd);
	for (__u32 b = 0; b < 3; b++)
		EXPECT_EQ(0, incfs_check_block(fd, &self->d.f, b)) TH_LOG("%s", incfs_err);
	close(fd);
}

TEST_HARNESS_MAIN
