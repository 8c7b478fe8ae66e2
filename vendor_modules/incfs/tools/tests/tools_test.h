/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the host tests of the incfs tools share; included after
 * kselftest_harness.h.
 */
#ifndef INCFS_TOOLS_TEST_H
#define INCFS_TOOLS_TEST_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/*
 * The end of a case that worked in folder @dir: if it passed, check for
 * leaks (under ASan) and remove the folder; if not, leave it for a look.
 */
static inline void tools_test_cleanup(struct __test_metadata *_metadata,
				      const char *dir)
{
	char cmd[PATH_MAX + 16];

	if (_metadata->exit_code != KSFT_PASS)
		return;
#ifdef HAVE_LSAN
	EXPECT_EQ(0, __lsan_do_recoverable_leak_check())
		TH_LOG("memory leaked (LeakSanitizer's report above)");
#endif
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	EXPECT_EQ(0, system(cmd));
}

#endif /* INCFS_TOOLS_TEST_H */
