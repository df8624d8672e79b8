/* I/O queue pairs of a context: memory (host, pinned and GPU-mapped for GPU producers, or GPU
 * memory for nvme-pci), doorbells (the target's, direct MMIO for GPU threads, or the proxy), their
 * creation on the controller (Create I/O CQ, then SQ) and their end (Delete I/O SQ, the last
 * completions, Delete I/O CQ, the memory and the qid given back). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>

#include "../cuda/cudart.h"
#include "ctx.h"

/* GIO_CTX_QP_HBM: the SQ and CQ in one GPU allocation (on the calling thread's current GPU),
 * made and zeroed on a non-blocking stream of the queue pair (a persistent kernel already running
 * must not hold this up, nor the release at destroy: cudaFreeAsync on the same stream), and
 * mapped for the controller through the HBM provider; c->lock held. */
static int hbm_queues(struct gio_ctx *c, struct gio__qp_mem *m, size_t sq_bytes, size_t cq_bytes)
{
	const size_t len = sq_bytes + cq_bytes;
	uint64_t addr;
	int fd, rc = gio__hbm_alloc(&m->hbm_mem, len + 4095, "GIO_CTX_QP_HBM");
	if (rc)
		return rc;
	/* Queues start on 4 KiB (Create I/O SQ/CQ) and a dma-buf covers whole pages. */
	m->sq = (void *)(((uintptr_t)m->hbm_mem.base + 4095) & ~(uintptr_t)4095);
	m->cq = (char *)m->sq + sq_bytes;
	if ((rc = gio__gpu_dmabuf(m->sq, len, &fd)))
		return rc;
	rc = gio__add_region_locked(c, m->sq, len, fd, 0, 1, &addr);
	close(fd); /* on success the IOAS holds its own reference */
	if (rc)
		return rc;
	m->sq_reg = 1;
	m->sq_addr = addr;
	m->cq_addr = addr + sq_bytes;
	return 0;
}

/* Direct GPU doorbells on a real controller: BAR0 registered with the GPU as I/O memory
 * (cudaHostRegisterIoMemory), at the same address for GPU threads (unified addressing), so the
 * ring's doorbell pointers serve host and GPU alike. Tried once per context; a refusal is kept
 * with its reason (recent open GPU kernel modules refuse it; so does a machine without a GPU). */
static int mmio_map_for_gpu(struct gio_ctx *c)
{
	const struct gio__cudart *rt;
	void *dev = NULL;
	int e;
	if (c->mmio_gpu)
		return c->mmio_gpu > 0 ? 0 : -EOPNOTSUPP;
	c->mmio_gpu = -1;
	rt = gio__cudart();
	if (!rt) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "%s", gio__cudart_why());
		return -EOPNOTSUPP;
	}
	if (!rt->host_register || !rt->host_unregister || !rt->host_get_device_pointer) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "libcudart.so lacks cudaHostRegister");
		return -EOPNOTSUPP;
	}
	/* cudaHostRegisterPortable (1) | cudaHostRegisterMapped (2) | cudaHostRegisterIoMemory (4). */
	e = rt->host_register(c->be.bar, c->be.bar_len, 1u | 2u | 4u);
	if (e) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "cudaHostRegister(BAR0, IoMemory): %s: %s", gio__cuda_name(e),
			 gio__cuda_err(e));
		return -EOPNOTSUPP;
	}
	c->mmio_gpu_registered = 1; /* kept, also when refused below: close unregisters it (cudaHostUnregister waits for kernels) */
	e = rt->host_get_device_pointer(&dev, c->be.bar, 0);
	if (e || dev != c->be.bar) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "the GPU maps BAR0 at another address (%p, not %p)", dev,
			 c->be.bar);
		return -EOPNOTSUPP;
	}
	c->mmio_gpu = 1;
	return 0;
}

/* GPU producers of a software target's queue pair write its doorbells, which live in the
 * emulated BAR0 (ordinary host memory): pin it and map it for the GPU, once, at the address the
 * CPU uses (unified addressing), so that the doorbell pointers in struct gio_qp hold on both
 * sides. The registration is handed to the pinned cache: close gives it back there instead of
 * unregistering (cudaHostUnregister waits while any kernel runs), and a later context's BAR0
 * reuses it, registered (open.c). c->lock held. */
