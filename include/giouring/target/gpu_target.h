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
 * bandwidth; the mixed figure applies to a batch holding both), `model_lat_us` (per-command
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

/** @brief A GPU-executed software target (host handle; its pointers are device-accessible). */
struct gio_gpu_target {
	struct gio_gpu_target_config cfg; /**< As opened. */
	struct gio_tgt *tgt;              /**< The target core's state, in device memory. */
	struct gio_tgt_bar *bar;          /**< Registers and doorbells (managed, or mapped host). */
	struct gio_dma_map *map;          /**< Registered memory (managed). */
	struct gio_dma_region *regions;   /**< Its regions (managed), GIO_GPU_MAX_REGIONS. */
	unsigned char *backing;           /**< Device pointer of namespace byte 0. */
	unsigned char *backing_host;      /**< Host pointer of it when in host memory, else NULL. */
	struct gio_qp *qps;               /**< Queue pairs (managed), cfg.queues of them. */
	struct gio_cmd_slot *slots;       /**< Their command slots (managed). */
	unsigned char *rings;             /**< SQ and CQ memory (device pointer). */
	unsigned char *rings_host;        /**< Host pointer of it when in host memory, else NULL. */
	struct gio_gpu_ctl *ctl;          /**< Host pointer; ctl_dev is the device's view. */
	struct gio_gpu_ctl *ctl_dev;      /**< Device pointer of ctl. */
	struct gio_tgt host_tgt;          /**< Host copy of the target for bring-up, and read back at stop. */
	void *stream;                     /**< The executor's stream (a cudaStream_t, non-blocking). */
	int running;                      /**< Between start and stop. */
};

/** @brief Regions gio_gpu_target_register() can hold. */
#define GIO_GPU_MAX_REGIONS 64u


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
 * @return 0, `-EINVAL` (bad URI; gio_last_error() says what), `-ENODEV` (no GPU), `-ENOMEM` (a
 *         CUDA allocation failed; the message names it), or `-EIO` (bring-up failed).
 *
 * Any host thread, with the device to use current.
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
 * Any host thread; not concurrently with another call on the same target.
 */
int gio_gpu_target_register(struct gio_gpu_target *g, void *ptr, size_t len, uint64_t *addr);

/**
 * @brief Queue pair @p i (0-based) for producers on the device.
 * @param g  the target.
 * @param i  0 to cfg.queues - 1.
 * @return a pointer valid on the device (managed memory), or NULL for a bad index.
 *
 * Any host thread.
 */
struct gio_qp *gio_gpu_target_qp(const struct gio_gpu_target *g, uint32_t i);

/**
 * @brief Copies the target's state to the device and resets the control block, without
 * launching anything (gio_gpu_target_start() does it; a fused launch calls it itself).
 * @param g  the target, not running.
 * @return 0, `-EINVAL` (NULL), `-EBUSY` when running, or `-ENOMEM` with a message.
 *
 * Any host thread.
 */
int gio_gpu_target_prepare(struct gio_gpu_target *g);

/**
 * @brief Launches the persistent executor kernel on its stream.
 * @param g  the target.
 * @return 0, `-EBUSY` when already running, or `-EINVAL` / `-ENOMEM` with a message.
 *
 * Any host thread. Preloads the executor kernel first (and every kernel given to
 * gio_gpu_preload() before, giouring/host/launch.h). Producers run on other streams; they must
 * not need more SMs than remain.
 */
int gio_gpu_target_start(struct gio_gpu_target *g);

/**
 * @brief Stops the executor and waits for it, up to @p timeout_ms.
 * @param g           the target.
 * @param timeout_ms  how long to wait for the kernel to end.
 * @param st          receives the target's counters, or NULL.
 * @return 0, or `-ETIME` (the kernel did not end: the device is wedged; the message says so).
 *
 * Any host thread.
 */
int gio_gpu_target_stop(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st);

/**
 * @brief Stops the executor (5 s at most) and frees everything.
 * @param g  the target, or NULL.
 * @return 0, or the error of gio_gpu_target_stop() (memory is then not freed: the kernel may
 *         still use it).
 *
 * Any host thread.
 */
int gio_gpu_target_close(struct gio_gpu_target *g);

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_GPU_TARGET_H */
