/* Plans over a store (giouring/kv/plan.h): created with the engine the store's targets take (the
 * CPU engine's queue pairs here, the GPU engine's parts in gpu.cu), batches planned from Python's
 * keys and blocks, layers run or launched by the torch ops (ops.cpp), and each key's result at
 * finish. Live plans are listed, so that an op given a stale integer handle refuses it instead of
 * following it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpy.h"

#define GPY_MAX_PLANS 256u

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpy_plan *live[GPY_MAX_PLANS];

static int live_add(struct gpy_plan *p)
{
	static uint64_t next_uid;
	uint32_t i;
	int rc = -ENOSPC;
	pthread_mutex_lock(&live_lock);
	p->uid = ++next_uid;
	for (i = 0; i < GPY_MAX_PLANS && rc; i++)
		if (!live[i]) {
			live[i] = p;
			rc = 0;
		}
	pthread_mutex_unlock(&live_lock);
	return rc ? gpy_fail(rc, "%u plans are alive already", GPY_MAX_PLANS) : 0;
}

static void live_remove(struct gpy_plan *p)
{
	uint32_t i;
	pthread_mutex_lock(&live_lock);
	for (i = 0; i < GPY_MAX_PLANS; i++)
		if (live[i] == p)
			live[i] = NULL;
	pthread_mutex_unlock(&live_lock);
}

struct gpy_plan *gpy_plan_lookup(int64_t handle)
{
	struct gpy_plan *found = NULL;
	uint32_t i;
	pthread_mutex_lock(&live_lock);
	for (i = 0; i < GPY_MAX_PLANS; i++)
		if (live[i] && (int64_t)(uintptr_t)live[i] == handle)
			found = live[i];
	pthread_mutex_unlock(&live_lock);
	return found;
}

/* Destroys the plan's parts; the first failure's rc. */
static int plan_free(struct gpy_plan *p)
{
	int ret = 0, rc;
	uint32_t d, q;
	live_remove(p);
	if (p->plan && (rc = gio_kv_plan_destroy(p->plan)) != 0)
		ret = gpy_lib(rc, "destroying the plan");
	/* The GPU engine's copies of a context's queue pairs come back before the destroy reaps. */
	if ((rc = gpy_gpu_plan_free(p)) != 0 && !ret)
		ret = rc;
	for (d = 0; d < p->s->ndevs; d++)
		for (q = 0; q < GPY_MAX_QPS; q++)
			if (p->qps[d][q] && (rc = gio_ctx_qp_destroy(p->s->dev[p->s->order[d]].ctx, p->qps[d][q], p->timeout_ns, NULL, NULL)) < 0 &&
			    !ret)
				ret = gpy_lib(rc, "destroying a queue pair");
	/* After the queue pairs: a command that lost its slot is gone with them. */
	for (d = 0; d < p->s->ndevs; d++)
		if (p->areas[d] && (rc = gio_ctx_stage_destroy(p->areas[d])) != 0 && !ret)
			ret = gpy_lib(rc, "freeing a staging area");
	if (p->plan)
		p->s->plans--;
	free(p);
	return ret;
}

/* A staged device's staging area, made with each plan: one ring per queue pair (the engines take
 * ring q for queue pair q), each slot a command's data, as many slots as a queue holds commands
 * up to 64 (a power of two, at least a group's). 64 a ring bounds the area (4 rings of 64 KiB
 * objects: 16 MiB a device) and still covers a Gen5 drive's bandwidth x latency many times (14 GB/s
 * x 100 us is 22 such objects); where a queue holds more, reservations wait for slots, bounded by
 * the group's deadline. The area's form (SGL, or PRP with its staging table) is the commands'. */
static int plan_stage(struct gpy_plan *p, uint32_t d, const struct gpy_dev *x, uint32_t queue_depth)
{
	const struct gio_kv_io_stage *io;
	uint32_t slots = GIO_KV_IO_GROUP_MAX;
	int rc;
	while (slots < queue_depth && slots < 64)
		slots <<= 1;
	rc = gio_ctx_stage_create(x->ctx, p->nqps, slots, p->s->runs.object_bytes / x->cmds,
				  p->engine == GIO_KV_ENGINE_GPU ? GIO_CTX_STAGE_GPU : 0, &p->areas[d]);
	if (rc)
		return gpy_lib(rc, "making the staging area");
	io = gio_ctx_stage_io(p->areas[d]);
	p->devs[d].stage = io;
	p->devs[d].table = NULL;
	p->devs[d].psdt = io->table ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR;
	return 0;
}

