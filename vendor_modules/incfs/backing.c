// SPDX-License-Identifier: GPL-2.0
/*
 * I/O on the backing file.  Everything runs with the mounter's
 * credentials, whoever triggers it (a reader's page fault, a loader's
 * write).  Appends and in-place updates are serialised by bf_mutex.
 *
 * Whole blocks are read with direct I/O where the backing filesystem
 * allows it, so that their bytes are cached once, in incfs's page cache,
 * and not a second time in the backing file's.
 */
#include <linux/bvec.h>
#include <linux/cred.h>
#include <uapi/linux/fadvise.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/stat.h>
#include <linux/uio.h>

#include "incfs.h"

/* O_NOATIME: incfs's reads are its own, not a user's access. */
static struct file *open_reader(struct incfs_mount *mi, int flags)
{
	return dentry_open(&mi->bf->f_path,
			   O_RDONLY | O_LARGEFILE | O_NOATIME | flags, mi->cred);
}

/* Can a page-aligned read of whole pages go to the disk directly? */
static bool direct_io_fits(struct incfs_mount *mi)
{
	struct kstat st = {};
	const struct cred *old = override_creds(mi->cred);
	int err = vfs_getattr(&mi->bf->f_path, &st, STATX_DIOALIGN,
			      AT_STATX_SYNC_AS_STAT);

	revert_creds(old);
	/* tmpfs reports no alignment: its page cache is its storage. */
	return !err && (st.result_mask & STATX_DIOALIGN) &&
	       st.dio_mem_align && st.dio_mem_align <= PAGE_SIZE &&
	       st.dio_offset_align && st.dio_offset_align <= PAGE_SIZE;
}

/*
 * The mount's read-only files on the backing file: bf_random (no
 * readahead underneath) and, where the backing filesystem has direct
 * I/O, bf_direct.
 */
int incfs_bf_open_readers(struct incfs_mount *mi)
{
	struct file *f = open_reader(mi, 0);

	if (IS_ERR(f))
		return PTR_ERR(f);
	f->f_mode |= FMODE_RANDOM;
	mi->bf_random = f;
	if (!direct_io_fits(mi))
		return 0;
	f = open_reader(mi, O_DIRECT);
	/* Refused (no FMODE_CAN_ODIRECT): read through the page cache. */
	if (!IS_ERR(f))
		mi->bf_direct = f;
	else if (PTR_ERR(f) != -EINVAL)
		return PTR_ERR(f);
	return 0;
}

void incfs_bf_close_readers(struct incfs_mount *mi)
{
	if (mi->bf_direct)
		fput(mi->bf_direct);
	if (mi->bf_random)
		fput(mi->bf_random);
}

/*
 * The file a read through the page cache goes through.  @random reads
 * (page faults, readers that said they read at random) skip readahead.
 * So does every read where whole blocks come from the disk directly: the
 * mount's scan, LZ4 blocks, tails.  Readahead would bring the blocks
 * after them into the backing file's page cache, where the next run
 * finds them and reads them through the page cache too, reading ahead
 * further: the bytes would be cached twice.
 */
static struct file *buffered_reader(struct incfs_mount *mi, bool random)
{
	return random || mi->bf_direct ? mi->bf_random : mi->bf;
}

/* Read from the backing file through its page cache. */
ssize_t incfs_bf_read(struct incfs_mount *mi, void *buf, size_t len,
		      loff_t pos, bool random)
{
	const struct cred *old = override_creds(mi->cred);
	ssize_t n = kernel_read(buffered_reader(mi, random), buf, len, &pos);

	revert_creds(old);
	return n;
}

/*
 * Can @n whole blocks from @pos be read from the disk directly?  Not those
 * in the backing file's page cache (delivered moments ago, perhaps not
 * written back yet): they are copied from there.
 */
bool incfs_bf_can_read_direct(struct incfs_mount *mi, loff_t pos,
			      unsigned int n)
{
	return mi->bf_direct && PAGE_ALIGNED(pos) &&
	       !incfs_bf_cached(mi, pos, (size_t)n * PAGE_SIZE);
}

/*
 * Start a direct read of @n whole blocks from @pos into @bv, for which
 * incfs_bf_can_read_direct() said yes.  Returns -EIOCBQUEUED when @done
 * will be called with the result, or the result (bytes read or an errno)
 * when the read ended at once.  The read is checked as any read of the
 * backing file is (rw_verify_area(): the LSMs, fanotify's permission
 * events), by vfs_iocb_iter_read().
 */
