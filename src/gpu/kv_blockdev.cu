// A GPU-executed target's backing store as a block device of the KV store
// (gio_kv_gpu_target_blockdev(), giouring/kv/store.h): the store's own I/O (format, entries, its
// CPU data path) copies blocks directly, while engines move chunk data through the target's queue
// pairs. Backing store in host memory: a memcpy. In HBM: a copy on a stream of its own (the
// target's stream runs the executor, which never ends while the target runs), polled with a
// deadline, so that no call waits for another kernel.
#include <cuda_runtime.h>

#include <cerrno>
#include <cstring>

#include <giouring/kv/store.h>
#include <giouring/ring/clock.h>
#include <giouring/target/gpu_target.h>

#include "../internal.h"
#include "cuda_fail.cuh"

namespace {

int bd_rw(void *arg, int write, uint64_t slba, uint64_t nblocks, void *buf, uint64_t timeout_ns)
{
	struct gio_gpu_target *g = (struct gio_gpu_target *)arg;
	const uint32_t shift = g->cfg.lba_shift;
	const uint64_t off = slba << shift, bytes = nblocks << shift;
	if (slba > (g->cfg.size >> shift) || nblocks > (g->cfg.size >> shift) - slba)
		return gio__fail(-EINVAL, "giouring: GPU target block device: LBA %llu (%llu blocks) beyond the namespace",
				 (unsigned long long)slba, (unsigned long long)nblocks);
	if (g->backing_host) {
		if (write)
			std::memcpy(g->backing_host + off, buf, bytes);
		else
			std::memcpy(buf, g->backing_host + off, bytes);
		return 0;
	}
	cudaStream_t s;
	cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return gio__cuda_failf(e, "GPU target block device: cudaStreamCreateWithFlags");
	e = write ? cudaMemcpyAsync(g->backing + off, buf, bytes, cudaMemcpyHostToDevice, s)
		  : cudaMemcpyAsync(buf, g->backing + off, bytes, cudaMemcpyDeviceToHost, s);
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	uint32_t spins = 0;
	// Spin, yield, then sleep: an entry's copy takes microseconds, and a planned save waits for
	// its FREE entries (a 20 us sleep is 70 us or more with the kernel's timer slack).
	if (e == cudaSuccess)
		while ((e = cudaStreamQuery(s)) == cudaErrorNotReady && !gio_deadline_passed(deadline))
			gio_backoff(&spins);
	// A stream destroyed with work queued returns at once; the runtime finishes the copy.
	(void)cudaStreamDestroy(s);
	if (e == cudaErrorNotReady)
		return gio__fail(-ETIME, "giouring: GPU target block device: a copy of %llu bytes did not finish in time",
				 (unsigned long long)bytes);
	return e == cudaSuccess ? 0 : gio__cuda_failf(e, "GPU target block device: cudaMemcpyAsync of %llu bytes",
						     (unsigned long long)bytes);
}

} // namespace

int gio_kv_gpu_target_blockdev(struct gio_gpu_target *g, struct gio_kv_blockdev *bd)
{
	if (!g || !bd)
		return gio__fail(-EINVAL, "giouring: gio_kv_gpu_target_blockdev: NULL argument");
	std::memset(bd, 0, sizeof(*bd));
	bd->lba_bytes = 1u << g->cfg.lba_shift;
	bd->nblocks = g->cfg.size >> g->cfg.lba_shift;
	bd->rw = bd_rw;
	bd->flush = nullptr; // memory: a completed copy is all there is
	bd->arg = g;
	return 0;
}
