// SPDX-License-Identifier: GPL-2.0
/*
 * Signed GKI modules and their protected exports (CONFIG_MODULE_SIG,
 * CONFIG_MODULE_SIG_PROTECT): the GKI's own modules load as signed, one
 * whose bytes or signature were changed is refused, an unsigned module that
 * exports a GKI module's symbol is refused, and other unsigned modules load.
 */
#include <sys/stat.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#define PROTECTED	"/modules/test/test_module/gki_protected_export.ko"
#define PROTECTED_SIGNED "/data/gki_protected_export.signed.ko"
#define PROTECTED_NAME	"gki_protected_export"
#define PROTECTED_MSG	PROTECTED_NAME ": exports protected symbol l2tp_tunnel_put"
#define ORDINARY	"/modules/test/test_module/gki_test_module.ko"
#define ORDINARY_NAME	"gki_test_module"
#define SIG_MAGIC	"~Module signature appended~\n"
#define SIG_INFO_LEN	12	/* struct module_signature */
#define BROKEN		"/tmp/module_sig_broken.ko"

/* A GKI module with no dependencies: the release's, else the debug's. */
static const char *const gki_modules[] = { "tcp_bic", "kunit" };

static const char *gki_module(char *path, size_t size)
{
	for (size_t i = 0; i < ARRAY_SIZE(gki_modules); i++) {
		snprintf(path, size, "/modules/gki/%s.ko", gki_modules[i]);
		if (!access(path, R_OK))
			return gki_modules[i];
	}
	return NULL;
}

/* /sys/module/name/taint: the module's taint letters, "" for none. */
static char *taint_of(const char *name)
{
	char path[256], *t;

	snprintf(path, sizeof(path), "/sys/module/%s/taint", name);
	t = gki_read_file(path, NULL);
	if (t)
		t[strcspn(t, "\n")] = '\0';
	return t;
}

/*
 * path's bytes with the byte at offset (from the end if negative) flipped,
 * written to BROKEN; 0 or -1.
 */
static int write_flipped(const char *path, long offset)
{
	size_t len;
	char *buf = gki_read_file(path, &len);
	int fd, ok;

	if (!buf)
		return -1;
	if (offset < 0)
		offset += len;
	if (offset < 0 || (size_t)offset >= len) {
		free(buf);
		return -1;
	}
	buf[offset] ^= 0x5a;
	fd = open(BROKEN, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ok ? 0 : -1;
}

TEST(gki_modules_carry_a_signature)
{
	char path[64];
	size_t len;
	char *buf;

	ASSERT_NE(NULL, gki_module(path, sizeof(path)));
	buf = gki_read_file(path, &len);
	ASSERT_NE(NULL, buf);
	ASSERT_LT(sizeof(SIG_MAGIC) - 1 + SIG_INFO_LEN, len);
	EXPECT_EQ(0, memcmp(buf + len - (sizeof(SIG_MAGIC) - 1), SIG_MAGIC,
			    sizeof(SIG_MAGIC) - 1));
	free(buf);
}

TEST(gki_module_loads_as_signed)
{
	char path[64];
	const char *name = gki_module(path, sizeof(path));
	int loaded_before;
	char *taint;

	ASSERT_NE(NULL, name);
	loaded_before = gki_module_loaded(name);
	if (!loaded_before)
		ASSERT_EQ(0, gki_load_module(path, ""));
	taint = taint_of(name);
	ASSERT_NE(NULL, taint);
	TH_LOG("%s: taint \"%s\"", name, taint);
	/* E: loaded unsigned, or with a key the kernel does not trust */
	EXPECT_EQ(NULL, strchr(taint, 'E'));
	free(taint);
	if (!loaded_before)
		EXPECT_EQ(0, gki_unload_module(name));
}

TEST(gki_module_with_a_changed_byte_is_refused)
{
	char path[64];
	const char *name = gki_module(path, sizeof(path));
	int loaded_before;
	struct stat st;

	ASSERT_NE(NULL, name);
	loaded_before = gki_module_loaded(name);
	ASSERT_EQ(0, stat(path, &st));
	/* One byte in the middle of the module's code and data. */
	ASSERT_EQ(0, write_flipped(path, st.st_size / 2));
	EXPECT_EQ(-EKEYREJECTED, gki_load_module(BROKEN, ""));
	EXPECT_EQ(loaded_before, gki_module_loaded(name));
	unlink(BROKEN);
}

TEST(gki_module_with_a_broken_signature_is_refused)
{
	char path[64];
	const char *name = gki_module(path, sizeof(path));
	int loaded_before;

	ASSERT_NE(NULL, name);
	loaded_before = gki_module_loaded(name);
	/* The last byte of the PKCS#7 message: the RSA signature's. */
	ASSERT_EQ(0, write_flipped(path, -(long)(sizeof(SIG_MAGIC) - 1 + SIG_INFO_LEN + 1)));
	EXPECT_EQ(-EKEYREJECTED, gki_load_module(BROKEN, ""));
	EXPECT_EQ(loaded_before, gki_module_loaded(name));
	unlink(BROKEN);
}

TEST(unsigned_module_exporting_a_protected_symbol_is_refused)
{
	int before = gki_klog_count(PROTECTED_MSG);

	ASSERT_LE(0, before);
	/* Not refused as a duplicate: the GKI module is not loaded. */
	ASSERT_FALSE(gki_module_loaded("l2tp_core"));
	EXPECT_EQ(-EACCES, gki_load_module(PROTECTED, ""));
	EXPECT_EQ(before + 1, gki_klog_count(PROTECTED_MSG));
	EXPECT_FALSE(gki_module_loaded(PROTECTED_NAME));
}

TEST(signed_module_may_export_a_protected_symbol)
{
	char *taint;

	ASSERT_FALSE(gki_module_loaded("l2tp_core"));
	ASSERT_EQ(0, gki_load_module(PROTECTED_SIGNED, ""));
	taint = taint_of(PROTECTED_NAME);
	ASSERT_NE(NULL, taint);
	EXPECT_EQ(NULL, strchr(taint, 'E'));
	free(taint);
	EXPECT_EQ(0, gki_unload_module(PROTECTED_NAME));
}

TEST(unsigned_module_without_protected_exports_loads)
{
	char *taint;

	ASSERT_EQ(0, gki_load_module(ORDINARY, ""));
	taint = taint_of(ORDINARY_NAME);
	ASSERT_NE(NULL, taint);
	/* O: built out of tree; E: unsigned */
	EXPECT_NE(NULL, strchr(taint, 'E'));
	EXPECT_NE(NULL, strchr(taint, 'O'));
	free(taint);
	EXPECT_EQ(0, gki_unload_module(ORDINARY_NAME));
}

TEST_HARNESS_MAIN
