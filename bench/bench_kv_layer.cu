// bench_kv_layer: per-layer KV restore through the library's calls (giouring/kv/plan.h,
// giouring/kv/layer.cuh): a store over N GPU-executed memory targets, each with the SSD timing
// model of one drive (figures MODELLED: the drives are the model, the data really moves from
// pinned host memory over PCIe into HBM), one gio_kv_load_layer() launch per layer. Beside it in
// the same run: the bulk copy (one cudaMemcpyAsync per target of the same bytes from the same
// pinned memory, the PCIe limit) and N x the one-drive figure of the same run.
//
// Shapes: llama3-8b-128k (32 layers, 8192 blocks of 16 tokens, 64 KiB objects: K and V of 8 KV
// heads x 128 x bf16; 16 GiB) and tutti-80x512k (Tutti's layerwise_kv_overlap shape: 80 layers
// of 512 KiB objects, here 64 chunks a batch).
//
// Per point: GB/s of the loads (median and spread of --reps), the save's modelled GB/s, host CPU
// time per layer call (thread CPU time of the calling thread, and wall), requests per device
// (balance), SGL and PRP metadata per object (gio_kv_table_plan()). Every load is verified byte
// for byte on the GPU (a wrong byte fails the run). Markdown on stdout, JSON with --json.
// Exits 77 without a GPU.
//
//   bench_kv_layer [--quick] [--shape llama|tutti|both] [--targets 1,4] [--reps N]
//                  [--read-gbps X] [--write-gbps X] [--lat-us X] [--io-sms N] [--io-warps N]
//                  [--streams N] [--json FILE]
#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <string>
#include <vector>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>
#include <giouring/kv/layer.cuh>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>
#include <giouring/target/gpu_target.h>

#include "common/check.cuh"
#include "common/cli.cuh"
#include "common/gpu_store.cuh"
#include "common/json.cuh"
#include "common/machine.cuh"
#include "common/timing.cuh"

namespace {

struct Shape {
	const char *name;
	uint32_t layers, blocks, tokens, heads, dim; // per object: 2 (K, V) x tokens x heads x dim x 2 bytes
};

const Shape kLlama = {"llama3-8b-128k", 32, 8192, 16, 8, 128};
const Shape kTutti = {"tutti-80x512k", 80, 64, 256, 4, 128}; // 2 x 256 x 4 x 128 x 2 = 512 KiB
const Shape kQuickShape = {"quick", 4, 64, 16, 8, 128};

struct Opts {
	bool quick = false;
	std::vector<uint32_t> targets{1, 4};
	int shapes = 3; // 1 llama, 2 tutti
	uint32_t reps = 3, io_sms = 8, io_warps = 8, streams = 2;
	float read_gbps = 7.25f, write_gbps = 3.0f, lat_us = 20.0f;
	const char *json = nullptr;
};

__device__ __host__ uint32_t pattern(uint32_t chunk, uint32_t layer, uint64_t k)
{
	uint32_t x = (chunk + 1) * 2654435761u ^ (layer << 22) ^ (uint32_t)(k * 0x9e3779b9u);
	x ^= x >> 15;
	return x * 0x2c1b3c6du;
}

// Pool object (layer, block) at pool + (layer * blocks + block) * obj (layer-major, contiguous).
__global__ void fill(uint32_t *pool, uint32_t layers, uint32_t blocks, uint64_t obj_words)
{
	const uint64_t n = (uint64_t)layers * blocks * obj_words;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint64_t o = i / obj_words;
		pool[i] = pattern((uint32_t)(o % blocks), (uint32_t)(o / blocks), i % obj_words);
	}
}

