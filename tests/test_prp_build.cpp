// PRP builder: PRP1 only, PRP1 + PRP2, lists, chained list pages, which range lists PRPs can
// express, and no partial output on failure. Every result is read back through the PRP walker.
#include <catch2/catch.hpp>

#include <giouring/proto/prep.h>
#include <giouring/proto/prp_build.h>
#include <giouring/target/prp_walk.h>
#include <giouring/proto/status.h>

#include <cstring>
#include <vector>

namespace {

const uint64_t kListAddr = 0x40000000;

gio_dptr_caps prp_caps(uint32_t page = 4096)
{
	gio_dptr_caps c{};
	c.page_bytes = page;
	return c;
}

struct Built {
	gio_sqe sqe;
	std::vector<uint64_t> list;
	int rc;
};

Built build(const std::vector<gio_range> &r, const gio_dptr_caps &caps, size_t list_pages = 4)
{
	Built b{};
	gio_prep_write(&b.sqe, 1, 0, 1);
	b.list.assign(list_pages * caps.page_bytes / 8, 0);
	b.rc = gio_prp_build(&b.sqe, r.data(), (uint32_t)r.size(), &caps, b.list.data(), kListAddr,
			     b.list.size() * 8);
	return b;
}

std::vector<gio_xfer_seg> walk(Built &b, const gio_dptr_caps &caps, uint64_t xfer)
{
	gio_dma_region reg{kListAddr, b.list.size() * 8, b.list.data()};
	gio_dma_map map{&reg, 1};
	std::vector<gio_xfer_seg> segs(8192);
	gio_xfer_list out{segs.data(), (uint32_t)segs.size(), 0};
	uint16_t st = gio_prp_walk(&b.sqe, xfer, &caps, &map, &out);
	INFO("walker status " << gio_status_str(st));
	REQUIRE(st == 0);
	segs.resize(out.n);
	return segs;
}

void check_same(const std::vector<gio_xfer_seg> &got, const std::vector<gio_range> &want)
{
	std::vector<gio_range> merged;
	for (const auto &r : want) {
		if (!merged.empty() && merged.back().addr + merged.back().len == r.addr)
			merged.back().len += r.len;
		else
			merged.push_back(r);
	}
	REQUIRE(got.size() == merged.size());
	for (size_t i = 0; i < merged.size(); i++) {
		CAPTURE(i);
		CHECK(got[i].addr == merged[i].addr);
		CHECK(got[i].len == merged[i].len);
	}
}

} // namespace

TEST_CASE("PRP1 alone covers a transfer inside one page", "[prp]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x10200, 0xe00}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 0);
	CHECK(gio_sqe_psdt(&b.sqe) == GIO_PSDT_PRP);
	CHECK(b.sqe.dptr.prp.prp1 == 0x10200);
	CHECK(b.sqe.dptr.prp.prp2 == 0);
	check_same(walk(b, caps, 0xe00), r);
}

TEST_CASE("PRP2 names the second page", "[prp]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x10200, 0x1000}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 0);
	CHECK(b.sqe.dptr.prp.prp1 == 0x10200);
	CHECK(b.sqe.dptr.prp.prp2 == 0x11000);
	check_same(walk(b, caps, 0x1000), r);
}

TEST_CASE("a 32 KiB object needs one list page of 7 entries", "[prp]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000, 32768}};
	gio_prp_sizes plan{};
	REQUIRE(gio_prp_plan(r.data(), 1, &caps, &plan) == 0);
	CHECK(plan.npages == 8);
	CHECK(plan.list_pages == 1);
	auto b = build(r, caps);
	REQUIRE(b.rc == 4096);
	CHECK(b.sqe.dptr.prp.prp2 == kListAddr);
	for (int i = 0; i < 7; i++)
		CHECK(b.list[i] == 0x101000u + 0x1000u * i);
	check_same(walk(b, caps, 32768), r);
}

