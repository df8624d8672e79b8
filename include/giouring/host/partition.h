/**
 * @file giouring/host/partition.h
 * @brief The SM partition: the device's SMs split once into an I/O partition and a compute
 * partition (CUDA green contexts), with streams in each (in `giouring::gpu`).
 *
 * A persistent I/O kernel (a GPU executor, a polling I/O kernel) must never take SMs from
 * compute: a kernel launched on a stream of the I/O partition runs on its SMs only, one of the
 * compute partition on the others, whatever else is queued. The split is made once per device
 * and the streams are handed out from it: two separate splits of one device may hand out the
 * same SMs, so a process makes one partition and distributes its streams. Streams of a partition
 * keep their SMs under CUDA graph capture: a captured kernel runs in the partition of the stream
 * it was captured from.
 *
 * Sizes: a partition holds at least `min_partition_sms` SMs and a multiple of `alignment_sms`
 * (the driver's minSmPartitionSize and smCoscheduledAlignment: 8 and 8 on Hopper), so the I/O
 * partition asked for is rounded up to them; the compute partition gets every other SM. A third
 * side, for GPU executors (::GIO_SM_EXEC), is made when asked for: a GPU-executed target standing
 * in for a drive then runs its persistent executor there (gio_gpu_target_start_on()), not on SMs
 * that compute kernels also take. (What an executor costs compute on other SMs is a separate
 * matter: on the H200 its warps' copies from mapped host memory slowed a model's layers wherever
 * the executor ran, by as much with this side as without: bench/results/2026-12-05-exec-partition-h200.md.)
 *
 * Where green contexts are unavailable (a driver older than the CUDA the library was built with, a
 * GPU that cannot split), gio_sm_partition_create() fails with `-EOPNOTSUPP` and a
 * message that says why; with ::GIO_SM_PARTITION_FALLBACK it gives ordinary streams instead
 * (`isolated` 0), and everything in the library runs on them unchanged.
 *
 * An engine that made its own green contexts (or its own split) hands them over with
 * gio_sm_partition_adopt(); every call of the library that takes a stream takes any stream, the
 * caller's own included.
 *
 * Plain C declarations: streams are `cudaStream_t` (the same handles as the driver's `CUstream`)
 * and green contexts `CUgreenCtx`, passed as `void *`. Creation and destruction wait for the
 * device: make the partition before persistent kernels start and destroy it after they ended.
 */
#ifndef GIOURING_HOST_PARTITION_H
#define GIOURING_HOST_PARTITION_H

#include <stdint.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/** @brief A split of one device's SMs (opaque). */
struct gio_sm_partition;

/** @brief Where green contexts are unavailable, ordinary streams instead of `-EOPNOTSUPP`. */
#define GIO_SM_PARTITION_FALLBACK 1u

/** @brief Which side of the partition a stream belongs to. */
enum gio_sm_side {
	GIO_SM_IO = 0,      /**< The I/O partition. */
	GIO_SM_COMPUTE = 1, /**< The compute partition: every SM the other sides do not hold. */
	GIO_SM_EXEC = 2,    /**< The executors' partition (only with gio_sm_partition_params::exec_sms):
			         SMs for GPU-executed targets' executor kernels, the stand-ins for the
			         drives' controllers, so that they hold none of compute's or I/O's SMs
			         (gio_gpu_target_start_on()). */
};

/** @brief What gio_sm_partition_create() is asked for. */
struct gio_sm_partition_params {
	int device;      /**< CUDA device ordinal. */
	uint32_t io_sms; /**< SMs for I/O, at least 1: rounded up to the partition granularity. */
	uint32_t flags;  /**< ::GIO_SM_PARTITION_FALLBACK, or 0. */
	uint32_t exec_sms; /**< SMs for GPU executors (::GIO_SM_EXEC), rounded up as io_sms; 0: no such
			        side. A real drive needs none: a bench that stands GPU-executed targets in
			        for drives keeps them off the SMs whose time it measures. */
};

/** @brief What a partition holds. */
struct gio_sm_partition_info {
	uint32_t device_sms;        /**< The device's SMs. */
	uint32_t io_sms;            /**< SMs of the I/O partition (all of them when not isolated). */
	uint32_t compute_sms;       /**< SMs of the compute partition (all of them when not isolated). */
	uint32_t min_partition_sms; /**< The driver's smallest partition (0 when not known). */
	uint32_t alignment_sms;     /**< The driver's partition granularity (0 when not known). */
	uint32_t isolated;          /**< 1: the sides run on disjoint SMs; 0: ordinary streams. */
	uint32_t adopted;           /**< 1: the caller's green contexts (gio_sm_partition_adopt()). */
	uint32_t exec_sms;          /**< SMs of the executors' side (all of them when not isolated); 0
				         without one. */
};

