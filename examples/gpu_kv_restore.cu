// gpu_kv_restore: the GPU path end to end. GPU warps store a Llama3-8B-geometry KV prefix to an
// NVMe target through giouring's queue pairs (NVM Writes), then restore it layer by layer into a
// paged, shuffled KV pool (NVM Reads, one I/O kernel launch per layer), while a "compute" kernel
// per layer waits on the device for its layer's restore and checks every byte, as attention would
// consume it. The CPU only launches kernels: O(layers) calls for the whole prefix.
//
// Integration template: copy restore_layer (the I/O kernel), the layer counters (what a compute
// kernel waits on) and the launch order (kernels preloaded before the persistent executor).
// The target is the GPU-executed software NVMe target (giouring/target/gpu_target.h): its executor
// kernel stands in for the SSDs on SMs of its own; with a real controller the same I/O kernel
// submits to the controller's queue pairs.
//
//   gpu_kv_restore [--tokens N] [--io-sms N] [--uri URI] [--seed N]
//
// Default URI: mem://host?exec=gpu (backing store in pinned host memory, rings in HBM).
// Exits 77 (skipped) without a GPU.
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/host/uri.h>
#include <giouring/target/gpu_target.h>
#include <giouring/kv/layout.h>
#include <giouring/proto/sgl_build.h>

