/* SPDX-License-Identifier: GPL-2.0 */
/*
 * struct twin, one of two types of that name in one library (twin_b.c
 * defines the other), for make_fixtures.sh's same-named-types record:
 * TWINS_CHANGED makes the same change to both.
 */

struct twin {
	int a;
#ifdef TWINS_CHANGED
	int z;
#endif
};

int twin_a(struct twin *t)
{
	return t->a;
}
