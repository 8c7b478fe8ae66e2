// SPDX-License-Identifier: GPL-2.0
/*
 * The VFS side: inodes, a read-only directory tree, and files whose pages
 * are filled from the backing file as their blocks arrive.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/namei.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "incfs.h"

static const struct inode_operations incfs_dir_iops;
static const struct inode_operations incfs_file_iops;
static const struct file_operations incfs_dir_fops;
static const struct file_operations incfs_file_fops;
static const struct address_space_operations incfs_aops;

static void init_common(struct inode *inode, umode_t mode)
{
	struct incfs_mount *mi = incfs_sb(inode->i_sb);
	struct timespec64 t = inode_set_ctime_current(inode);

	inode->i_mode = mode;
	inode->i_uid = mi->cred->fsuid;
	inode->i_gid = mi->cred->fsgid;
	inode_set_atime_to_ts(inode, t);
	inode_set_mtime_to_ts(inode, t);
}

struct inode *incfs_iget(struct super_block *sb, struct incfs_node *node)
{
	struct inode *inode = iget_locked(sb, node->ino);

	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return inode;

	init_common(inode, node->mode);
	inode->i_private = node;
	set_nlink(inode, READ_ONCE(node->nlink));
	if (S_ISDIR(node->mode)) {
		inode->i_op = &incfs_dir_iops;
		inode->i_fop = &incfs_dir_fops;
	} else {
		inode->i_op = &incfs_file_iops;
		inode->i_fop = &incfs_file_fops;
		inode->i_mapping->a_ops = &incfs_aops;
		i_size_write(inode, node->size);
		inode->i_blocks = node->size >> 9;
	}
	unlock_new_inode(inode);
	return inode;
}

static struct inode *special_inode(struct super_block *sb, unsigned long ino,
				   umode_t mode, const struct file_operations *fops)
{
	struct inode *inode = iget_locked(sb, ino);

	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return inode;
	init_common(inode, mode);
	inode->i_op = &incfs_file_iops;
	inode->i_fop = fops;
	unlock_new_inode(inode);
	return inode;
}

/* .cmd: only its owner, the mounter, may use it. */
struct inode *incfs_cmd_inode(struct super_block *sb)
{
	return special_inode(sb, INCFS_COMMAND_INODE, S_IFREG | 0600, &incfs_cmd_fops);
}

/* .log: only its owner, the mounter (the loader), may read it. */
struct inode *incfs_log_inode(struct super_block *sb)
{
	return special_inode(sb, INCFS_LOG_INODE, S_IFREG | 0400, &incfs_log_fops);
}

/* Is @name the root's .log, while the mount has a read log? */
static bool is_log(struct incfs_mount *mi, struct inode *dir, const struct qstr *name)
{
	return incfs_node(dir) == mi->root && incfs_log_on(mi) &&
	       name->len == strlen(INCFS_LOG_FILENAME) &&
	       !memcmp(name->name, INCFS_LOG_FILENAME, name->len);
}

/* The tree changes only through .cmd; a non-owner gets the VFS's answer. */
static int incfs_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			 struct iattr *attr)
{
	int err = setattr_prepare(idmap, dentry, attr);

	return err ?: -EPERM;
}

static int incfs_getattr(struct mnt_idmap *idmap, const struct path *path,
			 struct kstat *stat, u32 request_mask,
			 unsigned int flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct incfs_node *node = incfs_node(inode);

	generic_fillattr(idmap, request_mask, inode, stat);
	if (node)
		stat->nlink = READ_ONCE(node->nlink);
	return 0;
}

static struct dentry *incfs_lookup(struct inode *dir, struct dentry *dentry,
				   unsigned int flags)
{
	struct incfs_mount *mi = incfs_sb(dir->i_sb);
	struct incfs_node *node;
	struct inode *inode = NULL;

	if (dentry->d_name.len > INCFS_MAX_NAME_LEN)
		return ERR_PTR(-ENAMETOOLONG);
	if (incfs_node(dir) == mi->root && !strcmp(dentry->d_name.name, ".cmd"))
		return d_splice_alias(incfs_cmd_inode(dir->i_sb), dentry);
	if (is_log(mi, dir, &dentry->d_name))
		return d_splice_alias(incfs_log_inode(dir->i_sb), dentry);

	mutex_lock(&mi->tree_mutex);
	node = incfs_tree_lookup(incfs_node(dir), dentry->d_name.name,
				 dentry->d_name.len);
	dentry->d_time = mi->generation;
	mutex_unlock(&mi->tree_mutex);
	if (node)
		inode = incfs_iget(dir->i_sb, node);
	return d_splice_alias(inode, dentry);
}

