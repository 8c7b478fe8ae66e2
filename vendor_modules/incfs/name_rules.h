/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rules a name change obeys, whether it comes from a .cmd instruction
 * or from a record replayed at mount, in the module or in the tools: one
 * implementation, asking each side's own structures through
 * struct incfs_ns_ops.  Builds unchanged in both (see format.h).
 */
#ifndef _INCFS_NAME_RULES_H
#define _INCFS_NAME_RULES_H

#ifdef __KERNEL__
#include <linux/stat.h>
#endif
#include "format.h"

/*
 * What the rules ask of a namespace.  Inode numbers; 0 answers "none".
 * The caller keeps the namespace still until it has applied the change.
 */
struct incfs_ns_ops {
	/* The mode of node @ino, 0 if there is none. */
	umode_t (*mode)(void *ns, u64 ino);
	/* The node @name names in directory @dir, 0 if none. */
	u64 (*lookup)(void *ns, u64 dir, const char *name, size_t len);
	/* The directory holding directory @dir's one name, 0 if unnamed. */
	u64 (*parent)(void *ns, u64 dir);
	/* Whether directory @dir has entries. */
	bool (*has_entries)(void *ns, u64 dir);
	/* How many names the namespace holds. */
	unsigned long (*names)(void *ns);
};

int incfs_new_node_check(umode_t mode, u64 size, unsigned long nodes);
int incfs_name_rules_check(const struct incfs_ns_ops *ops, void *ns, u8 type,
			   u64 dir, u64 child, const char *name, size_t len);

#endif /* _INCFS_NAME_RULES_H */
