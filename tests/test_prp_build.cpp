// PRP builder: PRP1 only, PRP1 + PRP2, lists, chained list pages, lists that start inside a page,
// which range lists PRPs can express, and no partial output on failure. Every result is read back
// through the PRP walker.
#include <catch2/catch.hpp>

#include <giouring/proto/prep.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/prp_walk.h>
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

TEST_CASE("a 32 KiB object needs a list of 7 entries: 56 bytes", "[prp]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000, 32768}};
	gio_prp_sizes plan{};
	REQUIRE(gio_prp_plan(r.data(), 1, &caps, &plan) == 0);
	CHECK(plan.npages == 8);
	CHECK(plan.list_pages == 1);
	CHECK(plan.list_bytes == 56);
	auto b = build(r, caps);
	REQUIRE(b.rc == 56);
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
	REQUIRE(b.rc == 4096 + 2 * 8); // the first list page whole, two entries of the second
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
	REQUIRE(b.rc == 4 * 8); // five pages: PRP1 and four list entries
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
	CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, list.data(), kListAddr + 4, 4096) == -EINVAL);
	CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, list.data(), kListAddr, 31) == -ENOSPC); // 4 entries
	CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, list.data(), kListAddr, 32) == 32);
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
	REQUIRE(b3.rc == 16);
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

// ---- Lists at any 8-byte aligned address -----------------------------------------------------
// The specification lets PRP2 point into a page (qword aligned): the entries run to the end of
// that page, and only the last entry of a page may chain. These tests place the list `off` bytes
// into the page at kListAddr, fill every other byte of the memory with a pattern, and walk the
// result with the walker given exactly the bytes the builder says it used: a list the controller
// would read past its reported size fails the walk.

namespace {

const uint64_t kPattern = 0xA5A5A5A5A5A5A5A5ull;

struct BuiltAt {
	gio_sqe sqe;
	std::vector<uint64_t> mem; // from kListAddr: `off` bytes, the `avail` bytes given, guard entries
	uint64_t off, list_addr, avail;
	int rc;
};

BuiltAt build_at(const std::vector<gio_range> &r, const gio_dptr_caps &caps, uint64_t off, uint64_t avail)
{
	BuiltAt b{};
	gio_prep_write(&b.sqe, 1, 0, 1);
	b.off = off;
	b.list_addr = kListAddr + off;
	b.avail = avail;
	b.mem.assign((off + avail) / 8 + caps.page_bytes / 8, kPattern);
	b.rc = gio_prp_build(&b.sqe, r.data(), (uint32_t)r.size(), &caps, b.mem.data() + off / 8, b.list_addr, avail);
	return b;
}

uint64_t entry(const BuiltAt &b, uint64_t i) // the i-th 8-byte slot from the list's start
{
	return b.mem[b.off / 8 + i];
}

std::vector<gio_xfer_seg> walk_exact(BuiltAt &b, const gio_dptr_caps &caps, uint64_t xfer)
{
	gio_dma_region reg{b.list_addr, (uint64_t)(b.rc > 0 ? b.rc : 0), b.mem.data() + b.off / 8};
	gio_dma_map map{&reg, b.rc > 0 ? 1u : 0u};
	std::vector<gio_xfer_seg> segs(8192);
	gio_xfer_list out{segs.data(), (uint32_t)segs.size(), 0};
	uint16_t st = gio_prp_walk(&b.sqe, xfer, &caps, &map, &out);
	INFO("walker status " << gio_status_str(st) << ", list at +" << b.off << ", " << b.rc << " bytes");
	REQUIRE(st == 0);
	segs.resize(out.n);
	return segs;
}

void check_untouched_around(const BuiltAt &b)
{
	const uint64_t first = b.off / 8, used = b.rc > 0 ? (uint64_t)b.rc / 8 : 0;
	for (uint64_t i = 0; i < b.mem.size(); i++) {
		if (i >= first && i < first + used)
			continue;
		CAPTURE(i, b.off, b.rc);
		REQUIRE(b.mem[i] == kPattern);
	}
}

} // namespace

TEST_CASE("a PRP list may start anywhere 8-byte aligned inside a page", "[prp][offset]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000, 32768}}; // 8 pages: PRP1 and 7 list entries
	for (uint64_t off : {8ull, 256ull, 2048ull, 3840ull, 4096ull - 56}) {
		CAPTURE(off);
		gio_prp_sizes plan{};
		REQUIRE(gio_prp_plan_at(r.data(), 1, &caps, kListAddr + off, &plan) == 0);
		CHECK(plan.npages == 8);
		CHECK(plan.list_pages == 1);
		CHECK(plan.list_bytes == 56);
		auto b = build_at(r, caps, off, 4096);
		REQUIRE(b.rc == 56);
		CHECK(b.sqe.dptr.prp.prp1 == 0x100000);
		CHECK(b.sqe.dptr.prp.prp2 == kListAddr + off);
		for (uint64_t i = 0; i < 7; i++)
			CHECK(entry(b, i) == 0x101000u + 0x1000u * i);
		check_untouched_around(b);
		check_same(walk_exact(b, caps, 32768), r);
	}
}

