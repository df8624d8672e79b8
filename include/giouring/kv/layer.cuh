/**
 * @file giouring/kv/layer.cuh
 * @brief The library's I/O kernel: one launch moves one layer of a planned batch
 *        (giouring/kv/plan.h) over every device; the device-side wait compute kernels use; the
 *        stream-ordered wait frameworks use; the P2P table built on the GPU.
 *
 * CUDA only (nvcc): the kernels are templates, instantiated in the engine's translation unit.
 *
 * | call | where | what |
 * | --- | --- | --- |
 * | gio_kv_load_layer(), gio_kv_save_layer() | host | one launch of gio_kv_layer_kernel on a stream (CPU engine: the plan's thread) |
 * | gio_kv_layer_warp() | device, a whole warp | the kernel's body, for engines that fuse it into their own kernel |
 * | gio_kv_wait_layer() | device, one thread | waits for a layer of a batch (a compute kernel's first step) |
 * | gio_kv_wait_layer_on() | host | enqueues that wait on another stream (stream order for frameworks) |
 * | gio_kv_wait_layer_timed_on() | host | the same, and how long the stream stalled for the I/O |
 * | gio_kv_table_build(), gio_kv_table_build_prp() | host | the P2P table of a pool (SGL or PRP form), a thread per object, on a stream |
 *
 * Persistent kernels (docs/design.md, "Persistent kernels and lazy loading"): call
 * gio_kv_layer_preload() before any persistent kernel (a GPU target's executor) starts, so that
 * the first layer's launch does not wait to load the kernel behind it.
 */
#ifndef GIOURING_KV_LAYER_CUH
#define GIOURING_KV_LAYER_CUH

#ifndef __CUDACC__
#error "giouring/kv/layer.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>

#include "../device/verbs.cuh"
#include "../host/ctx.h"
#include "../host/launch.h"
#include "io.h"
#include "plan.h"
#include "pool.h"
#include "staged.cuh"

/**
 * @brief The I/O kernel's body: warp @p warp of @p nwarps issues and completes its share of the
 * plan's groups for one layer.
 * @param p       the plan's view (gio_kv_plan_view()), its layer count reset for this pass.
 * @param layer   the layer.
 * @param warp    this warp's index among the warps running the layer.
 * @param nwarps  how many run it.
 *
 * All 32 lanes of each warp. Warp w takes groups w, w + nwarps, ...: a group's requests go to
 * one queue pair (its device's `grp.qp % nqps`) with one reservation and one doorbell; each lane
 * waits for its own command, records its result, and the warp counts the group; the warp that
 * counts a layer's last signals it. With no request, warp 0 signals the layer at once. A staged
 * device's groups go through its staging slots (gio_kv_stage_group_warp(), giouring/kv/staged.cuh).
 */
GIO_DEV void gio_kv_layer_warp(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t warp, uint32_t nwarps)
{
	const uint32_t lane = threadIdx.x & 31u;
	uint32_t g;
	if (p->ngroups == 0) {
		if (warp == 0 && lane == 0)
			gio_kv_io_layer_signal(p, layer);
		return;
	}
	for (g = warp; g < p->ngroups; g += nwarps) {
		const struct gio_kv_io_group grp = p->groups[g];
		const struct gio_kv_io_dev *d = &p->devs[grp.dev];
		struct gio_qp *qp = d->qps[grp.qp % d->nqps];
		const int active = lane < grp.count;
		if (d->stage) { /* the staged path: the same results and counts, through slots */
			uint16_t nvme;
			const int src = gio_kv_stage_group_warp(p, layer, grp, g, qp, grp.qp % d->nqps, &nvme);
			if (active)
				gio_kv_io_result_only(p, layer, grp.first + lane, src, nvme);
			__syncwarp();
			if (lane == 0 && gio_kv_io_count(p, layer, grp.count))
				gio_kv_io_layer_signal(p, layer);
			continue;
		}
		const uint64_t deadline = gio_deadline_in(p->timeout_ns);
		struct gio_sqe sqe;
		uint32_t cid = 0;
		uint16_t st = 0;
		int bad = 0, rc;
		if (active && (bad = gio_kv_io_sqe(p, layer, grp.first + lane, &sqe)) != 0)
			gio_prep_cmd(&sqe, GIO_NVM_OPC_FLUSH, d->nsid); /* keeps the batch whole; reports -EINVAL */
		rc = gio_submit_warp(qp, &sqe, grp.first + lane, 0, active, deadline, &cid);
		/* A lane refused at submission has nothing in flight; every other waits for its own. */
		{
			const int wait_rc = gio_wait_warp_paced(qp, cid, active && rc == 0, deadline, &st, p->poll_ns);
			if (rc == 0)
				rc = wait_rc;
		}
		if (bad && rc != -ETIME) {
			rc = -EINVAL;
			st = 0;
		}
		if (active)
			gio_kv_io_result_only(p, layer, grp.first + lane, rc, st);
		__syncwarp();
		if (lane == 0 && gio_kv_io_count(p, layer, grp.count))
			gio_kv_io_layer_signal(p, layer);
	}
}

