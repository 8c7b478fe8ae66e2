/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs in-memory structures and the interfaces between its files:
 *
 *	main.c		module init, sysfs
 *	super.c		mount options, superblock, unmount
 *	scan.c		rebuilding the state from a backing file at mount
 *	tree.c		the namespace: nodes, names, instructions
 *	data.c		blocks: presence, waiting reads, delivery, reading
 *	backing.c	I/O on the backing file
 *	cmd.c		the .cmd file: ioctl, write, read, poll
 *	log.c		the read log and the .log file
 *	inode.c		VFS inodes, directories, files, address space
 *	format.c	on-disk format (format.h)
 *
 * Locking, outermost first:
 *
 *	bf_mutex	the backing file's end and metadata chain; every change
 *			of the namespace (so a check made under tree_mutex
 *			holds until the change is applied).
 *	tree_mutex	nodes, names, link counts, node_count, name_count,
 *			next_ino.
 *	pending_lock	(spinlock) every file's in-memory blockmap, the
 *			pending-read list and serials, shutdown.
 *	log.lock	(spinlock) the read log's ring and counts; taken with
 *			no other incfs lock held, never inside another.
 *
 * bf_stopped is atomic: set once, by the first failed backing write or sync
 * (backing.c), never cleared.
 *
 * A reader checks a block and registers as waiting under pending_lock; a
 * writer publishes a block and marks its waiters under pending_lock.  So a
 * block that arrives between the check and the sleep cannot be missed.
 */
#ifndef _INCFS_H
#define _INCFS_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "format.h"

#define INCFS_VERSION		1
#define INCFS_DEFAULT_TIMEOUT_MS 1000
/* In-memory blockmaps per mount, at most (max_blockmap_mb): 73 GiB of files. */
#define INCFS_DEFAULT_MAX_BLOCKMAP_MB 256
/* Blocks read by one read in readahead, at most. */
#define INCFS_READ_RUN		32
/* Delivered blocks whose blockmap entries wait for a flush, at most. */
#define INCFS_MAX_DIRTY		512
/* Records of the read log's ring (read_log_records=): by default, at most. */
#define INCFS_DEFAULT_READ_LOG	2048
#define INCFS_MAX_READ_LOG	BIT(20)
/* The inode of .log: above every node's (INCFS_MAX_INO). */
#define INCFS_LOG_INODE		(INCFS_MAX_INO + 1)

struct bio_vec;
struct incfs_mount;
struct incfs_read_log_record;

/*
 * The read log (log.c): the last @capacity blocks readers asked for, in a
 * ring; off (no ring, no .log) when @capacity is 0.
 */
struct incfs_read_log {
	spinlock_t lock;		/* see the top of this file */
	/* lock: record n is ring[n % capacity], for n in [logged - capacity, logged) */
	struct incfs_read_log_record *ring;
	u32 capacity;
	u64 logged;
	wait_queue_head_t wq;		/* readers of .log */
};

/* A file or directory.  Nodes live until unmount: pointers stay valid. */
struct incfs_node {
	struct incfs_mount *mi;
	u64 ino;
	umode_t mode;
	u64 size;

	/* tree_mutex: names (incfs_dirent.child_link) and the link count */
	struct list_head names;
	unsigned int nlink;

	/*
	 * Directories.  tree_mutex: children (incfs_dirent by cookie, the
	 * readdir order; a slot is reserved before a name is persisted) and
	 * next_cookie.
	 */
	struct xarray children;
	u64 next_cookie;

	/*
	 * Files.  pending_lock: blocks[], NULL (every block absent) until
	 * the file's on-disk blockmap exists (incfs_blockmap_alloc()), then
	 * never changed; bf_mutex: bm_off (0: none yet).
	 */
	struct incfs_blockmap_entry *blocks;
	u32 block_count;
	loff_t bm_off;
};

/* A name of a node in a directory; tree_mutex. */
struct incfs_dirent {
	struct hlist_node hash_link;	/* in mi->name_hash */
	struct list_head child_link;	/* in child->names */
	struct incfs_node *parent;
	struct incfs_node *child;
	u64 cookie;			/* in parent->children; readdir position */
	u32 hash;			/* of parent and name (tree.c) */
	u8 len;
	char name[];
};

/* A delivered block whose on-disk blockmap entry is not written yet. */
struct incfs_dirty {
	struct incfs_node *node;
	u32 index;
};

