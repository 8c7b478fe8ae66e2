// SPDX-License-Identifier: GPL-2.0
/*
 * incfs backing-file images as the module writes them, read back, cut and
 * corrupted in user space, and mounted again (vendor_modules/incfs/README.md,
 * "Mount" and "Reads of files"; the layout is in format.h).
 *
 * Every test starts from a "golden" image: a fresh mount given a directory,
 * files, a hard link, a name added, removed and added again, an empty file,
 * and data blocks (raw, LZ4, tail) delivered between the instructions, then
 * unmounted.  The image is read back with the tests' own statement of the
 * packed on-disk structures (incfs_layout.h, shared with incfs_fuzz), which
 * checks the layout and finds every record, every blockmap entry and every
 * stored block.  It is deliberately not format.h: the module and the tools
 * share one format implementation, and the tests are the independent
 * oracle that would catch a change to it.
 *
 * Cut images (a crash during an append) must mount with exactly the records
 * wholly before the cut: the names whose ADD records survive, the blocks
 * whose data survives (the others time out with ETIME).  New files and
 * blocks must then be accepted and survive another unmount and mount: the
 * module repairs the tail.
 *
 * Corrupted images must be refused with the README's errno and one kernel
 * log line naming the offset.  A stored block with a bad CRC reads as EIO
 * and is logged.  Hostile images must never crash the kernel (the harness
 * fails the run on any splat).
 */
#include <ctype.h>
#include <dirent.h>
#include <endian.h>
#include <limits.h>
#include <lz4.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/incrementalfs.h>

#include "gki_test.h"
#include "incfs_layout.h"
#include "kselftest_harness.h"

#define MODULE_PATH	"/modules/vendor/incfs/incrementalfs.ko"
#define BS		INCFS_DATA_FILE_BLOCK_SIZE
#define ROOT_INO	INCFS_ROOT_INODE
#define TIMEOUT_MS	50
/* In every line incfs logs (pr_fmt-less "incfs: ..."); not in our names. */
#define LOG_TAG		"incfs"

#define MAX_RECS	512
#define MAX_BLKS	320
#define MAX_INODES	32
#define MAX_NAMES	32
#define MAX_PRESENT	64
#define MAX_CUTS	160

/* The golden image's files. */
#define F1_SIZE		(5 * BS + 100)		/* 6 blocks, a 100-byte tail */
#define F2_SIZE		(BS + BS / 2)		/* 2 blocks, a 2048-byte tail */
#define F3_SIZE		BS
#define NEW_BLOCKS	8			/* blocks of the file added after a cut */

/* ===== images in memory ===== */

struct rec {
	long long off;
	size_t size;
	uint8_t type;
	union {
		struct d_hdr h;
		struct d_inode in;
		struct d_blockmap bm;
		struct d_dir_action da;
	} r;
};

/* A present block: its blockmap entry and its stored data. */
struct blk {
	uint64_t ino;
	uint32_t index;
	long long pos;		/* of the entry */
	long long off;		/* of the data */
	uint16_t size;
	uint16_t flags;
	uint32_t crc;
};

struct image {
	unsigned char *buf;
	size_t len;
	int nrecs, nblks;
	struct rec recs[MAX_RECS];
	struct blk blks[MAX_BLKS];
	char err[200];
};

static struct image *image_new(size_t len)
{
	struct image *im = calloc(1, sizeof(*im));

	if (!im)
		return NULL;
	im->buf = calloc(1, len ? len : 1);
	if (!im->buf) {
		free(im);
		return NULL;
	}
	im->len = len;
	return im;
}

static void image_free(struct image *im)
{
	if (im)
		free(im->buf);
	free(im);
}

static struct image *image_copy(const struct image *src)
{
	struct image *im = image_new(src->len);

	if (!im)
		return NULL;
	memcpy(im->buf, src->buf, src->len);
	memcpy(im->recs, src->recs, sizeof(im->recs));
	memcpy(im->blks, src->blks, sizeof(im->blks));
	im->nrecs = src->nrecs;
	im->nblks = src->nblks;
	return im;
}

static struct image *image_read(const char *path)
{
	size_t len;
	char *text = gki_read_file(path, &len);
	struct image *im;

	if (!text)
		return NULL;
	im = image_new(len);
	if (im)
		memcpy(im->buf, text, len);
	free(text);
	return im;
}

static int image_write(const char *path, const unsigned char *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n = 0;

	if (fd < 0)
		return -errno;
	if (len)
		n = write(fd, buf, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

static int parse_fail(struct image *im, const char *fmt, long long a,
		      long long b)
{
	snprintf(im->err, sizeof(im->err), fmt, a, b);
	return -1;
}

/* The entries of the blockmap record @r: one struct blk per present one. */
static int parse_blockmap(struct image *im, const struct rec *r,
			  long long gap_start)
{
	long long base = (long long)le64toh(r->r.bm.base);
	uint32_t count = le32toh(r->r.bm.count), i;

	if (base < gap_start || base + (long long)count * 14 > r->off)
		return parse_fail(im, "blockmap area at %lld is not before its record at %lld",
				  base, r->off);
	for (i = 0; i < count; i++) {
		static const struct d_bme zero;
		struct d_bme e;
		struct blk *b;

		memcpy(&e, im->buf + base + (long long)i * sizeof(e), sizeof(e));
		if (!memcmp(&e, &zero, sizeof(e)))
			continue;
		if (im->nblks == MAX_BLKS)
			return parse_fail(im, "more than %lld blocks%lld", MAX_BLKS, 0);
		b = &im->blks[im->nblks++];
		b->ino = le64toh(r->r.bm.ino);
		b->index = i;
		b->pos = base + (long long)i * sizeof(e);
		b->off = (long long)le16toh(e.off_hi) << 32 | le32toh(e.off_lo);
		b->size = le16toh(e.size);
		b->flags = le16toh(e.flags);
		b->crc = le32toh(e.crc);
		if (b->off < (long long)sizeof(struct d_super) || !b->size ||
		    b->off + b->size > (long long)im->len)
			return parse_fail(im, "blockmap entry at %lld points at %lld, not at data",
					  b->pos, b->off);
	}
	return 0;
}

/*
 * Find every record along the chain, and every present block.  The image
 * must be whole (no link or entry past its end); CRCs are not checked here
 * (see crc32_matches_kernel).
 */
static int image_parse(struct image *im)
{
	long long next, prev = 0, prev_end = sizeof(struct d_super);
	struct d_super sb;

	im->nrecs = 0;
	im->nblks = 0;
	im->err[0] = '\0';
	if (im->len < sizeof(sb))
		return parse_fail(im, "image of %lld bytes%lld", im->len, 0);
	memcpy(&sb, im->buf, sizeof(sb));
	if (le64toh(sb.magic) != INCFS_MAGIC_NUMBER || le64toh(sb.version) != 1 ||
	    le16toh(sb.sb_size) != sizeof(sb) || le16toh(sb.block_size) != BS ||
	    sb.flags)
		return parse_fail(im, "bad superblock (magic %llx, version %lld)",
				  le64toh(sb.magic), le64toh(sb.version));
	for (next = le64toh(sb.first_md); next; ) {
		struct rec *r = &im->recs[im->nrecs];

		if (im->nrecs == MAX_RECS)
			return parse_fail(im, "more than %lld records%lld", MAX_RECS, 0);
		if (next < prev_end || next + (long long)sizeof(struct d_hdr) > (long long)im->len)
			return parse_fail(im, "link to %lld after the record at %lld",
					  next, prev);
		r->off = next;
		memcpy(&r->r.h, im->buf + next, sizeof(r->r.h));
		r->type = r->r.h.type;
		r->size = le16toh(r->r.h.size);
		if (!rec_size(r->type) || r->size != rec_size(r->type))
			return parse_fail(im, "record at %lld: type/size %lld", next,
					  r->type << 16 | r->size);
		if (next + (long long)r->size > (long long)im->len)
			return parse_fail(im, "record at %lld cut at %lld", next, im->len);
		memcpy(&r->r, im->buf + next, r->size);
		if ((long long)le64toh(r->r.h.prev) != prev)
			return parse_fail(im, "record at %lld: prev link %lld",
					  next, le64toh(r->r.h.prev));
		if (r->type == MD_BLOCKMAP && parse_blockmap(im, r, prev_end))
			return -1;
		im->nrecs++;
		prev = next;
		prev_end = next + r->size;
		next = le64toh(r->r.h.next);
	}
	return 0;
}

static bool rec_crc_ok(const struct image *im, const struct rec *r)
{
	return md_crc(im->buf + r->off, r->size) == le32toh(r->r.h.crc);
}

/* After editing a record's bytes, make its CRC right again. */
static void fix_crc(struct image *im, const struct rec *r)
{
	put32(im->buf + r->off + OFF_CRC, md_crc(im->buf + r->off, r->size));
}

static const struct rec *find_inode(const struct image *im, uint64_t ino)
{
	int i;

	for (i = 0; i < im->nrecs; i++)
		if (im->recs[i].type == MD_INODE &&
		    le64toh(im->recs[i].r.in.ino) == ino)
			return &im->recs[i];
	return NULL;
}

static const struct rec *find_blockmap(const struct image *im, uint64_t ino)
{
	int i;

	for (i = 0; i < im->nrecs; i++)
		if (im->recs[i].type == MD_BLOCKMAP &&
		    le64toh(im->recs[i].r.bm.ino) == ino)
			return &im->recs[i];
	return NULL;
}

/* The last dir action record of @type for @name. */
static const struct rec *find_da(const struct image *im, int type,
				 const char *name)
{
	const struct rec *found = NULL;
	int i;

	for (i = 0; i < im->nrecs; i++) {
		const struct d_dir_action *da = &im->recs[i].r.da;

		if (im->recs[i].type == MD_DIR_ACTION && da->type == type &&
		    da->name_len == strlen(name) &&
		    !memcmp(da->name, name, da->name_len))
			found = &im->recs[i];
	}
	return found;
}

static const struct blk *find_blk(const struct image *im, uint64_t ino,
				  uint32_t index)
{
	int i;

	for (i = 0; i < im->nblks; i++)
		if (im->blks[i].ino == ino && im->blks[i].index == index)
			return &im->blks[i];
	return NULL;
}

static int rec_index(const struct image *im, const struct rec *r)
{
	return r ? (int)(r - im->recs) : -1;
}

/* ===== the module, mounts and .cmd ===== */

static int load_module(void)
{
	char *fs = gki_read_file("/proc/filesystems", NULL);
	bool loaded = fs && strstr(fs, INCFS_NAME);
	int r;

	free(fs);
	if (loaded)
		return 0;
	r = gki_load_module(MODULE_PATH, "");
	return r == -EEXIST ? 0 : r;
}

/* Mount @img on @mnt with @extra options ("" for none). */
static int mount_image_opts(const char *img, const char *mnt, const char *extra)
{
	char opts[128];
	int fd = open(img, O_RDWR | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=%d%s%s", fd,
		 TIMEOUT_MS, *extra ? "," : "", extra);
	r = mount(INCFS_NAME, mnt, INCFS_NAME, 0, opts) ? -errno : 0;
	close(fd);
	return r;
}

static int mount_image(const char *img, const char *mnt)
{
	return mount_image_opts(img, mnt, "");
}

static int umount_image(const char *mnt)
{
	return umount(mnt) ? -errno : 0;
}

static int open_cmd(const char *mnt)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/.cmd", mnt);
	return open(path, O_RDWR | O_CLOEXEC);
}

static int new_file(int cmd, uint16_t mode, uint64_t size, uint64_t *ino)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = { .size = size, .mode = mode },
	};

	if (ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst))
		return -errno;
	*ino = inst.file.ino_out;
	return 0;
}

static int name_op(int cmd, int type, uint64_t dir, uint64_t child,
		   const char *name)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = type,
		.dir_entry = {
			.dir_ino = dir,
			.child_ino = child,
			.name_len = strlen(name),
			.name = (uintptr_t)name,
		},
	};

	return ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst) ? -errno : 0;
}

