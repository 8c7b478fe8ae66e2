// SPDX-License-Identifier: GPL-2.0
/*
 * vh_nice: a vendor scheduling policy on a restricted hook.
 *
 * android_rvh_set_user_nice raises every nice value below the floor that
 * a user task asks for to the floor, so no application runs at a higher
 * priority than the vendor allows; kernel threads keep theirs.  The
 * default floor, MIN_NICE, changes nothing.  The hook is restricted: once
 * attached it stays, and this module cannot be unloaded.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/prio.h>
#include <trace/hooks/sched.h>

static int nice_floor = MIN_NICE;

static int floor_set(const char *val, const struct kernel_param *kp)
{
	int n, ret = kstrtoint(val, 10, &n);

	if (ret)
		return ret;
	if (n < MIN_NICE || n > MAX_NICE)
		return -ERANGE;
	WRITE_ONCE(nice_floor, n);
	return 0;
}

static const struct kernel_param_ops floor_ops = {
	.set = floor_set,
	.get = param_get_int,
};
module_param_cb(floor, &floor_ops, &nice_floor, 0600);
MODULE_PARM_DESC(floor, "lowest nice value a task may be given (-20..19)");

/*
 * The last decision, for the tests.  Written without a lock: the values
 * are only read after the caller's own setpriority() returned.
 */
static int last_pid;
module_param(last_pid, int, 0400);
static long last_requested;
module_param(last_requested, long, 0400);
static long last_given;
module_param(last_given, long, 0400);

static void vh_set_user_nice(void *data, struct task_struct *p, long *nice,
			     bool *allowed)
{
	long requested = *nice, min = READ_ONCE(nice_floor);

	if (p->flags & PF_KTHREAD)
		return;
	if (requested < min)
		*nice = min;
	WRITE_ONCE(last_pid, task_pid_nr(p));
	WRITE_ONCE(last_requested, requested);
	WRITE_ONCE(last_given, *nice);
}

static int __init vh_nice_init(void)
{
	/* Last in init: a restricted hook cannot be undone on an error. */
	return register_trace_android_rvh_set_user_nice(vh_set_user_nice, NULL);
}

/*
 * Never runs: the attachment pins this module.  It exists so that rmmod
 * meets the pin (delete_module() refuses a module without an exit
 * function with EBUSY before it looks at the module's users).
 */
static void __exit vh_nice_exit(void)
{
}

module_init(vh_nice_init);
module_exit(vh_nice_exit);
MODULE_DESCRIPTION("Example vendor module: a nice-value floor at a restricted vendor hook");
MODULE_LICENSE("GPL");
