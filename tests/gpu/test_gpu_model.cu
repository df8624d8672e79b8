// The GPU target's SSD timing model (giouring/target/gpu_target.h) holds completions to the
// modelled time, from below and from above: reads alone at the read bandwidth, writes alone at
// the write bandwidth, and reads and writes in flight at once (on different queues of one device)
// at the mixed bandwidth for both, as a drive's reads and writes share it (Tutti measured 29 GB/s
// read, 12 write, about 12 in all when mixed). Without model_mixed_gbps the mixed figure is the
// smaller of the two. Every figure here is modelled. Exits 77 without a GPU.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "gpu_test.cuh"
#include <giouring/device/verbs.cuh>
#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/proto/sgl_build.h>
#include <giouring/target/gpu_target.h>

namespace {

const uint32_t kObj = 128u << 10, kLbaShift = 12, kWarps = 4, kPerWarp = 256;
const double kBytes = (double)kWarps * kPerWarp * kObj;

enum Mix { kReads = 0, kWrites = 1, kBoth = 2 };

// Warp w moves kPerWarp objects through queue w, 32 at a time; in kBoth the even warps read and
// the odd ones write, at the same time.
__global__ void movers(gio_qp *qps, uint64_t addr, int mix, unsigned long long *errors)
{
	const uint32_t warp = threadIdx.x / 32u, lane = threadIdx.x & 31u;
	gio_qp *qp = &qps[warp];
	const int write = mix == kWrites || (mix == kBoth && (warp & 1u));
	const uint64_t deadline = gio_deadline_in(30ull * 1000000000ull);
	for (uint32_t i = 0; i < kPerWarp; i += 32) {
		const uint32_t obj = warp * kPerWarp + i + lane;
		gio_sqe sqe;
		uint32_t cid = 0;
		uint16_t st = 0;
		const uint64_t slba = (uint64_t)obj * (kObj >> kLbaShift);
		if (write)
			gio_prep_write(&sqe, GIO_TGT_NSID, slba, kObj >> kLbaShift);
		else
			gio_prep_read(&sqe, GIO_TGT_NSID, slba, kObj >> kLbaShift);
		gio_sqe_set_sgl_data(&sqe, addr + (uint64_t)obj * kObj, kObj);
		int rc = gio_submit_warp(qp, &sqe, 0, 0, 1, deadline, &cid);
		if (rc == 0)
			rc = gio_wait_warp(qp, cid, 1, deadline, &st);
		if (rc || st)
			atomicAdd(errors, 1ull);
	}
}

// Seconds one mix takes on target g, from the launch to the last completion.
double time_mix(gio_gpu_target *g, uint64_t addr, int mix, cudaStream_t s, unsigned long long *errors)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventRecord(a, s));
	movers<<<1, 32 * kWarps, 0, s>>>(g->qps, addr, mix, errors);
	CK(cudaGetLastError());
	CK(cudaEventRecord(b, s));
	if (!sync_within(s, 60.0)) {
		std::printf("FAIL: the movers did not finish in 60 s\n");
		std::exit(1);
	}
	float ms = 0;
	CK(cudaEventElapsedTime(&ms, a, b));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return ms / 1e3;
}

void run(const char *uri)
{
	std::printf("== %s\n", uri);
	gio_gpu_target *g = nullptr;
	if (gio_gpu_target_open(uri, &g)) {
		std::printf("FAIL: open: %s\n", gio_last_error());
		std::exit(1);
	}
	const gio_ssd_model m = g->cfg.model;
	unsigned char *buf;
	unsigned long long *errors;
	CK(cudaMalloc(&buf, (size_t)kBytes));
	CK(cudaMallocManaged(&errors, sizeof(*errors)));
	*errors = 0;
	uint64_t addr = 0;
	EXPECT(gio_gpu_target_register(g, buf, (size_t)kBytes, &addr) == 0, "register: %s", gio_last_error());
	EXPECT(gio_gpu_preload((const void *)movers) == 0, "preload: %s", gio_last_error());
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	EXPECT(gio_gpu_target_start(g) == 0, "start: %s", gio_last_error());
	time_mix(g, addr, kWrites, s, errors); // warm: every object written once, every path taken
	const char *names[3] = {"reads alone", "writes alone", "reads and writes at once"};
	const double gbps[3] = {m.read_gbps, m.write_gbps, m.mixed_gbps};
	for (int mix = 0; mix < 3; mix++) {
		const double secs = time_mix(g, addr, mix, s, errors);
		// The model's time: every byte through the one bandwidth that applies (the first round of
		// a mix cannot know that the other direction follows: a few percent at a faster rate).
		// Its latency overlaps the transfers; the bound from above allows it once per round.
		const double want = kBytes / (gbps[mix] * 1e9), rounds = kPerWarp / 32;
		std::printf("   %-26s %6.1f ms, modelled %6.1f ms (%.2f GB/s), %.2f GB/s seen (modelled)\n", names[mix],
			    secs * 1e3, want * 1e3, gbps[mix], kBytes / secs / 1e9);
		EXPECT(secs >= 0.9 * want, "%s took %.1f ms, under the model's %.1f ms", names[mix], secs * 1e3, want * 1e3);
		// From above: the executor's own cost is far below these milliseconds on one device.
		EXPECT(secs <= 1.5 * want + rounds * m.lat_us * 1e-6 + 2e-3, "%s took %.1f ms, over 1.5 x the model's %.1f ms", names[mix], secs * 1e3,
		       want * 1e3);
	}
	gio_tgt_stats ts{};
	EXPECT(gio_gpu_target_stop(g, 10000, &ts) == 0, "stop: %s", gio_last_error());
	EXPECT(*errors == 0 && ts.errors == 0, "%llu commands failed (target: %llu)", *errors,
	       (unsigned long long)ts.errors);
	CK(cudaStreamDestroy(s));
	CK(cudaFree(buf));
	CK(cudaFree(errors));
	EXPECT(gio_gpu_target_close(g) == 0, "close: %s", gio_last_error());
}

} // namespace

int main()
{
	skip_without_gpu();
	run("mem://hbm?size=256M&queues=4&depth=64&sms=1&warps=4&model_read_gbps=4&model_write_gbps=2&model_mixed_gbps=1"
	    "&model_lat_us=20");
	run("mem://hbm?size=256M&queues=4&depth=64&sms=1&warps=4&model_read_gbps=4&model_write_gbps=2&model_lat_us=20");
	std::printf("%s: the SSD timing model, reads, writes and both at once (modelled)\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