static int bar_map_for_gpu(struct gio_ctx *c)
{
	void *dev = NULL;
	int e;
	if (c->bar_mapped > 0 || !c->bar)
		return 0;
	if (c->bar_mapped < 0)
		return gio__fail(-EOPNOTSUPP, "giouring: the GPU maps the target's doorbells at another address: GPU producers "
				 "need unified addressing");
	const struct gio__cudart *rt = gio__cudart();
	if (!rt || !rt->host_register || !rt->host_unregister || !rt->host_get_device_pointer)
		return gio__fail(-ENODEV, "giouring: cannot map the target's doorbells for the GPU: %s",
				 rt ? "libcudart.so lacks cudaHostRegister/cudaHostGetDevicePointer" : gio__cudart_why());
	if (!c->bar_registered) {
		/* The cache's record first: once registered, the BAR must not go back to free(). */
		if (gio__pinned_track(&gio__cudart_registered, c->bar, GIO__BAR_BYTES))
			return gio__fail(-ENOMEM, "giouring: no memory to track the registration of the target's doorbells");
		/* cudaHostRegisterPortable (1) | cudaHostRegisterMapped (2). */
		e = rt->host_register(c->bar, GIO__BAR_BYTES, 1u | 2u);
		if (e) {
			(void)gio__pinned_forget(c->bar);
			return gio__cuda_fail(e, "cannot map the target's doorbells for the GPU: cudaHostRegister");
		}
		c->bar_registered = 1; /* close gives it to the cache, registered */
	}
	e = rt->host_get_device_pointer(&dev, c->bar, 0);
	if (e || dev != (void *)c->bar) {
		c->bar_mapped = -1;
		return gio__fail(-EOPNOTSUPP, "giouring: the GPU maps the target's doorbells at another address (%p, not %p%s%s): "
				 "GPU producers need unified addressing", dev, (void *)c->bar, e ? "; " : "",
				 e ? gio__cuda_name(e) : "");
	}
	c->bar_mapped = 1;
	return 0;
}

/* The lowest qid no queue pair holds, or 0 when every granted one is taken; c->lock held. */
static uint32_t free_qid(const struct gio_ctx *c)
{
	uint32_t i;
	for (i = 1; i <= c->info.io_queues; i++)
		if (!c->qps[i])
			return i;
	return 0;
}

/* Makes m the holder of its qid (seq_cst: the proxy thread loads entries so, see proxy.c); c->lock
 * held. */
static void publish(struct gio_ctx *c, struct gio__qp_mem *m)
{
	__atomic_store_n(&c->qps[m->qid], m, __ATOMIC_SEQ_CST);
	if (m->qid > c->nqps)
		gio_store_release(&c->nqps, m->qid); /* pairs with the proxy's acquire */
}

void gio__qp_free(struct gio__qp_mem *m)
{
	if (m->pinned) {
		/* To the pinned cache, not cudaFreeHost: a persistent kernel may run on other queue
		 * pairs (giouring/host/ctx.h, gio_cuda_trim()). */
		if (m->pinned_base)
			(void)gio__pinned_put(m->pinned_base);
		gio__hbm_free(&m->hbm_mem);
	} else {
		free(m->sq);
		free(m->cq);
		free(m->slots);
	}
	free(m);
}

/* Writes the shadow doorbells that the proxy thread has not mirrored yet (a queue pair whose
 * doorbells were taken back from it: this thread rings them now). */
static void sync_doorbells(struct gio__qp_mem *m)
{
	uint32_t k;
	for (k = 0; k < 2; k++) {
		const uint32_t v = gio_load_acquire(&m->shadow[k]);
		if (v != m->mirrored[k]) {
			m->mirrored[k] = v;
			gio_fence_release();
			gio_mmio_write32((volatile uint32_t *)m->hw_db[k], v);
		}
	}
}

/* What is left of deadline, in nanoseconds (0 once it passed). */
static uint64_t left_ns(uint64_t deadline)
{
	const uint64_t now = gio_host_now_ns();
	return deadline > now ? deadline - now : 0;
}

/* Delete I/O SQ or CQ of m's qid within what is left of deadline. A queue the controller does
 * not have (Invalid Queue Identifier) is gone already: after a create or delete that timed out,
 * the controller went one way or the other. 0, -ETIME or -EIO with a message. */
