/**
 * @file giouring/nvme/cqe.h
 * @brief The 16-byte NVMe Completion Queue Entry and the status codes it carries.
 *
 * NVM Express Base Specification 2.0c, "Completion Queue Entry" and "Status Field Definition";
 * NVM command set status codes from the NVM Command Set Specification 1.0c.
 *
 * Two views of the status are used:
 * - the 16-bit **status word** (bytes 14-15 of the entry): Phase Tag in bit 0, then the status
 *   field; constants GIO_CQE_STATUS_*;
 * - the 15-bit **status field** (the status word shifted right by one), the form in which
 *   giouring reports a status to callers and that Linux and libnvme also use: SC in bits 7:0,
 *   SCT in 10:8, CRD in 12:11, More in 13, DNR in 14; constants GIO_SF_*.
 */
#ifndef GIOURING_NVME_CQE_H
#define GIOURING_NVME_CQE_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"

/** @brief Size in bytes of one completion queue entry (CC.IOCQES = 4). */
#define GIO_CQE_BYTES 16u
/** @brief log2 of GIO_CQE_BYTES, the value of CC.IOCQES and Identify CQES. */
#define GIO_CQE_SHIFT 4u

/**
 * @brief One Completion Queue Entry.
 *
 * The controller writes the status word (with the Phase Tag) so that a consumer that sees the
 * new phase may read the rest after an acquire; see docs/design.md, "Memory ordering".
 */
struct gio_cqe {
	uint32_t dw0;    /**< Dword 0: command specific (e.g. queues granted by Set Features). */
	uint32_t dw1;    /**< Dword 1: command specific. */
	uint16_t sqhd;   /**< Dword 2 bits 15:0: SQ Head Pointer after this command was fetched. */
	uint16_t sqid;   /**< Dword 2 bits 31:16: SQ Identifier the command came from. */
	uint16_t cid;    /**< Dword 3 bits 15:0: Command Identifier. */
	uint16_t status; /**< Dword 3 bits 31:16: Phase Tag (bit 0) and Status Field (bits 15:1). */
};

