/**
 * @file giouring/nvme/regs.h
 * @brief NVMe controller registers (BAR0): offsets, field shifts and masks, doorbell addresses.
 *
 * NVM Express Base Specification 2.0c, "Controller Properties". Fields are accessed with
 * GIO_GET() / GIO_SET() on a value read from (or to be written to) the register,
 * never with bitfields, so the same code serves the host and the GPU.
 */
#ifndef GIOURING_NVME_REGS_H
#define GIOURING_NVME_REGS_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"

/** @name Register offsets in BAR0
 * @{ */
#define GIO_REG_CAP 0x00u    /**< Controller Capabilities, 64 bits. */
#define GIO_REG_VS 0x08u     /**< Version. */
#define GIO_REG_INTMS 0x0cu  /**< Interrupt Mask Set. */
#define GIO_REG_INTMC 0x10u  /**< Interrupt Mask Clear. */
#define GIO_REG_CC 0x14u     /**< Controller Configuration. */
#define GIO_REG_CSTS 0x1cu   /**< Controller Status. */
#define GIO_REG_NSSR 0x20u   /**< NVM Subsystem Reset. */
#define GIO_REG_AQA 0x24u    /**< Admin Queue Attributes. */
#define GIO_REG_ASQ 0x28u    /**< Admin Submission Queue Base Address, 64 bits. */
#define GIO_REG_ACQ 0x30u    /**< Admin Completion Queue Base Address, 64 bits. */
#define GIO_REG_CMBLOC 0x38u /**< Controller Memory Buffer Location. */
#define GIO_REG_CMBSZ 0x3cu  /**< Controller Memory Buffer Size. */
#define GIO_REG_BPINFO 0x40u /**< Boot Partition Information. */
#define GIO_REG_BPRSEL 0x44u /**< Boot Partition Read Select. */
#define GIO_REG_BPMBL 0x48u  /**< Boot Partition Memory Buffer Location, 64 bits. */
#define GIO_REG_CMBMSC 0x50u /**< Controller Memory Buffer Memory Space Control, 64 bits. */
#define GIO_REG_CMBSTS 0x58u /**< Controller Memory Buffer Status. */
#define GIO_REG_CRTO 0x68u   /**< Controller Ready Timeouts. */
#define GIO_REG_DBS 0x1000u  /**< First doorbell (admin SQ 0 tail). */
/** @} */

/** @name CAP: Controller Capabilities
 * @{ */
#define GIO_CAP_MQES_SHIFT 0    /**< Maximum Queue Entries Supported, 0's based. */
#define GIO_CAP_MQES_MASK 0xffffull
#define GIO_CAP_CQR_SHIFT 16    /**< Contiguous Queues Required. */
#define GIO_CAP_CQR_MASK 0x1ull
#define GIO_CAP_AMS_SHIFT 17    /**< Arbitration Mechanism Supported. */
#define GIO_CAP_AMS_MASK 0x3ull
#define GIO_CAP_TO_SHIFT 24     /**< Timeout, in 500 ms units: worst time for CSTS.RDY to change. */
#define GIO_CAP_TO_MASK 0xffull
#define GIO_CAP_DSTRD_SHIFT 32  /**< Doorbell Stride: doorbells are (4 << DSTRD) bytes apart. */
#define GIO_CAP_DSTRD_MASK 0xfull
#define GIO_CAP_NSSRS_SHIFT 36  /**< NVM Subsystem Reset Supported. */
#define GIO_CAP_NSSRS_MASK 0x1ull
#define GIO_CAP_CSS_SHIFT 37    /**< Command Sets Supported (bit 0: NVM, bit 6: I/O sets, bit 7: admin only). */
#define GIO_CAP_CSS_MASK 0xffull
#define GIO_CAP_BPS_SHIFT 45    /**< Boot Partition Support. */
#define GIO_CAP_BPS_MASK 0x1ull
#define GIO_CAP_MPSMIN_SHIFT 48 /**< Memory Page Size Minimum: 2^(12 + MPSMIN) bytes. */
#define GIO_CAP_MPSMIN_MASK 0xfull
#define GIO_CAP_MPSMAX_SHIFT 52 /**< Memory Page Size Maximum: 2^(12 + MPSMAX) bytes. */
#define GIO_CAP_MPSMAX_MASK 0xfull
#define GIO_CAP_PMRS_SHIFT 56   /**< Persistent Memory Region Supported. */
#define GIO_CAP_PMRS_MASK 0x1ull
#define GIO_CAP_CMBS_SHIFT 57   /**< Controller Memory Buffer Supported. */
#define GIO_CAP_CMBS_MASK 0x1ull
#define GIO_CAP_CSS_NVM 0x01u   /**< CAP.CSS bit: NVM command set. */
#define GIO_CAP_CSS_IOCS 0x40u  /**< CAP.CSS bit: one or more I/O command sets. */
#define GIO_CAP_CSS_ADMIN 0x80u /**< CAP.CSS bit: admin command set only. */
/** @} */

