// The staged path end to end on the CPU, against the software target: staging areas of 8 slots,
// far fewer than a layer's objects, registered with the context, so that every slot is reused
// many times. The CPU executor reads or writes each command's data in its slot (at its bus
// address); this thread reserves slots, submits and reaps as the I/O kernel's warps will; a
// second thread plays the GPU's mover for loads (gio_kv_stage_moves() from the slot into the
// pool, then the release), and for saves the submitter moves the object into its slot before the
// command, as a warp will. Every byte of every object is checked; the plan's layer words finish
// the layers as on the peer-to-peer path; an NVMe error keeps its status and its object's bytes
// untouched, and a lost completion's slot is never reused until the queues are gone.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/host/path.h>
#include <giouring/host/stage.h>
#include <giouring/kv/plan.h>
#include <giouring/kv/run.h>
#include <giouring/kv/staged.h>
#include <giouring/kv/store.h>
#include <giouring/proto/status.h>

#include "kv_chunks.h"
#include "kv_targets.h"

namespace {

const uint64_t kSecond = 1000000000ull;
// 4 layers x 32 blocks, K and V apart (two runs an object), 16 tokens x 2 heads x 64 channels of
// 2 bytes: 8 KiB objects; 8 staging slots of one object each.
const uint32_t kLayers = 4, kBlocks = 32, kTokens = 16, kHeads = 2, kChannels = 64, kSlots = 8;
const uint64_t kObject = 2ull * kTokens * kHeads * kChannels * 2;

uint32_t block_of(uint32_t chunk)
{
	return (chunk * 13 + 5) % kBlocks;
}

struct Aligned {
	unsigned char *p;
	size_t n;
	explicit Aligned(size_t bytes) : p(static_cast<unsigned char *>(aligned_alloc(4096, bytes))), n(bytes)
	{
		REQUIRE(p);
		std::memset(p, 0xa5, n);
	}
	~Aligned() { free(p); }
	Aligned(const Aligned &) = delete;
	Aligned &operator=(const Aligned &) = delete;
};

// A pool (layer, part, block, token, head, channel) of 2-byte elements in host memory, poisoned;
// with `per_layer`, addressed as vLLM's tensor per layer is: a table of bases, one a layer
// (GIO_KV_BASE_LAYER).
struct Pool {
	Aligned mem{kLayers * kBlocks * kObject};
	gio_kv_pool pool{};
	gio_kv_runs runs{};
	std::vector<uint64_t> bases;
	explicit Pool(bool per_layer = false)
	{
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
		if (per_layer) {
			for (uint32_t l = 0; l < kLayers; l++)
				bases.push_back(reinterpret_cast<uint64_t>(mem.p) + l * kBlocks * kObject);
			pool.base = 0;
			pool.bases = bases.data();
			pool.base_mode = GIO_KV_BASE_LAYER;
			pool.stride[GIO_KV_LAYER] = 0;
		}
		REQUIRE(gio_kv_pool_check(&pool, nullptr) == 0);
		REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
		REQUIRE(runs.nruns == 2);
	}
	// Object (l, b) holds chunk c's bytes (device order), or is still poisoned when c < 0; `fill`
	// writes them instead.
	bool object(uint32_t l, uint32_t b, int64_t c, bool fill = false)
	{
		uint64_t k = 0;
		bool same = true;
		for (uint32_t r = 0; r < runs.nruns; r++) {
			auto *p = reinterpret_cast<unsigned char *>(gio_kv_run_addr(&pool, &runs, l, b, r));
			for (uint64_t j = 0; j < runs.run_bytes; j++, k++) {
				const unsigned char w = c < 0 ? 0xa5 : kv_chunk_byte(uint64_t(c), l, k);
				if (fill)
					p[j] = w;
				else
					same = same && p[j] == w;
			}
		}
		return same;
	}
};

// One device's staging area: host memory registered with the context, its slot ring, and for a
// controller without SGLs its staging table (PRPs; 2-page slots need no list).
// `nrings` rings of `nslots` slots (the library's engine takes one ring per queue pair of the
// device, and through a plan at least a group's 32 slots) share one area.
struct Staging {
	gio_ctx *ctx;
	uint32_t nrings, nslots;
	Aligned area;
	std::vector<uint32_t> words;
	std::vector<gio_stage> rings;
	gio_stage &st; // ring 0: the test's own Runner uses only it
	std::vector<gio_dptr> table;
	uint32_t psdt = GIO_PSDT_SGL_MPTR;
	gio_kv_io_stage io{};
	explicit Staging(gio_ctx *c, uint32_t n = 1, uint32_t slots = kSlots)
		: ctx(c), nrings(n), nslots(slots), area(n * slots * kObject), words(n * slots), rings(n), st(rings[0])
	{
		uint64_t bus = 0;
		REQUIRE(gio_ctx_register(ctx, area.p, area.n, &bus) == 0);
		const gio_dptr_caps *caps = gio_ctx_dptr_caps(ctx);
		if (gio_dptr_sgl_support(caps) == GIO_SGLS_SUPPORT_NONE)
			psdt = GIO_PSDT_PRP;
		for (uint32_t q = 0; q < n; q++) {
			REQUIRE(gio_stage_init(&rings[q], &words[q * slots], slots, kObject, bus + q * slots * kObject,
					       GIO_SCOPE_SYS) == 0);
			for (uint32_t s = 0; psdt == GIO_PSDT_PRP && s < slots; s++) {
				table.resize(n * slots);
				REQUIRE(gio_kv_stage_table_entry(&rings[q], s, kObject, caps, &table[q * slots + s], nullptr, 0,
								 0) == 0);
			}
		}
		io.rings = rings.data();
		io.table = dptrs();
		io.area = area.p;
	}
	const gio_dptr *dptrs() const { return table.empty() ? nullptr : table.data(); }
	~Staging() { CHECK(gio_ctx_unregister(ctx, area.p) == 0); }
	Staging(const Staging &) = delete;
	Staging &operator=(const Staging &) = delete;
	uint32_t count(uint32_t state) const
	{
		uint32_t n = 0;
		for (uint32_t w : words)
			n += gio_stage_state(w) == state;
		return n;
	}
};

// Runs a plan's layers through staging: what the staged engines will do, here with a CPU thread
// as the submitter and another as the mover.
struct Runner {
	const gio_kv_io_plan &v;
	Pool &pool;
	std::vector<Staging *> stg;
	uint64_t busy = 0; // reservations that found no free slot
	std::mutex mu;
	struct Full {
		uint32_t dev, ticket, req, layer;
	};
	std::deque<Full> full;
	std::atomic<bool> stop{false};
	std::atomic<int> mover_errors{0};
	std::thread mover;

