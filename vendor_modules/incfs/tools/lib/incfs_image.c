// SPDX-License-Identifier: GPL-2.0
/*
 * libincfs-image: read, check, repair, write and compact incfs backing
 * images in user space.
 *
 * The replay follows the kernel's mount scan (format.c, scan.c, tree.c)
 * check for check: what the kernel mounts is CLEAN here, what it mounts
 * after cutting a torn tail is REPAIRABLE, what it refuses is BROKEN.
 * Unlike the kernel, the replay does not stop at the first refused record
 * when the chain can still be followed, so that fsck reports every problem.
 *
 * Nothing read from an image is trusted: every offset and size is checked
 * against the file before it is used, and allocations are bounded by what
 * the image holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "incfs_format_user.h"
#include "incfs_image.h"

#define ESIZE	sizeof(struct if_bme)

/* ===== small helpers ===== */

static uint32_t crc_table[256];

/* Filled before main(), so that threads can share it without locking. */
__attribute__((constructor)) static void crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320 : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t incfs_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static size_t md_size(uint8_t type)
{
	switch (type) {
	case IF_MD_INODE:
		return sizeof(struct if_inode);
	case IF_MD_BLOCK_MAP:
		return sizeof(struct if_blockmap);
	case IF_MD_DIR_ACTION:
		return sizeof(struct if_dir_action);
	}
	return 0;
}

/* CRC of a record whose size matches its type (incfs_md_crc()). */
static uint32_t md_crc(const union if_record *rec)
{
	struct if_md_header h = rec->h;
	size_t size = le16toh(rec->h.size);
	uint32_t crc;

	h.crc = 0;
	h.next = 0;
	crc = incfs_crc32(0, &h, sizeof(h));
	return incfs_crc32(crc, (const uint8_t *)rec + sizeof(h),
			   size - sizeof(h));
}

static uint32_t blocks_for_size(uint64_t size)
{
	return (size + IF_BS - 1) / IF_BS;
}

static uint32_t block_len(uint64_t size, uint32_t index)
{
	uint64_t start = (uint64_t)index * IF_BS;

	if (start >= size)
		return 0;
	return size - start < IF_BS ? size - start : IF_BS;
}

