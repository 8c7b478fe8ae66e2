// SPDX-License-Identifier: GPL-2.0
/*
 * liblog-writes: reading a dm-log-writes log, its crash points and their
 * replay (see log_writes.h, and ../replay-log/README.md for the model).
 *
 * Nothing in the log is trusted: the super block's count is bounded by
 * the log's size before anything is allocated, and every entry's data,
 * and the range it writes, is checked to fit before it is indexed.
 */
#include <assert.h>
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log_writes.h"

#ifndef __printf
#define __printf(a, b)	__attribute__((__format__(printf, a, b)))
#endif
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define SUPER_LEN	28	/* the bytes of struct log_write_super used */
#define ENTRY_LEN	32	/* sizeof(struct log_write_entry) */
#define MIN_SECTOR	512
#define MAX_SECTOR	65536
#define CHUNK		0x100000	/* bytes copied at a time */
#define MAX_TRIES	64		/* draws for a proper random subset */

static_assert(offsetof(struct lw_disk_super, nr_entries) == 16,
	      "log_write_super layout");
static_assert(offsetof(struct lw_disk_super, sectorsize) == 24,
	      "log_write_super layout");
static_assert(sizeof(struct lw_disk_entry) == ENTRY_LEN,
	      "log_write_entry layout");
static_assert(offsetof(struct lw_disk_entry, data_len) == 24,
	      "log_write_entry layout");

static __printf(4, 5)
int fail(struct lw_log *log, enum lw_fault fault, int err, const char *fmt,
	 ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(log->err, sizeof(log->err), fmt, ap);
	va_end(ap);
	log->fault = fault;
	return -err;
}

static int no_memory(struct lw_log *log)
{
	return fail(log, LW_FAULT_INPUT, ENOMEM, "out of memory");
}

/* Bytes read at off: fewer only at the end of the file; or -errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += n;
	}
	return done;
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, (const char *)buf + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -ENOSPC;
		done += n;
	}
	return 0;
}

/* Reading a log ----------------------------------------------------------- */

static int read_super(struct lw_log *log)
{
	struct lw_disk_super s;
	uint64_t magic, version;
	off_t end;
	ssize_t n;

	end = lseek(log->fd, 0, SEEK_END);
	if (end < 0)
		return fail(log, LW_FAULT_LOG, errno, "the log's size: %s",
			    strerror(errno));
	log->size = end;
	memset(&s, 0, sizeof(s));
	n = pread_full(log->fd, &s, SUPER_LEN, 0);
	if (n < 0)
		return fail(log, LW_FAULT_LOG, -n, "reading the super block: %s",
			    strerror(-n));
	if (n < SUPER_LEN)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "truncated log: %zd bytes, shorter than a super block",
			    n);
	magic = le64toh(s.magic);
	version = le64toh(s.version);
	log->nr_entries = le64toh(s.nr_entries);
	log->sectorsize = le32toh(s.sectorsize);
	if (magic != LW_MAGIC)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "not a dm-log-writes log: magic %#llx, expected %#llx",
			    (unsigned long long)magic, LW_MAGIC);
	if (version != LW_VERSION)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "log version %llu, only version %d is known",
			    (unsigned long long)version, LW_VERSION);
	return 0;
}

/* The super block's sector size and count, against the log's size. */
static int check_super(struct lw_log *log)
{
	uint32_t ss = log->sectorsize;
	uint64_t room;

	if (ss < MIN_SECTOR || ss > MAX_SECTOR || (ss & (ss - 1)))
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "bad sector size %u in the super block", ss);
	room = log->size / ss;
	if (!room)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "truncated log: %llu bytes, less than a sector",
			    (unsigned long long)log->size);
	/* Each entry takes a sector at least. */
	if (log->nr_entries > room - 1)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "truncated log: %llu entries in the super block, room for %llu at most",
			    (unsigned long long)log->nr_entries,
			    (unsigned long long)(room - 1));
	return 0;
}

/* An entry's flags and mark, from its header sector in buf. */
static int decode_entry(struct lw_log *log, uint64_t i, const char *buf,
			struct lw_entry *e)
{
	const struct lw_disk_entry *d = (const void *)buf;
	uint64_t flags = le64toh(d->flags);
	uint64_t len = le64toh(d->data_len);

	e->sector = le64toh(d->sector);
	e->nr_sectors = le64toh(d->nr_sectors);
	e->flags = flags;
	if (flags & ~(uint64_t)LW_FLAGS)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "entry %llu: unknown flags %#llx",
			    (unsigned long long)i, (unsigned long long)flags);
	if (!(flags & LW_MARK)) {
		if (len)
			return fail(log, LW_FAULT_LOG, EINVAL,
				    "entry %llu: data_len %llu without the mark flag",
				    (unsigned long long)i, (unsigned long long)len);
		return 0;
	}
	if (len > log->sectorsize - ENTRY_LEN || e->nr_sectors)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "entry %llu: a mark of %llu bytes and %llu sectors",
			    (unsigned long long)i, (unsigned long long)len,
			    (unsigned long long)e->nr_sectors);
	e->mark = malloc(len + 1);
	if (!e->mark)
		return no_memory(log);
	memcpy(e->mark, buf + ENTRY_LEN, len);
	e->mark[len] = '\0';
	e->mark_len = len;
	return 0;
}

