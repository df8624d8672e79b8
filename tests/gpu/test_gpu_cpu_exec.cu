// The CPU executor serving rings that GPU warps fill, data in HBM moved by the copy engine.
//
// For a file target in /dev/shm and the default temporary file: queue pairs in pinned,
// GPU-mapped host memory (GIO_CTX_QP_PINNED), data buffers in HBM registered with
// gio_ctx_register_device(). Warps write objects from a per-object pattern with gio_submit_warp,
// a separate kernel poisons the buffer, warps read the objects back (gio_wait_warp), and a
// separate kernel checks every byte (a kernel boundary, so no stale L1 line can hide a late
// copy). Each command completes exactly once. An LBA past the namespace surfaces as LBA Out of
// Range; with the doorbells stalled (gio_ctx_inject) a wait ends at its deadline with -ETIME.
// The queue pairs are used by the GPU alone: each struct gio_qp is copied to device memory
// before any use. System scope throughout (the CPU executor is the other side). Exits 77
// without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "gpu_test.cuh"
#include <giouring/host/ctx.h>
#include <giouring/device/verbs.cuh>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>

namespace {

const uint32_t kObj = 32768, kLbaShift = 12, kQueues = 8, kDepth = 256, kThreads = 4;

struct Result {
	unsigned long long submitted, completed, errors, bad_words;
	uint16_t first_status, oob_status;
	int first_rc, oob_rc;
};

__device__ __host__ inline uint4 word(uint32_t obj, uint32_t k)
{
	return make_uint4(obj, k, 0xc0dec0deu, obj * 2654435761u ^ k);
}

// Warp w uses queue w % nqps; objects land at slot (obj * 7) % nobj of the namespace.
__global__ void producers(gio_qp *qps, uint32_t nqps, uint64_t addr, uint32_t nobj, int write, Result *r)
{
	const uint32_t lane = threadIdx.x & 31u;
	const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32u, nwarps = gridDim.x * blockDim.x / 32u;
	gio_qp *qp = &qps[warp % nqps];
	const uint64_t deadline = gio_deadline_in(60ull * 1000000000ull);
	for (uint32_t base = warp * 32; base < nobj; base += nwarps * 32) {
		const uint32_t obj = base + lane;
		const int active = obj < nobj;
		gio_sqe sqe;
		uint32_t cid = 0;
		uint16_t st = 0;
		if (active) {
			const uint64_t slba = (uint64_t)((obj * 7u) % nobj) * (kObj >> kLbaShift);
			if (write)
				gio_prep_write(&sqe, 1, slba, kObj >> kLbaShift);
			else
				gio_prep_read(&sqe, 1, slba, kObj >> kLbaShift);
			gio_sqe_set_sgl_data(&sqe, addr + (uint64_t)obj * kObj, kObj);
		}
		int rc = gio_submit_warp(qp, &sqe, 0, 0, active, deadline, &cid);
		if (rc == 0)
			rc = gio_wait_warp(qp, cid, active, deadline, &st);
		if (!active)
			continue;
		atomicAdd(&r->submitted, 1ull);
		if (rc) {
			if (atomicAdd(&r->errors, 1ull) == 0) {
				r->first_rc = rc;
				r->first_status = st;
			}
		} else {
			atomicAdd(&r->completed, 1ull);
		}
	}
}

__global__ void fill(uint4 *buf, uint32_t nobj, int poison)
{
	const uint64_t words = (uint64_t)nobj * (kObj / 16);
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint32_t obj = (uint32_t)(i / (kObj / 16)), k = (uint32_t)(i % (kObj / 16));
		buf[i] = poison ? make_uint4(0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u) : word(obj, k);
	}
}

__global__ void verify(const uint4 *buf, uint32_t nobj, Result *r)
{
	const uint64_t words = (uint64_t)nobj * (kObj / 16);
	unsigned long long bad = 0;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < words; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint4 v = buf[i], w = word((uint32_t)(i / (kObj / 16)), (uint32_t)(i % (kObj / 16)));
		bad += v.x != w.x || v.y != w.y || v.z != w.z || v.w != w.w;
	}
	if (bad)
		atomicAdd(&r->bad_words, bad);
}

