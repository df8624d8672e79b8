/**
 * @file giouring/proto/dptr_build.h
 * @brief The data pointer of a command, SGL or PRP as the controller allows.
 *
 * One call for code that does not care which form a controller takes: SGLs where Identify
 * Controller SGLS reports support for them (with the dword rule where SGLS value 2 demands it),
 * PRPs otherwise. A context opened with `dptr=prp` (giouring/host/ctx.h) reports caps without SGL
 * support, so the same call then builds PRPs: the choice is per controller and can be overridden.
 *
 * Transfers larger than the controller's MDTS (gio_dptr_caps::max_xfer_bytes) are refused with
 * `-E2BIG` before anything is written: a controller would fail them with Invalid Field.
 */
#ifndef GIOURING_PROTO_DPTR_BUILD_H
#define GIOURING_PROTO_DPTR_BUILD_H

#include <stdint.h>

#include "../config.h"
#include "dptr.h"
#include "prp_build.h"
#include "sgl_build.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Builds the data pointer of a prepared SQE: SGL where the caps allow, else PRP.
 * @param sqe        an entry filled by a `gio_prep_*` encoder; receives DPTR and PSDT.
 * @param ranges     the ranges in transfer order; their total must equal the command's size.
 * @param n          how many, at least 1.
 * @param caps       the controller's rules (gio_ctx_dptr_caps()).
 * @param mem        CPU-visible memory for SGL segments or PRP lists, or NULL when none is needed.
 * @param mem_addr   bus address of @p mem, 8-byte aligned (SGL segments and PRP lists).
 * @param mem_bytes  bytes available at @p mem.
 * @return the bytes of @p mem used (0 when DPTR alone holds the pointer), or
 *   - `-E2BIG`: the transfer exceeds gio_dptr_caps::max_xfer_bytes (MDTS), or an SGL would need
 *     more segments than allowed;
 *   - `-EINVAL`: no ranges, an empty or wrapping range, a range that breaks the SGLS dword rule
 *     (SGL) or the page rule (PRP: every range but the first starts on a page, every range but
 *     the last ends on one), or @p mem missing or misaligned where it is needed;
 *   - `-ENOSPC`: @p mem_bytes is too small.
 *   On any error neither @p sqe nor @p mem has been written.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_dptr_build(struct gio_sqe *sqe, const struct gio_range *ranges, uint32_t n,
			  const struct gio_dptr_caps *caps, void *mem, uint64_t mem_addr, uint64_t mem_bytes)
{
	if (gio_dptr_sgl_support(caps) != GIO_SGLS_SUPPORT_NONE)
		return gio_sgl_build(sqe, ranges, n, caps, (struct gio_sgl_desc *)mem, mem_addr,
				     mem_bytes > 0xffffffffull ? 0xffffffffu : (uint32_t)mem_bytes);
	return gio_prp_build(sqe, ranges, n, caps, (gio_prp_entry *)mem, mem_addr, mem_bytes);
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_DPTR_BUILD_H */
