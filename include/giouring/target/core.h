/**
 * @file giouring/target/core.h
 * @brief The software NVMe target's command core: one controller, written once, run by executors.
 *
 * It behaves like a PCIe NVMe controller whose BAR0 is ordinary shared memory (struct
 * gio_tgt_bar): the host writes CC, AQA, ASQ, ACQ and doorbells there exactly as it would to a
 * real controller's registers, so one bring-up path serves both. Executors (the CPU thread pool of
 * the host library, the persistent GPU kernel of giouring/target/gpu_target.h) call these functions:
 *
 * - gio_tgt_poll_regs(): controller enable, disable and shutdown (CC.EN, CC.SHN -> CSTS);
 * - gio_tgt_fetch() / gio_tgt_fetch_batch(): the next SQEs of a queue, as far as the CQ has
 *   room for their completions;
 * - gio_tgt_admin(): admin commands (Identify, create/delete I/O queues, Number of Queues, ...);
 * - gio_tgt_io_prepare(): checks of an I/O command (opcode, NSID, LBA range, MDTS, PSDT against
 *   SGLS) and its data pointer walked into segments, each checked against registered memory;
 * - gio_tgt_io_copy_mem(): data movement for a memory backing store;
 * - gio_tgt_post() / gio_tgt_post_at() + gio_tgt_post_done(): completions, with the right
 *   phase, SQ head, SQ and command identifiers.
 *
 * Every failure gets the NVMe status a controller returns (see each function). Bus addresses in
 * commands are resolved through the registered-memory map (giouring/proto/dma_map.h): anything outside
 * it is refused with Data Transfer Error before a byte moves.
 *
 * Concurrency contract:
 * - one thread (the register thread) runs gio_tgt_poll_regs() and serves the admin queue;
 * - each completion queue, with every submission queue that posts to it, is served by exactly
 *   one thread at a time (gio_tgt_post() advances the CQ's tail without atomics);
 * - I/O serving is quiesced while gio_tgt_poll_regs() acts on a CC change or an admin command
 *   runs: a controller reset and Delete I/O SQ/CQ rewrite queue fields that the serving threads
 *   read without synchronisation (a real controller also finishes or aborts outstanding commands
 *   before it reports the reset). gio_tgt_cc_changed() and gio_tgt_admin_pending() tell the
 *   register thread, cheaply, when it must quiesce. Queue creation alone would not need it: it
 *   publishes the queue with a release store that the serving thread acquires.
 * Counters are per submission queue for the same reason; gio_tgt_get_stats() sums them.
 */
#ifndef GIOURING_TARGET_CORE_H
#define GIOURING_TARGET_CORE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../config.h"
#include "../proto/dma_map.h"
#include "../proto/dptr.h"
#include "../nvme/cqe.h"
#include "../nvme/identify.h"
#include "../nvme/regs.h"
#include "../nvme/sqe.h"
#include "../ring/ordering.h"
#include "../proto/prp_walk.h"
#include "../proto/sgl_walk.h"
#include "../proto/xfer.h"

GIO_EXTERN_C_BEGIN

/** @brief Most I/O queue pairs a software target offers. */
#define GIO_TGT_MAX_IO_QUEUES 1024u
/** @brief Data segments one command may have (the executor's scatter list capacity). */
#define GIO_TGT_MAX_SEGS 256u
/** @brief The namespace identifier of the target's single namespace. */
#define GIO_TGT_NSID 1u

/**
 * @brief The emulated BAR0: controller registers, then doorbells with CAP.DSTRD = 0.
 * Doorbell offsets follow gio_sq_doorbell_offset() / gio_cq_doorbell_offset().
 */
struct gio_tgt_bar {
	struct gio_nvme_regs regs; /**< Registers up to the admin queue doorbells. */
	uint32_t io_doorbells[2 * GIO_TGT_MAX_IO_QUEUES]; /**< I/O SQ tail / CQ head doorbells, qid 1 on. */
};

GIO_STATIC_ASSERT(offsetof(struct gio_tgt_bar, io_doorbells) == 0x1008, "qid 1 SQ doorbell at 0x1008");

/** @brief What the target advertises and enforces. */
struct gio_tgt_config {
	uint32_t sgls;          /**< SGLS it reports (GIO_SGLS_*); 0 for PRP only. */
	uint8_t mdts;           /**< MDTS it reports: 2^mdts 4 KiB pages (0 to 20); 0 means no limit. */
	uint8_t lba_shift;      /**< log2 of the logical block size, 9 to 16. */
	uint16_t max_io_queues; /**< I/O queue pairs it grants, 1 to GIO_TGT_MAX_IO_QUEUES. */
	uint16_t mqes;          /**< CAP.MQES: largest queue size minus one, 1 to 65535. */
	uint16_t rsvd;          /**< Zero. */
	uint64_t nsze;          /**< Namespace size in logical blocks, at least 1. */
};

/** @brief One submission or completion queue as the target sees it. */
struct gio_tgt_queue {
	uint64_t addr;     /**< Bus address of the entries. */
	uint32_t depth;    /**< Entries (0 when the queue does not exist). */
	uint32_t idx;      /**< SQ: head slot; CQ: tail slot. */
	uint32_t phase;    /**< CQ: phase tag of the next entry posted. */
	uint32_t inflight; /**< CQ: completions promised to fetched commands, not posted yet. */
	uint16_t cqid;     /**< SQ: its completion queue. */
	uint16_t nsq;      /**< CQ: submission queues posting to it. */
	uint32_t live;     /**< Published with a release store; 0 or 1. */
	void *entries;     /**< Translated pointer to the entries. */
	/* Counters, kept per submission queue so that only its serving thread writes them; they
	 * survive controller resets. Read them with gio_tgt_get_stats(). */
	uint64_t commands;      /**< SQ: commands completed. */
	uint64_t errors;        /**< SQ: of which with an error status. */
	uint32_t bad_doorbells; /**< SQ: fetches that found its tail, or its CQ's head, outside the queue. */
	uint32_t head_seen;     /**< CQ: its head doorbell as last read (entries below it are consumed). */
};

/** @brief The GPU executor's SSD timing model's clock (%globaltimer ns; all 0 at start). */
struct gio_tgt_model_clock {
	unsigned long long busy_ns;   /**< When the device's booked transfers end: its one timeline. */
	unsigned long long reads_ns;  /**< When its last booked read ends. */
	unsigned long long writes_ns; /**< When its last booked write ends. */
};

