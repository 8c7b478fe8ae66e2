// SPDX-License-Identifier: GPL-2.0
/*
 * Exports a name that a GKI module exports: l2tp_core's l2tp_tunnel_put,
 * on abi/protected_exports.  Unsigned, as every module built against the
 * GKI is, the kernel refuses it (CONFIG_MODULE_SIG_PROTECT); signed with the
 * GKI's key, it loads.  qemu/tests/module_sig.c loads both.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

/* A stand-in with the protected name: the name is what is protected. */
void l2tp_tunnel_put(void *tunnel);

void l2tp_tunnel_put(void *tunnel)
{
}
EXPORT_SYMBOL_GPL(l2tp_tunnel_put);

static int __init protected_export_init(void)
{
	pr_info("loaded\n");
	return 0;
}
module_init(protected_export_init);

static void __exit protected_export_exit(void)
{
}
module_exit(protected_export_exit);

MODULE_DESCRIPTION("Exports a protected GKI symbol, for the protection's test");
MODULE_LICENSE("GPL");
