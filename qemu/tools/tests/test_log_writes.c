// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of liblog-writes (../lib/log_writes.c) and of the replay-log
 * CLI: a kselftest-harness program (KTAP on stdout, one result per case).
 *
 * Each case writes synthetic dm-log-writes logs (a super block, then each
 * entry's sector and its data, as drivers/md/dm-log-writes.c lays them
 * out) in a fresh folder under $TMPDIR (or /tmp), removed when the case
 * passes.  What a replay must leave on the target is worked out here
 * again, sector by sector, from the entries the test wrote: a deliberate
 * oracle, not the library's own code.  The cli.* cases run the replay-log
 * named by the environment variable REPLAY_LOG; unset, they are skipped.
 * Built with -fsanitize=address,undefined, a passing case is also checked
 * for leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "log_writes.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#define BASE_FILL	0xee	/* every byte of the base image */
#define DEV_SECTORS	32	/* of the target, in log sectors */

/* An entry to write: where (in log sectors), how much, flags, a mark. */
struct ent {
	uint64_t sector, nr;
	uint32_t flags;
	const char *mark;
};

/*
 * The log most cases use; its flush boundaries are 0, 2, 7, 8 (entry 7
 * is a flush with FUA data) and 10.
 */
static const struct ent std_log[] = {
	{ 0, 2, 0 },			/* 0 */
	{ 4, 1, LW_METADATA },		/* 1 */
	{ 0, 0, LW_FLUSH },		/* 2 */
	{ 0, 0, LW_MARK, "mkfs" },	/* 3 */
	{ 8, 3, 0 },			/* 4: odd, torn 1 + 2 */
	{ 2, 2, LW_DISCARD },		/* 5 */
	{ 12, 2, 0 },			/* 6 */
	{ 16, 4, LW_FLUSH | LW_FUA },	/* 7 */
	{ 20, 1, 0 },			/* 8 */
	{ 0, 0, LW_MARK, "dm-log-writes-end" },	/* 9 */
};

#define STD_N	ARRAY_SIZE(std_log)

/* The byte every byte of sector j of entry i's data holds. */
static uint8_t pattern(size_t i, uint64_t j)
{
	return 1 + (i * 31 + j * 7) % 200;
}

static bool has_data(const struct ent *e)
{
	return !(e->flags & (LW_MARK | LW_DISCARD)) && e->nr;
}

/* The test's scratch folder. */
static char tmpdir[PATH_MAX];

static const char *tpath(const char *name)
{
	static char buf[16][PATH_MAX];
	static int i;

	i = (i + 1) % 16;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static int put(int fd, const void *buf, size_t len, uint64_t off)
{
	return pwrite(fd, buf, len, off) == (ssize_t)len ? 0 : -1;
}

static void put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

/* A log of n entries, sector size ss, as the kernel writes one. */
static int write_log(const char *path, uint32_t ss, const struct ent *e,
		     size_t n)
{
	uint8_t *sec = calloc(1, ss);
	uint64_t off = ss, j;
	size_t i, len;
	int fd, ret = -1;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || !sec)
		goto out;
	put_le64(sec, LW_MAGIC);
	put_le64(sec + 8, LW_VERSION);
	put_le64(sec + 16, n);
	sec[24] = ss;
	sec[25] = ss >> 8;
	sec[26] = ss >> 16;
	if (put(fd, sec, ss, 0))
		goto out;
	for (i = 0; i < n; i++, off += ss) {
		len = e[i].mark ? strlen(e[i].mark) : 0;
		memset(sec, 0, ss);
		put_le64(sec, e[i].sector);
		put_le64(sec + 8, e[i].nr);
		put_le64(sec + 16, e[i].flags);
		put_le64(sec + 24, len);
		memcpy(sec + 32, e[i].mark ? e[i].mark : "", len);
		if (put(fd, sec, ss, off))
			goto out;
		for (j = 0; has_data(&e[i]) && j < e[i].nr; j++) {
			memset(sec, pattern(i, j), ss);
			off += ss;
			if (put(fd, sec, ss, off))
				goto out;
		}
	}
	ret = 0;
out:
	if (fd >= 0 && close(fd))
		ret = -1;
	free(sec);
	return ret;
}

/* A file of size bytes, each byte c. */
static int write_fill(const char *path, size_t size, int c)
{
	char *buf = malloc(size);
	int fd, ret = -1;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0 && buf) {
		memset(buf, c, size);
		ret = put(fd, buf, size, 0);
	}
	if (fd >= 0 && close(fd))
		ret = -1;
	free(buf);
	return ret;
}

/*
 * The oracle: sectors [first, first + count) of entry i onto img, which
 * holds the device in sectors of ss bytes.
 */
static void oracle_apply(uint8_t *img, uint32_t ss, const struct ent *e,
			 size_t i, uint64_t first, uint64_t count)
{
	uint64_t j;

	for (j = first; j < first + count; j++) {
		if (e[i].flags & LW_MARK)
			continue;
		memset(img + (e[i].sector + j) * ss,
		       e[i].flags & LW_DISCARD ? 0 : pattern(i, j), ss);
	}
}

/* What the point pt leaves on a base-filled device. */
static uint8_t *oracle(uint32_t ss, const struct ent *e,
		       const struct lw_point *pt)
{
	uint8_t *img = malloc(DEV_SECTORS * ss);
	uint64_t nr, split;
	size_t i;

	memset(img, BASE_FILL, DEV_SECTORS * ss);
	for (i = 0; i < pt->prefix; i++)
		oracle_apply(img, ss, e, i, 0, e[i].nr);
	for (i = 0; i < pt->nr_picks; i++) {
		nr = e[pt->picks[i].index].nr;
		/* "@K" splits at K, no "@" in the middle. */
		split = pt->picks[i].at ? pt->picks[i].at : nr / 2;
		if (pt->picks[i].part == LW_WHOLE)
			oracle_apply(img, ss, e, pt->picks[i].index, 0, nr);
		else if (pt->picks[i].part == LW_FIRST)
			oracle_apply(img, ss, e, pt->picks[i].index, 0, split);
		else
			oracle_apply(img, ss, e, pt->picks[i].index, split,
				     nr - split);
	}
	return img;
}

