/**
 * @file giouring/proto/status.h
 * @brief Decoding completion queue entries and NVMe status values.
 *
 * giouring reports an NVMe status as the 15-bit **status field** (see giouring/nvme/cqe.h):
 * SC, SCT, CRD, More and DNR exactly as the controller wrote them, without the phase tag.
 * Functions that return `-errno` return `-EIO` for an NVMe error and hand the status field over
 * separately, so nothing of it is lost.
 */
#ifndef GIOURING_PROTO_STATUS_H
#define GIOURING_PROTO_STATUS_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/cqe.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Phase Tag of a completion queue entry.
 * @param cqe  the entry; read once, with no ordering. To consume an entry, load the status word
 *             first, compare its phase, then order the other loads after it (giouring's
 *             completion path does this; see docs/design.md, "Memory ordering").
 * @return 0 or 1.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_cqe_phase(const struct gio_cqe *cqe)
{
	return GIO_GET((uint32_t)cqe->status, CQE_STATUS_P);
}

/**
 * @brief Status field of a completion queue entry (status word without the phase tag).
 * @param cqe  the entry, already known to be new (its phase matched).
 * @return the 15-bit status field: SC in bits 7:0, SCT 10:8, CRD 12:11, More 13, DNR 14.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint16_t gio_cqe_status(const struct gio_cqe *cqe)
{
	return (uint16_t)(cqe->status >> 1);
}

/**
 * @brief Status Code Type of a status field.
 * @param sf  a status field, as returned by gio_cqe_status().
 * @return SCT, 0-7 (see GIO_SCT_*).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_status_sct(uint16_t sf)
{
	return GIO_GET((uint32_t)sf, SF_SCT);
}

/**
 * @brief Status Code of a status field.
 * @param sf  a status field, as returned by gio_cqe_status().
 * @return SC, 0-255 (see GIO_SC_*; its meaning depends on the SCT).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_status_sc(uint16_t sf)
{
	return GIO_GET((uint32_t)sf, SF_SC);
}

/**
 * @brief Command Retry Delay index of a status field.
 * @param sf  a status field.
 * @return CRD, 0-3: 0 means retry at once, 1-3 select Identify Controller CRDT1-3.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_status_crd(uint16_t sf)
{
	return GIO_GET((uint32_t)sf, SF_CRD);
}

/**
 * @brief More bit of a status field.
 * @param sf  a status field.
 * @return 1 if the Error Information log page holds more about this command, else 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_status_more(uint16_t sf)
{
	return GIO_GET((uint32_t)sf, SF_M);
}

/**
 * @brief Do Not Retry bit of a status field.
 * @param sf  a status field.
 * @return 1 if the controller says the same command would fail again, else 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_status_dnr(uint16_t sf)
{
	return GIO_GET((uint32_t)sf, SF_DNR);
}

/**
 * @brief Whether a status field reports an error.
 * @param sf  a status field.
 * @return 1 when SCT or SC is non-zero, else 0. CRD, More and DNR alone are not errors.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_status_is_error(uint16_t sf)
{
	return (sf & 0x7ffu) != 0;
}

/**
 * @brief Whether a completion queue entry reports an error.
 * @param cqe  the entry, already known to be new (its phase matched).
 * @return 1 when its Status Code Type or Status Code is non-zero, else 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_cqe_is_error(const struct gio_cqe *cqe)
{
	return gio_status_is_error(gio_cqe_status(cqe));
}

/**
 * @brief Whether a failed command may succeed if submitted again.
 * @param sf  a status field.
 * @return 1 for an error without DNR, else 0 (success, or DNR set).
 *
 * Pure; any thread, host or device. Path errors and Command Interrupted are typical retryable
 * statuses; honour gio_status_crd() before retrying.
 */
GIO_HD int gio_status_should_retry(uint16_t sf)
{
	return gio_status_is_error(sf) && !gio_status_dnr(sf);
}

/**
 * @brief `-errno` equivalent of a status field.
 * @param sf  a status field.
 * @return 0 on success, `-EIO` for any NVMe error (the status field itself carries the detail).
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_status_errno(uint16_t sf)
{
	return gio_status_is_error(sf) ? -EIO : 0;
}

/**
 * @brief Name of a status, for messages and logs.
 * @param sf  a status field; CRD, More and DNR are ignored.
 * @return a static string naming the status as the specification does (e.g.
 *         "Data SGL Length Invalid"), or a generic one naming the status code type
 *         ("Unknown generic status") for codes giouring does not list. Never NULL.
 *
 * Pure; any thread, host or device.
 */
