/* One KV store device's I/O (src/kv/dev.h): queue pair, bounce, blocking commands with a
 * deadline, the index scan. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/kv/store.h>
#include <giouring/proto/dptr_build.h>
#include <giouring/proto/prep.h>

#include "../internal.h"
#include "dev.h"

/* Largest transfer of one command when the controller sets no MDTS below it, and the least room
 * the bounce offers a scan of the index. */
#define KV_PIECE_MAX (1u << 20)
#define KV_BOUNCE_MIN (256u << 10)
#define KV_PAGE 4096u
/* Commands of one batch of entry writes in flight at once (gio__kv_dev_write_entries()), each
 * with its own PRP list or SGL segment; the queue pair holds one more. A store's slots freed or
 * committed together cost a round trip per this many runs, not one per slot. */
#define KV_INFLIGHT 8u
#define KV_QP_DEPTH 16u

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* Builds the data pointer of a command whose data is [off, off + bytes) of the bounce, its PRP
 * list or SGL segment in list slice `slice` (one per command in flight). */
static int dev_dptr(struct gio__kv_dev *dv, struct gio_sqe *sqe, uint64_t off, uint64_t bytes, uint32_t slice,
		    const char *what, uint64_t slba, uint64_t nblocks)
{
	const struct gio_range r = {dv->mem_addr + off, bytes};
	const uint64_t at = dv->buf_bytes + (uint64_t)slice * dv->list_bytes;
	const int rc = gio_dptr_build(sqe, &r, 1, dv->caps, dv->mem + at, dv->mem_addr + at, dv->list_bytes);
	if (rc < 0)
		return gio__fail(rc, "giouring: kv store: device %u: %s of LBA %llu (%llu blocks): data pointer refused (%d)",
				 dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks, rc);
	return 0;
}

/* The message of a command that failed: rc with what, where, and the queue's own words. */
static int dev_cmd_failed(struct gio__kv_dev *dv, int rc, const char *what, uint64_t slba, uint64_t nblocks)
{
	if (rc == -ETIME)
		dv->abandoned = 1;
	return gio__fail(rc, "giouring: kv store: device %u: %s of LBA %llu (%llu blocks) failed: %s",
			 dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks, gio_last_error());
}

/* Runs one prepared command whose data (if any) is [off, off + bytes) of the device's bounce. */
static int dev_cmd(struct gio__kv_dev *dv, struct gio_sqe *sqe, uint64_t off, uint64_t bytes, const char *what,
		   uint64_t slba, uint64_t nblocks)
{
	int rc;
	if (bytes && (rc = dev_dptr(dv, sqe, off, bytes, 0, what, slba, nblocks)) != 0)
		return rc;
	rc = gio_qp_submit_wait(dv->qp, sqe, dv->timeout_ns, NULL, NULL);
	return rc ? dev_cmd_failed(dv, rc, what, slba, nblocks) : 0;
}

/* gio__kv_dev_rw() from bounce offset off (a multiple of the block size). */
static int dev_rw_at(struct gio__kv_dev *dv, int write, uint64_t slba, uint64_t nblocks, uint64_t off, const char *what)
{
	const uint64_t b = dv->info.lba_bytes, per = dv->piece_bytes / b;
	uint64_t done = 0;
	if (nblocks > (dv->buf_bytes - off) / b)
		return gio__fail(-EINVAL, "giouring: kv store: device %u: %s: %llu blocks exceed the bounce",
				 dv->sb.device_index, what, (unsigned long long)nblocks);
	if (dv->bd) {
		int rc;
		if (slba > dv->info.nblocks || nblocks > dv->info.nblocks - slba)
			return gio__fail(-EINVAL, "giouring: kv store: device %u: %s: LBA %llu (%llu blocks) out of range",
					 dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks);
		rc = dv->bd->rw(dv->bd->arg, write, slba, nblocks, dv->mem + off, dv->timeout_ns);
		return rc ? dev_cmd_failed(dv, rc, what, slba, nblocks) : 0;
	}
	while (done < nblocks) {
		const uint64_t nb = nblocks - done < per ? nblocks - done : per;
		struct gio_sqe sqe;
		int rc = write ? gio_prep_write(&sqe, dv->info.nsid, slba + done, (uint32_t)nb)
			       : gio_prep_read(&sqe, dv->info.nsid, slba + done, (uint32_t)nb);
		if (rc)
			return gio__fail(rc, "giouring: kv store: device %u: %s: LBA %llu (%llu blocks) out of range",
					 dv->sb.device_index, what, (unsigned long long)(slba + done),
					 (unsigned long long)nb);
		rc = dev_cmd(dv, &sqe, off + done * b, nb * b, what, slba + done, nb);
		if (rc)
			return rc;
		done += nb;
	}
	return 0;
}

