// The GPU-executed software target's host lifecycle (giouring/target/gpu_target.h): memory,
// bring-up on the host, the persistent executor kernel's launch and stop. Compiled once into
// giouring::gpu, the CUDA part of the host library, so that no program compiles the executor's
// kernel itself and none has a __global__ of the library's in its own translation units. The
// public functions are documented where they are declared, in giouring/target/gpu_target.h.
//
// Bounded: no call here waits for kernels other than the target's own work (another target's
// executor, an engine's persistent kernel may run all along; docs/design.md, "Bounded CUDA
// calls"). Device memory is allocated, cleared, copied and released stream-ordered on the
// target's non-blocking stream (cudaMallocAsync, cudaMemsetAsync, cudaMemcpyAsync from and to
// pinned staging, cudaFreeAsync), and every wait for that stream is a poll with a deadline;
// there is no managed memory (its cudaFree waits for every kernel), no legacy-stream call and no
// device synchronisation; pinned host memory comes from and goes back to the process's cache
// (src/cuda/pinned.h), since cudaFreeHost waits for every kernel.
#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>
#include <giouring/target/gpu_exec.cuh>
#include <giouring/target/gpu_target.h>

#include "../cuda/pinned.h"
#include "../internal.h"
#include "cuda_fail.cuh"
#include "executors.h"

/* The executor kernel: every warp runs gio_gpu_exec_loop(); exec_blocks blocks of exec_warps warps,
 * a block per SM (gio_gpu_one_block_per_sm(): the dynamic shared memory that keeps a second block
 * away also holds each warp's copy of the target's rules, so the bounds' one block per SM holds).
 * Two builds of it: up to 8 warps (the default) each thread gets 229 registers, where the lanes keep
 * their queues' state, with no spill (CUDA 13); the register file split among up to 16 warps leaves
 * each thread 128, where the loop spills, and the lanes' queue state stays in shared memory
 * (gio_gpu_exec_loop_wide()). */
#define GIO__EXEC_KERNEL(name, max_warps, loop)                                                                  \
	__global__ void __launch_bounds__((max_warps) * 32, 1)                                                   \
		name(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl, uint32_t flags,         \
		     struct gio_ssd_model model)                                                                 \
	{                                                                                                        \
		extern __shared__ struct gio_gpu_exec_env gio__exec_env[];                                       \
		loop(t, backing, ctl, flags, &model, (blockIdx.x * blockDim.x + threadIdx.x) / 32u,              \
		     gridDim.x * blockDim.x / 32u, &gio__exec_env[threadIdx.x / 32u]);                           \
	}
#define GIO__EXEC_NARROW_WARPS 8u
GIO__EXEC_KERNEL(exec_kernel_narrow, GIO__EXEC_NARROW_WARPS, gio_gpu_exec_loop)
GIO__EXEC_KERNEL(exec_kernel_wide, GIO_GPU_EXEC_MAX_WARPS, gio_gpu_exec_loop_wide)

/* The executor kernel for blocks of `warps` warps. */
static const void *exec_kernel_for(uint32_t warps)
{
	return warps <= GIO__EXEC_NARROW_WARPS ? (const void *)exec_kernel_narrow : (const void *)exec_kernel_wide;
}

/* How long open waits for its clears, and prepare for its copy, on the target's stream. */
#define GIO__GPU_CLEAR_TIMEOUT_MS 10000u
#define GIO__GPU_COPY_TIMEOUT_MS 5000u

/* Pinned memory of this runtime (giouring::gpu links it statically: its blocks go back to it). */
static int pinned_alloc(void **p, size_t len)
{
	return (int)cudaHostAlloc(p, len, cudaHostAllocMapped | cudaHostAllocPortable);
}

static int pinned_release(void *p, size_t len)
{
	(void)len;
	return (int)cudaFreeHost(p);
}

static const struct gio__pinned_ops gpu_pinned = {"cudaHostAlloc (giouring::gpu)", pinned_alloc, pinned_release};

/* Zeroed pinned, mapped host memory from the cache: *host, and its device pointer in *dev
 * unless dev is NULL. 0 or -errno with a message naming what. */
