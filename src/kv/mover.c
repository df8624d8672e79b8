/* The copy-engine mover of staged loads (see mover.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <giouring/ring/clock.h>
#include <giouring/ring/ordering.h>

#include "../cuda/cudart.h"
#include "../internal.h"
#include "mover.h"

struct gio__kv_mover {
	const struct gio__kv_mover_ops *ops;
	void *ctx;
	uint32_t layers, gcap;
	struct gio_kv_move_req *req;
	uint32_t *done;
	pthread_t thr;
	int have_thread;
	pthread_mutex_t mu; /* a pass, open and close: the batch below and everything after it */
	pthread_cond_t cv;
	int stop, active;
	struct gio__kv_mover_batch b;
	uint32_t *seen;    /* layers x gcap: the epoch whose request was taken */
	uint32_t *handled; /* per layer: groups taken in the open batch */
	int err;           /* the copier's first error (positive), or -errno of the mover's own */
	int attach_err;    /* the thread's attach (its CUDA device): every batch fails with it */
	uint32_t bad_req;  /* with err -EINVAL: the request the mover could not place */
	/* The pass's copies and marks (grown as needed). */
	void **cdst;
	const void **csrc;
	size_t *clen;
	size_t ncap;
	uint32_t **mdst;
	size_t mcap;
	struct gio__kv_mover_stats st;
	/* Watched CQs (gio__kv_mover_watch()), the mirror words of a pass's changed ones, and the
	 * count of passes that found a change (the value the mirror words get). */
	uint32_t ncq;
	struct cq_watch *cq;
	uint32_t **cq_mdst;
	uint32_t cq_gen;
};

/* A watched CQ: Dword 3 of its first CQE (CID, status, phase tag; the next one 16 bytes on), its
 * depth, its mirror word, and its DW3s as last seen (the snapshots of all CQs share one block,
 * freed with the first's). */
struct cq_watch {
	const uint32_t *dw3;
	uint32_t depth;
	uint32_t *mirror;
	uint32_t *snap;
};

static int grow(struct gio__kv_mover *m, size_t copies, size_t marks)
{
	if (copies > m->ncap) {
		size_t n = m->ncap ? m->ncap : 256;
		while (n < copies)
			n *= 2;
		void **d = realloc(m->cdst, n * sizeof(*d));
		if (d)
			m->cdst = d;
		const void **s = realloc(m->csrc, n * sizeof(*s));
		if (s)
			m->csrc = s;
		size_t *l = realloc(m->clen, n * sizeof(*l));
		if (l)
			m->clen = l;
		if (!d || !s || !l)
			return -ENOMEM;
		m->ncap = n;
	}
	if (marks > m->mcap) {
		size_t n = m->mcap ? m->mcap : 64;
		while (n < marks)
			n *= 2;
		uint32_t **d = realloc(m->mdst, n * sizeof(*d));
		if (!d)
			return -ENOMEM;
		m->mdst = d;
		m->mcap = n;
	}
	return 0;
}

/* Appends the copies of group g's objects named by mask, from their slots to the pool, at
 * *nc. 0, or -EINVAL (a request the plan cannot place: m->bad_req), -ENOMEM. */
