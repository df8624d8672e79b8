/**
 * @file giouring/target/gpu_target.cuh
 * @brief The software NVMe target run by the GPU: a persistent executor kernel on its own SMs.
 *
 * CUDA only (host and device code). It opens a target from a URI, as gio_ctx_open() does for the
 * CPU executor:
 *
 * | URI | backing store | rings (SQ, CQ, doorbells) |
 * | --- | --- | --- |
 * | `mem://hbm?size=8G` | HBM | HBM (default) or `rings=host` |
 * | `mem://host?exec=gpu&size=8G` | mapped pinned host memory | HBM (default) or `rings=host` |
 *
 * Query parameters: `size` (bytes, K M G T suffixes; required), `lba` (512 to 65536, default
 * 4096), `sgls` (0, 1, 2; default 1), `mdts` (0 to 20, default 7), `queues` (1 to 64, default 16),
 * `depth` (entries per SQ and CQ, a power of two from 2 to 4096, default 1024), `sms` (executor
 * blocks, one per SM, default 4), `warps` (warps per executor block, 1 to 16, default 8), `rings`
 * (`hbm` or `host`), `data` (`1`, or `0`: commands are checked, walked and completed but no byte
 * moves: for command-rate measurements), and the SSD timing model (DESIGN.md section 3):
 * `model_read_gbps`, `model_write_gbps`, `model_mixed_gbps` (device bandwidth, the mixed figure
 * applies to a batch holding both), `model_lat_us` (per-command latency). With a model, completions
 * are held until the modelled time: figures measured with it are **modelled**, say so.
 * `profile=1` times the executor's steps (gio_gpu_ctl::prof). `scope` (`gpu`, the default, or `sys`): the memory scope of the ring protocol's ordering. Every
 * party of these queue pairs runs on this GPU, so GPU scope suffices (GIO_QP_GPU_SCOPE); `sys`
 * measures what system scope costs. The queue pairs are for producers on this GPU only.
 *
 * The executor kernel serves the I/O queues only: the controller is brought up and its queues are
 * created on the host (the same target core, giouring/target/core.h, executes the admin commands), then
 * gio_gpu_target_start() launches the executor. Every queue pair is served by one warp, the one
 * owning its CQ (CQ c by warp (c - 1) % warps): the warp reads the SQ tail doorbells of its queues
 * a lane each, fetches up to 32 commands of a queue at once (gio_tgt_fetch_batch_at()), a lane
 * checks and walks each, the warp moves each command's data cooperatively (16 bytes a lane), and each lane
 * posts its completion (gio_tgt_post_at()). The executor's SMs stand in for the SSD's controller:
 * count them apart from the SMs of the I/O (submission) kernel.
 *
 * Producers use gio_gpu_target_qp() queue pairs with the verbs of giouring/device/verbs.cuh. Bus addresses
 * are device pointers of memory registered with gio_gpu_target_register() (before the start).
 *
 * Launch order (BENCH.md, "Trap"): gio_gpu_target_start() loads the executor kernel, and the kernels
 * you name with gio_gpu_preload(), before its persistent launch; call gio_gpu_preload() for every
 * kernel you will launch while the executor runs, or set CUDA_MODULE_LOADING=EAGER.
 */
#ifndef GIOURING_TARGET_GPU_TARGET_CUH
#define GIOURING_TARGET_GPU_TARGET_CUH

#if !defined(__CUDACC__)
#error "giouring/target/gpu_target.cuh is CUDA code: compile it with nvcc"
#endif

#include <cuda_runtime.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../host/ctx.h"
#include "../device/verbs.cuh"
#include "../proto/prep.h"
#include "../proto/status.h"
#include "core.h"
#include "../host/uri.h"

/* The host library's error channel (gio_last_error(), giouring/host/ctx.h): gio__fail() sets the
 * message; internal, defined in src/error.c. */
extern "C" int gio__fail(int rc, const char *fmt, ...);

/** @name gio_gpu_target_config::flags
 * @{ */
#define GIO_GPU_BACKING_HOST 1u /**< Backing store in mapped pinned host memory (else HBM). */
#define GIO_GPU_RINGS_HOST 2u   /**< SQ, CQ entries and doorbells in mapped pinned host memory. */
#define GIO_GPU_NO_DATA 4u      /**< Check and complete commands without moving data. */
#define GIO_GPU_MODEL 8u        /**< Apply the SSD timing model. */
#define GIO_GPU_SCOPE_SYS 16u   /**< Order ring accesses at system scope (URI scope=sys; default GPU scope). */
#define GIO_GPU_PROFILE 32u     /**< Time the executor's steps into gio_gpu_ctl::prof (URI profile=1). */
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
	cudaStream_t stream;              /**< The executor's stream (non-blocking). */
	int running;                      /**< Between start and stop. */
};

