/**
 * @file giouring/target/gpu_exec.cuh
 * @brief The GPU executor's device code: the loop each executor warp runs over its queues.
 *
 * CUDA only. gio_gpu_target_start() (giouring/target/gpu_target.h) launches it as a persistent
 * kernel of its own; include this header to run gio_gpu_exec_loop() from blocks of your own
 * kernel instead (a fused launch, e.g. under compute-sanitizer, which serializes kernels).
 *
 * Each executor warp serves the queue pairs whose CQ it owns (CQ c by warp (c - 1) % warps):
 * it reads their SQ tail doorbells a lane each, fetches up to 32 commands of a queue at once
 * (gio_tgt_fetch_batch_at()), a lane checks and walks each, the warp moves each command's data
 * cooperatively (16 bytes a lane), and each lane posts its completion (gio_tgt_post_at()).
 */
#ifndef GIOURING_TARGET_GPU_EXEC_CUH
#define GIOURING_TARGET_GPU_EXEC_CUH

#if !defined(__CUDACC__)
#error "giouring/target/gpu_exec.cuh is CUDA code: compile it with nvcc"
#endif

#include <stdint.h>
#include <string.h>

#include "../device/verbs.cuh"
#include "../device/copy.cuh"
#include "../proto/status.h"
#include "core.h"
#include "gpu_target.h"
#include "model.h"

/** @brief Owned queues whose state an executor warp keeps with its lanes (one a lane). */
#define GIO_GPU_EXEC_LANE_QUEUES 32u

/**
 * @brief An executor warp's copy of the target's region table (the target's memory registrations
 * and configuration do not change while the executor runs): in shared memory, checking a command
 * reads no global memory, where every acquire of a doorbell would make each of those reads go to
 * L2 again. (The rest of the rules, and the state of its queues, the warp keeps in registers.)
 */
struct gio_gpu_exec_env {
	struct gio_dma_map map;                             /**< `regions` points at `regions` below. */
	struct gio_dma_region regions[GIO_GPU_MAX_REGIONS]; /**< The registered regions. */
	/** Where gio_gpu_exec_loop_wide() keeps the state of the warp's owned queue l (its SQ and
	 *  CQ; lane l's) while the loop runs: gio_gpu_exec_loop() keeps it in lane l's registers. */
	struct gio_tgt_queue sq[GIO_GPU_EXEC_LANE_QUEUES];
	struct gio_tgt_queue cq[GIO_GPU_EXEC_LANE_QUEUES]; /**< See `sq`. */
};

/** @brief Most commands an executor warp takes from one SQ at once: GIO_GPU_EXEC_ROUNDS per lane
 *  (1 to 4; a build may set it, e.g. to compare). */
#ifndef GIO_GPU_EXEC_ROUNDS
#define GIO_GPU_EXEC_ROUNDS 2u
#endif

/* Reads commands k = 32 r + lane (r < rounds) of a fetched batch of n at `slot` into sqe[r]: every
 * round's loads are issued before any is used, so that one memory latency serves them all. A batch
 * is shorter than its queue (n < depth), so slot + k < 2 depth. */
