// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader (vendor_modules/incfs/tools/incfs-loader), run as the device
 * tool /bin/incfs-loader against the module:
 *
 *  - a directory tree with hard links, every byte and link checked;
 *  - a manifest and a blob over a pipe and over a unix socket;
 *  - the bandwidth limit (--rate) holds a 1 MiB load back;
 *  - resume: the loader is killed mid-load and restarted on the same
 *    backing file: every name once, every byte right, and (its --json
 *    summary) no block sent twice;
 *  - bad inputs: one message on stderr and the documented exit code;
 *  - the headline: a 64 MiB app (this very program as its executable, plus
 *    resource files) is exec'd from incfs while a loader limited to
 *    8 MiB/s fills it from a blob on the scratch disk; start-up touches
 *    ~5% of the blocks (the hot list) and prints a checksum; then the
 *    image runs the app without a loader, in this boot and the next.
 *
 * Run with "--incfs-app DIR", this program is the app instead.
 */
#include <elf.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define LOADER		"/bin/incfs-loader"
#define PACKED_TOOLS	"/etc/gki/tools"	/* the tools the initramfs packed */
#define APP_DIR		"incfs-loader-app"	/* under the scratch disk */
#define APP_SIZE	(64ULL << 20)
#define APP_NRES	15
#define APP_STRIDE	20			/* the app reads every 20th block: 5% */
#define APP_RATE	"8388608"

/* ===== the app ===== */

static __u64 fnv(__u64 h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* The app: every APP_STRIDE-th block of each resource file, hashed. */
static int app_main(const char *res)
{
	unsigned char buf[INCFS_BS];
	__u64 h = 0xcbf29ce484222325ull;
	char path[PATH_MAX];

	for (int i = 0; i < APP_NRES; i++) {
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "%s/r%02d", res, i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			fprintf(stderr, "incfs-app: %s: %s\n", path, strerror(errno));
			return 1;
		}
		for (__u64 b = 0; b * INCFS_BS < (__u64)st.st_size; b += APP_STRIDE) {
			ssize_t n = pread(fd, buf, INCFS_BS, b * INCFS_BS);

			if (n <= 0) {
				fprintf(stderr, "incfs-app: %s block %llu: %s\n", path,
					(unsigned long long)b, n ? strerror(errno) : "EOF");
				return 1;
			}
			h = fnv(h, buf, n);
		}
		close(fd);
	}
	printf("incfs-app %016llx\n", (unsigned long long)h);
	return 0;
}

/* ===== running the loader ===== */

/* Did the build produce the loader?  Then it must be there to run. */
static bool loader_was_built(void)
{
	char *tools = gki_read_file(PACKED_TOOLS, NULL);
	bool built = tools && gki_find_line(tools, "incfs-loader\n");

	free(tools);
	return built;
}

FIXTURE(ldr) {
	char top[128];
	char src[192], mnt[192], backing[192], out[192], err[192];
	char manifest[192], blob[192], sock[192];
};

FIXTURE_SETUP(ldr)
{
	memset(self, 0, sizeof(*self));
	if (access(LOADER, X_OK)) {
		int err = errno;

		ASSERT_FALSE(loader_was_built())
			TH_LOG("%s was built (%s) but cannot run: %s", LOADER,
			       PACKED_TOOLS, strerror(err));
		SKIP(return, "%s was not built", LOADER);
	}
	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
	snprintf(self->top, sizeof(self->top), "/tmp/ldr.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->top));
	snprintf(self->src, sizeof(self->src), "%s/src", self->top);
	snprintf(self->mnt, sizeof(self->mnt), "%s/mnt", self->top);
	snprintf(self->backing, sizeof(self->backing), "%s/backing.img", self->top);
	snprintf(self->out, sizeof(self->out), "%s/out", self->top);
	snprintf(self->err, sizeof(self->err), "%s/err", self->top);
	snprintf(self->manifest, sizeof(self->manifest), "%s/manifest", self->top);
	snprintf(self->blob, sizeof(self->blob), "%s/blob", self->top);
	snprintf(self->sock, sizeof(self->sock), "%s/sock", self->top);
	ASSERT_EQ(0, mkdir(self->src, 0755));
	ASSERT_EQ(0, mkdir(self->mnt, 0755));
}

FIXTURE_TEARDOWN_PARENT(ldr)
{
	char cmd[256];

	if (!self->top[0])
		return;
	if (umount2(self->mnt, 0))
		umount2(self->mnt, MNT_FORCE | MNT_DETACH);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->top);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", self->top);
}

/*
 * Start the loader with the given arguments (NULL-terminated), stdin from
 * in (or /dev/null), stdout to out and stderr to err.
 */
