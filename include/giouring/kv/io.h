/**
 * @file giouring/kv/io.h
 * @brief One layer's transfers of a batch of KV chunks over N devices: the plan's device view,
 *        the command each request becomes, and how results and layer completion are recorded
 *        (the CPU engine that runs a layer: giouring/kv/run.h).
 *
 * A batch moves the layer-l objects of its chunks between a KV pool and a store's devices
 * (giouring/kv/store.h): each chunk is in one slot of one device and goes to or from one pool
 * block. Its layer-l object is one command where the device's P2P table has one entry per object
 * (an SGL descriptor, with a segment list for an object of several runs, or PRPs chaining its
 * runs): it reads or writes object_bytes at the chunk's first LBA plus l x object_bytes, with the
 * data pointer of table entry `l x blocks + block` (giouring/kv/pool.h). Where PRPs cannot chain
 * an object's runs (gio_kv_table_prp_cmds()), the device takes one command per run
 * (gio_kv_io_dev::cmds): command k moves run k, object_bytes / cmds at k x that further on, with
 * entry `(l x blocks + block) x cmds + k`. The plan's **requests** are those commands, each with
 * its own result; the plan's host half merges a chunk's into one (giouring/kv/plan.h). The host plans a batch once (giouring/kv/batch.h); each layer is then
 * one pass of an engine over the plan's **groups**: runs of at most 32 requests of one device,
 * one reservation and one doorbell each, so that a warp submits a group with gio_submit_warp()
 * (giouring/kv/layer.cuh) and the CPU engine (giouring/kv/run.h) a group per doorbell.
 *
 * Completion: every request gets a result (the first failure of its layers: result, NVMe status
 * and layer). Each layer has a completion word that holds the **epoch** of the last batch whose
 * layer finished: whoever records the last result of a layer stores the batch's epoch there
 * (release), and a waiter compares with its batch's epoch (acquire), so that words are never
 * reset and a wait on another stream cannot see a stale reset. A per-layer count (reset when
 * the batch is planned) says when the last result is in.
 *
 * Everything here is pure protocol logic over plain data (GIO_HD): the GPU engine and the CPU
 * engine build the same commands and record results the same way.
 */
#ifndef GIOURING_KV_IO_H
#define GIOURING_KV_IO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/sqe.h"
#include "../proto/prep.h"
#include "../ring/clock.h"
#include "../ring/ordering.h"
#include "../ring/qp.h"

GIO_EXTERN_C_BEGIN

/** @brief Most requests of one group: a warp's lanes. */
#define GIO_KV_IO_GROUP_MAX 32u

struct gio_kv_io_stage; /* giouring/kv/staged.h */
struct gio_kv_pool;     /* giouring/kv/pool.h */
struct gio_kv_runs;

/** @brief One device of a plan: where its commands go, and the data pointers they take. */
struct gio_kv_io_dev {
	struct gio_qp *const *qps;  /**< Queue pairs, usable by the engine that runs the plan (GPU: device
				         pointers in device memory); a group uses qps[group.qp % nqps]. */
	const union gio_dptr *table; /**< The P2P table for this device's bus addresses: entry
				          `layer x blocks + block` is the data pointer of that object. */
	uint32_t nqps;              /**< Queue pairs, at least 1. */
	uint32_t nsid;              /**< Namespace. */
	uint32_t lba_shift;         /**< log2 of its block size. */
	uint32_t psdt;              /**< GIO_PSDT_SGL_MPTR (table of SGL descriptors) or GIO_PSDT_PRP (PRP pairs). */
	uint32_t cmds;              /**< Commands per object, 0 or 1: one, its table an entry per object; more:
				         one per run of the object, its table `cmds` entries per object
				         (gio_kv_table_prp_cmds()). */
	const struct gio_kv_io_stage *stage; /**< NULL: peer-to-peer (the controller reaches the pool through
					          `table`). Else the staged path: each command's data goes through
					          a slot of the device's staging (giouring/kv/staged.h), and
					          `table` is not read. */
};

