// ceiling.cuh: the command-rate ceiling that bench_gpu_cmdrate measures beside giouring's rows, in
// the same process: a stripped-down queue-pair protocol between GPU warps that keeps only what
// any NVMe-style submission and completion must do, so that the rows show what giouring's
// protocol costs on top of it. It uses nothing of giouring but the ordering primitives
// (giouring/ring/ordering.h) and %globaltimer (giouring/ring/clock.h).
//
// ## Protocol
// - One queue pair per producer warp: no queue is shared, so there is no CID allocation and no
//   in-order commit of the SQ tail between producers. SQ: `depth` 64-byte SQEs; CQ: `depth`
//   16-byte CQEs (the NVMe layouts); per queue an SQ tail doorbell, with a close word beside it,
//   on a 128-byte line of its own.
// - Producer warp: 32 commands per batch, a lane each writes one SQE (a one-block Read, CID = its
//   SQ position), then one release store of the SQ tail per batch. Up to `inflight` batches are
//   outstanding; it then waits for the oldest: each lane polls its CQE's last dword (acquire)
//   until the phase bit is the lap's, and checks the CID in it.
// - Executor: another persistent kernel, one warp per queue pair, in order ("null"): it acquires
//   the SQ tail, reads up to 32 SQEs (all 64 bytes, a lane each, in SQ order) and writes each
//   CQE (SQ head, SQ id, CID, status 0) with its phase bit last, by a release store. It checks
//   no SQE, walks no data pointer and moves no byte.
// - No CQ head doorbell and no SQ head: the producer never has more than inflight x 32 <= depth
//   / 2 commands outstanding, and a slot is free again once its CQE has been seen (the executor
//   reads the SQE before it writes the CQE).
// - Ordering at `scope` (GIO_SCOPE_GPU or GIO_SCOPE_SYS), the same choice as the GPU target's
//   URI scope=gpu|sys: both parties run on this GPU, so GPU scope is enough.
//
// ## Bounded
// Every spin has a %globaltimer deadline. A warp that passes it records where its queue stood
// (the ring indices, the CQE dword it waited for) and ends; the row fails and prints them. Both
// kernels end by themselves: the producer closes its queue (a release store of the close word)
// once its last CQE is in, or once it gave up, and the executor warp ends when it sees the close.
// Lazy loading (workload.cuh): ceil_load_kernels() before any persistent launch of the process.
#ifndef GIOURING_BENCH_COMMON_CEILING_CUH
#define GIOURING_BENCH_COMMON_CEILING_CUH

#if !defined(__CUDACC__)
#error "bench/common/ceiling.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <vector>

#include <giouring/ring/clock.h>
#include <giouring/ring/ordering.h>

#include "check.cuh"
#include "timing.cuh"

#define CEIL_WARPS 8u      // warps per block, producer and executor kernels alike
#define CEIL_DB_WORDS 32u  // 128 bytes of doorbell per queue: [0] SQ tail, [1] close
#define CEIL_SQE_WORDS 16u // 64-byte SQE
#define CEIL_CQE_WORDS 4u  // 16-byte CQE

// Ring memory, as the kernels see it (device pointers; in HBM or mapped pinned host memory).
struct ceil_rings {
	uint4 *sq;    // queue q's SQE s at sq[(q * depth + s) * 4]
	uint32_t *cq; // queue q's CQE s at cq[(q * depth + s) * 4]
	uint32_t *db; // queue q's doorbells at db[q * CEIL_DB_WORDS]
	uint32_t depth; // a power of two
	uint32_t scope; // GIO_SCOPE_GPU or GIO_SCOPE_SYS
};

// Where a queue stood when each side ended (device memory, written once by lane 0 of the queue's
// producer or executor warp). Positions are free-running.
struct ceil_prod_state {
	uint32_t sq_tail;   // SQEs submitted
	uint32_t cq_head;   // CQEs seen
	uint32_t timeout;   // 1 when it passed its deadline
	uint32_t wait_pos;  // on a timeout: the CQ position it waited for
	uint32_t wait_dw3;  // ... and that CQE's last dword as last read
	uint32_t bad_cid;   // CQEs whose CID was not their command's
	uint32_t first_bad; // (expected << 16) | seen, of the first
	uint32_t rsvd;
	unsigned long long done; // commands completed
};

struct ceil_exec_state {
	uint32_t sq_head; // SQEs served
	uint32_t sq_tail; // the SQ tail it last acquired
	uint32_t timeout; // 1 when it passed its deadline
	uint32_t fold;    // the SQEs' words folded, so that their loads are not dead
	unsigned long long done; // commands served
};