int gpy_plan_create(struct gpy_store *s, uint32_t engine, uint32_t max_requests, uint32_t queues,
		    uint32_t queue_depth, uint32_t io_ctas, uint32_t io_warps, uint64_t timeout_ns, uint32_t poll_ns,
		    uint32_t move_depth, uint32_t mover, uint32_t completions, struct gpy_plan **out)
{
	struct gio_kv_plan_params pp;
	struct gpy_plan *p;
	uint32_t d, q;
	int rc;
	gpy_clear_error();
	if (!s || !out)
		return gpy_fail(-EINVAL, "no store");
	if (engine == GIO_KV_ENGINE_CPU && s->gpu_targets)
		return gpy_fail(-EINVAL, "the store's targets are GPU-executed: they take the GPU engine");
	if (engine == GIO_KV_ENGINE_GPU && s->device < 0)
		return gpy_fail(-EINVAL, "the GPU engine moves data to and from GPU memory: put the pool's tensors on a CUDA "
					 "device (a pool in host memory takes the CPU engine)");
	for (d = 0; engine == GIO_KV_ENGINE_CPU && s->device >= 0 && d < s->ndevs; d++)
		if (s->dev[d].path == GIO_GPU_PATH_STAGED)
			return gpy_fail(-EOPNOTSUPP, "target %u takes the staged path (%s) and the pool is in GPU memory, which "
					"the CPU engine cannot copy into: make the plan with engine='gpu'", d, s->dev[d].why);
	if (engine > GIO_KV_ENGINE_GPU)
		return gpy_fail(-EINVAL, "unknown engine %u", engine);
	if (engine == GIO_KV_ENGINE_GPU && s->gpu_targets && s->started)
		return gpy_fail(-EBUSY, "create every plan of GPU-executed targets before the first batch: their executors "
					"run now, and a plan's allocations must not wait behind them");
	if (queues == 0)
		queues = 2;
	if (queue_depth == 0)
		queue_depth = 64;
	if (queues > GPY_MAX_QPS)
		return gpy_fail(-EINVAL, "at most %u queue pairs per device, not %u", GPY_MAX_QPS, queues);
	if (!(p = calloc(1, sizeof(*p))))
		return gpy_fail(-ENOMEM, "no memory");
	p->s = s;
	p->engine = engine;
	p->layers = s->pool.extent[GIO_KV_LAYER];
	p->max_requests = max_requests;
	p->timeout_ns = timeout_ns ? timeout_ns : s->timeout_ns;
	p->nqps = queues;
	for (d = 0; d < s->ndevs; d++) { /* in the store's order */
		struct gpy_dev *x = &s->dev[s->order[d]];
		p->devs[d].table = x->table;
		p->devs[d].nsid = x->nsid;
		p->devs[d].lba_shift = x->lba_shift;
		p->devs[d].psdt = x->psdt;
		p->devs[d].cmds = x->cmds;
		if (x->path == GIO_GPU_PATH_STAGED && (rc = plan_stage(p, d, x, queue_depth)) != 0)
			goto fail;
		if (engine == GIO_KV_ENGINE_GPU)
			continue;
		for (q = 0; q < queues; q++)
			if ((rc = gio_ctx_qp_create(x->ctx, queue_depth, &p->qps[d][q])) != 0) {
				rc = gpy_lib(rc, "creating a queue pair");
				goto fail;
			}
		p->devs[d].qps = p->qps[d];
		p->devs[d].nqps = queues;
	}
	if (engine == GIO_KV_ENGINE_GPU && (rc = gpy_gpu_plan_init(p, queue_depth)) != 0)
		goto fail;
	memset(&pp, 0, sizeof(pp));
	pp.engine = engine;
	pp.max_requests = max_requests;
	pp.blocks = s->pool.extent[GIO_KV_BLOCK];
	pp.io_ctas = io_ctas;
	pp.io_warps = io_warps;
	pp.timeout_ns = p->timeout_ns;
	pp.poll_ns = poll_ns;
	pp.move_depth = move_depth;
	pp.mover = mover;
	pp.completions = completions;
	pp.devs = p->devs;
	for (d = 0; d < s->ndevs; d++)
		if (p->areas[d])
			pp.pool = &s->pool; /* a staged device's engine copies between its slots and the pool */
	if ((rc = gio_kv_plan_create(s->store, &pp, &p->plan)) != 0) {
		rc = gpy_lib(rc, "creating the plan");
		goto fail;
	}
	s->plans++;
	if ((rc = live_add(p)) != 0)
		goto fail;
	*out = p;
	return 0;
fail: {
	struct gpy_saved_error e;
	gpy_error_save(&e);
	plan_free(p);
	return gpy_error_restore(rc, &e);
}
}