/** @brief Controller state kept by the target. */
struct gio_tgt {
	struct gio_tgt_bar *bar;                    /**< Shared registers and doorbells. */
	struct gio_tgt_config cfg;                  /**< What it advertises. */
	struct gio_dptr_caps caps;                  /**< Rules for data pointers (from cfg and CC). */
	const struct gio_dma_map *map;              /**< Registered memory the executor reaches with loads and stores. */
	/** Registered memory the executor reaches only through a copy engine (GPU memory for a CPU
	 *  executor), or NULL. Data segments may lie here; queues, PRP lists and SGL segments never
	 *  do (they are read and written in place, so they are looked up in `map` alone). */
	const struct gio_dma_map *copy_map;
	struct gio_tgt_queue sq[GIO_TGT_MAX_IO_QUEUES + 1]; /**< Submission queues by qid. */
	struct gio_tgt_queue cq[GIO_TGT_MAX_IO_QUEUES + 1]; /**< Completion queues by qid. */
	uint32_t cc;         /**< The CC value last acted on. */
	uint32_t ready;      /**< 1 while enabled successfully (CSTS.RDY). */
	uint32_t nq_granted; /**< I/O queue pairs granted by Number of Queues (0 until asked). */
	uint32_t scope;      /**< Ordering scope of its ring accesses (GIO_SCOPE_SYS unless every
			          producer runs on the GPU that executes it: GIO_SCOPE_GPU). */
	uint32_t rsvd;       /**< Zero. */
	struct gio_tgt_model_clock model; /**< GPU executor's SSD timing model. */
};

/** @brief Totals of the per-queue counters (gio_tgt_get_stats()). */
struct gio_tgt_stats {
	uint64_t commands;      /**< Commands completed, admin included. */
	uint64_t errors;        /**< Of which with an error status. */
	uint64_t bad_doorbells; /**< Fetches that found a doorbell naming a slot outside its queue. */
};

/** @brief A checked I/O command, ready for the data mover. */
struct gio_tgt_io {
	uint8_t opc;        /**< GIO_NVM_OPC_*. */
	uint8_t is_write;   /**< Data flows host -> target. */
	uint16_t rsvd;      /**< Zero. */
	uint32_t nlb;       /**< Logical blocks. */
	uint64_t slba;      /**< First logical block. */
	uint64_t offset;    /**< Byte offset in the backing store. */
	uint64_t bytes;     /**< Bytes moved (0 for Flush). */
	struct gio_xfer_list xfer; /**< Data segments (bus addresses). */
};

/** @brief What checking an I/O command and finding its memory read of a target: its fixed part
 *  while it serves I/O (gio_tgt_io_rules_of()), which an executor may copy into faster memory. */
struct gio_tgt_io_rules {
	uint64_t nsze;                      /**< Namespace size in logical blocks. */
	uint32_t lba_shift;                 /**< log2 of the logical block size. */
	uint32_t flags;                     /**< 0, or GIO_TGT_RULES_MAP_FIXED. */
	struct gio_dptr_caps caps;          /**< Rules for data pointers. */
	const struct gio_dma_map *map;      /**< As gio_tgt::map. */
	const struct gio_dma_map *copy_map; /**< As gio_tgt::copy_map. */
};

/** @brief gio_tgt_io_rules::flags: `map` is a private copy of the target's table that nothing
 *  changes while the rules are in use, so its count is read plainly (gio_dma_map_region_fixed()),
 *  where the target's own table, which a registrar may grow, is read with an acquire. */
#define GIO_TGT_RULES_MAP_FIXED 1u

#define GIO__TGT_SF(sct, sc) ((uint16_t)(GIO_SF((sct), (sc)) | GIO_SF_DNR))

/**
 * @brief Initialises a target over its register block and registered memory.
 * @param t    the target.
 * @param bar  the shared register block; zeroed here, then CAP and VS are set.
 * @param cfg  what to advertise.
 * @param map  registered memory (may grow later; the target reads it on every command).
 * @return 0, or `-EINVAL` for a configuration outside the documented ranges.
 *
 * Any thread, before executors start.
 */
GIO_HD int gio_tgt_init(struct gio_tgt *t, struct gio_tgt_bar *bar, const struct gio_tgt_config *cfg,
			const struct gio_dma_map *map)
{
	uint32_t i;
	if (!t || !bar || !cfg || !map || cfg->lba_shift < 9 || cfg->lba_shift > 16 || cfg->nsze == 0 ||
	    cfg->max_io_queues == 0 || cfg->max_io_queues > GIO_TGT_MAX_IO_QUEUES || cfg->mqes == 0 || cfg->mdts > 20 ||
	    GIO_GET(cfg->sgls, SGLS_SUPPORT) == 3u || (cfg->nsze >> (64 - cfg->lba_shift)) != 0)
		return -EINVAL;
	memset(bar, 0, sizeof(*bar));
	memset(t, 0, sizeof(*t));
	t->bar = bar;
	t->cfg = *cfg;
	t->map = map;
	/* CQR: queues must be contiguous; TO 2 (1 s); DSTRD 0; NVM command set; pages 4 KiB-64 KiB. */
	bar->regs.cap = GIO_SET(CAP_MQES, (uint64_t)cfg->mqes) | GIO_SET(CAP_CQR, 1ull) | GIO_SET(CAP_TO, 2ull) |
			GIO_SET(CAP_CSS, (uint64_t)GIO_CAP_CSS_NVM) | GIO_SET(CAP_MPSMIN, 0ull) |
			GIO_SET(CAP_MPSMAX, 4ull);
	bar->regs.vs = (1u << GIO_VS_MJR_SHIFT) | (4u << GIO_VS_MNR_SHIFT);
	t->caps.sgls = cfg->sgls;
	t->caps.page_bytes = 4096;
	t->caps.max_xfer_bytes = cfg->mdts ? (4096ull << cfg->mdts) : 0;
	for (i = 0; i <= GIO_TGT_MAX_IO_QUEUES; i++) {
		t->sq[i].live = 0;
		t->cq[i].live = 0;
	}
	return 0;
}

/* Drops every queue and clears every doorbell (controller reset: a re-enabled controller starts
 * from slot 0 of new queues). */
GIO_HD void gio__tgt_reset_queues(struct gio_tgt *t)
{
	uint32_t i;
	for (i = 0; i <= GIO_TGT_MAX_IO_QUEUES; i++) {
		gio_store_release_in(t->scope, &t->sq[i].live, 0);
		gio_store_release_in(t->scope, &t->cq[i].live, 0);
		t->sq[i].depth = t->cq[i].depth = 0;
		t->cq[i].inflight = 0;
		t->cq[i].nsq = 0;
	}
	gio_store_release_in(t->scope, &t->bar->regs.doorbell[0], 0);
	gio_store_release_in(t->scope, &t->bar->regs.doorbell[1], 0);
	for (i = 0; i < 2 * GIO_TGT_MAX_IO_QUEUES; i++)
		gio_store_release_in(t->scope, &t->bar->io_doorbells[i], 0);
	t->nq_granted = 0;
	t->ready = 0;
}

/* Sets up queue `q` over `entries` entries of `esize` bytes at bus address `addr`. */
GIO_HD int gio__tgt_queue_setup(struct gio_tgt *t, struct gio_tgt_queue *q, uint64_t addr, uint32_t entries,
				uint32_t esize)
{
	void *p = gio_dma_map_find(t->map, addr, (uint64_t)entries * esize);
	/* The entries are accessed through p with 16-bit atomics (and 16-byte vectors on the GPU):
	 * p must be aligned like the bus address, which the map does not promise. */
	if (p == NULL || (addr & 0xfffu) || ((uintptr_t)p & (esize - 1u)))
		return -EINVAL;
	q->addr = addr;
	q->depth = entries;
	q->idx = 0;
	q->phase = 1;
	q->inflight = 0;
	q->nsq = 0;
	q->head_seen = 0;
	q->entries = p;
	return 0;
}

