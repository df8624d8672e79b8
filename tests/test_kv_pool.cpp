// KV pools described by strides (giouring/kv/pool.h): the runs of every object against a model
// that sorts the object's element addresses one by one, the layouts engines use, the pool checks
// and their faults, signatures, and the P2P table's SGL entries and PRP figures walked by the
// controller's walkers.
#include <catch2/catch.hpp>

#include <giouring/kv/pool.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/prp_walk.h>
#include <giouring/proto/sgl_walk.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

const uint32_t L = GIO_KV_LAYER, B = GIO_KV_BLOCK, P = GIO_KV_PART, N = GIO_KV_TOKEN, H = GIO_KV_HEAD,
	       C = GIO_KV_CHANNEL;

uint32_t dim_of(char letter)
{
	switch (letter) {
	case 'L': return L;
	case 'B': return B;
	case 'P': return P;
	case 'N': return N;
	case 'H': return H;
	case 'C': return C;
	}
	FAIL("unknown dimension letter " << letter);
	return 0;
}

struct Extents {
	uint32_t l, b, p, n, h, c;
};

// A contiguous buffer whose dimensions, outermost first, are named by `order` (letters of
// L B P N H C): the strides torch gives a contiguous tensor of that shape. Dimensions not named
// must have extent 1; their stride is left 0.
gio_kv_pool contiguous(const std::string &order, Extents e, uint32_t elem_bytes, uint64_t base)
{
	gio_kv_pool pool{};
	const uint32_t ext[GIO_KV_DIMS] = {e.l, e.b, e.p, e.n, e.h, e.c};
	uint64_t s = 1;
	pool.base = base;
	pool.elem_bytes = elem_bytes;
	for (uint32_t d = 0; d < GIO_KV_DIMS; d++) {
		pool.extent[d] = ext[d];
		if (ext[d] != 1)
			REQUIRE(order.find("LBPNHC"[d]) != std::string::npos);
	}
	for (size_t i = order.size(); i-- > 0;) {
		const uint32_t d = dim_of(order[i]);
		pool.stride[d] = s;
		s *= ext[d];
	}
	return pool;
}

// The same pool seen as a tensor per layer: the layer's stride moves into a table of bases.
gio_kv_pool per_layer(gio_kv_pool pool, const std::vector<uint64_t> &bases)
{
	REQUIRE(bases.size() == pool.extent[L]);
	pool.base = 0;
	pool.bases = bases.data();
	pool.base_mode = GIO_KV_BASE_LAYER;
	pool.stride[L] = 0;
	return pool;
}

// K and V buffers of their own per layer, each [tokens, heads, dim] with a block a page of
// e.n tokens: bases[layer * parts + part].
gio_kv_pool kv_buffers(Extents e, const std::vector<uint64_t> &bases)
{
	gio_kv_pool pool = contiguous("BNHC", Extents{1, e.b, 1, e.n, e.h, e.c}, 2, 0);
	REQUIRE(bases.size() == (size_t)e.l * e.p);
	pool.extent[L] = e.l;
	pool.extent[P] = e.p;
	pool.bases = bases.data();
	pool.base_mode = GIO_KV_BASE_LAYER_PART;
	return pool;
}

uint64_t element_addr(const gio_kv_pool &pool, uint32_t l, uint32_t b, uint32_t p, uint32_t n, uint32_t h, uint32_t c)
{
	uint64_t base = pool.base;
	if (pool.base_mode == GIO_KV_BASE_LAYER)
		base = pool.bases[l];
	else if (pool.base_mode == GIO_KV_BASE_LAYER_PART)
		base = pool.bases[(uint64_t)l * pool.extent[P] + p];
	const uint64_t *s = pool.stride;
	return base + pool.elem_bytes * (l * s[L] + b * s[B] + p * s[P] + n * s[N] + h * s[H] + c * s[C]);
}

using Intervals = std::vector<std::pair<uint64_t, uint64_t>>; // [addr, addr + len), in order

void append(Intervals &v, uint64_t addr, uint64_t len)
{
	if (!v.empty() && v.back().second == addr)
		v.back().second += len;
	else
		v.push_back({addr, addr + len});
}

// The device bytes of an object by the model: every element, ordered by part where parts have
// bases of their own, then by address; as merged intervals.
Intervals model_object(const gio_kv_pool &pool, uint32_t l, uint32_t b)
{
	std::vector<std::pair<uint64_t, uint64_t>> elems; // (part key, address)
	const int by_part = pool.base_mode == GIO_KV_BASE_LAYER_PART;
	for (uint32_t p = 0; p < pool.extent[P]; p++)
		for (uint32_t n = 0; n < pool.extent[N]; n++)
			for (uint32_t h = 0; h < pool.extent[H]; h++)
				for (uint32_t c = 0; c < pool.extent[C]; c++)
					elems.push_back({by_part ? p : 0, element_addr(pool, l, b, p, n, h, c)});
	std::sort(elems.begin(), elems.end());
	Intervals v;
	for (const auto &e : elems)
		append(v, e.second, pool.elem_bytes);
	return v;
}

Intervals run_object(const gio_kv_pool &pool, const gio_kv_runs &runs, uint32_t l, uint32_t b)
{
	std::vector<gio_range> r(runs.nruns);
	REQUIRE(gio_kv_object_ranges(&pool, &runs, l, b, r.data(), runs.nruns) == (int)runs.nruns);
	Intervals v;
	for (const auto &x : r) {
		CHECK(x.len == runs.run_bytes);
		append(v, x.addr, x.len);
	}
	return v;
}

gio_kv_runs runs_of(const gio_kv_pool &pool)
{
	gio_kv_runs runs{};
	gio_kv_pool_fault f{};
	INFO("fault " << gio_kv_pool_check(&pool, &f) << " code " << f.code << " dims " << f.dim_a << "," << f.dim_b);
	REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
	return runs;
}

// Every object's runs hold exactly its bytes, in the model's order.
void check_all_objects(const gio_kv_pool &pool, const gio_kv_runs &runs)
{
	for (uint32_t l = 0; l < pool.extent[L]; l++)
		for (uint32_t b = 0; b < pool.extent[B]; b++) {
			INFO("object (" << l << ", " << b << ")");
			REQUIRE(run_object(pool, runs, l, b) == model_object(pool, l, b));
		}
}

std::vector<uint32_t> order_of(const gio_kv_runs &runs)
{
	return std::vector<uint32_t>(runs.order, runs.order + runs.ndims);
}

gio_dptr_caps byte_caps()
{
	gio_dptr_caps caps{};
	caps.sgls = GIO_SGLS_SUPPORT_BYTE;
	caps.page_bytes = 4096;
	return caps;
}

Intervals walked(const gio_xfer_list &out)
{
	Intervals v;
	for (uint32_t i = 0; i < out.n; i++)
		append(v, out.segs[i].addr, out.segs[i].len);
	return v;
}

gio_kv_table_sizes plan_of(const gio_kv_pool &pool, const gio_kv_runs &runs, const gio_dptr_caps &caps = byte_caps())
{
	gio_kv_table_sizes t{};
	REQUIRE(gio_kv_table_plan(&pool, &runs, &caps, &t) == 0);
	return t;
}

const uint64_t kSegArea = 0x7f0000000000ull; // bus address of the segment list area
const uint64_t kPrpList = 0x7f8000000000ull; // and of PRP lists

