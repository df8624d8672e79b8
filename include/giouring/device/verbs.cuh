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
 * | gio_submit_block() | all threads of the block | one reservation and one doorbell per block (gio_block_submit: CUB's caller-provided TempStorage) |
 * | gio_wait() | the submitting thread | its command's result, by a deadline |
 * | gio_wait_warp() | all 32 lanes | each lane's result; the warp reaps 32 CQEs at a time |
 * | gio_qp_reap_warp() | all 32 lanes | consume available completions, one doorbell per run |
 * | gio_qp_peek_batch_warp() | all 32 lanes | take detached completions with their user data, a lane each |
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
 * @param qp         the queue pair.
 * @param sqe        the command (its CID is set here).
 * @param user_data  returned with the completion (gio_qp_peek_batch()).
 * @param flags      0 (wait by CID with gio_wait()) or GIO_CMD_F_DETACHED (completion list).
 * @param deadline   absolute `%globaltimer` deadline for room in the ring.
 * @param cid        receives the command's ticket, to wait on (its CID is `*cid & (sq_depth - 1)`;
 *                   see gio_qp_try_result()).
 * @return 0, `-ETIME` (no room by the deadline, or the reservation was cancelled as stalled;
 *         gio_qp::last_timeout), `-EINVAL` (unknown flag), or `-EFAULT` (a checked queue pair
 *         refused the data pointer: see gio_qp_put()).
 *
 * Any device thread, independently. Never waits on another producer.
 */
GIO_DEV int gio_submit(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags,
		       uint64_t deadline, uint32_t *cid)
{
	uint32_t idx;
	int rc = gio_qp_reserve_wait(qp, 1, deadline, &idx);
	if (rc)
		return rc;
	rc = gio_qp_put(qp, idx, sqe, user_data, flags);
	*cid = idx;
	gio_qp_publish(qp);
	return rc;
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
			/* Both relaxed, so that the two loads overlap: the CAS below checks r, a stale
			 * (smaller) head only refuses room that is there, and what makes a slot reusable
			 * is each lane's acquire of its state. */
			r = gio_load_relaxed(&qp->sq_reserved);
			head = gio_load_relaxed(&qp->sq_head);
		}
		r = __shfl_sync(0xffffffffu, r, 0);
		head = __shfl_sync(0xffffffffu, head, 0);
		if (r + n - head > mask) /* at most depth - 1 entries past the controller's head */
			return -EBUSY;
		/* Pairs with the release that frees a slot (see gio_qp_reserve()). */
		const int busy = lane < n && gio_load_acquire_in(GIO__QSC(qp), &qp->slots[(r + lane) & mask].state) !=
						     gio__qp_word(qp, r + lane, GIO_CMD_FREE);
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

/* The warp form of one advance pass (gio__qp_advance_once()): lane i checks the state of head
 * + i, a ballot gives the ready prefix 32 entries at a time. All lanes; lane 0 holds the role.
 * [own, own_end) is the caller's batch, ready since it wrote it: where the head is its first
 * entry (the common case: nobody ahead unready), the head moves over it without a look. */
GIO_DEV void gio__qp_advance_once_warp(struct gio_qp *qp, uint32_t own, uint32_t own_end)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t mask = qp->sq_depth - 1;
	uint32_t r = 0, c0 = 0, c;
	if (lane == 0) {
		/* Both relaxed, so that the two loads overlap: the entries below r are read with an
		 * acquire each, and a stale r only ends this pass early (the role's requests and the
		 * rescan before it is let go cover what comes later). */
		r = gio_load_relaxed(&qp->sq_reserved);
		c0 = gio_load_relaxed(&qp->sq_committed);
	}
	r = __shfl_sync(0xffffffffu, r, 0);
	c = c0 = __shfl_sync(0xffffffffu, c0, 0);
	if (c == own)
		c = own_end;
	while (c != r) {
		/* Acquire per lane: pairs with the producer's release of INFLIGHT (its entry). */
		const int ok = lane < r - c &&
			       gio__qp_ready(qp, c + lane, gio_load_acquire_in(GIO__QSC(qp), &qp->slots[(c + lane) & mask].state));
		const unsigned run = __ballot_sync(0xffffffffu, ok);
		const uint32_t k = ~run ? (uint32_t)__ffs(~run) - 1u : 32u;
		c += k;
		if (k < 32)
			break;
	}
	/* Every lane's acquire before lane 0's release of the committed index and the doorbell
	 * (the barrier orders memory among the lanes; see the file comment). */
	__syncwarp();
	if (lane == 0) {
		if (c != r)
			c = gio__qp_stalled(qp, c, r);
		if (c != c0)
			gio__qp_publish_tail(qp, c);
	}
	__syncwarp();
}

