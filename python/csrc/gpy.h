/*
 * The Python package's native layer (libgiouring_torch.so): a flat C API over giouring's host
 * library for the package's ctypes calls (giouring/_lib.py), and the layer calls its torch ops
 * make (ops.cpp). Handles are opaque; every call that can fail returns -errno and leaves a message
 * for gpy_last_error() on the calling thread.
 *
 * Why ctypes and not the Python C API: the library then holds no Python symbol, so one build
 * serves every Python version, and torch is reached only through its stable C ABI (ops.cpp).
 *
 * Layout of the objects:
 *   gpy_store  the targets (contexts, or GPU-executed targets in a CUDA build), the pool
 *              registered with each and its P2P table per target, and the KV store over them;
 *   gpy_plan   a plan (giouring/kv/plan.h) over a store: its queue pairs (CPU engine) and, for
 *              the GPU engine, the flags of its stream waits.
 */
#ifndef GIOURING_PY_GPY_H
#define GIOURING_PY_GPY_H

#include <stdint.h>

#include <giouring/giouring.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPY_EXPORT __attribute__((visibility("default")))

/** Most pool memory regions a store registers with each target (one per torch storage). */
#define GPY_MAX_REGIONS 48u
/** Most queue pairs a CPU-engine plan creates per device. */
#define GPY_MAX_QPS 8u

/** The pool as Python describes it from torch tensors (giouring/_lib.py mirrors this struct). */
struct gpy_pool_desc {
	uint32_t base_mode;        /* enum gio_kv_base_mode */
	uint32_t elem_bytes;       /* the tensors' element size */
	uint32_t extent[GIO_KV_DIMS];
	uint64_t stride[GIO_KV_DIMS]; /* in elements, as torch reports them */
	uint64_t base;             /* GIO_KV_BASE_ONE: the tensor's data pointer */
	const uint64_t *bases;     /* the other modes: a data pointer per layer (and part) */
	const uint64_t *regions;   /* nregions pairs (address, bytes): the torch storages to register */
	uint32_t nregions;
	int32_t device;            /* -1: host memory; else the CUDA device the tensors are on */
};

/** A device of a store: a context, or (CUDA builds) a GPU-executed target. */
struct gpy_dev {
	struct gio_ctx *ctx;
	struct gio_gpu_target *gpu;
	struct gio_kv_blockdev bd;       /* GPU target: the store's block device */
	struct gio_dptr_caps caps;
	uint32_t nsid, lba_shift;
	uint32_t psdt, cmds;             /* the table's form (gio_kv_io_dev) */
	union gio_dptr *table;           /* host image of the P2P table */
	uint64_t table_entries;
	void *lists;                     /* SGL segment lists or PRP lists: host memory (contexts) or
					    the host image of the GPU copy */
	uint64_t lists_bytes;
	union gio_dptr *table_dev;       /* GPU target: the table in device memory */
	void *lists_dev;                 /* GPU target: the lists in device memory */
	uint32_t path;                   /* GIO_GPU_PATH_P2P (the target reaches the pool: a table) or
					    GIO_GPU_PATH_STAGED (a plan's staging area per device) */
	char why[512];                   /* the path's reason (gio_gpu_path::why) */
};

struct gpy_store {
	uint32_t ndevs;
	struct gpy_dev dev[GIO_KV_STORE_MAX_DEVICES];
	struct gio_kv_store *store;
	struct gio_kv_blockdev bds[GIO_KV_STORE_MAX_DEVICES]; /* GPU targets: what the store reads
							     until its close */
	uint32_t order[GIO_KV_STORE_MAX_DEVICES]; /* the store's device d is dev[order[d]] (an open may
						     take the targets in another order) */
	struct gio_kv_pool pool;         /* the engine's addresses; bases points at pool_bases */
	uint64_t *pool_bases;
	struct gio_kv_runs runs;
	int32_t device;                  /* the pool's CUDA device, or -1 */
	int gpu_targets;                 /* every device is GPU-executed */
	int started;                     /* GPU targets' executors running */
	void *exec_stream;               /* where they start (NULL: each target's own stream) */
	uint32_t plans;                  /* plans alive */
	uint64_t timeout_ns;
	uint64_t regions[2 * GPY_MAX_REGIONS]; /* the pool's storages: (address, bytes) pairs */
	uint32_t nregions;
	void **pinned;                   /* GPU engine: plans' pinned blocks, freed at close, once the
					    executors stopped (freeing pinned memory waits for every
					    kernel, a persistent executor's too) */
	uint32_t npinned;
};

