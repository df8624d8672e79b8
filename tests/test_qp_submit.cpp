// The submission side of the rings (giouring/ring/qp.h): producers never wait on each other, a
// reservation that stalls is cancelled after gio_qp::stall_ns and costs only its own commands,
// every command carries 64-bit user data, and detached commands come back through the
// completion list (gio_qp_peek_batch / gio_qp_wait_batch), so one thread submits and another
// reaps. Against the adversarial controller of qp_controller.h, or by hand where the order of
// events must be exact.
#include <catch2/catch.hpp>

#include <giouring/ring/qp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "qp_controller.h"

using namespace qpt;

namespace {

constexpr uint64_t kSecond = 1000000000ull;

void sleep_ms(int ms)
{
	std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Producers that submit `per` tagged commands each in batches of 1 to 3 and check every result;
// what they saw goes to the counters.
struct Producers {
	std::atomic<uint64_t> ok{0}, wrong{0}, failed{0};
	std::vector<std::thread> ts;
	void start(Ring &r, int n, int per, int tag_base)
	{
		// per and tag_base by value: start() returns long before the threads end (captured by
		// reference they were read from a dead frame: at -O0 the producers stopped after one
		// command and the first test failed).
		for (int p = 0; p < n; p++)
			ts.emplace_back([this, &r, p, per, tag_base] {
				std::mt19937 rng(p + 7);
				for (int i = 0; i < per;) {
					const uint32_t want = std::min<uint32_t>(1 + rng() % 3, (uint32_t)(per - i));
					const uint64_t deadline = gio_deadline_in(5 * kSecond);
					uint32_t first = 0;
					if (gio_qp_reserve_wait(&r.qp, want, deadline, &first)) {
						failed++;
						return;
					}
					for (uint32_t k = 0; k < want; k++)
						if (put(r, first + k, (uint32_t)((tag_base + p) << 20 | (i + k))))
							failed++;
					gio_qp_publish(&r.qp);
					for (uint32_t k = 0; k < want; k++) {
						const uint32_t cid = (first + k) & (r.depth - 1);
						uint32_t dw0 = 0;
						if (gio_qp_wait(&r.qp, first + k, deadline, nullptr, &dw0))
							failed++;
						else if (dw0 != cid * 3u)
							wrong++;
						else
							ok++;
					}
					i += (int)want;
				}
			});
	}
	void join()
	{
		for (auto &t : ts)
			t.join();
	}
};

// Reaps until every slot is free again (the completions of cancelled entries free theirs).
bool drain(Ring &r)
{
	const uint64_t deadline = gio_deadline_in(5 * kSecond);
	for (;;) {
		gio_qp_reap(&r.qp);
		uint32_t busy = 0;
		for (auto &s : r.slots)
			busy += gio_cmd_state(gio_load_acquire(&s.state)) != GIO_CMD_FREE;
		if (busy == 0)
			return true;
		if (gio_deadline_passed(deadline))
			return false;
		sleep_ms(1);
	}
}

} // namespace

TEST_CASE("a producer frozen mid-batch costs only its own commands", "[qp][submit]")
{
	Ring r(16);
	r.qp.stall_ns = 20000000ull; // 20 ms
	r.qp.keep_ns = 20000000ull;
	Controller c(r);
	std::thread ctl([&] { c.run(); });

	// The frozen producer: reserves four entries, puts two, then stops until told to go on.
	uint32_t f = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 4, &f) == 0);
	REQUIRE(put(r, f, 0xf00) == 0);
	REQUIRE(put(r, f + 1, 0xf01) == 0);
	gio_qp_publish(&r.qp);

	const auto t0 = std::chrono::steady_clock::now();
	Producers others;
	others.start(r, 3, 300, 1);
	others.join();
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

	// Everyone else finished, each command well inside its deadline.
	CHECK(others.failed == 0);
	CHECK(others.wrong == 0);
	CHECK(others.ok == 900);
	CHECK(secs < 4.0);
	// The frozen producer wakes up: its unput entries were cancelled, and the results of the two
	// it put (they went out and completed) were dropped when the ring wrapped to their slots and
	// found them uncollected for stall_ns. Each is reported to it as -ETIME, not lost silently.
	CHECK(put(r, f + 2, 0xf02) == -ETIME);
	CHECK(put(r, f + 3, 0xf03) == -ETIME);
	CHECK(r.qp.last_timeout.cid == ((f + 3) & 15));
	gio_qp_publish(&r.qp);
	for (uint32_t k = 0; k < 2; k++)
		CHECK(gio_qp_wait(&r.qp, f + k, gio_deadline_in(5 * kSecond), nullptr, nullptr) == -ETIME);
	CHECK(r.qp.dropped_results == 2);
	CHECK(drain(r));
	c.stop = true;
	ctl.join();
	CHECK(r.qp.sq_cancelled == 2);
	CHECK(c.nops == 2);
	CHECK(c.violations == 0);
	CHECK(c.fetched == 900 + 4);
	CHECK(c.posted == c.fetched);
	CHECK(r.qp.stray_cqes == 0);
	CHECK(r.qp.sq_committed == r.qp.sq_reserved);
}

