/**
 * @file giouring/ring/stage.h
 * @brief Staging slots: flow control of a pinned host staging area that NVMe commands read into
 *        (or write from) when the controller cannot reach the data's real home (docs/staged.md).
 *
 * A staging area is `nslots` slots of `slot_bytes` each in pinned host memory, reachable by the
 * controller at a bus address and by the mover (GPU warps, the copy engine, or a CPU thread). The
 * ring here only says which slot a command may use and when it may be used again; it moves no
 * data and holds no pointer to it, so the same words can live in HBM (where GPU pollers cost the
 * other SMs nothing) while the slots live in host memory.
 *
 * - **Tickets.** gio_stage_reserve() hands out free-running 32-bit indices (tickets) in order, `n`
 *   consecutive ones per call; ticket `t` uses slot `t & (nslots - 1)`. A reservation succeeds only
 *   where every slot it covers is FREE for the ticket's lap, so the staging area never holds more
 *   than `nslots` commands' data: it cannot overflow.
 * - **Slot states**, each word `lap << 2 | state` so that a late caller cannot touch the slot's
 *   next use: FREE (lap L: ticket with lap L may take it) -> HELD (a command may write it) ->
 *   FULL (the command completed; the data may be moved) -> FREE for lap L + 1 (released after the
 *   move, or at once after a failed command). A command that missed its deadline may still be
 *   written by the controller later, so its slot goes to LOST instead and is never reused by this
 *   ring (the controller's queue must be deleted first; then gio_stage_init() starts over).
 * - **Reuse as soon as moved.** A slot is free the moment its object has moved; reservations
 *   take slots in ticket order, so a slot whose object is still in flight holds back the
 *   reservations that wrap onto it, not any other slot's release.
 *
 * Ordering (docs/staged.md, "Memory ordering"): the mover's reads of a slot (a load) or writes
 * into it (a save) come before its release store of FREE; a reserver acquires FREE before it
 * builds the command that hands the slot to the controller, whose doorbell is itself ordered
 * after the SQE by the ring (giouring/ring/qp.h). A completion's acquire (the CQE's phase) comes
 * before gio_stage_fill()'s release of FULL, so a separate mover that acquires FULL reads the
 * controller's data.
 *
 * Header-only, `GIO_HD`: the same code runs in CPU threads and GPU warps.
 */
#ifndef GIOURING_RING_STAGE_H
#define GIOURING_RING_STAGE_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "clock.h"
#include "ordering.h"

GIO_EXTERN_C_BEGIN

/** @name Slot states (the low two bits of a slot word; gio_stage_state())
 * @{ */
#define GIO_STAGE_FREE 0u /**< Free for the lap in the word's upper bits. */
#define GIO_STAGE_HELD 1u /**< Reserved: its command may be in flight. */
#define GIO_STAGE_FULL 2u /**< Its command completed; the data is in the slot, ready to move. */
#define GIO_STAGE_LOST 3u /**< Its command missed its deadline: never reused by this ring. */
/** @} */

/** @brief Most slots of one staging area (a lap needs room beside the state's two bits). */
#define GIO_STAGE_MAX_SLOTS 65536u

/** @brief The ring's indices when a wait last expired, for the caller's message. */
struct gio_stage_timeout {
	uint32_t reserved; /**< gio_stage::reserved at expiry. */
	uint32_t slot;     /**< The first slot that was not free for its ticket (the last one asked for
			        where all had become free by the snapshot). */
	uint32_t word;     /**< That slot's word (lap << 2 | state). */
	uint32_t want;     /**< The word it needed (lap << 2 | GIO_STAGE_FREE). */
};

