// Checked submission from GPU threads (URI check=1 on the GPU-executed target;
// giouring/ring/check.h): a thread whose command's data pointer or SGL segment lies outside the
// registered regions gets -EFAULT from gio_submit, gio_submit_warp and gio_submit_block, that
// command only; the rest of the warp's and block's commands complete; the target's check counters
// name the refusals and the last address. Without check=1 the same command reaches the executor,
// which fails it with Data Transfer Error. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "gpu_test.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/target/gpu_target.h>

namespace {

constexpr int kThreads = 64;
constexpr uint64_t kBuf = 1 << 20;

struct Result {
	int warp_rc[32];
	uint16_t warp_st[32];
	int one_rc;
	int block_rc[kThreads];
	uint16_t block_st[kThreads];
};

// A read of block i into 4 KiB at byte (i % 256) * 4096 of the registered buffer, or to `bad`
// (outside it).
__device__ void prep(gio_sqe *s, uint32_t i, uint64_t addr, uint64_t bad, bool outside, bool segment)
{
	gio_prep_read(s, GIO_TGT_NSID, i, 1);
	if (segment) // a Last Segment descriptor whose segment lies outside
		gio_sqe_set_psdt(s, GIO_PSDT_SGL_MPTR), gio_sgl_set(&s->dptr.sgl, bad, 16, GIO_SGL_TYPE_LAST_SEGMENT);
	else
		gio_sqe_set_sgl_data(s, outside ? bad : addr + (uint64_t)(i % (kBuf / 4096)) * 4096, 4096);
}

__global__ void producers(gio_qp *qps, uint64_t addr, uint64_t bad, Result *r)
{
	__shared__ typename gio_block_submit<kThreads>::TempStorage tmp;
	const uint32_t t = threadIdx.x, lane = t & 31u;
	const uint64_t deadline = gio_deadline_in(10ull * 1000000000ull);
	gio_sqe s;
	uint32_t ticket = 0;
	uint16_t st = 0xffff;
	// Warp 0: lane 7's data outside, lane 9's segment outside; the others inside.
	if (t < 32) {
		prep(&s, lane, addr, bad, lane == 7, lane == 9);
		int rc = gio_submit_warp(&qps[0], &s, lane, 0, 1, deadline, &ticket);
		r->warp_rc[lane] = rc;
		const int w = gio_wait_warp(&qps[0], ticket, rc == 0, deadline, &st);
		if (rc == 0)
			r->warp_rc[lane] = w;
		r->warp_st[lane] = st;
		// One thread alone.
		if (lane == 0) {
			prep(&s, 100, addr, bad + 4096, true, false);
			r->one_rc = gio_submit(&qps[0], &s, 0, 0, deadline, &ticket);
		}
	}
	__syncthreads();
	// The block: thread 40's data outside.
	prep(&s, 200 + t, addr, bad + 8192, t == 40, false);
	st = 0xffff;
	int rc = gio_submit_block<kThreads>(tmp, &qps[1], &s, t, 0, 1, deadline, &ticket);
	r->block_rc[t] = rc;
	if (rc == 0)
		r->block_rc[t] = gio_wait(&qps[1], ticket, deadline, &st);
	r->block_st[t] = st;
}

void run(bool check)
{
	char uri[256];
	std::snprintf(uri, sizeof(uri), "mem://hbm?size=4M&queues=2&depth=128&sms=1&warps=2&check=%d", check ? 1 : 0);
	gio_gpu_target *g = nullptr;
	if (gio_gpu_target_open(uri, &g)) {
		std::printf("FAIL: %s: %s\n", uri, gio_last_error());
		std::exit(1);
	}
	EXPECT(((g->cfg.flags & GIO_GPU_CHECK) != 0) == check, "%s: flags 0x%x", uri, g->cfg.flags);
	EXPECT((g->check != nullptr) == check, "%s: check block %p", uri, (void *)g->check);
	void *buf = nullptr;
	CK(cudaMalloc(&buf, kBuf));
	uint64_t addr = 0;
	EXPECT(gio_gpu_target_register(g, buf, kBuf, &addr) == 0, "register: %s", gio_last_error());
	const uint64_t bad = addr + 2 * kBuf; // registered nowhere
	Result *r = nullptr;
	CK(cudaMallocManaged(&r, sizeof(*r)));
	std::memset(r, 0, sizeof(*r));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	EXPECT(gio_gpu_preload((const void *)producers) == 0, "preload: %s", gio_last_error());
	if (gio_gpu_target_start(g)) {
		std::printf("FAIL: start: %s\n", gio_last_error());
		std::exit(1);
	}
	producers<<<1, kThreads, 0, s>>>(g->qps, addr, bad, r);
	CK(cudaGetLastError());
	EXPECT(sync_within(s, 30.0), "%s: the producers did not finish within 30 s", uri);
	gio_tgt_stats ts{};
	EXPECT(gio_gpu_target_stop(g, 10000, &ts) == 0, "stop: %s", gio_last_error());
	const int refused = check ? -EFAULT : -EIO;
	for (int l = 0; l < 32; l++) {
		const bool out = l == 7 || l == 9;
		EXPECT(r->warp_rc[l] == (out ? refused : 0), "%s: warp lane %d: rc %d (status 0x%04x)", uri, l, r->warp_rc[l],
		       r->warp_st[l]);
		if (out && !check) // the executor refused it: a DMA fault's status
			EXPECT(gio_status_sc(r->warp_st[l]) == GIO_SC_DATA_XFER_ERROR, "%s: lane %d status 0x%04x", uri, l,
			       r->warp_st[l]);
	}
	if (check)
		EXPECT(r->one_rc == -EFAULT, "%s: gio_submit: rc %d", uri, r->one_rc);
	for (int t = 0; t < kThreads; t++)
		EXPECT(r->block_rc[t] == (t == 40 ? refused : 0), "%s: block thread %d: rc %d (status 0x%04x)", uri, t,
		       r->block_rc[t], r->block_st[t]);
	if (check) {
		EXPECT(g->check_host.refused == 4, "%s: %u refused (want 4)", uri, g->check_host.refused);
		const uint64_t a = g->check_host.fault_addr;
		EXPECT(a == bad || a == bad + 4096 || a == bad + 8192, "%s: fault address 0x%llx is none of the bad ones", uri,
		       (unsigned long long)a);
		std::printf("   %s: 4 commands refused with -EFAULT before the ring, last at 0x%llx; %llu executed\n", uri,
			    (unsigned long long)a, (unsigned long long)ts.commands);
	}
	EXPECT(gio_gpu_target_close(g) == 0, "close: %s", gio_last_error());
	CK(cudaStreamDestroy(s));
	CK(cudaFree(r));
	CK(cudaFree(buf));
}

} // namespace

int main()
{
	skip_without_gpu();
	run(true);
	run(false);
	std::printf("%s: checked submission from GPU threads\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
