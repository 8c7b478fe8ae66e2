// SPDX-License-Identifier: GPL-2.0
/*
 * What the GKI's vendor hooks cost on the hot paths they sit on:
 *
 *  - read() of /proc/meminfo: android_vh_meminfo_proc_show;
 *  - mmap() + munmap() of one anonymous page: android_vh_mmap_region;
 *  - setpriority(PRIO_PROCESS, 0, n), n alternating between two values so
 *    that every call changes the nice value: android_rvh_set_user_nice.
 *
 * Each path is timed in passes of a few tenths of a second under QEMU TCG,
 * the three paths interleaved, and reported as the median ns per call:
 * first with no vendor module attached, then with vh_empty.ko's empty
 * probes on all three hooks ('<figure>_attached', compared with the
 * first).  The restricted hook keeps vh_empty attached until reboot, so
 * the attached passes come last.  `./build/gki bench --against-unhooked`
 * boots this program on the GKI and on the same kernel built without the
 * call sites, alternately, and compares the two (BUILD.md).
 *
 * Any failure ends the program with a message and exit status 1; a
 * figure is only reported when every call of every pass succeeded.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gki_bench.h"
#include "gki_test.h"

#define PASSES		7
#define MODDIR		"/modules/vendor/vhooks/"
#define MEMINFO_HEAD	"MemTotal:"
/* Two nice values a process may switch between without privileges. */
#define NICE_A		1
#define NICE_B		2
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct site {
	const char *name;	/* the figure: ns per call */
	long calls;		/* per pass: about 0.3 s under TCG; even */
	void (*run)(long calls);
	double ns[PASSES];
};

static int meminfo_fd = -1;
static char meminfo_buf[16384];
static size_t page_size;

static void die(const char *what)
{
	fprintf(stderr, "vh_cost: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *what)
{
	fprintf(stderr, "vh_cost: %s\n", what);
	exit(1);
}

/* One meminfo_proc_show() per call: a seq_file read at offset 0. */
static void read_meminfo(long calls)
{
	for (long i = 0; i < calls; i++) {
		ssize_t n = pread(meminfo_fd, meminfo_buf, sizeof(meminfo_buf), 0);

		if (n < 0)
			die("read /proc/meminfo");
		if (n < (ssize_t)strlen(MEMINFO_HEAD) ||
		    memcmp(meminfo_buf, MEMINFO_HEAD, strlen(MEMINFO_HEAD)))
			fail("read /proc/meminfo: it does not start with " MEMINFO_HEAD);
	}
}

static void map_unmap(long calls)
{
	for (long i = 0; i < calls; i++) {
		void *p = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			die("mmap");
		if (munmap(p, page_size))
			die("munmap");
	}
}

/*
 * The nice value is NICE_B before a pass and, calls being even, after it:
 * every call changes it, so set_user_nice() runs to the end each time.
 */
static void renice(long calls)
{
	for (long i = 0; i < calls; i++)
		if (setpriority(PRIO_PROCESS, 0, i & 1 ? NICE_B : NICE_A))
			die("setpriority");
}

static struct site sites[] = {
	{ .name = "meminfo_read_ns", .calls = 10000, .run = read_meminfo },
	{ .name = "mmap_munmap_ns", .calls = 8000, .run = map_unmap },
	{ .name = "setpriority_ns", .calls = 30000, .run = renice },
};

#define NR_SITES	ARRAY_SIZE(sites)

static double ns_per_call(const struct site *s)
{
	double t = gki_now_ns();

	s->run(s->calls);
	return (gki_now_ns() - t) / s->calls;
}

/* PASSES passes of each path, interleaved; one figure per path. */
static void measure(int attached)
{
	char name[64], line[256];

	for (int p = 0; p < PASSES; p++)
		for (size_t i = 0; i < NR_SITES; i++)
			sites[i].ns[p] = ns_per_call(&sites[i]);
	for (size_t i = 0; i < NR_SITES; i++) {
		struct site *s = &sites[i];
		int len = snprintf(line, sizeof(line), "# %s%s passes (ns):", s->name,
				   attached ? "_attached" : "");

		for (int p = 0; p < PASSES && len < (int)sizeof(line); p++)
			len += snprintf(line + len, sizeof(line) - len, " %.1f", s->ns[p]);
		printf("%s\n", line);
		snprintf(name, sizeof(name), "%s_attached", s->name);
		gki_bench_report(attached ? name : s->name, gki_median(s->ns, PASSES), "ns",
				 attached ? s->name : NULL);
	}
}

static void set_up(void)
{
	static const char *const vhooks[] = {
		"vh_empty", "vh_meminfo", "vh_nice", "vh_rvh_second",
	};
	cpu_set_t cpus;

	/* Without a vendor means no module of this folder attached yet. */
	for (size_t i = 0; i < ARRAY_SIZE(vhooks); i++) {
		if (gki_module_loaded(vhooks[i])) {
			fprintf(stderr,
				"vh_cost: %s is loaded: the figures without a vendor would not be\n",
				vhooks[i]);
			exit(1);
		}
	}
	/* One CPU throughout: no pass is measured on another CPU's state. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		die("sched_setaffinity");
	page_size = sysconf(_SC_PAGESIZE);
	meminfo_fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (meminfo_fd < 0)
		die("open /proc/meminfo");
	if (setpriority(PRIO_PROCESS, 0, NICE_B))
		die("setpriority");
	/* Warm up: page tables, caches, the emulator's translated code. */
	for (size_t i = 0; i < NR_SITES; i++)
		sites[i].run((sites[i].calls / 10) & ~1L);
}

static void attach_empty_probes(void)
{
	int ret = gki_load_module(MODDIR "vh_empty.ko", "");

	if (ret) {
		errno = -ret;
		die("load " MODDIR "vh_empty.ko");
	}
}

int main(void)
{
	set_up();
	measure(0);
	attach_empty_probes();
	measure(1);
	if (setpriority(PRIO_PROCESS, 0, 0))
		die("setpriority");
	return 0;
}