/* A scheduler holds save layers of this plan's batch: they would be issued on a batch that ended,
 * or on freed memory. */
static int refuse_queued(const struct gpy_plan *p, const char *what)
{
	return gpy_fail(-EBUSY, "%s: %u save layer%s of this batch %s still queued in a scheduler: issue slots, "
			"drain() it, or close it (its layers then count as not run)", what, p->sched_queued,
			p->sched_queued == 1 ? "" : "s", p->sched_queued == 1 ? "is" : "are");
}

int gpy_plan_destroy(struct gpy_plan *p)
{
	gpy_clear_error();
	if (p && p->sched_queued)
		return refuse_queued(p, "closing the plan");
	return p ? plan_free(p) : 0;
}

struct gio_kv_u128 *gpy_keys_of(const uint64_t *keys, uint32_t n)
{
	struct gio_kv_u128 *k = calloc(n ? n : 1, sizeof(*k));
	uint32_t i;
	for (i = 0; k && i < n; i++) {
		k[i].hi = keys[2 * i];
		k[i].lo = keys[2 * i + 1];
	}
	return k;
}

/* The GPU targets' executors start with the first batch: every plan exists by then. */
static int start_targets(struct gpy_plan *p)
{
	int rc;
	if (p->engine != GIO_KV_ENGINE_GPU || p->s->started)
		return 0;
	if ((rc = gpy_gpu_start(p->s)) != 0)
		return rc;
	p->s->started = 1;
	return 0;
}

/* Plans a batch: a load (@p write 0: hit[] per key) or a save (rcs[] per key). */
static int plan_batch(struct gpy_plan *p, const uint64_t *keys, const uint32_t *blocks, uint32_t n, int write,
		      uint8_t *hit, int32_t *rcs)
{
	struct gio_kv_u128 *k;
	int rc;
	gpy_clear_error();
	if (!p || (n && (!keys || !blocks)))
		return gpy_fail(-EINVAL, "no plan, keys or blocks");
	if ((rc = start_targets(p)) != 0)
		return rc;
	if (!(k = gpy_keys_of(keys, n)))
		return gpy_fail(-ENOMEM, "no memory");
	rc = write ? gio_kv_plan_save(p->plan, k, blocks, n, rcs) : gio_kv_plan_load(p->plan, k, blocks, n, hit);
	free(k);
	if (rc < 0)
		return gpy_lib(rc, write ? "planning the save" : "planning the load");
	p->batch_open = 1;
	p->batch_write = write;
	p->batch_n = n;
	if (p->waited) /* this batch's stream waits (the last batch's ended with its finish and streams) */
		memset(p->waited, 0, p->layers * sizeof(uint64_t));
	p->stats[write ? GPY_PLAN_SAVES : GPY_PLAN_LOADS]++;
	p->stats[GPY_PLAN_REQUESTS] += (uint64_t)rc;
	return rc;
}

int gpy_plan_load(struct gpy_plan *p, const uint64_t *keys, const uint32_t *blocks, uint32_t n, uint8_t *hit)
{
	return plan_batch(p, keys, blocks, n, 0, hit, NULL);
}

int gpy_plan_save(struct gpy_plan *p, const uint64_t *keys, const uint32_t *blocks, uint32_t n, int32_t *rcs)
{
	return plan_batch(p, keys, blocks, n, 1, NULL, rcs);
}

uint32_t gpy_plan_batch_keys(const struct gpy_plan *p)
{
	return p && p->batch_open ? p->batch_n : 0;
}

