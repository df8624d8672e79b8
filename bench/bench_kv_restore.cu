// bench_kv_restore: KV-cache restore through giouring (GPU-submitted NVMe Reads served by the
// GPU-executed software target over mapped pinned host memory, mem://host?exec=gpu), beside the
// baselines of bench/common/ (baselines_memory.cuh, baselines_file.cuh), on the workload of
// bench/common/workload.cuh, in one process and run:
//
// | path        | what the CPU does per restore                                 | lands shuffled |
// | ----------- | ------------------------------------------------------------- | -------------- |
// | giouring-sgl-Nsm | one gio_kv_load_layer() per layer: the library's I/O kernel (N SMs) over a store on the target; each block's K and V of the layer one NVMe Read whose data pointer is its SGL table entry (a descriptor and a two-entry segment list, built once) | yes |
// | giouring-prp-Nsm | the same with the PRP table (PRP1/PRP2 and a PRP list per object chaining both halves' pages, built once) | yes |
// | bulk        | one cudaMemcpyAsync of every byte (the PCIe limit)            | no (verified unshuffled) |
// | per-object  | one cudaMemcpyAsync per object (LMCache DRAM tier)            | yes |
// | batch       | one cudaMemcpyBatchAsync per layer                            | yes |
// | gather-Nsm  | one kernel launch per layer; N SMs read mapped pinned memory  | yes |
// | pread-*     | pread per object into bounce buffers + cudaMemcpyAsync        | yes (--pread-tokens prefix) |
// | cufile      | not implemented: a line says whether cuFile could even register the file |
//
// Every path's pool is poisoned before each repetition and verified byte for byte after it; a
// wrong byte fails the run (exit 1). Output: the machine line and a Markdown table on stdout,
// progress on stderr, JSON with --json. Exits 77 (skipped) without a GPU. Run with --help.
#include <string>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>
#include <giouring/target/gpu_target.h>

#include "common/baselines_file.cuh"
#include "common/baselines_memory.cuh"
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

const int kSkip = 77;
const int kMaxDirs = 4, kMaxSms = 16;

struct options {
	const char *geometry = "llama3-8b";
	uint64_t tokens = 32768;
	uint64_t pread_tokens = 32768;
	int reps = 3, warmup = 1;
	uint32_t gather_sms[kMaxSms] = {8};
	int n_gather_sms = 1;
	const char *dirs[kMaxDirs] = {};
	int n_dirs = 0;
	uint32_t pread_ring = 4;
	int pread = 1, cufile = 1;
	int bulk = 1, per_object = 1, batch = 1, gather = 1, gio = 1, gio_prp = 1;
	uint32_t gio_sms[kMaxSms] = {8};
	int n_gio_sms = 1;
	uint32_t io_warps = 32, exec_sms = 16, exec_warps = 16, queues = 256, depth = 256;
	const char *json = NULL;
	uint64_t seed = 1;
	double timeout_s = 300;
	int device = 0;
};

void usage(FILE *f)
{
	std::fprintf(f,
		     "usage: bench_kv_restore [options]\n"
		     "  --tokens N         prefix length (32768; a K suffix multiplies by 1024: 128K)\n"
		     "  --geometry NAME    llama3-8b (32 layers, block 16; default) or qwen3-32b (64 layers, block 64)\n"
		     "  --reps N           timed repetitions per path, after the warm-up (3); medians are reported\n"
		     "  --warmup N         untimed repetitions first (1)\n"
		     "  --gather-sms LIST  gather kernel rows, comma-separated SM counts (8)\n"
		     "  --file-dir DIR     a pread row with its store file in DIR; repeatable (default /dev/shm)\n"
		     "  --pread-tokens N   prefix restored by the pread rows (32768, at most --tokens): they are slow\n"
		     "  --pread-ring N     pinned bounce buffers in flight for pread (4)\n"
		     "  --no-pread         skip the pread rows (and the cuFile probe)\n"
		     "  --no-cufile        skip the cuFile probe\n"
		     "  --paths LIST       run only these of bulk,per-object,batch,gather,pread,giouring,giouring-prp\n"
		     "  --gio-sms LIST     giouring rows: SMs of the I/O kernel, comma-separated (8)\n"
		     "  --io-warps N       warps per I/O kernel block (32)\n"
		     "  --exec-sms N       SMs of the GPU executor standing in for the SSDs (16)\n"
		     "  --exec-warps N     warps per executor block (16); queue pairs: --queues (256), --depth (256)\n"
		     "  --seed N           seed of the pool permutation (1)\n"
		     "  --timeout S        bound of every wait in seconds (300)\n"
		     "  --device N         CUDA device (0)\n"
		     "  --json PATH        also write the results as JSON\n"
		     "  --quick            smoke run: 2048 tokens, pread 1024, 1 rep (ctest)\n");
}

