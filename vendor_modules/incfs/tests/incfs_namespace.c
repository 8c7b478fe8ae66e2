// SPDX-License-Identifier: GPL-2.0
/*
 * incfs: the UAPI layout, mount options, and the namespace: directories and
 * names changed only through INCFS_IOC_PROCESS_INSTRUCTION on .cmd, every
 * errno of the namespace table in vendor_modules/incfs/README.md, a
 * read-only VFS view, stat fields and hard links.
 */
#include <stddef.h>
#include <sys/sysmacros.h>

#include "incfs_test.h"
#include "kselftest_harness.h"

#define TIMEOUT_MS	1000

/* ===== the UAPI ===== */

TEST(uapi_layout)
{
	EXPECT_EQ(16, sizeof(struct incfs_pending_read_info));
	EXPECT_EQ(0, offsetof(struct incfs_pending_read_info, file_ino));
	EXPECT_EQ(8, offsetof(struct incfs_pending_read_info, block_index));
	EXPECT_EQ(12, offsetof(struct incfs_pending_read_info, serial_number));

	EXPECT_EQ(40, sizeof(struct incfs_new_data_block));
	EXPECT_EQ(0, offsetof(struct incfs_new_data_block, file_ino));
	EXPECT_EQ(8, offsetof(struct incfs_new_data_block, block_index));
	EXPECT_EQ(12, offsetof(struct incfs_new_data_block, data_len));
	EXPECT_EQ(16, offsetof(struct incfs_new_data_block, data));
	EXPECT_EQ(24, offsetof(struct incfs_new_data_block, compression));
	EXPECT_EQ(28, offsetof(struct incfs_new_data_block, reserved1));
	EXPECT_EQ(32, offsetof(struct incfs_new_data_block, reserved2));

	EXPECT_EQ(64, sizeof(struct incfs_new_file_instruction));
	EXPECT_EQ(0, offsetof(struct incfs_new_file_instruction, ino_out));
	EXPECT_EQ(8, offsetof(struct incfs_new_file_instruction, size));
	EXPECT_EQ(16, offsetof(struct incfs_new_file_instruction, mode));
	EXPECT_EQ(18, offsetof(struct incfs_new_file_instruction, reserved1));
	EXPECT_EQ(20, offsetof(struct incfs_new_file_instruction, reserved2));
	EXPECT_EQ(24, offsetof(struct incfs_new_file_instruction, reserved3));
	EXPECT_EQ(32, offsetof(struct incfs_new_file_instruction, reserved4));
	EXPECT_EQ(40, offsetof(struct incfs_new_file_instruction, reserved5));
	EXPECT_EQ(48, offsetof(struct incfs_new_file_instruction, reserved6));
	EXPECT_EQ(56, offsetof(struct incfs_new_file_instruction, reserved7));

	EXPECT_EQ(64, sizeof(struct incfs_dir_entry_instruction));
	EXPECT_EQ(0, offsetof(struct incfs_dir_entry_instruction, dir_ino));
	EXPECT_EQ(8, offsetof(struct incfs_dir_entry_instruction, child_ino));
	EXPECT_EQ(16, offsetof(struct incfs_dir_entry_instruction, name_len));
	EXPECT_EQ(20, offsetof(struct incfs_dir_entry_instruction, reserved1));
	EXPECT_EQ(24, offsetof(struct incfs_dir_entry_instruction, name));
	EXPECT_EQ(32, offsetof(struct incfs_dir_entry_instruction, reserved2));
	EXPECT_EQ(40, offsetof(struct incfs_dir_entry_instruction, reserved3));
	EXPECT_EQ(48, offsetof(struct incfs_dir_entry_instruction, reserved4));
	EXPECT_EQ(56, offsetof(struct incfs_dir_entry_instruction, reserved5));

	EXPECT_EQ(72, sizeof(struct incfs_instruction));
	EXPECT_EQ(8, _Alignof(struct incfs_instruction));
	EXPECT_EQ(0, offsetof(struct incfs_instruction, version));
	EXPECT_EQ(4, offsetof(struct incfs_instruction, type));
	EXPECT_EQ(8, offsetof(struct incfs_instruction, file));
	EXPECT_EQ(8, offsetof(struct incfs_instruction, dir_entry));
	EXPECT_EQ(8, offsetof(struct incfs_instruction, reserved));
	EXPECT_EQ(64, sizeof(((struct incfs_instruction *)0)->reserved));
}

TEST(uapi_constants)
{
	EXPECT_STREQ("incremental-fs", INCFS_NAME);
	EXPECT_EQ(0x5346434e49ul, INCFS_MAGIC_NUMBER);
	EXPECT_EQ(4096, INCFS_DATA_FILE_BLOCK_SIZE);
	EXPECT_EQ(1, INCFS_HEADER_VER);
	EXPECT_EQ(1000, INCFS_MAX_FILES);
	EXPECT_EQ(1, INCFS_COMMAND_INODE);
	EXPECT_EQ(2, INCFS_ROOT_INODE);
	EXPECT_EQ('g', INCFS_IOCTL_BASE_CODE);
	EXPECT_EQ(0, COMPRESSION_NONE);
	EXPECT_EQ(1, COMPRESSION_LZ4);
	EXPECT_EQ(0, INCFS_INSTRUCTION_NOOP);
	EXPECT_EQ(1, INCFS_INSTRUCTION_NEW_FILE);
	EXPECT_EQ(3, INCFS_INSTRUCTION_ADD_DIR_ENTRY);
	EXPECT_EQ(4, INCFS_INSTRUCTION_REMOVE_DIR_ENTRY);
	/* _IOWR('g', 30, struct incfs_instruction) on arm64 */
	EXPECT_EQ(0xc048671eu, (unsigned int)INCFS_IOC_PROCESS_INSTRUCTION);
}