/** @brief Flow control of one staging area. Lives where every reserver and releaser reaches it. */
struct gio_stage {
	uint32_t reserved;   /**< Next ticket to hand out (free-running). */
	uint32_t nslots;     /**< Slots, a power of two, 1 to GIO_STAGE_MAX_SLOTS. */
	uint32_t shift;      /**< log2(nslots). */
	uint32_t scope;      /**< GIO_SCOPE_SYS or GIO_SCOPE_GPU: who shares the words. */
	uint32_t *slots;     /**< One word per slot (caller's memory, nslots words). */
	uint64_t slot_bytes; /**< Bytes of one slot: the largest command's data. */
	uint64_t base_bus;   /**< The controller's address of slot 0 (an IOVA). */
	struct gio_stage_timeout last_timeout; /**< Indices when a wait last expired. */
};

/**
 * @brief The state of a slot word (GIO_STAGE_FREE, _HELD, _FULL or _LOST).
 * @param w  a word of gio_stage::slots.
 * @return its state.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint32_t gio_stage_state(uint32_t w)
{
	return w & 3u;
}

/* The word slot (t mod nslots) holds while ticket t's lap owns it in state s (laps wrap in 30 bits). */
GIO_HD uint32_t gio__stage_word(const struct gio_stage *st, uint32_t t, uint32_t s)
{
	return ((t >> st->shift) << 2) | s;
}

GIO_HD uint32_t *gio__stage_slot(const struct gio_stage *st, uint32_t t)
{
	return &st->slots[t & (st->nslots - 1)];
}

/**
 * @brief Initialises a staging area's flow control over caller-provided words.
 * @param st          the ring.
 * @param slots       @p nslots words, any content (written here).
 * @param nslots      slots, a power of two from 1 to GIO_STAGE_MAX_SLOTS.
 * @param slot_bytes  bytes of each slot, a non-zero multiple of 4 (SGL Data Blocks in dword
 *                    granularity need it), at most 2^32 - 1 (one SGL Data Block).
 * @param base_bus    the controller's address of slot 0, a multiple of 4; the area must not wrap
 *                    the 64-bit address space.
 * @param scope       GIO_SCOPE_SYS (the default: any party) or GIO_SCOPE_GPU (every reserver and
 *                    releaser runs on one GPU).
 * @return 0, or `-EINVAL` naming nothing (the caller's message names the argument): @p nslots not
 *         a power of two or out of range, @p slot_bytes 0, not a multiple of 4 or too large,
 *         @p base_bus misaligned or the area wrapping, @p slots NULL, or an unknown scope.
 *         Nothing is written on error.
 *
 * One thread, before any other use; again only when no command can still write a slot (the
 * controller's queues deleted or drained), which also gives LOST slots back.
 */
GIO_HD int gio_stage_init(struct gio_stage *st, uint32_t *slots, uint32_t nslots, uint64_t slot_bytes,
			  uint64_t base_bus, uint32_t scope)
{
	uint32_t i, shift = 0;
	if (!slots || nslots == 0 || nslots > GIO_STAGE_MAX_SLOTS || (nslots & (nslots - 1)))
		return -EINVAL;
	if (slot_bytes == 0 || (slot_bytes & 3u) || slot_bytes > 0xffffffffull || (base_bus & 3u))
		return -EINVAL;
	if (base_bus + (uint64_t)nslots * slot_bytes < base_bus || (scope != GIO_SCOPE_SYS && scope != GIO_SCOPE_GPU))
		return -EINVAL;
	while ((1u << shift) < nslots)
		shift++;
	st->reserved = 0;
	st->nslots = nslots;
	st->shift = shift;
	st->scope = scope;
	st->slots = slots;
	st->slot_bytes = slot_bytes;
	st->base_bus = base_bus;
	st->last_timeout.reserved = st->last_timeout.slot = st->last_timeout.word = st->last_timeout.want = 0;
	for (i = 0; i < nslots; i++)
		slots[i] = GIO_STAGE_FREE; /* lap 0 */
	/* Publishes the words to whoever is handed the ring afterwards. */
	gio_fence_release_in(scope);
	return 0;
}