/** @brief Regions gio_gpu_target_register() can hold. */
#define GIO_GPU_MAX_REGIONS 64u

/* ---- executor (device) ------------------------------------------------------------------- */

/* Warp-cooperative copy of one segment; 16 bytes a lane when both ends and the length allow. */
__device__ inline void gio__gpu_copy_warp(unsigned char *dst, const unsigned char *src, uint64_t len)
{
	const unsigned lane = threadIdx.x & 31u;
	if ((((uintptr_t)dst | (uintptr_t)src | len) & 15u) == 0) {
		uint4 *d = (uint4 *)dst;
		const uint4 *s = (const uint4 *)src;
		const uint64_t n = len / 16;
		uint64_t k = lane;
		/* Sixteen loads in flight per lane (8 KiB per warp) before their stores: the source may
		 * be host memory across PCIe, microseconds away under load, and one warp serves each
		 * queue: its bandwidth is what it has in flight over that latency. */
		for (; k + 480 < n; k += 512) {
			uint4 v[16];
#pragma unroll
			for (int u = 0; u < 16; u++)
				v[u] = s[k + 32 * u];
#pragma unroll
			for (int u = 0; u < 16; u++)
				d[k + 32 * u] = v[u];
		}
		for (; k < n; k += 32)
			d[k] = s[k];
	} else {
		for (uint64_t k = lane; k < len; k += 32)
			dst[k] = src[k];
	}
}

/* Serves up to 32 commands of SQ `qid` with the calling warp, its tail doorbell read as `tail`
 * (by a lane of this warp, with an acquire load); returns how many (on every lane). */