/**
 * @brief The library's I/O kernel: every warp of the grid runs gio_kv_layer_warp().
 * @param p      the plan's view, by value.
 * @param layer  the layer.
 *
 * Launched by gio_kv_load_layer() / gio_kv_save_layer(); blocks of a multiple of 32 threads.
 */
template <int Unused = 0>
__global__ void gio_kv_layer_kernel(struct gio_kv_io_plan p, uint32_t layer)
{
	const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u;
	gio_kv_layer_warp(&p, layer, warp, gridDim.x * blockDim.x / 32u);
}

/**
 * @brief Waits on the device until a layer of the batch has finished, up to a deadline.
 * @param p         the plan's view (by value in the compute kernel's arguments).
 * @param layer     the layer.
 * @param deadline  absolute deadline (gio_deadline_in()).
 * @return 0 (the layer's data may be read: acquire), `-ETIME`, or `-EINVAL` (layer out of range).
 *
 * Any device thread; typically one per block, then a barrier. Polls the layer's word in HBM.
 */
GIO_DEV int gio_kv_wait_layer(const struct gio_kv_io_plan *p, uint32_t layer, uint64_t deadline)
{
	return gio_kv_io_layer_wait(p, layer, deadline);
}

/** @cond internal */
template <int Unused = 0>
__global__ void gio__kv_wait_kernel(struct gio_kv_io_plan p, uint32_t layer, uint64_t timeout_ns, int *timed_out,
				    uint64_t *waited_ns)
{
	if (threadIdx.x == 0) {
		const uint64_t t0 = gio_now_ns();
		if (gio_kv_io_layer_wait(&p, layer, gio_deadline_in(timeout_ns)) != 0 && timed_out)
			*timed_out = 1;
		if (waited_ns)
			*waited_ns = gio_now_ns() - t0;
	}
}

static inline int gio__kv_launch_rc(cudaError_t e, const char *what)
{
	return e == cudaSuccess ? 0 : gio_kv_launch_error((int)e, what);
}

/** @endcond */

/**
 * @brief Loads (@p write 0) or saves (@p write 1) layer @p layer of the batch on at most @p sms
 * SMs: gio_kv_load_layer() / gio_kv_save_layer() with the I/O kernel's grid cut to @p sms blocks
 * (gio_kv_plan_launch_fit()). The scheduler's launcher (giouring/sched/issue.cuh) passes each
 * slot's SM budget here.
 * @param plan    the plan.
 * @param layer   the layer.
 * @param write   1 for a save's layer, 0 for a load's: must match the batch.
 * @param stream  the stream.
 * @param sms     most blocks, one per SM; 0: the plan's io_ctas.
 * @return as gio_kv_load_layer().
 *
 * The plan's thread. A CPU-engine plan runs the layer on its thread (@p sms unused).
 */
static inline int gio_kv_layer_launch(struct gio_kv_plan *plan, uint32_t layer, int write, cudaStream_t stream,
				      uint32_t sms)
{
	struct gio_kv_plan_launch l;
	int rc = gio_kv_plan_layer_begin(plan, layer, write, (void *)stream, &l);
	if (rc <= 0)
		return rc; /* an error, or the CPU engine took it */
	/* The kernel's registers bound its blocks below the device's 1024 threads. Looked up once per
	 * program. */
	static int max_threads;
	if (!max_threads) {
		struct cudaFuncAttributes fa;
		const cudaError_t e = cudaFuncGetAttributes(&fa, gio_kv_layer_kernel<0>);
		if (e != cudaSuccess) {
			gio_kv_plan_layer_cancel(plan, layer);
			return gio__kv_launch_rc(e, "gio_kv_load_layer/save_layer: cudaFuncGetAttributes of the I/O kernel");
		}
		max_threads = fa.maxThreadsPerBlock / 32 * 32;
	}
	gio_kv_plan_launch_fit(&l, (uint32_t)max_threads, sms);
	gio_kv_layer_kernel<<<l.ctas, l.threads, 0, stream>>>(l.view, layer);
	const cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		gio_kv_plan_layer_cancel(plan, layer); /* it never ran: finish must not wait for it */
	return gio__kv_launch_rc(e, write ? "gio_kv_save_layer" : "gio_kv_load_layer");
}

