// URI check=1 on the host library: a command whose data pointer leaves registered memory is
// refused with -EFAULT before it reaches the ring (the message names the address), where without
// the check the software target refuses it with Data Transfer Error after the fact, and a real
// controller behind an IOMMU may complete it with success and zeros stored.
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const uint64_t kSecond = 1000000000ull;

struct Ctx {
	gio_ctx *ctx = nullptr;
	gio_qp *qp = nullptr;
	gio_ns_info info{};
	unsigned char *buf = nullptr;
	uint64_t addr = 0;
	const size_t bytes = 64 * 1024;
	explicit Ctx(const char *uri)
	{
		REQUIRE(gio_ctx_open(uri, &ctx) == 0);
		gio_ctx_info(ctx, &info);
		buf = static_cast<unsigned char *>(aligned_alloc(4096, bytes));
		std::memset(buf, 0x5a, bytes);
		REQUIRE(gio_ctx_register(ctx, buf, bytes, &addr) == 0);
		REQUIRE(gio_ctx_qp_create(ctx, 16, &qp) == 0);
	}
	~Ctx()
	{
		gio_ctx_close(ctx);
		free(buf);
	}
	// A write of `blocks` blocks from bus address `a` through PRPs (lists in `buf`'s tail).
	int write_prp(uint64_t a, uint32_t blocks, uint16_t *st)
	{
		gio_sqe sqe;
		REQUIRE(gio_prep_write(&sqe, info.nsid, 0, blocks) == 0);
		gio_range r{a, blocks * info.lba_bytes};
		gio_dptr_caps prp = *gio_ctx_dptr_caps(ctx);
		prp.sgls = 0;
		const int rc = gio_prp_build(&sqe, &r, 1, &prp, (gio_prp_entry *)(buf + bytes - 4096), addr + bytes - 4096, 4096);
		if (rc < 0)
			return rc;
		return gio_qp_submit_wait(qp, &sqe, 5 * kSecond, st, nullptr);
	}
	int write_sgl(uint64_t a, uint32_t len, uint16_t *st)
	{
		gio_sqe sqe;
		REQUIRE(gio_prep_write(&sqe, info.nsid, 0, len / info.lba_bytes) == 0);
		gio_sqe_set_sgl_data(&sqe, a, len);
		return gio_qp_submit_wait(qp, &sqe, 5 * kSecond, st, nullptr);
	}
};

} // namespace

TEST_CASE("check=1: pointers outside registered memory are refused before submission", "[ctx][check]")
{
	Ctx c("mem://host?size=1M&check=1");
	REQUIRE(c.qp->check != nullptr);
	uint16_t st = 0xffff;
	// Inside: written.
	CHECK(c.write_sgl(c.addr, 4096, &st) == 0);
	CHECK(st == 0);
	// A data block past the region's end.
	CHECK(c.write_sgl(c.addr + c.bytes - 4096, 8192, &st) == -EFAULT);
	char want[64];
	std::snprintf(want, sizeof(want), "0x%llx", (unsigned long long)(c.addr + c.bytes - 4096));
	CHECK(std::string(gio_last_error()).find(want) != std::string::npos);
	CHECK(std::string(gio_last_error()).find("check=1") != std::string::npos);
	// A PRP page nobody registered, through a PRP list.
	CHECK(c.write_prp(c.addr, 3, &st) == 0);
	CHECK(c.write_prp(c.addr + c.bytes, 3, &st) == -EFAULT);
	std::snprintf(want, sizeof(want), "0x%llx", (unsigned long long)(c.addr + c.bytes));
	CHECK(std::string(gio_last_error()).find(want) != std::string::npos);
	CHECK(c.qp->check->refused == 2);
	// The ring moved on: a good command after the refused ones completes.
	CHECK(c.write_sgl(c.addr, 4096, &st) == 0);
	// Memory unregistered is outside too.
	unsigned char *other = static_cast<unsigned char *>(aligned_alloc(4096, 8192));
	uint64_t oaddr = 0;
	REQUIRE(gio_ctx_register(c.ctx, other, 8192, &oaddr) == 0);
	CHECK(c.write_sgl(oaddr, 4096, &st) == 0);
	REQUIRE(gio_ctx_unregister(c.ctx, other) == 0);
	CHECK(c.write_sgl(oaddr, 4096, &st) == -EFAULT);
	free(other);
}

TEST_CASE("without check, the same command reaches the target and fails there", "[ctx][check]")
{
	Ctx c("mem://host?size=1M");
	CHECK(c.qp->check == nullptr);
	uint16_t st = 0;
	CHECK(c.write_sgl(c.addr + c.bytes - 4096, 8192, &st) == -EIO);
	CHECK(gio_status_sc(st) == GIO_SC_DATA_XFER_ERROR);
}

TEST_CASE("check= takes 0 or 1", "[ctx][check]")
{
	gio_ctx *ctx = nullptr;
	CHECK(gio_ctx_open("mem://host?size=1M&check=2", &ctx) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("check=2") != std::string::npos);
	REQUIRE(gio_ctx_open("mem://host?size=1M&check=0", &ctx) == 0);
	gio_qp *qp = nullptr;
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	CHECK(qp->check == nullptr);
	gio_ctx_close(ctx);
}
