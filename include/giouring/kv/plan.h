/**
 * @file giouring/kv/plan.h
 * @brief Per-layer load and save of a batch of KV chunks: plan once per batch (lookups, slots,
 *        destinations), then one call per layer, on the GPU (one kernel launch) or a CPU thread.
 *
 * A plan is made once per store and engine (gio_kv_plan_create(): every allocation happens
 * there, before the engine's persistent kernels start), then serves batch after batch:
 *
 * 1. gio_kv_plan_load() (restore) or gio_kv_plan_save() (offload) plans a batch: each request is
 *    a chunk key and the pool block its layer objects go to or come from. Loads look the keys up
 *    and pin the hits (a miss is no request); saves reserve a slot per key and write the slots'
 *    stale entries FREE (the commit protocol's first step, docs/store-format.md). Lookups and
 *    allocation happen here, on the host, off the per-layer path.
 * 2. Each layer is then one call: gio_kv_load_layer() / gio_kv_save_layer() of
 *    giouring/kv/layer.cuh (one launch of the library's I/O kernel on the caller's stream, O(1)
 *    CPU, every device in that launch), or gio_kv_plan_run_layer() with the CPU engine (a thread
 *    of the plan runs the layer with the same commands: CPU-executed targets, and tests without a
 *    GPU). Compute kernels wait for a layer on the device (gio_kv_wait_layer() of layer.cuh), the
 *    host with gio_kv_plan_wait_layer().
 * 3. gio_kv_plan_finish() ends the batch: it waits for the layers run, reports each request's
 *    result (the first failing layer's NVMe status), and for a save commits every chunk whose
 *    layers all succeeded (Flush, VALID entries, Flush) and gives the others' slots back; for a
 *    load it drops the pins.
 *
 * Each layer of a batch runs at most once; a save must run every layer before its chunks can
 * commit (a chunk with a layer not run is given back). The P2P table (giouring/kv/pool.h,
 * gio_kv_table_entry(); built on the GPU with gio_kv_table_build() of layer.cuh) gives each
 * object's data pointer, per device.
 *
 * Thread safety: one thread drives a plan (plan, layer calls, finish); gio_kv_plan_wait_layer()
 * from any thread. The store may serve other calls meanwhile (its lock orders them).
 */
#ifndef GIOURING_KV_PLAN_H
#define GIOURING_KV_PLAN_H

#include <stdint.h>

#include "../config.h"
#include "format.h"
#include "io.h"
#include "store.h"

GIO_EXTERN_C_BEGIN

struct gio_kv_store;

/** @brief A plan (opaque). */
struct gio_kv_plan;

/** @name gio_kv_plan_params::engine
 * @{ */
#define GIO_KV_ENGINE_CPU 0u /**< A thread of the plan runs each layer (gio_kv_plan_run_layer()). */
#define GIO_KV_ENGINE_GPU 1u /**< The library's I/O kernel runs each layer (gio_kv_load_layer()). */
/** @} */

