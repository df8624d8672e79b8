/**
 * @file giouring/kv/bus.h
 * @brief A pool's bus addresses: the pool a P2P table is built from (giouring/kv/layer.cuh,
 *        giouring/kv/pool.h), its bases translated through the memory registered with a
 *        context or a GPU-executed target. A pool not inside registered memory is refused by
 *        name, before any command could carry an address the controller cannot reach.
 *
 * Host library (giouring; gio_kv_pool_bus_gpu(): giouring::gpu). Any host thread.
 */
#ifndef GIOURING_KV_BUS_H
#define GIOURING_KV_BUS_H

#include <stdint.h>

#include "../config.h"
#include "../proto/dma_map.h"
#include "pool.h"

GIO_EXTERN_C_BEGIN

struct gio_ctx;
struct gio_gpu_target;

/**
 * @brief Translates a pool through a table of registered regions.
 * @param regions  the regions (each `ptr` the engine's address, `addr` its bus address).
 * @param n        how many.
 * @param who      what registered them, for messages ("context", say).
 * @param pool     the pool, its bases the engine's pointers (host or device memory).
 * @param bases    receives the translated table of bases where the pool has one
 *                 (GIO_KV_BASE_LAYER: layers entries; GIO_KV_BASE_LAYER_PART: layers x parts);
 *                 NULL for GIO_KV_BASE_ONE. @p bus points at it.
 * @param bus      receives the pool with bus addresses.
 * @return 0, or `-EINVAL` (gio_last_error() names it): the pool is invalid (its fault), a table
 *         of bases is needed and @p bases is NULL, or some base's span (the bytes from it to
 *         its last element) is not inside one registered region: the message names the layer
 *         and part of that base, its address and span.
 */
int gio_kv_pool_bus_map(const struct gio_dma_region *regions, uint32_t n, const char *who,
			const struct gio_kv_pool *pool, uint64_t *bases, struct gio_kv_pool *bus);

/**
 * @brief Translates a pool through the memory registered with a context (gio_ctx_register(),
 * gio_ctx_register_device(), ...): the pool its P2P table for that controller is built from.
 * @param ctx    the context.
 * @param pool   the pool.
 * @param bases  as gio_kv_pool_bus_map().
 * @param bus    receives the pool with the context's bus addresses.
 * @return as gio_kv_pool_bus_map(); `-EINVAL` for NULL arguments.
 */
int gio_kv_pool_bus(struct gio_ctx *ctx, const struct gio_kv_pool *pool, uint64_t *bases, struct gio_kv_pool *bus);

/**
 * @brief Translates a pool through the memory registered with a GPU-executed target
 * (gio_gpu_target_register()).
 * @param g      the target.
 * @param pool   the pool.
 * @param bases  as gio_kv_pool_bus_map().
 * @param bus    receives the pool with the target's bus addresses.
 * @return as gio_kv_pool_bus_map(); `-EINVAL` for NULL arguments.
 */
int gio_kv_pool_bus_gpu(struct gio_gpu_target *g, const struct gio_kv_pool *pool, uint64_t *bases,
			struct gio_kv_pool *bus);

GIO_EXTERN_C_END

#endif /* GIOURING_KV_BUS_H */
