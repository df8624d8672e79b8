// The KV store's host index (src/kv/index.h): allocation round-robin over devices, LRU eviction,
// pins, commits, rebuild after a reopen, counters; and a long random run against a plain
// reference model built from standard containers.
#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <giouring/host/ctx.h>

#include "../src/kv/index.h"

namespace {

gio_kv_u128 K(uint64_t lo, uint64_t hi = 0)
{
	gio_kv_u128 k;
	k.lo = lo;
	k.hi = hi;
	return k;
}

struct Index {
	gio__kv_index *ix = nullptr;
	explicit Index(std::vector<uint64_t> slots)
	{
		REQUIRE(gio__kv_index_create(&ix, slots.data(), (uint32_t)slots.size()) == 0);
	}
	~Index() { gio__kv_index_destroy(ix); }
	operator gio__kv_index *() { return ix; }
	gio__kv_stats stats()
	{
		gio__kv_stats st;
		gio__kv_index_stats(ix, &st);
		return st;
	}
	void check()
	{
		const int rc = gio__kv_index_check(ix);
		INFO(gio_last_error());
		REQUIRE(rc == 0);
	}
	// One key allocated; the result must be a success.
	gio__kv_alloc alloc(gio_kv_u128 key)
	{
		gio__kv_alloc a;
		REQUIRE(gio__kv_index_alloc(ix, &key, 1, &a) == 1);
		REQUIRE(a.rc == 0);
		return a;
	}
	gio__kv_alloc put(gio_kv_u128 key, uint64_t seq)
	{
		gio__kv_alloc a = alloc(key);
		REQUIRE(gio__kv_index_commit(ix, a.loc.id, seq) == 0);
		return a;
	}
};

} // namespace

TEST_CASE("kv index: fill to capacity, round-robin, then evict")
{
	Index ix({4, 4});
	std::vector<gio_kv_u128> keys;
	for (uint64_t i = 0; i < 8; i++)
		keys.push_back(K(100 + i));
	gio__kv_alloc out[8];
	REQUIRE(gio__kv_index_alloc(ix, keys.data(), 8, out) == 8);
	for (uint32_t i = 0; i < 8; i++) {
		INFO("key " << i);
		CHECK(out[i].rc == 0);
		CHECK(out[i].loc.device == i % 2);
		CHECK(out[i].loc.slot == i / 2);
		CHECK(out[i].loc.id == (i % 2) * 4 + i / 2);
		CHECK(out[i].invalidate == 0); // a fresh store: nothing on the devices reads VALID
		CHECK(out[i].evicted == 0);
	}
	gio__kv_stats st = ix.stats();
	CHECK(st.capacity == 8);
	CHECK(st.used == 8);
	CHECK(st.free == 0);
	CHECK(st.writing == 8);
	CHECK(st.valid == 0);
	CHECK(st.pinned == 8);
	ix.check();

	// Being written: invisible to lookups, and a second allocation of the key is refused.
	gio__kv_loc loc;
	CHECK(gio__kv_index_lookup(ix, keys[3], 0, &loc) == -ENOENT);
	gio__kv_alloc again;
	CHECK(gio__kv_index_alloc(ix, &keys[3], 1, &again) == 0);
	CHECK(again.rc == -EEXIST);
	// Nothing is evictable while all are being written.
	gio_kv_u128 more = K(999);
	CHECK(gio__kv_index_alloc(ix, &more, 1, &again) == 0);
	CHECK(again.rc == -ENOSPC);
	CHECK(std::string(gio_last_error()).find("found no slot") != std::string::npos);

	for (uint32_t i = 0; i < 8; i++)
		REQUIRE(gio__kv_index_commit(ix, out[i].loc.id, 10 + i) == 0);
	st = ix.stats();
	CHECK(st.valid == 8);
	CHECK(st.writing == 0);
	CHECK(st.pinned == 0);
	CHECK(st.max_seq == 17);
	for (uint32_t i = 0; i < 8; i++) {
		REQUIRE(gio__kv_index_lookup(ix, keys[i], 0, &loc) == 0);
		CHECK(loc.id == out[i].loc.id);
		CHECK(loc.device == out[i].loc.device);
		CHECK(loc.slot == out[i].loc.slot);
	}
	st = ix.stats();
	CHECK(st.hits == 8);
	CHECK(st.misses == 1);
	ix.check();

	// Full: the next allocation evicts the LRU entry of the device whose turn it is (device 0:
	// keys 0, 2, 4, 6 were looked up in that order, so key 0 is its least recent).
	gio__kv_alloc e = ix.alloc(K(200));
	CHECK(e.loc.device == 0);
	CHECK(e.evicted == 1);
	CHECK(gio_kv_u128_eq(e.evicted_key, keys[0]));
	CHECK(e.loc.id == out[0].loc.id);
	CHECK(e.invalidate == 1);
	CHECK(gio__kv_index_lookup(ix, keys[0], 0, &loc) == -ENOENT);
	e = ix.alloc(K(201));
	CHECK(e.loc.device == 1);
	CHECK(gio_kv_u128_eq(e.evicted_key, keys[1]));
	CHECK(ix.stats().evictions == 2);
	ix.check();
}

