// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the incfs namespace (tree.c) in memory: its name hash.
 * tree.c and the code it calls (format.c, name_rules.c) are included
 * rather than linked, as in format_kunit.c (see Kbuild); its one call into
 * backing.c is stubbed, since nothing here is written.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "../format.c"
#include "../name_rules.c"
#include "../tree.c"

int incfs_bf_append_md(struct incfs_mount *mi, union incfs_md_record *rec)
{
	return 0;
}

/* Names chosen to share one bucket of a mount. */
#define CRAFTED		32
#define BUCKETS		BIT(NAME_BITS_MIN)

static struct incfs_mount *test_mount(struct kunit *test)
{
	struct incfs_mount *mi = kunit_kzalloc(test, sizeof(*mi), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mi);
	xa_init(&mi->nodes);
	KUNIT_ASSERT_EQ(test, incfs_tree_init(mi), 0);
	return mi;
}

/*
 * Names that all fall in one bucket of a mount (found by trying, as an
 * attacker who knew its hash would) spread over the buckets of another
 * mount of the same directory: the hash is seeded per mount.
 */
static void test_name_hash_seeded_per_mount(struct kunit *test)
{
	struct incfs_node da = { .ino = INCFS_ROOT_INODE };
	struct incfs_node db = { .ino = INCFS_ROOT_INODE };
	unsigned int count[BUCKETS] = {}, most = 0;
	char names[CRAFTED][16], name[16];
	u32 bucket;
	int i, len, found = 0;

	da.mi = test_mount(test);
	db.mi = test_mount(test);
	bucket = name_hash(&da, "x", 1) % BUCKETS;
	for (i = 0; found < CRAFTED && i < 1000000; i++) {
		len = snprintf(name, sizeof(name), "n%d", i);
		if (name_hash(&da, name, len) % BUCKETS == bucket)
			strscpy(names[found++], name);
	}
	KUNIT_ASSERT_EQ(test, found, CRAFTED);
	for (i = 0; i < CRAFTED; i++) {
		u32 b = name_hash(&db, names[i], strlen(names[i])) % BUCKETS;

		most = max(most, ++count[b]);
	}
	KUNIT_EXPECT_LT_MSG(test, most, CRAFTED / 2,
			    "%u of %d names crafted for one mount share a bucket in another",
			    most, CRAFTED);
	incfs_tree_free(da.mi);
	incfs_tree_free(db.mi);
}

static struct kunit_case incfs_tree_cases[] = {
	KUNIT_CASE(test_name_hash_seeded_per_mount),
	{}
};

static struct kunit_suite incfs_tree_suite = {
	.name = "incfs_tree",
	.test_cases = incfs_tree_cases,
};

kunit_test_suites(&incfs_tree_suite);

MODULE_DESCRIPTION("KUnit tests of the incfs namespace");
MODULE_LICENSE("GPL");
