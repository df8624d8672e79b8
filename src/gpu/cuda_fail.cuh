// CUDA errors of giouring::gpu as -errno with a message (gio_cuda_errno(), giouring/host/ctx.h):
// the table is the host library's (../cuda/cuda_errno.c), checked here against the runtime's
// own enum, so that a renumbering in a CUDA release breaks the build instead of the mapping.
#ifndef GIOURING_SRC_GPU_CUDA_FAIL_CUH
#define GIOURING_SRC_GPU_CUDA_FAIL_CUH

#include <cuda_runtime.h>
#include <stdarg.h>

#include "../cuda/cuda_errno.h"

// Each of our numbers is the runtime's.
#define GIO__SAME_AS_RUNTIME(ours, runtime) static_assert((ours) == (runtime), #ours " is not " #runtime)
GIO__SAME_AS_RUNTIME(GIO__CUDA_SUCCESS, cudaSuccess);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_VALUE, cudaErrorInvalidValue);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_MEMORY_ALLOCATION, cudaErrorMemoryAllocation);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INITIALIZATION_ERROR, cudaErrorInitializationError);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_CUDART_UNLOADING, cudaErrorCudartUnloading);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_CONFIGURATION, cudaErrorInvalidConfiguration);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_SYMBOL, cudaErrorInvalidSymbol);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_HOST_POINTER, cudaErrorInvalidHostPointer);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_DEVICE_POINTER, cudaErrorInvalidDevicePointer);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_MEMCPY_DIRECTION, cudaErrorInvalidMemcpyDirection);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INSUFFICIENT_DRIVER, cudaErrorInsufficientDriver);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_DEVICES_UNAVAILABLE, cudaErrorDevicesUnavailable);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_DEVICE_FUNCTION, cudaErrorInvalidDeviceFunction);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_NO_DEVICE, cudaErrorNoDevice);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_DEVICE, cudaErrorInvalidDevice);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_STARTUP_FAILURE, cudaErrorStartupFailure);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_KERNEL_IMAGE, cudaErrorInvalidKernelImage);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_NO_KERNEL_IMAGE_FOR_DEVICE, cudaErrorNoKernelImageForDevice);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_ECC_UNCORRECTABLE, cudaErrorECCUncorrectable);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_RESOURCE_HANDLE, cudaErrorInvalidResourceHandle);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_NOT_READY, cudaErrorNotReady);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_ILLEGAL_ADDRESS, cudaErrorIllegalAddress);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_LAUNCH_OUT_OF_RESOURCES, cudaErrorLaunchOutOfResources);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_LAUNCH_TIMEOUT, cudaErrorLaunchTimeout);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_CONTEXT_IS_DESTROYED, cudaErrorContextIsDestroyed);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_ASSERT, cudaErrorAssert);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_HOST_MEMORY_ALREADY_REGISTERED, cudaErrorHostMemoryAlreadyRegistered);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_HOST_MEMORY_NOT_REGISTERED, cudaErrorHostMemoryNotRegistered);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_HARDWARE_STACK_ERROR, cudaErrorHardwareStackError);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_ILLEGAL_INSTRUCTION, cudaErrorIllegalInstruction);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_MISALIGNED_ADDRESS, cudaErrorMisalignedAddress);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_ADDRESS_SPACE, cudaErrorInvalidAddressSpace);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_INVALID_PC, cudaErrorInvalidPc);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_LAUNCH_FAILURE, cudaErrorLaunchFailure);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_COOPERATIVE_LAUNCH_TOO_LARGE, cudaErrorCooperativeLaunchTooLarge);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_NOT_PERMITTED, cudaErrorNotPermitted);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_NOT_SUPPORTED, cudaErrorNotSupported);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_SYSTEM_DRIVER_MISMATCH, cudaErrorSystemDriverMismatch);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_COMPAT_NOT_SUPPORTED_ON_DEVICE, cudaErrorCompatNotSupportedOnDevice);
GIO__SAME_AS_RUNTIME(GIO__CUDA_ERR_TIMEOUT, cudaErrorTimeout);
#undef GIO__SAME_AS_RUNTIME

// Sets gio_last_error() to "giouring: <what>: <cudaErrorName>: <string>", <what> formatted from
// fmt, and returns gio_cuda_errno(e).
static inline int gio__cuda_failf(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int gio__cuda_failf(cudaError_t e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const int rc = gio__cuda_vfail_named((int)e, cudaGetErrorName(e), cudaGetErrorString(e), fmt, ap);
	va_end(ap);
	return rc;
}

// The same for a fixed <what>.
static inline int gio__cuda_fail_rt(cudaError_t e, const char *what)
{
	return gio__cuda_failf(e, "%s", what);
}

// A CUDA call that must succeed, in a function returning 0 or -errno.
#define GIO__CUDA_TRY(call, what)                                                                          \
	do {                                                                                               \
		const cudaError_t e_ = (call);                                                             \
		if (e_ != cudaSuccess)                                                                     \
			return gio__cuda_fail_rt(e_, what);                                                \
	} while (0)

#endif
