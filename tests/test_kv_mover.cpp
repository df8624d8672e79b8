// The copy-engine mover of staged loads (src/kv/mover.h, docs/staged.md "Design E"), with a
// memcpy copier standing in for the copy engine: a group's request moves exactly the objects its
// mask names, from the slots its first ticket names (wrapping the ring), into their runs of the
// pool, then marks the group with the batch's epoch; requests of another batch, repeats, and
// requests after the batch closed move nothing; a copier error stops the moves and close reports
// it; the thread serves groups that ask from other threads.
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/kv/staged.h>
#include <giouring/ring/clock.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../src/kv/mover.h"
#include "kv_contiguous.h"

namespace {

// Runs the copies at once, or fails them with `fail` (a CUDA error number).
struct memcpy_copier {
	int fail = 0;
	std::atomic<uint64_t> copies{0}, marks{0}, queries{0};
};

int cp_copy(void *ctx, void *const *dst, const void *const *src, const size_t *len, size_t n)
{
	auto *c = static_cast<memcpy_copier *>(ctx);
	if (c->fail)
		return c->fail;
	for (size_t k = 0; k < n; k++)
		std::memcpy(dst[k], src[k], len[k]);
	c->copies += n;
	return 0;
}

int cp_mark(void *ctx, uint32_t *const *dst, uint32_t value, size_t n)
{
	auto *c = static_cast<memcpy_copier *>(ctx);
	for (size_t k = 0; k < n; k++)
		__atomic_store_n(dst[k], value, __ATOMIC_RELEASE);
	c->marks += n;
	return 0;
}

int cp_query(void *ctx)
{
	static_cast<memcpy_copier *>(ctx)->queries++;
	return 0;
}

const gio__kv_mover_ops kOps = {cp_copy, cp_mark, cp_query, nullptr};

const uint32_t kLayers = 3, kBlocks = 6, kSlots = 32, kQps = 2, kGcap = 4;

// One staged device, two queue pairs, and a pool whose objects are two runs (K and V apart).
struct rig {
	gio_kv_pool pool{};
	gio_kv_runs runs{};
	std::vector<uint8_t> pool_mem, area;
	std::vector<uint32_t> words[kQps];
	gio_stage rings[kQps]{};
	gio_kv_io_stage stage{};
	const gio_kv_io_stage *stages[1] = {&stage};
	gio_kv_io_dev dev{};
	std::vector<gio_kv_io_req> reqs;
	std::vector<gio_kv_io_group> groups;
	std::vector<gio_kv_move_req> req;
	std::vector<uint32_t> done;
	uint64_t slot_bytes = 512;

	rig()
	{
		// Extents L B P N H C, order P L B N H C: K and V of an object are two runs of 128 bytes.
		const uint32_t ext[GIO_KV_DIMS] = {kLayers, kBlocks, 2, 2, 4, 8};
		pool = kv_contiguous_pool("PLBNHC", ext, 2, 0);
		const uint64_t s = (uint64_t)kLayers * kBlocks * 2 * 2 * 4 * 8;
		pool_mem.assign(s * 2, 0xee);
		pool.base = (uint64_t)(uintptr_t)pool_mem.data();
		REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
		REQUIRE(runs.object_bytes == 256);
		area.assign(kQps * kSlots * slot_bytes, 0);
		for (uint32_t q = 0; q < kQps; q++) {
			words[q].assign(kSlots, 0);
			REQUIRE(gio_stage_init(&rings[q], words[q].data(), kSlots, slot_bytes, 0x100000 + q * kSlots * slot_bytes,
					       GIO_SCOPE_SYS) == 0);
		}
		stage.rings = rings;
		stage.area = area.data();
		dev.nqps = kQps;
		dev.cmds = 1;
		dev.stage = &stage;
		// Group 0: requests 0-2 on queue pair 0; group 1: requests 3-4 on queue pair 1.
		reqs = {{0, 2, 0, 0}, {0, 0, 0, 0}, {0, 5, 0, 0}, {0, 1, 0, 0}, {0, 3, 0, 0}};
		groups = {{0, 3, 0, 0}, {3, 2, 0, 1}};
		req.assign(kLayers * kGcap, gio_kv_move_req{});
		done.assign(kLayers * kGcap, 0);
	}

