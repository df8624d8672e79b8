/* The CPU executor of the software NVMe target: threads that watch the emulated controller's
 * registers and doorbells, run commands through the target core (giouring/target/core.h) and move
 * data between registered host memory and the backing store: memory, or a file through io_uring.
 *
 * Thread 0 also serves the registers and the admin queue, with the I/O servers quiesced (a
 * writer-preferring rwlock: I/O passes hold it shared). Submission queue q is served by thread
 * (cqid - 1) % nthreads of its completion queue, so each CQ has one poster, as the target core
 * requires.
 *
 * Files are accessed through one descriptor: O_DIRECT where the file system allows it (commands
 * whose memory is not aligned for it go through a bounce buffer), else the page cache.
 *
 * Data segments in device memory (tgt->copy_map: GPU memory registered with
 * gio_ctx_register_device) are never dereferenced here: they move through the copy engine
 * (struct gio__devcopy), on one stream per thread. A file command stages them in a pinned bounce
 * buffer; a memory command copies between the backing store and the device directly. All copies
 * of one fetched batch (one doorbell's worth) are enqueued, then waited for once, by a deadline,
 * and only then are the batch's completions posted: a completion never claims data that has not
 * landed. A failed or late copy gives its commands Data Transfer Error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <giouring/ring/clock.h>
#include <giouring/proto/status.h>
#include <giouring/target/model.h>

#include "../internal.h"
#include "exec.h"

#define BATCH 32u /* commands fetched from one queue per pass */

struct worker {
	struct gio__exec *e;
	int id;
	struct io_uring ring;
	int have_ring;
	unsigned char *zeroes; /* Write Zeroes and bit-bucket scratch, ZBUF bytes */
	struct pending *pend;  /* handed back at exit, freed after the ring */
	void *stream;          /* copy stream for device segments (gio__exec_dev_prepare) */
	unsigned char *stage;  /* pinned staging, BATCH slots of stage_slot bytes (file targets) */
	size_t stage_slot;
	struct pending *pend_live; /* this thread's pend array, while it runs */
	void *grave[2 * BATCH + 2]; /* staging dropped after a copy deadline (pbounce_abandon) */
	uint32_t ngrave;
	uint32_t copies;       /* enqueued on it since the last wait */
	int copy_failed;       /* an enqueue failed since the last wait */
	uint32_t abandoned;    /* io_uring requests left in the backing store at close */
	uint32_t exited;       /* set (release) as the thread's last act: gio__exec_stop joins then */
};

/* Whether close's wait for this executor is over (gio__exec_stop): its deadline passed. */
static int stop_due(const struct gio__exec *e)
{
	return gio_load_acquire(&e->stop) && gio_deadline_passed(e->stop_deadline);
}

#define ZBUF (1u << 20)

/* Faults to apply to the I/O command just fetched. */
struct cmd_fault {
	int fail;
	uint16_t status;
	int drop;
	uint32_t delay_us;
	int hang;
};

static struct cmd_fault next_fault(struct gio__exec *e)
{
	struct cmd_fault f = {0, 0, 0, 0, 0};
	pthread_mutex_lock(&e->fault_lock);
	e->io_seen++;
	if (e->fault.fail_nth && e->io_seen == e->fault.fail_nth) {
		f.fail = 1;
		f.status = e->fault.fail_status;
		e->fault.fail_nth = 0;
	}
	if (e->fault.drop_nth && e->io_seen == e->fault.drop_nth) {
		f.drop = 1;
		e->fault.drop_nth = 0;
	}
	if (e->fault.hang_nth && e->io_seen == e->fault.hang_nth) {
		f.hang = 1;
		e->fault.hang_nth = 0;
	}
	f.delay_us = e->fault.delay_us;
	pthread_mutex_unlock(&e->fault_lock);
	return f;
}

/* The "stall the doorbell" fault: doorbells are not looked at until then. */
static int stalled(struct gio__exec *e)
{
	const uint64_t until = __atomic_load_n(&e->stall_until_ns, __ATOMIC_RELAXED);
	return until != 0 && gio_host_now_ns() < until;
}

static void sleep_us(uint32_t us)
{
	struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000};
	nanosleep(&ts, NULL);
}

/* The delay fault's sleep, in slices of at most 10 ms that end early once close has begun. */
static void delay_us(const struct gio__exec *e, uint32_t us)
{
	while (us && !gio_load_acquire(&e->stop)) {
		const uint32_t slice = us < 10000 ? us : 10000;
		sleep_us(slice);
		us -= slice;
	}
}