/** @brief One request: a command of a chunk on a device, and the pool block it moves to or from. */
struct gio_kv_io_req {
	uint64_t slba;  /**< LBA of the chunk's layer-0 object. */
	uint32_t block; /**< Pool block. */
	uint16_t dev;   /**< Device index. */
	uint16_t part;  /**< Which of the object's commands, below the device's cmds (0 where it takes one). */
};

/** @brief A run of requests of one device, issued with one reservation and one doorbell. */
struct gio_kv_io_group {
	uint32_t first; /**< First request. */
	uint16_t count; /**< Requests, 1 to GIO_KV_IO_GROUP_MAX. */
	uint16_t dev;   /**< Their device. */
	uint32_t qp;    /**< Which of the device's queue pairs, modulo its nqps: the plan numbers each
			     device's groups 0, 1, 2, ... so that they spread over its queue pairs. */
};

/** @brief A request's result over the layers run so far: its first failure, or success. */
struct gio_kv_io_result {
	int32_t rc;      /**< 0, `-EIO` (see status), `-ETIME`, `-EFAULT` (a checked queue pair refused the
			      data pointer), `-EINVAL` (a command the request could not form). */
	uint16_t status; /**< The NVMe status field of that failure (0 unless -EIO). */
	uint16_t layer;  /**< The layer that failed. */
};

/**
 * @brief A staged load group's request to the copy-engine mover (gio_kv_plan_params::mover,
 *        docs/staged.md "Design E"): written by the group's warp, in pinned host memory, once its
 *        commands have completed; read by the plan's mover thread.
 *
 * The warp writes `mask` and `slot0` (one 8-byte store), then a system-scope fence, then `epoch`:
 * a reader that sees the batch's epoch (acquire) sees the rest.
 */
struct gio_kv_move_req {
	uint32_t mask;  /**< Lanes whose command succeeded: their objects are moved. */
	uint32_t slot0; /**< The group's first staging ticket (lane k's slot is slot0 + k). */
	uint32_t epoch; /**< The batch (gio_kv_io_plan::epoch); written last. */
	uint32_t rsvd;  /**< Zero. */
};
/* The warp stores mask and slot0 as one little-endian 8-byte word (mask low), then the epoch. */
GIO_STATIC_ASSERT(offsetof(struct gio_kv_move_req, mask) == 0 && offsetof(struct gio_kv_move_req, slot0) == 4,
		  "gio_kv_move_req: mask and slot0 one 8-byte word");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_move_req, epoch) == 8 && sizeof(struct gio_kv_move_req) == 16,
		  "gio_kv_move_req: 16 bytes, the epoch apart");