// After a load of chunk c into block perm(c): counts wrong words.
__global__ void verify(const uint32_t *pool, uint32_t layers, uint32_t blocks, uint64_t obj_words, uint32_t mul,
		       unsigned long long *wrong)
{
	const uint64_t n = (uint64_t)layers * blocks * obj_words;
	unsigned long long bad = 0;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
		const uint64_t o = i / obj_words;
		const uint32_t layer = (uint32_t)(o / blocks), c = (uint32_t)(o % blocks);
		const uint32_t b = (uint32_t)(((uint64_t)c * mul + 3) % blocks);
		bad += pool[((uint64_t)layer * blocks + b) * obj_words + i % obj_words] != pattern(c, layer, i % obj_words);
	}
	if (bad)
		atomicAdd(wrong, bad);
}

uint32_t perm_mul(uint32_t blocks)
{
	uint32_t m = 5;
	while (std::__gcd(m, blocks) != 1)
		m += 2;
	return m;
}

struct Point {
	std::string shape;
	uint32_t targets = 0;
	double load_gbps_median = 0, load_gbps_min = 0, load_gbps_max = 0, save_gbps = 0, bulk_gbps = 0;
	double cpu_us_per_call = 0, wall_us_per_call = 0;
	uint64_t bytes = 0;
	std::vector<uint64_t> per_dev;
	uint64_t sgl_obj_bytes = 0, prp_obj_bytes = 0;
};

void die_gio(const char *what)
{
	kv_die("%s: %s", what, gio_last_error());
}

