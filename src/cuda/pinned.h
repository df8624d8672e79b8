/* The process's cache of pinned host memory, shared by the host library and giouring::gpu.
 *
 * Releasing pinned memory (cudaFreeHost, cudaHostUnregister) waits while any kernel runs on the
 * device, and a persistent kernel (an engine's I/O kernel, a GPU target's executor) may run for
 * the life of the process; allocating it (cudaHostAlloc, cudaHostRegister) does not wait
 * (bench/results/2026-12-02-cuda-blocking-h200.md). So the library never releases pinned memory
 * on a path that may run while a kernel runs: a block it is done with goes back to this cache,
 * with no CUDA call, and a later request takes a cached block first. gio_cuda_trim() releases
 * what is cached, at a time the caller knows no kernel runs.
 *
 * Blocks are reused by requests of the same allocator only (struct gio__pinned_ops): the host
 * library reaches the runtime through dlopen and giouring::gpu links it statically, so each
 * block goes back to the runtime that made it. A request takes the smallest cached block that
 * holds it and wastes at most half of it, so that a cached backing store does not end up holding
 * a control block. Any thread. */
#ifndef GIOURING_SRC_CUDA_PINNED_H
#define GIOURING_SRC_CUDA_PINNED_H

#include <stddef.h>

#include <giouring/config.h>

GIO_EXTERN_C_BEGIN

/* Where a kind of pinned block comes from and how it goes. */
struct gio__pinned_ops {
	const char *name; /* for messages: "cudaHostAlloc (libcudart.so)" */
	/* A new block of len bytes in *p: 0, or the CUDA error. NULL: blocks of this kind are made
	 * elsewhere and handed over with gio__pinned_track(); requests only reuse cached ones. */
	int (*alloc)(void **p, size_t len);
	/* Releases a block: 0, or the CUDA error. It may wait while a kernel runs. */
	int (*release)(void *p, size_t len);
};

/* A zeroed block of at least len bytes: a cached one of @ops, else a new one from ops->alloc.
 * NULL on failure, *cuda_error then the allocator's error, or 0 where nothing was cached and
 * ops->alloc is NULL, or -1 where the cache had no memory for its own record. */
void *gio__pinned_get(const struct gio__pinned_ops *ops, size_t len, int *cuda_error);

/* Hands over a block of len bytes made outside the cache (a registration of the caller's
 * memory), in use: gio__pinned_put() then caches it like any other. 0, or -ENOMEM (no memory for
 * the record: the caller still owns the block). */
int gio__pinned_track(const struct gio__pinned_ops *ops, void *p, size_t len);

/* Drops the record of a block from gio__pinned_track() that the caller keeps (its registration
 * failed): no CUDA call. 0, or -ENOENT. */
int gio__pinned_forget(void *p);

/* Gives a block from gio__pinned_get() or gio__pinned_track() back to the cache: no CUDA call.
 * 0, or -ENOENT for a pointer the cache does not hold in use (NULL included). */
int gio__pinned_put(void *p);

GIO_EXTERN_C_END

#endif
