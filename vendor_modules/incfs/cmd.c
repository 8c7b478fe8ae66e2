// SPDX-License-Identifier: GPL-2.0
/*
 * The .cmd file: ioctl() changes the namespace, write() delivers blocks,
 * poll() and read() report pending reads.
 */
#include <linux/capability.h>
#include <linux/compat.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "incfs.h"

/* Pending reads returned by one read() at most. */
#define READ_BATCH	256

/* Per open file: the newest serial this file has returned; pending_lock. */
struct incfs_cmd_file {
	u32 last_seen;
};

static struct incfs_mount *cmd_mount(struct file *file)
{
	return incfs_sb(file_inode(file)->i_sb);
}

static bool may_change(struct file *file)
{
	return ns_capable(file_inode(file)->i_sb->s_user_ns, CAP_SYS_ADMIN);
}

static int incfs_cmd_open(struct inode *inode, struct file *file)
{
	struct incfs_mount *mi = incfs_sb(inode->i_sb);
	struct incfs_cmd_file *cf = kzalloc(sizeof(*cf), GFP_KERNEL);
	struct incfs_pending_read *oldest;

	if (!cf)
		return -ENOMEM;
	/*
	 * A new opener sees every read pending now: it has seen up to just
	 * before the oldest, or all there were (serials wrap, so 0 is not
	 * "before everything").
	 */
	spin_lock(&mi->pending_lock);
	oldest = list_first_entry_or_null(&mi->pending, struct incfs_pending_read, list);
	cf->last_seen = oldest ? oldest->serial - 1 : mi->last_serial;
	spin_unlock(&mi->pending_lock);
	file->private_data = cf;
	/* No file position: a blocked read() must not hold up write(). */
	return stream_open(inode, file);
}

static int incfs_cmd_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static int name_instruction(struct incfs_mount *mi, u32 type,
			    const struct incfs_dir_entry_instruction *de)
{
	char *name;
	int err;

	if (de->name_len == 0 || de->name_len > INCFS_MAX_NAME_LEN)
		return -EINVAL;
	name = memdup_user(u64_to_user_ptr(de->name), de->name_len);
	if (IS_ERR(name))
		return PTR_ERR(name);

	/* The read log's name, whether this mount has a read log or not. */
	if (type == INCFS_INSTRUCTION_ADD_DIR_ENTRY && de->dir_ino == INCFS_ROOT_INODE &&
	    de->name_len == strlen(INCFS_LOG_FILENAME) &&
	    !memcmp(name, INCFS_LOG_FILENAME, de->name_len))
		err = -EEXIST;
	else
		err = mutex_lock_killable(&mi->bf_mutex);
	if (!err) {
		err = incfs_tree_name_op(mi, type == INCFS_INSTRUCTION_ADD_DIR_ENTRY ?
					 INCFS_DIRA_ADD_ENTRY : INCFS_DIRA_REMOVE_ENTRY,
					 de->dir_ino, de->child_ino, name,
					 de->name_len, true);
		mutex_unlock(&mi->bf_mutex);
	}
	kfree(name);
	return err;
}

/*
 * Reserved fields must be zero, so that a later version can give them a
 * meaning without old kernels silently ignoring it.  ino_out is output.
 */
static bool reserved_zero(const struct incfs_instruction *inst)
{
	const struct incfs_new_file_instruction *f = &inst->file;
	const struct incfs_dir_entry_instruction *de = &inst->dir_entry;

	switch (inst->type) {
	case INCFS_INSTRUCTION_NEW_FILE:
		return !f->reserved1 && !f->reserved2 && !f->reserved3 &&
		       !f->reserved4 && !f->reserved5 && !f->reserved6 &&
		       !f->reserved7;
	case INCFS_INSTRUCTION_ADD_DIR_ENTRY:
	case INCFS_INSTRUCTION_REMOVE_DIR_ENTRY:
		return !de->reserved1 && !de->reserved2 && !de->reserved3 &&
		       !de->reserved4 && !de->reserved5;
	}
	/* NOOP and unknown types: the whole body is reserved. */
	return incfs_all_zero(inst->reserved, sizeof(inst->reserved));
}

static long process_instruction(struct file *file,
				struct incfs_instruction __user *uinst)
{
	struct incfs_mount *mi = cmd_mount(file);
	struct incfs_instruction inst;
	struct incfs_node *node;
	int err;

	if (!may_change(file))
		return -EPERM;
	if (copy_from_user(&inst, uinst, sizeof(inst)))
		return -EFAULT;
	if (inst.version != INCFS_HEADER_VER || !reserved_zero(&inst))
		return -EINVAL;

	switch (inst.type) {
	case INCFS_INSTRUCTION_NOOP:
		return 0;
	case INCFS_INSTRUCTION_NEW_FILE:
		err = mutex_lock_killable(&mi->bf_mutex);
		if (err)
			return err;
		inst.file.ino_out = 0;
		err = incfs_new_file(mi, inst.file.mode, inst.file.size,
				     &inst.file.ino_out);
		/* On failure the file stays; its blockmap is made on first write. */
		if (!err) {
			node = incfs_tree_get(mi, inst.file.ino_out);
			err = incfs_ensure_blockmap(node);
		}
		mutex_unlock(&mi->bf_mutex);
		if (inst.file.ino_out &&
		    put_user(inst.file.ino_out, &uinst->file.ino_out))
			return -EFAULT;
		return err;
	case INCFS_INSTRUCTION_ADD_DIR_ENTRY:
	case INCFS_INSTRUCTION_REMOVE_DIR_ENTRY:
		return name_instruction(mi, inst.type, &inst.dir_entry);
	}
	return -EINVAL;
}