/* 0, -errno, or -EIO for a short read. */
static int read_exact(int fd, void *buf, size_t len, uint64_t pos)
{
	ssize_t n;

	while (len) {
		n = pread(fd, buf, len, pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf = (char *)buf + n;
		len -= n;
		pos += n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len, uint64_t pos)
{
	ssize_t n;

	while (len) {
		n = pwrite(fd, buf, len, pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf = (const char *)buf + n;
		len -= n;
		pos += n;
	}
	return 0;
}

static int write_zeros(int fd, uint64_t len, uint64_t pos)
{
	static const char zero[IF_BS];
	size_t n;
	int err;

	while (len) {
		n = len < sizeof(zero) ? len : sizeof(zero);
		err = write_all(fd, zero, n, pos);
		if (err)
			return err;
		len -= n;
		pos += n;
	}
	return 0;
}

/*
 * Make room for element @n of a growing array.  The capacity follows from
 * the count (16, then powers of two), so the public struct needs no
 * capacity fields; a count that shrank only makes the next growth early.
 */
static bool grow(void **arr, size_t n, size_t esize)
{
	size_t ncap;
	void *p;

	if (n && (n < 16 || (n & (n - 1))))
		return true;
	ncap = n ? n * 2 : 16;
	p = realloc(*arr, ncap * esize);
	if (!p)
		return false;
	*arr = p;
	return true;
}

static void sb_init(struct if_super *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = htole64(IF_MAGIC);
	sb->version = htole64(IF_VERSION);
	sb->sb_size = htole16(sizeof(*sb));
	sb->block_size = htole16(IF_BS);
}

static void bme_decode(const struct if_bme *e, struct incfs_img_entry *d)
{
	d->data_offset = (uint64_t)le16toh(e->off_hi) << 32 | le32toh(e->off_lo);
	d->stored_size = le16toh(e->size);
	d->flags = le16toh(e->flags);
	d->crc = le32toh(e->crc);
}

static void bme_encode(struct if_bme *e, const struct incfs_img_entry *d)
{
	e->off_lo = htole32((uint32_t)d->data_offset);
	e->off_hi = htole16((uint16_t)(d->data_offset >> 32));
	e->size = htole16(d->stored_size);
	e->flags = htole16(d->flags);
	e->crc = htole32(d->crc);
}

const char *incfs_img_status_name(int status)
{
	switch (status) {
	case INCFS_IMG_CLEAN:
		return "clean";
	case INCFS_IMG_REPAIRABLE:
		return "repairable";
	case INCFS_IMG_BROKEN:
		return "broken";
	}
	return "?";
}

/* ===== state: problems, files, names ===== */

static void vproblem(struct incfs_img *img, uint64_t off, bool repairable,
		     const char *fmt, va_list ap)
{
	struct incfs_img_problem *p;

	if (!grow((void **)&img->problems, img->nproblems, sizeof(*p))) {
		img->oom = true;
		return;
	}
	p = &img->problems[img->nproblems++];
	p->offset = off;
	p->repairable = repairable;
	vsnprintf(p->what, sizeof(p->what), fmt, ap);
	if (!repairable)
		img->status = INCFS_IMG_BROKEN;
	else if (img->status == INCFS_IMG_CLEAN)
		img->status = INCFS_IMG_REPAIRABLE;
}

static void problem(struct incfs_img *img, uint64_t off, bool repairable,
		    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(img, off, repairable, fmt, ap);
	va_end(ap);
}

struct incfs_img_file *incfs_img_file(struct incfs_img *img, uint64_t ino)
{
	size_t i;

	if (ino == IF_ROOT_INO)
		return &img->root;
	for (i = 0; i < img->nfiles; i++)
		if (img->files[i].ino == ino)
			return &img->files[i];
	return NULL;
}

static bool is_dir(const struct incfs_img_file *f)
{
	return (f->mode & S_IFMT) == S_IFDIR;
}

/* incfs_tree_check_new(): 0, -EINVAL, -EFBIG or -ENFILE. */
static int check_new(struct incfs_img *img, uint16_t mode, uint64_t size)
{
	if ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != S_IFDIR)
		return -EINVAL;
	if ((mode & S_IFMT) == S_IFREG && size > IF_MAX_FILE_SIZE)
		return -EFBIG;
	if (img->nfiles + 1 >= IF_MAX_FILES)
		return -ENFILE;
	return 0;
}

/* Add a checked node; its blocks come with its blockmap. */
static struct incfs_img_file *file_add(struct incfs_img *img, uint64_t ino,
				       uint16_t mode, uint64_t size)
{
	struct incfs_img_file *f;

	if (!grow((void **)&img->files, img->nfiles, sizeof(*f)))
		return NULL;
	f = &img->files[img->nfiles++];
	memset(f, 0, sizeof(*f));
	f->ino = ino;
	f->mode = (mode & S_IFMT) | (mode & 0555);
	f->size = (mode & S_IFMT) == S_IFDIR ? 0 : size;
	f->block_count = blocks_for_size(f->size);
	return f;
}

static bool name_valid(const char *name, size_t len)
{
	if (len == 0 || len > IF_MAX_NAME_LEN)
		return false;
	if (memchr(name, '/', len) || memchr(name, '\0', len))
		return false;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return false;
	return true;
}

static ssize_t find_name(struct incfs_img *img, uint64_t dir,
			 const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < img->nnames; i++)
		if (img->names[i].dir_ino == dir &&
		    strlen(img->names[i].name) == len &&
		    !memcmp(img->names[i].name, name, len))
			return i;
	return -1;
}

/* The directory holding @ino's first name, or 0. */
static uint64_t parent_of(struct incfs_img *img, uint64_t ino)
{
	size_t i;

	for (i = 0; i < img->nnames; i++)
		if (img->names[i].child_ino == ino)
			return img->names[i].dir_ino;
	return 0;
}

static bool has_entries(struct incfs_img *img, uint64_t dir)
{
	size_t i;

	for (i = 0; i < img->nnames; i++)
		if (img->names[i].dir_ino == dir)
			return true;
	return false;
}

static int check_add(struct incfs_img *img, uint64_t dir,
		     struct incfs_img_file *child, const char *name, size_t len)
{
	uint64_t p;
	size_t n;

	if (dir == IF_ROOT_INO && len == 4 && !memcmp(name, ".cmd", 4))
		return -EEXIST;
	if (find_name(img, dir, name, len) >= 0)
		return -EEXIST;
	if (!is_dir(child))
		return 0;
	if (child->ino == IF_ROOT_INO || parent_of(img, child->ino))
		return -EMLINK;
	/* Bounded: directories have one name each and form no cycle. */
	for (p = dir, n = 0; p && n <= img->nfiles + 1; p = parent_of(img, p), n++)
		if (p == child->ino)
			return -ELOOP;
	return 0;
}

/*
 * incfs_tree_name_op() without the change: 0 or the errno an instruction
 * would get.  *@found is the name to remove.
 */
static int name_check(struct incfs_img *img, uint8_t type, uint64_t dir_ino,
		      uint64_t child_ino, const char *name, size_t len,
		      ssize_t *found)
{
	struct incfs_img_file *dir, *child;

	if (!name_valid(name, len))
		return -EINVAL;
	dir = incfs_img_file(img, dir_ino);
	child = incfs_img_file(img, child_ino);
	if (!dir)
		return -ENOENT;
	if (!is_dir(dir))
		return -ENOTDIR;
	if (type == IF_DA_REMOVE) {
		*found = find_name(img, dir_ino, name, len);
		if (*found < 0 || img->names[*found].child_ino != child_ino)
			return -ENOENT;
		if (has_entries(img, child_ino))
			return -ENOTEMPTY;
		return 0;
	}
	if (!child)
		return -ENOENT;
	return check_add(img, dir_ino, child, name, len);
}

static int name_apply(struct incfs_img *img, uint8_t type, uint64_t dir,
		      uint64_t child, const char *name, size_t len,
		      ssize_t found)
{
	struct incfs_img_name *n;

	if (type == IF_DA_REMOVE) {
		memmove(&img->names[found], &img->names[found + 1],
			(img->nnames - found - 1) * sizeof(*n));
		img->nnames--;
		return 0;
	}
	if (!grow((void **)&img->names, img->nnames, sizeof(*n)))
		return -ENOMEM;
	n = &img->names[img->nnames++];
	n->dir_ino = dir;
	n->child_ino = child;
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	return 0;
}

/* ===== replay (scan.c) ===== */

enum { W_END = 0, W_REC = 1, W_SKIP = 2, W_STOP = 3 };

struct scan {
	struct incfs_img *img;
	int64_t size;
	int64_t next;
	int64_t link_pos;
	int64_t prev;
	int64_t prev_end;
	int64_t gap_start;
	int64_t rec_off;
	union if_record rec;
};

static int check_short_image(struct scan *s)
{
	struct if_super fresh, got;
	int err;

	s->img->short_image = true;
	if (s->size == 0) {
		problem(s->img, 0, true, "empty image: no superblock yet");
		return 0;
	}
	err = read_exact(s->img->fd, &got, s->size, 0);
	if (err)
		return err;
	sb_init(&fresh);
	if (memcmp(&got, &fresh, s->size))
		problem(s->img, 0, false, "too short for a superblock");
	else
		problem(s->img, 0, true,
			"superblock cut short (a crash while creating the image)");
	return 0;
}

/* 0 ready to walk, W_STOP, or -errno. */
static int walk_start(struct scan *s)
{
	struct if_super sb;
	const char *why = NULL;
	int err;

	if (s->size < (int64_t)sizeof(sb)) {
		err = check_short_image(s);
		return err ? err : W_STOP;
	}
	err = read_exact(s->img->fd, &sb, sizeof(sb), 0);
	if (err)
		return err;
	if (le64toh(sb.magic) != IF_MAGIC)
		why = "bad magic";
	else if (le64toh(sb.version) != IF_VERSION)
		why = "unsupported version";
	else if (le16toh(sb.sb_size) != sizeof(sb) ||
		 le16toh(sb.block_size) != IF_BS)
		why = "bad superblock sizes";
	else if (sb.flags)
		why = "unknown superblock flags";
	if (why) {
		problem(s->img, 0, false, "superblock: %s", why);
		return W_STOP;
	}
	s->img->first_md_offset = le64toh(sb.first_md);
	s->next = (int64_t)le64toh(sb.first_md);
	s->link_pos = IF_OFF_FIRST_MD;
	s->prev_end = sizeof(sb);
	return 0;
}

static void walk_torn(struct scan *s, int64_t off)
{
	s->img->torn = true;
	s->img->torn_link_pos = s->link_pos;
	problem(s->img, off, true,
		"record cut off by the end of the image (torn tail; link at %lld)",
		(long long)s->link_pos);
}

static int record_push(struct scan *s, int64_t off, size_t size, bool crc_ok)
{
	struct incfs_img *img = s->img;
	struct incfs_img_record *r;

	if (!grow((void **)&img->records, img->nrecords, sizeof(*r)))
		return -ENOMEM;
	r = &img->records[img->nrecords++];
	r->offset = off;
	r->type = s->rec.h.type;
	r->size = size;
	r->crc_ok = crc_ok;
	r->next = le64toh(s->rec.h.next);
	r->prev = le64toh(s->rec.h.prev);
	r->applied = false;
	return 0;
}

/* incfs_walk_next(): W_REC, W_SKIP (read but refused), W_END, W_STOP, -errno. */
static int walk_next(struct scan *s)
{
	int64_t off = s->next;
	bool crc_ok, ok = true;
	size_t size;
	int err;

	if (off == 0)
		return W_END;
	if (off < s->prev_end) {
		problem(s->img, off, false, "chain points backwards (link at %lld)",
			(long long)s->link_pos);
		return W_STOP;
	}
	if (off > s->size - (int64_t)sizeof(s->rec.h)) {
		walk_torn(s, off);
		return W_END;
	}
	err = read_exact(s->img->fd, &s->rec.h, sizeof(s->rec.h), off);
	if (err)
		return err;
	size = md_size(s->rec.h.type);
	if (!size) {
		problem(s->img, off, false, "unknown record type %u",
			s->rec.h.type);
		return W_STOP;
	}
	if (le16toh(s->rec.h.size) != size) {
		problem(s->img, off, false, "bad record size %u for type %u",
			le16toh(s->rec.h.size), s->rec.h.type);
		return W_STOP;
	}
	if (off > s->size - (int64_t)size) {
		walk_torn(s, off);
		return W_END;
	}
	err = read_exact(s->img->fd, &s->rec, size, off);
	if (err)
		return err;
	crc_ok = le32toh(s->rec.h.crc) == md_crc(&s->rec);
	if (!crc_ok) {
		problem(s->img, off, false, "bad record CRC");
		ok = false;
	} else if ((int64_t)le64toh(s->rec.h.prev) != s->prev) {
		problem(s->img, off, false,
			"prev link does not match (%llu, want %lld)",
			(unsigned long long)le64toh(s->rec.h.prev),
			(long long)s->prev);
		ok = false;
	}
	err = record_push(s, off, size, crc_ok);
	if (err)
		return err;
	s->rec_off = off;
	s->prev = off;
	s->link_pos = off + IF_OFF_NEXT;
	s->next = (int64_t)le64toh(s->rec.h.next);
	s->gap_start = s->prev_end;
	s->prev_end = off + size;
	return ok ? W_REC : W_SKIP;
}

/* A record the kernel would refuse: a problem, and 0 (not applied). */
static int refuse(struct scan *s, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vproblem(s->img, off, false, fmt, ap);
	va_end(ap);
	return 0;
}

static int apply_inode(struct scan *s)
{
	const struct if_inode *r = &s->rec.inode;
	uint64_t ino = le64toh(r->ino), size = le64toh(r->size);
	uint16_t mode = le16toh(r->mode);
	int err;

	if (ino <= IF_ROOT_INO || ino > IF_MAX_INO)
		return refuse(s, s->rec_off, "bad inode number %llu",
			      (unsigned long long)ino);
	if (incfs_img_file(s->img, ino))
		return refuse(s, s->rec_off, "inode %llu declared twice",
			      (unsigned long long)ino);
	err = check_new(s->img, mode, size);
	if (err)
		return refuse(s, s->rec_off, "%s (ino %llu mode 0%o size %llu)",
			      err == -ENFILE ? "too many inodes" :
			      "bad inode mode or size",
			      (unsigned long long)ino, mode,
			      (unsigned long long)size);
	if (!file_add(s->img, ino, mode, size))
		return -ENOMEM;
	return 1;
}

/* incfs_check_bme(): 0 present, 1 absent, 2 torn, -1 bad. */
static int check_bme(const struct incfs_img_entry *e, uint64_t image_size,
		     uint32_t len)
{
	if (!e->data_offset && !e->stored_size && !e->flags && !e->crc)
		return 1;
	if (e->data_offset < sizeof(struct if_super) || !e->stored_size ||
	    e->stored_size > IF_BS || (e->flags & ~IF_BME_LZ4) ||
	    (!(e->flags & IF_BME_LZ4) && e->stored_size != len))
		return -1;
	if (e->data_offset + e->stored_size > image_size)
		return 2;
	return 0;
}

static int torn_push(struct incfs_img *img, uint64_t pos)
{
	if (!grow((void **)&img->torn_entries, img->ntorn, sizeof(uint64_t)))
		return -ENOMEM;
	img->torn_entries[img->ntorn++] = pos;
	return 0;
}

/* Decode and check the entries of a blockmap area. */
static int read_entries(struct scan *s, struct incfs_img_file *f,
			uint64_t base, bool *bad)
{
	struct if_bme chunk[256];
	uint32_t i, j, n;
	int err, r;

	for (i = 0; i < f->block_count; i += n) {
		n = f->block_count - i < 256 ? f->block_count - i : 256;
		err = read_exact(s->img->fd, chunk, n * ESIZE,
				 base + (uint64_t)i * ESIZE);
		if (err)
			return err;
		for (j = 0; j < n; j++) {
			struct incfs_img_entry *e = &f->blocks[i + j];
			uint64_t pos = base + (uint64_t)(i + j) * ESIZE;

			bme_decode(&chunk[j], e);
			r = check_bme(e, s->size, block_len(f->size, i + j));
			if (r == 1 || r == 0)
				continue;
			if (r < 0) {
				refuse(s, pos, "bad blockmap entry: ino %llu block %u",
				       (unsigned long long)f->ino, i + j);
				*bad = true;
			} else {
				problem(s->img, pos, true,
					"ino %llu block %u: data at %llu+%u past the end of the image (torn)",
					(unsigned long long)f->ino, i + j,
					(unsigned long long)e->data_offset,
					e->stored_size);
				if (torn_push(s->img, pos))
					return -ENOMEM;
			}
			memset(e, 0, sizeof(*e));
		}
	}
	return 1;
}

static int apply_blockmap(struct scan *s)
{
	const struct if_blockmap *r = &s->rec.bm;
	struct incfs_img_file *f = incfs_img_file(s->img, le64toh(r->ino));
	uint32_t count = le32toh(r->count);
	int64_t base = (int64_t)le64toh(r->base);
	bool bad = false;
	int ret;

	if (!f || is_dir(f) || f->blockmap_offset)
		return refuse(s, s->rec_off,
			      "blockmap of an unknown, directory or mapped inode %llu",
			      (unsigned long long)le64toh(r->ino));
	if (f->size > IF_MAX_FILE_SIZE || count != blocks_for_size(f->size))
		return refuse(s, s->rec_off,
			      "block count %u does not match the file size %llu",
			      count, (unsigned long long)f->size);
	/* Wrapping as the kernel's loff_t arithmetic does. */
	if (base < s->gap_start ||
	    (int64_t)((uint64_t)base + (uint64_t)count * ESIZE) > s->rec_off)
		return refuse(s, s->rec_off, "blockmap overlaps metadata (base %llu)",
			      (unsigned long long)base);
	if ((uint64_t)base + (uint64_t)count * ESIZE > (uint64_t)s->size)
		return refuse(s, base, "cannot read blockmap");
	if (count) {
		f->blocks = calloc(count, sizeof(*f->blocks));
		if (!f->blocks)
			return -ENOMEM;
	}
	ret = read_entries(s, f, base, &bad);
	if (ret <= 0 || bad) {
		free(f->blocks);
		f->blocks = NULL;
		return ret;
	}
	f->blockmap_offset = base;
	return 1;
}

static const char *errname(int err)
{
	switch (err) {
	case -EINVAL:
		return "invalid name";
	case -ENOENT:
		return "no such inode or name";
	case -ENOTDIR:
		return "not a directory";
	case -EEXIST:
		return "name exists";
	case -EMLINK:
		return "directory already named";
	case -ELOOP:
		return "directory inside itself";
	case -ENOTEMPTY:
		return "directory not empty";
	}
	return "error";
}

static int apply_dir_action(struct scan *s)
{
	const struct if_dir_action *r = &s->rec.da;
	uint64_t dir = le64toh(r->dir), child = le64toh(r->child);
	ssize_t found = -1;
	int err;

	if (r->type != IF_DA_ADD && r->type != IF_DA_REMOVE)
		return refuse(s, s->rec_off, "bad dir action type %u", r->type);
	err = name_check(s->img, r->type, dir, child, r->name, r->name_len,
			 &found);
	if (err)
		return refuse(s, s->rec_off,
			      "dir action an instruction could not make (%s %llu in %llu: %s)",
			      r->type == IF_DA_ADD ? "add" : "remove",
			      (unsigned long long)child, (unsigned long long)dir,
			      errname(err));
	err = name_apply(s->img, r->type, dir, child, r->name, r->name_len,
			 found);
	return err ? err : 1;
}

/* 1 applied, 0 refused, -errno. */
static int apply_record(struct scan *s)
{
	switch (s->rec.h.type) {
	case IF_MD_INODE:
		return apply_inode(s);
	case IF_MD_BLOCK_MAP:
		return apply_blockmap(s);
	case IF_MD_DIR_ACTION:
		return apply_dir_action(s);
	}
	return refuse(s, s->rec_off, "unknown record type");
}

static int replay(struct incfs_img *img)
{
	struct scan s = { .img = img, .size = img->size };
	int ret;

	ret = walk_start(&s);
	if (ret == W_STOP)
		return 0;
	while (ret >= 0) {
		ret = walk_next(&s);
		if (ret == W_REC) {
			ret = apply_record(&s);
			if (ret > 0)
				img->records[img->nrecords - 1].applied = true;
		} else if (ret != W_SKIP) {
			break;
		}
	}
	if (ret < 0)
		return ret;
	img->last_record = s.prev;
	img->valid_end = s.prev_end;
	return img->oom ? -ENOMEM : 0;
}

/* ===== open, close, read ===== */

static void img_init(struct incfs_img *img, int fd)
{
	memset(img, 0, sizeof(*img));
	img->fd = fd;
	img->root.ino = IF_ROOT_INO;
	img->root.mode = S_IFDIR | 0555;
}

static int img_open_flags(struct incfs_img *img, const char *path, int flags)
{
	struct stat st;
	int fd, err;

	img_init(img, -1);
	/* O_NONBLOCK: a FIFO given as an image must not hang the open. */
	fd = open(path, flags | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	img->fd = fd;
	if (fstat(fd, &st)) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto fail;
	}
	img->size = st.st_size;
	err = replay(img);
	if (err)
		goto fail;
	return 0;
fail:
	incfs_img_close(img);
	return err;
}

int incfs_img_open(struct incfs_img *img, const char *path)
{
	return img_open_flags(img, path, O_RDONLY);
}

void incfs_img_close(struct incfs_img *img)
{
	size_t i;

	if (img->fd >= 0)
		close(img->fd);
	for (i = 0; i < img->nfiles; i++)
		free(img->files[i].blocks);
	free(img->files);
	free(img->names);
	free(img->problems);
	free(img->records);
	free(img->torn_entries);
	img_init(img, -1);
}

static const struct incfs_img_entry *entry_of(struct incfs_img *img,
					      uint64_t ino, uint32_t index,
					      uint32_t *len, int *err)
{
	struct incfs_img_file *f = incfs_img_file(img, ino);

	*err = -ENOENT;
	if (!f)
		return NULL;
	*err = -EISDIR;
	if (is_dir(f))
		return NULL;
	*err = -ERANGE;
	if (index >= f->block_count)
		return NULL;
	*err = -ENODATA;
	if (!f->blocks || !f->blocks[index].stored_size)
		return NULL;
	*len = block_len(f->size, index);
	return &f->blocks[index];
}

bool incfs_img_block_present(struct incfs_img *img, uint64_t ino,
			     uint32_t index)
{
	uint32_t len;
	int err;

	return entry_of(img, ino, index, &len, &err) != NULL;
}

int incfs_img_read_raw(struct incfs_img *img, uint64_t ino, uint32_t index,
		       void *buf)
{
	const struct incfs_img_entry *e;
	uint32_t len;
	int err;

	e = entry_of(img, ino, index, &len, &err);
	if (!e)
		return err;
	err = read_exact(img->fd, buf, e->stored_size, e->data_offset);
	if (err)
		return err;
	if (incfs_crc32(0, buf, e->stored_size) != e->crc)
		return -EBADMSG;
	return e->stored_size;
}

int incfs_img_read_block(struct incfs_img *img, uint64_t ino, uint32_t index,
			 void *buf)
{
	const struct incfs_img_entry *e;
	char raw[IF_BS];
	uint32_t len;
	int n, err;

	e = entry_of(img, ino, index, &len, &err);
	if (!e)
		return err;
	n = incfs_img_read_raw(img, ino, index, raw);
	if (n < 0)
		return n;
	if (!(e->flags & IF_BME_LZ4)) {
		memcpy(buf, raw, len);
		return len;
	}
	if (LZ4_decompress_safe(raw, buf, n, len) != (int)len)
		return -EBADMSG;
	return len;
}

/* 0, or a problem's description. */
static const char *check_block(struct incfs_img *img,
			       const struct incfs_img_file *f, uint32_t b)
{
	const struct incfs_img_entry *e = &f->blocks[b];
	uint32_t len = block_len(f->size, b);
	char raw[IF_BS], buf[IF_BS];
	int n;

	n = incfs_img_read_raw(img, f->ino, b, raw);
	if (n == -EBADMSG)
		return "data CRC mismatch";
	if (n < 0)
		return "cannot read data";
	if ((e->flags & IF_BME_LZ4) &&
	    LZ4_decompress_safe(raw, buf, n, len) != (int)len)
		return "bad LZ4 data";
	return NULL;
}

int incfs_img_check_blocks(struct incfs_img *img)
{
	const char *why;
	size_t i, found = 0;
	uint32_t b;

	for (i = 0; i < img->nfiles; i++) {
		struct incfs_img_file *f = &img->files[i];

		for (b = 0; f->blocks && b < f->block_count; b++) {
			const struct incfs_img_entry *e = &f->blocks[b];

			if (!e->stored_size)
				continue;
			why = check_block(img, f, b);
			if (!why)
				continue;
			found++;
			problem(img, e->data_offset, false,
				"ino %llu block %u: %s (%u bytes stored%s)",
				(unsigned long long)f->ino, b, why,
				e->stored_size,
				e->flags & IF_BME_LZ4 ? ", lz4" : "");
		}
	}
	return img->oom ? -ENOMEM : (int)found;
}

/* ===== writer ===== */

struct incfs_img_writer {
	struct incfs_img st;		/* files and names, as replayed */
	uint64_t end;			/* of the file */
	uint64_t last_md;
	uint64_t next_ino;
	int err;			/* sticky I/O error */
};

struct incfs_img_writer *incfs_img_create(const char *path)
{
	struct incfs_img_writer *w = calloc(1, sizeof(*w));
	struct if_super sb;
	int fd, err;

	if (!w)
		return NULL;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = errno;
		free(w);
		errno = err;
		return NULL;
	}
	img_init(&w->st, fd);
	sb_init(&sb);
	err = write_all(fd, &sb, sizeof(sb), 0);
	if (err) {
		close(fd);
		free(w);
		errno = -err;
		return NULL;
	}
	w->end = sizeof(sb);
	w->next_ino = IF_ROOT_INO + 1;
	return w;
}