/**
 * @brief Whether CC was written since gio_tgt_poll_regs() last acted on it.
 * @param t  the target.
 * @return 1 when gio_tgt_poll_regs() has something to do (quiesce I/O serving first), else 0.
 *
 * The register thread.
 */
GIO_HD int gio_tgt_cc_changed(const struct gio_tgt *t)
{
	return gio_load_relaxed(&t->bar->regs.cc) != t->cc;
}

/**
 * @brief Whether the admin submission queue holds a command not fetched yet.
 * @param t  the target.
 * @return 1 when there is one (quiesce I/O serving, then serve it), else 0.
 *
 * The register thread.
 */
GIO_HD int gio_tgt_admin_pending(const struct gio_tgt *t)
{
	return gio_load_relaxed(&t->sq[0].live) && gio_load_relaxed(&t->bar->regs.doorbell[0]) != t->sq[0].idx;
}

/**
 * @brief Acts on register writes: enable, disable, shutdown.
 * @param t  the target.
 * @return 1 when the controller state changed, else 0.
 *
 * The register thread only. On CC.EN 0 -> 1 it checks AQA/ASQ/ACQ (registered, 4 KiB aligned,
 * sizes within CAP.MQES), CC.MPS, IOSQES and IOCQES and sets CSTS.RDY, or sets CSTS.CFS (Controller
 * Fatal Status) when they are invalid. On 1 -> 0 it drops every queue and clears CSTS.RDY. On
 * CC.SHN it stops serving and reports CSTS.SHST complete.
 */
GIO_HD int gio_tgt_poll_regs(struct gio_tgt *t)
{
	struct gio_nvme_regs *r = &t->bar->regs;
	const uint32_t cc = gio_load_acquire_in(t->scope, &r->cc); /* pairs with the host's release of CC */
	const uint32_t old = t->cc;
	if (cc == old)
		return 0;
	t->cc = cc;
	if (GIO_GET(cc, CC_EN) && !GIO_GET(old, CC_EN)) {
		const uint32_t aqa = gio_load_relaxed(&r->aqa);
		const uint32_t asqs = GIO_GET(aqa, AQA_ASQS) + 1, acqs = GIO_GET(aqa, AQA_ACQS) + 1;
		const uint32_t mps = GIO_GET(cc, CC_MPS);
		uint64_t asq, acq;
		memcpy(&asq, &r->asq, sizeof(asq));
		memcpy(&acq, &r->acq, sizeof(acq));
		gio__tgt_reset_queues(t);
		if (asqs < 2 || acqs < 2 || asqs > t->cfg.mqes + 1u || acqs > t->cfg.mqes + 1u || mps > 4 ||
		    GIO_GET(cc, CC_IOSQES) != GIO_SQE_SHIFT || GIO_GET(cc, CC_IOCQES) != GIO_CQE_SHIFT ||
		    GIO_GET(cc, CC_CSS) != GIO_CC_CSS_NVM ||
		    gio__tgt_queue_setup(t, &t->sq[0], asq, asqs, GIO_SQE_BYTES) ||
		    gio__tgt_queue_setup(t, &t->cq[0], acq, acqs, GIO_CQE_BYTES)) {
			gio_store_release_in(t->scope, &r->csts, GIO_SET(CSTS_CFS, 1u));
			return 1;
		}
		t->caps.page_bytes = (uint32_t)gio_mps_bytes(mps);
		t->sq[0].cqid = 0;
		t->cq[0].nsq = 1;
		gio_store_release_in(t->scope, &t->cq[0].live, 1);
		gio_store_release_in(t->scope, &t->sq[0].live, 1);
		t->ready = 1;
		gio_store_release_in(t->scope, &r->csts, GIO_SET(CSTS_RDY, 1u));
		return 1;
	}
	if (!GIO_GET(cc, CC_EN) && GIO_GET(old, CC_EN)) {
		gio__tgt_reset_queues(t);
		gio_store_release_in(t->scope, &r->csts, 0);
		return 1;
	}
	if (GIO_GET(cc, CC_SHN) != GIO_CC_SHN_NONE && GIO_GET(cc, CC_SHN) != GIO_GET(old, CC_SHN)) {
		/* Queues stop; data already completed is in the backing store (the executor flushes).
		 * RDY stays as it was (a failed enable keeps CFS and never reports ready). */
		const uint32_t csts = gio_load_relaxed(&r->csts);
		gio__tgt_reset_queues(t);
		gio_store_release_in(t->scope, &r->csts, (csts & ~(GIO_CSTS_SHST_MASK << GIO_CSTS_SHST_SHIFT)) |
						   GIO_SET(CSTS_SHST, GIO_CSTS_SHST_COMPLETE));
		return 1;
	}
	return 0;
}

/* Doorbell word of SQ `qid` (tail) or CQ `qid` (head). */
GIO_HD uint32_t *gio__tgt_doorbell(struct gio_tgt *t, uint16_t qid, int cq)
{
	const uint64_t off = cq ? gio_cq_doorbell_offset(t->bar->regs.cap, qid) : gio_sq_doorbell_offset(t->bar->regs.cap, qid);
	return (uint32_t *)((char *)t->bar + off);
}

/* x % depth for x < 2 depth (a ring index plus less than a lap): a compare where `%` divides,
 * which is a chain of some twenty instructions on a GPU. */
GIO_HD uint32_t gio__tgt_wrap(uint32_t x, uint32_t depth)
{
	return x >= depth ? x - depth : x;
}

/* How gio__tgt_fetch_q() and gio__tgt_post_done_q() treat the queue state they are given. */
#define GIO__TGT_Q_HEAD_ALWAYS 1u /* read the CQ head doorbell at every fetch (the exact check) */
#define GIO__TGT_Q_PRIVATE 2u     /* a private copy (a GPU executor lane's registers): plain stores */

/* A counter of queue state: by a relaxed store where another thread may read it (the target's own
 * state, gio_tgt_get_stats()), plainly in a private copy, whose address then need not exist (the
 * store of an asm statement would keep a GPU lane's copy in local memory). */
GIO_HD void gio__tgt_q_count32(uint32_t *c, uint32_t v, uint32_t qflags)
{
	if (qflags & GIO__TGT_Q_PRIVATE)
		*c = v;
	else
		gio_store_relaxed(c, v);
}

GIO_HD void gio__tgt_q_count64(uint64_t *c, uint64_t v, uint32_t qflags)
{
	if (qflags & GIO__TGT_Q_PRIVATE)
		*c = v;
	else
		gio_store_relaxed64(c, v);
}

/* The fetch after the SQ tail is known, on the state of an SQ and of its CQ: the target's
 * own (gio__tgt_fetch_core()) or a copy its one serving thread keeps where it is cheaper to reach
 * (a GPU executor lane's registers, GIO__TGT_Q_PRIVATE) and writes back. With
 * GIO__TGT_Q_HEAD_ALWAYS the CQ head doorbell is read every time (the exact check); without, only
 * when the CQ may be full by the head read last time. */
