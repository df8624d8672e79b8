// A pool's bus addresses (giouring/kv/bus.h): every base moved by its region's offset, each kind
// of table of bases, and pools outside registered memory refused by name.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdint>
#include <string>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>

namespace {

// 2 layers x K/V x 4 blocks x 16 tokens x 2 heads x 64 channels of 2 bytes: 4 KiB a block's
// part, 16 KiB a part, 32 KiB a layer.
gio_kv_pool pool_of(uint32_t mode, const uint64_t *bases, uint64_t base)
{
	gio_kv_pool p{};
	const uint32_t ext[GIO_KV_DIMS] = {2, 4, 2, 16, 2, 64};
	for (int d = 0; d < GIO_KV_DIMS; d++)
		p.extent[d] = ext[d];
	p.elem_bytes = 2;
	p.stride[GIO_KV_CHANNEL] = 1;
	p.stride[GIO_KV_HEAD] = 64;
	p.stride[GIO_KV_TOKEN] = 128;
	p.stride[GIO_KV_BLOCK] = 2048;
	p.stride[GIO_KV_PART] = mode == GIO_KV_BASE_LAYER_PART ? 0 : 4 * 2048;
	p.stride[GIO_KV_LAYER] = mode == GIO_KV_BASE_ONE ? 2 * 4 * 2048 : 0;
	p.base_mode = mode;
	p.base = base;
	p.bases = bases;
	return p;
}

const uint64_t kLayer = 32 * 1024; // bytes of a layer (one base's span in GIO_KV_BASE_LAYER)

} // namespace

TEST_CASE("kv bus: a pool's bases move by their region's offset", "[kv]")
{
	// Two regions: engine addresses 0x10000000 and 0x20000000, bus addresses far away.
	gio_dma_region r[2] = {{0xa00000000ull, 1 << 20, reinterpret_cast<void *>(0x10000000ull)},
			       {0xb00000000ull, 1 << 20, reinterpret_cast<void *>(0x20000000ull)}};
	gio_kv_pool bus{};

	SECTION("one base, inside the second region")
	{
		const gio_kv_pool p = pool_of(GIO_KV_BASE_ONE, nullptr, 0x20000000ull + 4096);
		REQUIRE(gio_kv_pool_bus_map(r, 2, "test", &p, nullptr, &bus) == 0);
		CHECK(bus.base == 0xb00000000ull + 4096);
		CHECK(bus.bases == nullptr);
		CHECK(bus.stride[GIO_KV_LAYER] == p.stride[GIO_KV_LAYER]);
		// The pool's last byte at the region's last byte still fits; one more does not.
		const gio_kv_pool end = pool_of(GIO_KV_BASE_ONE, nullptr, 0x20000000ull + (1 << 20) - 2 * kLayer);
		CHECK(gio_kv_pool_bus_map(r, 2, "test", &end, nullptr, &bus) == 0);
		const gio_kv_pool past = pool_of(GIO_KV_BASE_ONE, nullptr, 0x20000000ull + (1 << 20) - 2 * kLayer + 2);
		CHECK(gio_kv_pool_bus_map(r, 2, "test", &past, nullptr, &bus) == -EINVAL);
		CHECK(std::string(gio_last_error()).find("the pool's base (0x200f0002") != std::string::npos);
		CHECK(std::string(gio_last_error()).find("registered with the test: an unregistered pool") != std::string::npos);
	}
	SECTION("a base per layer, each in its own region")
	{
		const uint64_t bases[2] = {0x10000000ull, 0x20000000ull + kLayer};
		uint64_t out[2] = {0, 0};
		const gio_kv_pool p = pool_of(GIO_KV_BASE_LAYER, bases, 0);
		REQUIRE(gio_kv_pool_bus_map(r, 2, "test", &p, out, &bus) == 0);
		CHECK(out[0] == 0xa00000000ull);
		CHECK(out[1] == 0xb00000000ull + kLayer);
		CHECK(bus.bases == out);
		CHECK(gio_kv_pool_bus_map(r, 2, "test", &p, nullptr, &bus) == -EINVAL); // no table for them
		CHECK(std::string(gio_last_error()).find("2 bases and no table") != std::string::npos);
		const uint64_t stray[2] = {0x10000000ull, 0x30000000ull};
		const gio_kv_pool q = pool_of(GIO_KV_BASE_LAYER, stray, 0);
		CHECK(gio_kv_pool_bus_map(r, 2, "test", &q, out, &bus) == -EINVAL);
		CHECK(std::string(gio_last_error()).find("the base of layer 1 (0x30000000") != std::string::npos);
	}
	SECTION("a base per layer and part")
	{
		const uint64_t bases[4] = {0x10000000ull, 0x10080000ull, 0x20000000ull, 0x20080000ull};
		uint64_t out[4] = {};
		const gio_kv_pool p = pool_of(GIO_KV_BASE_LAYER_PART, bases, 0);
		REQUIRE(gio_kv_pool_bus_map(r, 2, "test", &p, out, &bus) == 0);
		CHECK(out[1] == 0xa00080000ull);
		CHECK(out[3] == 0xb00080000ull);
		const uint64_t stray[4] = {0x10000000ull, 0x10080000ull, 0x20000000ull, 0x200ff000ull};
		const gio_kv_pool q = pool_of(GIO_KV_BASE_LAYER_PART, stray, 0);
		CHECK(gio_kv_pool_bus_map(r, 2, "test", &q, out, &bus) == -EINVAL);
		CHECK(std::string(gio_last_error()).find("the base of layer 1 part 1") != std::string::npos);
	}
	SECTION("an invalid pool, and NULL arguments")
	{
		gio_kv_pool p = pool_of(GIO_KV_BASE_ONE, nullptr, 0x10000000ull);
		p.stride[GIO_KV_BLOCK] = 1024; // blocks overlap
		CHECK(gio_kv_pool_bus_map(r, 2, "test", &p, nullptr, &bus) == -EINVAL);
		CHECK(std::string(gio_last_error()).find("kv pool: invalid") != std::string::npos);
		CHECK(gio_kv_pool_bus_map(r, 2, "test", nullptr, nullptr, &bus) == -EINVAL);
		CHECK(gio_kv_pool_bus(nullptr, &p, nullptr, &bus) == -EINVAL);
	}
}
