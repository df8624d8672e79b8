/**
 * @file giouring/device/verbs.cuh
 * @brief Device verbs: GPU threads, warps and blocks submit NVMe commands and wait for them.
 *
 * CUDA only. The protocol is the one of giouring/ring/qp.h (the same GIO_HD functions run here, with
 * the device half of giouring/ring/ordering.h); these verbs add the cooperative forms:
 *
 * | verb | who calls | what it does |
 * | --- | --- | --- |
 * | gio_submit() | one thread | reserve one slot, write the SQE, commit, ring |
 * | gio_submit_warp() | all 32 lanes | one reservation for the warp's active lanes, one doorbell |
 * | gio_submit_block() | all threads of the block | one reservation and one doorbell per block |
 * | gio_wait() | the submitting thread | its command's result, by a deadline |
 * | gio_wait_warp() | all 32 lanes | each lane's result; the warp reaps 32 CQEs at a time |
 * | gio_qp_reap_warp() | all 32 lanes | consume available completions, one doorbell per run |
 * | gio_wait_iocb() | any thread | an IOCB's completion, by a deadline (compute kernels) |
 * | gio_iocb_issue_block() | all threads of a block | an I/O kernel body: a thread per IOCTX |
 *
 * Ordering for cooperative submission (the argument beside the code): each lane writes its own
 * SQE; `__syncwarp()` / `__syncthreads()` order those writes before the leader's next operations
 * (barriers order memory among the participating threads); the leader's `st.release.sys` of the
 * committed index and of the shadow doorbell (or `fence.acq_rel.sys` then `st.mmio` for a real
 * controller) is cumulative, so it publishes the writes the barrier made visible to it. The
 * consumer pairs with an acquire load of the doorbell.
 *
 * Deadlines use `%globaltimer` (giouring/ring/clock.h). Persistent kernels: load every kernel before
 * the first persistent launch (docs/design.md, "Persistent kernels and lazy loading"):
 * gio_gpu_preload() of giouring/host/launch.h; gio_gpu_target_start() does it for its executor.
 */
#ifndef GIOURING_DEVICE_VERBS_CUH
#define GIOURING_DEVICE_VERBS_CUH

#if !defined(__CUDACC__)
#error "giouring/device/verbs.cuh is CUDA code: compile it with nvcc"
#endif

#include <cub/block/block_scan.cuh>

#include "../ring/clock.h"
#include "../ring/qp.h"
#include "../proto/status.h"
#include "../ring/uring.h"

/**
 * @brief Submits one command from one thread.
 * @param qp        the queue pair.
 * @param sqe       the command (its CID is set here).
 * @param deadline  absolute `%globaltimer` deadline for room in the ring and the ordered commit.
 * @param cid       receives the command identifier to wait on.
 * @return 0, or `-ETIME` (no room, or an earlier producer never committed; gio_qp::last_timeout).
 *
 * Any device thread, independently.
 */
GIO_DEV int gio_submit(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t deadline, uint32_t *cid)
{
	uint32_t idx;
	int rc = gio_qp_reserve_wait(qp, 1, deadline, &idx);
	if (rc)
		return rc;
	gio__qp_put(qp, idx, sqe);
	*cid = idx & (qp->sq_depth - 1);
	return gio__qp_publish(qp, idx, 1, deadline);
}

/* The warp form of gio_qp_reserve(): lane i checks slot first + i (one acquire load per lane
 * instead of n in a row), lane 0 claims the range. All lanes; the result on every lane. */
GIO_DEV int gio__qp_reserve_warp(struct gio_qp *qp, uint32_t n, uint32_t *first)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t mask = qp->sq_depth - 1;
	if (n == 0 || n >= qp->sq_depth || n > 32)
		return -EINVAL;
	for (;;) {
		uint32_t r = 0, head = 0;
		int ok = 0;
		if (lane == 0) {
			r = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_reserved);
			head = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_head);
		}
		r = __shfl_sync(0xffffffffu, r, 0);
		head = __shfl_sync(0xffffffffu, head, 0);
		if (r + n - head > mask) /* at most depth - 1 entries past the controller's head */
			return -EBUSY;
		/* Pairs with the release that frees a slot (see gio_qp_reserve()). */
		const int busy = lane < n && gio_load_acquire_in(GIO__QSC(qp), &qp->slots[(r + lane) & mask].state) != GIO_CMD_FREE;
		if (__any_sync(0xffffffffu, busy))
			return -EBUSY;
		if (lane == 0)
			ok = gio_cas_in(GIO__QSC(qp), &qp->sq_reserved, r, r + n);
		if (__shfl_sync(0xffffffffu, ok, 0)) {
			*first = r;
			return 0;
		}
	}
}

