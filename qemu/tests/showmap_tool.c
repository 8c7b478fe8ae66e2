// SPDX-License-Identifier: GPL-2.0
/*
 * /bin/showmap against a process whose memory is known: three named
 * regions with a known number of touched pages each.  Rss per name must be
 * exact, and Pss must halve when the pages are shared with a forked child.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#define SHOWMAP "/bin/showmap"

static const struct region {
	const char *name;
	int pages, touched;
} regions[] = {
	{ "showmap-a", 16, 4 },
	{ "showmap-b", 8, 8 },
	{ "showmap-c", 32, 1 },
};

#define NR_REGIONS ARRAY_SIZE(regions)

/*
 * The target: names and touches its regions, optionally forks a child that
 * shares every page, reports ready, and waits to be told to quit.
 */
static void target(int ready, int quit, int share)
{
	size_t page = sysconf(_SC_PAGESIZE);
	char c = 0;

	for (size_t i = 0; i < NR_REGIONS; i++) {
		char *p = mmap(NULL, regions[i].pages * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED ||
		    prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)p,
			  regions[i].pages * page, (unsigned long)regions[i].name))
			_exit(1);
		for (int t = 0; t < regions[i].touched; t++)
			p[t * page] = 1;
	}
	if (share && fork() == 0) {
		/* The sharer: keeps every page mapped until its parent quits. */
		read(quit, &c, 1);
		_exit(0);
	}
	if (write(ready, &c, 1) != 1)
		_exit(1);
	read(quit, &c, 1);
	if (share)
		wait(NULL);
	_exit(0);
}

