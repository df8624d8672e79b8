/* IOVA allocation for the VFIO backend: pure, so it is tested on its own (tests/test_iova.cpp).
 * Not installed, not part of the API. */
#ifndef GIOURING_SRC_IOVA_H
#define GIOURING_SRC_IOVA_H

#include <errno.h>
#include <stdint.h>

/* One usable IOVA range, inclusive end (as VFIO reports it). */
struct gio__iova_range {
	uint64_t start, end;
};

/* Free extents at most. Freed space merges with its neighbours, so k live allocations leave at
 * most k + 16 extents: the region table (1024 entries) stays well below this. */
#define GIO__IOVA_MAX_EXTENTS 2048u

/* The free IOVA space: sorted, disjoint, inclusive extents inside the IOMMU's usable ranges.
 * Allocation is first fit from the lowest address, and unregistration gives space back, so a
 * context that maps and unmaps without end (a long-running engine) never runs out: the kernel
 * flushes the IOTLB when it unmaps (VFIO_IOMMU_UNMAP_DMA, IOMMU_IOAS_UNMAP), so an IOVA may be
 * reused as soon as its unmap returned. */
struct gio__iova_space {
	struct gio__iova_range free[GIO__IOVA_MAX_EXTENTS];
	uint32_t n;
};

/* Starts the space above `floor` (IOVA 0 stays unmapped so a zero data pointer faults visibly);
 * the first 16 usable ranges are taken. */
static inline void gio__iova_init(struct gio__iova_space *s, const struct gio__iova_range *r, uint32_t n,
				  uint64_t floor)
{
	uint32_t i;
	s->n = 0;
	for (i = 0; i < n && s->n < 16; i++) {
		const uint64_t start = r[i].start > floor ? r[i].start : floor;
		if (r[i].end >= start) {
			s->free[s->n].start = start;
			s->free[s->n].end = r[i].end;
			s->n++;
		}
	}
}

/* Removes extent i (k = 0) or makes room for one more before it (k = 1). */
static inline void gio__iova_shift(struct gio__iova_space *s, uint32_t i, int k)
{
	uint32_t j;
	if (k) {
		for (j = s->n; j > i; j--)
			s->free[j] = s->free[j - 1];
		s->n++;
	} else {
		for (j = i; j + 1 < s->n; j++)
			s->free[j] = s->free[j + 1];
		s->n--;
	}
}

/* Takes `len` bytes (a multiple of `align`, a power of two) aligned to `align`, wholly inside one
 * usable range, at the lowest address that fits. Returns 0 and the IOVA in *iova, -EINVAL for a
 * bad length or alignment, or -ENOSPC when no free extent has room (or the only fit would split
 * an extent in two with the extent table full). */
static inline int gio__iova_alloc(struct gio__iova_space *s, uint64_t len, uint64_t align, uint64_t *iova)
{
	uint32_t i;
	if (len == 0 || align == 0 || (align & (align - 1)) || (len & (align - 1)))
		return -EINVAL;
	for (i = 0; i < s->n; i++) {
		struct gio__iova_range *f = &s->free[i];
		uint64_t a = f->start;
		int left, right;
		if (a & (align - 1)) {
			if (a + (align - 1) < a)
				continue;
			a = (a + (align - 1)) & ~(align - 1);
		}
		/* [a, a + len - 1] inside [start, end], without overflow */
		if (a > f->end || len - 1 > f->end - a)
			continue;
		left = a > f->start;
		right = len - 1 < f->end - a;
		if (left && right) {
			if (s->n == GIO__IOVA_MAX_EXTENTS)
				continue;
			gio__iova_shift(s, i + 1, 1);
			s->free[i + 1].start = a + len;
			s->free[i + 1].end = s->free[i].end;
			s->free[i].end = a - 1;
		} else if (left) {
			f->end = a - 1;
		} else if (right) {
			f->start = a + len;
		} else {
			gio__iova_shift(s, i, 0);
		}
		*iova = a;
		return 0;
	}
	return -ENOSPC;
}

/* Gives [iova, iova + len) back. Returns 0, -EINVAL when the range is empty, wraps, or overlaps
 * free space (freed twice, or never handed out), or -ENOSPC when it merges with no neighbour and
 * the extent table is full: the range is then lost to this space (a bounded leak; it cannot
 * happen below GIO__IOVA_MAX_EXTENTS - 16 live allocations). */
static inline int gio__iova_free(struct gio__iova_space *s, uint64_t iova, uint64_t len)
{
	const uint64_t last = iova + len - 1;
	uint32_t i = 0;
	int to_prev, to_next;
	if (len == 0 || last < iova)
		return -EINVAL;
	while (i < s->n && s->free[i].start <= iova)
		i++;
	/* free[i - 1] starts at or below iova, free[i] above it */
	if ((i > 0 && s->free[i - 1].end >= iova) || (i < s->n && s->free[i].start <= last))
		return -EINVAL;
	to_prev = i > 0 && s->free[i - 1].end + 1 == iova;
	to_next = i < s->n && last + 1 == s->free[i].start;
	if (to_prev && to_next) {
		s->free[i - 1].end = s->free[i].end;
		gio__iova_shift(s, i, 0);
	} else if (to_prev) {
		s->free[i - 1].end = last;
	} else if (to_next) {
		s->free[i].start = iova;
	} else {
		if (s->n == GIO__IOVA_MAX_EXTENTS)
			return -ENOSPC;
		gio__iova_shift(s, i, 1);
		s->free[i].start = iova;
		s->free[i].end = last;
	}
	return 0;
}

#endif
