// bench_sched: the slack-aware I/O scheduler (giouring/sched/issue.h) against naive overlap, on
// the GPU, through the KV layer's calls. A store over 4 modelled drives (GPU-executed memory
// targets with the SSD timing model: read, write and mixed bandwidths of one Gen5 drive each;
// figures MODELLED where they depend on the drives, the data really moves over PCIe), a stand-in
// compute kernel per layer, and a prefill of `--input` new tokens over a `--prefix` token prefix
// that is in the store: while layer l computes, layer l + 1's prefix KV is loaded, and the new
// KV of the layers already computed is saved (deferred writes).
//
//   naive: at each layer's start, the next layer's load on one I/O stream and every save that is
//          ready on another: reads and writes share the drives (the model's mixed bandwidth).
//   sched: gio_sched_issue() per layer: the load first, then the deferred saves that fit in the
//          layer's slack (the profile's compute time), on one I/O stream, never beside a read;
//          what does not fit waits in the bounded backlog and drains in the decode steps.
//
// The stand-in compute kernel spins for a layer time given by a bilinear cost in (input, prefix)
// through four prefill times of one Llama3-8B layer measured on an H200 with PyTorch SDPA (new
// tokens 1K/4K x prefix 8K/32K: 1.49, 4.84, 2.83, 9.82 ms); the scheduler never sees that
// formula: it reads the slack from a profile that gio_sched_profile_run() measures first with
// CUDA events around the same kernels (its cost is reported), written to a file and read back,
// and recalibrated online from each request's measured layer times (gio_sched_profile_observe()).
//
// Measured on the GPU's clock (%globaltimer stamps on the streams): each layer's bubble (its
// compute waiting for its load), prefill time, read bandwidth, the writes still pending over time
// (bytes computed but not yet on the drives), the drain after the last request; on the host: the
// issuing thread's CPU per slot, the backlog's bounds. Beside them, the scheduler's own
// prediction (modelled). Every load and every saved chunk is verified byte for byte. The I/O
// kernels run on an I/O partition of 8 SMs (green contexts, giouring/host/partition.h), compute
// on the rest (ordinary streams where green contexts are unavailable: said in the output).
// Markdown on stdout, JSON with --json. Exits 77 without a GPU.
//
//   bench_sched [--quick] [--prefix N] [--input N,N] [--requests N] [--decode-steps N]
//               [--decode-ms X] [--reps N] [--read-gbps X] [--write-gbps X] [--mixed-gbps X]
//               [--io-sms N] [--slot-sms N] [--no-partition] [--json FILE]
//
// --slot-sms N gives every slot an SM budget of N (clamped to the I/O SMs): the slot's I/O
// kernels then run on at most N SMs (gio_kv_layer_launch()). --decode-steps 0 runs requests back
// to back: sustained eviction, where the bounded backlog reports back-pressure.
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <giouring/host/launch.h>
#include <giouring/host/partition.h>
#include <giouring/kv/layer.cuh>
#include <giouring/sched/issue.cuh>
#include <giouring/sched/profiler.h>

#include "common/check.cuh"
#include "common/cli.cuh"
#include "common/gpu_store.cuh"
#include "common/json.cuh"
#include "common/machine.cuh"
#include "common/timing.cuh"

namespace {

constexpr uint32_t kTokens = 16, kHeads = 8, kDim = 128; // Llama3-8B: a block of 16 tokens, 8 KV heads
constexpr uint64_t kSecond = 1000000000ull;

struct Opts {
	bool quick = false, partition = true;
	uint32_t layers = 32, prefix = 16384, requests = 3, decode_steps = 16, reps = 2, io_sms = 8, targets = 4;
	uint32_t slot_sms = 0; // every slot's SM budget; 0: none (the profile's, else all io_sms)
	std::vector<uint32_t> inputs{2048, 512};
	double decode_ms = 1.5, read_gbps = 7.25, write_gbps = 3.0, mixed_gbps = 3.0, lat_us = 20.0;
	const char *json = nullptr;
};

// The stand-in's layer time: bilinear in (input, prefix) through the four measured points.
uint64_t standin_ns(uint32_t input, uint32_t prefix)
{
	const double n = input / 1024.0, p = prefix / 1024.0;
	return (uint64_t)(1e6 * (0.331 + 0.712 * n + 0.00528 * p + 0.0506 * n * p));
}

__device__ __host__ uint32_t pattern(uint32_t block, uint32_t layer, uint64_t k)
{
	uint32_t x = (block + 1) * 2654435761u ^ (layer << 22) ^ (uint32_t)(k * 0x9e3779b9u);
	x ^= x >> 15;
	return x * 0x2c1b3c6du;
}

// Every object (layer, block) of the pool gets pattern(block, layer, word).
__global__ void fill(uint32_t *pool, uint32_t layers, uint32_t blocks, uint64_t obj_words)
{
	const uint64_t n = (uint64_t)layers * blocks * obj_words;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint64_t o = i / obj_words;
		pool[i] = pattern((uint32_t)(o % blocks), (uint32_t)(o / blocks), i % obj_words);
	}
}

// Blocks [0, nblocks) of every layer must hold pattern(src + block, layer, word): counts wrong words.
__global__ void verify(const uint32_t *pool, uint32_t layers, uint32_t blocks, uint64_t obj_words, uint32_t nblocks,
		       uint32_t src, unsigned long long *wrong)
{
	const uint64_t n = (uint64_t)layers * nblocks * obj_words;
	unsigned long long bad = 0;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint64_t o = i / obj_words;
		const uint32_t layer = (uint32_t)(o / nblocks), b = (uint32_t)(o % nblocks);
		bad += pool[((uint64_t)layer * blocks + b) * obj_words + i % obj_words] != pattern(src + b, layer, i % obj_words);
	}
	if (bad)
		atomicAdd(wrong, bad);
}

// The stand-in compute kernel: every block holds its SM for ns; block 0 stamps start and end.
__global__ void standin(uint64_t ns, unsigned long long *start, unsigned long long *end)
{
	if (threadIdx.x == 0) {
		const uint64_t t0 = gio_now_ns();
		if (blockIdx.x == 0 && start)
			*start = t0;
		while (gio_now_ns() < t0 + ns)
			__nanosleep(2000);
		if (blockIdx.x == 0 && end)
			*end = gio_now_ns();
	}
	__syncthreads();
}

__global__ void stamp(unsigned long long *t)
{
	*t = gio_now_ns();
}

constexpr unsigned kStandinBlocks = 64;

