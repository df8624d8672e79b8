/* Per-layer load and save of a batch of KV chunks (giouring/kv/plan.h): the host half. Plans
 * requests into device-ordered groups (giouring/kv/io.h), runs layers on a thread of the plan for
 * the CPU engine, stages and uploads them for the GPU engine's kernel (giouring/kv/layer.cuh),
 * and ends batches through the store's commit protocol. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/host/path.h>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/run.h>
#include <giouring/kv/staged.h>
#include <giouring/kv/store.h>
#include <giouring/ring/clock.h>

#include "../cuda/cecopy.h"
#include "../cuda/cudart.h"
#include "../cuda/hbm.h"
#include "../internal.h"
#include "index.h"
#include "mover.h"
#include "store_internal.h"

enum { BATCH_NONE = 0, BATCH_LOAD = 1, BATCH_SAVE = 2 };

#define NO_REQUEST UINT32_MAX

/* The arrays engines read, in one image: the CPU engine's in host memory; the GPU engine's
 * staged in pinned memory and uploaded to one GPU allocation when a batch is planned. */
struct image {
	struct gio_kv_io_dev *devs;
	struct gio_qp **qps;
	struct gio_kv_io_req *reqs;
	struct gio_kv_io_group *groups;
	uint32_t *count; /* per layer */
	uint32_t *done;  /* per layer */
	/* GPU engine with staged devices: made once, never re-uploaded (the GPU owns them). */
	struct gio_kv_io_stage *stages; /* per device */
	struct gio_stage *rings;        /* the staged devices' rings, device after device */
	uint32_t *words;                /* their slot words */
	struct gio_kv_pool *pool;
	struct gio_kv_runs *runs;
	uint64_t *bases; /* the pool's table of bases, where it has one (pool->bases points here) */
};

struct gio_kv_plan {
	struct gio_kv_store *store;
	struct gio__kv_shape shape;
	struct gio_kv_plan_params p; /* devs: see img */
	uint32_t nqps;               /* queue pairs of all devices */
	uint32_t stage_rings;        /* GPU engine: staging rings of all staged devices (0: none) */
	uint64_t stage_words;        /* GPU engine: their slots */
	uint32_t cmds_max;           /* most commands per object of a device: requests per chunk */
	size_t img_bytes, upload_bytes;
	struct image img;            /* host (CPU engine) or staging (GPU engine) */
	struct image dimg;           /* GPU engine: the same in GPU memory */
	struct gio_kv_io_result *results; /* host (CPU) or pinned, written by the GPU */
	uint32_t *done_host;         /* GPU engine: the host's copy of the layer words (pinned) */
	void *host_mem;              /* CPU engine: the image and results */
	void *pinned;                /* GPU engine: the staging, results and done_host */
	struct gio__hbm hbm;         /* GPU engine */
	int abandoned;               /* a batch never finished: the GPU may still write pinned memory */
	struct gio_kv_pool pool;     /* where a device is staged: the pool the engine copies to and from */
	uint64_t *bases;             /* the plan's own copy of the pool's table of bases (NULL: none) */
	uint64_t nbases;
	struct gio_kv_runs runs;
	int has_pool;
	struct gio_kv_plan_stats stats; /* counted at finish */
	const struct gio_kv_io_stage *user_stage[GIO_KV_STORE_MAX_DEVICES]; /* GPU engine: the caller's */
	/* GIO_KV_MOVER_COPY_ENGINE: the mover thread, its copier, the groups' request words (pinned,
	 * after done_host) and their marks (GPU memory, after the image), gcap per layer. */
	struct gio__kv_mover *mover;
	struct gio__ce_copier ce;
	struct gio_kv_move_req *move_req;
	uint32_t *move_done;
	uint32_t gcap;
	uint32_t *cq_mirror; /* GIO_KV_COMPLETIONS_MIRROR: a word per queue pair, GPU memory after move_done */

	/* The open batch. */
	int batch;
	uint32_t n, nreq, ngroups, epoch;
	uint32_t objects[GIO_KV_STORE_MAX_DEVICES]; /* per device: the objects a layer moves */
	uint8_t *ran;                /* per layer: run in this batch */
	struct gio_kv_u128 *keys;    /* n */
	struct gio__kv_loc *locs;    /* load: n */
	struct gio__kv_alloc *allocs; /* save: n */
	uint8_t *hit, *ok;           /* n */
	int32_t *pre_rc;             /* n: the outcome of planning each key */
	uint32_t *req_of;            /* n: its first request (its object's first command), or NO_REQUEST */
	uint32_t *key_of;            /* max_requests x cmds_max: the key of each request */

	/* The CPU engine's thread and its queue of layers. */
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint32_t *jobs; /* layers, a ring of `layers` entries */
	uint32_t jhead, jtail;
	uint64_t *run_ns;    /* per layer: how long the thread took to run it (gio_kv_plan_layer_time()) */
	uint32_t *run_epoch; /* per layer: the batch (epoch) run_ns is of; under mu */
	int stop, have_thread;
};

static size_t align16(size_t x)
{
	return (x + 15) & ~(size_t)15;
}

/* Requests a batch may hold: a command per object of each chunk. */
static size_t req_cap(const struct gio_kv_plan *pl)
{
	return (size_t)pl->p.max_requests * pl->cmds_max;
}

/* Commands per object of device d. */
static uint32_t cmds_of(const struct gio_kv_plan *pl, uint32_t d)
{
	return pl->img.devs[d].cmds ? pl->img.devs[d].cmds : 1u;
}

/* Lays the image out at base (NULL: just sizes it); returns its bytes. The part up to `count` is
 * what a batch uploads. */
static size_t image_layout(const struct gio_kv_plan *pl, char *base, struct image *im, size_t *upload)
{
	const uint32_t L = pl->shape.layers;
	const size_t cap = req_cap(pl);
	const size_t groups = cap + pl->shape.devices; /* each device's last group may be short */
	size_t o = 0;
	im->devs = (struct gio_kv_io_dev *)(base ? base + o : NULL);
	o = align16(o + sizeof(struct gio_kv_io_dev) * pl->shape.devices);
	im->qps = (struct gio_qp **)(base ? base + o : NULL);
	o = align16(o + sizeof(struct gio_qp *) * pl->nqps);
	im->reqs = (struct gio_kv_io_req *)(base ? base + o : NULL);
	o = align16(o + sizeof(struct gio_kv_io_req) * cap);
	im->groups = (struct gio_kv_io_group *)(base ? base + o : NULL);
	o = align16(o + sizeof(struct gio_kv_io_group) * groups);
	if (upload)
		*upload = o;
	im->count = (uint32_t *)(base ? base + o : NULL);
	o = align16(o + sizeof(uint32_t) * L);
	im->done = (uint32_t *)(base ? base + o : NULL);
	o = align16(o + sizeof(uint32_t) * L);
	if (pl->stage_rings) {
		im->stages = (struct gio_kv_io_stage *)(base ? base + o : NULL);
		o = align16(o + sizeof(struct gio_kv_io_stage) * pl->shape.devices);
		im->rings = (struct gio_stage *)(base ? base + o : NULL);
		o = align16(o + sizeof(struct gio_stage) * pl->stage_rings);
		im->words = (uint32_t *)(base ? base + o : NULL);
		o = align16(o + sizeof(uint32_t) * pl->stage_words);
		im->pool = (struct gio_kv_pool *)(base ? base + o : NULL);
		o = align16(o + sizeof(struct gio_kv_pool));
		im->runs = (struct gio_kv_runs *)(base ? base + o : NULL);
		o = align16(o + sizeof(struct gio_kv_runs));
		im->bases = (uint64_t *)(base ? base + o : NULL);
		o = align16(o + sizeof(uint64_t) * pl->nbases);
	}
	return o;
}