TEST_CASE("a frozen producer's detached commands are taken by another thread, nothing dropped", "[qp][submit][cpl]")
{
	Ring r(16);
	r.qp.stall_ns = 20000000ull;
	Controller c(r);
	std::thread ctl([&] { c.run(); });
	uint32_t f = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 3, &f) == 0);
	REQUIRE(put(r, f, 0xf00, 0xabc0, GIO_CMD_F_DETACHED) == 0);
	REQUIRE(put(r, f + 1, 0xf01, 0xabc1, GIO_CMD_F_DETACHED) == 0);
	gio_qp_publish(&r.qp); // and freezes before its third entry
	std::atomic<bool> stop{false};
	std::atomic<int> got{0}, wrong{0};
	std::thread reaper([&] {
		while (!stop.load()) {
			gio_cpl out[4];
			const int n = gio_qp_wait_batch(&r.qp, out, 4, gio_deadline_in(10000000ull));
			for (int i = 0; i < n; i++) {
				got++;
				wrong += out[i].user_data != 0xabc0u + (out[i].cid - (f & 15));
			}
		}
	});
	Producers others;
	others.start(r, 3, 300, 1);
	others.join();
	stop = true;
	reaper.join();
	CHECK(drain(r));
	c.stop = true;
	ctl.join();
	CHECK(others.failed == 0);
	CHECK(others.ok == 900);
	CHECK(got == 2);
	CHECK(wrong == 0);
	CHECK(r.qp.dropped_results == 0);
	CHECK(r.qp.sq_cancelled == 1);
	CHECK(put(r, f + 2, 0xf02) == -ETIME);
	CHECK(c.violations == 0);
}

TEST_CASE("a producer that reserves and exits costs nothing but its entries", "[qp][submit]")
{
	Ring r(8);
	r.qp.stall_ns = 10000000ull;
	Controller c(r);
	std::thread ctl([&] { c.run(); });
	int gone_rc = -1;
	std::thread gone([&] {
		uint32_t first = 0;
		gone_rc = gio_qp_reserve(&r.qp, 3, &first); // and never puts them
	});
	gone.join();
	REQUIRE(gone_rc == 0);
	Producers others;
	others.start(r, 2, 200, 1);
	others.join();
	CHECK(drain(r));
	c.stop = true;
	ctl.join();
	CHECK(others.failed == 0);
	CHECK(others.wrong == 0);
	CHECK(others.ok == 400);
	CHECK(r.qp.sq_cancelled == 3);
	CHECK(c.nops == 3);
	CHECK(c.violations == 0);
}

