/* Choosing peer-to-peer or staged for GPU memory (giouring/host/path.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/host/path.h>

#include "../internal.h"
#include "ctx.h"

const char *gio_gpu_path_name(uint32_t path)
{
	return path == GIO_GPU_PATH_P2P ? "p2p" : path == GIO_GPU_PATH_STAGED ? "staged" : "auto";
}

uint32_t gio_ctx_path_asked(const struct gio_ctx *ctx)
{
	return ctx ? (uint32_t)ctx->gpu_path : GIO_GPU_PATH_AUTO;
}

int gio_ctx_gpu_path(struct gio_ctx *ctx, void *ptr, size_t len, struct gio_gpu_path *out)
{
	const char *who;
	uint64_t addr = 0;
	int rc;
	gio__clear_error();
	if (!ctx || !ptr || !len || !out)
		return gio__fail(-EINVAL, "giouring: gio_ctx_gpu_path: %s", !len && ctx && ptr && out ? "zero length" : "NULL argument");
	memset(out, 0, sizeof(*out));
	out->asked = (uint32_t)ctx->gpu_path;
	who = ctx->be.mmio ? "the controller" : "the software target";
	if (out->asked == GIO_GPU_PATH_STAGED) {
		out->path = GIO_GPU_PATH_STAGED;
		out->p2p_rc = 1;
		snprintf(out->why, sizeof(out->why), "staged: path=staged in the URI (peer-to-peer not tried)");
		return 0;
	}
	rc = gio_ctx_register_ex(ctx, ptr, len, GIO_MEM_HBM, &addr);
	if (rc == 0) {
		out->path = GIO_GPU_PATH_P2P;
		out->addr = addr;
		snprintf(out->why, sizeof(out->why), "p2p: %s reaches the GPU memory (%s)", who,
			 ctx->be.mmio ? "a dma-buf of it imported into iommufd" : "its CPU executor copies on CUDA streams");
		return 0;
	}
	out->p2p_rc = rc;
	if (rc != -EOPNOTSUPP || out->asked == GIO_GPU_PATH_P2P)
		return rc; /* the registration's message stands */
	out->path = GIO_GPU_PATH_STAGED;
	snprintf(out->why, sizeof(out->why), "staged: peer-to-peer refused: %s", gio_last_error());
	gio__clear_error();
	return 0;
}
