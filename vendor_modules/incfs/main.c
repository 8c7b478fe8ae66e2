// SPDX-License-Identifier: GPL-2.0
/*
 * The Incremental File System: module init and /sys/fs/incremental-fs.
 */
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "incfs.h"

static struct kobject *incfs_kobj;
struct workqueue_struct *incfs_read_wq;

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", INCFS_VERSION);
}

static struct kobj_attribute version_attr = __ATTR_RO(version);

static struct attribute *incfs_attrs[] = {
	&version_attr.attr,
	NULL,
};

static const struct attribute_group incfs_attr_group = {
	.attrs = incfs_attrs,
};

static int __init incfs_init(void)
{
	int err;

	/* A block is a page: folios are filled one block at a time. */
	BUILD_BUG_ON(PAGE_SIZE != INCFS_DATA_FILE_BLOCK_SIZE);
	incfs_check_layout();

	/*
	 * A direct read's end: its CRCs, on the CPU whose interrupt ended it
	 * (bound: the pages are in that CPU's cache), before the application
	 * that waits (high priority), and with a rescuer, since a page fault
	 * under memory pressure can wait on it (as dm-verity's kverityd).
	 */
	incfs_read_wq = alloc_workqueue("incfs_read",
					WQ_HIGHPRI | WQ_MEM_RECLAIM, 0);
	if (!incfs_read_wq)
		return -ENOMEM;
	incfs_kobj = kobject_create_and_add(INCFS_NAME, fs_kobj);
	if (!incfs_kobj) {
		err = -ENOMEM;
		goto destroy_wq;
	}
	err = sysfs_create_group(incfs_kobj, &incfs_attr_group);
	if (err)
		goto put_kobj;
	err = register_filesystem(&incfs_fs_type);
	if (err)
		goto put_kobj;
	return 0;

put_kobj:
	kobject_put(incfs_kobj);
destroy_wq:
	destroy_workqueue(incfs_read_wq);
	return err;
}

static void __exit incfs_exit(void)
{
	unregister_filesystem(&incfs_fs_type);
	kobject_put(incfs_kobj);
	/* After the last unmount; its reads' last work may still be ending. */
	destroy_workqueue(incfs_read_wq);
}

module_init(incfs_init);
module_exit(incfs_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Incremental File System");
