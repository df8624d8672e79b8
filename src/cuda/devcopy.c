/* The CPU executor's copy engine for device memory (struct gio__devcopy, ../exec/devcopy.h)
 * through the CUDA runtime: a stream per executor thread, cudaMemcpyAsync per segment. */
#include <errno.h>
#include <stdio.h>

#include <giouring/host/ctx.h>

#include "../exec/devcopy.h"
#include "cudart.h"
#include "devcopy.h"

/* priv: the context's GPU ordinal (every device region lies on it). The stream belongs to that
 * GPU, so the executor thread selects it first (cudaSetDevice is per thread). */
static int stream_create(void *priv, void **stream)
{
	const struct gio__cudart *rt = gio__cudart();
	int e = rt->set_device(*(const int *)priv);
	if (e == 0)
		e = rt->stream_create(stream, GIO__CUDA_STREAM_NON_BLOCKING);
	if (e) {
		fprintf(stderr, "giouring: executor: cannot make a copy stream: %s: %s\n", gio__cuda_name(e), gio__cuda_err(e));
		return gio_cuda_errno(e);
	}
	return 0;
}

static void stream_destroy(void *priv, void *stream)
{
	(void)priv;
	(void)gio__cudart()->stream_destroy(stream); /* CUDA releases it once the queued copies are done */
}

static int copy(void *priv, void *stream, void *dst, const void *src, size_t len, int to_dev)
{
	const struct gio__cudart *rt = gio__cudart();
	/* The executor thread's current GPU: the streams' (selected once per thread). */
	static __thread int selected = -1;
	int e;
	if (selected != *(const int *)priv && rt->set_device(*(const int *)priv) == 0)
		selected = *(const int *)priv;
	e = rt->memcpy_async(dst, src, len, GIO__CUDA_MEMCPY_DEFAULT, stream);
	if (e) {
		fprintf(stderr, "giouring: executor: cudaMemcpyAsync %s of %zu bytes: %s: %s\n", to_dev ? "to the GPU" : "from the GPU",
			len, gio__cuda_name(e), gio__cuda_err(e));
		return gio_cuda_errno(e);
	}
	return 0;
}

static int query(void *priv, void *stream)
{
	const int e = gio__cudart()->stream_query(stream);
	(void)priv;
	if (e == 0)
		return 0;
	if (e == GIO__CUDA_ERR_NOT_READY)
		return -EAGAIN;
	fprintf(stderr, "giouring: executor: a copy to or from the GPU failed: %s: %s\n", gio__cuda_name(e), gio__cuda_err(e));
	return gio_cuda_errno(e);
}

/* From the process's pinned cache (pinned.h): cudaFreeHost would wait for every kernel on the
 * device, and the executor replaces bounce buffers while GPU producers spin. Portable and
 * mapped; page-aligned, so O_DIRECT takes it. */
static void *host_alloc(void *priv, size_t len)
{
	int e;
	(void)priv;
	return gio__pinned_get(&gio__cudart_pinned, len, &e);
}

static void host_free(void *priv, void *p)
{
	(void)priv;
	(void)gio__pinned_put(p);
}

void gio__devcopy_cuda(struct gio__devcopy *dc, int *ordinal, uint64_t timeout_ns)
{
	dc->priv = ordinal;
	dc->timeout_ns = timeout_ns;
	dc->stream_create = stream_create;
	dc->stream_destroy = stream_destroy;
	dc->copy = copy;
	dc->query = query;
	dc->host_alloc = host_alloc;
	dc->host_free = host_free;
	dc->abandoned_freeable = 0;
	dc->name = "CUDA";
}