/** Statistics of a plan, the order of gpy_plan_stats(). */
enum gpy_plan_stat {
	GPY_PLAN_LOADS, GPY_PLAN_SAVES, GPY_PLAN_REQUESTS, GPY_PLAN_LAYERS, GPY_PLAN_FAILED,
	GPY_PLAN_STREAM_TIMEOUTS, GPY_PLAN_STATS
};

/** Numbers per device of gpy_plan_devices(). */
#define GPY_PLAN_DEV_STATS 7u

struct gpy_plan {
	struct gpy_store *s;
	uint64_t uid;                    /* this process's plans numbered from 1: a freed plan's address
					    may be reused, its number never */
	struct gio_kv_plan *plan;
	uint32_t engine, layers, max_requests;
	uint32_t nqps;                   /* CPU engine: queue pairs per device */
	struct gio_qp *qps[GIO_KV_STORE_MAX_DEVICES][GPY_MAX_QPS];
	struct gio_qp **gpu_qps[GIO_KV_STORE_MAX_DEVICES]; /* GPU engine: the queue pairs as the kernel
							     reaches them (device pointers) */
	struct gio_ctx_stage *areas[GIO_KV_STORE_MAX_DEVICES]; /* staged devices: the plan's staging
								  area (one ring per queue pair) */
	struct gio_qp *dqps[GIO_KV_STORE_MAX_DEVICES]; /* GPU engine, contexts: the pinned queue pairs'
							  structs in device memory (the GPU alone
							  moves them; copied back before destroy) */
	union gio_dptr *table_dev[GIO_KV_STORE_MAX_DEVICES]; /* GPU engine, contexts on the P2P path:
								the table in device memory */
	void *cuda_stream;               /* GPU engine, contexts: the plan's own non-blocking stream for
					    its allocations and copies (waited with deadlines) */
	struct gio_qp *qp_back;          /* GPU engine, contexts: pinned room for one device's queue
					    pairs copied back at destroy (freed at the store's close) */
	struct gio_kv_io_dev devs[GIO_KV_STORE_MAX_DEVICES];
	int *timed_out;                  /* GPU engine: per layer, set by a stream wait that timed out
					    (mapped pinned memory) */
	uint64_t *waited;                /* GPU engine: per layer, ns the last stream wait stalled for its
					    I/O (gio_kv_wait_layer_timed_on(); mapped pinned memory) */
	int batch_open, batch_write;
	uint32_t batch_n;                /* keys of the open batch */
	uint32_t sched_queued;           /* save layers of the open batch a scheduler still holds
					    (sched.c): finish and destroy refuse while any are */
	uint64_t timeout_ns;
	uint64_t stats[GPY_PLAN_STATS];
};

/* ---- errors (error.c) ---- */
/** The calling thread's message about its latest failed gpy_* call ("" after a success). */
GPY_EXPORT const char *gpy_last_error(void);
void gpy_clear_error(void);
/** The name of an NVMe status field (gio_status_str()). */
GPY_EXPORT const char *gpy_status_str(uint32_t status);
/** Sets the message and returns rc. */
int gpy_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** A message kept across cleanup calls that may overwrite it. */
struct gpy_saved_error {
	char message[1024];
};
void gpy_error_save(struct gpy_saved_error *e);
/** Puts a saved message back; returns rc. */
int gpy_error_restore(int rc, const struct gpy_saved_error *e);
/** rc of a library call: with its message (gio_last_error()) after @p what. */
int gpy_lib(int rc, const char *what);

/* ---- pools (pool.c) ---- */
/** sizeof(struct gpy_pool_desc), for the Python mirror to check itself against. */
GPY_EXPORT uint32_t gpy_pool_desc_size(void);
/** Checks a pool and gives what the store needs of it: its object bytes, device order signature
 *  and runs per object. -EINVAL with a message naming the dimensions or layers at fault. */
GPY_EXPORT int gpy_pool_check(const struct gpy_pool_desc *d, uint64_t *object_bytes, uint64_t *signature,
			      uint32_t *nruns);
