// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-image: create, dump, check, repair and compact incfs backing
 * images (see ../README.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "incfs_image.h"

#define EXIT_USAGE	64
#define BS		INCFS_DATA_FILE_BLOCK_SIZE
#define MAX_NODES	(INCFS_MAX_FILES - 1)	/* inodes besides the root */

static const char usage_text[] =
"usage: incfs-image COMMAND ...\n"
"  create [--lz4] [--force] SRC_DIR IMAGE\n"
"        an image of a directory tree: regular files and directories, hard\n"
"        links as extra names, every block present; with --lz4 a block is\n"
"        stored LZ4-compressed where that makes it smaller.  IMAGE must not\n"
"        exist unless --force.\n"
"  dump IMAGE\n"
"        the superblock, every metadata record (offset, type, size, CRC),\n"
"        the directory tree and the blocks present in each file.\n"
"  fsck [--repair] IMAGE\n"
"        check everything the kernel checks at mount, and every stored block;\n"
"        --repair cuts a torn tail as a mount would and truncates dead bytes.\n"
"  gc [--force] IN OUT\n"
"        a compacted copy of IN with only the files reachable from the root;\n"
"        inode numbers, names and stored blocks are kept as they are.\n"
"exit: 0 success (fsck: clean or repaired), 1 error (fsck: repairable),\n"
"      2 fsck: broken, 3 fsck: cannot read or repair, 64 bad usage\n";

static const char *prog = "incfs-image";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (try %s -h)\n", prog);
	return EXIT_USAGE;
}

static int fail(const char *what, const char *path, int err)
{
	fprintf(stderr, "%s: %s %s: %s\n", prog, what, path, strerror(err));
	return 1;
}

/* Split argv into options (those in @allowed only) and positional arguments. */
struct args {
	bool lz4, force, repair;
	const char *pos[2];
	int npos;
};

static bool option_allowed(const char *allowed, const char *s)
{
	size_t len = strlen(s);
	const char *p;

	for (p = allowed; (p = strstr(p, s)); p += len)
		if ((p == allowed || p[-1] == ' ') && (!p[len] || p[len] == ' '))
			return true;
	return false;
}

static int parse(const char *cmd, int argc, char **argv, const char *allowed,
		 int npos, struct args *a)
{
	bool opts = true;
	int i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < argc; i++) {
		const char *s = argv[i];

		if (opts && !strcmp(s, "--")) {
			opts = false;
		} else if (opts && s[0] == '-' && s[1]) {
			if (!option_allowed(allowed, s))
				return usage_error("unknown option '%s'", s);
			a->lz4 |= !strcmp(s, "--lz4");
			a->force |= !strcmp(s, "--force");
			a->repair |= !strcmp(s, "--repair");
		} else if (a->npos == npos) {
			return usage_error("unexpected argument '%s'", s);
		} else {
			a->pos[a->npos++] = s;
		}
	}
	if (a->npos != npos)
		return usage_error("%s: missing arguments", cmd);
	return 0;
}

/* ===== output through a temporary file ===== */

struct tmp_out {
	char path[PATH_MAX];
	const char *final;
};

static int tmp_start(struct tmp_out *t, const char *final, bool force)
{
	struct stat st;
	mode_t mask;
	int fd;

	t->final = final;
	if (!force && !lstat(final, &st)) {
		fprintf(stderr, "%s: %s exists (use --force to replace it)\n",
			prog, final);
		return 1;
	}
	if (snprintf(t->path, sizeof(t->path), "%s.tmpXXXXXX", final) >=
	    (int)sizeof(t->path))
		return fail("cannot create", final, ENAMETOOLONG);
	fd = mkstemp(t->path);
	if (fd < 0)
		return fail("cannot create a temporary file for", final, errno);
	mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	close(fd);
	return 0;
}

static int tmp_end(struct tmp_out *t, int err)
{
	if (!err && rename(t->path, t->final))
		err = errno;
	if (err)
		unlink(t->path);
	return err;
}

/* ===== create ===== */

struct node {
	char *path;
	uint64_t ino;		/* in the image */
	int parent;		/* index, -1: the root */
	const char *name;	/* within path */
	int link_of;		/* -1, or the node this one is a hard link of */
	struct stat st;
};

struct tree {
	struct node *n;
	int count, cap;
};