static pid_t spawn_v(const char *out, const char *err, int in, const char **args)
{
	const char *argv[32] = { LOADER };
	pid_t pid;
	int n = 1;

	while (args[n - 1] && n < 31) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	if (pid)
		return pid;
	if (in < 0)
		in = open("/dev/null", O_RDONLY);
	dup2(in, 0);
	dup2(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
	dup2(open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
	/* Not the write end of its own input pipe: it must see EOF. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	execv(LOADER, (char **)argv);
	_exit(127);
}

#define SPAWN(self, in, ...) \
	spawn_v((self)->out, (self)->err, in, (const char *[]){ __VA_ARGS__, NULL })

/* The number after "key": in the last line of out with "event": "<event>". */
static bool json_num(const char *path, const char *event, const char *key, double *v)
{
	char *text = gki_read_file(path, NULL), *line, *save, pat[64], *last = NULL;
	bool ok = false;

	if (!text)
		return false;
	snprintf(pat, sizeof(pat), "\"event\": \"%s\"", event);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, pat))
			last = line;
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	line = last ? strstr(last, pat) : NULL;
	if (line) {
		*v = strtod(line + strlen(pat), NULL);
		ok = true;
	}
	free(text);
	return ok;
}

static long long summary(const char *out, const char *key)
{
	double v;

	return json_num(out, "summary", key, &v) ? (long long)v : -1;
}

/* stderr holds exactly one line, the loader's. */
static bool one_message(const char *err, char *msg, size_t len)
{
	char *text = gki_read_file(err, NULL);
	bool ok;

	if (!text)
		return false;
	snprintf(msg, len, "%s", text);
	ok = !strncmp(text, "incfs-loader: ", 14) && strchr(text, '\n') &&
	     !strchr(text, '\n')[1];
	free(text);
	return ok;
}

static void log_output(struct __test_metadata *_metadata, FIXTURE_DATA(ldr) *self)
{
	char *err = gki_read_file(self->err, NULL), *out = gki_read_file(self->out, NULL);

	TH_LOG("loader stderr: %s", err ? err : "?");
	TH_LOG("loader stdout: %.600s", out ? out : "?");
	free(err);
	free(out);
}

/* ===== content ===== */

static int write_gen(const char *path, const struct incfs_file *f, mode_t mode)
{
	size_t chunk = 1 << 20;
	unsigned char *buf = malloc(chunk);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode), ret = 0;

	if (fd < 0 || !buf) {
		ret = -errno;
		incfs_fail("create %s: %s", path, strerror(errno));
		goto out;
	}
	for (__u64 off = 0; off < f->size; off += chunk) {
		size_t n = f->size - off < chunk ? f->size - off : chunk;

		incfs_fill(f, off, n, buf);
		if (write(fd, buf, n) != (ssize_t)n) {
			ret = -EIO;
			incfs_fail("write %s: %s", path, strerror(errno));
			break;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* Append f's bytes to an open blob. */
static int append_gen(int fd, const struct incfs_file *f)
{
	size_t chunk = 1 << 20;
	unsigned char *buf = malloc(chunk);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (__u64 off = 0; !ret && off < f->size; off += chunk) {
		size_t n = f->size - off < chunk ? f->size - off : chunk;

		incfs_fill(f, off, n, buf);
		if (write(fd, buf, n) != (ssize_t)n)
			ret = -EIO;
	}
	free(buf);
	return ret;
}

/* The whole file at path holds f's bytes (read in 1 MiB chunks). */
static int check_gen(const char *path, const struct incfs_file *f)
{
	size_t chunk = 1 << 20;
	unsigned char *got = malloc(chunk), *exp = malloc(chunk);
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;
	__u64 off = 0;

	if (fd < 0 || !got || !exp) {
		ret = -errno;
		incfs_fail("open %s: %s", path, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t n = read(fd, got, chunk);

		if (n < 0) {
			ret = -errno;
			incfs_fail("read %s at %llu: %s", path, (unsigned long long)off,
				   strerror(errno));
			break;
		}
		if (!n)
			break;
		if (off + n > f->size) {
			ret = -EMSGSIZE;
			incfs_fail("%s is longer than %llu", path, (unsigned long long)f->size);
			break;
		}
		incfs_fill(f, off, n, exp);
		if (memcmp(got, exp, n)) {
			ret = -EBADMSG;
			incfs_fail("%s: wrong bytes in [%llu, %llu)", path,
				   (unsigned long long)off, (unsigned long long)off + n);
			break;
		}
		off += n;
	}
	if (!ret && off != f->size) {
		ret = -ENODATA;
		incfs_fail("%s: %llu bytes, expected %llu", path, (unsigned long long)off,
			   (unsigned long long)f->size);
	}
out:
	if (fd >= 0)
		close(fd);
	free(got);
	free(exp);
	return ret;
}

/* Two names of one file: same inode, nlink 2. */
static int check_link(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb)) {
		incfs_fail("stat %s or %s: %s", a, b, strerror(errno));
		return -errno;
	}
	if (sa.st_ino != sb.st_ino || sa.st_nlink != 2) {
		incfs_fail("%s (ino %llu, nlink %lu) and %s (ino %llu) are not one file", a,
			   (unsigned long long)sa.st_ino, (unsigned long)sa.st_nlink, b,
			   (unsigned long long)sb.st_ino);
		return -EBADMSG;
	}
	return 0;
}

static const char *at(const char *dir, const char *rel)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *p = bufs[next++ % 8];

	snprintf(p, PATH_MAX, "%s/%s", dir, rel);
	return p;
}

/* ===== the manifest app: a/x, y, a/b/z, a/b/x-link ===== */

struct mapp {
	struct incfs_file x, y, z;
};

static void mapp_init(struct mapp *m, __u64 ysize)
{
	memset(m, 0, sizeof(*m));
	m->x = (struct incfs_file){ .size = 3 * INCFS_BS + 17, .seed = 11 };
	m->y = (struct incfs_file){ .size = ysize, .seed = 12, .compressible = true };
	m->z = (struct incfs_file){ .size = 5000, .seed = 13 };
}

static int mapp_write(FIXTURE_DATA(ldr) *self, const struct mapp *m)
{
	FILE *f = fopen(self->manifest, "w");
	int fd, ret;

	if (!f)
		return -errno;
	fprintf(f, "# incfs_loader test app\n"
		"d a 755\n"
		"d a/b 700\n"
		"f a/x 644 %llu 0\n"
		"f y 444 %llu %llu\n"
		"f a/b/z 600 %llu %llu\n"
		"l a/x a/b/x-link\n"
		"hot y 3 2\n",
		(unsigned long long)m->x.size, (unsigned long long)m->y.size,
		(unsigned long long)m->x.size, (unsigned long long)m->z.size,
		(unsigned long long)(m->x.size + m->y.size));
	if (fclose(f))
		return -EIO;
	fd = open(self->blob, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ret = append_gen(fd, &m->x);
	if (!ret)
		ret = append_gen(fd, &m->y);
	if (!ret)
		ret = append_gen(fd, &m->z);
	close(fd);
	return ret;
}

static __u64 mapp_blocks(const struct mapp *m)
{
	return incfs_nblocks(m->x.size) + incfs_nblocks(m->y.size) + incfs_nblocks(m->z.size);
}

static int mapp_check(FIXTURE_DATA(ldr) *self, const struct mapp *m)
{
	static const char *const root[] = { "a", "y" };
	static const char *const a[] = { "b", "x" };
	static const char *const b[] = { "x-link", "z" };
	int ret;

	ret = incfs_check_dir(self->mnt, root, 2, true);
	if (!ret)
		ret = incfs_check_dir(at(self->mnt, "a"), a, 2, false);
	if (!ret)
		ret = incfs_check_dir(at(self->mnt, "a/b"), b, 2, false);
	if (!ret)
		ret = check_gen(at(self->mnt, "a/x"), &m->x);
	if (!ret)
		ret = check_gen(at(self->mnt, "y"), &m->y);
	if (!ret)
		ret = check_gen(at(self->mnt, "a/b/z"), &m->z);
	if (!ret)
		ret = check_gen(at(self->mnt, "a/b/x-link"), &m->x);
	if (!ret)
		ret = check_link(at(self->mnt, "a/x"), at(self->mnt, "a/b/x-link"));
	return ret;
}

/* Write the first len bytes of the blob (all of it, if shorter) to fd. */
static int copy_blob(const char *blob, int fd, __u64 len)
{
	char buf[65536];
	int in = open(blob, O_RDONLY | O_CLOEXEC);

	while (in >= 0 && len) {
		ssize_t n = read(in, buf, len < sizeof(buf) ? len : sizeof(buf));

		if (n == 0)
			break;
		if (n < 0 || write(fd, buf, n) != n)
			return 1;
		len -= n;
	}
	return in < 0;
}

/* A child writing the first len bytes of the blob to fd, then closing it. */
static pid_t feed(const char *blob, int fd, __u64 len)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	_exit(copy_blob(blob, fd, len));
}

/* ===== the tests ===== */

TEST_F(ldr, dir_tree_with_hard_links)
{
	struct incfs_file one = { .size = 1, .seed = 1 };
	struct incfs_file big = { .size = 20 * INCFS_BS + 100, .seed = 2 };
	struct incfs_file zero = { .size = 0, .seed = 3 };
	struct incfs_file lz = { .size = 8 * INCFS_BS, .seed = 4, .compressible = true };
	static const char *const root[] = { "d1", "emptydir", "one", "one-link" };
	static const char *const d1[] = { "big", "d2", "zero" };
	static const char *const d2[] = { "big-link", "lz" };
	int st;

	ASSERT_EQ(0, mkdir(at(self->src, "d1"), 0755));
	ASSERT_EQ(0, mkdir(at(self->src, "d1/d2"), 0750));
	ASSERT_EQ(0, mkdir(at(self->src, "emptydir"), 0755));
	ASSERT_EQ(0, write_gen(at(self->src, "one"), &one, 0644)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, write_gen(at(self->src, "d1/big"), &big, 0755)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, write_gen(at(self->src, "d1/zero"), &zero, 0644)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, write_gen(at(self->src, "d1/d2/lz"), &lz, 0644)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, link(at(self->src, "d1/big"), at(self->src, "d1/d2/big-link")));
	ASSERT_EQ(0, link(at(self->src, "one"), at(self->src, "one-link")));

	st = incfs_wait_child(SPAWN(self, -1, "--dir", self->src, "--mount", self->mnt,
				    "--backing", self->backing, "--json"), 60000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));

	EXPECT_EQ(0, incfs_check_dir(self->mnt, root, 4, true)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(at(self->mnt, "d1"), d1, 3, false)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(at(self->mnt, "d1/d2"), d2, 2, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(at(self->mnt, "emptydir"), NULL, 0, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_gen(at(self->mnt, "one"), &one)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_gen(at(self->mnt, "one-link"), &one)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_gen(at(self->mnt, "d1/big"), &big)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_gen(at(self->mnt, "d1/d2/big-link"), &big)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_gen(at(self->mnt, "d1/zero"), &zero)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_gen(at(self->mnt, "d1/d2/lz"), &lz)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_link(at(self->mnt, "d1/big"), at(self->mnt, "d1/d2/big-link")))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, check_link(at(self->mnt, "one"), at(self->mnt, "one-link")))
		TH_LOG("%s", incfs_err);

	EXPECT_EQ(30, summary(self->out, "blocks_total"));
	EXPECT_EQ(30, summary(self->out, "blocks_sent"));
	EXPECT_EQ(9, summary(self->out, "names_created"));
	EXPECT_LE(8, summary(self->out, "blocks_lz4"));
}

/* pread() one block of @path with readahead off; 0 or -errno. */
static int read_one_block(const char *path, __u32 block)
{
	char buf[INCFS_BS];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	if (pread(fd, buf, sizeof(buf), (off_t)block * INCFS_BS) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * --learn-hot: the blocks read after a load, each once at its first read,
 * in that order, as hot lines by path; the file is a valid --hot list.
 */
TEST_F(ldr, learned_hot_list_names_the_blocks_read_in_order)
{
	struct incfs_file a = { .size = 16 * INCFS_BS, .seed = 31 };
	struct incfs_file b = { .size = 8 * INCFS_BS, .seed = 32 };
	char hot[224], *text;
	int st;

	snprintf(hot, sizeof(hot), "%s/hot", self->top);
	ASSERT_EQ(0, mkdir(at(self->src, "d"), 0755));
	ASSERT_EQ(0, write_gen(at(self->src, "a"), &a, 0644)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, write_gen(at(self->src, "d/b"), &b, 0644)) TH_LOG("%s", incfs_err);
	st = incfs_wait_child(SPAWN(self, -1, "--dir", self->src, "--mount", self->mnt,
				    "--backing", self->backing, "--read-log-records", "64"),
			      60000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));

	ASSERT_EQ(0, read_one_block(at(self->mnt, "d/b"), 3));
	for (__u32 i = 5; i < 8; i++)
		ASSERT_EQ(0, read_one_block(at(self->mnt, "a"), i));
	ASSERT_EQ(0, read_one_block(at(self->mnt, "d/b"), 3));
	ASSERT_EQ(0, read_one_block(at(self->mnt, "a"), 0));

	st = incfs_wait_child(SPAWN(self, -1, "--learn-hot", hot, "--attach", self->mnt), 30000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("--learn-hot: %s", incfs_strerr(st));
	text = gki_read_file(hot, NULL);
	ASSERT_NE(NULL, text);
	EXPECT_STREQ("# learned from the read log by incfs-loader --learn-hot\n"
		     "hot d/b 3 1\n"
		     "hot a 5 3\n"
		     "hot a 0 1\n", text);
	free(text);

	/* The next install takes it as its hot list. */
	ASSERT_EQ(0, umount(self->mnt));
	ASSERT_EQ(0, unlink(self->backing));
	st = incfs_wait_child(SPAWN(self, -1, "--dir", self->src, "--hot", hot, "--mount",
				    self->mnt, "--backing", self->backing), 60000);
	if (st)
		log_output(_metadata, self);
	EXPECT_EQ(0, st) TH_LOG("loader with the learned list: %s", incfs_strerr(st));
	EXPECT_EQ(0, check_gen(at(self->mnt, "a"), &a)) TH_LOG("%s", incfs_err);
}

/* Without a read log, or with nowhere to write: one message, the exit code, no file. */
TEST_F(ldr, learn_hot_fails_with_one_message)
{
	struct incfs_file a = { .size = 2 * INCFS_BS, .seed = 33 };
	char hot[224], msg[512];
	int st;

	ASSERT_EQ(0, write_gen(at(self->src, "a"), &a, 0644)) TH_LOG("%s", incfs_err);
	st = incfs_wait_child(SPAWN(self, -1, "--dir", self->src, "--mount", self->mnt,
				    "--backing", self->backing, "--read-log-records", "0"),
			      60000);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));

	snprintf(hot, sizeof(hot), "%s/hot", self->top);
	st = incfs_wait_child(SPAWN(self, -1, "--learn-hot", hot, "--attach", self->mnt), 30000);
	EXPECT_EQ(3, st) TH_LOG("no read log: %s", incfs_strerr(st));
	EXPECT_TRUE(one_message(self->err, msg, sizeof(msg))) TH_LOG("stderr: %s", msg);
	EXPECT_EQ(-1, access(hot, F_OK));

	ASSERT_EQ(0, umount(self->mnt));
	st = incfs_wait_child(SPAWN(self, -1, "--dir", self->src, "--mount", self->mnt,
				    "--backing", self->backing), 60000);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	snprintf(hot, sizeof(hot), "%s/no-such-dir/hot", self->top);
	st = incfs_wait_child(SPAWN(self, -1, "--learn-hot", hot, "--attach", self->mnt), 30000);
	EXPECT_EQ(7, st) TH_LOG("unwritable: %s", incfs_strerr(st));
	EXPECT_TRUE(one_message(self->err, msg, sizeof(msg))) TH_LOG("stderr: %s", msg);

	st = incfs_wait_child(SPAWN(self, -1, "--learn-hot", hot, "--dir", self->src), 30000);
	EXPECT_EQ(1, st) TH_LOG("without --attach: %s", incfs_strerr(st));
	EXPECT_TRUE(one_message(self->err, msg, sizeof(msg))) TH_LOG("stderr: %s", msg);
}

TEST_F(ldr, manifest_blob_over_a_pipe)
{
	struct mapp m;
	int p[2], st;
	pid_t writer, loader;

	mapp_init(&m, 10 * INCFS_BS);
	ASSERT_EQ(0, mapp_write(self, &m));
	ASSERT_EQ(0, pipe(p));
	writer = feed(self->blob, p[1], ~0ull);
	loader = SPAWN(self, p[0], "--manifest", self->manifest, "--blob", "-",
		       "--mount", self->mnt, "--backing", self->backing, "--json");
	close(p[0]);
	close(p[1]);
	st = incfs_wait_child(loader, 60000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	EXPECT_EQ(0, incfs_wait_child(writer, 10000));
	EXPECT_EQ(0, mapp_check(self, &m)) TH_LOG("%s", incfs_err);
	EXPECT_EQ((long long)mapp_blocks(&m), summary(self->out, "blocks_sent"));
}

TEST_F(ldr, manifest_blob_over_a_unix_socket)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char spec[256];
	struct mapp m;
	pid_t server, loader;
	int ls, st;

	mapp_init(&m, 40 * INCFS_BS + 5);
	ASSERT_EQ(0, mapp_write(self, &m));
	ASSERT_GT(sizeof(sa.sun_path), strlen(self->sock));
	memcpy(sa.sun_path, self->sock, strlen(self->sock) + 1);
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_LE(0, ls);
	ASSERT_EQ(0, bind(ls, (struct sockaddr *)&sa, sizeof(sa)));
	ASSERT_EQ(0, listen(ls, 1));
	server = fork();
	ASSERT_LE(0, server);
	if (!server) {
		int c = accept(ls, NULL, NULL);

		if (c < 0)
			_exit(1);
		close(ls);
		_exit(copy_blob(self->blob, c, ~0ull));
	}
	close(ls);
	snprintf(spec, sizeof(spec), "unix:%s", self->sock);
	loader = SPAWN(self, -1, "--manifest", self->manifest, "--blob", spec,
		       "--mount", self->mnt, "--backing", self->backing, "--json");
	st = incfs_wait_child(loader, 60000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	EXPECT_EQ(0, incfs_wait_child(server, 10000));
	EXPECT_EQ(0, mapp_check(self, &m)) TH_LOG("%s", incfs_err);
}

TEST_F(ldr, rate_limit_holds_a_load_back)
{
	struct mapp m;
	long long t;
	int st;

	/* 1 MiB in all. */
	mapp_init(&m, 0);
	m.y.size = (1 << 20) - m.x.size - m.z.size;
	ASSERT_EQ(0, mapp_write(self, &m));
	t = incfs_now_ms();
	st = incfs_wait_child(SPAWN(self, -1, "--manifest", self->manifest, "--blob",
				    self->blob, "--mount", self->mnt, "--backing",
				    self->backing, "--rate", "4194304", "--json"), 60000);
	t = incfs_now_ms() - t;
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	/* 1 MiB at 4 MiB/s is 250 ms; a loose lower bound. */
	EXPECT_LE(200, t) TH_LOG("a 1 MiB load at 4 MiB/s took %lld ms", t);
	EXPECT_EQ(0, mapp_check(self, &m)) TH_LOG("%s", incfs_err);
}

TEST_F_TIMEOUT(ldr, resume_after_sigkill_sends_no_block_twice, 90)
{
	long long total, present, sent;
	struct mapp m;
	double done = 0;
	pid_t loader;
	int st;

	mapp_init(&m, 4 << 20);		/* 1024 blocks of y */
	m.y.compressible = false;
	ASSERT_EQ(0, mapp_write(self, &m));
	/* 1 MiB/s: about 4 s; killed once a progress line shows blocks. */
	loader = SPAWN(self, -1, "--manifest", self->manifest, "--blob", self->blob,
		       "--mount", self->mnt, "--backing", self->backing, "--rate", "1048576",
		       "--json");
	for (int i = 0; i < 300 && done < 1; i++) {
		incfs_sleep_ms(10);
		if (!json_num(self->out, "progress", "blocks_done", &done))
			done = 0;
	}
	kill(loader, SIGKILL);
	st = incfs_wait_child(loader, 10000);
	ASSERT_EQ(128 + SIGKILL, st) TH_LOG("the loader was not killed mid-load: %s",
					    incfs_strerr(st));
	ASSERT_LE(1, done) TH_LOG("no progress line within 3 s");

	/* Restart on the same mount and backing file. */
	st = incfs_wait_child(SPAWN(self, -1, "--manifest", self->manifest, "--blob",
				    self->blob, "--attach", self->mnt, "--backing",
				    self->backing, "--json"), 60000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	total = summary(self->out, "blocks_total");
	present = summary(self->out, "blocks_present_at_start");
	sent = summary(self->out, "blocks_sent");
	EXPECT_EQ((long long)mapp_blocks(&m), total);
	EXPECT_LT(0, present) TH_LOG("nothing was found present after the kill");
	EXPECT_GT(total, present);
	EXPECT_EQ(total, present + sent) TH_LOG("present %lld + sent %lld != %lld", present,
						 sent, total);
	EXPECT_EQ(0, summary(self->out, "names_created"));
	EXPECT_EQ(6, summary(self->out, "names_present"));
	EXPECT_EQ(0, mapp_check(self, &m)) TH_LOG("%s", incfs_err);

	/* And again from the unmounted image: nothing left to do. */
	ASSERT_EQ(0, umount2(self->mnt, 0)) TH_LOG("umount: %s", strerror(errno));
	st = incfs_wait_child(SPAWN(self, -1, "--manifest", self->manifest, "--blob",
				    self->blob, "--mount", self->mnt, "--backing",
				    self->backing, "--json"), 60000);
	if (st)
		log_output(_metadata, self);
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	EXPECT_EQ(total, summary(self->out, "blocks_present_at_start"));
	EXPECT_EQ(0, summary(self->out, "blocks_sent"));
	EXPECT_EQ(0, summary(self->out, "names_created"));
	EXPECT_EQ(0, mapp_check(self, &m)) TH_LOG("%s", incfs_err);
}

/* The loader exits with code and one line on stderr. */
#define EXPECT_FAILS(code, pid) do { \
	char msg[512]; \
	int st_ = incfs_wait_child(pid, 30000); \
	EXPECT_EQ(code, st_) TH_LOG("loader: %s", incfs_strerr(st_)); \
	EXPECT_TRUE(one_message(self->err, msg, sizeof(msg))) TH_LOG("stderr: %s", msg); \
} while (0)

TEST_F(ldr, bad_inputs_fail_with_one_message)
{
	char missing[256], badmnt[256];
	struct mapp m;
	int p[2];
	pid_t writer;

	mapp_init(&m, 10 * INCFS_BS);
	ASSERT_EQ(0, mapp_write(self, &m));
	snprintf(missing, sizeof(missing), "%s/no-such-blob", self->top);
	snprintf(badmnt, sizeof(badmnt), "%s/no-such-dir/mnt", self->top);

	/* A missing source: refused before anything is mounted. */
	EXPECT_FAILS(2, SPAWN(self, -1, "--manifest", self->manifest, "--blob", missing,
			      "--mount", self->mnt, "--backing", self->backing));
	EXPECT_FAILS(2, SPAWN(self, -1, "--dir", missing, "--mount", self->mnt,
			      "--backing", self->backing));
	EXPECT_NE(0, umount2(self->mnt, 0));

	/* A mount on a directory that does not exist. */
	EXPECT_FAILS(3, SPAWN(self, -1, "--manifest", self->manifest, "--blob", self->blob,
			      "--mount", badmnt, "--backing", self->backing));

	/* A seekable blob shorter than the manifest: refused up front. */
	ASSERT_EQ(0, truncate(self->blob, m.x.size + 100));
	EXPECT_FAILS(2, SPAWN(self, -1, "--manifest", self->manifest, "--blob", self->blob,
			      "--mount", self->mnt, "--backing", self->backing));
	EXPECT_NE(0, umount2(self->mnt, 0));

	/*
	 * A stream that ends early (the blob cut above): what arrived, all of
	 * a/x, is delivered and stays; so does the mount.
	 */
	ASSERT_EQ(0, pipe(p));
	writer = feed(self->blob, p[1], ~0ull);
	/* The writer's end is the only one left: its exit ends the stream. */
	close(p[1]);
	EXPECT_FAILS(2, SPAWN(self, p[0], "--manifest", self->manifest, "--blob", "-",
			      "--mount", self->mnt, "--backing", self->backing,
			      "--timeout-ms", "100"));
	close(p[0]);
	incfs_wait_child(writer, 10000);
	EXPECT_EQ(0, check_gen(at(self->mnt, "a/x"), &m.x)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, umount2(self->mnt, 0));
}

/* ===== the headline: a 64 MiB app ===== */

struct bigapp {
	char dir[160], mnt[192], backing[192], blob[192], manifest[192], expected[192];
	unsigned char *exe;
	size_t exe_size;
	struct incfs_file res[APP_NRES];
	__u64 sum;
};

static unsigned char *read_self(size_t *size)
{
	return (unsigned char *)gki_read_file("/proc/self/exe", size);
}

static void bigapp_paths(struct bigapp *b)
{
	snprintf(b->dir, sizeof(b->dir), "%s/" APP_DIR, incfs_scratch());
	snprintf(b->mnt, sizeof(b->mnt), "%s/mnt", b->dir);
	snprintf(b->backing, sizeof(b->backing), "%s/backing.img", b->dir);
	snprintf(b->blob, sizeof(b->blob), "%s/blob", b->dir);
	snprintf(b->manifest, sizeof(b->manifest), "%s/manifest", b->dir);
	snprintf(b->expected, sizeof(b->expected), "%s/expected", b->dir);
}

/* The resources and the checksum the app must print. */
static int bigapp_init(struct bigapp *b)
{
	unsigned char blk[INCFS_BS];
	__u64 rest, each;

	bigapp_paths(b);
	b->exe = read_self(&b->exe_size);
	if (!b->exe || b->exe_size >= APP_SIZE / 2)
		return -ENOEXEC;
	rest = APP_SIZE - b->exe_size;
	each = rest / APP_NRES / INCFS_BS * INCFS_BS;
	b->sum = 0xcbf29ce484222325ull;
	for (int i = 0; i < APP_NRES; i++) {
		struct incfs_file *f = &b->res[i];

		*f = (struct incfs_file){ .size = i < APP_NRES - 1 ? each :
					  rest - each * (APP_NRES - 1), .seed = 100 + i };
		for (__u32 k = 0; k < incfs_nblocks(f->size); k += APP_STRIDE) {
			incfs_block_content(f, k, blk);
			b->sum = fnv(b->sum, blk, incfs_block_len(f, k));
		}
	}
	return 0;
}

/* Hot lines: the executable's loaded segments, then the blocks the app reads. */
static void bigapp_hot(const struct bigapp *b, FILE *m)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b->exe;

	if (b->exe_size >= sizeof(*eh) && !memcmp(eh->e_ident, ELFMAG, SELFMAG) &&
	    eh->e_phoff + (__u64)eh->e_phnum * sizeof(Elf64_Phdr) <= b->exe_size) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(b->exe + eh->e_phoff);

		for (int i = 0; i < eh->e_phnum; i++) {
			__u64 first = ph[i].p_offset / INCFS_BS;
			__u64 end = (ph[i].p_offset + ph[i].p_filesz + INCFS_BS - 1) / INCFS_BS;

			if (ph[i].p_type == PT_LOAD && end > first)
				fprintf(m, "hot bin/app %llu %llu\n", (unsigned long long)first,
					(unsigned long long)(end - first));
		}
	}
	for (int i = 0; i < APP_NRES; i++)
		for (__u32 k = 0; k < incfs_nblocks(b->res[i].size); k += APP_STRIDE)
			fprintf(m, "hot res/r%02d %u 1\n", i, k);
}

