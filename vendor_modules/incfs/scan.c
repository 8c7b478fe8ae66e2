// SPDX-License-Identifier: GPL-2.0
/*
 * Mount-time scan: replay the metadata chain of a backing file into memory.
 *
 * A record cut off by a crash, or one whose link a crash tore across a
 * sector boundary, ends the chain; blockmap entries whose data was cut off
 * or which were torn themselves are cleared.  Both are fixed on disk too,
 * so that later appends cannot make stale links point at new bytes.
 * Anything else wrong fails the mount with one log line naming the offset.
 */
#include <linux/fs.h>
#include <linux/sched/signal.h>

#include "incfs.h"

/* Blockmap entries a crash left unusable, cleared by this scan. */
struct scan_torn {
	unsigned int count;
	u64 ino;			/* the first one's */
	u32 index;
	const char *why;
};

static ssize_t scan_read(void *ctx, void *buf, size_t len, loff_t pos)
{
	return incfs_bf_read(ctx, buf, len, pos, false);
}

static int reject(struct incfs_walk *w, loff_t off, int err, const char *why)
{
	w->bad_off = off;
	w->why = why;
	return err;
}

static int apply_inode(struct incfs_mount *mi, struct incfs_walk *w)
{
	const struct incfs_inode *r = &w->rec.inode;
	u64 ino = le64_to_cpu(r->i_no);
	u64 size = le64_to_cpu(r->i_size);
	umode_t mode = le16_to_cpu(r->i_mode);
	struct incfs_node *node;
	int err;

	if (ino <= INCFS_ROOT_INODE || ino > INCFS_MAX_INO)
		return reject(w, w->rec_off, -EINVAL, "bad inode number");
	if (incfs_tree_get(mi, ino))
		return reject(w, w->rec_off, -EINVAL, "inode declared twice");
	err = incfs_tree_check_new(mi, mode, size);
	if (err)
		return reject(w, w->rec_off, -EINVAL,
			      err == -ENFILE ? "too many inodes" :
			      "bad inode mode or size");
	node = incfs_node_alloc(mi, ino, mode, S_ISDIR(mode) ? 0 : size);
	if (!node)
		return -ENOMEM;
	err = incfs_tree_insert(mi, node);
	if (err)
		incfs_node_free(node);
	return err;
}

/*
 * Clear an entry a crash left unusable (its data cut off, or the entry
 * itself torn), so the block reads as absent and can be delivered again.
 * The first is remembered for the mount's one log line (incfs_scan()).
 */
static int clear_torn_entry(struct incfs_mount *mi, struct scan_torn *torn,
			    struct incfs_node *node, u32 index, loff_t pos,
			    const char *why)
{
	if (!torn->count++) {
		torn->ino = node->ino;
		torn->index = index;
		torn->why = why;
	}
	memset(&node->blocks[index], 0, sizeof(node->blocks[index]));
	return incfs_bf_write(mi, &node->blocks[index],
			      sizeof(node->blocks[index]), pos);
}

static int apply_blockmap(struct incfs_mount *mi, struct incfs_walk *w,
			  struct scan_torn *torn)
{
	const struct incfs_blockmap *r = &w->rec.bm;
	const size_t esize = sizeof(struct incfs_blockmap_entry);
	struct incfs_node *node = incfs_tree_get(mi, le64_to_cpu(r->m_inode));
	loff_t base = le64_to_cpu(r->m_base_offset);
	const char *why;
	ssize_t n;
	u32 i;
	int err;

	if (!node || S_ISDIR(node->mode) || node->bm_off)
		return reject(w, w->rec_off, -EINVAL,
			      "blockmap of an unknown, directory or mapped inode");
	err = incfs_check_blockmap(w, node->size);
	if (err)
		return err;
	err = incfs_blockmap_alloc(node);
	if (err == -ENOSPC)
		return reject(w, w->rec_off, err,
			      "blockmaps beyond the mount's max_blockmap_mb");
	if (err)
		return err;
	n = incfs_bf_read(mi, node->blocks, node->block_count * esize, base,
			  false);
	if (n != node->block_count * esize)
		return reject(w, base, n < 0 ? n : -EIO, "cannot read blockmap");