// The profiler's step: the stand-in's layers one after another on the compute stream, each
// timed with CUDA events (as an engine would time its layers).
struct ProfileStep {
	cudaStream_t comp;
	std::vector<cudaEvent_t> ev; // layers + 1
};

int profile_step(void *arg, uint32_t input, uint32_t prefix, uint64_t *layer_ns, uint32_t layers)
{
	ProfileStep *ps = static_cast<ProfileStep *>(arg);
	KV_CK(cudaEventRecord(ps->ev[0], ps->comp));
	for (uint32_t l = 0; l < layers; l++) {
		standin<<<kStandinBlocks, 128, 0, ps->comp>>>(standin_ns(input, prefix), nullptr, nullptr);
		KV_CK(cudaEventRecord(ps->ev[l + 1], ps->comp));
	}
	if (kv_wait_event(ps->ev[layers], 60) != 0)
		return -ETIME;
	for (uint32_t l = 0; l < layers; l++) {
		float ms = 0;
		KV_CK(cudaEventElapsedTime(&ms, ps->ev[l], ps->ev[l + 1]));
		layer_ns[l] = (uint64_t)(ms * 1e6);
	}
	return 0;
}

// GPU-clock stamps of one run, in pinned host memory the kernels write.
struct Stamps {
	unsigned long long *req0;       // [requests]: the request's first load issued
	unsigned long long *lend;       // [requests][layers]: load of the layer ended
	unsigned long long *cstart;     // [requests][layers]: the layer's compute started
	unsigned long long *cend;       // [requests][layers]
	unsigned long long *sstart;     // [requests][layers]: save of the layer launched
	unsigned long long *send;       // [requests][layers]: save ended
	unsigned long long *dend;       // [requests][decode steps]: a decode step ended
	unsigned long long *drain_end;  // after the last request: the forced drain ended
	size_t words = 0;
};

struct Mode {
	const char *name;
	bool sched;
};

// What one run (a workload in one mode) measured.
struct RunResult {
	std::string mode;
	uint32_t input = 0, rep = 0;
	std::vector<double> prefill_ms, bubble_ms, first_ms, read_gbps; // per request
	std::vector<double> bubble_layer_ms;                           // per layer, mean over requests
	double predicted_bubble_ms = 0;                                // per request, mean (the model)
	double cpu_us_per_slot = 0, drain_ms = 0, written_in_prefill = 0;
	uint64_t pending_high = 0, backlog_high_items = 0, backlog_high_bytes = 0, refused = 0, pressured = 0, stalls = 0;
	uint64_t saved_bytes = 0;
	std::vector<std::pair<double, double>> pending; // (ms from the run's start, MiB pending)
};

struct Bench {
	Opts o;
	kv_gpu_store_params sp{};
	kv_gpu_store gs;
	uint32_t pb = 0, nb_max = 0, blocks = 0; // prefix blocks, most new blocks, pool blocks
	cudaStream_t comp = nullptr, io = nullptr, io2 = nullptr;
	gio_sm_partition *part = nullptr;
	struct gio_sm_partition_info pinfo{};
	uint32_t io_ctas = 8;
	gio_kv_plan *load = nullptr;
	std::vector<gio_kv_plan *> saves;
	gio_sched_config cfg{};
	gio_sched_profile *prof = nullptr;
	gio_sched_profile_stats pstats{};
	std::vector<gio_kv_u128> prefix_keys;
	std::vector<uint32_t> prefix_blocks;
	unsigned long long *wrong = nullptr;
	uint64_t run_id = 0;
	// The launcher's state for the slot being issued.
	Stamps st{};
	uint32_t cur_req = 0;
	std::vector<cudaEvent_t> ev_lend, ev_cstart, ev_cend; // [requests][layers]
	std::vector<uint32_t> save_layers_issued;
	cudaStream_t write_stream = nullptr;
};

void die_gio(const char *what)
{
	kv_die("bench_sched: %s: %s", what, gio_last_error());
}

size_t at(const Bench &b, uint32_t r, uint32_t l)
{
	return (size_t)r * b.o.layers + l;
}

// The gio_sched_launch_fn of both modes: a load on the I/O stream, stamped and recorded for the
// compute stream to wait on; a save on the write stream (the same stream in sched mode) after
// its layer was computed, stamped before and after; each on at most the slot's sm SMs.
int launch(void *arg, gio_kv_plan *plan, uint32_t layer, int write, uint32_t sm)
{
	Bench &b = *static_cast<Bench *>(arg);
	if (!write) {
		const int rc = gio_kv_layer_launch(plan, layer, 0, b.io, sm);
		if (rc)
			return rc;
		stamp<<<1, 1, 0, b.io>>>(&b.st.lend[at(b, b.cur_req, layer)]);
		KV_CK(cudaEventRecord(b.ev_lend[at(b, b.cur_req, layer)], b.io));
		return 0;
	}
	uint32_t r = 0;
	while (r < b.saves.size() && b.saves[r] != plan)
		r++;
	if (r == b.saves.size())
		kv_die("bench_sched: a save of no request");
	KV_CK(cudaStreamWaitEvent(b.write_stream, b.ev_cend[at(b, r, layer)], 0));
	stamp<<<1, 1, 0, b.write_stream>>>(&b.st.sstart[at(b, r, layer)]);
	const int rc = gio_kv_layer_launch(plan, layer, 1, b.write_stream, sm);
	if (rc)
		return rc;
	stamp<<<1, 1, 0, b.write_stream>>>(&b.st.send[at(b, r, layer)]);
	b.save_layers_issued[r]++;
	return 0;
}

// Bytes each device moves per layer of the plan's open batch (its requests' devices).
void plan_dev_bytes(const Bench &, const gio_kv_plan *plan, uint64_t *bytes)
{
	if (gio_kv_plan_layer_bytes(plan, bytes, GIO_SCHED_DEVS_MAX))
		die_gio("plan layer bytes");
}

void wait_streams(Bench &b, const char *what)
{
	cudaEvent_t e;
	KV_CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	for (cudaStream_t s : {b.comp, b.io, b.io2}) {
		KV_CK(cudaEventRecord(e, s));
		if (kv_wait_event(e, 120) != 0)
			kv_die("bench_sched: %s did not finish in 120 s", what);
	}
	KV_CK(cudaEventDestroy(e));
}

gio_kv_u128 new_key(uint64_t run, uint32_t r, uint32_t j)
{
	return gio_kv_u128{0x9e3779b97f4a7c15ull * (run * 1000003ull + r * 4099ull + j + 1), (1ull << 63) | run << 32 | r << 20 | j};
}

