/**
 * @file giouring/device/owned.cuh
 * @brief A warp's session on an owned queue pair: its ring state in registers and its commands'
 * states in caller-provided storage (shared memory), for the fastest submission and reaping.
 *
 * CUDA only. An owned queue pair (GIO_QP_OWNED) has one warp as its only user, so nothing of its
 * state needs to be read back from global memory between calls. gio_owned_open_warp() loads the
 * queue pair's indices into a `struct gio_owned_warp` held by the warp (in registers, where the
 * compiler keeps it), and gives each outstanding command a 16-byte entry of a window in storage
 * the caller provides, in the manner of CUB's TempStorage: shared memory makes every state check
 * an on-chip access, where gio_submit_warp() / gio_wait_warp() read and write slot states in
 * global memory. A batch then costs its SQ entries, one release fence and the doorbell to submit,
 * and one acquire load per CQE (Dword 3 carries the CID and the status word together) to reap.
 * A command's user data stays in its window entry too: the slots in global memory are written
 * only by gio_owned_close_warp(), for the commands it leaves to the queue pair's other verbs
 * (measured on the H100: the two slot stores per command cost 5% of the command rate,
 * bench/results/2026-12-06-cmdrate-session-slots.md).
 * gio_owned_close_warp() writes the state back, so that the queue pair's other verbs, the host
 * and a later session continue from it.
 *
 * | verb | who calls | what |
 * | --- | --- | --- |
 * | gio_owned_open_warp() | all 32 lanes | start a session (the queue pair idle) |
 * | gio_owned_submit_warp() | all 32 lanes | a command per active lane, one doorbell |
 * | gio_owned_wait_warp() | all 32 lanes | each active lane's command by its ticket, with a deadline |
 * | gio_owned_reap_warp() | all 32 lanes | consume the completions available now |
 * | gio_owned_close_warp() | all 32 lanes | end the session, state written back |
 *
 * Rules: the window W is a power of two from 32 to sq_depth / 2; at most W commands of the
 * session are outstanding (submitted and not yet waited for, or abandoned and not yet completed):
 * a submission that would exceed it reaps, and waits up to its deadline. Because W is at most half
 * the SQ, a free entry proves that the command sq_depth positions earlier has completed, so its SQ
 * slot and CID may be reused: no SQ head needs to be tracked. Completions may come in any order.
 * The CQ head doorbell is rung once a quarter of the CQ has been consumed, and at the close: the
 * controller never finds the CQ full before that, since at most W <= cq_depth / 2 completions are
 * posted or being made and fewer than cq_depth / 4 consumed ones are not yet rung.
 */
#ifndef GIOURING_DEVICE_OWNED_CUH
#define GIOURING_DEVICE_OWNED_CUH

#if !defined(__CUDACC__)
#error "giouring/device/owned.cuh is CUDA code: compile it with nvcc"
#endif

#include <errno.h>
#include <stdint.h>

#include "verbs.cuh"

/** @brief A command's entry in a session's window: 16 bytes, in storage the caller provides. */
struct gio_owned_entry {
	uint32_t idx;       /**< The command's ticket (its free-running SQ index). */
	uint32_t word;      /**< GIO_CMD_* << 16 | its status field (DONE only). */
	uint64_t user_data; /**< Given to gio_owned_submit_warp(); goes to the slot at the close. */
};
static_assert(sizeof(struct gio_owned_entry) == 16, "the window's size is documented as 16 bytes an entry");

