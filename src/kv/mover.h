/* The copy-engine mover of a GPU-engine plan's staged loads (gio_kv_plan_params::mover,
 * docs/staged.md "Design E"): a thread of the plan that watches the groups' requests
 * (struct gio_kv_move_req, pinned host memory the warps write), lists each completed object's
 * copies from its slot into the pool (gio_kv_stage_moves_at(), the same call the warps use), queues
 * them to the copy engine, and then, in stream order after them, stores the batch's epoch in each
 * group's word in GPU memory, where the group's warp waits. No SM loads the slots, and no warp
 * polls host memory for the move.
 *
 * The copies go through ops, so that the logic runs on a CPU in the tests (memcpy) as it does with
 * the CUDA runtime (src/kv/plan.c). Not installed, not part of the API. */
#ifndef GIOURING_SRC_KV_MOVER_H
#define GIOURING_SRC_KV_MOVER_H

#include <stddef.h>
#include <stdint.h>

#include <giouring/config.h>
#include <giouring/kv/io.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/staged.h>

GIO_EXTERN_C_BEGIN

/* How the mover's copies are made. Each returns 0 or an error of the copier (a CUDA error). */
struct gio__kv_mover_ops {
	/* Queues n copies, dst[k] <- src[k] of len[k] bytes, after everything queued before. */
	int (*copy)(void *ctx, void *const *dst, const void *const *src, const size_t *len, size_t n);
	/* Queues n 4-byte stores of value at dst[k], after everything queued before (the copies:
	 * a warp that sees its word sees its objects in the pool). */
	int (*mark)(void *ctx, uint32_t *const *dst, uint32_t value, size_t n);
	/* 0 once everything queued is done, 1 while it is not, else the copier's error. */
	int (*query)(void *ctx);
	/* Called once on the mover's thread before its first pass (the CUDA device), or NULL. */
	int (*attach)(void *ctx);
};

/* One load batch as the mover reads it: host memory that stays unchanged while the batch is open
 * (the plan's pinned image), the requests' words, and the marks' addresses. */
struct gio__kv_mover_batch {
	uint32_t epoch;   /* the batch; never 0 */
	uint32_t layers;  /* layers of the batch (its requests' words: layers x gcap) */
	uint32_t ngroups; /* groups, at most gcap */
	const struct gio_kv_io_group *groups;
	const struct gio_kv_io_req *reqs;
	const struct gio_kv_io_dev *devs;            /* nqps and cmds of each device */
	const struct gio_kv_io_stage *const *stages; /* per device: its staging as the host reaches it, or NULL */
	const struct gio_kv_pool *pool;              /* addresses the copies write (the GPU's) */
	const struct gio_kv_runs *runs;
};

struct gio__kv_mover;

/* What the mover has done, since it started (cq_marks: mirror words stored, gio__kv_mover_watch()). */
struct gio__kv_mover_stats {
	uint64_t copies, calls, bytes, groups, cpu_ns, cq_marks;
};

/* Makes a mover for `layers` layers of at most gcap groups: the requests' words at req (host
 * memory the warps write), the marks at done (the copier's addresses of the groups' words), same
 * indices (layer x gcap + group). thread: 1 starts its thread, 0 leaves gio__kv_mover_pass() to
 * the caller (tests). 0, or -errno with a message. Inactive until gio__kv_mover_open(). */
int gio__kv_mover_create(const struct gio__kv_mover_ops *ops, void *ctx, uint32_t layers, uint32_t gcap,
			 struct gio_kv_move_req *req, uint32_t *done, int thread, struct gio__kv_mover **out);

/* Starts watching batch b's requests, with no error left from the last batch (its close reported
 * it). The previous batch must have been closed. */
void gio__kv_mover_open(struct gio__kv_mover *m, const struct gio__kv_mover_batch *b);

/* Stops watching the open batch (no copy of it is queued after this returns), then waits until
 * every copy queued is done, up to deadline (gio_deadline_in()). 0; -ETIME (still copying: call
 * again); or the copier's first error as -errno with a message (the mover stopped copying at that
 * error: the groups it did not mark timed out in their warps). Idempotent. */
int gio__kv_mover_close(struct gio__kv_mover *m, uint64_t deadline);

/* Completions mirrored into GPU memory (docs/staged.md, "Design C over E"): while a batch is open,
 * each pass also compares the n CQs' entries (entries[c]: depth[c] 16-byte CQEs in host memory)
 * with what it saw last, and for each CQ where one changed (a controller posts a CQE over the
 * previous lap's, so its phase bit at least differs) stores the mover's count of such passes into
 * mirror[c] (copier addresses: GPU memory), after the pass's copies and marks. A warp that sees its
 * CQ's word change reads the CQ in host memory; until then it reads only the word. Call before
 * the first batch, once. 0, or -EINVAL (no CQs, NULL arrays, a depth under 2) with a message,
 * -ENOMEM. */
int gio__kv_mover_watch(struct gio__kv_mover *m, uint32_t n, const void *const *entries, const uint32_t *depth,
			uint32_t *const *mirror);

/* One pass over the open batch's requests (what the thread loops on): the groups that asked
 * since the last pass get their copies and marks, then the watched CQs that changed their mirror
 * marks. The groups handled plus the CQs marked (0: nothing to do), or the copier's error
 * (negative: the batch's remaining groups are left unmarked). */
int gio__kv_mover_pass(struct gio__kv_mover *m);

void gio__kv_mover_info(struct gio__kv_mover *m, struct gio__kv_mover_stats *out);

/* Stops the thread and frees the mover (NULL: nothing). Close the batch first. */
void gio__kv_mover_destroy(struct gio__kv_mover *m);

GIO_EXTERN_C_END

#endif