// The SGL table of the whole pool, built entry by entry as a GPU thread per object would; each
// entry's command walked by the controller's walker moves exactly the object's runs.
void check_sgl_table(const gio_kv_pool &pool, const gio_kv_runs &runs, const gio_dptr_caps &caps)
{
	const gio_kv_table_sizes t = plan_of(pool, runs, caps);
	REQUIRE(t.sgl_rc == 0);
	REQUIRE(t.objects == (uint64_t)pool.extent[L] * pool.extent[B]);
	CHECK(t.sgl_desc_bytes == 16 * t.objects);
	CHECK(t.sgl_list_stride == (runs.nruns > 1 ? 16ull * runs.nruns : 0));
	CHECK(t.sgl_bytes == t.sgl_desc_bytes + t.objects * t.sgl_list_stride);
	std::vector<gio_sgl_desc> table(t.objects), seg(t.sgl_list_bytes / 16 + 1);
	for (uint64_t i = 0; i < t.objects; i++)
		REQUIRE(gio_kv_table_entry(&pool, &runs, &caps, i, kSegArea, &table[i], runs.nruns > 1 ? seg.data() : nullptr) == 0);

	gio_dma_region reg{kSegArea, seg.size() * sizeof(gio_sgl_desc), seg.data()};
	gio_dma_map map{&reg, 1};
	std::vector<gio_xfer_seg> segs(runs.nruns + 1);
	for (uint64_t i = 0; i < t.objects; i++) {
		const uint32_t l = (uint32_t)(i / pool.extent[B]), b = (uint32_t)(i % pool.extent[B]);
		INFO("object " << i << " (" << l << ", " << b << ")");
		const gio_sgl_desc &d = table[i];
		if (runs.nruns == 1) {
			CHECK(d.id == GIO_SGL_ID(GIO_SGL_TYPE_DATA_BLOCK, GIO_SGL_SUBTYPE_ADDRESS));
			CHECK(d.len == runs.object_bytes);
		} else {
			CHECK(d.id == GIO_SGL_ID(GIO_SGL_TYPE_LAST_SEGMENT, GIO_SGL_SUBTYPE_ADDRESS));
			CHECK(d.addr == kSegArea + i * t.sgl_list_stride);
			CHECK(d.len == t.sgl_list_stride);
		}
		gio_sqe sqe{};
		REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
		sqe.dptr.sgl = d;
		gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MPTR);
		gio_xfer_list out{segs.data(), (uint32_t)segs.size(), 0};
		REQUIRE(gio_sgl_walk(&sqe, runs.object_bytes, 0, &caps, &map, &out) == 0);
		CHECK(walked(out) == model_object(pool, l, b));
	}
}

// The PRP form: where the plan says one command per object, PRPs built from the object's ranges
// walk to its bytes within the plan's pages and list; else each run does on its own.
void check_prp(const gio_kv_pool &pool, const gio_kv_runs &runs, const gio_dptr_caps &caps)
{
	const gio_kv_table_sizes t = plan_of(pool, runs, caps);
	REQUIRE(t.prp_rc == 0);
	REQUIRE((t.prp_cmds == 1 || t.prp_cmds == runs.nruns));
	CHECK(t.prp_object_bytes == t.prp_cmds * (16 + t.prp_list_bytes));
	CHECK(t.prp_bytes == t.objects * t.prp_object_bytes);
	std::vector<uint64_t> list(t.prp_list_bytes / 8 + 1);
	gio_dma_region reg{kPrpList, list.size() * 8, list.data()};
	gio_dma_map map{&reg, 1};
	std::vector<gio_xfer_seg> segs(t.prp_pages + 1);
	std::vector<gio_range> r(runs.nruns);
	for (uint32_t l = 0; l < pool.extent[L]; l++)
		for (uint32_t b = 0; b < pool.extent[B]; b++) {
			INFO("object (" << l << ", " << b << ")");
			REQUIRE(gio_kv_object_ranges(&pool, &runs, l, b, r.data(), runs.nruns) == (int)runs.nruns);
			const uint32_t per_cmd = t.prp_cmds == 1 ? runs.nruns : 1;
			Intervals all;
			for (uint32_t k = 0; k < runs.nruns; k += per_cmd) {
				gio_prp_sizes plan{};
				REQUIRE(gio_prp_plan(&r[k], per_cmd, &caps, &plan) == 0);
				CHECK(plan.npages <= t.prp_pages);
				CHECK(plan.list_bytes <= t.prp_list_bytes);
				gio_sqe sqe{};
				REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
				REQUIRE(gio_prp_build(&sqe, &r[k], per_cmd, &caps, list.data(), kPrpList, list.size() * 8) ==
					(int)plan.list_bytes);
				gio_xfer_list out{segs.data(), (uint32_t)segs.size(), 0};
				REQUIRE(gio_prp_walk(&sqe, plan.xfer_bytes, &caps, &map, &out) == 0);
				for (const auto &x : walked(out))
					append(all, x.first, x.second - x.first);
			}
			CHECK(all == model_object(pool, l, b));
		}
	// The PRP table entries (prp_cmds an object: the object's, or one a run), lists a page apart:
	// walked, each object's commands in order move the model's bytes.
	const uint32_t cmds = gio_kv_table_prp_cmds(&pool, &runs, &caps);
	CHECK(cmds == t.prp_cmds);
	const uint64_t stride = (t.prp_list_bytes + caps.page_bytes - 1) / caps.page_bytes * caps.page_bytes;
	std::vector<uint64_t> area(t.objects * cmds * stride / 8 + 1);
	gio_dma_region areg{kPrpList, area.size() * 8, area.data()};
	gio_dma_map amap{&areg, 1};
	for (uint64_t o = 0; o < t.objects; o++) {
		const uint32_t l = (uint32_t)(o / pool.extent[B]), b = (uint32_t)(o % pool.extent[B]);
		INFO("PRP table entries of object (" << l << ", " << b << ")");
		Intervals all;
		for (uint32_t k = 0; k < cmds; k++) {
			gio_dptr d{};
			REQUIRE(gio_kv_table_entry_prp(&pool, &runs, &caps, o * cmds + k, kPrpList, stride, &d,
						       stride ? area.data() : nullptr) == 0);
			gio_sqe sqe{};
			REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
			sqe.dptr = d;
			gio_xfer_list out{segs.data(), (uint32_t)segs.size(), 0};
			REQUIRE(gio_prp_walk(&sqe, cmds == 1 ? runs.object_bytes : runs.run_bytes, &caps, &amap, &out) == 0);
			for (const auto &x : walked(out))
				append(all, x.first, x.second - x.first);
		}
		CHECK(all == model_object(pool, l, b));
	}
	// Past the last entry: refused, nothing written.
	gio_dptr d{};
	CHECK(gio_kv_table_entry_prp(&pool, &runs, &caps, t.objects * cmds, kPrpList, stride, &d,
				     stride ? area.data() : nullptr) == -EINVAL);
}

// Everything that holds for any pool: each object's runs against the model, the SGL table
// walked, the PRP form.
void check_moves(const gio_kv_pool &pool, const gio_kv_runs &runs)
{
	check_all_objects(pool, runs);
	check_sgl_table(pool, runs, byte_caps());
	check_prp(pool, runs, byte_caps());
}

Extents small() // 16-token blocks of 2 heads of 64 bf16 channels: 4 KiB a part
{
	return Extents{3, 5, 2, 16, 2, 64};
}

// A memory the size of a few small pools at bus addresses kMemBase on, to move objects through.
const uint64_t kMemBase = 0x100000;

struct Mem {
	std::vector<uint8_t> bytes = std::vector<uint8_t>(0x100000);
	uint8_t *at(uint64_t addr, uint64_t len)
	{
		REQUIRE(addr >= kMemBase);
		REQUIRE(addr - kMemBase + len <= bytes.size());
		return &bytes[addr - kMemBase];
	}
};

