// SPDX-License-Identifier: GPL-2.0
/*
 * The read log, as Android's incfs v2 has it: every block a reader asks
 * incfs for (a page-cache miss: read_folio() and readahead; a read() that
 * waited for its first block in vain) is recorded in
 * a ring of the last read_log_records blocks, with the file, the time and
 * the reader's uid and pid.  The mount's loader reads the records in order
 * from .log in the mount root, to learn which blocks an app needs first.
 * A reader that falls more than the ring behind loses the oldest records
 * and learns how many from INCFS_IOC_READ_LOG_STATE.
 */
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/uidgid.h>

#include "incfs.h"

/* Records returned by one read() at most. */
#define READ_BATCH	256

/* Per open .log: the next record to read, and the records lost; log.lock. */
struct incfs_log_file {
	u64 position;
	u64 lost;
};

static struct incfs_read_log *file_log(struct file *file)
{
	return &incfs_sb(file_inode(file)->i_sb)->log;
}

/* The number of the oldest record the ring holds; log.lock. */
static u64 oldest(struct incfs_read_log *log)
{
	lockdep_assert_held(&log->lock);
	return log->logged > log->capacity ? log->logged - log->capacity : 0;
}

int incfs_log_init(struct incfs_mount *mi, u32 capacity)
{
	struct incfs_read_log *log = &mi->log;

	spin_lock_init(&log->lock);
	init_waitqueue_head(&log->wq);
	if (!capacity)
		return 0;
	log->ring = kvcalloc(capacity, sizeof(*log->ring), GFP_KERNEL);
	if (!log->ring)
		return -ENOMEM;
	log->capacity = capacity;
	return 0;
}

void incfs_log_free(struct incfs_mount *mi)
{
	struct incfs_read_log *log = &mi->log;

	kvfree(log->ring);
	log->ring = NULL;
	log->capacity = 0;
}

/*
 * Record that the current task asked for blocks @index to @index + @n - 1
 * of file @ino.  The time, uid and pid are taken once for the run.
 */
void incfs_log_reads(struct incfs_mount *mi, u64 ino, u32 index,
		     unsigned int n)
{
	struct incfs_read_log *log = &mi->log;
	struct incfs_read_log_record rec = { .file_ino = ino };
	unsigned int i;
	u32 slot;

	if (!incfs_log_on(mi) || !n)
		return;
	rec.timestamp_us = div_u64(ktime_get_ns(), NSEC_PER_USEC);
	rec.uid = from_kuid_munged(mi->sb->s_user_ns, current_uid());
	rec.pid = task_tgid_nr(current);
	spin_lock(&log->lock);
	for (i = 0; i < n; i++) {
		rec.block_index = index + i;
		div_u64_rem(log->logged++, log->capacity, &slot);
		log->ring[slot] = rec;
	}
	spin_unlock(&log->lock);
	if (wq_has_sleeper(&log->wq))
		wake_up_all(&log->wq);
}

/* A new reader starts at the oldest record the ring still holds. */
static int incfs_log_open(struct inode *inode, struct file *file)
{
	struct incfs_read_log *log = &incfs_sb(inode->i_sb)->log;
	struct incfs_log_file *lf;

	if (file->f_mode & FMODE_WRITE)
		return -EPERM;
	lf = kzalloc(sizeof(*lf), GFP_KERNEL);
	if (!lf)
		return -ENOMEM;
	spin_lock(&log->lock);
	lf->position = oldest(log);
	spin_unlock(&log->lock);
	file->private_data = lf;
	return stream_open(inode, file);
}

static int incfs_log_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

/*
 * Skip @lf past the records the ring no longer holds, counting them as
 * lost; log.lock.
 */
static void catch_up(struct incfs_read_log *log, struct incfs_log_file *lf)
{
	u64 first = oldest(log);

	lockdep_assert_held(&log->lock);
	if (lf->position < first) {
		lf->lost += first - lf->position;
		lf->position = first;
	}
}

