/* The host library's error channel: the calling thread's message about its latest failed call
 * (gio_last_error()). Every public entry point that can fail clears it first
 * (gio__clear_error()), so a message never outlives the call it describes. giouring::gpu reports
 * through it too. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <giouring/host/ctx.h>

#include "internal.h"

static _Thread_local char last_error[512];

int gio__fail(int rc, const char *fmt, ...)
{
	/* Formatted elsewhere first: callers quote the previous message (gio_last_error() as an
	 * argument), which vsnprintf into the same buffer would overwrite while reading it. */
	char msg[sizeof(last_error)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(last_error, msg, sizeof(msg));
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
