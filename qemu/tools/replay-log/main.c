// SPDX-License-Identifier: GPL-2.0
/*
 * replay-log: list a dm-log-writes log, the crash points it allows, and
 * rebuild the disk at one of them (see README.md).
 *
 * Exit status: 0 success, 1 bad usage or crash point, 2 a bad or
 * truncated log, 3 an I/O error on the target (or the base, or stdout).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_writes.h"

#define EXIT_USAGE	1
#define EXIT_LOG	2
#define EXIT_TARGET	3
#define DEFAULT_SUBSETS	4
#define MAX_SUBSETS	4096

static const char usage_text[] =
"usage: replay-log --log LOG --list\n"
"       replay-log --log LOG --points [--sample N] [--seed S] [--subsets K]\n"
"                  [--tear-within FILE]\n"
"       replay-log --log LOG --replay DEV [--base FILE] --point SPEC\n"
"  --list     one line per entry: INDEX SECTOR NR_SECTORS FLAGS MARK\n"
"             (512-byte sectors; FLAGS flush|fua|discard|mark|metadata or -)\n"
"  --points   one crash point per line: SPEC MARK, MARK the last mark\n"
"             before the point's prefix or -; --sample N of them, spread\n"
"             over the log; --seed S (default 1); --subsets K random\n"
"             subsets of each interval between flushes (default 4);\n"
"             --tear-within FILE: tear only writes inside its ranges, one\n"
"             \"START NR_SECTORS\" per line (512-byte sectors)\n"
"  --replay   copy FILE over DEV, write the entries SPEC selects, fsync\n"
"  SPEC       P[+I,J,...][~T:first|second[@K]]: entries [0, P), then I,\n"
"             J, ... and T's sectors before K or from K on (K: T's middle\n"
"             when not given), all before the next flush boundary after P\n"
"exit: 0 success, 1 bad usage or crash point, 2 bad or truncated log,\n"
"      3 I/O error on the target\n";

static const char *prog = "replay-log";

enum mode { NO_MODE, LIST, POINTS, REPLAY };

struct args {
	enum mode mode;
	const char *log, *dev, *base, *point, *tear_within;
	uint64_t seed;
	unsigned int subsets;
	size_t sample;		/* 0: every point */
	bool seed_set, subsets_set, sample_set;
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (try %s --help)\n", prog);
	return EXIT_USAGE;
}

/* A decimal number in [min, max], or a usage error naming opt. */
static int parse_number(const char *opt, const char *s, uint64_t min,
			uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return usage_error("%s wants a number", opt);
	*v = strtoull(s, &end, 10);
	if (errno || *end || *v < min || *v > max)
		return usage_error("%s: number out of range", opt);
	return 0;
}

static int set_mode(struct args *a, enum mode m)
{
	if (a->mode != NO_MODE)
		return usage_error("%s", "one of --list, --points and --replay");
	a->mode = m;
	return 0;
}

static const struct option options[] = {
	{ "log", required_argument, NULL, 'l' },
	{ "list", no_argument, NULL, 'L' },
	{ "points", no_argument, NULL, 'P' },
	{ "replay", required_argument, NULL, 'r' },
	{ "base", required_argument, NULL, 'b' },
	{ "point", required_argument, NULL, 'p' },
	{ "sample", required_argument, NULL, 'n' },
	{ "seed", required_argument, NULL, 's' },
	{ "subsets", required_argument, NULL, 'k' },
	{ "tear-within", required_argument, NULL, 't' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int option(struct args *a, int c)
{
	uint64_t v;
	int ret;

	switch (c) {
	case 'l':
		a->log = optarg;
		return 0;
	case 'L':
		return set_mode(a, LIST);
	case 'P':
		return set_mode(a, POINTS);
	case 'r':
		a->dev = optarg;
		return set_mode(a, REPLAY);
	case 'b':
		a->base = optarg;
		return 0;
	case 'p':
		a->point = optarg;
		return 0;
	case 'n':
		ret = parse_number("--sample", optarg, 1, SIZE_MAX, &v);
		a->sample = v;
		a->sample_set = true;
		return ret;
	case 's':
		a->seed_set = true;
		return parse_number("--seed", optarg, 0, UINT64_MAX, &a->seed);
	case 't':
		a->tear_within = optarg;
		return 0;
	case 'k':
		ret = parse_number("--subsets", optarg, 0, MAX_SUBSETS, &v);
		a->subsets = v;
		a->subsets_set = true;
		return ret;
	default:
		fprintf(stderr, "(try %s --help)\n", prog);
		return EXIT_USAGE;
	}
}

/* The options that go with the mode, and only those. */
static int check_args(const struct args *a)
{
	if (a->mode == NO_MODE)
		return usage_error("%s", "--list, --points or --replay is needed");
	if (!a->log)
		return usage_error("%s", "--log LOG is needed");
	if (a->mode != POINTS && (a->sample_set || a->seed_set || a->subsets_set ||
				  a->tear_within))
		return usage_error("%s",
				   "--sample, --seed, --subsets and --tear-within go with --points");
	if (a->mode != REPLAY && (a->base || a->point))
		return usage_error("%s", "--base and --point go with --replay");
	if (a->mode == REPLAY && !a->point)
		return usage_error("%s", "--replay needs --point SPEC");
	return 0;
}

static int parse_args(struct args *a, int argc, char **argv)
{
	int c, ret;

	memset(a, 0, sizeof(*a));
	a->seed = 1;
	a->subsets = DEFAULT_SUBSETS;
	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage_text, stdout);
			exit(0);
		}
		ret = option(a, c);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return check_args(a);
}

