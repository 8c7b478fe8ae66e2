// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: the block loop.  Priorities, checked before every
 * transport request:
 *
 *   1. pending reads (poll()/read() on .cmd): their blocks are fetched and
 *      written at once, in one write() per LD_BATCH records;
 *   2. the hot list, in manifest order;
 *   3. every other block, in file order (for a stream: in blob order,
 *      which is the order the bytes arrive in).
 *
 * Blocks of 2 and 3 gather into one batch of LD_BATCH records, written
 * when full; a transport request covers at most LD_RUN blocks so that a
 * pending read waits for at most one such request.  A block is LZ4
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
#include "transport.h"

#define LD_BATCH	64	/* records per write() on .cmd */

struct batch {
	struct incfs_new_data_block rec[LD_BATCH];
	uint8_t data[LD_BATCH][LD_BS];
	double asked[LD_BATCH];		/* pending read: when it was read; else 0 */
	int n;
};

struct want {				/* a pending read not served yet */
	int file;
	uint32_t blk;
	double asked;
};

struct loader {
	struct ld_app *a;
	struct ld_xport *x;
	const struct ld_opts *o;
	struct ld_stats *st;
	int cmd;
	uint8_t *have;			/* per global block: present or sent */
	uint64_t remaining;
	struct batch urgent, bulk;
	struct want *want;
	size_t nwant, wantcap;
	double *svc;			/* pending-read service times, s */
	size_t nsvc, svccap;
	size_t hot_pos;
	uint32_t hot_off;
	int *order;			/* files, in bulk order */
	size_t nord, ord_pos;
	uint32_t ord_blk;
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
	l->have[f->first + blk] = 1;
	l->remaining--;
	l->st->sent++;
}

/* The entry a record was made from, for messages. */
static const char *rec_path(struct loader *l, const struct incfs_new_data_block *r)
{
	int i = find_ino(l, r->file_ino);

	return i < 0 ? "?" : file_of(l, i)->path;
}

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

static uint64_t blob_off(struct ld_entry *f, uint32_t blk)
{
	return f->blob_off + (uint64_t)blk * LD_BS;
}

static bool ready(struct loader *l, int file, uint32_t blk)
{
	struct ld_entry *f = file_of(l, file);

	return l->a->from_dir || xport_ready(l->x, blob_off(f, blk), ld_block_len(f, blk));
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
	uint64_t len = 0;
	int ret = 0;

	for (uint32_t i = 0; i < count; i++)
		len += ld_block_len(f, blk + i);
	if (l->x->stream) {
		for (uint32_t i = 0; i < count; i++)
			batch_add(l, b, file, blk + i, xport_data(l->x, blob_off(f, blk + i)),
				  asked);
		return 0;
	}
	if (l->a->from_dir) {
		ret = open_src(f);
		if (!ret)
			ret = xport_pread(l->x, f->src_fd, (uint64_t)blk * LD_BS, l->scratch, len,
					  f->path, blk + count - 1);
	} else {
		ret = xport_pread(l->x, l->x->fd, blob_off(f, blk), l->scratch, len, f->path,
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

static uint64_t run_bytes(struct loader *l, int file, uint32_t blk, uint32_t n)
{
	struct ld_entry *f = file_of(l, file);
	uint64_t len = 0;

	for (uint32_t i = 0; i < n; i++)
		len += ld_block_len(f, blk + i);
	return len;
}

/* ===== pending reads ===== */

static int want_add(struct loader *l, int file, uint32_t blk, double asked)
{
	for (size_t i = 0; i < l->nwant; i++)
		if (l->want[i].file == file && l->want[i].blk == blk)
			return 0;
	if (l->nwant == l->wantcap) {
		size_t cap = l->wantcap ? l->wantcap * 2 : 64;
		struct want *nw = realloc(l->want, cap * sizeof(*nw));

		if (!nw)
			return ld_error(EX_INTERNAL, "out of memory");
		l->want = nw;
		l->wantcap = cap;
	}
	l->want[l->nwant++] = (struct want){ file, blk, asked };
	return 0;
}

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
			int file = find_ino(l, r[i].file_ino);

			if (file < 0 || r[i].block_index >= file_of(l, file)->nblocks)
				continue;	/* not ours */
			if (l->have[file_of(l, file)->first + r[i].block_index]) {
				/* Sent, or waiting in the bulk batch: write it now. */
				l->flush_bulk = true;
				continue;
			}
			ret = want_add(l, file, r[i].block_index, now);
			if (ret)
				return ret;
		}
		if (n < (ssize_t)sizeof(r))
			return 0;
	}
}

/* Read .cmd's pending reads and serve every one that can be served now. */
static int serve_pending(struct loader *l)
{
	size_t keep = 0;
	int ret = read_pending(l);

	for (size_t i = 0; !ret && i < l->nwant; i++) {
		struct want *w = &l->want[i];

		if (l->have[file_of(l, w->file)->first + w->blk])
			continue;
		if (!ready(l, w->file, w->blk)) {
			l->want[keep++] = *w;
			continue;
		}
		if (l->urgent.n == LD_BATCH)
			ret = batch_flush(l, &l->urgent);
		if (!ret)
			ret = deliver_run(l, &l->urgent, w->file, w->blk, 1, w->asked);
	}
	if (ret)
		return ret;
	l->nwant = keep;
	if (l->flush_bulk && l->bulk.n)
		ret = batch_flush(l, &l->bulk);
	l->flush_bulk = false;
	return ret || !l->urgent.n ? ret : batch_flush(l, &l->urgent);
}