static int w_fail(struct incfs_img_writer *w, int err)
{
	if (err && !w->err)
		w->err = err;
	return err;
}

/* incfs_bf_append_md(): write the record, then link it. */
static int append_md(struct incfs_img_writer *w, union if_record *rec)
{
	size_t size = le16toh(rec->h.size);
	uint64_t pos = w->end, link_pos, link;
	int err;

	if (pos + size > IF_MAX_DATA_OFFSET)
		return w_fail(w, -EFBIG);
	rec->h.prev = htole64(w->last_md);
	rec->h.next = 0;
	rec->h.crc = 0;
	rec->h.crc = htole32(md_crc(rec));
	err = write_all(w->st.fd, rec, size, pos);
	if (err)
		return w_fail(w, err);
	link_pos = w->last_md ? w->last_md + IF_OFF_NEXT : IF_OFF_FIRST_MD;
	link = htole64(pos);
	err = write_all(w->st.fd, &link, sizeof(link), link_pos);
	if (err)
		return w_fail(w, err);
	w->last_md = pos;
	w->end = pos + size;
	return 0;
}

static void md_init(union if_record *rec, uint8_t type)
{
	memset(rec, 0, sizeof(*rec));
	rec->h.type = type;
	rec->h.size = htole16(md_size(type));
}

