// Owned queue pairs (GIO_QP_OWNED): each warp owns one queue pair of the GPU-executed target and
// submits and reaps with gio_submit_warp / gio_wait_warp, two batches in flight, rings small
// enough to wrap many times, batches of 32 down to 26 active lanes. Every object is written from
// a pattern, read back into a poisoned buffer and checked on the GPU; every command completes
// once (the producers' count and the target's agree, no stray completion); a detached command is
// refused with -EINVAL on an owned queue pair. The same again through a warp session
// (giouring/device/owned.cuh: ring state in registers, command states in shared memory), whose
// close leaves a command outstanding for gio_wait_warp() to collect, and whose open refuses a bad
// window and a queue pair with a command outstanding. GIO_GPU_FUSED=1 (compute-sanitizer, which
// serializes kernels: racecheck sees the sessions' windows in shared memory) runs the executor and
// the owners in one launch; GIO_GPU_QUICK=1 runs fewer rounds. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpu_test.cuh"
#include <giouring/device/owned.cuh>
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/target/gpu_exec.cuh>
#include <giouring/target/gpu_target.h>

namespace {

constexpr uint32_t kWarps = 16, kRounds = 20, kObj = 4096, kPerWarp = 64; // objects per warp per round (at most)
constexpr uint64_t kBufPerWarp = (uint64_t)kPerWarp * kObj;

struct Result {
	unsigned long long done, errors, bad_words, submit_fail;
	int first_rc;
	int detached_rc;
	int open_rc[4]; // session: window 16, window sq_depth, a command outstanding, then idle
	int left_rc;    // session: the command left outstanding at the close, collected by gio_wait_warp
	unsigned long long left_ud; // session: its slot's user data after the close (7 given)
	unsigned left_flags;        // session: its slot's flags after the close
	unsigned long long reaped, reap_short; // session: completions gio_owned_reap_warp() took; rounds it fell short
};

constexpr uint32_t kWindow = 64; // session entries per warp: two batches of 32 outstanding

// Submission and waiting through the queue pair's own verbs, or through a warp session.
template <bool Session> struct Verbs;
template <> struct Verbs<false> {
	gio_qp *qp;
	__device__ int submit(const gio_sqe *sqe, uint64_t ud, uint32_t flags, int active, uint64_t dl, uint32_t *cid)
	{
		return gio_submit_warp(qp, sqe, ud, flags, active, dl, cid);
	}
	__device__ int wait(uint32_t cid, int active, uint64_t dl, uint16_t *st) { return gio_wait_warp(qp, cid, active, dl, st); }
};
template <> struct Verbs<true> {
	gio_owned_warp w;
	__device__ int submit(const gio_sqe *sqe, uint64_t ud, uint32_t flags, int active, uint64_t dl, uint32_t *cid)
	{
		return gio_owned_submit_warp(&w, sqe, ud, flags, active, dl, cid);
	}
	__device__ int wait(uint32_t cid, int active, uint64_t dl, uint16_t *st) { return gio_owned_wait_warp(&w, cid, active, dl, st); }
};

__device__ uint32_t word(uint32_t obj, uint32_t k) { return obj * 2654435761u ^ (k * 40503u + 0x5bd1e995u); }

// Owner warp `w` (of kWarps) through `rounds` rounds; `window` is its block's session entries.
template <bool Session>
__device__ void own(gio_qp *qps, unsigned char *src, unsigned char *dst, uint64_t src_addr, uint64_t dst_addr,
		    uint32_t rounds, uint32_t w, gio_owned_entry (*window)[kWindow], Result *r)
{
	const uint32_t lane = threadIdx.x & 31u;
	gio_qp *qp = &qps[w];
	const uint64_t deadline = gio_deadline_in(30ull * 1000000000ull);
	unsigned long long done = 0, errors = 0, bad = 0;
	Verbs<Session> v{};
	if constexpr (Session) {
		gio_owned_entry *ent = window[(threadIdx.x / 32u) % 4u];
		const int bad_small = gio_owned_open_warp(&v.w, qp, ent, 16);
		const int bad_big = gio_owned_open_warp(&v.w, qp, ent, qp->sq_depth);
		const int rc = gio_owned_open_warp(&v.w, qp, ent, kWindow);
		if (lane == 0 && w == 0) {
			r->open_rc[0] = bad_small;
			r->open_rc[1] = bad_big;
		}
		if (rc) {
			if (lane == 0)
				atomicCAS(&r->first_rc, 0, rc);
			return;
		}
	} else {
		v.qp = qp;
	}
	for (uint32_t round = 0; round < rounds; round++) {
		const uint32_t nact = 32u - round % 7u; // 32 down to 26 active lanes
		const int active = lane < nact;
		for (int dir = 0; dir < 2; dir++) {
			uint32_t cid[2] = {0, 0};
			int rc[2];
			for (int b = 0; b < 2; b++) { // two batches in flight
				const uint32_t slot = b * 32u + lane;
				const uint32_t obj = (w * kRounds + round) * kPerWarp + slot;
				uint32_t *mine = (uint32_t *)((dir == 0 ? src : dst) + w * kBufPerWarp + (uint64_t)slot * kObj);
				if (active)
					for (uint32_t k = 0; k < kObj / 4; k++)
						mine[k] = dir == 0 ? word(obj, k) : 0xa5a5a5a5u;
				gio_sqe sqe;
				if (dir == 0)
					gio_prep_write(&sqe, GIO_TGT_NSID, obj, 1);
				else
					gio_prep_read(&sqe, GIO_TGT_NSID, obj, 1);
				gio_sqe_set_sgl_data(&sqe, (dir == 0 ? src_addr : dst_addr) + w * kBufPerWarp + (uint64_t)slot * kObj, kObj);
				rc[b] = v.submit(&sqe, obj, 0, active, deadline, &cid[b]);
				if (active && rc[b]) {
					atomicAdd(&r->submit_fail, 1ull);
					atomicCAS(&r->first_rc, 0, rc[b]);
				}
			}
			if constexpr (Session) {
				// Every other round the completions are taken by the public reap first (two
				// batches: 52 to 64 CQEs, more than one run of 32), and the waits then find them.
				if (round % 2 == 0) {
					const uint32_t want = (uint32_t)__popc(__ballot_sync(0xffffffffu, active && rc[0] == 0)) +
							      (uint32_t)__popc(__ballot_sync(0xffffffffu, active && rc[1] == 0));
					uint32_t got = 0;
					while (got < want && !__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0))
						got += gio_owned_reap_warp(&v.w);
					if (lane == 0) {
						atomicAdd(&r->reaped, (unsigned long long)got);
						if (got != want)
							atomicAdd(&r->reap_short, 1ull);
					}
				}
			}
			for (int b = 0; b < 2; b++) {
				uint16_t st = 0;
				const int wrc = v.wait(cid[b], active && rc[b] == 0, deadline, &st);
				if (active && rc[b] == 0) {
					if (wrc) {
						errors++;
						atomicCAS(&r->first_rc, 0, wrc);
					} else {
						done++;
					}
				}
			}
		}
		// Check what came back.
		for (int b = 0; b < 2 && active; b++) {
			const uint32_t slot = b * 32u + lane;
			const uint32_t obj = (w * kRounds + round) * kPerWarp + slot;
			const uint32_t *got = (const uint32_t *)(dst + w * kBufPerWarp + (uint64_t)slot * kObj);
			for (uint32_t k = 0; k < kObj / 4; k++)
				bad += got[k] != word(obj, k);
		}
	}
	if constexpr (Session) {
		// A command left outstanding at the close is the queue pair's own verbs' to collect, and
		// a session cannot open over it.
		gio_sqe sqe;
		gio_prep_flush(&sqe, GIO_TGT_NSID);
		uint32_t c = 0;
		const int rc = v.submit(&sqe, 7, 0, lane == 0, deadline, &c);
		gio_owned_close_warp(&v.w);
		// The slot held an earlier command's user data (an object number); the close puts this
		// command's there, which the submission kept in the window only.
		const unsigned long long left_ud = qp->slots[c & (qp->sq_depth - 1u)].user_data;
		const unsigned left_flags = qp->slots[c & (qp->sq_depth - 1u)].flags;
		const int busy = gio_owned_open_warp(&v.w, qp, window[(threadIdx.x / 32u) % 4u], kWindow);
		uint16_t st = 0xffff;
		const int wrc = gio_wait_warp(qp, c, lane == 0 && rc == 0, deadline, &st);
		const int again = gio_owned_open_warp(&v.w, qp, window[(threadIdx.x / 32u) % 4u], kWindow);
		if (again == 0)
			gio_owned_close_warp(&v.w);
		if (lane == 0 && w == 0) {
			r->open_rc[2] = busy;
			r->open_rc[3] = again;
			r->left_rc = rc ? rc : wrc ? wrc : st;
			r->left_ud = left_ud;
			r->left_flags = left_flags;
		}
	}
	// A detached command: refused on an owned queue pair, the ring moves on.
	{
		gio_sqe sqe;
		gio_prep_flush(&sqe, GIO_TGT_NSID);
		uint32_t c = 0;
		const int rc = gio_submit_warp(qp, &sqe, 0, GIO_CMD_F_DETACHED, lane == 0, deadline, &c);
		if (lane == 0 && w == 0)
			r->detached_rc = rc;
		gio_prep_flush(&sqe, GIO_TGT_NSID);
		const int rc2 = gio_submit_warp(qp, &sqe, 0, 0, lane == 0, deadline, &c);
		uint16_t st = 0;
		const int wrc = gio_wait_warp(qp, c, lane == 0 && rc2 == 0, deadline, &st);
		if (lane == 0 && (rc2 || wrc)) {
			errors++;
			atomicCAS(&r->first_rc, 0, rc2 ? rc2 : wrc);
		}
	}
	for (int o = 16; o; o >>= 1) {
		done += __shfl_xor_sync(0xffffffffu, done, o);
		errors += __shfl_xor_sync(0xffffffffu, errors, o);
		bad += __shfl_xor_sync(0xffffffffu, bad, o);
	}
	if (lane == 0) {
		atomicAdd(&r->done, done);
		atomicAdd(&r->errors, errors);
		atomicAdd(&r->bad_words, bad);
	}
}

