// SPDX-License-Identifier: GPL-2.0
/*
 * Anonymous VMA naming, the contract Android relies on, as Linux 6.12
 * implements it (CONFIG_ANON_VMA_NAME):
 *
 *   prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, start, len, name)
 *
 * names private anonymous memory "[anon:name]" and shared anonymous memory
 * "[anon_shmem:name]" in /proc/<pid>/maps, smaps and PROCMAP_QUERY.  Every
 * errno and every line of maps text below is what 6.12 does; see
 * kernel/sys.c:prctl_set_vma(), mm/madvise.c:madvise_set_anon_name() and
 * fs/proc/task_mmu.c:get_vma_name().
 */
#include <linux/fs.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "gki_test.h"
#include "kselftest_harness.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA		0x53564d41
#define PR_SET_VMA_ANON_NAME	0
#endif

static size_t page;

/* prctl's result as 0 or -errno. */
static int set_name(void *addr, size_t len, const char *name)
{
	return prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)addr, len,
		     (unsigned long)name) ? -errno : 0;
}

/*
 * pages read-write private anonymous pages between two PROT_NONE guard
 * pages, so that the region never merges with a neighbour.
 */
static char *map_region(size_t pages)
{
	char *p = mmap(NULL, (pages + 2) * page, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mmap(p + page, pages * page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return NULL;
	return p + page;
}

static void unmap_region(char *p, size_t pages)
{
	munmap(p - page, (pages + 2) * page);
}

/* smaps: field lines ("Rss:   4 kB") have a colon before the first space. */
static int is_smaps_field(const char *line)
{
	const char *colon = strchr(line, ':'), *space = strchr(line, ' ');

	return colon && (!space || colon < space);
}

struct vma_line {
	unsigned long start, end;
	char perms[5];
	char name[256];
};

/* Parse one maps/smaps header line; 0 when it is well formed. */
static int parse_line(const char *line, struct vma_line *v)
{
	unsigned long off, ino;
	unsigned int maj, min;
	int n = 0;

	if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &v->start, &v->end, v->perms,
		   &off, &maj, &min, &ino, &n) < 7 || !n || v->start >= v->end)
		return -1;
	snprintf(v->name, sizeof(v->name), "%.*s", (int)strcspn(line + n, "\n"), line + n);
	return 0;
}

/*
 * The lines of a maps-format file overlapping [start, end), at most max;
 * returns how many, or -1 on a read or parse error.
 */
static int lines_in(const char *file, const void *start, const void *end,
		    struct vma_line *out, int max)
{
	char *text = gki_read_file(file, NULL), *line, *save;
	int n = 0;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct vma_line v;

		if (is_smaps_field(line))
			continue;
		if (parse_line(line, &v)) {
			n = -1;
			break;
		}
		if (v.end <= (unsigned long)start || v.start >= (unsigned long)end)
			continue;
		if (n < max)
			out[n] = v;
		n++;
	}
	free(text);
	return n;
}

/* The name column of the maps line covering addr ("" when unnamed). */
static const char *name_at(const char *file, const void *addr)
{
	static struct vma_line v;

	if (lines_in(file, addr, (const char *)addr + 1, &v, 1) != 1)
		return "<no line>";
	return v.name;
}

static const char *maps_name(const void *addr)
{
	return name_at("/proc/self/maps", addr);
}

static int maps_lines(const void *start, size_t pages, struct vma_line *out, int max)
{
	return lines_in("/proc/self/maps", start, (const char *)start + pages * page, out, max);
}

FIXTURE(region) {
	char *p;
	size_t pages;
};

FIXTURE_SETUP(region)
{
	page = sysconf(_SC_PAGESIZE);
	self->pages = 4;
	self->p = map_region(self->pages);
	ASSERT_NE(NULL, self->p);
}

FIXTURE_TEARDOWN(region)
{
	unmap_region(self->p, self->pages);
}

/* Basics: where the name shows, and clearing it */

TEST_F(region, private_anon_name_in_maps)
{
	ASSERT_EQ(0, set_name(self->p, self->pages * page, "heap one"));
	EXPECT_STREQ("[anon:heap one]", maps_name(self->p));
	EXPECT_STREQ("[anon:heap one]", maps_name(self->p + (self->pages - 1) * page));
}

TEST_F(region, private_anon_name_in_smaps_header)
{
	ASSERT_EQ(0, set_name(self->p, self->pages * page, "smaps-name"));
	EXPECT_STREQ("[anon:smaps-name]", name_at("/proc/self/smaps", self->p));
}

