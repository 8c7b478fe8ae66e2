// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of incfs-loader's app description (incfs-loader/app.c): the
 * manifest's "d", "f", "l" and "hot" lines, every message a bad one gets
 * (with its line number), the limits, the resolution of parents and link
 * targets, and the --dir walk.  A kselftest-harness program; app.c is
 * compiled in, as the kernel's KUnit tests include the file they test.
 * Each case works in a fresh folder under $TMPDIR (or /tmp), removed when
 * the case passes, after a leak check under AddressSanitizer.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "tools_test.h"

#include "../incfs-loader/app.c"
#include "../incfs-loader/errors.c"

FIXTURE(manifest) {
	char dir[PATH_MAX];
	char path[PATH_MAX + 16];	/* the manifest */
	struct ld_app a;
};

FIXTURE_SETUP(manifest)
{
	const char *base = getenv("TMPDIR");

	snprintf(self->dir, sizeof(self->dir), "%s/test_loader_manifest.XXXXXX",
		 base && *base ? base : "/tmp");
	ASSERT_NE(NULL, mkdtemp(self->dir))
		TH_LOG("mkdtemp %s: %s", self->dir, strerror(errno));
	snprintf(self->path, sizeof(self->path), "%s/app.manifest", self->dir);
	memset(&self->a, 0, sizeof(self->a));
	ld_error_clear();
}

FIXTURE_TEARDOWN(manifest)
{
	app_free(&self->a);
	tools_test_cleanup(_metadata, self->dir);
}

static int write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	if (!fp)
		return -errno;
	fputs(text, fp);
	return fclose(fp) ? -errno : 0;
}

/* text as the manifest, parsed into a fresh app; 0 or -EX_*. */
static int parse(FIXTURE_DATA(manifest) *self, const char *text, bool hot_only)
{
	int ret = write_text(self->path, text);

	if (ret)
		return ret;
	app_free(&self->a);
	ld_error_clear();
	return app_parse_manifest(&self->a, self->path, hot_only);
}

/* The same, then parents and link targets resolved (app_finish()). */
static int parse_finish(FIXTURE_DATA(manifest) *self, const char *text)
{
	int ret = parse(self, text, false);

	return ret ? ret : app_finish(&self->a);
}

static const char *msg(void)
{
	const char *m = ld_error_message();

	return m ? m : "(no message)";
}

/* "<manifest>:<line>: <why>", the message of a bad line. */
static const char *at_line(FIXTURE_DATA(manifest) *self, int line, const char *why)
{
	static char buf[PATH_MAX + 256];

	snprintf(buf, sizeof(buf), "%s:%d: %s", self->path, line, why);
	return buf;
}

static const struct ld_entry *entry(const struct ld_app *a, const char *path)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->e[i].path, path))
			return &a->e[i];
	return NULL;
}

