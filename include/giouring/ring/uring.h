/**
 * @file giouring/ring/uring.h
 * @brief gio_uring: rings of IOCBs, each a batch of up to 2048 I/O contexts, turned into NVMe
 * commands across queue pairs (Tutti's software-level ring; docs/design.md, "Rings").
 *
 * - An **IOCTX** names one object transfer: its data pointer (an SGL descriptor: a Data Block for
 *   one contiguous buffer, or a Segment / Last Segment descriptor to a chain built with
 *   gio_sgl_build()), its byte offset and length on the device, its direction, and (written
 *   back) its result.
 * - An **IOCB** is a batch of IOCTXs issued together, with per-IOCB completion: how many are
 *   done, how many failed, the first error and its NVMe status.
 * - A **gio_uring** is a single-producer, single-consumer ring of IOCB pointers: the producer (the
 *   CPU, or a compute kernel) fills an IOCB and submits it; the consumer (an I/O engine: a CPU
 *   thread calling gio_uring_process(), or an I/O kernel running gio_iocb_issue_block() of
 *   giouring/device/verbs.cuh) runs it; anyone
 *   waits for it with gio_iocb_wait(), bounded by a deadline.
 *
 * gio_iocb_run() is the engine's core: it issues the IOCTXs in batches (one doorbell per batch
 * per queue pair), keeps issuing as completions free slots, and writes every IOCTX's result.
 */
#ifndef GIOURING_RING_URING_H
#define GIOURING_RING_URING_H

#include <errno.h>
#include <stdint.h>

#include "clock.h"
#include "../config.h"
#include "../nvme/sgl.h"
#include "ordering.h"
#include "../proto/prep.h"
#include "qp.h"

GIO_EXTERN_C_BEGIN

/** @brief Most IOCTXs in one IOCB: one per thread of the smallest schedulable SM group on Hopper. */
#define GIO_IOCB_MAX_CTX 2048u

/** @name IOCTX directions
 * @{ */
#define GIO_IOCTX_READ 0u  /**< Device -> memory (restore). */
#define GIO_IOCTX_WRITE 1u /**< Memory -> device (store). */
/** @} */

/** @name IOCB states (gio_iocb::state)
 * @{ */
#define GIO_IOCB_IDLE 0u      /**< Being filled, or finished and collected. */
#define GIO_IOCB_SUBMITTED 1u /**< In a ring, not yet taken by the engine. */
#define GIO_IOCB_RUNNING 2u   /**< Its commands are being issued and completed. */
#define GIO_IOCB_DONE 3u      /**< Every IOCTX has its result. */
/** @} */

/** @brief One object transfer. */
struct gio_ioctx {
	struct gio_sgl_desc dptr; /**< Data pointer: SGL Data Block, or (Last) Segment to a chain. */
	uint64_t offset;          /**< Byte offset on the device; a multiple of the block size. */
	uint32_t len;             /**< Bytes; a multiple of the block size, at most 65536 blocks. */
	uint8_t dir;              /**< GIO_IOCTX_READ or GIO_IOCTX_WRITE. */
	uint8_t rsvd;             /**< Zero. */
	uint16_t status;          /**< Result: the NVMe status field (0 on success). */
	int32_t result;           /**< Result: 0, `-EIO` (see status), `-ETIME`, or `-EINVAL`. */
	uint16_t qp;              /**< Engine use: index of the queue pair it went to. */
	uint16_t cid;             /**< Engine use: its command identifier there. */
	uint32_t ticket;          /**< Engine use: its ticket there (gio_qp_try_result()). */
	uint32_t rsvd2;           /**< Zero. */
};

/** @brief A batch of IOCTXs with per-batch completion. */
struct gio_iocb {
	struct gio_ioctx *ctx;   /**< The IOCTXs, `nctx` of them. */
	uint32_t nctx;           /**< 1 to GIO_IOCB_MAX_CTX. */
	uint32_t state;          /**< GIO_IOCB_*. */
	uint32_t done;           /**< IOCTXs with a result. */
	uint32_t failed;         /**< Of which failed. */
	uint32_t first_error;    /**< Index of the first failed IOCTX (in completion order), or 0xffffffff. */
	int32_t first_result;    /**< Its result. */
	uint16_t first_status;   /**< Its NVMe status field. */
	uint16_t rsvd;           /**< Zero. */
	uint64_t timeout_ns;     /**< Deadline for the whole batch, counted from when the engine takes it;
				      non-zero (a zero timeout is refused with `-EINVAL`, not taken as
				      "expire at once"). */
};

/** @brief Where an IOCB's commands go: queue pairs of one namespace. */
struct gio_iocb_target {
	struct gio_qp **qps; /**< Queue pairs to spread the commands over. */
	uint32_t nqps;       /**< How many, at least 1. */
	uint32_t nsid;       /**< Namespace of every command. */
	uint32_t lba_shift;  /**< log2 of its block size. */
	uint32_t batch;      /**< IOCTXs per doorbell on one queue pair (0: 32). */
};