/* incfs_ensure_blockmap(): a zeroed area, then its record. */
static int append_blockmap(struct incfs_img_writer *w,
			   struct incfs_img_file *f)
{
	uint64_t base = w->end, len = (uint64_t)f->block_count * ESIZE;
	union if_record rec;
	int err;

	if (base + len > IF_MAX_DATA_OFFSET)
		return w_fail(w, -EFBIG);
	err = write_zeros(w->st.fd, len, base);
	if (err)
		return w_fail(w, err);
	w->end = base + len;
	md_init(&rec, IF_MD_BLOCK_MAP);
	rec.bm.ino = htole64(f->ino);
	rec.bm.base = htole64(base);
	rec.bm.count = htole32(f->block_count);
	err = append_md(w, &rec);
	if (err)
		return err;
	f->blocks = calloc(f->block_count, sizeof(*f->blocks));
	if (!f->blocks)
		return w_fail(w, -ENOMEM);
	f->blockmap_offset = base;
	return 0;
}

uint64_t incfs_img_new_file_ino(struct incfs_img_writer *w, uint64_t ino,
				uint16_t mode, uint64_t size)
{
	struct incfs_img_file *f = NULL;
	union if_record rec;
	int err;

	if (w->err) {
		errno = -w->err;
		return 0;
	}
	err = ino <= IF_ROOT_INO || ino > IF_MAX_INO ? -EINVAL :
	      incfs_img_file(&w->st, ino) ? -EEXIST :
	      check_new(&w->st, mode, size);
	if (err) {
		errno = -err;
		return 0;
	}
	if ((mode & S_IFMT) == S_IFDIR)
		size = 0;
	md_init(&rec, IF_MD_INODE);
	rec.inode.ino = htole64(ino);
	rec.inode.size = htole64(size);
	rec.inode.mode = htole16((mode & S_IFMT) | (mode & 0555));
	err = append_md(w, &rec);
	if (!err) {
		f = file_add(&w->st, ino, mode, size);
		err = f ? 0 : w_fail(w, -ENOMEM);
	}
	if (!err && f->block_count)
		err = append_blockmap(w, f);
	if (err) {
		errno = -err;
		return 0;
	}
	if (ino >= w->next_ino)
		w->next_ino = ino + 1;
	return ino;
}

