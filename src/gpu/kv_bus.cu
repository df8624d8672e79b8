// A pool's bus addresses through a GPU-executed target's registered regions
// (gio_kv_pool_bus_gpu(), giouring/kv/bus.h).
#include <cerrno>

#include <giouring/kv/bus.h>
#include <giouring/target/gpu_target.h>

#include "../internal.h"

int gio_kv_pool_bus_gpu(struct gio_gpu_target *g, const struct gio_kv_pool *pool, uint64_t *bases, struct gio_kv_pool *bus)
{
	if (!g)
		return gio__fail(-EINVAL, "giouring: kv pool bus addresses: NULL GPU target");
	return gio_kv_pool_bus_map(g->regions_host, g->map_host.count, "GPU target", pool, bases, bus);
}