/** @brief A warp's session on an owned queue pair (every lane holds the same copy). */
struct gio_owned_warp {
	struct gio_qp *qp;           /**< The queue pair. */
	struct gio_owned_entry *ent; /**< The window: `wmask + 1` entries. */
	uint32_t wmask;              /**< Window entries - 1. */
	uint32_t start;              /**< SQ index at the open. */
	uint32_t tail;               /**< Next SQ index (free-running). */
	uint32_t cq_head;            /**< Next CQE to consume (free-running). */
	uint32_t cq_rung;            /**< The CQ head last written to the doorbell. */
	/* The queue pair's fixed fields, copied at the open: every acquire of the warp's polls
	 * sends later global loads to L2, so reading them from `qp` in each call cost round trips
	 * on both the submission and the completion path. */
	struct gio_sqe *sq;                /**< gio_qp::sq. */
	struct gio_cqe *cq;                /**< gio_qp::cq. */
	struct gio_cmd_slot *slots;        /**< gio_qp::slots. */
	uint32_t *sq_db;                   /**< gio_qp::sq_db. */
	uint32_t *cq_db;                   /**< gio_qp::cq_db. */
	struct gio_qp_check *check;        /**< gio_qp::check. */
	uint32_t sq_mask;                  /**< gio_qp::sq_depth - 1. */
	uint32_t cq_mask;                  /**< gio_qp::cq_depth - 1. */
	uint32_t cq_shift;                 /**< gio_qp::cq_shift. */
	uint16_t qflags;                   /**< gio_qp::flags. */
	uint16_t scope;                    /**< GIO_SCOPE_GPU or GIO_SCOPE_SYS, from the flags. */
};

#define GIO__OWNED_STATE(word) ((word) >> 16)
#define GIO__OWNED_WORD(st, sf) ((uint32_t)(st) << 16 | ((sf) & 0xffffu))

/**
 * @brief Starts a session on an idle owned queue pair.
 * @param w       receives the session (a variable of the warp; every lane passes its own).
 * @param qp      the queue pair (GIO_QP_OWNED), the same on every lane.
 * @param ent     @p window entries of storage for the session's life, shared memory for speed
 *                (16 bytes each: 128 entries are 2 KiB per warp), the same on every lane.
 * @param window  entries: a power of two from 32 to sq_depth / 2.
 * @return 0 on every lane; `-EINVAL` for a queue pair that is not owned or a bad @p window;
 *         `-EBUSY` when a command of the queue pair is still outstanding (its slot not free).
 *
 * All 32 lanes of the warp that owns @p qp.
 */
GIO_DEV int gio_owned_open_warp(struct gio_owned_warp *w, struct gio_qp *qp, struct gio_owned_entry *ent, uint32_t window)
{
	const unsigned lane = threadIdx.x & 31u;
	if (!(qp->flags & GIO_QP_OWNED) || window < 32u || (window & (window - 1u)) || window > qp->sq_depth / 2u)
		return -EINVAL;
	const uint32_t tail = gio_load_relaxed(&qp->sq_reserved);
	int busy = 0;
	for (uint32_t s = lane; s < qp->sq_depth; s += 32u)
		busy |= gio_cmd_state(gio_load_relaxed(&qp->slots[s].state)) != GIO_CMD_FREE;
	if (__any_sync(0xffffffffu, busy || gio_load_relaxed(&qp->sq_committed) != tail))
		return -EBUSY;
	for (uint32_t k = lane; k < window; k += 32u) {
		ent[k].idx = 0;
		ent[k].word = GIO__OWNED_WORD(GIO_CMD_FREE, 0);
	}
	w->qp = qp;
	w->ent = ent;
	w->wmask = window - 1u;
	w->start = w->tail = tail;
	w->cq_head = w->cq_rung = gio_load_relaxed(&qp->cq_head);
	w->sq = qp->sq;
	w->cq = qp->cq;
	w->slots = qp->slots;
	w->sq_db = qp->sq_db;
	w->cq_db = qp->cq_db;
	w->check = qp->check;
	w->sq_mask = qp->sq_depth - 1u;
	w->cq_mask = qp->cq_depth - 1u;
	w->cq_shift = qp->cq_shift;
	w->qflags = qp->flags;
	w->scope = (uint16_t)GIO__QSC(qp);
	__syncwarp(); /* the window before any lane's use */
	return 0;
}