uint64_t incfs_img_new_file(struct incfs_img_writer *w, uint16_t mode,
			    uint64_t size)
{
	/* As the kernel's NEW_FILE: no number left is ENOSPC. */
	if (w->next_ino > IF_MAX_INO) {
		errno = ENOSPC;
		return 0;
	}
	return incfs_img_new_file_ino(w, w->next_ino, mode, size);
}

static int name_op(struct incfs_img_writer *w, uint8_t type, uint64_t dir,
		   uint64_t child, const char *name)
{
	size_t len = strnlen(name, IF_MAX_NAME_LEN + 1);
	union if_record rec;
	ssize_t found = -1;
	int err;

	if (w->err)
		return w->err;
	err = name_check(&w->st, type, dir, child, name, len, &found);
	if (err)
		return err;
	md_init(&rec, IF_MD_DIR_ACTION);
	rec.da.dir = htole64(dir);
	rec.da.child = htole64(child);
	rec.da.type = type;
	rec.da.name_len = len;
	memcpy(rec.da.name, name, len);
	err = append_md(w, &rec);
	if (!err)
		err = w_fail(w, name_apply(&w->st, type, dir, child, name, len,
					   found));
	return err;
}

int incfs_img_add_name(struct incfs_img_writer *w, uint64_t dir,
		       uint64_t child, const char *name)
{
	return name_op(w, IF_DA_ADD, dir, child, name);
}

