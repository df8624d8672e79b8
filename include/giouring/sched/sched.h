/**
 * @file giouring/sched/sched.h
 * @brief The slack-aware I/O scheduler's decisions: per slot (a layer's compute window in
 *        prefill, or a decode step), which reads and which deferred writes to issue and when,
 *        from a cost model of each device's bandwidths; and the bounded backlog of deferred
 *        writes, which reports back-pressure instead of dropping anything.
 *
 * The rules (docs/scheduler.md argues them):
 * 1. **Reads first, all of them.** A slot's reads (the next layer's KV) are on the critical path:
 *    every one is issued at the slot's start, alone on its device. Reads that outlast the slack
 *    delay the next layer: that excess is the predicted **bubble**, the stall the engine will see.
 * 2. **Never read and write one device at once.** A drive that does both collapses (figures cited
 *    by the design this follows, not measured here: 29 GB/s read alone, 12 GB/s write alone,
 *    about 12 GB/s together). A write on a device
 *    starts only after that device's reads end (gio_sched_config::gate: after every read of the
 *    slot, or after those of the devices the write touches).
 * 3. **Writes only in slack.** Deferred writes (offloads of newly computed KV, one backlog item
 *    per save layer) are taken from the backlog in FIFO order while each one, after the reads,
 *    still ends within the slot's window: the slot itself in prefill; in decode, where there is
 *    little I/O, also gio_sched_config::decode_window_ns, and at least the oldest item, so that
 *    decode steps always drain.
 * 4. **Strict FIFO.** Items are issued in the order they were queued, and the first that does
 *    not fit ends the slot's writes: a later, smaller item never passes it, even on other
 *    devices. A save batch commits only when all its layers have run, holding its plan, its
 *    slots and its pool blocks until then; letting younger items pass would keep older batches
 *    open longer and could starve a large item behind a stream of small ones. The host issues
 *    the first gio_sched_decision::nwrites items and pops exactly those.
 * 5. **Bounded backlog.** gio_sched_backlog_push() refuses (`-EAGAIN`) an item that would exceed
 *    the bound in items or bytes and says (GIO_SCHED_PRESSURE) when the backlog passes its soft
 *    mark, so that the engine evicts to DRAM or recomputes instead of stalling.
 *
 * **Cost model** (modelled, never measured here): a transfer of B bytes on a device takes
 * ceil(B / bandwidth) ns, with bandwidths in GB/s (10^9 bytes/s, which is bytes per ns); a device
 * serves its transfers one after another (its write items queue behind each other); a write item
 * (one save layer: one launch of the library's I/O kernel with every device in it) starts on
 * all its devices at one launch time, after its gate and after the item before it was launched.
 * The model assumes items are launched as soon as their gate opens (events, several streams): on
 * one stream an item starts only when the one before it has ended on every device, later than
 * predicted where items are uneven across devices. The SM budget is passed through, clamped; the
 * I/O kernel's own command rate is not modelled. gio_sched_plan_naive() is the baseline with the
 * same model: everything issued at the slot's start, a device with both reads and writes moving
 * both at its mixed bandwidth (both ending together), so a bench can compare the two.
 *
 * Times are in ns from the slot's start. Everything here is pure (GIO_HD) over plain data; one
 * thread owns a backlog.
 */
#ifndef GIOURING_SCHED_SCHED_H
#define GIOURING_SCHED_SCHED_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "profile.h"

GIO_EXTERN_C_BEGIN

/** @brief Most devices a scheduler plans for (the KV store's most targets). */
#define GIO_SCHED_DEVS_MAX 16u

/** @name gio_sched_slot::phase
 * @{ */
#define GIO_SCHED_PREFILL 0u /**< A layer's compute window in prefill: writes only within it. */
#define GIO_SCHED_DECODE 1u  /**< A decode step: writes drain within gio_sched_config::decode_window_ns too. */
/** @} */

/** @name gio_sched_config::gate: when a write item may start
 * @{ */
#define GIO_SCHED_GATE_LAYER 0u  /**< After every read of the slot: a save layer launched stream-ordered
				      after the slot's load layer. */
#define GIO_SCHED_GATE_DEVICE 1u /**< After the reads of the devices the item writes (a launcher that
				      waits for each device's reads). */
/** @} */

/** @brief gio_sched_backlog_push()'s answer when the item was queued but the backlog is above its soft mark. */
#define GIO_SCHED_PRESSURE 1

