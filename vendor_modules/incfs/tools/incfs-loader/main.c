// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: the user-space data loader of incfs.  Mounts (or attaches
 * to) an incfs mount, declares an app's directories, files and hard links,
 * and delivers their blocks: pending reads first, then the hot list, then
 * the rest; resumable on the same backing file.  README.md documents the
 * usage, the manifest, the transports and the exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "app.h"
#include "errors.h"
#include "learn.h"
#include "load.h"
#include "names.h"
#include "options.h"
#include "transport.h"

#define DEFAULT_TIMEOUT_MS	10000

static void usage(FILE *out)
{
	fprintf(out,
		"usage: incfs-loader (--dir SRC [--hot FILE] | --manifest FILE --blob SOURCE)\n"
		"                    (--mount DIR --backing IMG [--timeout-ms N] [--umount]\n"
		"                     [--read-log-records N] |\n"
		"                     --attach DIR [--backing IMG])\n"
		"                    [--rate BYTES_PER_S] [--latency MS]\n"
		"                    [--exit-when-done | --serve] [--json]\n"
		"       incfs-loader --learn-hot FILE --attach DIR\n"
		"SOURCE: a file, '-' (stdin) or unix:PATH (a stream socket).\n"
		"See README.md for the manifest format and the exit codes.\n");
}

enum { OPT_DIR = 256, OPT_MANIFEST, OPT_BLOB, OPT_HOT, OPT_MOUNT, OPT_ATTACH, OPT_BACKING,
       OPT_TIMEOUT, OPT_RATE, OPT_LATENCY, OPT_EXIT, OPT_SERVE, OPT_JSON, OPT_UMOUNT,
       OPT_LEARN_HOT, OPT_READ_LOG, OPT_HELP };

static const struct option long_opts[] = {
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "manifest", required_argument, NULL, OPT_MANIFEST },
	{ "blob", required_argument, NULL, OPT_BLOB },
	{ "hot", required_argument, NULL, OPT_HOT },
	{ "mount", required_argument, NULL, OPT_MOUNT },
	{ "attach", required_argument, NULL, OPT_ATTACH },
	{ "backing", required_argument, NULL, OPT_BACKING },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "latency", required_argument, NULL, OPT_LATENCY },
	{ "exit-when-done", no_argument, NULL, OPT_EXIT },
	{ "serve", no_argument, NULL, OPT_SERVE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "umount", no_argument, NULL, OPT_UMOUNT },
	{ "learn-hot", required_argument, NULL, OPT_LEARN_HOT },
	{ "read-log-records", required_argument, NULL, OPT_READ_LOG },
	{ "help", no_argument, NULL, OPT_HELP },
	{ }
};

static bool parse_num(const char *s, double max, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return !errno && end != s && !*end && *v >= 0 && *v <= max;
}