/* The first byte where the file at path differs from want[size], or -1. */
static long differs(const char *path, const uint8_t *want, size_t size)
{
	uint8_t *got = calloc(1, size + 1);
	ssize_t n = -1;
	long at = -1;
	size_t i;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = pread(fd, got, size + 1, 0);
		close(fd);
	}
	if (n != (ssize_t)size)
		at = n < 0 ? 0 : n;
	for (i = 0; at < 0 && i < size; i++)
		if (got[i] != want[i])
			at = i;
	free(got);
	return at;
}

/* A case's state: its folder, the std_log in it, opened. */
FIXTURE(lw) {
	char dir[PATH_MAX];
	struct lw_log log;
	int fd;		/* the log */
	uint32_t ss;
	const struct ent *e;
};

static void open_log(struct __test_metadata *_metadata,
		     FIXTURE_DATA(lw) *self, uint32_t ss, const struct ent *e,
		     size_t n)
{
	if (self->fd >= 0) {
		lw_log_free(&self->log);
		close(self->fd);
	}
	ASSERT_EQ(0, write_log(tpath("log"), ss, e, n));
	self->fd = open(tpath("log"), O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, lw_log_open(&self->log, self->fd))
		TH_LOG("%s", self->log.err);
	self->ss = ss;
	self->e = e;
}

FIXTURE_SETUP(lw)
{
	const char *base = getenv("TMPDIR");

	self->fd = -1;
	snprintf(self->dir, sizeof(self->dir), "%s/test_log_writes.XXXXXX",
		 base && *base ? base : "/tmp");
	ASSERT_NE(NULL, mkdtemp(self->dir))
		TH_LOG("mkdtemp %s: %s", self->dir, strerror(errno));
	snprintf(tmpdir, sizeof(tmpdir), "%s", self->dir);
	open_log(_metadata, self, 512, std_log, STD_N);
}

/* A passing case: no leak (under ASan), and its folder removed. */
FIXTURE_TEARDOWN(lw)
{
	char cmd[PATH_MAX + 16];

	if (self->fd >= 0) {
		lw_log_free(&self->log);
		close(self->fd);
	}
	if (_metadata->exit_code != KSFT_PASS)
		return;
#ifdef HAVE_LSAN
	EXPECT_EQ(0, __lsan_do_recoverable_leak_check())
		TH_LOG("memory leaked (LeakSanitizer's report above)");
#endif
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	EXPECT_EQ(0, system(cmd));
}

/* The text a library call printed, through a memory stream. */
#define PRINTED(call, out) do {						\
	size_t __len;							\
	FILE *__f = open_memstream(&(out), &__len);			\
	ASSERT_NE(NULL, __f);						\
	EXPECT_EQ(0, call(&self->log, __f));				\
	ASSERT_EQ(0, fclose(__f));					\
} while (0)

static int print_all_points(struct lw_log *log, FILE *f)
{
	struct lw_points pts;
	int ret = lw_points(log, 1, 4, &pts);

	if (!ret)
		ret = lw_print_points(log, &pts, f);
	lw_points_free(&pts);
	return ret;
}

/*
 * Replay spec onto a target that held other bytes: the base copied over
 * it, then the point; the target must be what the oracle says.
 */
static void replay_spec(struct __test_metadata *_metadata,
			FIXTURE_DATA(lw) *self, const char *spec)
{
	size_t size = DEV_SECTORS * self->ss;
	struct lw_point pt;
	int base, dev;
	uint8_t *want;
	long at;

	ASSERT_EQ(0, write_fill(tpath("base"), size, BASE_FILL));
	ASSERT_EQ(0, write_fill(tpath("dev"), 2 * size, 0x5a));
	ASSERT_EQ(0, lw_point_parse(&self->log, spec, &pt))
		TH_LOG("%s", self->log.err);
	base = open(tpath("base"), O_RDONLY);
	dev = open(tpath("dev"), O_WRONLY);
	ASSERT_LE(0, base);
	ASSERT_LE(0, dev);
	EXPECT_EQ(0, lw_copy_base(&self->log, base, dev))
		TH_LOG("%s", self->log.err);
	EXPECT_EQ(0, lw_replay(&self->log, &pt, dev))
		TH_LOG("%s: %s", spec, self->log.err);
	close(base);
	close(dev);
	want = oracle(self->ss, self->e, &pt);
	at = differs(tpath("dev"), want, size);
	EXPECT_EQ(-1, at)
		TH_LOG("%s: the target differs at byte %ld (sector %ld)",
		       spec, at, at / (long)self->ss);
	free(want);
	lw_point_free(&pt);
}

/* The byte at off of the file at path. */
static int byte_at(const char *path, uint64_t off)
{
	uint8_t c;
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : pread(fd, &c, 1, off);

	if (fd >= 0)
		close(fd);
	return n == 1 ? c : -1;
}

