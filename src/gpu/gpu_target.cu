// The GPU-executed software target's host lifecycle (giouring/target/gpu_target.h): memory,
// bring-up on the host, the persistent executor kernel's launch and stop. Compiled once into
// giouring::gpu, the CUDA part of the host library, so that no program compiles the executor's
// kernel itself and none has a __global__ of the library's in its own translation units. The
// public functions are documented where they are declared, in giouring/target/gpu_target.h.
#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/launch.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>
#include <giouring/target/gpu_exec.cuh>
#include <giouring/target/gpu_target.h>

#include "../internal.h"
#include "cuda_fail.cuh"

/* The executor kernel: every warp runs gio_gpu_exec_loop(); exec_blocks blocks of exec_warps warps,
 * a block per SM (gio_gpu_one_block_per_sm()). */
__global__ void __launch_bounds__(GIO_GPU_EXEC_MAX_WARPS * 32) exec_kernel(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl, uint32_t flags,
				    struct gio_ssd_model model)
{
	gio_gpu_exec_loop(t, backing, ctl, flags, &model, (blockIdx.x * blockDim.x + threadIdx.x) / 32u,
			  gridDim.x * blockDim.x / 32u);
}


static void gpu_free(struct gio_gpu_target *g)
{
	if (g->ctl)
		cudaFreeHost(g->ctl);
	if (g->rings_host)
		cudaFreeHost(g->rings_host);
	else if (g->rings)
		cudaFree(g->rings);
	if (g->backing_host)
		cudaFreeHost(g->backing_host);
	else if (g->backing)
		cudaFree(g->backing);
	if (g->cfg.flags & GIO_GPU_RINGS_HOST) {
		if (g->bar)
			cudaFreeHost(g->bar);
	} else if (g->bar) {
		cudaFree(g->bar);
	}
	cudaFree(g->tgt);
	cudaFree(g->map);
	cudaFree(g->regions);
	cudaFree(g->qps);
	cudaFree(g->slots);
	if (g->stream)
		cudaStreamDestroy((cudaStream_t)g->stream);
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
	g->host_tgt.map = g->map;
	if (st)
		return gio__fail(-EIO, "giouring: admin opcode 0x%02x: %s (status 0x%04x)", sqe->opc, gio_status_str(st), st);
	return 0;
}

static int gpu_alloc(struct gio_gpu_target *g)
{
	const struct gio_gpu_target_config *c = &g->cfg;
	const uint32_t nq = c->queues;
	const size_t sq_bytes = ((size_t)c->depth * GIO_SQE_BYTES + 4095) & ~(size_t)4095;
	const size_t cq_bytes = ((size_t)c->depth * GIO_CQE_BYTES + 4095) & ~(size_t)4095;
	const size_t ring_bytes = nq * (sq_bytes + cq_bytes);
	GIO__CUDA_TRY(cudaStreamCreateWithFlags((cudaStream_t *)&g->stream, cudaStreamNonBlocking), "executor stream");
	GIO__CUDA_TRY(cudaHostAlloc((void **)&g->ctl, sizeof(*g->ctl), cudaHostAllocMapped | cudaHostAllocPortable),
		      "control block");
	memset(g->ctl, 0, sizeof(*g->ctl));
	GIO__CUDA_TRY(cudaHostGetDevicePointer((void **)&g->ctl_dev, g->ctl, 0), "control block mapping");
	if (c->flags & GIO_GPU_BACKING_HOST) {
		GIO__CUDA_TRY(cudaHostAlloc((void **)&g->backing_host, c->size, cudaHostAllocMapped | cudaHostAllocPortable),
			      "backing store in pinned host memory");
		GIO__CUDA_TRY(cudaHostGetDevicePointer((void **)&g->backing, g->backing_host, 0), "backing store mapping");
		memset(g->backing_host, 0, c->size);
	} else {
		GIO__CUDA_TRY(cudaMalloc((void **)&g->backing, c->size), "backing store in HBM");
		GIO__CUDA_TRY(cudaMemset(g->backing, 0, c->size), "backing store clear");
	}
	if (c->flags & GIO_GPU_RINGS_HOST) {
		GIO__CUDA_TRY(cudaHostAlloc((void **)&g->rings_host, ring_bytes + 4096, cudaHostAllocMapped | cudaHostAllocPortable),
			      "rings in pinned host memory");
		GIO__CUDA_TRY(cudaHostGetDevicePointer((void **)&g->rings, g->rings_host, 0), "rings mapping");
		memset(g->rings_host, 0, ring_bytes + 4096);
		GIO__CUDA_TRY(cudaHostAlloc((void **)&g->bar, sizeof(*g->bar), cudaHostAllocMapped | cudaHostAllocPortable),
			      "doorbells in pinned host memory");
	} else {
		GIO__CUDA_TRY(cudaMalloc((void **)&g->rings, ring_bytes + 4096), "rings in HBM");
		GIO__CUDA_TRY(cudaMemset(g->rings, 0, ring_bytes + 4096), "rings clear");
		GIO__CUDA_TRY(cudaMallocManaged((void **)&g->bar, sizeof(*g->bar)), "doorbells");
	}
	GIO__CUDA_TRY(cudaMalloc((void **)&g->tgt, sizeof(*g->tgt)), "target state");
	GIO__CUDA_TRY(cudaMallocManaged((void **)&g->map, sizeof(*g->map)), "region table");
	GIO__CUDA_TRY(cudaMallocManaged((void **)&g->regions, GIO_GPU_MAX_REGIONS * sizeof(*g->regions)), "regions");
	GIO__CUDA_TRY(cudaMallocManaged((void **)&g->qps, nq * sizeof(*g->qps)), "queue pairs");
	GIO__CUDA_TRY(cudaMallocManaged((void **)&g->slots, (size_t)nq * c->depth * sizeof(*g->slots)), "command slots");
	g->map->regions = g->regions;
	g->map->count = 0;
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
	if (gio_tgt_init(&g->host_tgt, g->bar, &tc, g->map)) {
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
		unsigned char *sq = base + (q - 1) * (sq_bytes + cq_bytes), *cq = sq + sq_bytes;
		struct gio_dma_region qr[2] = {{(uint64_t)(uintptr_t)sq, sq_bytes, sq}, {(uint64_t)(uintptr_t)cq, cq_bytes, cq}};
		struct gio_dma_map qmap = {qr, 2};
		struct gio_sqe sqe;
		rc = gio_prep_create_cq(&sqe, (uint16_t)q, g->cfg.depth, (uint64_t)(uintptr_t)cq, 0, 0);
		if (!rc)
			rc = gpu_admin(g, &sqe, &qmap);
		if (!rc)
			rc = gio_prep_create_sq(&sqe, (uint16_t)q, g->cfg.depth, (uint16_t)q, (uint64_t)(uintptr_t)sq);
		if (!rc)
			rc = gpu_admin(g, &sqe, &qmap);
		if (!rc)
			rc = gio_qp_init(&g->qps[q - 1], (struct gio_sqe *)sq, g->cfg.depth, (struct gio_cqe *)cq, g->cfg.depth,
					 g->slots + (size_t)(q - 1) * g->cfg.depth, (uint16_t)q,
					 (uint32_t *)((char *)g->bar + gio_sq_doorbell_offset(g->bar->regs.cap, (uint16_t)q)),
					 (uint32_t *)((char *)g->bar + gio_cq_doorbell_offset(g->bar->regs.cap, (uint16_t)q)),
					 gpu_scope ? GIO_QP_GPU_SCOPE : 0);
	}
	if (rc) {
		gpu_free(g);
		return rc < 0 && rc != -EINVAL ? rc : gio__fail(-EIO, "giouring: %s: creating the I/O queues failed", uri);
	}
	*out = g;
	return 0;
}