	Runner(const gio_kv_io_plan &view, Pool &p, std::vector<Staging *> s) : v(view), pool(p), stg(std::move(s))
	{
		mover = std::thread([this] { move_loop(); });
	}
	~Runner()
	{
		stop = true;
		mover.join();
	}
	// The request's copies between its slot and the pool.
	int moves(const gio_kv_io_req &r, uint32_t layer, gio_kv_stage_move *mv)
	{
		return gio_kv_stage_moves(&pool.pool, &pool.runs, layer, r.block, r.part, v.devs[r.dev].cmds, mv, 4);
	}
	void done(uint32_t layer, uint32_t req, int rc, uint16_t status)
	{
		gio_kv_io_result_only(&v, layer, req, rc, status);
		if (gio_kv_io_count(&v, layer, 1))
			gio_kv_io_layer_signal(&v, layer);
	}
	void move_loop()
	{
		uint32_t spins = 0;
		while (!stop.load()) {
			Full f{};
			{
				std::lock_guard<std::mutex> g(mu);
				if (full.empty())
					f.dev = UINT32_MAX;
				else {
					f = full.front();
					full.pop_front();
				}
			}
			if (f.dev == UINT32_MAX) {
				gio_backoff(&spins);
				continue;
			}
			spins = 0;
			gio_stage *st = &stg[f.dev]->st;
			gio_kv_stage_move mv[4];
			const int n = moves(v.reqs[f.req], f.layer, mv);
			if (n < 1 || !gio_stage_full(st, f.ticket)) {
				mover_errors++;
				continue;
			}
			for (int i = 0; i < n; i++)
				std::memcpy(reinterpret_cast<void *>(mv[i].dst),
					    stg[f.dev]->area.p + gio_stage_offset(st, f.ticket) + mv[i].src_off, mv[i].len);
			if (gio_stage_release(st, f.ticket) != 0)
				mover_errors++;
			done(f.layer, f.req, 0, 0);
		}
	}
	// Runs layer `layer` to completion; `deadline_ns` bounds each command and each wait for a slot.
	void run_layer(uint32_t layer, uint64_t deadline_ns = 10 * kSecond)
	{
		struct Flight {
			uint32_t dev, ticket, req, qticket;
			gio_qp *qp;
		};
		std::deque<Flight> flight;
		auto collect = [&] {
			const Flight f = flight.front();
			flight.pop_front();
			gio_stage *st = &stg[f.dev]->st;
			uint16_t status = 0;
			const int rc = gio_qp_wait(f.qp, f.qticket, gio_deadline_in(deadline_ns), &status, nullptr);
			if (rc == -ETIME) { // the controller may still write the slot: never reuse it
				REQUIRE(gio_stage_lose(st, f.ticket) == 0);
				done(layer, f.req, rc, 0);
			} else if (rc != 0 || v.write) { // a failure, or a save's data already written
				REQUIRE(gio_stage_release(st, f.ticket) == 0);
				done(layer, f.req, rc, status);
			} else {
				REQUIRE(gio_stage_fill(st, f.ticket) == 0);
				std::lock_guard<std::mutex> g(mu);
				full.push_back(Full{f.dev, f.ticket, f.req, layer});
			}
		};
		for (uint32_t gi = 0; gi < v.ngroups; gi++) {
			const gio_kv_io_group &g = v.groups[gi];
			gio_stage *st = &stg[g.dev]->st;
			gio_qp *qp = v.devs[g.dev].qps[gi % v.devs[g.dev].nqps];
			for (uint32_t j = 0; j < g.count; j++) {
				const uint32_t i = g.first + j;
				uint32_t ticket = 0, qt = 0;
				int rc;
				while ((rc = gio_stage_reserve(st, 1, &ticket)) == -EBUSY && !flight.empty()) {
					busy++;
					collect();
				}
				if (rc == -EBUSY) // everything collected: the mover holds the slots, or one is LOST
					rc = gio_stage_reserve_wait(st, 1, gio_deadline_in(deadline_ns), &ticket);
				if (rc) {
					done(layer, i, rc, 0);
					continue;
				}
				if (v.write) { // the object into its slot before the controller reads it
					gio_kv_stage_move mv[4];
					const int n = moves(v.reqs[i], layer, mv);
					REQUIRE(n >= 1);
					for (int k = 0; k < n; k++)
						std::memcpy(stg[g.dev]->area.p + gio_stage_offset(st, ticket) + mv[k].src_off,
							    reinterpret_cast<const void *>(mv[k].dst), mv[k].len);
				}
				gio_sqe sqe;
				REQUIRE(gio_kv_stage_sqe(&v, layer, i, st, ticket, stg[g.dev]->dptrs(), &sqe) == 0);
				REQUIRE(gio_qp_reserve_wait(qp, 1, gio_deadline_in(deadline_ns), &qt) == 0);
				REQUIRE(gio_qp_put(qp, qt, &sqe, i, 0) == 0);
				gio_qp_publish(qp);
				flight.push_back(Flight{g.dev, ticket, i, qt, qp});
			}
		}
		while (!flight.empty())
			collect();
		REQUIRE(gio_kv_io_layer_wait(&v, layer, gio_deadline_in(deadline_ns)) == 0);
	}
};

// A plan of `n` chunks on one raw device, made by hand (no store): chunk c at LBA c x layers x
// object, in pool block block_of(c); two groups alternating the device's two queue pairs.
struct RawPlan {
	std::vector<gio_qp *> qps;
	std::vector<gio_dptr> unused_table = std::vector<gio_dptr>(kLayers * kBlocks); // staged commands read none
	gio_kv_io_dev dev{};
	std::vector<gio_kv_io_req> reqs;
	std::vector<gio_kv_io_group> groups;
	std::vector<gio_kv_io_result> results;
	std::vector<uint32_t> count = std::vector<uint32_t>(kLayers), done_word = std::vector<uint32_t>(kLayers);
	gio_kv_io_plan v{};

