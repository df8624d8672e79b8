// bench_kv_staged: the staged path's GPU half (docs/staged.md): KV restore through the library's
// plan and I/O kernel (giouring/kv/plan.h, giouring/kv/layer.cuh) over D software targets whose
// devices are staged: each NVMe Read lands in a slot of a pinned, GPU-mapped staging area
// (gio_ctx_stage_create(..., GIO_CTX_STAGE_GPU)), and the warp that submitted it copies the
// object from the slot into the pool in HBM (giouring/kv/staged.cuh). The controller never sees
// the pool: it is not registered with any context.
//
// The targets are CPU-executed memory targets (mem://host, threads=N): a stand-in for the SSD
// whose executor threads memcpy each command's data from their backing store into its slot, so
// that memcpy is part of what is measured (figures MEASURED, not modelled; a real SSD's rate and
// latency are not in them). Completions: design A of docs/staged.md, each lane polls its CQE in
// pinned host memory. The mover keeps gio_kv_plan_params::move_depth loads in flight a lane.
//
// Workload: bench/common/workload.cuh (llama3-8b: 32 layers, 8 KV heads, head dim 128, bf16,
// blocks of 16 tokens; a chunk per block, its object per layer K and V: 2 x 32 KiB runs of the
// vLLM pool, one 64 KiB command and slot), restored into shuffled pool blocks, every repetition
// verified byte for byte on the GPU after the pool was poisoned (a wrong byte fails the run).
//
// Table 1, restore bandwidth: per I/O kernel size (--io-sms, one thread block per SM, --io-warps
// warps each): load GB/s (device scope: CUDA events around the layers' launches, data in HBM
// when the last layer's completion is seen), the same run's bulk H2D copy of the same bytes from
// pinned host memory, SMs per 10 GB/s, and the process's CPU seconds per GB (getrusage
// RUSAGE_SELF: every thread, the executors' memcpy included).
//
// Why 64K tokens by default: a warp of the I/O kernel takes a group of at most 32 objects (one
// device's, one queue pair's), and a launch gets no more warps than the layer has groups
// (gio_kv_plan_layer_begin()). 8K tokens are 512 objects a layer, 16 groups: every row from 2
// SMs of 8 warps up would launch the same 2 blocks. 64K tokens give 128 groups, enough for 16
// SMs of 8 warps. The table prints the blocks each launch really had.
//
// Table 2, interference: an SM partition (giouring/host/partition.h) made first; a bf16 GEMM
// 4096x14336x4096 (cuBLAS; left out where CMake found no cuBLAS) and an HBM-bound copy timed on
// the compute partition alone and while restores loop on the I/O partition; the slowdown, the
// restore GB/s meanwhile, the I/O SMs and the CPU time. Then the floors (unless --no-floor): the
// same bytes moved from pinned host memory into HBM in bulk, by the same number of warps on the
// I/O partition (the staged mover's copy without commands or polling) and by the copy engine,
// beside the same kernels: what moving those bytes at all costs them. The last floor is design E's
// copies (docs/staged.md): the copy engine moving each object's runs, in cudaMemcpyBatchAsync
// calls of --ce-objects objects, as a completion proxy would issue them.
//
// Markdown on stdout, progress on stderr, JSON with --json. Exits 77 without a GPU.
//
//   bench_kv_staged [--quick] [--tokens N] [--targets D] [--io-sms LIST] [--io-warps N] [--reps N]
//                   [--threads N] [--qps N] [--slots N] [--part-sms N] [--window-ms X]
//                   [--no-interference] [--no-floor] [--ce-objects LIST] [--json FILE]
#include <sys/resource.h>
#include <time.h>

#include <cinttypes>
#include <string>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/host/partition.h>
#include <giouring/host/stage.h>
#include <giouring/kv/layer.cuh>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>
#include <giouring/proto/status.h>

#ifdef GIO_BENCH_CUBLAS
#include <cublas_v2.h>
#endif

#include "common/check.cuh"
#include "common/cli.cuh"
#include "common/json.cuh"
#include "common/kv_lib.cuh"
#include "common/machine.cuh"
#include "common/runner.cuh"
#include "common/timing.cuh"
#include "common/workload.cuh"

namespace {

const int kSkip = 77;
const int kMaxSms = 8;
const char kDesign[] = "A: each lane polls its CQE in pinned host memory";
const char kDesignMirror[] = "C over E: the warps poll their CQ's word in GPU memory, reading the CQ only when it moved";
// The interference table's movers: the library's restores, and two floors that move the same
// bytes from pinned host memory into HBM with no NVMe command and no polling at all.
// kCopyObjects is design E's copy pattern (docs/staged.md): the copy engine moving each object's
// runs from its place in pinned host memory to its place in the pool, as a host thread would issue
// them as completions arrive, in calls of a group's objects or more.
enum mover { kRestore = 0, kSmBulk = 1, kCopyEngine = 2, kCopyObjects = 3 };
const char *const kMoverName[] = {
	"restores (the I/O kernel, staged path)",
	"floor: SM bulk copy by the same warps from pinned host memory, no commands, no polling",
	"floor: copy engine (cudaMemcpyAsync H2D on the I/O partition's stream; no SMs)",
	"floor: copy engine object by object (cudaMemcpyBatchAsync of each object's runs, design E's copies; no SMs)",
};
const char kTarget[] = "CPU-executed software target (mem://host) standing in for the SSD: its executor threads' "
		       "memcpy into the staging slots is part of what is measured";

struct options {
	bool quick = false;
	uint64_t tokens = 65536; // 128 groups of 32 objects a layer: see the file comment
	uint32_t targets = 4;
	uint32_t io_sms[kMaxSms] = {2, 4, 8, 16};
	int n_io_sms = 4;
	uint32_t io_warps = 8;
	int reps = 5, warmup = 1;
	uint32_t threads = 3;   // executor threads per target
	uint32_t qps = 4;       // queue pairs (and staging rings) per target
	uint32_t depth = 256;
	uint32_t slots = 128;   // slots per ring
	uint32_t part_sms = 8;  // the I/O partition (8 is the H200's smallest)
	double window_ms = 1000; // each compute timing's length: several restore batches
	uint64_t copy_bytes = 2ull << 30;
	bool interference = true;
	bool floor = true;
	uint32_t poll_ns[kMaxSms] = {0}; // interference rows: gio_kv_plan_params::poll_ns of each
	int n_poll = 1;
	uint32_t depths[kMaxSms] = {16, 4}; // floor rows: 16-byte loads in flight a lane of the SM copy
	int n_depths = 2;
	uint32_t move_depth[kMaxSms] = {0}; // interference rows: gio_kv_plan_params::move_depth of each
	int n_move = 1;
	uint32_t ce_objects[kMaxSms] = {32}; // kCopyObjects rows: objects per cudaMemcpyBatchAsync call
	int n_ce = 1;
	bool ce_mover = false; // also restore with the copy-engine mover (gio_kv_plan_params::mover)
	bool ce_mirror = false; // and with its completions mirrored (gio_kv_plan_params::completions)
	double timeout_s = 120;
	const char *json = nullptr;
};

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: bench_kv_staged [options]\n"
		     "  --tokens N         prefix length (64K; a K suffix multiplies by 1024)\n"
		     "  --targets D        software targets, each a staged device of the store (4)\n"
		     "  --io-sms LIST      restore rows: thread blocks (SMs) of the I/O kernel (2,4,8,16)\n"
		     "  --io-warps N       warps per I/O kernel block (8)\n"
		     "  --reps N           timed repetitions per row and interference point (5), after one warm-up\n"
		     "  --threads N        executor threads per target (3)\n"
		     "  --qps N            queue pairs per target, each with its staging ring (4)\n"
		     "  --slots N          staging slots per ring, a power of two, at least 32 (128)\n"
		     "  --part-sms N       SMs of the I/O partition for the interference table (8)\n"
		     "  --window-ms X      length of each compute timing, ms (1000)\n"
		     "  --no-interference  restore table only (no SM partition, no compute kernels)\n"
		     "  --no-floor         no bulk-copy floor rows in the interference table\n"
		     "  --floor-depths L   the SM floor's 16-byte loads in flight a lane, one row each (16,4)\n"
		     "  --ce-mover         also restore with the copy engine as the mover (GIO_KV_MOVER_COPY_ENGINE):\n"
		     "                     a row per --io-sms value and an interference row per kernel\n"
		     "  --ce-mirror        --ce-mover, and the same rows again with the warps told of their\n"
		     "                     completions by words in GPU memory (GIO_KV_COMPLETIONS_MIRROR)\n"
		     "  --ce-objects LIST  the object-by-object copy-engine floor: objects per cudaMemcpyBatchAsync\n"
		     "                     call, one row each (32: one command group; 0: no such row)\n"
		     "  --move-depth LIST  interference rows per gio_kv_plan_params::move_depth (0: the default)\n"
		     "  --poll-ns LIST     interference rows per least pause between completion polls (0: design A's\n"
		     "                     back-off; e.g. 0,4000)\n"
		     "  --json FILE        the rows as JSON\n"
		     "  --quick            a few seconds, small sizes (ctest)\n");
}

