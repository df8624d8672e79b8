// Per-layer save and load of planned batches (giouring/kv/plan.h) with the CPU engine, over 4
// file:// targets: the same commands (giouring/kv/io.h) the GPU engine's kernel sends, through
// the P2P table of a pool described by strides. Round trips through a reopen into shuffled pool
// blocks, K and V apart (two runs: one command with an SGL segment), misses, a device failing
// mid-layer, a save whose layer fails, and bad input. Test cases with file:// targets carry
// [io_uring] (cmake/GiouringTesting.cmake).
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>
#include <giouring/kv/io.h>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>
#include <giouring/proto/status.h>
#include <giouring/sched/issue.h>

#include "kv_chunks.h"
#include "kv_targets.h"

namespace {

const uint64_t kSecond = 1000000000ull;
// The pool: 4 layers x 48 blocks, K and V, 32 tokens x 2 heads x 64 channels of 2 bytes:
// 16 KiB objects (four 4096-byte blocks; four pages, so a PRP command takes a list).
const uint32_t kLayers = 4, kBlocks = 48, kTokens = 32, kHeads = 2, kChannels = 64, kElem = 2;
const uint64_t kObject = 2ull * kTokens * kHeads * kChannels * kElem;
const uint64_t kPoolBytes = kLayers * kBlocks * kObject;

// The pool's layouts: blocks-second (L, B, part, token, head, channel) contiguous; K and V apart
// (L, part, B, ...), whose objects are two runs; the same with 512 bytes between blocks, so that
// the runs start inside pages (PRPs cannot chain them: one command per run).
enum Layout { kTogether, kApart, kApartUnaligned };
const uint64_t kPadElems = 256; // kApartUnaligned: 512 bytes after each block's part

// Page-aligned host memory (PRPs need a run's inner boundaries on pages), poisoned with 0xa5.
struct PageMem {
	unsigned char *p;
	size_t n;
	explicit PageMem(size_t bytes) : p(static_cast<unsigned char *>(aligned_alloc(4096, bytes))), n(bytes)
	{
		REQUIRE(p != nullptr);
		poison();
	}
	~PageMem() { free(p); }
	PageMem(const PageMem &) = delete;
	PageMem &operator=(const PageMem &) = delete;
	unsigned char *data() const { return p; }
	size_t size() const { return n; }
	void poison() { std::memset(p, 0xa5, n); }
};

uint64_t pool_bytes(Layout layout)
{
	return layout == kApartUnaligned ? kLayers * 2ull * kBlocks * (kObject / 2 + kPadElems * kElem) : kPoolBytes;
}

struct Pool {
	PageMem mem;
	gio_kv_pool pool{};
	gio_kv_runs runs{};

	explicit Pool(Layout layout) : mem(pool_bytes(layout))
	{
		const bool kv_apart = layout != kTogether;
		const uint64_t c = 1, h = kChannels, t = h * kHeads, p_inner = t * kTokens;
		pool.base_mode = GIO_KV_BASE_ONE;
		pool.elem_bytes = kElem;
		const uint32_t ext[GIO_KV_DIMS] = {kLayers, kBlocks, 2, kTokens, kHeads, kChannels};
		for (int d = 0; d < GIO_KV_DIMS; d++)
			pool.extent[d] = ext[d];
		pool.stride[GIO_KV_CHANNEL] = c;
		pool.stride[GIO_KV_HEAD] = h;
		pool.stride[GIO_KV_TOKEN] = t;
		if (!kv_apart) {
			pool.stride[GIO_KV_PART] = p_inner;
			pool.stride[GIO_KV_BLOCK] = 2 * p_inner;
			pool.stride[GIO_KV_LAYER] = 2 * p_inner * kBlocks;
		} else {
			const uint64_t block = p_inner + (layout == kApartUnaligned ? kPadElems : 0);
			pool.stride[GIO_KV_BLOCK] = block;
			pool.stride[GIO_KV_PART] = block * kBlocks;
			pool.stride[GIO_KV_LAYER] = 2 * block * kBlocks;
		}
		pool.base = reinterpret_cast<uint64_t>(mem.data());
		REQUIRE(gio_kv_pool_check(&pool, nullptr) == 0);
		REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
		REQUIRE(runs.object_bytes == kObject);
		REQUIRE(runs.nruns == (kv_apart ? 2u : 1u));
	}
	// The bytes of object (l, b) in device order.
	std::vector<unsigned char> object(uint32_t l, uint32_t b) const
	{
		std::vector<unsigned char> v;
		for (uint32_t r = 0; r < runs.nruns; r++) {
			const auto *p = reinterpret_cast<const unsigned char *>(gio_kv_run_addr(&pool, &runs, l, b, r));
			v.insert(v.end(), p, p + runs.run_bytes);
		}
		return v;
	}
	void fill(uint32_t l, uint32_t b, uint64_t chunk)
	{
		uint64_t k = 0;
		for (uint32_t r = 0; r < runs.nruns; r++) {
			auto *p = reinterpret_cast<unsigned char *>(gio_kv_run_addr(&pool, &runs, l, b, r));
			for (uint64_t j = 0; j < runs.run_bytes; j++)
				p[j] = kv_chunk_byte(chunk, l, k++);
		}
	}
	bool holds(uint32_t l, uint32_t b, uint64_t chunk) const
	{
		const auto v = object(l, b);
		for (uint64_t k = 0; k < v.size(); k++)
			if (v[k] != kv_chunk_byte(chunk, l, k))
				return false;
		return true;
	}
	bool poisoned(uint32_t l, uint32_t b) const
	{
		const auto v = object(l, b);
		for (auto x : v)
			if (x != 0xa5)
				return false;
		return true;
	}
};

// Everything a CPU-engine plan over N targets needs: the store, the pool registered on each
// context, each device's P2P table and segment lists, and two queue pairs per device.
struct Rig {
	Targets t;
	Pool pool;
	gio_kv_store *store = nullptr;
	std::vector<std::vector<gio_qp *>> qps;
	std::vector<std::vector<gio_dptr>> tables;
	std::vector<std::vector<gio_sgl_desc>> segs;
	std::vector<gio_kv_io_dev> devs;
	gio_kv_plan *plan = nullptr;

	bool prp;
	std::vector<std::vector<unsigned char>> lists; // PRP: each device's list area
	uint64_t list_stride = 0;
	uint32_t cmds = 1; // PRP: commands per object (gio_kv_table_prp_cmds())

