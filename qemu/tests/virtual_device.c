// SPDX-License-Identifier: GPL-2.0
/*
 * The virtual device (vendor_modules/virtual_device/): the drivers of the
 * virt machine's devices, built out of tree from the kernel tree's own
 * sources, are loaded by /init in the order of their modules.load, and
 * each device QEMU attaches is probed by its driver.  The release builds
 * them; a variant whose configuration cannot (the small debug kernel, no
 * DRM) ships none, and every case skips there saying so.
 */
#include <dirent.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <drm/drm.h>
#include <linux/rtc.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#define SET		"vendor/virtual_device/"
#define LOAD_ORDER	"/modules/" SET "modules.load"
#define ARPHRD_ETHER	1

/* The name of the driver bound to the device of a sysfs class entry. */
static int driver_of(const char *entry, char *name, size_t size)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	char *base;

	snprintf(path, sizeof(path), "%s/device/driver", entry);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -1;
	target[n] = '\0';
	base = strrchr(target, '/');
	snprintf(name, size, "%s", base ? base + 1 : target);
	return 0;
}

/*
 * The first entry of a sysfs class whose name starts with prefix and whose
 * device the named driver drives, as a path in found; 0, or -1 when none.
 */
static int class_entry(const char *class, const char *prefix, const char *driver,
		       char *found, size_t size)
{
	char entry[PATH_MAX], name[NAME_MAX + 1];
	DIR *dir = opendir(class);
	struct dirent *d;
	int ret = -1;

	if (!dir)
		return -1;
	while (ret && (d = readdir(dir))) {
		if (strncmp(d->d_name, prefix, strlen(prefix)))
			continue;
		snprintf(entry, sizeof(entry), "%s/%s", class, d->d_name);
		if (!driver_of(entry, name, sizeof(name)) && !strcmp(name, driver)) {
			snprintf(found, size, "%s", entry);
			ret = 0;
		}
	}
	closedir(dir);
	return ret;
}