/**
 * @brief Splits device @p p->device's SMs into an I/O and a compute partition (and an executors'
 * one with @p p->exec_sms), each with a stream of its own.
 * @param p    what to split: @p p->io_sms SMs for I/O and @p p->exec_sms for executors, each rounded
 *             up to the granularity.
 * @param out  receives the partition.
 * @return 0; `-EINVAL` (NULL, @p io_sms 0, unknown flags, a device ordinal out of range); `-ERANGE`
 *         (the I/O and executors' partitions, rounded up, would leave compute without SMs: the
 *         message gives the granularity and the device's SMs); `-EOPNOTSUPP` where green contexts
 *         are unavailable (the message says why; with ::GIO_SM_PARTITION_FALLBACK, 0 and ordinary
 *         streams instead); `-EBUSY` while GPU executors of this process run
 *         (gio_gpu_target_start(): the creation would wait for them for ever); `-ENOMEM`; or the
 *         CUDA error's errno, with the failing call named.
 *
 * Any host thread; waits for the device (create it before persistent kernels start: with one of
 * the caller's own running, it does not return until that kernel ends).
 */
int gio_sm_partition_create(const struct gio_sm_partition_params *p, struct gio_sm_partition **out);

/**
 * @brief Wraps the caller's own green contexts: streams are then made in them.
 * @param io_green_ctx       the I/O side's `CUgreenCtx`.
 * @param compute_green_ctx  the compute side's `CUgreenCtx`, or NULL (the compute side's streams
 *                           are then ordinary streams of the current device).
 * @param out                receives the partition; destroying it leaves the green contexts alone.
 * @return 0; `-EINVAL` (NULL @p io_green_ctx or @p out, or two green contexts holding more SMs
 *         than the device has: they came from two splits and overlap); `-EOPNOTSUPP` (no green
 *         contexts in this CUDA); or the CUDA error's errno. `isolated` is 1 where both sides are
 *         green contexts (the caller vouches that they are one split's), 0 with @p
 *         compute_green_ctx NULL.
 *
 * Any host thread.
 */
int gio_sm_partition_adopt(void *io_green_ctx, void *compute_green_ctx, struct gio_sm_partition **out);

/**
 * @brief What the partition holds.
 * @param part  the partition.
 * @param info  receives it.
 * @return 0, or `-EINVAL` for NULL.
 *
 * Any host thread.
 */
int gio_sm_partition_info(const struct gio_sm_partition *part, struct gio_sm_partition_info *info);

/**
 * @brief The stream the partition made for one side (non-blocking, default priority).
 * @param part  the partition.
 * @param side  ::GIO_SM_IO, ::GIO_SM_COMPUTE or ::GIO_SM_EXEC.
 * @return the `cudaStream_t`, owned by the partition (gio_sm_partition_destroy() destroys it); NULL
 *         for NULL @p part, an unknown @p side, or ::GIO_SM_EXEC of a partition without one.
 *
 * Any host thread.
 */
void *gio_sm_partition_stream(const struct gio_sm_partition *part, enum gio_sm_side side);

/**
 * @brief Makes one more stream on one side, for the caller to keep.
 * @param part      the partition.
 * @param side      ::GIO_SM_IO, ::GIO_SM_COMPUTE or ::GIO_SM_EXEC (where the partition has one).
 * @param priority  the stream's priority (lower is higher, as `cudaStreamCreateWithPriority`).
 * @param stream    receives the `cudaStream_t` (non-blocking); the caller destroys it with
 *                  `cudaStreamDestroy`, before the partition.
 * @return 0; `-EINVAL` (NULL, unknown @p side, ::GIO_SM_EXEC without one); or the CUDA error's
 *         errno.
 *
 * Any host thread.
 */
int gio_sm_partition_stream_create(struct gio_sm_partition *part, enum gio_sm_side side, int priority,
				   void **stream);

/**
 * @brief SMs a stream's kernels may run on: its green context's, or the device's for an ordinary
 * stream. A launcher sizes an I/O kernel's grid with it (one block per SM of the partition).
 * @param stream  a `cudaStream_t`, the caller's own or the partition's (NULL: the legacy default
 *                stream of the current device).
 * @param sms     receives the count.
 * @return 0; `-EINVAL` for a NULL @p sms; or the CUDA error's errno.
 *
 * Any host thread.
 */
int gio_stream_sm_count(void *stream, uint32_t *sms);

/**
 * @brief Destroys the partition's streams and green contexts (not adopted ones).
 * @param part  the partition, or NULL.
 * @return 0, or the first CUDA error's errno (everything is released anyway).
 *
 * Any host thread, once no work of the partition's streams is pending: it waits for them.
 */
int gio_sm_partition_destroy(struct gio_sm_partition *part);

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_PARTITION_H */
