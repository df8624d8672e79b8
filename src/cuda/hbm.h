/* GPU memory the library allocates while persistent kernels may run: made, zeroed and released
 * on a non-blocking stream of its own (cudaMallocAsync, cudaMemsetAsync, cudaFreeAsync), since
 * cudaFree waits for every kernel on the device and an engine's I/O kernel or a GPU target's
 * executor may run for the life of the process. A runtime older than CUDA 11.2 gets cudaMalloc
 * and cudaFree (said once on stderr). Not installed, not part of the API. */
#ifndef GIOURING_SRC_CUDA_HBM_H
#define GIOURING_SRC_CUDA_HBM_H

#include <stddef.h>
#include <stdint.h>

#include <giouring/config.h>

#include "cudart.h"

GIO_EXTERN_C_BEGIN

struct gio__hbm {
	void *base;   /* the allocation, or NULL */
	void *stream; /* its stream, on the GPU current at the allocation */
	int async;    /* 1: stream-ordered (released with cudaFreeAsync) */
};

/* Polls stream until its work is done, within timeout_ns: 0, GIO__CUDA_ERR_NOT_READY at the
 * deadline, or the CUDA error of the work. */
int gio__cuda_stream_wait(const struct gio__cudart *rt, void *stream, uint64_t timeout_ns);

/* len bytes of GPU memory, zeroed before this returns (bounded: 10 s). 0, or -errno with a
 * message naming @what (-ENODEV without a runtime; -ETIME). On failure the caller still calls
 * gio__hbm_free(). */
int gio__hbm_alloc(struct gio__hbm *m, size_t len, const char *what);

/* Releases the memory without waiting for kernels (bounded: 1 s for the release to be queued and
 * done), then the stream. Safe on a zeroed struct gio__hbm. */
void gio__hbm_free(struct gio__hbm *m);

GIO_EXTERN_C_END

#endif
