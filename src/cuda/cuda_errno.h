/* CUDA runtime errors as -errno (gio_cuda_errno(), giouring/host/ctx.h), one table for the host
 * library's C, which reaches the runtime through dlopen (cudart.c) and has no CUDA header, and
 * for giouring::gpu's CUDA C++ (../gpu/cuda_fail.cuh checks every number below against
 * cudaError_t at compile time). The numbers are the runtime's own (driver_types.h). */
#ifndef GIOURING_SRC_CUDA_CUDA_ERRNO_H
#define GIOURING_SRC_CUDA_CUDA_ERRNO_H

#include <stdarg.h>

#include <giouring/config.h>

GIO_EXTERN_C_BEGIN

#define GIO__CUDA_SUCCESS 0
#define GIO__CUDA_ERR_INVALID_VALUE 1
#define GIO__CUDA_ERR_MEMORY_ALLOCATION 2
#define GIO__CUDA_ERR_INITIALIZATION_ERROR 3
#define GIO__CUDA_ERR_CUDART_UNLOADING 4
#define GIO__CUDA_ERR_INVALID_CONFIGURATION 9
#define GIO__CUDA_ERR_INVALID_SYMBOL 13
#define GIO__CUDA_ERR_INVALID_HOST_POINTER 16
#define GIO__CUDA_ERR_INVALID_DEVICE_POINTER 17
#define GIO__CUDA_ERR_INVALID_MEMCPY_DIRECTION 21
#define GIO__CUDA_ERR_INSUFFICIENT_DRIVER 35
#define GIO__CUDA_ERR_DEVICES_UNAVAILABLE 46
#define GIO__CUDA_ERR_INVALID_DEVICE_FUNCTION 98
#define GIO__CUDA_ERR_NO_DEVICE 100
#define GIO__CUDA_ERR_INVALID_DEVICE 101
#define GIO__CUDA_ERR_STARTUP_FAILURE 127
#define GIO__CUDA_ERR_INVALID_KERNEL_IMAGE 200
#define GIO__CUDA_ERR_NO_KERNEL_IMAGE_FOR_DEVICE 209
#define GIO__CUDA_ERR_ECC_UNCORRECTABLE 214
#define GIO__CUDA_ERR_INVALID_RESOURCE_HANDLE 400
#define GIO__CUDA_ERR_NOT_READY 600
#define GIO__CUDA_ERR_ILLEGAL_ADDRESS 700
#define GIO__CUDA_ERR_LAUNCH_OUT_OF_RESOURCES 701
#define GIO__CUDA_ERR_LAUNCH_TIMEOUT 702
#define GIO__CUDA_ERR_CONTEXT_IS_DESTROYED 709
#define GIO__CUDA_ERR_ASSERT 710
#define GIO__CUDA_ERR_HOST_MEMORY_ALREADY_REGISTERED 712
#define GIO__CUDA_ERR_HOST_MEMORY_NOT_REGISTERED 713
#define GIO__CUDA_ERR_HARDWARE_STACK_ERROR 714
#define GIO__CUDA_ERR_ILLEGAL_INSTRUCTION 715
#define GIO__CUDA_ERR_MISALIGNED_ADDRESS 716
#define GIO__CUDA_ERR_INVALID_ADDRESS_SPACE 717
#define GIO__CUDA_ERR_INVALID_PC 718
#define GIO__CUDA_ERR_LAUNCH_FAILURE 719
#define GIO__CUDA_ERR_COOPERATIVE_LAUNCH_TOO_LARGE 720
#define GIO__CUDA_ERR_NOT_PERMITTED 800
#define GIO__CUDA_ERR_NOT_SUPPORTED 801
#define GIO__CUDA_ERR_SYSTEM_DRIVER_MISMATCH 803
#define GIO__CUDA_ERR_COMPAT_NOT_SUPPORTED_ON_DEVICE 804
#define GIO__CUDA_ERR_TIMEOUT 909

/* Sets the calling thread's message (gio_last_error()) to "giouring: <what>: <name>: <string>",
 * <what> formatted from fmt, and returns gio_cuda_errno(cuda_error). name and string are the
 * runtime's (cudaGetErrorName, cudaGetErrorString); NULL stands for one the runtime lacks. */
int gio__cuda_fail_named(int cuda_error, const char *name, const char *string, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int gio__cuda_vfail_named(int cuda_error, const char *name, const char *string, const char *fmt, va_list ap);

GIO_EXTERN_C_END

#endif