	Rig(uint32_t n, Layout layout, bool use_prp = false)
	    : t(n, true, use_prp ? "size=4M&dptr=prp" : "size=4M"), pool(layout), prp(use_prp)
	{
		open(true);
	}

	gio_kv_store_params params() const
	{
		gio_kv_store_params p{};
		p.layers = kLayers;
		p.object_bytes = kObject;
		p.pool_signature = gio_kv_pool_signature(&pool.pool, &pool.runs);
		p.store_bytes = 2 << 20; // 2 MiB each: about 30 slots of 64 KiB a device
		p.timeout_ns = 5 * kSecond;
		return p;
	}
	void open(bool create)
	{
		const auto p = params();
		INFO(gio_last_error());
		REQUIRE((create ? gio_kv_store_create(t.ctx.data(), uint32_t(t.ctx.size()), &p, &store)
				: gio_kv_store_open(t.ctx.data(), uint32_t(t.ctx.size()), &p, &store)) == 0);
		const size_t n = t.ctx.size();
		qps.assign(n, {});
		tables.assign(n, {});
		segs.assign(n, {});
		lists.assign(n, {});
		devs.assign(n, gio_kv_io_dev{});
		for (size_t d = 0; d < n; d++) {
			REQUIRE(gio_ctx_register(t.ctx[d], pool.mem.data(), pool.mem.size(), nullptr) == 0);
			gio_kv_pool bus{}; // the pool at the context's bus addresses
			REQUIRE(gio_kv_pool_bus(t.ctx[d], &pool.pool, nullptr, &bus) == 0);
			const uint64_t objects = uint64_t(kLayers) * kBlocks;
			tables[d].resize(objects);
			segs[d].resize(objects * pool.runs.nruns);
			uint64_t seg_addr = 0;
			const gio_dptr_caps *caps = gio_ctx_dptr_caps(t.ctx[d]);
			if (prp) {
				gio_kv_table_sizes sz{};
				REQUIRE(gio_kv_table_plan(&bus, &pool.runs, caps, &sz) == 0);
				REQUIRE(sz.prp_rc == 0);
				cmds = gio_kv_table_prp_cmds(&bus, &pool.runs, caps);
				CHECK(cmds == sz.prp_cmds);
				// One command an object: lists in 256-byte chunks, as Linux's driver allocates them;
				// one a run: the plan's list bound.
				list_stride = cmds == 1 ? gio_prp_object_alloc_bytes(kObject, caps->page_bytes, GIO_PRP_CHUNK_LINUX)
							: sz.prp_list_bytes;
				const uint64_t entries = objects * cmds;
				tables[d].resize(entries);
				lists[d].assign(entries * list_stride + 4096, 0);
				unsigned char *area = lists[d].data() + (4096 - (uintptr_t)lists[d].data() % 4096) % 4096;
				uint64_t list_addr = 0;
				REQUIRE(gio_ctx_register(t.ctx[d], area, entries * list_stride, &list_addr) == 0);
				for (uint64_t e = 0; e < entries; e++) {
					INFO("entry " << e);
					REQUIRE(gio_kv_table_entry_prp(&bus, &pool.runs, caps, e, list_addr, list_stride,
								       &tables[d][e], area) == 0);
				}
				// The SGL form is refused where the controller has none.
				CHECK(gio_kv_table_entry(&bus, &pool.runs, caps, 0, 0, &tables[d][0].sgl, segs[d].data()) ==
				      -EOPNOTSUPP);
			} else {
				if (pool.runs.nruns > 1)
					REQUIRE(gio_ctx_register(t.ctx[d], segs[d].data(), segs[d].size() * sizeof(gio_sgl_desc),
								 &seg_addr) == 0);
				for (uint64_t o = 0; o < objects; o++)
					REQUIRE(gio_kv_table_entry(&bus, &pool.runs, caps, o, seg_addr, &tables[d][o].sgl,
								   segs[d].data()) == 0);
			}
			devs[d] = cpu_plan_dev(t.ctx[d], qps[d], tables[d].data(), prp ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR, cmds);
		}
		gio_kv_plan_params pp{};
		pp.engine = GIO_KV_ENGINE_CPU;
		pp.max_requests = kBlocks;
		pp.blocks = kBlocks;
		pp.devs = devs.data();
		REQUIRE(gio_kv_plan_create(store, &pp, &plan) == 0);
	}
	void close()
	{
		CHECK(gio_kv_plan_destroy(plan) == 0);
		plan = nullptr;
		for (size_t d = 0; d < t.ctx.size(); d++) {
			for (auto *qp : qps[d])
				CHECK(gio_ctx_qp_destroy(t.ctx[d], qp, 5 * kSecond, nullptr, nullptr) >= 0);
			CHECK(gio_ctx_unregister(t.ctx[d], pool.mem.data()) == 0);
			if (prp)
				CHECK(gio_ctx_unregister(t.ctx[d], lists[d].data() + (4096 - (uintptr_t)lists[d].data() % 4096) % 4096) == 0);
			else if (pool.runs.nruns > 1)
				CHECK(gio_ctx_unregister(t.ctx[d], segs[d].data()) == 0);
		}
		CHECK(gio_kv_store_close(store) == 0);
		store = nullptr;
	}
	void reopen()
	{
		close();
		t.reopen();
		open(false);
	}
	~Rig()
	{
		if (store)
			close();
	}
	// Runs every layer of the open batch and waits for each.
	void run_all(bool write)
	{
		for (uint32_t l = 0; l < kLayers; l++) {
			INFO(gio_last_error());
			REQUIRE(gio_kv_plan_run_layer(plan, l, write) == 0);
		}
		for (uint32_t l = 0; l < kLayers; l++)
			REQUIRE(gio_kv_plan_wait_layer(plan, l, 10 * kSecond) == 0);
	}
};

// Saves chunks first..first+n-1 from pool blocks src_block(i).
void save(Rig &r, uint64_t first, uint32_t n, uint32_t (*src_block)(uint32_t))
{
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t i = 0; i < n; i++) {
		keys.push_back(kv_chunk_key(first + i));
		blocks.push_back(src_block(i));
		for (uint32_t l = 0; l < kLayers; l++)
			r.pool.fill(l, src_block(i), first + i);
	}
	std::vector<int32_t> rc(n, 1);
	INFO(gio_last_error());
	REQUIRE(gio_kv_plan_save(r.plan, keys.data(), blocks.data(), n, rc.data()) == int(n));
	for (auto x : rc)
		REQUIRE(x == 0);
	r.run_all(true);
	std::vector<gio_kv_io_result> res(n);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);
	for (auto &x : res)
		CHECK(x.rc == 0);
}