int gio__kv_dev_rw(struct gio__kv_dev *dv, int write, uint64_t slba, uint64_t nblocks, const char *what)
{
	return dev_rw_at(dv, write, slba, nblocks, 0, what);
}

void gio__kv_note_failure(int rc, int *first, char *msg, size_t len)
{
	if (rc && (!*first || (rc == -ETIME && *first != -ETIME))) {
		*first = rc;
		snprintf(msg, len, "%s", gio_last_error());
	}
}

/* A slot and its entry's place in the caller's array, sorted by slot. */
struct slot_at {
	uint64_t slot;
	uint32_t i;
};

static int slot_cmp(const void *a, const void *b)
{
	const uint64_t x = ((const struct slot_at *)a)->slot, y = ((const struct slot_at *)b)->slot;
	return x < y ? -1 : x > y;
}

/* One command of a batch of entry writes: the entries at sorted positions [first, first +
 * count), of consecutive slots, encoded at bounce offset off. */
struct entry_run {
	uint32_t first, count;
	uint64_t off, slba, deadline;
	uint32_t ticket;
	int submitted, rc;
};

/* Starts run r's write, its list in slice `slice`; a block device of the caller's writes it
 * now. 0, or the failure with its message. */
static int run_start(struct gio__kv_dev *dv, struct entry_run *r, uint32_t slice, const char *what)
{
	struct gio_sqe sqe;
	uint32_t idx;
	int rc;
	if (dv->bd)
		return dev_rw_at(dv, 1, r->slba, r->count, r->off, what);
	if ((rc = gio_prep_write(&sqe, dv->info.nsid, r->slba, r->count)) != 0)
		return gio__fail(rc, "giouring: kv store: device %u: %s: LBA %llu (%u blocks) out of range",
				 dv->sb.device_index, what, (unsigned long long)r->slba, r->count);
	if ((rc = dev_dptr(dv, &sqe, r->off, (uint64_t)r->count * dv->info.lba_bytes, slice, what, r->slba, r->count)))
		return rc;
	r->deadline = gio_deadline_in(dv->timeout_ns);
	rc = gio_qp_reserve_wait(dv->qp, 1, r->deadline, &idx);
	if (rc == 0) {
		rc = gio_qp_put(dv->qp, idx, &sqe, 0, 0);
		gio_qp_publish(dv->qp);
	}
	if (rc) {
		gio__qp_result_fail(dv->qp, sqe.opc, rc, 0);
		return dev_cmd_failed(dv, rc, what, r->slba, r->count);
	}
	r->ticket = idx;
	r->submitted = 1;
	return 0;
}

/* Waits for a run that run_start() submitted. */
static int run_wait(struct gio__kv_dev *dv, struct entry_run *r, const char *what)
{
	uint16_t st = 0;
	const int rc = gio_qp_wait(dv->qp, r->ticket, r->deadline, &st, NULL);
	if (!rc)
		return 0;
	gio__qp_result_fail(dv->qp, GIO_NVM_OPC_WRITE, rc, st);
	return dev_cmd_failed(dv, rc, what, r->slba, r->count);
}