/** The library's pool from a description (bases into @p bases, layers x parts entries). */
int gpy_pool_from_desc(const struct gpy_pool_desc *d, struct gio_kv_pool *pool, uint64_t *bases);

/** Keys as Python passes them, (hi, lo) pairs, as the library's: calloc'd (free it), NULL when
 *  out of memory. */
struct gio_kv_u128 *gpy_keys_of(const uint64_t *keys, uint32_t n);

/* ---- stores (store.c) ---- */
GPY_EXPORT int gpy_store_open(const char *const *uris, uint32_t n, const struct gpy_pool_desc *pool, int create,
			      uint64_t store_bytes, uint64_t timeout_ns, struct gpy_store **out);
GPY_EXPORT int gpy_store_close(struct gpy_store *s);
/** gio_kv_store_stats in the order of giouring/store.py's STORE_STATS (16 numbers). */
GPY_EXPORT int gpy_store_stats(struct gpy_store *s, uint64_t *out, uint32_t n);
/** gio_ctx_inject() on device @p dev: fail its @p fail_nth I/O command from now on with @p status
 *  (0 and 0: no fault). Software targets only; for tests. */
GPY_EXPORT int gpy_store_inject(struct gpy_store *s, uint32_t dev, uint64_t fail_nth, uint32_t status);
/** gio_kv_store_contains() over @p n keys given as (hi, lo) pairs: how many are stored. */
GPY_EXPORT int gpy_store_contains(struct gpy_store *s, const uint64_t *keys, uint32_t n, uint8_t *found);
/** gio_kv_store_remove() of @p n keys given as (hi, lo) pairs, in order: @p removed[i] 1 or 0;
 *  how many were removed, or the first failure (the keys before it are done, the failing one is
 *  out of the index: see gio_kv_store_remove()). */
GPY_EXPORT int gpy_store_remove(struct gpy_store *s, const uint64_t *keys, uint32_t n, uint8_t *removed);
/** gio_kv_store_remove_failed() (the failed-load policy: -EIO removes a key at once, -ETIME
 *  the second time within the store's last GIO_KV_STORE_STRIKES misses) with the keys as
 *  (hi, lo) pairs; @p removed[i]: 1 where key i was removed. Returns how many were, or the first
 *  removal's error (its message names it). Any thread. */
GPY_EXPORT int gpy_store_remove_failed(struct gpy_store *s, const uint64_t *keys, const int32_t *rcs, uint32_t n,
				       uint8_t *removed);
/** gio_kv_store_removed() with the keys as (hi, lo) pairs: how many were written (-ERANGE: some
 *  were lost; @p next then says where the journal is now). */
GPY_EXPORT int gpy_store_removed(struct gpy_store *s, uint64_t since, uint64_t *keys, uint32_t cap, uint64_t *next);
/** gio_kv_store_keys() with the keys as (hi, lo) pairs: how many were written. */
GPY_EXPORT int gpy_store_keys(struct gpy_store *s, uint64_t from, uint64_t *keys, uint32_t cap, uint64_t *next);
/** Device @p dev's path (its index in the URIs as given): GIO_GPU_PATH_P2P or _STAGED, its
 *  reason into @p why (room @p len); -EINVAL for no such device. */
GPY_EXPORT int gpy_store_path(const struct gpy_store *s, uint32_t dev, char *why, uint32_t len);
/** 1 when the store's devices are GPU-executed targets (the GPU engine's). */
GPY_EXPORT int gpy_store_gpu_targets(const struct gpy_store *s);
/** The stream the GPU targets' executors will start on (gio_gpu_target_start_on(); NULL: each
 *  target's own): -EBUSY once they started, -EINVAL for a store without GPU targets. */
GPY_EXPORT int gpy_store_exec_stream(struct gpy_store *s, void *stream);
/** Builds device @p d's P2P table from the pool at its bus addresses @p bus into d->table and
 *  d->lists (allocated here: @p lists_bus_of gives the bus address of the lists' memory). */
int gpy_table_build(struct gpy_store *s, struct gpy_dev *d, const struct gio_kv_pool *bus, int allow_prp,
		    int (*lists_bus_of)(struct gpy_store *s, struct gpy_dev *d, uint64_t *addr));

