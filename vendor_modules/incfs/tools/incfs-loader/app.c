// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: what to load.  An app is a list of entries (directories,
 * files, extra names of files) in the order they are declared, plus a hot
 * list of block ranges to send first.  It comes from a manifest (whose
 * files' bytes are in a blob) or from a directory tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "app.h"
#include "errors.h"

#define LD_MAX_FILE	(64ULL << 30)

uint32_t ld_block_len(const struct ld_entry *f, uint32_t blk)
{
	uint64_t off = (uint64_t)blk * LD_BS;

	if (off >= f->size)
		return 0;
	return f->size - off < LD_BS ? f->size - off : LD_BS;
}

uint64_t ld_blob_off(const struct ld_entry *f, uint32_t blk)
{
	return f->blob_off + (uint64_t)blk * LD_BS;
}

int app_find(const struct ld_app *a, const char *path)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].type != LD_LINK && !strcmp(a->e[i].path, path))
			return i;
	return -1;
}

static int app_find_name(const struct ld_app *a, const char *path)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->e[i].path, path))
			return i;
	return -1;
}

/* A relative path of valid incfs names: no empty, ".", ".." components. */
static bool path_ok(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/' || strlen(p) >= 4096)
		return false;
	while (*c) {
		const char *end = strchrnul(c, '/');
		size_t len = end - c;

		if (!len || len > 255 || (len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = *end ? end + 1 : end;
		if (*end && !*c)
			return false;	/* trailing '/' */
	}
	return true;
}

static struct ld_entry *app_add(struct ld_app *a, enum ld_type type, const char *path)
{
	struct ld_entry *e;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct ld_entry *ne = realloc(a->e, cap * sizeof(*ne));

		if (!ne)
			return NULL;
		a->e = ne;
		a->cap = cap;
	}
	e = &a->e[a->n];
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->path = strdup(path);
	e->parent = -1;
	e->target_idx = -1;
	e->src_fd = -1;
	if (!e->path)
		return NULL;
	a->n++;
	return e;
}

static int app_add_hot(struct ld_app *a, int file, uint32_t first, uint32_t count)
{
	if (a->nhot == a->hotcap) {
		size_t cap = a->hotcap ? a->hotcap * 2 : 32;
		struct ld_hot *nh = realloc(a->hot, cap * sizeof(*nh));

		if (!nh)
			return ld_error(EX_INTERNAL, "out of memory");
		a->hot = nh;
		a->hotcap = cap;
	}
	a->hot[a->nhot++] = (struct ld_hot){ file, first, count };
	return 0;
}

/* One manifest line, split into at most 6 fields; returns their number. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	char *save, *t;

	for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return max + 1;
		f[n++] = t;
	}
	return n;
}

static bool num(const char *s, int base, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, base);
	return !errno && end != s && !*end && *s != '-';
}

static int bad_line(const char *path, int lineno, const char *why)
{
	return ld_error(EX_USAGE, "%s:%d: %s", path, lineno, why);
}

static int parse_line(struct ld_app *a, char **f, int n, bool hot_only, const char *mpath,
		      int lineno)
{
	uint64_t mode, size, off, first, count;
	struct ld_entry *e;
	int i;

	if (!strcmp(f[0], "hot")) {
		if (n != 4 || !num(f[2], 10, &first) || !num(f[3], 10, &count) ||
		    first > UINT32_MAX || count > UINT32_MAX)
			return bad_line(mpath, lineno,
					"expected: hot <path> <first-block> <count>");
		i = app_find(a, f[1]);
		if (i < 0 || a->e[i].type != LD_FILE)
			return bad_line(mpath, lineno, "hot: not a file declared above");
		return app_add_hot(a, i, first, count);
	}
	if (hot_only)
		return bad_line(mpath, lineno, "only hot lines are allowed with --dir");
	if (!strcmp(f[0], "d")) {
		if (n != 3 || !num(f[2], 8, &mode) || mode > 07777)
			return bad_line(mpath, lineno, "expected: d <path> <octal-mode>");
	} else if (!strcmp(f[0], "f")) {
		if (n != 5 || !num(f[2], 8, &mode) || mode > 07777 || !num(f[3], 10, &size) ||
		    !num(f[4], 10, &off))
			return bad_line(mpath, lineno,
					"expected: f <path> <octal-mode> <size> <blob-offset>");
		if (size > LD_MAX_FILE || off + size < off)
			return bad_line(mpath, lineno, "file too large (64 GiB at most)");
	} else if (!strcmp(f[0], "l")) {
		if (n != 3)
			return bad_line(mpath, lineno, "expected: l <existing-path> <new-path>");
		if (!path_ok(f[2]) || app_find_name(a, f[2]) >= 0)
			return bad_line(mpath, lineno, "bad or duplicate path");
		e = app_add(a, LD_LINK, f[2]);
		if (e)
			e->target = strdup(f[1]);
		if (!e || !e->target)
			return ld_error(EX_INTERNAL, "out of memory");
		a->nlinks++;
		return 0;
	} else {
		return bad_line(mpath, lineno, "unknown line type (d, f, l, hot)");
	}
	if (!path_ok(f[1]) || app_find_name(a, f[1]) >= 0)
		return bad_line(mpath, lineno, "bad or duplicate path");
	e = app_add(a, f[0][0] == 'd' ? LD_DIR : LD_FILE, f[1]);
	if (!e)
		return ld_error(EX_INTERNAL, "out of memory");
	e->mode = mode;
	if (e->type == LD_FILE) {
		e->size = size;
		e->blob_off = off;
		if (off + size > a->blob_need)
			a->blob_need = off + size;
		a->nfiles++;
	} else {
		a->ndirs++;
	}
	return 0;
}

/* Lines "d", "f", "l", "hot" (README.md); '#' starts a comment line. */
int app_parse_manifest(struct ld_app *a, const char *path, bool hot_only)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL, *f[6];
	size_t cap = 0;
	int lineno = 0, ret = 0;

	if (!fp)
		return ld_error(errno == ENOENT ? EX_SOURCE : EX_USAGE, "cannot open %s: %s",
				path, strerror(errno));
	while (!ret && getline(&line, &cap, fp) > 0) {
		int n;

		lineno++;
		if (line[0] == '#')
			continue;
		n = split(line, f, 5);
		if (n == 0)
			continue;
		if (n > 5)
			ret = bad_line(path, lineno, "too many fields");
		else
			ret = parse_line(a, f, n, hot_only, path, lineno);
	}
	/* getline() ends at an error as at the end: a directory reads as empty. */
	if (!ret && ferror(fp))
		ret = ld_error(EX_USAGE, "cannot read %s: %s", path, strerror(errno));
	free(line);
	fclose(fp);
	return ret;
}

