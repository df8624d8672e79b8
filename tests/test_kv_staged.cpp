// The staged data path's planning (giouring/kv/staged.h): a staged command is the plan's command
// with a staging slot as its data, and the moves take each command's slot bytes to exactly the
// object's bytes in the pool, for objects of one run or many and commands per run or per object.
#include <catch2/catch.hpp>

#include <giouring/kv/staged.h>
#include <giouring/proto/prp_walk.h>
#include <giouring/proto/sgl_walk.h>

#include <cstring>
#include <string>
#include <vector>

#include "kv_contiguous.h"
#include "kv_one_request.h"

namespace {

gio_kv_pool contiguous(const std::string &order, const uint32_t ext[GIO_KV_DIMS], uint64_t base)
{
	return kv_contiguous_pool(order, ext, 2, base);
}

uint8_t image_byte(uint32_t layer, uint32_t block, uint64_t k)
{
	return (uint8_t)(layer * 131 + block * 17 + k * 7 + (k >> 8));
}

} // namespace

TEST_CASE("a staged command is the plan's command with one SGL Data Block over its slot", "[kv][staged]")
{
	const union gio_dptr table[2 * 3 * 2] = {}; // layers x blocks x cmds entries, never read here
	gio_kv_io_dev devs[2] = {};
	devs[0].table = table;
	devs[0].nsid = 1;
	devs[0].lba_shift = 9;
	devs[0].psdt = GIO_PSDT_PRP;
	devs[0].cmds = 2;
	devs[1] = devs[0];
	devs[1].nsid = 3;
	devs[1].lba_shift = 12;
	devs[1].cmds = 1;
	const gio_kv_io_req reqs[3] = {{1000, 2, 0, 1}, {64, 1, 1, 0}, {8, 0, 0, 2}};
	gio_kv_io_plan p = kv_one_request_plan(devs, reqs, 16384);
	p.ndevs = 2;
	p.nreqs = 3;
	p.blocks = 3;
	std::vector<uint32_t> words(8);
	gio_stage st{};
	REQUIRE(gio_stage_init(&st, words.data(), 8, 16384, 0x7000000, GIO_SCOPE_SYS) == 0);

	for (uint32_t write = 0; write < 2; write++)
		for (uint32_t layer = 0; layer < 2; layer++)
			for (uint32_t i = 0; i < 2; i++) {
				p.write = write;
				gio_sqe plain, staged;
				std::memset(&plain, 0xa5, sizeof plain);
				std::memset(&staged, 0x5a, sizeof staged);
				REQUIRE(gio_kv_io_sqe(&p, layer, i, &plain) == 0);
				REQUIRE(gio_kv_stage_sqe(&p, layer, i, &st, 13, nullptr, &staged) == 0);
				const uint32_t bytes = i == 0 ? 8192 : 16384;
				CHECK(staged.dptr.sgl.addr == 0x7000000 + 5 * 16384); // ticket 13: slot 5
				CHECK(staged.dptr.sgl.len == bytes);
				CHECK(staged.dptr.sgl.id == GIO_SGL_ID(GIO_SGL_TYPE_DATA_BLOCK, GIO_SGL_SUBTYPE_ADDRESS));
				CHECK(gio_sqe_psdt(&staged) == GIO_PSDT_SGL_MPTR);
				// Everything but the data pointer and PSDT is the plan's command: opcode,
				// namespace, LBAs, block count.
				plain.dptr = staged.dptr;
				gio_sqe_set_psdt(&plain, GIO_PSDT_SGL_MPTR);
				CHECK(std::memcmp(&plain, &staged, sizeof plain) == 0);
			}

	gio_sqe sqe;
	CHECK(gio_kv_stage_sqe(&p, 2, 0, &st, 0, nullptr, &sqe) == -EINVAL); // layer beyond the plan
	CHECK(gio_kv_stage_sqe(&p, 0, 2, &st, 0, nullptr, &sqe) == -EINVAL); // part beyond the device's commands
	REQUIRE(gio_stage_init(&st, words.data(), 8, 12288, 0x7000000, GIO_SCOPE_SYS) == 0);
	CHECK(gio_kv_stage_sqe(&p, 0, 0, &st, 0, nullptr, &sqe) == 0);       // 8 KiB fits a 12 KiB slot
	CHECK(gio_kv_stage_sqe(&p, 0, 1, &st, 0, nullptr, &sqe) == -EINVAL); // 16 KiB does not
}

