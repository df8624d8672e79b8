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

/* A bump allocator over the IOMMU's usable ranges. IOVAs are never reused: a context maps a
 * bounded amount of memory once and unmaps it all at close, and the 39-bit space of a virtual
 * Intel IOMMU (512 GiB) is far larger than what one context pins. */
struct gio__iova_space {
	struct gio__iova_range ranges[16];
	uint32_t n;
	uint64_t next; /* first free IOVA */
};

/* Starts the space above `floor` (IOVA 0 stays unmapped so a zero data pointer faults visibly). */
static inline void gio__iova_init(struct gio__iova_space *s, const struct gio__iova_range *r, uint32_t n,
				  uint64_t floor)
{
	uint32_t i;
	s->n = 0;
	for (i = 0; i < n && s->n < sizeof(s->ranges) / sizeof(s->ranges[0]); i++)
		if (r[i].end >= r[i].start)
			s->ranges[s->n++] = r[i];
	s->next = floor;
}

/* Takes `len` bytes (a multiple of `align`, a power of two) aligned to `align`, wholly inside one
 * usable range. Returns 0 and the IOVA in *iova, -EINVAL for a bad length or alignment, or
 * -ENOSPC when no range has room. */
static inline int gio__iova_alloc(struct gio__iova_space *s, uint64_t len, uint64_t align, uint64_t *iova)
{
	uint32_t i;
	if (len == 0 || align == 0 || (align & (align - 1)) || (len & (align - 1)))
		return -EINVAL;
	for (i = 0; i < s->n; i++) {
		const struct gio__iova_range *r = &s->ranges[i];
		uint64_t a = s->next > r->start ? s->next : r->start;
		if (a > r->end)
			continue;
		if (a & (align - 1)) {
			if (a + (align - 1) < a)
				continue;
			a = (a + (align - 1)) & ~(align - 1);
		}
		/* [a, a + len - 1] inside [start, end], without overflow */
		if (a < r->start || a > r->end || len - 1 > r->end - a)
			continue;
		*iova = a;
		s->next = a + len; /* may wrap to 0 only at the very top: then nothing is left */
		if (s->next == 0)
			s->n = 0;
		return 0;
	}
	return -ENOSPC;
}

#endif