int parse_tokens(const char *s, uint64_t *out)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = std::strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'K' || *end == 'k') {
		v *= 1024;
		end++;
	}
	if (*end || v == 0)
		return -1;
	*out = v;
	return 0;
}

int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end = NULL;
	errno = 0;
	const long v = std::strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int parse_args(int argc, char **argv, options *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		long n = 0;
		if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
			usage(stdout);
			std::exit(0);
		} else if (!std::strcmp(a, "--quick")) {
			o->tokens = 2048;
			o->pread_tokens = 1024;
			o->reps = 1;
			o->warmup = 1;
			continue;
		} else if (!std::strcmp(a, "--no-pread")) {
			o->pread = 0;
			continue;
		} else if (!std::strcmp(a, "--no-cufile")) {
			o->cufile = 0;
			continue;
		}
		if (!v) {
			std::fprintf(stderr, "%s: missing value or unknown option\n", a);
			return -1;
		}
		i++;
		if (!std::strcmp(a, "--tokens")) {
			if (parse_tokens(v, &o->tokens))
				goto bad;
		} else if (!std::strcmp(a, "--pread-tokens")) {
			if (parse_tokens(v, &o->pread_tokens))
				goto bad;
		} else if (!std::strcmp(a, "--geometry")) {
			o->geometry = v;
		} else if (!std::strcmp(a, "--reps")) {
			if (parse_int(v, 1, 1000, &n))
				goto bad;
			o->reps = (int)n;
		} else if (!std::strcmp(a, "--warmup")) {
			if (parse_int(v, 0, 1000, &n))
				goto bad;
			o->warmup = (int)n;
		} else if (!std::strcmp(a, "--pread-ring")) {
			if (parse_int(v, 1, 1024, &n))
				goto bad;
			o->pread_ring = (uint32_t)n;
		} else if (!std::strcmp(a, "--seed")) {
			if (parse_int(v, 0, 0x7fffffffL, &n))
				goto bad;
			o->seed = (uint64_t)n;
		} else if (!std::strcmp(a, "--timeout")) {
			if (parse_int(v, 1, 86400, &n))
				goto bad;
			o->timeout_s = (double)n;
		} else if (!std::strcmp(a, "--device")) {
			if (parse_int(v, 0, 1023, &n))
				goto bad;
			o->device = (int)n;
		} else if (!std::strcmp(a, "--json")) {
			o->json = v;
		} else if (!std::strcmp(a, "--file-dir")) {
			if (o->n_dirs == kMaxDirs)
				goto bad;
			o->dirs[o->n_dirs++] = v;
		} else if (!std::strcmp(a, "--io-warps") || !std::strcmp(a, "--exec-sms") || !std::strcmp(a, "--exec-warps") ||
			   !std::strcmp(a, "--queues") || !std::strcmp(a, "--depth")) {
			if (parse_int(v, 1, 4096, &n))
				goto bad;
			uint32_t *dst = !std::strcmp(a, "--io-warps")    ? &o->io_warps
					: !std::strcmp(a, "--exec-sms")   ? &o->exec_sms
					: !std::strcmp(a, "--exec-warps") ? &o->exec_warps
					: !std::strcmp(a, "--queues")     ? &o->queues
									  : &o->depth;
			*dst = (uint32_t)n;
		} else if (!std::strcmp(a, "--gio-sms")) {
			if ((o->n_gio_sms = kv_parse_u32_list(v, 1, 100000, o->gio_sms, kMaxSms)) < 0)
				goto bad;
		} else if (!std::strcmp(a, "--gather-sms")) {
			if ((o->n_gather_sms = kv_parse_u32_list(v, 1, 100000, o->gather_sms, kMaxSms)) < 0)
				goto bad;
		} else if (!std::strcmp(a, "--paths")) {
			char buf[256];
			kv_fmt(buf, sizeof(buf), "%s", v);
			o->bulk = o->per_object = o->batch = o->gather = o->pread = o->gio = o->gio_prp = 0;
			for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				if (!std::strcmp(t, "bulk"))
					o->bulk = 1;
				else if (!std::strcmp(t, "per-object"))
					o->per_object = 1;
				else if (!std::strcmp(t, "batch"))
					o->batch = 1;
				else if (!std::strcmp(t, "gather"))
					o->gather = 1;
				else if (!std::strcmp(t, "pread"))
					o->pread = 1;
				else if (!std::strcmp(t, "giouring"))
					o->gio = 1;
				else if (!std::strcmp(t, "giouring-prp"))
					o->gio_prp = 1;
				else
					goto bad;
			}
		} else {
			std::fprintf(stderr, "unknown option %s\n", a);
			return -1;
		}
		continue;
	bad:
		std::fprintf(stderr, "bad value for %s: %s\n", a, v);
		return -1;
	}
	if (!o->n_dirs)
		o->dirs[o->n_dirs++] = "/dev/shm";
	return 0;
}

