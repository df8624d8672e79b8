/**
 * @file giouring/target/gpu_target.h
 * @brief The software NVMe target run by the GPU: a persistent executor kernel on SMs of its own.
 *
 * The host API, for C and CUDA code alike; link `giouring::gpu`, the CUDA part of the host library
 * (built where nvcc is found; gio_gpu_target_parse() alone is in `giouring::host`). A target opens
 * from a URI, as gio_ctx_open() opens one for the CPU executor:
 *
 * | URI | backing store | rings (SQ, CQ, doorbells) |
 * | --- | --- | --- |
 * | `mem://hbm?size=8G` | HBM | HBM (default) or `rings=host` |
 * | `mem://host?exec=gpu&size=8G` | mapped pinned host memory | HBM (default) or `rings=host` |
 *
 * Query parameters: `size` (bytes, K M G T suffixes; required), `lba` (a power of two from 512 to
 * 65536, default 4096), `sgls` (0, 1, 2; default 1), `mdts` (0 to 20, default 7), `queues` (1 to
 * GIO_TGT_MAX_IO_QUEUES, default 16), `depth` (entries per SQ and CQ, a power of two from 2 to
 * 4096, default 1024), `sms` (executor blocks, one per SM, default 4), `warps` (warps per
 * executor block, 1 to GIO_GPU_EXEC_MAX_WARPS, default 8), `rings` (`hbm` or `host`), `data`
 * (`1`, or `0`: commands are checked, walked and completed but no byte moves: for command-rate
 * measurements), `profile=1` (the executor times its steps into gio_gpu_ctl::prof), `scope`
 * (`gpu`, the default, or `sys`: the memory scope of the ring protocol's ordering; every party of
 * these queue pairs runs on this GPU, so GPU scope suffices (GIO_QP_GPU_SCOPE), and `sys`
 * measures what the system scope a real SSD needs costs), `check=1` (every queue pair checks each
 * command's data pointer, PRP lists and SGL segments against the registered regions before it
 * reaches the ring, and refuses one outside with `-EFAULT`: giouring/ring/check.h), and the SSD timing model
 * (docs/design.md, "Targets"): `model_read_gbps`, `model_write_gbps`, `model_mixed_gbps` (device
 * bandwidth; the mixed figure is both directions' together while reads and writes are in
 * flight at once on the device, by default the smaller of the two), `model_lat_us` (per-command
 * latency). With a model, completions are held until the modelled time: figures measured with it
 * are **modelled**, and must say so. The queue pairs are for producers on this GPU only.
 *
 * The executor serves the I/O queues only: the controller is brought up and its queues are
 * created on the host (the same target core, giouring/target/core.h, executes the admin
 * commands), then gio_gpu_target_start() launches the executor (its device loop:
 * giouring/target/gpu_exec.cuh). The executor's SMs stand in for the SSD's controller: count them
 * apart from the SMs of the I/O (submission) kernel. Producers use gio_gpu_target_qp() queue pairs
 * with the verbs of giouring/device/verbs.cuh; bus addresses are device pointers of memory
 * registered with gio_gpu_target_register() before the start.
 *
 * Memory: the executor's state, the queue pairs and their slots, HBM rings and an HBM backing
 * store are device memory from the stream-ordered allocator on the target's own non-blocking
 * stream; the host sets the state up in host images (struct gio_gpu_target) that
 * gio_gpu_target_prepare() copies to the device and gio_gpu_target_stop() (or
 * gio_gpu_target_read_back()) copies back. Host rings, the control block and a host backing
 * store are pinned host memory, from and back to the process's cache. No call of this API waits
 * for kernels other than the target's own work (docs/design.md, "Bounded CUDA calls"): targets
 * open, start, stop and close while other kernels, another target's executor included, run.
 *
 * Launch order (docs/design.md, "Persistent kernels and lazy loading"): gio_gpu_target_start()
 * loads the executor kernel, and the kernels named to gio_gpu_preload() (giouring/host/launch.h),
 * before its persistent launch; preload every kernel you will launch while the executor runs, or
 * set CUDA_MODULE_LOADING=EAGER.
 */
#ifndef GIOURING_TARGET_GPU_TARGET_H
#define GIOURING_TARGET_GPU_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "../ring/qp.h"
#include "core.h"

GIO_EXTERN_C_BEGIN

/** @name gio_gpu_target_config::flags
 * @{ */
#define GIO_GPU_BACKING_HOST 1u /**< Backing store in mapped pinned host memory (else HBM). */
#define GIO_GPU_RINGS_HOST 2u   /**< SQ, CQ entries and doorbells in mapped pinned host memory. */
#define GIO_GPU_NO_DATA 4u      /**< Check and complete commands without moving data. */
#define GIO_GPU_MODEL 8u        /**< Apply the SSD timing model. */
#define GIO_GPU_SCOPE_SYS 16u   /**< Order ring accesses at system scope (URI scope=sys; default GPU scope). */
#define GIO_GPU_PROFILE 32u     /**< Time the executor's steps into gio_gpu_ctl::prof (URI profile=1). */
#define GIO_GPU_CHECK 64u       /**< Queue pairs check each command's data pointer (URI check=1; giouring/ring/check.h). */
/** @} */