static bool has_records(struct incfs_read_log *log, struct incfs_log_file *lf)
{
	bool ret;

	spin_lock(&log->lock);
	ret = lf->position < log->logged;
	spin_unlock(&log->lock);
	return ret;
}

/*
 * Copy up to @n records from @lf's position into @out; their count.  The
 * position moves only once they reached the caller (read()), so a read
 * whose buffer faults leaves them for the next.
 */
static size_t collect(struct incfs_read_log *log, struct incfs_log_file *lf,
		      struct incfs_read_log_record *out, size_t n)
{
	size_t got = 0;
	u32 slot;

	spin_lock(&log->lock);
	catch_up(log, lf);
	while (got < n && lf->position + got < log->logged) {
		div_u64_rem(lf->position + got, log->capacity, &slot);
		out[got++] = log->ring[slot];
	}
	spin_unlock(&log->lock);
	return got;
}

/*
 * Whole records, oldest first: at least one (waiting for it unless
 * O_NONBLOCK), as many as fit and are there.  0 once the mount was shut
 * down (a forced unmount, a backing error) and every record was read.
 */
static ssize_t incfs_log_read(struct file *file, char __user *buf,
			      size_t count, loff_t *ppos)
{
	struct incfs_mount *mi = incfs_sb(file_inode(file)->i_sb);
	struct incfs_read_log *log = &mi->log;
	struct incfs_log_file *lf = file->private_data;
	struct incfs_read_log_record *recs;
	size_t n = count / sizeof(*recs), got;
	ssize_t ret;

	if (!n)
		return -EINVAL;
	n = min_t(size_t, n, READ_BATCH);
	recs = kvmalloc_array(n, sizeof(*recs), GFP_KERNEL);
	if (!recs)
		return -ENOMEM;

	while (!(got = collect(log, lf, recs, n))) {
		if (READ_ONCE(mi->shutdown)) {
			ret = 0;
			goto out;
		}
		if (file->f_flags & O_NONBLOCK) {
			ret = -EAGAIN;
			goto out;
		}
		ret = wait_event_interruptible(log->wq, has_records(log, lf) ||
					       READ_ONCE(mi->shutdown));
		if (ret)
			goto out;
	}
	ret = got * sizeof(*recs);
	if (copy_to_user(buf, recs, ret)) {
		ret = -EFAULT;
		goto out;
	}
	spin_lock(&log->lock);
	lf->position += got;
	spin_unlock(&log->lock);
out:
	kvfree(recs);
	return ret;
}

static __poll_t incfs_log_poll(struct file *file, poll_table *wait)
{
	struct incfs_mount *mi = incfs_sb(file_inode(file)->i_sb);
	__poll_t mask = 0;

	poll_wait(file, &mi->log.wq, wait);
	if (has_records(&mi->log, file->private_data))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (READ_ONCE(mi->shutdown))
		mask |= EPOLLHUP;
	return mask;
}

static long incfs_log_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	struct incfs_read_log *log = file_log(file);
	struct incfs_log_file *lf = file->private_data;
	struct incfs_read_log_state st = {};

	if (cmd != INCFS_IOC_READ_LOG_STATE)
		return -ENOTTY;
	spin_lock(&log->lock);
	catch_up(log, lf);
	st.logged = log->logged;
	st.position = lf->position;
	st.lost = lf->lost;
	st.capacity = log->capacity;
	spin_unlock(&log->lock);
	return copy_to_user((void __user *)arg, &st, sizeof(st)) ? -EFAULT : 0;
}

const struct file_operations incfs_log_fops = {
	.owner		= THIS_MODULE,
	.open		= incfs_log_open,
	.release	= incfs_log_release,
	.read		= incfs_log_read,
	.poll		= incfs_log_poll,
	.unlocked_ioctl	= incfs_log_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};