// Finishes save plan r (every layer was issued): waits and checks every request.
void finish_save(Bench &b, uint32_t r, uint32_t nb)
{
	std::vector<gio_kv_io_result> res(nb);
	if (gio_kv_plan_finish(b.saves[r], res.data(), 30 * kSecond))
		die_gio("save finish");
	for (uint32_t j = 0; j < nb; j++)
		if (res[j].rc)
			kv_die("bench_sched: save of request %u chunk %u: rc %d, NVMe status 0x%x, layer %u", r, j, res[j].rc,
			       res[j].status, res[j].layer);
}

// One backlog item per save layer; where the backlog is full, the engine stalls: forced drain
// slots (decode slots without compute) until it fits.
void push_item(Bench &b, gio_sched_issuer &is, RunResult &rr, uint32_t r, uint32_t l, const uint64_t *dev_bytes)
{
	gio_sched_item it{};
	it.id = gio_sched_save_id(r, l);
	for (uint32_t d = 0; d < b.cfg.ndevs; d++)
		it.bytes[d] = dev_bytes[d];
	for (;;) {
		const int rc = gio_sched_backlog_push(is.backlog, &it);
		if (rc >= 0)
			return;
		if (rc != -EAGAIN)
			kv_die("bench_sched: backlog push: %d", rc);
		gio_sched_slot slot{};
		slot.phase = GIO_SCHED_DECODE;
		gio_sched_write w[8];
		gio_sched_decision dec;
		if (gio_sched_issue(&is, &slot, nullptr, 0, w, 8, &dec))
			die_gio("stall drain");
		rr.stalls++;
	}
}

