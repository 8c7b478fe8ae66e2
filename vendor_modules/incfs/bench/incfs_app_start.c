// SPDX-License-Identifier: GPL-2.0
/*
 * App start on incfs: a 64 MiB app (this program as its executable, plus
 * resource files) is declared by /bin/incfs-loader, which then fills it
 * from a blob on the scratch disk at 8 MiB/s (--rate), and the app is
 * exec'd from incfs at once.  Its start-up reads every 20th block of the
 * resources (~5% of the app) and prints a checksum.
 *
 * First, a launch without a hot list records the app's reads in the read
 * log, and `incfs-loader --learn-hot` turns them into a learned hot list.
 * Then each pass runs four deliveries of the same app, interleaved, with
 * the page cache dropped (the blob's included) before each:
 *
 *  - incfs, the manifest's hot list naming the executable's loaded
 *    segments and the blocks start-up reads, written from exact knowledge;
 *  - incfs with the learned hot list instead;
 *  - incfs without a hot list: only the app's pending reads put its
 *    blocks ahead of the bulk (file order);
 *  - ext4, what a user waits for without incfs: the whole app copied from
 *    the blob into plain files on the scratch disk through a token bucket
 *    like the loader's (same rate, same 64 KiB requests, syncfs at the
 *    end, as the loader does), then exec'd from there.
 *
 * Figures (medians of PASSES):
 *   app_full_download_ms           incfs: loader start -> every block present
 *   app_first_output_ms            incfs: loader start -> the app's first output
 *   app_first_output_ratio         their ratio; the target is < 0.15
 *   app_pending_median_us          the loader's median pending-read service time
 *   app_*_learned_*                the same with the learned hot list
 *   app_*_nohot_*                  the same without a hot list
 *   app_ext4_download_ms           the copy to ext4 at the same rate
 *   app_ext4_exec_ms               exec from ext4 right after it -> first output
 *   app_ext4_after_download_ms     download start -> first output (their sum)
 *   app_ext4_exec_cold_ms          exec from ext4, page cache dropped
 *   app_first_output_vs_ext4_ratio app_first_output / app_ext4_after_download
 *                                  (and _nohot_), per pass
 *
 * Run with "--incfs-app DIR", this program is the app instead.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "gki_bench.h"
#include "incfs_bench_data.h"

#define LOADER		"/bin/incfs-loader"
#define BS		INCFS_DATA_FILE_BLOCK_SIZE
#define APP_SIZE	(64ULL << 20)
#define NRES		15
#define STRIDE		20
#define RATE		(8ULL << 20)	/* bytes/s: the loader's --rate, and ext4's */
#define REQUEST		(16 * BS)	/* the loader's largest request from a seekable blob */
#define PASSES		5

static char dir[128], mnt[160], blob[160], manifest[160], manifest_nohot[160];
static char learned[160], manifest_learned[160];
static char backing[160], out[160], err[160], ext4app[160];
static uint8_t *exe;
static size_t exe_size;
static uint64_t res_size[NRES], res_off[NRES];

/* In a forked child: never flush a copy of the parent's stdio buffers. */
static _Noreturn void child_die(const char *what)
{
	perror(what);
	_exit(127);
}

