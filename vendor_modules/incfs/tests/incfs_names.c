// SPDX-License-Identifier: GPL-2.0
/*
 * incfs: directories of thousands of names.  Lookups go through a hash
 * of (directory, name) that grows with the names; readdir walks each
 * directory by cookie and resumes where it stopped.  Each case checks
 * every name (stat of each, a whole listing), after adds, removals and a
 * remount, and names shared by two directories stay apart.
 */
#include <sys/syscall.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TIMEOUT_MS	1000
#define NAMES		3000	/* 47 times the hash's first size */

/* A mount with a directory "d" whose names all link to one file. */
struct big_dir {
	struct incfs_mnt m;
	__u64 dir, file;
	bool present[NAMES];	/* name i is in "d" now */
};

FIXTURE(names) {
	struct big_dir b;
};

FIXTURE_SETUP(names)
{
	ASSERT_EQ(0, incfs_setup(&self->b.m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(self->b.m.cmd, INCFS_ROOT_INODE, "d", &self->b.dir))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make(self->b.m.cmd, INCFS_ROOT_INODE, "f", S_IFREG | 0555, 1,
				&self->b.file)) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(names)
{
	incfs_teardown(&self->b.m);
}

static const char *name_of(int i)
{
	static char buf[4][32];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, 32, "name-%05d.dat", i);
	return p;
}

static int add(struct big_dir *bd, int i)
{
	int ret = incfs_add_entry(bd->m.cmd, bd->dir, bd->file, name_of(i));

	if (!ret)
		bd->present[i] = true;
	return ret;
}

static int del(struct big_dir *bd, int i)
{
	int ret = incfs_remove_entry(bd->m.cmd, bd->dir, bd->file, name_of(i));

	if (!ret)
		bd->present[i] = false;
	return ret;
}

/* stat() of every name, in a scrambled order: present ones, and no others. */
static int check_lookups(struct big_dir *bd)
{
	for (int k = 0; k < NAMES; k++) {
		int i = (k * 1237) % NAMES;	/* 1237 and NAMES are coprime */
		const char *path = incfs_path(&bd->m, "d");
		char full[PATH_MAX];
		struct stat st;
		int err;

		snprintf(full, sizeof(full), "%s/%s", path, name_of(i));
		err = stat(full, &st) ? errno : 0;
		if (bd->present[i] && (err || st.st_ino != bd->file)) {
			incfs_fail("stat %s: %s, ino %llu", full, strerror(err),
				   (unsigned long long)st.st_ino);
			return -ENOENT;
		}
		if (!bd->present[i] && err != ENOENT) {
			incfs_fail("stat %s of a removed name: %s", full, strerror(err));
			return -EEXIST;
		}
	}
	return 0;
}

/*
 * A listing of "d" with getdents64() into a buffer of bufsize bytes: each
 * present name once, no other name; between two calls, @between(bd,
 * call) may change the directory.  Returns the number of names listed.
 */
static int list_dir(struct big_dir *bd, size_t bufsize,
		    void (*between)(struct big_dir *bd, int call),
		    bool *seen_once)
{
	char *buf = malloc(bufsize);
	int fd = open(incfs_path(&bd->m, "d"), O_RDONLY | O_DIRECTORY);
	int listed = 0, call = 0, ret = 0;

	memset(seen_once, 0, NAMES);
	if (!buf || fd < 0) {
		ret = -ENOMEM;
		goto out;
	}
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, bufsize);

		if (n < 0) {
			ret = -errno;
			incfs_fail("getdents64: %s", strerror(errno));
			break;
		}
		if (!n)
			break;
		for (long off = 0; off < n; ) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			int i;

			off += e->d_reclen;
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (sscanf(e->d_name, "name-%05d.dat", &i) != 1 || i < 0 ||
			    i >= NAMES || strcmp(e->d_name, name_of(i))) {
				incfs_fail("listed \"%s\", not a name of the test", e->d_name);
				ret = -EBADMSG;
				goto out;
			}
			if (seen_once[i]) {
				incfs_fail("\"%s\" listed twice", e->d_name);
				ret = -EEXIST;
				goto out;
			}
			seen_once[i] = true;
			listed++;
		}
		if (between)
			between(bd, call++);
	}
	ret = listed;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* A whole listing with no change during it: exactly the present names. */
