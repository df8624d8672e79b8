/**
 * @file giouring/nvme/sqe.h
 * @brief The 64-byte NVMe Submission Queue Entry, opcodes and command dword fields.
 *
 * NVM Express Base Specification 2.0c, "Submission Queue Entry";
 * admin commands in "Admin Command Set"; I/O commands in the NVM Command Set Specification 1.0c. Command Dword 0 is split into its byte fields (opcode, flags, command identifier)
 * so that a ring can store the CID with one 16-bit store after the rest of the entry is built.
 */
#ifndef GIOURING_NVME_SQE_H
#define GIOURING_NVME_SQE_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "sgl.h"

/** @brief Size in bytes of one submission queue entry (CC.IOSQES = 6). */
#define GIO_SQE_BYTES 64u
/** @brief log2 of GIO_SQE_BYTES, the value of CC.IOSQES and Identify SQES. */
#define GIO_SQE_SHIFT 6u

/** @name Command Dword 0, as a 32-bit value
 * @{ */
#define GIO_CDW0_OPC_SHIFT 0 /**< Opcode. */
#define GIO_CDW0_OPC_MASK 0xffu
#define GIO_CDW0_FUSE_SHIFT 8 /**< Fused operation (0: normal). */
#define GIO_CDW0_FUSE_MASK 0x3u
#define GIO_CDW0_PSDT_SHIFT 14 /**< PRP or SGL for Data Transfer. */
#define GIO_CDW0_PSDT_MASK 0x3u
#define GIO_CDW0_CID_SHIFT 16 /**< Command Identifier. */
#define GIO_CDW0_CID_MASK 0xffffu
/** @} */

/** @name gio_sqe::flags, byte 1 of Command Dword 0
 * @{ */
#define GIO_SQE_FLAGS_FUSE_SHIFT 0 /**< Fused operation. */
#define GIO_SQE_FLAGS_FUSE_MASK 0x3u
#define GIO_SQE_FLAGS_PSDT_SHIFT 6 /**< PRP or SGL for Data Transfer. */
#define GIO_SQE_FLAGS_PSDT_MASK 0x3u
/** @} */

/** @name PSDT values
 * @{ */
#define GIO_PSDT_PRP 0x0u      /**< PRPs are used for this transfer. */
#define GIO_PSDT_SGL_MPTR 0x1u /**< SGL for data; MPTR is the address of a contiguous metadata buffer. */
#define GIO_PSDT_SGL_MSGL 0x2u /**< SGL for data; MPTR is the address of a metadata SGL descriptor. */
/** @} */

/** @name NVM command set I/O opcodes (NVM Command Set Specification)
 * @{ */
#define GIO_NVM_OPC_FLUSH 0x00u        /**< Flush. */
#define GIO_NVM_OPC_WRITE 0x01u        /**< Write. */
#define GIO_NVM_OPC_READ 0x02u         /**< Read. */
#define GIO_NVM_OPC_WRITE_UNCOR 0x04u  /**< Write Uncorrectable. */
#define GIO_NVM_OPC_COMPARE 0x05u      /**< Compare. */
#define GIO_NVM_OPC_WRITE_ZEROES 0x08u /**< Write Zeroes. */
#define GIO_NVM_OPC_DSM 0x09u          /**< Dataset Management. */
/** @} */

/** @name Admin opcodes (Base Specification)
 * @{ */