/* The warp form of gio_qp_reserve_wait(): reaps with the warp while the ring is full. */
GIO_DEV uint32_t gio_qp_reap_warp(struct gio_qp *qp);
GIO_DEV int gio__qp_reserve_wait_warp(struct gio_qp *qp, uint32_t n, uint64_t deadline, uint32_t *first)
{
	uint32_t spins = 0;
	for (;;) {
		const int rc = gio__qp_reserve_warp(qp, n, first);
		if (rc != -EBUSY)
			return rc;
		if (gio_qp_reap_warp(qp))
			continue;
		/* Lane 0's clock decides for the warp. */
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if ((threadIdx.x & 31u) == 0)
				gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

/**
 * @brief Submits one command per active lane of a warp, with one reservation and one doorbell.
 * @param qp        the queue pair (the same for every lane).
 * @param sqe       this lane's command; ignored when @p active is 0.
 * @param active    non-zero when this lane has a command.
 * @param deadline  absolute deadline (lane 0's clock decides).
 * @param cid       receives this lane's command identifier when active.
 * @return 0 on every lane, or `-ETIME` on every lane (then nothing was submitted, or, when an
 *         earlier producer never committed, the commands stay unpublished; see gio_qp_commit()).
 *
 * All 32 lanes of the warp must call it together (full mask), with the same @p qp. At most
 * sq_depth - 1 lanes may be active. The reservation checks its slots a lane each; each lane
 * writes its SQE with the CID set and marks its slot; the leader publishes.
 */
GIO_DEV int gio_submit_warp(struct gio_qp *qp, const struct gio_sqe *sqe, int active, uint64_t deadline, uint32_t *cid)
{
	const unsigned lane = threadIdx.x & 31u;
	const unsigned mask = __ballot_sync(0xffffffffu, active);
	const uint32_t n = (uint32_t)__popc(mask);
	uint32_t first = 0;
	int rc;
	if (n == 0)
		return 0;
	rc = gio__qp_reserve_wait_warp(qp, n, deadline, &first);
	if (rc)
		return rc;
	if (active) {
		const uint32_t idx = first + (uint32_t)__popc(mask & ((1u << lane) - 1u));
		gio__qp_put(qp, idx, sqe);
		*cid = idx & (qp->sq_depth - 1);
	}
	__syncwarp(); /* every lane's SQE and slot before the leader's release (see the file comment) */
	if (lane == 0)
		rc = gio__qp_publish(qp, first, n, deadline);
	return __shfl_sync(0xffffffffu, rc, 0);
}

/**
 * @brief Submits one command per active thread of a block, with one reservation and one doorbell.
 * @tparam BLOCK_THREADS  the block size (as launched).
 * @param qp        the queue pair (the same for every thread).
 * @param sqe       this thread's command; ignored when @p active is 0.
 * @param active    non-zero when this thread has a command.
 * @param deadline  absolute deadline (thread 0's value counts).
 * @param cid       receives this thread's command identifier when active.
 * @return 0 on every thread, or thread 0's `-ETIME` on every thread (nothing submitted).
 *
 * All threads of the block must call it together. At most sq_depth - 1 threads may be active.
 * Uses CUB's BlockScan for the ranks (its shared storage is declared here).
 */
template <int BLOCK_THREADS>
__device__ int gio_submit_block(struct gio_qp *qp, const struct gio_sqe *sqe, int active, uint64_t deadline,
				uint32_t *cid)
{
	typedef cub::BlockScan<uint32_t, BLOCK_THREADS> Scan;
	__shared__ typename Scan::TempStorage scan;
	__shared__ uint32_t first;
	__shared__ int rc;
	uint32_t rank, total;
	Scan(scan).ExclusiveSum(active ? 1u : 0u, rank, total);
	if (total == 0)
		return 0;
	if (threadIdx.x == 0)
		rc = gio_qp_reserve_wait(qp, total, deadline, &first);
	__syncthreads();
	if (rc == 0 && active) {
		/* Each thread marks its own slot: thread 0 publishes only (no serial pass over up to
		 * a block's worth of entries). */
		gio__qp_put(qp, first + rank, sqe);
		*cid = (first + rank) & (qp->sq_depth - 1);
	}
	__syncthreads(); /* every thread's SQE and slot before thread 0's release */
	if (rc == 0 && threadIdx.x == 0)
		rc = gio__qp_publish(qp, first, total, deadline);
	__syncthreads();
	return rc;
}

/**
 * @brief Waits for a submitted command's result.
 * @param qp        the queue pair.
 * @param cid       from gio_submit() / _warp / _block.
 * @param deadline  absolute deadline.
 * @param status    receives the status field, or NULL.
 * @return 0, `-EIO` (NVMe error, see @p status), `-ETIME` (abandoned; see giouring/ring/qp.h).
 *
 * The submitting thread. Any waiter reaps completions for all.
 */
GIO_DEV int gio_wait(struct gio_qp *qp, uint32_t cid, uint64_t deadline, uint16_t *status)
{
	return gio_qp_wait(qp, cid, deadline, status, (uint32_t *)0);
}

/**
 * @brief Consumes every completion available now, 32 CQEs at a time (the warp form of
 * gio_qp_reap()).
 * @param qp  the queue pair (the same for every lane).
 * @return completions consumed, on every lane (0 when none, or when another thread holds the
 *         reaper role).
 *
 * All 32 lanes of the warp together. Lane i checks the phase of CQE head + i with its own
 * acquire load; the contiguous run of matching entries from the head (a ballot) is consumed at
 * once: each lane hands its CQE's result to the command's slot, the last lane of the run gives
 * the newest SQ head, and one CQ head doorbell covers the run. Entries after a gap wait for the
 * next call, since the host consumes in order (invariant 5).
 */
GIO_DEV uint32_t gio_qp_reap_warp(struct gio_qp *qp)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t cq_mask = qp->cq_depth - 1;
	uint32_t head = 0, total = 0;
	int got = lane == 0 ? gio_cas_in(GIO__QSC(qp), &qp->cq_lock, 0, 1) : 0;
	if (!__shfl_sync(0xffffffffu, got, 0))
		return 0;
	if (lane == 0)
		head = gio_load_relaxed(&qp->cq_head);
	head = __shfl_sync(0xffffffffu, head, 0);
	for (;;) {
		const uint32_t idx = head + lane;
		struct gio_cqe *cqe = &qp->cq[idx & cq_mask];
		const uint32_t phase = 1u ^ ((idx >> qp->cq_shift) & 1u);
		/* Acquire per lane: its CQE's fields and data after the phase (see gio_qp_reap()). A lane
		 * past cq_depth - 1 entries would read an entry of the previous lap: never consumed. */
		const uint16_t st = lane < qp->cq_depth ? gio_load_acquire16_in(GIO__QSC(qp), &cqe->status) : 0;
		const unsigned ok = __ballot_sync(0xffffffffu, lane < qp->cq_depth && (st & 1u) == phase);
		const uint32_t n = ~ok ? (uint32_t)__ffs(~ok) - 1u : 32u; /* the run from the head */
		uint32_t sqhd = 0;
		if (n == 0)
			break;
		if (lane < n)
			gio__qp_take_cqe(qp, cqe, st);
		if (lane == n - 1)
			sqhd = cqe->sqhd;
		sqhd = __shfl_sync(0xffffffffu, sqhd, n - 1);
		if (lane == 0)
			gio__qp_sq_head_to(qp, sqhd);
		head += n;
		total += n;
		if (n < 32 || total >= qp->cq_depth)
			break;
	}
	/* Every lane's slot updates before lane 0 publishes the head and frees the reaper role. */
	__syncwarp();
	if (lane == 0)
		gio__qp_reap_end(qp, head, total);
	return total;
}

/**
 * @brief Waits for the commands a warp submitted, reaping for all with the whole warp.
 * @param qp        the queue pair (the same for every lane).
 * @param cid       this lane's command, from gio_submit_warp().
 * @param active    non-zero when this lane has a command.
 * @param deadline  absolute deadline.
 * @param status    receives this lane's status field, or NULL.
 * @return this lane's result: 0, `-EIO` (see @p status) or `-ETIME` (abandoned, as
 *         gio_qp_wait()); 0 on inactive lanes.
 *
 * All 32 lanes of the warp together.
 */
GIO_DEV int gio_wait_warp(struct gio_qp *qp, uint32_t cid, int active, uint64_t deadline, uint16_t *status)
{
	uint32_t spins = 0;
	int rc = active ? -EAGAIN : 0;
	for (;;) {
		if (rc == -EAGAIN)
			rc = gio_qp_try_result(qp, cid, status, (uint32_t *)0);
		if (!__any_sync(0xffffffffu, rc == -EAGAIN))
			return rc;
		if (gio_qp_reap_warp(qp))
			continue;
		/* Lane 0's clock decides for the warp, so every lane returns together. */
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if (rc == -EAGAIN)
				rc = gio_qp_wait(qp, cid, deadline, status, (uint32_t *)0); /* abandons it */
			return rc;
		}
		gio_backoff(&spins);
	}
}