Point run_point(const Shape &sh, uint32_t n, const Opts &o)
{
	Point pt;
	pt.shape = sh.name;
	pt.targets = n;
	kv_gpu_store_params sp{};
	sp.who = "bench_kv_layer";
	sp.targets = n;
	sp.layers = sh.layers;
	sp.blocks = sh.blocks;
	sp.tokens = sh.tokens;
	sp.heads = sh.heads;
	sp.dim = sh.dim;
	sp.chunks = sh.blocks;
	sp.read_gbps = o.read_gbps;
	sp.write_gbps = o.write_gbps;
	sp.lat_us = o.lat_us;
	sp.queues = 16;
	sp.exec_sms = 4;
	// --streams I/O streams, layers taking them in turn: each layer is one launch, and a layer's
	// last commands overlap the next layers' first (the layers' words are their own, so nothing
	// orders them). io is the first; the others fork from it and join it.
	std::vector<cudaStream_t> ios(o.streams);
	for (auto &s : ios)
		KV_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaStream_t io = ios[0];
	kv_gpu_store gs;
	kv_gpu_store_open(&gs, &sp, io);
	const uint64_t obj = gs.obj, total = gs.pool_bytes;
	unsigned char *pool = gs.pool;
	pt.sgl_obj_bytes = gs.sizes.sgl_object_bytes;
	pt.prp_obj_bytes = gs.sizes.prp_object_bytes;
	cudaEvent_t join;
	KV_CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
	auto fork_from = [&](cudaEvent_t ev) {
		for (size_t k = 1; k < ios.size(); k++)
			KV_CK(cudaStreamWaitEvent(ios[k], ev, 0));
	};
	auto join_into = [&]() {
		for (size_t k = 1; k < ios.size(); k++) {
			KV_CK(cudaEventRecord(join, ios[k]));
			KV_CK(cudaStreamWaitEvent(io, join, 0));
		}
	};
	gio_kv_plan_params pp{};
	pp.engine = GIO_KV_ENGINE_GPU;
	pp.max_requests = sh.blocks;
	pp.blocks = sh.blocks;
	// --streams layers in flight: at most io_sms thread blocks in all.
	pp.io_ctas = o.io_sms / o.streams ? o.io_sms / o.streams : 1;
	pp.io_warps = o.io_warps;
	pp.devs = gs.devs.data();
	gio_kv_plan *plan = nullptr;
	if (gio_kv_plan_create(gs.store, &pp, &plan))
		die_gio("plan");
	kv_gpu_store_start(&gs, &sp);

	// Save every chunk (chunk c from block c): modelled writes.
	std::vector<gio_kv_u128> keys(sh.blocks);
	std::vector<uint32_t> blocks(sh.blocks);
	for (uint32_t c = 0; c < sh.blocks; c++) {
		keys[c] = gio_kv_u128{0x51ed270b27d6b3c5ull * (c + 1), c};
		blocks[c] = c;
	}
	fill<<<264, 512, 0, io>>>((uint32_t *)pool, sh.layers, sh.blocks, obj / 4);
	KV_CK(cudaStreamSynchronize(io));
	cudaEvent_t e0, e1;
	KV_CK(cudaEventCreate(&e0));
	KV_CK(cudaEventCreate(&e1));
	if (gio_kv_plan_save(plan, keys.data(), blocks.data(), sh.blocks, nullptr) != (int)sh.blocks)
		die_gio("plan save");
	KV_CK(cudaEventRecord(e0, io));
	fork_from(e0);
	for (uint32_t l = 0; l < sh.layers; l++)
		if (gio_kv_save_layer(plan, l, ios[l % ios.size()]))
			die_gio("save layer");
	join_into();
	KV_CK(cudaEventRecord(e1, io));
	if (kv_wait_event(e1, 120) != 0)
		kv_die("the save did not finish in 120 s");
	if (gio_kv_plan_finish(plan, nullptr, 0))
		die_gio("save finish");
	float ms = 0;
	KV_CK(cudaEventElapsedTime(&ms, e0, e1));
	pt.save_gbps = total / (ms * 1e6);
	pt.bytes = total;

	// Loads into shuffled blocks, each verified.
	const uint32_t mul = perm_mul(sh.blocks);
	for (uint32_t c = 0; c < sh.blocks; c++)
		blocks[c] = (uint32_t)(((uint64_t)c * mul + 3) % sh.blocks);
	unsigned long long *wrong;
	KV_CK(cudaMallocManaged(&wrong, sizeof(*wrong)));
	std::vector<double> gbps;
	double cpu_s = 0, wall_s = 0;
	for (uint32_t r = 0; r < o.reps; r++) {
		KV_CK(cudaMemsetAsync(pool, 0xa5, total, io));
		KV_CK(cudaStreamSynchronize(io));
		if (gio_kv_plan_load(plan, keys.data(), blocks.data(), sh.blocks, nullptr) != (int)sh.blocks)
			die_gio("plan load");
		KV_CK(cudaEventRecord(e0, io));
		fork_from(e0);
		const double c0 = kv_thread_cpu_s(), w0 = kv_now_s();
		for (uint32_t l = 0; l < sh.layers; l++)
			if (gio_kv_load_layer(plan, l, ios[l % ios.size()]))
				die_gio("load layer");
		cpu_s += kv_thread_cpu_s() - c0;
		wall_s += kv_now_s() - w0;
		join_into();
		KV_CK(cudaEventRecord(e1, io));
		if (kv_wait_event(e1, 120) != 0)
			kv_die("a load did not finish in 120 s");
		std::vector<gio_kv_io_result> res(sh.blocks);
		if (gio_kv_plan_finish(plan, res.data(), 0))
			die_gio("load finish");
		KV_CK(cudaEventElapsedTime(&ms, e0, e1));
		gbps.push_back(total / (ms * 1e6));
		*wrong = 0;
		verify<<<264, 512, 0, io>>>((const uint32_t *)pool, sh.layers, sh.blocks, obj / 4, mul, wrong);
		KV_CK(cudaStreamSynchronize(io));
		if (*wrong)
			kv_die("%s on %u targets: %llu wrong words after load %u", sh.name, n, *wrong, r);
	}
	std::sort(gbps.begin(), gbps.end());
	pt.load_gbps_median = gbps[gbps.size() / 2];
	pt.load_gbps_min = gbps.front();
	pt.load_gbps_max = gbps.back();
	pt.cpu_us_per_call = cpu_s / (o.reps * sh.layers) * 1e6;
	pt.wall_us_per_call = wall_s / (o.reps * sh.layers) * 1e6;

	// The bulk copy of the same bytes from the same pinned memory (the targets' backing stores).
	KV_CK(cudaEventRecord(e0, io));
	for (uint32_t d = 0; d < n; d++)
		KV_CK(cudaMemcpyAsync(pool + d * (total / n), gs.g[d]->backing_host, total / n, cudaMemcpyHostToDevice, io));
	KV_CK(cudaEventRecord(e1, io));
	if (kv_wait_event(e1, 120) != 0)
		kv_die("the bulk copy did not finish");
	KV_CK(cudaEventElapsedTime(&ms, e0, e1));
	pt.bulk_gbps = total / (ms * 1e6);

	if (gio_kv_plan_destroy(plan))
		die_gio("plan destroy");
	kv_gpu_store_stop(&gs, &sp, &pt.per_dev); // the save's and the loads' commands each device served
	kv_gpu_store_close(&gs, &sp);
	KV_CK(cudaFree(wrong));
	for (auto &s : ios)
		KV_CK(cudaStreamDestroy(s));
	KV_CK(cudaEventDestroy(join));
	return pt;
}

} // namespace