TEST_F(lw, super_block_and_entries_are_indexed)
{
	const struct lw_entry *en = self->log.entries;
	static const uint64_t bounds[] = { 0, 2, 7, 8, 10 };
	size_t i;

	ASSERT_EQ(STD_N, self->log.nr_entries);
	EXPECT_EQ(512, self->log.sectorsize);
	for (i = 0; i < STD_N; i++) {
		EXPECT_EQ(std_log[i].sector, en[i].sector);
		EXPECT_EQ(std_log[i].nr, en[i].nr_sectors);
		EXPECT_EQ(std_log[i].flags, en[i].flags);
		EXPECT_EQ(!std_log[i].mark, !en[i].mark);
		if (std_log[i].mark && en[i].mark)
			EXPECT_STREQ(std_log[i].mark, en[i].mark);
	}
	/* Header sectors, each after the last's data; a discard has none. */
	EXPECT_EQ(512, en[0].pos);
	EXPECT_EQ(512 * 4, en[1].pos);
	EXPECT_EQ(512 * 6, en[2].pos);
	EXPECT_EQ(512 * 7, en[3].pos);
	EXPECT_EQ(512 * 8, en[4].pos);
	EXPECT_EQ(512 * 12, en[5].pos);
	EXPECT_EQ(512 * 13, en[6].pos);
	ASSERT_EQ(ARRAY_SIZE(bounds), self->log.nr_bounds);
	for (i = 0; i < self->log.nr_bounds; i++)
		EXPECT_EQ(bounds[i], self->log.bounds[i]);
	EXPECT_EQ(7, lw_next_bound(&self->log, 2));
	EXPECT_EQ(7, lw_next_bound(&self->log, 5));
	EXPECT_EQ(8, lw_next_bound(&self->log, 7));
	EXPECT_EQ(10, lw_next_bound(&self->log, 10));
}

TEST_F(lw, list_prints_every_entry)
{
	char *out = NULL;

	PRINTED(lw_print_list, out);
	EXPECT_STREQ("0 0 2 - -\n"
		     "1 4 1 metadata -\n"
		     "2 0 0 flush -\n"
		     "3 0 0 mark mkfs\n"
		     "4 8 3 - -\n"
		     "5 2 2 discard -\n"
		     "6 12 2 - -\n"
		     "7 16 4 flush|fua -\n"
		     "8 20 1 - -\n"
		     "9 0 0 mark dm-log-writes-end\n", out);
	free(out);
}

/* With 4096-byte log sectors, entry sectors count 4096 bytes. */
TEST_F(lw, sectors_are_log_sectors)
{
	static const struct ent big[] = {
		{ 1, 3, LW_FUA | LW_METADATA },
		{ 0, 0, LW_MARK, "a b\\" },
		{ 5, 2, LW_DISCARD },
		{ 0, 0, LW_FLUSH },
	};
	char *out = NULL;

	open_log(_metadata, self, 4096, big, 4);
	EXPECT_EQ(4096, self->log.entries[0].pos);
	EXPECT_EQ(4096 * 5, self->log.entries[1].pos);
	EXPECT_EQ(4096 * 6, self->log.entries[2].pos);
	EXPECT_EQ(4096 * 7, self->log.entries[3].pos);
	PRINTED(lw_print_list, out);
	EXPECT_STREQ("0 8 24 fua|metadata -\n"
		     "1 0 0 mark a\\x20b\\x5c\n"
		     "2 40 16 discard -\n"
		     "3 0 0 flush -\n", out);
	free(out);
	replay_spec(_metadata, self, "4");
	/* Entry 0 is device sectors 1-3: torn, 1 then 2 of them. */
	replay_spec(_metadata, self, "0~0:first");
	EXPECT_EQ(pattern(0, 0), byte_at(tpath("dev"), 4096 * 2 - 1));
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 4096 * 2));
	replay_spec(_metadata, self, "0~0:second");
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 4096 * 2 - 1));
	EXPECT_EQ(pattern(0, 1), byte_at(tpath("dev"), 4096 * 2));
	/* Its FUA makes 1 a boundary; the discard is device sectors 5-6. */
	replay_spec(_metadata, self, "1+2");
	EXPECT_EQ(0, byte_at(tpath("dev"), 4096 * 5));
}

/*
 * A FUA write is durable once it completes and a later write may depend on
 * it: no point holds an entry past it without it.
 */
TEST_F(lw, a_fua_write_bounds_its_interval)
{
	static const struct ent fua[] = {
		{ 0, 1, 0 },
		{ 2, 1, LW_FUA },
		{ 4, 1, 0 },
		{ 0, 0, LW_FLUSH },
		{ 6, 1, 0 },
	};
	struct lw_point pt;
	char *out = NULL;

	open_log(_metadata, self, 512, fua, 5);
	EXPECT_NE(0, lw_point_parse(&self->log, "0+0,2", &pt));
	EXPECT_NE(0, lw_point_parse(&self->log, "0+2", &pt));
	ASSERT_EQ(0, lw_point_parse(&self->log, "2+2", &pt)) TH_LOG("%s", self->log.err);
	lw_point_free(&pt);
	PRINTED(print_all_points, out);
	/* Boundaries 0, 2 (after the FUA write), 3 (the flush) and 5. */
	EXPECT_NE(NULL, strstr(out, "\n2 -\n"));
	EXPECT_NE(NULL, strstr(out, "\n3 -\n"));
	EXPECT_EQ(NULL, strstr(out, "0+0,2"));
	EXPECT_EQ(NULL, strstr(out, "0+2"));
	free(out);
}

TEST_F(lw, every_prefix_replays)
{
	char spec[16];
	size_t p;

	for (p = 0; p <= STD_N; p++) {
		snprintf(spec, sizeof(spec), "%zu", p);
		replay_spec(_metadata, self, spec);
	}
	/* The last prefix, checked by hand: the discard zeroed sectors 2, 3. */
	EXPECT_EQ(pattern(0, 1), byte_at(tpath("dev"), 1023));
	EXPECT_EQ(0, byte_at(tpath("dev"), 1024));
	EXPECT_EQ(0, byte_at(tpath("dev"), 2047));
	EXPECT_EQ(pattern(1, 0), byte_at(tpath("dev"), 2048));
	EXPECT_EQ(pattern(7, 3), byte_at(tpath("dev"), 19 * 512));
}