static void fail(const char *msg)
{
	fprintf(stderr, "incfs_app_start: %s\n", msg);
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
			gki_die(path);
		for (uint64_t b = 0; b * BS < (uint64_t)st.st_size; b += STRIDE) {
			ssize_t n = pread(fd, buf, BS, b * BS);

			if (n <= 0)
				gki_die("app pread");
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
		gki_die("/proc/self/exe");
	exe_size = st.st_size;
	exe = malloc(exe_size);
	if (!exe || read(fd, exe, exe_size) != (ssize_t)exe_size)
		gki_die("read /proc/self/exe");
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

/* The names of the app, for a manifest. */
static void write_names(FILE *m)
{
	fprintf(m, "d bin 755\nd res 755\nf bin/app 755 %zu 0\n", exe_size);
	for (int i = 0; i < NRES; i++)
		fprintf(m, "f res/r%02d 644 %llu %llu\n", i, (unsigned long long)res_size[i],
			(unsigned long long)res_off[i]);
}

/* Both manifests: the same names, with and without the hot list. */
static void write_manifests(void)
{
	FILE *m = fopen(manifest, "w"), *n = fopen(manifest_nohot, "w");

	if (!m || !n)
		gki_die("create manifest");
	write_names(m);
	write_hot(m);
	write_names(n);
	if (fclose(m) || fclose(n))
		gki_die("write manifest");
}

static void write_app(void)
{
	uint64_t rest = APP_SIZE - exe_size, each = rest / NRES / BS * BS, off = exe_size;
	int fd = open(blob, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	uint8_t buf[BS];

	if (fd < 0)
		gki_die(blob);
	if (write(fd, exe, exe_size) != (ssize_t)exe_size)
		gki_die("write blob");
	for (int i = 0; i < NRES; i++) {
		res_size[i] = i < NRES - 1 ? each : rest - each * (NRES - 1);
		res_off[i] = off;
		off += res_size[i];
		for (uint64_t b = 0; b * BS < res_size[i]; b++) {
			uint64_t len = res_size[i] - b * BS < BS ? res_size[i] - b * BS : BS;

			res_block(i, b, buf);
			if (write(fd, buf, len) != (ssize_t)len)
				gki_die("write blob");
		}
	}
	if (fsync(fd) || close(fd))
		gki_die("write blob");
	write_manifests();
}

static void unlink_if_there(const char *path)
{
	if (unlink(path) && errno != ENOENT)
		gki_die(path);
}

/* ===== the app's start ===== */

/* Run the app from root (bin/app, res/); returns when its first output came (ns). */
static double run_app(const char *root, const char *expected)
{
	char path[256], res[256], line[128] = "";
	double first = 0;
	size_t got = 0;
	int p[2], status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/bin/app", root);
	snprintf(res, sizeof(res), "%s/res", root);
	if (pipe(p))
		gki_die("pipe");
	pid = fork();
	if (pid < 0)
		gki_die("fork");
	if (!pid) {
		if (dup2(p[1], 1) < 0)
			child_die("dup2");
		execl(path, "app", "--incfs-app", res, (char *)NULL);
		child_die(path);
	}
	close(p[1]);
	for (;;) {
		ssize_t n = read(p[0], line + got, sizeof(line) - 1 - got);

		if (n < 0)
			gki_die("read app output");
		if (!n)
			break;
		if (!got)
			first = gki_now_ns();
		got += n;
		line[got] = '\0';
	}
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    strcmp(line, expected)) {
		fprintf(stderr, "app in %s: status 0x%x, printed \"%s\", expected \"%s\"\n", root,
			status, line, expected);
		exit(1);
	}
	return first;
}

/* ===== incfs ===== */

static pid_t start_loader(const char *man)
{
	char rate[32];
	pid_t pid;

	snprintf(rate, sizeof(rate), "%llu", RATE);
	pid = fork();
	if (pid < 0)
		gki_die("fork");
	if (pid)
		return pid;
	if (dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1) < 0 ||
	    dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), 2) < 0)
		child_die("loader output");
	/* A ring for every block of the app: the first launch is learned whole. */
	execl(LOADER, LOADER, "--manifest", man, "--blob", blob, "--mount", mnt,
	      "--backing", backing, "--rate", rate, "--timeout-ms", "30000", "--json",
	      "--read-log-records", "32768", (char *)NULL);
	child_die(LOADER);
}

