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
 * - more: PRP2 points to a PRP list in caller memory, at any 8-byte aligned bus address. The
 *   entries run from there to the end of that page at most: a list that fits takes only its
 *   entries' bytes (8 each). A longer one fills its page, whose last entry points to the next
 *   list page, the page directly after in the caller's memory; and so on, every list page but
 *   the last ending in a chain pointer.
 *
 * The specification allows the offset (a PRP List pointer in PRP2 is qword aligned and may point
 * into a page; only the list pages it chains to must be page aligned), and both ends of the
 * wire use it: QEMU's controller computes the entries of the first list from PRP2's offset in
 * its page, and Linux's nvme driver takes every list of up to 32 entries (transfers up to
 * 128 KiB with 4 KiB pages) from a DMA pool of 256-byte chunks, at offsets 0 to 3840 in their
 * page, and longer ones a page per list page. A controller may read a list page beyond the last
 * entry used (QEMU reads from PRP2 to the end of the page in one go) and ignore those bytes, so
 * keep list memory in pages the controller can read whole (memory registered in pages is).
 *
 * gio_prp_list_bytes_at() and gio_prp_list_alloc_bytes() give the list memory a transfer needs
 * where it is placed and as an allocator sets it aside (exactly, in Linux's chunks, or in pages).
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

/** @brief What PRPs for a list of ranges need, as computed by gio_prp_plan() or gio_prp_plan_at(). */
struct gio_prp_sizes {
	uint64_t xfer_bytes; /**< Sum of the range lengths. */
	uint64_t npages;     /**< Memory pages touched, that is PRP entries describing data. */
	uint64_t list_pages; /**< Memory pages the PRP list touches (0 for two pages or fewer). */
	uint64_t list_bytes; /**< Bytes of list memory from the list's start to its last entry's
				  end: 8 per entry, chain pointers included (0 without a list). */
};

/* The list for a transfer of npages pages whose first entry sits at byte `off` of its page:
 * how many 8-byte slots it takes (data entries and chain pointers) and how many pages it
 * touches. The first page holds (P - off) / 8 slots, every later one P / 8; a page that is not
 * the last gives its last slot to the chain pointer. */
GIO_HD void gio__prp_list_shape(uint64_t npages, uint32_t page_bytes, uint64_t off, uint64_t *slots,
				uint64_t *pages)
{
	const uint64_t per_page = page_bytes / GIO_PRP_ENTRY_BYTES;
	const uint64_t first = (page_bytes - (off & (page_bytes - 1) & ~(uint64_t)7)) / GIO_PRP_ENTRY_BYTES;
	uint64_t entries, rest, more;

	*slots = 0;
	*pages = 0;
	if (npages <= 2)
		return;
	entries = npages - 1; /* PRP1 holds the first page */
	if (entries <= first) {
		*slots = entries;
		*pages = 1;
		return;
	}
	/* The first page: first - 1 entries and the chain. The rest (at least 2, since
	 * entries > first) in `more` pages of per_page - 1 entries and a chain, the last in full. */
	rest = entries - (first - 1);
	more = (rest - 1 + (per_page - 2)) / (per_page - 1);
	*slots = entries + more; /* one chain pointer per page but the last */
	*pages = 1 + more;
}

/**
 * @brief Number of PRP list pages needed for a transfer touching @p npages memory pages.
 * @param npages      pages of data, PRP1's included.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @return 0 for two pages or fewer; else the pages of the list chain when the list starts on a
 *         page boundary, each holding page_bytes / 8 entries of which all but the last page give
 *         one to the chain pointer.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_list_pages(uint64_t npages, uint32_t page_bytes)
{
	uint64_t slots, pages;
	gio__prp_list_shape(npages, page_bytes, 0, &slots, &pages);
	return pages;
}

/**
 * @brief Bytes of PRP list a transfer touching @p npages pages needs where its list starts.
 * @param npages      pages of data, PRP1's included.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @param list_addr   bus address of the list's first entry, or just its offset in its page: only
 *                    `list_addr % page_bytes` counts, and its bits 2:0 are ignored
 *                    (gio_prp_plan_at() refuses an address that is not 8-byte aligned).
 * @return 0 for two pages or fewer; else the bytes from the list's start to its last entry's
 *         end: 8 for each of the npages - 1 entries, and 8 for each chain pointer, the last
 *         entry of every list page but the last. A list that fits before the end of its first
 *         page needs `(npages - 1) * 8` bytes, wherever it starts in the page.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_list_bytes_at(uint64_t npages, uint32_t page_bytes, uint64_t list_addr)
{
	uint64_t slots, pages;
	gio__prp_list_shape(npages, page_bytes, list_addr, &slots, &pages);
	return slots * GIO_PRP_ENTRY_BYTES;
}

/** @brief gio_prp_list_alloc_bytes() chunk size for the exact minimum: 8 bytes per list entry. */
#define GIO_PRP_CHUNK_EXACT 0u
/** @brief gio_prp_list_alloc_bytes() chunk size of Linux's nvme driver: lists of up to 32 entries
 *  come from its 256-byte DMA pool ("prp list 256"), longer ones from its page pool. */
#define GIO_PRP_CHUNK_LINUX 256u

/**
 * @brief PRP list memory an allocator sets aside for a transfer touching @p npages pages.
 * @param npages       pages of data, PRP1's included.
 * @param page_bytes   memory page size, a power of two >= 4096.
 * @param chunk_bytes  how lists are allocated:
 *   - #GIO_PRP_CHUNK_EXACT (0): exactly the list's bytes, page aligned start
 *     (gio_prp_list_bytes_at() at offset 0): the minimum;
 *   - otherwise a list of at most @p chunk_bytes takes one chunk of that size, and a longer list
 *     one page per list page (gio_prp_list_pages()): #GIO_PRP_CHUNK_LINUX (256) as Linux's nvme
 *     driver does with 4 KiB pages, @p page_bytes for a whole page per list. A chunk must not
 *     cross a page boundary (power-of-two chunks aligned to their size do not), since a list
 *     that fits one chunk must end by its page's end. Values above @p page_bytes count as
 *     @p page_bytes; others are meant to be multiples of 8.
 * @return bytes set aside; 0 for two pages or fewer (PRP1 and PRP2 suffice).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_list_alloc_bytes(uint64_t npages, uint32_t page_bytes, uint32_t chunk_bytes)
{
	uint64_t slots, pages;
	gio__prp_list_shape(npages, page_bytes, 0, &slots, &pages);
	if (pages == 0 || chunk_bytes == GIO_PRP_CHUNK_EXACT)
		return slots * GIO_PRP_ENTRY_BYTES;
	if (chunk_bytes > page_bytes)
		chunk_bytes = page_bytes;
	if (slots * GIO_PRP_ENTRY_BYTES <= chunk_bytes)
		return chunk_bytes;
	return pages * page_bytes;
}

/**
 * @brief Validates ranges for PRPs and computes the list memory they need at a list address.
 * @param ranges     the ranges in transfer order.
 * @param n          how many, at least 1.
 * @param caps       the controller's rules (page size, MDTS).
 * @param list_addr  bus address where the PRP list will start (used only when a list is needed).
 * @param plan       receives the plan; untouched on failure.
 * @return 0, or
 *   - `-EINVAL`: @p n is 0; gio_dptr_caps::page_bytes is not a power of two >= 4096; a range is
 *     empty or wraps; the first address is not dword aligned; a later range does not start on
 *     a page boundary, or an earlier one does not end on one (PRPs cannot express the gap); a
 *     list is needed and @p list_addr is not 8-byte aligned, or the list would run past the end
 *     of the 64-bit bus address space;
 *   - `-E2BIG`: the total exceeds gio_dptr_caps::max_xfer_bytes.
 *
 * Pure; any thread, host or device. Contiguous ranges are treated as one.
 */
GIO_HD int gio_prp_plan_at(const struct gio_range *ranges, uint32_t n, const struct gio_dptr_caps *caps,
			   uint64_t list_addr, struct gio_prp_sizes *plan)
{
	const uint64_t pg = caps->page_bytes, mask = pg - 1;
	uint64_t total = 0, npages = 0, seg_start = 0, seg_end = 0, slots, pages;
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
	gio__prp_list_shape(npages, caps->page_bytes, list_addr, &slots, &pages);
	if (pages != 0) {
		if (list_addr & (GIO_PRP_ENTRY_BYTES - 1))
			return -EINVAL;
		/* The last slot's byte must be addressable; the chain pointers then are too. */
		if (slots * GIO_PRP_ENTRY_BYTES - 1 > ~(uint64_t)0 - list_addr)
			return -EINVAL;
	}
	plan->xfer_bytes = total;
	plan->npages = npages;
	plan->list_pages = pages;
	plan->list_bytes = slots * GIO_PRP_ENTRY_BYTES;
	return 0;
}

/**
 * @brief Validates ranges for PRPs and computes the list memory they need, the list starting on
 *        a page boundary.
 * @param ranges  the ranges in transfer order.
 * @param n       how many, at least 1.
 * @param caps    the controller's rules (page size, MDTS).
 * @param plan    receives the plan; untouched on failure.
 * @return 0, or the errors of gio_prp_plan_at() (none of which concern the list address here).
 *
 * Pure; any thread, host or device. `gio_prp_plan_at(ranges, n, caps, 0, plan)`.
 */
GIO_HD int gio_prp_plan(const struct gio_range *ranges, uint32_t n, const struct gio_dptr_caps *caps,
			struct gio_prp_sizes *plan)
{
	return gio_prp_plan_at(ranges, n, caps, 0, plan);
}

/**
 * @brief Builds the PRP data pointer (PRP1, PRP2 and lists) of a prepared SQE.
 * @param sqe         an entry filled by a `gio_prep_*` encoder; receives DPTR and PSDT (00b).
 * @param ranges      the ranges in transfer order; their total must equal the command's size.
 * @param n           how many, at least 1.
 * @param caps        the controller's rules.
 * @param list        CPU-visible pointer to list memory, or NULL when the plan needs none.
 * @param list_addr   bus address of @p list as the controller sees it, 8-byte aligned; PRP2
 *                    receives it. The list's later pages, if it needs any, follow contiguously
 *                    in @p list from the next page boundary of @p list_addr.
 * @param list_bytes  bytes available at @p list.
 * @return the bytes of list memory used (0 when PRP1/PRP2 suffice; else
 *         gio_prp_plan_at()'s `list_bytes`: 8 per entry, chain pointers included), or
 *   - the errors of gio_prp_plan_at() (a misaligned @p list_addr among them);
 *   - `-EINVAL`: a list is needed and @p list is NULL;
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
	uint64_t e = 0, slot = 0, left = 0, prp2 = 0;
	uint32_t i;
	int rc = gio_prp_plan_at(ranges, n, caps, list_addr, &plan);

	if (rc)
		return rc;
	if (plan.list_pages != 0) {
		if (list == NULL)
			return -EINVAL;
		if (list_bytes < plan.list_bytes)
			return -ENOSPC;
		if (plan.list_bytes > 0x7fffffffull)
			return -E2BIG;
		left = (pg - (list_addr & mask)) / GIO_PRP_ENTRY_BYTES; /* slots left in this list page */
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
				if (left == 1 && e + 1 < plan.npages) {
					/* More than this entry to come: the page's last slot chains to the
					 * next page, which starts right after it. */
					list[slot] = list_addr + (slot + 1) * GIO_PRP_ENTRY_BYTES;
					slot++;
					left = per_page;
				}
				list[slot++] = a;
				left--;
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
 * @brief PRP list bytes for one object of @p obj_bytes starting on a page boundary, a whole page
 *        per list page.
 * @param obj_bytes   object size.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @return whole list pages (0 when PRP1/PRP2 suffice):
 *         `gio_prp_object_alloc_bytes(obj_bytes, page_bytes, page_bytes)`.
 *
 * Pure; any thread, host or device. gio_prp_object_alloc_bytes() gives the figures for lists
 * in Linux's 256-byte chunks and for exact lists.
 */
GIO_HD uint64_t gio_prp_object_bytes(uint64_t obj_bytes, uint32_t page_bytes)
{
	const uint64_t npages = (obj_bytes + page_bytes - 1) / page_bytes;
	return gio_prp_list_pages(npages, page_bytes) * page_bytes;
}

/**
 * @brief PRP list bytes for one object of @p obj_bytes starting on a page boundary, as an
 *        allocator of @p chunk_bytes chunks sets them aside.
 * @param obj_bytes    object size.
 * @param page_bytes   memory page size, a power of two >= 4096.
 * @param chunk_bytes  #GIO_PRP_CHUNK_EXACT, #GIO_PRP_CHUNK_LINUX, @p page_bytes, or another
 *                     chunk size, as gio_prp_list_alloc_bytes() takes it.
 * @return `gio_prp_list_alloc_bytes(pages of the object, page_bytes, chunk_bytes)`; 0 when
 *         PRP1/PRP2 suffice.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_object_alloc_bytes(uint64_t obj_bytes, uint32_t page_bytes, uint32_t chunk_bytes)
{
	const uint64_t npages = (obj_bytes + page_bytes - 1) / page_bytes;
	return gio_prp_list_alloc_bytes(npages, page_bytes, chunk_bytes);
}

/**
 * @brief PRP list bytes for a pool of page-aligned objects, each read by one command, a whole
 *        page per list page.
 * @param objects     number of objects.
 * @param obj_bytes   bytes per object.
 * @param page_bytes  memory page size, a power of two >= 4096.
 * @return `objects * gio_prp_object_bytes(obj_bytes, page_bytes)`: the PRP counterpart of
 *         gio_sgl_pool_bytes() when every list takes a page.
 *
 * Pure; any thread, host or device. gio_prp_pool_alloc_bytes() gives the other figures.
 */
GIO_HD uint64_t gio_prp_pool_bytes(uint64_t objects, uint64_t obj_bytes, uint32_t page_bytes)
{
	return objects * gio_prp_object_bytes(obj_bytes, page_bytes);
}

/**
 * @brief PRP list bytes for a pool of page-aligned objects, each read by one command, as an
 *        allocator of @p chunk_bytes chunks sets them aside.
 * @param objects      number of objects.
 * @param obj_bytes    bytes per object.
 * @param page_bytes   memory page size, a power of two >= 4096.
 * @param chunk_bytes  #GIO_PRP_CHUNK_EXACT, #GIO_PRP_CHUNK_LINUX, @p page_bytes, or another
 *                     chunk size, as gio_prp_list_alloc_bytes() takes it.
 * @return `objects * gio_prp_object_alloc_bytes(obj_bytes, page_bytes, chunk_bytes)`.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_prp_pool_alloc_bytes(uint64_t objects, uint64_t obj_bytes, uint32_t page_bytes,
					 uint32_t chunk_bytes)
{
	return objects * gio_prp_object_alloc_bytes(obj_bytes, page_bytes, chunk_bytes);
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_PRP_BUILD_H */
