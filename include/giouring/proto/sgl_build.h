/**
 * @file giouring/proto/sgl_build.h
 * @brief SGL builders: the data pointer of a command from one or more memory ranges.
 *
 * - One range (after coalescing): one SGL Data Block descriptor in DPTR, no extra memory.
 *   This is the fast path of the KV store, where every object is one contiguous tensor.
 * - Several ranges: DPTR holds a Last Segment descriptor pointing to an array of Data Block
 *   descriptors in caller-provided memory; when a segment may hold at most
 *   gio_dptr_caps::seg_max_descs descriptors, segments are chained (each but the last ends
 *   with a Segment, or for the one before the last a Last Segment, descriptor).
 *
 * Every builder validates all input before it writes anything: on failure the SQE and the
 * segment memory are untouched.
 */
#ifndef GIOURING_PROTO_SGL_BUILD_H
#define GIOURING_PROTO_SGL_BUILD_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "dptr.h"
#include "../nvme/sgl.h"
#include "../nvme/sqe.h"

GIO_EXTERN_C_BEGIN

/** @brief What an SGL for a list of ranges needs, as computed by gio_sgl_plan(). */
struct gio_sgl_sizes {
	uint64_t xfer_bytes; /**< Sum of the range lengths. */
	uint32_t ndata;      /**< Data Block descriptors after coalescing adjacent ranges. */
	uint32_t nsegments;  /**< SGL segments in caller memory (0 when DPTR alone suffices). */
	uint32_t seg_bytes;  /**< Bytes of segment memory needed (16 per descriptor). */
};

/**
 * @brief Writes one SGL descriptor.
 * @param d     the descriptor.
 * @param addr  its Address field.
 * @param len   its Length field.
 * @param type  GIO_SGL_TYPE_DATA_BLOCK, _BIT_BUCKET, _SEGMENT or _LAST_SEGMENT (sub type Address).
 *
 * Pure; any thread, host or device. No checks: the builders below check, and a P2P table may
 * call this once per object at start-up.
 */
GIO_HD void gio_sgl_set(struct gio_sgl_desc *d, uint64_t addr, uint32_t len, uint32_t type)
{
	d->addr = addr;
	d->len = len;
	d->rsvd[0] = 0;
	d->rsvd[1] = 0;
	d->rsvd[2] = 0;
	d->id = GIO_SGL_ID(type, GIO_SGL_SUBTYPE_ADDRESS);
}

/**
 * @brief Makes a prepared SQE transfer one contiguous buffer through an SGL Data Block in DPTR.
 * @param sqe   an entry filled by a `gio_prep_*` encoder.
 * @param addr  bus address of the buffer.
 * @param len   its length in bytes; must equal the command's transfer size.
 *
 * Pure; any thread, host or device. The unchecked fast path: the caller has validated the
 * buffer against the controller's rules once (for example when it built its P2P table with
 * gio_sgl_build()); use gio_sgl_build() for anything else.
 */
GIO_HD void gio_sqe_set_sgl_data(struct gio_sqe *sqe, uint64_t addr, uint32_t len)
{
	gio_sgl_set(&sqe->dptr.sgl, addr, len, GIO_SGL_TYPE_DATA_BLOCK);
	gio_sqe_set_psdt(sqe, GIO_PSDT_SGL_MPTR);
}

/**
 * @brief Validates ranges for an SGL and computes the memory and descriptors it needs.
 * @param ranges  the ranges in transfer order.
 * @param n       how many, at least 1.
 * @param caps    the controller's rules.
 * @param plan    receives the plan; untouched on failure.
 * @return 0, or
 *   - `-EOPNOTSUPP`: the controller does not support SGLs (SGLS support bits are 0);
 *   - `-EINVAL`: @p n is 0, a range is empty or wraps the 64-bit address space, or (SGLS support
 *     value 2) an address or length is not a multiple of 4, or chaining is needed while
 *     gio_dptr_caps::seg_max_descs is 1;
 *   - `-E2BIG`: the total exceeds gio_dptr_caps::max_xfer_bytes, or the chain needs more
 *     segments than gio_dptr_max_segments() allows, or more than 2^31 - 1 bytes of segments.
 *
 * Pure; any thread, host or device. Adjacent ranges are coalesced with gio_range_adjacent().
 */
GIO_HD int gio_sgl_plan(const struct gio_range *ranges, uint32_t n, const struct gio_dptr_caps *caps,
			struct gio_sgl_sizes *plan)
{
	const uint32_t support = gio_dptr_sgl_support(caps);
	const uint64_t m = caps->seg_max_descs;
	uint64_t total = 0, ndata = 0, nseg = 0, ndesc = 0;
	struct gio_range cur = {0, 0}; /* the coalesced range being built */
	uint32_t i;

