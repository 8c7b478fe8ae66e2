// SPDX-License-Identifier: GPL-2.0
/*
 * showmap - memory use per mapping name, from /proc/<pid>/smaps.
 *
 * Sums Size, Rss, Pss, Private_Clean, Private_Dirty, Shared (clean plus
 * dirty) and Swap, in KiB, per name: [anon:NAME] and [anon_shmem:NAME] as
 * named with prctl(PR_SET_VMA_ANON_NAME), file paths, [heap], [stack], and
 * "[anon]" for unnamed anonymous memory.  Sorted by Pss, largest first,
 * with a total line.  This is what anonymous VMA naming is for.
 *
 * Exit status: 0 on success, 1 when a process or file cannot be read or a
 * line is malformed (one message on stderr), 2 on bad usage.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum field { SIZE, RSS, PSS, PRIV_CLEAN, PRIV_DIRTY, SHARED, SWAP, NR_FIELDS };

/* smaps keys summed into each field; Shared_Clean and Shared_Dirty add up. */
static const struct {
	const char *key;
	enum field field;
} keys[] = {
	{ "Size", SIZE }, { "Rss", RSS }, { "Pss", PSS },
	{ "Private_Clean", PRIV_CLEAN }, { "Private_Dirty", PRIV_DIRTY },
	{ "Shared_Clean", SHARED }, { "Shared_Dirty", SHARED }, { "Swap", SWAP },
};

static const char *const columns[NR_FIELDS] = {
	"size_kib", "rss_kib", "pss_kib", "private_clean_kib", "private_dirty_kib",
	"shared_kib", "swap_kib",
};

struct usage {
	char *name;
	unsigned long long kib[NR_FIELDS];
};

struct table {
	struct usage *rows;
	size_t len, cap;
};

enum format { TEXT, CSV, JSON };

static const char *prog = "showmap";

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p)
		fail("out of memory");
	return p;
}

/* The row for name, created on first use. */
static struct usage *row(struct table *t, const char *name)
{
	struct usage *u;

	for (size_t i = t->len; i-- > 0;)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	if (t->len == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->rows = xrealloc(t->rows, t->cap * sizeof(*t->rows));
	}
	u = &t->rows[t->len++];
	memset(u, 0, sizeof(*u));
	u->name = strdup(name);
	if (!u->name)
		fail("out of memory");
	return u;
}

/* The name of a mapping from its smaps header line; NULL if malformed. */
static const char *header_name(const char *line, char *buf, size_t size)
{
	unsigned long start, end, off, ino;
	unsigned int maj, min;
	char perms[5];
	int n = 0;

	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu%n", &start, &end, perms, &off,
		   &maj, &min, &ino, &n) != 7 || start > end)
		return NULL;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	snprintf(buf, size, "%.*s", (int)strcspn(line, "\n"), line);
	if (!buf[0])
		snprintf(buf, size, "[anon]");
	return buf;
}

/*
 * "Key:   123 kB": 1 and the field when it is one we sum, 0 for another
 * key, -1 when the line is malformed.
 */
static int field_line(const char *line, enum field *field, unsigned long long *kib)
{
	size_t klen = strcspn(line, ":");
	char *end;

	if (!line[klen] || !klen)
		return -1;
	for (size_t i = 0; i < klen; i++)
		if (!isalnum((unsigned char)line[i]) && line[i] != '_')
			return -1;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (strlen(keys[i].key) != klen || strncmp(line, keys[i].key, klen))
			continue;
		errno = 0;
		*kib = strtoull(line + klen + 1, &end, 10);
		if (errno || end == line + klen + 1 || strncmp(end, " kB", 3) ||
		    (end[3] && end[3] != '\n'))
			return -1;
		*field = keys[i].field;
		return 1;
	}
	return 0;
}

/* Add one smaps file to t; returns 0, or the errno of opening it. */
static int add_smaps(struct table *t, const char *path)
{
	char line[PATH_MAX + 256], name[PATH_MAX + 128];
	struct usage *cur = NULL;
	unsigned long lineno = 0;
	unsigned long long kib;
	enum field f;
	FILE *fp = fopen(path, "r");

	if (!fp)
		return errno;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		if (header_name(line, name, sizeof(name))) {
			cur = row(t, name);
			continue;
		}
		switch (field_line(line, &f, &kib)) {
		case 1:
			if (!cur)
				break;
			cur->kib[f] += kib;
			continue;
		case 0:
			if (cur)
				continue;
			break;
		}
		fail("%s:%lu: malformed line: %.*s", path, lineno,
		     (int)strcspn(line, "\n"), line);
	}
	if (ferror(fp))
		fail("%s: %s", path, strerror(errno));
	fclose(fp);
	return 0;
}

static void add_pid(struct table *t, const char *pid)
{
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%s/smaps", pid);
	err = add_smaps(t, path);
	if (err == ENOENT)
		fail("no such process: %s", pid);
	if (err == EACCES || err == EPERM)
		fail("permission denied reading %s (run as root or as the process's user)",
		     path);
	if (err)
		fail("%s: %s", path, strerror(err));
}

/*
 * Every process; those that exit meanwhile or may not be read are skipped
 * and counted on stderr.
 */
