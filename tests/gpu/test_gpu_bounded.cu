// No library call that may run beside a persistent kernel waits for it (docs/design.md, "Bounded
// CUDA calls").
//
// A spinner kernel runs until a flag in mapped host memory is set (60 s of %globaltimer at most),
// first on an ordinary (blocking) stream, then on a non-blocking one. Meanwhile a worker thread,
// watched by the main thread with a 20 s deadline, goes through every lifecycle the library
// has: a GPU target with HBM rings (open, register, start, a producer kernel on its own
// non-blocking stream writes and reads blocks with the device verbs, stop and read-back, a
// restart that goes on from the state read back, close), the same again reusing the pinned
// cache; a target with rings and backing store in host memory (rings=host); a host-library
// context (mem://, CPU executor) with a pinned queue pair created, used from the CPU and
// destroyed, twice (the second reusing the cache and the registered registers); and the errno
// paths that need no fault (an absurd HBM size: -ENOMEM naming cudaErrorMemoryAllocation; a
// pointer that is no kernel: -EINVAL naming cudaErrorInvalidDeviceFunction; GIO_CTX_QP_HBM on a
// software target: -EOPNOTSUPP). Then the spinner must still be running (nothing waited for it
// to end), it is released, and gio_cuda_trim() reports what the cache held.
//
// A worker that does not finish by its deadline fails the test, naming the step it was in; the
// spinner is then released so that the worker can return. Not under compute-sanitizer (it
// serializes kernels: nothing could run beside the spinner). Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "gpu_test.cuh"
#include "spinner.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/target/gpu_target.h>

namespace {

const uint32_t kBlock = 4096; // the targets' block size (lba 4096, the default)
const uint32_t kCmds = 8;     // blocks written, then read back, per producer launch
const uint64_t kWorkerDeadlineNs = 20ull * 1000000000ull;

struct ProdResult {
	int rc[kCmds];
	uint16_t st[kCmds];
	unsigned bad_words;
};

__device__ uint32_t pattern(uint32_t round, uint32_t lane, uint32_t k) { return round * 0x01000193u ^ lane << 20 ^ k; }

// Lane l writes block l from buf[l], then reads it back into buf[kCmds + l] and checks it.
__global__ void producer(gio_qp *qp, unsigned char *buf, uint64_t addr, uint32_t round, ProdResult *r)
{
	const uint32_t lane = threadIdx.x;
	const uint64_t deadline = gio_deadline_in(10ull * 1000000000ull);
	uint32_t *src = (uint32_t *)(buf + (size_t)lane * kBlock), *dst = (uint32_t *)(buf + (size_t)(kCmds + lane) * kBlock);
	for (uint32_t k = 0; k < kBlock / 4; k++) {
		src[k] = pattern(round, lane, k);
		dst[k] = 0xdeadbeefu;
	}
	gio_sqe sqe;
	uint32_t cid;
	uint16_t st = 0;
	gio_prep_write(&sqe, GIO_TGT_NSID, lane, 1);
	gio_sqe_set_sgl_data(&sqe, addr + (uint64_t)lane * kBlock, kBlock);
	int rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
	if (rc == 0)
		rc = gio_wait(qp, cid, deadline, &st);
	if (rc == 0) {
		gio_prep_read(&sqe, GIO_TGT_NSID, lane, 1);
		gio_sqe_set_sgl_data(&sqe, addr + (uint64_t)(kCmds + lane) * kBlock, kBlock);
		rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
		if (rc == 0)
			rc = gio_wait(qp, cid, deadline, &st);
	}
	r->rc[lane] = rc;
	r->st[lane] = st;
	if (rc == 0) {
		unsigned wrong = 0;
		for (uint32_t k = 0; k < kBlock / 4; k++)
			wrong += dst[k] != pattern(round, lane, k);
		if (wrong)
			atomicAdd(&r->bad_words, wrong);
	}
}

void not_a_kernel() {}

// What the worker shares with the main thread.
struct Shared {
	std::atomic<const char *> step{"starting"};
	std::atomic<int> done{0};
	unsigned char *buf = nullptr;  // HBM, 2 * kCmds blocks: the producers' data
	ProdResult *res = nullptr;     // mapped pinned host memory
	cudaStream_t prod = nullptr;   // the producers' non-blocking stream
};

void at(Shared &sh, const char *step)
{
	sh.step.store(step);
}

// Polls a stream with a deadline; false when it did not finish.
bool poll(cudaStream_t s, uint64_t timeout_ns)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	cudaError_t e;
	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(200000);
	return e == cudaSuccess;
}

