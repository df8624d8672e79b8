/* The CUDA runtime, loaded on demand (dlopen): the host library links no CUDA library, so it
 * runs on machines without one, and uses the runtime only where a GPU is asked for. */
#ifndef GIOURING_SRC_CUDA_CUDART_H
#define GIOURING_SRC_CUDA_CUDART_H

#include <stddef.h>

#include "cuda_errno.h"
#include "pinned.h"

GIO_EXTERN_C_BEGIN

/* cudaMemcpyAttributes (CUDA 12.8 on): the copy's source order and location hints. */
struct gio__cuda_memcpy_attrs {
	int src_access_order;          /* GIO__CUDA_SRC_ORDER_* */
	int src_loc_type, src_loc_id;  /* cudaMemLocation: ignored for pinned and device memory */
	int dst_loc_type, dst_loc_id;
	unsigned int flags;
};
#define GIO__CUDA_SRC_ORDER_STREAM 1   /* cudaMemcpySrcAccessOrderStream */
#define GIO__CUDA_SRC_ORDER_API_CALL 2 /* cudaMemcpySrcAccessOrderDuringApiCall: read before the call returns */

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
	const char *(*error_name)(int); /* cudaGetErrorName; optional */
	int (*host_register)(void *, size_t, unsigned int);
	int (*host_unregister)(void *);
	int (*host_get_device_pointer)(void **, void *, unsigned int);
	/* Queue memory in GPU memory (GIO_CTX_QP_HBM). */
	int (*dev_malloc)(void **, size_t);
	int (*dev_free)(void *);
	int (*memset_async)(void *, int, size_t, void *);
	/* Stream-ordered allocation (CUDA 11.2 on; optional): unlike cudaFree, cudaFreeAsync does
	 * not wait for kernels running on the device. */
	int (*malloc_async)(void **, size_t, void *);
	int (*free_async)(void *, void *);
	/* The copy-engine mover (src/kv/mover.h): CUDA 13's signature of cudaMemcpyBatchAsync, NULL
	 * on an older runtime (CUDA 12.8's takes one more argument). */
	int (*memcpy_batch_async)(void *const *, const void *const *, const size_t *, size_t,
				  struct gio__cuda_memcpy_attrs *, size_t *, size_t, void *);
	int (*runtime_get_version)(int *);
};

/* Numbers of the CUDA runtime API used without its headers (errors: cuda_errno.h). */
#define GIO__CUDA_MEMCPY_DEFAULT 4       /* cudaMemcpyDefault: direction from the unified addresses */
#define GIO__CUDA_STREAM_NON_BLOCKING 1u /* cudaStreamNonBlocking */
#define GIO__CUDA_MEMORY_TYPE_UNREGISTERED 0 /* cudaMemoryTypeUnregistered: pageable host memory */
#define GIO__CUDA_MEMORY_TYPE_HOST 1     /* cudaMemoryTypeHost: pinned or registered host memory */
#define GIO__CUDA_MEMORY_TYPE_DEVICE 2   /* cudaMemoryTypeDevice */

/* The runtime, loaded at the first call; NULL (gio__cudart_why() says why) where it cannot be
 * loaded, lacks cudaHostAlloc/cudaFreeHost, or reports no GPU. */
const struct gio__cudart *gio__cudart(void);

/* Why gio__cudart() returned NULL. */
const char *gio__cudart_why(void);

/* The runtime's description of error @e (cudaGetErrorString). */
const char *gio__cuda_err(int e);

/* The runtime's name of error @e (cudaGetErrorName), or "CUDA error <e>" where it lacks one. */
const char *gio__cuda_name(int e);

/* gio__cuda_fail_named() with the loaded runtime's name and description of @e: the message
 * "giouring: <what>: <name>: <string>", and gio_cuda_errno(e) returned. */
int gio__cuda_fail(int e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The CUDA memory type of ptr (GIO__CUDA_MEMORY_TYPE_*: cudaPointerGetAttributes' type), or -1
 * where rt cannot say (no runtime, or the call failed). */
int gio__cuda_memory_type(const struct gio__cudart *rt, const void *ptr);

/* Pinned host memory of the dlopen'ed runtime: cudaHostAlloc (portable, mapped), released with
 * cudaFreeHost (gio_cuda_trim()). */
extern const struct gio__pinned_ops gio__cudart_pinned;

/* Host memory from aligned_alloc registered with cudaHostRegister (portable, mapped), handed to
 * the cache with gio__pinned_track(); released with cudaHostUnregister, then free. Requests only
 * reuse cached blocks (no alloc). */
extern const struct gio__pinned_ops gio__cudart_registered;

/* Pinned, GPU-mapped, zeroed host memory of at least len bytes from the cache (gio__cudart_pinned):
 * 0 and *p, or -errno with a message naming @what (no runtime: -ENODEV; a CUDA error as
 * gio_cuda_errno() maps it). Give it back with gio__pinned_put(). */
int gio__pinned_alloc(size_t len, const char *what, void **p);

GIO_EXTERN_C_END

#endif