/*
 * The byte after the entry at pos in the log, or 0 when its data or the
 * range it writes does not fit.
 */
static uint64_t entry_end(const struct lw_log *log, const struct lw_entry *e)
{
	uint64_t ss = log->sectorsize, data, end, last;

	if (__builtin_add_overflow(e->sector, e->nr_sectors, &last) ||
	    __builtin_mul_overflow(last, ss, &last) || last > INT64_MAX)
		return 0;
	data = e->flags & LW_DISCARD ? 0 : e->nr_sectors * ss;
	end = e->pos + ss + data;
	return end > log->size ? 0 : end;
}

static int index_entry(struct lw_log *log, uint64_t i, uint64_t pos,
		       char *buf, uint64_t *next)
{
	struct lw_entry *e = &log->entries[i];
	ssize_t n;
	int ret;

	e->pos = pos;
	if (pos > log->size - log->sectorsize)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "truncated log: entry %llu of %llu would be at byte %llu, the log has %llu",
			    (unsigned long long)i,
			    (unsigned long long)log->nr_entries,
			    (unsigned long long)pos,
			    (unsigned long long)log->size);
	n = pread_full(log->fd, buf, log->sectorsize, pos);
	if (n < 0)
		return fail(log, LW_FAULT_LOG, -n, "reading entry %llu: %s",
			    (unsigned long long)i, strerror(-n));
	if (n < log->sectorsize)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "truncated log: entry %llu", (unsigned long long)i);
	ret = decode_entry(log, i, buf, e);
	if (ret)
		return ret;
	*next = entry_end(log, e);
	if (!*next)
		return fail(log, LW_FAULT_LOG, EINVAL,
			    "truncated log: entry %llu (sector %llu, %llu sectors) does not fit",
			    (unsigned long long)i,
			    (unsigned long long)e->sector,
			    (unsigned long long)e->nr_sectors);
	e->prev_mark = e->mark ? i : i ? e[-1].prev_mark : LW_NONE;
	return 0;
}

static void push_bound(struct lw_log *log, uint64_t b)
{
	if (!log->nr_bounds || log->bounds[log->nr_bounds - 1] < b)
		log->bounds[log->nr_bounds++] = b;
}

/* The flush boundaries (see README.md, "Crash points"). */
static int find_bounds(struct lw_log *log)
{
	const struct lw_entry *e;
	uint64_t i;

	log->bounds = calloc(2 * log->nr_entries + 2, sizeof(*log->bounds));
	if (!log->bounds)
		return no_memory(log);
	push_bound(log, 0);
	for (i = 0; i < log->nr_entries; i++) {
		e = &log->entries[i];
		/* What completed before a flush was issued is durable. */
		if (e->flags & LW_FLUSH)
			push_bound(log, i);
		/*
		 * A FUA write is durable when it completes, and a write issued
		 * after that may depend on it (jbd2 reuses journal space once
		 * its superblock says so): no state holds a later entry
		 * without it.
		 */
		if ((e->flags & LW_FUA) && lw_has_data(e))
			push_bound(log, i + 1);
	}
	push_bound(log, log->nr_entries);
	return 0;
}

int lw_log_open(struct lw_log *log, int fd)
{
	uint64_t i, pos;
	char *buf;
	int ret;

	memset(log, 0, sizeof(*log));
	log->fd = fd;
	ret = read_super(log);
	if (!ret)
		ret = check_super(log);
	if (ret)
		return ret;
	log->entries = calloc(log->nr_entries + 1, sizeof(*log->entries));
	buf = malloc(log->sectorsize);
	if (!log->entries || !buf) {
		ret = no_memory(log);
		goto out;
	}
	pos = log->sectorsize;
	for (i = 0; i < log->nr_entries; i++) {
		ret = index_entry(log, i, pos, buf, &pos);
		if (ret)
			goto out;
	}
	ret = find_bounds(log);
out:
	free(buf);
	if (ret) {
		/* Keep the message: lw_log_free() leaves it alone. */
		lw_log_free(log);
	}
	return ret;
}

void lw_log_free(struct lw_log *log)
{
	uint64_t i;

	if (log->entries)
		for (i = 0; i < log->nr_entries; i++)
			free(log->entries[i].mark);
	free(log->entries);
	free(log->bounds);
	free(log->tearable);
	log->entries = NULL;
	log->bounds = NULL;
	log->tearable = NULL;
	log->nr_entries = 0;
	log->nr_bounds = 0;
	log->nr_tearable = 0;
}

/* Has data in the log, that it writes to the target? */
bool lw_has_data(const struct lw_entry *e)
{
	return !(e->flags & (LW_DISCARD | LW_MARK)) && e->nr_sectors;
}

/* Changes the target when applied (data, or a discard's zeroes)? */
bool lw_writes(const struct lw_entry *e)
{
	return !(e->flags & LW_MARK) && e->nr_sectors;
}