/* ---- plans (plan.c) ---- */
/** poll_ns, move_depth, mover, completions: gio_kv_plan_params' (GPU engine; 0: the library's defaults). */
GPY_EXPORT int gpy_plan_create(struct gpy_store *s, uint32_t engine, uint32_t max_requests, uint32_t queues,
			       uint32_t queue_depth, uint32_t io_ctas, uint32_t io_warps, uint64_t timeout_ns,
			       uint32_t poll_ns, uint32_t move_depth, uint32_t mover, uint32_t completions,
			       struct gpy_plan **out);
GPY_EXPORT int gpy_plan_destroy(struct gpy_plan *p);
/** keys: n pairs (hi, lo). Returns the hits. */
GPY_EXPORT int gpy_plan_load(struct gpy_plan *p, const uint64_t *keys, const uint32_t *blocks, uint32_t n,
			     uint8_t *hit);
/** Returns the requests planned; rc[i] each key's outcome. */
GPY_EXPORT int gpy_plan_save(struct gpy_plan *p, const uint64_t *keys, const uint32_t *blocks, uint32_t n,
			     int32_t *rc);
/** Ends the batch; per key of it (gpy_plan_batch_keys()): rc, NVMe status and failing layer. */
GPY_EXPORT int gpy_plan_finish(struct gpy_plan *p, int32_t *rc, uint16_t *status, uint16_t *layer,
			       uint64_t timeout_ns);
GPY_EXPORT uint32_t gpy_plan_batch_keys(const struct gpy_plan *p);
GPY_EXPORT int gpy_plan_stats(const struct gpy_plan *p, uint64_t *out, uint32_t n);
/** GPU engine: per layer, the nanoseconds its last stream wait stalled for the layer's I/O in
 *  the open or last batch (0: not waited for); read after the waiting stream passed the wait.
 *  Returns the layers, or -EOPNOTSUPP (CPU engine: its waits are the host's). */
GPY_EXPORT int gpy_plan_wait_times(const struct gpy_plan *p, uint64_t *out, uint32_t n);
/** Per device of the store, GPY_PLAN_DEV_STATS numbers (gio_kv_plan_info(): path, objects, bytes,
 *  staged objects, staged bytes, failed, timed out) into @p out, room for @p ndev devices; returns
 *  the store's devices or -errno. @p out NULL and @p ndev 0: the count alone. */
GPY_EXPORT int gpy_plan_devices(const struct gpy_plan *p, uint64_t *out, uint32_t ndev);
/** The copy-engine mover's counters (gio_kv_plan_stats): copies, calls, bytes, its thread's CPU ns, CQ mirror words stored. */
#define GPY_PLAN_MOVER_STATS 5u
GPY_EXPORT int gpy_plan_mover(const struct gpy_plan *p, uint64_t *out, uint32_t n);
/** The plan's engine (GIO_KV_ENGINE_*) and layers. */
GPY_EXPORT uint32_t gpy_plan_engine(const struct gpy_plan *p);
/** The live plan whose handle is @p handle, or NULL (a destroyed or made-up handle): the torch
 *  ops get plans as integers. */
struct gpy_plan *gpy_plan_lookup(int64_t handle);
/** Checks that @p ptrs (tensors' data pointers, in the pool's order) are the pool's tensors:
 *  all of them, or those holding layer @p layer (its one, its parts, or the pool's one tensor). */
int gpy_plan_check_pool(const struct gpy_plan *p, uint32_t layer, const uint64_t *ptrs, uint32_t n);
/** Runs (CPU engine) or launches on @p stream (GPU engine) layer @p layer of the open batch. */
int gpy_plan_layer(struct gpy_plan *p, uint32_t layer, int write, void *stream);
/** Waits for layer @p layer: the host (CPU engine), or @p stream (GPU engine), up to @p timeout_ns. */
int gpy_plan_wait(struct gpy_plan *p, uint32_t layer, void *stream, uint64_t timeout_ns);
/** gpy_plan_call()'s @p what. */
enum { GPY_CALL_LOAD = 0, GPY_CALL_SAVE = 1, GPY_CALL_WAIT = 2 };
/** A layer call of Plan's eager path (giouring/plan.py) without a torch op's dispatch: load or save
 *  (gpy_plan_layer()) or wait (gpy_plan_wait()) of layer @p layer, GPU engine on @p stream (the
 *  caller names it: no current-stream lookup). Its pool tensors are the store's by construction,
 *  so none are checked. The torch ops remain what torch.compile traces. */
