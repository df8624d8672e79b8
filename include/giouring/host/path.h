/**
 * @file giouring/host/path.h
 * @brief Which way GPU memory (a KV pool in HBM) and a controller exchange data: peer-to-peer,
 *        or staged through pinned host memory (docs/staged.md), chosen per context.
 *
 * Peer-to-peer needs the controller to reach GPU memory: on `nvme-pci`, a dma-buf of the range
 * from the CUDA driver imported into iommufd (gio_ctx_register_ex() with GIO_MEM_HBM); on a
 * software target, its CPU executor copies into GPU memory (gio_ctx_register_device()). Where
 * that registration is refused with `-EOPNOTSUPP` (no iommufd, proprietary GPU kernel modules, a
 * kernel that cannot pin the GPU driver's dma-buf), the staged path moves the data through a
 * staging area (giouring/host/stage.h) instead. The target's URI may force either:
 * `path=auto` (the default), `path=p2p` (peer-to-peer or the refusal), `path=staged`.
 */
#ifndef GIOURING_HOST_PATH_H
#define GIOURING_HOST_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

struct gio_ctx;

/** @name Paths (gio_gpu_path::path) and the URI's `path=` (gio_gpu_path::asked)
 * @{ */
#define GIO_GPU_PATH_AUTO 0u   /**< URI `path=auto` (or none): peer-to-peer where it registers, else staged. */
#define GIO_GPU_PATH_P2P 1u    /**< The controller moves data to and from GPU memory itself. */
#define GIO_GPU_PATH_STAGED 2u /**< Through a staging area in pinned host memory; GPU warps copy. */
/** @} */

/** @brief What gio_ctx_gpu_path() chose, and why. */
struct gio_gpu_path {
	uint32_t path;  /**< GIO_GPU_PATH_P2P or GIO_GPU_PATH_STAGED. */
	uint32_t asked; /**< The URI's `path=`: GIO_GPU_PATH_AUTO, _P2P or _STAGED. */
	int32_t p2p_rc; /**< The peer-to-peer registration's result: 0, its `-errno` (staged after a
			     refusal), or 1 where it was not tried (`path=staged`). */
	uint32_t reserved; /**< Zero. */
	uint64_t addr;  /**< Peer-to-peer: the bus address of the memory (as gio_ctx_register_ex()). */
	char why[512];  /**< One line: the path and the reason (the refusal's message where staged). */
};

/**
 * @brief Printable name of a path.
 * @param path  GIO_GPU_PATH_P2P, _STAGED or _AUTO.
 * @return "p2p", "staged", or "auto" (for anything else too); static storage.
 */
const char *gio_gpu_path_name(uint32_t path);

/**
 * @brief Chooses how GPU memory [@p ptr, @p ptr + @p len) and @p ctx's controller exchange data,
 *        registering it for peer-to-peer where that path is taken.
 * @param ctx  the context.
 * @param ptr  GPU memory (a device pointer): the KV pool, say.
 * @param len  its length, at least 1.
 * @param out  receives the choice and its reason.
 * @return 0 with @p out filled: peer-to-peer (the memory is registered: gio_ctx_unregister() it
 *         with @p ptr later) or staged (nothing registered: make a staging area,
 *         gio_ctx_stage_create(), and give the plan device its gio_ctx_stage_io()); `-EINVAL`
 *         (NULL arguments, zero @p len); `-EOPNOTSUPP` where the URI says `path=p2p` and
 *         peer-to-peer is refused (gio_last_error() names the missing step); any other error of
 *         the registration as gio_ctx_register_ex() returns it (no fallback: only a missing
 *         capability is a reason to stage).
 *
 * Any host thread. On `nvme-pci` this is gio_ctx_register_ex(..., GIO_MEM_HBM): the CUDA driver's
 * dma-buf of the range imported into iommufd; on a software target gio_ctx_register_device().
 */
int gio_ctx_gpu_path(struct gio_ctx *ctx, void *ptr, size_t len, struct gio_gpu_path *out);

/**
 * @brief The path the context's URI asks for (`path=`), without registering anything.
 * @param ctx  the context, or NULL.
 * @return GIO_GPU_PATH_AUTO (no `path=`, or `path=auto`), GIO_GPU_PATH_P2P or
 *         GIO_GPU_PATH_STAGED; GIO_GPU_PATH_AUTO for a NULL @p ctx.
 *
 * Any thread. For a caller whose pool is in host memory, where gio_ctx_gpu_path() does not
 * apply: `path=staged` there still asks the engine to copy through a staging area (the CPU
 * engine's staged path), which is how that path is exercised without a GPU.
 */
uint32_t gio_ctx_path_asked(const struct gio_ctx *ctx);

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_PATH_H */
