// gpu_store.cuh: the benches' modelled drives: a KV store over N GPU-executed memory targets,
// each with the SSD timing model of one drive (figures MODELLED: the drives are the model; the
// data really moves from the targets' pinned host memory over PCIe into HBM), a pool in HBM
// registered with every target, its SGL table built once on the GPU, and the device list a plan
// takes (every queue pair of every target). bench_kv_layer and bench_sched set up the same way.
//
// The pool is (layer, block, part, token, head, dim) of bf16, contiguous: one object per layer
// and block, K and V together (2 x tokens x heads x dim x 2 bytes). Failures end the bench
// (kv_die) with the library's message.
#ifndef GIOURING_BENCH_COMMON_GPU_STORE_CUH
#define GIOURING_BENCH_COMMON_GPU_STORE_CUH

#include <cinttypes>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>
#include <giouring/kv/layer.cuh>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>
#include <giouring/target/gpu_target.h>

#include "check.cuh"

struct kv_gpu_store_params {
	const char *who;     // the bench, for messages
	uint32_t targets;    // modelled drives, 1 to 16
	uint32_t layers;     // pool layers
	uint32_t blocks;     // pool blocks
	uint32_t tokens;     // tokens a block
	uint32_t heads;      // KV heads
	uint32_t dim;        // head dim
	uint64_t chunks;     // chunks the store must hold (each: one object per layer)
	double read_gbps;    // per drive, reads alone
	double write_gbps;   // per drive, writes alone
	double mixed_gbps;   // per drive, reads and writes at once, both together (0: the model's default)
	double lat_us;       // per command
	uint32_t queues;     // queue pairs a target
	uint32_t exec_sms;   // executor SMs a target
};

struct kv_gpu_store {
	std::vector<gio_gpu_target *> g;
	unsigned char *pool = nullptr; // HBM
	uint64_t obj = 0;              // bytes of one (layer, block) object
	uint64_t pool_bytes = 0;
	gio_kv_pool p{};
	gio_kv_runs runs{};
	gio_kv_table_sizes sizes{};
	union gio_dptr *table = nullptr;
	int *table_rc = nullptr;
	std::vector<gio_kv_blockdev> bds;
	gio_kv_store *store = nullptr;
	std::vector<gio_qp *> qps;
	std::vector<gio_kv_io_dev> devs; // a plan's gio_kv_plan_params::devs
};

static inline void kv_gpu_store_die(const struct kv_gpu_store_params *sp, const char *what)
{
	kv_die("%s: %s: %s", sp->who, what, gio_last_error());
}