// Whether the store serves chunk c, and its bytes are right.
bool serves(Rig &r, uint64_t c)
{
	std::vector<unsigned char> buf(kLayers * kObject);
	if (gio_kv_store_get(r.store, kv_chunk_key(c), buf.data(), buf.size()) != 1)
		return false;
	for (uint32_t l = 0; l < kLayers; l++)
		for (uint64_t k = 0; k < kObject; k += 509)
			if (buf[l * kObject + k] != kv_chunk_byte(c, l, k))
				return false;
	return true;
}

uint32_t identity(uint32_t i)
{
	return i;
}

uint32_t shuffled(uint32_t i)
{
	return (i * 29 + 7) % kBlocks;
}

void round_trip(Layout layout, bool prp = false)
{
	Rig r(4, layout, prp);
	const uint32_t n = 40;
	save(r, 0, n, identity);
	gio_kv_store_stats st;
	gio_kv_store_info(r.store, &st);
	CHECK(st.valid == n);
	CHECK(st.bytes_written == n * kLayers * kObject);

	r.reopen();
	r.pool.mem.poison();
	// The 40 chunks into shuffled blocks, and 8 keys never stored.
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t i = 0; i < kBlocks; i++) {
		keys.push_back(kv_chunk_key(i < n ? i : 1000 + i));
		blocks.push_back(shuffled(i));
	}
	std::vector<uint8_t> hit(kBlocks, 7);
	gio_kv_io_plan v;
	// No view before a batch opens: refused, and the message says why.
	CHECK(gio_kv_plan_view(r.plan, &v) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("no batch open") != std::string::npos);
	CHECK(gio_kv_plan_view(r.plan, nullptr) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("NULL view") != std::string::npos);
	REQUIRE(gio_kv_plan_load(r.plan, keys.data(), blocks.data(), kBlocks, hit.data()) == int(n));
	for (uint32_t i = 0; i < kBlocks; i++)
		CHECK(hit[i] == (i < n ? 1 : 0));
	REQUIRE(gio_kv_plan_view(r.plan, &v) == 0);
	// A request per command: one per object, or one per run where PRPs cannot chain the runs.
	CHECK(v.nreqs == n * r.cmds);
	CHECK(v.move_depth == GIO_KV_MOVE_DEPTH_DEFAULT); // the params left it 0
	CHECK(v.move_req == nullptr); // the warps move (the copy-engine mover is the GPU engine's)
	// Round-robin placement: each of the 4 devices holds a quarter; groups alternate devices, and
	// a device's 10 chunks make one group per queue pair (2 of 5 chunks), not one of 10.
	std::vector<uint32_t> per_dev(4, 0);
	for (uint32_t i = 0; i < v.nreqs; i++) {
		per_dev[v.reqs[i].dev]++;
		CHECK(v.reqs[i].part == i % r.cmds); // a chunk's commands in order, side by side
	}
	for (auto c : per_dev)
		CHECK(c == n / 4 * r.cmds);
	// What a scheduler's slot reads: each device's objects of one layer, whole.
	uint64_t bytes[5];
	REQUIRE(gio_kv_plan_layer_bytes(r.plan, bytes, 5) == 0);
	for (uint32_t d = 0; d < 4; d++)
		CHECK(bytes[d] == uint64_t(n / 4) * v.object_bytes);
	CHECK(bytes[4] == 0);
	CHECK(gio_kv_plan_layer_bytes(r.plan, bytes, 3) == -EINVAL); // no room for every device
	CHECK(gio_kv_plan_layer_bytes(r.plan, nullptr, 5) == -EINVAL);
	REQUIRE(v.ngroups == 8);
	for (uint32_t g = 0; g < v.ngroups; g++) {
		CHECK(v.groups[g].dev == g % 4);
		CHECK(v.groups[g].qp == g / 4); // a device's two groups on its two queue pairs, not on one
		CHECK(v.groups[g].count == 5 * r.cmds);
		for (uint32_t k = 0; k < v.groups[g].count; k++)
			CHECK(v.reqs[v.groups[g].first + k].dev == v.groups[g].dev);
	}
	r.run_all(false);
	std::vector<gio_kv_io_result> res(kBlocks);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);
	for (uint32_t i = 0; i < kBlocks; i++) {
		INFO("request " << i);
		CHECK(res[i].rc == 0);
		CHECK(res[i].layer == (i < n ? 0 : 0xffff));
		for (uint32_t l = 0; l < kLayers; l++) {
			if (i < n)
				CHECK(r.pool.holds(l, shuffled(i), i));
			else
				CHECK(r.pool.poisoned(l, shuffled(i)));
		}
	}
	gio_kv_store_info(r.store, &st);
	CHECK(st.pinned == 0);
	CHECK(st.hits == n);
	CHECK(st.misses == kBlocks - n);
	CHECK(st.bytes_read == n * kLayers * kObject);
}

} // namespace

TEST_CASE("plan: chunks saved layer by layer come back into shuffled pool blocks after a reopen", "[kv][io_uring]")
{
	SECTION("K and V together: one run an object")
	{
		round_trip(kTogether);
	}
	SECTION("K and V apart: two runs, one command with an SGL segment")
	{
		round_trip(kApart);
	}
	SECTION("K and V apart, runs inside pages: one command with an SGL segment")
	{
		round_trip(kApartUnaligned);
	}
	SECTION("PRP tables (a controller without SGLs): lists in 256-byte chunks")
	{
		round_trip(kTogether, true);
	}
	SECTION("PRP tables, K and V apart: two page-aligned runs in one PRP command")
	{
		round_trip(kApart, true);
	}
	SECTION("PRP tables, K and V apart inside pages: one PRP command per run")
	{
		round_trip(kApartUnaligned, true);
	}
}

// Plans a load of chunks 0..n-1 (each stored) into pool blocks 0..n-1.
void load_identity(Rig &r, uint32_t n)
{
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t i = 0; i < n; i++) {
		keys.push_back(kv_chunk_key(i));
		blocks.push_back(i);
	}
	REQUIRE(gio_kv_plan_load(r.plan, keys.data(), blocks.data(), n, nullptr) == int(n));
}