template <bool Session>
__global__ void owners(gio_qp *qps, unsigned char *src, unsigned char *dst, uint64_t src_addr, uint64_t dst_addr,
		       uint32_t rounds, Result *r)
{
	__shared__ gio_owned_entry window[Session ? 4 : 1][kWindow]; // 4 warps per block
	own<Session>(qps, src, dst, src_addr, dst_addr, rounds, (blockIdx.x * blockDim.x + threadIdx.x) / 32u, window, r);
}

// One launch: blocks [0, exec_blocks) run the executor, the rest own; the last owner block
// stops the executor.
template <bool Session>
__global__ void fused(gio_tgt *t, unsigned char *backing, gio_gpu_ctl *ctl, uint32_t flags, gio_ssd_model model,
		      uint32_t exec_blocks, gio_qp *qps, unsigned char *src, unsigned char *dst, uint64_t src_addr,
		      uint64_t dst_addr, uint32_t rounds, Result *r, uint32_t *finished)
{
	__shared__ gio_owned_entry window[Session ? 4 : 1][kWindow];
	if (blockIdx.x < exec_blocks) {
		gio_gpu_exec_loop(t, backing, ctl, flags, &model, (blockIdx.x * blockDim.x + threadIdx.x) / 32u,
				  exec_blocks * blockDim.x / 32u, nullptr);
		return;
	}
	own<Session>(qps, src, dst, src_addr, dst_addr, rounds, ((blockIdx.x - exec_blocks) * blockDim.x + threadIdx.x) / 32u,
		     window, r);
	__syncthreads();
	if (threadIdx.x == 0 && gio_fetch_add(finished, 1) == gridDim.x - exec_blocks - 1)
		gio_store_release(&ctl->stop, 1);
}

