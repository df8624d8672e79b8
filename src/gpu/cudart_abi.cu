// The host library calls the CUDA runtime without its headers (src/cuda/cudart.h, dlopen): the
// structures it passes by pointer must have the runtime's layout. Checked here, where nvcc has the
// headers; nothing is defined.
#include <cstddef>

#include <cuda_runtime.h>

#include "../cuda/cudart.h"

static_assert(sizeof(gio__cuda_memcpy_attrs) == sizeof(cudaMemcpyAttributes), "cudaMemcpyAttributes layout");
static_assert(offsetof(gio__cuda_memcpy_attrs, src_loc_type) == offsetof(cudaMemcpyAttributes, srcLocHint),
	      "cudaMemcpyAttributes::srcLocHint");
static_assert(offsetof(gio__cuda_memcpy_attrs, dst_loc_type) == offsetof(cudaMemcpyAttributes, dstLocHint),
	      "cudaMemcpyAttributes::dstLocHint");
static_assert(offsetof(gio__cuda_memcpy_attrs, flags) == offsetof(cudaMemcpyAttributes, flags),
	      "cudaMemcpyAttributes::flags");
static_assert(GIO__CUDA_SRC_ORDER_STREAM == cudaMemcpySrcAccessOrderStream &&
		      GIO__CUDA_SRC_ORDER_API_CALL == cudaMemcpySrcAccessOrderDuringApiCall,
	      "cudaMemcpySrcAccessOrder values");
static_assert(GIO__CUDA_MEMCPY_DEFAULT == cudaMemcpyDefault && GIO__CUDA_STREAM_NON_BLOCKING == cudaStreamNonBlocking,
	      "cudaMemcpyDefault, cudaStreamNonBlocking");
