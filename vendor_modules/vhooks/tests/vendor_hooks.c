// SPDX-License-Identifier: GPL-2.0
/*
 * Vendor hooks, end to end: the example vendor modules attach to the GKI's
 * hooks and change what user space sees.  A normal hook fires with the
 * call site's arguments and detaches at rmmod; a restricted hook applies
 * its module's policy, pins the module, and refuses a second attachment,
 * from a module or from BPF.
 *
 * vh_nice stays loaded once this suite ran (that is the point of a
 * restricted hook); its default floor leaves every nice value alone.
 */
#include <linux/bpf.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#define MODDIR		"/modules/vendor/vhooks/"
#define PARAMS		"/sys/module/%s/parameters/%s"
#define MEMINFO_LINE	"VendorMmapCalls:"
#define NICE_FLOOR	-5

static int param_read(const char *mod, const char *name, long *val)
{
	char path[256], *text, *end;

	snprintf(path, sizeof(path), PARAMS, mod, name);
	text = gki_read_file(path, NULL);
	if (!text)
		return -errno;
	*val = strtol(text, &end, 0);
	free(text);
	return end == text ? -EINVAL : 0;
}

static int param_write(const char *mod, const char *name, long val)
{
	char path[256], text[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), PARAMS, mod, name);
	n = snprintf(text, sizeof(text), "%ld\n", val);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* The VendorMmapCalls count from /proc/meminfo; -1 when the line is absent. */
static long meminfo_mmap_calls(int *lines)
{
	char *text = gki_read_file("/proc/meminfo", NULL);
	const char *p;
	long count = -1;

	*lines = 0;
	if (!text)
		return -2;
	for (p = text; (p = strstr(p, MEMINFO_LINE)); p += strlen(MEMINFO_LINE)) {
		count = strtol(p + strlen(MEMINFO_LINE), NULL, 10);
		(*lines)++;
	}
	free(text);
	return count;
}

/* ===== normal hooks: vh_meminfo ===== */

FIXTURE(meminfo) {
	int unused;
};

FIXTURE_SETUP(meminfo)
{
	if (gki_module_loaded("vh_meminfo"))
		ASSERT_EQ(0, gki_unload_module("vh_meminfo"));
	ASSERT_EQ(0, gki_load_module(MODDIR "vh_meminfo.ko", ""));
}

FIXTURE_TEARDOWN(meminfo)
{
	if (gki_module_loaded("vh_meminfo"))
		EXPECT_EQ(0, gki_unload_module("vh_meminfo"));
}

TEST_F(meminfo, adds_one_line_to_proc_meminfo)
{
	int lines;

	EXPECT_LE(0, meminfo_mmap_calls(&lines));
	EXPECT_EQ(1, lines);
}

TEST_F(meminfo, mmap_hook_counts_each_mapping)
{
	long before, after;
	int lines, i;
	void *p[4];

	before = meminfo_mmap_calls(&lines);
	ASSERT_LE(0, before);
	for (i = 0; i < 4; i++) {
		p[i] = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, p[i]);
	}
	after = meminfo_mmap_calls(&lines);
	for (i = 0; i < 4; i++)
		munmap(p[i], 4096);
	/* At least ours; reading /proc/meminfo may map memory of its own. */
	EXPECT_LE(before + 4, after);
}

