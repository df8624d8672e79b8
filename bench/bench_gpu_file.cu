// bench_gpu_file: KV objects restored from a file into HBM by GPU producers through the CPU
// executor of the software target (file://), beside per-object pread + cudaMemcpyAsync from the
// same file, at the same CPU thread counts, in the same run.
//
// The workload (bench/common/workload.cuh, Llama3-8B: one 32 KiB object per (block, layer, K/V))
// is written to files in each directory (/dev/shm and --dir, a disk). giouring path: the
// library's calls (bench/common/kv_lib.cuh): a KV store on its own file through the file target,
// each block a chunk, written through gio_kv_save_layer(); a restore is one gio_kv_plan_load()
// and one gio_kv_load_layer() launch per layer, whose warps submit one NVMe Read per block and
// layer (its K and V halves: an SGL descriptor and a two-entry segment list) to queue pairs in
// pinned host memory (GIO_CTX_QP_PINNED, ring ordering at system scope: the executor is on the
// CPU), 32 commands per doorbell; the destination is the block's shuffled slot in the pool,
// registered with gio_ctx_register_device(); the target's executor threads read the file
// (io_uring, O_DIRECT where possible) into pinned bounce buffers and cudaMemcpyAsync them into
// HBM (the copy engine moves the data), a batch per doorbell. Those threads stand in for an SSD
// controller. Baseline: pread per object from the workload's file into rings of pinned bounce
// buffers + cudaMemcpyAsync (LMCache's SSD tier), by as many threads as the target has executor
// threads: each --threads count gives a row of each.
//
// CPU: each row gives the issuing thread's CPU and the CPU of every thread of the process for the
// same restore (bench/common/runner.cuh), the executor threads or the reading threads included:
// the second is the one to compare. Every object is verified byte for byte after every
// repetition. Markdown table on stdout, JSON with --json, the machine line. Exits 77 without a
// GPU.
#include <algorithm>
#include <string>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>

#include "common/baselines_file.cuh"
#include "common/check.cuh"
#include "common/cli.cuh"
#include "common/file_store.cuh"
#include "common/json.cuh"
#include "common/kv_lib.cuh"
#include "common/machine.cuh"
#include "common/runner.cuh"
#include "common/timing.cuh"
#include "common/workload.cuh"