#define GIO_ADMIN_OPC_DELETE_SQ 0x00u     /**< Delete I/O Submission Queue. */
#define GIO_ADMIN_OPC_CREATE_SQ 0x01u     /**< Create I/O Submission Queue. */
#define GIO_ADMIN_OPC_GET_LOG_PAGE 0x02u  /**< Get Log Page. */
#define GIO_ADMIN_OPC_DELETE_CQ 0x04u     /**< Delete I/O Completion Queue. */
#define GIO_ADMIN_OPC_CREATE_CQ 0x05u     /**< Create I/O Completion Queue. */
#define GIO_ADMIN_OPC_IDENTIFY 0x06u      /**< Identify. */
#define GIO_ADMIN_OPC_ABORT 0x08u         /**< Abort. */
#define GIO_ADMIN_OPC_SET_FEATURES 0x09u  /**< Set Features. */
#define GIO_ADMIN_OPC_GET_FEATURES 0x0au  /**< Get Features. */
#define GIO_ADMIN_OPC_ASYNC_EVENT 0x0cu   /**< Asynchronous Event Request. */
#define GIO_ADMIN_OPC_KEEP_ALIVE 0x18u    /**< Keep Alive. */
#define GIO_ADMIN_OPC_DBBUF_CONFIG 0x7cu  /**< Doorbell Buffer Config. */
/** @} */

/** @name Read, Write, Write Zeroes: Command Dword 12
 * @{ */
#define GIO_RW_CDW12_NLB_SHIFT 0 /**< Number of Logical Blocks, 0's based. */
#define GIO_RW_CDW12_NLB_MASK 0xffffu
#define GIO_RW_CDW12_DTYPE_SHIFT 20 /**< Directive Type (Write). */
#define GIO_RW_CDW12_DTYPE_MASK 0xfu
#define GIO_RW_CDW12_STC_SHIFT 24 /**< Storage Tag Check. */
#define GIO_RW_CDW12_STC_MASK 0x1u
#define GIO_RW_CDW12_DEAC_SHIFT 25 /**< Deallocate (Write Zeroes). */
#define GIO_RW_CDW12_DEAC_MASK 0x1u
#define GIO_RW_CDW12_PRINFO_SHIFT 26 /**< Protection Information field. */
#define GIO_RW_CDW12_PRINFO_MASK 0xfu
#define GIO_RW_CDW12_FUA_SHIFT 30 /**< Force Unit Access. */
#define GIO_RW_CDW12_FUA_MASK 0x1u
#define GIO_RW_CDW12_LR_SHIFT 31 /**< Limited Retry. */
#define GIO_RW_CDW12_LR_MASK 0x1u
/** @brief Most logical blocks one Read, Write or Write Zeroes command can name (NLB + 1). */
#define GIO_RW_MAX_BLOCKS 65536u
/** @} */

/** @name Read, Write: Command Dword 13
 * @{ */
#define GIO_RW_CDW13_DSM_SHIFT 0 /**< Dataset Management hints. */
#define GIO_RW_CDW13_DSM_MASK 0xffu
#define GIO_RW_CDW13_DSPEC_SHIFT 16 /**< Directive Specific (Write). */
#define GIO_RW_CDW13_DSPEC_MASK 0xffffu
/** @} */

/** @name Create I/O Completion/Submission Queue, Delete I/O queue: Command Dword 10
 * @{ */
#define GIO_QUEUE_CDW10_QID_SHIFT 0 /**< Queue Identifier. */
#define GIO_QUEUE_CDW10_QID_MASK 0xffffu
#define GIO_QUEUE_CDW10_QSIZE_SHIFT 16 /**< Queue Size, 0's based. */
#define GIO_QUEUE_CDW10_QSIZE_MASK 0xffffu
/** @} */

/** @name Create I/O Completion Queue: Command Dword 11
 * @{ */
#define GIO_CREATE_CQ_CDW11_PC_SHIFT 0 /**< Physically Contiguous. */
#define GIO_CREATE_CQ_CDW11_PC_MASK 0x1u
#define GIO_CREATE_CQ_CDW11_IEN_SHIFT 1 /**< Interrupts Enabled. */
#define GIO_CREATE_CQ_CDW11_IEN_MASK 0x1u
#define GIO_CREATE_CQ_CDW11_IV_SHIFT 16 /**< Interrupt Vector. */
#define GIO_CREATE_CQ_CDW11_IV_MASK 0xffffu
/** @} */

/** @name Create I/O Submission Queue: Command Dword 11
 * @{ */