GIO_HD int gio__tgt_fetch_q(struct gio_tgt *t, struct gio_tgt_queue *sq, struct gio_tgt_queue *cq, uint32_t max,
			     uint32_t tail, uint32_t *slot, uint32_t qflags)
{
	uint32_t head, used, avail, room;
	if (tail >= sq->depth) {
		gio__tgt_q_count32(&sq->bad_doorbells, sq->bad_doorbells + 1, qflags);
		return 0;
	}
	if (tail == sq->idx)
		return 0;
	used = gio__tgt_wrap(cq->idx + cq->depth - cq->head_seen, cq->depth);
	if ((qflags & GIO__TGT_Q_HEAD_ALWAYS) || used + cq->inflight + 1 >= cq->depth) {
		/* Room check: consumed CQ head (pairs with the host's release of the CQ head doorbell:
		 * the entries below it are consumed and may be overwritten). */
		head = gio_load_acquire_in(t->scope, gio__tgt_doorbell(t, sq->cqid, 1));
		if (head >= cq->depth) { /* a head doorbell outside the queue: treat the CQ as full */
			gio__tgt_q_count32(&sq->bad_doorbells, sq->bad_doorbells + 1, qflags);
			return 0;
		}
		cq->head_seen = head;
		used = gio__tgt_wrap(cq->idx + cq->depth - head, cq->depth);
		if (used + cq->inflight + 1 >= cq->depth)
			return 0;
	}
	room = cq->depth - 1 - used - cq->inflight;
	avail = gio__tgt_wrap(tail + sq->depth - sq->idx, sq->depth);
	if (avail > room)
		avail = room;
	if (avail > max)
		avail = max;
	*slot = sq->idx;
	sq->idx = gio__tgt_wrap(sq->idx + avail, sq->depth);
	cq->inflight += avail;
	return (int)avail;
}

GIO_HD int gio__tgt_fetch_core(struct gio_tgt *t, uint16_t qid, uint32_t max, uint32_t tail, uint32_t *slot,
				uint32_t qflags)
{
	return gio__tgt_fetch_q(t, &t->sq[qid], &t->cq[t->sq[qid].cqid], max, tail, slot, qflags);
}

/**
 * @brief Fetches up to @p max commands of submission queue @p qid at once, as far as its CQ has
 * room for their results (the batch form of gio_tgt_fetch(), for a warp of a GPU executor).
 * @param t     the target.
 * @param qid   the queue (0: admin).
 * @param max   most commands wanted, at least 1.
 * @param slot  receives the SQ slot of the first one; command i is entry (slot + i) % depth,
 *              read it with gio_tgt_sqe().
 * @return how many were fetched (their completion slots are reserved: post each exactly once,
 *         with gio_tgt_post_at() then gio_tgt_post_done(), or with gio_tgt_post() one at a time),
 *         0 when there is none or the CQ is full, `-ENODEV` when the queue does not exist.
 *
 * The queue's serving thread only. The entries must be read before the host can reuse them,
 * i.e. before their completions are posted.
 */
GIO_HD int gio_tgt_fetch_batch(struct gio_tgt *t, uint16_t qid, uint32_t max, uint32_t *slot)
{
	if (qid > GIO_TGT_MAX_IO_QUEUES)
		return -ENODEV;
	if (!gio_load_acquire_in(t->scope, &t->sq[qid].live))
		return -ENODEV;
	/* Pairs with the host's release of the SQ tail: the entries before it are written. */
	return gio__tgt_fetch_core(t, qid, max, gio_load_acquire_in(t->scope, gio__tgt_doorbell(t, qid, 0)), slot,
				   GIO__TGT_Q_HEAD_ALWAYS);
}

/**
 * @brief gio_tgt_fetch_batch() with the SQ tail doorbell already read, and the CQ head doorbell
 * read only when needed.
 * @param t     the target.
 * @param qid   a live I/O queue (the caller checked).
 * @param max   at most this many commands.
 * @param tail  the SQ tail doorbell, read with an acquire load by the caller (or by another
 *              thread the caller is ordered after, such as a lane of its warp before a warp
 *              barrier).
 * @param slot  receives the slot of the first command.
 * @return as gio_tgt_fetch_batch().
 *
 * For executors that pay for every doorbell read (a GPU warp serving rings in host memory reads
 * one tail per lane, one round trip across PCIe for 32 queues). The CQ head doorbell is read
 * only when the CQ may be full by the head read last time: a host only moves it forward, so an
 * older value under-states the room, never over-states it. The cost: a head doorbell written
 * outside the queue, or moved backwards (both host bugs), is seen only at that next read.
 */
GIO_HD int gio_tgt_fetch_batch_at(struct gio_tgt *t, uint16_t qid, uint32_t max, uint32_t tail, uint32_t *slot)
{
	return gio__tgt_fetch_core(t, qid, max, tail, slot, 0);
}

/**
 * @brief The submission queue entry in slot @p slot of queue @p qid.
 * @param t     the target.
 * @param qid   a live queue.
 * @param slot  a slot from gio_tgt_fetch_batch() plus an offset (taken modulo the depth).
 * @return a pointer into the host's SQ memory.
 *
 * The queue's serving thread.
 */
GIO_HD const struct gio_sqe *gio_tgt_sqe(const struct gio_tgt *t, uint16_t qid, uint32_t slot)
{
	const struct gio_tgt_queue *sq = &t->sq[qid];
	return (const struct gio_sqe *)sq->entries + slot % sq->depth;
}

/**
 * @brief Fetches the next command of submission queue @p qid, if its CQ has room for the result.
 * @param t    the target.
 * @param qid  the queue (0: admin).
 * @param sqe  receives a copy of the entry.
 * @return 1 when a command was fetched (its completion slot is reserved: post exactly once with
 *         gio_tgt_post()), 0 when there is none or the CQ is full, `-ENODEV` when the queue does
 *         not exist.
 *
 * The queue's serving thread only.
 */
GIO_HD int gio_tgt_fetch(struct gio_tgt *t, uint16_t qid, struct gio_sqe *sqe)
{
	uint32_t slot;
	const int n = gio_tgt_fetch_batch(t, qid, 1, &slot);
	if (n == 1)
		memcpy(sqe, gio_tgt_sqe(t, qid, slot), sizeof(*sqe));
	return n;
}

/* The k-th free entry of a CQ whose entries, tail slot, depth and phase are given (k < depth),
 * with Dwords 0 to 2 written, and its phase tag: Dword 3 (CID and status word, with the tag) is
 * the caller's to publish. */
GIO_HD struct gio_cqe *gio__tgt_cqe_put012(void *entries, uint32_t idx, uint32_t depth, uint32_t phase, uint32_t k,
					    uint32_t dw0, uint16_t sqhd, uint16_t sqid, uint32_t *tag)
{
	const uint32_t pos = idx + k;
	struct gio_cqe *e = (struct gio_cqe *)entries + (pos >= depth ? pos - depth : pos);
	*tag = pos >= depth ? phase ^ 1u : phase;
	e->dw0 = dw0;
	e->dw1 = 0;
	e->sqhd = sqhd;
	e->sqid = sqid;
	return e;
}

