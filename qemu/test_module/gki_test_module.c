// SPDX-License-Identifier: GPL-2.0
/*
 * A minimal external module for the harness: proves that a module built
 * with M= against the GKI's Module.symvers loads, resolves a couple of
 * kernel symbols, logs, and unloads.  It exports nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/crc32.h>
#include <linux/utsname.h>

static const char probe[] = "gki";

static int __init gki_test_module_init(void)
{
	pr_info("loaded on %s, crc32=%08x\n",
		init_utsname()->release, crc32_le(~0, probe, sizeof(probe) - 1));
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