/** @name VS: Version
 * @{ */
#define GIO_VS_TER_SHIFT 0 /**< Tertiary version. */
#define GIO_VS_TER_MASK 0xffu
#define GIO_VS_MNR_SHIFT 8 /**< Minor version. */
#define GIO_VS_MNR_MASK 0xffu
#define GIO_VS_MJR_SHIFT 16 /**< Major version. */
#define GIO_VS_MJR_MASK 0xffffu
/** @} */

/** @name CC: Controller Configuration
 * @{ */
#define GIO_CC_EN_SHIFT 0 /**< Enable. */
#define GIO_CC_EN_MASK 0x1u
#define GIO_CC_CSS_SHIFT 4 /**< I/O Command Set Selected (0: NVM, 6: all supported, 7: admin only). */
#define GIO_CC_CSS_MASK 0x7u
#define GIO_CC_MPS_SHIFT 7 /**< Memory Page Size: 2^(12 + MPS) bytes; also the PRP page size. */
#define GIO_CC_MPS_MASK 0xfu
#define GIO_CC_AMS_SHIFT 11 /**< Arbitration Mechanism Selected (0: round robin). */
#define GIO_CC_AMS_MASK 0x7u
#define GIO_CC_SHN_SHIFT 14 /**< Shutdown Notification (1: normal, 2: abrupt). */
#define GIO_CC_SHN_MASK 0x3u
#define GIO_CC_IOSQES_SHIFT 16 /**< I/O Submission Queue Entry Size, log2 bytes (6 for 64 B). */
#define GIO_CC_IOSQES_MASK 0xfu
#define GIO_CC_IOCQES_SHIFT 20 /**< I/O Completion Queue Entry Size, log2 bytes (4 for 16 B). */
#define GIO_CC_IOCQES_MASK 0xfu
#define GIO_CC_CRIME_SHIFT 24 /**< Controller Ready Independent of Media Enable. */
#define GIO_CC_CRIME_MASK 0x1u
#define GIO_CC_CSS_NVM 0u       /**< CC.CSS value: NVM command set. */
#define GIO_CC_CSS_ALL 6u       /**< CC.CSS value: all supported I/O command sets. */
#define GIO_CC_CSS_ADMIN 7u     /**< CC.CSS value: admin command set only. */
#define GIO_CC_SHN_NONE 0u      /**< CC.SHN value: no notification. */
#define GIO_CC_SHN_NORMAL 1u    /**< CC.SHN value: normal shutdown. */
#define GIO_CC_SHN_ABRUPT 2u    /**< CC.SHN value: abrupt shutdown. */
/** @} */

/** @name CSTS: Controller Status
 * @{ */
#define GIO_CSTS_RDY_SHIFT 0 /**< Ready. */
#define GIO_CSTS_RDY_MASK 0x1u
#define GIO_CSTS_CFS_SHIFT 1 /**< Controller Fatal Status. */
#define GIO_CSTS_CFS_MASK 0x1u
#define GIO_CSTS_SHST_SHIFT 2 /**< Shutdown Status. */
#define GIO_CSTS_SHST_MASK 0x3u
#define GIO_CSTS_NSSRO_SHIFT 4 /**< NVM Subsystem Reset Occurred. */
#define GIO_CSTS_NSSRO_MASK 0x1u
#define GIO_CSTS_PP_SHIFT 5 /**< Processing Paused. */
#define GIO_CSTS_PP_MASK 0x1u
#define GIO_CSTS_SHST_NORMAL 0u   /**< CSTS.SHST value: normal operation. */
#define GIO_CSTS_SHST_OCCURING 1u /**< CSTS.SHST value: shutdown processing occurring. */
#define GIO_CSTS_SHST_COMPLETE 2u /**< CSTS.SHST value: shutdown processing complete. */
/** @} */

/** @name AQA: Admin Queue Attributes; both sizes are 0's based
 * @{ */
#define GIO_AQA_ASQS_SHIFT 0 /**< Admin Submission Queue Size. */
#define GIO_AQA_ASQS_MASK 0xfffu
#define GIO_AQA_ACQS_SHIFT 16 /**< Admin Completion Queue Size. */
#define GIO_AQA_ACQS_MASK 0xfffu
/** @} */

/**
 * @brief The controller register block as laid out in BAR0, up to the first doorbell.
 *
 * For documentation and offset checks; access a mapped BAR through volatile 32-bit (and, for
 * CAP/ASQ/ACQ, 64-bit or two 32-bit) loads and stores at the GIO_REG_* offsets.
 */
