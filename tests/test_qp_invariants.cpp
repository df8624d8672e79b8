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

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

// Each SQE carries its submission tag and a checksum over every other byte it holds.
uint32_t sig(const gio_sqe &s)
{
	uint32_t h = 2166136261u;
	const unsigned char *p = reinterpret_cast<const unsigned char *>(&s);
	for (size_t i = 4; i < 60; i++) // all but CDW0 (CID is set by the ring) and CDW15
		h = (h ^ p[i]) * 16777619u;
	return h;
}

struct Ring {
	uint32_t depth;
	std::vector<gio_sqe> sq;
	std::vector<gio_cqe> cq;
	std::vector<gio_cmd_slot> slots;
	uint32_t sq_db = 0, cq_db = 0;
	gio_qp qp{};
	explicit Ring(uint32_t d) : depth(d), sq(d), cq(d), slots(d)
	{
		std::memset(cq.data(), 0, cq.size() * sizeof(gio_cqe));
		REQUIRE(gio_qp_init(&qp, sq.data(), d, cq.data(), d, slots.data(), 1, &sq_db, &cq_db, 0) == 0);
	}
};

// The adversarial controller. Violations are counted, reported by the test thread.
struct Controller {
	Ring &r;
	std::atomic<bool> stop{false};
	std::atomic<uint64_t> violations{0}, fetched{0}, posted{0};
	std::atomic<int> drop_every{0}; // drop the completion of every Nth command (0: never)
	uint32_t head = 0, last_tail = 0, cq_tail = 0, phase = 1;
	std::vector<uint8_t> outstanding;
	std::mt19937 rng{42};

	explicit Controller(Ring &ring) : r(ring), outstanding(65536, 0) {}

	void bad() { violations++; }

	void run()
	{
		struct Pending {
			uint16_t cid;
			int delay;
		};
		std::vector<Pending> pend;
		uint64_t n = 0;
		while (!stop.load(std::memory_order_relaxed) || !pend.empty()) {
			const uint32_t tail = gio_load_acquire(&r.sq_db);
			if (tail >= r.depth)
				bad();
			// (2) forward only: the distance from the last value stays within one ring.
			const uint32_t moved = (tail - last_tail + r.depth) % r.depth;
			if (((head + r.depth - last_tail) % r.depth) != 0 && moved != 0 && moved > r.depth - 1)
				bad();
			last_tail = tail;
			while (head != tail) {
				const gio_sqe s = r.sq[head];
				// (1) complete entry: the checksum in CDW15 matches the bytes.
				if (s.cdw15 != sig(s))
					bad();
				// (4) the CID is not outstanding already.
				if (outstanding[s.cid])
					bad();
				outstanding[s.cid] = 1;
				head = (head + 1) % r.depth;
				fetched++;
				n++;
				const int de = drop_every.load();
				if (de && n % (uint64_t)de == 0) {
					outstanding[s.cid] = 0; // lost: never completed
					continue;
				}
				pend.push_back({s.cid, (int)(rng() % 4)});
			}
			// Complete in random order, after random delays, while the CQ has room.
			for (size_t i = 0; i < pend.size();) {
				if (pend[i].delay-- > 0) {
					i++;
					continue;
				}
				const uint32_t cq_head = gio_load_acquire(&r.cq_db);
				// (5) the host's CQ head never passes what was posted.
				const uint32_t used = (cq_tail - cq_head + r.depth) % r.depth;
				if (cq_head >= r.depth)
					bad();
				if (used + 1 >= r.depth)
					break; // CQ full: the host must consume first
				gio_cqe *e = &r.cq[cq_tail];
				e->dw0 = pend[i].cid * 3u;
				e->dw1 = 0;
				e->sqhd = (uint16_t)head; /* the head when the entry is posted, as the spec says */
				e->sqid = 1;
				e->cid = pend[i].cid;
				outstanding[pend[i].cid] = 0;
				gio_store_release16(&e->status, (uint16_t)phase);
				if (++cq_tail == r.depth) {
					cq_tail = 0;
					phase ^= 1;
				}
				posted++;
				pend[i] = pend.back();
				pend.pop_back();
			}
			// (3) at most depth - 1 between the controller's head and the tail it was given.
			if ((tail - head + r.depth) % r.depth > r.depth - 1)
				bad();
			std::this_thread::yield();
		}
	}
};