/* The DRM driver name of a card node, as DRM_IOCTL_VERSION reports it. */
static int drm_driver(const char *node, char *name, size_t size)
{
	struct drm_version v = { .name = name, .name_len = size - 1 };
	int fd = open(node, O_RDWR | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -1;
	memset(name, 0, size);
	ret = ioctl(fd, DRM_IOCTL_VERSION, &v);
	close(fd);
	return ret;
}

/* The module name of a file name: "virtio-gpu.ko" is "virtio_gpu". */
static void module_name(const char *file, char *name, size_t size)
{
	size_t i;

	snprintf(name, size, "%s", file);
	for (i = 0; name[i]; i++)
		if (name[i] == '-')
			name[i] = '_';
	if (i > 3 && !strcmp(name + i - 3, ".ko"))
		name[i - 3] = '\0';
}

FIXTURE(vdev) {
	char *order;	/* modules.load */
};

/*
 * Options of vendor_modules/virtual_device/requires.config that stand for
 * its drivers' subsystems: a kernel without one of them cannot have the
 * virtual device.
 */
static const char *const needs[] = { "CONFIG_DRM", "CONFIG_DRM_KMS_HELPER", "CONFIG_DIMLIB" };

/* Those of needs[] this kernel lacks, named in @out ("" when none). */
static void lacking(char *out, size_t size)
{
	char *config = gki_command_output("zcat /proc/config.gz");
	char want[64];

	out[0] = '\0';
	for (size_t i = 0; config && i < ARRAY_SIZE(needs); i++) {
		snprintf(want, sizeof(want), "%s=y\n", needs[i]);
		if (!gki_find_line(config, want))
			snprintf(out + strlen(out), size - strlen(out), "%s%s",
				 out[0] ? ", " : "", needs[i]);
	}
	free(config);
}

FIXTURE_SETUP(vdev)
{
	char *kernel = gki_read_file("/etc/gki/variant", NULL);
	char *built = gki_read_file("/etc/gki/modules", NULL);
	char lacks[128];
	int release, shipped;

	ASSERT_NE(NULL, kernel);
	ASSERT_NE(NULL, built);
	release = !strcmp(kernel, "release\n");
	shipped = !!gki_find_line(built, SET);
	free(kernel);
	free(built);
	self->order = NULL;
	if (!shipped && !release) {
		/* A kernel with what the drivers need must ship them. */
		lacking(lacks, sizeof(lacks));
		ASSERT_STRNE("", lacks)
			TH_LOG("no virtual device modules, though this kernel has %s and the rest",
			       needs[0]);
		SKIP(return, "the virtual device is the release's: this kernel lacks %s", lacks);
	}
	ASSERT_TRUE(shipped)
		TH_LOG("the release build shipped none of the virtual device's modules");
	self->order = gki_read_file(LOAD_ORDER, NULL);
	ASSERT_NE(NULL, self->order) TH_LOG("%s is missing", LOAD_ORDER);
}

FIXTURE_TEARDOWN(vdev)
{
	free(self->order);
}

/*
 * /proc/modules lists the most recently loaded module first: each module of
 * modules.load is there, below the one listed after it.
 */
TEST_F(vdev, modules_loaded_in_order)
{
	char *mods = gki_read_file("/proc/modules", NULL);
	char file[NAME_MAX + 1], want[NAME_MAX + 2];
	const char *prev_at = NULL, *at, *line;
	size_t n;

	ASSERT_NE(NULL, mods);
	for (line = self->order; *line; line += n + (line[n] == '\n')) {
		n = strcspn(line, "\n");
		if (!n || n > NAME_MAX)
			continue;
		snprintf(file, sizeof(file), "%.*s", (int)n, line);
		module_name(file, want, sizeof(want) - 1);
		strcat(want, " ");
		at = gki_find_line(mods, want);
		EXPECT_NE(NULL, at) TH_LOG("%s is not loaded", file);
		if (at && prev_at)
			EXPECT_LT(at, prev_at)
				TH_LOG("%s loaded before the module listed before it", file);
		if (at)
			prev_at = at;
	}
	free(mods);
}

TEST_F(vdev, network_interface_on_virtio_net)
{
	char entry[PATH_MAX], type_path[PATH_MAX + 8];
	char *type;

	ASSERT_EQ(0, class_entry("/sys/class/net", "", "virtio_net", entry, sizeof(entry)))
		TH_LOG("no network interface is driven by virtio_net");
	snprintf(type_path, sizeof(type_path), "%s/type", entry);
	type = gki_read_file(type_path, NULL);
	ASSERT_NE(NULL, type);
	EXPECT_EQ(ARPHRD_ETHER, atoi(type)) TH_LOG("%s is not an Ethernet interface", entry);
	free(type);
}

TEST_F(vdev, gpu_is_card0_on_virtio_gpu)
{
	char name[64];

	ASSERT_EQ(0, access("/dev/dri/card0", F_OK)) TH_LOG("no /dev/dri/card0");
	ASSERT_EQ(0, drm_driver("/dev/dri/card0", name, sizeof(name)))
		TH_LOG("DRM_IOCTL_VERSION on /dev/dri/card0: %s", strerror(errno));
	EXPECT_STREQ("virtio_gpu", name);
}

TEST_F(vdev, input_device_on_virtio_input)
{
	char entry[PATH_MAX], node[PATH_MAX];
	struct dirent *d;
	struct stat st;
	DIR *dir;
	int events = 0;

	ASSERT_EQ(0, class_entry("/sys/class/input", "input", "virtio_input", entry,
				 sizeof(entry)))
		TH_LOG("no input device is driven by virtio_input");
	/* Its event handler's node, which user space reads keys from. */
	dir = opendir(entry);
	ASSERT_NE(NULL, dir);
	while ((d = readdir(dir))) {
		if (strncmp(d->d_name, "event", 5))
			continue;
		snprintf(node, sizeof(node), "/dev/input/%s", d->d_name);
		EXPECT_TRUE(!stat(node, &st) && S_ISCHR(st.st_mode))
			TH_LOG("%s is not a character device", node);
		events++;
	}
	closedir(dir);
	EXPECT_LE(1, events) TH_LOG("%s has no event node", entry);
}

TEST_F(vdev, hwrng_is_virtio_rng)
{
	char *current = gki_read_file("/sys/class/misc/hw_random/rng_current", NULL);
	char *available = gki_read_file("/sys/class/misc/hw_random/rng_available", NULL);
	unsigned char buf[16];
	size_t got = 0;
	ssize_t n;
	int fd;

	ASSERT_NE(NULL, current);
	ASSERT_NE(NULL, available);
	EXPECT_EQ(0, strncmp(current, "virtio_rng.", 11))
		TH_LOG("rng_current is %s(rng_available: %s)", current, available);
	free(current);
	free(available);
	fd = open("/dev/hwrng", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("/dev/hwrng: %s", strerror(errno));
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += n;
	close(fd);
	EXPECT_EQ(sizeof(buf), got) TH_LOG("read %zu bytes from /dev/hwrng", got);
}

TEST_F(vdev, rtc0_on_pl031_reads_a_sane_time)
{
	struct rtc_time tm;
	char name[64];
	int fd;

	ASSERT_EQ(0, driver_of("/sys/class/rtc/rtc0", name, sizeof(name)))
		TH_LOG("no /sys/class/rtc/rtc0 with a driver");
	EXPECT_STREQ("rtc-pl031", name);
	fd = open("/dev/rtc0", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("/dev/rtc0: %s", strerror(errno));
	memset(&tm, 0, sizeof(tm));
	ASSERT_EQ(0, ioctl(fd, RTC_RD_TIME, &tm)) TH_LOG("RTC_RD_TIME: %s", strerror(errno));
	close(fd);
	/* QEMU starts the PL031 at the host's time. */
	EXPECT_LE(2024, tm.tm_year + 1900);
	EXPECT_GE(tm.tm_mon, 0);
	EXPECT_LE(tm.tm_mon, 11);
	EXPECT_GE(tm.tm_mday, 1);
	EXPECT_LE(tm.tm_mday, 31);
}

TEST_F(vdev, console_port_on_virtio_console)
{
	char entry[PATH_MAX];
	struct stat st;

	ASSERT_EQ(0, class_entry("/sys/class/virtio-ports", "vport", "virtio_console", entry,
				 sizeof(entry)))
		TH_LOG("no virtio console port");
	/* QEMU's virtconsole port is a console: the hvc tty. */
	EXPECT_TRUE(!stat("/dev/hvc0", &st) && S_ISCHR(st.st_mode))
		TH_LOG("/dev/hvc0 is not a character device");
}

TEST_F(vdev, wifi_radio_from_mac80211_hwsim)
{
	char phy[PATH_MAX], wlan[PATH_MAX], link[PATH_MAX + 16];

	ASSERT_EQ(0, class_entry("/sys/class/ieee80211", "phy", "mac80211_hwsim", phy,
				 sizeof(phy)))
		TH_LOG("no wireless phy is driven by mac80211_hwsim");
	/* Its station interface: a netdev of the phy. */
	ASSERT_EQ(0, class_entry("/sys/class/net", "wlan", "mac80211_hwsim", wlan,
				 sizeof(wlan)))
		TH_LOG("no wlan interface of mac80211_hwsim");
	snprintf(link, sizeof(link), "%s/phy80211", wlan);
	EXPECT_EQ(0, access(link, F_OK)) TH_LOG("%s: %s", link, strerror(errno));
}

TEST_F(vdev, vkms_card)
{
	char node[32], name[64];
	int card, found = 0;

	if (!strstr(self->order, "vkms.ko"))
		SKIP(return, "vkms is not in the virtual device's modules.load");
	for (card = 0; card < 8 && !found; card++) {
		snprintf(node, sizeof(node), "/dev/dri/card%d", card);
		found = !drm_driver(node, name, sizeof(name)) && !strcmp(name, "vkms");
	}
	EXPECT_TRUE(found) TH_LOG("no /dev/dri/card* is vkms'");
}

TEST_HARNESS_MAIN