static int pinned_get(size_t len, const char *what, void **host, void **dev)
{
	int e;
	*host = gio__pinned_get(&gpu_pinned, len, &e);
	if (!*host)
		return e < 0 ? gio__fail(-ENOMEM, "giouring: %s: no memory to track pinned memory", what)
			     : gio__cuda_failf((cudaError_t)e, "%s: cudaHostAlloc of %zu bytes", what, len);
	if (dev) {
		const cudaError_t de = cudaHostGetDevicePointer(dev, *host, 0);
		if (de != cudaSuccess)
			return gio__cuda_failf(de, "%s: cudaHostGetDevicePointer", what);
	}
	return 0;
}

/* Stream-ordered device memory on the target's stream, cleared there when `clear`. */
static int dev_alloc(struct gio_gpu_target *g, void **p, size_t len, int clear, const char *what)
{
	cudaError_t e = cudaMallocAsync(p, len, (cudaStream_t)g->stream);
	if (e != cudaSuccess) {
		*p = NULL;
		return gio__cuda_failf(e, "%s: cudaMallocAsync of %zu bytes", what, len);
	}
	if (clear && (e = cudaMemsetAsync(*p, 0, len, (cudaStream_t)g->stream)) != cudaSuccess)
		return gio__cuda_failf(e, "%s: cudaMemsetAsync", what);
	return 0;
}

/* Polls the target's stream until what was queued on it is done, up to timeout_ms: cudaSuccess,
 * cudaErrorNotReady at the deadline, or the error of that work. */