/* gio__tgt_cqe_put012() for the k-th completion of SQ `sqid`'s batch. */
GIO_HD struct gio_cqe *gio__tgt_cqe_fill(struct gio_tgt *t, uint16_t sqid, uint32_t k, uint32_t dw0, uint32_t *phase)
{
	const struct gio_tgt_queue *sq = &t->sq[sqid], *cq = &t->cq[sq->cqid];
	return gio__tgt_cqe_put012(cq->entries, cq->idx, cq->depth, cq->phase, k, dw0, (uint16_t)sq->idx, sqid, phase);
}

/**
 * @brief Writes the completion of one command of a batch into the @p k-th free CQ entry.
 * @param t       the target.
 * @param sqid    the submission queue it came from.
 * @param k       its position in the batch, 0 to n - 1 (n fetched and not yet posted).
 * @param cid     its command identifier.
 * @param status  the status field (0 for success; SC, SCT, DNR as the command's checks gave).
 * @param dw0     completion Dword 0.
 *
 * The serving thread of @p sqid; the lanes of a warp may post different @p k at once, then one
 * of them calls gio_tgt_post_done() for the batch after a barrier. Writes Dwords 0 to 2, then
 * Dword 3 (the CID and the status word with the phase tag of that entry) by one release store: a
 * consumer that sees the new phase sees the rest and the data (pairs with the consumer's acquire
 * load of Dword 3, gio_cqe_dw3()).
 * The host consumes entries in order, so an entry published before an earlier one waits there.
 */
GIO_HD void gio_tgt_post_at(struct gio_tgt *t, uint16_t sqid, uint32_t k, uint16_t cid, uint16_t status, uint32_t dw0)
{
	uint32_t phase;
	struct gio_cqe *e = gio__tgt_cqe_fill(t, sqid, k, dw0, &phase);
	gio_store_release_in(t->scope, gio_cqe_dw3(e), GIO_CQE_DW3(cid, (status << 1) | phase));
}

/* gio_tgt_post_done() on the state of an SQ and its CQ (see gio__tgt_fetch_q(); qflags:
 * GIO__TGT_Q_PRIVATE or 0). */
GIO_HD void gio__tgt_post_done_q(struct gio_tgt_queue *sq, struct gio_tgt_queue *cq, uint32_t n, uint32_t nerr,
				  uint32_t qflags)
{
	cq->idx += n;
	if (cq->idx >= cq->depth) {
		cq->idx -= cq->depth;
		cq->phase ^= 1u;
	}
	cq->inflight -= n;
	gio__tgt_q_count64(&sq->commands, sq->commands + n, qflags);
	if (nerr)
		gio__tgt_q_count64(&sq->errors, sq->errors + nerr, qflags);
}

/**
 * @brief Advances the CQ over @p n completions written with gio_tgt_post_at().
 * @param t       the target.
 * @param sqid    the submission queue.
 * @param n       completions written at positions 0 to n - 1.
 * @param nerr    of which with an error status (for the counters).
 *
 * The serving thread of @p sqid, after every gio_tgt_post_at() of the batch.
 */
GIO_HD void gio_tgt_post_done(struct gio_tgt *t, uint16_t sqid, uint32_t n, uint32_t nerr)
{
	gio__tgt_post_done_q(&t->sq[sqid], &t->cq[t->sq[sqid].cqid], n, nerr, 0);
}

/**
 * @brief Posts the completion of a fetched command.
 * @param t       the target.
 * @param sqid    the submission queue it came from.
 * @param cid     its command identifier.
 * @param status  the status field (0 for success; SC, SCT, DNR as the command's checks gave).
 * @param dw0     completion Dword 0.
 *
 * The serving thread of @p sqid. gio_tgt_post_at() at position 0, then gio_tgt_post_done().
 */
GIO_HD void gio_tgt_post(struct gio_tgt *t, uint16_t sqid, uint16_t cid, uint16_t status, uint32_t dw0)
{
	gio_tgt_post_at(t, sqid, 0, cid, status, dw0);
	gio_tgt_post_done(t, sqid, 1, (status & 0x7ffu) ? 1u : 0u);
}

/**
 * @brief Aborts what the tail doorbell of submission queue @p qid shows and nobody fetched: the
 * commands a Delete I/O Submission Queue leaves behind.
 * @param t    the target.
 * @param qid  an I/O submission queue.
 * @return how many commands were completed with Command Aborted due to SQ Deletion (SCT 0, SC
 *         08h, no DNR: the command may be retried on another queue), or `-ENODEV` when @p qid is
 *         0, out of range or not live.
 *
 * The register thread, with I/O serving quiesced, before gio_tgt_admin() runs the Delete I/O
 * Submission Queue, so that each of the queue's commands ends with a completion before the
 * deletion's own (NVMe: after all commands are completed or aborted, the controller posts the
 * Delete's completion). Commands fetched earlier and not completed are the executor's to abort
 * (gio_tgt_post() with the same status): only it knows their identifiers. Each command is fetched
 * and posted as gio_tgt_fetch() and gio_tgt_post() would, so a CQ without room for another
 * completion stops it: a host that keeps at most depth - 1 commands outstanding per queue pair
 * (giouring/ring/qp.h does) always leaves room.
 */
GIO_HD int gio_tgt_abort_unfetched(struct gio_tgt *t, uint16_t qid)
{
	struct gio_sqe sqe;
	int n = 0;
	if (qid == 0 || qid > GIO_TGT_MAX_IO_QUEUES || !gio_load_relaxed(&t->sq[qid].live))
		return -ENODEV;
	while (gio_tgt_fetch(t, qid, &sqe) == 1) {
		gio_tgt_post(t, qid, sqe.cid, GIO_SF(GIO_SCT_GENERIC, GIO_SC_ABORT_SQ_DELETED), 0);
		n++;
	}
	return n;
}

/**
 * @brief Sums the per-queue counters.
 * @param t   the target.
 * @param st  receives the totals.
 *
 * Any thread; exact once the serving threads are quiet (while they run, a snapshot that may
 * lag by the commands in progress: the counters are read with relaxed loads).
 */
GIO_HD void gio_tgt_get_stats(const struct gio_tgt *t, struct gio_tgt_stats *st)
{
	uint32_t i;
	st->commands = st->errors = st->bad_doorbells = 0;
	for (i = 0; i <= GIO_TGT_MAX_IO_QUEUES; i++) {
		st->commands += gio_load_relaxed64(&t->sq[i].commands);
		st->errors += gio_load_relaxed64(&t->sq[i].errors);
		st->bad_doorbells += gio_load_relaxed(&t->sq[i].bad_doorbells);
	}
}