#define GIO_CREATE_SQ_CDW11_PC_SHIFT 0 /**< Physically Contiguous. */
#define GIO_CREATE_SQ_CDW11_PC_MASK 0x1u
#define GIO_CREATE_SQ_CDW11_QPRIO_SHIFT 1 /**< Queue Priority (weighted round robin only). */
#define GIO_CREATE_SQ_CDW11_QPRIO_MASK 0x3u
#define GIO_CREATE_SQ_CDW11_CQID_SHIFT 16 /**< Completion Queue Identifier. */
#define GIO_CREATE_SQ_CDW11_CQID_MASK 0xffffu
/** @} */

/** @name Identify: Command Dwords 10 and 11 and CNS values
 * @{ */
#define GIO_IDENTIFY_CDW10_CNS_SHIFT 0 /**< Controller or Namespace Structure. */
#define GIO_IDENTIFY_CDW10_CNS_MASK 0xffu
#define GIO_IDENTIFY_CDW10_CNTID_SHIFT 16 /**< Controller Identifier. */
#define GIO_IDENTIFY_CDW10_CNTID_MASK 0xffffu
#define GIO_IDENTIFY_CDW11_CNSSID_SHIFT 0 /**< CNS Specific Identifier. */
#define GIO_IDENTIFY_CDW11_CNSSID_MASK 0xffffu
#define GIO_IDENTIFY_CDW11_CSI_SHIFT 24 /**< Command Set Identifier. */
#define GIO_IDENTIFY_CDW11_CSI_MASK 0xffu
#define GIO_CNS_NS 0x00u             /**< Identify Namespace data structure for NSID. */
#define GIO_CNS_CTRL 0x01u           /**< Identify Controller data structure. */
#define GIO_CNS_NS_ACTIVE_LIST 0x02u /**< Active Namespace ID list. */
#define GIO_CNS_SEC_CTRL_LIST 0x15u  /**< Secondary Controller List (SR-IOV), from CNTID up. */
/** @brief Size in bytes of every Identify data structure. */
#define GIO_IDENTIFY_BYTES 4096u
/** @} */

/** @name Get/Set Features: Command Dword 10 and feature identifiers
 * @{ */
#define GIO_FEAT_CDW10_FID_SHIFT 0 /**< Feature Identifier. */
#define GIO_FEAT_CDW10_FID_MASK 0xffu
#define GIO_FEAT_CDW10_SEL_SHIFT 8 /**< Select (Get Features): current, default, saved, capabilities. */
#define GIO_FEAT_CDW10_SEL_MASK 0x7u
#define GIO_FEAT_CDW10_SV_SHIFT 31 /**< Save (Set Features). */
#define GIO_FEAT_CDW10_SV_MASK 0x1u
#define GIO_FEAT_NUM_QUEUES 0x07u /**< Number of Queues feature. */
/** @} */

/** @name Number of Queues: Command Dword 11 and completion Dword 0; 0's based
 * @{ */
#define GIO_NUMQ_NSQ_SHIFT 0 /**< Number of I/O Submission Queues (requested, or allocated in DW0). */
#define GIO_NUMQ_NSQ_MASK 0xffffu
#define GIO_NUMQ_NCQ_SHIFT 16 /**< Number of I/O Completion Queues (requested, or allocated in DW0). */
#define GIO_NUMQ_NCQ_MASK 0xffffu
/** @} */

/** @name Abort: Command Dword 10
 * @{ */
#define GIO_ABORT_CDW10_SQID_SHIFT 0 /**< Submission Queue Identifier. */
#define GIO_ABORT_CDW10_SQID_MASK 0xffffu
#define GIO_ABORT_CDW10_CID_SHIFT 16 /**< Command Identifier. */
#define GIO_ABORT_CDW10_CID_MASK 0xffffu
/** @} */

/** @brief PRP1/PRP2 view of the data pointer. */
struct gio_prp_pair {
	uint64_t prp1; /**< PRP Entry 1: first data page, may carry an offset. */
	uint64_t prp2; /**< PRP Entry 2: second page, or a PRP list pointer, or zero. */
};

