// SPDX-License-Identifier: GPL-2.0
/*
 * Blocks: waiting for absent ones, delivering new ones from .cmd, and
 * reading stored ones back with their CRC checked.
 */
#include <linux/bvec.h>
#include <linux/crc32.h>
#include <linux/dcache.h>
#include <linux/highmem.h>
#include <linux/jiffies.h>
#include <linux/lz4.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "incfs.h"

/* Records delivered per round: their data is copied in before bf_mutex. */
#define WRITE_BATCH	16

static void bme_get(struct incfs_node *node, u32 index,
		    struct incfs_blockmap_entry *bme)
{
	lockdep_assert_held(&node->mi->pending_lock);
	if (node->blocks)
		*bme = node->blocks[index];
	else
		memset(bme, 0, sizeof(*bme));
}

static long sleep_for_block(struct incfs_mount *mi,
			    struct incfs_pending_read *pr, enum incfs_wait how)
{
	long timeout = msecs_to_jiffies(mi->timeout_ms);

	if (how == INCFS_WAIT_KILLABLE)
		return wait_event_killable_timeout(mi->block_wq,
						   READ_ONCE(pr->result),
						   timeout);
	return wait_event_interruptible_timeout(mi->block_wq,
						READ_ONCE(pr->result), timeout);
}

/*
 * Get block @index of a file, waiting for it as @how says.  Returns 0 with
 * its blockmap entry in @bme, -EAGAIN (INCFS_NOWAIT), -ETIME, -ERESTARTSYS,
 * -EINTR, -ENODEV (forced unmount) or -EIO (the mount stopped after a
 * backing error).
 */
int incfs_wait_block(struct incfs_node *node, u32 index, enum incfs_wait how,
		     struct incfs_blockmap_entry *bme)
{
	struct incfs_mount *mi = node->mi;
	struct incfs_pending_read pr = { .ino = node->ino, .index = index };
	long left;

	spin_lock(&mi->pending_lock);
	bme_get(node, index, bme);
	if (incfs_bme_present(bme)) {
		spin_unlock(&mi->pending_lock);
		return 0;
	}
	if (mi->shutdown || how == INCFS_NOWAIT || !mi->timeout_ms) {
		spin_unlock(&mi->pending_lock);
		return mi->shutdown ?: how == INCFS_NOWAIT ? -EAGAIN : -ETIME;
	}
	pr.serial = ++mi->last_serial;
	list_add_tail(&pr.list, &mi->pending);
	spin_unlock(&mi->pending_lock);
	wake_up_all(&mi->pending_wq);

	left = sleep_for_block(mi, &pr, how);

	spin_lock(&mi->pending_lock);
	list_del(&pr.list);
	bme_get(node, index, bme);
	spin_unlock(&mi->pending_lock);
	if (incfs_bme_present(bme))
		return 0;
	if (pr.result < 0)
		return pr.result;
	return left < 0 ? left : -ETIME;
}

/* Wake the readers of a block just published; pending_lock held. */
static void mark_arrived(struct incfs_mount *mi, u64 ino, u32 index)
{
	struct incfs_pending_read *pr;

	lockdep_assert_held(&mi->pending_lock);
	list_for_each_entry(pr, &mi->pending, list)
		if (pr->ino == ino && pr->index == index)
			WRITE_ONCE(pr->result, 1);
}

/*
 * No block can arrive any more (@err: -ENODEV, a forced unmount; -EIO, a
 * backing error): fail every waiting read, and every later one, with the
 * first reason given.
 */
void incfs_shutdown(struct incfs_mount *mi, int err)
{
	struct incfs_pending_read *pr;

	spin_lock(&mi->pending_lock);
	if (!mi->shutdown)
		mi->shutdown = err;
	list_for_each_entry(pr, &mi->pending, list)
		WRITE_ONCE(pr->result, mi->shutdown);
	spin_unlock(&mi->pending_lock);
	wake_up_all(&mi->block_wq);
	wake_up_all(&mi->pending_wq);
	wake_up_all(&mi->log.wq);
}

