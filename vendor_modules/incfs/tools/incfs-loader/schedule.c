// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: the order blocks are sent in.  sched_next() answers "what
 * next?", in this order of priority:
 *
 *   1. pending reads, in the order they were seen, one block each;
 *   2. the hot list, in manifest order;
 *   3. every other block, in file order (blob order for a stream, which
 *      is the order its bytes arrive in).
 *
 * Only what can be read now is chosen: a block whose bytes have not
 * arrived (a stream) waits, and the hot list gives way to the bulk
 * meanwhile.  A hot or bulk run is the longest run of absent, readable
 * blocks up to the caller's limit.  Blocks the image has are never
 * chosen; a block is had once the caller says so (sched_have()).
 */
#include <stdlib.h>

#include "errors.h"
#include "schedule.h"

static int cmp_blob(const void *pa, const void *pb, void *arg)
{
	const struct ld_app *a = arg;
	uint64_t x = a->e[*(const int *)pa].blob_off, y = a->e[*(const int *)pb].blob_off;

	return (x > y) - (x < y);
}

/* Bulk order: the files in app order, or in blob order (blob_order). */
int sched_init(struct ld_sched *s, const struct ld_app *a, bool blob_order)
{
	*s = (struct ld_sched){ .a = a, .remaining = a->total_blocks };
	s->have = calloc(a->total_blocks + 1, 1);
	s->order = calloc(a->n + 1, sizeof(*s->order));
	if (!s->have || !s->order)
		return ld_error(EX_INTERNAL, "out of memory");
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].type == LD_FILE)
			s->order[s->nord++] = i;
	if (blob_order)
		qsort_r(s->order, s->nord, sizeof(*s->order), cmp_blob, (void *)a);
	return 0;
}

void sched_free(struct ld_sched *s)
{
	free(s->have);
	free(s->order);
	free(s->want);
	s->have = NULL;
	s->order = NULL;
	s->want = NULL;
}

/* Does the image have the block (present at the start, or sent)? */
bool sched_has(const struct ld_sched *s, int file, uint32_t blk)
{
	return s->have[s->a->e[file].first + blk];
}

/* The image has the block now; false if it had it already. */
bool sched_have(struct ld_sched *s, int file, uint32_t blk)
{
	uint8_t *h = &s->have[s->a->e[file].first + blk];

	if (*h)
		return false;
	*h = 1;
	s->remaining--;
	return true;
}

/*
 * A pending read of a block (file: its entry, or -1 for a file not the
 * app's), seen at asked: LD_WANT_QUEUED (once per block, until it is
 * served), LD_WANT_SENT when the block was sent already (it may still wait
 * in a batch not written), LD_WANT_NOT_OURS, or -EX_INTERNAL.
 */
int sched_want(struct ld_sched *s, int file, uint32_t blk, double asked)
{
	if (file < 0 || blk >= s->a->e[file].nblocks)
		return LD_WANT_NOT_OURS;
	if (sched_has(s, file, blk))
		return LD_WANT_SENT;
	for (size_t i = 0; i < s->nwant; i++)
		if (s->want[i].file == file && s->want[i].blk == blk)
			return LD_WANT_QUEUED;
	if (s->nwant == s->wantcap) {
		size_t cap = s->wantcap ? s->wantcap * 2 : 64;
		struct ld_want *nw = realloc(s->want, cap * sizeof(*nw));

		if (!nw)
			return ld_error(EX_INTERNAL, "out of memory");
		s->want = nw;
		s->wantcap = cap;
	}
	s->want[s->nwant++] = (struct ld_want){ file, blk, asked };
	return LD_WANT_QUEUED;
}

/* Can the block's bytes be read now, avail bytes of the blob being there? */
static bool readable(const struct ld_sched *s, int file, uint32_t blk, uint64_t avail)
{
	const struct ld_entry *f = &s->a->e[file];

	return ld_blob_off(f, blk) + ld_block_len(f, blk) <= avail;
}

/* The longest run from blk that is absent and readable, within limit blocks. */
static uint32_t run_len(const struct ld_sched *s, int file, uint32_t blk, uint32_t limit,
			uint64_t avail)
{
	const struct ld_entry *f = &s->a->e[file];
	uint32_t n = 0;

	while (n < limit && blk + n < f->nblocks && !sched_has(s, file, blk + n) &&
	       readable(s, file, blk + n, avail))
		n++;
	return n;
}

/* The first pending read that can be served; reads of blocks had are dropped. */
static bool next_pending(struct ld_sched *s, uint64_t avail, struct ld_run *r)
{
	bool found = false;
	size_t keep = 0;

	for (size_t i = 0; i < s->nwant; i++) {
		const struct ld_want *w = &s->want[i];

		if (sched_has(s, w->file, w->blk))
			continue;
		if (!found && readable(s, w->file, w->blk, avail)) {
			*r = (struct ld_run){ LD_PENDING, w->file, w->blk, 1, w->asked };
			found = true;
			continue;
		}
		s->want[keep++] = *w;
	}
	s->nwant = keep;
	return found;
}

static bool next_hot(struct ld_sched *s, uint32_t limit, uint64_t avail, struct ld_run *r)
{
	while (s->hot_pos < s->a->nhot) {
		const struct ld_hot *h = &s->a->hot[s->hot_pos];
		uint32_t blk = h->first + s->hot_off, left = h->count - s->hot_off, n;

		/* Ranges past the end of the file are ignored. */
		if (s->hot_off >= h->count || blk >= s->a->e[h->file].nblocks) {
			s->hot_pos++;
			s->hot_off = 0;
			continue;
		}
		if (sched_has(s, h->file, blk)) {
			s->hot_off++;
			continue;
		}
		n = run_len(s, h->file, blk, left < limit ? left : limit, avail);
		if (!n)
			return false;	/* a stream has not got there yet */
		*r = (struct ld_run){ LD_HOT, h->file, blk, n, 0 };
		return true;
	}
	return false;
}

static bool next_bulk(struct ld_sched *s, uint32_t limit, uint64_t avail, struct ld_run *r)
{
	while (s->ord_pos < s->nord) {
		int file = s->order[s->ord_pos];
		uint32_t n;

		if (s->ord_blk >= s->a->e[file].nblocks) {
			s->ord_pos++;
			s->ord_blk = 0;
			continue;
		}
		if (sched_has(s, file, s->ord_blk)) {
			s->ord_blk++;
			continue;
		}
		n = run_len(s, file, s->ord_blk, limit, avail);
		if (!n)
			return false;
		*r = (struct ld_run){ LD_BULK, file, s->ord_blk, n, 0 };
		return true;
	}
	return false;
}

/*
 * The next run to send, of at most limit (> 0) blocks, avail bytes of the
 * blob being readable (UINT64_MAX for a seekable source): false when none
 * can be sent now.  A pending read's run leaves the queue; a hot or bulk
 * run is chosen again until its blocks are had.
 */
bool sched_next(struct ld_sched *s, uint32_t limit, uint64_t avail, struct ld_run *r)
{
	return next_pending(s, avail, r) || next_hot(s, limit, avail, r) ||
	       next_bulk(s, limit, avail, r);
}