static const char *parse_u64(const char *s, uint64_t *v);

static int cmp_ranges(const void *a, const void *b)
{
	const struct lw_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Where writes may tear: @in (named @name in errors) has a line
 * "START NR_SECTORS" per range, in 512-byte sectors, as --list writes
 * them.  Sorted, overlapping and adjacent ranges merged.  An empty list
 * means nowhere; without one, anywhere.
 */
int lw_set_tearable(struct lw_log *log, FILE *in, const char *name)
{
	struct lw_range *v = NULL, *bigger;
	size_t n = 0, cap = 0, i, out;
	unsigned int lineno = 0;
	uint64_t start, nr;
	const char *s;
	char line[128];

	while (fgets(line, sizeof(line), in)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(in))
			goto bad;
		s = parse_u64(line, &start);
		if (s && *s == ' ')
			s = parse_u64(s + 1, &nr);
		else
			s = NULL;
		if (!s || (*s && *s != '\n') || !nr || start > UINT64_MAX / 512 - nr)
			goto bad;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			bigger = realloc(v, cap * sizeof(*v));
			if (!bigger) {
				free(v);
				return no_memory(log);
			}
			v = bigger;
		}
		v[n++] = (struct lw_range){ start * 512, (start + nr) * 512 };
	}
	if (ferror(in)) {
		free(v);
		return fail(log, LW_FAULT_INPUT, EIO, "%s: cannot be read", name);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_ranges);
	for (i = 1, out = 0; i < n; i++) {
		if (v[i].start <= v[out].end)
			v[out].end = v[i].end > v[out].end ? v[i].end : v[out].end;
		else
			v[++out] = v[i];
	}
	free(log->tearable);
	log->tearable = v ? v : calloc(1, sizeof(*v));
	log->nr_tearable = n ? out + 1 : 0;
	return log->tearable ? 0 : no_memory(log);
bad:
	free(v);
	return fail(log, LW_FAULT_INPUT, EINVAL,
		    "%s:%u: expected START NR_SECTORS (512-byte sectors, NR_SECTORS > 0)",
		    name, lineno);
}

/*
 * May e tear: a data write of two log sectors or more, and, when the log
 * has tearable ranges, wholly inside one of them.
 */
bool lw_tearable(const struct lw_log *log, const struct lw_entry *e)
{
	uint64_t start = e->sector * log->sectorsize;
	uint64_t end = start + e->nr_sectors * log->sectorsize;
	size_t i;

	if (!lw_has_data(e) || e->nr_sectors < 2)
		return false;
	if (!log->tearable)
		return true;
	for (i = 0; i < log->nr_tearable; i++)
		if (log->tearable[i].start <= start && end <= log->tearable[i].end)
			return true;
	return false;
}

/* The first flush boundary after p; nr_entries when there is none. */
uint64_t lw_next_bound(const struct lw_log *log, uint64_t p)
{
	size_t lo = 0, hi = log->nr_bounds, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (log->bounds[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < log->nr_bounds ? log->bounds[lo] : log->nr_entries;
}

/* The name of the last mark among entries [0, prefix), or NULL. */
const char *lw_mark_before(const struct lw_log *log, uint64_t prefix)
{
	uint64_t m;

	if (!prefix || prefix > log->nr_entries)
		return NULL;
	m = log->entries[prefix - 1].prev_mark;
	return m == LW_NONE ? NULL : log->entries[m].mark;
}

/* "flush|fua|...", or "-" for none; returns the length, as snprintf. */
size_t lw_flags_str(uint32_t flags, char *buf, size_t size)
{
	static const char *const names[] = {
		"flush", "fua", "discard", "mark", "metadata",
	};
	size_t len = 0, i;

	if (size)
		buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(flags & (1u << i)))
			continue;
		len += snprintf(buf + (len < size ? len : size),
				len < size ? size - len : 0, "%s%s",
				len ? "|" : "", names[i]);
	}
	if (!len)
		len = snprintf(buf, size, "-");
	return len;
}

/*
 * A mark's name as one word: bytes that are not graphic, and '\', as
 * \xHH; "-" for none (NULL).  Returns 0 or -EIO.
 */
int lw_print_name(FILE *out, const char *name, size_t len)
{
	unsigned char c;
	size_t i;

	if (!name)
		return fputc('-', out) == EOF ? -EIO : 0;
	for (i = 0; i < len; i++) {
		c = name[i];
		if (isgraph(c) && c != '\\') {
			if (fputc(c, out) == EOF)
				return -EIO;
		} else if (fprintf(out, "\\x%02x", c) < 0) {
			return -EIO;
		}
	}
	return 0;
}

static int output_error(struct lw_log *log)
{
	return fail(log, LW_FAULT_TARGET, EIO, "writing the output: %s",
		    strerror(errno));
}