/*
 * A stored block that cannot be read back.  Only read_folio() reports it:
 * readahead leaves the folio to it, which reads the block again.
 */
static int bad_block(struct inode *inode, u32 index, loff_t off,
		     const char *what)
{
	struct dentry *alias;

	alias = d_find_any_alias(inode);
	pr_err_ratelimited("incfs: %pd (ino %lu) block %u: %s in backing file at offset %lld\n",
			   alias, inode->i_ino, index, what, off);
	dput(alias);
	return -EIO;
}

/* Zero a blockmap entry on disk, durably; bf_mutex held. */
static int zero_entry(struct incfs_mount *mi, loff_t pos)
{
	static const u8 zeros[sizeof(struct incfs_blockmap_entry)];
	int err;

	lockdep_assert_held(&mi->bf_mutex);
	err = incfs_bf_write(mi, zeros, sizeof(zeros), pos);
	return err ? err : incfs_bf_sync(mi, pos, pos + sizeof(zeros));
}

/*
 * A stored block whose data fails its CRC where its blockmap entry may be
 * a write torn by a crash (incfs_bme_maybe_torn()): the block was never
 * whole on disk.  The entry is zeroed on disk, durably, and then in
 * memory: the block is absent again, a reader waits for it, and the
 * delivery that follows writes the entry from zeros as every entry is
 * written, so a crash during it can tear it no worse than the first time.
 * False when the entry is not torn, or cannot be zeroed (the read fails).
 */
static bool forget_torn(struct inode *inode, u32 index,
			const struct incfs_blockmap_entry *bme)
{
	struct incfs_node *node = incfs_node(inode);
	struct incfs_mount *mi = node->mi;
	/* Set before the first block of the file was present; never changed. */
	loff_t base = READ_ONCE(node->bm_off);
	loff_t pos = base + (loff_t)index * sizeof(*bme);
	struct dentry *alias;
	bool same;
	int err;

	if (!base || !incfs_bme_maybe_torn(bme, pos,
					   incfs_block_len(node->size, index)))
		return false;
	/* Entries change under bf_mutex: the comparison holds until the end. */
	mutex_lock(&mi->bf_mutex);
	spin_lock(&mi->pending_lock);
	same = !memcmp(&node->blocks[index], bme, sizeof(*bme));
	spin_unlock(&mi->pending_lock);
	err = same ? zero_entry(mi, pos) : 0;
	if (same && !err) {
		spin_lock(&mi->pending_lock);
		memset(&node->blocks[index], 0, sizeof(*bme));
		spin_unlock(&mi->pending_lock);
	}
	mutex_unlock(&mi->bf_mutex);
	if (err || !same)
		return !err;	/* !same: another reader forgot it first */
	/* Logged once: the block is forgotten only once. */
	alias = d_find_any_alias(inode);
	pr_warn_ratelimited("incfs: %pd (ino %lu) block %u: blockmap entry torn by a crash; the block is absent until delivered again\n",
			    alias, inode->i_ino, index);
	dput(alias);
	return true;
}

/*
 * Read stored block @index into @folio (a page) and zero the rest of the
 * page: one block, for read_folio(), through the backing file's page cache
 * without readahead.  Where blocks are read directly, the pages this read
 * brings there leave it again, so that the bytes are cached once, in
 * @folio; not pages cached before (a block delivered moments ago is the
 * flush's to drop).  Under QEMU a direct read of one page costs more
 * (docs/figures.md, incfs).  Returns 0, a negative errno, or
 * INCFS_BLOCK_FORGOTTEN when the block turned out absent (forget_torn()).
 */
