// layerwise: a layer-by-layer KV restore pipeline, as a serving engine runs it. A Llama3-8B KV
// prefix is saved to a store over N targets, then restored into shuffled pool blocks with one
// gio_kv_load_layer() launch per layer on the I/O stream, while a stand-in "attention" kernel per
// layer, queued at once on the compute stream, waits on the device for its layer
// (gio_kv_wait_layer()) and checks every byte. The CPU only plans once and launches.
//
// Integration template: copy the order of the steps (pool by strides, P2P table on the GPU,
// store, plan, preload before any persistent kernel, save, restore with compute waiting on the
// device). Targets: GPU-executed ones (mem://hbm, mem://host?exec=gpu: their executor stands in
// for the SSDs on SMs of its own) or contexts (file://, mem://host, nvme-pci://) whose queue
// pairs the GPU fills (GIO_CTX_QP_PINNED). A context's path is gio_ctx_gpu_path()'s choice:
// peer-to-peer (the pool registered, a P2P table) or staged (a staging area the I/O kernel's
// warps copy through, where the controller cannot reach GPU memory; `path=staged` in the URI
// asks for it on any target).
//
//   layerwise [--tokens N] [--uri URI]...
//
// Default: two targets mem://host?exec=gpu (backing store in pinned host memory). Exits 77
// (skipped) without a GPU.
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <giouring/giouring.h>
#include <giouring/host/uri.h>
#include <giouring/kv/layer.cuh>
#include <giouring/target/gpu_target.h>

namespace {

#define CK(x)                                                                                              \
	do {                                                                                               \
		cudaError_t e_ = (x);                                                                      \
		if (e_ != cudaSuccess) {                                                                   \
			std::fprintf(stderr, "layerwise: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
			std::exit(1);                                                                      \
		}                                                                                          \
	} while (0)

[[noreturn]] void die(const char *what)
{
	std::fprintf(stderr, "layerwise: %s: %s\n", what, gio_last_error());
	std::exit(1);
}

const uint32_t kLayers = 32, kTokensPerBlock = 16, kHeads = 8, kDim = 128; // Llama3-8B, bf16
const uint64_t kObject = 2ull * kTokensPerBlock * kHeads * kDim * 2;       // K and V of a block: 64 KiB
const uint64_t kSecond = 1000000000ull;

__host__ __device__ uint32_t word_of(uint32_t chunk, uint32_t layer, uint64_t k)
{
	uint32_t x = (chunk + 1) * 2654435761u ^ (layer << 20) ^ (uint32_t)(k * 0x9e3779b9u);
	return x ^ (x >> 13);
}

// The engine's KV before offload: chunk c in pool block c.
__global__ void compute_kv(uint32_t *pool, uint32_t blocks)
{
	const uint64_t words = kObject / 4, n = (uint64_t)kLayers * blocks * words;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint64_t o = i / words;
		pool[i] = word_of((uint32_t)(o % blocks), (uint32_t)(o / blocks), i % words);
	}
}

// Stand-in attention of one layer: waits on the device for its layer, then reads every restored
// object (chunk c in block dst[c]) and counts wrong words.
__global__ void attention(gio_kv_io_plan v, uint32_t layer, const uint32_t *pool, const uint32_t *dst, uint32_t blocks,
			  unsigned long long *wrong, int *timed_out)
{
	__shared__ int ready;
	if (threadIdx.x == 0)
		ready = gio_kv_wait_layer(&v, layer, gio_deadline_in(30 * kSecond)) == 0;
	__syncthreads();
	if (!ready) {
		if (threadIdx.x == 0)
			*timed_out = 1;
		return;
	}
	const uint64_t words = kObject / 4;
	unsigned long long bad = 0;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (uint64_t)blocks * words;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		const uint32_t c = (uint32_t)(i / words);
		bad += pool[((uint64_t)layer * blocks + dst[c]) * words + i % words] != word_of(c, layer, i % words);
	}
	if (bad)
		atomicAdd(wrong, bad);
}

// One target: GPU-executed, or a context whose queue pairs GPU threads fill.
struct Target {
	gio_gpu_target *g = nullptr;
	gio_ctx *ctx = nullptr;
	std::vector<gio_qp *> host_qps; // context: as created (destroyed at the end)
	gio_qp *d_qps = nullptr;        // context: their structs in device memory, used by the GPU alone
	std::vector<gio_qp *> qps;      // what the plan's GPU engine uses
	gio_kv_blockdev bd{};
	gio_dptr_caps caps{};
	uint32_t nsid = 1, lba_shift = 12;
	gio_gpu_path path{};           // context: how the pool and the controller exchange data
	gio_ctx_stage *stage = nullptr; // context on the staged path: its staging area
};