static long incfs_cmd_ioctl(struct file *file, unsigned int cmd,
			    unsigned long arg)
{
	if (cmd != INCFS_IOC_PROCESS_INSTRUCTION)
		return -ENOTTY;
	return process_instruction(file, (void __user *)arg);
}

/*
 * The records hold user pointers the kernel follows, so only a process
 * with the opener's credentials may write: a descriptor handed to another
 * process (or to a setuid program as its stdout) must not make it read
 * memory on the opener's behalf.  A forked child has a copy of the
 * opener's credentials, so they are compared by value.
 */
static bool same_creds(const struct cred *a, const struct cred *b)
{
	if (a == b)
		return true;
	return uid_eq(a->uid, b->uid) && gid_eq(a->gid, b->gid) &&
	       uid_eq(a->euid, b->euid) && gid_eq(a->egid, b->egid) &&
	       uid_eq(a->suid, b->suid) && gid_eq(a->sgid, b->sgid) &&
	       uid_eq(a->fsuid, b->fsuid) && gid_eq(a->fsgid, b->fsgid) &&
	       a->user_ns == b->user_ns && a->group_info == b->group_info &&
	       cap_issubset(b->cap_effective, a->cap_effective) &&
	       cap_issubset(a->cap_effective, b->cap_effective);
}

static ssize_t incfs_cmd_write(struct file *file, const char __user *buf,
			       size_t count, loff_t *ppos)
{
	if (!may_change(file) || !same_creds(file->f_cred, current_cred()))
		return -EPERM;
	return incfs_write_blocks(cmd_mount(file), buf, count);
}

/* Is there a pending read newer than this file has seen? pending_lock. */
static bool fresh_reads(struct incfs_mount *mi, struct incfs_cmd_file *cf)
{
	struct incfs_pending_read *last;

	lockdep_assert_held(&mi->pending_lock);
	if (list_empty(&mi->pending))
		return false;
	last = list_last_entry(&mi->pending, struct incfs_pending_read, list);
	return incfs_serial_after(last->serial, cf->last_seen);
}

static bool can_read(struct incfs_mount *mi, struct incfs_cmd_file *cf)
{
	bool ret;

	spin_lock(&mi->pending_lock);
	ret = mi->shutdown || fresh_reads(mi, cf);
	spin_unlock(&mi->pending_lock);
	return ret;
}

/*
 * Copy out up to n pending reads newer than last_seen, oldest first.  They
 * count as seen only once they reached the caller (seen()): a read() whose
 * buffer faults returns EFAULT and leaves them for the next.
 */
static size_t collect(struct incfs_mount *mi, struct incfs_cmd_file *cf,
		      struct incfs_pending_read_info *out, size_t n)
{
	struct incfs_pending_read *pr;
	size_t got = 0;

	spin_lock(&mi->pending_lock);
	list_for_each_entry(pr, &mi->pending, list) {
		if (got == n)
			break;
		if (!incfs_serial_after(pr->serial, cf->last_seen))
			continue;
		out[got].file_ino = pr->ino;
		out[got].block_index = pr->index;
		out[got].serial_number = pr->serial;
		got++;
	}
	spin_unlock(&mi->pending_lock);
	return got;
}

/* The caller has the reads up to serial; never moves last_seen back. */
static void seen(struct incfs_mount *mi, struct incfs_cmd_file *cf, u32 serial)
{
	spin_lock(&mi->pending_lock);
	if (incfs_serial_after(serial, cf->last_seen))
		cf->last_seen = serial;
	spin_unlock(&mi->pending_lock);
}

static ssize_t incfs_cmd_read(struct file *file, char __user *buf,
			      size_t count, loff_t *ppos)
{
	struct incfs_mount *mi = cmd_mount(file);
	struct incfs_cmd_file *cf = file->private_data;
	struct incfs_pending_read_info *reads;
	size_t n = count / sizeof(*reads), got;
	ssize_t ret;

	if (!n)
		return -EINVAL;
	n = min_t(size_t, n, READ_BATCH);
	reads = kmalloc_array(n, sizeof(*reads), GFP_KERNEL);
	if (!reads)
		return -ENOMEM;

	while (!(got = collect(mi, cf, reads, n))) {
		if (READ_ONCE(mi->shutdown)) {
			ret = 0;
			goto out;
		}
		if (file->f_flags & O_NONBLOCK) {
			ret = -EAGAIN;
			goto out;
		}
		ret = wait_event_interruptible(mi->pending_wq,
					       can_read(mi, cf));
		if (ret)
			goto out;
	}
	ret = got * sizeof(*reads);
	if (copy_to_user(buf, reads, ret))
		ret = -EFAULT;
	else
		seen(mi, cf, reads[got - 1].serial_number);
out:
	kfree(reads);
	return ret;
}

static __poll_t incfs_cmd_poll(struct file *file, poll_table *wait)
{
	struct incfs_mount *mi = cmd_mount(file);
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(file, &mi->pending_wq, wait);
	spin_lock(&mi->pending_lock);
	if (fresh_reads(mi, file->private_data))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (mi->shutdown)
		mask |= EPOLLHUP;
	spin_unlock(&mi->pending_lock);
	return mask;
}

const struct file_operations incfs_cmd_fops = {
	.owner		= THIS_MODULE,
	.open		= incfs_cmd_open,
	.release	= incfs_cmd_release,
	.read		= incfs_cmd_read,
	.write		= incfs_cmd_write,
	.poll		= incfs_cmd_poll,
	.unlocked_ioctl	= incfs_cmd_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};
