// Staging slots (giouring/ring/stage.h): argument checks, the slot life cycle, flow control that
// never lets more commands hold slots than there are, quarantine of lost commands, bounded waits,
// and, against a model, slot reuse under random completion orders (seeded); then threads: a
// reserver, a controller that completes out of order, and a mover, every byte checked.
#include <catch2/catch.hpp>

#include <giouring/ring/stage.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

struct Area {
	std::vector<uint32_t> words;
	gio_stage st{};
	explicit Area(uint32_t nslots, uint64_t slot_bytes = 4096, uint64_t bus = 0x100000)
	    : words(nslots, 0xdeadbeefu)
	{
		REQUIRE(gio_stage_init(&st, words.data(), nslots, slot_bytes, bus, GIO_SCOPE_SYS) == 0);
	}
};

} // namespace

TEST_CASE("gio_stage_init refuses what a slot ring cannot be, writing nothing", "[stage]")
{
	std::vector<uint32_t> w(8, 7u);
	gio_stage st{};
	std::memset(&st, 0x5a, sizeof st);
	const gio_stage before = st;
	CHECK(gio_stage_init(&st, nullptr, 8, 4096, 0, GIO_SCOPE_SYS) == -EINVAL);
	CHECK(gio_stage_init(&st, w.data(), 0, 4096, 0, GIO_SCOPE_SYS) == -EINVAL);
	CHECK(gio_stage_init(&st, w.data(), 6, 4096, 0, GIO_SCOPE_SYS) == -EINVAL);
	CHECK(gio_stage_init(&st, w.data(), GIO_STAGE_MAX_SLOTS * 2, 4096, 0, GIO_SCOPE_SYS) == -EINVAL);
	CHECK(gio_stage_init(&st, w.data(), 8, 0, 0, GIO_SCOPE_SYS) == -EINVAL);
	CHECK(gio_stage_init(&st, w.data(), 8, 4098, 0, GIO_SCOPE_SYS) == -EINVAL);  // not dwords
	CHECK(gio_stage_init(&st, w.data(), 8, 1ull << 32, 0, GIO_SCOPE_SYS) == -EINVAL); // above one SGL block
	CHECK(gio_stage_init(&st, w.data(), 8, 4096, 2, GIO_SCOPE_SYS) == -EINVAL);  // misaligned bus
	CHECK(gio_stage_init(&st, w.data(), 8, 4096, UINT64_MAX - 4095 * 4, GIO_SCOPE_SYS) == -EINVAL); // wraps
	CHECK(gio_stage_init(&st, w.data(), 8, 4096, 0, 7) == -EINVAL);
	CHECK(std::memcmp(&st, &before, sizeof st) == 0);
	CHECK(std::all_of(w.begin(), w.end(), [](uint32_t x) { return x == 7u; }));
	CHECK(gio_stage_init(&st, w.data(), 1, 4, 0, GIO_SCOPE_GPU) == 0); // the smallest ring
}

TEST_CASE("a slot goes FREE -> HELD -> FULL -> FREE for the next lap; addresses follow the ticket", "[stage]")
{
	Area a(4, 8192, 0x40000);
	uint32_t t = 99;
	REQUIRE(gio_stage_reserve(&a.st, 3, &t) == 0);
	CHECK(t == 0);
	for (uint32_t i = 0; i < 3; i++) {
		CHECK(gio_stage_state(a.words[i]) == GIO_STAGE_HELD);
		CHECK(gio_stage_bus(&a.st, t + i) == 0x40000 + 8192ull * i);
		CHECK(gio_stage_offset(&a.st, t + i) == 8192ull * i);
	}
	CHECK_FALSE(gio_stage_full(&a.st, 1));
	CHECK(gio_stage_fill(&a.st, 1) == 0);
	CHECK(gio_stage_full(&a.st, 1));
	CHECK(gio_stage_fill(&a.st, 1) == -EINVAL); // not HELD any more
	CHECK(gio_stage_release(&a.st, 1) == 0);
	CHECK(gio_stage_release(&a.st, 1) == -EINVAL); // a second release changes nothing
	CHECK(gio_stage_fill(&a.st, 1) == -EINVAL);
	CHECK(gio_stage_release(&a.st, 5) == -EINVAL); // ticket 5 (slot 1, lap 1) is not reserved
	CHECK(gio_stage_release(&a.st, 0) == 0);       // a failed command: HELD straight to FREE

	// Tickets 3 and 4 land on slots 3 and 0; slot 1 is free for lap 1 too, slot 2 is still held.
	REQUIRE(gio_stage_reserve(&a.st, 2, &t) == 0);
	CHECK(t == 3);
	CHECK(gio_stage_offset(&a.st, 4) == 0);
	REQUIRE(gio_stage_reserve(&a.st, 1, &t) == 0);
	CHECK(t == 5);
	CHECK(gio_stage_reserve(&a.st, 1, &t) == -EBUSY); // ticket 6 needs slot 2, whose object has not moved
	CHECK(t == 5);
	CHECK(gio_stage_release(&a.st, 2) == 0);
	REQUIRE(gio_stage_reserve(&a.st, 1, &t) == 0);
	CHECK(t == 6);
}