/* Copies `len` bytes of `src` into the segments of a PRP data pointer (admin data to the host). */
GIO_HD uint16_t gio__tgt_admin_out(struct gio_tgt *t, const struct gio_sqe *sqe, const void *src, uint32_t len)
{
	struct gio_xfer_seg segs[4];
	struct gio_xfer_list out = {segs, 4, 0};
	uint32_t i, done = 0;
	uint16_t st;
	if (gio_sqe_psdt(sqe) != GIO_PSDT_PRP) /* admin commands use PRPs (as QEMU requires) */
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
	st = gio_prp_walk(sqe, len, &t->caps, t->map, &out);
	if (st)
		return st;
	for (i = 0; i < out.n; i++) {
		void *p = gio_dma_map_find(t->map, segs[i].addr, segs[i].len);
		if (p == NULL)
			return GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
	}
	for (i = 0; i < out.n; i++) {
		memcpy(gio_dma_map_find(t->map, segs[i].addr, segs[i].len), (const char *)src + done, segs[i].len);
		done += (uint32_t)segs[i].len;
	}
	return 0;
}

/* Pads a fixed-width Identify string with spaces. */
GIO_HD void gio__tgt_idstr(char *dst, uint32_t width, const char *src)
{
	uint32_t i = 0;
	for (; i < width && src[i]; i++)
		dst[i] = src[i];
	for (; i < width; i++)
		dst[i] = ' ';
}

/**
 * @brief Fills Identify Controller data as the target reports it.
 * @param t   the target.
 * @param id  receives the structure.
 *
 * Any thread.
 */
GIO_HD void gio_tgt_identify_ctrl(const struct gio_tgt *t, struct gio_id_ctrl *id)
{
	memset(id, 0, sizeof(*id));
	id->vid = 0x1b36; /* the PCI vendor QEMU's emulated devices use: a software controller */
	id->ssvid = 0x1af4;
	gio__tgt_idstr(id->sn, GIO_ID_SN_BYTES, "GIO0001");
	gio__tgt_idstr(id->mn, GIO_ID_MN_BYTES, "giouring software NVMe target");
	gio__tgt_idstr(id->fr, GIO_ID_FR_BYTES, "0.1.0");
	id->mdts = t->cfg.mdts;
	id->cntlid = 1;
	id->ver = t->bar->regs.vs;
	id->sqes = (uint8_t)((GIO_SQE_SHIFT << 4) | GIO_SQE_SHIFT);
	id->cqes = (uint8_t)((GIO_CQE_SHIFT << 4) | GIO_CQE_SHIFT);
	id->nn = 1;
	id->oncs = 1u << 3; /* Write Zeroes */
	id->sgls = t->cfg.sgls;
	id->acl = 3;
}

/**
 * @brief Fills Identify Namespace data for the target's namespace.
 * @param t   the target.
 * @param ns  receives the structure.
 *
 * Any thread.
 */
GIO_HD void gio_tgt_identify_ns(const struct gio_tgt *t, struct gio_id_ns *ns)
{
	memset(ns, 0, sizeof(*ns));
	ns->nsze = ns->ncap = ns->nuse = t->cfg.nsze;
	ns->nlbaf = 0;
	ns->flbas = 0;
	ns->lbaf[0].lbads = t->cfg.lba_shift;
}

/* Create I/O CQ / SQ, delete them. */
GIO_HD uint16_t gio__tgt_create_queue(struct gio_tgt *t, const struct gio_sqe *sqe, int is_cq)
{
	const uint32_t qid = GIO_GET(sqe->cdw10, QUEUE_CDW10_QID);
	const uint32_t size = GIO_GET(sqe->cdw10, QUEUE_CDW10_QSIZE) + 1u;
	struct gio_tgt_queue *q;
	if (qid == 0 || qid > t->cfg.max_io_queues || (t->nq_granted && qid > t->nq_granted))
		return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QID_INVALID);
	q = is_cq ? &t->cq[qid] : &t->sq[qid];
	if (gio_load_relaxed(&q->live))
		return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QID_INVALID);
	if (size < 2 || size > t->cfg.mqes + 1u)
		return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QUEUE_SIZE);
	if (!(sqe->cdw11 & 1u)) /* CAP.CQR: only physically contiguous queues */
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
	if (is_cq) {
		if (GIO_GET(sqe->cdw11, CREATE_CQ_CDW11_IEN)) /* polled queues only: no interrupts here */
			return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_INVALID_VECTOR);
	} else {
		const uint32_t cqid = GIO_GET(sqe->cdw11, CREATE_SQ_CDW11_CQID);
		if (cqid == 0 || cqid > GIO_TGT_MAX_IO_QUEUES || !gio_load_relaxed(&t->cq[cqid].live))
			return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_CQ_INVALID);
		q->cqid = (uint16_t)cqid;
	}
	if (gio__tgt_queue_setup(t, q, sqe->dptr.prp.prp1, size, is_cq ? GIO_CQE_BYTES : GIO_SQE_BYTES))
		return GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
	if (!is_cq)
		t->cq[q->cqid].nsq++;
	*gio__tgt_doorbell(t, (uint16_t)qid, is_cq) = 0;
	/* Release: the queue's fields before it is live (pairs with the serving thread's acquire). */
	gio_store_release_in(t->scope, &q->live, 1);
	return 0;
}

GIO_HD uint16_t gio__tgt_delete_queue(struct gio_tgt *t, const struct gio_sqe *sqe, int is_cq)
{
	const uint32_t qid = GIO_GET(sqe->cdw10, QUEUE_CDW10_QID);
	struct gio_tgt_queue *q;
	if (qid == 0 || qid > GIO_TGT_MAX_IO_QUEUES)
		return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QID_INVALID);
	q = is_cq ? &t->cq[qid] : &t->sq[qid];
	if (!gio_load_relaxed(&q->live))
		return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QID_INVALID);
	if (is_cq && q->nsq)
		return GIO__TGT_SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_INVALID_QUEUE_DELETE);
	gio_store_release_in(t->scope, &q->live, 0);
	if (!is_cq)
		t->cq[q->cqid].nsq--;
	q->depth = 0;
	return 0;
}

/**
 * @brief Executes one admin command.
 * @param t    the target.
 * @param sqe  the command.
 * @param dw0  receives completion Dword 0.
 * @return the status field: Identify (CNS 00h namespace 1, 01h controller, 02h active namespace
 *         list), Create/Delete I/O SQ and CQ (Invalid Queue Identifier, Invalid Queue Size,
 *         Completion Queue Invalid, Invalid Queue Deletion, Invalid Interrupt Vector for IEN),
 *         Set/Get Features Number of Queues (grants up to the configured count; a second Set
 *         after queues exist gives Command Sequence Error), Abort (not aborted: Dword 0 bit 0
 *         set), Keep Alive; others give Invalid Command Opcode. Data goes out through PRPs only.
 *
 * The admin thread.
 */
