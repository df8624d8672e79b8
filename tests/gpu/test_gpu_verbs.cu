// Every public device verb, instantiated and checked, with rings at system scope and at GPU scope,
// against a null controller that runs on the GPU beside the producers (a persistent kernel on its
// own stream: it fetches every entry its doorbell covers, checks the CID, and completes it with
// Dword 0 = 3 * CID, or with Invalid Namespace for the harmless command a cancel puts in place).
//
//   single   gio_submit + gio_qp_wait, a thread each (waited by ticket, Dword 0 checked)
//   warp     gio_submit_warp with two lanes in three active + gio_wait_warp
//   block    gio_submit_block with caller-provided TempStorage (CUB's convention) + gio_wait
//   detached one kernel submits with GIO_CMD_F_DETACHED and exits; a second kernel takes the
//            completions with gio_qp_peek_batch_warp and a third with gio_qp_wait_batch; every
//            user data must come back exactly once
//   iocb     gio_iocb_issue_block (+ an IOCB with a zero timeout, refused) and gio_wait_iocb
//   frozen   one lane reserves four entries, puts two and stops for 200 ms while other warps
//            submit: they finish before it wakes; its two unput entries are cancelled, its two
//            put results are dropped when the ring needs their slots; it is told -ETIME for each
//   stray    32 completions naming no command, consumed by one warp in one run: all counted
//
// (Owned queue pairs and warp sessions on them: test_gpu_owned.cu.)
//
// Exits 77 (skipped) without a GPU. GIO_GPU_QUICK=1 (the sanitizer runs) makes the rounds fewer
// and leaves the frozen case out (see verbs()).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_test.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/proto/sgl_build.h>

