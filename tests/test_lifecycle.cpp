// Lifecycles of a context's queue pairs and registrations on the software target: queue pairs
// destroyed (their outstanding commands ended and reported, their qids handed out again),
// regions unregistered (commands naming them refused afterwards, nothing touched), and both
// churned without end, as a long-running engine does. Test cases with a file target need Linux's
// io_uring: tagged [io_uring], ctest runs them as test_lifecycle.io_uring.
#include <catch2/catch.hpp>

#include <giouring/host/ctx.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/proto/status.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

#include "../src/exec/devcopy.h"

namespace {

const uint64_t kSecond = 1000000000ull;

struct Ctx {
	gio_ctx *ctx = nullptr;
	explicit Ctx(const char *uri) { REQUIRE(gio_ctx_open(uri, &ctx) == 0); }
	~Ctx()
	{
		if (ctx)
			CHECK(gio_ctx_close(ctx) == 0);
	}
};

// A context with a queue pair of depth 8 and a registered 4 KiB buffer at bus address `a`.
struct OneQp : Ctx {
	gio_qp *qp = nullptr;
	void *b = aligned_alloc(4096, 4096);
	uint64_t a = 0;
	explicit OneQp(const char *uri) : Ctx(uri)
	{
		REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
		REQUIRE(gio_ctx_register(ctx, b, 4096, &a) == 0);
	}
	~OneQp()
	{
		CHECK(gio_ctx_unregister(ctx, b) == 0);
		free(b);
	}
};

// A read of one block at `slba` into `addr`, submitted and not waited for; returns its CID.
uint32_t submit_read(gio_qp *qp, uint64_t slba, uint64_t addr)
{
	uint32_t idx = 0;
	REQUIRE(gio_qp_reserve_wait(qp, 1, gio_deadline_in(kSecond), &idx) == 0);
	gio_sqe sqe;
	REQUIRE(gio_prep_read(&sqe, 1, slba, 1) == 0);
	gio_sqe_set_sgl_data(&sqe, addr, 4096);
	REQUIRE(gio_qp_put(qp, idx, &sqe, idx, 0) == 0);
	gio_qp_publish(qp);
	return idx & (qp->sq_depth - 1);
}

int read_wait(gio_qp *qp, uint64_t addr, uint16_t *st, uint64_t timeout = 5 * kSecond)
{
	gio_sqe sqe;
	REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
	gio_sqe_set_sgl_data(&sqe, addr, 4096);
	return gio_qp_submit_wait(qp, &sqe, timeout, st, nullptr);
}

bool aborted_by_deletion(uint16_t st)
{
	return gio_status_sct(st) == GIO_SCT_GENERIC && gio_status_sc(st) == GIO_SC_ABORT_SQ_DELETED;
}

// Outcomes by CID, as gio_ctx_qp_destroy() reports them.
struct Outcomes {
	std::map<uint16_t, gio_qp_outcome> by_cid;
	int duplicates = 0;
	static void fn(void *arg, const gio_qp_outcome *o)
	{
		Outcomes *self = static_cast<Outcomes *>(arg);
		self->duplicates += self->by_cid.count(o->cid) != 0;
		self->by_cid[o->cid] = *o;
	}
};

uint64_t env_count(const char *name, uint64_t dflt)
{
	const char *v = std::getenv(name);
	return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

} // namespace

TEST_CASE("qp destroy: the qid is handed out again; without destroy -EBUSY", "[lifecycle][qp]")
{
	Ctx c("mem://host?size=1M&queues=4");
	gio_qp *qp[4];
	for (int i = 0; i < 4; i++) {
		REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp[i]) == 0);
		CHECK(qp[i]->qid == i + 1);
	}
	gio_qp *more = nullptr;
	CHECK(gio_ctx_qp_create(c.ctx, 8, &more) == -EBUSY);
	CHECK(std::string(gio_last_error()).find("gio_ctx_qp_destroy") != std::string::npos);
	CHECK(gio_ctx_qp_destroy(c.ctx, qp[1], kSecond, nullptr, nullptr) == 0);
	CHECK(std::string(gio_last_error()).empty());
	REQUIRE(gio_ctx_qp_create(c.ctx, 16, &more) == 0);
	CHECK(more->qid == 2);
	gio_qp *none = nullptr;
	CHECK(gio_ctx_qp_create(c.ctx, 8, &none) == -EBUSY);
	// The lowest free one comes first.
	CHECK(gio_ctx_qp_destroy(c.ctx, qp[3], kSecond, nullptr, nullptr) == 0);
	CHECK(gio_ctx_qp_destroy(c.ctx, qp[0], kSecond, nullptr, nullptr) == 0);
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp[0]) == 0);
	CHECK(qp[0]->qid == 1);
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp[3]) == 0);
	CHECK(qp[3]->qid == 4);
	// The new queue pairs carry I/O.
	void *b = aligned_alloc(4096, 4096);
	uint64_t a = 0;
	REQUIRE(gio_ctx_register(c.ctx, b, 4096, &a) == 0);
	uint16_t st = 0xffff;
	for (gio_qp *q : {qp[0], more, qp[2], qp[3]})
		CHECK(read_wait(q, a, &st) == 0);
	CHECK(gio_ctx_unregister(c.ctx, b) == 0);
	free(b);
}