uint16_t value_of(uint32_t l, uint32_t b, uint32_t p, uint32_t n, uint32_t h, uint32_t c)
{
	return (uint16_t)(((((l * 8 + b) * 2 + p) * 16 + n) * 2 + h) * 64 + c);
}

// Writes each element of object (l, b) of a bf16-sized pool with the value of (src_l, src_b, ...);
// with check set, counts the elements that differ from it instead.
uint64_t each_element(Mem &m, const gio_kv_pool &pool, uint32_t l, uint32_t b, uint32_t src_l, uint32_t src_b,
		      bool check)
{
	uint64_t differ = 0;
	REQUIRE(pool.elem_bytes == 2);
	for (uint32_t p = 0; p < pool.extent[P]; p++)
		for (uint32_t n = 0; n < pool.extent[N]; n++)
			for (uint32_t h = 0; h < pool.extent[H]; h++)
				for (uint32_t c = 0; c < pool.extent[C]; c++) {
					uint16_t want = value_of(src_l, src_b, p, n, h, c), got;
					uint8_t *e = m.at(element_addr(pool, l, b, p, n, h, c), 2);
					if (check) {
						std::memcpy(&got, e, 2);
						differ += got != want;
					} else {
						std::memcpy(e, &want, 2);
					}
				}
	return differ;
}

// What a write of object (l, b) puts on the device: its runs, concatenated in order.
std::vector<uint8_t> store(Mem &m, const gio_kv_pool &pool, uint32_t l, uint32_t b)
{
	const gio_kv_runs runs = runs_of(pool);
	std::vector<uint8_t> dev;
	for (uint32_t r = 0; r < runs.nruns; r++) {
		const uint8_t *src = m.at(gio_kv_run_addr(&pool, &runs, l, b, r), runs.run_bytes);
		dev.insert(dev.end(), src, src + runs.run_bytes);
	}
	return dev;
}

// And what a read of it into object (l, b) of another pool does.
void load(Mem &m, const gio_kv_pool &pool, uint32_t l, uint32_t b, const std::vector<uint8_t> &dev)
{
	const gio_kv_runs runs = runs_of(pool);
	REQUIRE(dev.size() == runs.object_bytes);
	for (uint32_t r = 0; r < runs.nruns; r++)
		std::memcpy(m.at(gio_kv_run_addr(&pool, &runs, l, b, r), runs.run_bytes), &dev[r * runs.run_bytes],
			    runs.run_bytes);
}

uint64_t signature(const gio_kv_pool &pool)
{
	const gio_kv_runs runs = runs_of(pool);
	return gio_kv_pool_signature(&pool, &runs);
}

gio_kv_pool_fault fault_of(const gio_kv_pool &pool)
{
	gio_kv_pool_fault f{};
	f.code = 99;
	const int rc = gio_kv_pool_check(&pool, &f);
	CHECK(rc == (f.code == GIO_KV_FAULT_NONE ? 0 : -EINVAL));
	return f;
}

} // namespace

TEST_CASE("pool: dimension names for messages", "[kv_pool]")
{
	CHECK(std::string(gio_kv_dim_name(GIO_KV_LAYER)) == "layer");
	CHECK(std::string(gio_kv_dim_name(GIO_KV_BLOCK)) == "block");
	CHECK(std::string(gio_kv_dim_name(GIO_KV_PART)) == "part");
	CHECK(std::string(gio_kv_dim_name(GIO_KV_TOKEN)) == "token");
	CHECK(std::string(gio_kv_dim_name(GIO_KV_HEAD)) == "head");
	CHECK(std::string(gio_kv_dim_name(GIO_KV_CHANNEL)) == "channel");
	CHECK(std::string(gio_kv_dim_name(GIO_KV_DIMS)) == "?");
}

TEST_CASE("pool: vLLM's tensor per layer [2, blocks, block, heads, dim]: K and V apart, 2 runs", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const gio_kv_pool pool = per_layer(contiguous("LPBNHC", small(), 2, 0), bases);
	CHECK(pool.stride[P] == 5 * 16 * 2 * 64);
	CHECK(pool.stride[B] == 16 * 2 * 64);
	const gio_kv_runs runs = runs_of(pool);
	CHECK(runs.object_bytes == 8192);
	CHECK(runs.nruns == 2);
	CHECK(runs.run_bytes == 4096);
	CHECK(runs.nouter == 1);
	CHECK(order_of(runs) == std::vector<uint32_t>{P, N, H, C});
	CHECK(runs.outer_extent[0] == 2);
	CHECK(runs.outer_stride[0] == 5 * 4096);
	CHECK(runs.layers_contiguous == 0);
	// K then V of (layer 1, block 3): block 3 of each half of layer 1's tensor.
	CHECK(gio_kv_run_addr(&pool, &runs, 1, 3, 0) == 0x30000000 + 3 * 4096);
	CHECK(gio_kv_run_addr(&pool, &runs, 1, 3, 1) == 0x30000000 + 5 * 4096 + 3 * 4096);
	CHECK(gio_kv_run_addr(&pool, &runs, 2, 0, 0) == 0x20000000);
	CHECK(gio_kv_run_addr(&pool, &runs, 2, 4, 1) == 0x20000000 + 9 * 4096);
	check_moves(pool, runs);

	// Both runs page aligned: one PRP command per object, PRP1 and PRP2 for its two pages.
	const gio_kv_table_sizes t = plan_of(pool, runs);
	CHECK(t.objects == 15);
	CHECK(t.nruns == 2);
	CHECK(t.sgl_object_bytes == 48);
	CHECK(t.sgl_bytes == 15 * 48);
	CHECK(t.prp_cmds == 1);
	CHECK(t.prp_pages == 2);
	CHECK(t.prp_list_bytes == 0);
	CHECK(t.prp_object_bytes == 16);
}

TEST_CASE("pool: vLLM's tensor per layer [blocks, 2, block, heads, dim]: one run, same device order", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const gio_kv_pool pool = per_layer(contiguous("LBPNHC", small(), 2, 0), bases);
	const gio_kv_runs runs = runs_of(pool);
	CHECK(runs.nruns == 1);
	CHECK(runs.run_bytes == 8192);
	CHECK(runs.nouter == 0);
	CHECK(order_of(runs) == std::vector<uint32_t>{P, N, H, C});
	CHECK(gio_kv_run_addr(&pool, &runs, 0, 0, 0) == 0x10000000);
	CHECK(gio_kv_run_addr(&pool, &runs, 1, 4, 0) == 0x30000000 + 4 * 8192);
	CHECK(gio_kv_run_addr(&pool, &runs, 2, 2, 0) == 0x20000000 + 2 * 8192);
	CHECK(runs.layers_contiguous == 0);
	check_moves(pool, runs);
	// K and V apart or together, the object is K's tokens then V's on the device.
	CHECK(signature(pool) == signature(per_layer(contiguous("LPBNHC", small(), 2, 0), bases)));
}

