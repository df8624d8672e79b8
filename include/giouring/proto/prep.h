/**
 * @file giouring/proto/prep.h
 * @brief Encoders: fill a submission queue entry for one NVM or admin command.
 *
 * Like liburing's `io_uring_prep_*`: each encoder writes a whole SQE (zeroing what it does not
 * set), takes no locks and uses no atomics. Order of use:
 * 1. `gio_prep_*()` on the entry;
 * 2. a data pointer from giouring/proto/sgl_build.h or giouring/proto/prp_build.h (commands that move data);
 * 3. the ring stores the command identifier and publishes the entry (it owns `cid`).
 *
 * Counts are passed as plain counts (1-based) and encoded 0's based here, so callers never do
 * the minus one themselves.
 */
#ifndef GIOURING_PROTO_PREP_H
#define GIOURING_PROTO_PREP_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/sqe.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Zeroes an SQE and sets its opcode and namespace.
 * @param sqe   the entry to fill.
 * @param opc   the opcode.
 * @param nsid  the namespace identifier, 0 for commands that take none.
 *
 * Pure; any thread, host or device. The basis of every other encoder.
 */
GIO_HD void gio_prep_cmd(struct gio_sqe *sqe, uint8_t opc, uint32_t nsid)
{
	/* Field by field rather than memset: the same code makes plain stores on the GPU. */
	sqe->opc = opc;
	sqe->flags = 0;
	sqe->cid = 0;
	sqe->nsid = nsid;
	sqe->cdw2 = 0;
	sqe->cdw3 = 0;
	sqe->mptr = 0;
	sqe->dptr.prp.prp1 = 0;
	sqe->dptr.prp.prp2 = 0;
	sqe->cdw10 = 0;
	sqe->cdw11 = 0;
	sqe->cdw12 = 0;
	sqe->cdw13 = 0;
	sqe->cdw14 = 0;
	sqe->cdw15 = 0;
}

/**
 * @brief Encodes a Read, Write or Write Zeroes style command on logical blocks.
 * @param sqe      the entry to fill.
 * @param opc      GIO_NVM_OPC_READ, GIO_NVM_OPC_WRITE or GIO_NVM_OPC_WRITE_ZEROES.
 * @param nsid     namespace identifier, 1 to 0xfffffffe.
 * @param slba     first logical block.
 * @param nblocks  number of logical blocks, 1 to GIO_RW_MAX_BLOCKS.
 * @return 0, or `-EINVAL` when @p nsid or @p nblocks is out of range or the last block
 *         `slba + nblocks - 1` wraps past 2^64 - 1; the entry is then left untouched.
 *
 * Pure; any thread, host or device. Whether the range lies inside the namespace is the
 * controller's check (LBA Out of Range).
 */
GIO_HD int gio_prep_rw(struct gio_sqe *sqe, uint8_t opc, uint32_t nsid, uint64_t slba,
		       uint32_t nblocks)
{
	if (nsid == 0 || nsid == 0xffffffffu || nblocks == 0 || nblocks > GIO_RW_MAX_BLOCKS ||
	    slba + (nblocks - 1u) < slba)
		return -EINVAL;
	gio_prep_cmd(sqe, opc, nsid);
	sqe->cdw10 = (uint32_t)slba;
	sqe->cdw11 = (uint32_t)(slba >> 32);
	sqe->cdw12 = GIO_SET(RW_CDW12_NLB, nblocks - 1u);
	return 0;
}

/**
 * @brief Encodes an NVM Read.
 * @param sqe      the entry to fill.
 * @param nsid     namespace identifier, 1 to 0xfffffffe.
 * @param slba     first logical block.
 * @param nblocks  number of logical blocks, 1 to GIO_RW_MAX_BLOCKS.
 * @return 0, or `-EINVAL` (see gio_prep_rw()).
 *
 * Pure; any thread, host or device. Set the data pointer afterwards.
 */
GIO_HD int gio_prep_read(struct gio_sqe *sqe, uint32_t nsid, uint64_t slba, uint32_t nblocks)
{
	return gio_prep_rw(sqe, GIO_NVM_OPC_READ, nsid, slba, nblocks);
}

