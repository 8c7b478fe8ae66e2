// SPDX-License-Identifier: GPL-2.0
/*
 * Mounting: options, the superblock, and unmounting.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/slab.h>
#include <linux/statfs.h>

#include "incfs.h"

/* Backing files of all mounts, so that one is not mounted twice. */
static DEFINE_MUTEX(busy_mutex);
static LIST_HEAD(busy_list);	/* of incfs_mount.busy_link; busy_mutex */

struct incfs_fs_context {
	struct file *bf;
	unsigned int timeout_ms;
	unsigned int max_blockmap_mb;
	unsigned int read_log_records;
};

enum { OPT_BACKING_FD, OPT_READ_TIMEOUT_MS, OPT_MAX_BLOCKMAP_MB, OPT_READ_LOG_RECORDS };

static const struct fs_parameter_spec incfs_param_specs[] = {
	fsparam_fd("backing_fd", OPT_BACKING_FD),
	fsparam_u32("read_timeout_ms", OPT_READ_TIMEOUT_MS),
	fsparam_u32("max_blockmap_mb", OPT_MAX_BLOCKMAP_MB),
	fsparam_u32("read_log_records", OPT_READ_LOG_RECORDS),
	/* The spelling of the 2019 documentation. */
	fsparam_u32("read_timeout_msc", OPT_READ_TIMEOUT_MS),
	{}
};

/*
 * The mount gets a file of its own on the backing file, opened with the
 * mounter's credentials: no O_APPEND, no shared position, and I/O keeps
 * working after the caller closes its descriptor.
 */
static int open_backing(struct fs_context *fc, unsigned int fd)
{
	struct incfs_fs_context *ctx = fc->fs_private;
	struct file *user, *bf;

	user = fget(fd);
	if (!user)
		return errorfc(fc, "backing_fd %u is not open", fd), -EBADF;
	if (!S_ISREG(file_inode(user)->i_mode) ||
	    file_inode(user)->i_sb->s_type == &incfs_fs_type) {
		fput(user);
		return invalfc(fc, "backing file must be a regular file outside incfs");
	}
	if ((user->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE)) {
		fput(user);
		return errorfc(fc, "backing_fd must be open for reading and writing"),
		       -EBADF;
	}
	/*
	 * incfs rewrites blockmap entries and record links in place, which
	 * an append-only file forbids (its opener had O_APPEND) and an
	 * immutable one forbids altogether (made so after the open); the
	 * private open below would not see either.
	 */
	if (IS_APPEND(file_inode(user)) || IS_IMMUTABLE(file_inode(user))) {
		fput(user);
		return errorfc(fc, "backing file is append-only or immutable"), -EPERM;
	}
	/*
	 * O_NOATIME: the mount's reads of its backing file (the scan, every
	 * block) are not accesses by a user.  dentry_open() skips open(2)'s
	 * owner check for it; the mounter has CAP_SYS_ADMIN and the file
	 * open for writing.
	 */
	bf = dentry_open(&user->f_path, O_RDWR | O_LARGEFILE | O_NOATIME,
			 current_cred());
	fput(user);
	if (IS_ERR(bf))
		return PTR_ERR(bf);

	if (ctx->bf)
		fput(ctx->bf);
	ctx->bf = bf;
	return 0;
}

static int incfs_parse_param(struct fs_context *fc, struct fs_parameter *param)
{
	struct incfs_fs_context *ctx = fc->fs_private;
	struct fs_parse_result result;
	int opt;

	opt = fs_parse(fc, incfs_param_specs, param, &result);
	if (opt < 0)
		return opt;
	switch (opt) {
	case OPT_BACKING_FD:
		return open_backing(fc, result.uint_32);
	case OPT_READ_TIMEOUT_MS:
		ctx->timeout_ms = result.uint_32;
		return 0;
	case OPT_MAX_BLOCKMAP_MB:
		ctx->max_blockmap_mb = result.uint_32;
		return 0;
	case OPT_READ_LOG_RECORDS:
		if (result.uint_32 > INCFS_MAX_READ_LOG)
			return invalfc(fc, "read_log_records is at most %lu", INCFS_MAX_READ_LOG);
		ctx->read_log_records = result.uint_32;
		return 0;
	}
	return -EINVAL;
}

