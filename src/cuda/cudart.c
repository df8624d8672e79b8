/* The CUDA runtime, loaded on demand (see cudart.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

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
	*(void **)&rt.host_register = dlsym(h, "cudaHostRegister");
	*(void **)&rt.host_unregister = dlsym(h, "cudaHostUnregister");
	*(void **)&rt.host_get_device_pointer = dlsym(h, "cudaHostGetDevicePointer");
	*(void **)&rt.dev_malloc = dlsym(h, "cudaMalloc");
	*(void **)&rt.dev_free = dlsym(h, "cudaFree");
	*(void **)&rt.memset_async = dlsym(h, "cudaMemsetAsync");
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

void *gio__pinned_alloc(size_t len)
{
	const struct gio__cudart *c = gio__cudart();
	void *p = NULL;
	/* cudaHostAllocPortable (1) | cudaHostAllocMapped (2): visible to every context, mapped. */
	if (!c || c->host_alloc(&p, len, 1u | 2u) != 0)
		return NULL;
	memset(p, 0, len);
	return p;
}

void gio__pinned_free(void *p, size_t len)
{
	(void)len;
	if (p)
		(void)gio__cudart()->free_host(p);
}