TEST_CASE("kv index: eviction order is least recently used first")
{
	Index ix({4});
	const gio_kv_u128 A = K(1), B = K(2), C = K(3), D = K(4), E = K(5), F = K(6), G = K(7);
	ix.put(A, 1);
	ix.put(B, 2);
	ix.put(C, 3);
	ix.put(D, 4); // MRU -> LRU: D C B A
	gio__kv_loc loc;
	REQUIRE(gio__kv_index_lookup(ix, A, 0, &loc) == 0); // A D C B
	gio__kv_alloc a = ix.alloc(E);
	CHECK(gio_kv_u128_eq(a.evicted_key, B));
	REQUIRE(gio__kv_index_commit(ix, a.loc.id, 5) == 0); // E A D C
	a = ix.alloc(F);
	CHECK(gio_kv_u128_eq(a.evicted_key, C));
	REQUIRE(gio__kv_index_commit(ix, a.loc.id, 6) == 0); // F E A D
	REQUIRE(gio__kv_index_lookup(ix, D, 0, &loc) == 0);  // D F E A
	a = ix.alloc(G);
	CHECK(gio_kv_u128_eq(a.evicted_key, A));
	REQUIRE(gio__kv_index_commit(ix, a.loc.id, 7) == 0); // G D F E
	a = ix.alloc(A);
	CHECK(gio_kv_u128_eq(a.evicted_key, E));
	CHECK(ix.stats().evictions == 4);
	ix.check();
}

TEST_CASE("kv index: pins block eviction; everything pinned is -ENOSPC")
{
	Index ix({2});
	const gio_kv_u128 A = K(1), B = K(2), C = K(3), D = K(4);
	const gio__kv_alloc a = ix.put(A, 1);
	const gio__kv_alloc b = ix.put(B, 2);
	gio__kv_loc loc;
	REQUIRE(gio__kv_index_lookup(ix, A, 1, &loc) == 0); // pinned by a reader
	CHECK(loc.id == a.loc.id);
	REQUIRE(gio__kv_index_pin(ix, b.loc.id) == 0);
	REQUIRE(gio__kv_index_pin(ix, b.loc.id) == 0); // twice
	CHECK(ix.stats().pinned == 2);

	gio__kv_alloc r;
	CHECK(gio__kv_index_alloc(ix, &C, 1, &r) == 0);
	CHECK(r.rc == -ENOSPC);
	CHECK(r.loc.id == GIO__KV_NIL);
	CHECK(gio__kv_index_remove(ix, B, nullptr) == -EBUSY);

	REQUIRE(gio__kv_index_unpin(ix, b.loc.id) == 0);
	CHECK(gio__kv_index_alloc(ix, &C, 1, &r) == 0); // B still has one pin
	CHECK(r.rc == -ENOSPC);
	REQUIRE(gio__kv_index_unpin(ix, b.loc.id) == 0);
	CHECK(ix.stats().pinned == 1);
	CHECK(gio__kv_index_unpin(ix, b.loc.id) == -EINVAL); // no pin left
	CHECK(std::string(gio_last_error()).find("unpin") != std::string::npos);

	r = ix.alloc(C); // B evicted: A is pinned, though older
	CHECK(gio_kv_u128_eq(r.evicted_key, B));
	// C is being written and A pinned: nothing left.
	gio__kv_alloc r2;
	CHECK(gio__kv_index_alloc(ix, &D, 1, &r2) == 0);
	CHECK(r2.rc == -ENOSPC);
	// A's reader finishes: A goes to the MRU end but is the only candidate.
	REQUIRE(gio__kv_index_unpin(ix, a.loc.id) == 0);
	r2 = ix.alloc(D);
	CHECK(gio_kv_u128_eq(r2.evicted_key, A));
	ix.check();
}

