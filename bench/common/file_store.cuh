// file_store.cuh: the workload's store as a file, and the pinned bounce buffers that file
// baselines read it into.
//
// The file holds a workload's store in its own layout (workload.cuh; a prefix view has fewer
// blocks). It is unlinked as soon as it is open, so a failed run leaves nothing behind.
#ifndef GIOURING_BENCH_COMMON_FILE_STORE_CUH
#define GIOURING_BENCH_COMMON_FILE_STORE_CUH

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "check.cuh"
#include "workload.cuh"

// A store file and, for the pread baseline, a ring of pinned bounce buffers (one object each) per
// reading thread; an event per buffer says when it may be overwritten.
struct kv_store_file {
	int fd;
	int tmpfs;             // on tmpfs: the page cache is the file, nothing to drop
	char dir[256];
	uint64_t bytes;
	uint32_t ring;         // bounce buffers per reading thread
	uint32_t threads;      // reading threads (1: the issuing thread itself, on the runner's stream)
	unsigned char **bounce; // ring x threads: thread t's are [t * ring, (t + 1) * ring)
	cudaEvent_t *ready;    // bounce[k] may be overwritten once ready[k] completed
	cudaStream_t *streams; // with threads > 1: each reading thread's own stream
	cudaEvent_t *drained;  // with threads > 1: each reading thread's last copy
};

// Reads (to_file == 0) or writes len bytes at off, through EINTR and short transfers, in pieces
// of at most 1 GiB (Linux moves less than 2 GiB per call). Returns 0, or -1 with errno set
// (ENODATA: the file ends before len bytes).
static inline int kv_pio_full(int fd, unsigned char *p, uint64_t len, uint64_t off, int to_file)
{
	while (len) {
		const size_t ask = len > (1ull << 30) ? (size_t)(1ull << 30) : (size_t)len;
		const ssize_t n = to_file ? pwrite(fd, p, ask, (off_t)off) : pread(fd, p, ask, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = to_file ? EIO : ENODATA;
		if (n <= 0)
			return -1;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

static inline int kv_write_full(int fd, const unsigned char *p, uint64_t len, uint64_t off)
{
	return kv_pio_full(fd, (unsigned char *)p, len, off, 1);
}

static inline int kv_read_full(int fd, unsigned char *p, uint64_t len, uint64_t off)
{
	return kv_pio_full(fd, p, len, off, 0);
}

// Writes view's store (view is w or a prefix view of it) into a new file in dir, from w's store.
// Returns 0, or -1 with the reason in err (no room, cannot create or write).
static inline int kv_store_file_create(const struct kv_workload *w, const struct kv_workload *view, const char *dir,
				       uint32_t ring, struct kv_store_file *f, char *err, size_t errlen)
{
	std::memset(f, 0, sizeof(*f));
	f->fd = -1;
	kv_fmt(f->dir, sizeof(f->dir), "%s", dir);
	f->bytes = kv_total_bytes(view);
	f->ring = ring ? ring : 1;
	f->threads = 1;
	struct statvfs vs;
	struct statfs fs;
	if (statvfs(dir, &vs) || statfs(dir, &fs)) {
		kv_fmt(err, errlen, "%s: %s", dir, std::strerror(errno));
		return -1;
	}
	if ((uint64_t)vs.f_bavail * vs.f_frsize < f->bytes + (1ull << 30)) {
		kv_fmt(err, errlen, "%s: %.1f GiB free, the file needs %.1f GiB and 1 GiB to spare", dir,
			      (double)vs.f_bavail * vs.f_frsize / (1ull << 30), (double)f->bytes / (1ull << 30));
		return -1;
	}
	f->tmpfs = fs.f_type == 0x01021994; // TMPFS_MAGIC
	char path[512];
	kv_fmt(path, sizeof(path), "%s/giouring_kv_bench.%ld.store", dir, (long)getpid());
	f->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (f->fd < 0) {
		kv_fmt(err, errlen, "%s: %s", path, std::strerror(errno));
		return -1;
	}
	unlink(path);
	// Each (layer, kv) run of blocks is contiguous in both layouts: 2L writes.
	for (uint32_t l = 0; l < w->n_layers; l++)
		for (uint32_t kv = 0; kv < 2; kv++)
			if (kv_write_full(f->fd, w->store + kv_src_offset(w, l, (uint64_t)kv * w->n_blocks),
					  (uint64_t)view->n_blocks * w->obj_bytes, kv_src_offset(view, l, (uint64_t)kv * view->n_blocks))) {
				kv_fmt(err, errlen, "writing %s: %s", path, std::strerror(errno));
				close(f->fd);
				f->fd = -1;
				return -1;
			}
	// Clean pages can be dropped before each repetition (kv_prepare_pread), so that a file on a
	// disk is read from the disk, not from the page cache.
	if (fsync(f->fd)) {
		kv_fmt(err, errlen, "fsync %s: %s", path, std::strerror(errno));
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	return 0;
}

static inline void kv_store_file_destroy(struct kv_store_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	std::memset(f, 0, sizeof(*f));
	f->fd = -1;
}

// The rings of pinned bounce buffers (one object each) and their events, for the pread path: one
// ring per reading thread (f->threads, at least 1), and with several threads a stream each.
static inline void kv_bounce_ring_create(struct kv_store_file *f, uint64_t obj_bytes)
{
	f->threads = f->threads ? f->threads : 1;
	const uint32_t n = f->ring * f->threads, streams = f->threads > 1 ? f->threads : 0;
	f->bounce = (unsigned char **)std::calloc(n, sizeof(*f->bounce));
	f->ready = (cudaEvent_t *)std::calloc(n, sizeof(*f->ready));
	f->streams = (cudaStream_t *)std::calloc(streams + 1, sizeof(*f->streams));
	f->drained = (cudaEvent_t *)std::calloc(streams + 1, sizeof(*f->drained));
	if (!f->bounce || !f->ready || !f->streams || !f->drained)
		kv_die("out of host memory");
	for (uint32_t k = 0; k < n; k++) {
		KV_CK(cudaHostAlloc((void **)&f->bounce[k], obj_bytes, cudaHostAllocPortable));
		KV_CK(cudaEventCreateWithFlags(&f->ready[k], cudaEventDisableTiming));
	}
	for (uint32_t t = 0; t < streams; t++) {
		KV_CK(cudaStreamCreateWithFlags(&f->streams[t], cudaStreamNonBlocking));
		KV_CK(cudaEventCreateWithFlags(&f->drained[t], cudaEventDisableTiming));
	}
}

static inline void kv_bounce_ring_destroy(struct kv_store_file *f)
{
	for (uint32_t k = 0; f->bounce && k < f->ring * f->threads; k++) {
		KV_CK(cudaFreeHost(f->bounce[k]));
		KV_CK(cudaEventDestroy(f->ready[k]));
	}
	for (uint32_t t = 0; f->streams && f->threads > 1 && t < f->threads; t++) {
		KV_CK(cudaStreamDestroy(f->streams[t]));
		KV_CK(cudaEventDestroy(f->drained[t]));
	}
	std::free(f->bounce);
	std::free(f->ready);
	std::free(f->streams);
	std::free(f->drained);
	f->bounce = NULL;
	f->ready = NULL;
	f->streams = NULL;
	f->drained = NULL;
}

#endif // GIOURING_BENCH_COMMON_FILE_STORE_CUH