TEST_CASE("moves take every command's slot bytes to exactly its object's bytes in the pool", "[kv][staged]")
{
	// Layers 3, blocks 4, K/V 2, tokens 4, heads 2, channels 8 (2-byte elements): objects of 256
	// bytes, in one run (block-major), two (parts or heads outside the block), four of 64 bytes
	// (heads and parts outside it) or eight of 32 (tokens and heads outside it), so that a command
	// covers several runs, one, or part of one.
	const uint32_t ext[GIO_KV_DIMS] = {3, 4, 2, 4, 2, 8};
	std::vector<uint32_t> nruns;
	for (const char *order : {"LBPNHC", "BLPNHC", "LPBNHC", "HLBNPC", "LHPBNC", "LNHBPC"}) {
		std::vector<uint8_t> mem(3 * 4 * 256);
		const gio_kv_pool pool = contiguous(order, ext, (uint64_t)(uintptr_t)mem.data());
		gio_kv_runs runs;
		REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
		REQUIRE(runs.object_bytes == 256);
		nruns.push_back(runs.nruns);
		for (uint32_t cmds : {1u, 2u, 4u, 8u}) {
			INFO(order << ", " << cmds << " commands per object, runs of " << runs.run_bytes);
			std::memset(mem.data(), 0xee, mem.size());
			const uint64_t bytes = 256 / cmds;
			for (uint32_t layer = 0; layer < 3; layer++)
				for (uint32_t block = 0; block < 4; block++)
					for (uint32_t part = 0; part < cmds; part++) {
						std::vector<uint8_t> slot(bytes); // what the controller read into the slot
						for (uint64_t k = 0; k < bytes; k++)
							slot[k] = image_byte(layer, block, part * bytes + k);
						const int n = gio_kv_stage_moves(&pool, &runs, layer, block, part, cmds, nullptr, 0);
						REQUIRE(n >= 1);
						std::vector<gio_kv_stage_move> mv(n);
						REQUIRE(gio_kv_stage_moves(&pool, &runs, layer, block, part, cmds, mv.data(), n) == n);
						// In windows of 1 to 3 (gio_kv_stage_moves_at()): the same copies, in order.
						for (uint32_t w = 1; w <= 3; w++) {
							std::vector<gio_kv_stage_move> got;
							gio_kv_stage_move win[3];
							int k;
							while ((k = gio_kv_stage_moves_at(&pool, &runs, layer, block, part, cmds,
											  uint32_t(got.size()), win, w)) > 0)
								got.insert(got.end(), win, win + k);
							REQUIRE(k == 0);
							REQUIRE(got.size() == mv.size());
							for (size_t j = 0; j < got.size(); j++)
								CHECK((got[j].dst == mv[j].dst && got[j].src_off == mv[j].src_off &&
								       got[j].len == mv[j].len));
						}
						uint64_t covered = 0;
						for (const auto &m : mv) {
							CHECK(m.src_off == covered); // slot order, no gap
							std::memcpy((void *)(uintptr_t)m.dst, &slot[m.src_off], m.len);
							covered += m.len;
						}
						CHECK(covered == bytes);
					}
			// The pool's object bytes, in device order, are the image; the objects tile the pool.
			uint64_t checked = 0;
			for (uint32_t layer = 0; layer < 3; layer++)
				for (uint32_t block = 0; block < 4; block++) {
					std::vector<gio_range> rg(runs.nruns);
					REQUIRE(gio_kv_object_ranges(&pool, &runs, layer, block, rg.data(), runs.nruns) ==
						(int)runs.nruns);
					uint64_t k = 0;
					bool same = true;
					for (const auto &r : rg)
						for (uint32_t j = 0; j < r.len; j++, k++)
							same = same && *(const uint8_t *)(uintptr_t)(r.addr + j) ==
									       image_byte(layer, block, k);
					CHECK(same);
					checked += k;
				}
			CHECK(checked == mem.size());
		}
	}
	CHECK(nruns == std::vector<uint32_t>{1, 1, 2, 2, 4, 8});
}

TEST_CASE("moves refuse what they cannot plan and write nothing", "[kv][staged]")
{
	const uint32_t ext[GIO_KV_DIMS] = {2, 2, 2, 4, 2, 8};
	std::vector<uint8_t> mem(2 * 2 * 256);
	const gio_kv_pool pool = contiguous("LHPBNC", ext, (uint64_t)(uintptr_t)mem.data());
	gio_kv_runs runs;
	REQUIRE(gio_kv_pool_runs(&pool, &runs) == 0);
	REQUIRE(runs.nruns == 4);
	gio_kv_stage_move mv[4];
	std::memset(mv, 0x33, sizeof mv);
	CHECK(gio_kv_stage_moves(&pool, &runs, 2, 0, 0, 1, mv, 4) == -EINVAL); // layer
	CHECK(gio_kv_stage_moves(&pool, &runs, 0, 2, 0, 1, mv, 4) == -EINVAL); // block
	CHECK(gio_kv_stage_moves(&pool, &runs, 0, 0, 2, 2, mv, 4) == -EINVAL); // part
	CHECK(gio_kv_stage_moves(&pool, &runs, 0, 0, 0, 3, mv, 4) == -EINVAL); // 3 does not divide 256
	CHECK(gio_kv_stage_moves(&pool, &runs, 0, 0, 0, 1, mv, 3) == -ENOSPC);
	for (const auto &m : mv)
		CHECK(m.len == 0x3333333333333333ull);
	CHECK(gio_kv_stage_moves(&pool, &runs, 0, 0, 0, 0, nullptr, 0) == 4); // cmds 0 means 1
	CHECK(gio_kv_stage_moves(&pool, &runs, 0, 0, 1, 2, nullptr, 0) == 2);
	CHECK(gio_kv_stage_moves(&pool, &runs, 1, 1, 7, 8, nullptr, 0) == 1); // inside one run
	// Windows: the count from a first copy on, none past the last, the same refusals.
	CHECK(gio_kv_stage_moves_at(&pool, &runs, 0, 0, 0, 1, 1, nullptr, 0) == 3);
	CHECK(gio_kv_stage_moves_at(&pool, &runs, 0, 0, 0, 1, 4, mv, 4) == 0);
	CHECK(gio_kv_stage_moves_at(&pool, &runs, 0, 0, 0, 1, 9, nullptr, 0) == 0);
	CHECK(gio_kv_stage_moves_at(&pool, &runs, 2, 0, 0, 1, 0, mv, 4) == -EINVAL);
	CHECK(gio_kv_stage_moves_at(&pool, &runs, 0, 0, 0, 3, 0, mv, 4) == -EINVAL);
}