// Layers 0 and 1 run clean; then device 2's second command of layer 2 fails: one object's, or
// (a command per run) the second run of its first chunk.
void fail_mid_layer(Layout layout, bool prp)
{
	Rig r(4, layout, prp);
	save(r, 0, 16, identity);
	r.pool.mem.poison();
	load_identity(r, 16);
	gio_kv_io_plan v;
	REQUIRE(gio_kv_plan_view(r.plan, &v) == 0);
	for (uint32_t l = 0; l < 2; l++) {
		REQUIRE(gio_kv_plan_run_layer(r.plan, l, 0) == 0);
		REQUIRE(gio_kv_plan_wait_layer(r.plan, l, 10 * kSecond) == 0);
	}
	gio_fault f{};
	f.fail_nth = 2;
	f.fail_status = GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ);
	REQUIRE(gio_ctx_inject(r.t.ctx[2], &f) == 0);
	for (uint32_t l = 2; l < kLayers; l++)
		REQUIRE(gio_kv_plan_run_layer(r.plan, l, 0) == 0);
	for (uint32_t l = 2; l < kLayers; l++)
		REQUIRE(gio_kv_plan_wait_layer(r.plan, l, 10 * kSecond) == 0);
	std::vector<gio_kv_io_result> res(16);
	CHECK(gio_kv_plan_finish(r.plan, res.data(), 0) == -EIO);
	uint32_t failed = 0;
	for (uint32_t i = 0; i < 16; i++) {
		INFO("request " << i << " rc " << res[i].rc);
		if (res[i].rc) {
			failed++;
			CHECK(res[i].rc == -EIO);
			CHECK(res[i].status == GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ));
			CHECK(res[i].layer == 2);
		} else {
			for (uint32_t l = 0; l < kLayers; l++)
				CHECK(r.pool.holds(l, i, i));
		}
	}
	CHECK(failed == 1);
	// The failed chunk stays stored (a read failed, not the data): a second load serves it all.
	REQUIRE(gio_ctx_inject(r.t.ctx[2], nullptr) == 0);
	r.pool.mem.poison();
	load_identity(r, 16);
	r.run_all(false);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);
	for (uint32_t i = 0; i < 16; i++)
		for (uint32_t l = 0; l < kLayers; l++)
			CHECK(r.pool.holds(l, i, i));
	gio_kv_store_stats st;
	gio_kv_store_info(r.store, &st);
	CHECK(st.pinned == 0);
}

// Every object's commands are consecutive requests of one device, part 0 first: a key's result
// reads its requests [first, first + cmds) (plan.c, requests_result()). A group that filled up in
// the middle of an object once left its other commands for the device's next group, after other
// devices' groups had taken request numbers in between: that object's result then read another
// device's request, so a failed run could report success (seen on the H200 as 0 or 2 failed keys
// for one failed command).
TEST_CASE("plan: an object's commands are consecutive requests, whatever the group sizes", "[kv][io_uring]")
{
	Rig r(4, kApartUnaligned, true); // a PRP command per run: 2 commands an object
	REQUIRE(r.cmds == 2);
	save(r, 0, 30, identity);
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t i = 0; i < 30; i++) {
		keys.push_back(kv_chunk_key(i));
		blocks.push_back(i);
	}
	for (uint32_t n = 1; n <= 30; n++) {
		INFO(n << " keys");
		REQUIRE(gio_kv_plan_load(r.plan, keys.data(), blocks.data(), n, nullptr) == int(n));
		gio_kv_io_plan v;
		REQUIRE(gio_kv_plan_view(r.plan, &v) == 0);
		REQUIRE(v.nreqs == 2 * n);
		for (uint32_t q = 0; q < v.nreqs; q++) {
			INFO("request " << q << ": block " << v.reqs[q].block << " part " << v.reqs[q].part << " device "
					<< v.reqs[q].dev);
			if (q % 2 == 0) {
				CHECK(v.reqs[q].part == 0);
			} else {
				CHECK(v.reqs[q].part == 1);
				CHECK(v.reqs[q].block == v.reqs[q - 1].block);
				CHECK(v.reqs[q].dev == v.reqs[q - 1].dev);
			}
		}
		for (uint32_t g = 0; g < v.ngroups; g++)
			for (uint32_t k = 0; k < v.groups[g].count; k++)
				CHECK(v.reqs[v.groups[g].first + k].dev == v.groups[g].dev);
		CHECK(gio_kv_plan_finish(r.plan, nullptr, 0) == 0);
	}
}

TEST_CASE("plan: a device failing mid-layer fails only its request, with the NVMe status", "[kv][io_uring]")
{
	SECTION("a command an object")
	{
		fail_mid_layer(kTogether, false);
	}
	SECTION("a PRP command per run: the chunk's result is its failing run's")
	{
		fail_mid_layer(kApartUnaligned, true);
	}
}

TEST_CASE("plan: a save whose layer fails commits the other chunks only", "[kv][io_uring]")
{
	Rig r(2, kTogether);
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t i = 0; i < 8; i++) {
		keys.push_back(kv_chunk_key(i));
		blocks.push_back(i);
		for (uint32_t l = 0; l < kLayers; l++)
			r.pool.fill(l, i, i);
	}
	REQUIRE(gio_kv_plan_save(r.plan, keys.data(), blocks.data(), 8, nullptr) == 8);
	gio_fault f{};
	f.fail_nth = 3;
	f.fail_status = GIO_SF(GIO_SCT_MEDIA, GIO_SC_WRITE_FAULT) | GIO_SF_DNR;
	REQUIRE(gio_ctx_inject(r.t.ctx[1], &f) == 0);
	r.run_all(true);
	std::vector<gio_kv_io_result> res(8);
	CHECK(gio_kv_plan_finish(r.plan, res.data(), 0) == -EIO);
	uint32_t failed = 0;
	for (auto &x : res)
		if (x.rc) {
			failed++;
			CHECK(x.rc == -EIO);
			CHECK(x.status == (GIO_SF(GIO_SCT_MEDIA, GIO_SC_WRITE_FAULT) | GIO_SF_DNR));
		}
	CHECK(failed == 1);
	gio_kv_store_stats st;
	gio_kv_store_info(r.store, &st);
	CHECK(st.valid == 7);
	CHECK(st.pinned == 0);
	// What committed is what a get serves, byte for byte; the failed key is a miss.
	r.reopen();
	for (uint32_t i = 0; i < 8; i++)
		CHECK(serves(r, i) == (res[i].rc == 0));
}