static int bigapp_write(struct bigapp *b)
{
	__u64 off = b->exe_size;
	FILE *m;
	int fd, ret = 0;
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", b->dir);
	if (system(cmd) || mkdir(b->dir, 0755) || mkdir(b->mnt, 0755))
		return -EIO;
	m = fopen(b->manifest, "w");
	fd = open(b->blob, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!m || fd < 0)
		return -errno;
	fprintf(m, "# a 64 MiB app: this suite's binary and %d resource files\n"
		"d bin 755\nd res 755\nf bin/app 755 %zu 0\n", APP_NRES, b->exe_size);
	if (write(fd, b->exe, b->exe_size) != (ssize_t)b->exe_size)
		ret = -EIO;
	for (int i = 0; !ret && i < APP_NRES; i++) {
		fprintf(m, "f res/r%02d 644 %llu %llu\n", i, (unsigned long long)b->res[i].size,
			(unsigned long long)off);
		off += b->res[i].size;
		ret = append_gen(fd, &b->res[i]);
	}
	bigapp_hot(b, m);
	if (fclose(m) || fsync(fd))
		ret = -EIO;
	close(fd);
	return ret;
}

/*
 * Run the app from mnt: 0 when it printed the expected line.  *first_ms:
 * when its first output came (incfs_now_ms()).
 */
