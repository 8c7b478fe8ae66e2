// SPDX-License-Identifier: GPL-2.0
/*
 * vh_meminfo: a vendor module on two normal hooks.
 *
 * android_vh_mmap_region counts mmap() calls, and for one watched process
 * remembers the last mapping made; android_vh_meminfo_proc_show reports
 * the count at the end of /proc/meminfo.  Both hooks are detached on
 * unload, and the lines disappear with the module.
 */
#include <linux/atomic.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/tracepoint.h>
#include <trace/hooks/mm.h>

static atomic64_t mmap_calls = ATOMIC64_INIT(0);

/* The process whose mappings are recorded (0: none); set by the tests. */
static int watch_pid;
module_param(watch_pid, int, 0600);
MODULE_PARM_DESC(watch_pid, "record the mappings of this thread group");

/* The last mapping of watch_pid: written under its mmap lock. */
static unsigned long last_addr;
module_param(last_addr, ulong, 0400);
static unsigned long last_vma_start;
module_param(last_vma_start, ulong, 0400);
static unsigned long last_vma_end;
module_param(last_vma_end, ulong, 0400);

static void vh_mmap_region(void *data, struct vm_area_struct *vma,
			   unsigned long addr)
{
	atomic64_inc(&mmap_calls);
	if (!watch_pid || task_tgid_nr(current) != READ_ONCE(watch_pid))
		return;
	WRITE_ONCE(last_addr, addr);
	WRITE_ONCE(last_vma_start, vma->vm_start);
	WRITE_ONCE(last_vma_end, vma->vm_end);
}

static void vh_meminfo_show(void *data, struct seq_file *m)
{
	seq_printf(m, "VendorMmapCalls: %16lld\n",
		   (long long)atomic64_read(&mmap_calls));
}

static int __init vh_meminfo_init(void)
{
	int ret;

	ret = register_trace_android_vh_mmap_region(vh_mmap_region, NULL);
	if (ret)
		return ret;
	ret = register_trace_android_vh_meminfo_proc_show(vh_meminfo_show, NULL);
	if (ret)
		goto err_mmap;
	return 0;

err_mmap:
	unregister_trace_android_vh_mmap_region(vh_mmap_region, NULL);
	tracepoint_synchronize_unregister();
	return ret;
}

static void __exit vh_meminfo_exit(void)
{
	unregister_trace_android_vh_meminfo_proc_show(vh_meminfo_show, NULL);
	unregister_trace_android_vh_mmap_region(vh_mmap_region, NULL);
	/* No probe may still be running when the module's text goes. */
	tracepoint_synchronize_unregister();
}

module_init(vh_meminfo_init);
module_exit(vh_meminfo_exit);
MODULE_DESCRIPTION("Example vendor module: /proc/meminfo lines and mmap counts through normal vendor hooks");
MODULE_LICENSE("GPL");
