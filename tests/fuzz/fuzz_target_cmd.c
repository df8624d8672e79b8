/*
 * libFuzzer target: the software NVMe target's command core (include/giouring/target/core.h):
 * gio_tgt_init, gio_tgt_poll_regs, gio_tgt_fetch, gio_tgt_admin, gio_tgt_io_prepare,
 * gio_tgt_io_copy_mem and gio_tgt_post, driven the way an executor and a host drive them.
 *
 * Input (constants FZ_TH_*, FZ_TOP_*, FZ_TRING_*, FZ_TREGS_* in fuzz_common.h):
 *   bytes 0..49   header
 *     0      bits 0-4 SGLS (fz_sgls: byte / dword / byte with unrelated bits / none support,
 *            Bit Bucket, Oversize); bits 5-7 config mode: 0-4 valid with a small namespace,
 *            5-6 valid with a large one, 7 every field raw (gio_tgt_init may refuse it)
 *     1      mdts = value % 9 (raw mode: the byte)
 *     2      lba_shift = 9 + (v & 3), or with bit 7 set 9 + ((v >> 2) & 7) (raw: the byte)
 *     3      max_io_queues = 1 + (v & 63) (raw: the byte)
 *     4..5   u16 mqes, 0 read as 1 (raw: as is)
 *     6..13  u64 nsze: small 1 + v % (64 KiB >> lba_shift); large 1 + v % (2^(64 - lba_shift)
 *            - 1), so nsze << lba_shift still fits 64 bits (raw: as is)
 *     14..17 u32 SGLS (raw mode only)
 *     18     bring-up: bits 0-3 mode (0-6 canonical; 7 ACQ in region A; 8 CC.MPS above
 *            MPSMAX; 9 bad IOSQES; 10 bad IOCQES; 11 CC.CSS 7; 12 ASQ misaligned; 13 ACQ
 *            unregistered; 14 raw CC/AQA/ASQ/ACQ from bytes 26..49; 15 none: stays
 *            disabled), bits 4-6 CC.MPS (canonical: & 3)
 *     19     admin SQ entries: 0xff -> 1 (invalid), else 2 + v % 63 (at 0x80000000)
 *     20     admin CQ entries: 0xff -> 1 (invalid), else 2 + v % 255 (at 0x80001000)
 *     21..22 u16 blob length; 23..24 u16 split; 25 region B base (bits 0-1) and host
 *            misalignment (bits 2-4), as the walker targets
 *     26..49 raw CC (EN forced), AQA, ASQ, ACQ for bring-up mode 14
 *   then the blob: region A at bus 0x100000 and region B (its last `split` bytes), each its
 *   own exact-size allocation; a third region of 32 KiB of zeros at bus 0x80000000 holds the
 *   canonical admin queues and anything commands put there
 *   then ops, each an op byte (bits 0-2 kind, 3-7 argument) and its payload:
 *     0, 6 ADMIN   SQE: gio_tgt_admin() directly (only while the admin queue exists)
 *     1, 7 IO      u8 output capacity (0: GIO_TGT_MAX_SEGS), SQE: gio_tgt_io_prepare() into
 *                  an exact-size list (and gio_tgt_io_check() with GIO_TGT_RULES_MAP_FIXED
 *                  rules, which must agree), then gio_tgt_io_copy_mem() into the backing store
 *     2    ARING   u8 ring mode, u16 tail, u16 head, (arg & 7) SQEs written into the admin
 *                  SQ at the host's tail; the SQ tail and CQ head doorbells set by the mode
 *                  (host tail / raw, possibly >= depth / raw % depth; all consumed / as is /
 *                  raw / partly consumed); then fetch batches of 1, 2, 4 or 8, serve each
 *                  (gio_tgt_admin) and post it (in order or reversed) until fetch says none
 *     3    IORING  u8 queue selector (among the live I/O SQs), then as ARING on that queue
 *                  (served with gio_tgt_io_prepare + gio_tgt_io_copy_mem)
 *     4    REGS    u8 mode (disable, canonical enable, normal / abrupt shutdown, clear SHN,
 *                  raw CC, raw CC/AQA/ASQ/ACQ, poll only), u32 CC, u32 AQA, u64 ASQ, u64
 *                  ACQ: written to the BAR, then gio_tgt_poll_regs()
 *     5    FETCHQ  u16 qid: gio_tgt_fetch() of a queue that does not exist (-ENODEV)
 *   At most 64 ops and 128 served commands per input.
 *
 * A reference model, written from target.h's documentation and the NVMe rules it cites,
 * keeps its own controller state (CC acted on, CSTS, queue table, host tails, grants,
 * counters) and predicts every call. Checks, beyond "no crash, no sanitizer report"
 * (registered regions, the backing store, the BAR, the target and every output list are
 * exact-size allocations):
 *   - init: -EINVAL exactly for a configuration outside the documented ranges; CAP.MQES,
 *     CAP.DSTRD 0, CAP.MPSMIN/MPSMAX;
 *   - poll_regs: its return; CSTS exactly (RDY after a valid enable, CFS after an invalid
 *     one, 0 after a disable, SHST complete after a shutdown), RDY and CFS never both, RDY
 *     only while a successful enable holds; the doorbells read 0 after a controller reset;
 *     the queue table;
 *   - admin: the status is 0 or one of the documented SCT/SC pairs, DNR on all but Data
 *     Transfer Error, and one the model allows for the command (Identify CNS 0/1/2, create /
 *     delete I/O SQ and CQ, Number of Queues, Abort, Keep Alive, opcode, FUSE, PRP data path);
 *     success exactly when the model has no error; Dword 0; Identify data, byte for byte
 *     where the model can build it independently (namespace, active list) and by field for
 *     the controller, lands exactly in the PRP segments; nothing else in registered memory
 *     changes; then the whole queue table agrees with the model (live, address, depth, head
 *     / tail, phase, in flight, CQID, NSQ counted independently, entries pointer) and is
 *     consistent (a live SQ's CQ is live, queues within max_io_queues and the grant);
 *   - io_prepare: status 0 or SCT generic with an SC io_prepare documents, DNR on all but
 *     Data Transfer Error; opcode, FUSE, NSID (Flush may use 0xffffffff), LBA Out of Range
 *     exactly when slba + nlb > nsze (computed without overflow), MDTS exactly when bytes >
 *     4096 << mdts with mdts != 0; past those, the status and segment list are those of the
 *     walker called with the caps the model derives (SGLS, CC.MPS page), or Data Transfer
 *     Error exactly when a data segment lies in no registered region; on success slba / nlb
 *     decoded from CDW10-12 by hand, offset = slba << lba_shift, segments sum to the bytes,
 *     offset + bytes <= nsze << lba_shift, each data segment found by gio_dma_map_find, Write
 *     Zeroes and Flush list nothing, Flush moves 0 bytes; prepare changes no memory;
 *   - io_copy_mem: registered memory and the backing store equal a replay of the transfer
 *     done by the model on copies;
 *   - fetch: its return (-ENODEV, a command, or none: bad tail doorbell counted in
 *     bad_doorbells, empty SQ, bad CQ head doorbell treated as a full CQ and counted too, no
 *     room for the completion); the SQE equals the ring slot at the model's head;
 *   - post: the CQE at the model's CQ tail has Dword 0, Dword 1 = 0, SQHD = the SQ head,
 *     SQID, CID, status << 1 | phase; the phase toggles on wrap; no other CQ byte changes;
 *     with a valid head doorbell nothing unconsumed is overwritten; commands / errors.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/target/core.h>

#include "fuzz_common.h"

/*
 * FZ_TGT_SKIP_KNOWN (default 0): a mask of confirmed findings to step around while they are
 * unfixed, so that a long exploratory run gets past them (-DFZ_TGT_SKIP_KNOWN=0x...); on a
 * header with the fix a bit changes nothing. CI builds leave it 0: the inputs under
 * regressions/fuzz_target_cmd/ then fail until the header is fixed. See README.md, "Open
 * findings" and "Past findings".
 */
#ifndef FZ_TGT_SKIP_KNOWN
#define FZ_TGT_SKIP_KNOWN 0u
#endif
#define SKIP_MDTS_SHIFT 0x1u /* gio_tgt_init: 4096 << mdts with mdts >= 64 */
#define SKIP_QID_INDEX 0x2u  /* fetch, create / delete queue: &t->sq[qid] formed before the qid check */
#define SKIP_BAD_CQ_HEAD 0x4u /* gio_tgt_fetch: a CQ head doorbell >= depth reads as an empty CQ */
#define SKIP_SHN_RDY 0x8u     /* gio_tgt_poll_regs: shutdown after a failed enable reports RDY */
#define SKIP_DB_RESET 0x10u   /* gio_tgt_poll_regs: a controller reset leaves the doorbells as they were */
#define SKIP_QUEUE_ALIGN 0x20u /* gio_tgt_post: a CQ whose serving-side pointer is misaligned */

#define NQ (GIO_TGT_MAX_IO_QUEUES + 1u)
#define MAX_OPS 64u
#define MAX_CMDS 128u
#define DNR 0x4000u
#define SF(sct, sc) ((uint16_t)(((sct) << 8) | (sc) | DNR)) /* with DNR */
#define SF_NODNR(sct, sc) ((uint16_t)(((sct) << 8) | (sc)))
#define STATUS_DTE SF_NODNR(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR)

/* ------------------------------------------------------------------------- */
/* State: the target, its memory, and the model                              */
/* ------------------------------------------------------------------------- */

struct mq {
	int live;
	uint64_t addr;
	uint32_t depth;
	uint32_t idx;       /* SQ: head slot; CQ: tail slot */
	uint32_t phase;     /* CQ: phase of the next entry */
	uint32_t inflight;  /* CQ: fetched, not posted */
	uint16_t cqid;      /* SQ */
	uint32_t host_tail; /* SQ: the slot the host fills next */
};

struct region {
	uint64_t bus, len;
	unsigned char *p;      /* what the target sees */
	unsigned char *shadow; /* the model's copy */
	unsigned char *alloc;
};