// One producer launch against queue pair 0 of g: kCmds writes and reads, all verified.
void produce(Shared &sh, gio_gpu_target *g, uint64_t addr, uint32_t round)
{
	std::memset((void *)sh.res, 0, sizeof(*sh.res));
	producer<<<1, kCmds, 0, sh.prod>>>(gio_gpu_target_qp(g, 0), sh.buf, addr, round, sh.res);
	EXPECT(cudaGetLastError() == cudaSuccess, "producer launch");
	EXPECT(poll(sh.prod, 15ull * 1000000000ull), "the producer did not finish within 15 s");
	for (uint32_t i = 0; i < kCmds; i++)
		EXPECT(sh.res->rc[i] == 0, "round %u, lane %u: rc %d, %s", round, i, sh.res->rc[i], gio_status_str(sh.res->st[i]));
	EXPECT(sh.res->bad_words == 0, "round %u: %u words read back wrong", round, sh.res->bad_words);
}

// A GPU target's whole lifecycle, with a restart that must go on from the state read back.
void target_cycle(Shared &sh, const char *uri, const char *name)
{
	static char step[160];
	gio_gpu_target *g = nullptr;
	uint64_t addr = 0;
	gio_tgt_stats st{};
	std::snprintf(step, sizeof(step), "%s: open", name);
	at(sh, step);
	const int orc = gio_gpu_target_open(uri, &g);
	EXPECT(orc == 0, "%s: open: %d: %s", name, orc, gio_last_error());
	if (orc)
		return;
	std::snprintf(step, sizeof(step), "%s: register", name);
	at(sh, step);
	EXPECT(gio_gpu_target_register(g, sh.buf, 2 * kCmds * kBlock, &addr) == 0, "%s: register: %s", name, gio_last_error());
	for (uint32_t round = 1; round <= 2; round++) {
		std::snprintf(step, sizeof(step), "%s: start (round %u)", name, round);
		at(sh, step);
		const int src = gio_gpu_target_start(g);
		EXPECT(src == 0, "%s: start: %d: %s", name, src, gio_last_error());
		if (src)
			break;
		EXPECT(gio_gpu_target_register(g, sh.buf, kBlock, &addr) == -EBUSY, "%s: register while running", name);
		EXPECT(gio_gpu_target_read_back(g, 1000, nullptr) == -EBUSY, "%s: read-back while running", name);
		std::snprintf(step, sizeof(step), "%s: producer (round %u)", name, round);
		at(sh, step);
		produce(sh, g, addr, round);
		std::snprintf(step, sizeof(step), "%s: stop (round %u)", name, round);
		at(sh, step);
		EXPECT(gio_gpu_target_stop(g, 10000, &st) == 0, "%s: stop: %s", name, gio_last_error());
		// The counters survive the restart: the second start went on from what the first stop
		// read back (the open-time image would have lost round 1's queue state and counts).
		EXPECT(st.commands == 2ull * kCmds * round && st.errors == 0, "%s: round %u: %llu commands, %llu errors", name,
		       round, (unsigned long long)st.commands, (unsigned long long)st.errors);
		EXPECT(g->qps_host[0].sq_reserved == 2 * kCmds * round && g->qps_host[0].stray_cqes == 0,
		       "%s: round %u: queue pair 0 read back with %u reserved, %u stray", name, round, g->qps_host[0].sq_reserved,
		       g->qps_host[0].stray_cqes);
		std::snprintf(step, sizeof(step), "%s: read back (round %u)", name, round);
		at(sh, step);
		gio_tgt_stats again{};
		EXPECT(gio_gpu_target_read_back(g, 5000, &again) == 0 && again.commands == st.commands,
		       "%s: read-back after stop: %s", name, gio_last_error());
	}
	std::snprintf(step, sizeof(step), "%s: close", name);
	at(sh, step);
	EXPECT(gio_gpu_target_close(g) == 0, "%s: close: %s", name, gio_last_error());
}