/* Writes the consumed CQ head to the doorbell. Lane 0's CQE reads and the other lanes' (before
 * the caller's warp barrier) come before it: the target may overwrite those entries after. */
GIO_DEV void gio__owned_ring_cq_warp(struct gio_owned_warp *w)
{
	if ((threadIdx.x & 31u) == 0) {
		gio_fence_release_in(w->scope);
		if (w->qflags & GIO_QP_MMIO_DOORBELLS)
			gio_mmio_write32((volatile uint32_t *)w->cq_db, w->cq_head & w->cq_mask);
		else
			gio_store_relaxed(w->cq_db, w->cq_head & w->cq_mask);
	}
	w->cq_rung = w->cq_head;
}

/* Consumes one run of up to 32 new completions from the CQ head, a lane per CQE; returns its
 * length (every lane). Each CQE's result goes to its command's entry; a completion naming no
 * outstanding command of the session is counted in gio_qp::stray_cqes and dropped, and the
 * completion of an abandoned or refused command frees its entry. The session's own waits take one
 * run a call: a full run probing the CQ again would cost one more acquire round trip per batch of
 * 32 when nothing more is there (measured on the H200: 0.8% of the command rate). */
GIO_DEV uint32_t gio__owned_reap_run_warp(struct gio_owned_warp *w)
{
	const unsigned lane = threadIdx.x & 31u;
	const uint32_t sq_mask = w->sq_mask;
	struct gio_cqe *cqe;
	uint32_t dw3;
	const uint32_t n = gio__cqe_run_warp(w->cq, w->cq_mask, w->cq_shift, w->scope, w->cq_head, &cqe, &dw3);
	if (n == 0)
		return 0;
	if (lane < n) {
		const uint32_t cid = GIO_GET(dw3, CQE_DW3_CID);
		/* The one outstanding index with this CID: at most W < sq_depth are. */
		const uint32_t idx = w->tail - 1u - ((w->tail - 1u - cid) & sq_mask);
		struct gio_owned_entry *e = &w->ent[idx & w->wmask];
		const uint32_t st = cid <= sq_mask && e->idx == idx ? GIO__OWNED_STATE(e->word) : GIO_CMD_FREE;
		if (st == GIO_CMD_INFLIGHT)
			e->word = GIO__OWNED_WORD(GIO_CMD_DONE, GIO_GET(dw3, CQE_DW3_STATUS) >> 1);
		else if (st == GIO_CMD_ABANDONED || st == GIO_CMD_CANCELLED)
			e->word = GIO__OWNED_WORD(GIO_CMD_FREE, 0);
		else
			(void)gio_fetch_add_in(w->scope, &w->qp->stray_cqes, 1u); /* lanes may count at once */
	}
	w->cq_head += n;
	__syncwarp(); /* every lane's CQE reads and entry writes before the doorbell and their use */
	if (w->cq_head - w->cq_rung >= (w->cq_mask + 1u) / 4u)
		gio__owned_ring_cq_warp(w);
	return n;
}

/**
 * @brief Consumes the completions available now, a lane per CQE.
 * @param w  the session.
 * @return completions consumed, on every lane.
 *
 * All 32 lanes. Each CQE's result goes to its command's entry; a completion naming no
 * outstanding command of the session is counted in gio_qp::stray_cqes and dropped, and the
 * completion of an abandoned or refused command frees its entry.
 */
GIO_DEV uint32_t gio_owned_reap_warp(struct gio_owned_warp *w)
{
	uint32_t total = 0, n;
	/* Runs of 32 until a shorter one, at most one lap of the CQ. */
	do {
		n = gio__owned_reap_run_warp(w);
		total += n;
	} while (n == 32u && total <= w->cq_mask);
	return total;
}