GIO_STATIC_ASSERT(sizeof(struct gio_cqe) == GIO_CQE_BYTES, "CQE is 16 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_cqe, dw0) == 0, "DW0 at byte 0");
GIO_STATIC_ASSERT(offsetof(struct gio_cqe, dw1) == 4, "DW1 at byte 4");
GIO_STATIC_ASSERT(offsetof(struct gio_cqe, sqhd) == 8, "SQHD at byte 8");
GIO_STATIC_ASSERT(offsetof(struct gio_cqe, sqid) == 10, "SQID at byte 10");
GIO_STATIC_ASSERT(offsetof(struct gio_cqe, cid) == 12, "CID at byte 12");
GIO_STATIC_ASSERT(offsetof(struct gio_cqe, status) == 14, "status at byte 14");

/** @name Dword 3 as one 32-bit word: CID in bits 15:0, the status word in bits 31:16
 * @{ */
#define GIO_CQE_DW3_CID_SHIFT 0
#define GIO_CQE_DW3_CID_MASK 0xffffu
#define GIO_CQE_DW3_STATUS_SHIFT 16
#define GIO_CQE_DW3_STATUS_MASK 0xffffu
/** @brief Dword 3 of a CQE with command identifier @p cid and status word @p status (phase in bit 0). */
#define GIO_CQE_DW3(cid, status) ((uint32_t)((cid) & 0xffffu) | (uint32_t)((status) & 0xffffu) << 16)
/** @} */

/**
 * @brief Dword 3 of a CQE (CID and status word) as one 32-bit word.
 * @param e  the entry.
 * @return a pointer to its bytes 12 to 15.
 *
 * Pure; any thread, host or device. A completion is published by one release store of this word
 * and consumed by one acquire load of it, so that the consumer gets the CID with the phase in a
 * single access of the same size as the producer's (the memory models synchronize a release and
 * an acquire of the same bytes, not of overlapping ones of different sizes). Little-endian hosts,
 * as the rest of the wire layer.
 */
GIO_HD uint32_t *gio_cqe_dw3(struct gio_cqe *e)
{
	return (uint32_t *)(void *)((unsigned char *)e + 12);
}

/** @name Status word (gio_cqe::status) layout
 * @{ */
#define GIO_CQE_STATUS_P_SHIFT 0 /**< Phase Tag. */
#define GIO_CQE_STATUS_P_MASK 0x1u
#define GIO_CQE_STATUS_SC_SHIFT 1 /**< Status Code. */
#define GIO_CQE_STATUS_SC_MASK 0xffu
#define GIO_CQE_STATUS_SCT_SHIFT 9 /**< Status Code Type. */
#define GIO_CQE_STATUS_SCT_MASK 0x7u
#define GIO_CQE_STATUS_CRD_SHIFT 12 /**< Command Retry Delay. */
#define GIO_CQE_STATUS_CRD_MASK 0x3u
#define GIO_CQE_STATUS_M_SHIFT 14 /**< More: a log page holds more information. */
#define GIO_CQE_STATUS_M_MASK 0x1u
#define GIO_CQE_STATUS_DNR_SHIFT 15 /**< Do Not Retry. */
#define GIO_CQE_STATUS_DNR_MASK 0x1u
/** @} */

/** @name Status field (status word >> 1) layout, as reported to callers
 * @{ */
#define GIO_SF_SC_SHIFT 0 /**< Status Code. */
#define GIO_SF_SC_MASK 0xffu
#define GIO_SF_SCT_SHIFT 8 /**< Status Code Type. */
#define GIO_SF_SCT_MASK 0x7u
#define GIO_SF_CRD_SHIFT 11 /**< Command Retry Delay. */
#define GIO_SF_CRD_MASK 0x3u
#define GIO_SF_M_SHIFT 13 /**< More. */
#define GIO_SF_M_MASK 0x1u
#define GIO_SF_DNR_SHIFT 14 /**< Do Not Retry. */
#define GIO_SF_DNR_MASK 0x1u
/** @brief Status field with Status Code Type @p sct and Status Code @p sc (no CRD, More or DNR). */
#define GIO_SF(sct, sc) ((uint16_t)((((sct) & 0x7u) << 8) | ((sc) & 0xffu)))
/** @brief The Do Not Retry bit within a status field. */
#define GIO_SF_DNR (1u << GIO_SF_DNR_SHIFT)
/** @brief The More bit within a status field. */
#define GIO_SF_MORE (1u << GIO_SF_M_SHIFT)
/** @} */

/** @name Status Code Types
 * @{ */
#define GIO_SCT_GENERIC 0x0u      /**< Generic Command Status. */
#define GIO_SCT_CMD_SPECIFIC 0x1u /**< Command Specific Status. */
#define GIO_SCT_MEDIA 0x2u        /**< Media and Data Integrity Errors. */
#define GIO_SCT_PATH 0x3u         /**< Path Related Status. */
#define GIO_SCT_VENDOR 0x7u       /**< Vendor Specific. */
/** @} */

/** @name Generic Command Status codes (SCT 0)
 * @{ */
#define GIO_SC_SUCCESS 0x00u              /**< Successful Completion. */
#define GIO_SC_INVALID_OPCODE 0x01u       /**< Invalid Command Opcode. */
#define GIO_SC_INVALID_FIELD 0x02u        /**< Invalid Field in Command. */
#define GIO_SC_CID_CONFLICT 0x03u         /**< Command ID Conflict. */
#define GIO_SC_DATA_XFER_ERROR 0x04u      /**< Data Transfer Error. */
#define GIO_SC_POWER_LOSS 0x05u           /**< Commands Aborted due to Power Loss Notification. */
#define GIO_SC_INTERNAL 0x06u             /**< Internal Error. */
#define GIO_SC_ABORT_REQ 0x07u            /**< Command Abort Requested. */
#define GIO_SC_ABORT_SQ_DELETED 0x08u     /**< Command Aborted due to SQ Deletion. */
#define GIO_SC_FUSED_FAIL 0x09u           /**< Command Aborted due to Failed Fused Command. */
#define GIO_SC_FUSED_MISSING 0x0au        /**< Command Aborted due to Missing Fused Command. */
#define GIO_SC_INVALID_NS 0x0bu           /**< Invalid Namespace or Format. */
#define GIO_SC_CMD_SEQ_ERROR 0x0cu        /**< Command Sequence Error. */
#define GIO_SC_SGL_INVALID_SEGMENT 0x0du  /**< Invalid SGL Segment Descriptor. */
#define GIO_SC_SGL_INVALID_COUNT 0x0eu    /**< Invalid Number of SGL Descriptors. */
#define GIO_SC_SGL_INVALID_DATA_LEN 0x0fu /**< Data SGL Length Invalid. */
#define GIO_SC_SGL_INVALID_MD_LEN 0x10u   /**< Metadata SGL Length Invalid. */
#define GIO_SC_SGL_INVALID_TYPE 0x11u     /**< SGL Descriptor Type Invalid. */
#define GIO_SC_CMB_INVALID_USE 0x12u      /**< Invalid Use of Controller Memory Buffer. */
#define GIO_SC_PRP_INVALID_OFFSET 0x13u   /**< PRP Offset Invalid. */
#define GIO_SC_AWU_EXCEEDED 0x14u         /**< Atomic Write Unit Exceeded. */
#define GIO_SC_OP_DENIED 0x15u            /**< Operation Denied. */
#define GIO_SC_SGL_INVALID_OFFSET 0x16u   /**< SGL Offset Invalid. */
#define GIO_SC_HOSTID_FORMAT 0x18u        /**< Host Identifier Inconsistent Format. */
#define GIO_SC_KAT_EXPIRED 0x19u          /**< Keep Alive Timer Expired. */
#define GIO_SC_KAT_INVALID 0x1au          /**< Keep Alive Timeout Invalid. */
#define GIO_SC_PREEMPT_ABORT 0x1bu        /**< Command Aborted due to Preempt and Abort. */
#define GIO_SC_SANITIZE_FAILED 0x1cu      /**< Sanitize Failed. */
#define GIO_SC_SANITIZE_IN_PROGRESS 0x1du /**< Sanitize In Progress. */
#define GIO_SC_SGL_INVALID_GRANULARITY 0x1eu /**< SGL Data Block Granularity Invalid. */
#define GIO_SC_CMD_IN_CMBQ_NOT_SUPP 0x1fu /**< Command Not Supported for Queue in CMB. */
#define GIO_SC_NS_WRITE_PROTECTED 0x20u   /**< Namespace is Write Protected. */
#define GIO_SC_CMD_INTERRUPTED 0x21u      /**< Command Interrupted. */
#define GIO_SC_TRANSIENT_TRANSPORT 0x22u  /**< Transient Transport Error. */
#define GIO_SC_LBA_RANGE 0x80u            /**< LBA Out of Range (NVM command set). */
#define GIO_SC_CAP_EXCEEDED 0x81u         /**< Capacity Exceeded (NVM command set). */
#define GIO_SC_NS_NOT_READY 0x82u         /**< Namespace Not Ready (NVM command set). */
#define GIO_SC_RESERVATION_CONFLICT 0x83u /**< Reservation Conflict (NVM command set). */
#define GIO_SC_FORMAT_IN_PROGRESS 0x84u   /**< Format In Progress (NVM command set). */
/** @} */

/** @name Command Specific Status codes (SCT 1) for the commands giouring sends
 * @{ */
#define GIO_SC_CQ_INVALID 0x00u          /**< Completion Queue Invalid (Create I/O SQ). */
#define GIO_SC_QID_INVALID 0x01u         /**< Invalid Queue Identifier (create/delete queue). */
#define GIO_SC_QUEUE_SIZE 0x02u          /**< Invalid Queue Size (create queue). */
#define GIO_SC_ABORT_LIMIT 0x03u         /**< Abort Command Limit Exceeded. */
#define GIO_SC_INVALID_VECTOR 0x08u      /**< Invalid Interrupt Vector (Create I/O CQ). */
#define GIO_SC_INVALID_QUEUE_DELETE 0x0cu /**< Invalid Queue Deletion (Delete I/O CQ). */
#define GIO_SC_FEAT_NOT_SAVEABLE 0x0du   /**< Feature Identifier Not Saveable. */
#define GIO_SC_FEAT_NOT_CHANGEABLE 0x0eu /**< Feature Not Changeable. */
#define GIO_SC_CONFLICTING_ATTRS 0x80u   /**< Conflicting Attributes (NVM: Dataset Management, Read, Write). */
#define GIO_SC_INVALID_PI 0x81u          /**< Invalid Protection Information (NVM). */
#define GIO_SC_READ_ONLY 0x82u           /**< Attempted Write to Read Only Range (NVM). */
/** @} */

/** @name Media and Data Integrity Errors (SCT 2)
 * @{ */
#define GIO_SC_WRITE_FAULT 0x80u       /**< Write Fault. */
#define GIO_SC_UNRECOVERED_READ 0x81u  /**< Unrecovered Read Error. */
#define GIO_SC_GUARD_CHECK 0x82u       /**< End-to-end Guard Check Error. */
#define GIO_SC_APPTAG_CHECK 0x83u      /**< End-to-end Application Tag Check Error. */
#define GIO_SC_REFTAG_CHECK 0x84u      /**< End-to-end Reference Tag Check Error. */
#define GIO_SC_COMPARE_FAILED 0x85u    /**< Compare Failure. */
#define GIO_SC_ACCESS_DENIED 0x86u     /**< Access Denied. */
#define GIO_SC_UNWRITTEN_BLOCK 0x87u   /**< Deallocated or Unwritten Logical Block. */
/** @} */

/** @name Path Related Status (SCT 3)
 * @{ */
#define GIO_SC_INTERNAL_PATH_ERROR 0x00u /**< Internal Path Error. */
#define GIO_SC_ANA_PERSISTENT_LOSS 0x01u /**< Asymmetric Access Persistent Loss. */
#define GIO_SC_ANA_INACCESSIBLE 0x02u    /**< Asymmetric Access Inaccessible. */
#define GIO_SC_ANA_TRANSITION 0x03u      /**< Asymmetric Access Transition. */
#define GIO_SC_CTRL_PATH_ERROR 0x60u     /**< Controller Pathing Error. */
#define GIO_SC_HOST_PATH_ERROR 0x70u     /**< Host Pathing Error. */
#define GIO_SC_HOST_ABORTED 0x71u        /**< Command Aborted By Host. */
/** @} */

#endif /* GIOURING_NVME_CQE_H */
