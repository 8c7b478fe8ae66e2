// SPDX-License-Identifier: GPL-2.0
/*
 * incfs under load: 8 reader processes read random blocks of 4 files while
 * 2 provider processes deliver every block, each in its own random order
 * (so most blocks arrive twice), uncompressed and LZ4.  With a long
 * read_timeout_ms no read may fail and every byte must be right.
 */
#include <sys/mman.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define NFILES		4
#define NBLOCKS		256
#define TOTAL		(NFILES * NBLOCKS)
#define NREADERS	8
#define NPROVIDERS	2
/* Each reader stops when every block was seen, or after this many reads. */
#define MAX_READS	3000
#define TIMEOUT_MS	30000

/* Shared by the readers (MAP_SHARED). */
struct seen {
	unsigned char block[TOTAL];
	int count;		/* blocks seen by any reader */
	int reads[NREADERS];	/* reads done by each reader */
};

FIXTURE(stress) {
	struct incfs_mnt m;
	struct incfs_file files[NFILES];
	struct seen *seen;
};

FIXTURE_SETUP(stress)
{
	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	for (int i = 0; i < NFILES; i++) {
		char name[16];
		/* The last file ends with a partial block. */
		__u64 size = (__u64)NBLOCKS * INCFS_BS - (i == NFILES - 1 ? 1000 : 0);

		snprintf(name, sizeof(name), "file%d", i);
		ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, name, &self->files[i],
					     size, 1000 + i, false)) TH_LOG("%s", incfs_err);
		self->files[i].compressible = i >= 2;
	}
	self->seen = mmap(NULL, sizeof(*self->seen), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->seen);
}

FIXTURE_TEARDOWN_PARENT(stress)
{
	incfs_teardown(&self->m);
}

static pid_t fork_reader(FIXTURE_DATA(stress) *self, int id)
{
	__u64 x = incfs_mix(id + 77) | 1;
	int fds[NFILES], ret = 0, reads;
	pid_t pid = fork();

	if (pid)
		return pid;
	for (int i = 0; i < NFILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "file%d", i);
		fds[i] = open(incfs_path(&self->m, name), O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			ret = -errno;
			incfs_fail("open %s: %s", name, strerror(errno));
			incfs_child_exit("reader", ret);
		}
	}
	for (reads = 0; !ret && reads < MAX_READS; reads++) {
		__u32 g, k, b;

		if (__atomic_load_n(&self->seen->count, __ATOMIC_RELAXED) == TOTAL)
			break;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		g = x % TOTAL;
		k = g / NBLOCKS;
		b = g % NBLOCKS;
		/* Mostly one block; sometimes a read across three. */
		if (reads % 8 == 7)
			ret = incfs_check_pread(fds[k], &self->files[k],
						(__u64)b * INCFS_BS + 1000, 2 * INCFS_BS);
		else
			ret = incfs_check_block(fds[k], &self->files[k], b);
		if (!ret && !__atomic_exchange_n(&self->seen->block[g], 1, __ATOMIC_RELAXED))
			__atomic_add_fetch(&self->seen->count, 1, __ATOMIC_RELAXED);
	}
	self->seen->reads[id] = reads;
	incfs_child_exit("reader", ret);
}

/* Deliver every block of every file in an order from id, 1 to 16 a write. */
static pid_t fork_provider(FIXTURE_DATA(stress) *self, int id)
{
	struct incfs_batch b;
	__u32 order[TOTAL], blocks[16];
	int cmd, ret = 0;
	pid_t pid = fork();

	if (pid)
		return pid;
	for (__u32 i = 0; i < TOTAL; i++)
		order[i] = i;
	for (__u32 i = TOTAL; i > 1; i--) {
		__u32 j = incfs_mix(id * 100003ull + i) % i, t = order[i - 1];

		order[i - 1] = order[j];
		order[j] = t;
	}
	cmd = incfs_open_cmd(&self->m, O_RDWR);
	if (cmd < 0)
		incfs_child_exit("provider", cmd);
	for (__u32 i = 0; !ret && i < TOTAL;) {
		__u32 want = 1 + incfs_mix(id + i) % 16, k = order[i] / NBLOCKS, n = 0;

		/* One write holds blocks of one file. */
		while (n < want && i < TOTAL && order[i] / NBLOCKS == k)
			blocks[n++] = order[i++] % NBLOCKS;
		ret = incfs_batch_init(&b, &self->files[k], blocks, n,
				       self->files[k].compressible ? INCFS_SEND_LZ4 :
				       INCFS_SEND_NONE);
		if (!ret) {
			ret = incfs_write_records(cmd, b.rec, n);
			incfs_batch_free(&b);
		}
	}
	incfs_child_exit("provider", ret);
}

TEST_F_TIMEOUT(stress, readers_and_providers, 180)
{
	pid_t readers[NREADERS], providers[NPROVIDERS];
	long long t0 = incfs_now_ms();
	int ret, total = 0;

	for (int i = 0; i < NREADERS; i++) {
		readers[i] = fork_reader(self, i);
		ASSERT_LT(0, readers[i]);
	}
	for (int i = 0; i < NPROVIDERS; i++) {
		providers[i] = fork_provider(self, i);
		ASSERT_LT(0, providers[i]);
	}
	for (int i = 0; i < NPROVIDERS; i++) {
		ret = incfs_wait_child(providers[i], 120000);
		EXPECT_EQ(0, ret) TH_LOG("provider %d: %d (%s)", i, ret,
					 incfs_strerr(ret));
	}
	for (int i = 0; i < NREADERS; i++) {
		ret = incfs_wait_child(readers[i], 120000);
		EXPECT_EQ(0, ret) TH_LOG("reader %d: %d (%s)", i, ret,
					 incfs_strerr(ret));
		total += self->seen->reads[i];
	}
	TH_LOG("%d reads saw %d of %d blocks in %lld ms", total, self->seen->count, TOTAL,
	       incfs_now_ms() - t0);
	EXPECT_LT(0, self->seen->count);
	for (int i = 0; i < NFILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "file%d", i);
		EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, name), &self->files[i]))
			TH_LOG("%s", incfs_err);
	}
}

TEST_HARNESS_MAIN