/*
 * A cached name stays valid while no name changed since it was looked up;
 * otherwise look it up again.
 */
static int incfs_d_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct incfs_mount *mi = incfs_sb(dentry->d_sb);
	struct incfs_node *dir, *node;
	struct dentry *parent;
	struct inode *inode;
	int valid;

	if (dentry->d_time == READ_ONCE(mi->generation))
		return 1;
	if (flags & LOOKUP_RCU)
		return -ECHILD;

	parent = dget_parent(dentry);
	dir = incfs_node(d_inode(parent));
	inode = d_inode(dentry);
	if (inode && (inode->i_ino == INCFS_COMMAND_INODE ||
		      inode->i_ino == INCFS_LOG_INODE)) {
		dput(parent);
		return 1;
	}
	mutex_lock(&mi->tree_mutex);
	node = incfs_tree_lookup(dir, dentry->d_name.name, dentry->d_name.len);
	valid = inode ? node == incfs_node(inode) : !node;
	if (valid)
		dentry->d_time = mi->generation;
	mutex_unlock(&mi->tree_mutex);
	dput(parent);
	return valid;
}

const struct dentry_operations incfs_dentry_ops = {
	.d_revalidate	= incfs_d_revalidate,
};

/*
 * readdir copies names to user memory, which may fault on a page of an
 * incfs file whose block is absent and wait for the loader for up to
 * read_timeout_ms.  So names are copied out of the tree in batches under
 * tree_mutex and emitted without it: lookups, instructions and sync never
 * wait for a reader's page fault.
 */
#define INCFS_READDIR_BATCH	16

struct incfs_readdir_batch {
	unsigned int n;
	struct {
		u64 cookie;
		u64 ino;
		unsigned char type;
		u8 len;
		char name[NAME_MAX];
	} e[INCFS_READDIR_BATCH];
};

/* The names of dir from position pos on, at most a batch of them. */
static void incfs_readdir_batch(struct incfs_mount *mi, struct incfs_node *dir,
				loff_t pos, struct incfs_readdir_batch *b)
{
	struct incfs_dirent *de;
	unsigned long cookie;

	b->n = 0;
	mutex_lock(&mi->tree_mutex);
	xa_for_each_start(&dir->children, cookie, de, pos - 3) {
		b->e[b->n].cookie = de->cookie;
		b->e[b->n].ino = de->child->ino;
		b->e[b->n].type = S_ISDIR(de->child->mode) ? DT_DIR : DT_REG;
		b->e[b->n].len = de->len;
		memcpy(b->e[b->n].name, de->name, de->len);
		if (++b->n == INCFS_READDIR_BATCH)
			break;
	}
	mutex_unlock(&mi->tree_mutex);
}

/* Positions: 0 ".", 1 "..", 2 ".cmd" in the root, 3 + cookie for names. */
static int incfs_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *inode = file_inode(file);
	struct incfs_mount *mi = incfs_sb(inode->i_sb);
	struct incfs_node *dir = incfs_node(inode);
	struct incfs_readdir_batch *b;
	unsigned int i;

	if (!dir_emit_dots(file, ctx))
		return 0;
	if (ctx->pos == 2) {
		if (dir == mi->root &&
		    !dir_emit(ctx, ".cmd", 4, INCFS_COMMAND_INODE, DT_REG))
			return 0;
		ctx->pos = 3;
	}
	b = kmalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	do {
		incfs_readdir_batch(mi, dir, ctx->pos, b);
		for (i = 0; i < b->n; i++) {
			if (!dir_emit(ctx, b->e[i].name, b->e[i].len, b->e[i].ino,
				      b->e[i].type))
				goto out;
			ctx->pos = b->e[i].cookie + 4;
		}
	} while (b->n == INCFS_READDIR_BATCH);
out:
	kfree(b);
	return 0;
}

static int incfs_create(struct mnt_idmap *idmap, struct inode *dir,
			struct dentry *dentry, umode_t mode, bool excl)
{
	return -EPERM;
}