/**
 * @brief Waits until an IOCB is complete (for compute kernels that consume restored data).
 * @param b         the IOCB.
 * @param deadline  absolute deadline.
 * @return as gio_iocb_wait().
 *
 * Any thread; typically one thread per block, followed by `__syncthreads()`.
 */
GIO_DEV int gio_wait_iocb(const struct gio_iocb *b, uint64_t deadline)
{
	return gio_iocb_wait(b, deadline);
}

/**
 * @brief I/O kernel body: the block issues the IOCB's IOCTXs, a thread per IOCTX, a warp per
 * doorbell, and marks the IOCB done when every IOCTX has its result.
 * @param b   the IOCB, made ready by the host before the launch as said below (no block resets it).
 * @param tg  the queue pairs: warp w of block k uses queue pair (k * warps + w) % nqps.
 *
 * All threads of every block of the grid; launch `ceil(nctx / blockDim.x)` blocks of a multiple
 * of 32 threads, after setting b->done = b->failed = 0, b->first_error = 0xffffffff and b->state
 * = GIO_IOCB_RUNNING (the host does it before the launch). The last thread to record a result
 * releases GIO_IOCB_DONE.
 */
GIO_DEV void gio_iocb_issue_block(struct gio_iocb *b, const struct gio_iocb_target *tg)
{
	const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	const uint32_t warp = i / 32u;
	struct gio_qp *qp = tg->qps[warp % tg->nqps];
	const uint64_t deadline = gio_deadline_in(b->timeout_ns);
	const int active = i < b->nctx;
	struct gio_sqe sqe;
	uint32_t cid = 0;
	int rc = 0, invalid = 0;
	uint16_t st = 0;
	if (active && gio_ioctx_to_sqe(&b->ctx[i], tg->nsid, tg->lba_shift, &sqe) != 0) {
		invalid = 1;
		gio_prep_flush(&sqe, tg->nsid); /* keeps the batch whole; the IOCTX reports -EINVAL */
	}
	rc = gio_submit_warp(qp, &sqe, active, deadline, &cid);
	if (!active)
		return;
	if (rc == 0)
		rc = gio_wait(qp, cid, deadline, &st);
	if (invalid && rc != -ETIME)
		rc = -EINVAL;
	b->ctx[i].qp = (uint16_t)(warp % tg->nqps);
	b->ctx[i].cid = (uint16_t)cid;
	b->ctx[i].status = st;
	b->ctx[i].result = rc;
	if (rc) {
		const uint32_t nth = gio_fetch_add(&b->failed, 1);
		if (nth == 0) { /* first failure (by arrival): publish it before DONE below */
			b->first_error = i;
			b->first_result = rc;
			b->first_status = st;
		}
	}
	/* The last result releases DONE; acq_rel add orders this thread's IOCTX writes before it. */
	if (gio_fetch_add(&b->done, 1) == b->nctx - 1) {
		gio_fence_release();
		gio_store_release(&b->state, GIO_IOCB_DONE);
	}
}

#endif /* GIOURING_DEVICE_VERBS_CUH */