static int check_listing(struct big_dir *bd)
{
	bool seen[NAMES];
	int n = list_dir(bd, 32768, NULL, seen);

	if (n < 0)
		return n;
	for (int i = 0; i < NAMES; i++)
		if (seen[i] != bd->present[i]) {
			incfs_fail("%s %s", name_of(i),
				   seen[i] ? "listed after its removal" : "not listed");
			return -EBADMSG;
		}
	return 0;
}

TEST_F_TIMEOUT(names, thousands_of_names_are_found_and_listed_once, 120)
{
	for (int i = 0; i < NAMES; i++)
		ASSERT_EQ(0, add(&self->b, i)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_lookups(&self->b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_listing(&self->b)) TH_LOG("%s", incfs_err);
	/* A name added twice is refused, found or not through a long chain. */
	EXPECT_EQ(-EEXIST, incfs_add_entry(self->b.m.cmd, self->b.dir, self->b.file, name_of(7)));
}

TEST_F_TIMEOUT(names, removed_names_are_gone_and_the_rest_stay, 120)
{
	for (int i = 0; i < NAMES; i++)
		ASSERT_EQ(0, add(&self->b, i)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < NAMES; i += 2)
		ASSERT_EQ(0, del(&self->b, i)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_lookups(&self->b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_listing(&self->b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENOENT, incfs_remove_entry(self->b.m.cmd, self->b.dir, self->b.file,
					      name_of(0)));
	/* Back again, as new names. */
	for (int i = 0; i < NAMES; i += 10)
		ASSERT_EQ(0, add(&self->b, i)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_lookups(&self->b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_listing(&self->b)) TH_LOG("%s", incfs_err);
}

TEST_F_TIMEOUT(names, the_same_names_in_two_directories_stay_apart, 120)
{
	__u64 other, file2;
	char path[PATH_MAX];
	struct stat st;

	ASSERT_EQ(0, incfs_make_dir(self->b.m.cmd, INCFS_ROOT_INODE, "e", &other));
	ASSERT_EQ(0, incfs_make(self->b.m.cmd, INCFS_ROOT_INODE, "g", S_IFREG | 0555, 2, &file2));
	for (int i = 0; i < 500; i++) {
		ASSERT_EQ(0, add(&self->b, i)) TH_LOG("%s", incfs_err);
		ASSERT_EQ(0, incfs_add_entry(self->b.m.cmd, other, file2, name_of(i)));
	}
	for (int i = 0; i < 500; i += 3)
		ASSERT_EQ(0, del(&self->b, i)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_lookups(&self->b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_listing(&self->b)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < 500; i++) {
		snprintf(path, sizeof(path), "%s/%s", incfs_path(&self->b.m, "e"), name_of(i));
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_EQ(file2, st.st_ino);
	}
}

/* Between getdents64() calls: remove names ahead and behind, add some. */
static void churn(struct big_dir *bd, int call)
{
	int ahead = NAMES - 1 - call * 7, behind = call * 3;

	if (ahead >= 0 && bd->present[ahead])
		del(bd, ahead);
	if (behind < NAMES && bd->present[behind])
		del(bd, behind);
}

TEST_F_TIMEOUT(names, readdir_resumes_across_changes, 120)
{
	bool seen[NAMES];
	int n;

	for (int i = 0; i < NAMES; i++)
		ASSERT_EQ(0, add(&self->b, i)) TH_LOG("%s", incfs_err);
	/* About 10 names per call: hundreds of calls, each one resumed. */
	n = list_dir(&self->b, 320, churn, seen);
	ASSERT_LT(0, n) TH_LOG("%s", incfs_err);
	for (int i = 0; i < NAMES; i++) {
		/* A name never removed is listed; a removed one may or may not be. */
		if (self->b.present[i])
			ASSERT_TRUE(seen[i]) TH_LOG("%s not listed", name_of(i));
	}
	EXPECT_LT(100, NAMES - n) TH_LOG("the churn removed too few names ahead");
	EXPECT_EQ(0, check_listing(&self->b)) TH_LOG("%s", incfs_err);
}

TEST_F_TIMEOUT(names, names_survive_a_remount, 180)
{
	for (int i = 0; i < NAMES; i++)
		ASSERT_EQ(0, add(&self->b, i)) TH_LOG("%s", incfs_err);
	for (int i = 1; i < NAMES; i += 4)
		ASSERT_EQ(0, del(&self->b, i)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_remount(&self->b.m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_lookups(&self->b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_listing(&self->b)) TH_LOG("%s", incfs_err);
}

TEST_HARNESS_MAIN