// One command from lane 0 of one warp: its result and status.
__global__ void one(gio_qp *qp, uint64_t slba, uint64_t addr, uint64_t timeout_ns, int *rc, uint16_t *st,
		    unsigned long long *waited_ns)
{
	gio_sqe sqe;
	uint32_t cid = 0;
	gio_prep_read(&sqe, 1, slba, 1);
	gio_sqe_set_sgl_data(&sqe, addr, 1u << kLbaShift);
	const uint64_t t0 = gio_now_ns(), deadline = gio_deadline_in(timeout_ns);
	*st = 0;
	*rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
	if (*rc == 0)
		*rc = gio_wait(qp, cid, deadline, st);
	*waited_ns = gio_now_ns() - t0;
}

// Bounded wait for a kernel: a hang becomes a failure, not a test that never ends.
void run(const char *uri, const char *label)
{
	std::printf("== %s\n", label);
	gio_ctx *ctx = nullptr;
	int rc = gio_ctx_open(uri, &ctx);
	EXPECT(rc == 0, "open %s: %s", uri, gio_last_error());
	if (rc)
		return;
	gio_ns_info info;
	gio_ctx_info(ctx, &info);
	const uint32_t nobj = (uint32_t)(info.nblocks * info.lba_bytes / kObj);
	unsigned char *buf;
	CK(cudaMalloc(&buf, (size_t)nobj * kObj));
	uint64_t addr = 0;
	rc = gio_ctx_register_device(ctx, buf, (size_t)nobj * kObj, &addr);
	EXPECT(rc == 0 && addr == (uint64_t)(uintptr_t)buf, "register_device: %d %s", rc, gio_last_error());
	// Each executor thread moves one object from the host first (its copy stream and the
	// runtime it loaded warm up before any persistent kernel runs; see docs/design.md, "Persistent kernels and lazy loading").
	std::vector<gio_qp *> host_qps(kThreads);
	for (uint32_t t = 0; t < kThreads; t++) {
		EXPECT(gio_ctx_qp_create(ctx, 8, &host_qps[t]) == 0, "host qp: %s", gio_last_error());
		gio_sqe sqe;
		uint16_t st = 0;
		gio_prep_read(&sqe, 1, t, 1);
		gio_sqe_set_sgl_data(&sqe, addr, 1u << kLbaShift);
		rc = gio_qp_submit_wait(host_qps[t], &sqe, 10ull * 1000000000ull, &st, nullptr);
		EXPECT(rc == 0 && st == 0, "host read into HBM: %d status 0x%x %s", rc, st, gio_last_error());
	}
	std::vector<gio_qp> qps(kQueues);
	for (uint32_t q = 0; q < kQueues; q++) {
		gio_qp *qp = nullptr;
		rc = gio_ctx_qp_create_ex(ctx, kDepth, GIO_CTX_QP_PINNED, &qp);
		EXPECT(rc == 0, "pinned qp %u: %s", q, gio_last_error());
		if (rc) {
			gio_ctx_close(ctx);
			CK(cudaFree(buf));
			return;
		}
		EXPECT(!(qp->flags & GIO_QP_GPU_SCOPE), "a queue pair shared with the CPU executor must use system scope");
		qps[q] = *qp; // the GPU alone uses it from now on
	}
	gio_qp *d_qps;
	Result *r;
	int *d_rc;
	uint16_t *d_st;
	unsigned long long *d_waited;
	CK(cudaMalloc(&d_qps, kQueues * sizeof(gio_qp)));
	CK(cudaMemcpy(d_qps, qps.data(), kQueues * sizeof(gio_qp), cudaMemcpyHostToDevice));
	CK(cudaMallocManaged(&r, sizeof(*r)));
	CK(cudaMallocManaged(&d_rc, sizeof(int)));
	CK(cudaMallocManaged(&d_st, sizeof(uint16_t)));
	CK(cudaMallocManaged(&d_waited, sizeof(unsigned long long)));
	std::memset(r, 0, sizeof(*r));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	fill<<<132, 256, 0, s>>>((uint4 *)buf, nobj, 0);
	producers<<<kQueues, 32, 0, s>>>(d_qps, kQueues, addr, nobj, 1, r);
	fill<<<132, 256, 0, s>>>((uint4 *)buf, nobj, 1);
	producers<<<kQueues * 2, 64, 0, s>>>(d_qps, kQueues, addr, nobj, 0, r);
	verify<<<132, 256, 0, s>>>((const uint4 *)buf, nobj, r);
	CK(cudaGetLastError());
	EXPECT(sync_within(s, 120), "the write/read/verify kernels did not finish within 120 s");
	EXPECT(r->submitted == 2ull * nobj && r->completed == 2ull * nobj && r->errors == 0,
	       "submitted %llu completed %llu errors %llu (first rc %d status 0x%x), want %u each", r->submitted,
	       r->completed, r->errors, r->first_rc, r->first_status, 2 * nobj);
	EXPECT(r->bad_words == 0, "%llu wrong 16-byte words after the read-back", r->bad_words);
	std::printf("   %u objects of %u KiB written and read back through %u pinned queue pairs: %s\n", nobj, kObj / 1024,
		    kQueues, r->bad_words == 0 && r->errors == 0 ? "every byte matches" : "MISMATCH");

	// LBA out of range: the NVMe status reaches the GPU thread intact.
	one<<<1, 1, 0, s>>>(&d_qps[0], info.nblocks, addr, 5ull * 1000000000ull, d_rc, d_st, d_waited);
	EXPECT(sync_within(s, 30), "the out-of-range probe hung");
	EXPECT(*d_rc == -EIO && gio_status_sc(*d_st) == GIO_SC_LBA_RANGE && gio_status_sct(*d_st) == GIO_SCT_GENERIC,
	       "LBA past the end: rc %d status 0x%x (%s)", *d_rc, *d_st, gio_status_str(*d_st));
	const uint16_t oob_status = *d_st; // the deadline probe below reuses d_st

	// Deadline: the target ignores doorbells for 3 s; a 200 ms wait must end by itself.
	gio_fault f{};
	f.stall_ms = 3000;
	EXPECT(gio_ctx_inject(ctx, &f) == 0, "inject: %s", gio_last_error());
	one<<<1, 1, 0, s>>>(&d_qps[1], 0, addr, 200ull * 1000000ull, d_rc, d_st, d_waited);
	EXPECT(sync_within(s, 30), "the deadline probe hung");
	EXPECT(*d_rc == -ETIME, "stalled target: rc %d, want -ETIME", *d_rc);
	EXPECT(*d_waited >= 200ull * 1000000ull && *d_waited < 2000ull * 1000000ull, "the wait took %llu ns", *d_waited);
	std::printf("   LBA out of range -> %s; stalled doorbells -> rc %d after %.0f ms\n", gio_status_str(oob_status), *d_rc,
		    *d_waited / 1e6);
	gio_ctx_inject(ctx, nullptr);

	CK(cudaStreamDestroy(s));
	EXPECT(gio_ctx_close(ctx) == 0, "close: %s", gio_last_error());
	CK(cudaFree(d_qps));
	CK(cudaFree(r));
	CK(cudaFree(d_rc));
	CK(cudaFree(d_st));
	CK(cudaFree(d_waited));
	CK(cudaFree(buf));
}

} // namespace