	gio__kv_mover_batch batch(uint32_t epoch)
	{
		gio__kv_mover_batch b{};
		b.epoch = epoch;
		b.layers = kLayers;
		b.ngroups = (uint32_t)groups.size();
		b.groups = groups.data();
		b.reqs = reqs.data();
		b.devs = &dev;
		b.stages = stages;
		b.pool = &pool;
		b.runs = &runs;
		return b;
	}

	uint8_t *slot(uint32_t q, uint32_t ticket)
	{
		return area.data() + (uint64_t)q * kSlots * slot_bytes + gio_stage_offset(&rings[q], ticket);
	}

	// What the controller would have read into request i's slot for layer l.
	void fill(uint32_t l, uint32_t g, uint32_t slot0)
	{
		const gio_kv_io_group &grp = groups[g];
		for (uint32_t k = 0; k < grp.count; k++)
			for (uint32_t b = 0; b < runs.object_bytes; b++)
				slot(grp.qp % kQps, slot0 + k)[b] = (uint8_t)(l * 59 + (grp.first + k) * 13 + b);
	}

	// Whether request i's object of layer l in the pool holds its slot's bytes (moved), or only
	// the poison (untouched).
	bool moved(uint32_t l, uint32_t i)
	{
		gio_kv_stage_move mv[4];
		const int n = gio_kv_stage_moves(&pool, &runs, l, reqs[i].block, 0, 1, mv, 4);
		REQUIRE(n == 2);
		for (int k = 0; k < n; k++)
			for (uint64_t b = 0; b < mv[k].len; b++)
				if (((uint8_t *)(uintptr_t)mv[k].dst)[b] != (uint8_t)(l * 59 + i * 13 + mv[k].src_off + b))
					return false;
		return true;
	}

	bool untouched(uint32_t l, uint32_t i)
	{
		gio_kv_stage_move mv[4];
		const int n = gio_kv_stage_moves(&pool, &runs, l, reqs[i].block, 0, 1, mv, 4);
		for (int k = 0; k < n; k++)
			for (uint64_t b = 0; b < mv[k].len; b++)
				if (((uint8_t *)(uintptr_t)mv[k].dst)[b] != 0xee)
					return false;
		return true;
	}

	// A warp's request: mask and slot0, then the epoch.
	void ask(uint32_t l, uint32_t g, uint32_t mask, uint32_t slot0, uint32_t epoch)
	{
		gio_kv_move_req &r = req[l * kGcap + g];
		r.mask = mask;
		r.slot0 = slot0;
		__atomic_store_n(&r.epoch, epoch, __ATOMIC_RELEASE);
	}
};

} // namespace

