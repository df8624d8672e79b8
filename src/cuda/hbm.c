/* GPU memory made and released on a stream of its own (src/cuda/hbm.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>

#include <giouring/ring/clock.h>

#include "../internal.h"
#include "hbm.h"

/* How long the zeroing of a new allocation may take. */
#define HBM_ZERO_TIMEOUT_NS (10ull * 1000000000ull)

int gio__cuda_stream_wait(const struct gio__cudart *rt, void *stream, uint64_t timeout_ns)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	uint32_t spins = 0;
	int e;
	/* Spin, then yield, then sleep: a plan's upload (tens of us) sits on an engine's path to
	 * its first layer, where a fixed 100 us sleep cost more than the copy. */
	while ((e = rt->stream_query(stream)) == GIO__CUDA_ERR_NOT_READY && !gio_deadline_passed(deadline))
		gio_backoff(&spins);
	return e;
}

int gio__hbm_alloc(struct gio__hbm *m, size_t len, const char *what)
{
	static int noticed;
	const struct gio__cudart *rt = gio__cudart();
	int e;
	if (!rt)
		return gio__fail(-ENODEV, "giouring: %s: %s", what, gio__cudart_why());
	if (!rt->dev_malloc || !rt->dev_free || !rt->memset_async || !rt->stream_create || !rt->stream_query ||
	    !rt->stream_destroy)
		return gio__fail(-ENODEV, "giouring: %s: libcudart.so lacks cudaMalloc, cudaFree, cudaMemsetAsync "
				 "or the stream calls", what);
	if ((e = rt->stream_create(&m->stream, GIO__CUDA_STREAM_NON_BLOCKING))) {
		m->stream = NULL;
		return gio__cuda_fail(e, "%s: cudaStreamCreateWithFlags", what);
	}
	if (rt->malloc_async && rt->free_async) {
		e = rt->malloc_async(&m->base, len, m->stream);
		m->async = 1;
	} else {
		if (!__atomic_exchange_n(&noticed, 1, __ATOMIC_RELAXED))
			fprintf(stderr, "giouring: notice: libcudart.so has no cudaMallocAsync/cudaFreeAsync (CUDA < 11.2): "
				"GPU memory of queue pairs and plans is released with cudaFree, which waits while any kernel runs\n");
		e = rt->dev_malloc(&m->base, len);
	}
	if (e) {
		m->base = NULL;
		return gio__cuda_fail(e, "%s: %s of %zu bytes", what, m->async ? "cudaMallocAsync" : "cudaMalloc", len);
	}
	/* The allocation and the zeroing done before other streams see the memory. */
	e = rt->memset_async(m->base, 0, len, m->stream);
	if (!e)
		e = gio__cuda_stream_wait(rt, m->stream, HBM_ZERO_TIMEOUT_NS);
	if (e == GIO__CUDA_ERR_NOT_READY)
		return gio__fail(-ETIME, "giouring: %s: zeroing %zu bytes of GPU memory did not finish within 10 s", what, len);
	if (e)
		return gio__cuda_fail(e, "%s: zeroing %zu bytes of GPU memory (cudaMemsetAsync)", what, len);
	return 0;
}

void gio__hbm_free(struct gio__hbm *m)
{
	const struct gio__cudart *rt;
	if (!m->base && !m->stream)
		return;
	rt = gio__cudart(); /* loaded: it made the memory */
	if (m->base && m->async)
		(void)rt->free_async(m->base, m->stream);
	else if (m->base)
		(void)rt->dev_free(m->base);
	if (m->stream) {
		(void)gio__cuda_stream_wait(rt, m->stream, 1000000000ull);
		(void)rt->stream_destroy(m->stream);
	}
	m->base = m->stream = NULL;
}