namespace {

// Plans a save of chunks first..first+n-1 from blocks 0..n-1 of a full store, with the device's
// Nth command from now failing (0: none); the reservations' results, and *msg the planning's
// message.
std::vector<int32_t> save_evicting(Rig &r, uint64_t first, uint32_t n, uint64_t fail_nth, std::string *msg = nullptr)
{
	std::vector<gio_kv_u128> keys;
	std::vector<uint32_t> blocks;
	for (uint32_t i = 0; i < n; i++) {
		keys.push_back(kv_chunk_key(first + i));
		blocks.push_back(i);
		for (uint32_t l = 0; l < kLayers; l++)
			r.pool.fill(l, i, first + i);
	}
	gio_fault f{};
	f.fail_nth = fail_nth;
	f.fail_status = GIO_SF(GIO_SCT_MEDIA, GIO_SC_WRITE_FAULT) | GIO_SF_DNR;
	REQUIRE(gio_ctx_inject(r.t.ctx[0], fail_nth ? &f : nullptr) == 0);
	std::vector<int32_t> rc(n, 1);
	REQUIRE(gio_kv_plan_save(r.plan, keys.data(), blocks.data(), n, rc.data()) >= 0);
	if (msg)
		*msg = gio_last_error();
	REQUIRE(gio_ctx_inject(r.t.ctx[0], nullptr) == 0);
	return rc;
}

} // namespace

TEST_CASE("plan: a full store writes the evicted slots' entries FREE a run of slots at a time", "[kv][io_uring]")
{
	// Every slot of a full store holds a VALID entry: a save that evicts must write those FREE
	// and flush before its data lands. One command per slot made planning a save of N chunks cost
	// N round trips; consecutive slots now go in one command, several commands in flight.
	Rig r(1, kTogether);
	gio_kv_store_stats st;
	gio_kv_store_info(r.store, &st);
	const uint32_t cap = uint32_t(st.capacity);
	REQUIRE(cap >= 12);
	REQUIRE(cap <= kBlocks);
	save(r, 0, cap, identity);

	// The 4 oldest chunks are evicted, from consecutive slots: their FREE entries are one write,
	// so the device's second command is already the Flush. Failing it fails all 4 (one command
	// per slot failed only the second chunk).
	std::string msg;
	auto rc = save_evicting(r, 100, 4, 2, &msg);
	for (auto x : rc)
		CHECK(x == -EIO);
	INFO(msg);
	CHECK(msg.find("flush of the FREE entries") != std::string::npos);
	CHECK(gio_kv_plan_finish(r.plan, nullptr, 0) == 0);

	// A write of a run that fails is written again entry by entry: the fault costs no chunk.
	rc = save_evicting(r, 200, 4, 1);
	for (auto x : rc)
		CHECK(x == 0);
	r.run_all(true);
	std::vector<gio_kv_io_result> res(4);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);

	// Those 4 took the slots the failed Flush left free (stale: written FREE again first). Now
	// slots apart: chunks 5 and 7 used again, so the next evictions are 4, 6, 8 and 9: three
	// runs, in flight together. What the reopen reads is what was written.
	const gio_kv_u128 used[2] = {kv_chunk_key(5), kv_chunk_key(7)};
	const uint32_t into[2] = {40, 41};
	REQUIRE(gio_kv_plan_load(r.plan, used, into, 2, nullptr) == 2);
	r.run_all(false);
	REQUIRE(gio_kv_plan_finish(r.plan, nullptr, 0) == 0);
	rc = save_evicting(r, 300, 4, 0);
	for (auto x : rc)
		CHECK(x == 0);
	r.run_all(true);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);
	gio_kv_store_info(r.store, &st);
	CHECK(st.evictions == 8);
	r.reopen();
	gio_kv_store_info(r.store, &st);
	CHECK(st.valid == cap);
	CHECK(st.refused == 0);
	for (uint64_t c = 0; c < cap; c++) {
		INFO("chunk " << c);
		CHECK(serves(r, c) == (c == 5 || c == 7 || c >= 10));
	}
	for (uint64_t c : {200, 201, 202, 203, 300, 301, 302, 303})
		CHECK(serves(r, c));
	for (uint64_t c : {100, 101, 102, 103})
		CHECK_FALSE(serves(r, c));
}

TEST_CASE("plan: a batch of misses runs its layers and finishes", "[kv][io_uring]")
{
	Rig r(4, kTogether);
	const gio_kv_u128 keys[3] = {kv_chunk_key(1), kv_chunk_key(2), kv_chunk_key(3)};
	const uint32_t blocks[3] = {0, 1, 2};
	REQUIRE(gio_kv_plan_load(r.plan, keys, blocks, 3, nullptr) == 0);
	r.run_all(false);
	gio_kv_io_result res[3];
	CHECK(gio_kv_plan_finish(r.plan, res, 0) == 0);
	for (auto &x : res) {
		CHECK(x.rc == 0);
		CHECK(x.layer == 0xffff);
	}
	REQUIRE(gio_kv_plan_load(r.plan, nullptr, nullptr, 0, nullptr) == 0);
	r.run_all(false);
	CHECK(gio_kv_plan_finish(r.plan, nullptr, 0) == 0);
}

TEST_CASE("plan: the CPU engine times each layer it ran, kept until the next batch", "[kv][io_uring]")
{
	Rig r(4, kTogether);
	save(r, 0, 16, identity);
	uint64_t ns = 0;
	// The save batch that just finished: every layer timed, and still readable.
	for (uint32_t l = 0; l < kLayers; l++) {
		INFO("layer " << l);
		CHECK(gio_kv_plan_layer_time(r.plan, l, &ns) == 0);
		CHECK(ns > 0);
		CHECK(ns < 10 * kSecond);
	}
	load_identity(r, 16);
	// A new batch: nothing of it has run, the last batch's times are gone.
	for (uint32_t l = 0; l < kLayers; l++)
		CHECK(gio_kv_plan_layer_time(r.plan, l, &ns) == -EAGAIN);
	REQUIRE(gio_kv_plan_run_layer(r.plan, 1, 0) == 0);
	REQUIRE(gio_kv_plan_wait_layer(r.plan, 1, 10 * kSecond) == 0);
	// Once wait_layer saw the layer finish, its time is there (the call waits the microseconds
	// between the thread's layer word and its stamp).
	CHECK(gio_kv_plan_layer_time(r.plan, 1, &ns) == 0);
	CHECK(gio_kv_plan_layer_time(r.plan, 0, &ns) == -EAGAIN); // not run
	for (uint32_t l = 0; l < kLayers; l++)
		if (l != 1)
			REQUIRE(gio_kv_plan_run_layer(r.plan, l, 0) == 0);
	REQUIRE(gio_kv_plan_finish(r.plan, nullptr, 0) == 0);
	CHECK(gio_kv_plan_layer_time(r.plan, 0, &ns) == 0); // finish waited for every layer
	CHECK(gio_kv_plan_layer_time(r.plan, kLayers, &ns) == -EINVAL);
	CHECK(std::strstr(gio_last_error(), "layer") != nullptr);
	CHECK(gio_kv_plan_layer_time(r.plan, 0, nullptr) == -EINVAL);
	CHECK(gio_kv_plan_layer_time(nullptr, 0, &ns) == -EINVAL);
}