int gio__kv_dev_write_entries(struct gio__kv_dev *dv, struct gio__kv_entry_write *w, uint32_t n, const char *what)
{
	const uint64_t b = dv->info.lba_bytes, cap = dv->buf_bytes / b, per = dv->piece_bytes / b;
	const uint32_t most = n < cap ? n : (uint32_t)cap; /* runs of a wave */
	struct slot_at *ord = malloc(sizeof(*ord) * (n ? n : 1));
	struct entry_run *runs = malloc(sizeof(*runs) * (most ? most : 1));
	char msg[512] = "";
	uint32_t pos, i, k, nruns, started, done;
	int first = 0, stop = 0, rc;
	gio__clear_error();
	if (!ord || !runs) {
		free(ord);
		free(runs);
		for (i = 0; i < n; i++)
			w[i].rc = -ENOMEM;
		return gio__fail(-ENOMEM, "giouring: kv store: device %u: %s: no memory for %u entries",
				 dv->sb.device_index, what, n);
	}
	for (i = 0; i < n; i++) {
		ord[i].slot = w[i].slot;
		ord[i].i = i;
		w[i].rc = -ETIME; /* until written: what is left when a deadline stops the batch */
	}
	qsort(ord, n, sizeof(*ord), slot_cmp);
	for (pos = 0; pos < n && !stop;) {
		uint64_t u = 0;
		int cut = 1;
		/* A wave: the entries the bounce holds, each encoded at its place, cut into runs of
		 * consecutive slots. */
		for (nruns = 0; pos < n && u < cap; pos++) {
			struct gio__kv_entry_write *e = &w[ord[pos].i];
			struct entry_run *r = nruns ? &runs[nruns - 1] : NULL;
			uint32_t reason = GIO_KV_R_OK;
			uint8_t *at = dv->mem + u * b;
			memset(at, 0, b);
			if (gio_kv_entry_encode(at, &dv->sb, e->slot, e->state, e->key, e->seq, e->data_len, &reason)) {
				e->rc = gio__fail(-EINVAL, "giouring: kv store: device %u: %s: entry of slot %llu refused: %s",
						  dv->sb.device_index, what, (unsigned long long)e->slot, gio_kv_reason_str(reason));
				gio__kv_note_failure(e->rc, &first, msg, sizeof(msg));
				cut = 1;
				continue;
			}
			if (!cut && r->count < per && e->slot == w[ord[pos - 1].i].slot + 1) {
				r->count++;
			} else {
				r = &runs[nruns++];
				memset(r, 0, sizeof(*r));
				r->first = pos;
				r->count = 1;
				r->off = u * b;
				r->slba = gio_kv_entry_lba(&dv->lay, e->slot);
			}
			cut = 0;
			u++;
		}
		/* Up to dv->inflight runs in flight, each with its own list slice: run k reuses run
		 * k - inflight's, which is waited for first. */
		for (started = 0, done = 0; done < started || (started < nruns && !stop);) {
			struct entry_run *r;
			if (started < nruns && !stop && started - done < dv->inflight) {
				r = &runs[started++];
				rc = run_start(dv, r, (started - 1) % dv->inflight, what);
			} else {
				r = &runs[done++];
				if (!r->submitted)
					continue;
				rc = run_wait(dv, r, what);
			}
			if (rc) {
				r->rc = rc;
				stop |= rc == -ETIME;
				if (rc == -ETIME || r->count == 1) /* else each entry is written again below */
					gio__kv_note_failure(rc, &first, msg, sizeof(msg));
			}
		}
		/* The results; a failed run's entries written again one by one (their blocks are still
		 * in the bounce), so that a bad block costs its own slot. */
		for (k = 0; k < started; k++) {
			const struct entry_run *r = &runs[k];
			for (i = 0; i < r->count; i++) {
				struct gio__kv_entry_write *e = &w[ord[r->first + i].i];
				if (!r->rc || r->count == 1 || r->rc == -ETIME || stop) {
					e->rc = r->rc;
					continue;
				}
				e->rc = dev_rw_at(dv, 1, r->slba + i, 1, r->off + i * b, what);
				gio__kv_note_failure(e->rc, &first, msg, sizeof(msg));
				stop |= e->rc == -ETIME;
			}
		}
	}
	free(ord);
	free(runs);
	if (!first) {
		gio__clear_error();
		return 0;
	}
	return gio__fail(first, "%s", msg);
}