GPY_EXPORT int gpy_plan_call(struct gpy_plan *p, uint32_t layer, uint32_t what, uint64_t timeout_ns, void *stream);

/* ---- the GPU half (gpu.cu; stubs in nogpu.c where CUDA is not built) ---- */
/** 1 where this build has the GPU engine. */
GPY_EXPORT int gpy_has_gpu(void);
/** Opens device @p d as a GPU-executed target when @p uri names one: 1 (opened), 0 (not a GPU
 *  target URI), or -errno. */
int gpy_gpu_open(struct gpy_store *s, struct gpy_dev *d, const char *uri);
/** Registers the pool with GPU target @p d and builds its table in device memory. */
int gpy_gpu_attach(struct gpy_store *s, struct gpy_dev *d);
/** Starts the GPU targets' executors (the layer kernels preloaded first). */
int gpy_gpu_start(struct gpy_store *s);
/** Stops every GPU target's executor (5 s each at most): before anything is freed, since a
 *  cudaFree() waits for every kernel on the device, another target's executor too. */
int gpy_gpu_stop(struct gpy_store *s);
/** Stops and closes GPU target @p d, frees its device tables (after gpy_gpu_stop()). */
int gpy_gpu_close(struct gpy_store *s, struct gpy_dev *d);
/** Frees the store's pinned blocks (after every target closed). */
void gpy_gpu_release(struct gpy_store *s);
/** The GPU engine's parts of a plan: the queue pairs (a GPU target's, or pinned ones of a context
 *  copied to device memory), a context's table in device memory, and the wait flags. The plan's
 *  staging areas are made before (plan.c). */
int gpy_gpu_plan_init(struct gpy_plan *p, uint32_t queue_depth);
/** Frees those parts; a context's queue pairs get their state back from the GPU first (before
 *  plan.c destroys them). The first failure's rc. */
int gpy_gpu_plan_free(struct gpy_plan *p);
int gpy_gpu_layer(struct gpy_plan *p, uint32_t layer, int write, void *stream);
int gpy_gpu_wait(struct gpy_plan *p, uint32_t layer, void *stream, uint64_t timeout_ns);

/* ---- the scheduler (sched.c) ---- */
/** Most save plans with layers queued in one scheduler's backlog at once. */
#define GPY_SCHED_SAVES 16u
/** Numbers of a slot's decision (gpy_sched_slot()): read end, bubble, slot end, write end (ns from
 *  the slot's start), bytes read, bytes written, save layers issued, SM budget. */
#define GPY_SCHED_OUT 8u
struct gpy_sched;
/** A scheduler over the store's devices: @p gbps holds (read, write, mixed) GB/s per device in the
 *  store's order; its backlog holds at most @p max_items save layers and @p max_bytes (above
 *  @p soft_bytes a defer answers 1: pressure); @p timeout_ns bounds the CPU engine's load wait;
 *  @p calibrate, in (0, 1], the weight with which each measured transfer corrects the bandwidths
 *  (GPU engine: its layers timed on the stream; CPU engine: by the plan's thread), 0 for none;
 *  @p engine (GIO_KV_ENGINE_*) the one of every plan given to it. */
GPY_EXPORT int gpy_sched_create(struct gpy_store *s, const double *gbps, uint32_t ndevs, uint32_t sm_min,
				uint32_t sm_max, uint32_t max_items, uint64_t max_bytes, uint64_t soft_bytes,
				uint64_t timeout_ns, double calibrate, uint32_t engine, struct gpy_sched **out);
/** The bandwidth calibration (@p calibrate of gpy_sched_create(), giouring/sched/rate.h): read
 *  factor, write factor, reads observed, writes observed (4 numbers). */
GPY_EXPORT int gpy_sched_rates(const struct gpy_sched *x, double *out, uint32_t n);
/** Starts the calibration again (factors 1, no observations; transfers timed and not yet read
 *  back are dropped): the bandwidths as configured from the next slot on. */
