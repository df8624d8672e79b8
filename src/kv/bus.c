/* A pool's bus addresses (giouring/kv/bus.h): each base's span looked up in a table of
 * registered regions, and moved by that region's offset from engine to bus address. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include <giouring/kv/bus.h>
#include <giouring/ring/ordering.h>

#include "../ctx/ctx.h"
#include "../internal.h"

/* The region holding [a, a + span), or NULL. */
static const struct gio_dma_region *holder(const struct gio_dma_region *r, uint32_t n, uint64_t a, uint64_t span)
{
	uint32_t i;
	for (i = 0; i < n; i++) {
		const uint64_t p = (uint64_t)(uintptr_t)r[i].ptr;
		if (a >= p && a - p <= r[i].len && span <= r[i].len - (a - p))
			return &r[i];
	}
	return NULL;
}

static int invalid_pool(const struct gio_kv_pool_fault *f)
{
	return gio__fail(-EINVAL, "giouring: kv pool: invalid (fault %u: %s, %s; layers %u and %u, parts %u and %u)", f->code,
			 gio_kv_dim_name(f->dim_a), gio_kv_dim_name(f->dim_b), f->layer_a, f->layer_b, f->part_a, f->part_b);
}

/* As gio_kv_pool_bus_map(), over two tables (a context's host and device regions). */
static int translate(const struct gio_dma_region *r1, uint32_t n1, const struct gio_dma_region *r2, uint32_t n2,
		     const char *who, const struct gio_kv_pool *pool, uint64_t *bases, struct gio_kv_pool *bus)
{
	struct gio_kv_pool_fault f = {0};
	struct gio_kv_pool out;
	uint64_t nb, span = 0, i;
	if (!pool || !bus)
		return gio__fail(-EINVAL, "giouring: kv pool bus addresses: NULL pool");
	if (gio_kv_pool_check(pool, &f))
		return invalid_pool(&f);
	nb = gio__kv_nbases(pool);
	if (nb && !bases)
		return gio__fail(-EINVAL, "giouring: kv pool bus addresses: the pool has %llu bases and no table was given "
				 "for their bus addresses", (unsigned long long)nb);
	(void)gio__kv_check_span(pool, &span, NULL); /* the check above passed it */
	out = *pool;
	for (i = 0; i < (nb ? nb : 1); i++) {
		const uint64_t a = gio__kv_base_entry(pool, i);
		const struct gio_dma_region *h = holder(r1, n1, a, span);
		uint32_t layer = 0, part = 0;
		if (!h)
			h = holder(r2, n2, a, span);
		if (!h) {
			char which[64] = "the pool's base";
			gio__kv_fault_base(pool, i, &layer, &part);
			if (pool->base_mode == GIO_KV_BASE_LAYER)
				snprintf(which, sizeof(which), "the base of layer %u", layer);
			else if (nb)
				snprintf(which, sizeof(which), "the base of layer %u part %u", layer, part);
			return gio__fail(-EINVAL, "giouring: kv pool: %s (%#llx, %llu bytes to its last element) is not inside "
					 "memory registered with the %s: an unregistered pool",
					 which, (unsigned long long)a, (unsigned long long)span, who);
		}
		if (nb)
			bases[i] = h->addr + (a - (uint64_t)(uintptr_t)h->ptr);
		else
			out.base = h->addr + (a - (uint64_t)(uintptr_t)h->ptr);
	}
	if (nb)
		out.bases = bases;
	*bus = out;
	return 0;
}

int gio_kv_pool_bus_map(const struct gio_dma_region *regions, uint32_t n, const char *who,
			const struct gio_kv_pool *pool, uint64_t *bases, struct gio_kv_pool *bus)
{
	gio__clear_error();
	return translate(regions, n, NULL, 0, who ? who : "engine", pool, bases, bus);
}

int gio_kv_pool_bus(struct gio_ctx *ctx, const struct gio_kv_pool *pool, uint64_t *bases, struct gio_kv_pool *bus)
{
	int rc;
	gio__clear_error();
	if (!ctx)
		return gio__fail(-EINVAL, "giouring: kv pool bus addresses: NULL context");
	pthread_mutex_lock(&ctx->lock);
	rc = translate(ctx->regions, ctx->map.count, ctx->dev_regions, ctx->dev_map.count, "context", pool, bases, bus);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}
