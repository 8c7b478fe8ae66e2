// SPDX-License-Identifier: GPL-2.0
/*
 * The namespace: nodes (files and directories, by inode number) and the
 * names linking them.  Instructions from .cmd and records replayed at mount
 * go through the same checks, so an image can only hold what an
 * instruction could have made.
 */
#include <linux/jhash.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "incfs.h"
#include "name_rules.h"

/* The name hash: 64 buckets at first, at most one per name allowed. */
#define NAME_BITS_MIN	6
#define NAME_BITS_MAX	ilog2(INCFS_MAX_NAMES)

struct incfs_node *incfs_node_alloc(struct incfs_mount *mi, u64 ino,
				    umode_t mode, u64 size)
{
	struct incfs_node *node = kzalloc(sizeof(*node), GFP_KERNEL);

	if (!node)
		return NULL;
	node->mi = mi;
	node->ino = ino;
	node->mode = (mode & S_IFMT) | (mode & 0555);
	INIT_LIST_HEAD(&node->names);
	xa_init(&node->children);
	if (S_ISDIR(mode)) {
		node->nlink = 2;
		return node;
	}
	node->size = size;
	node->block_count = incfs_blocks_for_size(size);
	return node;
}

static size_t blockmap_bytes(u32 block_count)
{
	return (size_t)block_count * sizeof(struct incfs_blockmap_entry);
}

/* Would a blockmap of @bytes more stay within the mount's limit? */
static bool blockmap_fits(struct incfs_mount *mi, size_t bytes)
{
	lockdep_assert_held(&mi->bf_mutex);
	return bytes <= mi->bm_limit - mi->bm_bytes;
}

/*
 * The in-memory blockmap of a file, made when its on-disk one is replayed
 * or appended (bf_mutex held): memory follows the blockmaps an image holds,
 * not the sizes its inode records claim.  Charged to the caller's memory
 * cgroup, and bounded per mount (max_blockmap_mb): -ENOSPC beyond.
 */
int incfs_blockmap_alloc(struct incfs_node *node)
{
	struct incfs_mount *mi = node->mi;
	size_t bytes = blockmap_bytes(node->block_count);
	struct incfs_blockmap_entry *blocks;

	if (node->blocks || !bytes)
		return 0;
	if (!blockmap_fits(mi, bytes))
		return -ENOSPC;
	blocks = kvzalloc(bytes, GFP_KERNEL_ACCOUNT);
	if (!blocks)
		return -ENOMEM;
	spin_lock(&mi->pending_lock);
	node->blocks = blocks;
	spin_unlock(&mi->pending_lock);
	mi->bm_bytes += bytes;
	return 0;
}

/* Frees the names in a directory too (they leave the hash with it). */
void incfs_node_free(struct incfs_node *node)
{
	struct incfs_dirent *de;
	unsigned long cookie;

	xa_for_each(&node->children, cookie, de)
		kfree(de);
	xa_destroy(&node->children);
	kvfree(node->blocks);
	kfree(node);
}

int incfs_tree_init(struct incfs_mount *mi)
{
	mi->name_hash = kvcalloc(1U << NAME_BITS_MIN, sizeof(*mi->name_hash),
				 GFP_KERNEL);
	if (!mi->name_hash)
		return -ENOMEM;
	mi->name_bits = NAME_BITS_MIN;
	mi->name_seed = get_random_u32();
	return 0;
}

static u32 name_hash(const struct incfs_node *dir, const char *name,
		     size_t len)
{
	return jhash(name, len, jhash_2words((u32)dir->ino,
					     (u32)(dir->ino >> 32),
					     dir->mi->name_seed));
}

static struct hlist_head *name_bucket(struct incfs_mount *mi, u32 hash)
{
	return &mi->name_hash[hash & ((1U << mi->name_bits) - 1)];
}

/*
 * More names than buckets: double the buckets.  Without the memory the
 * table stays as it is, with longer chains: lookups stay right.
 */