/* The GPU engine's staging: its own copy of each staged device's rings, in GPU memory, every slot
 * FREE (the allocation is zeroed: lap 0, FREE), GPU scope (only the plan's warps reserve and
 * release them), over the caller's slots, table and area; and the pool the warps copy to and from.
 * Built in the pinned image, uploaded once (bounded). */
static int stage_upload(struct gio_kv_plan *pl, const struct gio_kv_io_dev *devs)
{
	const struct gio__cudart *rt = gio__cudart();
	uint32_t d, q, k = 0;
	uint64_t w = 0;
	int e;
	for (d = 0; d < pl->shape.devices; d++) {
		const struct gio_kv_io_stage *sg = devs[d].stage;
		if (!sg)
			continue;
		pl->user_stage[d] = sg;
		pl->img.stages[d] = *sg;
		pl->img.stages[d].rings = pl->dimg.rings + k;
		for (q = 0; q < devs[d].nqps; q++, k++) {
			struct gio_stage *r = &pl->img.rings[k];
			uint32_t i;
			*r = sg->rings[q];
			r->reserved = 0;
			r->scope = GIO_SCOPE_GPU;
			r->slots = pl->dimg.words + w;
			memset(&r->last_timeout, 0, sizeof(r->last_timeout));
			/* A slot LOST by an earlier plan (or the CPU engine) stays out of use here. */
			for (i = 0; i < r->nslots; i++)
				pl->img.words[w + i] =
					gio_stage_state(sg->rings[q].slots[i]) == GIO_STAGE_LOST ? GIO_STAGE_LOST : GIO_STAGE_FREE;
			w += r->nslots;
		}
	}
	*pl->img.pool = pl->pool;
	*pl->img.runs = pl->runs;
	if (pl->nbases) { /* the warps read the table in GPU memory, not the caller's */
		memcpy(pl->img.bases, pl->bases, sizeof(uint64_t) * pl->nbases);
		pl->img.pool->bases = pl->dimg.bases;
	}
	if (!rt || !rt->memcpy_async)
		return gio__fail(-ENODEV, "giouring: kv plan: no CUDA runtime with cudaMemcpyAsync");
	e = rt->memcpy_async(pl->dimg.stages, pl->img.stages, (size_t)((char *)(pl->img.words + w) - (char *)pl->img.stages),
			     GIO__CUDA_MEMCPY_DEFAULT, pl->hbm.stream);
	if (!e)
		e = rt->memcpy_async(pl->dimg.pool, pl->img.pool,
				     (size_t)((char *)(pl->img.bases + pl->nbases) - (char *)pl->img.pool),
				     GIO__CUDA_MEMCPY_DEFAULT, pl->hbm.stream);
	if (!e)
		e = gio__cuda_stream_wait(rt, pl->hbm.stream, 10000000000ull);
	if (e == GIO__CUDA_ERR_NOT_READY)
		return gio__fail(-ETIME, "giouring: kv plan: uploading the staging rings did not finish within 10 s");
	if (e)
		return gio__cuda_fail(e, "kv plan: uploading the staging rings");
	return 0;
}

/* GIO_KV_COMPLETIONS_MIRROR: the mover watches the CQs of the staged devices' queue pairs, each
 * one's changes mirrored into its word of cq_mirror (a word per queue pair of the plan, devices in
 * order). The GPU engine's queue pairs are in GPU memory: their structs are read back once (they
 * say where each CQ is), and a CQ the host cannot read is refused. */
static int mirror_watch(struct gio_kv_plan *pl, const struct gio_kv_io_dev *devs)
{
	const struct gio__cudart *rt = gio__cudart();
	const void **entries = calloc(pl->nqps, sizeof(*entries));
	uint32_t *depth = calloc(pl->nqps, sizeof(*depth));
	uint32_t **mirror = calloc(pl->nqps, sizeof(*mirror));
	struct gio_qp *back = NULL;
	uint32_t d, q, k = 0, n = 0;
	int rc = 0, e = 0;
	if (!entries || !depth || !mirror) {
		rc = gio__fail(-ENOMEM, "giouring: kv plan: no memory for the completion mirror");
		goto out;
	}
	rc = gio__pinned_alloc(sizeof(struct gio_qp) * pl->nqps, "kv plan", (void **)&back);
	if (rc)
		goto out;
	for (d = 0; d < pl->shape.devices; d++)
		for (q = 0; q < devs[d].nqps; q++, k++)
			if (devs[d].stage && !e)
				e = rt->memcpy_async(&back[k], devs[d].qps[q], sizeof(struct gio_qp), GIO__CUDA_MEMCPY_DEFAULT,
						     pl->hbm.stream);
	if (!e)
		e = gio__cuda_stream_wait(rt, pl->hbm.stream, 10000000000ull);
	if (e == GIO__CUDA_ERR_NOT_READY) {
		rc = gio__fail(-ETIME, "giouring: kv plan: reading the queue pairs back for the completion mirror did not "
			       "finish within 10 s");
		goto out;
	}
	if (e) {
		rc = gio__cuda_fail(e, "kv plan: reading the queue pairs back for the completion mirror");
		goto out;
	}
	for (d = 0, k = 0; d < pl->shape.devices; d++)
		for (q = 0; q < devs[d].nqps; q++, k++) {
			if (!devs[d].stage)
				continue;
			/* Pinned or registered host memory: what the host may read. */
			if (!back[k].cq || gio__cuda_memory_type(rt, back[k].cq) != GIO__CUDA_MEMORY_TYPE_HOST) {
				rc = gio__fail(-EINVAL, "giouring: kv plan: mirrored completions: device %u queue pair %u has its CQ "
					       "at %p, which the host cannot read (make the queue pairs with GIO_CTX_QP_PINNED)",
					       d, q, (void *)back[k].cq);
				goto out;
			}
			entries[n] = back[k].cq;
			depth[n] = back[k].cq_depth;
			mirror[n++] = pl->cq_mirror + k;
		}
	rc = gio__kv_mover_watch(pl->mover, n, entries, depth, mirror);
out:
	if (back)
		gio__pinned_put(back);
	free(entries);
	free(depth);
	free(mirror);
	return rc;
}

/* The devices as the engine reads them: each one's queue pairs in the image's qps (the GPU's
 * copy where the GPU reads them). */
static void image_devs(struct gio_kv_plan *pl, const struct gio_kv_io_dev *devs)
{
	struct gio_qp **target = pl->p.engine == GIO_KV_ENGINE_GPU ? pl->dimg.qps : pl->img.qps;
	uint32_t d, k = 0;
	for (d = 0; d < pl->shape.devices; d++) {
		pl->img.devs[d] = devs[d];
		memcpy(pl->img.qps + k, devs[d].qps, sizeof(struct gio_qp *) * devs[d].nqps);
		pl->img.devs[d].qps = target + k;
		if (devs[d].stage && pl->stage_rings) /* the GPU engine: its own rings (stage_upload()) */
			pl->img.devs[d].stage = pl->dimg.stages + d;
		k += devs[d].nqps;
	}
}

/* A staged device (gio_kv_io_dev::stage): the CPU engine, the pool to copy through, and rings
 * that hold a whole group's commands, each in one slot. */