TEST_CASE("reservations are all or nothing and never exceed the slots", "[stage]")
{
	Area a(8);
	uint32_t t = 0;
	CHECK(gio_stage_reserve(&a.st, 0, &t) == -EINVAL);
	CHECK(gio_stage_reserve(&a.st, 9, &t) == -EINVAL);
	REQUIRE(gio_stage_reserve(&a.st, 8, &t) == 0); // a whole ring is allowed: slots, not SQ entries
	CHECK(gio_stage_reserve(&a.st, 1, &t) == -EBUSY);
	for (uint32_t i = 0; i < 7; i++)
		REQUIRE(gio_stage_release(&a.st, i) == 0);
	CHECK(gio_stage_reserve(&a.st, 8, &t) == -EBUSY); // ticket 15 needs slot 7, still held
	CHECK(a.st.reserved == 8);                        // nothing taken by the refused call
	for (uint32_t i = 8; i < 15; i++)
		CHECK(a.words[i & 7] == ((1u << 2) | GIO_STAGE_FREE)); // still free for lap 1
	REQUIRE(gio_stage_reserve(&a.st, 7, &t) == 0);
	CHECK(t == 8);
}

TEST_CASE("a lost command's slot is never reused; waits on it end at their deadline with the ring's state", "[stage]")
{
	Area a(2);
	uint32_t t = 0;
	REQUIRE(gio_stage_reserve(&a.st, 2, &t) == 0);
	CHECK(gio_stage_lose(&a.st, 0) == 0); // the controller may still write slot 0
	CHECK(gio_stage_release(&a.st, 0) == -EINVAL);
	CHECK(gio_stage_lose(&a.st, 0) == -EINVAL);
	REQUIRE(gio_stage_release(&a.st, 1) == 0);
	CHECK(gio_stage_reserve(&a.st, 1, &t) == -EBUSY); // ticket 2 wraps onto slot 0
	const uint64_t t0 = gio_host_now_ns();
	CHECK(gio_stage_reserve_wait(&a.st, 1, gio_deadline_in(20000000), &t) == -ETIME);
	const uint64_t waited = gio_host_now_ns() - t0;
	CHECK(waited >= 20000000);
	CHECK(waited < 2000000000);
	CHECK(a.st.last_timeout.reserved == 2);
	CHECK(a.st.last_timeout.slot == 0);
	CHECK(gio_stage_state(a.st.last_timeout.word) == GIO_STAGE_LOST);
	CHECK(a.st.last_timeout.want == ((1u << 2) | GIO_STAGE_FREE));
	CHECK(gio_stage_reserve_wait(&a.st, 3, gio_deadline_in(0), &t) == -EINVAL);

	// Once the controller can no longer write (its queue deleted), a new init gives the slot back.
	REQUIRE(gio_stage_init(&a.st, a.words.data(), 2, 4096, 0x100000, GIO_SCOPE_SYS) == 0);
	CHECK(gio_stage_reserve(&a.st, 2, &t) == 0);
}