/**
 * @brief Byte offset of ticket @p t's slot from the start of the staging area.
 * @param st  the ring.
 * @param t   a ticket.
 * @return the offset; the mover adds it to its own pointer to the area (host or GPU mapping).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_stage_offset(const struct gio_stage *st, uint32_t t)
{
	return (uint64_t)(t & (st->nslots - 1)) * st->slot_bytes;
}

/**
 * @brief The controller's address of ticket @p t's slot: what its command's data pointer names.
 * @param st  the ring.
 * @param t   a ticket.
 * @return the bus address.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_stage_bus(const struct gio_stage *st, uint32_t t)
{
	return st->base_bus + gio_stage_offset(st, t);
}

/**
 * @brief Reserves @p n consecutive tickets whose slots are free, without waiting.
 * @param st     the ring.
 * @param n      tickets, 1 to nslots.
 * @param first  receives the first ticket; untouched on error.
 * @return 0, `-EBUSY` when a slot of the next @p n is not free yet (its object has not moved, or
 *         it is LOST), or `-EINVAL` for @p n out of range.
 *
 * Any thread, host or device. The slots are HELD on return: each ticket must end in
 * gio_stage_release() or gio_stage_lose().
 */
GIO_HD int gio_stage_reserve(struct gio_stage *st, uint32_t n, uint32_t *first)
{
	uint32_t i;
	if (n == 0 || n > st->nslots)
		return -EINVAL;
	for (;;) {
		const uint32_t r = gio_load_acquire_in(st->scope, &st->reserved);
		/* Pairs with gio_stage_release()'s release of FREE: the mover's last access to the slot
		 * comes before anything this reserver hands the controller. */
		for (i = 0; i < n; i++)
			if (gio_load_acquire_in(st->scope, gio__stage_slot(st, r + i)) != gio__stage_word(st, r + i, GIO_STAGE_FREE))
				return -EBUSY;
		/* A slot found free for this lap stays free: only the reserver of ticket r + i takes it,
		 * and the CAS makes this thread that reserver. */
		if (gio_cas_in(st->scope, &st->reserved, r, r + n)) {
			for (i = 0; i < n; i++)
				gio_store_relaxed_in(st->scope, gio__stage_slot(st, r + i), gio__stage_word(st, r + i, GIO_STAGE_HELD));
			*first = r;
			return 0;
		}
	}
}

/**
 * @brief gio_stage_reserve(), waiting for slots to be released, up to a deadline.
 * @param st        the ring.
 * @param n         tickets, 1 to nslots.
 * @param deadline  absolute deadline (giouring/ring/clock.h).
 * @param first     receives the first ticket; untouched on error.
 * @return 0, `-ETIME` at the deadline (gio_stage::last_timeout holds the indices and the slot
 *         that was not free), or `-EINVAL` for @p n out of range.
 *
 * Any thread, host or device. The releases this waits for are other threads' (a mover's): a
 * thread that holds unreleased tickets of its own must not wait for more than nslots minus those.
 */
GIO_HD int gio_stage_reserve_wait(struct gio_stage *st, uint32_t n, uint64_t deadline, uint32_t *first)
{
	uint32_t spins = 0;
	for (;;) {
		const int rc = gio_stage_reserve(st, n, first);
		if (rc != -EBUSY)
			return rc;
		if (gio_deadline_passed(deadline)) {
			/* A snapshot for the caller's message: each field stored atomically, but when two
			 * waits expire at once the fields may come from either. */
			struct gio_stage_timeout *lt = &st->last_timeout;
			const uint32_t r = gio_load_acquire_in(st->scope, &st->reserved);
			uint32_t i;
			gio_store_relaxed_in(st->scope, &lt->reserved, r);
			for (i = 0; i < n; i++) {
				const uint32_t w = gio_load_acquire_in(st->scope, gio__stage_slot(st, r + i));
				if (w != gio__stage_word(st, r + i, GIO_STAGE_FREE) || i + 1 == n) {
					gio_store_relaxed_in(st->scope, &lt->slot, (r + i) & (st->nslots - 1));
					gio_store_relaxed_in(st->scope, &lt->word, w);
					gio_store_relaxed_in(st->scope, &lt->want, gio__stage_word(st, r + i, GIO_STAGE_FREE));
					break;
				}
			}
			return -ETIME;
		}
		gio_backoff(&spins);
	}
}