	// Two groups, or groups of `group` requests (the engine's rings hold kSlots of them).
	RawPlan(gio_ctx *ctx, uint32_t n, uint32_t psdt, uint32_t group = 0)
	{
		dev = cpu_plan_dev(ctx, qps, unused_table.data(), psdt, 1);
		for (uint32_t c = 0; c < n; c++)
			reqs.push_back(gio_kv_io_req{c * kLayers * (kObject >> dev.lba_shift), block_of(c), 0, 0});
		if (group == 0) {
			groups.push_back(gio_kv_io_group{0, uint16_t(n / 2), 0, 0});
			groups.push_back(gio_kv_io_group{n / 2, uint16_t(n - n / 2), 0, 1});
		}
		for (uint32_t f = 0; group && f < n; f += group) // alternating the queue pairs
			groups.push_back(gio_kv_io_group{f, uint16_t(std::min(group, n - f)), 0, uint32_t(groups.size() % 2)});
		v.devs = &dev;
		v.reqs = reqs.data();
		v.groups = groups.data();
		v.layer_count = count.data();
		v.layer_done = done_word.data();
		v.object_bytes = kObject;
		v.timeout_ns = 5 * kSecond;
		v.ndevs = 1;
		v.nreqs = n;
		v.ngroups = uint32_t(groups.size());
		v.layers = kLayers;
		v.blocks = kBlocks;
		v.scope = GIO_SCOPE_SYS;
	}
	// A new batch in direction `write`: fresh results and counts, the next epoch.
	void batch(int write)
	{
		results.assign(reqs.size(), gio_kv_io_result{});
		v.results = results.data();
		std::fill(count.begin(), count.end(), 0u);
		v.epoch++;
		v.write = uint32_t(write);
	}
	void destroy(gio_ctx *ctx)
	{
		for (auto *qp : qps)
			CHECK(gio_ctx_qp_destroy(ctx, qp, 5 * kSecond, nullptr, nullptr) >= 0);
		qps.clear();
	}
};

// Every layer of chunks 0 to n - 1 arrived in its block; the blocks no chunk uses are still poisoned.
void check_loaded(Pool &dst, uint32_t n)
{
	std::vector<bool> used(kBlocks, false);
	for (uint32_t c = 0; c < n; c++) {
		used[block_of(c)] = true;
		for (uint32_t l = 0; l < kLayers; l++) {
			INFO("chunk " << c << " layer " << l);
			CHECK(dst.object(l, block_of(c), c));
		}
	}
	for (uint32_t b = 0; b < kBlocks; b++)
		for (uint32_t l = 0; !used[b] && l < kLayers; l++)
			CHECK(dst.object(l, b, -1));
}

// The plan as the engine reads it: its device staged, the pool it copies to and from.
void engine_view(RawPlan &rp, Staging &s, Pool &pool)
{
	rp.dev.stage = &s.io;
	rp.v.pool = &pool.pool;
	rp.v.runs = &pool.runs;
}

// Runs every layer in `layers` with the engine; gives the first failure (0: none).
int engine_run(RawPlan &rp, uint32_t layers)
{
	int ret = 0;
	for (uint32_t l = 0; l < layers; l++) {
		const int rc = gio_kv_io_run_layer(&rp.v, l);
		ret = ret ? ret : rc;
		REQUIRE(gio_kv_io_layer_wait(&rp.v, l, gio_deadline_in(kSecond)) == 0); // signalled, whatever failed
	}
	return ret;
}

// Saves layer 0 of chunks 0 to n - 1 from `src` with the engine: what its fault cases load back.
void engine_save_first_layer(RawPlan &rp, Staging &s, Pool &src, uint32_t n)
{
	for (uint32_t c = 0; c < n; c++)
		src.object(0, block_of(c), c, true);
	engine_view(rp, s, src);
	rp.batch(1);
	REQUIRE(engine_run(rp, 1) == 0);
}

// Saves n chunks from a pool through 8 slots and loads them back into another: through the test's
// own Runner (a submitter and a mover thread, one ring), or through the library's CPU engine
// (`engine`: a ring per queue pair, groups of 4 so that every slot is reused).
void save_and_load(bool files, const char *query, bool engine = false)
{
	INFO((files ? "file://" : "mem://host") << " ?" << query << (engine ? " (engine)" : " (Runner)"));
	const uint32_t n = 24;
	Targets t(1, files, query);
	Pool src, dst;
	for (uint32_t c = 0; c < n; c++)
		for (uint32_t l = 0; l < kLayers; l++)
			src.object(l, block_of(c), c, true);
	Staging s(t.ctx[0], engine ? 2 : 1);
	CHECK((std::strstr(query, "dptr=prp") != nullptr) == (s.psdt == GIO_PSDT_PRP)); // the table's form
	RawPlan rp(t.ctx[0], n, s.psdt, engine ? 4 : 0);
	for (int write = 1; write >= 0; write--) {
		Pool &pool = write ? src : dst;
		rp.batch(write);
		if (engine) {
			engine_view(rp, s, pool);
			REQUIRE(engine_run(rp, kLayers) == 0);
		} else {
			Runner r(rp.v, pool, {&s});
			for (uint32_t l = 0; l < kLayers; l++)
				r.run_layer(l);
			CHECK(r.mover_errors.load() == 0);
			CHECK((write || r.busy > 0)); // loads: slots were short, reused under flow control
		}
		for (const auto &r : rp.results)
			CHECK(r.rc == 0);
	}
	for (uint32_t q = 0; q < s.nrings; q++) // every ring's share, saved and loaded
		CHECK(s.rings[q].reserved == 2 * kLayers * n / s.nrings);
	CHECK(s.count(GIO_STAGE_FREE) == s.nrings * kSlots);
	check_loaded(dst, n);
	rp.destroy(t.ctx[0]);
}

// The 5th command from now fails with an unrecovered read error (DNR).
void inject_media_error(gio_ctx *ctx)
{
	gio_fault f{};
	f.fail_nth = 5;
	f.fail_status = GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ) | GIO_SF_DNR;
	REQUIRE(gio_ctx_inject(ctx, &f) == 0);
}

