/* The copy-engine mover's copier over the CUDA runtime (see cecopy.h). */
#include <errno.h>
#include <string.h>

#include "../internal.h"
#include "cecopy.h"
#include "cudart.h"

enum { CHUNK = 4096 };

static int ce_copy(void *ctx, void *const *dst, const void *const *src, const size_t *len, size_t n)
{
	const struct gio__ce_copier *c = ctx;
	struct gio__cuda_memcpy_attrs at;
	size_t idx = 0, k;
	int e = 0;
	memset(&at, 0, sizeof(at));
	at.src_access_order = GIO__CUDA_SRC_ORDER_STREAM; /* the slots are read when the copy runs */
	/* Calls of at most CHUNK copies: a pass after a stall may find a whole batch's groups. */
	for (k = 0; k < n && !e; k += CHUNK)
		e = gio__cudart()->memcpy_batch_async(dst + k, src + k, len + k, n - k < CHUNK ? n - k : CHUNK, &at, &idx, 1,
						      c->stream);
	return e;
}

static int ce_mark(void *ctx, uint32_t *const *dst, uint32_t value, size_t n)
{
	const struct gio__ce_copier *c = ctx;
	struct gio__cuda_memcpy_attrs at;
	const void *srcs[256];
	size_t lens[256], idx = 0, k, i;
	int e = 0;
	memset(&at, 0, sizeof(at));
	/* The value is read during the call, so it may live on this stack; the stores still run in
	 * stream order, after the copies queued before them. */
	at.src_access_order = GIO__CUDA_SRC_ORDER_API_CALL;
	for (i = 0; i < 256; i++) {
		srcs[i] = &value;
		lens[i] = sizeof(value);
	}
	for (k = 0; k < n && !e; k += 256)
		e = gio__cudart()->memcpy_batch_async((void *const *)(dst + k), srcs, lens, n - k < 256 ? n - k : 256, &at,
						      &idx, 1, c->stream);
	return e;
}

static int ce_query(void *ctx)
{
	const struct gio__ce_copier *c = ctx;
	const int e = gio__cudart()->stream_query(c->stream);
	return e == GIO__CUDA_ERR_NOT_READY ? 1 : e;
}

static int ce_attach(void *ctx)
{
	const struct gio__ce_copier *c = ctx;
	const struct gio__cudart *rt = gio__cudart();
	return rt->set_device ? rt->set_device(c->device) : 0;
}

const struct gio__kv_mover_ops gio__ce_copier_ops = {ce_copy, ce_mark, ce_query, ce_attach};

int gio__ce_copier_init(struct gio__ce_copier *c, void *stream, const char *what)
{
	const struct gio__cudart *rt = gio__cudart();
	int e;
	memset(c, 0, sizeof(*c));
	if (!rt)
		return gio__fail(-ENODEV, "giouring: %s: %s", what, gio__cudart_why());
	if (!rt->memcpy_batch_async || !rt->stream_query)
		return gio__fail(-ENOTSUP, "giouring: %s: the copy-engine mover needs the CUDA 13 runtime's "
				 "cudaMemcpyBatchAsync, which this libcudart.so lacks", what);
	if (rt->get_device && (e = rt->get_device(&c->device)) != 0)
		return gio__cuda_fail(e, "%s: cudaGetDevice", what);
	c->stream = stream;
	return 0;
}
