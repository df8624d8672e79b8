/**
 * @file giouring/config.h
 * @brief Compilation environment: function qualifiers, version macros, portability checks.
 *
 * Every giouring header includes this one first. It decides, from the compiler that reads it,
 * how shared code is qualified:
 *
 * | macro        | nvcc (host and device passes)         | plain C11 / C++ compiler |
 * | ------------ | ------------------------------------- | ------------------------ |
 * | `GIO_HD`     | `__host__ __device__ static inline`   | `static inline`          |
 * | `GIO_DEV`    | `__device__ static inline`            | (not usable)             |
 * | `GIO_INLINE` | `static inline`                       | `static inline`          |
 *
 * CUDA keywords are never redefined (BaM's `#define __device__` trap): headers that need the
 * device qualifiers use these macros instead.
 *
 * Options the includer may define before the first giouring header:
 * - `GIO_NO_STATIC_ASSERTS` (undefined): skip the wire-format size/offset asserts. Only for
 *   compilers without `_Static_assert`; the asserts cost nothing at run time.
 */
#ifndef GIOURING_CONFIG_H
#define GIOURING_CONFIG_H

/** @brief Major version of the headers. */
#define GIO_VERSION_MAJOR 0
/** @brief Minor version of the headers. */
#define GIO_VERSION_MINOR 1
/** @brief Patch version of the headers. */
#define GIO_VERSION_PATCH 0
/** @brief Version as one comparable integer: major * 10000 + minor * 100 + patch. */
#define GIO_VERSION (GIO_VERSION_MAJOR * 10000 + GIO_VERSION_MINOR * 100 + GIO_VERSION_PATCH)

/**
 * @brief Extracts field @p f (e.g. `CAP_MQES`) from register value @p v.
 * Uses `GIO_<f>_SHIFT` and `GIO_<f>_MASK` (the mask is right-aligned).
 */
#define GIO_GET(v, f) (((v) >> GIO_##f##_SHIFT) & GIO_##f##_MASK)
/** @brief Places @p x in field @p f (e.g. `CC_MPS`), ready to be or-ed into a register value. */
#define GIO_SET(f, x) (((x) & GIO_##f##_MASK) << GIO_##f##_SHIFT)

#if defined(__CUDACC__)
/** @brief Qualifier of pure functions callable from host and device code. */
#define GIO_HD __host__ __device__ static inline
/** @brief Qualifier of functions callable from device code only (`.cuh` headers). */
#define GIO_DEV __device__ static inline
#else
/** @brief Qualifier of pure functions callable from host and device code. */
#define GIO_HD static inline
#endif

/** @brief Qualifier of host-only inline helpers in headers. */
#define GIO_INLINE static inline

#if defined(__cplusplus)
/** @brief Compile-time assertion usable in C11, C++ and CUDA C++. */
#define GIO_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
/** @brief Opens a block of C linkage in C++ translation units. */
#define GIO_EXTERN_C_BEGIN extern "C" {
/** @brief Closes a block opened by GIO_EXTERN_C_BEGIN. */
#define GIO_EXTERN_C_END }
#else
/** @brief Compile-time assertion usable in C11, C++ and CUDA C++. */
#define GIO_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
/** @brief Opens a block of C linkage in C++ translation units. */
#define GIO_EXTERN_C_BEGIN
/** @brief Closes a block opened by GIO_EXTERN_C_BEGIN. */
#define GIO_EXTERN_C_END
#endif

#if defined(GIO_NO_STATIC_ASSERTS)
#undef GIO_STATIC_ASSERT
#define GIO_STATIC_ASSERT(cond, msg)
#endif

/*
 * NVMe structures are little-endian on the wire. giouring stores them with native loads and
 * stores, which is correct on the hosts and GPUs it targets (x86-64, aarch64, NVIDIA GPUs), all
 * little-endian. Refuse to build elsewhere rather than corrupt commands silently.
 */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "giouring: NVMe structures are little-endian; this host is not"
#endif
#endif

#endif /* GIOURING_CONFIG_H */