__device__ inline void gio__gpu_read_sqes(const struct gio_sqe *entries, uint32_t depth, uint32_t slot, uint32_t n,
					  uint32_t flags, struct gio_sqe sqe[GIO_GPU_EXEC_ROUNDS])
{
	const unsigned lane = threadIdx.x & 31u;
	if (flags & GIO_GPU_RINGS_HOST) {
		/* In 16-byte pieces, read so that each load instruction of the warp covers 512
		 * contiguous bytes (piece c = 32 j + lane is piece c % 4 of entry c / 4), which asks
		 * PCIe for whole lines where a lane per entry asked for a sector of each; then a
		 * transpose by shuffles gives lane e entry e. +9% at the best host-ring point, but -9%
		 * with rings in HBM, where the shuffles cost more than the loads they save
		 * (bench/results/2026-11-29-gpu-sqe-coalesce-ab-h200.md). */
		uint4 piece[GIO_GPU_EXEC_ROUNDS][4];
#pragma unroll
		for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++)
#pragma unroll
			for (int j = 0; j < 4; j++) {
				const uint32_t c = 32u * (uint32_t)j + lane, e = 32u * r + c / 4u;
				piece[r][j] = make_uint4(0, 0, 0, 0);
				if (e < n)
					piece[r][j] = ((const uint4 *)&entries[gio__tgt_wrap(slot + e, depth)])[c % 4u];
			}
		/* Entry e of a round, piece p sits in piece[e / 8] of lane 4 (e % 8) + p. */
#pragma unroll
		for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++) {
			uint4 *dst = (uint4 *)&sqe[r];
#pragma unroll
			for (int j = 0; j < 4; j++)
#pragma unroll
				for (int p = 0; p < 4; p++) {
					const int src = (int)(4u * (lane % 8u)) + p;
					uint4 v;
					v.x = __shfl_sync(0xffffffffu, piece[r][j].x, src);
					v.y = __shfl_sync(0xffffffffu, piece[r][j].y, src);
					v.z = __shfl_sync(0xffffffffu, piece[r][j].z, src);
					v.w = __shfl_sync(0xffffffffu, piece[r][j].w, src);
					if (lane / 8u == (unsigned)j)
						dst[p] = v;
				}
		}
		return;
	}
#pragma unroll
	for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++)
		if (32u * r + lane < n) {
			const uint4 *src = (const uint4 *)&entries[gio__tgt_wrap(slot + 32u * r + lane, depth)];
			uint4 *dst = (uint4 *)&sqe[r];
			dst[0] = src[0];
			dst[1] = src[1];
			dst[2] = src[2];
			dst[3] = src[3];
		}
}

/* Moves the data of the prepared commands of one round (those with `moves`), one command at a
 * time, the whole warp copying its segments in order: from `one` where the lane's command has a
 * single Data Block (`single`), else from its walked list `segs`. Only the shuffled values of the
 * command's own lane are used. */
__device__ inline void gio__gpu_move_round(const struct gio_tgt_io_rules *rules, const struct gio_tgt_io *io,
					   const struct gio_xfer_seg *one, int single, const struct gio_xfer_seg *segs,
					   int moves, unsigned char *backing)
{
	const unsigned lane = threadIdx.x & 31u;
	unsigned todo = __ballot_sync(0xffffffffu, moves);
	while (todo) {
		const int k = __ffs(todo) - 1;
		const uint32_t nseg = __shfl_sync(0xffffffffu, io->xfer.n, k);
		const int is_write = __shfl_sync(0xffffffffu, (int)io->is_write, k);
		const int zeroes = __shfl_sync(0xffffffffu, io->opc == GIO_NVM_OPC_WRITE_ZEROES, k);
		const int one_seg = __shfl_sync(0xffffffffu, single, k);
		uint64_t off = __shfl_sync(0xffffffffu, io->offset, k);
		if (zeroes) {
			const uint64_t bytes = __shfl_sync(0xffffffffu, io->bytes, k);
			for (uint64_t b = lane; b < bytes; b += 32)
				backing[off + b] = 0;
		}
		for (uint32_t s = 0; s < nseg && !zeroes; s++) {
			uint64_t addr, len;
			uint32_t fl;
			if (one_seg) { /* the same on every lane */
				addr = __shfl_sync(0xffffffffu, one->addr, k);
				len = __shfl_sync(0xffffffffu, one->len, k);
				fl = __shfl_sync(0xffffffffu, one->flags, k);
			} else {
				const uint32_t mine = s < GIO_GPU_EXEC_MAX_SEGS ? s : 0;
				addr = __shfl_sync(0xffffffffu, segs[mine].addr, k);
				len = __shfl_sync(0xffffffffu, segs[mine].len, k);
				fl = __shfl_sync(0xffffffffu, segs[mine].flags, k);
			}
			if (!(fl & GIO_XFER_BIT_BUCKET)) {
				unsigned char *host = (unsigned char *)gio__tgt_rules_find(rules, addr, len);
				if (is_write)
					gio_copy_warp(backing + off, host, len, 0);
				else
					gio_copy_warp(host, backing + off, len, 0);
			}
			off += len;
		}
		todo &= todo - 1;
	}
}

