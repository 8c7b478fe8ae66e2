// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: declaring the app's names.  Each entry is looked up with
 * stat() first: a name already there (from an earlier run on the same
 * backing file) is taken as it is, after checking that it is what the app
 * says; only missing names are created.  A restart therefore never adds a
 * name twice.  A run killed between NEW_FILE and ADD_DIR_ENTRY leaves an
 * unnamed inode in the image (harmless; incfs-image gc drops it) and the
 * restart declares the file again.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/incrementalfs.h>

#include "app.h"
#include "errors.h"
#include "names.h"

/* One instruction; what it is and for which path, for the message. */
static int instr(int cmd, struct incfs_instruction *inst, const char *what, const char *path)
{
	inst->version = INCFS_HEADER_VER;
	if (ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, inst))
		return ld_error(EX_NAMES, "%s for %s: %s", what, path, strerror(errno));
	return 0;
}

static int new_file(int cmd, const struct ld_entry *e, uint64_t *ino)
{
	struct incfs_instruction inst = {
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = {
			.size = e->type == LD_DIR ? 0 : e->size,
			.mode = (e->type == LD_DIR ? S_IFDIR : S_IFREG) | (e->mode & 0777),
		},
	};
	int ret = instr(cmd, &inst, "NEW_FILE", e->path);

	*ino = inst.file.ino_out;
	return ret;
}

static int add_name(int cmd, uint64_t dir, uint64_t child, const struct ld_entry *e)
{
	struct incfs_instruction inst = {
		.type = INCFS_INSTRUCTION_ADD_DIR_ENTRY,
		.dir_entry = {
			.dir_ino = dir,
			.child_ino = child,
			.name = (uintptr_t)e->name,
			.name_len = strlen(e->name),
		},
	};

	return instr(cmd, &inst, "ADD_DIR_ENTRY", e->path);
}

static uint64_t parent_ino(const struct ld_app *a, const struct ld_entry *e)
{
	return e->parent < 0 ? INCFS_ROOT_INODE : a->e[e->parent].ino;
}

/* The name exists: is it what the app declares? */
static int check_existing(const struct ld_app *a, struct ld_entry *e, const struct stat *st)
{
	if (e->type == LD_DIR && !S_ISDIR(st->st_mode))
		return ld_error(EX_NAMES, "%s exists in the mount and is not a directory",
				e->path);
	if (e->type == LD_FILE && (!S_ISREG(st->st_mode) || (uint64_t)st->st_size != e->size))
		return ld_error(EX_NAMES, "%s exists in the mount with another type or size "
				"(%lld bytes, expected %llu)", e->path, (long long)st->st_size,
				(unsigned long long)e->size);
	if (e->type == LD_LINK && st->st_ino != a->e[e->target_idx].ino)
		return ld_error(EX_NAMES, "%s exists in the mount and is not a name of %s",
				e->path, e->target);
	if (e->type != LD_LINK)
		e->ino = st->st_ino;
	return 0;
}

static int create(const struct ld_app *a, struct ld_entry *e, int cmd)
{
	uint64_t dir = parent_ino(a, e), child;
	int ret;

	if (e->type == LD_LINK) {
		child = a->e[e->target_idx].ino;
	} else {
		ret = new_file(cmd, e, &child);
		if (ret)
			return ret;
		e->ino = child;
	}
	return add_name(cmd, dir, child, e);
}

int names_declare(struct ld_app *a, const char *mnt, int cmd, uint64_t *created,
		  uint64_t *present)
{
	char path[PATH_MAX];
	int ret;

	for (size_t i = 0; i < a->n; i++) {
		struct ld_entry *e = &a->e[i];
		struct stat st;

		if (snprintf(path, sizeof(path), "%s/%s", mnt, e->path) >= (int)sizeof(path))
			return ld_error(EX_USAGE, "path too long: %s", e->path);
		if (!lstat(path, &st)) {
			ret = check_existing(a, e, &st);
			(*present)++;
		} else if (errno == ENOENT) {
			ret = create(a, e, cmd);
			(*created)++;
		} else {
			ret = ld_error(EX_NAMES, "stat %s: %s", path, strerror(errno));
		}
		if (ret)
			return ret;
	}
	return 0;
}
