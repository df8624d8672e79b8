// Host library over the software target: URIs, controller bring-up through registers and the
// admin queue, queue pairs, registered memory, NVMe statuses and deadlines, persistence.
// Test cases with a file:// target need Linux's io_uring: tagged [io_uring], ctest runs them as
// test_ctx.io_uring (cmake/GiouringTesting.cmake).
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>
#include <giouring/host/uri.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "../src/exec/devcopy.h"
#include "../src/internal.h"

namespace {

const uint64_t kSecond = 1000000000ull;

struct Buf {
	void *p;
	size_t n;
	explicit Buf(size_t bytes) : p(aligned_alloc(4096, bytes)), n(bytes) { std::memset(p, 0, n); }
	~Buf() { free(p); }
	unsigned char *b() const { return static_cast<unsigned char *>(p); }
};

int rw(gio_qp *qp, gio_ctx *ctx, bool write, uint64_t slba, uint32_t nblocks, uint64_t addr, uint16_t *st,
       uint64_t timeout = 5 * kSecond)
{
	gio_ns_info info;
	gio_ctx_info(ctx, &info);
	gio_sqe sqe;
	int rc = write ? gio_prep_write(&sqe, info.nsid, slba, nblocks) : gio_prep_read(&sqe, info.nsid, slba, nblocks);
	if (rc)
		return rc;
	gio_range r{addr, nblocks * info.lba_bytes};
	rc = gio_sgl_build(&sqe, &r, 1, gio_ctx_dptr_caps(ctx), nullptr, 0, 0);
	if (rc < 0)
		return rc;
	return gio_qp_submit_wait(qp, &sqe, timeout, st, nullptr);
}

// A context opened from a URI, with one queue pair and one registered buffer (closed by the test).
struct Opened {
	gio_ctx *ctx = nullptr;
	gio_qp *qp = nullptr;
	Buf buf;
	uint64_t addr = 0;
	Opened(const char *uri, size_t bytes, uint32_t depth) : buf(bytes)
	{
		REQUIRE(gio_ctx_open(uri, &ctx) == 0);
		REQUIRE(gio_ctx_qp_create(ctx, depth, &qp) == 0);
		REQUIRE(gio_ctx_register(ctx, buf.p, buf.n, &addr) == 0);
	}
};

} // namespace

TEST_CASE("bad URIs get -EINVAL with a message naming the problem", "[ctx]")
{
	struct Case {
		const char *uri;
		int rc;
		const char *says;
	} cases[] = {
		{"bogus://x", -EINVAL, "unknown target"},
		{"bogus://x", -EINVAL, "nvme-pci://"},
		{"mem://host?size=0", -EINVAL, "size=0"},
		{"?size=0", -EINVAL, "size=0"},
		{"mem://host?size=1M&size=2M", -EINVAL, "size is given twice"},
		{"mem://host?size=1M&lba", -EINVAL, "'lba' has no value"},
		{"mem://host?size=1M&=4096", -EINVAL, "no name"},
		{"mem://host?size=1M&direct=1", -EINVAL, "unknown URI parameter 'direct' for mem://host"},
		{"mem://host?size=1M&iommu=type1", -EINVAL, "unknown URI parameter 'iommu'"},
		{"nvme-pci://0000:fe:1f.7?size=1M", -EINVAL, "unknown URI parameter 'size' for nvme-pci://"},
		{"mem://host?size=1M&queues=5000", -EINVAL, "queues=5000: a number from 1 to 1024"},
		{"mem://host", -EINVAL, "size="},
		{"mem://host?size=abc", -EINVAL, "not a number"},
		{"mem://host?size=1M&lba=1000", -EINVAL, "lba=1000"},
		{"mem://host?size=1M&color=red", -EINVAL, "unknown URI parameter 'color'"},
		{"mem://host?size=1M&sgls=7", -EINVAL, "sgls=7"},
		{"mem://host?size=1M&idle_us=10", -EINVAL, "idle_us=10"},
		{"mem://host?size=1000", -EINVAL, "not a multiple"},
		{"file://relative/path", -EINVAL, "absolute path"},
		{"mem://host?size=1M&exec=gpu", -EOPNOTSUPP, "exec=gpu"},
		{"mem://host?size=1M&exec=tpu", -EINVAL, "exec=tpu"},
		{"mem://hbm?size=1M", -EOPNOTSUPP, "gio_gpu_target_open"},
		{"?size=1M&direct=yes", -EINVAL, "direct=yes"},
		{"mem://host?size=1M&dptr=sgl2", -EINVAL, "dptr=sgl2"},
		{"mem://host?size=1M&ns=0", -EINVAL, "ns=0"},
		{"mem://host?size=1M&ns=2", -ENODEV, "namespace 2"},
		{"nvme-pci://01:00.0", -EINVAL, "dddd:bb:dd.f"},
		{"nvme-pci://0000:01:00.0x", -EINVAL, "dddd:bb:dd.f"},
		{"nvme-pci://0000:01:00.0?iommu=vfio", -EINVAL, "iommu=vfio"},
		// A PCI address with no device behind it (function 7 of device 31 on a made-up bus).
		{"nvme-pci://0000:fe:1f.7", -ENODEV, "0000:fe:1f.7"},
		{"nvme-pci://0000:fe:1f.7?iommu=iommufd", -ENODEV, "0000:fe:1f.7"},
	};
	for (auto &c : cases) {
		INFO(c.uri);
		gio_ctx *ctx = reinterpret_cast<gio_ctx *>(0x1);
		CHECK(gio_ctx_open(c.uri, &ctx) == c.rc);
		CHECK(ctx == nullptr);
		INFO(gio_last_error());
		CHECK(std::string(gio_last_error()).find(c.says) != std::string::npos);
	}
}