static void grow_name_hash(struct incfs_mount *mi)
{
	unsigned int i, old_size = 1U << mi->name_bits;
	struct hlist_head *old = mi->name_hash;
	struct incfs_dirent *de;
	struct hlist_node *tmp;

	lockdep_assert_held(&mi->tree_mutex);
	if (mi->name_count <= old_size || mi->name_bits >= NAME_BITS_MAX)
		return;
	mi->name_hash = kvcalloc(2 * old_size, sizeof(*mi->name_hash),
				 GFP_KERNEL);
	if (!mi->name_hash) {
		mi->name_hash = old;
		return;
	}
	mi->name_bits++;
	for (i = 0; i < old_size; i++)
		hlist_for_each_entry_safe(de, tmp, &old[i], hash_link)
			hlist_add_head(&de->hash_link,
				       name_bucket(mi, de->hash));
	kvfree(old);
}

struct incfs_node *incfs_tree_get(struct incfs_mount *mi, u64 ino)
{
	if (ino > ULONG_MAX)
		return NULL;
	return xa_load(&mi->nodes, ino);
}

/* Add a node that passed incfs_tree_check_new(). */
int incfs_tree_insert(struct incfs_mount *mi, struct incfs_node *node)
{
	int err;

	mutex_lock(&mi->tree_mutex);
	err = xa_insert(&mi->nodes, node->ino, node, GFP_KERNEL);
	if (!err) {
		mi->node_count++;
		mi->next_ino = max(mi->next_ino, node->ino + 1);
	}
	mutex_unlock(&mi->tree_mutex);
	return err == -EBUSY ? -EEXIST : err;
}

/*
 * Take the next inode number for a new file, its slot reserved in the
 * xarray (xa_load() sees nothing there) so that reserve_commit() cannot
 * fail once the file's record is written.
 */
static int reserve_ino(struct incfs_mount *mi, u64 *ino)
{
	int err;

	mutex_lock(&mi->tree_mutex);
	*ino = mi->next_ino;
	if (*ino > INCFS_MAX_INO)
		err = -ENOSPC;
	else
		err = xa_insert(&mi->nodes, *ino, NULL, GFP_KERNEL);
	mutex_unlock(&mi->tree_mutex);
	return err == -EBUSY ? -EEXIST : err;
}

static void reserve_release(struct incfs_mount *mi, u64 ino)
{
	mutex_lock(&mi->tree_mutex);
	xa_release(&mi->nodes, ino);
	mutex_unlock(&mi->tree_mutex);
}

static void reserve_commit(struct incfs_mount *mi, struct incfs_node *node)
{
	void *old;

	mutex_lock(&mi->tree_mutex);
	/* Filling a reserved slot allocates nothing. */
	old = xa_cmpxchg(&mi->nodes, node->ino, XA_ZERO_ENTRY, node, GFP_KERNEL);
	WARN_ON_ONCE(xa_is_err(old));
	mi->node_count++;
	mi->next_ino = max(mi->next_ino, node->ino + 1);
	mutex_unlock(&mi->tree_mutex);
}

int incfs_tree_check_new(struct incfs_mount *mi, umode_t mode, u64 size)
{
	int err;

	mutex_lock(&mi->tree_mutex);
	err = incfs_new_node_check(mode, size, mi->node_count);
	mutex_unlock(&mi->tree_mutex);
	return err;
}

static struct incfs_dirent *find_name(struct incfs_node *dir,
				      const char *name, size_t len)
{
	struct incfs_mount *mi = dir->mi;
	u32 hash = name_hash(dir, name, len);
	struct incfs_dirent *de;

	lockdep_assert_held(&mi->tree_mutex);
	hlist_for_each_entry(de, name_bucket(mi, hash), hash_link)
		if (de->hash == hash && de->parent == dir && de->len == len &&
		    !memcmp(de->name, name, len))
			return de;
	return NULL;
}

