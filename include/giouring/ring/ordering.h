/**
 * @file giouring/ring/ordering.h
 * @brief Every memory-ordering operation giouring performs, in one place.
 *
 * Rings are shared between threads of different kinds: CPU threads, GPU threads, a software
 * target's executor and (for a real controller) a PCIe device. Each primitive here has a host
 * implementation (GCC/Clang `__atomic` builtins, the C11 memory model) and a device one (PTX at
 * **system scope**, since the other party may be a CPU thread or a device across PCIe, and rings
 * may live in host memory). Call sites say what each operation pairs with.
 *
 * The two protocol rules (docs/design.md, "Memory ordering"):
 * - Submit: SQE stores -> gio_fence_release() -> doorbell (gio_store_release() of a shadow tail,
 *   or gio_mmio_write32() for a real controller), one doorbell per batch.
 * - Complete: gio_load_acquire16() of the CQE status word, phase check -> the other CQE fields
 *   and the data, which the acquire orders after it.
 */
#ifndef GIOURING_RING_ORDERING_H
#define GIOURING_RING_ORDERING_H

#include <stdint.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/** @name Memory scopes of the device-side primitives (the `_in` variants)
 * Who may be on the other side of an operation. The host side ignores the scope (the C11
 * model has none). Fences at system scope wait for writes to reach host memory and peers across
 * PCIe; at GPU scope they only order the GPU's own memory system, several times cheaper. Use
 * GIO_SCOPE_GPU only where every party touching the memory runs on the same GPU (GPU producers
 * with the GPU-executed target); a CPU thread, another GPU or a PCIe device needs GIO_SCOPE_SYS.
 * @{ */
#define GIO_SCOPE_SYS 0u /**< Other parties may be CPU threads or PCIe devices (the default). */
#define GIO_SCOPE_GPU 1u /**< Every party runs on this GPU. */
/** @} */

#if defined(__CUDA_ARCH__)
/* Emits the PTX instruction `op` with scope `.gpu` or `.sys` as chosen at run time. */
#define GIO__SCOPED(scope, op_gpu, op_sys, ...)                                                              \
	do {                                                                                                 \
		if ((scope) == GIO_SCOPE_GPU)                                                                \
			asm volatile(op_gpu __VA_ARGS__);                                                    \
		else                                                                                         \
			asm volatile(op_sys __VA_ARGS__);                                                    \
	} while (0)
#endif

/**
 * @brief gio_load_acquire() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @return its value.
 */
GIO_HD uint32_t gio_load_acquire_in(uint32_t scope, const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
	uint32_t v;
	GIO__SCOPED(scope, "ld.acquire.gpu.u32 %0, [%1];", "ld.acquire.sys.u32 %0, [%1];", : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	(void)scope;
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/**
 * @brief Acquire load of a 32-bit word: later loads and stores are not moved before it.
 * @param p  the word.
 * @return its value.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD uint32_t gio_load_acquire(const uint32_t *p)
{
	return gio_load_acquire_in(GIO_SCOPE_SYS, p);
}

/**
 * @brief gio_load_acquire16() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @return its value.
 */
GIO_HD uint16_t gio_load_acquire16_in(uint32_t scope, const uint16_t *p)
{
#if defined(__CUDA_ARCH__)
	uint16_t v;
	GIO__SCOPED(scope, "ld.acquire.gpu.u16 %0, [%1];", "ld.acquire.sys.u16 %0, [%1];", : "=h"(v) : "l"(p) : "memory");
	return v;
#else
	(void)scope;
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}

/**
 * @brief Acquire load of a 16-bit word (the CQE status word with its phase tag).
 * @param p  the word.
 * @return its value.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD uint16_t gio_load_acquire16(const uint16_t *p)
{
	return gio_load_acquire16_in(GIO_SCOPE_SYS, p);
}

/**
 * @brief Relaxed (atomic, unordered) load of a 32-bit word.
 * @param p  the word.
 * @return its value.
 *
 * Any thread, host or device.
 */
GIO_HD uint32_t gio_load_relaxed(const uint32_t *p)
{
#if defined(__CUDA_ARCH__)
	uint32_t v;
	asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/**
 * @brief Relaxed (atomic, unordered) load of a 64-bit word (counters read by other threads).
 * @param p  the word, 8-byte aligned.
 * @return its value.
 *
 * Any thread, host or device.
 */
GIO_HD uint64_t gio_load_relaxed64(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
	uint64_t v;
	asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
#else
	return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/**
 * @brief Relaxed (atomic, unordered) store of a 64-bit word.
 * @param p  the word, 8-byte aligned.
 * @param v  the value.
 *
 * Any thread, host or device. A counter with one writer is incremented as
 * `gio_store_relaxed64(&c, c + 1)`: only its writer reads it plainly.
 */
GIO_HD void gio_store_relaxed64(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
	asm volatile("st.relaxed.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/**
 * @brief gio_store_release() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @param v  the value.
 */
GIO_HD void gio_store_release_in(uint32_t scope, uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	GIO__SCOPED(scope, "st.release.gpu.u32 [%0], %1;", "st.release.sys.u32 [%0], %1;", : : "l"(p), "r"(v) : "memory");
#else
	(void)scope;
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/**
 * @brief Release store of a 32-bit word: earlier loads and stores are not moved after it.
 * @param p  the word.
 * @param v  the value.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD void gio_store_release(uint32_t *p, uint32_t v)
{
	gio_store_release_in(GIO_SCOPE_SYS, p, v);
}

/**
 * @brief gio_store_release16() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @param v  the value.
 */
GIO_HD void gio_store_release16_in(uint32_t scope, uint16_t *p, uint16_t v)
{
#if defined(__CUDA_ARCH__)
	GIO__SCOPED(scope, "st.release.gpu.u16 [%0], %1;", "st.release.sys.u16 [%0], %1;", : : "l"(p), "h"(v) : "memory");
#else
	(void)scope;
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}

/**
 * @brief Release store of a 16-bit word (a CQE status word with its phase tag).
 * @param p  the word.
 * @param v  the value.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD void gio_store_release16(uint16_t *p, uint16_t v)
{
	gio_store_release16_in(GIO_SCOPE_SYS, p, v);
}

/**
 * @brief Relaxed (atomic, unordered) store of a 32-bit word.
 * @param p  the word.
 * @param v  the value.
 *
 * Any thread, host or device.
 */
GIO_HD void gio_store_relaxed(uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	asm volatile("st.relaxed.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
#else
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/**
 * @brief gio_fetch_add() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @param v  what to add.
 * @return the value before the addition.
 */
GIO_HD uint32_t gio_fetch_add_in(uint32_t scope, uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	uint32_t old;
	GIO__SCOPED(scope, "atom.acq_rel.gpu.add.u32 %0, [%1], %2;", "atom.acq_rel.sys.add.u32 %0, [%1], %2;", : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	(void)scope;
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

/**
 * @brief Atomic add with acquire-release ordering.
 * @param p  the word.
 * @param v  what to add.
 * @return the value before the addition.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD uint32_t gio_fetch_add(uint32_t *p, uint32_t v)
{
	return gio_fetch_add_in(GIO_SCOPE_SYS, p, v);
}

/**
 * @brief gio_cas() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p         the word.
 * @param expected  the value it must hold.
 * @param desired   the value to store when it does.
 * @return 1 when the swap happened, else 0.
 */
GIO_HD int gio_cas_in(uint32_t scope, uint32_t *p, uint32_t expected, uint32_t desired)
{
#if defined(__CUDA_ARCH__)
	uint32_t old;
	GIO__SCOPED(scope, "atom.acq_rel.gpu.cas.b32 %0, [%1], %2, %3;", "atom.acq_rel.sys.cas.b32 %0, [%1], %2, %3;", : "=r"(old) : "l"(p), "r"(expected), "r"(desired) : "memory");
	return old == expected;
#else
	(void)scope;
	return __atomic_compare_exchange_n(p, &expected, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
#endif
}

/**
 * @brief Atomic compare-and-swap with acquire-release ordering.
 * @param p         the word.
 * @param expected  the value it must hold.
 * @param desired   the value to store when it does.
 * @return 1 when the swap happened, else 0.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD int gio_cas(uint32_t *p, uint32_t expected, uint32_t desired)
{
	return gio_cas_in(GIO_SCOPE_SYS, p, expected, desired);
}

/**
 * @brief gio_fence_release() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 */
GIO_HD void gio_fence_release_in(uint32_t scope)
{
#if defined(__CUDA_ARCH__)
	GIO__SCOPED(scope, "fence.acq_rel.gpu;", "fence.acq_rel.sys;", : : : "memory");
#else
	(void)scope;
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/**
 * @brief Release fence: stores before it become visible before stores after it.
 *
 * Any thread, host or device (system scope on the device). The fence between SQE stores and the
 * doorbell; on the host it also orders plain stores before a later relaxed or MMIO store.
 */
GIO_HD void gio_fence_release(void)
{
	gio_fence_release_in(GIO_SCOPE_SYS);
}

/**
 * @brief gio_fence_acquire() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 */
GIO_HD void gio_fence_acquire_in(uint32_t scope)
{
#if defined(__CUDA_ARCH__)
	GIO__SCOPED(scope, "fence.acq_rel.gpu;", "fence.acq_rel.sys;", : : : "memory");
#else
	(void)scope;
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

/**
 * @brief Acquire fence: loads after it are not satisfied before loads before it.
 *
 * Any thread, host or device (system scope on the device).
 */
GIO_HD void gio_fence_acquire(void)
{
	gio_fence_acquire_in(GIO_SCOPE_SYS);
}

/**
 * @brief Store to a device register (an NVMe doorbell) in MMIO space.
 * @param db  the mapped register.
 * @param v   the value (the new SQ tail or CQ head slot).
 *
 * Any thread, host or device. The store itself is relaxed: call gio_fence_release() first so the
 * entries it announces are visible (pairs with the controller's fetch). On x86-64 a volatile store
 * to an uncached mapping is not reordered with earlier stores; the compiler barrier of the fence
 * keeps the compiler from doing so.
 */
GIO_HD void gio_mmio_write32(volatile uint32_t *db, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	asm volatile("st.mmio.relaxed.sys.global.u32 [%0], %1;" : : "l"(db), "r"(v) : "memory");
#else
	*db = v;
#endif
}

/**
 * @brief Polite spin-wait step: lets a sibling hyper-thread or warp run.
 *
 * Any thread, host or device.
 */
GIO_HD void gio_cpu_relax(void)
{
#if defined(__CUDA_ARCH__)
	__nanosleep(32);
#elif defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" : : : "memory");
#endif
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_ORDERING_H */