TEST_CASE("qp destroy: bad arguments are -EINVAL with a message", "[lifecycle][qp]")
{
	Ctx c("mem://host?size=1M"), other("mem://host?size=1M");
	gio_qp *qp = nullptr, *theirs = nullptr;
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp) == 0);
	REQUIRE(gio_ctx_qp_create(other.ctx, 8, &theirs) == 0);
	CHECK(gio_ctx_qp_destroy(nullptr, qp, kSecond, nullptr, nullptr) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("NULL context") != std::string::npos);
	CHECK(gio_ctx_qp_destroy(c.ctx, nullptr, kSecond, nullptr, nullptr) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("NULL queue pair") != std::string::npos);
	CHECK(gio_ctx_qp_destroy(c.ctx, theirs, kSecond, nullptr, nullptr) == -EINVAL);
	CHECK(std::string(gio_last_error()).find("not a queue pair of this context") != std::string::npos);
	gio_qp fake{};
	CHECK(gio_ctx_qp_destroy(c.ctx, &fake, kSecond, nullptr, nullptr) == -EINVAL);
	CHECK(gio_ctx_qp_destroy(c.ctx, qp, kSecond, nullptr, nullptr) == 0);
	CHECK(gio_ctx_qp_destroy(c.ctx, qp, kSecond, nullptr, nullptr) == -EINVAL); // twice
	CHECK(std::string(gio_last_error()).find("destroyed already") != std::string::npos);
	// The library's queue memory is not the caller's to unregister.
	CHECK(gio_ctx_unregister(other.ctx, theirs->sq) == -EBUSY);
	CHECK(std::string(gio_last_error()).find("gio_ctx_qp_destroy") != std::string::npos);
}