TEST(sysfs_version)
{
	char *text;

	ASSERT_EQ(0, incfs_load_module()) TH_LOG("%s", incfs_err);
	text = gki_read_file(INCFS_VERSION_FILE, NULL);
	ASSERT_NE(NULL, text) TH_LOG("%s: %s", INCFS_VERSION_FILE, strerror(errno));
	EXPECT_STREQ("1\n", text);
	free(text);
}

/* ===== mount options ===== */

/*
 * A working mount m (for a descriptor on incfs itself) and, beside it, a
 * second mount point and an empty backing file for the attempts.
 */
FIXTURE(opts) {
	struct incfs_mnt m;
	char dir2[192];
	char file2[192];
	int fd2;	/* file2, O_RDWR */
};

FIXTURE_SETUP(opts)
{
	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	snprintf(self->dir2, sizeof(self->dir2), "%s/mnt2", self->m.top);
	snprintf(self->file2, sizeof(self->file2), "%s/other.img", self->m.top);
	ASSERT_EQ(0, mkdir(self->dir2, 0755));
	self->fd2 = open(self->file2, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_LE(0, self->fd2);
}

FIXTURE_TEARDOWN_PARENT(opts)
{
	umount2(self->dir2, MNT_DETACH);
	unlink(self->file2);
	rmdir(self->dir2);
	incfs_teardown(&self->m);
}

/* mount of dir2 with an option string built from fmt and fd; 0 or -errno */
static int try_mount(const char *dir, const char *fmt, int fd)
{
	char opts[128];
	int ret;

	snprintf(opts, sizeof(opts), fmt, fd);
	ret = incfs_mount_opts(dir, opts);
	if (!ret)
		umount2(dir, 0);
	return ret;
}

TEST_F(opts, missing_backing_fd_einval)
{
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "read_timeout_ms=100", 0));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "", 0));
	EXPECT_EQ(-EINVAL, mount(INCFS_NAME, self->dir2, INCFS_NAME, 0, NULL) ? -errno : 0);
}

TEST_F(opts, unknown_option_einval)
{
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d,bogus=1", self->fd2));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d,read_timeout=5", self->fd2));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d,ro_data", self->fd2));
}

TEST_F(opts, malformed_number_einval)
{
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=abc", 0));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=", 0));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%dx", self->fd2));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d,read_timeout_ms=12x",
				     self->fd2));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d,read_timeout_ms=", self->fd2));
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d,read_timeout_ms=99999999999999",
				     self->fd2));
}

TEST_F(opts, closed_fd_ebadf)
{
	int fd = dup(self->fd2);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, close(fd));
	EXPECT_EQ(-EBADF, try_mount(self->dir2, "backing_fd=%d", fd));
	EXPECT_EQ(-EBADF, try_mount(self->dir2, "backing_fd=%d", 987654));
}

TEST_F(opts, not_read_write_fd_ebadf)
{
	int rd = open(self->file2, O_RDONLY | O_CLOEXEC);
	int wr = open(self->file2, O_WRONLY | O_CLOEXEC);
	int path = open(self->file2, O_PATH | O_CLOEXEC);

	ASSERT_LE(0, rd);
	ASSERT_LE(0, wr);
	ASSERT_LE(0, path);
	EXPECT_EQ(-EBADF, try_mount(self->dir2, "backing_fd=%d", rd));
	EXPECT_EQ(-EBADF, try_mount(self->dir2, "backing_fd=%d", wr));
	EXPECT_EQ(-EBADF, try_mount(self->dir2, "backing_fd=%d", path));
	close(rd);
	close(wr);
	close(path);
	/* The file itself is fine. */
	EXPECT_EQ(0, try_mount(self->dir2, "backing_fd=%d", self->fd2));
}

TEST_F(opts, not_a_regular_file_einval)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, null);
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d", null));
	close(null);
}

/*
 * A directory cannot be open for writing: "not a regular file" (EINVAL)
 * is taken to come before "not open for reading and writing" (EBADF).
 */