/* Books a round's bytes (rd, wr: this lane's) on the device's timeline and returns, on every lane,
 * when their modelled transfer ends. The device is one timeline for all its warps (clock->busy_ns:
 * when its booked transfers end), so that it gives its bandwidth however many queues are busy, as a
 * drive does (a per-warp share of it gave one busy queue 1/nwarps of it). A round is booked when
 * its commands are fetched, before their data moves: a drive's transfer starts when it takes the
 * command, and the move here is that transfer, so booking after it would add the copy's time to
 * the modelled one and leave the timeline idle while warps copy. The rate is the mixed one where
 * reads and writes are in flight at once: the round holds both, or it reads while a booked write
 * has not ended (or writes while a read has not), whichever queue booked it; a drive's reads and
 * writes share its mixed bandwidth then. A round booked alone keeps its own rate even if the other
 * direction arrives during it: a drive cannot know what comes next either. */
__device__ inline uint64_t gio__gpu_model_book(const struct gio_ssd_model *model, uint64_t rd, uint64_t wr,
					       struct gio_tgt_model_clock *clock)
{
	for (int o = 16; o; o >>= 1) {
		rd += __shfl_xor_sync(0xffffffffu, rd, o);
		wr += __shfl_xor_sync(0xffffffffu, wr, o);
	}
	unsigned long long end = 0;
	if ((threadIdx.x & 31u) == 0 && rd + wr) {
		const uint64_t now = gio_now_ns();
		const uint64_t xfer_ns = gio__ssd_model_xfer_ns(model->read_gbps, model->write_gbps, model->mixed_gbps, rd, wr,
								*(volatile unsigned long long *)&clock->reads_ns,
								*(volatile unsigned long long *)&clock->writes_ns, now);
		unsigned long long old = *(volatile unsigned long long *)&clock->busy_ns;
		for (;;) { /* this round's slot on the device's timeline */
			const unsigned long long prev =
				atomicCAS(&clock->busy_ns, old, end = (old > now ? old : now) + xfer_ns);
			if (prev == old)
				break;
			old = prev;
		}
		if (rd)
			atomicMax(&clock->reads_ns, end);
		if (wr)
			atomicMax(&clock->writes_ns, end);
	}
	return __shfl_sync(0xffffffffu, (uint64_t)end, 0);
}

/* Holds the executor warp until `done` (%globaltimer ns): the end of its batch's booked transfers,
 * and no earlier than the model's latency after the fetch. */
__device__ inline void gio__gpu_model_hold(uint64_t done)
{
	if ((threadIdx.x & 31u) == 0)
		while (gio_now_ns() < done)
			__nanosleep(256);
	__syncwarp();
}

/* A batch of commands fetched from one SQ (gio__tgt_fetch_q()), and where its entries and its
 * completions go: what the lane that fetched it gives every lane of the warp (gio__gpu_batch_bcast()). */
struct gio__gpu_batch {
	uint64_t sq_entries; /* the SQ's entries */
	uint64_t cq_entries; /* its CQ's entries */
	uint32_t n;          /* commands fetched (0: none) */
	uint32_t slot;       /* SQ slot of the first */
	uint32_t sq_depth;
	uint32_t sqhd;       /* the SQ head after the fetch, for the completions */
	uint32_t cq_idx;     /* CQ slot of the first completion */
	uint32_t cq_depth;
	uint32_t cq_phase;   /* the phase tag at cq_idx */
	uint32_t sqid;
};

/* Fetches up to 32 x GIO_GPU_EXEC_ROUNDS commands of an SQ whose tail doorbell the calling lane read
 * as `tail`, on the state of the SQ and its CQ that this lane serves (qflags as gio__tgt_fetch_q()). */