// The destroyed queue pair's commands, each in another state: completed and not collected,
// fetched and withheld (the drop fault), abandoned by its submitter, and never fetched (the
// stall fault). Each ends, once: the first with its own status, the withheld and unfetched with
// Command Aborted due to SQ Deletion posted by the target; the abandoned one is not reported again.
TEST_CASE("qp destroy: every outstanding command ends, once, aborted by the deletion", "[lifecycle][qp]")
{
	OneQp c("mem://host?size=1M&threads=1");
	gio_qp *qp = c.qp;
	const uint64_t a = c.a;
	uint16_t st = 0;

	const uint32_t done = submit_read(qp, 0, a); // completes; nobody collects it
	while (gio_cmd_state(gio_load_acquire(&qp->slots[done].state)) != GIO_CMD_DONE)
		gio_qp_reap(qp);
	gio_fault f{};
	f.drop_nth = 1;
	REQUIRE(gio_ctx_inject(c.ctx, &f) == 0);
	const uint32_t withheld = submit_read(qp, 1, a);
	CHECK(read_wait(qp, a, &st) == 0); // fetched after the withheld one: that one was fetched
	REQUIRE(gio_ctx_inject(c.ctx, &f) == 0);
	CHECK(read_wait(qp, a, &st, 50000000ull) == -ETIME); // abandoned at its deadline
	const uint32_t abandoned = qp->last_timeout.cid;
	CHECK(gio_cmd_state(gio_load_acquire(&qp->slots[abandoned].state)) == GIO_CMD_ABANDONED);
	f = gio_fault{};
	f.stall_ms = 60000; // doorbells ignored: what follows is never fetched
	REQUIRE(gio_ctx_inject(c.ctx, &f) == 0);
	const uint32_t unfetched[2] = {submit_read(qp, 2, a), submit_read(qp, 3, a)};

	Outcomes out;
	const uint64_t t0 = gio_now_ns();
	CHECK(gio_ctx_qp_destroy(c.ctx, qp, 5 * kSecond, Outcomes::fn, &out) == 4);
	CHECK(gio_now_ns() - t0 < kSecond); // the stall holds I/O, not the admin queue
	CHECK(out.duplicates == 0);
	REQUIRE(out.by_cid.size() == 4);
	REQUIRE(out.by_cid.count(done) == 1);
	CHECK(out.by_cid[done].status == 0);
	CHECK(out.by_cid[done].posted == 1);
	for (uint32_t cid : {withheld, unfetched[0], unfetched[1]}) {
		INFO("cid " << cid);
		REQUIRE(out.by_cid.count(cid) == 1);
		CHECK(aborted_by_deletion(out.by_cid[cid].status));
		CHECK(gio_status_dnr(out.by_cid[cid].status) == 0); // another queue may take it
		CHECK(out.by_cid[cid].posted == 1);                 // the target posted each abort
	}
	CHECK(out.by_cid.count(abandoned) == 0);

	// The qid serves a new queue pair once the stall is lifted.
	REQUIRE(gio_ctx_inject(c.ctx, nullptr) == 0);
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp) == 0);
	CHECK(qp->qid == 1);
	CHECK(read_wait(qp, a, &st) == 0);
}

// A controller that does not answer the Delete in time: -ETIME naming the queue and the command,
// within the deadline; the queue pair stays the caller's, and a second call finishes the job and
// reports the command that was in the way.
TEST_CASE("qp destroy: bounded by its deadline, then resumed", "[lifecycle][qp]")
{
	// One executor thread serves both the admin queue and the I/O queue, so a completion the
	// delay fault holds back holds the admin queue too.
	OneQp c("mem://host?size=1M&threads=1");
	gio_qp *qp = c.qp;
	const uint64_t a = c.a;
	gio_fault f{};
	f.delay_us = 1500000;
	REQUIRE(gio_ctx_inject(c.ctx, &f) == 0);
	const uint32_t slow = submit_read(qp, 0, a);
	std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the executor is in the delay
	REQUIRE(gio_ctx_inject(c.ctx, nullptr) == 0);
	const uint64_t t0 = gio_now_ns();
	CHECK(gio_ctx_qp_destroy(c.ctx, qp, 200000000ull, nullptr, nullptr) == -ETIME);
	const uint64_t waited = gio_now_ns() - t0;
	CHECK(waited >= 200000000ull);
	CHECK(waited < 800000000ull);
	const std::string msg = gio_last_error();
	INFO(msg);
	CHECK(msg.find("queue 1") != std::string::npos);
	CHECK(msg.find("Delete I/O Submission Queue did not complete within 200 ms") != std::string::npos);
	// Still the context's: the qid is not handed out meanwhile.
	gio_qp *other = nullptr;
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &other) == 0);
	CHECK(other->qid == 2);
	Outcomes out;
	CHECK(gio_ctx_qp_destroy(c.ctx, qp, 5 * kSecond, Outcomes::fn, &out) == 1);
	REQUIRE(out.by_cid.count(slow) == 1);
	CHECK(out.by_cid[slow].status == 0); // it completed before the deletion took effect
	CHECK(out.by_cid[slow].posted == 1);
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp) == 0);
	CHECK(qp->qid == 1);
}

// ---- registrations -------------------------------------------------------------------------------