/* The content of block @index of file @ino: runs of 16 bytes, compressible. */
static void gen(uint64_t ino, uint32_t index, unsigned char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(ino * 131 + index * 29 + (i / 16) * 7 + 1);
}

struct wblk {
	uint64_t ino;
	uint32_t index;
	uint32_t len;
	bool lz4;
};

/* Deliver blocks of gen() content in one write() on .cmd. */
static int write_blocks(int cmd, const struct wblk *w, int n)
{
	static unsigned char data[16][BS], raw[BS];
	struct incfs_new_data_block recs[16];
	ssize_t done;
	int i;

	if (n > 16)
		return -E2BIG;
	memset(recs, 0, sizeof(recs));
	for (i = 0; i < n; i++) {
		int len = w[i].len;

		gen(w[i].ino, w[i].index, raw, len);
		if (w[i].lz4) {
			len = LZ4_compress_default((char *)raw, (char *)data[i],
						   len, BS);
			if (len <= 0 || len >= (int)w[i].len)
				return -ENOSPC;
		} else {
			memcpy(data[i], raw, len);
		}
		recs[i].file_ino = w[i].ino;
		recs[i].block_index = w[i].index;
		recs[i].data_len = len;
		recs[i].data = (uintptr_t)data[i];
		recs[i].compression = w[i].lz4 ? COMPRESSION_LZ4 : COMPRESSION_NONE;
	}
	done = write(cmd, recs, n * sizeof(recs[0]));
	if (done < 0)
		return -errno;
	return done == (ssize_t)(n * sizeof(recs[0])) ? 0 : -EIO;
}

/* ===== the kernel log ===== */

/*
 * New kernel log lines are read from /dev/kmsg, from where klog_open() left
 * it: unlike counts over the syslog ring buffer, this is immune to the ring
 * wrapping and needs no marker lines (/dev/kmsg writes are rate-limited).
 */
static int klog_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * How many kernel log lines written since klog_open() (or the previous call)
 * contain @needle; the last of them goes to @last.
 */
static int klog_new_lines(int fd, const char *needle, char *last, size_t n)
{
	char rec[2048];
	int count = 0;

	for (;;) {
		ssize_t len = read(fd, rec, sizeof(rec) - 1);
		char *msg, *eol;

		if (len < 0 && errno == EPIPE)
			continue;	/* overwritten before we read it */
		if (len <= 0)
			break;
		rec[len] = '\0';
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		eol = strchr(msg, '\n');
		if (eol)
			*eol = '\0';
		if (!strstr(msg, needle))
			continue;
		count++;
		snprintf(last, n, "%s", msg);
	}
	return count;
}

/* @word occurs in @line and is not part of a longer word or number. */
static bool has_word(const char *line, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = line; (p = strstr(p, word)); p++) {
		bool left = p == line || !isalnum((unsigned char)p[-1]);
		bool right = !isalnum((unsigned char)p[n]);

		if (left && right)
			return true;
	}
	return false;
}

static bool names_offset(const char *line, long long off)
{
	char dec[32], hex[32];

	snprintf(dec, sizeof(dec), "%lld", off);
	snprintf(hex, sizeof(hex), "0x%llx", off);
	return has_word(line, dec) || has_word(line, hex);
}

/* ===== what a mount of a cut image must show ===== */

struct m_inode {
	uint64_t ino;
	uint16_t mode;
	uint64_t size;
	bool mapped;		/* its blockmap record survived */
};

struct m_name {
	uint64_t dir, child;
	char name[256];
};

struct model {
	int ninodes, nnames, npresent;
	struct m_inode inodes[MAX_INODES];
	struct m_name names[MAX_NAMES];
	struct { uint64_t ino; uint32_t index; } present[MAX_PRESENT];
};

static struct m_inode *model_inode(struct model *m, uint64_t ino)
{
	int i;

	for (i = 0; i < m->ninodes; i++)
		if (m->inodes[i].ino == ino)
			return &m->inodes[i];
	return NULL;
}

static int model_name(const struct model *m, uint64_t dir, const char *name)
{
	int i;

	for (i = 0; i < m->nnames; i++)
		if (m->names[i].dir == dir && !strcmp(m->names[i].name, name))
			return i;
	return -1;
}

static bool model_present(const struct model *m, uint64_t ino, uint32_t index)
{
	int i;

	for (i = 0; i < m->npresent; i++)
		if (m->present[i].ino == ino && m->present[i].index == index)
			return true;
	return false;
}

static void model_add_inode(struct model *m, uint64_t ino, uint16_t mode,
			    uint64_t size, bool mapped)
{
	struct m_inode *in;

	if (m->ninodes == MAX_INODES)
		return;
	in = &m->inodes[m->ninodes++];
	in->ino = ino;
	in->mode = mode;
	in->size = S_ISDIR(mode) ? 0 : size;
	in->mapped = mapped;
}

static void model_add_name(struct model *m, uint64_t dir, uint64_t child,
			   const char *name, size_t len)
{
	struct m_name *n;

	if (m->nnames == MAX_NAMES)
		return;
	n = &m->names[m->nnames++];
	n->dir = dir;
	n->child = child;
	snprintf(n->name, sizeof(n->name), "%.*s", (int)len, name);
}

static void model_add_present(struct model *m, uint64_t ino, uint32_t index)
{
	if (m->npresent == MAX_PRESENT || model_present(m, ino, index))
		return;
	m->present[m->npresent].ino = ino;
	m->present[m->npresent].index = index;
	m->npresent++;
}

/* How many records of @g lie wholly before @cut. */
static int records_before(const struct image *g, long long cut)
{
	int n = 0;

	while (n < g->nrecs && g->recs[n].off + (long long)g->recs[n].size <= cut)
		n++;
	return n;
}

/* Replay the records of @g wholly before @cut. */
static void model_build(struct model *m, const struct image *g, long long cut)
{
	int nrecs = records_before(g, cut), i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < nrecs; i++) {
		const struct rec *r = &g->recs[i];
		struct m_inode *in;
		int k;

		switch (r->type) {
		case MD_INODE:
			model_add_inode(m, le64toh(r->r.in.ino), le16toh(r->r.in.mode),
					le64toh(r->r.in.size), false);
			break;
		case MD_BLOCKMAP:
			in = model_inode(m, le64toh(r->r.bm.ino));
			if (in)
				in->mapped = true;
			break;
		case MD_DIR_ACTION:
			if (r->r.da.type == DA_ADD) {
				model_add_name(m, le64toh(r->r.da.dir),
					       le64toh(r->r.da.child), r->r.da.name,
					       r->r.da.name_len);
				break;
			}
			for (k = 0; k < m->nnames; k++)
				if (m->names[k].dir == le64toh(r->r.da.dir) &&
				    strlen(m->names[k].name) == r->r.da.name_len &&
				    !memcmp(m->names[k].name, r->r.da.name,
					    r->r.da.name_len))
					break;
			if (k < m->nnames)
				m->names[k] = m->names[--m->nnames];
			break;
		}
	}
	for (i = 0; i < g->nblks; i++) {
		const struct blk *b = &g->blks[i];
		struct m_inode *in = model_inode(m, b->ino);

		if (in && in->mapped && b->off + b->size <= cut)
			model_add_present(m, b->ino, b->index);
	}
}

/* Every block of a file: present ones read back right, others time out. */
static void check_blocks(struct __test_metadata *_metadata, const char *path,
			 const struct model *m, const struct m_inode *in,
			 const char *what)
{
	static unsigned char buf[BS], want[BS];
	uint32_t i, n = nblocks_of(in->size);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, fd) TH_LOG("%s: open %s: %s", what, path, strerror(errno));
	for (i = 0; i < n; i++) {
		size_t len = block_len(in->size, i);
		ssize_t got = pread(fd, buf, len, (off_t)i * BS);
		int err = got < 0 ? errno : 0;

		if (model_present(m, in->ino, i)) {
			gen(in->ino, i, want, len);
			EXPECT_EQ((ssize_t)len, got)
				TH_LOG("%s: %s block %u: %s", what, path, i,
				       got < 0 ? strerror(err) : "short read");
			if (got == (ssize_t)len)
				EXPECT_EQ(0, memcmp(buf, want, len))
					TH_LOG("%s: %s block %u: wrong data", what,
					       path, i);
		} else {
			EXPECT_EQ(-1, got)
				TH_LOG("%s: %s block %u should be absent, read %zd bytes",
				       what, path, i, got);
			if (got < 0)
				EXPECT_EQ(ETIME, err)
					TH_LOG("%s: %s absent block %u: %s, not ETIME",
					       what, path, i, strerror(err));
		}
	}
	close(fd);
}

static void check_dir(struct __test_metadata *_metadata, const char *path,
		      uint64_t dir, struct model *m, bool *seen, const char *what,
		      int depth)
{
	char sub[PATH_MAX];
	struct dirent *de;
	int i, listed = 0, expected = 0;
	DIR *d = opendir(path);

	ASSERT_NE(NULL, d) TH_LOG("%s: opendir %s: %s", what, path, strerror(errno));
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (dir == ROOT_INO && !strcmp(de->d_name, ".cmd"))
			continue;
		listed++;
		EXPECT_LE(0, model_name(m, dir, de->d_name))
			TH_LOG("%s: unexpected name %s/%s", what, path, de->d_name);
	}
	closedir(d);
	for (i = 0; i < m->nnames; i++)
		expected += m->names[i].dir == dir;
	EXPECT_EQ(expected, listed)
		TH_LOG("%s: %s lists %d names, expected %d", what, path, listed,
		       expected);

	for (i = 0; i < m->nnames; i++) {
		const struct m_name *n = &m->names[i];
		struct m_inode *in = model_inode(m, n->child);
		struct stat st;

		if (n->dir != dir)
			continue;
		ASSERT_NE(NULL, in) TH_LOG("%s: name %s of no inode", what, n->name);
		snprintf(sub, sizeof(sub), "%s/%s", path, n->name);
		ASSERT_EQ(0, lstat(sub, &st))
			TH_LOG("%s: %s: %s", what, sub, strerror(errno));
		EXPECT_EQ(n->child, (uint64_t)st.st_ino)
			TH_LOG("%s: %s is inode %llu, expected %llu", what, sub,
			       (unsigned long long)st.st_ino,
			       (unsigned long long)n->child);
		if (S_ISDIR(in->mode)) {
			EXPECT_TRUE(S_ISDIR(st.st_mode))
				TH_LOG("%s: %s is not a directory", what, sub);
			if (S_ISDIR(st.st_mode) && depth < 8)
				check_dir(_metadata, sub, n->child, m, seen, what,
					  depth + 1);
			continue;
		}
		EXPECT_TRUE(S_ISREG(st.st_mode))
			TH_LOG("%s: %s is not a regular file", what, sub);
		EXPECT_EQ((long long)in->size, (long long)st.st_size)
			TH_LOG("%s: size of %s", what, sub);
		if (!seen[in - m->inodes]) {
			seen[in - m->inodes] = true;
			check_blocks(_metadata, sub, m, in, what);
		}
	}
}

/* The mounted tree is the model's: names, kinds, sizes, inodes, blocks. */
static void check_tree(struct __test_metadata *_metadata, const char *mnt,
		       struct model *m, const char *what)
{
	bool seen[MAX_INODES] = { false };

	check_dir(_metadata, mnt, ROOT_INO, m, seen, what, 0);
}

/* ===== the fixture: a temp dir, a mount point, the golden image ===== */

FIXTURE(images) {
	char dir[64];
	char mnt[96];
	char path[96];		/* the image under test */
	uint64_t d, f1, f2, f3, e;
	struct image *g;	/* the golden image */
};