/* The README's example, every field of every entry. */
TEST_F(manifest, readme_example)
{
	const struct ld_entry *app, *str, *dflt;
	struct ld_app *a = &self->a;

	ASSERT_EQ(0, parse_finish(self,
				  "# an app\n"
				  "d bin 755\n"
				  "d res 755\n"
				  "f bin/app 755 812032 0\n"
				  "f res/strings 644 40960 812032\n"
				  "l res/strings res/strings.default\n"
				  "hot bin/app 0 64\n"
				  "hot res/strings 2 1\n")) TH_LOG("%s", msg());
	ASSERT_EQ(5, a->n);
	EXPECT_EQ(2, a->ndirs);
	EXPECT_EQ(2, a->nfiles);
	EXPECT_EQ(1, a->nlinks);
	EXPECT_FALSE(a->from_dir);
	EXPECT_EQ(812032 + 40960, a->blob_need);
	/* 812032 bytes are 198.25 blocks: 199, then 10. */
	EXPECT_EQ(199 + 10, a->total_blocks);

	EXPECT_EQ(LD_DIR, a->e[0].type);
	EXPECT_STREQ("bin", a->e[0].path);
	EXPECT_STREQ("bin", a->e[0].name);
	EXPECT_EQ(-1, a->e[0].parent);
	EXPECT_EQ(0755, a->e[0].mode);

	app = entry(a, "bin/app");
	ASSERT_NE(NULL, app);
	EXPECT_EQ(LD_FILE, app->type);
	EXPECT_STREQ("app", app->name);
	EXPECT_EQ(0, app->parent);
	EXPECT_EQ(0755, app->mode);
	EXPECT_EQ(812032, app->size);
	EXPECT_EQ(0, app->blob_off);
	EXPECT_EQ(199, app->nblocks);
	EXPECT_EQ(0, app->first);
	EXPECT_EQ(4096, ld_block_len(app, 197));
	EXPECT_EQ(812032 - 198 * 4096, ld_block_len(app, 198));
	EXPECT_EQ(0, ld_block_len(app, 199));

	str = entry(a, "res/strings");
	ASSERT_NE(NULL, str);
	EXPECT_EQ(1, str->parent);
	EXPECT_EQ(0644, str->mode);
	EXPECT_EQ(812032, str->blob_off);
	EXPECT_EQ(812032 + 3 * 4096, ld_blob_off(str, 3));
	EXPECT_EQ(10, str->nblocks);
	EXPECT_EQ(199, str->first);

	dflt = entry(a, "res/strings.default");
	ASSERT_NE(NULL, dflt);
	EXPECT_EQ(LD_LINK, dflt->type);
	EXPECT_STREQ("strings.default", dflt->name);
	EXPECT_EQ(1, dflt->parent);
	EXPECT_STREQ("res/strings", dflt->target);
	EXPECT_EQ(str - a->e, dflt->target_idx);
	/* A link is not found by path: it is a name of its target. */
	EXPECT_EQ(-1, app_find(a, "res/strings.default"));
	EXPECT_EQ(str - a->e, app_find(a, "res/strings"));

	ASSERT_EQ(2, a->nhot);
	EXPECT_EQ(app - a->e, a->hot[0].file);
	EXPECT_EQ(0, a->hot[0].first);
	EXPECT_EQ(64, a->hot[0].count);
	EXPECT_EQ(str - a->e, a->hot[1].file);
	EXPECT_EQ(2, a->hot[1].first);
	EXPECT_EQ(1, a->hot[1].count);
	EXPECT_EQ(NULL, ld_error_message());
}

/* Blanks are spaces, tabs, CRs; '#' lines and blank lines are skipped. */
TEST_F(manifest, blanks_comments_and_empty_lines)
{
	const struct ld_entry *f;

	ASSERT_EQ(0, parse_finish(self,
				  "\n"
				  "   \t \n"
				  "# d not-a-dir 755\n"
				  "\td\tdir\t700\t\r\n"
				  "  f  dir/file  0644  5000  10  \r\n"
				  "f dir/empty 0 0 0\n"
				  "hot\tdir/file 1 1"))	/* no final newline */
		TH_LOG("%s", msg());
	ASSERT_EQ(3, self->a.n);
	EXPECT_EQ(0700, self->a.e[0].mode);
	f = entry(&self->a, "dir/file");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0644, f->mode);
	EXPECT_EQ(5000, f->size);
	EXPECT_EQ(10, f->blob_off);
	EXPECT_EQ(2, f->nblocks);
	EXPECT_EQ(5000 - 4096, ld_block_len(f, 1));
	f = entry(&self->a, "dir/empty");
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, f->nblocks);
	EXPECT_EQ(0, f->mode);
	EXPECT_EQ(5010, self->a.blob_need);
	EXPECT_EQ(2, self->a.total_blocks);
	EXPECT_EQ(1, self->a.nhot);
	EXPECT_EQ(NULL, entry(&self->a, "not-a-dir"));
}

struct bad_line {
	const char *text;
	int line;
	const char *why;
};