RunResult run(Bench &b, const Mode &m, uint32_t input, uint32_t rep)
{
	const Opts &o = b.o;
	const uint32_t L = o.layers, R = o.requests, D = o.decode_steps, nb = input / kTokens;
	const uint64_t run_id = ++b.run_id;
	RunResult rr;
	rr.mode = m.name;
	rr.input = input;
	rr.rep = rep;
	std::memset(b.st.req0, 0, b.st.words * sizeof(unsigned long long));
	std::fill(b.save_layers_issued.begin(), b.save_layers_issued.end(), 0u);
	b.write_stream = m.sched ? b.io : b.io2;
	std::vector<gio_sched_item> ring(R * L + 8);
	gio_sched_backlog bl;
	const uint64_t per_request = (uint64_t)nb * b.gs.obj * L;
	// The bound: two requests' new KV; above one, pressure.
	if (gio_sched_backlog_init(&bl, ring.data(), (uint32_t)ring.size(), 2 * per_request, per_request))
		kv_die("bench_sched: backlog init");
	gio_sched_issuer is{&b.cfg, &bl, b.saves.data(), R, launch, &b, 10 * kSecond};
	std::vector<gio_sched_write> w(R * L + 8);
	double cpu = 0;
	uint64_t slots = 0;
	double predicted = 0;
	std::vector<uint64_t> save_bytes(GIO_SCHED_DEVS_MAX);
	std::vector<double> bubble_layer(L, 0.0);
	const uint64_t layer_ns = standin_ns(input, o.prefix), decode_ns = (uint64_t)(o.decode_ms * 1e6);
	gio_sched_decision prev{};
	for (uint32_t r = 0; r < R; r++) {
		b.cur_req = r;
		// Untimed: the prefix's pool blocks cleared, both batches planned.
		for (uint32_t l = 0; l < L; l++)
			KV_CK(cudaMemsetAsync(b.gs.pool + ((uint64_t)l * b.blocks) * b.gs.obj, 0xa5, (uint64_t)b.pb * b.gs.obj, b.comp));
		if (gio_kv_plan_load(b.load, b.prefix_keys.data(), b.prefix_blocks.data(), b.pb, nullptr) != (int)b.pb)
			die_gio("plan load: the prefix must hit");
		std::vector<gio_kv_u128> keys(nb);
		std::vector<uint32_t> blks(nb);
		for (uint32_t j = 0; j < nb; j++) {
			keys[j] = new_key(run_id, r, j);
			blks[j] = b.pb + j;
		}
		if (gio_kv_plan_save(b.saves[r], keys.data(), blks.data(), nb, nullptr) != (int)nb)
			die_gio("plan save");
		uint64_t load_dev[GIO_SCHED_DEVS_MAX], save_dev[GIO_SCHED_DEVS_MAX];
		plan_dev_bytes(b, b.load, load_dev);
		plan_dev_bytes(b, b.saves[r], save_dev);
		wait_streams(b, "the memset");
		// Layer 0's load: nothing to hide behind.
		stamp<<<1, 1, 0, b.io>>>(&b.st.req0[r]);
		if (launch(&b, b.load, 0, 0, 0))
			die_gio("load layer 0");
		for (uint32_t l = 0; l < L; l++) {
			KV_CK(cudaStreamWaitEvent(b.comp, b.ev_lend[at(b, r, l)], 0));
			KV_CK(cudaEventRecord(b.ev_cstart[at(b, r, l)], b.comp));
			standin<<<kStandinBlocks, 128, 0, b.comp>>>(layer_ns, &b.st.cstart[at(b, r, l)], &b.st.cend[at(b, r, l)]);
			KV_CK(cudaEventRecord(b.ev_cend[at(b, r, l)], b.comp));
			// The slot: layer l's compute window; its reads: layer l + 1's load.
			gio_sched_slot slot{};
			slot.phase = GIO_SCHED_PREFILL;
			gio_sched_estimate est;
			if (gio_sched_profile_lookup(b.prof, input, o.prefix, l, &est))
				kv_die("bench_sched: profile lookup");
			slot.slack_ns = est.slack_ns;
			slot.sm = o.slot_sms ? o.slot_sms : est.sm;
			if (l + 1 < L)
				for (uint32_t d = 0; d < b.cfg.ndevs; d++)
					slot.read_bytes[d] = load_dev[d];
			gio_sched_carry(&prev, &slot);
			KV_CK(cudaStreamWaitEvent(b.io, b.ev_cstart[at(b, r, l)], 0));
			KV_CK(cudaStreamWaitEvent(b.io2, b.ev_cstart[at(b, r, l)], 0));
			gio_sched_decision dec;
			const double c0 = kv_thread_cpu_s();
			if (m.sched) {
				if (gio_sched_issue(&is, &slot, l + 1 < L ? b.load : nullptr, l + 1, w.data(), (uint32_t)w.size(), &dec))
					die_gio("gio_sched_issue");
			} else {
				if (gio_sched_plan_naive(&b.cfg, &bl, &slot, w.data(), (uint32_t)w.size(), &dec))
					kv_die("bench_sched: naive plan: %s", gio_sched_reason_name(dec.fault));
				if (l + 1 < L && launch(&b, b.load, l + 1, 0, dec.sm))
					die_gio("load layer");
				for (uint32_t k = 0; k < dec.nwrites; k++)
					if (launch(&b, b.saves[w[k].id >> 32], (uint32_t)w[k].id, 1, dec.sm))
						die_gio("save layer");
				gio_sched_backlog_pop(&bl, dec.nwrites);
			}
			cpu += kv_thread_cpu_s() - c0;
			slots++;
			predicted += dec.bubble_ns / 1e6;
			prev = dec;
			push_item(b, is, rr, r, l, save_dev);
		}
		// Decode steps: compute without reads; the sched mode drains its backlog in them.
		for (uint32_t s = 0; s < D; s++) {
			cudaEvent_t ds = b.ev_cstart[at(b, r, 0)]; // reused: layer 0's start has been waited for
			KV_CK(cudaEventRecord(ds, b.comp));
			standin<<<kStandinBlocks, 128, 0, b.comp>>>(decode_ns, nullptr, &b.st.dend[(size_t)r * D + s]);
			KV_CK(cudaStreamWaitEvent(b.io, ds, 0));
			KV_CK(cudaStreamWaitEvent(b.io2, ds, 0));
			gio_sched_slot slot{};
			slot.phase = GIO_SCHED_DECODE;
			slot.slack_ns = decode_ns;
			slot.sm = o.slot_sms;
			gio_sched_carry(&prev, &slot);
			gio_sched_decision dec;
			const double c0 = kv_thread_cpu_s();
			if (m.sched) {
				if (gio_sched_issue(&is, &slot, nullptr, 0, w.data(), (uint32_t)w.size(), &dec))
					die_gio("gio_sched_issue (decode)");
			} else {
				// Naive: whatever is ready goes at once (the last layer's save, in the first step).
				if (gio_sched_plan_naive(&b.cfg, &bl, &slot, w.data(), (uint32_t)w.size(), &dec))
					kv_die("bench_sched: naive plan: %s", gio_sched_reason_name(dec.fault));
				for (uint32_t k = 0; k < dec.nwrites; k++)
					if (launch(&b, b.saves[w[k].id >> 32], (uint32_t)w[k].id, 1, dec.sm))
						die_gio("save layer");
				gio_sched_backlog_pop(&bl, dec.nwrites);
			}
			cpu += kv_thread_cpu_s() - c0;
			slots++;
			prev = dec;
		}
		wait_streams(b, "a request");
		std::vector<gio_kv_io_result> res(b.pb);
		if (gio_kv_plan_finish(b.load, res.data(), 30 * kSecond))
			die_gio("load finish");
		*b.wrong = 0;
		verify<<<264, 512, 0, b.comp>>>((const uint32_t *)b.gs.pool, L, b.blocks, b.gs.obj / 4, b.pb, 0, b.wrong);
		KV_CK(cudaStreamSynchronize(b.comp));
		if (*b.wrong)
			kv_die("bench_sched: %s, input %u, request %u: %llu wrong words in the loaded prefix", m.name, input, r, *b.wrong);
		for (uint32_t q = 0; q <= r; q++)
			if (b.save_layers_issued[q] == L) {
				finish_save(b, q, nb);
				b.save_layers_issued[q] = L + 1; // finished
			}
		// Online recalibration from the layer times just measured.
		for (uint32_t l = 0; l < L; l++) {
			const uint64_t t = b.st.cend[at(b, r, l)] - b.st.cstart[at(b, r, l)];
			if (t)
				gio_sched_profile_observe(b.prof, input, o.prefix, l, t, nullptr);
		}
		prev = gio_sched_decision{}; // the streams were waited for: every drive is idle
	}
	// After the last request, whatever is left is drained without compute.
	const double c0 = kv_thread_cpu_s();
	while (bl.count) {
		gio_sched_slot slot{};
		slot.phase = GIO_SCHED_DECODE;
		gio_sched_decision dec;
		if (gio_sched_issue(&is, &slot, nullptr, 0, w.data(), (uint32_t)w.size(), &dec))
			die_gio("drain");
		slots++;
	}
	cpu += kv_thread_cpu_s() - c0;
	stamp<<<1, 1, 0, b.io>>>(b.st.drain_end);
	wait_streams(b, "the drain");
	for (uint32_t q = 0; q < R; q++) {
		if (b.save_layers_issued[q] != L && b.save_layers_issued[q] != L + 1)
			kv_die("bench_sched: request %u issued %u save layers of %u", q, b.save_layers_issued[q], L);
		if (b.save_layers_issued[q] == L)
			finish_save(b, q, nb);
	}
	// Every chunk saved reads back as it was written.
	for (uint32_t q = 0; q < R; q++) {
		std::vector<gio_kv_u128> keys(nb);
		std::vector<uint32_t> blks(nb);
		for (uint32_t j = 0; j < nb; j++) {
			keys[j] = new_key(run_id, q, j);
			blks[j] = j;
		}
		if (gio_kv_plan_load(b.load, keys.data(), blks.data(), nb, nullptr) != (int)nb)
			die_gio("plan load of the saved chunks: every one must hit");
		for (uint32_t l = 0; l < L; l++)
			if (gio_kv_load_layer(b.load, l, b.io))
				die_gio("load a saved layer");
		wait_streams(b, "the read-back");
		if (gio_kv_plan_finish(b.load, nullptr, 30 * kSecond))
			die_gio("read-back finish");
		*b.wrong = 0;
		verify<<<264, 512, 0, b.comp>>>((const uint32_t *)b.gs.pool, L, b.blocks, b.gs.obj / 4, nb, b.pb, b.wrong);
		KV_CK(cudaStreamSynchronize(b.comp));
		if (*b.wrong)
			kv_die("bench_sched: %s, input %u: request %u's saved chunks: %llu wrong words", m.name, input, q, *b.wrong);
	}

	// The figures, from the GPU's stamps.
	const Stamps &st = b.st;
	const uint64_t t0 = st.req0[0];
	uint64_t last_cend = 0, last_send = 0, in_prefill = 0;
	std::vector<std::pair<uint64_t, int64_t>> ev; // (time, +-bytes pending)
	const uint64_t layer_save_bytes = (uint64_t)nb * b.gs.obj;
	for (uint32_t r = 0; r < R; r++) {
		const uint64_t prefill_end = st.cend[at(b, r, L - 1)];
		rr.prefill_ms.push_back((prefill_end - st.req0[r]) / 1e6);
		rr.first_ms.push_back((st.cstart[at(b, r, 0)] - st.req0[r]) / 1e6);
		double bub = 0;
		for (uint32_t l = 1; l < L; l++) {
			const double g = st.cstart[at(b, r, l)] > st.cend[at(b, r, l - 1)]
						 ? (st.cstart[at(b, r, l)] - st.cend[at(b, r, l - 1)]) / 1e6
						 : 0.0;
			bub += g;
			bubble_layer[l] += g / R;
		}
		rr.bubble_ms.push_back(bub);
		rr.read_gbps.push_back((double)b.pb * b.gs.obj * L / (st.lend[at(b, r, L - 1)] - st.req0[r]));
		for (uint32_t l = 0; l < L; l++) {
			const uint64_t ready = st.cend[at(b, r, l)], done = st.send[at(b, r, l)];
			if (!ready || !done || done < ready)
				kv_die("bench_sched: request %u layer %u: stamps out of order (computed %llu, saved %llu)", r, l,
				       (unsigned long long)ready, (unsigned long long)done);
			ev.push_back({ready, (int64_t)layer_save_bytes});
			ev.push_back({done, -(int64_t)layer_save_bytes});
			if (done <= prefill_end)
				in_prefill += layer_save_bytes;
			last_send = std::max(last_send, done);
		}
		if (D)
			last_cend = std::max(last_cend, (uint64_t)st.dend[(size_t)r * D + D - 1]);
		last_cend = std::max(last_cend, prefill_end);
	}
	std::sort(ev.begin(), ev.end());
	int64_t pend = 0;
	for (const auto &e : ev) {
		pend += e.second;
		rr.pending_high = std::max(rr.pending_high, (uint64_t)pend);
		rr.pending.push_back({(e.first - t0) / 1e6, pend / 1048576.0});
	}
	rr.bubble_layer_ms = bubble_layer;
	rr.predicted_bubble_ms = predicted / R;
	rr.cpu_us_per_slot = slots ? cpu / slots * 1e6 : 0;
	rr.drain_ms = last_send > last_cend ? (last_send - last_cend) / 1e6 : 0;
	rr.saved_bytes = layer_save_bytes * L * R;
	rr.written_in_prefill = (double)in_prefill / rr.saved_bytes;
	rr.backlog_high_items = bl.high_items;
	rr.backlog_high_bytes = bl.high_bytes;
	rr.refused = bl.refused;
	rr.pressured = bl.pressured;
	return rr;
}

