// kv_workload.cuh: the canonical KV-cache restore workload of shared/BENCH.md and the baselines
// that every KV restore bench prints beside the library's path, in the same process and run.
//
// Header-only, CUDA C++ (nvcc), host code in the C style of the project: no exceptions, every
// CUDA call checked (KV_CK prints file:line and exits 1), every wait bounded by a deadline.
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
//
// ## Paths and measurement
// A path is an issue function that enqueues (or performs) the restore of every layer on the
// runner's stream; kv_measure() runs it warm-up + reps times: poison the pool, run the optional
// untimed prepare, then time the issue (host wall clock from before the start event to the stop
// event observed complete; GPU time between the events; CPU time of the issuing thread with
// CLOCK_THREAD_CPUTIME_ID around the issue call only), verify the pool, and keep the medians.
// The library's own path plugs in the same way (a kv_path with its issue function).
#ifndef GIOURING_BENCH_KV_WORKLOAD_CUH
#define GIOURING_BENCH_KV_WORKLOAD_CUH

#if !defined(__CUDACC__)
#error "bench/kv_workload.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <giouring/kv/layout.h>

// ---- errors, time ---------------------------------------------------------------------------

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

static inline double kv_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline double kv_thread_cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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

// ---- geometry and workload --------------------------------------------------------------------

// Llama3-8B (BENCH.md's canonical workload) and a Qwen3-32B-like geometry for scale.
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

#define KV_GATHER_THREADS 1024
#define KV_GATHER_UNROLL 4

// One layer: flat over the layer's contiguous source words, KV_GATHER_UNROLL independent 16-byte
// loads per thread in flight before the stores (PCIe reads have microseconds of latency: ~75 KB
// must be in flight to fill 50 GB/s). Consecutive threads read consecutive words, and a warp's
// 512 bytes always fall inside one object (words_per_obj is a multiple of 32), so the stores
// into the shuffled slot are coalesced too. The dynamic shared memory is not used: the launch
// reserves more than half an SM's so that at most one block runs per SM (blocks == SMs used).
static __global__ void __launch_bounds__(KV_GATHER_THREADS)
	kv_gather_layer_kernel(const uint4 *__restrict__ src, unsigned char *__restrict__ dst_layer,
			       const uint32_t *__restrict__ perm, uint32_t n_blocks, uint32_t pool_blocks,
			       uint32_t words_per_obj, uint32_t layer_words)
{
	const uint32_t stride = gridDim.x * blockDim.x;
	const uint64_t obj_bytes = (uint64_t)words_per_obj * 16u;
	for (uint32_t base = blockIdx.x * blockDim.x + threadIdx.x; base < layer_words; base += KV_GATHER_UNROLL * stride) {
		uint4 v[KV_GATHER_UNROLL];
#pragma unroll
		for (int k = 0; k < KV_GATHER_UNROLL; k++) {
			const uint32_t g = base + (uint32_t)k * stride;
			v[k] = g < layer_words ? src[g] : make_uint4(0, 0, 0, 0);
		}
#pragma unroll
		for (int k = 0; k < KV_GATHER_UNROLL; k++) {
			const uint32_t g = base + (uint32_t)k * stride;
			if (g < layer_words) {
				const uint32_t o = g / words_per_obj, word = g - o * words_per_obj;
				uint4 *d = (uint4 *)(dst_layer + kv_pool_offset(perm, n_blocks, pool_blocks, obj_bytes, o));
				d[word] = v[k];
			}
		}
	}
}

// Lazy-loading trap (BENCH.md): load every kernel of this header now, before anything (the
// library's persistent kernels included) can spin on the device. The includer loads its own.
static inline void kv_load_kernels(void)
{
	struct cudaFuncAttributes a;
	KV_CK(cudaFuncGetAttributes(&a, kv_fill_kernel));
	KV_CK(cudaFuncGetAttributes(&a, kv_poison_kernel));
	KV_CK(cudaFuncGetAttributes(&a, kv_verify_kernel));
	KV_CK(cudaFuncGetAttributes(&a, kv_gather_layer_kernel));
}

// Writes s as a JSON string (quotes and control characters escaped), for the benches' --json.
static inline void kv_json_string(FILE *f, const char *s)
{
	std::fputc('"', f);
	for (; *s; s++) {
		const unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			std::fprintf(f, "\\%c", c);
		else if (c < 0x20)
			std::fprintf(f, "\\u%04x", c);
		else
			std::fputc(c, f);
	}
	std::fputc('"', f);
}

// ---- runner, results ----------------------------------------------------------------------------

struct kv_runner {
	int device;
	int sm_count;
	cudaStream_t stream;    // non-blocking; never the legacy stream (cudaMemcpyBatchAsync refuses it)
	cudaEvent_t ev_start, ev_stop, ev_sync;
	unsigned long long *d_check; // verify output: [0] wrong words, [1] first wrong object
	int warmup, reps;
	double timeout_s;       // bound of every wait
	size_t gather_smem;     // dynamic shared memory that pins the gather kernel to 1 block/SM
	char err[256];          // an issue function's failure message
};