TEST_F(lw, subsets_and_torn_halves_replay)
{
	static const char *const specs[] = {
		"0+0", "0+1", "2+4", "2+5", "2+4,6", "2+5,6", "7+7", "8+8",
		"2~4:first", "2~4:second", "2+5~6:first", "2+4,5~6:second",
		"7~7:first", "7~7:second", "0~0:second",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(specs); i++)
		replay_spec(_metadata, self, specs[i]);
	/* Entry 4 has 3 sectors: the first half is 1, the second 2. */
	replay_spec(_metadata, self, "2~4:first");
	EXPECT_EQ(pattern(4, 0), byte_at(tpath("dev"), 8 * 512));
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 9 * 512));
	replay_spec(_metadata, self, "2~4:second");
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 8 * 512));
	EXPECT_EQ(pattern(4, 1), byte_at(tpath("dev"), 9 * 512));
	EXPECT_EQ(pattern(4, 2), byte_at(tpath("dev"), 11 * 512 - 1));
	/* Not the entries in between: 5 (the discard) stays undone. */
	replay_spec(_metadata, self, "2+4,6");
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 1024));
	replay_spec(_metadata, self, "2+5");
	EXPECT_EQ(0, byte_at(tpath("dev"), 1024));
}

TEST_F(lw, a_torn_write_splits_at_any_sector)
{
	/* Entry 4 is device sectors 8-10. */
	replay_spec(_metadata, self, "2~4:first@2");
	EXPECT_EQ(pattern(4, 0), byte_at(tpath("dev"), 8 * 512));
	EXPECT_EQ(pattern(4, 1), byte_at(tpath("dev"), 10 * 512 - 1));
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 10 * 512));
	replay_spec(_metadata, self, "2~4:second@2");
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 10 * 512 - 1));
	EXPECT_EQ(pattern(4, 2), byte_at(tpath("dev"), 10 * 512));
	/* Entry 7 is device sectors 16-19. */
	replay_spec(_metadata, self, "7~7:first@3");
	EXPECT_EQ(pattern(7, 2), byte_at(tpath("dev"), 19 * 512 - 1));
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 19 * 512));
	replay_spec(_metadata, self, "7~7:second@1");
	EXPECT_EQ(BASE_FILL, byte_at(tpath("dev"), 17 * 512 - 1));
	EXPECT_EQ(pattern(7, 1), byte_at(tpath("dev"), 17 * 512));
}

TEST_F(lw, base_is_copied_whole_and_a_file_target_cut_to_it)
{
	struct stat st;

	replay_spec(_metadata, self, "0");
	ASSERT_EQ(0, stat(tpath("dev"), &st));
	EXPECT_EQ(DEV_SECTORS * 512, st.st_size);
}

TEST_F(lw, specs_parse_and_print_back)
{
	static const char *const specs[] = {
		"0", "10", "2+4,5,6", "2~4:first", "2+5~4:second",
		"2+4,5~6:first", "7~7:second", "7+7", "2~4:first@2",
		"2+5~4:second@1", "7~7:second@3",
	};
	struct lw_point pt;
	size_t i;
	char *s;

	for (i = 0; i < ARRAY_SIZE(specs); i++) {
		ASSERT_EQ(0, lw_point_parse(&self->log, specs[i], &pt))
			TH_LOG("%s", self->log.err);
		s = lw_point_str(&pt);
		EXPECT_STREQ(specs[i], s);
		free(s);
		lw_point_free(&pt);
	}
	/* Picks in log order, the torn one among them. */
	ASSERT_EQ(0, lw_point_parse(&self->log, "2+5~4:second", &pt));
	EXPECT_EQ(2, pt.prefix);
	ASSERT_EQ(2, pt.nr_picks);
	EXPECT_EQ(4, pt.picks[0].index);
	EXPECT_EQ(LW_SECOND, pt.picks[0].part);
	EXPECT_EQ(5, pt.picks[1].index);
	EXPECT_EQ(LW_WHOLE, pt.picks[1].part);
	lw_point_free(&pt);
}

TEST_F(lw, specs_out_of_range_or_malformed_are_refused)
{
	static const char *const bad[] = {
		/* syntax */
		"", "x", "-1", "+1", "2+", "2+4,", "2,4", "2~4", "2~4:", "2~4:third",
		"2~4:firstly", "2 ", " 2", "2+4~", "18446744073709551616",
		/* range */
		"11", "2+1", "2+7", "7+8", "10+9", "2+5,4", "2+4,4",
		/* torn */
		"2~5:first", "8~8:first", "2~3:first", "2+4~4:first", "0~2:first",
		/* splits: inside the entry, 1 to nr_sectors - 1 */
		"2~4:first@", "2~4:first@0", "2~4:first@3", "2~4:second@x",
		"7~7:second@4", "2~4:first@1@2",
	};
	struct lw_point pt;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		self->log.fault = LW_FAULT_NONE;
		EXPECT_EQ(-EINVAL, lw_point_parse(&self->log, bad[i], &pt))
			TH_LOG("'%s' was taken", bad[i]);
		EXPECT_EQ(LW_FAULT_INPUT, self->log.fault);
		EXPECT_NE(NULL, strstr(self->log.err, "bad crash point"));
		EXPECT_EQ(NULL, pt.picks);
	}
}

/* Every point must parse back, in strictly increasing log order. */
static void check_points(struct __test_metadata *_metadata,
			 struct lw_log *log, const struct lw_points *pts)
{
	struct lw_point back;
	size_t i;
	char *s;

	for (i = 0; i < pts->len; i++) {
		s = lw_point_str(&pts->v[i]);
		ASSERT_EQ(0, lw_point_parse(log, s, &back))
			TH_LOG("%s: %s", s, log->err);
		EXPECT_EQ(0, lw_point_cmp(&back, &pts->v[i]));
		if (i)
			EXPECT_GT(0, lw_point_cmp(&pts->v[i - 1], &pts->v[i]));
		lw_point_free(&back);
		free(s);
	}
}