void fill(gio_sqe *s, uint32_t tag)
{
	std::memset(s, 0, sizeof(*s));
	s->opc = 0x02;
	s->nsid = 1;
	s->cdw10 = tag;
	s->cdw11 = tag * 2654435761u;
	s->cdw12 = ~tag;
	s->dptr.prp.prp1 = (uint64_t)tag << 12;
	s->cdw15 = sig(*s);
}

} // namespace

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
						fill(gio_qp_sqe(&r.qp, first + k), (uint32_t)(p << 20 | (i + k)));
					if (gio_qp_commit(&r.qp, first, want, deadline)) {
						timeouts++;
						return;
					}
					for (uint32_t k = 0; k < want; k++) {
						const uint32_t cid = (first + k) & (depth - 1);
						uint32_t dw0 = 0;
						int rc = gio_qp_wait(&r.qp, cid, deadline, nullptr, &dw0);
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
		fill(gio_qp_sqe(&r.qp, first), (uint32_t)i);
		REQUIRE(gio_qp_commit(&r.qp, first, 1, deadline) == 0);
		rc = gio_qp_wait(&r.qp, first & 15, deadline, nullptr, nullptr);
		if (rc == 0) {
			ok++;
		} else {
			REQUIRE(rc == -ETIME);
			etime++;
			// (8) the ring's indices at the deadline.
			CHECK(r.qp.last_timeout.cid == (first & 15));
			CHECK(r.qp.last_timeout.sq_committed == first + 1);
			CHECK(r.slots[first & 15].state == GIO_CMD_ABANDONED);
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
	fill(gio_qp_sqe(&r.qp, first), 1);
	fill(gio_qp_sqe(&r.qp, first + 1), 2);
	REQUIRE(gio_qp_commit(&r.qp, first, 2, GIO_DEADLINE_NEVER) == 0);
	CHECK(r.sq_db == 2);
	CHECK(gio_qp_wait(&r.qp, 0, gio_deadline_in(1000000), nullptr, nullptr) == -ETIME);
	// The controller completes both, late for command 0.
	for (uint16_t cid = 0; cid < 2; cid++) {
		r.cq[cid].cid = cid;
		r.cq[cid].sqhd = 2;
		r.cq[cid].dw0 = 100u + cid;
		gio_store_release16(&r.cq[cid].status, 1);
	}
	uint32_t dw0 = 0;
	CHECK(gio_qp_wait(&r.qp, 1, gio_deadline_in(1000000000ull), nullptr, &dw0) == 0);
	CHECK(dw0 == 101);
	CHECK(r.slots[0].state == GIO_CMD_FREE); // the late completion freed the quarantined slot
	CHECK(r.cq_db == 2);                      // both consumed, one CQ head doorbell
	CHECK(r.qp.stray_cqes == 0);
	// A completion naming no outstanding command is counted, not delivered.
	r.cq[2].cid = 5;
	r.cq[2].sqhd = 2;
	gio_store_release16(&r.cq[2].status, 1);
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
	fill(gio_qp_sqe(&r.qp, first), 1);
	REQUIRE(gio_qp_commit(&r.qp, first, 1, GIO_DEADLINE_NEVER) == 0);
	CHECK(gio_qp_wait(&r.qp, 0, gio_deadline_in(1000000), nullptr, nullptr) == -ETIME);
	const uint64_t t0 = gio_now_ns();
	CHECK(gio_qp_wait(&r.qp, 0, gio_deadline_in(20000000), nullptr, nullptr) == -ETIME);
	CHECK(gio_qp_wait(&r.qp, 5, gio_deadline_in(1000000), nullptr, nullptr) == -ETIME); // never submitted
	CHECK(gio_now_ns() - t0 < 1000000000ull);
}