static void add_all(struct table *t)
{
	DIR *d = opendir("/proc");
	unsigned long denied = 0;
	struct dirent *e;
	char path[300];
	int err;

	if (!d)
		fail("/proc: %s", strerror(errno));
	while ((e = readdir(d))) {
		if (strspn(e->d_name, "0123456789") != strlen(e->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/smaps", e->d_name);
		err = add_smaps(t, path);
		if (err == EACCES || err == EPERM)
			denied++;
		else if (err && err != ENOENT && err != ESRCH)
			fail("%s: %s", path, strerror(err));
	}
	closedir(d);
	if (denied)
		fprintf(stderr, "%s: skipped %lu processes: permission denied\n", prog, denied);
}

static int by_pss(const void *a, const void *b)
{
	const struct usage *x = a, *y = b;

	if (x->kib[PSS] != y->kib[PSS])
		return x->kib[PSS] < y->kib[PSS] ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void print_csv_name(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_row(enum format fmt, const struct usage *u, int last)
{
	switch (fmt) {
	case TEXT:
		for (int f = 0; f < NR_FIELDS; f++)
			printf("%10llu ", u->kib[f]);
		printf("%s\n", u->name);
		break;
	case CSV:
		print_csv_name(u->name);
		for (int f = 0; f < NR_FIELDS; f++)
			printf(",%llu", u->kib[f]);
		putchar('\n');
		break;
	case JSON:
		printf("    {\"name\": ");
		print_json_string(u->name);
		for (int f = 0; f < NR_FIELDS; f++)
			printf(", \"%s\": %llu", columns[f], u->kib[f]);
		printf("}%s\n", last ? "" : ",");
		break;
	}
}

static void print_table(struct table *t, enum format fmt, const char *what)
{
	static const char *const heads[NR_FIELDS] = {
		"Size", "Rss", "Pss", "PrivClean", "PrivDirty", "Shared", "Swap",
	};
	struct usage total = { .name = "TOTAL" };

	qsort(t->rows, t->len, sizeof(*t->rows), by_pss);
	for (size_t i = 0; i < t->len; i++)
		for (int f = 0; f < NR_FIELDS; f++)
			total.kib[f] += t->rows[i].kib[f];

	switch (fmt) {
	case TEXT:
		for (int f = 0; f < NR_FIELDS; f++)
			printf("%10s ", heads[f]);
		printf("Name (KiB; %s)\n", what);
		break;
	case CSV:
		printf("name");
		for (int f = 0; f < NR_FIELDS; f++)
			printf(",%s", columns[f]);
		putchar('\n');
		break;
	case JSON:
		printf("{\n  \"source\": ");
		print_json_string(what);
		printf(",\n  \"mappings\": [\n");
		break;
	}
	for (size_t i = 0; i < t->len; i++)
		print_row(fmt, &t->rows[i], i + 1 == t->len);
	switch (fmt) {
	case TEXT:
		for (int f = 0; f < NR_FIELDS; f++)
			printf("---------- ");
		printf("------\n");
		print_row(fmt, &total, 1);
		break;
	case CSV:
		print_row(fmt, &total, 1);
		break;
	case JSON:
		printf("  ],\n  \"total\": {");
		for (int f = 0; f < NR_FIELDS; f++)
			printf("%s\"%s\": %llu", f ? ", " : "", columns[f], total.kib[f]);
		printf("}\n}\n");
		break;
	}
}

static void usage(FILE *out, int status)
{
	fprintf(out,
		"Usage: %s [--csv | --json] (-p PID | -a | -f SMAPS_FILE)\n"
		"Memory use per mapping name from /proc/PID/smaps, in KiB, by Pss.\n"
		"  -p, --pid PID     one process\n"
		"  -a, --all         every process, summed per name\n"
		"  -f, --file FILE   an smaps-format file\n"
		"      --csv         comma-separated values, header line first\n"
		"      --json        a JSON object\n", prog);
	exit(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "file", required_argument, NULL, 'f' },
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	const char *pid = NULL, *file = NULL;
	struct table t = { 0 };
	enum format fmt = TEXT;
	char what[PATH_MAX + 16];
	int all = 0, c;

	while ((c = getopt_long(argc, argv, "p:af:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = optarg;
			break;
		case 'a':
			all = 1;
			break;
		case 'f':
			file = optarg;
			break;
		case 'c':
			fmt = CSV;
			break;
		case 'j':
			fmt = JSON;
			break;
		case 'h':
			usage(stdout, 0);
			break;
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc || !!pid + all + !!file != 1)
		usage(stderr, 2);
	if (pid && (!*pid || strspn(pid, "0123456789") != strlen(pid))) {
		fprintf(stderr, "%s: not a pid: '%s'\n", prog, pid);
		return 2;
	}

	if (pid) {
		add_pid(&t, pid);
		snprintf(what, sizeof(what), "pid %s", pid);
	} else if (all) {
		add_all(&t);
		snprintf(what, sizeof(what), "all processes");
	} else {
		int err = add_smaps(&t, file);

		if (err)
			fail("%s: %s", file, strerror(err));
		snprintf(what, sizeof(what), "%s", file);
	}
	print_table(&t, fmt, what);
	return 0;
}