namespace {

#define CK(x)                                                                                              \
	do {                                                                                               \
		cudaError_t e_ = (x);                                                                      \
		if (e_ != cudaSuccess) {                                                                   \
			std::fprintf(stderr, "gpu_kv_restore: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
			std::exit(1);                                                                      \
		}                                                                                          \
	} while (0)

const uint64_t kTimeoutNs = 30ull * 1000000000ull; // every device wait's deadline

// Word k of object (layer, kv, block): distinct for every object and offset.
__device__ uint4 kv_word(uint32_t layer, uint32_t kv, uint32_t block, uint32_t k)
{
	return make_uint4(layer << 16 | kv << 15 | block, k, 0xc0ffee00u ^ layer, block * 2654435761u ^ k);
}

// Object i of a layer is (kv = i / blocks, block = i % blocks); on the device it lives at byte
// ((layer * 2 + kv) * blocks + block) * obj_bytes (layer-major store layout).

// The I/O kernel: warp w submits the Reads (or Writes) of 32 objects at a time to queue pair
// w % nqps with one reservation and one doorbell, waits for them reaping 32 CQEs at a time, then
// counts them in the layer's counter (release: the data before the count).
__global__ void restore_layer(gio_qp *qps, uint32_t nqps, unsigned char *pool_layer, const uint32_t *perm,
			      uint32_t blocks, uint32_t obj_bytes, uint32_t layer, uint32_t lba_shift, int write,
			      const unsigned char *src_layer, uint32_t *layer_done, unsigned long long *failures)
{
	const uint32_t lane = threadIdx.x & 31u;
	const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u, nwarps = gridDim.x * blockDim.x / 32u;
	gio_qp *qp = &qps[warp % nqps];
	const uint64_t deadline = gio_deadline_in(kTimeoutNs);
	const uint32_t objs = 2 * blocks, nlb = obj_bytes >> lba_shift;
	for (uint32_t base = warp * 32u; base < objs; base += nwarps * 32u) {
		const uint32_t i = base + lane;
		const int active = i < objs;
		gio_sqe sqe;
		uint32_t cid = 0;
		uint16_t st = 0;
		if (active) {
			const uint32_t kv = i / blocks, b = i % blocks;
			const uint64_t slba = ((uint64_t)(layer * 2 + kv) * blocks + b) * nlb;
			// Store: from the engine's contiguous layer buffer; restore: into the shuffled pool.
			const unsigned char *mem = write ? src_layer + (uint64_t)i * obj_bytes
							 : pool_layer + ((uint64_t)kv * blocks + perm[b]) * obj_bytes;
			if (write)
				gio_prep_write(&sqe, GIO_TGT_NSID, slba, nlb);
			else
				gio_prep_read(&sqe, GIO_TGT_NSID, slba, nlb);
			gio_sqe_set_sgl_data(&sqe, (uint64_t)(uintptr_t)mem, obj_bytes);
		}
		int rc = gio_submit_warp(qp, &sqe, 0, 0, active, deadline, &cid);
		if (rc == 0)
			rc = gio_wait_warp(qp, cid, active, deadline, &st);
		if (active && rc)
			atomicAdd(failures, 1ull);
		const uint32_t n = (uint32_t)__popc(__ballot_sync(0xffffffffu, active));
		if (lane == 0)
			gio_fetch_add_in(GIO_SCOPE_GPU, layer_done, n); // acq_rel: this warp's data first
	}
}

// The "compute" kernel of a layer: waits on the device for the layer's restore, then reads the
// pool (attention would) and counts wrong words. One block per layer, on another stream.
__global__ void consume_layer(const unsigned char *pool_layer, const uint32_t *perm, uint32_t blocks, uint32_t obj_bytes,
			      uint32_t layer, const uint32_t *layer_done, unsigned long long *wrong, int *timed_out)
{
	__shared__ int ready;
	if (threadIdx.x == 0) {
		const uint64_t deadline = gio_deadline_in(kTimeoutNs);
		uint32_t spins = 0;
		// Acquire: the restored data is read after the count that covers it.
		while (gio_load_acquire_in(GIO_SCOPE_GPU, layer_done) < 2 * blocks && !gio_deadline_passed(deadline))
			gio_backoff(&spins);
		ready = gio_load_acquire_in(GIO_SCOPE_GPU, layer_done) >= 2 * blocks;
		if (!ready)
			*timed_out = 1;
	}
	__syncthreads();
	if (!ready)
		return;
	unsigned long long bad = 0;
	const uint32_t words = obj_bytes / 16;
	for (uint64_t w = threadIdx.x; w < 2ull * blocks * words; w += blockDim.x) {
		const uint32_t i = (uint32_t)(w / words), k = (uint32_t)(w % words);
		const uint32_t kv = i / blocks, b = i % blocks;
		const uint4 v = ((const uint4 *)(pool_layer + ((uint64_t)kv * blocks + perm[b]) * obj_bytes))[k];
		const uint4 e = kv_word(layer, kv, b, k);
		bad += v.x != e.x || v.y != e.y || v.z != e.z || v.w != e.w;
	}
	if (bad)
		atomicAdd(wrong, bad);
}

// The engine's KV of one layer before offload (contiguous, object i at i * obj_bytes).
__global__ void fill_layer(unsigned char *dst, uint32_t blocks, uint32_t obj_bytes, uint32_t layer)
{
	const uint32_t words = obj_bytes / 16;
	for (uint64_t w = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; w < 2ull * blocks * words;
	     w += (uint64_t)gridDim.x * blockDim.x) {
		const uint32_t i = (uint32_t)(w / words);
		((uint4 *)dst)[w] = kv_word(layer, i / blocks, i % blocks, (uint32_t)(w % words));
	}
}

double now_s()
{
	return gio_host_now_ns() / 1e9;
}

} // namespace

int main(int argc, char **argv)
{
	uint64_t tokens = 16384, io_sms = 8, seed = 1;
	std::string uri;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		if (a == "-h" || a == "--help") {
			std::printf("usage: gpu_kv_restore [--tokens N] [--io-sms N] [--uri URI] [--seed N]\n");
			return 0;
		}
		if (i + 1 >= argc) {
			std::fprintf(stderr, "gpu_kv_restore: %s needs a value\n", a.c_str());
			return 2;
		}
		const char *v = argv[++i];
		uint64_t *dst = a == "--tokens" ? &tokens : a == "--io-sms" ? &io_sms : a == "--seed" ? &seed : nullptr;
		if (a == "--uri") {
			uri = v;
		} else if (!dst || gio_uri_number(v, dst) || *dst == 0) {
			std::fprintf(stderr, "gpu_kv_restore: bad option %s %s\n", a.c_str(), v);
			return 2;
		}
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA device here (the CPU path is examples/kv_restore.c)\n");
		return 77;
	}
	const gio_kv_geometry geom = {32, 8, 128, 2, 16}; // Llama3-8B: layers, KV heads, head dim, bf16, block
	const uint32_t obj = (uint32_t)gio_kv_object_bytes(&geom);
	const uint32_t blocks = (uint32_t)((tokens + geom.block_tokens - 1) / geom.block_tokens);
	const uint64_t layer_bytes = 2ull * blocks * obj, total = layer_bytes * geom.layers;
	if (uri.empty())
		uri = "mem://host?exec=gpu&size=" + std::to_string(total) + "&queues=256&depth=256&sms=16&warps=16";

