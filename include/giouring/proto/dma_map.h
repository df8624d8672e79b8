/**
 * @file giouring/proto/dma_map.h
 * @brief Registered DMA regions: how a target turns bus addresses into pointers it can use.
 *
 * A software target (and the walkers that read SGL segments and PRP lists) sees only bus
 * addresses in commands. A region table says which bus ranges were registered and where each
 * one lives for the code that serves them (host virtual address or device pointer). An address
 * outside every region is refused: no data moves there.
 */
#ifndef GIOURING_TARGET_DMA_MAP_H
#define GIOURING_TARGET_DMA_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "../ring/ordering.h"

GIO_EXTERN_C_BEGIN

/** @brief One registered range of bus addresses. */
struct gio_dma_region {
	uint64_t addr; /**< First bus address. */
	uint64_t len;  /**< Length in bytes. */
	void *ptr;     /**< Where the serving code reaches `addr` (host or device pointer). */
};

/**
 * @brief A table of registered regions (not owned; the regions must not overlap).
 *
 * It may grow while others read it: write the new region, then publish the larger count with
 * gio_store_release(); readers load the count with an acquire (gio_dma_map_find() does).
 */
struct gio_dma_map {
	const struct gio_dma_region *regions; /**< The regions. */
	uint32_t count;                       /**< How many. */
};

/* Whether [addr, addr + len) lies wholly inside region r (len > 0; the range does not wrap). */
GIO_HD int gio__dma_region_holds(const struct gio_dma_region *r, uint64_t addr, uint64_t len)
{
	return addr >= r->addr && addr - r->addr <= r->len && len <= r->len - (addr - r->addr);
}

/* The first of regions[0, n) that holds [addr, addr + len) wholly (len 0 as 1), or NULL. */
GIO_HD const struct gio_dma_region *gio__dma_map_scan(const struct gio_dma_region *regions, uint32_t n, uint64_t addr,
						       uint64_t len)
{
	uint32_t i;
	if (len == 0)
		len = 1;
	if (addr + len < addr)
		return NULL;
	for (i = 0; i < n; i++)
		if (gio__dma_region_holds(&regions[i], addr, len))
			return &regions[i];
	return NULL;
}

/**
 * @brief The registered region that holds a bus range wholly.
 * @param map   the region table.
 * @param addr  first bus address of the range.
 * @param len   its length in bytes; 0 is treated as 1 (the address itself must be registered).
 * @return the region, or NULL when the range wraps or is not wholly inside a single region.
 *
 * Pure; any thread, host or device. Linear in the number of regions.
 */
GIO_HD const struct gio_dma_region *gio_dma_map_region(const struct gio_dma_map *map, uint64_t addr, uint64_t len)
{
	/* Acquire: pairs with the registrar's release of the count. */
	return gio__dma_map_scan(map->regions, gio_load_acquire(&map->count), addr, len);
}

/**
 * @brief gio_dma_map_region() on a table that nothing grows while it is read (a private copy,
 * such as a GPU executor warp's in shared memory): its count is read plainly.
 * @param map   the region table.
 * @param addr  first bus address of the range.
 * @param len   its length in bytes; 0 is treated as 1.
 * @return as gio_dma_map_region().
 *
 * Pure; any thread, host or device. On the GPU the acquire of a shared table's count is a
 * system-scope load that also invalidates the SM's L1 cache, once per command a GPU executor
 * checks (bench/results/2026-12-06-cmdrate-exec.md, measured with the executor's other changes).
 */
GIO_HD const struct gio_dma_region *gio_dma_map_region_fixed(const struct gio_dma_map *map, uint64_t addr,
							      uint64_t len)
{
	return gio__dma_map_scan(map->regions, map->count, addr, len);
}

/* The pointer for bus address addr inside region r (a region that holds it), or NULL for no region. */
GIO_HD void *gio__dma_region_ptr(const struct gio_dma_region *r, uint64_t addr)
{
	return r ? (char *)r->ptr + (addr - r->addr) : NULL;
}

/**
 * @brief Pointer to a bus range that lies wholly inside one registered region.
 * @param map   the region table.
 * @param addr  first bus address of the range.
 * @param len   its length in bytes; 0 is treated as 1 (the address itself must be registered).
 * @return the pointer corresponding to @p addr, or NULL when the range wraps or is not wholly
 *         inside a single region.
 *
 * Pure; any thread, host or device. Linear in the number of regions.
 */
GIO_HD void *gio_dma_map_find(const struct gio_dma_map *map, uint64_t addr, uint64_t len)
{
	return gio__dma_region_ptr(gio_dma_map_region(map, addr, len), addr);
}

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_DMA_MAP_H */
