// IOCBs on the GPU: gio_iocb_issue_block (the I/O kernel body, a thread per IOCTX) against the
// GPU-executed target, and gio_wait_iocb in a compute kernel on another stream that consumes
// the data once its IOCB is done.
//
// Objects are written from a pattern through write IOCBs, read back through read IOCBs into a
// poisoned buffer while a consumer kernel per IOCB waits for it on the device and checks every
// byte; then one IOCB carries a malformed IOCTX (-EINVAL, the batch still completes) and an
// out-of-range one (-EIO, LBA Out of Range): each IOCTX gets its own result, the IOCB keeps
// the first error. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpu_test.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/target/gpu_target.h>
#include <giouring/proto/sgl_build.h>

namespace {

const uint32_t kObj = 16384, kPerIocb = 1024, kIocbs = 2, kObjs = kPerIocb * kIocbs;
const uint64_t kTimeoutNs = 20ull * 1000000000ull;

__device__ uint4 word(uint32_t obj, uint32_t k) { return make_uint4(obj, k, 0x10cb10cbu, obj * 2654435761u ^ k); }

__global__ void fill(uint4 *p, uint32_t objs)
{
	const uint32_t words = kObj / 16;
	for (uint64_t w = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; w < (uint64_t)objs * words;
	     w += (uint64_t)gridDim.x * blockDim.x)
		p[w] = word((uint32_t)(w / words), (uint32_t)(w % words));
}

__global__ void issue(gio_iocb *b, const gio_iocb_target *tg)
{
	gio_iocb_issue_block(b, tg);
}

// A compute kernel: waits for its IOCB on the device, then checks the objects it covers.
__global__ void consume(const gio_iocb *b, const uint4 *dst, uint32_t first_obj, unsigned long long *wrong, int *rc_out)
{
	__shared__ int rc;
	if (threadIdx.x == 0)
		rc = gio_wait_iocb(b, gio_deadline_in(kTimeoutNs));
	__syncthreads();
	if (threadIdx.x == 0)
		*rc_out = rc;
	if (rc)
		return;
	const uint32_t words = kObj / 16;
	unsigned long long bad = 0;
	for (uint64_t w = threadIdx.x; w < (uint64_t)kPerIocb * words; w += blockDim.x) {
		const uint32_t obj = first_obj + (uint32_t)(w / words);
		const uint4 v = dst[(uint64_t)obj * words + w % words], e = word(obj, (uint32_t)(w % words));
		bad += v.x != e.x || v.y != e.y || v.z != e.z || v.w != e.w;
	}
	if (bad)
		atomicAdd(wrong, bad);
}

// Object i lives at namespace slot (i * 7) % kObjs: scattered, as KV objects over a file pool.
uint64_t slot_offset(uint32_t i) { return (uint64_t)((i * 7u) % kObjs) * kObj; }

gio_sgl_desc sgl_for(uint64_t addr, uint32_t len)
{
	gio_sqe sqe;
	std::memset(&sqe, 0, sizeof(sqe));
	gio_sqe_set_sgl_data(&sqe, addr, len);
	return sqe.dptr.sgl;
}

void arm(gio_iocb *b)
{
	b->done = b->failed = 0;
	b->first_error = 0xffffffffu;
	b->first_result = 0;
	b->first_status = 0;
	b->state = GIO_IOCB_RUNNING;
	b->timeout_ns = kTimeoutNs;
}

} // namespace

