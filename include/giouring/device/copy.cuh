/**
 * @file giouring/device/copy.cuh
 * @brief The warp's copy: one warp moves bytes between HBM and host memory mapped for the GPU,
 *        with enough loads in flight to keep a PCIe link busy from few warps. Used by the
 *        GPU-executed target (giouring/target/gpu_exec.cuh) and the staged path's mover
 *        (giouring/kv/staged.cuh).
 */
#ifndef GIOURING_DEVICE_COPY_CUH
#define GIOURING_DEVICE_COPY_CUH

#include <stdint.h>

/**
 * @brief Copies @p len bytes from @p src to @p dst with the whole warp, with @p depth 16-byte
 *        loads in flight a lane: 16 bytes a lane where both ends and the length are 16-byte
 *        aligned, else 4 bytes, else single bytes (one load at a time).
 * @param dst    destination (HBM or mapped host memory).
 * @param src    source.
 * @param len    bytes.
 * @param fresh  non-zero: read @p src with `ld.global.cv` (no cached line of it is used), for a
 *               source another party rewrites between copies, such as a staging slot that the
 *               controller fills again on each lap.
 * @param depth  loads in flight a lane, 1 to 16 (clamped): a warp moves about depth x 512 bytes
 *               per round trip of its source. Where the source is host memory across PCIe, deeper
 *               moves more from fewer warps, and every load in flight also costs kernels on the
 *               other SMs: on the H200, 8 SMs of 8 warps moved 42-51 GB/s from pinned host memory
 *               at depth 16 and at depth 4, and slowed a GEMM in the other partition 4.4-5.0% at
 *               16 and 0.6-0.9% at 4 (docs/staged.md, "The mover's loads in flight").
 *
 * All 32 lanes of the warp with the same arguments. No ordering of its own: the caller orders the
 * copy against what produced the source and what consumes the destination.
 */
__device__ inline void gio_copy_warp_depth(unsigned char *dst, const unsigned char *src, uint64_t len, int fresh,
					   uint32_t depth)
{
	const unsigned lane = threadIdx.x & 31u;
	depth = depth < 1u ? 1u : depth > 16u ? 16u : depth;
	if ((((uintptr_t)dst | (uintptr_t)src | len) & 15u) == 0) {
		uint4 *d = (uint4 *)dst;
		const uint4 *s = (const uint4 *)src;
		const uint64_t n = len / 16;
		uint64_t k = lane;
		/* All of a round's loads (up to 16 a lane) before its stores: the source may be host
		 * memory, microseconds away under load, and a warp's bandwidth is what it has in flight
		 * over that latency. The loop is unrolled for 16 and predicated on depth. */
		for (; k + 32 * (depth - 1) < n; k += 32 * depth) {
			uint4 v[16];
#pragma unroll
			for (uint32_t u = 0; u < 16; u++)
				if (u < depth)
					v[u] = fresh ? __ldcv(s + k + 32 * u) : s[k + 32 * u];
#pragma unroll
			for (uint32_t u = 0; u < 16; u++)
				if (u < depth)
					d[k + 32 * u] = v[u];
		}
		for (; k < n; k += 32)
			d[k] = fresh ? __ldcv(s + k) : s[k];
	} else if ((((uintptr_t)dst | (uintptr_t)src | len) & 3u) == 0) {
		uint32_t *d = (uint32_t *)dst;
		const uint32_t *s = (const uint32_t *)src;
		for (uint64_t k = lane; k < len / 4; k += 32)
			d[k] = fresh ? __ldcv(s + k) : s[k];
	} else {
		for (uint64_t k = lane; k < len; k += 32)
			dst[k] = fresh ? __ldcv(src + k) : src[k];
	}
}

/**
 * @brief gio_copy_warp_depth() with 16 loads in flight a lane (8 KiB a warp): what keeps a PCIe
 *        link busy from the fewest warps.
 * @param dst    destination (HBM or mapped host memory).
 * @param src    source.
 * @param len    bytes.
 * @param fresh  as gio_copy_warp_depth().
 *
 * All 32 lanes of the warp with the same arguments.
 */
__device__ inline void gio_copy_warp(unsigned char *dst, const unsigned char *src, uint64_t len, int fresh)
{
	gio_copy_warp_depth(dst, src, len, fresh, 16u);
}

#endif /* GIOURING_DEVICE_COPY_CUH */