// Open and close again: the pinned memory comes from the cache this time.
void target_reopen(Shared &sh, const char *uri, const char *name)
{
	static char step[160];
	gio_gpu_target *g = nullptr;
	std::snprintf(step, sizeof(step), "%s: open again", name);
	at(sh, step);
	const size_t before = gio_cuda_cached_bytes();
	const int rc = gio_gpu_target_open(uri, &g);
	EXPECT(rc == 0, "%s: open again: %s", name, gio_last_error());
	if (rc)
		return;
	EXPECT(gio_cuda_cached_bytes() < before, "%s: open again took nothing from the pinned cache (%zu bytes cached before, "
	       "%zu after)", name, before, gio_cuda_cached_bytes());
	std::snprintf(step, sizeof(step), "%s: close again", name);
	at(sh, step);
	EXPECT(gio_gpu_target_close(g) == 0, "%s: close again: %s", name, gio_last_error());
}

// A host-library context with a pinned queue pair, used from the CPU, destroyed; closed.
void host_ctx(Shared &sh, int pass)
{
	alignas(4096) static unsigned char data[4096];
	gio_ctx *c = nullptr;
	gio_qp *qp = nullptr, *hbm = nullptr;
	uint64_t addr = 0;
	at(sh, pass ? "host ctx (again): open" : "host ctx: open");
	const size_t before = gio_cuda_cached_bytes();
	int rc = gio_ctx_open("mem://host?size=4M&queues=4&threads=1", &c);
	EXPECT(rc == 0, "ctx open: %s", gio_last_error());
	if (rc)
		return;
	at(sh, pass ? "host ctx (again): pinned queue pair" : "host ctx: pinned queue pair");
	rc = gio_ctx_qp_create_ex(c, 64, GIO_CTX_QP_PINNED, &qp);
	EXPECT(rc == 0, "pinned queue pair: %d: %s", rc, gio_last_error());
	if (pass)
		EXPECT(gio_cuda_cached_bytes() < before, "the second context took nothing from the pinned cache (%zu bytes before, "
		       "%zu after)", before, gio_cuda_cached_bytes());
	if (rc == 0) {
		at(sh, pass ? "host ctx (again): I/O" : "host ctx: I/O");
		gio_sqe sqe;
		uint16_t st = 0;
		std::memset(data, 0x5a + pass, sizeof(data));
		EXPECT(gio_ctx_register(c, data, sizeof(data), &addr) == 0, "register: %s", gio_last_error());
		gio_prep_write(&sqe, GIO_TGT_NSID, 3, 1);
		gio_sqe_set_sgl_data(&sqe, addr, sizeof(data));
		EXPECT(gio_qp_submit_wait(qp, &sqe, 5000000000ull, &st, nullptr) == 0, "write: %s", gio_last_error());
		std::memset(data, 0, sizeof(data));
		gio_prep_read(&sqe, GIO_TGT_NSID, 3, 1);
		gio_sqe_set_sgl_data(&sqe, addr, sizeof(data));
		EXPECT(gio_qp_submit_wait(qp, &sqe, 5000000000ull, &st, nullptr) == 0 && data[0] == 0x5a + pass &&
			       data[4095] == 0x5a + pass,
		       "read back through the pinned queue pair: %s", gio_last_error());
		at(sh, pass ? "host ctx (again): destroy" : "host ctx: destroy");
		EXPECT(gio_ctx_qp_destroy(c, qp, 5000000000ull, nullptr, nullptr) >= 0, "destroy: %s", gio_last_error());
	}
	// HBM rings on a software target: refused before any CUDA call (the CPU cannot read them).
	at(sh, pass ? "host ctx (again): GIO_CTX_QP_HBM" : "host ctx: GIO_CTX_QP_HBM");
	rc = gio_ctx_qp_create_ex(c, 64, GIO_CTX_QP_HBM, &hbm);
	EXPECT(rc == -EOPNOTSUPP && std::strstr(gio_last_error(), "GIO_CTX_QP_HBM"), "GIO_CTX_QP_HBM on mem://: %d: %s", rc,
	       gio_last_error());
	at(sh, pass ? "host ctx (again): close" : "host ctx: close");
	EXPECT(gio_ctx_close(c) == 0, "ctx close: %s", gio_last_error());
}

