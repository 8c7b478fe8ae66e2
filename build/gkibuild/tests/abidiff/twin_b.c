/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The other struct twin (see twin_a.c): another member, so libabigail
 * keeps it a type of its own.
 */

struct twin {
	int b;
#ifdef TWINS_CHANGED
	int z;
#endif
};

int twin_b(struct twin *t)
{
	return t->b;
}
