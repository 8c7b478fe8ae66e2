// SPDX-License-Identifier: GPL-2.0
/*
 * incfs over the life of the module and of the machine: the module cannot
 * be unloaded while mounted; after unmount, rmmod and insmod the backing
 * file mounts with its names and data; and the same across a power-off,
 * with the backing file on the ext4 scratch disk (boot 1 writes and queues
 * this suite for boot 2, which checks).
 */
#include <sys/statfs.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TIMEOUT_MS	200
#define PERSIST_DIR	"incfs-persist"

FIXTURE(life) {
	struct incfs_mnt m;
};

FIXTURE_SETUP(life)
{
	memset(&self->m, 0, sizeof(self->m));
	self->m.cmd = -1;
	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(life)
{
	incfs_teardown(&self->m);
}

/* The incfs lines of /proc/mounts, for failure messages. */
static void log_mounts(struct __test_metadata *_metadata)
{
	char *mounts = gki_read_file("/proc/mounts", NULL), *line, *save;

	if (!mounts)
		return;
	for (line = strtok_r(mounts, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, INCFS_NAME))
			TH_LOG("mounted: %s", line);
	free(mounts);
}

TEST_F(life, rmmod_while_mounted_fails)
{
	struct incfs_file f, g;
	int ret;

	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &f, 3 * INCFS_BS + 3, 1,
				     true)) TH_LOG("%s", incfs_err);
	ret = incfs_unload_module();
	EXPECT_TRUE(ret == -EBUSY || ret == -EAGAIN)
		TH_LOG("delete_module while mounted: %s", ret ? strerror(-ret) : "succeeded");
	ASSERT_TRUE(incfs_module_loaded());
	/* The mount works on, .cmd open or not. */
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &f)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "g", &g, 5000, 2, true))
		TH_LOG("%s", incfs_err);
	close(self->m.cmd);
	self->m.cmd = -1;
	ret = incfs_unload_module();
	EXPECT_TRUE(ret == -EBUSY || ret == -EAGAIN)
		TH_LOG("delete_module while mounted: %s", ret ? strerror(-ret) : "succeeded");
	ASSERT_TRUE(incfs_module_loaded());
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "g"), &g)) TH_LOG("%s", incfs_err);
}

TEST_F(life, rmmod_insmod_keeps_data)
{
	struct incfs_tree t;
	char *version;
	int ret;

	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, 200)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	ret = incfs_unload_module();
	if (ret)
		log_mounts(_metadata);
	ASSERT_EQ(0, ret) TH_LOG("delete_module after unmount: %s", strerror(-ret));
	EXPECT_FALSE(incfs_module_loaded());
	EXPECT_NE(0, access(INCFS_VERSION_FILE, F_OK));

	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
	version = gki_read_file(INCFS_VERSION_FILE, NULL);
	EXPECT_NE(NULL, version);
	if (version) {
		EXPECT_STREQ("1\n", version);
	}
	free(version);
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, false)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_tree_complete(&t, self->m.cmd)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, true)) TH_LOG("%s", incfs_err);
}

/* ===== across a power-off ===== */

/*
 * The persistent mount: backing file and mount point under
 * $GKI_SCRATCH/incfs-persist, kept by teardown (m->top stays empty).
 */
static int persist_paths(struct incfs_mnt *m, char *tree, size_t len)
{
	char top[128];
	struct statfs st;

	snprintf(top, sizeof(top), "%s/" PERSIST_DIR, incfs_scratch());
	snprintf(m->dir, sizeof(m->dir), "%s/mnt", top);
	snprintf(m->backing, sizeof(m->backing), "%s/backing.img", top);
	snprintf(tree, len, "%s/tree.bin", top);
	if (statfs(incfs_scratch(), &st) || st.f_type != INCFS_EXT4_MAGIC)
		return -ENODEV;
	if (mkdir(top, 0755) && errno != EEXIST)
		return -errno;
	if (mkdir(m->dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

TEST_F(life, work_after_power_off_boot1_writes)
{
	struct incfs_tree t;
	char tree[192];
	FILE *next;
	int fd;

	if (incfs_boot_number() != 1)
		SKIP(return, "writes in the first boot");
	if (persist_paths(&self->m, tree, sizeof(tree)))
		SKIP(return, "%s is not an ext4 mount", incfs_scratch());
	ASSERT_NE(NULL, getenv("GKI_NEXT_BOOT"));
	unlink(self->m.backing);
	unlink(tree);
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_tree_build(&t, self->m.cmd, (__u64)time(NULL) << 16))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, false)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);

	/* What boot 2 should find. */
	fd = open(tree, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(t), write(fd, &t, sizeof(t)));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	sync();

	next = fopen(getenv("GKI_NEXT_BOOT"), "a");
	ASSERT_NE(NULL, next);
	fprintf(next, "/tests/incfs_lifetime\n");
	ASSERT_EQ(0, fclose(next));
}

TEST_F(life, work_after_power_off_boot2_checks)
{
	struct incfs_tree t;
	char tree[192];
	int fd;

	if (incfs_boot_number() == 1)
		SKIP(return, "checks in the second boot");
	ASSERT_EQ(0, persist_paths(&self->m, tree, sizeof(tree)))
		TH_LOG("%s is not an ext4 mount", incfs_scratch());
	fd = open(tree, O_RDONLY);
	ASSERT_LE(0, fd) TH_LOG("%s was not kept across the power-off", tree);
	ASSERT_EQ(sizeof(t), read(fd, &t, sizeof(t)));
	close(fd);
	ASSERT_EQ(0, incfs_mount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, false)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_tree_complete(&t, self->m.cmd)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, true)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_tree_check(&t, &self->m, true)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
}

TEST_HARNESS_MAIN
