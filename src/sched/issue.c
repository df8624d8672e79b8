/* The scheduler's decisions carried out through the KV layer's per-layer calls
 * (giouring/sched/issue.h). */
#include <errno.h>
#include <stddef.h>

#include <giouring/sched/issue.h>

#include "../internal.h"

/* Layer `layer` of `plan` with the issuer's engine: the launcher (on at most `sm` SMs), or the
 * CPU engine's thread. */
static int issue_layer(const struct gio_sched_issuer *is, struct gio_kv_plan *plan, uint32_t layer, int write,
		       uint32_t sm)
{
	return is->launch ? is->launch(is->launch_arg, plan, layer, write, sm) : gio_kv_plan_run_layer(plan, layer, write);
}

int gio_sched_issue(struct gio_sched_issuer *is, const struct gio_sched_slot *slot, struct gio_kv_plan *load,
		    uint32_t load_layer, struct gio_sched_write *writes, uint32_t max_writes,
		    struct gio_sched_decision *out)
{
	uint32_t k;
	int rc;
	gio__clear_error();
	if (!is || !is->cfg || !is->backlog || !slot || !out || (max_writes && !writes) || (is->nsaves && !is->saves))
		return gio__fail(-EINVAL, "giouring: gio_sched_issue: a NULL argument");
	rc = gio_sched_plan(is->cfg, is->backlog, slot, writes, max_writes, out);
	if (rc)
		return gio__fail(rc, "giouring: gio_sched_issue: the scheduler refused the slot: %s (index %u)",
				 gio_sched_reason_name(out->fault), out->fault_index);
	/* Every item's save plan is known before anything is issued. */
	for (k = 0; k < out->nwrites; k++)
		if ((uint32_t)(writes[k].id >> 32) >= is->nsaves || !is->saves[writes[k].id >> 32])
			return gio__fail(-EINVAL, "giouring: gio_sched_issue: backlog item %u (id 0x%llx) names save plan %u of %u",
					 k, (unsigned long long)writes[k].id, (unsigned)(writes[k].id >> 32), is->nsaves);
	if (load) {
		if ((rc = issue_layer(is, load, load_layer, 0, out->sm)) != 0)
			return rc; /* its message names the layer */
		/* The CPU engine's plans each have a thread: the load must end before a save starts. */
		if (!is->launch && out->nwrites &&
		    (rc = gio_kv_plan_wait_layer(load, load_layer, is->timeout_ns)) != 0)
			return gio__fail(rc, "giouring: gio_sched_issue: load layer %u did not end within %llu ns: no save "
					 "layer issued (reads and writes never run at once)",
					 load_layer, (unsigned long long)is->timeout_ns);
	}
	for (k = 0; k < out->nwrites; k++) {
		struct gio_kv_plan *save = is->saves[writes[k].id >> 32];
		const uint32_t layer = (uint32_t)writes[k].id;
		if ((rc = issue_layer(is, save, layer, 1, out->sm)) != 0)
			break;
	}
	gio_sched_backlog_pop(is->backlog, k); /* exactly those issued */
	out->nwrites = k;
	return rc;
}