TEST_CASE("gio_last_error() names only the latest call's failure", "[ctx][errors]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("bogus://x", &ctx) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("unknown target") != std::string::npos);
	// A later success clears it.
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	CHECK(std::string(gio_last_error()).empty());
	gio_qp *qp = nullptr;
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	CHECK(std::string(gio_last_error()).empty());
	// An NVMe error gets a message naming the queue and the status, and keeps the status intact.
	gio_sqe sqe;
	REQUIRE(gio_prep_read(&sqe, 1, 1ull << 40, 1) == 0); // far past the namespace's end
	uint16_t st = 0;
	CHECK(gio_qp_submit_wait(qp, &sqe, 1000000000ull, &st, nullptr) == -EIO);
	CHECK(gio_status_sc(st) == GIO_SC_LBA_RANGE);
	const std::string msg = gio_last_error();
	INFO(msg);
	CHECK(msg.find("queue 1") != std::string::npos);
	CHECK(msg.find(gio_status_str(st)) != std::string::npos);
	// A failure of another kind replaces it; then a success clears it again.
	CHECK(gio_ctx_qp_create(ctx, 3, &qp) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("queue depth 3") != std::string::npos);
	CHECK(gio_ctx_close(ctx) == 0);
	CHECK(std::string(gio_last_error()).empty());
}

TEST_CASE("a message may quote the previous one: gio__fail formats before it overwrites", "[ctx][errors]")
{
	// Callers pass gio_last_error() as an argument (an admin timeout quotes the ring's message):
	// formatting straight into the thread's buffer overlapped the input with the output.
	gio__fail(-EIO, "inner %d", 42);
	CHECK(gio__fail(-ETIME, "outer (%s) end", gio_last_error()) == -ETIME);
	CHECK(std::string(gio_last_error()) == "outer (inner 42) end");
	// Quoting twice, and a message as long as the buffer: truncated, never garbled.
	gio__fail(-EIO, "%s", std::string(600, 'x').c_str());
	gio__fail(-EIO, "a%sb", gio_last_error());
	const std::string m = gio_last_error();
	CHECK(m.size() == 511);
	CHECK(m[0] == 'a');
	CHECK(m.find_first_not_of('x', 1) == std::string::npos);
}

TEST_CASE("NULL contexts: info zeroed, caps NULL, inject -EINVAL, no crash", "[ctx][errors]")
{
	gio_ns_info info;
	std::memset(&info, 0x5a, sizeof(info));
	gio_ctx_info(nullptr, &info);
	const gio_ns_info zero{};
	CHECK(std::memcmp(&info, &zero, sizeof(info)) == 0);
	gio_ctx_info(nullptr, nullptr);
	CHECK(gio_ctx_dptr_caps(nullptr) == nullptr);
	gio_fault f{};
	CHECK(gio_ctx_inject(nullptr, &f) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("gio_ctx_inject") != std::string::npos);
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	gio_ctx_info(ctx, nullptr); // nothing to fill: nothing done
	CHECK(gio_ctx_close(ctx) == 0);
}

TEST_CASE("URI numbers: digits with K M G T suffixes, overflow refused", "[ctx][uri]")
{
	uint64_t v = 7;
	CHECK(gio_uri_number("4096", &v) == 0);
	CHECK(v == 4096);
	CHECK(gio_uri_number("64G", &v) == 0);
	CHECK(v == 64ull << 30);
	CHECK(gio_uri_number("3k", &v) == 0);
	CHECK(v == 3072);
	CHECK(gio_uri_number("16777215T", &v) == 0);
	CHECK(v == 16777215ull << 40);
	v = 7;
	CHECK(gio_uri_number("16777216T", &v) == -ERANGE); // 2^64: one past the top
	CHECK(gio_uri_number("18446744073709551616", &v) == -ERANGE);
	CHECK(gio_uri_number("12x", &v) == -EINVAL);
	CHECK(gio_uri_number("1MB", &v) == -EINVAL);
	CHECK(gio_uri_number("", &v) == -EINVAL);
	CHECK(gio_uri_number("-1", &v) == -EINVAL);
	CHECK(gio_uri_number(nullptr, &v) == -EINVAL);
	CHECK(v == 7); // untouched on error
}

TEST_CASE("dptr=prp: the builders get PRP-only caps; info keeps the controller's SGLS", "[ctx]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M&dptr=prp", &ctx) == 0);
	gio_ns_info info;
	gio_ctx_info(ctx, &info);
	CHECK(info.sgls != 0);
	CHECK(gio_dptr_sgl_support(gio_ctx_dptr_caps(ctx)) == GIO_SGLS_SUPPORT_NONE);
	// Fault injection belongs to the software target: still available here.
	CHECK(gio_ctx_inject(ctx, nullptr) == 0);
	CHECK(gio_ctx_close(ctx) == 0);
	REQUIRE(gio_ctx_open("mem://host?size=1M&dptr=auto", &ctx) == 0);
	CHECK(gio_dptr_sgl_support(gio_ctx_dptr_caps(ctx)) == GIO_SGLS_SUPPORT_BYTE);
	CHECK(gio_ctx_close(ctx) == 0);
}

TEST_CASE("controller comes up; identify reports the configured rules", "[ctx]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=8M&lba=512&sgls=2&mdts=5&queues=4", &ctx) == 0);
	gio_ns_info info;
	gio_ctx_info(ctx, &info);
	CHECK(info.nblocks == 8u * 1024 * 1024 / 512);
	CHECK(info.lba_bytes == 512);
	CHECK((info.sgls & GIO_SGLS_SUPPORT_MASK) == GIO_SGLS_SUPPORT_DWORD);
	CHECK(info.max_xfer_bytes == 128u * 1024);
	CHECK(info.io_queues == 4);
	CHECK(info.nsid == 1);
	gio_qp *qps[5];
	for (int i = 0; i < 4; i++)
		REQUIRE(gio_ctx_qp_create(ctx, 64, &qps[i]) == 0);
	CHECK(gio_ctx_qp_create(ctx, 64, &qps[4]) == -EBUSY);
	CHECK(gio_ctx_qp_create(ctx, 48, &qps[4]) == -EINVAL);
	CHECK(gio_ctx_close(ctx) == 0);
}

