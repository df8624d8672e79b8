/* The host library's error channel: the calling thread's last message (gio_last_error()). Its own
 * object file, so that programs using only the CUDA headers' host helpers (giouring/target/gpu_target.cuh)
 * link it without the CPU executor and liburing. */
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

const char *gio_last_error(void)
{
	return last_error;
}