static void build_golden(struct __test_metadata *_metadata,
			 FIXTURE_DATA(images) *self)
{
	const struct wblk b1[] = {
		{ 0, 0, BS, false }, { 0, 1, BS, true },
	};
	const struct wblk b2[] = {
		{ 0, 1, BS / 2, false }, { 0, 5, 100, false },
	};
	const struct wblk b3[] = {
		{ 0, 0, BS, false }, { 0, 3, BS, false },
	};
	struct wblk w[2];
	int cmd;

	ASSERT_EQ(0, image_write(self->path, NULL, 0));
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd) TH_LOG(".cmd: %s", strerror(errno));

	ASSERT_EQ(0, new_file(cmd, S_IFDIR | 0555, 0, &self->d));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO,
			     self->d, "dir"));
	ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, F1_SIZE, &self->f1));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO,
			     self->f1, "f1"));
	memcpy(w, b1, sizeof(w));
	w[0].ino = self->f1;
	w[1].ino = self->f1;
	ASSERT_EQ(0, write_blocks(cmd, w, 2));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, self->d,
			     self->f1, "link"));
	ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, F2_SIZE, &self->f2));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, self->d,
			     self->f2, "f2"));
	memcpy(w, b2, sizeof(w));
	w[0].ino = self->f2;
	w[1].ino = self->f1;
	ASSERT_EQ(0, write_blocks(cmd, w, 2));
	ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, F3_SIZE, &self->f3));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO,
			     self->f3, "gone"));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_REMOVE_DIR_ENTRY, ROOT_INO,
			     self->f3, "gone"));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO,
			     self->f3, "f3"));
	memcpy(w, b3, sizeof(w));
	w[0].ino = self->f3;
	w[1].ino = self->f1;
	ASSERT_EQ(0, write_blocks(cmd, w, 2));
	ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, 0, &self->e));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, self->d,
			     self->e, "empty"));
	close(cmd);
	ASSERT_EQ(0, umount_image(self->mnt));

	self->g = image_read(self->path);
	ASSERT_NE(NULL, self->g);
	ASSERT_EQ(0, image_parse(self->g))
		TH_LOG("the golden image: %s", self->g->err);
}

FIXTURE_SETUP(images)
{
	int err = load_module();

	ASSERT_EQ(0, err) TH_LOG("loading %s: %s", MODULE_PATH, strerror(-err));
	/* No "incfs" in these names: LOG_TAG counts the module's lines. */
	snprintf(self->dir, sizeof(self->dir), "/tmp/incimg.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->mnt, sizeof(self->mnt), "%s/mnt", self->dir);
	snprintf(self->path, sizeof(self->path), "%s/image", self->dir);
	ASSERT_EQ(0, mkdir(self->mnt, 0755));
	build_golden(_metadata, self);
}

FIXTURE_TEARDOWN(images)
{
	umount2(self->mnt, MNT_DETACH);
	unlink(self->path);
	rmdir(self->mnt);
	rmdir(self->dir);
	image_free(self->g);
}

/* ===== the golden image as the module wrote it ===== */

/* The layout: the structures above match what the module wrote. */
TEST_F(images, golden_layout)
{
	static const struct { int type; const char *name; } das[] = {
		{ DA_ADD, "dir" }, { DA_ADD, "f1" }, { DA_ADD, "link" },
		{ DA_ADD, "f2" }, { DA_ADD, "gone" }, { DA_REMOVE, "gone" },
		{ DA_ADD, "f3" }, { DA_ADD, "empty" },
	};
	const struct image *g = self->g;
	struct d_super sb;
	int i, nda = 0, ninodes = 0;

	memcpy(&sb, g->buf, sizeof(sb));
	EXPECT_EQ(INCFS_MAGIC_NUMBER, le64toh(sb.magic));
	EXPECT_EQ(1, le64toh(sb.version));
	EXPECT_EQ(32, le16toh(sb.sb_size));
	EXPECT_EQ(0, sb.flags);
	EXPECT_EQ(BS, le16toh(sb.block_size));
	ASSERT_LT(0, g->nrecs);
	EXPECT_EQ(g->recs[0].off, (long long)le64toh(sb.first_md));
	EXPECT_EQ(0, le64toh(g->recs[g->nrecs - 1].r.h.next));

	for (i = 0; i < g->nrecs; i++) {
		const struct rec *r = &g->recs[i];

		EXPECT_EQ(rec_size(r->type), r->size);
		if (r->type == MD_INODE) {
			ninodes++;
			EXPECT_EQ(0, r->r.in.flags);
			EXPECT_NE(0, le16toh(r->r.in.mode) & S_IFMT);
		}
		if (r->type == MD_DIR_ACTION) {
			ASSERT_GT(ARRAY_SIZE(das), nda);
			EXPECT_EQ(das[nda].type, r->r.da.type);
			EXPECT_EQ(strlen(das[nda].name), r->r.da.name_len);
			EXPECT_EQ(0, memcmp(das[nda].name, r->r.da.name,
					    r->r.da.name_len))
				TH_LOG("dir action %d names %.*s", nda,
				       r->r.da.name_len, r->r.da.name);
			nda++;
		}
	}
	EXPECT_EQ(ARRAY_SIZE(das), nda);
	EXPECT_EQ(5, ninodes);

	/* Inodes: numbers, sizes, kinds. */
	ASSERT_NE(NULL, find_inode(g, self->d));
	EXPECT_TRUE(S_ISDIR(le16toh(find_inode(g, self->d)->r.in.mode)));
	ASSERT_NE(NULL, find_inode(g, self->f1));
	EXPECT_EQ(F1_SIZE, le64toh(find_inode(g, self->f1)->r.in.size));
	EXPECT_TRUE(S_ISREG(le16toh(find_inode(g, self->f1)->r.in.mode)));
	ASSERT_NE(NULL, find_inode(g, self->f2));
	EXPECT_EQ(F2_SIZE, le64toh(find_inode(g, self->f2)->r.in.size));
	ASSERT_NE(NULL, find_inode(g, self->f3));
	ASSERT_NE(NULL, find_inode(g, self->e));
	EXPECT_EQ(0, le64toh(find_inode(g, self->e)->r.in.size));
	EXPECT_EQ(self->d, le64toh(find_da(g, DA_ADD, "dir")->r.da.child));
	EXPECT_EQ(ROOT_INO, le64toh(find_da(g, DA_ADD, "dir")->r.da.dir));
	EXPECT_EQ(self->d, le64toh(find_da(g, DA_ADD, "link")->r.da.dir));
	EXPECT_EQ(self->f1, le64toh(find_da(g, DA_ADD, "link")->r.da.child));

	/* Blockmaps: one per non-empty file, its area right before it. */
	ASSERT_NE(NULL, find_blockmap(g, self->f1));
	EXPECT_EQ(6, le32toh(find_blockmap(g, self->f1)->r.bm.count));
	ASSERT_NE(NULL, find_blockmap(g, self->f2));
	EXPECT_EQ(2, le32toh(find_blockmap(g, self->f2)->r.bm.count));
	ASSERT_NE(NULL, find_blockmap(g, self->f3));
	EXPECT_EQ(1, le32toh(find_blockmap(g, self->f3)->r.bm.count));
	EXPECT_EQ(NULL, find_blockmap(g, self->d));

	/* Blocks: the six delivered, the LZ4 one compressed. */
	EXPECT_EQ(6, g->nblks);
	ASSERT_NE(NULL, find_blk(g, self->f1, 0));
	EXPECT_EQ(BS, find_blk(g, self->f1, 0)->size);
	EXPECT_EQ(0, find_blk(g, self->f1, 0)->flags);
	ASSERT_NE(NULL, find_blk(g, self->f1, 1));
	EXPECT_EQ(BME_LZ4, find_blk(g, self->f1, 1)->flags);
	EXPECT_GT(BS, find_blk(g, self->f1, 1)->size);
	EXPECT_NE(NULL, find_blk(g, self->f1, 3));
	ASSERT_NE(NULL, find_blk(g, self->f1, 5));
	EXPECT_EQ(100, find_blk(g, self->f1, 5)->size);
	ASSERT_NE(NULL, find_blk(g, self->f2, 1));
	EXPECT_EQ(BS / 2, find_blk(g, self->f2, 1)->size);
	EXPECT_NE(NULL, find_blk(g, self->f3, 0));
	EXPECT_EQ(NULL, find_blk(g, self->f1, 2));
	EXPECT_EQ(NULL, find_blk(g, self->f2, 0));

	/* The stored bytes are the delivered ones. */
	for (i = 0; i < g->nblks; i++) {
		const struct blk *b = &g->blks[i];
		unsigned char want[BS], got[BS];
		size_t len = block_len(b->ino == self->f1 ? F1_SIZE :
				       b->ino == self->f2 ? F2_SIZE : F3_SIZE,
				       b->index);

		gen(b->ino, b->index, want, len);
		if (b->flags & BME_LZ4) {
			EXPECT_EQ((int)len, LZ4_decompress_safe((char *)g->buf + b->off,
								(char *)got, b->size, BS));
		} else {
			EXPECT_EQ(len, b->size);
			memcpy(got, g->buf + b->off, len);
		}
		EXPECT_EQ(0, memcmp(got, want, len))
			TH_LOG("block %u of inode %llu", b->index,
			       (unsigned long long)b->ino);
	}
}

/* gki_crc32_le() is the kernel's CRC: checked on every record and block. */
TEST_F(images, crc32_matches_kernel)
{
	const struct image *g = self->g;
	int i;

	for (i = 0; i < g->nrecs; i++)
		EXPECT_TRUE(rec_crc_ok(g, &g->recs[i]))
			TH_LOG("record at %lld: stored CRC %08x, computed %08x",
			       g->recs[i].off, le32toh(g->recs[i].r.h.crc),
			       md_crc(g->buf + g->recs[i].off, g->recs[i].size));
	for (i = 0; i < g->nblks; i++)
		EXPECT_EQ(g->blks[i].crc,
			  gki_crc32_le(0, g->buf + g->blks[i].off, g->blks[i].size))
			TH_LOG("block at %lld", g->blks[i].off);
	/* The next link is outside the CRC: linking does not change it. */
	ASSERT_LT(1, g->nrecs);
	EXPECT_NE(0, le64toh(g->recs[0].r.h.next));
}

TEST_F(images, whole_image_mounts)
{
	struct model m;

	model_build(&m, self->g, self->g->len);
	EXPECT_EQ(6, m.npresent);
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	check_tree(_metadata, self->mnt, &m, "the golden image");
	EXPECT_EQ(0, umount_image(self->mnt));
}

/* ===== cut images ===== */

/*
 * The tail of the image after @cut was lost in a crash.  It mounts with
 * the records before the cut; then new files and blocks are accepted and
 * survive another mount, and the chain of the image is whole again.
 */
static void check_cut(struct __test_metadata *_metadata,
		      FIXTURE_DATA(images) *self, long long cut)
{
	const struct image *g = self->g;
	int nrecs = records_before(g, cut), i, cmd, nw = 0, r;
	struct image *rep;
	struct model m;
	struct wblk w[NEW_BLOCKS + 1];
	char what[96];
	uint64_t n;

	snprintf(what, sizeof(what), "cut at %lld of %zu (%d records kept)", cut,
		 g->len, nrecs);
	ASSERT_EQ(0, image_write(self->path, g->buf, cut));
	r = mount_image(self->path, self->mnt);
	ASSERT_EQ(0, r) TH_LOG("%s: mount: %s", what, strerror(-r));
	model_build(&m, g, cut);
	check_tree(_metadata, self->mnt, &m, what);

	/* Add a file bigger than the lost tail, and a block of f1 if named. */
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd) TH_LOG("%s: .cmd: %s", what, strerror(errno));
	r = new_file(cmd, S_IFREG | 0555, NEW_BLOCKS * BS, &n);
	ASSERT_EQ(0, r) TH_LOG("%s: NEW_FILE after the cut: %s", what, strerror(-r));
	r = name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO, n, "added");
	ASSERT_EQ(0, r) TH_LOG("%s: ADD after the cut: %s", what, strerror(-r));
	for (i = 0; i < NEW_BLOCKS; i++)
		w[nw++] = (struct wblk){ n, i, BS, i == 1 };
	if (model_name(&m, ROOT_INO, "f1") >= 0 && !model_present(&m, self->f1, 4))
		w[nw++] = (struct wblk){ self->f1, 4, BS, false };
	r = write_blocks(cmd, w, nw);
	ASSERT_EQ(0, r) TH_LOG("%s: blocks after the cut: %s", what, strerror(-r));
	close(cmd);
	model_add_inode(&m, n, S_IFREG | 0555, NEW_BLOCKS * BS, true);
	model_add_name(&m, ROOT_INO, n, "added", 5);
	for (i = 0; i < nw; i++)
		model_add_present(&m, w[i].ino, w[i].index);
	check_tree(_metadata, self->mnt, &m, what);
	ASSERT_EQ(0, umount_image(self->mnt));

	snprintf(what, sizeof(what), "cut at %lld of %zu, remounted after additions",
		 cut, g->len);
	r = mount_image(self->path, self->mnt);
	ASSERT_EQ(0, r) TH_LOG("%s: mount: %s", what, strerror(-r));
	check_tree(_metadata, self->mnt, &m, what);
	ASSERT_EQ(0, umount_image(self->mnt));

	/* The repaired image: the old records, then the new ones, all linked. */
	rep = image_read(self->path);
	ASSERT_NE(NULL, rep);
	ASSERT_EQ(0, image_parse(rep)) TH_LOG("%s: %s", what, rep->err);
	ASSERT_LE(nrecs + 2, rep->nrecs) TH_LOG("%s", what);
	for (i = 0; i < nrecs; i++)
		EXPECT_EQ(g->recs[i].off, rep->recs[i].off)
			TH_LOG("%s: record %d moved", what, i);
	EXPECT_NE(NULL, find_inode(rep, n)) TH_LOG("%s", what);
	EXPECT_NE(NULL, find_da(rep, DA_ADD, "added")) TH_LOG("%s", what);
	/* Entries whose data was cut off were cleared, not left dangling. */
	for (i = 0; i < g->nblks; i++) {
		const struct blk *b = &g->blks[i];
		static const struct d_bme zero;
		const struct m_inode *in = model_inode(&m, b->ino);

		if (!in || !in->mapped || b->off + b->size <= cut ||
		    b->pos + (long long)sizeof(zero) > cut)
			continue;
		EXPECT_EQ(0, memcmp(rep->buf + b->pos, &zero, sizeof(zero)))
			TH_LOG("%s: the entry of block %u of inode %llu still points at %lld",
			       what, b->index, (unsigned long long)b->ino, b->off);
	}
	image_free(rep);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* Sort and deduplicate; keep cuts inside the image after the superblock. */