int incfs_read_block(struct inode *inode, u32 index,
		     const struct incfs_blockmap_entry *bme, struct folio *folio)
{
	struct incfs_node *node = incfs_node(inode);
	struct incfs_mount *mi = node->mi;
	u32 len = incfs_block_len(node->size, index);
	size_t stored = le16_to_cpu(bme->me_data_size);
	loff_t off = incfs_bme_offset(bme);
	bool lz4 = le16_to_cpu(bme->me_flags) & INCFS_BLOCK_COMPRESSED_LZ4;
	void *dst = kmap_local_folio(folio, 0);
	void *buf = dst;
	struct incfs_bf_span span = {};
	bool drop;
	ssize_t n;
	int err = 0;

	if (lz4) {
		buf = kmalloc(INCFS_DATA_FILE_BLOCK_SIZE, GFP_KERNEL);
		if (!buf) {
			err = -ENOMEM;
			goto out;
		}
	}
	drop = !incfs_bf_cached(mi, off, stored);
	n = incfs_bf_read(mi, buf, stored, off, true);
	if (n > 0 && drop)
		incfs_bf_span_add(mi, &span, off, stored);
	incfs_bf_span_end(mi, &span);
	if (n != stored)
		err = n < 0 ? n : bad_block(inode, index, off, "short read");
	else if (crc32_le(0, buf, stored) != le32_to_cpu(bme->me_data_crc))
		err = forget_torn(inode, index, bme) ?
		      INCFS_BLOCK_FORGOTTEN :
		      bad_block(inode, index, off, "data CRC mismatch");
	else if (lz4 && LZ4_decompress_safe(buf, dst, stored, len) != len)
		err = bad_block(inode, index, off, "bad LZ4 data");
	if (buf != dst)
		kfree(buf);
	if (!err)
		memset(dst + len, 0, PAGE_SIZE - len);
out:
	kunmap_local(dst);
	return err;
}

/*
 * Fill @folio from the @stored bytes of its block at @src: true when they
 * match the entry's CRC and, for LZ4, decompress to the block's length.
 */
static bool unpack_block(struct incfs_node *node, struct folio *folio,
			 const struct incfs_blockmap_entry *bme, const u8 *src)
{
	u32 len = incfs_block_len(node->size, folio->index);
	size_t stored = le16_to_cpu(bme->me_data_size);
	bool lz4 = le16_to_cpu(bme->me_flags) & INCFS_BLOCK_COMPRESSED_LZ4;
	bool good = false;
	void *dst;

	if (crc32_le(0, src, stored) != le32_to_cpu(bme->me_data_crc))
		return false;
	dst = kmap_local_folio(folio, 0);
	if (lz4) {
		good = LZ4_decompress_safe(src, dst, stored, len) == len;
	} else if (stored == len) {
		memcpy(dst, src, len);
		good = true;
	}
	if (good)
		memset(dst + len, 0, PAGE_SIZE - len);
	kunmap_local(dst);
	return good;
}

/*
 * Readahead's blocks that are not whole pages (LZ4 blocks, a tail), stored
 * back to back: one read through the backing file's page cache, not one
 * per block, without readahead there; the pages it brought join @span,
 * dropped after readahead's last block (one page can hold several blocks).
 * Each good block fills its folio, marked uptodate; all are unlocked.
 * Errors are not logged: read_folio() reads the block again and logs them.
 */
void incfs_read_packed(struct inode *inode, struct folio **folios,
		       const struct incfs_blockmap_entry *bmes, unsigned int n,
		       struct incfs_bf_span *span, bool random)
{
	struct incfs_node *node = incfs_node(inode);
	struct incfs_mount *mi = node->mi;
	loff_t pos = incfs_bme_offset(&bmes[0]);
	size_t len = incfs_bme_offset(&bmes[n - 1]) +
		     le16_to_cpu(bmes[n - 1].me_data_size) - pos;
	u8 *buf = kvmalloc(len, GFP_KERNEL);
	ssize_t got = -ENOMEM;
	size_t at = 0;
	unsigned int i;

	if (buf)
		got = incfs_bf_read(mi, buf, len, pos, random);
	if (got > 0)
		incfs_bf_span_add(mi, span, pos, got);
	for (i = 0; i < n; i++) {
		if (got == len && unpack_block(node, folios[i], &bmes[i],
					       buf + at))
			folio_mark_uptodate(folios[i]);
		folio_unlock(folios[i]);
		at += le16_to_cpu(bmes[i].me_data_size);
	}
	kvfree(buf);
}

