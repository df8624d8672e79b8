/* Out-of-line copies of the host's ordering primitives and of the ring's doorbell paths, for the
 * arch.barriers test (cmake/gio_barrier_check.sh): it disassembles this object and checks, per
 * function, the barrier each must emit on this architecture (giouring/ring/ordering.h). The ring
 * paths are flattened so that the barrier and the doorbell store land in the probe itself. */
#include <stdint.h>

#include <giouring/ring/ordering.h>
#include <giouring/ring/qp.h>

void gio_probe_fence_release(void);
void gio_probe_store_release(uint32_t *p, uint32_t v);
void gio_probe_store_release16(uint16_t *p, uint16_t v);
void gio_probe_mmio_write32(volatile uint32_t *db, uint32_t v);
uint32_t gio_probe_load_acquire(const uint32_t *p);
uint16_t gio_probe_load_acquire16(const uint16_t *p);
void gio_probe_qp_publish(struct gio_qp *qp);
uint32_t gio_probe_qp_reap(struct gio_qp *qp);

void gio_probe_fence_release(void)
{
	gio_fence_release();
}

void gio_probe_store_release(uint32_t *p, uint32_t v)
{
	gio_store_release(p, v);
}

void gio_probe_store_release16(uint16_t *p, uint16_t v)
{
	gio_store_release16(p, v);
}

void gio_probe_mmio_write32(volatile uint32_t *db, uint32_t v)
{
	gio_mmio_write32(db, v);
}

uint32_t gio_probe_load_acquire(const uint32_t *p)
{
	return gio_load_acquire(p);
}

uint16_t gio_probe_load_acquire16(const uint16_t *p)
{
	return gio_load_acquire16(p);
}

/* Publication of the ready entries and the SQ tail doorbell: MMIO or shadow, by the queue
 * pair's flags. */
__attribute__((flatten)) void gio_probe_qp_publish(struct gio_qp *qp)
{
	gio_qp_publish(qp);
}

/* Reading CQEs, then the CQ head doorbell: MMIO or shadow. */
__attribute__((flatten)) uint32_t gio_probe_qp_reap(struct gio_qp *qp)
{
	return gio_qp_reap(qp);
}