/**
 * @brief Submits a command from every active lane, one SQ doorbell for them all.
 * @param w          the session.
 * @param sqe        this lane's command (active lanes); its CID is set here.
 * @param user_data  kept in the command's window entry, and in its slot
 *                   (gio_cmd_slot::user_data) if the close leaves the command to the queue
 *                   pair's other verbs.
 * @param flags      0 (GIO_CMD_F_DETACHED is refused: completions go to the session).
 * @param active     whether this lane submits.
 * @param deadline   how long to wait for window room (giouring/ring/clock.h).
 * @param ticket     receives the command's ticket (active lanes), for gio_owned_wait_warp():
 *                   the tickets of one call are consecutive in lane order and follow the
 *                   previous call's (a call of 32 active lanes gives t, t + 1, ..., t + 31).
 * @return 0; `-ETIME` (every lane) when the window had no room by @p deadline (nothing
 *         submitted); for a lane whose command was refused, `-EINVAL` (an unknown flag) or
 *         `-EFAULT` (a checked queue pair: gio_qp_put()), a harmless command taking its place.
 *
 * All 32 lanes, up to 32 of them active.
 */
GIO_DEV int gio_owned_submit_warp(struct gio_owned_warp *w, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags,
				  int active, uint64_t deadline, uint32_t *ticket)
{
	const unsigned lane = threadIdx.x & 31u;
	struct gio_qp *qp = w->qp;
	const unsigned act = __ballot_sync(0xffffffffu, active);
	const uint32_t n = (uint32_t)__popc(act);
	uint32_t spins = 0;
	int rc = 0;
	if (n == 0)
		return 0;
	for (;;) {
		const int busy = lane < n && GIO__OWNED_STATE(w->ent[(w->tail + lane) & w->wmask].word) != GIO_CMD_FREE;
		if (!__any_sync(0xffffffffu, busy))
			break;
		if (gio__owned_reap_run_warp(w))
			continue;
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if (lane == 0)
				gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
	if (active) {
		const uint32_t idx = w->tail + (uint32_t)__popc(act & ((1u << lane) - 1u));
		uint32_t st = GIO_CMD_INFLIGHT;
		if (flags || w->check) /* to refuse, or to check: the slot's user data is written too */
			st = gio__qp_write_at(qp, w->sq, w->slots, w->check, w->sq_mask, idx, sqe, user_data,
					      flags & GIO_CMD_F_DETACHED ? ~0u : flags, &rc);
		else
			gio__qp_write_sqe(w->sq, w->sq_mask, idx, sqe);
		struct gio_owned_entry *e = &w->ent[idx & w->wmask];
		e->idx = idx;
		e->word = GIO__OWNED_WORD(st, 0);
		e->user_data = user_data;
		*ticket = idx;
	}
	w->tail += n;
	__syncwarp(); /* every lane's entry before lane 0's fence and doorbell */
	if (lane == 0)
		gio__qp_publish_tail_at(qp, w->qflags, w->sq_db, w->sq_mask, w->tail);
	return rc;
}

/**
 * @brief Waits for each active lane's command, up to a deadline.
 * @param w         the session.
 * @param ticket    this lane's command, from gio_owned_submit_warp().
 * @param active    whether this lane waits.
 * @param deadline  absolute deadline (giouring/ring/clock.h).
 * @param status    receives the NVMe status field (active lanes), or NULL.
 * @return for each active lane: 0, `-EIO` (an NVMe error: see @p status), or `-ETIME` at the
 *         deadline (the command is abandoned: its late completion frees its entry) or for a
 *         ticket that names no outstanding command of the session; 0 on inactive lanes.
 *
 * All 32 lanes; lanes may wait for different commands, in any order.
 */
GIO_DEV int gio_owned_wait_warp(struct gio_owned_warp *w, uint32_t ticket, int active, uint64_t deadline, uint16_t *status)
{
	struct gio_owned_entry *e = &w->ent[ticket & w->wmask];
	uint32_t spins = 0;
	int rc = active ? -EAGAIN : 0;
	for (;;) {
		if (rc == -EAGAIN) {
			const uint32_t word = e->word, st = GIO__OWNED_STATE(word);
			if (e->idx != ticket || st == GIO_CMD_FREE || st == GIO_CMD_ABANDONED) {
				rc = -ETIME;
			} else if (st == GIO_CMD_DONE) {
				const uint16_t sf = (uint16_t)(word & 0xffffu);
				if (status)
					*status = sf;
				e->word = GIO__OWNED_WORD(GIO_CMD_FREE, 0);
				rc = (sf & 0x7ffu) ? -EIO : 0;
			}
		}
		if (!__any_sync(0xffffffffu, rc == -EAGAIN))
			break;
		if (gio__owned_reap_run_warp(w))
			continue;
		if (__shfl_sync(0xffffffffu, gio_deadline_passed(deadline), 0)) {
			if (rc == -EAGAIN) {
				e->word = GIO__OWNED_WORD(GIO_CMD_ABANDONED, 0);
				gio_qp_note_timeout(w->qp, ticket & (w->qp->sq_depth - 1u));
				rc = -ETIME;
			}
			break;
		}
		gio_backoff(&spins);
	}
	__syncwarp(); /* freed entries before the warp's next submission reads them */
	return rc;
}

/**
 * @brief Ends a session: writes the queue pair's indices and every used slot's state back.
 * @param w  the session.
 *
 * All 32 lanes. Outstanding commands stay outstanding (INFLIGHT or ABANDONED in their slots), and
 * a completed command not yet waited for keeps its status (not its Dwords 0 and 1) in its slot
 * as DONE: gio_wait_warp() and the host collect them, with their user data, as if
 * gio_submit_warp() had submitted them.
 */
GIO_DEV void gio_owned_close_warp(struct gio_owned_warp *w)
{
	const unsigned lane = threadIdx.x & 31u;
	struct gio_qp *qp = w->qp;
	const uint32_t sq_mask = qp->sq_depth - 1u, used = w->tail - w->start;
	uint32_t oldest = 0; /* distance back from the tail of the oldest command not completed */
	if (w->cq_head != w->cq_rung)
		gio__owned_ring_cq_warp(w);
	for (uint32_t s = lane; s <= sq_mask && used; s += 32u) {
		const uint32_t back = (w->tail - 1u - s) & sq_mask; /* the newest use of slot s, back from the tail */
		if (back >= used)
			continue; /* not used in this session: its word is as the open found it */
		const uint32_t idx = w->tail - 1u - back;
		uint32_t word = gio__qp_word(qp, idx + qp->sq_depth, GIO_CMD_FREE);
		const struct gio_owned_entry e = w->ent[idx & w->wmask];
		const uint32_t st = back <= w->wmask && e.idx == idx ? GIO__OWNED_STATE(e.word) : GIO_CMD_FREE;
		if (st != GIO_CMD_FREE) {
			qp->slots[s].user_data = e.user_data;
			qp->slots[s].flags = 0; /* the session refuses every flag */
		}
		if (st == GIO_CMD_DONE) {
			qp->slots[s].status = (uint16_t)(e.word & 0xffffu);
			qp->slots[s].dw0 = qp->slots[s].dw1 = 0;
			word = gio__qp_word(qp, idx, GIO_CMD_DONE);
		} else if (st != GIO_CMD_FREE) {
			word = gio__qp_word(qp, idx, st);
			oldest = back + 1u > oldest ? back + 1u : oldest;
		}
		gio_store_relaxed(&qp->slots[s].state, word);
	}
	oldest = __reduce_max_sync(0xffffffffu, oldest);
	__syncwarp();
	if (lane == 0) {
		gio_store_relaxed(&qp->sq_reserved, w->tail);
		/* Every command before the oldest one not completed was fetched: a lower bound of the
		 * controller's head, which the next CQE's SQ head moves forward. */
		gio_store_relaxed(&qp->sq_head, w->tail - oldest);
		gio_store_relaxed(&qp->cq_head, w->cq_head);
	}
	__syncwarp();
}

#endif /* GIOURING_DEVICE_OWNED_CUH */