/* "INDEX SECTOR NR_SECTORS FLAGS MARK", in 512-byte sectors. */
int lw_print_list(struct lw_log *log, FILE *out)
{
	uint64_t per = log->sectorsize / MIN_SECTOR, i;
	const struct lw_entry *e;
	char flags[64];

	for (i = 0; i < log->nr_entries; i++) {
		e = &log->entries[i];
		lw_flags_str(e->flags, flags, sizeof(flags));
		if (fprintf(out, "%llu %llu %llu %s ", (unsigned long long)i,
			    (unsigned long long)(e->sector * per),
			    (unsigned long long)(e->nr_sectors * per),
			    flags) < 0 ||
		    lw_print_name(out, e->mark, e->mark_len) ||
		    fputc('\n', out) == EOF)
			return output_error(log);
	}
	return 0;
}

/* Crash-point specs --------------------------------------------------------- */

/* A decimal number (digits only); the character after it, or NULL. */
static const char *parse_u64(const char *s, uint64_t *v)
{
	uint64_t x = 0;
	unsigned int d;

	if (*s < '0' || *s > '9')
		return NULL;
	for (; *s >= '0' && *s <= '9'; s++) {
		d = *s - '0';
		if (x > (UINT64_MAX - d) / 10)
			return NULL;
		x = x * 10 + d;
	}
	*v = x;
	return s;
}

static int spec_error(struct lw_log *log, const char *spec, const char *why)
{
	return fail(log, LW_FAULT_INPUT, EINVAL, "bad crash point '%.64s%s': %s",
		    spec, strlen(spec) > 64 ? "..." : "", why);
}

/* "~T:first[@K]" or "~T:second[@K]" at s (after the '~'), into *torn. */
static const char *parse_torn(const char *s, struct lw_pick *torn)
{
	s = parse_u64(s, &torn->index);
	if (!s || *s++ != ':')
		return NULL;
	if (!strncmp(s, "first", 5)) {
		torn->part = LW_FIRST;
		s += 5;
	} else if (!strncmp(s, "second", 6)) {
		torn->part = LW_SECOND;
		s += 6;
	} else {
		return NULL;
	}
	torn->at = 0;
	if (*s == '@') {
		s = parse_u64(s + 1, &torn->at);
		if (s && !torn->at)
			return NULL;
	}
	return s;
}

/*
 * The syntax P[+I,J,...][~T:first|second[@K]]: whole picks, then the torn
 * one.
 */
static int parse_syntax(struct lw_log *log, const char *spec,
			struct lw_point *pt, struct lw_pick *torn)
{
	const char *s = parse_u64(spec, &pt->prefix);
	const char *expect = "expected P[+I,J,...][~T:first|second[@K]]";
	struct lw_pick *p;

	if (s && *s == '+') {
		do {
			p = &pt->picks[pt->nr_picks];
			s = parse_u64(s + 1, &p->index);
			if (!s)
				return spec_error(log, spec, expect);
			if (pt->nr_picks && p->index <= p[-1].index)
				return spec_error(log, spec,
						  "the entries after '+' must increase");
			p->part = LW_WHOLE;
			p->at = 0;
			pt->nr_picks++;
		} while (*s == ',');
	}
	torn->part = LW_WHOLE;
	torn->at = 0;
	if (s && *s == '~')
		s = parse_torn(s + 1, torn);
	if (!s || *s)
		return spec_error(log, spec, expect);
	return 0;
}

static int range_error(struct lw_log *log, const char *spec, uint64_t i,
		       uint64_t prefix, uint64_t next)
{
	char why[160];

	snprintf(why, sizeof(why),
		 "entry %llu is not in [%llu, %llu), from the prefix to the next flush boundary",
		 (unsigned long long)i, (unsigned long long)prefix,
		 (unsigned long long)next);
	return spec_error(log, spec, why);
}

/* The torn pick: in range, with two data sectors at least, and not whole. */
static int check_torn(struct lw_log *log, const char *spec,
		      const struct lw_point *pt, const struct lw_pick *torn,
		      uint64_t next)
{
	const struct lw_entry *e;
	size_t i;

	if (torn->index < pt->prefix || torn->index >= next)
		return range_error(log, spec, torn->index, pt->prefix, next);
	e = &log->entries[torn->index];
	if (!lw_has_data(e) || e->nr_sectors < 2)
		return spec_error(log, spec,
				  "the torn entry has fewer than 2 sectors of data");
	if (torn->at >= e->nr_sectors)
		return spec_error(log, spec,
				  "the split is not inside the torn entry");
	for (i = 0; i < pt->nr_picks; i++)
		if (pt->picks[i].index == torn->index)
			return spec_error(log, spec,
					  "the torn entry is also applied whole");
	return 0;
}

/* Every pick in [prefix, next flush boundary); the torn one inserted. */
static int check_point(struct lw_log *log, const char *spec,
		       struct lw_point *pt, const struct lw_pick *torn)
{
	uint64_t next;
	size_t i;
	int ret;