static int check_stage(const struct gio_kv_plan_params *p, const struct gio__kv_shape *sh, uint32_t d)
{
	const struct gio_kv_io_dev *v = &p->devs[d];
	const uint64_t bytes = sh->object_bytes / (v->cmds > 1 ? v->cmds : 1);
	struct gio_kv_runs runs;
	uint32_t q;
	if (!v->stage)
		return 0;
	if (!p->pool)
		return gio__fail(-EINVAL, "giouring: kv plan: device %u is staged: the plan needs the pool "
				 "(gio_kv_plan_params::pool) to copy objects through the slots", d);
	if (gio_kv_pool_runs(p->pool, &runs) != 0 || runs.object_bytes != sh->object_bytes)
		return gio__fail(-EINVAL, "giouring: kv plan: device %u is staged: the pool is not valid or its objects "
				 "are not the store's %llu bytes", d, (unsigned long long)sh->object_bytes);
	if (p->pool->extent[GIO_KV_LAYER] < sh->layers || p->pool->extent[GIO_KV_BLOCK] < p->blocks)
		return gio__fail(-EINVAL, "giouring: kv plan: the pool has %u layers and %u blocks, the plan %u and %u",
				 p->pool->extent[GIO_KV_LAYER], p->pool->extent[GIO_KV_BLOCK], sh->layers, p->blocks);
	if (!v->stage->rings || !v->stage->area)
		return gio__fail(-EINVAL, "giouring: kv plan: device %u: staging without %s", d,
				 !v->stage->rings ? "rings" : "an area");
	if (!v->stage->table && v->psdt != GIO_PSDT_SGL_MPTR)
		return gio__fail(-EINVAL, "giouring: kv plan: device %u takes PRPs: its staging needs a staging table "
				 "(gio_kv_stage_table_entry())", d);
	for (q = 0; q < v->nqps; q++) {
		const struct gio_stage *st = &v->stage->rings[q];
		if (st->nslots < GIO_KV_IO_GROUP_MAX || st->slot_bytes < bytes)
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: staging ring %u has %u slots of %llu bytes; a "
					 "group needs %u slots of %llu", d, q, st->nslots, (unsigned long long)st->slot_bytes,
					 GIO_KV_IO_GROUP_MAX, (unsigned long long)bytes);
	}
	return 0;
}

static int check_params(struct gio_kv_store *store, const struct gio_kv_plan_params *p, const struct gio__kv_shape *sh)
{
	uint32_t d, staged = 0;
	if (p->engine > GIO_KV_ENGINE_GPU)
		return gio__fail(-EINVAL, "giouring: kv plan: engine %u unknown (GIO_KV_ENGINE_CPU or _GPU)", p->engine);
	if (p->max_requests == 0 || p->blocks == 0)
		return gio__fail(-EINVAL, "giouring: kv plan: max_requests %u and blocks %u must be at least 1",
				 p->max_requests, p->blocks);
	if (p->io_warps > 32)
		return gio__fail(-EINVAL, "giouring: kv plan: io_warps %u above 32", p->io_warps);
	if (p->poll_ns > 1000000u)
		return gio__fail(-EINVAL, "giouring: kv plan: poll_ns above 1 ms (the GPU's __nanosleep sleeps at most about 1 ms)");
	if (p->move_depth > 16u)
		return gio__fail(-EINVAL, "giouring: kv plan: move_depth %u: 1 to 16 loads in flight a lane (0: the default, %u)",
				 p->move_depth, GIO_KV_MOVE_DEPTH_DEFAULT);
	if (p->scope != GIO_SCOPE_GPU && p->scope != GIO_SCOPE_SYS)
		return gio__fail(-EINVAL, "giouring: kv plan: scope %u unknown", p->scope);
	if (p->mover > GIO_KV_MOVER_COPY_ENGINE)
		return gio__fail(-EINVAL, "giouring: kv plan: mover %u unknown (GIO_KV_MOVER_SM or _COPY_ENGINE)", p->mover);
	if (p->mover == GIO_KV_MOVER_COPY_ENGINE && p->engine != GIO_KV_ENGINE_GPU)
		return gio__fail(-EINVAL, "giouring: kv plan: the copy-engine mover is for the GPU engine (the CPU engine "
				 "moves with its own thread)");
	if (p->completions > GIO_KV_COMPLETIONS_MIRROR)
		return gio__fail(-EINVAL, "giouring: kv plan: completions %u unknown (GIO_KV_COMPLETIONS_POLL or _MIRROR)",
				 p->completions);
	if (p->completions == GIO_KV_COMPLETIONS_MIRROR && p->mover != GIO_KV_MOVER_COPY_ENGINE)
		return gio__fail(-EINVAL, "giouring: kv plan: mirrored completions need the copy-engine mover (its thread "
				 "watches the CQs)");
	if (!p->devs)
		return gio__fail(-EINVAL, "giouring: kv plan: devs is NULL");
	if (sh->layers > 0xffffu)
		return gio__fail(-EINVAL, "giouring: kv plan: %u layers (results name at most 65535)", sh->layers);
	for (d = 0; d < sh->devices; d++) {
		const struct gio_kv_io_dev *v = &p->devs[d];
		int rc;
		if (v->nqps == 0 || !v->qps || (!v->table && !v->stage))
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: %s", d,
					 v->nqps && v->qps ? "no P2P table (and no staging)" : "no queue pair");
		if (v->lba_shift >= 32 || (1u << v->lba_shift) != sh->lba_bytes[d])
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: lba_shift %u, the store's blocks are %u bytes",
					 d, v->lba_shift, sh->lba_bytes[d]);
		if (v->cmds > GIO_KV_IO_GROUP_MAX)
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: %u commands per object, more than a group's %u "
					 "(an object's commands go in one group)", d, v->cmds, GIO_KV_IO_GROUP_MAX);
		if (v->cmds > 1 && sh->object_bytes % v->cmds)
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: %u commands per object do not divide the "
					 "%llu-byte object into equal runs", d, v->cmds, (unsigned long long)sh->object_bytes);
		if ((sh->object_bytes / (v->cmds > 1 ? v->cmds : 1)) % sh->lba_bytes[d])
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: its %u-byte blocks do not divide the %llu-byte "
					 "%s (each command needs whole blocks)", d, sh->lba_bytes[d],
					 (unsigned long long)(sh->object_bytes / (v->cmds > 1 ? v->cmds : 1)),
					 v->cmds > 1 ? "run of an object" : "object");
		if (v->psdt != GIO_PSDT_SGL_MPTR && v->psdt != GIO_PSDT_PRP)
			return gio__fail(-EINVAL, "giouring: kv plan: device %u: psdt %u (GIO_PSDT_SGL_MPTR or GIO_PSDT_PRP)",
					 d, v->psdt);
		rc = check_stage(p, sh, d);
		if (rc)
			return rc;
		staged += v->stage != NULL;
	}
	if (p->mover == GIO_KV_MOVER_COPY_ENGINE && !staged)
		return gio__fail(-EINVAL, "giouring: kv plan: the copy-engine mover moves staged devices' objects, and no "
				 "device of the plan is staged");
	(void)store;
	return 0;
}

/* The CPU engine's thread: runs the layers queued by gio_kv_plan_run_layer(), in order. */
static void *cpu_engine(void *arg)
{
	struct gio_kv_plan *pl = arg;
	pthread_mutex_lock(&pl->mu);
	for (;;) {
		struct gio_kv_io_plan v;
		uint64_t t0, t1;
		uint32_t layer, epoch;
		while (pl->jhead == pl->jtail && !pl->stop)
			pthread_cond_wait(&pl->cv, &pl->mu);
		if (pl->jhead == pl->jtail)
			break;
		layer = pl->jobs[pl->jhead % pl->shape.layers];
		(void)gio_kv_plan_view(pl, &v);
		epoch = pl->epoch; /* the batch cannot change while one of its layers runs */
		pthread_mutex_unlock(&pl->mu);
		t0 = gio_now_ns();
		(void)gio_kv_io_run_layer(&v, layer); /* results and the layer word say how it went */
		t1 = gio_now_ns();
		pthread_mutex_lock(&pl->mu);
		pl->run_ns[layer] = t1 - t0;
		pl->run_epoch[layer] = epoch;
		pl->jhead++;
		pthread_cond_broadcast(&pl->cv);
	}
	pthread_mutex_unlock(&pl->mu);
	return NULL;
}