struct ctx {
	struct gio_tgt *t;
	struct gio_tgt_bar *bar;
	struct gio_dma_region dr[3];
	struct gio_dma_map map;
	struct region rg[3];
	unsigned nrg;
	unsigned char *backing, *bshadow;
	uint64_t backing_len; /* allocated */
	uint64_t ns_bytes;    /* nsze << lba_shift */

	/* model */
	struct gio_tgt_config cfg;
	uint64_t max_xfer; /* 0: no limit */
	uint32_t page;     /* PRP page: CC.MPS of the last successful enable */
	uint32_t cc;       /* CC last acted on */
	int enabled_ok;    /* the last enable succeeded and EN is still 1 */
	uint32_t asqs, acqs;
	struct mq sq[NQ], cq[NQ];
	uint32_t nq_granted;
	uint64_t commands, errors;
	uint32_t bad_doorbells;
	unsigned cmds;
};

static unsigned char cq_snap[1u << 17];

static uint32_t *sq_db(struct ctx *c, uint32_t qid)
{
	return (uint32_t *)((char *)c->bar + 0x1000u + 8u * qid);
}

static uint32_t *cq_db(struct ctx *c, uint32_t qid)
{
	return (uint32_t *)((char *)c->bar + 0x1000u + 8u * qid + 4u);
}

/* The model's bus lookup: [addr, addr + len) inside one region, its end representable. */
static int tq_find(const struct ctx *c, uint64_t addr, uint64_t len, unsigned *ri, uint64_t *off)
{
	unsigned i;
	if (len == 0)
		len = 1;
	if (len > UINT64_MAX - addr)
		return 0;
	for (i = 0; i < c->nrg; i++) {
		const struct region *r = &c->rg[i];
		if (addr >= r->bus && addr - r->bus < r->len && len <= r->len - (addr - r->bus)) {
			*ri = i;
			*off = addr - r->bus;
			return 1;
		}
	}
	return 0;
}

static unsigned char *tq_ptr(const struct ctx *c, uint64_t addr, uint64_t len, int shadow)
{
	unsigned ri;
	uint64_t off;
	if (!tq_find(c, addr, len, &ri, &off))
		return NULL;
	return (shadow ? c->rg[ri].shadow : c->rg[ri].p) + off;
}

static void snap(struct ctx *c, int backing)
{
	unsigned i;
	for (i = 0; i < c->nrg; i++)
		memcpy(c->rg[i].shadow, c->rg[i].p, (size_t)c->rg[i].len);
	if (backing)
		memcpy(c->bshadow, c->backing, (size_t)c->backing_len);
}

static void compare(struct ctx *c, int backing, const char *what)
{
	unsigned i;
	for (i = 0; i < c->nrg; i++) {
		if (memcmp(c->rg[i].shadow, c->rg[i].p, (size_t)c->rg[i].len) != 0) {
			size_t k = 0;
			while (c->rg[i].shadow[k] == c->rg[i].p[k])
				k++;
			FZ_CHECK(0, "%s: registered region %u (bus 0x%llx) differs from the model at byte %zu "
				    "(bus 0x%llx): 0x%02x, model 0x%02x",
				 what, i, (unsigned long long)c->rg[i].bus, k, (unsigned long long)(c->rg[i].bus + k),
				 c->rg[i].p[k], c->rg[i].shadow[k]);
		}
	}
	if (backing && memcmp(c->bshadow, c->backing, (size_t)c->backing_len) != 0) {
		size_t k = 0;
		while (c->bshadow[k] == c->backing[k])
			k++;
		FZ_CHECK(0, "%s: backing store differs from the model at byte %zu", what, k);
	}
}

/* ------------------------------------------------------------------------- */
/* Queue table                                                               */
/* ------------------------------------------------------------------------- */

static void m_drop_queues(struct ctx *c)
{
	memset(c->sq, 0, sizeof(c->sq));
	memset(c->cq, 0, sizeof(c->cq));
	c->nq_granted = 0;
}

static uint64_t fz_bad_doorbells(const struct gio_tgt *t)
{
	struct gio_tgt_stats ts;
	gio_tgt_get_stats(t, &ts);
	return ts.bad_doorbells;
}

static void check_tables(struct ctx *c, const char *when)
{
	const struct gio_tgt *t = c->t;
	struct gio_tgt_stats ts;
	uint32_t q, i;

	gio_tgt_get_stats(t, &ts);
	FZ_CHECK(ts.bad_doorbells == c->bad_doorbells, "%s: bad_doorbells %llu, model %u", when,
		 (unsigned long long)ts.bad_doorbells, (unsigned)c->bad_doorbells);
	FZ_CHECK(ts.commands == c->commands && ts.errors == c->errors,
		 "%s: commands/errors %llu/%llu, model %llu/%llu", when, (unsigned long long)ts.commands,
		 (unsigned long long)ts.errors, (unsigned long long)c->commands, (unsigned long long)c->errors);
	FZ_CHECK(t->nq_granted == c->nq_granted, "%s: nq_granted %u, model %u", when, (unsigned)t->nq_granted,
		 (unsigned)c->nq_granted);
	FZ_CHECK(t->caps.page_bytes == c->page, "%s: caps.page_bytes %u, model %u", when,
		 (unsigned)t->caps.page_bytes, (unsigned)c->page);
	for (q = 0; q < NQ; q++) {
		const struct gio_tgt_queue *ts = &t->sq[q], *tc = &t->cq[q];
		const struct mq *ms = &c->sq[q], *mc = &c->cq[q];
		FZ_CHECK(ts->live == (uint32_t)ms->live, "%s: SQ %u live %u, model %d", when, (unsigned)q,
			 (unsigned)ts->live, ms->live);
		FZ_CHECK(tc->live == (uint32_t)mc->live, "%s: CQ %u live %u, model %d", when, (unsigned)q,
			 (unsigned)tc->live, mc->live);
		if (ms->live) {
			FZ_CHECK(ts->addr == ms->addr && ts->depth == ms->depth && ts->idx == ms->idx &&
					 ts->cqid == ms->cqid,
				 "%s: SQ %u is addr 0x%llx depth %u head %u cqid %u; model 0x%llx %u %u %u", when,
				 (unsigned)q, (unsigned long long)ts->addr, (unsigned)ts->depth, (unsigned)ts->idx,
				 (unsigned)ts->cqid, (unsigned long long)ms->addr, (unsigned)ms->depth,
				 (unsigned)ms->idx, (unsigned)ms->cqid);
			FZ_CHECK(ts->entries == tq_ptr(c, ms->addr, (uint64_t)ms->depth * GIO_SQE_BYTES, 0),
				 "%s: SQ %u entries pointer is not its registered memory", when, (unsigned)q);
			FZ_CHECK(ts->cqid < NQ && t->cq[ts->cqid].live, "%s: SQ %u is live, its CQ %u is not", when,
				 (unsigned)q, (unsigned)ts->cqid);
			FZ_CHECK(ts->idx < ts->depth, "%s: SQ %u head %u >= depth %u", when, (unsigned)q,
				 (unsigned)ts->idx, (unsigned)ts->depth);
			FZ_CHECK(ts->depth >= 2 && ts->depth <= c->cfg.mqes + 1u, "%s: SQ %u depth %u (mqes %u)", when,
				 (unsigned)q, (unsigned)ts->depth, (unsigned)c->cfg.mqes);
			FZ_CHECK((q == 0) == (ts->cqid == 0), "%s: SQ %u on CQ %u", when, (unsigned)q,
				 (unsigned)ts->cqid);
		}
		if (mc->live) {
			uint32_t nsq = 0;
			for (i = 0; i < NQ; i++)
				nsq += t->sq[i].live && t->sq[i].cqid == q;
			FZ_CHECK(tc->addr == mc->addr && tc->depth == mc->depth && tc->idx == mc->idx &&
					 tc->phase == mc->phase && tc->inflight == mc->inflight,
				 "%s: CQ %u is addr 0x%llx depth %u tail %u phase %u inflight %u; model 0x%llx %u %u %u %u",
				 when, (unsigned)q, (unsigned long long)tc->addr, (unsigned)tc->depth, (unsigned)tc->idx,
				 (unsigned)tc->phase, (unsigned)tc->inflight, (unsigned long long)mc->addr,
				 (unsigned)mc->depth, (unsigned)mc->idx, (unsigned)mc->phase, (unsigned)mc->inflight);
			FZ_CHECK(tc->entries == tq_ptr(c, mc->addr, (uint64_t)mc->depth * GIO_CQE_BYTES, 0),
				 "%s: CQ %u entries pointer is not its registered memory", when, (unsigned)q);
			FZ_CHECK(tc->nsq == nsq, "%s: CQ %u nsq %u, but %u live SQs post to it", when, (unsigned)q,
				 (unsigned)tc->nsq, (unsigned)nsq);
		}
		if (q > 0 && (ms->live || mc->live))
			FZ_CHECK(q <= c->cfg.max_io_queues && (c->nq_granted == 0 || q <= c->nq_granted),
				 "%s: I/O queue %u live beyond max_io_queues %u / granted %u", when, (unsigned)q,
				 (unsigned)c->cfg.max_io_queues, (unsigned)c->nq_granted);
	}
}

/* ------------------------------------------------------------------------- */
/* Registers                                                                 */
/* ------------------------------------------------------------------------- */

#define CC_EN(cc) ((cc) & 1u)
#define CC_SHN(cc) (((cc) >> 14) & 3u)
#define CSTS_RDY 1u
#define CSTS_CFS 2u
#define CSTS_SHST_COMPLETE (2u << 2)

/*
 * Queue memory whose serving-side pointer is not aligned to the entry size: dma_map.h does not
 * promise that a region's ptr is aligned like its bus address, so the target may refuse such a
 * queue (CSTS.CFS at enable; Data Transfer Error, Invalid Field or PRP Offset Invalid at
 * creation) or accept it, and then must not access it misaligned (UBSan checks that).
 */
