// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: the block loop.  Before every transport request it reads
 * the pending reads off .cmd (poll()/read()); schedule.c says what goes
 * next: pending reads, then the hot list, then the bulk.  Pending reads'
 * blocks are fetched and written at once, in one write() per LD_BATCH
 * records; hot and bulk blocks gather into one batch of LD_BATCH records,
 * written when full.  A transport request covers at most LD_RUN blocks so
 * that a pending read waits for at most one such request.  A block is LZ4
 * compressed when that shrinks it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/incrementalfs.h>
#include <lz4.h>

#include "incfs_image.h"

#include "app.h"
#include "clock.h"
#include "errors.h"
#include "load.h"
#include "schedule.h"
#include "transport.h"

#define LD_BATCH	64	/* records per write() on .cmd */

struct batch {
	struct incfs_new_data_block rec[LD_BATCH];
	uint8_t data[LD_BATCH][LD_BS];
	double asked[LD_BATCH];		/* pending read: when it was read; else 0 */
	int n;
};

struct loader {
	struct ld_app *a;
	struct ld_xport *x;
	const struct ld_opts *o;
	struct ld_stats *st;
	int cmd;
	struct ld_sched s;
	size_t closed;			/* files of s.order whose sources are closed */
	struct batch urgent, bulk;
	double *svc;			/* pending-read service times, s */
	size_t nsvc, svccap;
	uint8_t scratch[LD_RUN][LD_BS];
	double t0, next_tick;
	int last_file;
	bool flush_bulk;		/* a pending read may wait on the bulk batch */
};

static struct ld_entry *file_of(struct loader *l, int i)
{
	return &l->a->e[i];
}

static int find_ino(struct loader *l, uint64_t ino)
{
	if (l->last_file >= 0 && file_of(l, l->last_file)->ino == ino)
		return l->last_file;
	for (size_t i = 0; i < l->a->n; i++)
		if (l->a->e[i].type == LD_FILE && l->a->e[i].ino == ino)
			return l->last_file = i;
	return -1;
}

/* ===== progress ===== */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_us(struct loader *l)
{
	double *v, m;

	if (!l->nsvc)
		return 0;
	v = malloc(l->nsvc * sizeof(*v));
	if (!v)
		return 0;
	memcpy(v, l->svc, l->nsvc * sizeof(*v));
	qsort(v, l->nsvc, sizeof(*v), cmp_double);
	m = l->nsvc % 2 ? v[l->nsvc / 2] : (v[l->nsvc / 2 - 1] + v[l->nsvc / 2]) / 2;
	free(v);
	return m * 1e6;
}

void load_report(const struct ld_app *a, const struct ld_xport *x, const struct ld_opts *o,
		 const struct ld_stats *st, const char *event, int code)
{
	uint64_t done = st->present_at_start + st->sent;
	double mib = (double)atomic_load(&((struct ld_xport *)x)->pulled) / (1 << 20);
	double rate = st->seconds > 0 ? mib / st->seconds : 0;

	if (o->json) {
		printf("{\"event\": \"%s\", \"files\": %zu, \"dirs\": %zu, \"links\": %zu, "
		       "\"names_created\": %llu, \"names_present\": %llu, "
		       "\"blocks_total\": %llu, \"blocks_done\": %llu, "
		       "\"blocks_present_at_start\": %llu, \"blocks_sent\": %llu, "
		       "\"blocks_lz4\": %llu, \"mib_pulled\": %.3f, \"mib_s\": %.3f, "
		       "\"pending_served\": %llu, \"pending_median_us\": %.0f, "
		       "\"seconds\": %.3f, \"exit\": %d}\n",
		       event, a->nfiles, a->ndirs, a->nlinks,
		       (unsigned long long)st->names_created,
		       (unsigned long long)st->names_present,
		       (unsigned long long)a->total_blocks, (unsigned long long)done,
		       (unsigned long long)st->present_at_start, (unsigned long long)st->sent,
		       (unsigned long long)st->sent_lz4, mib, rate,
		       (unsigned long long)st->pending_served, st->median_us, st->seconds, code);
		fflush(stdout);
		return;
	}
	if (strcmp(event, "summary") && !isatty(2))
		return;
	fprintf(stderr, "incfs-loader: %s%zu files, blocks %llu/%llu (%llu were present), "
		"%.1f MiB/s, %llu pending reads served (median %.0f us), %.1f s\n",
		strcmp(event, "summary") ? "" : "done: ", a->nfiles,
		(unsigned long long)done, (unsigned long long)a->total_blocks,
		(unsigned long long)st->present_at_start, rate,
		(unsigned long long)st->pending_served, st->median_us, st->seconds);
}