TEST_F(opts, directory_fd_einval)
{
	int dir = open(self->m.top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ASSERT_LE(0, dir);
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d", dir));
	close(dir);
}

TEST_F(opts, backing_file_on_incfs_einval)
{
	/* .cmd is a regular file open for reading and writing, on incfs. */
	EXPECT_EQ(-EINVAL, try_mount(self->dir2, "backing_fd=%d", self->m.cmd));
}

TEST_F(opts, defaults_and_msc_spelling_accepted)
{
	char opts[64], cmd[256];
	struct stat st;
	int fd;

	EXPECT_EQ(0, try_mount(self->dir2, "backing_fd=%d", self->fd2));
	EXPECT_EQ(0, try_mount(self->dir2, "backing_fd=%d,read_timeout_msc=500", self->fd2));
	EXPECT_EQ(0, try_mount(self->dir2, "read_timeout_ms=0,backing_fd=%d", self->fd2));
	EXPECT_EQ(0, try_mount(self->dir2, "backing_fd=%d,read_timeout_ms=250", self->fd2));
	/* Once mount() returned, the descriptor is not needed. */
	fd = open(self->file2, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	snprintf(opts, sizeof(opts), "backing_fd=%d", fd);
	ASSERT_EQ(0, incfs_mount_opts(self->dir2, opts));
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s/.cmd", self->dir2);
	EXPECT_EQ(0, stat(cmd, &st));
	EXPECT_EQ(0, umount2(self->dir2, 0));
}

TEST_F(opts, same_backing_file_twice_ebusy)
{
	int fd = open(self->m.backing, O_RDWR | O_CLOEXEC);
	char opts[64];

	ASSERT_LE(0, fd);
	snprintf(opts, sizeof(opts), "backing_fd=%d", fd);
	EXPECT_EQ(-EBUSY, incfs_mount_opts(self->dir2, opts));
	/* The same backing file again on the same mount point too. */
	EXPECT_EQ(-EBUSY, incfs_mount_opts(self->m.dir, opts));
	/* Another backing file mounts beside it. */
	EXPECT_EQ(0, try_mount(self->dir2, "backing_fd=%d", self->fd2));
	/* Unmounted, the first backing file can be mounted elsewhere. */
	ASSERT_EQ(0, incfs_umount(&self->m)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_mount_opts(self->dir2, opts));
	close(fd);
	EXPECT_EQ(0, umount2(self->dir2, 0));
}

/* ===== the namespace ===== */

FIXTURE(ns) {
	struct incfs_mnt m;
};

FIXTURE_SETUP(ns)
{
	ASSERT_EQ(0, incfs_setup(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
}

FIXTURE_TEARDOWN_PARENT(ns)
{
	incfs_teardown(&self->m);
}

TEST_F(ns, cmd_file_mode_and_owner)
{
	struct stat st;

	ASSERT_EQ(0, stat(incfs_path(&self->m, ".cmd"), &st));
	EXPECT_TRUE(S_ISREG(st.st_mode)) TH_LOG("mode 0%o", st.st_mode);
	EXPECT_EQ(0600, st.st_mode & 07777);
	EXPECT_EQ(geteuid(), st.st_uid);
	EXPECT_EQ(INCFS_COMMAND_INODE, st.st_ino);
	ASSERT_EQ(0, stat(self->m.dir, &st));
	EXPECT_EQ(INCFS_ROOT_INODE, st.st_ino);
	EXPECT_EQ(S_IFDIR | 0555, st.st_mode);
	EXPECT_EQ(2, st.st_nlink);
}

TEST_F(ns, directory_structure)
{
	static const char *const root[] = { "a", "b", "c", "f1" };
	static const char *const a[] = { "x", "y", "same", "fa" };
	static const char *const ax[] = { "deep", "fx" };
	static const char *const deep[] = { "fdeep" };
	static const char *const b[] = { "same", "fb", "link-to-f1" };
	const char *many[60];
	char names[60][256];
	__u64 da, db, dc, dx, dy, ddeep, f1, fsame_a, fsame_b, ino;
	int cmd = self->m.cmd;
	struct stat st;

	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "a", &da)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "b", &db)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "c", &dc)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, da, "x", &dx)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, da, "y", &dy)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, dx, "deep", &ddeep)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make(cmd, INCFS_ROOT_INODE, "f1", S_IFREG | 0555, 10, &f1))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make(cmd, da, "same", S_IFREG | 0555, 1, &fsame_a));
	ASSERT_EQ(0, incfs_make(cmd, db, "same", S_IFREG | 0555, 2, &fsame_b));
	ASSERT_EQ(0, incfs_make(cmd, da, "fa", S_IFREG | 0555, 3, NULL));
	ASSERT_EQ(0, incfs_make(cmd, dx, "fx", S_IFREG | 0555, 4, NULL));
	ASSERT_EQ(0, incfs_make(cmd, ddeep, "fdeep", S_IFREG | 0555, 5, NULL));
	ASSERT_EQ(0, incfs_make(cmd, db, "fb", S_IFREG | 0555, 6, NULL));
	ASSERT_EQ(0, incfs_add_entry(cmd, db, f1, "link-to-f1")) TH_LOG("%s", incfs_err);

	EXPECT_EQ(0, incfs_check_dir(self->m.dir, root, 4, true)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "a"), a, 4, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "a/x"), ax, 2, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "a/x/deep"), deep, 1, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "a/y"), NULL, 0, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "b"), b, 3, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "c"), NULL, 0, false))
		TH_LOG("%s", incfs_err);

	/* The same name in two directories names two files. */
	ASSERT_EQ(0, stat(incfs_path(&self->m, "a/same"), &st));
	EXPECT_EQ(fsame_a, st.st_ino);
	EXPECT_EQ(1, st.st_size);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "b/same"), &st));
	EXPECT_EQ(fsame_b, st.st_ino);
	EXPECT_EQ(2, st.st_size);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "a/x/deep/fdeep"), &st));
	EXPECT_EQ(5, st.st_size);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "a/x/deep/.."), &st));
	EXPECT_EQ(dx, st.st_ino);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "a/.."), &st));
	EXPECT_EQ(INCFS_ROOT_INODE, st.st_ino);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "a/nothing"), &st));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "a/fa/x"), &st));
	EXPECT_EQ(ENOTDIR, errno);

	/* A directory larger than one getdents() call, names up to 255 bytes. */
	for (int i = 0; i < 60; i++) {
		int len = 1 + (i * 37) % 255;

		memset(names[i], 'a' + i % 26, len);
		snprintf(names[i] + len - (len > 3 ? 3 : len), 4, "%03d", i);
		names[i][len] = '\0';
		many[i] = names[i];
		ASSERT_EQ(0, incfs_make(cmd, dc, many[i], S_IFREG | 0555, i, &ino))
			TH_LOG("%s", incfs_err);
	}
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "c"), many, 60, false))
		TH_LOG("%s", incfs_err);
	for (int i = 0; i < 60; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/c/%s", self->m.dir, many[i]);
		ASSERT_EQ(0, stat(path, &st)) TH_LOG("%s: %s", path, strerror(errno));
		EXPECT_EQ(i, st.st_size);
	}
}

/* ----- every errno of the namespace table ----- */

/* A directory "dir" and a file "file" in the root. */
struct tree {
	__u64 dir, file;
};

static int make_tree(int cmd, struct tree *t)
{
	int ret = incfs_make_dir(cmd, INCFS_ROOT_INODE, "dir", &t->dir);

	return ret ? ret : incfs_make(cmd, INCFS_ROOT_INODE, "file", S_IFREG | 0555, 100,
				      &t->file);
}

static int add_len(int cmd, __u64 dir, __u64 child, const char *name, __u32 len)
{
	return incfs_dir_entry_len(cmd, INCFS_INSTRUCTION_ADD_DIR_ENTRY, dir, child, name, len);
}