static cudaError_t stream_poll(struct gio_gpu_target *g, uint32_t timeout_ms)
{
	const uint64_t deadline = gio_deadline_in((uint64_t)timeout_ms * 1000000ull);
	cudaError_t e;
	while ((e = cudaStreamQuery((cudaStream_t)g->stream)) == cudaErrorNotReady && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(50000);
	return e;
}

/* stream_poll() as 0, -ETIME with a message naming what, or the work's error as -errno. */
static int stream_wait(struct gio_gpu_target *g, uint32_t timeout_ms, const char *what)
{
	const cudaError_t e = stream_poll(g, timeout_ms);
	if (e == cudaErrorNotReady)
		return gio__fail(-ETIME, "giouring: GPU target: %s did not finish within %u ms", what, timeout_ms);
	if (e != cudaSuccess)
		return gio__cuda_failf(e, "GPU target: %s", what);
	return 0;
}

/* Offset of a device pointer into g->state: the same offset in g->xfer stages it. */
static size_t state_off(const struct gio_gpu_target *g, const void *dev)
{
	return (size_t)((const char *)dev - (const char *)g->state);
}

/* The pinned staging of the copies to and from state (allocated again after a copy that missed
 * its deadline left the previous one to the device). */
static int xfer_ready(struct gio_gpu_target *g)
{
	return g->xfer ? 0 : pinned_get(g->state_bytes, "GPU target state staging", &g->xfer, NULL);
}

/* A copy between xfer and state that missed its deadline may still land: its staging is left
 * allocated (never reused), and a new one made at the next copy. */
static int copy_wait(struct gio_gpu_target *g, uint32_t timeout_ms, const char *what)
{
	const int rc = stream_wait(g, timeout_ms, what);
	if (rc == -ETIME)
		g->xfer = NULL;
	return rc;
}

static void gpu_free(struct gio_gpu_target *g)
{
	cudaStream_t s = (cudaStream_t)g->stream;
	const int rings_host = (g->cfg.flags & GIO_GPU_RINGS_HOST) != 0;
	/* The device memory after the target's last work on its stream; errors are left unread (a
	 * lost context frees everything with it). */
	if (s) {
		if (g->state)
			(void)cudaFreeAsync(g->state, s);
		if (g->rings && !g->rings_host)
			(void)cudaFreeAsync(g->rings, s);
		if (g->backing && !g->backing_host)
			(void)cudaFreeAsync(g->backing, s);
	}
	/* Pinned memory to the cache: no device work of the target touches it any more. */
	(void)gio__pinned_put(g->ctl);
	(void)gio__pinned_put(g->xfer);
	(void)gio__pinned_put(g->rings_host);
	(void)gio__pinned_put(g->backing_host);
	if (rings_host)
		(void)gio__pinned_put(g->bar_host);
	else
		free(g->bar_host);
	free(g->qps_host);
	free(g->slots_host);
	if (s) {
		/* Destroying a stream with work queued returns at once and the runtime finishes the
		 * work; the frees are quick, so a short wait for them is enough. */
		(void)stream_poll(g, 1000); /* silent: the message of a failed open stays */
		(void)cudaStreamDestroy(s);
	}
	free(g);
}

/* Runs one admin command on the host copy of the target; the queue memory is resolved through
 * `qmap` (the target's own map holds data regions only). */
static int gpu_admin(struct gio_gpu_target *g, const struct gio_sqe *sqe, const struct gio_dma_map *qmap)
{
	uint32_t dw0;
	uint16_t st;
	g->host_tgt.map = qmap;
	st = gio_tgt_admin(&g->host_tgt, sqe, &dw0);
	g->host_tgt.map = &g->map_host;
	if (st)
		return gio__fail(-EIO, "giouring: admin opcode 0x%02x: %s (status 0x%04x)", sqe->opc, gio_status_str(st), st);
	return 0;
}

static size_t align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

/* Memory: the state block on the device (tgt, bar with HBM rings, map, regions, qps, slots,
 * each at a fixed offset), its pinned staging and host images, the rings, the backing store and
 * the control block. Clears are queued on the stream; open waits for them. */
static int gpu_alloc(struct gio_gpu_target *g)
{
	const struct gio_gpu_target_config *c = &g->cfg;
	const uint32_t nq = c->queues;
	const int hbm_rings = !(c->flags & GIO_GPU_RINGS_HOST);
	const size_t sq_bytes = ((size_t)c->depth * GIO_SQE_BYTES + 4095) & ~(size_t)4095;
	const size_t cq_bytes = ((size_t)c->depth * GIO_CQE_BYTES + 4095) & ~(size_t)4095;
	const size_t ring_bytes = nq * (sq_bytes + cq_bytes) + 4096;
	const size_t nslots = (size_t)nq * c->depth;
	size_t o_bar = 0, o_map, o_regions, o_qps, o_slots, o_check, o = align256(sizeof(struct gio_tgt));
	char *state;
	int rc;
	if (hbm_rings) {
		o_bar = o;
		o += align256(sizeof(struct gio_tgt_bar));
	}
	o_map = o;
	o += align256(sizeof(struct gio_dma_map));
	o_regions = o;
	o += align256(GIO_GPU_MAX_REGIONS * sizeof(struct gio_dma_region));
	o_qps = o;
	o += align256(nq * sizeof(struct gio_qp));
	o_slots = o;
	o += align256(nslots * sizeof(struct gio_cmd_slot));
	o_check = o;
	o += align256(sizeof(struct gio_qp_check));
	g->state_bytes = o;

	cudaStream_t stream;
	GIO__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "GPU target: cudaStreamCreateWithFlags");
	g->stream = stream;
	if ((rc = pinned_get(sizeof(*g->ctl), "control block", (void **)&g->ctl, (void **)&g->ctl_dev)) ||
	    (rc = xfer_ready(g)))
		return rc;
	g->qps_host = (struct gio_qp *)calloc(nq, sizeof(*g->qps_host));
	g->slots_host = (struct gio_cmd_slot *)calloc(nslots, sizeof(*g->slots_host));
	if (!g->qps_host || !g->slots_host)
		return gio__fail(-ENOMEM, "giouring: no host memory for images of %u queue pairs", nq);
	if ((rc = dev_alloc(g, &g->state, g->state_bytes, 0, "target state"))) /* prepare fills all of it */
		return rc;
	state = (char *)g->state;
	g->tgt = (struct gio_tgt *)state;
	g->map = (struct gio_dma_map *)(state + o_map);
	g->regions = (struct gio_dma_region *)(state + o_regions);
	g->qps = (struct gio_qp *)(state + o_qps);
	g->slots = (struct gio_cmd_slot *)(state + o_slots);
	g->check = (c->flags & GIO_GPU_CHECK) ? (struct gio_qp_check *)(state + o_check) : NULL;
	if (c->flags & GIO_GPU_BACKING_HOST)
		rc = pinned_get(c->size, "backing store in pinned host memory", (void **)&g->backing_host, (void **)&g->backing);
	else
		rc = dev_alloc(g, (void **)&g->backing, c->size, 1, "backing store in HBM");
	if (rc)
		return rc;
	if (hbm_rings) {
		g->bar = (struct gio_tgt_bar *)(state + o_bar);
		g->bar_host = (struct gio_tgt_bar *)calloc(1, sizeof(*g->bar_host));
		if (!g->bar_host)
			return gio__fail(-ENOMEM, "giouring: no host memory for an image of the registers");
		rc = dev_alloc(g, (void **)&g->rings, ring_bytes, 1, "rings in HBM");
	} else {
		rc = pinned_get(ring_bytes, "rings in pinned host memory", (void **)&g->rings_host, (void **)&g->rings);
		if (!rc)
			rc = pinned_get(sizeof(*g->bar), "doorbells in pinned host memory", (void **)&g->bar_host, (void **)&g->bar);
	}
	if (rc)
		return rc;
	g->map_host.regions = g->regions_host;
	g->map_host.count = 0;
	return 0;
}

