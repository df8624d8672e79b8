/* The CUDA runtime, loaded on demand (dlopen): the host library links no CUDA library, so it
 * runs on machines without one, and uses the runtime only where a GPU is asked for. */
#ifndef GIOURING_SRC_CUDA_CUDART_H
#define GIOURING_SRC_CUDA_CUDART_H

#include <stddef.h>

/* The entry points used; optional ones are NULL where the runtime lacks them. */
struct gio__cudart {
	int (*get_device_count)(int *);
	int (*host_alloc)(void **, size_t, unsigned int);
	int (*free_host)(void *);
	/* Device memory served by the CPU executor. */
	int (*memcpy_async)(void *, const void *, size_t, int, void *);
	int (*stream_create)(void **, unsigned int);
	int (*stream_query)(void *);
	int (*stream_destroy)(void *);
	int (*pointer_attributes)(void *, const void *);
	int (*set_device)(int);
	int (*get_device)(int *);
	const char *(*error_string)(int);
	int (*host_register)(void *, size_t, unsigned int);
	int (*host_unregister)(void *);
	int (*host_get_device_pointer)(void **, void *, unsigned int);
	/* Queue memory in GPU memory (GIO_CTX_QP_HBM). */
	int (*dev_malloc)(void **, size_t);
	int (*dev_free)(void *);
	int (*memset_async)(void *, int, size_t, void *);
};

/* Numbers of the CUDA runtime API used without its headers. */
#define GIO__CUDA_NOT_READY 600          /* cudaErrorNotReady */
#define GIO__CUDA_MEMCPY_DEFAULT 4       /* cudaMemcpyDefault: direction from the unified addresses */
#define GIO__CUDA_STREAM_NON_BLOCKING 1u /* cudaStreamNonBlocking */
#define GIO__CUDA_MEMORY_TYPE_UNREGISTERED 0 /* cudaMemoryTypeUnregistered: pageable host memory */
#define GIO__CUDA_MEMORY_TYPE_DEVICE 2   /* cudaMemoryTypeDevice */

/* The runtime, loaded at the first call; NULL (gio__cudart_why() says why) where it cannot be
 * loaded, lacks cudaHostAlloc/cudaFreeHost, or reports no GPU. */
const struct gio__cudart *gio__cudart(void);

/* Why gio__cudart() returned NULL. */
const char *gio__cudart_why(void);

/* The runtime's name for error @e. */
const char *gio__cuda_err(int e);

/* Pinned, GPU-mapped, zeroed host memory, or NULL (gio__cudart_why() names a missing runtime). */
void *gio__pinned_alloc(size_t len);

/* Releases what gio__pinned_alloc() returned (len bytes); NULL is ignored. */
void gio__pinned_free(void *p, size_t len);

#endif
