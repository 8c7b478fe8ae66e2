// SPDX-License-Identifier: GPL-2.0
/*
 * App start on incfs: a 64 MiB app (this program as its executable, plus
 * resource files) is declared by /bin/incfs-loader, which then fills it
 * from a blob on the scratch disk at 8 MiB/s (--rate), and the app is
 * exec'd from incfs at once.  Its start-up reads every 20th block of the
 * resources (~5% of the app, listed with the executable's loaded segments
 * in the manifest's hot list) and prints a checksum.
 *
 * Figures (medians of PASSES, each on a fresh backing file):
 *   app_full_download_ms    loader start -> every block present (exit)
 *   app_first_output_ms     loader start -> the app's first output
 *   app_first_output_ratio  their ratio; the target is < 0.15
 *   app_pending_median_us   the loader's median pending-read service time
 *
 * Run with "--incfs-app DIR", this program is the app instead.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "gki_bench.h"

#define LOADER		"/bin/incfs-loader"
#define BS		INCFS_DATA_FILE_BLOCK_SIZE
#define APP_SIZE	(64ULL << 20)
#define NRES		15
#define STRIDE		20
#define RATE		"8388608"
#define PASSES		3

static char dir[128], mnt[160], blob[160], manifest[160], backing[160], out[160], err[160];
static uint8_t *exe;
static size_t exe_size;
static uint64_t res_size[NRES];

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* Incompressible block content of resource file i. */
static void res_block(int i, uint64_t blk, uint8_t *buf)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (blk + 1) ^ (uint64_t)(i + 1) << 40;

	x |= 1;
	for (size_t j = 0; j < BS; j += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(buf + j, &x, 8);
	}
}

/* ===== the app ===== */

static int app_main(const char *res)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char path[PATH_MAX];
	uint8_t buf[BS];

	for (int i = 0; i < NRES; i++) {
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "%s/r%02d", res, i);
		fd = open(path, O_RDONLY);
		if (fd < 0 || fstat(fd, &st))
			die(path);
		for (uint64_t b = 0; b * BS < (uint64_t)st.st_size; b += STRIDE) {
			ssize_t n = pread(fd, buf, BS, b * BS);

			if (n <= 0)
				die("app pread");
			h = fnv(h, buf, n);
		}
		close(fd);
	}
	printf("incfs-app %016llx\n", (unsigned long long)h);
	return 0;
}

/* ===== setup ===== */

static void read_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		die("/proc/self/exe");
	exe_size = st.st_size;
	exe = malloc(exe_size);
	if (!exe || read(fd, exe, exe_size) != (ssize_t)exe_size)
		die("read /proc/self/exe");
	close(fd);
}

static uint64_t expected_sum(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint8_t buf[BS];

	for (int i = 0; i < NRES; i++)
		for (uint64_t b = 0; b * BS < res_size[i]; b += STRIDE) {
			uint64_t len = res_size[i] - b * BS < BS ? res_size[i] - b * BS : BS;

			res_block(i, b, buf);
			h = fnv(h, buf, len);
		}
	return h;
}

static void write_hot(FILE *m)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)exe;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(exe + eh->e_phoff);

	for (int i = 0; i < eh->e_phnum; i++) {
		uint64_t first = ph[i].p_offset / BS;
		uint64_t end = (ph[i].p_offset + ph[i].p_filesz + BS - 1) / BS;

		if (ph[i].p_type == PT_LOAD && end > first)
			fprintf(m, "hot bin/app %llu %llu\n", (unsigned long long)first,
				(unsigned long long)(end - first));
	}
	for (int i = 0; i < NRES; i++)
		for (uint64_t b = 0; b * BS < res_size[i]; b += STRIDE)
			fprintf(m, "hot res/r%02d %llu 1\n", i, (unsigned long long)b);
}

static void write_app(void)
{
	uint64_t rest = APP_SIZE - exe_size, each = rest / NRES / BS * BS, off = exe_size;
	FILE *m = fopen(manifest, "w");
	int fd = open(blob, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint8_t buf[BS];

	if (!m || fd < 0)
		die("create app");
	if (write(fd, exe, exe_size) != (ssize_t)exe_size)
		die("write blob");
	fprintf(m, "d bin 755\nd res 755\nf bin/app 755 %zu 0\n", exe_size);
	for (int i = 0; i < NRES; i++) {
		res_size[i] = i < NRES - 1 ? each : rest - each * (NRES - 1);
		fprintf(m, "f res/r%02d 644 %llu %llu\n", i, (unsigned long long)res_size[i],
			(unsigned long long)off);
		off += res_size[i];
		for (uint64_t b = 0; b * BS < res_size[i]; b++) {
			uint64_t len = res_size[i] - b * BS < BS ? res_size[i] - b * BS : BS;

			res_block(i, b, buf);
			if (write(fd, buf, len) != (ssize_t)len)
				die("write blob");
		}
	}
	write_hot(m);
	if (fclose(m) || fsync(fd))
		die("write app");
	close(fd);
}

/* ===== one pass ===== */

static pid_t start_loader(void)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid)
		return pid;
	dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
	dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
	execl(LOADER, LOADER, "--manifest", manifest, "--blob", blob, "--mount", mnt,
	      "--backing", backing, "--rate", RATE, "--timeout-ms", "30000", "--json",
	      (char *)NULL);
	_exit(127);
}