TEST_CASE("a list that ends exactly at its page end needs no chain", "[prp][offset]")
{
	// Linux's largest list from its 256-byte pool: 128 KiB starting inside a page touch 33
	// pages, 32 list entries; in the last chunk of a page they end at the page end.
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100200, 128 * 1024}};
	auto b = build_at(r, caps, 3840, 2 * 4096);
	REQUIRE(b.rc == 256);
	CHECK(entry(b, 31) == 0x100000u + 32u * 4096); // the last slot of the page: data, not a chain
	check_untouched_around(b);
	check_same(walk_exact(b, caps, 128 * 1024), r);

	for (uint32_t page : {4096u, 8192u, 65536u}) {
		const uint64_t per = page / 8;
		for (uint64_t entries : std::vector<uint64_t>{2, 7, 32, per - 1, per}) {
			CAPTURE(page, entries);
			auto c = prp_caps(page);
			const uint64_t off = page - entries * 8; // 0 for a full page
			std::vector<gio_range> rr{{0x40000000ull, (uint32_t)((entries + 1) * page)}};
			gio_prp_sizes plan{};
			REQUIRE(gio_prp_plan_at(rr.data(), 1, &c, kListAddr + off, &plan) == 0);
			CHECK(plan.list_pages == 1);
			CHECK(plan.list_bytes == entries * 8);
			auto bb = build_at(rr, c, off, 2 * page);
			REQUIRE(bb.rc == (int)(entries * 8));
			check_untouched_around(bb);
			check_same(walk_exact(bb, c, rr[0].len), rr);
		}
	}
}

TEST_CASE("a list that outgrows its page chains from an offset start", "[prp][offset]")
{
	auto caps = prp_caps();
	// 34 pages, 33 entries, from 3840: 31 data entries and the chain pointer fill the page; the
	// last two entries open the next page, which starts right after (page aligned).
	std::vector<gio_range> r{{0x1000000, 34u * 4096}};
	gio_prp_sizes plan{};
	REQUIRE(gio_prp_plan_at(r.data(), 1, &caps, kListAddr + 3840, &plan) == 0);
	CHECK(plan.list_pages == 2);
	CHECK(plan.list_bytes == 34 * 8);
	auto b = build_at(r, caps, 3840, 4096);
	REQUIRE(b.rc == 34 * 8);
	CHECK(b.sqe.dptr.prp.prp2 == kListAddr + 3840);
	for (uint64_t i = 0; i < 31; i++)
		CHECK(entry(b, i) == 0x1001000u + 0x1000u * i);
	CHECK(entry(b, 31) == kListAddr + 4096);
	CHECK(b.mem[512] == 0x1000000u + 32u * 4096);
	CHECK(b.mem[513] == 0x1000000u + 33u * 4096);
	check_untouched_around(b);
	check_same(walk_exact(b, caps, 34u * 4096), r);

	// Room for one slot: it can only be the chain pointer; the data entries all go to the next page.
	std::vector<gio_range> r3{{0x1000000, 3u * 4096}};
	auto b3 = build_at(r3, caps, 4088, 4096);
	REQUIRE(b3.rc == 3 * 8);
	CHECK(entry(b3, 0) == kListAddr + 4096);
	CHECK(b3.mem[512] == 0x1001000u);
	CHECK(b3.mem[513] == 0x1002000u);
	check_untouched_around(b3);
	check_same(walk_exact(b3, caps, 3u * 4096), r3);

	// A long chain from the middle of a page: 1499 entries, 255 + chain in the first page, then
	// 511 + chain, 511 + chain, 222: 1502 slots.
	std::vector<gio_range> rl{{0x1000000, 1500u * 4096}};
	CHECK(gio_prp_list_bytes_at(1500, 4096, kListAddr + 2048) == 1502 * 8);
	auto bl = build_at(rl, caps, 2048, 4 * 4096);
	REQUIRE(bl.rc == 1502 * 8);
	CHECK(entry(bl, 255) == kListAddr + 4096);
	CHECK(bl.mem[512 + 511] == kListAddr + 2 * 4096);
	CHECK(bl.mem[1024 + 511] == kListAddr + 3 * 4096);
	check_untouched_around(bl);
	check_same(walk_exact(bl, caps, 1500u * 4096), rl);
}