void print_table(const std::vector<kv_result> &rows)
{
	std::printf("| path | tokens | objects | wall ms | GPU ms | CPU ms issuing | calls | SMs | GB/s | verified |\n");
	std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
	for (const kv_result &r : rows) {
		if (r.status != KV_OK) {
			std::printf("| %s | %" PRIu64 " | %" PRIu64 " | - | - | - | - | - | - | %s |\n", r.path, r.tokens, r.objects,
				    kv_verified_word(&r));
			continue;
		}
		std::printf("| %s | %" PRIu64 " | %" PRIu64 " | %.1f | %.1f | %.1f | %" PRIu64 " | %u | %.1f | %s |\n", r.path,
			    r.tokens, r.objects, r.wall_ms, r.gpu_ms, r.cpu_ms, r.calls, r.sms, r.gbps, kv_verified_word(&r));
	}
	std::printf("\n");
	for (const kv_result &r : rows) {
		if (r.status == KV_OK)
			std::printf("- %s: %s; wall min %.1f / max %.1f ms over %d reps.\n", r.path, r.note, r.wall_ms_min,
				    r.wall_ms_max, r.reps);
		else
			std::printf("- %s: %s: %s\n", r.path, r.status == KV_SKIPPED ? "skipped" : "FAILED", r.error);
	}
}

