// bench_gpu_file: KV objects restored from a file into HBM by GPU producers through the CPU
// executor of the software target (file://), beside per-object pread + cudaMemcpyAsync from the
// same file, at the same CPU thread counts, in the same run.
//
// The store (bench/common/workload.cuh, Llama3-8B: one 32 KiB object per (block, layer, K/V)) is
// written to a file in each directory (/dev/shm and --dir, a disk). giouring path: a
// persistent-per-rep kernel whose warps submit one NVMe Read per object (gio_submit_warp, 32
// commands per doorbell, gio_wait_warp) to queue pairs in pinned host memory (GIO_CTX_QP_PINNED,
// ring ordering at system scope: the executor is on the CPU); the destination is the object's
// shuffled slot in the pool, registered with gio_ctx_register_device(); the target's executor
// threads read the file (io_uring, O_DIRECT where possible) into pinned bounce buffers and
// cudaMemcpyAsync them into HBM (the copy engine moves the data), a batch per doorbell. Those
// threads stand in for an SSD controller. Baseline: pread per object into rings of pinned bounce
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
#include <giouring/device/verbs.cuh>
#include <giouring/proto/prep.h>
#include <giouring/proto/sgl_build.h>

#include "common/baselines_file.cuh"
#include "common/check.cuh"
#include "common/cli.cuh"
#include "common/file_store.cuh"
#include "common/json.cuh"
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

// ---- the giouring path -------------------------------------------------------------------------

struct restore_stats {
	unsigned long long done, errors;
	int first_rc;
	uint16_t first_status;
};

// Block b uses queue pair b; its warps take objects in turn; lane l of a warp one object. Each
// warp keeps up to 32 commands in flight (one doorbell per 32), so a queue pair holds
// 32 x warps-per-queue.
__global__ void restore_kernel(gio_qp *qps, unsigned char *const *pool, const uint32_t *perm, uint32_t n_layers,
			       uint32_t n_blocks, uint32_t pool_blocks, uint64_t obj_bytes, uint64_t timeout_ns,
			       restore_stats *st)
{
	gio_qp *qp = &qps[blockIdx.x];
	const uint32_t lane = threadIdx.x & 31u;
	const uint64_t warp = (blockIdx.x * (uint64_t)blockDim.x + threadIdx.x) / 32u;
	const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
	const uint64_t per_layer = 2ull * n_blocks, total = per_layer * n_layers;
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	for (uint64_t base = warp * 32; base < total; base += nwarps * 32) {
		const uint64_t obj = base + lane;
		const int active = obj < total;
		gio_sqe sqe;
		uint32_t cid = 0;
		uint16_t s = 0;
		if (active) {
			const uint32_t l = (uint32_t)(obj / per_layer);
			const uint64_t i = obj % per_layer;
			const uint64_t src = ((uint64_t)l * per_layer + i) * obj_bytes; // kv_src_offset
			const uint64_t dst = (uint64_t)(uintptr_t)pool[l] + kv_pool_offset(perm, n_blocks, pool_blocks, obj_bytes, i);
			gio_prep_read(&sqe, 1, src >> 12, (uint32_t)(obj_bytes >> 12));
			gio_sqe_set_sgl_data(&sqe, dst, (uint32_t)obj_bytes); // bus address = device pointer
		}
		int rc = gio_submit_warp(qp, &sqe, 0, 0, active, deadline, &cid);
		if (rc == 0)
			rc = gio_wait_warp(qp, cid, active, deadline, &s);
		if (active && rc && atomicAdd(&st->errors, 1ull) == 0) {
			st->first_rc = rc;
			st->first_status = s;
		}
		if (active && rc == 0)
			atomicAdd(&st->done, 1ull);
	}
}

struct gio_path {
	gio_ctx *ctx = nullptr;
	gio_qp *d_qps = nullptr;
	uint32_t nqps = 0, warps_per_queue = 4;
	restore_stats *st = nullptr; // managed
	int fd = -1;                 // for dropping the page cache of a disk file
	int tmpfs = 0;
	uint64_t expected = 0;
};

// Before each repetition: the previous one's outcome (a failed command is an error, even when
// verification would pass), counters reset, page cache dropped for a disk file.
int gio_prepare(const kv_workload *w, kv_runner *r, void *arg)
{
	gio_path *g = (gio_path *)arg;
	(void)w;
	if (g->st->errors) {
		kv_fmt(r->err, sizeof(r->err), "%llu commands failed (first: rc %d, %s)", g->st->errors, g->st->first_rc,
		       gio_status_str(g->st->first_status));
		return 1;
	}
	std::memset(g->st, 0, sizeof(*g->st));
	if (!g->tmpfs)
		(void)posix_fadvise(g->fd, 0, 0, POSIX_FADV_DONTNEED);
	return 0;
}

