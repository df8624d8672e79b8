// The ring invariants of docs/design.md ("Ring invariants"), each checked by an adversarial controller written
// for this test (not the software target): it reads the doorbells the way hardware would, checks
// every entry a doorbell covers, and completes commands out of order after random delays.
//
//   1. every SQE covered by a doorbell value is completely written;
//   2. SQ tail doorbell values only move forward and cover only written entries;
//   3. at most depth - 1 entries lie between the controller's head and the tail;
//   4. a CID is never reused on an SQ while its command is outstanding;
//   5. the CQ head doorbell moves only over entries the host consumed;
//   7. every command yields exactly one result: its completion, or -ETIME at its deadline;
//      a late completion is dropped without touching another command's result;
//   8. an expired deadline reports the ring's indices.
#include <catch2/catch.hpp>

#include <giouring/ring/qp.h>

#include "qp_controller.h"

using namespace qpt;

TEST_CASE("invariants 1-5 and 7 under concurrent producers and out-of-order completions", "[qp][invariants]")
{
	for (uint32_t depth : {4u, 16u, 64u}) {
		Ring r(depth);
		Controller c(r);
		std::thread ctl([&] { c.run(); });
		const int producers = 4, per = 3000;
		std::atomic<uint64_t> results{0}, wrong{0}, timeouts{0};
		std::vector<std::thread> ps;
		for (int p = 0; p < producers; p++) {
			ps.emplace_back([&, p] {
				std::mt19937 rng(p);
				for (int i = 0; i < per;) {
					const uint32_t want = 1 + rng() % (depth > 4 ? 3 : 1); // batches of several
					uint32_t first = 0;
					const uint64_t deadline = gio_deadline_in(10ull * 1000000000ull);
					if (gio_qp_reserve_wait(&r.qp, want, deadline, &first)) {
						timeouts++;
						return;
					}
					for (uint32_t k = 0; k < want; k++)
						if (put(r, first + k, (uint32_t)(p << 20 | (i + k)))) {
							timeouts++;
							return;
						}
					gio_qp_publish(&r.qp);
					for (uint32_t k = 0; k < want; k++) {
						const uint32_t cid = (first + k) & (depth - 1);
						uint32_t dw0 = 0;
						int rc = gio_qp_wait(&r.qp, first + k, deadline, nullptr, &dw0);
						if (rc)
							timeouts++;
						else if (dw0 != cid * 3u) // (7) the result is this command's
							wrong++;
						results++;
					}
					i += (int)want;
				}
			});
		}
		for (auto &t : ps)
			t.join();
		c.stop = true;
		ctl.join();
		CAPTURE(depth);
		CHECK(c.violations == 0);
		CHECK(timeouts == 0);
		CHECK(wrong == 0);
		CHECK(results == (uint64_t)producers * per);
		CHECK(c.fetched == (uint64_t)producers * per);
		CHECK(c.posted == c.fetched);
		CHECK(r.qp.stray_cqes == 0);
	}
}

TEST_CASE("invariants 7 and 8: lost completions time out, late ones are dropped", "[qp][invariants]")
{
	Ring r(16);
	Controller c(r);
	c.drop_every = 5;
	std::thread ctl([&] { c.run(); });
	int ok = 0, etime = 0;
	for (int i = 0; i < 12; i++) {
		uint32_t first = 0;
		const uint64_t deadline = gio_deadline_in(50000000ull);
		int rc = gio_qp_reserve_wait(&r.qp, 1, deadline, &first);
		if (rc == -ETIME) { // the ring wrapped to a quarantined slot: expected, and bounded
			etime++;
			CHECK(r.qp.last_timeout.cid == 0xffffffffu);
			continue;
		}
		REQUIRE(rc == 0);
		REQUIRE(put(r, first, (uint32_t)i) == 0);
		gio_qp_publish(&r.qp);
		rc = gio_qp_wait(&r.qp, first, deadline, nullptr, nullptr);
		if (rc == 0) {
			ok++;
		} else {
			REQUIRE(rc == -ETIME);
			etime++;
			// (8) the ring's indices at the deadline.
			CHECK(r.qp.last_timeout.cid == (first & 15));
			CHECK(r.qp.last_timeout.sq_committed == first + 1);
			CHECK(gio_cmd_state(r.slots[first & 15].state) == GIO_CMD_ABANDONED);
		}
	}
	c.stop = true;
	ctl.join();
	CHECK(ok + etime == 12);
	CHECK(etime >= 2);
	CHECK(c.violations == 0);
	CHECK(r.qp.stray_cqes == 0);
}