static int cuts_finish(const struct image *g, long long *c, int n)
{
	int i, k = 0;

	qsort(c, n, sizeof(*c), cmp_ll);
	for (i = 0; i < n; i++)
		if (c[i] >= (long long)sizeof(struct d_super) &&
		    c[i] <= (long long)g->len && (!k || c[k - 1] != c[i]))
			c[k++] = c[i];
	return k;
}

static void run_cuts(struct __test_metadata *_metadata,
		     FIXTURE_DATA(images) *self, long long *cuts, int n)
{
	int i;

	n = cuts_finish(self->g, cuts, n);
	ASSERT_LT(3, n);
	TH_LOG("%d cuts of a %zu-byte image with %d records and %d blocks", n,
	       self->g->len, self->g->nrecs, self->g->nblks);
	for (i = 0; i < n; i++)
		check_cut(_metadata, self, cuts[i]);
}

/* At the start of every record, area and data block, and at the end. */
TEST_F_TIMEOUT(images, cut_at_record_boundaries, 300)
{
	const struct image *g = self->g;
	long long cuts[MAX_CUTS];
	int i, n = 0;

	for (i = 0; i < g->nrecs; i++) {
		cuts[n++] = g->recs[i].off;
		if (g->recs[i].type == MD_BLOCKMAP)
			cuts[n++] = le64toh(g->recs[i].r.bm.base);
	}
	for (i = 0; i < g->nblks; i++)
		cuts[n++] = g->blks[i].off;
	cuts[n++] = sizeof(struct d_super);
	cuts[n++] = g->len;
	run_cuts(_metadata, self, cuts, n);
}

/* Inside the header of every record, and after its header. */
TEST_F_TIMEOUT(images, cut_inside_records, 300)
{
	const struct image *g = self->g;
	long long cuts[MAX_CUTS];
	int i, n = 0;

	for (i = 0; i < g->nrecs; i++) {
		const struct rec *r = &g->recs[i];

		cuts[n++] = r->off + 1;
		cuts[n++] = r->off + OFF_PREV;
		cuts[n++] = r->off + sizeof(struct d_hdr) +
			    (r->size - sizeof(struct d_hdr)) / 2;
		cuts[n++] = r->off + r->size - 1;
	}
	run_cuts(_metadata, self, cuts, n);
}

/* Inside every stored block and every blockmap area. */
TEST_F_TIMEOUT(images, cut_inside_data, 300)
{
	const struct image *g = self->g;
	long long cuts[MAX_CUTS];
	int i, n = 0;

	for (i = 0; i < g->nblks; i++) {
		cuts[n++] = g->blks[i].off + 1;
		cuts[n++] = g->blks[i].off + g->blks[i].size / 2;
		cuts[n++] = g->blks[i].off + g->blks[i].size - 1;
	}
	for (i = 0; i < g->nrecs; i++) {
		const struct rec *r = &g->recs[i];
		long long base = le64toh(r->r.bm.base);

		if (r->type != MD_BLOCKMAP || !r->r.bm.count)
			continue;
		cuts[n++] = base + 1;
		cuts[n++] = base + le32toh(r->r.bm.count) * sizeof(struct d_bme) / 2;
	}
	run_cuts(_metadata, self, cuts, n);
}

/*
 * Cut inside the superblock, before its first link was set: the bytes are
 * those of a fresh superblock, and the image starts again empty.
 */
TEST_F(images, cut_inside_fresh_superblock)
{
	static const long long cuts[] = { 0, 1, 8, 16, OFF_FIRST };
	const struct image *g = self->g;
	struct d_super fresh = {
		.magic = htole64(INCFS_MAGIC_NUMBER),
		.version = htole64(1),
		.sb_size = htole16(sizeof(struct d_super)),
		.block_size = htole16(BS),
	};
	int i;

	ASSERT_EQ(0, memcmp(g->buf, &fresh, OFF_FIRST));
	for (i = 0; i < ARRAY_SIZE(cuts); i++)
		check_cut(_metadata, self, cuts[i]);
}

/* ===== corrupted images: refused with an errno and a log line ===== */

/*
 * Mounting @im fails with @err, and incfs logged one line naming @off (or
 * @alt, when two offsets describe the fault equally well).
 */
static void expect_refused(struct __test_metadata *_metadata,
			   FIXTURE_DATA(images) *self, const struct image *im,
			   int err, long long off, long long alt,
			   const char *what)
{
	char line[512] = "";
	int klog, lines, r;

	ASSERT_EQ(0, image_write(self->path, im->buf, im->len));
	klog = klog_open();
	ASSERT_LE(0, klog) TH_LOG("/dev/kmsg: %s", strerror(errno));
	r = mount_image(self->path, self->mnt);
	if (!r)
		umount_image(self->mnt);
	lines = klog_new_lines(klog, LOG_TAG, line, sizeof(line));
	close(klog);
	EXPECT_EQ(-err, r)
		TH_LOG("%s: mount gave %s, not %s", what,
		       r ? strerror(-r) : "success", strerror(err));
	EXPECT_EQ(1, lines)
		TH_LOG("%s: %d new kernel log lines with \"%s\"", what, lines,
		       LOG_TAG);
	if (lines)
		EXPECT_TRUE(names_offset(line, off) || names_offset(line, alt))
			TH_LOG("%s: the log line does not name offset %lld: %s",
			       what, off, line);
}

TEST_F(images, bad_magic)
{
	struct image *im = image_copy(self->g);

	ASSERT_NE(NULL, im);
	im->buf[0] ^= 0xff;
	expect_refused(_metadata, self, im, EINVAL, 0, 0, "magic");
	im->buf[0] ^= 0xff;
	im->buf[7] = 1;
	expect_refused(_metadata, self, im, EINVAL, 0, 0, "magic's last byte");
	image_free(im);
}

TEST_F(images, bad_version)
{
	struct image *im = image_copy(self->g);

	ASSERT_NE(NULL, im);
	put64(im->buf + offsetof(struct d_super, version), 2);
	expect_refused(_metadata, self, im, EINVAL, 0, 0, "version 2");
	put64(im->buf + offsetof(struct d_super, version), 0);
	expect_refused(_metadata, self, im, EINVAL, 0, 0, "version 0");
	image_free(im);
}

TEST_F(images, bad_superblock_sizes)
{
	struct image *im = image_copy(self->g);

	ASSERT_NE(NULL, im);
	put16(im->buf + offsetof(struct d_super, sb_size), 64);
	expect_refused(_metadata, self, im, EINVAL, 0, 0, "superblock size");
	put16(im->buf + offsetof(struct d_super, sb_size), 32);
	put16(im->buf + offsetof(struct d_super, block_size), 1024);
	expect_refused(_metadata, self, im, EINVAL, 0, 0, "block size");
	image_free(im);
}

/* A flipped byte in a record's body, and in its stored CRC. */
TEST_F(images, metadata_crc_mismatch)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;

	ASSERT_NE(NULL, im);
	r = find_da(im, DA_ADD, "f1");
	ASSERT_NE(NULL, r);
	im->buf[r->off + offsetof(struct d_dir_action, name)] ^= 0x20;
	expect_refused(_metadata, self, im, EBADMSG, r->off, r->off,
		       "flipped name byte");
	im->buf[r->off + offsetof(struct d_dir_action, name)] ^= 0x20;

	r = find_inode(im, self->f2);
	ASSERT_NE(NULL, r);
	im->buf[r->off + OFF_CRC + 1] ^= 0x01;
	expect_refused(_metadata, self, im, EBADMSG, r->off, r->off,
		       "flipped CRC byte");
	im->buf[r->off + OFF_CRC + 1] ^= 0x01;

	/* The prev link is covered too. */
	r = find_inode(im, self->f3);
	ASSERT_NE(NULL, r);
	im->buf[r->off + OFF_PREV] ^= 0x04;
	expect_refused(_metadata, self, im, EBADMSG, r->off, r->off,
		       "flipped prev byte");
	image_free(im);
}

TEST_F(images, next_link_backwards)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;
	long long to;
	int i;

	ASSERT_NE(NULL, im);
	r = find_da(im, DA_ADD, "link");
	i = rec_index(im, r);
	ASSERT_LE(2, i);
	to = im->recs[i - 2].off;
	put64(im->buf + r->off + OFF_NEXT, to);
	expect_refused(_metadata, self, im, EILSEQ, to, r->off,
		       "link to two records back");
	/* Into the middle of the record holding the link. */
	put64(im->buf + r->off + OFF_NEXT, r->off + 100);
	expect_refused(_metadata, self, im, EILSEQ, r->off + 100, r->off,
		       "link into its own record");
	image_free(im);
}

TEST_F(images, next_link_to_itself)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;

	ASSERT_NE(NULL, im);
	r = find_inode(im, self->f2);
	ASSERT_NE(NULL, r);
	put64(im->buf + r->off + OFF_NEXT, r->off);
	expect_refused(_metadata, self, im, EILSEQ, r->off, r->off, "self link");
	image_free(im);
}