TEST_CASE("write then read back through a queue pair, SGL and PRP", "[ctx][io_uring]")
{
	for (const char *uri : {"mem://host?size=16M", ""}) {
		INFO(uri);
		gio_ctx *ctx = nullptr;
		REQUIRE(gio_ctx_open(uri, &ctx) == 0);
		gio_qp *qp;
		REQUIRE(gio_ctx_qp_create(ctx, 16, &qp) == 0);
		Buf out(64 * 1024), in(64 * 1024);
		for (size_t i = 0; i < out.n; i++)
			out.b()[i] = (unsigned char)(i * 7 + 3);
		uint64_t a_out, a_in;
		REQUIRE(gio_ctx_register(ctx, out.p, out.n, &a_out) == 0);
		REQUIRE(gio_ctx_register(ctx, in.p, in.n, &a_in) == 0);
		uint16_t st = 0xffff;
		REQUIRE(rw(qp, ctx, true, 100, 16, a_out, &st) == 0);
		CHECK(st == 0);
		REQUIRE(rw(qp, ctx, false, 100, 16, a_in, &st) == 0);
		CHECK(std::memcmp(out.p, in.p, 64 * 1024) == 0);

		// The same read with a PRP list.
		std::memset(in.p, 0, in.n);
		gio_sqe sqe;
		REQUIRE(gio_prep_read(&sqe, 1, 100, 16) == 0);
		Buf list(4096);
		uint64_t a_list;
		REQUIRE(gio_ctx_register(ctx, list.p, list.n, &a_list) == 0);
		gio_range r{a_in, 64 * 1024};
		REQUIRE(gio_prp_build(&sqe, &r, 1, gio_ctx_dptr_caps(ctx), static_cast<uint64_t *>(list.p), a_list, 4096) ==
			15 * 8); // 16 pages: PRP1 and 15 list entries
		REQUIRE(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == 0);
		CHECK(std::memcmp(out.p, in.p, 64 * 1024) == 0);
		CHECK(gio_ctx_close(ctx) == 0);
	}
}

TEST_CASE("the timing model: a CPU-executed target stands in for a drive of the given rates", "[ctx][model][io_uring]")
{
	// Sequential commands book one after another on the device's timeline, so the run takes at
	// least its bytes at the modelled rate (and each command at least the latency): lower bounds
	// that hold however fast the machine is. The upper bounds only say the model is not stuck.
	const uint64_t kCmd = 64 * 1024, kCmds = 32;
	for (const char *uri : {"mem://host?size=16M&model_read_gbps=0.25&model_write_gbps=0.125",
				"?size=16M&model_read_gbps=0.25&model_write_gbps=0.125"}) {
		INFO(uri);
		Opened o(uri, kCmd, 16);
		uint16_t st = 0xffff;
		for (int write : {1, 0}) {
			const double gbps = write ? 0.125 : 0.25, modelled = kCmds * kCmd / gbps; // ns
			const auto t0 = std::chrono::steady_clock::now();
			for (uint64_t i = 0; i < kCmds; i++) {
				REQUIRE(rw(o.qp, o.ctx, write, i * 16, 16, o.addr, &st) == 0);
				REQUIRE(st == 0);
			}
			const double ns = (double)std::chrono::duration_cast<std::chrono::nanoseconds>(
						  std::chrono::steady_clock::now() - t0)
						  .count();
			INFO((write ? "writes " : "reads ") << ns / 1e6 << " ms, modelled " << modelled / 1e6 << " ms");
			CHECK(ns >= modelled * 0.999);
			CHECK(ns < modelled * 20 + 2e9);
		}
		CHECK(gio_ctx_close(o.ctx) == 0);
	}
	// One batch of reads and writes goes at the mixed rate: 16 reads and 16 writes of 64 KiB put
	// before one doorbell (one fetch of 32) take 2 MiB at 0.05 GB/s, 42 ms, where either
	// direction alone would take 2 ms; a batch of reads alone keeps the read rate.
	for (int mixed : {1, 0}) {
		INFO((mixed ? "reads and writes" : "reads alone"));
		Opened m("mem://host?size=16M&model_read_gbps=1&model_write_gbps=1&model_mixed_gbps=0.05", 32 * kCmd, 64);
		gio_ns_info info;
		gio_ctx_info(m.ctx, &info);
		uint32_t first = 0;
		REQUIRE(gio_qp_reserve(m.qp, 32, &first) == 0);
		const auto t0 = std::chrono::steady_clock::now();
		for (uint32_t i = 0; i < 32; i++) {
			gio_sqe sqe;
			const bool write = mixed && i % 2;
			REQUIRE((write ? gio_prep_write(&sqe, info.nsid, i * 16, 16) : gio_prep_read(&sqe, info.nsid, i * 16, 16)) == 0);
			gio_range r{m.addr + i * kCmd, kCmd};
			REQUIRE(gio_sgl_build(&sqe, &r, 1, gio_ctx_dptr_caps(m.ctx), nullptr, 0, 0) >= 0);
			REQUIRE(gio_qp_put(m.qp, first + i, &sqe, i, 0) == 0);
		}
		gio_qp_publish(m.qp);
		for (uint32_t i = 0; i < 32; i++) {
			uint16_t st = 0xffff;
			REQUIRE(gio_qp_wait(m.qp, first + i, gio_deadline_in(5 * kSecond), &st, nullptr) == 0);
			CHECK(st == 0);
		}
		const double ns = (double)std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
					  .count();
		const double at_mixed = 32.0 * kCmd / 0.05;
		INFO(ns / 1e6 << " ms; the mixed rate's " << at_mixed / 1e6 << " ms");
		if (mixed)
			CHECK(ns >= at_mixed * 0.999);
		else
			CHECK(ns < at_mixed); // 2 ms modelled at the read rate
		CHECK(gio_ctx_close(m.ctx) == 0);
	}
	// Latency alone: each command at least model_lat_us after its fetch.
	Opened o("mem://host?size=16M&model_lat_us=2000", 4096, 16);
	uint16_t st = 0xffff;
	const auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < 10; i++)
		REQUIRE(rw(o.qp, o.ctx, false, 0, 1, o.addr, &st) == 0);
	CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(20));
	CHECK(gio_ctx_close(o.ctx) == 0);
	gio_ctx *ctx = nullptr;
	// The rates are checked like every URI number; a controller takes no model.
	CHECK(gio_ctx_open("mem://host?size=16M&model_read_gbps=-1", &ctx) == -EINVAL);
	CHECK(std::strstr(gio_last_error(), "model_read_gbps") != nullptr);
	CHECK(gio_ctx_open("mem://host?size=16M&model_lat_us=x", &ctx) == -EINVAL);
	CHECK(gio_ctx_open("nvme-pci://0000:00:00.0?model_read_gbps=1", &ctx) == -EINVAL);
	CHECK(std::strstr(gio_last_error(), "model_read_gbps") != nullptr);
}