TEST_CASE("pool: K and V packed in the last dim [blocks, heads, block, 2 * dim] and its token-major view", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const gio_kv_pool hnd = per_layer(contiguous("LBHNPC", small(), 2, 0), bases);
	CHECK(hnd.stride[P] == 64); // the part stride is the head dim: V follows K inside a row
	CHECK(hnd.stride[C] == 1);
	CHECK(hnd.stride[N] == 128);
	CHECK(hnd.stride[H] == 16 * 128);
	const gio_kv_runs runs = runs_of(hnd);
	CHECK(runs.nruns == 1);
	CHECK(runs.run_bytes == 8192);
	CHECK(order_of(runs) == std::vector<uint32_t>{H, N, P, C});
	CHECK(gio_kv_run_addr(&hnd, &runs, 1, 3, 0) == 0x30000000 + 3 * 8192);
	check_moves(hnd, runs);

	// The engine's view [blocks, block, heads, 2 * dim] is a permutation of the same storage's
	// strides: torch reports (4096, 128, 2048, 1). Read dimension by dimension, the same pool.
	const uint64_t storage[4] = {2 * 16 * 128, 16 * 128, 128, 1}; // contiguous [blocks, heads, block, 2 * dim]
	const uint64_t view[4] = {storage[0], storage[2], storage[1], storage[3]}; // .permute(0, 2, 1, 3)
	gio_kv_pool from_view = hnd;
	from_view.stride[B] = view[0];
	from_view.stride[N] = view[1];
	from_view.stride[H] = view[2];
	from_view.stride[C] = view[3];
	from_view.stride[P] = 64 * view[3];
	CHECK(std::memcmp(from_view.stride, hnd.stride, sizeof(hnd.stride)) == 0);
	const gio_kv_runs vr = runs_of(from_view);
	CHECK(std::memcmp(&vr, &runs, sizeof(runs)) == 0);
	CHECK(signature(from_view) == signature(hnd));

	// Storage that really is token-major is another device order.
	const gio_kv_pool nhd = per_layer(contiguous("LBNHPC", small(), 2, 0), bases);
	const gio_kv_runs nr = runs_of(nhd);
	CHECK(nr.nruns == 1);
	CHECK(order_of(nr) == std::vector<uint32_t>{N, H, P, C});
	check_all_objects(nhd, nr);
	CHECK(signature(nhd) != signature(hnd));
	CHECK(signature(hnd) != signature(per_layer(contiguous("LBPNHC", small(), 2, 0), bases)));
}

TEST_CASE("pool: one buffer [L, B, H, N, C] in six layouts", "[kv_pool]")
{
	// These pools hold one tensor kind (PART extent 1): a K/V cache in such a layout is two pools,
	// or names P among the letters, as the blocks-first case below does.
	const Extents e{3, 4, 1, 16, 2, 64};
	const uint64_t base = 0x40000000;
	struct Want {
		const char *layout;
		uint32_t nruns;
		uint64_t run_bytes;
		uint32_t layers_contiguous;
		std::vector<uint32_t> order;
		uint64_t l_bytes, b_bytes, r_bytes; // address = base + l * l_bytes + b * b_bytes + r * r_bytes
	};
	const Want want[] = {
		{"LBHNC", 1, 4096, 0, {H, N, C}, 4 * 4096, 4096, 0},
		{"LBNHC", 1, 4096, 0, {N, H, C}, 4 * 4096, 4096, 0},
		{"LHBNC", 2, 2048, 0, {H, N, C}, 4 * 4096, 2048, 4 * 2048},
		{"BLHNC", 1, 4096, 1, {H, N, C}, 4096, 3 * 4096, 0},
		{"BLNHC", 1, 4096, 1, {N, H, C}, 4096, 3 * 4096, 0},
		{"BHLNC", 2, 2048, 0, {H, N, C}, 2048, 3 * 4096, 3 * 2048},
	};
	for (const Want &w : want) {
		INFO(w.layout);
		const gio_kv_pool pool = contiguous(w.layout, e, 2, base);
		const gio_kv_runs runs = runs_of(pool);
		CHECK(runs.object_bytes == 4096);
		CHECK(runs.nruns == w.nruns);
		CHECK(runs.run_bytes == w.run_bytes);
		CHECK(runs.layers_contiguous == w.layers_contiguous);
		CHECK(order_of(runs) == w.order);
		for (uint32_t l = 0; l < 3; l++)
			for (uint32_t b = 0; b < 4; b += 3)
				for (uint32_t r = 0; r < runs.nruns; r++)
					CHECK(gio_kv_run_addr(&pool, &runs, l, b, r) ==
					      base + l * w.l_bytes + b * w.b_bytes + r * w.r_bytes);
		check_moves(pool, runs);
		gio_range all{};
		const int rc = gio_kv_block_range(&pool, &runs, 2, 0, 3, &all);
		if (w.layers_contiguous) {
			REQUIRE(rc == 0);
			CHECK(all.addr == base + 2 * 3 * 4096);
			CHECK(all.len == 3 * 4096);
		} else {
			CHECK(rc == -EOPNOTSUPP);
		}
	}
	// Heads outside blocks: PRPs cannot join a head's 2 KiB runs, one command per run.
	const gio_kv_pool lhbnc = contiguous("LHBNC", e, 2, base);
	const gio_kv_runs runs = runs_of(lhbnc);
	const gio_kv_table_sizes t = plan_of(lhbnc, runs);
	CHECK(t.prp_rc == 0);
	CHECK(t.prp_cmds == 2);
	CHECK(t.prp_pages == 1);
	CHECK(t.prp_object_bytes == 32);
	gio_range r[2];
	REQUIRE(gio_kv_object_ranges(&lhbnc, &runs, 0, 1, r, 2) == 2);
	const gio_dptr_caps caps = byte_caps();
	gio_prp_sizes plan{};
	CHECK(gio_prp_plan(r, 2, &caps, &plan) == -EINVAL);
	// The device order is the heads' and the tokens' within them, wherever layers and blocks are.
	const uint64_t hn = signature(contiguous("LBHNC", e, 2, base));
	CHECK(signature(contiguous("LHBNC", e, 2, base)) == hn);
	CHECK(signature(contiguous("BLHNC", e, 2, base)) == hn);
	CHECK(signature(contiguous("BHLNC", e, 2, base)) == hn);
	const uint64_t nh = signature(contiguous("LBNHC", e, 2, base));
	CHECK(signature(contiguous("BLNHC", e, 2, base)) == nh);
	CHECK(nh != hn);
}

TEST_CASE("pool: blocks-first cross-layer buffer [blocks, L, 2, block, heads, dim]", "[kv_pool]")
{
	const uint64_t base = 0x40000000;
	const gio_kv_pool pool = contiguous("BLPNHC", small(), 2, base);
	const gio_kv_runs runs = runs_of(pool);
	CHECK(runs.nruns == 1);
	CHECK(runs.run_bytes == 8192);
	CHECK(runs.layers_contiguous == 1);
	CHECK(order_of(runs) == std::vector<uint32_t>{P, N, H, C});
	CHECK(gio_kv_run_addr(&pool, &runs, 2, 4, 0) == base + 4 * 3 * 8192 + 2 * 8192);
	check_moves(pool, runs);
	gio_range all{};
	REQUIRE(gio_kv_block_range(&pool, &runs, 4, 0, 3, &all) == 0);
	CHECK(all.addr == base + 4 * 3 * 8192);
	CHECK(all.len == 3 * 8192);
	REQUIRE(gio_kv_block_range(&pool, &runs, 1, 1, 2, &all) == 0);
	CHECK(all.addr == base + 3 * 8192 + 8192);
	CHECK(all.len == 2 * 8192);
	CHECK(gio_kv_block_range(&pool, &runs, 5, 0, 1, &all) == -EINVAL);
	CHECK(gio_kv_block_range(&pool, &runs, 0, 0, 0, &all) == -EINVAL);
	CHECK(gio_kv_block_range(&pool, &runs, 0, 2, 2, &all) == -EINVAL);
	CHECK(gio_kv_block_range(&pool, &runs, 0, 3, 1, &all) == -EINVAL);
	// Its objects are laid out on the device as vLLM's per-layer tensors are.
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	CHECK(signature(pool) == signature(per_layer(contiguous("LPBNHC", small(), 2, 0), bases)));

	// K before V outside the layers: a block's layers are no longer one run.
	const gio_kv_pool kv_outer = contiguous("BPLNHC", small(), 2, base);
	const gio_kv_runs kr = runs_of(kv_outer);
	CHECK(kr.nruns == 2);
	CHECK(kr.run_bytes == 4096);
	CHECK(kr.outer_stride[0] == 3 * 4096);
	CHECK(kr.layers_contiguous == 0);
	check_all_objects(kv_outer, kr);
	CHECK(gio_kv_block_range(&kv_outer, &kr, 0, 0, 3, &all) == -EOPNOTSUPP);
}

