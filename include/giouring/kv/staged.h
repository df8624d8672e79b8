/**
 * @file giouring/kv/staged.h
 * @brief The staged data path of one layer's requests: each command reads into (or writes from)
 *        a staging slot instead of its object's home, and a mover copies between the slot and
 *        the object's runs (docs/staged.md).
 *
 * Where the controller cannot reach the KV pool (no peer-to-peer mapping of GPU memory), request
 * `i` of a plan (giouring/kv/io.h) still becomes the same Read or Write, at the same LBAs, but
 * its data pointer is one SGL Data Block over a slot of a pinned host staging area
 * (giouring/ring/stage.h), or, for a controller without SGLs, the slot's entry of a staging table
 * built once with gio_kv_stage_table_entry() (PRPs, with a list where a slot spans more than two
 * pages). The object's bytes then move between the slot and the pool:
 * gio_kv_stage_moves() lists the copies, in the pool's own addresses (the mover's pointers:
 * GPU virtual addresses for a GPU pool), each from an offset in the slot.
 *
 * Everything here is pure (GIO_HD): a GPU warp and a CPU thread build the same commands and the
 * same copies.
 */
#ifndef GIOURING_KV_STAGED_H
#define GIOURING_KV_STAGED_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/sqe.h"
#include "../proto/dptr_build.h"
#include "../proto/sgl_build.h"
#include "../ring/stage.h"
#include "io.h"
#include "pool.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief A plan device's staging (gio_kv_io_dev::stage): the staged path for a controller that
 *        cannot reach the pool, one slot ring per queue pair of the device.
 *
 * Ring q serves the device's queue pair q (a group uses the rings of the queue pair it goes to),
 * its slots at `area + q x nslots x slot_bytes` as the mover reaches them (the CPU engine: host
 * memory; the GPU engine: the mapped pointer of pinned memory), its commands' data pointers at the
 * controller's addresses the ring holds (`gio_stage::base_bus`). Every ring has the same `nslots`
 * and `slot_bytes`.
 */
struct gio_kv_io_stage {
	struct gio_stage *rings;     /**< rings[q] for queue pair q (GPU engine: in device memory). */
	const union gio_dptr *table; /**< NULL: one SGL Data Block over the slot (the controller takes SGLs);
				          else a staging table, `nslots` entries per ring, ring after ring
				          (gio_kv_stage_table_entry()). */
	uint8_t *area;               /**< The slots, as the mover reaches them. */
};

/** @brief One copy between a staging slot and an object's home. */
struct gio_kv_stage_move {
	uint64_t dst;     /**< Address in the pool (the mover's address space). */
	uint64_t src_off; /**< Byte offset in the slot. */
	uint64_t len;     /**< Bytes. */
};

/**
 * @brief Writes slot @p slot's entry of a staging table: the data pointer of a staged command of
 *        @p bytes, in the form the controller takes (SGL where it has them, else PRP).
 * @param st         the staging area's ring.
 * @param slot       the slot, below st->nslots.
 * @param bytes      the plan's command bytes (object_bytes / cmds): 1 to st->slot_bytes. Staged
 *                   commands of any other size must not use the entry (an SGL Data Block must
 *                   describe exactly the transfer; a PRP list covers exactly these pages).
 * @param caps       the controller's rules (gio_ctx_dptr_caps()).
 * @param entry      receives the data pointer; untouched on error.
 * @param mem        memory for this slot's PRP list (or SGL segment), or NULL where none is
 *                   needed; slots that start on a page and span at most two pages need none.
 * @param mem_addr   the controller's address of @p mem, 8-byte aligned.
 * @param mem_bytes  bytes at @p mem.
 * @return the bytes of @p mem used (0: DPTR holds the whole pointer), `-EINVAL` for @p slot or
 *         @p bytes out of range, or gio_dptr_build()'s errors (`-E2BIG` above MDTS, `-EINVAL`,
 *         `-ENOSPC` where @p mem is too small). Nothing is written on error.
 *
 * Pure; any thread, host or device. Built once per staging area and command size, like the P2P
 * table; the command's PSDT is then the device's (gio_kv_io_dev::psdt), which must name the same form.
 */
GIO_HD int gio_kv_stage_table_entry(const struct gio_stage *st, uint32_t slot, uint64_t bytes,
				    const struct gio_dptr_caps *caps, union gio_dptr *entry, void *mem, uint64_t mem_addr,
				    uint64_t mem_bytes)
{
	struct gio_sqe sqe;
	struct gio_range r;
	int rc;
	if (slot >= st->nslots || bytes == 0 || bytes > st->slot_bytes)
		return -EINVAL;
	gio_prep_cmd(&sqe, GIO_NVM_OPC_READ, 1);
	r.addr = gio_stage_bus(st, slot);
	r.len = (uint32_t)bytes;
	rc = gio_dptr_build(&sqe, &r, 1, caps, mem, mem_addr, mem_bytes);
	if (rc >= 0)
		*entry = sqe.dptr;
	return rc;
}

/**
 * @brief The staged command of request @p i for layer @p layer: the request's Read or Write
 *        with ticket @p t's slot as its data.
 * @param p      the plan (its devices' P2P tables are not read).
 * @param layer  the layer, below p->layers.
 * @param i      the request, below p->nreqs.
 * @param st     the staging area's ring.
 * @param t      the request's ticket, reserved from @p st.
 * @param table  NULL: one SGL Data Block over the slot (the controller must take SGLs); else the
 *               staging table, st->nslots entries from gio_kv_stage_table_entry() for this plan's
 *               command bytes, with the PSDT of the request's device.
 * @param sqe    receives the command (CID left to the ring).
 * @return 0, or `-EINVAL` as gio_kv_io_sqe() (a request the plan cannot form), or when the
 *         command's bytes exceed the slot (the staging area was sized for a smaller object).
 *
 * Pure; any thread, host or device. Without a table the slot's bus address and size are
 * multiples of 4, as gio_stage_init() requires, so the Data Block also meets the dword rule.
 */