TEST_CASE("NVMe errors reach the caller intact", "[ctx]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M&mdts=2", &ctx) == 0);
	gio_qp *qp;
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	Buf b(64 * 1024);
	uint64_t a;
	REQUIRE(gio_ctx_register(ctx, b.p, b.n, &a) == 0);
	uint16_t st = 0;
	SECTION("LBA out of range")
	{
		CHECK(rw(qp, ctx, false, 255, 2, a, &st) == -EIO);
		CHECK(gio_status_sc(st) == GIO_SC_LBA_RANGE);
		CHECK(gio_status_dnr(st) == 1);
	}
	SECTION("above MDTS: the builder refuses it, and so does the controller")
	{
		CHECK(rw(qp, ctx, false, 0, 5, a, &st) == -E2BIG); // 20 KiB > 16 KiB
		gio_sqe sqe;
		REQUIRE(gio_prep_read(&sqe, 1, 0, 5) == 0);
		gio_sqe_set_sgl_data(&sqe, a, 5 * 4096); // unchecked fast path
		CHECK(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == -EIO);
		CHECK(gio_status_sc(st) == GIO_SC_INVALID_FIELD);
	}
	SECTION("unregistered data pointer: Data Transfer Error and nothing written")
	{
		Buf other(4096);
		std::memset(other.p, 0x5a, 4096);
		CHECK(rw(qp, ctx, false, 0, 1, (uint64_t)(uintptr_t)other.p, &st) == -EIO);
		CHECK(gio_status_sc(st) == GIO_SC_DATA_XFER_ERROR);
		for (int i = 0; i < 4096; i++)
			REQUIRE(other.b()[i] == 0x5a);
	}
	SECTION("SGL shorter than the transfer: Data SGL Length Invalid")
	{
		gio_sqe sqe;
		REQUIRE(gio_prep_read(&sqe, 1, 0, 2) == 0);
		gio_sqe_set_sgl_data(&sqe, a, 4096);
		CHECK(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == -EIO);
		CHECK(gio_status_sc(st) == GIO_SC_SGL_INVALID_DATA_LEN);
	}
	SECTION("wrong namespace")
	{
		gio_sqe sqe;
		REQUIRE(gio_prep_read(&sqe, 2, 0, 1) == 0);
		gio_sqe_set_sgl_data(&sqe, a, 4096);
		CHECK(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == -EIO);
		CHECK(gio_status_sc(st) == GIO_SC_INVALID_NS);
	}
	CHECK(gio_ctx_close(ctx) == 0);
}

TEST_CASE("injected faults: status, dropped completion, stall", "[ctx][fault]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	gio_qp *qp;
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	Buf b(4096);
	uint64_t a;
	REQUIRE(gio_ctx_register(ctx, b.p, b.n, &a) == 0);
	uint16_t st = 0;

	gio_fault f{};
	f.fail_nth = 2;
	f.fail_status = GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ) | GIO_SF_DNR;
	gio_ctx_inject(ctx, &f);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st) == 0);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st) == -EIO);
	CHECK(gio_status_sct(st) == GIO_SCT_MEDIA);
	CHECK(gio_status_sc(st) == GIO_SC_UNRECOVERED_READ);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st) == 0);

	// A dropped completion: the deadline fires and the slot (its CID) stays quarantined. The
	// ring goes on until it wraps to that slot; then reservations time out instead of reusing
	// the CID of a command that may still complete.
	f = gio_fault{};
	f.drop_nth = 1;
	gio_ctx_inject(ctx, &f);
	uint64_t t0 = gio_now_ns();
	CHECK(rw(qp, ctx, false, 0, 1, a, &st, 200000000ull) == -ETIME);
	uint64_t waited = gio_now_ns() - t0;
	CHECK(waited >= 200000000ull);
	CHECK(waited < 2 * kSecond);
	CHECK(std::string(gio_last_error()).find("deadline") != std::string::npos);
	for (int i = 0; i < 7; i++) // the other 7 slots of the 8-deep ring
		REQUIRE(rw(qp, ctx, false, 0, 1, a, &st) == 0);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st, 100000000ull) == -ETIME);
	CHECK(gio_cmd_state(qp->slots[qp->last_timeout.sq_reserved & 7].state) == GIO_CMD_ABANDONED);
	// Recovery: destroy it (the deletion aborts the withheld command, whose submitter was told
	// -ETIME already, so nothing is reported) and take its qid again.
	const uint16_t wedged = qp->qid;
	CHECK(gio_ctx_qp_destroy(ctx, qp, 5 * kSecond, nullptr, nullptr) == 0);
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	CHECK(qp->qid == wedged);

	// A stalled doorbell: commands wait; a short deadline fires; a long one succeeds.
	f = gio_fault{};
	f.stall_ms = 300;
	gio_ctx_inject(ctx, &f);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st, 50000000ull) == -ETIME);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st, 5 * kSecond) == 0);

	// A delay shorter than the deadline is only a delay.
	f = gio_fault{};
	f.delay_us = 20000;
	gio_ctx_inject(ctx, &f);
	CHECK(rw(qp, ctx, false, 0, 1, a, &st) == 0);
	gio_ctx_inject(ctx, nullptr);
	CHECK(gio_ctx_close(ctx) == 0);
}