double tv_s(const struct timeval &t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

// CPU time of every thread of the process, the target's executor threads included.
double rusage_s(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return tv_s(u.ru_utime) + tv_s(u.ru_stime);
}

void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, nullptr);
}

// Waits for an event in short sleeps instead of kv_wait_event()'s spin: the CPU figures hold the
// process's work, not a core spent watching the GPU. Event timing (device scope) is unaffected.
int wait_napping(cudaEvent_t ev, double timeout_s)
{
	const double deadline = kv_now_s() + timeout_s;
	for (;;) {
		const cudaError_t e = cudaEventQuery(ev);
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			KV_CK(e);
		if (kv_now_s() > deadline)
			return -ETIME;
		nap_us(20);
	}
}

double median_of(std::vector<double> v, double *mn, double *mx)
{
	std::sort(v.begin(), v.end());
	*mn = v.empty() ? 0 : v.front();
	*mx = v.empty() ? 0 : v.back();
	return kv_median(v);
}

// ---- the staged store -----------------------------------------------------------------------

// D software targets, each a staged device: pinned queue pairs the GPU drives (copied to device
// memory), a GPU-mapped staging area with a ring per queue pair, and the store over them.
struct rig {
	const kv_workload *w = nullptr;
	std::vector<gio_ctx *> ctx;
	std::vector<gio_ctx_stage *> area;
	std::vector<gio_qp *> host_qps; // target d's queue pair q at d * qps + q
	gio_qp *d_qps = nullptr;
	std::vector<gio_qp *> dev_qp_ptrs;
	std::vector<gio_kv_io_dev> devs;
	gio_kv_store *store = nullptr;
	gio_kv_pool pool{}; // HBM, as the I/O kernel's warps reach it
	uint32_t qps = 0;
	uint64_t slot_bytes = 0;
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> identity, shuffled;
	std::vector<gio_kv_io_result> results;
};

void die_gio(const char *what)
{
	kv_die("%s: %s", what, gio_last_error());
}

void rig_open(rig &g, const kv_workload *w, const options &o)
{
	g.w = w;
	g.qps = o.qps;
	kv_lib_pool(w, &g.pool);
	gio_kv_store_params sp;
	char err[256];
	if (kv_lib_store_params(w, o.timeout_s / 4, &sp, err, sizeof(err)))
		kv_die("%s", err);
	// Each target's share of the chunks (the store deals them round-robin), one spare, the index
	// and the superblock region, in whole MiB.
	const uint64_t chunk = 2ull * w->obj_bytes * w->n_layers;
	const uint64_t per_target = ((kv_total_bytes(w) / o.targets + chunk) * 102 / 100 + (16u << 20)) >> 20 << 20;
	std::fprintf(stderr, "bench_kv_staged: %u targets of %.2f GiB (%u executor threads each), %u queue pairs of %u "
			     "slots each per target\n",
		     o.targets, per_target / 1073741824.0, o.threads, o.qps, o.slots);
	for (uint32_t d = 0; d < o.targets; d++) {
		char uri[256];
		gio_ctx *c = nullptr;
		kv_fmt(uri, sizeof(uri), "mem://host?size=%" PRIu64 "M&threads=%u&idle_us=20&queues=%u", per_target >> 20,
		       o.threads, o.qps < 16 ? 16 : o.qps);
		if (gio_ctx_open(uri, &c))
			die_gio(uri);
		g.ctx.push_back(c);
	}
	if (gio_kv_store_create(g.ctx.data(), o.targets, &sp, &g.store))
		die_gio("store");

	// Queue pairs for the GPU: pinned, their structs copied to device memory (the GPU's copy holds
	// the ring indices from now on; it is copied back before the destroy).
	std::vector<gio_qp> qps;
	for (uint32_t d = 0; d < o.targets; d++)
		for (uint32_t q = 0; q < o.qps; q++) {
			gio_qp *qp = nullptr;
			if (gio_ctx_qp_create_ex(g.ctx[d], o.depth, GIO_CTX_QP_PINNED, &qp))
				die_gio("pinned queue pair");
			g.host_qps.push_back(qp);
			qps.push_back(*qp);
		}
	KV_CK(cudaMalloc((void **)&g.d_qps, qps.size() * sizeof(gio_qp)));
	KV_CK(cudaMemcpy(g.d_qps, qps.data(), qps.size() * sizeof(gio_qp), cudaMemcpyHostToDevice));
	for (size_t i = 0; i < qps.size(); i++)
		g.dev_qp_ptrs.push_back(&g.d_qps[i]);

	// The staging: one command per object (the staged command's data is its slot, whatever the
	// pool's runs), so a slot holds an object.
	gio_kv_runs runs;
	if (gio_kv_pool_runs(&g.pool, &runs))
		die_gio("the pool's runs");
	g.slot_bytes = runs.object_bytes;
	g.area.assign(o.targets, nullptr);
	g.devs.assign(o.targets, gio_kv_io_dev{});
	for (uint32_t d = 0; d < o.targets; d++) {
		if (gio_ctx_stage_create(g.ctx[d], o.qps, o.slots, g.slot_bytes, GIO_CTX_STAGE_GPU, &g.area[d]))
			die_gio("staging area");
		gio_ns_info info;
		gio_ctx_info(g.ctx[d], &info);
		const gio_kv_io_stage *io = gio_ctx_stage_io(g.area[d]);
		gio_kv_io_dev &v = g.devs[d];
		v.qps = &g.dev_qp_ptrs[d * o.qps];
		v.table = nullptr; // staged: the controller never sees the pool
		v.nqps = o.qps;
		v.nsid = info.nsid;
		v.lba_shift = (uint32_t)__builtin_ctz(info.lba_bytes);
		v.psdt = io->table ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR; // a staging table only where SGLs are not taken
		v.cmds = 1;
		v.stage = io;
	}
	g.keys.resize(w->n_blocks);
	g.identity.resize(w->n_blocks);
	g.shuffled.resize(w->n_blocks);
	g.results.resize(w->n_blocks);
	for (uint32_t b = 0; b < w->n_blocks; b++) {
		g.keys[b] = gio_kv_u128{0x6b765f7374676431ull, b};
		g.identity[b] = b;
		g.shuffled[b] = w->perm[b];
	}
}

gio_kv_plan *plan_make(rig &g, uint32_t io_ctas, uint32_t io_warps, double timeout_s, uint32_t poll_ns = 0,
		       uint32_t move_depth = 0, uint32_t mover = GIO_KV_MOVER_SM,
		       uint32_t completions = GIO_KV_COMPLETIONS_POLL)
{
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_GPU;
	pp.max_requests = g.w->n_blocks;
	pp.blocks = g.w->pool_blocks;
	pp.io_ctas = io_ctas;
	pp.io_warps = io_warps;
	pp.timeout_ns = (uint64_t)(timeout_s * 1e9);
	pp.devs = g.devs.data();
	pp.pool = &g.pool;
	pp.poll_ns = poll_ns;
	pp.move_depth = move_depth;
	pp.mover = mover;
	pp.completions = completions;
	gio_kv_plan *plan = nullptr;
	if (gio_kv_plan_create(g.store, &pp, &plan))
		die_gio("plan");
	return plan;
}

// The CPU time of the plan's copy-engine mover thread so far, seconds (0 where the warps move).
double mover_cpu_s(gio_kv_plan *plan)
{
	gio_kv_plan_stats ps{};
	if (gio_kv_plan_info(plan, &ps))
		die_gio("plan info");
	return ps.mover_cpu_ns * 1e-9;
}

// Ends a batch; a failed request fails the bench with its NVMe status.
void finish_or_die(rig &g, gio_kv_plan *plan, const char *what)
{
	const int rc = gio_kv_plan_finish(plan, g.results.data(), 0);
	if (!rc)
		return;
	for (uint32_t i = 0; i < g.results.size(); i++) {
		const gio_kv_io_result &x = g.results[i];
		if (x.rc)
			kv_die("%s: chunk %u, layer %u: rc %d, NVMe status 0x%04x (%s)", what, i, x.layer, x.rc, x.status,
			       gio_status_str(x.status));
	}
	kv_die("%s: rc %d: %s", what, rc, gio_last_error());
}