TEST_CASE("plan: bad input gets -EINVAL naming the problem", "[kv][io_uring]")
{
	Rig r(2, kTogether);
	const gio_kv_u128 keys[2] = {kv_chunk_key(1), kv_chunk_key(2)};
	const uint32_t bad_blocks[2] = {0, kBlocks};
	CHECK(gio_kv_plan_load(r.plan, keys, bad_blocks, 2, nullptr) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("request 1: block 48") != std::string::npos);
	CHECK(gio_kv_plan_load(r.plan, keys, bad_blocks, kBlocks + 1, nullptr) == -EINVAL);
	CHECK(gio_kv_plan_run_layer(r.plan, 0, 0) == -EINVAL); // no batch
	CHECK(gio_kv_plan_finish(r.plan, nullptr, 0) == -EINVAL);

	const uint32_t blocks[2] = {0, 1};
	REQUIRE(gio_kv_plan_save(r.plan, keys, blocks, 2, nullptr) == 2);
	CHECK(gio_kv_plan_load(r.plan, keys, blocks, 2, nullptr) == -EINVAL); // a batch open
	CHECK(gio_kv_plan_run_layer(r.plan, kLayers, 1) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("layer 4 beyond") != std::string::npos);
	CHECK(gio_kv_plan_run_layer(r.plan, 0, 0) == -EINVAL); // a load call on a save batch
	REQUIRE(gio_kv_plan_run_layer(r.plan, 0, 1) == 0);
	CHECK(gio_kv_plan_run_layer(r.plan, 0, 1) == -EALREADY);
	// Only a GPU-engine launcher takes a layer back: a CPU plan's layer is queued, never launched.
	CHECK(gio_kv_plan_layer_cancel(r.plan, 0) == -EINVAL);
	CHECK(gio_kv_plan_layer_cancel(nullptr, 0) == -EINVAL);
	// Layers 1..3 never ran: nothing commits, the slots go back.
	std::vector<gio_kv_io_result> res(2);
	CHECK(gio_kv_plan_finish(r.plan, res.data(), 0) == -ECANCELED);
	for (auto &x : res)
		CHECK(x.rc == -ECANCELED);
	gio_kv_store_stats st;
	gio_kv_store_info(r.store, &st);
	CHECK(st.valid == 0);
	CHECK(st.pinned == 0);
	CHECK(st.free == st.capacity);

	// A plan whose devices do not match the store's blocks, or lack tables.
	gio_kv_plan *p2 = nullptr;
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = 4;
	pp.blocks = kBlocks;
	std::vector<gio_kv_io_dev> devs = r.devs;
	pp.devs = devs.data();
	pp.poll_ns = 1000001; // more than the GPU's __nanosleep gives
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("poll_ns above 1 ms") != std::string::npos);
	pp.poll_ns = 0;
	pp.move_depth = 17; // more loads in flight than the mover keeps
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("move_depth 17: 1 to 16") != std::string::npos);
	pp.move_depth = 0;
	// The copy-engine mover: a known mover, the GPU engine's, for staged devices only.
	pp.mover = 2;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("mover 2 unknown") != std::string::npos);
	pp.mover = GIO_KV_MOVER_COPY_ENGINE;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("the copy-engine mover is for the GPU engine") != std::string::npos);
	pp.engine = GIO_KV_ENGINE_GPU; // refused before any GPU is asked for: these devices are peer-to-peer
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("no device of the plan is staged") != std::string::npos);
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.mover = GIO_KV_MOVER_SM;
	// Completions mirrored into GPU memory: a known way, and only where the copy engine moves.
	pp.completions = 2;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("completions 2 unknown") != std::string::npos);
	pp.completions = GIO_KV_COMPLETIONS_MIRROR;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("mirrored completions need the copy-engine mover") != std::string::npos);
	pp.completions = GIO_KV_COMPLETIONS_POLL;
	devs[1].lba_shift = 9;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("device 1: lba_shift 9") != std::string::npos);
	devs[1] = r.devs[1];
	devs[0].table = nullptr;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("device 0: no P2P table") != std::string::npos);
	devs[0] = r.devs[0];
	// Commands per run that do not split the 16 KiB object into equal runs, or into runs of
	// whole 4096-byte blocks.
	devs[1].cmds = 3;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("device 1: 3 commands per object do not divide") != std::string::npos);
	devs[1].cmds = 8;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("do not divide the 2048-byte run of an object") != std::string::npos);
	devs[1] = r.devs[1];
	// A pool whose memory the context never registered: refused when its bus addresses are
	// asked for, before any table could point a controller at it.
	{
		PageMem other(kPoolBytes);
		gio_kv_pool stray = r.pool.pool, bus{};
		stray.base = reinterpret_cast<uint64_t>(other.data());
		CHECK(gio_kv_pool_bus(r.t.ctx[0], &stray, nullptr, &bus) == -EINVAL);
		CHECK(std::string(gio_last_error()).find("is not inside memory registered with the context: an unregistered pool") !=
		      std::string::npos);
		// Registered, but the pool reaches 4 KiB past the region's end.
		stray.base = r.pool.pool.base + 4096;
		CHECK(gio_kv_pool_bus(r.t.ctx[0], &stray, nullptr, &bus) == -EINVAL);
	}
	pp.engine = 7;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = 0;
	CHECK(gio_kv_plan_create(r.store, &pp, &p2) == -EINVAL);
	CHECK(p2 == nullptr);
}