/**
 * @brief Encodes an NVM Write.
 * @param sqe      the entry to fill.
 * @param nsid     namespace identifier, 1 to 0xfffffffe.
 * @param slba     first logical block.
 * @param nblocks  number of logical blocks, 1 to GIO_RW_MAX_BLOCKS.
 * @return 0, or `-EINVAL` (see gio_prep_rw()).
 *
 * Pure; any thread, host or device. Set the data pointer afterwards.
 */
GIO_HD int gio_prep_write(struct gio_sqe *sqe, uint32_t nsid, uint64_t slba, uint32_t nblocks)
{
	return gio_prep_rw(sqe, GIO_NVM_OPC_WRITE, nsid, slba, nblocks);
}

/**
 * @brief Encodes an NVM Write Zeroes (no data pointer).
 * @param sqe      the entry to fill.
 * @param nsid     namespace identifier, 1 to 0xfffffffe.
 * @param slba     first logical block.
 * @param nblocks  number of logical blocks, 1 to GIO_RW_MAX_BLOCKS.
 * @param deac     non-zero to let the controller deallocate the blocks (CDW12.DEAC).
 * @return 0, or `-EINVAL` (see gio_prep_rw()).
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prep_write_zeroes(struct gio_sqe *sqe, uint32_t nsid, uint64_t slba,
				 uint32_t nblocks, int deac)
{
	int rc = gio_prep_rw(sqe, GIO_NVM_OPC_WRITE_ZEROES, nsid, slba, nblocks);
	if (rc == 0 && deac)
		sqe->cdw12 |= GIO_SET(RW_CDW12_DEAC, 1u);
	return rc;
}

/**
 * @brief Encodes an NVM Flush.
 * @param sqe   the entry to fill.
 * @param nsid  namespace identifier, or 0xffffffff for all namespaces where the controller
 *              supports it (Identify Controller VWC).
 * @return 0, or `-EINVAL` when @p nsid is 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prep_flush(struct gio_sqe *sqe, uint32_t nsid)
{
	if (nsid == 0)
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_NVM_OPC_FLUSH, nsid);
	return 0;
}

/**
 * @brief Encodes an Identify command whose 4096-byte result goes to PRP1/PRP2.
 * @param sqe   the entry to fill.
 * @param cns   GIO_CNS_CTRL, GIO_CNS_NS or GIO_CNS_NS_ACTIVE_LIST.
 * @param nsid  namespace identifier (GIO_CNS_NS), starting NSID (active list), else 0.
 * @param prp1  bus address of the result buffer, dword aligned.
 * @param prp2  address of the second memory page when @p prp1 is not page aligned, else 0.
 * @return 0, or `-EINVAL` when @p prp1 or @p prp2 is not dword aligned.
 *
 * Pure; any thread, host or device. Admin commands use PRPs (QEMU rejects SGLs on them).
 */
GIO_HD int gio_prep_identify(struct gio_sqe *sqe, uint8_t cns, uint32_t nsid, uint64_t prp1,
			     uint64_t prp2)
{
	if ((prp1 | prp2) & 3u)
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_IDENTIFY, nsid);
	sqe->dptr.prp.prp1 = prp1;
	sqe->dptr.prp.prp2 = prp2;
	sqe->cdw10 = GIO_SET(IDENTIFY_CDW10_CNS, (uint32_t)cns);
	return 0;
}

