// Metadata each data pointer scheme needs for a registered KV pool, from first principles, and
// the KV object layout the demo and the store use.
#include <catch2/catch.hpp>

#include <giouring/kv/layout.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>

#include <cstdio>

TEST_CASE("Tutti's example: a 60 GB pool costs ~15 MB of SGL entries vs 112.5 MiB to 3.75 GiB of PRP lists", "[pool]")
{
	// The pool: 60 GiB of KV objects of 64 KiB, each read by one command, 4 KiB memory pages.
	// SGL: one 16-byte Data Block descriptor per object, whatever its size.
	// PRP: an object spans 16 pages: PRP1 names the first, the other 15 need a PRP list of 15
	// entries (120 bytes). What that costs depends on where lists live: a whole page each (4096),
	// a 256-byte chunk each as Linux's nvme driver allocates lists of up to 32 entries, or
	// exactly the entries (a list may start anywhere 8-byte aligned, see prp_build.h).
	const uint64_t pool = 60ull << 30, obj = 64 << 10;
	const uint32_t page = 4096;
	const uint64_t objects = pool / obj;
	REQUIRE(objects == 983040);

	const uint64_t sgl = gio_sgl_pool_bytes(objects);
	const uint64_t prp = gio_prp_pool_bytes(objects, obj, page);
	const uint64_t prp_page = gio_prp_pool_alloc_bytes(objects, obj, page, page);
	const uint64_t prp_linux = gio_prp_pool_alloc_bytes(objects, obj, page, GIO_PRP_CHUNK_LINUX);
	const uint64_t prp_exact = gio_prp_pool_alloc_bytes(objects, obj, page, GIO_PRP_CHUNK_EXACT);
	std::printf("pool %.0f GiB of %llu KiB objects (%llu objects): SGL %.2f MiB; PRP lists: page %.2f GiB (%.0fx), "
		    "Linux 256-byte pool %.2f MiB (%.0fx), exact %.2f MiB (%.1fx)\n",
		    pool / 1073741824.0, (unsigned long long)(obj >> 10), (unsigned long long)objects, sgl / 1048576.0,
		    prp_page / 1073741824.0, (double)prp_page / sgl, prp_linux / 1048576.0, (double)prp_linux / sgl,
		    prp_exact / 1048576.0, (double)prp_exact / sgl);
	CHECK(sgl == objects * 16);
	CHECK(sgl == 15ull << 20);        // 15 MiB
	CHECK(prp == prp_page);           // gio_prp_pool_bytes: a page per list
	CHECK(prp_page == objects * 4096);
	CHECK(prp_page == (15ull << 30) / 4); // 3.75 GiB
	CHECK(prp_linux == objects * 256);
	CHECK(prp_linux == 240ull << 20);     // 240 MiB
	CHECK(prp_exact == objects * 120);
	CHECK(prp_exact == 225ull << 19);     // 112.5 MiB

	// The same from the builders: plan one object each way, then build its list in a 256-byte
	// chunk that is not the first of its page.
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
	CHECK(p.list_pages == 1);
	CHECK(p.list_bytes == 120);
	CHECK(gio_prp_list_alloc_bytes(p.npages, page, GIO_PRP_CHUNK_LINUX) == 256);
	CHECK(gio_prp_list_alloc_bytes(p.npages, page, page) == 4096);
	uint64_t chunks[4096 / 8] = {};
	gio_sqe sqe{};
	const uint64_t chunk_addr = 0x200000 + 3 * 256;
	CHECK(gio_prp_build(&sqe, &r, 1, &caps, &chunks[3 * 256 / 8], chunk_addr, 256) == 120);
	CHECK(sqe.dptr.prp.prp2 == chunk_addr);
}

TEST_CASE("Llama3-8B objects: PRP list bytes at page, Linux pool and exact sizes beside the SGL's 16", "[pool]")
{
	// One K or V object of one layer and one 16-token block: 32 KiB, 8 pages, 7 list entries.
	gio_kv_geometry g{32, 8, 128, 2, 16};
	const uint64_t obj = gio_kv_object_bytes(&g);
	REQUIRE(obj == 32768);
	const uint64_t page = gio_prp_object_alloc_bytes(obj, 4096, 4096);
	const uint64_t lnx = gio_prp_object_alloc_bytes(obj, 4096, GIO_PRP_CHUNK_LINUX);
	const uint64_t exact = gio_prp_object_alloc_bytes(obj, 4096, GIO_PRP_CHUNK_EXACT);
	std::printf("Llama3-8B object %llu KiB: SGL 16 B; PRP list page %llu B, Linux 256-byte pool %llu B, exact %llu B "
		    "(+16 B of PRP1/PRP2 in the SQE each)\n",
		    (unsigned long long)(obj >> 10), (unsigned long long)page, (unsigned long long)lnx,
		    (unsigned long long)exact);
	CHECK(gio_sgl_pool_bytes(1) == 16);
	CHECK(page == 4096);
	CHECK(page == gio_prp_object_bytes(obj, 4096));
	CHECK(lnx == 256);
	CHECK(exact == 56);
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

	// Linux: lists of up to 32 entries (objects up to 33 pages) take a 256-byte chunk, longer ones
	// a page per list page; exact: 8 bytes per entry, chain pointers included.
	CHECK(gio_prp_object_alloc_bytes(0, 4096, GIO_PRP_CHUNK_LINUX) == 0);
	CHECK(gio_prp_object_alloc_bytes(8192, 4096, GIO_PRP_CHUNK_LINUX) == 0);
	CHECK(gio_prp_object_alloc_bytes(12288, 4096, GIO_PRP_CHUNK_LINUX) == 256);
	CHECK(gio_prp_object_alloc_bytes(12288, 4096, GIO_PRP_CHUNK_EXACT) == 16);
	CHECK(gio_prp_object_alloc_bytes(128 << 10, 4096, GIO_PRP_CHUNK_LINUX) == 256); // 31 entries
	CHECK(gio_prp_object_alloc_bytes(128 << 10, 4096, GIO_PRP_CHUNK_EXACT) == 248);
	CHECK(gio_prp_object_alloc_bytes(33 * 4096, 4096, GIO_PRP_CHUNK_LINUX) == 256); // 32 entries
	CHECK(gio_prp_object_alloc_bytes(34 * 4096, 4096, GIO_PRP_CHUNK_LINUX) == 4096); // 33
	CHECK(gio_prp_object_alloc_bytes(34 * 4096, 4096, GIO_PRP_CHUNK_EXACT) == 264);
	CHECK(gio_prp_object_alloc_bytes(514ull * 4096, 4096, GIO_PRP_CHUNK_LINUX) == 8192);
	CHECK(gio_prp_object_alloc_bytes(514ull * 4096, 4096, GIO_PRP_CHUNK_EXACT) == 4112);
	CHECK(gio_prp_object_alloc_bytes(514ull * 4096, 4096, 4096) == gio_prp_object_bytes(514ull * 4096, 4096));
	CHECK(gio_prp_pool_alloc_bytes(1000, 65536, 4096, GIO_PRP_CHUNK_EXACT) == 1000 * 120);
	CHECK(gio_prp_pool_alloc_bytes(1000, 65536, 4096, 4096) == gio_prp_pool_bytes(1000, 65536, 4096));
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