TEST_CASE("the mover moves what a group asks for, once, and marks it after", "[kv][mover]")
{
	rig r;
	memcpy_copier c;
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 0, &m) == 0);
	const gio__kv_mover_batch b = r.batch(7);
	gio__kv_mover_open(m, &b);
	CHECK(gio__kv_mover_pass(m) == 0); // nobody asked

	// Layer 1, group 0: lanes 0 and 2 succeeded (lane 1 did not): two objects of two runs.
	r.fill(1, 0, 5);
	r.ask(1, 0, 0x5, 5, 7);
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(r.moved(1, 0));
	CHECK(r.untouched(1, 1));
	CHECK(r.moved(1, 2));
	CHECK(c.copies == 4);
	CHECK(r.done[1 * kGcap + 0] == 7);
	CHECK(r.done[1 * kGcap + 1] == 0);

	// A request of another batch, and the same request again: nothing.
	r.ask(0, 1, 0x3, 9, 6);
	CHECK(gio__kv_mover_pass(m) == 0);
	CHECK(r.done[0 * kGcap + 1] == 0);
	CHECK(c.copies == 4);

	// Layer 2, group 1 from ticket 31: its second slot wraps to slot 0 of queue pair 1's ring.
	r.fill(2, 1, 31);
	r.ask(2, 1, 0x3, 31, 7);
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(r.moved(2, 3));
	CHECK(r.moved(2, 4));
	CHECK(r.done[2 * kGcap + 1] == 7);

	// A group whose lanes all failed is marked with nothing moved (its warp need not wait).
	r.ask(0, 0, 0, 0, 7);
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(r.done[0 * kGcap + 0] == 7);
	CHECK(r.untouched(0, 0));

	gio__kv_mover_stats s{};
	gio__kv_mover_info(m, &s);
	CHECK(s.copies == 8);
	CHECK(s.bytes == 4 * 256);
	CHECK(s.groups == 3);
	CHECK(s.calls == 5); // three passes with copies or marks: copies twice, marks three times

	// Closed: a request that comes late moves nothing and is not marked.
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);
	CHECK(c.queries >= 1);
	r.fill(0, 1, 9);
	r.ask(0, 1, 0x3, 9, 7);
	CHECK(gio__kv_mover_pass(m) == 0);
	CHECK(r.done[0 * kGcap + 1] == 0);
	CHECK(r.untouched(0, 3));

	// The next batch: the old epoch's requests are not taken again; the new one's are.
	const gio__kv_mover_batch b8 = r.batch(8);
	gio__kv_mover_open(m, &b8);
	CHECK(gio__kv_mover_pass(m) == 0);
	r.ask(0, 1, 0x3, 9, 8);
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(r.moved(0, 3));
	CHECK(r.moved(0, 4));
	CHECK(r.done[0 * kGcap + 1] == 8);
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);
	gio__kv_mover_destroy(m);
}

TEST_CASE("a copier error stops the mover and close names it", "[kv][mover]")
{
	rig r;
	memcpy_copier c;
	c.fail = 700; // cudaErrorIllegalAddress
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 0, &m) == 0);
	const gio__kv_mover_batch b = r.batch(3);
	gio__kv_mover_open(m, &b);
	r.fill(0, 0, 0);
	r.ask(0, 0, 0x7, 0, 3);
	CHECK(gio__kv_mover_pass(m) == -EIO);
	CHECK(r.done[0] == 0); // not marked: its warp times out, its slots LOST
	c.fail = 0;
	r.ask(1, 0, 0x7, 0, 3);
	CHECK(gio__kv_mover_pass(m) == -EIO); // stopped for the batch
	CHECK(r.done[1 * kGcap] == 0);
	const int rc = gio__kv_mover_close(m, gio_deadline_in(1000000000ull));
	CHECK(rc == gio_cuda_errno(700));
	CHECK(std::string(gio_last_error()).find("copy-engine mover") != std::string::npos);
	// The next batch starts afresh: the error was the last batch's, and its close reported it.
	const gio__kv_mover_batch b5 = r.batch(5);
	gio__kv_mover_open(m, &b5);
	r.fill(1, 0, 0);
	r.ask(1, 0, 0x7, 0, 5);
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(r.done[1 * kGcap] == 5);
	CHECK(r.moved(1, 0));
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);
	gio__kv_mover_destroy(m);
}

TEST_CASE("a thread that cannot attach to its device fails every batch, not only the first", "[kv][mover]")
{
	rig r;
	memcpy_copier c;
	const gio__kv_mover_ops ops = {cp_copy, cp_mark, cp_query, [](void *) { return 101; }}; // cudaErrorInvalidDevice
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&ops, &c, kLayers, kGcap, r.req.data(), r.done.data(), 1, &m) == 0);
	for (uint32_t epoch = 1; epoch <= 2; epoch++) {
		const gio__kv_mover_batch b = r.batch(epoch);
		gio__kv_mover_open(m, &b);
		r.ask(0, 0, 0x1, 0, epoch);
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		CHECK(r.done[0] == 0); // nothing moved, nothing marked
		CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == gio_cuda_errno(101));
	}
	CHECK(c.copies == 0);
	gio__kv_mover_destroy(m);
}

