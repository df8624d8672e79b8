// runner.cuh: how a KV restore path is measured, and the row it gives.
//
// A path is an issue function that enqueues (or performs) the restore of every layer on the
// runner's stream; kv_measure() runs it warm-up + reps times: poison the pool, run the optional
// untimed prepare, then time the issue (host wall clock from before the start event to the stop
// event observed complete; GPU time between the events; CPU time of the issuing thread with
// CLOCK_THREAD_CPUTIME_ID around the issue call only; CPU time of every thread of the process with
// CLOCK_PROCESS_CPUTIME_ID over the whole window, less the issuing thread's own spin waiting for
// the stop event), run the optional untimed finish (a plan's per-request results), verify the
// pool, and keep the medians. The second CPU figure is the one to compare across paths: it holds
// the threads a path starts or keeps busy (pread workers, the file target's executor threads) as
// well as the one that calls.
// The baselines (baselines_memory.cuh, baselines_file.cuh) and the library's own paths (in the
// benches) plug in the same way, each a kv_path with its issue function.
#ifndef GIOURING_BENCH_COMMON_RUNNER_CUH
#define GIOURING_BENCH_COMMON_RUNNER_CUH

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

#include "check.cuh"
#include "timing.cuh"
#include "workload.cuh"

struct kv_runner {
	int device;
	int sm_count;
	cudaStream_t stream;    // non-blocking; never the legacy stream (cudaMemcpyBatchAsync refuses it)
	cudaEvent_t ev_start, ev_stop, ev_sync;
	unsigned long long *d_check; // verify output: [0] wrong words, [1] first wrong object
	int warmup, reps;
	double timeout_s;       // bound of every wait
	char err[256];          // an issue function's failure message
};

static inline void kv_runner_init(struct kv_runner *r, int device, int warmup, int reps, double timeout_s)
{
	std::memset(r, 0, sizeof(*r));
	r->device = device;
	r->warmup = warmup;
	r->reps = reps;
	r->timeout_s = timeout_s;
	KV_CK(cudaSetDevice(device));
	KV_CK(cudaDeviceGetAttribute(&r->sm_count, cudaDevAttrMultiProcessorCount, device));
	KV_CK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
	KV_CK(cudaEventCreate(&r->ev_start));
	KV_CK(cudaEventCreate(&r->ev_stop));
	KV_CK(cudaEventCreateWithFlags(&r->ev_sync, cudaEventDisableTiming));
	KV_CK(cudaMalloc((void **)&r->d_check, 2 * sizeof(unsigned long long)));
}

static inline void kv_runner_destroy(struct kv_runner *r)
{
	KV_CK(cudaFree(r->d_check));
	KV_CK(cudaEventDestroy(r->ev_start));
	KV_CK(cudaEventDestroy(r->ev_stop));
	KV_CK(cudaEventDestroy(r->ev_sync));
	KV_CK(cudaStreamDestroy(r->stream));
}

// Waits for everything enqueued on the runner's stream so far, bounded.
static inline void kv_sync(struct kv_runner *r, const char *what)
{
	KV_CK(cudaEventRecord(r->ev_sync, r->stream));
	if (kv_wait_event(r->ev_sync, r->timeout_s))
		kv_die("%s did not complete within %.0f s", what, r->timeout_s);
}

static inline void kv_fill_store(const struct kv_workload *w, struct kv_runner *r)
{
	if (!w->store)
		kv_die("kv_fill_store: a prefix view has no store of its own");
	kv_fill_kernel<<<r->sm_count * 8, 256, 0, r->stream>>>((uint4 *)w->d_store, w->n_layers, w->n_blocks,
								(uint32_t)(w->obj_bytes / 16));
	KV_CK(cudaGetLastError());
	kv_sync(r, "filling the store");
}

static inline void kv_poison_pool(const struct kv_workload *w, struct kv_runner *r)
{
	const uint64_t words = 2ull * w->pool_blocks * w->obj_bytes / 16;
	for (uint32_t l = 0; l < w->n_layers; l++) {
		kv_poison_kernel<<<r->sm_count * 4, 256, 0, r->stream>>>((uint4 *)w->pool[l], words);
		KV_CK(cudaGetLastError());
	}
	kv_sync(r, "poisoning the pool");
}