TEST_F(meminfo, mmap_hook_gets_the_merged_vma_and_the_address)
{
	const long pg = 4096;
	long addr, start, end;
	char *p;

	ASSERT_EQ(0, param_write("vh_meminfo", "watch_pid", getpid()));
	/*
	 * Reserve three pages, map the first, then the second beside it: the
	 * second mapping merges into the first one's VMA, so the hook gets
	 * an address that is not its VMA's start.
	 */
	p = mmap(NULL, 3 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(p, mmap(p, pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	ASSERT_EQ(p + pg, mmap(p + pg, pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	ASSERT_EQ(0, param_read("vh_meminfo", "last_addr", &addr));
	ASSERT_EQ(0, param_read("vh_meminfo", "last_vma_start", &start));
	ASSERT_EQ(0, param_read("vh_meminfo", "last_vma_end", &end));
	EXPECT_EQ(0, param_write("vh_meminfo", "watch_pid", 0));
	munmap(p, 3 * pg);
	EXPECT_EQ((long)(p + pg), addr);
	EXPECT_EQ((long)p, start);
	EXPECT_EQ((long)(p + 2 * pg), end);
}

TEST_F(meminfo, rmmod_detaches_the_hooks)
{
	int lines;
	void *p;

	ASSERT_EQ(0, gki_unload_module("vh_meminfo"));
	EXPECT_EQ(-1, meminfo_mmap_calls(&lines));
	EXPECT_EQ(0, lines);
	/* The call site still runs, now with nobody attached. */
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 4096);
	/* Attach and detach freely: it loads again. */
	ASSERT_EQ(0, gki_load_module(MODDIR "vh_meminfo.ko", ""));
	EXPECT_LE(0, meminfo_mmap_calls(&lines));
	EXPECT_EQ(1, lines);
}

/* ===== a restricted hook: vh_nice ===== */

FIXTURE(nice) {
	int nice_before;
};

FIXTURE_SETUP(nice)
{
	int ret = gki_load_module(MODDIR "vh_nice.ko", "");

	/* Loaded by an earlier test of this run, and never unloaded. */
	ASSERT_TRUE(ret == 0 || ret == -EEXIST) TH_LOG("finit_module: %s", strerror(-ret));
	errno = 0;
	self->nice_before = getpriority(PRIO_PROCESS, 0);
	ASSERT_EQ(0, errno);
}

FIXTURE_TEARDOWN(nice)
{
	EXPECT_EQ(0, param_write("vh_nice", "floor", -20));
	EXPECT_EQ(0, setpriority(PRIO_PROCESS, 0, self->nice_before));
}

TEST_F(nice, attach_is_logged)
{
	const char *msg = "android_rvh_set_user_nice: attached by vh_nice, which can no longer be unloaded";

	EXPECT_EQ(1, gki_klog_count(msg));
}

TEST_F(nice, default_floor_changes_nothing)
{
	ASSERT_EQ(0, setpriority(PRIO_PROCESS, 0, -15));
	EXPECT_EQ(-15, getpriority(PRIO_PROCESS, 0));
}

TEST_F(nice, floor_raises_a_lower_nice_value)
{
	long pid, requested, given;

	ASSERT_EQ(0, param_write("vh_nice", "floor", NICE_FLOOR));
	ASSERT_EQ(0, setpriority(PRIO_PROCESS, 0, -10));
	EXPECT_EQ(NICE_FLOOR, getpriority(PRIO_PROCESS, 0));
	/* The probe saw this task and the value asked for. */
	ASSERT_EQ(0, param_read("vh_nice", "last_pid", &pid));
	ASSERT_EQ(0, param_read("vh_nice", "last_requested", &requested));
	ASSERT_EQ(0, param_read("vh_nice", "last_given", &given));
	EXPECT_EQ(getpid(), pid);
	EXPECT_EQ(-10, requested);
	EXPECT_EQ(NICE_FLOOR, given);
	/* Above the floor, a value is kept. */
	ASSERT_EQ(0, setpriority(PRIO_PROCESS, 0, 3));
	EXPECT_EQ(3, getpriority(PRIO_PROCESS, 0));
}

/* The use count /proc/modules gives a module; -1 when it is not listed. */
static int module_users(const char *name)
{
	char *mods = gki_read_file("/proc/modules", NULL), prefix[64];
	const char *line;
	int users = -1;

	if (!mods)
		return -1;
	snprintf(prefix, sizeof(prefix), "%s ", name);
	line = gki_find_line(mods, prefix);
	if (line && sscanf(line + strlen(prefix), "%*u %d", &users) != 1)
		users = -1;
	free(mods);
	return users;
}

TEST_F(nice, module_cannot_be_unloaded)
{
	/* The attachment holds a reference: rmmod sees a module in use. */
	EXPECT_EQ(1, module_users("vh_nice"));
	EXPECT_EQ(-EWOULDBLOCK, gki_unload_module("vh_nice"));
	EXPECT_TRUE(gki_module_loaded("vh_nice"));
	/* And its policy still applies. */
	ASSERT_EQ(0, param_write("vh_nice", "floor", NICE_FLOOR));
	ASSERT_EQ(0, setpriority(PRIO_PROCESS, 0, -12));
	EXPECT_EQ(NICE_FLOOR, getpriority(PRIO_PROCESS, 0));
}

TEST_F(nice, second_attachment_is_ebusy)
{
	EXPECT_EQ(-EBUSY, gki_load_module(MODDIR "vh_rvh_second.ko", ""));
	EXPECT_FALSE(gki_module_loaded("vh_rvh_second"));
	EXPECT_LE(1, gki_klog_count("vh_rvh_second: attach android_rvh_set_user_nice: -16"));
	/* The first probe keeps the hook. */
	ASSERT_EQ(0, param_write("vh_nice", "floor", NICE_FLOOR));
	ASSERT_EQ(0, setpriority(PRIO_PROCESS, 0, -7));
	EXPECT_EQ(NICE_FLOOR, getpriority(PRIO_PROCESS, 0));
}

/* ===== BPF: raw tracepoints on normal hooks, never on restricted ones ===== */

/* A raw-tracepoint program that returns 0; its fd, or -1 with errno. */
static int bpf_load_raw_tp_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr = {
		.prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
		.insns = (unsigned long)insns,
		.insn_cnt = ARRAY_SIZE(insns),
		.license = (unsigned long)"GPL",
	};

	return syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

/* Attaches prog to the tracepoint name; a link fd, or -1 with errno. */
static int bpf_raw_tp_open(const char *name, int prog)
{
	union bpf_attr attr = {
		.raw_tracepoint.name = (unsigned long)name,
		.raw_tracepoint.prog_fd = prog,
	};

	return syscall(__NR_bpf, BPF_RAW_TRACEPOINT_OPEN, &attr, sizeof(attr));
}

FIXTURE(bpf) {
	int prog;
};

FIXTURE_SETUP(bpf)
{
	char *config = gki_command_output("zcat /proc/config.gz");
	bool raw_tp = config && gki_find_line(config, "CONFIG_BPF_EVENTS=y\n");

	free(config);
	self->prog = -1;
	/* The release GKI has them; the small debug kernel has no BPF. */
	if (!raw_tp)
		SKIP(return, "no BPF raw tracepoints in this kernel (CONFIG_BPF_EVENTS)");
	self->prog = bpf_load_raw_tp_prog();
	ASSERT_LE(0, self->prog) TH_LOG("BPF_PROG_LOAD: %s", strerror(errno));
}

FIXTURE_TEARDOWN(bpf)
{
	if (self->prog >= 0)
		close(self->prog);
}

TEST_F(bpf, normal_hook_takes_a_raw_tracepoint_program)
{
	int link = bpf_raw_tp_open("android_vh_mmap_region", self->prog);

	ASSERT_LE(0, link) TH_LOG("BPF_RAW_TRACEPOINT_OPEN: %s", strerror(errno));
	close(link);
}

/*
 * A second probe on a restricted hook, attached through the ordinary
 * tracepoint path, would replace the probe array the hook reads without
 * RCU: the hook has no raw-tracepoint map, so BPF cannot find it.
 */
TEST_F(bpf, restricted_hook_has_no_raw_tracepoint)
{
	int link = bpf_raw_tp_open("android_rvh_set_user_nice", self->prog);

	EXPECT_EQ(-1, link);
	EXPECT_EQ(ENOENT, errno);
	if (link >= 0)
		close(link);
}

TEST_HARNESS_MAIN