#define EXPECT_D	"expected: d <path> <octal-mode>"
#define EXPECT_F	"expected: f <path> <octal-mode> <size> <blob-offset>"
#define EXPECT_L	"expected: l <existing-path> <new-path>"
#define EXPECT_HOT	"expected: hot <path> <first-block> <count>"
#define BAD_PATH	"bad or duplicate path"
#define NOT_A_FILE	"hot: not a file declared above"

static const struct bad_line bad_lines[] = {
	{ "x a 1\n", 1, "unknown line type (d, f, l, hot)" },
	{ "D a 755\n", 1, "unknown line type (d, f, l, hot)" },
	{ "d a 755 1 2 3\n", 1, "too many fields" },
	{ "f a 644 1 0 0\n", 1, "too many fields" },
	/* Comments and blank lines count. */
	{ "# c\n\nd a 755\nd b\n", 4, EXPECT_D },
	/* The first bad line stops the parse. */
	{ "d a 755\nx\nd\n", 2, "unknown line type (d, f, l, hot)" },
	{ "d a\n", 1, EXPECT_D },
	{ "d a 755 1\n", 1, EXPECT_D },
	{ "d a 758\n", 1, EXPECT_D },
	{ "d a 10000\n", 1, EXPECT_D },
	{ "d a -1\n", 1, EXPECT_D },
	{ "d a 7x\n", 1, EXPECT_D },
	{ "d a 0x7\n", 1, EXPECT_D },
	{ "f a 644 1\n", 1, EXPECT_F },
	{ "f a 648 1 0\n", 1, EXPECT_F },
	{ "f a 10000 1 0\n", 1, EXPECT_F },
	{ "f a 644 x 0\n", 1, EXPECT_F },
	{ "f a 644 -1 0\n", 1, EXPECT_F },
	{ "f a 644 1 -1\n", 1, EXPECT_F },
	{ "f a 644 1 0x10\n", 1, EXPECT_F },
	{ "f a 644 18446744073709551616 0\n", 1, EXPECT_F },
	{ "f a 644 1 18446744073709551616\n", 1, EXPECT_F },
	{ "f a 644 68719476737 0\n", 1, "file too large (64 GiB at most)" },
	{ "f a 644 1 18446744073709551615\n", 1, "file too large (64 GiB at most)" },
	{ "l a\n", 1, EXPECT_L },
	{ "l a b c\n", 1, EXPECT_L },
	{ "d a 755\nd a 755\n", 2, BAD_PATH },
	{ "d a 755\nf a 644 1 0\n", 2, BAD_PATH },
	{ "f a 644 1 0\nl a a\n", 2, BAD_PATH },
	{ "f a 644 1 0\nl a b\nd b 755\n", 3, BAD_PATH },
	{ "f a 644 1 0\nl a /b\n", 2, BAD_PATH },
	{ "d /a 755\n", 1, BAD_PATH },
	{ "d a/ 755\n", 1, BAD_PATH },
	{ "d a//b 755\n", 1, BAD_PATH },
	{ "d . 755\n", 1, BAD_PATH },
	{ "d .. 755\n", 1, BAD_PATH },
	{ "d a/./b 755\n", 1, BAD_PATH },
	{ "d a/.. 755\n", 1, BAD_PATH },
	{ "f / 644 1 0\n", 1, BAD_PATH },
	{ "hot a 0\n", 1, EXPECT_HOT },
	{ "hot a 0 1 2\n", 1, EXPECT_HOT },
	{ "f a 644 1 0\nhot a x 1\n", 2, EXPECT_HOT },
	{ "f a 644 1 0\nhot a 0 -1\n", 2, EXPECT_HOT },
	{ "f a 644 1 0\nhot a 4294967296 1\n", 2, EXPECT_HOT },
	{ "f a 644 1 0\nhot a 0 4294967296\n", 2, EXPECT_HOT },
	{ "hot a 0 1\nf a 644 1 0\n", 1, NOT_A_FILE },
	{ "d a 755\nhot a 0 1\n", 2, NOT_A_FILE },
	{ "f a 644 1 0\nl a b\nhot b 0 1\n", 3, NOT_A_FILE },
};