int gio_gpu_target_open(const char *uri, struct gio_gpu_target **out)
{
	struct gio_gpu_target *g;
	struct gio_tgt_config tc;
	int ndev = 0, rc;
	uint32_t q;
	gio__clear_error();
	if (!out)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_open: out is NULL");
	*out = NULL;
	g = (struct gio_gpu_target *)calloc(1, sizeof(*g));
	if (!g)
		return gio__fail(-ENOMEM, "giouring: no memory for a GPU target");
	rc = gio_gpu_target_parse(uri, &g->cfg);
	if (!rc && (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0))
		rc = gio__fail(-ENODEV, "giouring: %s: no CUDA device", uri);
	if (!rc)
		rc = gpu_alloc(g);
	if (rc) {
		gpu_free(g);
		return rc;
	}
	memset(&tc, 0, sizeof(tc));
	tc.sgls = g->cfg.sgls == 2 ? GIO_SGLS_SUPPORT_DWORD : g->cfg.sgls == 1 ? GIO_SGLS_SUPPORT_BYTE : 0;
	tc.mdts = (uint8_t)g->cfg.mdts;
	tc.lba_shift = (uint8_t)g->cfg.lba_shift;
	tc.max_io_queues = (uint16_t)g->cfg.queues;
	tc.mqes = (uint16_t)(g->cfg.depth - 1);
	tc.nsze = g->cfg.size >> g->cfg.lba_shift;
	/* On the host images: prepare copies them to the device with the device's pointers. */
	if (gio_tgt_init(&g->host_tgt, g->bar_host, &tc, &g->map_host)) {
		gpu_free(g);
		return gio__fail(-EINVAL, "giouring: %s: the target refuses this configuration", uri);
	}
	/* The controller state an enable would produce: admin commands run on the host below, the
	 * executor serves I/O queues only. */
	g->host_tgt.ready = 1;
	g->host_tgt.cc = GIO_SET(CC_EN, 1u);
	/* Producers and executor all run on this GPU: GPU-scope ordering, unless scope=sys. */
	const int gpu_scope = !(g->cfg.flags & GIO_GPU_SCOPE_SYS);
	g->host_tgt.scope = gpu_scope ? GIO_SCOPE_GPU : GIO_SCOPE_SYS;
	const size_t sq_bytes = ((size_t)g->cfg.depth * GIO_SQE_BYTES + 4095) & ~(size_t)4095;
	const size_t cq_bytes = ((size_t)g->cfg.depth * GIO_CQE_BYTES + 4095) & ~(size_t)4095;
	unsigned char *base = (unsigned char *)(((uintptr_t)g->rings + 4095) & ~(uintptr_t)4095);
	for (q = 1; q <= g->cfg.queues && !rc; q++) {
		/* Rings by their device pointers: the admin commands only record them, the executor
		 * and the producers use them. */
		unsigned char *sq = base + (q - 1) * (sq_bytes + cq_bytes), *cq = sq + sq_bytes;
		struct gio_dma_region qr[2] = {{(uint64_t)(uintptr_t)sq, sq_bytes, sq}, {(uint64_t)(uintptr_t)cq, cq_bytes, cq}};
		struct gio_dma_map qmap = {qr, 2};
		struct gio_sqe sqe;
		struct gio_qp *qp = &g->qps_host[q - 1];
		const size_t first = (size_t)(q - 1) * g->cfg.depth;
		rc = gio_prep_create_cq(&sqe, (uint16_t)q, g->cfg.depth, (uint64_t)(uintptr_t)cq, 0, 0);
		if (!rc)
			rc = gpu_admin(g, &sqe, &qmap);
		if (!rc)
			rc = gio_prep_create_sq(&sqe, (uint16_t)q, g->cfg.depth, (uint16_t)q, (uint64_t)(uintptr_t)sq);
		if (!rc)
			rc = gpu_admin(g, &sqe, &qmap);
		/* The slots are initialised in their host image, then the queue pair names the
		 * device's; its doorbells are the device's view of the registers. */
		if (!rc)
			rc = gio_qp_init(qp, (struct gio_sqe *)sq, g->cfg.depth, (struct gio_cqe *)cq, g->cfg.depth,
					 g->slots_host + first, (uint16_t)q,
					 (uint32_t *)((char *)g->bar + gio_sq_doorbell_offset(g->bar_host->regs.cap, (uint16_t)q)),
					 (uint32_t *)((char *)g->bar + gio_cq_doorbell_offset(g->bar_host->regs.cap, (uint16_t)q)),
					 gpu_scope ? GIO_QP_GPU_SCOPE : 0);
		if (!rc) {
			qp->slots = g->slots + first;
			qp->check = g->check; /* check=1: against the device's region table */
		}
	}
	if (rc) {
		gpu_free(g);
		return rc < 0 && rc != -EINVAL ? rc : gio__fail(-EIO, "giouring: %s: creating the I/O queues failed", uri);
	}
	/* Callers fill the backing store from their own streams right after open: the clears (and
	 * the allocations) done first. */
	if ((rc = stream_wait(g, GIO__GPU_CLEAR_TIMEOUT_MS, "clearing the backing store and the rings"))) {
		char msg[512];
		if (rc != -ETIME) {
			gpu_free(g);
			return rc;
		}
		/* The clears may still run: the target's memory stays allocated, for good. */
		snprintf(msg, sizeof(msg), "%s", gio_last_error());
		return gio__fail(rc, "%s (is the device busy with kernels that take every SM?); its memory is left allocated",
				 msg);
	}
	*out = g;
	return 0;
}