static int host_misaligned(const struct ctx *c, uint64_t addr, uint64_t len, uint32_t esize)
{
	const unsigned char *p = tq_ptr(c, addr, len, 0);
	return p != NULL && ((uintptr_t)p & (esize - 1u)) != 0;
}

/* Whether an enable with these registers must succeed (target.h, gio_tgt_poll_regs); *either
 * is set when it may also fail because of host alignment alone. */
static int enable_valid(const struct ctx *c, uint32_t cc, uint32_t *asqs, uint32_t *acqs, int *either)
{
	const uint32_t aqa = c->bar->regs.aqa;
	const uint64_t asq = c->bar->regs.asq, acq = c->bar->regs.acq;
	unsigned ri;
	uint64_t off;
	*asqs = (aqa & 0xfffu) + 1u;
	*acqs = ((aqa >> 16) & 0xfffu) + 1u;
	if (*asqs < 2 || *acqs < 2 || *asqs > c->cfg.mqes + 1u || *acqs > c->cfg.mqes + 1u)
		return 0;
	if (((cc >> 7) & 0xfu) > 4u || ((cc >> 16) & 0xfu) != 6u || ((cc >> 20) & 0xfu) != 4u || ((cc >> 4) & 7u) != 0)
		return 0;
	if ((asq & 0xfffu) || (acq & 0xfffu) || !tq_find(c, asq, (uint64_t)*asqs * 64u, &ri, &off) ||
	    !tq_find(c, acq, (uint64_t)*acqs * 16u, &ri, &off))
		return 0;
	*either = host_misaligned(c, asq, (uint64_t)*asqs * 64u, 64u) || host_misaligned(c, acq, (uint64_t)*acqs * 16u, 16u);
	return 1;
}

static void check_doorbells_zero(struct ctx *c, const char *when)
{
	uint32_t q;
	for (q = 0; q < NQ; q++)
		FZ_CHECK(*sq_db(c, q) == 0 && *cq_db(c, q) == 0,
			 "%s: doorbells of queue %u read SQ tail %u, CQ head %u; a controller reset returns them "
			 "to 0, or the target later fetches stale commands",
			 when, (unsigned)q, (unsigned)*sq_db(c, q), (unsigned)*cq_db(c, q));
}

static void poll_and_check(struct ctx *c)
{
	const uint32_t cc = c->bar->regs.cc, old = c->cc, csts_before = c->bar->regs.csts;
	int exp_rc = 0, rc, reset = 0, cfs_any = 0, enable = 0, valid = 0, either = 0;
	uint32_t exp_csts = csts_before, asqs = 0, acqs = 0, csts;

	if (cc != old) {
		c->cc = cc;
		if (CC_EN(cc) && !CC_EN(old)) {
			exp_rc = 1;
			enable = 1;
			m_drop_queues(c);
			valid = enable_valid(c, cc, &asqs, &acqs, &either);
		} else if (!CC_EN(cc) && CC_EN(old)) {
			exp_rc = 1;
			reset = 1;
			m_drop_queues(c);
			c->enabled_ok = 0;
			exp_csts = 0;
		} else if (CC_SHN(cc) != 0 && CC_SHN(cc) != CC_SHN(old)) {
			exp_rc = 1;
			m_drop_queues(c);
			/* Shutdown processing complete; RDY still reflects a successful enable. */
			exp_csts = (CC_EN(cc) && c->enabled_ok ? CSTS_RDY : 0u) | CSTS_SHST_COMPLETE;
			cfs_any = 1;
		}
	}
	rc = gio_tgt_poll_regs(c->t);
	csts = c->bar->regs.csts;
	if (enable) {
		if (valid && either && csts == CSTS_CFS)
			valid = 0; /* refused for host alignment alone: allowed */
		if (!valid) {
			exp_csts = CSTS_CFS;
			c->enabled_ok = 0;
		} else {
			c->sq[0].live = c->cq[0].live = 1;
			c->sq[0].addr = c->bar->regs.asq;
			c->sq[0].depth = asqs;
			c->cq[0].addr = c->bar->regs.acq;
			c->cq[0].depth = acqs;
			c->cq[0].phase = 1;
			c->page = 4096u << ((cc >> 7) & 0xfu);
			c->enabled_ok = 1;
			exp_csts = CSTS_RDY;
		}
	}
	FZ_CHECK(rc == exp_rc, "poll_regs returned %d, model %d (CC 0x%08x, previous 0x%08x)", rc, exp_rc,
		 (unsigned)cc, (unsigned)old);
	FZ_CHECK(!((csts & CSTS_RDY) && (csts & CSTS_CFS)), "CSTS 0x%x: RDY and CFS both set", (unsigned)csts);
	FZ_CHECK(!(csts & CSTS_RDY) || c->enabled_ok,
		 "CSTS 0x%x: RDY set though no enable succeeded (CC 0x%08x, previous 0x%08x)", (unsigned)csts,
		 (unsigned)cc, (unsigned)old);
	if (cfs_any)
		FZ_CHECK((csts & ~CSTS_CFS) == (exp_csts & ~CSTS_CFS), "CSTS 0x%x after shutdown, model 0x%x (CFS either)",
			 (unsigned)csts, (unsigned)exp_csts);
	else
		FZ_CHECK(csts == exp_csts, "CSTS 0x%x, model 0x%x (CC 0x%08x, previous 0x%08x, AQA 0x%08x, ASQ 0x%llx, "
					   "ACQ 0x%llx)",
			 (unsigned)csts, (unsigned)exp_csts, (unsigned)cc, (unsigned)old, (unsigned)c->bar->regs.aqa,
			 (unsigned long long)c->bar->regs.asq, (unsigned long long)c->bar->regs.acq);
	if ((FZ_TGT_SKIP_KNOWN & SKIP_DB_RESET) && reset)
		memset((char *)c->bar + 0x1000u, 0, 8u * NQ); /* what a fixed target does */
	if (reset)
		check_doorbells_zero(c, "after a controller reset (CC.EN 1 -> 0)");
	check_tables(c, "after poll_regs");
}

/* ------------------------------------------------------------------------- */
/* Admin commands                                                            */
/* ------------------------------------------------------------------------- */

struct seg {
	uint64_t addr, len;
};

struct aexp {
	uint16_t acc[8]; /* acceptable error statuses; none: success */
	unsigned nacc;
	int align_optional; /* success, or a refusal for host alignment alone (host_misaligned) */
	uint32_t dw0;
	unsigned kind; /* effect on success */
	uint32_t qid, size, cqid, granted;
	uint64_t addr;
	struct seg segs[2];
	unsigned nsegs;
};

enum { A_NONE, A_IDENTIFY, A_CREATE_CQ, A_CREATE_SQ, A_DELETE_SQ, A_DELETE_CQ, A_SET_NQ };

static void acc_add(struct aexp *e, uint16_t st)
{
	if (e->nacc < 8)
		e->acc[e->nacc++] = st;
}

/* Identify data out: 4096 bytes through PRP1/PRP2 at the model's page size (prp_walk.h rules),
 * then every segment registered (Data Transfer Error). */
static uint16_t model_prp_4k(const struct ctx *c, const unsigned char *b, struct aexp *e)
{
	const uint64_t pg = c->page, mask = pg - 1, prp1 = fz_rd64(b + 24), prp2 = fz_rd64(b + 32);
	uint64_t take, rest;
	unsigned ri, i;
	uint64_t off;

	e->nsegs = 0;
	if ((b[1] >> 6) != 0)
		return SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD); /* "Data goes out through PRPs only" */
	if (prp1 & 3u)
		return SF(GIO_SCT_GENERIC, GIO_SC_PRP_INVALID_OFFSET);
	take = pg - (prp1 & mask);
	if (take > GIO_IDENTIFY_BYTES)
		take = GIO_IDENTIFY_BYTES;
	e->segs[0].addr = prp1;
	e->segs[0].len = take;
	e->nsegs = 1;
	rest = GIO_IDENTIFY_BYTES - take;
	if (rest) {
		if (prp2 & mask)
			return SF(GIO_SCT_GENERIC, GIO_SC_PRP_INVALID_OFFSET);
		if (take <= UINT64_MAX - prp1 && prp1 + take == prp2) {
			e->segs[0].len += rest; /* contiguous pieces merged */
		} else {
			e->segs[1].addr = prp2;
			e->segs[1].len = rest;
			e->nsegs = 2;
		}
	}
	for (i = 0; i < e->nsegs; i++)
		if (!tq_find(c, e->segs[i].addr, e->segs[i].len, &ri, &off))
			return STATUS_DTE;
	return 0;
}

static int any_io_queue_live(const struct ctx *c)
{
	uint32_t q;
	for (q = 1; q < NQ; q++)
		if (c->sq[q].live || c->cq[q].live)
			return 1;
	return 0;
}