TEST_CASE("a stall is cancelled only after stall_ns, and never over a claimed entry", "[qp][submit]")
{
	Ring r(8);
	r.qp.stall_ns = 5000000ull; // 5 ms
	uint32_t a = 0, b = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 2, &a) == 0);
	REQUIRE(gio_qp_reserve(&r.qp, 1, &b) == 0);
	REQUIRE(put(r, b, 2) == 0);
	gio_qp_publish(&r.qp); // a is not put: nothing can go out yet
	CHECK(r.qp.sq_committed == 0);
	CHECK(r.sq_db == 0);
	gio_qp_publish(&r.qp); // the stall is younger than stall_ns: nothing is cancelled
	CHECK(r.qp.sq_cancelled == 0);

	// a's producer has claimed its first entry and is copying it in (FILLING) when the stall
	// passes stall_ns: the cancel must not take it.
	r.slots[a].state = GIO_CMD_FILLING;
	sleep_ms(10);
	gio_qp_publish(&r.qp);
	CHECK(r.qp.sq_cancelled == 0);
	CHECK(r.qp.sq_committed == 0);
	gio_sqe s;
	fill(&s, 0);
	// The copy completes, and the entry's ready mark follows.
	int wrc = 1;
	REQUIRE(gio__qp_write(&r.qp, a, &s, 7, 0, &wrc) == GIO_CMD_INFLIGHT);
	REQUIRE(wrc == 0);
	gio_store_release(&r.slots[a].state, gio__qp_word(&r.qp, a, GIO_CMD_INFLIGHT));
	gio_qp_publish(&r.qp);
	CHECK(r.qp.sq_committed == 1); // a + 1 is the new head of the ring, and unput: a new stall
	CHECK(r.sq_db == 1);
	gio_qp_publish(&r.qp);
	CHECK(r.qp.sq_cancelled == 0);
	sleep_ms(10);
	gio_qp_publish(&r.qp);
	CHECK(r.qp.sq_cancelled == 1);
	CHECK(r.qp.sq_committed == 3); // a + 1 cancelled, b put: both go out
	CHECK(r.sq_db == 3);
	CHECK(gio_cmd_state(r.slots[a + 1].state) == GIO_CMD_CANCELLED);
	CHECK(r.sq[a + 1].opc == GIO_NVM_OPC_FLUSH);
	CHECK(r.sq[a + 1].nsid == 0);
	CHECK(r.sq[a + 1].cid == a + 1);
	CHECK(put(r, a + 1, 1) == -ETIME); // the late producer learns it

	// The cancelled entry's completion frees its slot and reaches nobody.
	for (uint16_t i = 0; i < 3; i++) {
		r.cq[i].sqhd = 3;
		gio_store_release(gio_cqe_dw3(&r.cq[i]), GIO_CQE_DW3(i, (i == 1 ? 0x0bu << 1 : 0u) | 1u));
	}
	CHECK(gio_qp_reap(&r.qp) == 3);
	CHECK(gio_cmd_state(r.slots[a + 1].state) == GIO_CMD_FREE);
	CHECK(gio_qp_try_result(&r.qp, a, nullptr, nullptr) == 0);
	CHECK(gio_qp_try_result(&r.qp, b, nullptr, nullptr) == 0);
	CHECK(r.qp.stray_cqes == 0);
}

TEST_CASE("stall_ns 0 never cancels; the admin queue's cancel is Keep Alive", "[qp][submit]")
{
	Ring r(4);
	r.qp.stall_ns = 0;
	uint32_t a = 0, b = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 1, &a) == 0);
	REQUIRE(gio_qp_reserve(&r.qp, 1, &b) == 0);
	REQUIRE(put(r, b, 1) == 0);
	gio_qp_publish(&r.qp);
	sleep_ms(2);
	gio_qp_publish(&r.qp);
	CHECK(r.qp.sq_cancelled == 0);
	CHECK(r.qp.sq_committed == 0);

	// Opcode 0 on the admin queue is Delete I/O SQ: a cancelled admin entry must not be it.
	std::vector<gio_sqe> sq(4);
	std::vector<gio_cqe> cq(4);
	std::vector<gio_cmd_slot> slots(4);
	uint32_t sdb = 0, cdb = 0;
	gio_qp adm{};
	REQUIRE(gio_qp_init(&adm, sq.data(), 4, cq.data(), 4, slots.data(), 0, &sdb, &cdb, 0) == 0);
	adm.stall_ns = 1000000ull;
	REQUIRE(gio_qp_reserve(&adm, 1, &a) == 0);
	gio_qp_publish(&adm);
	sleep_ms(3);
	gio_qp_publish(&adm);
	CHECK(adm.sq_cancelled == 1);
	CHECK(sq[0].opc == GIO_ADMIN_OPC_KEEP_ALIVE);
	CHECK(sdb == 1);
}

TEST_CASE("an unknown flag fails the put and the entry still goes out", "[qp][submit]")
{
	Ring r(4);
	uint32_t a = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 2, &a) == 0);
	CHECK(put(r, a, 1, 0, 0x80) == -EINVAL);
	CHECK(gio_cmd_state(r.slots[a].state) == GIO_CMD_CANCELLED);
	REQUIRE(put(r, a + 1, 2) == 0);
	gio_qp_publish(&r.qp);
	CHECK(r.qp.sq_committed == 2); // no stall behind the refused entry
	CHECK(r.sq[a].nsid == 0);
	CHECK(r.qp.sq_cancelled == 0); // refused, not cancelled as stalled
}