static struct incfs_mount *mount_alloc(struct super_block *sb,
				       struct incfs_fs_context *ctx)
{
	struct incfs_mount *mi = kzalloc(sizeof(*mi), GFP_KERNEL);

	if (!mi)
		return NULL;
	mi->sb = sb;
	mi->cred = get_current_cred();
	mi->timeout_ms = ctx->timeout_ms;
	mi->bm_limit = (size_t)ctx->max_blockmap_mb << 20;
	INIT_LIST_HEAD(&mi->busy_link);
	mutex_init(&mi->bf_mutex);
	mutex_init(&mi->tree_mutex);
	xa_init(&mi->nodes);
	mi->next_ino = INCFS_ROOT_INODE + 1;
	spin_lock_init(&mi->pending_lock);
	INIT_LIST_HEAD(&mi->pending);
	init_waitqueue_head(&mi->block_wq);
	init_waitqueue_head(&mi->pending_wq);
	INIT_DELAYED_WORK(&mi->flush_work, incfs_flush_worker);
	mi->dirty = kvcalloc(INCFS_MAX_DIRTY, sizeof(*mi->dirty), GFP_KERNEL);
	if (!mi->dirty)
		goto err_dirty;
	if (incfs_log_init(mi, ctx->read_log_records))
		goto err_log;
	if (incfs_tree_init(mi))
		goto err_tree;
	return mi;

err_tree:
	incfs_log_free(mi);
err_log:
	kvfree(mi->dirty);
err_dirty:
	put_cred(mi->cred);
	kfree(mi);
	return NULL;
}

static void mount_free(struct incfs_mount *mi)
{
	mutex_lock(&busy_mutex);
	list_del_init(&mi->busy_link);
	mutex_unlock(&busy_mutex);
	cancel_delayed_work_sync(&mi->flush_work);
	if (mi->bf) {
		mutex_lock(&mi->bf_mutex);
		if (incfs_flush_blocks(mi))
			pr_err("incfs: %pD: blockmap entries lost at unmount\n",
			       mi->bf);
		mutex_unlock(&mi->bf_mutex);
		incfs_bf_sync(mi, 0, LLONG_MAX);
		fput(mi->bf);
	}
	incfs_bf_close_readers(mi);
	incfs_tree_free(mi);
	incfs_log_free(mi);
	kvfree(mi->dirty);
	put_cred(mi->cred);
	kfree(mi);
}

static int claim_backing(struct incfs_mount *mi, struct file *bf)
{
	struct incfs_mount *other;
	int err = 0;

	mutex_lock(&busy_mutex);
	list_for_each_entry(other, &busy_list, busy_link)
		if (file_inode(other->bf) == file_inode(bf))
			err = -EBUSY;
	if (!err) {
		mi->bf = bf;
		list_add(&mi->busy_link, &busy_list);
	}
	mutex_unlock(&busy_mutex);
	return err;
}

static void incfs_umount_begin(struct super_block *sb)
{
	incfs_shutdown(incfs_sb(sb), -ENODEV);
}

/* sync(2) and syncfs(2): make every delivered block durable. */
static int incfs_sync_fs(struct super_block *sb, int wait)
{
	struct incfs_mount *mi = incfs_sb(sb);
	int err;

	mutex_lock(&mi->bf_mutex);
	err = incfs_flush_blocks(mi);
	mutex_unlock(&mi->bf_mutex);
	if (!err && wait)
		err = incfs_bf_sync(mi, 0, LLONG_MAX);
	return err;
}

static const struct super_operations incfs_sops = {
	.statfs		= simple_statfs,
	.sync_fs	= incfs_sync_fs,
	.umount_begin	= incfs_umount_begin,
};