TEST_CASE("a completion that arrives after its deadline is consumed and dropped", "[qp][invariants]")
{
	Ring r(8);
	uint32_t first = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 2, &first) == 0);
	REQUIRE(put(r, first, 1) == 0);
	REQUIRE(put(r, first + 1, 2) == 0);
	gio_qp_publish(&r.qp);
	CHECK(r.sq_db == 2);
	CHECK(gio_qp_wait(&r.qp, 0, gio_deadline_in(1000000), nullptr, nullptr) == -ETIME);
	// The controller completes both, late for command 0.
	for (uint16_t cid = 0; cid < 2; cid++) {
		r.cq[cid].sqhd = 2;
		r.cq[cid].dw0 = 100u + cid;
		gio_store_release(gio_cqe_dw3(&r.cq[cid]), GIO_CQE_DW3(cid, 1));
	}
	uint32_t dw0 = 0;
	CHECK(gio_qp_wait(&r.qp, 1, gio_deadline_in(1000000000ull), nullptr, &dw0) == 0);
	CHECK(dw0 == 101);
	CHECK(gio_cmd_state(r.slots[0].state) == GIO_CMD_FREE); // the late completion freed the quarantined slot
	CHECK(r.cq_db == 2);                      // both consumed, one CQ head doorbell
	CHECK(r.qp.stray_cqes == 0);
	// A completion naming no outstanding command is counted, not delivered.
	r.cq[2].sqhd = 2;
	gio_store_release(gio_cqe_dw3(&r.cq[2]), GIO_CQE_DW3(5, 1));
	CHECK(gio_qp_reap(&r.qp) == 1);
	CHECK(r.qp.stray_cqes == 1);
}

TEST_CASE("reservation respects the controller's head, not only free slots (invariant 3)", "[qp][invariants]")
{
	Ring r(4);
	uint32_t first = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 3, &first) == 0);
	CHECK(gio_qp_reserve(&r.qp, 1, &first) == -EBUSY); // 3 = depth - 1 entries outstanding
	CHECK(gio_qp_reserve(&r.qp, 4, &first) == -EINVAL);
	CHECK(gio_qp_reserve(&r.qp, 0, &first) == -EINVAL);
	CHECK(gio_qp_reserve_wait(&r.qp, 1, gio_deadline_in(1000000), &first) == -ETIME);
}

TEST_CASE("a second wait on an abandoned command still honours its deadline (invariant 8)", "[qp][invariants]")
{
	// Found by test_stress: the retry spun forever because the slot was no longer in flight.
	Ring r(8);
	uint32_t first = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 1, &first) == 0);
	REQUIRE(put(r, first, 1) == 0);
	gio_qp_publish(&r.qp);
	CHECK(gio_qp_wait(&r.qp, 0, gio_deadline_in(1000000), nullptr, nullptr) == -ETIME);
	const uint64_t t0 = gio_now_ns();
	CHECK(gio_qp_wait(&r.qp, 0, gio_deadline_in(20000000), nullptr, nullptr) == -ETIME);
	CHECK(gio_qp_wait(&r.qp, 5, gio_deadline_in(1000000), nullptr, nullptr) == -ETIME); // never submitted
	CHECK(gio_now_ns() - t0 < 1000000000ull);
}
