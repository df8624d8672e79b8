/* The host library's error channel: the calling thread's message about its latest failed call
 * (gio_last_error()). Every public entry point that can fail clears it first
 * (gio__clear_error()), so a message never outlives the call it describes. giouring::gpu reports
 * through it too. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include <giouring/host/ctx.h>

#include "internal.h"

static _Thread_local char last_error[512];

int gio__fail(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return rc;
}

void gio__clear_error(void)
{
	last_error[0] = 0;
}

const char *gio_last_error(void)
{
	return last_error;
}
