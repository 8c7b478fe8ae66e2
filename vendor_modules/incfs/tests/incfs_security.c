// SPDX-License-Identifier: GPL-2.0
/*
 * incfs: who may change it.  Instructions and block writes need
 * CAP_SYS_ADMIN; a block write must come from a process whose credentials
 * are those of the opener of .cmd (the records hold user pointers); .cmd
 * is mode 0600; callers without CAP_DAC_OVERRIDE get EACCES from the
 * read-only tree (directories are 0555).
 */
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TIMEOUT_MS	200
#define USER		1000

/* Results that children store for the parent (MAP_SHARED). */
#define NRES		16

FIXTURE(sec) {
	struct incfs_mnt m;
	struct incfs_file f;	/* "f": 4 blocks, block 0 present */
	__u64 d;		/* "d": an empty directory */
	int *res;
	int status;	/* of the last in_child() */
};

FIXTURE_SETUP(sec)
{
	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, INCFS_ROOT_INODE, "f", &self->f, 4 * INCFS_BS, 1,
				     false)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send_range(self->m.cmd, &self->f, 0, 1, INCFS_SEND_NONE))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(self->m.cmd, INCFS_ROOT_INODE, "d", &self->d))
		TH_LOG("%s", incfs_err);
	self->res = mmap(NULL, NRES * sizeof(int), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->res);
	for (int i = 0; i < NRES; i++)
		self->res[i] = -1;
}

FIXTURE_TEARDOWN_PARENT(sec)
{
	incfs_teardown(&self->m);
}

/* 0, or the errno of a call that returned -1 */
static int err_of(long ret)
{
	return ret == -1 ? errno : 0;
}

/* write() of one valid record for block of f: 0 or errno. */
static int write_block(int cmd, const struct incfs_file *f, __u32 block)
{
	struct incfs_batch b;
	ssize_t n;
	int ret;

	if (incfs_batch_init(&b, f, &block, 1, INCFS_SEND_NONE))
		return ENOMEM;
	n = write(cmd, b.rec, INCFS_REC);
	ret = n == -1 ? errno : n == INCFS_REC ? 0 : ENODATA;
	incfs_batch_free(&b);
	return ret;
}

/* NEW_FILE (a nameless empty file): 0 or errno. */
static int new_file(int cmd)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = INCFS_INSTRUCTION_NEW_FILE,
		.file = { .mode = S_IFREG | 0555 },
	};

	return err_of(ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst));
}

static int add_name(int cmd, __u64 child, const char *name)
{
	struct incfs_instruction inst = {
		.version = INCFS_HEADER_VER,
		.type = INCFS_INSTRUCTION_ADD_DIR_ENTRY,
		.dir_entry = {
			.dir_ino = INCFS_ROOT_INODE,
			.child_ino = child,
			.name = (__u64)(unsigned long)name,
			.name_len = strlen(name),
		},
	};

	return err_of(ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, &inst));
}

/* pread() of a block: 0 when it returns the right bytes, else the errno. */
static int read_block(const struct incfs_mnt *m, const struct incfs_file *f, __u32 block)
{
	int fd = open(incfs_path(m, "f"), O_RDONLY), ret;

	if (fd < 0)
		return errno;
	ret = incfs_check_block(fd, f, block);
	close(fd);
	return -ret;
}

static int caps(struct __user_cap_data_struct d[2], bool set)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(set ? SYS_capset : SYS_capget, &h, d);
}

static int drop_cap(int cap)
{
	struct __user_cap_data_struct d[2];

	if (caps(d, false))
		return -1;
	d[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	d[CAP_TO_INDEX(cap)].permitted &= ~CAP_TO_MASK(cap);
	d[CAP_TO_INDEX(cap)].inheritable &= ~CAP_TO_MASK(cap);
	return caps(d, true);
}

static bool has_cap(int cap)
{
	struct __user_cap_data_struct d[2];

	return !caps(d, false) && (d[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap));
}

/* uid and gid USER, no supplementary groups: no capabilities left. */
static int become_user(void)
{
	if (setgroups(0, NULL) || setresgid(USER, USER, USER) || setresuid(USER, USER, USER))
		return -1;
	return has_cap(CAP_DAC_OVERRIDE) || has_cap(CAP_SYS_ADMIN) ? -1 : 0;
}

/* Run fn in a child; returns its exit status (fn returns it). */
static int in_child(int (*fn)(FIXTURE_DATA(sec) *), FIXTURE_DATA(sec) *self)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (!pid)
		_exit(fn(self));
	self->status = incfs_wait_child(pid, 20000);
	return self->status;
}