TEST_CASE("kv index: consecutive allocations spread over the devices")
{
	Index ix({16, 16, 16, 16});
	uint64_t seq = 0;
	for (uint64_t round = 0; round < 2; round++) { // the second round evicts
		for (uint32_t batch = 0; batch < 8; batch++) {
			gio_kv_u128 keys[8];
			gio__kv_alloc out[8];
			for (uint32_t i = 0; i < 8; i++)
				keys[i] = K(round * 1000 + batch * 8 + i, 7);
			REQUIRE(gio__kv_index_alloc(ix, keys, 8, out) == 8);
			for (uint32_t i = 0; i < 8; i++) {
				INFO("round " << round << " batch " << batch << " key " << i);
				CHECK(out[i].loc.device == i % 4);
				CHECK(out[i].evicted == (round == 1 ? 1 : 0));
				REQUIRE(gio__kv_index_commit(ix, out[i].loc.id, ++seq) == 0);
			}
		}
		CHECK(ix.stats().free == 0);
	}
	CHECK(ix.stats().evictions == 64);

	// Unequal devices: free slots are used first wherever they are, then eviction goes
	// round-robin again.
	Index un({2, 8});
	std::vector<uint32_t> devs;
	for (uint64_t i = 0; i < 14; i++)
		devs.push_back(un.put(K(i), i + 1).loc.device);
	const std::vector<uint32_t> want = {0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1};
	CHECK(devs == want);
	un.check();
}

TEST_CASE("kv index: a batch reports each key; duplicates and present keys get -EEXIST")
{
	Index ix({3});
	ix.put(K(1), 1);
	const gio_kv_u128 keys[5] = {K(2), K(1), K(2), K(3), K(4)};
	gio__kv_alloc out[5];
	CHECK(gio__kv_index_alloc(ix, keys, 5, out) == 3);
	CHECK(out[0].rc == 0);
	CHECK(out[1].rc == -EEXIST); // VALID already
	CHECK(out[2].rc == -EEXIST); // earlier in the batch
	CHECK(out[3].rc == 0);
	// The last free slot went to K(3): K(4) evicts K(1), which the batch named but did not touch
	// (a lookup would have made it recent).
	CHECK(out[4].rc == 0);
	CHECK(out[4].evicted == 1);
	CHECK(gio_kv_u128_eq(out[4].evicted_key, K(1)));
	const gio_kv_u128 k5 = K(5);
	CHECK(gio__kv_index_alloc(ix, &k5, 1, out) == 0); // all three being written
	CHECK(out[0].rc == -ENOSPC);
	ix.check();
	CHECK(gio__kv_index_alloc(ix, nullptr, 0, nullptr) == 0);
	CHECK(gio__kv_index_alloc(ix, nullptr, 1, out) == -EINVAL);
}