TEST_CASE("plan: an object that is not whole blocks is refused at creation", "[kv]")
{
	Targets t(1, false, "size=4M");
	gio_kv_store *s = nullptr;
	gio_kv_store_params p{};
	p.layers = 2;
	p.object_bytes = 3000;
	p.pool_signature = 1;
	p.timeout_ns = 5 * kSecond;
	REQUIRE(gio_kv_store_create(t.ctx.data(), 1, &p, &s) == 0);
	gio_qp *qp = nullptr;
	REQUIRE(gio_ctx_qp_create(t.ctx[0], 8, &qp) == 0);
	gio_dptr table[4]{};
	gio_kv_io_dev dev{};
	dev.qps = &qp;
	dev.table = table;
	dev.nqps = 1;
	dev.nsid = 1;
	dev.lba_shift = 12;
	dev.psdt = GIO_PSDT_SGL_MPTR;
	gio_kv_plan_params pp{};
	pp.max_requests = 2;
	pp.blocks = 2;
	pp.devs = &dev;
	gio_kv_plan *plan = nullptr;
	CHECK(gio_kv_plan_create(s, &pp, &plan) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("do not divide the 3000-byte object") != std::string::npos);
	CHECK(gio_ctx_qp_destroy(t.ctx[0], qp, 5 * kSecond, nullptr, nullptr) >= 0);
	CHECK(gio_kv_store_close(s) == 0);
}

// A second CPU-engine plan on the rig's store (the scheduler's tests: a save batch beside the
// rig's load batch).
static gio_kv_plan *second_plan(Rig &r)
{
	gio_kv_plan *p = nullptr;
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = kBlocks;
	pp.blocks = kBlocks;
	pp.devs = r.devs.data();
	REQUIRE(gio_kv_plan_create(r.store, &pp, &p) == 0);
	return p;
}

// The plan driven through the scheduler (giouring/sched/issue.h), CPU engine: a load batch's
// layers are the reads of four prefill slots, a save batch's layers the deferred writes. Modelled
// devices of 4 GB/s read and 2 GB/s write: a slot reads 4 chunks' 16 KiB objects a device (64 KiB:
// 16.4 us) and a save layer writes 64 KiB a device (32.8 us). Slots of 40 us leave no room for one
// (16.4 + 32.8 > 40), the last slot's 100 us room for two, and then two decode steps without
// reads drain one each (decode always issues the oldest). Every chunk then loads back intact.
TEST_CASE("plan: loads and saves issued through the scheduler (reads first; writes in the slack; decode drains)", "[kv][io_uring]")
{
	Rig r(4, kTogether);
	save(r, 0, 16, identity); // chunks 0-15 stored, from blocks 0-15
	gio_kv_plan *sp = second_plan(r);
	// The save batch: chunks 16-31 from blocks 16-31.
	std::vector<gio_kv_u128> skeys, lkeys;
	std::vector<uint32_t> sblocks, lblocks;
	for (uint32_t i = 0; i < 16; i++) {
		skeys.push_back(kv_chunk_key(16 + i));
		sblocks.push_back(16 + i);
		for (uint32_t l = 0; l < kLayers; l++)
			r.pool.fill(l, 16 + i, 16 + i);
		lkeys.push_back(kv_chunk_key(i));
		lblocks.push_back(32 + i); // the load batch: chunks 0-15 into blocks 32-47
	}
	REQUIRE(gio_kv_plan_save(sp, skeys.data(), sblocks.data(), 16, nullptr) == 16);
	REQUIRE(gio_kv_plan_load(r.plan, lkeys.data(), lblocks.data(), 16, nullptr) == 16);

	gio_sched_config cfg{};
	cfg.ndevs = 4;
	cfg.gate = GIO_SCHED_GATE_LAYER;
	cfg.sm_min = 1;
	cfg.sm_max = 8;
	for (uint32_t d = 0; d < 4; d++)
		cfg.dev[d] = gio_sched_dev{4.0, 2.0, 1.0};
	std::vector<gio_sched_item> ring(8);
	gio_sched_backlog bl{};
	REQUIRE(gio_sched_backlog_init(&bl, ring.data(), 8, 1ull << 30, 0) == 0);
	const uint64_t per_dev = 4 * kObject; // 16 chunks round-robin over 4 devices
	for (uint32_t l = 0; l < kLayers; l++) {
		gio_sched_item it{};
		it.id = gio_sched_save_id(0, l);
		for (uint32_t d = 0; d < 4; d++)
			it.bytes[d] = per_dev;
		REQUIRE(gio_sched_backlog_push(&bl, &it) == 0);
	}
	gio_kv_plan *saves[1] = {sp};
	gio_sched_issuer is{&cfg, &bl, saves, 1, nullptr, nullptr, 10 * kSecond};
	gio_sched_write w[8];
	gio_sched_decision dec{};
	std::vector<uint32_t> issued;
	for (uint32_t l = 0; l < kLayers; l++) {
		gio_sched_slot slot{};
		slot.phase = GIO_SCHED_PREFILL;
		slot.slack_ns = l + 1 < kLayers ? 40000 : 100000;
		for (uint32_t d = 0; d < 4; d++)
			slot.read_bytes[d] = per_dev;
		INFO("layer " << l << ": " << gio_last_error());
		REQUIRE(gio_sched_issue(&is, &slot, r.plan, l, w, 8, &dec) == 0);
		CHECK(dec.bubble_ns == 0);
		issued.push_back(dec.nwrites);
	}
	for (int step = 0; step < 2; step++) {
		gio_sched_slot slot{};
		slot.phase = GIO_SCHED_DECODE;
		slot.slack_ns = 10000;
		INFO("decode step " << step << ": " << gio_last_error());
		REQUIRE(gio_sched_issue(&is, &slot, nullptr, 0, w, 8, &dec) == 0);
		issued.push_back(dec.nwrites);
	}
	CHECK(issued == std::vector<uint32_t>{0, 0, 0, 2, 1, 1});
	CHECK(bl.count == 0);
	CHECK(bl.popped == kLayers);
	// An item naming no save plan is refused before anything is issued.
	{
		gio_sched_item it{};
		it.id = gio_sched_save_id(5, 0);
		it.bytes[0] = 4096;
		REQUIRE(gio_sched_backlog_push(&bl, &it) == 0);
		gio_sched_slot slot{};
		slot.phase = GIO_SCHED_DECODE;
		CHECK(gio_sched_issue(&is, &slot, nullptr, 0, w, 8, &dec) == -EINVAL);
		CHECK(std::string(gio_last_error()).find("names save plan 5 of 1") != std::string::npos);
		CHECK(bl.count == 1);
	}
	std::vector<gio_kv_io_result> res(16);
	REQUIRE(gio_kv_plan_finish(sp, res.data(), 0) == 0);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);
	for (uint32_t i = 0; i < 16; i++)
		for (uint32_t l = 0; l < kLayers; l++)
			CHECK(r.pool.holds(l, 32 + i, i));
	// The saved chunks load back too.
	r.pool.mem.poison();
	REQUIRE(gio_kv_plan_load(r.plan, skeys.data(), lblocks.data(), 16, nullptr) == 16);
	r.run_all(false);
	REQUIRE(gio_kv_plan_finish(r.plan, res.data(), 0) == 0);
	for (uint32_t i = 0; i < 16; i++)
		for (uint32_t l = 0; l < kLayers; l++)
			CHECK(r.pool.holds(l, 32 + i, 16 + i));
	CHECK(gio_kv_plan_destroy(sp) == 0);
}