TEST_CASE("unregister: by the registered pointer; unknown ones -ENOENT with a message", "[lifecycle][mem]")
{
	Ctx c("mem://host?size=1M");
	char *b = static_cast<char *>(aligned_alloc(4096, 8192));
	uint64_t a = 0;
	CHECK(gio_ctx_unregister(nullptr, b) == -EINVAL);
	CHECK(gio_ctx_unregister(c.ctx, b) == -ENOENT);
	CHECK(std::string(gio_last_error()).find("no region registered at") != std::string::npos);
	CHECK(gio_ctx_unregister(c.ctx, nullptr) == -ENOENT);
	REQUIRE(gio_ctx_register(c.ctx, b, 8192, &a) == 0);
	CHECK(gio_ctx_unregister(c.ctx, b + 4096) == -ENOENT);
	CHECK(std::string(gio_last_error()).find("lies inside the region registered") != std::string::npos);
	// Overlap is refused while it is registered, allowed once it is not.
	CHECK(gio_ctx_register(c.ctx, b + 4096, 4096, nullptr) == -EINVAL);
	CHECK(gio_ctx_unregister(c.ctx, b) == 0);
	CHECK(std::string(gio_last_error()).empty());
	CHECK(gio_ctx_unregister(c.ctx, b) == -ENOENT); // twice
	CHECK(gio_ctx_register(c.ctx, b + 4096, 4096, &a) == 0);
	CHECK(a == reinterpret_cast<uint64_t>(b + 4096));
	CHECK(gio_ctx_unregister(c.ctx, b + 4096) == 0);
	free(b);
}

// After unregistration the memory may be gone: unmapped here, so that a load or store by the
// executor would crash the test. Commands naming it get Data Transfer Error instead.
TEST_CASE("unregister: a command naming the region afterwards fails with Data Transfer Error", "[lifecycle][mem][io_uring]")
{
	for (const char *uri : {"mem://host?size=1M", "?size=1M"}) {
		INFO(uri);
		Ctx c(uri);
		gio_qp *qp = nullptr;
		REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp) == 0);
		void *p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		REQUIRE(p != MAP_FAILED);
		uint64_t a = 0;
		REQUIRE(gio_ctx_register(c.ctx, p, 8192, &a) == 0);
		uint16_t st = 0xffff;
		REQUIRE(read_wait(qp, a, &st) == 0); // registered: served
		// An SGL segment list in the region too: the walker must not read it either.
		gio_sqe seg_cmd;
		REQUIRE(gio_prep_read(&seg_cmd, 1, 0, 1) == 0);
		gio_sgl_set(&seg_cmd.dptr.sgl, a + 4096, 16, GIO_SGL_TYPE_LAST_SEGMENT);
		gio_sqe_set_psdt(&seg_cmd, GIO_PSDT_SGL_MPTR);
		REQUIRE(gio_ctx_unregister(c.ctx, p) == 0);
		REQUIRE(munmap(p, 8192) == 0);
		for (bool write : {false, true}) {
			gio_sqe sqe;
			REQUIRE((write ? gio_prep_write(&sqe, 1, 0, 1) : gio_prep_read(&sqe, 1, 0, 1)) == 0);
			gio_sqe_set_sgl_data(&sqe, a, 4096);
			CHECK(gio_qp_submit_wait(qp, &sqe, 5 * kSecond, &st, nullptr) == -EIO);
			CHECK(gio_status_sc(st) == GIO_SC_DATA_XFER_ERROR);
		}
		CHECK(gio_qp_submit_wait(qp, &seg_cmd, 5 * kSecond, &st, nullptr) == -EIO);
		CHECK(gio_status_sc(st) == GIO_SC_DATA_XFER_ERROR);
	}
}