void write_json(const char *path, int argc, char **argv, const kv_machine *m, const kv_workload *w, const options *o,
		const std::vector<kv_result> &rows, const char *cufile)
{
	FILE *f = std::fopen(path, "w");
	if (!f)
		kv_die("cannot write %s: %s", path, std::strerror(errno));
	std::fprintf(f, "{\n  \"bench\": \"kv_restore\",\n  \"command\": ");
	std::string cmd;
	for (int i = 0; i < argc; i++) {
		if (i)
			cmd += ' ';
		cmd += argv[i];
	}
	kv_json_string(f, cmd.c_str());
	std::fprintf(f, ",\n  \"machine\": {\"gpu\": ");
	kv_json_string(f, m->gpu);
	std::fprintf(f, ", \"sms\": %d, \"hbm_gib\": %.1f, \"driver\": ", m->sms, m->hbm_gib);
	kv_json_string(f, m->driver);
	std::fprintf(f, ", \"driver_cuda_api\": %d, \"runtime\": %d, \"pci_bus_id\": ", m->driver_api, m->runtime);
	kv_json_string(f, m->busid);
	std::fprintf(f, ", \"pcie_link\": ");
	kv_json_string(f, m->link);
	std::fprintf(f, ", \"pcie_link_max\": ");
	kv_json_string(f, m->link_max);
	std::fprintf(f, ", \"cpu\": ");
	kv_json_string(f, m->cpu);
	std::fprintf(f, ", \"cores\": %ld},\n", m->cores);
	std::fprintf(f,
		     "  \"workload\": {\"geometry\": \"%s\", \"layers\": %u, \"kv_heads\": %u, \"head_dim\": %u, \"dtype_bytes\": %u, "
		     "\"block_tokens\": %u, \"tokens\": %" PRIu64 ", \"blocks\": %u, \"obj_bytes\": %" PRIu64 ", \"objects\": %" PRIu64
		     ", \"bytes\": %" PRIu64 ", \"seed\": %" PRIu64 ", \"reps\": %d, \"warmup\": %d},\n",
		     w->geom_name, w->geom.layers, w->geom.kv_heads, w->geom.head_dim, w->geom.dtype_bytes, w->geom.block_tokens,
		     w->tokens, w->n_blocks, w->obj_bytes, kv_total_objects(w), kv_total_bytes(w), w->seed, o->reps, o->warmup);
	std::fprintf(f, "  \"cufile\": ");
	kv_json_string(f, cufile);
	std::fprintf(f, ",\n  \"rows\": [\n");
	for (size_t i = 0; i < rows.size(); i++) {
		const kv_result &r = rows[i];
		static const char *const status[] = {"ok", "skipped", "failed"};
		std::fprintf(f, "    {\"path\": ");
		kv_json_string(f, r.path);
		std::fprintf(f, ", \"status\": \"%s\", \"note\": ", status[r.status]);
		kv_json_string(f, r.note);
		std::fprintf(f, ", \"error\": ");
		kv_json_string(f, r.error);
		std::fprintf(f,
			     ", \"tokens\": %" PRIu64 ", \"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"sms\": %u, \"calls\": %" PRIu64
			     ", \"reps\": %d, \"wall_ms\": %.3f, \"gpu_ms\": %.3f, \"cpu_ms\": %.3f, \"cpu_ms_all_threads\": %.3f, \"wall_ms_min\": %.3f, "
			     "\"wall_ms_max\": %.3f, \"gbps\": %.3f, \"verified\": %s, \"bad_words\": %" PRIu64
			     ", \"first_bad_obj\": %" PRId64 "}%s\n",
			     r.tokens, r.objects, r.bytes, r.sms, r.calls, r.reps, r.wall_ms, r.gpu_ms, r.cpu_ms, r.cpu_all_ms, r.wall_ms_min,
			     r.wall_ms_max, r.gbps, r.verified && r.status == KV_OK ? "true" : "false", r.bad_words, r.first_bad_obj,
			     i + 1 < rows.size() ? "," : "");
	}
	std::fprintf(f, "  ]\n}\n");
	if (std::fclose(f))
		kv_die("cannot write %s", path);
}

void progress(const kv_result &r)
{
	if (r.status == KV_OK)
		std::fprintf(stderr, "  %-14s %9.1f ms wall  %9.1f ms CPU  %6.1f GB/s  verified\n", r.path, r.wall_ms, r.cpu_ms, r.gbps);
	else
		std::fprintf(stderr, "  %-14s %s: %s\n", r.path, r.status == KV_SKIPPED ? "skipped" : "FAILED", r.error);
}

// ---- the giouring path: the library's calls (bench/common/kv_lib.cuh) ------------------------

struct gio_bench {
	gio_gpu_target *g = nullptr;
	gio_kv_store *store = nullptr;
	gio_kv_blockdev bd{};          // the store's device: read until the store closes
	std::vector<gio_qp *> qps;     // the target's queue pairs (device pointers)
	std::vector<void *> meta;      // list memory the tables point into (device memory, registered)
	kv_lib lib{};
	std::vector<kv_lib_row> rows;  // per (SM count, form), planned before the executor starts
	std::vector<std::string> skipped; // per row: why it cannot run, or empty
	double setup_s = 0, fill_s = 0;
};

