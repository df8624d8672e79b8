// The warp copy (giouring/device/copy.cuh) at every depth the staged mover may be given
// (gio_kv_plan_params::move_depth: 1 to 16; 0 and 17 clamp), both ways between HBM and pinned
// host memory mapped for the GPU, fresh and cached loads, lengths that end inside a round, on a
// 16-byte boundary, on a 4-byte one and on none, with offsets that take each of the three paths
// (16, 4 and 1 bytes a lane): every byte of each copy checked, and the guard bytes around it
// untouched.
//
// Exits 77 (skipped) without a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "gpu_test.cuh"
#include <giouring/device/copy.cuh>

namespace {

const uint64_t kBytes = 300000;  // room for the longest copy, its offsets and the guards
const unsigned char kGuard = 0xa5;

__global__ void copy_kernel(unsigned char *dst, const unsigned char *src, uint64_t len, int fresh, uint32_t depth)
{
	gio_copy_warp_depth(dst, src, len, fresh, depth);
}

__global__ void copy16_kernel(unsigned char *dst, const unsigned char *src, uint64_t len)
{
	gio_copy_warp(dst, src, len, 1);
}

unsigned char pattern(uint64_t i)
{
	return (unsigned char)((i * 131u + (i >> 8) * 7u + 1u) & 0xffu);
}

} // namespace

int main()
{
	skip_without_gpu();
	unsigned char *host = nullptr, *host_dev = nullptr, *hbm = nullptr;
	CK(cudaHostAlloc((void **)&host, kBytes, cudaHostAllocMapped));
	CK(cudaHostGetDevicePointer((void **)&host_dev, host, 0));
	CK(cudaMalloc((void **)&hbm, kBytes));
	std::vector<unsigned char> src(kBytes), got(kBytes);
	for (uint64_t i = 0; i < kBytes; i++)
		src[i] = pattern(i);
	// Lengths: none, one lane's 16 bytes, a round at depth 1 (512) and around it, a round at
	// depth 16 (8 KiB) and around it, a staged object (64 KiB) and past it, odd tails.
	const uint64_t lens[] = {0, 16, 496, 512, 528, 8192, 8192 + 48, 65536, 65536 + 16, 3 * 65536 + 4, 5, 4099, 262144 + 1};
	// Offsets: 16-byte aligned (wide path), 4-byte (word path), odd (byte path).
	const uint64_t offs[] = {0, 4, 3};
	const uint32_t depths[] = {0, 1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 17};
	uint64_t copies = 0;
	for (int to_host = 0; to_host < 2; to_host++)
		for (uint32_t depth : depths)
			for (uint64_t off : offs)
				for (uint64_t len : lens) {
					const int fresh = (int)((depth + len) & 1u);
					unsigned char *d = to_host ? host_dev : hbm;
					const unsigned char *s = to_host ? hbm : host_dev;
					// The source holds the pattern at off; the destination is all guard bytes.
					if (to_host) {
						CK(cudaMemcpy(hbm + 64 + off, src.data(), len, cudaMemcpyHostToDevice));
						std::memset(host, kGuard, kBytes);
					} else {
						std::memcpy(host + 64 + off, src.data(), len);
						CK(cudaMemset(hbm, kGuard, kBytes));
					}
					copy_kernel<<<1, 32>>>(d + 128 + off, s + 64 + off, len, fresh, depth);
					CK(cudaGetLastError());
					CK(cudaDeviceSynchronize());
					if (to_host)
						std::memcpy(got.data(), host, kBytes);
					else
						CK(cudaMemcpy(got.data(), hbm, kBytes, cudaMemcpyDeviceToHost));
					uint64_t bad = 0, first = ~0ull;
					for (uint64_t i = 0; i < kBytes; i++) {
						const bool in = i >= 128 + off && i < 128 + off + len;
						const unsigned char want = in ? src[i - 128 - off] : kGuard;
						if (got[i] != want) {
							bad++;
							if (first == ~0ull)
								first = i;
						}
					}
					EXPECT(bad == 0, "%s, depth %u, offset %llu, %llu bytes, fresh %d: %llu bytes wrong, first at %llu",
					       to_host ? "HBM -> host" : "host -> HBM", depth, (unsigned long long)off,
					       (unsigned long long)len, fresh, (unsigned long long)bad, (unsigned long long)first);
					copies++;
				}
	// gio_copy_warp() is the depth-16 copy.
	std::memcpy(host + 64, src.data(), 65536 + 16);
	CK(cudaMemset(hbm, kGuard, kBytes));
	copy16_kernel<<<1, 32>>>(hbm + 128, host_dev + 64, 65536 + 16);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(got.data(), hbm, kBytes, cudaMemcpyDeviceToHost));
	EXPECT(std::memcmp(got.data() + 128, src.data(), 65536 + 16) == 0 && got[127] == kGuard && got[128 + 65536 + 16] == kGuard,
	       "gio_copy_warp: the copy or its guards differ");
	CK(cudaFree(hbm));
	CK(cudaFreeHost(host));
	if (failures) {
		std::printf("FAIL: %d of %llu copies wrong\n", failures, (unsigned long long)copies + 1);
		return 1;
	}
	std::printf("PASS: the warp copy at depths 0-17 (clamped to 1-16), both ways, %llu copies, every byte and guard checked\n",
		    (unsigned long long)copies + 1);
	return 0;
}