uint32_t gpy_plan_engine(const struct gpy_plan *p)
{
	return p ? p->engine : 0;
}

int gpy_plan_finish(struct gpy_plan *p, int32_t *rcs, uint16_t *status, uint16_t *layer, uint64_t timeout_ns)
{
	struct gio_kv_io_result *res;
	uint32_t i, n, l;
	int rc;
	gpy_clear_error();
	if (!p)
		return gpy_fail(-EINVAL, "no plan");
	if (!p->batch_open)
		return gpy_fail(-EINVAL, "no batch open: plan one with load() or save() first");
	if (p->sched_queued)
		return refuse_queued(p, "finishing the batch");
	n = p->batch_n;
	if (!(res = calloc(n ? n : 1, sizeof(*res))))
		return gpy_fail(-ENOMEM, "no memory");
	rc = gio_kv_plan_finish(p->plan, res, timeout_ns);
	if (rc < 0)
		gpy_lib(rc, "finishing the batch");
	p->batch_open = 0;
	for (i = 0; i < n; i++) {
		if (rcs)
			rcs[i] = res[i].rc;
		if (status)
			status[i] = res[i].status;
		if (layer)
			layer[i] = res[i].layer;
		p->stats[GPY_PLAN_FAILED] += res[i].rc != 0 && res[i].layer != 0xffff;
	}
	free(res);
	/* A stream wait that timed out let its stream run on without the layer's data. */
	for (l = 0; p->timed_out && l < p->layers; l++)
		if (p->timed_out[l]) {
			p->timed_out[l] = 0;
			p->stats[GPY_PLAN_STREAM_TIMEOUTS]++;
			if (rc == 0)
				rc = gpy_fail(-ETIME, "a stream's wait for layer %u timed out: the stream ran on without its data", l);
		}
	return rc;
}

int gpy_plan_wait_times(const struct gpy_plan *p, uint64_t *out, uint32_t n)
{
	uint32_t l;
	gpy_clear_error();
	if (!p || (n && !out))
		return gpy_fail(-EINVAL, "NULL argument");
	if (!p->waited)
		return gpy_fail(-EOPNOTSUPP, "wait times are the GPU engine's (its stream waits); a CPU-engine plan's "
					     "waits are the host's");
	for (l = 0; l < n && l < p->layers; l++)
		out[l] = *(volatile uint64_t *)&p->waited[l]; /* written by the device */
	return (int)p->layers;
}

int gpy_plan_stats(const struct gpy_plan *p, uint64_t *out, uint32_t n)
{
	gpy_clear_error();
	if (!p || !out || n > GPY_PLAN_STATS)
		return gpy_fail(-EINVAL, "no plan, or more than %u numbers asked", GPY_PLAN_STATS);
	memcpy(out, p->stats, n * sizeof(uint64_t));
	return 0;
}

int gpy_plan_devices(const struct gpy_plan *p, uint64_t *out, uint32_t ndev)
{
	struct gio_kv_plan_stats st;
	uint32_t d;
	int rc;
	gpy_clear_error();
	if (!p || (!out && ndev))
		return gpy_fail(-EINVAL, p ? "no room for the devices' numbers" : "no plan");
	if ((rc = gio_kv_plan_info(p->plan, &st)) != 0)
		return gpy_lib(rc, "the plan's statistics");
	if (!out) /* the count alone: the caller sizes its room from it */
		return (int)st.devices;
	if (ndev < st.devices)
		return gpy_fail(-EINVAL, "room for %u devices, the store has %u", ndev, st.devices);
	for (d = 0; d < st.devices; d++) {
		const struct gio_kv_plan_dev_stats *x = &st.dev[d];
		uint64_t *o = out + (size_t)d * GPY_PLAN_DEV_STATS;
		o[0] = x->path;
		o[1] = x->objects;
		o[2] = x->bytes;
		o[3] = x->staged_objects;
		o[4] = x->staged_bytes;
		o[5] = x->failed;
		o[6] = x->timed_out;
	}
	return (int)st.devices;
}