	for (i = 0; i < node->block_count; i++) {
		loff_t pos = base + (loff_t)i * esize;

		err = incfs_check_bme(&node->blocks[i], pos, w->size,
				      incfs_block_len(node->size, i), &why);
		if (err < 0)
			return reject(w, pos, err, why);
		if (err == INCFS_BME_TORN) {
			err = clear_torn_entry(mi, torn, node, i, pos, why);
			if (err)
				return err;
		}
	}
	node->bm_off = base;
	return 0;
}

static int apply_dir_action(struct incfs_mount *mi, struct incfs_walk *w)
{
	const struct incfs_dir_action *r = &w->rec.da;
	int err;

	if (r->da_type != INCFS_DIRA_ADD_ENTRY &&
	    r->da_type != INCFS_DIRA_REMOVE_ENTRY)
		return reject(w, w->rec_off, -EINVAL, "bad dir action type");
	err = incfs_tree_name_op(mi, r->da_type, le64_to_cpu(r->da_dir_inode),
				 le64_to_cpu(r->da_entry_inode), r->da_name,
				 r->da_name_len, false);
	if (err == -ENOMEM)
		return err;
	if (err)
		return reject(w, w->rec_off, -EINVAL,
			      "dir action an instruction could not make");
	return 0;
}

static int apply_record(struct incfs_mount *mi, struct incfs_walk *w,
			struct scan_torn *torn)
{
	switch (w->rec.h.h_md_entry_type) {
	case INCFS_MD_INODE:
		return apply_inode(mi, w);
	case INCFS_MD_BLOCK_MAP:
		return apply_blockmap(mi, w, torn);
	case INCFS_MD_DIR_ACTION:
		return apply_dir_action(mi, w);
	}
	return reject(w, w->rec_off, -EINVAL, "unknown record type");
}

/* The chain ended in a cut-off record: unlink it. */
static int cut_torn_tail(struct incfs_mount *mi, struct incfs_walk *w)
{
	__le64 zero = 0;
	int err;

	pr_info("incfs: %pD: chain cut off after offset %lld%s; ignoring the tail\n",
		mi->bf, w->prev, w->torn_link ? " (its link torn)" : "");
	err = incfs_bf_write(mi, &zero, sizeof(zero), w->link_pos);
	if (!err)
		err = incfs_bf_sync(mi, 0, incfs_bf_end(mi));
	return err;
}

int incfs_scan(struct incfs_mount *mi)
{
	struct scan_torn torn = {};
	struct incfs_walk w;
	int err;

	mutex_lock(&mi->bf_mutex);
	err = incfs_walk_start(&w, scan_read, mi, incfs_bf_end(mi));
	if (err == INCFS_IMAGE_EMPTY) {
		err = incfs_bf_init(mi);
		goto out;
	}
	while (!err && (err = incfs_walk_next(&w)) > 0) {
		err = apply_record(mi, &w, &torn);
		/* A long replay can be killed, as a long read can. */
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	if (!err && w.torn)
		err = cut_torn_tail(mi, &w);
	/*
	 * Cleared entries are durable before anything is appended: else a
	 * crash after an append could bring back an entry whose data was cut
	 * off, now pointing inside the grown file.
	 */
	else if (!err && torn.count)
		err = incfs_bf_sync(mi, 0, incfs_bf_end(mi));
	if (torn.count)
		pr_info("incfs: %pD: %u blockmap entries lost in a crash cleared, the first ino %llu block %u: %s\n",
			mi->bf, torn.count, torn.ino, torn.index, torn.why);
	if (!err)
		mi->last_md = w.prev;
out:
	mutex_unlock(&mi->bf_mutex);
	if (err && w.why)
		pr_err("incfs: %pD: bad image at offset %lld: %s\n", mi->bf,
		       w.bad_off, w.why);
	return err;
}
