/**
 * @file giouring/ring/qp.h
 * @brief NVMe queue pairs: the submission/completion protocol, written once for host and GPU.
 *
 * One submission queue (SQ) and its completion queue (CQ), shared by many producers. The
 * protocol (docs/design.md, "Rings" and "Ring invariants"):
 *
 * - **Free-running indices.** `sq_reserved`, `sq_committed`, `sq_rung`, `sq_head` and `cq_head`
 *   only grow (mod 2^32); a slot is `index & (depth - 1)`; the CQ phase a consumer expects is
 *   derived from `cq_head`, so threads agree on it without shared state.
 * - **CID = SQ slot.** A command's identifier is its slot number, and a slot is reused only when
 *   the command last submitted from it has completed and its result has been collected (or it was
 *   abandoned at its deadline and its late completion has arrived). So a CID is never reused while
 *   its command is outstanding (invariant 4), and a late completion cannot touch anyone else's
 *   result (invariant 7).
 * - **Reserve, fill, commit in order, ring once.** Producers reserve contiguous indices with a CAS
 *   that also checks the SQHD bound (at most depth - 1 entries between the controller's head and
 *   the tail, invariant 3), fill their entries, then publish in index order: each waits until
 *   `sq_committed` reaches its first index and moves it past its last. The doorbell is written
 *   under a small lock by whichever producer gets it, with the newest committed tail, so doorbell
 *   values only move forward and cover only fully written entries (invariants 1 and 2); a
 *   producer returns once the doorbell covers its entries (one write may cover many batches).
 * - **Reap in order.** One thread at a time (a try-lock) consumes CQEs in order: status word with
 *   acquire, phase check, then the rest (invariant 6); SQHD advances `sq_head`; the result goes to
 *   the command's slot; one CQ head doorbell per batch covers only consumed entries (invariant 5).
 *   Any waiter reaps on behalf of all.
 * - **Deadlines.** Every wait takes an absolute deadline (giouring/ring/clock.h) and gives `-ETIME`
 *   when it passes, leaving the ring's indices in gio_qp::last_timeout (invariant 8). A command
 *   whose completion never arrives keeps its slot: once the ring wraps to that slot, reservations
 *   time out rather than reuse its CID; recover by creating a new queue pair.
 *
 * Doorbells are either MMIO registers of a real controller (fence, then a relaxed MMIO store) or
 * shadow words in memory that a software target or a doorbell proxy watches (release store).
 */
#ifndef GIOURING_RING_QP_H
#define GIOURING_RING_QP_H

#include <errno.h>
#include <stdint.h>

#include "clock.h"
#include "../config.h"
#include "../nvme/cqe.h"
#include "../nvme/sqe.h"
#include "ordering.h"

GIO_EXTERN_C_BEGIN

/** @name Command slot states (gio_cmd_slot::state)
 * @{ */
#define GIO_CMD_FREE 0u      /**< Reusable. */
#define GIO_CMD_INFLIGHT 1u  /**< Submitted; its completion has not been reaped. */
#define GIO_CMD_DONE 2u      /**< Completed; the result waits for its submitter. */
#define GIO_CMD_ABANDONED 3u /**< Its submitter gave up at a deadline; the completion is dropped. */
/** @} */

/** @brief gio_qp::flags: doorbells are MMIO registers of a real controller. */
#define GIO_QP_MMIO_DOORBELLS 1u
/** @brief gio_qp::flags: every party (producers, reapers, the target) runs on one GPU, so the
 * device-side ordering can use GPU scope (giouring/ring/ordering.h, GIO_SCOPE_GPU): several times
 * cheaper than system scope. Never with a CPU-executed target, CPU producers or a real controller. */
#define GIO_QP_GPU_SCOPE 2u
/* The ordering scope of a queue pair's operations. */
#define GIO__QSC(qp) (((qp)->flags & GIO_QP_GPU_SCOPE) ? GIO_SCOPE_GPU : GIO_SCOPE_SYS)

/** @brief Per-command state and result, one per SQ slot (the slot number is the CID). */
struct gio_cmd_slot {
	uint32_t state;  /**< GIO_CMD_*. */
	uint16_t status; /**< Status field of the completion (no phase), valid in GIO_CMD_DONE. */
	uint16_t rsvd;   /**< Zero. */
	uint32_t dw0;    /**< Completion Dword 0. */
	uint32_t dw1;    /**< Completion Dword 1. */
};

