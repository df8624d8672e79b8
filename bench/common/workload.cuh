// workload.cuh: the KV-cache restore workload that every KV restore bench measures, its pattern,
// and the kernels that fill, poison and verify it.
//
// ## The workload
// A prefix of `tokens` tokens of a model with geometry g (giouring/kv/layout.h): L layers, KV blocks of
// g.block_tokens tokens, n_blocks = ceil(tokens / block_tokens). One *object* is the K or the V
// half of one block of one layer: block_tokens x kv_heads x head_dim x 2 bytes (32 KiB for
// Llama3-8B with block 16). Objects are numbered inside a layer by i = kv * n_blocks + b (all K
// objects, then all V objects), as in the pool tensor.
//
// Store (the source; pinned host memory, or a file written from it), **layer-major, then kv,
// then block**:
//
//     store offset of (layer l, half kv, block b) = ((l * 2 + kv) * n_blocks + b) * obj_bytes
//                                                 = kv_src_offset(w, l, kv * n_blocks + b)
//
// so each layer's 2 * n_blocks objects are one contiguous range of layer_bytes (a layer is
// restored with one contiguous read), and the whole store is L * layer_bytes. This is not the
// SSD layout of giouring/kv/layout.h (one GPU file per block, block-major): it is the layout that makes
// the CPU baselines as easy as possible, which is the fair choice for a baseline.
//
// Pool (the destination; HBM): per layer, a vLLM FlashAttention tensor
// [2, pool_blocks, block_tokens, kv_heads, head_dim]; object (l, kv, b) lands at pool block
// perm[b], a seeded permutation, so consecutive objects land non-contiguously as in a real paged
// pool:
//
//     dst of (l, kv, b) = pool[l] + (kv * pool_blocks + perm[b]) * obj_bytes   (gio_kv_pool_addr)
//
// The layers are carved out of one allocation (pool_base), layer after layer, and pool_blocks ==
// n_blocks, so the bulk baseline's single memcpy lands exactly where the identity permutation
// would put every object: it is verified against that (KV_VERIFY_IDENTITY).
//
// ## Pattern
// 16-byte word k of object (l, kv, b) holds kv_pattern(l, kv, b, k) = {b, k, 0x4b560000 | (l * 2
// + kv), hash}: unique per (layer, kv, block, word) by its first three fields; the poison word
// (0xa5a5a5a5 x 4) can never match it.
#ifndef GIOURING_BENCH_COMMON_WORKLOAD_CUH
#define GIOURING_BENCH_COMMON_WORKLOAD_CUH

#if !defined(__CUDACC__)
#error "bench/common/workload.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>

#include <errno.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <giouring/kv/layout.h>

#include "check.cuh"

// Llama3-8B (the canonical workload: 32 layers, 8 KV heads, head dim 128, bf16, blocks of 16
// tokens) and a Qwen3-32B-like geometry for scale.
static inline int kv_geometry_by_name(const char *name, struct gio_kv_geometry *g)
{
	if (!std::strcmp(name, "llama3-8b")) {
		*g = {32u, 8u, 128u, 2u, 16u};
		return 0;
	}
	if (!std::strcmp(name, "qwen3-32b")) {
		*g = {64u, 8u, 128u, 2u, 64u};
		return 0;
	}
	return -EINVAL;
}

struct kv_workload {
	struct gio_kv_geometry geom;
	char geom_name[32];
	uint64_t tokens;       // prefix length
	uint32_t n_layers;     // geom.layers
	uint32_t n_blocks;     // KV blocks of the prefix: ceil(tokens / block_tokens)
	uint32_t pool_blocks;  // blocks per layer in the pool tensor (== n_blocks of the full workload)
	uint64_t obj_bytes;    // one K or V object of one block of one layer
	uint64_t seed;         // of the permutation
	unsigned char *store;  // pinned, mapped host store (layout above); NULL in a prefix view
	unsigned char *d_store; // its device alias (cudaHostGetDevicePointer)
	unsigned char *pool_base; // one device allocation holding every layer's tensor
	unsigned char **pool;  // host array: pool[l] = layer l's tensor [2, pool_blocks, bt, h, d]
	unsigned char **d_pool; // the same array in device memory, for kernels
	uint32_t *perm;        // host: prefix block b lands at pool block perm[b] (pool_blocks entries)
	uint32_t *d_perm;      // the same in device memory
	uint32_t *d_identity;  // identity permutation in device memory (the bulk baseline's layout)
	int is_view;           // a prefix view (kv_workload_prefix_view) owns nothing
};