TEST_CASE("detached commands come back through the completion list with their user data", "[qp][submit][cpl]")
{
	Ring r(16);
	Controller c(r);
	std::thread ctl([&] { c.run(); });
	const int producers = 3, per = 2000;
	std::atomic<int> submitted{0}, failed{0};
	std::vector<std::thread> ps;
	for (int p = 0; p < producers; p++)
		ps.emplace_back([&, p] {
			std::mt19937 rng(p);
			for (int i = 0; i < per;) {
				const uint32_t want = std::min<uint32_t>(1 + rng() % 4, (uint32_t)(per - i));
				uint32_t first = 0;
				if (gio_qp_reserve_wait(&r.qp, want, gio_deadline_in(5 * kSecond), &first)) {
					failed++;
					return;
				}
				for (uint32_t k = 0; k < want; k++) {
					const uint64_t ud = (uint64_t)(p + 1) << 40 | (uint64_t)(i + k) << 8 | 0xa5;
					if (put(r, first + k, (uint32_t)(p << 20 | (i + k)), ud, GIO_CMD_F_DETACHED))
						failed++;
				}
				gio_qp_publish(&r.qp);
				submitted += (int)want;
				i += (int)want;
			}
		});
	// The reaper: another thread, which never submitted anything.
	std::map<uint64_t, int> seen;
	uint64_t wrong = 0, taken = 0;
	const uint64_t deadline = gio_deadline_in(20 * kSecond);
	while (taken < (uint64_t)producers * per && !gio_deadline_passed(deadline)) {
		gio_cpl out[8];
		const int n = gio_qp_wait_batch(&r.qp, out, 8, deadline);
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			seen[out[i].user_data]++;
			wrong += out[i].res != 0 || out[i].status != 0 || out[i].dw0 != out[i].cid * 3u ||
				 (out[i].user_data & 0xff) != 0xa5;
			taken++;
		}
	}
	for (auto &t : ps)
		t.join();
	c.stop = true;
	ctl.join();
	CHECK(failed == 0);
	CHECK(submitted == producers * per);
	CHECK(taken == (uint64_t)producers * per);
	CHECK(wrong == 0);
	uint64_t dup = 0;
	for (auto &kv : seen)
		dup += kv.second != 1;
	CHECK(seen.size() == (size_t)producers * per);
	CHECK(dup == 0);
	CHECK(r.qp.cpl_head == r.qp.cpl_tail);
	CHECK(r.qp.stray_cqes == 0);
	CHECK(c.violations == 0);
}

TEST_CASE("waited and detached commands share a ring", "[qp][submit][cpl]")
{
	Ring r(8);
	uint32_t a = 0;
	REQUIRE(gio_qp_reserve(&r.qp, 2, &a) == 0);
	REQUIRE(put(r, a, 1, 0x1111, 0) == 0);
	REQUIRE(put(r, a + 1, 2, 0x2222, GIO_CMD_F_DETACHED) == 0);
	gio_qp_publish(&r.qp);
	for (uint16_t i = 0; i < 2; i++) {
		r.cq[i].sqhd = 2;
		r.cq[i].dw0 = 40u + i;
		gio_store_release(gio_cqe_dw3(&r.cq[i]), GIO_CQE_DW3(i, (i == 1 ? 0x02u << 1 : 0u) | 1u)); // 2nd: Invalid Field
	}
	gio_cpl out[4];
	CHECK(gio_qp_peek_batch(&r.qp, out, 4) == 1); // only the detached one is listed
	CHECK(out[0].user_data == 0x2222);
	CHECK(out[0].cid == 1);
	CHECK(out[0].dw0 == 41);
	CHECK(out[0].res == -EIO);
	CHECK(out[0].status == 0x02);
	CHECK(gio_cmd_state(r.slots[1].state) == GIO_CMD_FREE);
	uint32_t dw0 = 0;
	CHECK(gio_qp_try_result(&r.qp, 0, nullptr, &dw0) == 0); // the waited one, by CID
	CHECK(dw0 == 40);
	CHECK(gio_qp_peek_batch(&r.qp, out, 4) == 0);
	CHECK(gio_qp_wait_batch(&r.qp, out, 0, GIO_DEADLINE_NEVER) == -EINVAL);
	const uint64_t t0 = gio_now_ns();
	CHECK(gio_qp_wait_batch(&r.qp, out, 4, gio_deadline_in(2000000)) == -ETIME);
	CHECK(gio_now_ns() - t0 < kSecond);

	// A detached command cannot be collected by CID (its completion is the list's).
	REQUIRE(gio_qp_reserve(&r.qp, 1, &a) == 0);
	REQUIRE(put(r, a, 3, 0x3333, GIO_CMD_F_DETACHED) == 0);
	gio_qp_publish(&r.qp);
	r.cq[2].sqhd = 3;
	gio_store_release(gio_cqe_dw3(&r.cq[2]), GIO_CQE_DW3(a, 1));
	CHECK(gio_qp_reap(&r.qp) == 1);
	CHECK(gio_qp_try_result(&r.qp, a, nullptr, nullptr) == -EINVAL);
	CHECK(gio_qp_peek_batch(&r.qp, out, 4) == 1);
	CHECK(out[0].user_data == 0x3333);
	CHECK(out[0].res == 0);
}