GIO_HD uint16_t gio_tgt_admin(struct gio_tgt *t, const struct gio_sqe *sqe, uint32_t *dw0)
{
	*dw0 = 0;
	if (GIO_GET((uint32_t)sqe->flags, SQE_FLAGS_FUSE))
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
	switch (sqe->opc) {
	case GIO_ADMIN_OPC_IDENTIFY: {
		const uint32_t cns = GIO_GET(sqe->cdw10, IDENTIFY_CDW10_CNS);
		union {
			struct gio_id_ctrl ctrl;
			struct gio_id_ns ns;
			uint32_t list[1024];
		} u;
		if (cns == GIO_CNS_CTRL) {
			gio_tgt_identify_ctrl(t, &u.ctrl);
		} else if (cns == GIO_CNS_NS) {
			if (sqe->nsid != GIO_TGT_NSID)
				return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_NS);
			gio_tgt_identify_ns(t, &u.ns);
		} else if (cns == GIO_CNS_NS_ACTIVE_LIST) {
			memset(&u, 0, sizeof(u));
			if (sqe->nsid < GIO_TGT_NSID)
				u.list[0] = GIO_TGT_NSID;
		} else {
			return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
		}
		return gio__tgt_admin_out(t, sqe, &u, GIO_IDENTIFY_BYTES);
	}
	case GIO_ADMIN_OPC_CREATE_CQ:
		return gio__tgt_create_queue(t, sqe, 1);
	case GIO_ADMIN_OPC_CREATE_SQ:
		return gio__tgt_create_queue(t, sqe, 0);
	case GIO_ADMIN_OPC_DELETE_SQ:
		return gio__tgt_delete_queue(t, sqe, 0);
	case GIO_ADMIN_OPC_DELETE_CQ:
		return gio__tgt_delete_queue(t, sqe, 1);
	case GIO_ADMIN_OPC_SET_FEATURES:
	case GIO_ADMIN_OPC_GET_FEATURES: {
		uint32_t i, n;
		if (GIO_GET(sqe->cdw10, FEAT_CDW10_FID) != GIO_FEAT_NUM_QUEUES)
			return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
		if (sqe->opc == GIO_ADMIN_OPC_SET_FEATURES) {
			for (i = 1; i <= GIO_TGT_MAX_IO_QUEUES; i++)
				if (gio_load_relaxed(&t->sq[i].live) || gio_load_relaxed(&t->cq[i].live))
					return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_CMD_SEQ_ERROR);
			n = GIO_GET(sqe->cdw11, NUMQ_NSQ) + 1u;
			if (GIO_GET(sqe->cdw11, NUMQ_NCQ) + 1u > n)
				n = GIO_GET(sqe->cdw11, NUMQ_NCQ) + 1u;
			if (n == 65536u) /* 0's based FFFFh is reserved */
				return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
			t->nq_granted = n < t->cfg.max_io_queues ? n : t->cfg.max_io_queues;
		}
		n = t->nq_granted ? t->nq_granted : t->cfg.max_io_queues;
		*dw0 = GIO_SET(NUMQ_NSQ, n - 1u) | GIO_SET(NUMQ_NCQ, n - 1u);
		return 0;
	}
	case GIO_ADMIN_OPC_ABORT:
		*dw0 = 1; /* best effort, as the specification allows: the command was not aborted */
		return 0;
	case GIO_ADMIN_OPC_KEEP_ALIVE:
		return 0;
	default:
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_OPCODE);
	}
}

/**
 * @brief The fixed part of a target that checking I/O commands reads.
 * @param t  the target, configured (after the controller was enabled and memory registered).
 * @param r  receives its namespace size, block size, data pointer rules and region tables.
 *
 * Any thread. The copy stays right while nothing is registered or unregistered and the
 * controller is not reset: an executor makes it at its start.
 */
GIO_HD void gio_tgt_io_rules_of(const struct gio_tgt *t, struct gio_tgt_io_rules *r)
{
	r->nsze = t->cfg.nsze;
	r->lba_shift = t->cfg.lba_shift;
	r->flags = 0;
	r->caps = t->caps;
	r->map = t->map;
	r->copy_map = t->copy_map;
}

/* gio_dma_map_find() on the rules' table, read plainly where the rules say it is a private copy. */
GIO_HD void *gio__tgt_rules_find(const struct gio_tgt_io_rules *r, uint64_t addr, uint64_t len)
{
	return gio__dma_region_ptr((r->flags & GIO_TGT_RULES_MAP_FIXED) ? gio_dma_map_region_fixed(r->map, addr, len)
									 : gio_dma_map_region(r->map, addr, len),
				   addr);
}

/* gio_tgt_seg_ptr() in the rules' region tables. */
GIO_HD void *gio__tgt_seg_find(const struct gio_tgt_io_rules *r, const struct gio_xfer_seg *s, int *copy_only)
{
	void *p = gio__tgt_rules_find(r, s->addr, s->len);
	*copy_only = 0;
	if (p == NULL && r->copy_map != NULL) {
		p = gio_dma_map_find(r->copy_map, s->addr, s->len);
		*copy_only = p != NULL;
	}
	return p;
}

/**
 * @brief Where the executor reaches a data segment.
 * @param t          the target.
 * @param s          a data segment (not a bit bucket).
 * @param copy_only  receives 1 when the pointer lies in `t->copy_map` (move it with a copy
 *                   engine, never with loads and stores), else 0.
 * @return the pointer for the segment's first byte, or NULL when the segment is not wholly
 *         inside one registered region.
 *
 * Any thread. `map` is searched first: bus addresses of the two tables never overlap (the
 * registrar refuses it).
 */
GIO_HD void *gio_tgt_seg_ptr(const struct gio_tgt *t, const struct gio_xfer_seg *s, int *copy_only)
{
	struct gio_tgt_io_rules r;
	gio_tgt_io_rules_of(t, &r);
	return gio__tgt_seg_find(&r, s, copy_only);
}

/* gio_tgt_io_check() up to the data pointer: opcode, fuse, namespace, LBA range, size. Sets *walk
 * when the command passed and has a data pointer to check (a Read or a Write). */
GIO_HD uint16_t gio__tgt_io_head(const struct gio_tgt_io_rules *r, const struct gio_sqe *sqe, struct gio_tgt_io *io,
				 int *walk)
{
	*walk = 0;
	io->opc = sqe->opc;
	io->is_write = sqe->opc == GIO_NVM_OPC_WRITE;
	io->rsvd = 0;
	io->nlb = 0;
	io->slba = 0;
	io->offset = 0;
	io->bytes = 0;
	io->xfer.n = 0;
	if (sqe->opc != GIO_NVM_OPC_FLUSH && sqe->opc != GIO_NVM_OPC_WRITE && sqe->opc != GIO_NVM_OPC_READ &&
	    sqe->opc != GIO_NVM_OPC_WRITE_ZEROES)
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_OPCODE);
	if (GIO_GET((uint32_t)sqe->flags, SQE_FLAGS_FUSE))
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
	if (sqe->opc == GIO_NVM_OPC_FLUSH)
		return (sqe->nsid == GIO_TGT_NSID || sqe->nsid == 0xffffffffu)
			       ? 0
			       : GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_NS);
	if (sqe->nsid != GIO_TGT_NSID)
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_NS);
	io->slba = (uint64_t)sqe->cdw10 | ((uint64_t)sqe->cdw11 << 32);
	io->nlb = GIO_GET(sqe->cdw12, RW_CDW12_NLB) + 1u;
	if (io->slba >= r->nsze || io->nlb > r->nsze - io->slba)
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_LBA_RANGE);
	io->offset = io->slba << r->lba_shift;
	io->bytes = (uint64_t)io->nlb << r->lba_shift;
	if (sqe->opc == GIO_NVM_OPC_WRITE_ZEROES)
		return 0; /* no data pointer */
	if (r->caps.max_xfer_bytes && io->bytes > r->caps.max_xfer_bytes)
		return GIO__TGT_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
	*walk = 1;
	return 0;
}