static inline void kv_runner_init(struct kv_runner *r, int device, int warmup, int reps, double timeout_s)
{
	std::memset(r, 0, sizeof(*r));
	r->device = device;
	r->warmup = warmup;
	r->reps = reps;
	r->timeout_s = timeout_s;
	KV_CK(cudaSetDevice(device));
	KV_CK(cudaDeviceGetAttribute(&r->sm_count, cudaDevAttrMultiProcessorCount, device));
	KV_CK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
	KV_CK(cudaEventCreate(&r->ev_start));
	KV_CK(cudaEventCreate(&r->ev_stop));
	KV_CK(cudaEventCreateWithFlags(&r->ev_sync, cudaEventDisableTiming));
	KV_CK(cudaMalloc((void **)&r->d_check, 2 * sizeof(unsigned long long)));
	int per_sm = 0, per_block = 0;
	KV_CK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
	KV_CK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
	r->gather_smem = std::min((size_t)per_sm / 2 + 1024, (size_t)per_block);
	KV_CK(cudaFuncSetAttribute(kv_gather_layer_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)r->gather_smem));
}

static inline void kv_runner_destroy(struct kv_runner *r)
{
	KV_CK(cudaFree(r->d_check));
	KV_CK(cudaEventDestroy(r->ev_start));
	KV_CK(cudaEventDestroy(r->ev_stop));
	KV_CK(cudaEventDestroy(r->ev_sync));
	KV_CK(cudaStreamDestroy(r->stream));
}

// Waits for everything enqueued on the runner's stream so far, bounded.
static inline void kv_sync(struct kv_runner *r, const char *what)
{
	KV_CK(cudaEventRecord(r->ev_sync, r->stream));
	if (kv_wait_event(r->ev_sync, r->timeout_s))
		kv_die("%s did not complete within %.0f s", what, r->timeout_s);
}

static inline void kv_fill_store(const struct kv_workload *w, struct kv_runner *r)
{
	if (!w->store)
		kv_die("kv_fill_store: a prefix view has no store of its own");
	kv_fill_kernel<<<r->sm_count * 8, 256, 0, r->stream>>>((uint4 *)w->d_store, w->n_layers, w->n_blocks,
								(uint32_t)(w->obj_bytes / 16));
	KV_CK(cudaGetLastError());
	kv_sync(r, "filling the store");
}

static inline void kv_poison_pool(const struct kv_workload *w, struct kv_runner *r)
{
	const uint64_t words = 2ull * w->pool_blocks * w->obj_bytes / 16;
	for (uint32_t l = 0; l < w->n_layers; l++) {
		kv_poison_kernel<<<r->sm_count * 4, 256, 0, r->stream>>>((uint4 *)w->pool[l], words);
		KV_CK(cudaGetLastError());
	}
	kv_sync(r, "poisoning the pool");
}

enum kv_verify_mode {
	KV_VERIFY_NONE = 0,     // not checked
	KV_VERIFY_SHUFFLED = 1, // every object at its permuted slot
	KV_VERIFY_IDENTITY = 2, // every object at pool block b (the bulk copy's layout)
};

// Checks every object of w in the pool byte for byte. Returns the count of wrong 16-byte words;
// *first_bad receives the first wrong object (l * 2 * n_blocks + kv * n_blocks + b) or -1.
static inline uint64_t kv_verify_pool(const struct kv_workload *w, struct kv_runner *r, int mode, int64_t *first_bad)
{
	unsigned long long h[2] = {0ull, ~0ull};
	KV_CK(cudaMemcpyAsync(r->d_check, h, sizeof(h), cudaMemcpyHostToDevice, r->stream));
	kv_verify_kernel<<<r->sm_count * 8, 256, 0, r->stream>>>(w->d_pool, mode == KV_VERIFY_IDENTITY ? w->d_identity : w->d_perm,
								  w->n_layers, w->n_blocks, w->pool_blocks,
								  (uint32_t)(w->obj_bytes / 16), r->d_check);
	KV_CK(cudaGetLastError());
	KV_CK(cudaMemcpyAsync(h, r->d_check, sizeof(h), cudaMemcpyDeviceToHost, r->stream));
	kv_sync(r, "verifying the pool");
	*first_bad = h[1] == ~0ull ? -1 : (int64_t)h[1];
	return h[0];
}

enum kv_status { KV_OK = 0, KV_SKIPPED = 1, KV_FAILED = 2 };