namespace {

struct options {
	uint64_t tokens = 16384;
	const char *dirs[2] = {"/dev/shm", "/tmp"};
	uint32_t threads[8] = {1, 8}; // CPU threads of each row pair: executor threads, pread threads
	int n_threads = 2;
	uint32_t queues = 16, depth = 256, warps_per_queue = 4, ring = 64;
	int warmup = 1, reps = 3;
	double timeout_s = 120;
	const char *json = nullptr;
	bool quick = false;
};

void usage(const char *argv0)
{
	std::printf("usage: %s [--quick] [--tokens N] [--dir DISK_DIR] [--shm-dir DIR] [--threads LIST] [--queues Q]\n"
		    "          [--depth D] [--warps-per-queue W] [--reps N] [--warmup N] [--timeout S] [--json PATH]\n"
		    "  --quick        1024 tokens, one repetition, no warm-up (ctest smoke run)\n"
		    "  --dir          directory on a disk for the second file (default /tmp)\n"
		    "  --threads      CPU thread counts, comma-separated, 1 to 16 (default 1,8): for each, a row with that\n"
		    "                 many executor threads of the file target and a row with that many pread threads\n"
		    "  --queues       pinned queue pairs the GPU warps submit to (default 16)\n",
		    argv0);
}

int parse(int argc, char **argv, options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
		auto num = [&](uint64_t *out) {
			if (!v) {
				std::fprintf(stderr, "%s needs a value\n", a);
				return false;
			}
			char *end = nullptr;
			*out = std::strtoull(v, &end, 10);
			i++;
			if (!end || *end || *out == 0) {
				std::fprintf(stderr, "%s %s: a positive number\n", a, v);
				return false;
			}
			return true;
		};
		uint64_t x = 0;
		if (!std::strcmp(a, "--quick")) {
			o->quick = true;
			o->tokens = 1024;
			o->reps = 1;
			o->warmup = 0;
		} else if (!std::strcmp(a, "--tokens")) {
			if (!num(&o->tokens))
				return -1;
		} else if (!std::strcmp(a, "--dir") || !std::strcmp(a, "--shm-dir")) {
			if (!v) {
				std::fprintf(stderr, "%s needs a directory\n", a);
				return -1;
			}
			o->dirs[!std::strcmp(a, "--dir") ? 1 : 0] = v;
			i++;
		} else if (!std::strcmp(a, "--threads")) {
			if (!v || (o->n_threads = kv_parse_u32_list(v, 1, 16, o->threads, 8)) < 0) {
				std::fprintf(stderr, "--threads: a list of up to 8 counts from 1 to 16\n");
				return -1;
			}
			i++;
		} else if (!std::strcmp(a, "--queues") || !std::strcmp(a, "--depth") ||
			   !std::strcmp(a, "--warps-per-queue") || !std::strcmp(a, "--reps") || !std::strcmp(a, "--warmup") ||
			   !std::strcmp(a, "--timeout")) {
			const std::string k = a;
			if (!num(&x))
				return -1;
			if (k == "--queues")
				o->queues = (uint32_t)x;
			else if (k == "--depth")
				o->depth = (uint32_t)x;
			else if (k == "--warps-per-queue")
				o->warps_per_queue = (uint32_t)x;
			else if (k == "--reps")
				o->reps = (int)x;
			else if (k == "--warmup")
				o->warmup = (int)x;
			else
				o->timeout_s = (double)x;
		} else if (!std::strcmp(a, "--json")) {
			if (!v) {
				std::fprintf(stderr, "--json needs a path\n");
				return -1;
			}
			o->json = v;
			i++;
		} else if (!std::strcmp(a, "--help")) {
			usage(argv[0]);
			std::exit(0);
		} else {
			std::fprintf(stderr, "unknown argument %s\n", a);
			usage(argv[0]);
			return -1;
		}
	}
	const uint32_t most = *std::max_element(o->threads, o->threads + o->n_threads);
	if (o->queues + most > 1024 || o->warps_per_queue * 32 >= o->depth || (o->depth & (o->depth - 1))) {
		std::fprintf(stderr, "--queues + --threads at most 1024, --depth a power of two above 32 x --warps-per-queue\n");
		return -1;
	}
	return 0;
}

// ---- the giouring path: the library's calls (bench/common/kv_lib.cuh) --------------------------

struct gio_path {
	gio_ctx *ctx = nullptr;
	gio_kv_store *store = nullptr;
	gio_qp *d_qps = nullptr;        // the pinned queue pairs' structs, in device memory
	std::vector<gio_qp *> qp_ptrs;  // their device pointers, for the plan
	std::vector<void *> meta;       // pinned list memory the tables point into (registered)
	kv_lib lib{};
	kv_lib_row row{};
	int fd = -1;                    // for dropping the page cache of a disk file
	int tmpfs = 0;
};

int gio_meta(void *arg, uint64_t bytes, void **dev, uint64_t *bus)
{
	gio_path *g = (gio_path *)arg;
	// The CPU executor reads the lists and the GPU writes them: mapped pinned host memory.
	if (cudaHostAlloc(dev, bytes, cudaHostAllocMapped) != cudaSuccess)
		return -ENOMEM;
	g->meta.push_back(*dev);
	return gio_ctx_register(g->ctx, *dev, bytes, bus);
}

// Before each repetition: the page cache of a disk file dropped.
int gio_before(const kv_workload *w, kv_runner *r, void *arg)
{
	gio_path *g = (gio_path *)arg;
	(void)w;
	(void)r;
	if (!g->tmpfs)
		(void)posix_fadvise(g->fd, 0, 0, POSIX_FADV_DONTNEED);
	return 0;
}

struct row {
	kv_result r;
	std::string dir;
	const char *scope = "-"; // ring ordering scope of the giouring rows
};