/** @brief Most executor warps per SM (URI `warps`): the executor kernel is compiled for blocks of
 *  at most this many warps (__launch_bounds__), so that every allowed launch fits the registers. */
#define GIO_GPU_EXEC_MAX_WARPS 16u

/** @brief Largest data segments of one command on the GPU executor (more: Invalid Field). */
#define GIO_GPU_EXEC_MAX_SEGS 16u

/** @brief The SSD timing model (figures measured with it are modelled, not measured). */
struct gio_ssd_model {
	float read_gbps;  /**< Device read bandwidth alone, GB/s. */
	float write_gbps; /**< Device write bandwidth alone, GB/s. */
	float mixed_gbps; /**< Total bandwidth when reads and writes mix (Tutti: about 12 GB/s). */
	float lat_us;     /**< Latency of every command, microseconds. */
};

/** @brief What gio_gpu_target_open() parsed from a URI. */
struct gio_gpu_target_config {
	uint64_t size;        /**< Namespace bytes. */
	uint32_t lba_shift;   /**< log2 of the logical block size. */
	uint32_t sgls;        /**< SGLS the target reports. */
	uint32_t mdts;        /**< MDTS the target reports. */
	uint32_t queues;      /**< I/O queue pairs. */
	uint32_t depth;       /**< Entries per SQ and per CQ. */
	uint32_t exec_blocks; /**< Executor blocks (SMs). */
	uint32_t exec_warps;  /**< Warps per executor block. */
	uint32_t flags;       /**< GIO_GPU_*. */
	struct gio_ssd_model model; /**< With GIO_GPU_MODEL. */
};

/** @brief Shared between the host and the executor (mapped pinned host memory). */
struct gio_gpu_ctl {
	uint32_t stop;              /**< Host: 1 stops the executor. */
	uint32_t rsvd;              /**< Zero. */
	unsigned long long batches; /**< Executor: fetch batches served. */
	/** With GIO_GPU_PROFILE (URI profile=1), nanoseconds summed over the executor's warps (lane
	 * 0's %globaltimer): [0] fetching batches that had commands, [1] reading and checking their
	 * SQEs, [2] moving data (and the timing model's wait), [3] posting CQEs, [4] passes over a
	 * warp's queues that found nothing (sleep excluded), [5] how many such passes. */
	unsigned long long prof[6];
};

/** @brief Regions gio_gpu_target_register() can hold. */
#define GIO_GPU_MAX_REGIONS 64u

/**
 * @brief A GPU-executed software target (host handle).
 *
 * The state the executor and the producers use lives in device memory (`tgt`, `bar`, `map`,
 * `regions`, `qps`, `slots`); the host keeps images of it (`host_tgt`, `bar_host`, `map_host`,
 * `regions_host`, `qps_host`, `slots_host`) that gio_gpu_target_prepare() (and so
 * gio_gpu_target_start()) copies to the device and that gio_gpu_target_stop() (or
 * gio_gpu_target_read_back() after a fused launch) copies back: read counters and queue pair
 * state from the images, after a stop; a restart goes on from what was read back. Device
 * pointers are for kernels only: the host must not dereference them.
 */