static int incfs_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct incfs_fs_context *ctx = fc->fs_private;
	struct incfs_node *named;
	struct incfs_mount *mi;
	struct inode *root;
	int err;

	if (!ctx->bf)
		return invalfc(fc, "backing_fd is required");
	mi = mount_alloc(sb, ctx);
	if (!mi)
		return -ENOMEM;
	sb->s_fs_info = mi;
	sb->s_magic = INCFS_MAGIC_NUMBER;
	sb->s_op = &incfs_sops;
	sb->s_d_op = &incfs_dentry_ops;
	sb->s_maxbytes = INCFS_MAX_FILE_SIZE;
	sb->s_blocksize = INCFS_DATA_FILE_BLOCK_SIZE;
	sb->s_blocksize_bits = ilog2(INCFS_DATA_FILE_BLOCK_SIZE);
	sb->s_time_gran = 1;

	/* A bdi of its own: readahead (the noop bdi has none). */
	err = super_setup_bdi(sb);
	if (err)
		return err;
	err = claim_backing(mi, ctx->bf);
	if (err)
		return errorfc(fc, "backing file is already mounted"), err;
	ctx->bf = NULL;
	err = incfs_bf_open_readers(mi);
	if (err)
		return err;

	mi->root = incfs_node_alloc(mi, INCFS_ROOT_INODE, S_IFDIR | 0555, 0);
	if (!mi->root)
		return -ENOMEM;
	err = incfs_tree_insert(mi, mi->root);
	if (err) {
		incfs_node_free(mi->root);
		return err;
	}
	err = incfs_scan(mi);
	if (err)
		return err;
	/*
	 * .log is reserved in the root since the read log came; an image
	 * that named a file so before keeps it, and has no read log.
	 */
	mutex_lock(&mi->tree_mutex);
	named = incfs_tree_lookup(mi->root, INCFS_LOG_FILENAME,
				  strlen(INCFS_LOG_FILENAME));
	mutex_unlock(&mi->tree_mutex);
	if (named && incfs_log_on(mi)) {
		pr_info("incfs: %pD: the root has a file named %s; no read log\n",
			mi->bf, INCFS_LOG_FILENAME);
		incfs_log_free(mi);
	}

	root = incfs_iget(sb, mi->root);
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

static int incfs_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, incfs_fill_super);
}

static void incfs_free_fc(struct fs_context *fc)
{
	struct incfs_fs_context *ctx = fc->fs_private;

	if (ctx->bf)
		fput(ctx->bf);
	kfree(ctx);
}

static const struct fs_context_operations incfs_context_ops = {
	.parse_param	= incfs_parse_param,
	.get_tree	= incfs_get_tree,
	.free		= incfs_free_fc,
};

static int incfs_init_fs_context(struct fs_context *fc)
{
	struct incfs_fs_context *ctx = kzalloc(sizeof(*ctx), GFP_KERNEL);

	if (!ctx)
		return -ENOMEM;
	ctx->timeout_ms = INCFS_DEFAULT_TIMEOUT_MS;
	ctx->max_blockmap_mb = INCFS_DEFAULT_MAX_BLOCKMAP_MB;
	ctx->read_log_records = INCFS_DEFAULT_READ_LOG;
	fc->fs_private = ctx;
	fc->ops = &incfs_context_ops;
	return 0;
}

static void incfs_kill_sb(struct super_block *sb)
{
	struct incfs_mount *mi = incfs_sb(sb);

	kill_anon_super(sb);
	if (mi)
		mount_free(mi);
}

struct file_system_type incfs_fs_type = {
	.owner			= THIS_MODULE,
	.name			= INCFS_NAME,
	.init_fs_context	= incfs_init_fs_context,
	.parameters		= incfs_param_specs,
	.kill_sb		= incfs_kill_sb,
};
MODULE_ALIAS_FS(INCFS_NAME);
