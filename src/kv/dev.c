/* One KV store device's I/O (src/kv/dev.h): queue pair, bounce, blocking commands with a
 * deadline, the index scan. */
#define _GNU_SOURCE
#include <errno.h>
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

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/* Runs one prepared command whose data (if any) is [off, off + bytes) of the device's bounce. */
static int dev_cmd(struct gio__kv_dev *dv, struct gio_sqe *sqe, uint64_t off, uint64_t bytes, const char *what,
		   uint64_t slba, uint64_t nblocks)
{
	int rc;
	if (bytes) {
		const struct gio_range r = {dv->mem_addr + off, bytes};
		rc = gio_dptr_build(sqe, &r, 1, dv->caps, dv->mem + dv->buf_bytes, dv->mem_addr + dv->buf_bytes,
				    dv->list_bytes);
		if (rc < 0)
			return gio__fail(rc, "giouring: kv store: device %u: %s of LBA %llu (%llu blocks): data pointer refused (%d)",
					 dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks, rc);
	}
	rc = gio_qp_submit_wait(dv->qp, sqe, dv->timeout_ns, NULL, NULL);
	if (rc == -ETIME)
		dv->abandoned = 1;
	if (rc)
		return gio__fail(rc, "giouring: kv store: device %u: %s of LBA %llu (%llu blocks) failed: %s",
				 dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks,
				 gio_last_error());
	return 0;
}

int gio__kv_dev_rw(struct gio__kv_dev *dv, int write, uint64_t slba, uint64_t nblocks, const char *what)
{
	const uint64_t b = dv->info.lba_bytes, per = dv->piece_bytes / b;
	uint64_t done = 0;
	if (nblocks > dv->buf_bytes / b)
		return gio__fail(-EINVAL, "giouring: kv store: device %u: %s: %llu blocks exceed the bounce",
				 dv->sb.device_index, what, (unsigned long long)nblocks);
	if (dv->bd) {
		int rc;
		if (slba > dv->info.nblocks || nblocks > dv->info.nblocks - slba)
			return gio__fail(-EINVAL, "giouring: kv store: device %u: %s: LBA %llu (%llu blocks) out of range",
					 dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks);
		rc = dv->bd->rw(dv->bd->arg, write, slba, nblocks, dv->mem, dv->timeout_ns);
		if (rc == -ETIME)
			dv->abandoned = 1;
		return rc ? gio__fail(rc, "giouring: kv store: device %u: %s of LBA %llu (%llu blocks) failed: %s",
				      dv->sb.device_index, what, (unsigned long long)slba, (unsigned long long)nblocks,
				      gio_last_error())
			  : 0;
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
		rc = dev_cmd(dv, &sqe, done * b, nb * b, what, slba + done, nb);
		if (rc)
			return rc;
		done += nb;
	}
	return 0;
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
	dv->mem = aligned_alloc(KV_PAGE, dv->buf_bytes + dv->list_bytes);
	if (!dv->mem)
		return gio__fail(-ENOMEM, "giouring: kv store: ctxs[%u]: no memory for a bounce of %llu bytes", pos,
				 (unsigned long long)(dv->buf_bytes + dv->list_bytes));
	memset(dv->mem, 0, dv->buf_bytes + dv->list_bytes);
	return 0;
}

int gio__kv_dev_attach(struct gio__kv_dev *dv, struct gio_ctx *ctx, uint32_t pos, uint64_t buf_min,
		       uint64_t timeout_ns)
{
	int rc;
	dv->ctx = ctx;
	dv->pos = pos;
	dv->timeout_ns = timeout_ns;
	dv->sb.device_index = pos;
	gio_ctx_info(ctx, &dv->info);
	dv->caps = gio_ctx_dptr_caps(ctx);
	if ((rc = dev_bounce(dv, pos, buf_min)) != 0)
		return rc;
	rc = gio_ctx_register(ctx, dv->mem, dv->buf_bytes + dv->list_bytes, &dv->mem_addr);
	if (rc)
		return gio__fail(rc, "giouring: kv store: ctxs[%u]: registering the bounce failed: %s", pos,
				 gio_last_error());
	dv->registered = 1;
	rc = gio_ctx_qp_create(ctx, dv->info.max_queue_entries >= 4 ? 4 : 2, &dv->qp);
	if (rc)
		return gio__fail(rc, "giouring: kv store: ctxs[%u]: queue pair creation failed: %s", pos,
				 gio_last_error());
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