int gio_gpu_target_register(struct gio_gpu_target *g, void *ptr, size_t len, uint64_t *addr)
{
	gio__clear_error();
	if (!g || !ptr || !len || !addr)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_register: %s",
				 !g ? "NULL target" : !ptr ? "NULL region" : !len ? "empty region"
				 : "NULL addr (where the region's bus address goes)");
	if (g->running)
		return gio__fail(-EBUSY, "giouring: register memory before gio_gpu_target_start()");
	if (g->map_host.count >= GIO_GPU_MAX_REGIONS)
		return gio__fail(-ENOSPC, "giouring: more than %u registered regions", GIO_GPU_MAX_REGIONS);
	g->regions_host[g->map_host.count] = {(uint64_t)(uintptr_t)ptr, (uint64_t)len, ptr};
	g->map_host.count++;
	*addr = (uint64_t)(uintptr_t)ptr;
	return 0;
}

struct gio_qp *gio_gpu_target_qp(const struct gio_gpu_target *g, uint32_t i)
{
	return g && i < g->cfg.queues ? &g->qps[i] : NULL;
}

int gio_gpu_target_prepare(struct gio_gpu_target *g)
{
	int rc;
	gio__clear_error();
	if (!g)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_prepare: NULL target");
	if (g->running)
		return gio__fail(-EBUSY, "giouring: the GPU executor is already running");
	if ((rc = xfer_ready(g)))
		return rc;
	memset(g->ctl, 0, sizeof(*g->ctl));
	/* The host images into the staging, with the device's pointers where they differ. */
	char *x = (char *)g->xfer;
	struct gio_tgt *t = (struct gio_tgt *)(x + state_off(g, g->tgt));
	struct gio_dma_map *m = (struct gio_dma_map *)(x + state_off(g, g->map));
	memcpy(t, &g->host_tgt, sizeof(*t));
	t->bar = g->bar;
	t->map = g->map;
	if (!(g->cfg.flags & GIO_GPU_RINGS_HOST))
		memcpy(x + state_off(g, g->bar), g->bar_host, sizeof(*g->bar_host));
	m->regions = g->regions;
	m->count = g->map_host.count;
	memcpy(x + state_off(g, g->regions), g->regions_host, sizeof(g->regions_host));
	memcpy(x + state_off(g, g->qps), g->qps_host, g->cfg.queues * sizeof(*g->qps_host));
	memcpy(x + state_off(g, g->slots), g->slots_host, (size_t)g->cfg.queues * g->cfg.depth * sizeof(*g->slots_host));
	if (g->check) {
		/* check=1: the controller's rules, and lists read through the device's region table. */
		struct gio_qp_check *k = (struct gio_qp_check *)(x + state_off(g, g->check));
		*k = g->check_host;
		k->map = g->map;
		k->data_map = NULL;
		k->caps = g->host_tgt.caps;
		k->lba_shift = g->cfg.lba_shift;
	}
	GIO__CUDA_TRY(cudaMemcpyAsync(g->state, g->xfer, g->state_bytes, cudaMemcpyHostToDevice, (cudaStream_t)g->stream),
		      "GPU target: copying its state to the device (cudaMemcpyAsync)");
	/* Waited for here, not left to the stream: a fused launch runs on a stream of its own. */
	return copy_wait(g, GIO__GPU_COPY_TIMEOUT_MS, "copying its state to the device");
}

