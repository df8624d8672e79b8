/**
 * @file giouring/proto/prp_walk.h
 * @brief The PRP walker: what a controller transfers for a command's PRP1/PRP2, or why it refuses.
 *
 * The controller side of giouring/proto/prp_build.h (NVM Express Base Specification 2.0c, "Physical
 * Region Page Entry and List"; choices follow QEMU's NVMe controller):
 * - PRP1 may carry an offset into its page, which must be dword aligned; the first page
 *   transfers up to its end.
 * - When the rest fits one page, PRP2 is that page's address (no offset).
 * - Otherwise PRP2 points to a PRP list (qword-aligned offset allowed; the list runs to the end of
 *   its page). Entries are page addresses without offset; when more than one page is still to
 *   come, the last entry of a list page points to the next list page (no offset).
 * - A non-zero offset where none is allowed, or a PRP1 that is not dword aligned, gives PRP Offset
 *   Invalid (DNR). A list outside every registered region gives Data Transfer Error (no DNR).
 * - More data pages than the output list holds give Invalid Number of SGL Descriptors, as a
 *   target that cannot track the transfer would refuse it; callers size the list from MDTS.
 */
#ifndef GIOURING_TARGET_PRP_WALK_H
#define GIOURING_TARGET_PRP_WALK_H

#include <stdint.h>
#include <string.h>

#include "../config.h"
#include "dma_map.h"
#include "dptr.h"
#include "../nvme/cqe.h"
#include "../nvme/prp.h"
#include "../nvme/sqe.h"
#include "xfer.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Lists the data segments a controller transfers for a command that uses PRPs.
 * @param sqe       the command; PSDT must be 00b.
 * @param xfer_len  bytes the command transfers.
 * @param caps      the controller's rules (gio_dptr_caps::page_bytes is the page size).
 * @param map       registered memory, through which PRP lists are read.
 * @param out       receives the segments (contiguous pages merged); `out->n` is reset to 0.
 * @return 0 (Successful Completion) or the NVMe status field the controller posts (see the file
 *         description); PSDT other than 00b, or a page size that is not a power of two of at least
 *         4096, gives Invalid Field in Command.
 *
 * Pure; any thread, host or device. Bounded by the transfer length.
 */
GIO_HD uint16_t gio_prp_walk(const struct gio_sqe *sqe, uint64_t xfer_len,
			     const struct gio_dptr_caps *caps, const struct gio_dma_map *map,
			     struct gio_xfer_list *out)
{
	const uint64_t pg = caps->page_bytes, mask = pg - 1;
	const uint16_t bad_offset = GIO_SF(GIO_SCT_GENERIC, GIO_SC_PRP_INVALID_OFFSET) | GIO_SF_DNR;
	const uint64_t prp1 = sqe->dptr.prp.prp1, prp2 = sqe->dptr.prp.prp2;
	uint64_t len = xfer_len, take, list, left_in_page;
	uint16_t st;

	out->n = 0;
	if (gio_sqe_psdt(sqe) != GIO_PSDT_PRP || pg < 4096 || (pg & mask))
		return GIO_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD) | GIO_SF_DNR;
	if (len == 0)
		return 0;
	if (prp1 & GIO_PRP_RSVD_MASK)
		return bad_offset;
	take = pg - (prp1 & mask);
	take = take < len ? take : len;
	st = gio__xfer_push(out, prp1, take, 0);
	if (st)
		return st;
	len -= take;
	if (len == 0)
		return 0;
	if (len <= pg) {
		if (prp2 & mask)
			return bad_offset;
		return gio__xfer_push(out, prp2, len, 0);
	}
	if (prp2 & 7u)
		return bad_offset;
	list = prp2;
	left_in_page = (pg - (list & mask)) / GIO_PRP_ENTRY_BYTES;
	const unsigned char *run = NULL; /* where the entries of this list page from `list` on are */
	uint64_t run_left = 0;            /* how many of them `run` covers */
	while (len > 0) {
		gio_prp_entry e;
		if (run_left == 0) {
			/* One lookup for the entries this list page is read for (the lookup is linear in
			 * the regions); entry by entry where they are not all in one region, so that a
			 * fault names the first unregistered entry. */
			const uint64_t pages = (len + pg - 1) / pg;
			const uint64_t want = pages < left_in_page ? pages : left_in_page;
			run = (const unsigned char *)gio_dma_map_find(map, list, want * sizeof(e));
			run_left = run ? want : 1;
			if (!run && (run = (const unsigned char *)gio_dma_map_find(map, list, sizeof(e))) == NULL)
				return gio__xfer_fault(out, list);
		}
		memcpy(&e, run, sizeof(e));
		run += sizeof(e);
		run_left--;
		if (e & mask)
			return bad_offset;
		if (left_in_page == 1 && len > pg) { /* the last slot chains to the next list page */
			list = e;
			left_in_page = pg / GIO_PRP_ENTRY_BYTES;
			run_left = 0;
			continue;
		}
		take = len < pg ? len : pg;
		st = gio__xfer_push(out, e, take, 0);
		if (st)
			return st;
		len -= take;
		list += GIO_PRP_ENTRY_BYTES;
		left_in_page--;
	}
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_PRP_WALK_H */