struct gio_nvme_regs {
	uint64_t cap;        /**< Controller Capabilities. */
	uint32_t vs;         /**< Version. */
	uint32_t intms;      /**< Interrupt Mask Set. */
	uint32_t intmc;      /**< Interrupt Mask Clear. */
	uint32_t cc;         /**< Controller Configuration. */
	uint32_t rsvd18;     /**< Reserved. */
	uint32_t csts;       /**< Controller Status. */
	uint32_t nssr;       /**< NVM Subsystem Reset. */
	uint32_t aqa;        /**< Admin Queue Attributes. */
	uint64_t asq;        /**< Admin Submission Queue Base Address. */
	uint64_t acq;        /**< Admin Completion Queue Base Address. */
	uint32_t cmbloc;     /**< Controller Memory Buffer Location. */
	uint32_t cmbsz;      /**< Controller Memory Buffer Size. */
	uint32_t bpinfo;     /**< Boot Partition Information. */
	uint32_t bprsel;     /**< Boot Partition Read Select. */
	uint64_t bpmbl;      /**< Boot Partition Memory Buffer Location. */
	uint64_t cmbmsc;     /**< Controller Memory Buffer Memory Space Control. */
	uint32_t cmbsts;     /**< Controller Memory Buffer Status. */
	uint32_t rsvd5c[3];  /**< Reserved (CMBEBS, CMBSWTP, NSSD in NVMe 2.0). */
	uint32_t crto;       /**< Controller Ready Timeouts. */
	uint8_t rsvd6c[0x1000 - 0x6c]; /**< Reserved, PMR and vendor-specific registers. */
	uint32_t doorbell[2]; /**< Admin SQ 0 tail and (with DSTRD 0) admin CQ 0 head doorbells. */
};

GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, cap) == GIO_REG_CAP, "CAP offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, vs) == GIO_REG_VS, "VS offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, intms) == GIO_REG_INTMS, "INTMS offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, intmc) == GIO_REG_INTMC, "INTMC offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, cc) == GIO_REG_CC, "CC offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, csts) == GIO_REG_CSTS, "CSTS offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, nssr) == GIO_REG_NSSR, "NSSR offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, aqa) == GIO_REG_AQA, "AQA offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, asq) == GIO_REG_ASQ, "ASQ offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, acq) == GIO_REG_ACQ, "ACQ offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, cmbloc) == GIO_REG_CMBLOC, "CMBLOC offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, cmbsz) == GIO_REG_CMBSZ, "CMBSZ offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, bpinfo) == GIO_REG_BPINFO, "BPINFO offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, bprsel) == GIO_REG_BPRSEL, "BPRSEL offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, bpmbl) == GIO_REG_BPMBL, "BPMBL offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, cmbmsc) == GIO_REG_CMBMSC, "CMBMSC offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, cmbsts) == GIO_REG_CMBSTS, "CMBSTS offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, crto) == GIO_REG_CRTO, "CRTO offset");
GIO_STATIC_ASSERT(offsetof(struct gio_nvme_regs, doorbell) == GIO_REG_DBS, "doorbell offset");
GIO_STATIC_ASSERT(sizeof(struct gio_nvme_regs) == GIO_REG_DBS + 8, "register block size");

/**
 * @brief Byte offset in BAR0 of the Submission Queue @p qid Tail doorbell.
 * @param cap  the CAP register value (for DSTRD).
 * @param qid  queue identifier, 0 for the admin queue.
 * @return the offset, `0x1000 + (2 * qid) * (4 << CAP.DSTRD)`.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_sq_doorbell_offset(uint64_t cap, uint16_t qid)
{
	return GIO_REG_DBS + ((uint64_t)(2u * qid) << (2 + GIO_GET(cap, CAP_DSTRD)));
}

/**
 * @brief Byte offset in BAR0 of the Completion Queue @p qid Head doorbell.
 * @param cap  the CAP register value (for DSTRD).
 * @param qid  queue identifier, 0 for the admin queue.
 * @return the offset, `0x1000 + (2 * qid + 1) * (4 << CAP.DSTRD)`.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_cq_doorbell_offset(uint64_t cap, uint16_t qid)
{
	return GIO_REG_DBS + ((uint64_t)(2u * qid + 1u) << (2 + GIO_GET(cap, CAP_DSTRD)));
}

/**
 * @brief Memory page size in bytes for a CC.MPS (or CAP.MPSMIN/MPSMAX) field value.
 * @param mps  the 4-bit field value.
 * @return `4096 << mps`.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_mps_bytes(uint32_t mps)
{
	return (uint64_t)4096 << (mps & 0xfu);
}

#endif /* GIOURING_NVME_REGS_H */
