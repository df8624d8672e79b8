// The VFIO backend's IOVA allocator: usable ranges, reserved holes, alignment, exhaustion.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>

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