static int parse_opts(int argc, char **argv, struct ld_opts *o)
{
	double v;
	int c;

	o->timeout_ms = DEFAULT_TIMEOUT_MS;
	o->read_log_records = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_DIR:
			o->dir = optarg;
			break;
		case OPT_MANIFEST:
			o->manifest = optarg;
			break;
		case OPT_BLOB:
			o->blob = optarg;
			break;
		case OPT_HOT:
			o->hot = optarg;
			break;
		case OPT_LEARN_HOT:
			o->learn_hot = optarg;
			break;
		case OPT_READ_LOG:
			if (!parse_num(optarg, UINT32_MAX, &v) || v != (long)v)
				return ld_error(EX_USAGE, "bad --read-log-records: %s", optarg);
			o->read_log_records = v;
			break;
		case OPT_MOUNT:
			o->mount = optarg;
			break;
		case OPT_ATTACH:
			o->attach = optarg;
			break;
		case OPT_BACKING:
			o->backing = optarg;
			break;
		case OPT_EXIT:
			o->serve = false;
			break;
		case OPT_SERVE:
			o->serve = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_UMOUNT:
			o->umount = true;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(0);
		case OPT_TIMEOUT:
			if (!parse_num(optarg, INT_MAX, &v))
				return ld_error(EX_USAGE, "bad --timeout-ms: %s", optarg);
			o->timeout_ms = v;
			break;
		case OPT_RATE:
			if (!parse_num(optarg, 1e15, &v))
				return ld_error(EX_USAGE, "bad --rate: %s", optarg);
			o->rate = v;
			break;
		case OPT_LATENCY:
			if (!parse_num(optarg, 1e6, &v))
				return ld_error(EX_USAGE, "bad --latency: %s", optarg);
			o->latency = v / 1000;
			break;
		default:
			return ld_error(EX_USAGE, "unknown option or missing argument: %s "
					"(see --help)", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return ld_error(EX_USAGE, "unexpected argument: %s", argv[optind]);
	if (o->learn_hot) {
		if (!o->attach || o->dir || o->manifest || o->blob || o->hot || o->mount ||
		    o->backing || o->serve || o->json || o->umount || o->rate || o->latency ||
		    o->read_log_records >= 0)
			return ld_error(EX_USAGE, "--learn-hot FILE takes --attach DIR and "
					"nothing else");
		return 0;
	}
	if (!!o->dir == !!o->manifest)
		return ld_error(EX_USAGE, "give either --dir or --manifest");
	if (!!o->manifest != !!o->blob)
		return ld_error(EX_USAGE, "--manifest and --blob go together");
	if (o->hot && !o->dir)
		return ld_error(EX_USAGE, "--hot goes with --dir (a manifest has hot lines)");
	if (!!o->mount == !!o->attach)
		return ld_error(EX_USAGE, "give either --mount or --attach");
	if (o->mount && !o->backing)
		return ld_error(EX_USAGE, "--mount needs --backing");
	if (o->umount && !o->mount)
		return ld_error(EX_USAGE, "--umount goes with --mount");
	if (o->read_log_records >= 0 && !o->mount)
		return ld_error(EX_USAGE, "--read-log-records goes with --mount");
	return 0;
}

static int do_mount(const struct ld_opts *o)
{
	char opts[96];
	int fd, ret = 0, len;

	fd = open(o->backing, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return ld_error(EX_MOUNT, "cannot open the backing file %s: %s", o->backing,
				strerror(errno));
	len = snprintf(opts, sizeof(opts), "backing_fd=%d,read_timeout_ms=%d", fd, o->timeout_ms);
	if (o->read_log_records >= 0)
		snprintf(opts + len, sizeof(opts) - len, ",read_log_records=%ld",
			 o->read_log_records);
	if (mount(INCFS_NAME, o->mount, INCFS_NAME, 0, opts))
		ret = ld_error(EX_MOUNT, "cannot mount incfs on %s (backing %s): %s%s", o->mount,
			       o->backing, strerror(errno),
			       errno == ENODEV ? " (is the incrementalfs module loaded?)" : "");
	close(fd);
	return ret;
}

static int open_cmd(const char *mnt, int *cmd)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/.cmd", mnt);
	*cmd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (*cmd < 0)
		return ld_error(EX_MOUNT, "cannot open %s (is %s an incfs mount?): %s", path,
				mnt, strerror(errno));
	return 0;
}

static int read_app(struct ld_app *a, const struct ld_opts *o)
{
	int ret;

	if (o->dir) {
		ret = app_from_dir(a, o->dir);
		if (!ret && o->hot)
			ret = app_parse_manifest(a, o->hot, true);
	} else {
		ret = app_parse_manifest(a, o->manifest, false);
	}
	return ret ? ret : app_finish(a);
}

int main(int argc, char **argv)
{
	struct ld_opts o = { };
	struct ld_app a = { };
	struct ld_xport x = { .fd = -1, .efd = -1 };
	struct ld_stats st = { };
	bool mounted = false;
	const char *mnt;
	int ret, cmd = -1;

	signal(SIGPIPE, SIG_IGN);
	ret = parse_opts(argc, argv, &o);
	if (!ret && o.learn_hot) {
		ret = learn_hot(o.attach, o.learn_hot);
		if (ret)
			fprintf(stderr, "incfs-loader: %s\n", ld_error_message());
		return -ret;
	}
	if (!ret)
		ret = read_app(&a, &o);
	x.rate = o.rate;
	x.latency = o.latency;
	if (!ret)
		ret = xport_open(&x, o.dir ? NULL : o.blob, a.blob_need);
	mnt = o.mount ? o.mount : o.attach;
	if (!ret && o.mount) {
		ret = do_mount(&o);
		mounted = !ret;
	}
	if (!ret)
		ret = open_cmd(mnt, &cmd);
	if (!ret)
		ret = names_declare(&a, mnt, cmd, &st.names_created, &st.names_present);
	if (!ret)
		ret = load_run(&a, &x, cmd, &o, &st);
	if (ret) {
		const char *msg = ld_error_message();

		fprintf(stderr, "incfs-loader: %s\n", msg ? msg : "failed");
		if (o.json)
			load_report(&a, &x, &o, &st, "error", -ret);
	} else {
		load_report(&a, &x, &o, &st, "summary", 0);
	}
	if (cmd >= 0)
		close(cmd);
	app_free(&a);
	/* Delivered blocks stay in the image; unmount only when asked to. */
	if (mounted && o.umount && umount2(o.mount, 0)) {
		fprintf(stderr, "incfs-loader: umount %s: %s\n", o.mount, strerror(errno));
		if (!ret)
			ret = -EX_MOUNT;
	}
	return -ret;
}