int incfs_img_remove_name(struct incfs_img_writer *w, uint64_t dir,
			  uint64_t child, const char *name)
{
	return name_op(w, IF_DA_REMOVE, dir, child, name);
}

/* Checks shared by put_block and put_raw; NULL with *err set. */
static struct incfs_img_file *w_block_file(struct incfs_img_writer *w,
					   uint64_t ino, uint32_t index,
					   int *err)
{
	struct incfs_img_file *f = incfs_img_file(&w->st, ino);

	*err = w->err ? w->err : !f ? -ENOENT : is_dir(f) ? -EISDIR :
	       index >= f->block_count ? -ERANGE : 0;
	return *err ? NULL : f;
}

/* store_blocks(): append the data (a full block aligned), then the entry. */
static int store(struct incfs_img_writer *w, struct incfs_img_file *f,
		 uint32_t index, const void *data, uint16_t size,
		 uint16_t flags)
{
	struct incfs_img_entry e;
	struct if_bme bme;
	uint64_t pos = w->end;
	int err;

	if (f->blocks[index].stored_size)
		return 0;
	if (size == IF_BS)
		pos = (pos + IF_BS - 1) / IF_BS * IF_BS;
	if (pos + size > IF_MAX_DATA_OFFSET)
		return w_fail(w, -EFBIG);
	err = write_all(w->st.fd, data, size, pos);
	if (err)
		return w_fail(w, err);
	w->end = pos + size;
	e.data_offset = pos;
	e.stored_size = size;
	e.flags = flags;
	e.crc = incfs_crc32(0, data, size);
	bme_encode(&bme, &e);
	err = write_all(w->st.fd, &bme, sizeof(bme),
			f->blockmap_offset + (uint64_t)index * ESIZE);
	if (err)
		return w_fail(w, err);
	f->blocks[index] = e;
	return 0;
}

int incfs_img_put_block(struct incfs_img_writer *w, uint64_t ino,
			uint32_t index, const void *data, size_t len, bool lz4)
{
	struct incfs_img_file *f;
	char out[IF_BS];
	int err, n = 0;

	f = w_block_file(w, ino, index, &err);
	if (!f)
		return err;
	if (len != block_len(f->size, index))
		return -EINVAL;
	if (lz4)
		n = LZ4_compress_default(data, out, len, len - 1);
	if (n > 0 && (size_t)n < len)
		return store(w, f, index, out, n, IF_BME_LZ4);
	return store(w, f, index, data, len, 0);
}

int incfs_img_put_raw(struct incfs_img_writer *w, uint64_t ino,
		      uint32_t index, const void *data, size_t stored,
		      uint16_t flags, uint32_t crc)
{
	struct incfs_img_file *f;
	char tmp[IF_BS];
	uint32_t len;
	int err;

	f = w_block_file(w, ino, index, &err);
	if (!f)
		return err;
	len = block_len(f->size, index);
	if ((flags & ~IF_BME_LZ4) || !stored || stored > IF_BS ||
	    (!(flags & IF_BME_LZ4) && stored != len))
		return -EINVAL;
	if ((flags & IF_BME_LZ4) &&
	    LZ4_decompress_safe(data, tmp, stored, IF_BS) != (int)len)
		return -EBADMSG;
	if (incfs_crc32(0, data, stored) != crc)
		return -EBADMSG;
	return store(w, f, index, data, stored, flags);
}

int incfs_img_finish(struct incfs_img_writer *w)
{
	int err = w->err;

	if (!err && fsync(w->st.fd))
		err = -errno;
	incfs_img_close(&w->st);
	free(w);
	return err;
}

/* ===== fsck ===== */

/* What the kernel does at mount, then cut what nothing references. */
static int repair(struct incfs_img *img)
{
	struct if_super sb;
	uint64_t end = img->valid_end, zero = 0;
	size_t i;
	uint32_t b;
	int err;

	if (img->short_image) {
		sb_init(&sb);
		if (ftruncate(img->fd, 0))
			return -errno;
		err = write_all(img->fd, &sb, sizeof(sb), 0);
		return err ? err : fsync(img->fd) ? -errno : 0;
	}
	for (i = 0; i < img->ntorn; i++) {
		err = write_zeros(img->fd, ESIZE, img->torn_entries[i]);
		if (err)
			return err;
	}
	if (img->torn) {
		err = write_all(img->fd, &zero, sizeof(zero),
				img->torn_link_pos);
		if (err)
			return err;
	}
	for (i = 0; i < img->nfiles; i++) {
		struct incfs_img_file *f = &img->files[i];

		for (b = 0; f->blocks && b < f->block_count; b++) {
			uint64_t e = f->blocks[b].data_offset +
				     f->blocks[b].stored_size;

			if (f->blocks[b].stored_size && e > end)
				end = e;
		}
	}
	if (end < img->size && ftruncate(img->fd, end))
		return -errno;
	return fsync(img->fd) ? -errno : 0;
}