__device__ inline uint32_t gio__gpu_serve_warp(struct gio_tgt *t, uint16_t qid, uint32_t tail, unsigned char *backing,
					       uint32_t flags, const struct gio_ssd_model *model, uint32_t nwarps,
					       uint64_t *busy_until, uint64_t *prof)
{
	const unsigned lane = threadIdx.x & 31u;
	uint64_t t0 = prof && lane == 0 ? gio_now_ns() : 0, t1 = 0;
	struct gio_xfer_seg segs[GIO_GPU_EXEC_MAX_SEGS];
	struct gio_tgt_io io;
	struct gio_sqe sqe;
	uint32_t slot = 0;
	/* Lanes without a command still take part in the shuffles below. */
	memset(&io, 0, sizeof(io));
	segs[0].addr = segs[0].len = 0;
	segs[0].flags = 0;
	sqe.cid = 0;
	int n = 0;
	uint16_t st = 0;
	if (lane == 0)
		n = gio_tgt_fetch_batch_at(t, qid, 32, tail, &slot);
	n = __shfl_sync(0xffffffffu, n, 0);
	if (n <= 0)
		return 0;
	slot = __shfl_sync(0xffffffffu, slot, 0);
	__syncwarp(); /* lane 0's new SQ head (the SQHD of the CQEs) before the lanes post */
	if (prof && lane == 0) {
		t1 = gio_now_ns();
		prof[0] += t1 - t0;
	}
	/* The host wrote the entries before its release of the doorbell, which a lane of this warp
	 * acquired, and the warp barrier passed that on. */
	if (flags & GIO_GPU_RINGS_HOST) {
		/* In 16-byte pieces, read so that each load instruction of the warp covers 512
		 * contiguous bytes (piece c = 32 j + lane is piece c % 4 of entry c / 4), which asks
		 * PCIe for whole lines where a lane per entry asked for a sector of each; then a
		 * transpose by shuffles gives lane e entry e. +9% at the best host-ring point, but -9%
		 * with rings in HBM, where the shuffles cost more than the loads they save
		 * (bench/results/2026-11-29-gpu-sqe-coalesce-ab-h200.md). */
		uint4 piece[4];
		uint4 *dst = (uint4 *)&sqe;
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const uint32_t c = 32u * (uint32_t)j + lane;
			piece[j] = make_uint4(0, 0, 0, 0);
			if (c / 4u < (uint32_t)n)
				piece[j] = ((const uint4 *)gio_tgt_sqe(t, qid, slot + c / 4u))[c % 4u];
		}
		/* Entry e, piece p sits in piece[e / 8] of lane 4 (e % 8) + p. */
#pragma unroll
		for (int j = 0; j < 4; j++)
#pragma unroll
			for (int p = 0; p < 4; p++) {
				const int src = (int)(4u * (lane % 8u)) + p;
				uint4 v;
				v.x = __shfl_sync(0xffffffffu, piece[j].x, src);
				v.y = __shfl_sync(0xffffffffu, piece[j].y, src);
				v.z = __shfl_sync(0xffffffffu, piece[j].z, src);
				v.w = __shfl_sync(0xffffffffu, piece[j].w, src);
				if (lane / 8u == (unsigned)j)
					dst[p] = v;
			}
	} else if (lane < (unsigned)n) {
		const uint4 *src = (const uint4 *)gio_tgt_sqe(t, qid, slot + lane);
		uint4 *dst = (uint4 *)&sqe;
		dst[0] = src[0];
		dst[1] = src[1];
		dst[2] = src[2];
		dst[3] = src[3];
	}
	if (lane < (unsigned)n) {
		io.xfer.segs = segs;
		io.xfer.cap = GIO_GPU_EXEC_MAX_SEGS;
		st = gio_tgt_io_prepare(t, &sqe, &io);
	}
	const int moves = lane < (unsigned)n && st == 0 && io.bytes && io.opc != GIO_NVM_OPC_FLUSH;
	if (prof) {
		__syncwarp();
		if (lane == 0) {
			t0 = gio_now_ns();
			prof[1] += t0 - t1;
		}
	}
	if (!(flags & GIO_GPU_NO_DATA)) {
		/* One command at a time, the whole warp copying its segments in order. */
		unsigned todo = __ballot_sync(0xffffffffu, moves);
		while (todo) {
			const int k = __ffs(todo) - 1;
			const uint32_t nseg = __shfl_sync(0xffffffffu, io.xfer.n, k);
			const int is_write = __shfl_sync(0xffffffffu, (int)io.is_write, k);
			const int zeroes = __shfl_sync(0xffffffffu, io.opc == GIO_NVM_OPC_WRITE_ZEROES, k);
			uint64_t off = __shfl_sync(0xffffffffu, io.offset, k);
			if (zeroes) {
				const uint64_t bytes = __shfl_sync(0xffffffffu, io.bytes, k);
				for (uint64_t b = lane; b < bytes; b += 32)
					backing[off + b] = 0;
			}
			for (uint32_t s = 0; s < nseg && !zeroes; s++) {
				const uint32_t mine = s < GIO_GPU_EXEC_MAX_SEGS ? s : 0;
				const uint64_t addr = __shfl_sync(0xffffffffu, segs[mine].addr, k);
				const uint64_t len = __shfl_sync(0xffffffffu, segs[mine].len, k);
				const uint32_t fl = __shfl_sync(0xffffffffu, segs[mine].flags, k);
				if (!(fl & GIO_XFER_BIT_BUCKET)) {
					unsigned char *host = (unsigned char *)gio_dma_map_find(t->map, addr, len);
					if (is_write)
						gio__gpu_copy_warp(backing + off, host, len);
					else
						gio__gpu_copy_warp(host, backing + off, len);
				}
				off += len;
			}
			todo &= todo - 1;
		}
	}
	if (flags & GIO_GPU_MODEL) {
		/* Each executor warp owns 1/nwarps of the device's bandwidth: the batch completes when
		 * its bytes have gone through that share, and no earlier than the latency. */
		const uint64_t bytes = moves ? io.bytes : 0;
		uint64_t rd = moves && !io.is_write ? bytes : 0, wr = moves && io.is_write ? bytes : 0;
		for (int o = 16; o; o >>= 1) {
			rd += __shfl_xor_sync(0xffffffffu, rd, o);
			wr += __shfl_xor_sync(0xffffffffu, wr, o);
		}
		if (lane == 0) {
			const float gbps = rd && wr ? model->mixed_gbps : wr ? model->write_gbps : model->read_gbps;
			const uint64_t now = gio_now_ns();
			const uint64_t start = *busy_until > now ? *busy_until : now;
			const uint64_t xfer_ns = gbps > 0 ? (uint64_t)((double)(rd + wr) * nwarps / gbps) : 0;
			const uint64_t lat_ns = (uint64_t)(model->lat_us * 1000.0f);
			*busy_until = start + xfer_ns;
			const uint64_t done = *busy_until > now + lat_ns ? *busy_until : now + lat_ns;
			while (gio_now_ns() < done)
				__nanosleep(256);
		}
		__syncwarp();
	}
	/* The data written by every lane before each lane's release of its CQE status (the warp
	 * barrier orders them at CTA scope; the release at system scope is cumulative). */
	__syncwarp();
	if (prof && lane == 0) {
		t1 = gio_now_ns();
		prof[2] += t1 - t0;
	}
	if (lane < (unsigned)n)
		gio_tgt_post_at(t, qid, lane, sqe.cid, st, 0);
	const uint32_t nerr = (uint32_t)__popc(__ballot_sync(0xffffffffu, lane < (unsigned)n && (st & 0x7ffu)));
	__syncwarp();
	if (lane == 0)
		gio_tgt_post_done(t, qid, (uint32_t)n, nerr);
	__syncwarp();
	if (prof && lane == 0)
		prof[3] += gio_now_ns() - t1;
	return (uint32_t)n;
}

