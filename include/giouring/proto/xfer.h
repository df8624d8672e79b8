/**
 * @file giouring/proto/xfer.h
 * @brief The data segments a command transfers, as the SGL and PRP walkers report them.
 */
#ifndef GIOURING_TARGET_XFER_H
#define GIOURING_TARGET_XFER_H

#include <stdint.h>

#include "../config.h"
#include "../nvme/cqe.h"
#include "dma_map.h"

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

/* A walker's list in check mode (giouring/ring/check.h): the walk stores no segment; each data
 * piece must lie in one of the maps, and the first that does not is recorded. Marked by this
 * bit in gio_xfer_list::cap, which a real capacity never reaches; segs then points to a
 * gio__xfer_check. */
#define GIO__XFER_CHECK 0x80000000u

struct gio__xfer_check {
	const struct gio_dma_map *map[2]; /* where data may lie; map[1] may be NULL */
	uint64_t bad;                     /* the first address outside them */
	int faulted;                      /* whether one was found */
	int rsvd;
	/* The region of the last piece found: pages of one buffer share it, and the lookup is
	 * linear in the regions. */
	const struct gio_dma_region *hit;
};

/* Makes `out` a check-mode list reporting into `c`. */
GIO_HD void gio__xfer_check_list(struct gio_xfer_list *out, struct gio__xfer_check *c)
{
	c->hit = 0;
	out->segs = (struct gio_xfer_seg *)(void *)c;
	out->cap = GIO__XFER_CHECK;
	out->n = 0;
}

/* A walker found list memory (a PRP list, an SGL segment) at `addr` outside registered memory:
 * the status a DMA fault gives (Data Transfer Error, without DNR), recorded in check mode. */
GIO_HD uint16_t gio__xfer_fault(struct gio_xfer_list *out, uint64_t addr)
{
	if (out->cap & GIO__XFER_CHECK) {
		struct gio__xfer_check *c = (struct gio__xfer_check *)(void *)out->segs;
		if (!c->faulted) {
			c->bad = addr;
			c->faulted = 1;
		}
	}
	return GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
}

/*
 * Appends a segment, merging it into the previous one when they are contiguous and alike.
 * Returns 0, or the status a controller that cannot track more segments reports. In check mode
 * it checks the piece instead (Data Transfer Error for one outside the maps).
 */
GIO_HD uint16_t gio__xfer_push(struct gio_xfer_list *out, uint64_t addr, uint64_t len, uint32_t flags)
{
	if (out->cap & GIO__XFER_CHECK) {
		struct gio__xfer_check *c = (struct gio__xfer_check *)(void *)out->segs;
		const struct gio_dma_region *r;
		out->n++;
		if (flags & GIO_XFER_BIT_BUCKET || (c->hit && gio__dma_region_holds(c->hit, addr, len)))
			return 0;
		r = gio_dma_map_region(c->map[0], addr, len);
		if (!r && c->map[1])
			r = gio_dma_map_region(c->map[1], addr, len);
		if (!r)
			return gio__xfer_fault(out, addr);
		c->hit = r;
		return 0;
	}
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