/** @brief How a plan runs its layers. */
struct gio_kv_plan_params {
	uint32_t engine;       /**< GIO_KV_ENGINE_CPU or GIO_KV_ENGINE_GPU. */
	uint32_t max_requests; /**< Most requests of one batch, at least 1. */
	uint32_t blocks;       /**< Blocks of the pool (the P2P tables' `layer x blocks + block` entries). */
	uint32_t io_ctas;      /**< GPU: thread blocks of the I/O kernel, one per SM (0: 8). */
	uint32_t io_warps;     /**< GPU: warps per thread block, 1 to 32 (0: 8); where the kernel's registers hold fewer, the launch gives the same warps in more blocks. */
	uint32_t scope;        /**< GPU: GIO_SCOPE_GPU (0) or GIO_SCOPE_SYS for the layer words (sys where a
				    waiter runs on another device). */
	uint64_t timeout_ns;   /**< Deadline of each command group (0: the store's). */
	const struct gio_kv_io_dev *devs; /**< One per device of the store, in the store's device order:
					       its queue pairs (usable by the engine: host pointers for the CPU
					       engine, device pointers for the GPU engine), namespace, block size
					       and P2P table (readable by the engine), and its commands per
					       object (gio_kv_io_dev::cmds: more than one where PRPs cannot
					       chain an object's runs). Copied. A device whose `stage` is set
					       takes the staged path (giouring/kv/staged.h): its P2P table may be
					       NULL, each of its rings needs at least GIO_KV_IO_GROUP_MAX slots of
					       at least object_bytes / cmds bytes, and the staging (rings, table,
					       area) must outlive the plan. `stage` and its rings are read here,
					       in host memory, for both engines. The CPU engine reserves from
					       those rings; the GPU engine takes a copy of them into its own GPU
					       memory (every slot FREE but those LOST in them), only its warps
					       use it, and gio_kv_plan_destroy() marks the slots it lost LOST in
					       the caller's rings (or all of them, where a batch was abandoned
					       or the copy back failed): the table and
					       the area must then be reachable by the GPU (gio_ctx_stage_create()
					       with GIO_CTX_STAGE_GPU), and no other plan may use the same area
					       while this one runs batches. */
	const struct gio_kv_pool *pool;   /**< The pool as the engine reaches it (giouring/kv/pool.h): needed
					       where a device is staged, since the engine copies each object
					       between its slot and the pool; else may be NULL. Copied, with its table of bases
					       (the plan keeps its own, in GPU memory too for the GPU engine). */
	uint32_t poll_ns;      /**< GPU engine: the least pause between a warp's polls of its completions
				    (0: a back-off from 32 ns to 1 us). Where the completion queues are in
				    host memory (pinned queue pairs, the staged path) each poll reads across
				    PCIe: longer pauses read less, at the cost of completion latency. */
	uint32_t move_depth;   /**< GPU engine, staged devices: the 16-byte loads each lane keeps in flight
				    while its warp moves an object between its slot and the pool, 1 to 16
				    (0: GIO_KV_MOVE_DEPTH_DEFAULT). Deeper moves an object faster from fewer
				    warps; every load in flight across PCIe also costs kernels in the other
				    SM partition (docs/staged.md, "The mover's loads in flight": moving the
				    same bytes at the same rate, 16 cost a GEMM 4.4-5.0%, 4 cost it
				    0.6-0.9%; restores at 4 ran at 37 GB/s against 45 at 16). */
	uint32_t mover;        /**< GPU engine, staged devices: who moves a load's objects from their slots
				    into the pool: GIO_KV_MOVER_SM (0: the group's warp, move_depth loads
				    in flight a lane) or GIO_KV_MOVER_COPY_ENGINE (a thread of the plan
				    issues the copies to the copy engine as groups complete; the warps only
				    submit, reap and wait on a word in GPU memory: docs/staged.md, "Design
				    E"). Saves are moved by the warps either way. The copies run on
				    a stream of the plan while the I/O kernel waits for them: as for
				    the CPU-executed targets' copies (gio_ctx_register_device()), set
				    CUDA_DEVICE_MAX_CONNECTIONS=32 before the process's first CUDA call,
				    so that no copy shares a hardware queue with a waiting kernel. */
	uint32_t completions;  /**< GPU engine, staged loads with the copy-engine mover: how a warp learns
				    its commands completed: GIO_KV_COMPLETIONS_POLL (0: it polls the CQ in
				    host memory) or GIO_KV_COMPLETIONS_MIRROR (the mover thread watches the
				    staged devices' CQs and stores a count in GPU memory when one changes;
				    the warp polls that word and reads the CQ only when it moved, or every
				    GIO_KV_MIRROR_FALLBACK_NS: docs/staged.md, "Design C over E"). The CQs
				    must be in host memory (GIO_CTX_QP_PINNED). */
};

/** gio_kv_plan_params::completions: the warps poll their CQs (the default). */
#define GIO_KV_COMPLETIONS_POLL 0u
/** gio_kv_plan_params::completions: the warps wait on a word in GPU memory that the copy-engine
 *  mover's thread stores when their CQ changed. */
