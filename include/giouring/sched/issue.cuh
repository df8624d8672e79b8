/**
 * @file giouring/sched/issue.cuh
 * @brief The GPU engine's launcher for gio_sched_issue(): every layer on one stream (the I/O
 *        side's, say), so that each save layer starts after the slot's load layer has ended.
 */
#ifndef GIOURING_SCHED_ISSUE_CUH
#define GIOURING_SCHED_ISSUE_CUH

#include "../kv/layer.cuh"
#include "issue.h"

/**
 * @brief A gio_sched_launch_fn: layer @p layer of @p plan on stream @p stream, its I/O kernel on
 * at most @p sm SMs (gio_kv_layer_launch()).
 * @param stream  the `cudaStream_t` (gio_sched_issuer::launch_arg).
 * @param plan    the plan.
 * @param layer   the layer.
 * @param write   1 for a save layer.
 * @param sm      the slot's SM budget.
 * @return as gio_kv_load_layer() / gio_kv_save_layer().
 *
 * The plan's thread.
 */
static inline int gio_sched_stream_launch(void *stream, struct gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm)
{
	return gio_kv_layer_launch(plan, layer, write, (cudaStream_t)stream, sm);
}

#endif /* GIOURING_SCHED_ISSUE_CUH */