/* ===== root ===== */

TEST_F(sec, root_basics)
{
	struct incfs_file g;
	struct stat st;

	ASSERT_TRUE(has_cap(CAP_SYS_ADMIN));
	ASSERT_EQ(0, incfs_make_file(self->m.cmd, self->d, "g", &g, 2 * INCFS_BS + 1, 2, true))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "d/g"), &g)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, write_block(self->m.cmd, &self->f, 1));
	EXPECT_EQ(0, read_block(&self->m, &self->f, 1));
	EXPECT_EQ(0, stat(incfs_path(&self->m, ".cmd"), &st));
	EXPECT_EQ(0, st.st_uid);
}

/* ===== without CAP_SYS_ADMIN ===== */

static int no_sys_admin(FIXTURE_DATA(sec) *self)
{
	int fd;

	if (drop_cap(CAP_SYS_ADMIN) || has_cap(CAP_SYS_ADMIN))
		return 100;
	/* Through the .cmd opened by the parent... */
	self->res[0] = new_file(self->m.cmd);
	self->res[1] = add_name(self->m.cmd, self->f.ino, "other");
	self->res[2] = write_block(self->m.cmd, &self->f, 1);
	/* ... and through an open of its own (still uid 0, so allowed). */
	fd = incfs_open_cmd(&self->m, O_RDWR);
	self->res[3] = fd < 0 ? -fd : 0;
	if (fd >= 0) {
		self->res[4] = new_file(fd);
		self->res[5] = write_block(fd, &self->f, 1);
		close(fd);
	}
	self->res[6] = read_block(&self->m, &self->f, 1);
	return 0;
}

TEST_F(sec, no_cap_sys_admin_eperm)
{
	struct stat st;

	ASSERT_EQ(0, in_child(no_sys_admin, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	EXPECT_EQ(EPERM, self->res[0]) TH_LOG("NEW_FILE: %s", strerror(self->res[0]));
	EXPECT_EQ(EPERM, self->res[1]) TH_LOG("ADD_DIR_ENTRY: %s", strerror(self->res[1]));
	EXPECT_EQ(EPERM, self->res[2]) TH_LOG("write: %s", strerror(self->res[2]));
	EXPECT_EQ(0, self->res[3]) TH_LOG("open .cmd: %s", strerror(self->res[3]));
	EXPECT_EQ(EPERM, self->res[4]) TH_LOG("NEW_FILE on its own .cmd: %s",
					      strerror(self->res[4]));
	EXPECT_EQ(EPERM, self->res[5]) TH_LOG("write on its own .cmd: %s", strerror(self->res[5]));
	EXPECT_EQ(ETIME, self->res[6]) TH_LOG("block 1 after the writes: %s",
					      strerror(self->res[6]));
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "other"), &st));
	/* The opener still can. */
	EXPECT_EQ(0, write_block(self->m.cmd, &self->f, 1));
	EXPECT_EQ(0, read_block(&self->m, &self->f, 1));
}

static int as_user_with_inherited_cmd(FIXTURE_DATA(sec) *self)
{
	if (become_user())
		return 100;
	self->res[0] = new_file(self->m.cmd);
	self->res[1] = add_name(self->m.cmd, self->f.ino, "other");
	self->res[2] = write_block(self->m.cmd, &self->f, 1);
	return 0;
}

