/**
 * @file giouring/kv/staged.cuh
 * @brief The GPU engine's staged path (docs/staged.md): one warp runs a command group through
 *        the staging slots of its queue pair, moving each object between its slot (pinned host
 *        memory mapped for the GPU) and the pool (HBM) with the whole warp.
 *
 * The same steps as the CPU engine's (giouring/kv/run.h), in warp form: lane 0 reserves the
 * group's slots (all or nothing, up to the group's deadline) in the plan's own rings in GPU
 * memory, so that what the warps poll for flow control is HBM; a save's objects are copied into
 * their slots by the whole warp before the doorbell; after the completions, a load's objects are
 * copied out of their slots, by the whole warp, before the results count; every slot then goes
 * back (FREE), except that of a command that missed its deadline, which goes LOST (the controller
 * may still write it). No byte reaches the pool from a command that did not succeed.
 *
 * Memory ordering (docs/staged.md, "Memory ordering"): a load's slot is read only after its
 * lane's system-scope acquire of the completion and a __syncwarp() (which orders the lanes), with
 * loads that bypass the L1 cache (`ld.global.cv`, gio_kv_io_plan::move_depth of them in flight a
 * lane), so no line of the slot's previous lap is read;
 * a save's stores into the slot come before every lane's system-scope fence, the __syncwarp()
 * and the doorbell's release; a slot's release store (gio_stage_release()) comes after the last
 * read or write of it by any lane (__syncwarp() first).
 *
 * With the copy-engine mover (gio_kv_io_plan::move_req, a load): the warp moves nothing; lane 0
 * writes the group's request (which lanes succeeded, the first slot) into pinned host memory after
 * the lanes' completions, and waits for the mover's mark in GPU memory, which the copy engine
 * stores after the group's copies (stream order); the slots go back after the mark. With mirrored
 * completions (gio_kv_io_plan::cq_mirror) the warp also learns of its completions from a word in
 * GPU memory, and reads its CQ in host memory only when that word moved.
 */
#ifndef GIOURING_KV_STAGED_CUH
#define GIOURING_KV_STAGED_CUH

#include <stdint.h>

#include "../device/copy.cuh"
#include "../device/verbs.cuh"
#include "../ring/stage.h"
#include "io.h"
#include "staged.h"

/** @cond internal */

/* Copies request r's command between its slot and the pool with the whole warp (every lane
 * passes the same r and slot): to the slot for a save, from it for a load. 0, or -EINVAL (a pool
 * or request the plan cannot place), the same on every lane. */
GIO_DEV int gio__kv_stage_copy_warp(const struct gio_kv_io_plan *p, uint32_t layer, const struct gio_kv_io_req *r,
				    uint8_t *slot, int to_slot)
{
	struct gio_kv_stage_move mv[8];
	uint32_t first = 0;
	int n, k;
	if (!p->pool || !p->runs)
		return -EINVAL;
	do {
		n = gio_kv_stage_moves_at(p->pool, p->runs, layer, r->block, r->part, p->devs[r->dev].cmds, first, mv, 8);
		if (n < 0)
			return n;
		for (k = 0; k < n; k++) {
			uint8_t *home = (uint8_t *)(uintptr_t)mv[k].dst;
			if (to_slot)
				gio_copy_warp_depth(slot + mv[k].src_off, home, mv[k].len, 0, p->move_depth);
			else
				gio_copy_warp_depth(home, slot + mv[k].src_off, mv[k].len, 1, p->move_depth);
		}
		first += (uint32_t)n;
	} while (n == 8);
	return first ? 0 : -EINVAL;
}

/* The copy-engine mover's half of load group g (gio_kv_io_plan::move_req): lane 0 asks for the
 * moves of the lanes in mask (their slots from s0 on) and, where there is one, waits for the
 * mover's mark, in GPU memory (no poll of host memory), up to a deadline of its own, the plan's
 * timeout from the ask: a group one of whose commands used up the command deadline still has its
 * good objects moved (the first GPU run lost a whole group's slots to that). 1 once the objects
 * are in the pool (or none was asked for), 0 at the deadline; the same on every lane. */
GIO_DEV int gio__kv_stage_ask_move(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t g, uint32_t mask,
				   uint32_t s0)
{
	int moved = 1;
	if ((threadIdx.x & 31u) == 0) {
		const uint64_t deadline = gio_deadline_in(p->timeout_ns);
		const uint64_t idx = (uint64_t)layer * p->move_gcap + g;
		struct gio_kv_move_req *r = &p->move_req[idx];
		const volatile uint32_t *done = &p->move_done[idx];
		uint32_t spins = 0;
		/* mask and slot0 in one store, then the epoch: the mover reads them after it sees it. */
		*(volatile uint64_t *)&r->mask = (uint64_t)mask | (uint64_t)s0 << 32;
		__threadfence_system();
		*(volatile uint32_t *)&r->epoch = p->epoch;
		while (mask && *done != p->epoch) {
			if (gio_deadline_passed(deadline)) {
				moved = 0;
				break;
			}
			gio_backoff(&spins);
		}
	}
	return __shfl_sync(0xffffffffu, moved, 0);
}

/* The wait of group grp's commands: for a load whose CQ the copy-engine mover mirrors
 * (gio_kv_io_plan::cq_mirror), gated by this queue pair's word in GPU memory, so that the warp
 * reads the CQ in host memory only when it changed (docs/staged.md, "Design C over E"); else by
 * polling the CQ. */