/** @brief The ring's indices, as recorded when a wait expires. */
struct gio_qp_state {
	uint32_t sq_reserved;  /**< Next SQ index to reserve. */
	uint32_t sq_committed; /**< Every SQ index below this is published. */
	uint32_t sq_rung;      /**< Last tail written to the SQ doorbell. */
	uint32_t sq_head;      /**< Controller's head, from the newest CQE. */
	uint32_t cq_head;      /**< Next CQE to consume. */
	uint32_t cid;          /**< The command waited for, or 0xffffffff. */
};

/**
 * @brief One queue pair. Fill it with gio_qp_init(); all fields below are shared by every thread
 * that submits to or reaps from it, so the structure itself must live where they all can reach
 * it (host memory for CPU threads; HBM or mapped host memory for GPU threads).
 */
struct gio_qp {
	struct gio_sqe *sq;         /**< SQ entries, sq_depth of them. */
	struct gio_cqe *cq;         /**< CQ entries, cq_depth of them. */
	struct gio_cmd_slot *slots; /**< One per SQ slot. */
	uint32_t *sq_db;            /**< SQ tail doorbell (MMIO register or shadow word). */
	uint32_t *cq_db;            /**< CQ head doorbell (MMIO register or shadow word). */
	uint32_t sq_depth;          /**< SQ entries, a power of two from 2 to 65536. */
	uint32_t cq_depth;          /**< CQ entries, a power of two, at least sq_depth. */
	uint32_t cq_shift;          /**< log2(cq_depth), for the expected phase. */
	uint16_t qid;               /**< Queue identifier (0 for the admin queue). */
	uint16_t flags;             /**< GIO_QP_MMIO_DOORBELLS, GIO_QP_GPU_SCOPE, or 0. */

	uint32_t sq_reserved;  /**< Next SQ index to reserve (CAS). */
	uint32_t sq_committed; /**< Every SQ index below is published (in order). */
	uint32_t sq_rung;      /**< Last tail written to the doorbell. */
	uint32_t sq_db_lock;   /**< Serialises doorbell writes. */
	uint32_t sq_head;      /**< Controller's head (free-running), from CQE SQHD. */
	uint32_t cq_head;      /**< Next CQE to consume (free-running). */
	uint32_t cq_lock;      /**< One reaper at a time. */
	uint32_t stray_cqes;   /**< Completions naming no outstanding command (a controller bug). */
	struct gio_qp_state last_timeout; /**< Indices when a wait last expired. */
};

/**
 * @brief Initialises a queue pair over caller-provided memory.
 * @param qp        the queue pair.
 * @param sq        SQ memory, @p sq_depth entries, zeroed or not.
 * @param sq_depth  SQ entries, a power of two from 2 to 65536 (at most CAP.MQES + 1).
 * @param cq        CQ memory, @p cq_depth entries; **must be zeroed** (phase 0 means empty).
 * @param cq_depth  CQ entries, a power of two from @p sq_depth to 65536.
 * @param slots     @p sq_depth command slots.
 * @param qid       queue identifier.
 * @param sq_db     SQ tail doorbell.
 * @param cq_db     CQ head doorbell.
 * @param flags     GIO_QP_MMIO_DOORBELLS for a real controller's registers, else 0.
 * @return 0, or `-EINVAL` for a NULL pointer or a depth that is not allowed.
 *
 * Pure; call once, before any thread uses the queue pair.
 */