TEST_CASE("unregister: device regions too; the copy engine is never asked again", "[lifecycle][mem]")
{
	Ctx c("mem://host?size=1M");
	// A copy engine that counts; the "device memory" is PROT_NONE: nothing may touch it.
	static int copies;
	copies = 0;
	gio__devcopy dc{};
	dc.timeout_ns = kSecond;
	dc.name = "counting";
	dc.abandoned_freeable = 1;
	dc.stream_create = [](void *, void **s) {
		*s = new int(0);
		return 0;
	};
	dc.stream_destroy = [](void *, void *s) { delete static_cast<int *>(s); };
	dc.copy = [](void *, void *, void *, const void *, size_t, int) {
		copies++;
		return 0;
	};
	dc.query = [](void *, void *) { return 0; };
	dc.host_alloc = [](void *, size_t len) { return aligned_alloc(4096, len); };
	dc.host_free = [](void *, void *p) { free(p); };
	REQUIRE(gio__ctx_set_devcopy(c.ctx, &dc) == 0);
	void *dev = mmap(nullptr, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(dev != MAP_FAILED);
	uint64_t a = 0;
	REQUIRE(gio_ctx_register_device(c.ctx, dev, 65536, &a) == 0);
	gio_qp *qp = nullptr;
	REQUIRE(gio_ctx_qp_create(c.ctx, 8, &qp) == 0);
	uint16_t st = 0xffff;
	REQUIRE(read_wait(qp, a, &st) == 0);
	CHECK(copies == 1);
	REQUIRE(gio_ctx_unregister(c.ctx, dev) == 0);
	CHECK(read_wait(qp, a, &st) == -EIO);
	CHECK(gio_status_sc(st) == GIO_SC_DATA_XFER_ERROR);
	CHECK(copies == 1);
	// The same range registers again.
	REQUIRE(gio_ctx_register_device(c.ctx, dev, 65536, &a) == 0);
	CHECK(read_wait(qp, a, &st) == 0);
	CHECK(copies == 2);
	CHECK(gio_ctx_qp_destroy(c.ctx, qp, kSecond, nullptr, nullptr) == 0);
	CHECK(gio_ctx_close(c.ctx) == 0);
	c.ctx = nullptr;
	munmap(dev, 65536);
}

TEST_CASE("unregister: a full region table takes new regions again", "[lifecycle][mem]")
{
	Ctx c("mem://host?size=1M");
	std::vector<char> big(1100 * 64);
	int n = 0, rc = 0;
	while ((rc = gio_ctx_register(c.ctx, big.data() + n * 64, 64, nullptr)) == 0)
		n++;
	CHECK(rc == -ENOSPC);
	CHECK(n > 1000); // the table (less the library's own entries)
	CHECK(gio_ctx_unregister(c.ctx, big.data() + 7 * 64) == 0);
	CHECK(gio_ctx_register(c.ctx, big.data() + 7 * 64, 64, nullptr) == 0);
	CHECK(gio_ctx_register(c.ctx, big.data() + n * 64, 64, nullptr) == -ENOSPC);
	for (int i = 0; i < n; i++)
		REQUIRE(gio_ctx_unregister(c.ctx, big.data() + i * 64) == 0);
}

// ---- churn ----------------------------------------------------------------------------------------

// What a long-running engine does for months: queue pairs and registrations made and unmade,
// GIO_CHURN_CYCLES times each (default 100000). Nothing may run out (qids, region table) and
// nothing may leak (the AddressSanitizer stage runs this test with LeakSanitizer).
TEST_CASE("churn: queue pairs and registrations, made and unmade without end", "[lifecycle][churn]")
{
	const uint64_t cycles = env_count("GIO_CHURN_CYCLES", 100000);
	Ctx c("mem://host?size=1M&queues=2&threads=1&idle_us=20");
	void *b = aligned_alloc(4096, 4096);
	uint64_t a = 0;
	uint16_t st = 0;
	auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < cycles; i++) {
		gio_qp *qp = nullptr;
		const int rc = gio_ctx_qp_create(c.ctx, 2, &qp);
		if (rc) {
			INFO("cycle " << i << ": " << gio_last_error());
			REQUIRE(rc == 0);
		}
		REQUIRE(qp->qid == 1);
		if (i % 1000 == 0) { // now and then the new queue pair carries a command
			REQUIRE(gio_ctx_register(c.ctx, b, 4096, &a) == 0);
			REQUIRE(read_wait(qp, a, &st) == 0);
			REQUIRE(gio_ctx_unregister(c.ctx, b) == 0);
		}
		REQUIRE(gio_ctx_qp_destroy(c.ctx, qp, 5 * kSecond, nullptr, nullptr) == 0);
	}
	auto t1 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < cycles; i++) {
		uint64_t got = 0;
		REQUIRE(gio_ctx_register(c.ctx, b, 4096, &got) == 0);
		REQUIRE(got == reinterpret_cast<uint64_t>(b));
		REQUIRE(gio_ctx_unregister(c.ctx, b) == 0);
	}
	auto t2 = std::chrono::steady_clock::now();
	std::printf("churn: %llu queue pair create/destroy cycles in %.2f s, %llu register/unregister cycles in %.2f s\n",
		    (unsigned long long)cycles, std::chrono::duration<double>(t1 - t0).count(), (unsigned long long)cycles,
		    std::chrono::duration<double>(t2 - t1).count());
	free(b);
}

