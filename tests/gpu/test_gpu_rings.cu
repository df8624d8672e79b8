// GPU producers against a GPU-executed software NVMe target, everything in HBM.
//
// Warps submit writes and reads through giouring's queue pairs with gio_submit_warp (one
// reservation and one doorbell per warp); a persistent executor kernel runs the software
// target's command core (giouring/target/core.h) on other SMs, one block per queue pair, with its
// backing store in HBM. Every object is written from a per-object pattern, read back into a
// poisoned buffer and checked byte for byte; every command must complete exactly once, and an
// out-of-range read must come back with LBA Out of Range. Exits 77 (skipped) without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_test.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/proto/sgl_build.h>
#include <giouring/target/core.h>

namespace {

const uint32_t kQueues = 8, kDepth = 256, kLbaShift = 12, kObj = 32768;
const uint32_t kWarpsPerQueue = 4, kObjectsPerLane = 8;
const uint32_t kProducerWarps = kQueues * kWarpsPerQueue;
const uint32_t kObjects = kProducerWarps * 32 * kObjectsPerLane; // 8192 objects, 256 MiB
const uint64_t kNsBytes = (uint64_t)kObjects * kObj;

struct Shared {
	uint32_t stop; /* set by the last producer block */
	uint32_t executor_errors;
	unsigned long long commands;
};

// The executor: block q serves I/O queue q + 1. Lane 0 fetches, checks and posts; the warp copies.
__device__ void executor(gio_tgt *t, unsigned char *backing, volatile Shared *sh, uint16_t qid)
{
	const unsigned lane = threadIdx.x & 31u;
	__shared__ gio_xfer_seg segs[8];
	__shared__ gio_tgt_io io;
	__shared__ gio_sqe sqe;
	__shared__ int got;
	__shared__ uint16_t st;
	if (threadIdx.x >= 32)
		return;
	for (;;) {
		if (lane == 0) {
			got = gio_tgt_fetch(t, qid, &sqe);
			if (got == 1) {
				io.xfer.segs = segs;
				io.xfer.cap = 8;
				st = gio_tgt_io_prepare(t, &sqe, &io);
			}
		}
		__syncwarp();
		if (got != 1) {
			/* Lane 0 decides for the warp, so no lane leaves while others wait at a barrier. */
			const int stop = __shfl_sync(0xffffffffu, lane == 0 ? (int)gio_load_acquire((uint32_t *)&sh->stop) : 0, 0);
			__syncwarp(); /* every lane has read `got` before lane 0 writes it again (racecheck) */
			if (stop)
				return;
			__nanosleep(100);
			continue;
		}
		if (st == 0 && io.opc != GIO_NVM_OPC_FLUSH) {
			// Warp-parallel copy, 16 bytes per lane per step (objects are 16-byte aligned here).
			uint64_t off = io.offset;
			for (uint32_t s = 0; s < io.xfer.n; s++) {
				uint4 *dev = (uint4 *)(backing + off);
				uint4 *host = (uint4 *)gio_dma_map_find(t->map, segs[s].addr, segs[s].len);
				for (uint64_t k = lane; k < segs[s].len / 16; k += 32) {
					if (io.is_write)
						dev[k] = host[k];
					else
						host[k] = dev[k];
				}
				off += segs[s].len;
			}
		}
		__syncwarp(); /* the data before lane 0's release of the CQE status (see target.h) */
		if (lane == 0) {
			gio_fence_release();
			gio_tgt_post(t, qid, sqe.cid, st, 0);
			atomicAdd((unsigned long long *)&sh->commands, 1ull);
		}
		__syncwarp();
	}
}

__device__ void pattern(uint4 *p, uint32_t obj, uint32_t gen)
{
	for (uint32_t k = 0; k < kObj / 16; k++)
		p[k] = make_uint4(obj, k, gen, obj ^ (k * 2654435761u));
}

// Producers: warp w uses queue w % kQueues; each lane moves kObjectsPerLane objects each way.
__device__ void producers(gio_qp *qps, unsigned char *buf, uint64_t buf_addr, unsigned long long *bad,
			  unsigned long long *errors, unsigned long long *done, uint16_t *oob_status, uint32_t pblock,
			  uint32_t per_lane)
{
	const uint32_t warp = (pblock * blockDim.x + threadIdx.x) / 32;
	const uint32_t lane = threadIdx.x & 31u;
	gio_qp *qp = &qps[warp % kQueues];
	const uint64_t deadline = gio_deadline_in(240ull * 1000000000ull); /* generous: sanitizers */
	for (int dir = 0; dir < 2; dir++) {
		for (uint32_t r = 0; r < per_lane; r++) {
			const uint32_t obj = (warp * kObjectsPerLane + r) * 32 + lane;
			uint4 *mine = (uint4 *)(buf + (uint64_t)obj * kObj);
			gio_sqe sqe;
			uint32_t cid;
			uint16_t st = 0;
			if (dir == 0)
				pattern(mine, obj, 1);
			else
				for (uint32_t k = 0; k < kObj / 16; k++)
					mine[k] = make_uint4(0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u);
			// Device LBA scattered: object obj lives at slot (obj * 7) mod kObjects.
			const uint64_t slba = (uint64_t)((obj * 7u) % kObjects) * (kObj >> kLbaShift);
			if (dir == 0)
				gio_prep_write(&sqe, GIO_TGT_NSID, slba, kObj >> kLbaShift);
			else
				gio_prep_read(&sqe, GIO_TGT_NSID, slba, kObj >> kLbaShift);
			gio_sqe_set_sgl_data(&sqe, buf_addr + (uint64_t)obj * kObj, kObj);
			int rc = gio_submit_warp(qp, &sqe, 0, 0, 1, deadline, &cid);
			if (rc == 0)
				rc = gio_wait(qp, cid, deadline, &st);
			if (rc)
				atomicAdd(errors, 1ull);
			atomicAdd(done, 1ull);
			if (dir == 1) {
				uint32_t wrong = 0;
				for (uint32_t k = 0; k < kObj / 16; k++) {
					const uint4 v = mine[k];
					wrong |= (v.x != obj) | (v.y != k) | (v.z != 1u) | (v.w != (obj ^ (k * 2654435761u)));
				}
				if (wrong)
					atomicAdd(bad, 1ull);
			}
		}
	}
	// One read past the namespace end per queue: the status must say so.
	if (lane == 0 && warp < kQueues) {
		gio_sqe sqe;
		uint32_t cid;
		uint16_t st = 0;
		gio_prep_read(&sqe, GIO_TGT_NSID, kNsBytes >> kLbaShift, 1);
		gio_sqe_set_sgl_data(&sqe, buf_addr, 1u << kLbaShift);
		if (gio_submit(qp, &sqe, 0, 0, deadline, &cid) == 0 && gio_wait(qp, cid, deadline, &st) == -EIO)
			oob_status[warp] = st;
	}
}

// One launch holds both roles, so the executor and the producers are co-resident by
// construction (and compute-sanitizer, which serializes kernels, can run the test): blocks
// 0..kQueues-1 execute, the others produce; the last producer block stops the executor.
__global__ void combined(gio_tgt *t, unsigned char *backing, Shared *sh, gio_qp *qps, unsigned char *buf,
			 uint64_t buf_addr, unsigned long long *counters, uint16_t *oob, uint32_t *finished, uint32_t per_lane)
{
	if (blockIdx.x < kQueues) {
		executor(t, backing, sh, (uint16_t)(blockIdx.x + 1));
		return;
	}
	producers(qps, buf, buf_addr, &counters[0], &counters[1], &counters[2], oob, blockIdx.x - kQueues, per_lane);
	__syncthreads();
	if (threadIdx.x == 0 && gio_fetch_add(finished, 1) == gridDim.x - kQueues - 1)
		gio_store_release(&sh->stop, 1);
}

} // namespace