/* The warp form of gio_qp_publish(), with the caller's ready batch [own, own_end) (own ==
 * own_end: none). All lanes. */
GIO_DEV void gio__qp_publish_warp(struct gio_qp *qp, uint32_t own, uint32_t own_end)
{
	const unsigned lane = threadIdx.x & 31u;
	uint32_t w = 0;
	int held = lane == 0 ? gio__qp_role_take(qp, &w) : 0;
	if (!__shfl_sync(0xffffffffu, held, 0))
		return;
	for (;;) {
		int done = 0;
		gio__qp_advance_once_warp(qp, own, own_end);
		if (lane == 0)
			done = gio__qp_role_drop(qp, &w);
		if (__shfl_sync(0xffffffffu, done, 0))
			return;
	}
}

/* The warp form of gio_qp_reserve_wait(): reaps with the warp while the ring is full. */
GIO_DEV uint32_t gio_qp_reap_warp(struct gio_qp *qp);
GIO_DEV int gio__qp_reserve_wait_warp(struct gio_qp *qp, uint32_t n, uint64_t deadline, uint32_t *first)
{
	uint32_t spins = 0, at = 0xffffffffu;
	uint64_t since = 0;
	for (;;) {
		const int rc = gio__qp_reserve_warp(qp, n, first);
		if (rc != -EBUSY)
			return rc;
		if (gio_qp_reap_warp(qp))
			continue;
		gio__qp_publish_warp(qp, 0, 0);
		/* A waited result left uncollected where the ring needs its slot (lane 0 decides). */
		if (__shfl_sync(0xffffffffu, (threadIdx.x & 31u) == 0 ? gio__qp_drop_stale(qp, n, &at, &since) : 0, 0))
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

/* ---- Owned queue pairs (GIO_QP_OWNED): one warp submits and reaps, so its indices and slot
 * states are the warp's own: relaxed loads and stores (no fence, and never cached in a register
 * across the loops), and lanes see each other's writes through __syncwarp() (memory ordering
 * among the participating threads); the target sees the entries through one release fence before
 * the doorbell, which is cumulative over what lane 0 observed at the barrier. ---- */

/* The run of new completions from CQ position `head`, a lane each: lane i gets entry head + i and
 * its Dword 3, CID and status word (acquire per lane: the target wrote the CQE's other fields and
 * the data before Dword 3, by a release); returns the length of the run of entries with this
 * lap's phase from the head (every lane). A lane past cq_depth - 1 entries would read an entry of
 * the previous lap: never part of a run. Entries after a gap wait for the next call: the host
 * consumes in order. */
GIO_DEV uint32_t gio__cqe_run_warp(struct gio_cqe *cq, uint32_t cq_mask, uint32_t cq_shift, uint32_t scope, uint32_t head,
				   struct gio_cqe **cqe, uint32_t *dw3)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t idx = head + lane;
	const uint32_t phase = 1u ^ ((idx >> cq_shift) & 1u);
	*cqe = &cq[idx & cq_mask];
	*dw3 = lane <= cq_mask ? gio_load_acquire_in(scope, gio_cqe_dw3(*cqe)) : 0;
	const unsigned ok = __ballot_sync(0xffffffffu, lane <= cq_mask && GIO_GET(*dw3, CQE_DW3_STATUS) % 2u == phase);
	return ~ok ? (uint32_t)__ffs(~ok) - 1u : 32u;
}

/* gio__cqe_run_warp() of a queue pair's CQ. */
GIO_DEV uint32_t gio__qp_cqe_run_warp(struct gio_qp *qp, uint32_t head, struct gio_cqe **cqe, uint32_t *dw3)
{
	return gio__cqe_run_warp(qp->cq, qp->cq_depth - 1, qp->cq_shift, GIO__QSC(qp), head, cqe, dw3);
}

/* The SQ head of the newest entry of a run of n >= 1 (every lane). */
GIO_DEV uint32_t gio__qp_run_sqhd_warp(const struct gio_cqe *cqe, uint32_t n)
{
	const unsigned lane = threadIdx.x & 31u;
	uint32_t sqhd = 0;
	if (lane == n - 1)
		sqhd = cqe->sqhd;
	return __shfl_sync(0xffffffffu, sqhd, n - 1);
}

/* Consumes the completions available now, a lane per CQE. All lanes; the count on every lane. */
GIO_DEV uint32_t gio__qp_reap_owned_warp(struct gio_qp *qp)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t cq_mask = qp->cq_depth - 1, sq_mask = qp->sq_depth - 1;
	uint32_t head = gio_load_relaxed(&qp->cq_head), total = 0;
	for (;;) {
		struct gio_cqe *cqe;
		uint32_t dw3;
		const uint32_t n = gio__qp_cqe_run_warp(qp, head, &cqe, &dw3);
		if (n == 0)
			break;
		if (lane < n) {
			const uint32_t cid = GIO_GET(dw3, CQE_DW3_CID);
			const uint32_t st = GIO_GET(dw3, CQE_DW3_STATUS);
			if (cid > sq_mask) {
				(void)gio_fetch_add_in(GIO__QSC(qp), &qp->stray_cqes, 1u); /* lanes may count at once */
			} else {
				struct gio_cmd_slot *s = &qp->slots[cid];
				const uint32_t w = gio_load_relaxed(&s->state);
				if (gio_cmd_state(w) == GIO_CMD_INFLIGHT) {
					s->status = (uint16_t)(st >> 1);
					s->dw0 = cqe->dw0;
					s->dw1 = cqe->dw1;
					gio_store_relaxed(&s->state, (w & ~7u) | GIO_CMD_DONE);
				} else if (gio_cmd_state(w) == GIO_CMD_ABANDONED || gio_cmd_state(w) == GIO_CMD_CANCELLED) {
					gio_store_relaxed(&s->state, gio__qp_freed(qp, w));
				} else {
					(void)gio_fetch_add_in(GIO__QSC(qp), &qp->stray_cqes, 1u);
				}
			}
		}
		const uint32_t sqhd = gio__qp_run_sqhd_warp(cqe, n);
		if (lane == 0) {
			const uint32_t h = gio_load_relaxed(&qp->sq_head);
			if (((sqhd - h) & sq_mask) <= gio_load_relaxed(&qp->sq_committed) - h)
				gio_store_relaxed(&qp->sq_head, h + ((sqhd - h) & sq_mask));
		}
		head += n;
		total += n;
		if (n < 32 || total >= qp->cq_depth)
			break;
	}
	/* Every lane's CQE reads and slot writes before the CQ head doorbell (the target reuses the
	 * entries) and before the next use of the slots by any lane. */
	__syncwarp();
	if (lane == 0 && total) {
		gio_store_relaxed(&qp->cq_head, head);
		gio_fence_release_in(GIO__QSC(qp));
		if (qp->flags & GIO_QP_MMIO_DOORBELLS)
			gio_mmio_write32((volatile uint32_t *)qp->cq_db, head & cq_mask);
		else
			gio_store_relaxed(qp->cq_db, head & cq_mask);
	}
	__syncwarp();
	return total;
}

