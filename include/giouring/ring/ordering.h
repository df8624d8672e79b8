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
 *
 * @par The host's barriers, by architecture
 * **x86-64** (TSO): stores are not reordered with older stores, an uncached MMIO store included;
 * loads are not reordered with older loads; DMA is coherent with the caches. Every host branch is
 * the C11 builtin, which compiles to plain moves; the fences only stop the compiler.
 *
 * **aarch64**: the C11 forms order only for the CPUs. GCC's release fence is `dmb ish`, and
 * `stlr` / `ldar` order accesses only for the observers in the shareability domain of the
 * address (Arm DEN0024A, 13.2.1), which for Linux user memory is Inner Shareable. The
 * architecture does not promise that a PCIe controller's DMA or a GPU is in that domain, and
 * Linux keeps the two apart: `smp_wmb()` is `dmb ishst`, but `dma_wmb()` is `dmb oshst` and
 * `dma_rmb()` `dmb oshld` (virtio takes the dma_ forms for real hardware). So, case by case:
 * - *MMIO doorbell* (SQ tail after the SQEs, CQ head after reading the CQEs, the doorbell proxy,
 *   the controller's registers): gio_fence_release() is `dsb sy`, gio_mmio_write32() one `str`.
 *   Linux's `writel()` is `dmb oshst` then `str` (`__iowmb()` is `dma_wmb()` since "arm64: io:
 *   Relax implicit barriers in default I/O accessors"; before it, `dsb st`); SPDK's
 *   `nvme_pcie_qpair_ring_sq_doorbell()` does `spdk_wmb()`, `dsb st`, then `spdk_mmio_write_4()`.
 *   `dsb sy` is at least both: every earlier load and store completes, for every observer,
 *   before the doorbell store is issued. The loads matter for the CQ head: a controller that sees
 *   the head pass a slot may write a new CQE there, so the reads of the old one must be done.
 *   Linux orders them with the `dma_rmb()` after each CQE's phase check, SPDK with a `dmb oshld`
 *   there (`nvme_pcie_qpair_process_completions()`): a `dmb oshld` orders earlier loads before
 *   later loads and stores. The cost is one DSB per doorbell write, and one write covers a batch.
 * - *Release stores, shadow doorbells among them* (gio_store_release(), gio_store_release16()):
 *   `dmb osh`, then the `stlr`. The reader may be a GPU: the GPU-executed target reads the shadow
 *   SQ tail that CPU producers release; GPU reapers read the CQE status word that the CPU
 *   executor releases. For the outer shareable domain `dmb osh` orders every earlier store before
 *   the release store, as `dma_wmb()` does before Linux hands a descriptor to a device and
 *   `spdk_wmb()` before SPDK writes a shadow doorbell
 *   (`nvme_pcie_qpair_update_mmio_required()`), and every earlier load too, which `dmb oshst`
 *   would not: a release that hands memory back (the CQ head after reading CQEs, a slot freed
 *   after reading its result) needs those reads done. A DMB is enough here: payload and flag are
 *   Normal memory that the same observer reads, and a DMB orders them for every observer in its
 *   domain; the completion a DSB waits for matters only where the later access goes to another
 *   endpoint (MMIO, above). The `stlr` stays, so the CPUs get the C11 release exactly as before.
 *   The cost is one DMB per release store.
 * - *Completions* (gio_load_acquire16() of the CQE status word, then the other fields and the
 *   data): `ldarh`. Linux (`nvme_cqe_pending()` then `dma_rmb()`) and SPDK read the phase with a
 *   plain load and then `dmb oshld`; the acquire puts that order into the load itself (no later
 *   load is satisfied before it), which is enough for a writer in the inner shareable domain (the
 *   CPU executor). For a writer the architecture leaves outside it (a controller's DMA, a GPU
 *   target) only a `dmb oshld` after the load gives Linux's guarantee: so every acquire load
 *   (gio_load_acquire(), gio_load_acquire16()) is `ldar`/`ldarh` then `dmb oshld`, one DMB per
 *   acquire; which words a device writes is not known at the load. What no acquire orders, the
 *   reads of a batch's CQEs before its CQ head doorbell, the `dsb sy` above orders for an MMIO doorbell and the `dmb osh` of the release
 *   store for a shadow one.
 *
 * **Other architectures**: the C11 builtins, argued for CPU threads only. Their C11 release fence
 * need not order an MMIO store (POWER's `lwsync` does not; Linux's `writel()` uses `sync`), so
 * `nvme-pci://` refuses to open there; the software targets need only the C11 model.
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
#elif defined(__aarch64__)
	(void)scope;
	/* The word may be a device's (a CQE's status, a GPU producer's shadow doorbell): after it,
	 * Linux's dma_rmb() and SPDK, `dmb oshld` (the file comment, "Completions"). */
	const uint32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	__asm__ __volatile__("dmb oshld" : : : "memory");
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
#elif defined(__aarch64__)
	(void)scope;
	/* The word may be a device's (a CQE's status, a GPU producer's shadow doorbell): after it,
	 * Linux's dma_rmb() and SPDK, `dmb oshld` (the file comment, "Completions"). */
	const uint16_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
	__asm__ __volatile__("dmb oshld" : : : "memory");
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
#elif defined(__aarch64__)
	(void)scope;
	/* The reader may be a GPU or a device: order for the outer shareable domain (file comment). */
	__asm__ __volatile__("dmb osh" : : : "memory");
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
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
#elif defined(__aarch64__)
	(void)scope;
	/* The reader may be a GPU reaper: order for the outer shareable domain (file comment). */
	__asm__ __volatile__("dmb osh" : : : "memory");
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
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
 * @brief gio_store_relaxed() at a chosen scope (the plain form is at system scope).
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @param v  the value.
 *
 * Any thread, host or device. After gio_fence_release_in() at the same scope it publishes like a
 * release store: one fence can then serve several words (a GPU executor posting several CQEs of
 * one lane).
 */
GIO_HD void gio_store_relaxed_in(uint32_t scope, uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	GIO__SCOPED(scope, "st.relaxed.gpu.u32 [%0], %1;", "st.relaxed.sys.u32 [%0], %1;", : : "l"(p), "r"(v) : "memory");
#else
	(void)scope;
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
 * @brief Atomic or with acquire-release ordering, at a chosen scope.
 * @param scope  GIO_SCOPE_SYS or GIO_SCOPE_GPU (the device honours it; the host ignores it).
 * @param p  the word.
 * @param v  the bits to set.
 * @return the value before.
 *
 * Any thread, host or device.
 */
GIO_HD uint32_t gio_fetch_or_in(uint32_t scope, uint32_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	uint32_t old;
	GIO__SCOPED(scope, "atom.acq_rel.gpu.or.b32 %0, [%1], %2;", "atom.acq_rel.sys.or.b32 %0, [%1], %2;", : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
#else
	(void)scope;
	return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
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
#elif defined(__aarch64__)
	(void)scope;
	/* Every earlier load and store completes before a later MMIO doorbell store is issued: at least
	 * Linux's writel() (`dmb oshst`) and SPDK's spdk_wmb() (`dsb st`), and the loads of the CQEs
	 * before a CQ head doorbell (the file comment, "MMIO doorbell"). */
	__asm__ __volatile__("dsb sy" : : : "memory");
#else
	(void)scope;
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

/**
 * @brief Release fence: loads and stores before it are ordered before stores after it.
 *
 * Any thread, host or device (system scope on the device). The fence before an MMIO doorbell
 * (gio_mmio_write32()): between SQE stores and the SQ tail, between reading CQEs and the CQ head.
 * On the host it orders plain stores before a later relaxed or MMIO store for every observer, a
 * PCIe device included: a compiler barrier on x86-64, `dsb sy` on aarch64 (the file comment).
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
 * keeps the compiler from doing so. On aarch64 the fence is `dsb sy`, and the store one `str`
 * from a base register, as Linux's `__raw_writel()`: no writeback addressing form, which a
 * hypervisor cannot emulate when the access traps.
 */
GIO_HD void gio_mmio_write32(volatile uint32_t *db, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	asm volatile("st.mmio.relaxed.sys.global.u32 [%0], %1;" : : "l"(db), "r"(v) : "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("str %w0, [%1]" : : "rZ"(v), "r"(db) : "memory");
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