int gio__kv_dev_flush(struct gio__kv_dev *dv, const char *what)
{
	struct gio_sqe sqe;
	if (dv->bd) {
		const int rc = dv->bd->flush ? dv->bd->flush(dv->bd->arg, dv->timeout_ns) : 0;
		return rc ? gio__fail(rc, "giouring: kv store: device %u: %s failed: %s", dv->sb.device_index, what,
				      gio_last_error())
			  : 0;
	}
	gio_prep_flush(&sqe, dv->info.nsid);
	return dev_cmd(dv, &sqe, 0, 0, what, 0, 0);
}

void gio__kv_dev_detach(struct gio__kv_dev *dv, int *first_rc)
{
	int rc;
	if (dv->qp) {
		rc = gio_ctx_qp_destroy(dv->ctx, dv->qp, dv->timeout_ns, NULL, NULL);
		if (rc < 0) {
			/* The queue may still hold a command naming the bounce. */
			dv->abandoned = 1;
			if (first_rc && !*first_rc)
				*first_rc = gio__fail(rc, "giouring: kv store: device %u: queue pair destroy failed: %s",
						      dv->sb.device_index, gio_last_error());
		}
		dv->qp = NULL;
	}
	if (dv->mem && !dv->abandoned) {
		if (dv->registered && dv->ctx)
			gio_ctx_unregister(dv->ctx, dv->mem);
		free(dv->mem);
	} else if (dv->mem) {
		gio__keep(dv->mem); /* a command past its deadline may still write it */
	}
	dv->mem = NULL;
}

/* The bounce, then a list slice per command in flight. */
static uint64_t dev_mem_bytes(const struct gio__kv_dev *dv)
{
	return dv->buf_bytes + KV_INFLIGHT * dv->list_bytes;
}

/* The bounce and piece sizes of a device whose dv->info is set; the bounce allocated. */
static int dev_bounce(struct gio__kv_dev *dv, uint32_t pos, uint64_t buf_min)
{
	const uint64_t b = dv->info.lba_bytes;
	uint64_t piece;
	if (b < GIO_KV_BLOCK_MIN || b > GIO_KV_BLOCK_MAX || (b & (b - 1)))
		return gio__fail(-EINVAL, "giouring: kv store: ctxs[%u]: block size %llu not a power of two from %u to %u",
				 pos, (unsigned long long)b, GIO_KV_BLOCK_MIN, GIO_KV_BLOCK_MAX);
	piece = dv->info.max_xfer_bytes && dv->info.max_xfer_bytes < KV_PIECE_MAX ? dv->info.max_xfer_bytes
										  : KV_PIECE_MAX;
	piece = piece / b * b;
	if (piece == 0)
		piece = b;
	dv->piece_bytes = piece;
	dv->buf_bytes = align_up(buf_min, b);
	if (dv->buf_bytes < KV_BOUNCE_MIN)
		dv->buf_bytes = KV_BOUNCE_MIN;
	if (dv->buf_bytes < GIO_KV_SB_REGION_BYTES || dv->buf_bytes < b)
		dv->buf_bytes = b > GIO_KV_SB_REGION_BYTES ? b : GIO_KV_SB_REGION_BYTES;
	dv->buf_bytes = align_up(dv->buf_bytes, KV_PAGE);
	/* A PRP list of one piece: an entry per page, plus one for a first page's offset. */
	dv->list_bytes = align_up((piece / KV_PAGE + 2) * 8, KV_PAGE);
	dv->mem = aligned_alloc(KV_PAGE, dev_mem_bytes(dv));
	if (!dv->mem)
		return gio__fail(-ENOMEM, "giouring: kv store: ctxs[%u]: no memory for a bounce of %llu bytes", pos,
				 (unsigned long long)dev_mem_bytes(dv));
	memset(dv->mem, 0, dev_mem_bytes(dv));
	dv->inflight = 1;
	return 0;
}