static int delete_queue(struct gio_ctx *c, const struct gio__qp_mem *m, int is_cq, uint64_t deadline)
{
	const char *what = is_cq ? "Delete I/O Completion Queue" : "Delete I/O Submission Queue";
	const uint64_t now = gio_host_now_ns();
	struct gio_sqe sqe;
	uint16_t st;
	uint32_t dw0;
	char msg[512];
	int rc;
	if (now >= deadline)
		return gio__fail(-ETIME, "giouring: queue %u: no time left to send %s", m->qid, what);
	rc = is_cq ? gio_prep_delete_cq(&sqe, (uint16_t)m->qid) : gio_prep_delete_sq(&sqe, (uint16_t)m->qid);
	if (!rc)
		rc = gio__admin_within(c, &sqe, deadline - now, &st, &dw0);
	if (rc == -EIO && gio_status_sct(st) == GIO_SCT_CMD_SPECIFIC && gio_status_sc(st) == GIO_SC_QID_INVALID)
		return 0;
	if (rc) {
		snprintf(msg, sizeof(msg), "%s", gio_last_error());
		return gio__fail(rc, "giouring: queue %u: %s %s within %" PRIu64 " ms: %s", m->qid, what,
				 rc == -ETIME ? "did not complete" : "failed", (deadline - now + 999999) / 1000000, msg);
	}
	return 0;
}

/* The queue pair's last completions, once the controller deleted its SQ: whatever the CQ holds
 * is reaped, then every command not yet collected is reported once. 0 where the CPU cannot read
 * the rings (GIO_CTX_QP_HBM), else how many were reported. */
static int report(struct gio__qp_mem *m, gio_qp_outcome_fn fn, void *arg)
{
	struct gio_qp *qp = &m->qp;
	uint32_t i;
	int n = 0;
	if (m->hbm)
		return 0;
	while (gio_qp_reap(qp))
		;
	for (i = 0; i < qp->sq_depth; i++) {
		struct gio_cmd_slot *s = &qp->slots[i];
		const uint32_t w = gio_load_acquire(&s->state), st = gio_cmd_state(w);
		struct gio_qp_outcome o;
		memset(&o, 0, sizeof(o));
		o.cid = (uint16_t)i;
		o.user_data = s->user_data;
		if (st == GIO_CMD_DONE) {
			/* Waited or detached alike (a detached one is still on the completion list). */
			o.status = s->status;
			o.dw0 = s->dw0;
			o.posted = 1;
			gio_store_release(&s->state, gio__qp_freed(qp, w));
		} else if (st == GIO_CMD_INFLIGHT) {
			/* No completion before the Delete's own: the specification has the deletion abort
			 * what it did not complete, and lets a controller do so without posting (QEMU 7.2
			 * posts none for commands it had not fetched). */
			o.status = GIO_SF(GIO_SCT_GENERIC, GIO_SC_ABORT_SQ_DELETED);
			gio_store_release(&s->state, gio__qp_freed(qp, w));
		} else {
			/* Free; abandoned (its submitter was told -ETIME already); or cancelled (nobody's). */
			continue;
		}
		n++;
		if (fn)
			fn(arg, &o);
	}
	return n;
}

/* Undoes a queue pair on the controller and in the context, resuming where an earlier call
 * stopped: doorbells back from the proxy thread, Delete I/O SQ, the outcomes, Delete I/O CQ,
 * the memory's regions, the table entry, the memory. Returns the commands reported, or -errno
 * with a message, m then kept (and still its qid's holder while it is in the table). c->lock
 * held. */