TEST_CASE("data written before close is read back by a new context on the same file", "[ctx][io_uring]")
{
	char dir[] = "/tmp/gio-test-XXXXXX";
	REQUIRE(mkdtemp(dir) != nullptr);
	std::string uri = std::string("file://") + dir + "/kv.img?size=4M";
	Buf out(128 * 1024), in(128 * 1024);
	for (size_t i = 0; i < out.n; i++)
		out.b()[i] = (unsigned char)(i ^ (i >> 8) ^ 0x3c);
	{
		gio_ctx *ctx = nullptr;
		REQUIRE(gio_ctx_open(uri.c_str(), &ctx) == 0);
		gio_qp *qp;
		REQUIRE(gio_ctx_qp_create(ctx, 16, &qp) == 0);
		uint64_t a;
		REQUIRE(gio_ctx_register(ctx, out.p, out.n, &a) == 0);
		uint16_t st;
		REQUIRE(rw(qp, ctx, true, 7, 32, a, &st) == 0);
		CHECK(gio_ctx_close(ctx) == 0);
	}
	{
		gio_ctx *ctx = nullptr;
		REQUIRE(gio_ctx_open((std::string("file://") + dir + "/kv.img").c_str(), &ctx) == 0);
		gio_qp *qp;
		REQUIRE(gio_ctx_qp_create(ctx, 16, &qp) == 0);
		uint64_t a;
		REQUIRE(gio_ctx_register(ctx, in.p, in.n, &a) == 0);
		uint16_t st;
		REQUIRE(rw(qp, ctx, false, 7, 32, a, &st) == 0);
		CHECK(std::memcmp(out.p, in.p, out.n) == 0);
		CHECK(gio_ctx_close(ctx) == 0);
	}
	std::string f = std::string(dir) + "/kv.img";
	unlink(f.c_str());
	rmdir(dir);
}

// A file is accessed in one mode: O_DIRECT (where the file system takes it) or the page cache.
// On an O_DIRECT file, segments at odd addresses and of odd lengths go through the executor's
// bounce buffer, in both directions; the other mode must read the same bytes back.
TEST_CASE("file target, O_DIRECT and page cache: unaligned SGL segments round-trip", "[ctx][direct][io_uring]")
{
	char dir[] = "/tmp/gio-test-XXXXXX";
	REQUIRE(mkdtemp(dir) != nullptr);
	const std::string file = std::string("file://") + dir + "/kv.img";
	const uint32_t bytes = 16 * 512;
	Buf out(bytes + 4096), in(bytes + 4096);
	for (size_t i = 0; i < out.n; i++)
		out.b()[i] = (unsigned char)(i * 13 + 5);
	// Write with the modes swapped for the read, so each mode reads what the other wrote.
	for (const char *wmode : {"auto", "0"}) {
		const char *rmode = std::strcmp(wmode, "0") ? "0" : "auto";
		INFO("write direct=" << wmode << ", read direct=" << rmode);
		const uint64_t slba = std::strcmp(wmode, "0") ? 40 : 80;
		for (int pass = 0; pass < 2; pass++) {
			const bool write = pass == 0;
			gio_ctx *ctx = nullptr;
			const std::string uri = file + "?size=1M&lba=512&sgls=1&direct=" + (write ? wmode : rmode);
			REQUIRE(gio_ctx_open(uri.c_str(), &ctx) == 0);
			gio_qp *qp;
			REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
			Buf &b = write ? out : in;
			uint64_t a;
			REQUIRE(gio_ctx_register(ctx, b.p, b.n, &a) == 0);
			// Three segments: odd start, odd lengths; the read splits differently.
			const uint32_t cut1 = write ? 1001 : 77, cut2 = write ? 3333 : 5123;
			const gio_range r[3] = {{a + 3, cut1}, {a + 3 + cut1 + 9, cut2 - cut1}, {a + 3 + cut2 + 20, bytes - cut2}};
			gio_sqe sqe;
			REQUIRE((write ? gio_prep_write(&sqe, 1, slba, 16) : gio_prep_read(&sqe, 1, slba, 16)) == 0);
			Buf seg(4096);
			uint64_t a_seg;
			REQUIRE(gio_ctx_register(ctx, seg.p, seg.n, &a_seg) == 0);
			REQUIRE(gio_sgl_build(&sqe, r, 3, gio_ctx_dptr_caps(ctx), static_cast<gio_sgl_desc *>(seg.p), a_seg, 4096) > 0);
			uint16_t st = 0xffff;
			REQUIRE(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == 0);
			CHECK(st == 0);
			CHECK(gio_ctx_close(ctx) == 0);
		}
		// The bytes of out's three pieces arrive in in's three pieces, in order.
		std::vector<unsigned char> want, got;
		auto gather = [](const Buf &b, std::vector<unsigned char> &v, uint32_t c1, uint32_t c2) {
			v.clear();
			v.insert(v.end(), b.b() + 3, b.b() + 3 + c1);
			v.insert(v.end(), b.b() + 3 + c1 + 9, b.b() + 3 + c2 + 9);
			v.insert(v.end(), b.b() + 3 + c2 + 20, b.b() + 3 + 20 + 16 * 512);
		};
		gather(out, want, 1001, 3333);
		gather(in, got, 77, 5123);
		REQUIRE(want.size() == bytes);
		CHECK(want == got);
		std::memset(in.p, 0, in.n);
	}
	std::string f = std::string(dir) + "/kv.img";
	unlink(f.c_str());
	rmdir(dir);
}