ssize_t incfs_bf_read_direct_async(struct incfs_mount *mi,
				   struct kiocb *iocb, struct bio_vec *bv,
				   unsigned int n, loff_t pos,
				   void (*done)(struct kiocb *iocb, long ret))
{
	const struct cred *old;
	struct iov_iter iter;
	ssize_t ret;

	init_sync_kiocb(iocb, mi->bf_direct);
	iocb->ki_pos = pos;
	iocb->ki_complete = done;
	iov_iter_bvec(&iter, ITER_DEST, bv, n, (size_t)n * PAGE_SIZE);
	old = override_creds(mi->cred);
	ret = vfs_iocb_iter_read(mi->bf_direct, iocb, &iter);
	revert_creds(old);
	return ret;
}

/*
 * Read @n whole blocks stored back to back from @pos into @folios (each a
 * page) through the backing file's page cache.
 */
ssize_t incfs_bf_read_folios(struct incfs_mount *mi, struct folio **folios,
			     unsigned int n, loff_t pos, bool random)
{
	struct bio_vec bv[INCFS_READ_RUN];
	size_t len = (size_t)n * PAGE_SIZE;
	struct file *f = buffered_reader(mi, random);
	const struct cred *old;
	struct iov_iter iter;
	unsigned int i;
	ssize_t ret;

	if (WARN_ON_ONCE(n > INCFS_READ_RUN))
		return -EINVAL;
	for (i = 0; i < n; i++)
		bvec_set_folio(&bv[i], folios[i], PAGE_SIZE, 0);
	iov_iter_bvec(&iter, ITER_DEST, bv, n, len);
	old = override_creds(mi->cred);
	ret = vfs_iter_read(f, &iter, &pos, 0);
	revert_creds(old);
	return ret;
}

/*
 * Drop the backing file's cached pages of [@start, @end), written back
 * already: incfs's page cache holds the blocks that are read.  Only with
 * direct I/O, which reads the others from the disk.  Pages written or
 * read moments ago may still sit in a CPU's LRU batch, which
 * invalidate_mapping_pages() alone skips: POSIX_FADV_DONTNEED drains the
 * batches first.
 */
void incfs_bf_forget_cached(struct incfs_mount *mi, loff_t start, loff_t end)
{
	if (mi->bf_direct && end > start)
		vfs_fadvise(mi->bf, start, end - start, POSIX_FADV_DONTNEED);
}

/* Is any page of [@pos, @pos + @len) in the backing file's page cache? */
bool incfs_bf_cached(struct incfs_mount *mi, loff_t pos, size_t len)
{
	return filemap_range_has_page(mi->bf->f_mapping,
				      round_down(pos, PAGE_SIZE),
				      round_up(pos + len, PAGE_SIZE) - 1);
}

/*
 * Add the pages of [@pos, @pos + @len) to @span; a span they do not touch
 * is dropped first.  Only where blocks are read directly.
 */
void incfs_bf_span_add(struct incfs_mount *mi, struct incfs_bf_span *span,
		       loff_t pos, size_t len)
{
	loff_t start = round_down(pos, PAGE_SIZE);
	loff_t end = round_up(pos + len, PAGE_SIZE);

	if (!mi->bf_direct)
		return;
	if (span->start < span->end && start <= span->end &&
	    end >= span->start) {
		span->start = min(span->start, start);
		span->end = max(span->end, end);
		return;
	}
	incfs_bf_span_end(mi, span);
	span->start = start;
	span->end = end;
}

/* Drop the pages of @span and empty it. */
void incfs_bf_span_end(struct incfs_mount *mi, struct incfs_bf_span *span)
{
	incfs_bf_forget_cached(mi, span->start, span->end);
	span->start = 0;
	span->end = 0;
}

/*
 * A failed write in place, or a failed sync, stops the mount's changes.
 * What it wrote may reach the disk later or never (a failed fsync leaves
 * that open), while the call that wrote it fails and memory keeps the state
 * before it; any later write or sync could make the disk run ahead of what
 * the callers were told.  So from then on every write and sync fails with
 * EIO, no block can arrive (waiting reads fail with EIO), and the next
 * mount's scan settles what the disk holds.  A failed append stops nothing:
 * no record or entry points at its bytes.
 */
static bool bf_stopped(struct incfs_mount *mi)
{
	return atomic_read(&mi->bf_stopped);
}

static int bf_stop_on(struct incfs_mount *mi, int err)
{
	if (err && !atomic_xchg(&mi->bf_stopped, 1)) {
		pr_err("incfs: %pD: backing file error %d: no more changes until remounted\n",
		       mi->bf, err);
		incfs_shutdown(mi, -EIO);
	}
	return err;
}