namespace {

const uint32_t kDepth = 64, kQueues = 4;
const uint64_t kSecond = 1000000000ull;

struct Ctrl {
	gio_qp *qp;
	uint32_t head, cq_tail, phase;
	unsigned long long fetched, nops, bad;
};

struct Rings {
	gio_qp *qps; // device array of kQueues
	Ctrl *ctrl;  // device array of kQueues
	uint32_t *stop; // mapped host memory
};

// One warp per queue pair; lane 0 does the work.
__global__ void null_controller(Ctrl *ctrl, uint32_t *stop)
{
	Ctrl *c = &ctrl[blockIdx.x];
	gio_qp *qp = c->qp;
	const uint32_t scope = GIO__QSC(qp), mask = qp->sq_depth - 1;
	if (threadIdx.x != 0)
		return;
	for (;;) {
		const uint32_t tail = gio_load_acquire_in(scope, qp->sq_db);
		bool moved = false;
		while (c->head != tail) {
			if (((c->cq_tail + 1) & mask) == gio_load_acquire_in(scope, qp->cq_db))
				break; /* CQ full: the host side must consume first */
			const gio_sqe s = qp->sq[c->head];
			const bool nop = s.opc == GIO_NVM_OPC_FLUSH && s.nsid == 0;
			if (s.cid != c->head)
				c->bad++;
			c->head = (c->head + 1) & mask;
			gio_cqe *e = &qp->cq[c->cq_tail];
			e->dw0 = s.cid * 3u;
			e->dw1 = 0;
			e->sqhd = (uint16_t)c->head;
			e->sqid = 1;
			gio_store_release_in(scope, gio_cqe_dw3(e), GIO_CQE_DW3(s.cid, (nop ? 0x0bu << 1 : 0u) | c->phase));
			if (((c->cq_tail + 1) & mask) == 0)
				c->phase ^= 1u;
			c->cq_tail = (c->cq_tail + 1) & mask;
			c->fetched++;
			c->nops += nop;
			moved = true;
		}
		if (!moved) {
			if (gio_load_acquire(stop))
				return;
			__nanosleep(200);
		}
	}
}

struct Counts {
	unsigned long long ok, bad, failed;
};

__device__ void tally(Counts *n, int rc, uint32_t dw0, uint32_t ticket)
{
	if (rc)
		atomicAdd(&n->failed, 1ull);
	else if (dw0 != (ticket & (kDepth - 1)) * 3u)
		atomicAdd(&n->bad, 1ull);
	else
		atomicAdd(&n->ok, 1ull);
}

__device__ void command(gio_sqe *s, uint32_t tag)
{
	gio_prep_read(s, 1, tag, 1);
	gio_sqe_set_sgl_data(s, 0x1000ull * (tag + 1), 4096);
}

__global__ void k_single(gio_qp *qps, uint32_t rounds, Counts *n)
{
	const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	gio_qp *qp = &qps[t % kQueues];
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	for (uint32_t r = 0; r < rounds; r++) {
		gio_sqe s;
		uint32_t ticket = 0, dw0 = 0;
		command(&s, t);
		int rc = gio_submit(qp, &s, t, 0, deadline, &ticket);
		if (rc == 0)
			rc = gio_qp_wait(qp, ticket, deadline, nullptr, &dw0);
		tally(n, rc, dw0, ticket);
	}
}

__global__ void k_warp(gio_qp *qps, uint32_t rounds, Counts *n)
{
	const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31u;
	gio_qp *qp = &qps[(t / 32) % kQueues];
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	for (uint32_t r = 0; r < rounds; r++) {
		const int active = (lane + r) % 3 != 0;
		gio_sqe s;
		uint32_t ticket = 0;
		uint16_t st = 0xffff;
		command(&s, t);
		int rc = gio_submit_warp(qp, &s, t, 0, active, deadline, &ticket);
		const int wrc = gio_wait_warp(qp, ticket, active && rc == 0, deadline, &st);
		if (active) {
			if (rc == 0)
				rc = wrc;
			tally(n, rc, rc == 0 ? (ticket & (kDepth - 1)) * 3u : 0, ticket); /* Dword 0 checked by k_block */
			if (rc == 0 && st != 0)
				atomicAdd(&n->bad, 1ull);
		}
	}
}

template <int kThreads>
__global__ void k_block(gio_qp *qps, uint32_t rounds, Counts *n)
{
	__shared__ typename gio_block_submit<kThreads>::TempStorage tmp;
	gio_qp *qp = &qps[blockIdx.x % kQueues];
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	for (uint32_t r = 0; r < rounds; r++) {
		const int active = (threadIdx.x + r) % 4 != 3 && threadIdx.x < kDepth - 1;
		gio_sqe s;
		uint32_t ticket = 0, dw0 = 0;
		command(&s, threadIdx.x);
		int rc = gio_submit_block<kThreads>(tmp, qp, &s, threadIdx.x, 0, active, deadline, &ticket);
		if (active) {
			if (rc == 0)
				rc = gio_qp_wait(qp, ticket, deadline, nullptr, &dw0);
			tally(n, rc, dw0, ticket);
		}
	}
}

__global__ void k_detached_submit(gio_qp *qps, uint32_t rounds, Counts *n)
{
	const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	gio_qp *qp = &qps[(t / 32) % kQueues];
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	for (uint32_t r = 0; r < rounds; r++) {
		gio_sqe s;
		uint32_t ticket = 0;
		command(&s, t);
		const uint64_t ud = (uint64_t)(t * rounds + r) << 8 | 0x5a;
		if (gio_submit_warp(qp, &s, ud, GIO_CMD_F_DETACHED, 1, deadline, &ticket))
			atomicAdd(&n->failed, 1ull);
	}
}

// Warp q takes queue pair q's detached completions: `want` of them, or until the deadline.
__global__ void k_detached_reap_warp(gio_qp *qps, uint32_t want, unsigned *seen, Counts *n)
{
	gio_qp *qp = &qps[blockIdx.x];
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	uint32_t got = 0;
	while (got < want && !__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
		gio_cpl c;
		const uint32_t k = gio_qp_peek_batch_warp(qp, &c);
		if ((threadIdx.x & 31u) < k) {
			if (c.res != 0 || (c.user_data & 0xff) != 0x5a || c.dw0 != c.cid * 3u)
				atomicAdd(&n->bad, 1ull);
			atomicAdd(&seen[c.user_data >> 8], 1u);
		}
		got += k;
		if (k == 0)
			__nanosleep(500);
	}
	if (threadIdx.x == 0)
		atomicAdd(&n->ok, got);
}

__global__ void k_detached_reap_thread(gio_qp *qps, uint32_t want, unsigned *seen, Counts *n)
{
	gio_qp *qp = &qps[blockIdx.x];
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	uint32_t got = 0;
	while (got < want) {
		gio_cpl c[8];
		const int k = gio_qp_wait_batch(qp, c, 8, deadline);
		if (k < 0) {
			atomicAdd(&n->failed, 1ull);
			break;
		}
		for (int i = 0; i < k; i++) {
			if (c[i].res != 0 || (c[i].user_data & 0xff) != 0x5a)
				atomicAdd(&n->bad, 1ull);
			atomicAdd(&seen[c[i].user_data >> 8], 1u);
		}
		got += (uint32_t)k;
	}
	atomicAdd(&n->ok, got);
}

__global__ void k_iocb(gio_iocb *b, const gio_iocb_target *tg)
{
	gio_iocb_issue_block(b, tg);
}

__global__ void k_wait_iocb(const gio_iocb *b, int *rc)
{
	*rc = gio_wait_iocb(b, gio_deadline_in(60 * kSecond));
}

// Lane 0 of block 0 is the frozen producer; every other warp submits `rounds` commands.
__global__ void k_frozen(gio_qp *qp, uint32_t rounds, Counts *n, int *frozen_rc, unsigned long long *times,
			 uint64_t frozen_ns)
{
	const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
	const uint64_t deadline = gio_deadline_in(60 * kSecond);
	if (t < 32) {
		if (t == 0) {
			uint32_t f = 0;
			gio_sqe s;
			int rc = gio_qp_reserve(qp, 4, &f);
			command(&s, 0);
			frozen_rc[0] = rc;
			if (rc == 0) {
				frozen_rc[1] = gio_qp_put(qp, f, &s, 0, 0);
				frozen_rc[2] = gio_qp_put(qp, f + 1, &s, 1, 0);
				gio_qp_publish(qp);
				const uint64_t wake = gio_now_ns() + frozen_ns;
				while (gio_now_ns() < wake)
					__nanosleep(1000);
				times[0] = gio_now_ns();
				frozen_rc[3] = gio_qp_put(qp, f + 2, &s, 2, 0);
				frozen_rc[4] = gio_qp_put(qp, f + 3, &s, 3, 0);
				gio_qp_publish(qp);
				frozen_rc[5] = gio_qp_wait(qp, f, gio_deadline_in(kSecond), nullptr, nullptr);
				frozen_rc[6] = gio_qp_wait(qp, f + 1, gio_deadline_in(kSecond), nullptr, nullptr);
			}
		}
		return;
	}
	for (uint32_t r = 0; r < rounds; r++) {
		gio_sqe s;
		uint32_t ticket = 0;
		command(&s, t);
		int rc = gio_submit_warp(qp, &s, t, 0, 1, deadline, &ticket);
		const int wrc = gio_wait_warp(qp, ticket, rc == 0, deadline, nullptr);
		tally(n, rc ? rc : wrc, (ticket & (kDepth - 1)) * 3u, ticket);
	}
	atomicMax(&times[1], (unsigned long long)gio_now_ns());
}

__global__ void k_reap_warp(gio_qp *qp, uint32_t *got)
{
	const uint32_t k = gio_qp_reap_warp(qp);
	if (threadIdx.x == 0)
		*got = k;
}

// Queue pairs and their null controllers, all in HBM.
struct Setup {
	Rings r{};
	std::vector<void *> frees;
	gio_qp host_qps[kQueues];
	cudaStream_t ctl_stream;