static void print_problems(const struct incfs_img *img, FILE *out)
{
	size_t i;

	for (i = 0; i < img->nproblems; i++)
		fprintf(out, "offset %llu: %s%s\n",
			(unsigned long long)img->problems[i].offset,
			img->problems[i].what,
			img->problems[i].repairable ? " [repairable]" : "");
}

int incfs_img_fsck(const char *path, bool repair_it, FILE *out)
{
	struct incfs_img img;
	int err, status;

	err = img_open_flags(&img, path, repair_it ? O_RDWR : O_RDONLY);
	if (err)
		return err;
	err = incfs_img_check_blocks(&img);
	if (err < 0)
		goto out;
	print_problems(&img, out);
	status = img.status;
	fprintf(out, "%s: %s, %zu records, %zu files, %zu names, %zu problems\n",
		path, incfs_img_status_name(status), img.nrecords, img.nfiles,
		img.nnames, img.nproblems);
	err = status;
	if (!repair_it || status != INCFS_IMG_REPAIRABLE)
		goto out;
	err = repair(&img);
	incfs_img_close(&img);
	if (err)
		return err;
	/* Check the result as a mount would. */
	err = incfs_img_open(&img, path);
	if (err)
		return err;
	err = incfs_img_check_blocks(&img);
	if (err >= 0 && img.status != INCFS_IMG_CLEAN) {
		print_problems(&img, out);
		err = -EIO;
	}
	if (err >= 0) {
		fprintf(out, "%s: repaired: %zu records, %llu bytes\n", path,
			img.nrecords, (unsigned long long)img.size);
		err = INCFS_IMG_CLEAN;
	}
out:
	incfs_img_close(&img);
	return err;
}

/* ===== dump ===== */