/*
 * Pending-read serials count up and wrap after 2^32 reads: a is newer than
 * b when it is less than 2^31 ahead (as time_after() does for jiffies).
 */
static inline bool incfs_serial_after(u32 a, u32 b)
{
	return (s32)(a - b) > 0;
}

/* A read waiting for a block; lives on the reader's stack. */
struct incfs_pending_read {
	struct list_head list;		/* in mi->pending, oldest first */
	u64 ino;
	u32 index;
	u32 serial;
	int result;			/* 0 waiting, 1 arrived, or mi->shutdown */
};

struct incfs_mount {
	struct super_block *sb;
	const struct cred *cred;	/* the mounter's, for backing I/O */
	unsigned int timeout_ms;
	struct list_head busy_link;	/* in the list of backing files */

	struct mutex bf_mutex;		/* see the top of this file */
	struct file *bf;		/* private to the mount */
	/* The same, read-only and FMODE_RANDOM: no readahead underneath. */
	struct file *bf_random;
	/* Read-only, O_DIRECT, for whole blocks; NULL where unsupported. */
	struct file *bf_direct;
	loff_t last_md;			/* bf_mutex: last record, 0: none */
	/* A backing write or sync failed: no more changes (backing.c). */
	atomic_t bf_stopped;
	/*
	 * bf_mutex: blocks delivered but not yet in the on-disk blockmap.
	 * Their entries are written once their data is durable, by
	 * flush_work, a full batch, sync_fs or unmount.
	 */
	struct incfs_dirty *dirty;
	unsigned int ndirty;
	struct delayed_work flush_work;
	/* bf_mutex: bytes of in-memory blockmaps; at most bm_limit. */
	size_t bm_bytes;
	size_t bm_limit;

	struct mutex tree_mutex;	/* see the top of this file */
	/*
	 * ino -> node; stores: tree_mutex.  NEW_FILE holds a reserved
	 * (empty to xa_load) slot until its record is written.
	 */
	struct xarray nodes;
	/*
	 * tree_mutex: every name, by directory and name, in 1 << name_bits
	 * buckets, doubled as names are added (never shrunk).
	 */
	struct hlist_head *name_hash;
	unsigned int name_bits;
	/* Random, set at mount: names cannot be crafted to share a bucket. */
	u32 name_seed;
	struct incfs_node *root;
	unsigned int node_count;	/* with the root */
	unsigned int name_count;	/* at most INCFS_MAX_NAMES */
	u64 next_ino;
	/* Bumped on every name change; d_revalidate reads it locklessly. */
	unsigned long generation;

	spinlock_t pending_lock;	/* see the top of this file */
	struct list_head pending;
	u32 last_serial;
	/*
	 * Why no block can arrive any more, 0 while they can: -ENODEV after
	 * a forced unmount, -EIO once a backing error stopped the mount.
	 */
	int shutdown;
	wait_queue_head_t block_wq;	/* readers waiting for blocks */
	wait_queue_head_t pending_wq;	/* .cmd readers and pollers */

	struct incfs_read_log log;
};

static inline struct incfs_mount *incfs_sb(struct super_block *sb)
{
	return sb->s_fs_info;
}

static inline struct incfs_node *incfs_node(struct inode *inode)
{
	return inode->i_private;
}

static inline bool incfs_bme_present(const struct incfs_blockmap_entry *e)
{
	return e->me_data_size != 0;
}

/* super.c */
extern struct file_system_type incfs_fs_type;

/* scan.c */
int incfs_scan(struct incfs_mount *mi);

/* tree.c */
int incfs_tree_init(struct incfs_mount *mi);
struct incfs_node *incfs_node_alloc(struct incfs_mount *mi, u64 ino,
				    umode_t mode, u64 size);
void incfs_node_free(struct incfs_node *node);
int incfs_tree_insert(struct incfs_mount *mi, struct incfs_node *node);
struct incfs_node *incfs_tree_get(struct incfs_mount *mi, u64 ino);
struct incfs_node *incfs_tree_lookup(struct incfs_node *dir, const char *name,
				     size_t len);
int incfs_tree_check_new(struct incfs_mount *mi, umode_t mode, u64 size);
int incfs_tree_name_op(struct incfs_mount *mi, u8 type, u64 dir_ino,
		       u64 child_ino, const char *name, size_t len,
		       bool persist);
void incfs_tree_free(struct incfs_mount *mi);
int incfs_new_file(struct incfs_mount *mi, u16 mode, u64 size, u64 *ino);
int incfs_blockmap_alloc(struct incfs_node *node);