// Plans a load of every chunk into its shuffled block. Returns the batch's command groups per
// layer (the plan's view).
uint32_t plan_batch(rig &g, gio_kv_plan *plan)
{
	const int n = gio_kv_plan_load(plan, g.keys.data(), g.shuffled.data(), g.w->n_blocks, nullptr);
	if (n != (int)g.w->n_blocks)
		kv_die("plan load: %d of %u chunks found (%s)", n, g.w->n_blocks, gio_last_error());
	gio_kv_io_plan v;
	if (gio_kv_plan_view(plan, &v))
		die_gio("plan view");
	return v.ngroups;
}

// Every layer of the planned batch, one launch each, on s.
void launch_layers(rig &g, gio_kv_plan *plan, cudaStream_t s)
{
	for (uint32_t l = 0; l < g.w->n_layers; l++)
		if (gio_kv_load_layer(plan, l, s))
			kv_die("load layer %u: %s", l, gio_last_error());
}

// Thread blocks a layer's launch gets: no more warps than groups (gio_kv_plan_layer_begin()),
// in blocks the I/O kernel's registers allow (gio_kv_layer_launch()).
uint32_t blocks_launched(uint32_t io_ctas, uint32_t io_warps, uint32_t groups)
{
	const uint32_t most = io_ctas * io_warps, warps = groups < most ? (groups ? groups : 1) : most;
	struct cudaFuncAttributes fa;
	KV_CK(cudaFuncGetAttributes(&fa, gio_kv_layer_kernel<0>));
	gio_kv_plan_launch l{};
	l.ctas = (warps + io_warps - 1) / io_warps;
	l.threads = 32 * io_warps;
	gio_kv_plan_launch_fit(&l, (uint32_t)fa.maxThreadsPerBlock / 32 * 32, 0);
	return l.ctas;
}

// The store's contents: the pool filled unshuffled from the host store, then every chunk saved
// from its own block through the staged plan (the same slots, the other way).
void rig_fill(rig &g, gio_kv_plan *plan, kv_runner *r)
{
	const kv_workload *w = g.w;
	KV_CK(cudaMemcpyAsync(w->pool_base, w->store, kv_total_bytes(w), cudaMemcpyHostToDevice, r->stream));
	kv_sync(r, "copying the store into the pool");
	const int n = gio_kv_plan_save(plan, g.keys.data(), g.identity.data(), w->n_blocks, nullptr);
	if (n != (int)w->n_blocks)
		kv_die("plan save: %d of %u chunks planned (%s)", n, w->n_blocks, gio_last_error());
	KV_CK(cudaEventRecord(r->ev_start, r->stream));
	for (uint32_t l = 0; l < w->n_layers; l++)
		if (gio_kv_save_layer(plan, l, r->stream))
			kv_die("save layer %u: %s", l, gio_last_error());
	KV_CK(cudaEventRecord(r->ev_stop, r->stream));
	if (wait_napping(r->ev_stop, r->timeout_s))
		kv_die("the save did not finish within %.0f s", r->timeout_s);
	finish_or_die(g, plan, "save");
	float ms = 0;
	KV_CK(cudaEventElapsedTime(&ms, r->ev_start, r->ev_stop));
	std::fprintf(stderr, "bench_kv_staged: saved %u chunks (%.2f GiB) through the staging slots at %.2f GB/s\n",
		     w->n_blocks, kv_total_bytes(w) / 1073741824.0, kv_total_bytes(w) / (ms * 1e6));
}

void rig_close(rig &g)
{
	if (gio_kv_store_close(g.store))
		die_gio("store close");
	// The GPU's copies hold the rings' indices: back over the host structs before the destroy.
	for (size_t i = 0; i < g.host_qps.size(); i++) {
		KV_CK(cudaMemcpy(g.host_qps[i], &g.d_qps[i], sizeof(gio_qp), cudaMemcpyDeviceToHost));
		if (gio_ctx_qp_destroy(g.ctx[i / g.qps], g.host_qps[i], 5000000000ull, nullptr, nullptr) < 0)
			die_gio("queue pair destroy");
	}
	for (gio_ctx_stage *a : g.area) // after the plans and the queue pairs: no command can still land
		if (gio_ctx_stage_destroy(a))
			die_gio("staging area destroy");
	for (gio_ctx *c : g.ctx)
		if (gio_ctx_close(c))
			die_gio("close");
	KV_CK(cudaFree(g.d_qps));
}

// ---- table 1: restore bandwidth ---------------------------------------------------------------

struct restore_row {
	uint32_t io_ctas = 0, io_warps = 0;
	uint32_t mover = GIO_KV_MOVER_SM; // the plan's (gio_kv_plan_params::mover)
	uint32_t completions = GIO_KV_COMPLETIONS_POLL; // the plan's (gio_kv_plan_params::completions)
	uint32_t groups = 0, blocks = 0; // command groups a layer; thread blocks each launch had
	uint64_t bytes = 0;
	double gbps = 0, gbps_min = 0, gbps_max = 0;
	double bulk_gbps = 0, bulk_min = 0, bulk_max = 0;
	double cpu_s_per_gb = 0; // median
	double cpu_cores = 0;    // median: process CPU time over the restore's wall time
	double mover_s_per_gb = 0; // median: the copy-engine mover thread's CPU alone
	int reps = 0;
};

restore_row run_restore(rig &g, gio_kv_plan *plan, uint32_t io_ctas, uint32_t io_warps, kv_runner *r, cudaStream_t bulk,
			cudaEvent_t b0, cudaEvent_t b1)
{
	const kv_workload *w = g.w;
	const uint64_t bytes = kv_total_bytes(w);
	restore_row row;
	row.io_ctas = io_ctas;
	row.io_warps = io_warps;
	row.bytes = bytes;
	row.reps = r->reps;
	std::vector<double> gbps, bulks, cpu, cores, mover;
	for (int rep = 0; rep < r->warmup + r->reps; rep++) {
		kv_poison_pool(w, r);
		row.groups = plan_batch(g, plan); // untimed: lookups and the requests' upload
		const double m0 = mover_cpu_s(plan);
		const double a0 = rusage_s(), t0 = kv_now_s();
		KV_CK(cudaEventRecord(r->ev_start, r->stream));
		launch_layers(g, plan, r->stream);
		KV_CK(cudaEventRecord(r->ev_stop, r->stream));
		if (wait_napping(r->ev_stop, r->timeout_s))
			kv_die("%u I/O SMs: a load did not finish within %.0f s", io_ctas, r->timeout_s);
		const double a1 = rusage_s(), t1 = kv_now_s();
		finish_or_die(g, plan, "load");
		const double m1 = mover_cpu_s(plan);
		int64_t first = -1;
		const uint64_t bad = kv_verify_pool(w, r, KV_VERIFY_SHUFFLED, &first);
		if (bad)
			kv_die("%u I/O SMs, repetition %d: %" PRIu64 " wrong 16-byte words, first in object %" PRId64, io_ctas, rep,
			       bad, first);
		// The bulk copy of the same bytes from the same pinned memory, on its own stream.
		KV_CK(cudaEventRecord(b0, bulk));
		KV_CK(cudaMemcpyAsync(w->pool_base, w->store, bytes, cudaMemcpyHostToDevice, bulk));
		KV_CK(cudaEventRecord(b1, bulk));
		if (wait_napping(b1, r->timeout_s))
			kv_die("the bulk copy did not finish within %.0f s", r->timeout_s);
		if (rep < r->warmup)
			continue;
		float ms = 0, bms = 0;
		KV_CK(cudaEventElapsedTime(&ms, r->ev_start, r->ev_stop));
		KV_CK(cudaEventElapsedTime(&bms, b0, b1));
		gbps.push_back(bytes / (ms * 1e6));
		bulks.push_back(bytes / (bms * 1e6));
		cpu.push_back((a1 - a0) / (bytes / 1e9));
		cores.push_back((a1 - a0) / (t1 - t0));
		mover.push_back((m1 - m0) / (bytes / 1e9));
	}
	double mn, mx;
	row.gbps = median_of(gbps, &row.gbps_min, &row.gbps_max);
	row.bulk_gbps = median_of(bulks, &row.bulk_min, &row.bulk_max);
	row.cpu_s_per_gb = median_of(cpu, &mn, &mx);
	row.cpu_cores = median_of(cores, &mn, &mx);
	row.mover_s_per_gb = median_of(mover, &mn, &mx);
	row.blocks = blocks_launched(io_ctas, io_warps, row.groups);
	std::fprintf(stderr, "  %2u I/O SMs x %u warps: %.2f GB/s [%.2f, %.2f], bulk %.2f GB/s, %.3f CPU s/GB, verified\n",
		     io_ctas, io_warps, row.gbps, row.gbps_min, row.gbps_max, row.bulk_gbps, row.cpu_s_per_gb);
	return row;
}

