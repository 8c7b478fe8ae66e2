/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the guest suites (kselftest-harness programs).
 */
#ifndef GKI_TEST_H
#define GKI_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYSLOG_ACTION_READ_ALL	3
#define SYSLOG_ACTION_SIZE_BUFFER 10

/* Read a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
static inline char *gki_read_file(const char *path, size_t *lenp)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (!buf || fd < 0)
		goto fail;
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len - 1 == 0) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				goto fail;
			buf = bigger;
			cap *= 2;
		}
	}
	if (n < 0)
		goto fail;
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/* The output of a shell command, as gki_read_file(). */
static inline char *gki_command_output(const char *cmd)
{
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);
	FILE *p = popen(cmd, "r");

	if (!buf || !p) {
		free(buf);
		if (p)
			pclose(p);
		return NULL;
	}
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len == cap - 1) {
			char *bigger = realloc(buf, cap * 2);

			if (!bigger)
				break;
			buf = bigger;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	if (pclose(p) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* How many times needle occurs in the kernel log ring buffer; -1 on error. */
static inline int gki_klog_count(const char *needle)
{
	int size = klogctl(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0);
	char *buf, *p;
	int n, count = 0;

	if (size <= 0)
		return -1;
	buf = malloc(size + 1);
	if (!buf)
		return -1;
	n = klogctl(SYSLOG_ACTION_READ_ALL, buf, size);
	if (n < 0) {
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	for (p = buf; (p = strstr(p, needle)); p += strlen(needle))
		count++;
	free(buf);
	return count;
}

/* The line of a text that starts with prefix, or NULL. */
static inline const char *gki_find_line(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, prefix, n))
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/*
 * The kernel's crc32_le(seed, p, len): reflected polynomial 0xedb88320,
 * the seed as the initial value, no final inversion.  Bit by bit: a guest
 * test's oracle, written apart from any table-driven copy it checks.
 */
static inline unsigned int gki_crc32_le(unsigned int crc, const void *buf,
					size_t len)
{
	const unsigned char *p = buf;

	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return crc;
}

/* finit_module(2) of a .ko with a parameter string; 0 or -errno. */
static inline int gki_load_module(const char *path, const char *params)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* delete_module(2) as rmmod does it; 0 or -errno. */
static inline int gki_unload_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/* Whether /sys/module/name exists: the module is loaded (or built in). */
static inline int gki_module_loaded(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return access(path, F_OK) == 0;
}

#endif /* GKI_TEST_H */