TEST_CASE("kv index: commit, abort and remove, and the stale flag")
{
	Index ix({2});
	const gio_kv_u128 A = K(1), B = K(2);
	gio__kv_alloc a = ix.alloc(A);
	CHECK(a.invalidate == 0);
	CHECK(gio__kv_index_commit(ix, a.loc.id, 0) == -EINVAL); // sequence 0 is never VALID
	REQUIRE(gio__kv_index_abort(ix, a.loc.id) == 0);
	CHECK(gio__kv_index_abort(ix, a.loc.id) == -EINVAL);
	CHECK(gio__kv_index_commit(ix, a.loc.id, 1) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("commit of slot 0, which is free") != std::string::npos);
	uint32_t state = 9;
	int stale = 0;
	REQUIRE(gio__kv_index_peek(ix, a.loc.id, nullptr, &state, nullptr, &stale, nullptr, nullptr) == 0);
	CHECK(state == GIO__KV_FREE);
	CHECK(stale == 1); // an aborted write may have reached its VALID entry

	// The slot that was never used comes first (FIFO), then the aborted one, stale.
	gio__kv_alloc b = ix.alloc(B);
	CHECK(b.loc.slot == 1);
	CHECK(b.invalidate == 0);
	a = ix.alloc(A); // the key is free again
	CHECK(a.loc.slot == 0);
	CHECK(a.invalidate == 1);
	REQUIRE(gio__kv_index_commit(ix, a.loc.id, 5) == 0);
	REQUIRE(gio__kv_index_commit(ix, b.loc.id, 6) == 0);
	REQUIRE(gio__kv_index_peek(ix, b.loc.id, nullptr, &state, nullptr, &stale, nullptr, nullptr) == 0);
	CHECK(state == GIO__KV_VALID);
	CHECK(stale == 1); // committed: its entry reads VALID until someone writes it FREE
	CHECK(gio__kv_index_pin(ix, 2) == -EINVAL); // out of range
	CHECK(gio__kv_index_remove(ix, K(3), nullptr) == -ENOENT);

	REQUIRE(gio__kv_index_remove(ix, A, nullptr) == 0);
	gio__kv_loc loc;
	CHECK(gio__kv_index_lookup(ix, A, 0, &loc) == -ENOENT);
	gio__kv_alloc c = ix.alloc(K(3));
	CHECK(c.loc.slot == 0);
	CHECK(c.invalidate == 1); // A's entry is still VALID on the device
	CHECK(c.evicted == 0);
	CHECK(gio__kv_index_remove(ix, K(3), nullptr) == -EBUSY); // being written
	uint64_t seq = 0;
	gio_kv_u128 key;
	REQUIRE(gio__kv_index_peek(ix, c.loc.id, &loc, &state, nullptr, nullptr, &key, &seq) == 0);
	CHECK(state == GIO__KV_WRITING);
	CHECK(gio_kv_u128_eq(key, K(3)));
	CHECK(seq == 5); // the last sequence the slot held
	ix.check();
}

TEST_CASE("kv index: rebuild resolves duplicates by the higher sequence")
{
	Index ix({4, 4});
	const gio_kv_u128 K1 = K(11), K2 = K(22), K3 = K(33);
	gio__kv_loc lost;
	CHECK(gio__kv_index_rebuild_insert(ix, K1, 0, 0, 5, &lost) == 0);
	CHECK(gio__kv_index_rebuild_insert(ix, K2, 1, 0, 3, &lost) == 0);
	// K1 again with a higher sequence: the first copy loses.
	REQUIRE(gio__kv_index_rebuild_insert(ix, K1, 1, 2, 9, &lost) == 1);
	CHECK(lost.device == 0);
	CHECK(lost.slot == 0);
	// K2 again with a lower one: the new copy loses.
	REQUIRE(gio__kv_index_rebuild_insert(ix, K2, 0, 3, 2, &lost) == 1);
	CHECK(lost.device == 0);
	CHECK(lost.slot == 3);
	// A tie keeps the one already there.
	REQUIRE(gio__kv_index_rebuild_insert(ix, K2, 1, 3, 3, &lost) == 1);
	CHECK(lost.device == 1);
	CHECK(lost.slot == 3);
	CHECK(gio__kv_index_rebuild_insert(ix, K3, 0, 1, 7, nullptr) == 0);

	CHECK(gio__kv_index_rebuild_insert(ix, K(44), 1, 2, 10, &lost) == -EINVAL); // slot in use
	CHECK(gio__kv_index_rebuild_insert(ix, K(44), 2, 0, 10, &lost) == -EINVAL); // no device 2
	CHECK(gio__kv_index_rebuild_insert(ix, K(44), 0, 4, 10, &lost) == -EINVAL); // no slot 4
	CHECK(gio__kv_index_rebuild_insert(ix, K(44), 0, 2, 0, &lost) == -EINVAL);  // sequence 0
	REQUIRE(gio__kv_index_mark_stale(ix, 1, 1) == 0); // its entry could not be read
	CHECK(gio__kv_index_mark_stale(ix, 1, 2) == -EINVAL); // VALID
	REQUIRE(gio__kv_index_rebuild_done(ix) == 0);
	ix.check();

	gio__kv_stats st = ix.stats();
	CHECK(st.valid == 3);
	CHECK(st.free == 5);
	CHECK(st.duplicates == 3);
	CHECK(st.max_seq == 9);
	gio__kv_loc loc;
	REQUIRE(gio__kv_index_lookup(ix, K1, 0, &loc) == 0);
	CHECK(loc.device == 1);
	CHECK(loc.slot == 2);
	REQUIRE(gio__kv_index_lookup(ix, K2, 0, &loc) == 0);
	CHECK(loc.device == 1);
	CHECK(loc.slot == 0);

	// The free lists: device 0 has 2, 3 (lost to K2's copy of sequence 3) and 0 (K1's first
	// copy, pushed last); device 1 has 1 (marked stale) and 3 (lost the tie). Every loser's
	// entry still reads VALID on its device: stale. Round-robin from device 0, the one after
	// device 1, which holds the highest sequence (K1's 9).
	const uint32_t want_dev[5] = {0, 1, 0, 1, 0};
	const uint64_t want_slot[5] = {2, 1, 3, 3, 0};
	const int want_inval[5] = {0, 1, 1, 1, 1};
	for (int i = 0; i < 5; i++) {
		const gio__kv_alloc a = ix.alloc(K(100 + i));
		INFO("allocation " << i);
		CHECK(a.loc.device == want_dev[i]);
		CHECK(a.loc.slot == want_slot[i]);
		CHECK(a.invalidate == want_inval[i]);
		REQUIRE(gio__kv_index_commit(ix, a.loc.id, 20 + i) == 0);
	}
	ix.check();
}