TEST_F(region, null_name_clears)
{
	ASSERT_EQ(0, set_name(self->p, self->pages * page, "temporary"));
	ASSERT_EQ(0, set_name(self->p, self->pages * page, NULL));
	EXPECT_STREQ("", maps_name(self->p));
}

/* Name validation, before any address check */

TEST_F(region, name_of_79_chars_accepted)
{
	char name[80], want[90];

	memset(name, 'x', 79);
	name[79] = '\0';
	ASSERT_EQ(0, set_name(self->p, page, name));
	snprintf(want, sizeof(want), "[anon:%s]", name);
	EXPECT_STREQ(want, maps_name(self->p));
}

TEST_F(region, name_of_80_chars_or_more_einval)
{
	char name[200];

	for (size_t len = 80; len < sizeof(name); len += 39) {
		memset(name, 'x', len);
		name[len] = '\0';
		EXPECT_EQ(-EINVAL, set_name(self->p, page, name)) TH_LOG("len %zu", len);
	}
	EXPECT_STREQ("", maps_name(self->p));
}

TEST_F(region, empty_name_accepted)
{
	ASSERT_EQ(0, set_name(self->p, page, ""));
	EXPECT_STREQ("[anon:]", maps_name(self->p));
}

TEST_F(region, invalid_chars_einval)
{
	const char *specials = "\\`$[]";
	char name[] = "ab?cd";
	int bad = 0;

	ASSERT_EQ(0, set_name(self->p, page, "before"));
	for (int c = 1; c < 256; c++) {
		if (c >= 0x20 && c < 0x7f && !strchr(specials, c))
			continue;
		name[2] = c;
		if (set_name(self->p, page, name) != -EINVAL) {
			TH_LOG("character 0x%02x was not refused", c);
			bad++;
		}
	}
	EXPECT_EQ(0, bad);
	/* A refused name leaves the old one in place. */
	EXPECT_STREQ("[anon:before]", maps_name(self->p));
}

TEST_F(region, space_and_colon_accepted)
{
	ASSERT_EQ(0, set_name(self->p, page, "dalvik: main space"));
	EXPECT_STREQ("[anon:dalvik: main space]", maps_name(self->p));
}

TEST_F(region, bad_name_pointer_efault)
{
	EXPECT_EQ(-EFAULT, set_name(self->p, page, (const char *)8));
}

TEST_F(region, name_checked_before_address)
{
	char longname[100];

	memset(longname, 'y', 99);
	longname[99] = '\0';
	/* An unaligned start would be EINVAL, an unmapped one ENOMEM. */
	EXPECT_EQ(-EFAULT, set_name(self->p + 1, page, (const char *)8));
	EXPECT_EQ(-EFAULT, set_name(self->p - page * 2, page, (const char *)8));
	EXPECT_EQ(-EINVAL, set_name(self->p - page * 2, page, longname));
}

/* Address range rules */

TEST_F(region, unaligned_start_einval)
{
	EXPECT_EQ(-EINVAL, set_name(self->p + 1, page, "x"));
	EXPECT_STREQ("", maps_name(self->p));
}

TEST_F(region, len_rounded_up_to_pages)
{
	struct vma_line v[4];

	ASSERT_EQ(0, set_name(self->p, page + 1, "two pages"));
	ASSERT_EQ(2, maps_lines(self->p, self->pages, v, 4));
	EXPECT_EQ((unsigned long)self->p, v[0].start);
	EXPECT_EQ((unsigned long)self->p + 2 * page, v[0].end);
	EXPECT_STREQ("[anon:two pages]", v[0].name);
	EXPECT_STREQ("", v[1].name);
}

TEST_F(region, zero_len_is_noop)
{
	struct vma_line v[4];

	EXPECT_EQ(0, set_name(self->p, 0, "nothing"));
	ASSERT_EQ(1, maps_lines(self->p, self->pages, v, 4));
	EXPECT_STREQ("", v[0].name);
}

TEST_F(region, wrapping_range_einval)
{
	EXPECT_EQ(-EINVAL, set_name(self->p, -(uintptr_t)self->p + page, "wrap"));
	EXPECT_EQ(-EINVAL, set_name(self->p, (size_t)-1, "wrap"));
	EXPECT_STREQ("", maps_name(self->p));
}