/* The common data pointer, one SGL Data Block, of a command that passed gio__tgt_io_head(): 1
 * with *seg the segment and *st its status (0, or Data Transfer Error outside registered memory),
 * checked from the SQE's registers; 0 when the pointer needs gio__tgt_io_walk(). */
GIO_HD int gio__tgt_io_one(const struct gio_tgt_io_rules *r, const struct gio_sqe *sqe, const struct gio_tgt_io *io,
			   struct gio_xfer_seg *seg, uint16_t *st)
{
	int copy_only;
	if (!gio_sgl_walk_one(sqe, io->bytes, &r->caps, seg))
		return 0;
	*st = gio__tgt_seg_find(r, seg, &copy_only) ? 0 : GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
	return 1;
}

/* The data pointer of a command that passed gio__tgt_io_head(), walked into io->xfer (PRPs or an
 * SGL through lists in memory), every segment then checked against registered memory. */
GIO_HD uint16_t gio__tgt_io_walk(const struct gio_tgt_io_rules *r, const struct gio_sqe *sqe, struct gio_tgt_io *io)
{
	uint32_t i;
	uint16_t st;
	if (gio_sqe_psdt(sqe) == GIO_PSDT_PRP)
		st = gio_prp_walk(sqe, io->bytes, &r->caps, r->map, &io->xfer);
	else
		st = gio_sgl_walk(sqe, io->bytes, io->is_write, &r->caps, r->map, &io->xfer);
	if (st)
		return st;
	/* Every data segment must be registered before anything moves. */
	for (i = 0; i < io->xfer.n; i++) {
		const struct gio_xfer_seg *s = &io->xfer.segs[i];
		int copy_only;
		if (!(s->flags & GIO_XFER_BIT_BUCKET) && gio__tgt_seg_find(r, s, &copy_only) == NULL)
			return GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
	}
	return 0;
}

/* gio_tgt_io_check() with the common data pointer, one SGL Data Block, left in *one (*single 1,
 * io->xfer.n 1, the list not written) for a caller that keeps it in registers (a GPU executor: a
 * list lives in local memory there), else walked into io->xfer (*single 0). */
GIO_HD uint16_t gio__tgt_io_check_split(const struct gio_tgt_io_rules *r, const struct gio_sqe *sqe,
					struct gio_tgt_io *io, struct gio_xfer_seg *one, int *single)
{
	int walk;
	uint16_t st = gio__tgt_io_head(r, sqe, io, &walk);
	*single = 0;
	if (st || !walk)
		return st;
	if (io->xfer.cap >= 1 && gio__tgt_io_one(r, sqe, io, one, &st)) {
		*single = 1;
		io->xfer.n = 1;
		return st;
	}
	return gio__tgt_io_walk(r, sqe, io);
}

/**
 * @brief Checks an I/O command and walks its data pointer, against a target's rules.
 * @param r    the rules (gio_tgt_io_rules_of()).
 * @param sqe  the command.
 * @param io   receives the command's parameters; `io->xfer` must point to caller storage of
 *             GIO_TGT_MAX_SEGS segments (set `io->xfer.segs` and `io->xfer.cap` before calling).
 * @return 0, or the status field a controller returns: Invalid Command Opcode (other than Flush,
 *         Write, Read, Write Zeroes), Invalid Field in Command (fused, or above MDTS, or SGLs
 *         where SGLS says none), Invalid Namespace or Format (NSID other than 1; 0xffffffff is
 *         allowed for Flush), LBA Out of Range, the SGL and PRP statuses of the walkers, or Data
 *         Transfer Error when a data segment lies outside registered memory (`map`, or
 *         `copy_map` where the target has one: the executor must then move that segment with its
 *         copy engine, see gio_tgt_seg_ptr()).
 *
 * Any thread (it reads only @p r and what its tables point to); the queue's serving thread calls
 * it. Nothing is moved: the executor moves data only after this passed.
 */
GIO_HD uint16_t gio_tgt_io_check(const struct gio_tgt_io_rules *r, const struct gio_sqe *sqe, struct gio_tgt_io *io)
{
	struct gio_xfer_seg one;
	int single;
	const uint16_t st = gio__tgt_io_check_split(r, sqe, io, &one, &single);
	/* The common command's segment was checked from registers, not read back from the list. */
	if (single)
		io->xfer.segs[0] = one;
	return st;
}

/**
 * @brief Checks an I/O command and walks its data pointer (gio_tgt_io_check() with the target's
 * own rules).
 * @param t    the target.
 * @param sqe  the command.
 * @param io   as gio_tgt_io_check().
 * @return as gio_tgt_io_check().
 *
 * The queue's serving thread.
 */
GIO_HD uint16_t gio_tgt_io_prepare(struct gio_tgt *t, const struct gio_sqe *sqe, struct gio_tgt_io *io)
{
	struct gio_tgt_io_rules r;
	gio_tgt_io_rules_of(t, &r);
	return gio_tgt_io_check(&r, sqe, io);
}

/**
 * @brief Moves a prepared command's data between a memory backing store and the host's segments.
 * @param t        the target.
 * @param io       a command that passed gio_tgt_io_prepare().
 * @param backing  the backing store (namespace byte 0).
 * @return 0, or Data Transfer Error (nothing moved) when a segment lies in `t->copy_map`: such
 *         memory is moved by the executor's copy engine, not here.
 *
 * The queue's serving thread. Reads skip bit buckets; Write Zeroes clears the blocks; Flush does
 * nothing (memory is its own stable store here).
 */
GIO_HD uint16_t gio_tgt_io_copy_mem(struct gio_tgt *t, const struct gio_tgt_io *io, unsigned char *backing)
{
	uint64_t off = io->offset;
	uint32_t i;
	if (io->opc == GIO_NVM_OPC_WRITE_ZEROES) {
		memset(backing + off, 0, io->bytes);
		return 0;
	}
	for (i = 0; i < io->xfer.n; i++) {
		const struct gio_xfer_seg *s = &io->xfer.segs[i];
		if (!(s->flags & GIO_XFER_BIT_BUCKET) && gio_dma_map_find(t->map, s->addr, s->len) == NULL)
			return GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
	}
	for (i = 0; i < io->xfer.n; i++) {
		const struct gio_xfer_seg *s = &io->xfer.segs[i];
		if (!(s->flags & GIO_XFER_BIT_BUCKET)) {
			void *p = gio_dma_map_find(t->map, s->addr, s->len);
			if (io->is_write)
				memcpy(backing + off, p, s->len);
			else
				memcpy(p, backing + off, s->len);
		}
		off += s->len;
	}
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_TARGET_CORE_H */