/* The device state back into the host images (the executor has ended); within timeout_ms. */
static int read_back(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st)
{
	int rc = xfer_ready(g);
	if (rc)
		return rc;
	GIO__CUDA_TRY(cudaMemcpyAsync(g->xfer, g->state, g->state_bytes, cudaMemcpyDeviceToHost, (cudaStream_t)g->stream),
		      "GPU target: reading its state back (cudaMemcpyAsync)");
	if ((rc = copy_wait(g, timeout_ms, "reading its state back")))
		return rc;
	/* The region table is the host's (registrations happen there); the rest is the device's. */
	const char *x = (const char *)g->xfer;
	memcpy(&g->host_tgt, x + state_off(g, g->tgt), sizeof(g->host_tgt));
	g->host_tgt.bar = g->bar_host;
	g->host_tgt.map = &g->map_host;
	if (!(g->cfg.flags & GIO_GPU_RINGS_HOST))
		memcpy(g->bar_host, x + state_off(g, g->bar), sizeof(*g->bar_host));
	memcpy(g->qps_host, x + state_off(g, g->qps), g->cfg.queues * sizeof(*g->qps_host));
	memcpy(g->slots_host, x + state_off(g, g->slots), (size_t)g->cfg.queues * g->cfg.depth * sizeof(*g->slots_host));
	if (g->check) /* its counters: commands refused, the last address outside */
		memcpy(&g->check_host, x + state_off(g, g->check), sizeof(g->check_host));
	if (st)
		gio_tgt_get_stats(&g->host_tgt, st);
	return 0;
}

int gio_gpu_target_read_back(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st)
{
	gio__clear_error();
	if (!g)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_read_back: NULL target");
	if (g->running)
		return gio__fail(-EBUSY, "giouring: gio_gpu_target_read_back: the executor started by gio_gpu_target_start() "
				 "runs: gio_gpu_target_stop() reads the state back");
	return read_back(g, timeout_ms, st);
}

// Executors started and not yet seen ended, process-wide (executors.h).
static uint32_t g_executors_running;

uint32_t gio__gpu_executors_running(void)
{
	return __atomic_load_n(&g_executors_running, __ATOMIC_ACQUIRE);
}