static void atomic_max(uint64_t *p, uint64_t v)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (old < v && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The timing model: books a fetched batch's bytes (rd read, wr written) on the device's one
 * timeline and returns when the batch's modelled transfer ends, no earlier than the latency after
 * `fetched`; 0 without a model. One timeline for all the executor's threads, so the device gives
 * its bandwidth however many queues are busy, as a drive does; the rate by the rule the GPU
 * executor shares (gio__ssd_model_xfer_ns()). Booked at the fetch, before the data moves: a drive's
 * transfer starts when it takes the command, and the copy here is that transfer. */
static uint64_t model_book(struct gio__exec *e, uint64_t fetched, uint64_t rd, uint64_t wr)
{
	const struct gio__exec_model *m = &e->model;
	uint64_t old, end = fetched, xfer;
	if (!m->on)
		return 0;
	if (rd + wr) {
		xfer = gio__ssd_model_xfer_ns(m->read_gbps, m->write_gbps, m->mixed_gbps, rd, wr,
					      __atomic_load_n(&e->model_reads_ns, __ATOMIC_RELAXED),
					      __atomic_load_n(&e->model_writes_ns, __ATOMIC_RELAXED), fetched);
		old = __atomic_load_n(&e->model_busy_ns, __ATOMIC_RELAXED);
		do
			end = (old > fetched ? old : fetched) + xfer;
		while (!__atomic_compare_exchange_n(&e->model_busy_ns, &old, end, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		if (rd)
			atomic_max(&e->model_reads_ns, end);
		if (wr)
			atomic_max(&e->model_writes_ns, end);
	}
	xfer = fetched + (uint64_t)(m->lat_us * 1000.0);
	return end > xfer ? end : xfer;
}

/* Holds the batch's completions until `until` (model_book()), in slices that end early once
 * close has begun. */
static void model_hold(const struct gio__exec *e, uint64_t until)
{
	for (uint64_t now = gio_host_now_ns(); until && now < until && !gio_load_acquire(&e->stop);
	     now = gio_host_now_ns()) {
		const uint64_t left = until - now;
		struct timespec ts = {0, (long)(left < 10000000u ? left : 10000000u)};
		nanosleep(&ts, NULL);
	}
}

/* A command's bytes as the model books them: what moves between the host and the backing store
 * (Flush and failed commands move nothing). */
static void model_bytes(const struct gio_tgt_io *io, uint16_t st, const struct cmd_fault *f, uint64_t *rd,
			uint64_t *wr)
{
	if (st || f->fail || io->opc == GIO_NVM_OPC_FLUSH)
		return;
	if (io->opc == GIO_NVM_OPC_READ)
		*rd += io->bytes;
	else
		*wr += io->bytes; /* Write, Write Zeroes */
}

static void complete(struct gio__exec *e, uint16_t qid, uint16_t cid, uint16_t st, const struct cmd_fault *f)
{
	if (f->drop) {
		/* The completion is lost: the host's deadline must catch it. Remembered, so that a
		 * Delete I/O SQ aborts it as a controller aborts a hung command. */
		pthread_mutex_lock(&e->fault_lock);
		if (e->ndropped < GIO__EXEC_MAX_DROPPED) {
			e->dropped[e->ndropped].qid = qid;
			e->dropped[e->ndropped].cid = cid;
			e->ndropped++;
		}
		pthread_mutex_unlock(&e->fault_lock);
		return;
	}
	if (f->delay_us)
		delay_us(e, f->delay_us);
	gio_tgt_post(e->tgt, qid, cid, f->fail ? f->status : st, 0);
}

/* Before a Delete I/O SQ of qid runs (I/O serving quiesced): every command of the queue still
 * outstanding ends with Command Aborted due to SQ Deletion, those fetched and withheld (the drop
 * fault) first, then those the tail doorbell shows and nobody fetched. */
static void abort_sq(struct gio__exec *e, uint16_t qid)
{
	const uint16_t st = GIO_SF(GIO_SCT_GENERIC, GIO_SC_ABORT_SQ_DELETED);
	uint32_t i, k = 0;
	if (qid == 0 || qid > GIO_TGT_MAX_IO_QUEUES || !gio_load_relaxed(&e->tgt->sq[qid].live))
		return; /* gio_tgt_admin() refuses the command */
	pthread_mutex_lock(&e->fault_lock);
	for (i = 0; i < e->ndropped; i++) {
		if (e->dropped[i].qid == qid)
			gio_tgt_post(e->tgt, qid, e->dropped[i].cid, st, 0);
		else
			e->dropped[k++] = e->dropped[i];
	}
	e->ndropped = k;
	pthread_mutex_unlock(&e->fault_lock);
	(void)gio_tgt_abort_unfetched(e->tgt, qid);
}

static int serve_admin(struct gio__exec *e)
{
	struct gio_sqe sqe;
	int n = 0;
	while (gio_tgt_fetch(e->tgt, 0, &sqe) == 1) {
		uint32_t dw0;
		uint16_t st;
		if (sqe.opc == GIO_ADMIN_OPC_DELETE_SQ)
			abort_sq(e, (uint16_t)GIO_GET(sqe.cdw10, QUEUE_CDW10_QID));
		st = gio_tgt_admin(e->tgt, &sqe, &dw0);
		gio_tgt_post(e->tgt, 0, sqe.cid, st, dw0);
		n++;
	}
	return n;
}

/* ---- device segments: the copy engine -------------------------------------------------------- */

/* Enqueues one copy on the thread's stream (made on first use); 0 or -errno. */
static int dev_copy(struct worker *w, void *dst, const void *src, size_t len, int to_dev)
{
	const struct gio__devcopy *dc = w->e->dc;
	int rc;
	if (!dc)
		return -ENODEV; /* a device region without a copy engine: cannot happen (ctx.c sets it first) */
	/* The stream was made at registration; only after a copy deadline dropped it is a new one
	 * made here. */
	if (!w->stream && (rc = dc->stream_create(dc->priv, &w->stream)) < 0) {
		w->stream = NULL;
		return rc;
	}
	rc = dc->copy(dc->priv, w->stream, dst, src, len, to_dev);
	if (rc == 0)
		w->copies++;
	else
		w->copy_failed = 1;
	return rc;
}

/* Waits, by the copy engine's deadline, for every copy enqueued since the last wait. Returns 0,
 * -EIO (a copy failed) or -ETIME. After -ETIME copies may still be running: the stream is
 * dropped, and the caller must never reuse the memory they touch (*abandon set). */
static int dev_wait(struct worker *w, int *abandon)
{
	const struct gio__devcopy *dc = w->e->dc;
	uint64_t deadline;
	uint32_t spins = 0;
	int rc;
	*abandon = 0;
	if (!w->copies) {
		rc = w->copy_failed ? -EIO : 0;
		w->copy_failed = 0;
		return rc;
	}
	deadline = gio_deadline_in(dc->timeout_ns);
	while ((rc = dc->query(dc->priv, w->stream)) == -EAGAIN) {
		if (gio_deadline_passed(deadline) || stop_due(w->e)) {
			fprintf(stderr,
				"giouring: executor thread %d: %u copies to or from the GPU did not complete within %" PRIu64
				" ms; their commands fail with Data Transfer Error (a kernel that waits for this data on a stream that"
				" shares a hardware queue with the copy stream holds it back: set CUDA_DEVICE_MAX_CONNECTIONS=32"
				" before the first CUDA call)\n",
				w->id, w->copies, dc->timeout_ns / 1000000);
			dc->stream_destroy(dc->priv, w->stream);
			w->stream = NULL;
			*abandon = 1;
			rc = -ETIME;
			break;
		}
		gio_backoff(&spins);
	}
	if (rc == 0 && w->copy_failed)
		rc = -EIO;
	w->copies = 0;
	w->copy_failed = 0;
	return rc;
}

static uint16_t xfer_error(void)
{
	return GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR);
}

/* Whether a prepared command has a segment in device memory. */
static int has_device_seg(const struct gio__exec *e, const struct gio_tgt_io *io)
{
	uint32_t i;
	int dev;
	for (i = 0; i < io->xfer.n; i++)
		if (!(io->xfer.segs[i].flags & GIO_XFER_BIT_BUCKET) && gio_tgt_seg_ptr(e->tgt, &io->xfer.segs[i], &dev) && dev)
			return 1;
	return 0;
}

/* Memory backing store, a segment at a time: host segments with memcpy, device segments
 * enqueued on the copy stream (directly from or into the backing store). 0 or a status. */
static uint16_t mem_copy_dev(struct worker *w, const struct gio_tgt_io *io)
{
	unsigned char *backing = w->e->mem;
	uint64_t off = io->offset;
	uint32_t i;
	for (i = 0; i < io->xfer.n; off += io->xfer.segs[i].len, i++) {
		const struct gio_xfer_seg *s = &io->xfer.segs[i];
		int dev;
		void *p;
		if (s->flags & GIO_XFER_BIT_BUCKET)
			continue;
		p = gio_tgt_seg_ptr(w->e->tgt, s, &dev);
		if (!dev) {
			if (io->is_write)
				memcpy(backing + off, p, s->len);
			else
				memcpy(p, backing + off, s->len);
		} else if (io->is_write ? dev_copy(w, backing + off, p, (size_t)s->len, 0)
					: dev_copy(w, p, backing + off, (size_t)s->len, 1)) {
			return xfer_error();
		}
	}
	return 0;
}

/* Memory backing store: the batch's data moves in place (device copies enqueued), then the
 * copies are waited for once, then every completion is posted. */
static int serve_mem(struct worker *w, uint16_t qid)
{
	struct gio__exec *e = w->e;
	struct gio_xfer_seg segs[GIO_TGT_MAX_SEGS];
	struct {
		uint16_t cid, st;
		int dev;
		struct cmd_fault f;
	} done[BATCH];
	struct gio_sqe sqe;
	const uint64_t fetched = e->model.on ? gio_host_now_ns() : 0;
	uint64_t rd = 0, wr = 0;
	uint32_t n = 0, ndev = 0, i;
	while (n < BATCH && gio_tgt_fetch(e->tgt, qid, &sqe) == 1) {
		struct gio_tgt_io io;
		io.xfer.segs = segs;
		io.xfer.cap = GIO_TGT_MAX_SEGS;
		done[n].cid = sqe.cid;
		done[n].f = next_fault(e);
		done[n].dev = 0;
		done[n].st = gio_tgt_io_prepare(e->tgt, &sqe, &io);
		model_bytes(&io, done[n].st, &done[n].f, &rd, &wr);
		if (done[n].st == 0 && !done[n].f.fail) {
			if (e->dc && has_device_seg(e, &io)) {
				done[n].dev = 1;
				ndev++;
				done[n].st = mem_copy_dev(w, &io);
			} else {
				done[n].st = gio_tgt_io_copy_mem(e->tgt, &io, e->mem);
			}
		}
		n++;
	}
	if (ndev) {
		int abandon;
		/* The backing store is the other end of any late copy: nothing to quarantine here
		 * beyond the host's own buffers, which the error tells it not to trust. */
		if (dev_wait(w, &abandon))
			for (i = 0; i < n; i++)
				if (done[i].dev)
					done[i].st = xfer_error();
	}
	if (n)
		model_hold(e, model_book(e, fetched, rd, wr));
	for (i = 0; i < n; i++)
		complete(e, qid, done[i].cid, done[i].st, &done[i].f);
	return (int)n;
}

/* File backing store: a batch of commands becomes one io_uring submission. */
struct pending {
	struct gio_sqe sqe;
	struct gio_tgt_io io;
	struct gio_xfer_seg segs[GIO_TGT_MAX_SEGS];
	struct iovec iov[GIO_TGT_MAX_SEGS];
	struct iovec bounce_iov; /* the whole transfer, when the segments are not O_DIRECT-aligned */
	unsigned char *bounce;   /* kept between commands, grown on demand */
	size_t bounce_cap;
	int bounced;
	unsigned char *pbounce;  /* pinned staging for device segments: a slot of worker.stage, or owned */
	size_t pbounce_cap;
	int pbounce_owned;
	int dev;                 /* the command has device segments: it goes through pbounce */
	int deferred;            /* a device write: its file write waits for the gather copies */
	struct cmd_fault f;
	uint16_t st;
	int submitted;
	int64_t res;
};

static uint16_t media_error(const struct gio_tgt_io *io)
{
	return (uint16_t)(GIO_SF(GIO_SCT_MEDIA, io->is_write ? GIO_SC_WRITE_FAULT : GIO_SC_UNRECOVERED_READ) |
			  GIO_SF_DNR);
}

/* Write Zeroes on a file: synchronous, in ZBUF pieces (aligned: whole blocks from aligned
 * scratch memory, so the O_DIRECT descriptor takes them). */
static uint16_t write_zeroes(struct worker *w, const struct gio_tgt_io *io)
{
	uint64_t off = io->offset, left = io->bytes;
	while (left) {
		size_t n = left < ZBUF ? (size_t)left : ZBUF;
		ssize_t r = pwrite(w->e->fd, w->zeroes, n, (off_t)off);
		if (r <= 0)
			return media_error(io);
		off += (uint64_t)r;
		left -= (uint64_t)r;
	}
	return 0;
}

/* Whether O_DIRECT takes the segments as they are (every address and length aligned). */
static int direct_ok(const struct gio__exec *e, const struct pending *p)
{
	uint32_t i;
	const uint64_t m = e->mem_align - 1;
	for (i = 0; i < p->io.xfer.n; i++)
		if (((uintptr_t)p->iov[i].iov_base & m) || (p->iov[i].iov_len & m))
			return 0;
	return 1;
}

/* Gathers (write) or prepares (read) the bounce buffer of a command; 0 or a status. */
static uint16_t bounce_setup(struct pending *p)
{
	uint32_t i;
	size_t done = 0;
	if (p->bounce_cap < p->io.bytes) {
		const size_t cap = (size_t)((p->io.bytes + 4095u) & ~(uint64_t)4095u);
		unsigned char *b = aligned_alloc(4096, cap);
		if (!b)
			return GIO_SF(GIO_SCT_GENERIC, GIO_SC_INTERNAL);
		free(p->bounce);
		p->bounce = b;
		p->bounce_cap = cap;
	}
	if (p->io.is_write)
		for (i = 0; i < p->io.xfer.n; done += p->iov[i].iov_len, i++)
			memcpy(p->bounce + done, p->iov[i].iov_base, p->iov[i].iov_len);
	p->bounce_iov.iov_base = p->bounce;
	p->bounce_iov.iov_len = (size_t)p->io.bytes;
	p->bounced = 1;
	return 0;
}

/* Scatters a bounced read into the command's segments (bit buckets land in scratch). */
static void bounce_scatter(struct pending *p)
{
	uint32_t i;
	size_t done = 0;
	for (i = 0; i < p->io.xfer.n; done += p->iov[i].iov_len, i++)
		memcpy(p->iov[i].iov_base, p->bounce + done, p->iov[i].iov_len);
}

/* Sets up the pinned bounce of a command with device segments: grown on demand; for a write,
 * host segments are gathered now and device segments enqueued on the copy stream (the file
 * write waits for them: see file_fetch). 0 or a status. */
static uint16_t pbounce_setup(struct worker *w, struct pending *p)
{
	const struct gio__devcopy *dc = w->e->dc;
	uint32_t i;
	size_t done = 0;
	if (!p->pbounce && w->stage) { /* this pend entry's slot of the staging made at registration */
		p->pbounce = w->stage + (size_t)(p - w->pend_live) * w->stage_slot;
		p->pbounce_cap = w->stage_slot;
		p->pbounce_owned = 0;
	}
	if (p->pbounce_cap < p->io.bytes) {
		/* Above the staging slot (MDTS of 0 or above 1 MiB): allocated here. The CUDA copy
		 * engine takes and gives back pinned memory through the process's cache
		 * (src/cuda/pinned.h): cudaFreeHost of the old bounce would wait while GPU producers
		 * spin, the allocation does not (measured on the H200); still, keep MDTS: a cache miss
		 * costs a page-locked allocation under a batch's deadline. */
		const size_t cap = (size_t)((p->io.bytes + 4095u) & ~(uint64_t)4095u);
		unsigned char *b = dc->host_alloc(dc->priv, cap);
		if (!b)
			return GIO_SF(GIO_SCT_GENERIC, GIO_SC_INTERNAL);
		if (p->pbounce && p->pbounce_owned)
			dc->host_free(dc->priv, p->pbounce);
		p->pbounce = b;
		p->pbounce_cap = cap;
		p->pbounce_owned = 1;
	}
	p->bounce_iov.iov_base = p->pbounce;
	p->bounce_iov.iov_len = (size_t)p->io.bytes;
	if (!p->io.is_write)
		return 0;
	for (i = 0; i < p->io.xfer.n; done += p->iov[i].iov_len, i++) {
		int dev = 0;
		if (!(p->segs[i].flags & GIO_XFER_BIT_BUCKET))
			(void)gio_tgt_seg_ptr(w->e->tgt, &p->segs[i], &dev);
		if (!dev)
			memcpy(p->pbounce + done, p->iov[i].iov_base, p->iov[i].iov_len);
		else if (dev_copy(w, p->pbounce + done, p->iov[i].iov_base, p->iov[i].iov_len, 0))
			return xfer_error();
	}
	return 0;
}

/* Scatters a read staged in the pinned bounce: host segments now, device segments enqueued
 * (the caller waits for them before posting). 0 or a status. */
static uint16_t pbounce_scatter(struct worker *w, struct pending *p)
{
	uint32_t i;
	size_t done = 0;
	for (i = 0; i < p->io.xfer.n; done += p->iov[i].iov_len, i++) {
		int dev = 0;
		if (!(p->segs[i].flags & GIO_XFER_BIT_BUCKET))
			(void)gio_tgt_seg_ptr(w->e->tgt, &p->segs[i], &dev);
		if (!dev)
			memcpy(p->iov[i].iov_base, p->pbounce + done, p->iov[i].iov_len);
		else if (dev_copy(w, p->iov[i].iov_base, p->pbounce + done, p->iov[i].iov_len, 1))
			return xfer_error();
	}
	return 0;
}

/* Drops the pinned staging after a copy deadline passed: copies may still write it (reads) or
 * read it, so it is never reused nor freed (a bounded leak, reported with the timeout); later
 * commands allocate their own. */
static void pbounce_abandon(struct worker *w, struct pending *pend)
{
	uint32_t i;
	for (i = 0; i < BATCH; i++)
		if (pend[i].dev || !pend[i].pbounce_owned) {
			if (pend[i].pbounce && pend[i].pbounce_owned && w->ngrave < sizeof(w->grave) / sizeof(w->grave[0]))
				w->grave[w->ngrave++] = pend[i].pbounce;
			pend[i].pbounce = NULL;
			pend[i].pbounce_cap = 0;
			pend[i].pbounce_owned = 0;
		}
	if (w->stage && w->ngrave < sizeof(w->grave) / sizeof(w->grave[0]))
		w->grave[w->ngrave++] = w->stage;
	w->stage = NULL;
}

/* Queues the io_uring request of a command whose iovecs (or bounce) are set. */
static void queue_rw(struct worker *w, struct pending *p, uint32_t k, const struct iovec *iov, uint32_t niov,
		     uint32_t *inflight)
{
	struct io_uring_sqe *u = io_uring_get_sqe(&w->ring);
	if (!u) { /* cannot happen: the ring holds BATCH entries and each pass drains it */
		p->st = GIO_SF(GIO_SCT_GENERIC, GIO_SC_INTERNAL);
		return;
	}
	if (p->io.is_write)
		io_uring_prep_writev(u, w->e->fd, iov, niov, p->io.offset);
	else
		io_uring_prep_readv(u, w->e->fd, iov, niov, p->io.offset);
	io_uring_sqe_set_data64(u, k);
	p->submitted = 1;
	(*inflight)++;
}

/* Fetches up to BATCH commands of `qid`, checks them and queues their file I/O; returns how many
 * were fetched and sets *inflight to the io_uring requests queued. */
static uint32_t file_fetch(struct worker *w, uint16_t qid, struct pending *pend, uint32_t *inflight)
{
	struct gio__exec *e = w->e;
	uint32_t n = 0, i;
	while (n < BATCH && gio_tgt_fetch(e->tgt, qid, &pend[n].sqe) == 1) {
		struct pending *p = &pend[n++];
		const struct iovec *iov;
		uint32_t niov;
		p->io.xfer.segs = p->segs;
		p->io.xfer.cap = GIO_TGT_MAX_SEGS;
		p->f = next_fault(e);
		p->submitted = 0;
		p->bounced = 0;
		p->dev = 0;
		p->deferred = 0;
		p->st = gio_tgt_io_prepare(e->tgt, &p->sqe, &p->io);
		if (p->st || p->f.fail)
			continue;
		if (p->io.opc == GIO_NVM_OPC_WRITE_ZEROES) {
			/* The hang fault: a synchronous write into a file system that never answers. */
			if (p->f.hang) {
				char byte;
				while (read(e->hang_pipe[0], &byte, 1) < 0 && errno == EINTR)
					;
			}
			p->st = write_zeroes(w, &p->io);
			continue;
		}
		if (p->f.hang) {
			/* The hang fault: a request the backing store never completes (a read of a pipe
			 * nobody writes). Should it end after all, it transferred nothing: a media error. */
			struct io_uring_sqe *u = io_uring_get_sqe(&w->ring);
			if (!u) {
				p->st = GIO_SF(GIO_SCT_GENERIC, GIO_SC_INTERNAL);
				continue;
			}
			io_uring_prep_read(u, e->hang_pipe[0], w->zeroes, 1, 0);
			io_uring_sqe_set_data64(u, n - 1);
			p->submitted = 1;
			(*inflight)++;
			continue;
		}
		if (p->io.opc != GIO_NVM_OPC_FLUSH) {
			for (i = 0; i < p->io.xfer.n; i++) {
				const struct gio_xfer_seg *s = &p->segs[i];
				int dev = 0;
				/* Bit buckets read into scratch memory: the data is discarded. */
				p->iov[i].iov_base = (s->flags & GIO_XFER_BIT_BUCKET) ? w->zeroes : gio_tgt_seg_ptr(e->tgt, s, &dev);
				p->iov[i].iov_len = (size_t)s->len;
				p->dev |= dev;
			}
		}
		if (p->dev) {
			/* Device memory is staged in pinned memory. A write's file request waits for its
			 * gather copies (below); a read's is queued now and scattered after it. */
			p->st = pbounce_setup(w, p);
			if (p->st)
				continue;
			if (p->io.is_write)
				p->deferred = 1;
			else
				queue_rw(w, p, n - 1, &p->bounce_iov, 1, inflight);
			continue;
		}
		struct io_uring_sqe *u = io_uring_get_sqe(&w->ring);
		if (!u) { /* cannot happen: the ring holds BATCH entries and each pass drains it */
			p->st = GIO_SF(GIO_SCT_GENERIC, GIO_SC_INTERNAL);
			continue;
		}
		if (p->io.opc == GIO_NVM_OPC_FLUSH) {
			io_uring_prep_fsync(u, e->fd, IORING_FSYNC_DATASYNC);
		} else {
			iov = p->iov;
			niov = p->io.xfer.n;
			if (e->direct && !direct_ok(e, p)) {
				p->st = bounce_setup(p);
				if (p->st) {
					io_uring_prep_nop(u); /* the SQE is taken: give it a harmless request */
					io_uring_sqe_set_data64(u, UINT64_MAX);
					(*inflight)++;
					continue;
				}
				iov = &p->bounce_iov;
				niov = 1;
			}
			if (p->io.is_write)
				io_uring_prep_writev(u, e->fd, iov, niov, p->io.offset);
			else
				io_uring_prep_readv(u, e->fd, iov, niov, p->io.offset);
		}
		io_uring_sqe_set_data64(u, n - 1);
		p->submitted = 1;
		(*inflight)++;
	}
	/* Device writes: their data is gathered into pinned memory by copies enqueued above; wait
	 * for all of them once, then queue the file writes. */
	for (i = 0; i < n && !pend[i].deferred; i++)
		;
	if (i < n) {
		int abandon;
		const int rc = dev_wait(w, &abandon);
		for (i = 0; i < n; i++) {
			struct pending *p = &pend[i];
			if (!p->deferred)
				continue;
			if (rc)
				p->st = xfer_error();
			else
				queue_rw(w, p, i, &p->bounce_iov, 1, inflight);
		}
		if (abandon)
			pbounce_abandon(w, pend);
	}
	return n;
}

static int transient(int rc)
{
	return rc == -EINTR || rc == -EAGAIN || rc == -EBUSY;
}

/* Submits everything queued and reaps every completion. Returns 0, or a negative errno when
 * io_uring failed for good (or -ECANCELED: close's deadline passed with requests still in the
 * backing store, w->abandoned of them): the requests still out may yet write into pend and into
 * the hosts' buffers, so the worker must stop using both (see worker_main). Waits are slices of
 * 100 ms, so that close's deadline is seen even when the store never answers. */
static int file_run(struct worker *w, struct pending *pend, uint32_t inflight)
{
	uint32_t queued = inflight;
	uint32_t spins = 0;
	while (inflight) {
		struct io_uring_cqe *c;
		int rc;
		if (stop_due(w->e)) {
			w->abandoned = inflight;
			return -ECANCELED;
		}
		if (queued) {
			rc = io_uring_submit(&w->ring);
			if (rc > 0) {
				queued -= (uint32_t)rc < queued ? (uint32_t)rc : queued;
			} else if (rc < 0 && !transient(rc)) {
				return rc;
			}
		}
		if (queued) {
			rc = io_uring_peek_cqe(&w->ring, &c);
		} else {
			struct __kernel_timespec slice = {0, 100000000};
			rc = io_uring_wait_cqe_timeout(&w->ring, &c, &slice);
			if (rc == -ETIME)
				continue;
		}
		if (rc == -EAGAIN && queued) {
			gio_backoff(&spins);
			continue;
		}
		if (rc < 0) {
			if (transient(rc))
				continue;
			return rc;
		}
		if (io_uring_cqe_get_data64(c) != UINT64_MAX)
			pend[io_uring_cqe_get_data64(c)].res = c->res;
		io_uring_cqe_seen(&w->ring, c);
		inflight--;
	}
	return 0;
}

static int serve_file(struct worker *w, uint16_t qid, struct pending *pend)
{
	const uint64_t fetched = w->e->model.on ? gio_host_now_ns() : 0;
	uint64_t rd = 0, wr = 0, until;
	uint32_t inflight = 0, i;
	const uint32_t n = file_fetch(w, qid, pend, &inflight);
	int rc;
	for (i = 0; w->e->model.on && i < n; i++)
		model_bytes(&pend[i].io, pend[i].st, &pend[i].f, &rd, &wr);
	until = n ? model_book(w->e, fetched, rd, wr) : 0; /* at the fetch, before the data moves */
	rc = inflight ? file_run(w, pend, inflight) : 0;
	if (rc < 0) {
		/* Nothing is posted for this batch: the hosts' deadlines report it (-ETIME), and no
		 * completion claims data that may still be moving. Abandoned at close: close says so. */
		if (rc != -ECANCELED)
			fprintf(stderr, "giouring: executor thread %d: io_uring failed (%s); it stops serving\n", w->id,
				strerror(-rc));
		return rc;
	}
	for (i = 0; i < n; i++) {
		struct pending *p = &pend[i];
		if (!p->submitted)
			continue;
		if (p->io.opc == GIO_NVM_OPC_FLUSH ? p->res < 0 : p->res != (int64_t)p->io.bytes)
			p->st = media_error(&p->io); /* short transfers on a sized file are media errors */
		else if (p->bounced && !p->io.is_write)
			bounce_scatter(p);
		else if (p->dev && !p->io.is_write)
			p->st = pbounce_scatter(w, p);
	}
	/* One wait for every copy of the batch (the scatters above, and the gathers of writes whose
	 * setup failed half way), then the completions: none before its data has landed. */
	if (w->copies || w->copy_failed) {
		int abandon;
		if (dev_wait(w, &abandon)) {
			for (i = 0; i < n; i++)
				if (pend[i].dev && !pend[i].io.is_write)
					pend[i].st = xfer_error();
		}
		if (abandon)
			pbounce_abandon(w, pend);
	}
	model_hold(w->e, until);
	for (i = 0; i < n; i++)
		complete(w->e, qid, pend[i].sqe.cid, pend[i].st, &pend[i].f);
	return (int)n;
}

/* Whether this thread serves submission queue q: the one thread of its completion queue, since
 * posting to a CQ is not atomic (gio_tgt_post()). */
static int mine(const struct worker *w, uint32_t q)
{
	const struct gio_tgt_queue *sq = &w->e->tgt->sq[q];
	return gio_load_acquire(&sq->live) && (sq->cqid - 1u) % (uint32_t)w->e->nthreads == (uint32_t)w->id;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct gio__exec *e = w->e;
	struct pending *pend = NULL;
	uint32_t idle = 0;
	int broken = 0;
	{
		/* Named, so that benches and tools can tell the executor's CPU time apart. */
		char name[16];
		snprintf(name, sizeof(name), "gio-exec-%d", w->id);
		pthread_setname_np(pthread_self(), name);
	}
	if (e->kind == GIO__BACKING_FILE) {
		pend = calloc(BATCH, sizeof(*pend));
		if (!pend) {
			gio_store_release(&w->exited, 1);
			return NULL;
		}
		w->pend_live = pend;
	}
	while (!gio_load_acquire(&e->stop)) {
		int did = 0;
		uint32_t q;
		/* Register and admin work changes queue fields the I/O servers read: it runs with
		 * every I/O server out (the lock prefers writers, so a busy target still resets). */
		if (w->id == 0 && (gio_tgt_cc_changed(e->tgt) || gio_tgt_admin_pending(e->tgt))) {
			int changed;
			pthread_rwlock_wrlock(&e->quiesce);
			changed = gio_tgt_poll_regs(e->tgt);
			if (changed) { /* a reset or shutdown dropped every queue, withheld commands too */
				pthread_mutex_lock(&e->fault_lock);
				e->ndropped = 0;
				pthread_mutex_unlock(&e->fault_lock);
			}
			did += changed;
			did += serve_admin(e);
			pthread_rwlock_unlock(&e->quiesce);
		}
		if (!broken) {
			/* Only the queue ids the target grants (queues=, default 16), not every one of the
			 * GIO_TGT_MAX_IO_QUEUES (1024) slots, each pass. The stall is looked at under the
			 * lock: gio_ctx_inject quiesces after setting it, so no pass begun before it fetches
			 * afterwards. */
			const uint32_t max_q = e->tgt->cfg.max_io_queues;
			pthread_rwlock_rdlock(&e->quiesce);
			for (q = 1; q <= max_q && !broken && !stalled(e); q++) {
				int r;
				if (!mine(w, q))
					continue;
				r = e->kind == GIO__BACKING_MEM ? serve_mem(w, (uint16_t)q) : serve_file(w, (uint16_t)q, pend);
				if (r < 0)
					broken = 1;
				else
					did += r;
			}
			pthread_rwlock_unlock(&e->quiesce);
		}
		/* Back off when idle: CI machines have two cores and producers need them. Past the
		 * yields, sleeps of 20 us, doubling every 64 idle passes up to idle_us: a longer
		 * ceiling costs less CPU while nothing comes, and up to idle_us of latency for the
		 * first command after a quiet spell. */
		if (did) {
			idle = 0;
		} else if (++idle < 64) {
			gio_cpu_relax();
		} else if (idle < 256) {
			sched_yield();
		} else {
			uint32_t us = 20, k = (idle - 256) / 64;
			while (k-- && us < e->idle_us)
				us *= 2;
			sleep_us(us < e->idle_us ? us : e->idle_us);
			if (idle > (1u << 30)) /* stay in range over months of idleness */
				idle = 1u << 29;
		}
	}
	/* A broken worker's pend may still be the target of io_uring requests: io_uring_queue_exit
	 * (in gio__exec_stop) cancels what it can, and pend is freed after it; or kept for good when
	 * requests were abandoned in a backing store that did not answer. */
	w->pend = pend;
	gio_store_release(&w->exited, 1);
	return NULL;
}

/* Makes each thread's copy stream and, for a file target, its pinned staging, in the caller's
 * thread, before the first device region is published. Not in the executor threads on first
 * use: a page-locked allocation waits for work running on the GPU (CUDA's implicit
 * synchronization), and GPU producers spin until their commands complete, so an allocation
 * under their first command would deadlock (seen on the H200). 0 or -errno (gio__fail). */
int gio__exec_dev_prepare(struct gio__exec *e)
{
	struct worker *ws = e->workers_mem;
	const struct gio__devcopy *dc = e->dc;
	const uint64_t mx = e->tgt->caps.max_xfer_bytes;
	const size_t slot = (size_t)(mx && mx <= (1u << 20) ? mx : (1u << 20));
	int i, rc;
	if (e->dev_prepared)
		return 0;
	for (i = 0; ws && i < e->nthreads; i++) {
		if (!ws[i].stream && (rc = dc->stream_create(dc->priv, &ws[i].stream)) < 0) {
			ws[i].stream = NULL;
			return gio__fail(rc, "giouring: cannot make a %s copy stream for executor thread %d", dc->name, i);
		}
		if (e->kind == GIO__BACKING_FILE && !ws[i].stage) {
			ws[i].stage = dc->host_alloc(dc->priv, BATCH * slot);
			if (!ws[i].stage)
				return gio__fail(-ENOMEM, "giouring: no %zu bytes of pinned staging for executor thread %d",
						 BATCH * slot, i);
			ws[i].stage_slot = slot;
		}
	}
	e->dev_prepared = 1;
	return 0;
}

int gio__exec_start(struct gio__exec *e, int nthreads)
{
	int i, rc;
	struct worker *ws;
	if (nthreads < 1 || nthreads > GIO__EXEC_MAX_THREADS)
		return gio__fail(-EINVAL, "giouring: threads=%d: the CPU executor runs 1 to %d threads", nthreads,
				 GIO__EXEC_MAX_THREADS);
	ws = calloc((size_t)nthreads, sizeof(*ws));
	if (!ws)
		return gio__fail(-ENOMEM, "giouring: no memory for %d executor threads", nthreads);
	e->nthreads = nthreads;
	e->stop = 0;
	pthread_mutex_init(&e->fault_lock, NULL);
	{
		pthread_rwlockattr_t a;
		pthread_rwlockattr_init(&a);
		pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&e->quiesce, &a);
		pthread_rwlockattr_destroy(&a);
	}
	for (i = 0; i < nthreads; i++) {
		ws[i].e = e;
		ws[i].id = i;
		ws[i].zeroes = aligned_alloc(4096, ZBUF);
		if (!ws[i].zeroes)
			return gio__fail(-ENOMEM, "giouring: no memory for executor scratch");
		memset(ws[i].zeroes, 0, ZBUF);
		if (e->kind == GIO__BACKING_FILE) {
			rc = io_uring_queue_init(BATCH, &ws[i].ring, 0);
			if (rc < 0)
				return gio__fail(rc, "giouring: io_uring_queue_init: %s", strerror(-rc));
			ws[i].have_ring = 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		rc = pthread_create(&e->threads[i], NULL, worker_main, &ws[i]);
		if (rc) {
			gio_store_release(&e->stop, 1);
			while (--i >= 0)
				pthread_join(e->threads[i], NULL);
			return gio__fail(-rc, "giouring: pthread_create: %s", strerror(rc));
		}
	}
	e->workers_mem = ws;
	return 0;
}

int gio__exec_quiesce(struct gio__exec *e, uint64_t timeout_ns)
{
	const uint64_t now = gio_host_now_ns();
	const uint64_t t = timeout_ns > UINT64_MAX / 2 - now ? UINT64_MAX / 2 : now + timeout_ns; /* no wrap */
	const struct timespec until = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
	const int rc = pthread_rwlock_clockwrlock(&e->quiesce, CLOCK_MONOTONIC, &until);
	if (rc == ETIMEDOUT)
		return gio__fail(-ETIME, "giouring: the executor's threads did not finish their passes within %" PRIu64
				 " ms (a command still in the backing store or a copy engine)", timeout_ns / 1000000);
	if (rc)
		return gio__fail(-rc, "giouring: quiescing the executor: %s", strerror(rc));
	return 0;
}

void gio__exec_resume(struct gio__exec *e)
{
	pthread_rwlock_unlock(&e->quiesce);
}

int gio__exec_stop(struct gio__exec *e, uint64_t timeout_ns, int *stuck)
{
	struct worker *ws = e->workers_mem;
	uint64_t join_deadline;
	uint32_t abandoned = 0;
	int i, nstuck = 0;
	*stuck = 0;
	e->stop_deadline = gio_deadline_in(timeout_ns);
	gio_store_release(&e->stop, 1);
	/* Every wait of a thread is a slice of at most 100 ms that looks at the stop deadline; a
	 * second on top covers the slices. A thread that has not ended by then is inside a call that
	 * does not return (a synchronous write into a file system that does not answer). */
	join_deadline = e->stop_deadline + 1000000000ull;
	for (i = 0; i < e->nthreads; i++) {
		uint32_t spins = 0;
		while (!gio_load_acquire(&ws[i].exited) && !gio_deadline_passed(join_deadline))
			gio_backoff(&spins);
		if (!gio_load_acquire(&ws[i].exited))
			nstuck++;
	}
	if (nstuck) {
		/* Nothing the threads may touch is freed: they may come back at any time. */
		for (i = 0; i < e->nthreads; i++)
			if (!gio_load_acquire(&ws[i].exited))
				pthread_detach(e->threads[i]);
			else
				pthread_join(e->threads[i], NULL);
		*stuck = nstuck;
		return gio__fail(-ETIME,
				 "giouring: %d executor thread(s) did not stop within %" PRIu64 " ms: inside the backing "
				 "store, which does not answer; the context's memory (queues, registers, executor state, "
				 "backing store) is left allocated, since they may yet touch it",
				 nstuck, (join_deadline - e->stop_deadline + timeout_ns) / 1000000);
	}
	for (i = 0; i < e->nthreads; i++)
		pthread_join(e->threads[i], NULL);
	for (i = 0; ws && i < e->nthreads; i++) {
		uint32_t j;
		if (ws[i].have_ring)
			io_uring_queue_exit(&ws[i].ring);
		/* Every batch waited for its copies before it was posted: the stream is idle. */
		if (ws[i].stream)
			e->dc->stream_destroy(e->dc->priv, ws[i].stream);
		if (ws[i].stage)
			e->dc->host_free(e->dc->priv, ws[i].stage);
		/* Staging dropped after a copy deadline: only a copy engine whose dropped streams can no
		 * longer touch it says so; the CUDA one leaves it (a late copy may still land). */
		for (j = 0; e->dc && e->dc->abandoned_freeable && j < ws[i].ngrave; j++)
			e->dc->host_free(e->dc->priv, ws[i].grave[j]);
		free(ws[i].zeroes);
		if (ws[i].pend && ws[i].abandoned) {
			/* Requests left in a store that did not answer may still write their bounce
			 * buffers (and the hosts' memory) when it does: kept, not freed. */
			abandoned += ws[i].abandoned;
			for (j = 0; j < BATCH; j++) {
				gio__keep(ws[i].pend[j].bounce);
				if (ws[i].pend[j].pbounce_owned)
					gio__keep(ws[i].pend[j].pbounce);
			}
			gio__keep(ws[i].pend);
		} else if (ws[i].pend) {
			for (j = 0; j < BATCH; j++) {
				free(ws[i].pend[j].bounce);
				if (ws[i].pend[j].pbounce && ws[i].pend[j].pbounce_owned)
					e->dc->host_free(e->dc->priv, ws[i].pend[j].pbounce);
			}
			free(ws[i].pend);
		}
	}
	free(ws);
	e->workers_mem = NULL;
	pthread_mutex_destroy(&e->fault_lock);
	pthread_rwlock_destroy(&e->quiesce);
	if (abandoned)
		return gio__fail(-ETIME,
				 "giouring: %u request(s) were still in the backing store %" PRIu64 " ms after close stopped the "
				 "executor and were abandoned: the memory they name, and their bounce buffers, may yet be "
				 "written when it answers (the bounce buffers are left allocated)",
				 abandoned, timeout_ns / 1000000);
	return 0;
}