static void plan_free(struct gio_kv_plan *pl)
{
	if (pl->have_thread) {
		pthread_mutex_lock(&pl->mu);
		pl->stop = 1;
		pthread_cond_broadcast(&pl->cv);
		pthread_mutex_unlock(&pl->mu);
		pthread_join(pl->thr, NULL);
	}
	pthread_mutex_destroy(&pl->mu);
	pthread_cond_destroy(&pl->cv);
	gio__kv_mover_destroy(pl->mover); /* before the GPU memory its marks go to */
	free(pl->host_mem);
	/* A batch the GPU may still write keeps its pinned memory out of the cache for good. */
	if (pl->pinned && !pl->abandoned)
		(void)gio__pinned_put(pl->pinned);
	gio__hbm_free(&pl->hbm);
	free(pl->ran);
	free(pl->keys);
	free(pl->locs);
	free(pl->allocs);
	free(pl->hit);
	free(pl->ok);
	free(pl->pre_rc);
	free(pl->req_of);
	free(pl->key_of);
	free(pl->jobs);
	free(pl->run_ns);
	free(pl->run_epoch);
	free(pl->bases);
	free(pl);
}

int gio_kv_plan_create(struct gio_kv_store *store, const struct gio_kv_plan_params *p, struct gio_kv_plan **out)
{
	struct gio_kv_plan *pl;
	size_t res_bytes, done_off;
	uint32_t d, cap;
	int rc;
	gio__clear_error();
	if (!store || !p || !out)
		return gio__fail(-EINVAL, "giouring: kv plan: NULL argument");
	*out = NULL;
	pl = calloc(1, sizeof(*pl));
	if (!pl)
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory");
	pthread_mutex_init(&pl->mu, NULL);
	pthread_cond_init(&pl->cv, NULL);
	pl->store = store;
	gio__kv_store_shape(store, &pl->shape);
	rc = check_params(store, p, &pl->shape);
	if (rc) {
		plan_free(pl);
		return rc;
	}
	pl->p = *p;
	pl->p.devs = NULL;
	pl->p.pool = NULL;
	if (p->pool) { /* checked where a device is staged; kept only where it is valid */
		pl->pool = *p->pool;
		pl->has_pool = gio_kv_pool_runs(&pl->pool, &pl->runs) == 0;
		/* The plan's own table of bases: the caller's may go once the plan exists, and the GPU
		 * engine's warps need one in GPU memory (stage_upload()). */
		pl->nbases = pl->has_pool ? gio__kv_nbases(&pl->pool) : 0;
		if (pl->nbases) {
			if (!(pl->bases = malloc(sizeof(uint64_t) * pl->nbases))) {
				plan_free(pl);
				return gio__fail(-ENOMEM, "giouring: kv plan: no memory for the pool's table of bases");
			}
			memcpy(pl->bases, p->pool->bases, sizeof(uint64_t) * pl->nbases);
			pl->pool.bases = pl->bases;
		} else if (!pl->has_pool) {
			pl->pool.bases = NULL; /* never read: no copy kept of what may go */
		}
	}
	if (!pl->p.io_ctas)
		pl->p.io_ctas = 8;
	if (!pl->p.io_warps)
		pl->p.io_warps = 8;
	if (!pl->p.timeout_ns)
		pl->p.timeout_ns = pl->shape.timeout_ns;
	pl->cmds_max = 1;
	for (d = 0; d < pl->shape.devices; d++) {
		uint32_t q;
		pl->nqps += p->devs[d].nqps;
		if (p->devs[d].cmds > pl->cmds_max)
			pl->cmds_max = p->devs[d].cmds;
		for (q = 0; p->engine == GIO_KV_ENGINE_GPU && p->devs[d].stage && q < p->devs[d].nqps; q++) {
			pl->stage_rings++;
			pl->stage_words += p->devs[d].stage->rings[q].nslots;
		}
	}
	cap = p->max_requests;
	if ((uint64_t)cap * pl->cmds_max > UINT32_MAX / 2) {
		plan_free(pl);
		return gio__fail(-EINVAL, "giouring: kv plan: %u requests of %u commands each are too many", cap, pl->cmds_max);
	}
	pl->img_bytes = image_layout(pl, NULL, &pl->img, &pl->upload_bytes);
	res_bytes = align16(sizeof(struct gio_kv_io_result) * req_cap(pl));
	done_off = pl->img_bytes + res_bytes;
	pl->ran = calloc(pl->shape.layers, 1);
	pl->keys = calloc(cap, sizeof(*pl->keys));
	pl->locs = calloc(cap, sizeof(*pl->locs));
	pl->allocs = calloc(cap, sizeof(*pl->allocs));
	pl->hit = calloc(cap, 1);
	pl->ok = calloc(cap, 1);
	pl->pre_rc = calloc(cap, sizeof(*pl->pre_rc));
	pl->req_of = calloc(cap, sizeof(*pl->req_of));
	pl->key_of = calloc(req_cap(pl), sizeof(*pl->key_of));
	pl->jobs = calloc(pl->shape.layers, sizeof(*pl->jobs));
	pl->run_ns = calloc(pl->shape.layers, sizeof(*pl->run_ns));
	pl->run_epoch = calloc(pl->shape.layers, sizeof(*pl->run_epoch));
	if (!pl->ran || !pl->keys || !pl->locs || !pl->allocs || !pl->hit || !pl->ok || !pl->pre_rc || !pl->req_of ||
	    !pl->key_of || !pl->jobs || !pl->run_ns || !pl->run_epoch) {
		plan_free(pl);
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory for %u requests", cap);
	}
	if (p->engine == GIO_KV_ENGINE_CPU) {
		pl->host_mem = aligned_alloc(16, done_off);
		if (!pl->host_mem) {
			plan_free(pl);
			return gio__fail(-ENOMEM, "giouring: kv plan: no memory for %u requests", cap);
		}
		memset(pl->host_mem, 0, done_off);
		image_layout(pl, pl->host_mem, &pl->img, NULL);
		pl->results = (struct gio_kv_io_result *)((char *)pl->host_mem + pl->img_bytes);
		image_devs(pl, p->devs);
		if (pthread_create(&pl->thr, NULL, cpu_engine, pl)) {
			plan_free(pl);
			return gio__fail(-EAGAIN, "giouring: kv plan: cannot start the CPU engine's thread");
		}
		pl->have_thread = 1;
	} else {
		/* Pinned: the staging image, the results the GPU writes, the host's layer words, and
		 * with the copy-engine mover the groups' requests. GPU memory: the image, and the
		 * groups' marks. */
		const size_t req_off = done_off + align16(sizeof(uint32_t) * pl->shape.layers);
		size_t moves = 0;
		if (p->mover == GIO_KV_MOVER_COPY_ENGINE) {
			pl->gcap = (uint32_t)(req_cap(pl) + pl->shape.devices); /* image_layout()'s groups */
			moves = (size_t)pl->shape.layers * pl->gcap;
		}
		const size_t mirrors = p->completions == GIO_KV_COMPLETIONS_MIRROR ? pl->nqps : 0;
		rc = gio__pinned_alloc(req_off + sizeof(struct gio_kv_move_req) * moves, "kv plan", &pl->pinned);
		if (!rc)
			rc = gio__hbm_alloc(&pl->hbm, pl->img_bytes + sizeof(uint32_t) * (moves + mirrors), "kv plan");
		if (!rc && moves) {
			pl->move_req = (struct gio_kv_move_req *)((char *)pl->pinned + req_off);
			pl->move_done = (uint32_t *)((char *)pl->hbm.base + pl->img_bytes);
			pl->cq_mirror = mirrors ? pl->move_done + moves : NULL;
			/* The plan's own stream: its memory is freed in stream order after the last mark. */
			rc = gio__ce_copier_init(&pl->ce, pl->hbm.stream, "kv plan");
			if (!rc)
				rc = gio__kv_mover_create(&gio__ce_copier_ops, &pl->ce, pl->shape.layers, pl->gcap, pl->move_req,
							  pl->move_done, 1, &pl->mover);
			if (!rc && pl->cq_mirror)
				rc = mirror_watch(pl, p->devs);
		}
		if (rc) {
			plan_free(pl);
			return rc;
		}
		image_layout(pl, pl->pinned, &pl->img, NULL);
		image_layout(pl, pl->hbm.base, &pl->dimg, NULL);
		pl->results = (struct gio_kv_io_result *)((char *)pl->pinned + pl->img_bytes);
		pl->done_host = (uint32_t *)((char *)pl->pinned + done_off);
		image_devs(pl, p->devs);
		if (pl->stage_rings && (rc = stage_upload(pl, p->devs)) != 0) {
			plan_free(pl);
			return rc;
		}
	}
	*out = pl;
	return 0;
}