TEST_CASE("a wait for slots returns once the mover releases one", "[stage]")
{
	Area a(4);
	uint32_t t = 0;
	REQUIRE(gio_stage_reserve(&a.st, 4, &t) == 0);
	std::atomic<int> released{1};
	std::thread mover([&] { // Catch's assertions are for the main thread only
		std::this_thread::sleep_for(std::chrono::milliseconds(5));
		released = gio_stage_release(&a.st, 0);
	});
	CHECK(gio_stage_reserve_wait(&a.st, 1, gio_deadline_in(5000000000ull), &t) == 0);
	CHECK(t == 4);
	mover.join();
	CHECK(released.load() == 0);
}

TEST_CASE("slot reuse under random completion orders matches a model (seeded)", "[stage][property]")
{
	for (uint32_t seed = 1; seed <= 200; seed++) {
		std::mt19937 rng(seed);
		const uint32_t nslots = 1u << (rng() % 6); // 1 to 32
		Area a(nslots, 64);
		std::vector<uint8_t> area(nslots * 64);
		std::vector<uint32_t> held; // tickets in flight or waiting to move, any order
		std::vector<int64_t> owner(nslots, -1);
		uint32_t next = 0, moved = 0;
		INFO("seed " << seed << " nslots " << nslots);
		for (uint32_t step = 0; step < 2000; step++) {
			const uint32_t op = rng() % 3;
			if (op == 0) { // a group of commands asks for slots
				const uint32_t n = 1 + rng() % nslots;
				bool all_free = true; // the model: the next n tickets' slots all unowned
				for (uint32_t i = 0; i < n; i++)
					all_free = all_free && owner[(next + i) & (nslots - 1)] < 0;
				uint32_t t = 0;
				const int rc = gio_stage_reserve(&a.st, n, &t);
				REQUIRE(rc == (all_free ? 0 : -EBUSY));
				if (rc == 0) {
					REQUIRE(t == next);
					for (uint32_t i = 0; i < n; i++) {
						owner[(t + i) & (nslots - 1)] = t + i;
						held.push_back(t + i);
					}
					next += n;
				}
			} else if (!held.empty()) { // some command completes, or its object moves
				const size_t k = rng() % held.size();
				const uint32_t t = held[k];
				const uint64_t off = gio_stage_offset(&a.st, t);
				REQUIRE(off + 64 <= area.size());
				REQUIRE(owner[t & (nslots - 1)] == (int64_t)t); // no two live tickets share a slot
				if (gio_stage_state(a.words[t & (nslots - 1)]) == GIO_STAGE_HELD) {
					std::memset(&area[off], (int)(t & 0xff), 64); // the controller's write
					REQUIRE(gio_stage_fill(&a.st, t) == 0);
				} else {
					REQUIRE(gio_stage_full(&a.st, t));
					bool mine = true; // the mover finds this command's bytes
					for (uint32_t b = 0; b < 64; b++)
						mine = mine && area[off + b] == (uint8_t)(t & 0xff);
					REQUIRE(mine);
					REQUIRE(gio_stage_release(&a.st, t) == 0);
					REQUIRE(gio_stage_release(&a.st, t) == -EINVAL);
					owner[t & (nslots - 1)] = -1;
					held.erase(held.begin() + (long)k);
					moved++;
				}
			}
			REQUIRE(held.size() <= nslots);
		}
		CHECK(moved > 0);
	}
}