static bool has_point(const struct lw_points *pts, const char *spec)
{
	bool found = false;
	size_t i;
	char *s;

	for (i = 0; !found && i < pts->len; i++) {
		s = lw_point_str(&pts->v[i]);
		found = !strcmp(s, spec);
		free(s);
	}
	return found;
}

/* The points whose spec has the prefix "P~" or "P+...~" with torn T. */
static size_t torn_points(const struct lw_points *pts, uint64_t p, uint64_t t)
{
	size_t i, j, n = 0;

	for (i = 0; i < pts->len; i++)
		for (j = 0; j < pts->v[i].nr_picks; j++)
			n += pts->v[i].prefix == p &&
			     pts->v[i].picks[j].index == t &&
			     pts->v[i].picks[j].part != LW_WHOLE;
	return n;
}

TEST_F(lw, points_follow_the_model)
{
	static const char *const want[] = {
		/* flush boundaries, with 0 and the end */
		"0", "2", "7", "8", "10",
		/* every proper subset of the writes of [0, 2) and [2, 7) */
		"0+0", "0+1", "2+4", "2+5", "2+6", "2+4,5", "2+4,6", "2+5,6",
	};
	static const char *const never[] = {
		"0+0,1", "2+4,5,6", "7+7", "8+8", "2~5:first", "8~8:first",
	};
	struct lw_points pts;
	size_t i, torn4, torn6;

	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &pts));
	check_points(_metadata, &self->log, &pts);
	for (i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT_TRUE(has_point(&pts, want[i])) TH_LOG("no %s", want[i]);
	for (i = 0; i < ARRAY_SIZE(never); i++)
		EXPECT_FALSE(has_point(&pts, never[i])) TH_LOG("%s", never[i]);
	/*
	 * One torn write per interval, torn at each of its sectors: both
	 * sides of every split, 2 * (nr_sectors - 1) points.
	 */
	EXPECT_EQ(2, torn_points(&pts, 0, 0));
	torn4 = torn_points(&pts, 2, 4);
	torn6 = torn_points(&pts, 2, 6);
	EXPECT_TRUE((torn4 == 4 && !torn6) || (!torn4 && torn6 == 2))
		TH_LOG("entry 4 torn at %zu points, entry 6 at %zu", torn4, torn6);
	EXPECT_EQ(6, torn_points(&pts, 7, 7));
	EXPECT_TRUE(has_point(&pts, "7~7:first@1"));
	EXPECT_TRUE(has_point(&pts, "7~7:first"));
	EXPECT_TRUE(has_point(&pts, "7~7:second"));
	EXPECT_TRUE(has_point(&pts, "7~7:second@3"));
	EXPECT_FALSE(has_point(&pts, "7~7:first@2")) TH_LOG("the middle is written \"first\"");
	EXPECT_EQ(13 + 2 + torn4 + torn6 + 6, pts.len);
	lw_points_free(&pts);
}

/* lw_set_tearable() from text; 0 or -errno. */
static int set_tearable(struct lw_log *log, const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	if (!f)
		return -errno;
	ret = lw_set_tearable(log, f, "ranges");
	fclose(f);
	return ret;
}

TEST_F(lw, only_writes_inside_the_tearable_ranges_tear)
{
	struct lw_points pts;

	/*
	 * Entry 4 (sectors 8-10) inside, split over two adjacent ranges;
	 * entry 7 (16-19) only half inside; entries 0 and 6 outside.
	 */
	ASSERT_EQ(0, set_tearable(&self->log, "10 1\n8 2\n16 2\n"))
		TH_LOG("%s", self->log.err);
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &pts));
	check_points(_metadata, &self->log, &pts);
	EXPECT_EQ(0, torn_points(&pts, 0, 0));
	EXPECT_EQ(4, torn_points(&pts, 2, 4));
	EXPECT_EQ(0, torn_points(&pts, 2, 6));
	EXPECT_EQ(0, torn_points(&pts, 7, 7));
	EXPECT_EQ(13 + 4, pts.len);
	lw_points_free(&pts);

	/* An empty list: nowhere. */
	ASSERT_EQ(0, set_tearable(&self->log, ""));
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &pts));
	EXPECT_EQ(13, pts.len);
	lw_points_free(&pts);
}

TEST_F(lw, bad_tearable_ranges_are_refused)
{
	static const char *const bad[] = {
		"8\n", "8 0\n", "-8 2\n", "8 -2\n", "8  2\n", " 8 2\n", "8 2 3\n", "8 2x\n",
		"36028797018963968 1\n",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, set_tearable(&self->log, bad[i])) TH_LOG("'%s'", bad[i]);
		EXPECT_EQ(LW_FAULT_INPUT, self->log.fault);
	}
	EXPECT_EQ(-EINVAL, set_tearable(&self->log, "8 2\n16 x\n"));
	EXPECT_STREQ("ranges:2: expected START NR_SECTORS (512-byte sectors, NR_SECTORS > 0)",
		     self->log.err);
}

TEST_F(lw, points_name_the_last_mark_before_them)
{
	char *out = NULL;

	EXPECT_EQ(NULL, lw_mark_before(&self->log, 0));
	EXPECT_EQ(NULL, lw_mark_before(&self->log, 3));
	EXPECT_STREQ("mkfs", lw_mark_before(&self->log, 4));
	EXPECT_STREQ("mkfs", lw_mark_before(&self->log, 9));
	EXPECT_STREQ("dm-log-writes-end", lw_mark_before(&self->log, 10));
	PRINTED(print_all_points, out);
	EXPECT_EQ(0, strncmp(out, "0 -\n", 4));
	EXPECT_NE(NULL, strstr(out, "\n2 -\n"));
	EXPECT_NE(NULL, strstr(out, "\n7 mkfs\n"));
	EXPECT_NE(NULL, strstr(out, "\n7~7:first mkfs\n"));
	EXPECT_NE(NULL, strstr(out, "\n10 dm-log-writes-end\n"));
	EXPECT_EQ('\n', out[strlen(out) - 1]);
	free(out);
}