#define GIO_KV_COMPLETIONS_MIRROR 1u

/** gio_kv_plan_params::mover: the I/O kernel's warps move the objects (the default). */
#define GIO_KV_MOVER_SM 0u
/** gio_kv_plan_params::mover: the copy engine moves a load's objects, driven by a thread of the
 *  plan (needs the CUDA 13 runtime's cudaMemcpyBatchAsync). */
#define GIO_KV_MOVER_COPY_ENGINE 1u

/** gio_kv_plan_params::move_depth where it is 0. */
#define GIO_KV_MOVE_DEPTH_DEFAULT 4u

/**
 * @brief Makes a plan for a store.
 * @param store  the store (kept; close it after the plan).
 * @param p      the engine, the capacity and the devices' queue pairs.
 * @param out    receives the plan.
 * @return 0; `-EINVAL` (NULL arguments; an unknown engine; zero max_requests or blocks;
 *         io_warps above 32; a device with no queue pair, a NULL table (peer-to-peer), a block
 *         size other than the store's, or a psdt other than SGL or PRP; an object, or a run of
 *         one on a device taking a command per run, that is not whole blocks of that device; a
 *         staged device without the pool, with rings too small, or without a staging table where
 *         it takes PRPs; a pool whose objects are not the store's: the message names the device),
 *         `-ENOMEM`, `-ENODEV` (GPU engine
 *         without a GPU), or the CUDA error's errno (the message names it). The message names the
 *         problem.
 *
 * Any host thread, before the engine's persistent kernels start (GPU engine: the device memory
 * of the plan is allocated here, stream-ordered).
 */
int gio_kv_plan_create(struct gio_kv_store *store, const struct gio_kv_plan_params *p, struct gio_kv_plan **out);

/**
 * @brief Destroys a plan: ends a batch still open as gio_kv_plan_finish() would, stops its thread,
 * frees its memory.
 * @param plan  the plan, or NULL.
 * @return 0, or the failure of the open batch's finish (the plan is destroyed regardless).
 *
 * The thread that drives the plan. Bounded by the plan's timeout. GPU engine: device memory is
 * freed stream-ordered (it does not wait for kernels); pinned memory goes back to the library's
 * cache.
 */
int gio_kv_plan_destroy(struct gio_kv_plan *plan);

/**
 * @brief Plans a restore: looks each key up and pins the hits.
 * @param plan    the plan, with no batch open.
 * @param keys    @p n chunk keys.
 * @param blocks  @p n pool blocks: chunk i's layer-l object goes to object `l x blocks + blocks[i]`.
 * @param n       requests, 0 to max_requests.
 * @param hit     receives 1 for each hit, 0 for each miss (may be NULL).
 * @return the hits (each becomes a request), or `-EINVAL` (NULL arguments with @p n > 0, @p n
 *         above max_requests, a block beyond the pool: the message names the request; a batch
 *         open), `-errno` of the lookup, or (GPU engine) `-ETIME` or the CUDA error's errno of
 *         the upload. Nothing stays pinned on failure.
 *
 * The plan's thread. An unknown key is a miss, not an error. GPU engine: the batch's requests
 * are copied to the plan's GPU memory on a stream of the plan's, waited for with the plan's
 * timeout (a small copy; it never waits for other kernels).
 */
int gio_kv_plan_load(struct gio_kv_plan *plan, const struct gio_kv_u128 *keys, const uint32_t *blocks, uint32_t n,
		     uint8_t *hit);

/**
 * @brief Plans an offload: reserves a slot for each key (evicting where the store is full) and
 * writes the slots' stale entries FREE.
 * @param plan    the plan, with no batch open.
 * @param keys    @p n chunk keys, distinct.
 * @param blocks  @p n pool blocks: chunk i's layer-l object comes from object `l x blocks + blocks[i]`.
 * @param n       requests, 0 to max_requests.
 * @param rc      receives each key's result (may be NULL): 0 (a request), `-EEXIST` (stored or being
 *                stored: nothing to do), `-ENOSPC` (no free slot, everything pinned), or the
 *                `-EIO` / `-ETIME` of writing its slot's entry FREE.
 * @return the requests planned, or `-EINVAL` (as gio_kv_plan_load()), `-errno` of the index, or
 *         (GPU engine) the upload's failure as gio_kv_plan_load(): the slots are then given back.
 *
 * The plan's thread. Blocks for the FREE entries' writes and one Flush per device that had any;
 * GPU engine: the upload as gio_kv_plan_load().
 */