TEST_F(ns, dirs_bad_names_einval)
{
	static const char *const root[] = { "dir", "file" };
	char name[300];
	struct tree t;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	memset(name, 'n', sizeof(name));
	EXPECT_EQ(-EINVAL, add_len(cmd, INCFS_ROOT_INODE, t.file, "x", 0));
	EXPECT_EQ(-EINVAL, add_len(cmd, INCFS_ROOT_INODE, t.file, name, 256));
	EXPECT_EQ(-EINVAL, add_len(cmd, INCFS_ROOT_INODE, t.file, name, 300));
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "a/b"));
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "/"));
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "trailing/"));
	EXPECT_EQ(-EINVAL, add_len(cmd, INCFS_ROOT_INODE, t.file, "ab\0cd", 5));
	EXPECT_EQ(-EINVAL, add_len(cmd, INCFS_ROOT_INODE, t.file, "ab\0", 3));
	EXPECT_EQ(-EINVAL, add_len(cmd, INCFS_ROOT_INODE, t.file, "\0", 1));
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "."));
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, ".."));
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, t.dir, t.file, ".."));
	EXPECT_EQ(-EINVAL, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.dir, "."));
	EXPECT_EQ(-EINVAL, incfs_dir_entry_len(cmd, INCFS_INSTRUCTION_REMOVE_DIR_ENTRY,
					       INCFS_ROOT_INODE, t.file, name, 256));
	/* Nothing of those was added; 255 bytes and "..." are fine. */
	EXPECT_EQ(0, incfs_check_dir(self->m.dir, root, 2, true)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, add_len(cmd, t.dir, t.file, name, 255)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_add_entry(cmd, t.dir, t.file, "...")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_add_entry(cmd, t.dir, t.file, ".x")) TH_LOG("%s", incfs_err);
	name[255] = '\0';
	{
		const char *const in_dir[] = { name, "...", ".x" };

		EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "dir"), in_dir, 3, false))
			TH_LOG("%s", incfs_err);
	}
}

TEST_F(ns, dirs_unknown_ino_enoent)
{
	struct tree t;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENOENT, incfs_add_entry(cmd, 1000000, t.file, "x"));
	EXPECT_EQ(-ENOENT, incfs_add_entry(cmd, t.dir, 1000000, "x"));
	EXPECT_EQ(-ENOENT, incfs_add_entry(cmd, t.dir, 0, "x"));
	EXPECT_EQ(-ENOENT, incfs_add_entry(cmd, t.file + 1000, t.file, "x"));
	EXPECT_EQ(-ENOENT, incfs_remove_entry(cmd, 1000000, t.file, "file"));
}

TEST_F(ns, dirs_not_a_directory_enotdir)
{
	struct tree t;
	__u64 other;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFREG | 0555, 1, &other)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENOTDIR, incfs_add_entry(cmd, t.file, other, "x"));
	EXPECT_EQ(-ENOTDIR, incfs_add_entry(cmd, t.file, t.dir, "x"));
	EXPECT_EQ(-ENOTDIR, incfs_remove_entry(cmd, t.file, other, "x"));
}

TEST_F(ns, dirs_existing_name_eexist)
{
	struct tree t;
	__u64 other;
	struct stat st;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFREG | 0555, 1, &other)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-EEXIST, incfs_add_entry(cmd, INCFS_ROOT_INODE, other, "file"));
	EXPECT_EQ(-EEXIST, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "file"));
	EXPECT_EQ(-EEXIST, incfs_add_entry(cmd, INCFS_ROOT_INODE, other, "dir"));
	/* The old name still names the old file. */
	ASSERT_EQ(0, stat(incfs_path(&self->m, "file"), &st));
	EXPECT_EQ(t.file, st.st_ino);
	EXPECT_EQ(1, st.st_nlink);
	/* .cmd is taken in the root, and only there. */
	EXPECT_EQ(-EEXIST, incfs_add_entry(cmd, INCFS_ROOT_INODE, other, ".cmd"));
	EXPECT_EQ(0, incfs_add_entry(cmd, t.dir, other, ".cmd")) TH_LOG("%s", incfs_err);
}

TEST_F(ns, dirs_second_name_for_dir_emlink)
{
	struct tree t;
	__u64 d2, nameless;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "dir2", &d2)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFDIR | 0555, 0, &nameless)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-EMLINK, incfs_add_entry(cmd, d2, t.dir, "again"));
	EXPECT_EQ(-EMLINK, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.dir, "again"));
	EXPECT_EQ(-EMLINK, incfs_add_entry(cmd, nameless, t.dir, "again"));
	/* Outside the tree, so that naming the root makes no loop. */
	EXPECT_EQ(-EMLINK, incfs_add_entry(cmd, nameless, INCFS_ROOT_INODE, "root"));
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "dir"), NULL, 0, false))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "dir2"), NULL, 0, false))
		TH_LOG("%s", incfs_err);
	/* Once its name is removed, a directory can be named again. */
	ASSERT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.dir, "dir"))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_add_entry(cmd, d2, t.dir, "moved")) TH_LOG("%s", incfs_err);
}

TEST_F(ns, dirs_dir_inside_itself_eloop)
{
	__u64 n, n2, n3;
	struct stat st;
	int cmd = self->m.cmd;

	/* Directories without a name, so that EMLINK does not apply. */
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFDIR | 0555, 0, &n)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFDIR | 0555, 0, &n2)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFDIR | 0555, 0, &n3)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ELOOP, incfs_add_entry(cmd, n, n, "self"));
	ASSERT_EQ(0, incfs_add_entry(cmd, n, n2, "n2")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, n2, n3, "n3")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ELOOP, incfs_add_entry(cmd, n2, n, "loop"));
	EXPECT_EQ(-ELOOP, incfs_add_entry(cmd, n3, n, "loop"));
	/* The chain is fine where it belongs. */
	EXPECT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, n, "n")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, stat(incfs_path(&self->m, "n/n2/n3"), &st));
	EXPECT_EQ(n3, st.st_ino);
	EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "n/n2/n3"), NULL, 0, false))
		TH_LOG("%s", incfs_err);
}