/* A run of blocks read without waiting (readahead's). */
struct read_run {
	struct kiocb iocb;
	struct work_struct work;
	long ret;
	unsigned int n;
	struct folio *folios[INCFS_READ_RUN];
	__le32 crcs[INCFS_READ_RUN];
	struct bio_vec bv[INCFS_READ_RUN];
};

/* Folios whose read ended: each uptodate if its CRC matches, unlocked. */
static void finish_run(struct folio **folios, const __le32 *crcs,
		       unsigned int n, bool read)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		void *addr = kmap_local_folio(folios[i], 0);
		bool good = read && crc32_le(0, addr, PAGE_SIZE) ==
				    le32_to_cpu(crcs[i]);

		kunmap_local(addr);
		if (good)
			folio_mark_uptodate(folios[i]);
		folio_unlock(folios[i]);
	}
}

static void run_work(struct work_struct *work)
{
	struct read_run *r = container_of(work, struct read_run, work);

	finish_run(r->folios, r->crcs, r->n, r->ret == r->n * PAGE_SIZE);
	kfree(r);
}

/* The end of a direct read, maybe in interrupt context: CRCs in a worker. */
static void run_done(struct kiocb *iocb, long ret)
{
	struct read_run *r = container_of(iocb, struct read_run, iocb);

	r->ret = ret;
	INIT_WORK(&r->work, run_work);
	queue_work(incfs_read_wq, &r->work);
}

/*
 * Read a run of full, uncompressed blocks stored back to back in the
 * backing file into their locked folios with one read, check each CRC,
 * mark the good folios uptodate and unlock them all.  A run the disk can
 * be asked for directly is only started here, and finished in run_work():
 * the reader goes on with the pages before it meanwhile, as over any
 * filesystem.  Only readahead reads runs, so errors are not logged:
 * read_folio() reads the block again and logs them.
 */
void incfs_read_run(struct inode *inode, struct folio **folios,
		    const struct incfs_blockmap_entry *bmes, unsigned int n,
		    bool random)
{
	struct incfs_mount *mi = incfs_node(inode)->mi;
	loff_t pos = incfs_bme_offset(&bmes[0]);
	__le32 crcs[INCFS_READ_RUN];
	struct read_run *r;
	unsigned int i;
	ssize_t ret;

	r = incfs_bf_can_read_direct(mi, pos, n) ?
	    kmalloc(sizeof(*r), GFP_KERNEL) : NULL;
	if (r) {
		r->n = n;
		for (i = 0; i < n; i++) {
			r->folios[i] = folios[i];
			r->crcs[i] = bmes[i].me_data_crc;
			bvec_set_folio(&r->bv[i], folios[i], PAGE_SIZE, 0);
		}
		ret = incfs_bf_read_direct_async(mi, &r->iocb, r->bv, n, pos,
						 run_done);
		if (ret == -EIOCBQUEUED)
			return;
		/* Ended at once. */
		r->ret = ret;
		run_work(&r->work);
		return;
	}
	for (i = 0; i < n; i++)
		crcs[i] = bmes[i].me_data_crc;
	ret = incfs_bf_read_folios(mi, folios, n, pos, random);
	finish_run(folios, crcs, n, ret == n * PAGE_SIZE);
}

/* A block being delivered: checked and copied in before bf_mutex. */
struct new_block {
	struct incfs_node *node;
	u32 index;
	u16 size;
	u16 flags;
	u32 crc;
	loff_t off;
	u8 *data;
};

static int check_block(struct incfs_mount *mi,
		       const struct incfs_new_data_block *rec,
		       struct new_block *nb, void *scratch)
{
	const void __user *data = u64_to_user_ptr(rec->data);
	struct incfs_node *node = incfs_tree_get(mi, rec->file_ino);
	u32 len;

	if (!node)
		return -ENOENT;
	if (S_ISDIR(node->mode))
		return -EISDIR;
	if (rec->block_index >= node->block_count)
		return -ERANGE;
	if (rec->compression != COMPRESSION_NONE &&
	    rec->compression != COMPRESSION_LZ4)
		return -EINVAL;
	if (rec->reserved1 || rec->reserved2)
		return -EINVAL;
	if (!rec->data_len || rec->data_len > INCFS_DATA_FILE_BLOCK_SIZE)
		return -EINVAL;
	if (copy_from_user(nb->data, data, rec->data_len))
		return -EFAULT;