TEST_CASE("lists longer than a page chain through their last entry", "[prp]")
{
	auto caps = prp_caps();
	// 514 pages: PRP1 + 513 list entries = 511 + chain, then 2 on the second list page.
	std::vector<gio_range> r{{0x1000000, 514u * 4096}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 2 * 4096);
	CHECK(b.list[511] == kListAddr + 4096);
	CHECK(b.list[510] == 0x1000000u + 511u * 4096);
	CHECK(b.list[512] == 0x1000000u + 512u * 4096);
	CHECK(b.list[513] == 0x1000000u + 513u * 4096);
	check_same(walk(b, caps, 514u * 4096), r);
	// Exactly one entry past a full page stays in the last slot: no chain needed.
	std::vector<gio_range> r2{{0x1000000, 513u * 4096}};
	auto b2 = build(r2, caps);
	REQUIRE(b2.rc == 4096);
	CHECK(b2.list[511] == 0x1000000u + 512u * 4096);
	check_same(walk(b2, caps, 513u * 4096), r2);
}

TEST_CASE("page sizes and page counts round-trip", "[prp]")
{
	for (uint32_t page : {4096u, 8192u, 65536u}) {
		for (uint64_t pages : {1ull, 2ull, 3ull, 511ull, 512ull, 513ull, 1024ull, 1500ull}) {
			for (uint64_t off : {0ull, 4ull, 2048ull}) {
				auto caps = prp_caps(page);
				uint64_t len = pages * page - off;
				std::vector<gio_range> r{{0x80000000ull + off, (uint32_t)len}};
				CAPTURE(page, pages, off);
				gio_prp_sizes plan{};
				REQUIRE(gio_prp_plan(r.data(), 1, &caps, &plan) == 0);
				CHECK(plan.npages == pages);
				auto b = build(r, caps, plan.list_pages ? plan.list_pages : 1);
				REQUIRE(b.rc == (int)plan.list_bytes);
				check_same(walk(b, caps, len), r);
			}
		}
	}
}

TEST_CASE("several ranges: page-aligned joints are expressible", "[prp]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x10800, 0x800}, {0x50000, 0x2000}, {0x90000, 0x1000}, {0x91000, 0x10}};
	auto b = build(r, caps);
	REQUIRE(b.rc == 4096);
	check_same(walk(b, caps, 0x800 + 0x2000 + 0x1010), r);
}

TEST_CASE("ranges PRPs cannot express fail with no partial output", "[prp]")
{
	struct Case {
		const char *what;
		std::vector<gio_range> r;
		gio_dptr_caps caps;
		int want;
	};
	auto mdts = prp_caps();
	mdts.max_xfer_bytes = 128 * 1024;
	std::vector<Case> cases{
		{"no ranges", {}, prp_caps(), -EINVAL},
		{"page size not a power of two", {{0x1000, 512}}, prp_caps(6000), -EINVAL},
		{"page size below 4 KiB", {{0x1000, 512}}, prp_caps(2048), -EINVAL},
		{"first address not dword aligned", {{0x1002, 512}}, prp_caps(), -EINVAL},
		{"second range starts inside a page", {{0x1000, 4096}, {0x9100, 512}}, prp_caps(), -EINVAL},
		{"first range ends inside a page", {{0x1000, 512}, {0x9000, 512}}, prp_caps(), -EINVAL},
		{"empty range", {{0x1000, 4096}, {0x9000, 0}}, prp_caps(), -EINVAL},
		{"wraps", {{~0ull - 4095, 8192}}, prp_caps(), -EINVAL},
		{"above MDTS", {{0x100000, 128 * 1024 + 4096}}, mdts, -E2BIG},
	};
	for (auto &c : cases) {
		INFO(c.what);
		gio_sqe sqe;
		std::memset(&sqe, 0xAA, sizeof(sqe));
		gio_sqe sqe0 = sqe;
		std::vector<uint64_t> list(1024, 0xBBBBBBBBBBBBBBBBull);
		CHECK(gio_prp_build(&sqe, c.r.data(), (uint32_t)c.r.size(), &c.caps, list.data(), kListAddr,
				    list.size() * 8) == c.want);
		CHECK(std::memcmp(&sqe, &sqe0, sizeof(sqe)) == 0);
		for (auto e : list)
			REQUIRE(e == 0xBBBBBBBBBBBBBBBBull);
	}
	// List memory checks.
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000, 5 * 4096}};
	std::vector<uint64_t> list(512, 0);
	gio_sqe sqe{};
	CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, nullptr, kListAddr, 4096) == -EINVAL);
	CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, list.data(), kListAddr + 8, 4096) == -EINVAL);
	CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, list.data(), kListAddr, 4095) == -ENOSPC);
}