// Checks every object of w in the pool byte for byte. Returns the count of wrong 16-byte words;
// *first_bad receives the first wrong object (l * 2 * n_blocks + kv * n_blocks + b) or -1.
static inline uint64_t kv_verify_pool(const struct kv_workload *w, struct kv_runner *r, int mode, int64_t *first_bad)
{
	unsigned long long h[2] = {0ull, ~0ull};
	KV_CK(cudaMemcpyAsync(r->d_check, h, sizeof(h), cudaMemcpyHostToDevice, r->stream));
	kv_verify_kernel<<<r->sm_count * 8, 256, 0, r->stream>>>(w->d_pool, mode == KV_VERIFY_IDENTITY ? w->d_identity : w->d_perm,
								  w->n_layers, w->n_blocks, w->pool_blocks,
								  (uint32_t)(w->obj_bytes / 16), r->d_check);
	KV_CK(cudaGetLastError());
	KV_CK(cudaMemcpyAsync(h, r->d_check, sizeof(h), cudaMemcpyDeviceToHost, r->stream));
	kv_sync(r, "verifying the pool");
	*first_bad = h[1] == ~0ull ? -1 : (int64_t)h[1];
	return h[0];
}

enum kv_status { KV_OK = 0, KV_SKIPPED = 1, KV_FAILED = 2 };

// One row of a bench table: what a path did and how fast, medians over reps.
struct kv_result {
	char path[48];
	char note[256];
	int status;             // enum kv_status
	char error[256];        // why it failed or was skipped
	uint64_t tokens, objects, bytes;
	uint32_t sms;           // SMs the path's kernels use (0: copy engines only)
	uint64_t calls;         // API calls or launches per restore, as issued by the CPU
	int reps;               // timed repetitions
	double wall_ms, gpu_ms, cpu_ms; // medians: host wall clock, CUDA events, issuing thread CPU
	double cpu_all_ms;      // median: every thread of the process (see the file comment)
	uint32_t threads;       // CPU threads doing the path's work, set by the path (0: not said)
	double wall_ms_min, wall_ms_max;
	double gbps;            // bytes / median wall, 1e9 bytes per second
	int verify;             // enum kv_verify_mode
	int verified;           // 1: every repetition matched byte for byte; 0: not checked or failed
	uint64_t bad_words;     // wrong 16-byte words in the first failing repetition
	int64_t first_bad_obj;  // its first wrong object, or -1
	uint32_t bad_layer, bad_kv, bad_block;
};

// Issue (or prepare) function of a path: restores every layer of w into its pool on r->stream.
// May return before the data has landed (kv_measure waits for the stream). Returns 0, or
// non-zero with a message in r->err.
typedef int (*kv_issue_fn)(const struct kv_workload *w, struct kv_runner *r, void *arg);

struct kv_path {
	const char *name;
	const char *note;
	kv_issue_fn prepare;    // optional, untimed, before each repetition (after the poison)
	kv_issue_fn issue;
	void *arg;
	int verify;             // enum kv_verify_mode
	uint32_t sms;
	uint64_t calls;
	kv_issue_fn finish;     // optional, untimed, after the stop event, before the verify (a plan's results)
};

static inline void kv_result_init(struct kv_result *out, const struct kv_workload *w, const char *name, const char *note)
{
	std::memset(out, 0, sizeof(*out));
	kv_fmt(out->path, sizeof(out->path), "%s", name);
	kv_fmt(out->note, sizeof(out->note), "%s", note ? note : "");
	out->tokens = w->tokens;
	out->objects = kv_total_objects(w);
	out->bytes = kv_total_bytes(w);
	out->first_bad_obj = -1;
}

// Marks a row as skipped, with the reason, so the table still says the path exists.
__attribute__((format(printf, 4, 5))) static inline void kv_result_skip(struct kv_result *out, const struct kv_workload *w,
									const char *name, const char *fmt, ...)
{
	kv_result_init(out, w, name, "");
	out->status = KV_SKIPPED;
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(out->error, sizeof(out->error), fmt, ap);
	va_end(ap);
}

