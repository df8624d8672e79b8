/**
 * @file giouring/proto/prp_build.h
 * @brief PRP builders: PRP1/PRP2 and chained PRP lists for the same ranges the SGL builder takes.
 *
 * PRPs describe memory in pages of the controller's page size P (CC.MPS): PRP1 may start
 * inside a page (dword aligned), every other entry names a whole page. So a list of ranges is
 * expressible only when every range but the first starts on a page boundary and every range
 * but the last ends on one (after coalescing adjacent ranges).
 *
 * - up to one page touched: PRP1 only;
 * - two pages: PRP1 and PRP2;
 * - more: PRP2 points to a PRP list in caller memory. The list starts on a page boundary (QEMU
 *   and most drivers assume it; the specification also allows an offset); when the entries
 *   outgrow a page, the last entry of each list page points to the next list page.
 *
 * Validation precedes every write: on failure neither the SQE nor the list memory is touched.
 */
#ifndef GIOURING_PROTO_PRP_BUILD_H
#define GIOURING_PROTO_PRP_BUILD_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "dptr.h"
#include "../nvme/prp.h"
#include "../nvme/sqe.h"

GIO_EXTERN_C_BEGIN

/** @brief What PRPs for a list of ranges need, as computed by gio_prp_plan(). */
struct gio_prp_sizes {
	uint64_t xfer_bytes; /**< Sum of the range lengths. */
	uint64_t npages;     /**< Memory pages touched, that is PRP entries describing data. */
	uint64_t list_pages; /**< PRP list pages needed (0 for two pages or fewer). */
	uint64_t list_bytes; /**< list_pages * page size: the memory the lists occupy. */
};

/**
 * @brief Number of PRP list pages needed for a transfer touching @p npages memory pages.
 * @param npages      pages of data, PRP1's included.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @return 0 for two pages or fewer; else the pages of the list chain, each holding
 *         page_bytes / 8 entries of which all but the last page give one to the chain pointer.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_list_pages(uint64_t npages, uint32_t page_bytes)
{
	const uint64_t per_page = page_bytes / GIO_PRP_ENTRY_BYTES;
	if (npages <= 2)
		return 0;
	if (npages - 1 <= per_page)
		return 1;
	return (npages - 2 + (per_page - 2)) / (per_page - 1);
}

/**
 * @brief Validates ranges for PRPs and computes the list memory they need.
 * @param ranges  the ranges in transfer order.
 * @param n       how many, at least 1.
 * @param caps    the controller's rules (page size, MDTS).
 * @param plan    receives the plan; untouched on failure.
 * @return 0, or
 *   - `-EINVAL`: @p n is 0; gio_dptr_caps::page_bytes is not a power of two >= 4096; a range is
 *     empty or wraps; the first address is not dword aligned; a later range does not start on
 *     a page boundary, or an earlier one does not end on one (PRPs cannot express the gap);
 *   - `-E2BIG`: the total exceeds gio_dptr_caps::max_xfer_bytes.
 *
 * Pure; any thread, host or device. Contiguous ranges are treated as one.
 */
GIO_HD int gio_prp_plan(const struct gio_range *ranges, uint32_t n, const struct gio_dptr_caps *caps,
			struct gio_prp_sizes *plan)
{
	const uint64_t pg = caps->page_bytes, mask = pg - 1;
	uint64_t total = 0, npages = 0, seg_start = 0, seg_end = 0;
	uint32_t i;

	if (n == 0 || pg < 4096 || (pg & mask))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct gio_range *r = &ranges[i];
		if (r->len == 0 || r->addr + r->len < r->addr)
			return -EINVAL;
		if (i > 0 && seg_end == r->addr) { /* contiguous: PRPs need no 32-bit length limit */
			seg_end += r->len;
		} else {
			if (i == 0) {
				if (r->addr & GIO_PRP_RSVD_MASK)
					return -EINVAL;
			} else if ((seg_end & mask) || (r->addr & mask)) {
				return -EINVAL;
			}
			if (i > 0) /* close the previous coalesced range */
				npages += ((seg_end - (seg_start & ~mask)) + mask) / pg;
			seg_start = r->addr;
			seg_end = r->addr + r->len;
		}
		total += r->len;
	}
	npages += ((seg_end - (seg_start & ~mask)) + mask) / pg;
	if (caps->max_xfer_bytes != 0 && total > caps->max_xfer_bytes)
		return -E2BIG;
	plan->xfer_bytes = total;
	plan->npages = npages;
	plan->list_pages = gio_prp_list_pages(npages, caps->page_bytes);
	plan->list_bytes = plan->list_pages * pg;
	return 0;
}