// After a layer-0 load with inject_media_error(): exactly one request failed, with the error's
// status intact and its object untouched; every other object arrived.
void check_one_media_error(const RawPlan &rp, Pool &dst, uint32_t n)
{
	uint32_t failed = 0;
	for (uint32_t c = 0; c < n; c++) {
		const gio_kv_io_result &x = rp.results[c];
		INFO("chunk " << c);
		if (x.rc == 0) {
			CHECK(dst.object(0, block_of(c), c));
			continue;
		}
		failed++;
		CHECK(x.rc == -EIO);
		CHECK(gio_status_sct(x.status) == GIO_SCT_MEDIA);
		CHECK(gio_status_sc(x.status) == GIO_SC_UNRECOVERED_READ);
		CHECK(gio_status_dnr(x.status));
		CHECK(x.layer == 0);
		CHECK(dst.object(0, block_of(c), -1)); // nothing moved from the failed command's slot
	}
	CHECK(failed == 1);
}

// A store over the two targets of `t`, for `pool`'s objects.
gio_kv_store *two_device_store(Targets &t, Pool &pool)
{
	gio_kv_store_params sp{};
	sp.layers = kLayers;
	sp.object_bytes = kObject;
	sp.pool_signature = gio_kv_pool_signature(&pool.pool, &pool.runs);
	sp.store_bytes = 2 << 20;
	sp.timeout_ns = 5 * kSecond;
	gio_kv_store *store = nullptr;
	INFO(gio_last_error());
	REQUIRE(gio_kv_store_create(t.ctx.data(), 2, &sp, &store) == 0);
	return store;
}

// Saves layer 0 of chunks 0 to n - 1 from `src` through `s`: what the fault cases load back.
void save_first_layer(RawPlan &rp, Pool &src, Staging &s, uint32_t n)
{
	for (uint32_t c = 0; c < n; c++)
		src.object(0, block_of(c), c, true);
	Runner w(rp.v, src, {&s});
	rp.batch(1);
	w.run_layer(0);
	for (uint32_t c = 0; c < n; c++)
		REQUIRE(rp.results[c].rc == 0);
}

} // namespace

TEST_CASE("staged save and load on a mem://host target: every object through 8 slots and back", "[kv][staged]")
{
	save_and_load(false, "size=8M");
}

TEST_CASE("staged save and load on a controller without SGLs, through a staging table of PRPs", "[kv][staged]")
{
	save_and_load(false, "size=8M&dptr=prp");
}

TEST_CASE("staged save and load on a file:// target", "[kv][staged][io_uring]")
{
	save_and_load(true, "size=8M");
}

TEST_CASE("staged load: an NVMe error keeps its status and its object untouched; its slot is reused", "[kv][staged]")
{
	const uint32_t n = 16;
	Targets t(1, false, "size=8M");
	Pool src, dst;
	Staging s(t.ctx[0]);
	RawPlan rp(t.ctx[0], n, s.psdt);
	save_first_layer(rp, src, s, n);
	inject_media_error(t.ctx[0]);
	{
		Runner r(rp.v, dst, {&s});
		rp.batch(0);
		r.run_layer(0);
		CHECK(r.mover_errors.load() == 0);
	}
	check_one_media_error(rp, dst, n);
	CHECK(s.count(GIO_STAGE_FREE) == kSlots);
	rp.destroy(t.ctx[0]);
}

TEST_CASE("staged load: a lost completion's slot stays out of use until the queues are gone", "[kv][staged]")
{
	const uint32_t n = 4;
	Targets t(1, false, "size=8M");
	Pool src, dst;
	Staging s(t.ctx[0]);
	auto rp = std::make_unique<RawPlan>(t.ctx[0], n, s.psdt);
	save_first_layer(*rp, src, s, n);
	gio_fault f{};
	f.drop_nth = 2;
	REQUIRE(gio_ctx_inject(t.ctx[0], &f) == 0);
	{
		Runner r(rp->v, dst, {&s});
		rp->batch(0);
		r.run_layer(0, 200000000ull);
	}
	uint32_t lost = 0;
	for (uint32_t c = 0; c < n; c++) {
		INFO("chunk " << c);
		if (rp->results[c].rc == -ETIME) {
			lost++;
			CHECK(dst.object(0, block_of(c), -1));
		} else {
			CHECK(rp->results[c].rc == 0);
			CHECK(dst.object(0, block_of(c), c));
		}
	}
	REQUIRE(lost == 1);
	REQUIRE(s.count(GIO_STAGE_LOST) == 1);
	// The ring goes on until it wraps onto the LOST slot, then refuses rather than reuse it.
	uint32_t ticket = 0, taken = 0;
	while (gio_stage_reserve(&s.st, 1, &ticket) == 0) {
		REQUIRE(gio_stage_release(&s.st, ticket) == 0);
		REQUIRE(++taken < 2 * kSlots);
	}
	CHECK(gio_stage_state(s.words[s.st.reserved % kSlots]) == GIO_STAGE_LOST);
	CHECK(gio_stage_reserve_wait(&s.st, 1, gio_deadline_in(10000000), &ticket) == -ETIME);
	CHECK(s.st.last_timeout.slot == s.st.reserved % kSlots);

	// Recovery: the queues deleted (the controller aborts the withheld command), the ring new.
	rp->destroy(t.ctx[0]);
	REQUIRE(gio_stage_init(&s.st, s.words.data(), kSlots, kObject, s.st.base_bus, GIO_SCOPE_SYS) == 0);
	rp = std::make_unique<RawPlan>(t.ctx[0], n, s.psdt);
	{
		Runner r(rp->v, dst, {&s});
		rp->batch(0);
		r.run_layer(0);
	}
	for (uint32_t c = 0; c < n; c++) {
		CHECK(rp->results[c].rc == 0);
		CHECK(dst.object(0, block_of(c), c));
	}
	rp->destroy(t.ctx[0]);
}