static int teardown(struct gio_ctx *c, struct gio__qp_mem *m, uint64_t deadline, gio_qp_outcome_fn fn, void *arg)
{
	char msg[512];
	int rc, n = 0;
	if (__atomic_load_n(&m->proxied, __ATOMIC_RELAXED)) {
		__atomic_store_n(&m->proxied, 0, __ATOMIC_SEQ_CST);
		snprintf(msg, sizeof(msg), "queue %u: taking its doorbells back", m->qid);
		if ((rc = gio__proxy_wait_pass(c, deadline, msg))) {
			__atomic_store_n(&m->proxied, 1, __ATOMIC_SEQ_CST);
			return rc;
		}
		m->db_taken = 1;
		sync_doorbells(m); /* commands published to the shadow reach the controller */
	}
	if (m->sq_on) {
		if ((rc = delete_queue(c, m, 0, deadline)))
			return rc;
		m->sq_on = 0;
		n = report(m, fn, arg);
		if (m->db_taken)
			sync_doorbells(m); /* the CQ head after the reap */
	}
	if (m->cq_on) {
		if ((rc = delete_queue(c, m, 1, deadline)))
			return rc;
		m->cq_on = 0;
	}
	/* No bus address of the queue memory stays valid. */
	if (m->sq_reg && (rc = gio__remove_region_locked(c, m->sq, 1, left_ns(deadline))))
		goto region_failed;
	m->sq_reg = 0;
	if (m->cq_reg && (rc = gio__remove_region_locked(c, m->cq, 1, left_ns(deadline))))
		goto region_failed;
	m->cq_reg = 0;
	if (c->qps[m->qid] == m) {
		/* The proxy thread may hold the entry from a pass still running. */
		__atomic_store_n(&c->qps[m->qid], NULL, __ATOMIC_SEQ_CST);
		snprintf(msg, sizeof(msg), "queue %u: letting go of its entry; its memory is left allocated", m->qid);
		if ((rc = gio__proxy_wait_pass(c, deadline, msg)))
			return rc; /* m leaks: the proxy thread may yet read it; the qid is free again */
	}
	gio__qp_free(m);
	return n;
region_failed:
	snprintf(msg, sizeof(msg), "%s", gio_last_error());
	return gio__fail(rc, "giouring: queue %u: unregistering its memory: %s", m->qid, msg);
}