int main()
{
	skip_without_gpu();
	gio_gpu_target *g = nullptr;
	if (gio_gpu_target_open("mem://hbm?size=32M&queues=8&depth=256&sms=2&warps=4", &g)) {
		std::printf("FAIL: open: %s\n", gio_last_error());
		return 1;
	}
	uint4 *src, *dst;
	CK(cudaMalloc(&src, (size_t)kObjs * kObj));
	CK(cudaMalloc(&dst, (size_t)kObjs * kObj));
	uint64_t a_src = 0, a_dst = 0;
	EXPECT(gio_gpu_target_register(g, src, (size_t)kObjs * kObj, &a_src) == 0 &&
		       gio_gpu_target_register(g, dst, (size_t)kObjs * kObj, &a_dst) == 0,
	       "register: %s", gio_last_error());

	gio_iocb *b;
	gio_ioctx *ctx;
	gio_iocb_target *tg;
	gio_qp **qps;
	unsigned long long *wrong;
	int *rcs;
	CK(cudaMallocManaged(&b, (kIocbs + 1) * sizeof(*b)));
	CK(cudaMallocManaged(&ctx, (size_t)(kIocbs + 1) * kPerIocb * sizeof(*ctx)));
	CK(cudaMallocManaged(&tg, sizeof(*tg)));
	CK(cudaMallocManaged(&qps, g->cfg.queues * sizeof(*qps)));
	CK(cudaMallocManaged(&wrong, sizeof(*wrong)));
	CK(cudaMallocManaged(&rcs, kIocbs * sizeof(int)));
	for (uint32_t q = 0; q < g->cfg.queues; q++)
		qps[q] = gio_gpu_target_qp(g, q);
	*tg = {qps, g->cfg.queues, GIO_TGT_NSID, g->cfg.lba_shift, 0};
	*wrong = 0;

	if (gio_gpu_preload((const void *)fill) || gio_gpu_preload((const void *)issue) ||
	    gio_gpu_preload((const void *)consume) || gio_gpu_target_start(g)) {
		std::printf("FAIL: start: %s\n", gio_last_error());
		return 1;
	}
	cudaStream_t io, compute;
	CK(cudaStreamCreateWithFlags(&io, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));

	// 1. Write every object through write IOCBs.
	fill<<<64, 256, 0, io>>>(src, kObjs);
	for (uint32_t k = 0; k < kIocbs; k++) {
		gio_ioctx *x = ctx + (size_t)k * kPerIocb;
		for (uint32_t i = 0; i < kPerIocb; i++) {
			const uint32_t obj = k * kPerIocb + i;
			std::memset(&x[i], 0, sizeof(x[i]));
			x[i].dptr = sgl_for(a_src + (uint64_t)obj * kObj, kObj);
			x[i].offset = slot_offset(obj);
			x[i].len = kObj;
			x[i].dir = GIO_IOCTX_WRITE;
		}
		b[k].ctx = x;
		b[k].nctx = kPerIocb;
		arm(&b[k]);
	}
	// (No cudaDeviceSynchronize from here on: it would wait for the persistent executor. Host
	// writes to managed memory before a launch are seen by the kernel.)
	for (uint32_t k = 0; k < kIocbs; k++)
		issue<<<kPerIocb / 128, 128, 0, io>>>(&b[k], tg);
	CK(cudaGetLastError());
	EXPECT(sync_within(io, 60), "write IOCBs did not finish");
	for (uint32_t k = 0; k < kIocbs; k++)
		EXPECT(b[k].state == GIO_IOCB_DONE && b[k].done == kPerIocb && b[k].failed == 0,
		       "write IOCB %u: state %u done %u failed %u (first %u: rc %d status 0x%x)", k, b[k].state, b[k].done,
		       b[k].failed, b[k].first_error, b[k].first_result, b[k].first_status);

	// 2. Read them back into a poisoned buffer; consumers wait on the device for their IOCB.
	CK(cudaMemsetAsync(dst, 0xa5, (size_t)kObjs * kObj, io));
	EXPECT(sync_within(io, 30), "poisoning did not finish");
	for (uint32_t k = 0; k < kIocbs; k++) {
		gio_ioctx *x = ctx + (size_t)k * kPerIocb;
		for (uint32_t i = 0; i < kPerIocb; i++) {
			const uint32_t obj = k * kPerIocb + i;
			x[i].dptr = sgl_for(a_dst + (uint64_t)obj * kObj, kObj);
			x[i].dir = GIO_IOCTX_READ;
			x[i].result = 1;
		}
		arm(&b[k]);
		rcs[k] = 1;
	}
	for (uint32_t k = 0; k < kIocbs; k++)
		consume<<<1, 512, 0, compute>>>(&b[k], dst, k * kPerIocb, wrong, &rcs[k]); // waits first
	for (uint32_t k = 0; k < kIocbs; k++)
		issue<<<kPerIocb / 128, 128, 0, io>>>(&b[k], tg);
	CK(cudaGetLastError());
	EXPECT(sync_within(io, 60) && sync_within(compute, 60), "read IOCBs or their consumers did not finish");
	unsigned bad_results = 0;
	for (uint32_t k = 0; k < kIocbs; k++) {
		EXPECT(rcs[k] == 0, "consumer %u: gio_wait_iocb returned %d", k, rcs[k]);
		for (uint32_t i = 0; i < kPerIocb; i++)
			bad_results += ctx[(size_t)k * kPerIocb + i].result != 0;
	}
	EXPECT(bad_results == 0, "%u IOCTXs without a 0 result", bad_results);
	EXPECT(*wrong == 0, "%llu wrong 16-byte words seen by the consumers", *wrong);
	std::printf("   %u objects written and read back through %u+%u IOCBs; consumers verified every byte\n", kObjs, kIocbs,
		    kIocbs);

	// 3. Errors stay per IOCTX: a malformed one (offset not a whole block) and one past the end.
	gio_ioctx *x = ctx + (size_t)kIocbs * kPerIocb;
	for (uint32_t i = 0; i < 64; i++) {
		std::memset(&x[i], 0, sizeof(x[i]));
		x[i].dptr = sgl_for(a_dst + (uint64_t)i * kObj, kObj);
		x[i].offset = slot_offset(i);
		x[i].len = kObj;
		x[i].dir = GIO_IOCTX_READ;
	}
	x[5].offset += 100;                               // -EINVAL: not a multiple of the block size
	x[9].offset = (uint64_t)kObjs * kObj;              // -EIO: LBA Out of Range
	b[kIocbs].ctx = x;
	b[kIocbs].nctx = 64;
	arm(&b[kIocbs]);
	issue<<<1, 64, 0, io>>>(&b[kIocbs], tg);
	EXPECT(sync_within(io, 30), "the error IOCB did not finish");
	const gio_iocb &e = b[kIocbs];
	EXPECT(e.state == GIO_IOCB_DONE && e.done == 64 && e.failed == 2, "error IOCB: state %u done %u failed %u", e.state,
	       e.done, e.failed);
	EXPECT(x[5].result == -EINVAL, "malformed IOCTX: result %d", x[5].result);
	EXPECT(x[9].result == -EIO && gio_status_sc(x[9].status) == GIO_SC_LBA_RANGE, "out-of-range IOCTX: result %d status 0x%x",
	       x[9].result, x[9].status);
	EXPECT(e.first_error == 5 || e.first_error == 9, "first error at IOCTX %u", e.first_error);
	unsigned others = 0;
	for (uint32_t i = 0; i < 64; i++)
		others += i != 5 && i != 9 && x[i].result != 0;
	EXPECT(others == 0, "%u other IOCTXs failed", others);
	std::printf("   malformed IOCTX -> %d, past the end -> %d (%s); IOCB: %u done, %u failed, first error at %u\n",
		    x[5].result, x[9].result, gio_status_str(x[9].status), e.done, e.failed, e.first_error);

	gio_tgt_stats st{};
	EXPECT(gio_gpu_target_stop(g, 10000, &st) == 0, "stop: %s", gio_last_error());
	gio_gpu_target_close(g);
	std::printf("%s: IOCBs issued by GPU blocks, waited on by compute kernels, results per IOCTX\n",
		    failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