TEST_CASE("threads: a reserver, an out-of-order controller and a mover; every byte arrives once", "[stage][threads]")
{
	const uint32_t nslots = 16, slot = 256, total = 20000;
	Area a(nslots, slot);
	std::vector<uint8_t> area(nslots * slot);
	std::mutex mu;
	std::deque<uint32_t> issued, completed; // the controller's queue, the mover's
	std::atomic<bool> fail{false};
	std::vector<uint8_t> seen(total, 0);

	std::thread controller([&] {
		std::mt19937 rng(7);
		std::vector<uint32_t> mine;
		uint32_t done = 0;
		const uint64_t deadline = gio_deadline_in(60000000000ull);
		while (done < total && !gio_deadline_passed(deadline)) {
			{
				std::lock_guard<std::mutex> g(mu);
				while (!issued.empty()) {
					mine.push_back(issued.front());
					issued.pop_front();
				}
			}
			if (mine.empty()) {
				std::this_thread::yield();
				continue;
			}
			const size_t k = rng() % mine.size(); // completes in any order
			const uint32_t t = mine[k];
			mine.erase(mine.begin() + (long)k);
			for (uint32_t b = 0; b < slot; b++)
				area[gio_stage_offset(&a.st, t) + b] = (uint8_t)(t * 31 + b);
			if (gio_stage_fill(&a.st, t) != 0)
				fail = true;
			std::lock_guard<std::mutex> g(mu);
			completed.push_back(t);
			done++;
		}
	});
	std::thread mover([&] {
		uint32_t done = 0;
		const uint64_t deadline = gio_deadline_in(60000000000ull);
		while (done < total && !gio_deadline_passed(deadline)) {
			uint32_t t;
			{
				std::lock_guard<std::mutex> g(mu);
				if (completed.empty())
					t = UINT32_MAX;
				else {
					t = completed.front();
					completed.pop_front();
				}
			}
			if (t == UINT32_MAX) {
				std::this_thread::yield();
				continue;
			}
			if (!gio_stage_full(&a.st, t))
				fail = true;
			for (uint32_t b = 0; b < slot; b++)
				if (area[gio_stage_offset(&a.st, t) + b] != (uint8_t)(t * 31 + b))
					fail = true;
			seen[t]++;
			if (gio_stage_release(&a.st, t) != 0)
				fail = true;
			done++;
		}
	});
	std::mt19937 rng(3);
	uint32_t next = 0;
	int rc = 0;
	while (next < total && rc == 0) {
		const uint32_t n = std::min<uint32_t>(1 + rng() % 8, total - next);
		uint32_t t = 0;
		rc = gio_stage_reserve_wait(&a.st, n, gio_deadline_in(30000000000ull), &t);
		if (rc == 0) {
			REQUIRE(t == next);
			std::lock_guard<std::mutex> g(mu);
			for (uint32_t i = 0; i < n; i++)
				issued.push_back(t + i);
			next += n;
		}
	}
	controller.join();
	mover.join();
	REQUIRE(rc == 0);
	CHECK_FALSE(fail.load());
	CHECK(std::all_of(seen.begin(), seen.end(), [](uint8_t x) { return x == 1; }));
	for (uint32_t i = 0; i < nslots; i++) // every slot free again, for the lap after its last use
		CHECK(gio_stage_state(a.words[i]) == GIO_STAGE_FREE);
}

TEST_CASE("tickets wrap at 2^32 without confusing a slot's laps", "[stage]")
{
	for (uint32_t nslots : {1u, 2u, 8u, 65536u}) {
		Area a(nslots, 4);
		// The ring as it is after 2^32 - 2 x nslots tickets, every one of them moved.
		a.st.reserved = 0u - 2 * nslots;
		for (uint32_t i = 0; i < nslots; i++)
			a.words[(a.st.reserved + i) & (nslots - 1)] = gio__stage_word(&a.st, a.st.reserved + i, GIO_STAGE_FREE);
		INFO("nslots " << nslots);
		for (uint32_t lap = 0; lap < 4; lap++) { // two laps before the wrap, two after
			uint32_t t = 0;
			REQUIRE(gio_stage_reserve(&a.st, nslots, &t) == 0);
			CHECK(t == 0u - 2 * nslots + lap * nslots);
			uint32_t again = 0;
			CHECK(gio_stage_reserve(&a.st, 1, &again) == -EBUSY);
			for (uint32_t i = 0; i < nslots; i++) {
				REQUIRE(gio_stage_fill(&a.st, t + i) == 0);
				CHECK(gio_stage_full(&a.st, t + i));
				CHECK_FALSE(gio_stage_full(&a.st, t + i + nslots)); // not the next lap's
				REQUIRE(gio_stage_release(&a.st, t + i) == 0);
				CHECK(gio_stage_release(&a.st, t + i) == -EINVAL);
			}
		}
		CHECK(a.st.reserved == 2 * nslots);
	}
}