// ---- table 2: interference --------------------------------------------------------------------

// HBM-bound: a grid-stride copy between two HBM buffers.
__global__ void hbm_copy_kernel(const uint4 *__restrict__ in, uint4 *__restrict__ out, uint64_t n)
{
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
		out[i] = in[i];
}

// The floor's SM mover: the staged mover's copy (gio_copy_warp_depth()) over the same bytes, an
// object-sized piece a warp at a time, with no command, reservation or poll.
__global__ void sm_bulk_kernel(unsigned char *dst, const unsigned char *src, uint64_t bytes, uint64_t piece,
			       uint32_t depth)
{
	const uint64_t warps = (uint64_t)gridDim.x * (blockDim.x / 32);
	const uint64_t n = (bytes + piece - 1) / piece;
	for (uint64_t i = blockIdx.x * (uint64_t)(blockDim.x / 32) + threadIdx.x / 32; i < n; i += warps) {
		const uint64_t off = i * piece, len = bytes - off < piece ? bytes - off : piece;
		gio_copy_warp_depth(dst + off, src + off, len, 0, depth);
	}
}

struct compute_kernel {
	const char *name;
	double work;      // per launch: FLOPs (GEMM) or bytes read and written (copy)
	const char *unit; // "TFLOPS" or "GB/s"
	void (*launch)(void *arg);
	void *arg;
};

struct copy_arg {
	const uint4 *in;
	uint4 *out;
	uint64_t n;
	uint32_t blocks;
	cudaStream_t s;
};

void launch_copy(void *p)
{
	const copy_arg *a = (const copy_arg *)p;
	hbm_copy_kernel<<<a->blocks, 512, 0, a->s>>>(a->in, a->out, a->n);
	KV_CK(cudaGetLastError());
}

#ifdef GIO_BENCH_CUBLAS
const int kGemmM = 4096, kGemmN = 14336, kGemmK = 4096;

struct gemm_arg {
	cublasHandle_t h;
	void *a, *b, *c;
};