// One row of a bench table: what a path did and how fast, medians over reps.
struct kv_result {
	char path[48];
	char note[192];
	int status;             // enum kv_status
	char error[256];        // why it failed or was skipped
	uint64_t tokens, objects, bytes;
	uint32_t sms;           // SMs the path's kernels use (0: copy engines only)
	uint64_t calls;         // API calls or launches per restore, as issued by the CPU
	int reps;               // timed repetitions
	double wall_ms, gpu_ms, cpu_ms; // medians: host wall clock, CUDA events, issuing thread CPU
	double wall_ms_min, wall_ms_max;
	double gbps;            // bytes / median wall, 1e9 bytes per second
	int verify;             // enum kv_verify_mode
	int verified;           // 1: every repetition matched byte for byte; 0: not checked or failed
	uint64_t bad_words;     // wrong 16-byte words in the first failing repetition
	int64_t first_bad_obj;  // its first wrong object, or -1
	uint32_t bad_layer, bad_kv, bad_block;
};

// Issue (or prepare) function of a path: restores every layer of w into its pool on r->stream.
// May return before the data has landed (kv_measure waits for the stream). Returns 0, or
// non-zero with a message in r->err.
typedef int (*kv_issue_fn)(const struct kv_workload *w, struct kv_runner *r, void *arg);

struct kv_path {
	const char *name;
	const char *note;
	kv_issue_fn prepare;    // optional, untimed, before each repetition (after the poison)
	kv_issue_fn issue;
	void *arg;
	int verify;             // enum kv_verify_mode
	uint32_t sms;
	uint64_t calls;
};