/* 12 one-sector writes and no flush: one interval, random subsets. */
static const struct ent wide[] = {
	{ 0, 1 }, { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 1 }, { 5, 1 },
	{ 6, 1 }, { 7, 1 }, { 8, 1 }, { 9, 1 }, { 10, 1 }, { 11, 2 },
};

/* The points as one string, a spec a line. */
static char *joined(const struct lw_points *pts)
{
	size_t len = 0, i;
	char *out = NULL, *s;
	FILE *f = open_memstream(&out, &len);

	for (i = 0; f && i < pts->len; i++) {
		s = lw_point_str(&pts->v[i]);
		fprintf(f, "%s\n", s);
		free(s);
	}
	if (f)
		fclose(f);
	return out;
}

TEST_F(lw, random_subsets_are_proper_and_seeded)
{
	struct lw_points a, b, c;
	char *sa, *sb, *sc;
	size_t i, subsets = 0;

	open_log(_metadata, self, 512, wide, 12);
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &a));
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &b));
	ASSERT_EQ(0, lw_points(&self->log, 2, 4, &c));
	check_points(_metadata, &self->log, &a);
	for (i = 0; i < a.len; i++) {
		if (a.v[i].prefix || !a.v[i].nr_picks ||
		    a.v[i].picks[a.v[i].nr_picks - 1].part != LW_WHOLE)
			continue;
		subsets++;
		EXPECT_GT(12, a.v[i].nr_picks);
	}
	EXPECT_LE(1, subsets);
	EXPECT_GE(4, subsets);
	EXPECT_EQ(2, torn_points(&a, 0, 11));
	sa = joined(&a);
	sb = joined(&b);
	sc = joined(&c);
	EXPECT_STREQ(sa, sb);
	EXPECT_STRNE(sa, sc);
	free(sa);
	free(sb);
	free(sc);
	lw_points_free(&a);
	lw_points_free(&b);
	lw_points_free(&c);
	/* No subsets asked for: the prefixes and the torn write only. */
	ASSERT_EQ(0, lw_points(&self->log, 1, 0, &a));
	EXPECT_EQ(4, a.len);
	lw_points_free(&a);
	/* 5 writes, 200 draws: never all 5 (nor none, the prefix again). */
	open_log(_metadata, self, 512, wide, 5);
	ASSERT_EQ(0, lw_points(&self->log, 1, 200, &a));
	check_points(_metadata, &self->log, &a);
	EXPECT_FALSE(has_point(&a, "0+0,1,2,3,4"));
	EXPECT_TRUE(has_point(&a, "0+0,1,2,3"));
	EXPECT_GE(2 + 30, a.len);
	EXPECT_LT(2 + 20, a.len);
	lw_points_free(&a);
}

TEST_F(lw, a_sample_is_spread_and_keeps_the_end)
{
	struct lw_points all, s;
	uint64_t total, at, lo, hi;
	size_t m, n, k, j;
	char *sa, *sb;

	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &all));
	m = all.len;
	for (n = 1; n <= m + 1; n++) {
		ASSERT_EQ(0, lw_points(&self->log, 1, 4, &s));
		ASSERT_EQ(0, lw_sample(&self->log, &s, n, 5));
		ASSERT_EQ(n < m ? n : m, s.len);
		/* The clean end is always there, last. */
		EXPECT_EQ(STD_N, s.v[s.len - 1].prefix);
		EXPECT_EQ(0, s.v[s.len - 1].nr_picks);
		check_points(_metadata, &self->log, &s);
		/*
		 * One point from each stratum of equal weight of the full
		 * list, where no point outweighs a stratum (none is drawn
		 * twice then).
		 */
		for (j = 0, total = 0; j + 1 < m; j++)
			total += lw_point_weight(&self->log, &all.v[j]);
		for (k = 0, j = 0, at = 0; n > 1 && n < m && (n - 1) * LW_WEIGHT <= total &&
		     k + 1 < n; k++) {
			lo = total * k / (n - 1);
			hi = total * (k + 1) / (n - 1);
			while (j < m && lw_point_cmp(&all.v[j], &s.v[k]))
				at += lw_point_weight(&self->log, &all.v[j++]);
			EXPECT_TRUE(at < hi && at + lw_point_weight(&self->log, &all.v[j]) > lo)
				TH_LOG("n %zu: point %zu spans [%llu, +%llu), not stratum [%llu, %llu)",
				       n, k, (unsigned long long)at,
				       (unsigned long long)lw_point_weight(&self->log, &all.v[j]),
				       (unsigned long long)lo, (unsigned long long)hi);
		}
		lw_points_free(&s);
	}
	/* The same seed, the same sample. */
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &s));
	ASSERT_EQ(0, lw_sample(&self->log, &s, 6, 9));
	sa = joined(&s);
	lw_points_free(&s);
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &s));
	ASSERT_EQ(0, lw_sample(&self->log, &s, 6, 9));
	sb = joined(&s);
	EXPECT_STREQ(sa, sb);
	free(sa);
	free(sb);
	lw_points_free(&s);
	EXPECT_EQ(-EINVAL, lw_sample(&self->log, &all, 0, 1));
	lw_points_free(&all);
}

/*
 * A write of 16 sectors is torn at each of them: 30 points, which weigh
 * as much as 2 in a sample, so a sample keeps mostly the other points.
 */
