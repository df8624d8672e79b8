/**
 * @file giouring/kv/run.h
 * @brief The CPU engine: one thread runs a layer of a plan (giouring/kv/io.h) to completion with
 *        the host's ring verbs, on the peer-to-peer path and on the staged path.
 *
 * Peer-to-peer, a command's data pointer comes from the device's P2P table and the controller
 * moves the object itself. Staged (gio_kv_io_dev::stage, giouring/kv/staged.h), each command
 * takes a slot of the staging ring of its queue pair: a group reserves its slots with its SQ
 * entries (all or nothing), a save's objects are copied from the pool into their slots before
 * the doorbell, and on each completion a load's slot is copied into the pool before the result
 * counts, then the slot is released; a failed command's slot is released untouched, and a command
 * that missed its deadline leaves its slot LOST (the controller may still write it: never handed
 * out again until the ring is made anew). The staging area therefore never overflows, a slot is
 * reused as soon as its object has moved, and no byte reaches the pool from a command that did
 * not succeed.
 */
#ifndef GIOURING_KV_RUN_H
#define GIOURING_KV_RUN_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../config.h"
#include "../proto/prep.h"
#include "../ring/clock.h"
#include "../ring/qp.h"
#include "../ring/stage.h"
#include "io.h"
#include "staged.h"

GIO_EXTERN_C_BEGIN

/* Copies request r's command between its staging slot and the pool (p->pool, p->runs), a window
 * of copies at a time: to the slot for a save (before the command), from it for a load (after). */
GIO_HD int gio__kv_stage_copy(const struct gio_kv_io_plan *p, uint32_t layer, const struct gio_kv_io_req *r,
			      uint8_t *slot, int to_slot)
{
	struct gio_kv_stage_move mv[16];
	uint32_t first = 0;
	int n, k;
	if (!p->pool || !p->runs)
		return -EINVAL;
	do {
		n = gio_kv_stage_moves_at(p->pool, p->runs, layer, r->block, r->part, p->devs[r->dev].cmds, first, mv,
					  16);
		if (n < 0)
			return n;
		for (k = 0; k < n; k++) {
			uint8_t *home = (uint8_t *)(uintptr_t)mv[k].dst;
			if (to_slot)
				memcpy(slot + mv[k].src_off, home, mv[k].len);
			else
				memcpy(home, slot + mv[k].src_off, mv[k].len);
		}
		first += (uint32_t)n;
	} while (n == 16);
	return first ? 0 : -EINVAL;
}

/**
 * @brief The CPU engine: runs layer @p layer of a plan to completion with the host's ring verbs.
 * @param p      the plan; its layer count for @p layer reset to 0 by the caller. Where a device
 *               is staged, `p->pool` and `p->runs` must be set and the pool reachable by this
 *               thread, and each of the device's rings must have at least as many slots as its
 *               largest group (gio_kv_plan_create() checks both).
 * @param layer  the layer, below p->layers.
 * @return 0 when every request succeeded, else the first failure's result by request order;
 *         `-EINVAL` for a layer beyond the plan (nothing run, nothing signalled).
 *
 * One thread per plan and layer. Groups are issued in order, one doorbell each, while their
 * queue pairs have room (one group in flight per queue pair at most: a full ring costs a wait,
 * never a deadlock with our own outstanding commands); the oldest group is collected when nothing
 * more can be issued. Every request gets its result, and the last signals the layer. A staged
 * group that finds no free slots waits for them up to the plan's deadline (another party holds
 * them, or they are LOST): its requests then report `-ETIME`, and the ring's
 * gio_stage::last_timeout says which slot was not free.
 */
