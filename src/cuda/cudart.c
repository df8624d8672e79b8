/* The CUDA runtime, loaded on demand (see cudart.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "cudart.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct gio__cudart rt;
static int usable;
static char why[256];

static void load(void)
{
	static const char *names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
	void *h = NULL;
	int n = 0;
	size_t i;
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, sizeof(why), "the CUDA runtime (libcudart.so) cannot be loaded: %s", dlerror());
		return;
	}
	*(void **)&rt.get_device_count = dlsym(h, "cudaGetDeviceCount");
	*(void **)&rt.host_alloc = dlsym(h, "cudaHostAlloc");
	*(void **)&rt.free_host = dlsym(h, "cudaFreeHost");
	*(void **)&rt.memcpy_async = dlsym(h, "cudaMemcpyAsync");
	*(void **)&rt.stream_create = dlsym(h, "cudaStreamCreateWithFlags");
	*(void **)&rt.stream_query = dlsym(h, "cudaStreamQuery");
	*(void **)&rt.stream_destroy = dlsym(h, "cudaStreamDestroy");
	*(void **)&rt.pointer_attributes = dlsym(h, "cudaPointerGetAttributes");
	*(void **)&rt.set_device = dlsym(h, "cudaSetDevice");
	*(void **)&rt.get_device = dlsym(h, "cudaGetDevice");
	*(void **)&rt.error_string = dlsym(h, "cudaGetErrorString");
	*(void **)&rt.error_name = dlsym(h, "cudaGetErrorName");
	*(void **)&rt.host_register = dlsym(h, "cudaHostRegister");
	*(void **)&rt.host_unregister = dlsym(h, "cudaHostUnregister");
	*(void **)&rt.host_get_device_pointer = dlsym(h, "cudaHostGetDevicePointer");
	*(void **)&rt.dev_malloc = dlsym(h, "cudaMalloc");
	*(void **)&rt.dev_free = dlsym(h, "cudaFree");
	*(void **)&rt.memset_async = dlsym(h, "cudaMemsetAsync");
	*(void **)&rt.malloc_async = dlsym(h, "cudaMallocAsync");
	*(void **)&rt.free_async = dlsym(h, "cudaFreeAsync");
	*(void **)&rt.runtime_get_version = dlsym(h, "cudaRuntimeGetVersion");
	{
		int v = 0;
		/* CUDA 12.8 and 12.9 export the same name with a failIdx argument before the stream. */
		if (rt.runtime_get_version && rt.runtime_get_version(&v) == 0 && v >= 13000)
			*(void **)&rt.memcpy_batch_async = dlsym(h, "cudaMemcpyBatchAsync");
	}
	if (!rt.get_device_count || !rt.host_alloc || !rt.free_host) {
		snprintf(why, sizeof(why), "libcudart.so lacks cudaGetDeviceCount, cudaHostAlloc or cudaFreeHost");
		return;
	}
	if (rt.get_device_count(&n) != 0 || n == 0) {
		snprintf(why, sizeof(why), "the CUDA runtime reports no GPU");
		return;
	}
	usable = 1;
}

const struct gio__cudart *gio__cudart(void)
{
	pthread_once(&once, load);
	return usable ? &rt : NULL;
}

const char *gio__cudart_why(void)
{
	pthread_once(&once, load);
	return usable ? "" : why;
}

const char *gio__cuda_err(int e)
{
	const struct gio__cudart *c = gio__cudart();
	return c && c->error_string ? c->error_string(e) : "CUDA error";
}

const char *gio__cuda_name(int e)
{
	static _Thread_local char unnamed[32];
	const struct gio__cudart *c = gio__cudart();
	if (c && c->error_name)
		return c->error_name(e);
	snprintf(unnamed, sizeof(unnamed), "CUDA error %d", e);
	return unnamed;
}

int gio__cuda_fail(int e, const char *fmt, ...)
{
	const struct gio__cudart *c = gio__cudart();
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = gio__cuda_vfail_named(e, c && c->error_name ? c->error_name(e) : NULL, c && c->error_string ? c->error_string(e) : NULL,
				   fmt, ap);
	va_end(ap);
	return rc;
}

static int pinned_alloc(void **p, size_t len)
{
	const struct gio__cudart *c = gio__cudart();
	/* cudaHostAllocPortable (1) | cudaHostAllocMapped (2): visible to every context, mapped. */
	return c ? c->host_alloc(p, len, 1u | 2u) : GIO__CUDA_ERR_NO_DEVICE;
}

static int pinned_release(void *p, size_t len)
{
	(void)len;
	return gio__cudart()->free_host(p); /* loaded: it made the block */
}

const struct gio__pinned_ops gio__cudart_pinned = {"cudaHostAlloc (libcudart.so)", pinned_alloc, pinned_release};

static int registered_release(void *p, size_t len)
{
	const struct gio__cudart *c = gio__cudart();
	const int e = c->host_unregister(p); /* loaded: it registered the block */
	(void)len;
	if (e == 0)
		free(p);
	return e; /* still registered: the memory cannot go back to malloc */
}

const struct gio__pinned_ops gio__cudart_registered = {"cudaHostRegister (libcudart.so)", NULL, registered_release};

int gio__pinned_alloc(size_t len, const char *what, void **p)
{
	int e;
	*p = NULL;
	if (!gio__cudart())
		return gio__fail(-ENODEV, "giouring: %s: %s", what, gio__cudart_why());
	*p = gio__pinned_get(&gio__cudart_pinned, len, &e);
	if (*p)
		return 0;
	if (e < 0)
		return gio__fail(-ENOMEM, "giouring: %s: no memory to track %zu bytes of pinned memory", what, len);
	return gio__cuda_fail(e, "%s: cudaHostAlloc of %zu bytes", what, len);
}

int gio__cuda_memory_type(const struct gio__cudart *rt, const void *ptr)
{
	union {
		struct {
			int type;
			int device;
		} a;
		unsigned char bytes[256]; /* struct cudaPointerAttributes, with room to spare */
	} attr;
	memset(&attr, 0, sizeof(attr));
	if (!rt || !rt->pointer_attributes || rt->pointer_attributes(&attr, ptr) != 0)
		return -1;
	return attr.a.type;
}