void launch_gemm(void *p)
{
	const gemm_arg *g = (const gemm_arg *)p;
	const float one = 1.0f, zero = 0.0f;
	// Column-major C (M x N) = A (M x K) B (K x N), bf16 in and out, fp32 accumulation.
	const cublasStatus_t st = cublasGemmEx(g->h, CUBLAS_OP_N, CUBLAS_OP_N, kGemmM, kGemmN, kGemmK, &one, g->a,
					       CUDA_R_16BF, kGemmM, g->b, CUDA_R_16BF, kGemmK, &zero, g->c, CUDA_R_16BF,
					       kGemmM, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		kv_die("cublasGemmEx: status %d", (int)st);
}
#endif

// Times n back-to-back launches on s (events on s); ms.
double time_launches(const compute_kernel &k, cudaStream_t s, int n, cudaEvent_t e0, cudaEvent_t e1, double timeout_s)
{
	KV_CK(cudaEventRecord(e0, s));
	for (int i = 0; i < n; i++)
		k.launch(k.arg);
	KV_CK(cudaEventRecord(e1, s));
	if (wait_napping(e1, timeout_s))
		kv_die("%s: %d launches did not finish within %.0f s", k.name, n, timeout_s);
	float ms = 0;
	KV_CK(cudaEventElapsedTime(&ms, e0, e1));
	return ms;
}

struct interference_row {
	std::string kernel;
	uint32_t io_sms = 0, compute_sms = 0, io_warps = 0;
	uint32_t blocks = 0; // thread blocks each layer's launch had
	int launches = 0, reps = 0;
	double alone_ms = 0, with_ms = 0;           // medians, n launches
	double rate_alone = 0;                      // the kernel's TFLOPS or GB/s alone
	const char *unit = "";
	double slow = 0, slow_min = 0, slow_max = 0; // %
	double restore_gbps = 0, restore_min = 0, restore_max = 0;
	double cpu_s_per_gb = 0, cpu_cores = 0;     // medians over the windows with restores
	double mover_s_per_gb = 0;                  // median: the copy-engine mover thread's CPU alone
	uint64_t batches = 0;                       // restore batches in all windows
	uint32_t poll_ns = 0;                       // the plan's least pause between completion polls
	int mover = kRestore;
	uint32_t depth = 0;                         // kSmBulk: loads in flight a lane; kCopyObjects: objects a call
	uint64_t calls = 0;                         // kCopyObjects: cudaMemcpyBatchAsync calls a batch
	uint32_t plan_mover = GIO_KV_MOVER_SM;      // kRestore: the plan's mover
	uint32_t completions = GIO_KV_COMPLETIONS_POLL; // kRestore: how its warps learn of completions
};

struct interference_ctx {
	rig *g;
	gio_kv_plan *plan;
	kv_runner *r;
	cudaStream_t io, comp;
	uint32_t io_sms, compute_sms, io_warps;
	cudaEvent_t c0, c1, rs, re;
	int mover;
	uint32_t depth; // kSmBulk: loads in flight a lane; kCopyObjects: objects per call
	// kCopyObjects: every object's runs, layer after layer, the copies design E would issue.
	std::vector<void *> ce_dst;
	std::vector<const void *> ce_src;
	std::vector<size_t> ce_len;
	std::vector<size_t> ce_first; // the first copy of each object, and the count at the end
};

// The copies that move every object of the workload from its place in the host store to the same
// place in the pool (the store holds the pool's image: a bulk copy lands it unshuffled), run by
// run as the staged path's moves list them (gio_kv_stage_moves()).
void copies_plan(interference_ctx &x)
{
	const kv_workload *w = x.g->w;
	gio_kv_runs runs;
	if (gio_kv_pool_runs(&x.g->pool, &runs))
		die_gio("the pool's runs");
	x.ce_dst.clear();
	x.ce_src.clear();
	x.ce_len.clear();
	x.ce_first.clear();
	gio_kv_stage_move mv[16];
	for (uint32_t l = 0; l < w->n_layers; l++)
		for (uint32_t b = 0; b < w->n_blocks; b++) {
			const int n = gio_kv_stage_moves(&x.g->pool, &runs, l, b, 0, 1, mv, 16);
			if (n <= 0)
				kv_die("moves of layer %u block %u: %d", l, b, n);
			x.ce_first.push_back(x.ce_dst.size());
			for (int k = 0; k < n; k++) {
				const uint64_t off = mv[k].dst - (uint64_t)(uintptr_t)w->pool_base;
				x.ce_dst.push_back((void *)(uintptr_t)mv[k].dst);
				x.ce_src.push_back((const unsigned char *)w->store + off);
				x.ce_len.push_back(mv[k].len);
			}
		}
	x.ce_first.push_back(x.ce_dst.size());
}

// One batch of the object-by-object floor: every object's copies in calls of x.depth objects.
// Returns the calls made.
uint64_t copies_launch(interference_ctx &x)
{
	cudaMemcpyAttributes at{};
	at.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	size_t idx = 0;
	uint64_t calls = 0;
	const size_t objs = x.ce_first.size() - 1;
	for (size_t o = 0; o < objs; o += x.depth) {
		const size_t e = std::min(objs, o + x.depth), c0 = x.ce_first[o], c1 = x.ce_first[e];
		KV_CK(cudaMemcpyBatchAsync(&x.ce_dst[c0], &x.ce_src[c0], &x.ce_len[c0], c1 - c0, &at, &idx, 1, x.io));
		calls++;
	}
	return calls;
}

// The SM floor's launch: the same warps as the I/O kernel's, in more blocks where the kernel's
// registers hold fewer warps a block (as gio_kv_plan_launch_fit() does for the I/O kernel).
// Returns the blocks; *per: warps a block.
uint32_t sm_bulk_blocks(const interference_ctx &x, uint32_t *per)
{
	struct cudaFuncAttributes fa;
	KV_CK(cudaFuncGetAttributes(&fa, sm_bulk_kernel));
	const uint32_t warps = x.io_sms * x.io_warps;
	*per = std::min(x.io_warps, (uint32_t)fa.maxThreadsPerBlock / 32);
	return (warps + *per - 1) / *per;
}

// One batch of x's mover on the I/O partition's stream: every layer's restore, or the same bytes
// in bulk.
void launch_batch(interference_ctx &x)
{
	const kv_workload *w = x.g->w;
	const uint64_t bytes = kv_total_bytes(w);
	if (x.mover == kRestore) {
		launch_layers(*x.g, x.plan, x.io);
	} else if (x.mover == kSmBulk) {
		uint32_t per;
		const uint32_t blocks = sm_bulk_blocks(x, &per);
		sm_bulk_kernel<<<blocks, 32 * per, 0, x.io>>>(
			(unsigned char *)w->pool_base, (const unsigned char *)w->store, bytes, x.g->slot_bytes, x.depth);
		KV_CK(cudaGetLastError());
	} else if (x.mover == kCopyObjects) {
		(void)copies_launch(x);
	} else {
		KV_CK(cudaMemcpyAsync(w->pool_base, w->store, bytes, cudaMemcpyHostToDevice, x.io));
	}
}

interference_row run_interference(interference_ctx &x, const compute_kernel &k, const options &o)
{
	interference_row row;
	row.kernel = k.name;
	row.io_sms = x.io_sms;
	row.compute_sms = x.compute_sms;
	row.io_warps = x.io_warps;
	row.unit = k.unit;
	row.reps = o.reps;
	row.mover = x.mover;
	row.depth = x.mover == kSmBulk || x.mover == kCopyObjects ? x.depth : 0;
	if (x.mover == kCopyObjects)
		row.calls = (x.ce_first.size() - 1 + x.depth - 1) / x.depth;
	uint32_t per = 0; // the SM floor's warps a block (sm_bulk_blocks())
	const kv_workload *w = x.g->w;
	const uint64_t bytes = kv_total_bytes(w);
	// As many launches as fill the window (one calibration launch, after a warm one), at most 400:
	// CUDA queues about a thousand launches a stream, and a launch past that blocks this thread,
	// which must keep starting restore batches meanwhile (a cuBLAS call may be more than one).
	(void)time_launches(k, x.comp, 1, x.c0, x.c1, x.r->timeout_s);
	const double one = time_launches(k, x.comp, 1, x.c0, x.c1, x.r->timeout_s);
	const int n = std::max(3, std::min(400, (int)(o.window_ms / std::max(one, 1e-3)) + 1));
	row.launches = n;
	std::vector<double> alone, with, slow, rgbps, cpu, cores, mover;
	for (int rep = 0; rep < o.reps; rep++) {
		double t_alone = 0, t_with = 0;
		// Alternate which goes first, so that a drift (clocks, heat) does not land on one side.
		for (int half = 0; half < 2; half++) {
			const bool restoring = (half == 1) == (rep % 2 == 0);
			if (!restoring) {
				t_alone = time_launches(k, x.comp, n, x.c0, x.c1, x.r->timeout_s);
				continue;
			}
			// Restores first, so that the compute window starts with one in flight; then batch
			// after batch until the compute timing is done (the last batch ends after it).
			kv_poison_pool(w, x.r);
			row.blocks = x.mover == kRestore ? blocks_launched(x.io_sms, x.io_warps, plan_batch(*x.g, x.plan))
						       : x.mover == kSmBulk ? sm_bulk_blocks(x, &per) : 0;
			const double m0 = x.mover == kRestore ? mover_cpu_s(x.plan) : 0;
			const double a0 = rusage_s(), t0 = kv_now_s();
			KV_CK(cudaEventRecord(x.rs, x.io));
			launch_batch(x);
			KV_CK(cudaEventRecord(x.re, x.io));
			KV_CK(cudaEventRecord(x.c0, x.comp));
			for (int i = 0; i < n; i++)
				k.launch(k.arg);
			KV_CK(cudaEventRecord(x.c1, x.comp));
			uint64_t batches = 0;
			const double deadline = kv_now_s() + x.r->timeout_s + o.window_ms * 1e-3 * 4;
			for (;;) {
				const cudaError_t e = cudaEventQuery(x.re);
				if (e == cudaSuccess) {
					if (x.mover == kRestore)
						finish_or_die(*x.g, x.plan, "load beside compute");
					batches++;
					if (cudaEventQuery(x.c1) == cudaSuccess)
						break;
					if (x.mover == kRestore)
						(void)plan_batch(*x.g, x.plan); // a gap in the restores: counted in their rate
					launch_batch(x);
					KV_CK(cudaEventRecord(x.re, x.io));
					continue;
				}
				if (e != cudaErrorNotReady)
					KV_CK(e);
				if (kv_now_s() > deadline)
					kv_die("%s beside restores: not done within %.0f s", k.name, x.r->timeout_s);
				nap_us(20);
			}
			const double a1 = rusage_s(), t1 = kv_now_s();
			float cms = 0, rms = 0;
			KV_CK(cudaEventElapsedTime(&cms, x.c0, x.c1));
			KV_CK(cudaEventElapsedTime(&rms, x.rs, x.re));
			t_with = cms;
			// The pool holds the last batch (the first overwrote the poison): a check that the
			// loads beside compute still landed right, not a check of each batch. A floor's bulk
			// copy lands the store unshuffled.
			int64_t first = -1;
			const uint64_t bad =
				kv_verify_pool(w, x.r, x.mover == kRestore ? KV_VERIFY_SHUFFLED : KV_VERIFY_IDENTITY, &first);
			if (bad)
				kv_die("%s beside restores: %" PRIu64 " wrong 16-byte words, first in object %" PRId64, k.name, bad,
				       first);
			const double moved = (double)batches * bytes;
			rgbps.push_back(moved / (rms * 1e6)); // gaps between batches included
			cpu.push_back((a1 - a0) / (moved / 1e9));
			cores.push_back((a1 - a0) / (t1 - t0));
			mover.push_back(x.mover == kRestore ? (mover_cpu_s(x.plan) - m0) / (moved / 1e9) : 0.0);
			row.batches += batches;
		}
		alone.push_back(t_alone);
		with.push_back(t_with);
		slow.push_back(100.0 * (t_with - t_alone) / t_alone);
	}
	double mn, mx;
	row.alone_ms = median_of(alone, &mn, &mx);
	row.with_ms = median_of(with, &mn, &mx);
	row.rate_alone = k.work * n / (row.alone_ms * 1e-3) / (std::strcmp(k.unit, "TFLOPS") ? 1e9 : 1e12);
	row.slow = median_of(slow, &row.slow_min, &row.slow_max);
	row.restore_gbps = median_of(rgbps, &row.restore_min, &row.restore_max);
	row.cpu_s_per_gb = median_of(cpu, &mn, &mx);
	row.cpu_cores = median_of(cores, &mn, &mx);
	row.mover_s_per_gb = median_of(mover, &mn, &mx);
	std::fprintf(stderr, "  %s: %d launches, alone %.2f ms, beside restores %.2f ms (%+.2f%% [%+.2f, %+.2f]), restores "
			     "%.2f GB/s\n",
		     k.name, n, row.alone_ms, row.with_ms, row.slow, row.slow_min, row.slow_max, row.restore_gbps);
	return row;
}

// The table's words for a mover's setting: loads in flight, or objects and calls.
std::string mover_detail(const interference_row &p)
{
	if (p.mover == kCopyEngine)
		return "";
	if (p.mover == kCopyObjects)
		return ", " + std::to_string(p.depth) + " objects a call (" + std::to_string(p.calls) + " calls a batch)";
	if (p.mover == kRestore && p.plan_mover == GIO_KV_MOVER_COPY_ENGINE)
		return p.completions == GIO_KV_COMPLETIONS_MIRROR
			       ? ", the copy engine moving the objects (design E), its thread mirroring the CQs "
				 "(GIO_KV_COMPLETIONS_MIRROR)"
			       : ", the copy engine moving the objects (GIO_KV_MOVER_COPY_ENGINE, design E)";
	return ", " + std::to_string(p.depth) + " loads in flight a lane";
}

uint64_t parse_tokens(const char *v)
{
	char *end = nullptr;
	uint64_t t = std::strtoull(v, &end, 10);
	if (end && (*end == 'K' || *end == 'k'))
		t *= 1024, end++;
	if (!end || *end || t == 0)
		kv_die("--tokens %s", v);
	return t;
}

} // namespace