TEST_CASE("a request the mover cannot place is not moved and close says which", "[kv][mover]")
{
	rig r;
	memcpy_copier c;
	r.reqs[1].block = kBlocks; // past the pool
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 0, &m) == 0);
	const gio__kv_mover_batch b = r.batch(4);
	gio__kv_mover_open(m, &b);
	r.ask(2, 0, 0x7, 0, 4);
	CHECK(gio__kv_mover_pass(m) == -EINVAL);
	CHECK(r.done[2 * kGcap] == 0);
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("request 1") != std::string::npos);
	gio__kv_mover_destroy(m);
}

TEST_CASE("the mover's thread serves groups that ask from other threads", "[kv][mover]")
{
	rig r;
	memcpy_copier c;
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 1, &m) == 0);
	for (uint32_t epoch = 1; epoch <= 3; epoch++) {
		for (uint32_t l = 0; l < kLayers; l++) {
			r.fill(l, 0, 8 * l);
			r.fill(l, 1, 8 * l + 30);
		}
		std::fill(r.pool_mem.begin(), r.pool_mem.end(), 0xee);
		const gio__kv_mover_batch b = r.batch(epoch);
		gio__kv_mover_open(m, &b);
		// A "warp" per group: every layer in turn, asking and waiting for its mark (bounded).
		std::atomic<int> late{0};
		std::vector<std::thread> warps;
		for (uint32_t g = 0; g < 2; g++)
			warps.emplace_back([&, g] {
				for (uint32_t l = 0; l < kLayers; l++) {
					r.ask(l, g, g == 0 ? 0x7u : 0x3u, 8 * l + (g ? 30 : 0), epoch);
					const uint64_t deadline = gio_deadline_in(5000000000ull);
					uint32_t spins = 0;
					while (__atomic_load_n(&r.done[l * kGcap + g], __ATOMIC_ACQUIRE) != epoch) {
						if (gio_deadline_passed(deadline)) {
							late++;
							return;
						}
						gio_backoff(&spins);
					}
				}
			});
		for (auto &t : warps)
			t.join();
		REQUIRE(late == 0);
		CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);
		for (uint32_t l = 0; l < kLayers; l++)
			for (uint32_t i = 0; i < 5; i++)
				CHECK(r.moved(l, i));
	}
	gio__kv_mover_stats s{};
	gio__kv_mover_info(m, &s);
	CHECK(s.groups == 3 * kLayers * 2);
	CHECK(s.copies == 3 * kLayers * 5 * 2);
	gio__kv_mover_destroy(m);
}

TEST_CASE("the mover's thread costs no CPU while no batch is open", "[kv][mover]")
{
	rig r;
	memcpy_copier c;
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 1, &m) == 0);
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	gio__kv_mover_stats s{};
	gio__kv_mover_info(m, &s);
	CHECK(s.cpu_ns < 20000000ull); // it sleeps on its condition, not in a poll loop
	// Open, nobody asks: it backs off to short sleeps, well below a core.
	const gio__kv_mover_batch b = r.batch(1);
	gio__kv_mover_open(m, &b);
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	gio__kv_mover_info(m, &s);
	const uint64_t open_ns = s.cpu_ns;
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);
	CHECK(open_ns < 250000000ull);
	gio__kv_mover_destroy(m);
}

