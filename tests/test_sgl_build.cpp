// SGL builder: single data block, Last Segment, chained Segments, coalescing, validation with
// no partial output. Every built SGL is read back through the walker, the controller's view.
#include <catch2/catch.hpp>

#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/sgl_walk.h>
#include <giouring/proto/status.h>

#include <cstring>
#include <vector>

namespace {

const uint64_t kSegAddr = 0x7000000;

gio_dptr_caps sgl_caps(uint32_t sgls = GIO_SGLS_SUPPORT_BYTE)
{
	gio_dptr_caps c{};
	c.sgls = sgls;
	c.page_bytes = 4096;
	return c;
}

// Coalesces like the builder documents, to compare with what the walker reports.
std::vector<gio_range> coalesce(const std::vector<gio_range> &in)
{
	std::vector<gio_range> out;
	for (const auto &r : in) {
		if (!out.empty() && gio_range_adjacent(&out.back(), &r))
			out.back().len += r.len;
		else
			out.push_back(r);
	}
	return out;
}

struct Built {
	gio_sqe sqe;
	std::vector<gio_sgl_desc> seg;
	int rc;
};

Built build(const std::vector<gio_range> &r, const gio_dptr_caps &caps, size_t seg_descs = 4096)
{
	Built b{};
	gio_prep_read(&b.sqe, 1, 0, 1);
	b.seg.assign(seg_descs, gio_sgl_desc{});
	b.rc = gio_sgl_build(&b.sqe, r.data(), (uint32_t)r.size(), &caps, b.seg.data(), kSegAddr,
			     (uint32_t)(b.seg.size() * sizeof(gio_sgl_desc)));
	return b;
}

// What a controller would transfer for this SQE, via the walker over the segment memory.
std::vector<gio_xfer_seg> walk(Built &b, const gio_dptr_caps &caps, uint64_t xfer)
{
	gio_dma_region reg{kSegAddr, b.seg.size() * sizeof(gio_sgl_desc), b.seg.data()};
	gio_dma_map map{&reg, 1};
	std::vector<gio_xfer_seg> segs(4096);
	gio_xfer_list out{segs.data(), (uint32_t)segs.size(), 0};
	uint16_t st = gio_sgl_walk(&b.sqe, xfer, 0, &caps, &map, &out);
	INFO("walker status " << gio_status_str(st));
	REQUIRE(st == 0);
	segs.resize(out.n);
	return segs;
}

uint32_t sgl_type(const gio_sgl_desc &d)
{
	return d.id >> 4;
}

void check_same(const std::vector<gio_xfer_seg> &got, const std::vector<gio_range> &want)
{
	REQUIRE(got.size() == want.size());
	for (size_t i = 0; i < want.size(); i++) {
		CAPTURE(i);
		CHECK(got[i].addr == want[i].addr);
		CHECK(got[i].len == want[i].len);
		CHECK(got[i].flags == 0u);
	}
}

} // namespace

TEST_CASE("one range becomes one Data Block in DPTR", "[sgl]")
{
	auto caps = sgl_caps();
	std::vector<gio_range> r{{0x10000, 32768}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 0);
	CHECK(gio_sqe_psdt(&b.sqe) == GIO_PSDT_SGL_MPTR);
	CHECK(b.sqe.dptr.sgl.addr == 0x10000);
	CHECK(b.sqe.dptr.sgl.len == 32768);
	CHECK(b.sqe.dptr.sgl.id == 0x00); // Data Block, sub type Address
	CHECK(b.sqe.opc == GIO_NVM_OPC_READ); // the rest of the prepared SQE is kept
	check_same(walk(b, caps, 32768), r);
}

TEST_CASE("adjacent ranges coalesce into one Data Block", "[sgl]")
{
	auto caps = sgl_caps();
	std::vector<gio_range> r{{0x10000, 4096}, {0x11000, 4096}, {0x12000, 100}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 0);
	CHECK(b.sqe.dptr.sgl.len == 8292);
	CHECK(sgl_type(b.sqe.dptr.sgl) == GIO_SGL_TYPE_DATA_BLOCK);
	check_same(walk(b, caps, 8292), coalesce(r));
}

TEST_CASE("several ranges: DPTR is a Last Segment to the Data Blocks", "[sgl]")
{
	auto caps = sgl_caps();
	std::vector<gio_range> r{{0x30000, 512}, {0x10000, 1024}, {0x10400, 512}, {0x50000, 2048}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 3 * 16);
	CHECK(sgl_type(b.sqe.dptr.sgl) == GIO_SGL_TYPE_LAST_SEGMENT);
	CHECK(b.sqe.dptr.sgl.addr == kSegAddr);
	CHECK(b.sqe.dptr.sgl.len == 48);
	CHECK(b.seg[1].addr == 0x10000);
	CHECK(b.seg[1].len == 1536);
	for (int i = 0; i < 3; i++)
		CHECK(sgl_type(b.seg[i]) == GIO_SGL_TYPE_DATA_BLOCK);
	check_same(walk(b, caps, 4096), coalesce(r));
}

