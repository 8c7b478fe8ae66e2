// SPDX-License-Identifier: GPL-2.0
/*
 * vh_empty: for the hook-cost benchmark only.  Attaches an empty probe to
 * every hook, so the benchmark measures the call of a vendor probe and
 * nothing else.  The restricted hook keeps it loaded until reboot.
 */
#include <linux/module.h>
#include <trace/hooks/mm.h>
#include <trace/hooks/sched.h>

static void vh_empty_meminfo(void *data, struct seq_file *m)
{
}

static void vh_empty_mmap(void *data, struct vm_area_struct *vma,
			  unsigned long addr)
{
}

static void vh_empty_nice(void *data, struct task_struct *p, long *nice,
			  bool *allowed)
{
}

static int __init vh_empty_init(void)
{
	int ret;

	ret = register_trace_android_vh_meminfo_proc_show(vh_empty_meminfo, NULL);
	if (ret)
		return ret;
	ret = register_trace_android_vh_mmap_region(vh_empty_mmap, NULL);
	if (ret)
		goto err_meminfo;
	ret = register_trace_android_rvh_set_user_nice(vh_empty_nice, NULL);
	if (ret)
		goto err_mmap;
	return 0;

err_mmap:
	unregister_trace_android_vh_mmap_region(vh_empty_mmap, NULL);
err_meminfo:
	unregister_trace_android_vh_meminfo_proc_show(vh_empty_meminfo, NULL);
	tracepoint_synchronize_unregister();
	return ret;
}

module_init(vh_empty_init);
MODULE_DESCRIPTION("Benchmark module: empty probes on every vendor hook");
MODULE_LICENSE("GPL");