TEST_F(ns, dirs_remove_unknown_name_enoent)
{
	struct tree t;
	struct stat st;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENOENT, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.file, "nothing"));
	EXPECT_EQ(-ENOENT, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.dir, "file"));
	EXPECT_EQ(-ENOENT, incfs_remove_entry(cmd, t.dir, t.file, "file"));
	/* Both names are still there. */
	EXPECT_EQ(0, stat(incfs_path(&self->m, "file"), &st));
	EXPECT_EQ(0, stat(incfs_path(&self->m, "dir"), &st));
	EXPECT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.file, "file"))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENOENT, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.file, "file"));
}

TEST_F(ns, dirs_remove_nonempty_enotempty)
{
	struct tree t;
	struct stat st;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, t.dir, t.file, "inside")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENOTEMPTY, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.dir, "dir"));
	EXPECT_EQ(0, stat(incfs_path(&self->m, "dir/inside"), &st));
	ASSERT_EQ(0, incfs_remove_entry(cmd, t.dir, t.file, "inside")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, t.dir, "dir"))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "dir"), &st));
	EXPECT_EQ(ENOENT, errno);
}

TEST_F(ns, dirs_bad_header_einval)
{
	const __u32 versions[] = { 0, 2, 0xffffffff };
	const __u32 types[] = { 2, 5, 100, 0xffffffff };
	struct incfs_instruction inst;
	int cmd = self->m.cmd;

	for (unsigned int i = 0; i < ARRAY_SIZE(versions); i++) {
		memset(&inst, 0, sizeof(inst));
		inst.version = versions[i];
		inst.type = INCFS_INSTRUCTION_NEW_FILE;
		inst.file.mode = S_IFREG | 0555;
		EXPECT_EQ(-EINVAL, incfs_instr(cmd, &inst)) TH_LOG("version %u", versions[i]);
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(types); i++) {
		memset(&inst, 0, sizeof(inst));
		inst.version = INCFS_HEADER_VER;
		inst.type = types[i];
		inst.file.mode = S_IFREG | 0555;
		EXPECT_EQ(-EINVAL, incfs_instr(cmd, &inst)) TH_LOG("type %u", types[i]);
	}
	EXPECT_EQ(-EFAULT, ioctl(cmd, INCFS_IOC_PROCESS_INSTRUCTION, (void *)8) ? -errno : 0);
}

/*
 * Reserved fields of an instruction must be zero (the whole body of a
 * NOOP): EINVAL, and nothing is stored.
 */
TEST_F(ns, dirs_reserved_fields_einval)
{
	static const char name[] = "x";
	struct incfs_instruction inst;
	struct stat st;
	__u64 ino;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, incfs_new_file(cmd, S_IFREG | 0555, 10, &ino)) TH_LOG("%s", incfs_err);
	/* NEW_FILE: every reserved byte, one at a time. */
	for (size_t off = offsetof(struct incfs_new_file_instruction, reserved1);
	     off < sizeof(inst.file); off++) {
		memset(&inst, 0, sizeof(inst));
		inst.version = INCFS_HEADER_VER;
		inst.type = INCFS_INSTRUCTION_NEW_FILE;
		inst.file.mode = S_IFREG | 0555;
		((unsigned char *)&inst.file)[off] = 0x80;
		EXPECT_EQ(-EINVAL, incfs_instr(cmd, &inst)) TH_LOG("byte %zu", off);
	}
	/* ADD and REMOVE: reserved1, and reserved2..5 after the name. */
	for (int type = INCFS_INSTRUCTION_ADD_DIR_ENTRY;
	     type <= INCFS_INSTRUCTION_REMOVE_DIR_ENTRY; type++) {
		for (int field = 0; field < 5; field++) {
			memset(&inst, 0, sizeof(inst));
			inst.version = INCFS_HEADER_VER;
			inst.type = type;
			inst.dir_entry.dir_ino = INCFS_ROOT_INODE;
			inst.dir_entry.child_ino = ino;
			inst.dir_entry.name_len = 1;
			inst.dir_entry.name = (__u64)(uintptr_t)name;
			if (field == 0)
				inst.dir_entry.reserved1 = 1;
			else
				(&inst.dir_entry.reserved2)[field - 1] = 1;
			EXPECT_EQ(-EINVAL, incfs_instr(cmd, &inst))
				TH_LOG("type %d reserved%d", type, field + 1);
		}
	}
	/* NOOP: its body is reserved. */
	memset(&inst, 0, sizeof(inst));
	inst.version = INCFS_HEADER_VER;
	EXPECT_EQ(0, incfs_instr(cmd, &inst));
	inst.reserved[63] = 1;
	EXPECT_EQ(-EINVAL, incfs_instr(cmd, &inst));
	/* Nothing was stored. */
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "x"), &st));
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "x"), &st));
	EXPECT_EQ(0, incfs_add_entry(self->m.cmd, INCFS_ROOT_INODE, ino, "x"));
}

TEST_F(ns, dirs_new_file_bad_mode_einval)
{
	const __u16 modes[] = { 0555, S_IFLNK | 0555, S_IFCHR | 0555, S_IFBLK | 0555,
				S_IFIFO | 0555, S_IFSOCK | 0555, S_IFREG | S_IFDIR | 0555 };
	__u64 ino;

	for (unsigned int i = 0; i < ARRAY_SIZE(modes); i++) {
		EXPECT_EQ(-EINVAL, incfs_new_file(self->m.cmd, modes[i], 0, &ino))
			TH_LOG("mode 0%o", modes[i]);
	}
}

TEST_F(ns, dirs_new_file_too_big_efbig)
{
	__u64 ino;

	EXPECT_EQ(-EFBIG, incfs_new_file(self->m.cmd, S_IFREG | 0555, (64ull << 30) + 1, &ino));
	EXPECT_EQ(-EFBIG, incfs_new_file(self->m.cmd, S_IFREG | 0555, 1ull << 40, &ino));
	EXPECT_EQ(-EFBIG, incfs_new_file(self->m.cmd, S_IFREG | 0555, ~0ull, &ino));
}