__host__ __device__ static inline uint64_t kv_objs_per_layer(const struct kv_workload *w)
{
	return 2ull * w->n_blocks;
}

__host__ __device__ static inline uint64_t kv_layer_bytes(const struct kv_workload *w)
{
	return kv_objs_per_layer(w) * w->obj_bytes;
}

__host__ __device__ static inline uint64_t kv_total_objects(const struct kv_workload *w)
{
	return kv_objs_per_layer(w) * w->n_layers;
}

__host__ __device__ static inline uint64_t kv_total_bytes(const struct kv_workload *w)
{
	return kv_total_objects(w) * w->obj_bytes;
}

// Byte offset in the store (or the store file) of object i (= kv * n_blocks + b) of layer l.
__host__ __device__ static inline uint64_t kv_src_offset(const struct kv_workload *w, uint32_t layer, uint64_t i)
{
	return ((uint64_t)layer * kv_objs_per_layer(w) + i) * w->obj_bytes;
}

// Offset inside a layer's pool tensor of object i (= kv * n_blocks + b): (kv * pool_blocks +
// perm[b]) * obj_bytes, as gio_kv_pool_addr. One function for the host paths, the gather kernel
// and the verifier, so that they cannot disagree on where an object lands.
__host__ __device__ static inline uint64_t kv_pool_offset(const uint32_t *perm, uint32_t n_blocks, uint32_t pool_blocks,
							  uint64_t obj_bytes, uint64_t i)
{
	const uint32_t kv = i >= n_blocks ? 1u : 0u;
	const uint32_t b = (uint32_t)(i - (uint64_t)kv * n_blocks);
	return ((uint64_t)kv * pool_blocks + perm[b]) * obj_bytes;
}

// Pool address of object i (= kv * n_blocks + b) of layer l: its shuffled slot. Host only (it
// reads the host copies of pool[] and perm[]).
static inline unsigned char *kv_dst_ptr(const struct kv_workload *w, uint32_t layer, uint64_t i)
{
	return w->pool[layer] + kv_pool_offset(w->perm, w->n_blocks, w->pool_blocks, w->obj_bytes, i);
}

// splitmix64: a fixed, portable generator, so a seed names the same permutation everywhere
// (std::shuffle's algorithm is not specified).
static inline uint64_t kv_splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