/* gio_submit_warp() on an owned queue pair. */
template <class Marks>
GIO_DEV int gio__submit_owned_warp(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags,
				   int active, uint64_t deadline, uint32_t *cid, Marks &marks)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t mask = qp->sq_depth - 1;
	const unsigned act = __ballot_sync(0xffffffffu, active);
	const uint32_t n = (uint32_t)__popc(act);
	uint32_t spins = 0, r;
	int rc = 0;
	if (n == 0)
		return 0;
	if (n >= qp->sq_depth)
		return active ? -EINVAL : 0;
	for (;;) {
		r = gio_load_relaxed(&qp->sq_reserved);
		const int busy = lane < n && gio_load_relaxed(&qp->slots[(r + lane) & mask].state) !=
						     gio__qp_word(qp, r + lane, GIO_CMD_FREE);
		if (r + n - gio_load_relaxed(&qp->sq_head) <= mask && !__any_sync(0xffffffffu, busy))
			break;
		if (gio__qp_reap_owned_warp(qp))
			continue;
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if (lane == 0)
				gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
	marks.mark(0);
	marks.mark(1);
	if (active) {
		const uint32_t idx = r + (uint32_t)__popc(act & ((1u << lane) - 1u));
		const uint32_t st = gio__qp_write(qp, idx, sqe, user_data, flags & GIO_CMD_F_DETACHED ? ~0u : flags, &rc);
		gio_store_relaxed(&qp->slots[idx & mask].state, gio__qp_word(qp, idx, st));
		*cid = idx;
	}
	__syncwarp(); /* every lane's entry and state before lane 0's fence and doorbell */
	marks.mark(2);
	marks.mark(3);
	if (lane == 0) {
		gio_store_relaxed(&qp->sq_reserved, r + n);
		gio__qp_publish_tail(qp, r + n);
	}
	__syncwarp();
	marks.mark(4);
	return rc;
}