TEST_F(ns, dirs_other_ioctl_enotty)
{
	struct incfs_instruction inst = { .version = INCFS_HEADER_VER };
	const unsigned long cmds[] = {
		_IOWR(INCFS_IOCTL_BASE_CODE, 31, struct incfs_instruction),
		_IOWR(INCFS_IOCTL_BASE_CODE, 29, struct incfs_instruction),
		_IOW(INCFS_IOCTL_BASE_CODE, 30, struct incfs_instruction),
		_IOR(INCFS_IOCTL_BASE_CODE, 30, struct incfs_instruction),
		_IO(INCFS_IOCTL_BASE_CODE, 30),
		_IOWR('f', 30, struct incfs_instruction),
		0x1234,
	};

	for (unsigned int i = 0; i < ARRAY_SIZE(cmds); i++) {
		EXPECT_EQ(-ENOTTY, ioctl(self->m.cmd, cmds[i], &inst) ? -errno : 0)
			TH_LOG("ioctl 0x%lx", cmds[i]);
	}
}

TEST_F(ns, dirs_rejected_instructions_not_stored)
{
	static const char *const root[] = { "dir", "file" };
	struct tree t;
	struct stat st;
	__u64 ino;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, make_tree(cmd, &t)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-EINVAL, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "a/b"));
	EXPECT_EQ(-EEXIST, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.file, "dir"));
	EXPECT_EQ(-EMLINK, incfs_add_entry(cmd, INCFS_ROOT_INODE, t.dir, "dir-again"));
	EXPECT_EQ(-EINVAL, incfs_new_file(cmd, S_IFLNK | 0555, 0, &ino));
	EXPECT_EQ(-EFBIG, incfs_new_file(cmd, S_IFREG | 0555, 1ull << 40, &ino));
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_dir(self->m.dir, root, 2, true)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "file"), &st));
	EXPECT_EQ(t.file, st.st_ino);
	EXPECT_EQ(1, st.st_nlink);
	EXPECT_EQ(100, st.st_size);
	/* New inode numbers do not collide with the stored ones. */
	ASSERT_EQ(0, incfs_new_file(self->m.cmd, S_IFREG | 0555, 0, &ino)) TH_LOG("%s", incfs_err);
	EXPECT_NE(t.file, ino);
	EXPECT_NE(t.dir, ino);
	EXPECT_NE(INCFS_ROOT_INODE, ino);
	EXPECT_NE(INCFS_COMMAND_INODE, ino);
}

TEST_F_TIMEOUT(ns, file_count_limit, 180)
{
	__u64 ino, first = 0, last = 0;
	int cmd = self->m.cmd;

	/* The root is the first of INCFS_MAX_FILES inodes. */
	for (int i = 1; i < INCFS_MAX_FILES; i++) {
		__u16 mode = i % 2 ? S_IFREG | 0555 : S_IFDIR | 0555;

		ASSERT_EQ(0, incfs_new_file(cmd, mode, i % 2 ? i : 0, &ino))
			TH_LOG("inode %d of %d: %s", i + 1, INCFS_MAX_FILES, incfs_err);
		if (!first)
			first = ino;
		last = ino;
		if (i % 50 == 0) {
			char name[16];

			snprintf(name, sizeof(name), "n%d", i);
			ASSERT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, ino, name))
				TH_LOG("%s", incfs_err);
		}
	}
	EXPECT_EQ(-ENFILE, incfs_new_file(cmd, S_IFREG | 0555, 1, &ino));
	EXPECT_EQ(-ENFILE, incfs_new_file(cmd, S_IFDIR | 0555, 0, &ino));
	/* Names still come and go at the limit. */
	EXPECT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, first, "first"))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, last, "last")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, first, "first"))
		TH_LOG("%s", incfs_err);
	/* Removing names frees no inode, and a remount keeps the count. */
	ASSERT_EQ(0, incfs_remount(&self->m, TIMEOUT_MS)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-ENFILE, incfs_new_file(self->m.cmd, S_IFREG | 0555, 1, &ino));
	EXPECT_EQ(-ENFILE, incfs_new_file(self->m.cmd, S_IFDIR | 0555, 0, &ino));
}

/* ----- the VFS sees a read-only tree ----- */

TEST_F(ns, vfs_is_read_only)
{
	static const char *const root[] = { "d", "f" };
	struct timespec times[2] = { { 1000, 0 }, { 2000, 0 } };
	struct incfs_file f;
	__u64 d, sub;
	int cmd = self->m.cmd;

	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "d", &d)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, d, "sub", &sub)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(cmd, INCFS_ROOT_INODE, "f", &f, 5000, 1, true))
		TH_LOG("%s", incfs_err);