/** @brief Data Pointer (DPTR, bytes 24-39): two PRP entries or one SGL descriptor (SGL1). */
union gio_dptr {
	struct gio_prp_pair prp;  /**< Used when PSDT is GIO_PSDT_PRP. */
	struct gio_sgl_desc sgl;  /**< Used when PSDT selects SGLs. */
};

/**
 * @brief One Submission Queue Entry.
 *
 * Build it with the encoders of giouring/proto/prep.h and a data pointer from giouring/proto/sgl_build.h
 * or giouring/proto/prp_build.h; the ring that submits it stores `cid` last.
 */
struct gio_sqe {
	uint8_t opc;       /**< CDW0 bits 7:0: opcode. */
	uint8_t flags;     /**< CDW0 bits 15:8: FUSE (1:0) and PSDT (7:6). */
	uint16_t cid;      /**< CDW0 bits 31:16: command identifier. */
	uint32_t nsid;     /**< Namespace Identifier. */
	uint32_t cdw2;     /**< Command Dword 2 (command specific). */
	uint32_t cdw3;     /**< Command Dword 3 (command specific). */
	uint64_t mptr;     /**< Metadata Pointer. */
	union gio_dptr dptr; /**< Data Pointer. */
	uint32_t cdw10;    /**< Command Dword 10. */
	uint32_t cdw11;    /**< Command Dword 11. */
	uint32_t cdw12;    /**< Command Dword 12. */
	uint32_t cdw13;    /**< Command Dword 13. */
	uint32_t cdw14;    /**< Command Dword 14. */
	uint32_t cdw15;    /**< Command Dword 15. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_prp_pair) == 16, "PRP pair is 16 bytes");
GIO_STATIC_ASSERT(sizeof(union gio_dptr) == 16, "DPTR is 16 bytes");
GIO_STATIC_ASSERT(sizeof(struct gio_sqe) == GIO_SQE_BYTES, "SQE is 64 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, opc) == 0, "OPC at byte 0");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, flags) == 1, "FUSE/PSDT at byte 1");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cid) == 2, "CID at byte 2");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, nsid) == 4, "NSID at byte 4");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw2) == 8, "CDW2 at byte 8");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw3) == 12, "CDW3 at byte 12");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, mptr) == 16, "MPTR at byte 16");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, dptr) == 24, "DPTR at byte 24");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, dptr.prp.prp2) == 32, "PRP2 at byte 32");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, dptr.sgl.id) == 39, "SGL1 identifier at byte 39");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw10) == 40, "CDW10 at byte 40");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw11) == 44, "CDW11 at byte 44");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw12) == 48, "CDW12 at byte 48");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw13) == 52, "CDW13 at byte 52");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw14) == 56, "CDW14 at byte 56");
GIO_STATIC_ASSERT(offsetof(struct gio_sqe, cdw15) == 60, "CDW15 at byte 60");

/**
 * @brief The PSDT field of an SQE.
 * @param sqe  the entry.
 * @return GIO_PSDT_PRP, GIO_PSDT_SGL_MPTR, GIO_PSDT_SGL_MSGL or 3 (reserved).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_sqe_psdt(const struct gio_sqe *sqe)
{
	return GIO_GET((uint32_t)sqe->flags, SQE_FLAGS_PSDT);
}

/**
 * @brief Sets the PSDT field of an SQE, leaving FUSE as it is.
 * @param sqe   the entry.
 * @param psdt  GIO_PSDT_PRP, GIO_PSDT_SGL_MPTR or GIO_PSDT_SGL_MSGL.
 *
 * Pure; any thread, host or device.
 */
GIO_HD void gio_sqe_set_psdt(struct gio_sqe *sqe, uint32_t psdt)
{
	sqe->flags = (uint8_t)((sqe->flags & ~(GIO_SQE_FLAGS_PSDT_MASK << GIO_SQE_FLAGS_PSDT_SHIFT)) |
			       GIO_SET(SQE_FLAGS_PSDT, psdt));
}

#endif /* GIOURING_NVME_SQE_H */
