// bench_gpu_cmdrate: NVMe commands/s submitted and completed by GPU warps through giouring queue
// pairs, against the GPU-executed software target with no data moved, beside the command-rate
// ceiling of a stripped-down protocol (bench/common/ceiling.cuh) measured in the same process.
//
// Each point opens `mem://hbm?data=0&...` (rings in HBM, or `rings=host`: SQ/CQ entries and
// doorbells in mapped pinned host memory; `scope=gpu|sys`: the memory scope of the ring
// protocol's ordering), starts the executor kernel on `exec` SMs, then runs an I/O kernel of `io`
// blocks (one per SM) whose warps each submit 32 Reads of one block with gio_submit_warp (one
// reservation, one doorbell) and wait with gio_wait_warp (the warp reaps 32 CQEs at a time), in a
// loop, for a fixed time. Every command is checked (opcode, namespace, LBA range, SGL walk,
// registered memory) and completed by the executor; no byte moves (data=0). Commands/s =
// completions counted by the producers / the I/O kernel's time (CUDA events); the executor's own
// count must match. Each row says its ordering scope and that no data moved, as the target was
// opened.
//
// The ceiling rows run the same batches (32 commands, the same batches in flight per warp) over
// queue pairs that nothing shares, with an in-order executor that checks nothing: no CID
// allocation, no shared queues, no in-order commit. They bound what any protocol of this shape
// gets on this GPU; they are not giouring.
//
// Output: machine line, Markdown tables, JSON with --json. Exit 77 without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <giouring/device/owned.cuh>
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/target/gpu_exec.cuh>
#include <giouring/target/gpu_target.h>
#include <giouring/proto/sgl_build.h>

#include "common/ceiling.cuh"
#include "common/check.cuh"
#include "common/json.cuh"
#include "common/machine.cuh"
#include "common/timing.cuh"