/* The executor's own stream (gio_gpu_target_start_on()), once its kernel ended or never launched. */
static void drop_exec_stream(struct gio_gpu_target *g)
{
	if (g->exec_stream && g->exec_stream != g->stream)
		(void)cudaStreamDestroy((cudaStream_t)g->exec_stream);
	g->exec_stream = g->stream;
}

int gio_gpu_target_load(void)
{
	gio__clear_error();
	int rc = gio_gpu_preload((const void *)exec_kernel_narrow);
	return rc ? rc : gio_gpu_preload((const void *)exec_kernel_wide);
}

int gio_gpu_target_start(struct gio_gpu_target *g)
{
	return gio_gpu_target_start_on(g, NULL);
}

int gio_gpu_target_start_on(struct gio_gpu_target *g, void *stream)
{
	gio__clear_error();
	if (!g)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_start_on: the target is NULL");
	const void *kernel = exec_kernel_for(g->cfg.exec_warps);
	int rc = gio_gpu_preload(kernel);
	if (!rc)
		rc = gio_gpu_target_prepare(g);
	if (rc)
		return rc;
	size_t smem = 0;
	rc = gio_gpu_one_block_per_sm(kernel, &smem);
	if (rc)
		return rc;
	if (smem < (size_t)g->cfg.exec_warps * sizeof(struct gio_gpu_exec_env))
		return gio__fail(-ENOMEM, "GPU target: %u executor warps need %zu bytes of shared memory per SM, the device gives %zu",
				 g->cfg.exec_warps, (size_t)g->cfg.exec_warps * sizeof(struct gio_gpu_exec_env), smem);
	/* The thread's last error may be an earlier call's (a refused allocation sets it too):
	 * cleared, so that the one read after the launch is the launch's. */
	(void)cudaGetLastError();
	/* prepare() waited for the state's copy on the target's stream: any stream may launch. A
	 * stream of our own on the caller's SMs: several targets may be handed one stream. */
	g->exec_stream = g->stream;
	if (stream && (rc = gio__stream_on_sms_of(stream, &g->exec_stream)) != 0) {
		g->exec_stream = g->stream;
		return rc;
	}
	void *args[] = {&g->tgt, &g->backing, &g->ctl_dev, &g->cfg.flags, &g->cfg.model};
	const cudaError_t launch = cudaLaunchKernel(kernel, dim3(g->cfg.exec_blocks), dim3(g->cfg.exec_warps * 32), args, smem,
						    (cudaStream_t)g->exec_stream);
	if (launch != cudaSuccess) {
		drop_exec_stream(g);
		return gio__cuda_fail_rt(launch, "GPU target: executor launch");
	}
	g->running = 1;
	__atomic_add_fetch(&g_executors_running, 1u, __ATOMIC_ACQ_REL);
	return 0;
}

int gio_gpu_target_stop(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st)
{
	uint64_t deadline;
	cudaError_t e;
	gio__clear_error();
	if (!g || !g->running)
		return 0;
	__atomic_store_n(&g->ctl->stop, 1u, __ATOMIC_RELEASE);
	deadline = gio_deadline_in((uint64_t)timeout_ms * 1000000ull);
	while ((e = cudaStreamQuery((cudaStream_t)g->exec_stream)) == cudaErrorNotReady) {
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: the GPU executor did not stop within %u ms", timeout_ms);
		gio_host_sleep_ns(100000);
	}
	g->running = 0; /* ended, one way or the other */
	drop_exec_stream(g);
	__atomic_sub_fetch(&g_executors_running, 1u, __ATOMIC_ACQ_REL);
	if (e != cudaSuccess)
		return gio__cuda_fail_rt(e, "GPU target: the executor failed");
	return read_back(g, timeout_ms, st);
}

int gio_gpu_target_close(struct gio_gpu_target *g)
{
	int rc;
	gio__clear_error();
	if (!g)
		return 0;
	rc = gio_gpu_target_stop(g, 5000, NULL);
	if (g->running)
		return rc; /* the executor may still use the memory */
	gpu_free(g);
	return rc;
}