int gpy_plan_mover(const struct gpy_plan *p, uint64_t *out, uint32_t n)
{
	struct gio_kv_plan_stats st;
	uint64_t v[GPY_PLAN_MOVER_STATS];
	int rc;
	gpy_clear_error();
	if (!p || !out || n > GPY_PLAN_MOVER_STATS)
		return gpy_fail(-EINVAL, "no plan, or more than %u numbers asked", GPY_PLAN_MOVER_STATS);
	if ((rc = gio_kv_plan_info(p->plan, &st)) != 0)
		return gpy_lib(rc, "the plan's statistics");
	v[0] = st.mover_copies;
	v[1] = st.mover_calls;
	v[2] = st.mover_bytes;
	v[3] = st.mover_cpu_ns;
	v[4] = st.mover_cq_marks;
	memcpy(out, v, n * sizeof(uint64_t));
	return 0;
}

int gpy_plan_check_pool(const struct gpy_plan *p, uint32_t layer, const uint64_t *ptrs, uint32_t n)
{
	const struct gio_kv_pool *pool = &p->s->pool;
	const uint32_t layers = pool->extent[GIO_KV_LAYER];
	/* Tensors per layer, and in all. */
	const uint32_t per = pool->base_mode == GIO_KV_BASE_LAYER_PART ? pool->extent[GIO_KV_PART] : 1u;
	const uint32_t all = pool->base_mode == GIO_KV_BASE_ONE ? 1u : layers * per;
	uint32_t i, first = 0;
	if (n != all && n != per)
		return gpy_fail(-EINVAL, "the op was given %u pool tensors: the plan's pool has %u, %u per layer", n, all,
				per);
	if (n != all || pool->base_mode == GIO_KV_BASE_ONE) {
		/* A layer's tensors (the one tensor of a BASE_ONE pool holds every layer). */
		if (layer >= layers)
			return gpy_fail(-EINVAL, "layer %u beyond the pool's %u layers", layer, layers);
		if (pool->base_mode != GIO_KV_BASE_ONE)
			first = layer * per;
	}
	for (i = 0; i < n; i++)
		if (ptrs[i] != (pool->base_mode == GIO_KV_BASE_ONE ? pool->base : pool->bases[first + i]))
			return n == all ? gpy_fail(-EINVAL, "pool tensor %u is not the one the store registered", i)
					: gpy_fail(-EINVAL, "pool tensor %u of layer %u is not the one the store registered", i,
						   layer);
	return 0;
}

int gpy_plan_layer(struct gpy_plan *p, uint32_t layer, int write, void *stream)
{
	int rc;
	gpy_clear_error();
	rc = p->engine == GIO_KV_ENGINE_GPU ? gpy_gpu_layer(p, layer, write, stream)
					    : gio_kv_plan_run_layer(p->plan, layer, write);
	if (rc)
		return gpy_lib(rc, write ? "save_layer" : "load_layer");
	p->stats[GPY_PLAN_LAYERS]++;
	return 0;
}

int gpy_plan_wait(struct gpy_plan *p, uint32_t layer, void *stream, uint64_t timeout_ns)
{
	int rc;
	gpy_clear_error();
	if (!p->batch_open)
		return gpy_fail(-EINVAL, "no batch open");
	if (p->engine == GIO_KV_ENGINE_GPU)
		rc = gpy_gpu_wait(p, layer, stream, timeout_ns);
	else
		rc = gio_kv_plan_wait_layer(p->plan, layer, timeout_ns);
	if (rc == -ETIME && p->engine != GIO_KV_ENGINE_GPU)
		return gpy_fail(rc, "layer %u did not finish within %.3f s", layer, timeout_ns / 1e9);
	return rc ? gpy_lib(rc, "wait_layer") : 0;
}

int gpy_plan_call(struct gpy_plan *p, uint32_t layer, uint32_t what, uint64_t timeout_ns, void *stream)
{
	gpy_clear_error();
	if (!p)
		return gpy_fail(-EINVAL, "NULL plan");
	if (layer >= p->layers)
		return gpy_fail(-EINVAL, "layer %u beyond the pool's %u layers", layer, p->layers);
	switch (what) {
	case GPY_CALL_LOAD:
	case GPY_CALL_SAVE:
		return gpy_plan_layer(p, layer, what == GPY_CALL_SAVE, stream);
	case GPY_CALL_WAIT:
		return gpy_plan_wait(p, layer, stream, timeout_ns);
	default:
		return gpy_fail(-EINVAL, "layer call %u: 0 (load), 1 (save) or 2 (wait)", what);
	}
}