static void model_admin(const struct ctx *c, const unsigned char *b, struct aexp *e)
{
	const uint8_t opc = b[0];
	const uint32_t nsid = fz_rd32(b + 4), cdw10 = fz_rd32(b + 40), cdw11 = fz_rd32(b + 44);
	const uint64_t prp1 = fz_rd64(b + 24);
	uint16_t st;

	memset(e, 0, sizeof(*e));
	if (b[1] & 3u) /* fused admin commands are not supported */
		acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD));
	switch (opc) {
	case GIO_ADMIN_OPC_IDENTIFY: {
		const uint32_t cns = cdw10 & 0xffu;
		e->kind = A_IDENTIFY;
		if (cns > GIO_CNS_NS_ACTIVE_LIST)
			acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD));
		else if (cns == GIO_CNS_NS && nsid != 1)
			acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_NS));
		if (e->nacc == 0) {
			st = model_prp_4k(c, b, e);
			if (st)
				acc_add(e, st);
		}
		break;
	}
	case GIO_ADMIN_OPC_CREATE_CQ:
	case GIO_ADMIN_OPC_CREATE_SQ: {
		const int is_cq = opc == GIO_ADMIN_OPC_CREATE_CQ;
		const uint32_t qid = cdw10 & 0xffffu, size = (cdw10 >> 16) + 1u, cqid = cdw11 >> 16;
		const size_t nerr = e->nacc;
		unsigned ri;
		uint64_t off;
		e->kind = is_cq ? A_CREATE_CQ : A_CREATE_SQ;
		e->qid = qid;
		e->size = size;
		e->cqid = cqid;
		e->addr = prp1;
		if (qid == 0 || qid > c->cfg.max_io_queues || (c->nq_granted && qid > c->nq_granted) ||
		    (is_cq ? c->cq[qid].live : c->sq[qid].live))
			acc_add(e, SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QID_INVALID));
		if (size < 2 || size > c->cfg.mqes + 1u)
			acc_add(e, SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QUEUE_SIZE));
		if (!(cdw11 & 1u)) /* CAP.CQR: physically contiguous only */
			acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD));
		if (is_cq && (cdw11 & 2u)) /* interrupts enabled: polled queues only */
			acc_add(e, SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_INVALID_VECTOR));
		if (!is_cq && (cqid == 0 || cqid >= NQ || !c->cq[cqid].live))
			acc_add(e, SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_CQ_INVALID));
		if (e->nacc == nerr && ((prp1 & 0xfffu) ||
					!tq_find(c, prp1, (uint64_t)size * (is_cq ? GIO_CQE_BYTES : GIO_SQE_BYTES), &ri, &off)))
			acc_add(e, STATUS_DTE);
		else if (e->nacc == nerr)
			e->align_optional = host_misaligned(c, prp1, (uint64_t)size * (is_cq ? GIO_CQE_BYTES : GIO_SQE_BYTES),
							    is_cq ? GIO_CQE_BYTES : GIO_SQE_BYTES);
		break;
	}
	case GIO_ADMIN_OPC_DELETE_SQ:
	case GIO_ADMIN_OPC_DELETE_CQ: {
		const int is_cq = opc == GIO_ADMIN_OPC_DELETE_CQ;
		const uint32_t qid = cdw10 & 0xffffu;
		e->kind = is_cq ? A_DELETE_CQ : A_DELETE_SQ;
		e->qid = qid;
		if (qid == 0 || qid >= NQ || !(is_cq ? c->cq[qid].live : c->sq[qid].live)) {
			acc_add(e, SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_QID_INVALID));
		} else if (is_cq) {
			uint32_t q;
			for (q = 1; q < NQ; q++)
				if (c->sq[q].live && c->sq[q].cqid == qid) {
					acc_add(e, SF(GIO_SCT_CMD_SPECIFIC, GIO_SC_INVALID_QUEUE_DELETE));
					break;
				}
		}
		break;
	}
	case GIO_ADMIN_OPC_SET_FEATURES:
	case GIO_ADMIN_OPC_GET_FEATURES: {
		uint32_t n = c->nq_granted;
		if ((cdw10 & 0xffu) != GIO_FEAT_NUM_QUEUES)
			acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD));
		if (opc == GIO_ADMIN_OPC_SET_FEATURES) {
			const uint32_t nsq = (cdw11 & 0xffffu) + 1u, ncq = (cdw11 >> 16) + 1u;
			if (any_io_queue_live(c))
				acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_CMD_SEQ_ERROR));
			if (nsq == 65536u || ncq == 65536u)
				acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD));
			n = nsq > ncq ? nsq : ncq;
			if (n > c->cfg.max_io_queues)
				n = c->cfg.max_io_queues;
			e->kind = A_SET_NQ;
			e->granted = n;
		}
		if (n == 0)
			n = c->cfg.max_io_queues;
		e->dw0 = (n - 1u) | ((n - 1u) << 16);
		break;
	}
	case GIO_ADMIN_OPC_ABORT:
		e->dw0 = 1; /* not aborted */
		break;
	case GIO_ADMIN_OPC_KEEP_ALIVE:
		break;
	default:
		acc_add(e, SF(GIO_SCT_GENERIC, GIO_SC_INVALID_OPCODE));
		break;
	}
}

/* The Identify data the model expects; the controller structure is built by the header and
 * checked field by field from the bytes. */
static void identify_data(struct ctx *c, const unsigned char *b, unsigned char *out)
{
	const uint32_t cns = fz_rd32(b + 40) & 0xffu;
	memset(out, 0, GIO_IDENTIFY_BYTES);
	if (cns == GIO_CNS_NS) {
		fz_wr64(out + 0, c->cfg.nsze);  /* NSZE */
		fz_wr64(out + 8, c->cfg.nsze);  /* NCAP */
		fz_wr64(out + 16, c->cfg.nsze); /* NUSE */
		out[128 + 2] = c->cfg.lba_shift; /* LBAF0.LBADS; NLBAF 0, FLBAS 0 */
	} else if (cns == GIO_CNS_NS_ACTIVE_LIST) {
		if (fz_rd32(b + 4) == 0) /* NSIDs above CDW1.NSID: namespace 1 when NSID is 0 */
			fz_wr32(out, 1);
	} else {
		gio_tgt_identify_ctrl(c->t, (struct gio_id_ctrl *)(void *)out);
		FZ_CHECK(out[77] == c->cfg.mdts, "Identify Controller MDTS %u, configured %u", out[77],
			 (unsigned)c->cfg.mdts);
		FZ_CHECK(out[512] == 0x66 && out[513] == 0x44, "Identify Controller SQES 0x%02x CQES 0x%02x", out[512],
			 out[513]);
		FZ_CHECK(fz_rd32(out + 516) == 1, "Identify Controller NN %u", (unsigned)fz_rd32(out + 516));
		FZ_CHECK(fz_rd32(out + 536) == c->cfg.sgls, "Identify Controller SGLS 0x%x, configured 0x%x",
			 (unsigned)fz_rd32(out + 536), (unsigned)c->cfg.sgls);
		FZ_CHECK(fz_rd16(out + 520) & (1u << 3), "Identify Controller ONCS lacks Write Zeroes");
		FZ_CHECK(fz_rd32(out + 80) == c->bar->regs.vs, "Identify Controller VER 0x%x, VS 0x%x",
			 (unsigned)fz_rd32(out + 80), (unsigned)c->bar->regs.vs);
	}
}

static void check_status_common(uint16_t st, const char *who)
{
	FZ_CHECK(FZ_SF_CRD_M(st) == 0 && FZ_SF_RSVD(st) == 0, "%s status 0x%04x: CRD/More/bit 15 set", who, st);
	FZ_CHECK(FZ_SF_DNR(st) == (FZ_SF_SC(st) != GIO_SC_DATA_XFER_ERROR || FZ_SF_SCT(st) != GIO_SCT_GENERIC),
		 "%s status 0x%04x: DNR must be set on all but Data Transfer Error", who, st);
}

static uint16_t exec_admin(struct ctx *c, const unsigned char *b, uint32_t *dw0_out)
{
	static unsigned char idbuf[GIO_IDENTIFY_BYTES];
	struct gio_sqe sqe;
	struct aexp e;
	uint32_t dw0 = 0xdeadbeefu, i;
	uint16_t st;

	if ((FZ_TGT_SKIP_KNOWN & SKIP_QID_INDEX) && b[0] <= GIO_ADMIN_OPC_CREATE_CQ && b[0] != GIO_ADMIN_OPC_GET_LOG_PAGE &&
	    fz_rd16(b + 40) > NQ) {
		static unsigned char nb[GIO_SQE_BYTES];
		memcpy(nb, b, sizeof(nb));
		fz_wr16(nb + 40, NQ); /* still invalid, but an index the array has */
		b = nb;
	}
	memcpy(&sqe, b, sizeof(sqe));
	model_admin(c, b, &e);
	snap(c, 0);
	st = gio_tgt_admin(c->t, &sqe, &dw0);
	FZ_CHECK(memcmp(&sqe, b, sizeof(sqe)) == 0, "gio_tgt_admin modified the SQE");
	*dw0_out = dw0;
	if (st) {
		const uint32_t sc = FZ_SF_SC(st), sct = FZ_SF_SCT(st);
		int ok = 0;
		check_status_common(st, "admin");
		if (sct == GIO_SCT_GENERIC)
			ok = sc == GIO_SC_INVALID_OPCODE || sc == GIO_SC_INVALID_FIELD || sc == GIO_SC_DATA_XFER_ERROR ||
			     sc == GIO_SC_INVALID_NS || sc == GIO_SC_CMD_SEQ_ERROR || sc == GIO_SC_PRP_INVALID_OFFSET;
		else if (sct == GIO_SCT_CMD_SPECIFIC)
			ok = sc == GIO_SC_CQ_INVALID || sc == GIO_SC_QID_INVALID || sc == GIO_SC_QUEUE_SIZE ||
			     sc == GIO_SC_INVALID_VECTOR || sc == GIO_SC_INVALID_QUEUE_DELETE;
		FZ_CHECK(ok, "admin opcode 0x%02x: undocumented status 0x%04x", b[0], st);
		if (e.nacc == 0 && e.align_optional) {
			FZ_CHECK(st == STATUS_DTE || st == SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD) ||
					 st == SF(GIO_SCT_GENERIC, GIO_SC_PRP_INVALID_OFFSET),
				 "queue memory refused for host alignment with status 0x%04x", st);
			compare(c, 0, "a failed admin command");
			check_tables(c, "after a failed admin command");
			return st;
		}
		FZ_CHECK(e.nacc > 0, "admin opcode 0x%02x (CDW10 0x%08x CDW11 0x%08x) failed with 0x%04x; the model "
				     "expects success",
			 b[0], (unsigned)fz_rd32(b + 40), (unsigned)fz_rd32(b + 44), st);
		for (i = 0; i < e.nacc && e.acc[i] != st; i++)
			;
		FZ_CHECK(i < e.nacc, "admin opcode 0x%02x (CDW10 0x%08x CDW11 0x%08x): status 0x%04x, model allows "
				     "0x%04x (of %u)",
			 b[0], (unsigned)fz_rd32(b + 40), (unsigned)fz_rd32(b + 44), st, e.acc[0], e.nacc);
		compare(c, 0, "a failed admin command");
		check_tables(c, "after a failed admin command");
		return st;
	}
	FZ_CHECK(e.nacc == 0, "admin opcode 0x%02x (CDW10 0x%08x CDW11 0x%08x PRP1 0x%llx) succeeded; the model "
			      "expects status 0x%04x",
		 b[0], (unsigned)fz_rd32(b + 40), (unsigned)fz_rd32(b + 44), (unsigned long long)fz_rd64(b + 24),
		 e.acc[0]);
	FZ_CHECK(dw0 == e.dw0, "admin opcode 0x%02x: Dword 0 0x%08x, model 0x%08x", b[0], (unsigned)dw0,
		 (unsigned)e.dw0);
	switch (e.kind) {
	case A_IDENTIFY: {
		uint64_t done = 0;
		identify_data(c, b, idbuf);
		for (i = 0; i < e.nsegs; i++) {
			memcpy(tq_ptr(c, e.segs[i].addr, e.segs[i].len, 1), idbuf + done, (size_t)e.segs[i].len);
			done += e.segs[i].len;
		}
		break;
	}
	case A_CREATE_CQ:
	case A_CREATE_SQ: {
		struct mq *q = e.kind == A_CREATE_CQ ? &c->cq[e.qid] : &c->sq[e.qid];
		memset(q, 0, sizeof(*q));
		q->live = 1;
		q->addr = e.addr;
		q->depth = e.size;
		if (e.kind == A_CREATE_CQ) {
			q->phase = 1;
			FZ_CHECK(*cq_db(c, e.qid) == 0, "created CQ %u: head doorbell %u", (unsigned)e.qid,
				 (unsigned)*cq_db(c, e.qid));
		} else {
			q->cqid = (uint16_t)e.cqid;
			FZ_CHECK(*sq_db(c, e.qid) == 0, "created SQ %u: tail doorbell %u", (unsigned)e.qid,
				 (unsigned)*sq_db(c, e.qid));
		}
		break;
	}
	case A_DELETE_SQ:
	case A_DELETE_CQ:
		(e.kind == A_DELETE_CQ ? &c->cq[e.qid] : &c->sq[e.qid])->live = 0;
		break;
	case A_SET_NQ:
		c->nq_granted = e.granted;
		break;
	default:
		break;
	}
	compare(c, 0, "an admin command");
	check_tables(c, "after an admin command");
	return 0;
}