/* data.c */
/* Finishes readahead's direct reads (main.c); flushed at module exit. */
extern struct workqueue_struct *incfs_read_wq;

enum incfs_wait {
	INCFS_NOWAIT,			/* readahead */
	INCFS_WAIT_KILLABLE,		/* page faults */
	INCFS_WAIT_INTERRUPTIBLE,	/* read(2) */
};

int incfs_wait_block(struct incfs_node *node, u32 index, enum incfs_wait how,
		     struct incfs_blockmap_entry *bme);
/* incfs_read_block(): a torn entry found; the block is absent now. */
#define INCFS_BLOCK_FORGOTTEN	1
/*
 * Whole pages of the backing file that reads through its page cache
 * brought there, to drop again where blocks are read directly: [start,
 * end), empty when equal.
 */
struct incfs_bf_span {
	loff_t start;
	loff_t end;
};

int incfs_read_block(struct inode *inode, u32 index,
		     const struct incfs_blockmap_entry *bme, struct folio *folio);
void incfs_read_packed(struct inode *inode, struct folio **folios,
		       const struct incfs_blockmap_entry *bmes, unsigned int n,
		       struct incfs_bf_span *span, bool random);
void incfs_read_run(struct inode *inode, struct folio **folios,
		    const struct incfs_blockmap_entry *bmes, unsigned int n,
		    bool random);
ssize_t incfs_write_blocks(struct incfs_mount *mi, const char __user *buf,
			   size_t count);
int incfs_ensure_blockmap(struct incfs_node *node);
int incfs_flush_blocks(struct incfs_mount *mi);
void incfs_flush_worker(struct work_struct *work);
void incfs_shutdown(struct incfs_mount *mi, int err);

/* backing.c */
int incfs_bf_open_readers(struct incfs_mount *mi);
void incfs_bf_close_readers(struct incfs_mount *mi);
ssize_t incfs_bf_read_folios(struct incfs_mount *mi, struct folio **folios,
			     unsigned int n, loff_t pos, bool random);
void incfs_bf_forget_cached(struct incfs_mount *mi, loff_t start, loff_t end);
bool incfs_bf_cached(struct incfs_mount *mi, loff_t pos, size_t len);
void incfs_bf_span_add(struct incfs_mount *mi, struct incfs_bf_span *span,
		       loff_t pos, size_t len);
void incfs_bf_span_end(struct incfs_mount *mi, struct incfs_bf_span *span);
bool incfs_bf_can_read_direct(struct incfs_mount *mi, loff_t pos,
			      unsigned int n);
ssize_t incfs_bf_read_direct_async(struct incfs_mount *mi,
				   struct kiocb *iocb, struct bio_vec *bv,
				   unsigned int n, loff_t pos,
				   void (*done)(struct kiocb *iocb, long ret));
ssize_t incfs_bf_read(struct incfs_mount *mi, void *buf, size_t len,
		      loff_t pos, bool random);
int incfs_bf_write(struct incfs_mount *mi, const void *buf, size_t len,
		   loff_t pos);
int incfs_bf_sync(struct incfs_mount *mi, loff_t start, loff_t end);
loff_t incfs_bf_end(struct incfs_mount *mi);
int incfs_bf_append(struct incfs_mount *mi, const void *buf, size_t len,
		    loff_t *pos, bool align);
int incfs_bf_append_zeros(struct incfs_mount *mi, size_t len, loff_t *pos);
int incfs_bf_append_md(struct incfs_mount *mi, union incfs_md_record *rec);
int incfs_bf_init(struct incfs_mount *mi);

/* cmd.c */
extern const struct file_operations incfs_cmd_fops;

/* log.c */
extern const struct file_operations incfs_log_fops;
int incfs_log_init(struct incfs_mount *mi, u32 capacity);
void incfs_log_free(struct incfs_mount *mi);
void incfs_log_reads(struct incfs_mount *mi, u64 ino, u32 index,
		     unsigned int n);

static inline bool incfs_log_on(struct incfs_mount *mi)
{
	return mi->log.capacity != 0;
}

/* inode.c */
struct inode *incfs_iget(struct super_block *sb, struct incfs_node *node);
struct inode *incfs_cmd_inode(struct super_block *sb);
struct inode *incfs_log_inode(struct super_block *sb);
extern const struct dentry_operations incfs_dentry_ops;

#endif /* _INCFS_H */
