/* The native layer's error channel: the calling thread's message about its latest failed gpy_*
 * call, which the Python side puts into GiouringError (giouring/_lib.py). Library failures carry
 * the library's own message (gio_last_error()) after what this layer was doing. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gpy.h"

static _Thread_local char message[1024];

const char *gpy_last_error(void)
{
	return message;
}

void gpy_clear_error(void)
{
	message[0] = 0;
}

int gpy_fail(int rc, const char *fmt, ...)
{
	char m[sizeof(message)]; /* callers may quote the current message */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	memcpy(message, m, sizeof(m));
	return rc;
}

void gpy_error_save(struct gpy_saved_error *e)
{
	memcpy(e->message, message, sizeof(message));
}

int gpy_error_restore(int rc, const struct gpy_saved_error *e)
{
	memcpy(message, e->message, sizeof(message));
	return rc;
}

int gpy_lib(int rc, const char *what)
{
	/* The library's message; else this layer's own (a CUDA call of gpu.cu); else errno's text. */
	const char *lib = gio_last_error();
	return gpy_fail(rc, "%s: %s", what, lib[0] ? lib : message[0] ? message : strerror(-rc));
}

const char *gpy_status_str(uint32_t status)
{
	return gio_status_str((uint16_t)status);
}