static int group_copies(struct gio__kv_mover *m, uint32_t layer, uint32_t g, uint32_t mask, uint32_t slot0,
			size_t *nc)
{
	const struct gio__kv_mover_batch *b = &m->b;
	const struct gio_kv_io_group *grp = &b->groups[g];
	const struct gio_kv_io_dev *dv = &b->devs[grp->dev];
	const struct gio_kv_io_stage *sg = b->stages[grp->dev];
	const uint32_t q = grp->qp % dv->nqps;
	const struct gio_stage *st;
	const uint8_t *area;
	uint32_t lane;
	if (!sg)
		return m->bad_req = grp->first, -EINVAL;
	st = &sg->rings[q];
	area = sg->area + (uint64_t)q * st->nslots * st->slot_bytes;
	for (lane = 0; lane < grp->count; lane++) {
		const struct gio_kv_io_req *r = &b->reqs[grp->first + lane];
		const uint8_t *slot = area + gio_stage_offset(st, slot0 + lane);
		struct gio_kv_stage_move mv[8];
		uint32_t first = 0;
		int n, k;
		if (!(mask >> lane & 1u))
			continue;
		do {
			n = gio_kv_stage_moves_at(b->pool, b->runs, layer, r->block, r->part, dv->cmds, first, mv, 8);
			if (n < 0 || (n == 0 && first == 0))
				return m->bad_req = grp->first + lane, -EINVAL;
			if (grow(m, *nc + (size_t)n, 0))
				return -ENOMEM;
			for (k = 0; k < n; k++, (*nc)++) {
				m->cdst[*nc] = (void *)(uintptr_t)mv[k].dst;
				m->csrc[*nc] = slot + mv[k].src_off;
				m->clen[*nc] = (size_t)mv[k].len;
			}
			first += (uint32_t)n;
		} while (n == 8);
	}
	return 0;
}

/* The watched CQs whose entries changed since the last look, their mirror words into
 * m->cq_mdst; how many. */
static size_t cq_changes(struct gio__kv_mover *m)
{
	size_t n = 0;
	uint32_t c, i;
	for (c = 0; c < m->ncq; c++) {
		const struct cq_watch *w = &m->cq[c];
		int changed = 0;
		for (i = 0; i < w->depth; i++) {
			/* Another agent's stores (the controller's DMA, a software target's thread). */
			const uint32_t v = __atomic_load_n(&w->dw3[4 * (size_t)i], __ATOMIC_RELAXED);
			if (v != w->snap[i]) {
				w->snap[i] = v;
				changed = 1;
			}
		}
		if (changed)
			m->cq_mdst[n++] = w->mirror;
	}
	return n;
}

int gio__kv_mover_watch(struct gio__kv_mover *m, uint32_t n, const void *const *entries, const uint32_t *depth,
			uint32_t *const *mirror)
{
	struct cq_watch *cq;
	uint32_t **mdst, *snap;
	size_t words = 0, o = 0;
	uint32_t c, i;
	if (!m || !n || !entries || !depth || !mirror || m->ncq)
		return gio__fail(-EINVAL, "giouring: kv plan: completion mirror: no CQs, a NULL array, or watched already");
	for (c = 0; c < n; c++) {
		if (!entries[c] || !mirror[c] || depth[c] < 2)
			return gio__fail(-EINVAL, "giouring: kv plan: completion mirror: CQ %u has no entries, no mirror word or "
					 "a depth of %u", c, depth[c]);
		words += depth[c];
	}
	cq = calloc(n, sizeof(*cq));
	mdst = calloc(n, sizeof(*mdst));
	snap = calloc(words, sizeof(*snap));
	if (!cq || !mdst || !snap) {
		free(cq);
		free(mdst);
		free(snap);
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory for the completion mirror of %u CQs", n);
	}
	for (c = 0; c < n; c++) {
		cq[c].dw3 = (const uint32_t *)entries[c] + 3;
		cq[c].depth = depth[c];
		cq[c].mirror = mirror[c];
		cq[c].snap = snap + o;
		for (i = 0; i < depth[c]; i++)
			cq[c].snap[i] = __atomic_load_n(&cq[c].dw3[4 * (size_t)i], __ATOMIC_RELAXED);
		o += depth[c];
	}
	pthread_mutex_lock(&m->mu);
	m->cq = cq;
	m->cq_mdst = mdst;
	m->ncq = n;
	pthread_mutex_unlock(&m->mu);
	return 0;
}