#define EXPECT_EPERM(call) do { \
		errno = 0; \
		EXPECT_EQ(-1, (int)(call)) TH_LOG("%s succeeded", #call); \
		EXPECT_EQ(EPERM, errno) TH_LOG("%s: %s", #call, strerror(errno)); \
	} while (0)

	EXPECT_EPERM(creat(incfs_path(&self->m, "new"), 0644));
	EXPECT_EPERM(creat(incfs_path(&self->m, "f"), 0644));
	EXPECT_EPERM(open(incfs_path(&self->m, "new"), O_RDONLY | O_CREAT, 0644));
	EXPECT_EPERM(open(incfs_path(&self->m, "d/new"), O_RDWR | O_CREAT | O_EXCL, 0644));
	EXPECT_EPERM(mkdir(incfs_path(&self->m, "newdir"), 0755));
	EXPECT_EPERM(mkdir(incfs_path(&self->m, "d/sub/newdir"), 0755));
	EXPECT_EPERM(mknod(incfs_path(&self->m, "fifo"), S_IFIFO | 0644, 0));
	EXPECT_EPERM(mknod(incfs_path(&self->m, "null"), S_IFCHR | 0644, makedev(1, 3)));
	EXPECT_EPERM(symlink("f", incfs_path(&self->m, "sym")));
	EXPECT_EPERM(link(incfs_path(&self->m, "f"), incfs_path(&self->m, "hard")));
	EXPECT_EPERM(link(incfs_path(&self->m, "f"), incfs_path(&self->m, "d/hard")));
	EXPECT_EPERM(unlink(incfs_path(&self->m, "f")));
	EXPECT_EPERM(rmdir(incfs_path(&self->m, "d/sub")));
	EXPECT_EPERM(rename(incfs_path(&self->m, "f"), incfs_path(&self->m, "g")));
	EXPECT_EPERM(rename(incfs_path(&self->m, "f"), incfs_path(&self->m, "d/f")));
	EXPECT_EPERM(rename(incfs_path(&self->m, "d/sub"), incfs_path(&self->m, "sub")));
	EXPECT_EPERM(open(incfs_path(&self->m, "f"), O_WRONLY));
	EXPECT_EPERM(open(incfs_path(&self->m, "f"), O_RDWR));
	EXPECT_EPERM(open(incfs_path(&self->m, "f"), O_RDONLY | O_TRUNC));
	EXPECT_EPERM(open(incfs_path(&self->m, "f"), O_WRONLY | O_APPEND));
	EXPECT_EPERM(truncate(incfs_path(&self->m, "f"), 0));
	EXPECT_EPERM(truncate(incfs_path(&self->m, "f"), 100000));
	EXPECT_EPERM(chmod(incfs_path(&self->m, "f"), 0777));
	EXPECT_EPERM(chmod(incfs_path(&self->m, "d"), 0777));
	EXPECT_EPERM(chmod(self->m.dir, 0777));
	EXPECT_EPERM(chown(incfs_path(&self->m, "f"), 1000, 1000));
	EXPECT_EPERM(chown(incfs_path(&self->m, "d"), 0, 1000));
	EXPECT_EPERM(utimensat(AT_FDCWD, incfs_path(&self->m, "f"), times, 0));
	EXPECT_EPERM(utimensat(AT_FDCWD, incfs_path(&self->m, "f"), NULL, 0));
	EXPECT_EPERM(utimensat(AT_FDCWD, incfs_path(&self->m, "d"), times, 0));
#undef EXPECT_EPERM

	/* Nothing changed. */
	EXPECT_EQ(0, incfs_check_dir(self->m.dir, root, 2, true)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_stat(incfs_path(&self->m, "f"), f.ino, 5000, S_IFREG | 0555, 1))
		TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &f)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_stat(incfs_path(&self->m, "d/sub"), sub, 0, S_IFDIR | 0555, 2))
		TH_LOG("%s", incfs_err);
}

/* ----- stat ----- */

TEST_F(ns, stat_fields)
{
	const struct { __u16 mode; mode_t want; __u64 size; } files[] = {
		{ S_IFREG | 0777, S_IFREG | 0555, 0 },
		{ S_IFREG | 0555, S_IFREG | 0555, 1 },
		{ S_IFREG | 0500, S_IFREG | 0500, 4096 },
		{ S_IFREG | 0444, S_IFREG | 0444, 6144 },
		{ S_IFREG | 0, S_IFREG | 0, 4097 },
		{ S_IFREG | 0640, S_IFREG | 0440, 123456789 },
		{ S_IFREG | S_ISUID | S_ISGID | 0755, S_IFREG | 0555, (1ull << 30) + 1 },
		{ S_IFDIR | 0777, S_IFDIR | 0555, 0 },
		{ S_IFDIR | 0700, S_IFDIR | 0500, 0 },
		{ S_IFDIR | S_ISVTX | 0755, S_IFDIR | 0555, 0 },
	};
	int n = ARRAY_SIZE(files), dirs = 0;
	int cmd = self->m.cmd;
	struct stat st;

	for (int i = 0; i < n; i++) {
		char name[16];
		__u64 ino;

		snprintf(name, sizeof(name), "n%d", i);
		ASSERT_EQ(0, incfs_make(cmd, INCFS_ROOT_INODE, name, files[i].mode, files[i].size,
					&ino)) TH_LOG("%s", incfs_err);
		ASSERT_EQ(0, stat(incfs_path(&self->m, name), &st)) TH_LOG("%s", name);
		EXPECT_EQ(ino, st.st_ino) TH_LOG("%s", name);
		EXPECT_EQ(files[i].want, st.st_mode)
			TH_LOG("%s: mode 0%o requested, 0%o shown, 0%o expected", name,
			       files[i].mode, st.st_mode, files[i].want);
		if (S_ISREG(files[i].mode)) {
			EXPECT_EQ(files[i].size, st.st_size) TH_LOG("%s", name);
			EXPECT_EQ(1, st.st_nlink) TH_LOG("%s", name);
		} else {
			EXPECT_EQ(2, st.st_nlink) TH_LOG("%s", name);
			dirs++;
		}
	}
	/* The root: 2 plus its subdirectories. */
	ASSERT_EQ(0, stat(self->m.dir, &st));
	EXPECT_EQ(2 + dirs, st.st_nlink);
}