GPY_EXPORT int gpy_sched_rates_reset(struct gpy_sched *x);
GPY_EXPORT int gpy_sched_destroy(struct gpy_sched *x);
/** Queues save layer @p layer of @p p (a save batch open): 0, 1 (queued, backlog above its soft
 *  mark), -EAGAIN (full: nothing queued), -E2BIG (never fits). */
GPY_EXPORT int gpy_sched_defer(struct gpy_sched *x, struct gpy_plan *p, uint32_t layer);
/** Save layers of @p p still queued (finish a save plan only at 0). */
GPY_EXPORT uint32_t gpy_sched_pending(const struct gpy_sched *x, const struct gpy_plan *p);
/** One slot: layer @p layer of @p load (NULL: no reads), then the queued saves that fit in
 *  @p slack_ns; GPU engine: on @p stream with at most @p sm SMs (0: the config's most). */
GPY_EXPORT int gpy_sched_slot(struct gpy_sched *x, struct gpy_plan *load, uint32_t layer, uint32_t phase,
			      uint64_t slack_ns, uint32_t sm, void *stream, uint64_t *out, uint32_t n);
/** The devices are idle (the caller waited for its streams): the next slot carries nothing over. */
GPY_EXPORT void gpy_sched_idle(struct gpy_sched *x);
/** Numbers of each transfer gpy_sched_transfers() gives: 1 for a save (0 a load), its layer, its
 *  bytes (every device's), its modelled time at the bandwidths as given (ns), its measured time (ns;
 *  0 below the clock's resolution). */
#define GPY_SCHED_XFER 5u
/** Timed transfers a scheduler keeps for gpy_sched_transfers(): the newest, 16 prefills of 32
 *  layers with a save each, so that a caller who takes them once per request loses none. */
#define GPY_SCHED_LOG 1024u
/** Reads back the timed transfers that ended (waits for none) and moves up to @p n of those not
 *  taken yet into @p out (GPY_SCHED_XFER numbers each), oldest first; returns how many. The newest
 *  GPY_SCHED_LOG are kept (how many older ones were dropped: gpy_sched_stats()' 9th). -EINVAL without
 *  calibration (nothing is timed). */
GPY_EXPORT int gpy_sched_transfers(struct gpy_sched *x, uint64_t *out, uint32_t n);
/** The backlog: queued items and bytes, high water items and bytes, pushed, popped, refused,
 *  pressured; then the timed transfers dropped unread (gpy_sched_transfers()). */
GPY_EXPORT int gpy_sched_stats(const struct gpy_sched *x, uint64_t *out, uint32_t n);
/** The scheduler's launcher for the GPU engine (gio_sched_launch_fn; @p arg is the stream). */
int gpy_gpu_sched_launch(void *arg, struct gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm);
/** @p n stream timers on @p device (pairs of timing events): made before the executors start. */
int gpy_gpu_timers_create(int device, uint32_t n, void **out);
void gpy_gpu_timers_destroy(void *timers);
/** Records timer @p i's begin (@p end 0) or end mark on @p stream. */
int gpy_gpu_timer_mark(void *timers, uint32_t i, int end, void *stream);
/** Timer @p i's time between its marks: 0 with @p ns set, -EAGAIN while its end mark is pending
 *  (never waits), or the CUDA error. */
int gpy_gpu_timer_read(void *timers, uint32_t i, uint64_t *ns);

/* ---- SM partitions (gpu.cu; giouring/host/partition.h) ---- */
/** Splits device @p device into @p io_sms I/O SMs, @p exec_sms executor SMs (0: none) and the
 *  rest; with @p fallback, ordinary streams where green contexts are unavailable. */
GPY_EXPORT int gpy_partition_create(int device, uint32_t io_sms, uint32_t exec_sms, int fallback, void **out);
/** device_sms, io_sms, compute_sms, min_partition_sms, alignment_sms, isolated, exec_sms (7 numbers). */
GPY_EXPORT int gpy_partition_info(void *part, uint32_t *out, uint32_t n);
/** The partition's stream of side 0 (I/O), 1 (compute) or 2 (executors; NULL without): a cudaStream_t. */
GPY_EXPORT void *gpy_partition_stream(void *part, int side);
GPY_EXPORT int gpy_partition_destroy(void *part);

#ifdef __cplusplus
}
#endif

#endif /* GIOURING_PY_GPY_H */