	if (support == GIO_SGLS_SUPPORT_NONE)
		return -EOPNOTSUPP;
	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		const struct gio_range *r = &ranges[i];
		if (r->len == 0 || r->addr + r->len < r->addr)
			return -EINVAL;
		if (support == GIO_SGLS_SUPPORT_DWORD && ((r->addr | r->len) & 3u))
			return -EINVAL;
		total += r->len;
		if (i > 0 && gio_range_adjacent(&cur, r)) {
			cur.len += r->len;
		} else {
			ndata++;
			cur = *r;
		}
	}
	if (caps->max_xfer_bytes != 0 && total > caps->max_xfer_bytes)
		return -E2BIG;
	if (ndata > 1) {
		if (m == 0 || ndata <= m) {
			nseg = 1;
		} else if (m < 2) {
			return -EINVAL;
		} else {
			/* Every segment but the last gives one slot to the pointer to the next. */
			nseg = 1 + (ndata - m + (m - 2)) / (m - 1);
		}
		if (nseg > gio_dptr_max_segments(caps))
			return -E2BIG;
		ndesc = ndata + nseg - 1;
		if (ndesc * GIO_SGL_DESC_BYTES > 0x7fffffffull) /* the builder returns it as an int */
			return -E2BIG;
	}
	plan->xfer_bytes = total;
	plan->ndata = (uint32_t)ndata;
	plan->nsegments = (uint32_t)nseg;
	plan->seg_bytes = (uint32_t)(ndesc * GIO_SGL_DESC_BYTES);
	return 0;
}

/**
 * @brief Builds the SGL data pointer of a prepared SQE for a list of ranges.
 * @param sqe        an entry filled by a `gio_prep_*` encoder; receives DPTR and PSDT (01b).
 * @param ranges     the ranges in transfer order; their total must equal the command's size.
 * @param n          how many, at least 1.
 * @param caps       the controller's rules.
 * @param seg        CPU-visible pointer to segment memory, or NULL when the plan needs none.
 * @param seg_addr   bus address of @p seg as the controller sees it, 8-byte aligned (the
 *                   specification requires quadword-aligned segments).
 * @param seg_bytes  bytes available at @p seg.
 * @return the bytes of segment memory used (0 when DPTR alone holds the SGL), or
 *   - the errors of gio_sgl_plan();
 *   - `-EINVAL`: segment memory is needed and @p seg is NULL or @p seg_addr is not 8-byte aligned;
 *   - `-ENOSPC`: @p seg_bytes is smaller than the plan needs.
 *   On any error neither @p sqe nor the segment memory has been written.
 *
 * Pure; any thread, host or device. The segment memory must stay untouched until the command
 * completes.
 */
GIO_HD int gio_sgl_build(struct gio_sqe *sqe, const struct gio_range *ranges, uint32_t n,
			 const struct gio_dptr_caps *caps, struct gio_sgl_desc *seg, uint64_t seg_addr,
			 uint32_t seg_bytes)
{
	struct gio_sgl_sizes plan;
	uint64_t m, chained_data, j, cur_addr = 0;
	uint32_t i, cur_len = 0;
	int rc = gio_sgl_plan(ranges, n, caps, &plan);

	if (rc)
		return rc;
	if (plan.ndata == 1) {
		gio_sqe_set_sgl_data(sqe, ranges[0].addr, (uint32_t)plan.xfer_bytes);
		return 0;
	}
	if (seg == NULL || (seg_addr & 7u))
		return -EINVAL;
	if (seg_bytes < plan.seg_bytes)
		return -ENOSPC;

	/* m = descriptors per full segment; data descriptors before the last segment. */
	m = plan.nsegments == 1 ? plan.ndata : caps->seg_max_descs;
	chained_data = (uint64_t)(plan.nsegments - 1) * (m - 1);
	for (i = 0, j = 0; i <= n; i++) {
		if (i < n && i > 0) {
			const struct gio_range cur = {cur_addr, cur_len};
			if (gio_range_adjacent(&cur, &ranges[i])) {
				cur_len += ranges[i].len;
				continue;
			}
		}
		if (i > 0) { /* emit the coalesced range that ended at i - 1 as data descriptor j */
			uint64_t slot = j < chained_data ? (j / (m - 1)) * m + j % (m - 1)
							 : (plan.nsegments - 1) * m + (j - chained_data);
			gio_sgl_set(&seg[slot], cur_addr, cur_len, GIO_SGL_TYPE_DATA_BLOCK);
			j++;
		}
		if (i < n) {
			cur_addr = ranges[i].addr;
			cur_len = ranges[i].len;
		}
	}
	for (i = 0; i + 1 < plan.nsegments; i++) {
		const int next_is_last = i + 2 == plan.nsegments;
		const uint64_t next_descs = next_is_last ? plan.ndata - chained_data : m;
		gio_sgl_set(&seg[(uint64_t)i * m + m - 1], seg_addr + (uint64_t)(i + 1) * m * GIO_SGL_DESC_BYTES,
			    (uint32_t)(next_descs * GIO_SGL_DESC_BYTES),
			    next_is_last ? GIO_SGL_TYPE_LAST_SEGMENT : GIO_SGL_TYPE_SEGMENT);
	}
	gio_sgl_set(&sqe->dptr.sgl, seg_addr,
		    (uint32_t)((plan.nsegments == 1 ? plan.ndata : m) * GIO_SGL_DESC_BYTES),
		    plan.nsegments == 1 ? GIO_SGL_TYPE_LAST_SEGMENT : GIO_SGL_TYPE_SEGMENT);
	gio_sqe_set_psdt(sqe, GIO_PSDT_SGL_MPTR);
	return (int)plan.seg_bytes;
}

/**
 * @brief Bytes of SGL metadata for a pool of objects each described by one Data Block.
 * @param objects  number of objects (for the KV store: blocks x layers x 2).
 * @return `objects * 16`: one descriptor per object, whatever the object size.
 *
 * Pure; any thread, host or device. What a table of one descriptor per object costs.
 */
GIO_HD uint64_t gio_sgl_pool_bytes(uint64_t objects)
{
	return objects * GIO_SGL_DESC_BYTES;
}

GIO_EXTERN_C_END

#endif /* GIOURING_PROTO_SGL_BUILD_H */