TEST_F(region, unknown_suboption_einval)
{
	EXPECT_EQ(-1, prctl(PR_SET_VMA, 1, (unsigned long)self->p, page, (unsigned long)"x"));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_STREQ("", maps_name(self->p));
}

TEST_F(region, hole_renames_mapped_parts_enomem)
{
	ASSERT_EQ(0, munmap(self->p + page, page));
	EXPECT_EQ(-ENOMEM, set_name(self->p, 3 * page, "holey"));
	EXPECT_STREQ("[anon:holey]", maps_name(self->p));
	EXPECT_STREQ("[anon:holey]", maps_name(self->p + 2 * page));
}

TEST(no_vma_at_or_above_start_enomem)
{
	struct vma_line v[1];
	unsigned long top = 0;
	char *text = gki_read_file("/proc/self/maps", NULL), *line;

	page = sysconf(_SC_PAGESIZE);
	ASSERT_NE(NULL, text);
	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (!parse_line(line, v) && v->end > top)
			top = v->end;
	free(text);
	ASSERT_NE(0, top);
	EXPECT_EQ(-ENOMEM, set_name((void *)top, page, "nowhere"));
}

/* What can be named */

TEST_F(region, file_backed_ebadf_keeps_earlier_names)
{
	char path[] = "/tmp/anon_vma_name.XXXXXX";
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, page));
	ASSERT_NE(MAP_FAILED, mmap(self->p + page, page, PROT_READ, MAP_PRIVATE | MAP_FIXED,
				   fd, 0));
	EXPECT_EQ(-EBADF, set_name(self->p, 3 * page, "mixed"));
	EXPECT_STREQ("[anon:mixed]", maps_name(self->p));
	EXPECT_STREQ(path, maps_name(self->p + page));
	EXPECT_STREQ("", maps_name(self->p + 2 * page));
	close(fd);
	unlink(path);
}

TEST(shared_anon_shows_anon_shmem)
{
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, set_name(p, 2 * page, "ashmem region"));
	EXPECT_STREQ("[anon_shmem:ashmem region]", maps_name(p));
	munmap(p, 2 * page);
}

TEST(memfd_shows_anon_shmem)
{
	int fd = memfd_create("gki-memfd", 0);
	char *p;

	page = sysconf(_SC_PAGESIZE);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 2 * page));
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_STREQ("/memfd:gki-memfd (deleted)", maps_name(p));
	ASSERT_EQ(0, set_name(p, 2 * page, "buffer"));
	EXPECT_STREQ("[anon_shmem:buffer]", maps_name(p));
	munmap(p, 2 * page);
	close(fd);
}

/* Splitting and merging */

TEST_F(region, partial_naming_splits)
{
	struct vma_line v[4];

	ASSERT_EQ(0, set_name(self->p + page, page, "middle"));
	ASSERT_EQ(3, maps_lines(self->p, self->pages, v, 4));
	EXPECT_STREQ("", v[0].name);
	EXPECT_STREQ("[anon:middle]", v[1].name);
	EXPECT_EQ((unsigned long)self->p + page, v[1].start);
	EXPECT_EQ((unsigned long)self->p + 2 * page, v[1].end);
	EXPECT_STREQ("", v[2].name);
}

TEST_F(region, equal_text_merges_across_buffers)
{
	char *a = strdup("same"), *b = strdup("same");
	struct vma_line v[4];

	ASSERT_NE(a, b);
	ASSERT_EQ(0, set_name(self->p, page, a));
	ASSERT_EQ(0, set_name(self->p + page, 3 * page, b));
	/* 6.12 compares the text; the 2020 proposal compared pointers. */
	ASSERT_EQ(1, maps_lines(self->p, self->pages, v, 4));
	EXPECT_STREQ("[anon:same]", v[0].name);
	free(a);
	free(b);
}

TEST_F(region, different_names_do_not_merge)
{
	struct vma_line v[4];

	ASSERT_EQ(0, set_name(self->p, 2 * page, "one"));
	ASSERT_EQ(0, set_name(self->p + 2 * page, 2 * page, "two"));
	ASSERT_EQ(2, maps_lines(self->p, self->pages, v, 4));
	EXPECT_STREQ("[anon:one]", v[0].name);
	EXPECT_STREQ("[anon:two]", v[1].name);
}