int gio_ctx_qp_destroy(struct gio_ctx *c, struct gio_qp *qp, uint64_t timeout_ns, gio_qp_outcome_fn fn, void *arg)
{
	struct gio__qp_mem *m = NULL;
	uint32_t i;
	int rc;
	gio__clear_error();
	if (!c || !qp)
		return gio__fail(-EINVAL, "giouring: gio_ctx_qp_destroy: NULL %s", c ? "queue pair" : "context");
	pthread_mutex_lock(&c->lock);
	for (i = 1; i <= c->nqps && !m; i++)
		if (c->qps[i] && &c->qps[i]->qp == qp)
			m = c->qps[i];
	if (!m) {
		pthread_mutex_unlock(&c->lock);
		return gio__fail(-EINVAL, "giouring: gio_ctx_qp_destroy: %p is not a queue pair of this context (destroyed "
				 "already, or another context's)", (void *)qp);
	}
	rc = teardown(c, m, gio_deadline_in(timeout_ns), fn, arg);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int gio_ctx_qp_create(struct gio_ctx *c, uint32_t depth, struct gio_qp **out)
{
	return gio_ctx_qp_create_ex(c, depth, 0, out);
}

int gio_ctx_qp_create_ex(struct gio_ctx *c, uint32_t depth, uint32_t flags, struct gio_qp **out)
{
	struct gio__qp_mem *m;
	struct gio_sqe sqe;
	uint32_t dw0, qid;
	int rc;
	gio__clear_error();
	if (!c || !out)
		return gio__fail(-EINVAL, "giouring: gio_ctx_qp_create: NULL argument");
	if (flags & ~(GIO_CTX_QP_PINNED | GIO_CTX_QP_DB_PROXY | GIO_CTX_QP_DB_DIRECT | GIO_CTX_QP_HBM))
		return gio__fail(-EINVAL, "giouring: gio_ctx_qp_create_ex: unknown flags 0x%x", flags);
	if ((flags & GIO_CTX_QP_HBM) && !c->be.mmio)
		return gio__fail(-EOPNOTSUPP, "giouring: GIO_CTX_QP_HBM: the CPU executor cannot read rings in GPU memory; the "
				 "GPU-executed target serves them (gio_gpu_target_open() with rings=hbm, giouring/target/gpu_target.h)");
	if (flags & GIO_CTX_QP_HBM) {
		const char *why = gio__no_fd_mapping(c);
		if (why)
			return gio__fail(-EOPNOTSUPP, "giouring: GIO_CTX_QP_HBM: the controller reaches GPU memory only through "
					 "a dma-buf imported with iommufd, but %s", why);
	}
	if ((flags & GIO_CTX_QP_DB_PROXY) && (flags & GIO_CTX_QP_DB_DIRECT))
		return gio__fail(-EINVAL, "giouring: GIO_CTX_QP_DB_PROXY and GIO_CTX_QP_DB_DIRECT: choose one");
	if ((flags & (GIO_CTX_QP_DB_PROXY | GIO_CTX_QP_DB_DIRECT)) && !c->be.mmio)
		return gio__fail(-EOPNOTSUPP,
				 "giouring: GIO_CTX_QP_DB_%s: this target's doorbells are memory already (no MMIO doorbell)",
				 (flags & GIO_CTX_QP_DB_PROXY) ? "PROXY" : "DIRECT");
	if (depth < 2 || (depth & (depth - 1)) || depth > c->info.max_queue_entries)
		return gio__fail(-EINVAL, "giouring: queue depth %u: a power of two from 2 to %u", depth, c->info.max_queue_entries);
	pthread_mutex_lock(&c->lock);
	qid = free_qid(c);
	if (!qid) {
		pthread_mutex_unlock(&c->lock);
		if (c->vf.entry) /* a VF gets what its PF assigned it: say so, and how to get more */
			return gio__fail(-EBUSY, "giouring: all %u granted I/O queue pairs are in use (gio_ctx_qp_destroy() gives "
					 "one back); this SR-IOV virtual function has the %u flexible queues its PF assigned it, one of "
					 "them the admin queue (giouring-sriov setup --queues assigns more)", c->info.io_queues, c->vf.nvq);
		return gio__fail(-EBUSY, "giouring: all %u granted I/O queue pairs are in use (gio_ctx_qp_destroy() gives "
				 "one back)", c->info.io_queues);
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&c->lock);
		return gio__fail(-ENOMEM, "giouring: no memory for a queue pair");
	}
	m->qid = qid;
	if (flags & (GIO_CTX_QP_PINNED | GIO_CTX_QP_HBM)) {
		const size_t sq_bytes = (depth * sizeof(struct gio_sqe) + 4095) & ~(size_t)4095;
		const size_t cq_bytes = (depth * sizeof(struct gio_cqe) + 4095) & ~(size_t)4095;
		const size_t slot_bytes = depth * sizeof(struct gio_cmd_slot) + 2 * sizeof(uint32_t);
		const int hbm = (flags & GIO_CTX_QP_HBM) != 0;
		m->pinned = 1;
		m->hbm = (uint8_t)hbm;
		/* One allocation, aligned here: queues must start on 4 KiB (Create I/O SQ/CQ), and
		 * cudaHostAlloc suballocates small sizes below page alignment (seen on the H200: the
		 * second queue pair's CQ was refused). SQ, CQ, then the slots and the two shadow
		 * doorbells of GIO_CTX_QP_DB_PROXY (both written by GPU threads). With GIO_CTX_QP_HBM
		 * the queues are in GPU memory and this holds the slots and shadows alone: the library
		 * initialises the slots and the proxy thread reads the shadows, from the CPU. */
		rc = gio__pinned_alloc((hbm ? 0 : sq_bytes + cq_bytes) + slot_bytes + 4095, "pinned queue memory",
				       &m->pinned_base);
		if (rc) { /* nothing allocated: give everything back */
			free(m);
			pthread_mutex_unlock(&c->lock);
			return rc;
		}
		if (hbm) {
			m->slots = m->pinned_base;
		} else {
			m->sq = (void *)(((uintptr_t)m->pinned_base + 4095) & ~(uintptr_t)4095);
			m->cq = (char *)m->sq + sq_bytes;
			m->slots = (char *)m->cq + cq_bytes;
		}
		if (hbm) {
			rc = hbm_queues(c, m, sq_bytes, cq_bytes);
		} else if (!(rc = gio__register_locked(c, m->sq, sq_bytes, &m->sq_addr))) {
			m->sq_reg = 1;
			if (!(rc = gio__register_locked(c, m->cq, cq_bytes, &m->cq_addr)))
				m->cq_reg = 1;
		}
		if (!rc && !c->be.mmio)
			rc = bar_map_for_gpu(c);
		if (rc)
			goto fail;
	} else {
		m->sq = gio__alloc_dma(c, depth * sizeof(struct gio_sqe), &m->sq_addr);
		m->sq_reg = m->sq != NULL;
		m->cq = m->sq ? gio__alloc_dma(c, depth * sizeof(struct gio_cqe), &m->cq_addr) : NULL;
		m->cq_reg = m->cq != NULL;
		m->slots = calloc(depth, sizeof(struct gio_cmd_slot));
	}
	if (!m->sq || !m->cq || !m->slots) {
		rc = m->slots ? -ENOMEM /* alloc_dma said why */
			      : gio__fail(-ENOMEM, "giouring: no memory for a queue pair of depth %u", depth);
		goto fail;
	}
	/* GPU producers on a real controller: direct doorbells where the GPU may write BAR0, else
	 * (unless direct was demanded) the proxy thread, with a notice saying why. */
	if (m->pinned && c->be.mmio && !(flags & GIO_CTX_QP_DB_PROXY) && mmio_map_for_gpu(c)) {
		if (flags & GIO_CTX_QP_DB_DIRECT) {
			rc = gio__fail(-EOPNOTSUPP, "giouring: GIO_CTX_QP_DB_DIRECT: GPU threads cannot write the doorbells: %s",
				       c->mmio_gpu_why);
			goto fail;
		}
		if (!c->proxy_noticed) {
			fprintf(stderr, "giouring: notice: direct GPU doorbells refused (%s); using the doorbell proxy thread\n",
				c->mmio_gpu_why);
			c->proxy_noticed = 1;
		}
		flags |= GIO_CTX_QP_DB_PROXY;
	}
	m->hw_db[0] = gio__doorbell(c, gio_sq_doorbell_offset(c->cap, (uint16_t)qid));
	m->hw_db[1] = gio__doorbell(c, gio_cq_doorbell_offset(c->cap, (uint16_t)qid));
	m->proxied = (flags & GIO_CTX_QP_DB_PROXY) != 0;
	m->shadow = m->pinned ? (uint32_t *)((struct gio_cmd_slot *)m->slots + depth) : m->shadow_host;
	if (m->proxied && (rc = gio__proxy_start(c)))
		goto fail;
	/* A proxied ring writes its shadow words with release stores, like the software target's. */
	rc = m->proxied ? gio_qp_init(&m->qp, m->sq, depth, m->cq, depth, m->slots, (uint16_t)qid, &m->shadow[0],
				      &m->shadow[1], 0)
			: gio_qp_init(&m->qp, m->sq, depth, m->cq, depth, m->slots, (uint16_t)qid, m->hw_db[0], m->hw_db[1],
				      gio__qp_flags(c));
	if (rc || (rc = gio__check_for_qp_locked(c, m->pinned, &m->qp.check)))
		goto fail;
	if ((rc = gio_prep_create_cq(&sqe, (uint16_t)qid, depth, m->cq_addr, 0, 0)) ||
	    (rc = gio_prep_create_sq(&sqe, (uint16_t)qid, depth, (uint16_t)qid, m->sq_addr))) {
		rc = gio__fail(rc, "giouring: queue memory at bus address 0x%" PRIx64 "/0x%" PRIx64 " is not 4 KiB aligned",
			       m->cq_addr, m->sq_addr);
		goto fail;
	}
	(void)gio_prep_create_cq(&sqe, (uint16_t)qid, depth, m->cq_addr, 0, 0);
	rc = gio__admin(c, &sqe, &dw0);
	m->cq_on = rc == 0 || rc == -ETIME; /* after a timeout the controller may yet create it */
	if (rc)
		goto fail;
	(void)gio_prep_create_sq(&sqe, (uint16_t)qid, depth, (uint16_t)qid, m->sq_addr);
	rc = gio__admin(c, &sqe, &dw0);
	m->sq_on = rc == 0 || rc == -ETIME;
	if (rc)
		goto fail;
	publish(c, m);
	pthread_mutex_unlock(&c->lock);
	*out = &m->qp;
	return 0;
fail:
	/* Nothing of it may stay on the controller: what may exist there is deleted (the queue
	 * pair had no command), then memory and qid are given back. Where that cannot be made
	 * sure (the controller does not answer), the queue pair stays the context's, qid and
	 * memory reserved, and close deletes it. */
	{
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", gio_last_error());
		m->proxied = 0; /* never published: the proxy thread has not seen it */
		if (teardown(c, m, gio_deadline_in(GIO__ADMIN_TIMEOUT_NS), NULL, NULL) < 0)
			publish(c, m);
		gio__fail(rc, "%s", msg);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

uint32_t gio_ctx_qp_doorbells(struct gio_ctx *c, const struct gio_qp *qp)
{
	uint32_t i, n, mode = 0;
	if (!c || !qp)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->nqps;
	for (i = 1; i <= n; i++) {
		const struct gio__qp_mem *m = c->qps[i];
		if (m && &m->qp == qp)
			mode = !c->be.mmio ? 0 : m->proxied ? GIO_CTX_QP_DB_PROXY : GIO_CTX_QP_DB_DIRECT;
	}
	pthread_mutex_unlock(&c->lock);
	return mode;
}