__device__ inline void gio__gpu_fetch(struct gio_tgt *t, struct gio_tgt_queue *sq, struct gio_tgt_queue *cq,
				      uint32_t sqid, uint32_t tail, uint32_t qflags, struct gio__gpu_batch *b)
{
	const int n = gio__tgt_fetch_q(t, sq, cq, 32u * GIO_GPU_EXEC_ROUNDS, tail, &b->slot, qflags);
	b->n = n > 0 ? (uint32_t)n : 0u;
	b->sq_entries = (uint64_t)(uintptr_t)sq->entries;
	b->cq_entries = (uint64_t)(uintptr_t)cq->entries;
	b->sq_depth = sq->depth;
	b->sqhd = sq->idx;
	b->cq_idx = cq->idx;
	b->cq_depth = cq->depth;
	b->cq_phase = cq->phase;
	b->sqid = sqid;
}

/* Lane `src`'s batch, on every lane. */
__device__ inline struct gio__gpu_batch gio__gpu_batch_bcast(const struct gio__gpu_batch *b, int src)
{
	struct gio__gpu_batch o;
	o.sq_entries = __shfl_sync(0xffffffffu, b->sq_entries, src);
	o.cq_entries = __shfl_sync(0xffffffffu, b->cq_entries, src);
	o.n = __shfl_sync(0xffffffffu, b->n, src);
	o.slot = __shfl_sync(0xffffffffu, b->slot, src);
	o.sq_depth = __shfl_sync(0xffffffffu, b->sq_depth, src);
	o.sqhd = __shfl_sync(0xffffffffu, b->sqhd, src);
	o.cq_idx = __shfl_sync(0xffffffffu, b->cq_idx, src);
	o.cq_depth = __shfl_sync(0xffffffffu, b->cq_depth, src);
	o.cq_phase = __shfl_sync(0xffffffffu, b->cq_phase, src);
	o.sqid = __shfl_sync(0xffffffffu, b->sqid, src);
	return o;
}

/* Serves a fetched batch (b->n > 0, the same on every lane) with the calling warp: checks, moves and
 * completes its commands; returns how many of them failed (on every lane). The caller advances the
 * queues' state over the batch (gio__tgt_post_done_q()). Command k of the batch is lane k % 32's, in
 * round k / 32: the fixed costs of a batch (the fetch, a memory latency for the entries, one release
 * fence for the completions) are paid once for all of them, where a producer keeps several batches
 * of 32 outstanding. */
__device__ inline uint32_t gio__gpu_serve_warp(const struct gio_tgt_io_rules *rules, const struct gio__gpu_batch *b,
					       unsigned char *backing, uint32_t flags, uint32_t scope,
					       const struct gio_ssd_model *model, struct gio_tgt_model_clock *clock,
					       uint64_t *prof)
{
	const unsigned lane = threadIdx.x & 31u;
	uint64_t t_entry = prof && lane == 0 ? gio_now_ns() : 0, t_moved = 0, tdata = 0, data_ns = 0;
	struct gio_xfer_seg segs[GIO_GPU_EXEC_MAX_SEGS];
	struct gio_sqe sqe[GIO_GPU_EXEC_ROUNDS];
	uint16_t st[GIO_GPU_EXEC_ROUNDS];
	const int n = (int)b->n;
	const uint32_t slot = b->slot, cq_idx = b->cq_idx, cq_depth = b->cq_depth, cq_phase = b->cq_phase;
	const uint32_t sqhd = b->sqhd, sq_depth = b->sq_depth;
	const uint64_t cq_entries = b->cq_entries, sq_entries = b->sq_entries;
	const uint16_t qid = (uint16_t)b->sqid;
	/* The host wrote the entries before its release of the doorbell, which a lane of this warp
	 * acquired, and the warp barrier passed that on. */
	gio__gpu_read_sqes((const struct gio_sqe *)(uintptr_t)sq_entries, sq_depth, slot, (uint32_t)n, flags, sqe);
	/* Dwords 0 to 2 of each of this lane's CQEs now, while the entries load: none depends on the
	 * command, the fetch reserved the slots (the host consumed them), and nothing reads them before
	 * Dword 3's phase tag, which is stored after the release fence below. By then these stores
	 * have long reached memory, where written just before the fence they were what it waited for. */
	uint32_t *dw3[GIO_GPU_EXEC_ROUNDS];
	uint32_t tag[GIO_GPU_EXEC_ROUNDS];
#pragma unroll
	for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++) {
		dw3[r] = (uint32_t *)0;
		tag[r] = 0;
		if (32u * r + lane < (uint32_t)n)
			dw3[r] = gio_cqe_dw3(gio__tgt_cqe_put012((void *)(uintptr_t)cq_entries, cq_idx, cq_depth, cq_phase,
								 32u * r + lane, 0, (uint16_t)sqhd, qid, &tag[r]));
	}
	/* The model's latency counts from the fetch; each round's transfer is booked before it moves. */
	uint64_t model_done = flags & GIO_GPU_MODEL ? gio_now_ns() + (uint64_t)(model->lat_us * 1000.0f) : 0;
	const uint32_t rounds = ((uint32_t)n + 31u) / 32u;