/**
 * @brief The executor loop, for the calling warp: serves the I/O queues whose CQ it owns until
 * gio_gpu_ctl::stop.
 * @param t        the target (device memory).
 * @param backing  namespace byte 0 (device pointer).
 * @param ctl      the control block (device pointer of mapped host memory).
 * @param flags    GIO_GPU_NO_DATA, GIO_GPU_MODEL.
 * @param model    the timing model.
 * @param warp     this warp's index among the executor's warps.
 * @param nwarps   the executor's warps.
 *
 * All 32 lanes of the warp. gio_gpu_exec_kernel() runs it on every warp; a program may instead
 * call it from blocks of its own kernel (a fused launch: compute-sanitizer serializes separate
 * kernels, so a persistent executor and its producers must share one launch there), after
 * gio_gpu_target_prepare().
 */
__device__ inline void gio_gpu_exec_loop(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl,
					 uint32_t flags, const struct gio_ssd_model *model, uint32_t warp, uint32_t nwarps)
{
	const unsigned lane = threadIdx.x & 31u;
	uint64_t busy_until = 0;
	uint32_t idle = 0, owned = 0;
	unsigned long long batches = 0;
	uint64_t prof[6] = {0, 0, 0, 0, 0, 0};
	uint64_t *pr = (flags & GIO_GPU_PROFILE) ? prof : (uint64_t *)0;
	/* The queues are fixed while the executor runs (created before the start): list once the
	 * SQs whose CQ this warp owns (posting to a CQ is not atomic, so one warp serves each CQ),
	 * owned queue k in mine[k / 32] of lane k % 32. */
	uint16_t mine[(GIO_TGT_MAX_IO_QUEUES + 31) / 32];
	for (uint32_t base = 1; base <= GIO_TGT_MAX_IO_QUEUES; base += 32) {
		const uint32_t q = base + lane;
		int m = 0;
		if (q <= GIO_TGT_MAX_IO_QUEUES) {
			const struct gio_tgt_queue *sq = &t->sq[q];
			m = gio_load_acquire_in(t->scope, &sq->live) && (sq->cqid - 1u) % nwarps == warp;
		}
		for (unsigned bal = __ballot_sync(0xffffffffu, m); bal; bal &= bal - 1, owned++) {
			const uint32_t one = __shfl_sync(0xffffffffu, q, __ffs(bal) - 1);
			if (owned % 32 == lane)
				mine[owned / 32] = (uint16_t)one;
		}
	}
	for (;;) {
		uint32_t did = 0;
		const uint64_t pass_start = pr && lane == 0 ? gio_now_ns() : 0;
		/* Each lane reads the tail doorbell of one owned queue: with rings in host memory one
		 * round trip across PCIe per 32 queues, where a queue at a time paid one each. */
		for (uint32_t c = 0; c * 32 < owned; c++) {
			uint32_t q = 0, tail = 0;
			int pending = 0;
			if (c * 32 + lane < owned) {
				q = mine[c];
				if (gio_load_acquire_in(t->scope, &t->sq[q].live)) {
					tail = gio_load_acquire_in(t->scope, gio__tgt_doorbell(t, (uint16_t)q, 0));
					pending = tail != t->sq[q].idx;
				}
			}
			for (unsigned todo = __ballot_sync(0xffffffffu, pending); todo; todo &= todo - 1) {
				const int k = __ffs(todo) - 1;
				const uint32_t n = gio__gpu_serve_warp(t, (uint16_t)__shfl_sync(0xffffffffu, q, k),
								       __shfl_sync(0xffffffffu, tail, k), backing, flags, model,
								       nwarps, &busy_until, pr);
				did += n;
				batches += n ? 1 : 0;
			}
		}
		if (did) {
			idle = 0;
			continue;
		}
		if (pr && lane == 0 && owned) {
			prof[4] += gio_now_ns() - pass_start;
			prof[5]++;
		}
		/* Idle: back off up to ~2 us (a warp without queues: 100 us), and look at the host's
		 * stop flag (across PCIe) only every 64th idle pass. */
		if (idle % 64 == 63 || !owned) {
			int stop = 0;
			if (lane == 0)
				stop = (int)gio_load_acquire(&ctl->stop);
			if (__shfl_sync(0xffffffffu, stop, 0))
				break;
		}
		__nanosleep(!owned ? 100000u : idle < 5 ? 64u << idle : 2048u);
		idle++;
	}
	if (lane == 0 && batches)
		atomicAdd(&ctl->batches, batches);
	if (lane == 0 && pr)
		for (int i = 0; i < 6; i++)
			atomicAdd(&ctl->prof[i], (unsigned long long)prof[i]);
}