int write_store(const kv_workload *w, const char *path, char *err, size_t errlen)
{
	const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		kv_fmt(err, errlen, "%s: %s", path, std::strerror(errno));
		return -1;
	}
	if (kv_write_full(fd, w->store, kv_total_bytes(w), 0) || fsync(fd)) {
		kv_fmt(err, errlen, "writing %s: %s", path, std::strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

// Opens the file target over `path` (a new store file) with `threads` executor threads, the
// store on it, and the row's plan; writes the store through it. Returns 0 or -1 with err.
int gio_open(const kv_workload *w, kv_runner *r, const options *o, const char *path, uint32_t threads, gio_path *g,
	     row *gr, char *err, size_t errlen)
{
	char uri[700];
	// Queues: one per executor thread (warm-up), the GPU's, and the store's own.
	kv_fmt(uri, sizeof(uri), "file://%s?size=%" PRIu64 "&threads=%u&queues=%u", path, kv_lib_store_bytes(w), threads,
	       threads + o->queues + 1);
	const uint64_t pool_bytes = 2ull * w->pool_blocks * w->obj_bytes * w->n_layers;
	uint64_t addr = 0;
	kv_lib_target t{};
	gio_kv_pool pool;
	kv_lib_pool(w, &pool);
	if (gio_ctx_open(uri, &g->ctx) || gio_ctx_register_device(g->ctx, w->pool_base, pool_bytes, &addr) ||
	    gio_kv_pool_bus(g->ctx, &pool, nullptr, &t.bus_pool)) {
		kv_fmt(err, errlen, "%s: %s", uri, gio_last_error());
		return -1;
	}
	t.caps = *gio_ctx_dptr_caps(g->ctx);
	// Host queue pairs, one per executor thread, each with a Read into the pool: the copy path
	// is warm before the GPU's commands come.
	for (uint32_t k = 0; k < threads; k++) {
		gio_qp *hq = nullptr;
		gio_sqe sqe;
		uint16_t s = 0;
		if (gio_ctx_qp_create(g->ctx, 8, &hq)) {
			kv_fmt(err, errlen, "host queue pair: %s", gio_last_error());
			return -1;
		}
		gio_prep_read(&sqe, 1, k, 1);
		gio_sqe_set_sgl_data(&sqe, addr, 4096);
		if (gio_qp_submit_wait(hq, &sqe, 10ull * 1000000000ull, &s, nullptr)) {
			kv_fmt(err, errlen, "warm-up read: %s", gio_last_error());
			return -1;
		}
	}
	std::vector<gio_qp> qps(o->queues);
	for (uint32_t q = 0; q < o->queues; q++) {
		gio_qp *qp = nullptr;
		if (gio_ctx_qp_create_ex(g->ctx, o->depth, GIO_CTX_QP_PINNED, &qp)) {
			kv_fmt(err, errlen, "pinned queue pair: %s", gio_last_error());
			return -1;
		}
		qps[q] = *qp; // the GPU alone uses it from now on
	}
	gr->scope = (qps[0].flags & GIO_QP_GPU_SCOPE) ? "gpu" : "sys"; // as made, not as expected
	KV_CK(cudaMalloc((void **)&g->d_qps, o->queues * sizeof(gio_qp)));
	KV_CK(cudaMemcpy(g->d_qps, qps.data(), o->queues * sizeof(gio_qp), cudaMemcpyHostToDevice));
	for (uint32_t q = 0; q < o->queues; q++)
		g->qp_ptrs.push_back(g->d_qps + q);
	t.qps = g->qp_ptrs.data();
	t.nqps = o->queues;
	t.nsid = 1;
	t.lba_shift = 12;
	t.meta = gio_meta;
	t.meta_arg = g;
	gio_kv_store_params sp;
	if (kv_lib_store_params(w, r->timeout_s, &sp, err, errlen))
		return -1;
	if (gio_kv_store_create(&g->ctx, 1, &sp, &g->store)) {
		kv_fmt(err, errlen, "store: %s", gio_last_error());
		return -1;
	}
	if (kv_lib_init(&g->lib, w, r, &t, g->store, err, errlen) ||
	    kv_lib_row_init(&g->row, &g->lib, KV_LIB_SGL, o->queues, o->warps_per_queue, r->timeout_s, err, errlen))
		return -1;
	g->row.before = gio_before;
	g->row.before_arg = g;
	const double t0 = kv_now_s();
	if (kv_lib_fill(&g->row, r, err, errlen))
		return -1;
	std::fprintf(stderr, "giouring store written through the library in %.1f s (%s)\n", kv_now_s() - t0, uri);
	g->fd = open(path, O_RDONLY | O_CLOEXEC);
	return 0;
}

void gio_close(gio_path *g)
{
	kv_lib_row_destroy(&g->row);
	if (g->store && gio_kv_store_close(g->store))
		std::fprintf(stderr, "store close: %s\n", gio_last_error());
	if (g->ctx && gio_ctx_close(g->ctx))
		std::fprintf(stderr, "close: %s\n", gio_last_error());
	kv_lib_destroy(&g->lib);
	for (void *p : g->meta)
		KV_CK(cudaFreeHost(p));
	if (g->d_qps)
		KV_CK(cudaFree(g->d_qps));
	if (g->fd >= 0)
		close(g->fd);
}

// The giouring row with `threads` executor threads, over a store file of its own in `dir`.
row run_gio(const kv_workload *w, kv_runner *r, const options *o, const char *dir, bool tmpfs, uint32_t threads)
{
	row gr;
	gr.dir = dir;
	char name[48], path[512], err[256];
	kv_fmt(name, sizeof(name), "giouring-file-%s", tmpfs ? "tmpfs" : "disk");
	kv_fmt(path, sizeof(path), "%s/giouring_bench_gpu_file.%ld.store", dir, (long)getpid());
	gio_path g;
	g.tmpfs = tmpfs;
	if (gio_open(w, r, o, path, threads, &g, &gr, err, sizeof(err))) {
		kv_result_skip(&gr.r, w, name, "giouring setup: %s", err);
		gr.r.status = KV_FAILED; // the path exists on every machine this bench runs on
	} else {
		char note[256];
		kv_fmt(note, sizeof(note),
		       "gio_kv_load_layer() per layer: %u thread blocks x %u warps -> %u pinned queue pairs (depth %u, %s scope) -> "
		       "%u CPU executor threads -> file -> pinned bounce -> cudaMemcpyAsync (copy engine) into HBM; one command "
		       "per block and layer (K and V)",
		       o->queues, o->warps_per_queue, o->queues, o->depth, gr.scope, threads);
		const kv_path p = kv_lib_path(&g.row, name, note);
		kv_measure(w, r, &p, &gr.r);
	}
	gr.r.threads = threads;
	gio_close(&g);
	unlink(path);
	return gr;
}

// The pread baseline with `threads` reading threads, over the same file.
row run_pread(const kv_workload *w, kv_runner *r, const options *o, const char *path, const char *dir, bool tmpfs,
	      uint32_t threads)
{
	row pr;
	pr.dir = dir;
	kv_store_file f;
	std::memset(&f, 0, sizeof(f));
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	f.tmpfs = tmpfs;
	kv_fmt(f.dir, sizeof(f.dir), "%s", dir);
	f.bytes = kv_total_bytes(w);
	f.ring = o->ring;
	if (f.fd < 0) {
		kv_result_skip(&pr.r, w, tmpfs ? "pread-tmpfs" : "pread-disk", "%s: %s", path, std::strerror(errno));
		pr.r.threads = threads;
	} else {
		kv_baseline_pread(w, r, &f, threads, &pr.r);
		close(f.fd);
	}
	return pr;
}

// Both paths over one file in `dir`, at every thread count.
void run_dir(const kv_workload *w, kv_runner *r, const options *o, const char *dir, std::vector<row> &rows)
{
	char path[512], err[256];
	struct statfs fs;
	struct statvfs vs;
	const bool tmpfs = statfs(dir, &fs) == 0 && fs.f_type == 0x01021994;
	row gr;
	gr.dir = dir;
	char name[48];
	kv_fmt(name, sizeof(name), "giouring-file-%s", tmpfs ? "tmpfs" : "disk");
	if (statvfs(dir, &vs) || (uint64_t)vs.f_bavail * vs.f_frsize < kv_total_bytes(w) + kv_lib_store_bytes(w) + (1ull << 30)) {
		kv_result_skip(&gr.r, w, name, "%s: missing or less than both stores + 1 GiB free", dir);
		rows.push_back(gr);
		return;
	}
	kv_fmt(path, sizeof(path), "%s/giouring_bench_gpu_file.%ld.img", dir, (long)getpid());
	std::fprintf(stderr, "writing %.2f GiB to %s\n", (double)kv_total_bytes(w) / (1ull << 30), path);
	if (write_store(w, path, err, sizeof(err))) {
		kv_result_skip(&gr.r, w, name, "%s", err);
		rows.push_back(gr);
		unlink(path);
		return;
	}
	for (int k = 0; k < o->n_threads; k++) {
		rows.push_back(run_gio(w, r, o, dir, tmpfs, o->threads[k]));
		rows.push_back(run_pread(w, r, o, path, dir, tmpfs, o->threads[k]));
	}
	unlink(path);
}

} // namespace

int main(int argc, char **argv)
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0); // a hang killed by a timeout still leaves its output
	// GPU warps wait for data the CPU executor copies in with CUDA streams: enough hardware queues
	// that no copy sits behind a waiting kernel (gio_ctx_register_device()). Before any CUDA call.
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	options o;
	if (parse(argc, argv, &o))
		return 2;
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		std::printf("SKIP: no GPU\n");
		return 77;
	}
	kv_runner r;
	kv_runner_init(&r, 0, o.warmup, o.reps, o.timeout_s);
	// Every kernel loaded before the first that spins (the lazy-loading trap: workload.cuh).
	kv_workload_load_kernels();
	if (gio_kv_layer_preload())
		kv_die("preload: %s", gio_last_error());
	kv_machine m;
	kv_machine_probe(0, &m);
	kv_workload w;
	if (kv_workload_create(&w, "llama3-8b", o.tokens, 42))
		return 2;
	kv_fill_store(&w, &r);
	std::vector<row> rows;
	for (const char *dir : o.dirs)
		run_dir(&w, &r, &o, dir, rows);

	std::string cmd;
	for (int i = 0; i < argc; i++)
		cmd += (i ? " " : "") + std::string(argv[i]);
	std::printf("# bench_gpu_file: KV restore from a file into HBM, GPU producers + CPU executor vs pread\n\n");
	std::printf("command: %s\n", cmd.c_str());
	kv_machine_line(stdout, &m);
	std::printf("workload: llama3-8b, %" PRIu64 " tokens, %" PRIu64 " objects of %" PRIu64 " KiB (%.2f GiB), pool "
		    "blocks shuffled; median of %d reps after %d warm-up\n\n",
		    w.tokens, kv_total_objects(&w), w.obj_bytes / 1024, (double)kv_total_bytes(&w) / (1ull << 30), o.reps,
		    o.warmup);
	std::printf("| path | file | CPU threads | ring scope | wall ms | GB/s | objects/s | CPU ms issuing thread | "
		    "CPU ms all threads | verified |\n");
	std::printf("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
	for (const row &x : rows) {
		const kv_result &k = x.r;
		char threads[16] = "-";
		if (k.threads)
			kv_fmt(threads, sizeof(threads), "%u", k.threads);
		if (k.status != KV_OK) {
			std::printf("| %s | %s | %s | %s | - | - | - | - | - | %s |\n", k.path, x.dir.c_str(), threads, x.scope,
				    kv_verified_word(&k));
			continue;
		}
		std::printf("| %s | %s | %s | %s | %.1f | %.2f | %.0f | %.1f | %.1f | %s |\n", k.path, x.dir.c_str(), threads,
			    x.scope, k.wall_ms, k.gbps, k.wall_ms > 0 ? (double)k.objects / (k.wall_ms * 1e-3) : 0.0, k.cpu_ms,
			    k.cpu_all_ms, kv_verified_word(&k));
	}
	std::printf("\n");
	for (const row &x : rows) {
		const kv_result &k = x.r;
		if (k.status == KV_OK)
			std::printf("- %s: %s; wall min %.1f / max %.1f ms over %d reps.\n", k.path, k.note, k.wall_ms_min,
				    k.wall_ms_max, k.reps);
		else
			std::printf("- %s: %s: %s\n", k.path, k.status == KV_SKIPPED ? "skipped" : "FAILED", k.error);
	}
	std::printf("\nCPU threads: the CPU threads doing the path's work: for giouring-file the file target's executor "
		    "threads (they read the file and start the copies into HBM; they stand in for an SSD controller), for "
		    "pread the threads that pread and cudaMemcpyAsync (1: the issuing thread itself). Ring scope: the "
		    "memory scope of the queue pairs' ordering (sys: a CPU executor). CPU ms all threads: CPU time of every "
		    "thread of the process (CLOCK_PROCESS_CPUTIME_ID) from the first call to the last byte landed, less "
		    "the issuing thread's own wait for the last byte, median per restore: compare this one. CPU ms issuing "
		    "thread: the thread that launches or calls, during its calls only. Every row moves the data (verified "
		    "byte for byte).\n");

	if (o.json) {
		FILE *f = std::fopen(o.json, "w");
		if (!f)
			kv_die("cannot write %s: %s", o.json, std::strerror(errno));
		std::fprintf(f, "{\n  \"bench\": \"gpu_file\",\n  \"command\": ");
		kv_json_string(f, cmd.c_str());
		std::fprintf(f, ",\n  \"machine\": {\"gpu\": ");
		kv_json_string(f, m.gpu);
		std::fprintf(f, ", \"driver\": ");
		kv_json_string(f, m.driver);
		std::fprintf(f, ", \"pcie\": ");
		kv_json_string(f, m.link);
		std::fprintf(f, ", \"cpu\": ");
		kv_json_string(f, m.cpu);
		std::fprintf(f, ", \"cores\": %ld},\n", m.cores);
		std::fprintf(f, "  \"tokens\": %" PRIu64 ", \"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 ",\n  \"rows\": [\n",
			     w.tokens, kv_total_objects(&w), kv_total_bytes(&w));
		for (size_t i = 0; i < rows.size(); i++) {
			const kv_result &k = rows[i].r;
			std::fprintf(f, "    {\"path\": ");
			kv_json_string(f, k.path);
			std::fprintf(f, ", \"dir\": ");
			kv_json_string(f, rows[i].dir.c_str());
			std::fprintf(f, ", \"threads\": %u, \"scope\": ", k.threads);
			kv_json_string(f, rows[i].scope);
			std::fprintf(f,
				     ", \"status\": %d, \"wall_ms\": %.3f, \"gbps\": %.3f, \"objects_per_s\": %.0f, "
				     "\"cpu_ms_issuing\": %.3f, \"cpu_ms_all_threads\": %.3f, \"verified\": %s, \"error\": ",
				     k.status, k.wall_ms, k.gbps, k.wall_ms > 0 ? (double)k.objects / (k.wall_ms * 1e-3) : 0.0,
				     k.cpu_ms, k.cpu_all_ms, k.status == KV_OK && k.verified ? "true" : "false");
			kv_json_string(f, k.error);
			std::fprintf(f, "}%s\n", i + 1 < rows.size() ? "," : "");
		}
		std::fprintf(f, "  ]\n}\n");
		std::fclose(f);
	}
	int failed = 0;
	for (const row &x : rows)
		failed |= x.r.status == KV_FAILED;
	kv_workload_destroy(&w);
	kv_runner_destroy(&r);
	return failed ? 1 : 0;
}