TEST_F(lw, a_sample_weighs_all_splits_of_a_write_as_two_points)
{
	static const struct ent big[] = {
		{ 0, 16, 0 },
		{ 16, 1, 0 },
		{ 17, 1, 0 },
		{ 0, 0, LW_FLUSH },
		{ 20, 1, 0 },
	};
	struct lw_points pts;
	size_t i, all_torn = 0, torn = 0;

	open_log(_metadata, self, 512, big, 5);
	ASSERT_EQ(0, lw_points(&self->log, 1, 4, &pts));
	for (i = 0; i < pts.len; i++)
		all_torn += torn_points(&(struct lw_points){ .v = &pts.v[i], .len = 1 }, 0, 0);
	EXPECT_EQ(30, all_torn);
	/* 0 and 3 and 5, six subsets, 30 splits: 9 points and 2 for the splits. */
	ASSERT_EQ(39, pts.len);
	ASSERT_EQ(0, lw_sample(&self->log, &pts, 8, 1));
	ASSERT_EQ(8, pts.len);
	for (i = 0; i < pts.len; i++)
		torn += torn_points(&(struct lw_points){ .v = &pts.v[i], .len = 1 }, 0, 0);
	/* 7 strata of 10 points' weight, 2 of which are torn: at most 2. */
	EXPECT_GE(2, torn) TH_LOG("%zu torn points in a sample of 8", torn);
	check_points(_metadata, &self->log, &pts);
	lw_points_free(&pts);
}

/* Patch the log file at off, then expect lw_log_open() to refuse it. */
static void expect_refused(struct __test_metadata *_metadata,
			   const char *why, const char *what)
{
	struct lw_log log;
	int fd = open(tpath("bad"), O_RDONLY);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, lw_log_open(&log, fd)) TH_LOG("%s: taken", what);
	EXPECT_EQ(LW_FAULT_LOG, log.fault);
	EXPECT_NE(NULL, strstr(log.err, why))
		TH_LOG("%s: '%s' says nothing of '%s'", what, log.err, why);
	EXPECT_EQ(NULL, log.entries);
	close(fd);
}

/* The std log as "bad", with le64 v at off (when off >= 0), cut to size. */
static void bad_log(struct __test_metadata *_metadata, long off, uint64_t v,
		    off_t size)
{
	uint8_t b[8];
	int fd;

	ASSERT_EQ(0, write_log(tpath("bad"), 512, std_log, STD_N));
	fd = open(tpath("bad"), O_WRONLY);
	ASSERT_LE(0, fd);
	put_le64(b, v);
	if (off >= 0)
		ASSERT_EQ(0, put(fd, b, 8, off));
	if (size >= 0)
		ASSERT_EQ(0, ftruncate(fd, size));
	close(fd);
}

TEST_F(lw, bad_logs_are_refused)
{
	struct stat st;

	ASSERT_EQ(0, fstat(self->fd, &st));
	bad_log(_metadata, 0, LW_MAGIC + 1, -1);
	expect_refused(_metadata, "magic", "a bad magic");
	bad_log(_metadata, 8, 2, -1);
	expect_refused(_metadata, "version 2", "version 2");
	bad_log(_metadata, 24, 1000, -1);
	expect_refused(_metadata, "sector size", "sector size 1000");
	ASSERT_EQ(24 * 512, st.st_size);
	bad_log(_metadata, -1, 0, 23 * 512 - 1);
	expect_refused(_metadata, "entry 8 (sector 20, 1 sectors) does not fit",
		       "entry 8's last data byte cut");
	bad_log(_metadata, -1, 0, 512 * 23);
	expect_refused(_metadata, "would be at byte", "entry 9 cut");
	bad_log(_metadata, -1, 0, 512 * 6);
	expect_refused(_metadata, "room for 5", "cut after entry 1");
	bad_log(_metadata, -1, 0, 20);
	expect_refused(_metadata, "truncated", "cut in the super block");
	bad_log(_metadata, 16, 1000, -1);
	expect_refused(_metadata, "truncated", "1000 entries");
	bad_log(_metadata, 16, STD_N + 1, -1);
	expect_refused(_metadata, "truncated", "one entry more");
	/* Entry 0's header is at 512: flags, data_len. */
	bad_log(_metadata, 512 + 16, 1 << 5, -1);
	expect_refused(_metadata, "unknown flags", "flag 32");
	bad_log(_metadata, 512 + 24, 4, -1);
	expect_refused(_metadata, "without the mark", "data_len of a write");
	/* Entry 3, the mark, at 7 * 512: a name longer than its sector. */
	bad_log(_metadata, 7 * 512 + 24, 512, -1);
	expect_refused(_metadata, "a mark of 512 bytes", "a long mark");
	/* Entry 0 writing past what a 64-bit offset holds. */
	bad_log(_metadata, 512, UINT64_MAX / 256, -1);
	expect_refused(_metadata, "does not fit", "sector 2^56");
}

TEST_F(lw, target_errors_are_target_faults)
{
	struct lw_point pt;
	int fd;

	ASSERT_EQ(0, lw_point_parse(&self->log, "10", &pt));
	fd = open(tpath("log"), O_RDONLY);	/* not writable */
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBADF, lw_replay(&self->log, &pt, fd));
	EXPECT_EQ(LW_FAULT_TARGET, self->log.fault);
	EXPECT_NE(NULL, strstr(self->log.err, "writing the target"));
	close(fd);
	lw_point_free(&pt);
}

/* The CLI ------------------------------------------------------------------- */

FIXTURE(cli) {
	char dir[PATH_MAX];
	const char *prog;
};