#pragma unroll
	for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++) {
		struct gio_tgt_io io;
		struct gio_xfer_seg one;
		int single = 0;
		/* Lanes without a command still take part in the shuffles of the data move. */
		memset(&io, 0, sizeof(io));
		memset(&one, 0, sizeof(one));
		st[r] = 0;
		if (r >= rounds)
			continue; /* the same on every lane */
		const int mine = 32u * r + lane < (uint32_t)n;
		if (mine) {
			/* The common command's one segment stays in registers (`one`): a list walked
			 * into segs[] lives in local memory, whose stores and loads cost every command
			 * when the check wrote its segment there. */
			io.xfer.segs = segs;
			io.xfer.cap = GIO_GPU_EXEC_MAX_SEGS;
			st[r] = gio__tgt_io_check_split(rules, &sqe[r], &io, &one, &single);
		}
		const int moves = mine && st[r] == 0 && io.bytes && io.opc != GIO_NVM_OPC_FLUSH;
		if (flags & GIO_GPU_MODEL) {
			const uint64_t end = gio__gpu_model_book(model, moves && !io.is_write ? io.bytes : 0,
								 moves && io.is_write ? io.bytes : 0, clock);
			model_done = end > model_done ? end : model_done;
		}
		if (prof) {
			__syncwarp();
			if (lane == 0)
				tdata = gio_now_ns();
		}
		if (!(flags & GIO_GPU_NO_DATA))
			gio__gpu_move_round(rules, &io, &one, single, segs, moves, backing);
		if (prof) {
			__syncwarp();
			if (lane == 0)
				data_ns += gio_now_ns() - tdata;
		}
	}
	if (flags & GIO_GPU_MODEL) {
		if (prof && lane == 0)
			tdata = gio_now_ns();
		gio__gpu_model_hold(model_done);
		if (prof && lane == 0)
			data_ns += gio_now_ns() - tdata;
	}
	/* The data written by every lane before each lane's release of its CQE status (the warp
	 * barrier orders them at CTA scope; the release fence at the target's scope is cumulative). */
	__syncwarp();
	if (prof && lane == 0) {
		t_moved = gio_now_ns();
		prof[1] += t_moved - t_entry - data_ns; /* SQE reads and checks */
		prof[2] += data_ns;
	}
	/* Each CQE's Dword 3 (CID and status word, with the phase tag the host polls), by relaxed
	 * stores after one release fence. */
	uint32_t word[GIO_GPU_EXEC_ROUNDS];
	uint32_t nerr = 0;
#pragma unroll
	for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++) {
		/* The round's failed commands, counted by one vote where a sum over the lanes took a
		 * chain of five shuffles. */
		nerr += (uint32_t)__popc(__ballot_sync(0xffffffffu, 32u * r + lane < (uint32_t)n && (st[r] & 0x7ffu)));
		word[r] = GIO_CQE_DW3(sqe[r].cid, (st[r] << 1) | tag[r]);
	}
	gio_fence_release_in(scope);