struct incfs_node *incfs_tree_lookup(struct incfs_node *dir, const char *name,
				     size_t len)
{
	struct incfs_dirent *de;

	lockdep_assert_held(&dir->mi->tree_mutex);
	de = find_name(dir, name, len);
	return de ? de->child : NULL;
}

static struct incfs_node *parent_of(struct incfs_node *dir)
{
	struct incfs_dirent *de;

	de = list_first_entry_or_null(&dir->names, struct incfs_dirent,
				      child_link);
	return de ? de->parent : NULL;
}

/* struct incfs_ns_ops over the nodes; tree_mutex held. */
static umode_t ns_mode(void *ns, u64 ino)
{
	struct incfs_node *node = incfs_tree_get(ns, ino);

	return node ? node->mode : 0;
}

static u64 ns_lookup(void *ns, u64 dir, const char *name, size_t len)
{
	struct incfs_node *node = incfs_tree_get(ns, dir);
	struct incfs_dirent *de = node ? find_name(node, name, len) : NULL;

	return de ? de->child->ino : 0;
}

static u64 ns_parent(void *ns, u64 ino)
{
	struct incfs_node *node = incfs_tree_get(ns, ino);
	struct incfs_node *parent = node ? parent_of(node) : NULL;

	return parent ? parent->ino : 0;
}

static bool ns_has_entries(void *ns, u64 dir)
{
	struct incfs_node *node = incfs_tree_get(ns, dir);

	return node && !xa_empty(&node->children);
}

static unsigned long ns_names(void *ns)
{
	return ((struct incfs_mount *)ns)->name_count;
}

static const struct incfs_ns_ops tree_ns_ops = {
	.mode = ns_mode,
	.lookup = ns_lookup,
	.parent = ns_parent,
	.has_entries = ns_has_entries,
	.names = ns_names,
};

/* Into the slot reserved by incfs_tree_name_op(): nothing can fail. */
static void apply_add(struct incfs_node *dir, struct incfs_node *child,
		      struct incfs_dirent *de, const char *name, size_t len)
{
	struct incfs_mount *mi = dir->mi;

	mi->name_count++;
	de->parent = dir;
	de->child = child;
	de->cookie = dir->next_cookie++;
	de->hash = name_hash(dir, name, len);
	de->len = len;
	memcpy(de->name, name, len);
	xa_cmpxchg(&dir->children, de->cookie, XA_ZERO_ENTRY, de, GFP_KERNEL);
	hlist_add_head(&de->hash_link, name_bucket(mi, de->hash));
	list_add_tail(&de->child_link, &child->names);
	if (S_ISDIR(child->mode))
		dir->nlink++;
	else
		child->nlink++;
	grow_name_hash(mi);
}

static void apply_remove(struct incfs_dirent *de)
{
	de->parent->mi->name_count--;
	/* xa_erase(), without one more KMI symbol. */
	xa_cmpxchg(&de->parent->children, de->cookie, de, NULL, 0);
	hlist_del(&de->hash_link);
	list_del(&de->child_link);
	if (S_ISDIR(de->child->mode))
		de->parent->nlink--;
	else
		de->child->nlink--;
	kfree(de);
}

static int persist_name_op(struct incfs_mount *mi, u8 type, u64 dir_ino,
			   u64 child_ino, const char *name, size_t len)
{
	struct incfs_dir_action *da = kmalloc(sizeof(*da), GFP_KERNEL);
	int err;

	if (!da)
		return -ENOMEM;
	incfs_encode_dir_action(da, type, dir_ino, child_ino, name, len);
	err = incfs_bf_append_md(mi, (union incfs_md_record *)da);
	kfree(da);
	return err;
}