/* gio_wait_warp() on an owned queue pair. */
GIO_DEV int gio__wait_owned_warp(struct gio_qp *qp, uint32_t cid, int active, uint64_t deadline, uint16_t *status)
{
	struct gio_cmd_slot *s = &qp->slots[cid & (qp->sq_depth - 1)];
	uint32_t spins = 0;
	int rc = active ? -EAGAIN : 0;
	for (;;) {
		if (rc == -EAGAIN) {
			const uint32_t w = gio_load_relaxed(&s->state);
			if ((w & ~7u) != gio__qp_word(qp, cid, 0)) {
				rc = -ETIME; /* not this command's lap any more */
			} else if (gio_cmd_state(w) == GIO_CMD_DONE) {
				const uint16_t st = s->status;
				if (status)
					*status = st;
				gio_store_relaxed(&s->state, gio__qp_freed(qp, w));
				rc = (st & 0x7ffu) ? -EIO : 0;
			}
		}
		if (!__any_sync(0xffffffffu, rc == -EAGAIN))
			break;
		if (gio__qp_reap_owned_warp(qp))
			continue;
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if (rc == -EAGAIN) { /* abandoned: its late completion frees the slot */
				gio_store_relaxed(&s->state, (gio_load_relaxed(&s->state) & ~7u) | GIO_CMD_ABANDONED);
				gio_qp_note_timeout(qp, cid & (qp->sq_depth - 1));
				rc = -ETIME;
			}
			break;
		}
		gio_backoff(&spins);
	}
	__syncwarp(); /* freed slots before the warp's next reservation reads them */
	return rc;
}

/* What gio_submit_warp() reports of its steps: nothing (the default, compiled away). A bench
 * passes a type of its own with the same member to time them (bench_gpu_cmdrate --stages). */
struct gio__submit_no_marks {
	__device__ void mark(int) {}
};

/* gio_submit_warp()'s body; `marks.mark(k)` is called by every lane after step k: 0 the
 * reservation, 1 the claim, 2 the entries written, 3 the batch's ready mark, 4 the publication. */
template <class Marks>
GIO_DEV int gio__submit_warp(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags,
			     int active, uint64_t deadline, uint32_t *cid, Marks &marks)
{
	if (qp->flags & GIO_QP_OWNED)
		return gio__submit_owned_warp(qp, sqe, user_data, flags, active, deadline, cid, marks);
	const unsigned lane = threadIdx.x & 31u;
	const unsigned mask = __ballot_sync(0xffffffffu, active);
	const uint32_t n = (uint32_t)__popc(mask);
	uint32_t first = 0;
	int rc = 0;
	if (n == 0)
		return 0;
	const unsigned leader = (unsigned)__ffs(mask) - 1u;
	uint32_t st = 0;
	rc = gio__qp_reserve_wait_warp(qp, n, deadline, &first);
	if (rc)
		return rc;
	marks.mark(0);
	/* One claim for the batch (see gio__qp_claim()), by the lane of its first entry. */
	rc = __shfl_sync(0xffffffffu, lane == leader ? gio__qp_claim(qp, first) : 0, leader);
	if (rc)
		return active ? rc : 0;
	marks.mark(1);
	if (active) {
		const uint32_t idx = first + (uint32_t)__popc(mask & ((1u << lane) - 1u));
		st = gio__qp_write(qp, idx, sqe, user_data, flags, &rc);
		/* The rest of the batch is ready with its first entry: relaxed marks here, covered by
		 * the leader's release below. */
		if (idx != first)
			gio_store_relaxed(&qp->slots[idx & (qp->sq_depth - 1)].state, gio__qp_word(qp, idx, st));
		*cid = idx;
	}
	__syncwarp(); /* every lane's entry before the leader's release (see the file comment) */
	marks.mark(2);
	if (lane == leader)
		gio_store_release_in(GIO__QSC(qp), &qp->slots[first & (qp->sq_depth - 1)].state, gio__qp_word(qp, first, st));
	/* Lane 0 may hold the role; the leader's release is ordered before its use by the barrier in
	 * the publish (the shuffle of the role). */
	__syncwarp();
	marks.mark(3);
	gio__qp_publish_warp(qp, first, first + n);
	marks.mark(4);
	return rc;
}