TEST_CASE("pinned queue memory needs the CUDA runtime and a GPU", "[ctx]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	gio_qp *qp = nullptr;
	CHECK(gio_ctx_qp_create_ex(ctx, 8, 0x80, &qp) == -EINVAL);
	int rc = gio_ctx_qp_create_ex(ctx, 8, GIO_CTX_QP_PINNED, &qp);
	if (rc == 0) { // a machine with a GPU: the pinned rings work like any other
		Buf b(4096);
		uint64_t a;
		REQUIRE(gio_ctx_register(ctx, b.p, b.n, &a) == 0);
		uint16_t st;
		CHECK(rw(qp, ctx, false, 0, 1, a, &st) == 0);
	} else {
		CHECK(rc == -ENODEV);
		INFO(gio_last_error());
		CHECK(std::string(gio_last_error()).find("pinned") != std::string::npos);
		REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0); // the failed attempt used no queue id
	}
	CHECK(gio_ctx_close(ctx) == 0);
}

TEST_CASE("GPU placement where it is unsupported: documented errors, no crash", "[ctx]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	static char hbm[4096]; // stands in for a device pointer: nothing may touch it
	uint64_t addr = 7;
	// Without a GPU the CUDA runtime is missing (-ENODEV); with one, a host array is not device
	// memory (-EINVAL). Either way a message, and nothing registered.
	const int hrc = gio_ctx_register_ex(ctx, hbm, sizeof(hbm), GIO_MEM_HBM, &addr);
	CHECK((hrc == -ENODEV || hrc == -EINVAL));
	CHECK(std::string(gio_last_error()).find("device memory") != std::string::npos);
	CHECK(addr == 7);
	CHECK(gio_ctx_register_ex(ctx, hbm, sizeof(hbm), 9, &addr) == -EINVAL);
	// Files and dma-bufs need an IOMMU to map them: the software target has none.
	CHECK(gio_ctx_register_fd(ctx, 0, 0, 4096, hbm, &addr) == -EOPNOTSUPP);
	CHECK(std::string(gio_last_error()).find("software target") != std::string::npos);
	CHECK(addr == 7);
	CHECK(std::string(gio_ctx_iommu(ctx)) == "none");
	CHECK(std::string(gio_ctx_iommu(nullptr)) == "none");
	CHECK(gio_ctx_register_fd(nullptr, 0, 0, 4096, hbm, &addr) == -EINVAL);
	CHECK(gio_ctx_register_ex(ctx, hbm, sizeof(hbm), GIO_MEM_HOST, &addr) == 0);
	CHECK(addr == reinterpret_cast<uint64_t>(hbm));
	gio_qp *qp = nullptr;
	CHECK(gio_ctx_qp_create_ex(ctx, 8, GIO_CTX_QP_HBM, &qp) == -EOPNOTSUPP); // CPU executor, HBM rings
	CHECK(std::string(gio_last_error()).find("gio_gpu_target_open") != std::string::npos);
	CHECK(qp == nullptr);
	CHECK(gio_ctx_qp_create_ex(ctx, 8, GIO_CTX_QP_DB_PROXY, &qp) == -EOPNOTSUPP);
	CHECK(std::string(gio_last_error()).find("GIO_CTX_QP_DB_PROXY") != std::string::npos);
	CHECK(qp == nullptr);
	CHECK(gio_ctx_qp_create_ex(ctx, 8, GIO_CTX_QP_DB_DIRECT, &qp) == -EOPNOTSUPP);
	CHECK(std::string(gio_last_error()).find("GIO_CTX_QP_DB_DIRECT") != std::string::npos);
	CHECK(gio_ctx_qp_create_ex(ctx, 8, GIO_CTX_QP_DB_PROXY | GIO_CTX_QP_DB_DIRECT, &qp) == -EINVAL);
	CHECK(gio_ctx_qp_create_ex(ctx, 8, 16u, &qp) == -EINVAL);
	REQUIRE(gio_ctx_qp_create_ex(ctx, 8, 0, &qp) == 0);
	CHECK(gio_ctx_qp_doorbells(ctx, qp) == 0); // a software target's doorbells are memory
	CHECK(gio_ctx_qp_doorbells(ctx, nullptr) == 0);
	CHECK(gio_ctx_close(ctx) == 0);
}

// ---- device memory through an injected copy engine (src/exec/devcopy.h) -----------------------------
//
// "Device memory" here is an address range mapped PROT_NONE: any load or store by the executor
// would crash the test. Only the fake copy engine reaches it, by translating its addresses into
// a shadow buffer. Copies are queued per stream and land only when query() finds the gate open,
// as a real copy engine's would land some time after cudaMemcpyAsync returned.

namespace {

struct FakeDevice {
	size_t n;
	unsigned char *dev;    // PROT_NONE: the addresses the target sees
	unsigned char *shadow; // what the "device" holds
	std::atomic<bool> gate{true};        // copies land only while open
	std::atomic<bool> fail_copy{false};  // cudaMemcpyAsync refuses
	std::atomic<bool> fail_query{false}; // a copy fails while running
	std::atomic<int> landed{0};
	std::atomic<int> streams{0};
	gio__devcopy dc{};

	struct Copy {
		void *dst;
		const void *src;
		size_t len;
	};
	struct Stream {
		std::vector<Copy> q; // touched only by the thread that owns the stream
	};

