/* The controller side of a context: its registers, admin commands, and the bring-up every
 * controller gets (the software target and nvme-pci alike): reset, admin queue, enable, Identify
 * Controller and Namespace, Number of Queues. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>

#include "ctx.h"

/* MMIO registers take 32-bit volatile accesses only (a controller may not decode wider ones);
 * the software target's registers are memory another thread watches, hence acquire/release. */
uint32_t gio__reg_read(struct gio_ctx *c, uint32_t off)
{
	if (c->be.mmio)
		return *(volatile uint32_t *)((char *)c->be.bar + off);
	return gio_load_acquire((uint32_t *)((char *)c->be.bar + off));
}

void gio__reg_write(struct gio_ctx *c, uint32_t off, uint32_t v)
{
	if (c->be.mmio) {
		gio_fence_release(); /* queue memory written before the register that announces it */
		gio_mmio_write32((volatile uint32_t *)((char *)c->be.bar + off), v);
		return;
	}
	gio_store_release((uint32_t *)((char *)c->be.bar + off), v);
}

/* 64-bit registers (CAP, ASQ, ACQ) as two 32-bit accesses, low then high, as the NVMe
 * specification allows for hosts that cannot do 64-bit MMIO. */
static uint64_t reg_read64(struct gio_ctx *c, uint32_t off)
{
	const uint64_t lo = gio__reg_read(c, off);
	return lo | (uint64_t)gio__reg_read(c, off + 4) << 32;
}

static void reg_write64(struct gio_ctx *c, uint32_t off, uint64_t v)
{
	gio__reg_write(c, off, (uint32_t)v);
	gio__reg_write(c, off + 4, (uint32_t)(v >> 32));
}

/* Doorbell of a queue, where the ring code writes it. */
uint32_t *gio__doorbell(struct gio_ctx *c, uint64_t off)
{
	return (uint32_t *)((char *)c->be.bar + off);
}

uint16_t gio__qp_flags(const struct gio_ctx *c)
{
	return c->be.mmio ? GIO_QP_MMIO_DOORBELLS : 0;
}

uint64_t gio__cap_timeout_ns(uint64_t cap)
{
	return (GIO_GET(cap, CAP_TO) ? GIO_GET(cap, CAP_TO) : 1) * 500000000ull;
}

int gio__wait_csts(struct gio_ctx *c, uint32_t mask, uint32_t want, uint64_t timeout_ns, const char *what)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	for (;;) {
		const uint32_t csts = gio__reg_read(c, GIO_REG_CSTS);
		if (GIO_GET(csts, CSTS_CFS))
			return gio__fail(-EIO, "giouring: controller fatal status (CSTS.CFS) while waiting for %s", what);
		if ((csts & mask) == want)
			return 0;
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: controller did not report %s within %" PRIu64 " ms (CSTS 0x%x)",
					 what, timeout_ns / 1000000, csts);
		usleep(100);
	}
}

static const char *opc_name(uint8_t opc)
{
	switch (opc) {
	case GIO_ADMIN_OPC_IDENTIFY: return "Identify";
	case GIO_ADMIN_OPC_CREATE_CQ: return "Create I/O Completion Queue";
	case GIO_ADMIN_OPC_CREATE_SQ: return "Create I/O Submission Queue";
	case GIO_ADMIN_OPC_DELETE_SQ: return "Delete I/O Submission Queue";
	case GIO_ADMIN_OPC_DELETE_CQ: return "Delete I/O Completion Queue";
	case GIO_ADMIN_OPC_SET_FEATURES: return "Set Features";
	default: return "admin command";
	}
}

int gio__admin(struct gio_ctx *c, const struct gio_sqe *sqe, uint32_t *dw0)
{
	uint16_t st;
	return gio__admin_within(c, sqe, GIO__ADMIN_TIMEOUT_NS, &st, dw0);
}

int gio__admin_within(struct gio_ctx *c, const struct gio_sqe *sqe, uint64_t timeout_ns, uint16_t *status,
		      uint32_t *dw0)
{
	uint16_t st = 0;
	int rc = gio_qp_submit_wait(&c->admin, sqe, timeout_ns, &st, dw0);
	*status = st;
	if (rc == -EIO)
		return gio__fail(-EIO, "giouring: %s failed: %s (status 0x%04x, SCT %u SC 0x%02x%s)", opc_name(sqe->opc),
				 gio_status_str(st), st, gio_status_sct(st), gio_status_sc(st), gio_status_dnr(st) ? ", DNR" : "");
	if (rc == -ETIME)
		return gio__fail(-ETIME, "giouring: %s timed out (%s)", opc_name(sqe->opc), gio_last_error());
	return rc;
}

