// The GPU-executed software target (giouring/target/gpu_target.h) driven by GPU warps.
//
// For each placement (mem://hbm with rings in HBM; mem://host?exec=gpu with rings in host
// memory): warps write objects from a per-object pattern with gio_submit_warp, read them back into
// a poisoned buffer, wait with gio_wait_warp (32 CQEs reaped at a time) and check every byte; each
// command completes exactly once (the producers' count, the target's count and the CIDs agree).
// Errors surface intact: LBA Out of Range, Data Transfer Error for an unregistered buffer, an SGL
// shorter than the transfer. Deadlines fire: with the executor stopped, a wait returns -ETIME by
// its deadline. Data pointers the executor walks from lists (an SGL segment in memory, PRP1 and
// PRP2) move every byte. Bad URIs get -EINVAL with a message. GIO_GPU_FUSED=1 (compute-sanitizer, which
// serializes kernels) runs the executor and the producers in one launch. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu_test.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/target/gpu_exec.cuh>
#include <giouring/target/gpu_target.h>
#include <giouring/proto/prp_build.h>
#include <giouring/proto/sgl_build.h>

namespace {

const uint32_t kObj = 16384, kLbaShift = 12;

struct Result {
	unsigned long long submitted, completed, errors, bad_words, bad_cid;
	uint16_t oob_status, unreg_status, short_status;
	int oob_rc, unreg_rc, short_rc;
	int lists_rc;          // the first failure of the list commands (build, submit or wait)
	uint16_t lists_status; // ... and its status
	uint32_t lists_bad;    // bytes read back through PRP1 and PRP2 that differ from those written
};

// A second registered region (page aligned) for the commands whose data pointers are lists:
// [0, 4 KiB) and [8 KiB, 12 KiB) the pieces written, [16 KiB, 20 KiB) the SGL segment,
// [24 KiB, 32 KiB) the pages read back into.
struct Lists {
	unsigned char *mem;
	uint64_t addr;
	gio_dptr_caps caps;
};
const uint32_t kListsBytes = 32768;

__device__ unsigned char piece_byte(uint32_t i) { return (unsigned char)(i * 7u + 3u + (i >> 12)); }

__device__ uint4 word(uint32_t obj, uint32_t k) { return make_uint4(obj, k, 0x600dc0deu, obj ^ (k * 2654435761u)); }

// Warp w uses queue w % nqps; lane l of warp w moves objects (w * 32 + l) + i * nwarps * 32.
__device__ void produce(gio_qp *qps, uint32_t nqps, unsigned char *buf, uint64_t addr, uint32_t nobj, uint32_t warp,
			uint32_t nwarps, uint64_t unreg_addr, Lists lists, Result *r)
{
	const uint32_t lane = threadIdx.x & 31u;
	gio_qp *qp = &qps[warp % nqps];
	const uint64_t deadline = gio_deadline_in(60ull * 1000000000ull);
	for (int dir = 0; dir < 2; dir++) {
		for (uint32_t base = warp * 32; base < nobj; base += nwarps * 32) {
			const uint32_t obj = base + lane;
			const int active = obj < nobj;
			uint4 *mine = (uint4 *)(buf + (uint64_t)obj * kObj);
			gio_sqe sqe;
			uint32_t cid = 0;
			uint16_t st = 0;
			if (active) {
				for (uint32_t k = 0; k < kObj / 16; k++)
					mine[k] = dir == 0 ? word(obj, k) : make_uint4(0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u);
				// Objects scattered over the namespace: obj lives at slot (obj * 5) mod nobj.
				const uint64_t slba = (uint64_t)((obj * 5u) % nobj) * (kObj >> kLbaShift);
				if (dir == 0)
					gio_prep_write(&sqe, GIO_TGT_NSID, slba, kObj >> kLbaShift);
				else
					gio_prep_read(&sqe, GIO_TGT_NSID, slba, kObj >> kLbaShift);
				gio_sqe_set_sgl_data(&sqe, addr + (uint64_t)obj * kObj, kObj);
			}
			int rc;
			if (qp->sq_depth > 32) { // the warp verbs: 32 commands, one doorbell, a warp reaping
				rc = gio_submit_warp(qp, &sqe, 0, 0, active, deadline, &cid);
				if (rc == 0)
					rc = gio_wait_warp(qp, cid, active, deadline, &st);
			} else { // rings smaller than a warp: every lane on its own
				rc = active ? gio_submit(qp, &sqe, 0, 0, deadline, &cid) : 0;
				if (rc == 0 && active)
					rc = gio_wait(qp, cid, deadline, &st);
			}
			if (!active)
				continue;
			atomicAdd(&r->submitted, 1ull);
			if (rc)
				atomicAdd(&r->errors, 1ull);
			else
				atomicAdd(&r->completed, 1ull);
			if (dir == 1 && rc == 0) {
				unsigned long long wrong = 0;
				for (uint32_t k = 0; k < kObj / 16; k++) {
					const uint4 v = mine[k], w = word(obj, k);
					wrong += v.x != w.x || v.y != w.y || v.z != w.z || v.w != w.w;
				}
				if (wrong)
					atomicAdd(&r->bad_words, wrong);
			}
		}
	}
	// Errors, one each from warp 0, lane 0.
	if (warp == 0 && lane == 0) {
		gio_sqe sqe;
		uint32_t cid;
		uint16_t st = 0;
		const uint64_t nsze = (uint64_t)nobj * kObj >> kLbaShift;
		gio_prep_read(&sqe, GIO_TGT_NSID, nsze, 1); // past the end
		gio_sqe_set_sgl_data(&sqe, addr, 1u << kLbaShift);
		r->oob_rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
		if (r->oob_rc == 0)
			r->oob_rc = gio_wait(qp, cid, deadline, &st);
		r->oob_status = st;
		st = 0;
		gio_prep_read(&sqe, GIO_TGT_NSID, 0, 1); // into memory nobody registered
		gio_sqe_set_sgl_data(&sqe, unreg_addr, 1u << kLbaShift);
		r->unreg_rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
		if (r->unreg_rc == 0)
			r->unreg_rc = gio_wait(qp, cid, deadline, &st);
		r->unreg_status = st;
		st = 0;
		gio_prep_read(&sqe, GIO_TGT_NSID, 0, 2); // an SGL of one block for two
		gio_sqe_set_sgl_data(&sqe, addr, 1u << kLbaShift);
		r->short_rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
		if (r->short_rc == 0)
			r->short_rc = gio_wait(qp, cid, deadline, &st);
		r->short_status = st;
		// Lists: a Write of two blocks from two pieces 8 KiB apart through an SGL segment in
		// memory, then a Read of them through PRP1 and PRP2 into two other pages, compared. The
		// executor moves these from the list it walked, the common command from its one
		// descriptor. LBAs 0 and 1 hold object 0, which this lane has verified already.
		unsigned char *m = lists.mem;
		for (uint32_t i = 0; i < 8192; i++) {
			m[(i < 4096 ? 0u : 8192u - 4096u) + i] = piece_byte(i);
			m[24576u + i] = 0x5a;
		}
		const gio_range pieces[2] = {{lists.addr, 4096}, {lists.addr + 8192, 4096}};
		const gio_range pages[2] = {{lists.addr + 24576, 4096}, {lists.addr + 28672, 4096}};
		st = 0;
		gio_prep_write(&sqe, GIO_TGT_NSID, 0, 2);
		int rc = gio_sgl_build(&sqe, pieces, 2, &lists.caps, (gio_sgl_desc *)(m + 16384), lists.addr + 16384, 4096);
		rc = rc > 0 ? gio_submit(qp, &sqe, 0, 0, deadline, &cid) : rc == 0 ? -ENOTSUP : rc;
		if (rc == 0)
			rc = gio_wait(qp, cid, deadline, &st);
		if (rc == 0) {
			gio_prep_read(&sqe, GIO_TGT_NSID, 0, 2);
			rc = gio_prp_build(&sqe, pages, 2, &lists.caps, nullptr, 0, 0);
			if (rc == 0)
				rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
			if (rc == 0)
				rc = gio_wait(qp, cid, deadline, &st);
		}
		r->lists_rc = rc;
		r->lists_status = st;
		for (uint32_t i = 0; rc == 0 && i < 8192; i++)
			r->lists_bad += m[24576u + i] != piece_byte(i);
	}
}

__global__ void producers(gio_qp *qps, uint32_t nqps, unsigned char *buf, uint64_t addr, uint32_t nobj, uint64_t unreg,
			  Lists lists, Result *r)
{
	produce(qps, nqps, buf, addr, nobj, (blockIdx.x * blockDim.x + threadIdx.x) / 32u, gridDim.x * blockDim.x / 32u,
		unreg, lists, r);
}

// One launch: blocks [0, exec_blocks) run the executor, the rest produce; the last producer
// block stops the executor.
__global__ void fused(gio_tgt *t, unsigned char *backing, gio_gpu_ctl *ctl, uint32_t flags, gio_ssd_model model,
		      uint32_t exec_blocks, gio_qp *qps, uint32_t nqps, unsigned char *buf, uint64_t addr, uint32_t nobj,
		      uint64_t unreg, Lists lists, Result *r, uint32_t *finished)
{
	__shared__ gio_gpu_exec_env env[4]; // a copy of the target's region table per warp of 128-thread blocks
	if (blockIdx.x < exec_blocks) {
		// Even blocks check commands against their shared-memory copy, odd ones against the target;
		// in even blocks, odd warps keep their queues' state in shared memory (the build for more
		// than 8 warps a block), even warps in their lanes' registers.
		const uint32_t w = (blockIdx.x * blockDim.x + threadIdx.x) / 32u, nw = exec_blocks * blockDim.x / 32u;
		gio_gpu_exec_env *e = blockIdx.x % 2u ? nullptr : &env[threadIdx.x / 32u % 4u];
		if (e && threadIdx.x / 32u % 2u)
			gio_gpu_exec_loop_wide(t, backing, ctl, flags, &model, w, nw, e);
		else
			gio_gpu_exec_loop(t, backing, ctl, flags, &model, w, nw, e);
		return;
	}
	const uint32_t pb = blockIdx.x - exec_blocks;
	produce(qps, nqps, buf, addr, nobj, (pb * blockDim.x + threadIdx.x) / 32u, (gridDim.x - exec_blocks) * blockDim.x / 32u,
		unreg, lists, r);
	__syncthreads();
	if (threadIdx.x == 0 && gio_fetch_add(finished, 1) == gridDim.x - exec_blocks - 1)
		gio_store_release(&ctl->stop, 1);
}

// A single command whose wait must end at its deadline (the executor is stopped).
__global__ void deadline_probe(gio_qp *qp, uint64_t addr, uint64_t timeout_ns, int *rc, unsigned long long *waited_ns)
{
	gio_sqe sqe;
	uint32_t cid;
	gio_prep_read(&sqe, GIO_TGT_NSID, 0, 1);
	gio_sqe_set_sgl_data(&sqe, addr, 1u << kLbaShift);
	const uint64_t t0 = gio_now_ns(), deadline = gio_deadline_in(timeout_ns);
	*rc = gio_submit(qp, &sqe, 0, 0, deadline, &cid);
	if (*rc == 0)
		*rc = gio_wait(qp, cid, deadline, nullptr);
	*waited_ns = gio_now_ns() - t0;
}

void run(const char *uri, bool fused_launch)
{
	std::printf("== %s%s\n", uri, fused_launch ? " (fused launch)" : "");
	gio_gpu_target *g = nullptr;
	const int orc = gio_gpu_target_open(uri, &g);
	EXPECT(orc == 0, "open: %s", gio_last_error());
	if (orc)
		return;
	const uint32_t nobj = g->cfg.size / kObj;
	unsigned char *buf, *unreg;
	CK(cudaMalloc(&buf, (size_t)nobj * kObj));
	CK(cudaMalloc(&unreg, 1 << 16));
	uint64_t addr = 0;
	EXPECT(gio_gpu_target_register(g, buf, (size_t)nobj * kObj, &addr) == 0, "register: %s", gio_last_error());
	unsigned char *lists_raw;
	CK(cudaMalloc(&lists_raw, kListsBytes + 4096));
	Lists lists{};
	lists.mem = (unsigned char *)(((uintptr_t)lists_raw + 4095) & ~(uintptr_t)4095); // PRP pages are page aligned
	EXPECT(gio_gpu_target_register(g, lists.mem, kListsBytes, &lists.addr) == 0, "register the lists' region: %s",
	       gio_last_error());
	lists.caps.sgls = g->cfg.sgls == 2 ? GIO_SGLS_SUPPORT_DWORD : GIO_SGLS_SUPPORT_BYTE; // as the target advertises
	lists.caps.page_bytes = 4096;
	lists.caps.max_xfer_bytes = g->cfg.mdts ? 4096ull << g->cfg.mdts : 0;
	Result *r;
	uint32_t *finished;
	CK(cudaMallocManaged(&r, sizeof(*r)));
	CK(cudaMallocManaged(&finished, sizeof(*finished)));
	std::memset(r, 0, sizeof(*r));
	*finished = 0;
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	const uint32_t pblocks = 4, threads = 128;
	if (fused_launch) {
		EXPECT(gio_gpu_target_prepare(g) == 0, "prepare: %s", gio_last_error());
		fused<<<g->cfg.exec_blocks + pblocks, threads, 0, s>>>(g->tgt, g->backing, g->ctl_dev, g->cfg.flags, g->cfg.model,
								       g->cfg.exec_blocks, g->qps, g->cfg.queues, buf, addr,
								       nobj, (uint64_t)(uintptr_t)unreg, lists, r, finished);
	} else {
		EXPECT(gio_gpu_preload((const void *)producers) == 0 && gio_gpu_preload((const void *)deadline_probe) == 0,
		       "preload: %s", gio_last_error());
		EXPECT(gio_gpu_target_start(g) == 0, "start: %s", gio_last_error());
		producers<<<pblocks, threads, 0, s>>>(g->qps, g->cfg.queues, buf, addr, nobj, (uint64_t)(uintptr_t)unreg, lists,
						      r);
	}
	CK(cudaGetLastError());
	const uint64_t t0 = gio_host_now_ns();
	// Bounded wait: the producers' own deadlines are 60 s.
	for (int i = 0; i < 1200 && cudaStreamQuery(s) == cudaErrorNotReady; i++)
		gio_host_sleep_ns(100000000ull);
	if (cudaStreamQuery(s) == cudaErrorNotReady) {
		std::printf("FAIL: producers did not finish within 120 s\n");
		std::exit(1);
	}
	CK(cudaStreamSynchronize(s));
	const double secs = (gio_host_now_ns() - t0) / 1e9;
	if (g->cfg.flags & GIO_GPU_MODEL) {
		// The timing model: writes then reads of every object through the modelled bandwidth
		// cannot finish sooner than bytes / bandwidth (one timeline per device).
		const double bytes = (double)nobj * kObj;
		const double floor_s = bytes / (g->cfg.model.write_gbps * 1e9) + bytes / (g->cfg.model.read_gbps * 1e9);
		EXPECT(secs >= 0.9 * floor_s, "modelled run took %.1f ms, the model's floor is %.1f ms", secs * 1e3, floor_s * 1e3);
		std::printf("   timing model: %.1f ms (floor %.1f ms at %.1f GB/s write, %.1f GB/s read)\n", secs * 1e3,
			    floor_s * 1e3, g->cfg.model.write_gbps, g->cfg.model.read_gbps);
	}
	gio_tgt_stats ts{};
	if (fused_launch) {
		EXPECT(gio_gpu_target_read_back(g, 10000, &ts) == 0, "read back: %s", gio_last_error());
	} else {
		EXPECT(gio_gpu_target_stop(g, 10000, &ts) == 0, "stop: %s", gio_last_error());
	}
	const unsigned long long expect = 2ull * nobj;
	EXPECT(r->submitted == expect && r->completed == expect && r->errors == 0,
	       "%llu submitted, %llu completed, %llu errors (expected %llu)", r->submitted, r->completed, r->errors, expect);
	EXPECT(r->bad_words == 0, "%llu 16-byte words wrong after the read-back", r->bad_words);
	EXPECT(ts.commands == expect + 5 && ts.errors == 3, "target counted %llu commands, %llu errors (expected %llu, 3)",
	       (unsigned long long)ts.commands, (unsigned long long)ts.errors, expect + 5);
	unsigned long long stray = 0;
	for (uint32_t q = 0; q < g->cfg.queues; q++)
		stray += g->qps_host[q].stray_cqes; // the host image, read back by the stop
	EXPECT(stray == 0, "%llu stray completions", stray);
	EXPECT(r->oob_rc == -EIO && gio_status_sct(r->oob_status) == GIO_SCT_GENERIC &&
		       gio_status_sc(r->oob_status) == GIO_SC_LBA_RANGE && gio_status_dnr(r->oob_status),
	       "past the end: rc %d, %s (0x%04x)", r->oob_rc, gio_status_str(r->oob_status), r->oob_status);
	EXPECT(r->unreg_rc == -EIO && gio_status_sc(r->unreg_status) == GIO_SC_DATA_XFER_ERROR,
	       "unregistered buffer: rc %d, %s (0x%04x)", r->unreg_rc, gio_status_str(r->unreg_status), r->unreg_status);
	EXPECT(r->short_rc == -EIO && gio_status_sc(r->short_status) == GIO_SC_SGL_INVALID_DATA_LEN,
	       "short SGL: rc %d, %s (0x%04x)", r->short_rc, gio_status_str(r->short_status), r->short_status);
	EXPECT(r->lists_rc == 0 && r->lists_bad == 0, "lists (SGL segment, PRP1 and PRP2): rc %d, %s (0x%04x), %u bytes wrong",
	       r->lists_rc, gio_status_str(r->lists_status), r->lists_status, r->lists_bad);
	std::printf("   %llu commands verified, errors surfaced: %s | %s | %s; lists: 8 KiB through an SGL segment and back "
		    "through PRP1/PRP2, %u bytes wrong\n",
		    expect, gio_status_str(r->oob_status), gio_status_str(r->unreg_status), gio_status_str(r->short_status),
		    r->lists_bad);

	if (!fused_launch) {
		// Deadlines: nothing serves the rings now; the wait must end by its deadline (50 ms).
		int *rc;
		unsigned long long *waited;
		CK(cudaMallocManaged(&rc, sizeof(*rc)));
		CK(cudaMallocManaged(&waited, sizeof(*waited)));
		*rc = 1;
		deadline_probe<<<1, 1, 0, s>>>(&g->qps[0], addr, 50000000ull, rc, waited);
		CK(cudaGetLastError());
		for (int i = 0; i < 100 && cudaStreamQuery(s) == cudaErrorNotReady; i++)
			gio_host_sleep_ns(100000000ull);
		EXPECT(cudaStreamQuery(s) == cudaSuccess, "the deadline probe did not return within 10 s");
		CK(cudaStreamSynchronize(s));
		EXPECT(*rc == -ETIME && *waited >= 50000000ull && *waited < 2000000000ull,
		       "stopped executor: rc %d after %.1f ms (want -ETIME at 50 ms)", *rc, *waited / 1e6);
		std::printf("   stopped executor: wait returned %d after %.1f ms (deadline 50 ms)\n", *rc, *waited / 1e6);
		CK(cudaFree(rc));
		CK(cudaFree(waited));
	}
	EXPECT(gio_gpu_target_close(g) == 0, "close: %s", gio_last_error());
	CK(cudaStreamDestroy(s));
	CK(cudaFree(r));
	CK(cudaFree(finished));
	CK(cudaFree(buf));
	CK(cudaFree(unreg));
	CK(cudaFree(lists_raw));
}

void bad_uris()
{
	struct Case {
		const char *uri, *says;
	} cases[] = {
		{"mem://hbm", "size="},
		{"mem://hbm?size=1M&depth=1000", "depth=1000"},
		{"mem://hbm?size=1M&color=red", "unknown URI parameter 'color'"},
		{"mem://host?size=1M", "exec=gpu"},
		{"mem://hbm?size=1M&rings=disk", "rings=disk"},
		{"file:///tmp/x", "mem://hbm"},
		{"mem://hbm?size=10000", "not a multiple"},
		{"mem://hbm?size=1M&warps=17", "warps=17"}, // above GIO_GPU_EXEC_MAX_WARPS: the kernel would not launch
	};
	for (const Case &c : cases) {
		gio_gpu_target *g = reinterpret_cast<gio_gpu_target *>(0x1);
		const int rc = gio_gpu_target_open(c.uri, &g);
		EXPECT(rc == -EINVAL && g == nullptr && std::strstr(gio_last_error(), c.says),
		       "%s: rc %d, message '%s' (want -EINVAL naming '%s')", c.uri, rc, gio_last_error(), c.says);
	}
}

} // namespace