TEST_CASE("segment limit chains Segment -> Segment -> Last Segment", "[sgl]")
{
	auto caps = sgl_caps();
	caps.seg_max_descs = 4; // 3 data + 1 pointer per full segment
	std::vector<gio_range> r;
	for (int i = 0; i < 8; i++)
		r.push_back({0x100000u + 0x2000u * i, 4096}); // gaps: nothing coalesces
	gio_sgl_sizes plan{};
	REQUIRE(gio_sgl_plan(r.data(), (uint32_t)r.size(), &caps, &plan) == 0);
	CHECK(plan.ndata == 8);
	CHECK(plan.nsegments == 3); // 3 + 3 + 2
	CHECK(plan.seg_bytes == (8 + 2) * 16);
	auto b = build(r, caps);
	REQUIRE(b.rc == (int)plan.seg_bytes);
	CHECK(sgl_type(b.sqe.dptr.sgl) == GIO_SGL_TYPE_SEGMENT);
	CHECK(b.sqe.dptr.sgl.len == 64);
	CHECK(sgl_type(b.seg[3]) == GIO_SGL_TYPE_SEGMENT);
	CHECK(b.seg[3].addr == kSegAddr + 64);
	CHECK(b.seg[3].len == 64);
	CHECK(sgl_type(b.seg[7]) == GIO_SGL_TYPE_LAST_SEGMENT);
	CHECK(b.seg[7].addr == kSegAddr + 128);
	CHECK(b.seg[7].len == 32);
	check_same(walk(b, caps, 8 * 4096), r);
	// The walker enforces the same limit: a controller allowing 3 per segment refuses it.
	caps.seg_max_descs = 3;
	gio_dma_region reg{kSegAddr, b.seg.size() * sizeof(gio_sgl_desc), b.seg.data()};
	gio_dma_map map{&reg, 1};
	gio_xfer_seg segs[16];
	gio_xfer_list out{segs, 16, 0};
	CHECK(gio_sgl_walk(&b.sqe, 8 * 4096, 0, &caps, &map, &out) ==
	      (GIO_SF(GIO_SCT_GENERIC, GIO_SC_SGL_INVALID_COUNT) | GIO_SF_DNR));
}

TEST_CASE("chains of every shape round-trip through the walker", "[sgl]")
{
	for (uint32_t m = 2; m <= 6; m++) {
		for (uint32_t n = 1; n <= 20; n++) {
			auto caps = sgl_caps(GIO_SGLS_SUPPORT_DWORD);
			caps.seg_max_descs = m;
			std::vector<gio_range> r;
			uint64_t total = 0;
			for (uint32_t i = 0; i < n; i++) {
				r.push_back({0x200000ull + 0x10000ull * i + 4 * i, 4 * (i + 1)});
				total += 4 * (i + 1);
			}
			CAPTURE(m, n);
			auto b = build(r, caps);
			REQUIRE(b.rc >= 0);
			check_same(walk(b, caps, total), r);
		}
	}
}

TEST_CASE("invalid input fails with no partial output", "[sgl]")
{
	struct Case {
		const char *what;
		std::vector<gio_range> r;
		gio_dptr_caps caps;
		int want;
	};
	auto dword = sgl_caps(GIO_SGLS_SUPPORT_DWORD);
	auto mdts = sgl_caps();
	mdts.max_xfer_bytes = 8192;
	auto seglim = sgl_caps();
	seglim.seg_max_descs = 2;
	seglim.max_segments = 2;
	auto one = sgl_caps();
	one.seg_max_descs = 1;
	std::vector<Case> cases{
		{"no SGL support", {{0x1000, 512}}, sgl_caps(0), -EOPNOTSUPP},
		{"no ranges", {}, sgl_caps(), -EINVAL},
		{"empty range", {{0x1000, 512}, {0x9000, 0}}, sgl_caps(), -EINVAL},
		{"range wraps", {{~0ull - 10, 512}}, sgl_caps(), -EINVAL},
		{"dword rule: address", {{0x1002, 512}}, dword, -EINVAL},
		{"dword rule: length", {{0x1000, 510}, {0x3000, 2}}, dword, -EINVAL},
		{"above MDTS", {{0x1000, 4096}, {0x9000, 4097}}, mdts, -E2BIG},
		{"too many segments", {{0x1000, 4}, {0x3000, 4}, {0x5000, 4}, {0x7000, 4}}, seglim, -E2BIG},
		{"cannot chain with 1 per segment", {{0x1000, 4}, {0x3000, 4}}, one, -EINVAL},
	};
	for (auto &c : cases) {
		INFO(c.what);
		gio_sqe sqe;
		std::memset(&sqe, 0xAA, sizeof(sqe));
		gio_sgl_desc seg[8];
		std::memset(seg, 0xBB, sizeof(seg));
		gio_sqe sqe0 = sqe;
		CHECK(gio_sgl_build(&sqe, c.r.data(), (uint32_t)c.r.size(), &c.caps, seg, kSegAddr, sizeof(seg)) == c.want);
		CHECK(std::memcmp(&sqe, &sqe0, sizeof(sqe)) == 0);
		for (auto &d : seg) {
			const unsigned char *p = reinterpret_cast<const unsigned char *>(&d);
			for (size_t i = 0; i < sizeof(d); i++)
				REQUIRE(p[i] == 0xBB);
		}
	}
}

