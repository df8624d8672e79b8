/* CUDA runtime errors as -errno (cuda_errno.h; the table is documented at gio_cuda_errno() in
 * giouring/host/ctx.h). */
#include <errno.h>
#include <stdio.h>

#include <giouring/host/ctx.h>

#include "../internal.h"
#include "cuda_errno.h"

int gio_cuda_errno(int cuda_error)
{
	switch (cuda_error) {
	case GIO__CUDA_SUCCESS:
		return 0;
	case GIO__CUDA_ERR_MEMORY_ALLOCATION:
		return -ENOMEM;
	case GIO__CUDA_ERR_INVALID_VALUE:
	case GIO__CUDA_ERR_INVALID_CONFIGURATION:
	case GIO__CUDA_ERR_INVALID_DEVICE_POINTER:
	case GIO__CUDA_ERR_INVALID_HOST_POINTER:
	case GIO__CUDA_ERR_INVALID_MEMCPY_DIRECTION:
	case GIO__CUDA_ERR_INVALID_RESOURCE_HANDLE:
	case GIO__CUDA_ERR_INVALID_SYMBOL:
	case GIO__CUDA_ERR_INVALID_DEVICE_FUNCTION: /* not a kernel of this program */
		return -EINVAL;
	case GIO__CUDA_ERR_NO_DEVICE:
	case GIO__CUDA_ERR_INVALID_DEVICE:
	case GIO__CUDA_ERR_INSUFFICIENT_DRIVER:
	case GIO__CUDA_ERR_INITIALIZATION_ERROR:
	case GIO__CUDA_ERR_DEVICES_UNAVAILABLE:
	case GIO__CUDA_ERR_NO_KERNEL_IMAGE_FOR_DEVICE:
	case GIO__CUDA_ERR_INVALID_KERNEL_IMAGE:
	case GIO__CUDA_ERR_STARTUP_FAILURE:
	case GIO__CUDA_ERR_SYSTEM_DRIVER_MISMATCH:
	case GIO__CUDA_ERR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
		return -ENODEV;
	case GIO__CUDA_ERR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case GIO__CUDA_ERR_NOT_PERMITTED:
		return -EPERM;
	case GIO__CUDA_ERR_HOST_MEMORY_ALREADY_REGISTERED:
		return -EEXIST;
	case GIO__CUDA_ERR_HOST_MEMORY_NOT_REGISTERED:
		return -ENOENT;
	case GIO__CUDA_ERR_NOT_READY:
		return -EAGAIN;
	case GIO__CUDA_ERR_LAUNCH_TIMEOUT:
	case GIO__CUDA_ERR_TIMEOUT:
		return -ETIME;
	case GIO__CUDA_ERR_LAUNCH_OUT_OF_RESOURCES:
	case GIO__CUDA_ERR_COOPERATIVE_LAUNCH_TOO_LARGE:
		return -E2BIG;
	/* Sticky device faults: the context is lost, every later call fails the same way. */
	case GIO__CUDA_ERR_ILLEGAL_ADDRESS:
	case GIO__CUDA_ERR_LAUNCH_FAILURE:
	case GIO__CUDA_ERR_ASSERT:
	case GIO__CUDA_ERR_HARDWARE_STACK_ERROR:
	case GIO__CUDA_ERR_ILLEGAL_INSTRUCTION:
	case GIO__CUDA_ERR_MISALIGNED_ADDRESS:
	case GIO__CUDA_ERR_INVALID_ADDRESS_SPACE:
	case GIO__CUDA_ERR_INVALID_PC:
	case GIO__CUDA_ERR_ECC_UNCORRECTABLE:
	case GIO__CUDA_ERR_CONTEXT_IS_DESTROYED:
	case GIO__CUDA_ERR_CUDART_UNLOADING:
	default:
		return -EIO;
	}
}

int gio__cuda_vfail_named(int cuda_error, const char *name, const char *string, const char *fmt, va_list ap)
{
	char what[384], unnamed[32];
	vsnprintf(what, sizeof(what), fmt, ap);
	if (!name) {
		snprintf(unnamed, sizeof(unnamed), "CUDA error %d", cuda_error);
		name = unnamed;
	}
	return gio__fail(gio_cuda_errno(cuda_error), "giouring: %s: %s: %s", what, name, string ? string : "(no description)");
}

int gio__cuda_fail_named(int cuda_error, const char *name, const char *string, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = gio__cuda_vfail_named(cuda_error, name, string, fmt, ap);
	va_end(ap);
	return rc;
}