TEST_F(images, link_into_superblock)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;

	ASSERT_NE(NULL, im);
	r = find_da(im, DA_ADD, "f2");
	ASSERT_NE(NULL, r);
	put64(im->buf + r->off + OFF_NEXT, 8);
	expect_refused(_metadata, self, im, EILSEQ, 8, r->off,
		       "record linking into the superblock");
	put64(im->buf + r->off + OFF_NEXT, r[1].off);

	put64(im->buf + OFF_FIRST, 16);
	expect_refused(_metadata, self, im, EILSEQ, 16, 0,
		       "superblock linking into itself");
	image_free(im);
}

TEST_F(images, prev_link_mismatch)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;
	int i;

	ASSERT_NE(NULL, im);
	r = find_da(im, DA_ADD, "f2");
	i = rec_index(im, r);
	ASSERT_LE(2, i);
	ASSERT_TRUE(rec_crc_ok(im, r));
	put64(im->buf + r->off + OFF_PREV, im->recs[i - 2].off);
	fix_crc(im, r);
	expect_refused(_metadata, self, im, EILSEQ, r->off, r->off,
		       "prev link two records back");
	put64(im->buf + r->off + OFF_PREV, 0);
	fix_crc(im, r);
	expect_refused(_metadata, self, im, EILSEQ, r->off, r->off,
		       "prev link 0 on a later record");
	image_free(im);
}

TEST_F(images, oversized_record_size)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;

	ASSERT_NE(NULL, im);
	r = find_da(im, DA_ADD, "f3");
	ASSERT_NE(NULL, r);
	put16(im->buf + r->off + OFF_SIZE, 0xffff);
	expect_refused(_metadata, self, im, EINVAL, r->off, r->off,
		       "record size 65535");
	put16(im->buf + r->off + OFF_SIZE, sizeof(struct d_dir_action) + 1);
	fix_crc(im, r);
	expect_refused(_metadata, self, im, EINVAL, r->off, r->off,
		       "record size 297");
	image_free(im);
}

TEST_F(images, unknown_record_type)
{
	struct image *im = image_copy(self->g);
	const struct rec *r;

	ASSERT_NE(NULL, im);
	r = find_inode(im, self->f3);
	ASSERT_NE(NULL, r);
	ASSERT_TRUE(rec_crc_ok(im, r));
	im->buf[r->off] = 9;
	fix_crc(im, r);
	expect_refused(_metadata, self, im, EINVAL, r->off, r->off,
		       "record type 9");
	image_free(im);
}

TEST_F(images, blockmap_overlaps_metadata)
{
	struct image *im = image_copy(self->g);
	const struct rec *bm, *in;

	ASSERT_NE(NULL, im);
	bm = find_blockmap(im, self->f1);
	in = find_inode(im, self->f1);
	ASSERT_NE(NULL, bm);
	ASSERT_NE(NULL, in);
	ASSERT_TRUE(rec_crc_ok(im, bm));
	/* Over the end of the inode record before it. */
	put64(im->buf + bm->off + offsetof(struct d_blockmap, base),
	      in->off + in->size - 1);
	fix_crc(im, bm);
	expect_refused(_metadata, self, im, EINVAL, bm->off, bm->off,
		       "blockmap area over the inode record");
	/* One byte over its own record. */
	put64(im->buf + bm->off + offsetof(struct d_blockmap, base),
	      bm->off - (long long)le32toh(bm->r.bm.count) * sizeof(struct d_bme) + 1);
	fix_crc(im, bm);
	expect_refused(_metadata, self, im, EINVAL, bm->off, bm->off,
		       "blockmap area over its record");
	image_free(im);
}

TEST_F(images, block_count_mismatch)
{
	struct image *im = image_copy(self->g);
	const struct rec *bm;

	ASSERT_NE(NULL, im);
	bm = find_blockmap(im, self->f1);
	ASSERT_NE(NULL, bm);
	ASSERT_TRUE(rec_crc_ok(im, bm));
	/* One block short: the area still fits before the record. */
	put32(im->buf + bm->off + offsetof(struct d_blockmap, count), 5);
	fix_crc(im, bm);
	expect_refused(_metadata, self, im, EINVAL, bm->off, bm->off,
		       "5 blocks for a 6-block file");
	image_free(im);
}

/* The inode's size changed instead: its blockmap no longer matches. */
TEST_F(images, inode_size_mismatch)
{
	struct image *im = image_copy(self->g);
	const struct rec *bm, *in;

	ASSERT_NE(NULL, im);
	bm = find_blockmap(im, self->f2);
	in = find_inode(im, self->f2);
	ASSERT_NE(NULL, bm);
	ASSERT_NE(NULL, in);
	ASSERT_TRUE(rec_crc_ok(im, in));
	put64(im->buf + in->off + offsetof(struct d_inode, size), 2 * BS + 1);
	fix_crc(im, in);
	expect_refused(_metadata, self, im, EINVAL, bm->off, in->off,
		       "2-block map of a 3-block file");
	image_free(im);
}

/* ===== inode numbers ===== */

/* The largest inode number an image may hold (format.h). */
#define MAX_INO		0xffffffffULL

/* Give inode @from number @to in every record that names it. */
static void renumber(struct image *im, uint64_t from, uint64_t to)
{
	int i;

	for (i = 0; i < im->nrecs; i++) {
		struct rec *r = &im->recs[i];
		size_t at;

		if (r->type == MD_INODE && le64toh(r->r.in.ino) == from)
			at = offsetof(struct d_inode, ino);
		else if (r->type == MD_BLOCKMAP && le64toh(r->r.bm.ino) == from)
			at = offsetof(struct d_blockmap, ino);
		else if (r->type == MD_DIR_ACTION && le64toh(r->r.da.dir) == from)
			at = offsetof(struct d_dir_action, dir);
		else if (r->type == MD_DIR_ACTION && le64toh(r->r.da.child) == from)
			at = offsetof(struct d_dir_action, child);
		else
			continue;
		put64(im->buf + r->off + at, to);
		fix_crc(im, r);
	}
}

/* An inode number past the bound is refused, however well linked. */
TEST_F(images, inode_number_past_the_bound)
{
	static const uint64_t bad[] = { MAX_INO + 1, UINT64_MAX - 1, UINT64_MAX };
	const struct rec *in;
	struct image *im;
	char what[64];
	int i;

	for (i = 0; i < 3; i++) {
		im = image_copy(self->g);
		ASSERT_NE(NULL, im);
		in = find_inode(im, self->e);
		ASSERT_NE(NULL, in);
		renumber(im, self->e, bad[i]);
		snprintf(what, sizeof(what), "inode number %llu",
			 (unsigned long long)bad[i]);
		expect_refused(_metadata, self, im, EINVAL, in->off, in->off,
			       what);
		image_free(im);
	}
}

/*
 * An image made before the read log may name a root file ".log": it keeps
 * the file, which reads as before, and the mount has no read log (a kernel
 * line says so).  Made by renaming a root ".lof" in the image's record.
 */
TEST_F(images, a_root_file_named_log_keeps_its_name_without_a_read_log)
{
	struct wblk b = { 0, 0, BS, false };
	struct d_dir_action *da;
	unsigned char expect[BS], got[BS];
	char path[PATH_MAX], img[128], last[256] = "";
	const struct rec *r;
	struct image *im;
	uint64_t ino;
	int cmd, fd, klog;

	snprintf(img, sizeof(img), "%s/log-image", self->dir);
	ASSERT_EQ(0, image_write(img, NULL, 0));
	ASSERT_EQ(0, mount_image(img, self->mnt));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, BS, &ino));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO, ino, ".lof"));
	b.ino = ino;
	ASSERT_EQ(0, write_blocks(cmd, &b, 1));
	close(cmd);
	ASSERT_EQ(0, umount_image(self->mnt));

	im = image_read(img);
	ASSERT_NE(NULL, im);
	ASSERT_EQ(0, image_parse(im)) TH_LOG("%s", im->err);
	r = find_da(im, DA_ADD, ".lof");
	ASSERT_NE(NULL, r);
	da = (struct d_dir_action *)(im->buf + r->off);
	da->name[3] = 'g';
	fix_crc(im, r);
	ASSERT_EQ(0, image_write(img, im->buf, im->len));
	image_free(im);

	klog = klog_open();
	ASSERT_LE(0, klog);
	ASSERT_EQ(0, mount_image(img, self->mnt));
	EXPECT_EQ(1, klog_new_lines(klog, "no read log", last, sizeof(last)));
	close(klog);
	snprintf(path, sizeof(path), "%s/.log", self->mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("open %s: %s", path, strerror(errno));
	gen(ino, 0, expect, BS);
	EXPECT_EQ(BS, pread(fd, got, BS, 0));
	EXPECT_EQ(0, memcmp(expect, got, BS));
	EXPECT_EQ(-1, ioctl(fd, INCFS_IOC_READ_LOG_STATE, &(struct incfs_read_log_state){}));
	EXPECT_EQ(ENOTTY, errno);
	close(fd);
	EXPECT_EQ(0, umount_image(self->mnt));
	unlink(img);
}

/*
 * NEW_FILE after the image's largest number: the last number is given,
 * the one past it refused with ENOSPC before anything is written, and the
 * image still mounts (two records with one number would not).
 */
TEST_F(images, new_file_at_the_inode_bound)
{
	struct image *im = image_copy(self->g), *after;
	uint64_t ino = 0;
	int cmd;

	ASSERT_NE(NULL, im);
	renumber(im, self->e, MAX_INO - 1);
	ASSERT_EQ(0, image_write(self->path, im->buf, im->len));
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	EXPECT_EQ(0, new_file(cmd, S_IFREG | 0555, BS, &ino));
	EXPECT_EQ(MAX_INO, ino);
	EXPECT_EQ(-ENOSPC, new_file(cmd, S_IFREG | 0555, BS, &ino));
	EXPECT_EQ(-ENOSPC, new_file(cmd, S_IFDIR | 0555, 0, &ino));
	close(cmd);
	ASSERT_EQ(0, umount_image(self->mnt));

	after = image_read(self->path);
	ASSERT_NE(NULL, after);
	ASSERT_EQ(0, image_parse(after)) TH_LOG("%s", after->err);
	/* The one file's inode and blockmap records, nothing more. */
	EXPECT_EQ(im->nrecs + 2, after->nrecs);
	EXPECT_NE(NULL, find_inode(after, MAX_INO));
	image_free(after);
	EXPECT_EQ(0, mount_image(self->path, self->mnt));
	EXPECT_EQ(0, umount_image(self->mnt));
	image_free(im);
}

/* ===== stored blocks with a bad CRC ===== */

