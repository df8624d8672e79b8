// The staged path end to end on the CPU: chunks stored on two mem://host targets are loaded layer
// by layer through staging areas of 8 slots per device, far fewer than a layer's objects, so that
// every slot is reused many times. The software target's CPU executor writes each command's data
// into its slot (registered memory, at its bus address), this thread reserves slots, submits and
// reaps, and a second thread plays the GPU's mover: it copies each full slot into the pool with
// gio_kv_stage_moves() and releases it. Every byte of every object is checked, and the plan's
// layer words finish as on the peer-to-peer path.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/kv/plan.h>
#include <giouring/kv/staged.h>
#include <giouring/kv/store.h>

#include "kv_chunks.h"
#include "kv_targets.h"

namespace {

const uint64_t kSecond = 1000000000ull;
// 4 layers x 32 blocks, K and V apart (two runs an object), 16 tokens x 2 heads x 64 channels of
// 2 bytes: 8 KiB objects.
const uint32_t kLayers = 4, kBlocks = 32, kTokens = 16, kHeads = 2, kChannels = 64, kChunks = 24, kSlots = 8;
const uint64_t kObject = 2ull * kTokens * kHeads * kChannels * 2;

uint32_t block_of(uint32_t chunk)
{
	return (chunk * 13 + 5) % kBlocks;
}

struct Aligned {
	unsigned char *p;
	explicit Aligned(size_t n) : p(static_cast<unsigned char *>(aligned_alloc(4096, n))) { REQUIRE(p); }
	~Aligned() { free(p); }
	Aligned(const Aligned &) = delete;
	Aligned &operator=(const Aligned &) = delete;
};

// A full slot handed to the mover.
struct Full {
	uint32_t dev, ticket, req, layer;
};

} // namespace