/*
 * Add (INCFS_DIRA_ADD_ENTRY) or remove (INCFS_DIRA_REMOVE_ENTRY) a name.
 * With persist, the change is appended to the backing file between the
 * check and the change in memory; the caller holds bf_mutex, so no other
 * change comes in between.
 */
int incfs_tree_name_op(struct incfs_mount *mi, u8 type, u64 dir_ino,
		       u64 child_ino, const char *name, size_t len,
		       bool persist)
{
	struct incfs_dirent *de = NULL;
	struct incfs_node *dir, *child;
	int err;

	lockdep_assert_held(&mi->bf_mutex);
	/* Checked again with the rules; first, to bound the allocation. */
	if (!incfs_name_valid(name, len))
		return -EINVAL;
	if (type == INCFS_DIRA_ADD_ENTRY) {
		de = kmalloc(struct_size(de, name, len), GFP_KERNEL);
		if (!de)
			return -ENOMEM;
	}

	mutex_lock(&mi->tree_mutex);
	err = incfs_name_rules_check(&tree_ns_ops, mi, type, dir_ino,
				     child_ino, name, len);
	dir = incfs_tree_get(mi, dir_ino);
	/* The new name's readdir slot, so that adding it cannot fail. */
	if (!err && de)
		err = xa_reserve(&dir->children, dir->next_cookie, GFP_KERNEL);
	mutex_unlock(&mi->tree_mutex);

	if (!err && persist) {
		err = persist_name_op(mi, type, dir_ino, child_ino, name, len);
		if (err && de) {
			mutex_lock(&mi->tree_mutex);
			xa_release(&dir->children, dir->next_cookie);
			mutex_unlock(&mi->tree_mutex);
		}
	}
	if (err) {
		kfree(de);
		return err;
	}

	/* bf_mutex held since the check: the nodes and names are as seen. */
	mutex_lock(&mi->tree_mutex);
	if (de) {
		child = incfs_tree_get(mi, child_ino);
		apply_add(dir, child, de, name, len);
	} else {
		apply_remove(find_name(dir, name, len));
	}
	WRITE_ONCE(mi->generation, mi->generation + 1);
	mutex_unlock(&mi->tree_mutex);
	return 0;
}

/*
 * INCFS_INSTRUCTION_NEW_FILE; the caller holds bf_mutex.  The inode number
 * is reserved before the record is written and the node stored after: a
 * failure leaves neither a record nor a node, so no two records ever
 * share a number.
 */
int incfs_new_file(struct incfs_mount *mi, u16 mode, u64 size, u64 *ino)
{
	struct incfs_inode rec;
	struct incfs_node *node;
	u64 new_ino;
	int err;

	lockdep_assert_held(&mi->bf_mutex);
	err = incfs_tree_check_new(mi, mode, size);
	if (err)
		return err;
	if (S_ISDIR(mode))
		size = 0;
	/* Its blockmap follows at once (cmd.c): refuse it now if it cannot. */
	if (!blockmap_fits(mi, blockmap_bytes(incfs_blocks_for_size(size))))
		return -ENOSPC;
	err = reserve_ino(mi, &new_ino);
	if (err)
		return err;
	node = incfs_node_alloc(mi, new_ino, mode, size);
	if (!node) {
		err = -ENOMEM;
		goto err_release;
	}
	incfs_encode_inode(&rec, node->ino, size, node->mode);
	err = incfs_bf_append_md(mi, (union incfs_md_record *)&rec);
	if (err)
		goto err_free;
	reserve_commit(mi, node);
	*ino = node->ino;
	return 0;

err_free:
	incfs_node_free(node);
err_release:
	reserve_release(mi, new_ino);
	return err;
}

void incfs_tree_free(struct incfs_mount *mi)
{
	struct incfs_node *node;
	unsigned long ino;

	/* Each name is freed once, with its directory. */
	xa_for_each(&mi->nodes, ino, node)
		incfs_node_free(node);
	xa_destroy(&mi->nodes);
	kvfree(mi->name_hash);
}
