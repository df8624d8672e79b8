// Per-layer save and load through the library's I/O kernel (giouring/kv/layer.cuh) over a store
// of 4 CPU-executed memory targets driven from the GPU (GIO_CTX_QP_PINNED queue pairs), a pool in
// HBM described by strides, its P2P tables built on the GPU. A compute kernel per layer waits on
// the device for its layer and checks every byte; a stream-ordered wait gates another stream; a
// device failing mid-layer fails only its request, with the NVMe status; the host's time per
// layer call is printed. Both layouts: K and V together (one run an object) and apart (two runs,
// one command with an SGL segment list in pinned host memory), and a PRP table built on the GPU
// for targets without SGLs, with one command per run where the runs start inside pages. Staged
// (docs/staged.md): the same checks with the pool never registered with the targets, every
// object moved by the I/O kernel's warps through staging slots in pinned host memory
// (gio_ctx_stage_create() with GIO_CTX_STAGE_GPU), rings of 32 slots, far fewer than a layer's
// objects, so every slot is reused; a command whose completion never comes leaves its slot LOST;
// and the same with the copy engine moving the loads' objects (gio_kv_plan_params::mover), with its
// warps polling their CQs or told of completions by words in GPU memory (::completions).
#include <cuda_runtime.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/host/path.h>
#include <giouring/host/stage.h>
#include <giouring/kv/layer.cuh>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>
#include <giouring/proto/status.h>

#include "gpu_test.cuh"

namespace {

const uint64_t kSecond = 1000000000ull;
const uint32_t kDevs = 4, kQps = 4, kDepth = 256;
const uint32_t kLayers = 8, kBlocks = 256, kTokens = 16, kHeads = 2, kChannels = 64, kElem = 2;
const uint64_t kObject = 2ull * kTokens * kHeads * kChannels * kElem; // 8 KiB
const uint32_t kChunks = 200;                                         // stored; the other 56 blocks are misses

__host__ __device__ uint32_t want_word(uint32_t chunk, uint32_t layer, uint32_t k)
{
	uint32_t x = (chunk + 1) * 2654435761u ^ (layer << 24) ^ (k * 0x9e3779b9u);
	x ^= x >> 15;
	return x * 0x2c1b3c6du;
}

// Pool block of chunk i on the load, and the chunk a block holds (or -1: a miss's block).
__host__ __device__ uint32_t load_block(uint32_t i)
{
	return (i * 77u + 13u) % kBlocks;
}

struct Layout {
	gio_kv_pool pool; // base: the HBM pool
	gio_kv_runs runs;
};

// Byte offset in object order k (4-byte words) -> address, through the runs.
__device__ uint32_t *word_at(const Layout &lay, uint32_t layer, uint32_t block, uint64_t k)
{
	const uint64_t byte = k * 4, r = byte / lay.runs.run_bytes;
	return (uint32_t *)(gio_kv_run_addr(&lay.pool, &lay.runs, layer, block, (uint32_t)r) + byte % lay.runs.run_bytes);
}

__global__ void fill_pool(Layout lay, uint32_t layer)
{
	const uint64_t words = kObject / 4;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (uint64_t)kChunks * words;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		const uint32_t c = (uint32_t)(i / words), k = (uint32_t)(i % words);
		*word_at(lay, layer, c, k) = want_word(c, layer, k); // saved from block c
	}
}

struct Check {
	unsigned long long wrong, poisoned_wrong;
	int timed_out, gated_ok;
	uint64_t waited_ns; // gio_kv_wait_layer_timed_on()'s stall of its stream
};

// The compute kernel of a layer: waits on the device for the layer, then checks every object
// the load planned (and that a miss's block stayed poisoned).
__global__ void consume(gio_kv_io_plan v, Layout lay, uint32_t layer, const int *chunk_of_block, Check *c)
{
	__shared__ int ready;
	if (threadIdx.x == 0)
		ready = gio_kv_wait_layer(&v, layer, gio_deadline_in(30 * kSecond)) == 0;
	__syncthreads();
	if (!ready) {
		if (threadIdx.x == 0)
			atomicExch(&c->timed_out, 1);
		return;
	}
	const uint64_t words = kObject / 4;
	unsigned long long bad = 0, pbad = 0;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (uint64_t)kBlocks * words;
	     i += (uint64_t)gridDim.x * blockDim.x) {
		const uint32_t b = (uint32_t)(i / words), k = (uint32_t)(i % words);
		const uint32_t got = *word_at(lay, layer, b, k);
		const int chunk = chunk_of_block[b];
		if (chunk == -2) // not checked: a failed object whose other commands completed
			continue;
		if (chunk < 0)
			pbad += got != 0xa5a5a5a5u;
		else
			bad += got != want_word((uint32_t)chunk, layer, k);
	}
	if (bad)
		atomicAdd(&c->wrong, bad);
	if (pbad)
		atomicAdd(&c->poisoned_wrong, pbad);
}