	explicit FakeDevice(size_t bytes) : n(bytes)
	{
		dev = static_cast<unsigned char *>(mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		shadow = static_cast<unsigned char *>(aligned_alloc(4096, n));
		std::memset(shadow, 0, n);
		dc.priv = this;
		dc.timeout_ns = 5 * kSecond;
		dc.name = "test";
		dc.abandoned_freeable = 1; // a destroyed stream's copies are dropped (stream_destroy)
		dc.stream_create = [](void *priv, void **s) {
			static_cast<FakeDevice *>(priv)->streams++;
			*s = new Stream;
			return 0;
		};
		dc.stream_destroy = [](void *, void *s) { delete static_cast<Stream *>(s); };
		dc.copy = [](void *priv, void *s, void *dst, const void *src, size_t len, int to_dev) {
			FakeDevice *d = static_cast<FakeDevice *>(priv);
			if (d->fail_copy)
				return -EIO;
			// The device end must lie in the fake range, the host end outside it.
			void *dev_end = to_dev ? dst : const_cast<void *>(src);
			void *host_end = to_dev ? const_cast<void *>(src) : dst;
			if (!d->is_dev(dev_end, len) || d->is_dev(host_end, 1))
				return -EFAULT;
			static_cast<Stream *>(s)->q.push_back(
				{to_dev ? d->xlate(dst) : dst, to_dev ? src : d->xlate(const_cast<void *>(src)), len});
			return 0;
		};
		dc.query = [](void *priv, void *s) {
			FakeDevice *d = static_cast<FakeDevice *>(priv);
			Stream *st = static_cast<Stream *>(s);
			if (d->fail_query)
				return -EIO;
			if (!d->gate)
				return -EAGAIN;
			for (const Copy &c : st->q)
				std::memcpy(c.dst, c.src, c.len);
			d->landed += static_cast<int>(st->q.size());
			st->q.clear();
			return 0;
		};
		dc.host_alloc = [](void *, size_t len) { return aligned_alloc(4096, len); };
		dc.host_free = [](void *, void *p) { free(p); };
	}
	~FakeDevice()
	{
		munmap(dev, n);
		free(shadow);
	}
	bool is_dev(const void *p, size_t len) const
	{
		const unsigned char *c = static_cast<const unsigned char *>(p);
		return c >= dev && c + len <= dev + n;
	}
	void *xlate(void *p) const { return shadow + (static_cast<unsigned char *>(p) - dev); }
};

// Reads `nblocks` at `slba` into the SGL of `ranges` (the segment list, if one is needed, in `seg`).
int rw_sgl(gio_qp *qp, gio_ctx *ctx, bool write, uint64_t slba, uint32_t nblocks, const gio_range *ranges, uint32_t n,
	   gio_sgl_desc *seg, uint64_t seg_addr, uint16_t *st, uint64_t timeout = 5 * kSecond)
{
	gio_sqe sqe;
	int rc = write ? gio_prep_write(&sqe, 1, slba, nblocks) : gio_prep_read(&sqe, 1, slba, nblocks);
	if (rc)
		return rc;
	rc = gio_sgl_build(&sqe, ranges, n, gio_ctx_dptr_caps(ctx), seg, seg_addr, 4096);
	if (rc < 0)
		return rc;
	return gio_qp_submit_wait(qp, &sqe, timeout, st, nullptr);
}

bool is_xfer_error(uint16_t st)
{
	return gio_status_sct(st) == GIO_SCT_GENERIC && gio_status_sc(st) == GIO_SC_DATA_XFER_ERROR;
}

} // namespace

TEST_CASE("device memory through the copy engine: data lands, then the completion", "[ctx][devcopy][io_uring]")
{
	for (const char *uri : {"mem://host?size=16M", "", "?direct=0&size=16M"}) {
		INFO(uri);
		gio_ctx *ctx = nullptr;
		REQUIRE(gio_ctx_open(uri, &ctx) == 0);
		FakeDevice d(1 << 20);
		uint64_t a_dev = 0, a_host = 0, a_seg = 0;
		REQUIRE(gio__ctx_set_devcopy(ctx, &d.dc) == 0);
		REQUIRE(gio_ctx_register_device(ctx, d.dev, d.n, &a_dev) == 0);
		CHECK(a_dev == reinterpret_cast<uint64_t>(d.dev)); // the bus address is the device pointer
		CHECK(gio__ctx_set_devcopy(ctx, &d.dc) == -EBUSY);
		CHECK(gio_ctx_register_device(ctx, d.dev + 4096, 4096, nullptr) == -EINVAL); // overlap
		Buf host(256 * 1024), seg(4096);
		REQUIRE(gio_ctx_register(ctx, host.p, host.n, &a_host) == 0);
		REQUIRE(gio_ctx_register(ctx, seg.p, seg.n, &a_seg) == 0);
		gio_qp *qp;
		REQUIRE(gio_ctx_qp_create(ctx, 64, &qp) == 0);
		uint16_t st = 0;

		// Host data -> file -> device, 64 KiB, every byte checked in the shadow.
		for (size_t i = 0; i < 65536; i++)
			host.b()[i] = (unsigned char)(i * 13 + 5);
		gio_range hr{a_host, 65536}, dr{a_dev, 65536};
		REQUIRE(rw_sgl(qp, ctx, true, 10, 16, &hr, 1, nullptr, 0, &st) == 0);
		std::memset(d.shadow, 0xa5, 65536);
		REQUIRE(rw_sgl(qp, ctx, false, 10, 16, &dr, 1, nullptr, 0, &st) == 0);
		CHECK(st == 0);
		CHECK(std::memcmp(d.shadow, host.p, 65536) == 0);

		// Device -> file -> host.
		for (size_t i = 0; i < 65536; i++)
			d.shadow[128 * 1024 + i] = (unsigned char)(i * 31 + 1);
		gio_range dr2{a_dev + 128 * 1024, 65536};
		REQUIRE(rw_sgl(qp, ctx, true, 40, 16, &dr2, 1, nullptr, 0, &st) == 0);
		std::memset(host.p, 0, 65536);
		REQUIRE(rw_sgl(qp, ctx, false, 40, 16, &hr, 1, nullptr, 0, &st) == 0);
		CHECK(std::memcmp(host.p, d.shadow + 128 * 1024, 65536) == 0);

		// One command, host and device segments mixed (unaligned lengths too), both ways.
		gio_range mix[3] = {{a_host + 100000, 5000}, {a_dev + 300001, 8192}, {a_host + 200000, 3192}};
		for (size_t i = 0; i < 5000; i++)
			host.b()[100000 + i] = (unsigned char)(i ^ 0x3c);
		for (size_t i = 0; i < 8192; i++)
			d.shadow[300001 + i] = (unsigned char)(i * 7);
		for (size_t i = 0; i < 3192; i++)
			host.b()[200000 + i] = (unsigned char)(i + 9);
		std::vector<unsigned char> want(16384);
		std::memcpy(want.data(), host.b() + 100000, 5000);
		std::memcpy(want.data() + 5000, d.shadow + 300001, 8192);
		std::memcpy(want.data() + 13192, host.b() + 200000, 3192);
		REQUIRE(rw_sgl(qp, ctx, true, 70, 4, mix, 3, static_cast<gio_sgl_desc *>(seg.p), a_seg, &st) == 0);
		std::memset(host.b() + 100000, 0, 5000);
		std::memset(d.shadow + 300001, 0, 8192);
		std::memset(host.b() + 200000, 0, 3192);
		REQUIRE(rw_sgl(qp, ctx, false, 70, 4, mix, 3, static_cast<gio_sgl_desc *>(seg.p), a_seg, &st) == 0);
		CHECK(std::memcmp(host.b() + 100000, want.data(), 5000) == 0);
		CHECK(std::memcmp(d.shadow + 300001, want.data() + 5000, 8192) == 0);
		CHECK(std::memcmp(host.b() + 200000, want.data() + 13192, 3192) == 0);

		// The completion waits for the copy: with the gate shut, no CQE; once open, data then CQE.
		d.gate = false;
		std::memset(d.shadow, 0, 65536);
		std::atomic<bool> finished{false};
		int trc = -1;
		uint16_t tst = 0xffff;
		std::thread t([&] {
			trc = rw_sgl(qp, ctx, false, 10, 16, &dr, 1, nullptr, 0, &tst);
			finished = true;
		});
		std::this_thread::sleep_for(std::chrono::milliseconds(150));
		CHECK(!finished);
		d.gate = true;
		t.join();
		CHECK(trc == 0);
		CHECK(tst == 0);
		size_t wrong = 0;
		for (size_t i = 0; i < 65536; i++)
			wrong += d.shadow[i] != (unsigned char)(i * 13 + 5); // what LBA 10 holds
		CHECK(wrong == 0);
		CHECK(gio_ctx_close(ctx) == 0);
	}
}

TEST_CASE("device memory: failing or late copies give Data Transfer Error", "[ctx][devcopy][io_uring]")
{
	for (const char *uri : {"mem://host?size=16M", ""}) {
		INFO(uri);
		gio_ctx *ctx = nullptr;
		REQUIRE(gio_ctx_open(uri, &ctx) == 0);
		FakeDevice d(1 << 20);
		d.dc.timeout_ns = 100000000ull; // 100 ms: the late-copy case below
		REQUIRE(gio__ctx_set_devcopy(ctx, &d.dc) == 0);
		uint64_t a_dev = 0;
		REQUIRE(gio_ctx_register_device(ctx, d.dev, d.n, &a_dev) == 0);
		gio_qp *qp;
		REQUIRE(gio_ctx_qp_create(ctx, 16, &qp) == 0);
		uint16_t st = 0;
		gio_range dr{a_dev, 8192};
		for (bool write : {false, true}) {
			INFO(write);
			d.fail_copy = true; // refused when enqueued
			CHECK(rw_sgl(qp, ctx, write, 0, 2, &dr, 1, nullptr, 0, &st) == -EIO);
			CHECK(is_xfer_error(st));
			d.fail_copy = false;
			d.fail_query = true; // failed while running
			CHECK(rw_sgl(qp, ctx, write, 0, 2, &dr, 1, nullptr, 0, &st) == -EIO);
			CHECK(is_xfer_error(st));
			d.fail_query = false;
			d.gate = false; // never lands: the executor's deadline, not the host's, ends it
			const uint64_t t0 = gio_now_ns();
			CHECK(rw_sgl(qp, ctx, write, 0, 2, &dr, 1, nullptr, 0, &st) == -EIO);
			CHECK(is_xfer_error(st));
			CHECK(gio_now_ns() - t0 < 3 * kSecond);
			d.gate = true;
			CHECK(rw_sgl(qp, ctx, write, 0, 2, &dr, 1, nullptr, 0, &st) == 0); // a new stream serves
		}
		CHECK(d.streams >= 2);

		// Metadata never goes to device memory: an SGL segment list there is refused (a load
		// from it would have crashed: the range is PROT_NONE).
		gio_sqe sqe;
		REQUIRE(gio_prep_read(&sqe, 1, 0, 2) == 0);
		gio_sgl_set(&sqe.dptr.sgl, a_dev + 4096, 32, GIO_SGL_TYPE_LAST_SEGMENT);
		gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MPTR);
		CHECK(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == -EIO);
		CHECK(is_xfer_error(st));
		CHECK(gio_ctx_close(ctx) == 0);
	}
}

TEST_CASE("device memory needs a GPU: -ENODEV with a message, bad arguments -EINVAL", "[ctx][devcopy]")
{
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("mem://host?size=1M", &ctx) == 0);
	static char fake[4096];
	uint64_t addr = 7;
	CHECK(gio_ctx_register_device(ctx, nullptr, 4096, &addr) == -EINVAL);
	CHECK(gio_ctx_register_device(ctx, fake, 0, &addr) == -EINVAL);
	CHECK(gio_ctx_register_device(nullptr, fake, 4096, &addr) == -EINVAL);
	const int rc = gio_ctx_register_device(ctx, fake, sizeof(fake), &addr);
	CHECK((rc == -ENODEV || rc == -EINVAL)); // no GPU here, or a GPU that says "host memory"
	CHECK(std::string(gio_last_error()).find("device memory") != std::string::npos);
	CHECK(addr == 7);
	CHECK(gio__ctx_set_devcopy(ctx, nullptr) == -EINVAL);
	CHECK(gio_ctx_close(ctx) == 0);
}