TEST_CASE("pool: SGLang's token pool, K and V buffers of their own per layer", "[kv_pool]")
{
	// Per layer k_buffer and v_buffer, each [tokens, heads, dim]; a block is a page of 16 tokens.
	// V below K in memory, layers out of order: nothing is assumed about where the buffers are.
	const Extents e{3, 4, 2, 16, 2, 64};
	std::vector<uint64_t> bases;
	for (uint64_t l = 0; l < 3; l++) {
		bases.push_back(0x50000000 + (2 - l) * 0x100000); // K of layer l
		bases.push_back(0x48000000 + l * 0x100000);       // V of layer l
	}
	const gio_kv_pool pool = kv_buffers(e, bases);
	const gio_kv_runs runs = runs_of(pool);
	CHECK(runs.nruns == 2);
	CHECK(runs.run_bytes == 4096);
	CHECK(runs.nouter == 1);
	CHECK(order_of(runs) == std::vector<uint32_t>{P, N, H, C});
	CHECK(runs.outer_stride[0] == 0);
	CHECK(gio_kv_run_addr(&pool, &runs, 0, 3, 0) == 0x50200000 + 3 * 4096);
	CHECK(gio_kv_run_addr(&pool, &runs, 0, 3, 1) == 0x48000000 + 3 * 4096);
	CHECK(gio_kv_run_addr(&pool, &runs, 2, 1, 0) == 0x50000000 + 4096);
	CHECK(gio_kv_run_addr(&pool, &runs, 2, 1, 1) == 0x48200000 + 4096);
	check_moves(pool, runs);
	// On the device, as vLLM's [2, blocks, ...] tensors: K's tokens, then V's.
	const std::vector<uint64_t> vbases = {0x10000000, 0x30000000, 0x20000000};
	CHECK(signature(pool) == signature(per_layer(contiguous("LPBNHC", small(), 2, 0), vbases)));

	// SGLang's MLA pool: one buffer per layer of [tokens, 1, 576] latents.
	const std::vector<uint64_t> mla_bases = {0x60000000, 0x61000000, 0x62000000};
	const gio_kv_pool mla = per_layer(contiguous("LBNHC", Extents{3, 4, 1, 16, 1, 576}, 2, 0), mla_bases);
	const gio_kv_runs mr = runs_of(mla);
	CHECK(mr.nruns == 1);
	CHECK(mr.run_bytes == 16 * 576 * 2);
	CHECK(order_of(mr) == std::vector<uint32_t>{N, C});
	check_all_objects(mla, mr);
	check_sgl_table(mla, mr, byte_caps());
}

TEST_CASE("pool: MLA latent cache per layer [blocks, block, 576]: no K/V split", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x10100000};
	const gio_kv_pool pool = per_layer(contiguous("LBNC", Extents{2, 6, 1, 16, 1, 576}, 2, 0), bases);
	const gio_kv_runs runs = runs_of(pool);
	CHECK(runs.nruns == 1);
	CHECK(runs.run_bytes == 18432);
	CHECK(gio_kv_run_addr(&pool, &runs, 1, 5, 0) == 0x10100000 + 5 * 18432);
	check_moves(pool, runs);
	// 4.5 pages an object: every other object starts half way into a page and ends on a page
	// boundary, so 5 pages each: PRP1 and a list of 4 entries.
	const gio_kv_table_sizes t = plan_of(pool, runs);
	CHECK(t.prp_cmds == 1);
	CHECK(t.prp_pages == 5);
	CHECK(t.prp_list_bytes == 32);
	CHECK(t.prp_object_bytes == 48);
	CHECK(t.sgl_object_bytes == 16);
}

TEST_CASE("pool: blocks padded apart", "[kv_pool]")
{
	// 4 KiB objects 6 KiB apart: every other one starts half way into a page and touches two.
	gio_kv_pool pool = contiguous("BNHC", Extents{1, 6, 1, 16, 2, 64}, 2, 0x40000000);
	pool.stride[B] = 3072;
	const gio_kv_runs runs = runs_of(pool);
	CHECK(runs.nruns == 1);
	CHECK(gio_kv_run_addr(&pool, &runs, 0, 3, 0) == 0x40000000 + 3 * 6144);
	check_moves(pool, runs);
	CHECK(plan_of(pool, runs).prp_pages == 2);

	// K and V halves of 2 KiB, each at the start of its own page: PRPs cannot join them, since
	// K ends inside its page.
	const std::vector<uint64_t> bases = {0x10000000, 0x20000000};
	gio_kv_pool kv = per_layer(contiguous("LPBNHC", Extents{2, 4, 2, 8, 2, 64}, 2, 0), bases);
	kv.stride[B] = 2048;
	kv.stride[P] = 4 * 2048;
	const gio_kv_runs kr = runs_of(kv);
	CHECK(kr.nruns == 2);
	CHECK(kr.run_bytes == 2048);
	check_moves(kv, kr);
	const gio_kv_table_sizes t = plan_of(kv, kr);
	CHECK(t.prp_cmds == 2);
	CHECK(t.prp_pages == 1);
}

TEST_CASE("pool: every order of the six dimensions in one buffer", "[kv_pool]")
{
	std::string perm = "BCHLNP";
	std::vector<std::pair<std::string, uint64_t>> sigs; // (object dims in order, signature)
	const gio_dptr_caps caps = byte_caps();
	int count = 0;
	do {
		INFO(perm);
		const gio_kv_pool pool = contiguous(perm, Extents{2, 3, 2, 3, 2, 4}, 2, 0x40000000);
		const gio_kv_runs runs = runs_of(pool);
		uint64_t outer = 1;
		for (uint32_t i = 0; i < runs.nouter; i++)
			outer *= runs.outer_extent[i];
		CHECK(runs.nruns == outer);
		CHECK(runs.nruns * runs.run_bytes == runs.object_bytes);
		CHECK(runs.ndims == 4);
		std::string object_order;
		for (char c : perm)
			if (std::string("PNHC").find(c) != std::string::npos)
				object_order += c;
		std::string got;
		for (uint32_t i = 0; i < runs.ndims; i++)
			got += "LBPNHC"[runs.order[i]];
		CHECK(got == object_order);
		// One run for the whole object when its four dimensions are innermost; its block's
		// layers one run when the layer is right outside them.
		CHECK((runs.nruns == 1) == (perm.substr(2).find_first_of("LB") == std::string::npos));
		CHECK(runs.layers_contiguous == (perm.substr(0, 2) == "BL" ? 1u : 0u));
		check_all_objects(pool, runs);
		check_sgl_table(pool, runs, caps);
		sigs.push_back({object_order, gio_kv_pool_signature(&pool, &runs)});
		count++;
	} while (std::next_permutation(perm.begin(), perm.end()));
	CHECK(count == 720);
	for (const auto &a : sigs)
		for (const auto &b : sigs)
			if ((a.first == b.first) != (a.second == b.second))
				FAIL(a.first << " and " << b.first << " signatures " << a.second << " and " << b.second);
}