static int check_batch(struct gio_kv_plan *pl, const struct gio_kv_u128 *keys, const uint32_t *blocks, uint32_t n,
		       const char *what)
{
	uint32_t i;
	if (!pl)
		return gio__fail(-EINVAL, "giouring: kv plan: %s: NULL plan", what);
	if (pl->batch != BATCH_NONE)
		return gio__fail(-EINVAL, "giouring: kv plan: %s: a batch is open (gio_kv_plan_finish() first)", what);
	if (n > pl->p.max_requests)
		return gio__fail(-EINVAL, "giouring: kv plan: %s: %u requests, the plan holds %u", what, n, pl->p.max_requests);
	if (n && (!keys || !blocks))
		return gio__fail(-EINVAL, "giouring: kv plan: %s: NULL keys or blocks", what);
	for (i = 0; i < n; i++)
		if (blocks[i] >= pl->p.blocks)
			return gio__fail(-EINVAL, "giouring: kv plan: %s: request %u: block %u beyond the pool's %u", what, i,
					 blocks[i], pl->p.blocks);
	return 0;
}

/* Orders the batch's requests (a chunk's object is one, or one per run on a device that takes
 * a command per run) into groups: a device's requests in runs of at most 32, the
 * devices' runs interleaved, so that consecutive groups (consecutive warps) go to different
 * devices and a layer's commands spread over all of them from the start. A device with fewer
 * requests than 32 per queue pair gets shorter runs, one per queue pair, so that its commands
 * still spread over every queue pair (a software target serves a queue with one warp: on the
 * H200, 64 requests of 512 KiB in two groups of 32 read 3.9 GB/s from one modelled 7.25 GB/s
 * drive). A chunk's commands stay together, in one group or across two neighbours. */
static void build_groups(struct gio_kv_plan *pl, const uint32_t *blocks, const uint32_t *dev_of, const uint64_t *slba_of)
{
	uint32_t next[GIO_KV_STORE_MAX_DEVICES] = {0}; /* the next key of each device, by scan position */
	uint32_t left[GIO_KV_STORE_MAX_DEVICES], run[GIO_KV_STORE_MAX_DEVICES];
	uint32_t ord[GIO_KV_STORE_MAX_DEVICES] = {0}; /* each device's groups so far: its next queue pair */
	uint32_t i, d, c, r = 0, g = 0, pending = 0;
	memset(pl->objects, 0, sizeof(pl->objects));
	for (i = 0; i < pl->n; i++)
		if (pl->req_of[i] != NO_REQUEST)
			pl->objects[dev_of[i]]++;
	for (d = 0; d < pl->shape.devices; d++) {
		const uint32_t q = pl->img.devs[d].nqps, cmds = cmds_of(pl, d);
		left[d] = pl->objects[d] * cmds;
		pending += left[d];
		run[d] = (left[d] + q - 1) / q;
		run[d] = run[d] < 1 ? 1 : run[d] > GIO_KV_IO_GROUP_MAX ? GIO_KV_IO_GROUP_MAX : run[d];
		/* Whole objects a group (cmds <= GIO_KV_IO_GROUP_MAX, checked at creation): an object's
		 * commands are then consecutive requests, which its result reads (requests_result()). An
		 * object split over two of its device's groups had other devices' groups numbered in
		 * between. */
		run[d] = run[d] < cmds ? cmds : run[d] / cmds * cmds;
	}
	while (pending) {
		for (d = 0; d < pl->shape.devices; d++) {
			const uint32_t cmds = cmds_of(pl, d);
			uint32_t k = 0;
			if (!left[d])
				continue;
			pl->img.groups[g].first = r;
			pl->img.groups[g].dev = (uint16_t)d;
			pl->img.groups[g].qp = ord[d]++ % pl->img.devs[d].nqps;
			/* Whole objects (run[d] is a multiple of cmds): key i's commands are requests
			 * req_of[i] .. req_of[i] + cmds - 1. */
			for (i = next[d]; i < pl->n && k < run[d]; i++) {
				if (pl->req_of[i] == NO_REQUEST || dev_of[i] != d)
					continue;
				pl->req_of[i] = r;
				for (c = 0; c < cmds; c++, r++, k++) {
					pl->key_of[r] = i;
					pl->img.reqs[r].slba = slba_of[i];
					pl->img.reqs[r].block = blocks[i];
					pl->img.reqs[r].dev = (uint16_t)d;
					pl->img.reqs[r].part = (uint16_t)c;
				}
			}
			next[d] = i;
			left[d] -= k;
			pending -= k;
			pl->img.groups[g].count = (uint16_t)k;
			g++;
		}
	}
	pl->nreq = r;
	pl->ngroups = g;
}

/* Starts a batch: results cleared, a new epoch, nothing run yet. */
static void open_batch(struct gio_kv_plan *pl, int kind, uint32_t n)
{
	pl->batch = kind;
	pl->n = n;
	memset(pl->ran, 0, pl->shape.layers);
	memset(pl->results, 0, sizeof(*pl->results) * ((size_t)(n ? n : 1) * pl->cmds_max));
	if (++pl->epoch == 0)
		pl->epoch = 1;
	if (pl->p.engine == GIO_KV_ENGINE_CPU)
		memset(pl->img.count, 0, sizeof(uint32_t) * pl->shape.layers);
}

/* Where request-to-be i is: device and first LBA, for build_groups(). */
struct where {
	uint32_t *dev;
	uint64_t *slba;
};

static int where_alloc(struct where *w, uint32_t n)
{
	w->dev = malloc(sizeof(*w->dev) * (n ? n : 1));
	w->slba = malloc(sizeof(*w->slba) * (n ? n : 1));
	if (!w->dev || !w->slba) {
		free(w->dev);
		free(w->slba);
		return gio__fail(-ENOMEM, "giouring: kv plan: no memory for %u requests", n);
	}
	return 0;
}

static void where_free(struct where *w)
{
	free(w->dev);
	free(w->slba);
}

/* The GPU engine's upload of a batch: the image up to the counts, and the counts zeroed, on the
 * plan's own stream, waited for (bounded). At plan time, not at the first layer on the caller's
 * stream: a batch's layers may run on several streams, and a layer launched on another stream
 * than the first would not be ordered after an upload enqueued there. No kernel of the plan runs
 * now (the last batch finished), and the stream is non-blocking: no wait behind other kernels. */