TEST_CASE("kv index: after a rebuild the oldest commits are evicted first")
{
	Index ix({4});
	const uint64_t seqs[4] = {40, 10, 30, 20}; // slots 0-3, scanned in slot order
	for (uint64_t s = 0; s < 4; s++)
		REQUIRE(gio__kv_index_rebuild_insert(ix, K(s), 0, s, seqs[s], nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_done(ix) == 0);
	ix.check();
	const uint64_t order[4] = {1, 3, 2, 0}; // by sequence
	for (int i = 0; i < 4; i++) {
		const gio__kv_alloc a = ix.alloc(K(100 + i));
		CHECK(a.evicted == 1);
		CHECK(gio_kv_u128_eq(a.evicted_key, K(order[i])));
		CHECK(a.loc.slot == order[i]);
	}
}

TEST_CASE("kv index: after a rebuild allocation continues after the device of the last commit")
{
	// Device 2 holds the highest sequence, so the last writer's next chunk would have gone to
	// device 3: placement continues there, then wraps to 0.
	Index ix({2, 2, 2, 2});
	REQUIRE(gio__kv_index_rebuild_insert(ix, K(1), 0, 0, 10, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_insert(ix, K(2), 1, 0, 11, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_insert(ix, K(3), 2, 0, 12, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_insert(ix, K(4), 3, 0, 8, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_done(ix) == 0);
	ix.check();
	const uint32_t want[4] = {3, 0, 1, 2};
	for (int i = 0; i < 4; i++) {
		INFO("allocation " << i);
		CHECK(ix.alloc(K(100 + i)).loc.device == want[i]);
	}
	ix.check();

	// The highest sequence on the last device: the cursor wraps to device 0.
	Index wrap({2, 2, 2, 2});
	REQUIRE(gio__kv_index_rebuild_insert(wrap, K(1), 1, 1, 5, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_insert(wrap, K(2), 3, 0, 6, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_done(wrap) == 0);
	CHECK(wrap.alloc(K(100)).loc.device == 0);

	// A key found twice with one sequence: the copy kept (device 1, scanned first) holds the last
	// commit, not the losing one on device 2, now a free slot.
	Index dup({2, 2, 2, 2});
	REQUIRE(gio__kv_index_rebuild_insert(dup, K(1), 1, 0, 9, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_insert(dup, K(1), 2, 0, 9, nullptr) == 1);
	REQUIRE(gio__kv_index_rebuild_insert(dup, K(2), 0, 0, 3, nullptr) == 0);
	REQUIRE(gio__kv_index_rebuild_done(dup) == 0);
	CHECK(dup.alloc(K(100)).loc.device == 2);

	// Nothing rebuilt: a fresh store starts at device 0.
	Index none({2, 2, 2, 2});
	REQUIRE(gio__kv_index_rebuild_done(none) == 0);
	CHECK(none.alloc(K(100)).loc.device == 0);
}

TEST_CASE("kv index: creation refusals, empty devices, counters")
{
	gio__kv_index *ix = nullptr;
	const uint64_t none[1] = {0};
	CHECK(gio__kv_index_create(&ix, none, 0) == -EINVAL);
	const uint64_t huge[2] = {GIO__KV_MAX_CAPACITY, 1};
	CHECK(gio__kv_index_create(&ix, huge, 2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("device 1") != std::string::npos);

	Index empty({0});
	gio__kv_alloc a;
	const gio_kv_u128 k = K(1);
	CHECK(gio__kv_index_alloc(empty, &k, 1, &a) == 0);
	CHECK(a.rc == -ENOSPC);
	empty.check();

	Index ix2({0, 3, 0, 2});
	std::vector<uint32_t> devs;
	for (uint64_t i = 0; i < 5; i++)
		devs.push_back(ix2.alloc(K(i)).loc.device);
	CHECK(devs == std::vector<uint32_t>({1, 3, 1, 3, 1}));
	uint32_t id = 0;
	CHECK(gio__kv_index_locate(ix2, 3, 1, &id) == 0);
	CHECK(id == 4);
	CHECK(gio__kv_index_locate(ix2, 0, 0, &id) == -EINVAL);
	gio__kv_index_add_bytes(ix2, 100, 7);
	gio__kv_index_add_bytes(ix2, 1, 3);
	const gio__kv_stats st = ix2.stats();
	CHECK(st.bytes_read == 101);
	CHECK(st.bytes_written == 10);
	CHECK(st.capacity == 5);
	ix2.check();
}

namespace {

// The index's rules (index.h) written the plain way: linear scans and standard containers.
struct Model {
	struct Slot {
		int state = GIO__KV_FREE;
		uint32_t pins = 0;
		int stale = 0;
		gio_kv_u128 key{0, 0};
		uint64_t seq = 0;
		uint32_t dev = 0;
	};
	std::vector<Slot> s;
	std::vector<uint32_t> base;
	std::vector<std::list<uint32_t>> freel, lru; // lru: front is the most recent
	std::map<std::pair<uint64_t, uint64_t>, uint32_t> keys;
	uint32_t cursor = 0;
	uint64_t hits = 0, misses = 0, evictions = 0;

	explicit Model(const std::vector<uint64_t> &slots)
	{
		uint32_t id = 0;
		for (uint32_t d = 0; d < slots.size(); d++) {
			base.push_back(id);
			freel.emplace_back();
			lru.emplace_back();
			for (uint64_t i = 0; i < slots[d]; i++, id++) {
				Slot x;
				x.dev = d;
				s.push_back(x);
				freel[d].push_back(id);
			}
		}
	}
	static std::pair<uint64_t, uint64_t> kk(gio_kv_u128 k) { return {k.lo, k.hi}; }
	uint32_t ndev() const { return (uint32_t)freel.size(); }

	int lookup(gio_kv_u128 key, int pin, uint32_t *id)
	{
		auto it = keys.find(kk(key));
		if (it == keys.end() || s[it->second].state != GIO__KV_VALID) {
			misses++;
			return -ENOENT;
		}
		*id = it->second;
		Slot &x = s[*id];
		if (pin) {
			if (x.pins++ == 0)
				lru[x.dev].remove(*id);
		} else if (x.pins == 0) {
			lru[x.dev].remove(*id);
			lru[x.dev].push_front(*id);
		}
		hits++;
		return 0;
	}
	gio__kv_alloc alloc1(gio_kv_u128 key)
	{
		gio__kv_alloc a;
		memset(&a, 0, sizeof(a));
		a.loc.id = GIO__KV_NIL;
		if (keys.count(kk(key))) {
			a.rc = -EEXIST;
			return a;
		}
		uint32_t id = GIO__KV_NIL;
		for (uint32_t k = 0; k < ndev() && id == GIO__KV_NIL; k++) {
			const uint32_t d = (cursor + k) % ndev();
			if (!freel[d].empty()) {
				id = freel[d].front();
				freel[d].pop_front();
				a.invalidate = s[id].stale;
				cursor = (d + 1) % ndev();
			}
		}
		for (uint32_t k = 0; k < ndev() && id == GIO__KV_NIL; k++) {
			const uint32_t d = (cursor + k) % ndev();
			if (!lru[d].empty()) {
				id = lru[d].back();
				lru[d].pop_back();
				keys.erase(kk(s[id].key));
				evictions++;
				a.evicted = 1;
				a.evicted_key = s[id].key;
				a.invalidate = 1;
				cursor = (d + 1) % ndev();
			}
		}
		if (id == GIO__KV_NIL) {
			a.rc = -ENOSPC;
			return a;
		}
		s[id].key = key;
		s[id].state = GIO__KV_WRITING;
		s[id].pins = 1;
		keys[kk(key)] = id;
		a.loc.id = id;
		a.loc.device = s[id].dev;
		a.loc.slot = id - base[s[id].dev];
		return a;
	}
	void commit(uint32_t id, uint64_t seq)
	{
		Slot &x = s[id];
		x.state = GIO__KV_VALID;
		x.seq = seq;
		x.stale = 1;
		x.pins = 0;
		lru[x.dev].push_front(id);
	}
	void to_free(uint32_t id)
	{
		Slot &x = s[id];
		keys.erase(kk(x.key));
		x.state = GIO__KV_FREE;
		x.pins = 0;
		x.stale = 1;
		freel[x.dev].push_back(id);
	}
	int remove(gio_kv_u128 key)
	{
		auto it = keys.find(kk(key));
		if (it == keys.end())
			return -ENOENT;
		const uint32_t id = it->second;
		if (s[id].state != GIO__KV_VALID || s[id].pins)
			return -EBUSY;
		lru[s[id].dev].remove(id);
		to_free(id);
		return 0;
	}
	int unpin(uint32_t id)
	{
		if (s[id].state != GIO__KV_VALID || s[id].pins == 0)
			return -EINVAL;
		if (--s[id].pins == 0)
			lru[s[id].dev].push_front(id);
		return 0;
	}
	void expect_stats(const gio__kv_stats &st) const
	{
		uint64_t nfree = 0, nvalid = 0, nwriting = 0, npinned = 0;
		for (const Slot &x : s) {
			nfree += x.state == GIO__KV_FREE;
			nvalid += x.state == GIO__KV_VALID;
			nwriting += x.state == GIO__KV_WRITING;
			npinned += x.pins > 0;
		}
		CHECK(st.capacity == s.size());
		CHECK(st.free == nfree);
		CHECK(st.valid == nvalid);
		CHECK(st.writing == nwriting);
		CHECK(st.used == nvalid + nwriting);
		CHECK(st.pinned == npinned);
		CHECK(st.hits == hits);
		CHECK(st.misses == misses);
		CHECK(st.evictions == evictions);
	}
};

void random_run(const std::vector<uint64_t> &slots, uint64_t nkeys, int ops, uint64_t seed)
{
	Index ix(slots);
	Model m(slots);
	std::mt19937_64 rng(seed);
	std::vector<gio_kv_u128> space;
	for (uint64_t i = 0; i < nkeys; i++) // half counters (weak keys for a hash), half random
		space.push_back(i % 2 ? K(i, 0) : K(rng(), rng()));
	uint64_t seq = 0;
	auto pick = [&](int filter) -> uint32_t { // a random slot in a state, or NIL
		std::vector<uint32_t> c;
		for (uint32_t id = 0; id < m.s.size(); id++)
			if ((filter == 0 && m.s[id].state == GIO__KV_WRITING) ||
			    (filter == 1 && m.s[id].state == GIO__KV_VALID && m.s[id].pins))
				c.push_back(id);
		return c.empty() ? GIO__KV_NIL : c[rng() % c.size()];
	};
	for (int op = 0; op < ops; op++) {
		const unsigned r = (unsigned)(rng() % 100);
		INFO("op " << op << " kind " << r);
		if (r < 25) {
			const uint32_t n = 1 + (uint32_t)(rng() % 4);
			gio_kv_u128 keys[4];
			gio__kv_alloc got[4];
			for (uint32_t i = 0; i < n; i++)
				keys[i] = space[rng() % space.size()];
			int want_done = 0;
			std::vector<gio__kv_alloc> want;
			for (uint32_t i = 0; i < n; i++) {
				want.push_back(m.alloc1(keys[i]));
				want_done += want.back().rc == 0;
			}
			REQUIRE(gio__kv_index_alloc(ix, keys, n, got) == want_done);
			for (uint32_t i = 0; i < n; i++) {
				REQUIRE(got[i].rc == want[i].rc);
				REQUIRE(got[i].loc.id == want[i].loc.id);
				if (got[i].rc == 0) {
					REQUIRE(got[i].loc.device == want[i].loc.device);
					REQUIRE(got[i].loc.slot == want[i].loc.slot);
					REQUIRE(got[i].invalidate == want[i].invalidate);
					REQUIRE(got[i].evicted == want[i].evicted);
					if (got[i].evicted)
						REQUIRE(gio_kv_u128_eq(got[i].evicted_key, want[i].evicted_key));
				}
			}
		} else if (r < 50) {
			const int n = 1 + (int)(rng() % 4);
			for (int i = 0; i < n; i++) {
				const uint32_t id = pick(0);
				if (id == GIO__KV_NIL)
					break;
				m.commit(id, ++seq);
				REQUIRE(gio__kv_index_commit(ix, id, seq) == 0);
			}
		} else if (r < 54) {
			const uint32_t id = pick(0);
			if (id != GIO__KV_NIL) {
				m.to_free(id);
				REQUIRE(gio__kv_index_abort(ix, id) == 0);
			}
		} else if (r < 84) {
			const gio_kv_u128 key = space[rng() % space.size()];
			const int pin = rng() % 10 < 3;
			uint32_t want_id = GIO__KV_NIL;
			gio__kv_loc loc;
			const int want = m.lookup(key, pin, &want_id);
			REQUIRE(gio__kv_index_lookup(ix, key, pin, &loc) == want);
			if (want == 0)
				REQUIRE(loc.id == want_id);
		} else if (r < 94) {
			const uint32_t id = pick(1);
			if (id != GIO__KV_NIL) {
				REQUIRE(m.unpin(id) == 0);
				REQUIRE(gio__kv_index_unpin(ix, id) == 0);
			}
		} else {
			const gio_kv_u128 key = space[rng() % space.size()];
			REQUIRE(gio__kv_index_remove(ix, key, nullptr) == m.remove(key));
		}
		m.expect_stats(ix.stats());
		if (op % 1000 == 0)
			ix.check();
	}
	ix.check();
	const gio__kv_stats st = ix.stats();
	INFO("hits " << st.hits << " misses " << st.misses << " evictions " << st.evictions);
	CHECK(st.evictions > 0);
	CHECK(st.hits > 0);
}

} // namespace

TEST_CASE("kv index: random operations against a reference model")
{
	SECTION("four devices, one empty") { random_run({50, 0, 37, 64}, 400, 200000, 1); }
	SECTION("one small device: long hash clusters") { random_run({8}, 40, 100000, 2); }
}

TEST_CASE("kv index: performance sanity (printed, not asserted)")
{
	using clock = std::chrono::steady_clock;
	const uint64_t per_dev = 1u << 18, ndev = 4, cap = per_dev * ndev;
	Index ix(std::vector<uint64_t>(ndev, per_dev));
	std::mt19937_64 rng(3);
	std::vector<gio_kv_u128> keys(cap);
	for (auto &k : keys)
		k = K(rng(), rng());
	std::vector<gio__kv_alloc> out(256);
	auto t0 = clock::now();
	for (uint64_t i = 0; i < cap; i += 256) {
		REQUIRE(gio__kv_index_alloc(ix, &keys[i], 256, out.data()) == 256);
		for (auto &a : out)
			gio__kv_index_commit(ix, a.loc.id, i + 1);
	}
	auto t1 = clock::now();
	const uint64_t nlook = 4 * cap;
	uint64_t found = 0;
	gio__kv_loc loc;
	for (uint64_t i = 0; i < nlook; i++)
		found += gio__kv_index_lookup(ix, keys[rng() % cap], 0, &loc) == 0;
	auto t2 = clock::now();
	for (uint64_t i = 0; i < cap; i++)
		found += gio__kv_index_lookup(ix, K(rng(), 1), 0, &loc) == 0;
	auto t3 = clock::now();
	for (uint64_t i = 0; i < cap; i += 256) { // all evictions
		for (uint64_t j = 0; j < 256; j++)
			keys[j] = K(rng(), 2);
		REQUIRE(gio__kv_index_alloc(ix, keys.data(), 256, out.data()) == 256);
		for (auto &a : out)
			gio__kv_index_commit(ix, a.loc.id, cap + i + 1);
	}
	auto t4 = clock::now();
	CHECK(found == nlook);
	ix.check();
	auto ns = [](clock::duration d, uint64_t n) { return std::chrono::duration<double, std::nano>(d).count() / n; };
	std::printf("kv index, %llu slots on %llu devices: alloc+commit %.1f ns, lookup hit %.1f ns, lookup miss %.1f ns, "
		    "alloc+commit with eviction %.1f ns\n",
		    (unsigned long long)cap, (unsigned long long)ndev, ns(t1 - t0, cap), ns(t2 - t1, nlook),
		    ns(t3 - t2, cap), ns(t4 - t3, cap));
}
