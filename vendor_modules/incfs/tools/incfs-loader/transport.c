// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: transports.  A seekable source (a regular file, or the
 * files of --dir) is read on demand, one request per run of blocks, so any
 * block can be fetched at any time.  A stream (a pipe, stdin, a unix
 * socket) can only be read in order: a thread pulls it into a buffer as
 * fast as the rate limit allows, and the loader delivers each block once
 * its bytes are in the buffer (pending reads of blocks not yet received
 * are served the moment they arrive).  Every byte pulled from either kind
 * goes through one token bucket (--rate) and each request or stream chunk
 * waits --latency first.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/incrementalfs.h>

#include "clock.h"
#include "errors.h"
#include "transport.h"

#define STREAM_CHUNK	(64 << 10)
#define REQUEST_MAX	(LD_RUN * INCFS_DATA_FILE_BLOCK_SIZE)

static void bucket_refill(struct ld_xport *x)
{
	double now = ld_now();

	x->tokens += (now - x->last) * x->rate;
	if (x->tokens > x->cap)
		x->tokens = x->cap;
	x->last = now;
}

/* Take n bytes from the token bucket, sleeping while it is in debt. */
static void bucket_take(struct ld_xport *x, size_t n)
{
	if (x->rate <= 0)
		return;
	bucket_refill(x);
	x->tokens -= n;
	if (x->tokens < 0)
		ld_sleep(-x->tokens / x->rate);
}

/* Seconds until n bytes can be taken from the bucket without a wait. */
double xport_wait_time(struct ld_xport *x, size_t n)
{
	double tokens;

	if (x->rate <= 0)
		return x->latency;
	tokens = x->tokens + (ld_now() - x->last) * x->rate;
	if (tokens > x->cap)
		tokens = x->cap;
	return x->latency + (tokens >= (double)n ? 0 : (n - tokens) / x->rate);
}

/*
 * A request: its latency, then its bytes at the rate.  No bandwidth
 * accrues during the latency (a request-response link, not a pipelined
 * one): n bytes cost latency + n / rate once the bucket is empty.
 */
static void request_start(struct ld_xport *x, size_t n)
{
	if (x->latency > 0) {
		if (x->rate > 0)
			bucket_refill(x);
		ld_sleep(x->latency);
		x->last = ld_now();
	}
	bucket_take(x, n);
}

/* A connected socket: its fd, or -EX_SOURCE. */
static int open_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return ld_error(EX_SOURCE, "socket path too long: %s", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ld_error(EX_SOURCE, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = ld_error(EX_SOURCE, "cannot connect to unix:%s: %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * spec: a file, "-" (stdin) or "unix:PATH"; need: bytes the manifest uses
 * (a regular file shorter than that is refused now, a stream when it ends).
 * For --dir, spec is NULL: the files are opened as they are loaded.
 */
int xport_open(struct ld_xport *x, const char *spec, uint64_t need)
{
	struct stat st;
	int fd;

	x->fd = -1;
	x->efd = -1;
	x->need = need;
	x->last = ld_now();
	x->tokens = 0;
	/* A burst of 50 ms of traffic, at least one request. */
	x->cap = x->rate / 20 > REQUEST_MAX ? x->rate / 20 : REQUEST_MAX;
	if (!spec)
		return 0;
	if (!strncmp(spec, "unix:", 5)) {
		fd = open_unix(spec + 5);
		if (fd < 0)
			return fd;
	} else {
		fd = strcmp(spec, "-") ? open(spec, O_RDONLY | O_CLOEXEC) : dup(0);
		if (fd < 0)
			return ld_error(EX_SOURCE, "cannot open blob %s: %s", spec,
					strerror(errno));
	}
	x->fd = fd;
	if (fstat(fd, &st))
		return ld_error(EX_SOURCE, "cannot stat blob %s: %s", spec, strerror(errno));
	x->stream = !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
	if (!x->stream && S_ISREG(st.st_mode) && (uint64_t)st.st_size < need)
		return ld_error(EX_SOURCE, "blob %s holds %llu bytes, the manifest needs %llu",
				spec, (unsigned long long)st.st_size, (unsigned long long)need);
	return 0;
}

/*
 * pread() of exactly len bytes through the bucket.  path and last_blk (the
 * last block asked for) say what is read, in the message.
 */
int xport_pread(struct ld_xport *x, int fd, uint64_t off, void *buf, size_t len,
		const char *path, uint32_t last_blk)
{
	size_t done = 0;

	request_start(x, len);
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ld_error(EX_SOURCE, "reading the source of %s: %s", path,
					strerror(errno));
		if (n == 0)
			return ld_error(EX_SOURCE, "source of %s is shorter than the manifest "
					"says (block %u)", path, last_blk);
		done += n;
	}
	atomic_fetch_add(&x->pulled, len);
	return 0;
}

static void stream_signal(struct ld_xport *x)
{
	uint64_t one = 1;

	/* Fails only when the counter is saturated: the loader is awake then. */
	if (write(x->efd, &one, sizeof(one)) < 0)
		one = 0;
}

static void *stream_thread(void *arg)
{
	struct ld_xport *x = arg;
	uint64_t got = 0;

	while (got < x->need) {
		size_t want = x->need - got < STREAM_CHUNK ? x->need - got : STREAM_CHUNK;
		ssize_t n;

		request_start(x, want);
		n = read(x->fd, x->buf + got, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			atomic_store(&x->err, n < 0 ? -errno : -ENODATA);
			break;
		}
		/* The bucket charged want; return what did not come. */
		x->tokens += want - n;
		got += n;
		atomic_fetch_add(&x->pulled, n);
		atomic_store(&x->received, got);
		stream_signal(x);
	}
	stream_signal(x);
	return NULL;
}

int xport_start(struct ld_xport *x)
{
	if (!x->stream || !x->need)
		return 0;
	x->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (x->efd < 0)
		return ld_error(EX_INTERNAL, "eventfd: %s", strerror(errno));
	x->buf = mmap(NULL, x->need, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (x->buf == MAP_FAILED)
		return ld_error(EX_INTERNAL, "cannot map a %llu-byte stream buffer: %s",
				(unsigned long long)x->need, strerror(errno));
	if (pthread_create(&x->thread, NULL, stream_thread, x))
		return ld_error(EX_INTERNAL, "cannot start the stream thread");
	x->started = true;
	return 0;
}

/* How many bytes of the blob can be had now: a stream's received ones, or all. */
uint64_t xport_available(struct ld_xport *x)
{
	return x->stream ? atomic_load(&x->received) : UINT64_MAX;
}

/* The received bytes at off of a stream (xport_ready() said so). */
const uint8_t *xport_data(struct ld_xport *x, uint64_t off)
{
	return x->buf + off;
}