/**
 * @brief Loads (restores) layer @p layer of the batch planned by gio_kv_plan_load(): one launch
 * of the I/O kernel on @p stream, every device in it.
 * @param plan    the plan.
 * @param layer   the layer.
 * @param stream  the stream (the I/O stream of a green context, say).
 * @return 0, or as gio_kv_plan_layer_begin() (`-EINVAL`, `-EALREADY`), or the launch's CUDA
 *         error as gio_kv_launch_error() maps it (its name in gio_last_error()).
 *
 * The plan's thread. O(1) CPU: no host wait. A CPU-engine plan runs the layer on its thread.
 */
static inline int gio_kv_load_layer(struct gio_kv_plan *plan, uint32_t layer, cudaStream_t stream)
{
	return gio_kv_layer_launch(plan, layer, 0, stream, 0);
}

/**
 * @brief Saves (offloads) layer @p layer of the batch planned by gio_kv_plan_save(); as
 * gio_kv_load_layer(). The chunks commit at gio_kv_plan_finish(), once every layer ran.
 * @param plan    the plan.
 * @param layer   the layer.
 * @param stream  the stream.
 * @return as gio_kv_load_layer().
 */
static inline int gio_kv_save_layer(struct gio_kv_plan *plan, uint32_t layer, cudaStream_t stream)
{
	return gio_kv_layer_launch(plan, layer, 1, stream, 0);
}

/**
 * @brief gio_kv_wait_layer_on(), which also says how long the stream waited for the I/O.
 * @param plan        the plan, with a batch open (GPU engine).
 * @param layer       the layer.
 * @param stream      the stream that must wait (the compute stream).
 * @param timeout_ns  the wait's deadline from when it starts on the device.
 * @param timed_out   set to 1 on the device when the deadline passed (device or mapped memory), or NULL.
 * @param waited_ns   receives, on the device, the nanoseconds from when the wait started running on
 *                    the stream until the layer had finished (or the deadline), by %globaltimer
 *                    (device or mapped memory), or NULL. That is the stream's stall for the I/O alone:
 *                    time the stream sat empty before the wait (a host behind its GPU) is not in it,
 *                    where events recorded around the wait count both.
 * @return as gio_kv_wait_layer_on().
 *
 * Any host thread. Read @p waited_ns after the stream has passed the wait.
 */
static inline int gio_kv_wait_layer_timed_on(const struct gio_kv_plan *plan, uint32_t layer, cudaStream_t stream,
					     uint64_t timeout_ns, int *timed_out, uint64_t *waited_ns)
{
	struct gio_kv_io_plan v;
	if (gio_kv_plan_view(plan, &v) || layer >= v.layers || !v.layer_done_host)
		return -EINVAL;
	gio__kv_wait_kernel<<<1, 32, 0, stream>>>(v, layer, timeout_ns, timed_out, waited_ns);
	return gio__kv_launch_rc(cudaGetLastError(), waited_ns ? "gio_kv_wait_layer_timed_on" : "gio_kv_wait_layer_on");
}

/**
 * @brief Makes @p stream wait for layer @p layer of the batch: a one-thread kernel that polls
 * the layer's word (stream order for frameworks that cannot wait inside their kernels).
 * @param plan        the plan, with a batch open (GPU engine).
 * @param layer       the layer.
 * @param stream      the stream that must wait (the compute stream).
 * @param timeout_ns  the wait's deadline from when it starts on the device.
 * @param timed_out   set to 1 on the device when the deadline passed (device or mapped memory), or NULL.
 * @return 0, `-EINVAL` (no batch, a CPU-engine plan, or layer out of range), or the launch's error.
 *
 * Any host thread. The stream then runs on once the layer finished, or at the deadline.
 */
static inline int gio_kv_wait_layer_on(const struct gio_kv_plan *plan, uint32_t layer, cudaStream_t stream,
				       uint64_t timeout_ns, int *timed_out)
{
	return gio_kv_wait_layer_timed_on(plan, layer, stream, timeout_ns, timed_out, NULL);
}

/** @cond internal */
template <int Unused = 0>
__global__ void gio__kv_table_kernel(struct gio_kv_pool pool, struct gio_kv_runs runs, struct gio_dptr_caps caps,
				     uint64_t objects, uint64_t seg_area_addr, union gio_dptr *table,
				     struct gio_sgl_desc *seg_area, int *rc)
{
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < objects; i += (uint64_t)gridDim.x * blockDim.x) {
		union gio_dptr d;
		const int r = gio_kv_table_entry(&pool, &runs, &caps, i, seg_area_addr, &d.sgl, seg_area);
		if (r)
			atomicCAS(rc, 0, r);
		else
			table[i] = d;
	}
}
/** @endcond */