// ---- close against a backing store that stopped answering ------------------------------------------

namespace {

// Opens a file target with one executor thread, arms the hang fault for the next command and
// submits a read of one block (or a Write Zeroes) without waiting; returns close's result and
// how long it took.
int close_after_hang(bool write_zeroes, double *seconds, std::string *msg)
{
	static char sink[4096]; // named by a command close abandons: kept, as close asks
	gio_ctx *ctx = nullptr;
	REQUIRE(gio_ctx_open("?size=1M&threads=1", &ctx) == 0);
	gio_qp *qp = nullptr;
	REQUIRE(gio_ctx_qp_create(ctx, 8, &qp) == 0);
	uint64_t a = 0;
	REQUIRE(gio_ctx_register(ctx, sink, sizeof(sink), &a) == 0);
	gio_sqe sqe;
	if (write_zeroes) {
		REQUIRE(gio_prep_write_zeroes(&sqe, 1, 0, 1, 0) == 0);
	} else {
		REQUIRE(gio_prep_read(&sqe, 1, 0, 1) == 0);
		gio_sqe_set_sgl_data(&sqe, a, sizeof(sink));
	}
	gio_fault f{};
	f.hang_nth = 1;
	REQUIRE(gio_ctx_inject(ctx, &f) == 0);
	uint32_t idx = 0;
	REQUIRE(gio_qp_reserve_wait(qp, 1, gio_deadline_in(kSecond), &idx) == 0);
	REQUIRE(gio_qp_put(qp, idx, &sqe, 0, 0) == 0);
	gio_qp_publish(qp);
	std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the executor has it
	const auto t0 = std::chrono::steady_clock::now();
	const int rc = gio_ctx_close(ctx);
	*seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	*msg = gio_last_error();
	return rc;
}

} // namespace

TEST_CASE("hang fault: memory targets refuse it", "[lifecycle][close]")
{
	Ctx c("mem://host?size=1M");
	gio_fault f{};
	f.hang_nth = 1;
	CHECK(gio_ctx_inject(c.ctx, &f) == -EOPNOTSUPP);
	CHECK(std::string(gio_last_error()).find("file target") != std::string::npos);
}

// The request is an io_uring read the store never completes: the thread waits in slices, gives
// it up at close's deadline (2 s), and ends; close says what was abandoned.
TEST_CASE("close is bounded: a request the backing store never completes is abandoned", "[lifecycle][close][io_uring]")
{
	double s = 0;
	std::string msg;
	CHECK(close_after_hang(false, &s, &msg) == -ETIME);
	INFO(msg);
	CHECK(msg.find("1 request(s) were still in the backing store") != std::string::npos);
	CHECK(msg.find("abandoned") != std::string::npos);
	CHECK(s >= 2.0);
	CHECK(s < 6.0);
	std::printf("close with a hung request: %.2f s: %s\n", s, msg.c_str());
}

// A Write Zeroes is a synchronous write: the thread blocks in the store and never comes back.
// Close gives up on it a second after the store's deadline and frees nothing it may touch.
TEST_CASE("close is bounded: a thread stuck in the store leaves the context allocated", "[lifecycle][close][io_uring]")
{
	double s = 0;
	std::string msg;
	CHECK(close_after_hang(true, &s, &msg) == -ETIME);
	INFO(msg);
	CHECK(msg.find("executor thread(s) did not stop within") != std::string::npos);
	CHECK(msg.find("left allocated") != std::string::npos);
	CHECK(s >= 3.0);
	CHECK(s < 7.0);
	std::printf("close with a stuck executor thread: %.2f s: %s\n", s, msg.c_str());
}