int gio__kv_mover_pass(struct gio__kv_mover *m)
{
	size_t ncq = 0;
	size_t nc = 0, nm = 0;
	uint32_t l, g, found = 0;
	int rc = 0, e;
	pthread_mutex_lock(&m->mu);
	if (!m->active || m->err) {
		rc = m->err > 0 ? -EIO : m->err;
		pthread_mutex_unlock(&m->mu);
		return rc;
	}
	for (l = 0; l < m->b.layers && !rc; l++) {
		if (m->handled[l] == m->b.ngroups)
			continue;
		for (g = 0; g < m->b.ngroups; g++) {
			const size_t idx = (size_t)l * m->gcap + g;
			struct gio_kv_move_req *r = &m->req[idx];
			uint32_t mask, slot0;
			if (m->seen[idx] == m->b.epoch)
				continue;
			/* Pairs with the warp's fence between mask/slot0 and epoch. */
			if (gio_load_acquire(&r->epoch) != m->b.epoch)
				continue;
			mask = __atomic_load_n(&r->mask, __ATOMIC_RELAXED);
			slot0 = __atomic_load_n(&r->slot0, __ATOMIC_RELAXED);
			m->seen[idx] = m->b.epoch;
			m->handled[l]++;
			found++;
			if ((rc = group_copies(m, l, g, mask, slot0, &nc)) != 0)
				break;
			if ((rc = grow(m, 0, nm + 1)) != 0)
				break;
			m->mdst[nm++] = m->done + idx;
		}
	}
	if (rc) {
		m->err = rc;
	} else {
		/* The copies first, then the marks: stream order puts every group's bytes in the pool
		 * before its word says so. */
		if (nc) {
			size_t k;
			if ((e = m->ops->copy(m->ctx, m->cdst, m->csrc, m->clen, nc)) != 0) {
				m->err = e;
			} else { /* counted once queued */
				m->st.copies += nc;
				for (k = 0; k < nc; k++)
					m->st.bytes += m->clen[k];
			}
			m->st.calls++;
		}
		if (nm && !m->err) {
			if ((e = m->ops->mark(m->ctx, m->mdst, m->b.epoch, nm)) != 0)
				m->err = e;
			m->st.calls++;
		}
		m->st.groups += found;
		/* The CQs after the groups' copies and marks, so that scanning them delays no move. */
		if (!m->err && (ncq = cq_changes(m)) != 0) {
			if ((e = m->ops->mark(m->ctx, m->cq_mdst, ++m->cq_gen, ncq)) != 0)
				m->err = e;
			m->st.calls++;
			m->st.cq_marks += ncq;
		}
	}
	rc = m->err > 0 ? -EIO : m->err;
	pthread_mutex_unlock(&m->mu);
	return rc ? rc : (int)(found + ncq);
}