TEST_F(region, same_name_again_does_not_split)
{
	char again[] = "stable";
	struct vma_line v[4];

	ASSERT_EQ(0, set_name(self->p, self->pages * page, "stable"));
	ASSERT_EQ(0, set_name(self->p + page, page, again));
	ASSERT_EQ(1, maps_lines(self->p, self->pages, v, 4));
	EXPECT_STREQ("[anon:stable]", v[0].name);
}

/* Names follow the memory */

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_F(region, fork_child_sees_names)
{
	pid_t pid;

	ASSERT_EQ(0, set_name(self->p, 2 * page, "inherited"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(strcmp("[anon:inherited]", maps_name(self->p)) ||
		      strcmp("", maps_name(self->p + 2 * page)));
	EXPECT_EQ(0, wait_child(pid));
}

TEST_F(region, parent_rename_after_fork_not_in_child)
{
	int go[2], done[2];
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, set_name(self->p, page, "before fork"));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Look only after the parent renamed. */
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(strcmp("[anon:before fork]", maps_name(self->p)) != 0);
	}
	ASSERT_EQ(0, set_name(self->p, page, "after fork"));
	ASSERT_EQ(1, write(go[1], &c, 1));
	EXPECT_EQ(0, wait_child(pid));
	EXPECT_STREQ("[anon:after fork]", maps_name(self->p));
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
}

TEST_F(region, mprotect_split_keeps_names)
{
	struct vma_line v[4];

	ASSERT_EQ(0, set_name(self->p, 3 * page, "guarded"));
	ASSERT_EQ(0, mprotect(self->p + page, page, PROT_READ));
	ASSERT_EQ(4, maps_lines(self->p, self->pages, v, 4));
	EXPECT_STREQ("[anon:guarded]", v[0].name);
	EXPECT_STREQ("r--p", v[1].perms);
	EXPECT_STREQ("[anon:guarded]", v[1].name);
	EXPECT_STREQ("[anon:guarded]", v[2].name);
	EXPECT_STREQ("", v[3].name);
}

TEST_F(region, mremap_move_keeps_name)
{
	char *dst = map_region(2);
	char *moved;

	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, set_name(self->p, 2 * page, "movable"));
	self->p[0] = 42;
	moved = mremap(self->p, 2 * page, 2 * page, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	ASSERT_EQ(dst, moved);
	EXPECT_STREQ("[anon:movable]", maps_name(dst));
	EXPECT_STREQ("[anon:movable]", maps_name(dst + page));
	EXPECT_EQ(42, dst[0]);
	EXPECT_STREQ("<no line>", maps_name(self->p));
	unmap_region(dst, 2);
}

TEST_F(region, user_buffer_reuse_does_not_change_name)
{
	char *heap = strdup("copied");
	char stack[] = "kept";

	ASSERT_EQ(0, set_name(self->p, page, heap));
	ASSERT_EQ(0, set_name(self->p + page, page, stack));
	memset(heap, 'Z', strlen(heap));
	free(heap);
	memcpy(stack, "gone", sizeof("gone"));
	EXPECT_STREQ("[anon:copied]", maps_name(self->p));
	EXPECT_STREQ("[anon:kept]", maps_name(self->p + page));
}

/* PROCMAP_QUERY, the other reader of names (6.11+) */

static int procmap_query(void *addr, char *name, size_t name_size, struct procmap_query *q)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	int ret;

	if (fd < 0)
		return -errno;
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->query_addr = (unsigned long)addr;
	q->vma_name_addr = (unsigned long)name;
	q->vma_name_size = name_size;
	ret = ioctl(fd, PROCMAP_QUERY, q) ? -errno : 0;
	close(fd);
	return ret;
}

TEST_F(region, procmap_query_returns_name)
{
	struct procmap_query q;
	char name[64];

	ASSERT_EQ(0, set_name(self->p + page, page, "queried"));
	ASSERT_EQ(0, procmap_query(self->p + page, name, sizeof(name), &q));
	EXPECT_EQ((unsigned long)self->p + page, q.vma_start);
	EXPECT_EQ((unsigned long)self->p + 2 * page, q.vma_end);
	EXPECT_STREQ("[anon:queried]", name);
	EXPECT_EQ(strlen("[anon:queried]") + 1, q.vma_name_size);
}

TEST_F(region, procmap_query_small_buffer_enametoolong)
{
	struct procmap_query q;
	char name[64];

	ASSERT_EQ(0, set_name(self->p, page, "does not fit"));
	EXPECT_EQ(-ENAMETOOLONG, procmap_query(self->p, name, 8, &q));
	/* Exactly large enough, with its NUL, is fine. */
	EXPECT_EQ(0, procmap_query(self->p, name, strlen("[anon:does not fit]") + 1, &q));
	EXPECT_STREQ("[anon:does not fit]", name);
}

