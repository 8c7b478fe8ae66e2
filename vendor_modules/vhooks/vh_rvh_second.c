// SPDX-License-Identifier: GPL-2.0
/*
 * vh_rvh_second: for the tests only.  Tries to attach a second probe to
 * the restricted hook android_rvh_set_user_nice; its load fails with the
 * error (EBUSY when vh_nice holds the hook).
 */
#include <linux/module.h>
#include <trace/hooks/sched.h>

static void vh_second_probe(void *data, struct task_struct *p, long *nice,
			    bool *allowed)
{
}

static int __init vh_rvh_second_init(void)
{
	int ret = register_trace_android_rvh_set_user_nice(vh_second_probe, NULL);

	pr_info("vh_rvh_second: attach android_rvh_set_user_nice: %d\n", ret);
	return ret;
}

module_init(vh_rvh_second_init);
MODULE_DESCRIPTION("Test module: a second attachment of a restricted vendor hook");
MODULE_LICENSE("GPL");