/**
 * @brief Encodes one IOCTX as an NVMe Read or Write with an SGL data pointer.
 * @param x          the IOCTX.
 * @param nsid       namespace.
 * @param lba_shift  log2 of the block size.
 * @param sqe        receives the command (CID left for the ring).
 * @return 0, or `-EINVAL` when offset or length is not a whole number of blocks, the length is 0
 *         or above 65536 blocks, or the direction is unknown.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_ioctx_to_sqe(const struct gio_ioctx *x, uint32_t nsid, uint32_t lba_shift, struct gio_sqe *sqe)
{
	const uint64_t mask = ((uint64_t)1 << lba_shift) - 1;
	int rc;
	if ((x->offset & mask) || (x->len & mask) || x->len == 0 || x->dir > GIO_IOCTX_WRITE)
		return -EINVAL;
	rc = gio_prep_rw(sqe, x->dir == GIO_IOCTX_WRITE ? GIO_NVM_OPC_WRITE : GIO_NVM_OPC_READ, nsid,
			 x->offset >> lba_shift, x->len >> lba_shift);
	if (rc)
		return rc;
	sqe->dptr.sgl = x->dptr;
	gio_sqe_set_psdt(sqe, GIO_PSDT_SGL_MPTR);
	return 0;
}

/* Records an IOCTX's result and the IOCB's counters (the engine's thread only). */
GIO_HD void gio__iocb_result(struct gio_iocb *b, uint32_t i, int32_t rc, uint16_t status)
{
	struct gio_ioctx *x = &b->ctx[i];
	x->result = rc;
	x->status = status;
	if (rc && b->failed++ == 0) {
		b->first_error = i;
		b->first_result = rc;
		b->first_status = status;
	}
	b->done++;
}

/**
 * @brief Runs an IOCB to completion: issues every IOCTX and collects every result.
 * @param b    the IOCB (state set to GIO_IOCB_RUNNING, then GIO_IOCB_DONE).
 * @param tg   the queue pairs and namespace.
 * @return 0 when every IOCTX succeeded; else the first error's result (`-EIO` with its NVMe status
 *         in the IOCB, `-ETIME` at the deadline, `-EINVAL` for a malformed IOCTX or IOCB: no
 *         IOCTX, more than GIO_IOCB_MAX_CTX, no queue pair, or a zero timeout_ns).
 *
 * Any thread, host or device; one engine per IOCB. IOCTXs go to queue pairs in runs of
 * `tg->batch`, one doorbell per run; when a ring is full the engine collects the oldest
 * outstanding results, then issues more. On a deadline every IOCTX not yet complete gets `-ETIME`
 * (its command is abandoned; see giouring/ring/qp.h).
 */
GIO_HD int gio_iocb_run(struct gio_iocb *b, const struct gio_iocb_target *tg)
{
	const uint32_t n = b->nctx, batch = tg->batch ? tg->batch : 32u;
	const uint64_t deadline = gio_deadline_in(b->timeout_ns);
	uint32_t issued = 0, collected = 0;

	b->done = b->failed = 0;
	b->first_error = 0xffffffffu;
	b->first_result = 0;
	b->first_status = 0;
	gio_store_release(&b->state, GIO_IOCB_RUNNING);
	if (n == 0 || n > GIO_IOCB_MAX_CTX || tg->nqps == 0 || b->timeout_ns == 0) {
		b->first_result = -EINVAL;
		gio_store_release(&b->state, GIO_IOCB_DONE);
		return -EINVAL;
	}
	while (collected < n) {
		/* Issue: a run of IOCTXs to one queue pair, one doorbell for the run. */
		while (issued < n) {
			const uint32_t q = (issued / batch) % tg->nqps;
			struct gio_qp *qp = tg->qps[q];
			uint32_t k = batch - issued % batch, first = 0, j;
			if (k > n - issued)
				k = n - issued;
			if (k > qp->sq_depth - 1)
				k = qp->sq_depth - 1;
			if (gio_qp_reserve(qp, k, &first) != 0) {
				if (collected < issued)
					break; /* ring full: collect some of ours first */
				/* Nothing of ours outstanding: wait for room (other users' commands). */
				if (gio_qp_reserve_wait(qp, k, deadline, &first) != 0) {
					for (j = issued; j < n; j++)
						b->ctx[j].result = -ETIME;
					issued = n;
					break;
				}
			}
			for (j = 0; j < k; j++) {
				struct gio_ioctx *x = &b->ctx[issued + j];
				struct gio_sqe sqe;
				x->qp = (uint16_t)q;
				x->cid = (uint16_t)((first + j) & (qp->sq_depth - 1));
				x->ticket = first + j;
				x->result = 1; /* in flight */
				if (gio_ioctx_to_sqe(x, tg->nsid, tg->lba_shift, &sqe) != 0) {
					/* The entry must still carry a command: send a Flush in its place and
					 * report the IOCTX as invalid when its completion comes. */
					gio_prep_cmd(&sqe, GIO_NVM_OPC_FLUSH, tg->nsid);
					x->result = -EINVAL;
				}
				if (gio_qp_put(qp, first + j, &sqe, issued + j, 0) != 0)
					x->result = -ETIME; /* cancelled as stalled: not submitted */
			}
			gio_qp_publish(qp);
			issued += k;
		}
		/* Collect the oldest outstanding IOCTX (completions arrive per queue pair in order). */
		{
			struct gio_ioctx *x = &b->ctx[collected];
			int rc;
			uint16_t st = 0;
			if (x->result == -ETIME) {
				gio__iocb_result(b, collected, -ETIME, 0);
			} else {
				rc = gio_qp_wait(tg->qps[x->qp], x->ticket, deadline, &st, (uint32_t *)0);
				if (x->result == -EINVAL && rc != -ETIME)
					rc = -EINVAL;
				gio__iocb_result(b, collected, rc, st);
			}
			collected++;
		}
	}
	/* Release: every IOCTX result before DONE (pairs with gio_iocb_wait's acquire). */
	gio_store_release(&b->state, GIO_IOCB_DONE);
	return b->failed ? b->first_result : 0;
}