/* Moves ticket t's slot from state `from` to `to` (to's lap: t's, or the next for FREE). */
GIO_HD int gio__stage_move(struct gio_stage *st, uint32_t t, uint32_t from_mask, uint32_t to)
{
	uint32_t *w = gio__stage_slot(st, t);
	const uint32_t cur = gio_load_acquire_in(st->scope, w);
	if ((cur & ~3u) != gio__stage_word(st, t, 0) || !((1u << gio_stage_state(cur)) & from_mask))
		return -EINVAL;
	/* Only the ticket's holder moves a HELD or FULL slot, so a plain release store suffices:
	 * it orders the holder's (or the mover's) accesses to the slot before the new state. */
	gio_store_release_in(st->scope, w, to);
	return 0;
}

/**
 * @brief Marks ticket @p t's data complete in its slot: its command succeeded (HELD -> FULL).
 * @param st  the ring.
 * @param t   a HELD ticket.
 * @return 0, or `-EINVAL` when @p t's slot is not HELD for @p t (released, lost, or another lap).
 *
 * The ticket's holder, after its completion's acquire (the CQE's phase): a mover that sees FULL
 * with gio_stage_full() then reads the controller's data.
 */
GIO_HD int gio_stage_fill(struct gio_stage *st, uint32_t t)
{
	return gio__stage_move(st, t, 1u << GIO_STAGE_HELD, gio__stage_word(st, t, GIO_STAGE_FULL));
}

/**
 * @brief Whether ticket @p t's data is complete in its slot (FULL), with acquire.
 * @param st  the ring.
 * @param t   a ticket.
 * @return 1 when FULL for @p t, else 0.
 *
 * Any thread, host or device: a mover that is not the command's holder.
 */
GIO_HD int gio_stage_full(const struct gio_stage *st, uint32_t t)
{
	return gio_load_acquire_in(st->scope, gio__stage_slot(st, t)) == gio__stage_word(st, t, GIO_STAGE_FULL);
}

/**
 * @brief Gives ticket @p t's slot back: its object has moved out (a load) or been written to the
 *        device (a save), or its command failed with a completion (HELD or FULL -> FREE).
 * @param st  the ring.
 * @param t   a HELD or FULL ticket.
 * @return 0, or `-EINVAL` when @p t's slot is not HELD or FULL for @p t (a second release, a
 *         LOST slot, or a ticket of another lap): nothing changes then.
 *
 * The ticket's holder or its mover, once, after its last access to the slot's data.
 */
GIO_HD int gio_stage_release(struct gio_stage *st, uint32_t t)
{
	return gio__stage_move(st, t, (1u << GIO_STAGE_HELD) | (1u << GIO_STAGE_FULL),
			       gio__stage_word(st, t + st->nslots, GIO_STAGE_FREE));
}

/**
 * @brief Takes ticket @p t's slot out of use for good: its command missed its deadline, so the
 *        controller may still write the slot (HELD -> LOST).
 * @param st  the ring.
 * @param t   a HELD ticket.
 * @return 0, or `-EINVAL` when @p t's slot is not HELD for @p t.
 *
 * The ticket's holder. Reservations that wrap onto a LOST slot give `-EBUSY` (and their waits
 * `-ETIME`) rather than hand the controller a slot it may overwrite; gio_stage_init() again,
 * once the controller's queue is deleted, gives the slot back.
 */
GIO_HD int gio_stage_lose(struct gio_stage *st, uint32_t t)
{
	return gio__stage_move(st, t, 1u << GIO_STAGE_HELD, gio__stage_word(st, t, GIO_STAGE_LOST));
}

GIO_EXTERN_C_END

#endif /* GIOURING_RING_STAGE_H */