int main(int argc, char **argv)
{
	Opts o;
	for (int i = 1; i < argc; i++) {
		const std::string a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
		if (a == "--quick") {
			o.quick = true;
		} else if (a == "--shape" && v) {
			o.shapes = !std::strcmp(v, "llama") ? 1 : !std::strcmp(v, "tutti") ? 2 : 3;
			i++;
		} else if (a == "--targets" && v) {
			uint32_t t[8];
			const int k = kv_parse_u32_list(v, 1, 16, t, 8);
			if (k <= 0)
				kv_die("--targets %s", v);
			o.targets.assign(t, t + k);
			i++;
		} else if (a == "--reps" && v) {
			o.reps = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--io-sms" && v) {
			o.io_sms = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--io-warps" && v) {
			o.io_warps = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--streams" && v) {
			o.streams = (uint32_t)std::atoi(v);
			i++;
		} else if (a == "--read-gbps" && v) {
			o.read_gbps = std::strtof(v, nullptr);
			i++;
		} else if (a == "--write-gbps" && v) {
			o.write_gbps = std::strtof(v, nullptr);
			i++;
		} else if (a == "--lat-us" && v) {
			o.lat_us = std::strtof(v, nullptr);
			i++;
		} else if (a == "--json" && v) {
			o.json = v;
			i++;
		} else {
			std::printf("usage: bench_kv_layer [--quick] [--shape llama|tutti|both] [--targets 1,4] [--reps N]\n"
				    "                      [--read-gbps X] [--write-gbps X] [--lat-us X] [--io-sms N] [--io-warps N]\n"
				    "                      [--streams N] [--json FILE]\n");
			return a == "-h" || a == "--help" ? 0 : 2;
		}
	}
	if (o.reps == 0 || o.io_sms == 0 || o.io_warps == 0 || o.io_warps > 32 || o.streams == 0 || o.streams > o.io_sms)
		kv_die("--reps, --io-sms, --io-warps (up to 32) and --streams (up to --io-sms) must be at least 1");
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA device\n");
		return 77;
	}
	KV_CK(cudaSetDevice(0));
	if (gio_kv_layer_preload() || gio_gpu_preload((const void *)fill) || gio_gpu_preload((const void *)verify))
		die_gio("preload");
	kv_machine m;
	kv_machine_probe(0, &m);
	kv_machine_line(stdout, &m);
	std::vector<Shape> shapes;
	if (o.quick) {
		shapes.push_back(kQuickShape);
		o.reps = 1;
	} else {
		if (o.shapes & 1)
			shapes.push_back(kLlama);
		if (o.shapes & 2)
			shapes.push_back(kTutti);
	}
	std::vector<Point> pts;
	for (const Shape &s : shapes)
		for (uint32_t n : o.targets)
			pts.push_back(run_point(s, n, o));
	std::printf("\nKV restore, one gio_kv_load_layer() launch per layer (layers take %u streams in turn, %u thread blocks of %u warps each: at most %u I/O SMs); targets: GPU-executed memory targets "
		    "with the SSD timing model (read %.2f GB/s, write %.2f GB/s, %.0f us a command each: MODELLED drives; "
		    "the bytes really cross PCIe from pinned host memory into HBM). Rates: device scope, data in HBM "
		    "when the last layer's event completes. %u repetitions: median [min, max].\n\n",
		    o.streams, o.io_sms / o.streams ? o.io_sms / o.streams : 1, o.io_warps, o.io_sms, (double)o.read_gbps, (double)o.write_gbps, (double)o.lat_us, o.reps);
	std::printf("| shape | targets | GiB | load GB/s | vs targets x 1-target load | vs modelled %ux%.2f | bulk copy GB/s | save GB/s "
		    "(modelled writes) | CPU us / layer call (thread) | wall us / layer call | commands per device (max/min, measured) | "
		    "SGL / PRP bytes per object |\n",
		    1u, (double)o.read_gbps);
	std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
	for (const Point &p : pts) {
		double one = 0;
		for (const Point &q : pts)
			if (q.shape == p.shape && q.targets == 1)
				one = q.load_gbps_median;
		const uint64_t mx = *std::max_element(p.per_dev.begin(), p.per_dev.end());
		const uint64_t mn = *std::min_element(p.per_dev.begin(), p.per_dev.end());
		char vs[32] = "-";
		if (one > 0)
			kv_fmt(vs, sizeof(vs), "%.1f%%", 100.0 * p.load_gbps_median / (one * p.targets));
		std::printf("| %s | %u | %.2f | %.2f [%.2f, %.2f] | %s | %.1f%% | %.2f | %.2f | %.1f | %.1f | %.3f | %" PRIu64
			    " / %" PRIu64 " |\n",
			    p.shape.c_str(), p.targets, p.bytes / 1073741824.0, p.load_gbps_median, p.load_gbps_min,
			    p.load_gbps_max, vs, 100.0 * p.load_gbps_median / (p.targets * o.read_gbps), p.bulk_gbps, p.save_gbps,
			    p.cpu_us_per_call, p.wall_us_per_call, mn ? (double)mx / mn : 0.0, p.sgl_obj_bytes, p.prp_obj_bytes);
	}
	if (o.json) {
		FILE *f = std::fopen(o.json, "w");
		if (!f)
			kv_die("cannot write %s", o.json);
		char mline[512];
		kv_machine_describe(&m, mline, sizeof(mline));
		std::fprintf(f, "{\"bench\": \"bench_kv_layer\", \"machine\": ");
		kv_json_string(f, mline);
		std::fprintf(f, ", \"modelled\": true, \"read_gbps\": %g, \"write_gbps\": %g, \"lat_us\": %g, \"io_sms\": %u, \"io_warps\": %u, \"streams\": %u, \"points\": [",
			     (double)o.read_gbps, (double)o.write_gbps, (double)o.lat_us, o.io_sms, o.io_warps, o.streams);
		for (size_t i = 0; i < pts.size(); i++) {
			const Point &p = pts[i];
			std::fprintf(f, "%s{\"shape\": \"%s\", \"targets\": %u, \"bytes\": %" PRIu64
				     ", \"load_gbps\": [%.3f, %.3f, %.3f], \"save_gbps\": %.3f, \"bulk_gbps\": %.3f"
				     ", \"cpu_us_per_layer_call\": %.2f, \"wall_us_per_layer_call\": %.2f, \"sgl_bytes_per_object\": %" PRIu64
				     ", \"prp_bytes_per_object\": %" PRIu64 "}",
				     i ? ", " : "", p.shape.c_str(), p.targets, p.bytes, p.load_gbps_min, p.load_gbps_median,
				     p.load_gbps_max, p.save_gbps, p.bulk_gbps, p.cpu_us_per_call, p.wall_us_per_call, p.sgl_obj_bytes,
				     p.prp_obj_bytes);
		}
		std::fprintf(f, "]}\n");
		std::fclose(f);
	}
	return 0;
}