namespace {

struct Counters {
	unsigned long long done, errors, submit_fail;
	unsigned long long submit_ns, wait_ns, submits, waits; // lane 0's %globaltimer, summed
	unsigned long long stage_ns[5]; // --stages: gio_submit_warp's steps (gio__submit_warp's marks), summed
	uint32_t first_status;
	int first_rc;
};

// Warp w uses queue pair w % nqps and keeps up to `inflight` batches of 32 one-block Reads in
// flight: it submits a batch (one reservation, one doorbell), and once `inflight` are out it waits
// for the oldest (reaping 32 CQEs at a time). Pipelining hides the round trip's latency.
constexpr uint32_t kMaxInflight = 8;
bool g_profile = false; // --profile: the executor times its steps (URI profile=1)
bool g_stages = false;  // --stages: the I/O kernel times gio_submit_warp's steps
bool g_owned = false;   // --owned: every producer warp owns its queue pair (GIO_QP_OWNED)
bool g_session = false; // --session: ... and runs a warp session on it (giouring/device/owned.cuh)
bool g_fused = false;   // --fused: ... in one launch with the executor (fused_kernel)

// gio_submit_warp's marks, timed by lane 0 (%globaltimer): the time since the previous mark.
struct StageMarks {
	uint64_t last;
	unsigned long long ns[5];
	__device__ void mark(int k)
	{
		if ((threadIdx.x & 31u) == 0) {
			const uint64_t t = gio_now_ns();
			ns[k] += t - last;
			last = t;
		}
	}
};

// At most 32 warps per block (--io-warps): bounded so that the timed form fits the registers too.
template <bool Stages, uint32_t MaxThreads>
__global__ void __launch_bounds__(MaxThreads, 1) io_kernel(gio_qp *qps, uint32_t nqps, uint64_t buf_addr, uint32_t block_bytes, uint64_t nblocks,
			  uint64_t run_ns, uint32_t inflight, Counters *c)
{
	StageMarks marks{};
	const uint32_t lane = threadIdx.x & 31u;
	const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
	gio_qp *qp = &qps[warp % nqps];
	uint64_t t_end = 0;
	if (lane == 0)
		t_end = gio_now_ns() + run_ns;
	t_end = __shfl_sync(0xffffffffu, t_end, 0);
	const uint64_t deadline = gio_deadline_in(run_ns + 10ull * 1000000000ull);
	unsigned long long done = 0, errors = 0, sub_ns = 0, wait_ns = 0, subs = 0, waits = 0;
	uint64_t lba = ((uint64_t)warp * 32u + lane) * 7919u % nblocks;
	const uint64_t step = (32ull * 7919u) % nblocks; // a batch's stride, so no division per batch
	uint32_t cids[kMaxInflight];
	uint32_t head = 0, tail = 0; // batches submitted and waited for (free-running)
	int go = 1;
	for (;;) {
		go = go && kv_warp_before(t_end);
		if (go && head - tail < inflight) {
			gio_sqe sqe;
			gio_prep_read(&sqe, GIO_TGT_NSID, lba, 1);
			gio_sqe_set_sgl_data(&sqe, buf_addr, block_bytes);
			const uint64_t t0 = gio_now_ns();
			marks.last = t0;
			const int rc = Stages ? gio__submit_warp(qp, &sqe, 0, 0, 1, deadline, &cids[head % kMaxInflight], marks)
					      : gio_submit_warp(qp, &sqe, 0, 0, 1, deadline, &cids[head % kMaxInflight]);
			if (lane == 0) {
				sub_ns += gio_now_ns() - t0;
				subs++;
			}
			if (rc) {
				if (lane == 0) {
					atomicAdd(&c->submit_fail, 1ull);
					atomicCAS(&c->first_rc, 0, rc);
				}
				go = 0;
			} else {
				head++;
				lba += step;
				if (lba >= nblocks)
					lba -= nblocks;
			}
			continue;
		}
		if (head == tail)
			break;
		uint16_t st = 0;
		const uint64_t t0 = gio_now_ns();
		const int rc = gio_wait_warp(qp, cids[tail % kMaxInflight], 1, deadline, &st);
		if (lane == 0) {
			wait_ns += gio_now_ns() - t0;
			waits++;
		}
		tail++;
		if (rc) {
			errors++;
			atomicCAS(&c->first_rc, 0, rc);
			atomicCAS(&c->first_status, 0u, (uint32_t)st);
		} else {
			done++;
		}
	}
	for (int o = 16; o; o >>= 1) {
		done += __shfl_xor_sync(0xffffffffu, done, o);
		errors += __shfl_xor_sync(0xffffffffu, errors, o);
	}
	if (lane == 0) {
		atomicAdd(&c->done, done);
		atomicAdd(&c->errors, errors);
		atomicAdd(&c->submit_ns, sub_ns);
		atomicAdd(&c->wait_ns, wait_ns);
		atomicAdd(&c->submits, subs);
		atomicAdd(&c->waits, waits);
		for (int k = 0; Stages && k < 5; k++)
			atomicAdd(&c->stage_ns[k], marks.ns[k]);
	}
}

// io_kernel's loop through a warp session on each owned queue pair, for producer warp `warp`:
// ring state in registers, the window of command states in `entries` (window of them, this warp's,
// in the block's dynamic shared memory).
__device__ void session_loop(gio_qp *qps, uint32_t nqps, uint64_t buf_addr, uint32_t block_bytes, uint64_t nblocks,
			     uint64_t run_ns, uint32_t inflight, gio_owned_entry *entries, uint32_t window, uint32_t warp,
			     Counters *c)
{
	const uint32_t lane = threadIdx.x & 31u;
	gio_owned_warp w;
	int rc = gio_owned_open_warp(&w, &qps[warp % nqps], entries, window);
	if (rc) {
		if (lane == 0) {
			atomicAdd(&c->submit_fail, 1ull);
			atomicCAS(&c->first_rc, 0, rc);
		}
		return;
	}
	uint64_t t_end = 0;
	if (lane == 0)
		t_end = gio_now_ns() + run_ns;
	t_end = __shfl_sync(0xffffffffu, t_end, 0);
	const uint64_t deadline = gio_deadline_in(run_ns + 10ull * 1000000000ull);
	unsigned long long done = 0, errors = 0, sub_ns = 0, wait_ns = 0, subs = 0, waits = 0;
	uint64_t lba = ((uint64_t)warp * 32u + lane) * 7919u % nblocks;
	const uint64_t step = (32ull * 7919u) % nblocks; // a batch's stride, so no division per batch
	// A batch of 32 takes 32 consecutive tickets, so batch b's is the first one + 32 * b: an
	// array of them, indexed by a variable, would live in local memory (measured with the
	// division: 3.5% of the rate on the H100, bench/results/2026-12-06-cmdrate-session-slots.md).
	uint32_t first_ticket = 0;
	uint32_t head = 0, tail = 0; // batches submitted and waited for (free-running)
	int go = 1;
	for (;;) {
		go = go && kv_warp_before(t_end);
		if (go && head - tail < inflight) {
			gio_sqe sqe;
			gio_prep_read(&sqe, GIO_TGT_NSID, lba, 1);
			gio_sqe_set_sgl_data(&sqe, buf_addr, block_bytes);
			const uint64_t t0 = gio_now_ns();
			uint32_t ticket = 0;
			rc = gio_owned_submit_warp(&w, &sqe, 0, 0, 1, deadline, &ticket);
			if (head == 0)
				first_ticket = ticket;
			if (lane == 0) {
				sub_ns += gio_now_ns() - t0;
				subs++;
			}
			if (rc) {
				if (lane == 0) {
					atomicAdd(&c->submit_fail, 1ull);
					atomicCAS(&c->first_rc, 0, rc);
				}
				go = 0;
			} else {
				head++;
				lba += step;
				if (lba >= nblocks)
					lba -= nblocks;
			}
			continue;
		}
		if (head == tail)
			break;
		uint16_t st = 0;
		const uint64_t t0 = gio_now_ns();
		rc = gio_owned_wait_warp(&w, first_ticket + 32u * tail, 1, deadline, &st);
		if (lane == 0) {
			wait_ns += gio_now_ns() - t0;
			waits++;
		}
		tail++;
		if (rc) {
			errors++;
			atomicCAS(&c->first_rc, 0, rc);
			atomicCAS(&c->first_status, 0u, (uint32_t)st);
		} else {
			done++;
		}
	}
	gio_owned_close_warp(&w);
	for (int o = 16; o; o >>= 1) {
		done += __shfl_xor_sync(0xffffffffu, done, o);
		errors += __shfl_xor_sync(0xffffffffu, errors, o);
	}
	if (lane == 0) {
		atomicAdd(&c->done, done);
		atomicAdd(&c->errors, errors);
		atomicAdd(&c->submit_ns, sub_ns);
		atomicAdd(&c->wait_ns, wait_ns);
		atomicAdd(&c->submits, subs);
		atomicAdd(&c->waits, waits);
	}
}

template <uint32_t MaxThreads>
__global__ void __launch_bounds__(MaxThreads, 1) session_kernel(gio_qp *qps, uint32_t nqps, uint64_t buf_addr, uint32_t block_bytes,
								 uint64_t nblocks, uint64_t run_ns, uint32_t inflight, uint32_t window, Counters *c)
{
	extern __shared__ gio_owned_entry entries[];
	session_loop(qps, nqps, buf_addr, block_bytes, nblocks, run_ns, inflight, entries + (threadIdx.x / 32u) * window, window,
		     (blockIdx.x * blockDim.x + threadIdx.x) / 32u, c);
}

// --fused: the GPU target's executor (its first exec_blocks blocks) and the session producers (the
// rest) in one launch, so that tools which serialize kernels (ncu, compute-sanitizer) can run the
// pair. The last producer block to finish stops the executor.
template <uint32_t MaxThreads>
__global__ void __launch_bounds__(MaxThreads, 1) fused_kernel(gio_tgt *t, unsigned char *backing, gio_gpu_ctl *ctl, uint32_t flags,
							       gio_ssd_model model, uint32_t exec_blocks, gio_qp *qps, uint32_t nqps,
							       uint64_t buf_addr, uint32_t block_bytes, uint64_t nblocks, uint64_t run_ns,
							       uint32_t inflight, uint32_t window, Counters *c, uint32_t *finished)
{
	extern __shared__ uint4 fused_smem[]; // the executor's env per warp, or the producers' windows
	const uint32_t wib = threadIdx.x / 32u;
	if (blockIdx.x < exec_blocks) {
		gio_gpu_exec_loop(t, backing, ctl, flags, &model, (blockIdx.x * blockDim.x + threadIdx.x) / 32u,
				  exec_blocks * blockDim.x / 32u, (gio_gpu_exec_env *)fused_smem + wib);
		return;
	}
	session_loop(qps, nqps, buf_addr, block_bytes, nblocks, run_ns, inflight, (gio_owned_entry *)fused_smem + wib * window,
		     window, ((blockIdx.x - exec_blocks) * blockDim.x + threadIdx.x) / 32u, c);
	__syncthreads();
	if (threadIdx.x == 0 && atomicAdd(finished, 1u) == gridDim.x - exec_blocks - 1u)
		gio_store_release(&ctl->stop, 1u);
}

// The producer kernel for blocks of io_warps warps: bounded to 256 threads where they fit (the
// ceiling's kernels are), so that both get a 256-thread block's registers; bounded to 1024, the
// session kernel had 64 registers a thread and spilled, the ceiling's none.
const void *producer_kernel(bool session, bool stages, uint32_t io_warps)
{
	const bool narrow = io_warps <= 8;
	if (session && g_fused)
		return narrow ? (const void *)fused_kernel<256> : (const void *)fused_kernel<1024>;
	if (session)
		return narrow ? (const void *)session_kernel<256> : (const void *)session_kernel<1024>;
	if (stages)
		return narrow ? (const void *)io_kernel<true, 256> : (const void *)io_kernel<true, 1024>;
	return narrow ? (const void *)io_kernel<false, 256> : (const void *)io_kernel<false, 1024>;
}

// The window a session needs for `inflight` batches of 32 outstanding: a power of two, at most
// half the ring.
uint32_t session_window(uint32_t inflight, uint32_t depth)
{
	uint32_t w = 32;
	while (w < inflight * 32u)
		w *= 2;
	return w < depth / 2 ? w : depth / 2;
}

struct Point {
	std::string rings, scope;
	uint32_t io_sms, io_warps, exec_sms, exec_warps, queues, depth;
	double ms, mcmds, per_io_sm, exec_batch;
	double submit_us, wait_us;       // producer warp: per batch submitted / waited for
	double stage_us[5];              // --stages: gio_submit_warp's steps per batch
	double exec_us[4], idle_pass_us; // executor warp, per batch: fetch, SQEs, data, post; per empty pass
	unsigned long long done, errors, exec_commands;
	bool data_moved;
	bool checked; // URI check=1: every command's data pointer checked at submission
	bool ok;
};

std::string machine_line()
{
	int dev = 0;
	KV_CK(cudaGetDevice(&dev));
	struct kv_machine m;
	kv_machine_probe(dev, &m);
	char line[1024];
	kv_machine_describe(&m, line, sizeof(line));
	return line;
}

Point run_point(const char *rings, const char *scope, uint32_t io_sms, uint32_t io_warps, uint32_t exec_sms, uint32_t exec_warps,
		uint32_t queues, uint32_t depth, uint32_t inflight, double seconds, bool check)
{
	Point pt{};
	pt.rings = rings;
	pt.scope = scope;
	pt.io_sms = io_sms;
	pt.io_warps = io_warps;
	pt.exec_sms = exec_sms;
	pt.exec_warps = exec_warps;
	pt.queues = queues;
	pt.depth = depth;
	char uri[512];
	std::snprintf(uri, sizeof(uri),
		      "mem://hbm?size=64M&data=0&queues=%u&depth=%u&sms=%u&warps=%u&rings=%s&scope=%s&profile=%d&check=%d", queues,
		      depth, exec_sms, exec_warps, rings, scope, g_profile ? 1 : 0, check ? 1 : 0);
	gio_gpu_target *g = nullptr;
	if (gio_gpu_target_open(uri, &g)) {
		std::fprintf(stderr, "FAIL: %s: %s\n", uri, gio_last_error());
		std::exit(1);
	}
	// As opened, not as asked: the row says what the target did.
	pt.scope = (g->cfg.flags & GIO_GPU_SCOPE_SYS) ? "sys" : "gpu";
	pt.data_moved = !(g->cfg.flags & GIO_GPU_NO_DATA);
	pt.checked = (g->cfg.flags & GIO_GPU_CHECK) != 0;
	if (g_owned) {
		// A queue pair per producer warp (warp w uses w % queues): each is the warp's own.
		if (queues < io_sms * io_warps) {
			std::fprintf(stderr, "FAIL: --owned needs a queue pair per producer warp: %u queues for %u warps\n", queues,
				     io_sms * io_warps);
			std::exit(1);
		}
		for (uint32_t q = 0; q < queues; q++)
			g->qps_host[q].flags |= GIO_QP_OWNED; // the start copies the images to the device
	}
	void *buf;
	KV_CK(cudaMalloc(&buf, 1 << 20));
	uint64_t addr = 0;
	if (gio_gpu_target_register(g, buf, 1 << 20, &addr)) {
		std::fprintf(stderr, "FAIL: register: %s\n", gio_last_error());
		std::exit(1);
	}
	Counters *c;
	KV_CK(cudaMallocManaged(&c, sizeof(*c)));
	std::memset(c, 0, sizeof(*c));
	size_t smem = 0;
	const void *kernel = producer_kernel(g_session, g_stages, io_warps);
	uint32_t *finished = nullptr; // --fused: producer blocks done (the last one stops the executor)
	if (g_fused) {
		int sms = 0;
		KV_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
		// One block size for both parts, and every block resident at once (a block per SM): an
		// executor block that ran while a producer block waited for an SM would spin for ever.
		if (exec_warps != io_warps || g->cfg.exec_blocks + io_sms > (uint32_t)sms) {
			std::fprintf(stderr, "FAIL: --fused needs --exec-warps equal to --io-warps (%u, %u) and %u + %u blocks within %d SMs\n",
				     exec_warps, io_warps, g->cfg.exec_blocks, io_sms, sms);
			std::exit(2);
		}
		KV_CK(cudaMallocManaged(&finished, sizeof(*finished)));
		*finished = 0;
	}
	if (gio_gpu_preload(kernel) || gio_gpu_one_block_per_sm(kernel, &smem) ||
	    (g_fused ? gio_gpu_target_prepare(g) : gio_gpu_target_start(g))) {
		std::fprintf(stderr, "FAIL: start: %s\n", gio_last_error());
		std::exit(1);
	}
	if (g_fused && smem < (size_t)exec_warps * sizeof(gio_gpu_exec_env)) {
		std::fprintf(stderr, "FAIL: --fused: %u executor warps need %zu bytes of shared memory, a block gets %zu\n", exec_warps,
			     (size_t)exec_warps * sizeof(gio_gpu_exec_env), smem);
		std::exit(1);
	}
	cudaStream_t s;
	KV_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t e0, e1;
	KV_CK(cudaEventCreate(&e0));
	KV_CK(cudaEventCreate(&e1));
	const uint64_t run_ns = (uint64_t)(seconds * 1e9);
	// Warm-up: a short run (first touches of managed queue state migrate it to the GPU).
	const uint32_t window = session_window(inflight, depth);
	if (g_session && smem < (size_t)io_warps * window * sizeof(gio_owned_entry)) {
		std::fprintf(stderr, "FAIL: --session: %u warps of %u entries do not fit %zu bytes of shared memory\n", io_warps,
			     window, smem);
		std::exit(1);
	}
	auto launch = [&](uint64_t ns) {
		uint32_t block_bytes = 4096;
		uint64_t nblocks = (64u << 20) / 4096;
		void *session_args[] = {&g->qps, &queues, &addr, &block_bytes, &nblocks, &ns, &inflight, (void *)&window, &c};
		void *io_args[] = {&g->qps, &queues, &addr, &block_bytes, &nblocks, &ns, &inflight, &c};
		uint32_t exec_blocks = g->cfg.exec_blocks;
		void *fused_args[] = {&g->tgt,    &g->backing, &g->ctl_dev, &g->cfg.flags, &g->cfg.model,      &exec_blocks,
				      &g->qps,    &queues,     &addr,       &block_bytes,   &nblocks,           &ns,
				      &inflight, (void *)&window, &c,        &finished};
		if (g_fused)
			KV_CK(cudaLaunchKernel(kernel, dim3(exec_blocks + io_sms), dim3(io_warps * 32), fused_args, smem, s));
		else
			KV_CK(cudaLaunchKernel(kernel, dim3(io_sms), dim3(io_warps * 32), g_session ? session_args : io_args, smem, s));
	};
	// --fused: after each launch the executor's state is read back, and prepared again before the
	// next (gio_gpu_target_prepare() zeroes the control block's counters: the timed run's alone).
	auto read_back = [&](struct gio_tgt_stats *st) {
		if (gio_gpu_target_read_back(g, 10000, st)) {
			std::fprintf(stderr, "FAIL: read back: %s\n", gio_last_error());
			std::exit(1);
		}
	};
	struct gio_tgt_stats warm{};
	launch(run_ns / 10);
	KV_CK(cudaGetLastError());
	KV_CK(cudaStreamSynchronize(s));
	if (g_fused) {
		read_back(&warm);
		*finished = 0;
		if (gio_gpu_target_prepare(g)) {
			std::fprintf(stderr, "FAIL: prepare: %s\n", gio_last_error());
			std::exit(1);
		}
	}
	std::memset(c, 0, sizeof(*c));
	KV_CK(cudaEventRecord(e0, s));
	launch(run_ns);
	KV_CK(cudaGetLastError());
	KV_CK(cudaEventRecord(e1, s));
	KV_CK(cudaStreamSynchronize(s));
	float ms = 0;
	KV_CK(cudaEventElapsedTime(&ms, e0, e1));
	struct gio_tgt_stats ts{};
	if (g_fused) {
		read_back(&ts);
	} else if (gio_gpu_target_stop(g, 10000, &ts)) {
		std::fprintf(stderr, "FAIL: stop: %s\n", gio_last_error());
		std::exit(1);
	}
	pt.ms = ms;
	pt.done = c->done; // one per lane per batch: every command
	pt.errors = c->errors;
	pt.exec_commands = ts.commands;
	pt.mcmds = (double)c->done / (ms * 1e3);
	pt.per_io_sm = pt.mcmds / io_sms;
	// The control block counts the executor's batches since its last prepare: with --fused, the
	// timed launch's (the target's command count goes on from the warm-up's).
	const uint64_t batched = ts.commands - (g_fused ? warm.commands : 0);
	pt.exec_batch = g->ctl->batches ? (double)batched / (double)g->ctl->batches : 0;
	pt.ok = c->errors == 0 && c->submit_fail == 0 && ts.errors == 0;
	pt.submit_us = c->submits ? c->submit_ns / 1e3 / c->submits : 0;
	pt.wait_us = c->waits ? c->wait_ns / 1e3 / c->waits : 0;
	for (int k = 0; k < 5; k++)
		pt.stage_us[k] = c->submits ? c->stage_ns[k] / 1e3 / c->submits : 0;
	const double nb = g->ctl->batches ? (double)g->ctl->batches : 1;
	for (int i = 0; i < 4; i++)
		pt.exec_us[i] = g->ctl->prof[i] / 1e3 / nb;
	pt.idle_pass_us = g->ctl->prof[5] ? g->ctl->prof[4] / 1e3 / g->ctl->prof[5] : 0;
	if (!pt.ok)
		std::fprintf(stderr, "point %s io %u exec %u q %u: %llu errors, %llu failed submits, first rc %d status 0x%04x\n",
			     rings, io_sms, exec_sms, queues, c->errors, c->submit_fail, c->first_rc, c->first_status);
	KV_CK(cudaEventDestroy(e0));
	KV_CK(cudaEventDestroy(e1));
	KV_CK(cudaStreamDestroy(s));
	KV_CK(cudaFree(c));
	KV_CK(cudaFree(buf));
	if (finished)
		KV_CK(cudaFree(finished));
	gio_gpu_target_close(g);
	return pt;
}

std::vector<uint32_t> list(const char *s)
{
	std::vector<uint32_t> v;
	while (s && *s) {
		v.push_back((uint32_t)std::strtoul(s, nullptr, 10));
		s = std::strchr(s, ',');
		if (s)
			s++;
	}
	return v;
}

} // namespace