/**
 * @brief Encodes Create I/O Completion Queue for a physically contiguous queue.
 * @param sqe      the entry to fill.
 * @param qid      queue identifier, 1 to 65535.
 * @param entries  queue depth, 2 to 65536 (and at most CAP.MQES + 1, checked by the controller).
 * @param addr     bus address of the queue memory, aligned to the memory page size.
 * @param iv       interrupt vector, used only when @p ien is non-zero.
 * @param ien      non-zero to enable interrupts; polled queues pass 0.
 * @return 0, or `-EINVAL` when @p qid, @p entries or the alignment of @p addr is invalid.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prep_create_cq(struct gio_sqe *sqe, uint16_t qid, uint32_t entries, uint64_t addr,
			      uint16_t iv, int ien)
{
	if (qid == 0 || entries < 2 || entries > 65536u || (addr & 0xfffu))
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_CREATE_CQ, 0);
	sqe->dptr.prp.prp1 = addr;
	sqe->cdw10 = GIO_SET(QUEUE_CDW10_QID, (uint32_t)qid) | GIO_SET(QUEUE_CDW10_QSIZE, entries - 1u);
	sqe->cdw11 = GIO_SET(CREATE_CQ_CDW11_PC, 1u) | GIO_SET(CREATE_CQ_CDW11_IEN, ien ? 1u : 0u) |
		     (ien ? GIO_SET(CREATE_CQ_CDW11_IV, (uint32_t)iv) : 0u);
	return 0;
}

/**
 * @brief Encodes Create I/O Submission Queue for a physically contiguous queue.
 * @param sqe      the entry to fill.
 * @param qid      queue identifier, 1 to 65535.
 * @param entries  queue depth, 2 to 65536 (and at most CAP.MQES + 1, checked by the controller).
 * @param cqid     the completion queue it posts to, created before, 1 to 65535.
 * @param addr     bus address of the queue memory, aligned to the memory page size.
 * @return 0, or `-EINVAL` when an identifier, @p entries or the alignment of @p addr is invalid.
 *
 * Pure; any thread, host or device. Priority is left at 0 (round robin arbitration).
 */
GIO_HD int gio_prep_create_sq(struct gio_sqe *sqe, uint16_t qid, uint32_t entries, uint16_t cqid,
			      uint64_t addr)
{
	if (qid == 0 || cqid == 0 || entries < 2 || entries > 65536u || (addr & 0xfffu))
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_CREATE_SQ, 0);
	sqe->dptr.prp.prp1 = addr;
	sqe->cdw10 = GIO_SET(QUEUE_CDW10_QID, (uint32_t)qid) | GIO_SET(QUEUE_CDW10_QSIZE, entries - 1u);
	sqe->cdw11 = GIO_SET(CREATE_SQ_CDW11_PC, 1u) | GIO_SET(CREATE_SQ_CDW11_CQID, (uint32_t)cqid);
	return 0;
}

/**
 * @brief Encodes Delete I/O Submission Queue (delete it before its completion queue).
 * @param sqe  the entry to fill.
 * @param qid  queue identifier, 1 to 65535.
 * @return 0, or `-EINVAL` for qid 0 (the admin queue cannot be deleted).
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prep_delete_sq(struct gio_sqe *sqe, uint16_t qid)
{
	if (qid == 0)
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_DELETE_SQ, 0);
	sqe->cdw10 = GIO_SET(QUEUE_CDW10_QID, (uint32_t)qid);
	return 0;
}

/**
 * @brief Encodes Delete I/O Completion Queue.
 * @param sqe  the entry to fill.
 * @param qid  queue identifier, 1 to 65535.
 * @return 0, or `-EINVAL` for qid 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prep_delete_cq(struct gio_sqe *sqe, uint16_t qid)
{
	if (qid == 0)
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_DELETE_CQ, 0);
	sqe->cdw10 = GIO_SET(QUEUE_CDW10_QID, (uint32_t)qid);
	return 0;
}

/**
 * @brief Encodes Set Features with a feature identifier and its Command Dword 11.
 * @param sqe    the entry to fill.
 * @param fid    feature identifier.
 * @param cdw11  the feature's value.
 * @param save   non-zero to ask the controller to keep it across resets (CDW10.SV).
 *
 * Pure; any thread, host or device.
 */
GIO_HD void gio_prep_set_features(struct gio_sqe *sqe, uint8_t fid, uint32_t cdw11, int save)
{
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_SET_FEATURES, 0);
	sqe->cdw10 = GIO_SET(FEAT_CDW10_FID, (uint32_t)fid) | GIO_SET(FEAT_CDW10_SV, save ? 1u : 0u);
	sqe->cdw11 = cdw11;
}

