// The VFIO backend's IOVA allocator: usable ranges, reserved holes, alignment, exhaustion.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "../src/vfio/iova.h"

TEST_CASE("iova: allocations are aligned, disjoint and above the floor")
{
	const gio__iova_range r[] = {{0, (1ull << 39) - 1}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 1ull << 20);
	uint64_t a = 0, b = 0, c = 0;
	REQUIRE(gio__iova_alloc(&s, 4096, 4096, &a) == 0);
	CHECK(a == (1ull << 20));
	REQUIRE(gio__iova_alloc(&s, 8192, 4096, &b) == 0);
	CHECK(b == a + 4096);
	REQUIRE(gio__iova_alloc(&s, 1ull << 21, 1ull << 21, &c) == 0);
	CHECK(c % (1ull << 21) == 0);
	CHECK(c >= b + 8192);
}

TEST_CASE("iova: a reserved hole (the MSI window) is skipped")
{
	// As VFIO reports it on x86 with an IOMMU: everything but 0xfee00000..0xfeefffff.
	const gio__iova_range r[] = {{0, 0xfedfffffull}, {0xfef00000ull, (1ull << 39) - 1}};
	gio__iova_space s;
	gio__iova_init(&s, r, 2, 0xfed00000ull);
	uint64_t a = 0, b = 0;
	REQUIRE(gio__iova_alloc(&s, 0x80000, 4096, &a) == 0);
	CHECK(a == 0xfed00000ull);
	// 1 MiB no longer fits below the hole: it goes above it, never across.
	REQUIRE(gio__iova_alloc(&s, 0x100000, 4096, &b) == 0);
	CHECK(b == 0xfef00000ull);
}

TEST_CASE("iova: bad arguments and exhaustion")
{
	const gio__iova_range r[] = {{0x1000, 0x4fff}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 0);
	uint64_t a = 0;
	CHECK(gio__iova_alloc(&s, 0, 4096, &a) == -EINVAL);
	CHECK(gio__iova_alloc(&s, 4096, 3000, &a) == -EINVAL);
	CHECK(gio__iova_alloc(&s, 100, 4096, &a) == -EINVAL);
	CHECK(gio__iova_alloc(&s, 0x5000, 4096, &a) == -ENOSPC);
	REQUIRE(gio__iova_alloc(&s, 0x4000, 4096, &a) == 0);
	CHECK(a == 0x1000);
	CHECK(gio__iova_alloc(&s, 4096, 4096, &a) == -ENOSPC);
}

TEST_CASE("iova: the top of the 64-bit space does not wrap")
{
	const gio__iova_range r[] = {{0xffffffffffffe000ull, 0xffffffffffffffffull}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 0);
	uint64_t a = 0;
	REQUIRE(gio__iova_alloc(&s, 0x2000, 4096, &a) == 0);
	CHECK(a == 0xffffffffffffe000ull);
	CHECK(gio__iova_alloc(&s, 4096, 4096, &a) == -ENOSPC);
}

// Unregistration gives IOVAs back: a long-running context maps and unmaps without end, so the
// space must not run out however often it churns.
TEST_CASE("iova: freed ranges are handed out again, neighbours merge")
{
	const gio__iova_range r[] = {{0, (1ull << 39) - 1}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 1ull << 20);
	uint64_t a = 0, b = 0, c = 0, d = 0;
	REQUIRE(gio__iova_alloc(&s, 4096, 4096, &a) == 0);
	REQUIRE(gio__iova_alloc(&s, 8192, 4096, &b) == 0);
	REQUIRE(gio__iova_alloc(&s, 4096, 4096, &c) == 0);
	REQUIRE(gio__iova_free(&s, b, 8192) == 0);
	// The lowest fit comes first: the hole b left.
	REQUIRE(gio__iova_alloc(&s, 4096, 4096, &d) == 0);
	CHECK(d == b);
	REQUIRE(gio__iova_free(&s, d, 4096) == 0);
	// a, b's hole and c merge into one range: 16 KiB fits at a again.
	REQUIRE(gio__iova_free(&s, a, 4096) == 0);
	REQUIRE(gio__iova_free(&s, c, 4096) == 0);
	CHECK(s.n == 1);
	REQUIRE(gio__iova_alloc(&s, 16384, 4096, &d) == 0);
	CHECK(d == a);
}

