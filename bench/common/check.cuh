// check.cuh: how the benches fail and format. Every CUDA call is checked (KV_CK prints
// file:line and exits 1); messages and names are bounded by their buffers (kv_fmt).
//
// Host code in the C style of the project (no exceptions), compiled by nvcc.
#ifndef GIOURING_BENCH_COMMON_CHECK_CUH
#define GIOURING_BENCH_COMMON_CHECK_CUH

#if !defined(__CUDACC__)
#error "bench/common/check.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#define KV_CK(x)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			std::fprintf(stderr, "FAIL: %s:%d: %s: %s\n", __FILE__, __LINE__, #x,      \
				     cudaGetErrorString(e_));                                      \
			std::exit(1);                                                              \
		}                                                                                  \
	} while (0)

__attribute__((format(printf, 1, 2), noreturn)) static inline void kv_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::fprintf(stderr, "FAIL: ");
	std::vfprintf(stderr, fmt, ap);
	std::fprintf(stderr, "\n");
	va_end(ap);
	std::exit(1);
}

// snprintf that truncates on purpose: messages and names are bounded by their buffers, and
// GCC's -Wformat-truncation (an error with -Werror) does not look through this wrapper.
__attribute__((format(printf, 3, 4))) static inline void kv_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

#endif // GIOURING_BENCH_COMMON_CHECK_CUH