int gio__qp_result_fail(const struct gio_qp *qp, uint8_t opc, int rc, uint16_t st)
{
	if (rc == -EIO)
		return gio__fail(-EIO, "giouring: queue %u: opcode 0x%02x failed: %s (status 0x%04x, SCT %u SC 0x%02x%s)",
				 qp->qid, opc, gio_status_str(st), st, gio_status_sct(st), gio_status_sc(st),
				 gio_status_dnr(st) ? ", DNR" : "");
	if (rc == -ETIME) {
		const struct gio_qp_state *s = &qp->last_timeout;
		return gio__fail(-ETIME,
				 "giouring: queue %u: deadline passed (cid %d; sq reserved %u committed %u rung %u head %u; cq head %u)",
				 qp->qid, (int)s->cid, s->sq_reserved, s->sq_committed, s->sq_rung, s->sq_head, s->cq_head);
	}
	if (rc == -EFAULT && qp->check)
		return gio__fail(-EFAULT, "giouring: queue %u: opcode 0x%02x not submitted: its data pointer reaches bus address "
				 "0x%" PRIx64 ", outside registered memory (check=1)",
				 qp->qid, opc, gio_load_relaxed64(&qp->check->fault_addr));
	if (rc < 0)
		return gio__fail(rc, "giouring: queue %u: submission failed (%d)", qp->qid, rc);
	return rc;
}

int gio_qp_submit_wait(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t timeout_ns, uint16_t *status, uint32_t *dw0)
{
	uint64_t deadline;
	uint16_t st = 0;
	uint32_t idx;
	int rc;
	gio__clear_error();
	if (!qp || !sqe)
		return gio__fail(-EINVAL, "giouring: gio_qp_submit_wait: NULL queue pair or command");
	deadline = gio_deadline_in(timeout_ns);
	rc = gio_qp_reserve_wait(qp, 1, deadline, &idx);
	if (rc == 0) {
		rc = gio_qp_put(qp, idx, sqe, 0, 0);
		gio_qp_publish(qp);
	}
	if (rc == 0)
		rc = gio_qp_wait(qp, idx, deadline, &st, dw0);
	if (status)
		*status = st;
	return gio__qp_result_fail(qp, sqe->opc, rc, st);
}