/** @brief One device's bandwidths, GB/s (10^9 bytes/s = bytes per ns). Modelled figures. */
struct gio_sched_dev {
	double read_gbps;  /**< Reads alone. */
	double write_gbps; /**< Writes alone. */
	double mixed_gbps; /**< Reads and writes at once, both together (gio_sched_plan_naive() only). */
};

/** @brief What the scheduler plans for: the devices and the policy's bounds. */
struct gio_sched_config {
	uint32_t ndevs;  /**< Devices, 1 to GIO_SCHED_DEVS_MAX, in the store's device order. */
	uint32_t gate;   /**< GIO_SCHED_GATE_LAYER or GIO_SCHED_GATE_DEVICE. */
	uint32_t sm_min; /**< Fewest SMs of a slot's I/O kernels, at least 1. */
	uint32_t sm_max; /**< Most SMs, at least sm_min; a slot without a budget gets this. */
	uint64_t decode_window_ns; /**< A decode step's writes may end up to this long after its start,
				        even past the step (its next slot then starts with the devices busy:
				        gio_sched_carry()). 0: within the step. */
	struct gio_sched_dev dev[GIO_SCHED_DEVS_MAX]; /**< ndevs used. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_sched_dev) == 24, "gio_sched_dev size");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_config, decode_window_ns) == 16, "gio_sched_config::decode_window_ns");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_config, dev) == 24, "gio_sched_config::dev");
GIO_STATIC_ASSERT(sizeof(struct gio_sched_config) == 408, "gio_sched_config size");

/** @brief One deferred write: a save layer (the host maps @p id to its save plan and layer) and
 *  its bytes on each device. */
struct gio_sched_item {
	uint64_t id;                            /**< The host's; the scheduler only hands it back. */
	uint64_t bytes[GIO_SCHED_DEVS_MAX];     /**< Bytes it writes on each device (0 on the others). */
};

GIO_STATIC_ASSERT(offsetof(struct gio_sched_item, bytes) == 8, "gio_sched_item::bytes");
GIO_STATIC_ASSERT(sizeof(struct gio_sched_item) == 136, "gio_sched_item size");

/** @brief The backlog of deferred writes: a FIFO ring over memory the caller gives, bounded in
 *  items (its capacity) and bytes, with the figures that quantify it under sustained eviction. */
struct gio_sched_backlog {
	struct gio_sched_item *items; /**< The ring, cap entries. */
	uint32_t cap;        /**< Most items queued: the item bound. */
	uint32_t head;       /**< Ring index of the oldest item. */
	uint32_t count;      /**< Items queued. */
	uint32_t high_items; /**< Most items ever queued at once. */
	uint64_t bytes;      /**< Bytes queued (all devices). */
	uint64_t max_bytes;  /**< Most bytes queued: the byte bound. */
	uint64_t soft_bytes; /**< Above it, a push that succeeds answers GIO_SCHED_PRESSURE; 0: max_bytes. */
	uint64_t high_bytes; /**< Most bytes ever queued at once. */
	uint64_t pushed;     /**< Items queued since init. */
	uint64_t popped;     /**< Items taken (issued) since init. */
	uint64_t refused;    /**< Pushes refused (`-EAGAIN`): back-pressure the engine had to absorb. */
	uint64_t pressured;  /**< Pushes answered GIO_SCHED_PRESSURE. */
};

GIO_STATIC_ASSERT(offsetof(struct gio_sched_backlog, bytes) == 24, "gio_sched_backlog::bytes");
GIO_STATIC_ASSERT(sizeof(struct gio_sched_backlog) == 88, "gio_sched_backlog size");

/** @brief One slot to plan: a layer's compute window in prefill, or a decode step. */
struct gio_sched_slot {
	uint32_t phase;    /**< GIO_SCHED_PREFILL or GIO_SCHED_DECODE. */
	uint32_t sm;       /**< SM budget (gio_sched_estimate::sm), clamped to the config's; 0: none, sm_max. */
	uint64_t slack_ns; /**< The compute time the I/O hides behind (gio_sched_estimate::slack_ns). */
	uint64_t read_bytes[GIO_SCHED_DEVS_MAX]; /**< Bytes the slot must read per device (the next layer's load). */
	uint64_t busy_ns[GIO_SCHED_DEVS_MAX];    /**< Per device, how long writes issued before the slot still
						      run into it (gio_sched_carry()); 0: idle. */
};

GIO_STATIC_ASSERT(offsetof(struct gio_sched_slot, read_bytes) == 16, "gio_sched_slot::read_bytes");
GIO_STATIC_ASSERT(sizeof(struct gio_sched_slot) == 272, "gio_sched_slot size");

/** @brief One write item a slot issues. */
struct gio_sched_write {
	uint64_t id;        /**< The item's gio_sched_item::id. */
	uint64_t launch_ns; /**< When it may start, on every device it writes. */
	uint64_t end_ns;    /**< When its last byte is written (predicted). */
	uint32_t index;     /**< Its place in the backlog (0: the oldest). */
	uint32_t overrun;   /**< 1: decode's progress item, ending past the window. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_sched_write) == 32, "gio_sched_write size");

/** @name Reasons a plan refuses its input (gio_sched_decision::fault, gio_sched_reason_name())
 * @{ */
#define GIO_SCHED_R_OK 0u        /**< Nothing wrong. */
#define GIO_SCHED_R_NULL 1u      /**< A NULL argument (writes NULL with max_writes above 0). */
#define GIO_SCHED_R_DEVS 2u      /**< ndevs is 0 or above GIO_SCHED_DEVS_MAX. */
#define GIO_SCHED_R_BANDWIDTH 3u /**< A bandwidth of device fault_index is not finite and positive. */
#define GIO_SCHED_R_SM 4u        /**< sm_min is 0 or above sm_max. */
#define GIO_SCHED_R_GATE 5u      /**< An unknown gate. */
#define GIO_SCHED_R_PHASE 6u     /**< An unknown phase. */
#define GIO_SCHED_R_SLOT_DEV 7u  /**< The slot reads or is busy on device fault_index, beyond ndevs. */
#define GIO_SCHED_R_ITEM_DEV 8u  /**< Backlog item fault_index writes a device beyond ndevs. */
#define GIO_SCHED_R_BACKLOG 9u   /**< The backlog is malformed (no ring, count above cap, head beyond it). */
/** @} */

/** @brief What a slot does, as gio_sched_plan() or gio_sched_plan_naive() decides it. */
struct gio_sched_decision {
	uint64_t read_end_ns;  /**< When the slot's last read ends (0 with no reads). */
	uint64_t bubble_ns;    /**< read_end_ns - slack_ns where positive: the stall the engine will see. */
	uint64_t slot_ns;      /**< When the next slot starts: max(slack_ns, read_end_ns). */
	uint64_t window_ns;    /**< Writes end by this: slot_ns in prefill, max(slot_ns, decode_window_ns) in
				    decode (except decode's progress item). */
	uint64_t write_end_ns; /**< When the last write the slot issues ends; 0 with none. */
	uint64_t io_end_ns;    /**< max(read_end_ns, write_end_ns). */
	uint64_t overrun_ns;   /**< io_end_ns - window_ns where positive. */
	uint64_t read_bytes;   /**< Bytes read (all of the slot's). */
	uint64_t write_bytes;  /**< Bytes of the items issued. */
	uint32_t nwrites;      /**< Items issued: the backlog's first nwrites, in order, in the writes array. */
	uint32_t sm;           /**< The slot's SM budget, clamped to [sm_min, sm_max]. */
	uint32_t fault;        /**< GIO_SCHED_R_* when the plan returned `-EINVAL`. */
	uint32_t fault_index;  /**< The device or item the fault concerns, else 0. */
	uint64_t dev_read_end_ns[GIO_SCHED_DEVS_MAX];  /**< Per device, when its reads end; where it reads nothing,
						        its busy_ns (when it may start writing). */
	uint64_t dev_write_end_ns[GIO_SCHED_DEVS_MAX]; /**< Per device, when its writes end, those carried into the
						        slot (busy_ns) included; 0 with none. */
};

GIO_STATIC_ASSERT(offsetof(struct gio_sched_decision, nwrites) == 72, "gio_sched_decision::nwrites");
GIO_STATIC_ASSERT(offsetof(struct gio_sched_decision, dev_read_end_ns) == 88, "gio_sched_decision::dev_read_end_ns");
GIO_STATIC_ASSERT(sizeof(struct gio_sched_decision) == 344, "gio_sched_decision size");

/**
 * @brief Name of a GIO_SCHED_R_* reason, for messages.
 * @param reason  the reason.
 * @return a short phrase; "unknown reason" for a value not listed.
 *
 * Pure; any thread, host or device.
 */
GIO_HD const char *gio_sched_reason_name(uint32_t reason)
{
	switch (reason) {
	case GIO_SCHED_R_OK: return "no problem";
	case GIO_SCHED_R_NULL: return "a NULL argument";
	case GIO_SCHED_R_DEVS: return "device count is 0 or above GIO_SCHED_DEVS_MAX";
	case GIO_SCHED_R_BANDWIDTH: return "a device bandwidth is not finite and positive";
	case GIO_SCHED_R_SM: return "sm_min is 0 or above sm_max";
	case GIO_SCHED_R_GATE: return "unknown write gate";
	case GIO_SCHED_R_PHASE: return "unknown slot phase";
	case GIO_SCHED_R_SLOT_DEV: return "the slot reads or is busy on a device beyond the config's";
	case GIO_SCHED_R_ITEM_DEV: return "a backlog item writes a device beyond the config's";
	case GIO_SCHED_R_BACKLOG: return "malformed backlog";
	default: return "unknown reason";
	}
}

/**
 * @brief The modelled time of a transfer: ceil(@p bytes / @p gbps) ns.
 * @param bytes  bytes moved.
 * @param gbps   bandwidth in GB/s (bytes per ns), finite and positive.
 * @return the ns, 0 for 0 bytes, UINT64_MAX where it does not fit.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_sched_xfer_ns(uint64_t bytes, double gbps)
{
	double t;
	uint64_t u;
	if (bytes == 0)
		return 0;
	t = (double)bytes / gbps;
	if (!(t < 18446744073709551615.0))
		return UINT64_MAX;
	u = (uint64_t)t;
	return (double)u < t ? u + 1 : u;
}

GIO_HD uint64_t gio__sched_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

GIO_HD uint64_t gio__sched_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

GIO_HD int gio__sched_fail(uint32_t *reason, uint32_t *index, uint32_t r, uint32_t i)
{
	if (reason)
		*reason = r;
	if (index)
		*index = i;
	return -EINVAL;
}

/**
 * @brief Checks a config: device count, bandwidths, SM bounds, gate.
 * @param cfg     the config.
 * @param reason  receives GIO_SCHED_R_OK or why it is refused (may be NULL).
 * @param index   receives the device concerned, else 0 (may be NULL).
 * @return 0, or `-EINVAL` (@p cfg NULL, ndevs 0 or above GIO_SCHED_DEVS_MAX, a bandwidth NaN,
 *         infinite, 0 or negative, sm_min 0 or above sm_max, an unknown gate).
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_sched_config_check(const struct gio_sched_config *cfg, uint32_t *reason, uint32_t *index)
{
	uint32_t d;
	if (!cfg)
		return gio__sched_fail(reason, index, GIO_SCHED_R_NULL, 0);
	if (cfg->ndevs == 0 || cfg->ndevs > GIO_SCHED_DEVS_MAX)
		return gio__sched_fail(reason, index, GIO_SCHED_R_DEVS, 0);
	for (d = 0; d < cfg->ndevs; d++)
		if (!gio__sched_positive(cfg->dev[d].read_gbps) || !gio__sched_positive(cfg->dev[d].write_gbps) ||
		    !gio__sched_positive(cfg->dev[d].mixed_gbps))
			return gio__sched_fail(reason, index, GIO_SCHED_R_BANDWIDTH, d);
	if (cfg->sm_min == 0 || cfg->sm_min > cfg->sm_max)
		return gio__sched_fail(reason, index, GIO_SCHED_R_SM, 0);
	if (cfg->gate != GIO_SCHED_GATE_LAYER && cfg->gate != GIO_SCHED_GATE_DEVICE)
		return gio__sched_fail(reason, index, GIO_SCHED_R_GATE, 0);
	if (reason)
		*reason = GIO_SCHED_R_OK;
	if (index)
		*index = 0;
	return 0;
}

/**
 * @brief Sets up an empty backlog over @p items.
 * @param bl          the backlog to write.
 * @param items       the ring, @p cap entries, kept by the backlog (the caller's memory).
 * @param cap         the most items queued, at least 1.
 * @param max_bytes   the most bytes queued, at least 1.
 * @param soft_bytes  above it a push answers GIO_SCHED_PRESSURE; 0 or above @p max_bytes: @p max_bytes.
 * @return 0, or `-EINVAL` (@p bl or @p items NULL, @p cap or @p max_bytes 0).
 *
 * Pure; the thread that owns the backlog.
 */
GIO_HD int gio_sched_backlog_init(struct gio_sched_backlog *bl, struct gio_sched_item *items, uint32_t cap,
				  uint64_t max_bytes, uint64_t soft_bytes)
{
	if (!bl || !items || cap == 0 || max_bytes == 0)
		return -EINVAL;
	bl->items = items;
	bl->cap = cap;
	bl->head = 0;
	bl->count = 0;
	bl->high_items = 0;
	bl->bytes = 0;
	bl->max_bytes = max_bytes;
	bl->soft_bytes = soft_bytes == 0 || soft_bytes > max_bytes ? max_bytes : soft_bytes;
	bl->high_bytes = 0;
	bl->pushed = 0;
	bl->popped = 0;
	bl->refused = 0;
	bl->pressured = 0;
	return 0;
}

/**
 * @brief Bytes over devices.
 * @param bytes  bytes per device, @p n of them.
 * @param n      the devices.
 * @return their sum, or UINT64_MAX where it does not fit 64 bits.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_sched_bytes_sum(const uint64_t *bytes, uint32_t n)
{
	uint64_t s = 0;
	uint32_t d;
	for (d = 0; d < n; d++)
		s = gio__sched_add(s, bytes[d]);
	return s;
}

/**
 * @brief Bytes of an item over all devices.
 * @param it  the item.
 * @return their sum, or UINT64_MAX where it does not fit 64 bits.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_sched_item_bytes(const struct gio_sched_item *it)
{
	return gio_sched_bytes_sum(it->bytes, GIO_SCHED_DEVS_MAX);
}

/**
 * @brief Queues a deferred write at the backlog's tail (copied), or refuses it: the bound is
 *        never exceeded and nothing is dropped.
 * @param bl  the backlog.
 * @param it  the item.
 * @return 0 (queued); GIO_SCHED_PRESSURE (queued, and the backlog's bytes are now above its soft
 *         mark: evict or recompute before it fills); `-EAGAIN` (not queued: the backlog holds
 *         cap items, or its bytes would exceed max_bytes; it shrinks as slots issue writes);
 *         `-E2BIG` (not queued: the item alone exceeds max_bytes, so it never fits);
 *         `-EINVAL` (NULL, or a malformed backlog).
 *
 * Pure; the thread that owns the backlog.
 */
GIO_HD int gio_sched_backlog_push(struct gio_sched_backlog *bl, const struct gio_sched_item *it)
{
	uint64_t b;
	if (!bl || !it || !bl->items || bl->count > bl->cap || bl->head >= bl->cap)
		return -EINVAL;
	b = gio_sched_item_bytes(it);
	if (b > bl->max_bytes)
		return -E2BIG;
	if (bl->count == bl->cap || b > bl->max_bytes - bl->bytes) {
		bl->refused++;
		return -EAGAIN;
	}
	bl->items[(bl->head + bl->count) % bl->cap] = *it;
	bl->count++;
	bl->bytes += b;
	bl->pushed++;
	if (bl->count > bl->high_items)
		bl->high_items = bl->count;
	if (bl->bytes > bl->high_bytes)
		bl->high_bytes = bl->bytes;
	if (bl->bytes > bl->soft_bytes) {
		bl->pressured++;
		return GIO_SCHED_PRESSURE;
	}
	return 0;
}

/**
 * @brief The item at place @p i of the backlog (0: the oldest).
 * @param bl  the backlog.
 * @param i   the place.
 * @return the item (valid until it is popped), or NULL (@p bl NULL, @p i not below the count).
 *
 * Pure; any thread, host or device, that does not race with the owner's push and pop.
 */
GIO_HD const struct gio_sched_item *gio_sched_backlog_at(const struct gio_sched_backlog *bl, uint32_t i)
{
	if (!bl || !bl->items || i >= bl->count || bl->cap == 0)
		return 0;
	return &bl->items[(uint32_t)(((uint64_t)bl->head + i) % bl->cap)];
}

/**
 * @brief Takes the @p n oldest items off the backlog: the ones a slot's decision issued.
 * @param bl  the backlog.
 * @param n   items, at most the count.
 * @return 0, or `-EINVAL` (NULL, or @p n above the count: nothing is taken).
 *
 * Pure; the thread that owns the backlog. Pop only what was issued: an item popped and not
 * written is a save layer that never runs (its batch then cannot commit that chunk).
 */
GIO_HD int gio_sched_backlog_pop(struct gio_sched_backlog *bl, uint32_t n)
{
	uint32_t i;
	if (!bl || !bl->items || n > bl->count || bl->count > bl->cap || bl->head >= bl->cap)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		bl->bytes -= gio_sched_item_bytes(&bl->items[bl->head]);
		bl->head = (bl->head + 1) % bl->cap;
	}
	bl->count -= n;
	bl->popped += n;
	return 0;
}

/* Checks the config, the slot and the backlog, clears *out and fills its read side: each device's
 * reads start when its earlier writes end (busy_ns) and take their bytes at the read bandwidth. */
GIO_HD int gio__sched_begin(const struct gio_sched_config *cfg, const struct gio_sched_backlog *bl,
			    const struct gio_sched_slot *slot, const struct gio_sched_write *writes, uint32_t max_writes,
			    struct gio_sched_decision *out)
{
	uint32_t d, i, r = GIO_SCHED_R_OK, at = 0;
	uint8_t *p = (uint8_t *)out;
	if (!out)
		return -EINVAL;
	for (i = 0; i < sizeof(*out); i++)
		p[i] = 0;
	if (!cfg || !bl || !slot || (!writes && max_writes > 0))
		return gio__sched_fail(&out->fault, &out->fault_index, GIO_SCHED_R_NULL, 0);
	if (gio_sched_config_check(cfg, &out->fault, &out->fault_index))
		return -EINVAL;
	if (slot->phase != GIO_SCHED_PREFILL && slot->phase != GIO_SCHED_DECODE)
		return gio__sched_fail(&out->fault, &out->fault_index, GIO_SCHED_R_PHASE, 0);
	for (d = cfg->ndevs; d < GIO_SCHED_DEVS_MAX; d++)
		if (slot->read_bytes[d] || slot->busy_ns[d])
			return gio__sched_fail(&out->fault, &out->fault_index, GIO_SCHED_R_SLOT_DEV, d);
	if (!bl->items || bl->cap == 0 || bl->count > bl->cap || bl->head >= bl->cap)
		return gio__sched_fail(&out->fault, &out->fault_index, GIO_SCHED_R_BACKLOG, 0);
	for (i = 0; i < bl->count && i < max_writes && r == GIO_SCHED_R_OK; i++)
		for (d = cfg->ndevs; d < GIO_SCHED_DEVS_MAX; d++)
			if (gio_sched_backlog_at(bl, i)->bytes[d]) {
				r = GIO_SCHED_R_ITEM_DEV;
				at = i;
			}
	if (r != GIO_SCHED_R_OK)
		return gio__sched_fail(&out->fault, &out->fault_index, r, at);
	out->sm = slot->sm == 0 ? cfg->sm_max : slot->sm < cfg->sm_min ? cfg->sm_min
						: slot->sm > cfg->sm_max ? cfg->sm_max : slot->sm;
	for (d = 0; d < cfg->ndevs; d++)
		out->read_bytes = gio__sched_add(out->read_bytes, slot->read_bytes[d]);
	return 0;
}

/* Fills the figures that follow from the per-device ends, the slot and its writes' last end. */
GIO_HD void gio__sched_end(const struct gio_sched_config *cfg, const struct gio_sched_slot *slot, uint64_t write_end,
			   struct gio_sched_decision *out)
{
	uint32_t d;
	for (d = 0; d < cfg->ndevs; d++)
		if (slot->read_bytes[d]) /* a device still busy writing but reading nothing stalls no one */
			out->read_end_ns = gio__sched_max(out->read_end_ns, out->dev_read_end_ns[d]);
	out->write_end_ns = write_end;
	out->bubble_ns = out->read_end_ns > slot->slack_ns ? out->read_end_ns - slot->slack_ns : 0;
	out->slot_ns = gio__sched_max(slot->slack_ns, out->read_end_ns);
	out->window_ns = slot->phase == GIO_SCHED_DECODE ? gio__sched_max(out->slot_ns, cfg->decode_window_ns)
							 : out->slot_ns;
	out->io_end_ns = gio__sched_max(out->read_end_ns, out->write_end_ns);
	out->overrun_ns = out->io_end_ns > out->window_ns ? out->io_end_ns - out->window_ns : 0;
}

/* Each device's reads: from its busy time (writes carried into the slot), at the read bandwidth. */
GIO_HD uint64_t gio__sched_reads(const struct gio_sched_config *cfg, const struct gio_sched_slot *slot,
				 struct gio_sched_decision *out)
{
	uint64_t read_end = 0;
	uint32_t d;
	for (d = 0; d < cfg->ndevs; d++) {
		out->dev_read_end_ns[d] = gio__sched_add(slot->busy_ns[d],
							 gio_sched_xfer_ns(slot->read_bytes[d], cfg->dev[d].read_gbps));
		if (slot->read_bytes[d])
			read_end = gio__sched_max(read_end, out->dev_read_end_ns[d]);
	}
	return read_end;
}

/**
 * @brief Plans a slot, slack-aware: every read at the start, then the backlog's oldest items,
 *        in order, while each ends within the window, each write after its devices' reads.
 * @param cfg         the devices and bounds (valid: gio_sched_config_check()).
 * @param bl          the backlog (read, not changed: pop the issued items after issuing them).
 * @param slot        the slot.
 * @param writes      receives the items issued, in FIFO order (may be NULL with @p max_writes 0).
 * @param max_writes  most items to issue (the room in @p writes).
 * @param out         receives the decision.
 * @return 0, or `-EINVAL` (a NULL argument, a config refused by gio_sched_config_check(), an
 *         unknown phase, reads or busy time on a device beyond ndevs, a malformed backlog, one of
 *         the first @p max_writes items writing a device beyond ndevs: out->fault and
 *         out->fault_index say which; nothing else of @p out is set).
 *
 * Pure; any thread, host or device. Per device d: reads take [busy_d, busy_d + read_bytes_d /
 * read_gbps_d); item k launches at L_k = max(L_{k-1}, gate) (gate: every device's read end, or
 * that of the devices it writes) and writes on d from max(L_k, d's previous write end) for
 * bytes_d / write_gbps_d. It is issued when its end is within window_ns; the first that is not
 * ends the slot's writes, except in decode, where the oldest item is issued anyway when it is
 * the first (gio_sched_write::overrun, out->overrun_ns): decode steps always drain.
 * O(GIO_SCHED_DEVS_MAX x items issued).
 */
GIO_HD int gio_sched_plan(const struct gio_sched_config *cfg, const struct gio_sched_backlog *bl,
			  const struct gio_sched_slot *slot, struct gio_sched_write *writes, uint32_t max_writes,
			  struct gio_sched_decision *out)
{
	uint64_t wend[GIO_SCHED_DEVS_MAX], e[GIO_SCHED_DEVS_MAX], launch = 0, read_end, write_end = 0, slot_ns, window;
	uint32_t d, k;
	int rc = gio__sched_begin(cfg, bl, slot, writes, max_writes, out);
	if (rc)
		return rc;
	read_end = gio__sched_reads(cfg, slot, out);
	for (d = 0; d < cfg->ndevs; d++)
		wend[d] = out->dev_read_end_ns[d]; /* a device writes only after its reads */
	slot_ns = gio__sched_max(slot->slack_ns, read_end);
	window = slot->phase == GIO_SCHED_DECODE ? gio__sched_max(slot_ns, cfg->decode_window_ns) : slot_ns;
	for (k = 0; k < bl->count && k < max_writes; k++) {
		const struct gio_sched_item *it = gio_sched_backlog_at(bl, k);
		uint64_t gate = cfg->gate == GIO_SCHED_GATE_LAYER ? read_end : 0, l, end;
		for (d = 0; d < cfg->ndevs; d++)
			if (it->bytes[d])
				gate = gio__sched_max(gate, out->dev_read_end_ns[d]);
		l = gio__sched_max(launch, gate);
		end = l;
		for (d = 0; d < cfg->ndevs; d++) {
			e[d] = it->bytes[d] ? gio__sched_add(gio__sched_max(l, wend[d]),
							     gio_sched_xfer_ns(it->bytes[d], cfg->dev[d].write_gbps))
					    : wend[d];
			end = gio__sched_max(end, it->bytes[d] ? e[d] : 0);
		}
		if (end > window && !(slot->phase == GIO_SCHED_DECODE && k == 0))
			break; /* strict FIFO: nothing passes the first item that does not fit */
		for (d = 0; d < cfg->ndevs; d++)
			wend[d] = e[d];
		launch = l;
		writes[k].id = it->id;
		writes[k].launch_ns = l;
		writes[k].end_ns = end;
		writes[k].index = k;
		writes[k].overrun = end > window;
		out->write_bytes = gio__sched_add(out->write_bytes, gio_sched_item_bytes(it));
		out->nwrites = k + 1;
		write_end = gio__sched_max(write_end, end);
		if (end > window)
			break; /* decode's progress item: nothing after it */
	}
	for (d = 0; d < cfg->ndevs; d++)
		out->dev_write_end_ns[d] = wend[d] > out->dev_read_end_ns[d] ? wend[d] : slot->busy_ns[d];
	gio__sched_end(cfg, slot, write_end, out);
	return 0;
}

/**
 * @brief Plans a slot the naive way, with the same cost model: every read and the backlog's
 *        first @p max_writes items issued at the slot's start; a device with both reads and
 *        writes moves both at its mixed bandwidth and both end together.
 * @param cfg         the devices (valid).
 * @param bl          the backlog (not changed).
 * @param slot        the slot.
 * @param writes      receives the items issued (may be NULL with @p max_writes 0).
 * @param max_writes  most items to issue.
 * @param out         receives the decision (the same figures as gio_sched_plan()'s).
 * @return 0, or `-EINVAL` as gio_sched_plan().
 *
 * Pure; any thread, host or device. Per device d from busy_d: with reads R and writes W both
 * above 0, both end at busy_d + max((R + W) / mixed, R / read, W / write); otherwise each alone
 * at its own bandwidth. An item ends when its last device's writes end. Nothing is kept within
 * the window: overrun_ns says how far the slot's I/O runs into the next.
 */
GIO_HD int gio_sched_plan_naive(const struct gio_sched_config *cfg, const struct gio_sched_backlog *bl,
				const struct gio_sched_slot *slot, struct gio_sched_write *writes, uint32_t max_writes,
				struct gio_sched_decision *out)
{
	uint64_t w[GIO_SCHED_DEVS_MAX], write_end = 0;
	uint32_t d, k, n;
	int rc = gio__sched_begin(cfg, bl, slot, writes, max_writes, out);
	if (rc)
		return rc;
	n = bl->count < max_writes ? bl->count : max_writes;
	for (d = 0; d < cfg->ndevs; d++)
		w[d] = 0;
	for (k = 0; k < n; k++)
		for (d = 0; d < cfg->ndevs; d++)
			w[d] = gio__sched_add(w[d], gio_sched_backlog_at(bl, k)->bytes[d]);
	for (d = 0; d < cfg->ndevs; d++) {
		const struct gio_sched_dev *dv = &cfg->dev[d];
		const uint64_t r = slot->read_bytes[d];
		uint64_t tr = gio_sched_xfer_ns(r, dv->read_gbps), tw = gio_sched_xfer_ns(w[d], dv->write_gbps);
		if (r && w[d]) /* sharing the device: both end when the last byte of either moves */
			tr = tw = gio__sched_max(gio_sched_xfer_ns(gio__sched_add(r, w[d]), dv->mixed_gbps),
						 gio__sched_max(tr, tw));
		out->dev_read_end_ns[d] = gio__sched_add(slot->busy_ns[d], tr);
		out->dev_write_end_ns[d] = w[d] ? gio__sched_add(slot->busy_ns[d], tw) : slot->busy_ns[d];
	}
	for (k = 0; k < n; k++) {
		const struct gio_sched_item *it = gio_sched_backlog_at(bl, k);
		uint64_t end = 0;
		for (d = 0; d < cfg->ndevs; d++)
			if (it->bytes[d])
				end = gio__sched_max(end, out->dev_write_end_ns[d]);
		writes[k].id = it->id;
		writes[k].launch_ns = 0;
		writes[k].end_ns = end;
		writes[k].index = k;
		writes[k].overrun = 0;
		out->write_bytes = gio__sched_add(out->write_bytes, gio_sched_item_bytes(it));
		write_end = gio__sched_max(write_end, end);
	}
	out->nwrites = n;
	gio__sched_end(cfg, slot, write_end, out);
	for (k = 0; k < n; k++)
		writes[k].overrun = writes[k].end_ns > out->window_ns;
	return 0;
}

/**
 * @brief Carries a slot's writes that run past its end into the next slot: each device's busy
 *        time there is how long its writes outlast the slot (dev_write_end_ns - slot_ns).
 * @param prev  the decision of the slot before.
 * @param next  the next slot (its busy_ns is written; the rest kept).
 * @return 0, or `-EINVAL` (NULL).
 *
 * Pure; any thread, host or device. A slack-aware prefill slot's own writes end within it (only
 * writes carried into it may outlast it); decode's window and progress item, and the naive plan,
 * may leave writes running. The next slot's reads on such a device wait for them: the bubble
 * that causes is reported there.
 */
GIO_HD int gio_sched_carry(const struct gio_sched_decision *prev, struct gio_sched_slot *next)
{
	uint32_t d;
	if (!prev || !next)
		return -EINVAL;
	for (d = 0; d < GIO_SCHED_DEVS_MAX; d++) /* reads end by slot_ns: only writes outlast a slot */
		next->busy_ns[d] = prev->dev_write_end_ns[d] > prev->slot_ns ? prev->dev_write_end_ns[d] - prev->slot_ns : 0;
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_SCHED_SCHED_H */