TEST_CASE("PRP walker refuses offsets where the specification forbids them", "[prp][walk]")
{
	auto caps = prp_caps();
	uint64_t list[512] = {};
	gio_dma_region reg{kListAddr, sizeof(list), list};
	gio_dma_map map{&reg, 1};
	gio_xfer_seg segs[16];
	gio_xfer_list out{segs, 16, 0};
	const uint16_t bad_offset = GIO_SF(GIO_SCT_GENERIC, GIO_SC_PRP_INVALID_OFFSET) | GIO_SF_DNR;
	gio_sqe sqe{};
	gio_prep_read(&sqe, 1, 0, 8);

	sqe.dptr.prp.prp1 = 0x1001;
	CHECK(gio_prp_walk(&sqe, 512, &caps, &map, &out) == bad_offset);
	sqe.dptr.prp.prp1 = 0x1000;
	sqe.dptr.prp.prp2 = 0x2200;
	CHECK(gio_prp_walk(&sqe, 8192, &caps, &map, &out) == bad_offset);
	sqe.dptr.prp.prp2 = kListAddr;
	list[0] = 0x2000;
	list[1] = 0x3100;
	CHECK(gio_prp_walk(&sqe, 3 * 4096, &caps, &map, &out) == bad_offset);
	list[1] = 0x3000;
	CHECK(gio_prp_walk(&sqe, 3 * 4096, &caps, &map, &out) == 0);
	CHECK(out.n == 1); // 0x1000..0x4000 merged
	sqe.dptr.prp.prp2 = 0x999000; // list not registered
	CHECK(gio_prp_walk(&sqe, 3 * 4096, &caps, &map, &out) == GIO_SF(GIO_SCT_GENERIC, GIO_SC_DATA_XFER_ERROR));
	gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MPTR);
	CHECK(gio_prp_walk(&sqe, 4096, &caps, &map, &out) == (GIO_SF(GIO_SCT_GENERIC, GIO_SC_INVALID_FIELD) | GIO_SF_DNR));
}

TEST_CASE("ranges in the top pages of the address space", "[prp]")
{
	// Regressions (fuzz_dptr_roundtrip/prp-build-top-page-hang, prp-build-top-pages-overflow and
	// fuzz_prp_walk/wrap-merge-top-page): the page step wrapped to 0 past 2^64, so the builder
	// looped or wrote past the list, and the walker merged pages across 2^64.
	auto caps = prp_caps();
	std::vector<gio_range> one{{0xfffffffffffff000ull, 4}};
	auto b1 = build(one, caps);
	REQUIRE(b1.rc == 0);
	CHECK(b1.sqe.dptr.prp.prp1 == 0xfffffffffffff000ull);
	std::vector<gio_range> three{{0xffffffffffffd000ull, 0x2fff}};
	auto b3 = build(three, caps, 1);
	REQUIRE(b3.rc == 4096);
	CHECK(b3.list[0] == 0xffffffffffffe000ull);
	CHECK(b3.list[1] == 0xfffffffffffff000ull);
	CHECK(b3.list[2] == 0); // nothing written past the two entries
	check_same(walk(b3, caps, 0x2fff), three);

	gio_sqe sqe{};
	gio_prep_read(&sqe, 1, 0, 2);
	sqe.dptr.prp.prp1 = 0xfffffffffffff000ull;
	sqe.dptr.prp.prp2 = 0;
	gio_xfer_seg segs[4];
	gio_xfer_list out{segs, 4, 0};
	gio_dma_map none{nullptr, 0};
	REQUIRE(gio_prp_walk(&sqe, 8192, &caps, &none, &out) == 0);
	CHECK(out.n == 2); // the page at 0 does not merge with the page below 2^64
}

TEST_CASE("contiguous ranges longer than 4 GiB together are one PRP run", "[prp]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000800ull, 0xfffff800u}, {0x200000000ull, 0xfffff800u}, {0x2fffff800ull, 0x800}};
	gio_prp_sizes plan{};
	REQUIRE(gio_prp_plan(r.data(), 3, &caps, &plan) == 0);
	CHECK(plan.npages == 0x200000);
}
