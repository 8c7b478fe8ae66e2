// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of incfs-loader's learned hot list (incfs-loader/learn.c):
 * learn_runs() turns read-log records into runs, each block once at its
 * first read, in the order of the reads, consecutive blocks of one file
 * joined.  A kselftest-harness program; learn.c is compiled in.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

#include "../incfs-loader/errors.c"
#include "../incfs-loader/learn.c"

#define R(ino, block)	{ .file_ino = (ino), .block_index = (block) }

/* The runs of @recs as text: "ino:first+count ..." */
static const char *runs_of(const struct incfs_read_log_record *recs, size_t n)
{
	static char buf[512];
	struct ld_run *runs;
	size_t len = 0;
	long nr = learn_runs(recs, n, &runs);

	if (nr < 0)
		return "error";
	buf[0] = '\0';
	for (long i = 0; i < nr; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%llu:%u+%u", i ? " " : "",
				(unsigned long long)runs[i].ino, runs[i].first, runs[i].count);
	free(runs);
	return buf;
}

TEST(consecutive_blocks_of_a_file_make_one_run)
{
	const struct incfs_read_log_record recs[] = { R(3, 0), R(3, 1), R(3, 2), R(4, 7) };

	EXPECT_STREQ("3:0+3 4:7+1", runs_of(recs, 4));
}

TEST(runs_keep_the_order_of_the_first_reads)
{
	const struct incfs_read_log_record recs[] = { R(5, 9), R(3, 4), R(3, 5), R(5, 1) };

	EXPECT_STREQ("5:9+1 3:4+2 5:1+1", runs_of(recs, 4));
}

TEST(a_block_read_again_counts_at_its_first_read)
{
	const struct incfs_read_log_record recs[] = {
		R(3, 0), R(3, 1), R(4, 0), R(3, 0), R(3, 2), R(4, 0), R(3, 1)
	};

	EXPECT_STREQ("3:0+2 4:0+1 3:2+1", runs_of(recs, 7));
}

TEST(a_backwards_read_starts_a_new_run)
{
	const struct incfs_read_log_record recs[] = { R(3, 5), R(3, 4), R(3, 6) };

	EXPECT_STREQ("3:5+1 3:4+1 3:6+1", runs_of(recs, 3));
}

TEST(records_of_no_file_are_skipped)
{
	const struct incfs_read_log_record recs[] = {
		R(0, 1), R(3, 1), R(1ULL << 32, 2), R(3, 2)
	};

	EXPECT_STREQ("3:1+2", runs_of(recs, 4));
}

TEST(no_records_no_runs)
{
	EXPECT_STREQ("", runs_of(NULL, 0));
}

TEST(many_records_each_block_once)
{
	enum { N = 20000 };
	struct incfs_read_log_record *recs = calloc(N, sizeof(*recs));
	struct ld_run *runs;
	long nr;

	ASSERT_NE(NULL, recs);
	/* Blocks 0..9999 of file 3, then all of them again. */
	for (int i = 0; i < N; i++)
		recs[i] = (struct incfs_read_log_record)R(3, i % (N / 2));
	nr = learn_runs(recs, N, &runs);
	ASSERT_EQ(1, nr);
	EXPECT_EQ(0, runs[0].first);
	EXPECT_EQ(N / 2, runs[0].count);
	free(runs);
	free(recs);
}

TEST_HARNESS_MAIN