	// 1. The target, the pool (registered for data pointers), the per-layer counters.
	gio_gpu_target *g = nullptr;
	if (gio_gpu_target_open(uri.c_str(), &g)) {
		std::fprintf(stderr, "gpu_kv_restore: %s\n", gio_last_error());
		return 1;
	}
	if (g->cfg.size < total) {
		std::fprintf(stderr, "gpu_kv_restore: the target holds %" PRIu64 " bytes, the prefix needs %" PRIu64 "\n",
			     g->cfg.size, total);
		return 2;
	}
	unsigned char *pool, *staging;
	uint32_t *perm_d, *done;
	unsigned long long *counters; // [0] failed commands, [1] wrong words
	int *timed_out;
	CK(cudaMalloc(&pool, total));
	CK(cudaMalloc(&staging, layer_bytes));
	CK(cudaMalloc(&perm_d, blocks * sizeof(uint32_t)));
	CK(cudaMalloc(&done, 2 * geom.layers * sizeof(uint32_t)));
	CK(cudaMallocManaged(&counters, 2 * sizeof(unsigned long long)));
	CK(cudaMallocManaged(&timed_out, sizeof(int)));
	CK(cudaMemset(done, 0, 2 * geom.layers * sizeof(uint32_t)));
	CK(cudaMemset(pool, 0xa5, total)); // poison: a block the restore misses cannot pass the check
	counters[0] = counters[1] = 0;
	*timed_out = 0;
	std::vector<uint32_t> perm(blocks); // the engine's block table: prefix block b -> pool block
	for (uint32_t b = 0; b < blocks; b++)
		perm[b] = b;
	uint64_t s = seed;
	for (uint32_t b = blocks; b > 1; b--) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		std::swap(perm[b - 1], perm[(s >> 33) % b]);
	}
	CK(cudaMemcpy(perm_d, perm.data(), blocks * sizeof(uint32_t), cudaMemcpyHostToDevice));
	uint64_t addr;
	if (gio_gpu_target_register(g, pool, total, &addr) || gio_gpu_target_register(g, staging, layer_bytes, &addr)) {
		std::fprintf(stderr, "gpu_kv_restore: %s\n", gio_last_error());
		return 1;
	}

	// 2. Every kernel loaded before the persistent executor starts (docs/design.md, "Persistent kernels and lazy loading"); the I/O
	// kernel takes whole SMs so --io-sms counts SMs.
	size_t smem = 0;
	if (gio_gpu_preload((const void *)restore_layer) || gio_gpu_preload((const void *)consume_layer) ||
	    gio_gpu_preload((const void *)fill_layer) || gio_gpu_one_block_per_sm((const void *)restore_layer, &smem) ||
	    gio_gpu_target_start(g)) {
		std::fprintf(stderr, "gpu_kv_restore: %s\n", gio_last_error());
		return 1;
	}
	cudaStream_t io, compute;
	CK(cudaStreamCreateWithFlags(&io, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));

	// 3. Store: each layer's KV (made on the GPU) written through the rings.
	for (uint32_t l = 0; l < geom.layers; l++) {
		fill_layer<<<64, 256, 0, io>>>(staging, blocks, obj, l);
		restore_layer<<<(uint32_t)io_sms, 1024, smem, io>>>(g->qps, g->cfg.queues, pool, perm_d, blocks, obj, l,
								     g->cfg.lba_shift, 1, staging, &done[geom.layers + l],
								     &counters[0]);
	}
	CK(cudaStreamSynchronize(io));

	// 4. Restore: one I/O kernel per layer on the I/O stream; the compute stream's kernel of the
	// same layer waits for it on the device. The CPU returns from 2 x layers launches at once.
	const double t0 = now_s();
	CK(cudaEventRecord(e0, io));
	for (uint32_t l = 0; l < geom.layers; l++) {
		restore_layer<<<(uint32_t)io_sms, 1024, smem, io>>>(g->qps, g->cfg.queues, pool + l * layer_bytes, perm_d, blocks,
								     obj, l, g->cfg.lba_shift, 0, nullptr, &done[l], &counters[0]);
		consume_layer<<<1, 512, 0, compute>>>(pool + l * layer_bytes, perm_d, blocks, obj, l, &done[l], &counters[1],
						       timed_out);
	}
	CK(cudaEventRecord(e1, io));
	const double t_issue = now_s() - t0;
	CK(cudaStreamSynchronize(io));
	CK(cudaStreamSynchronize(compute));
	float ms = 0;
	CK(cudaEventElapsedTime(&ms, e0, e1));
	gio_tgt_stats st{};
	if (gio_gpu_target_stop(g, 10000, &st)) {
		std::fprintf(stderr, "gpu_kv_restore: %s\n", gio_last_error());
		return 1;
	}
	const bool ok = counters[0] == 0 && counters[1] == 0 && !*timed_out && st.errors == 0;
	std::printf("gpu_kv_restore: %" PRIu64 " tokens, %u layers x %u objects of %u KiB (%.2f GiB), pool blocks shuffled\n",
		    tokens, geom.layers, 2 * blocks, obj >> 10, total / 1073741824.0);
	std::printf("  target: %s\n", uri.c_str());
	std::printf("  store + restore: %llu NVMe commands, %llu failed; restore %.1f ms = %.1f GB/s with %u I/O SMs; "
		    "CPU issued %u launches in %.2f ms\n",
		    (unsigned long long)st.commands, counters[0], ms, total / (ms * 1e6), (unsigned)io_sms, 2 * geom.layers,
		    t_issue * 1e3);
	std::printf("  compute kernels saw %llu wrong 16-byte words%s\n", counters[1], *timed_out ? ", and a layer timed out" : "");
	std::printf("%s\n", ok ? "PASS: every restored byte verified on the GPU" : "FAIL");
	gio_gpu_target_close(g);
	return ok ? 0 : 1;
}
