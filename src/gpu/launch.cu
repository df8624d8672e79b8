// Launch helpers (giouring/host/launch.h).
#include <cuda_runtime.h>
#include <errno.h>

#include <giouring/host/launch.h>

#include "../internal.h"
#include "cuda_fail.cuh"

int gio_gpu_preload(const void *kernel)
{
	cudaFuncAttributes fa;
	cudaError_t e;
	gio__clear_error();
	e = cudaFuncGetAttributes(&fa, kernel);
	if (e != cudaSuccess)
		return gio__cuda_fail_rt(e, "gio_gpu_preload: cudaFuncGetAttributes");
	return 0;
}

int gio_gpu_one_block_per_sm(const void *kernel, size_t *smem)
{
	int dev = 0, per_sm = 0, per_block = 0, want = 0;
	cudaError_t e;
	gio__clear_error();
	if (!smem)
		return gio__fail(-EINVAL, "giouring: gio_gpu_one_block_per_sm: smem is NULL");
	e = cudaGetDevice(&dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
	want = per_sm / 2 + 1024 < per_block ? per_sm / 2 + 1024 : per_block;
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, want);
	if (e != cudaSuccess)
		return gio__cuda_fail_rt(e, "one block per SM (cudaGetDevice, cudaDeviceGetAttribute, cudaFuncSetAttribute)");
	*smem = (size_t)want;
	return 0;
}