TEST_CASE("staged load on the CPU: executor into 8 staging slots, a mover thread into the pool", "[kv][staged]")
{
	Targets t(2, false, "size=4M");
	// The pool: (layer, part, block, token, head, channel), 2-byte elements.
	Aligned mem(kLayers * kBlocks * kObject);
	std::memset(mem.p, 0xa5, kLayers * kBlocks * kObject);
	gio_kv_pool pool{};
	pool.base = reinterpret_cast<uint64_t>(mem.p);
	pool.elem_bytes = 2;
	const uint32_t ext[GIO_KV_DIMS] = {kLayers, kBlocks, 2, kTokens, kHeads, kChannels};
	for (int d = 0; d < GIO_KV_DIMS; d++)
		pool.extent[d] = ext[d];
	pool.stride[GIO_KV_CHANNEL] = 1;
	pool.stride[GIO_KV_HEAD] = kChannels;
	pool.stride[GIO_KV_TOKEN] = kChannels * kHeads;
	pool.stride[GIO_KV_BLOCK] = kChannels * kHeads * kTokens;
	pool.stride[GIO_KV_PART] = pool.stride[GIO_KV_BLOCK] * kBlocks;
	pool.stride[GIO_KV_LAYER] = pool.stride[GIO_KV_PART] * 2;
	gio_kv_runs runs{};
	REQUIRE(gio_kv_pool_check(&pool, nullptr) == 0);
	REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
	REQUIRE(runs.nruns == 2);

	// The chunks, stored through the store's host calls.
	gio_kv_store_params sp{};
	sp.layers = kLayers;
	sp.object_bytes = kObject;
	sp.pool_signature = gio_kv_pool_signature(&pool, &runs);
	sp.store_bytes = 2 << 20;
	sp.timeout_ns = 5 * kSecond;
	gio_kv_store *store = nullptr;
	INFO(gio_last_error());
	REQUIRE(gio_kv_store_create(t.ctx.data(), 2, &sp, &store) == 0);
	std::vector<unsigned char> chunk(kLayers * kObject);
	for (uint32_t c = 0; c < kChunks; c++) {
		for (uint32_t l = 0; l < kLayers; l++)
			for (uint64_t k = 0; k < kObject; k++)
				chunk[l * kObject + k] = kv_chunk_byte(c, l, k);
		REQUIRE(gio_kv_store_put(store, kv_chunk_key(c), chunk.data(), chunk.size()) == 0);
	}

	// Per device: two queue pairs and a staging area registered for the target; a P2P table the
	// staged commands never read (the plan wants one).
	std::vector<gio_qp *> qps[2];
	std::vector<gio_kv_io_dev> devs(2);
	std::vector<gio_dptr> unused_table(kLayers * kBlocks);
	Aligned area0(kSlots * kObject), area1(kSlots * kObject);
	unsigned char *area[2] = {area0.p, area1.p};
	std::vector<uint32_t> words[2] = {std::vector<uint32_t>(kSlots), std::vector<uint32_t>(kSlots)};
	gio_stage st[2];
	for (uint32_t d = 0; d < 2; d++) {
		uint64_t bus = 0;
		REQUIRE(gio_ctx_register(t.ctx[d], area[d], kSlots * kObject, &bus) == 0);
		REQUIRE(gio_stage_init(&st[d], words[d].data(), kSlots, kObject, bus, GIO_SCOPE_SYS) == 0);
		devs[d] = cpu_plan_dev(t.ctx[d], qps[d], unused_table.data(), GIO_PSDT_SGL_MPTR, 1);
	}
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = kBlocks;
	pp.blocks = kBlocks;
	pp.devs = devs.data();
	gio_kv_plan *plan = nullptr;
	REQUIRE(gio_kv_plan_create(store, &pp, &plan) == 0);
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t c = 0; c < kChunks; c++) {
		keys.push_back(kv_chunk_key(c));
		blocks.push_back(block_of(c));
	}
	std::vector<uint8_t> hit(kChunks, 0);
	REQUIRE(gio_kv_plan_load(plan, keys.data(), blocks.data(), kChunks, hit.data()) == int(kChunks));
	gio_kv_io_plan v;
	REQUIRE(gio_kv_plan_view(plan, &v) == 0);
	REQUIRE(v.nreqs == kChunks);

	// The mover: what the GPU's warps (or the copy engine) will do.
	std::mutex mu;
	std::deque<Full> full;
	std::atomic<int> mover_errors{0};
	std::atomic<bool> stop{false};
	std::thread mover([&] {
		uint32_t spins = 0;
		const uint64_t deadline = gio_deadline_in(60 * kSecond);
		while (!stop.load() && !gio_deadline_passed(deadline)) {
			Full f{};
			bool got = false;
			{
				std::lock_guard<std::mutex> g(mu);
				if (!full.empty()) {
					f = full.front();
					full.pop_front();
					got = true;
				}
			}
			if (!got) {
				gio_backoff(&spins);
				continue;
			}
			spins = 0;
			const uint32_t layer = f.layer;
			const gio_kv_io_req &r = v.reqs[f.req];
			gio_kv_stage_move mv[4];
			const int n = gio_kv_stage_moves(&pool, &runs, layer, r.block, r.part, 1, mv, 4);
			if (n < 1 || !gio_stage_full(&st[f.dev], f.ticket)) {
				mover_errors++;
				continue;
			}
			for (int i = 0; i < n; i++)
				std::memcpy(reinterpret_cast<void *>(mv[i].dst),
					    area[f.dev] + gio_stage_offset(&st[f.dev], f.ticket) + mv[i].src_off, mv[i].len);
			if (gio_stage_release(&st[f.dev], f.ticket) != 0)
				mover_errors++;
			if (gio_kv_io_count(&v, layer, 1))
				gio_kv_io_layer_signal(&v, layer);
		}
	});

	// The submitter: one request at a time into a slot; when no slot is free it collects the
	// oldest command still in flight (the executor has written its slot), then waits for the mover.
	struct Flight {
		uint32_t dev, ticket, req, qticket;
		gio_qp *qp;
	};
	uint64_t busy = 0;
	for (uint32_t layer = 0; layer < kLayers; layer++) {
		std::deque<Flight> flight;
		auto collect = [&] {
			Flight f = flight.front();
			flight.pop_front();
			uint16_t status = 0;
			const int rc = gio_qp_wait(f.qp, f.qticket, gio_deadline_in(10 * kSecond), &status, nullptr);
			INFO("layer " << layer << " request " << f.req << " status " << status);
			REQUIRE(rc == 0);
			REQUIRE(gio_stage_fill(&st[f.dev], f.ticket) == 0);
			std::lock_guard<std::mutex> g(mu);
			full.push_back(Full{f.dev, f.ticket, f.req, layer});
		};
		for (uint32_t gi = 0; gi < v.ngroups; gi++) {
			const gio_kv_io_group &g = v.groups[gi];
			gio_qp *qp = v.devs[g.dev].qps[gi % v.devs[g.dev].nqps];
			for (uint32_t j = 0; j < g.count; j++) {
				const uint32_t i = g.first + j;
				uint32_t ticket = 0, qt = 0;
				int rc;
				while ((rc = gio_stage_reserve(&st[g.dev], 1, &ticket)) == -EBUSY && !flight.empty()) {
					busy++;
					collect();
				}
				if (rc == -EBUSY) // everything collected: the mover still holds the slots
					rc = gio_stage_reserve_wait(&st[g.dev], 1, gio_deadline_in(10 * kSecond), &ticket);
				REQUIRE(rc == 0);
				gio_sqe sqe;
				REQUIRE(gio_kv_stage_sqe(&v, layer, i, &st[g.dev], ticket, &sqe) == 0);
				REQUIRE(gio_qp_reserve_wait(qp, 1, gio_deadline_in(10 * kSecond), &qt) == 0);
				REQUIRE(gio_qp_put(qp, qt, &sqe, i, 0) == 0);
				gio_qp_publish(qp);
				flight.push_back(Flight{g.dev, ticket, i, qt, qp});
			}
		}
		while (!flight.empty())
			collect();
		REQUIRE(gio_kv_io_layer_wait(&v, layer, gio_deadline_in(10 * kSecond)) == 0);
	}
	stop = true;
	mover.join();
	CHECK(mover_errors.load() == 0);
	CHECK(busy > 0); // the staging areas were full at times: slots were reused under flow control
	for (uint32_t d = 0; d < 2; d++) {
		CHECK(st[d].reserved > 4 * kSlots); // every slot used several times
		for (uint32_t s = 0; s < kSlots; s++)
			CHECK(gio_stage_state(words[d][s]) == GIO_STAGE_FREE);
	}
	for (uint32_t i = 0; i < v.nreqs; i++)
		CHECK(v.results[i].rc == 0);

	// Every object in its block, byte for byte, in device order; blocks no chunk went to untouched.
	std::vector<bool> used(kBlocks, false);
	for (uint32_t c = 0; c < kChunks; c++) {
		used[block_of(c)] = true;
		for (uint32_t l = 0; l < kLayers; l++) {
			uint64_t k = 0, bad = 0;
			for (uint32_t r = 0; r < runs.nruns; r++) {
				const auto *p = reinterpret_cast<const unsigned char *>(gio_kv_run_addr(&pool, &runs, l, block_of(c), r));
				for (uint64_t j = 0; j < runs.run_bytes; j++, k++)
					bad += p[j] != kv_chunk_byte(c, l, k);
			}
			INFO("chunk " << c << " layer " << l);
			CHECK(bad == 0);
		}
	}
	for (uint32_t b = 0; b < kBlocks; b++)
		for (uint32_t l = 0; !used[b] && l < kLayers; l++)
			for (uint32_t r = 0; r < runs.nruns; r++) {
				const auto *p = reinterpret_cast<const unsigned char *>(gio_kv_run_addr(&pool, &runs, l, b, r));
				for (uint64_t j = 0; j < runs.run_bytes; j++)
					REQUIRE(p[j] == 0xa5);
			}

	// The batch was run outside the plan's engine: finish only drops its pins.
	CHECK(gio_kv_plan_finish(plan, nullptr, 0) >= 0);
	CHECK(gio_kv_plan_destroy(plan) == 0);
	for (uint32_t d = 0; d < 2; d++) {
		for (auto *qp : qps[d])
			CHECK(gio_ctx_qp_destroy(t.ctx[d], qp, 5 * kSecond, nullptr, nullptr) >= 0);
		CHECK(gio_ctx_unregister(t.ctx[d], area[d]) == 0);
	}
	CHECK(gio_kv_store_close(store) == 0);
}