// Producer warp q <-> queue q; see the file comment. run_ns of submitting, then it drains.
static __global__ void __launch_bounds__(CEIL_WARPS * 32)
	ceil_producer_kernel(struct ceil_rings r, uint32_t nq, uint64_t run_ns, uint64_t timeout_ns, uint32_t inflight,
			     struct ceil_prod_state *st)
{
	const uint32_t lane = threadIdx.x & 31u, q = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
	if (q >= nq)
		return;
	const uint32_t mask = r.depth - 1u;
	uint4 *sq = r.sq + (size_t)q * r.depth * (CEIL_SQE_WORDS / 4);
	const uint32_t *cq = r.cq + (size_t)q * r.depth * CEIL_CQE_WORDS;
	uint32_t *db = r.db + (size_t)q * CEIL_DB_WORDS;
	uint64_t t_end = 0;
	if (lane == 0)
		t_end = gio_now_ns() + run_ns;
	t_end = __shfl_sync(0xffffffffu, t_end, 0);
	const uint64_t deadline = t_end + timeout_ns; // every spin's bound
	uint32_t tail = 0, head = 0, bad = 0, first_bad = 0, timed_out = 0, wait_pos = 0, wait_dw3 = 0;
	unsigned long long done = 0;
	int go = 1;
	for (;;) {
		go = go && kv_warp_before(t_end);
		if (go && tail - head < inflight * 32u) {
			const uint32_t pos = tail + lane;
			uint4 *e = sq + (size_t)(pos & mask) * (CEIL_SQE_WORDS / 4);
			e[0] = make_uint4(0x02u | (pos & 0xffffu) << 16, 1u, 0u, 0u); // Read, CID; NSID 1
			e[1] = make_uint4(0u, 0u, 0u, 0u);                            // MPTR, DPTR
			e[2] = make_uint4(0u, 0u, pos, 0u);                           // DPTR, SLBA
			e[3] = make_uint4(0u, 0u, 0u, 0u);                            // NLB 0: one block
			tail += 32u;
			__syncwarp(); // every lane's SQE before lane 0's release of the tail
			if (lane == 0)
				gio_store_release_in(r.scope, &db[0], tail);
			continue;
		}
		if (head == tail)
			break;
		const uint32_t pos = head + lane;
		const uint32_t *c = cq + (size_t)(pos & mask) * CEIL_CQE_WORDS;
		const uint32_t want = ((pos / r.depth) & 1u) ^ 1u; // the phase of this lap (the CQ starts zeroed)
		uint32_t v = 0;
		int seen = 0;
		for (uint32_t n = 1;; n++) {
			if (!seen) {
				v = gio_load_acquire_in(r.scope, &c[3]);
				seen = ((v >> 16) & 1u) == want;
			}
			if (__all_sync(0xffffffffu, seen))
				break;
			if ((n & 63u) == 0 && !kv_warp_before(deadline)) {
				timed_out = 1;
				break;
			}
		}
		if (timed_out) {
			const int l = __ffs(__ballot_sync(0xffffffffu, !seen)) - 1;
			wait_pos = head + (uint32_t)l;
			wait_dw3 = __shfl_sync(0xffffffffu, v, l);
			break;
		}
		const unsigned wrong = __ballot_sync(0xffffffffu, (v & 0xffffu) != (pos & 0xffffu));
		if (wrong && !bad) {
			const int l = __ffs(wrong) - 1;
			first_bad = ((head + (uint32_t)l) & 0xffffu) << 16 | (__shfl_sync(0xffffffffu, v, l) & 0xffffu);
		}
		bad += (uint32_t)__popc(wrong);
		head += 32u;
		done += 32u;
	}
	__syncwarp();
	if (lane == 0) {
		gio_store_release_in(r.scope, &db[1], 1u); // closed: the executor warp may end
		st[q] = ceil_prod_state{tail, head, timed_out, wait_pos, wait_dw3, bad, first_bad, 0u, done};
	}
}

