// SPDX-License-Identifier: GPL-2.0
/*
 * libincfs-image: read, check, repair, write and compact incfs backing
 * images in user space.
 *
 * The format code is the kernel's own (../../format.c and name_rules.c,
 * built here by incfs_format.c); the replay applies records as the
 * kernel's mount scan (scan.c, tree.c) does: what the kernel mounts is
 * CLEAN here, what it mounts after cutting a torn tail is REPAIRABLE, what
 * it refuses is BROKEN.
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

#include "../../format.h"
#include "../../name_rules.h"
#include "incfs_image.h"

#define ESIZE	sizeof(struct incfs_blockmap_entry)

/* ===== small helpers ===== */

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
	static const char zero[INCFS_DATA_FILE_BLOCK_SIZE];
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

static void bme_decode(const struct incfs_blockmap_entry *e,
		       struct incfs_img_entry *d)
{
	d->data_offset = incfs_bme_offset(e);
	d->stored_size = le16_to_cpu(e->me_data_size);
	d->flags = le16_to_cpu(e->me_flags);
	d->crc = le32_to_cpu(e->me_data_crc);
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

	if (ino == INCFS_ROOT_INODE)
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

static int check_new(struct incfs_img *img, uint16_t mode, uint64_t size)
{
	return incfs_new_node_check(mode, size, img->nfiles + 1);
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
	f->block_count = incfs_blocks_for_size(f->size);
	return f;
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

/* struct incfs_ns_ops over the replayed state: the kernel's rules. */
static umode_t ns_mode(void *ns, u64 ino)
{
	struct incfs_img_file *f = incfs_img_file(ns, ino);

	return f ? f->mode : 0;
}

static u64 ns_lookup(void *ns, u64 dir, const char *name, size_t len)
{
	struct incfs_img *img = ns;
	ssize_t i = find_name(img, dir, name, len);

	return i < 0 ? 0 : img->names[i].child_ino;
}

/* The directory holding @ino's first name, or 0. */
static u64 ns_parent(void *ns, u64 ino)
{
	struct incfs_img *img = ns;
	size_t i;

	for (i = 0; i < img->nnames; i++)
		if (img->names[i].child_ino == ino)
			return img->names[i].dir_ino;
	return 0;
}

static bool ns_has_entries(void *ns, u64 dir)
{
	struct incfs_img *img = ns;
	size_t i;

	for (i = 0; i < img->nnames; i++)
		if (img->names[i].dir_ino == dir)
			return true;
	return false;
}

static unsigned long ns_names(void *ns)
{
	return ((struct incfs_img *)ns)->nnames;
}

static const struct incfs_ns_ops img_ns_ops = {
	.mode = ns_mode,
	.lookup = ns_lookup,
	.parent = ns_parent,
	.has_entries = ns_has_entries,
	.names = ns_names,
};

static int name_check(struct incfs_img *img, uint8_t type, uint64_t dir,
		      uint64_t child, const char *name, size_t len)
{
	return incfs_name_rules_check(&img_ns_ops, img, type, dir, child, name,
				      len);
}

static int name_apply(struct incfs_img *img, uint8_t type, uint64_t dir,
		      uint64_t child, const char *name, size_t len)
{
	struct incfs_img_name *n;
	ssize_t found;

	if (type == INCFS_DIRA_REMOVE_ENTRY) {
		found = find_name(img, dir, name, len);
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
	struct incfs_walk w;
};

static ssize_t scan_read(void *ctx, void *buf, size_t len, loff_t pos)
{
	struct incfs_img *img = ctx;
	int err = read_exact(img->fd, buf, len, pos);

	return err ? err : (ssize_t)len;
}

/* What the walker refuses a chain for (format.c); else an I/O error. */
static bool format_error(int err)
{
	return err == -EINVAL || err == -EBADMSG || err == -EILSEQ;
}

/* 0 ready to walk, W_STOP, or -errno. */
static int walk_start(struct scan *s)
{
	struct incfs_img *img = s->img;
	bool short_image = img->size < (uint64_t)sizeof(struct incfs_super_block);
	int ret;

	ret = incfs_walk_start(&s->w, scan_read, img, img->size);
	s->w.go_on = true;
	img->short_image = short_image;
	if (ret == INCFS_IMAGE_EMPTY) {
		problem(img, 0, true, img->size ?
			"superblock cut short (a crash while creating the image)" :
			"empty image: no superblock yet");
		return W_STOP;
	}
	if (ret < 0 && !format_error(ret))
		return ret;
	if (ret < 0) {
		problem(img, 0, false, short_image ? "%s" : "superblock: %s",
			s->w.why);
		return W_STOP;
	}
	img->first_md_offset = s->w.next;
	return 0;
}

static int record_push(struct scan *s, bool crc_ok)
{
	const struct incfs_md_header *h = &s->w.rec.h;
	struct incfs_img *img = s->img;
	struct incfs_img_record *r;

	if (!grow((void **)&img->records, img->nrecords, sizeof(*r)))
		return -ENOMEM;
	r = &img->records[img->nrecords++];
	r->offset = s->w.rec_off;
	r->type = h->h_md_entry_type;
	r->size = le16_to_cpu(h->h_record_size);
	r->crc_ok = crc_ok;
	r->next = le64_to_cpu(h->h_next_md_offset);
	r->prev = le64_to_cpu(h->h_prev_md_offset);
	r->applied = false;
	return 0;
}

/* A chain the walker cannot follow further: one problem, W_STOP. */
static int walk_stopped(struct scan *s, int64_t link_pos)
{
	const struct incfs_md_header *h = &s->w.rec.h;
	uint64_t off = s->w.bad_off;

	if ((int64_t)off < s->w.prev_end)
		problem(s->img, off, false, "%s (link at %lld)", s->w.why,
			(long long)link_pos);
	else if (!incfs_md_size(h->h_md_entry_type))
		problem(s->img, off, false, "%s %u", s->w.why,
			h->h_md_entry_type);
	else
		problem(s->img, off, false, "%s %u for type %u", s->w.why,
			le16_to_cpu(h->h_record_size), h->h_md_entry_type);
	return W_STOP;
}

/* incfs_walk_next(), going on past a bad CRC or prev link: W_*, -errno. */
static int walk_next(struct scan *s)
{
	struct incfs_walk *w = &s->w;
	int64_t want_prev = w->prev, link_pos = w->link_pos;
	bool crc_ok;
	int ret;

	ret = incfs_walk_next(w);
	if (ret < 0)
		return format_error(ret) ? walk_stopped(s, link_pos) : ret;
	if (ret == 0 && w->torn) {
		s->img->torn = true;
		s->img->torn_link_pos = w->link_pos;
		if (w->torn_link)
			problem(s->img, w->next, true,
				"link torn by a crash: %s (link at %lld)",
				"the record it leads to is not whole", (long long)w->link_pos);
		else
			problem(s->img, w->next, true,
				"record cut off by the end of the image (torn tail; link at %lld)",
				(long long)w->link_pos);
	}
	if (ret == 0)
		return W_END;
	crc_ok = le32_to_cpu(w->rec.h.h_record_crc) == incfs_md_crc(&w->rec);
	if (ret == INCFS_WALK_BAD && !crc_ok)
		problem(s->img, w->rec_off, false, "%s", w->why);
	else if (ret == INCFS_WALK_BAD)
		problem(s->img, w->rec_off, false, "%s (%llu, want %lld)", w->why,
			(unsigned long long)le64_to_cpu(w->rec.h.h_prev_md_offset),
			(long long)want_prev);
	if (record_push(s, crc_ok))
		return -ENOMEM;
	return ret == INCFS_WALK_BAD ? W_SKIP : W_REC;
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
	const struct incfs_inode *r = &s->w.rec.inode;
	uint64_t ino = le64_to_cpu(r->i_no), size = le64_to_cpu(r->i_size);
	uint16_t mode = le16_to_cpu(r->i_mode);
	int err;

	if (ino <= INCFS_ROOT_INODE || ino > INCFS_MAX_INO)
		return refuse(s, s->w.rec_off, "bad inode number %llu",
			      (unsigned long long)ino);
	if (incfs_img_file(s->img, ino))
		return refuse(s, s->w.rec_off, "inode %llu declared twice",
			      (unsigned long long)ino);
	err = check_new(s->img, mode, size);
	if (err)
		return refuse(s, s->w.rec_off, "%s (ino %llu mode 0%o size %llu)",
			      err == -ENFILE ? "too many inodes" :
			      "bad inode mode or size",
			      (unsigned long long)ino, mode,
			      (unsigned long long)size);
	if (!file_add(s->img, ino, mode, size))
		return -ENOMEM;
	return 1;
}

static int torn_push(struct incfs_img *img, uint64_t pos)
{
	if (!grow((void **)&img->torn_entries, img->ntorn, sizeof(uint64_t)))
		return -ENOMEM;
	img->torn_entries[img->ntorn++] = pos;
	return 0;
}

/* Check and decode the entries of a blockmap area, as scan.c does. */
static int read_entries(struct scan *s, struct incfs_img_file *f,
			uint64_t base, bool *bad)
{
	struct incfs_blockmap_entry chunk[256];
	uint32_t i, j, n;
	const char *why;
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

			r = incfs_check_bme(&chunk[j], pos, s->w.size,
					    incfs_block_len(f->size, i + j), &why);
			if (r == INCFS_BME_ABSENT)
				continue;
			bme_decode(&chunk[j], e);
			if (r == INCFS_BME_PRESENT)
				continue;
			if (r < 0) {
				refuse(s, pos, "%s: ino %llu block %u", why,
				       (unsigned long long)f->ino, i + j);
				*bad = true;
			} else {
				if (e->data_offset + e->stored_size > (uint64_t)s->w.size)
					problem(s->img, pos, true,
						"ino %llu block %u: data at %llu+%u past the end of the image (torn)",
						(unsigned long long)f->ino, i + j,
						(unsigned long long)e->data_offset,
						e->stored_size);
				else
					problem(s->img, pos, true, "ino %llu block %u: %s",
						(unsigned long long)f->ino, i + j, why);
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
	const struct incfs_blockmap *r = &s->w.rec.bm;
	struct incfs_img_file *f = incfs_img_file(s->img, le64_to_cpu(r->m_inode));
	uint64_t base = le64_to_cpu(r->m_base_offset);
	bool bad = false;
	int ret;

	if (!f || is_dir(f) || f->blockmap_offset)
		return refuse(s, s->w.rec_off,
			      "blockmap of an unknown, directory or mapped inode %llu",
			      (unsigned long long)le64_to_cpu(r->m_inode));
	if (incfs_check_blockmap(&s->w, f->size))
		return refuse(s, s->w.rec_off, "%s (base %llu count %u size %llu)",
			      s->w.why, (unsigned long long)base,
			      le32_to_cpu(r->m_block_count),
			      (unsigned long long)f->size);
	if (f->block_count) {
		f->blocks = calloc(f->block_count, sizeof(*f->blocks));
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
	const struct incfs_dir_action *r = &s->w.rec.da;
	uint64_t dir = le64_to_cpu(r->da_dir_inode);
	uint64_t child = le64_to_cpu(r->da_entry_inode);
	int err;

	if (r->da_type != INCFS_DIRA_ADD_ENTRY &&
	    r->da_type != INCFS_DIRA_REMOVE_ENTRY)
		return refuse(s, s->w.rec_off, "bad dir action type %u",
			      r->da_type);
	err = name_check(s->img, r->da_type, dir, child, r->da_name,
			 r->da_name_len);
	if (err)
		return refuse(s, s->w.rec_off,
			      "dir action an instruction could not make (%s %llu in %llu: %s)",
			      r->da_type == INCFS_DIRA_ADD_ENTRY ? "add" : "remove",
			      (unsigned long long)child, (unsigned long long)dir,
			      errname(err));
	err = name_apply(s->img, r->da_type, dir, child, r->da_name,
			 r->da_name_len);
	return err ? err : 1;
}

/* 1 applied, 0 refused, -errno. */
static int apply_record(struct scan *s)
{
	switch (s->w.rec.h.h_md_entry_type) {
	case INCFS_MD_INODE:
		return apply_inode(s);
	case INCFS_MD_BLOCK_MAP:
		return apply_blockmap(s);
	case INCFS_MD_DIR_ACTION:
		return apply_dir_action(s);
	}
	return refuse(s, s->w.rec_off, "unknown record type");
}

static int replay(struct incfs_img *img)
{
	struct scan s = { .img = img };
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
	img->last_record = s.w.prev;
	img->valid_end = s.w.prev_end;
	return img->oom ? -ENOMEM : 0;
}

/* ===== open, close, read ===== */

static void img_init(struct incfs_img *img, int fd)
{
	memset(img, 0, sizeof(*img));
	img->fd = fd;
	img->root.ino = INCFS_ROOT_INODE;
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
	*len = incfs_block_len(f->size, index);
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
	if (crc32_le(0, buf, e->stored_size) != e->crc)
		return -EBADMSG;
	return e->stored_size;
}

int incfs_img_read_block(struct incfs_img *img, uint64_t ino, uint32_t index,
			 void *buf)
{
	const struct incfs_img_entry *e;
	char raw[INCFS_DATA_FILE_BLOCK_SIZE];
	uint32_t len;
	int n, err;

	e = entry_of(img, ino, index, &len, &err);
	if (!e)
		return err;
	n = incfs_img_read_raw(img, ino, index, raw);
	if (n < 0)
		return n;
	if (!(e->flags & INCFS_BLOCK_COMPRESSED_LZ4)) {
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
	uint32_t len = incfs_block_len(f->size, b);
	char raw[INCFS_DATA_FILE_BLOCK_SIZE], buf[INCFS_DATA_FILE_BLOCK_SIZE];
	int n;

	n = incfs_img_read_raw(img, f->ino, b, raw);
	if (n == -EBADMSG)
		return "data CRC mismatch";
	if (n < 0)
		return "cannot read data";
	if ((e->flags & INCFS_BLOCK_COMPRESSED_LZ4) &&
	    LZ4_decompress_safe(raw, buf, n, len) != (int)len)
		return "bad LZ4 data";
	return NULL;
}

/*
 * A block whose data fails its CRC where its entry may be a write torn by a
 * crash: the kernel reads it as absent (data.c), and a repair clears it.
 */
static bool torn_entry(struct incfs_img *img, const struct incfs_img_file *f,
		       uint32_t b, const char *why)
{
	const struct incfs_img_entry *e = &f->blocks[b];
	uint64_t pos = f->blockmap_offset + (uint64_t)b * ESIZE;
	struct incfs_blockmap_entry bme;

	if (strcmp(why, "data CRC mismatch"))
		return false;
	incfs_encode_bme(&bme, e->data_offset, e->stored_size, e->flags, e->crc);
	if (!incfs_bme_maybe_torn(&bme, pos, incfs_block_len(f->size, b)))
		return false;
	problem(img, pos, true, "ino %llu block %u: entry torn by a crash (%s)",
		(unsigned long long)f->ino, b, why);
	if (torn_push(img, pos))
		img->oom = true;
	return true;
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
			if (torn_entry(img, f, b, why))
				continue;
			problem(img, e->data_offset, false,
				"ino %llu block %u: %s (%u bytes stored%s)",
				(unsigned long long)f->ino, b, why,
				e->stored_size,
				e->flags & INCFS_BLOCK_COMPRESSED_LZ4 ? ", lz4" : "");
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
	struct incfs_super_block sb;
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
	incfs_sb_init(&sb);
	err = write_all(fd, &sb, sizeof(sb), 0);
	if (err) {
		close(fd);
		free(w);
		errno = -err;
		return NULL;
	}
	w->end = sizeof(sb);
	w->next_ino = INCFS_ROOT_INODE + 1;
	return w;
}

static int w_fail(struct incfs_img_writer *w, int err)
{
	if (err && !w->err)
		w->err = err;
	return err;
}

/* incfs_bf_append_md(): write the record, then link it. */
static int append_md(struct incfs_img_writer *w, union incfs_md_record *rec)
{
	size_t size = le16_to_cpu(rec->h.h_record_size);
	uint64_t pos = incfs_md_pos(w->end), link_pos, link;
	int err;

	if (pos + size > INCFS_MAX_DATA_OFFSET)
		return w_fail(w, -EFBIG);
	incfs_md_seal(rec, w->last_md);
	err = write_all(w->st.fd, rec, size, pos);
	if (err)
		return w_fail(w, err);
	link_pos = w->last_md ?
		w->last_md + offsetof(struct incfs_md_header, h_next_md_offset) :
		offsetof(struct incfs_super_block, s_first_md_offset);
	link = cpu_to_le64(pos);
	err = write_all(w->st.fd, &link, sizeof(link), link_pos);
	if (err)
		return w_fail(w, err);
	w->last_md = pos;
	w->end = pos + size;
	return 0;
}

/* incfs_ensure_blockmap(): a zeroed area, then its record. */
static int append_blockmap(struct incfs_img_writer *w,
			   struct incfs_img_file *f)
{
	uint64_t base = w->end, len = (uint64_t)f->block_count * ESIZE;
	union incfs_md_record rec;
	int err;

	if (base + len > INCFS_MAX_DATA_OFFSET)
		return w_fail(w, -EFBIG);
	err = write_zeros(w->st.fd, len, base);
	if (err)
		return w_fail(w, err);
	w->end = base + len;
	incfs_encode_blockmap(&rec.bm, f->ino, base, f->block_count);
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
	union incfs_md_record rec;
	int err;

	if (w->err) {
		errno = -w->err;
		return 0;
	}
	err = ino <= INCFS_ROOT_INODE || ino > INCFS_MAX_INO ? -EINVAL :
	      incfs_img_file(&w->st, ino) ? -EEXIST :
	      check_new(&w->st, mode, size);
	if (err) {
		errno = -err;
		return 0;
	}
	if ((mode & S_IFMT) == S_IFDIR)
		size = 0;
	incfs_encode_inode(&rec.inode, ino, size, (mode & S_IFMT) | (mode & 0555));
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
	if (w->next_ino > INCFS_MAX_INO) {
		errno = ENOSPC;
		return 0;
	}
	return incfs_img_new_file_ino(w, w->next_ino, mode, size);
}

static int name_op(struct incfs_img_writer *w, uint8_t type, uint64_t dir,
		   uint64_t child, const char *name)
{
	size_t len = strnlen(name, INCFS_MAX_NAME_LEN + 1);
	union incfs_md_record rec;
	int err;

	if (w->err)
		return w->err;
	err = name_check(&w->st, type, dir, child, name, len);
	if (err)
		return err;
	incfs_encode_dir_action(&rec.da, type, dir, child, name, len);
	err = append_md(w, &rec);
	if (!err)
		err = w_fail(w, name_apply(&w->st, type, dir, child, name, len));
	return err;
}

int incfs_img_add_name(struct incfs_img_writer *w, uint64_t dir,
		       uint64_t child, const char *name)
{
	return name_op(w, INCFS_DIRA_ADD_ENTRY, dir, child, name);
}

int incfs_img_remove_name(struct incfs_img_writer *w, uint64_t dir,
			  uint64_t child, const char *name)
{
	return name_op(w, INCFS_DIRA_REMOVE_ENTRY, dir, child, name);
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
	struct incfs_blockmap_entry bme;
	uint64_t pos = w->end;
	int err;

	if (f->blocks[index].stored_size)
		return 0;
	if (size == INCFS_DATA_FILE_BLOCK_SIZE)
		pos = round_up(pos, INCFS_DATA_FILE_BLOCK_SIZE);
	if (pos + size > INCFS_MAX_DATA_OFFSET)
		return w_fail(w, -EFBIG);
	err = write_all(w->st.fd, data, size, pos);
	if (err)
		return w_fail(w, err);
	w->end = pos + size;
	e.data_offset = pos;
	e.stored_size = size;
	e.flags = flags;
	e.crc = crc32_le(0, data, size);
	incfs_encode_bme(&bme, pos, size, flags, e.crc);
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
	char out[INCFS_DATA_FILE_BLOCK_SIZE];
	int err, n = 0;

	f = w_block_file(w, ino, index, &err);
	if (!f)
		return err;
	if (len != incfs_block_len(f->size, index))
		return -EINVAL;
	if (lz4)
		n = LZ4_compress_default(data, out, len, len - 1);
	if (n > 0 && (size_t)n < len)
		return store(w, f, index, out, n, INCFS_BLOCK_COMPRESSED_LZ4);
	return store(w, f, index, data, len, 0);
}

int incfs_img_put_raw(struct incfs_img_writer *w, uint64_t ino,
		      uint32_t index, const void *data, size_t stored,
		      uint16_t flags, uint32_t crc)
{
	struct incfs_img_file *f;
	char tmp[INCFS_DATA_FILE_BLOCK_SIZE];
	uint32_t len;
	int err;

	f = w_block_file(w, ino, index, &err);
	if (!f)
		return err;
	len = incfs_block_len(f->size, index);
	if ((flags & ~INCFS_BLOCK_COMPRESSED_LZ4) || !stored ||
	    stored > INCFS_DATA_FILE_BLOCK_SIZE ||
	    (!(flags & INCFS_BLOCK_COMPRESSED_LZ4) && stored != len))
		return -EINVAL;
	if ((flags & INCFS_BLOCK_COMPRESSED_LZ4) &&
	    LZ4_decompress_safe(data, tmp, stored, INCFS_DATA_FILE_BLOCK_SIZE) != (int)len)
		return -EBADMSG;
	if (crc32_le(0, data, stored) != crc)
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
	struct incfs_super_block sb;
	uint64_t end = img->valid_end, zero = 0;
	size_t i;
	uint32_t b;
	int err;

	if (img->short_image) {
		incfs_sb_init(&sb);
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
	const char *part[INCFS_MAX_FILES + 1];
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
		if (!c || c == &img->root || pb->depth >= INCFS_MAX_FILES)
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
		lz4 += !!(f->blocks[b].flags & INCFS_BLOCK_COMPRESSED_LZ4);
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
	union incfs_md_record rec;

	fprintf(out, "  @%llu %s size %u crc %s next %llu prev %llu",
		(unsigned long long)r->offset, types[r->type], r->size,
		r->crc_ok ? "ok" : "BAD", (unsigned long long)r->next,
		(unsigned long long)r->prev);
	if (read_exact(img->fd, &rec, r->size, r->offset)) {
		fputs(": unreadable\n", out);
		return;
	}
	if (r->type == INCFS_MD_INODE) {
		fprintf(out, ": ino %llu mode 0%o size %llu",
			(unsigned long long)le64_to_cpu(rec.inode.i_no),
			le16_to_cpu(rec.inode.i_mode),
			(unsigned long long)le64_to_cpu(rec.inode.i_size));
	} else if (r->type == INCFS_MD_BLOCK_MAP) {
		fprintf(out, ": ino %llu base %llu count %u",
			(unsigned long long)le64_to_cpu(rec.bm.m_inode),
			(unsigned long long)le64_to_cpu(rec.bm.m_base_offset),
			le32_to_cpu(rec.bm.m_block_count));
	} else {
		char name[INCFS_MAX_NAME_LEN + 1];

		memcpy(name, rec.da.da_name, rec.da.da_name_len);
		name[rec.da.da_name_len] = '\0';
		fprintf(out, ": %s dir %llu child %llu name \"",
			rec.da.da_type == INCFS_DIRA_ADD_ENTRY ? "add" :
			rec.da.da_type == INCFS_DIRA_REMOVE_ENTRY ? "remove" : "?",
			(unsigned long long)le64_to_cpu(rec.da.da_dir_inode),
			(unsigned long long)le64_to_cpu(rec.da.da_entry_inode));
		put_name(out, name);
		fputc('"', out);
	}
	fputs(r->applied ? "\n" : " REFUSED\n", out);
}

static void put_super(FILE *out, struct incfs_img *img)
{
	struct incfs_super_block sb;

	fprintf(out, "image: %llu bytes\n", (unsigned long long)img->size);
	if (img->size < sizeof(sb) || read_exact(img->fd, &sb, sizeof(sb), 0)) {
		fputs("superblock: missing (image shorter than 32 bytes)\n", out);
		return;
	}
	fprintf(out, "superblock: magic 0x%llx version %llu size %u flags 0x%x first_md %llu block_size %u\n",
		(unsigned long long)le64_to_cpu(sb.s_magic),
		(unsigned long long)le64_to_cpu(sb.s_version),
		le16_to_cpu(sb.s_super_block_size), le32_to_cpu(sb.s_flags),
		(unsigned long long)le64_to_cpu(sb.s_first_md_offset),
		le16_to_cpu(sb.s_data_block_size));
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
	put_tree(out, &img, pb, INCFS_ROOT_INODE, reach);
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
	char buf[INCFS_DATA_FILE_BLOCK_SIZE];
	size_t i;
	uint32_t b;
	int n, err;

	for (i = 0; i < img->nfiles; i++) {
		struct incfs_img_file *f = &img->files[i];

		for (b = 0; reach[i] && f->blocks && b < f->block_count; b++) {
			const struct incfs_img_entry *e = &f->blocks[b];
			bool whole = e->stored_size == INCFS_DATA_FILE_BLOCK_SIZE;

			if (!e->stored_size || whole != full)
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
