// A kernel that never ends by itself, for measuring and testing what waits behind a persistent
// kernel (bench/probe_cuda_blocking.cu, tests/gpu/test_gpu_bounded.cu): it sets *started, then
// spins until *stop is set, or 60 s of %globaltimer pass (so that no run leaves it behind).
#ifndef GIOURING_TESTS_GPU_SPINNER_CUH
#define GIOURING_TESTS_GPU_SPINNER_CUH

static __global__ void gio_test_spinner(volatile unsigned *stop, volatile unsigned *started)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	*started = 1;
	__threadfence_system();
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (!*stop && t - t0 < 60ull * 1000000000ull);
}

#endif