// Allocates and describes the workload: the pinned mapped store (unfilled: kv_fill_store), the
// pool (unpoisoned) and the permutation. Returns 0, or -EINVAL with a message for a bad size.
static inline int kv_workload_create(struct kv_workload *w, const char *geom_name, uint64_t tokens, uint64_t seed)
{
	std::memset(w, 0, sizeof(*w));
	if (kv_geometry_by_name(geom_name, &w->geom)) {
		std::fprintf(stderr, "unknown geometry '%s' (llama3-8b, qwen3-32b)\n", geom_name);
		return -EINVAL;
	}
	kv_fmt(w->geom_name, sizeof(w->geom_name), "%s", geom_name);
	const uint64_t blocks = (tokens + w->geom.block_tokens - 1) / w->geom.block_tokens;
	w->tokens = tokens;
	w->n_layers = w->geom.layers;
	w->obj_bytes = gio_kv_object_bytes(&w->geom);
	w->seed = seed;
	// The gather kernel indexes a layer's 16-byte words with 32-bit arithmetic.
	if (tokens == 0 || blocks * 2 * (w->obj_bytes / 16) >= (1ull << 31) || w->obj_bytes % 16) {
		std::fprintf(stderr, "unsupported token count %" PRIu64 " for %s\n", tokens, geom_name);
		return -EINVAL;
	}
	w->n_blocks = (uint32_t)blocks;
	w->pool_blocks = w->n_blocks;

	const uint64_t total = kv_total_bytes(w), layer_pool = 2ull * w->pool_blocks * w->obj_bytes;
	// Portable: any device may use it; mapped: the gather kernel reads it through PCIe.
	KV_CK(cudaHostAlloc((void **)&w->store, total, cudaHostAllocMapped | cudaHostAllocPortable));
	KV_CK(cudaHostGetDevicePointer((void **)&w->d_store, w->store, 0));
	KV_CK(cudaMalloc((void **)&w->pool_base, layer_pool * w->n_layers));
	w->pool = (unsigned char **)std::calloc(w->n_layers, sizeof(*w->pool));
	w->perm = (uint32_t *)std::calloc(w->pool_blocks, sizeof(*w->perm));
	std::vector<uint32_t> identity(w->pool_blocks);
	if (!w->pool || !w->perm)
		kv_die("out of host memory");
	for (uint32_t l = 0; l < w->n_layers; l++)
		w->pool[l] = w->pool_base + (uint64_t)l * layer_pool;
	for (uint32_t b = 0; b < w->pool_blocks; b++)
		w->perm[b] = identity[b] = b;
	uint64_t s = seed;
	for (uint32_t b = w->pool_blocks; b > 1; b--) { // Fisher-Yates
		const uint32_t j = (uint32_t)(kv_splitmix64(&s) % b);
		std::swap(w->perm[b - 1], w->perm[j]);
	}
	KV_CK(cudaMalloc((void **)&w->d_pool, w->n_layers * sizeof(*w->d_pool)));
	KV_CK(cudaMalloc((void **)&w->d_perm, w->pool_blocks * sizeof(*w->d_perm)));
	KV_CK(cudaMalloc((void **)&w->d_identity, w->pool_blocks * sizeof(*w->d_identity)));
	KV_CK(cudaMemcpy(w->d_pool, w->pool, w->n_layers * sizeof(*w->d_pool), cudaMemcpyHostToDevice));
	KV_CK(cudaMemcpy(w->d_perm, w->perm, w->pool_blocks * sizeof(*w->d_perm), cudaMemcpyHostToDevice));
	KV_CK(cudaMemcpy(w->d_identity, identity.data(), w->pool_blocks * sizeof(uint32_t), cudaMemcpyHostToDevice));
	return 0;
}

// The first `tokens` tokens of w as a workload of its own: fewer blocks, the same pool and
// permutation, and its own (smaller) store layout, which exists only as a file written by
// kv_store_file_create (store is NULL). The pread baseline restores such a view, since it is
// too slow for the full prefix.
static inline struct kv_workload kv_workload_prefix_view(const struct kv_workload *w, uint64_t tokens)
{
	struct kv_workload v = *w;
	const uint64_t blocks = (tokens + w->geom.block_tokens - 1) / w->geom.block_tokens;
	v.is_view = 1;
	if (tokens == 0 || blocks >= w->n_blocks)
		return v; // the whole prefix: the same layout as w, store included
	v.tokens = tokens;
	v.n_blocks = (uint32_t)blocks;
	v.store = v.d_store = NULL;
	return v;
}

static inline void kv_workload_destroy(struct kv_workload *w)
{
	if (w->is_view)
		return;
	KV_CK(cudaFreeHost(w->store));
	KV_CK(cudaFree(w->pool_base));
	KV_CK(cudaFree(w->d_pool));
	KV_CK(cudaFree(w->d_perm));
	KV_CK(cudaFree(w->d_identity));
	std::free(w->pool);
	std::free(w->perm);
	std::memset(w, 0, sizeof(*w));
}

// ---- pattern, fill, poison, verify --------------------------------------------------------------

__host__ __device__ static inline uint4 kv_pattern(uint32_t layer, uint32_t kv, uint32_t block, uint32_t word)
{
	const uint32_t tag = layer * 2u + kv;
	uint32_t h = tag * 0x9e3779b1u ^ block * 0x85ebca77u ^ word * 0xc2b2ae3du;
	h ^= h >> 16; // murmur3 finalizer: every input bit reaches the hash word
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return make_uint4(block, word, 0x4b560000u | tag, h);
}

