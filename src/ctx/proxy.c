/* The doorbell proxy: a CPU thread that mirrors the shadow doorbells of proxied queue pairs to
 * the controller's MMIO doorbells, for producers that cannot write MMIO themselves (GPU threads
 * where the GPU driver refuses to map BAR0 for them). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include <giouring/ring/clock.h>
#include <giouring/ring/ordering.h>

#include "ctx.h"

/* Mirrors the shadow doorbells of proxied queue pairs to the controller's MMIO doorbells, one
 * write per change (a batch of commands costs one write). For rings whose producers cannot write
 * MMIO themselves: GPU threads where the GPU driver refuses to map BAR0 for them. */
static void *proxy_main(void *arg)
{
	struct gio_ctx *c = arg;
	uint32_t spins = 0;
	while (!gio_load_acquire(&c->proxy_stop)) {
		/* Pairs with the release of nqps after a queue pair is complete. */
		const uint32_t n = gio_load_acquire(&c->nqps);
		uint32_t i, k, moved = 0;
		for (i = 1; i <= n; i++) {
			struct gio__qp_mem *m = c->qps[i];
			if (!m || !m->proxied)
				continue;
			for (k = 0; k < 2; k++) {
				/* Pairs with the ring's release store of the shadow tail/head: the entries
				 * it announces are written (SQ) or consumed (CQ). */
				const uint32_t v = gio_load_acquire(&m->shadow[k]);
				if (v != m->mirrored[k]) {
					m->mirrored[k] = v;
					gio_fence_release(); /* then the controller may fetch them */
					gio_mmio_write32((volatile uint32_t *)m->hw_db[k], v);
					moved++;
				}
			}
		}
		if (moved)
			spins = 0;
		else
			gio_backoff(&spins);
	}
	return NULL;
}

int gio__proxy_start(struct gio_ctx *c)
{
	int rc;
	if (c->proxy_started)
		return 0;
	rc = pthread_create(&c->proxy, NULL, proxy_main, c);
	if (rc)
		return gio__fail(-rc, "giouring: cannot start the doorbell proxy thread: %s", strerror(rc));
	c->proxy_started = 1;
	return 0;
}

void gio__proxy_stop(struct gio_ctx *c)
{
	if (!c->proxy_started)
		return;
	gio_store_release(&c->proxy_stop, 1);
	pthread_join(c->proxy, NULL);
	c->proxy_started = 0;
}
