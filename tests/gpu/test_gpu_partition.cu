// The SM partition (giouring/host/partition.h) on a real GPU: bad requests refused; the sizes
// follow the driver's granularity; each side's streams report their side's SMs; and while a
// persistent kernel spins on every SM of the I/O side, no block of a compute kernel launched on
// the compute side, directly or from a captured CUDA graph, runs on one of its SMs (%smid); with
// an executors' side too, the three share no SM and a GPU target's executor starts there. Then,
// measured and printed (not checked: a test does not time), a compute-bound and an HBM-bound
// kernel's time on the compute side with and without the spinner polling HBM, and how many SMs
// the same two kernels share without a partition.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "gpu_test.cuh"

#include <giouring/host/ctx.h>
#include <giouring/host/launch.h>
#include <giouring/host/partition.h>
#include <giouring/ring/clock.h>
#include <giouring/target/gpu_target.h>

namespace {

__device__ unsigned smid()
{
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}

__device__ unsigned long long now_ns()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// The I/O side's stand-in: every block records its SM, counts itself started (mapped host
// memory, written once), then polls a flag in HBM until it is set or 20 s pass.
__global__ void spinner(unsigned *sm_of_block, volatile unsigned *stop, unsigned *started)
{
	if (threadIdx.x == 0) {
		sm_of_block[blockIdx.x] = smid();
		__threadfence_system();
		atomicAdd_system(started, 1u);
	}
	const unsigned long long t0 = now_ns();
	while (!*stop && now_ns() - t0 < 20ull * 1000000000ull)
		__nanosleep(100);
}

// The compute side's blocks: each records its SM and does a little work so that the grid takes a
// while and spreads over every SM it may use.
__global__ void compute_blocks(unsigned *sm_of_block, float *sink)
{
	float a = threadIdx.x;
	for (int i = 0; i < 4096; i++)
		a = a * 1.000001f + 0.5f;
	if (threadIdx.x == 0)
		sm_of_block[blockIdx.x] = smid();
	if (a == 42.0f)
		sink[0] = a;
}

__global__ void set_flag(unsigned *flag)
{
	*flag = 1;
}

// Compute-bound: FMAs in registers.
__global__ void fma_kernel(float *out, int iters)
{
	float a = threadIdx.x * 0.001f, b = 1.0001f;
	for (int i = 0; i < iters; i++)
		a = fmaf(a, b, 0.0001f);
	out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// HBM-bound: a grid-stride copy.
__global__ void copy_kernel(const float4 *in, float4 *out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		out[i] = in[i];
}

std::set<unsigned> sms_of(const std::vector<unsigned> &v)
{
	return std::set<unsigned>(v.begin(), v.end());
}

size_t shared_count(const std::set<unsigned> &a, const std::set<unsigned> &b)
{
	size_t n = 0;
	for (unsigned s : a)
		n += b.count(s);
	return n;
}

struct spin_run {
	unsigned *d_sm = nullptr, *d_stop = nullptr, *h_started = nullptr;
	unsigned blocks = 0;
};

// Starts the spinner on `io` with `blocks` blocks and waits (bounded) until every block runs.
// `first`: nothing persistent runs yet, so the device may be synchronized before.
bool spin_start(spin_run &r, cudaStream_t io, unsigned blocks, bool first = true)
{
	r.blocks = blocks;
	CK(cudaMalloc(&r.d_sm, blocks * sizeof(unsigned)));
	CK(cudaMalloc(&r.d_stop, sizeof(unsigned)));
	CK(cudaMemset(r.d_stop, 0, sizeof(unsigned)));
	CK(cudaHostAlloc(&r.h_started, sizeof(unsigned), cudaHostAllocMapped));
	*(volatile unsigned *)r.h_started = 0;
	unsigned *d_started = nullptr;
	CK(cudaHostGetDevicePointer(&d_started, r.h_started, 0));
	if (first)
		CK(cudaDeviceSynchronize()); // nothing persistent runs yet
	else
		CK(cudaStreamSynchronize(io)); // the setup above, on the legacy stream, which io does not wait for
	spinner<<<blocks, 64, 0, io>>>(r.d_sm, r.d_stop, d_started);
	CK(cudaGetLastError());
	const uint64_t deadline = gio_deadline_in(10ull * 1000000000ull);
	while (*(volatile unsigned *)r.h_started < blocks && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(100000);
	return *(volatile unsigned *)r.h_started == blocks;
}

// Stops it from `other` (a kernel there sets the HBM flag) and returns the SMs it ran on.
std::vector<unsigned> spin_stop(spin_run &r, cudaStream_t io, cudaStream_t other)
{
	set_flag<<<1, 1, 0, other>>>(r.d_stop);
	CK(cudaGetLastError());
	EXPECT(sync_within(io, 30.0), "the spinner did not stop");
	std::vector<unsigned> sm(r.blocks);
	CK(cudaMemcpy(sm.data(), r.d_sm, r.blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
	CK(cudaFree(r.d_sm));
	CK(cudaFree(r.d_stop));
	CK(cudaFreeHost(r.h_started));
	return sm;
}

// Median time of `reps` launches of `launch` on `s`, in microseconds.
template <typename F> double median_us(cudaStream_t s, int reps, F launch)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	std::vector<float> t;
	launch(); // warm
	for (int i = 0; i < reps; i++) {
		CK(cudaEventRecord(a, s));
		launch();
		CK(cudaEventRecord(b, s));
		EXPECT(sync_within(s, 30.0), "a timed kernel did not finish");
		float ms = 0;
		CK(cudaEventElapsedTime(&ms, a, b));
		t.push_back(ms * 1000.0f);
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

void check_refusals(uint32_t device_sms)
{
	struct gio_sm_partition *p = nullptr;
	struct gio_sm_partition_params prm = {0, 0, 0, 0};
	int rc = gio_sm_partition_create(&prm, &p);
	EXPECT(rc == -EINVAL && !p, "io_sms 0: rc %d", rc);
	prm.io_sms = device_sms;
	rc = gio_sm_partition_create(&prm, &p);
	EXPECT(rc == -ERANGE && !p, "every SM for I/O: rc %d", rc);
	std::printf("all %u SMs for I/O: %d: %s\n", device_sms, rc, gio_last_error());
	EXPECT(std::strstr(gio_last_error(), "leave none") != nullptr, "the message names the problem: %s", gio_last_error());
	prm.io_sms = 8;
	prm.exec_sms = device_sms - 8;
	rc = gio_sm_partition_create(&prm, &p);
	EXPECT(rc == -ERANGE && !p, "I/O and executors take every SM: rc %d", rc);
	std::printf("8 I/O and %u executor SMs: %d: %s\n", device_sms - 8, rc, gio_last_error());
	EXPECT(std::strstr(gio_last_error(), "executor SMs") != nullptr, "the message names both: %s", gio_last_error());
	prm.exec_sms = 0;
	prm.device = 1000;
	rc = gio_sm_partition_create(&prm, &p);
	EXPECT(rc == -EINVAL && !p, "device 1000: rc %d", rc);
	prm.device = 0;
	prm.flags = 0x80;
	rc = gio_sm_partition_create(&prm, &p);
	EXPECT(rc == -EINVAL && !p, "unknown flags: rc %d", rc);
	EXPECT(gio_sm_partition_create(nullptr, &p) == -EINVAL, "NULL params");
	EXPECT(gio_sm_partition_adopt(nullptr, nullptr, &p) == -EINVAL, "adopt of NULL");
	EXPECT(gio_sm_partition_destroy(nullptr) == 0, "destroy of NULL");
	EXPECT(gio_sm_partition_stream(nullptr, GIO_SM_IO) == nullptr, "stream of NULL");
}

// Beside a running GPU executor, creation is refused at once (-EBUSY, the way out named): making
// green contexts then never returned on the H200 (bench/probe_torch_executors.py).
void check_refused_beside_executor()
{
	gio_gpu_target *g = nullptr;
	int rc = gio_gpu_target_open("mem://host?exec=gpu&size=4M&queues=1&depth=16&sms=1&warps=1", &g);
	EXPECT(rc == 0, "open a GPU target: %s", gio_last_error());
	if (rc)
		return;
	rc = gio_gpu_target_start(g);
	EXPECT(rc == 0, "start its executor: %s", gio_last_error());
	if (rc == 0) {
		struct gio_sm_partition *p = nullptr;
		struct gio_sm_partition_params prm = {0, 8, 0, 0};
		const uint64_t t0 = gio_now_ns();
		rc = gio_sm_partition_create(&prm, &p);
		std::printf("beside a running executor: %d after %.1f ms: %s\n", rc, (gio_now_ns() - t0) / 1e6, gio_last_error());
		EXPECT(rc == -EBUSY && !p, "refused beside a running executor: rc %d", rc);
		EXPECT(std::strstr(gio_last_error(), "before starting GPU-executed targets") != nullptr,
		       "the message says what to do: %s", gio_last_error());
		EXPECT(gio_gpu_target_stop(g, 10000, nullptr) == 0, "stop: %s", gio_last_error());
	}
	EXPECT(gio_gpu_target_close(g) == 0, "close: %s", gio_last_error());
}

// Three sides: I/O, executors and compute each on SMs of their own while spinners hold the first
// two; a GPU target's executor started on the executors' stream runs there (that stream is busy
// and the target's own idle), and stops.
void check_exec_side(int dev, uint32_t device_sms)
{
	struct gio_sm_partition *part = nullptr;
	struct gio_sm_partition_params prm = {dev, 8, 0, 5}; // 5: rounded up as I/O's
	int rc = gio_sm_partition_create(&prm, &part);
	EXPECT(rc == 0, "a partition with an executors' side: %d: %s", rc, gio_last_error());
	if (rc)
		return;
	struct gio_sm_partition_info info;
	EXPECT(gio_sm_partition_info(part, &info) == 0, "info");
	std::printf("three sides: I/O %u, executors %u, compute %u of %u SMs, isolated %u\n", info.io_sms, info.exec_sms,
		    info.compute_sms, info.device_sms, info.isolated);
	EXPECT(info.isolated == 1, "green contexts");
	EXPECT(info.exec_sms >= 5 && (info.alignment_sms == 0 || info.exec_sms % info.alignment_sms == 0),
	       "executor SMs %u", info.exec_sms);
	EXPECT(info.io_sms + info.exec_sms + info.compute_sms == device_sms, "every SM on one side: %u + %u + %u of %u",
	       info.io_sms, info.exec_sms, info.compute_sms, device_sms);
	cudaStream_t io = static_cast<cudaStream_t>(gio_sm_partition_stream(part, GIO_SM_IO));
	cudaStream_t ex = static_cast<cudaStream_t>(gio_sm_partition_stream(part, GIO_SM_EXEC));
	cudaStream_t comp = static_cast<cudaStream_t>(gio_sm_partition_stream(part, GIO_SM_COMPUTE));
	EXPECT(io && ex && comp && ex != io && ex != comp, "three streams");
	uint32_t n = 0;
	EXPECT(gio_stream_sm_count(ex, &n) == 0 && n == info.exec_sms, "the executors' stream's SMs: %u", n);
	EXPECT(gio_stream_sm_count(comp, &n) == 0 && n == info.compute_sms, "the compute stream's SMs: %u", n);

	const unsigned cblocks = 8 * device_sms;
	unsigned *d_csm = nullptr;
	float *d_sink = nullptr;
	CK(cudaMalloc(&d_csm, cblocks * sizeof(unsigned)));
	CK(cudaMalloc(&d_sink, sizeof(float)));
	CK(cudaMemset(d_csm, 0xff, cblocks * sizeof(unsigned)));
	spin_run ri, re;
	EXPECT(spin_start(ri, io, 2 * info.io_sms), "the I/O spinner started");
	EXPECT(spin_start(re, ex, 2 * info.exec_sms, false), "the executors' spinner started");
	compute_blocks<<<cblocks, 128, 0, comp>>>(d_csm, d_sink);
	CK(cudaGetLastError());
	EXPECT(sync_within(comp, 30.0), "the compute grid finished beside both spinners");
	const auto a = sms_of(spin_stop(ri, io, comp)), b = sms_of(spin_stop(re, ex, comp));
	std::vector<unsigned> csm(cblocks);
	CK(cudaMemcpy(csm.data(), d_csm, cblocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
	const auto c = sms_of(csm);
	std::printf("I/O spinner on %zu SMs, executors' spinner on %zu, compute blocks on %zu; shared: I/O-executors %zu, "
		    "executors-compute %zu, I/O-compute %zu\n",
		    a.size(), b.size(), c.size(), shared_count(a, b), shared_count(b, c), shared_count(a, c));
	EXPECT(shared_count(a, b) == 0 && shared_count(b, c) == 0 && shared_count(a, c) == 0, "the three sides share no SM");
	EXPECT(b.size() <= info.exec_sms && !c.count(0xffffffffu), "executors' spinner on %zu SMs of %u", b.size(),
	       info.exec_sms);
	CK(cudaFree(d_csm));
	CK(cudaFree(d_sink));

	EXPECT(gio_gpu_target_start_on(nullptr, ex) == -EINVAL, "start_on of NULL");
	// Two targets handed the one stream: each executor gets a stream of its own on those SMs
	// (on the one stream, the second would wait behind the first for ever).
	gio_gpu_target *g[2] = {nullptr, nullptr};
	for (int i = 0; i < 2; i++) {
		rc = gio_gpu_target_open("mem://host?exec=gpu&size=4M&queues=1&depth=16&sms=1&warps=1", &g[i]);
		EXPECT(rc == 0, "open GPU target %d: %s", i, gio_last_error());
		if (rc)
			break;
		rc = gio_gpu_target_start_on(g[i], ex);
		EXPECT(rc == 0, "start executor %d on the executors' side: %s", i, gio_last_error());
		if (rc)
			break;
		EXPECT(g[i]->exec_stream && g[i]->exec_stream != ex && g[i]->exec_stream != g[i]->stream,
		       "executor %d on a stream of its own", i);
		EXPECT(gio_stream_sm_count(g[i]->exec_stream, &n) == 0 && n == info.exec_sms,
		       "executor %d's stream on the executors' %u SMs: %u", i, info.exec_sms, n);
		EXPECT(cudaStreamQuery(static_cast<cudaStream_t>(g[i]->exec_stream)) == cudaErrorNotReady, "executor %d runs", i);
		EXPECT(cudaStreamQuery(static_cast<cudaStream_t>(g[i]->stream)) == cudaSuccess,
		       "target %d's own stream holds no executor", i);
		EXPECT(gio_gpu_target_start_on(g[i], ex) == -EBUSY, "a second start of %d is refused", i);
	}
	if (g[0] && g[1])
		EXPECT(g[0]->exec_stream != g[1]->exec_stream, "the two executors on two streams");
	for (int i = 1; i >= 0; i--) // the second first: it must have started, not wait behind the first
		if (g[i]) {
			EXPECT(gio_gpu_target_stop(g[i], 10000, nullptr) == 0, "stop executor %d: %s", i, gio_last_error());
			EXPECT(g[i]->exec_stream == g[i]->stream, "executor %d's stream given back", i);
			EXPECT(gio_gpu_target_close(g[i]) == 0, "close %d: %s", i, gio_last_error());
		}
	EXPECT(cudaStreamQuery(ex) == cudaSuccess, "the partition's executors' stream was never used");
	rc = gio_sm_partition_destroy(part);
	EXPECT(rc == 0, "destroy the three sides: %d: %s", rc, gio_last_error());
}

} // namespace

int main()
{
	skip_without_gpu();
	int dev = 0, sms_attr = 0;
	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetAttribute(&sms_attr, cudaDevAttrMultiProcessorCount, dev));
	const uint32_t device_sms = (uint32_t)sms_attr;
	for (const void *k : {(const void *)spinner, (const void *)compute_blocks, (const void *)set_flag,
			      (const void *)fma_kernel, (const void *)copy_kernel})
		if (gio_gpu_preload(k)) { // no lazy load may wait behind the spinner
			std::printf("FAIL: preload: %s\n", gio_last_error());
			return 1;
		}
	check_refusals(device_sms);
	check_refused_beside_executor();

	struct gio_sm_partition *part = nullptr;
	struct gio_sm_partition_params prm = {dev, 3, 0, 0}; // 3: rounded up to the granularity
	int rc = gio_sm_partition_create(&prm, &part);
	if (rc) {
		std::printf("FAIL: gio_sm_partition_create: %d: %s\n", rc, gio_last_error());
		return 1;
	}
	struct gio_sm_partition_info info;
	EXPECT(gio_sm_partition_info(part, &info) == 0, "info");
	std::printf("partition: device %u SMs, I/O %u, compute %u, minSmPartitionSize %u, smCoscheduledAlignment %u, "
		    "isolated %u\n",
		    info.device_sms, info.io_sms, info.compute_sms, info.min_partition_sms, info.alignment_sms, info.isolated);
	EXPECT(info.isolated == 1, "green contexts on this GPU");
	EXPECT(info.device_sms == device_sms, "device SMs %u, attribute %u", info.device_sms, device_sms);
	EXPECT(info.io_sms >= 3 && info.io_sms >= info.min_partition_sms, "I/O SMs %u", info.io_sms);
	EXPECT(info.alignment_sms == 0 || info.io_sms % info.alignment_sms == 0, "I/O SMs %u in multiples of %u",
	       info.io_sms, info.alignment_sms);
	EXPECT(info.compute_sms > 0 && info.io_sms + info.compute_sms <= device_sms, "compute SMs %u", info.compute_sms);

	cudaStream_t io = static_cast<cudaStream_t>(gio_sm_partition_stream(part, GIO_SM_IO));
	cudaStream_t comp = static_cast<cudaStream_t>(gio_sm_partition_stream(part, GIO_SM_COMPUTE));
	EXPECT(io && comp && io != comp, "two streams");
	uint32_t n = 0;
	EXPECT(gio_stream_sm_count(io, &n) == 0 && n == info.io_sms, "the I/O stream's SMs: %u", n);
	EXPECT(gio_stream_sm_count(comp, &n) == 0 && n == info.compute_sms, "the compute stream's SMs: %u", n);
	EXPECT(gio_stream_sm_count(nullptr, &n) == 0 && n == device_sms, "the default stream's SMs: %u", n);
	void *extra = nullptr;
	EXPECT(gio_sm_partition_stream_create(part, GIO_SM_IO, 0, &extra) == 0 && extra, "one more I/O stream: %s",
	       gio_last_error());
	EXPECT(gio_stream_sm_count(extra, &n) == 0 && n == info.io_sms, "the extra stream's SMs: %u", n);
	EXPECT(gio_sm_partition_stream_create(part, (enum gio_sm_side)7, 0, &extra) == -EINVAL, "an unknown side");
	EXPECT(info.exec_sms == 0 && gio_sm_partition_stream(part, GIO_SM_EXEC) == nullptr, "no executors' side unasked");
	void *none = nullptr;
	EXPECT(gio_sm_partition_stream_create(part, GIO_SM_EXEC, 0, &none) == -EINVAL && !none, "no executors' stream");

	const unsigned cblocks = 8 * device_sms;
	unsigned *d_csm = nullptr;
	float *d_sink = nullptr;
	CK(cudaMalloc(&d_csm, cblocks * sizeof(unsigned)));
	CK(cudaMalloc(&d_sink, sizeof(float)));
	std::vector<unsigned> csm(cblocks);

	// Isolation, with the compute grid launched directly, then from a graph captured on its stream.
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	CK(cudaStreamBeginCapture(comp, cudaStreamCaptureModeThreadLocal));
	compute_blocks<<<cblocks, 128, 0, comp>>>(d_csm, d_sink);
	CK(cudaStreamEndCapture(comp, &graph));
	CK(cudaGraphInstantiate(&exec, graph, 0));
	for (int from_graph = 0; from_graph < 2; from_graph++) {
		spin_run r;
		const unsigned spin_blocks = 2 * info.io_sms; // more than one per SM: all must fit the side
		const bool all = spin_start(r, io, spin_blocks);
		EXPECT(all, "every spinner block started in 10 s");
		CK(cudaMemset(d_csm, 0xff, cblocks * sizeof(unsigned)));
		if (from_graph)
			CK(cudaGraphLaunch(exec, comp));
		else
			compute_blocks<<<cblocks, 128, 0, comp>>>(d_csm, d_sink);
		CK(cudaGetLastError());
		EXPECT(sync_within(comp, 30.0), "the compute grid finished beside the spinner");
		const std::vector<unsigned> ssm = spin_stop(r, io, comp);
		CK(cudaMemcpy(csm.data(), d_csm, cblocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
		const auto a = sms_of(ssm), b = sms_of(csm);
		const size_t shared = shared_count(a, b);
		std::printf("%s: spinner on %zu SMs, compute blocks on %zu SMs, shared %zu\n",
			    from_graph ? "graph captured on the compute stream" : "direct launch", a.size(), b.size(), shared);
		EXPECT(shared == 0, "no compute block on a spinner's SM (%zu shared)", shared);
		EXPECT(a.size() <= info.io_sms, "spinner on %zu SMs, the side has %u", a.size(), info.io_sms);
		EXPECT(b.size() <= info.compute_sms && b.size() > info.compute_sms / 2,
		       "compute blocks on %zu SMs, the side has %u", b.size(), info.compute_sms);
		EXPECT(!b.count(0xffffffffu), "every compute block recorded its SM");
	}
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));

	// Measured, not checked: the compute side's kernels with and without the spinner.
	const size_t copy_n = (256u << 20) / sizeof(float4);
	float4 *d_in = nullptr, *d_out = nullptr;
	float *d_fma = nullptr;
	CK(cudaMalloc(&d_in, copy_n * sizeof(float4)));
	CK(cudaMalloc(&d_out, copy_n * sizeof(float4)));
	CK(cudaMemset(d_in, 1, copy_n * sizeof(float4)));
	CK(cudaMalloc(&d_fma, (size_t)info.compute_sms * 4 * 256 * sizeof(float)));
	auto fma = [&] { fma_kernel<<<info.compute_sms * 4, 256, 0, comp>>>(d_fma, 20000); };
	auto copy = [&] { copy_kernel<<<info.compute_sms * 4, 256, 0, comp>>>(d_in, d_out, copy_n); };
	const int reps = 15;
	double t[2][2];
	for (int spinning = 0; spinning < 2; spinning++) {
		spin_run r;
		if (spinning)
			EXPECT(spin_start(r, io, info.io_sms), "the spinner started");
		t[spinning][0] = median_us(comp, reps, fma);
		t[spinning][1] = median_us(comp, reps, copy);
		if (spinning)
			spin_stop(r, io, comp);
	}
	std::printf("\n| compute-side kernel (%u SMs), medians of %d, measured | I/O side idle | I/O side polling HBM (%u SMs) | "
		    "change |\n|---|---:|---:|---:|\n",
		    info.compute_sms, reps, info.io_sms);
	const char *names[2] = {"FMA-bound", "HBM copy 256 MiB"};
	for (int k = 0; k < 2; k++)
		std::printf("| %s | %.1f us | %.1f us | %+.1f%% |\n", names[k], t[0][k], t[1][k],
			    100.0 * (t[1][k] - t[0][k]) / t[0][k]);

	// Without a partition: the same spinner and grid on ordinary streams share SMs.
	{
		cudaStream_t a, b;
		CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
		CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
		spin_run r;
		EXPECT(spin_start(r, a, info.io_sms), "the spinner started on an ordinary stream");
		compute_blocks<<<cblocks, 128, 0, b>>>(d_csm, d_sink);
		CK(cudaGetLastError());
		EXPECT(sync_within(b, 30.0), "the compute grid finished");
		const auto ssm = sms_of(spin_stop(r, a, b));
		CK(cudaMemcpy(csm.data(), d_csm, cblocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
		std::printf("\nwithout a partition (ordinary streams): spinner on %zu SMs, compute blocks on %zu SMs, shared "
			    "%zu\n",
			    ssm.size(), sms_of(csm).size(), shared_count(ssm, sms_of(csm)));
		CK(cudaStreamDestroy(a));
		CK(cudaStreamDestroy(b));
	}

	CK(cudaStreamDestroy(static_cast<cudaStream_t>(extra)));
	CK(cudaFree(d_in));
	CK(cudaFree(d_out));
	CK(cudaFree(d_fma));
	CK(cudaFree(d_csm));
	CK(cudaFree(d_sink));
	rc = gio_sm_partition_destroy(part);
	EXPECT(rc == 0, "destroy: %d: %s", rc, gio_last_error());

	check_exec_side(dev, device_sms);

	// The fallback flag leaves a working partition either way; here green contexts exist.
	prm.flags = GIO_SM_PARTITION_FALLBACK;
	rc = gio_sm_partition_create(&prm, &part);
	EXPECT(rc == 0, "with the fallback flag: %d: %s", rc, gio_last_error());
	if (!rc) {
		EXPECT(gio_sm_partition_info(part, &info) == 0 && info.isolated == 1, "still isolated");
		EXPECT(gio_sm_partition_destroy(part) == 0, "destroy");
	}
	std::printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