static int upload(struct gio_kv_plan *pl)
{
	const struct gio__cudart *rt = gio__cudart();
	int e;
	if (!rt || !rt->memcpy_async || !rt->memset_async)
		return gio__fail(-ENODEV, "giouring: kv plan: no CUDA runtime with cudaMemcpyAsync");
	e = rt->memcpy_async(pl->dimg.devs, pl->img.devs, pl->upload_bytes, GIO__CUDA_MEMCPY_DEFAULT, pl->hbm.stream);
	if (!e)
		e = rt->memset_async(pl->dimg.count, 0, sizeof(uint32_t) * pl->shape.layers, pl->hbm.stream);
	if (!e)
		e = gio__cuda_stream_wait(rt, pl->hbm.stream, pl->p.timeout_ns);
	if (e == GIO__CUDA_ERR_NOT_READY)
		return gio__fail(-ETIME, "giouring: kv plan: uploading the batch's %u requests did not finish in time", pl->nreq);
	if (e)
		return gio__cuda_fail(e, "kv plan: uploading the batch's %u requests", pl->nreq);
	return 0;
}

/* Ends a batch that cannot run: a load's pins dropped, a save's slots given back. */
static void drop_batch(struct gio_kv_plan *pl)
{
	uint32_t i;
	memset(pl->ok, 0, pl->n ? pl->n : 1);
	if (pl->batch == BATCH_LOAD)
		gio__kv_store_unpin(pl->store, pl->locs, pl->hit, pl->ok, pl->n);
	else if (pl->n)
		(void)gio__kv_store_commit(pl->store, pl->keys, pl->allocs, pl->ok, pl->n, pl->pre_rc);
	for (i = 0; i < pl->n; i++)
		pl->req_of[i] = NO_REQUEST;
	pl->batch = BATCH_NONE;
}

/* The planning's last step: the GPU engine's upload; on failure the batch is dropped. */
static int plan_done(struct gio_kv_plan *pl, int rc)
{
	int u;
	if (pl->p.engine != GIO_KV_ENGINE_GPU)
		return rc;
	if ((u = upload(pl)) != 0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", gio_last_error());
		drop_batch(pl);
		return gio__fail(u, "%s", msg);
	}
	if (pl->mover && pl->batch == BATCH_LOAD) {
		/* The mover reads the pinned image, which stays as it is until the batch is finished. */
		struct gio__kv_mover_batch b;
		memset(&b, 0, sizeof(b));
		b.epoch = pl->epoch;
		b.layers = pl->shape.layers;
		b.ngroups = pl->ngroups;
		b.groups = pl->img.groups;
		b.reqs = pl->img.reqs;
		b.devs = pl->img.devs;
		b.stages = pl->user_stage;
		b.pool = &pl->pool;
		b.runs = &pl->runs;
		gio__kv_mover_open(pl->mover, &b);
	}
	return rc;
}

int gio_kv_plan_load(struct gio_kv_plan *pl, const struct gio_kv_u128 *keys, const uint32_t *blocks, uint32_t n,
		     uint8_t *hit)
{
	struct where w;
	uint32_t i;
	int rc;
	gio__clear_error();
	rc = check_batch(pl, keys, blocks, n, "load");
	if (rc || (rc = where_alloc(&w, n)))
		return rc;
	rc = n ? gio__kv_store_lookup_pin(pl->store, keys, n, pl->locs, pl->hit) : 0;
	if (rc < 0) {
		where_free(&w);
		return rc;
	}
	open_batch(pl, BATCH_LOAD, n);
	for (i = 0; i < n; i++) {
		pl->keys[i] = keys[i];
		pl->pre_rc[i] = 0;
		pl->req_of[i] = pl->hit[i] ? 0 : NO_REQUEST;
		if (pl->hit[i]) {
			w.dev[i] = pl->locs[i].device;
			w.slba[i] = gio__kv_store_chunk_lba(pl->store, &pl->locs[i]);
		}
		if (hit)
			hit[i] = pl->hit[i];
	}
	build_groups(pl, blocks, w.dev, w.slba);
	where_free(&w);
	return plan_done(pl, rc);
}

int gio_kv_plan_save(struct gio_kv_plan *pl, const struct gio_kv_u128 *keys, const uint32_t *blocks, uint32_t n,
		     int32_t *rcs)
{
	struct where w;
	uint32_t i;
	int rc;
	gio__clear_error();
	rc = check_batch(pl, keys, blocks, n, "save");
	if (rc || (rc = where_alloc(&w, n)))
		return rc;
	rc = n ? gio__kv_store_reserve(pl->store, keys, n, pl->allocs) : 0;
	if (rc < 0) {
		where_free(&w);
		return rc;
	}
	open_batch(pl, BATCH_SAVE, n);
	for (i = 0; i < n; i++) {
		const struct gio__kv_alloc *a = &pl->allocs[i];
		pl->keys[i] = keys[i];
		pl->pre_rc[i] = a->rc;
		pl->req_of[i] = a->rc ? NO_REQUEST : 0;
		if (!a->rc) {
			w.dev[i] = a->loc.device;
			w.slba[i] = gio__kv_store_chunk_lba(pl->store, &a->loc);
		}
		if (rcs)
			rcs[i] = a->rc;
	}
	build_groups(pl, blocks, w.dev, w.slba);
	where_free(&w);
	return plan_done(pl, rc);
}

int gio_kv_plan_view(const struct gio_kv_plan *pl, struct gio_kv_io_plan *v)
{
	const struct image *im;
	if (!pl || !v)
		return gio__fail(-EINVAL, "giouring: gio_kv_plan_view: NULL %s", pl ? "view" : "plan");
	if (pl->batch == BATCH_NONE)
		return gio__fail(-EINVAL, "giouring: gio_kv_plan_view: no batch open (gio_kv_plan_load() or "
				 "gio_kv_plan_save() first; gio_kv_plan_finish() ends it)");
	im = pl->p.engine == GIO_KV_ENGINE_GPU ? &pl->dimg : &pl->img;
	memset(v, 0, sizeof(*v));
	v->devs = im->devs;
	v->reqs = im->reqs;
	v->groups = im->groups;
	v->results = pl->results;
	v->layer_count = im->count;
	v->layer_done = im->done;
	v->layer_done_host = pl->done_host;
	v->object_bytes = pl->shape.object_bytes;
	v->timeout_ns = pl->p.timeout_ns;
	v->ndevs = pl->shape.devices;
	v->nreqs = pl->nreq;
	v->ngroups = pl->ngroups;
	v->layers = pl->shape.layers;
	v->blocks = pl->p.blocks;
	v->epoch = pl->epoch;
	v->write = pl->batch == BATCH_SAVE;
	v->scope = pl->p.engine == GIO_KV_ENGINE_GPU ? pl->p.scope : GIO_SCOPE_SYS;
	v->poll_ns = pl->p.poll_ns;
	v->move_depth = pl->p.move_depth ? pl->p.move_depth : GIO_KV_MOVE_DEPTH_DEFAULT;
	if (pl->mover && pl->batch == BATCH_LOAD) {
		v->move_req = pl->move_req;
		v->move_done = pl->move_done;
		v->move_gcap = pl->gcap;
		v->cq_mirror = pl->cq_mirror;
	}
	if (pl->stage_rings) { /* the GPU engine's copies, in GPU memory */
		v->pool = im->pool;
		v->runs = im->runs;
	} else if (pl->has_pool) {
		v->pool = &pl->pool;
		v->runs = &pl->runs;
	}
	return 0;
}