int main()
{
	skip_without_gpu();
	// Lazy loading trap (docs/design.md, "Persistent kernels and lazy loading"): load every kernel before the persistent one starts.
	cudaFuncAttributes fa;
	CK(cudaFuncGetAttributes(&fa, combined));
	// GIO_GPU_QUICK=1 (gpu-check.sh sets it under compute-sanitizer): one object per lane.
	const char *quick = std::getenv("GIO_GPU_QUICK");
	const uint32_t per_lane = quick && *quick == '1' ? 1 : kObjectsPerLane;

	gio_tgt *t;
	gio_tgt_bar *bar;
	gio_dma_map *map;
	gio_dma_region *regions;
	gio_qp *qps;
	unsigned char *backing, *buf;
	Shared *sh;
	unsigned long long *counters;
	uint16_t *oob;
	CK(cudaMallocManaged(&t, sizeof(*t)));
	CK(cudaMallocManaged(&bar, sizeof(*bar)));
	CK(cudaMallocManaged(&map, sizeof(*map)));
	CK(cudaMallocManaged(&regions, sizeof(*regions)));
	CK(cudaMallocManaged(&qps, kQueues * sizeof(*qps)));
	CK(cudaMallocManaged(&counters, 4 * sizeof(unsigned long long)));
	CK(cudaMallocManaged(&oob, kQueues * sizeof(uint16_t)));
	CK(cudaMalloc(&backing, kNsBytes));
	CK(cudaMalloc(&buf, kNsBytes));
	CK(cudaHostAlloc(&sh, sizeof(*sh), cudaHostAllocMapped));
	std::memset(sh, 0, sizeof(*sh));
	std::memset(counters, 0, 4 * sizeof(unsigned long long));
	std::memset(oob, 0, kQueues * sizeof(uint16_t));

	// Queue memory: per queue an SQ, a CQ and slots, in managed memory (set up on the host, used
	// on the device only once the kernels run).
	std::vector<void *> sqm(kQueues + 1), cqm(kQueues + 1);
	gio_cmd_slot *slots;
	CK(cudaMallocManaged(&slots, (size_t)kQueues * kDepth * sizeof(gio_cmd_slot)));
	// Queues must be 4 KiB aligned (Create I/O SQ/CQ take page-aligned, contiguous memory): carve
	// them from one managed arena.
	const size_t sq_bytes = (kDepth * sizeof(gio_sqe) + 4095) & ~(size_t)4095;
	const size_t cq_bytes = (kDepth * sizeof(gio_cqe) + 4095) & ~(size_t)4095;
	unsigned char *arena;
	CK(cudaMallocManaged(&arena, (kQueues + 1) * (sq_bytes + cq_bytes) + 4096));
	unsigned char *p = (unsigned char *)(((uintptr_t)arena + 4095) & ~(uintptr_t)4095);
	std::memset(p, 0, (kQueues + 1) * (sq_bytes + cq_bytes));
	for (uint32_t q = 0; q <= kQueues; q++) {
		sqm[q] = p;
		p += sq_bytes;
		cqm[q] = p;
		p += cq_bytes;
	}
	// Registered memory for data: the producers' buffer only (bus address = device pointer).
	regions[0] = {(uint64_t)(uintptr_t)buf, kNsBytes, buf};
	map->regions = regions;
	map->count = 1;

	gio_tgt_config cfg{};
	cfg.sgls = GIO_SGLS_SUPPORT_DWORD;
	cfg.mdts = 5;
	cfg.lba_shift = kLbaShift;
	cfg.max_io_queues = kQueues;
	cfg.mqes = kDepth - 1;
	cfg.nsze = kNsBytes >> kLbaShift;
	if (gio_tgt_init(t, bar, &cfg, map)) {
		std::printf("FAIL: gio_tgt_init\n");
		return 1;
	}
	std::printf("executor: %u queues x depth %u, %u objects of %u bytes, %u producer warps\n", kQueues, kDepth,
		    kProducerWarps * 32 * per_lane, kObj, kProducerWarps);
	// Bring-up and queue creation run the same admin core on the host: the target's admin queue is
	// not needed for this device test, so the commands are executed directly.
	for (uint32_t q = 1; q <= kQueues; q++) {
		gio_sqe sqe;
		uint32_t dw0;
		gio_dma_region qr[2] = {{(uint64_t)(uintptr_t)sqm[q], kDepth * sizeof(gio_sqe), sqm[q]},
					{(uint64_t)(uintptr_t)cqm[q], kDepth * sizeof(gio_cqe), cqm[q]}};
		gio_dma_map qmap{qr, 2};
		const gio_dma_map *saved = t->map;
		t->map = &qmap; // the queue memory is resolved once, at creation
		if (gio_prep_create_cq(&sqe, (uint16_t)q, kDepth, (uint64_t)(uintptr_t)cqm[q], 0, 0)) {
			std::printf("FAIL: gio_prep_create_cq refused queue %u\n", q);
			return 1;
		}
		uint16_t st1 = gio_tgt_admin(t, &sqe, &dw0);
		if (gio_prep_create_sq(&sqe, (uint16_t)q, kDepth, (uint16_t)q, (uint64_t)(uintptr_t)sqm[q])) {
			std::printf("FAIL: gio_prep_create_sq refused queue %u\n", q);
			return 1;
		}
		uint16_t st2 = gio_tgt_admin(t, &sqe, &dw0);
		t->map = saved;
		if (st1 || st2) {
			std::printf("FAIL: create queue %u: %s / %s\n", q, gio_status_str(st1), gio_status_str(st2));
			return 1;
		}
		uint32_t *sq_db = (uint32_t *)((char *)bar + gio_sq_doorbell_offset(bar->regs.cap, (uint16_t)q));
		uint32_t *cq_db = (uint32_t *)((char *)bar + gio_cq_doorbell_offset(bar->regs.cap, (uint16_t)q));
		if (gio_qp_init(&qps[q - 1], (gio_sqe *)sqm[q], kDepth, (gio_cqe *)cqm[q], kDepth, slots + (q - 1) * kDepth,
				(uint16_t)q, sq_db, cq_db, 0)) {
			std::printf("FAIL: gio_qp_init\n");
			return 1;
		}
	}

	uint32_t *finished;
	CK(cudaMallocManaged(&finished, sizeof(*finished)));
	*finished = 0;
	cudaStream_t stream;
	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CK(cudaDeviceSynchronize());
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0, stream));
	combined<<<kQueues + kProducerWarps / 4, 128, 0, stream>>>(t, backing, sh, qps, buf, (uint64_t)(uintptr_t)buf,
								 counters, oob, finished, per_lane);
	CK(cudaGetLastError());
	CK(cudaEventRecord(e1, stream));
	// Bounded wait on the host too (the producers' own deadlines are 20 s; sanitizers are slow).
	for (int i = 0; i < 3000 && cudaStreamQuery(stream) == cudaErrorNotReady; i++) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, nullptr);
	}
	if (cudaStreamQuery(stream) == cudaErrorNotReady) {
		__atomic_store_n(&sh->stop, 1u, __ATOMIC_RELEASE);
		std::printf("FAIL: the kernel did not finish within 300 s (executor served %llu commands)\n",
			    (unsigned long long)sh->commands);
		return 1;
	}
	CK(cudaStreamSynchronize(stream));
	float ms = 0;
	CK(cudaEventElapsedTime(&ms, e0, e1));

	const unsigned long long expected = 2ull * kProducerWarps * 32 * per_lane;
	int ok = counters[0] == 0 && counters[1] == 0 && counters[2] == expected && sh->commands == expected + kQueues;
	for (uint32_t q = 0; q < kQueues; q++) {
		ok &= gio_status_sc(oob[q]) == GIO_SC_LBA_RANGE && gio_status_dnr(oob[q]);
		ok &= qps[q].stray_cqes == 0;
	}
	std::printf("%llu commands (%llu expected + %u out-of-range reads), %llu errors, %llu objects wrong, "
		    "%.1f ms, %.2f M commands/s, %.1f GB/s of data (functional test, not a bench)\n",
		    (unsigned long long)sh->commands, expected, kQueues, counters[1], counters[0], ms,
		    sh->commands / (ms * 1e3), 2.0 * expected * kObj / (ms * 1e6));
	std::printf("out-of-range read on queue 1: %s (status 0x%04x)\n", gio_status_str(oob[0]), oob[0]);
	std::printf("%s: GPU producers x GPU-executed target, data verified byte for byte\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