template <bool Session>
void run(const char *uri, bool fused_launch, uint32_t rounds)
{
	gio_gpu_target *g = nullptr;
	if (gio_gpu_target_open(uri, &g)) {
		std::printf("FAIL: %s: %s\n", uri, gio_last_error());
		std::exit(1);
	}
	for (uint32_t q = 0; q < kWarps; q++)
		g->qps_host[q].flags |= GIO_QP_OWNED; // a warp each; prepare copies the images to the device
	unsigned char *src = nullptr, *dst = nullptr;
	CK(cudaMalloc(&src, kWarps * kBufPerWarp));
	CK(cudaMalloc(&dst, kWarps * kBufPerWarp));
	uint64_t src_addr = 0, dst_addr = 0;
	EXPECT(gio_gpu_target_register(g, src, kWarps * kBufPerWarp, &src_addr) == 0, "register: %s", gio_last_error());
	EXPECT(gio_gpu_target_register(g, dst, kWarps * kBufPerWarp, &dst_addr) == 0, "register: %s", gio_last_error());
	Result *r = nullptr;
	uint32_t *finished = nullptr;
	CK(cudaMallocManaged(&r, sizeof(*r)));
	CK(cudaMallocManaged(&finished, sizeof(*finished)));
	std::memset(r, 0, sizeof(*r));
	*finished = 0;
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	if (fused_launch) {
		if (gio_gpu_target_prepare(g)) {
			std::printf("FAIL: prepare: %s\n", gio_last_error());
			std::exit(1);
		}
		fused<Session><<<g->cfg.exec_blocks + kWarps / 4, 128, 0, s>>>(g->tgt, g->backing, g->ctl_dev, g->cfg.flags,
									       g->cfg.model, g->cfg.exec_blocks, g->qps, src, dst,
									       src_addr, dst_addr, rounds, r, finished);
	} else {
		EXPECT(gio_gpu_preload((const void *)owners<Session>) == 0, "preload: %s", gio_last_error());
		if (gio_gpu_target_start(g)) {
			std::printf("FAIL: start: %s\n", gio_last_error());
			std::exit(1);
		}
		owners<Session><<<kWarps / 4, 128, 0, s>>>(g->qps, src, dst, src_addr, dst_addr, rounds, r);
	}
	CK(cudaGetLastError());
	EXPECT(sync_within(s, fused_launch ? 240.0 : 60.0), "%s: the owners did not finish in time", uri);
	gio_tgt_stats ts{};
	if (fused_launch)
		EXPECT(gio_gpu_target_read_back(g, 10000, &ts) == 0, "read back: %s", gio_last_error());
	else
		EXPECT(gio_gpu_target_stop(g, 10000, &ts) == 0, "stop: %s", gio_last_error());
	unsigned long long want = 0; // active lanes x 2 batches x 2 directions x warps
	for (uint32_t round = 0; round < rounds; round++)
		want += 2ull * 2 * (32u - round % 7u) * kWarps;
	uint32_t stray = 0;
	for (uint32_t q = 0; q < kWarps; q++)
		stray += g->qps_host[q].stray_cqes;
	EXPECT(r->submit_fail == 0 && r->errors == 0, "%s: %llu failed submits, %llu errors, first rc %d", uri,
	       r->submit_fail, r->errors, r->first_rc);
	EXPECT(r->done == want, "%s: %llu commands done, want %llu", uri, r->done, want);
	EXPECT(r->bad_words == 0, "%s: %llu words read back wrong", uri, r->bad_words);
	EXPECT(r->detached_rc == -EINVAL, "%s: a detached command on an owned queue pair: rc %d", uri, r->detached_rc);
	// Every command the producers counted and each warp's final flush; the refused detached
	// command's slot carried a harmless command, which the target may count too.
	const unsigned long long extra = Session ? kWarps : 0; // the flush left outstanding at the close
	EXPECT(ts.commands >= want + kWarps + extra && ts.commands <= want + 2ull * kWarps + extra,
	       "%s: the target executed %llu commands, want %llu to %llu", uri, (unsigned long long)ts.commands,
	       want + kWarps + extra, want + 2ull * kWarps + extra);
	if (Session) {
		EXPECT(r->open_rc[0] == -EINVAL && r->open_rc[1] == -EINVAL, "%s: open with windows 16 and sq_depth: %d, %d",
		       uri, r->open_rc[0], r->open_rc[1]);
		EXPECT(r->open_rc[2] == -EBUSY, "%s: open with a command outstanding: %d", uri, r->open_rc[2]);
		EXPECT(r->open_rc[3] == 0, "%s: open once it was collected: %d", uri, r->open_rc[3]);
		EXPECT(r->left_rc == 0, "%s: the command left outstanding at the close: %d", uri, r->left_rc);
		EXPECT(r->left_ud == 7 && r->left_flags == 0, "%s: its slot after the close: user data %llu (7 given), flags %u",
		       uri, r->left_ud, r->left_flags);
		unsigned long long reaped = 0; // the even rounds' commands, both directions
		for (uint32_t round = 0; round < rounds; round += 2)
			reaped += 2ull * 2 * (32u - round % 7u) * kWarps;
		EXPECT(r->reap_short == 0 && r->reaped == reaped, "%s: gio_owned_reap_warp() took %llu completions, want %llu (%llu rounds short)",
		       uri, r->reaped, reaped, r->reap_short);
	}
	EXPECT(stray == 0, "%s: %u stray completions", uri, stray);
	std::printf("   %s: %llu commands through %u owned queue pairs%s, data verified\n", uri, r->done, kWarps,
		    Session ? " (warp sessions)" : "");
	EXPECT(gio_gpu_target_close(g) == 0, "close: %s", gio_last_error());
	CK(cudaStreamDestroy(s));
	CK(cudaFree(r));
	CK(cudaFree(finished));
	CK(cudaFree(src));
	CK(cudaFree(dst));
}

} // namespace

int main()
{
	skip_without_gpu();
	const char *f = std::getenv("GIO_GPU_FUSED"), *q = std::getenv("GIO_GPU_QUICK");
	const bool fused_launch = f && *f == '1';
	const uint32_t rounds = q && *q == '1' ? 4 : kRounds; // 4 rounds: every lane count from 32 to 29
	run<false>("mem://hbm?size=128M&queues=16&depth=64&sms=2&warps=4", fused_launch, rounds);
	run<false>("mem://hbm?size=128M&queues=16&depth=64&sms=2&warps=4&rings=host", fused_launch, rounds);
	// Window 64 (two batches outstanding) needs sq_depth 128; the rings still wrap (4 times in 4 rounds).
	run<true>("mem://hbm?size=128M&queues=16&depth=128&sms=2&warps=4", fused_launch, rounds);
	run<true>("mem://hbm?size=128M&queues=16&depth=128&sms=2&warps=4&rings=host", fused_launch, rounds);
	std::printf("%s: owned queue pairs, a warp each, and warp sessions on them\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