TEST_CASE("staged load of a store's chunks over two devices, as the KV plan groups them", "[kv][staged]")
{
	const uint32_t n = 24;
	Targets t(2, false, "size=4M");
	Pool pool;
	gio_kv_store *store = two_device_store(t, pool);
	std::vector<unsigned char> chunk(kLayers * kObject);
	for (uint32_t c = 0; c < n; c++) {
		for (uint32_t l = 0; l < kLayers; l++)
			for (uint64_t k = 0; k < kObject; k++)
				chunk[l * kObject + k] = kv_chunk_byte(c, l, k);
		REQUIRE(gio_kv_store_put(store, kv_chunk_key(c), chunk.data(), chunk.size()) == 0);
	}
	std::vector<gio_qp *> qps[2];
	std::vector<gio_kv_io_dev> devs(2);
	std::vector<gio_dptr> unused_table(kLayers * kBlocks); // the plan wants one; staged commands read none
	Staging s0(t.ctx[0]), s1(t.ctx[1]);
	for (uint32_t d = 0; d < 2; d++)
		devs[d] = cpu_plan_dev(t.ctx[d], qps[d], unused_table.data(), GIO_PSDT_SGL_MPTR, 1);
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = kBlocks;
	pp.blocks = kBlocks;
	pp.devs = devs.data();
	gio_kv_plan *plan = nullptr;
	REQUIRE(gio_kv_plan_create(store, &pp, &plan) == 0);
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t c = 0; c < n; c++) {
		keys.push_back(kv_chunk_key(c));
		blocks.push_back(block_of(c));
	}
	std::vector<uint8_t> hit(n, 0);
	REQUIRE(gio_kv_plan_load(plan, keys.data(), blocks.data(), n, hit.data()) == int(n));
	gio_kv_io_plan v;
	REQUIRE(gio_kv_plan_view(plan, &v) == 0);
	REQUIRE(v.nreqs == n);
	{
		Runner r(v, pool, {&s0, &s1});
		for (uint32_t l = 0; l < kLayers; l++)
			r.run_layer(l);
		CHECK(r.mover_errors.load() == 0);
		CHECK(r.busy > 0);
	}
	for (uint32_t i = 0; i < v.nreqs; i++)
		CHECK(v.results[i].rc == 0);
	for (auto *s : {&s0, &s1}) {
		CHECK(s->st.reserved > 4 * kSlots); // every slot used several times
		CHECK(s->count(GIO_STAGE_FREE) == kSlots);
	}
	for (uint32_t c = 0; c < n; c++)
		for (uint32_t l = 0; l < kLayers; l++) {
			INFO("chunk " << c << " layer " << l);
			CHECK(pool.object(l, block_of(c), c));
		}
	// The batch ran outside the plan's engine: finish only drops its pins.
	CHECK(gio_kv_plan_finish(plan, nullptr, 0) >= 0);
	CHECK(gio_kv_plan_destroy(plan) == 0);
	for (uint32_t d = 0; d < 2; d++)
		for (auto *qp : qps[d])
			CHECK(gio_ctx_qp_destroy(t.ctx[d], qp, 5 * kSecond, nullptr, nullptr) >= 0);
	CHECK(gio_kv_store_close(store) == 0);
}

// ---- The library's CPU engine (giouring/kv/run.h) on the staged path: the same cases, run by
// gio_kv_io_run_layer() with each queue pair's ring in the plan's view.

TEST_CASE("the CPU engine's staged path: save and load through 8 slots per queue pair", "[kv][staged][engine]")
{
	save_and_load(false, "size=8M", true);
}

TEST_CASE("the CPU engine's staged path on a controller without SGLs (a staging table of PRPs)", "[kv][staged][engine]")
{
	save_and_load(false, "size=8M&dptr=prp", true);
}

TEST_CASE("the CPU engine's staged path on a file:// target", "[kv][staged][engine][io_uring]")
{
	save_and_load(true, "size=8M", true);
}

TEST_CASE("the CPU engine's staged load: an NVMe error keeps its status, its object untouched, its slot reused",
	  "[kv][staged][engine]")
{
	const uint32_t n = 16;
	Targets t(1, false, "size=8M");
	Pool src, dst;
	Staging s(t.ctx[0], 2);
	RawPlan rp(t.ctx[0], n, s.psdt, 4);
	engine_save_first_layer(rp, s, src, n);
	inject_media_error(t.ctx[0]);
	engine_view(rp, s, dst);
	rp.batch(0);
	CHECK(engine_run(rp, 1) == -EIO);
	check_one_media_error(rp, dst, n);
	CHECK(s.count(GIO_STAGE_FREE) == 2 * kSlots);
	rp.destroy(t.ctx[0]);
}