FIXTURE_SETUP(cli)
{
	const char *base = getenv("TMPDIR");
	static char path[PATH_MAX];

	self->prog = getenv("REPLAY_LOG");
	if (!self->prog || !*self->prog)
		SKIP(return, "REPLAY_LOG (the replay-log to test) is not set");
	ASSERT_NE(NULL, realpath(self->prog, path))
		TH_LOG("REPLAY_LOG=%s: %s", self->prog, strerror(errno));
	ASSERT_EQ(0, access(path, X_OK));
	self->prog = path;
	snprintf(self->dir, sizeof(self->dir), "%s/test_log_writes.XXXXXX",
		 base && *base ? base : "/tmp");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(tmpdir, sizeof(tmpdir), "%s", self->dir);
	ASSERT_EQ(0, write_log(tpath("log"), 512, std_log, STD_N));
	ASSERT_EQ(0, write_fill(tpath("base"), DEV_SECTORS * 512, BASE_FILL));
	ASSERT_EQ(0, write_fill(tpath("dev"), DEV_SECTORS * 512, 0));
}

FIXTURE_TEARDOWN(cli)
{
	char cmd[PATH_MAX + 16];

	if (!self->prog || _metadata->exit_code != KSFT_PASS)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	EXPECT_EQ(0, system(cmd));
}

/* Run the CLI with args (NULL-ended), stdout and stderr to files. */
static int run(const char *prog, ...)
{
	const char *argv[24] = { prog };
	int n = 1, status, fd;
	va_list ap;
	pid_t pid;

	va_start(ap, prog);
	while (n < 23 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	pid = fork();
	if (!pid) {
		fd = open(tpath("out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 1);
		fd = open(tpath("err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(fd, 2);
		execv(prog, (char **)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int system_fmt(const char *fmt, ...)
{
	char cmd[3 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* The whole of a small file, malloc'd ("" when it cannot be read). */
static char *slurp(const char *path)
{
	char *buf = calloc(1, 65536);
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		if (read(fd, buf, 65535) < 0)
			buf[0] = '\0';
		close(fd);
	}
	return buf;
}

static void expect_output(struct __test_metadata *_metadata,
			  const char *name, const char *want)
{
	char *got = slurp(tpath(name));

	EXPECT_NE(NULL, strstr(got, want))
		TH_LOG("%s: '%s' has no '%s'", name, got, want);
	free(got);
}

TEST_F(cli, list_points_and_replay)
{
	const char *p = self->prog;
	struct lw_point pt = { .prefix = 4 };
	uint8_t *want;

	EXPECT_EQ(0, run(p, "--log", tpath("log"), "--list", NULL));
	expect_output(_metadata, "out", "0 0 2 - -\n1 4 1 metadata -\n");
	expect_output(_metadata, "out", "\n9 0 0 mark dm-log-writes-end\n");
	EXPECT_EQ(0, run(p, "--log", tpath("log"), "--points", NULL));
	expect_output(_metadata, "out", "0 -\n");
	expect_output(_metadata, "out", "\n7~7:second@3 mkfs\n8 mkfs\n10 dm-log-writes-end\n");
	EXPECT_EQ(0, run(p, "--log", tpath("log"), "--points", "--sample", "1",
			 "--seed", "3", "--subsets", "2", NULL));
	expect_output(_metadata, "out", "10 dm-log-writes-end\n");
	EXPECT_EQ(0, run(p, "--log", tpath("log"), "--replay", tpath("dev"),
			 "--base", tpath("base"), "--point", "4", NULL));
	want = oracle(512, std_log, &pt);
	EXPECT_EQ(-1, differs(tpath("dev"), want, DEV_SECTORS * 512));
	free(want);
	EXPECT_EQ(0, run(p, "--help", NULL));
	expect_output(_metadata, "out", "usage: replay-log");
}

TEST_F(cli, tear_within_takes_a_file_of_ranges)
{
	const char *p = self->prog, *ranges = tpath("ranges");
	char *out;
	int fd = open(ranges, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, close(fd));
	EXPECT_EQ(0, run(p, "--log", tpath("log"), "--points", "--tear-within", ranges, NULL));
	out = slurp(tpath("out"));
	EXPECT_EQ(NULL, strchr(out, '~')) TH_LOG("torn points with nowhere to tear: %s", out);
	free(out);
	EXPECT_EQ(1, run(p, "--log", tpath("log"), "--points", "--tear-within",
			 tpath("no-such-file"), NULL));
	expect_output(_metadata, "err", "--tear-within");
	EXPECT_EQ(1, run(p, "--log", tpath("log"), "--list", "--tear-within", ranges, NULL));
	expect_output(_metadata, "err", "go with --points");
}

TEST_F(cli, exit_codes_say_what_was_wrong)
{
	const char *p = self->prog, *log = tpath("log"), *dev = tpath("dev");

	EXPECT_EQ(1, run(p, NULL));
	EXPECT_EQ(1, run(p, "--log", log, NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--list", "--points", NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--replay", dev, NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--list", "--seed", "2", NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--points", "--sample", "0", NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--points", "--seed", "-1", NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--list", "extra", NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--bogus", NULL));
	EXPECT_EQ(1, run(p, "--log", log, "--replay", dev, "--point", "11",
			 NULL));
	expect_output(_metadata, "err", "past the log's 10 entries");
	EXPECT_EQ(1, run(p, "--log", log, "--replay", dev, "--point", "2+7",
			 NULL));
	EXPECT_EQ(2, run(p, "--log", tpath("nothing"), "--list", NULL));
	EXPECT_EQ(2, run(p, "--log", tpath("base"), "--list", NULL));
	expect_output(_metadata, "err", "not a dm-log-writes log");
	EXPECT_EQ(3, run(p, "--log", log, "--replay", tpath("nothing"),
			 "--point", "4", NULL));
	EXPECT_EQ(3, run(p, "--log", log, "--replay", tmpdir, "--point", "4",
			 NULL));
	EXPECT_EQ(3, run(p, "--log", log, "--replay", dev, "--base",
			 tpath("nothing"), "--point", "4", NULL));
	EXPECT_EQ(3, WEXITSTATUS(system_fmt("'%s' --log '%s' --list >/dev/full 2>/dev/null",
					    p, log)));
}

TEST_HARNESS_MAIN