int gio__kv_dev_attach(struct gio__kv_dev *dv, struct gio_ctx *ctx, uint32_t pos, uint64_t buf_min,
		       uint64_t timeout_ns)
{
	uint32_t depth;
	int rc;
	dv->ctx = ctx;
	dv->pos = pos;
	dv->timeout_ns = timeout_ns;
	dv->sb.device_index = pos;
	gio_ctx_info(ctx, &dv->info);
	dv->caps = gio_ctx_dptr_caps(ctx);
	if ((rc = dev_bounce(dv, pos, buf_min)) != 0)
		return rc;
	rc = gio_ctx_register(ctx, dv->mem, dev_mem_bytes(dv), &dv->mem_addr);
	if (rc)
		return gio__fail(rc, "giouring: kv store: ctxs[%u]: registering the bounce failed: %s", pos,
				 gio_last_error());
	dv->registered = 1;
	depth = dv->info.max_queue_entries >= KV_QP_DEPTH ? KV_QP_DEPTH : dv->info.max_queue_entries >= 4 ? 4 : 2;
	rc = gio_ctx_qp_create(ctx, depth, &dv->qp);
	if (rc)
		return gio__fail(rc, "giouring: kv store: ctxs[%u]: queue pair creation failed: %s", pos,
				 gio_last_error());
	dv->inflight = depth - 1 < KV_INFLIGHT ? depth - 1 : KV_INFLIGHT;
	return 0;
}

int gio__kv_dev_attach_bd(struct gio__kv_dev *dv, const struct gio_kv_blockdev *bd, uint32_t pos, uint64_t buf_min,
			  uint64_t timeout_ns)
{
	dv->bd = bd;
	dv->pos = pos;
	dv->timeout_ns = timeout_ns;
	dv->sb.device_index = pos;
	if (!bd->rw)
		return gio__fail(-EINVAL, "giouring: kv store: devs[%u]: no rw function", pos);
	dv->info.nblocks = bd->nblocks;
	dv->info.lba_bytes = bd->lba_bytes;
	dv->info.max_xfer_bytes = bd->max_xfer_bytes;
	dv->info.nsid = 1;
	return dev_bounce(dv, pos, buf_min);
}

int gio__kv_dev_scan(struct gio__kv_dev *dv, gio__kv_entry_visit visit, void *arg)
{
	const uint64_t b = dv->lay.block_bytes, batch = dv->buf_bytes / b;
	uint64_t slot, k;
	int rc;
	for (slot = 0; slot < dv->lay.slots; slot += batch) {
		const uint64_t nb = dv->lay.slots - slot < batch ? dv->lay.slots - slot : batch;
		const int read_rc = gio__kv_dev_rw(dv, 0, gio_kv_entry_lba(&dv->lay, slot), nb, "reading entries");
		if (read_rc == -ETIME)
			return read_rc;
		for (k = 0; k < nb; k++) {
			struct gio_kv_entry e;
			uint32_t reason = GIO_KV_R_OK;
			const uint8_t *at = dv->mem + k * b;
			rc = read_rc;
			if (read_rc && nb > 1) {
				/* The batch failed: this block alone, so that a bad block costs its own
				 * slot, not every slot of the batch read with it. */
				rc = gio__kv_dev_rw(dv, 0, gio_kv_entry_lba(&dv->lay, slot + k), 1, "reading an entry");
				if (rc == -ETIME)
					return rc;
				at = dv->mem;
			}
			memset(&e, 0, sizeof(e));
			if (!rc)
				rc = gio_kv_entry_decode(at, &dv->sb, slot + k, &e, &reason);
			rc = visit(arg, slot + k, rc, reason, &e);
			if (rc)
				return rc;
		}
	}
	return 0;
}
