// gio_dptr_build: the per-controller choice between SGL and PRP, the dword rule, MDTS.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>

#include <giouring/proto/dptr_build.h>
#include <giouring/proto/prep.h>

namespace {
gio_dptr_caps caps_with(uint32_t sgls, uint64_t max_xfer)
{
	gio_dptr_caps c;
	std::memset(&c, 0, sizeof(c));
	c.sgls = sgls;
	c.page_bytes = 4096;
	c.max_xfer_bytes = max_xfer;
	return c;
}
} // namespace

TEST_CASE("dptr_build: SGL where SGLS allows, PRP otherwise")
{
	alignas(4096) static unsigned char mem[8192];
	const gio_range one = {0x100000, 8192};
	gio_sqe sqe;

	gio_dptr_caps sgl = caps_with(GIO_SGLS_SUPPORT_BYTE, 1 << 19);
	REQUIRE(gio_prep_read(&sqe, 1, 0, 16) == 0);
	CHECK(gio_dptr_build(&sqe, &one, 1, &sgl, nullptr, 0, 0) == 0);
	CHECK(gio_sqe_psdt(&sqe) == GIO_PSDT_SGL_MPTR);
	CHECK(sqe.dptr.sgl.addr == 0x100000);
	CHECK(sqe.dptr.sgl.len == 8192);

	gio_dptr_caps prp = caps_with(GIO_SGLS_SUPPORT_NONE, 1 << 19);
	REQUIRE(gio_prep_read(&sqe, 1, 0, 16) == 0);
	CHECK(gio_dptr_build(&sqe, &one, 1, &prp, mem, 0x200000, sizeof(mem)) == 0);
	CHECK(gio_sqe_psdt(&sqe) == GIO_PSDT_PRP);
	CHECK(sqe.dptr.prp.prp1 == 0x100000);
	CHECK(sqe.dptr.prp.prp2 == 0x101000);

	// Three pages: a PRP list in the caller's memory.
	const gio_range three = {0x100000, 3 * 4096};
	REQUIRE(gio_prep_read(&sqe, 1, 0, 24) == 0);
	CHECK(gio_dptr_build(&sqe, &three, 1, &prp, mem, 0x200000, sizeof(mem)) == 16); // two list entries
	CHECK(sqe.dptr.prp.prp2 == 0x200000);
	uint64_t e[2];
	std::memcpy(e, mem, sizeof(e));
	CHECK(e[0] == 0x101000);
	CHECK(e[1] == 0x102000);
}

TEST_CASE("dptr_build: above MDTS is -E2BIG, whatever the form, and nothing is written")
{
	const gio_range big = {0x100000, (1u << 19) + 4096};
	gio_sqe sqe, before;
	REQUIRE(gio_prep_read(&sqe, 1, 0, 129) == 0);
	before = sqe;
	gio_dptr_caps sgl = caps_with(GIO_SGLS_SUPPORT_BYTE, 1 << 19);
	gio_dptr_caps prp = caps_with(GIO_SGLS_SUPPORT_NONE, 1 << 19);
	alignas(4096) static unsigned char mem[4096];
	CHECK(gio_dptr_build(&sqe, &big, 1, &sgl, mem, 0x200000, sizeof(mem)) == -E2BIG);
	CHECK(gio_dptr_build(&sqe, &big, 1, &prp, mem, 0x200000, sizeof(mem)) == -E2BIG);
	CHECK(std::memcmp(&sqe, &before, sizeof(sqe)) == 0);
	// Exactly MDTS passes.
	const gio_range max = {0x100000, 1u << 19};
	CHECK(gio_dptr_build(&sqe, &max, 1, &sgl, nullptr, 0, 0) == 0);
}

TEST_CASE("dptr_build: the SGLS dword rule refuses byte-aligned ranges; byte SGLs accept them")
{
	const gio_range odd = {0x100001, 512};
	gio_sqe sqe;
	REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
	gio_dptr_caps dword = caps_with(GIO_SGLS_SUPPORT_DWORD, 0);
	gio_dptr_caps byte = caps_with(GIO_SGLS_SUPPORT_BYTE, 0);
	CHECK(gio_dptr_build(&sqe, &odd, 1, &dword, nullptr, 0, 0) == -EINVAL);
	CHECK(gio_dptr_build(&sqe, &odd, 1, &byte, nullptr, 0, 0) == 0);
	// PRP needs a dword-aligned first address too.
	gio_dptr_caps prp = caps_with(GIO_SGLS_SUPPORT_NONE, 0);
	CHECK(gio_dptr_build(&sqe, &odd, 1, &prp, nullptr, 0, 0) == -EINVAL);
}