static inline double kv_median(std::vector<double> v)
{
	if (v.empty())
		return 0.0;
	std::sort(v.begin(), v.end());
	const size_t n = v.size();
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline void kv_result_init(struct kv_result *out, const struct kv_workload *w, const char *name, const char *note)
{
	std::memset(out, 0, sizeof(*out));
	kv_fmt(out->path, sizeof(out->path), "%s", name);
	kv_fmt(out->note, sizeof(out->note), "%s", note ? note : "");
	out->tokens = w->tokens;
	out->objects = kv_total_objects(w);
	out->bytes = kv_total_bytes(w);
	out->first_bad_obj = -1;
}

// Marks a row as skipped, with the reason, so the table still says the path exists.
__attribute__((format(printf, 4, 5))) static inline void kv_result_skip(struct kv_result *out, const struct kv_workload *w,
									const char *name, const char *fmt, ...)
{
	kv_result_init(out, w, name, "");
	out->status = KV_SKIPPED;
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(out->error, sizeof(out->error), fmt, ap);
	va_end(ap);
}

// Runs a path warmup + reps times (see the file comment). Returns 0, or -1 when the path failed
// (its issue function, or a wrong byte: out->status == KV_FAILED, out->error says which).
static inline int kv_measure(const struct kv_workload *w, struct kv_runner *r, const struct kv_path *p, struct kv_result *out)
{
	std::vector<double> wall, gpu, cpu;
	kv_result_init(out, w, p->name, p->note);
	out->sms = p->sms;
	out->calls = p->calls;
	out->verify = p->verify;
	out->verified = p->verify != KV_VERIFY_NONE;
	for (int rep = 0; rep < r->warmup + r->reps; rep++) {
		kv_poison_pool(w, r);
		r->err[0] = '\0';
		if (p->prepare && p->prepare(w, r, p->arg)) {
			out->status = KV_FAILED;
			kv_fmt(out->error, sizeof(out->error), "prepare: %s", r->err);
			return -1;
		}
		const double t0 = kv_now_s(), c0 = kv_thread_cpu_s();
		KV_CK(cudaEventRecord(r->ev_start, r->stream));
		const int rc = p->issue(w, r, p->arg);
		const double c1 = kv_thread_cpu_s();
		KV_CK(cudaEventRecord(r->ev_stop, r->stream));
		if (kv_wait_event(r->ev_stop, r->timeout_s))
			kv_die("%s: the restore did not complete within %.0f s", p->name, r->timeout_s);
		const double t1 = kv_now_s();
		if (rc) {
			// A refused call (say cudaErrorInvalidValue) is not sticky but stays the last error;
			// clear it so that the next path's checks do not report it as their own.
			(void)cudaGetLastError();
			out->status = KV_FAILED;
			kv_fmt(out->error, sizeof(out->error), "%s", r->err);
			return -1;
		}
		float ms = 0.f;
		KV_CK(cudaEventElapsedTime(&ms, r->ev_start, r->ev_stop));
		if (p->verify != KV_VERIFY_NONE) {
			int64_t first = -1;
			const uint64_t bad = kv_verify_pool(w, r, p->verify, &first);
			if (bad) {
				const uint64_t per_layer = kv_objs_per_layer(w);
				out->status = KV_FAILED;
				out->verified = 0;
				out->bad_words = bad;
				out->first_bad_obj = first;
				out->bad_layer = (uint32_t)((uint64_t)first / per_layer);
				out->bad_kv = (uint32_t)(((uint64_t)first % per_layer) / w->n_blocks);
				out->bad_block = (uint32_t)(((uint64_t)first % per_layer) % w->n_blocks);
				kv_fmt(out->error, sizeof(out->error),
					      "repetition %d: %" PRIu64 " wrong 16-byte words; first wrong object: layer %u %s block %u",
					      rep, bad, out->bad_layer, out->bad_kv ? "V" : "K", out->bad_block);
				return -1;
			}
		}
		if (rep >= r->warmup) {
			wall.push_back((t1 - t0) * 1e3);
			gpu.push_back((double)ms);
			cpu.push_back((c1 - c0) * 1e3);
		}
	}
	out->reps = r->reps;
	out->wall_ms = kv_median(wall);
	out->gpu_ms = kv_median(gpu);
	out->cpu_ms = kv_median(cpu);
	out->wall_ms_min = wall.empty() ? 0.0 : *std::min_element(wall.begin(), wall.end());
	out->wall_ms_max = wall.empty() ? 0.0 : *std::max_element(wall.begin(), wall.end());
	out->gbps = out->wall_ms > 0 ? (double)out->bytes / (out->wall_ms * 1e-3) / 1e9 : 0.0;
	return 0;
}

// ---- baselines ------------------------------------------------------------------------------------

#define KV_ERR(r, e, what) (kv_fmt((r)->err, sizeof((r)->err), "%s: %s", (what), cudaGetErrorString(e)), 1)

// bulk: the whole store in one H2D copy into the pool allocation, unshuffled. The PCIe limit of
// a copy-engine path, not a restore: it does not land objects in their shuffled slots.
static inline int kv_issue_bulk(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	(void)arg;
	const cudaError_t e = cudaMemcpyAsync(w->pool_base, w->store, kv_total_bytes(w), cudaMemcpyHostToDevice, r->stream);
	return e == cudaSuccess ? 0 : KV_ERR(r, e, "cudaMemcpyAsync");
}

static inline int kv_baseline_bulk(const struct kv_workload *w, struct kv_runner *r, struct kv_result *out)
{
	if (!w->store || w->pool_blocks != w->n_blocks)
		kv_die("kv_baseline_bulk needs the full workload");
	const struct kv_path p = {"bulk", "one cudaMemcpyAsync of the whole store; lands unshuffled (PCIe limit, not a restore)",
				  NULL, kv_issue_bulk, NULL, KV_VERIFY_IDENTITY, 0u, 1u};
	return kv_measure(w, r, &p, out);
}

// per-object: one cudaMemcpyAsync per object into its shuffled slot (LMCache's DRAM tier).
static inline int kv_issue_per_object(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	(void)arg;
	const uint64_t n = kv_objs_per_layer(w);
	for (uint32_t l = 0; l < w->n_layers; l++)
		for (uint64_t i = 0; i < n; i++) {
			const cudaError_t e = cudaMemcpyAsync(kv_dst_ptr(w, l, i), w->store + kv_src_offset(w, l, i), w->obj_bytes,
							      cudaMemcpyHostToDevice, r->stream);
			if (e != cudaSuccess)
				return KV_ERR(r, e, "cudaMemcpyAsync");
		}
	return 0;
}

static inline int kv_baseline_per_object(const struct kv_workload *w, struct kv_runner *r, struct kv_result *out)
{
	if (!w->store)
		kv_die("kv_baseline_per_object needs a workload with a store");
	const struct kv_path p = {"per-object", "cudaMemcpyAsync per object into its shuffled slot (LMCache DRAM tier)",
				  NULL, kv_issue_per_object, NULL, KV_VERIFY_SHUFFLED, 0u, kv_total_objects(w)};
	return kv_measure(w, r, &p, out);
}

// batch: cudaMemcpyBatchAsync, one call per layer. The pointer arrays cover every layer so that
// no array is rewritten while a call that read it might still hold it; they are filled inside
// the timed issue, as a caller would have to.
struct kv_batch_arrays {
	std::vector<void *> dsts, srcs;
	std::vector<size_t> sizes;
};

static inline int kv_issue_batch(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
#if CUDART_VERSION >= 12080
	struct kv_batch_arrays *a = (struct kv_batch_arrays *)arg;
	const uint64_t n = kv_objs_per_layer(w);
	struct cudaMemcpyAttributes attr;
	std::memset(&attr, 0, sizeof(attr));
	// The source is read in stream order (it is a long-lived pinned buffer, not a stack
	// temporary); the location hints are ignored for pinned and device memory but say what it is.
	attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	attr.srcLocHint.type = cudaMemLocationTypeHost;
	attr.srcLocHint.id = 0;
	attr.dstLocHint.type = cudaMemLocationTypeDevice;
	attr.dstLocHint.id = r->device;
	attr.flags = cudaMemcpyFlagDefault;
	size_t attr_idx = 0; // one attribute set for every copy of the call
	for (uint32_t l = 0; l < w->n_layers; l++) {
		void **dsts = a->dsts.data() + (uint64_t)l * n, **srcs = a->srcs.data() + (uint64_t)l * n;
		size_t *sizes = a->sizes.data() + (uint64_t)l * n;
		for (uint64_t i = 0; i < n; i++) {
			dsts[i] = kv_dst_ptr(w, l, i);
			srcs[i] = w->store + kv_src_offset(w, l, i);
			sizes[i] = w->obj_bytes;
		}
#if CUDART_VERSION >= 13000
		// CUDA 13.0: (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream); failIdx is gone.
		const cudaError_t e = cudaMemcpyBatchAsync(dsts, srcs, sizes, n, &attr, &attr_idx, 1, r->stream);
#else
		// CUDA 12.8/12.9: failIdx before the stream.
		size_t fail_idx = SIZE_MAX;
		const cudaError_t e = cudaMemcpyBatchAsync(dsts, srcs, sizes, n, &attr, &attr_idx, 1, &fail_idx, r->stream);
#endif
		if (e != cudaSuccess)
			return KV_ERR(r, e, "cudaMemcpyBatchAsync");
	}
	return 0;
#else
	(void)w;
	(void)arg;
	kv_fmt(r->err, sizeof(r->err), "cudaMemcpyBatchAsync needs CUDA 12.8 or later");
	return 1;
#endif
}

static inline int kv_baseline_batch(const struct kv_workload *w, struct kv_runner *r, struct kv_result *out)
{
	if (!w->store)
		kv_die("kv_baseline_batch needs a workload with a store");
#if CUDART_VERSION < 12080
	kv_result_skip(out, w, "batch", "cudaMemcpyBatchAsync needs CUDA 12.8 or later (built with %d)", CUDART_VERSION);
	(void)r;
	return 0;
#else
	struct kv_batch_arrays a;
	a.dsts.resize(kv_total_objects(w));
	a.srcs.resize(kv_total_objects(w));
	a.sizes.resize(kv_total_objects(w));
	const struct kv_path p = {"batch", "cudaMemcpyBatchAsync per layer (srcAccessOrder stream, source hint host)",
				  NULL, kv_issue_batch, &a, KV_VERIFY_SHUFFLED, 0u, w->n_layers};
	return kv_measure(w, r, &p, out);
#endif
}

// gather: a kernel per layer, `sms` blocks of KV_GATHER_THREADS threads reading the mapped pinned
// store (PCIe reads by the SMs) and writing the shuffled pool.
struct kv_gather_arg {
	uint32_t blocks;
};

static inline int kv_issue_gather(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	const struct kv_gather_arg *g = (const struct kv_gather_arg *)arg;
	const uint32_t wpo = (uint32_t)(w->obj_bytes / 16), layer_words = (uint32_t)(kv_layer_bytes(w) / 16);
	for (uint32_t l = 0; l < w->n_layers; l++) {
		kv_gather_layer_kernel<<<g->blocks, KV_GATHER_THREADS, r->gather_smem, r->stream>>>(
			(const uint4 *)(w->d_store + kv_src_offset(w, l, 0)), w->pool[l], w->d_perm, w->n_blocks,
			w->pool_blocks, wpo, layer_words);
		const cudaError_t e = cudaGetLastError();
		if (e != cudaSuccess)
			return KV_ERR(r, e, "kv_gather_layer_kernel launch");
	}
	return 0;
}

static inline int kv_baseline_gather(const struct kv_workload *w, struct kv_runner *r, uint32_t sms, struct kv_result *out)
{
	char name[48], note[192];
	kv_fmt(name, sizeof(name), "gather-%usm", sms);
	if (!w->store)
		kv_die("kv_baseline_gather needs a workload with a store");
	if (sms == 0 || sms > (uint32_t)r->sm_count) {
		kv_result_skip(out, w, name, "%u SMs asked, the GPU has %d", sms, r->sm_count);
		return 0;
	}
	int per_sm = 0;
	KV_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kv_gather_layer_kernel, KV_GATHER_THREADS, r->gather_smem));
	kv_fmt(note, sizeof(note),
		      "GPU gather from mapped pinned memory, %u blocks x %d threads (%d block/SM max), a launch per layer", sms,
		      KV_GATHER_THREADS, per_sm);
	struct kv_gather_arg a = {sms};
	const struct kv_path p = {name, note, NULL, kv_issue_gather, &a, KV_VERIFY_SHUFFLED, sms, w->n_layers};
	return kv_measure(w, r, &p, out);
}