/**
 * @brief Builds a pool's SGL P2P table on the GPU: one 16-byte data pointer per object (and the
 * segment lists of objects of several runs), a thread per object.
 * @param pool           the pool, with bus addresses (pool->bases readable by the GPU where used).
 * @param runs           its runs (gio_kv_pool_runs()).
 * @param caps           the controller's rules (gio_ctx_dptr_caps(); the GPU target's).
 * @param table          GPU memory for gio_kv_table_sizes::sgl_desc_bytes.
 * @param seg_area       GPU memory for gio_kv_table_sizes::sgl_list_bytes (NULL for objects of one run).
 * @param seg_area_addr  the bus address of @p seg_area.
 * @param rc             device or mapped memory, 0 before: receives the first failing object's
 *                       gio_kv_table_entry() error (`-EOPNOTSUPP`, `-E2BIG`, `-EINVAL`).
 * @param stream         the stream.
 * @return 0 once enqueued, or the launch's error as gio_cuda_errno() maps it.
 *
 * Any host thread, at registration (before the I/O starts). Read *rc after the stream's work.
 */
static inline int gio_kv_table_build(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
				     const struct gio_dptr_caps *caps, union gio_dptr *table, struct gio_sgl_desc *seg_area,
				     uint64_t seg_area_addr, int *rc, cudaStream_t stream)
{
	const uint64_t objects = (uint64_t)pool->extent[GIO_KV_LAYER] * pool->extent[GIO_KV_BLOCK];
	const uint64_t blocks = (objects + 255) / 256;
	gio__kv_table_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(
		*pool, *runs, *caps, objects, seg_area_addr, table, seg_area, rc);
	return gio__kv_launch_rc(cudaGetLastError(), "gio_kv_table_build");
}

/** @cond internal */
template <int Unused = 0>
__global__ void gio__kv_table_prp_kernel(struct gio_kv_pool pool, struct gio_kv_runs runs, struct gio_dptr_caps caps,
					 uint64_t entries, uint64_t list_addr, uint64_t list_stride, union gio_dptr *table,
					 void *lists, int *rc)
{
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < entries; i += (uint64_t)gridDim.x * blockDim.x) {
		union gio_dptr d;
		const int r = gio_kv_table_entry_prp(&pool, &runs, &caps, i, list_addr, list_stride, &d, lists);
		if (r)
			atomicCAS(rc, 0, r);
		else
			table[i] = d;
	}
}
/** @endcond */

/**
 * @brief Builds a pool's PRP P2P table on the GPU (for controllers without SGLs, or to compare):
 * PRP1/PRP2 per command and each command's PRP list, a thread per entry (gio_kv_table_entry_prp()):
 * one entry per object, or one per run of each object where PRPs cannot chain its runs
 * (gio_kv_table_prp_cmds(): the plan's device then takes that many commands per object).
 * @param pool         the pool, with bus addresses.
 * @param runs         its runs.
 * @param caps         the controller's rules.
 * @param table        GPU memory for 16 bytes per entry: objects x gio_kv_table_prp_cmds().
 * @param lists        memory the controller reads and the GPU writes, `entries x list_stride`
 *                     bytes (NULL where no command needs a list).
 * @param list_addr    the bus address of @p lists.
 * @param list_stride  bytes of each entry's list (see gio_kv_table_entry_prp()).
 * @param rc           device or mapped memory, 0 before: receives the first failing entry's error.
 * @param stream       the stream.
 * @return 0 once enqueued, or the launch's error as gio_kv_launch_error() maps it.
 *
 * Any host thread, at registration. Read *rc after the stream's work.
 */
static inline int gio_kv_table_build_prp(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
					 const struct gio_dptr_caps *caps, union gio_dptr *table, void *lists,
					 uint64_t list_addr, uint64_t list_stride, int *rc, cudaStream_t stream)
{
	const uint64_t entries = (uint64_t)pool->extent[GIO_KV_LAYER] * pool->extent[GIO_KV_BLOCK] *
				 gio_kv_table_prp_cmds(pool, runs, caps);
	const uint64_t blocks = (entries + 255) / 256;
	gio__kv_table_prp_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(
		*pool, *runs, *caps, entries, list_addr, list_stride, table, lists, rc);
	return gio__kv_launch_rc(cudaGetLastError(), "gio_kv_table_build_prp");
}

/**
 * @brief Loads the kernels of this header now (gio_gpu_preload()), before a persistent kernel starts.
 * @return 0, or as gio_gpu_preload().
 */
static inline int gio_kv_layer_preload(void)
{
	int rc = gio_gpu_preload((const void *)gio_kv_layer_kernel<0>);
	if (!rc)
		rc = gio_gpu_preload((const void *)gio__kv_wait_kernel<0>);
	if (!rc)
		rc = gio_gpu_preload((const void *)gio__kv_table_kernel<0>);
	if (!rc)
		rc = gio_gpu_preload((const void *)gio__kv_table_prp_kernel<0>);
	return rc;
}

#endif /* GIOURING_KV_LAYER_CUH */