TEST_CASE("the mover mirrors each watched CQ's changes into its word, after the pass's copies", "[kv][mover][mirror]")
{
	// Two CQs of 4 entries in "host memory"; their mirror words stand for GPU memory.
	struct cqe16 {
		uint32_t dw[4];
	};
	std::vector<cqe16> cq0(4, cqe16{}), cq1(4, cqe16{});
	cq0[1].dw[3] = 0x00010007; // posted before the watch: not a change
	const void *entries[2] = {cq0.data(), cq1.data()};
	const uint32_t depth[2] = {4, 4};
	uint32_t mirror[2] = {0, 0};
	uint32_t *mirror_at[2] = {&mirror[0], &mirror[1]};
	rig r;
	memcpy_copier c;
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 0, &m) == 0);
	CHECK(gio__kv_mover_watch(m, 0, entries, depth, mirror_at) == -EINVAL);
	CHECK(gio__kv_mover_watch(m, 2, nullptr, depth, mirror_at) == -EINVAL);
	const uint32_t bad_depth[2] = {4, 1};
	CHECK(gio__kv_mover_watch(m, 2, entries, bad_depth, mirror_at) == -EINVAL);
	REQUIRE(gio__kv_mover_watch(m, 2, entries, depth, mirror_at) == 0);
	const gio__kv_mover_batch b = r.batch(3);

	// Not watched while no batch is open: a CQE posted now is seen at the first pass after.
	cq1[0].dw[3] = 0x00010001;
	CHECK(gio__kv_mover_pass(m) == 0);
	CHECK(mirror[1] == 0);
	gio__kv_mover_open(m, &b);
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(mirror[0] == 0);
	CHECK(mirror[1] == 1);
	CHECK(gio__kv_mover_pass(m) == 0); // nothing new: no mark
	CHECK(mirror[1] == 1);

	// A new lap over an old entry changes only its phase bit: a change all the same.
	cq0[1].dw[3] ^= 1u << 16;
	const uint64_t marks = c.marks;
	CHECK(gio__kv_mover_pass(m) == 1);
	CHECK(mirror[0] == 2); // the mover's count of passes that found changes: words only grow
	CHECK(mirror[1] == 1);
	CHECK(c.marks == marks + 1);

	// Both CQs and a group in one pass: the group's copies and mark, then the CQs' marks.
	r.fill(0, 0, 0);
	r.ask(0, 0, 0x1, 0, 3);
	cq0[2].dw[3] = 0x00010002;
	cq1[3].dw[3] = 0x00010003;
	CHECK(gio__kv_mover_pass(m) == 3);
	CHECK(r.moved(0, 0));
	CHECK(r.done[0] == 3);
	CHECK(mirror[0] == 3);
	CHECK(mirror[1] == 3);
	gio__kv_mover_stats s{};
	gio__kv_mover_info(m, &s);
	CHECK(s.cq_marks == 4);
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);

	// Closed: changes wait for the next batch.
	cq1[2].dw[3] = 0x00010004;
	CHECK(gio__kv_mover_pass(m) == 0);
	CHECK(mirror[1] == 3);
	gio__kv_mover_destroy(m);
}

TEST_CASE("the mover's thread mirrors completions posted by another thread, each one seen", "[kv][mover][mirror]")
{
	// A "controller" thread posts CQEs one at a time (a release store of Dword 3, phase flipping
	// every lap of 8 entries) and a "warp" waits, bounded, for the CQ's word to move past what it
	// read before each post: every post must move it, however the passes fall.
	std::vector<uint32_t> cq(8 * 4, 0);
	const void *entries[1] = {cq.data()};
	const uint32_t depth[1] = {8};
	uint32_t word = 0;
	uint32_t *mirror_at[1] = {&word};
	rig r;
	memcpy_copier c;
	gio__kv_mover *m = nullptr;
	REQUIRE(gio__kv_mover_create(&kOps, &c, kLayers, kGcap, r.req.data(), r.done.data(), 1, &m) == 0);
	REQUIRE(gio__kv_mover_watch(m, 1, entries, depth, mirror_at) == 0);
	const gio__kv_mover_batch b = r.batch(5);
	gio__kv_mover_open(m, &b);
	int late = 0;
	for (uint32_t k = 0; k < 40 && !late; k++) {
		const uint32_t before = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
		const uint32_t phase = (k / 8 + 1) & 1u;
		__atomic_store_n(&cq[4 * (k % 8) + 3], (phase << 16) | k, __ATOMIC_RELEASE);
		const uint64_t deadline = gio_deadline_in(5000000000ull);
		uint32_t spins = 0;
		while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == before) {
			if (gio_deadline_passed(deadline)) {
				late = 1;
				break;
			}
			gio_backoff(&spins);
		}
	}
	CHECK(late == 0);
	CHECK(gio__kv_mover_close(m, gio_deadline_in(1000000000ull)) == 0);
	gio__kv_mover_stats s{};
	gio__kv_mover_info(m, &s);
	CHECK(s.cq_marks == 40); // a mark per post: each waited for before the next
	gio__kv_mover_destroy(m);
}