/**
 * @brief The executor kernel: every warp runs gio_gpu_exec_loop().
 * @param t        the target (device memory).
 * @param backing  namespace byte 0 (device pointer).
 * @param ctl      the control block (device pointer of mapped host memory).
 * @param flags    GIO_GPU_NO_DATA, GIO_GPU_MODEL.
 * @param model    the timing model (by value).
 *
 * Launched by gio_gpu_target_start(): exec_blocks blocks of exec_warps warps.
 */
__global__ void __launch_bounds__(GIO_GPU_EXEC_MAX_WARPS * 32) gio_gpu_exec_kernel(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl, uint32_t flags,
				    struct gio_ssd_model model)
{
	gio_gpu_exec_loop(t, backing, ctl, flags, &model, (blockIdx.x * blockDim.x + threadIdx.x) / 32u,
			  gridDim.x * blockDim.x / 32u);
}

/* ---- host ------------------------------------------------------------------------------- */

#define GIO__CUDA_TRY(call, what)                                                                           \
	do {                                                                                                 \
		cudaError_t e_ = (call);                                                                     \
		if (e_ != cudaSuccess)                                                                       \
			return gio__fail(-ENOMEM, "giouring: %s: %s (%s)", what, cudaGetErrorString(e_), #call);     \
	} while (0)

/* One query parameter as a number (giouring/host/uri.h) within [lo, hi]. */
static inline int gio__gpu_param(const char *key, const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t x = 0;
	if (gio_uri_number(v, &x) || x < lo || x > hi)
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s: a number from %" PRIu64 " to %" PRIu64 " (K, M, G, T allowed)",
				 key, v, lo, hi);
	*out = x;
	return 0;
}

/**
 * @brief Parses a GPU target URI into a configuration.
 * @param uri  `mem://hbm?...` or `mem://host?exec=gpu&...` (see the file comment).
 * @param cfg  receives the configuration.
 * @return 0, or `-EINVAL` with a message (gio_last_error()) naming the bad part.
 *
 * Any host thread; no CUDA call.
 */
