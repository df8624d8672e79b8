/* The GPU half of the HBM provider: a dma-buf of a GPU memory range from the CUDA driver
 * (cuMemGetHandleForAddressRange), loaded on demand, for a controller to import through iommufd
 * (see ../ctx/memory.c). On its own so that a GPU test can check it where no VFIO device exists. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "../internal.h"

struct cudrv {
	int (*init)(unsigned);
	int (*pointer_get_attribute)(void *, int, unsigned long long);
	int (*ctx_push)(void *);
	int (*ctx_pop)(void **);
	int (*get_handle)(void *, unsigned long long, size_t, int, unsigned long long);
	int (*error_string)(int, const char **);
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct cudrv drv;
static char why[256];

enum { CU_POINTER_ATTRIBUTE_CONTEXT_ = 1, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD_ = 1 };
#define CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE_ 1ull /* a BAR1 (PCIe) mapping, not C2C */

static void load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int e;
	if (!h) {
		snprintf(why, sizeof(why), "the CUDA driver (libcuda.so.1) cannot be loaded: %s", dlerror());
		return;
	}
	*(void **)&drv.init = dlsym(h, "cuInit");
	*(void **)&drv.pointer_get_attribute = dlsym(h, "cuPointerGetAttribute");
	*(void **)&drv.ctx_push = dlsym(h, "cuCtxPushCurrent_v2");
	*(void **)&drv.ctx_pop = dlsym(h, "cuCtxPopCurrent_v2");
	*(void **)&drv.get_handle = dlsym(h, "cuMemGetHandleForAddressRange");
	*(void **)&drv.error_string = dlsym(h, "cuGetErrorString");
	if (!drv.init || !drv.pointer_get_attribute || !drv.ctx_push || !drv.ctx_pop || !drv.get_handle) {
		snprintf(why, sizeof(why),
			 "the CUDA driver lacks cuMemGetHandleForAddressRange (CUDA 11.7 or later) or the context calls");
		drv.get_handle = NULL;
		return;
	}
	if ((e = drv.init(0))) {
		snprintf(why, sizeof(why), "cuInit: CUresult %d (no GPU or driver)", e);
		drv.get_handle = NULL;
	}
}

static const char *cu_err(int e)
{
	const char *s = NULL;
	if (drv.error_string)
		drv.error_string(e, &s);
	return s ? s : "unknown CUresult";
}

int gio__gpu_dmabuf(void *ptr, size_t len, int *fd)
{
	const long pg = sysconf(_SC_PAGESIZE);
	void *cuctx = NULL, *popped;
	int e;
	*fd = -1;
	if (!ptr || len == 0 || (((uintptr_t)ptr | len) & (uintptr_t)(pg - 1)))
		return gio__fail(-EINVAL, "giouring: GPU memory at %p + %zu: start and length must be multiples of the %ld-byte "
				 "page (a dma-buf of a range covers whole pages)", ptr, len, pg);
	pthread_once(&once, load);
	if (!drv.get_handle)
		return gio__fail(-EOPNOTSUPP, "giouring: GPU memory at %p + %zu: no dma-buf from the GPU: %s", ptr, len, why);
	e = drv.pointer_get_attribute(&cuctx, CU_POINTER_ATTRIBUTE_CONTEXT_, (unsigned long long)(uintptr_t)ptr);
	if (e || !cuctx)
		return gio__fail(-EINVAL, "giouring: %p is not GPU memory (cuPointerGetAttribute: %s)", ptr, cu_err(e));
	if ((e = drv.ctx_push(cuctx)))
		return gio__fail(-EINVAL, "giouring: GPU memory at %p: cuCtxPushCurrent: %s", ptr, cu_err(e));
	e = drv.get_handle(fd, (unsigned long long)(uintptr_t)ptr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD_,
			   CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE_);
	if (e) /* drivers before CUDA 12.8 know no flags */
		e = drv.get_handle(fd, (unsigned long long)(uintptr_t)ptr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD_, 0);
	(void)drv.ctx_pop(&popped);
	if (e) {
		*fd = -1;
		return gio__fail(-EOPNOTSUPP,
				 "giouring: GPU memory at %p + %zu: the GPU driver exports no dma-buf for it "
				 "(cuMemGetHandleForAddressRange: %s; needs CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, i.e. the open "
				 "kernel modules on Linux 5.12+)", ptr, len, cu_err(e));
	}
	return 0;
}