struct gio_gpu_target {
	struct gio_gpu_target_config cfg; /**< As opened. */
	struct gio_tgt *tgt;              /**< Device: the target core's state (from host_tgt). */
	struct gio_tgt_bar *bar;          /**< Device view of the registers and doorbells: HBM, or the device pointer of mapped pinned host memory (rings=host). */
	struct gio_dma_map *map;          /**< Device: the registered memory's table. */
	struct gio_dma_region *regions;   /**< Device: its regions, GIO_GPU_MAX_REGIONS. */
	unsigned char *backing;           /**< Device pointer of namespace byte 0. */
	unsigned char *backing_host;      /**< Host pointer of it when in host memory, else NULL. */
	struct gio_qp *qps;               /**< Device: the queue pairs producers use, cfg.queues of them (gio_gpu_target_qp()). */
	struct gio_cmd_slot *slots;       /**< Device: their command slots. */
	unsigned char *rings;             /**< SQ and CQ memory (device pointer). */
	unsigned char *rings_host;        /**< Host pointer of it when in host memory, else NULL. */
	struct gio_gpu_ctl *ctl;          /**< Host pointer; ctl_dev is the device's view. */
	struct gio_gpu_ctl *ctl_dev;      /**< Device pointer of ctl. */
	struct gio_tgt host_tgt;          /**< Host image of the target state: bring-up, and read back at stop. Its bar is bar_host and its map &map_host (the device's copy points at bar and map). */
	struct gio_tgt_bar *bar_host;     /**< Host image of the registers and doorbells (HBM rings, read back at stop), or with rings=host the host pointer of the mapped ones, shared with the device. */
	struct gio_dma_map map_host;      /**< Host image of the region table (over regions_host). */
	struct gio_dma_region regions_host[GIO_GPU_MAX_REGIONS]; /**< Host image of regions. */
	struct gio_qp *qps_host;          /**< Host image of qps (its pointers are the device's), as of the last stop or read-back. */
	struct gio_cmd_slot *slots_host;  /**< Host image of slots. */
	struct gio_qp_check *check;       /**< Device: what the queue pairs check commands against with check=1 (gio_qp::check), else NULL. */
	struct gio_qp_check check_host;   /**< Host image of check as of the last stop or read-back: gio_qp_check::refused, gio_qp_check::fault_addr. */
	void *stream;                     /**< The target's stream (a cudaStream_t, non-blocking): its memory's allocation, clears and copies, and the executor unless started on another. */
	void *exec_stream;                /**< The stream the running executor was launched on: stream, or one the target made on the SMs of gio_gpu_target_start_on()'s (destroyed once the executor ended). */
	int running;                      /**< Between start and stop. */
	void *state;                      /**< Library-internal: the device allocation holding tgt, bar (HBM rings), map, regions, qps and slots. */
	void *xfer;                       /**< Library-internal: pinned staging with the layout of state, for the copies. */
	size_t state_bytes;               /**< Library-internal: the size of state and xfer. */
};

/**
 * @brief Parses a GPU target URI into a configuration.
 * @param uri  `mem://hbm?...` or `mem://host?exec=gpu&...` (see the file comment).
 * @param cfg  receives the configuration.
 * @return 0, or `-EINVAL` with a message (gio_last_error()) naming the bad part.
 *
 * Any host thread; no CUDA call (it is in `giouring::host`).
 */
int gio_gpu_target_parse(const char *uri, struct gio_gpu_target_config *cfg);

/**
 * @brief Opens a GPU-executed target: allocates its memory, brings the controller up and
 * creates its I/O queue pairs (the executor is not running yet).
 * @param uri  see the file comment.
 * @param out  receives the target.
 * @return 0, `-EINVAL` (bad URI; gio_last_error() says what), `-ENODEV` (no GPU), `-EIO`
 *         (bring-up failed), `-ETIME` (clearing the memory on the target's stream did not
 *         finish within 10 s: the device runs kernels that leave no SM; the memory is then left
 *         allocated), or a CUDA error as gio_cuda_errno() (giouring/host/ctx.h) maps it, the
 *         message naming the call: `-ENOMEM` where an allocation failed (HBM or pinned memory),
 *         `-EOPNOTSUPP` where the device has no stream-ordered allocator.
 *
 * Any host thread, with the device to use current. Returns once the memory is allocated and
 * cleared: other streams may fill the backing store right away.
 */
int gio_gpu_target_open(const char *uri, struct gio_gpu_target **out);

/**
 * @brief Registers device-accessible memory for data pointers.
 * @param g     the target (not running).
 * @param ptr   device pointer (HBM, or the device pointer of mapped host memory).
 * @param len   bytes.
 * @param addr  receives the bus address to put in data pointers (= @p ptr).
 * @return 0, `-EBUSY` while the executor runs, `-ENOSPC` past GIO_GPU_MAX_REGIONS, `-EINVAL`.
 *
 * Any host thread; not concurrently with another call on the same target. The region reaches the
 * device at the next gio_gpu_target_prepare() (or gio_gpu_target_start()): register first.
 */
int gio_gpu_target_register(struct gio_gpu_target *g, void *ptr, size_t len, uint64_t *addr);

/**
 * @brief Queue pair @p i (0-based) for producers on the device.
 * @param g  the target.
 * @param i  0 to cfg.queues - 1.
 * @return a device pointer (for kernels; the host must not dereference it: its host image is
 *         `g->qps_host[i]`), or NULL for a bad index.
 *
 * Any host thread.
 */
struct gio_qp *gio_gpu_target_qp(const struct gio_gpu_target *g, uint32_t i);

/**
 * @brief Copies the target's state (the host images) to the device and resets the control
 * block, without launching anything (gio_gpu_target_start() does it; a fused launch calls it
 * itself).
 * @param g  the target, not running.
 * @return 0, `-EINVAL` (NULL), `-EBUSY` when running, `-ETIME` (the copy on the target's stream
 *         did not finish within 5 s), or a CUDA error as gio_cuda_errno() maps it, with a
 *         message.
 *
 * Any host thread. Waits for the copy (polled), so a kernel launched afterwards on any stream
 * sees the state. After a stop it copies what the stop read back: a restart goes on from there.
 */