static inline int gio_gpu_target_parse(const char *uri, struct gio_gpu_target_config *cfg)
{
	char buf[1024];
	char *q, *save = NULL, *kv;
	int have_size = 0, exec_gpu = 0;
	memset(cfg, 0, sizeof(*cfg));
	cfg->lba_shift = 12;
	cfg->sgls = 1;
	cfg->mdts = 7;
	cfg->queues = 16;
	cfg->depth = 1024;
	cfg->exec_blocks = 4;
	cfg->exec_warps = 8;
	if (!uri || strlen(uri) >= sizeof(buf))
		return gio__fail(-EINVAL, "giouring: GPU target URI missing or longer than %zu bytes", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", uri);
	q = strchr(buf, '?');
	if (q)
		*q++ = 0;
	if (!strcmp(buf, "mem://host"))
		cfg->flags |= GIO_GPU_BACKING_HOST;
	else if (strcmp(buf, "mem://hbm"))
		return gio__fail(-EINVAL, "giouring: '%s': the GPU executor serves mem://hbm and mem://host?exec=gpu", buf);
	for (kv = q ? strtok_r(q, "&", &save) : NULL; kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		uint64_t v = 0;
		int rc = 0;
		if (!eq)
			return gio__fail(-EINVAL, "giouring: URI parameter '%s' has no value", kv);
		*eq++ = 0;
		if (!strcmp(kv, "exec")) {
			if (strcmp(eq, "gpu") && strcmp(eq, "cpu"))
				return gio__fail(-EINVAL, "giouring: exec=%s: cpu or gpu", eq);
			if (!strcmp(eq, "cpu"))
				return gio__fail(-EINVAL, "giouring: exec=cpu: open it with gio_ctx_open()");
			exec_gpu = 1;
		} else if (!strcmp(kv, "rings")) {
			if (!strcmp(eq, "host"))
				cfg->flags |= GIO_GPU_RINGS_HOST;
			else if (strcmp(eq, "hbm"))
				return gio__fail(-EINVAL, "giouring: rings=%s: hbm or host", eq);
		} else if (!strcmp(kv, "size")) {
			rc = gio__gpu_param(kv, eq, 4096, UINT64_MAX, &cfg->size);
			have_size = 1;
		} else if (!strcmp(kv, "lba")) {
			rc = gio__gpu_param(kv, eq, 512, 65536, &v);
			if (!rc && (v & (v - 1)))
				rc = gio__fail(-EINVAL, "giouring: lba=%s: a power of two", eq);
			for (cfg->lba_shift = 9; !rc && (1ull << cfg->lba_shift) < v; cfg->lba_shift++)
				;
		} else if (!strcmp(kv, "sgls")) {
			rc = gio__gpu_param(kv, eq, 0, 2, &v);
			cfg->sgls = (uint32_t)v;
		} else if (!strcmp(kv, "mdts")) {
			rc = gio__gpu_param(kv, eq, 0, 20, &v);
			cfg->mdts = (uint32_t)v;
		} else if (!strcmp(kv, "queues")) {
			rc = gio__gpu_param(kv, eq, 1, GIO_TGT_MAX_IO_QUEUES, &v);
			cfg->queues = (uint32_t)v;
		} else if (!strcmp(kv, "depth")) {
			rc = gio__gpu_param(kv, eq, 2, 4096, &v);
			if (!rc && (v & (v - 1)))
				rc = gio__fail(-EINVAL, "giouring: depth=%s: a power of two", eq);
			cfg->depth = (uint32_t)v;
		} else if (!strcmp(kv, "sms")) {
			rc = gio__gpu_param(kv, eq, 1, 1024, &v);
			cfg->exec_blocks = (uint32_t)v;
		} else if (!strcmp(kv, "warps")) {
			rc = gio__gpu_param(kv, eq, 1, GIO_GPU_EXEC_MAX_WARPS, &v);
			cfg->exec_warps = (uint32_t)v;
		} else if (!strcmp(kv, "scope")) {
			if (!strcmp(eq, "sys"))
				cfg->flags |= GIO_GPU_SCOPE_SYS;
			else if (strcmp(eq, "gpu"))
				return gio__fail(-EINVAL, "giouring: scope=%s: gpu or sys", eq);
		} else if (!strcmp(kv, "profile")) {
			rc = gio__gpu_param(kv, eq, 0, 1, &v);
			if (v)
				cfg->flags |= GIO_GPU_PROFILE;
		} else if (!strcmp(kv, "data")) {
			rc = gio__gpu_param(kv, eq, 0, 1, &v);
			if (v == 0)
				cfg->flags |= GIO_GPU_NO_DATA;
		} else if (!strcmp(kv, "model_read_gbps") || !strcmp(kv, "model_write_gbps") ||
			   !strcmp(kv, "model_mixed_gbps") || !strcmp(kv, "model_lat_us")) {
			char *end;
			const double x = strtod(eq, &end);
			if (*end || !(x >= 0) || x > 1e6)
				return gio__fail(-EINVAL, "giouring: %s=%s: a number from 0 to 1e6", kv, eq);
			float *f = !strcmp(kv, "model_read_gbps")    ? &cfg->model.read_gbps
				   : !strcmp(kv, "model_write_gbps") ? &cfg->model.write_gbps
				   : !strcmp(kv, "model_mixed_gbps") ? &cfg->model.mixed_gbps
								      : &cfg->model.lat_us;
			*f = (float)x;
			cfg->flags |= GIO_GPU_MODEL;
		} else {
			return gio__fail(-EINVAL,
					 "giouring: unknown URI parameter '%s' (size, lba, sgls, mdts, queues, depth, sms, warps, "
					 "rings, data, scope, profile, exec, model_read_gbps, model_write_gbps, model_mixed_gbps, model_lat_us)",
					 kv);
		}
		if (rc)
			return rc;
	}
	if ((cfg->flags & GIO_GPU_BACKING_HOST) && !exec_gpu)
		return gio__fail(-EINVAL, "giouring: mem://host without exec=gpu is the CPU executor's: gio_ctx_open()");
	if (!have_size)
		return gio__fail(-EINVAL, "giouring: %s needs size=", buf);
	if (cfg->size & ((1ull << cfg->lba_shift) - 1))
		return gio__fail(-EINVAL, "giouring: size=%" PRIu64 " is not a multiple of the %u-byte block", cfg->size,
				 1u << cfg->lba_shift);
	if ((cfg->flags & GIO_GPU_MODEL) && cfg->model.mixed_gbps == 0)
		cfg->model.mixed_gbps = cfg->model.read_gbps < cfg->model.write_gbps ? cfg->model.read_gbps : cfg->model.write_gbps;
	return 0;
}

/**
 * @brief Loads a kernel now, so that launching it later cannot wait on module loading while a
 * persistent kernel spins (BENCH.md, "Trap").
 * @param kernel  the `__global__` function.
 * @return 0, or `-EINVAL` with a message.
 *
 * Any host thread, before gio_gpu_target_start() (or any persistent launch).
 */
static inline int gio_gpu_preload(const void *kernel)
{
	cudaFuncAttributes fa;
	cudaError_t e = cudaFuncGetAttributes(&fa, kernel);
	if (e != cudaSuccess)
		return gio__fail(-EINVAL, "giouring: cudaFuncGetAttributes: %s", cudaGetErrorString(e));
	return 0;
}

/**
 * @brief Makes a kernel take a whole SM per block, so that a grid of N blocks uses N SMs.
 * @param kernel  the `__global__` function.
 * @param smem    receives the dynamic shared memory to launch it with: a little more than half
 *                of an SM's (the kernel need not use it), so no two of its blocks share an SM.
 * @return 0, or `-EINVAL` with a message.
 *
 * Any host thread. The I/O kernel and the executor use it, so that their SM counts are SMs.
 */
static inline int gio_gpu_one_block_per_sm(const void *kernel, size_t *smem)
{
	int dev = 0, per_sm = 0, per_block = 0;
	cudaError_t e = cudaGetDevice(&dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
	if (e == cudaSuccess)
		e = cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
	const int want = per_sm / 2 + 1024 < per_block ? per_sm / 2 + 1024 : per_block;
	if (e == cudaSuccess)
		e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, want);
	if (e != cudaSuccess)
		return gio__fail(-EINVAL, "giouring: one block per SM: %s", cudaGetErrorString(e));
	*smem = (size_t)want;
	return 0;
}

static inline void gio__gpu_free(struct gio_gpu_target *g)
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
		cudaStreamDestroy(g->stream);
	free(g);
}