// Runs after gio_kv_wait_layer_on() on its stream: the layer must be finished by then.
__global__ void gated(gio_kv_io_plan v, uint32_t layer, Check *c)
{
	c->gated_ok = gio_kv_io_layer_finished(&v, layer);
}

struct Rig {
	std::vector<gio_ctx *> ctx;
	gio_kv_store *store = nullptr;
	gio_kv_plan *plan = nullptr;
	unsigned char *pool = nullptr;
	gio_sgl_desc *segs = nullptr; // pinned, mapped: the segment lists of two-run objects
	gio_qp *d_qps = nullptr;
	union gio_dptr *d_tables = nullptr;
	std::vector<gio_qp *> dev_qp_ptrs;
	std::vector<gio_qp *> host_qps;
	std::vector<gio_ctx_stage *> stages; // staged: one area per device
	Layout lay{};
	uint64_t pool_bytes = 0;
	bool ok = false;
};

// pad: elements after each block's part where K and V are apart (runs that start inside pages).
bool setup(Rig &r, bool kv_apart, bool prp, uint64_t pad, cudaStream_t s, uint32_t io_warps, bool staged,
	   uint32_t move_depth, uint32_t mover, uint32_t completions)
{
	const uint64_t pool_bytes = (uint64_t)kLayers * kBlocks * (kObject + 2 * pad * kElem);
	r.pool_bytes = pool_bytes;
	CK(cudaMalloc(&r.pool, pool_bytes));
	// The pool: (L, B, part, T, H, C) or (L, part, B, T, H, C).
	gio_kv_pool &p = r.lay.pool;
	std::memset(&p, 0, sizeof(p));
	p.base = (uint64_t)(uintptr_t)r.pool;
	p.base_mode = GIO_KV_BASE_ONE;
	p.elem_bytes = kElem;
	const uint32_t ext[GIO_KV_DIMS] = {kLayers, kBlocks, 2, kTokens, kHeads, kChannels};
	for (int d = 0; d < GIO_KV_DIMS; d++)
		p.extent[d] = ext[d];
	const uint64_t h = kChannels, t = h * kHeads, inner = t * kTokens;
	p.stride[GIO_KV_CHANNEL] = 1;
	p.stride[GIO_KV_HEAD] = h;
	p.stride[GIO_KV_TOKEN] = t;
	p.stride[GIO_KV_PART] = kv_apart ? (inner + pad) * kBlocks : inner;
	p.stride[GIO_KV_BLOCK] = kv_apart ? inner + pad : 2 * inner;
	p.stride[GIO_KV_LAYER] = 2 * (inner + pad) * kBlocks;
	EXPECT(gio_kv_pool_check(&p, nullptr) == 0 && gio_kv_pool_runs(&p, &r.lay.runs) == 0, "pool refused");
	EXPECT(r.lay.runs.nruns == (kv_apart ? 2u : 1u), "runs %u", r.lay.runs.nruns);

	for (uint32_t d = 0; d < kDevs; d++) {
		gio_ctx *c = nullptr;
		int rc = gio_ctx_open(prp ? "mem://host?size=32M&threads=2&idle_us=20&dptr=prp" : "mem://host?size=32M&threads=2&idle_us=20",
				      &c);
		EXPECT(rc == 0, "open: %s", gio_last_error());
		if (rc)
			return false;
		r.ctx.push_back(c);
		if (staged)
			continue; // the target never sees the pool: only the staging slots
		uint64_t addr = 0;
		rc = gio_ctx_register_device(c, r.pool, pool_bytes, &addr);
		EXPECT(rc == 0 && addr == (uint64_t)(uintptr_t)r.pool, "register_device: %s", gio_last_error());
	}
	gio_kv_store_params sp{};
	sp.layers = kLayers;
	sp.object_bytes = kObject;
	sp.pool_signature = gio_kv_pool_signature(&p, &r.lay.runs);
	// Staged: the lost completion's wait, and that of every later group that wraps onto its LOST
	// slot (about ten a run): 1 s each made this test take 24 s on the H200. A group of 32
	// commands of 64 KiB takes milliseconds here, so 300 ms still leaves two orders of margin.
	sp.timeout_ns = staged ? 300000000ull : 10 * kSecond;
	int rc = gio_kv_store_create(r.ctx.data(), kDevs, &sp, &r.store);
	EXPECT(rc == 0, "store: %s", gio_last_error());
	if (rc)
		return false;

	// Queue pairs for the GPU: pinned, their structs copied to device memory.
	std::vector<gio_qp> qps;
	for (uint32_t d = 0; d < kDevs; d++)
		for (uint32_t q = 0; q < kQps; q++) {
			gio_qp *qp = nullptr;
			rc = gio_ctx_qp_create_ex(r.ctx[d], kDepth, GIO_CTX_QP_PINNED, &qp);
			EXPECT(rc == 0, "pinned qp: %s", gio_last_error());
			if (rc)
				return false;
			r.host_qps.push_back(qp);
			qps.push_back(*qp);
		}
	CK(cudaMalloc(&r.d_qps, qps.size() * sizeof(gio_qp)));
	CK(cudaMemcpy(r.d_qps, qps.data(), qps.size() * sizeof(gio_qp), cudaMemcpyHostToDevice));
	for (size_t i = 0; i < qps.size(); i++)
		r.dev_qp_ptrs.push_back(&r.d_qps[i]);

	// The P2P tables, one per device (their bus addresses are the same here), built on the GPU.
	// PRP: an entry per object, or one per run where PRPs cannot chain the runs (then a run of
	// 4 KiB starting 512 bytes into a page takes PRP1 and PRP2, no list).
	const uint32_t cmds = prp ? gio_kv_table_prp_cmds(&p, &r.lay.runs, gio_ctx_dptr_caps(r.ctx[0])) : 1;
	EXPECT(cmds == (prp && pad ? 2u : 1u), "%u PRP commands an object", cmds);
	const uint64_t objects = (uint64_t)kLayers * kBlocks, entries = objects * cmds;
	CK(cudaMalloc(&r.d_tables, kDevs * entries * sizeof(gio_dptr)));
	const uint64_t list_stride = cmds > 1 ? 0 : gio_prp_object_alloc_bytes(kObject, 4096, GIO_PRP_CHUNK_LINUX);
	if (prp && list_stride) {
		CK(cudaHostAlloc(&r.segs, kDevs * entries * list_stride, cudaHostAllocMapped));
		for (uint32_t d = 0; d < kDevs; d++) {
			rc = gio_ctx_register(r.ctx[d], (char *)r.segs + d * entries * list_stride, entries * list_stride, nullptr);
			EXPECT(rc == 0, "register lists: %s", gio_last_error());
		}
	} else if (kv_apart && !prp) {
		CK(cudaHostAlloc(&r.segs, kDevs * objects * 2 * sizeof(gio_sgl_desc), cudaHostAllocMapped));
		for (uint32_t d = 0; d < kDevs; d++) {
			rc = gio_ctx_register(r.ctx[d], r.segs + d * objects * 2, objects * 2 * sizeof(gio_sgl_desc), nullptr);
			EXPECT(rc == 0, "register segs: %s", gio_last_error());
		}
	}
	int *d_rc;
	CK(cudaMallocManaged(&d_rc, sizeof(int)));
	*d_rc = 0;
	std::vector<gio_kv_io_dev> devs(kDevs);
	for (uint32_t d = 0; d < kDevs; d++) {
		if (prp) {
			char *lists = r.segs ? (char *)r.segs + d * entries * list_stride : nullptr;
			rc = gio_kv_table_build_prp(&p, &r.lay.runs, gio_ctx_dptr_caps(r.ctx[d]), r.d_tables + d * entries, lists,
						    (uint64_t)(uintptr_t)lists, list_stride, d_rc, s);
		} else {
			gio_sgl_desc *seg = kv_apart ? r.segs + d * objects * 2 : nullptr;
			rc = gio_kv_table_build(&p, &r.lay.runs, gio_ctx_dptr_caps(r.ctx[d]), r.d_tables + d * objects, seg,
						(uint64_t)(uintptr_t)seg, d_rc, s);
		}
		EXPECT(rc == 0, "table build: %s", gio_last_error());
		gio_ns_info info;
		gio_ctx_info(r.ctx[d], &info);
		devs[d].qps = &r.dev_qp_ptrs[d * kQps];
		devs[d].table = r.d_tables + d * entries;
		devs[d].cmds = cmds;
		devs[d].nqps = kQps;
		devs[d].nsid = info.nsid;
		devs[d].lba_shift = (uint32_t)__builtin_ctz(info.lba_bytes);
		devs[d].psdt = prp ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR;
		if (staged) {
			gio_ctx_stage *a = nullptr;
			rc = gio_ctx_stage_create(r.ctx[d], kQps, GIO_KV_IO_GROUP_MAX, kObject / cmds, GIO_CTX_STAGE_GPU, &a);
			EXPECT(rc == 0, "staging area: %s", gio_last_error());
			if (rc)
				return false;
			r.stages.push_back(a);
			devs[d].stage = gio_ctx_stage_io(a);
			devs[d].table = nullptr;
		}
	}
	EXPECT(sync_within(s, 30), "table build hung");
	EXPECT(*d_rc == 0, "table build: object refused %d", *d_rc);
	CK(cudaFree(d_rc));
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_GPU;
	pp.max_requests = kBlocks;
	pp.blocks = kBlocks;
	pp.io_ctas = 4;
	pp.io_warps = io_warps;
	pp.devs = devs.data();
	pp.pool = staged ? &p : nullptr;
	pp.move_depth = move_depth;
	pp.mover = mover;
	pp.completions = completions;
	rc = gio_kv_plan_create(r.store, &pp, &r.plan);
	EXPECT(rc == 0, "plan: %s", gio_last_error());
	r.ok = rc == 0;
	return r.ok;
}