#define KV_POISON 0xa5a5a5a5u

// Block per object (grid-stride over objects), threads over its 16-byte words: coalesced and
// free of per-word division. Writes through the mapped pointer, i.e. over PCIe into host memory.
static __global__ void kv_fill_kernel(uint4 *store, uint32_t n_layers, uint32_t n_blocks, uint32_t words_per_obj)
{
	const uint64_t objs = 2ull * n_blocks * n_layers;
	for (uint64_t o = blockIdx.x; o < objs; o += gridDim.x) {
		const uint32_t layer = (uint32_t)(o / (2ull * n_blocks));
		const uint32_t i = (uint32_t)(o - 2ull * n_blocks * layer);
		const uint32_t kv = i >= n_blocks ? 1u : 0u;
		const uint32_t b = i - kv * n_blocks;
		uint4 *p = store + o * words_per_obj; // layer-major, kv, block: o is the store index
		for (uint32_t k = threadIdx.x; k < words_per_obj; k += blockDim.x)
			p[k] = kv_pattern(layer, kv, b, k);
	}
}

static __global__ void kv_poison_kernel(uint4 *p, uint64_t words)
{
	const uint4 v = make_uint4(KV_POISON, KV_POISON, KV_POISON, KV_POISON);
	for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < words; k += (uint64_t)gridDim.x * blockDim.x)
		p[k] = v;
}

// out[0] += wrong 16-byte words; out[1] = min(first wrong object index, o = l * 2 * n_blocks + i).
static __global__ void kv_verify_kernel(unsigned char *const *pool, const uint32_t *perm, uint32_t n_layers,
					uint32_t n_blocks, uint32_t pool_blocks, uint32_t words_per_obj,
					unsigned long long *out)
{
	const uint64_t objs = 2ull * n_blocks * n_layers;
	unsigned long long wrong = 0, first = ~0ull;
	for (uint64_t o = blockIdx.x; o < objs; o += gridDim.x) {
		const uint32_t layer = (uint32_t)(o / (2ull * n_blocks));
		const uint32_t i = (uint32_t)(o - 2ull * n_blocks * layer);
		const uint32_t kv = i >= n_blocks ? 1u : 0u;
		const uint32_t b = i - kv * n_blocks;
		const uint4 *p = (const uint4 *)(pool[layer] + kv_pool_offset(perm, n_blocks, pool_blocks, words_per_obj * 16ull, i));
		for (uint32_t k = threadIdx.x; k < words_per_obj; k += blockDim.x) {
			const uint4 v = p[k], e = kv_pattern(layer, kv, b, k);
			if (v.x != e.x || v.y != e.y || v.z != e.z || v.w != e.w) {
				wrong++;
				first = o < first ? o : first;
			}
		}
	}
	if (wrong) {
		atomicAdd(&out[0], wrong);
		atomicMin(&out[1], first);
	}
}

enum kv_verify_mode {
	KV_VERIFY_NONE = 0,     // not checked
	KV_VERIFY_SHUFFLED = 1, // every object at its permuted slot
	KV_VERIFY_IDENTITY = 2, // every object at pool block b (the bulk copy's layout)
};

// Lazy-loading trap (docs/benchmarking.md): CUDA loads a kernel at its first launch, and a launch
// that must load one waits for the device while a persistent kernel spins on it. Loads this
// header's kernels now, before anything (the library's persistent kernels included) can spin.
static inline void kv_workload_load_kernels(void)
{
	struct cudaFuncAttributes a;
	KV_CK(cudaFuncGetAttributes(&a, kv_fill_kernel));
	KV_CK(cudaFuncGetAttributes(&a, kv_poison_kernel));
	KV_CK(cudaFuncGetAttributes(&a, kv_verify_kernel));
}

#endif // GIOURING_BENCH_COMMON_WORKLOAD_CUH