int gio_meta(void *arg, uint64_t bytes, void **dev, uint64_t *bus)
{
	gio_bench *b = (gio_bench *)arg;
	if (cudaMalloc(dev, bytes) != cudaSuccess)
		return -ENOMEM;
	b->meta.push_back(*dev);
	return gio_gpu_target_register(b->g, *dev, bytes, bus);
}

// Opens the GPU target, registers and describes the pool, creates the store on the target,
// builds both P2P tables, plans every row, starts the executor and writes the store through the
// first row's plan (kv_lib_fill).
int gio_setup(const kv_workload *w, kv_runner *r, const options *o, gio_bench *b, char *err, size_t errlen)
{
	const double t0 = kv_now_s();
	char uri[512];
	kv_fmt(uri, sizeof(uri), "mem://host?exec=gpu&size=%" PRIu64 "&queues=%u&depth=%u&sms=%u&warps=%u&mdts=8",
	       kv_lib_store_bytes(w), o->queues, o->depth, o->exec_sms, o->exec_warps);
	if (gio_gpu_target_open(uri, &b->g)) {
		kv_fmt(err, errlen, "%s: %s", uri, gio_last_error());
		return -1;
	}
	std::fprintf(stderr, "giouring target: %s\n", uri);
	kv_lib_target t{};
	gio_kv_pool pool;
	kv_lib_pool(w, &pool);
	uint64_t addr;
	if (gio_gpu_target_register(b->g, w->pool_base, 2ull * w->pool_blocks * w->obj_bytes * w->n_layers, &addr) ||
	    gio_kv_pool_bus_gpu(b->g, &pool, nullptr, &t.bus_pool)) {
		kv_fmt(err, errlen, "register the pool: %s", gio_last_error());
		return -1;
	}
	t.caps = b->g->host_tgt.caps;
	for (uint32_t q = 0; q < b->g->cfg.queues; q++)
		b->qps.push_back(gio_gpu_target_qp(b->g, q));
	t.qps = b->qps.data();
	t.nqps = (uint32_t)b->qps.size();
	t.nsid = GIO_TGT_NSID;
	t.lba_shift = b->g->cfg.lba_shift;
	t.meta = gio_meta;
	t.meta_arg = b;
	gio_kv_store_params sp;
	if (kv_lib_store_params(w, r->timeout_s, &sp, err, errlen))
		return -1;
	if (gio_kv_gpu_target_blockdev(b->g, &b->bd) || gio_kv_store_create_blockdevs(&b->bd, 1, &sp, &b->store)) {
		kv_fmt(err, errlen, "store: %s", gio_last_error());
		return -1;
	}
	if (kv_lib_init(&b->lib, w, r, &t, b->store, err, errlen))
		return -1;
	for (int k = 0; k < o->n_gio_sms; k++)
		for (int form = KV_LIB_SGL; form <= KV_LIB_PRP; form++) {
			if (!(form == KV_LIB_SGL ? o->gio : o->gio_prp))
				continue;
			kv_lib_row row;
			char why[256] = "";
			const int rc = kv_lib_row_init(&row, &b->lib, form, o->gio_sms[k], o->io_warps, r->timeout_s, why, sizeof(why));
			if (rc == -1) {
				kv_fmt(err, errlen, "%s", why);
				return -1;
			}
			b->rows.push_back(row);
			b->skipped.push_back(why);
		}
	if (gio_gpu_target_start(b->g)) {
		kv_fmt(err, errlen, "start: %s", gio_last_error());
		return -1;
	}
	b->setup_s = kv_now_s() - t0;
	for (kv_lib_row &row : b->rows)
		if (row.plan) {
			const double t1 = kv_now_s();
			if (kv_lib_fill(&row, r, err, errlen))
				return -1;
			b->fill_s = kv_now_s() - t1;
			break;
		}
	return 0;
}