/* The exit status and message of a library error. */
static int failed(const struct lw_log *log)
{
	fprintf(stderr, "%s: %s\n", prog, log->err);
	switch (log->fault) {
	case LW_FAULT_LOG:
		return EXIT_LOG;
	case LW_FAULT_TARGET:
		return EXIT_TARGET;
	default:
		return EXIT_USAGE;
	}
}

static int flush_output(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", prog,
			strerror(errno));
		return EXIT_TARGET;
	}
	return 0;
}

static int points(struct lw_log *log, const struct args *a)
{
	struct lw_points pts;
	FILE *ranges;
	int ret;

	if (a->tear_within) {
		ranges = fopen(a->tear_within, "re");
		if (!ranges) {
			fprintf(stderr, "%s: --tear-within %s: %s\n", prog, a->tear_within,
				strerror(errno));
			return EXIT_USAGE;
		}
		ret = lw_set_tearable(log, ranges, a->tear_within);
		fclose(ranges);
		if (ret)
			return failed(log);
	}
	if (lw_points(log, a->seed, a->subsets, &pts))
		return failed(log);
	ret = a->sample ? lw_sample(log, &pts, a->sample, a->seed) : 0;
	if (!ret)
		ret = lw_print_points(log, &pts, stdout);
	lw_points_free(&pts);
	return ret ? failed(log) : flush_output();
}

static int open_or_fail(const char *what, const char *path, int flags,
			int status)
{
	int fd = open(path, flags | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "%s: %s %s: %s\n", prog, what, path,
			strerror(errno));
	return fd < 0 ? -status : fd;
}

static int replay(struct lw_log *log, const struct args *a)
{
	struct lw_point pt;
	int dev, base = -1, ret;

	if (lw_point_parse(log, a->point, &pt))
		return failed(log);
	dev = open_or_fail("target", a->dev, O_WRONLY, EXIT_TARGET);
	if (dev < 0) {
		ret = -dev;
		goto out;
	}
	if (a->base) {
		base = open_or_fail("base", a->base, O_RDONLY, EXIT_TARGET);
		if (base < 0) {
			ret = -base;
			goto out_dev;
		}
	}
	ret = base >= 0 ? lw_copy_base(log, base, dev) : 0;
	if (!ret)
		ret = lw_replay(log, &pt, dev);
	if (ret)
		ret = failed(log);
	if (base >= 0)
		close(base);
out_dev:
	if (close(dev) && !ret) {
		fprintf(stderr, "%s: closing the target: %s\n", prog,
			strerror(errno));
		ret = EXIT_TARGET;
	}
out:
	lw_point_free(&pt);
	return ret;
}

int main(int argc, char **argv)
{
	struct lw_log log;
	struct args a;
	int fd, ret;

	ret = parse_args(&a, argc, argv);
	if (ret)
		return ret;
	fd = open_or_fail("log", a.log, O_RDONLY, EXIT_LOG);
	if (fd < 0)
		return -fd;
	if (lw_log_open(&log, fd)) {
		ret = failed(&log);
		goto out;
	}
	if (a.mode == LIST)
		ret = lw_print_list(&log, stdout) ? failed(&log) : flush_output();
	else if (a.mode == POINTS)
		ret = points(&log, &a);
	else
		ret = replay(&log, &a);
	lw_log_free(&log);
out:
	close(fd);
	return ret;
}