int main()
{
	skip_without_gpu();
	const char *f = std::getenv("GIO_GPU_FUSED");
	const bool fused_launch = f && *f == '1';
	const char *quick = std::getenv("GIO_GPU_QUICK");
	const bool small = quick && *quick == '1';
	bad_uris();
	if (small) {
		run("mem://hbm?size=4M&queues=2&depth=64&sms=1&warps=2", fused_launch);
		run("mem://host?exec=gpu&size=4M&queues=3&depth=32&sms=1&warps=4&rings=host", fused_launch);
	} else {
		run("mem://hbm?size=256M&queues=8&depth=256&sms=2&warps=4", fused_launch);
		run("mem://host?exec=gpu&size=128M&queues=6&depth=64&sms=2&warps=2&rings=host", fused_launch);
		run("mem://hbm?size=64M&queues=4&depth=8&sms=1&warps=8", fused_launch); // tiny rings: lanes submit alone
		// More than 8 warps a block: the executor's other build (128 registers a thread).
		run("mem://hbm?size=64M&queues=16&depth=64&sms=1&warps=12", fused_launch);
		run("mem://hbm?size=64M&queues=4&depth=256&sms=1&warps=4&model_read_gbps=2&model_write_gbps=1&model_lat_us=20",
		    fused_launch);
	}
	std::printf("%s: GPU producers x GPU-executed target (library), data verified, errors and deadlines checked\n",
		    failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