int main(int argc, char **argv)
{
	// The I/O kernel spins while the executors' commands complete and compute kernels run beside
	// it; with CUDA's default 8 hardware queues a launch or copy can sit behind a spinning kernel
	// in a shared queue (tests/gpu/test_gpu_kv_layer.cu). Before any CUDA call.
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	options o;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
		if (a == "--quick") {
			o.quick = true;
		} else if (a == "--tokens" && v) {
			o.tokens = parse_tokens(v);
			i++;
		} else if (a == "--targets" && v) {
			uint32_t t;
			if (kv_parse_u32_list(v, 1, 16, &t, 1) != 1)
				kv_die("--targets %s: one number, 1 to 16", v);
			o.targets = t;
			i++;
		} else if (a == "--io-sms" && v) {
			o.n_io_sms = kv_parse_u32_list(v, 1, 132, o.io_sms, kMaxSms);
			if (o.n_io_sms <= 0)
				kv_die("--io-sms %s", v);
			i++;
		} else if (a == "--io-warps" && v) {
			o.io_warps = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--reps" && v) {
			o.reps = std::atoi(v);
			i++;
		} else if (a == "--threads" && v) {
			o.threads = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--qps" && v) {
			o.qps = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--slots" && v) {
			o.slots = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--part-sms" && v) {
			o.part_sms = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--window-ms" && v) {
			o.window_ms = std::strtod(v, nullptr);
			i++;
		} else if (a == "--poll-ns" && v) {
			o.n_poll = kv_parse_u32_list(v, 0, 1000000, o.poll_ns, kMaxSms);
			if (o.n_poll <= 0)
				kv_die("--poll-ns %s", v);
			i++;
		} else if (a == "--floor-depths" && v) {
			o.n_depths = kv_parse_u32_list(v, 1, 16, o.depths, kMaxSms);
			if (o.n_depths <= 0)
				kv_die("--floor-depths %s: 1 to 16 each", v);
			i++;
		} else if (a == "--ce-mover") {
			o.ce_mover = true;
		} else if (a == "--ce-mirror") {
			o.ce_mover = o.ce_mirror = true;
		} else if (a == "--ce-objects" && v) {
			o.n_ce = kv_parse_u32_list(v, 0, 1u << 20, o.ce_objects, kMaxSms);
			if (o.n_ce <= 0)
				kv_die("--ce-objects %s", v);
			if (o.n_ce == 1 && o.ce_objects[0] == 0)
				o.n_ce = 0;
			for (int k = 0; k < o.n_ce; k++)
				if (o.ce_objects[k] == 0)
					kv_die("--ce-objects %s: 0 only alone (no such row)", v);
			i++;
		} else if (a == "--move-depth" && v) {
			o.n_move = kv_parse_u32_list(v, 0, 16, o.move_depth, kMaxSms);
			if (o.n_move <= 0)
				kv_die("--move-depth %s: 0 to 16 each", v);
			i++;
		} else if (a == "--no-floor") {
			o.floor = false;
		} else if (a == "--no-interference") {
			o.interference = false;
		} else if (a == "--json" && v) {
			o.json = v;
			i++;
		} else {
			usage(a == "-h" || a == "--help" ? stdout : stderr);
			return a == "-h" || a == "--help" ? 0 : 2;
		}
	}
	if (o.quick) {
		o.tokens = 512;
		o.targets = 2;
		o.io_sms[0] = 2;
		o.io_sms[1] = 8;
		o.n_io_sms = 2;
		o.reps = 1;
		o.warmup = 0;
		o.threads = 2;
		o.slots = 64;
		o.window_ms = 20;
		o.copy_bytes = 64ull << 20;
		o.timeout_s = 60;
	}
	if (o.reps < 1 || o.io_warps < 1 || o.io_warps > 32 || o.threads < 1 || o.qps < 1 || o.qps > 64 || o.slots < 32 ||
	    (o.slots & (o.slots - 1)) || o.part_sms < 1 || o.window_ms <= 0)
		kv_die("--reps, --threads, --part-sms at least 1; --io-warps 1 to 32; --qps 1 to 64; --slots a power of two "
		       "from 32; --window-ms above 0");
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA device\n");
		return kSkip;
	}
	KV_CK(cudaSetDevice(0));
	// Every kernel loaded before anything spins (docs/design.md, "Persistent kernels and lazy
	// loading"): the I/O kernel polls completions while the others launch beside it.
	kv_workload_load_kernels();
	if (gio_kv_layer_preload() || gio_gpu_preload((const void *)hbm_copy_kernel) ||
	    gio_gpu_preload((const void *)sm_bulk_kernel))
		die_gio("preload");
	kv_machine m;
	kv_machine_probe(0, &m);
	kv_machine_line(stdout, &m);

	// The SM partition first: its creation waits for the device.
	gio_sm_partition *part = nullptr;
	struct gio_sm_partition_info pinfo{};
	cudaStream_t io_part = nullptr, comp = nullptr;
	if (o.interference) {
		gio_sm_partition_params pp = {0, o.part_sms, o.quick ? GIO_SM_PARTITION_FALLBACK : 0u, 0};
		if (gio_sm_partition_create(&pp, &part))
			die_gio("SM partition");
		if (gio_sm_partition_info(part, &pinfo))
			die_gio("SM partition info");
		io_part = (cudaStream_t)gio_sm_partition_stream(part, GIO_SM_IO);
		comp = (cudaStream_t)gio_sm_partition_stream(part, GIO_SM_COMPUTE);
		std::fprintf(stderr, "bench_kv_staged: SM partition: I/O %u SMs, compute %u SMs, isolated %u\n", pinfo.io_sms,
			     pinfo.compute_sms, pinfo.isolated);
	}

	// The compute kernels' buffers, and cuBLAS warmed (its kernels loaded, its workspace given)
	// before the executors and the I/O kernel start.
	copy_arg ca{};
	std::vector<compute_kernel> kernels;
	uint4 *csrc = nullptr, *cdst = nullptr;
#ifdef GIO_BENCH_CUBLAS
	gemm_arg ga{};
	void *ws = nullptr;
	const size_t ws_bytes = 32u << 20;