/**
 * @brief Builds the PRP data pointer (PRP1, PRP2 and lists) of a prepared SQE.
 * @param sqe         an entry filled by a `gio_prep_*` encoder; receives DPTR and PSDT (00b).
 * @param ranges      the ranges in transfer order; their total must equal the command's size.
 * @param n           how many, at least 1.
 * @param caps        the controller's rules.
 * @param list        CPU-visible pointer to list memory, or NULL when the plan needs none.
 * @param list_addr   bus address of @p list as the controller sees it, page aligned.
 * @param list_bytes  bytes available at @p list.
 * @return the bytes of list memory used (0 when PRP1/PRP2 suffice; a multiple of the page
 *         size otherwise), or
 *   - the errors of gio_prp_plan();
 *   - `-EINVAL`: a list is needed and @p list is NULL or @p list_addr is not page aligned;
 *   - `-ENOSPC`: @p list_bytes is smaller than the plan needs;
 *   - `-E2BIG`: the list memory needed exceeds 2^31 - 1 bytes (the return is an int).
 *   On any error neither @p sqe nor the list memory has been written.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_prp_build(struct gio_sqe *sqe, const struct gio_range *ranges, uint32_t n,
			 const struct gio_dptr_caps *caps, gio_prp_entry *list, uint64_t list_addr,
			 uint64_t list_bytes)
{
	struct gio_prp_sizes plan;
	const uint64_t pg = caps->page_bytes, mask = pg - 1, per_page = pg / GIO_PRP_ENTRY_BYTES;
	uint64_t e = 0, slot = 0, list_page = 0, prp2 = 0;
	uint32_t i;
	int rc = gio_prp_plan(ranges, n, caps, &plan);

	if (rc)
		return rc;
	if (plan.list_pages != 0) {
		if (list == NULL || (list_addr & mask))
			return -EINVAL;
		if (list_bytes < plan.list_bytes)
			return -ENOSPC;
		if (plan.list_bytes > 0x7fffffffull)
			return -E2BIG;
	}
	/* Walk the pages in order; page e = 0 goes to PRP1, the others to PRP2 or the list. */
	for (i = 0; i < n; i++) {
		uint64_t a = ranges[i].addr;
		/* The page of the range's last byte (a + len itself may be 2^64). */
		const uint64_t last = (a + (ranges[i].len - 1)) & ~mask;
		if (e > 0 && (a & mask)) { /* a contiguous range continuing the page already listed */
			if ((a & ~mask) == last)
				continue;
			a = (a & ~mask) + pg;
		}
		for (;; a = (a & ~mask) + pg) {
			if (e == 0) {
				sqe->dptr.prp.prp1 = a;
			} else if (plan.list_pages == 0) {
				prp2 = a;
			} else {
				if (slot == per_page - 1 && e + 1 < plan.npages) {
					list[list_page * per_page + slot] = list_addr + (list_page + 1) * pg;
					list_page++;
					slot = 0;
				}
				list[list_page * per_page + slot] = a;
				slot++;
			}
			e++;
			if ((a & ~mask) == last)
				break;
		}
	}
	sqe->dptr.prp.prp2 = plan.list_pages ? list_addr : prp2;
	gio_sqe_set_psdt(sqe, GIO_PSDT_PRP);
	return (int)plan.list_bytes;
}

/**
 * @brief PRP list bytes for one object of @p obj_bytes starting on a page boundary.
 * @param obj_bytes   object size.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @return whole list pages, as they must be allocated (0 when PRP1/PRP2 suffice).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_object_bytes(uint64_t obj_bytes, uint32_t page_bytes)
{
	const uint64_t npages = (obj_bytes + page_bytes - 1) / page_bytes;
	return gio_prp_list_pages(npages, page_bytes) * page_bytes;
}

/**
 * @brief PRP list bytes for a pool of page-aligned objects, each read by one command.
 * @param objects     number of objects.
 * @param obj_bytes   bytes per object.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @return `objects * gio_prp_object_bytes(obj_bytes, page_bytes)`: the PRP counterpart of
 *         gio_sgl_pool_bytes().
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_pool_bytes(uint64_t objects, uint64_t obj_bytes, uint32_t page_bytes)
{
	return objects * gio_prp_object_bytes(obj_bytes, page_bytes);
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_PRP_BUILD_H */