int gio_teardown(gio_bench *b, char *err, size_t errlen)
{
	gio_tgt_stats ts{};
	int rc = 0;
	for (kv_lib_row &row : b->rows)
		kv_lib_row_destroy(&row);
	if (b->g && gio_gpu_target_stop(b->g, 10000, &ts)) {
		kv_fmt(err, errlen, "stop: %s", gio_last_error());
		return -1;
	}
	if (b->g)
		std::fprintf(stderr, "giouring target: %llu commands, %llu errors, %llu executor batches\n",
			     (unsigned long long)ts.commands, (unsigned long long)ts.errors, b->g->ctl->batches);
	if (b->g && ts.errors) {
		kv_fmt(err, errlen, "the target completed %llu commands with an error", (unsigned long long)ts.errors);
		rc = -1;
	}
	if (b->store && gio_kv_store_close(b->store)) {
		kv_fmt(err, errlen, "store close: %s", gio_last_error());
		rc = -1;
	}
	gio_gpu_target_close(b->g);
	kv_lib_destroy(&b->lib);
	for (void *p : b->meta)
		KV_CK(cudaFree(p));
	return rc;
}

int gio_row(const kv_workload *w, kv_runner *r, gio_bench *b, size_t i, kv_result *res)
{
	kv_lib_row &row = b->rows[i];
	const int prp = row.form == KV_LIB_PRP;
	char name[48], note[256];
	kv_fmt(name, sizeof(name), "giouring-%s-%usm", prp ? "prp" : "sgl", row.io_sms);
	if (!row.plan) {
		kv_result_skip(res, w, name, "%s", b->skipped[i].c_str());
		return 0;
	}
	const uint32_t fl = b->g->cfg.flags;
	kv_fmt(note, sizeof(note),
	       "gio_kv_load_layer() per layer: %u SMs x %u warps; executor (the SSDs' stand-in) %u SMs x %u warps, %u queue "
	       "pairs of %u (rings in %s, %s scope); one command per block and layer (K and V); %s table %" PRIu64
	       " B/object built once in %.1f ms",
	       row.io_sms, row.io_warps, b->g->cfg.exec_blocks, b->g->cfg.exec_warps, b->g->cfg.queues, b->g->cfg.depth,
	       (fl & GIO_GPU_RINGS_HOST) ? "host memory" : "HBM", (fl & GIO_GPU_SCOPE_SYS) ? "sys" : "gpu", prp ? "PRP" : "SGL",
	       kv_lib_meta_per_object(&b->lib, row.form), b->lib.table_ms[row.form]);
	const kv_path p = kv_lib_path(&row, name, note);
	return kv_measure(w, r, &p, res);
}

} // namespace

