// baselines_file.cuh: the KV restore baselines that read the store from a file (file_store.cuh),
// each a path of runner.cuh measured beside the library's in the same process and run:
//
// | path     | what the CPU does per restore                                     | lands shuffled |
// | -------- | ----------------------------------------------------------------- | -------------- |
// | pread-*  | pread per object into pinned bounce buffers + cudaMemcpyAsync      | yes |
// | cufile   | not implemented: a probe says whether cuFile could register the file |
//
// pread is LMCache's local-disk tier, with the overlap it has: a ring of bounce buffers, each
// copied with cudaMemcpyAsync while the next objects are read.
#ifndef GIOURING_BENCH_COMMON_BASELINES_FILE_CUH
#define GIOURING_BENCH_COMMON_BASELINES_FILE_CUH

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "check.cuh"
#include "file_store.cuh"
#include "runner.cuh"
#include "timing.cuh"
#include "workload.cuh"

static inline int kv_prepare_pread(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	(void)w;
	const struct kv_store_file *f = (const struct kv_store_file *)arg;
	if (!f->tmpfs) {
		const int e = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
		if (e) {
			kv_fmt(r->err, sizeof(r->err), "posix_fadvise: %s", std::strerror(e));
			return 1;
		}
	}
	return 0;
}

// One reading thread's share of a restore: objects [first, end) of the restore's sequence
// (layer-major, so the file is read in order), through bounce buffers [slot0, slot0 + f->ring)
// and copies on `stream`. Returns 0, or 1 with the reason in err.
static inline int kv_pread_range(const struct kv_workload *w, const struct kv_store_file *f, uint32_t slot0,
				 cudaStream_t stream, uint64_t first, uint64_t end, double timeout_s, char *err, size_t errlen)
{
	const uint64_t n = kv_objs_per_layer(w);
	for (uint64_t g = first; g < end; g++) {
		const uint32_t l = (uint32_t)(g / n);
		const uint64_t i = g - (uint64_t)l * n, issued = g - first;
		const uint32_t k = slot0 + (uint32_t)(issued % f->ring);
		if (issued >= f->ring && kv_wait_event(f->ready[k], timeout_s)) {
			kv_fmt(err, errlen, "a bounce-buffer copy did not complete within %.0f s", timeout_s);
			return 1;
		}
		if (kv_read_full(f->fd, f->bounce[k], w->obj_bytes, kv_src_offset(w, l, i))) {
			kv_fmt(err, errlen, "pread: %s", std::strerror(errno));
			return 1;
		}
		cudaError_t e = cudaMemcpyAsync(kv_dst_ptr(w, l, i), f->bounce[k], w->obj_bytes, cudaMemcpyHostToDevice, stream);
		if (e == cudaSuccess)
			e = cudaEventRecord(f->ready[k], stream);
		if (e != cudaSuccess) {
			kv_fmt(err, errlen, "cudaMemcpyAsync/cudaEventRecord: %s", cudaGetErrorString(e));
			return 1;
		}
	}
	return 0;
}

struct kv_pread_worker {
	const struct kv_workload *w;
	const struct kv_store_file *f;
	uint32_t t;      // which reading thread
	int device;
	double timeout_s;
	int rc;
	char err[256];
};

// Reading thread t: its contiguous share of the objects, its ring, its stream; then an event
// after its last copy, for the issuing thread to join on.
static inline void kv_pread_worker_main(struct kv_pread_worker *a)
{
	const struct kv_store_file *f = a->f;
	const uint64_t total = kv_total_objects(a->w);
	cudaError_t e = cudaSetDevice(a->device);
	a->rc = 1;
	if (e != cudaSuccess) {
		kv_fmt(a->err, sizeof(a->err), "cudaSetDevice: %s", cudaGetErrorString(e));
		return;
	}
	a->rc = kv_pread_range(a->w, f, a->t * f->ring, f->streams[a->t], total * a->t / f->threads,
			       total * (a->t + 1) / f->threads, a->timeout_s, a->err, sizeof(a->err));
	if (a->rc == 0 && (e = cudaEventRecord(f->drained[a->t], f->streams[a->t])) != cudaSuccess) {
		kv_fmt(a->err, sizeof(a->err), "cudaEventRecord: %s", cudaGetErrorString(e));
		a->rc = 1;
	}
}

// One thread: the issuing thread reads and copies on the runner's stream. Several: it starts
// them, joins them, and makes the runner's stream wait for every one's last copy (so that the
// stop event covers them all).
static inline int kv_issue_pread(const struct kv_workload *w, struct kv_runner *r, void *arg)
{
	const struct kv_store_file *f = (const struct kv_store_file *)arg;
	if (f->threads <= 1)
		return kv_pread_range(w, f, 0, r->stream, 0, kv_total_objects(w), r->timeout_s, r->err, sizeof(r->err));
	std::vector<struct kv_pread_worker> a(f->threads);
	std::vector<std::thread> th;
	for (uint32_t t = 0; t < f->threads; t++) {
		a[t] = {w, f, t, r->device, r->timeout_s, 0, ""};
		th.emplace_back(kv_pread_worker_main, &a[t]);
	}
	for (std::thread &x : th)
		x.join();
	for (uint32_t t = 0; t < f->threads; t++)
		if (a[t].rc) {
			kv_fmt(r->err, sizeof(r->err), "reading thread %u: %s", t, a[t].err);
			return 1;
		}
	for (uint32_t t = 0; t < f->threads; t++) {
		const cudaError_t e = cudaStreamWaitEvent(r->stream, f->drained[t], 0);
		if (e != cudaSuccess)
			return KV_ERR(r, e, "cudaStreamWaitEvent");
	}
	return 0;
}

