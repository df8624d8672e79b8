#include "device.h"

#include <cerrno>
#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>

namespace gio_nixl {

namespace {

int cuda_fail(cudaError_t e, const char *what, std::string &msg)
{
	msg = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
	return e == cudaErrorMemoryAllocation ? -ENOMEM : -EIO;
}

} // namespace

int device_stream::open(int device, std::string &msg)
{
	cudaError_t e = cudaSetDevice(device);
	if (e != cudaSuccess)
		return cuda_fail(e, "selecting the CUDA device", msg);
	device_ = device;
	cudaStream_t s;
	if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess)
		return cuda_fail(e, "creating the backend's stream", msg);
	stream_ = s;
	return 0;
}

device_stream::~device_stream()
{
	if (stream_)
		cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

int device_stream::copy(void *dst, const void *src, size_t n, std::string &msg)
{
	cudaSetDevice(device_);
	const cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, static_cast<cudaStream_t>(stream_));
	return e == cudaSuccess ? 0 : cuda_fail(e, "queueing a copy", msg);
}

int device_stream::wait(uint64_t timeout_ns, std::string &msg)
{
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
	for (;;) {
		const cudaError_t e = cudaStreamQuery(static_cast<cudaStream_t>(stream_));
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			return cuda_fail(e, "a copy between the pool and the caller's memory", msg);
		if (std::chrono::steady_clock::now() > deadline) {
			msg = "a copy between the pool and the caller's memory did not finish within the deadline";
			return -ETIME;
		}
		std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
}

int device_stream::alloc(size_t n, void **out, std::string &msg)
{
	cudaSetDevice(device_);
	const cudaError_t e = cudaMalloc(out, n);
	return e == cudaSuccess ? 0 : cuda_fail(e, "allocating the pool in GPU memory", msg);
}

void device_stream::release(void *p)
{
	if (p)
		cudaFree(p);
}

} // namespace gio_nixl
