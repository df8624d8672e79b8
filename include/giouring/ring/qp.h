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
 * - **Reserve, put, publish; no producer waits on another.** Producers reserve contiguous
 *   indices with a CAS that also checks the SQHD bound (at most depth - 1 entries between the
 *   controller's head and the tail, invariant 3). Each entry then carries its own ready mark: its
 *   slot goes FREE -> FILLING (a CAS: the producer's claim), the SQE is copied in, and a release
 *   store makes it INFLIGHT (gio_qp_put()). gio_qp_publish() then advances `sq_committed` over the
 *   ready entries at the head of the ring and writes the doorbell, holding the *advance role*: one
 *   thread at a time, and a thread that finds it taken hands its request to the holder, which
 *   scans again before it lets go (so no entry is left behind and nobody waits). Doorbell values
 *   only move forward and cover only fully written entries (invariants 1 and 2). A producer whose
 *   predecessor has not put its entries yet returns at once: its entries go out when the ring
 *   reaches them.
 * - **Stalled reservations are cancelled.** If the head of the ring stays unready for
 *   gio_qp::stall_ns (a producer reserved, then stalled or exited before putting), the role holder
 *   cancels the unclaimed entries that were reserved before the stall was seen: each such slot
 *   goes FREE -> CANCELLED (the same CAS the producer would have won), gets a harmless command
 *   (Flush of namespace 0 on an I/O queue, Keep Alive on the admin queue, which the controller
 *   fails without touching data), and the ring moves on. The late producer's gio_qp_put() then
 *   fails with `-ETIME` for those entries; nobody else is held up. An entry claimed (FILLING) is
 *   never cancelled: the only window in which a stalled producer holds the ring is its copy of
 *   one 64-byte entry.
 * - **Results are kept until collected**, by default: a waited command's slot is reused only after
 *   its submitter takes the result, so a submitter that stops collecting holds its slots and the
 *   ring stops at them when it wraps. gio_qp::keep_ns bounds that: a result left uncollected that
 *   long where a reservation needs its slot is dropped, and its submitter is told `-ETIME`
 *   (gio_qp_try_result() checks the ticket's lap). Detached commands are collected by any thread.
 * - **Reap in order.** One thread at a time (a try-lock) consumes CQEs in order: status word with
 *   acquire, phase check, then the rest (invariant 6); SQHD advances `sq_head`; the result goes to
 *   the command's slot; one CQ head doorbell per batch covers only consumed entries (invariant 5).
 *   Any waiter reaps on behalf of all.
 * - **Two ways to collect a result.** By CID: the submitter calls gio_qp_wait() (the default).
 *   Or, for commands put with GIO_CMD_F_DETACHED, through the completion list: the reaper appends
 *   the CID, and any thread takes completions with their 64-bit user data in completion order with
 *   gio_qp_peek_batch() / gio_qp_wait_batch() (liburing's peek-batch shape), so one kernel can
 *   submit and another reap.
 * - **Deadlines.** Every wait takes an absolute deadline (giouring/ring/clock.h) and gives `-ETIME`
 *   when it passes, leaving the ring's indices in gio_qp::last_timeout (invariant 8). A command
 *   whose completion never arrives keeps its slot: once the ring wraps to that slot, reservations
 *   time out rather than reuse its CID; recover by destroying the queue pair
 *   (gio_ctx_qp_destroy() of the host library, which aborts what is outstanding) and creating a
 *   new one.
 *
 * Doorbells are either MMIO registers of a real controller (fence, then a relaxed MMIO store) or
 * shadow words in memory that a software target or a doorbell proxy watches (release store).
 */
#ifndef GIOURING_RING_QP_H
#define GIOURING_RING_QP_H

#include <errno.h>
#include <stdint.h>

#include "check.h"
#include "clock.h"
#include "../config.h"
#include "../nvme/cqe.h"
#include "../nvme/sqe.h"
#include "ordering.h"

GIO_EXTERN_C_BEGIN

/** @name Command slot states: gio_cmd_state() of gio_cmd_slot::state
 *
 * The state word also holds the *lap* of the slot's current use (its index >> log2(sq_depth),
 * truncated): a state change names the lap it is for, so a producer that wakes up late cannot
 * claim the slot's next use, nor a late waiter abandon it.
 * @{ */
#define GIO_CMD_FREE 0u      /**< Reusable (or reserved and not claimed yet). */
#define GIO_CMD_INFLIGHT 1u  /**< Put: ready to publish, or submitted; not reaped yet. */
#define GIO_CMD_DONE 2u      /**< Completed; the result waits to be collected. */
#define GIO_CMD_ABANDONED 3u /**< Its submitter gave up at a deadline; the completion is dropped. */
#define GIO_CMD_FILLING 4u   /**< Claimed by its producer, which is copying the entry in. */
#define GIO_CMD_CANCELLED 5u /**< Reserved and never put in time: a harmless command took its place. */
/** @} */

/** @brief The state (GIO_CMD_*) in a slot's state word. */
#define gio_cmd_state(word) ((word) & 7u)

/** @brief gio_qp_put() flag: the completion goes to the completion list (gio_qp_peek_batch()),
 * not to a waiter by CID. */
#define GIO_CMD_F_DETACHED 1u

/** @brief Default gio_qp::stall_ns: how long the head of the ring may stay reserved and unput
 * before it is cancelled. Long beside a put (a copy of 64 bytes), short beside a command's
 * deadline, and long enough that a host thread preempted between reserve and put is not cut off
 * on a loaded machine. */
#define GIO_QP_STALL_NS_DEFAULT 100000000ull

/** @brief gio_qp::flags: doorbells are MMIO registers of a real controller. */
#define GIO_QP_MMIO_DOORBELLS 1u
/** @brief gio_qp::flags: every party (producers, reapers, the target) runs on one GPU, so the
 * device-side ordering can use GPU scope (giouring/ring/ordering.h, GIO_SCOPE_GPU): several times
 * cheaper than system scope. Never with a CPU-executed target, CPU producers or a real controller. */
#define GIO_QP_GPU_SCOPE 2u
/** @brief gio_qp::flags: one warp owns the queue pair, submitting and reaping with the warp verbs
 * alone (gio_submit_warp(), gio_wait_warp() of giouring/device/verbs.cuh). Its indices and slot
 * states then need no atomics: a warp batch costs one release fence before its doorbell and one
 * before the CQ head doorbell of a reap, where a shared queue pair's costs about ten dependent
 * fences and atomics. Detached commands, the completion list, the single-thread and block verbs
 * and the host's gio_qp_put() are not for owned queue pairs (detached commands are refused with
 * `-EINVAL`). Set it before the first use, as the queue pair's only user. */
#define GIO_QP_OWNED 4u
/* The ordering scope of a queue pair's operations. */
#define GIO__QSC_OF(flags) (((flags) & GIO_QP_GPU_SCOPE) ? GIO_SCOPE_GPU : GIO_SCOPE_SYS)
#define GIO__QSC(qp) GIO__QSC_OF((qp)->flags)

/** @brief Per-command state and result, one per SQ slot (the slot number is the CID). */
struct gio_cmd_slot {
	uint32_t state;     /**< Lap << 3 | GIO_CMD_* (read it with gio_cmd_state()). */
	uint16_t status;    /**< Status field of the completion (no phase), valid in GIO_CMD_DONE. */
	uint16_t flags;     /**< GIO_CMD_F_* given to gio_qp_put(). */
	uint32_t dw0;       /**< Completion Dword 0. */
	uint32_t dw1;       /**< Completion Dword 1. */
	uint64_t user_data; /**< Given to gio_qp_put(); returned with the completion. */
	uint32_t cpl;       /**< Storage of the completion list (a CID); not this slot's own. */
	uint32_t rsvd;      /**< Zero. */
};

/** @brief One completion taken from the completion list (gio_qp_peek_batch()). */
struct gio_cpl {
	uint64_t user_data; /**< As given to gio_qp_put(). */
	uint32_t dw0;       /**< Completion Dword 0. */
	uint32_t dw1;       /**< Completion Dword 1. */
	uint16_t status;    /**< Status field (SC, SCT, CRD, More, DNR); 0 on success. */
	uint16_t cid;       /**< The command identifier (its slot). */
	int32_t res;        /**< 0, or `-EIO` when @ref status reports an error. */
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
	uint32_t sq_shift;          /**< log2(sq_depth): an index's lap is index >> sq_shift. */
	uint32_t lap_mask;          /**< Laps as the state word holds them (29 bits or fewer). */
	uint16_t qid;               /**< Queue identifier (0 for the admin queue). */
	uint16_t flags;             /**< GIO_QP_MMIO_DOORBELLS, GIO_QP_GPU_SCOPE, or 0. */

	uint32_t sq_reserved;  /**< Next SQ index to reserve (CAS). */
	uint32_t sq_committed; /**< Every SQ index below is published (the advance role moves it). */
	uint32_t sq_rung;      /**< Last tail written to the doorbell. */
	uint32_t sq_adv;       /**< Advance role: bit 0 held; the rest counts requests handed over. */
	uint32_t sq_head;      /**< Controller's head (free-running), from CQE SQHD. */
	uint32_t cq_head;      /**< Next CQE to consume (free-running). */
	uint32_t cq_lock;      /**< One reaper at a time. */
	uint32_t stray_cqes;   /**< Completions naming no outstanding command (a controller bug). */
	uint32_t sq_cancelled; /**< Entries cancelled because their reservation stalled. */
	uint32_t dropped_results; /**< Waited results dropped, uncollected, when the ring needed the slot. */
	uint32_t cpl_head;     /**< Completion list: next entry to take (free-running). */
	uint32_t cpl_tail;     /**< Completion list: next entry the reaper appends. */
	uint32_t cpl_lock;     /**< One taker of the completion list at a time. */
	uint64_t stall_ns;     /**< Cancel a reservation unput this long at the head; 0: never. */
	uint64_t keep_ns;      /**< Drop a waited result left uncollected this long where the ring
				    needs its slot; 0 (the default): keep it until it is collected. */
	uint32_t stall_at;     /**< Advance role only: the index where the head was first seen unready. */
	uint32_t stall_end;    /**< Advance role only: the reserved tail then (what a cancel may take). */
	uint64_t stall_since;  /**< Advance role only: when, in the clock of stall_clock. */
	uint32_t stall_clock;  /**< Advance role only: 1 host clock, 2 device clock, 0 no stall seen. */
	uint32_t rsvd;         /**< Zero. */
	struct gio_qp_state last_timeout; /**< Indices when a wait last expired. */
	/** Checked submission (giouring/ring/check.h): every command's data pointer is checked
	 * against registered memory before it is put; NULL (gio_qp_init()'s default): unchecked. */
	struct gio_qp_check *check;
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
 * Pure; call once, before any thread uses the queue pair. gio_qp::stall_ns starts at
 * GIO_QP_STALL_NS_DEFAULT; set it before use to change it.
 */
GIO_HD int gio_qp_init(struct gio_qp *qp, struct gio_sqe *sq, uint32_t sq_depth, struct gio_cqe *cq,
		       uint32_t cq_depth, struct gio_cmd_slot *slots, uint16_t qid, uint32_t *sq_db,
		       uint32_t *cq_db, uint16_t flags)
{
	uint32_t i, shift = 0, sq_shift = 0;
	if (!qp || !sq || !cq || !slots || !sq_db || !cq_db || sq_depth < 2 || sq_depth > 65536u ||
	    (sq_depth & (sq_depth - 1)) || cq_depth < sq_depth || cq_depth > 65536u ||
	    (cq_depth & (cq_depth - 1)))
		return -EINVAL;
	while ((1u << shift) < cq_depth)
		shift++;
	while ((1u << sq_shift) < sq_depth)
		sq_shift++;
	qp->sq = sq;
	qp->cq = cq;
	qp->slots = slots;
	qp->sq_db = sq_db;
	qp->cq_db = cq_db;
	qp->sq_depth = sq_depth;
	qp->cq_depth = cq_depth;
	qp->cq_shift = shift;
	qp->sq_shift = sq_shift;
	/* The lap of index + depth must be the next lap of index, also where the index wraps. */
	qp->lap_mask = 32 - sq_shift < 29 ? (1u << (32 - sq_shift)) - 1u : (1u << 29) - 1u;
	qp->qid = qid;
	qp->flags = flags;
	qp->sq_reserved = qp->sq_committed = qp->sq_rung = qp->sq_adv = 0;
	qp->sq_head = qp->cq_head = qp->cq_lock = qp->stray_cqes = qp->sq_cancelled = 0;
	qp->cpl_head = qp->cpl_tail = qp->cpl_lock = qp->dropped_results = 0;
	qp->stall_ns = GIO_QP_STALL_NS_DEFAULT;
	qp->keep_ns = 0;
	qp->stall_at = qp->stall_end = qp->stall_clock = qp->rsvd = 0;
	qp->stall_since = 0;
	qp->check = 0;
	qp->last_timeout.sq_reserved = qp->last_timeout.sq_committed = qp->last_timeout.sq_rung = 0;
	qp->last_timeout.sq_head = qp->last_timeout.cq_head = 0;
	qp->last_timeout.cid = 0xffffffffu;
	for (i = 0; i < sq_depth; i++) {
		struct gio_cmd_slot *s = &slots[i];
		s->state = GIO_CMD_FREE; /* lap 0: indices below sq_depth */
		s->status = s->flags = 0;
		s->dw0 = s->dw1 = s->cpl = s->rsvd = 0;
		s->user_data = 0;
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

/* The state word of index `idx`'s use of its slot, in state `st`. */
GIO_HD uint32_t gio__qp_word(const struct gio_qp *qp, uint32_t idx, uint32_t st)
{
	return ((idx >> qp->sq_shift) & qp->lap_mask) << 3 | st;
}

/* The state word that frees a slot whose current word is `w`: FREE for the next lap. */
GIO_HD uint32_t gio__qp_freed(const struct gio_qp *qp, uint32_t w)
{
	return (((w >> 3) + 1u) & qp->lap_mask) << 3 | GIO_CMD_FREE;
}

/**
 * @brief Reserves @p n consecutive SQ entries without waiting.
 * @param qp     the queue pair.
 * @param n      entries wanted, 1 to sq_depth - 1.
 * @param first  receives the first reserved index; entry i is `*first + i`.
 * @return 0, `-EBUSY` when the ring has no room for @p n now (slots still in use, or the
 *         controller's head too close), or `-EINVAL` for a bad @p n or an owned queue pair
 *         (GIO_QP_OWNED: only its warp's gio_submit_warp() submits there).
 *
 * Any thread, host or device. Every reserved entry must then be given to gio_qp_put() within
 * gio_qp::stall_ns of reaching the head of the ring, or it is cancelled (its put fails).
 */
GIO_HD int gio_qp_reserve(struct gio_qp *qp, uint32_t n, uint32_t *first)
{
	const uint32_t mask = qp->sq_depth - 1;
	if (n == 0 || n >= qp->sq_depth || (qp->flags & GIO_QP_OWNED))
		return -EINVAL;
	for (;;) {
		const uint32_t r = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_reserved);
		uint32_t i;
		/* Pairs with the reaper's release of sq_head before it frees slots: at most depth - 1
		 * entries between the controller's head and the new tail r + n. */
		if (r + n - gio_load_acquire_in(GIO__QSC(qp), &qp->sq_head) > mask)
			return -EBUSY;
		for (i = 0; i < n; i++) /* pairs with the release that frees a slot */
			if (gio_load_acquire_in(GIO__QSC(qp), &qp->slots[(r + i) & mask].state) !=
			    gio__qp_word(qp, r + i, GIO_CMD_FREE))
				return -EBUSY;
		/* A slot found free stays free: only the reserver of its next index takes it. */
		if (gio_cas_in(GIO__QSC(qp), &qp->sq_reserved, r, r + n)) {
			*first = r;
			return 0;
		}
	}
}

/* Whether state word `w` says index `idx`'s entry is written (the advance role, for an index in
 * [sq_committed, sq_reserved): such a slot was FREE for this lap when reserved, and only its
 * producer or the role holder moves it on before it is published). */
GIO_HD int gio__qp_ready(const struct gio_qp *qp, uint32_t idx, uint32_t w)
{
	const uint32_t st = gio_cmd_state(w);
	return (w & ~7u) == gio__qp_word(qp, idx, 0) &&
	       (st == GIO_CMD_INFLIGHT || st == GIO_CMD_ABANDONED || st == GIO_CMD_CANCELLED);
}

/* The command a cancelled entry carries: one every controller fails without touching data. */
GIO_HD void gio__qp_nop(struct gio_qp *qp, uint32_t slot)
{
	struct gio_sqe e;
	uint32_t i;
	uint32_t *w = (uint32_t *)&e;
	for (i = 0; i < sizeof(e) / 4; i++)
		w[i] = 0;
	/* Flush of namespace 0 is Invalid Namespace on an I/O queue; opcode 0 on the admin queue is
	 * Delete I/O SQ, so the admin queue gets Keep Alive (no data, at worst an invalid opcode). */
	e.opc = qp->qid ? GIO_NVM_OPC_FLUSH : GIO_ADMIN_OPC_KEEP_ALIVE;
	e.cid = (uint16_t)slot;
	qp->sq[slot] = e;
}

/* Claims reserved index `idx` for writing (FREE -> FILLING): 0, or -ETIME when a cancel took it
 * first. Exclusive against the advance role's cancel, which takes the same FREE word. A batch
 * (device warps and blocks) claims only its first entry: a cancel goes in index order and stops
 * at a claimed entry, so it never reaches the rest of a claimed batch. */
GIO_HD int gio__qp_claim(struct gio_qp *qp, uint32_t idx)
{
	if (gio_cas_in(GIO__QSC(qp), &qp->slots[idx & (qp->sq_depth - 1)].state, gio__qp_word(qp, idx, GIO_CMD_FREE),
		       gio__qp_word(qp, idx, GIO_CMD_FILLING)))
		return 0;
	gio_qp_note_timeout(qp, idx & (qp->sq_depth - 1));
	return -ETIME;
}

/* Writes `sqe` into SQ entry `idx` with its CID set to the slot. */
GIO_HD void gio__qp_write_sqe(struct gio_sqe *sq, uint32_t sq_mask, uint32_t idx, const struct gio_sqe *sqe)
{
	const uint32_t slot = idx & sq_mask;
#if defined(__CUDA_ARCH__)
	/* Four 16-byte stores (entries are 64-byte aligned): the struct's 8-byte alignment would
	 * give eight. */
	union {
		struct gio_sqe e;
		uint4 v[4];
	} u;
	u.e = *sqe;
	u.e.cid = (uint16_t)slot;
	uint4 *dst = (uint4 *)&sq[slot];
	dst[0] = u.v[0];
	dst[1] = u.v[1];
	dst[2] = u.v[2];
	dst[3] = u.v[3];
#else
	struct gio_sqe e = *sqe;
	e.cid = (uint16_t)slot;
	sq[slot] = e;
#endif
}

/* gio__qp_write() with the queue pair's fields given (sq, slots, check, sq_depth - 1): a warp
 * that holds them in registers writes its entries without loading them again from global memory,
 * where every acquire of its polls made those loads go to L2. qp itself is read only to refuse. */
GIO_HD uint32_t gio__qp_write_at(struct gio_qp *qp, struct gio_sqe *sq, struct gio_cmd_slot *slots,
				 struct gio_qp_check *check, uint32_t sq_mask, uint32_t idx,
				 const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags, int *rc)
{
	const uint32_t slot = idx & sq_mask;
	struct gio_cmd_slot *s = &slots[slot];
	*rc = flags & ~GIO_CMD_F_DETACHED ? -EINVAL : check ? gio_qp_check_sqe(check, sqe) : 0;
	if (*rc) {
		gio__qp_nop(qp, slot);
		return GIO_CMD_CANCELLED;
	}
	gio__qp_write_sqe(sq, sq_mask, idx, sqe);
	s->user_data = user_data;
	s->flags = (uint16_t)flags;
	return GIO_CMD_INFLIGHT;
}

/* Writes claimed index `idx`: the command with its CID set to the slot, its user data and
 * flags, or the harmless command for unknown flags or a data pointer a checked queue pair refuses
 * (the entry must carry something, or the ring would stall at it). Returns the state its ready
 * mark is to give, INFLIGHT or CANCELLED, and in *rc the put's result: 0, -EINVAL (flags) or
 * -EFAULT (check). */
GIO_HD uint32_t gio__qp_write(struct gio_qp *qp, uint32_t idx, const struct gio_sqe *sqe, uint64_t user_data,
			      uint32_t flags, int *rc)
{
	return gio__qp_write_at(qp, qp->sq, qp->slots, qp->check, qp->sq_depth - 1, idx, sqe, user_data, flags, rc);
}

/**
 * @brief Writes a reserved entry: the command, its user data, and how its completion is taken.
 * @param qp         the queue pair.
 * @param idx        an index of a reservation from gio_qp_reserve(), each put exactly once.
 * @param sqe        the command; its CID is set here to the slot (`idx & (sq_depth - 1)`).
 * @param user_data  returned with the completion (gio_qp_peek_batch()); any value.
 * @param flags      0 (the submitter collects the result by CID with gio_qp_wait()) or
 *                   GIO_CMD_F_DETACHED (the completion goes to the completion list).
 * @return 0, `-ETIME` when the entry was cancelled because the reservation sat unput at the
 *         head of the ring for gio_qp::stall_ns (the command is not submitted;
 *         gio_qp::last_timeout shows the ring), `-EINVAL` for an unknown flag, or `-EFAULT` on a
 *         checked queue pair (gio_qp::check) for a data pointer, PRP list or SGL segment outside
 *         the registered regions (gio_qp_check::fault_addr names it). Refused entries are
 *         cancelled: a harmless command takes their place, so the ring does not stall.
 *
 * Any thread, host or device. The entry is ready once this returns; gio_qp_publish() sends it
 * (with every ready entry before it).
 */
GIO_HD int gio_qp_put(struct gio_qp *qp, uint32_t idx, const struct gio_sqe *sqe, uint64_t user_data, uint32_t flags)
{
	uint32_t st;
	int rc;
	if (gio__qp_claim(qp, idx))
		return -ETIME;
	st = gio__qp_write(qp, idx, sqe, user_data, flags, &rc);
	/* The ready mark. Release: the entry before it (pairs with the advance role's acquire). */
	gio_store_release_in(GIO__QSC(qp), &qp->slots[idx & (qp->sq_depth - 1)].state, gio__qp_word(qp, idx, st));
	return rc;
}

/* Writes the SQ tail doorbell for committed tail `c` (the advance role only). */
GIO_HD void gio__qp_doorbell(struct gio_qp *qp, uint32_t c)
{
	if (qp->flags & GIO_QP_MMIO_DOORBELLS) {
		gio_fence_release_in(GIO__QSC(qp)); /* SQE stores before the MMIO doorbell (controller fetch) */
		gio_mmio_write32((volatile uint32_t *)qp->sq_db, c & (qp->sq_depth - 1));
	} else {
		/* Pairs with the target's acquire load of the shadow tail. */
		gio_store_release_in(GIO__QSC(qp), qp->sq_db, c & (qp->sq_depth - 1));
	}
	gio_store_release_in(GIO__QSC(qp), &qp->sq_rung, c);
}

/* The GPU's gio__qp_publish_tail() with the queue pair's flags, SQ doorbell and sq_depth - 1
 * given (a warp that holds them in registers; the host keeps release stores, below). */
GIO_HD void gio__qp_publish_tail_at(struct gio_qp *qp, uint16_t qflags, uint32_t *sq_db, uint32_t sq_mask, uint32_t c)
{
	gio_fence_release_in(GIO__QSC_OF(qflags));
	gio_store_relaxed(&qp->sq_committed, c);
	if (qflags & GIO_QP_MMIO_DOORBELLS)
		gio_mmio_write32((volatile uint32_t *)sq_db, c & sq_mask);
	else /* pairs with the target's acquire load of the shadow tail */
		gio_store_relaxed(sq_db, c & sq_mask);
	gio_store_relaxed(&qp->sq_rung, c);
}

/* Publishes committed tail `c` (the advance role only): sq_committed, the SQ tail doorbell and
 * sq_rung, each ordered after the entries before c (and any cancel's command). On the GPU one
 * release fence serves the three stores (a fence followed by strong stores is a release pattern
 * for each), where a release store apiece cost a fence each: measured on the H200 (bench_gpu_cmdrate
 * --stages), every fence or atomic of a warp batch costs about 1.1 us at GPU scope. The host keeps
 * release stores, which cost nothing on x86-64 and which ThreadSanitizer understands. */
GIO_HD void gio__qp_publish_tail(struct gio_qp *qp, uint32_t c)
{
#if defined(__CUDA_ARCH__)
	gio__qp_publish_tail_at(qp, qp->flags, qp->sq_db, qp->sq_depth - 1, c);
#else
	gio_store_release_in(GIO__QSC(qp), &qp->sq_committed, c);
	gio__qp_doorbell(qp, c);
#endif
}

/* Where the head of the ring is unready at index c (< reserved r): arms the stall clock, or,
 * once the head has stayed there for stall_ns, cancels the unclaimed entries reserved before the
 * stall was seen. Returns the new head of the ready prefix. The advance role only. */
GIO_HD uint32_t gio__qp_stalled(struct gio_qp *qp, uint32_t c, uint32_t r)
{
	const uint32_t mask = qp->sq_depth - 1;
#if defined(__CUDA_ARCH__)
	const uint32_t clk = 2; /* %globaltimer and CLOCK_MONOTONIC are unrelated */
#else
	const uint32_t clk = 1;
#endif
	const uint64_t now = gio_now_ns();
	if (qp->stall_ns == 0)
		return c;
	if (qp->stall_clock != clk || qp->stall_at != c) {
		qp->stall_at = c;
		qp->stall_end = r;
		qp->stall_since = now;
		qp->stall_clock = clk;
		return c;
	}
	if (now - qp->stall_since < qp->stall_ns)
		return c;
	for (; c != qp->stall_end; c++) {
		uint32_t *st = &qp->slots[c & mask].state;
		if (gio_cas_in(GIO__QSC(qp), st, gio__qp_word(qp, c, GIO_CMD_FREE), gio__qp_word(qp, c, GIO_CMD_CANCELLED))) {
			gio__qp_nop(qp, c & mask);
			gio_store_relaxed(&qp->sq_cancelled, gio_load_relaxed(&qp->sq_cancelled) + 1);
		} else if (!gio__qp_ready(qp, c, gio_load_acquire_in(GIO__QSC(qp), st))) {
			break; /* claimed: its producer is copying it in now */
		}
	}
	qp->stall_clock = 0;
	/* Entries put meanwhile beyond the cancelled ones. */
	while (c != r && gio__qp_ready(qp, c, gio_load_acquire_in(GIO__QSC(qp), &qp->slots[c & mask].state)))
		c++;
	return c;
}

/* Takes the advance role (1, `*w` receives the role word as taken), or hands this thread's
 * request to its holder (0), who will scan again before it lets go. Where the role is free (the
 * common case) one atomic or takes it: a load and a CAS were two dependent round trips, about
 * 1.1 us each in a GPU warp batch (bench_gpu_cmdrate --stages). Where it is held, the request is
 * an add of 2, which makes the holder's drop fail; if the holder let go between the or and the
 * add, the add landed on a free word (harmless: the count is only a change marker) and the role
 * is tried again. Acquire (the role): the previous holder's work before ours. Release (the
 * request): this thread's entries before the holder's failed drop, which acquires. */
GIO_HD int gio__qp_role_take(struct gio_qp *qp, uint32_t *w)
{
	for (;;) {
		uint32_t v = gio_fetch_or_in(GIO__QSC(qp), &qp->sq_adv, 1u);
		if (!(v & 1u)) {
			*w = v | 1u;
			return 1;
		}
		v = gio_fetch_add_in(GIO__QSC(qp), &qp->sq_adv, 2u);
		if (v & 1u) {
			*w = v + 2u;
			return 0;
		}
	}
}

/* Lets go of the advance role taken as `*w` (1), unless requests came in since (0: `*w` is the
 * new word, scan again). */
GIO_HD int gio__qp_role_drop(struct gio_qp *qp, uint32_t *w)
{
	if (gio_cas_in(GIO__QSC(qp), &qp->sq_adv, *w, *w & ~1u))
		return 1;
	*w = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_adv);
	return 0;
}

/* One pass of the advance role: the ready prefix, a stall check, the doorbell. */
GIO_HD void gio__qp_advance_once(struct gio_qp *qp)
{
	const uint32_t mask = qp->sq_depth - 1;
	const uint32_t r = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_reserved);
	const uint32_t c0 = gio_load_relaxed(&qp->sq_committed);
	uint32_t c = c0;
	while (c != r && gio__qp_ready(qp, c, gio_load_acquire_in(GIO__QSC(qp), &qp->slots[c & mask].state)))
		c++;
	if (c != r)
		c = gio__qp_stalled(qp, c, r);
	if (c != c0) /* the entries (and any cancel's command) before the new committed index */
		gio__qp_publish_tail(qp, c);
}

/**
 * @brief Publishes the ready entries at the head of the ring and rings the SQ doorbell.
 * @param qp  the queue pair.
 *
 * Any thread, host or device; never waits on another producer. Call it after gio_qp_put() of a
 * batch: one doorbell write covers every entry ready at the head, whoever put it. If another
 * thread holds the advance role, the request goes to it and this returns at once. Entries behind
 * one not yet put go out when that one is put or cancelled (waiters call this too, so a stall
 * is cancelled while anyone waits).
 */
GIO_HD void gio_qp_publish(struct gio_qp *qp)
{
	uint32_t w;
	if (!gio__qp_role_take(qp, &w))
		return;
	do
		gio__qp_advance_once(qp);
	while (!gio__qp_role_drop(qp, &w));
}

/* Whether entries are reserved beyond the published tail (a cheap check before publishing on a
 * waiter's behalf). */
GIO_HD int gio__qp_unpublished(const struct gio_qp *qp)
{
	return gio_load_relaxed(&qp->sq_committed) != gio_load_relaxed(&qp->sq_reserved);
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
 * load of its Dword 3 `dw3` (CID and status word) that matched the phase. Returns 1 when the
 * command is detached: the caller appends its CID to the completion list. Several lanes of a warp
 * reaper may run it at once, for different CQEs. */
GIO_HD int gio__qp_take_cqe(struct gio_qp *qp, const struct gio_cqe *cqe, uint32_t dw3)
{
	const uint32_t cid = GIO_GET(dw3, CQE_DW3_CID);
	const uint16_t st = (uint16_t)GIO_GET(dw3, CQE_DW3_STATUS);
	if (cid > qp->sq_depth - 1) {
		gio_fetch_add_in(GIO__QSC(qp), &qp->stray_cqes, 1);
	} else {
		struct gio_cmd_slot *s = &qp->slots[cid];
		const uint32_t w = gio_load_acquire_in(GIO__QSC(qp), &s->state);
		const uint32_t state = gio_cmd_state(w);
		if (state == GIO_CMD_INFLIGHT) {
			s->status = (uint16_t)(st >> 1);
			s->dw0 = cqe->dw0;
			s->dw1 = cqe->dw1;
			if (s->flags & GIO_CMD_F_DETACHED) {
				/* Nobody waits on it (so nobody abandons it): the completion list's release
				 * of its tail publishes the result. */
				gio_store_relaxed(&s->state, (w & ~7u) | GIO_CMD_DONE);
				return 1;
			}
			/* Release: the result before DONE (pairs with the waiter's acquire). If the
			 * waiter abandoned it meanwhile, the late result is dropped. */
			if (!gio_cas_in(GIO__QSC(qp), &s->state, w, (w & ~7u) | GIO_CMD_DONE))
				gio_store_release_in(GIO__QSC(qp), &s->state, gio__qp_freed(qp, w));
		} else if (state == GIO_CMD_ABANDONED || state == GIO_CMD_CANCELLED) {
			gio_store_release_in(GIO__QSC(qp), &s->state, gio__qp_freed(qp, w));
		} else {
			gio_fetch_add_in(GIO__QSC(qp), &qp->stray_cqes, 1);
		}
	}
	return 0;
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
 * Any thread, host or device. Results go to the commands' slots (and detached commands' CIDs to
 * the completion list); completions of abandoned or cancelled commands are dropped and their
 * slots freed. One CQ head doorbell covers the batch. (giouring/device/verbs.cuh has the warp
 * form, gio_qp_reap_warp().)
 */
GIO_HD uint32_t gio_qp_reap(struct gio_qp *qp)
{
	const uint32_t cq_mask = qp->cq_depth - 1, sq_mask = qp->sq_depth - 1;
	uint32_t head, tail, tail0, n = 0;
	if (!gio_cas_in(GIO__QSC(qp), &qp->cq_lock, 0, 1))
		return 0;
	head = gio_load_relaxed(&qp->cq_head);
	tail = tail0 = gio_load_relaxed(&qp->cpl_tail);
	for (;;) {
		struct gio_cqe *cqe = &qp->cq[head & cq_mask];
		const uint32_t phase = 1u ^ ((head >> qp->cq_shift) & 1u);
		/* Acquire: the CQE's other fields, and the data it completes, are read after this. Pairs
		 * with the controller's write of Dword 3 (CID and status word) last. */
		const uint32_t dw3 = gio_load_acquire_in(GIO__QSC(qp), gio_cqe_dw3(cqe));
		if (GIO_GET(dw3, CQE_DW3_STATUS) % 2u != phase)
			break;
		gio__qp_sq_head_to(qp, cqe->sqhd);
		if (gio__qp_take_cqe(qp, cqe, dw3))
			qp->slots[tail++ & sq_mask].cpl = (uint16_t)GIO_GET(dw3, CQE_DW3_CID);
		head++;
		n++;
	}
	/* Release: the detached results and list entries before the new list tail (pairs with the
	 * taker's acquire). At most sq_depth entries are listed: one per slot in DONE. Only when
	 * something was listed: waited commands pay nothing for the list. */
	if (tail != tail0)
		gio_store_release_in(GIO__QSC(qp), &qp->cpl_tail, tail);
	gio__qp_reap_end(qp, head, n);
	return n;
}

/**
 * @brief Takes the result of a completed command and frees its slot, without waiting.
 * @param qp      the queue pair.
 * @param ticket  the command's ticket: the index it was reserved at (gio_qp_reserve() plus its
 *                offset in the reservation; gio_submit() and the other device verbs return it).
 *                Its CID is `ticket & (sq_depth - 1)`; the rest names the lap, so a ticket whose
 *                slot has moved on is told apart from the slot's next command.
 * @param status  receives the status field (SC, SCT, CRD, More, DNR), or NULL.
 * @param dw0     receives completion Dword 0, or NULL.
 * @return 0 when the command succeeded, `-EIO` when it completed with an NVMe error (see
 *         @p status), `-EAGAIN` when it has not completed yet, `-EINVAL` for a detached command
 *         (its completion goes to the completion list), `-ETIME` when the result is gone: it was
 *         left uncollected for gio_qp::keep_ns while the ring needed its slot, and dropped
 *         (gio_qp::dropped_results counts these), or the ticket names no command of this lap.
 *
 * Any thread, host or device; only the command's submitter.
 */
GIO_HD int gio_qp_try_result(struct gio_qp *qp, uint32_t ticket, uint16_t *status, uint32_t *dw0)
{
	struct gio_cmd_slot *s = &qp->slots[ticket & (qp->sq_depth - 1)];
	/* Pairs with the reaper's release of DONE: the result fields are complete. */
	const uint32_t w = gio_load_acquire_in(GIO__QSC(qp), &s->state);
	uint16_t st;
	if ((w & ~7u) != gio__qp_word(qp, ticket, 0)) {
		gio_qp_note_timeout(qp, ticket & (qp->sq_depth - 1));
		return -ETIME;
	}
	if (gio_cmd_state(w) != GIO_CMD_DONE)
		return -EAGAIN;
	if (s->flags & GIO_CMD_F_DETACHED)
		return -EINVAL;
	st = s->status;
	if (status)
		*status = st;
	if (dw0)
		*dw0 = s->dw0;
	gio_store_release_in(GIO__QSC(qp), &s->state, gio__qp_freed(qp, w));
	return (st & 0x7ffu) ? -EIO : 0;
}

/**
 * @brief Waits for a command's completion, reaping on behalf of all, up to a deadline.
 * @param qp        the queue pair.
 * @param ticket    the command's ticket (see gio_qp_try_result()).
 * @param deadline  absolute deadline (giouring/ring/clock.h).
 * @param status    receives the status field, or NULL.
 * @param dw0       receives completion Dword 0, or NULL.
 * @return 0, `-EIO` (NVMe error, see @p status), `-EINVAL` (a detached command), or `-ETIME` at
 *         the deadline: the command is then abandoned, its slot stays quarantined until its
 *         completion arrives, and gio_qp::last_timeout holds the ring's indices (also when the
 *         result was dropped, as gio_qp_try_result() says).
 *
 * Any thread, host or device; only the command's submitter. While nothing arrives it also
 * publishes entries left unpublished (gio_qp_publish()), so a stalled reservation ahead of the
 * command is cancelled after gio_qp::stall_ns rather than holding it up.
 */
GIO_HD int gio_qp_wait(struct gio_qp *qp, uint32_t ticket, uint64_t deadline, uint16_t *status, uint32_t *dw0)
{
	const uint32_t cid = ticket & (qp->sq_depth - 1);
	struct gio_cmd_slot *s = &qp->slots[cid];
	uint32_t spins = 0;
	for (;;) {
		int rc = gio_qp_try_result(qp, ticket, status, dw0);
		if (rc != -EAGAIN)
			return rc;
		if (gio_qp_reap(qp))
			continue;
		/* Not on the fast path: entries are published by their producers; this is for a stall. */
		if (spins >= 16 && gio__qp_unpublished(qp))
			gio_qp_publish(qp);
		if (gio_deadline_passed(deadline)) {
			const uint32_t w = gio_load_acquire_in(GIO__QSC(qp), &s->state);
			if (w == gio__qp_word(qp, ticket, GIO_CMD_INFLIGHT) &&
			    gio_cas_in(GIO__QSC(qp), &s->state, w, (w & ~7u) | GIO_CMD_ABANDONED)) {
				gio_qp_note_timeout(qp, cid);
				return -ETIME;
			}
			if (gio_cmd_state(gio_load_acquire_in(GIO__QSC(qp), &s->state)) == GIO_CMD_DONE)
				continue; /* it completed just now: take the result */
			/* Not in flight (already abandoned, or never submitted): the deadline still holds. */
			gio_qp_note_timeout(qp, cid);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

/* A reservation of n entries at the ring's tail is held up by a waited command's result that its
 * submitter has not collected: after that has lasted keep_ns (on the caller's own clock, from
 * `*since`, while the same slot `*at` blocks), the result is dropped and the slot freed, so a
 * submitter that stopped collecting costs only its own results. Off by default (keep_ns 0): a
 * slow but live collector must not lose its result to a fixed timeout it did not choose.
 * Detached results are the completion list's and are never dropped. Returns 1 when a slot was
 * freed. */
GIO_HD int gio__qp_drop_stale(struct gio_qp *qp, uint32_t n, uint32_t *at, uint64_t *since)
{
	const uint32_t r = gio_load_acquire_in(GIO__QSC(qp), &qp->sq_reserved), mask = qp->sq_depth - 1;
	uint32_t i;
	if (qp->keep_ns == 0)
		return 0;
	for (i = 0; i < n; i++) {
		struct gio_cmd_slot *s = &qp->slots[(r + i) & mask];
		const uint32_t w = gio_load_acquire_in(GIO__QSC(qp), &s->state);
		if (w != gio__qp_word(qp, r + i - qp->sq_depth, GIO_CMD_DONE) || (s->flags & GIO_CMD_F_DETACHED))
			continue;
		if (*at != r + i) {
			*at = r + i;
			*since = gio_now_ns();
			return 0;
		}
		if (gio_now_ns() - *since < qp->keep_ns)
			return 0;
		if (!gio_cas_in(GIO__QSC(qp), &s->state, w, gio__qp_freed(qp, w)))
			return 0;
		gio_fetch_add_in(GIO__QSC(qp), &qp->dropped_results, 1);
		return 1;
	}
	*at = 0xffffffffu;
	return 0;
}

/**
 * @brief Reserves @p n entries, waiting (and reaping) while the ring is full, up to a deadline.
 * @param qp        the queue pair.
 * @param n         entries wanted, 1 to sq_depth - 1.
 * @param deadline  absolute deadline.
 * @param first     receives the first reserved index.
 * @return 0, `-EINVAL` for a bad @p n, or `-ETIME` when no room appeared by the deadline.
 *
 * Any thread, host or device. While the ring is full it reaps, publishes what is unpublished,
 * and, where gio_qp::keep_ns is set, drops a waited command's result that has blocked the
 * reservation, uncollected, that long (its submitter then gets `-ETIME`; see
 * gio_qp_try_result()).
 */
GIO_HD int gio_qp_reserve_wait(struct gio_qp *qp, uint32_t n, uint64_t deadline, uint32_t *first)
{
	uint32_t spins = 0, at = 0xffffffffu;
	uint64_t since = 0;
	for (;;) {
		int rc = gio_qp_reserve(qp, n, first);
		if (rc != -EBUSY)
			return rc;
		if (gio_qp_reap(qp))
			continue;
		if (gio__qp_unpublished(qp))
			gio_qp_publish(qp);
		if (gio__qp_drop_stale(qp, n, &at, &since))
			continue;
		if (gio_deadline_passed(deadline)) {
			gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

/* Takes list entry `h` (the taker, after its acquire of the list's tail): the completion to
 * `c`, and the slot freed. */
GIO_HD void gio__qp_take_listed(struct gio_qp *qp, uint32_t h, struct gio_cpl *c)
{
	const uint32_t mask = qp->sq_depth - 1, cid = qp->slots[h & mask].cpl;
	struct gio_cmd_slot *s = &qp->slots[cid & mask];
	const uint32_t w = gio_load_relaxed(&s->state); /* DONE: the list's acquire covers it */
	c->user_data = s->user_data;
	c->dw0 = s->dw0;
	c->dw1 = s->dw1;
	c->status = s->status;
	c->cid = (uint16_t)cid;
	c->res = (s->status & 0x7ffu) ? -EIO : 0;
	/* Release: this slot's fields are read before a new reservation may refill it. */
	gio_store_release_in(GIO__QSC(qp), &s->state, gio__qp_freed(qp, w));
}

/**
 * @brief Takes completions of detached commands from the completion list, without waiting.
 * @param qp   the queue pair.
 * @param out  receives up to @p max completions, in the order they were reaped.
 * @param max  room in @p out.
 * @return completions taken (0 when none, or when another thread is taking them now).
 *
 * Any thread, host or device (one taker at a time: a try-lock). Reaps first what has arrived;
 * when it finds nothing, publishes entries left unpublished, so a thread that only takes
 * completions keeps a stalled ring moving. Each completion taken frees its slot.
 */
GIO_HD uint32_t gio_qp_peek_batch(struct gio_qp *qp, struct gio_cpl *out, uint32_t max)
{
	uint32_t h, t, n = 0;
	gio_qp_reap(qp);
	if (max && gio_cas_in(GIO__QSC(qp), &qp->cpl_lock, 0, 1)) {
		h = gio_load_relaxed(&qp->cpl_head);
		t = gio_load_acquire_in(GIO__QSC(qp), &qp->cpl_tail); /* pairs with the reaper's release */
		for (; h != t && n < max; h++, n++)
			gio__qp_take_listed(qp, h, &out[n]);
		gio_store_relaxed(&qp->cpl_head, h);
		gio_store_release_in(GIO__QSC(qp), &qp->cpl_lock, 0);
	}
	/* Not on the fast path: entries are published by their producers; this is for a stall. */
	if (n == 0 && gio__qp_unpublished(qp))
		gio_qp_publish(qp);
	return n;
}

/**
 * @brief Waits until at least one detached completion is there, then takes up to @p max.
 * @param qp        the queue pair.
 * @param out       receives the completions.
 * @param max       room in @p out, at least 1.
 * @param deadline  absolute deadline.
 * @return completions taken (1 to @p max), `-EINVAL` for @p max 0, or `-ETIME` when none came by
 *         the deadline (gio_qp::last_timeout holds the ring's indices).
 *
 * Any thread, host or device.
 */
GIO_HD int gio_qp_wait_batch(struct gio_qp *qp, struct gio_cpl *out, uint32_t max, uint64_t deadline)
{
	uint32_t spins = 0;
	if (max == 0)
		return -EINVAL;
	for (;;) {
		const uint32_t n = gio_qp_peek_batch(qp, out, max);
		if (n)
			return (int)n;
		if (gio_deadline_passed(deadline)) {
			gio_qp_note_timeout(qp, 0xffffffffu);
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_QP_H */