int main()
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0); // a hang killed by a timeout still leaves its output
	// GPU warps wait for data the CPU executor copies in with CUDA streams: enough hardware queues
	// that no copy sits behind a waiting kernel (gio_ctx_register_device()). Before any CUDA call.
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	skip_without_gpu();
	CK(cudaSetDevice(0));
	// Every kernel loaded before the first one that spins (docs/design.md, "Persistent kernels and lazy loading").
	{
		cudaFuncAttributes a;
		CK(cudaFuncGetAttributes(&a, producers));
		CK(cudaFuncGetAttributes(&a, fill));
		CK(cudaFuncGetAttributes(&a, verify));
		CK(cudaFuncGetAttributes(&a, one));
	}
	char path[96], shm[160];
	std::snprintf(path, sizeof(path), "/dev/shm/giouring_test_gpu_cpu_exec.%d.img", (int)getpid());
	std::snprintf(shm, sizeof(shm), "file://%s?size=64M&threads=%u", path, kThreads);
	run(shm, "file target in /dev/shm (tmpfs, page cache)");
	unlink(path);
	char tmp[64];
	std::snprintf(tmp, sizeof(tmp), "?size=64M&threads=%u", kThreads);
	run(tmp, "default temporary file (O_DIRECT where the file system allows it)");
	std::printf(failures ? "FAILED: %d\n" : "PASSED\n", failures);
	return failures ? 1 : 0;
}