/* Runs one admin command on the host copy of the target; the queue memory is resolved through
 * `qmap` (the target's own map holds data regions only). */
static inline int gio__gpu_admin(struct gio_gpu_target *g, const struct gio_sqe *sqe, const struct gio_dma_map *qmap)
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

static inline int gio__gpu_alloc(struct gio_gpu_target *g)
{
	const struct gio_gpu_target_config *c = &g->cfg;
	const uint32_t nq = c->queues;
	const size_t sq_bytes = ((size_t)c->depth * GIO_SQE_BYTES + 4095) & ~(size_t)4095;
	const size_t cq_bytes = ((size_t)c->depth * GIO_CQE_BYTES + 4095) & ~(size_t)4095;
	const size_t ring_bytes = nq * (sq_bytes + cq_bytes);
	GIO__CUDA_TRY(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "executor stream");
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
static inline int gio_gpu_target_open(const char *uri, struct gio_gpu_target **out)
{
	struct gio_gpu_target *g;
	struct gio_tgt_config tc;
	int ndev = 0, rc;
	uint32_t q;
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
		rc = gio__gpu_alloc(g);
	if (rc) {
		gio__gpu_free(g);
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
		gio__gpu_free(g);
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
			rc = gio__gpu_admin(g, &sqe, &qmap);
		if (!rc)
			rc = gio_prep_create_sq(&sqe, (uint16_t)q, g->cfg.depth, (uint16_t)q, (uint64_t)(uintptr_t)sq);
		if (!rc)
			rc = gio__gpu_admin(g, &sqe, &qmap);
		if (!rc)
			rc = gio_qp_init(&g->qps[q - 1], (struct gio_sqe *)sq, g->cfg.depth, (struct gio_cqe *)cq, g->cfg.depth,
					 g->slots + (size_t)(q - 1) * g->cfg.depth, (uint16_t)q,
					 (uint32_t *)((char *)g->bar + gio_sq_doorbell_offset(g->bar->regs.cap, (uint16_t)q)),
					 (uint32_t *)((char *)g->bar + gio_cq_doorbell_offset(g->bar->regs.cap, (uint16_t)q)),
					 gpu_scope ? GIO_QP_GPU_SCOPE : 0);
	}
	if (rc) {
		gio__gpu_free(g);
		return rc < 0 && rc != -EINVAL ? rc : gio__fail(-EIO, "giouring: %s: creating the I/O queues failed", uri);
	}
	*out = g;
	return 0;
}

/**
 * @brief Registers device-accessible memory for data pointers.
 * @param g     the target (not running).
 * @param ptr   device pointer (HBM, or the device pointer of mapped host memory).
 * @param len   bytes.
 * @param addr  receives the bus address to put in data pointers (= @p ptr).
 * @return 0, `-EBUSY` while the executor runs, `-ENOSPC` past GIO_GPU_MAX_REGIONS, `-EINVAL`.
 */
static inline int gio_gpu_target_register(struct gio_gpu_target *g, void *ptr, size_t len, uint64_t *addr)
{
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

/**
 * @brief Queue pair @p i (0-based) for producers on the device.
 * @param g  the target.
 * @param i  0 to cfg.queues - 1.
 * @return a pointer valid on the device (managed memory), or NULL for a bad index.
 */
static inline struct gio_qp *gio_gpu_target_qp(const struct gio_gpu_target *g, uint32_t i)
{
	return g && i < g->cfg.queues ? &g->qps[i] : NULL;
}

/**
 * @brief Copies the target's state to the device and resets the control block, without
 * launching anything (gio_gpu_target_start() does it; a fused launch calls it itself).
 * @param g  the target, not running.
 * @return 0, `-EBUSY` when running, or `-ENOMEM` with a message.
 */
static inline int gio_gpu_target_prepare(struct gio_gpu_target *g)
{
	if (!g)
		return gio__fail(-EINVAL, "giouring: gio_gpu_target_prepare: NULL target");
	if (g->running)
		return gio__fail(-EBUSY, "giouring: the GPU executor is already running");
	memset(g->ctl, 0, sizeof(*g->ctl));
	GIO__CUDA_TRY(cudaMemcpy(g->tgt, &g->host_tgt, sizeof(g->host_tgt), cudaMemcpyHostToDevice), "target state");
	GIO__CUDA_TRY(cudaDeviceSynchronize(), "before the executor");
	return 0;
}

/**
 * @brief Launches the persistent executor kernel on its stream.
 * @param g  the target.
 * @return 0, `-EBUSY` when already running, or `-EINVAL` / `-ENOMEM` with a message.
 *
 * Preloads the executor kernel first (and every kernel given to gio_gpu_preload() before).
 * Producers run on other streams; they must not need more SMs than remain.
 */
static inline int gio_gpu_target_start(struct gio_gpu_target *g)
{
	int rc = gio_gpu_preload((const void *)gio_gpu_exec_kernel);
	if (!rc)
		rc = gio_gpu_target_prepare(g);
	if (rc)
		return rc;
	size_t smem = 0;
	rc = gio_gpu_one_block_per_sm((const void *)gio_gpu_exec_kernel, &smem);
	if (rc)
		return rc;
	gio_gpu_exec_kernel<<<g->cfg.exec_blocks, g->cfg.exec_warps * 32, smem, g->stream>>>(
		g->tgt, g->backing, g->ctl_dev, g->cfg.flags, g->cfg.model);
	GIO__CUDA_TRY(cudaGetLastError(), "executor launch");
	g->running = 1;
	return 0;
}

/**
 * @brief Stops the executor and waits for it, up to @p timeout_ms.
 * @param g           the target.
 * @param timeout_ms  how long to wait for the kernel to end.
 * @param st          receives the target's counters, or NULL.
 * @return 0, or `-ETIME` (the kernel did not end: the device is wedged; the message says so).
 */
static inline int gio_gpu_target_stop(struct gio_gpu_target *g, uint32_t timeout_ms, struct gio_tgt_stats *st)
{
	uint64_t deadline;
	if (!g || !g->running)
		return 0;
	__atomic_store_n(&g->ctl->stop, 1u, __ATOMIC_RELEASE);
	deadline = gio_deadline_in((uint64_t)timeout_ms * 1000000ull);
	while (cudaStreamQuery(g->stream) == cudaErrorNotReady) {
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: the GPU executor did not stop within %u ms", timeout_ms);
		gio_host_sleep_ns(100000);
	}
	GIO__CUDA_TRY(cudaStreamSynchronize(g->stream), "executor");
	g->running = 0;
	GIO__CUDA_TRY(cudaMemcpy(&g->host_tgt, g->tgt, sizeof(g->host_tgt), cudaMemcpyDeviceToHost), "target state");
	if (st)
		gio_tgt_get_stats(&g->host_tgt, st);
	return 0;
}

/**
 * @brief Stops the executor (5 s at most) and frees everything.
 * @param g  the target, or NULL.
 * @return 0, or the error of gio_gpu_target_stop() (memory is then not freed: the kernel may
 *         still use it).
 */
static inline int gio_gpu_target_close(struct gio_gpu_target *g)
{
	int rc;
	if (!g)
		return 0;
	rc = gio_gpu_target_stop(g, 5000, NULL);
	if (rc)
		return rc;
	gio__gpu_free(g);
	return 0;
}

#endif /* GIOURING_TARGET_GPU_TARGET_CUH */