int gio_kv_plan_save(struct gio_kv_plan *plan, const struct gio_kv_u128 *keys, const uint32_t *blocks, uint32_t n,
		     int32_t *rc);

/**
 * @brief The plan's view for kernels: what the GPU engine's I/O kernel and gio_kv_wait_layer() read.
 * @param plan  the plan, with a batch open.
 * @param view  receives it (device pointers for the GPU engine, host pointers for the CPU engine).
 * @return 0, or `-EINVAL` (NULL, or no batch open).
 *
 * Any thread. Valid until the batch's gio_kv_plan_finish(). Kernels take it by value.
 */
int gio_kv_plan_view(const struct gio_kv_plan *plan, struct gio_kv_io_plan *view);

/**
 * @brief Bytes each device moves in one layer of the open batch: what a scheduler's slot reads
 * (giouring/sched/sched.h, gio_sched_slot::read_bytes) or a save layer writes.
 * @param plan   the plan, with a batch open.
 * @param bytes  receives @p n entries: device d's bytes (the layer's objects it holds), 0 beyond
 *               the store's devices.
 * @param n      entries of @p bytes, at least the store's devices.
 * @return 0, or `-EINVAL` (NULL, no batch open, @p n below the store's devices).
 *
 * Any thread; constant time, from counts made when the batch was planned (no CUDA call, so it
 * never waits behind a stream).
 */
int gio_kv_plan_layer_bytes(const struct gio_kv_plan *plan, uint64_t *bytes, uint32_t n);

/** @brief One device's part of struct gio_kv_plan_stats: which path its data took, and what moved. */
struct gio_kv_plan_dev_stats {
	uint32_t path;           /**< GIO_GPU_PATH_P2P (1) or GIO_GPU_PATH_STAGED (2) (giouring/host/path.h). */
	uint32_t reserved;       /**< Zero. */
	uint64_t objects;        /**< Layer objects (one command each, or a run where a device takes a
				      command per run) that completed in finished batches. */
	uint64_t bytes;          /**< Their bytes. */
	uint64_t staged_objects; /**< Of those, moved through staging slots (the staged path). */
	uint64_t staged_bytes;   /**< Their bytes. */
	uint64_t failed;         /**< Requests that failed (each request counted once per batch). */
	uint64_t timed_out;      /**< Of those on a staged device, `-ETIME`: a command past its deadline (its
				      slot then LOST) or no slot free in time. */
};

/** @brief What a plan moved, per device, over the batches finished so far (gio_kv_plan_info()). */
struct gio_kv_plan_stats {
	uint64_t batches;  /**< Batches finished. */
	uint32_t devices;  /**< Entries of dev[] in use: the store's devices. */
	uint32_t reserved; /**< Zero. */
	uint64_t mover_copies; /**< GIO_KV_MOVER_COPY_ENGINE: copies issued to the copy engine. */
	uint64_t mover_calls;  /**< Their cudaMemcpyBatchAsync calls (the marks in GPU memory included). */
	uint64_t mover_bytes;  /**< Their bytes. */
	uint64_t mover_cpu_ns; /**< CPU time of the plan's mover thread so far (its thread CPU clock). */
	uint64_t mover_cq_marks; /**< GIO_KV_COMPLETIONS_MIRROR: CQ mirror words stored. */
	struct gio_kv_plan_dev_stats dev[GIO_KV_STORE_MAX_DEVICES]; /**< In the store's device order. */
};