/* ------------------------------------------------------------------------- */
/* I/O commands                                                              */
/* ------------------------------------------------------------------------- */

static int io_sc_documented(uint32_t sc)
{
	switch (sc) {
	case GIO_SC_INVALID_OPCODE:
	case GIO_SC_INVALID_FIELD:
	case GIO_SC_INVALID_NS:
	case GIO_SC_LBA_RANGE:
	case GIO_SC_DATA_XFER_ERROR:
	case GIO_SC_PRP_INVALID_OFFSET:
	case GIO_SC_SGL_INVALID_SEGMENT:
	case GIO_SC_SGL_INVALID_COUNT:
	case GIO_SC_SGL_INVALID_DATA_LEN:
	case GIO_SC_SGL_INVALID_TYPE:
	case GIO_SC_SGL_INVALID_OFFSET:
	case GIO_SC_SGL_INVALID_GRANULARITY:
		return 1;
	default:
		return 0;
	}
}

static uint16_t exec_io(struct ctx *c, const unsigned char *b, uint32_t cap)
{
	const uint8_t opc = b[0];
	const unsigned psdt = b[1] >> 6;
	const uint32_t nsid = fz_rd32(b + 4), cdw12 = fz_rd32(b + 48);
	const uint64_t slba = (uint64_t)fz_rd32(b + 40) | ((uint64_t)fz_rd32(b + 44) << 32);
	const uint32_t nlb = (cdw12 & 0xffffu) + 1u;
	const int is_flush = opc == GIO_NVM_OPC_FLUSH, is_wz = opc == GIO_NVM_OPC_WRITE_ZEROES;
	const int is_write = opc == GIO_NVM_OPC_WRITE, is_rw = is_write || opc == GIO_NVM_OPC_READ;
	const uint64_t bytes = (uint64_t)nlb << c->cfg.lba_shift;
	struct gio_xfer_seg *segs, *wsegs, *fsegs;
	struct gio_xfer_list wl;
	struct gio_dptr_caps caps;
	struct gio_tgt_io_rules fixed;
	struct gio_tgt_io io, fio;
	struct gio_sqe sqe;
	uint16_t acc[6], st, exp = 0;
	unsigned nacc = 0, i;
	int lba_bad, mdts_bad;

	segs = (struct gio_xfer_seg *)malloc(cap * sizeof(*segs)); /* exact: ASan guards cap */
	wsegs = (struct gio_xfer_seg *)malloc(cap * sizeof(*wsegs));
	fsegs = (struct gio_xfer_seg *)malloc(cap * sizeof(*fsegs));
	if (segs == NULL || wsegs == NULL || fsegs == NULL)
		abort();
	memset(segs, 0xa5, cap * sizeof(*segs));
	memset(&io, 0x5a, sizeof(io));
	io.xfer.segs = segs;
	io.xfer.cap = cap;
	io.xfer.n = 0xdeadbeefu;
	memcpy(&sqe, b, sizeof(sqe));

	/* The model: field checks (any applicable one is acceptable; their order is not
	 * documented), then the data pointer. */
	lba_bad = slba >= c->cfg.nsze || nlb > c->cfg.nsze - slba;
	mdts_bad = is_rw && c->max_xfer && bytes > c->max_xfer;
	if (!is_flush && !is_wz && !is_rw) {
		acc[nacc++] = SF(GIO_SCT_GENERIC, GIO_SC_INVALID_OPCODE);
	} else {
		if (b[1] & 3u)
			acc[nacc++] = SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
		if (is_flush) {
			if (nsid != 1 && nsid != 0xffffffffu)
				acc[nacc++] = SF(GIO_SCT_GENERIC, GIO_SC_INVALID_NS);
		} else {
			if (nsid != 1)
				acc[nacc++] = SF(GIO_SCT_GENERIC, GIO_SC_INVALID_NS);
			if (lba_bad)
				acc[nacc++] = SF(GIO_SCT_GENERIC, GIO_SC_LBA_RANGE);
			if (mdts_bad)
				acc[nacc++] = SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD);
		}
	}
	wl.segs = wsegs;
	wl.cap = cap;
	wl.n = 0;
	if (nacc == 0 && is_rw) {
		/* The walkers are fuzzed against their own models; here the target must use them
		 * with the caps its configuration and CC give, and check what they list. */
		memset(&caps, 0, sizeof(caps));
		caps.sgls = c->cfg.sgls;
		caps.page_bytes = c->page;
		caps.max_xfer_bytes = c->max_xfer;
		exp = psdt == GIO_PSDT_PRP ? gio_prp_walk(&sqe, bytes, &caps, &c->map, &wl)
					   : gio_sgl_walk(&sqe, bytes, is_write, &caps, &c->map, &wl);
		for (i = 0; exp == 0 && i < wl.n; i++) {
			unsigned ri;
			uint64_t off;
			if (!(wsegs[i].flags & GIO_XFER_BIT_BUCKET) && !tq_find(c, wsegs[i].addr, wsegs[i].len, &ri, &off))
				exp = STATUS_DTE;
		}
	}

	snap(c, 1);
	st = gio_tgt_io_prepare(c->t, &sqe, &io);
	FZ_CHECK(memcmp(&sqe, b, sizeof(sqe)) == 0, "gio_tgt_io_prepare modified the SQE");
	compare(c, 1, "gio_tgt_io_prepare (nothing may move before the executor copies)");
	/* The same command against rules that read the region table as a private copy (a GPU
	 * executor's, GIO_TGT_RULES_MAP_FIXED): the same status, parameters and segments. */
	gio_tgt_io_rules_of(c->t, &fixed);
	fixed.flags |= GIO_TGT_RULES_MAP_FIXED;
	memset(&fio, 0x5a, sizeof(fio));
	fio.xfer.segs = fsegs;
	fio.xfer.cap = cap;
	FZ_CHECK(gio_tgt_io_check(&fixed, &sqe, &fio) == st, "the fixed-table rules gave another status than 0x%04x", st);
	FZ_CHECK(fio.opc == io.opc && fio.is_write == io.is_write && fio.nlb == io.nlb && fio.slba == io.slba &&
			 fio.offset == io.offset && fio.bytes == io.bytes && fio.xfer.n == io.xfer.n,
		 "the fixed-table rules gave other parameters");
	FZ_CHECK(st || fz_lists_equal(segs, io.xfer.n, fsegs, fio.xfer.n), "the fixed-table rules gave other segments");
	FZ_CHECK(io.xfer.segs == segs && io.xfer.cap == cap, "prepare changed the output list's storage");
	FZ_CHECK(io.xfer.n <= cap, "prepare listed %u segments, capacity %u", (unsigned)io.xfer.n, (unsigned)cap);
	FZ_CHECK(io.opc == opc && io.is_write == is_write && io.rsvd == 0, "io: opc %u is_write %u rsvd %u for opcode %u",
		 io.opc, io.is_write, io.rsvd, opc);

	if (st) {
		check_status_common(st, "io_prepare");
		FZ_CHECK(FZ_SF_SCT(st) == GIO_SCT_GENERIC && io_sc_documented(FZ_SF_SC(st)),
			 "io_prepare opcode 0x%02x: undocumented status 0x%04x", opc, st);
		if (nacc) {
			for (i = 0; i < nacc && acc[i] != st; i++)
				;
			FZ_CHECK(i < nacc, "io_prepare opcode 0x%02x NSID 0x%x SLBA 0x%llx NLB %u (nsze %llu, mdts %u): "
					   "status 0x%04x, model allows 0x%04x (of %u)",
				 opc, (unsigned)nsid, (unsigned long long)slba, (unsigned)nlb,
				 (unsigned long long)c->cfg.nsze, (unsigned)c->cfg.mdts, st, acc[0], nacc);
		} else {
			FZ_CHECK(is_rw, "Flush / Write Zeroes failed with 0x%04x; the model expects success", st);
			FZ_CHECK(st == exp, "io_prepare %s %llu bytes, PSDT %u, SGLS 0x%x, page %u: status 0x%04x, "
					    "the model (walker + registration) 0x%04x",
				 is_write ? "write" : "read", (unsigned long long)bytes, psdt, (unsigned)c->cfg.sgls,
				 (unsigned)c->page, st, exp);
		}
		FZ_CHECK(st != SF(GIO_SCT_GENERIC, GIO_SC_LBA_RANGE) || lba_bad,
			 "LBA Out of Range for SLBA 0x%llx NLB %u in nsze %llu", (unsigned long long)slba, (unsigned)nlb,
			 (unsigned long long)c->cfg.nsze);
		goto out;
	}
	FZ_CHECK(nacc == 0, "io_prepare opcode 0x%02x NSID 0x%x SLBA 0x%llx NLB %u (nsze %llu, mdts %u, FUSE %u) "
			    "succeeded; the model expects 0x%04x",
		 opc, (unsigned)nsid, (unsigned long long)slba, (unsigned)nlb, (unsigned long long)c->cfg.nsze,
		 (unsigned)c->cfg.mdts, (unsigned)(b[1] & 3u), acc[0]);
	FZ_CHECK(exp == 0, "io_prepare %s %llu bytes PSDT %u succeeded; the model expects 0x%04x",
		 is_write ? "write" : "read", (unsigned long long)bytes, psdt, exp);
	if (is_flush) {
		FZ_CHECK(io.bytes == 0 && io.xfer.n == 0, "Flush: %llu bytes, %u segments", (unsigned long long)io.bytes,
			 (unsigned)io.xfer.n);
	} else {
		uint64_t sum = 0;
		FZ_CHECK(io.slba == slba && io.nlb == nlb, "io: slba 0x%llx nlb %u; CDW10-12 give 0x%llx %u",
			 (unsigned long long)io.slba, (unsigned)io.nlb, (unsigned long long)slba, (unsigned)nlb);
		FZ_CHECK(io.offset == slba << c->cfg.lba_shift && io.bytes == bytes,
			 "io: offset 0x%llx bytes %llu; model 0x%llx %llu", (unsigned long long)io.offset,
			 (unsigned long long)io.bytes, (unsigned long long)(slba << c->cfg.lba_shift),
			 (unsigned long long)bytes);
		FZ_CHECK(io.offset <= c->ns_bytes && io.bytes <= c->ns_bytes - io.offset,
			 "io: offset 0x%llx + %llu bytes past the namespace (%llu bytes)", (unsigned long long)io.offset,
			 (unsigned long long)io.bytes, (unsigned long long)c->ns_bytes);
		if (is_wz)
			FZ_CHECK(io.xfer.n == 0, "Write Zeroes listed %u segments", (unsigned)io.xfer.n);
		for (i = 0; i < io.xfer.n; i++) {
			const struct gio_xfer_seg *s = &segs[i];
			sum += s->len;
			if (s->flags & GIO_XFER_BIT_BUCKET) {
				FZ_CHECK(!is_write, "Bit Bucket segment %u on a write", i);
			} else {
				unsigned ri;
				uint64_t off;
				FZ_CHECK(gio_dma_map_find(&c->map, s->addr, s->len) != NULL &&
						 tq_find(c, s->addr, s->len, &ri, &off),
					 "segment %u (0x%llx, %llu bytes) is not registered", i,
					 (unsigned long long)s->addr, (unsigned long long)s->len);
			}
		}
		if (is_rw) {
			FZ_CHECK(sum == bytes, "segments sum to %llu of %llu bytes", (unsigned long long)sum,
				 (unsigned long long)bytes);
			if (!fz_lists_equal(segs, io.xfer.n, wsegs, wl.n)) {
				fz_dump_list("io_prepare", segs, io.xfer.n);
				fz_dump_list("walker", wsegs, wl.n);
				FZ_CHECK(0, "io_prepare's segments differ from the walker's");
			}
		}
	}

	/* Data movement, replayed by the model on the copies. */
	if (io.offset <= c->backing_len && io.bytes <= c->backing_len - io.offset) {
		uint64_t off = io.offset;
		gio_tgt_io_copy_mem(c->t, &io, c->backing);
		if (is_wz) {
			memset(c->bshadow + off, 0, (size_t)io.bytes);
		} else {
			for (i = 0; i < io.xfer.n; i++) {
				const struct gio_xfer_seg *s = &segs[i];
				if (!(s->flags & GIO_XFER_BIT_BUCKET)) {
					unsigned char *p = tq_ptr(c, s->addr, s->len, 1);
					if (is_write)
						memcpy(c->bshadow + off, p, (size_t)s->len);
					else
						memcpy(p, c->bshadow + off, (size_t)s->len);
				}
				off += s->len;
			}
		}
		compare(c, 1, "gio_tgt_io_copy_mem");
	}
