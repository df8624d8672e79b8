// The GPU half of the package: GPU-executed targets (mem://hbm, mem://host?exec=gpu) with the
// pool registered and their P2P tables in device memory, and the GPU engine's layer calls on the
// caller's stream (PyTorch's current stream, ops.cpp). The I/O kernel is a template of
// giouring/kv/layer.cuh instantiated in this translation unit, so that gio_kv_layer_preload()
// here loads it before any executor starts (docs/design.md, "Persistent kernels and lazy
// loading": a kernel lazily loaded while a persistent kernel spins waits for it for ever).
#include <cuda_runtime.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <giouring/host/partition.h>
#include <giouring/kv/layer.cuh>
#include <giouring/target/gpu_target.h>

#include "gpy.h"

namespace {

int cuda_fail(cudaError_t e, const char *what)
{
	return gpy_fail(gio_cuda_errno((int)e), "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

// Makes the pool's device current for this thread's CUDA calls, and restores the caller's: the
// driver's current context is shared with PyTorch's runtime.
struct DeviceScope {
	int prev = -1;
	cudaError_t err = cudaSuccess;
	explicit DeviceScope(int dev)
	{
		if ((err = cudaGetDevice(&prev)) == cudaSuccess && prev != dev)
			err = cudaSetDevice(dev);
	}
	~DeviceScope()
	{
		int now = -1;
		if (prev >= 0 && cudaGetDevice(&now) == cudaSuccess && now != prev)
			cudaSetDevice(prev);
	}
};

// The lists of a GPU target's table: device memory registered with the target.
int lists_bus(struct gpy_store *, struct gpy_dev *d, uint64_t *addr)
{
	const cudaError_t e = cudaMalloc(&d->lists_dev, d->lists_bytes);
	if (e != cudaSuccess)
		return cuda_fail(e, "allocating the P2P table's lists");
	const int rc = gio_gpu_target_register(d->gpu, d->lists_dev, d->lists_bytes, addr);
	return rc ? gpy_lib(rc, "registering the P2P table's lists") : 0;
}

// Waits for the plan's own stream up to the plan's deadline: a CUDA call that waited on the
// device could sit behind a persistent kernel (an engine's, or a GPU target's executor) for ever.
int stream_done(struct gpy_plan *p, const char *what)
{
	const uint64_t deadline = gio_now_ns() + p->timeout_ns;
	for (;;) {
		const cudaError_t e = cudaStreamQuery((cudaStream_t)p->cuda_stream);
		if (e == cudaSuccess)
			return 0;
		if (e != cudaErrorNotReady)
			return cuda_fail(e, what);
		if (gio_now_ns() > deadline)
			return gpy_fail(-ETIME, "%s: not done within %.3f s (the copy engine held back?)", what, p->timeout_ns / 1e9);
		struct timespec ts{0, 20000};
		nanosleep(&ts, nullptr);
	}
}

// A context under the GPU engine (docs/python.md, "Peer-to-peer or staged"): its
// queue pairs pinned for the GPU (GIO_CTX_QP_PINNED) and their structs copied to device memory,
// used by the I/O kernel alone from then on; on the peer-to-peer path its table in device memory
// too. Stream-ordered allocations and copies on the plan's own stream, waited with a deadline.
int ctx_plan_dev(struct gpy_plan *p, uint32_t d, struct gpy_dev *x, uint32_t queue_depth)
{
	const uint32_t n = p->nqps;
	cudaError_t e;
	if (!p->cuda_stream) {
		cudaStream_t st;
		if ((e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) != cudaSuccess)
			return cuda_fail(e, "creating the plan's stream");
		p->cuda_stream = st;
		// The queue pairs' way back at destroy: pinned, so that the copy never waits on the host.
		void **grown = (void **)realloc(p->s->pinned, (p->s->npinned + 1) * sizeof(void *));
		if (!grown)
			return gpy_fail(-ENOMEM, "no memory");
		p->s->pinned = grown;
		if ((e = cudaHostAlloc((void **)&p->qp_back, GPY_MAX_QPS * sizeof(struct gio_qp), cudaHostAllocDefault)) !=
		    cudaSuccess)
			return cuda_fail(e, "allocating the queue pairs' copy-back");
		p->s->pinned[p->s->npinned++] = p->qp_back; // freed at the store's close
	}
	const cudaStream_t st = (cudaStream_t)p->cuda_stream;
	if (!(p->gpu_qps[d] = (struct gio_qp **)calloc(n, sizeof(struct gio_qp *))))
		return gpy_fail(-ENOMEM, "no memory");
	for (uint32_t q = 0; q < n; q++) {
		const int rc = gio_ctx_qp_create_ex(x->ctx, queue_depth, GIO_CTX_QP_PINNED, &p->qps[d][q]);
		if (rc)
			return gpy_lib(rc, "creating a queue pair the GPU fills");
	}
	if ((e = cudaMallocAsync((void **)&p->dqps[d], n * sizeof(struct gio_qp), st)) != cudaSuccess)
		return cuda_fail(e, "allocating the queue pairs in GPU memory");
	for (uint32_t q = 0; q < n; q++) { // the structs as created: the GPU alone moves them from here
		if ((e = cudaMemcpyAsync(&p->dqps[d][q], p->qps[d][q], sizeof(struct gio_qp), cudaMemcpyHostToDevice, st)) !=
		    cudaSuccess)
			return cuda_fail(e, "copying the queue pairs to the GPU");
		p->gpu_qps[d][q] = &p->dqps[d][q];
	}
	p->devs[d].qps = p->gpu_qps[d];
	p->devs[d].nqps = n;
	if (x->path != GIO_GPU_PATH_P2P) // staged: the plan's staging area (plan.c), no table
		return 0;
	const size_t bytes = x->table_entries * sizeof(union gio_dptr);
	if ((e = cudaMallocAsync((void **)&p->table_dev[d], bytes, st)) != cudaSuccess ||
	    (e = cudaMemcpyAsync(p->table_dev[d], x->table, bytes, cudaMemcpyHostToDevice, st)) != cudaSuccess)
		return cuda_fail(e, "copying the P2P table to the GPU");
	p->devs[d].table = p->table_dev[d];
	return 0;
}

} // namespace

extern "C" {

int gpy_has_gpu(void)
{
	return 1;
}

int gpy_gpu_open(struct gpy_store *s, struct gpy_dev *d, const char *uri)
{
	struct gio_gpu_target_config cfg;
	if (gio_gpu_target_parse(uri, &cfg) != 0)
		return 0; // a context's URI (a malformed GPU one is refused by gio_ctx_open() by name)
	if (s->device < 0)
		return gpy_fail(-EINVAL, "GPU-executed targets move data to and from GPU memory: put the pool's tensors "
					 "on a CUDA device");
	DeviceScope scope(s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	int rc = gio_gpu_target_open(uri, &d->gpu);
	if (rc)
		return gpy_lib(rc, "opening the GPU-executed target");
	if ((rc = gio_kv_gpu_target_blockdev(d->gpu, &d->bd)) != 0)
		return gpy_lib(rc, "the target's block device");
	d->caps.sgls = d->gpu->cfg.sgls ? 1u : 0u;
	d->caps.page_bytes = 4096;
	d->caps.max_xfer_bytes = (uint64_t)4096 << d->gpu->cfg.mdts;
	d->nsid = GIO_TGT_NSID;
	d->lba_shift = d->gpu->cfg.lba_shift;
	return 1;
}

int gpy_gpu_attach(struct gpy_store *s, struct gpy_dev *d)
{
	DeviceScope scope(s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	for (uint32_t i = 0; i < s->nregions; i++) {
		uint64_t bus; // gio_kv_pool_bus_gpu() finds it again below
		const int rc = gio_gpu_target_register(d->gpu, (void *)(uintptr_t)s->regions[2 * i],
						       (size_t)s->regions[2 * i + 1], &bus);
		if (rc)
			return gpy_lib(rc, "registering the pool's memory");
	}
	uint64_t *bases = nullptr;
	if (s->pool.base_mode != GIO_KV_BASE_ONE &&
	    !(bases = (uint64_t *)calloc((size_t)s->pool.extent[GIO_KV_LAYER] * s->pool.extent[GIO_KV_PART], sizeof(*bases))))
		return gpy_fail(-ENOMEM, "no memory");
	struct gio_kv_pool bus;
	int rc = gio_kv_pool_bus_gpu(d->gpu, &s->pool, bases, &bus);
	// Built on the host (the entries are pure arithmetic on bus addresses), then copied: the
	// executor only ever reads the device copy. SGL only: the GPU executor's PRP path is not
	// what this package drives.
	rc = rc ? gpy_lib(rc, "the pool at the target's bus addresses") : gpy_table_build(s, d, &bus, 0, lists_bus);
	free(bases);
	if (rc)
		return rc;
	cudaError_t e = cudaMalloc(&d->table_dev, d->table_entries * sizeof(union gio_dptr));
	if (e == cudaSuccess)
		e = cudaMemcpy(d->table_dev, d->table, d->table_entries * sizeof(union gio_dptr), cudaMemcpyHostToDevice);
	if (e == cudaSuccess && d->lists_bytes)
		e = cudaMemcpy(d->lists_dev, d->lists, d->lists_bytes, cudaMemcpyHostToDevice);
	return e == cudaSuccess ? 0 : cuda_fail(e, "copying the P2P table to the GPU");
}

int gpy_gpu_start(struct gpy_store *s)
{
	DeviceScope scope(s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	int rc = gio_kv_layer_preload();
	if (rc)
		return gpy_lib(rc, "loading the layer kernels");
	for (uint32_t i = 0; i < s->ndevs; i++) // contexts (CPU-executed) have no executor kernel
		if (s->dev[i].gpu && (rc = gio_gpu_target_start_on(s->dev[i].gpu, s->exec_stream)) != 0)
			return gpy_lib(rc, "starting a GPU target's executor");
	return 0;
}

int gpy_gpu_stop(struct gpy_store *s)
{
	uint32_t started = 0;
	for (uint32_t i = 0; i < s->ndevs; i++)
		started += s->dev[i].gpu != nullptr;
	if (!started)
		return 0; // no GPU target: no CUDA call (a machine without a driver closes its stores too)
	DeviceScope scope(s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	int ret = 0;
	for (uint32_t i = 0; i < s->ndevs; i++) {
		const int rc = s->dev[i].gpu ? gio_gpu_target_stop(s->dev[i].gpu, 5000, nullptr) : 0;
		if (rc && !ret)
			ret = gpy_lib(rc, "stopping a GPU target's executor");
	}
	return ret;
}

int gpy_gpu_close(struct gpy_store *s, struct gpy_dev *d)
{
	DeviceScope scope(s->device);
	const int rc = gio_gpu_target_close(d->gpu); // stops the executor first (5 s at most)
	d->gpu = nullptr;
	if (rc)
		return gpy_lib(rc, "closing a GPU target"); // its memory, and so our lists, may still be read
	if (d->table_dev)
		cudaFree(d->table_dev);
	if (d->lists_dev)
		cudaFree(d->lists_dev);
	d->table_dev = nullptr;
	d->lists_dev = nullptr;
	return 0;
}

void gpy_gpu_release(struct gpy_store *s)
{
	for (uint32_t i = 0; i < s->npinned; i++)
		cudaFreeHost(s->pinned[i]);
	free(s->pinned);
	s->pinned = nullptr;
	s->npinned = 0;
}

int gpy_gpu_plan_init(struct gpy_plan *p, uint32_t queue_depth)
{
	struct gpy_store *s = p->s;
	DeviceScope scope(s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	for (uint32_t d = 0; d < s->ndevs; d++) { // in the store's order
		struct gpy_dev *x = &s->dev[s->order[d]];
		if (!x->gpu) {
			const int rc = ctx_plan_dev(p, d, x, queue_depth);
			if (rc)
				return rc;
			continue;
		}
		const uint32_t n = x->gpu->cfg.queues;
		if (!(p->gpu_qps[d] = (struct gio_qp **)calloc(n, sizeof(struct gio_qp *))))
			return gpy_fail(-ENOMEM, "no memory");
		for (uint32_t q = 0; q < n; q++)
			p->gpu_qps[d][q] = gio_gpu_target_qp(x->gpu, q);
		p->devs[d].qps = p->gpu_qps[d];
		p->devs[d].nqps = n;
		p->devs[d].table = x->table_dev;
	}
	void **grown = (void **)realloc(s->pinned, (s->npinned + 2) * sizeof(void *)); // the flags and the times
	if (!grown)
		return gpy_fail(-ENOMEM, "no memory");
	s->pinned = grown;
	cudaError_t e = cudaHostAlloc((void **)&p->timed_out, p->layers * sizeof(int), cudaHostAllocMapped);
	if (e != cudaSuccess)
		return cuda_fail(e, "allocating the stream waits' flags");
	memset(p->timed_out, 0, p->layers * sizeof(int));
	s->pinned[s->npinned++] = p->timed_out; // freed at the store's close, after the executors
	e = cudaHostAlloc((void **)&p->waited, p->layers * sizeof(uint64_t), cudaHostAllocMapped);
	if (e != cudaSuccess)
		return cuda_fail(e, "allocating the stream waits' times");
	memset(p->waited, 0, p->layers * sizeof(uint64_t));
	s->pinned[s->npinned++] = p->waited;
	return p->cuda_stream ? stream_done(p, "copying the queue pairs and tables to the GPU") : 0;
}

int gpy_gpu_plan_free(struct gpy_plan *p)
{
	int ret = 0;
	if (p->cuda_stream) {
		DeviceScope scope(p->s->device);
		// Each context's queue pairs as the GPU left them: the destroy reaps from there. Only
		// where a plan was made (else no kernel used them, and a copy that failed half way
		// must not overwrite the host's structs with what the device memory held).
		for (uint32_t d = 0; d < p->s->ndevs; d++) {
			if (!p->dqps[d] || !p->qp_back || !p->plan)
				continue;
			cudaError_t e = cudaMemcpyAsync(p->qp_back, p->dqps[d], p->nqps * sizeof(struct gio_qp),
							cudaMemcpyDeviceToHost, (cudaStream_t)p->cuda_stream);
			int rc = e == cudaSuccess ? stream_done(p, "copying the queue pairs back from the GPU")
						  : cuda_fail(e, "copying the queue pairs back from the GPU");
			for (uint32_t q = 0; rc == 0 && q < p->nqps; q++)
				*p->qps[d][q] = p->qp_back[q];
			if (rc && !ret)
				ret = rc;
		}
		for (uint32_t d = 0; d < p->s->ndevs; d++) { // stream-ordered: no wait behind other kernels
			if (p->dqps[d])
				cudaFreeAsync(p->dqps[d], (cudaStream_t)p->cuda_stream);
			if (p->table_dev[d])
				cudaFreeAsync(p->table_dev[d], (cudaStream_t)p->cuda_stream);
			p->dqps[d] = nullptr;
			p->table_dev[d] = nullptr;
		}
		cudaStreamDestroy((cudaStream_t)p->cuda_stream); // returns at once; the frees still run
		p->cuda_stream = nullptr;
	}
	for (uint32_t d = 0; d < GIO_KV_STORE_MAX_DEVICES; d++) {
		free(p->gpu_qps[d]);
		p->gpu_qps[d] = nullptr;
	}
	return ret;
}

int gpy_gpu_layer(struct gpy_plan *p, uint32_t layer, int write, void *stream)
{
	DeviceScope scope(p->s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	return write ? gio_kv_save_layer(p->plan, layer, (cudaStream_t)stream)
		     : gio_kv_load_layer(p->plan, layer, (cudaStream_t)stream);
}

int gpy_gpu_wait(struct gpy_plan *p, uint32_t layer, void *stream, uint64_t timeout_ns)
{
	DeviceScope scope(p->s->device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	if (layer >= p->layers)
		return gpy_fail(-EINVAL, "layer %u beyond the plan's %u", layer, p->layers);
	return gio_kv_wait_layer_timed_on(p->plan, layer, (cudaStream_t)stream, timeout_ns, &p->timed_out[layer],
					  &p->waited[layer]);
}

int gpy_gpu_sched_launch(void *arg, struct gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm)
{
	return gio_kv_layer_launch(plan, layer, write, (cudaStream_t)arg, sm);
}

/* Stream timers: pairs of timing events, made when the scheduler is (before any batch starts the
 * executors), recorded around its launches and read back only once complete, so that no call
 * here waits behind a persistent kernel. */
struct gpy_timers {
	int device;
	uint32_t n;
	cudaEvent_t ev[1]; /* 2 n: begin and end of timer i at 2 i and 2 i + 1 */
};

int gpy_gpu_timers_create(int device, uint32_t n, void **out)
{
	DeviceScope scope(device);
	if (scope.err != cudaSuccess)
		return cuda_fail(scope.err, "selecting the pool's device");
	struct gpy_timers *t = (struct gpy_timers *)calloc(1, sizeof(*t) + 2 * n * sizeof(cudaEvent_t));
	if (!t)
		return gpy_fail(-ENOMEM, "no memory");
	t->device = device;
	for (uint32_t i = 0; i < 2 * n; i++) {
		const cudaError_t e = cudaEventCreate(&t->ev[i]);
		if (e != cudaSuccess) {
			t->n = i / 2; /* the pairs made whole, then the odd one */
			if (i % 2)
				cudaEventDestroy(t->ev[i - 1]);
			gpy_gpu_timers_destroy(t);
			return cuda_fail(e, "creating the scheduler's timing events");
		}
	}
	t->n = n;
	*out = t;
	return 0;
}

void gpy_gpu_timers_destroy(void *timers)
{
	struct gpy_timers *t = (struct gpy_timers *)timers;
	if (!t)
		return;
	for (uint32_t i = 0; i < 2 * t->n; i++)
		cudaEventDestroy(t->ev[i]); /* returns at once; a pending event's resources go when it completes */
	free(t);
}

int gpy_gpu_timer_mark(void *timers, uint32_t i, int end, void *stream)
{
	struct gpy_timers *t = (struct gpy_timers *)timers;
	if (!t || i >= t->n)
		return gpy_fail(-EINVAL, "timer %u of %u", i, t ? t->n : 0);
	const cudaError_t e = cudaEventRecord(t->ev[2 * i + (end ? 1 : 0)], (cudaStream_t)stream);
	return e == cudaSuccess ? 0 : cuda_fail(e, "recording a scheduler's timing event");
}

int gpy_gpu_timer_read(void *timers, uint32_t i, uint64_t *ns)
{
	struct gpy_timers *t = (struct gpy_timers *)timers;
	float ms = 0.f;
	if (!t || i >= t->n || !ns)
		return gpy_fail(-EINVAL, "timer %u of %u", i, t ? t->n : 0);
	cudaError_t e = cudaEventQuery(t->ev[2 * i + 1]);
	if (e == cudaErrorNotReady)
		return -EAGAIN; /* not the stream's turn yet: asked again at a later slot */
	if (e == cudaSuccess)
		e = cudaEventElapsedTime(&ms, t->ev[2 * i], t->ev[2 * i + 1]);
	if (e != cudaSuccess)
		return cuda_fail(e, "reading a scheduler's timing events");
	*ns = (uint64_t)((double)ms * 1e6);
	return 0;
}

int gpy_partition_create(int device, uint32_t io_sms, uint32_t exec_sms, int fallback, void **out)
{
	gpy_clear_error();
	if (!out)
		return gpy_fail(-EINVAL, "partition: NULL argument");
	struct gio_sm_partition_params pp{device, io_sms, fallback ? GIO_SM_PARTITION_FALLBACK : 0u, exec_sms};
	const int rc = gio_sm_partition_create(&pp, (struct gio_sm_partition **)out);
	return rc ? gpy_lib(rc, "SM partition") : 0;
}

int gpy_partition_info(void *part, uint32_t *out, uint32_t n)
{
	struct gio_sm_partition_info i{};
	gpy_clear_error();
	const int rc = gio_sm_partition_info((const struct gio_sm_partition *)part, &i);
	if (rc)
		return gpy_lib(rc, "SM partition info");
	const uint32_t v[] = {i.device_sms, i.io_sms, i.compute_sms, i.min_partition_sms, i.alignment_sms, i.isolated,
			      i.exec_sms};
	for (uint32_t k = 0; out && k < n && k < 7; k++)
		out[k] = v[k];
	return 0;
}

void *gpy_partition_stream(void *part, int side)
{
	return gio_sm_partition_stream((const struct gio_sm_partition *)part,
				       side == 2 ? GIO_SM_EXEC : side ? GIO_SM_COMPUTE : GIO_SM_IO);
}

int gpy_partition_destroy(void *part)
{
	gpy_clear_error();
	const int rc = gio_sm_partition_destroy((struct gio_sm_partition *)part);
	return rc ? gpy_lib(rc, "destroying the SM partition") : 0;
}

} // extern "C"