static int incfs_mkdir(struct mnt_idmap *idmap, struct inode *dir,
		       struct dentry *dentry, umode_t mode)
{
	return -EPERM;
}

static int incfs_mknod(struct mnt_idmap *idmap, struct inode *dir,
		       struct dentry *dentry, umode_t mode, dev_t dev)
{
	return -EPERM;
}

static int incfs_symlink(struct mnt_idmap *idmap, struct inode *dir,
			 struct dentry *dentry, const char *target)
{
	return -EPERM;
}

static int incfs_link(struct dentry *old, struct inode *dir,
		      struct dentry *dentry)
{
	return -EPERM;
}

static int incfs_unlink(struct inode *dir, struct dentry *dentry)
{
	return -EPERM;
}

static int incfs_rename(struct mnt_idmap *idmap, struct inode *old_dir,
			struct dentry *old, struct inode *new_dir,
			struct dentry *new, unsigned int flags)
{
	return -EPERM;
}

static int incfs_tmpfile(struct mnt_idmap *idmap, struct inode *dir,
			 struct file *file, umode_t mode)
{
	return -EPERM;
}

static const struct inode_operations incfs_dir_iops = {
	.lookup		= incfs_lookup,
	.getattr	= incfs_getattr,
	.setattr	= incfs_setattr,
	.create		= incfs_create,
	.mkdir		= incfs_mkdir,
	.mknod		= incfs_mknod,
	.symlink	= incfs_symlink,
	.link		= incfs_link,
	.unlink		= incfs_unlink,
	.rmdir		= incfs_unlink,
	.rename		= incfs_rename,
	.tmpfile	= incfs_tmpfile,
};

static const struct inode_operations incfs_file_iops = {
	.getattr	= incfs_getattr,
	.setattr	= incfs_setattr,
};

static const struct file_operations incfs_dir_fops = {
	.llseek		= generic_file_llseek,
	.read		= generic_read_dir,
	.iterate_shared	= incfs_readdir,
};

static int incfs_file_open(struct inode *inode, struct file *file)
{
	if ((file->f_mode & FMODE_WRITE) || (file->f_flags & O_TRUNC))
		return -EPERM;
	return generic_file_open(inode, file);
}

/*
 * read(2), splice(2) and sendfile(2) wait for the blocks they cover here,
 * interruptibly, before the page cache is asked for them: read_folio() can
 * only wait killably, since an error from it becomes SIGBUS in a page
 * fault.  Returns how many of the @count bytes at @pos may be read: up to
 * the first absent block after present ones, 0 at the end of the file, or
 * the error of the first block, which the read log records: the reader
 * asked for it, though it never reaches read_folio().
 */
static ssize_t wait_blocks(struct incfs_node *node, loff_t pos, size_t count)
{
	struct incfs_blockmap_entry bme;
	loff_t end;
	u32 i, first, last;
	int err;

	if (pos >= node->size || !count)
		return 0;
	end = min_t(loff_t, node->size, pos + count);
	first = pos >> PAGE_SHIFT;
	last = (end - 1) >> PAGE_SHIFT;
	for (i = first; i <= last; i++) {
		err = incfs_wait_block(node, i, INCFS_WAIT_INTERRUPTIBLE, &bme);
		if (!err)
			continue;
		if (i == first) {
			incfs_log_reads(node->mi, node->ino, i, 1);
			return err;
		}
		return ((loff_t)i << PAGE_SHIFT) - pos;
	}
	return end - pos;
}

static ssize_t incfs_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct incfs_node *node = incfs_node(file_inode(iocb->ki_filp));
	ssize_t n = wait_blocks(node, iocb->ki_pos, iov_iter_count(to));

	if (n <= 0)
		return n;
	iov_iter_truncate(to, n);
	return generic_file_read_iter(iocb, to);
}

static ssize_t incfs_splice_read(struct file *in, loff_t *ppos,
				 struct pipe_inode_info *pipe, size_t len,
				 unsigned int flags)
{
	ssize_t n = wait_blocks(incfs_node(file_inode(in)), *ppos, len);

	if (n <= 0)
		return n;
	return filemap_splice_read(in, ppos, pipe, n, flags);
}

static const struct file_operations incfs_file_fops = {
	.open		= incfs_file_open,
	.llseek		= generic_file_llseek,
	.read_iter	= incfs_read_iter,
	.mmap		= generic_file_readonly_mmap,
	.splice_read	= incfs_splice_read,
};