/** @brief The plan of one batch as an engine reads it: plain data, passed to kernels by value. */
struct gio_kv_io_plan {
	const struct gio_kv_io_dev *devs;     /**< Devices, `ndevs`. */
	const struct gio_kv_io_req *reqs;     /**< Requests, `nreqs`. */
	const struct gio_kv_io_group *groups; /**< Groups, `ngroups`, covering every request once. */
	struct gio_kv_io_result *results;     /**< One per request. */
	uint32_t *layer_count;                /**< Per layer: results recorded in this pass. */
	uint32_t *layer_done;                 /**< Per layer: the epoch of the last pass finished (where
					           the engine's waiters poll: HBM for the GPU engine). */
	uint32_t *layer_done_host;            /**< Per layer: the same for the host to poll (pinned memory,
					           written at system scope), or NULL. */
	uint64_t object_bytes;                /**< Bytes of one layer's object: whole blocks of every device. */
	uint64_t timeout_ns;                  /**< Deadline of each group's commands, from its submission; with the copy-engine mover, also of a load group's moves, from its request. */
	uint32_t ndevs;                       /**< Devices. */
	uint32_t nreqs;                       /**< Requests (may be 0: a layer pass then only signals). */
	uint32_t ngroups;                     /**< Groups. */
	uint32_t layers;                      /**< Layers of a chunk. */
	uint32_t blocks;                      /**< Blocks of the pool (P2P table: layers x blocks entries). */
	uint32_t epoch;                       /**< This batch's epoch (never 0). */
	uint32_t write;                       /**< 1: the batch writes (save), 0: it reads (load). */
	uint32_t scope;                       /**< GIO_SCOPE_GPU or GIO_SCOPE_SYS: of the completion words. */
	const struct gio_kv_pool *pool;       /**< The pool as the engine reaches it, with `runs`: what a staged
					           device's objects are copied to and from (NULL where no device
					           is staged). */
	const struct gio_kv_runs *runs;       /**< The pool's runs (gio_kv_pool_runs()). */
	uint32_t poll_ns;                     /**< GPU engine: the least pause between a warp's completion polls
					           (gio_kv_plan_params::poll_ns; 0: the default back-off). */
	uint32_t move_depth;                  /**< GPU engine, staged devices: loads in flight a lane while
					           moving (gio_kv_plan_params::move_depth), 1 to 16. */
	uint32_t move_gcap;                   /**< With move_req: entries per layer in move_req and move_done. */
	struct gio_kv_move_req *move_req;     /**< GPU engine, a load with the copy-engine mover
					           (gio_kv_plan_params::mover): group g of layer l asks for its
					           moves at `move_req[l x move_gcap + g]` (pinned host memory);
					           NULL: the warps move the objects themselves. */
	const uint32_t *move_done;            /**< With move_req: the mover stores the epoch at the same index
					           (GPU memory), in stream order after the group's copies. */
	const uint32_t *cq_mirror;            /**< With move_req, GIO_KV_COMPLETIONS_MIRROR: per queue pair
					           (the devices' in order), a word in GPU memory the mover stores
					           a new value in when that CQ changed; NULL: the warps poll. */
};

/** How long a warp waiting on its CQ's mirror word (gio_kv_io_plan::cq_mirror) goes without
 *  reading the CQ itself: a completion the mover has not mirrored yet is seen after at most this. */
#define GIO_KV_MIRROR_FALLBACK_NS 50000u

/* Request i's Read or Write for `layer` without its data pointer: the checks and the encoding
 * every data path shares (P2P table here, staging slots in giouring/kv/staged.h). Gives the
 * command's bytes and its P2P table entry. */
GIO_HD int gio__kv_io_rw(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t i, struct gio_sqe *sqe,
			 uint64_t *bytes_out, uint64_t *entry_out)
{
	const struct gio_kv_io_req *r = &p->reqs[i];
	const struct gio_kv_io_dev *d;
	uint64_t off, mask, bytes;
	uint32_t cmds;
	int rc;
	if (layer >= p->layers || r->dev >= p->ndevs || r->block >= p->blocks)
		return -EINVAL;
	d = &p->devs[r->dev];
	cmds = d->cmds ? d->cmds : 1u;
	bytes = p->object_bytes / cmds;
	mask = ((uint64_t)1 << d->lba_shift) - 1;
	if (r->part >= cmds || bytes * cmds != p->object_bytes || (bytes & mask) || bytes == 0)
		return -EINVAL;
	off = (uint64_t)layer * p->object_bytes + (uint64_t)r->part * bytes;
	rc = gio_prep_rw(sqe, p->write ? GIO_NVM_OPC_WRITE : GIO_NVM_OPC_READ, d->nsid, r->slba + (off >> d->lba_shift),
			 bytes >> d->lba_shift);
	if (rc)
		return rc;
	*bytes_out = bytes;
	*entry_out = ((uint64_t)layer * p->blocks + r->block) * cmds + r->part;
	return 0;
}