TEST_CASE("pool: objects moved through the device between layouts of one signature", "[kv_pool]")
{
	Mem m;
	const uint64_t at = kMemBase;
	const Extents e{2, 3, 2, 16, 2, 64};
	const std::vector<uint64_t> a_bases = {at, at + 0x10000};
	const std::vector<uint64_t> b_bases = {at + 0x20000, at + 0x30000};
	const std::vector<uint64_t> x_bases = {at + 0x60000, at + 0x70000};
	const std::vector<uint64_t> s_bases = {at + 0x40000, at + 0x48000, at + 0x50000, at + 0x58000};
	const gio_kv_pool a = per_layer(contiguous("LPBNHC", e, 2, 0), a_bases); // K and V apart
	const gio_kv_pool b = per_layer(contiguous("LBPNHC", e, 2, 0), b_bases); // K and V of a block together
	const gio_kv_pool x = per_layer(contiguous("LBHNPC", e, 2, 0), x_bases); // heads outermost
	const gio_kv_pool s = kv_buffers(e, s_bases);                            // K and V buffers

	each_element(m, a, 1, 2, 1, 2, false);
	const std::vector<uint8_t> dev = store(m, a, 1, 2);
	REQUIRE(dev.size() == 8192);
	load(m, b, 0, 1, dev);
	CHECK(each_element(m, b, 0, 1, 1, 2, true) == 0);
	load(m, s, 1, 0, dev);
	CHECK(each_element(m, s, 1, 0, 1, 2, true) == 0);
	CHECK(signature(a) == signature(b));
	CHECK(signature(a) == signature(s));
	// Another signature, another byte order: the elements land in the wrong places (all but the
	// half whose head and part are equal, where the two orders agree).
	CHECK(signature(x) != signature(a));
	load(m, x, 0, 0, dev);
	CHECK(each_element(m, x, 0, 0, 1, 2, true) == 2048);
	// And back: what b stores, a reads.
	each_element(m, b, 1, 1, 0, 2, false);
	load(m, a, 0, 0, store(m, b, 1, 1));
	CHECK(each_element(m, a, 0, 0, 0, 2, true) == 0);
}

TEST_CASE("pool: the signature is part of the on-device format", "[kv_pool]")
{
	// Changing the function makes every store written before it unreadable: these are pinned.
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const uint64_t pnhc = signature(per_layer(contiguous("LPBNHC", small(), 2, 0), bases));
	const uint64_t hnpc = signature(per_layer(contiguous("LBHNPC", small(), 2, 0), bases));
	CHECK(pnhc == 0x2dc4088c059425d8ull);
	CHECK(hnpc == 0xeeaafa9564649929ull);
	
	// Each field counts: the element size, every extent of the object.
	CHECK(signature(per_layer(contiguous("LPBNHC", small(), 1, 0), bases)) != pnhc);
	CHECK(signature(per_layer(contiguous("LPBNHC", Extents{3, 5, 1, 16, 2, 64}, 2, 0), bases)) != pnhc);
	CHECK(signature(per_layer(contiguous("LPBNHC", Extents{3, 5, 2, 8, 2, 64}, 2, 0), bases)) != pnhc);
	CHECK(signature(per_layer(contiguous("LPBNHC", Extents{3, 5, 2, 16, 4, 64}, 2, 0), bases)) != pnhc);
	CHECK(signature(per_layer(contiguous("LPBNHC", Extents{3, 5, 2, 16, 2, 128}, 2, 0), bases)) != pnhc);
	// Not the layers, the blocks or where the pool is.
	CHECK(signature(per_layer(contiguous("LPBNHC", Extents{1, 9, 2, 16, 2, 64}, 2, 0), {0x1000})) == pnhc);
	CHECK(signature(contiguous("LPBNHC", small(), 2, 0x5000)) == pnhc);
}

TEST_CASE("pool: check names what is wrong", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const gio_kv_pool good = per_layer(contiguous("LPBNHC", small(), 2, 0), bases);
	gio_kv_pool_fault f = fault_of(good);
	CHECK(f.code == GIO_KV_FAULT_NONE);
	CHECK(gio_kv_pool_check(&good, nullptr) == 0);

	SECTION("element sizes of torch's dtypes only")
	{
		for (uint32_t e : {0u, 3u, 6u, 32u}) {
			gio_kv_pool p = good;
			p.elem_bytes = e;
			CHECK(fault_of(p).code == GIO_KV_FAULT_ELEM_BYTES);
			CHECK(gio_kv_pool_check(&p, nullptr) == -EINVAL);
		}
		for (uint32_t e : {1u, 2u, 4u, 8u, 16u}) {
			gio_kv_pool p = good;
			p.elem_bytes = e;
			CHECK(fault_of(p).code == GIO_KV_FAULT_NONE);
		}
	}
	SECTION("a zero extent")
	{
		gio_kv_pool p = good;
		p.extent[H] = 0;
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_EXTENT);
		CHECK(f.dim_a == H);
	}
	SECTION("bases against the mode")
	{
		gio_kv_pool p = good;
		p.bases = nullptr;
		CHECK(fault_of(p).code == GIO_KV_FAULT_BASES);
		p = good;
		p.base_mode = GIO_KV_BASE_ONE;
		CHECK(fault_of(p).code == GIO_KV_FAULT_BASES);
		p.base_mode = 3;
		CHECK(fault_of(p).code == GIO_KV_FAULT_BASES);
	}
	SECTION("a layer or part stride where bases address it")
	{
		gio_kv_pool p = good;
		p.stride[L] = 1;
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_BASE_STRIDE);
		CHECK(f.dim_a == L);
		std::vector<uint64_t> kv(6);
		for (size_t i = 0; i < kv.size(); i++)
			kv[i] = 0x10000000 + i * 0x1000000;
		p = good;
		p.bases = kv.data();
		p.base_mode = GIO_KV_BASE_LAYER_PART;
		f = fault_of(p); // the part stride of [2, blocks, ...] is not 0
		CHECK(f.code == GIO_KV_FAULT_BASE_STRIDE);
		CHECK(f.dim_a == P);
		p.stride[P] = 0;
		CHECK(fault_of(p).code == GIO_KV_FAULT_NONE);
	}
	SECTION("dimensions that alias, named for the message")
	{
		gio_kv_pool p = good;
		p.stride[N] = 100; // tokens 100 elements apart, but a token's heads span 128
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERLAP);
		CHECK(f.dim_a == N);
		CHECK(f.dim_b == H);
		const std::string msg = std::string("strides of ") + gio_kv_dim_name(f.dim_a) + " (" +
					std::to_string(p.stride[f.dim_a]) + ") and " + gio_kv_dim_name(f.dim_b) + " (" +
					std::to_string(p.stride[f.dim_b]) + ") overlap";
		CHECK(msg == "strides of token (100) and head (64) overlap");
		p = good;
		p.stride[P] -= 1; // V starts one element inside K's last block
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERLAP);
		CHECK(f.dim_a == P);
		CHECK(f.dim_b == B);
		p = good;
		p.stride[H] = 0; // every head on the same bytes
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERLAP);
		CHECK(f.dim_a == H);
		CHECK(f.dim_b == H);
		p = good;
		p.stride[H] = p.stride[N];
		CHECK(fault_of(p).code == GIO_KV_FAULT_OVERLAP);
	}
	SECTION("strides of dimensions of extent 1 do not count")
	{
		gio_kv_pool p = good;
		p.extent[P] = 1;
		p.stride[P] = 7;
		CHECK(fault_of(p).code == GIO_KV_FAULT_NONE);
		p.stride[P] = UINT64_MAX;
		CHECK(fault_of(p).code == GIO_KV_FAULT_NONE);
	}
	SECTION("spans that do not fit 64 bits")
	{
		gio_kv_pool p = good;
		p.stride[B] = 1ull << 62; // 4 steps of 2^62 elements
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERFLOW);
		CHECK(f.dim_a == B);
		p = good;
		p.stride[N] = (uint64_t)(int64_t)-128; // a negative torch stride
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERFLOW);
		CHECK(f.dim_a == N);
		p = good;
		p.stride[B] = 1ull << 63; // fits in elements, not in bytes
		p.extent[B] = 2;
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERFLOW);
		CHECK(f.dim_a == GIO_KV_DIMS);

		// A base whose span ends exactly at 2^64 fits; one byte further does not.
		gio_kv_pool one = contiguous("LBHNC", Extents{3, 4, 1, 16, 2, 64}, 2, 0);
		const uint64_t span = 3 * 4 * 4096;
		one.base = 0 - span;
		CHECK(fault_of(one).code == GIO_KV_FAULT_NONE);
		one.base += 2;
		f = fault_of(one);
		CHECK(f.code == GIO_KV_FAULT_OVERFLOW);
		CHECK(f.dim_a == GIO_KV_DIMS);
		std::vector<uint64_t> high = bases;
		high[2] = UINT64_MAX - 4095;
		p = per_layer(contiguous("LPBNHC", small(), 2, 0), high);
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_OVERFLOW);
		CHECK(f.layer_a == 2);
	}
	SECTION("layers' tensors that overlap")
	{
		const uint64_t span = 2 * 5 * 4096;
		std::vector<uint64_t> near = {0x10000000, 0x10000000 + span, 0x20000000};
		gio_kv_pool p = per_layer(contiguous("LPBNHC", small(), 2, 0), near);
		CHECK(fault_of(p).code == GIO_KV_FAULT_NONE); // back to back
		near[1] -= 1; // one byte shared
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_BASE_OVERLAP);
		CHECK(f.layer_a == 0);
		CHECK(f.layer_b == 1);
		near[1] = near[2] = 0x30000000;
		f = fault_of(p);
		CHECK(f.code == GIO_KV_FAULT_BASE_OVERLAP);
		CHECK(f.layer_a == 1);
		CHECK(f.layer_b == 2);

		// K of layer 1 on V of layer 0.
		std::vector<uint64_t> kv = {0x1000000, 0x2000000, 0x2000000 + 4096, 0x4000000, 0x5000000, 0x6000000};
		const gio_kv_pool s = kv_buffers(Extents{3, 4, 2, 16, 2, 64}, kv);
		f = fault_of(s);
		CHECK(f.code == GIO_KV_FAULT_BASE_OVERLAP);
		CHECK(f.layer_a == 0);
		CHECK(f.part_a == 1);
		CHECK(f.layer_b == 1);
		CHECK(f.part_b == 0);
		kv[2] = 0x3000000;
		CHECK(fault_of(s).code == GIO_KV_FAULT_NONE);
	}
	SECTION("no runs for a pool the check refuses")
	{
		gio_kv_pool p = good;
		p.stride[H] = 0;
		gio_kv_runs runs;
		std::memset(&runs, 0xab, sizeof(runs));
		const gio_kv_runs before = runs;
		CHECK(gio_kv_pool_runs(&p, &runs) == -EINVAL);
		CHECK(std::memcmp(&runs, &before, sizeof(runs)) == 0);
	}
}

