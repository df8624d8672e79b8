// Metadata each data pointer scheme needs for a registered KV pool, from first principles, and
// the KV object layout the demo and the store use.
#include <catch2/catch.hpp>

#include <giouring/kv/layout.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>

#include <cstdio>

TEST_CASE("Tutti's example: a 60 GB pool costs ~15 MB of SGL entries vs ~3.75 GB of PRP lists", "[pool]")
{
	// The pool: 60 GiB of KV objects of 64 KiB, each read by one command, 4 KiB memory pages.
	// SGL: one 16-byte Data Block descriptor per object, whatever its size.
	// PRP: an object spans 16 pages: PRP1 names the first, the other 15 need a PRP list, and a
	// list occupies a whole memory page (it must start page aligned, see prp_build.h).
	const uint64_t pool = 60ull << 30, obj = 64 << 10;
	const uint32_t page = 4096;
	const uint64_t objects = pool / obj;
	REQUIRE(objects == 983040);

	const uint64_t sgl = gio_sgl_pool_bytes(objects);
	const uint64_t prp = gio_prp_pool_bytes(objects, obj, page);
	std::printf("pool %.0f GiB of %llu KiB objects (%llu objects): SGL %.2f MiB, PRP lists %.2f GiB (%.0fx)\n",
		    pool / 1073741824.0, (unsigned long long)(obj >> 10), (unsigned long long)objects,
		    sgl / 1048576.0, prp / 1073741824.0, (double)prp / sgl);
	CHECK(sgl == objects * 16);
	CHECK(sgl == 15ull << 20);        // 15 MiB
	CHECK(prp == objects * 4096);
	CHECK(prp == (15ull << 30) / 4); // 3.75 GiB

	// The same from the builders: plan one object each way.
	gio_dptr_caps caps{};
	caps.sgls = GIO_SGLS_SUPPORT_DWORD;
	caps.page_bytes = page;
	gio_range r{0x100000000ull, (uint32_t)obj};
	gio_sgl_sizes s{};
	gio_prp_sizes p{};
	REQUIRE(gio_sgl_plan(&r, 1, &caps, &s) == 0);
	REQUIRE(gio_prp_plan(&r, 1, &caps, &p) == 0);
	CHECK(s.seg_bytes == 0); // the descriptor lives in the SQE (or the P2P table)
	CHECK(p.npages == 16);
	CHECK(p.list_bytes == 120); // 15 entries
}

TEST_CASE("PRP list bytes per object size", "[pool]")
{
	CHECK(gio_prp_object_bytes(4096, 4096) == 0);  // PRP1
	CHECK(gio_prp_object_bytes(8192, 4096) == 0);  // PRP1 + PRP2
	CHECK(gio_prp_object_bytes(12288, 4096) == 4096);
	CHECK(gio_prp_object_bytes(32768, 4096) == 4096); // Llama3-8B object
	CHECK(gio_prp_object_bytes(513ull * 4096, 4096) == 4096);
	CHECK(gio_prp_object_bytes(514ull * 4096, 4096) == 8192);
	CHECK(gio_prp_list_pages(0, 4096) == 0);
	CHECK(gio_prp_list_pages(1 + 511 + 512, 4096) == 2); // 511 + chain, then 512
	CHECK(gio_prp_list_pages(1 + 511 + 513, 4096) == 3);
}

TEST_CASE("KV layout: Llama3-8B objects, tensor-stripe placement, paged pool addresses", "[kv]")
{
	gio_kv_geometry g{32, 8, 128, 2, 16};
	CHECK(gio_kv_object_bytes(&g) == 32768);
	gio_kv_store_layout s{4, 4096, 0};
	gio_kv_extent e{};
	REQUIRE(gio_kv_object_extent(&g, &s, 0, 0, GIO_KV_K, &e) == 0);
	CHECK(e.device == 0);
	CHECK(e.slba == 0);
	CHECK(e.nblocks == 8);
	REQUIRE(gio_kv_object_extent(&g, &s, 0, 0, GIO_KV_V, &e) == 0);
	CHECK(e.slba == 8);
	REQUIRE(gio_kv_object_extent(&g, &s, 5, 31, GIO_KV_V, &e) == 0);
	CHECK(e.device == 1);
	CHECK(e.slba == (1 * 64 + 63) * 8); // file 5 is the second file on device 1
	// Every layer of consecutive files touches every device.
	for (uint32_t f = 0; f < 4; f++) {
		REQUIRE(gio_kv_object_extent(&g, &s, f, 7, GIO_KV_K, &e) == 0);
		CHECK(e.device == f);
	}
	CHECK(gio_kv_object_extent(&g, &s, 0, 32, GIO_KV_K, &e) == -EINVAL);
	CHECK(gio_kv_object_extent(&g, &s, 0, 0, 2, &e) == -EINVAL);
	gio_kv_store_layout odd{4, 3000, 0};
	CHECK(gio_kv_object_extent(&g, &odd, 0, 0, 0, &e) == -EINVAL);
	gio_kv_store_layout nodev{0, 4096, 0};
	CHECK(gio_kv_object_extent(&g, &nodev, 0, 0, 0, &e) == -EINVAL);
	gio_kv_geometry huge{1, 64, 1024, 4, 2048}; // 512 MiB object: more than one command moves
	CHECK(gio_kv_object_extent(&huge, &s, 0, 0, 0, &e) == -EINVAL);

	// vLLM FlashAttention layout [2, num_blocks, 16, 8, 128]: K of block b, then V after all K.
	CHECK(gio_kv_pool_addr(&g, 0x1000000, 100, 0, GIO_KV_K) == 0x1000000);
	CHECK(gio_kv_pool_addr(&g, 0x1000000, 100, 3, GIO_KV_K) == 0x1000000 + 3 * 32768);
	CHECK(gio_kv_pool_addr(&g, 0x1000000, 100, 3, GIO_KV_V) == 0x1000000 + 103 * 32768);
}