int gio_gpu_target_register(struct gio_gpu_target *g, void *ptr, size_t len, uint64_t *addr)
{
	gio__clear_error();
	if (!g || !ptr || !len || !addr)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_register: NULL or empty region");
	if (g->running)
		return gio__fail(-EBUSY, "giouring: register memory before gio_gpu_target_start()");
	if (g->map->count >= GIO_GPU_MAX_REGIONS)
		return gio__fail(-ENOSPC, "giouring: more than %u registered regions", GIO_GPU_MAX_REGIONS);
	g->regions[g->map->count] = {(uint64_t)(uintptr_t)ptr, (uint64_t)len, ptr};
	g->map->count++;
	*addr = (uint64_t)(uintptr_t)ptr;
	return 0;
}

struct gio_qp *gio_gpu_target_qp(const struct gio_gpu_target *g, uint32_t i)
{
	return g && i < g->cfg.queues ? &g->qps[i] : NULL;
}

int gio_gpu_target_prepare(struct gio_gpu_target *g)
{
	gio__clear_error();
	if (!g)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_prepare: NULL target");
	if (g->running)
		return gio__fail(-EBUSY, "giouring: the GPU executor is already running");
	memset(g->ctl, 0, sizeof(*g->ctl));
	GIO__CUDA_TRY(cudaMemcpy(g->tgt, &g->host_tgt, sizeof(g->host_tgt), cudaMemcpyHostToDevice), "target state");
	GIO__CUDA_TRY(cudaDeviceSynchronize(), "before the executor");
	return 0;
}

int gio_gpu_target_start(struct gio_gpu_target *g)
{
	gio__clear_error();
	int rc = gio_gpu_preload((const void *)exec_kernel);
	if (!rc)
		rc = gio_gpu_target_prepare(g);
	if (rc)
		return rc;
	size_t smem = 0;
	rc = gio_gpu_one_block_per_sm((const void *)exec_kernel, &smem);
	if (rc)
		return rc;
	exec_kernel<<<g->cfg.exec_blocks, g->cfg.exec_warps * 32, smem, (cudaStream_t)g->stream>>>(
		g->tgt, g->backing, g->ctl_dev, g->cfg.flags, g->cfg.model);
	GIO__CUDA_TRY(cudaGetLastError(), "executor launch");
	g->running = 1;
	return 0;
}

int gio_gpu_target_stop(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st)
{
	uint64_t deadline;
	gio__clear_error();
	if (!g || !g->running)
		return 0;
	__atomic_store_n(&g->ctl->stop, 1u, __ATOMIC_RELEASE);
	deadline = gio_deadline_in((uint64_t)timeout_ms * 1000000ull);
	while (cudaStreamQuery((cudaStream_t)g->stream) == cudaErrorNotReady) {
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: the GPU executor did not stop within %u ms", timeout_ms);
		gio_host_sleep_ns(100000);
	}
	GIO__CUDA_TRY(cudaStreamSynchronize((cudaStream_t)g->stream), "executor");
	g->running = 0;
	GIO__CUDA_TRY(cudaMemcpy(&g->host_tgt, g->tgt, sizeof(g->host_tgt), cudaMemcpyDeviceToHost), "target state");
	if (st)
		gio_tgt_get_stats(&g->host_tgt, st);
	return 0;
}

int gio_gpu_target_close(struct gio_gpu_target *g)
{
	int rc;
	gio__clear_error();
	if (!g)
		return 0;
	rc = gio_gpu_target_stop(g, 5000, NULL);
	if (rc)
		return rc;
	gpu_free(g);
	return 0;
}

