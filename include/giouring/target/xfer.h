/**
 * @file giouring/target/xfer.h
 * @brief The data segments a command transfers, as the SGL and PRP walkers report them.
 */
#ifndef GIOURING_TARGET_XFER_H
#define GIOURING_TARGET_XFER_H

#include <stdint.h>

#include "../config.h"
#include "../nvme/cqe.h"

GIO_EXTERN_C_BEGIN

/** @brief gio_xfer_seg::flags: a bit bucket; the controller discards these bytes (reads only). */
#define GIO_XFER_BIT_BUCKET 1u

/** @brief One contiguous piece of a transfer, in transfer order. */
struct gio_xfer_seg {
	uint64_t addr;  /**< Bus address (0 for a bit bucket). */
	uint64_t len;   /**< Length in bytes. */
	uint32_t flags; /**< 0, or GIO_XFER_BIT_BUCKET. */
	uint32_t rsvd;  /**< Zero. */
};

/** @brief Caller-owned output list of a walker. */
struct gio_xfer_list {
	struct gio_xfer_seg *segs; /**< Storage for the segments. */
	uint32_t cap;              /**< Its capacity: the most segments a command may have here. */
	uint32_t n;                /**< Segments written so far. */
};

/*
 * Appends a segment, merging it into the previous one when they are contiguous and alike.
 * Returns 0, or the status a controller that cannot track more segments reports.
 */
GIO_HD uint16_t gio__xfer_push(struct gio_xfer_list *out, uint64_t addr, uint64_t len, uint32_t flags)
{
	if (out->n > 0) {
		struct gio_xfer_seg *p = &out->segs[out->n - 1];
		/* Data pieces merge only when contiguous without crossing 2^64. */
		if (p->flags == flags &&
		    (flags & GIO_XFER_BIT_BUCKET ? 1 : (p->addr + p->len == addr && addr > p->addr))) {
			p->len += len;
			return 0;
		}
	}
	if (out->n == out->cap)
		return GIO_SF(GIO_SCT_GENERIC, GIO_SC_SGL_INVALID_COUNT) | GIO_SF_DNR;
	out->segs[out->n].addr = addr;
	out->segs[out->n].len = len;
	out->segs[out->n].flags = flags;
	out->segs[out->n].rsvd = 0;
	out->n++;
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_XFER_H */
