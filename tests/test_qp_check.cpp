// Checked submission (giouring/ring/check.h): a data pointer, PRP list or SGL segment outside the
// registered regions is refused with -EFAULT before it reaches the ring, naming the address; what
// lies inside passes, and commands the check knows no length for pass unchecked.
#include <catch2/catch.hpp>

#include <giouring/nvme/sgl.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/ring/check.h>
#include <giouring/ring/qp.h>

#include <cstring>
#include <vector>

namespace {

const uint64_t kBus = 0x10000000;  // bus address of the registered region
const uint64_t kDev = 0x80000000;  // bus address of registered device memory (data only)
const uint64_t kOut = 0x40000000;  // registered nowhere
const uint32_t kPage = 4096;

struct Fixture {
	std::vector<unsigned char> mem = std::vector<unsigned char>(16 * kPage);
	gio_dma_region reg{kBus, 16 * kPage, nullptr};
	gio_dma_map map{&reg, 1};
	gio_dma_region dev_reg{kDev, 16 * kPage, nullptr};
	gio_dma_map dev_map{&dev_reg, 1};
	gio_qp_check ck{};
	gio_sqe sqe{};

	Fixture()
	{
		reg.ptr = mem.data();
		ck.map = &map;
		ck.caps.sgls = GIO_SGLS_SUPPORT_BYTE | GIO_SGLS_BIT_BUCKET;
		ck.caps.page_bytes = kPage;
		ck.lba_shift = 12;
	}
	// A read of `blocks` 4 KiB blocks with PRP1 and PRP2.
	void prp(uint32_t blocks, uint64_t prp1, uint64_t prp2)
	{
		gio_prep_read(&sqe, 1, 0, blocks);
		sqe.dptr.prp.prp1 = prp1;
		sqe.dptr.prp.prp2 = prp2;
	}
	// Entry i of the PRP list (or SGL descriptor array) at byte `off` of the region.
	uint64_t *list(uint32_t off) { return (uint64_t *)(mem.data() + off); }
	gio_sgl_desc *descs(uint32_t off) { return (gio_sgl_desc *)(mem.data() + off); }
	void sgl(uint32_t blocks, uint64_t addr, uint32_t len, uint32_t type)
	{
		gio_prep_read(&sqe, 1, 0, blocks);
		gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MPTR);
		gio_sgl_set(&sqe.dptr.sgl, addr, len, type);
	}
	int check() { return gio_qp_check_sqe(&ck, &sqe); }
};

} // namespace

TEST_CASE("check: PRP data and lists inside registered memory pass", "[check]")
{
	Fixture f;
	f.prp(1, kBus + 8 * kPage, 0);
	CHECK(f.check() == 0);
	f.prp(2, kBus + 8 * kPage, kBus + 9 * kPage);
	CHECK(f.check() == 0);
	// Four pages: PRP2 is a list at byte 0 of the region.
	f.list(0)[0] = kBus + 9 * kPage;
	f.list(0)[1] = kBus + 10 * kPage;
	f.list(0)[2] = kBus + 11 * kPage;
	f.prp(4, kBus + 8 * kPage, kBus);
	CHECK(f.check() == 0);
	CHECK(f.ck.refused == 0);
}

TEST_CASE("check: PRP pointers outside registered memory are refused, naming the address", "[check]")
{
	Fixture f;
	SECTION("PRP1")
	{
		f.prp(1, kOut, 0);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kOut);
	}
	SECTION("PRP1 running past the region's end")
	{
		f.prp(2, kBus + 15 * kPage, kBus + 16 * kPage);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kBus + 16 * kPage);
	}
	SECTION("the PRP list itself")
	{
		f.prp(4, kBus + 8 * kPage, kOut + 64);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kOut + 64);
	}
	SECTION("an entry of the list")
	{
		f.list(0)[0] = kBus + 9 * kPage;
		f.list(0)[1] = kOut + kPage;
		f.list(0)[2] = kBus + 11 * kPage;
		f.prp(4, kBus + 8 * kPage, kBus);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kOut + kPage);
	}
	CHECK(f.ck.refused == 1);
}