/* Run the app from mnt; returns when its first output came (ns). */
static double run_app(const char *expected)
{
	char path[256], res[256], line[128] = "";
	double first = 0;
	size_t got = 0;
	int p[2], status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/bin/app", mnt);
	snprintf(res, sizeof(res), "%s/res", mnt);
	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		dup2(p[1], 1);
		execl(path, "app", "--incfs-app", res, (char *)NULL);
		die(path);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], line + got, sizeof(line) - 1 - got);

		if (n <= 0)
			break;
		if (!got)
			first = gki_now_ns();
		got += n;
		line[got] = '\0';
	}
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    strcmp(line, expected)) {
		fprintf(stderr, "app: status 0x%x, printed \"%s\", expected \"%s\"\n", status,
			line, expected);
		exit(1);
	}
	return first;
}

static double json_value(const char *key)
{
	char buf[4096], pat[64], *p;
	int fd = open(out, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(buf, "\"event\": \"summary\"");
	p = p ? strstr(p, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : -1;
}

static void one_pass(const char *expected, double *first_ms, double *full_ms,
		     double *pending_us)
{
	char last[256];
	double t0, first, full;
	int status;
	pid_t loader;

	unlink(backing);
	t0 = gki_now_ns();
	loader = start_loader();
	snprintf(last, sizeof(last), "%s/res/r%02d", mnt, NRES - 1);
	while (access(last, F_OK)) {
		if (waitpid(loader, &status, WNOHANG) == loader) {
			fprintf(stderr, "incfs-loader exited before declaring the app\n");
			exit(1);
		}
		usleep(2000);
	}
	first = run_app(expected);
	if (waitpid(loader, &status, 0) != loader || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "incfs-loader failed: status 0x%x (see %s)\n", status, err);
		exit(1);
	}
	full = gki_now_ns();
	*first_ms = (first - t0) / 1e6;
	*full_ms = (full - t0) / 1e6;
	*pending_us = json_value("pending_median_us");
	printf("# pass: first output %.0f ms, every block %.0f ms, %.0f pending reads\n",
	       *first_ms, *full_ms, json_value("pending_served"));
	if (umount(mnt))
		die("umount");
}

int main(int argc, char **argv)
{
	double first[PASSES], full[PASSES], ratio[PASSES], pending[PASSES];
	const char *scratch = getenv("GKI_SCRATCH");
	char expected[64];

	if (argc == 3 && !strcmp(argv[1], "--incfs-app"))
		return app_main(argv[2]);
	if (system("grep -q '^incrementalfs ' /proc/modules || "
		   "insmod /modules/vendor/incfs/incrementalfs.ko"))
		die("insmod incrementalfs");
	if (access(LOADER, X_OK))
		die(LOADER);
	snprintf(dir, sizeof(dir), "%s/incfs-app-start", scratch ? scratch : "/mnt/scratch");
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(blob, sizeof(blob), "%s/blob", dir);
	snprintf(manifest, sizeof(manifest), "%s/manifest", dir);
	snprintf(backing, sizeof(backing), "%s/backing.img", dir);
	snprintf(out, sizeof(out), "%s/loader.json", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	mkdir(dir, 0755);
	mkdir(mnt, 0755);
	read_self();
	write_app();
	snprintf(expected, sizeof(expected), "incfs-app %016llx\n",
		 (unsigned long long)expected_sum());
	sync();
	for (int i = 0; i < PASSES; i++) {
		one_pass(expected, &first[i], &full[i], &pending[i]);
		ratio[i] = first[i] / full[i];
	}
	gki_bench_report("app_full_download_ms", gki_median(full, PASSES), "ms", NULL);
	gki_bench_report("app_first_output_ms", gki_median(first, PASSES), "ms",
			 "app_full_download_ms");
	gki_bench_report("app_first_output_ratio", gki_median(ratio, PASSES), "ratio", NULL);
	gki_bench_report("app_pending_median_us", gki_median(pending, PASSES), "us", NULL);
	unlink(blob);
	unlink(backing);
	return 0;
}
