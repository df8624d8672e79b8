// timing.cuh: the clocks of the benches and their one way of waiting for the GPU, bounded.
#ifndef GIOURING_BENCH_COMMON_TIMING_CUH
#define GIOURING_BENCH_COMMON_TIMING_CUH

#include <errno.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <giouring/ring/clock.h>

#include "check.cuh"

static inline double kv_clock_s(clockid_t clock)
{
	struct timespec t;
	clock_gettime(clock, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline double kv_now_s(void)
{
	return kv_clock_s(CLOCK_MONOTONIC);
}

// CPU time of the calling thread.
static inline double kv_thread_cpu_s(void)
{
	return kv_clock_s(CLOCK_THREAD_CPUTIME_ID);
}

// CPU time of every thread of the process, those that have ended included.
static inline double kv_process_cpu_s(void)
{
	return kv_clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

// Spins on the event (cudaEventQuery) until it completes or timeout_s passes: a hung copy or
// kernel becomes a failure with a message instead of a bench that never ends. Returns 0 or
// -ETIME; any other CUDA error exits.
static inline int kv_wait_event(cudaEvent_t ev, double timeout_s)
{
	const double deadline = kv_now_s() + timeout_s;
	for (unsigned n = 0;; n++) {
		const cudaError_t e = cudaEventQuery(ev);
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			KV_CK(e);
		if ((n & 1023u) == 0 && kv_now_s() > deadline)
			return -ETIME;
	}
}

// Whether the calling warp's time (%globaltimer) is before t: lane 0 reads the clock, every lane
// gets the answer. Warp-uniform calls only.
static __device__ inline int kv_warp_before(uint64_t t)
{
	int before = 0;
	if ((threadIdx.x & 31u) == 0)
		before = gio_now_ns() < t;
	return __shfl_sync(0xffffffffu, before, 0);
}

static inline double kv_median(std::vector<double> v)
{
	if (v.empty())
		return 0.0;
	std::sort(v.begin(), v.end());
	const size_t n = v.size();
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif // GIOURING_BENCH_COMMON_TIMING_CUH