/**
 * @brief The plan's statistics: per device, the path its data takes and what moved on it.
 * @param plan  the plan.
 * @param out   receives them.
 * @return 0, or `-EINVAL` (NULL).
 *
 * Any host thread but while another thread runs gio_kv_plan_finish() on the plan. Counted by
 * gio_kv_plan_finish() from the batch's results on the host: the engines do no extra work. This is
 * where an engine sees which path ran; the reason for a path is gio_ctx_gpu_path()'s.
 */
int gio_kv_plan_info(const struct gio_kv_plan *plan, struct gio_kv_plan_stats *out);

/** @brief What gio_kv_plan_layer_begin() gives the launcher of a layer's I/O kernel. */
struct gio_kv_plan_launch {
	struct gio_kv_io_plan view; /**< The kernel's argument. */
	uint32_t ctas;              /**< Thread blocks to launch. */
	uint32_t threads;           /**< Threads per block (a multiple of 32). */
};

/**
 * @brief Starts layer @p layer of the batch (the launcher's half of gio_kv_load_layer() and
 * gio_kv_save_layer()): checks it and gives the GPU engine's launch (the batch's requests were
 * uploaded when it was planned, so its layers may run on any streams).
 * @param plan    the plan, with a batch open.
 * @param layer   the layer, below the store's layers.
 * @param write   1 for a save's layer, 0 for a load's: must match the batch.
 * @param stream  GPU engine: the cudaStream_t the kernel will be launched on (unused today:
 *                kept for launchers that enqueue work of their own); ignored by the CPU engine.
 * @param l       receives the launch (GPU engine).
 * @return 1 (GPU engine: launch the kernel now, on @p stream), 0 (CPU engine: the plan's thread
 *         runs the layer; nothing to launch), `-EINVAL` (layer out of range, direction other than
 *         the batch's, no batch open: the message says which), `-EALREADY` (the layer ran in this
 *         batch).
 *
 * The plan's thread. O(1), no CUDA call.
 */
int gio_kv_plan_layer_begin(struct gio_kv_plan *plan, uint32_t layer, int write, void *stream,
			    struct gio_kv_plan_launch *l);

/**
 * @brief Fits a layer's launch to what the I/O kernel and the caller allow: blocks of more
 * threads than @p max_threads become more blocks of @p max_threads (the same warps: each warp
 * takes its groups by its index in the grid), then at most @p max_ctas blocks (an SM budget:
 * one block per SM, so the kernel runs on at most that many SMs; fewer warps then share the
 * layer's groups).
 * @param l            the launch from gio_kv_plan_layer_begin(), changed in place.
 * @param max_threads  the most threads a block of the kernel may have (its registers bound it), a
 *                     multiple of 32; 0: no bound.
 * @param max_ctas     the most blocks (the slot's SM budget, gio_sched_decision::sm); 0: no bound.
 *
 * Pure; any thread.
 */
static inline void gio_kv_plan_launch_fit(struct gio_kv_plan_launch *l, uint32_t max_threads, uint32_t max_ctas)
{
	if (max_threads >= 32 && l->threads > max_threads) {
		const uint32_t warps = l->ctas * (l->threads / 32u), per = max_threads / 32u;
		l->ctas = (warps + per - 1) / per;
		l->threads = per * 32u;
	}
	if (max_ctas && l->ctas > max_ctas)
		l->ctas = max_ctas;
}

/**
 * @brief Takes back a gio_kv_plan_layer_begin() whose launch failed: the layer counts as not run
 * in this batch (finish waits for it no more; a save's chunks are then given back, `-ECANCELED`).
 * @param plan   the plan, with a batch open.
 * @param layer  the layer begun.
 * @return 0; `-EINVAL` (no batch open, layer out of range, a CPU-engine plan: its layers are
 *         queued to its thread, never launched); `-ENOENT` (the layer was not begun).
 *
 * The plan's thread, right after the failed launch, before anything else of the batch. Leaves
 * gio_last_error() alone, so that the launch's message stays.
 */
int gio_kv_plan_layer_cancel(struct gio_kv_plan *plan, uint32_t layer);