/**
 * @brief Encodes Get Features.
 * @param sqe  the entry to fill.
 * @param fid  feature identifier.
 * @param sel  0 current, 1 default, 2 saved, 3 supported capabilities.
 * @return 0, or `-EINVAL` when @p sel is above 3.
 *
 * Pure; any thread, host or device. The value comes back in the CQE's Dword 0.
 */
GIO_HD int gio_prep_get_features(struct gio_sqe *sqe, uint8_t fid, uint32_t sel)
{
	if (sel > 3)
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_GET_FEATURES, 0);
	sqe->cdw10 = GIO_SET(FEAT_CDW10_FID, (uint32_t)fid) | GIO_SET(FEAT_CDW10_SEL, sel);
	return 0;
}

/**
 * @brief Encodes Set Features (Number of Queues): ask for I/O queue counts.
 * @param sqe  the entry to fill.
 * @param nsq  I/O submission queues wanted, 1 to 65535.
 * @param ncq  I/O completion queues wanted, 1 to 65535.
 * @return 0, or `-EINVAL` when a count is 0 or above 65535.
 *
 * Pure; any thread, host or device. The controller may grant fewer; decode its answer with
 * gio_num_queues_granted().
 */
GIO_HD int gio_prep_set_num_queues(struct gio_sqe *sqe, uint32_t nsq, uint32_t ncq)
{
	if (nsq == 0 || ncq == 0 || nsq > 65535u || ncq > 65535u)
		return -EINVAL;
	gio_prep_set_features(sqe, GIO_FEAT_NUM_QUEUES,
			      GIO_SET(NUMQ_NSQ, nsq - 1u) | GIO_SET(NUMQ_NCQ, ncq - 1u), 0);
	return 0;
}

/**
 * @brief Decodes the queue counts granted by Set/Get Features (Number of Queues).
 * @param dw0  Dword 0 of the completion.
 * @param nsq  receives the number of I/O submission queues allocated (1-based).
 * @param ncq  receives the number of I/O completion queues allocated (1-based).
 *
 * Pure; any thread, host or device.
 */
GIO_HD void gio_num_queues_granted(uint32_t dw0, uint32_t *nsq, uint32_t *ncq)
{
	*nsq = GIO_GET(dw0, NUMQ_NSQ) + 1u;
	*ncq = GIO_GET(dw0, NUMQ_NCQ) + 1u;
}

/**
 * @brief Encodes Abort for one outstanding command.
 * @param sqe   the entry to fill.
 * @param sqid  the submission queue the command was submitted to.
 * @param cid   its command identifier.
 *
 * Pure; any thread, host or device. Abort is best effort: the command may still complete.
 */
GIO_HD void gio_prep_abort(struct gio_sqe *sqe, uint16_t sqid, uint16_t cid)
{
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_ABORT, 0);
	sqe->cdw10 = GIO_SET(ABORT_CDW10_SQID, (uint32_t)sqid) | GIO_SET(ABORT_CDW10_CID, (uint32_t)cid);
}

/**
 * @brief Encodes Doorbell Buffer Config (shadow doorbells, for emulated controllers).
 * @param sqe            the entry to fill.
 * @param shadow_addr    bus address of the shadow doorbell page, memory-page aligned.
 * @param eventidx_addr  bus address of the EventIdx page, memory-page aligned.
 * @return 0, or `-EINVAL` when an address is not 4 KiB aligned.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prep_dbbuf_config(struct gio_sqe *sqe, uint64_t shadow_addr, uint64_t eventidx_addr)
{
	if ((shadow_addr | eventidx_addr) & 0xfffu)
		return -EINVAL;
	gio_prep_cmd(sqe, GIO_ADMIN_OPC_DBBUF_CONFIG, 0);
	sqe->dptr.prp.prp1 = shadow_addr;
	sqe->dptr.prp.prp2 = eventidx_addr;
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_PREP_H */
