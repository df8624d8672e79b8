/**
 * @file giouring/proto/sgl_walk.h
 * @brief The SGL walker: what a controller transfers for a command's SGL, or why it refuses it.
 *
 * The controller side of giouring/proto/sgl_build.h: it follows DPTR's SGL1 descriptor through
 * Segment and Last Segment descriptors in registered memory and lists the data segments in
 * transfer order, or returns the NVMe status a controller returns for a malformed chain. The
 * software NVMe target executes commands with it; tests check the builders against it.
 *
 * Rules (NVM Express Base Specification 2.0c, "Scatter Gather List (SGL)" and the SGL status
 * codes of "Generic Command Status"; behaviour where the specification leaves a choice follows
 * QEMU's NVMe controller, the implementation giouring is conformance-tested against):
 * - SGL1 may be a Data Block, a Bit Bucket (reads, when SGLS allows), a Segment or a Last Segment.
 * - A Segment or Last Segment descriptor must have a non-zero length that is a multiple of 16,
 *   else Invalid SGL Segment Descriptor; one anywhere but in the last slot of a segment gives
 *   Invalid Number of SGL Descriptors. The segment a Last Segment points to must end with a data
 *   descriptor (else Invalid SGL Segment Descriptor); a segment ending with a data descriptor
 *   ends the SGL.
 * - Zero-length data descriptors are skipped. Other descriptor types and unknown sub types give
 *   SGL Descriptor Type Invalid; the Offset sub type gives SGL Offset Invalid.
 * - With SGLS support value 2, a Data Block's address and length must be multiples of 4, else
 *   SGL Data Block Granularity Invalid.
 * - Fewer bytes than the transfer: Data SGL Length Invalid. More (SGLS bit 18, GIO_SGLS_OVERSIZE,
 *   clear: "the SGL length shall be equal to the amount of data to be transferred"): a descriptor
 *   longer than what remains, or a non-empty descriptor after the transfer is covered, gives Data
 *   SGL Length Invalid. With GIO_SGLS_OVERSIZE the first is used in part and the rest ignored.
 *   QEMU's controller uses a longer descriptor in part even without the bit; refusing it finds
 *   the host's length bug. An address range that wraps: Data SGL Length Invalid.
 * - Segment memory outside every registered region: Data Transfer Error (without DNR, as a DMA
 *   fault would give). Every other error sets DNR.
 * - Chains are bounded: more than gio_dptr_max_segments() segments (GIO_SGL_DEFAULT_MAX_SEGMENTS
 *   when gio_dptr_caps::max_segments is 0), more than gio_dptr_caps::seg_max_descs descriptors in one segment, or more
 *   data segments than the output list holds give Invalid Number of SGL Descriptors. So loops
 *   end.
 */
#ifndef GIOURING_TARGET_SGL_WALK_H
#define GIOURING_TARGET_SGL_WALK_H

#include <stdint.h>
#include <string.h>

#include "../config.h"
#include "dma_map.h"
#include "dptr.h"
#include "../nvme/cqe.h"
#include "../nvme/identify.h"
#include "../nvme/sgl.h"
#include "../nvme/sqe.h"
#include "xfer.h"

GIO_EXTERN_C_BEGIN

/* Walker state shared by the per-descriptor steps. */
struct gio__sgl_walk {
	const struct gio_dptr_caps *caps;
	struct gio_xfer_list *out;
	uint64_t remaining;
	int is_write;
};

#define GIO__SF_DNR(sc) ((uint16_t)(GIO_SF(GIO_SCT_GENERIC, (sc)) | GIO_SF_DNR))

GIO_HD int gio__sgl_is_segment(const struct gio_sgl_desc *d)
{
	const uint32_t type = GIO_GET((uint32_t)d->id, SGL_ID_TYPE);
	return type == GIO_SGL_TYPE_SEGMENT || type == GIO_SGL_TYPE_LAST_SEGMENT;
}

GIO_HD uint16_t gio__sgl_check_subtype(const struct gio_sgl_desc *d)
{
	const uint32_t st = GIO_GET((uint32_t)d->id, SGL_ID_SUBTYPE);
	if (st == GIO_SGL_SUBTYPE_ADDRESS)
		return 0;
	return GIO__SF_DNR(st == GIO_SGL_SUBTYPE_OFFSET ? GIO_SC_SGL_INVALID_OFFSET : GIO_SC_SGL_INVALID_TYPE);
}

