// CUDA runtime errors as -errno (gio_cuda_errno(), giouring/host/ctx.h) and the message every
// CUDA failure of the library carries: no GPU needed. The numbers are written out here as
// driver_types.h has them, so that a wrong constant in src/cuda/cuda_errno.h fails this test
// (src/gpu/cuda_fail.cuh checks the same constants against cudaError_t at compile time).
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <string>

#include <giouring/host/ctx.h>

#include "../src/cuda/cuda_errno.h"
#include "../src/cuda/cudart.h"

TEST_CASE("cuda errno: every listed runtime error maps as documented")
{
	struct Case {
		int cuda;
		int want;
		const char *name;
	} cases[] = {
		{0, 0, "cudaSuccess"},
		{2, -ENOMEM, "cudaErrorMemoryAllocation"},
		{1, -EINVAL, "cudaErrorInvalidValue"},
		{9, -EINVAL, "cudaErrorInvalidConfiguration"},
		{17, -EINVAL, "cudaErrorInvalidDevicePointer"},
		{16, -EINVAL, "cudaErrorInvalidHostPointer"},
		{21, -EINVAL, "cudaErrorInvalidMemcpyDirection"},
		{400, -EINVAL, "cudaErrorInvalidResourceHandle"},
		{13, -EINVAL, "cudaErrorInvalidSymbol"},
		{98, -EINVAL, "cudaErrorInvalidDeviceFunction"},
		{100, -ENODEV, "cudaErrorNoDevice"},
		{101, -ENODEV, "cudaErrorInvalidDevice"},
		{35, -ENODEV, "cudaErrorInsufficientDriver"},
		{3, -ENODEV, "cudaErrorInitializationError"},
		{46, -ENODEV, "cudaErrorDevicesUnavailable"},
		{209, -ENODEV, "cudaErrorNoKernelImageForDevice"},
		{200, -ENODEV, "cudaErrorInvalidKernelImage"},
		{127, -ENODEV, "cudaErrorStartupFailure"},
		{803, -ENODEV, "cudaErrorSystemDriverMismatch"},
		{804, -ENODEV, "cudaErrorCompatNotSupportedOnDevice"},
		{801, -EOPNOTSUPP, "cudaErrorNotSupported"},
		{800, -EPERM, "cudaErrorNotPermitted"},
		{712, -EEXIST, "cudaErrorHostMemoryAlreadyRegistered"},
		{713, -ENOENT, "cudaErrorHostMemoryNotRegistered"},
		{600, -EAGAIN, "cudaErrorNotReady"},
		{702, -ETIME, "cudaErrorLaunchTimeout"},
		{909, -ETIME, "cudaErrorTimeout"},
		{701, -E2BIG, "cudaErrorLaunchOutOfResources"},
		{720, -E2BIG, "cudaErrorCooperativeLaunchTooLarge"},
		// Sticky device faults and the rest: -EIO.
		{700, -EIO, "cudaErrorIllegalAddress"},
		{719, -EIO, "cudaErrorLaunchFailure"},
		{710, -EIO, "cudaErrorAssert"},
		{714, -EIO, "cudaErrorHardwareStackError"},
		{715, -EIO, "cudaErrorIllegalInstruction"},
		{716, -EIO, "cudaErrorMisalignedAddress"},
		{717, -EIO, "cudaErrorInvalidAddressSpace"},
		{718, -EIO, "cudaErrorInvalidPc"},
		{214, -EIO, "cudaErrorECCUncorrectable"},
		{709, -EIO, "cudaErrorContextIsDestroyed"},
		{4, -EIO, "cudaErrorCudartUnloading"},
		{999, -EIO, "cudaErrorUnknown"},
		{12, -EIO, "cudaErrorInvalidPitchValue (not listed)"},
		{-7, -EIO, "a negative number"},
	};
	for (const Case &c : cases) {
		INFO(c.name << " (" << c.cuda << ")");
		CHECK(gio_cuda_errno(c.cuda) == c.want);
	}
}

TEST_CASE("cuda errno: the message names what failed, the error's name and its description")
{
	const int rc = gio__cuda_fail_named(2, "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc of %d bytes", 4096);
	CHECK(rc == -ENOMEM);
	CHECK(std::string(gio_last_error()) == "giouring: cudaMalloc of 4096 bytes: cudaErrorMemoryAllocation: out of memory");
	// A runtime without cudaGetErrorName (NULL): the number stands in for the name.
	CHECK(gio__cuda_fail_named(713, nullptr, nullptr, "unregistering") == -ENOENT);
	CHECK(std::string(gio_last_error()) == "giouring: unregistering: CUDA error 713: (no description)");
	// A message quoting the previous one (gio_last_error() as an argument) is not garbled.
	gio__cuda_fail_named(1, "cudaErrorInvalidValue", "invalid argument", "first");
	const std::string first = gio_last_error();
	CHECK(gio__cuda_fail_named(1, "cudaErrorInvalidValue", "invalid argument", "after '%s'", gio_last_error()) == -EINVAL);
	CHECK(std::string(gio_last_error()) == "giouring: after '" + first + "': cudaErrorInvalidValue: invalid argument");
}

TEST_CASE("cuda errno: through the loaded runtime, or its stand-in where there is none")
{
	// With the runtime (a GPU machine) its own name; without one the number. Either way the
	// errno and the prefix are the same.
	CHECK(gio__cuda_fail(2, "pinned queue memory: cudaHostAlloc of %zu bytes", (size_t)8192) == -ENOMEM);
	const std::string m = gio_last_error();
	CHECK(m.rfind("giouring: pinned queue memory: cudaHostAlloc of 8192 bytes: ", 0) == 0);
	if (gio__cudart() && gio__cudart()->error_name)
		CHECK(m.find("cudaErrorMemoryAllocation") != std::string::npos);
	else
		CHECK(m.find("CUDA error 2") != std::string::npos);
}
