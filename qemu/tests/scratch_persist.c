// SPDX-License-Identifier: GPL-2.0
/*
 * The harness's scratch disk: an ext4 image on virtio-blk mounted at
 * $GKI_SCRATCH, whose content survives a power-off into a second boot when
 * a suite queues itself in $GKI_NEXT_BOOT.
 */
#include <sys/statfs.h>
#include <time.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#define EXT4_MAGIC	0xef53
#define FILE_SIZE	(1024 * 1024)

static const char *scratch(void)
{
	const char *dir = getenv("GKI_SCRATCH");

	return dir ? dir : "/mnt/scratch";
}

static int boot_number(void)
{
	const char *boot = getenv("GKI_BOOT");

	return boot ? atoi(boot) : 1;
}

/* A pattern nobody else writes: xorshift from a per-run seed. */
static void fill(unsigned char *buf, size_t len, unsigned long long seed)
{
	unsigned long long x = seed | 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x;
	}
}

static void path_of(char *buf, size_t len)
{
	snprintf(buf, len, "%s/persist.bin", scratch());
}

TEST(scratch_is_ext4_on_virtio_blk)
{
	struct statfs st;

	ASSERT_EQ(0, statfs(scratch(), &st));
	EXPECT_EQ(EXT4_MAGIC, st.f_type);
	EXPECT_EQ(0, access("/sys/block/vda", F_OK));
}

TEST(data_written_before_power_off)
{
	unsigned char *buf = malloc(FILE_SIZE);
	unsigned long long seed = (unsigned long long)getpid() << 32 | time(NULL);
	char path[256];
	FILE *next;
	int fd;

	if (boot_number() != 1)
		SKIP(return, "writes in the first boot");
	ASSERT_NE(NULL, buf);
	path_of(path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	fill(buf, FILE_SIZE, seed);
	ASSERT_EQ(sizeof(seed), write(fd, &seed, sizeof(seed)));
	ASSERT_EQ(FILE_SIZE, write(fd, buf, FILE_SIZE));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	free(buf);

	next = fopen(getenv("GKI_NEXT_BOOT"), "a");
	ASSERT_NE(NULL, next);
	fprintf(next, "/tests/scratch_persist\n");
	ASSERT_EQ(0, fclose(next));
}

TEST(data_readable_after_power_off)
{
	unsigned char *want = malloc(FILE_SIZE), *got = malloc(FILE_SIZE);
	unsigned long long seed;
	char path[256];
	int fd;

	if (boot_number() == 1)
		SKIP(return, "reads in the second boot");
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, got);
	path_of(path, sizeof(path));
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s was not kept across the power-off", path);
	ASSERT_EQ(sizeof(seed), read(fd, &seed, sizeof(seed)));
	ASSERT_EQ(FILE_SIZE, read(fd, got, FILE_SIZE));
	close(fd);
	fill(want, FILE_SIZE, seed);
	EXPECT_EQ(0, memcmp(want, got, FILE_SIZE));
	free(want);
	free(got);
}

TEST_HARNESS_MAIN