TEST_CASE("check: SGL data blocks, segments and their descriptors", "[check]")
{
	Fixture f;
	SECTION("a data block inside passes, outside is refused")
	{
		f.sgl(1, kBus + kPage, kPage, GIO_SGL_TYPE_DATA_BLOCK);
		CHECK(f.check() == 0);
		f.sgl(1, kOut, kPage, GIO_SGL_TYPE_DATA_BLOCK);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kOut);
	}
	SECTION("a segment outside is refused")
	{
		f.sgl(1, kOut + 32, 32, GIO_SGL_TYPE_LAST_SEGMENT);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kOut + 32);
	}
	SECTION("one descriptor of a segment outside is refused; a bit bucket has no address")
	{
		gio_sgl_set(&f.descs(0)[0], kBus + kPage, 2048, GIO_SGL_TYPE_DATA_BLOCK);
		gio_sgl_set(&f.descs(0)[1], 0, 1024, GIO_SGL_TYPE_BIT_BUCKET);
		gio_sgl_set(&f.descs(0)[2], kBus + 2 * kPage, 1024, GIO_SGL_TYPE_DATA_BLOCK);
		f.sgl(1, kBus, 48, GIO_SGL_TYPE_LAST_SEGMENT);
		CHECK(f.check() == 0);
		gio_sgl_set(&f.descs(0)[2], kOut + 512, 1024, GIO_SGL_TYPE_DATA_BLOCK);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kOut + 512);
	}
	SECTION("data in the data-only map passes; a segment there is refused (not readable here)")
	{
		f.ck.data_map = &f.dev_map;
		f.sgl(1, kDev + kPage, kPage, GIO_SGL_TYPE_DATA_BLOCK);
		CHECK(f.check() == 0);
		f.sgl(1, kDev, 16, GIO_SGL_TYPE_LAST_SEGMENT);
		CHECK(f.check() == -EFAULT);
		CHECK(f.ck.fault_addr == kDev);
	}
}

TEST_CASE("check: what it knows no length of passes; malformed pointers are the controller's", "[check]")
{
	Fixture f;
	gio_prep_flush(&f.sqe, 1);
	f.sqe.dptr.prp.prp1 = kOut; // Flush carries no data: nothing to check
	CHECK(f.check() == 0);
	// A PRP1 with reserved low bits set: Invalid PRP Offset is the controller's to post, and no
	// byte moves, so the check lets it through rather than second-guess the rules.
	f.prp(1, kOut | 1u, 0);
	CHECK(f.check() == 0);
	// Dataset Management: (NR + 1) x 16 bytes of ranges.
	gio_prep_read(&f.sqe, 1, 0, 1);
	f.sqe.opc = GIO_NVM_OPC_DSM;
	f.sqe.cdw10 = 1; // two ranges, 32 bytes
	f.sqe.dptr.prp.prp1 = kBus + 16 * kPage - 16;
	CHECK(f.check() == -EFAULT); // the 16 bytes past that page come from PRP2, 0: registered nowhere
	f.sqe.dptr.prp.prp1 = kBus + 16 * kPage - 32;
	CHECK(f.check() == 0);
}

