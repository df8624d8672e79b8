/* Checked submission for a context's queue pairs (URI check=1; giouring/ring/check.h): what each
 * queue pair checks its commands against. CPU producers read the context's own region tables;
 * GPU producers (pinned and HBM queue pairs) cannot, so they get a mirror of the tables in
 * pinned host memory, rewritten under the context's lock whenever a region comes or goes. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "../cuda/cudart.h"
#include "../cuda/pinned.h"
#include "ctx.h"

/* What GPU producers check against: their own gio_qp_check over mirrored tables. Host regions
 * the GPU can read (pinned or registered with CUDA) go to `map`, where PRP lists and SGL segments
 * may be read; the rest, and device regions, to `data_map` (data only: a list there is refused,
 * since a GPU thread cannot read pageable memory, and the executor cannot read GPU memory). */
struct gio__check_mirror {
	struct gio_qp_check ck;
	struct gio_dma_map map, data_map;
	struct gio_dma_region readable[GIO__MAX_REGIONS];
	struct gio_dma_region data_only[2 * GIO__MAX_REGIONS];
};

void gio__check_setup(struct gio_ctx *c)
{
	c->check.map = &c->map;
	c->check.data_map = &c->dev_map;
	c->check.caps = c->caps;
	/* The controller's own SGL rules, also where dptr=prp keeps the builders to PRPs: an SGL
	 * command the controller would execute is checked like any other. */
	c->check.caps.sgls = c->info.sgls;
	c->check.lba_shift = (uint32_t)__builtin_ctz(c->info.lba_bytes);
}

/* Whether a GPU thread may read host memory at ptr (pinned, or registered with CUDA). */
static int gpu_readable(const struct gio__cudart *rt, const void *ptr)
{
	const int t = gio__cuda_memory_type(rt, ptr);
	return t >= 0 && t != GIO__CUDA_MEMORY_TYPE_UNREGISTERED;
}

void gio__check_sync_locked(struct gio_ctx *c)
{
	struct gio__check_mirror *m = c->gpu_check;
	const struct gio__cudart *rt = gio__cudart();
	uint32_t i, nr = 0, nd = 0;
	if (!m)
		return;
	/* Counts to zero first: a GPU thread checking meanwhile sees fewer regions (it may refuse a
	 * command whose region comes or goes right now), never a half-written entry. */
	gio_store_release(&m->map.count, 0);
	gio_store_release(&m->data_map.count, 0);
	for (i = 0; i < c->map.count; i++) {
		if (gpu_readable(rt, c->regions[i].ptr))
			m->readable[nr++] = c->regions[i];
		else
			m->data_only[nd++] = c->regions[i];
	}
	for (i = 0; i < c->dev_map.count; i++)
		m->data_only[nd++] = c->dev_regions[i];
	gio_store_release(&m->map.count, nr);
	gio_store_release(&m->data_map.count, nd);
}

int gio__check_for_qp_locked(struct gio_ctx *c, int gpu, struct gio_qp_check **out)
{
	struct gio__check_mirror *m;
	*out = NULL;
	if (!c->checked)
		return 0;
	if (!gpu) {
		*out = &c->check;
		return 0;
	}
	if (!c->gpu_check) {
		void *p;
		int rc = gio__pinned_alloc(sizeof(*m), "check=1: the GPU producers' region tables", &p);
		if (rc)
			return rc;
		m = p;
		m->ck = c->check;
		m->map.regions = m->readable;
		m->data_map.regions = m->data_only;
		m->ck.map = &m->map;
		m->ck.data_map = &m->data_map;
		c->gpu_check = m;
		gio__check_sync_locked(c);
	}
	*out = &c->gpu_check->ck;
	return 0;
}

void gio__check_free(struct gio_ctx *c)
{
	if (c->gpu_check) /* back to the cache: releasing pinned memory waits for every kernel */
		(void)gio__pinned_put(c->gpu_check);
	c->gpu_check = NULL;
}