GIO_HD int gio_qp_init(struct gio_qp *qp, struct gio_sqe *sq, uint32_t sq_depth, struct gio_cqe *cq,
		       uint32_t cq_depth, struct gio_cmd_slot *slots, uint16_t qid, uint32_t *sq_db,
		       uint32_t *cq_db, uint16_t flags)
{
	uint32_t i, shift = 0;
	if (!qp || !sq || !cq || !slots || !sq_db || !cq_db || sq_depth < 2 || sq_depth > 65536u ||
	    (sq_depth & (sq_depth - 1)) || cq_depth < sq_depth || cq_depth > 65536u ||
	    (cq_depth & (cq_depth - 1)))
		return -EINVAL;
	while ((1u << shift) < cq_depth)
		shift++;
	qp->sq = sq;
	qp->cq = cq;
	qp->slots = slots;
	qp->sq_db = sq_db;
	qp->cq_db = cq_db;
	qp->sq_depth = sq_depth;
	qp->cq_depth = cq_depth;
	qp->cq_shift = shift;
	qp->qid = qid;
	qp->flags = flags;
	qp->sq_reserved = qp->sq_committed = qp->sq_rung = qp->sq_db_lock = 0;
	qp->sq_head = qp->cq_head = qp->cq_lock = qp->stray_cqes = 0;
	qp->last_timeout.sq_reserved = qp->last_timeout.sq_committed = qp->last_timeout.sq_rung = 0;
	qp->last_timeout.sq_head = qp->last_timeout.cq_head = 0;
	qp->last_timeout.cid = 0xffffffffu;
	for (i = 0; i < sq_depth; i++) {
		slots[i].state = GIO_CMD_FREE;
		slots[i].status = 0;
		slots[i].rsvd = 0;
		slots[i].dw0 = 0;
		slots[i].dw1 = 0;
	}
	return 0;
}

/**
 * @brief Records the ring's indices (for the message of an expired wait).
 * @param qp   the queue pair.
 * @param cid  the command concerned, or 0xffffffff.
 *
 * Any thread, host or device. A snapshot for diagnosis: every field is stored atomically
 * (relaxed), but when two waits expire at once the fields may come from either of them.
 */
GIO_HD void gio_qp_note_timeout(struct gio_qp *qp, uint32_t cid)
{
	struct gio_qp_state *s = &qp->last_timeout;
	gio_store_relaxed(&s->sq_reserved, gio_load_relaxed(&qp->sq_reserved));
	gio_store_relaxed(&s->sq_committed, gio_load_relaxed(&qp->sq_committed));
	gio_store_relaxed(&s->sq_rung, gio_load_relaxed(&qp->sq_rung));
	gio_store_relaxed(&s->sq_head, gio_load_relaxed(&qp->sq_head));
	gio_store_relaxed(&s->cq_head, gio_load_relaxed(&qp->cq_head));
	gio_store_relaxed(&s->cid, cid);
}

/**
 * @brief Reserves @p n consecutive SQ entries without waiting.
 * @param qp     the queue pair.
 * @param n      entries wanted, 1 to sq_depth - 1.
 * @param first  receives the first reserved index; entry i is gio_qp_sqe(qp, *first + i).
 * @return 0, `-EBUSY` when the ring has no room for @p n now (slots still in use, or the
 *         controller's head too close), or `-EINVAL` for a bad @p n.
 *
 * Any thread, host or device. Every successful reservation must be followed by gio_qp_commit()
 * of the same range, or the ring stalls at it.
 */
GIO_HD int gio_qp_reserve(struct gio_qp *qp, uint32_t n, uint32_t *first)
{
	const uint32_t mask = qp->sq_depth - 1;
	if (n == 0 || n >= qp->sq_depth)
		return -EINVAL;
	for (;;) {
		const uint32_t r = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_reserved);
		uint32_t i;
		/* Pairs with the reaper's release of sq_head before it frees slots: at most depth - 1
		 * entries between the controller's head and the new tail r + n. */
		if (r + n - gio_load_acquire_in(GIO__QSC(qp), &qp->sq_head) > mask)
			return -EBUSY;
		for (i = 0; i < n; i++) /* pairs with the release that frees a slot */
			if (gio_load_acquire_in(GIO__QSC(qp), &qp->slots[(r + i) & mask].state) != GIO_CMD_FREE)
				return -EBUSY;
		/* A slot found free stays free: only the reserver of its next index takes it. */
		if (gio_cas_in(GIO__QSC(qp), &qp->sq_reserved, r, r + n)) {
			*first = r;
			return 0;
		}
	}
}

/**
 * @brief The SQ entry of a reserved index.
 * @param qp   the queue pair.
 * @param idx  an index returned by gio_qp_reserve() (plus an offset within the reservation).
 * @return the entry to fill; its `cid` is set by gio_qp_commit().
 *
 * Any thread, host or device.
 */
GIO_HD struct gio_sqe *gio_qp_sqe(const struct gio_qp *qp, uint32_t idx)
{
	return &qp->sq[idx & (qp->sq_depth - 1)];
}