void alloc_stamps(Bench &b)
{
	const size_t rl = (size_t)b.o.requests * b.o.layers;
	b.st.words = b.o.requests + 5 * rl + (size_t)b.o.requests * b.o.decode_steps + 1;
	unsigned long long *p;
	KV_CK(cudaHostAlloc(&p, b.st.words * sizeof(*p), cudaHostAllocMapped));
	b.st.req0 = p;
	b.st.lend = p + b.o.requests;
	b.st.cstart = b.st.lend + rl;
	b.st.cend = b.st.cstart + rl;
	b.st.sstart = b.st.cend + rl;
	b.st.send = b.st.sstart + rl;
	b.st.dend = b.st.send + rl;
	b.st.drain_end = b.st.dend + (size_t)b.o.requests * b.o.decode_steps;
	auto mk = [&](std::vector<cudaEvent_t> &v) {
		v.resize(rl);
		for (auto &e : v)
			KV_CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	};
	mk(b.ev_lend);
	mk(b.ev_cstart);
	mk(b.ev_cend);
}

// Loads every kernel the run launches into the contexts that launch it, before the targets'
// persistent executors start (a kernel loaded lazily behind them would never load). The layer
// kernel runs once per I/O stream over an empty batch (it only signals).
void preload(Bench &b)
{
	if (gio_kv_layer_preload() || gio_gpu_preload((const void *)fill) || gio_gpu_preload((const void *)verify) ||
	    gio_gpu_preload((const void *)standin) || gio_gpu_preload((const void *)stamp))
		die_gio("preload");
	unsigned long long *t;
	KV_CK(cudaMalloc(&t, 2 * sizeof(*t)));
	for (cudaStream_t s : {b.comp, b.io, b.io2}) {
		standin<<<1, 32, 0, s>>>(0, t, t + 1);
		stamp<<<1, 1, 0, s>>>(t);
		verify<<<1, 32, 0, s>>>((const uint32_t *)b.gs.pool, 1, b.blocks, b.gs.obj / 4, 0, 0, b.wrong);
		fill<<<1, 32, 0, s>>>((uint32_t *)b.gs.pool, 0, b.blocks, b.gs.obj / 4);
		KV_CK(cudaMemsetAsync(t, 0, sizeof(*t), s));
	}
	for (cudaStream_t s : {b.io, b.io2}) {
		if (gio_kv_plan_load(b.load, nullptr, nullptr, 0, nullptr) != 0)
			die_gio("empty batch");
		if (gio_kv_load_layer(b.load, 0, s))
			die_gio("empty layer");
		KV_CK(cudaStreamSynchronize(s));
		if (gio_kv_plan_finish(b.load, nullptr, 10 * kSecond))
			die_gio("empty batch finish");
	}
	wait_streams(b, "the preload");
	KV_CK(cudaFree(t));
}