/**
 * @brief Submits one command per active lane of a warp, with one reservation and one doorbell.
 * @param qp         the queue pair (the same for every lane).
 * @param sqe        this lane's command; ignored when @p active is 0.
 * @param user_data  this lane's user data (returned with a detached completion).
 * @param flags      this lane's GIO_CMD_F_* (0: wait by CID).
 * @param active     non-zero when this lane has a command.
 * @param deadline   absolute deadline for room in the ring (lane 0's clock decides).
 * @param cid        receives this lane's ticket when active (see gio_submit()).
 * @return this lane's result: 0; `-ETIME` on every lane when no room appeared by the deadline
 *         (nothing submitted), or on a lane whose entry was cancelled as stalled (that command
 *         only); `-EINVAL` on a lane with an unknown flag, `-EFAULT` on a lane whose data pointer a
 *         checked queue pair refused (that command only: it is cancelled
 *         rather than sent); 0 on inactive lanes.
 *
 * All 32 lanes of the warp must call it together (full mask), with the same @p qp. At most
 * sq_depth - 1 lanes may be active. The reservation checks its slots a lane each; each lane puts
 * its own entry; the warp publishes whatever is ready at the head of the ring. Never waits on
 * another producer.
 */
GIO_DEV int gio_submit_warp(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags,
			    int active, uint64_t deadline, uint32_t *cid)
{
	gio__submit_no_marks none;
	return gio__submit_warp(qp, sqe, user_data, flags, active, deadline, cid, none);
}

/**
 * @brief Block-wide submission (CUB's shape): one reservation and one doorbell per block.
 * @tparam BLOCK_THREADS  the block size, as launched.
 *
 * Declare its TempStorage in shared memory and pass it to the constructor, as with CUB's block
 * primitives; a `__syncthreads()` is needed before the storage is reused for anything else
 * (consecutive calls of submit() on the same storage are safe).
 */
template <int BLOCK_THREADS>
class gio_block_submit {
	typedef cub::BlockScan<uint32_t, BLOCK_THREADS> Scan;
	struct storage {
		typename Scan::TempStorage scan;
		uint32_t first;
		uint32_t first_state; /* the ready mark of the batch's first entry */
		int rc;
	};

    public:
	/** @brief Shared memory the block's threads use together (one per block). */
	struct TempStorage : cub::Uninitialized<storage> {};

	/** @brief Binds the block's shared storage (every thread passes the same).
	 * @param tmp  the block's TempStorage, in shared memory. */
	__device__ explicit gio_block_submit(TempStorage &tmp) : tmp_(tmp.Alias()) {}

