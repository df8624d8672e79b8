// gio_uring: IOCBs of many IOCTXs over several queue pairs, per-IOCB completion, first error
// with its NVMe status, deadlines, and the IOCB ring.
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>
#include <giouring/ring/uring.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

struct Fixture {
	gio_ctx *ctx = nullptr;
	std::vector<gio_qp *> qps;
	gio_iocb_target tg{};
	unsigned char *mem = nullptr;
	uint64_t addr = 0;
	size_t bytes;

	explicit Fixture(uint32_t nqps, uint32_t depth, size_t buf_bytes = 16u << 20) : bytes(buf_bytes)
	{
		REQUIRE(gio_ctx_open("mem://host?size=64M&lba=512&queues=8", &ctx) == 0);
		for (uint32_t i = 0; i < nqps; i++) {
			gio_qp *qp;
			REQUIRE(gio_ctx_qp_create(ctx, depth, &qp) == 0);
			qps.push_back(qp);
		}
		mem = static_cast<unsigned char *>(aligned_alloc(4096, bytes));
		REQUIRE(gio_ctx_register(ctx, mem, bytes, &addr) == 0);
		gio_ns_info info;
		gio_ctx_info(ctx, &info);
		tg.qps = qps.data();
		tg.nqps = nqps;
		tg.nsid = info.nsid;
		tg.lba_shift = 9;
		tg.batch = 8;
	}
	~Fixture()
	{
		CHECK(gio_ctx_close(ctx) == 0);
		free(mem);
	}
	void fill(std::vector<gio_ioctx> &v, uint32_t n, uint32_t obj, uint8_t dir, uint64_t mem_off = 0)
	{
		v.assign(n, gio_ioctx{});
		for (uint32_t i = 0; i < n; i++) {
			gio_sgl_set(&v[i].dptr, addr + mem_off + (uint64_t)i * obj, obj, GIO_SGL_TYPE_DATA_BLOCK);
			// Scatter on the device: object i at slot (i * 7) mod n.
			v[i].offset = (uint64_t)((i * 7u) % n) * obj;
			v[i].len = obj;
			v[i].dir = dir;
		}
	}
};

} // namespace

TEST_CASE("an IOCB of 2048 IOCTXs stores and restores objects through small rings", "[uring]")
{
	Fixture f(4, 16);
	const uint32_t n = GIO_IOCB_MAX_CTX, obj = 4096;
	for (size_t i = 0; i < (size_t)n * obj; i++)
		f.mem[i] = (unsigned char)(i * 131 + (i >> 12));
	std::vector<gio_ioctx> w, r;
	f.fill(w, n, obj, GIO_IOCTX_WRITE);
	gio_iocb b{};
	b.ctx = w.data();
	b.nctx = n;
	b.timeout_ns = 10ull * 1000000000ull;
	REQUIRE(gio_iocb_run(&b, &f.tg) == 0);
	CHECK(b.state == GIO_IOCB_DONE);
	CHECK(b.done == n);
	CHECK(b.failed == 0);

	f.fill(r, n, obj, GIO_IOCTX_READ, (uint64_t)n * obj); // read into the second half
	std::memset(f.mem + (size_t)n * obj, 0xa5, (size_t)n * obj);
	b.ctx = r.data();
	REQUIRE(gio_iocb_run(&b, &f.tg) == 0);
	CHECK(std::memcmp(f.mem, f.mem + (size_t)n * obj, (size_t)n * obj) == 0);
	for (auto &x : r)
		REQUIRE(x.result == 0);
}

TEST_CASE("per-IOCB completion reports the first error with its NVMe status", "[uring]")
{
	Fixture f(2, 8);
	std::vector<gio_ioctx> v;
	f.fill(v, 64, 4096, GIO_IOCTX_READ);
	v[10].offset = (64ull << 20) - 512; // past the namespace end: LBA Out of Range
	v[20].offset = 100;                 // not a whole block: -EINVAL, locally
	gio_iocb b{};
	b.ctx = v.data();
	b.nctx = 64;
	b.timeout_ns = 5ull * 1000000000ull;
	CHECK(gio_iocb_run(&b, &f.tg) == -EIO);
	CHECK(b.done == 64);
	CHECK(b.failed == 2);
	CHECK(b.first_error == 10);
	CHECK(gio_status_sc(b.first_status) == GIO_SC_LBA_RANGE);
	CHECK(v[10].result == -EIO);
	CHECK(v[20].result == -EINVAL);
	for (uint32_t i = 0; i < 64; i++)
		if (i != 10 && i != 20)
			REQUIRE(v[i].result == 0);
}

TEST_CASE("a lost completion gives -ETIME for that IOCTX at the deadline", "[uring]")
{
	Fixture f(1, 64);
	std::vector<gio_ioctx> v;
	f.fill(v, 16, 4096, GIO_IOCTX_READ);
	gio_fault fault{};
	fault.drop_nth = 5;
	gio_ctx_inject(f.ctx, &fault);
	gio_iocb b{};
	b.ctx = v.data();
	b.nctx = 16;
	b.timeout_ns = 200000000ull;
	const uint64_t t0 = gio_now_ns();
	CHECK(gio_iocb_run(&b, &f.tg) == -ETIME);
	CHECK(gio_now_ns() - t0 < 2000000000ull);
	CHECK(b.failed == 1);
	CHECK(v[4].result == -ETIME);
	CHECK(v[5].result == 0);
}

TEST_CASE("the IOCB ring: submit, process, wait; full; invalid", "[uring]")
{
	Fixture f(2, 32);
	gio_iocb *slots[4];
	gio_uring u;
	REQUIRE(gio_uring_init(&u, slots, 4) == 0);
	CHECK(gio_uring_init(&u, slots, 3) == -EINVAL);
	std::vector<std::vector<gio_ioctx>> ctxs(5);
	gio_iocb b[5] = {};
	for (int i = 0; i < 5; i++) {
		f.fill(ctxs[i], 32, 4096, GIO_IOCTX_WRITE, (uint64_t)i * 32 * 4096);
		for (auto &x : ctxs[i])
			x.offset += (uint64_t)i * 32 * 4096;
		b[i].ctx = ctxs[i].data();
		b[i].nctx = 32;
		b[i].timeout_ns = 5ull * 1000000000ull;
	}
	for (int i = 0; i < 4; i++)
		REQUIRE(gio_uring_submit(&u, &b[i]) == 0);
	CHECK(gio_uring_submit(&u, &b[4]) == -EBUSY);
	CHECK(gio_iocb_wait(&b[0], gio_deadline_in(1000000)) == -ETIME); // nobody runs it yet
	CHECK(gio_uring_process(&u, &f.tg, 8) == 4);
	for (int i = 0; i < 4; i++)
		CHECK(gio_iocb_wait(&b[i], gio_deadline_in(1000000000ull)) == 0);
	REQUIRE(gio_uring_submit(&u, &b[4]) == 0);
	CHECK(gio_uring_submit(&u, &b[4]) == -EINVAL); // already submitted
	CHECK(gio_uring_process(&u, &f.tg, 8) == 1);
	gio_iocb empty{};
	CHECK(gio_uring_submit(&u, &empty) == -EINVAL);
}