out:
	free(fsegs);
	free(wsegs);
	free(segs);
	return st;
}

/* ------------------------------------------------------------------------- */
/* Fetch and post                                                            */
/* ------------------------------------------------------------------------- */

/* The model's fetch: 1 (slot copied to out), 0 or -ENODEV. */
static int model_fetch(struct ctx *c, uint32_t qid, unsigned char *out)
{
	struct mq *sq, *cq;
	uint32_t tail, head, pending;
	if (qid >= NQ || !c->sq[qid].live)
		return -ENODEV;
	sq = &c->sq[qid];
	cq = &c->cq[sq->cqid];
	tail = *sq_db(c, qid);
	if (tail >= sq->depth) { /* a doorbell naming a slot outside the queue */
		c->bad_doorbells++;
		return 0;
	}
	if (tail == sq->idx)
		return 0;
	head = *cq_db(c, sq->cqid);
	if (head >= cq->depth) { /* "a bad head doorbell: treat the CQ as full"; it names a slot
				    outside the queue, so bad_doorbells counts it too */
		c->bad_doorbells++;
		return 0;
	}
	pending = (cq->idx + cq->depth - head) % cq->depth; /* posted, not consumed */
	if (pending + cq->inflight >= cq->depth - 1u)      /* a CQ holds depth - 1 entries */
		return 0;
	memcpy(out, tq_ptr(c, sq->addr + (uint64_t)sq->idx * GIO_SQE_BYTES, GIO_SQE_BYTES, 0), GIO_SQE_BYTES);
	sq->idx = (sq->idx + 1u) % sq->depth;
	cq->inflight++;
	return 1;
}

static void do_post(struct ctx *c, uint32_t sqid, uint16_t cid, uint16_t st, uint32_t dw0)
{
	struct mq *sq = &c->sq[sqid], *cq = &c->cq[c->sq[sqid].cqid];
	const uint64_t ring_bytes = (uint64_t)cq->depth * GIO_CQE_BYTES;
	const uint32_t head = *cq_db(c, sq->cqid), slot = cq->idx;
	unsigned char *ring = tq_ptr(c, cq->addr, ring_bytes, 0), *e;

	FZ_CHECK(ring != NULL && ring_bytes <= sizeof(cq_snap), "CQ %u memory", (unsigned)sq->cqid);
	if (head < cq->depth)
		FZ_CHECK((cq->idx + cq->depth - head) % cq->depth + 1u <= cq->depth - 1u,
			 "CQ %u: posting at tail %u with head doorbell %u overwrites an unconsumed entry", (unsigned)sq->cqid,
			 (unsigned)cq->idx, (unsigned)head);
	memcpy(cq_snap, ring, (size_t)ring_bytes);
	gio_tgt_post(c->t, (uint16_t)sqid, cid, st, dw0);
	e = ring + (uint64_t)slot * GIO_CQE_BYTES;
	FZ_CHECK(fz_rd32(e) == dw0 && fz_rd32(e + 4) == 0, "CQE dw0 0x%08x dw1 0x%08x, expected 0x%08x 0", (unsigned)fz_rd32(e),
		 (unsigned)fz_rd32(e + 4), (unsigned)dw0);
	FZ_CHECK(fz_rd16(e + 8) == sq->idx, "CQE SQHD %u, SQ %u head %u", (unsigned)fz_rd16(e + 8), (unsigned)sqid,
		 (unsigned)sq->idx);
	FZ_CHECK(fz_rd16(e + 10) == sqid && fz_rd16(e + 12) == cid, "CQE SQID %u CID 0x%04x, expected %u 0x%04x",
		 (unsigned)fz_rd16(e + 10), (unsigned)fz_rd16(e + 12), (unsigned)sqid, (unsigned)cid);
	FZ_CHECK(fz_rd16(e + 14) == (uint16_t)((st << 1) | cq->phase),
		 "CQE status word 0x%04x, expected status 0x%04x with phase %u", (unsigned)fz_rd16(e + 14), st,
		 (unsigned)cq->phase);
	FZ_CHECK(memcmp(ring, cq_snap, (size_t)slot * GIO_CQE_BYTES) == 0 &&
			 memcmp(e + GIO_CQE_BYTES, cq_snap + (slot + 1u) * GIO_CQE_BYTES,
				(size_t)(ring_bytes - (slot + 1u) * GIO_CQE_BYTES)) == 0,
		 "post wrote CQ %u outside slot %u", (unsigned)sq->cqid, (unsigned)slot);
	if (++cq->idx == cq->depth) {
		cq->idx = 0;
		cq->phase ^= 1u;
	}
	cq->inflight--;
	c->commands++;
	if (st & 0x7ffu)
		c->errors++;
	check_tables(c, "after post");
}