#endif
	cudaEvent_t c0, c1;
	KV_CK(cudaEventCreate(&c0));
	KV_CK(cudaEventCreate(&c1));
	if (o.interference) {
#ifdef GIO_BENCH_CUBLAS
		KV_CK(cudaMalloc(&ga.a, (size_t)kGemmM * kGemmK * 2));
		KV_CK(cudaMalloc(&ga.b, (size_t)kGemmK * kGemmN * 2));
		KV_CK(cudaMalloc(&ga.c, (size_t)kGemmM * kGemmN * 2));
		KV_CK(cudaMalloc(&ws, ws_bytes));
		KV_CK(cudaMemset(ga.a, 0x3c, (size_t)kGemmM * kGemmK * 2)); // bf16 0x3c3c: about 0.0115
		KV_CK(cudaMemset(ga.b, 0x3c, (size_t)kGemmK * kGemmN * 2));
		if (cublasCreate(&ga.h) != CUBLAS_STATUS_SUCCESS)
			kv_die("cublasCreate");
		// The stream first: cublasSetStream() resets the workspace to cuBLAS's own pool.
		if (cublasSetStream(ga.h, comp) != CUBLAS_STATUS_SUCCESS ||
		    cublasSetWorkspace(ga.h, ws, ws_bytes) != CUBLAS_STATUS_SUCCESS)
			kv_die("cublasSetStream / cublasSetWorkspace");
		launch_gemm(&ga);
		KV_CK(cudaStreamSynchronize(comp));
		kernels.push_back(compute_kernel{"bf16 GEMM 4096x14336x4096 (cuBLAS)", 2.0 * kGemmM * kGemmN * kGemmK, "TFLOPS",
						 launch_gemm, &ga});
#endif
		KV_CK(cudaMalloc(&csrc, o.copy_bytes));
		KV_CK(cudaMalloc(&cdst, o.copy_bytes));
		KV_CK(cudaMemset(csrc, 1, o.copy_bytes));
		ca = copy_arg{csrc, cdst, o.copy_bytes / 16, pinfo.compute_sms * 4, comp};
		kernels.push_back(compute_kernel{o.quick ? "HBM copy 64 MiB" : "HBM copy 2 GiB", 2.0 * o.copy_bytes, "GB/s",
						 launch_copy, &ca});
		launch_copy(&ca);
		KV_CK(cudaStreamSynchronize(comp));
	}

	kv_workload w;
	if (kv_workload_create(&w, "llama3-8b", o.tokens, 1))
		return 2;
	kv_runner r;
	kv_runner_init(&r, 0, o.warmup, o.reps, o.timeout_s);
	kv_fill_store(&w, &r);
	std::fprintf(stderr, "bench_kv_staged: %" PRIu64 " tokens, %u blocks x %u layers, %" PRIu64 " KiB objects, %.2f GiB\n",
		     w.tokens, w.n_blocks, w.n_layers, 2 * w.obj_bytes >> 10, kv_total_bytes(&w) / 1073741824.0);

	rig g;
	rig_open(g, &w, o);
	// Every plan before the first batch: a plan's GPU memory is allocated when it is made.
	std::vector<gio_kv_plan *> plans;
	for (int i = 0; i < o.n_io_sms; i++)
		plans.push_back(plan_make(g, o.io_sms[i], o.io_warps, o.timeout_s / 4));
	std::vector<gio_kv_plan *> iplans; // one per --poll-ns and --move-depth value, depth varying first
	const uint32_t iface_sms = o.interference ? (pinfo.isolated ? pinfo.io_sms : o.part_sms) : 0;
	// The copy engine as the mover: --ce-mover, a restore row per --io-sms value, polls backed
	// off; --ce-mirror, the same with completions mirrored; and on the interference table's SMs,
	// design E with its polls paced, one plan per nonzero --poll-ns (interference rows only).
	struct ce_plan {
		gio_kv_plan *plan;
		uint32_t io_sms, poll_ns, completions;
		bool restore_row;
	};
	std::vector<ce_plan> ce_plans;
	for (uint32_t c = GIO_KV_COMPLETIONS_POLL; c <= GIO_KV_COMPLETIONS_MIRROR; c++)
		for (int i = 0; (c == GIO_KV_COMPLETIONS_POLL ? o.ce_mover : o.ce_mirror) && i < o.n_io_sms; i++)
			ce_plans.push_back({plan_make(g, o.io_sms[i], o.io_warps, o.timeout_s / 4, 0, 0, GIO_KV_MOVER_COPY_ENGINE, c),
					    o.io_sms[i], 0, c, true});
	for (int k = 0; o.ce_mover && o.interference && k < o.n_poll; k++)
		if (o.poll_ns[k])
			ce_plans.push_back({plan_make(g, iface_sms, o.io_warps, o.timeout_s / 4, o.poll_ns[k], 0,
						      GIO_KV_MOVER_COPY_ENGINE),
					    iface_sms, o.poll_ns[k], GIO_KV_COMPLETIONS_POLL, false});
	for (int k = 0; o.interference && k < o.n_poll * o.n_move; k++) {
		const uint32_t poll = o.poll_ns[k / o.n_move], depth = o.move_depth[k % o.n_move];
		gio_kv_plan *ip = nullptr;
		for (int i = 0; poll == 0 && depth == 0 && i < o.n_io_sms; i++)
			if (o.io_sms[i] == iface_sms)
				ip = plans[i];
		if (!ip) {
			plans.push_back(plan_make(g, iface_sms, o.io_warps, o.timeout_s / 4, poll, depth));
			ip = plans.back();
		}
		iplans.push_back(ip);
	}
	// The save through the plan with the most I/O SMs: it only fills the store.
	size_t widest = 0;
	for (int i = 1; i < o.n_io_sms; i++)
		if (o.io_sms[i] > o.io_sms[widest])
			widest = (size_t)i;
	rig_fill(g, plans[widest], &r);

	// Table 1.
	cudaStream_t bulk;
	cudaEvent_t b0, b1;
	KV_CK(cudaStreamCreateWithFlags(&bulk, cudaStreamNonBlocking));
	KV_CK(cudaEventCreate(&b0));
	KV_CK(cudaEventCreate(&b1));
	std::vector<restore_row> rows;
	for (int i = 0; i < o.n_io_sms; i++)
		rows.push_back(run_restore(g, plans[i], o.io_sms[i], o.io_warps, &r, bulk, b0, b1));
	for (const ce_plan &cp : ce_plans) {
		if (!cp.restore_row)
			continue;
		rows.push_back(run_restore(g, cp.plan, cp.io_sms, o.io_warps, &r, bulk, b0, b1));
		rows.back().mover = GIO_KV_MOVER_COPY_ENGINE;
		rows.back().completions = cp.completions;
	}

	// Table 2.
	std::vector<interference_row> irows;
	if (o.interference) {
		interference_ctx x{};
		x.g = &g;
		x.plan = nullptr;
		x.r = &r;
		x.io = io_part;
		x.comp = comp;
		x.io_sms = iface_sms;
		x.compute_sms = pinfo.compute_sms;
		x.io_warps = o.io_warps;
		x.c0 = c0;
		x.c1 = c1;
		x.rs = b0;
		x.re = b1;
		x.mover = kRestore;
		for (size_t pk = 0; pk < iplans.size(); pk++) {
			x.plan = iplans[pk];
			for (const compute_kernel &k : kernels) {
				irows.push_back(run_interference(x, k, o));
				irows.back().poll_ns = o.poll_ns[pk / o.n_move];
				irows.back().depth = o.move_depth[pk % o.n_move] ? o.move_depth[pk % o.n_move] : GIO_KV_MOVE_DEPTH_DEFAULT;
			}
		}
		for (const ce_plan &cp : ce_plans) {
			if (cp.io_sms != iface_sms)
				continue;
			x.plan = cp.plan;
			for (const compute_kernel &k : kernels) {
				irows.push_back(run_interference(x, k, o));
				irows.back().plan_mover = GIO_KV_MOVER_COPY_ENGINE;
				irows.back().completions = cp.completions;
				irows.back().poll_ns = cp.poll_ns;
				irows.back().depth = 0;
			}
		}
		for (int i = 0; o.floor && i <= o.n_depths; i++) {
			x.mover = i < o.n_depths ? kSmBulk : kCopyEngine;
			x.depth = i < o.n_depths ? o.depths[i] : 0;
			for (const compute_kernel &k : kernels)
				irows.push_back(run_interference(x, k, o));
		}
		if (o.floor && o.n_ce)
			copies_plan(x);
		for (int i = 0; o.floor && i < o.n_ce; i++) {
			x.mover = kCopyObjects;
			x.depth = o.ce_objects[i];
			for (const compute_kernel &k : kernels)
				irows.push_back(run_interference(x, k, o));
		}
	}

	const double gib = kv_total_bytes(&w) / 1073741824.0;
	std::printf("\nKV restore through the staged path (docs/staged.md), MEASURED: %s, %u targets x %u executor threads, "
		    "%u queue pairs of depth %u a target, each with a staging ring of %u slots of %" PRIu64
		    " KiB in pinned GPU-mapped host memory; the mover keeps %u loads in flight a lane (the default "
		    "move_depth); completions: design %s. Workload: %s, %" PRIu64
		    " tokens (%u blocks x %u layers, %" PRIu64 " KiB objects: K and V apart in a vLLM pool in HBM, "
		    "restored into shuffled blocks, every byte verified after each repetition). One gio_kv_load_layer() "
		    "launch per layer on one stream (all SMs available; the I/O kernel has one thread block of %u warps "
		    "per I/O SM, and no more warps than the layer has command groups of up to 32 objects: the blocks a "
		    "launch really had are in the second column, and SMs per 10 GB/s counts those). Load GB/s: device "
		    "scope (CUDA events around the layers' launches: the data is in HBM when the last layer's completion "
		    "is seen); bulk H2D: one cudaMemcpyAsync of the same bytes from "
		    "pinned host memory into HBM on its own stream, after each load. CPU: getrusage(RUSAGE_SELF) over "
		    "each load, every thread of the process (the executors' memcpy included; the waiting thread naps). "
		    "%d repetitions after %d warm-up: median [min, max].\n\n",
		    kTarget, o.targets, o.threads, o.qps, o.depth, o.slots, g.slot_bytes >> 10, GIO_KV_MOVE_DEPTH_DEFAULT, kDesign, w.geom_name, w.tokens,
		    w.n_blocks, w.n_layers, 2 * w.obj_bytes >> 10, o.io_warps, o.reps, o.warmup);
	std::printf("| mover | I/O SMs (plan io_ctas) | blocks launched (groups a layer) | warps a block | GiB | load GB/s | "
		    "bulk H2D GB/s | load / bulk | SMs per 10 GB/s | CPU s / GB (process) | CPU cores busy | mover thread CPU s / GB | verified |\n");
	std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (const restore_row &p : rows)
		std::printf("| %s | %u | %u (%u) | %u | %.2f | %.2f [%.2f, %.2f] | %.2f [%.2f, %.2f] | %.1f%% | %.2f | %.3f | %.2f | %.4f | yes |\n",
			    p.mover != GIO_KV_MOVER_COPY_ENGINE ? "the warps"
			    : p.completions == GIO_KV_COMPLETIONS_MIRROR ? "copy engine, completions mirrored (design C over E)"
									  : "copy engine (design E)",
			    p.io_ctas, p.blocks, p.groups, p.io_warps, gib, p.gbps, p.gbps_min, p.gbps_max, p.bulk_gbps, p.bulk_min,
			    p.bulk_max, p.bulk_gbps > 0 ? 100.0 * p.gbps / p.bulk_gbps : 0.0,
			    p.gbps > 0 ? p.blocks / (p.gbps / 10.0) : 0.0, p.cpu_s_per_gb, p.cpu_cores, p.mover_s_per_gb);
	if (o.interference) {
		std::printf("\nInterference, MEASURED: does restoring slow compute in the other SM partition? An SM partition "
			    "(green contexts%s): I/O %u SMs, compute %u SMs. Each compute kernel: N back-to-back launches on the "
			    "compute partition's stream (CUDA events), alone, then while restore batches of every layer (the "
			    "table above's load, the I/O kernel with %u blocks of %u warps) loop on the I/O partition's stream "
			    "until the compute timing is done; %d repetitions, alternating which goes first: median [min, max]. "
			    "Restore GB/s: bytes of the batches over the device time from the first's start to the last's end "
			    "(the gaps between batches included). CPU: getrusage(RUSAGE_SELF) over the windows with restores. "
			    "Target: %s. Floor rows: the same bytes from pinned host memory into HBM in bulk, looped the same "
			    "way, by the same warps with the mover's copy and no commands or polls, or by the copy engine: "
			    "what moving the bytes at all costs the kernel; the object-by-object row moves each object's runs "
			    "with cudaMemcpyBatchAsync, the copies a host thread would issue for design E (docs/staged.md); its "
			    "CPU column includes the thread issuing them. Mover thread CPU: the copy-engine mover's own thread "
			    "(gio_kv_plan_stats::mover_cpu_ns), per GB restored; 0 where the warps move.%s\n\n",
			    pinfo.isolated ? "" : "; NOT isolated: ordinary streams, the figures mean nothing", pinfo.io_sms,
			    pinfo.compute_sms, iface_sms, o.io_warps, o.reps, kTarget,
#ifdef GIO_BENCH_CUBLAS
			    ""
#else
			    " No GEMM row: CMake found no cuBLAS when this bench was built."
#endif
		);
		std::printf("| compute kernel (compute partition) | mover; completions (design) | I/O SMs (blocks launched) | compute SMs | launches | "
			    "alone: ms (rate) | beside the mover: ms | slowdown | GB/s moved meanwhile | CPU s / GB (process) | "
			    "CPU cores busy | mover thread CPU s / GB |\n");
		std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		for (const interference_row &p : irows)
			std::printf("| %s | %s%s%s%s%s | %u (%u) | %u | %d | %.2f (%.1f %s) | %.2f | %+.2f%% [%+.2f, %+.2f] | %.2f [%.2f, %.2f] | "
				    "%.3f | %.2f | %.4f |\n",
				    p.kernel.c_str(), kMoverName[p.mover],
				    mover_detail(p).c_str(),
				    p.mover == kRestore ? "; " : "",
				    p.mover != kRestore ? "" : p.completions == GIO_KV_COMPLETIONS_MIRROR ? kDesignMirror : kDesign,
				    p.mover == kRestore && p.poll_ns ? (", polls paced: " + std::to_string(p.poll_ns) + " ns at least between them").c_str() : "",
				    p.io_sms, p.blocks, p.compute_sms, p.launches, p.alone_ms, p.rate_alone, p.unit,
				    p.with_ms, p.slow, p.slow_min, p.slow_max, p.restore_gbps, p.restore_min, p.restore_max,
				    p.cpu_s_per_gb, p.cpu_cores, p.mover_s_per_gb);
	}

	if (o.json) {
		FILE *f = std::fopen(o.json, "w");
		if (!f)
			kv_die("cannot write %s", o.json);
		char mline[1024];
		kv_machine_describe(&m, mline, sizeof(mline));
		std::fprintf(f, "{\"bench\": \"bench_kv_staged\", \"machine\": ");
		kv_json_string(f, mline);
		std::fprintf(f, ", \"measured\": true, \"target\": ");
		kv_json_string(f, kTarget);
		std::fprintf(f, ", \"design\": ");
		kv_json_string(f, kDesign);
		std::fprintf(f, ", \"geometry\": \"%s\", \"tokens\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"object_bytes\": %" PRIu64
			     ", \"targets\": %u, \"threads\": %u, \"qps\": %u, \"depth\": %u, \"slots\": %u, \"slot_bytes\": %" PRIu64
			     ", \"reps\": %d, \"warmup\": %d, \"restore\": [",
			     w.geom_name, w.tokens, kv_total_bytes(&w), 2 * w.obj_bytes, o.targets, o.threads, o.qps, o.depth, o.slots,
			     g.slot_bytes, o.reps, o.warmup);
		for (size_t i = 0; i < rows.size(); i++) {
			const restore_row &p = rows[i];
			std::fprintf(f, "%s{\"mover\": \"%s\", \"io_sms\": %u, \"blocks\": %u, \"groups_per_layer\": %u, \"io_warps\": %u, \"load_gbps\": "
				     "[%.3f, %.3f, %.3f], \"bulk_gbps\": [%.3f, %.3f, %.3f], \"sms_per_10gbps\": %.3f, \"cpu_s_per_gb\": %.4f, "
				     "\"cpu_cores\": %.3f, \"mover_cpu_s_per_gb\": %.5f, \"verified\": true}",
				     i ? ", " : "",
				     p.mover != GIO_KV_MOVER_COPY_ENGINE ? "warps"
				     : p.completions == GIO_KV_COMPLETIONS_MIRROR ? "copy engine, completions mirrored"
										   : "copy engine",
				     p.io_ctas, p.blocks, p.groups, p.io_warps, p.gbps_min, p.gbps, p.gbps_max, p.bulk_min,
				     p.bulk_gbps, p.bulk_max, p.gbps > 0 ? p.blocks / (p.gbps / 10.0) : 0.0, p.cpu_s_per_gb, p.cpu_cores,
				     p.mover_s_per_gb);
		}
		std::fprintf(f, "], \"partition\": {\"made\": %s, \"io_sms\": %u, \"compute_sms\": %u, \"isolated\": %u}, "
			     "\"interference\": [",
			     o.interference ? "true" : "false", pinfo.io_sms, pinfo.compute_sms, pinfo.isolated);
		for (size_t i = 0; i < irows.size(); i++) {
			const interference_row &p = irows[i];
			std::fprintf(f, "%s{\"kernel\": ", i ? ", " : "");
			kv_json_string(f, p.kernel.c_str());
			std::fprintf(f, ", \"mover\": ");
			kv_json_string(f, kMoverName[p.mover]);
			std::fprintf(f, ", \"plan_mover\": \"%s\", \"completions\": \"%s\"",
				     p.plan_mover == GIO_KV_MOVER_COPY_ENGINE ? "copy engine" : "warps",
				     p.completions == GIO_KV_COMPLETIONS_MIRROR ? "mirrored" : "polled");
			std::fprintf(f, ", \"loads_in_flight\": %u, \"objects_per_call\": %u, \"calls_per_batch\": %" PRIu64 ", \"poll_ns\": %u",
				     p.mover == kCopyObjects ? 0 : p.depth, p.mover == kCopyObjects ? p.depth : 0, p.calls, p.poll_ns);
			std::fprintf(f, ", \"io_sms\": %u, \"blocks\": %u, \"compute_sms\": %u, \"io_warps\": %u, \"launches\": %d, \"reps\": %d, "
				     "\"alone_ms\": %.4f, \"with_restores_ms\": %.4f, \"rate_alone\": %.3f, \"rate_unit\": \"%s\", "
				     "\"slowdown_pct\": [%.3f, %.3f, %.3f], \"restore_gbps\": [%.3f, %.3f, %.3f], \"batches\": %" PRIu64
				     ", \"cpu_s_per_gb\": %.4f, \"cpu_cores\": %.3f, \"mover_cpu_s_per_gb\": %.5f}",
				     p.io_sms, p.blocks, p.compute_sms, p.io_warps, p.launches, p.reps, p.alone_ms, p.with_ms, p.rate_alone, p.unit,
				     p.slow_min, p.slow, p.slow_max, p.restore_min, p.restore_gbps, p.restore_max, p.batches,
				     p.cpu_s_per_gb, p.cpu_cores, p.mover_s_per_gb);
		}
#ifdef GIO_BENCH_CUBLAS
		std::fprintf(f, "], \"gemm\": true}\n");
#else
		std::fprintf(f, "], \"gemm\": false}\n");
#endif
		std::fclose(f);
	}

	for (const ce_plan &cp : ce_plans)
		plans.push_back(cp.plan);
	for (gio_kv_plan *p : plans)
		if (gio_kv_plan_destroy(p))
			die_gio("plan destroy");
	KV_CK(cudaDeviceSynchronize());
	rig_close(g);
	kv_runner_destroy(&r);
	kv_workload_destroy(&w);
	KV_CK(cudaStreamDestroy(bulk));
	KV_CK(cudaEventDestroy(b0));
	KV_CK(cudaEventDestroy(b1));
	KV_CK(cudaEventDestroy(c0));
	KV_CK(cudaEventDestroy(c1));
#ifdef GIO_BENCH_CUBLAS
	if (o.interference) {
		cublasDestroy(ga.h);
		KV_CK(cudaFree(ga.a));
		KV_CK(cudaFree(ga.b));
		KV_CK(cudaFree(ga.c));
		KV_CK(cudaFree(ws));
	}
#endif
	if (csrc)
		KV_CK(cudaFree(csrc));
	if (cdst)
		KV_CK(cudaFree(cdst));
	if (part && gio_sm_partition_destroy(part))
		die_gio("SM partition destroy");
	return 0;
}