#pragma unroll
	for (uint32_t r = 0; r < GIO_GPU_EXEC_ROUNDS; r++)
		if (dw3[r])
			gio_store_relaxed_in(scope, dw3[r], word[r]);
	__syncwarp();
	if (prof && lane == 0)
		prof[3] += gio_now_ns() - t_moved;
	return nerr;
}

/* Copies the fields of an SQ's and its CQ's state that a fetch and a post read (back: those they
 * change) between the target (sq, cq) and a lane's copy (lsq, lcq): in registers, the whole of both
 * would be live across the loop. */
__device__ inline void gio__gpu_lane_q(struct gio_tgt_queue *sq, struct gio_tgt_queue *cq, struct gio_tgt_queue *lsq,
				       struct gio_tgt_queue *lcq, int back)
{
	if (back) {
		sq->idx = lsq->idx;
		sq->commands = lsq->commands;
		sq->errors = lsq->errors;
		sq->bad_doorbells = lsq->bad_doorbells;
		cq->idx = lcq->idx;
		cq->phase = lcq->phase;
		cq->inflight = lcq->inflight;
		cq->head_seen = lcq->head_seen;
		return;
	}
	lsq->depth = sq->depth;
	lsq->idx = sq->idx;
	lsq->cqid = sq->cqid;
	lsq->entries = sq->entries;
	lsq->commands = sq->commands;
	lsq->errors = sq->errors;
	lsq->bad_doorbells = sq->bad_doorbells;
	lcq->depth = cq->depth;
	lcq->idx = cq->idx;
	lcq->phase = cq->phase;
	lcq->inflight = cq->inflight;
	lcq->entries = cq->entries;
	lcq->head_seen = cq->head_seen;
}