GIO_DEV int gio__kv_stage_wait(const struct gio_kv_io_plan *p, const struct gio_kv_io_group &grp, struct gio_qp *qp,
			       uint32_t q, uint32_t cid, int sent, uint64_t deadline, uint16_t *status)
{
	const volatile uint32_t *gate = (const volatile uint32_t *)0;
	if (!p->write && p->move_req && p->cq_mirror) {
		uint32_t base = 0, d;
		for (d = 0; d < grp.dev; d++)
			base += p->devs[d].nqps;
		gate = p->cq_mirror + base + q;
	}
	return gio__wait_warp_gated(qp, cid, sent, deadline, status, p->poll_ns, gate, GIO_KV_MIRROR_FALLBACK_NS);
}

/** @endcond */

/**
 * @brief Runs one command group of a staged device with the whole warp: reserve its slots, move a
 *        save's objects in, submit, wait, move a load's objects out, give the slots back.
 * @param p       the plan's view.
 * @param layer   the layer.
 * @param grp     the group (every lane the same).
 * @param g       its index in the plan's groups (the copy-engine mover's request and mark).
 * @param qp      its queue pair.
 * @param q       the queue pair's index in its device (its staging ring).
 * @param status  receives this lane's NVMe status (0 where none).
 * @return this lane's result: 0, `-EIO` (see @p status), `-ETIME` (no slots by the deadline, or
 *         the command missed it), `-EINVAL` (a request the plan cannot encode or place); 0 on
 *         lanes beyond the group.
 *
 * All 32 lanes of the warp together.
 */
GIO_DEV int gio_kv_stage_group_warp(const struct gio_kv_io_plan *p, uint32_t layer, const struct gio_kv_io_group &grp,
				    uint32_t g, struct gio_qp *qp, uint32_t q, uint16_t *status)
{
	const uint32_t lane = threadIdx.x & 31u;
	const struct gio_kv_io_dev *d = &p->devs[grp.dev];
	const struct gio_kv_io_stage *sg = d->stage;
	struct gio_stage *st = &sg->rings[q];
	const union gio_dptr *tab = sg->table ? sg->table + (uint64_t)q * st->nslots : (const union gio_dptr *)0;
	uint8_t *area = sg->area + (uint64_t)q * st->nslots * st->slot_bytes;
	const int active = lane < grp.count;
	const uint64_t deadline = gio_deadline_in(p->timeout_ns);
	uint32_t s0 = 0, cid = 0, j;
	int rc = 0, bad = 0;
	uint16_t nvme = 0;
	struct gio_sqe sqe;
	*status = 0;
	if (lane == 0)
		rc = gio_stage_reserve_wait(st, grp.count, deadline, &s0);
	rc = __shfl_sync(0xffffffffu, rc, 0);
	s0 = __shfl_sync(0xffffffffu, s0, 0);
	if (rc != 0)
		return active ? -ETIME : 0; /* no slot held, nothing sent */
	if (active)
		bad = gio_kv_stage_sqe(p, layer, grp.first + lane, st, s0 + lane, tab, &sqe);
	if (p->write) {
		/* Each object into its slot, the whole warp per object, before the doorbell. */
		uint32_t todo = __ballot_sync(0xffffffffu, active && !bad);
		while (todo) {
			j = (uint32_t)__ffs(todo) - 1;
			todo &= todo - 1;
			const int c = gio__kv_stage_copy_warp(p, layer, &p->reqs[grp.first + j], area + gio_stage_offset(st, s0 + j), 1);
			if (lane == j)
				bad = c;
		}
		__syncwarp();
		__threadfence_system(); /* the slots' bytes before the command the doorbell publishes */
	}
	if (active && bad) /* a stand-in keeps the batch whole; its request reports -EINVAL */
		gio_prep_cmd(&sqe, GIO_NVM_OPC_FLUSH, d->nsid);
	rc = gio_submit_warp(qp, &sqe, grp.first + lane, 0, active, deadline, &cid);
	const int sent = active && rc == 0;
	{
		const int wait_rc = gio__kv_stage_wait(p, grp, qp, q, cid, sent, deadline, &nvme);
		if (rc == 0)
			rc = wait_rc;
	}
	if (bad && rc != -ETIME) {
		rc = -EINVAL;
		nvme = 0;
	}
	if (!p->write && p->move_req) {
		/* The copy engine moves the good objects out of their slots (a thread of the plan issues
		 * the copies); a group it has not moved by the move's own deadline times out, its slots
		 * LOST (a copy may still read them). */
		const uint32_t good = __ballot_sync(0xffffffffu, active && rc == 0);
		if (!gio__kv_stage_ask_move(p, layer, g, good, s0) && (good >> lane & 1u))
			rc = -ETIME;
	} else if (!p->write) {
		/* Each good object out of its slot, the whole warp per object, before the results count. */
		uint32_t todo = __ballot_sync(0xffffffffu, active && rc == 0);
		__syncwarp(); /* every lane's completion acquired before any lane reads a slot */
		while (todo) {
			j = (uint32_t)__ffs(todo) - 1;
			todo &= todo - 1;
			const int c = gio__kv_stage_copy_warp(p, layer, &p->reqs[grp.first + j], area + gio_stage_offset(st, s0 + j), 0);
			if (lane == j && c)
				rc = c;
		}
	}
	__syncwarp(); /* every lane's reads and writes of the slots before any slot goes back */
	if (active) {
		if (sent && rc == -ETIME && !bad)
			(void)gio_stage_lose(st, s0 + lane); /* the controller may still write it */
		else
			(void)gio_stage_release(st, s0 + lane);
	}
	*status = nvme;
	return active ? rc : 0;
}

#endif /* GIOURING_KV_STAGED_CUH */