static void check_bad_block(struct __test_metadata *_metadata,
			    FIXTURE_DATA(images) *self, uint32_t bad)
{
	static const uint32_t f1_blocks[] = { 0, 1, 3, 5 };
	struct image *im = image_copy(self->g);
	unsigned char buf[BS], want[BS];
	const struct blk *b;
	char path[PATH_MAX], line[512] = "", word[32], ino[32];
	int fd, klog, lines, i;
	ssize_t got;

	ASSERT_NE(NULL, im);
	b = find_blk(im, self->f1, bad);
	ASSERT_NE(NULL, b);
	im->buf[b->off + b->size / 2] ^= 0x5a;
	ASSERT_EQ(0, image_write(self->path, im->buf, im->len));
	image_free(im);
	ASSERT_EQ(0, mount_image(self->path, self->mnt));

	snprintf(path, sizeof(path), "%s/f1", self->mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	klog = klog_open();
	ASSERT_LE(0, klog) TH_LOG("/dev/kmsg: %s", strerror(errno));
	got = pread(fd, buf, block_len(F1_SIZE, bad), (off_t)bad * BS);
	EXPECT_EQ(-1, got);
	EXPECT_EQ(EIO, errno) TH_LOG("block %u: %s", bad, strerror(errno));
	lines = klog_new_lines(klog, LOG_TAG, line, sizeof(line));
	if (!lines) {
		/* The line is rate-limited: an earlier suite may have used
		 * up the burst.  Wait out the interval (5 s) and read again.
		 */
		sleep(6);
		EXPECT_EQ(-1, pread(fd, buf, block_len(F1_SIZE, bad),
				    (off_t)bad * BS));
		lines = klog_new_lines(klog, LOG_TAG, line, sizeof(line));
	}
	close(klog);
	EXPECT_LT(0, lines) TH_LOG("no kernel log line for the bad block");
	if (lines) {
		snprintf(word, sizeof(word), "block %u", bad);
		snprintf(ino, sizeof(ino), "%llu", (unsigned long long)self->f1);
		EXPECT_TRUE(has_word(line, word)) TH_LOG("no \"%s\" in: %s", word, line);
		EXPECT_TRUE(has_word(line, "f1") || has_word(line, "link") ||
			    has_word(line, ino))
			TH_LOG("the line does not name the file: %s", line);
	}
	/* Still bad, and the other blocks are fine. */
	EXPECT_EQ(-1, pread(fd, buf, block_len(F1_SIZE, bad), (off_t)bad * BS));
	for (i = 0; i < ARRAY_SIZE(f1_blocks); i++) {
		uint32_t k = f1_blocks[i];
		size_t len = block_len(F1_SIZE, k);

		if (k == bad)
			continue;
		gen(self->f1, k, want, len);
		EXPECT_EQ((ssize_t)len, pread(fd, buf, len, (off_t)k * BS))
			TH_LOG("block %u: %s", k, strerror(errno));
		EXPECT_EQ(0, memcmp(buf, want, len)) TH_LOG("block %u", k);
	}
	close(fd);

	snprintf(path, sizeof(path), "%s/dir/f2", self->mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	gen(self->f2, 1, want, BS / 2);
	EXPECT_EQ(BS / 2, pread(fd, buf, BS / 2, BS));
	EXPECT_EQ(0, memcmp(buf, want, BS / 2));
	close(fd);
	EXPECT_EQ(0, umount_image(self->mnt));
}

TEST_F(images, data_crc_mismatch)
{
	check_bad_block(_metadata, self, 5);
}

TEST_F(images, data_crc_mismatch_lz4)
{
	check_bad_block(_metadata, self, 1);
}

/* ===== in-place writes torn by a crash ===== */

/*
 * A blockmap entry (14 bytes) and a record's next link (8 bytes) are
 * rewritten in place, zeros to a value.  Where one crosses a 512-byte
 * sector boundary, a crash can leave one side written and the other still
 * zero (README.md, "Delivery and durability").  A torn entry is absent,
 * logged, and takes the block again; a torn link ends the chain there.
 */
#define SECTOR		512
#define BIG_BLOCKS	300		/* 4,200 bytes of entries: 8 boundaries */
#define ESIZE		sizeof(struct d_bme)

/* A new image with one file, "big", of BIG_BLOCKS blocks, all delivered. */
static void build_big(struct __test_metadata *_metadata,
		      FIXTURE_DATA(images) *self, uint64_t *ino)
{
	struct wblk w[16];
	uint32_t b;
	int cmd, i, n;

	ASSERT_EQ(0, image_write(self->path, NULL, 0));
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, (uint64_t)BIG_BLOCKS * BS, ino));
	ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO, *ino, "big"));
	for (b = 0; b < BIG_BLOCKS; b += n) {
		n = BIG_BLOCKS - b < 16 ? BIG_BLOCKS - b : 16;
		for (i = 0; i < n; i++)
			w[i] = (struct wblk){ *ino, b + i, BS, false };
		ASSERT_EQ(0, write_blocks(cmd, w, n));
	}
	close(cmd);
	ASSERT_EQ(0, umount_image(self->mnt));
}

/* Block @b of "big" reads back whole. */
static void expect_big_block(struct __test_metadata *_metadata,
			     FIXTURE_DATA(images) *self, uint64_t ino, uint32_t b)
{
	unsigned char buf[BS], want[BS];
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/big", self->mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	gen(ino, b, want, BS);
	EXPECT_EQ(BS, pread(fd, buf, BS, (off_t)b * BS)) TH_LOG("block %u: %s", b, strerror(errno));
	EXPECT_EQ(0, memcmp(buf, want, BS)) TH_LOG("block %u", b);
	close(fd);
}

/* The entry at @pos of the image at @path is all zero. */
static bool entry_zero(const char *path, long long pos)
{
	unsigned char e[ESIZE], zero[ESIZE] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = pread(fd, e, ESIZE, pos) == ESIZE && !memcmp(e, zero, ESIZE);
	close(fd);
	return ok;
}

/*
 * Mount an image whose entry of block @b, at @pos, is torn; see the
 * section's top.  Once the block reads as absent, its entry on disk is
 * zero: the delivery that follows writes it from zeros.
 */
static void check_torn_entry(struct __test_metadata *_metadata,
			     FIXTURE_DATA(images) *self, uint64_t ino,
			     uint32_t b, long long pos, bool *logged_read)
{
	struct wblk w = { ino, b, BS, false };
	char path[PATH_MAX], line[512] = "";
	unsigned char buf[BS];
	int fd, klog, cmd, at_mount;

	klog = klog_open();
	ASSERT_LE(0, klog);
	ASSERT_EQ(0, mount_image(self->path, self->mnt)) TH_LOG("block %u", b);
	at_mount = klog_new_lines(klog, "lost in a crash cleared", line, sizeof(line));
	snprintf(path, sizeof(path), "%s/big", self->mnt);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* Absent: the read waits for it and times out. */
	EXPECT_EQ(-1, pread(fd, buf, BS, (off_t)b * BS)) TH_LOG("block %u", b);
	EXPECT_EQ(ETIME, errno) TH_LOG("block %u: %s", b, strerror(errno));
	close(fd);
	EXPECT_TRUE(entry_zero(self->path, pos))
		TH_LOG("block %u: absent, but its torn entry at %lld is still on disk", b, pos);
	if (at_mount) {
		EXPECT_NE(NULL, strstr(line, "entry torn by a crash")) TH_LOG("%s", line);
	} else if (klog_new_lines(klog, "torn by a crash", line, sizeof(line))) {
		*logged_read = true;
	}
	close(klog);

	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	EXPECT_EQ(0, write_blocks(cmd, &w, 1)) TH_LOG("block %u again", b);
	close(cmd);
	expect_big_block(_metadata, self, ino, b);
	expect_big_block(_metadata, self, ino, (b + 1) % BIG_BLOCKS);
	ASSERT_EQ(0, umount_image(self->mnt));
	/* The entry written again replaced the torn bytes. */
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	expect_big_block(_metadata, self, ino, b);
	ASSERT_EQ(0, umount_image(self->mnt));
}

TEST_F_TIMEOUT(images, torn_blockmap_entries, 300)
{
	bool logged_read = false;
	struct image *g, *im;
	uint64_t ino;
	int i, k, side, tested = 0;

	build_big(_metadata, self, &ino);
	g = image_read(self->path);
	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, image_parse(g)) TH_LOG("%s", g->err);
	for (i = 0; i < g->nblks; i++) {
		const struct blk *b = &g->blks[i];

		k = SECTOR - b->pos % SECTOR;
		if (b->ino != ino || k >= (int)ESIZE)
			continue;
		for (side = 0; side < 2; side++) {
			im = image_copy(g);
			ASSERT_NE(NULL, im);
			if (side)
				memset(im->buf + b->pos, 0, k);
			else
				memset(im->buf + b->pos + k, 0, ESIZE - k);
			if (!memcmp(im->buf, g->buf, g->len)) {
				image_free(im);
				continue;	/* that side held zeros */
			}
			ASSERT_EQ(0, image_write(self->path, im->buf, im->len));
			image_free(im);
			check_torn_entry(_metadata, self, ino, b->index, b->pos, &logged_read);
			tested++;
		}
	}
	image_free(g);
	EXPECT_LE(8, tested);
	/* Rate-limited: the first entries found torn by a read are logged. */
	EXPECT_TRUE(logged_read);
}

/* ===== memory follows what an image holds ===== */

/*
 * A hand-made image written straight to a file: records appended and
 * linked as the module appends them, blockmap areas left as holes (a
 * sparse file), so that an image can claim files of many gigabytes.
 */
struct craft {
	int fd;
	long long len, last, link_pos;
};

static int craft_start(struct craft *c, const char *path)
{
	struct d_super sb = {
		.magic = htole64(INCFS_MAGIC_NUMBER), .version = htole64(1),
		.sb_size = htole16(sizeof(sb)), .block_size = htole16(BS),
	};

	c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (c->fd < 0)
		return -errno;
	c->len = sizeof(sb);
	c->last = 0;
	c->link_pos = OFF_FIRST;
	return pwrite(c->fd, &sb, sizeof(sb), 0) == sizeof(sb) ? 0 : -EIO;
}

static int craft_md(struct craft *c, void *rec, size_t size, uint8_t type)
{
	unsigned char *r = rec, link[8];

	r[0] = type;
	put16(r + OFF_SIZE, size);
	put64(r + OFF_PREV, c->last);
	put64(r + OFF_NEXT, 0);
	put32(r + OFF_CRC, md_crc(r, size));
	put64(link, c->len);
	if (pwrite(c->fd, r, size, c->len) != (ssize_t)size ||
	    pwrite(c->fd, link, 8, c->link_pos) != 8)
		return -EIO;
	c->last = c->len;
	c->link_pos = c->len + OFF_NEXT;
	c->len += size;
	return 0;
}

/* An inode of @size bytes and, with @mapped, its (sparse) blockmap. */
static int craft_file(struct craft *c, uint64_t ino, uint64_t size, bool mapped)
{
	struct d_inode in = { .ino = htole64(ino), .size = htole64(size),
			      .mode = htole16(S_IFREG | 0444) };
	struct d_blockmap bm = { .ino = htole64(ino), .count = htole32(nblocks_of(size)) };
	int err = craft_md(c, &in, sizeof(in), MD_INODE);

	if (err || !mapped)
		return err;
	bm.base = htole64(c->len);
	c->len += (long long)nblocks_of(size) * sizeof(struct d_bme);
	return craft_md(c, &bm, sizeof(bm), MD_BLOCKMAP);
}

static int craft_end(struct craft *c)
{
	int err = ftruncate(c->fd, c->len) ? -errno : 0;

	close(c->fd);
	return err;
}

/* A name @name for @child in the root. */
static int craft_name(struct craft *c, uint64_t child, const char *name)
{
	struct d_dir_action da = { .dir = htole64(ROOT_INO), .child = htole64(child),
				   .type = DA_ADD, .name_len = strlen(name) };

	memcpy(da.name, name, da.name_len);
	return craft_md(c, &da, sizeof(da), MD_DIR_ACTION);
}

/*
 * The module places records so that no next link crosses a sector
 * boundary (incfs_md_pos()): none of 300 records' links does.
 */
TEST_F(images, links_never_cross_a_sector)
{
	struct image *g;
	char name[16];
	uint64_t ino;
	int cmd, i;

	ASSERT_EQ(0, image_write(self->path, NULL, 0));
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	for (i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "n%03d", i);
		ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, i * 100, &ino));
		ASSERT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO, ino, name));
	}
	close(cmd);
	ASSERT_EQ(0, umount_image(self->mnt));
	g = image_read(self->path);
	ASSERT_NE(NULL, g);
	ASSERT_EQ(0, image_parse(g)) TH_LOG("%s", g->err);
	ASSERT_LE(300, g->nrecs);
	for (i = 0; i < g->nrecs; i++) {
		long long link = g->recs[i].off + OFF_NEXT;

		EXPECT_EQ(link / SECTOR, (link + 7) / SECTOR)
			TH_LOG("record %d at %lld: its link crosses a sector boundary",
			       i, g->recs[i].off);
	}
	image_free(g);
}

/*
 * An image written before that rule, whose link to the record naming "b"
 * crosses a sector boundary, torn by a crash on either side: the mount
 * has every record before the link ("a", not "b"), logs it and clears the
 * link; the image then takes more and mounts again.
 */
