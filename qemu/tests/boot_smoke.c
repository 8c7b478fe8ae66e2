// SPDX-License-Identifier: GPL-2.0
/*
 * Boot smoke test: the guest runs the kernel that was built, with the
 * configuration the GKI promises.
 */
#include <sys/utsname.h>

#include "gki_test.h"
#include "kselftest_harness.h"

static char *running_config(void)
{
	return gki_command_output("zcat /proc/config.gz");
}

static void assert_config_line(struct __test_metadata *_metadata, const char *line)
{
	char *config = running_config();

	ASSERT_NE(NULL, config);
	EXPECT_NE(NULL, gki_find_line(config, line)) {
		TH_LOG("%s missing from /proc/config.gz", line);
	}
	free(config);
}

TEST(release_matches_build)
{
	struct utsname u;
	char *want = gki_read_file("/etc/gki/kernel.release", NULL);

	ASSERT_NE(NULL, want);
	want[strcspn(want, "\n")] = '\0';
	ASSERT_EQ(0, uname(&u));
	EXPECT_STREQ(want, u.release);
	free(want);
}

TEST(config_has_anon_vma_name)
{
	assert_config_line(_metadata, "CONFIG_ANON_VMA_NAME=y\n");
}

TEST(config_has_modversions)
{
	assert_config_line(_metadata, "CONFIG_MODVERSIONS=y\n");
}

TEST(variant_matches_config)
{
	char *variant = gki_read_file("/etc/gki/variant", NULL);
	char *config = running_config();
	int debug;

	ASSERT_NE(NULL, variant);
	ASSERT_NE(NULL, config);
	debug = gki_find_line(config, "CONFIG_KASAN=y\n") &&
		gki_find_line(config, "CONFIG_PROVE_LOCKING=y\n") &&
		gki_find_line(config, "CONFIG_UBSAN=y\n");
	EXPECT_EQ(!strcmp(variant, "debug\n"), debug);
	free(variant);
	free(config);
}

/*
 * The release is the GKI at real size: a sample of the frameworks vendors'
 * modules call into is built in, and the GKI modules are modules.  (The
 * debug variant is the small configuration: BUILD.md, "Variants".)
 */
TEST(release_is_the_generic_gki)
{
	static const char *const lines[] = {
		"CONFIG_BPF_EVENTS=y\n", "CONFIG_CGROUP_BPF=y\n", "CONFIG_SECURITY_SELINUX=y\n",
		"CONFIG_DRM=y\n", "CONFIG_SND_SOC=y\n", "CONFIG_USB_CONFIGFS=y\n",
		"CONFIG_IIO=y\n", "CONFIG_F2FS_FS=y\n", "CONFIG_CFG80211=m\n",
		"CONFIG_ZRAM=m\n",
	};
	char *variant = gki_read_file("/etc/gki/variant", NULL);
	unsigned int i;

	ASSERT_NE(NULL, variant);
	if (strcmp(variant, "release\n")) {
		free(variant);
		SKIP(return, "the debug variant is the small configuration, without CONFIG_DRM, CONFIG_SND_SOC or CONFIG_IIO");
	}
	free(variant);
	for (i = 0; i < ARRAY_SIZE(lines); i++)
		assert_config_line(_metadata, lines[i]);
}

TEST(two_cpus_online)
{
	/* Concurrency tests rely on SMP. */
	EXPECT_EQ(2, sysconf(_SC_NPROCESSORS_ONLN));
}

TEST_HARNESS_MAIN