/* Write all of buf at pos, or fail. */
static int bf_write(struct incfs_mount *mi, const void *buf, size_t len,
		    loff_t pos)
{
	const struct cred *old;
	ssize_t n;

	if (bf_stopped(mi))
		return -EIO;
	old = override_creds(mi->cred);
	n = kernel_write(mi->bf, buf, len, &pos);
	revert_creds(old);
	if (n < 0)
		return n;
	return n == len ? 0 : -EIO;
}

/* Write over bytes that may be in use (a link, an entry, a repair). */
int incfs_bf_write(struct incfs_mount *mi, const void *buf, size_t len,
		   loff_t pos)
{
	return bf_stop_on(mi, bf_write(mi, buf, len, pos));
}

int incfs_bf_sync(struct incfs_mount *mi, loff_t start, loff_t end)
{
	const struct cred *old;
	int err;

	if (bf_stopped(mi))
		return -EIO;
	old = override_creds(mi->cred);
	err = vfs_fsync_range(mi->bf, start, end - 1, 1);
	revert_creds(old);
	return bf_stop_on(mi, err);
}

loff_t incfs_bf_end(struct incfs_mount *mi)
{
	return i_size_read(file_inode(mi->bf));
}

/*
 * Append @buf; with @align, at the next multiple of @len (a full block then
 * sits in one page of the backing file, not across two).
 */
int incfs_bf_append(struct incfs_mount *mi, const void *buf, size_t len,
		    loff_t *pos, bool align)
{
	lockdep_assert_held(&mi->bf_mutex);
	*pos = incfs_bf_end(mi);
	if (align)
		*pos = roundup(*pos, len);
	if (*pos + len > INCFS_MAX_DATA_OFFSET)
		return -EFBIG;
	return bf_write(mi, buf, len, *pos);
}

int incfs_bf_append_zeros(struct incfs_mount *mi, size_t len, loff_t *pos)
{
	loff_t end;
	int err = 0;

	lockdep_assert_held(&mi->bf_mutex);
	*pos = incfs_bf_end(mi);
	if (*pos + len > INCFS_MAX_DATA_OFFSET)
		return -EFBIG;
	for (end = *pos; !err && len; ) {
		size_t n = min_t(size_t, len, PAGE_SIZE);

		err = bf_write(mi, page_address(ZERO_PAGE(0)), n, end);
		end += n;
		len -= n;
	}
	return err;
}

/*
 * Append a metadata record and link it into the chain.  The record is
 * durable before the link that makes it visible, and the link before the
 * call returns.
 */
int incfs_bf_append_md(struct incfs_mount *mi, union incfs_md_record *rec)
{
	size_t size = le16_to_cpu(rec->h.h_record_size);
	__le64 link;
	loff_t pos, link_pos;
	int err;

	lockdep_assert_held(&mi->bf_mutex);
	incfs_md_seal(rec, mi->last_md);
	pos = incfs_md_pos(incfs_bf_end(mi));
	err = pos + size > INCFS_MAX_DATA_OFFSET ? -EFBIG :
	      bf_write(mi, rec, size, pos);
	if (!err)
		err = incfs_bf_sync(mi, pos, pos + size);
	if (err)
		return err;

	if (mi->last_md)
		link_pos = mi->last_md +
			   offsetof(struct incfs_md_header, h_next_md_offset);
	else
		link_pos = offsetof(struct incfs_super_block,
				    s_first_md_offset);
	link = cpu_to_le64(pos);
	err = incfs_bf_write(mi, &link, sizeof(link), link_pos);
	if (!err)
		err = incfs_bf_sync(mi, link_pos, link_pos + sizeof(link));
	if (err)
		return err;
	mi->last_md = pos;
	return 0;
}

/* Start a new image: a superblock and nothing else. */
int incfs_bf_init(struct incfs_mount *mi)
{
	struct incfs_super_block sb;
	const struct cred *old;
	int err;

	if (incfs_bf_end(mi)) {
		/* A superblock cut short by a crash: start again. */
		old = override_creds(mi->cred);
		err = vfs_truncate(&mi->bf->f_path, 0);
		revert_creds(old);
		if (err)
			return err;
	}
	incfs_sb_init(&sb);
	err = incfs_bf_write(mi, &sb, sizeof(sb), 0);
	if (!err)
		err = incfs_bf_sync(mi, 0, sizeof(sb));
	mi->last_md = 0;
	return err;
}