TEST_F(images, torn_link)
{
	char path[PATH_MAX], line[512] = "";
	unsigned char *whole;
	long long link, b_off;
	struct craft c;
	struct stat st;
	size_t len;
	uint64_t ino;
	int side, klog, cmd;

	ASSERT_EQ(0, craft_start(&c, self->path));
	ASSERT_EQ(0, craft_file(&c, 10, 0, false));
	ASSERT_EQ(0, craft_file(&c, 11, 0, false));
	/* "a"'s record placed so that its link starts one byte before 1024. */
	c.len = 1024 - 1 - OFF_NEXT;
	ASSERT_EQ(0, craft_name(&c, 10, "a"));
	link = c.last + OFF_NEXT;
	b_off = c.len;
	ASSERT_EQ(0, craft_name(&c, 11, "b"));
	ASSERT_EQ(0, craft_end(&c));
	/* Both sides of the boundary hold bytes of the link. */
	ASSERT_NE(0, b_off & 0xff);
	ASSERT_NE(0, b_off >> 8);
	whole = (unsigned char *)gki_read_file(self->path, &len);
	ASSERT_NE(NULL, whole);
	ASSERT_EQ(0, mount_image(self->path, self->mnt)) TH_LOG("the untorn image");
	snprintf(path, sizeof(path), "%s/b", self->mnt);
	EXPECT_EQ(0, stat(path, &st));
	ASSERT_EQ(0, umount_image(self->mnt));

	for (side = 0; side < 2; side++) {
		if (side)
			memset(whole + link, 0, 1);
		else
			memset(whole + link + 1, 0, 7);
		ASSERT_EQ(0, image_write(self->path, whole, len));
		memcpy(whole + link, &(uint64_t){ htole64(b_off) }, 8);

		klog = klog_open();
		ASSERT_LE(0, klog);
		ASSERT_EQ(0, mount_image(self->path, self->mnt)) TH_LOG("side %d", side);
		EXPECT_LT(0, klog_new_lines(klog, "its link torn", line, sizeof(line)))
			TH_LOG("side %d", side);
		close(klog);
		snprintf(path, sizeof(path), "%s/a", self->mnt);
		EXPECT_EQ(0, stat(path, &st)) TH_LOG("side %d: %s", side, path);
		snprintf(path, sizeof(path), "%s/b", self->mnt);
		EXPECT_EQ(-1, stat(path, &st)) TH_LOG("side %d: %s", side, path);
		/* The link was cleared: the image takes more, and mounts again. */
		cmd = open_cmd(self->mnt);
		ASSERT_LE(0, cmd);
		EXPECT_EQ(0, new_file(cmd, S_IFREG | 0555, 0, &ino));
		EXPECT_EQ(0, name_op(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, ROOT_INO, ino,
				     "after"));
		close(cmd);
		EXPECT_EQ(0, umount_image(self->mnt));
		ASSERT_EQ(0, mount_image(self->path, self->mnt));
		snprintf(path, sizeof(path), "%s/after", self->mnt);
		EXPECT_EQ(0, stat(path, &st)) TH_LOG("side %d", side);
		snprintf(path, sizeof(path), "%s/a", self->mnt);
		EXPECT_EQ(0, stat(path, &st)) TH_LOG("side %d", side);
		EXPECT_EQ(0, umount_image(self->mnt));
	}
	free(whole);
}

/* MemAvailable from /proc/meminfo, in KiB. */
static long long mem_available_kb(void)
{
	char *text = gki_read_file("/proc/meminfo", NULL), *p;
	long long kb = -1;

	p = text ? strstr(text, "MemAvailable:") : NULL;
	if (p)
		kb = strtoll(p + strlen("MemAvailable:"), NULL, 10);
	free(text);
	return kb;
}

/*
 * Sixteen 45-byte inode records of 64 GiB files, no blockmap: the mount
 * costs no blockmap memory (14 bytes per block would be 3.5 GiB).
 */
TEST_F(images, huge_files_without_blockmaps_cost_nothing)
{
	long long before, after;
	struct craft c;
	int i;

	ASSERT_EQ(0, craft_start(&c, self->path));
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, craft_file(&c, 10 + i, 64ULL << 30, false));
	ASSERT_EQ(0, craft_end(&c));
	before = mem_available_kb();
	ASSERT_LT(0, before);
	ASSERT_EQ(0, mount_image(self->path, self->mnt)) TH_LOG("%s", strerror(errno));
	after = mem_available_kb();
	EXPECT_LT(before - after, 16 << 10) TH_LOG("MemAvailable %lld -> %lld KiB", before, after);
	EXPECT_EQ(0, umount_image(self->mnt));
}

/*
 * Two 4 GiB files with their blockmaps (14.3 MiB each in memory): a mount
 * whose max_blockmap_mb holds one is refused with ENOSPC and a log line
 * naming the option; one that holds both mounts.
 */
TEST_F(images, blockmaps_beyond_the_mount_limit_are_refused)
{
	char line[512] = "";
	struct craft c;
	int klog;

	ASSERT_EQ(0, craft_start(&c, self->path));
	ASSERT_EQ(0, craft_file(&c, 10, 4ULL << 30, true));
	ASSERT_EQ(0, craft_file(&c, 11, 4ULL << 30, true));
	ASSERT_EQ(0, craft_end(&c));
	klog = klog_open();
	ASSERT_LE(0, klog);
	EXPECT_EQ(-ENOSPC, mount_image_opts(self->path, self->mnt, "max_blockmap_mb=20"));
	EXPECT_LT(0, klog_new_lines(klog, "max_blockmap_mb", line, sizeof(line)));
	close(klog);
	ASSERT_EQ(0, mount_image_opts(self->path, self->mnt, "max_blockmap_mb=30"));
	EXPECT_EQ(0, umount_image(self->mnt));
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	EXPECT_EQ(0, umount_image(self->mnt));
}

/*
 * NEW_FILE of a file whose blockmap would pass the mount's limit fails
 * with ENOSPC and writes nothing; smaller files still fit, and the image
 * mounts again with exactly the files that were made.
 */
TEST_F(images, new_file_beyond_the_mount_limit)
{
	/* 10,000 blocks: 140,000 bytes of blockmap; 7 fit in 1 MiB. */
	const uint64_t size = 10000ULL * BS;
	struct stat st_before, st_after;
	uint64_t ino;
	int cmd, i;

	ASSERT_EQ(0, image_write(self->path, NULL, 0));
	ASSERT_EQ(0, mount_image_opts(self->path, self->mnt, "max_blockmap_mb=1"));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	EXPECT_EQ(-ENOSPC, new_file(cmd, S_IFREG | 0555, 100000ULL * BS, &ino));
	for (i = 0; i < 7; i++)
		ASSERT_EQ(0, new_file(cmd, S_IFREG | 0555, size, &ino)) TH_LOG("file %d", i);
	ASSERT_EQ(0, stat(self->path, &st_before));
	EXPECT_EQ(-ENOSPC, new_file(cmd, S_IFREG | 0555, size, &ino));
	ASSERT_EQ(0, stat(self->path, &st_after));
	EXPECT_EQ(st_before.st_size, st_after.st_size) TH_LOG("the refused file wrote to the image");
	/* Directories and empty files have no blockmap. */
	EXPECT_EQ(0, new_file(cmd, S_IFDIR | 0555, 0, &ino));
	EXPECT_EQ(0, new_file(cmd, S_IFREG | 0555, 0, &ino));
	close(cmd);
	ASSERT_EQ(0, umount_image(self->mnt));
	ASSERT_EQ(0, mount_image_opts(self->path, self->mnt, "max_blockmap_mb=1"));
	EXPECT_EQ(0, umount_image(self->mnt));
	/* The next inode numbers follow the ones made: none was lost. */
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	cmd = open_cmd(self->mnt);
	ASSERT_LE(0, cmd);
	EXPECT_EQ(0, new_file(cmd, S_IFREG | 0555, 0, &ino));
	EXPECT_EQ((uint64_t)ROOT_INO + 10, ino);
	close(cmd);
	EXPECT_EQ(0, umount_image(self->mnt));
}

/* ===== hostile images: refused or mounted, never a crash ===== */

enum hostile {
	H_FIRST_AT_END, H_FIRST_AT_S64_MAX, H_FIRST_NEGATIVE, H_NEXT_PAST_END,
	H_BASE_HUGE, H_BME_HI_BITS, H_BME_SIZE_0, H_BME_IN_SUPERBLOCK,
	H_BME_FLAGS, H_BME_LZ4_CLEARED, H_BME_LZ4_SET, H_BME_AT_METADATA,
	H_SIZE_2_POW_44, H_MODE_SYMLINK, H_NAME_EMPTY, H_NAME_SLASH,
	H_NAME_DOTDOT, H_NAME_LEN_255, H_DA_TYPE, H_DA_DIR_UNKNOWN,
	H_DA_DIR_IS_FILE, H_DIR_IN_ITSELF, H_INO_DUPLICATE, H_INO_ROOT,
	H_INO_MAX, H_BM_OF_DIR, H_BM_TWICE, H_REMOVE_UNKNOWN, H_ZEROED,
	H_CUT_IN_LINK, H_COUNT
};

static void set_name(struct image *im, const struct rec *r, const char *name,
		     size_t len)
{
	unsigned char *p = im->buf + r->off;

	memset(p + offsetof(struct d_dir_action, name), 0, 255);
	memcpy(p + offsetof(struct d_dir_action, name), name, len);
	p[offsetof(struct d_dir_action, name_len)] = len;
	fix_crc(im, r);
}

/* Make @im hostile as @h says; returns its length. */
static size_t make_hostile(FIXTURE_DATA(images) *self, struct image *im,
			   enum hostile h)
{
	const struct rec *bm1 = find_blockmap(im, self->f1);
	const struct rec *bm2 = find_blockmap(im, self->f2);
	const struct rec *da = find_da(im, DA_ADD, "f1");
	const struct blk *b0 = find_blk(im, self->f1, 0);
	const struct blk *b1 = find_blk(im, self->f1, 1);
	const struct blk *b5 = find_blk(im, self->f1, 5);
	const struct rec *last = &im->recs[im->nrecs - 1];
	const struct rec *r;
	unsigned char *p;