TEST_CASE("iova: a double free or a range never handed out is refused")
{
	const gio__iova_range r[] = {{0x10000, 0x1ffff}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 0);
	uint64_t a = 0;
	REQUIRE(gio__iova_alloc(&s, 0x2000, 4096, &a) == 0);
	REQUIRE(gio__iova_free(&s, a, 0x2000) == 0);
	CHECK(gio__iova_free(&s, a, 0x2000) == -EINVAL);         // twice
	CHECK(gio__iova_free(&s, 0x1f000, 0x1000) == -EINVAL);   // free already
	CHECK(gio__iova_free(&s, a, 0) == -EINVAL);              // empty
	CHECK(gio__iova_free(&s, ~0ull - 10, 0x1000) == -EINVAL); // wraps
	CHECK(s.n == 1);
}

TEST_CASE("iova: exhausted, then freed, then allocated again; churn never runs out")
{
	const gio__iova_range r[] = {{0x1000, 0x4fff}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 0);
	uint64_t a[4];
	for (auto &x : a)
		REQUIRE(gio__iova_alloc(&s, 4096, 4096, &x) == 0);
	uint64_t more = 0;
	CHECK(gio__iova_alloc(&s, 4096, 4096, &more) == -ENOSPC);
	REQUIRE(gio__iova_free(&s, a[2], 4096) == 0);
	REQUIRE(gio__iova_alloc(&s, 4096, 4096, &more) == 0);
	CHECK(more == a[2]);
	// 100000 map/unmap cycles of mixed sizes in a 4-page space, two live at a time.
	uint64_t live = a[2], live_len = 4096;
	REQUIRE(gio__iova_free(&s, a[0], 4096) == 0);
	REQUIRE(gio__iova_free(&s, a[1], 4096) == 0);
	REQUIRE(gio__iova_free(&s, a[3], 4096) == 0);
	for (int i = 0; i < 100000; i++) {
		uint64_t x = 0;
		const uint64_t len = (i % 2 + 1) * 4096ull;
		REQUIRE(gio__iova_alloc(&s, len, 4096, &x) == 0);
		REQUIRE(gio__iova_free(&s, live, live_len) == 0);
		live = x;
		live_len = len;
	}
	REQUIRE(gio__iova_free(&s, live, live_len) == 0);
	CHECK(s.n == 1); // all of it free again, in one piece
}

TEST_CASE("iova: fragmentation up to the table's capacity is refused cleanly")
{
	const gio__iova_range r[] = {{0, (1ull << 39) - 1}};
	gio__iova_space s;
	gio__iova_init(&s, r, 1, 0);
	// Allocate pages, free every other one: each freed page is an extent of its own.
	std::vector<uint64_t> pages(2 * GIO__IOVA_MAX_EXTENTS + 2);
	for (auto &p : pages)
		REQUIRE(gio__iova_alloc(&s, 4096, 4096, &p) == 0);
	int refused = 0;
	for (size_t i = 0; i < pages.size(); i += 2) {
		const int rc = gio__iova_free(&s, pages[i], 4096);
		CHECK((rc == 0 || rc == -ENOSPC));
		refused += rc == -ENOSPC;
	}
	CHECK(refused > 0);
	CHECK(s.n == GIO__IOVA_MAX_EXTENTS);
	// What is free is still handed out, lowest first.
	uint64_t x = 0;
	REQUIRE(gio__iova_alloc(&s, 4096, 4096, &x) == 0);
	CHECK(x == pages[0]);
}