int gio_gpu_target_prepare(struct gio_gpu_target *g);

/**
 * @brief Loads the executor kernel's module now.
 * @return 0, or `-EINVAL` (a CUDA error as gio_cuda_errno() maps it) with a message.
 *
 * Any host thread. With lazy loading (CUDA's default) a module is loaded at its kernel's first
 * use, and loading one waits until no kernel runs on the device: measured on the H200, a
 * gio_gpu_target_start() beside an engine's kernel that never ends waited for it. Call this
 * before any such kernel starts (or run with CUDA_MODULE_LOADING=EAGER); gio_gpu_target_start()
 * then loads nothing.
 */
int gio_gpu_target_load(void);

/**
 * @brief Launches the persistent executor kernel on its stream.
 * @param g  the target.
 * @return 0, `-EBUSY` when already running, or an error of gio_gpu_target_prepare(),
 *         gio_gpu_preload() or the launch (a CUDA error as gio_cuda_errno() maps it: `-E2BIG`
 *         where the blocks do not fit), with a message.
 *
 * Any host thread. Preloads the executor kernel first (and every kernel given to
 * gio_gpu_preload() before, giouring/host/launch.h). Producers run on other streams; they must
 * not need more SMs than remain.
 */
int gio_gpu_target_start(struct gio_gpu_target *g);

/**
 * @brief gio_gpu_target_start() on the SMs of a stream of the caller's, e.g. the executors' side
 * of an SM partition (::GIO_SM_EXEC, giouring/host/partition.h), apart from the SMs compute
 * kernels take.
 * @param g       the target.
 * @param stream  a `cudaStream_t` of the target's device whose SMs (its green context's, or the
 *                device's for an ordinary stream) the executor runs on, or NULL (the target's own
 *                stream, as gio_gpu_target_start()). The executor is launched on a new stream on
 *                those SMs (gio_gpu_target::exec_stream), not on @p stream: kernels of one stream
 *                run one after another, so several targets handed one stream would otherwise
 *                leave all executors but the first waiting for ever. That stream is destroyed
 *                once the executor ended (gio_gpu_target_stop()).
 * @return as gio_gpu_target_start(); `-EINVAL` for a NULL @p g; the CUDA error's errno when the
 *         stream cannot be made.
 *
 * Any host thread. The executor's blocks must all fit on those SMs at once beside whatever else
 * persists there (one block per SM: gio_gpu_target_config::exec_blocks SMs free on that side).
 */
int gio_gpu_target_start_on(struct gio_gpu_target *g, void *stream);

/**
 * @brief Stops the executor, waits for it, and reads the state back into the host images.
 * @param g           the target.
 * @param timeout_ms  how long to wait for the kernel to end, and then for the read-back.
 * @param st          receives the target's counters, or NULL.
 * @return 0 (also when not running), `-ETIME` (the kernel did not end: the device is wedged; or
 *         the read-back did not finish; the message says which), or a CUDA error as
 *         gio_cuda_errno() maps it (`-EIO` for a fault of the executor: the CUDA context is
 *         lost).
 *
 * Any host thread. Polls the target's stream alone: other kernels may go on running.
 */
int gio_gpu_target_stop(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st);

/**
 * @brief Reads the device state back into the host images (host_tgt, bar_host, qps_host,
 * slots_host) after a fused launch: one that ran gio_gpu_exec_loop() itself, after
 * gio_gpu_target_prepare().
 * @param g           the target.
 * @param timeout_ms  how long to wait for the copy.
 * @param st          receives the target's counters, or NULL.
 * @return 0, `-EINVAL` (NULL), `-EBUSY` (an executor of gio_gpu_target_start() runs: stop it,
 *         which reads back itself), `-ETIME` (the copy did not finish), or a CUDA error as
 *         gio_cuda_errno() maps it.
 *
 * Any host thread, once the launch that ran the executor loop has ended (the state is read as it
 * is in device memory). A later prepare goes on from what was read.
 */
int gio_gpu_target_read_back(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st);

/**
 * @brief Stops the executor (5 s at most) and frees everything.
 * @param g  the target, or NULL.
 * @return 0, or the error of gio_gpu_target_stop(). When the executor did not end (`-ETIME`) the
 *         memory is not freed: the kernel may still use it; otherwise it is.
 *
 * Any host thread, once no kernel on another stream uses the target's memory (producers ended):
 * the device memory is released stream-ordered after the target's own work (cudaFreeAsync), and
 * the pinned host memory goes to the process's cache (gio_cuda_trim(), giouring/host/ctx.h),
 * so close waits for no other kernel.
 */
int gio_gpu_target_close(struct gio_gpu_target *g);

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_GPU_TARGET_H */