TEST_F(manifest, every_bad_line_is_refused_with_its_number)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_lines); i++) {
		const struct bad_line *c = &bad_lines[i];

		EXPECT_EQ(-EX_USAGE, parse(self, c->text, false))
			TH_LOG("manifest \"%s\"", c->text);
		EXPECT_STREQ(at_line(self, c->line, c->why), msg())
			TH_LOG("manifest \"%s\"", c->text);
	}
}

/* With --dir, a manifest (--hot) may only have hot lines. */
TEST_F(manifest, hot_file_allows_only_hot_lines)
{
	ASSERT_EQ(0, parse(self, "f a 644 8192 0\n", false));
	ASSERT_EQ(0, write_text(self->path, "hot a 1 1\n# c\nd b 755\n"));
	EXPECT_EQ(-EX_USAGE, app_parse_manifest(&self->a, self->path, true));
	EXPECT_STREQ(at_line(self, 3, "only hot lines are allowed with --dir"), msg());
	EXPECT_EQ(1, self->a.nhot);
	EXPECT_EQ(1, self->a.n);
}

TEST_F(manifest, limits)
{
	char name[256], *text, *p;
	size_t size = 20000;

	/* Mode, size, block numbers: the largest allowed. */
	ASSERT_EQ(0, parse(self, "d a 7777\n"
			   "f a/b 7777 68719476736 18446744004990074879\n"
			   "hot a/b 4294967295 4294967295\n", false)) TH_LOG("%s", msg());
	EXPECT_EQ(07777, self->a.e[0].mode);
	EXPECT_EQ(68719476736ULL, self->a.e[1].size);
	EXPECT_EQ(UINT64_MAX, self->a.blob_need);
	EXPECT_EQ(UINT32_MAX, self->a.hot[0].first);
	EXPECT_EQ(UINT32_MAX, self->a.hot[0].count);
	ASSERT_EQ(0, app_finish(&self->a));
	EXPECT_EQ(16ULL << 20, self->a.e[1].nblocks);

	/* A name of 255 bytes, not 256. */
	memset(name, 'n', 255);
	name[255] = '\0';
	text = malloc(size);
	ASSERT_NE(NULL, text);
	snprintf(text, size, "d %s 755\n", name);
	EXPECT_EQ(0, parse(self, text, false)) TH_LOG("%s", msg());
	snprintf(text, size, "d %sn 755\n", name);
	EXPECT_EQ(-EX_USAGE, parse(self, text, false));
	EXPECT_STREQ(at_line(self, 1, BAD_PATH), msg());

	/* A path of 4095 bytes, not 4096: 17 names of 240 bytes (one 239). */
	memset(name, 'n', 240);
	name[240] = '\0';
	p = text + sprintf(text, "d ");
	for (int i = 0; i < 17; i++)
		p += sprintf(p, "%s%s", i ? "/" : "", name);
	EXPECT_EQ(2 + 4096, p - text);
	strcpy(p, " 755\n");
	EXPECT_EQ(-EX_USAGE, parse(self, text, false));
	EXPECT_STREQ(at_line(self, 1, BAD_PATH), msg());
	strcpy(p - 1, " 755\n");
	EXPECT_EQ(0, parse(self, text, false)) TH_LOG("%s", msg());
	EXPECT_EQ(4095, strlen(self->a.e[0].path));
	free(text);
}