GIO_HD int gio_kv_stage_sqe(const struct gio_kv_io_plan *p, uint32_t layer, uint32_t i,
			    const struct gio_stage *st, uint32_t t, const union gio_dptr *table, struct gio_sqe *sqe)
{
	uint64_t bytes, entry;
	const int rc = gio__kv_io_rw(p, layer, i, sqe, &bytes, &entry);
	if (rc)
		return rc;
	if (bytes > st->slot_bytes)
		return -EINVAL;
	if (!table) {
		gio_sqe_set_sgl_data(sqe, gio_stage_bus(st, t), (uint32_t)bytes);
		return 0;
	}
	sqe->dptr = table[t & (st->nslots - 1)];
	gio_sqe_set_psdt(sqe, (uint8_t)p->devs[p->reqs[i].dev].psdt);
	return 0;
}

/**
 * @brief The copies that move command @p part (of @p cmds) of object (@p layer, @p block)
 *        between its slot and the pool, from the @p first-th on: at most @p cap of them.
 * @param pool   a pool that gio_kv_pool_runs() accepted.
 * @param runs   its runs.
 * @param layer  layer, below the pool's layer extent.
 * @param block  block, below the pool's block extent.
 * @param part   the command, below @p cmds.
 * @param cmds   commands per object (gio_kv_io_dev::cmds; 0 means 1); must divide the object.
 * @param first  the first copy wanted (0: from the slot's first byte).
 * @param out    receives the copies in slot order, or NULL (then nothing is written and the
 *               count from @p first on is returned).
 * @param cap    entries available at @p out.
 * @return the copies written (0 once @p first is past the last), or with @p out NULL their count
 *         from @p first on; `-EINVAL` for @p layer, @p block or @p part out of range, or @p cmds
 *         not dividing the object (nothing written).
 *
 * Pure; any thread, host or device: an engine with a small buffer walks a command's copies in
 * windows. Slot offset 0 is the command's first byte, which is byte `part x object_bytes / cmds`
 * of the object in device order (gio_kv_object_ranges()).
 */
GIO_HD int gio_kv_stage_moves_at(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint32_t layer,
				 uint32_t block, uint32_t part, uint32_t cmds, uint32_t first,
				 struct gio_kv_stage_move *out, uint32_t cap)
{
	uint64_t bytes, start, end, r0, r1, r, n;
	if (cmds == 0)
		cmds = 1;
	if (layer >= pool->extent[GIO_KV_LAYER] || block >= pool->extent[GIO_KV_BLOCK] || part >= cmds ||
	    runs->run_bytes == 0 || runs->object_bytes % cmds)
		return -EINVAL;
	bytes = runs->object_bytes / cmds;
	if (bytes == 0)
		return -EINVAL;
	start = (uint64_t)part * bytes;
	end = start + bytes;
	r0 = start / runs->run_bytes;
	r1 = (end + runs->run_bytes - 1) / runs->run_bytes;
	if (r1 - r0 > INT32_MAX)
		return -EINVAL;
	n = r1 - r0 > first ? r1 - r0 - first : 0;
	if (!out)
		return (int)n;
	if (n > cap)
		n = cap;
	for (r = r0 + first; r < r0 + first + n; r++) {
		const uint64_t lo = r * runs->run_bytes > start ? r * runs->run_bytes : start;
		const uint64_t hi = (r + 1) * runs->run_bytes < end ? (r + 1) * runs->run_bytes : end;
		struct gio_kv_stage_move *m = &out[r - r0 - first];
		m->dst = gio_kv_run_addr(pool, runs, layer, block, (uint32_t)r) + (lo - r * runs->run_bytes);
		m->src_off = lo - start;
		m->len = hi - lo;
	}
	return (int)n;
}

/**
 * @brief Every copy that moves command @p part (of @p cmds) of object (@p layer, @p block)
 *        between its slot and the pool; call with @p out NULL to learn how many.
 * @param pool   a pool that gio_kv_pool_runs() accepted.
 * @param runs   its runs.
 * @param layer  layer, below the pool's layer extent.
 * @param block  block, below the pool's block extent.
 * @param part   the command, below @p cmds.
 * @param cmds   commands per object (gio_kv_io_dev::cmds; 0 means 1); must divide the object.
 * @param out    receives the copies in slot order, or NULL.
 * @param cap    entries available at @p out.
 * @return the number of copies (written, or needed when @p out is NULL), or
 *   - `-EINVAL`: @p layer, @p block or @p part out of range, or @p cmds not dividing the object;
 *   - `-ENOSPC`: @p cap is below the count.
 *   Nothing is written on error. gio_kv_stage_moves_at() gives them in windows.
 */
GIO_HD int gio_kv_stage_moves(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint32_t layer,
			      uint32_t block, uint32_t part, uint32_t cmds, struct gio_kv_stage_move *out, uint32_t cap)
{
	const int n = gio_kv_stage_moves_at(pool, runs, layer, block, part, cmds, 0, (struct gio_kv_stage_move *)0, 0);
	if (n < 0 || !out)
		return n;
	if (cap < (uint32_t)n)
		return -ENOSPC;
	return gio_kv_stage_moves_at(pool, runs, layer, block, part, cmds, 0, out, cap);
}

GIO_EXTERN_C_END

#endif /* GIOURING_KV_STAGED_H */