void open_target(const std::string &uri, Target &t, void *pool, uint64_t bytes)
{
	gio_gpu_target_config cfg;
	if (gio_gpu_target_parse(uri.c_str(), &cfg) == 0) {
		if (gio_gpu_target_open(uri.c_str(), &t.g))
			die(uri.c_str());
		uint64_t addr;
		if (gio_gpu_target_register(t.g, pool, bytes, &addr) || gio_kv_gpu_target_blockdev(t.g, &t.bd))
			die("GPU target");
		for (uint32_t q = 0; q < t.g->cfg.queues; q++)
			t.qps.push_back(gio_gpu_target_qp(t.g, q));
		t.caps.sgls = t.g->cfg.sgls ? 1u : 0u;
		t.caps.page_bytes = 4096;
		t.caps.max_xfer_bytes = (uint64_t)4096 << t.g->cfg.mdts;
		t.nsid = GIO_TGT_NSID;
		t.lba_shift = t.g->cfg.lba_shift;
		return;
	}
	// Peer-to-peer where the controller reaches the pool (registered here), else staged.
	if (gio_ctx_open(uri.c_str(), &t.ctx) || gio_ctx_gpu_path(t.ctx, pool, bytes, &t.path))
		die(uri.c_str());
	std::printf("layerwise: %s: %s\n", uri.c_str(), t.path.why);
	// One staging ring per queue pair, 64 slots of an object each: 4 x 64 x 32 KiB = 8 MiB.
	if (t.path.path == GIO_GPU_PATH_STAGED && gio_ctx_stage_create(t.ctx, 4, 64, kObject, GIO_CTX_STAGE_GPU, &t.stage))
		die("staging area");
	std::vector<gio_qp> structs;
	for (uint32_t q = 0; q < 4; q++) {
		gio_qp *qp;
		if (gio_ctx_qp_create_ex(t.ctx, 256, GIO_CTX_QP_PINNED, &qp))
			die("pinned queue pair");
		t.host_qps.push_back(qp);
		structs.push_back(*qp); // the GPU alone uses it from now on
	}
	CK(cudaMalloc(&t.d_qps, structs.size() * sizeof(gio_qp)));
	CK(cudaMemcpy(t.d_qps, structs.data(), structs.size() * sizeof(gio_qp), cudaMemcpyHostToDevice));
	for (size_t q = 0; q < structs.size(); q++)
		t.qps.push_back(&t.d_qps[q]);
	gio_ns_info ns;
	gio_ctx_info(t.ctx, &ns);
	t.caps = *gio_ctx_dptr_caps(t.ctx);
	t.nsid = ns.nsid;
	t.lba_shift = (uint32_t)__builtin_ctz(ns.lba_bytes);
}

} // namespace