TEST_CASE("pool: more runs than an object may have", "[kv_pool]")
{
	// Channels 2 elements apart under heads far apart: every element its own run, 2^32 of them.
	gio_kv_pool p{};
	p.elem_bytes = 1;
	for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
		p.extent[d] = 1;
	p.extent[C] = 0x10000;
	p.stride[C] = 2;
	p.extent[H] = 0x10000;
	p.stride[H] = 0x20000;
	gio_kv_runs runs{};
	CHECK(gio_kv_pool_runs(&p, &runs) == -E2BIG);
	p.extent[H] = 0xffff;
	REQUIRE(gio_kv_pool_runs(&p, &runs) == 0);
	CHECK(runs.nruns == 0xffffu * 0x10000u);
	CHECK(runs.run_bytes == 1);
	CHECK(runs.nouter == 2);
	CHECK(gio_kv_run_addr(&p, &runs, 0, 0, 0x10001) == 0x20000 + 2);
}

TEST_CASE("pool: ranges of an object and of a block's layers, refused where they cannot be", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const gio_kv_pool pool = per_layer(contiguous("LPBNHC", small(), 2, 0), bases);
	const gio_kv_runs runs = runs_of(pool);
	gio_range r[3] = {{1, 1}, {1, 1}, {1, 1}};
	CHECK(gio_kv_object_ranges(&pool, &runs, 3, 0, r, 3) == -EINVAL);
	CHECK(gio_kv_object_ranges(&pool, &runs, 0, 5, r, 3) == -EINVAL);
	CHECK(gio_kv_object_ranges(&pool, &runs, 0, 0, r, 1) == -ENOSPC);
	CHECK(r[0].addr == 1);
	CHECK(gio_kv_object_ranges(&pool, &runs, 2, 4, r, 3) == 2);
	CHECK(r[0].addr == 0x20000000 + 4 * 4096);
	CHECK(r[1].addr == 0x20000000 + 9 * 4096);
	CHECK(r[2].addr == 1);
	gio_range all{};
	CHECK(gio_kv_block_range(&pool, &runs, 0, 0, 1, &all) == -EOPNOTSUPP);

	// An 8 GiB run does not fit a range's length, nor an SGL descriptor's.
	gio_kv_pool huge = contiguous("C", Extents{1, 1, 1, 1, 1, 0x40000000}, 8, 0x100000000ull);
	const gio_kv_runs hr = runs_of(huge);
	CHECK(hr.run_bytes == 8ull << 30);
	CHECK(gio_kv_object_ranges(&huge, &hr, 0, 0, r, 3) == -E2BIG);
	const gio_kv_table_sizes t = plan_of(huge, hr);
	CHECK(t.sgl_rc == -E2BIG);
	CHECK(t.sgl_bytes == 0);
	gio_sgl_desc d{};
	const gio_dptr_caps caps = byte_caps();
	CHECK(gio_kv_table_entry(&huge, &hr, &caps, 0, kSegArea, &d, nullptr) == -E2BIG);

	// Blocks of 1 GiB layers: three fit a range, four do not.
	const gio_kv_pool big = contiguous("BLC", Extents{4, 2, 1, 1, 1, 0x10000000}, 4, 0x100000000ull);
	const gio_kv_runs br = runs_of(big);
	REQUIRE(br.layers_contiguous == 1);
	REQUIRE(gio_kv_block_range(&big, &br, 1, 1, 3, &all) == 0);
	CHECK(all.addr == 0x100000000ull + (4ull << 30) + (1ull << 30));
	CHECK(all.len == 3ull << 30);
	CHECK(gio_kv_block_range(&big, &br, 1, 0, 4, &all) == -E2BIG);
}