int gio_kv_plan_layer_bytes(const struct gio_kv_plan *pl, uint64_t *bytes, uint32_t n)
{
	uint32_t i;
	if (!pl || !bytes || pl->batch == BATCH_NONE)
		return gio__fail(-EINVAL, "giouring: gio_kv_plan_layer_bytes: %s", !pl || !bytes ? "NULL argument" : "no batch open");
	if (n < pl->shape.devices)
		return gio__fail(-EINVAL, "giouring: gio_kv_plan_layer_bytes: room for %u devices, the store has %u", n,
				 pl->shape.devices);
	/* Counted when the batch was planned: a scheduler asks on every slot. */
	memset(bytes, 0, sizeof(*bytes) * n);
	for (i = 0; i < pl->shape.devices; i++)
		bytes[i] = (uint64_t)pl->objects[i] * pl->shape.object_bytes;
	return 0;
}

int gio_kv_plan_layer_begin(struct gio_kv_plan *pl, uint32_t layer, int write, void *stream,
			    struct gio_kv_plan_launch *l)
{
	(void)stream; /* the batch was uploaded when planned: nothing to enqueue here */
	gio__clear_error();
	if (!pl || pl->batch == BATCH_NONE)
		return gio__fail(-EINVAL, "giouring: kv plan: layer %u: no batch open", layer);
	if (layer >= pl->shape.layers)
		return gio__fail(-EINVAL, "giouring: kv plan: layer %u beyond the store's %u", layer, pl->shape.layers);
	if ((write != 0) != (pl->batch == BATCH_SAVE))
		return gio__fail(-EINVAL, "giouring: kv plan: layer %u: a %s call on a %s batch", layer,
				 write ? "save" : "load", pl->batch == BATCH_SAVE ? "save" : "load");
	if (pl->ran[layer])
		return gio__fail(-EALREADY, "giouring: kv plan: layer %u ran already in this batch", layer);
	if (pl->p.engine == GIO_KV_ENGINE_CPU) {
		pthread_mutex_lock(&pl->mu);
		pl->jobs[pl->jtail++ % pl->shape.layers] = layer;
		pthread_cond_broadcast(&pl->cv);
		pthread_mutex_unlock(&pl->mu);
		pl->ran[layer] = 1;
		return 0;
	}
	if (!l)
		return gio__fail(-EINVAL, "giouring: kv plan: layer %u: NULL launch", layer);
	gio_kv_plan_view(pl, &l->view);
	/* No more warps than groups: a warp per group, at most io_ctas x io_warps. */
	{
		const uint32_t per = pl->p.io_warps, most = pl->p.io_ctas * per;
		const uint32_t warps = pl->ngroups < most ? (pl->ngroups ? pl->ngroups : 1) : most;
		l->ctas = (warps + per - 1) / per;
		l->threads = 32 * per;
	}
	pl->ran[layer] = 1;
	return 1;
}

int gio_kv_plan_layer_cancel(struct gio_kv_plan *pl, uint32_t layer)
{
	/* No gio__clear_error(): the failed launch's message is what the caller reports. */
	if (!pl || pl->batch == BATCH_NONE || layer >= pl->shape.layers || pl->p.engine != GIO_KV_ENGINE_GPU)
		return -EINVAL;
	if (!pl->ran[layer])
		return -ENOENT;
	pl->ran[layer] = 0;
	return 0;
}

static int layer_finished(const struct gio_kv_plan *pl, uint32_t layer);

int gio_kv_plan_layer_time(const struct gio_kv_plan *pl, uint32_t layer, uint64_t *ns)
{
	struct gio_kv_plan *m = (struct gio_kv_plan *)pl; /* the lock only */
	int rc = -EAGAIN;
	gio__clear_error();
	if (!pl || !ns || layer >= pl->shape.layers)
		return gio__fail(-EINVAL, "giouring: gio_kv_plan_layer_time: %s",
				 pl && ns ? "layer beyond the plan's" : "NULL argument");
	if (pl->p.engine != GIO_KV_ENGINE_CPU)
		return gio__fail(-EOPNOTSUPP, "giouring: gio_kv_plan_layer_time: a GPU-engine plan's layers run on a "
				 "stream: time them there (CUDA events around the launch)");
	/* The thread publishes the layer's word, then stamps its time: a caller that saw the word
	 * (gio_kv_plan_wait_layer()) finds the time within microseconds, so it waits that long
	 * (bounded); a layer not finished is -EAGAIN at once. */
	uint64_t deadline = 0;
	uint32_t spins = 0;
	for (;;) {
		pthread_mutex_lock(&m->mu);
		if (pl->epoch && pl->run_epoch[layer] == pl->epoch) {
			*ns = pl->run_ns[layer];
			rc = 0;
		}
		pthread_mutex_unlock(&m->mu);
		if (rc == 0 || !layer_finished(pl, layer))
			return rc;
		if (!deadline)
			deadline = gio_deadline_in(10000000ull);
		else if (gio_deadline_passed(deadline))
			return -EAGAIN;
		gio_backoff(&spins);
	}
}

int gio_kv_plan_run_layer(struct gio_kv_plan *pl, uint32_t layer, int write)
{
	if (pl && pl->p.engine == GIO_KV_ENGINE_GPU)
		return gio__fail(-EOPNOTSUPP, "giouring: kv plan: a GPU-engine plan runs its layers with gio_kv_load_layer() "
				 "or gio_kv_save_layer() (giouring/kv/layer.cuh)");
	return gio_kv_plan_layer_begin(pl, layer, write, NULL, NULL);
}

/* The layer's word as the host reads it. */
static int layer_finished(const struct gio_kv_plan *pl, uint32_t layer)
{
	const uint32_t *w = pl->done_host ? pl->done_host : pl->img.done;
	return (int32_t)(gio_load_acquire(&w[layer]) - pl->epoch) >= 0;
}

int gio_kv_plan_wait_layer(const struct gio_kv_plan *pl, uint32_t layer, uint64_t timeout_ns)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	uint32_t spins = 0;
	if (!pl || pl->batch == BATCH_NONE || layer >= pl->shape.layers)
		return -EINVAL;
	while (!layer_finished(pl, layer)) {
		if (gio_deadline_passed(deadline))
			return -ETIME;
		gio_backoff(&spins);
	}
	return 0;
}

/* The result of key i's requests (its object's commands): the first failing layer's, the first
 * command's of that layer where several failed there. */
static struct gio_kv_io_result requests_result(const struct gio_kv_plan *pl, uint32_t i)
{
	const uint32_t first = pl->req_of[i], cmds = cmds_of(pl, pl->img.reqs[first].dev);
	struct gio_kv_io_result r = pl->results[first];
	uint32_t k;
	for (k = 1; k < cmds; k++) {
		const struct gio_kv_io_result *x = &pl->results[first + k];
		if (x->rc && (!r.rc || x->layer < r.layer))
			r = *x;
	}
	return r;
}

static void result_of(const struct gio_kv_plan *pl, uint32_t i, struct gio_kv_io_result *r)
{
	if (pl->req_of[i] == NO_REQUEST) {
		r->rc = pl->pre_rc[i];
		r->status = 0;
		r->layer = 0xffff;
		return;
	}
	*r = requests_result(pl, i);
	if (!r->rc && pl->batch == BATCH_SAVE && !pl->ok[i]) {
		r->rc = -ECANCELED; /* a layer not run */
		r->layer = 0xffff;
	}
}

/* The batch's requests into the plan's statistics: each request (one command of an object) moved
 * one object (or run) per layer run where it succeeded. */
