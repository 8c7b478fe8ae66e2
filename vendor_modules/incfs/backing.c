// SPDX-License-Identifier: GPL-2.0
/*
 * I/O on the backing file.  Everything runs with the mounter's
 * credentials, whoever triggers it (a reader's page fault, a loader's
 * write).  Appends and in-place updates are serialised by bf_mutex.
 */
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/mm.h>

#include "incfs.h"

/*
 * Read from the backing file; @random reads go through a file without
 * readahead, for page faults and readers that said they read at random.
 */
ssize_t incfs_bf_read(struct incfs_mount *mi, void *buf, size_t len,
		      loff_t pos, bool random)
{
	const struct cred *old = override_creds(mi->cred);
	ssize_t n = kernel_read(random ? mi->bf_random : mi->bf, buf, len,
				&pos);

	revert_creds(old);
	return n;
}

/* Write all of buf at pos, or fail. */
int incfs_bf_write(struct incfs_mount *mi, const void *buf, size_t len,
		   loff_t pos)
{
	const struct cred *old = override_creds(mi->cred);
	ssize_t n = kernel_write(mi->bf, buf, len, &pos);

	revert_creds(old);
	if (n < 0)
		return n;
	return n == len ? 0 : -EIO;
}

int incfs_bf_sync(struct incfs_mount *mi, loff_t start, loff_t end)
{
	const struct cred *old = override_creds(mi->cred);
	int err = vfs_fsync_range(mi->bf, start, end - 1, 1);

	revert_creds(old);
	return err;
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
	return incfs_bf_write(mi, buf, len, *pos);
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

		err = incfs_bf_write(mi, page_address(ZERO_PAGE(0)), n, end);
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
	      incfs_bf_write(mi, rec, size, pos);
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