// pread: a file holding a workload's store (its own layout: a prefix view has fewer blocks),
// read per object into a ring of pinned bounce buffers, each copied with cudaMemcpyAsync; an
// event per buffer says when it may be overwritten (LMCache's local-disk tier, with the overlap
// it has). The file is unlinked as soon as it is open, so a failed run leaves nothing behind.
struct kv_store_file {
	int fd;
	int tmpfs;             // on tmpfs: the page cache is the file, nothing to drop
	char dir[256];
	uint64_t bytes;
	uint32_t ring;
	unsigned char **bounce;
	cudaEvent_t *ready;    // bounce[k] may be overwritten once ready[k] completed
};

static inline int kv_write_full(int fd, const unsigned char *p, uint64_t len, uint64_t off)
{
	while (len) {
		const ssize_t n = pwrite(fd, p, len > (1ull << 30) ? (1ull << 30) : len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static inline int kv_read_full(int fd, unsigned char *p, uint64_t len, uint64_t off)
{
	while (len) {
		const ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = ENODATA; // EOF before the object's end
		if (n <= 0)
			return -1;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

// Writes view's store (view is w or a prefix view of it) into a new file in dir, from w's store.
// Returns 0, or -1 with the reason in err (no room, cannot create or write).
static inline int kv_store_file_create(const struct kv_workload *w, const struct kv_workload *view, const char *dir,
				       uint32_t ring, struct kv_store_file *f, char *err, size_t errlen)
{
	std::memset(f, 0, sizeof(*f));
	f->fd = -1;
	kv_fmt(f->dir, sizeof(f->dir), "%s", dir);
	f->bytes = kv_total_bytes(view);
	f->ring = ring ? ring : 1;
	struct statvfs vs;
	struct statfs fs;
	if (statvfs(dir, &vs) || statfs(dir, &fs)) {
		kv_fmt(err, errlen, "%s: %s", dir, std::strerror(errno));
		return -1;
	}
	if ((uint64_t)vs.f_bavail * vs.f_frsize < f->bytes + (1ull << 30)) {
		kv_fmt(err, errlen, "%s: %.1f GiB free, the file needs %.1f GiB and 1 GiB to spare", dir,
			      (double)vs.f_bavail * vs.f_frsize / (1ull << 30), (double)f->bytes / (1ull << 30));
		return -1;
	}
	f->tmpfs = fs.f_type == 0x01021994; // TMPFS_MAGIC
	char path[512];
	kv_fmt(path, sizeof(path), "%s/giouring_kv_bench.%ld.store", dir, (long)getpid());
	f->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (f->fd < 0) {
		kv_fmt(err, errlen, "%s: %s", path, std::strerror(errno));
		return -1;
	}
	unlink(path);
	// Each (layer, kv) run of blocks is contiguous in both layouts: 2L writes.
	for (uint32_t l = 0; l < w->n_layers; l++)
		for (uint32_t kv = 0; kv < 2; kv++)
			if (kv_write_full(f->fd, w->store + kv_src_offset(w, l, (uint64_t)kv * w->n_blocks),
					  (uint64_t)view->n_blocks * w->obj_bytes, kv_src_offset(view, l, (uint64_t)kv * view->n_blocks))) {
				kv_fmt(err, errlen, "writing %s: %s", path, std::strerror(errno));
				close(f->fd);
				f->fd = -1;
				return -1;
			}
	// Clean pages can be dropped before each repetition (kv_prepare_pread), so that a file on a
	// disk is read from the disk, not from the page cache.
	if (fsync(f->fd)) {
		kv_fmt(err, errlen, "fsync %s: %s", path, std::strerror(errno));
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	return 0;
}

static inline void kv_store_file_destroy(struct kv_store_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	std::memset(f, 0, sizeof(*f));
	f->fd = -1;
}

// The ring of pinned bounce buffers (one object each) and their events, for the pread path.
static inline void kv_bounce_ring_create(struct kv_store_file *f, uint64_t obj_bytes)
{
	f->bounce = (unsigned char **)std::calloc(f->ring, sizeof(*f->bounce));
	f->ready = (cudaEvent_t *)std::calloc(f->ring, sizeof(*f->ready));
	if (!f->bounce || !f->ready)
		kv_die("out of host memory");
	for (uint32_t k = 0; k < f->ring; k++) {
		KV_CK(cudaHostAlloc((void **)&f->bounce[k], obj_bytes, cudaHostAllocPortable));
		KV_CK(cudaEventCreateWithFlags(&f->ready[k], cudaEventDisableTiming));
	}
}

static inline void kv_bounce_ring_destroy(struct kv_store_file *f)
{
	for (uint32_t k = 0; f->bounce && k < f->ring; k++) {
		KV_CK(cudaFreeHost(f->bounce[k]));
		KV_CK(cudaEventDestroy(f->ready[k]));
	}
	std::free(f->bounce);
	std::free(f->ready);
	f->bounce = NULL;
	f->ready = NULL;
}

static inline int kv_prepare_pread(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	(void)w;
	const struct kv_store_file *f = (const struct kv_store_file *)arg;
	if (!f->tmpfs) {
		const int e = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
		if (e) {
			kv_fmt(r->err, sizeof(r->err), "posix_fadvise: %s", std::strerror(e));
			return 1;
		}
	}
	return 0;
}

static inline int kv_issue_pread(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	const struct kv_store_file *f = (const struct kv_store_file *)arg;
	const uint64_t n = kv_objs_per_layer(w);
	uint64_t issued = 0;
	for (uint32_t l = 0; l < w->n_layers; l++)
		for (uint64_t i = 0; i < n; i++, issued++) {
			const uint32_t k = (uint32_t)(issued % f->ring);
			if (issued >= f->ring && kv_wait_event(f->ready[k], r->timeout_s)) {
				kv_fmt(r->err, sizeof(r->err), "a bounce-buffer copy did not complete within %.0f s", r->timeout_s);
				return 1;
			}
			if (kv_read_full(f->fd, f->bounce[k], w->obj_bytes, kv_src_offset(w, l, i))) {
				kv_fmt(r->err, sizeof(r->err), "pread: %s", std::strerror(errno));
				return 1;
			}
			cudaError_t e = cudaMemcpyAsync(kv_dst_ptr(w, l, i), f->bounce[k], w->obj_bytes, cudaMemcpyHostToDevice, r->stream);
			if (e == cudaSuccess)
				e = cudaEventRecord(f->ready[k], r->stream);
			if (e != cudaSuccess)
				return KV_ERR(r, e, "cudaMemcpyAsync/cudaEventRecord");
		}
	return 0;
}

// view: the workload whose layout the file holds (a prefix view, or the full workload).
static inline int kv_baseline_pread(const struct kv_workload *view, struct kv_runner *r, struct kv_store_file *f,
				    struct kv_result *out)
{
	char note[192];
	kv_fmt(note, sizeof(note), "pread per object from %s (%s) into a ring of %u pinned bounce buffers + cudaMemcpyAsync%s",
		      f->dir, f->tmpfs ? "tmpfs" : "disk", f->ring, f->tmpfs ? "" : "; page cache dropped before each rep");
	const struct kv_path p = {f->tmpfs ? "pread-tmpfs" : "pread-disk", note, kv_prepare_pread, kv_issue_pread, f,
				  KV_VERIFY_SHUFFLED, 0u, 2 * kv_total_objects(view)};
	kv_bounce_ring_create(f, view->obj_bytes);
	const int rc = kv_measure(view, r, &p, out);
	kv_bounce_ring_destroy(f);
	return rc;
}

// cuFile: not implemented here. Probes whether it could run at all: libcufile present, driver
// open, and the file registrable (BENCH.md: on the H200 test machine cuFileHandleRegister fails
// with 5027 on every file system there). The types are declared here, as in cufile.h, because
// the header is not installed everywhere; the library is loaded with dlopen, never linked.
// Returns 1 when registration works (then the row is missing an implementation, and says so).
static inline int kv_cufile_probe(int fd, char *msg, size_t len)
{
	struct kv_cufile_error {
		int err;    // CUfileOpError; 0 is CU_FILE_SUCCESS
		int cu_err; // CUresult
	};
	struct kv_cufile_descr {
		int type; // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
		union {
			int fd;
			void *handle;
		} handle;
		const void *fs_ops;
	};
	typedef kv_cufile_error (*open_fn)(void);
	typedef kv_cufile_error (*register_fn)(void **, kv_cufile_descr *);
	typedef void (*deregister_fn)(void *);
	void *lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libcufile.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		kv_fmt(msg, len, "cuFile: not available (libcufile not found)");
		return 0;
	}
	open_fn drv_open = (open_fn)dlsym(lib, "cuFileDriverOpen");
	register_fn reg = (register_fn)dlsym(lib, "cuFileHandleRegister");
	deregister_fn dereg = (deregister_fn)dlsym(lib, "cuFileHandleDeregister");
	open_fn drv_close = (open_fn)dlsym(lib, "cuFileDriverClose_v2");
	if (!drv_close)
		drv_close = (open_fn)dlsym(lib, "cuFileDriverClose");
	if (!drv_open || !reg || !dereg) {
		kv_fmt(msg, len, "cuFile: not available (libcufile lacks cuFileDriverOpen/cuFileHandleRegister)");
		return 0;
	}
	kv_cufile_error e = drv_open();
	if (e.err != 0) {
		kv_fmt(msg, len, "cuFile: not available (cuFileDriverOpen fails: error %d, CUresult %d)", e.err, e.cu_err);
		return 0;
	}
	// GDS wants O_DIRECT: reopen the (unlinked) file through /proc with it, if the FS allows.
	char proc[64];
	kv_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	const int dfd = open(proc, O_RDONLY | O_DIRECT | O_CLOEXEC);
	kv_cufile_descr d;
	std::memset(&d, 0, sizeof(d));
	d.type = 1;
	d.handle.fd = dfd >= 0 ? dfd : fd;
	void *fh = NULL;
	e = reg(&fh, &d);
	int ok = 0;
	if (e.err != 0) {
		kv_fmt(msg, len, "cuFile: not available (cuFileHandleRegister fails on this file system: error %d%s)", e.err,
			      dfd >= 0 ? "" : ", file not openable with O_DIRECT");
	} else {
		kv_fmt(msg, len, "cuFile: cuFileHandleRegister works here, but this bench has no cuFile path yet");
		dereg(fh);
		ok = 1;
	}
	if (dfd >= 0)
		close(dfd);
	if (drv_close)
		(void)drv_close();
	return ok;
}

// ---- machine line ---------------------------------------------------------------------------------

struct kv_machine {
	char gpu[256];
	int sms;
	double hbm_gib;
	int driver_api;        // cudaDriverGetVersion: the CUDA version the driver supports
	int runtime;           // cudaRuntimeGetVersion
	char driver[64];       // the kernel module's version (/proc/driver/nvidia/version), or "?"
	char busid[32];
	char link[64];         // current PCIe link, e.g. "Gen5 x16"
	char link_max[64];
	char cpu[128];
	long cores;
};

static inline void kv_read_line(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = std::fopen(path, "r");
	if (!f)
		return;
	if (!std::fgets(buf, (int)len, f))
		buf[0] = '\0';
	std::fclose(f);
	buf[std::strcspn(buf, "\n")] = '\0';
}

// "32.0 GT/s PCIe" and "16" -> "Gen5 x16".
static inline void kv_pcie_link(const char *dev, const char *speed_file, const char *width_file, char *out, size_t len)
{
	char p[256], speed[64], width[64];
	kv_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", dev, speed_file);
	kv_read_line(p, speed, sizeof(speed));
	kv_fmt(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", dev, width_file);
	kv_read_line(p, width, sizeof(width));
	if (!speed[0]) {
		kv_fmt(out, len, "?");
		return;
	}
	const double gts = std::atof(speed);
	const int gen = gts >= 60 ? 6 : gts >= 30 ? 5 : gts >= 15 ? 4 : gts >= 7 ? 3 : gts >= 4 ? 2 : 1;
	kv_fmt(out, len, "Gen%d x%s", gen, width[0] ? width : "?");
}

static inline void kv_machine_probe(int device, struct kv_machine *m)
{
	std::memset(m, 0, sizeof(*m));
	struct cudaDeviceProp prop;
	KV_CK(cudaGetDeviceProperties(&prop, device));
	kv_fmt(m->gpu, sizeof(m->gpu), "%s", prop.name);
	m->sms = prop.multiProcessorCount;
	m->hbm_gib = (double)prop.totalGlobalMem / (1ull << 30);
	KV_CK(cudaDriverGetVersion(&m->driver_api));
	KV_CK(cudaRuntimeGetVersion(&m->runtime));
	char line[512];
	kv_read_line("/proc/driver/nvidia/version", line, sizeof(line));
	// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
	// the version is the first word after "Kernel Module" that starts with a digit.
	kv_fmt(m->driver, sizeof(m->driver), "?");
	const char *mod = std::strstr(line, "Kernel Module");
	for (const char *w = mod ? mod + std::strlen("Kernel Module") : NULL; w && *w;) {
		w += std::strspn(w, " \t");
		const size_t len = std::strcspn(w, " \t\n");
		if (len && *w >= '0' && *w <= '9') {
			kv_fmt(m->driver, sizeof(m->driver), "%.*s", (int)len, w);
			break;
		}
		w += len;
	}
	char bus[64];
	unsigned dom = 0, b = 0, d = 0, fn = 0;
	KV_CK(cudaDeviceGetPCIBusId(bus, sizeof(bus), device));
	if (std::sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &fn) == 4) {
		kv_fmt(m->busid, sizeof(m->busid), "%04x:%02x:%02x.%x", dom, b, d, fn);
		kv_pcie_link(m->busid, "current_link_speed", "current_link_width", m->link, sizeof(m->link));
		kv_pcie_link(m->busid, "max_link_speed", "max_link_width", m->link_max, sizeof(m->link_max));
	} else {
		kv_fmt(m->busid, sizeof(m->busid), "%s", bus);
		kv_fmt(m->link, sizeof(m->link), "?");
		kv_fmt(m->link_max, sizeof(m->link_max), "?");
	}
	kv_fmt(m->cpu, sizeof(m->cpu), "?");
	FILE *f = std::fopen("/proc/cpuinfo", "r");
	while (f && std::fgets(line, sizeof(line), f)) {
		if (!std::strncmp(line, "model name", 10)) {
			const char *c = std::strchr(line, ':');
			if (c) {
				kv_fmt(m->cpu, sizeof(m->cpu), "%s", c + 2);
				m->cpu[std::strcspn(m->cpu, "\n")] = '\0';
			}
			break;
		}
	}
	if (f)
		std::fclose(f);
	m->cores = sysconf(_SC_NPROCESSORS_ONLN);
}

static inline void kv_machine_line(FILE *out, const struct kv_machine *m)
{
	std::fprintf(out,
		     "machine: GPU %s (%d SMs, %.1f GiB), driver %s (CUDA %d.%d API), runtime %d.%d, PCIe %s %s (max %s); "
		     "CPU %s, %ld cores online\n",
		     m->gpu, m->sms, m->hbm_gib, m->driver, m->driver_api / 1000, (m->driver_api % 1000) / 10, m->runtime / 1000,
		     (m->runtime % 1000) / 10, m->busid, m->link, m->link_max, m->cpu, m->cores);
}

#endif // GIOURING_BENCH_KV_WORKLOAD_CUH