/**
 * @brief Runs layer @p layer of the batch with the plan's engine, the CPU engine's form of
 * gio_kv_load_layer() / gio_kv_save_layer(): the plan's thread runs it; returns at once.
 * @param plan   the plan, with a batch open.
 * @param layer  the layer.
 * @param write  1 for a save's layer, 0 for a load's.
 * @return 0, or as gio_kv_plan_layer_begin(); `-EOPNOTSUPP` for a GPU-engine plan (launch with
 *         giouring/kv/layer.cuh).
 *
 * The plan's thread.
 */
int gio_kv_plan_run_layer(struct gio_kv_plan *plan, uint32_t layer, int write);

/**
 * @brief How long the CPU engine's thread took to run layer @p layer of the open or last batch:
 *        from taking the layer to its last completion, the transfer a scheduler's model predicts
 *        (what it waited for in the queue before is not counted).
 * @param plan   a CPU-engine plan.
 * @param layer  the layer.
 * @param ns     receives the time.
 * @return 0; `-EAGAIN` (the layer has not finished in this batch: not run yet, still running, or
 *         not run at all; a later batch starts every layer again; once gio_kv_plan_wait_layer()
 *         saw the layer finish, its time is there: the thread stamps it microseconds after, and
 *         this waits up to 10 ms for that); `-EOPNOTSUPP` (a GPU-engine
 *         plan: its layers run on a stream, time them there); `-EINVAL` (NULL, @p layer out of
 *         range).
 *
 * The thread that drives the plan (or one ordered with it); takes the plan's lock, never waits for
 * I/O. Kept until the plan's next batch begins (gio_kv_plan_load() or _save()), so a scheduler may
 * read it after the batch finished.
 */
int gio_kv_plan_layer_time(const struct gio_kv_plan *plan, uint32_t layer, uint64_t *ns);

/**
 * @brief Waits on the host until layer @p layer of the batch has finished.
 * @param plan        the plan, with a batch open.
 * @param layer       the layer.
 * @param timeout_ns  how long to wait.
 * @return 0; `-ETIME` (not finished in time: still running, or never started); `-EINVAL`.
 *
 * Any thread. After 0, the layer's data is in place (load) or on the devices (save) and its
 * results are final.
 */
int gio_kv_plan_wait_layer(const struct gio_kv_plan *plan, uint32_t layer, uint64_t timeout_ns);

/**
 * @brief Ends the batch: waits for the layers run, reports results, commits a save's chunks or
 * drops a load's pins.
 * @param plan     the plan.
 * @param results  receives each of the batch's @p n keys' result in the order given to
 *                 gio_kv_plan_load() / _save() (may be NULL): for a load's miss and a save's key
 *                 that was not a request, rc is that key's outcome (0 for a miss, -EEXIST...) and
 *                 layer 0xffff; for a request the first failing layer's rc and NVMe status
 *                 (of its first failing command, where a device takes one per run), or
 *                 (save) the commit's failure, or `-ECANCELED` (save) when a layer was not run.
 * @param timeout_ns  how long to wait for layers still running (0: the plan's timeout).
 * @return 0 when every request succeeded (and, for a save, committed durably); else the first
 *         failure by request order; `-ETIME` when a layer run did not finish in time (its
 *         requests are then not committed, and their slots or pins are kept until the plan's
 *         destroy, since the engine may still write them); `-EINVAL` with no batch open.
 *
 * The plan's thread. Blocks for a save's Flushes and entry writes.
 */
int gio_kv_plan_finish(struct gio_kv_plan *plan, struct gio_kv_io_result *results, uint64_t timeout_ns);

/**
 * @brief The errno of a CUDA error a launcher of giouring/kv/layer.cuh met, with a message
 * naming the error and @p what (gio_last_error()).
 * @param cuda_error  the cudaError_t, not cudaSuccess.
 * @param what        the call that met it.
 * @return gio_cuda_errno() of @p cuda_error.
 *
 * Any host thread.
 */
int gio_kv_launch_error(int cuda_error, const char *what);

GIO_EXTERN_C_END

#endif /* GIOURING_KV_PLAN_H */