/* ===== --dir ===== */

struct seen_inode {
	dev_t dev;
	ino_t ino;
	int entry;
};

struct walk {
	struct ld_app *a;
	struct seen_inode *seen;
	size_t nseen, cap;
};

static int walk_file(struct walk *w, const char *src, const char *rel, const struct stat *st)
{
	struct ld_entry *e;

	if (st->st_nlink > 1) {
		for (size_t i = 0; i < w->nseen; i++) {
			if (w->seen[i].dev != st->st_dev || w->seen[i].ino != st->st_ino)
				continue;
			e = app_add(w->a, LD_LINK, rel);
			if (e)
				e->target = strdup(w->a->e[w->seen[i].entry].path);
			if (!e || !e->target)
				return ld_error(EX_INTERNAL, "out of memory");
			w->a->nlinks++;
			return 0;
		}
		if (w->nseen == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 32;
			struct seen_inode *ns = realloc(w->seen, cap * sizeof(*ns));

			if (!ns)
				return ld_error(EX_INTERNAL, "out of memory");
			w->seen = ns;
			w->cap = cap;
		}
		w->seen[w->nseen++] = (struct seen_inode){ st->st_dev, st->st_ino, w->a->n };
	}
	if ((uint64_t)st->st_size > LD_MAX_FILE)
		return ld_error(EX_SOURCE, "%s: larger than 64 GiB", src);
	e = app_add(w->a, LD_FILE, rel);
	if (e)
		e->src = strdup(src);
	if (!e || !e->src)
		return ld_error(EX_INTERNAL, "out of memory");
	e->mode = st->st_mode & 07777;
	e->size = st->st_size;
	w->a->nfiles++;
	return 0;
}