static int add_node(struct tree *t, const char *path, int parent,
		    const struct stat *st)
{
	struct node *nd;
	int i;

	if (t->count == t->cap) {
		nd = realloc(t->n, (t->cap * 2 + 64) * sizeof(*nd));
		if (!nd) {
			fail("cannot add", path, ENOMEM);
			return -1;
		}
		t->n = nd;
		t->cap = t->cap * 2 + 64;
	}
	nd = &t->n[t->count];
	nd->path = strdup(path);
	if (!nd->path) {
		fail("cannot add", path, ENOMEM);
		return -1;
	}
	nd->name = strrchr(nd->path, '/') + 1;
	nd->parent = parent;
	nd->st = *st;
	nd->link_of = -1;
	for (i = 0; S_ISREG(st->st_mode) && st->st_nlink > 1 && i < t->count; i++)
		if (t->n[i].link_of < 0 && t->n[i].st.st_dev == st->st_dev &&
		    t->n[i].st.st_ino == st->st_ino)
			nd->link_of = i;
	return t->count++;
}

static int walk(struct tree *t, const char *dir, int parent)
{
	struct dirent **ents;
	char path[PATH_MAX];
	struct stat st;
	int i, n, idx, ret = 0;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0) {
		fail("cannot read directory", dir, errno);
		return -1;
	}
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;

		if (ret || !strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		ret = -1;
		if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
		    (int)sizeof(path)) {
			fail("cannot read", dir, ENAMETOOLONG);
			continue;
		}
		if (lstat(path, &st)) {
			fail("cannot stat", path, errno);
			continue;
		}
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "%s: %s: not a regular file or directory\n",
				prog, path);
			continue;
		}
		if (parent < 0 && (!strcmp(name, ".cmd") || !strcmp(name, ".log"))) {
			fprintf(stderr, "%s: %s: the name %s is reserved in the root\n",
				prog, path, name);
			continue;
		}
		idx = add_node(t, path, parent, &st);
		if (idx >= 0)
			ret = S_ISDIR(st.st_mode) ? walk(t, path, idx) : 0;
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return ret;
}

/* Would this block be stored as a full 4096 bytes (so aligned)? */
static bool stored_full(const char *data, size_t len, bool lz4)
{
	char out[BS];
	int n;

	if (len != BS)
		return false;
	if (!lz4)
		return true;
	n = LZ4_compress_default(data, out, len, len - 1);
	return n <= 0;
}