/* incfs holds 999 inodes besides the root; links are not inodes. */
TEST_F(manifest, at_most_999_files_and_directories)
{
	size_t size = 1000 * 32;
	char *text = malloc(size), *p = text;

	ASSERT_NE(NULL, text);
	p += sprintf(p, "d d 755\n");
	for (int i = 0; i < 998; i++)
		p += sprintf(p, i % 2 ? "f d/%d 644 1 0\n" : "d d/%d 755\n", i);
	p += sprintf(p, "l d/1 d/link\n");
	ASSERT_EQ(0, parse_finish(self, text)) TH_LOG("%s", msg());
	EXPECT_EQ(1000, self->a.n);
	sprintf(p, "f d/one-more 644 1 0\n");
	EXPECT_EQ(0, parse(self, text, false)) TH_LOG("%s", msg());
	EXPECT_EQ(-EX_USAGE, app_finish(&self->a));
	EXPECT_STREQ("1000 files and directories: incfs holds at most 999", msg());
	free(text);
}

struct bad_app {
	const char *text;
	const char *msg;
};

static const struct bad_app bad_apps[] = {
	{ "f a/x 644 1 0\n", "a/x: its directory is not declared before it" },
	{ "d a/b 755\nd a 755\n", "a/b: its directory is not declared before it" },
	{ "f a 644 1 0\nf a/x 644 1 0\n", "a/x: its directory is not declared before it" },
	{ "d a 755\nf a/b/c 644 1 0\n", "a/b/c: its directory is not declared before it" },
	{ "f a 644 1 0\nl a b/c\n", "b/c: its directory is not declared before it" },
	{ "l a b\nf a 644 1 0\n", "link b: a is not a file declared before it" },
	{ "d a 755\nl a b\n", "link b: a is not a file declared before it" },
	{ "f a 644 1 0\nl a b\nl b c\n", "link c: b is not a file declared before it" },
	{ "l x y\n", "link y: x is not a file declared before it" },
};

TEST_F(manifest, undeclared_directories_and_link_targets)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_apps); i++) {
		EXPECT_EQ(-EX_USAGE, parse_finish(self, bad_apps[i].text))
			TH_LOG("manifest \"%s\"", bad_apps[i].text);
		EXPECT_STREQ(bad_apps[i].msg, msg())
			TH_LOG("manifest \"%s\"", bad_apps[i].text);
	}
}

/* A missing manifest is a missing source (2); any other failure is usage (1). */
TEST_F(manifest, cannot_open)
{
	char path[PATH_MAX + 32], want[PATH_MAX + 128];

	snprintf(path, sizeof(path), "%s/missing", self->dir);
	EXPECT_EQ(-EX_SOURCE, app_parse_manifest(&self->a, path, false));
	snprintf(want, sizeof(want), "cannot open %s: %s", path, strerror(ENOENT));
	EXPECT_STREQ(want, msg());

	ld_error_clear();
	ASSERT_EQ(0, write_text(self->path, "d a 755\n"));
	snprintf(path, sizeof(path), "%s/x", self->path);
	EXPECT_EQ(-EX_USAGE, app_parse_manifest(&self->a, path, false));
	snprintf(want, sizeof(want), "cannot open %s: %s", path, strerror(ENOTDIR));
	EXPECT_STREQ(want, msg());

	/* A directory opens, then cannot be read. */
	ld_error_clear();
	EXPECT_EQ(-EX_USAGE, app_parse_manifest(&self->a, self->dir, false));
	snprintf(want, sizeof(want), "cannot read %s: %s", self->dir, strerror(EISDIR));
	EXPECT_STREQ(want, msg());
	EXPECT_EQ(0, self->a.n);
}

/* The message main() prints is the first failure's. */
TEST_F(manifest, first_error_is_the_one_reported)
{
	EXPECT_EQ(-EX_USAGE, parse(self, "d a 755\nd a 755\n", false));
	EXPECT_EQ(-EX_INTERNAL, ld_error(EX_INTERNAL, "later: %d", 1));
	EXPECT_STREQ(at_line(self, 2, BAD_PATH), msg());
	ld_error_clear();
	EXPECT_EQ(NULL, ld_error_message());
	EXPECT_EQ(-EX_NAMES, ld_error(EX_NAMES, "now %s", "this"));
	EXPECT_STREQ("now this", msg());
}