	void *dmalloc(size_t bytes)
	{
		void *p = nullptr;
		CK(cudaMalloc(&p, bytes));
		CK(cudaMemset(p, 0, bytes));
		frees.push_back(p);
		return p;
	}

	explicit Setup(uint16_t flags, uint64_t stall_ns = GIO_QP_STALL_NS_DEFAULT)
	{
		r.qps = (gio_qp *)dmalloc(sizeof(gio_qp) * kQueues);
		r.ctrl = (Ctrl *)dmalloc(sizeof(Ctrl) * kQueues);
		CK(cudaHostAlloc((void **)&r.stop, 4, cudaHostAllocMapped));
		*r.stop = 0;
		std::vector<gio_cmd_slot> slots(kDepth);
		Ctrl ctrl[kQueues];
		for (uint32_t q = 0; q < kQueues; q++) {
			gio_sqe *sq = (gio_sqe *)dmalloc(sizeof(gio_sqe) * kDepth);
			gio_cqe *cq = (gio_cqe *)dmalloc(sizeof(gio_cqe) * kDepth);
			gio_cmd_slot *ds = (gio_cmd_slot *)dmalloc(sizeof(gio_cmd_slot) * kDepth);
			uint32_t *db = (uint32_t *)dmalloc(8);
			gio_qp &qp = host_qps[q];
			if (gio_qp_init(&qp, sq, kDepth, cq, kDepth, slots.data(), (uint16_t)(q + 1), db, db + 1, flags))
				std::exit(1);
			qp.stall_ns = stall_ns;
			qp.keep_ns = stall_ns == GIO_QP_STALL_NS_DEFAULT ? 0 : stall_ns;
			CK(cudaMemcpy(ds, slots.data(), sizeof(gio_cmd_slot) * kDepth, cudaMemcpyHostToDevice));
			qp.slots = ds;
			ctrl[q] = Ctrl{&r.qps[q], 0, 0, 1, 0, 0, 0};
		}
		CK(cudaMemcpy(r.qps, host_qps, sizeof(host_qps), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(r.ctrl, ctrl, sizeof(ctrl), cudaMemcpyHostToDevice));
		CK(cudaStreamCreateWithFlags(&ctl_stream, cudaStreamNonBlocking));
		null_controller<<<kQueues, 32, 0, ctl_stream>>>(r.ctrl, r.stop);
		CK(cudaGetLastError());
	}

	// Stops the controllers; returns their counters.
	void finish(Ctrl *out)
	{
		gio_store_release(r.stop, 1);
		if (!sync_within(ctl_stream, 30.0)) {
			std::printf("FAIL: the null controller did not stop\n");
			std::exit(1);
		}
		CK(cudaMemcpy(out, r.ctrl, sizeof(Ctrl) * kQueues, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(host_qps, r.qps, sizeof(host_qps), cudaMemcpyDeviceToHost));
		for (void *p : frees)
			CK(cudaFree(p));
		CK(cudaFreeHost(r.stop));
		CK(cudaStreamDestroy(ctl_stream));
	}
};

Counts *new_counts()
{
	Counts *n;
	CK(cudaMallocManaged(&n, sizeof(Counts)));
	std::memset(n, 0, sizeof(*n));
	return n;
}

bool run_on(cudaStream_t s, const char *what)
{
	if (!sync_within(s, 120.0)) {
		std::printf("FAIL: %s did not finish in 120 s\n", what);
		std::exit(1);
	}
	CK(cudaGetLastError());
	return true;
}

void check_ctrl(const Setup &su, const Ctrl *c, const char *mode, unsigned long long want_fetched)
{
	unsigned long long fetched = 0, bad = 0;
	for (uint32_t q = 0; q < kQueues; q++) {
		fetched += c[q].fetched;
		bad += c[q].bad;
		EXPECT(su.host_qps[q].stray_cqes == 0, "%s: queue %u: %u stray completions", mode, q, su.host_qps[q].stray_cqes);
		EXPECT(su.host_qps[q].sq_committed == su.host_qps[q].sq_reserved, "%s: queue %u: %u of %u published", mode,
		       q, su.host_qps[q].sq_committed, su.host_qps[q].sq_reserved);
	}
	EXPECT(bad == 0, "%s: %llu entries with a CID not their slot", mode, bad);
	if (want_fetched)
		EXPECT(fetched == want_fetched, "%s: the controllers fetched %llu entries, want %llu", mode, fetched,
		       want_fetched);
}

void verbs(uint16_t flags, const char *mode, bool quick)
{
	const uint32_t rounds = quick ? 2 : 20;
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	{ // single, warp, block
		Setup su(flags);
		Counts *n1 = new_counts(), *n2 = new_counts(), *n3 = new_counts();
		k_single<<<2, 64, 0, s>>>(su.r.qps, rounds, n1);
		k_warp<<<2, 128, 0, s>>>(su.r.qps, rounds, n2);
		k_block<128><<<kQueues, 128, 0, s>>>(su.r.qps, rounds, n3);
		run_on(s, "single/warp/block");
		Ctrl c[kQueues];
		su.finish(c);
		EXPECT(n1->ok == 128ull * rounds && n1->bad == 0 && n1->failed == 0, "%s single: ok %llu bad %llu failed %llu",
		       mode, n1->ok, n1->bad, n1->failed);
		unsigned long long warp_active = 0, block_active = 0;
		for (uint32_t r = 0; r < rounds; r++)
			for (uint32_t l = 0; l < 128; l++) {
				warp_active += 2 * ((l % 32 + r) % 3 != 0);
				block_active += kQueues * ((l + r) % 4 != 3 && l < kDepth - 1);
			}
		EXPECT(n2->ok == warp_active && n2->bad == 0 && n2->failed == 0, "%s warp: ok %llu (want %llu) bad %llu failed %llu",
		       mode, n2->ok, warp_active, n2->bad, n2->failed);
		EXPECT(n3->ok == block_active && n3->bad == 0 && n3->failed == 0,
		       "%s block: ok %llu (want %llu) bad %llu failed %llu", mode, n3->ok, block_active, n3->bad, n3->failed);
		check_ctrl(su, c, mode, 128ull * rounds + warp_active + block_active);
	}

	{ // detached: submitted by one kernel, reaped by others
		Setup su(flags);
		Counts *n = new_counts();
		const uint32_t warps = 8, per_queue = warps / kQueues * 32 * rounds, total = warps * 32 * rounds;
		unsigned *seen;
		CK(cudaMallocManaged(&seen, total * sizeof(unsigned)));
		std::memset(seen, 0, total * sizeof(unsigned));
		k_detached_submit<<<2, 128, 0, s>>>(su.r.qps, rounds, n);
		/* Queue pairs 0 and 1 by a warp each, 2 and 3 by a thread each (two launches at once). */
		cudaStream_t s2;
		CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
		k_detached_reap_warp<<<2, 32, 0, s2>>>(su.r.qps, per_queue, seen, n);
		k_detached_reap_thread<<<2, 1, 0, s2>>>(su.r.qps + 2, per_queue, seen, n);
		run_on(s, "detached submit");
		run_on(s2, "detached reap");
		Ctrl c[kQueues];
		su.finish(c);
		unsigned once = 0;
		for (uint32_t i = 0; i < total; i++)
			once += seen[i] == 1;
		EXPECT(n->failed == 0 && n->bad == 0 && n->ok == total, "%s detached: taken %llu of %u, bad %llu, failed %llu",
		       mode, n->ok, total, n->bad, n->failed);
		EXPECT(once == total, "%s detached: %u of %u user data came back exactly once", mode, once, total);
		for (uint32_t q = 0; q < kQueues; q++)
			EXPECT(su.host_qps[q].cpl_head == su.host_qps[q].cpl_tail, "%s detached: queue %u list not empty", mode, q);
		check_ctrl(su, c, mode, total);
		CK(cudaFree(seen));
		CK(cudaStreamDestroy(s2));
	}

	{ // iocb: issue blocks on the queue pairs, a waiter kernel beside; a zero timeout is refused
		Setup su(flags);
		const uint32_t nctx = 256;
		gio_iocb *b;
		gio_ioctx *ctx;
		gio_iocb_target *tg;
		gio_qp **qps;
		int *wrc;
		CK(cudaMallocManaged(&b, 2 * sizeof(gio_iocb)));
		CK(cudaMallocManaged(&ctx, 2 * nctx * sizeof(gio_ioctx)));
		CK(cudaMallocManaged(&tg, sizeof(gio_iocb_target)));
		CK(cudaMallocManaged(&qps, kQueues * sizeof(gio_qp *)));
		CK(cudaMallocManaged(&wrc, sizeof(int)));
		for (uint32_t q = 0; q < kQueues; q++)
			qps[q] = &su.r.qps[q];
		*tg = gio_iocb_target{qps, kQueues, 1, 12, 0};
		std::memset(ctx, 0, 2 * nctx * sizeof(gio_ioctx));
		for (uint32_t k = 0; k < 2; k++) {
			for (uint32_t i = 0; i < nctx; i++) {
				gio_ioctx *x = &ctx[k * nctx + i];
				x->dptr.addr = 0x100000ull + i * 4096ull;
				x->dptr.len = 4096;
				x->dptr.id = GIO_SGL_ID(GIO_SGL_TYPE_DATA_BLOCK, GIO_SGL_SUBTYPE_ADDRESS);
				x->offset = i * 4096ull;
				x->len = 4096;
				x->dir = GIO_IOCTX_READ;
			}
			std::memset(&b[k], 0, sizeof(gio_iocb));
			b[k].ctx = &ctx[k * nctx];
			b[k].nctx = nctx;
			b[k].first_error = 0xffffffffu;
			b[k].state = GIO_IOCB_RUNNING;
			b[k].timeout_ns = k == 0 ? 30 * kSecond : 0;
		}
		cudaStream_t s2;
		CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
		k_wait_iocb<<<1, 1, 0, s2>>>(&b[0], wrc);
		k_iocb<<<nctx / 128, 128, 0, s>>>(&b[0], tg);
		k_iocb<<<nctx / 128, 128, 0, s>>>(&b[1], tg);
		run_on(s, "iocb");
		run_on(s2, "iocb wait");
		Ctrl c[kQueues];
		su.finish(c);
		EXPECT(*wrc == 0, "%s iocb: gio_wait_iocb gave %d", mode, *wrc);
		EXPECT(b[0].state == GIO_IOCB_DONE && b[0].done == nctx && b[0].failed == 0, "%s iocb: state %u done %u failed %u",
		       mode, b[0].state, b[0].done, b[0].failed);
		uint32_t einval = 0, tickets_ok = 0;
		for (uint32_t i = 0; i < nctx; i++) {
			einval += ctx[nctx + i].result == -EINVAL;
			tickets_ok += (ctx[i].ticket & (kDepth - 1)) == ctx[i].cid;
		}
		EXPECT(b[1].state == GIO_IOCB_DONE && einval == nctx && b[1].first_result == -EINVAL,
		       "%s iocb with a zero timeout: %u of %u IOCTXs -EINVAL (first_result %d)", mode, einval, nctx,
		       b[1].first_result);
		EXPECT(tickets_ok == nctx, "%s iocb: %u of %u IOCTXs carry their ticket", mode, tickets_ok, nctx);
		check_ctrl(su, c, mode, nctx);
		CK(cudaFree(b));
		CK(cudaFree(ctx));
		CK(cudaFree(tg));
		CK(cudaFree(qps));
		CK(cudaFree(wrc));
		CK(cudaStreamDestroy(s2));
	}

	if (quick) {
		/* Under compute-sanitizer the other warps made no progress while the frozen lane slept
		 * (seen with sleeps of 1 s and 5 s: they finished some 45 ms after it woke), so the case
		 * would test the sanitizer's scheduling, not the ring; it runs in the plain GPU stage. */
		std::printf("%s: frozen-producer case left out under GIO_GPU_QUICK (sanitizer runs)\n", mode);
	} else { // frozen producer
		Setup su(flags, 5000000ull); /* stall_ns and keep_ns 5 ms, frozen for 200 ms */
		Counts *n = new_counts();
		int *frc;
		unsigned long long *times;
		CK(cudaMallocManaged(&frc, 8 * sizeof(int)));
		CK(cudaMallocManaged(&times, 2 * sizeof(unsigned long long)));
		for (int i = 0; i < 8; i++)
			frc[i] = 1;
		times[0] = times[1] = 0;
		const uint32_t frounds = 40;
		k_frozen<<<2, 128, 0, s>>>(su.r.qps, frounds, n, frc, times, 200000000ull);
		run_on(s, "frozen");
		Ctrl c[kQueues];
		su.finish(c);
		const unsigned long long others = (2ull * 128 - 32) * frounds;
		EXPECT(n->ok == others && n->failed == 0 && n->bad == 0, "%s frozen: others ok %llu of %llu, failed %llu", mode,
		       n->ok, others, n->failed);
		EXPECT(frc[0] == 0 && frc[1] == 0 && frc[2] == 0, "%s frozen: reserve %d put %d %d", mode, frc[0], frc[1], frc[2]);
		EXPECT(frc[3] == -ETIME && frc[4] == -ETIME, "%s frozen: its unput entries: %d %d (want -ETIME: cancelled)", mode,
		       frc[3], frc[4]);
		/* Its put commands completed; their results are dropped once the ring needs the slots, which
		 * it does when the others wrap the ring; else the frozen lane collects them itself. */
		const bool wrapped = others + 4 > kDepth;
		EXPECT(wrapped ? frc[5] == -ETIME && frc[6] == -ETIME : frc[5] == 0 && frc[6] == 0,
		       "%s frozen: its put commands: %d %d", mode, frc[5], frc[6]);
		EXPECT(su.host_qps[0].sq_cancelled == 2, "%s frozen: %u entries cancelled (want 2)", mode, su.host_qps[0].sq_cancelled);
		EXPECT(!wrapped || su.host_qps[0].dropped_results == 2, "%s frozen: %u results dropped (want 2)", mode,
		       su.host_qps[0].dropped_results);
		EXPECT(c[0].nops == 2, "%s frozen: the controller saw %llu cancelled entries (want 2)", mode, c[0].nops);
		EXPECT(times[1] < times[0], "%s frozen: the others finished %.1f ms after the frozen lane woke (want before)",
		       mode, ((double)times[1] - (double)times[0]) / 1e6);
		check_ctrl(su, c, mode, others + 4);
		CK(cudaFree(frc));
		CK(cudaFree(times));
	}
	CK(cudaStreamDestroy(s));
}

// 32 completions naming no command, in one run of the warp reaper: every one counted.
void stray()
{
	std::vector<gio_cqe> cq(kDepth);
	std::memset(cq.data(), 0, cq.size() * sizeof(gio_cqe));
	for (uint32_t i = 0; i < 32; i++) {
		cq[i].cid = (uint16_t)(kDepth + i); /* beyond the ring: nobody's */
		cq[i].sqhd = 0;
		cq[i].status = 1;
	}
	gio_sqe *sq;
	gio_cqe *dcq;
	gio_cmd_slot *slots;
	uint32_t *db, *got;
	gio_qp *qp;
	CK(cudaMalloc(&sq, sizeof(gio_sqe) * kDepth));
	CK(cudaMalloc(&dcq, sizeof(gio_cqe) * kDepth));
	CK(cudaMalloc(&slots, sizeof(gio_cmd_slot) * kDepth));
	CK(cudaMalloc(&db, 8));
	CK(cudaMalloc(&qp, sizeof(gio_qp)));
	CK(cudaMallocManaged(&got, 4));
	std::vector<gio_cmd_slot> hs(kDepth);
	gio_qp h;
	if (gio_qp_init(&h, sq, kDepth, dcq, kDepth, hs.data(), 1, db, db + 1, 0))
		std::exit(1);
	h.slots = slots;
	CK(cudaMemcpy(slots, hs.data(), sizeof(gio_cmd_slot) * kDepth, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dcq, cq.data(), sizeof(gio_cqe) * kDepth, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(qp, &h, sizeof(h), cudaMemcpyHostToDevice));
	k_reap_warp<<<1, 32>>>(qp, got);
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(&h, qp, sizeof(h), cudaMemcpyDeviceToHost));
	EXPECT(*got == 32, "stray: the warp consumed %u of 32", *got);
	EXPECT(h.stray_cqes == 32, "stray: %u of 32 stray completions counted", h.stray_cqes);
	CK(cudaFree(sq));
	CK(cudaFree(dcq));
	CK(cudaFree(slots));
	CK(cudaFree(db));
	CK(cudaFree(qp));
	CK(cudaFree(got));
}

} // namespace

int main()
{
	skip_without_gpu();
	const bool quick = std::getenv("GIO_GPU_QUICK") != nullptr;
	/* Every kernel loaded before the first persistent launch (the lazy-loading trap). */
	cudaFuncAttributes a;
	CK(cudaFuncGetAttributes(&a, null_controller));
	CK(cudaFuncGetAttributes(&a, k_single));
	CK(cudaFuncGetAttributes(&a, k_warp));
	CK(cudaFuncGetAttributes(&a, k_block<128>));
	CK(cudaFuncGetAttributes(&a, k_detached_submit));
	CK(cudaFuncGetAttributes(&a, k_detached_reap_warp));
	CK(cudaFuncGetAttributes(&a, k_detached_reap_thread));
	CK(cudaFuncGetAttributes(&a, k_iocb));
	CK(cudaFuncGetAttributes(&a, k_wait_iocb));
	CK(cudaFuncGetAttributes(&a, k_frozen));
	CK(cudaFuncGetAttributes(&a, k_reap_warp));
	verbs(0, "system scope", quick);
	verbs(GIO_QP_GPU_SCOPE, "GPU scope", quick);
	stray();
	if (failures) {
		std::printf("test_gpu_verbs: %d failures\n", failures);
		return 1;
	}
	std::printf("test_gpu_verbs: every device verb at system and GPU scope: ok\n");
	return 0;
}
