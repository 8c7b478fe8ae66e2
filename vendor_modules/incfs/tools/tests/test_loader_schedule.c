// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of incfs-loader's scheduler (incfs-loader/schedule.c): the
 * order blocks are sent in.  Pending reads first, in the order they were
 * seen; then the hot list, in manifest order; then the bulk, in file order
 * (blob order for a stream); never a block the image has; only what can be
 * read now.  A kselftest-harness program; schedule.c and app.c (for the
 * manifest) are compiled in.  Each case plays the block loop: it takes
 * sched_next()'s runs, says they were sent, feeds pending reads and, for a
 * stream, how many bytes have arrived.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include "../incfs-loader/app.c"
#include "../incfs-loader/errors.c"
#include "../incfs-loader/schedule.c"

#define ALL	UINT64_MAX	/* a seekable source: every byte can be read */

FIXTURE(sched) {
	char path[PATH_MAX];	/* the manifest */
	struct ld_app a;
	struct ld_sched s;
	char order[4096];	/* the runs sent, as text */
};

FIXTURE_SETUP(sched)
{
	const char *base = getenv("TMPDIR");
	int fd;

	snprintf(self->path, sizeof(self->path), "%s/test_loader_schedule.XXXXXX",
		 base && *base ? base : "/tmp");
	fd = mkstemp(self->path);
	ASSERT_LE(0, fd) TH_LOG("mkstemp %s: %s", self->path, strerror(errno));
	close(fd);
	ld_error_clear();
}

FIXTURE_TEARDOWN(sched)
{
	sched_free(&self->s);
	app_free(&self->a);
	unlink(self->path);
}

/* The app of a manifest, and its schedule (blob order for a stream). */
static int start(FIXTURE_DATA(sched) *self, const char *manifest, bool stream)
{
	FILE *fp = fopen(self->path, "w");
	int ret;

	if (!fp || fputs(manifest, fp) < 0 || fclose(fp))
		return -EIO;
	ret = app_parse_manifest(&self->a, self->path, false);
	if (!ret)
		ret = app_finish(&self->a);
	return ret ? ret : sched_init(&self->s, &self->a, stream);
}

static int file(FIXTURE_DATA(sched) *self, const char *path)
{
	return app_find(&self->a, path);
}

/*
 * Up to max runs (0: until none can be sent), each sent at once: their
 * text, "H a 0+4 B b 0+1 ..." (P pending, H hot, B bulk; path, first
 * block, count).
 */
static const char *send(FIXTURE_DATA(sched) *self, uint32_t limit, uint64_t avail, int max)
{
	size_t len = 0;
	struct ld_run r;

	self->order[0] = '\0';
	for (int i = 0; (!max || i < max) && sched_next(&self->s, limit, avail, &r); i++) {
		len += snprintf(self->order + len, sizeof(self->order) - len, "%s%c %s %u+%u",
				len ? " " : "", "PHB"[r.kind], self->a.e[r.file].path, r.blk,
				r.count);
		if (len >= sizeof(self->order))
			return "(too many runs)";
		for (uint32_t b = r.blk; b < r.blk + r.count; b++)
			if (!sched_have(&self->s, r.file, b))
				return "(a block sent twice)";
	}
	return self->order;
}

/* Files of 10, 1 and 3 blocks, at blob offsets 0, 40960, 45056. */
#define THREE_FILES	"d d 755\n"			\
			"f d/a 644 40960 0\n"		\
			"f d/b 644 1 40960\n"		\
			"f d/c 644 9000 45056\n"

TEST_F(sched, bulk_in_file_order_in_runs_of_the_limit)
{
	ASSERT_EQ(0, start(self, THREE_FILES, false)) TH_LOG("%s", ld_error_message());
	EXPECT_EQ(14, self->s.remaining);
	EXPECT_STREQ("B d/a 0+4 B d/a 4+4 B d/a 8+2 B d/b 0+1 B d/c 0+3",
		     send(self, 4, ALL, 0));
	EXPECT_EQ(0, self->s.remaining);
	EXPECT_STREQ("", send(self, 4, ALL, 0));
	EXPECT_EQ(3, self->s.ord_pos);
}