/* The initial heap and stack keep their markers */

static int find_marker(const char *marker, struct vma_line *out)
{
	char *text = gki_read_file("/proc/self/maps", NULL), *line, *save;
	int found = -1;

	if (!text)
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!parse_line(line, out) && !strcmp(out->name, marker)) {
			found = 0;
			break;
		}
	free(text);
	return found;
}

TEST(heap_keeps_marker_when_named)
{
	struct vma_line heap;

	page = sysconf(_SC_PAGESIZE);
	ASSERT_NE((void *)-1, sbrk(4 * page));
	ASSERT_EQ(0, find_marker("[heap]", &heap));
	ASSERT_EQ(0, set_name((void *)heap.start, heap.end - heap.start, "named heap"));
	EXPECT_STREQ("[heap]", maps_name((void *)heap.start));
}

TEST(stack_keeps_marker_when_named)
{
	struct vma_line stack;

	ASSERT_EQ(0, find_marker("[stack]", &stack));
	ASSERT_EQ(0, set_name((void *)stack.start, stack.end - stack.start, "named stack"));
	EXPECT_STREQ("[stack]", maps_name((void *)stack.start));
}

/* bionic's sys_prctl.bug_20017123 */

TEST(bionic_bug_20017123)
{
	struct vma_line v[4];
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_region(3);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, mprotect(p, page, PROT_NONE));
	ASSERT_EQ(0, set_name(p, 3 * page, "anonymous map space"));
	ASSERT_EQ(2, maps_lines(p, 3, v, 4));
	EXPECT_LE(v[0].end, v[1].start);
	EXPECT_STREQ("---p", v[0].perms);
	EXPECT_STREQ("rw-p", v[1].perms);
	EXPECT_STREQ("[anon:anonymous map space]", v[0].name);
	EXPECT_STREQ("[anon:anonymous map space]", v[1].name);
	p[page] = 1;
	EXPECT_EQ(1, p[page]);
	unmap_region(p, 3);
}

/* Renaming while another thread reads maps and smaps */

struct race {
	char *p;
	int stop;	/* read and written with __atomic builtins */
	/* Each counter is written by one thread only. */
	long renames, rename_errors;	/* renamer */
	long reads, read_errors, bad_lines;	/* reader */
};

static void *renamer(void *arg)
{
	struct race *r = arg;
	char name[32];

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 8; i++) {
			snprintf(name, sizeof(name), "racer-%ld-%d", r->renames % 5, i % 3);
			if (set_name(r->p + i * page, (1 + i % 3) * page, name))
				r->rename_errors++;
		}
		set_name(r->p, 8 * page, NULL);
		r->renames++;
	}
	return NULL;
}

static void check_file(struct race *r, const char *file)
{
	char *text = gki_read_file(file, NULL), *line, *save;
	struct vma_line v;

	if (!text) {
		r->read_errors++;
		return;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t len;

		if (is_smaps_field(line))
			continue;
		if (parse_line(line, &v)) {
			r->bad_lines++;
			continue;
		}
		len = strlen(v.name);
		if (!strncmp(v.name, "[anon:", 6) && (len < 8 || v.name[len - 1] != ']'))
			r->bad_lines++;	/* a torn name */
	}
	free(text);
}

TEST(concurrent_rename_and_read)
{
	struct race r = { 0 };
	pthread_t t;
	time_t end;

	page = sysconf(_SC_PAGESIZE);
	r.p = map_region(8);
	ASSERT_NE(NULL, r.p);
	ASSERT_EQ(0, pthread_create(&t, NULL, renamer, &r));
	end = time(NULL) + 3;
	while (time(NULL) < end) {
		check_file(&r, "/proc/self/maps");
		check_file(&r, "/proc/self/smaps");
		r.reads++;
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_join(t, NULL));
	TH_LOG("%ld rename rounds, %ld reads of maps and smaps", r.renames, r.reads);
	EXPECT_LT(0, r.renames);
	EXPECT_LT(0, r.reads);
	EXPECT_EQ(0, r.rename_errors);
	EXPECT_EQ(0, r.read_errors);
	EXPECT_EQ(0, r.bad_lines);
	unmap_region(r.p, 8);
}

TEST_HARNESS_MAIN