// Runs a path warmup + reps times (see the file comment). Returns 0, or -1 when the path failed
// (its issue function, or a wrong byte: out->status == KV_FAILED, out->error says which).
static inline int kv_measure(const struct kv_workload *w, struct kv_runner *r, const struct kv_path *p, struct kv_result *out)
{
	std::vector<double> wall, gpu, cpu, cpu_all;
	kv_result_init(out, w, p->name, p->note);
	out->sms = p->sms;
	out->calls = p->calls;
	out->verify = p->verify;
	out->verified = p->verify != KV_VERIFY_NONE;
	for (int rep = 0; rep < r->warmup + r->reps; rep++) {
		kv_poison_pool(w, r);
		r->err[0] = '\0';
		if (p->prepare && p->prepare(w, r, p->arg)) {
			out->status = KV_FAILED;
			kv_fmt(out->error, sizeof(out->error), "prepare: %s", r->err);
			return -1;
		}
		const double t0 = kv_now_s(), c0 = kv_thread_cpu_s(), a0 = kv_process_cpu_s();
		KV_CK(cudaEventRecord(r->ev_start, r->stream));
		const int rc = p->issue(w, r, p->arg);
		const double c1 = kv_thread_cpu_s();
		KV_CK(cudaEventRecord(r->ev_stop, r->stream));
		if (kv_wait_event(r->ev_stop, r->timeout_s))
			kv_die("%s: the restore did not complete within %.0f s", p->name, r->timeout_s);
		const double t1 = kv_now_s(), c2 = kv_thread_cpu_s(), a1 = kv_process_cpu_s();
		// The finish runs after a failed issue too: it ends what the issue began.
		char issue_err[sizeof(r->err)];
		kv_fmt(issue_err, sizeof(issue_err), "%s", r->err);
		const int frc = p->finish ? p->finish(w, r, p->arg) : 0;
		if (rc)
			kv_fmt(r->err, sizeof(r->err), "%s", issue_err);
		if (rc || frc) {
			// A refused call (say cudaErrorInvalidValue) is not sticky but stays the last error;
			// clear it so that the next path's checks do not report it as their own.
			(void)cudaGetLastError();
			out->status = KV_FAILED;
			kv_fmt(out->error, sizeof(out->error), "%s", r->err);
			return -1;
		}
		float ms = 0.f;
		KV_CK(cudaEventElapsedTime(&ms, r->ev_start, r->ev_stop));
		if (p->verify != KV_VERIFY_NONE) {
			int64_t first = -1;
			const uint64_t bad = kv_verify_pool(w, r, p->verify, &first);
			if (bad) {
				const uint64_t per_layer = kv_objs_per_layer(w);
				out->status = KV_FAILED;
				out->verified = 0;
				out->bad_words = bad;
				out->first_bad_obj = first;
				out->bad_layer = (uint32_t)((uint64_t)first / per_layer);
				out->bad_kv = (uint32_t)(((uint64_t)first % per_layer) / w->n_blocks);
				out->bad_block = (uint32_t)(((uint64_t)first % per_layer) % w->n_blocks);
				kv_fmt(out->error, sizeof(out->error),
					      "repetition %d: %" PRIu64 " wrong 16-byte words; first wrong object: layer %u %s block %u",
					      rep, bad, out->bad_layer, out->bad_kv ? "V" : "K", out->bad_block);
				return -1;
			}
		}
		if (rep >= r->warmup) {
			wall.push_back((t1 - t0) * 1e3);
			gpu.push_back((double)ms);
			cpu.push_back((c1 - c0) * 1e3);
			cpu_all.push_back(((a1 - a0) - (c2 - c1)) * 1e3);
		}
	}
	out->reps = r->reps;
	out->wall_ms = kv_median(wall);
	out->gpu_ms = kv_median(gpu);
	out->cpu_ms = kv_median(cpu);
	out->cpu_all_ms = kv_median(cpu_all);
	out->wall_ms_min = wall.empty() ? 0.0 : *std::min_element(wall.begin(), wall.end());
	out->wall_ms_max = wall.empty() ? 0.0 : *std::max_element(wall.begin(), wall.end());
	out->gbps = out->wall_ms > 0 ? (double)out->bytes / (out->wall_ms * 1e-3) / 1e9 : 0.0;
	return 0;
}

#define KV_ERR(r, e, what) (kv_fmt((r)->err, sizeof((r)->err), "%s: %s", (what), cudaGetErrorString(e)), 1)

// The "verified" cell of a row.
static inline const char *kv_verified_word(const struct kv_result *r)
{
	if (r->status == KV_SKIPPED)
		return "-";
	if (r->status == KV_FAILED)
		return r->bad_words ? "**NO**" : "failed";
	if (r->verify == KV_VERIFY_NONE)
		return "not checked";
	return r->verify == KV_VERIFY_IDENTITY ? "yes (unshuffled)" : "yes";
}

#endif // GIOURING_BENCH_COMMON_RUNNER_CUH
