// SPDX-License-Identifier: GPL-2.0
/*
 * An external module built with M= against the GKI loads, logs, refuses a
 * second load and unloads.
 */
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#define MODULE_PATH "/modules/test/test_module/gki_test_module.ko"
#define MODULE_NAME "gki_test_module"

static int load(void)
{
	return gki_load_module(MODULE_PATH, "");
}

static int unload(void)
{
	return gki_unload_module(MODULE_NAME);
}

static int is_listed(void)
{
	char *mods = gki_read_file("/proc/modules", NULL);
	int found;

	if (!mods)
		return -1;
	found = !!gki_find_line(mods, MODULE_NAME " ");
	free(mods);
	return found;
}

FIXTURE(loaded) {
	int loads_before;
};

FIXTURE_SETUP(loaded)
{
	self->loads_before = gki_klog_count(MODULE_NAME ": loaded on ");
	ASSERT_LE(0, self->loads_before);
	ASSERT_EQ(0, load());
}

FIXTURE_TEARDOWN(loaded)
{
	EXPECT_EQ(0, unload());
}

TEST_F(loaded, logs_release_on_load)
{
	char want[128];
	struct utsname u;

	ASSERT_EQ(0, uname(&u));
	/* The CRC proves the module called into the kernel's crc32_le(). */
	snprintf(want, sizeof(want), MODULE_NAME ": loaded on %s, crc32=%08x\n",
		 u.release, gki_crc32_le(~0u, "gki", 3));
	EXPECT_EQ(self->loads_before + 1, gki_klog_count(want));
}

TEST_F(loaded, listed_in_proc_modules)
{
	EXPECT_EQ(1, is_listed());
}

TEST_F(loaded, second_load_is_eexist)
{
	EXPECT_EQ(-EEXIST, load());
}

TEST(unload_logs_and_delists)
{
	int before = gki_klog_count(MODULE_NAME ": unloaded");

	ASSERT_EQ(0, load());
	ASSERT_EQ(0, unload());
	EXPECT_EQ(before + 1, gki_klog_count(MODULE_NAME ": unloaded"));
	EXPECT_EQ(0, is_listed());
	EXPECT_EQ(-ENOENT, unload());
}

TEST_HARNESS_MAIN