TEST_CASE("the CPU engine's staged load: a lost completion's slot is LOST, and the next pass on its ring times out",
	  "[kv][staged][engine]")
{
	const uint32_t n = 4;
	Targets t(1, false, "size=8M");
	Pool src, dst;
	Staging s(t.ctx[0], 2);
	RawPlan rp(t.ctx[0], n, s.psdt, 2); // a group of 2 on each queue pair
	engine_save_first_layer(rp, s, src, n);
	gio_fault f{};
	f.drop_nth = 2;
	REQUIRE(gio_ctx_inject(t.ctx[0], &f) == 0);
	rp.v.timeout_ns = 200000000ull;
	engine_view(rp, s, dst);
	rp.batch(0);
	CHECK(engine_run(rp, 1) == -ETIME);
	uint32_t lost = 0;
	for (uint32_t c = 0; c < n; c++) {
		INFO("chunk " << c);
		if (rp.results[c].rc == -ETIME) {
			lost++;
			CHECK(dst.object(0, block_of(c), -1));
		} else {
			CHECK(rp.results[c].rc == 0);
			CHECK(dst.object(0, block_of(c), c));
		}
	}
	REQUIRE(lost == 1);
	REQUIRE(s.count(GIO_STAGE_LOST) == 1);
	// Passes go on while no reservation wraps onto the LOST slot (2 tickets a pass per ring, 8
	// slots), then that ring's group waits out its deadline and reports -ETIME rather than hand
	// the controller a slot it may still write.
	int rc = 0;
	for (uint32_t pass = 0; pass < kSlots && rc == 0; pass++) {
		rp.batch(0);
		rc = engine_run(rp, 1);
	}
	CHECK(rc == -ETIME);
	CHECK(s.count(GIO_STAGE_LOST) == 1);
	uint32_t timed_out = 0;
	for (uint32_t c = 0; c < n; c++)
		timed_out += rp.results[c].rc == -ETIME;
	CHECK(timed_out == 2); // the group of the ring with the LOST slot; the other ring's went through
	rp.destroy(t.ctx[0]);
}

// A save the engine must refuse in part: requests below `refused` -EINVAL, the rest through,
// every slot back, nothing waited for.
void engine_refuses(uint32_t n, uint32_t group, bool without_pool, uint32_t refused)
{
	Targets t(1, false, "size=8M");
	Pool src;
	Staging s(t.ctx[0], 2);
	RawPlan rp(t.ctx[0], n, s.psdt, group);
	engine_view(rp, s, src);
	if (without_pool)
		rp.v.pool = nullptr; // a staged device, but nothing to copy to or from
	rp.batch(1);
	CHECK(engine_run(rp, 1) == -EINVAL);
	for (uint32_t c = 0; c < n; c++)
		CHECK(rp.results[c].rc == (c < refused ? -EINVAL : 0));
	CHECK(s.count(GIO_STAGE_FREE) == 2 * kSlots);
	rp.destroy(t.ctx[0]);
}

TEST_CASE("the CPU engine's staged path: a group larger than its ring fails, nothing hangs", "[kv][staged][engine]")
{
	engine_refuses(12, kSlots + 2, false, kSlots + 2); // 10 requests for 8 slots, then 2
}

TEST_CASE("the CPU engine's staged path: a plan without its pool refuses each request, slots back", "[kv][staged][engine]")
{
	engine_refuses(4, 2, true, 4);
}

// ---- Through the plan: staged devices given to gio_kv_plan_create(), run by the plan's CPU engine
// thread, a save committed by gio_kv_plan_finish().

namespace {

struct StagedStore {
	Targets t{2, false, "size=4M"};
	Pool pool;
	gio_kv_store *store = nullptr;
	std::vector<gio_qp *> qps[2];
	std::vector<gio_kv_io_dev> devs = std::vector<gio_kv_io_dev>(2);
	std::unique_ptr<Staging> stg[2];
	gio_kv_plan_params pp{};
	explicit StagedStore(uint32_t slots, bool per_layer = false) : pool(per_layer)
	{
		store = two_device_store(t, pool);
		for (uint32_t d = 0; d < 2; d++) {
			stg[d] = std::make_unique<Staging>(t.ctx[d], 2, slots);
			devs[d] = cpu_plan_dev(t.ctx[d], qps[d], nullptr, stg[d]->psdt, 1);
			devs[d].stage = &stg[d]->io;
		}
		pp.engine = GIO_KV_ENGINE_CPU;
		pp.max_requests = kBlocks;
		pp.blocks = kBlocks;
		pp.devs = devs.data();
		pp.pool = &pool.pool;
	}
	~StagedStore()
	{
		for (uint32_t d = 0; d < 2; d++)
			for (auto *qp : qps[d])
				CHECK(gio_ctx_qp_destroy(t.ctx[d], qp, 5 * kSecond, nullptr, nullptr) >= 0);
		CHECK(gio_kv_store_close(store) == 0);
	}
	// Runs every layer of the open batch on the plan's thread.
	static void run(gio_kv_plan *plan, int write)
	{
		for (uint32_t l = 0; l < kLayers; l++) {
			REQUIRE(gio_kv_plan_run_layer(plan, l, write) == 0);
			REQUIRE(gio_kv_plan_wait_layer(plan, l, 10 * kSecond) == 0);
		}
	}
};

} // namespace

