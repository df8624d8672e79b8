/**
 * @file giouring/host/launch.h
 * @brief Launch helpers for persistent and SM-bound kernels (in `giouring::gpu`, the CUDA part
 * of the host library).
 *
 * CUDA loads kernels lazily by default. A persistent kernel that spins (a GPU executor, a polling
 * I/O kernel) and a kernel launched after it that is not loaded yet deadlock: the load waits for
 * the device, the spinning kernel for the new one (docs/design.md, "Persistent kernels and lazy
 * loading"). gio_gpu_preload() loads a kernel now; call it for every kernel before the first
 * persistent launch, or run with CUDA_MODULE_LOADING=EAGER.
 *
 * Plain C declarations: a kernel is passed as its host function pointer (`(const void *)kernel`).
 */
#ifndef GIOURING_HOST_LAUNCH_H
#define GIOURING_HOST_LAUNCH_H

#include <stddef.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Loads a kernel now, so that launching it later cannot wait on module loading while a
 * persistent kernel spins.
 * @param kernel  the `__global__` function.
 * @return 0, or the CUDA error as gio_cuda_errno() (giouring/host/ctx.h) maps it, with a message
 *         (gio_last_error()) naming it: `-EINVAL` for a pointer that is no kernel of this program,
 *         `-ENODEV` where there is no device or no kernel image for it.
 *
 * Any host thread, before the first persistent launch.
 */
int gio_gpu_preload(const void *kernel);

/**
 * @brief Makes a kernel take a whole SM per block, so that a grid of N blocks uses N SMs.
 * @param kernel  the `__global__` function.
 * @param smem    receives the dynamic shared memory to launch it with: a little more than half
 *                of an SM's (the kernel need not use it), so no two of its blocks share an SM.
 * @return 0, `-EINVAL` for a NULL @p smem, or the CUDA error as gio_cuda_errno() maps it, with a
 *         message (gio_last_error()): `-EINVAL` for a pointer that is no kernel, `-ENODEV`
 *         without a device.
 *
 * Any host thread, with the device to use current. The GPU target's executor uses it, so that its
 * SM count is a count of SMs; so do the examples' I/O kernels.
 */
int gio_gpu_one_block_per_sm(const void *kernel, size_t *smem);

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_LAUNCH_H */