/* A run not sent (the loop gave way) is chosen again. */
TEST_F(sched, a_run_is_chosen_until_it_is_sent)
{
	struct ld_run r1, r2;

	ASSERT_EQ(0, start(self, THREE_FILES, false));
	ASSERT_TRUE(sched_next(&self->s, 16, ALL, &r1));
	ASSERT_TRUE(sched_next(&self->s, 16, ALL, &r2));
	EXPECT_EQ(0, memcmp(&r1, &r2, sizeof(r1)));
	EXPECT_EQ(LD_BULK, r1.kind);
	EXPECT_EQ(10, r1.count);
	EXPECT_EQ(14, self->s.remaining);
}

TEST_F(sched, hot_list_first_in_manifest_order)
{
	ASSERT_EQ(0, start(self, THREE_FILES
			   "hot d/c 1 2\n"
			   "hot d/a 5 2\n"
			   "hot d/a 0 1\n", false));
	EXPECT_STREQ("H d/c 1+2 H d/a 5+2 H d/a 0+1 "
		     "B d/a 1+4 B d/a 7+3 B d/b 0+1 B d/c 0+1", send(self, 16, ALL, 0));
}

/* Hot ranges stop at the end of the file, at the limit and at blocks had. */
TEST_F(sched, hot_ranges_are_clipped)
{
	ASSERT_EQ(0, start(self, THREE_FILES
			   "hot d/a 8 100\n"
			   "hot d/b 1 5\n"
			   "hot d/c 0 0\n"
			   "hot d/a 0 7\n"
			   "hot d/a 3 2\n", false));
	EXPECT_STREQ("H d/a 8+2 H d/a 0+3 H d/a 3+3 H d/a 6+1 "
		     "B d/a 7+1 B d/b 0+1 B d/c 0+3", send(self, 3, ALL, 0));
}

/* Blocks present at the start (a resumed load) are never sent. */
TEST_F(sched, blocks_present_are_skipped)
{
	ASSERT_EQ(0, start(self, THREE_FILES "hot d/a 2 4\n", false));
	EXPECT_TRUE(sched_have(&self->s, file(self, "d/a"), 3));
	EXPECT_TRUE(sched_have(&self->s, file(self, "d/a"), 7));
	EXPECT_TRUE(sched_have(&self->s, file(self, "d/b"), 0));
	for (uint32_t b = 0; b < 3; b++)
		EXPECT_TRUE(sched_have(&self->s, file(self, "d/c"), b));
	EXPECT_FALSE(sched_have(&self->s, file(self, "d/c"), 1));
	EXPECT_EQ(14 - 6, self->s.remaining);
	EXPECT_TRUE(sched_has(&self->s, file(self, "d/a"), 3));
	EXPECT_FALSE(sched_has(&self->s, file(self, "d/a"), 4));
	EXPECT_STREQ("H d/a 2+1 H d/a 4+2 B d/a 0+2 B d/a 6+1 B d/a 8+2", send(self, 16, ALL, 0));
	EXPECT_EQ(0, self->s.remaining);
}

/* A pending read goes before the hot list and the bulk, then is not sent again. */
TEST_F(sched, pending_reads_go_first)
{
	int a, c;

	ASSERT_EQ(0, start(self, THREE_FILES "hot d/a 4 4\n", false));
	a = file(self, "d/a");
	c = file(self, "d/c");
	EXPECT_STREQ("H d/a 4+2", send(self, 2, ALL, 1));
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, c, 2, 1.5));
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, a, 6, 2.5));
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, a, 0, 3.5));
	EXPECT_STREQ("P d/c 2+1 P d/a 6+1 P d/a 0+1 H d/a 7+1 B d/a 1+2",
		     send(self, 2, ALL, 5));
	EXPECT_EQ(0, self->s.nwant);
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, c, 0, 4.5));
	EXPECT_STREQ("P d/c 0+1 B d/a 3+1 B d/a 8+2 B d/b 0+1 B d/c 1+1",
		     send(self, 2, ALL, 0));
}

