// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal external module for the harness: proves that a module built
 * with M= against the GKI's Module.symvers loads, resolves a couple of
 * kernel symbols, logs, and unloads.  It exports nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/crc32.h>
#include <linux/slab.h>
#include <linux/utsname.h>

static const char probe[] = "gki";

/*
 * Faults on request, so the harness can prove that each kind of kernel
 * report fails a run (qemu/gkiqemu/tests/test_harness_boot.py).
 */
static bool warn_on_load;
module_param(warn_on_load, bool, 0444);
MODULE_PARM_DESC(warn_on_load, "WARN() while loading");

static bool leak_on_load;
module_param(leak_on_load, bool, 0444);
MODULE_PARM_DESC(leak_on_load, "leak an allocation while loading (kmemleak)");

static bool oob_on_load;
module_param(oob_on_load, bool, 0444);
MODULE_PARM_DESC(oob_on_load, "read past an allocation while loading (KASAN)");

static bool ubsan_on_load;
module_param(ubsan_on_load, bool, 0444);
MODULE_PARM_DESC(ubsan_on_load, "shift past an int's width while loading (UBSAN)");

static void fault_on_request(void)
{
	char *p;

	WARN(warn_on_load, "gki_test_module: warning on request\n");
	if (leak_on_load) {
		p = kmalloc(64, GFP_KERNEL);
		OPTIMIZER_HIDE_VAR(p);
		p = NULL;
	}
	if (oob_on_load) {
		p = kmalloc(8, GFP_KERNEL);
		if (p) {
			OPTIMIZER_HIDE_VAR(p);
			pr_info("byte past the end: %d\n", READ_ONCE(p[8]));
			kfree(p);
		}
	}
	if (ubsan_on_load) {
		int shift = 32;

		OPTIMIZER_HIDE_VAR(shift);
		pr_info("shifted past the width: %d\n", 1 << shift);
	}
}

static int __init gki_test_module_init(void)
{
	pr_info("loaded on %s, crc32=%08x\n",
		init_utsname()->release, crc32_le(~0, probe, sizeof(probe) - 1));
	fault_on_request();
	return 0;
}

static void __exit gki_test_module_exit(void)
{
	pr_info("unloaded\n");
}

module_init(gki_test_module_init);
module_exit(gki_test_module_exit);
MODULE_DESCRIPTION("GKI harness test module: load, log, unload");
MODULE_LICENSE("GPL");