TEST_F(ns, stat_nlink)
{
	__u64 f, d, s1, s2, s3, nameless;
	int cmd = self->m.cmd;
	struct stat st;

	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "d", &d)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make(cmd, INCFS_ROOT_INODE, "f", S_IFREG | 0555, 10, &f))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, d, f, "f2")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, f, "f3")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d/f2"), &st));
	EXPECT_EQ(3, st.st_nlink);
	ASSERT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, f, "f3")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "f"), &st));
	EXPECT_EQ(2, st.st_nlink);

	ASSERT_EQ(0, incfs_make_dir(cmd, d, "s1", &s1)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, d, "s2", &s2)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_dir(cmd, d, "s3", &s3)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_new_file(cmd, S_IFDIR | 0555, 0, &nameless)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d"), &st));
	EXPECT_EQ(5, st.st_nlink);
	ASSERT_EQ(0, stat(self->m.dir, &st));
	EXPECT_EQ(3, st.st_nlink);
	ASSERT_EQ(0, incfs_remove_entry(cmd, d, s2, "s2")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d"), &st));
	EXPECT_EQ(4, st.st_nlink);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d/s1"), &st));
	EXPECT_EQ(2, st.st_nlink);
	/* A nameless directory counts nowhere until it is named. */
	ASSERT_EQ(0, incfs_add_entry(cmd, s1, nameless, "late")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d/s1"), &st));
	EXPECT_EQ(3, st.st_nlink);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d"), &st));
	EXPECT_EQ(4, st.st_nlink);
}

/* ----- hard links ----- */

TEST_F(ns, hard_links)
{
	struct incfs_file f;
	struct stat st1, st2;
	__u64 d;
	int cmd = self->m.cmd, fd;

	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "d", &d)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(cmd, INCFS_ROOT_INODE, "a", &f, 3 * INCFS_BS + 7, 42, false))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send_range(cmd, &f, 0, 3, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, d, f.ino, "b")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "a"), &st1));
	ASSERT_EQ(0, stat(incfs_path(&self->m, "d/b"), &st2));
	EXPECT_EQ(f.ino, st1.st_ino);
	EXPECT_EQ(st1.st_ino, st2.st_ino);
	EXPECT_EQ(2, st2.st_nlink);
	EXPECT_EQ(st1.st_size, st2.st_size);

	/* A block delivered once shows through both names. */
	ASSERT_EQ(0, incfs_send_range(cmd, &f, 3, 1, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "a"), &f)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "d/b"), &f)) TH_LOG("%s", incfs_err);

	/* Removing one name keeps the other, and an open file on the removed one. */
	fd = open(incfs_path(&self->m, "d/b"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, incfs_remove_entry(cmd, d, f.ino, "b")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "d/b"), &st2));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "a"), &f)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_read_all(fd, &f, 4096)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, fstat(fd, &st2));
	EXPECT_EQ(1, st2.st_nlink);
	EXPECT_EQ(f.ino, st2.st_ino);

	/* A file without names still takes data and is read through an open file. */
	ASSERT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, f.ino, "a")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, fstat(fd, &st2));
	EXPECT_EQ(0, st2.st_nlink);
	EXPECT_EQ(0, incfs_check_read_all(fd, &f, 5000)) TH_LOG("%s", incfs_err);
	close(fd);
	/* ... and can be named again. */
	ASSERT_EQ(0, incfs_add_entry(cmd, d, f.ino, "again")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "d/again"), &f)) TH_LOG("%s", incfs_err);
}

/* ----- names change while files are open and read ----- */

TEST_F_TIMEOUT(ns, dynamic_files_and_data, 60)
{
	struct incfs_file f, h;
	struct stat st;
	__u64 sub;
	pid_t reader;
	int cmd = self->m.cmd, fd;

	/* Long waits: the reader waits for blocks delivered later. */
	ASSERT_EQ(0, incfs_remount(&self->m, 20000)) TH_LOG("%s", incfs_err);
	cmd = self->m.cmd;
	ASSERT_EQ(0, incfs_make_file(cmd, INCFS_ROOT_INODE, "f", &f, 8 * INCFS_BS, 7, false))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_send_range(cmd, &f, 0, 4, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	/* A negative lookup first, to be invalidated by ADD later. */
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "g"), &st));
	EXPECT_EQ(ENOENT, errno);

	fd = open(incfs_path(&self->m, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	reader = incfs_fork_reader(incfs_path(&self->m, "f"), &f, 0, f.size);
	ASSERT_LT(0, reader);
	ASSERT_EQ(0, incfs_wait_pending_block(&self->m, f.ino, 4, 10000)) TH_LOG("%s", incfs_err);

	/* Rename f to sub/g while it is read; add an unrelated file. */
	ASSERT_EQ(0, incfs_make_dir(cmd, INCFS_ROOT_INODE, "sub", &sub)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, sub, f.ino, "g")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, f.ino, "g")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, f.ino, "f")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, stat(incfs_path(&self->m, "g"), &st));
	EXPECT_EQ(f.ino, st.st_ino);
	EXPECT_EQ(-1, stat(incfs_path(&self->m, "f"), &st));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, incfs_send_range(cmd, &f, 4, 2, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_make_file(cmd, sub, "h", &h, 3 * INCFS_BS + 1, 8, true))
		TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, incfs_remove_entry(cmd, INCFS_ROOT_INODE, f.ino, "g")) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "sub/h"), &h)) TH_LOG("%s", incfs_err);
	/* A name reused for another file shows the other file. */
	ASSERT_EQ(0, incfs_add_entry(cmd, INCFS_ROOT_INODE, h.ino, "f")) TH_LOG("%s", incfs_err);
	ASSERT_EQ(0, stat(incfs_path(&self->m, "f"), &st));
	EXPECT_EQ(h.ino, st.st_ino);
	EXPECT_EQ(h.size, st.st_size);
	ASSERT_EQ(0, incfs_send_range(cmd, &f, 6, 2, INCFS_SEND_NONE)) TH_LOG("%s", incfs_err);

	EXPECT_EQ(0, incfs_wait_child(reader, 20000));
	EXPECT_EQ(0, incfs_check_read_all(fd, &f, 8192)) TH_LOG("%s", incfs_err);
	close(fd);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "sub/g"), &f)) TH_LOG("%s", incfs_err);
	EXPECT_EQ(0, incfs_check_path(incfs_path(&self->m, "f"), &h)) TH_LOG("%s", incfs_err);
	{
		static const char *const root[] = { "sub", "f" };
		static const char *const in_sub[] = { "g", "h" };

		EXPECT_EQ(0, incfs_check_dir(self->m.dir, root, 2, true)) TH_LOG("%s", incfs_err);
		EXPECT_EQ(0, incfs_check_dir(incfs_path(&self->m, "sub"), in_sub, 2, false))
			TH_LOG("%s", incfs_err);
	}
}

TEST_HARNESS_MAIN
