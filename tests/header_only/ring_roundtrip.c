/* The ring protocol is header-only on the host as on the GPU: this program uses ring/qp.h,
 * ring/uring.h and ring/clock.h, links no giouring library (ctest header_only.ring_roundtrip
 * builds it against giouring::giouring alone), and plays the controller itself: it takes the
 * submitted commands off the SQ and posts their completions, one with an NVMe error. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <giouring/nvme/cqe.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>
#include <giouring/ring/qp.h>
#include <giouring/ring/uring.h>

#define DEPTH 8u

static struct gio_sqe sq[DEPTH];
static struct gio_cqe cq[DEPTH];
static struct gio_cmd_slot slots[DEPTH];
static uint32_t sq_db, cq_db;

static int fail(const char *what)
{
	fprintf(stderr, "ring_roundtrip: %s\n", what);
	return 1;
}

int main(void)
{
	struct gio_qp qp;
	struct gio_iocb *ring_slots[4];
	struct gio_uring u;
	uint32_t first, i, head = 0;
	uint16_t st;
	struct gio_sqe flush;
	const uint64_t t0 = gio_now_ns();

	if (gio_qp_init(&qp, sq, DEPTH, cq, DEPTH, slots, 1, &sq_db, &cq_db, 0))
		return fail("gio_qp_init");
	if (gio_qp_reserve(&qp, 3, &first))
		return fail("gio_qp_reserve");
	for (i = 0; i < 3; i++) {
		struct gio_sqe sqe;
		if (gio_prep_read(&sqe, 1, 8 * i, 8) || gio_qp_put(&qp, first + i, &sqe, i, 0))
			return fail("gio_prep_read / gio_qp_put");
	}
	gio_qp_publish(&qp);

	/* The controller: every entry the tail doorbell covers, completed in order. */
	if (gio_load_acquire(&sq_db) != 3)
		return fail("the SQ tail doorbell does not cover the three commands");
	for (; head != 3; head++) {
		struct gio_cqe *e = &cq[head];
		e->sqhd = (uint16_t)(head + 1);
		e->sqid = 1;
		e->cid = sq[head].cid;
		/* The third fails with LBA Out of Range; phase 1 on the first pass of the CQ. */
		gio_store_release16(&e->status, (uint16_t)((head == 2 ? GIO_SC_LBA_RANGE << 1 : 0) | 1u));
	}
	for (i = 0; i < 3; i++) {
		const int rc = gio_qp_wait(&qp, first + i, gio_deadline_in(1000000000ull), &st, NULL);
		if (rc != (i == 2 ? -EIO : 0))
			return fail("a completion did not give its command's result");
	}
	if (gio_status_sc(st) != GIO_SC_LBA_RANGE)
		return fail("the NVMe status did not reach the submitter intact");
	if (gio_load_acquire(&cq_db) != 3)
		return fail("the CQ head doorbell does not cover the three consumed entries");
	/* A wait with a passed deadline returns -ETIME and the ring's indices. */
	if (gio_qp_reserve(&qp, 1, &first) || gio_prep_flush(&flush, 1) || gio_qp_put(&qp, first, &flush, 0, 0))
		return fail("a fourth command");
	gio_qp_publish(&qp);
	if (gio_qp_wait(&qp, first, gio_now_ns(), &st, NULL) != -ETIME || qp.last_timeout.sq_committed != 4)
		return fail("an expired deadline did not report -ETIME with the ring's indices");
	if (gio_uring_init(&u, ring_slots, 4))
		return fail("gio_uring_init");
	if (gio_now_ns() < t0)
		return fail("CLOCK_MONOTONIC went backwards");
	printf("ring_roundtrip: 4 commands through a header-only ring, statuses intact\n");
	return 0;
}