int main(int argc, char **argv)
{
	options o;
	if (parse_args(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	int ndev = 0;
	const cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0) {
		std::printf("SKIP: no CUDA GPU (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return kSkip;
	}
	if (o.device >= ndev) {
		std::fprintf(stderr, "--device %d: only %d GPUs\n", o.device, ndev);
		return 2;
	}

	kv_runner r;
	kv_runner_init(&r, o.device, o.warmup, o.reps, o.timeout_s);
	// Every kernel loaded before anything spins on the device (the lazy-loading trap:
	// workload.cuh): the library's I/O, wait and table kernels here, before the target's executor
	// starts (the executor's own kernel is loaded by the target's start).
	kv_workload_load_kernels();
	kv_baselines_memory_load_kernels();
	if (gio_kv_layer_preload()) {
		std::fprintf(stderr, "preload of the KV layer's kernels: %s\n", gio_last_error());
		return 1;
	}
	kv_machine m;
	kv_machine_probe(o.device, &m);

	kv_workload w;
	const double t0 = kv_now_s();
	if (kv_workload_create(&w, o.geometry, o.tokens, o.seed))
		return 2;
	kv_fill_store(&w, &r);
	std::fprintf(stderr, "workload: %s, %" PRIu64 " tokens, %" PRIu64 " objects of %" PRIu64 " KiB, %.2f GiB; set up in %.1f s\n",
		     w.geom_name, w.tokens, kv_total_objects(&w), w.obj_bytes >> 10, (double)kv_total_bytes(&w) / (1ull << 30),
		     kv_now_s() - t0);

	std::vector<kv_result> rows;
	kv_result res{};
	int failed = 0;
	auto add = [&](int rc) {
		failed |= rc != 0 || res.status == KV_FAILED;
		progress(res);
		rows.push_back(res);
	};
	if (o.bulk)
		add(kv_baseline_bulk(&w, &r, &res));
	if (o.per_object)
		add(kv_baseline_per_object(&w, &r, &res));
	if (o.batch)
		add(kv_baseline_batch(&w, &r, &res));
	for (int k = 0; o.gather && k < o.n_gather_sms; k++)
		add(kv_baseline_gather(&w, &r, o.gather_sms[k], &res));

	if (o.gio || o.gio_prp) {
		gio_bench b;
		char err[256];
		if (gio_setup(&w, &r, &o, &b, err, sizeof(err))) {
			kv_result_skip(&res, &w, "giouring", "%s", err);
			res.status = KV_FAILED;
			add(-1);
		} else {
			std::fprintf(stderr, "giouring: set up in %.1f s (tables: SGL %.1f ms, PRP %.1f ms); store written in %.1f s\n",
				     b.setup_s, b.lib.table_ms[KV_LIB_SGL], b.lib.table_ms[KV_LIB_PRP], b.fill_s);
			for (size_t i = 0; i < b.rows.size(); i++)
				add(gio_row(&w, &r, &b, i, &res));
		}
		if (gio_teardown(&b, err, sizeof(err))) {
			kv_result_skip(&res, &w, "giouring-teardown", "%s", err);
			res.status = KV_FAILED;
			add(-1);
		}
	}

	char cufile[256] = "cuFile: not probed (--no-cufile or --no-pread)";
	if (o.pread) {
		const kv_workload view = kv_workload_prefix_view(&w, std::min(o.pread_tokens, o.tokens));
		for (int d = 0; d < o.n_dirs; d++) {
			kv_store_file f;
			char err[256];
			const double t1 = kv_now_s();
			if (kv_store_file_create(&w, &view, o.dirs[d], o.pread_ring, &f, err, sizeof(err))) {
				kv_result_skip(&res, &view, "pread", "%s", err);
				add(0);
				continue;
			}
			std::fprintf(stderr, "store file in %s: %.2f GiB written in %.1f s\n", o.dirs[d],
				     (double)f.bytes / (1ull << 30), kv_now_s() - t1);
			add(kv_baseline_pread(&view, &r, &f, 1, &res));
			if (o.cufile && d == 0)
				kv_cufile_probe(f.fd, cufile, sizeof(cufile));
			kv_store_file_destroy(&f);
		}
	}

	std::printf("# KV restore: giouring and baselines\n\n");
	kv_machine_line(stdout, &m);
	std::printf("workload: %s (%u layers, %u KV heads, head dim %u, bf16, block %u tokens), prefix %" PRIu64
		    " tokens = %u blocks, %" PRIu64 " objects of %" PRIu64 " KiB, %.2f GiB; pool blocks shuffled (seed %" PRIu64
		    "); medians of %d reps after %d warm-up\n\n",
		    w.geom_name, w.geom.layers, w.geom.kv_heads, w.geom.head_dim, w.geom.block_tokens, w.tokens, w.n_blocks,
		    kv_total_objects(&w), w.obj_bytes >> 10, (double)kv_total_bytes(&w) / (1ull << 30), w.seed, o.reps, o.warmup);
	print_table(rows);
	std::printf("- %s\n", cufile);
	std::printf("\nwall: host clock from before the first call to the last byte landed; GPU: CUDA events around the "
		    "same; CPU: the issuing thread's CPU time (CLOCK_THREAD_CPUTIME_ID) during the calls only; GB/s: bytes / wall.\n");
	if (o.json)
		write_json(o.json, argc, argv, &m, &w, &o, rows, cufile);

	kv_workload_destroy(&w);
	kv_runner_destroy(&r);
	if (failed) {
		std::printf("FAIL: at least one path failed or restored a wrong byte\n");
		return 1;
	}
	return 0;
}