TEST_CASE("a staging table gives each slot the data pointer the controller takes, once", "[kv][staged]")
{
	// 4 slots of 5 pages: a PRP command over a slot needs a list (PRP1 and a list of 4 entries).
	const uint64_t slot = 5 * 4096, bus = 0x40000000;
	std::vector<uint32_t> words(4);
	gio_stage st{};
	REQUIRE(gio_stage_init(&st, words.data(), 4, slot, bus, GIO_SCOPE_SYS) == 0);
	gio_dptr_caps prp{}, sgl{};
	prp.page_bytes = sgl.page_bytes = 4096;
	prp.max_xfer_bytes = sgl.max_xfer_bytes = 1 << 20;
	sgl.sgls = GIO_SGLS_SUPPORT_DWORD;
	alignas(4096) static uint64_t lists[4][512];
	const uint64_t list_bus = 0x50000000;
	gio_dma_region region = {list_bus, sizeof lists, lists};
	gio_dma_map map = {&region, 1};

	// A plan whose one device takes PRPs, commands of the whole slot.
	const union gio_dptr p2p[4] = {};
	gio_kv_io_dev dev{};
	dev.table = p2p;
	dev.nsid = 1;
	dev.lba_shift = 12;
	dev.psdt = GIO_PSDT_PRP;
	const gio_kv_io_req req = {0, 1, 0, 0};
	gio_kv_io_plan p = kv_one_request_plan(&dev, &req, slot);

	union gio_dptr table[4];
	for (uint32_t s = 0; s < 4; s++) {
		INFO("slot " << s);
		CHECK(gio_kv_stage_table_entry(&st, s, slot, &prp, &table[s], lists[s], list_bus + s * sizeof lists[s],
					       sizeof lists[s]) == 4 * 8);
		gio_sqe sqe;
		REQUIRE(gio_kv_stage_sqe(&p, 1, 0, &st, 8 + s, table, &sqe) == 0); // ticket 8 + s: slot s
		CHECK(gio_sqe_psdt(&sqe) == GIO_PSDT_PRP);
		gio_xfer_seg segs[8];
		gio_xfer_list out = {segs, 8, 0};
		REQUIRE(gio_prp_walk(&sqe, slot, &prp, &map, &out) == 0); // what the controller will read
		REQUIRE(out.n == 1);
		CHECK(segs[0].addr == bus + s * slot);
		CHECK(segs[0].len == slot);
	}
	// With SGLs the entry is the Data Block the table-less form writes.
	// A table whose other entries are poison: only entry 3 is read.
	union gio_dptr e[4];
	std::memset(e, 0xA5, sizeof e);
	CHECK(gio_kv_stage_table_entry(&st, 3, slot, &sgl, &e[3], nullptr, 0, 0) == 0);
	dev.psdt = GIO_PSDT_SGL_MPTR;
	gio_sqe a, b;
	REQUIRE(gio_kv_stage_sqe(&p, 0, 0, &st, 3, nullptr, &a) == 0);
	REQUIRE(gio_kv_stage_sqe(&p, 0, 0, &st, 3, e, &b) == 0);
	CHECK(std::memcmp(&a, &b, sizeof a) == 0);

	// Refusals: no slot, no bytes, more than a slot, no room for the list; nothing written.
	union gio_dptr keep;
	std::memset(&keep, 0x77, sizeof keep);
	const union gio_dptr before = keep;
	CHECK(gio_kv_stage_table_entry(&st, 4, slot, &prp, &keep, lists[0], list_bus, sizeof lists[0]) == -EINVAL);
	CHECK(gio_kv_stage_table_entry(&st, 0, 0, &prp, &keep, lists[0], list_bus, sizeof lists[0]) == -EINVAL);
	CHECK(gio_kv_stage_table_entry(&st, 0, slot + 4096, &prp, &keep, lists[0], list_bus, sizeof lists[0]) == -EINVAL);
	CHECK(gio_kv_stage_table_entry(&st, 0, slot, &prp, &keep, lists[0], list_bus, 16) == -ENOSPC);
	CHECK(std::memcmp(&keep, &before, sizeof keep) == 0);
}