/* One descriptor found where data descriptors belong. */
GIO_HD uint16_t gio__sgl_walk_data(struct gio__sgl_walk *w, const struct gio_sgl_desc *d)
{
	const uint32_t type = GIO_GET((uint32_t)d->id, SGL_ID_TYPE);
	uint32_t flags = 0;
	uint64_t take;
	uint16_t st;

	switch (type) {
	case GIO_SGL_TYPE_DATA_BLOCK:
		break;
	case GIO_SGL_TYPE_BIT_BUCKET:
		if (w->is_write || !(w->caps->sgls & GIO_SGLS_BIT_BUCKET))
			return GIO__SF_DNR(GIO_SC_SGL_INVALID_TYPE);
		flags = GIO_XFER_BIT_BUCKET;
		break;
	case GIO_SGL_TYPE_SEGMENT:
	case GIO_SGL_TYPE_LAST_SEGMENT:
		return GIO__SF_DNR(GIO_SC_SGL_INVALID_COUNT);
	default:
		return GIO__SF_DNR(GIO_SC_SGL_INVALID_TYPE);
	}
	st = gio__sgl_check_subtype(d);
	if (st)
		return st;
	if (d->len == 0)
		return 0;
	if (w->remaining == 0) {
		if (w->caps->sgls & GIO_SGLS_OVERSIZE)
			return 0;
		return GIO__SF_DNR(GIO_SC_SGL_INVALID_DATA_LEN);
	}
	if (!flags) {
		if (d->addr + d->len < d->addr)
			return GIO__SF_DNR(GIO_SC_SGL_INVALID_DATA_LEN);
		if (gio_dptr_sgl_support(w->caps) == GIO_SGLS_SUPPORT_DWORD && ((d->addr | d->len) & 3u))
			return GIO__SF_DNR(GIO_SC_SGL_INVALID_GRANULARITY);
	}
	if (d->len > w->remaining && !(w->caps->sgls & GIO_SGLS_OVERSIZE))
		return GIO__SF_DNR(GIO_SC_SGL_INVALID_DATA_LEN);
	take = d->len < w->remaining ? d->len : w->remaining;
	st = gio__xfer_push(w->out, flags ? 0 : d->addr, take, flags);
	if (st)
		return st;
	w->remaining -= take;
	return 0;
}

/**
 * @brief Lists the data segments a controller transfers for a command that uses SGLs.
 * @param sqe        the command; PSDT must select SGLs (01b or 10b), SGL1 is read from DPTR.
 * @param xfer_len   bytes the command transfers (number of blocks x block size).
 * @param is_write   non-zero when data flows to the controller (Bit Buckets are then invalid).
 * @param caps       the rules the controller applies (SGLS, segment limits).
 * @param map        registered memory, through which Segment descriptors are read.
 * @param out        receives the segments (contiguous pieces merged); `out->n` is reset to 0.
 * @return 0 (Successful Completion) or an NVMe status field with the status the controller posts;
 *         see the file description for which status each malformation gets. PSDT 00b or 11b and
 *         a controller without SGL support give Invalid Field in Command. On error `out` holds
 *         what was walked before the fault.
 *
 * Pure; any thread, host or device. Bounded: see the limits in the file description.
 */
GIO_HD uint16_t gio_sgl_walk(const struct gio_sqe *sqe, uint64_t xfer_len, int is_write,
			     const struct gio_dptr_caps *caps, const struct gio_dma_map *map,
			     struct gio_xfer_list *out)
{
	struct gio__sgl_walk w;
	struct gio_sgl_desc d = sqe->dptr.sgl;
	const uint32_t psdt = gio_sqe_psdt(sqe);
	const uint32_t max_segments = gio_dptr_max_segments(caps);
	uint32_t nseg = 0;
	uint16_t st;

	out->n = 0;
	if ((psdt != GIO_PSDT_SGL_MPTR && psdt != GIO_PSDT_SGL_MSGL) ||
	    gio_dptr_sgl_support(caps) == GIO_SGLS_SUPPORT_NONE)
		return GIO__SF_DNR(GIO_SC_INVALID_FIELD);
	w.caps = caps;
	w.out = out;
	w.remaining = xfer_len;
	w.is_write = is_write;