/*
 * Page faults, or a page readahead did not bring: one block, waited for
 * killably (an error here is SIGBUS).
 */
static int incfs_read_folio(struct file *file, struct folio *folio)
{
	struct inode *inode = folio->mapping->host;
	struct incfs_blockmap_entry bme;
	int err;

	incfs_log_reads(incfs_sb(inode->i_sb), incfs_node(inode)->ino, folio->index, 1);
	do {
		err = incfs_wait_block(incfs_node(inode), folio->index,
				       INCFS_WAIT_KILLABLE, &bme);
		if (err)
			break;
		err = incfs_read_block(inode, folio->index, &bme, folio);
		/* A torn entry: the block is absent now; wait for it. */
	} while (err == INCFS_BLOCK_FORGOTTEN);
	if (!err)
		folio_mark_uptodate(folio);
	folio_unlock(folio);
	return err;
}

/*
 * Readahead reads its blocks in groups, each with one read: runs of full
 * uncompressed blocks stored back to back (whole pages, read directly
 * where the backing filesystem allows), and blocks that are not whole
 * pages (LZ4 blocks, a tail) stored back to back.
 */
struct ra_group {
	struct folio *folios[INCFS_READ_RUN];
	struct incfs_blockmap_entry bmes[INCFS_READ_RUN];
	unsigned int n;
	bool packed;		/* not whole pages */
};

/* Is @bme's block one of whole pages?  Else it is packed. */
static bool whole_page(struct incfs_node *node, u32 index,
		       const struct incfs_blockmap_entry *bme)
{
	return !(le16_to_cpu(bme->me_flags) & INCFS_BLOCK_COMPRESSED_LZ4) &&
	       incfs_block_len(node->size, index) == PAGE_SIZE;
}

static bool joins_group(struct incfs_node *node, u32 index,
			const struct incfs_blockmap_entry *bme,
			const struct ra_group *g)
{
	const struct incfs_blockmap_entry *last = &g->bmes[g->n - 1];
	size_t step = g->packed ? le16_to_cpu(last->me_data_size) : PAGE_SIZE;

	return g->n < INCFS_READ_RUN &&
	       whole_page(node, index, bme) != g->packed &&
	       incfs_bme_offset(bme) == incfs_bme_offset(last) + step;
}

static void end_group(struct inode *inode, struct ra_group *g,
		      struct incfs_bf_span *span, bool random)
{
	if (g->n)
		incfs_log_reads(incfs_sb(inode->i_sb), incfs_node(inode)->ino,
				g->folios[0]->index, g->n);
	if (g->n && g->packed)
		incfs_read_packed(inode, g->folios, g->bmes, g->n, span, random);
	else if (g->n)
		incfs_read_run(inode, g->folios, g->bmes, g->n, random);
	g->n = 0;
}

/*
 * Readahead never waits: it fills the window up to the first absent
 * block, and the core drops the rest.  Only the page a reader actually
 * needs waits, in read_folio().  The backing file's pages read through its
 * page cache for packed groups are dropped after the last (@span).
 */
static void incfs_readahead(struct readahead_control *rac)
{
	struct inode *inode = rac->mapping->host;
	struct incfs_node *node = incfs_node(inode);
	bool random = rac->file && (rac->file->f_mode & FMODE_RANDOM);
	struct incfs_bf_span span = {};
	struct incfs_blockmap_entry bme;
	struct ra_group *g;
	struct folio *folio;

	/* About 700 bytes: not on the stack of a page fault's readahead. */
	g = kmalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return;	/* the core unlocks the folios; read_folio() reads them */
	g->n = 0;
	while ((folio = readahead_folio(rac))) {
		if (incfs_wait_block(node, folio->index, INCFS_NOWAIT, &bme)) {
			folio_unlock(folio);
			break;
		}
		if (g->n && !joins_group(node, folio->index, &bme, g))
			end_group(inode, g, &span, random);
		if (!g->n)
			g->packed = !whole_page(node, folio->index, &bme);
		g->folios[g->n] = folio;
		g->bmes[g->n++] = bme;
	}
	end_group(inode, g, &span, random);
	incfs_bf_span_end(node->mi, &span);
	kfree(g);
}

static const struct address_space_operations incfs_aops = {
	.read_folio	= incfs_read_folio,
	.readahead	= incfs_readahead,
};
