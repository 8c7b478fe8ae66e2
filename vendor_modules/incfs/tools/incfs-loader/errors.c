// SPDX-License-Identifier: GPL-2.0
/*
 * incfs-loader: the one error message.  The first failure detected is the
 * one reported: whatever fails after it (cleaning up, making what was
 * written durable) is a consequence.
 */
#include <stdarg.h>
#include <stdio.h>

#include "errors.h"

static char errmsg[512];

int ld_error(int code, const char *fmt, ...)
{
	va_list ap;

	if (errmsg[0])
		return -code;
	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return -code;
}

const char *ld_error_message(void)
{
	return errmsg[0] ? errmsg : NULL;
}

void ld_error_clear(void)
{
	errmsg[0] = '\0';
}