TEST_CASE("list addresses that are not 8-byte aligned are refused before any write", "[prp][offset]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000, 5 * 4096}};
	for (uint64_t delta : {1ull, 2ull, 4ull, 7ull, 260ull, 4092ull}) {
		CAPTURE(delta);
		gio_sqe sqe;
		std::memset(&sqe, 0xAA, sizeof(sqe));
		const gio_sqe sqe0 = sqe;
		std::vector<uint64_t> list(1024, kPattern);
		gio_prp_sizes plan, plan0;
		std::memset(&plan, 0xEE, sizeof(plan));
		plan0 = plan;
		CHECK(gio_prp_plan_at(r.data(), 1, &caps, kListAddr + delta, &plan) == -EINVAL);
		CHECK(std::memcmp(&plan, &plan0, sizeof(plan)) == 0);
		CHECK(gio_prp_build(&sqe, r.data(), 1, &caps, list.data(), kListAddr + delta, list.size() * 8) == -EINVAL);
		CHECK(std::memcmp(&sqe, &sqe0, sizeof(sqe)) == 0);
		for (auto e : list)
			REQUIRE(e == kPattern);
	}
	// No list needed: the list address is not used, so not checked.
	std::vector<gio_range> two{{0x100000, 2 * 4096}};
	gio_sqe sqe{};
	CHECK(gio_prp_build(&sqe, two.data(), 1, &caps, nullptr, kListAddr + 3, 0) == 0);

	// A list that would run past the top of the bus address space cannot exist.
	std::vector<uint64_t> top(64, kPattern);
	const uint64_t top_addr = 0ull - 96; // 12 slots below 2^64
	std::vector<gio_range> big{{0x100000, 34 * 4096}}; // 33 entries
	CHECK(gio_prp_build(&sqe, big.data(), 1, &caps, top.data(), top_addr, top.size() * 8) == -EINVAL);
	for (auto e : top)
		REQUIRE(e == kPattern);
	std::vector<gio_range> fits{{0x100000, 13 * 4096}}; // 12 entries: the last ends at 2^64
	CHECK(gio_prp_build(&sqe, fits.data(), 1, &caps, top.data(), top_addr, top.size() * 8) == 96);
	CHECK(sqe.dptr.prp.prp2 == top_addr);
	CHECK(top[11] == 0x100000u + 12u * 4096);
}

TEST_CASE("list memory is sized to the entries, not to pages", "[prp][offset]")
{
	auto caps = prp_caps();
	std::vector<gio_range> r{{0x100000, 5 * 4096}}; // 4 entries
	for (uint64_t off : {0ull, 256ull, 4064ull}) {
		CAPTURE(off);
		auto shy = build_at(r, caps, off, 31);
		CHECK(shy.rc == -ENOSPC);
		check_untouched_around(shy);
		auto exact = build_at(r, caps, off, 32);
		CHECK(exact.rc == 32);
		check_untouched_around(exact);
		check_same(walk_exact(exact, caps, 5 * 4096), r);
	}
	std::vector<gio_range> chained{{0x1000000, 34u * 4096}}; // 33 entries from 3840: 34 slots
	auto shy = build_at(chained, caps, 3840, 34 * 8 - 1);
	CHECK(shy.rc == -ENOSPC);
	check_untouched_around(shy);
	auto exact = build_at(chained, caps, 3840, 34 * 8);
	CHECK(exact.rc == 34 * 8);
	check_same(walk_exact(exact, caps, 34u * 4096), chained);
}