static int walk_dir(struct walk *w, const char *src, const char *rel)
{
	struct dirent **names;
	int n, ret = 0;

	n = scandir(src, &names, NULL, alphasort);
	if (n < 0)
		return ld_error(EX_SOURCE, "cannot read directory %s: %s", src, strerror(errno));
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		char *s = NULL, *r = NULL;
		struct stat st;

		if (ret || !strcmp(name, ".") || !strcmp(name, ".."))
			goto next;
		if (asprintf(&s, "%s/%s", src, name) < 0 ||
		    asprintf(&r, "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			ret = ld_error(EX_INTERNAL, "out of memory");
			goto next;
		}
		if (lstat(s, &st)) {
			ret = ld_error(EX_SOURCE, "cannot stat %s: %s", s, strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			struct ld_entry *e = app_add(w->a, LD_DIR, r);

			if (!e) {
				ret = ld_error(EX_INTERNAL, "out of memory");
			} else {
				e->mode = st.st_mode & 07777;
				w->a->ndirs++;
				ret = walk_dir(w, s, r);
			}
		} else if (S_ISREG(st.st_mode)) {
			ret = walk_file(w, s, r, &st);
		} else {
			fprintf(stderr, "incfs-loader: skipping %s: incfs holds only files and "
				"directories\n", s);
		}
next:
		free(s);
		free(r);
		free(names[i]);
	}
	free(names);
	return ret;
}

int app_from_dir(struct ld_app *a, const char *dir)
{
	struct walk w = { .a = a };
	struct stat st;
	int ret;

	if (stat(dir, &st))
		return ld_error(EX_SOURCE, "cannot open source directory %s: %s", dir,
				strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ld_error(EX_SOURCE, "%s is not a directory", dir);
	a->from_dir = true;
	ret = walk_dir(&w, dir, "");
	free(w.seen);
	return ret;
}

void app_free(struct ld_app *a)
{
	for (size_t i = 0; i < a->n; i++) {
		struct ld_entry *e = &a->e[i];

		free(e->path);
		free(e->src);
		free(e->target);
		if (e->src_fd >= 0)
			close(e->src_fd);
	}
	free(a->e);
	free(a->hot);
	*a = (struct ld_app){ };
}

/* Resolve parents and link targets, number the blocks. */
int app_finish(struct ld_app *a)
{
	uint64_t first = 0;

	if (a->ndirs + a->nfiles + 1 > INCFS_MAX_FILES)
		return ld_error(EX_USAGE, "%zu files and directories: incfs holds at most %d",
				a->ndirs + a->nfiles, INCFS_MAX_FILES - 1);
	for (size_t i = 0; i < a->n; i++) {
		struct ld_entry *e = &a->e[i];
		char *slash = strrchr(e->path, '/');

		e->name = slash ? slash + 1 : e->path;
		if (slash) {
			*slash = '\0';
			e->parent = app_find(a, e->path);
			*slash = '/';
			if (e->parent < 0 || e->parent >= (int)i || a->e[e->parent].type != LD_DIR)
				return ld_error(EX_USAGE,
						"%s: its directory is not declared before it",
						e->path);
		}
		if (e->type == LD_LINK) {
			e->target_idx = app_find(a, e->target);
			if (e->target_idx < 0 || e->target_idx >= (int)i ||
			    a->e[e->target_idx].type != LD_FILE)
				return ld_error(EX_USAGE,
						"link %s: %s is not a file declared before it",
						e->path, e->target);
		}
		if (e->type == LD_FILE) {
			e->nblocks = (e->size + LD_BS - 1) / LD_BS;
			e->first = first;
			first += e->nblocks;
		}
	}
	a->total_blocks = first;
	return 0;
}