/* ===== hot list and bulk ===== */

/* The longest run from blk that is absent, ready, within limit blocks. */
static uint32_t run_len(struct loader *l, int file, uint32_t blk, uint32_t limit)
{
	struct ld_entry *f = file_of(l, file);
	uint32_t n = 0;

	while (n < limit && blk + n < f->nblocks && !l->have[f->first + blk + n] &&
	       ready(l, file, blk + n))
		n++;
	return n;
}

static uint32_t room(struct loader *l)
{
	uint32_t r = LD_BATCH - l->bulk.n;

	return r < LD_RUN ? r : LD_RUN;
}

/* Next hot run into the bulk batch: blocks added, 0 if none ready, or -EX_*. */
static int step_hot(struct loader *l)
{
	while (l->hot_pos < l->a->nhot) {
		struct ld_hot *h = &l->a->hot[l->hot_pos];
		struct ld_entry *f = file_of(l, h->file);
		uint32_t blk = h->first + l->hot_off, n;
		int ret;

		if (l->hot_off >= h->count || blk >= f->nblocks) {
			l->hot_pos++;
			l->hot_off = 0;
			continue;
		}
		if (l->have[f->first + blk]) {
			l->hot_off++;
			continue;
		}
		n = run_len(l, h->file, blk, h->count - l->hot_off < room(l) ?
			    h->count - l->hot_off : room(l));
		if (!n)
			return 0;	/* a stream has not got there yet */
		if (give_way(l, run_bytes(l, h->file, blk, n)))
			return 1;	/* gave way: the loop serves it next */
		ret = deliver_run(l, &l->bulk, h->file, blk, n, 0);
		if (ret)
			return ret;
		l->hot_off += n;
		return n;
	}
	return 0;
}

static int step_bulk(struct loader *l)
{
	while (l->ord_pos < l->nord) {
		int file = l->order[l->ord_pos];
		struct ld_entry *f = file_of(l, file);
		uint32_t n;
		int ret;

		if (l->ord_blk >= f->nblocks) {
			l->ord_pos++;
			l->ord_blk = 0;
			if (f->src_fd >= 0) {
				close(f->src_fd);
				f->src_fd = -1;
			}
			continue;
		}
		if (l->have[f->first + l->ord_blk]) {
			l->ord_blk++;
			continue;
		}
		n = run_len(l, file, l->ord_blk, room(l));
		if (!n)
			return 0;
		if (give_way(l, run_bytes(l, file, l->ord_blk, n)))
			return 1;	/* gave way: the loop serves it next */
		ret = deliver_run(l, &l->bulk, file, l->ord_blk, n, 0);
		if (ret)
			return ret;
		l->ord_blk += n;
		return n;
	}
	return 0;
}

static int step(struct loader *l)
{
	int n;

	if (l->bulk.n == LD_BATCH) {
		n = batch_flush(l, &l->bulk);
		if (n)
			return n;
	}
	n = step_hot(l);
	return n ? n : step_bulk(l);
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

static int cmp_blob(const void *pa, const void *pb, void *arg)
{
	struct ld_app *a = arg;
	uint64_t x = a->e[*(const int *)pa].blob_off, y = a->e[*(const int *)pb].blob_off;

	return (x > y) - (x < y);
}

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
			if (!incfs_img_block_present(&img, f->ino, b))
				continue;
			l->have[f->first + b] = 1;
			l->remaining--;
			l->st->present_at_start++;
		}
	}
	incfs_img_close(&img);
}

static int loader_init(struct loader *l)
{
	struct ld_app *a = l->a;

	l->have = calloc(a->total_blocks + 1, 1);
	l->order = calloc(a->n + 1, sizeof(*l->order));
	if (!l->have || !l->order)
		return ld_error(EX_INTERNAL, "out of memory");
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].type == LD_FILE)
			l->order[l->nord++] = i;
	if (l->x->stream)
		qsort_r(l->order, l->nord, sizeof(*l->order), cmp_blob, a);
	l->remaining = a->total_blocks;
	l->last_file = -1;
	return 0;
}

static int loop(struct loader *l)
{
	bool stream_ended = false;
	int ret;

	for (;;) {
		tick(l);
		ret = serve_pending(l);
		if (ret)
			return ret;
		if (!l->remaining) {
			if (l->bulk.n && (ret = batch_flush(l, &l->bulk)))
				return ret;
			if (!l->o->serve)
				return 0;
			ret = wait_events(l, true);
			if (ret)
				return ret;
			continue;
		}
		ret = step(l);
		if (ret < 0)
			return ret;
		if (ret)
			continue;
		/* Nothing ready: only a stream gets here. */
		if (l->bulk.n && (ret = batch_flush(l, &l->bulk)))
			return ret;
		if (!l->x->stream)
			return ld_error(EX_INTERNAL, "%llu blocks left that no step can send",
					(unsigned long long)l->remaining);
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
	ret = loader_init(l);
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
	free(l->have);
	free(l->order);
	free(l->want);
	free(l->svc);
	free(l);
	return ret;
}