namespace {

// Through a plan over `store` with `devs` (staged) and `pool`: n chunks saved, committed (found
// in the store), the pool poisoned, loaded back, every byte compared. The pool is given as a copy
// whose table of bases (where it has one) is overwritten once the plan exists: the plan keeps its
// own (the GPU engine's warps cannot read a caller's table in pageable memory).
void plan_round_trip(gio_kv_store *store, std::vector<gio_kv_io_dev> &devs, Pool &pool, uint32_t n)
{
	gio_kv_pool given = pool.pool;
	std::vector<uint64_t> bases = pool.bases;
	if (given.bases)
		given.bases = bases.data();
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = kBlocks;
	pp.blocks = kBlocks;
	pp.devs = devs.data();
	pp.pool = &given;
	gio_kv_plan *plan = nullptr;
	INFO(gio_last_error());
	REQUIRE(gio_kv_plan_create(store, &pp, &plan) == 0);
	std::fill(bases.begin(), bases.end(), 0);
	given = gio_kv_pool{};
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t c = 0; c < n; c++) {
		keys.push_back(kv_chunk_key(c));
		blocks.push_back(block_of(c));
		for (uint32_t l = 0; l < kLayers; l++)
			pool.object(l, block_of(c), c, true);
	}
	REQUIRE(gio_kv_plan_save(plan, keys.data(), blocks.data(), n, nullptr) == int(n));
	StagedStore::run(plan, 1);
	REQUIRE(gio_kv_plan_finish(plan, nullptr, 0) == 0);
	std::vector<uint8_t> found(n, 0);
	REQUIRE(gio_kv_store_contains(store, keys.data(), n, found.data()) == int(n)); // committed, every one
	std::memset(pool.mem.p, 0xa5, pool.mem.n);
	REQUIRE(gio_kv_plan_load(plan, keys.data(), blocks.data(), n, nullptr) == int(n));
	StagedStore::run(plan, 0);
	REQUIRE(gio_kv_plan_finish(plan, nullptr, 0) == 0);
	check_loaded(pool, n);
	// The statistics say which path ran: every object of both batches through staging slots.
	gio_kv_plan_stats ps{};
	REQUIRE(gio_kv_plan_info(plan, &ps) == 0);
	CHECK(ps.batches == 2);
	CHECK(ps.devices == devs.size());
	uint64_t objects = 0;
	for (uint32_t d = 0; d < ps.devices; d++) {
		CHECK(ps.dev[d].path == GIO_GPU_PATH_STAGED);
		CHECK(ps.dev[d].staged_objects == ps.dev[d].objects);
		CHECK(ps.dev[d].staged_bytes == ps.dev[d].objects * kObject);
		CHECK(ps.dev[d].failed == 0);
		objects += ps.dev[d].objects;
	}
	CHECK(objects == 2ull * n * kLayers);
	CHECK(gio_kv_plan_info(nullptr, &ps) == -EINVAL);
	CHECK(gio_kv_plan_info(plan, nullptr) == -EINVAL);
	CHECK(gio_kv_plan_destroy(plan) == 0);
}

} // namespace

TEST_CASE("a staged save and load through the plan over two devices: committed by finish, every byte back",
	  "[kv][staged][engine]")
{
	const uint32_t n = 24;
	StagedStore ss(GIO_KV_IO_GROUP_MAX);
	plan_round_trip(ss.store, ss.devs, ss.pool, n);
	for (uint32_t d = 0; d < 2; d++) {
		CHECK(ss.stg[d]->count(GIO_STAGE_FREE) == 2 * GIO_KV_IO_GROUP_MAX);
		for (uint32_t q = 0; q < 2; q++) // its half, over both of its queue pairs
			CHECK(ss.stg[d]->rings[q].reserved == 2 * kLayers * n / 4);
	}
}

TEST_CASE("a staged plan over a pool with a tensor per layer keeps its own table of bases", "[kv][staged][engine]")
{
	const uint32_t n = 24;
	StagedStore ss(GIO_KV_IO_GROUP_MAX, true);
	REQUIRE(ss.pool.pool.base_mode == GIO_KV_BASE_LAYER);
	plan_round_trip(ss.store, ss.devs, ss.pool, n);
	for (uint32_t d = 0; d < 2; d++)
		CHECK(ss.stg[d]->count(GIO_STAGE_FREE) == 2 * GIO_KV_IO_GROUP_MAX);
}

TEST_CASE("a plan refuses staged devices it cannot run, saying why", "[kv][staged][engine]")
{
	struct Case {
		const char *what;
		uint32_t slots;
		void (*change)(StagedStore &, gio_kv_pool &);
		int rc;
		const char *says;
	};
	const Case cases[] = {
		{"no pool to copy through", GIO_KV_IO_GROUP_MAX, [](StagedStore &ss, gio_kv_pool &) { ss.pp.pool = nullptr; },
		 -EINVAL, "needs the pool"},
		{"rings smaller than a group", kSlots, [](StagedStore &, gio_kv_pool &) {}, -EINVAL,
		 "staging ring 0 has 8 slots"},
		{"a pool whose objects are not the store's", GIO_KV_IO_GROUP_MAX,
		 [](StagedStore &ss, gio_kv_pool &other) {
			 other = ss.pool.pool;
			 other.extent[GIO_KV_CHANNEL] /= 2;
			 ss.pp.pool = &other;
		 },
		 -EINVAL, "not the store's"},
		{"neither a P2P table nor staging", GIO_KV_IO_GROUP_MAX,
		 [](StagedStore &ss, gio_kv_pool &) { ss.devs[1].stage = nullptr; }, -EINVAL, "device 1: no P2P table"},
	};
	for (const Case &c : cases) {
		INFO(c.what);
		StagedStore ss(c.slots);
		gio_kv_pool other{};
		gio_kv_plan *plan = nullptr;
		c.change(ss, other);
		CHECK(gio_kv_plan_create(ss.store, &ss.pp, &plan) == c.rc);
		CHECK(std::strstr(gio_last_error(), c.says) != nullptr);
		CHECK(plan == nullptr);
	}
}

TEST_CASE("staging areas made by the library: a staged save and load through the plan, SGL and PRP",
	  "[kv][staged][engine]")
{
	for (const char *query : {"size=4M", "size=4M&dptr=prp"}) {
		INFO(query);
		const uint32_t n = 24;
		Targets t(2, false, query);
		Pool pool;
		gio_kv_store *store = two_device_store(t, pool);
		std::vector<gio_qp *> qps[2];
		std::vector<gio_kv_io_dev> devs(2);
		gio_ctx_stage *areas[2] = {};
		const bool prp = std::strstr(query, "dptr=prp") != nullptr;
		for (uint32_t d = 0; d < 2; d++) {
			INFO(gio_last_error());
			REQUIRE(gio_ctx_stage_create(t.ctx[d], 2, GIO_KV_IO_GROUP_MAX, kObject - 1024, 0, &areas[d]) == 0);
			const gio_kv_io_stage *io = gio_ctx_stage_io(areas[d]);
			CHECK((io->table != nullptr) == prp); // a staging table exactly where the controller takes PRPs
			CHECK(io->rings[1].slot_bytes == kObject); // rounded up to a page
			CHECK(io->rings[1].nslots == GIO_KV_IO_GROUP_MAX);
			devs[d] = cpu_plan_dev(t.ctx[d], qps[d], nullptr, prp ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR, 1);
			devs[d].stage = io;
		}
		plan_round_trip(store, devs, pool, n);
		for (uint32_t d = 0; d < 2; d++) {
			for (auto *qp : qps[d])
				CHECK(gio_ctx_qp_destroy(t.ctx[d], qp, 5 * kSecond, nullptr, nullptr) >= 0);
			CHECK(gio_ctx_stage_destroy(areas[d]) == 0);
		}
		CHECK(gio_kv_store_close(store) == 0);
	}
}