int main(int argc, char **argv)
{
	// With a CPU-executed target (--uri mem://host, file://) the executor copies into HBM on CUDA
	// streams while the attention kernels wait on the GPU: enough hardware queues that no copy sits
	// behind a waiting kernel (gio_ctx_register_device()). Before the first CUDA call.
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	uint64_t tokens = 8192;
	std::vector<std::string> uris;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string a = argv[i];
		if (a == "--tokens" && gio_uri_number(argv[i + 1], &tokens) == 0 && tokens >= kTokensPerBlock)
			continue;
		if (a == "--uri") {
			uris.push_back(argv[i + 1]);
			continue;
		}
		std::fprintf(stderr, "usage: layerwise [--tokens N] [--uri URI]...\n");
		return 2;
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA device here (the CPU engine's template is examples/hello.c)\n");
		return 77;
	}
	const uint32_t blocks = (uint32_t)(tokens / kTokensPerBlock);
	const uint64_t bytes = kObject * kLayers * blocks;
	if (uris.empty())
		for (int d = 0; d < 2; d++)
			uris.push_back("mem://host?exec=gpu&sms=4&size=" + std::to_string((bytes / 2 + (64u << 20)) >> 20 << 20));

	// 1. The pool in HBM, by strides: (layer, block, K/V, token, head, dim), bf16.
	unsigned char *pool;
	CK(cudaMalloc(&pool, bytes));
	gio_kv_pool p{};
	p.base = (uint64_t)(uintptr_t)pool;
	p.elem_bytes = 2;
	const uint32_t ext[GIO_KV_DIMS] = {kLayers, blocks, 2, kTokensPerBlock, kHeads, kDim};
	for (int d = 0; d < GIO_KV_DIMS; d++)
		p.extent[d] = ext[d];
	p.stride[GIO_KV_CHANNEL] = 1;
	p.stride[GIO_KV_HEAD] = kDim;
	p.stride[GIO_KV_TOKEN] = kDim * kHeads;
	p.stride[GIO_KV_PART] = kDim * kHeads * kTokensPerBlock;
	p.stride[GIO_KV_BLOCK] = 2 * p.stride[GIO_KV_PART];
	p.stride[GIO_KV_LAYER] = blocks * p.stride[GIO_KV_BLOCK];
	gio_kv_runs runs;
	if (gio_kv_pool_check(&p, nullptr) || gio_kv_pool_runs(&p, &runs))
		die("pool");

	// 2. Every kernel loaded before a GPU target's persistent executor starts (docs/design.md,
	// "Persistent kernels and lazy loading"), then the targets.
	if (gio_kv_layer_preload() || gio_gpu_preload((const void *)compute_kv) || gio_gpu_preload((const void *)attention))
		die("preload");
	std::vector<Target> t(uris.size());
	for (size_t d = 0; d < t.size(); d++)
		open_target(uris[d], t[d], pool, bytes);

	// 3. The P2P tables, built once on the GPU: one per target, from the pool at that target's
	// bus addresses (gio_kv_pool_bus*(): refused by name where the pool is not registered).
	const uint64_t objects = (uint64_t)kLayers * blocks;
	union gio_dptr *table;
	int *table_rc;
	CK(cudaMalloc(&table, t.size() * objects * sizeof(gio_dptr)));
	CK(cudaMallocManaged(&table_rc, sizeof(int)));
	*table_rc = 0;
	cudaStream_t io, compute;
	CK(cudaStreamCreateWithFlags(&io, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	for (size_t d = 0; d < t.size(); d++) {
		if (t[d].stage)
			continue; // staged: no P2P table, the warps copy through the slots
		gio_kv_pool bus;
		if (t[d].g ? gio_kv_pool_bus_gpu(t[d].g, &p, nullptr, &bus) : gio_kv_pool_bus(t[d].ctx, &p, nullptr, &bus))
			die("pool bus addresses");
		if (gio_kv_table_build(&bus, &runs, &t[d].caps, table + d * objects, nullptr, 0, table_rc, io))
			die("table");
	}
	CK(cudaStreamSynchronize(io));
	if (*table_rc) {
		std::fprintf(stderr, "layerwise: the P2P table refused an object (%d): the target takes no SGL?\n", *table_rc);
		return 1;
	}

	// 4. The store and a plan whose layers run on the GPU.
	std::vector<gio_kv_io_dev> devs(t.size());
	std::vector<gio_kv_blockdev> bds;
	std::vector<gio_ctx *> ctxs;
	for (size_t d = 0; d < t.size(); d++) {
		devs[d].qps = t[d].qps.data();
		devs[d].table = table + d * objects;
		devs[d].nqps = (uint32_t)t[d].qps.size();
		devs[d].nsid = t[d].nsid;
		devs[d].lba_shift = t[d].lba_shift;
		devs[d].psdt = GIO_PSDT_SGL_MPTR;
		if (t[d].stage) {
			devs[d].stage = gio_ctx_stage_io(t[d].stage);
			devs[d].table = nullptr;
			devs[d].psdt = devs[d].stage->table ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR; // the area's form
		}
		if (t[d].g)
			bds.push_back(t[d].bd);
		else
			ctxs.push_back(t[d].ctx);
	}
	if (!bds.empty() && !ctxs.empty()) {
		std::fprintf(stderr, "layerwise: give GPU-executed targets or contexts, not both\n");
		return 2;
	}
	gio_kv_store_params sp{};
	sp.layers = kLayers;
	sp.object_bytes = kObject;
	sp.pool_signature = gio_kv_pool_signature(&p, &runs);
	sp.timeout_ns = 30 * kSecond;
	gio_kv_store *store = nullptr;
	if (bds.empty() ? gio_kv_store_create(ctxs.data(), (uint32_t)ctxs.size(), &sp, &store)
			: gio_kv_store_create_blockdevs(bds.data(), (uint32_t)bds.size(), &sp, &store))
		die("store");
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_GPU;
	pp.max_requests = blocks;
	pp.blocks = blocks;
	pp.devs = devs.data();
	pp.pool = &p; // a staged device's objects are copied between its slots and this pool
	gio_kv_plan *plan = nullptr;
	if (gio_kv_plan_create(store, &pp, &plan))
		die("plan");
	for (auto &x : t)
		if (x.g && gio_gpu_target_start(x.g))
			die("start");

	// 5. Offload the prefix: chunk c (a block's 32 layers) from block c, one save_layer a layer.
	std::vector<gio_kv_u128> keys(blocks);
	std::vector<uint32_t> dst(blocks);
	for (uint32_t c = 0; c < blocks; c++) {
		keys[c] = gio_kv_u128{0x6c61796572776973ull, c}; // an engine: a hash of the chunk's tokens
		dst[c] = c;
	}
	compute_kv<<<132, 512, 0, io>>>((uint32_t *)pool, blocks);
	if (gio_kv_plan_save(plan, keys.data(), dst.data(), blocks, nullptr) != (int)blocks)
		die("plan save");
	for (uint32_t l = 0; l < kLayers; l++)
		if (gio_kv_save_layer(plan, l, io))
			die("save layer");
	CK(cudaStreamSynchronize(io));
	if (gio_kv_plan_finish(plan, nullptr, 0))
		die("save");

	// 6. Restore into shuffled blocks: plan once, queue every attention kernel (each waits on the
	// device for its layer), then one load_layer launch per layer.
	uint32_t mul = 7; // the engine's block table: chunk c -> pool block (c * mul + 1) % blocks
	while (std::gcd(mul, blocks) != 1)
		mul += 2;
	for (uint32_t c = 0; c < blocks; c++)
		dst[c] = (uint32_t)(((uint64_t)c * mul + 1) % blocks);
	uint32_t *d_dst;
	unsigned long long *wrong;
	int *timed_out;
	CK(cudaMalloc(&d_dst, blocks * sizeof(uint32_t)));
	CK(cudaMemcpy(d_dst, dst.data(), blocks * sizeof(uint32_t), cudaMemcpyHostToDevice));
	CK(cudaMallocManaged(&wrong, sizeof(*wrong)));
	CK(cudaMallocManaged(&timed_out, sizeof(*timed_out)));
	*wrong = 0;
	*timed_out = 0;
	CK(cudaMemsetAsync(pool, 0xa5, bytes, io)); // poison: a missed object cannot pass
	CK(cudaStreamSynchronize(io));
	if (gio_kv_plan_load(plan, keys.data(), dst.data(), blocks, nullptr) != (int)blocks)
		die("plan load");
	gio_kv_io_plan view;
	gio_kv_plan_view(plan, &view);
	for (uint32_t l = 0; l < kLayers; l++)
		attention<<<4, 256, 0, compute>>>(view, l, (const uint32_t *)pool, d_dst, blocks, wrong, timed_out);
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0, io));
	const uint64_t h0 = gio_host_now_ns();
	for (uint32_t l = 0; l < kLayers; l++)
		if (gio_kv_load_layer(plan, l, io))
			die("load layer");
	const uint64_t h1 = gio_host_now_ns();
	CK(cudaEventRecord(e1, io));
	CK(cudaStreamSynchronize(io));
	CK(cudaStreamSynchronize(compute));
	std::vector<gio_kv_io_result> res(blocks);
	const int frc = gio_kv_plan_finish(plan, res.data(), 0);
	float ms = 0;
	CK(cudaEventElapsedTime(&ms, e0, e1));
	std::printf("layerwise: %" PRIu64 " tokens, %u layers x %u chunks of %" PRIu64 " KiB objects (%.2f GiB) over %zu targets\n",
		    tokens, kLayers, blocks, kObject >> 10, bytes / 1073741824.0, t.size());
	std::printf("  restore: %.1f ms = %.1f GB/s; the CPU made %u layer calls in %.1f us; attention saw %llu wrong words%s\n",
		    ms, bytes / (ms * 1e6), kLayers, (h1 - h0) / 1e3, *wrong, *timed_out ? ", a layer timed out" : "");
	gio_kv_plan_stats ps{};
	if (gio_kv_plan_info(plan, &ps) == 0)
		for (uint32_t d = 0; d < ps.devices; d++)
			std::printf("  device %u: %s, %" PRIu64 " objects (%" PRIu64 " staged)\n", d,
				    gio_gpu_path_name(ps.dev[d].path), ps.dev[d].objects, ps.dev[d].staged_objects);
	const bool ok = frc == 0 && *wrong == 0 && !*timed_out;
	if (frc)
		std::printf("  finish: %d (%s)\n", frc, gio_last_error());

	if (gio_kv_plan_destroy(plan))
		die("plan destroy");
	for (auto &x : t) {
		gio_tgt_stats st{};
		if (x.g && gio_gpu_target_stop(x.g, 10000, &st))
			die("stop");
	}
	if (gio_kv_store_close(store))
		die("store close");
	for (auto &x : t) {
		if (x.g)
			gio_gpu_target_close(x.g);
		for (auto *qp : x.host_qps)
			gio_ctx_qp_destroy(x.ctx, qp, kSecond, nullptr, nullptr);
		if (x.stage && gio_ctx_stage_destroy(x.stage)) // after its queue pairs
			die("staging area destroy");
		if (x.ctx)
			gio_ctx_close(x.ctx);
		if (x.d_qps)
			CK(cudaFree(x.d_qps));
	}
	std::printf("%s\n", ok ? "PASS: every restored byte verified by the attention kernels" : "FAIL");
	return ok ? 0 : 1;
}
