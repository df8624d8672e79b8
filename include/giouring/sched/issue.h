/**
 * @file giouring/sched/issue.h
 * @brief The scheduler's decisions carried out: per slot, the next layer's load and the deferred
 *        save layers the slot may write, issued through the KV layer's per-layer calls.
 *
 * gio_sched_issue() plans a slot (gio_sched_plan()), issues the slot's load layer, then the save
 * layers of the first `nwrites` backlog items, and takes exactly those off the backlog. Each
 * launch gets the slot's SM budget (gio_sched_decision::sm): the GPU engine's I/O kernels of the
 * slot run on at most that many SMs. Reads
 * never run beside writes: with a launcher (the GPU engine), every call goes to one stream, so
 * each save layer starts after the load layer has ended (GIO_SCHED_GATE_LAYER); with the CPU
 * engine (no launcher), the load layer is waited for, with a deadline, before the first save
 * layer is queued.
 *
 * Backlog items name their save layer by id: gio_sched_save_id() of the save plan's index in
 * gio_sched_issuer::saves and the layer. A save batch commits at gio_kv_plan_finish() once every
 * layer ran: the engine finishes a save plan after its last layer's item was issued.
 */
#ifndef GIOURING_SCHED_ISSUE_H
#define GIOURING_SCHED_ISSUE_H

#include <stdint.h>

#include "../config.h"
#include "../kv/plan.h"
#include "sched.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief A backlog item's id for layer @p layer of save plan @p save.
 * @param save   the save plan's index in gio_sched_issuer::saves.
 * @param layer  the layer.
 * @return the id.
 */
GIO_HD uint64_t gio_sched_save_id(uint32_t save, uint32_t layer)
{
	return (uint64_t)save << 32 | layer;
}

/**
 * @brief Launches one layer of a plan: a load (@p write 0) or save (@p write 1) layer on the
 * launcher's stream, its I/O kernel on at most @p sm SMs (gio_kv_layer_launch();
 * giouring/sched/issue.cuh has such a launcher).
 * @param arg    the launcher's argument.
 * @param plan   the plan.
 * @param layer  the layer.
 * @param write  1 for a save layer.
 * @param sm     the slot's SM budget (gio_sched_decision::sm, within the config's sm_min and sm_max).
 * @return 0 or the call's -errno.
 */
typedef int (*gio_sched_launch_fn)(void *arg, struct gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm);

/** @brief What gio_sched_issue() issues through. */
struct gio_sched_issuer {
	const struct gio_sched_config *cfg; /**< The devices and bounds (the store's device order). */
	struct gio_sched_backlog *backlog;  /**< The deferred save layers. */
	struct gio_kv_plan *const *saves;   /**< Save plans, by the index in their items' ids. */
	uint32_t nsaves;                    /**< Entries in @p saves. */
	gio_sched_launch_fn launch;         /**< GPU engine: launches on one stream; NULL: the CPU engine. */
	void *launch_arg;                   /**< The launcher's argument (its stream). */
	uint64_t timeout_ns;                /**< CPU engine: how long the load layer may take before writes. */
};

/**
 * @brief Plans one slot and issues it: the load layer, then the save layers that fit.
 * @param is          the issuer.
 * @param slot        the slot (its reads: the load layer's bytes per device).
 * @param load        the load plan with a batch open, or NULL (a slot without reads: decode).
 * @param load_layer  the layer of @p load to issue.
 * @param writes      room for @p max_writes items (the decision's writes).
 * @param max_writes  most save layers to issue this slot.
 * @param out         receives the decision.
 * @return 0; `-EINVAL` (NULL arguments, a plan the scheduler refused: out->fault names why, an item
 *         whose id names no save plan); `-ETIME` (CPU engine: the load layer did not end within
 *         timeout_ns: no save was issued); or the load's or a save's -errno (the items issued before
 *         it are taken off the backlog, the failing one and those after stay).
 *
 * The thread that owns the backlog and drives the plans.
 */
int gio_sched_issue(struct gio_sched_issuer *is, const struct gio_sched_slot *slot, struct gio_kv_plan *load,
		    uint32_t load_layer, struct gio_sched_write *writes, uint32_t max_writes,
		    struct gio_sched_decision *out);

GIO_EXTERN_C_END

#endif /* GIOURING_SCHED_ISSUE_H */