	len = incfs_block_len(node->size, rec->block_index);
	if (rec->compression == COMPRESSION_NONE) {
		if (rec->data_len != len)
			return -EINVAL;
	} else {
		if (LZ4_decompress_safe(nb->data, scratch, rec->data_len,
					INCFS_DATA_FILE_BLOCK_SIZE) != len)
			return -EBADMSG;
		nb->flags = INCFS_BLOCK_COMPRESSED_LZ4;
	}
	nb->node = node;
	nb->index = rec->block_index;
	nb->size = rec->data_len;
	nb->crc = crc32_le(0, nb->data, nb->size);
	return 0;
}

/* Make the on-disk blockmap of a file if it has none yet; bf_mutex held. */
int incfs_ensure_blockmap(struct incfs_node *node)
{
	struct incfs_mount *mi = node->mi;
	struct incfs_blockmap rec;
	loff_t base;
	int err;

	lockdep_assert_held(&mi->bf_mutex);
	if (node->bm_off || !node->block_count)
		return 0;
	err = incfs_blockmap_alloc(node);
	if (err)
		return err;
	err = incfs_bf_append_zeros(mi, (size_t)node->block_count *
				    sizeof(struct incfs_blockmap_entry), &base);
	if (err)
		return err;
	incfs_encode_blockmap(&rec, node->ino, base, node->block_count);
	err = incfs_bf_append_md(mi, (union incfs_md_record *)&rec);
	if (!err)
		node->bm_off = base;
	return err;
}

static bool block_present(struct new_block *nb)
{
	struct incfs_mount *mi = nb->node->mi;
	bool present;

	spin_lock(&mi->pending_lock);
	present = nb->node->blocks &&
		  incfs_bme_present(&nb->node->blocks[nb->index]);
	spin_unlock(&mi->pending_lock);
	return present;
}

static bool repeated(struct new_block *nb, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (nb[i].node == nb[n].node && nb[i].index == nb[n].index)
			return true;
	return false;
}

/*
 * Write the blockmap entries of delivered blocks, once their data is
 * durable: a crash leaves each block either absent or whole.  Their data,
 * written back now, leaves the backing file's page cache (blocks stored
 * back to back in one go).
 */
int incfs_flush_blocks(struct incfs_mount *mi)
{
	struct incfs_blockmap_entry bme;
	loff_t start = 0, end = 0;
	unsigned int i;
	int err;

	lockdep_assert_held(&mi->bf_mutex);
	if (!mi->ndirty)
		return 0;
	err = incfs_bf_sync(mi, 0, LLONG_MAX);
	for (i = 0; !err && i < mi->ndirty; i++) {
		struct incfs_node *node = mi->dirty[i].node;
		u32 index = mi->dirty[i].index;

		spin_lock(&mi->pending_lock);
		bme = node->blocks[index];
		spin_unlock(&mi->pending_lock);
		err = incfs_bf_write(mi, &bme, sizeof(bme), node->bm_off +
				     (loff_t)index * sizeof(bme));
		if (err)
			break;
		if (incfs_bme_offset(&bme) != end) {
			incfs_bf_forget_cached(mi, start, end);
			start = incfs_bme_offset(&bme);
		}
		end = incfs_bme_offset(&bme) + le16_to_cpu(bme.me_data_size);
	}
	incfs_bf_forget_cached(mi, start, end);
	if (err) {
		/* Keep what is not written for the next try. */
		memmove(mi->dirty, mi->dirty + i, (mi->ndirty - i) *
			sizeof(*mi->dirty));
		mi->ndirty -= i;
		return err;
	}
	mi->ndirty = 0;
	return 0;
}

