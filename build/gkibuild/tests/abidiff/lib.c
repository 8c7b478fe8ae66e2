/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small library whose variants make one ABI change each, compiled by
 * make_fixtures.sh to record real abidiff reports for test_abi_report.py.
 * Every macro is a change relative to the build without macros.
 */

struct point {
	int x;
#ifdef STRUCT_MEMBER_RESIZED
	long y;
#else
	int y;
#endif
#ifdef STRUCT_MEMBER_ADDED
	int z;
#endif
};

enum color {
	RED,
#ifndef ENUM_ENUMERATOR_REMOVED
	GREEN,
#endif
#ifdef ENUM_ENUMERATOR_ADDED
	BLUE,
#endif
};

enum mode {
	MODE_A = 1,
#ifdef ENUM_ENUMERATOR_RENUMBERED
	MODE_B = 5,
#else
	MODE_B = 2,
#endif
};

int move(struct point *p, int dx)
{
	p->x += dx;
	return p->x;
}

int paint(enum color c, enum mode m)
{
	return (int)c + (int)m;
}

#ifdef PARAMETER_TYPE_CHANGED
long scale(long f)
#else
long scale(int f)
#endif
{
	return f * 2;
}

#ifndef FUNCTION_REMOVED
int gone(void)
{
	return 1;
}
#endif

#ifdef FUNCTION_ADDED
int fresh(void)
{
	return 2;
}
#endif

#ifdef VARIABLE_TYPE_CHANGED
long counter;
#else
int counter;
#endif

#ifndef VARIABLE_REMOVED
int spare;
#endif

#ifdef VARIABLE_ADDED
int extra;
#endif

/* A symbol without debug info, as the kernel's assembly exports are. */
#ifndef NODEBUG_SYMBOL_REMOVED
__asm__(".globl raw_copy\n.type raw_copy, @function\nraw_copy:\n\tret\n"
	".size raw_copy, . - raw_copy\n");
#endif
#ifdef NODEBUG_SYMBOL_ADDED
__asm__(".globl raw_fill\n.type raw_fill, @function\nraw_fill:\n\tret\n"
	".size raw_fill, . - raw_fill\n");
#endif