void setup(Bench &b)
{
	const Opts &o = b.o;
	b.pb = o.prefix / kTokens;
	for (uint32_t n : o.inputs)
		b.nb_max = std::max(b.nb_max, n / kTokens);
	b.blocks = b.pb + b.nb_max;
	// Streams: an I/O partition of io_sms SMs, compute on the rest.
	if (o.partition) {
		gio_sm_partition_params pp{0, o.io_sms, GIO_SM_PARTITION_FALLBACK, 0};
		if (gio_sm_partition_create(&pp, &b.part))
			die_gio("SM partition");
		gio_sm_partition_info(b.part, &b.pinfo);
		b.comp = (cudaStream_t)gio_sm_partition_stream(b.part, GIO_SM_COMPUTE);
		b.io = (cudaStream_t)gio_sm_partition_stream(b.part, GIO_SM_IO);
		void *s2;
		if (gio_sm_partition_stream_create(b.part, GIO_SM_IO, 0, &s2))
			die_gio("second I/O stream");
		b.io2 = (cudaStream_t)s2;
	} else {
		KV_CK(cudaStreamCreateWithFlags(&b.comp, cudaStreamNonBlocking));
		KV_CK(cudaStreamCreateWithFlags(&b.io, cudaStreamNonBlocking));
		KV_CK(cudaStreamCreateWithFlags(&b.io2, cudaStreamNonBlocking));
	}
	uint32_t io_stream_sms = 0;
	if (gio_stream_sm_count(b.io, &io_stream_sms))
		die_gio("SMs of the I/O stream");
	b.io_ctas = std::min(o.io_sms, io_stream_sms);

	b.sp.who = "bench_sched";
	b.sp.targets = o.targets;
	b.sp.layers = o.layers;
	b.sp.blocks = b.blocks;
	b.sp.tokens = kTokens;
	b.sp.heads = kHeads;
	b.sp.dim = kDim;
	// The prefix, and two runs' new chunks (each run's are verified before later runs evict them).
	b.sp.chunks = b.pb + 2ull * o.requests * b.nb_max;
	b.sp.read_gbps = o.read_gbps;
	b.sp.write_gbps = o.write_gbps;
	b.sp.mixed_gbps = o.mixed_gbps;
	b.sp.lat_us = o.lat_us;
	b.sp.queues = 16;
	b.sp.exec_sms = 4;
	kv_gpu_store_open(&b.gs, &b.sp, b.comp);

	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_GPU;
	pp.max_requests = std::max(b.pb, b.nb_max);
	pp.blocks = b.blocks;
	pp.io_ctas = b.io_ctas;
	pp.io_warps = 8;
	pp.devs = b.gs.devs.data();
	if (gio_kv_plan_create(b.gs.store, &pp, &b.load))
		die_gio("load plan");
	b.saves.assign(o.requests, nullptr);
	for (auto &s : b.saves)
		if (gio_kv_plan_create(b.gs.store, &pp, &s))
			die_gio("save plan");
	b.save_layers_issued.assign(o.requests, 0);
	KV_CK(cudaMallocManaged(&b.wrong, sizeof(*b.wrong)));
	alloc_stamps(b);
	preload(b);
	kv_gpu_store_start(&b.gs, &b.sp);

	// The scheduler's model of the drives: the timing model's figures.
	b.cfg.ndevs = o.targets;
	b.cfg.gate = GIO_SCHED_GATE_LAYER;
	b.cfg.sm_min = 1;
	b.cfg.sm_max = b.io_ctas;
	b.cfg.decode_window_ns = (uint64_t)(o.decode_ms * 1e6);
	for (uint32_t d = 0; d < o.targets; d++)
		b.cfg.dev[d] = gio_sched_dev{o.read_gbps, o.write_gbps, o.mixed_gbps};
	uint32_t why, idx;
	if (gio_sched_config_check(&b.cfg, &why, &idx))
		kv_die("bench_sched: scheduler config: %s (device %u)", gio_sched_reason_name(why), idx);

	// The prefix in the store: every block saved once (modelled writes), untimed.
	fill<<<264, 512, 0, b.comp>>>((uint32_t *)b.gs.pool, o.layers, b.blocks, b.gs.obj / 4);
	KV_CK(cudaStreamSynchronize(b.comp));
	b.prefix_keys.resize(b.pb);
	b.prefix_blocks.resize(b.pb);
	for (uint32_t c = 0; c < b.pb; c++) {
		b.prefix_keys[c] = gio_kv_u128{0x51ed270b27d6b3c5ull * (c + 1), c};
		b.prefix_blocks[c] = c;
	}
	if (gio_kv_plan_save(b.saves[0], b.prefix_keys.data(), b.prefix_blocks.data(), b.pb, nullptr) != (int)b.pb)
		die_gio("plan the prefix's save");
	for (uint32_t l = 0; l < o.layers; l++)
		if (gio_kv_save_layer(b.saves[0], l, b.io))
			die_gio("save the prefix");
	wait_streams(b, "the prefix's save");
	if (gio_kv_plan_finish(b.saves[0], nullptr, 60 * kSecond))
		die_gio("the prefix's save finish");
}

// Measures the slack profile with the stand-in's layers, writes it to a file and reads it back.
void profile(Bench &b, const char *gpu_name)
{
	const Opts &o = b.o;
	std::vector<uint32_t> in, pre;
	if (o.quick) {
		in = {32, 256};
		pre = {128, 1024};
	} else {
		in = {256, 1024, 4096};
		pre = {8192, 32768};
	}
	gio_sched_profile_params pp{};
	pp.layers = o.layers;
	pp.ninput = (uint32_t)in.size();
	pp.nprefix = (uint32_t)pre.size();
	pp.reps = o.quick ? 1 : 3;
	pp.warmup = 1;
	pp.input = in.data();
	pp.prefix = pre.data();
	pp.max_wall_ns = 120 * kSecond;
	ProfileStep ps{b.comp, std::vector<cudaEvent_t>(o.layers + 1)};
	for (auto &e : ps.ev)
		KV_CK(cudaEventCreate(&e));
	b.prof = static_cast<gio_sched_profile *>(std::calloc(1, sizeof(gio_sched_profile)));
	gio_sched_profile *measured = static_cast<gio_sched_profile *>(std::calloc(1, sizeof(gio_sched_profile)));
	if (!b.prof || !measured)
		kv_die("bench_sched: out of memory");
	if (gio_sched_profile_run(&pp, profile_step, &ps, measured, &b.pstats))
		die_gio("profile run");
	gio_sched_identity id{};
	kv_fmt(id.model, sizeof(id.model), "llama3-8b stand-in, %u layers", o.layers);
	kv_fmt(id.gpu, sizeof(id.gpu), "%s", gpu_name);
	kv_fmt(id.engine, sizeof(id.engine), "bench_sched");
	char path[] = "/tmp/bench_sched_profile_XXXXXX";
	const int fd = mkstemp(path);
	if (fd < 0)
		kv_die("bench_sched: mkstemp");
	close(fd);
	if (gio_sched_profile_save(path, measured, &id) || gio_sched_profile_load(path, &id, b.prof, nullptr))
		die_gio("profile file");
	unlink(path);
	std::free(measured);
	for (auto &e : ps.ev)
		KV_CK(cudaEventDestroy(e));
}

double median(std::vector<double> v)
{
	return kv_median(std::move(v));
}

void minmax(const std::vector<double> &v, double *lo, double *hi)
{
	*lo = *std::min_element(v.begin(), v.end());
	*hi = *std::max_element(v.begin(), v.end());
}

} // namespace