static void tick(struct loader *l)
{
	double now = ld_now();

	if (now < l->next_tick)
		return;
	l->next_tick = now + 1;
	if (!l->o->json && !isatty(2))
		return;
	l->st->seconds = now - l->t0;
	l->st->median_us = median_us(l);
	load_report(l->a, l->x, l->o, l->st, "progress", 0);
}

/* ===== batches ===== */

static void batch_add(struct loader *l, struct batch *b, int file, uint32_t blk,
		      const uint8_t *raw, double asked)
{
	struct ld_entry *f = file_of(l, file);
	struct incfs_new_data_block *r = &b->rec[b->n];
	uint32_t len = ld_block_len(f, blk);
	int clen = 0;

	if (len > 1)
		clen = LZ4_compress_default((const char *)raw, (char *)b->data[b->n], len,
					    len - 1);
	if (clen <= 0)
		memcpy(b->data[b->n], raw, len);
	*r = (struct incfs_new_data_block){
		.file_ino = f->ino,
		.block_index = blk,
		.data_len = clen > 0 ? (uint32_t)clen : len,
		.data = (uintptr_t)b->data[b->n],
		.compression = clen > 0 ? COMPRESSION_LZ4 : COMPRESSION_NONE,
	};
	if (clen > 0)
		l->st->sent_lz4++;
	b->asked[b->n] = asked;
	b->n++;
	sched_have(&l->s, file, blk);
	l->st->sent++;
}

/* The entry a record was made from, for messages. */
static const char *rec_path(struct loader *l, const struct incfs_new_data_block *r)
{
	int i = find_ino(l, r->file_ino);

	return i < 0 ? "?" : file_of(l, i)->path;
}

/* Write the batch (nothing when it is empty). */
static int batch_flush(struct loader *l, struct batch *b)
{
	size_t len = b->n * sizeof(b->rec[0]), done = 0;
	double now;

	while (done < len) {
		ssize_t n = write(l->cmd, (char *)b->rec + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			const struct incfs_new_data_block *r = &b->rec[done / sizeof(*r)];

			return ld_error(EX_BLOCK, "the kernel rejected block %u of %s: %s",
					r->block_index, rec_path(l, r),
					n < 0 ? strerror(errno) : "nothing written");
		}
		done += n;
	}
	now = ld_now();
	for (int i = 0; i < b->n; i++) {
		if (!b->asked[i])
			continue;
		if (l->nsvc == l->svccap) {
			size_t cap = l->svccap ? l->svccap * 2 : 1024;
			double *ns = realloc(l->svc, cap * sizeof(*ns));

			if (!ns)
				return ld_error(EX_INTERNAL, "out of memory");
			l->svc = ns;
			l->svccap = cap;
		}
		l->svc[l->nsvc++] = now - b->asked[i];
		l->st->pending_served++;
	}
	b->n = 0;
	return 0;
}

/* ===== fetching ===== */

static uint64_t run_bytes(struct loader *l, int file, uint32_t blk, uint32_t n)
{
	struct ld_entry *f = file_of(l, file);
	uint64_t len = 0;

	for (uint32_t i = 0; i < n; i++)
		len += ld_block_len(f, blk + i);
	return len;
}

static int open_src(struct ld_entry *f)
{
	if (f->src_fd >= 0)
		return 0;
	f->src_fd = open(f->src, O_RDONLY | O_CLOEXEC);
	if (f->src_fd < 0)
		return ld_error(EX_SOURCE, "cannot open %s: %s", f->src, strerror(errno));
	return 0;
}

/*
 * Blocks [blk, blk + count) of a file (absent, ready) into the batch, with
 * one transport request for a seekable source.
 */
static int deliver_run(struct loader *l, struct batch *b, int file, uint32_t blk,
		       uint32_t count, double asked)
{
	struct ld_entry *f = file_of(l, file);
	uint64_t len = run_bytes(l, file, blk, count);
	int ret = 0;

	if (l->x->stream) {
		for (uint32_t i = 0; i < count; i++)
			batch_add(l, b, file, blk + i, xport_data(l->x, ld_blob_off(f, blk + i)),
				  asked);
		return 0;
	}
	if (l->a->from_dir) {
		ret = open_src(f);
		if (!ret)
			ret = xport_pread(l->x, f->src_fd, (uint64_t)blk * LD_BS, l->scratch, len,
					  f->path, blk + count - 1);
	} else {
		ret = xport_pread(l->x, l->x->fd, ld_blob_off(f, blk), l->scratch, len, f->path,
				  blk + count - 1);
	}
	if (ret)
		return ret;
	for (uint32_t i = 0; i < count; i++)
		batch_add(l, b, file, blk + i, l->scratch[i], asked);
	return 0;
}