	if (!gio__sgl_is_segment(&d)) {
		/* SGL1 is a data descriptor: it is the whole SGL. */
		st = gio__sgl_walk_data(&w, &d);
		if (st)
			return st;
	} else {
		for (;;) { /* d is a Segment or Last Segment descriptor */
			const int is_last_seg = GIO_GET((uint32_t)d.id, SGL_ID_TYPE) == GIO_SGL_TYPE_LAST_SEGMENT;
			const unsigned char *seg;
			struct gio_sgl_desc tail;
			uint64_t i, ndata, ndesc;
			int chains;

			st = gio__sgl_check_subtype(&d);
			if (st)
				return st;
			if (d.len == 0 || (d.len % GIO_SGL_DESC_BYTES) != 0)
				return GIO__SF_DNR(GIO_SC_SGL_INVALID_SEGMENT);
			ndesc = d.len / GIO_SGL_DESC_BYTES;
			if (++nseg > max_segments || (caps->seg_max_descs && ndesc > caps->seg_max_descs))
				return GIO__SF_DNR(GIO_SC_SGL_INVALID_COUNT);
			if (d.addr + d.len < d.addr)
				return GIO__SF_DNR(GIO_SC_SGL_INVALID_DATA_LEN);
			seg = (const unsigned char *)gio_dma_map_find(map, d.addr, d.len);
			if (seg == NULL)
				return gio__xfer_fault(out, d.addr);
			/* Byte copies: the walker reads segments of any alignment safely. */
			memcpy(&tail, seg + (ndesc - 1) * GIO_SGL_DESC_BYTES, sizeof(tail));
			chains = gio__sgl_is_segment(&tail);
			if (chains && is_last_seg)
				return GIO__SF_DNR(GIO_SC_SGL_INVALID_SEGMENT);
			ndata = chains ? ndesc - 1 : ndesc;
			for (i = 0; i < ndata; i++) {
				struct gio_sgl_desc e;
				memcpy(&e, seg + i * GIO_SGL_DESC_BYTES, sizeof(e));
				st = gio__sgl_walk_data(&w, &e);
				if (st)
					return st;
			}
			if (!chains)
				break;
			d = tail;
		}
	}
	if (w.remaining != 0)
		return GIO__SF_DNR(GIO_SC_SGL_INVALID_DATA_LEN);
	return 0;
}

/**
 * @brief The walker's answer for the most common SGL, decided from DPTR alone: SGL1 a single
 *        Data Block (address sub type) of exactly the transfer's length.
 * @param sqe       the command.
 * @param xfer_len  bytes the command transfers.
 * @param caps      the controller's rules.
 * @param seg       receives the one segment where it applies.
 * @return 1 when it applies: gio_sgl_walk() would then return 0 with @p seg as its only segment
 *         (given room for one); 0 otherwise, and the caller walks (nothing is refused here).
 *
 * Pure; any thread, host or device. An executor checks each command with it first: the walk
 * through an output list in memory costs a GPU executor more than the check itself.
 */
GIO_HD int gio_sgl_walk_one(const struct gio_sqe *sqe, uint64_t xfer_len, const struct gio_dptr_caps *caps,
			    struct gio_xfer_seg *seg)
{
	const struct gio_sgl_desc *d = &sqe->dptr.sgl;
	const uint32_t psdt = gio_sqe_psdt(sqe), support = gio_dptr_sgl_support(caps);
	if ((psdt != GIO_PSDT_SGL_MPTR && psdt != GIO_PSDT_SGL_MSGL) || support == GIO_SGLS_SUPPORT_NONE)
		return 0;
	/* Type Data Block, sub type Address: both fields 0. */
	if (d->id != (GIO_SGL_TYPE_DATA_BLOCK << GIO_SGL_ID_TYPE_SHIFT | GIO_SGL_SUBTYPE_ADDRESS) || xfer_len == 0 ||
	    d->len != xfer_len || d->addr + d->len < d->addr)
		return 0;
	if (support == GIO_SGLS_SUPPORT_DWORD && ((d->addr | d->len) & 3u))
		return 0;
	seg->addr = d->addr;
	seg->len = xfer_len;
	seg->flags = 0;
	seg->rsvd = 0;
	return 1;
}

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_SGL_WALK_H */