/* A field of the loader's JSON summary line. */
static double json_value(const char *key)
{
	static char buf[1 << 16];
	char pat[64], *p;
	int fd = open(out, O_RDONLY);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		gki_die(out);
	while ((n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	if (n < 0)
		gki_die(out);
	close(fd);
	buf[got] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(buf, "\"event\": \"summary\"");
	p = p ? strstr(p, pat) : NULL;
	if (!p) {
		fprintf(stderr, "incfs_app_start: no \"%s\" in the loader's summary (%s)\n", key,
			out);
		exit(1);
	}
	return strtod(p + strlen(pat), NULL);
}

struct incfs_run {
	double first_ms;	/* loader start -> first output */
	double full_ms;		/* loader start -> every block present */
	double pending_us;	/* the loader's median pending-read service time */
};

/* incfs-loader --learn-hot learned --attach mnt: the hot list of the reads so far. */
static void learn_hot(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		gki_die("fork");
	if (!pid) {
		execl(LOADER, LOADER, "--learn-hot", learned, "--attach", mnt, (char *)NULL);
		child_die(LOADER);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("incfs-loader --learn-hot failed");
}

/* The manifest without a hot list, plus the learned one. */
static void write_learned_manifest(void)
{
	FILE *m = fopen(manifest_learned, "w"), *in;
	char line[256];
	int lines = 0;

	if (!m)
		gki_die(manifest_learned);
	write_names(m);
	in = fopen(learned, "r");
	if (!in)
		gki_die(learned);
	while (fgets(line, sizeof(line), in)) {
		lines += !strncmp(line, "hot ", 4);
		fputs(line, m);
	}
	if (ferror(in) || fclose(in) || fclose(m))
		gki_die(manifest_learned);
	printf("# learned hot list: %d runs\n", lines);
	if (!lines)
		fail("the learned hot list is empty");
}

/* One delivery of man while the app starts; with @learn, learn its hot list too. */
static struct incfs_run incfs_pass(const char *man, const char *label, const char *expected,
				   bool learn)
{
	struct incfs_run r;
	char last[256];
	double t0, first, full;
	int status;
	pid_t loader;

	unlink_if_there(backing);
	gki_drop_caches();
	t0 = gki_now_ns();
	loader = start_loader(man);
	snprintf(last, sizeof(last), "%s/res/r%02d", mnt, NRES - 1);
	while (access(last, F_OK)) {
		if (waitpid(loader, &status, WNOHANG) == loader)
			fail("incfs-loader exited before declaring the app");
		usleep(2000);
	}
	first = run_app(mnt, expected);
	if (waitpid(loader, &status, 0) != loader || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "incfs-loader failed: status 0x%x (see %s)\n", status, err);
		exit(1);
	}
	full = gki_now_ns();
	r.first_ms = (first - t0) / 1e6;
	r.full_ms = (full - t0) / 1e6;
	r.pending_us = json_value("pending_median_us");
	printf("# %s: first output %.0f ms, every block %.0f ms, %.0f pending reads\n", label,
	       r.first_ms, r.full_ms, json_value("pending_served"));
	fflush(stdout);
	if (learn)
		learn_hot();
	if (umount(mnt))
		gki_die("umount");
	unlink_if_there(backing);
	return r;
}

/* ===== ext4: download, then start ===== */

/* The loader's token bucket: starts empty, holds 50 ms of traffic at most. */
struct bucket {
	double tokens, cap, last;
};

static void bucket_take(struct bucket *b, size_t n)
{
	double now = gki_now_ns();
	struct timespec ts;

	b->tokens += (now - b->last) / 1e9 * RATE;
	if (b->tokens > b->cap)
		b->tokens = b->cap;
	b->last = now;
	b->tokens -= n;
	if (b->tokens >= 0)
		return;
	ts.tv_sec = (time_t)(-b->tokens / RATE);
	ts.tv_nsec = (long)((-b->tokens / RATE - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			gki_die("nanosleep");
}

/* Copy bytes [off, off + size) of the blob to path, through the bucket. */
static void download_file(int bfd, struct bucket *b, const char *path, mode_t mode,
			  uint64_t off, uint64_t size)
{
	static uint8_t buf[REQUEST];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);

	if (fd < 0)
		gki_die(path);
	for (uint64_t done = 0; done < size;) {
		size_t n = size - done < REQUEST ? size - done : REQUEST;

		bucket_take(b, n);
		if (pread(bfd, buf, n, off + done) != (ssize_t)n)
			gki_die("pread blob");
		if (write(fd, buf, n) != (ssize_t)n)
			gki_die(path);
		done += n;
	}
	if (close(fd))
		gki_die(path);
}

/* The whole app from the blob to ext4app/, then syncfs, like the loader. */
static void download_ext4(void)
{
	struct bucket b = { .last = gki_now_ns() };
	char path[256];
	int bfd, dfd;

	b.cap = RATE / 20 > REQUEST ? RATE / 20 : REQUEST;
	bfd = open(blob, O_RDONLY);
	if (bfd < 0)
		gki_die(blob);
	snprintf(path, sizeof(path), "%s/bin", ext4app);
	if (mkdir(ext4app, 0755) || mkdir(path, 0755))
		gki_die(path);
	snprintf(path, sizeof(path), "%s/res", ext4app);
	if (mkdir(path, 0755))
		gki_die(path);
	snprintf(path, sizeof(path), "%s/bin/app", ext4app);
	download_file(bfd, &b, path, 0755, 0, exe_size);
	for (int i = 0; i < NRES; i++) {
		snprintf(path, sizeof(path), "%s/res/r%02d", ext4app, i);
		download_file(bfd, &b, path, 0644, res_off[i], res_size[i]);
	}
	dfd = open(ext4app, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || syncfs(dfd))
		gki_die("syncfs ext4");
	close(dfd);
	close(bfd);
}

static void remove_ext4_app(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/bin/app", ext4app);
	unlink_if_there(path);
	for (int i = 0; i < NRES; i++) {
		snprintf(path, sizeof(path), "%s/res/r%02d", ext4app, i);
		unlink_if_there(path);
	}
	snprintf(path, sizeof(path), "%s/bin", ext4app);
	if (rmdir(path) && errno != ENOENT)
		gki_die(path);
	snprintf(path, sizeof(path), "%s/res", ext4app);
	if (rmdir(path) && errno != ENOENT)
		gki_die(path);
	if (rmdir(ext4app) && errno != ENOENT)
		gki_die(ext4app);
}

struct ext4_run {
	double download_ms;	/* the copy, synced */
	double exec_ms;		/* exec right after it -> first output */
	double total_ms;	/* download start -> first output */
	double cold_ms;		/* exec -> first output, page cache dropped */
};

static struct ext4_run ext4_pass(const char *expected)
{
	struct ext4_run r;
	double t0, t1, first;

	remove_ext4_app();
	gki_drop_caches();
	t0 = gki_now_ns();
	download_ext4();
	t1 = gki_now_ns();
	first = run_app(ext4app, expected);
	r.download_ms = (t1 - t0) / 1e6;
	r.exec_ms = (first - t1) / 1e6;
	r.total_ms = (first - t0) / 1e6;
	gki_drop_caches();
	t0 = gki_now_ns();
	r.cold_ms = (run_app(ext4app, expected) - t0) / 1e6;
	printf("# ext4: download %.0f ms, then first output %.0f ms later (%.0f ms cold)\n",
	       r.download_ms, r.exec_ms, r.cold_ms);
	fflush(stdout);
	remove_ext4_app();
	return r;
}

/* ===== main ===== */

static void set_paths(void)
{
	const char *scratch = getenv("GKI_SCRATCH");

	snprintf(dir, sizeof(dir), "%s/incfs-app-start", scratch ? scratch : "/mnt/scratch");
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(blob, sizeof(blob), "%s/blob", dir);
	snprintf(manifest, sizeof(manifest), "%s/manifest", dir);
	snprintf(manifest_nohot, sizeof(manifest_nohot), "%s/manifest-nohot", dir);
	snprintf(learned, sizeof(learned), "%s/hot-learned", dir);
	snprintf(manifest_learned, sizeof(manifest_learned), "%s/manifest-learned", dir);
	snprintf(backing, sizeof(backing), "%s/backing.img", dir);
	snprintf(out, sizeof(out), "%s/loader.json", dir);
	snprintf(err, sizeof(err), "%s/loader.err", dir);
	snprintf(ext4app, sizeof(ext4app), "%s/ext4-app", dir);
	if ((mkdir(dir, 0755) && errno != EEXIST) || (mkdir(mnt, 0755) && errno != EEXIST))
		gki_die(dir);
}

int main(int argc, char **argv)
{
	double first[PASSES], full[PASSES], ratio[PASSES], pending[PASSES];
	double nh_first[PASSES], nh_full[PASSES], nh_ratio[PASSES], nh_pending[PASSES];
	double e_dl[PASSES], e_exec[PASSES], e_total[PASSES], e_cold[PASSES];
	double vs_ext4[PASSES], nh_vs_ext4[PASSES];
	double l_first[PASSES], l_ratio[PASSES], l_vs_ext4[PASSES];
	char expected[64];

	if (argc == 3 && !strcmp(argv[1], "--incfs-app"))
		return app_main(argv[2]);
	if (incfs_bench_load_module())
		fail("cannot load incrementalfs.ko");
	if (access(LOADER, X_OK))
		gki_die(LOADER);
	set_paths();
	read_self();
	write_app();
	snprintf(expected, sizeof(expected), "incfs-app %016llx\n",
		 (unsigned long long)expected_sum());
	incfs_pass(manifest_nohot, "first launch, learning its hot list", expected, true);
	write_learned_manifest();
	for (int i = 0; i < PASSES; i++) {
		struct incfs_run hot = incfs_pass(manifest, "hot list", expected, false);
		struct incfs_run lhot = incfs_pass(manifest_learned, "learned hot list", expected,
						   false);
		struct incfs_run nohot = incfs_pass(manifest_nohot, "no hot list", expected, false);
		struct ext4_run e = ext4_pass(expected);

		first[i] = hot.first_ms;
		full[i] = hot.full_ms;
		ratio[i] = hot.first_ms / hot.full_ms;
		pending[i] = hot.pending_us;
		nh_first[i] = nohot.first_ms;
		nh_full[i] = nohot.full_ms;
		nh_ratio[i] = nohot.first_ms / nohot.full_ms;
		nh_pending[i] = nohot.pending_us;
		e_dl[i] = e.download_ms;
		e_exec[i] = e.exec_ms;
		e_total[i] = e.total_ms;
		e_cold[i] = e.cold_ms;
		vs_ext4[i] = hot.first_ms / e.total_ms;
		l_first[i] = lhot.first_ms;
		l_ratio[i] = lhot.first_ms / lhot.full_ms;
		l_vs_ext4[i] = lhot.first_ms / e.total_ms;
		nh_vs_ext4[i] = nohot.first_ms / e.total_ms;
	}
	gki_bench_report("app_full_download_ms", gki_median(full, PASSES), "ms", NULL);
	gki_bench_report("app_first_output_ms", gki_median(first, PASSES), "ms",
			 "app_full_download_ms");
	gki_bench_report("app_first_output_ratio", gki_median(ratio, PASSES), "ratio", NULL);
	gki_bench_report("app_pending_median_us", gki_median(pending, PASSES), "us", NULL);
	gki_bench_report("app_first_output_learned_ms", gki_median(l_first, PASSES), "ms",
			 "app_first_output_ms");
	gki_bench_report("app_first_output_learned_ratio", gki_median(l_ratio, PASSES), "ratio",
			 NULL);
	gki_bench_report("app_first_output_learned_vs_ext4_ratio",
			 gki_median(l_vs_ext4, PASSES), "ratio", NULL);
	gki_bench_report("app_full_download_nohot_ms", gki_median(nh_full, PASSES), "ms",
			 "app_full_download_ms");
	gki_bench_report("app_first_output_nohot_ms", gki_median(nh_first, PASSES), "ms",
			 "app_first_output_ms");
	gki_bench_report("app_first_output_nohot_ratio", gki_median(nh_ratio, PASSES), "ratio",
			 NULL);
	gki_bench_report("app_pending_median_nohot_us", gki_median(nh_pending, PASSES), "us",
			 NULL);
	gki_bench_report("app_ext4_download_ms", gki_median(e_dl, PASSES), "ms",
			 "app_full_download_ms");
	gki_bench_report("app_ext4_exec_ms", gki_median(e_exec, PASSES), "ms", NULL);
	gki_bench_report("app_ext4_exec_cold_ms", gki_median(e_cold, PASSES), "ms",
			 "app_ext4_exec_ms");
	gki_bench_report("app_ext4_after_download_ms", gki_median(e_total, PASSES), "ms", NULL);
	gki_bench_report("app_first_output_vs_ext4_ratio", gki_median(vs_ext4, PASSES), "ratio",
			 NULL);
	gki_bench_report("app_first_output_nohot_vs_ext4_ratio",
			 gki_median(nh_vs_ext4, PASSES), "ratio", NULL);
	unlink_if_there(blob);
	return 0;
}
