// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader --learn-hot FILE --attach DIR: after an app's first launch
 * from DIR, read the mount's read log (.log) and write the blocks the app
 * read, in the order it first read them, as the hot lines of the next
 * install's manifest (README.md, "Learning a hot list").
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "learn.h"

/* ===== the runs: pure, tested on the host ===== */

/* An open-addressing set of (ino, block) keys; ino <= 2^32 - 1 fits. */
struct keyset {
	uint64_t *slot;		/* 0: empty (ino 0 is no file's) */
	size_t mask;
};

static uint64_t key_of(uint64_t ino, uint32_t block)
{
	return ino << 32 | block;
}

static size_t key_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

/* Add @k; false if it was there already. */
static bool keyset_add(struct keyset *s, uint64_t k)
{
	size_t i;

	for (i = key_hash(k) & s->mask; s->slot[i]; i = (i + 1) & s->mask)
		if (s->slot[i] == k)
			return false;
	s->slot[i] = k;
	return true;
}

long learn_runs(const struct incfs_read_log_record *recs, size_t n, struct ld_run **runs)
{
	struct keyset seen = { 0 };
	struct ld_run *r, *last = NULL;
	size_t cap = 16, nr = 0;

	while (cap < 2 * n)
		cap *= 2;
	seen.slot = calloc(cap, sizeof(*seen.slot));
	seen.mask = cap - 1;
	r = malloc((n ? n : 1) * sizeof(*r));
	if (!seen.slot || !r) {
		free(seen.slot);
		free(r);
		return ld_error(EX_INTERNAL, "out of memory for %zu read log records", n);
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t ino = recs[i].file_ino;
		uint32_t b = recs[i].block_index;

		if (!ino || ino > UINT32_MAX || !keyset_add(&seen, key_of(ino, b)))
			continue;
		if (last && last->ino == ino && (uint64_t)last->first + last->count == b) {
			last->count++;
			continue;
		}
		last = &r[nr++];
		*last = (struct ld_run){ ino, b, 1 };
	}
	free(seen.slot);
	*runs = r;
	return nr;
}

/* ===== the mount: its log and its names ===== */

/* Every record the log holds now; their number, *recs set, or -EX_*. */
static long read_log(const char *mnt, struct incfs_read_log_record **recs)
{
	struct incfs_read_log_state st;
	struct incfs_read_log_record *r = NULL;
	size_t n = 0, cap = 0;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mnt, INCFS_LOG_FILENAME);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return ld_error(EX_MOUNT, "cannot open %s (an incfs mount with a read log?): %s",
				path, strerror(errno));
	for (;;) {
		ssize_t got;

		if (n == cap) {
			void *nr = realloc(r, (cap = cap ? 2 * cap : 1024) * sizeof(*r));

			if (!nr) {
				close(fd);
				free(r);
				return ld_error(EX_INTERNAL, "out of memory reading %s", path);
			}
			r = nr;
		}
		got = read(fd, r + n, (cap - n) * sizeof(*r));
		/* Every record read; 0: and the mount was shut down. */
		if ((got < 0 && errno == EAGAIN) || got == 0)
			break;
		if (got < 0 || got % sizeof(*r)) {
			int err = got < 0 ? errno : EIO;

			close(fd);
			free(r);
			return ld_error(EX_MOUNT, "cannot read %s: %s", path, strerror(err));
		}
		n += got / sizeof(*r);
	}
	if (!ioctl(fd, INCFS_IOC_READ_LOG_STATE, &st) && st.lost)
		fprintf(stderr, "incfs-loader: warning: the read log lost its %llu oldest "
			"records; mount with a larger read_log_records\n",
			(unsigned long long)st.lost);
	close(fd);
	*recs = r;
	return n;
}

/* Inode number -> the smallest of its paths, for the regular files. */
struct names {
	struct { uint64_t ino; char *path; } *e;
	size_t n, cap;
	size_t root_len;
	bool failed;
};

static struct names *walk_names;

static int name_visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct names *nm = walk_names;
	const char *rel = path + nm->root_len;

	(void)ftw;
	while (*rel == '/')
		rel++;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return FTW_CONTINUE;
	for (size_t i = 0; i < nm->n; i++)
		if (nm->e[i].ino == (uint64_t)st->st_ino) {
			if (strcmp(rel, nm->e[i].path) < 0) {
				char *p = strdup(rel);

				if (!p)
					goto oom;
				free(nm->e[i].path);
				nm->e[i].path = p;
			}
			return FTW_CONTINUE;
		}
	if (nm->n == nm->cap) {
		void *ne = realloc(nm->e, (nm->cap = nm->cap ? 2 * nm->cap : 64) * sizeof(*nm->e));

		if (!ne)
			goto oom;
		nm->e = ne;
	}
	nm->e[nm->n].ino = st->st_ino;
	nm->e[nm->n].path = strdup(rel);
	if (!nm->e[nm->n].path)
		goto oom;
	nm->n++;
	return FTW_CONTINUE;
oom:
	nm->failed = true;
	return FTW_STOP;
}

static const char *name_of(const struct names *nm, uint64_t ino)
{
	for (size_t i = 0; i < nm->n; i++)
		if (nm->e[i].ino == ino)
			return nm->e[i].path;
	return NULL;
}

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->e[i].path);
	free(nm->e);
}

/* ===== the hot list ===== */

static int write_hot(const char *out, const struct ld_run *runs, long nr,
		     const struct names *nm)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", out);
	fd = mkstemp(tmp);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		if (fd >= 0)
			close(fd);
		return ld_error(EX_OUTPUT, "cannot write %s: %s", out, strerror(errno));
	}
	fprintf(f, "# learned from the read log by incfs-loader --learn-hot\n");
	for (long i = 0; i < nr; i++) {
		const char *path = name_of(nm, runs[i].ino);

		/* A file no longer named, or a name a manifest cannot hold. */
		if (!path || strpbrk(path, " \t\n"))
			continue;
		fprintf(f, "hot %s %u %u\n", path, runs[i].first, runs[i].count);
	}
	if (fflush(f) || fsync(fileno(f)) || fclose(f)) {
		int err = errno;

		unlink(tmp);
		return ld_error(EX_OUTPUT, "cannot write %s: %s", out, strerror(err));
	}
	if (rename(tmp, out)) {
		int err = errno;

		unlink(tmp);
		return ld_error(EX_OUTPUT, "cannot write %s: %s", out, strerror(err));
	}
	return 0;
}

int learn_hot(const char *mnt, const char *out)
{
	struct incfs_read_log_record *recs = NULL;
	struct names nm = { .root_len = strlen(mnt) };
	struct ld_run *runs = NULL;
	long n, nr;
	int ret;

	n = read_log(mnt, &recs);
	if (n < 0)
		return n;
	nr = learn_runs(recs, n, &runs);
	free(recs);
	if (nr < 0)
		return nr;
	walk_names = &nm;
	ret = nftw(mnt, name_visit, 16, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL);
	walk_names = NULL;
	if (nm.failed)
		ret = ld_error(EX_INTERNAL, "out of memory walking %s", mnt);
	else if (ret)
		ret = ld_error(EX_MOUNT, "cannot walk %s: %s", mnt, strerror(errno));
	else
		ret = write_hot(out, runs, nr, &nm);
	names_free(&nm);
	free(runs);
	return ret;
}