static void ring_op(struct ctx *c, uint32_t qid, uint8_t mode, uint16_t tail_raw, uint16_t head_raw,
		    const unsigned char *sqes, unsigned n)
{
	unsigned char fetched[8][GIO_SQE_BYTES], expect[GIO_SQE_BYTES];
	const unsigned batch = 1u << ((mode >> FZ_TRING_BATCH_SHIFT) & 3u);
	struct gio_sqe sqe;
	struct mq *sq = &c->sq[qid], *cq;
	unsigned char *ring;
	unsigned i;
	int got, exp;

	if (!sq->live) {
		exp = model_fetch(c, qid, expect);
		got = gio_tgt_fetch(c->t, (uint16_t)qid, &sqe);
		FZ_CHECK(got == exp && exp == -ENODEV, "fetch of missing SQ %u returned %d", (unsigned)qid, got);
		return;
	}
	cq = &c->cq[sq->cqid];
	ring = tq_ptr(c, sq->addr, (uint64_t)sq->depth * GIO_SQE_BYTES, 0);
	for (i = 0; i < n; i++) {
		memcpy(ring + (uint64_t)sq->host_tail * GIO_SQE_BYTES, sqes + (size_t)i * GIO_SQE_BYTES, GIO_SQE_BYTES);
		sq->host_tail = (sq->host_tail + 1u) % sq->depth;
	}
	switch (mode & FZ_TRING_TAIL_MASK) {
	case FZ_TRING_TAIL_RAW: *sq_db(c, qid) = tail_raw; break;
	case FZ_TRING_TAIL_MOD: *sq_db(c, qid) = tail_raw % sq->depth; break;
	default: *sq_db(c, qid) = sq->host_tail; break;
	}
	switch ((mode >> FZ_TRING_HEAD_SHIFT) & 3u) {
	case FZ_TRING_HEAD_ALL: *cq_db(c, sq->cqid) = cq->idx; break;
	case FZ_TRING_HEAD_RAW:
		*cq_db(c, sq->cqid) = (FZ_TGT_SKIP_KNOWN & SKIP_BAD_CQ_HEAD) ? head_raw % cq->depth : head_raw;
		break;
	case FZ_TRING_HEAD_BEHIND: *cq_db(c, sq->cqid) = (cq->idx + cq->depth - head_raw % cq->depth) % cq->depth; break;
	default: break;
	}
	for (;;) {
		unsigned nf = 0, k;
		if (c->cmds >= MAX_CMDS)
			break;
		for (k = 0; k < batch; k++) {
			exp = model_fetch(c, qid, fetched[nf]);
			got = gio_tgt_fetch(c->t, (uint16_t)qid, &sqe);
			FZ_CHECK(got == exp, "fetch SQ %u: returned %d, model %d (tail doorbell %u, head %u, depth %u; CQ %u "
					     "tail %u, head doorbell %u, depth %u, in flight %u)",
				 (unsigned)qid, got, exp, (unsigned)*sq_db(c, qid), (unsigned)c->t->sq[qid].idx,
				 (unsigned)sq->depth, (unsigned)sq->cqid, (unsigned)cq->idx, (unsigned)*cq_db(c, sq->cqid),
				 (unsigned)cq->depth, (unsigned)c->t->cq[sq->cqid].inflight);
			FZ_CHECK(fz_bad_doorbells(c->t) == c->bad_doorbells, "bad_doorbells %llu, model %u",
				 (unsigned long long)fz_bad_doorbells(c->t), (unsigned)c->bad_doorbells);
			if (got != 1)
				break;
			FZ_CHECK(memcmp(&sqe, fetched[nf], GIO_SQE_BYTES) == 0, "fetched SQE differs from SQ %u's slot",
				 (unsigned)qid);
			FZ_CHECK(c->t->sq[qid].idx == sq->idx && c->t->cq[sq->cqid].inflight == cq->inflight,
				 "after fetch: SQ head %u in flight %u, model %u %u", (unsigned)c->t->sq[qid].idx,
				 (unsigned)c->t->cq[sq->cqid].inflight, (unsigned)sq->idx, (unsigned)cq->inflight);
			nf++;
		}
		for (k = 0; k < nf; k++) {
			const unsigned char *b = fetched[(mode & FZ_TRING_REVERSE) ? nf - 1u - k : k];
			uint32_t dw0 = 0;
			uint16_t st = qid == 0 ? exec_admin(c, b, &dw0) : exec_io(c, b, GIO_TGT_MAX_SEGS);
			if (qid != 0)
				dw0 = 0;
			do_post(c, qid, fz_rd16(b + 2), st, dw0);
			c->cmds++;
		}
		if (nf < batch)
			break;
	}
}

/* ------------------------------------------------------------------------- */
/* Setup                                                                     */
/* ------------------------------------------------------------------------- */

static void decode_cfg(const uint8_t *h, struct gio_tgt_config *cfg, int *raw, int *large)
{
	const unsigned mode = h[FZ_TH_CFG] >> FZ_TCFG_SHIFT;
	const uint64_t v = fz_rd64(h + FZ_TH_NSZE);
	memset(cfg, 0, sizeof(*cfg));
	*raw = mode == FZ_TCFG_RAW;
	*large = !*raw && mode >= FZ_TCFG_LARGE;
	if (*raw) {
		cfg->sgls = fz_rd32(h + FZ_TH_SGLS);
		cfg->mdts = h[FZ_TH_MDTS];
		if ((FZ_TGT_SKIP_KNOWN & SKIP_MDTS_SHIFT) && cfg->mdts > 63)
			cfg->mdts = 63;
		cfg->lba_shift = h[FZ_TH_LBA];
		cfg->max_io_queues = h[FZ_TH_NQ];
		cfg->mqes = fz_rd16(h + FZ_TH_MQES);
		cfg->nsze = v;
		return;
	}
	cfg->sgls = fz_sgls(h[FZ_TH_CFG] & 0x1fu);
	cfg->mdts = (uint8_t)(h[FZ_TH_MDTS] % 9u);
	cfg->lba_shift = (uint8_t)((h[FZ_TH_LBA] & 0x80u) ? 9u + ((h[FZ_TH_LBA] >> 2) & 7u) : 9u + (h[FZ_TH_LBA] & 3u));
	cfg->max_io_queues = (uint16_t)(1u + (h[FZ_TH_NQ] & 63u));
	cfg->mqes = fz_rd16(h + FZ_TH_MQES) ? fz_rd16(h + FZ_TH_MQES) : 1u;
	cfg->nsze = *large ? 1u + v % (UINT64_MAX >> cfg->lba_shift) : 1u + v % (FZ_TGT_BACKING_MAX >> cfg->lba_shift);
}

/* gio_tgt_init's documented ranges. */
static int cfg_valid(const struct gio_tgt_config *cfg)
{
	return cfg->lba_shift >= 9 && cfg->lba_shift <= 16 && cfg->nsze >= 1 && cfg->mdts <= 20 && cfg->max_io_queues >= 1 &&
	       cfg->max_io_queues <= GIO_TGT_MAX_IO_QUEUES && cfg->mqes >= 1 && (cfg->sgls & 3u) != 3u &&
	       cfg->nsze <= (UINT64_MAX >> cfg->lba_shift);
}

static void add_region(struct ctx *c, uint64_t bus, const uint8_t *src, size_t len, unsigned mis)
{
	struct region *r = &c->rg[c->nrg];
	if (len == 0)
		return;
	r->alloc = (unsigned char *)malloc(len + mis);
	r->shadow = (unsigned char *)malloc(len);
	if (r->alloc == NULL || r->shadow == NULL)
		abort();
	r->p = r->alloc + mis;
	if (src)
		memcpy(r->p, src, len);
	else
		memset(r->p, 0, len);
	r->bus = bus;
	r->len = len;
	c->dr[c->nrg].addr = bus;
	c->dr[c->nrg].len = len;
	c->dr[c->nrg].ptr = r->p;
	c->nrg++;
}

static void rd_bytes(struct fz_reader *r, unsigned char *dst, size_t n)
{
	size_t k = r->n < n ? r->n : n;
	memcpy(dst, r->p, k);
	memset(dst + k, 0, n - k);
	r->p += k;
	r->n -= k;
}

static void ctx_free(struct ctx *c)
{
	unsigned i;
	for (i = 0; i < c->nrg; i++) {
		free(c->rg[i].alloc);
		free(c->rg[i].shadow);
	}
	free(c->backing);
	free(c->bshadow);
	free(c->t);
	free(c->bar);
	free(c);
}