GIO_HD const char *gio_status_str(uint16_t sf)
{
	const uint32_t sc = gio_status_sc(sf);
	switch (gio_status_sct(sf)) {
	case GIO_SCT_GENERIC:
		switch (sc) {
		case GIO_SC_SUCCESS: return "Successful Completion";
		case GIO_SC_INVALID_OPCODE: return "Invalid Command Opcode";
		case GIO_SC_INVALID_FIELD: return "Invalid Field in Command";
		case GIO_SC_CID_CONFLICT: return "Command ID Conflict";
		case GIO_SC_DATA_XFER_ERROR: return "Data Transfer Error";
		case GIO_SC_POWER_LOSS: return "Commands Aborted due to Power Loss Notification";
		case GIO_SC_INTERNAL: return "Internal Error";
		case GIO_SC_ABORT_REQ: return "Command Abort Requested";
		case GIO_SC_ABORT_SQ_DELETED: return "Command Aborted due to SQ Deletion";
		case GIO_SC_FUSED_FAIL: return "Command Aborted due to Failed Fused Command";
		case GIO_SC_FUSED_MISSING: return "Command Aborted due to Missing Fused Command";
		case GIO_SC_INVALID_NS: return "Invalid Namespace or Format";
		case GIO_SC_CMD_SEQ_ERROR: return "Command Sequence Error";
		case GIO_SC_SGL_INVALID_SEGMENT: return "Invalid SGL Segment Descriptor";
		case GIO_SC_SGL_INVALID_COUNT: return "Invalid Number of SGL Descriptors";
		case GIO_SC_SGL_INVALID_DATA_LEN: return "Data SGL Length Invalid";
		case GIO_SC_SGL_INVALID_MD_LEN: return "Metadata SGL Length Invalid";
		case GIO_SC_SGL_INVALID_TYPE: return "SGL Descriptor Type Invalid";
		case GIO_SC_CMB_INVALID_USE: return "Invalid Use of Controller Memory Buffer";
		case GIO_SC_PRP_INVALID_OFFSET: return "PRP Offset Invalid";
		case GIO_SC_AWU_EXCEEDED: return "Atomic Write Unit Exceeded";
		case GIO_SC_OP_DENIED: return "Operation Denied";
		case GIO_SC_SGL_INVALID_OFFSET: return "SGL Offset Invalid";
		case GIO_SC_HOSTID_FORMAT: return "Host Identifier Inconsistent Format";
		case GIO_SC_KAT_EXPIRED: return "Keep Alive Timer Expired";
		case GIO_SC_KAT_INVALID: return "Keep Alive Timeout Invalid";
		case GIO_SC_PREEMPT_ABORT: return "Command Aborted due to Preempt and Abort";
		case GIO_SC_SANITIZE_FAILED: return "Sanitize Failed";
		case GIO_SC_SANITIZE_IN_PROGRESS: return "Sanitize In Progress";
		case GIO_SC_SGL_INVALID_GRANULARITY: return "SGL Data Block Granularity Invalid";
		case GIO_SC_CMD_IN_CMBQ_NOT_SUPP: return "Command Not Supported for Queue in CMB";
		case GIO_SC_NS_WRITE_PROTECTED: return "Namespace is Write Protected";
		case GIO_SC_CMD_INTERRUPTED: return "Command Interrupted";
		case GIO_SC_TRANSIENT_TRANSPORT: return "Transient Transport Error";
		case GIO_SC_LBA_RANGE: return "LBA Out of Range";
		case GIO_SC_CAP_EXCEEDED: return "Capacity Exceeded";
		case GIO_SC_NS_NOT_READY: return "Namespace Not Ready";
		case GIO_SC_RESERVATION_CONFLICT: return "Reservation Conflict";
		case GIO_SC_FORMAT_IN_PROGRESS: return "Format In Progress";
		default: return "Unknown generic status";
		}
	case GIO_SCT_CMD_SPECIFIC:
		switch (sc) {
		case GIO_SC_CQ_INVALID: return "Completion Queue Invalid";
		case GIO_SC_QID_INVALID: return "Invalid Queue Identifier";
		case GIO_SC_QUEUE_SIZE: return "Invalid Queue Size";
		case GIO_SC_ABORT_LIMIT: return "Abort Command Limit Exceeded";
		case GIO_SC_INVALID_VECTOR: return "Invalid Interrupt Vector";
		case GIO_SC_INVALID_QUEUE_DELETE: return "Invalid Queue Deletion";
		case GIO_SC_FEAT_NOT_SAVEABLE: return "Feature Identifier Not Saveable";
		case GIO_SC_FEAT_NOT_CHANGEABLE: return "Feature Not Changeable";
		case GIO_SC_CONFLICTING_ATTRS: return "Conflicting Attributes";
		case GIO_SC_INVALID_PI: return "Invalid Protection Information";
		case GIO_SC_READ_ONLY: return "Attempted Write to Read Only Range";
		default: return "Unknown command specific status";
		}
	case GIO_SCT_MEDIA:
		switch (sc) {
		case GIO_SC_WRITE_FAULT: return "Write Fault";
		case GIO_SC_UNRECOVERED_READ: return "Unrecovered Read Error";
		case GIO_SC_GUARD_CHECK: return "End-to-end Guard Check Error";
		case GIO_SC_APPTAG_CHECK: return "End-to-end Application Tag Check Error";
		case GIO_SC_REFTAG_CHECK: return "End-to-end Reference Tag Check Error";
		case GIO_SC_COMPARE_FAILED: return "Compare Failure";
		case GIO_SC_ACCESS_DENIED: return "Access Denied";
		case GIO_SC_UNWRITTEN_BLOCK: return "Deallocated or Unwritten Logical Block";
		default: return "Unknown media or data integrity status";
		}
	case GIO_SCT_PATH:
		switch (sc) {
		case GIO_SC_INTERNAL_PATH_ERROR: return "Internal Path Error";
		case GIO_SC_ANA_PERSISTENT_LOSS: return "Asymmetric Access Persistent Loss";
		case GIO_SC_ANA_INACCESSIBLE: return "Asymmetric Access Inaccessible";
		case GIO_SC_ANA_TRANSITION: return "Asymmetric Access Transition";
		case GIO_SC_CTRL_PATH_ERROR: return "Controller Pathing Error";
		case GIO_SC_HOST_PATH_ERROR: return "Host Pathing Error";
		case GIO_SC_HOST_ABORTED: return "Command Aborted By Host";
		default: return "Unknown path related status";
		}
	case GIO_SCT_VENDOR:
		return "Vendor specific status";
	default:
		return "Reserved status code type";
	}
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_STATUS_H */