int main(int argc, char **argv)
{
	const char *json = nullptr;
	double seconds = 0.3;
	std::vector<uint32_t> io_list = {1, 2, 4, 8, 16, 32}, exec_list = {0}, q_list = {1024};
	// Ceiling rows: queue pairs, each a producer warp and an executor warp (blocks of 8 warps).
	std::vector<uint32_t> ceil_list = {64, 512, 1024, 2048};
	std::vector<std::string> rings_list = {"hbm", "host"}, scope_list = {"gpu"};
	uint32_t io_warps = 32, exec_warps = 8, depth = 1024, inflight = 4;
	bool quick = false;
	std::vector<bool> check_modes = {false};
	struct Spec {
		std::string rings, scope;
		uint32_t io, exec, queues;
	};
	std::vector<Spec> points;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto next = [&](const char *what) {
			if (i + 1 >= argc) {
				std::fprintf(stderr, "%s needs a value\n", what);
				std::exit(2);
			}
			return argv[++i];
		};
		if (a == "--json")
			json = next("--json");
		else if (a == "--seconds")
			seconds = std::atof(next("--seconds"));
		else if (a == "--io-sms")
			io_list = list(next("--io-sms"));
		else if (a == "--exec-sms")
			exec_list = list(next("--exec-sms"));
		else if (a == "--queues")
			q_list = list(next("--queues"));
		else if (a == "--io-warps")
			io_warps = (uint32_t)std::atoi(next("--io-warps"));
		else if (a == "--exec-warps")
			exec_warps = (uint32_t)std::atoi(next("--exec-warps"));
		else if (a == "--inflight")
			inflight = std::max(1u, std::min(kMaxInflight, (uint32_t)std::atoi(next("--inflight"))));
		else if (a == "--depth")
			depth = (uint32_t)std::atoi(next("--depth"));
		else if (a == "--rings") {
			const std::string v = next("--rings");
			rings_list.clear();
			for (const char *r : {"hbm", "host"})
				if (v.find(r) != std::string::npos)
					rings_list.push_back(r);
		} else if (a == "--scope") {
			const std::string v = next("--scope");
			scope_list.clear();
			for (const char *r : {"gpu", "sys"})
				if (v.find(r) != std::string::npos)
					scope_list.push_back(r);
		} else if (a == "--points") {
			// rings:io_sms:exec_sms[:scope], comma-separated; replaces the sweep lists
			std::string v = next("--points");
			size_t at = 0;
			while (at <= v.size()) {
				const size_t end = std::min(v.find(',', at), v.size());
				const std::string one = v.substr(at, end - at);
				char r[16] = "", sc[16] = "gpu";
				unsigned io = 0, ex = 0;
				if (std::sscanf(one.c_str(), "%15[a-z]:%u:%u:%15[a-z]", r, &io, &ex, sc) < 3 || !io || !ex ||
				    (std::strcmp(r, "hbm") && std::strcmp(r, "host")) || (std::strcmp(sc, "gpu") && std::strcmp(sc, "sys"))) {
					std::fprintf(stderr, "--points: '%s' is not rings:io_sms:exec_sms[:scope]\n", one.c_str());
					return 2;
				}
				points.push_back({r, sc, io, ex, 0});
				at = end + 1;
			}
		} else if (a == "--ceiling-queues") {
			ceil_list = list(next("--ceiling-queues"));
			ceil_list.erase(std::remove(ceil_list.begin(), ceil_list.end(), 0u), ceil_list.end());
		} else if (a == "--no-ceiling") {
			ceil_list.clear();
		} else if (a == "--profile") {
			g_profile = true;
		} else if (a == "--owned") {
			g_owned = true;
		} else if (a == "--session") {
			g_owned = g_session = true;
		} else if (a == "--fused") {
			g_owned = g_session = g_fused = true;
		} else if (a == "--stages") {
			g_stages = true;
		} else if (a == "--check") {
			check_modes = {false, true};
		} else if (a == "--quick") {
			quick = true;
		} else {
			std::fprintf(stderr,
				     "usage: bench_gpu_cmdrate [--seconds S] [--io-sms LIST] [--exec-sms LIST (0: as many as io)]\n"
				     "       [--queues LIST] [--io-warps N] [--exec-warps N] [--depth N] [--inflight BATCHES] [--rings hbm,host] [--scope gpu,sys]\n"
				     "       [--points rings:io_sms:exec_sms[:scope],...] [--profile] [--stages] [--owned] [--session] [--fused] [--check] [--json PATH] [--quick]\n"
				     "       [--ceiling-queues LIST (default 64,512,1024,2048; 0: none)] [--no-ceiling]\n");
			return 2;
		}
	}
	if (quick) {
		seconds = 0.05;
		io_list = {2};
		// One queue pair per producer warp (2 SMs x 32 warps). With 8 warps on each queue pair,
		// their 4 batches in flight fill the depth-1024 ring: each warp then waits to reserve
		// while slots it needs hold results other waiting warps have not claimed, until the
		// deadline (a ring only the submitter of a command can free).
		q_list = {64};
		if (!ceil_list.empty())
			ceil_list = {64};
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA device here\n");
		return 77;
	}
	int sms = 0;
	KV_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	// Every kernel loaded before the first persistent launch (the lazy-loading trap:
	// bench/common/workload.cuh); run_point() preloads io_kernel, the target its executor.
	ceil_load_kernels();
	for (const bool session : {false, true})
		for (const bool stages : {false, true})
			for (const uint32_t warps : {8u, 32u})
				if (gio_gpu_preload(producer_kernel(session, stages, warps))) {
					std::fprintf(stderr, "FAIL: %s\n", gio_last_error());
					return 1;
				}
	const std::string machine = machine_line();
	std::printf("machine: %s\n", machine.c_str());
	std::printf("bench_gpu_cmdrate: one-block Reads, SGL data block, no data moved (data=0); %.2f s per point; "
		    "I/O kernel: %u warps per SM, 32 commands per warp batch, %u batches in flight per warp; executor: %u "
		    "warps per SM%s\n\n",
		    seconds, io_warps, inflight, exec_warps,
		    g_fused ? "; queue pairs owned by one producer warp each, through a warp session, in one launch with the executor (--fused)"
		    : g_session ? "; queue pairs owned by one producer warp each, through a warp session (--session, giouring/device/owned.cuh)"
		    : g_owned ? "; queue pairs owned by one producer warp each (--owned, GIO_QP_OWNED)" : "; queue pairs shared");
	std::printf("| rings | scope | check | I/O SMs | executor SMs | queue pairs | depth | M commands/s | M commands/s per I/O SM | "
		    "commands per executor batch | data moved | errors | ok |\n");
	std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	std::vector<Point> pts;
	bool all_ok = true;
	if (points.empty())
		for (const auto &sc : scope_list)
			for (const auto &r : rings_list)
				for (uint32_t q : q_list)
					for (uint32_t io : io_list)
						for (uint32_t ex : exec_list)
							points.push_back({r, sc, io, ex ? ex : io, q});
	for (Spec &sp : points) {
		const uint32_t q = sp.queues ? sp.queues : q_list[0];
		if (sp.io + sp.exec > (uint32_t)sms) {
			std::fprintf(stderr, "skip io %u + exec %u > %d SMs\n", sp.io, sp.exec, sms);
			continue;
		}
		for (bool check : check_modes) {
			Point p = run_point(sp.rings.c_str(), sp.scope.c_str(), sp.io, io_warps, sp.exec, exec_warps, q, depth, inflight,
					    seconds, check);
			std::printf("| %s | %s | %s | %u | %u | %u | %u | %.1f | %.1f | %.1f | %s | %llu | %s |\n", p.rings.c_str(),
				    p.scope.c_str(), p.checked ? "on" : "off", p.io_sms, p.exec_sms, p.queues, p.depth, p.mcmds, p.per_io_sm,
				    p.exec_batch, p.data_moved ? "yes" : "no", p.errors, p.ok ? "yes" : "NO");
			std::fflush(stdout);
			all_ok &= p.ok && p.exec_commands >= p.done && p.checked == check;
			pts.push_back(p);
		}
	}
	std::printf("\nPer batch of 32 commands, microseconds (%%globaltimer of lane 0, averaged): the producer warp's "
		    "gio_submit_warp and gio_wait_warp; %s\n\n",
		    g_profile ? "the executor warp's fetch, SQE read and checks, data, CQE posts, and a pass over its queues that found "
				"nothing" : "(executor steps: run with --profile)");
	std::printf("| rings | scope | check | I/O SMs | executor SMs | submit | wait | exec fetch | exec SQEs | exec data | exec post | "
		    "exec empty pass |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (const Point &p : pts)
		std::printf("| %s | %s | %s | %u | %u | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", p.rings.c_str(),
			    p.scope.c_str(), p.checked ? "on" : "off", p.io_sms, p.exec_sms, p.submit_us, p.wait_us, p.exec_us[0], p.exec_us[1], p.exec_us[2], p.exec_us[3],
			    p.idle_pass_us);
	if (g_stages) {
		std::printf("\nSteps of gio_submit_warp per batch of 32 commands, microseconds (--stages: lane 0's %%globaltimer "
			    "between marks, averaged): the reservation (gio__qp_reserve_wait_warp), the claim of the batch's "
			    "first entry, the entries written, the batch's ready mark (release), the publication (advance role "
			    "and doorbell)\n\n");
		std::printf("| rings | scope | check | I/O SMs | executor SMs | reserve | claim | write | ready mark | publish | "
			    "submit |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
		for (const Point &p : pts)
			std::printf("| %s | %s | %s | %u | %u | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", p.rings.c_str(),
				    p.scope.c_str(), p.checked ? "on" : "off", p.io_sms, p.exec_sms, p.stage_us[0], p.stage_us[1],
				    p.stage_us[2], p.stage_us[3], p.stage_us[4], p.submit_us);
	}
	std::vector<ceil_result> ceils;
	if (!ceil_list.empty()) {
		std::printf("\nCeiling, measured in this run: a baseline, not giouring (bench/common/ceiling.cuh). A stripped-down "
			    "protocol: a queue pair per producer warp (no CID allocation, no shared queues, no in-order commit), "
			    "32 commands per batch with one release store of the SQ tail, %u batches in flight per warp, the "
			    "producer polling its 32 CQEs and checking each CID; an in-order null executor, one warp per queue "
			    "pair in another persistent kernel, writes each CQE with its phase bit and checks nothing. Producer "
			    "and executor kernels of the same number of blocks, %u warps each; %.2f s per row.\n\n",
			    inflight, CEIL_WARPS, seconds);
		std::printf("| path | rings | scope | queue pairs | producer blocks | executor blocks | depth | M commands/s | "
			    "data moved | errors | ok |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	}
	// A ceiling for every ring placement and scope that the rows above measured.
	std::vector<std::pair<std::string, std::string>> placements;
	for (const Spec &sp : points)
		if (std::find(placements.begin(), placements.end(), std::make_pair(sp.rings, sp.scope)) == placements.end())
			placements.push_back({sp.rings, sp.scope});
	for (const auto &pl : placements)
		for (uint32_t q : ceil_list) {
			ceil_result c;
			ceil_run(pl.first.c_str(), pl.second.c_str(), q, depth, inflight, seconds, 10.0, &c);
			if (c.skipped)
				std::printf("| ceiling | %s | %s | %u | - | - | %u | - | no | - | skipped |\n", c.rings, c.scope,
					    c.queues, c.depth);
			else
				std::printf("| ceiling | %s | %s | %u | %u | %u | %u | %.1f | no | %llu | %s |\n", c.rings,
					    c.scope, c.queues, c.blocks, c.blocks, c.depth, c.mcmds,
					    (unsigned long long)c.errors, c.ok ? "yes" : "NO");
			std::fflush(stdout);
			all_ok &= c.ok || c.skipped;
			ceils.push_back(c);
		}
	for (const ceil_result &c : ceils)
		if (c.error[0])
			std::printf("- ceiling %s/%s, %u queue pairs: %s: %s\n", c.rings, c.scope, c.queues,
				    c.skipped ? "skipped" : "FAILED", c.error);
	if (json) {
		FILE *f = std::fopen(json, "w");
		if (!f) {
			std::perror(json);
			return 1;
		}
		std::fprintf(f, "{\n  \"bench\": \"gpu_cmdrate\",\n  \"machine\": ");
		kv_json_string(f, machine.c_str());
		std::fprintf(f, ",\n  \"seconds\": %.3f,\n  \"points\": [\n", seconds);
		for (size_t i = 0; i < pts.size(); i++) {
			const Point &p = pts[i];
			std::fprintf(f,
				     "    {\"rings\": \"%s\", \"scope\": \"%s\", \"checked\": %s, \"data_moved\": %s, \"io_sms\": %u, \"io_warps\": %u, \"exec_sms\": %u, \"exec_warps\": %u, "
				     "\"queues\": %u, \"depth\": %u, \"ms\": %.3f, \"commands\": %llu, \"exec_commands\": %llu, "
				     "\"mcmds_per_s\": %.2f, \"mcmds_per_s_per_io_sm\": %.2f, \"submit_us\": %.3f, \"wait_us\": %.3f, \"exec_us\": [%.3f, %.3f, %.3f, %.3f], "
				     "\"exec_empty_pass_us\": %.3f, \"errors\": %llu, \"ok\": %s}%s\n",
				     p.rings.c_str(), p.scope.c_str(), p.checked ? "true" : "false", p.data_moved ? "true" : "false", p.io_sms, p.io_warps, p.exec_sms, p.exec_warps, p.queues, p.depth, p.ms, p.done,
				     p.exec_commands, p.mcmds, p.per_io_sm, p.submit_us, p.wait_us, p.exec_us[0], p.exec_us[1],
				     p.exec_us[2], p.exec_us[3], p.idle_pass_us, p.errors, p.ok ? "true" : "false",
				     i + 1 < pts.size() ? "," : "");
		}
		std::fprintf(f, "  ],\n  \"ceiling\": [\n");
		for (size_t i = 0; i < ceils.size(); i++) {
			const ceil_result &c = ceils[i];
			std::fprintf(f, "    {\"path\": \"ceiling\", \"rings\": ");
			kv_json_string(f, c.rings);
			std::fprintf(f, ", \"scope\": ");
			kv_json_string(f, c.scope);
			std::fprintf(f, ", \"data_moved\": false, \"queues\": %u, \"producer_blocks\": %u, \"executor_blocks\": %u, ",
				     c.queues, c.blocks, c.blocks);
			std::fprintf(f, "\"warps_per_block\": %u, \"depth\": %u, \"inflight\": %u, \"ms\": %.3f, ", CEIL_WARPS,
				     c.depth, c.inflight, c.ms);
			std::fprintf(f, "\"commands\": %llu, \"exec_commands\": %llu, \"mcmds_per_s\": %.2f, ", c.done, c.exec_done,
				     c.mcmds);
			std::fprintf(f, "\"errors\": %llu, \"skipped\": %s, \"ok\": %s, \"error\": ",
				     (unsigned long long)c.errors, c.skipped ? "true" : "false", c.ok ? "true" : "false");
			kv_json_string(f, c.error);
			std::fprintf(f, "}%s\n", i + 1 < ceils.size() ? "," : "");
		}
		std::fprintf(f, "  ]\n}\n");
		std::fclose(f);
	}
	return all_ok ? 0 : 1;
}
