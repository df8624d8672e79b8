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
			/* Pairs with the stores of gio_ctx_qp_create (the entry is complete) and of
			 * gio_ctx_qp_destroy (the doorbells taken back, the entry gone); seq_cst, with the
			 * pass counter below, for gio__proxy_wait_pass. */
			struct gio__qp_mem *m = __atomic_load_n(&c->qps[i], __ATOMIC_SEQ_CST);
			if (!m || !__atomic_load_n(&m->proxied, __ATOMIC_SEQ_CST))
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
		/* Nothing loaded in this pass is used after this point (gio__proxy_wait_pass). */
		__atomic_fetch_add(&c->proxy_pass, 1, __ATOMIC_SEQ_CST);
		if (moved)
			spins = 0;
		else
			gio_backoff(&spins);
	}
	return NULL;
}

int gio__proxy_wait_pass(struct gio_ctx *c, uint64_t deadline, const char *what)
{
	uint64_t p0;
	uint32_t spins = 0;
	if (!c->proxy_started)
		return 0;
	/* A pass that loaded a pointer before the caller's store (seq_cst, before this load) ends
	 * by p0 + 1; p0 + 2 leaves a margin for a pass that began right at the load. */
	p0 = __atomic_load_n(&c->proxy_pass, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&c->proxy_pass, __ATOMIC_SEQ_CST) - p0 < 2) {
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: the doorbell proxy thread did not finish a pass in time (%s)", what);
		gio_backoff(&spins);
	}
	return 0;
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