TEST_CASE("PRP list sizes: at an offset, in Linux's pools, exact, in whole pages", "[prp][sizes]")
{
	// Bytes from the list's start to its last entry's end.
	CHECK(gio_prp_list_bytes_at(0, 4096, 0) == 0);
	CHECK(gio_prp_list_bytes_at(2, 4096, 0) == 0);       // PRP1 + PRP2
	CHECK(gio_prp_list_bytes_at(3, 4096, 0) == 16);
	CHECK(gio_prp_list_bytes_at(8, 4096, 0) == 56);
	CHECK(gio_prp_list_bytes_at(8, 4096, 256) == 56);
	CHECK(gio_prp_list_bytes_at(8, 4096, 4040) == 56);   // ends at the page end
	CHECK(gio_prp_list_bytes_at(8, 4096, 4048) == 64);   // 6 slots: 5 entries, chain, 2 entries
	CHECK(gio_prp_list_bytes_at(8, 4096, 4088) == 64);   // the chain alone, then 7 entries
	CHECK(gio_prp_list_bytes_at(8, 4096, kListAddr + 256) == 56); // a whole address: its page offset counts
	CHECK(gio_prp_list_bytes_at(33, 4096, 3840) == 256);
	CHECK(gio_prp_list_bytes_at(34, 4096, 3840) == 272);
	CHECK(gio_prp_list_bytes_at(513, 4096, 0) == 4096);  // 512 entries fill the page
	CHECK(gio_prp_list_bytes_at(514, 4096, 0) == 4112);  // 511 + chain, then 2
	CHECK(gio_prp_list_bytes_at(1 + 511 + 512, 4096, 0) == 2 * 4096);
	CHECK(gio_prp_list_bytes_at(1 + 511 + 513, 4096, 0) == 2 * 4096 + 16);
	CHECK(gio_prp_list_bytes_at(17, 65536, 65536 - 128) == 128);

	// What an allocator sets aside: exact, Linux's 256-byte chunks (lists of up to 32 entries)
	// and page pool, a page per list page.
	CHECK(gio_prp_list_alloc_bytes(2, 4096, GIO_PRP_CHUNK_EXACT) == 0);
	CHECK(gio_prp_list_alloc_bytes(2, 4096, GIO_PRP_CHUNK_LINUX) == 0);
	CHECK(gio_prp_list_alloc_bytes(2, 4096, 4096) == 0);
	CHECK(gio_prp_list_alloc_bytes(8, 4096, GIO_PRP_CHUNK_EXACT) == 56);
	CHECK(gio_prp_list_alloc_bytes(8, 4096, GIO_PRP_CHUNK_LINUX) == 256);
	CHECK(gio_prp_list_alloc_bytes(8, 4096, 4096) == 4096);
	CHECK(gio_prp_list_alloc_bytes(33, 4096, GIO_PRP_CHUNK_LINUX) == 256);   // 32 entries: a chunk
	CHECK(gio_prp_list_alloc_bytes(34, 4096, GIO_PRP_CHUNK_LINUX) == 4096);  // 33: a page
	CHECK(gio_prp_list_alloc_bytes(513, 4096, GIO_PRP_CHUNK_LINUX) == 4096);
	CHECK(gio_prp_list_alloc_bytes(514, 4096, GIO_PRP_CHUNK_LINUX) == 8192); // two chained pages
	CHECK(gio_prp_list_alloc_bytes(514, 4096, GIO_PRP_CHUNK_EXACT) == 4112);
	CHECK(gio_prp_list_alloc_bytes(514, 4096, 4096) == 8192);
	CHECK(gio_prp_list_alloc_bytes(8, 4096, 65536) == 4096); // a chunk above the page is a page
	CHECK(gio_prp_list_alloc_bytes(8, 8192, GIO_PRP_CHUNK_LINUX) == 256);
	for (uint64_t n : {3ull, 8ull, 33ull, 34ull, 513ull, 514ull, 1025ull, 5000ull}) {
		CAPTURE(n);
		CHECK(gio_prp_list_alloc_bytes(n, 4096, 4096) == gio_prp_list_pages(n, 4096) * 4096);
		CHECK(gio_prp_list_alloc_bytes(n, 4096, GIO_PRP_CHUNK_EXACT) == gio_prp_list_bytes_at(n, 4096, 0));
	}
}

TEST_CASE("list offsets round-trip through the walker", "[prp][offset]")
{
	for (uint32_t page : {4096u, 8192u, 65536u}) {
		for (uint64_t pages : {3ull, 8ull, 33ull, 34ull, 511ull, 512ull, 513ull, 514ull, 1024ull, 1500ull}) {
			for (uint64_t prp1_off : {0ull, 4ull}) {
				for (uint64_t off : std::vector<uint64_t>{0, 8, 256, page / 2, page - 256u, page - 8u}) {
					CAPTURE(page, pages, prp1_off, off);
					auto caps = prp_caps(page);
					const uint64_t len = pages * page - prp1_off;
					std::vector<gio_range> r{{0x80000000ull + prp1_off, (uint32_t)len}};
					gio_prp_sizes plan{};
					REQUIRE(gio_prp_plan_at(r.data(), 1, &caps, kListAddr + off, &plan) == 0);
					CHECK(plan.npages == pages);
					CHECK(plan.list_bytes == gio_prp_list_bytes_at(pages, page, kListAddr + off));
					CHECK(plan.list_bytes >= (pages - 1) * 8);
					auto b = build_at(r, caps, off, plan.list_bytes);
					REQUIRE(b.rc == (int)plan.list_bytes);
					// The pages the list occupies: from its own to the one of its last slot.
					CHECK(plan.list_pages == (off + plan.list_bytes - 1) / page + 1);
					check_untouched_around(b);
					check_same(walk_exact(b, caps, len), r);
				}
			}
		}
	}
}