void teardown(Rig &r)
{
	EXPECT(gio_kv_plan_destroy(r.plan) == 0, "plan destroy: %s", gio_last_error());
	EXPECT(gio_kv_store_close(r.store) == 0, "store close: %s", gio_last_error());
	// The rings' indices live in the GPU's copies: back over the host's before the destroy reaps
	// what is left (a dropped completion's command, aborted by the Delete SQ).
	std::vector<gio_qp> back(r.host_qps.size());
	CK(cudaMemcpy(back.data(), r.d_qps, back.size() * sizeof(gio_qp), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < r.host_qps.size(); i++)
		*r.host_qps[i] = back[i];
	for (size_t i = 0; i < r.host_qps.size(); i++)
		EXPECT(gio_ctx_qp_destroy(r.ctx[i / kQps], r.host_qps[i], 5 * kSecond, nullptr, nullptr) >= 0, "qp destroy: %s",
		       gio_last_error());
	for (auto *a : r.stages) // after the queue pairs: a LOST slot's command is gone with them
		EXPECT(gio_ctx_stage_destroy(a) == 0, "staging area destroy: %s", gio_last_error());
	for (auto *c : r.ctx)
		EXPECT(gio_ctx_close(c) == 0, "close: %s", gio_last_error());
	CK(cudaFree(r.d_qps));
	CK(cudaFree(r.d_tables));
	CK(cudaFree(r.pool));
	if (r.segs)
		CK(cudaFreeHost(r.segs));
}

// sms: the loads' SM budget (gio_kv_layer_launch()); 0: the plan's blocks.
// move_depth: the staged mover's loads in flight a lane (gio_kv_plan_params::move_depth; 0: the default).
// mover: who moves a staged load's objects (gio_kv_plan_params::mover); completions: how its
// warps learn of their completions (gio_kv_plan_params::completions).
void run(bool kv_apart, bool prp, uint64_t pad = 0, uint32_t io_warps = 8, uint32_t sms = 0, bool staged = false,
	 uint32_t move_depth = 0, uint32_t mover = GIO_KV_MOVER_SM, uint32_t completions = GIO_KV_COMPLETIONS_POLL)
{
	std::printf("== K and V %s%s, %s %s, %u warps a block%s, move_depth %u%s%s\n", kv_apart ? "apart (two runs)" : "together (one run)",
		    pad ? " starting inside pages" : "", prp ? pad ? "PRP (a target without SGLs), a command per run" : "PRP (a target without SGLs)" : "SGL",
		    staged ? "staged through 32 slots per queue pair" : "table", io_warps, sms ? ", loads on one SM (an SM budget)" : "",
		    move_depth, mover == GIO_KV_MOVER_COPY_ENGINE ? ", loads moved by the copy engine" : "",
		    completions == GIO_KV_COMPLETIONS_MIRROR ? ", completions mirrored into GPU memory" : "");
	cudaStream_t io, compute, other;
	CK(cudaStreamCreateWithFlags(&io, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
	Rig r;
	if (!setup(r, kv_apart, prp, pad, io, io_warps, staged, move_depth, mover, completions)) {
		std::printf("   setup failed\n");
		return;
	}
	const uint64_t pool_bytes = r.pool_bytes;

	// Save: chunk c from block c, one save_layer per layer.
	std::vector<gio_kv_u128> keys(kBlocks);
	std::vector<uint32_t> blocks(kBlocks);
	for (uint32_t i = 0; i < kBlocks; i++)
		keys[i] = gio_kv_u128{0x51ed270b27d6b3c5ull * (i + 1), i < kChunks ? i : 100000u + i};
	for (uint32_t i = 0; i < kChunks; i++)
		blocks[i] = i;
	for (uint32_t l = 0; l < kLayers; l++)
		fill_pool<<<64, 256, 0, io>>>(r.lay, l);
	int n = gio_kv_plan_save(r.plan, keys.data(), blocks.data(), kChunks, nullptr);
	EXPECT(n == (int)kChunks, "plan save: %d %s", n, gio_last_error());
	double call_ns = 0;
	for (uint32_t l = 0; l < kLayers; l++) {
		const uint64_t t0 = gio_host_now_ns();
		const int rc = gio_kv_save_layer(r.plan, l, io);
		call_ns += (double)(gio_host_now_ns() - t0);
		EXPECT(rc == 0, "save layer %u: %d %s", l, rc, gio_last_error());
	}
	std::vector<gio_kv_io_result> res(kBlocks);
	int rc = gio_kv_plan_finish(r.plan, res.data(), 30 * kSecond);
	EXPECT(rc == 0, "save finish: %d %s (first request rc %d status 0x%x)", rc, gio_last_error(), res[0].rc, res[0].status);
	std::printf("   save: %u chunks x %u layers, host time per gio_kv_save_layer() %.1f us (mean of %u)\n", kChunks,
		    kLayers, call_ns / kLayers / 1e3, kLayers);
	gio_kv_store_stats st;
	gio_kv_store_info(r.store, &st);
	EXPECT(st.valid == kChunks, "valid %" PRIu64, st.valid);

	// Load: chunk i into block load_block(i), keys beyond kChunks miss; compute kernels wait.
	std::vector<int> chunk_of_block(kBlocks, -1);
	for (uint32_t i = 0; i < kBlocks; i++) {
		blocks[i] = load_block(i);
		if (i < kChunks)
			chunk_of_block[blocks[i]] = (int)i;
	}
	int *d_chunk_of_block;
	Check *chk;
	CK(cudaMalloc(&d_chunk_of_block, kBlocks * sizeof(int)));
	CK(cudaMemcpy(d_chunk_of_block, chunk_of_block.data(), kBlocks * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMallocManaged(&chk, sizeof(Check)));
	std::memset(chk, 0, sizeof(*chk));
	CK(cudaMemsetAsync(r.pool, 0xa5, pool_bytes, io));
	std::vector<uint8_t> hit(kBlocks);
	n = gio_kv_plan_load(r.plan, keys.data(), blocks.data(), kBlocks, hit.data());
	EXPECT(n == (int)kChunks, "plan load: %d hits %s", n, gio_last_error());
	gio_kv_io_plan v;
	EXPECT(gio_kv_plan_view(r.plan, &v) == 0, "view");
	// Compute kernels queued first: they wait on the device, not on the stream.
	for (uint32_t l = 0; l < kLayers; l++)
		consume<<<8, 256, 0, compute>>>(v, r.lay, l, d_chunk_of_block, chk);
	EXPECT(gio_kv_wait_layer_timed_on(r.plan, kLayers - 1, other, 30 * kSecond, nullptr, &chk->waited_ns) == 0,
	       "wait_layer_timed_on: %s", gio_last_error());
	gated<<<1, 1, 0, other>>>(v, kLayers - 1, chk);
	call_ns = 0;
	for (uint32_t l = 0; l < kLayers; l++) {
		const uint64_t t0 = gio_host_now_ns();
		rc = gio_kv_layer_launch(r.plan, l, 0, io, sms);
		call_ns += (double)(gio_host_now_ns() - t0);
		EXPECT(rc == 0, "load layer %u: %d %s", l, rc, gio_last_error());
	}
	EXPECT(gio_kv_load_layer(r.plan, 0, io) == -EALREADY, "a second load of layer 0 must be refused");
	EXPECT(sync_within(io, 60) && sync_within(compute, 60) && sync_within(other, 60), "a stream hung");
	rc = gio_kv_plan_finish(r.plan, res.data(), 30 * kSecond);
	EXPECT(rc == 0, "load finish: %d %s", rc, gio_last_error());
	unsigned failed = 0;
	for (uint32_t i = 0; i < kBlocks; i++)
		failed += res[i].rc != 0;
	EXPECT(failed == 0, "%u requests failed", failed);
	EXPECT(chk->wrong == 0 && chk->poisoned_wrong == 0 && !chk->timed_out,
	       "compute kernels: %llu wrong words, %llu changed in misses' blocks, timed out %d", chk->wrong,
	       chk->poisoned_wrong, chk->timed_out);
	EXPECT(chk->gated_ok == 1, "the stream gated by gio_kv_wait_layer_on ran before its layer finished");
	// Enqueued before any load was launched: the wait stalled its stream until the last layer.
	EXPECT(chk->waited_ns > 0 && chk->waited_ns < 60 * kSecond, "the wait says it stalled %llu ns",
	       (unsigned long long)chk->waited_ns);
	std::printf("   load: %d hits of %u keys into shuffled blocks, every byte checked by the compute kernels: %s; host "
		    "time per gio_kv_load_layer() %.1f us (mean of %u)\n",
		    n, kBlocks, chk->wrong == 0 && chk->poisoned_wrong == 0 ? "match" : "MISMATCH", call_ns / kLayers / 1e3,
		    kLayers);

	// A device failing mid-layer: one request fails with its status, the rest complete.
	gio_fault f{};
	f.fail_nth = 5;
	f.fail_status = GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ);
	CK(cudaMemsetAsync(r.pool, 0xa5, pool_bytes, io)); // the failed object must stay poisoned
	n = gio_kv_plan_load(r.plan, keys.data(), blocks.data(), kChunks, nullptr);
	EXPECT(n == (int)kChunks, "plan load 2: %d", n);
	EXPECT(gio_kv_plan_view(r.plan, &v) == 0, "view 2");
	EXPECT(gio_ctx_inject(r.ctx[1], &f) == 0, "inject: %s", gio_last_error());
	for (uint32_t l = 0; l < kLayers; l++)
		EXPECT(gio_kv_load_layer(r.plan, l, io) == 0, "load layer %u: %s", l, gio_last_error());
	EXPECT(sync_within(io, 60), "the io stream hung");
	rc = gio_kv_plan_finish(r.plan, res.data(), 30 * kSecond);
	EXPECT(rc == -EIO, "finish with a failed read: %d", rc);
	failed = 0;
	for (uint32_t i = 0; i < kChunks; i++)
		if (res[i].rc) {
			failed++;
			EXPECT(res[i].rc == -EIO && res[i].status == GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ),
			       "request %u: rc %d status 0x%x", i, res[i].rc, res[i].status);
		}
	EXPECT(failed == 1, "%u requests failed, want 1", failed);
	gio_kv_store_info(r.store, &st);
	EXPECT(st.pinned == 0, "%" PRIu64 " slots still pinned", st.pinned);
	std::printf("   a read failing on device 1: %u request failed with its NVMe status, %u completed\n", failed,
		    kChunks - failed);
	// Every byte again: the completed objects in place, the failed layer's object of the failed
	// chunk untouched (where an object is one command; with a command per run its other run
	// arrives, so it is skipped), its other layers' objects in place.
	std::vector<int> failed_layer(kBlocks, -1), cob_failed = chunk_of_block;
	for (uint32_t i = 0; i < kChunks; i++)
		if (res[i].rc) {
			failed_layer[blocks[i]] = res[i].layer;
			cob_failed[blocks[i]] = prp && pad ? -2 : -1;
		}
	int *d_cob_failed;
	CK(cudaMalloc(&d_cob_failed, kBlocks * sizeof(int)));
	CK(cudaMemcpy(d_cob_failed, cob_failed.data(), kBlocks * sizeof(int), cudaMemcpyHostToDevice));
	std::memset(chk, 0, sizeof(*chk));
	for (uint32_t l = 0; l < kLayers; l++) {
		bool has_failed = false;
		for (uint32_t b = 0; b < kBlocks; b++)
			has_failed |= failed_layer[b] == (int)l;
		consume<<<8, 256, 0, compute>>>(v, r.lay, l, has_failed ? d_cob_failed : d_chunk_of_block, chk);
	}
	EXPECT(sync_within(compute, 60), "the compute stream hung");
	CK(cudaFree(d_cob_failed));
	EXPECT(chk->wrong == 0 && chk->poisoned_wrong == 0 && !chk->timed_out,
	       "after the failed read: %llu wrong words, %llu changed in the failed and the misses' blocks, timed out %d",
	       chk->wrong, chk->poisoned_wrong, chk->timed_out);

	if (staged) {
		// A completion that never comes: its request reports -ETIME at the plan's deadline, its
		// slot goes LOST (the controller may still write it), every other object arrives.
		f = gio_fault{};
		f.drop_nth = 3;
		n = gio_kv_plan_load(r.plan, keys.data(), blocks.data(), kChunks, nullptr);
		EXPECT(n == (int)kChunks, "plan load 3: %d", n);
		EXPECT(gio_ctx_inject(r.ctx[2], &f) == 0, "inject drop: %s", gio_last_error());
		for (uint32_t l = 0; l < kLayers; l++)
			EXPECT(gio_kv_load_layer(r.plan, l, io) == 0, "load layer %u: %s", l, gio_last_error());
		EXPECT(sync_within(io, 60), "the io stream hung");
		rc = gio_kv_plan_finish(r.plan, res.data(), 30 * kSecond);
		EXPECT(rc == -ETIME, "finish with a lost completion: %d", rc);
		unsigned lost = 0, other_failed = 0;
		for (uint32_t i = 0; i < kChunks; i++) {
			lost += res[i].rc == -ETIME;
			other_failed += res[i].rc != 0 && res[i].rc != -ETIME;
		}
		// Later groups on that queue pair wrap onto the LOST slot and report -ETIME too (the ring
		// refuses to hand it out): at least the dropped command's request, nothing else failing.
		EXPECT(lost >= 1 && other_failed == 0, "lost completion: %u requests -ETIME, %u failed otherwise", lost,
		       other_failed);
		std::printf("   a completion dropped on device 2: %u request(s) -ETIME (the dropped one, and groups that "
			    "wrapped onto its LOST slot), %u completed\n", lost, kChunks - lost);
		gio_kv_plan_stats ps{};
		EXPECT(gio_kv_plan_info(r.plan, &ps) == 0 && ps.dev[2].path == GIO_GPU_PATH_STAGED &&
			       ps.dev[2].timed_out >= lost && ps.dev[0].staged_objects == ps.dev[0].objects && ps.dev[0].objects > 0,
		       "plan statistics: device 2 path %u, %" PRIu64 " timed out; device 0 %" PRIu64 " of %" PRIu64 " staged",
		       ps.dev[2].path, ps.dev[2].timed_out, ps.dev[0].staged_objects, ps.dev[0].objects);
		// The copy engine moved every staged load's objects (runs), the warps none: it copied at
		// least a run per object loaded, none where the warps move.
		if (mover == GIO_KV_MOVER_COPY_ENGINE)
			EXPECT(ps.mover_copies >= ps.dev[0].staged_objects / 2 && ps.mover_bytes > 0 && ps.mover_calls > 0,
			       "copy-engine mover: %" PRIu64 " copies, %" PRIu64 " bytes in %" PRIu64 " calls, %.3f ms of its thread's CPU",
			       ps.mover_copies, ps.mover_bytes, ps.mover_calls, ps.mover_cpu_ns / 1e6);
		else
			EXPECT(ps.mover_copies == 0, "the warps move, yet %" PRIu64 " copy-engine copies", ps.mover_copies);
		// Mirrored: the mover stored CQ words (each group's completions moved its CQ); else none.
		if (completions == GIO_KV_COMPLETIONS_MIRROR)
			EXPECT(ps.mover_cq_marks > 0, "completions mirrored, yet no CQ word stored");
		else
			EXPECT(ps.mover_cq_marks == 0, "completions polled, yet %" PRIu64 " CQ words stored", ps.mover_cq_marks);
		std::printf("   copy-engine mover: %" PRIu64 " copies, %" PRIu64 " bytes, %" PRIu64 " calls, %" PRIu64
			    " CQ words, %.3f ms of its thread's CPU\n",
			    ps.mover_copies, ps.mover_bytes, ps.mover_calls, ps.mover_cq_marks, ps.mover_cpu_ns / 1e6);
		// The plan's LOST slot goes back to the area's own rings when the plan is destroyed.
		EXPECT(gio_kv_plan_destroy(r.plan) == 0, "plan destroy: %s", gio_last_error());
		r.plan = nullptr;
		const gio_kv_io_stage *sg = gio_ctx_stage_io(r.stages[2]);
		uint32_t lost_slots = 0;
		for (uint32_t q = 0; q < kQps; q++)
			for (uint32_t i = 0; i < sg->rings[q].nslots; i++)
				lost_slots += gio_stage_state(sg->rings[q].slots[i]) == GIO_STAGE_LOST;
		EXPECT(lost_slots == 1, "%u slots LOST in device 2's staging area after the plan, want 1", lost_slots);
	}

	CK(cudaFree(d_chunk_of_block));
	CK(cudaFree(chk));
	teardown(r);
	CK(cudaStreamDestroy(io));
	CK(cudaStreamDestroy(compute));
	CK(cudaStreamDestroy(other));
}

} // namespace

int main()
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	// The compute kernels wait on the GPU for layers whose data the CPU executors copy in with
	// CUDA streams; with CUDA's default 8 hardware queues a copy can sit behind a waiting kernel
	// in a shared queue (seen on the H200 once the plan spread groups over all 16 queue pairs:
	// every copy missed its deadline). See gio_ctx_register_device(). Before any CUDA call.
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	skip_without_gpu();
	CK(cudaSetDevice(0));
	if (gio_kv_layer_preload() != 0 || gio_gpu_preload((const void *)fill_pool) || gio_gpu_preload((const void *)consume) ||
	    gio_gpu_preload((const void *)gated)) {
		std::printf("FAIL: preload: %s\n", gio_last_error());
		return 1;
	}
	run(false, false);
	// 32 warps a block: more threads than the I/O kernel's registers allow in one block, so the
	// launch must split them (a plan with 32 was refused by the launch, and its finish waited).
	run(true, false, 0, 32);
	run(true, true);
	run(true, true, 256); // 512 bytes between blocks: PRPs take a command per run
	run(false, false, 0, 8, 1); // every load layer's I/O kernel in one block: its warps take every group
	// Staged: the same checks through staging slots (no P2P table, the pool unknown to the targets).
	run(false, false, 0, 8, 0, true);
	run(true, false, 0, 8, 0, true, 16); // the mover at its deepest
	run(true, true, 256, 8, 0, true, 1); // PRP staging table, a command per run; one load in flight a lane
	// The copy engine as the mover of staged loads (docs/staged.md, design E): the same checks.
	run(true, false, 0, 8, 0, true, 0, GIO_KV_MOVER_COPY_ENGINE);
	run(true, true, 256, 8, 0, true, 0, GIO_KV_MOVER_COPY_ENGINE);
	// And its warps told of their completions by words in GPU memory (design C over E).
	run(true, false, 0, 8, 0, true, 0, GIO_KV_MOVER_COPY_ENGINE, GIO_KV_COMPLETIONS_MIRROR);
	run(true, true, 256, 8, 0, true, 0, GIO_KV_MOVER_COPY_ENGINE, GIO_KV_COMPLETIONS_MIRROR);
	std::printf(failures ? "FAILED: %d\n" : "PASSED\n", failures);
	return failures ? 1 : 0;
}