TEST_F(sec, setresuid_user_after_open_eperm)
{
	EXPECT_EQ(0, in_child(as_user_with_inherited_cmd, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	EXPECT_EQ(EPERM, self->res[0]) TH_LOG("NEW_FILE: %s", strerror(self->res[0]));
	EXPECT_EQ(EPERM, self->res[1]) TH_LOG("ADD_DIR_ENTRY: %s", strerror(self->res[1]));
	EXPECT_EQ(EPERM, self->res[2]) TH_LOG("write: %s", strerror(self->res[2]));
	EXPECT_EQ(0, incfs_check_absent_path(incfs_path(&self->m, "f"), &self->f, 1))
		TH_LOG("%s", incfs_err);
}

/* ===== other users ===== */

static int user_opens_cmd(FIXTURE_DATA(sec) *self)
{
	static const char *const root[] = { "d", "f" };
	struct stat st;

	if (become_user())
		return 100;
	self->res[0] = err_of(open(incfs_path(&self->m, ".cmd"), O_RDWR));
	self->res[1] = err_of(open(incfs_path(&self->m, ".cmd"), O_RDONLY));
	self->res[2] = err_of(open(incfs_path(&self->m, ".cmd"), O_WRONLY));
	self->res[3] = err_of(stat(incfs_path(&self->m, ".cmd"), &st));
	/* Reading the tree is fine. */
	self->res[4] = read_block(&self->m, &self->f, 0);
	self->res[5] = -incfs_check_dir(self->m.dir, root, 2, true);
	return 0;
}

TEST_F(sec, cmd_open_by_other_user_eacces)
{
	EXPECT_EQ(0, in_child(user_opens_cmd, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	EXPECT_EQ(EACCES, self->res[0]) TH_LOG("O_RDWR: %s", strerror(self->res[0]));
	EXPECT_EQ(EACCES, self->res[1]) TH_LOG("O_RDONLY: %s", strerror(self->res[1]));
	EXPECT_EQ(EACCES, self->res[2]) TH_LOG("O_WRONLY: %s", strerror(self->res[2]));
	EXPECT_EQ(0, self->res[3]) TH_LOG("stat: %s", strerror(self->res[3]));
	EXPECT_EQ(0, self->res[4]) TH_LOG("read: %s", strerror(self->res[4]));
	EXPECT_EQ(0, self->res[5]) TH_LOG("readdir: %s", strerror(self->res[5]));
}

static const char *const user_calls[] = {
	"creat", "mkdir", "mknod", "symlink", "unlink", "rmdir", "rename",
	"open O_WRONLY", "open O_RDWR", "open O_TRUNC", "truncate",
};

/* What the VFS refuses on a 0555 tree before asking incfs. */
static int user_changes_tree(FIXTURE_DATA(sec) *self)
{
	const struct incfs_mnt *m = &self->m;
	int *r = self->res;

	if (become_user())
		return 100;
	r[0] = err_of(creat(incfs_path(m, "new"), 0644));
	r[1] = err_of(mkdir(incfs_path(m, "d/new"), 0755));
	r[2] = err_of(mknod(incfs_path(m, "fifo"), S_IFIFO | 0644, 0));
	r[3] = err_of(symlink("f", incfs_path(m, "sym")));
	r[4] = err_of(unlink(incfs_path(m, "f")));
	r[5] = err_of(rmdir(incfs_path(m, "d")));
	r[6] = err_of(rename(incfs_path(m, "f"), incfs_path(m, "g")));
	r[7] = err_of(open(incfs_path(m, "f"), O_WRONLY));
	r[8] = err_of(open(incfs_path(m, "f"), O_RDWR));
	r[9] = err_of(open(incfs_path(m, "f"), O_RDONLY | O_TRUNC));
	r[10] = err_of(truncate(incfs_path(m, "f"), 0));
	return 0;
}

TEST_F(sec, other_user_vfs_changes_eacces)
{
	static const char *const root[] = { "d", "f" };

	ASSERT_EQ(0, in_child(user_changes_tree, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	for (unsigned int i = 0; i < sizeof(user_calls) / sizeof(user_calls[0]); i++) {
		EXPECT_EQ(EACCES, self->res[i]) TH_LOG("%s: %s", user_calls[i],
						       strerror(self->res[i]));
	}
	EXPECT_EQ(0, incfs_check_dir(self->m.dir, root, 2, true)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_stat(incfs_path(&self->m, "f"), self->f.ino, self->f.size,
				      S_IFREG | 0555, 1)) TH_LOG("%s", incfs_err);
}

static const char *const user_setattr_calls[] = {
	"chmod", "chown", "utimes", "utimes(NULL)", "chmod d",
};

/*
 * What a caller who owns nothing gets (the README): the VFS's own answer
 * for a non-owner, EPERM, and EACCES for utimes(NULL), which only needs
 * write permission the 0555 modes do not give.
 */
static const int user_setattr_errno[] = { EPERM, EPERM, EPERM, EACCES, EPERM };

static int user_sets_attributes(FIXTURE_DATA(sec) *self)
{
	struct timespec times[2] = { { 1000, 0 }, { 2000, 0 } };
	const struct incfs_mnt *m = &self->m;
	int *r = self->res;

	if (become_user())
		return 100;
	r[0] = err_of(chmod(incfs_path(m, "f"), 0777));
	r[1] = err_of(chown(incfs_path(m, "f"), USER, USER));
	r[2] = err_of(utimensat(AT_FDCWD, incfs_path(m, "f"), times, 0));
	r[3] = err_of(utimensat(AT_FDCWD, incfs_path(m, "f"), NULL, 0));
	r[4] = err_of(chmod(incfs_path(m, "d"), 0777));
	return 0;
}

TEST_F(sec, other_user_setattr_refused)
{
	struct stat st;

	ASSERT_EQ(0, in_child(user_sets_attributes, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	for (unsigned int i = 0; i < sizeof(user_setattr_calls) / sizeof(user_setattr_calls[0]);
	     i++) {
		EXPECT_EQ(user_setattr_errno[i], self->res[i]) TH_LOG("%s: %s", user_setattr_calls[i],
						       strerror(self->res[i]));
	}
	ASSERT_EQ(0, stat(incfs_path(&self->m, "f"), &st));
	EXPECT_EQ(S_IFREG | 0555, st.st_mode);
	EXPECT_EQ(0, st.st_uid);
}

/* ===== credentials of the opener ===== */

static int other_groups(FIXTURE_DATA(sec) *self)
{
	gid_t groups[] = { 1234 };
	int fd;

	/* Still root with every capability; only the credentials differ. */
	if (setgroups(1, groups) || !has_cap(CAP_SYS_ADMIN))
		return 100;
	self->res[0] = write_block(self->m.cmd, &self->f, 1);
	self->res[1] = read_block(&self->m, &self->f, 1);
	/* Instructions need CAP_SYS_ADMIN only. */
	self->res[2] = new_file(self->m.cmd);
	/* Opened with these credentials, the write works. */
	fd = incfs_open_cmd(&self->m, O_RDWR);
	if (fd < 0) {
		self->res[3] = -fd;
		return 0;
	}
	self->res[3] = write_block(fd, &self->f, 2);
	self->res[4] = read_block(&self->m, &self->f, 2);
	close(fd);
	return 0;
}

TEST_F(sec, write_with_other_creds_eperm)
{
	ASSERT_EQ(0, in_child(other_groups, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	EXPECT_EQ(EPERM, self->res[0]) TH_LOG("write, inherited .cmd: %s", strerror(self->res[0]));
	EXPECT_EQ(ETIME, self->res[1]) TH_LOG("block 1 after it: %s", strerror(self->res[1]));
	EXPECT_EQ(0, self->res[2]) TH_LOG("NEW_FILE, inherited .cmd: %s", strerror(self->res[2]));
	EXPECT_EQ(0, self->res[3]) TH_LOG("write, own .cmd: %s", strerror(self->res[3]));
	EXPECT_EQ(0, self->res[4]) TH_LOG("block 2 after it: %s", strerror(self->res[4]));
	/* The same write from the opener. */
	EXPECT_EQ(0, write_block(self->m.cmd, &self->f, 1));
	EXPECT_EQ(0, read_block(&self->m, &self->f, 1));
}

static int keepcaps_user(FIXTURE_DATA(sec) *self)
{
	struct __user_cap_data_struct d[2];

	/* uid USER, but CAP_SYS_ADMIN kept and made effective again. */
	if (prctl(PR_SET_KEEPCAPS, 1) || setresuid(USER, USER, USER) || caps(d, false))
		return 100;
	d[0].effective = d[0].permitted;
	d[1].effective = d[1].permitted;
	if (caps(d, true) || !has_cap(CAP_SYS_ADMIN))
		return 101;
	self->res[0] = write_block(self->m.cmd, &self->f, 3);
	self->res[1] = read_block(&self->m, &self->f, 3);
	self->res[2] = new_file(self->m.cmd);
	return 0;
}

TEST_F(sec, write_after_setresuid_with_keepcaps_eperm)
{
	ASSERT_EQ(0, in_child(keepcaps_user, self))
		TH_LOG("child status %d (100, 101: it could not set its credentials)",
		       self->status);
	EXPECT_EQ(EPERM, self->res[0]) TH_LOG("write, inherited .cmd: %s", strerror(self->res[0]));
	EXPECT_EQ(ETIME, self->res[1]) TH_LOG("block 3 after it: %s", strerror(self->res[1]));
	EXPECT_EQ(0, self->res[2]) TH_LOG("NEW_FILE with CAP_SYS_ADMIN: %s",
					  strerror(self->res[2]));
	EXPECT_EQ(0, write_block(self->m.cmd, &self->f, 3));
	EXPECT_EQ(0, read_block(&self->m, &self->f, 3));
}

TEST_HARNESS_MAIN
