// What every GPU test shares: the skip code, a CUDA call check that ends the test, a soft check
// that counts failures, and a bounded wait for a stream (a test never hangs on a kernel).
#ifndef GIOURING_TESTS_GPU_TEST_CUH
#define GIOURING_TESTS_GPU_TEST_CUH

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include <giouring/ring/clock.h>

// Exit code ctest reports as skipped (SKIP_RETURN_CODE): no GPU here.
#define GIO_TEST_SKIP 77

// A CUDA call that must succeed: the test ends at once with the call and the error.
#define CK(x)                                                                                              \
	do {                                                                                               \
		cudaError_t e_ = (x);                                                                      \
		if (e_ != cudaSuccess) {                                                                   \
			std::printf("FAIL: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);    \
			std::exit(1);                                                                      \
		}                                                                                          \
	} while (0)

// A check that counts a failure, prints why (printf-style) and goes on.
static int failures = 0;
#define EXPECT(cond, ...)                                                                                  \
	do {                                                                                               \
		if (!(cond)) {                                                                             \
			failures++;                                                                        \
			std::printf("FAIL (line %d): %s: ", __LINE__, #cond);                              \
			std::printf(__VA_ARGS__);                                                          \
			std::printf("\n");                                                                 \
		}                                                                                          \
	} while (0)

// Whether everything queued on `s` so far finishes within `seconds` (polled, then given up).
static inline bool sync_within(cudaStream_t s, double seconds)
{
	cudaEvent_t ev;
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	CK(cudaEventRecord(ev, s));
	const uint64_t deadline = gio_deadline_in((uint64_t)(seconds * 1e9));
	cudaError_t e;
	while ((e = cudaEventQuery(ev)) == cudaErrorNotReady && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(1000000ull);
	if (e == cudaErrorNotReady)
		return false; // the event is leaked on purpose: the stream still uses it
	CK(e);
	CK(cudaEventDestroy(ev));
	return true;
}

// Exits with GIO_TEST_SKIP and a message when there is no GPU.
static inline void skip_without_gpu(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		std::printf("SKIP: no CUDA device here\n");
		std::exit(GIO_TEST_SKIP);
	}
}

#endif