int gio_issue(const kv_workload *w, kv_runner *r, void *arg)
{
	gio_path *g = (gio_path *)arg;
	restore_kernel<<<g->nqps, 32 * g->warps_per_queue, 0, r->stream>>>(g->d_qps, w->d_pool, w->d_perm, w->n_layers, w->n_blocks,
									    w->pool_blocks, w->obj_bytes,
									    (uint64_t)(r->timeout_s * 1e9), g->st);
	const cudaError_t e = cudaGetLastError();
	return e == cudaSuccess ? 0 : KV_ERR(r, e, "restore_kernel launch");
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

// The giouring row with `threads` executor threads, over the store file at path.
row run_gio(const kv_workload *w, kv_runner *r, const options *o, const char *path, const char *dir, bool tmpfs,
	    uint32_t threads)
{
	row gr;
	gr.dir = dir;
	char name[48];
	kv_fmt(name, sizeof(name), "giouring-file-%s", tmpfs ? "tmpfs" : "disk");
	// Executor threads, host queue pairs (one per thread, to warm the copy path up before the
	// persistent kernel), then the pinned queue pairs the GPU uses alone.
	gio_path g;
	g.warps_per_queue = o->warps_per_queue;
	g.tmpfs = tmpfs;
	char uri[700];
	kv_fmt(uri, sizeof(uri), "file://%s?threads=%u&queues=%u", path, threads, threads + o->queues);
	int rc = gio_ctx_open(uri, &g.ctx);
	const uint64_t pool_bytes = 2ull * w->pool_blocks * w->obj_bytes * w->n_layers;
	uint64_t addr = 0;
	if (rc == 0 && (rc = gio_ctx_register_device(g.ctx, w->pool_base, pool_bytes, &addr)) == 0 &&
	    addr != (uint64_t)(uintptr_t)w->pool_base)
		rc = -EINVAL;
	for (uint32_t t = 0; rc == 0 && t < threads; t++) {
		gio_qp *hq = nullptr;
		gio_sqe sqe;
		uint16_t s = 0;
		if ((rc = gio_ctx_qp_create(g.ctx, 8, &hq)) == 0) {
			gio_prep_read(&sqe, 1, t, 1);
			gio_sqe_set_sgl_data(&sqe, addr, 4096);
			rc = gio_qp_submit_wait(hq, &sqe, 10ull * 1000000000ull, &s, nullptr);
		}
	}
	std::vector<gio_qp> qps(o->queues);
	for (uint32_t q = 0; rc == 0 && q < o->queues; q++) {
		gio_qp *qp = nullptr;
		if ((rc = gio_ctx_qp_create_ex(g.ctx, o->depth, GIO_CTX_QP_PINNED, &qp)) == 0)
			qps[q] = *qp; // the GPU alone uses it from now on
	}
	if (rc) {
		kv_result_skip(&gr.r, w, name, "giouring setup: %s (%d)", gio_last_error(), rc);
	} else {
		// The scope the queue pairs were made with, not the one expected.
		gr.scope = (qps[0].flags & GIO_QP_GPU_SCOPE) ? "gpu" : "sys";
		KV_CK(cudaMalloc((void **)&g.d_qps, o->queues * sizeof(gio_qp)));
		KV_CK(cudaMemcpy(g.d_qps, qps.data(), o->queues * sizeof(gio_qp), cudaMemcpyHostToDevice));
		KV_CK(cudaMallocManaged((void **)&g.st, sizeof(*g.st)));
		std::memset(g.st, 0, sizeof(*g.st));
		g.nqps = o->queues;
		g.fd = open(path, O_RDONLY | O_CLOEXEC);
		char note[256];
		kv_fmt(note, sizeof(note),
		       "GPU warps -> %u pinned queue pairs (depth %u, %u warps each, %s scope) -> %u CPU executor threads -> "
		       "file -> pinned bounce -> cudaMemcpyAsync (copy engine) into HBM",
		       o->queues, o->depth, o->warps_per_queue, gr.scope, threads);
		const kv_path p = {name, note, gio_prepare, gio_issue, &g, KV_VERIFY_SHUFFLED, o->queues, 1u};
		kv_measure(w, r, &p, &gr.r);
		if (gr.r.status == KV_OK && g.st->errors) {
			gr.r.status = KV_FAILED;
			kv_fmt(gr.r.error, sizeof(gr.r.error), "%llu commands failed (first: rc %d, %s)", g.st->errors, g.st->first_rc,
			       gio_status_str(g.st->first_status));
		}
	}
	gr.r.threads = threads;
	if (g.ctx && gio_ctx_close(g.ctx))
		std::fprintf(stderr, "close: %s\n", gio_last_error());
	if (g.d_qps)
		KV_CK(cudaFree(g.d_qps));
	if (g.st)
		KV_CK(cudaFree(g.st));
	if (g.fd >= 0)
		close(g.fd);
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
	if (statvfs(dir, &vs) || (uint64_t)vs.f_bavail * vs.f_frsize < kv_total_bytes(w) + (1ull << 30)) {
		kv_result_skip(&gr.r, w, name, "%s: missing or less than the store + 1 GiB free", dir);
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
		rows.push_back(run_gio(w, r, o, path, dir, tmpfs, o->threads[k]));
		rows.push_back(run_pread(w, r, o, path, dir, tmpfs, o->threads[k]));
	}
	unlink(path);
}

} // namespace

int main(int argc, char **argv)
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0); // a hang killed by a timeout still leaves its output
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
	{
		cudaFuncAttributes a;
		KV_CK(cudaFuncGetAttributes(&a, restore_kernel));
	}
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
	std::printf("| path | file | CPU threads | ring scope | wall ms | GB/s | commands/s | CPU ms issuing thread | "
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
				     ", \"status\": %d, \"wall_ms\": %.3f, \"gbps\": %.3f, \"commands_per_s\": %.0f, "
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