	/**
	 * @brief Submits one command per active thread of the block.
	 * @param qp         the queue pair (the same for every thread).
	 * @param sqe        this thread's command; ignored when @p active is 0.
	 * @param user_data  this thread's user data.
	 * @param flags      this thread's GIO_CMD_F_*.
	 * @param active     non-zero when this thread has a command.
	 * @param deadline   absolute deadline for room in the ring (thread 0's value counts).
	 * @param cid        receives this thread's ticket when active (see gio_submit()).
	 * @return this thread's result, as gio_submit_warp(): 0; thread 0's `-ETIME` on every thread
	 *         when no room appeared (nothing submitted); `-ETIME`, `-EINVAL` or `-EFAULT` for this thread's
	 *         command only when it was cancelled or its flags are unknown; 0 when inactive.
	 *
	 * All threads of the block together. At most sq_depth - 1 threads may be active.
	 */
	__device__ int submit(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags,
			      int active, uint64_t deadline, uint32_t *cid)
	{
		uint32_t rank, total, first;
		int rc, mine = 0;
		Scan(tmp_.scan).ExclusiveSum(active ? 1u : 0u, rank, total);
		if (total == 0)
			return 0;
		if (threadIdx.x == 0) {
			uint32_t f = 0;
			int r = gio_qp_reserve_wait(qp, total, deadline, &f);
			if (r == 0)
				r = gio__qp_claim(qp, f); /* one claim for the batch (see gio__qp_claim()) */
			tmp_.rc = r;
			tmp_.first = f;
		}
		__syncthreads(); /* thread 0's reservation before every thread reads it */
		rc = tmp_.rc;
		first = tmp_.first;
		if (rc == 0 && active) {
			const uint32_t idx = first + rank;
			const uint32_t st = gio__qp_write(qp, idx, sqe, user_data, flags, &mine);
			if (rank)
				gio_store_relaxed(&qp->slots[idx & (qp->sq_depth - 1)].state, gio__qp_word(qp, idx, st));
			else
				tmp_.first_state = st;
			*cid = idx;
		}
		/* Every entry before thread 0's release of the batch and its publication (one doorbell
		 * for the block), and every read of the storage before the next call writes it. */
		__syncthreads();
		if (rc == 0 && threadIdx.x == 0) {
			gio_store_release_in(GIO__QSC(qp), &qp->slots[first & (qp->sq_depth - 1)].state,
					     gio__qp_word(qp, first, tmp_.first_state));
			gio_qp_publish(qp);
		}
		return rc ? (active ? rc : 0) : mine;
	}

    private:
	storage &tmp_;
};

/**
 * @brief Submits one command per active thread of a block (gio_block_submit::submit()).
 * @tparam BLOCK_THREADS  the block size, as launched.
 * @param tmp        the block's shared gio_block_submit<BLOCK_THREADS>::TempStorage.
 * @param qp         the queue pair (the same for every thread).
 * @param sqe        this thread's command; ignored when @p active is 0.
 * @param user_data  this thread's user data.
 * @param flags      this thread's GIO_CMD_F_*.
 * @param active     non-zero when this thread has a command.
 * @param deadline   absolute deadline for room in the ring (thread 0's value counts).
 * @param cid        receives this thread's ticket when active (see gio_submit()).
 * @return as gio_block_submit::submit().
 *
 * All threads of the block together.
 */
template <int BLOCK_THREADS>
__device__ int gio_submit_block(typename gio_block_submit<BLOCK_THREADS>::TempStorage &tmp, struct gio_qp *qp,
				const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags, int active,
				uint64_t deadline, uint32_t *cid)
{
	return gio_block_submit<BLOCK_THREADS>(tmp).submit(qp, sqe, user_data, flags, active, deadline, cid);
}

/**
 * @brief Waits for a submitted command's result.
 * @param qp        the queue pair.
 * @param cid       the ticket from gio_submit() / _warp / _block.
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
	const uint32_t sq_mask = qp->sq_depth - 1;
	uint32_t head = 0, total = 0, tail = 0, tail0;
	int got = lane == 0 ? gio_cas_in(GIO__QSC(qp), &qp->cq_lock, 0, 1) : 0;
	if (!__shfl_sync(0xffffffffu, got, 0))
		return 0;
	if (lane == 0) {
		head = gio_load_relaxed(&qp->cq_head);
		tail = gio_load_relaxed(&qp->cpl_tail);
	}
	head = __shfl_sync(0xffffffffu, head, 0);
	tail = tail0 = __shfl_sync(0xffffffffu, tail, 0);
	for (;;) {
		struct gio_cqe *cqe;
		uint32_t dw3;
		const uint32_t n = gio__qp_cqe_run_warp(qp, head, &cqe, &dw3); /* see gio_qp_reap() */
		int listed = 0;
		unsigned lst;
		if (n == 0)
			break;
		if (lane < n)
			listed = gio__qp_take_cqe(qp, cqe, dw3);
		/* Detached completions go to the list in CQ order: a rank per listing lane. */
		lst = __ballot_sync(0xffffffffu, listed);
		if (listed)
			qp->slots[(tail + (uint32_t)__popc(lst & ((1u << lane) - 1u))) & sq_mask].cpl = (uint16_t)GIO_GET(dw3, CQE_DW3_CID);
		tail += (uint32_t)__popc(lst);
		const uint32_t sqhd = gio__qp_run_sqhd_warp(cqe, n);
		if (lane == 0)
			gio__qp_sq_head_to(qp, sqhd);
		head += n;
		total += n;
		if (n < 32 || total >= qp->cq_depth)
			break;
	}
	/* Every lane's slot updates before lane 0 publishes the list tail and the head and frees the
	 * reaper role. */
	__syncwarp();
	if (lane == 0) {
		if (tail != tail0) /* only when something was listed (see gio_qp_reap()) */
			gio_store_release_in(GIO__QSC(qp), &qp->cpl_tail, tail);
		gio__qp_reap_end(qp, head, total);
	}
	return total;
}

