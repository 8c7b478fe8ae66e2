// SPDX-License-Identifier: GPL-2.0
/*
 * The checks behind adding and removing a name (name_rules.h).  The errno
 * each one gives is part of the .cmd interface (README.md, "Namespace"),
 * and their order decides which one a change breaking two rules gets.
 */
#include "name_rules.h"

static const char cmd_name[] = ".cmd";

static bool is_cmd_name(u64 dir, const char *name, size_t len)
{
	return dir == INCFS_ROOT_INODE && len == sizeof(cmd_name) - 1 &&
	       !memcmp(name, cmd_name, len);
}

/*
 * Would putting directory @child in @dir make it its own ancestor?  The
 * walk is bounded even in a namespace that already holds a cycle.
 */
static bool makes_loop(const struct incfs_ns_ops *ops, void *ns, u64 dir,
		       u64 child)
{
	unsigned int depth = 0;
	u64 p;

	for (p = dir; p && depth <= INCFS_MAX_FILES; p = ops->parent(ns, p)) {
		if (p == child)
			return true;
		depth++;
	}
	return p != 0;
}

static int names_left(const struct incfs_ns_ops *ops, void *ns)
{
	return ops->names(ns) >= INCFS_MAX_NAMES ? -ENOSPC : 0;
}

static int check_add(const struct incfs_ns_ops *ops, void *ns, u64 dir,
		     u64 child, const char *name, size_t len)
{
	umode_t mode = ops->mode(ns, child);

	if (!mode)
		return -ENOENT;
	if (is_cmd_name(dir, name, len) || ops->lookup(ns, dir, name, len))
		return -EEXIST;
	if (!S_ISDIR(mode))
		return names_left(ops, ns);
	if (child == INCFS_ROOT_INODE || ops->parent(ns, child))
		return -EMLINK;
	if (makes_loop(ops, ns, dir, child))
		return -ELOOP;
	return names_left(ops, ns);
}

static int check_remove(const struct incfs_ns_ops *ops, void *ns, u64 dir,
			u64 child, const char *name, size_t len)
{
	u64 found = ops->lookup(ns, dir, name, len);

	/* lookup()'s "no such name" is 0, which is no child's number. */
	if (!found || found != child)
		return -ENOENT;
	if (ops->has_entries(ns, child))
		return -ENOTEMPTY;
	return 0;
}

/*
 * 0 if @type (INCFS_DIRA_ADD_ENTRY or INCFS_DIRA_REMOVE_ENTRY) of @name in
 * directory @dir for node @child may be done, else the errno it gets.
 */
int incfs_name_rules_check(const struct incfs_ns_ops *ops, void *ns, u8 type,
			   u64 dir, u64 child, const char *name, size_t len)
{
	umode_t dir_mode;

	if (!incfs_name_valid(name, len))
		return -EINVAL;
	dir_mode = ops->mode(ns, dir);
	if (!dir_mode)
		return -ENOENT;
	if (!S_ISDIR(dir_mode))
		return -ENOTDIR;
	switch (type) {
	case INCFS_DIRA_ADD_ENTRY:
		return check_add(ops, ns, dir, child, name, len);
	case INCFS_DIRA_REMOVE_ENTRY:
		return check_remove(ops, ns, dir, child, name, len);
	}
	return -EINVAL;
}

/*
 * 0 if a node of @mode and @size may join a namespace of @nodes nodes (the
 * root included), else -EINVAL, -EFBIG or -ENFILE.
 */
int incfs_new_node_check(umode_t mode, u64 size, unsigned long nodes)
{
	if (!S_ISREG(mode) && !S_ISDIR(mode))
		return -EINVAL;
	if (S_ISREG(mode) && size > INCFS_MAX_FILE_SIZE)
		return -EFBIG;
	if (nodes >= INCFS_MAX_FILES)
		return -ENFILE;
	return 0;
}