/*
 * Before a hot or bulk request of len bytes on a seekable source: wait
 * for the rate limit on .cmd, so that a pending read arriving meanwhile
 * goes first.  True when one did (the request is not made).
 */
static bool give_way(struct loader *l, uint64_t len)
{
	struct pollfd p = { .fd = l->cmd, .events = POLLIN };
	double wait;

	if (l->x->stream)
		return false;
	wait = xport_wait_time(l->x, len) - l->x->latency;
	if (wait <= 0)
		return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
	return poll(&p, 1, (int)(wait * 1000) + 1) > 0 && (p.revents & POLLIN);
}

/* ===== the loop ===== */

/* Read .cmd's pending reads into the schedule. */
static int read_pending(struct loader *l)
{
	struct incfs_pending_read_info r[64];
	double now;
	ssize_t n;
	int ret;

	for (;;) {
		n = read(l->cmd, r, sizeof(r));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return ld_error(EX_MOUNT, "read of .cmd: %s", strerror(errno));
		now = ld_now();
		for (size_t i = 0; i < n / sizeof(r[0]); i++) {
			ret = sched_want(&l->s, find_ino(l, r[i].file_ino), r[i].block_index, now);
			if (ret < 0)
				return ret;
			/* Sent, but maybe waiting in the bulk batch: write it now. */
			if (ret == LD_WANT_SENT)
				l->flush_bulk = true;
		}
		if (n < (ssize_t)sizeof(r))
			return 0;
	}
}

/* Blocks the next hot or bulk run may have: a full bulk batch is written first. */
static uint32_t room(struct loader *l)
{
	uint32_t r = l->bulk.n == LD_BATCH ? LD_BATCH : LD_BATCH - l->bulk.n;

	return r < LD_RUN ? r : LD_RUN;
}

static bool next_run(struct loader *l, struct ld_run *r)
{
	bool got = sched_next(&l->s, room(l), xport_available(l->x), r);

	/* The bulk order has passed these files: their sources are done with. */
	while (l->closed < l->s.ord_pos) {
		struct ld_entry *f = file_of(l, l->s.order[l->closed++]);

		if (f->src_fd >= 0) {
			close(f->src_fd);
			f->src_fd = -1;
		}
	}
	return got;
}

/* A pending read's block into the urgent batch. */
static int serve_pending(struct loader *l, const struct ld_run *r)
{
	int ret = 0;

	if (l->urgent.n == LD_BATCH)
		ret = batch_flush(l, &l->urgent);
	return ret ? ret : deliver_run(l, &l->urgent, r->file, r->blk, 1, r->asked);
}

/* Write what pending reads wait for: the urgent batch, the bulk batch if asked. */
static int flush_pending(struct loader *l)
{
	int ret = 0;

	if (l->flush_bulk && l->bulk.n)
		ret = batch_flush(l, &l->bulk);
	l->flush_bulk = false;
	if (!ret && l->urgent.n)
		ret = batch_flush(l, &l->urgent);
	return ret;
}

/* A hot or bulk run into the bulk batch, unless a pending read comes first. */
static int send_run(struct loader *l, const struct ld_run *r)
{
	int ret;

	if (l->bulk.n == LD_BATCH) {
		ret = batch_flush(l, &l->bulk);
		if (ret)
			return ret;
	}
	if (give_way(l, run_bytes(l, r->file, r->blk, r->count)))
		return 0;	/* the loop serves it next */
	return deliver_run(l, &l->bulk, r->file, r->blk, r->count, 0);
}