TEST_CASE("segment memory is checked before it is written", "[sgl]")
{
	auto caps = sgl_caps();
	std::vector<gio_range> r{{0x1000, 512}, {0x9000, 512}, {0x20000, 512}};
	gio_sqe sqe{};
	gio_sgl_desc seg[2];
	std::memset(seg, 0xBB, sizeof(seg));
	CHECK(gio_sgl_build(&sqe, r.data(), 3, &caps, nullptr, kSegAddr, 0) == -EINVAL);
	CHECK(gio_sgl_build(&sqe, r.data(), 3, &caps, seg, kSegAddr + 4, sizeof(seg)) == -EINVAL);
	CHECK(gio_sgl_build(&sqe, r.data(), 3, &caps, seg, kSegAddr, sizeof(seg)) == -ENOSPC);
	CHECK(reinterpret_cast<const unsigned char *>(seg)[0] == 0xBB);
	// One range needs no segment memory at all.
	CHECK(gio_sgl_build(&sqe, r.data(), 1, &caps, nullptr, 0, 0) == 0);
}

TEST_CASE("a P2P table entry is one unchecked Data Block", "[sgl]")
{
	gio_sqe sqe{};
	REQUIRE(gio_prep_read(&sqe, 1, 64, 8) == 0);
	gio_sqe_set_sgl_data(&sqe, 0xdead0000, 32768);
	CHECK(gio_sqe_psdt(&sqe) == GIO_PSDT_SGL_MPTR);
	CHECK(sqe.dptr.sgl.addr == 0xdead0000);
	CHECK(sqe.dptr.sgl.len == 32768);
	CHECK(sqe.dptr.sgl.id == 0);
	CHECK(sqe.cdw10 == 64);
}

TEST_CASE("builder and walker share the default chain bound", "[sgl]")
{
	// Found by review of the fuzzers: max_segments 0 meant "no limit" to the builder but 1024
	// segments to the walker, so a built SGL could be refused by the walker.
	auto caps = sgl_caps();
	caps.seg_max_descs = 2; // one data descriptor per segment, two in the last: segments = ranges - 1
	std::vector<gio_range> r;
	for (uint32_t i = 0; i < GIO_SGL_DEFAULT_MAX_SEGMENTS + 2; i++)
		r.push_back({0x1000000ull + 0x2000ull * i, 16});
	gio_sgl_sizes plan{};
	CHECK(gio_sgl_plan(r.data(), (uint32_t)r.size(), &caps, &plan) == -E2BIG);
	r.pop_back();
	REQUIRE(gio_sgl_plan(r.data(), (uint32_t)r.size(), &caps, &plan) == 0);
	CHECK(plan.nsegments == GIO_SGL_DEFAULT_MAX_SEGMENTS);
	auto b = build(r, caps, 2 * GIO_SGL_DEFAULT_MAX_SEGMENTS);
	REQUIRE(b.rc == (int)plan.seg_bytes);
	check_same(walk(b, caps, 16ull * r.size()), r);
}

TEST_CASE("coalescing never builds a descriptor longer than 32 bits", "[sgl]")
{
	// Regression (fuzz_dptr_roundtrip/sgl-coalesce-over-4g): three adjacent ranges whose pairs fit
	// 32 bits but whose sum does not were coalesced pairwise into one truncated Data Block.
	auto caps = sgl_caps();
	std::vector<gio_range> r{{0x100000000ull, 0x7ffff000}, {0x17ffff000ull, 0x7ffff000}, {0x1fffff000ull, 0x7ffff000}};
	gio_sgl_sizes plan{};
	REQUIRE(gio_sgl_plan(r.data(), 3, &caps, &plan) == 0);
	CHECK(plan.ndata == 2);
	auto b = build(r, caps);
	REQUIRE(b.rc == 32);
	CHECK(b.seg[0].len == 0xffffe000u);
	CHECK(b.seg[1].len == 0x7ffff000u);
}