static void put_name(FILE *out, const char *name)
{
	const unsigned char *p;

	for (p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f || *p == '\\')
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

static unsigned int nlink_of(struct incfs_img *img,
			     const struct incfs_img_file *f)
{
	unsigned int n = is_dir(f) ? 2 : 0;
	struct incfs_img_file *c;
	size_t i;

	for (i = 0; i < img->nnames; i++) {
		if (is_dir(f) && img->names[i].dir_ino == f->ino) {
			c = incfs_img_file(img, img->names[i].child_ino);
			n += c && is_dir(c);
		} else if (!is_dir(f) && img->names[i].child_ino == f->ino) {
			n++;
		}
	}
	return n;
}

struct path_buf {
	const char *part[IF_MAX_FILES + 1];
	int depth;
};

static void put_node(FILE *out, struct incfs_img *img, struct path_buf *pb,
		     const struct incfs_img_file *f)
{
	int i;

	fputs("  ", out);
	if (!pb->depth)
		fputc('/', out);
	for (i = 0; i < pb->depth; i++) {
		fputc('/', out);
		put_name(out, pb->part[i]);
	}
	fprintf(out, " ino %llu mode 0%o size %llu nlink %u\n",
		(unsigned long long)f->ino, f->mode,
		(unsigned long long)f->size, nlink_of(img, f));
}

static void put_tree(FILE *out, struct incfs_img *img, struct path_buf *pb,
		     uint64_t dir, bool *reach)
{
	struct incfs_img_file *c;
	size_t i;

	for (i = 0; i < img->nnames; i++) {
		if (img->names[i].dir_ino != dir)
			continue;
		c = incfs_img_file(img, img->names[i].child_ino);
		if (!c || c == &img->root || pb->depth >= IF_MAX_FILES)
			continue;
		reach[c - img->files] = true;
		pb->part[pb->depth++] = img->names[i].name;
		put_node(out, img, pb, c);
		if (is_dir(c))
			put_tree(out, img, pb, c->ino, reach);
		pb->depth--;
	}
}

static void put_ranges(FILE *out, const struct incfs_img_file *f)
{
	uint32_t b, start, present = 0, lz4 = 0;
	bool first = true;

	fprintf(out, "  ino %llu: present ", (unsigned long long)f->ino);
	for (b = 0; f->blocks && b < f->block_count; b++) {
		if (!f->blocks[b].stored_size)
			continue;
		for (start = b; b + 1 < f->block_count &&
		     f->blocks[b + 1].stored_size; b++)
			;
		fprintf(out, first ? "%u" : ",%u", start);
		if (b != start)
			fprintf(out, "-%u", b);
		first = false;
	}
	for (b = 0; f->blocks && b < f->block_count; b++) {
		present += !!f->blocks[b].stored_size;
		lz4 += !!(f->blocks[b].flags & IF_BME_LZ4);
	}
	fprintf(out, "%s(%u/%u)", first ? "none " : " ", present,
		f->block_count);
	if (lz4)
		fprintf(out, " lz4 %u", lz4);
	if (f->blockmap_offset)
		fprintf(out, " blockmap @%llu\n",
			(unsigned long long)f->blockmap_offset);
	else
		fprintf(out, f->block_count ? " no blockmap\n" : "\n");
}

static void put_record(FILE *out, struct incfs_img *img,
		       const struct incfs_img_record *r)
{
	static const char *const types[] = { "none", "inode", "blockmap",
					     "dir_action" };
	union if_record rec;

	fprintf(out, "  @%llu %s size %u crc %s next %llu prev %llu",
		(unsigned long long)r->offset, types[r->type], r->size,
		r->crc_ok ? "ok" : "BAD", (unsigned long long)r->next,
		(unsigned long long)r->prev);
	if (read_exact(img->fd, &rec, r->size, r->offset)) {
		fputs(": unreadable\n", out);
		return;
	}
	if (r->type == IF_MD_INODE) {
		fprintf(out, ": ino %llu mode 0%o size %llu",
			(unsigned long long)le64toh(rec.inode.ino),
			le16toh(rec.inode.mode),
			(unsigned long long)le64toh(rec.inode.size));
	} else if (r->type == IF_MD_BLOCK_MAP) {
		fprintf(out, ": ino %llu base %llu count %u",
			(unsigned long long)le64toh(rec.bm.ino),
			(unsigned long long)le64toh(rec.bm.base),
			le32toh(rec.bm.count));
	} else {
		char name[IF_MAX_NAME_LEN + 1];

		memcpy(name, rec.da.name, rec.da.name_len);
		name[rec.da.name_len] = '\0';
		fprintf(out, ": %s dir %llu child %llu name \"",
			rec.da.type == IF_DA_ADD ? "add" :
			rec.da.type == IF_DA_REMOVE ? "remove" : "?",
			(unsigned long long)le64toh(rec.da.dir),
			(unsigned long long)le64toh(rec.da.child));
		put_name(out, name);
		fputc('"', out);
	}
	fputs(r->applied ? "\n" : " REFUSED\n", out);
}

static void put_super(FILE *out, struct incfs_img *img)
{
	struct if_super sb;

	fprintf(out, "image: %llu bytes\n", (unsigned long long)img->size);
	if (img->size < sizeof(sb) || read_exact(img->fd, &sb, sizeof(sb), 0)) {
		fputs("superblock: missing (image shorter than 32 bytes)\n", out);
		return;
	}
	fprintf(out, "superblock: magic 0x%llx version %llu size %u flags 0x%x first_md %llu block_size %u\n",
		(unsigned long long)le64toh(sb.magic),
		(unsigned long long)le64toh(sb.version), le16toh(sb.sb_size),
		le32toh(sb.flags), (unsigned long long)le64toh(sb.first_md),
		le16toh(sb.block_size));
}

int incfs_img_dump(const char *path, FILE *out)
{
	struct incfs_img img;
	struct path_buf *pb;
	bool *reach;
	size_t i;
	int err;

	err = incfs_img_open(&img, path);
	if (err)
		return err;
	pb = calloc(1, sizeof(*pb));
	reach = calloc(img.nfiles + 1, sizeof(*reach));
	err = -ENOMEM;
	if (!pb || !reach)
		goto out;
	put_super(out, &img);
	fprintf(out, "records: %zu\n", img.nrecords);
	for (i = 0; i < img.nrecords; i++)
		put_record(out, &img, &img.records[i]);
	fputs("tree:\n", out);
	put_node(out, &img, pb, &img.root);
	put_tree(out, &img, pb, IF_ROOT_INO, reach);
	for (i = 0; i < img.nfiles; i++)
		if (!reach[i])
			fprintf(out, "  (unreachable) ino %llu mode 0%o size %llu nlink %u\n",
				(unsigned long long)img.files[i].ino,
				img.files[i].mode,
				(unsigned long long)img.files[i].size,
				nlink_of(&img, &img.files[i]));
	fputs("blocks:\n", out);
	for (i = 0; i < img.nfiles; i++)
		if (!is_dir(&img.files[i]))
			put_ranges(out, &img.files[i]);
	err = incfs_img_check_blocks(&img);
	if (err < 0)
		goto out;
	fprintf(out, "problems: %zu\n", img.nproblems);
	print_problems(&img, out);
	fprintf(out, "status: %s\n", incfs_img_status_name(img.status));
	err = 0;
out:
	free(pb);
	free(reach);
	incfs_img_close(&img);
	return err;
}

/* ===== gc ===== */

/* Mark the files reachable from the root by names. */
static bool *reachable(struct incfs_img *img)
{
	bool *reach = calloc(img->nfiles + 1, sizeof(*reach));
	struct incfs_img_file *d, *c;
	bool changed = true;
	size_t i;

	while (reach && changed) {
		changed = false;
		for (i = 0; i < img->nnames; i++) {
			d = incfs_img_file(img, img->names[i].dir_ino);
			c = incfs_img_file(img, img->names[i].child_ino);
			if (!d || !c || c == &img->root || reach[c - img->files])
				continue;
			if (d == &img->root || reach[d - img->files]) {
				reach[c - img->files] = true;
				changed = true;
			}
		}
	}
	return reach;
}

static bool name_kept(struct incfs_img *img, const struct incfs_img_name *n,
		      const bool *reach)
{
	struct incfs_img_file *d = incfs_img_file(img, n->dir_ino);

	return d && (d == &img->root || reach[d - img->files]);
}

/* Copy the blocks of reachable files: full ones first, then the rest. */
static int gc_blocks(struct incfs_img *img, struct incfs_img_writer *w,
		     const bool *reach, bool full)
{
	char buf[IF_BS];
	size_t i;
	uint32_t b;
	int n, err;

	for (i = 0; i < img->nfiles; i++) {
		struct incfs_img_file *f = &img->files[i];

		for (b = 0; reach[i] && f->blocks && b < f->block_count; b++) {
			const struct incfs_img_entry *e = &f->blocks[b];

			if (!e->stored_size || (e->stored_size == IF_BS) != full)
				continue;
			n = incfs_img_read_raw(img, f->ino, b, buf);
			if (n < 0)
				return n;
			err = incfs_img_put_raw(w, f->ino, b, buf, n, e->flags,
						e->crc);
			if (err)
				return err;
		}
	}
	return 0;
}

int incfs_img_gc(const char *in, const char *out)
{
	struct incfs_img_writer *w = NULL;
	struct incfs_img img;
	bool *reach = NULL;
	size_t i;
	int err;

	err = incfs_img_open(&img, in);
	if (err)
		return err;
	err = -EUCLEAN;
	if (img.status == INCFS_IMG_BROKEN)
		goto out;
	err = -ENOMEM;
	reach = reachable(&img);
	if (!reach)
		goto out;
	w = incfs_img_create(out);
	if (!w) {
		err = -errno;
		goto out;
	}
	err = 0;
	for (i = 0; !err && i < img.nfiles; i++)
		if (reach[i] && !incfs_img_new_file_ino(w, img.files[i].ino,
							img.files[i].mode,
							img.files[i].size))
			err = -errno;
	for (i = 0; !err && i < img.nnames; i++)
		if (name_kept(&img, &img.names[i], reach))
			err = incfs_img_add_name(w, img.names[i].dir_ino,
						 img.names[i].child_ino,
						 img.names[i].name);
	if (!err)
		err = gc_blocks(&img, w, reach, true);
	if (!err)
		err = gc_blocks(&img, w, reach, false);
	w_fail(w, err);
	err = incfs_img_finish(w);
out:
	free(reach);
	incfs_img_close(&img);
	return err;
}