/* Writes the newest committed tail to the doorbell until it covers `end`. */
GIO_HD int gio__qp_ring(struct gio_qp *qp, uint32_t end, uint64_t deadline)
{
	const uint32_t mask = qp->sq_depth - 1;
	uint32_t spins = 0;
	while ((int32_t)(gio_load_acquire_in(GIO__QSC(qp), &qp->sq_rung) - end) < 0) {
		if (gio_cas_in(GIO__QSC(qp), &qp->sq_db_lock, 0, 1)) {
			/* Pairs with the producers' release of sq_committed: every entry below c is written. */
			const uint32_t c = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_committed);
			if (c != gio_load_relaxed(&qp->sq_rung)) {
				if (qp->flags & GIO_QP_MMIO_DOORBELLS) {
					gio_fence_release_in(GIO__QSC(qp)); /* SQE stores before the MMIO doorbell (controller fetch) */
					gio_mmio_write32((volatile uint32_t *)qp->sq_db, c & mask);
				} else {
					/* Pairs with the target's acquire load of the shadow tail. */
					gio_store_release_in(GIO__QSC(qp), qp->sq_db, c & mask);
				}
				gio_store_release_in(GIO__QSC(qp), &qp->sq_rung, c);
			}
			gio_store_release_in(GIO__QSC(qp), &qp->sq_db_lock, 0);
		} else if (gio_deadline_passed(deadline)) {
			gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		} else {
			gio_backoff(&spins);
		}
	}
	return 0;
}

GIO_HD int gio__qp_publish(struct gio_qp *qp, uint32_t first, uint32_t n, uint64_t deadline);

/* Sets the CID of reserved index `idx` to its slot and marks the slot in flight. */
GIO_HD void gio__qp_mark(struct gio_qp *qp, uint32_t idx)
{
	const uint32_t slot = idx & (qp->sq_depth - 1);
	qp->sq[slot].cid = (uint16_t)slot;
	gio_store_relaxed(&qp->slots[slot].state, GIO_CMD_INFLIGHT);
}

/* Copies `sqe` into reserved index `idx` with the CID already set to the slot, and marks the
 * slot in flight: gio__qp_mark() without the second store of the CID into the ring, which in
 * host memory is a second write across PCIe. gio__qp_publish() of the reservation follows. */
GIO_HD void gio__qp_put(struct gio_qp *qp, uint32_t idx, const struct gio_sqe *sqe)
{
	const uint32_t slot = idx & (qp->sq_depth - 1);
	struct gio_sqe e = *sqe;
	e.cid = (uint16_t)slot;
	qp->sq[slot] = e;
	gio_store_relaxed(&qp->slots[slot].state, GIO_CMD_INFLIGHT);
}

/**
 * @brief Publishes reserved and filled entries, in index order, and rings the doorbell.
 * @param qp        the queue pair.
 * @param first     the first index of the reservation.
 * @param n         its length.
 * @param deadline  when to give up waiting for earlier reservations to be committed.
 * @return 0, or `-ETIME` when an earlier producer did not commit by the deadline (the ring is
 *         then stuck at that producer's entries; gio_qp::last_timeout shows where).
 *
 * Any thread, host or device; exactly once per reservation. Sets each entry's CID to its slot
 * and marks the slots in flight before publishing.
 */
GIO_HD int gio_qp_commit(struct gio_qp *qp, uint32_t first, uint32_t n, uint64_t deadline)
{
	uint32_t i;
	for (i = 0; i < n; i++)
		gio__qp_mark(qp, first + i);
	return gio__qp_publish(qp, first, n, deadline);
}

/* Publishes a marked reservation in index order and rings the doorbell (gio_qp_commit() after
 * gio__qp_mark() of each index; the warp form marks with one lane per index). */