static void count_batch(struct gio_kv_plan *pl)
{
	uint32_t l, r, layers = 0;
	for (l = 0; l < pl->shape.layers; l++)
		layers += pl->ran[l] != 0;
	for (r = 0; r < pl->nreq; r++) {
		const uint32_t d = pl->img.reqs[r].dev;
		struct gio_kv_plan_dev_stats *s = &pl->stats.dev[d];
		const int staged = pl->img.devs[d].stage != NULL;
		const uint64_t bytes = pl->shape.object_bytes / cmds_of(pl, d);
		const int32_t rc = pl->results[r].rc;
		if (rc == 0) {
			s->objects += layers;
			s->bytes += bytes * layers;
			if (staged) {
				s->staged_objects += layers;
				s->staged_bytes += bytes * layers;
			}
		} else {
			s->failed++;
			if (staged && rc == -ETIME)
				s->timed_out++;
		}
	}
	pl->stats.batches++;
}

int gio_kv_plan_info(const struct gio_kv_plan *pl, struct gio_kv_plan_stats *out)
{
	uint32_t d;
	gio__clear_error();
	if (!pl || !out)
		return gio__fail(-EINVAL, "giouring: gio_kv_plan_info: NULL argument");
	*out = pl->stats;
	if (pl->mover) {
		struct gio__kv_mover_stats ms;
		gio__kv_mover_info(pl->mover, &ms);
		out->mover_copies = ms.copies;
		out->mover_calls = ms.calls;
		out->mover_bytes = ms.bytes;
		out->mover_cpu_ns = ms.cpu_ns;
		out->mover_cq_marks = ms.cq_marks;
	}
	out->devices = pl->shape.devices;
	for (d = 0; d < pl->shape.devices; d++)
		out->dev[d].path = pl->img.devs[d].stage ? GIO_GPU_PATH_STAGED : GIO_GPU_PATH_P2P;
	return 0;
}

int gio_kv_plan_finish(struct gio_kv_plan *pl, struct gio_kv_io_result *results, uint64_t timeout_ns)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns ? timeout_ns : (pl ? pl->p.timeout_ns : 0));
	uint32_t i, l;
	int first = 0, mover_rc = 0;
	char mover_msg[512] = "";
	gio__clear_error();
	if (!pl || pl->batch == BATCH_NONE)
		return gio__fail(-EINVAL, "giouring: kv plan: finish: no batch open");
	/* Every layer run must be over before pins drop or slots commit: the engine may still move
	 * their data. */
	for (l = 0; l < pl->shape.layers; l++) {
		uint32_t spins = 0;
		if (!pl->ran[l])
			continue;
		while (!layer_finished(pl, l)) {
			if (gio_deadline_passed(deadline))
				return gio__fail(-ETIME, "giouring: kv plan: finish: layer %u of the batch has not finished "
						 "(the batch stays open: finish again later)", l);
			gio_backoff(&spins);
		}
	}
	/* The CPU engine's thread publishes a layer's word before it stamps the layer's time and
	 * takes the next job: microseconds after the last word, it is idle, and every time is in. */
	for (uint32_t spins = 0; pl->have_thread;) {
		int idle;
		pthread_mutex_lock(&pl->mu);
		idle = pl->jhead == pl->jtail;
		pthread_mutex_unlock(&pl->mu);
		if (idle)
			break;
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: kv plan: finish: the engine's thread has not taken up its "
					 "last layer (the batch stays open: finish again later)");
		gio_backoff(&spins);
	}
	/* No copy of the copy engine may land in the pool after the batch's results are out: a group
	 * whose warp gave up waiting may still have copies queued. */
	if (pl->mover && pl->batch == BATCH_LOAD) {
		mover_rc = gio__kv_mover_close(pl->mover, deadline);
		if (mover_rc == -ETIME)
			return mover_rc;
		if (mover_rc)
			snprintf(mover_msg, sizeof(mover_msg), "%s", gio_last_error());
	}
	for (i = 0; i < pl->n; i++) {
		pl->ok[i] = pl->req_of[i] != NO_REQUEST && requests_result(pl, i).rc == 0;
		for (l = 0; pl->ok[i] && l < pl->shape.layers; l++)
			pl->ok[i] = pl->ran[l];
	}
	if (pl->batch == BATCH_LOAD) {
		gio__kv_store_unpin(pl->store, pl->locs, pl->hit, pl->ok, pl->n);
	} else if (pl->n) {
		/* pre_rc is reused for the commit's results: for a key that was no request the commit
		 * gives back its planning outcome, which pre_rc held. */
		int32_t *crc = pl->pre_rc;
		first = gio__kv_store_commit(pl->store, pl->keys, pl->allocs, pl->ok, pl->n, crc);
		for (i = 0; i < pl->n; i++)
			if (pl->req_of[i] != NO_REQUEST && pl->ok[i] && crc[i]) {
				pl->results[pl->req_of[i]].rc = crc[i];
				pl->results[pl->req_of[i]].layer = 0xffff; /* the commit, not a layer */
				pl->ok[i] = 0;
			}
	}
	for (i = 0; i < pl->n; i++) {
		struct gio_kv_io_result r;
		result_of(pl, i, &r);
		if (results)
			results[i] = r;
		if (r.rc && pl->req_of[i] != NO_REQUEST && !first)
			first = r.rc;
	}
	count_batch(pl);
	pl->batch = BATCH_NONE;
	if (mover_rc) /* what the groups it left unmoved timed out for; its message is the last error */
		return gio__fail(mover_rc, "%s", mover_msg);
	return first;
}

/* Whether a finished batch had a staged command time out: only then may a slot be LOST. */
static int stage_timed_out(const struct gio_kv_plan *pl)
{
	uint32_t d;
	for (d = 0; d < pl->shape.devices; d++)
		if (pl->stats.dev[d].timed_out)
			return 1;
	return 0;
}

/* The GPU engine's staging rings back into the caller's: every slot this plan LOST becomes LOST
 * there too, so that no later plan or engine hands it out while the controller may still write
 * it. Bounded; where the copy fails, every slot of the plan's rings is taken as LOST. */
static void stage_download(struct gio_kv_plan *pl)
{
	const struct gio__cudart *rt = gio__cudart();
	uint32_t d, q, i;
	uint64_t w = 0;
	/* An abandoned batch's kernels may still change the words: every slot is then LOST. */
	int e = pl->abandoned ? -1
		: rt && rt->memcpy_async ? rt->memcpy_async(pl->img.words, pl->dimg.words, sizeof(uint32_t) * pl->stage_words,
							    GIO__CUDA_MEMCPY_DEFAULT, pl->hbm.stream)
					 : -1;
	if (!e)
		e = gio__cuda_stream_wait(rt, pl->hbm.stream, 10000000000ull);
	for (d = 0; d < pl->shape.devices; d++) {
		const struct gio_kv_io_stage *sg = pl->user_stage[d];
		if (!sg)
			continue;
		for (q = 0; q < pl->img.devs[d].nqps; q++) {
			struct gio_stage *r = &sg->rings[q];
			for (i = 0; i < r->nslots; i++, w++)
				if (e || gio_stage_state(pl->img.words[w]) == GIO_STAGE_LOST)
					gio_store_release_in(r->scope, &r->slots[i], (r->slots[i] & ~3u) | GIO_STAGE_LOST);
		}
	}
}

int gio_kv_plan_destroy(struct gio_kv_plan *pl)
{
	int rc = 0;
	if (!pl)
		return 0;
	if (pl->batch != BATCH_NONE) {
		rc = gio_kv_plan_finish(pl, NULL, 0);
		if (rc == -ETIME && pl->batch != BATCH_NONE)
			pl->abandoned = 1;
	}
	if (pl->stage_rings && (pl->abandoned || stage_timed_out(pl)))
		stage_download(pl); /* only a command past its deadline (or an abandoned batch) loses slots */
	plan_free(pl);
	return rc;
}

int gio_kv_launch_error(int cuda_error, const char *what)
{
	return gio__cuda_fail(cuda_error, "%s: kernel launch", what ? what : "kv layer");
}