	if (pt->prefix > log->nr_entries) {
		char why[96];

		snprintf(why, sizeof(why), "prefix %llu is past the log's %llu entries",
			 (unsigned long long)pt->prefix,
			 (unsigned long long)log->nr_entries);
		return spec_error(log, spec, why);
	}
	next = lw_next_bound(log, pt->prefix);
	for (i = 0; i < pt->nr_picks; i++)
		if (pt->picks[i].index < pt->prefix ||
		    pt->picks[i].index >= next)
			return range_error(log, spec, pt->picks[i].index,
					   pt->prefix, next);
	if (torn->part == LW_WHOLE)
		return 0;
	ret = check_torn(log, spec, pt, torn, next);
	if (ret)
		return ret;
	for (i = pt->nr_picks; i && pt->picks[i - 1].index > torn->index; i--)
		pt->picks[i] = pt->picks[i - 1];
	pt->picks[i] = *torn;
	pt->nr_picks++;
	return 0;
}

int lw_point_parse(struct lw_log *log, const char *spec, struct lw_point *pt)
{
	struct lw_pick torn;
	int ret;

	memset(pt, 0, sizeof(*pt));
	/* A pick takes two characters at least ("1,"). */
	pt->picks = calloc(strlen(spec) / 2 + 2, sizeof(*pt->picks));
	if (!pt->picks)
		return no_memory(log);
	ret = parse_syntax(log, spec, pt, &torn);
	if (!ret)
		ret = check_point(log, spec, pt, &torn);
	if (ret)
		lw_point_free(pt);
	return ret;
}

/* The spec of a point (malloc'd), or NULL when out of memory. */
char *lw_point_str(const struct lw_point *pt)
{
	size_t size = (pt->nr_picks + 1) * 24 + 40, len, i;
	const struct lw_pick *p;
	bool first = true;
	char *s;

	s = malloc(size);
	if (!s)
		return NULL;
	len = snprintf(s, size, "%llu", (unsigned long long)pt->prefix);
	for (i = 0; i < pt->nr_picks; i++) {
		p = &pt->picks[i];
		if (p->part != LW_WHOLE)
			continue;
		len += snprintf(s + len, size - len, "%c%llu", first ? '+' : ',',
				(unsigned long long)p->index);
		first = false;
	}
	for (i = 0; i < pt->nr_picks; i++) {
		p = &pt->picks[i];
		if (p->part == LW_WHOLE)
			continue;
		len += snprintf(s + len, size - len, "~%llu:%s",
				(unsigned long long)p->index,
				p->part == LW_FIRST ? "first" : "second");
		if (p->at)
			len += snprintf(s + len, size - len, "@%llu",
					(unsigned long long)p->at);
	}
	return s;
}

/* Log order: by prefix, then by what is applied past it. */
int lw_point_cmp(const struct lw_point *a, const struct lw_point *b)
{
	const struct lw_pick *x, *y;
	size_t i;

	if (a->prefix != b->prefix)
		return a->prefix < b->prefix ? -1 : 1;
	for (i = 0; i < a->nr_picks && i < b->nr_picks; i++) {
		x = &a->picks[i];
		y = &b->picks[i];
		if (x->index != y->index)
			return x->index < y->index ? -1 : 1;
		if (x->at != y->at)
			return x->at < y->at ? -1 : 1;
		if (x->part != y->part)
			return x->part < y->part ? -1 : 1;
	}
	if (a->nr_picks != b->nr_picks)
		return a->nr_picks < b->nr_picks ? -1 : 1;
	return 0;
}

void lw_point_free(struct lw_point *pt)
{
	free(pt->picks);
	pt->picks = NULL;
	pt->nr_picks = 0;
}

/* Crash points ------------------------------------------------------------- */

/* xorshift64, seeded through splitmix64: the same points on every libc. */
struct lw_rng {
	uint64_t s;
};

