/* SPDX-License-Identifier: GPL-2.0 */
/*
 * incfs-loader: its exit codes and the one error message main() prints.
 */
#ifndef INCFS_LOADER_ERRORS_H
#define INCFS_LOADER_ERRORS_H

/* Exit codes (README.md, "Exit codes"). */
enum {
	EX_DONE = 0,
	EX_USAGE = 1,		/* bad options or a bad manifest */
	EX_SOURCE = 2,		/* source missing, unreadable or too short */
	EX_MOUNT = 3,		/* mount or .cmd failed */
	EX_NAMES = 4,		/* an instruction failed, or a name conflicts */
	EX_BLOCK = 5,		/* the kernel rejected a block */
	EX_INTERNAL = 6,	/* out of memory and the like */
	EX_OUTPUT = 7,		/* --learn-hot's file cannot be written */
};

/*
 * The convention of every part of the loader: a function that can fail
 * returns 0 (or, where its comment says so, another value >= 0) on
 * success and -EX_* on failure.  The failure is described once, where it
 * is detected, by ld_error(); the callers pass its value up unchanged and
 * main() exits with its opposite.  A lookup that finds nothing (app_find)
 * is not a failure: it returns -1.
 *
 * Record the message main() prints (the first one only); returns -code.
 */
int ld_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The recorded message, or NULL. */
const char *ld_error_message(void);
/* Forget it (for a test that provokes one error after another). */
void ld_error_clear(void);

#endif /* INCFS_LOADER_ERRORS_H */