/**
 * @brief Takes completions of detached commands, a lane each (the warp form of
 * gio_qp_peek_batch()).
 * @param qp   the queue pair (the same for every lane).
 * @param out  this lane's completion, valid when the lane's index is below the result.
 * @return completions taken (0 to 32), on every lane: lane i holds completion i.
 *
 * All 32 lanes of the warp together. Reaps with the warp first, and publishes unpublished
 * entries when it finds nothing, as gio_qp_peek_batch() does.
 */
GIO_DEV uint32_t gio_qp_peek_batch_warp(struct gio_qp *qp, struct gio_cpl *out)
{
	const unsigned lane = threadIdx.x & 31u;
	uint32_t h = 0, t = 0, n;
	int got = 0;
	gio_qp_reap_warp(qp);
	if (lane == 0 && gio_cas_in(GIO__QSC(qp), &qp->cpl_lock, 0, 1)) {
		got = 1;
		h = gio_load_relaxed(&qp->cpl_head);
		t = gio_load_acquire_in(GIO__QSC(qp), &qp->cpl_tail); /* pairs with the reaper's release */
	}
	if (!__shfl_sync(0xffffffffu, got, 0))
		return 0;
	h = __shfl_sync(0xffffffffu, h, 0);
	t = __shfl_sync(0xffffffffu, t, 0);
	n = t - h < 32u ? t - h : 32u;
	if (n == 0) {
		if (lane == 0)
			gio_store_release_in(GIO__QSC(qp), &qp->cpl_lock, 0);
		/* Nothing to take: publish for a stalled ring (not on the fast path). */
		if (__shfl_sync(0xffffffffu, gio__qp_unpublished(qp), 0))
			gio__qp_publish_warp(qp, 0, 0);
		return 0;
	}
	/* Lane 0's acquire of the tail before the other lanes read the listed slots. */
	__syncwarp();
	if (lane < n)
		gio__qp_take_listed(qp, h + lane, out);
	__syncwarp();
	if (lane == 0) {
		gio_store_relaxed(&qp->cpl_head, h + n);
		gio_store_release_in(GIO__QSC(qp), &qp->cpl_lock, 0);
	}
	return n;
}

/** @cond internal */
GIO_DEV int gio_wait_warp_paced(struct gio_qp *qp, uint32_t cid, int active, uint64_t deadline, uint16_t *status,
				uint32_t pause_ns);
GIO_DEV int gio__wait_warp_gated(struct gio_qp *qp, uint32_t cid, int active, uint64_t deadline, uint16_t *status,
				 uint32_t pause_ns, const volatile uint32_t *gate, uint32_t gate_ns);
/** @endcond */