void incfs_flush_worker(struct work_struct *work)
{
	struct incfs_mount *mi = container_of(to_delayed_work(work),
					      struct incfs_mount, flush_work);
	int err;

	mutex_lock(&mi->bf_mutex);
	err = incfs_flush_blocks(mi);
	mutex_unlock(&mi->bf_mutex);
	if (err)
		pr_err_ratelimited("incfs: %pD: cannot write blockmap entries: %d\n",
				   mi->bf, err);
}

/*
 * Store checked blocks: append the data and publish each block to its
 * readers at once (they read it through the backing file's page cache);
 * the on-disk entries follow in incfs_flush_blocks().  Returns how many
 * of the @n blocks were taken (stored, or present already) before the
 * first one the backing file refused, whose error goes in @err.
 */
static int store_blocks(struct incfs_mount *mi, struct new_block *nb, int n,
			int *err)
{
	struct incfs_blockmap_entry bme;
	int i;

	*err = 0;
	mutex_lock(&mi->bf_mutex);
	for (i = 0; i < n; i++) {
		struct incfs_node *node = nb[i].node;

		if (block_present(&nb[i]) || repeated(nb, i))
			continue;
		if (mi->ndirty == INCFS_MAX_DIRTY)
			*err = incfs_flush_blocks(mi);
		if (!*err)
			*err = incfs_ensure_blockmap(node);
		if (!*err)
			*err = incfs_bf_append(mi, nb[i].data, nb[i].size,
					       &nb[i].off, nb[i].size == PAGE_SIZE);
		if (*err)
			break;
		incfs_encode_bme(&bme, nb[i].off, nb[i].size, nb[i].flags,
				 nb[i].crc);
		mi->dirty[mi->ndirty].node = node;
		mi->dirty[mi->ndirty++].index = nb[i].index;
		spin_lock(&mi->pending_lock);
		node->blocks[nb[i].index] = bme;
		mark_arrived(mi, node->ino, nb[i].index);
		spin_unlock(&mi->pending_lock);
	}
	if (mi->ndirty)
		schedule_delayed_work(&mi->flush_work, HZ / 10);
	mutex_unlock(&mi->bf_mutex);
	wake_up_all(&mi->block_wq);
	return i;
}

/*
 * write() on .cmd: an array of struct incfs_new_data_block.  Stops at the
 * first bad record, or the first the backing file cannot take; returns
 * the bytes of the records stored before it, or the error when it is the
 * first record.
 */
ssize_t incfs_write_blocks(struct incfs_mount *mi, const char __user *buf,
			   size_t count)
{
	const size_t rec_size = sizeof(struct incfs_new_data_block);
	struct new_block *nb;
	size_t done = 0, total;
	void *scratch;
	int i, n, err = 0;

	if (!count || count % rec_size)
		return -EINVAL;
	total = count / rec_size;
	nb = kcalloc(WRITE_BATCH, sizeof(*nb), GFP_KERNEL);
	scratch = kmalloc(INCFS_DATA_FILE_BLOCK_SIZE, GFP_KERNEL);
	for (i = 0; nb && i < WRITE_BATCH; i++) {
		nb[i].data = kmalloc(INCFS_DATA_FILE_BLOCK_SIZE, GFP_KERNEL);
		if (!nb[i].data)
			err = -ENOMEM;
	}
	if (!nb || !scratch)
		err = -ENOMEM;

	while (!err && done < total) {
		for (n = 0; n < WRITE_BATCH && done + n < total; n++) {
			struct incfs_new_data_block rec;

			if (copy_from_user(&rec, buf + (done + n) * rec_size,
					   rec_size)) {
				err = -EFAULT;
				break;
			}
			memset(&nb[n], 0, offsetof(struct new_block, data));
			err = check_block(mi, &rec, &nb[n], scratch);
			if (err)
				break;
		}
		if (n) {
			int serr;

			done += store_blocks(mi, nb, n, &serr);
			if (serr)
				err = serr;
		}
		if (fatal_signal_pending(current) && !err && done < total)
			err = -EINTR;
	}

	for (i = 0; nb && i < WRITE_BATCH; i++)
		kfree(nb[i].data);
	kfree(nb);
	kfree(scratch);
	return done ? done * rec_size : err;
}