// A launcher gets each slot's SM budget: gio_sched_decision::sm, the slot's clamped to the
// config's [sm_min, sm_max] (0: sm_max). This one records what it was given and runs the layer
// with the CPU engine (a load waited for before anything else, as one stream would order it).
struct Recorded {
	uint32_t layer, write, sm;
	bool operator==(const Recorded &o) const { return layer == o.layer && write == o.write && sm == o.sm; }
};

static int record_launch(void *arg, gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm)
{
	static_cast<std::vector<Recorded> *>(arg)->push_back({layer, (uint32_t)write, sm});
	const int rc = gio_kv_plan_run_layer(plan, layer, write);
	return rc || write ? rc : gio_kv_plan_wait_layer(plan, layer, 10 * kSecond);
}

TEST_CASE("plan: the scheduler hands each launch its slot's SM budget", "[kv][io_uring]")
{
	Rig r(4, kTogether);
	save(r, 0, 8, identity);
	gio_kv_plan *sp = second_plan(r);
	std::vector<gio_kv_u128> skeys, lkeys;
	std::vector<uint32_t> sblocks, lblocks;
	for (uint32_t i = 0; i < 8; i++) {
		skeys.push_back(kv_chunk_key(100 + i));
		sblocks.push_back(i);
		lkeys.push_back(kv_chunk_key(i));
		lblocks.push_back(16 + i);
	}
	REQUIRE(gio_kv_plan_save(sp, skeys.data(), sblocks.data(), 8, nullptr) == 8);
	REQUIRE(gio_kv_plan_load(r.plan, lkeys.data(), lblocks.data(), 8, nullptr) == 8);
	gio_sched_config cfg{};
	cfg.ndevs = 4;
	cfg.sm_min = 2;
	cfg.sm_max = 6;
	for (uint32_t d = 0; d < 4; d++)
		cfg.dev[d] = gio_sched_dev{4.0, 2.0, 1.0};
	std::vector<gio_sched_item> ring(kLayers);
	gio_sched_backlog bl{};
	REQUIRE(gio_sched_backlog_init(&bl, ring.data(), kLayers, 1ull << 30, 0) == 0);
	for (uint32_t l = 0; l < kLayers; l++) {
		gio_sched_item it{};
		it.id = gio_sched_save_id(0, l);
		it.bytes[0] = 2 * kObject;
		REQUIRE(gio_sched_backlog_push(&bl, &it) == 0);
	}
	std::vector<Recorded> got;
	gio_kv_plan *saves[1] = {sp};
	gio_sched_issuer is{&cfg, &bl, saves, 1, record_launch, &got, 10 * kSecond};
	gio_sched_write w[8];
	gio_sched_decision dec{};
	const uint32_t budget[4] = {0, 1, 4, 9}; // no budget, under sm_min, inside, over sm_max
	static_assert(kLayers == 4, "one budget a layer");
	std::vector<Recorded> want;
	for (uint32_t l = 0; l < kLayers; l++) {
		gio_sched_slot slot{};
		slot.phase = GIO_SCHED_PREFILL;
		slot.sm = budget[l];
		slot.slack_ns = 1000000000; // room for every write
		slot.read_bytes[0] = 2 * kObject;
		INFO("layer " << l << ": " << gio_last_error());
		REQUIRE(gio_sched_issue(&is, &slot, r.plan, l, w, 8, &dec) == 0);
		const uint32_t sm = l == 0 ? 6 : l == 1 ? 2 : l == 2 ? 4 : 6;
		CHECK(dec.sm == sm);
		want.push_back({l, 0, sm});
		for (uint32_t k = 0; k < dec.nwrites; k++)
			want.push_back({(uint32_t)w[k].id, 1, sm});
	}
	CHECK(bl.count == 0);
	CHECK(got == want);
	REQUIRE(gio_kv_plan_finish(sp, nullptr, 0) == 0);
	REQUIRE(gio_kv_plan_finish(r.plan, nullptr, 0) == 0);
	for (uint32_t i = 0; i < 8; i++)
		for (uint32_t l = 0; l < kLayers; l++)
			CHECK(r.pool.holds(l, 16 + i, i));
	CHECK(gio_kv_plan_destroy(sp) == 0);
}

// The launch's shape: blocks wider than the kernel allows split into more blocks of the same
// warps, then the SM budget cuts the blocks.
TEST_CASE("plan: a layer's launch fitted to the kernel's block bound and an SM budget", "[kv]")
{
	auto fit = [](uint32_t ctas, uint32_t threads, uint32_t max_threads, uint32_t max_ctas) {
		gio_kv_plan_launch l{};
		l.ctas = ctas;
		l.threads = threads;
		gio_kv_plan_launch_fit(&l, max_threads, max_ctas);
		return std::make_pair(l.ctas, l.threads);
	};
	CHECK(fit(8, 256, 1024, 0) == std::make_pair(8u, 256u));   // fits: unchanged
	CHECK(fit(8, 1024, 512, 0) == std::make_pair(16u, 512u));  // split: the same 256 warps
	CHECK(fit(3, 1024, 384, 0) == std::make_pair(8u, 384u));   // 96 warps in blocks of 12: 8 blocks
	CHECK(fit(8, 256, 1024, 2) == std::make_pair(2u, 256u));   // budget of 2 SMs
	CHECK(fit(8, 256, 1024, 16) == std::make_pair(8u, 256u));  // a budget above the plan's blocks
	CHECK(fit(8, 1024, 512, 4) == std::make_pair(4u, 512u));   // split, then the budget
	CHECK(fit(8, 256, 0, 0) == std::make_pair(8u, 256u));      // no bounds
}
