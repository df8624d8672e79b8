// baselines_memory.cuh: the KV restore baselines that read the store from pinned host memory,
// each a path of runner.cuh measured beside the library's in the same process and run:
//
// | path        | what the CPU does per restore                                | lands shuffled |
// | ----------- | ------------------------------------------------------------ | -------------- |
// | bulk        | one cudaMemcpyAsync of every byte (the PCIe limit)           | no (verified unshuffled) |
// | per-object  | one cudaMemcpyAsync per object (LMCache DRAM tier)           | yes |
// | batch       | one cudaMemcpyBatchAsync per layer                           | yes |
// | gather-Nsm  | one kernel launch per layer; N SMs read mapped pinned memory | yes |
#ifndef GIOURING_BENCH_COMMON_BASELINES_MEMORY_CUH
#define GIOURING_BENCH_COMMON_BASELINES_MEMORY_CUH

#include <algorithm>
#include <cstring>
#include <vector>

#include "check.cuh"
#include "runner.cuh"
#include "workload.cuh"

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

// Loads the gather kernel now (the lazy-loading trap: workload.cuh, kv_workload_load_kernels).
static inline void kv_baselines_memory_load_kernels(void)
{
	struct cudaFuncAttributes a;
	KV_CK(cudaFuncGetAttributes(&a, kv_gather_layer_kernel));
}

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
				  NULL, kv_issue_bulk, NULL, KV_VERIFY_IDENTITY, 0u, 1u, NULL};
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
				  NULL, kv_issue_per_object, NULL, KV_VERIFY_SHUFFLED, 0u, kv_total_objects(w), NULL};
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
				  NULL, kv_issue_batch, &a, KV_VERIFY_SHUFFLED, 0u, w->n_layers, NULL};
	return kv_measure(w, r, &p, out);
#endif
}

// gather: a kernel per layer, `sms` blocks of KV_GATHER_THREADS threads reading the mapped pinned
// store (PCIe reads by the SMs) and writing the shuffled pool.
struct kv_gather_arg {
	uint32_t blocks;
	size_t smem; // dynamic shared memory that pins the kernel to one block per SM
};

static inline int kv_issue_gather(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	const struct kv_gather_arg *g = (const struct kv_gather_arg *)arg;
	const uint32_t wpo = (uint32_t)(w->obj_bytes / 16), layer_words = (uint32_t)(kv_layer_bytes(w) / 16);
	for (uint32_t l = 0; l < w->n_layers; l++) {
		kv_gather_layer_kernel<<<g->blocks, KV_GATHER_THREADS, g->smem, r->stream>>>(
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
	struct kv_gather_arg a = {sms, 0};
	int per_sm = 0, smem_sm = 0, smem_block = 0;
	KV_CK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, r->device));
	KV_CK(cudaDeviceGetAttribute(&smem_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, r->device));
	a.smem = std::min((size_t)smem_sm / 2 + 1024, (size_t)smem_block);
	KV_CK(cudaFuncSetAttribute(kv_gather_layer_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)a.smem));
	KV_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kv_gather_layer_kernel, KV_GATHER_THREADS, a.smem));
	kv_fmt(note, sizeof(note),
		      "GPU gather from mapped pinned memory, %u blocks x %d threads (%d block/SM max), a launch per layer", sms,
		      KV_GATHER_THREADS, per_sm);
	const struct kv_path p = {name, note, NULL, kv_issue_gather, &a, KV_VERIFY_SHUFFLED, sms, w->n_layers, NULL};
	return kv_measure(w, r, &p, out);
}

#endif // GIOURING_BENCH_COMMON_BASELINES_MEMORY_CUH