// The errno paths that need no fault.
void errno_paths(Shared &sh)
{
	gio_gpu_target *g = nullptr;
	at(sh, "errno: absurd HBM size");
	int rc = gio_gpu_target_open("mem://hbm?size=64T&queues=1&depth=8&sms=1&warps=1", &g);
	EXPECT(rc == -ENOMEM && g == nullptr && std::strstr(gio_last_error(), "cudaErrorMemoryAllocation"),
	       "64 TiB of HBM: rc %d, '%s' (want -ENOMEM naming cudaErrorMemoryAllocation)", rc, gio_last_error());
	std::printf("   absurd size: %d: %s\n", rc, gio_last_error());
	at(sh, "errno: not a kernel");
	rc = gio_gpu_preload((const void *)not_a_kernel);
	// CUDA 13.0 on the H200 says cudaErrorInvalidResourceHandle; older runtimes said
	// cudaErrorInvalidDeviceFunction: both are -EINVAL, named in the message.
	EXPECT(rc == -EINVAL && (std::strstr(gio_last_error(), "cudaErrorInvalidResourceHandle") ||
				 std::strstr(gio_last_error(), "cudaErrorInvalidDeviceFunction")),
	       "preload of a host function: rc %d, '%s' (want -EINVAL naming the CUDA error)", rc, gio_last_error());
	std::printf("   not a kernel: %d: %s\n", rc, gio_last_error());
}

void worker(Shared *sh)
{
	// Errors first: the starts after them must not mistake a refused call for a failed launch.
	errno_paths(*sh);
	target_cycle(*sh, "mem://hbm?size=4M&queues=2&depth=64&sms=1&warps=2", "HBM target");
	target_reopen(*sh, "mem://hbm?size=4M&queues=2&depth=64&sms=1&warps=2", "HBM target");
	target_cycle(*sh, "mem://host?exec=gpu&size=4M&queues=2&depth=64&sms=1&warps=2&rings=host", "host target");
	target_reopen(*sh, "mem://host?exec=gpu&size=4M&queues=2&depth=64&sms=1&warps=2&rings=host", "host target");
	host_ctx(*sh, 0);
	host_ctx(*sh, 1);
	at(*sh, "finished");
	sh->done.store(1);
}

