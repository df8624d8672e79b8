/* The copy-engine mover's copier (src/kv/mover.h) over the CUDA runtime: cudaMemcpyBatchAsync
 * on the plan's own non-blocking stream, so that no engine stream (nor a kernel spinning on one)
 * orders the copies, and the plan's GPU memory, freed on that stream, outlives every mark queued.
 * Not installed, not part of the API. */
#ifndef GIOURING_SRC_CUDA_CECOPY_H
#define GIOURING_SRC_CUDA_CECOPY_H

#include <giouring/config.h>

#include "../kv/mover.h"

GIO_EXTERN_C_BEGIN

struct gio__ce_copier {
	void *stream; /* the caller's, on `device` */
	int device;   /* the GPU current when it was made: the mover's thread makes it current */
};

/* A copier on @stream (a non-blocking stream of the current GPU, kept by the caller). 0, or
 * -errno with a message naming @what (-ENOTSUP: a runtime without CUDA 13's cudaMemcpyBatchAsync). */
int gio__ce_copier_init(struct gio__ce_copier *c, void *stream, const char *what);

/* The ops, with a struct gio__ce_copier as their ctx. */
extern const struct gio__kv_mover_ops gio__ce_copier_ops;

GIO_EXTERN_C_END

#endif