// Executor warp q <-> queue q; see the file comment. Ends at the close, or timeout_ns after its
// start.
static __global__ void __launch_bounds__(CEIL_WARPS * 32)
	ceil_executor_kernel(struct ceil_rings r, uint32_t nq, uint64_t timeout_ns, struct ceil_exec_state *st)
{
	const uint32_t lane = threadIdx.x & 31u, q = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
	if (q >= nq)
		return;
	const uint32_t mask = r.depth - 1u;
	const uint4 *sq = r.sq + (size_t)q * r.depth * (CEIL_SQE_WORDS / 4);
	uint32_t *cq = r.cq + (size_t)q * r.depth * CEIL_CQE_WORDS;
	const uint32_t *db = r.db + (size_t)q * CEIL_DB_WORDS;
	uint64_t deadline = 0; // every spin's bound
	if (lane == 0)
		deadline = gio_now_ns() + timeout_ns;
	deadline = __shfl_sync(0xffffffffu, deadline, 0);
	uint32_t head = 0, tail = 0, fold = 0, timed_out = 0;
	unsigned long long served = 0;
	for (uint32_t n = 1;; n++) {
		// Lane 0 the SQ tail, lane 1 the close word: one load instruction of the warp.
		uint32_t v = 0;
		if (lane < 2u)
			v = gio_load_acquire_in(r.scope, &db[lane]);
		tail = __shfl_sync(0xffffffffu, v, 0);
		const uint32_t closed = __shfl_sync(0xffffffffu, v, 1);
		if (tail != head) {
			__syncwarp(); // lane 0's acquire of the tail before the lanes read the entries
			const uint32_t k = tail - head < 32u ? tail - head : 32u;
			if (lane < k) {
				const uint32_t pos = head + lane;
				const uint4 *e = sq + (size_t)(pos & mask) * (CEIL_SQE_WORDS / 4);
				const uint4 a = e[0], b = e[1], c = e[2], d = e[3];
				fold ^= a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
				uint32_t *out = cq + (size_t)(pos & mask) * CEIL_CQE_WORDS;
				out[0] = 0u;                                         // DW0: command specific
				out[1] = 0u;                                         // DW1: reserved
				out[2] = ((head + k) & mask) | (q + 1u) << 16;       // SQ head, SQ id
				const uint32_t phase = ((pos / r.depth) & 1u) ^ 1u;
				gio_store_release_in(r.scope, &out[3], (a.x >> 16) | phase << 16); // CID, phase, status 0
			}
			head += k;
			served += k;
			continue;
		}
		if (closed)
			break;
		if ((n & 63u) == 0 && !kv_warp_before(deadline)) {
			timed_out = 1;
			break;
		}
	}
	for (int o = 16; o; o >>= 1)
		fold ^= __shfl_xor_sync(0xffffffffu, fold, o);
	if (lane == 0)
		st[q] = ceil_exec_state{head, tail, timed_out, fold, served};
}

// Lazy-loading trap (workload.cuh): both kernels loaded before any persistent launch.
static inline void ceil_load_kernels(void)
{
	struct cudaFuncAttributes a;
	KV_CK(cudaFuncGetAttributes(&a, ceil_producer_kernel));
	KV_CK(cudaFuncGetAttributes(&a, ceil_executor_kernel));
}

// One ceiling row: what was asked and what it gave.
struct ceil_result {
	char rings[8];  // "hbm" or "host"
	char scope[8];  // "gpu" or "sys"
	uint32_t queues, depth, inflight, blocks; // blocks: of each kernel, CEIL_WARPS warps each
	double ms;      // the producer kernel's time (CUDA events)
	double mcmds;   // completions / ms
	unsigned long long done, exec_done;
	uint64_t errors; // wrong CIDs + queues whose producer or executor passed its deadline
	int skipped;     // not run: error says why
	int ok;
	char error[384];
};

// Says where queue q stood, for a failed row (stderr, and the first into the row's error).
static inline void ceil_describe_queue(const struct ceil_prod_state *p, const struct ceil_exec_state *e, const uint32_t *db,
				       uint32_t q, char *buf, size_t len)
{
	kv_fmt(buf, len,
	       "queue %u: producer SQ tail %u, CQ head %u%s (waiting for CQ position %u, its dword 3 0x%08x), %u wrong "
	       "CIDs (first: expected 0x%04x, seen 0x%04x); executor SQ head %u, SQ tail acquired %u%s; doorbell SQ "
	       "tail %u, close %u",
	       q, p->sq_tail, p->cq_head, p->timeout ? " TIMED OUT" : "", p->wait_pos, p->wait_dw3, p->bad_cid,
	       p->first_bad >> 16, p->first_bad & 0xffffu, e->sq_head, e->sq_tail, e->timeout ? " TIMED OUT" : "", db[0],
	       db[1]);
}