/**
 * @brief Waits for the commands a warp submitted, reaping for all with the whole warp.
 * @param qp        the queue pair (the same for every lane).
 * @param cid       this lane's ticket, from gio_submit_warp().
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
	return gio_wait_warp_paced(qp, cid, active, deadline, status, 0);
}

/**
 * @brief gio_wait_warp() with at least @p pause_ns between the warp's polls of its completions.
 * @param qp        the queue pair (the same for every lane).
 * @param cid       this lane's ticket, from gio_submit_warp().
 * @param active    non-zero when this lane has a command.
 * @param deadline  absolute deadline.
 * @param status    receives this lane's status field, or NULL.
 * @param pause_ns  the least pause between polls (`__nanosleep`, which may sleep up to twice as
 *                  long); 0: gio_wait_warp()'s back-off (32 ns growing to about 1 us).
 * @return as gio_wait_warp().
 *
 * All 32 lanes of the warp together. Where the queues are in host memory every poll reads across
 * PCIe; pausing longer reads less, which costs kernels elsewhere on the GPU less (docs/staged.md,
 * "Completions without polling host memory"), and delays seeing a completion by up to the pause.
 */
GIO_DEV int gio_wait_warp_paced(struct gio_qp *qp, uint32_t cid, int active, uint64_t deadline, uint16_t *status,
				uint32_t pause_ns)
{
	return gio__wait_warp_gated(qp, cid, active, deadline, status, pause_ns, (const volatile uint32_t *)0, 0);
}

/* gio_wait_warp_paced() that reads the CQ only when it may hold something: with a gate (a word in
 * GPU memory that a watcher of the CQ moves when it changes), at first, then when the gate moved
 * since the warp's last read of the CQ, or gate_ns after that read (a change not signalled yet);
 * in between the warp polls only the gate. The gate is read before the CQ, so a CQE posted after
 * that read of the CQ moves it again. Without a gate (NULL), every poll reads the CQ. */
GIO_DEV int gio__wait_warp_gated(struct gio_qp *qp, uint32_t cid, int active, uint64_t deadline, uint16_t *status,
				 uint32_t pause_ns, const volatile uint32_t *gate, uint32_t gate_ns)
{
	if (qp->flags & GIO_QP_OWNED)
		return gio__wait_owned_warp(qp, cid, active, deadline, status);
	uint32_t spins = 0, seen = 0;
	uint64_t read_at = 0;
	int rc = active ? -EAGAIN : 0, read_cq = 1;
	for (;;) {
		if (rc == -EAGAIN)
			rc = gio_qp_try_result(qp, cid, status, (uint32_t *)0);
		if (!__any_sync(0xffffffffu, rc == -EAGAIN))
			return rc;
		if (read_cq) {
			if (gate && (threadIdx.x & 31u) == 0) {
				seen = *gate;
				read_at = gio_now_ns();
			}
			if (gio_qp_reap_warp(qp))
				continue;
			read_cq = !gate;
		}
		/* Not on the fast path: entries are published by their producers; this is for a stall. */
		if (spins >= 16 && __shfl_sync(0xffffffffu, gio__qp_unpublished(qp), 0))
			gio__qp_publish_warp(qp, 0, 0);
		/* Lane 0's clock decides for the warp, so every lane returns together. */
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if (rc == -EAGAIN)
				rc = gio_qp_wait(qp, cid, deadline, status, (uint32_t *)0); /* abandons it */
			return rc;
		}
		if (pause_ns) {
			spins++;
			__nanosleep(pause_ns);
		} else {
			gio_backoff(&spins);
		}
		if (gate) /* lane 0's view decides for the warp */
			read_cq = __shfl_sync(0xffffffffu,
					      (threadIdx.x & 31u) == 0 && (*gate != seen || gio_now_ns() - read_at >= gate_ns), 0);
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
 * releases GIO_IOCB_DONE. An IOCB with a zero timeout_ns is refused: every IOCTX gets `-EINVAL`
 * and nothing is submitted.
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
		gio_prep_cmd(&sqe, GIO_NVM_OPC_FLUSH, tg->nsid); /* keeps the batch whole; the IOCTX reports -EINVAL */
	}
	if (b->timeout_ns == 0) { /* the same for every thread: refused, not "expire at once" */
		if (!active)
			return;
		rc = -EINVAL;
	} else {
		rc = gio_submit_warp(qp, &sqe, i, 0, active, deadline, &cid);
		if (!active)
			return;
		if (rc == 0)
			rc = gio_wait(qp, cid, deadline, &st);
	}
	if (invalid && rc != -ETIME)
		rc = -EINVAL;
	b->ctx[i].qp = (uint16_t)(warp % tg->nqps);
	b->ctx[i].cid = (uint16_t)(cid & (qp->sq_depth - 1));
	b->ctx[i].ticket = cid;
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