/* gio_gpu_exec_loop(), with the lanes' queue state in registers (kRegs) or in env's shared memory. */
template <bool kRegs>
__device__ inline void gio__gpu_exec_loop(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl,
					  uint32_t flags, const struct gio_ssd_model *model, uint32_t warp, uint32_t nwarps,
					  struct gio_gpu_exec_env *env)
{
	const unsigned lane = threadIdx.x & 31u;
	/* The rules in registers (each lane its copy, read once): in memory, checking a command read
	 * them through a chain of loads. */
	struct gio_tgt_io_rules own;
	const struct gio_tgt_io_rules *rules = &own;
	gio_tgt_io_rules_of(t, &own);
	if (env && t->map && t->map->count <= GIO_GPU_MAX_REGIONS) {
		for (uint32_t i = lane; i < t->map->count; i += 32u)
			env->regions[i] = t->map->regions[i];
		if (lane == 0) {
			env->map.regions = env->regions;
			env->map.count = t->map->count;
		}
		__syncwarp(); /* the copy before any lane reads it */
		own.map = &env->map;
		own.flags |= GIO_TGT_RULES_MAP_FIXED; /* no acquire per command checked */
	}
	uint32_t idle = 0, owned = 0;
	unsigned long long batches = 0;
	uint64_t prof[6] = {0, 0, 0, 0, 0, 0};
	uint64_t *pr = (flags & GIO_GPU_PROFILE) ? prof : (uint64_t *)0;
	/* The queues are fixed while the executor runs (created before the start): list once the
	 * SQs whose CQ this warp owns (posting to a CQ is not atomic, so one warp serves each CQ),
	 * owned queue k in mine[k / 32] of lane k % 32, as its CQ id << 16 | its SQ id. */
	uint32_t mine[(GIO_TGT_MAX_IO_QUEUES + 31) / 32];
	for (uint32_t base = 1; base <= GIO_TGT_MAX_IO_QUEUES; base += 32) {
		const uint32_t q = base + lane;
		int m = 0;
		if (q <= GIO_TGT_MAX_IO_QUEUES) {
			const struct gio_tgt_queue *sq = &t->sq[q];
			m = gio_load_acquire_in(t->scope, &sq->live) && (sq->cqid - 1u) % nwarps == warp;
		}
		const uint32_t entry = m ? (uint32_t)t->sq[q].cqid << 16 | q : 0u;
		for (unsigned bal = __ballot_sync(0xffffffffu, m); bal; bal &= bal - 1, owned++) {
			const uint32_t one = __shfl_sync(0xffffffffu, entry, __ffs(bal) - 1);
			if (owned % 32 == lane)
				mine[owned / 32] = one;
		}
	}
	/* Lane l keeps the state of its owned queue l (its SQ and CQ) while the loop runs, in its
	 * registers (kRegs) or in env, fetches from it and advances it: lane 0 alone, on the state in
	 * memory, paid a chain of dependent loads for each fetch and post. Only where the warp owns at
	 * most 32 queues, each SQ with a CQ of its own (a copy per SQ of a shared CQ would part), and
	 * where the caller gave `env` (the target's state is then current only when the loop ends). */
	int local = 0;
	struct gio_tgt_queue rsq, rcq;
	memset(&rsq, 0, sizeof(rsq));
	memset(&rcq, 0, sizeof(rcq));
	struct gio_tgt_queue *const lsq = kRegs || !env ? &rsq : &env->sq[lane];
	struct gio_tgt_queue *const lcq = kRegs || !env ? &rcq : &env->cq[lane];
	if (env && owned <= GIO_GPU_EXEC_LANE_QUEUES) {
		int alone = 1;
		if (lane < owned)
			alone = t->cq[mine[0] >> 16].nsq == 1u;
		local = __all_sync(0xffffffffu, alone);
		if (local && lane < owned)
			gio__gpu_lane_q(&t->sq[mine[0] & 0xffffu], &t->cq[mine[0] >> 16], lsq, lcq, 0);
	}
	/* Fixed while the loop runs, so kept in registers: every acquire of a doorbell invalidates the
	 * SM's L1 cache, after which each read of the target's fields (the register block's address,
	 * CAP for the doorbell stride, the scope) went to L2 again, one after the other before the
	 * doorbell's own load. Lane l's doorbell is that of its owned queue l of the first 32; those of
	 * further queues are found when read. */
	const uint32_t scope = t->scope;
	const uint32_t q0 = lane < owned ? mine[0] : 0u;
	const uint32_t *db0 = lane < owned ? gio__tgt_doorbell(t, (uint16_t)q0, 0) : (const uint32_t *)0;
	for (;;) {
		uint32_t did = 0;
		const uint64_t pass_start = pr && lane == 0 ? gio_now_ns() : 0;
		/* Each lane reads the tail doorbell of one owned queue: with rings in host memory one
		 * round trip across PCIe per 32 queues, where a queue at a time paid one each. */
		for (uint32_t c = 0; c * 32 < owned; c++) {
			uint32_t q = 0, tail = 0;
			int pending = 0;
			struct gio__gpu_batch mb;
			mb.n = 0;
			if (c * 32 + lane < owned) {
				q = c ? mine[c] : q0;
				/* The SQ head is this warp's own (moved only by its lanes, before a warp
				 * barrier): loaded before the tail's acquire, both are one round trip. The
				 * queue stays live while the executor runs: it was looked at once, above. */
				const uint32_t head = local ? lsq->idx : t->sq[q & 0xffffu].idx;
				tail = gio_load_acquire_in(scope, c ? gio__tgt_doorbell(t, (uint16_t)q, 0) : db0);
				pending = tail != head;
			}
			/* Every lane with work fetches from its own queue at once. */
			const uint64_t tf0 = pr && lane == 0 ? gio_now_ns() : 0;
			if (local && pending)
				gio__gpu_fetch(t, lsq, lcq, q & 0xffffu, tail, GIO__TGT_Q_PRIVATE, &mb);
			if (pr && local && __any_sync(0xffffffffu, pending) && lane == 0)
				prof[0] += gio_now_ns() - tf0; /* (the vote waited for every lane's fetch) */
			for (unsigned todo = __ballot_sync(0xffffffffu, pending); todo; todo &= todo - 1) {
				const int k = __ffs(todo) - 1;
				const uint32_t qk = __shfl_sync(0xffffffffu, q, k);
				const uint16_t sqid = (uint16_t)qk, cqid = (uint16_t)(qk >> 16);
				const uint64_t tf = pr && lane == 0 ? gio_now_ns() : 0;
				/* The lane that fetched the batch, and so advances the queues after it. */
				const int src = local ? k : 0;
				if (!local) {
					const uint32_t tk = __shfl_sync(0xffffffffu, tail, k);
					if (lane == 0)
						gio__gpu_fetch(t, &t->sq[sqid], &t->cq[cqid], sqid, tk, 0, &mb);
				}
				const struct gio__gpu_batch b = gio__gpu_batch_bcast(&mb, src);
				if (pr && lane == 0)
					prof[0] += gio_now_ns() - tf;
				if (!b.n)
					continue; /* the same on every lane */
				const uint32_t nerr = gio__gpu_serve_warp(rules, &b, backing, flags, scope, model, &t->model, pr);
				if (lane == src) {
					if (local)
						gio__tgt_post_done_q(lsq, lcq, b.n, nerr, GIO__TGT_Q_PRIVATE);
					else
						gio__tgt_post_done_q(&t->sq[sqid], &t->cq[cqid], b.n, nerr, 0);
				}
				__syncwarp(); /* the queues advanced before the next fetch from them */
				did += b.n;
				batches++;
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
	if (local && lane < owned)
		gio__gpu_lane_q(&t->sq[mine[0] & 0xffffu], &t->cq[mine[0] >> 16], lsq, lcq, 1);
	if (lane == 0 && batches)
		atomicAdd(&ctl->batches, batches);
	if (lane == 0 && pr)
		for (int i = 0; i < 6; i++)
			atomicAdd(&ctl->prof[i], (unsigned long long)prof[i]);
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
 * @param env      this warp's own storage for a copy of the target's region table (shared memory
 *                 for speed); with it, the warp's lanes keep its queues' state in their registers
 *                 (written back to @p t when the loop ends, so the target's queue counters are
 *                 current only then). NULL: both are used in @p t every time.
 *
 * All 32 lanes of the warp. gio_gpu_exec_kernel() runs it on every warp; a program may instead
 * call it from blocks of its own kernel (a fused launch: compute-sanitizer serializes separate
 * kernels, so a persistent executor and its producers must share one launch there), after
 * gio_gpu_target_prepare().
 */
__device__ inline void gio_gpu_exec_loop(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl,
					 uint32_t flags, const struct gio_ssd_model *model, uint32_t warp, uint32_t nwarps,
					 struct gio_gpu_exec_env *env)
{
	gio__gpu_exec_loop<true>(t, backing, ctl, flags, model, warp, nwarps, env);
}

/**
 * @brief gio_gpu_exec_loop() for a kernel of more than 8 warps a block: the lanes keep their queues'
 * state in @p env (shared memory) instead of registers, which a 16 warps' share of the register
 * file (128 a thread) holds only by spilling more of the loop: 11% fewer commands/s with the state
 * in registers there (bench/results/2026-12-06-cmdrate-exec-lanes.md).
 * @param t, backing, ctl, flags, model, warp, nwarps, env  as gio_gpu_exec_loop().
 */
__device__ inline void gio_gpu_exec_loop_wide(struct gio_tgt *t, unsigned char *backing, struct gio_gpu_ctl *ctl,
					      uint32_t flags, const struct gio_ssd_model *model, uint32_t warp,
					      uint32_t nwarps, struct gio_gpu_exec_env *env)
{
	gio__gpu_exec_loop<false>(t, backing, ctl, flags, model, warp, nwarps, env);
}

#endif /* GIOURING_TARGET_GPU_EXEC_CUH */