static void regs_op(struct ctx *c, uint8_t mode, const unsigned char *pl)
{
	uint32_t cc = c->bar->regs.cc;
	switch (mode & 7u) {
	case FZ_TREGS_DISABLE: cc &= ~1u; break;
	case FZ_TREGS_ENABLE:
		cc = fz_tgt_cc((mode >> 4) & 3u);
		c->bar->regs.aqa = (c->asqs - 1u) | ((c->acqs - 1u) << 16);
		c->bar->regs.asq = FZ_TQ_ASQ;
		c->bar->regs.acq = FZ_TQ_ACQ;
		break;
	case FZ_TREGS_SHN_NORMAL: cc = (cc & ~(3u << 14)) | (1u << 14); break;
	case FZ_TREGS_SHN_ABRUPT: cc = (cc & ~(3u << 14)) | (2u << 14); break;
	case FZ_TREGS_SHN_CLEAR: cc &= ~(3u << 14); break;
	case FZ_TREGS_RAW_CC: cc = fz_rd32(pl); break;
	case FZ_TREGS_RAW_ALL:
		cc = fz_rd32(pl);
		c->bar->regs.aqa = fz_rd32(pl + 4);
		c->bar->regs.asq = fz_rd64(pl + 8);
		c->bar->regs.acq = fz_rd64(pl + 16);
		break;
	default: break;
	}
	if ((FZ_TGT_SKIP_KNOWN & SKIP_SHN_RDY) && CC_EN(c->cc) && !c->enabled_ok && CC_EN(cc) &&
	    CC_SHN(cc) != 0 && CC_SHN(cc) != CC_SHN(c->cc))
		cc = (cc & ~(3u << 14)) | (CC_SHN(c->cc) << 14); /* no new shutdown after a failed enable */
	c->bar->regs.cc = cc;
	poll_and_check(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t h[FZ_TH_BYTES] = {0};
	struct fz_reader r;
	struct ctx *c;
	const uint8_t *blob;
	size_t blob_len, split;
	unsigned mis, nops = 0, bmode;
	int raw, large, rc;
	uint64_t i;

	memcpy(h, data, size < FZ_TH_BYTES ? size : FZ_TH_BYTES);
	r.p = data + (size < FZ_TH_BYTES ? size : FZ_TH_BYTES);
	r.n = size - (size < FZ_TH_BYTES ? size : FZ_TH_BYTES);
	blob_len = fz_rd16(h + FZ_TH_BLOB_LEN);
	if (blob_len > r.n)
		blob_len = r.n;
	blob = r.p;
	r.p += blob_len;
	r.n -= blob_len;

	c = (struct ctx *)calloc(1, sizeof(*c));
	if (c == NULL)
		abort();
	decode_cfg(h, &c->cfg, &raw, &large);

	/* Registered memory: A and B from the blob, Q of zeros. */
	split = fz_rd16(h + FZ_TH_SPLIT);
	if (split > blob_len)
		split = blob_len;
	mis = (h[FZ_TH_REGION] >> 2) & 7u;
	if (FZ_TGT_SKIP_KNOWN & SKIP_QUEUE_ALIGN)
		mis = 0;
	add_region(c, FZ_BUS_A, blob, blob_len - split, mis);
	{
		const uint64_t base = fz_region_b_base(h[FZ_TH_REGION], blob_len - split);
		size_t lb = split;
		if (lb > 0 - base)
			lb = (size_t)(0 - base);
		add_region(c, base, blob + (blob_len - split), lb, mis);
	}
	add_region(c, FZ_TQ_BUS, NULL, FZ_TQ_BYTES, 0);
	c->map.regions = c->dr;
	c->map.count = c->nrg;

	c->t = (struct gio_tgt *)malloc(sizeof(*c->t));
	c->bar = (struct gio_tgt_bar *)malloc(sizeof(*c->bar));
	if (c->t == NULL || c->bar == NULL)
		abort();
	memset(c->t, 0xa5, sizeof(*c->t));
	memset(c->bar, 0xa5, sizeof(*c->bar));

	rc = gio_tgt_init(c->t, c->bar, &c->cfg, &c->map);
	FZ_CHECK(rc == (cfg_valid(&c->cfg) ? 0 : -EINVAL),
		 "gio_tgt_init returned %d for lba_shift %u nsze 0x%llx max_io_queues %u mqes %u sgls 0x%x mdts %u", rc,
		 (unsigned)c->cfg.lba_shift, (unsigned long long)c->cfg.nsze, (unsigned)c->cfg.max_io_queues,
		 (unsigned)c->cfg.mqes, (unsigned)c->cfg.sgls, (unsigned)c->cfg.mdts);
	if (rc != 0) {
		ctx_free(c);
		return 0;
	}
	FZ_CHECK((c->bar->regs.cap & 0xffffu) == c->cfg.mqes && ((c->bar->regs.cap >> 32) & 0xfu) == 0 &&
			 ((c->bar->regs.cap >> 48) & 0xfu) == 0 && ((c->bar->regs.cap >> 52) & 0xfu) >= 4,
		 "CAP 0x%016llx (mqes %u)", (unsigned long long)c->bar->regs.cap, (unsigned)c->cfg.mqes);
	FZ_CHECK(c->bar->regs.cc == 0 && c->bar->regs.csts == 0, "CC/CSTS not 0 after init");
	check_doorbells_zero(c, "after init");
	/* "2^mdts 4 KiB pages; 0 means no limit": from MDTS 52 on, no transfer reaches the limit
	 * (gio_dptr_caps_init clamps the same way). */
	c->max_xfer = (c->cfg.mdts == 0 || c->cfg.mdts + 12u > 63u) ? 0 : 4096ull << c->cfg.mdts;
	c->page = 4096;
	c->ns_bytes = c->cfg.nsze << c->cfg.lba_shift;
	c->backing_len = c->ns_bytes < FZ_TGT_BACKING_MAX ? c->ns_bytes : FZ_TGT_BACKING_MAX;
	c->backing = (unsigned char *)malloc((size_t)c->backing_len);
	c->bshadow = (unsigned char *)malloc((size_t)c->backing_len);
	if (c->backing == NULL || c->bshadow == NULL)
		abort();
	for (i = 0; i < c->backing_len; i++)
		c->backing[i] = (unsigned char)(i * 131u + 17u + (i >> 9));
	check_tables(c, "after init");

	/* Bring-up. */
	c->asqs = h[FZ_TH_ASQS] == 0xffu ? 1u : 2u + h[FZ_TH_ASQS] % 63u;
	c->acqs = h[FZ_TH_ACQS] == 0xffu ? 1u : 2u + h[FZ_TH_ACQS] % 255u;
	bmode = h[FZ_TH_CC] & 0xfu;
	if (bmode != FZ_TCC_NONE) {
		const uint32_t msel = (h[FZ_TH_CC] >> FZ_TCC_MPS_SHIFT) & 7u;
		uint32_t cc = fz_tgt_cc(msel & 3u);
		c->bar->regs.aqa = (c->asqs - 1u) | ((c->acqs - 1u) << 16);
		c->bar->regs.asq = FZ_TQ_ASQ;
		c->bar->regs.acq = FZ_TQ_ACQ;
		switch (bmode) {
		case FZ_TCC_ACQ_IN_A: c->bar->regs.acq = FZ_BUS_A; break;
		case FZ_TCC_BAD_MPS: cc = (cc & ~(0xfu << 7)) | ((5u + msel) << 7); break;
		case FZ_TCC_BAD_IOSQES: cc = (cc & ~(0xfu << 16)) | (7u << 16); break;
		case FZ_TCC_BAD_IOCQES: cc = (cc & ~(0xfu << 20)) | (5u << 20); break;
		case FZ_TCC_BAD_CSS: cc |= 7u << 4; break;
		case FZ_TCC_ASQ_MISALIGN: c->bar->regs.asq = FZ_TQ_BUS + 0x40u; break;
		case FZ_TCC_ACQ_UNREG: c->bar->regs.acq = FZ_TQ_BUS + FZ_TQ_BYTES; break;
		case FZ_TCC_RAW:
			cc = fz_rd32(h + FZ_TH_RAW_CC) | 1u;
			c->bar->regs.aqa = fz_rd32(h + FZ_TH_RAW_AQA);
			c->bar->regs.asq = fz_rd64(h + FZ_TH_RAW_ASQ);
			c->bar->regs.acq = fz_rd64(h + FZ_TH_RAW_ACQ);
			break;
		default: break;
		}
		c->bar->regs.cc = cc;
		poll_and_check(c);
	}

	/* Ops. */
	while (r.n > 0 && nops < MAX_OPS && c->cmds < MAX_CMDS) {
		const uint8_t op = fz_u8(&r), arg = op >> FZ_TOP_ARG_SHIFT;
		unsigned char sqes[8 * GIO_SQE_BYTES], pl[FZ_TREGS_PAYLOAD];
		nops++;
		switch (op & 7u) {
		case FZ_TOP_ADMIN:
		case FZ_TOP_ADMIN2: {
			uint32_t dw0;
			rd_bytes(&r, sqes, GIO_SQE_BYTES);
			if (c->sq[0].live) /* the admin thread serves admin commands while the queue exists */
				exec_admin(c, sqes, &dw0);
			break;
		}
		case FZ_TOP_IO:
		case FZ_TOP_IO2: {
			const uint8_t capb = fz_u8(&r);
			rd_bytes(&r, sqes, GIO_SQE_BYTES);
			exec_io(c, sqes, capb ? capb : GIO_TGT_MAX_SEGS);
			break;
		}
		case FZ_TOP_ARING:
		case FZ_TOP_IORING: {
			uint32_t qid = 0;
			uint8_t mode;
			uint16_t tail, head;
			const unsigned n = arg & 7u;
			if ((op & 7u) == FZ_TOP_IORING) {
				const uint8_t sel = fz_u8(&r);
				uint32_t q, nlive = 0, pick;
				for (q = 1; q < NQ; q++)
					nlive += c->sq[q].live != 0;
				if (nlive == 0) {
					qid = 1u + sel % GIO_TGT_MAX_IO_QUEUES;
				} else {
					pick = sel % nlive;
					for (q = 1; q < NQ; q++)
						if (c->sq[q].live && pick-- == 0)
							break;
					qid = q;
				}
			}
			mode = fz_u8(&r);
			tail = fz_u16(&r);
			head = fz_u16(&r);
			rd_bytes(&r, sqes, (size_t)n * GIO_SQE_BYTES);
			ring_op(c, qid, mode, tail, head, sqes, n);
			break;
		}
		case FZ_TOP_REGS: {
			const uint8_t mode = fz_u8(&r);
			rd_bytes(&r, pl, sizeof(pl));
			regs_op(c, mode, pl);
			break;
		}
		default: { /* FZ_TOP_FETCHQ */
			const uint16_t qid = fz_u16(&r);
			struct gio_sqe sqe;
			if (qid < NQ && c->sq[qid].live)
				break; /* a live queue's commands need posting: the ring ops serve those */
			if ((FZ_TGT_SKIP_KNOWN & SKIP_QID_INDEX) && qid > NQ)
				break;
			rc = gio_tgt_fetch(c->t, qid, &sqe);
			FZ_CHECK(rc == -ENODEV, "fetch of missing queue %u returned %d", (unsigned)qid, rc);
			break;
		}
		}
	}
	check_tables(c, "at the end");
	ctx_free(c);
	return 0;
}