// view: the workload whose layout the file holds (a prefix view, or the full workload). threads:
// reading threads (1: the issuing thread alone, as LMCache's tier does). out->threads says it.
static inline int kv_baseline_pread(const struct kv_workload *view, struct kv_runner *r, struct kv_store_file *f,
				    uint32_t threads, struct kv_result *out)
{
	char note[256];
	const char *drop = f->tmpfs ? "" : "; page cache dropped before each rep";
	f->threads = threads ? threads : 1;
	if (f->threads == 1)
		kv_fmt(note, sizeof(note), "pread per object from %s (%s) into a ring of %u pinned bounce buffers + cudaMemcpyAsync%s",
		       f->dir, f->tmpfs ? "tmpfs" : "disk", f->ring, drop);
	else
		kv_fmt(note, sizeof(note),
		       "pread per object from %s (%s) by %u threads, each into its own ring of %u pinned bounce buffers + "
		       "cudaMemcpyAsync on its own stream%s",
		       f->dir, f->tmpfs ? "tmpfs" : "disk", f->threads, f->ring, drop);
	const struct kv_path p = {f->tmpfs ? "pread-tmpfs" : "pread-disk", note, kv_prepare_pread, kv_issue_pread, f,
				  KV_VERIFY_SHUFFLED, 0u, 2 * kv_total_objects(view), NULL};
	kv_bounce_ring_create(f, view->obj_bytes);
	const int rc = kv_measure(view, r, &p, out);
	out->threads = f->threads;
	kv_bounce_ring_destroy(f);
	return rc;
}

// cuFile: not implemented here. Probes whether it could run at all: libcufile present, driver
// open, and the file registrable (on the H200 test machine cuFileHandleRegister failed with 5027
// on every file system there: docs/benchmarking.md). The types are declared here, as in cufile.h, because
// the header is not installed everywhere; the library is loaded with dlopen, never linked.
// Returns 1 when registration works (then the row is missing an implementation, and says so).
static inline int kv_cufile_probe(int fd, char *msg, size_t len)
{
	struct kv_cufile_error {
		int err;    // CUfileOpError; 0 is CU_FILE_SUCCESS
		int cu_err; // CUresult
	};
	struct kv_cufile_descr {
		int type; // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
		union {
			int fd;
			void *handle;
		} handle;
		const void *fs_ops;
	};
	typedef kv_cufile_error (*open_fn)(void);
	typedef kv_cufile_error (*register_fn)(void **, kv_cufile_descr *);
	typedef void (*deregister_fn)(void *);
	void *lib = dlopen("libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		lib = dlopen("libcufile.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		kv_fmt(msg, len, "cuFile: not available (libcufile not found)");
		return 0;
	}
	open_fn drv_open = (open_fn)dlsym(lib, "cuFileDriverOpen");
	register_fn reg = (register_fn)dlsym(lib, "cuFileHandleRegister");
	deregister_fn dereg = (deregister_fn)dlsym(lib, "cuFileHandleDeregister");
	open_fn drv_close = (open_fn)dlsym(lib, "cuFileDriverClose_v2");
	if (!drv_close)
		drv_close = (open_fn)dlsym(lib, "cuFileDriverClose");
	if (!drv_open || !reg || !dereg) {
		kv_fmt(msg, len, "cuFile: not available (libcufile lacks cuFileDriverOpen/cuFileHandleRegister)");
		return 0;
	}
	kv_cufile_error e = drv_open();
	if (e.err != 0) {
		kv_fmt(msg, len, "cuFile: not available (cuFileDriverOpen fails: error %d, CUresult %d)", e.err, e.cu_err);
		return 0;
	}
	// GDS wants O_DIRECT: reopen the (unlinked) file through /proc with it, if the FS allows.
	char proc[64];
	kv_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	const int dfd = open(proc, O_RDONLY | O_DIRECT | O_CLOEXEC);
	kv_cufile_descr d;
	std::memset(&d, 0, sizeof(d));
	d.type = 1;
	d.handle.fd = dfd >= 0 ? dfd : fd;
	void *fh = NULL;
	e = reg(&fh, &d);
	int ok = 0;
	if (e.err != 0) {
		kv_fmt(msg, len, "cuFile: not available (cuFileHandleRegister fails on this file system: error %d%s)", e.err,
			      dfd >= 0 ? "" : ", file not openable with O_DIRECT");
	} else {
		kv_fmt(msg, len, "cuFile: cuFileHandleRegister works here, but this bench has no cuFile path yet");
		dereg(fh);
		ok = 1;
	}
	if (dfd >= 0)
		close(dfd);
	if (drv_close)
		(void)drv_close();
	return ok;
}

#endif // GIOURING_BENCH_COMMON_BASELINES_FILE_CUH
