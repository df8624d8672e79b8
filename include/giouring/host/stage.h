/**
 * @file giouring/host/stage.h
 * @brief Staging areas: pinned host memory a controller reads and writes for the staged path
 *        (docs/staged.md), made and registered by the library.
 *
 * A controller that cannot reach the KV pool (no peer-to-peer to GPU memory, or a pool the
 * controller is not given) moves each command's data through a slot of a staging area, and the
 * engine copies between the slot and the pool (giouring/kv/run.h). gio_ctx_stage_create() makes
 * one area for one context: `nrings` slot rings (one per queue pair of the plan device that uses
 * it) of `nslots` slots each, the memory registered with the context, and, where the controller
 * takes PRPs (no SGLs, or the URI's `dptr=prp`), the staging table with each slot's PRP list
 * in registered memory of its own. gio_ctx_stage_io() gives what a plan device points at
 * (gio_kv_io_dev::stage).
 */
#ifndef GIOURING_HOST_STAGE_H
#define GIOURING_HOST_STAGE_H

#include <stdint.h>

#include "../config.h"
#include "../kv/staged.h"

GIO_EXTERN_C_BEGIN

struct gio_ctx;
struct gio_ctx_stage;

/** @brief gio_ctx_stage_create() flag: an area the GPU engine's warps copy through (pinned,
 *  GPU-mapped). A GPU-engine plan keeps its own copy of the rings' flow control in GPU memory
 *  (gio_kv_plan_create()). */
#define GIO_CTX_STAGE_GPU 1u

/**
 * @brief Makes a staging area for @p ctx's controller: @p nrings rings of @p nslots slots of
 *        @p slot_bytes, in host memory registered with @p ctx.
 * @param ctx         the context (any target: `nvme-pci` maps the memory through VFIO).
 * @param nrings      rings, 1 to 64: one per queue pair of the plan device that uses the area.
 * @param nslots      slots per ring, a power of two from 1 to 65536 (a plan needs at least
 *                    GIO_KV_IO_GROUP_MAX: one group's commands).
 * @param slot_bytes  bytes per slot, a multiple of 4 from 4 to 1 GiB: at least a command's data
 *                    (object_bytes / cmds of the plan); rounded up to 4 KiB (the rings'
 *                    gio_stage::slot_bytes), so that every slot starts on a page.
 * @param flags       0 (the CPU engine copies: plain host memory), or GIO_CTX_STAGE_GPU (the
 *                    GPU engine copies: the slots and the staging table in pinned host memory
 *                    mapped for the GPU, at the same address there under unified addressing;
 *                    needs the CUDA runtime).
 * @param out         receives the area.
 * @return 0; `-EINVAL` (NULL arguments, a count or size out of range), `-EOPNOTSUPP` (an unknown
 *         flag), `-ENOMEM`, `-ENODEV` (GIO_CTX_STAGE_GPU without a CUDA runtime), a CUDA error of
 *         cudaHostAlloc as gio_cuda_errno() maps it, or gio_ctx_register()'s error (the memory is
 *         freed). The message names the problem.
 *
 * Any host thread. Every slot starts FREE.
 */
int gio_ctx_stage_create(struct gio_ctx *ctx, uint32_t nrings, uint32_t nslots, uint64_t slot_bytes, uint32_t flags,
			 struct gio_ctx_stage **out);

/**
 * @brief What a plan device points at (gio_kv_io_dev::stage): the rings, the staging table (NULL
 *        where the controller takes SGLs) and the slots.
 * @param st  the area, or NULL.
 * @return the description, valid until gio_ctx_stage_destroy(); NULL for a NULL @p st.
 */
const struct gio_kv_io_stage *gio_ctx_stage_io(const struct gio_ctx_stage *st);

/**
 * @brief Unregisters and frees a staging area.
 * @param st  the area, or NULL (then 0).
 * @return 0, or gio_ctx_unregister()'s error (the area is then kept: a controller may still
 *         write it; call again once the queue pairs that used it are destroyed).
 *
 * Any host thread, once no command that uses the area can still complete: after the plans
 * over it are destroyed, and after the queue pairs are destroyed where a command was lost
 * (a slot LOST: gio_stage_lose()).
 */
int gio_ctx_stage_destroy(struct gio_ctx_stage *st);

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_STAGE_H */