static int mkfile(const char *dir, const char *name, size_t size)
{
	char path[PATH_MAX + 64];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "w");
	if (!fp)
		return -errno;
	for (size_t i = 0; i < size; i++)
		fputc('x', fp);
	return fclose(fp) ? -errno : 0;
}

/* app_from_dir(), its warnings to a file; the file's text in buf. */
static int walk_capturing(struct ld_app *a, const char *src, const char *file, char *buf,
			  size_t size)
{
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int saved = dup(2), ret;
	ssize_t n;

	if (fd < 0 || saved < 0)
		return -errno;
	fflush(stderr);
	dup2(fd, 2);
	ret = app_from_dir(a, src);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, size - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return ret;
}

/* --dir: sorted names, hard links as links, special files skipped. */
TEST_F(manifest, dir_walk)
{
	char src[PATH_MAX + 16], p1[PATH_MAX + 32], p2[PATH_MAX + 32];
	char err[PATH_MAX + 128], want[PATH_MAX + 128];
	struct ld_app *a = &self->a;

	snprintf(src, sizeof(src), "%s/src", self->dir);
	ASSERT_EQ(0, mkdir(src, 0755));
	snprintf(p1, sizeof(p1), "%s/sub", src);
	ASSERT_EQ(0, mkdir(p1, 0710));
	ASSERT_EQ(0, mkfile(src, "b", 5000));
	ASSERT_EQ(0, chmod(p1, 0710));
	ASSERT_EQ(0, mkfile(p1, "a", 1));
	snprintf(p1, sizeof(p1), "%s/b", src);
	snprintf(p2, sizeof(p2), "%s/sub/z", src);
	ASSERT_EQ(0, link(p1, p2));
	snprintf(p2, sizeof(p2), "%s/sym", src);
	ASSERT_EQ(0, symlink("b", p2));

	snprintf(p2, sizeof(p2), "%s/stderr", self->dir);
	ASSERT_EQ(0, walk_capturing(a, src, p2, err, sizeof(err))) TH_LOG("%s", msg());
	snprintf(want, sizeof(want), "incfs-loader: skipping %s/sym: incfs holds only files "
		 "and directories\n", src);
	EXPECT_STREQ(want, err);
	ASSERT_EQ(0, write_text(self->path, "hot b 1 1\nhot sub/a 0 1\n"));
	ASSERT_EQ(0, app_parse_manifest(a, self->path, true)) TH_LOG("%s", msg());
	ASSERT_EQ(0, app_finish(a)) TH_LOG("%s", msg());
	EXPECT_TRUE(a->from_dir);
	ASSERT_EQ(4, a->n);
	EXPECT_EQ(1, a->ndirs);
	EXPECT_EQ(2, a->nfiles);
	EXPECT_EQ(1, a->nlinks);
	EXPECT_EQ(0, a->blob_need);
	EXPECT_STREQ("b", a->e[0].path);
	EXPECT_EQ(LD_FILE, a->e[0].type);
	EXPECT_EQ(5000, a->e[0].size);
	EXPECT_STREQ(p1, a->e[0].src);
	EXPECT_STREQ("sub", a->e[1].path);
	EXPECT_EQ(LD_DIR, a->e[1].type);
	EXPECT_EQ(0710, a->e[1].mode);
	EXPECT_STREQ("sub/a", a->e[2].path);
	EXPECT_EQ(1, a->e[2].parent);
	EXPECT_STREQ("sub/z", a->e[3].path);
	EXPECT_EQ(LD_LINK, a->e[3].type);
	EXPECT_EQ(0, a->e[3].target_idx);
	EXPECT_EQ(3, a->total_blocks);
	ASSERT_EQ(2, a->nhot);
	EXPECT_EQ(2, a->hot[1].file);

	app_free(a);
	ld_error_clear();
	EXPECT_EQ(-EX_SOURCE, app_from_dir(a, p1));
	snprintf(p2, sizeof(p2), "%s is not a directory", p1);
	EXPECT_STREQ(p2, msg());
}

TEST_HARNESS_MAIN