TEST_CASE("staging areas made by the library: bad arguments refused, saying why", "[kv][staged]")
{
	Targets t(1, false, "size=4M");
	gio_ctx_stage *a = nullptr;
	CHECK(gio_ctx_stage_create(t.ctx[0], 1, 3, kObject, 0, &a) == -EINVAL); // not a power of two
	CHECK(std::strstr(gio_last_error(), "3 slots") != nullptr);
	CHECK(gio_ctx_stage_create(t.ctx[0], 0, 32, kObject, 0, &a) == -EINVAL);
	CHECK(gio_ctx_stage_create(t.ctx[0], 65, 32, kObject, 0, &a) == -EINVAL);
	CHECK(gio_ctx_stage_create(t.ctx[0], 1, 32, 6, 0, &a) == -EINVAL); // not a multiple of 4
	CHECK(std::strstr(gio_last_error(), "6-byte slots") != nullptr);
	CHECK(gio_ctx_stage_create(t.ctx[0], 1, 32, (1ull << 30) + 4, 0, &a) == -EINVAL);
	CHECK(gio_ctx_stage_create(t.ctx[0], 1, 32, kObject, 2, &a) == -EOPNOTSUPP); // no such flag
	CHECK(std::strstr(gio_last_error(), "flags 0x2 unknown") != nullptr);
	CHECK(gio_ctx_stage_create(nullptr, 1, 32, kObject, 0, &a) == -EINVAL);
	CHECK(gio_ctx_stage_create(t.ctx[0], 1, 32, kObject, 0, nullptr) == -EINVAL);
	CHECK(a == nullptr);
	CHECK(gio_ctx_stage_io(nullptr) == nullptr);
	CHECK(gio_ctx_stage_destroy(nullptr) == 0);
	// Made and destroyed again and again: its memory registered and unregistered each time.
	for (int i = 0; i < 100; i++) {
		REQUIRE(gio_ctx_stage_create(t.ctx[0], 2, 32, kObject, 0, &a) == 0);
		REQUIRE(gio_ctx_stage_destroy(a) == 0);
	}
}

TEST_CASE("the path for GPU memory: path=staged stages without trying, a refusal is an error, not a fallback",
	  "[kv][staged][path]")
{
	std::vector<unsigned char> mem(1 << 16);
	gio_gpu_path gp{};
	gio_ctx *c = nullptr;
	CHECK(std::strcmp(gio_gpu_path_name(GIO_GPU_PATH_P2P), "p2p") == 0);
	CHECK(std::strcmp(gio_gpu_path_name(GIO_GPU_PATH_STAGED), "staged") == 0);
	CHECK(std::strcmp(gio_gpu_path_name(GIO_GPU_PATH_AUTO), "auto") == 0);

	REQUIRE(gio_ctx_open("mem://host?size=1M&path=staged", &c) == 0);
	CHECK(gio_ctx_path_asked(c) == GIO_GPU_PATH_STAGED);
	CHECK(gio_ctx_gpu_path(c, mem.data(), mem.size(), &gp) == 0);
	CHECK(gp.path == GIO_GPU_PATH_STAGED);
	CHECK(gp.asked == GIO_GPU_PATH_STAGED);
	CHECK(gp.p2p_rc == 1);
	CHECK(std::strstr(gp.why, "path=staged") != nullptr);
	CHECK(gio_ctx_unregister(c, mem.data()) == -ENOENT); // nothing was registered
	CHECK(gio_ctx_gpu_path(c, mem.data(), 0, &gp) == -EINVAL);
	CHECK(std::strstr(gio_last_error(), "zero length") != nullptr);
	CHECK(gio_ctx_gpu_path(c, nullptr, 1, &gp) == -EINVAL);
	CHECK(gio_ctx_gpu_path(nullptr, mem.data(), 1, &gp) == -EINVAL);
	CHECK(gio_ctx_close(c) == 0);

	// Host memory is no GPU memory: the software target's registration refuses it (or finds no
	// CUDA runtime), which is not a missing capability, so it is returned as it is, no fallback.
	for (const char *uri : {"mem://host?size=1M", "mem://host?size=1M&path=p2p", "mem://host?size=1M&path=auto"}) {
		INFO(uri);
		REQUIRE(gio_ctx_open(uri, &c) == 0);
		CHECK(gio_ctx_path_asked(c) == (std::strstr(uri, "p2p") ? GIO_GPU_PATH_P2P : GIO_GPU_PATH_AUTO));
		const int rc = gio_ctx_gpu_path(c, mem.data(), mem.size(), &gp);
		CHECK(rc < 0);
		CHECK(rc != -EOPNOTSUPP);
		CHECK(gp.p2p_rc == rc);
		CHECK(gio_ctx_unregister(c, mem.data()) == -ENOENT);
		CHECK(gio_ctx_close(c) == 0);
	}
	CHECK(gio_ctx_path_asked(nullptr) == GIO_GPU_PATH_AUTO);
	CHECK(gio_ctx_open("mem://host?size=1M&path=dma", &c) == -EINVAL);
	CHECK(std::strstr(gio_last_error(), "p2p or staged") != nullptr);
}
