// Which CUDA runtime calls wait for a kernel that never ends (a persistent kernel: an engine's,
// or another GPU target's executor)? Prints a table: each call is made from a thread of its own
// while a spinning kernel runs, on a non-blocking stream and then on an ordinary (blocking)
// stream; a call that has not returned after --wait-ms is "waits", and the spinner is then
// released so that the call can finish. The design of the GPU target's lifecycle rests on this
// table (docs/design.md, "Bounded CUDA calls"). Measured, on the machine it runs on.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../tests/gpu/gpu_test.cuh"
#include "../tests/gpu/spinner.cuh"

// Never launched before the probe loads it: with lazy loading its first use loads a module.
__global__ void never_launched(int *p) { *p = 1; }

__global__ void tiny(int *p) { if (p) *p = 2; }

struct probe {
	const char *name;
	std::function<cudaError_t()> call;
};

int main(int argc, char **argv)
{
	int wait_ms = 1500;
	for (int i = 1; i < argc; i++)
		if (!std::strcmp(argv[i], "--wait-ms") && i + 1 < argc)
			wait_ms = std::atoi(argv[++i]);
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		std::printf("SKIP: no CUDA device\n");
		return 77;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	const char *lazy = std::getenv("CUDA_MODULE_LOADING");
	std::printf("# %s, CUDA_MODULE_LOADING=%s, wait %d ms\n", prop.name, lazy ? lazy : "(unset: lazy)", wait_ms);
	unsigned *flags = nullptr; // [0] stop, [1] started
	CK(cudaHostAlloc((void **)&flags, 64, cudaHostAllocMapped));
	cudaStream_t nb, blk, other;
	CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
	CK(cudaStreamCreate(&blk));
	CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
	tiny<<<1, 1, 0, other>>>(nullptr);
	CK(cudaStreamSynchronize(other));

	// Memory made ahead so that each free has something to free; re-made after each probe.
	void *dev = nullptr, *managed = nullptr, *pinned = nullptr, *async_dev = nullptr, *reg = nullptr;
	static char src[4096];
	cudaEvent_t ev;
	bool registered = false;
	void *fresh_reg = nullptr; // leaked after its unregistration: the probe is short-lived
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	auto remake = [&]() {
		if (!dev) CK(cudaMalloc(&dev, 1 << 20));
		if (!managed) CK(cudaMallocManaged(&managed, 1 << 20));
		if (!pinned) CK(cudaHostAlloc(&pinned, 1 << 20, cudaHostAllocMapped | cudaHostAllocPortable));
		if (!async_dev) {
			CK(cudaMallocAsync(&async_dev, 1 << 20, other));
			CK(cudaStreamSynchronize(other));
		}
		if (!reg) reg = std::aligned_alloc(4096, 1 << 20);
		if (registered) { // the register probe's buffer, unregistered before the spinner starts
			CK(cudaHostUnregister(reg));
			registered = false;
		}
		if (!fresh_reg) {
			fresh_reg = std::aligned_alloc(4096, 1 << 20);
			CK(cudaHostRegister(fresh_reg, 1 << 20, cudaHostRegisterMapped | cudaHostRegisterPortable));
		}
	};
	auto poll = [&](cudaStream_t s) -> cudaError_t {
		cudaError_t e;
		while ((e = cudaStreamQuery(s)) == cudaErrorNotReady)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
		return e;
	};
	std::vector<probe> probes = {
		{"cudaMalloc", [&] { void *p; cudaError_t e = cudaMalloc(&p, 1 << 20); return e ? e : cudaSuccess; }},
		{"cudaFree(cudaMalloc'd)", [&] { cudaError_t e = cudaFree(dev); dev = nullptr; return e; }},
		{"cudaMallocManaged", [&] { void *p; return cudaMallocManaged(&p, 1 << 20); }},
		{"cudaFree(managed)", [&] { cudaError_t e = cudaFree(managed); managed = nullptr; return e; }},
		{"cudaHostAlloc(mapped)", [&] { void *p; return cudaHostAlloc(&p, 1 << 20, cudaHostAllocMapped); }},
		{"cudaFreeHost", [&] { cudaError_t e = cudaFreeHost(pinned); pinned = nullptr; return e; }},
		{"cudaHostRegister(mapped)", [&] {
			 cudaError_t e = cudaHostRegister(reg, 1 << 20, cudaHostRegisterMapped);
			 registered = !e;
			 return e;
		 }},
		// A buffer of its own, registered before the spinner starts (fresh_reg in remake).
		{"cudaHostUnregister", [&] { cudaError_t e = cudaHostUnregister(fresh_reg); fresh_reg = nullptr; return e; }},
		{"cudaFreeAsync(cudaMalloc'd)+query", [&] { cudaError_t e = cudaFreeAsync(dev, other); dev = nullptr; return e ? e : poll(other); }},
		{"cudaMallocAsync+query(own stream)", [&] { void *p; cudaError_t e = cudaMallocAsync(&p, 1 << 20, other); return e ? e : poll(other); }},
		{"cudaFreeAsync+query(own stream)", [&] { cudaError_t e = cudaFreeAsync(async_dev, other); async_dev = nullptr; return e ? e : poll(other); }},
		{"cudaMemcpy H2D (legacy stream)", [&] { return cudaMemcpy(dev ? dev : async_dev, src, sizeof(src), cudaMemcpyHostToDevice); }},
		{"cudaMemcpyAsync H2D+query(own)", [&] { cudaError_t e = cudaMemcpyAsync(async_dev, src, sizeof(src), cudaMemcpyHostToDevice, other); return e ? e : poll(other); }},
		{"cudaMemset (legacy stream)", [&] { return cudaMemset(async_dev, 0, 4096); }},
		{"cudaMemsetAsync+query(own)", [&] { cudaError_t e = cudaMemsetAsync(async_dev, 0, 4096, other); return e ? e : poll(other); }},
		{"kernel launch+query(own)", [&] { tiny<<<1, 1, 0, other>>>(nullptr); cudaError_t e = cudaGetLastError(); return e ? e : poll(other); }},
		{"cudaStreamCreateWithFlags", [&] { cudaStream_t s; cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); return e; }},
		{"cudaStreamDestroy(idle)", [&] { cudaStream_t s; cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); return e ? e : cudaStreamDestroy(s); }},
		{"cudaEventRecord+query(own)", [&] { cudaError_t e = cudaEventRecord(ev, other); while (!e && (e = cudaEventQuery(ev)) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::microseconds(100)); return e; }},
		{"cudaFuncGetAttributes(unloaded)", [&] { cudaFuncAttributes fa; return cudaFuncGetAttributes(&fa, never_launched); }},
		{"cudaDeviceSynchronize", [&] { return cudaDeviceSynchronize(); }},
	};
	std::printf("| call | spinner on a non-blocking stream | spinner on a blocking stream |\n| --- | --- | --- |\n");
	for (auto &p : probes) {
		std::string cell[2];
		for (int mode = 0; mode < 2; mode++) {
			remake();
			flags[0] = 0;
			flags[1] = 0;
			gio_test_spinner<<<1, 1, 0, mode ? blk : nb>>>(flags, flags + 1);
			CK(cudaGetLastError());
			while (!((volatile unsigned *)flags)[1])
				std::this_thread::sleep_for(std::chrono::microseconds(100));
			std::atomic<int> done{0};
			cudaError_t rc = cudaSuccess;
			auto t0 = std::chrono::steady_clock::now();
			std::thread th([&] { rc = p.call(); done = 1; });
			while (!done && std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(wait_ms))
				std::this_thread::sleep_for(std::chrono::microseconds(200));
			double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
			bool waited = !done;
			((volatile unsigned *)flags)[0] = 1;
			th.join();
			CK(cudaStreamSynchronize(mode ? blk : nb));
			char buf[128];
			if (waited)
				std::snprintf(buf, sizeof(buf), "**waits** (returned %s after release)", cudaGetErrorName(rc));
			else
				std::snprintf(buf, sizeof(buf), "returns, %.2f ms (%s)", ms, cudaGetErrorName(rc));
			cell[mode] = buf;
			(void)cudaGetLastError();
		}
		std::printf("| %s | %s | %s |\n", p.name, cell[0].c_str(), cell[1].c_str());
		std::fflush(stdout);
	}
	return 0;
}