static int run_app(const struct bigapp *b, long long *first_ms, char *line, size_t len)
{
	char exe[256], res[256];
	int p[2], st;
	size_t got = 0;
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/bin/app", b->mnt);
	snprintf(res, sizeof(res), "%s/res", b->mnt);
	if (pipe(p))
		return -errno;
	pid = fork();
	if (!pid) {
		dup2(p[1], 1);
		execl(exe, "app", "--incfs-app", res, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	line[0] = '\0';
	for (;;) {
		ssize_t n = read(p[0], line + got, len - 1 - got);

		if (n <= 0)
			break;
		if (!got && first_ms)
			*first_ms = incfs_now_ms();
		got += n;
		line[got] = '\0';
		if (got == len - 1)
			break;
	}
	close(p[0]);
	st = incfs_wait_child(pid, 120000);
	if (st) {
		incfs_fail("app: %s", incfs_strerr(st));
		return -ECHILD;
	}
	snprintf(exe, sizeof(exe), "incfs-app %016llx\n", (unsigned long long)b->sum);
	if (strcmp(line, exe)) {
		incfs_fail("app printed \"%s\", expected \"%s\"", line, exe);
		return -EBADMSG;
	}
	return 0;
}

/* Every byte of the app in the mount. */
static int bigapp_check(const struct bigapp *b)
{
	struct incfs_file exe = { .size = b->exe_size, .content = b->exe };
	char path[256];
	int ret;

	snprintf(path, sizeof(path), "%s/bin/app", b->mnt);
	ret = check_gen(path, &exe);
	for (int i = 0; !ret && i < APP_NRES; i++) {
		snprintf(path, sizeof(path), "%s/res/r%02d", b->mnt, i);
		ret = check_gen(path, &b->res[i]);
	}
	return ret;
}

static bool scratch_is_ext4(void)
{
	struct statfs st;

	return !statfs(incfs_scratch(), &st) && st.f_type == INCFS_EXT4_MAGIC;
}

TEST_F_TIMEOUT(ldr, app_64mib_starts_while_loading_at_8mib_s, 190)
{
	long long t0, first = 0, full;
	struct bigapp b;
	char line[128], out[256], err[256];
	FILE *f;
	pid_t loader;
	int st;

	if (incfs_boot_number() != 1)
		SKIP(return, "runs in the first boot");
	if (!scratch_is_ext4())
		SKIP(return, "%s is not an ext4 mount", incfs_scratch());
	ASSERT_EQ(0, bigapp_init(&b));
	ASSERT_EQ(0, bigapp_write(&b));
	snprintf(out, sizeof(out), "%s/loader.json", b.dir);
	snprintf(err, sizeof(err), "%s/loader.err", b.dir);
	sync();

	t0 = incfs_now_ms();
	loader = spawn_v(out, err, -1, (const char *[]){
		"--manifest", b.manifest, "--blob", b.blob, "--mount", b.mnt,
		"--backing", b.backing, "--rate", APP_RATE, "--timeout-ms", "30000",
		"--json", NULL });
	/* The app starts as soon as its names are there. */
	snprintf(line, sizeof(line), "%s/res/r%02d", b.mnt, APP_NRES - 1);
	for (int i = 0; i < 2000 && access(line, F_OK); i++)
		incfs_sleep_ms(5);
	EXPECT_EQ(0, run_app(&b, &first, line, sizeof(line))) TH_LOG("%s", incfs_err);
	st = incfs_wait_child(loader, 120000);
	full = incfs_now_ms();
	if (st) {
		char *e = gki_read_file(err, NULL);

		TH_LOG("loader stderr: %s", e ? e : "?");
		free(e);
		umount2(b.mnt, MNT_FORCE | MNT_DETACH);
	}
	ASSERT_EQ(0, st) TH_LOG("loader: %s", incfs_strerr(st));
	TH_LOG("first output %lld ms, every block %lld ms, ratio %.3f, pending reads %lld",
	       first - t0, full - t0, (double)(first - t0) / (full - t0),
	       summary(out, "pending_served"));
	EXPECT_EQ(summary(out, "blocks_total"), summary(out, "blocks_done"));
	EXPECT_LT(first - t0, full - t0);
	EXPECT_EQ(0, bigapp_check(&b)) TH_LOG("%s", incfs_err);

	/* Without a loader, from the image alone. */
	ASSERT_EQ(0, umount2(b.mnt, 0)) TH_LOG("umount: %s", strerror(errno));
	ASSERT_EQ(0, incfs_mount_file(b.mnt, b.backing, 200)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, run_app(&b, NULL, line, sizeof(line))) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, bigapp_check(&b)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, umount2(b.mnt, 0)) TH_LOG("umount: %s", strerror(errno));

	/* And in the next boot. */
	unlink(b.blob);
	f = fopen(b.expected, "w");
	ASSERT_NE(NULL, f);
	fprintf(f, "%016llx\n", (unsigned long long)b.sum);
	ASSERT_EQ(0, fclose(f));
	sync();
	free(b.exe);
	if (!getenv("GKI_NEXT_BOOT")) {
		TH_LOG("no GKI_NEXT_BOOT: not checked after a reboot");
		return;
	}
	f = fopen(getenv("GKI_NEXT_BOOT"), "a");
	ASSERT_NE(NULL, f);
	fprintf(f, "/tests/incfs_loader\n");
	ASSERT_EQ(0, fclose(f));
}

TEST_F_TIMEOUT(ldr, app_64mib_runs_from_the_image_after_reboot, 120)
{
	char line[128], cmd[256];
	struct bigapp b;
	char *want;

	if (incfs_boot_number() == 1)
		SKIP(return, "checks in the second boot");
	ASSERT_EQ(0, bigapp_init(&b));
	want = gki_read_file(b.expected, NULL);
	ASSERT_NE(NULL, want) TH_LOG("%s was not kept across the power-off", b.expected);
	EXPECT_EQ(b.sum, strtoull(want, NULL, 16));
	free(want);
	ASSERT_EQ(0, incfs_mount_file(b.mnt, b.backing, 200)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, run_app(&b, NULL, line, sizeof(line))) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, bigapp_check(&b)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, umount2(b.mnt, 0));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", b.dir);
	EXPECT_EQ(0, system(cmd));
	free(b.exe);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--incfs-app"))
		return app_main(argv[2]);
	return test_harness_run(argc, argv);
}