/* Sleep until a pending read, stream data, or the next progress tick. */
static int wait_events(struct loader *l, bool forever)
{
	struct pollfd p[2] = {
		{ .fd = l->cmd, .events = POLLIN },
		{ .fd = l->x->efd, .events = POLLIN },
	};
	int timeout = forever ? -1 : 1000;
	uint64_t cnt;

	if (l->o->json || isatty(2)) {
		int ms = (int)((l->next_tick - ld_now()) * 1000) + 1;

		if (ms < 0)
			ms = 0;
		if (timeout < 0 || ms < timeout)
			timeout = ms;
	}
	if (poll(p, l->x->efd >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
		return ld_error(EX_INTERNAL, "poll: %s", strerror(errno));
	/* Reset the counter; EAGAIN (nothing since) does not matter. */
	if (l->x->efd >= 0 && (p[1].revents & POLLIN) && read(l->x->efd, &cnt, sizeof(cnt)))
		cnt = 0;
	return 0;
}

/* The stream ended or failed and nothing more can come. */
static int stream_error(struct loader *l)
{
	int err = atomic_load(&l->x->err);

	if (!err)
		return 0;
	if (err == -ENODATA)
		return ld_error(EX_SOURCE, "the blob ended after %llu bytes; the manifest needs "
				"%llu", (unsigned long long)atomic_load(&l->x->received),
				(unsigned long long)l->x->need);
	return ld_error(EX_SOURCE, "reading the blob: %s", strerror(-err));
}

/* ===== resumability ===== */

/*
 * Which blocks the backing image already holds.  The delivered blocks'
 * blockmap entries reach the image on syncfs(), so it is called first.
 */
static void learn_present(struct loader *l, const char *backing)
{
	struct incfs_img img;
	int ret;

	if (!backing)
		return;
	if (syncfs(l->cmd))
		fprintf(stderr, "incfs-loader: syncfs: %s\n", strerror(errno));
	ret = incfs_img_open(&img, backing);
	if (ret) {
		fprintf(stderr, "incfs-loader: cannot read the image %s (%s): sending every "
			"block\n", backing, strerror(-ret));
		return;
	}
	for (size_t i = 0; i < l->a->n; i++) {
		struct ld_entry *f = &l->a->e[i];

		if (f->type != LD_FILE)
			continue;
		for (uint32_t b = 0; b < f->nblocks; b++) {
			if (incfs_img_block_present(&img, f->ino, b) && sched_have(&l->s, i, b))
				l->st->present_at_start++;
		}
	}
	incfs_img_close(&img);
}

static int loop(struct loader *l)
{
	bool stream_ended = false, got;
	struct ld_run r;
	int ret;

	for (;;) {
		tick(l);
		got = false;
		ret = read_pending(l);
		while (!ret && (got = next_run(l, &r)) && r.kind == LD_PENDING)
			ret = serve_pending(l, &r);
		if (!ret)
			ret = flush_pending(l);
		if (ret)
			return ret;
		if (!l->s.remaining) {
			ret = batch_flush(l, &l->bulk);
			if (ret)
				return ret;
			if (!l->o->serve)
				return 0;
			ret = wait_events(l, true);
			if (ret)
				return ret;
			continue;
		}
		if (got) {
			ret = send_run(l, &r);
			if (ret)
				return ret;
			continue;
		}
		/* Nothing ready: only a stream gets here. */
		ret = batch_flush(l, &l->bulk);
		if (ret)
			return ret;
		if (!l->x->stream)
			return ld_error(EX_INTERNAL, "%llu blocks left that no step can send",
					(unsigned long long)l->s.remaining);
		if (atomic_load(&l->x->err)) {
			/* One more pass delivers what arrived last, then fail. */
			if (stream_ended)
				return stream_error(l);
			stream_ended = true;
			continue;
		}
		ret = wait_events(l, false);
		if (ret)
			return ret;
	}
}

int load_run(struct ld_app *a, struct ld_xport *x, int cmd, const struct ld_opts *o,
	     struct ld_stats *st)
{
	struct loader *l = calloc(1, sizeof(*l));
	int ret;

	if (!l)
		return ld_error(EX_INTERNAL, "out of memory");
	l->a = a;
	l->x = x;
	l->o = o;
	l->st = st;
	l->cmd = cmd;
	l->t0 = ld_now();
	l->next_tick = l->t0 + 1;
	l->last_file = -1;
	ret = sched_init(&l->s, a, x->stream);
	if (!ret) {
		learn_present(l, o->backing);
		ret = xport_start(x);
	}
	if (!ret)
		ret = loop(l);
	/* Whatever happened, what was written is kept: make it durable. */
	if (l->bulk.n && !ret)
		ret = batch_flush(l, &l->bulk);
	if (syncfs(cmd) && !ret)
		ret = ld_error(EX_BLOCK, "syncfs: %s", strerror(errno));
	st->seconds = ld_now() - l->t0;
	st->median_us = median_us(l);
	sched_free(&l->s);
	free(l->svc);
	free(l);
	return ret;
}