TEST_CASE("pool: SGL table entries refused where the controller cannot take them", "[kv_pool]")
{
	const std::vector<uint64_t> bases = {0x10000000, 0x30000000, 0x20000000};
	const gio_kv_pool two = per_layer(contiguous("LPBNHC", small(), 2, 0), bases); // 2 runs an object
	const gio_kv_pool one = per_layer(contiguous("LBPNHC", small(), 2, 0), bases); // 1 run
	const gio_kv_runs tr = runs_of(two), orr = runs_of(one);
	std::vector<gio_sgl_desc> seg(15 * 2);
	gio_sgl_desc d;
	std::memset(&d, 0xab, sizeof(d));
	std::memset(seg.data(), 0xab, seg.size() * sizeof(seg[0]));
	const std::vector<gio_sgl_desc> seg_before = seg;
	const gio_sgl_desc d_before = d;
	auto untouched = [&]() {
		return std::memcmp(&d, &d_before, sizeof(d)) == 0 &&
		       std::memcmp(seg.data(), seg_before.data(), seg.size() * sizeof(seg[0])) == 0;
	};
	auto sgl_rc = [](const gio_kv_pool &p, const gio_kv_runs &r, const gio_dptr_caps &c) { return plan_of(p, r, c).sgl_rc; };
	gio_dptr_caps caps = byte_caps();

	SECTION("no SGLs")
	{
		caps.sgls = 0;
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea, &d, seg.data()) == -EOPNOTSUPP);
		CHECK(gio_kv_table_entry(&one, &orr, &caps, 0, kSegArea, &d, nullptr) == -EOPNOTSUPP);
		CHECK(sgl_rc(two, tr, caps) == -EOPNOTSUPP);
		const gio_kv_table_sizes t = plan_of(two, tr, caps);
		CHECK(t.prp_rc == 0); // PRPs still do
		CHECK(t.prp_cmds == 1);
	}
	SECTION("fewer descriptors a segment than runs: one command per run then")
	{
		caps.seg_max_descs = 1;
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea, &d, seg.data()) == -EOPNOTSUPP);
		CHECK(sgl_rc(two, tr, caps) == -EOPNOTSUPP);
		CHECK(untouched());
		CHECK(gio_kv_table_entry(&one, &orr, &caps, 0, kSegArea, &d, nullptr) == 0);
		caps.seg_max_descs = 2;
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea, &d, seg.data()) == 0);
		CHECK(sgl_rc(two, tr, caps) == 0);
	}
	SECTION("an object past the transfer limit")
	{
		caps.max_xfer_bytes = 4096;
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea, &d, seg.data()) == -E2BIG);
		CHECK(gio_kv_table_entry(&one, &orr, &caps, 0, kSegArea, &d, nullptr) == -E2BIG);
		CHECK(untouched());
		const gio_kv_table_sizes t = plan_of(two, tr, caps);
		CHECK(t.sgl_rc == -E2BIG);
		CHECK(t.prp_rc == -E2BIG);
		caps.max_xfer_bytes = 8192;
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea, &d, seg.data()) == 0);
	}
	SECTION("an object beyond the pool, segment memory missing or misplaced")
	{
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 15, kSegArea, &d, seg.data()) == -EINVAL);
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea, &d, nullptr) == -EINVAL);
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 0, kSegArea + 4, &d, seg.data()) == -EINVAL);
		// 240 bytes below 2^64: the 32-byte lists of objects 0 to 6; object 7's would end 16 bytes
		// past the end.
		const uint64_t top = UINT64_MAX - 239;
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 7, top, &d, seg.data()) == -EINVAL);
		CHECK(untouched());
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 6, top, &d, seg.data()) == 0);
		CHECK(d.addr == top + 6 * 32);
		CHECK(gio_kv_table_entry(&two, &tr, &caps, 14, kSegArea, &d, seg.data()) == 0);
		CHECK(d.addr == kSegArea + 14 * 32);
		CHECK(seg[28].addr == 0x20000000 + 4 * 4096);
		CHECK(seg[29].addr == 0x20000000 + 9 * 4096);
		CHECK(seg[29].len == 4096);
	}
	SECTION("dword granularity")
	{
		caps.sgls = GIO_SGLS_SUPPORT_DWORD;
		gio_kv_pool odd = contiguous("LBHNC", Extents{3, 4, 1, 16, 2, 64}, 2, 0x40000002);
		const gio_kv_runs odr = runs_of(odd);
		CHECK(gio_kv_table_entry(&odd, &odr, &caps, 0, kSegArea, &d, nullptr) == -EINVAL);
		CHECK(sgl_rc(odd, odr, caps) == -EINVAL);
		CHECK(untouched());
		CHECK(sgl_rc(odd, odr, byte_caps()) == 0);
		odd.base += 2;
		CHECK(gio_kv_table_entry(&odd, &odr, &caps, 0, kSegArea, &d, nullptr) == 0);
		CHECK(sgl_rc(odd, odr, caps) == 0);
		// Runs of 6 bytes.
		const gio_kv_pool six = contiguous("BNC", Extents{1, 4, 1, 3, 1, 2}, 1, 0x40000000);
		const gio_kv_runs sr = runs_of(six);
		REQUIRE(sr.run_bytes == 6);
		CHECK(gio_kv_table_entry(&six, &sr, &caps, 0, kSegArea, &d, nullptr) == -EINVAL);
		CHECK(sgl_rc(six, sr, caps) == -EINVAL);
		CHECK(sgl_rc(six, sr, byte_caps()) == 0);
	}
	SECTION("PRPs need dword aligned starts and a valid page size")
	{
		const gio_kv_pool odd = contiguous("LBHNC", Extents{3, 4, 1, 16, 2, 64}, 2, 0x40000002);
		const gio_kv_runs odr = runs_of(odd);
		const gio_kv_table_sizes t = plan_of(odd, odr, caps);
		CHECK(t.prp_rc == -EINVAL);
		CHECK(t.prp_bytes == 0);
		caps.page_bytes = 2048;
		const gio_kv_table_sizes small_pages = plan_of(two, tr, caps);
		CHECK(small_pages.prp_rc == -EINVAL);
		CHECK(small_pages.sgl_rc == 0);
	}
}

TEST_CASE("pool: the table of a Llama3-8B pool in vLLM's per-layer tensors", "[kv_pool]")
{
	// 32 layers of [2, 1000 blocks, 16 tokens, 8 heads, 128] bf16: K and V 32 KiB runs apart.
	std::vector<uint64_t> bases(32);
	for (uint64_t l = 0; l < 32; l++)
		bases[l] = 0x100000000ull + l * 0x4000000;
	const gio_kv_pool pool = per_layer(contiguous("LPBNHC", Extents{32, 1000, 2, 16, 8, 128}, 2, 0), bases);
	const gio_kv_runs runs = runs_of(pool);
	REQUIRE(runs.nruns == 2);
	REQUIRE(runs.run_bytes == 32768);
	const gio_kv_table_sizes t = plan_of(pool, runs);
	CHECK(t.objects == 32000);
	CHECK(t.sgl_desc_bytes == 512000);
	CHECK(t.sgl_list_bytes == 1024000);
	CHECK(t.sgl_object_bytes == 48);
	// PRP: the runs are page aligned, so one command: 16 pages, PRP1 and a list of 15 entries.
	CHECK(t.prp_cmds == 1);
	CHECK(t.prp_pages == 16);
	CHECK(t.prp_list_bytes == 120);
	CHECK(t.prp_list_bytes == gio_prp_object_alloc_bytes(65536, 4096, GIO_PRP_CHUNK_EXACT));
	CHECK(t.prp_object_bytes == 136);
	CHECK(t.prp_bytes == 32000 * 136);
	// The last object's entry, built as its GPU thread would.
	std::vector<gio_sgl_desc> seg(t.sgl_list_bytes / 16);
	gio_sgl_desc d{};
	const gio_dptr_caps caps = byte_caps();
	REQUIRE(gio_kv_table_entry(&pool, &runs, &caps, 31999, kSegArea, &d, seg.data()) == 0);
	CHECK(d.addr == kSegArea + 31999 * 32);
	CHECK(seg[2 * 31999].addr == bases[31] + 999 * 32768);
	CHECK(seg[2 * 31999 + 1].addr == bases[31] + 1000 * 32768 + 999 * 32768);
}