/**
 * @brief Waits until an IOCB is done, up to a deadline.
 * @param b         the IOCB.
 * @param deadline  absolute deadline (giouring/ring/clock.h).
 * @return 0 when every IOCTX succeeded, the first error's result otherwise (see gio_iocb_run()),
 *         or `-ETIME` when the IOCB was not done by the deadline (it may still finish: wait again).
 *
 * Any thread, host or device (compute kernels call gio_wait_iocb() of giouring/device/verbs.cuh).
 */
GIO_HD int gio_iocb_wait(const struct gio_iocb *b, uint64_t deadline)
{
	uint32_t spins = 0;
	while (gio_load_acquire(&b->state) != GIO_IOCB_DONE) {
		if (gio_deadline_passed(deadline))
			return -ETIME;
		gio_backoff(&spins);
	}
	return b->failed ? b->first_result : 0;
}

/** @brief A single-producer, single-consumer ring of IOCB pointers. */
struct gio_uring {
	struct gio_iocb **slots; /**< `depth` entries. */
	uint32_t depth;          /**< A power of two. */
	uint32_t head;           /**< Next IOCB the engine takes (free-running). */
	uint32_t tail;           /**< Next free entry (free-running). */
	uint32_t rsvd;           /**< Zero. */
};

/**
 * @brief Initialises a ring over caller memory.
 * @param u      the ring.
 * @param slots  `depth` pointers.
 * @param depth  a power of two from 1 to 65536.
 * @return 0, or `-EINVAL`.
 *
 * Any thread, before use.
 */
GIO_HD int gio_uring_init(struct gio_uring *u, struct gio_iocb **slots, uint32_t depth)
{
	if (!u || !slots || depth == 0 || depth > 65536u || (depth & (depth - 1)))
		return -EINVAL;
	u->slots = slots;
	u->depth = depth;
	u->head = u->tail = u->rsvd = 0;
	return 0;
}

/**
 * @brief Submits a filled IOCB to the ring.
 * @param u  the ring.
 * @param b  the IOCB, state GIO_IOCB_IDLE, its IOCTXs filled.
 * @return 0, `-EBUSY` (ring full), or `-EINVAL` (IOCB busy, or no IOCTX, or more than
 *         GIO_IOCB_MAX_CTX, or a zero timeout_ns).
 *
 * The ring's producer only.
 */
GIO_HD int gio_uring_submit(struct gio_uring *u, struct gio_iocb *b)
{
	const uint32_t t = u->tail;
	if (b->state != GIO_IOCB_IDLE && b->state != GIO_IOCB_DONE)
		return -EINVAL;
	if (b->nctx == 0 || b->nctx > GIO_IOCB_MAX_CTX || b->timeout_ns == 0)
		return -EINVAL;
	if (t - gio_load_acquire(&u->head) >= u->depth)
		return -EBUSY;
	b->state = GIO_IOCB_SUBMITTED;
	u->slots[t & (u->depth - 1)] = b;
	gio_store_release(&u->tail, t + 1); /* the IOCB and its IOCTXs before the new tail */
	return 0;
}

/**
 * @brief Runs the IOCBs submitted so far (the engine's loop body).
 * @param u    the ring.
 * @param tg   where the commands go.
 * @param max  most IOCBs to run in this call.
 * @return IOCBs run.
 *
 * The ring's consumer only.
 */
GIO_HD uint32_t gio_uring_process(struct gio_uring *u, const struct gio_iocb_target *tg, uint32_t max)
{
	uint32_t n = 0;
	while (n < max) {
		const uint32_t h = u->head;
		if (h == gio_load_acquire(&u->tail)) /* pairs with gio_uring_submit's release */
			break;
		gio_iocb_run(u->slots[h & (u->depth - 1)], tg);
		gio_store_release(&u->head, h + 1);
		n++;
	}
	return n;
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_URING_H */