// Opens the targets, registers the pool, builds its table on stream s and creates the store
// (targets not started yet: start them after every kernel was loaded, kv_gpu_store_start()).
static inline void kv_gpu_store_open(struct kv_gpu_store *s, const struct kv_gpu_store_params *sp, cudaStream_t st)
{
	const uint32_t n = sp->targets;
	s->obj = 2ull * sp->tokens * sp->heads * sp->dim * 2;
	s->pool_bytes = s->obj * sp->layers * sp->blocks;
	const uint64_t held = s->obj * sp->layers * sp->chunks;
	// Each target's share of the chunks, one spare, the index (a block a slot: under 1%), and
	// the superblock region, in whole MiB.
	const uint64_t per_target = ((held / n + s->obj * sp->layers) * 102 / 100 + (16u << 20)) >> 20 << 20;
	std::fprintf(stderr, "%s: %u targets of %.2f GiB backing store each (%.2f GiB of chunks), pool %.2f GiB\n", sp->who, n,
		     per_target / 1073741824.0, held / 1073741824.0, s->pool_bytes / 1073741824.0);
	s->g.assign(n, nullptr);
	for (uint32_t d = 0; d < n; d++) {
		char uri[512], mixed[64] = "";
		if (sp->mixed_gbps > 0)
			kv_fmt(mixed, sizeof(mixed), "&model_mixed_gbps=%g", sp->mixed_gbps);
		kv_fmt(uri, sizeof(uri),
		       "mem://host?exec=gpu&size=%" PRIu64 "&queues=%u&depth=1024&sms=%u&warps=8&mdts=7"
		       "&model_read_gbps=%g&model_write_gbps=%g&model_lat_us=%g%s",
		       per_target, sp->queues, sp->exec_sms, sp->read_gbps, sp->write_gbps, sp->lat_us, mixed);
		if (gio_gpu_target_open(uri, &s->g[d]))
			kv_gpu_store_die(sp, uri);
	}
	KV_CK(cudaMalloc(&s->pool, s->pool_bytes));
	for (uint32_t d = 0; d < n; d++) {
		uint64_t addr;
		if (gio_gpu_target_register(s->g[d], s->pool, s->pool_bytes, &addr))
			kv_gpu_store_die(sp, "register the pool");
	}
	gio_kv_pool &p = s->p;
	p = gio_kv_pool{};
	p.base = (uint64_t)(uintptr_t)s->pool;
	p.base_mode = GIO_KV_BASE_ONE;
	p.elem_bytes = 2;
	const uint32_t ext[GIO_KV_DIMS] = {sp->layers, sp->blocks, 2, sp->tokens, sp->heads, sp->dim};
	for (int d = 0; d < GIO_KV_DIMS; d++)
		p.extent[d] = ext[d];
	p.stride[GIO_KV_CHANNEL] = 1;
	p.stride[GIO_KV_HEAD] = sp->dim;
	p.stride[GIO_KV_TOKEN] = (uint64_t)sp->dim * sp->heads;
	p.stride[GIO_KV_PART] = (uint64_t)sp->dim * sp->heads * sp->tokens;
	p.stride[GIO_KV_BLOCK] = 2 * p.stride[GIO_KV_PART];
	p.stride[GIO_KV_LAYER] = p.stride[GIO_KV_BLOCK] * sp->blocks;
	if (gio_kv_pool_check(&p, nullptr) || gio_kv_pool_runs(&p, &s->runs))
		kv_gpu_store_die(sp, "the pool");
	// The P2P table, on the GPU: one for all targets, where their bus addresses agree (GPU
	// targets' are the device pointers); a target whose translation differs is refused.
	gio_kv_pool bus{};
	for (uint32_t d = 0; d < n; d++) {
		gio_kv_pool b;
		if (gio_kv_pool_bus_gpu(s->g[d], &p, nullptr, &b))
			kv_gpu_store_die(sp, "the pool's bus addresses");
		if (d == 0)
			bus = b;
		else if (b.base != bus.base)
			kv_die("%s: target %u translates the pool to another bus address: one table cannot serve all", sp->who, d);
	}
	struct gio_dptr_caps caps{};
	caps.sgls = s->g[0]->cfg.sgls ? 1u : 0u;
	caps.page_bytes = 4096;
	caps.max_xfer_bytes = (uint64_t)4096 << s->g[0]->cfg.mdts;
	gio_kv_table_plan(&bus, &s->runs, &caps, &s->sizes);
	KV_CK(cudaMalloc(&s->table, s->sizes.sgl_desc_bytes));
	KV_CK(cudaMallocManaged(&s->table_rc, sizeof(int)));
	*s->table_rc = 0;
	if (gio_kv_table_build(&bus, &s->runs, &caps, s->table, nullptr, 0, s->table_rc, st))
		kv_gpu_store_die(sp, "the table");
	KV_CK(cudaStreamSynchronize(st));
	if (*s->table_rc)
		kv_die("%s: table entry refused: %d", sp->who, *s->table_rc);

	s->bds.assign(n, gio_kv_blockdev{});
	for (uint32_t d = 0; d < n; d++)
		if (gio_kv_gpu_target_blockdev(s->g[d], &s->bds[d]))
			kv_gpu_store_die(sp, "blockdev");
	gio_kv_store_params kp{};
	kp.layers = sp->layers;
	kp.object_bytes = s->obj;
	kp.pool_signature = gio_kv_pool_signature(&p, &s->runs);
	kp.timeout_ns = 30ull * 1000000000ull;
	if (gio_kv_store_create_blockdevs(s->bds.data(), n, &kp, &s->store))
		kv_gpu_store_die(sp, "store");
	s->qps.clear();
	for (uint32_t d = 0; d < n; d++)
		for (uint32_t q = 0; q < s->g[d]->cfg.queues; q++)
			s->qps.push_back(gio_gpu_target_qp(s->g[d], q));
	s->devs.assign(n, gio_kv_io_dev{});
	for (uint32_t d = 0, at = 0; d < n; at += s->g[d]->cfg.queues, d++) {
		s->devs[d].qps = &s->qps[at];
		s->devs[d].table = s->table;
		s->devs[d].nqps = s->g[d]->cfg.queues;
		s->devs[d].nsid = GIO_TGT_NSID;
		s->devs[d].lba_shift = s->g[d]->cfg.lba_shift;
		s->devs[d].psdt = GIO_PSDT_SGL_MPTR;
	}
}

// Starts every target's executor (a persistent kernel: every other kernel loaded first).
static inline void kv_gpu_store_start(struct kv_gpu_store *s, const struct kv_gpu_store_params *sp)
{
	for (gio_gpu_target *g : s->g)
		if (gio_gpu_target_start(g))
			kv_gpu_store_die(sp, "start");
}

// Stops the executors; a failed command fails the bench. per_dev (may be NULL) receives the
// commands each device served.
static inline void kv_gpu_store_stop(struct kv_gpu_store *s, const struct kv_gpu_store_params *sp,
				     std::vector<uint64_t> *per_dev)
{
	for (size_t d = 0; d < s->g.size(); d++) {
		gio_tgt_stats st;
		if (gio_gpu_target_stop(s->g[d], 10000, &st))
			kv_gpu_store_die(sp, "stop");
		if (st.errors)
			kv_die("%s: target %zu: %" PRIu64 " commands failed", sp->who, d, st.errors);
		if (per_dev)
			per_dev->push_back(st.commands);
	}
}

// Closes the store and the targets and frees the pool and the table (executors stopped).
static inline void kv_gpu_store_close(struct kv_gpu_store *s, const struct kv_gpu_store_params *sp)
{
	if (gio_kv_store_close(s->store))
		kv_gpu_store_die(sp, "store close");
	for (gio_gpu_target *g : s->g)
		gio_gpu_target_close(g);
	KV_CK(cudaFree(s->pool));
	KV_CK(cudaFree(s->table));
	KV_CK(cudaFree(s->table_rc));
	*s = kv_gpu_store{};
}

#endif // GIOURING_BENCH_COMMON_GPU_STORE_CUH
