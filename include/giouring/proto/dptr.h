/**
 * @file giouring/proto/dptr.h
 * @brief What data pointer builders need to know: memory ranges and a controller's rules.
 *
 * The SGL builder (giouring/proto/sgl_build.h), the PRP builder (giouring/proto/prp_build.h) and the SGL
 * walker (giouring/proto/sgl_walk.h) all check a command against the same record, filled once per
 * controller from its registers and Identify data.
 */
#ifndef GIOURING_PROTO_DPTR_H
#define GIOURING_PROTO_DPTR_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/identify.h"
#include "../nvme/regs.h"

GIO_EXTERN_C_BEGIN

/** @brief One contiguous range of bus-addressable memory taking part in a transfer. */
struct gio_range {
	uint64_t addr; /**< Bus address (IOVA, or the address the target understands). */
	uint32_t len;  /**< Length in bytes, at least 1. */
};

/** @brief SGL segments a chain may have when gio_dptr_caps::max_segments is 0. Builders and
 *  walkers apply the same bound, so whatever a builder accepts a walker accepts. */
#define GIO_SGL_DEFAULT_MAX_SEGMENTS 1024u

/** @brief Data pointer rules of one controller (or software target). */
struct gio_dptr_caps {
	uint32_t sgls;           /**< Identify Controller SGLS (GIO_SGLS_*); 0 when SGLs are unsupported. */
	uint32_t page_bytes;     /**< Memory page size in use (CC.MPS): PRP page, a power of two >= 4096. */
	uint64_t max_xfer_bytes; /**< Largest transfer (from MDTS); 0 means no limit. */
	uint32_t seg_max_descs;  /**< Most descriptors in one SGL segment; 0 means no limit. */
	uint32_t max_segments;   /**< Most SGL segments in one chain; 0 means GIO_SGL_DEFAULT_MAX_SEGMENTS. */
};

/**
 * @brief Fills a gio_dptr_caps from a controller's registers and Identify Controller data.
 * @param caps  receives the rules; segment limits are set to 0 (no per-segment limit, the default
 *              chain bound), change them after.
 * @param cap   the CAP register (for MPSMIN, the unit of MDTS).
 * @param cc    the CC register as enabled (for MPS, the PRP page size).
 * @param id    Identify Controller data (MDTS, SGLS).
 * @return 0, or `-EINVAL` when CC.MPS lies outside CAP.MPSMIN..MPSMAX or SGLS reports the
 *         reserved support value 3; @p caps is then left untouched.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_dptr_caps_init(struct gio_dptr_caps *caps, uint64_t cap, uint32_t cc,
			      const struct gio_id_ctrl *id)
{
	const uint32_t mps = GIO_GET(cc, CC_MPS);
	const uint32_t mpsmin = (uint32_t)GIO_GET(cap, CAP_MPSMIN);
	if (mps < mpsmin || mps > (uint32_t)GIO_GET(cap, CAP_MPSMAX) ||
	    GIO_GET(id->sgls, SGLS_SUPPORT) == 3u)
		return -EINVAL;
	caps->sgls = id->sgls;
	caps->page_bytes = (uint32_t)gio_mps_bytes(mps);
	/* MDTS counts in units of the minimum page size, whatever page size is in use; 2^MDTS pages
	 * past 2^51 bytes cannot occur (MPSMIN <= 15, MDTS <= 255 would overflow: clamp to "none"). */
	caps->max_xfer_bytes = (id->mdts == 0 || id->mdts + 12u + mpsmin > 63u)
				       ? 0
				       : gio_mps_bytes(mpsmin) << id->mdts;
	caps->seg_max_descs = 0;
	caps->max_segments = 0;
	return 0;
}

/**
 * @brief SGL support level of a caps record.
 * @param caps  the rules.
 * @return GIO_SGLS_SUPPORT_NONE, GIO_SGLS_SUPPORT_BYTE or GIO_SGLS_SUPPORT_DWORD.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_dptr_sgl_support(const struct gio_dptr_caps *caps)
{
	return GIO_GET(caps->sgls, SGLS_SUPPORT);
}

/**
 * @brief Most SGL segments a chain may have under a caps record.
 * @param caps  the rules.
 * @return gio_dptr_caps::max_segments, or GIO_SGL_DEFAULT_MAX_SEGMENTS when that is 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_dptr_max_segments(const struct gio_dptr_caps *caps)
{
	return caps->max_segments ? caps->max_segments : GIO_SGL_DEFAULT_MAX_SEGMENTS;
}

/**
 * @brief Whether ranges @p a then @p b are adjacent in memory and fit one descriptor.
 * @param a  the earlier range.
 * @param b  the range that follows it in the transfer.
 * @return 1 when `a.addr + a.len == b.addr` and the joint length fits 32 bits, else 0.
 *
 * Pure; any thread, host or device. Both builders coalesce with this one rule.
 */
GIO_HD int gio_range_adjacent(const struct gio_range *a, const struct gio_range *b)
{
	return a->addr + a->len == b->addr && (uint64_t)a->len + b->len <= 0xffffffffull;
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_DPTR_H */