GIO_HD int gio__qp_publish(struct gio_qp *qp, uint32_t first, uint32_t n, uint64_t deadline)
{
	uint32_t spins = 0;
	/* Ordered publication: wait for the producers before us. */
	while (gio_load_acquire_in(GIO__QSC(qp), &qp->sq_committed) != first) {
		if (gio_deadline_passed(deadline)) {
			gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
	/* Release: our SQE stores and slot states before the new committed index (pairs with the
	 * acquire in gio__qp_ring). */
	gio_store_release_in(GIO__QSC(qp), &qp->sq_committed, first + n);
	return gio__qp_ring(qp, first + n, deadline);
}

/* Moves the controller's SQ head to the slot a CQE reports. SQHD is a slot number: the free-running
 * head advances by the distance to it. A head past the published tail cannot be right (a
 * controller reports the head at posting time, so it only moves forward): it is ignored rather
 * than allowed to wedge the ring. The reaper only. */
GIO_HD void gio__qp_sq_head_to(struct gio_qp *qp, uint32_t sqhd)
{
	const uint32_t sq_mask = qp->sq_depth - 1;
	const uint32_t h = gio_load_relaxed(&qp->sq_head);
	if (((sqhd - h) & sq_mask) <= gio_load_acquire_in(GIO__QSC(qp), &qp->sq_committed) - h)
		gio_store_release_in(GIO__QSC(qp), &qp->sq_head, h + ((sqhd - h) & sq_mask));
}

/* Hands one consumed CQE's result to its command's slot. The reaper only, after the acquire
 * load of the status word `st` that matched the phase. */
GIO_HD void gio__qp_take_cqe(struct gio_qp *qp, const struct gio_cqe *cqe, uint16_t st)
{
	const uint32_t cid = cqe->cid;
	if (cid > qp->sq_depth - 1) {
		gio_store_relaxed(&qp->stray_cqes, gio_load_relaxed(&qp->stray_cqes) + 1);
	} else {
		struct gio_cmd_slot *s = &qp->slots[cid];
		const uint32_t state = gio_load_acquire_in(GIO__QSC(qp), &s->state);
		if (state == GIO_CMD_INFLIGHT) {
			s->status = (uint16_t)(st >> 1);
			s->dw0 = cqe->dw0;
			s->dw1 = cqe->dw1;
			/* Release: the result before DONE (pairs with the waiter's acquire). If the
			 * waiter abandoned it meanwhile, the late result is dropped. */
			if (!gio_cas_in(GIO__QSC(qp), &s->state, GIO_CMD_INFLIGHT, GIO_CMD_DONE))
				gio_store_release_in(GIO__QSC(qp), &s->state, GIO_CMD_FREE);
		} else if (state == GIO_CMD_ABANDONED) {
			gio_store_release_in(GIO__QSC(qp), &s->state, GIO_CMD_FREE);
		} else {
			gio_store_relaxed(&qp->stray_cqes, gio_load_relaxed(&qp->stray_cqes) + 1);
		}
	}
}

/* Publishes the new CQ head and rings the CQ head doorbell; then gives up the reaper role. */
GIO_HD void gio__qp_reap_end(struct gio_qp *qp, uint32_t head, uint32_t n)
{
	if (n) {
		gio_store_release_in(GIO__QSC(qp), &qp->cq_head, head);
		if (qp->flags & GIO_QP_MMIO_DOORBELLS) {
			gio_fence_release_in(GIO__QSC(qp));
			gio_mmio_write32((volatile uint32_t *)qp->cq_db, head & (qp->cq_depth - 1));
		} else {
			/* Pairs with the target's acquire load: entries before head are consumed. */
			gio_store_release_in(GIO__QSC(qp), qp->cq_db, head & (qp->cq_depth - 1));
		}
	}
	gio_store_release_in(GIO__QSC(qp), &qp->cq_lock, 0);
}

/**
 * @brief Consumes every completion available now, if no other thread is doing so.
 * @param qp  the queue pair.
 * @return completions consumed (0 when none, or when another thread holds the reaper role).
 *
 * Any thread, host or device. Results go to the commands' slots; completions of abandoned
 * commands are dropped and their slots freed. One CQ head doorbell covers the batch.
 * (giouring/device/verbs.cuh has the warp form, gio_qp_reap_warp().)
 */
GIO_HD uint32_t gio_qp_reap(struct gio_qp *qp)
{
	const uint32_t cq_mask = qp->cq_depth - 1;
	uint32_t head, n = 0;
	if (!gio_cas_in(GIO__QSC(qp), &qp->cq_lock, 0, 1))
		return 0;
	head = gio_load_relaxed(&qp->cq_head);
	for (;;) {
		struct gio_cqe *cqe = &qp->cq[head & cq_mask];
		const uint32_t phase = 1u ^ ((head >> qp->cq_shift) & 1u);
		/* Acquire: the CQE's other fields, and the data it completes, are read after this. Pairs
		 * with the controller's write of the status word last. */
		const uint16_t st = gio_load_acquire16_in(GIO__QSC(qp), &cqe->status);
		if ((st & 1u) != phase)
			break;
		gio__qp_sq_head_to(qp, cqe->sqhd);
		gio__qp_take_cqe(qp, cqe, st);
		head++;
		n++;
	}
	gio__qp_reap_end(qp, head, n);
	return n;
}

/**
 * @brief Takes the result of a completed command and frees its slot, without waiting.
 * @param qp      the queue pair.
 * @param cid     the command (its slot).
 * @param status  receives the status field (SC, SCT, CRD, More, DNR), or NULL.
 * @param dw0     receives completion Dword 0, or NULL.
 * @return 0 when the command succeeded, `-EIO` when it completed with an NVMe error (see
 *         @p status), `-EAGAIN` when it has not completed yet.
 *
 * Any thread, host or device; only the command's submitter.
 */
GIO_HD int gio_qp_try_result(struct gio_qp *qp, uint32_t cid, uint16_t *status, uint32_t *dw0)
{
	struct gio_cmd_slot *s = &qp->slots[cid & (qp->sq_depth - 1)];
	uint16_t st;
	/* Pairs with the reaper's release of DONE: the result fields are complete. */
	if (gio_load_acquire_in(GIO__QSC(qp), &s->state) != GIO_CMD_DONE)
		return -EAGAIN;
	st = s->status;
	if (status)
		*status = st;
	if (dw0)
		*dw0 = s->dw0;
	gio_store_release_in(GIO__QSC(qp), &s->state, GIO_CMD_FREE);
	return (st & 0x7ffu) ? -EIO : 0;
}

/**
 * @brief Waits for a command's completion, reaping on behalf of all, up to a deadline.
 * @param qp        the queue pair.
 * @param cid       the command (its slot).
 * @param deadline  absolute deadline (giouring/ring/clock.h).
 * @param status    receives the status field, or NULL.
 * @param dw0       receives completion Dword 0, or NULL.
 * @return 0, `-EIO` (NVMe error, see @p status), or `-ETIME` at the deadline: the command is then
 *         abandoned, its slot stays quarantined until its completion arrives, and
 *         gio_qp::last_timeout holds the ring's indices.
 *
 * Any thread, host or device; only the command's submitter.
 */
GIO_HD int gio_qp_wait(struct gio_qp *qp, uint32_t cid, uint64_t deadline, uint16_t *status, uint32_t *dw0)
{
	struct gio_cmd_slot *s = &qp->slots[cid & (qp->sq_depth - 1)];
	uint32_t spins = 0;
	for (;;) {
		int rc = gio_qp_try_result(qp, cid, status, dw0);
		if (rc != -EAGAIN)
			return rc;
		if (gio_qp_reap(qp))
			continue;
		if (gio_deadline_passed(deadline)) {
			if (gio_cas_in(GIO__QSC(qp), &s->state, GIO_CMD_INFLIGHT, GIO_CMD_ABANDONED)) {
				gio_qp_note_timeout(qp, cid);
				return -ETIME;
			}
			if (gio_load_acquire_in(GIO__QSC(qp), &s->state) == GIO_CMD_DONE)
				continue; /* it completed just now: take the result */
			/* Not in flight (already abandoned, or never submitted): the deadline still holds. */
			gio_qp_note_timeout(qp, cid);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

/**
 * @brief Reserves @p n entries, waiting (and reaping) while the ring is full, up to a deadline.
 * @param qp        the queue pair.
 * @param n         entries wanted, 1 to sq_depth - 1.
 * @param deadline  absolute deadline.
 * @param first     receives the first reserved index.
 * @return 0, `-EINVAL` for a bad @p n, or `-ETIME` when no room appeared by the deadline.
 *
 * Any thread, host or device.
 */
GIO_HD int gio_qp_reserve_wait(struct gio_qp *qp, uint32_t n, uint64_t deadline, uint32_t *first)
{
	uint32_t spins = 0;
	for (;;) {
		int rc = gio_qp_reserve(qp, n, first);
		if (rc != -EBUSY)
			return rc;
		if (gio_qp_reap(qp))
			continue;
		if (gio_deadline_passed(deadline)) {
			gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_QP_H */
