/**
 * @file giouring/ring/check.h
 * @brief Checked submission: a queue pair that refuses, before the command reaches the ring, any
 * data pointer, PRP list or SGL segment outside the registered regions.
 *
 * Why: a data pointer nobody registered is not always refused by the controller. Behind an IOMMU
 * the DMA faults, yet QEMU's NVMe controller (and real ones) may still complete the command with
 * Successful Completion: a write then stores whatever the failed read returned (zeros), and the
 * kernel logs the fault only for the first few commands of a boot. The data is lost silently.
 *
 * A queue pair whose gio_qp::check is set runs gio_qp_check_sqe() on every command it is given
 * (gio_qp_put(), gio_submit() and their warp and block forms). The check follows the command's
 * data pointer with the controller's own rules, the walkers of the software target
 * (giouring/proto/prp_walk.h, giouring/proto/sgl_walk.h), reading PRP lists and SGL segments
 * through gio_qp_check::map, and refuses the command with `-EFAULT` when a list or a data
 * segment lies outside the registered regions; gio_qp_check::fault_addr then names the first
 * such address. A refused command never reaches the controller: a harmless command takes its
 * slot, as for any cancelled entry. What the walkers refuse for other reasons (a malformed SGL)
 * is left to the controller, which refuses it with its NVMe status; no data moves then either.
 *
 * Checked are Read, Write and Compare (the transfer is NLB + 1 blocks of 2^lba_shift bytes) and
 * Dataset Management ((NR + 1) x 16 bytes); other commands carry no data pointer the check
 * knows the length of, and pass unchecked.
 *
 * The regions' pointers must be readable where commands are submitted: host pointers for CPU
 * producers, device pointers (HBM, or mapped pinned host memory) for GPU producers, since the
 * check reads PRP lists and SGL segments through them. The cost per command is measured by
 * bench_gpu_cmdrate (`--check`) and bench_cpu_rings (docs/benchmarking.md).
 */
#ifndef GIOURING_RING_CHECK_H
#define GIOURING_RING_CHECK_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/sqe.h"
#include "../proto/dptr.h"
#include "../proto/dma_map.h"
#include "../proto/prp_walk.h"
#include "../proto/sgl_walk.h"
#include "../proto/xfer.h"
#include "ordering.h"

GIO_EXTERN_C_BEGIN

/** @brief What a checked queue pair checks commands against (gio_qp::check), and what it found. */
struct gio_qp_check {
	/** Registered regions: lists are read through them, data must lie in them. */
	const struct gio_dma_map *map;
	/** More regions data may lie in (registered device memory a host cannot read), or NULL. */
	const struct gio_dma_map *data_map;
	struct gio_dptr_caps caps; /**< The controller's rules: page size (PRP), SGLS, segment limits. */
	uint32_t lba_shift;        /**< log2 of the namespace's block size. */
	uint32_t refused;          /**< Commands refused so far (atomic). */
	uint64_t fault_addr;       /**< The first address outside the regions of the last refused command. */
};

/* The transfer of a command the check knows, in bytes, and its direction; 0: nothing to check. */
GIO_HD uint64_t gio__check_xfer_bytes(const struct gio_qp_check *ck, const struct gio_sqe *sqe, int *is_write)
{
	/* Opcode bits 1:0 give the direction: 01b host to controller, 10b controller to host. */
	*is_write = (sqe->opc & 3u) == 1u;
	switch (sqe->opc) {
	case GIO_NVM_OPC_READ:
	case GIO_NVM_OPC_WRITE:
	case GIO_NVM_OPC_COMPARE:
		return (uint64_t)(GIO_GET(sqe->cdw12, RW_CDW12_NLB) + 1u) << ck->lba_shift;
	case GIO_NVM_OPC_DSM:
		return ((uint64_t)(sqe->cdw10 & 0xffu) + 1u) * 16u;
	default:
		return 0;
	}
}

/**
 * @brief Checks a command's data pointer against registered memory.
 * @param ck   what to check against; its counters are updated on a refusal.
 * @param sqe  the command as it will be submitted.
 * @return 0 (inside the regions, or nothing the check knows), or `-EFAULT`: a PRP list, an SGL
 *         segment or a data segment lies outside the regions; `ck->fault_addr` names its first
 *         address and `ck->refused` counts it.
 *
 * Any thread, host or device; reads lists through `ck->map`'s pointers. Bounded by the walkers'
 * chain limits.
 */
GIO_HD int gio_qp_check_sqe(struct gio_qp_check *ck, const struct gio_sqe *sqe)
{
	struct gio__xfer_check c;
	struct gio_xfer_list out;
	int is_write;
	const uint64_t bytes = gio__check_xfer_bytes(ck, sqe, &is_write);
	if (bytes == 0)
		return 0;
	c.map[0] = ck->map;
	c.map[1] = ck->data_map;
	c.bad = 0;
	c.faulted = 0;
	gio__xfer_check_list(&out, &c);
	/* The walk's status is not the check's: faults other than an address outside the regions
	 * are the controller's to report, with their NVMe status. */
	if (gio_sqe_psdt(sqe) == GIO_PSDT_PRP)
		(void)gio_prp_walk(sqe, bytes, &ck->caps, ck->map, &out);
	else
		(void)gio_sgl_walk(sqe, bytes, is_write, &ck->caps, ck->map, &out);
	if (!c.faulted)
		return 0;
	gio_store_relaxed64(&ck->fault_addr, c.bad);
	(void)gio_fetch_add(&ck->refused, 1u); /* rare: a refusal may pay for system scope */
	return -EFAULT;
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_CHECK_H */
