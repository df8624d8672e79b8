/* Pools described from torch tensors (giouring/pool.py): the library's struct gio_kv_pool, and
 * the check whose faults become messages that name the dimensions and layers involved. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gpy.h"

uint32_t gpy_pool_desc_size(void)
{
	return (uint32_t)sizeof(struct gpy_pool_desc);
}

static uint64_t nbases(const struct gpy_pool_desc *d)
{
	if (d->base_mode == GIO_KV_BASE_LAYER)
		return d->extent[GIO_KV_LAYER];
	if (d->base_mode == GIO_KV_BASE_LAYER_PART)
		return (uint64_t)d->extent[GIO_KV_LAYER] * d->extent[GIO_KV_PART];
	return 0;
}

int gpy_pool_from_desc(const struct gpy_pool_desc *d, struct gio_kv_pool *pool, uint64_t *bases)
{
	uint64_t i;
	memset(pool, 0, sizeof(*pool));
	pool->base_mode = d->base_mode;
	pool->elem_bytes = d->elem_bytes;
	memcpy(pool->extent, d->extent, sizeof(pool->extent));
	memcpy(pool->stride, d->stride, sizeof(pool->stride));
	if (d->base_mode == GIO_KV_BASE_ONE) {
		pool->base = d->base;
		return 0;
	}
	if (!d->bases || !bases)
		return gpy_fail(-EINVAL, "pool: no table of bases");
	for (i = 0; i < nbases(d); i++)
		bases[i] = d->bases[i];
	pool->bases = bases;
	return 0;
}

/* The message of a fault of gio_kv_pool_check(). */
static int fault_message(const struct gio_kv_pool_fault *f)
{
	const char *a = gio_kv_dim_name(f->dim_a), *b = gio_kv_dim_name(f->dim_b);
	switch (f->code) {
	case GIO_KV_FAULT_ELEM_BYTES:
		return gpy_fail(-EINVAL, "pool: the element size must be 1, 2, 4, 8 or 16 bytes");
	case GIO_KV_FAULT_EXTENT:
		return gpy_fail(-EINVAL, "pool: dimension '%s' has extent 0", a);
	case GIO_KV_FAULT_BASES:
		return gpy_fail(-EINVAL, "pool: the table of bases does not fit the base mode");
	case GIO_KV_FAULT_BASE_STRIDE:
		return gpy_fail(-EINVAL, "pool: dimension '%s' is given by separate tensors but has a stride", a);
	case GIO_KV_FAULT_OVERFLOW:
		return gpy_fail(-EINVAL, "pool: the span of dimension '%s' does not fit 64 bits", a);
	case GIO_KV_FAULT_OVERLAP:
		if (f->dim_a == f->dim_b)
			return gpy_fail(-EINVAL, "pool: dimension '%s' has stride 0 (its elements overlap)", a);
		return gpy_fail(-EINVAL,
				"pool: the stride of dimension '%s' is shorter than the span of dimension '%s' inside it: "
				"elements would overlap (or the dimensions interleave, which the pool cannot describe)",
				a, b);
	case GIO_KV_FAULT_BASE_OVERLAP:
		return gpy_fail(-EINVAL, "pool: the tensors of layer %u part %u and layer %u part %u overlap", f->layer_a,
				f->part_a, f->layer_b, f->part_b);
	default:
		return gpy_fail(-EINVAL, "pool: refused (fault %u)", f->code);
	}
}

int gpy_pool_check(const struct gpy_pool_desc *d, uint64_t *object_bytes, uint64_t *signature, uint32_t *nruns)
{
	uint64_t bases[2 * 4096];
	struct gio_kv_pool pool;
	struct gio_kv_pool_fault f;
	struct gio_kv_runs runs;
	int rc;
	gpy_clear_error();
	if (!d || d->base_mode > GIO_KV_BASE_LAYER_PART)
		return gpy_fail(-EINVAL, "pool: no description, or an unknown base mode");
	if (nbases(d) > sizeof(bases) / sizeof(bases[0]))
		return gpy_fail(-EINVAL, "pool: more than %zu tensors", sizeof(bases) / sizeof(bases[0]));
	if ((rc = gpy_pool_from_desc(d, &pool, bases)) != 0)
		return rc;
	if (gio_kv_pool_check(&pool, &f) != 0)
		return fault_message(&f);
	if ((rc = gio_kv_pool_runs(&pool, &runs)) != 0)
		return gpy_fail(rc, "pool: an object has more than 2^32 - 1 contiguous runs");
	if (object_bytes)
		*object_bytes = runs.object_bytes;
	if (signature)
		*signature = gio_kv_pool_signature(&pool, &runs);
	if (nruns)
		*nruns = runs.nruns;
	return 0;
}