int main(int argc, char **argv)
{
	Bench b;
	Opts &o = b.o;
	// --quick sets the smoke run's defaults first: the options after it may change them.
	for (int i = 1; i < argc; i++)
		if (std::strcmp(argv[i], "--quick") == 0) {
			o.quick = true;
			o.layers = 4;
			o.prefix = 512;
			o.inputs = {128};
			o.requests = 2;
			o.decode_steps = 2;
			o.decode_ms = 0.2;
			o.reps = 1;
		}
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
		auto num = [&](double lo, double hi) {
			char *end = nullptr;
			const double x = v ? std::strtod(v, &end) : 0;
			if (!v || end == v || *end || !(x >= lo && x <= hi))
				kv_die("bench_sched: %s wants a number from %g to %g", a.c_str(), lo, hi);
			i++;
			return x;
		};
		if (a == "--quick") {
			// taken above
		} else if (a == "--no-partition") {
			o.partition = false;
		} else if (a == "--prefix") {
			o.prefix = (uint32_t)num(kTokens, 1 << 20);
		} else if (a == "--input" && v) {
			uint32_t t[8];
			const int k = kv_parse_u32_list(v, kTokens, 1 << 16, t, 8);
			if (k <= 0)
				kv_die("bench_sched: --input %s", v);
			o.inputs.assign(t, t + k);
			i++;
		} else if (a == "--requests") {
			o.requests = (uint32_t)num(1, 64);
		} else if (a == "--decode-steps") {
			o.decode_steps = (uint32_t)num(0, 1024);
		} else if (a == "--decode-ms") {
			o.decode_ms = num(0.01, 1000);
		} else if (a == "--reps") {
			o.reps = (uint32_t)num(1, 100);
		} else if (a == "--read-gbps") {
			o.read_gbps = num(0.01, 1000);
		} else if (a == "--write-gbps") {
			o.write_gbps = num(0.01, 1000);
		} else if (a == "--mixed-gbps") {
			o.mixed_gbps = num(0.01, 1000);
		} else if (a == "--io-sms") {
			o.io_sms = (uint32_t)num(1, 64);
		} else if (a == "--slot-sms") {
			o.slot_sms = (uint32_t)num(0, 64);
		} else if (a == "--json" && v) {
			o.json = v;
			i++;
		} else {
			std::printf("usage: bench_sched [--quick] [--prefix N] [--input N,N] [--requests N] [--decode-steps N]\n"
				    "                   [--decode-ms X] [--reps N] [--read-gbps X] [--write-gbps X] [--mixed-gbps X]\n"
				    "                   [--io-sms N] [--slot-sms N] [--no-partition] [--json FILE]\n");
			return a == "-h" || a == "--help" ? 0 : 2;
		}
	}
	if (o.prefix % kTokens)
		kv_die("bench_sched: --prefix must be whole blocks of %u tokens", kTokens);
	for (uint32_t n : o.inputs)
		if (n % kTokens)
			kv_die("bench_sched: --input must be whole blocks of %u tokens", kTokens);
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA device\n");
		return 77;
	}
	KV_CK(cudaSetDevice(0));
	kv_machine mach;
	kv_machine_probe(0, &mach);
	kv_machine_line(stdout, &mach);
	cudaDeviceProp prop;
	KV_CK(cudaGetDeviceProperties(&prop, 0));
	const double t_setup = kv_now_s();
	setup(b);
	std::fprintf(stderr, "bench_sched: set up in %.1f s\n", kv_now_s() - t_setup);
	profile(b, prop.name);
	std::fprintf(stderr, "bench_sched: profiled in %.2f s (%" PRIu64 " steps)\n", b.pstats.wall_ns / 1e9, b.pstats.step_calls);

	const Mode modes[2] = {{"naive", false}, {"sched", true}};
	std::vector<RunResult> runs;
	for (uint32_t rep = 0; rep < o.reps; rep++)
		for (uint32_t input : o.inputs)
			for (const Mode &m : modes) {
				runs.push_back(run(b, m, input, rep));
				const RunResult &rr = runs.back();
				std::fprintf(stderr, "  %-5s input %5u rep %u: prefill %.1f ms, bubble %.1f ms, drain %.1f ms, verified\n",
					     m.name, input, rep, median(rr.prefill_ms), median(rr.bubble_ms), rr.drain_ms);
			}

	const std::string budget = o.slot_sms ? std::to_string(std::min(o.slot_sms, b.io_ctas)) + " SMs (--slot-sms)"
					      : "none (every I/O SM)";
	std::printf("\n# bench_sched: slack-aware scheduling against naive overlap (%u modelled drives)\n\n", o.targets);
	std::printf("Drives: %u GPU-executed memory targets with the SSD timing model, each read %.2f GB/s, write %.2f GB/s, "
		    "%.2f GB/s for both at once, %.0f us a command (MODELLED; the bytes really cross PCIe from pinned host "
		    "memory into HBM). Model: Llama3-8B KV (32 KiB K + 32 KiB V per block of 16 tokens and layer, %u layers), "
		    "prefix %u tokens in the store, %u requests a run, each followed by %u decode steps of %.2f ms. Compute: "
		    "a stand-in kernel (%u blocks spinning) per layer, %s. I/O kernels: %u SMs (%s), SM budget a slot: %s. "
		    "Times: GPU clock stamps, measured; medians over %u requests x %u reps [min, max].\n\n",
		    o.targets, o.read_gbps, o.write_gbps, o.mixed_gbps, o.lat_us, o.layers, o.prefix, o.requests,
		    o.decode_steps, o.decode_ms, kStandinBlocks, "bilinear through measured Llama3-8B layer times", b.io_ctas,
		    b.pinfo.isolated ? "an I/O partition of green contexts; compute on the other SMs"
				     : "ordinary streams: no green contexts, or --no-partition",
		    budget.c_str(), o.requests, o.reps);
	std::printf("Profile: %u x %u grid, %u reps + 1 warm-up a point, %" PRIu64 " steps in %.2f s (%.2f s inside steps); "
		    "largest spread of a cell %.2f%%; written to a file and read back.\n\n",
		    b.prof->ninput, b.prof->nprefix, b.pstats.reps, b.pstats.step_calls, b.pstats.wall_ns / 1e9,
		    b.pstats.step_ns / 1e9, b.pstats.spread_max_ppm / 1e4);
	std::printf("| input tokens | mode | layer compute ms (stand-in; profile says) | prefill ms | bubble ms / request | "
		    "bubble %% of prefill | predicted bubble ms (model) | first layer's load ms | read GB/s | saves done in prefill | "
		    "pending writes, most MiB | backlog most items / MiB | back-pressure (pressured / refused / stalls) | "
		    "drain after last request ms | CPU us / slot |\n");
	std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (uint32_t input : o.inputs)
		for (const Mode &m : modes) {
			std::vector<double> pre, bub, first, rd, pred, drain, inpf, cpu;
			uint64_t pend = 0, hi_items = 0, hi_bytes = 0, refused = 0, pressured = 0, stalls = 0;
			for (const RunResult &rr : runs) {
				if (rr.input != input || rr.mode != m.name)
					continue;
				pre.insert(pre.end(), rr.prefill_ms.begin(), rr.prefill_ms.end());
				bub.insert(bub.end(), rr.bubble_ms.begin(), rr.bubble_ms.end());
				first.insert(first.end(), rr.first_ms.begin(), rr.first_ms.end());
				rd.insert(rd.end(), rr.read_gbps.begin(), rr.read_gbps.end());
				pred.push_back(rr.predicted_bubble_ms);
				drain.push_back(rr.drain_ms);
				inpf.push_back(rr.written_in_prefill);
				cpu.push_back(rr.cpu_us_per_slot);
				pend = std::max(pend, rr.pending_high);
				hi_items = std::max(hi_items, rr.backlog_high_items);
				hi_bytes = std::max(hi_bytes, rr.backlog_high_bytes);
				refused += rr.refused;
				pressured += rr.pressured;
				stalls += rr.stalls;
			}
			gio_sched_estimate est{};
			if (gio_sched_profile_lookup(b.prof, input, o.prefix, o.layers > 1 ? 1 : 0, &est))
				kv_die("bench_sched: profile lookup");
			double plo, phi, blo, bhi, rlo, rhi;
			minmax(pre, &plo, &phi);
			minmax(bub, &blo, &bhi);
			minmax(rd, &rlo, &rhi);
			std::printf("| %u | %s | %.2f (%.2f) | %.1f [%.1f, %.1f] | %.1f [%.1f, %.1f] | %.1f%% | %.1f | %.2f | "
				    "%.1f [%.1f, %.1f] | %.0f%% | %.0f | %" PRIu64 " / %.0f | %" PRIu64 " / %" PRIu64 " / %" PRIu64
				    " | %.1f | %.1f |\n",
				    input, m.name, standin_ns(input, o.prefix) / 1e6, est.slack_ns / 1e6, median(pre), plo, phi,
				    median(bub), blo, bhi, 100.0 * median(bub) / median(pre), median(pred), median(first),
				    median(rd), rlo, rhi, 100.0 * median(inpf), pend / 1048576.0, hi_items, hi_bytes / 1048576.0,
				    pressured, refused, stalls, median(drain), median(cpu));
		}
	std::printf("\nbubble: a layer's compute waiting for its load (layers 1 on; the first layer's load, with nothing to hide "
		    "behind, apart). prefill: the first load's issue to the last layer's end. read GB/s: the prefix's bytes over the first "
		    "load's issue to the last load's end. pending writes: bytes of layers computed and not yet saved. predicted: "
		    "what the scheduler's cost model (gio_sched_plan() / gio_sched_plan_naive()) expected, from the profile's slack. "
		    "CPU: the issuing thread's, per slot (layer or decode step). Every load and every saved chunk verified.\n");

	if (o.json) {
		FILE *f = std::fopen(o.json, "w");
		if (!f)
			kv_die("cannot write %s", o.json);
		char mline[512];
		kv_machine_describe(&mach, mline, sizeof(mline));
		std::fprintf(f, "{\"bench\": \"bench_sched\", \"machine\": ");
		kv_json_string(f, mline);
		std::fprintf(f, ", \"modelled\": true, \"targets\": %u, \"read_gbps\": %g, \"write_gbps\": %g, \"mixed_gbps\": %g, "
			     "\"layers\": %u, \"prefix\": %u, \"requests\": %u, \"decode_steps\": %u, \"decode_ms\": %g, \"io_sms\": %u, "
			     "\"slot_sms\": %u, \"isolated\": %u, \"profile_s\": %.3f, \"profile_steps\": %" PRIu64 ", \"runs\": [",
			     o.targets, o.read_gbps, o.write_gbps, o.mixed_gbps, o.layers, o.prefix, o.requests, o.decode_steps,
			     o.decode_ms, b.io_ctas, o.slot_sms, b.pinfo.isolated, b.pstats.wall_ns / 1e9, b.pstats.step_calls);
		for (size_t i = 0; i < runs.size(); i++) {
			const RunResult &rr = runs[i];
			auto arr = [&](const char *name, const std::vector<double> &v) {
				std::fprintf(f, ", \"%s\": [", name);
				for (size_t k = 0; k < v.size(); k++)
					std::fprintf(f, "%s%.4f", k ? ", " : "", v[k]);
				std::fprintf(f, "]");
			};
			std::fprintf(f, "%s{\"mode\": \"%s\", \"input\": %u, \"rep\": %u, \"layer_ms\": %.4f", i ? ", " : "",
				     rr.mode.c_str(), rr.input, rr.rep, standin_ns(rr.input, o.prefix) / 1e6);
			arr("prefill_ms", rr.prefill_ms);
			arr("bubble_ms", rr.bubble_ms);
			arr("read_gbps", rr.read_gbps);
			arr("bubble_layer_ms", rr.bubble_layer_ms);
			std::fprintf(f, ", \"predicted_bubble_ms\": %.4f, \"drain_ms\": %.4f, \"cpu_us_per_slot\": %.3f, "
				     "\"pending_high_bytes\": %" PRIu64 ", \"stalls\": %" PRIu64 ", \"pending\": [",
				     rr.predicted_bubble_ms, rr.drain_ms, rr.cpu_us_per_slot, rr.pending_high, rr.stalls);
			for (size_t k = 0; k < rr.pending.size(); k++)
				std::fprintf(f, "%s[%.4f, %.3f]", k ? ", " : "", rr.pending[k].first, rr.pending[k].second);
			std::fprintf(f, "]}");
		}
		std::fprintf(f, "]}\n");
		std::fclose(f);
	}

	for (gio_kv_plan *s : b.saves)
		if (gio_kv_plan_destroy(s))
			die_gio("plan destroy");
	if (gio_kv_plan_destroy(b.load))
		die_gio("plan destroy");
	kv_gpu_store_stop(&b.gs, &b.sp, nullptr);
	kv_gpu_store_close(&b.gs, &b.sp);
	if (b.part) {
		KV_CK(cudaStreamDestroy(b.io2));
		gio_sm_partition_destroy(b.part);
	}
	std::free(b.prof);
	return 0;
}