/* Run showmap with args; stdout and stderr into out and err. */
static int showmap(char *out, size_t outsz, char *err, size_t errsz, char *const args[])
{
	char *argv[8] = { SHOWMAP };
	int o[2], e[2], status;
	ssize_t n;
	size_t len;
	pid_t pid;

	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	if (pipe(o) || pipe(e))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(SHOWMAP, argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	for (len = 0; len < outsz - 1 && (n = read(o[0], out + len, outsz - 1 - len)) > 0;)
		len += n;
	out[len] = '\0';
	for (len = 0; len < errsz - 1 && (n = read(e[0], err + len, errsz - 1 - len)) > 0;)
		len += n;
	err[len] = '\0';
	close(o[0]);
	close(e[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct row {
	char name[128];
	unsigned long long size, rss, pss, priv_clean, priv_dirty, shared, swap;
};

/* The CSV row for name, or -1. */
static int csv_row(const char *csv, const char *name, struct row *r)
{
	char want[160];
	const char *line;

	snprintf(want, sizeof(want), "%s,", name);
	line = gki_find_line(csv, want);
	if (!line)
		return -1;
	return sscanf(line + strlen(want) - 1, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu",
		      &r->size, &r->rss, &r->pss, &r->priv_clean, &r->priv_dirty,
		      &r->shared, &r->swap) == 7 ? 0 : -1;
}

FIXTURE(target) {
	pid_t pid;
	int quit;
	char pidstr[16];
	char out[1 << 16], err[1024];
};

FIXTURE_VARIANT(target) {
	int share;
};

FIXTURE_VARIANT_ADD(target, alone) {
	.share = 0,
};

FIXTURE_VARIANT_ADD(target, shared_with_child) {
	.share = 1,
};

FIXTURE_SETUP(target)
{
	int ready[2], quit[2];
	char c;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(quit));
	self->pid = fork();
	ASSERT_LE(0, self->pid);
	if (!self->pid) {
		close(ready[0]);
		close(quit[1]);
		target(ready[1], quit[0], variant->share);
	}
	close(ready[1]);
	close(quit[0]);
	self->quit = quit[1];
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	snprintf(self->pidstr, sizeof(self->pidstr), "%d", self->pid);
}

FIXTURE_TEARDOWN(target)
{
	close(self->quit);
	waitpid(self->pid, NULL, 0);
}

TEST_F(target, rss_and_size_per_name_exact)
{
	size_t kib = sysconf(_SC_PAGESIZE) / 1024;
	struct row r;

	ASSERT_EQ(0, showmap(self->out, sizeof(self->out), self->err, sizeof(self->err),
			     (char *[]){ "--csv", "-p", self->pidstr, NULL }))
		TH_LOG("%s", self->err);
	for (size_t i = 0; i < NR_REGIONS; i++) {
		char name[64];

		snprintf(name, sizeof(name), "[anon:%s]", regions[i].name);
		ASSERT_EQ(0, csv_row(self->out, name, &r)) TH_LOG("%s missing", name);
		EXPECT_EQ(regions[i].pages * kib, r.size) TH_LOG("%s", name);
		EXPECT_EQ(regions[i].touched * kib, r.rss) TH_LOG("%s", name);
		EXPECT_EQ(0, r.swap);
	}
}

TEST_F(target, pss_halves_when_shared_with_child)
{
	size_t kib = sysconf(_SC_PAGESIZE) / 1024;
	struct row r;

	ASSERT_EQ(0, showmap(self->out, sizeof(self->out), self->err, sizeof(self->err),
			     (char *[]){ "--csv", "-p", self->pidstr, NULL }));
	for (size_t i = 0; i < NR_REGIONS; i++) {
		unsigned long long rss = regions[i].touched * kib;
		char name[64];

		snprintf(name, sizeof(name), "[anon:%s]", regions[i].name);
		ASSERT_EQ(0, csv_row(self->out, name, &r));
		if (variant->share) {
			EXPECT_EQ(rss / 2, r.pss) TH_LOG("%s", name);
			EXPECT_EQ(rss, r.shared) TH_LOG("%s", name);
			EXPECT_EQ(0, r.priv_dirty) TH_LOG("%s", name);
		} else {
			EXPECT_EQ(rss, r.pss) TH_LOG("%s", name);
			EXPECT_EQ(0, r.shared) TH_LOG("%s", name);
			EXPECT_EQ(rss, r.priv_dirty) TH_LOG("%s", name);
		}
	}
}

TEST_F(target, sorted_by_pss_with_total)
{
	unsigned long long prev = ~0ULL, sum[7] = { 0 }, tot[7];
	char *line, *save;
	int rows = 0;

	ASSERT_EQ(0, showmap(self->out, sizeof(self->out), self->err, sizeof(self->err),
			     (char *[]){ "--csv", "-p", self->pidstr, NULL }));
	ASSERT_EQ(0, strncmp(self->out, "name,size_kib,rss_kib,pss_kib,", 30));
	for (line = strtok_r(strchr(self->out, '\n') + 1, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v[7];

		/* No name in this guest holds a comma. */
		ASSERT_EQ(7, sscanf(strchr(line, ','), ",%llu,%llu,%llu,%llu,%llu,%llu,%llu",
				    &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]));
		if (!strncmp(line, "TOTAL,", 6)) {
			memcpy(tot, v, sizeof(v));
			break;
		}
		EXPECT_GE(prev, v[2]) TH_LOG("not sorted by Pss at %s", line);
		prev = v[2];
		for (int i = 0; i < 7; i++)
			sum[i] += v[i];
		rows++;
	}
	EXPECT_LT(3, rows);
	for (int i = 0; i < 7; i++)
		EXPECT_EQ(sum[i], tot[i]);
}

TEST_F(target, json_output)
{
	size_t kib = sysconf(_SC_PAGESIZE) / 1024;
	char want[160];

	ASSERT_EQ(0, showmap(self->out, sizeof(self->out), self->err, sizeof(self->err),
			     (char *[]){ "--json", "-p", self->pidstr, NULL }));
	snprintf(want, sizeof(want),
		 "{\"name\": \"[anon:showmap-b]\", \"size_kib\": %zu, \"rss_kib\": %zu,",
		 8 * kib, 8 * kib);
	EXPECT_NE(NULL, strstr(self->out, want)) TH_LOG("%s", self->out);
	EXPECT_NE(NULL, strstr(self->out, "\"total\": {\"size_kib\": "));
	EXPECT_NE(NULL, strstr(self->out, "\"name\": \"[stack]\""));
}

TEST_F(target, all_processes_include_target)
{
	size_t kib = sysconf(_SC_PAGESIZE) / 1024;
	struct row r;

	ASSERT_EQ(0, showmap(self->out, sizeof(self->out), self->err, sizeof(self->err),
			     (char *[]){ "--csv", "-a", NULL }));
	ASSERT_EQ(0, csv_row(self->out, "[anon:showmap-b]", &r));
	/* The target, and with the sharing child its copy, plus this test. */
	EXPECT_EQ((variant->share ? 2 : 1) * 8 * kib, r.rss);
	ASSERT_EQ(0, csv_row(self->out, "/tests/showmap_tool", &r));
}

TEST(no_such_pid)
{
	char out[256], err[256];

	EXPECT_EQ(1, showmap(out, sizeof(out), err, sizeof(err),
			     (char *[]){ "-p", "999999", NULL }));
	EXPECT_STREQ("showmap: no such process: 999999\n", err);
	EXPECT_STREQ("", out);
}

TEST(permission_denied)
{
	char out[256], err[256];
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		/* An unprivileged user may not read init's smaps. */
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(3);
		_exit(showmap(out, sizeof(out), err, sizeof(err),
			      (char *[]){ "-p", "1", NULL }) == 1 &&
		      strstr(err, "permission denied reading /proc/1/smaps") &&
		      !out[0] ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	/* A child killed by a signal has no exit status: 0 is not a pass. */
	ASSERT_TRUE(WIFEXITED(status))
		TH_LOG("the child was killed by signal %d", WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("3: could not drop privileges; 4: not the documented message");
}

TEST(malformed_line)
{
	static const char text[] =
		"00400000-00401000 r-xp 00000000 00:00 0 [anon:ok]\n"
		"Size:                  4 kB\n"
		"Rss:               many kB\n";
	char path[] = "/tmp/smaps.XXXXXX", out[256], err[256], want[128];
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	ASSERT_EQ(sizeof(text) - 1, write(fd, text, sizeof(text) - 1));
	close(fd);
	EXPECT_EQ(1, showmap(out, sizeof(out), err, sizeof(err),
			     (char *[]){ "-f", path, NULL }));
	snprintf(want, sizeof(want), "showmap: %s:3: malformed line: Rss:               many kB\n",
		 path);
	EXPECT_STREQ(want, err);
	EXPECT_STREQ("", out);
	unlink(path);
}

TEST(bad_usage)
{
	char out[2048], err[2048];

	EXPECT_EQ(2, showmap(out, sizeof(out), err, sizeof(err), (char *[]){ NULL }));
	EXPECT_EQ(0, strncmp(err, "Usage: showmap", 14));
	EXPECT_EQ(2, showmap(out, sizeof(out), err, sizeof(err),
			     (char *[]){ "-p", "12x", NULL }));
	EXPECT_STREQ("showmap: not a pid: '12x'\n", err);
}

TEST_HARNESS_MAIN