static void rng_seed(struct lw_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t z = seed + (stream + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	r->s = z ? z : 1;
}

static uint64_t rng_next(struct lw_rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static uint64_t rng_below(struct lw_rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

static bool rng_coin(struct lw_rng *r)
{
	return rng_next(r) >> 63;
}

/* What one interval [a, b) makes points of. */
struct interval {
	uint64_t a;
	const uint64_t *d;	/* its entries that write, increasing */
	size_t n;
	uint8_t *sel;		/* which of them a point applies */
};

static int push_point(struct lw_points *pts, struct lw_point *pt)
{
	struct lw_point *v;
	size_t cap;

	if (pts->len == pts->cap) {
		cap = pts->cap ? 2 * pts->cap : 64;
		v = realloc(pts->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pts->v = v;
		pts->cap = cap;
	}
	pts->v[pts->len++] = *pt;
	return 0;
}

/* The point a + the selected entries, with d[torn] torn (torn < n). */
static int push_sel(struct lw_points *pts, const struct interval *iv,
		    size_t torn, enum lw_part part, uint64_t at)
{
	struct lw_point pt = { .prefix = iv->a };
	size_t j;

	pt.picks = calloc(iv->n + 1, sizeof(*pt.picks));
	if (!pt.picks)
		return -ENOMEM;
	for (j = 0; j < iv->n; j++) {
		if (j != torn && !iv->sel[j])
			continue;
		pt.picks[pt.nr_picks].index = iv->d[j];
		pt.picks[pt.nr_picks].part = j == torn ? part : LW_WHOLE;
		pt.picks[pt.nr_picks++].at = j == torn ? at : 0;
	}
	if (push_point(pts, &pt)) {
		free(pt.picks);
		return -ENOMEM;
	}
	return 0;
}

static size_t random_sel(struct lw_rng *r, const struct interval *iv)
{
	size_t j, count = 0;

	for (j = 0; j < iv->n; j++)
		count += iv->sel[j] = rng_coin(r);
	return count;
}

/* Rule 2: every non-empty proper subset of a few writes, else k random. */
static int subsets(struct lw_points *pts, struct lw_rng *r,
		   const struct interval *iv, unsigned int k)
{
	unsigned int mask, i, tries;
	size_t j, count;
	int ret = 0;

	if (!k || iv->n < 2)
		return 0;
	if (iv->n <= 4) {
		for (mask = 1; !ret && mask < (1u << iv->n) - 1; mask++) {
			for (j = 0; j < iv->n; j++)
				iv->sel[j] = mask >> j & 1;
			ret = push_sel(pts, iv, SIZE_MAX, LW_WHOLE, 0);
		}
		return ret;
	}
	for (i = 0; !ret && i < k; i++) {
		tries = 0;
		do {
			count = random_sel(r, iv);
		} while ((!count || count == iv->n) && ++tries < MAX_TRIES);
		if (!count || count == iv->n) {
			iv->sel[0] = 1;
			iv->sel[1] = 0;
		}
		ret = push_sel(pts, iv, SIZE_MAX, LW_WHOLE, 0);
	}
	return ret;
}

/*
 * Rule 3: a random subset with one write that may tear (lw_tearable())
 * torn, at every sector: its first K sectors, and its sectors from K on,
 * for each K from 1 to nr_sectors - 1 (the middle written without "@K").
 */
static int torn(struct lw_points *pts, struct lw_rng *r,
		const struct lw_log *log, const struct interval *iv)
{
	const struct lw_entry *e;
	size_t j, count = 0, t = SIZE_MAX;
	uint64_t pick, k, at;
	int ret;

	for (j = 0; j < iv->n; j++)
		count += lw_tearable(log, &log->entries[iv->d[j]]);
	if (!count)
		return 0;
	pick = rng_below(r, count);
	for (j = 0; t == SIZE_MAX; j++)
		if (lw_tearable(log, &log->entries[iv->d[j]]) && !pick--)
			t = j;
	random_sel(r, iv);
	e = &log->entries[iv->d[t]];
	for (k = 1, ret = 0; !ret && k < e->nr_sectors; k++) {
		at = k == e->nr_sectors / 2 ? 0 : k;
		ret = push_sel(pts, iv, t, LW_FIRST, at);
		if (!ret)
			ret = push_sel(pts, iv, t, LW_SECOND, at);
	}
	return ret;
}

static int interval_points(struct lw_points *pts, struct lw_rng *r,
			   const struct lw_log *log, struct interval *iv,
			   uint64_t b, unsigned int k, uint64_t *d)
{
	uint64_t i;
	int ret;

	iv->n = 0;
	for (i = iv->a; i < b; i++)
		if (lw_writes(&log->entries[i]))
			d[iv->n++] = i;
	ret = subsets(pts, r, iv, k);
	return ret ? ret : torn(pts, r, log, iv);
}

static int cmp_points(const void *a, const void *b)
{
	return lw_point_cmp(a, b);
}

/* Sorted in log order, each point once. */
static void sort_points(struct lw_points *pts)
{
	size_t i, out = 0;

	if (!pts->len)
		return;
	qsort(pts->v, pts->len, sizeof(*pts->v), cmp_points);
	for (i = 1; i < pts->len; i++) {
		if (!lw_point_cmp(&pts->v[out], &pts->v[i]))
			lw_point_free(&pts->v[i]);
		else
			pts->v[++out] = pts->v[i];
	}
	pts->len = out + 1;
}

/*
 * Every crash point of the model (README.md, "Crash points"), in log
 * order, each once; up to @k random subsets per interval.
 */
int lw_points(struct lw_log *log, uint64_t seed, unsigned int k,
	      struct lw_points *pts)
{
	struct interval iv = { 0 };
	struct lw_point pt;
	struct lw_rng r;
	uint64_t *d;
	size_t b;
	int ret = 0;

	memset(pts, 0, sizeof(*pts));
	rng_seed(&r, seed, 0);
	d = calloc(log->nr_entries + 1, sizeof(*d));
	iv.sel = calloc(log->nr_entries + 1, 1);
	iv.d = d;
	if (!d || !iv.sel)
		ret = -ENOMEM;
	for (b = 0; !ret && b < log->nr_bounds; b++) {
		pt = (struct lw_point){ .prefix = log->bounds[b] };
		ret = push_point(pts, &pt);
		iv.a = log->bounds[b];
		if (!ret && b + 1 < log->nr_bounds)
			ret = interval_points(pts, &r, log, &iv,
					      log->bounds[b + 1], k, d);
	}
	free(d);
	free(iv.sel);
	if (ret) {
		lw_points_free(pts);
		return no_memory(log);
	}
	sort_points(pts);
	return 0;
}

/*
 * A point's weight in a sample: LW_WEIGHT, but the 2(n - 1) points that
 * tear one write of n sectors at each of its sectors weigh as much as two
 * points together, so that a sample keeps the mix of flush boundaries,
 * subsets and torn writes whatever the writes' sizes.
 */
uint64_t lw_point_weight(const struct lw_log *log, const struct lw_point *pt)
{
	uint64_t n;
	size_t i;

	for (i = 0; i < pt->nr_picks; i++) {
		if (pt->picks[i].part == LW_WHOLE)
			continue;
		n = log->entries[pt->picks[i].index].nr_sectors;
		if (n <= 2)
			return LW_WEIGHT;
		return LW_WEIGHT / (n - 1) ? LW_WEIGHT / (n - 1) : 1;
	}
	return LW_WEIGHT;
}

/* The point whose weight spans u: cum[i] <= u < cum[i + 1]. */
static size_t point_at(const uint64_t *cum, size_t m, uint64_t u)
{
	size_t lo = 0, hi = m;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (cum[mid] <= u)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The kept-free point nearest i, among [0, m): one exists. */
static size_t nearest_free(const uint8_t *keep, size_t m, size_t i)
{
	size_t d;

	for (d = 0; ; d++) {
		if (i + d < m && !keep[i + d])
			return i + d;
		if (d <= i && !keep[i - d])
			return i - d;
	}
}

/*
 * Keep n of the points: the last one (P = nr_entries), and one drawn from
 * each of n - 1 strata of equal weight (lw_point_weight()) of the others;
 * a point drawn twice gives way to the nearest one not drawn.  Still in
 * log order.
 */
int lw_sample(struct lw_log *log, struct lw_points *pts, size_t n,
	      uint64_t seed)
{
	size_t m = pts->len, s, i, out = 0;
	uint64_t *cum, total, step, rem, lo, hi;
	struct lw_rng r;
	uint8_t *keep;

	if (!n)
		return fail(log, LW_FAULT_INPUT, EINVAL,
			    "a sample of no points");
	if (n >= m)
		return 0;
	/* rem * s below must not overflow. */
	if (m > UINT32_MAX)
		return fail(log, LW_FAULT_INPUT, E2BIG,
			    "too many points to sample");
	keep = calloc(m, 1);
	cum = calloc(m, sizeof(*cum));
	if (!keep || !cum) {
		free(keep);
		free(cum);
		return no_memory(log);
	}
	for (i = 0; i + 1 < m; i++)
		cum[i + 1] = cum[i] + lw_point_weight(log, &pts->v[i]);
	total = cum[m - 1];
	step = total / (n - 1 ? n - 1 : 1);
	rem = total % (n - 1 ? n - 1 : 1);
	rng_seed(&r, seed, 1);
	keep[m - 1] = 1;
	for (s = 0; s + 1 < n; s++) {
		lo = step * s + rem * s / (n - 1);
		hi = step * (s + 1) + rem * (s + 1) / (n - 1);
		i = point_at(cum, m - 1, lo + rng_below(&r, hi - lo));
		keep[keep[i] ? nearest_free(keep, m - 1, i) : i] = 1;
	}
	for (i = 0; i < m; i++) {
		if (keep[i])
			pts->v[out++] = pts->v[i];
		else
			lw_point_free(&pts->v[i]);
	}
	pts->len = out;
	free(keep);
	free(cum);
	return 0;
}

/* "SPEC MARK" per point. */
int lw_print_points(struct lw_log *log, const struct lw_points *pts,
		    FILE *out)
{
	const char *mark;
	size_t i;
	char *s;
	int ret;

	for (i = 0; i < pts->len; i++) {
		s = lw_point_str(&pts->v[i]);
		if (!s)
			return no_memory(log);
		mark = lw_mark_before(log, pts->v[i].prefix);
		ret = fprintf(out, "%s ", s) < 0 ||
		      lw_print_name(out, mark, mark ? strlen(mark) : 0) ||
		      fputc('\n', out) == EOF;
		free(s);
		if (ret)
			return output_error(log);
	}
	return 0;
}

void lw_points_free(struct lw_points *pts)
{
	size_t i;

	for (i = 0; i < pts->len; i++)
		lw_point_free(&pts->v[i]);
	free(pts->v);
	memset(pts, 0, sizeof(*pts));
}

/* Replay --------------------------------------------------------------------- */

static int target_error(struct lw_log *log, int err, uint64_t off)
{
	return fail(log, LW_FAULT_TARGET, err,
		    "writing the target at byte %llu: %s",
		    (unsigned long long)off, strerror(err));
}

/* The whole of base over dev; a regular dev is cut to base's size. */
int lw_copy_base(struct lw_log *log, int base_fd, int dev_fd)
{
	struct stat st;
	uint64_t off = 0;
	ssize_t n;
	char *buf;
	int ret = 0;

	buf = malloc(CHUNK);
	if (!buf)
		return no_memory(log);
	for (;;) {
		n = pread_full(base_fd, buf, CHUNK, off);
		if (n < 0) {
			ret = fail(log, LW_FAULT_TARGET, -n,
				   "reading the base at byte %llu: %s",
				   (unsigned long long)off, strerror(-n));
			goto out;
		}
		if (!n)
			break;
		ret = pwrite_full(dev_fd, buf, n, off);
		if (ret) {
			ret = target_error(log, -ret, off);
			goto out;
		}
		off += n;
	}
	if (!fstat(dev_fd, &st) && S_ISREG(st.st_mode) && ftruncate(dev_fd, off))
		ret = target_error(log, errno, off);
out:
	free(buf);
	return ret;
}

/* Zeroes over [off, off + len) of dev: fallocate, else written. */
static int zero_range(struct lw_log *log, int dev_fd, bool blk, uint64_t off,
		      uint64_t len, char *buf)
{
	int mode = FALLOC_FL_ZERO_RANGE | (blk ? FALLOC_FL_KEEP_SIZE : 0);
	uint64_t done;
	size_t n;
	int ret;

	if (!len || !fallocate(dev_fd, mode, off, len))
		return 0;
	if (errno != EOPNOTSUPP && errno != EINVAL && errno != ENODEV)
		return target_error(log, errno, off);
	memset(buf, 0, CHUNK);
	for (done = 0; done < len; done += n) {
		n = len - done < CHUNK ? len - done : CHUNK;
		ret = pwrite_full(dev_fd, buf, n, off + done);
		if (ret)
			return target_error(log, -ret, off + done);
	}
	return 0;
}

/* sectors [first, first + count) of entry e's data, from the log to dev. */
static int copy_data(struct lw_log *log, const struct lw_entry *e, int dev_fd,
		     uint64_t first, uint64_t count, char *buf)
{
	uint64_t ss = log->sectorsize, src, dst, len, done;
	ssize_t n;
	size_t want;
	int ret;

	src = e->pos + ss + first * ss;
	dst = (e->sector + first) * ss;
	len = count * ss;
	for (done = 0; done < len; done += want) {
		want = len - done < CHUNK ? len - done : CHUNK;
		n = pread_full(log->fd, buf, want, src + done);
		if (n < 0)
			return fail(log, LW_FAULT_LOG, -n,
				    "reading the log at byte %llu: %s",
				    (unsigned long long)(src + done),
				    strerror(-n));
		if ((size_t)n < want)
			return fail(log, LW_FAULT_LOG, EINVAL,
				    "truncated log: it ends before byte %llu",
				    (unsigned long long)(src + len));
		ret = pwrite_full(dev_fd, buf, want, dst + done);
		if (ret)
			return target_error(log, -ret, dst + done);
	}
	return 0;
}

/* Pick p, whole or torn, onto dev: its data, a discard's zeroes. */
static int apply(struct lw_log *log, const struct lw_pick *p, int dev_fd,
		 bool blk, char *buf)
{
	const struct lw_entry *e = &log->entries[p->index];
	uint64_t first = 0, count = e->nr_sectors;
	uint64_t split = p->at ? p->at : e->nr_sectors / 2;

	if (!lw_writes(e))
		return 0;
	if (p->part == LW_FIRST) {
		count = split;
	} else if (p->part == LW_SECOND) {
		first = split;
		count = e->nr_sectors - first;
	}
	if (e->flags & LW_DISCARD)
		return zero_range(log, dev_fd, blk,
				  (e->sector + first) * log->sectorsize,
				  count * log->sectorsize, buf);
	return copy_data(log, e, dev_fd, first, count, buf);
}

static bool point_in_log(const struct lw_log *log, const struct lw_point *pt)
{
	size_t i;

	if (pt->prefix > log->nr_entries)
		return false;
	for (i = 0; i < pt->nr_picks; i++)
		if (pt->picks[i].index >= log->nr_entries)
			return false;
	return true;
}

/* The entries pt applies, in log order, onto dev; then fsync. */
int lw_replay(struct lw_log *log, const struct lw_point *pt, int dev_fd)
{
	struct stat st;
	uint64_t i;
	char *buf;
	bool blk;
	int ret = 0;

	if (!point_in_log(log, pt))
		return fail(log, LW_FAULT_INPUT, EINVAL,
			    "a crash point past the log's end");
	if (fstat(dev_fd, &st))
		return target_error(log, errno, 0);
	blk = S_ISBLK(st.st_mode);
	buf = malloc(CHUNK);
	if (!buf)
		return no_memory(log);
	for (i = 0; !ret && i < pt->prefix; i++) {
		struct lw_pick whole = { .index = i, .part = LW_WHOLE };

		ret = apply(log, &whole, dev_fd, blk, buf);
	}
	for (i = 0; !ret && i < pt->nr_picks; i++)
		ret = apply(log, &pt->picks[i], dev_fd, blk, buf);
	free(buf);
	if (!ret && fsync(dev_fd))
		ret = fail(log, LW_FAULT_TARGET, errno, "fsync of the target: %s",
			   strerror(errno));
	return ret;
}