GIO_HD int gio_kv_io_run_layer(const struct gio_kv_io_plan *p, uint32_t layer)
{
	uint32_t issued = 0, collected = 0, j;
	uint32_t first[64];  /* first SQ ticket of each group in flight, by group index modulo 64 */
	uint32_t staged[64]; /* first staging ticket of each group in flight that holds slots */
	uint8_t held[64];    /* 1: that group holds g->count staging tickets from staged[] on */
	int8_t sent[64 * GIO_KV_IO_GROUP_MAX]; /* per request in flight: 1 sent, 2 sent as a stand-in, else -errno */
	int ret = 0;
	if (layer >= p->layers)
		return -EINVAL;
	if (p->ngroups == 0) {
		gio_kv_io_layer_signal(p, layer);
		return 0;
	}
	while (collected < p->ngroups) {
		while (issued < p->ngroups && issued - collected < 64) {
			const struct gio_kv_io_group *g = &p->groups[issued];
			const struct gio_kv_io_dev *d = &p->devs[g->dev];
			const uint32_t q = g->qp % d->nqps;
			struct gio_qp *qp = d->qps[q];
			const struct gio_kv_io_stage *sg = d->stage;
			struct gio_stage *st = sg ? &sg->rings[q] : (struct gio_stage *)0;
			uint32_t t0 = 0, s0 = 0;
			uint64_t deadline;
			int rc = 0;
			/* A group behind another on its queue pair waits for it to be collected, so that
			 * our own reservations never fill a ring we then wait on (its staging ring too:
			 * slots this thread holds are never what it waits for). */
			for (j = collected; j < issued; j++)
				if (p->devs[p->groups[j].dev].qps[p->groups[j].qp % p->devs[p->groups[j].dev].nqps] == qp)
					break;
			if (j < issued)
				break;
			deadline = gio_deadline_in(p->timeout_ns);
			held[issued % 64] = 0;
			if (st) {
				rc = gio_stage_reserve_wait(st, g->count, deadline, &s0);
				held[issued % 64] = rc == 0;
			}
			if (rc == 0)
				rc = gio_qp_reserve_wait(qp, g->count, deadline, &t0) != 0 ? -ETIME : 0;
			if (rc != 0) {
				if (held[issued % 64]) /* nothing was sent: the slots go back as they are */
					for (j = 0; j < g->count; j++)
						(void)gio_stage_release(st, s0 + j);
				held[issued % 64] = 0;
				for (j = 0; j < g->count; j++)
					sent[(issued % 64) * GIO_KV_IO_GROUP_MAX + j] = (int8_t)rc;
			} else {
				const union gio_dptr *tab = st && sg->table ? sg->table + (uint64_t)q * st->nslots
									   : (const union gio_dptr *)0;
				uint8_t *area = st ? sg->area + (uint64_t)q * st->nslots * st->slot_bytes : (uint8_t *)0;
				for (j = 0; j < g->count; j++) {
					const uint32_t i = g->first + j;
					struct gio_sqe sqe;
					int bad, s;
					if (st) {
						bad = gio_kv_stage_sqe(p, layer, i, st, s0 + j, tab, &sqe);
						if (!bad && p->write) /* the object into its slot before the controller reads it */
							bad = gio__kv_stage_copy(p, layer, &p->reqs[i],
										 area + gio_stage_offset(st, s0 + j), 1);
					} else {
						bad = gio_kv_io_sqe(p, layer, i, &sqe);
					}
					if (bad) /* a stand-in keeps the run whole; its request reports -EINVAL */
						gio_prep_cmd(&sqe, GIO_NVM_OPC_FLUSH, d->nsid);
					s = gio_qp_put(qp, t0 + j, &sqe, i, 0);
					/* A refused put is cancelled by the ring (nothing to wait for). */
					sent[(issued % 64) * GIO_KV_IO_GROUP_MAX + j] = (int8_t)(s ? s : bad ? 2 : 1);
				}
				gio_qp_publish(qp);
			}
			first[issued % 64] = t0;
			staged[issued % 64] = s0;
			issued++;
		}
		{
			const uint32_t c = collected % 64;
			const struct gio_kv_io_group *g = &p->groups[collected];
			const struct gio_kv_io_dev *d = &p->devs[g->dev];
			const uint32_t q = g->qp % d->nqps;
			struct gio_qp *qp = d->qps[q];
			struct gio_stage *st = held[c] ? &d->stage->rings[q] : (struct gio_stage *)0;
			uint8_t *area = st ? d->stage->area + (uint64_t)q * st->nslots * st->slot_bytes : (uint8_t *)0;
			const uint64_t deadline = gio_deadline_in(p->timeout_ns);
			for (j = 0; j < g->count; j++) {
				const int s = sent[c * GIO_KV_IO_GROUP_MAX + j];
				uint16_t st_status = 0;
				int rc = s;
				if (s > 0) { /* submitted: every entry put is waited for, a stand-in too */
					rc = gio_qp_wait(qp, first[c] + j, deadline, &st_status, (uint32_t *)0);
					if (s == 2 && rc != -ETIME) {
						rc = -EINVAL;
						st_status = 0;
					}
				}
				if (st) {
					const uint32_t t = staged[c] + j;
					if (s > 0 && rc == -ETIME) { /* the controller may still write the slot */
						(void)gio_stage_lose(st, t);
					} else if (rc == 0 && !p->write) { /* the object out of its slot, then the slot back */
						rc = gio__kv_stage_copy(p, layer, &p->reqs[g->first + j], area + gio_stage_offset(st, t),
									0);
						(void)gio_stage_release(st, t);
					} else {
						(void)gio_stage_release(st, t);
					}
				}
				gio_kv_io_result_only(p, layer, g->first + j, rc, st_status);
				if (rc && !ret)
					ret = rc;
			}
			if (gio_kv_io_count(p, layer, g->count))
				gio_kv_io_layer_signal(p, layer);
			collected++;
		}
	}
	return ret;
}

GIO_EXTERN_C_END

#endif /* GIOURING_KV_RUN_H */