/**
 * @brief The command of request @p i for layer @p layer.
 * @param p      the plan.
 * @param layer  the layer, below p->layers.
 * @param i      the request, below p->nreqs.
 * @param sqe    receives the Read or Write (CID left to the ring).
 * @return 0, or `-EINVAL` when the request names a device, block or command beyond the plan, or
 *         the command's bytes are not whole blocks of its device or too long for one command.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_io_sqe(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t i, struct gio_sqe *sqe)
{
	const struct gio_kv_io_dev *d;
	uint64_t bytes, entry;
	const int rc = gio__kv_io_rw(p, layer, i, sqe, &bytes, &entry);
	if (rc)
		return rc;
	d = &p->devs[p->reqs[i].dev];
	sqe->dptr = d->table[entry];
	gio_sqe_set_psdt(sqe, (uint8_t)d->psdt);
	return 0;
}

/**
 * @brief Records request @p i's result for layer @p layer.
 * @param p       the plan.
 * @param layer   the layer.
 * @param i       the request.
 * @param rc      its result (0 or -errno).
 * @param status  its NVMe status field.
 *
 * Any thread, host or device; one per request and layer. A failure is kept only where the request
 * has none yet, so a request ends with its first failing layer's result. Count the result
 * afterwards with gio_kv_io_count().
 */
GIO_HD void gio_kv_io_result_only(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t i, int32_t rc,
				  uint16_t status)
{
	struct gio_kv_io_result *x = &p->results[i];
	if (rc == 0 || x->rc != 0)
		return;
	x->status = status;
	x->layer = (uint16_t)layer;
	x->rc = rc;
}

/**
 * @brief Counts @p n results of layer @p layer as recorded.
 * @param p      the plan.
 * @param layer  the layer.
 * @param n      results recorded (a request's, or a warp's group's).
 * @return 1 when they were the layer's last: the caller then calls gio_kv_io_layer_signal().
 *
 * Any thread, host or device, after writing those results (the count's acq_rel orders them first).
 */
GIO_HD int gio_kv_io_count(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t n)
{
	return gio_fetch_add_in(p->scope, &p->layer_count[layer], n) + n == p->nreqs;
}

/**
 * @brief Marks layer @p layer of the plan's batch finished: its completion word takes the epoch.
 * @param p      the plan.
 * @param layer  the layer.
 *
 * Any thread, host or device; the one whose gio_kv_io_count() returned 1, or any thread of a pass
 * over a plan without requests.
 */
GIO_HD void gio_kv_io_layer_signal(const struct gio_kv_io_plan *p, uint32_t layer)
{
	/* The count's acquire made every result of the layer visible to this thread; the fences
	 * pass them on (cumulatively) to whoever reads either word. */
	gio_fence_release_in(p->scope);
	gio_store_release_in(p->scope, &p->layer_done[layer], p->epoch);
	if (p->layer_done_host) {
		gio_fence_release_in(GIO_SCOPE_SYS);
		gio_store_release_in(GIO_SCOPE_SYS, &p->layer_done_host[layer], p->epoch);
	}
}

/**
 * @brief Whether layer @p layer of the plan's batch has finished (every result recorded).
 * @param p      the plan.
 * @param layer  the layer, below p->layers (not checked).
 * @return 1 when finished, else 0.
 *
 * Any thread, host or device; acquire: the layer's data and results may be read after a 1.
 * Epochs compare modulo 2^32, so a word holding a later batch's epoch also reads finished.
 */
GIO_HD int gio_kv_io_layer_finished(const struct gio_kv_io_plan *p, uint32_t layer)
{
	return (int32_t)(gio_load_acquire_in(p->scope, &p->layer_done[layer]) - p->epoch) >= 0;
}

/**
 * @brief Waits until layer @p layer of the plan's batch has finished, up to a deadline.
 * @param p         the plan.
 * @param layer     the layer.
 * @param deadline  absolute deadline (giouring/ring/clock.h).
 * @return 0, `-ETIME` at the deadline, or `-EINVAL` for a layer beyond the plan.
 *
 * Any thread, host or device (a compute kernel's one thread, say, then a barrier).
 */
GIO_HD int gio_kv_io_layer_wait(const struct gio_kv_io_plan *p, uint32_t layer, uint64_t deadline)
{
	uint32_t spins = 0;
	if (layer >= p->layers)
		return -EINVAL;
	while (!gio_kv_io_layer_finished(p, layer)) {
		if (gio_deadline_passed(deadline))
			return -ETIME;
		gio_backoff(&spins);
	}
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_KV_IO_H */