static void *mover_main(void *arg)
{
	struct gio__kv_mover *m = arg;
	uint32_t spins = 0;
	int e = m->ops->attach ? m->ops->attach(m->ctx) : 0;
	pthread_mutex_lock(&m->mu);
	if (e)
		m->err = m->attach_err = e;
	while (!m->stop) {
		if (!m->active || m->err) {
			pthread_cond_wait(&m->cv, &m->mu);
			spins = 0;
			continue;
		}
		pthread_mutex_unlock(&m->mu);
		/* While a batch is open, a core watches its requests (as the doorbell proxy watches
		 * doorbells), backing off when none come. */
		if (gio__kv_mover_pass(m) > 0)
			spins = 0;
		else
			gio_backoff(&spins);
		pthread_mutex_lock(&m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

void gio__kv_mover_destroy(struct gio__kv_mover *m)
{
	if (!m)
		return;
	if (m->have_thread) {
		pthread_mutex_lock(&m->mu);
		m->stop = 1;
		pthread_cond_broadcast(&m->cv);
		pthread_mutex_unlock(&m->mu);
		pthread_join(m->thr, NULL);
	}
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	free(m->seen);
	free(m->handled);
	free(m->cdst);
	free(m->csrc);
	free(m->clen);
	free(m->mdst);
	if (m->cq)
		free(m->cq[0].snap);
	free(m->cq);
	free(m->cq_mdst);
	free(m);
}

int gio__kv_mover_create(const struct gio__kv_mover_ops *ops, void *ctx, uint32_t layers, uint32_t gcap,
			 struct gio_kv_move_req *req, uint32_t *done, int thread, struct gio__kv_mover **out)
{
	struct gio__kv_mover *m;
	int e;
	*out = NULL;
	if (!ops || !ops->copy || !ops->mark || !ops->query || !req || !done || !layers || !gcap)
		return gio__fail(-EINVAL, "giouring: kv plan: copy-engine mover: NULL argument or no layers");
	m = calloc(1, sizeof(*m));
	if (!m)
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory for the copy-engine mover");
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	m->ops = ops;
	m->ctx = ctx;
	m->layers = layers;
	m->gcap = gcap;
	m->req = req;
	m->done = done;
	m->seen = calloc((size_t)layers * gcap, sizeof(*m->seen));
	m->handled = calloc(layers, sizeof(*m->handled));
	if (!m->seen || !m->handled) {
		gio__kv_mover_destroy(m);
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory for the copy-engine mover of %u x %u groups", layers, gcap);
	}
	if (thread) {
		e = pthread_create(&m->thr, NULL, mover_main, m);
		if (e) {
			gio__kv_mover_destroy(m);
			return gio__fail(-e, "giouring: kv plan: cannot start the copy-engine mover's thread");
		}
		m->have_thread = 1;
	}
	*out = m;
	return 0;
}

void gio__kv_mover_open(struct gio__kv_mover *m, const struct gio__kv_mover_batch *b)
{
	pthread_mutex_lock(&m->mu);
	m->b = *b;
	if (m->b.layers > m->layers)
		m->b.layers = m->layers;
	if (m->b.ngroups > m->gcap)
		m->b.ngroups = m->gcap;
	memset(m->handled, 0, sizeof(*m->handled) * m->layers);
	m->err = m->attach_err; /* the last batch's close reported its error; this batch starts afresh */
	m->bad_req = 0;
	m->active = 1;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

int gio__kv_mover_close(struct gio__kv_mover *m, uint64_t deadline)
{
	uint32_t spins = 0;
	int q, err;
	pthread_mutex_lock(&m->mu);
	m->active = 0; /* a pass in progress held the lock: nothing is queued for the batch after this */
	pthread_mutex_unlock(&m->mu);
	while ((q = m->ops->query(m->ctx)) == 1) {
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: kv plan: the copy engine's copies of the batch have not finished "
					 "in time (the batch stays open: finish again later)");
		gio_backoff(&spins);
	}
	pthread_mutex_lock(&m->mu);
	err = m->err;
	pthread_mutex_unlock(&m->mu);
	if (err == -EINVAL)
		return gio__fail(-EINVAL, "giouring: kv plan: the copy-engine mover cannot place request %u in the pool; "
				 "its group and the batch's later groups were not moved", m->bad_req);
	if (err == -ENOMEM)
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory for the copy-engine mover's copies");
	if (err)
		return gio__cuda_fail(err, "kv plan: the copy-engine mover's copies");
	if (q)
		return gio__cuda_fail(q, "kv plan: the copy-engine mover's copies");
	return 0;
}

void gio__kv_mover_info(struct gio__kv_mover *m, struct gio__kv_mover_stats *out)
{
	pthread_mutex_lock(&m->mu);
	*out = m->st;
	pthread_mutex_unlock(&m->mu);
	out->cpu_ns = 0;
	if (m->have_thread) {
		clockid_t cid;
		struct timespec ts;
		if (pthread_getcpuclockid(m->thr, &cid) == 0 && clock_gettime(cid, &ts) == 0)
			out->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
}