TEST_CASE("check: a checked queue pair refuses at the put and keeps the ring moving", "[check]")
{
	Fixture f;
	const uint32_t depth = 8;
	std::vector<gio_sqe> sq(depth);
	std::vector<gio_cqe> cq(depth);
	std::vector<gio_cmd_slot> slots(depth);
	uint32_t sq_db = 0, cq_db = 0;
	gio_qp qp;
	REQUIRE(gio_qp_init(&qp, sq.data(), depth, cq.data(), depth, slots.data(), 1, &sq_db, &cq_db, 0) == 0);
	CHECK(qp.check == nullptr);
	qp.check = &f.ck;
	uint32_t first = 0;
	REQUIRE(gio_qp_reserve(&qp, 2, &first) == 0);
	f.prp(1, kOut, 0);
	CHECK(gio_qp_put(&qp, first, &f.sqe, 11, 0) == -EFAULT);
	CHECK(f.ck.fault_addr == kOut);
	// Its slot carries the harmless command (Flush of namespace 0), cancelled, not the read.
	CHECK(sq[first].opc == GIO_NVM_OPC_FLUSH);
	CHECK(sq[first].nsid == 0);
	CHECK(gio_cmd_state(slots[first].state) == GIO_CMD_CANCELLED);
	f.prp(1, kBus + kPage, 0);
	CHECK(gio_qp_put(&qp, first + 1, &f.sqe, 12, 0) == 0);
	CHECK(sq[first + 1].opc == GIO_NVM_OPC_READ);
	CHECK(sq[first + 1].dptr.prp.prp1 == kBus + kPage);
	gio_qp_publish(&qp);
	CHECK(qp.sq_committed == first + 2); // both entries are published: the ring does not stall
	CHECK(sq_db == first + 2);
	CHECK(f.ck.refused == 1);
}

TEST_CASE("check: a PRP list whose entries run from one region into the next", "[check]")
{
	// Two adjacent regions meeting in the middle of a page: the list starts 16 bytes before
	// the boundary, so its first two entries are in region 0 and the rest in region 1 (one
	// lookup cannot cover them).
	const uint64_t split = 2 * kPage + kPage / 2;
	std::vector<unsigned char> a(split), b(8 * kPage - split);
	gio_dma_region regs[2] = {{kBus, split, a.data()}, {kBus + split, 8 * kPage - split, b.data()}};
	gio_dma_map map{regs, 2};
	gio_qp_check ck{};
	ck.map = &map;
	ck.caps.page_bytes = kPage;
	ck.lba_shift = 12;
	// The first two data pages in region 0, so that without region 1 the list is what leaves it.
	uint64_t e[4] = {kBus + kPage, kBus + kPage, kBus + 6 * kPage, kBus + 7 * kPage};
	std::memcpy(a.data() + split - 16, e, 16);
	std::memcpy(b.data(), e + 2, 16);
	gio_sqe sqe{};
	gio_prep_read(&sqe, 1, 0, 5);
	sqe.dptr.prp.prp1 = kBus;
	sqe.dptr.prp.prp2 = kBus + split - 16;
	CHECK(gio_qp_check_sqe(&ck, &sqe) == 0);
	// Without region 1 the third entry is where the list leaves registered memory.
	map.count = 1;
	CHECK(gio_qp_check_sqe(&ck, &sqe) == -EFAULT);
	CHECK(ck.fault_addr == kBus + split);
}

TEST_CASE("an owned queue pair refuses the shared reservation", "[qp]")
{
	// GIO_QP_OWNED: only its warp's gio_submit_warp() submits there (warp-local indices, no
	// atomics); a reservation of the shared protocol would race it, so it is refused.
	const uint32_t depth = 8;
	std::vector<gio_sqe> sq(depth);
	std::vector<gio_cqe> cq(depth);
	std::vector<gio_cmd_slot> slots(depth);
	uint32_t sq_db = 0, cq_db = 0, first = 0;
	gio_qp qp;
	REQUIRE(gio_qp_init(&qp, sq.data(), depth, cq.data(), depth, slots.data(), 1, &sq_db, &cq_db, 0) == 0);
	REQUIRE(gio_qp_reserve(&qp, 1, &first) == 0);
	qp.flags |= GIO_QP_OWNED;
	CHECK(gio_qp_reserve(&qp, 1, &first) == -EINVAL);
	CHECK(gio_qp_reserve_wait(&qp, 1, gio_deadline_in(1000000), &first) == -EINVAL);
}