// Runs one configuration: `queues` queue pairs (a multiple of CEIL_WARPS), a producer kernel and
// an executor kernel of queues / CEIL_WARPS blocks each, `seconds` of submitting after a warm-up
// of a tenth of it. Every wait is bounded by timeout_s. Fills out; returns 0, or -1 when the row
// failed or was skipped (out->error says why).
static inline int ceil_run(const char *rings, const char *scope, uint32_t queues, uint32_t depth, uint32_t inflight,
			   double seconds, double timeout_s, struct ceil_result *out)
{
	std::memset(out, 0, sizeof(*out));
	kv_fmt(out->rings, sizeof(out->rings), "%s", rings);
	kv_fmt(out->scope, sizeof(out->scope), "%s", scope);
	out->queues = queues;
	out->depth = depth;
	out->inflight = inflight;
	out->blocks = queues / CEIL_WARPS;
	const int host = !std::strcmp(rings, "host");
	if (queues == 0 || queues % CEIL_WARPS || (depth & (depth - 1)) || depth < 64u * inflight || depth > 65536u) {
		out->skipped = 1;
		kv_fmt(out->error, sizeof(out->error),
		       "queue pairs a multiple of %u, depth a power of two from 64 x batches in flight (%u) to 65536", CEIL_WARPS,
		       64u * inflight);
		return -1;
	}
	// Both kernels spin until the other answers: they must be resident together. Conservative:
	// as if each kernel's blocks had SMs of their own.
	int dev = 0, sms = 0, per_sm_p = 0, per_sm_e = 0;
	KV_CK(cudaGetDevice(&dev));
	KV_CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	KV_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_p, ceil_producer_kernel, CEIL_WARPS * 32, 0));
	KV_CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_e, ceil_executor_kernel, CEIL_WARPS * 32, 0));
	if (per_sm_p < 1 || per_sm_e < 1 ||
	    (uint64_t)out->blocks * (uint64_t)(per_sm_e + per_sm_p) > (uint64_t)sms * per_sm_p * per_sm_e) {
		out->skipped = 1;
		kv_fmt(out->error, sizeof(out->error),
		       "%u + %u blocks cannot all be resident (%d and %d blocks per SM, %d SMs)", out->blocks, out->blocks,
		       per_sm_p, per_sm_e, sms);
		return -1;
	}
	const size_t sq_bytes = (size_t)queues * depth * CEIL_SQE_WORDS * 4, cq_bytes = (size_t)queues * depth * CEIL_CQE_WORDS * 4,
		     db_bytes = (size_t)queues * CEIL_DB_WORDS * 4, bytes = sq_bytes + cq_bytes + db_bytes;
	unsigned char *mem = NULL, *dmem = NULL;
	if (host) {
		KV_CK(cudaHostAlloc((void **)&mem, bytes, cudaHostAllocMapped));
		KV_CK(cudaHostGetDevicePointer((void **)&dmem, mem, 0));
	} else {
		KV_CK(cudaMalloc((void **)&dmem, bytes));
	}
	struct ceil_rings r;
	r.sq = (uint4 *)dmem;
	r.cq = (uint32_t *)(dmem + sq_bytes);
	r.db = (uint32_t *)(dmem + sq_bytes + cq_bytes);
	r.depth = depth;
	r.scope = !std::strcmp(scope, "sys") ? GIO_SCOPE_SYS : GIO_SCOPE_GPU;
	struct ceil_prod_state *d_prod = NULL;
	struct ceil_exec_state *d_exec = NULL;
	KV_CK(cudaMalloc((void **)&d_prod, queues * sizeof(*d_prod)));
	KV_CK(cudaMalloc((void **)&d_exec, queues * sizeof(*d_exec)));
	cudaStream_t sp, se;
	cudaEvent_t e0, e1, e_exec, e_zeroed;
	KV_CK(cudaStreamCreateWithFlags(&sp, cudaStreamNonBlocking));
	KV_CK(cudaStreamCreateWithFlags(&se, cudaStreamNonBlocking));
	KV_CK(cudaEventCreate(&e0));
	KV_CK(cudaEventCreate(&e1));
	KV_CK(cudaEventCreateWithFlags(&e_exec, cudaEventDisableTiming));
	KV_CK(cudaEventCreateWithFlags(&e_zeroed, cudaEventDisableTiming));
	const uint64_t run_ns = (uint64_t)(seconds * 1e9), timeout_ns = (uint64_t)(timeout_s * 1e9);
	std::vector<struct ceil_prod_state> prod(queues);
	std::vector<struct ceil_exec_state> exec(queues);
	std::vector<uint32_t> db(queues * CEIL_DB_WORDS);
	uint32_t failed_queues = 0;
	for (int pass = 0; pass < 2 && !failed_queues; pass++) { // a warm-up, then the measured run
		// Zeroed rings (phase 0 everywhere: the first lap's CQEs have phase 1) and state, in
		// stream order before both kernels; neither kernel of the previous pass runs any more.
		if (host)
			std::memset(mem, 0, bytes);
		else
			KV_CK(cudaMemsetAsync(dmem, 0, bytes, se));
		KV_CK(cudaMemsetAsync(d_prod, 0, queues * sizeof(*d_prod), se));
		KV_CK(cudaMemsetAsync(d_exec, 0, queues * sizeof(*d_exec), se));
		KV_CK(cudaEventRecord(e_zeroed, se));
		KV_CK(cudaStreamWaitEvent(sp, e_zeroed, 0));
		const uint64_t ns = pass ? run_ns : run_ns / 10;
		// The executor first, so that its blocks are placed before the producers'; it outlives
		// the producers' own deadline.
		ceil_executor_kernel<<<out->blocks, CEIL_WARPS * 32, 0, se>>>(r, queues, ns + 2 * timeout_ns, d_exec);
		KV_CK(cudaGetLastError());
		KV_CK(cudaEventRecord(e_exec, se));
		KV_CK(cudaEventRecord(e0, sp));
		ceil_producer_kernel<<<out->blocks, CEIL_WARPS * 32, 0, sp>>>(r, queues, ns, timeout_ns, inflight, d_prod);
		KV_CK(cudaGetLastError());
		KV_CK(cudaEventRecord(e1, sp));
		const double bound = (double)ns * 1e-9 + 2 * timeout_s + 10;
		if (kv_wait_event(e1, bound) || kv_wait_event(e_exec, bound))
			kv_die("ceiling %s/%s, %u queues: the kernels did not end within %.0f s despite their deadlines: the "
			       "GPU is wedged", rings, scope, queues, bound);
		float ms = 0.f;
		KV_CK(cudaEventElapsedTime(&ms, e0, e1));
		KV_CK(cudaMemcpy(prod.data(), d_prod, queues * sizeof(*d_prod), cudaMemcpyDeviceToHost));
		KV_CK(cudaMemcpy(exec.data(), d_exec, queues * sizeof(*d_exec), cudaMemcpyDeviceToHost));
		KV_CK(cudaMemcpy(db.data(), r.db, db_bytes, cudaMemcpyDeviceToHost));
		out->done = out->exec_done = out->errors = 0;
		for (uint32_t q = 0; q < queues; q++) {
			const struct ceil_prod_state *p = &prod[q];
			const struct ceil_exec_state *e = &exec[q];
			out->done += p->done;
			out->exec_done += e->done;
			out->errors += p->bad_cid + p->timeout + e->timeout;
			if (!p->bad_cid && !p->timeout && !e->timeout && e->done == p->done)
				continue;
			char line[384];
			ceil_describe_queue(p, e, &db[q * CEIL_DB_WORDS], q, line, sizeof(line));
			if (failed_queues++ < 4)
				std::fprintf(stderr, "ceiling %s/%s, %u queues%s: %s\n", rings, scope, queues,
					     pass ? "" : " (warm-up)", line);
			if (failed_queues == 1)
				kv_fmt(out->error, sizeof(out->error), "%s%s", pass ? "" : "warm-up: ", line);
		}
		out->ms = ms;
	}
	out->mcmds = out->ms > 0 ? (double)out->done / (out->ms * 1e3) : 0.0;
	out->ok = failed_queues == 0 && out->done > 0;
	if (!out->ok && !failed_queues)
		kv_fmt(out->error, sizeof(out->error), "no command completed");
	for (cudaEvent_t ev : {e0, e1, e_exec, e_zeroed})
		KV_CK(cudaEventDestroy(ev));
	for (cudaStream_t stream : {sp, se})
		KV_CK(cudaStreamDestroy(stream));
	KV_CK(cudaFree(d_prod));
	KV_CK(cudaFree(d_exec));
	if (host)
		KV_CK(cudaFreeHost(mem));
	else
		KV_CK(cudaFree(dmem));
	return out->ok ? 0 : -1;
}

#endif // GIOURING_BENCH_COMMON_CEILING_CUH