// The worker beside a spinner on stream `spin`; false where the process must end at once.
bool beside_spinner(Shared &sh, cudaStream_t spin, volatile unsigned *flags, const char *what)
{
	std::printf("== beside a spinner on %s\n", what);
	flags[0] = 0;
	flags[1] = 0;
	gio_test_spinner<<<1, 1, 0, spin>>>(flags, flags + 1);
	CK(cudaGetLastError());
	const uint64_t started = gio_deadline_in(10ull * 1000000000ull);
	while (!flags[1] && !gio_deadline_passed(started))
		gio_host_sleep_ns(100000);
	if (!flags[1]) {
		std::printf("FAIL: the spinner did not start within 10 s\n");
		flags[0] = 1;
		return false;
	}
	sh.done.store(0);
	sh.step.store("starting");
	std::thread t(worker, &sh);
	const uint64_t deadline = gio_deadline_in(kWorkerDeadlineNs);
	while (!sh.done.load() && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(1000000);
	if (!sh.done.load()) {
		std::printf("FAIL: the worker did not finish within %llu s beside the spinner: stuck in '%s'\n",
			    (unsigned long long)(kWorkerDeadlineNs / 1000000000ull), sh.step.load());
		failures++;
		flags[0] = 1; // let whatever waits for the spinner go on
		const uint64_t late = gio_deadline_in(30ull * 1000000000ull);
		while (!sh.done.load() && !gio_deadline_passed(late))
			gio_host_sleep_ns(1000000);
		if (!sh.done.load()) {
			std::printf("FAIL: the worker did not finish 30 s after the spinner's release either (in '%s')\n",
				    sh.step.load());
			std::fflush(stdout);
			return false; // it cannot be joined: the caller ends the process
		}
		std::printf("   the worker finished once the spinner was released: '%s' waited for it\n", sh.step.load());
		t.join();
	} else {
		t.join();
		// Nothing the worker did waited for the spinner, so it must be running still.
		EXPECT(cudaStreamQuery(spin) == cudaErrorNotReady, "the spinner ended before it was released");
		flags[0] = 1;
	}
	EXPECT(poll(spin, 10ull * 1000000000ull), "the spinner did not end within 10 s of its release");
	return true;
}

} // namespace

int main()
{
	skip_without_gpu();
	// Every kernel launched beside the spinner is loaded first (docs/design.md, "Persistent
	// kernels and lazy loading"), the library's executor too: loading a module waits for the
	// device (on the H200 the first run of this test, without gio_gpu_target_load(), waited in
	// gio_gpu_target_start() until the spinner ended).
	if (gio_gpu_preload((const void *)gio_test_spinner) || gio_gpu_preload((const void *)producer) ||
	    gio_gpu_target_load()) {
		std::printf("FAIL: preload: %s\n", gio_last_error());
		return 1;
	}
	Shared sh;
	unsigned *flags = nullptr; // [0] stop, [1] started
	CK(cudaHostAlloc((void **)&flags, 64, cudaHostAllocMapped | cudaHostAllocPortable));
	CK(cudaHostAlloc((void **)&sh.res, sizeof(*sh.res), cudaHostAllocMapped | cudaHostAllocPortable));
	CK(cudaMalloc((void **)&sh.buf, 2 * kCmds * kBlock));
	CK(cudaStreamCreateWithFlags(&sh.prod, cudaStreamNonBlocking));
	cudaStream_t blocking, nonblocking;
	CK(cudaStreamCreate(&blocking));
	CK(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
	if (!beside_spinner(sh, blocking, flags, "an ordinary (blocking) stream") ||
	    !beside_spinner(sh, nonblocking, flags, "a non-blocking stream")) {
		std::printf("FAIL: ending the process with the worker still inside the library\n");
		std::fflush(stdout);
		std::_Exit(1);
	}
	// No kernel runs now: the cache may be released.
	const size_t cached = gio_cuda_cached_bytes();
	const size_t trimmed = gio_cuda_trim();
	std::printf("   gio_cuda_trim() released %zu bytes (%zu were cached): %s\n", trimmed, cached,
		    gio_last_error()[0] ? gio_last_error() : "no error");
	EXPECT(trimmed == cached && trimmed > 0 && gio_cuda_cached_bytes() == 0, "trim released %zu of %zu cached bytes",
	       trimmed, cached);
	CK(cudaStreamDestroy(blocking));
	CK(cudaStreamDestroy(nonblocking));
	CK(cudaStreamDestroy(sh.prod));
	CK(cudaFree(sh.buf));
	CK(cudaFreeHost(sh.res));
	CK(cudaFreeHost(flags));
	std::printf("%s: library lifecycles beside a kernel that never ends by itself: none waited for it\n",
		    failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
