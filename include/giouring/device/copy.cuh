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
 * @brief Copies @p len bytes from @p src to @p dst with the whole warp: 16 bytes a lane where both
 *        ends and the length are 16-byte aligned, else 4 bytes, else single bytes.
 * @param dst       destination (HBM or mapped host memory).
 * @param src       source.
 * @param len       bytes.
 * @param fresh     non-zero: read @p src with `ld.global.cv` (no cached line of it is used), for a
 *                  source another party rewrites between copies, such as a staging slot that
 *                  the controller fills again on each lap.
 *
 * All 32 lanes of the warp with the same arguments. No ordering of its own: the caller orders the
 * copy against what produced the source and what consumes the destination.
 */
__device__ inline void gio_copy_warp(unsigned char *dst, const unsigned char *src, uint64_t len, int fresh)
{
	const unsigned lane = threadIdx.x & 31u;
	if ((((uintptr_t)dst | (uintptr_t)src | len) & 15u) == 0) {
		uint4 *d = (uint4 *)dst;
		const uint4 *s = (const uint4 *)src;
		const uint64_t n = len / 16;
		uint64_t k = lane;
		/* Sixteen loads in flight per lane (8 KiB per warp) before their stores: the source may
		 * be host memory across PCIe, microseconds away under load, and its bandwidth per warp
		 * is what the warp has in flight over that latency. */
		for (; k + 480 < n; k += 512) {
			uint4 v[16];
#pragma unroll
			for (int u = 0; u < 16; u++)
				v[u] = fresh ? __ldcv(s + k + 32 * u) : s[k + 32 * u];
#pragma unroll
			for (int u = 0; u < 16; u++)
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

#endif /* GIOURING_DEVICE_COPY_CUH */