	switch (h) {
	case H_FIRST_AT_END:
		put64(im->buf + OFF_FIRST, im->len);
		break;
	case H_FIRST_AT_S64_MAX:
		put64(im->buf + OFF_FIRST, INT64_MAX);
		break;
	case H_FIRST_NEGATIVE:
		put64(im->buf + OFF_FIRST, UINT64_MAX);
		break;
	case H_NEXT_PAST_END:
		put64(im->buf + last->off + OFF_NEXT, im->len + BS);
		break;
	case H_BASE_HUGE:
		put64(im->buf + bm1->off + offsetof(struct d_blockmap, base),
		      INT64_MAX - 16);
		fix_crc(im, bm1);
		break;
	case H_BME_HI_BITS:
		put16(im->buf + b0->pos + offsetof(struct d_bme, off_hi), 0xffff);
		break;
	case H_BME_SIZE_0:
		put16(im->buf + b0->pos + offsetof(struct d_bme, size), 0);
		break;
	case H_BME_IN_SUPERBLOCK:
		put32(im->buf + b5->pos + offsetof(struct d_bme, off_lo), 4);
		put16(im->buf + b5->pos + offsetof(struct d_bme, off_hi), 0);
		break;
	case H_BME_FLAGS:
		put16(im->buf + b0->pos + offsetof(struct d_bme, flags), 0x8000);
		break;
	case H_BME_LZ4_CLEARED:
		put16(im->buf + b1->pos + offsetof(struct d_bme, flags), 0);
		break;
	case H_BME_LZ4_SET:
		/* Raw data with a right CRC, said to be LZ4. */
		put16(im->buf + b0->pos + offsetof(struct d_bme, flags), BME_LZ4);
		break;
	case H_BME_AT_METADATA:
		/* The tail block's entry at the first record, CRC right. */
		put32(im->buf + b5->pos + offsetof(struct d_bme, off_lo),
		      im->recs[0].off);
		put32(im->buf + b5->pos + offsetof(struct d_bme, crc),
		      gki_crc32_le(0, im->buf + im->recs[0].off, 100));
		break;
	case H_SIZE_2_POW_44:
		/* 2^44 + 6144 bytes: 2^32 + 2 blocks, 2 in 32 bits. */
		r = find_inode(im, self->f2);
		put64(im->buf + r->off + offsetof(struct d_inode, size),
		      (1ULL << 44) + F2_SIZE);
		fix_crc(im, r);
		break;
	case H_MODE_SYMLINK:
		r = find_inode(im, self->f3);
		put16(im->buf + r->off + offsetof(struct d_inode, mode),
		      S_IFLNK | 0777);
		fix_crc(im, r);
		break;
	case H_NAME_EMPTY:
		set_name(im, da, "", 0);
		break;
	case H_NAME_SLASH:
		set_name(im, da, "a/b", 3);
		break;
	case H_NAME_DOTDOT:
		set_name(im, da, "..", 2);
		break;
	case H_NAME_LEN_255:
		set_name(im, da, "f1", 2);
		im->buf[da->off + offsetof(struct d_dir_action, name_len)] = 255;
		fix_crc(im, da);
		break;
	case H_DA_TYPE:
		im->buf[da->off + offsetof(struct d_dir_action, type)] = 7;
		fix_crc(im, da);
		break;
	case H_DA_DIR_UNKNOWN:
		put64(im->buf + da->off + offsetof(struct d_dir_action, dir), 999);
		fix_crc(im, da);
		break;
	case H_DA_DIR_IS_FILE:
		put64(im->buf + da->off + offsetof(struct d_dir_action, dir),
		      self->f2);
		fix_crc(im, find_da(im, DA_ADD, "f1"));
		break;
	case H_DIR_IN_ITSELF:
		r = find_da(im, DA_ADD, "link");
		put64(im->buf + r->off + offsetof(struct d_dir_action, child),
		      self->d);
		fix_crc(im, r);
		break;
	case H_INO_DUPLICATE:
		r = find_inode(im, self->f3);
		put64(im->buf + r->off + offsetof(struct d_inode, ino), self->f2);
		fix_crc(im, r);
		break;
	case H_INO_ROOT:
		r = find_inode(im, self->e);
		put64(im->buf + r->off + offsetof(struct d_inode, ino), ROOT_INO);
		fix_crc(im, r);
		break;
	case H_INO_MAX:
		r = find_inode(im, self->e);
		put64(im->buf + r->off + offsetof(struct d_inode, ino), UINT64_MAX);
		fix_crc(im, r);
		r = find_da(im, DA_ADD, "empty");
		put64(im->buf + r->off + offsetof(struct d_dir_action, child),
		      UINT64_MAX);
		fix_crc(im, r);
		break;
	case H_BM_OF_DIR:
		put64(im->buf + bm1->off + offsetof(struct d_blockmap, ino), self->d);
		fix_crc(im, bm1);
		break;
	case H_BM_TWICE:
		/* f2's blockmap claims f1 too (f1 has 6 blocks, this 2). */
		put64(im->buf + bm2->off + offsetof(struct d_blockmap, ino),
		      self->f1);
		fix_crc(im, bm2);
		break;
	case H_REMOVE_UNKNOWN:
		r = find_da(im, DA_REMOVE, "gone");
		p = im->buf + r->off;
		memcpy(p + offsetof(struct d_dir_action, name), "nope", 4);
		fix_crc(im, r);
		break;
	case H_ZEROED:
		memset(im->buf + sizeof(struct d_super), 0,
		       im->len - sizeof(struct d_super));
		break;
	case H_CUT_IN_LINK:
		/* Inside the superblock, after its link was set. */
		return OFF_FIRST + 3;
	case H_COUNT:
		break;
	}
	return im->len;
}

/* Look at everything a mount shows, ignoring errors; bounded. */
static void explore(const char *path, int depth)
{
	static unsigned char buf[BS];
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return;
	while ((de = readdir(d)) && n++ < 32) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".cmd"))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (lstat(sub, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < 4) {
			explore(sub, depth + 1);
		} else if (S_ISREG(st.st_mode)) {
			int fd = open(sub, O_RDONLY | O_CLOEXEC);
			off_t off;

			if (fd < 0)
				continue;
			for (off = 0; off < st.st_size && off < 8 * BS; off += BS)
				if (pread(fd, buf, BS, off) < 0)
					continue;
			if (st.st_size > 8 * BS)
				if (pread(fd, buf, BS, st.st_size - 1) < 0)
					continue;
			close(fd);
		}
	}
	closedir(d);
}

TEST_F_TIMEOUT(images, hostile_images, 300)
{
	int h;

	for (h = 0; h < H_COUNT; h++) {
		struct image *im = image_copy(self->g);
		size_t len;
		int r;

		ASSERT_NE(NULL, im);
		len = make_hostile(self, im, h);
		ASSERT_EQ(0, image_write(self->path, im->buf, len));
		image_free(im);
		r = mount_image(self->path, self->mnt);
		TH_LOG("hostile image %d: mount %s", h, r ? strerror(-r) : "succeeded");
		EXPECT_TRUE(r == 0 || r == -EINVAL || r == -EBADMSG || r == -EILSEQ)
			TH_LOG("hostile image %d: mount: %s", h, strerror(-r));
		if (r)
			continue;
		explore(self->mnt, 0);
		EXPECT_EQ(0, umount_image(self->mnt)) TH_LOG("hostile image %d", h);
	}
}

/* ===== images written by earlier tools ===== */

/*
 * tools/tests/fixtures/ (its README says how they were made): images an
 * earlier incfs-image wrote, built into this program.  They must mount and
 * read back as the source tree they were made from.
 */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc23-extensions"
static const unsigned char v1_plain[] = {
#embed "../tools/tests/fixtures/v1-plain.img"
};
static const unsigned char v1_lz4[] = {
#embed "../tools/tests/fixtures/v1-lz4.img"
};
static const unsigned char v1_gc[] = {
#embed "../tools/tests/fixtures/v1-gc.img"
};
#pragma clang diagnostic pop

#define OLD_FILES	5

/* The source tree: inode numbers as incfs-image create gave them. */
static const struct old_file {
	const char *path;
	uint64_t ino;
	uint64_t size;
	uint32_t crc;		/* crc32_le(0, ...) of the whole file */
	uint32_t absent_in_gc;	/* the block v1-gc.img lacks, or ~0 */
} old_files[OLD_FILES] = {
	{ "a.bin", 3, 12388, 0xfe087192, 1 },
	{ "dir/link.bin", 3, 12388, 0xfe087192, 1 },
	{ "dir/b.txt", 5, 10000, 0x52b2c444, ~0U },
	{ "dir/sub/empty", 7, 0, 0, ~0U },
	{ "z.bin", 8, 8192, 0x85039d11, 1 },
};

FIXTURE(old_images) {
	char dir[64];
	char mnt[96];
	char path[96];
	unsigned char *data[OLD_FILES];	/* read from v1-plain.img */
};

FIXTURE_SETUP(old_images)
{
	int err = load_module();

	ASSERT_EQ(0, err) TH_LOG("loading %s: %s", MODULE_PATH, strerror(-err));
	snprintf(self->dir, sizeof(self->dir), "/tmp/oldimg.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->mnt, sizeof(self->mnt), "%s/mnt", self->dir);
	snprintf(self->path, sizeof(self->path), "%s/image", self->dir);
	ASSERT_EQ(0, mkdir(self->mnt, 0755));
}

FIXTURE_TEARDOWN(old_images)
{
	int i;

	umount2(self->mnt, MNT_DETACH);
	unlink(self->path);
	rmdir(self->mnt);
	rmdir(self->dir);
	for (i = 0; i < OLD_FILES; i++)
		free(self->data[i]);
}

/* Mount @img and check names, inode numbers and modes of the tree. */
static void old_mount(struct __test_metadata *_metadata,
		      FIXTURE_DATA(old_images) *self,
		      const unsigned char *img, size_t len)
{
	char path[PATH_MAX];
	struct stat st;
	int i;

	ASSERT_EQ(0, image_write(self->path, img, len));
	ASSERT_EQ(0, mount_image(self->path, self->mnt));
	for (i = 0; i < OLD_FILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", self->mnt, old_files[i].path);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_EQ(old_files[i].ino, st.st_ino) TH_LOG("%s", path);
		EXPECT_EQ(S_IFREG | 0444, st.st_mode) TH_LOG("%s", path);
		EXPECT_EQ(old_files[i].size, st.st_size) TH_LOG("%s", path);
		EXPECT_EQ(old_files[i].ino == 3 ? 2 : 1, st.st_nlink)
			TH_LOG("%s", path);
	}
	snprintf(path, sizeof(path), "%s/dir/sub", self->mnt);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(S_IFDIR | 0555, st.st_mode);
}

/* Every block of every file, against the plain image's bytes. */
static void old_read(struct __test_metadata *_metadata,
		     FIXTURE_DATA(old_images) *self, bool gc)
{
	static unsigned char buf[BS];
	char path[PATH_MAX];
	uint32_t b;
	int i, fd;

	for (i = 0; i < OLD_FILES; i++) {
		const struct old_file *f = &old_files[i];

		snprintf(path, sizeof(path), "%s/%s", self->mnt, f->path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
		for (b = 0; b < nblocks_of(f->size); b++) {
			size_t len = block_len(f->size, b);
			ssize_t got = pread(fd, buf, len, (off_t)b * BS);

			if (gc && b == f->absent_in_gc) {
				EXPECT_EQ(-1, got) TH_LOG("%s block %u", path, b);
				EXPECT_EQ(ETIME, errno) TH_LOG("%s block %u", path, b);
				continue;
			}
			ASSERT_EQ((ssize_t)len, got)
				TH_LOG("%s block %u: %s", path, b, strerror(errno));
			EXPECT_EQ(0, memcmp(buf, self->data[i] + (size_t)b * BS, len))
				TH_LOG("%s block %u: not the bytes of v1-plain.img",
				       path, b);
		}
		close(fd);
	}
}

/* Read every file of v1-plain.img whole and check it against its CRC. */
static void old_read_plain(struct __test_metadata *_metadata,
			   FIXTURE_DATA(old_images) *self)
{
	char path[PATH_MAX];
	int i;

	old_mount(_metadata, self, v1_plain, sizeof(v1_plain));
	for (i = 0; i < OLD_FILES; i++) {
		size_t len = 0;

		snprintf(path, sizeof(path), "%s/%s", self->mnt, old_files[i].path);
		self->data[i] = (unsigned char *)gki_read_file(path, &len);
		ASSERT_NE(NULL, self->data[i]) TH_LOG("%s: %s", path, strerror(errno));
		ASSERT_EQ(old_files[i].size, len) TH_LOG("%s", path);
		EXPECT_EQ(old_files[i].crc, gki_crc32_le(0, self->data[i], len))
			TH_LOG("%s: not the source file's bytes", path);
	}
	EXPECT_EQ(0, umount_image(self->mnt));
}

TEST_F(old_images, plain)
{
	old_read_plain(_metadata, self);
}

TEST_F(old_images, lz4)
{
	old_read_plain(_metadata, self);
	old_mount(_metadata, self, v1_lz4, sizeof(v1_lz4));
	old_read(_metadata, self, false);
	EXPECT_EQ(0, umount_image(self->mnt));
}

TEST_F(old_images, gc_with_absent_blocks)
{
	old_read_plain(_metadata, self);
	old_mount(_metadata, self, v1_gc, sizeof(v1_gc));
	old_read(_metadata, self, true);
	EXPECT_EQ(0, umount_image(self->mnt));
}

TEST_HARNESS_MAIN