int gio__bring_up(struct gio_ctx *c, uint32_t nsid, int dptr)
{
	const uint64_t cap = c->cap = reg_read64(c, GIO_REG_CAP);
	const uint64_t to_ns = gio__cap_timeout_ns(cap);
	struct gio_id_ctrl *id;
	struct gio_id_ns *ns;
	struct gio_sqe sqe;
	uint32_t dw0, nsq, ncq;
	int rc;

	/* Reset: CC.EN to 0, then CSTS.RDY to 0 before the admin queue registers may change. RDY is
	 * waited for even when EN already reads 0: a controller a previous user just disabled may
	 * still be finishing its reset. */
	if (GIO_GET(gio__reg_read(c, GIO_REG_CC), CC_EN))
		gio__reg_write(c, GIO_REG_CC, 0);
	rc = gio__wait_csts(c, GIO_CSTS_RDY_MASK, 0, to_ns, "not ready (disable)");
	if (rc)
		return rc;
	if (GIO_GET(cap, CAP_MPSMIN) != 0 || !(GIO_GET(cap, CAP_CSS) & GIO_CAP_CSS_NVM))
		return gio__fail(-EOPNOTSUPP, "giouring: controller needs pages above 4 KiB or lacks the NVM command set (CAP 0x%016" PRIx64 ")",
				 cap);
	if (c->be.mmio && gio_cq_doorbell_offset(cap, 1) + 4 > c->be.bar_len)
		return gio__fail(-ENODEV, "giouring: BAR0 of %zu bytes is too small for one I/O queue pair's doorbells",
				 c->be.bar_len);
	c->admin_sq = gio__alloc_dma(c, GIO__ADMIN_DEPTH * sizeof(struct gio_sqe), &c->admin_sq_addr);
	c->admin_cq = gio__alloc_dma(c, GIO__ADMIN_DEPTH * sizeof(struct gio_cqe), &c->admin_cq_addr);
	c->admin_slots = calloc(GIO__ADMIN_DEPTH, sizeof(struct gio_cmd_slot));
	c->idbuf = gio__alloc_dma(c, GIO_IDENTIFY_BYTES, &c->idbuf_addr);
	if (!c->admin_sq || !c->admin_cq || !c->admin_slots || !c->idbuf)
		return c->admin_slots ? -ENOMEM /* alloc_dma said why */ : gio__fail(-ENOMEM, "giouring: no memory for the admin queue");
	gio__reg_write(c, GIO_REG_AQA, GIO_SET(AQA_ASQS, GIO__ADMIN_DEPTH - 1) | GIO_SET(AQA_ACQS, GIO__ADMIN_DEPTH - 1));
	reg_write64(c, GIO_REG_ASQ, c->admin_sq_addr);
	reg_write64(c, GIO_REG_ACQ, c->admin_cq_addr);
	rc = gio_qp_init(&c->admin, c->admin_sq, GIO__ADMIN_DEPTH, c->admin_cq, GIO__ADMIN_DEPTH, c->admin_slots, 0,
			 gio__doorbell(c, gio_sq_doorbell_offset(cap, 0)), gio__doorbell(c, gio_cq_doorbell_offset(cap, 0)), gio__qp_flags(c));
	if (rc)
		return gio__fail(rc, "giouring: admin queue init");
	/* Release: AQA/ASQ/ACQ before EN (the controller reads them when it sees EN). */
	gio__reg_write(c, GIO_REG_CC, GIO_SET(CC_EN, 1u) | GIO_SET(CC_CSS, GIO_CC_CSS_NVM) | GIO_SET(CC_MPS, 0u) |
					 GIO_SET(CC_IOSQES, GIO_SQE_SHIFT) | GIO_SET(CC_IOCQES, GIO_CQE_SHIFT));
	rc = gio__wait_csts(c, GIO_CSTS_RDY_MASK, 1, to_ns, "ready (CSTS.RDY)");
	if (rc)
		return rc;
	c->enabled = 1;

	gio_prep_identify(&sqe, GIO_CNS_CTRL, 0, c->idbuf_addr, 0);
	if ((rc = gio__admin(c, &sqe, &dw0)))
		return rc;
	id = c->idbuf;
	c->cntlid = id->cntlid;
	rc = gio_dptr_caps_init(&c->caps, cap, gio__reg_read(c, GIO_REG_CC), id);
	if (rc)
		return gio__fail(rc, "giouring: controller reports unusable SGLS/MDTS/page size");
	c->info.sgls = id->sgls;
	if (dptr == GIO__DPTR_PRP) /* the builders then take PRPs; info.sgls keeps what the controller said */
		c->caps.sgls = 0;
	if (nsid > id->nn)
		return gio__fail(-ENODEV, "giouring: namespace %u: the controller has %u", nsid, id->nn);
	gio_prep_identify(&sqe, GIO_CNS_NS, nsid, c->idbuf_addr, 0);
	if ((rc = gio__admin(c, &sqe, &dw0)))
		return rc;
	ns = c->idbuf;
	if (ns->nsze == 0) {
		/* Inactive: not attached to this controller, or not allocated at all. */
		c->ns_inactive = 1;
		return gio__fail(-ENODEV, "giouring: namespace %u is not active on this controller (controller ID %u): it is "
				 "not attached to it", nsid, c->cntlid);
	}
	if (gio_id_ns_lba_bytes(ns) < 512 || gio_id_ns_lba_bytes(ns) > (1u << 16))
		return gio__fail(-EOPNOTSUPP, "giouring: namespace %u: LBA size %u is outside 512..65536", nsid, gio_id_ns_lba_bytes(ns));
	c->info.nblocks = ns->nsze;
	c->info.lba_bytes = gio_id_ns_lba_bytes(ns);
	c->info.nsid = nsid;
	c->info.max_xfer_bytes = c->caps.max_xfer_bytes;
	c->info.page_bytes = c->caps.page_bytes;
	c->info.max_queue_entries = (uint32_t)GIO_GET(cap, CAP_MQES) + 1;
	gio_prep_set_num_queues(&sqe, GIO__MAX_QPS, GIO__MAX_QPS);
	if ((rc = gio__admin(c, &sqe, &dw0)))
		return rc;
	gio_num_queues_granted(dw0, &nsq, &ncq);
	c->info.io_queues = nsq < ncq ? nsq : ncq;
	/* No more queue pairs than BAR0 has doorbells for. */
	while (c->be.mmio && c->info.io_queues && gio_cq_doorbell_offset(cap, (uint16_t)c->info.io_queues) + 4 > c->be.bar_len)
		c->info.io_queues--;
	return 0;
}