TEST_F(sched, pending_reads_once_and_only_ours)
{
	struct ld_run r;
	int a, d;

	ASSERT_EQ(0, start(self, THREE_FILES, false));
	a = file(self, "d/a");
	d = file(self, "d");
	EXPECT_EQ(LD_WANT_NOT_OURS, sched_want(&self->s, -1, 0, 1));
	EXPECT_EQ(LD_WANT_NOT_OURS, sched_want(&self->s, a, 10, 1));
	EXPECT_EQ(LD_WANT_NOT_OURS, sched_want(&self->s, d, 0, 1));
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, a, 9, 1));
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, a, 9, 2));
	EXPECT_EQ(1, self->s.nwant);
	ASSERT_TRUE(sched_next(&self->s, 16, ALL, &r));
	EXPECT_EQ(LD_PENDING, r.kind);
	EXPECT_EQ(a, r.file);
	EXPECT_EQ(9, r.blk);
	EXPECT_EQ(1, r.count);
	EXPECT_EQ(1, r.asked);	/* the first time it was seen */
	/* Not yet sent: chosen once only, then the bulk. */
	ASSERT_TRUE(sched_next(&self->s, 16, ALL, &r));
	EXPECT_EQ(LD_BULK, r.kind);
	EXPECT_EQ(10, r.count);
	/* Sent (it may wait in a batch): the loop writes the batch. */
	EXPECT_TRUE(sched_have(&self->s, a, 9));
	EXPECT_EQ(LD_WANT_SENT, sched_want(&self->s, a, 9, 3));
	EXPECT_EQ(0, self->s.nwant);
	/* A pending read of a block sent since it was seen is dropped. */
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, a, 5, 4));
	EXPECT_TRUE(sched_have(&self->s, a, 5));
	EXPECT_STREQ("B d/a 0+5 B d/a 6+3 B d/b 0+1 B d/c 0+3", send(self, 16, ALL, 0));
	EXPECT_EQ(0, self->s.nwant);
}

/* A stream: blob order, and only the blocks whose bytes have arrived. */
TEST_F(sched, stream_sends_what_has_arrived_in_blob_order)
{
	int a, c;

	/* Declared a, b, c; in the blob c (0), b (12288), a (16384). */
	ASSERT_EQ(0, start(self, "f a 644 8192 16384\n"
			   "f b 644 100 12288\n"
			   "f c 644 9000 0\n"
			   "hot a 1 1\n", true));
	a = file(self, "a");
	c = file(self, "c");
	EXPECT_STREQ("", send(self, 16, 0, 0));
	EXPECT_STREQ("", send(self, 16, 4095, 0));
	EXPECT_STREQ("B c 0+1", send(self, 16, 4096, 0));
	/* c's last block is 808 bytes long, at 8192. */
	EXPECT_STREQ("B c 1+1", send(self, 16, 9000 - 1, 0));
	EXPECT_STREQ("B c 2+1", send(self, 16, 9000, 0));
	/* Pending reads of blocks not arrived wait, in order, ahead of all. */
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, a, 0, 1));
	EXPECT_EQ(LD_WANT_QUEUED, sched_want(&self->s, file(self, "b"), 0, 2));
	EXPECT_STREQ("", send(self, 16, 12288 + 99, 0));
	EXPECT_EQ(2, self->s.nwant);
	EXPECT_STREQ("P b 0+1", send(self, 16, 12288 + 100, 0));
	EXPECT_EQ(1, self->s.nwant);
	/* The hot block has not arrived: the bulk goes on meanwhile. */
	EXPECT_STREQ("P a 0+1", send(self, 16, 16384 + 4096, 0));
	EXPECT_EQ(0, self->s.nwant);
	EXPECT_STREQ("H a 1+1", send(self, 16, 16384 + 8192, 0));
	EXPECT_EQ(0, self->s.remaining);
	EXPECT_TRUE(sched_has(&self->s, c, 2));
}

/* While a stream's hot block is missing, arrived bulk blocks go. */
TEST_F(sched, stream_hot_waits_bulk_goes)
{
	ASSERT_EQ(0, start(self, "f a 644 8192 0\n"
			   "f b 644 8192 8192\n"
			   "hot b 0 2\n", true));
	EXPECT_STREQ("B a 0+1", send(self, 16, 4096, 0));
	EXPECT_STREQ("B a 1+1", send(self, 16, 8192, 0));
	EXPECT_STREQ("H b 0+1", send(self, 16, 12288, 0));
	EXPECT_STREQ("H b 1+1", send(self, 16, ALL, 0));
}

TEST_HARNESS_MAIN