static int put_file_blocks(struct incfs_img_writer *w, const struct node *nd,
			   bool lz4, bool full)
{
	char buf[BS];
	uint64_t off, size = nd->st.st_size;
	struct stat st;
	uint32_t b;
	size_t len;
	int fd, err = 0;

	fd = open(nd->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail("cannot open", nd->path, errno);
	if (fstat(fd, &st) || (uint64_t)st.st_size != size) {
		fprintf(stderr, "%s: %s: changed while the image was made\n",
			prog, nd->path);
		close(fd);
		return 1;
	}
	for (b = 0, off = 0; !err && off < size; b++, off += BS) {
		ssize_t n;

		len = size - off < BS ? size - off : BS;
		n = pread(fd, buf, len, off);
		if (n != (ssize_t)len) {
			err = fail("cannot read", nd->path, n < 0 ? errno : EIO);
			break;
		}
		if (stored_full(buf, len, lz4) != full)
			continue;
		n = incfs_img_put_block(w, nd->ino, b, buf, len, lz4);
		if (n)
			err = fail("cannot store a block of", nd->path, -n);
	}
	close(fd);
	return err;
}

static int create_image(struct tree *t, const char *img, bool lz4)
{
	struct incfs_img_writer *w = incfs_img_create(img);
	int i, err = 0, pass;

	if (!w)
		return fail("cannot create", img, errno);
	for (i = 0; !err && i < t->count; i++) {
		struct node *nd = &t->n[i];

		if (nd->link_of >= 0) {
			nd->ino = t->n[nd->link_of].ino;
			continue;
		}
		nd->ino = incfs_img_new_file(w, nd->st.st_mode & (S_IFMT | 0777),
					     S_ISDIR(nd->st.st_mode) ? 0 :
					     nd->st.st_size);
		if (!nd->ino && errno == ENFILE) {
			fprintf(stderr, "%s: %s: too many files and directories (an image holds %d)\n",
				prog, nd->path, MAX_NODES);
			err = 1;
		} else if (!nd->ino) {
			err = fail("cannot add", nd->path, errno);
		}
	}
	for (i = 0; !err && i < t->count; i++) {
		struct node *nd = &t->n[i];
		uint64_t dir = nd->parent < 0 ? 2 : t->n[nd->parent].ino;
		int e = incfs_img_add_name(w, dir, nd->ino, nd->name);

		if (e)
			err = fail("cannot add a name for", nd->path, -e);
	}
	/* Full blocks first, aligned back to back; then the shorter ones. */
	for (pass = 1; pass >= 0; pass--)
		for (i = 0; !err && i < t->count; i++)
			if (S_ISREG(t->n[i].st.st_mode) && t->n[i].link_of < 0)
				err = put_file_blocks(w, &t->n[i], lz4, pass);
	i = incfs_img_finish(w);
	if (!err && i)
		err = fail("cannot write", img, -i);
	return err;
}

static int cmd_create(int argc, char **argv)
{
	struct tree t = { 0 };
	struct tmp_out out;
	struct stat st;
	struct args a;
	int i, err;

	err = parse("create", argc, argv, "--lz4 --force", 2, &a);
	if (err)
		return err;
	if (stat(a.pos[0], &st))
		return fail("cannot read", a.pos[0], errno);
	if (!S_ISDIR(st.st_mode))
		return fail("cannot read", a.pos[0], ENOTDIR);
	err = walk(&t, a.pos[0], -1) ? 1 : 0;
	if (!err)
		err = tmp_start(&out, a.pos[1], a.force);
	if (!err) {
		err = create_image(&t, out.path, a.lz4);
		if (tmp_end(&out, err ? EIO : 0) && !err)
			err = fail("cannot rename to", a.pos[1], errno);
	}
	for (i = 0; i < t.count; i++)
		free(t.n[i].path);
	free(t.n);
	return err;
}

/* ===== dump, fsck, gc ===== */

static int cmd_dump(int argc, char **argv)
{
	struct args a;
	int err;

	err = parse("dump", argc, argv, "", 1, &a);
	if (err)
		return err;
	err = incfs_img_dump(a.pos[0], stdout);
	if (fflush(stdout) && !err)
		err = -errno;
	return err ? fail("cannot dump", a.pos[0], -err) : 0;
}

static int cmd_fsck(int argc, char **argv)
{
	struct args a;
	int ret;

	ret = parse("fsck", argc, argv, "--repair", 1, &a);
	if (ret)
		return ret;
	ret = incfs_img_fsck(a.pos[0], a.repair, stdout);
	fflush(stdout);
	if (ret < 0) {
		fail(a.repair ? "cannot check or repair" : "cannot check",
		     a.pos[0], -ret);
		return 3;
	}
	if (a.repair && ret == INCFS_IMG_BROKEN)
		fprintf(stderr, "%s: %s is broken; not changed\n", prog,
			a.pos[0]);
	return ret;
}

static int cmd_gc(int argc, char **argv)
{
	struct tmp_out out;
	struct args a;
	int err;

	err = parse("gc", argc, argv, "--force", 2, &a);
	if (err)
		return err;
	err = tmp_start(&out, a.pos[1], a.force);
	if (err)
		return err;
	err = incfs_img_gc(a.pos[0], out.path);
	if (err == -EUCLEAN) {
		fprintf(stderr, "%s: %s is broken (see fsck); nothing written\n",
			prog, a.pos[0]);
		tmp_end(&out, EINVAL);
		return 1;
	}
	if (!err && tmp_end(&out, 0))
		return fail("cannot rename to", a.pos[1], errno);
	if (err) {
		tmp_end(&out, -err);
		return fail("cannot compact", a.pos[0], -err);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "create", cmd_create },
		{ "dump", cmd_dump },
		{ "fsck", cmd_fsck },
		{ "gc", cmd_gc },
	};
	size_t i;
	int j;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	for (j = 2; j < argc && strcmp(argv[j], "--"); j++) {
		if (!strcmp(argv[j], "-h") || !strcmp(argv[j], "--help")) {
			fputs(usage_text, stdout);
			return 0;
		}
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 2, argv + 2);
	return usage_error("unknown command '%s'", argv[1]);
}
