// The SM partition (giouring/host/partition.h): one split of a device's SMs into two green
// contexts (three with an executors' side). The driver's green-context calls are reached through the runtime's
// cudaGetDriverEntryPointByVersion, so that giouring::gpu links no libcuda (cuda.h gives the
// types only): a driver without them is a clear -EOPNOTSUPP at run time, not a load failure.
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/host/partition.h>
#include <giouring/ring/clock.h>

#include "../internal.h"
#include "cuda_fail.cuh"
#include "executors.h"

namespace {

// Each call in the ABI of the cuda.h it was compiled against (CUdevResource's layout is that
// header's), which a driver older than the runtime would lack: -EOPNOTSUPP then. (Asked for at
// CUDA 12.4's, the first with green contexts, driver 580 refused cuGreenCtxStreamCreate as
// newer than that.)
constexpr unsigned kDriverApi = CUDA_VERSION;
// How long destroy waits for a side's stream to drain before it gives up (and keeps everything).
constexpr uint64_t kDrainTimeoutNs = 10ull * 1000000000ull;

struct driver {
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*get_dev_resource)(CUdevice, CUdevResource *, CUdevResourceType);
	CUresult (*split_by_count)(CUdevResource *, unsigned *, const CUdevResource *, CUdevResource *, unsigned,
				   unsigned);
	CUresult (*generate_desc)(CUdevResourceDesc *, CUdevResource *, unsigned);
	CUresult (*green_create)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned);
	CUresult (*green_destroy)(CUgreenCtx);
	CUresult (*green_stream_create)(CUstream *, CUgreenCtx, unsigned, int);
	CUresult (*green_get_resource)(CUgreenCtx, CUdevResource *, CUdevResourceType);
	CUresult (*stream_get_green)(CUstream, CUgreenCtx *);
	CUresult (*error_name)(CUresult, const char **);
	CUresult (*error_string)(CUresult, const char **);
};

pthread_once_t g_once = PTHREAD_ONCE_INIT;
driver g_drv;
bool g_ok;
char g_why[256];

template <typename F> bool entry(const char *name, F *fn)
{
	void *p = nullptr;
	cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, kDriverApi, cudaEnableDefault, &q);
	if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !p) {
		if (!g_why[0])
			snprintf(g_why, sizeof(g_why), "the CUDA driver has no %s of CUDA %u's API: %s", name, kDriverApi,
				 e != cudaSuccess ? cudaGetErrorString(e)
				 : q == cudaDriverEntryPointVersionNotSufficent ? "driver too old"
										 : "symbol not found");
		return false;
	}
	*fn = reinterpret_cast<F>(p);
	return true;
}

void load()
{
	int n = 0;
	const cudaError_t e = cudaGetDeviceCount(&n); // initializes the driver for the calls below
	if (e != cudaSuccess) {
		snprintf(g_why, sizeof(g_why), "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
		return;
	}
	g_ok = entry("cuDeviceGet", &g_drv.device_get) & entry("cuDeviceGetDevResource", &g_drv.get_dev_resource) &
	       entry("cuDevSmResourceSplitByCount", &g_drv.split_by_count) &
	       entry("cuDevResourceGenerateDesc", &g_drv.generate_desc) & entry("cuGreenCtxCreate", &g_drv.green_create) &
	       entry("cuGreenCtxDestroy", &g_drv.green_destroy) &
	       entry("cuGreenCtxStreamCreate", &g_drv.green_stream_create) &
	       entry("cuGreenCtxGetDevResource", &g_drv.green_get_resource) &
	       entry("cuStreamGetGreenCtx", &g_drv.stream_get_green) & entry("cuGetErrorName", &g_drv.error_name) &
	       entry("cuGetErrorString", &g_drv.error_string);
}

const driver *drv()
{
	pthread_once(&g_once, load);
	return g_ok ? &g_drv : nullptr;
}

int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_CONTEXT:
	case CUDA_ERROR_INVALID_HANDLE:
	case CUDA_ERROR_INVALID_RESOURCE_TYPE:
	case CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION:
		return -EINVAL;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NOT_INITIALIZED:
	case CUDA_ERROR_DEINITIALIZED:
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_NOT_FOUND:
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

// "giouring: <what>: CUDA_ERROR_x: <string>" as gio_last_error(), and the errno.
int cu_fail(const driver *d, CUresult r, const char *what)
{
	const char *name = nullptr, *str = nullptr;
	if (d->error_name(r, &name) != CUDA_SUCCESS)
		name = nullptr;
	if (d->error_string(r, &str) != CUDA_SUCCESS)
		str = nullptr;
	return gio__fail(cu_errno(r), "giouring: %s: %s (CUresult %d): %s", what, name ? name : "unknown CUresult",
			 (int)r, str ? str : "no description");
}

} // namespace

struct gio_sm_partition {
	int device;
	CUgreenCtx green[3];   // per side (enum gio_sm_side); NULL for an ordinary side
	cudaStream_t stream[3]; // NULL for the executors' side when not asked for
	int sides;             // 2, or 3 with an executors' side
	uint8_t own_green;     // destroy green[] at the end (not adopted ones)
	struct gio_sm_partition_info info;
};

namespace {

// An ordinary non-blocking stream on device dev, leaving the current device as it was.
int ordinary_stream(int dev, int priority, cudaStream_t *s)
{
	int old = 0;
	cudaError_t e = cudaGetDevice(&old);
	if (e == cudaSuccess && dev >= 0 && old != dev)
		e = cudaSetDevice(dev);
	if (e == cudaSuccess)
		e = cudaStreamCreateWithPriority(s, cudaStreamNonBlocking, priority);
	if (dev >= 0 && old != dev)
		cudaSetDevice(old);
	return e == cudaSuccess ? 0 : gio__cuda_fail_rt(e, "SM partition: an ordinary stream (cudaStreamCreateWithPriority)");
}

int side_stream(const gio_sm_partition *p, int side, int priority, cudaStream_t *s)
{
	if (p->green[side]) {
		CUstream cs = nullptr;
		const CUresult r = g_drv.green_stream_create(&cs, p->green[side], CU_STREAM_NON_BLOCKING, priority);
		if (r != CUDA_SUCCESS)
			return cu_fail(&g_drv, r, side == GIO_SM_IO ? "SM partition: cuGreenCtxStreamCreate (I/O side)"
						  : side == GIO_SM_EXEC ? "SM partition: cuGreenCtxStreamCreate (executors' side)"
									: "SM partition: cuGreenCtxStreamCreate (compute side)");
		*s = reinterpret_cast<cudaStream_t>(cs);
		return 0;
	}
	return ordinary_stream(p->device, priority, s);
}

int green_sms(CUgreenCtx g, uint32_t *sms)
{
	CUdevResource r;
	memset(&r, 0, sizeof(r));
	const CUresult e = g_drv.green_get_resource(g, &r, CU_DEV_RESOURCE_TYPE_SM);
	if (e != CUDA_SUCCESS)
		return cu_fail(&g_drv, e, "cuGreenCtxGetDevResource");
	*sms = r.sm.smCount;
	return 0;
}

// Every side's stream; on failure nothing of them is left.
int make_streams(gio_sm_partition *p)
{
	for (int side = 0; side < p->sides; side++) {
		const int rc = side_stream(p, side, 0, &p->stream[side]);
		if (rc) {
			for (int s = 0; s < side; s++) {
				cudaStreamDestroy(p->stream[s]);
				p->stream[s] = nullptr;
			}
			return rc;
		}
	}
	return 0;
}

int device_sms(int dev, uint32_t *sms)
{
	int n = 0;
	const cudaError_t e = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
	if (e != cudaSuccess)
		return gio__cuda_failf(e, "SM partition: device %d's SM count (cudaDeviceGetAttribute)", dev);
	*sms = (uint32_t)n;
	return 0;
}

// The fallback: ordinary streams on every SM, not isolated.
int fallback(gio_sm_partition *p, const char *why)
{
	int rc = device_sms(p->device, &p->info.device_sms);
	if (rc)
		return rc;
	p->info.io_sms = p->info.compute_sms = p->info.device_sms;
	p->info.exec_sms = p->sides > 2 ? p->info.device_sms : 0;
	if ((rc = make_streams(p)))
		return rc;
	// Success, but the message stays for a caller who asks why the sides share SMs.
	gio__fail(0, "giouring: SM partition of device %d: ordinary streams (not isolated): %s", p->device, why);
	return 0;
}

// The split proper: groups of the granularity, the first ones for I/O, the next ones for the
// executors, every other one and the rest for compute (one split: separate splits may hand out
// the same SMs).
int split(gio_sm_partition *p, uint32_t io_want, uint32_t exec_want, char *why, size_t why_len)
{
	const driver *d = &g_drv;
	CUdevice dev;
	CUdevResource all, rest;
	CUresult r = d->device_get(&dev, p->device);
	if (r != CUDA_SUCCESS)
		return cu_fail(d, r, "SM partition: cuDeviceGet");
	memset(&all, 0, sizeof(all));
	memset(&rest, 0, sizeof(rest));
	if ((r = d->get_dev_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS) {
		snprintf(why, why_len, "cuDeviceGetDevResource: CUresult %d", (int)r);
		return r == CUDA_ERROR_NOT_SUPPORTED ? -EOPNOTSUPP : cu_fail(d, r, "SM partition: cuDeviceGetDevResource");
	}
	const uint32_t total = all.sm.smCount, min = all.sm.minSmPartitionSize, align = all.sm.smCoscheduledAlignment;
	p->info.device_sms = total;
	p->info.min_partition_sms = min;
	p->info.alignment_sms = align;
	// The unit every side is made of: a multiple of the alignment, no smaller than a partition.
	uint32_t unit = align > 1 ? align : 1;
	if (unit < min)
		unit = (min + unit - 1) / unit * unit;
	const uint32_t io = (io_want + unit - 1) / unit * unit, ex = (exec_want + unit - 1) / unit * unit;
	if (io + ex >= total)
		return gio__fail(-ERANGE,
				 "giouring: SM partition of device %d: %u I/O SMs and %u executor SMs asked, %u and %u "
				 "after rounding up to the granularity (at least %u, multiples of %u), leave none of the "
				 "%u SMs for compute",
				 p->device, io_want, exec_want, io, ex, min, align, total);
	const unsigned k_io = io / unit, k_ex = ex / unit;
	unsigned groups = total / unit;
	CUdevResource *res = static_cast<CUdevResource *>(calloc(groups + 1, sizeof(*res)));
	if (!res)
		return gio__fail(-ENOMEM, "giouring: SM partition: no memory for %u resources", groups + 1);
	int rc = 0, side;
	CUdevResourceDesc desc[3] = {nullptr, nullptr, nullptr};
	r = d->split_by_count(res, &groups, &all, &rest, 0, unit);
	if (r != CUDA_SUCCESS) {
		rc = cu_fail(d, r, "SM partition: cuDevSmResourceSplitByCount");
		goto out;
	}
	if (groups < k_io + k_ex || (groups == k_io + k_ex && rest.sm.smCount == 0)) {
		rc = gio__fail(-ERANGE, "giouring: SM partition of device %d: a split into groups of %u SMs gave %u groups "
				  "and %u SMs over: %u for I/O and %u for executors leave nothing for compute",
				  p->device, unit, groups, rest.sm.smCount, k_io, k_ex);
		goto out;
	}
	p->info.io_sms = p->info.exec_sms = p->info.compute_sms = 0;
	for (unsigned g = 0; g < groups; g++)
		*(g < k_io ? &p->info.io_sms : g < k_io + k_ex ? &p->info.exec_sms : &p->info.compute_sms) += res[g].sm.smCount;
	p->info.compute_sms += rest.sm.smCount;
	if (rest.sm.smCount)
		res[groups++] = rest; // the compute side: the groups after the others' and the rest, of the same split
	if ((r = d->generate_desc(&desc[GIO_SM_IO], &res[0], k_io)) != CUDA_SUCCESS ||
	    (r = d->generate_desc(&desc[GIO_SM_COMPUTE], &res[k_io + k_ex], groups - k_io - k_ex)) != CUDA_SUCCESS ||
	    (k_ex && (r = d->generate_desc(&desc[GIO_SM_EXEC], &res[k_io], k_ex)) != CUDA_SUCCESS)) {
		rc = cu_fail(d, r, "SM partition: cuDevResourceGenerateDesc");
		goto out;
	}
	for (side = 0; side < p->sides; side++)
		if ((r = d->green_create(&p->green[side], desc[side], dev, CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS) {
			rc = cu_fail(d, r, side == GIO_SM_COMPUTE ? "SM partition: cuGreenCtxCreate (compute side)"
					   : side == GIO_SM_EXEC  ? "SM partition: cuGreenCtxCreate (executors' side)"
								  : "SM partition: cuGreenCtxCreate (I/O side)");
			for (int s = 0; s < side; s++) {
				d->green_destroy(p->green[s]);
				p->green[s] = nullptr;
			}
			goto out;
		}
	p->own_green = 1;
	p->info.isolated = 1;
out:
	free(res);
	return rc;
}

void release(gio_sm_partition *p, int *first)
{
	for (int side = 0; side < p->sides; side++) {
		if (p->stream[side]) {
			const cudaError_t e = cudaStreamDestroy(p->stream[side]);
			if (e != cudaSuccess && !*first)
				*first = gio__cuda_fail_rt(e, "SM partition: cudaStreamDestroy");
		}
		if (p->own_green && p->green[side]) {
			const CUresult r = g_drv.green_destroy(p->green[side]);
			if (r != CUDA_SUCCESS && !*first)
				*first = cu_fail(&g_drv, r, "SM partition: cuGreenCtxDestroy");
		}
	}
}

} // namespace

int gio_sm_partition_create(const struct gio_sm_partition_params *prm, struct gio_sm_partition **out)
{
	gio__clear_error();
	if (!prm || !out)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_create: %s is NULL", prm ? "out" : "params");
	*out = nullptr;
	if (prm->io_sms == 0)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_create: io_sms is 0 (the I/O partition needs SMs)");
	if (prm->flags & ~GIO_SM_PARTITION_FALLBACK)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_create: unknown flags 0x%x",
				 prm->flags & ~GIO_SM_PARTITION_FALLBACK);
	int n = 0;
	const cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		return gio__cuda_fail_rt(e, "gio_sm_partition_create: cudaGetDeviceCount");
	if (prm->device < 0 || prm->device >= n)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_create: device %d out of range (%d devices)",
				 prm->device, n);
	// Making green contexts waits until no kernel runs on the device (measured on the H200: it
	// never returned beside GPU executors); the executors we know of are refused here, with the
	// way out, instead of a wait for ever. The caller's own persistent kernels we cannot see.
	if (const uint32_t running = gio__gpu_executors_running())
		return gio__fail(-EBUSY, "giouring: gio_sm_partition_create: %u GPU executor%s of this process run "
				 "(gio_gpu_target_start()), and making green contexts waits until no kernel runs: make "
				 "the partition before starting GPU-executed targets", running, running == 1 ? "" : "s");
	auto *p = static_cast<gio_sm_partition *>(calloc(1, sizeof(gio_sm_partition)));
	if (!p)
		return gio__fail(-ENOMEM, "giouring: gio_sm_partition_create: no memory");
	p->device = prm->device;
	p->sides = prm->exec_sms ? 3 : 2;
	char why[320] = "";
	int rc;
	if (!drv()) {
		snprintf(why, sizeof(why), "%s", g_why);
		rc = -EOPNOTSUPP;
	} else {
		rc = split(p, prm->io_sms, prm->exec_sms, why, sizeof(why));
		if (rc == -EOPNOTSUPP && !why[0])
			snprintf(why, sizeof(why), "%s", gio_last_error());
	}
	if (rc == -EOPNOTSUPP && (prm->flags & GIO_SM_PARTITION_FALLBACK)) {
		memset(&p->info, 0, sizeof(p->info));
		rc = fallback(p, why);
	} else if (rc == -EOPNOTSUPP) {
		rc = gio__fail(-EOPNOTSUPP, "giouring: SM partition of device %d: green contexts unavailable: %s", p->device,
			       why);
	} else if (rc == 0 && (rc = make_streams(p)) != 0) {
		int ignore = 0;
		release(p, &ignore);
	}
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int gio_sm_partition_adopt(void *io_green_ctx, void *compute_green_ctx, struct gio_sm_partition **out)
{
	gio__clear_error();
	if (!io_green_ctx || !out)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_adopt: %s is NULL", out ? "io_green_ctx" : "out");
	*out = nullptr;
	if (!drv())
		return gio__fail(-EOPNOTSUPP, "giouring: gio_sm_partition_adopt: green contexts unavailable: %s", g_why);
	auto *p = static_cast<gio_sm_partition *>(calloc(1, sizeof(gio_sm_partition)));
	if (!p)
		return gio__fail(-ENOMEM, "giouring: gio_sm_partition_adopt: no memory");
	int dev = 0, rc;
	cudaError_t e = cudaGetDevice(&dev);
	if (e != cudaSuccess) {
		free(p);
		return gio__cuda_fail_rt(e, "gio_sm_partition_adopt: cudaGetDevice");
	}
	p->device = dev;
	p->sides = 2;
	p->green[GIO_SM_IO] = static_cast<CUgreenCtx>(io_green_ctx);
	p->green[GIO_SM_COMPUTE] = static_cast<CUgreenCtx>(compute_green_ctx);
	p->info.adopted = 1;
	rc = device_sms(dev, &p->info.device_sms);
	if (!rc)
		rc = green_sms(p->green[GIO_SM_IO], &p->info.io_sms);
	if (!rc) {
		if (compute_green_ctx)
			rc = green_sms(p->green[GIO_SM_COMPUTE], &p->info.compute_sms);
		else
			p->info.compute_sms = p->info.device_sms;
	}
	// The caller vouches for the split; a count that cannot be one split is refused.
	if (!rc && compute_green_ctx && p->info.io_sms + p->info.compute_sms > p->info.device_sms)
		rc = gio__fail(-EINVAL,
			       "giouring: gio_sm_partition_adopt: the green contexts hold %u + %u SMs, more than the "
			       "device's %u: they overlap (two splits), so the sides would share SMs",
			       p->info.io_sms, p->info.compute_sms, p->info.device_sms);
	p->info.isolated = compute_green_ctx != nullptr;
	if (!rc)
		rc = make_streams(p);
	if (rc) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int gio_sm_partition_info(const struct gio_sm_partition *part, struct gio_sm_partition_info *info)
{
	if (!part || !info)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_info: %s is NULL", part ? "info" : "part");
	*info = part->info;
	return 0;
}

void *gio_sm_partition_stream(const struct gio_sm_partition *part, enum gio_sm_side side)
{
	if (!part || side < GIO_SM_IO || (int)side >= part->sides)
		return nullptr;
	return part->stream[side];
}

int gio_sm_partition_stream_create(struct gio_sm_partition *part, enum gio_sm_side side, int priority, void **stream)
{
	gio__clear_error();
	if (!part || !stream || side < GIO_SM_IO || (int)side >= part->sides)
		return gio__fail(-EINVAL, "giouring: gio_sm_partition_stream_create: %s",
				 !part ? "part is NULL" : !stream ? "stream is NULL"
				 : side == GIO_SM_EXEC ? "side GIO_SM_EXEC of a partition made without exec_sms"
							: "side is none of GIO_SM_IO, GIO_SM_COMPUTE, GIO_SM_EXEC");
	cudaStream_t s = nullptr;
	const int rc = side_stream(part, side, priority, &s);
	if (rc)
		return rc;
	*stream = s;
	return 0;
}

int gio_stream_sm_count(void *stream, uint32_t *sms)
{
	gio__clear_error();
	if (!sms)
		return gio__fail(-EINVAL, "giouring: gio_stream_sm_count: sms is NULL");
	const driver *d = drv();
	if (d && stream) {
		CUgreenCtx g = nullptr;
		const CUresult r = d->stream_get_green(static_cast<CUstream>(stream), &g);
		if (r != CUDA_SUCCESS)
			return cu_fail(d, r, "gio_stream_sm_count: cuStreamGetGreenCtx");
		if (g)
			return green_sms(g, sms);
	}
	int dev = 0;
	cudaError_t e = stream ? cudaStreamGetDevice(static_cast<cudaStream_t>(stream), &dev) : cudaGetDevice(&dev);
	if (e != cudaSuccess)
		return gio__cuda_fail_rt(e, "gio_stream_sm_count: the stream's device (cudaStreamGetDevice)");
	return device_sms(dev, sms);
}

int gio__stream_on_sms_of(void *stream, void **out)
{
	const driver *d = drv();
	CUgreenCtx g = nullptr;
	*out = nullptr;
	if (d && stream) {
		const CUresult r = d->stream_get_green(static_cast<CUstream>(stream), &g);
		if (r != CUDA_SUCCESS)
			return cu_fail(d, r, "a stream on the SMs of the executor's stream: cuStreamGetGreenCtx");
	}
	if (g) {
		CUstream cs = nullptr;
		const CUresult r = d->green_stream_create(&cs, g, CU_STREAM_NON_BLOCKING, 0);
		if (r != CUDA_SUCCESS)
			return cu_fail(d, r, "a stream on the SMs of the executor's stream: cuGreenCtxStreamCreate");
		*out = cs;
		return 0;
	}
	int dev = 0;
	cudaError_t e = stream ? cudaStreamGetDevice(static_cast<cudaStream_t>(stream), &dev) : cudaGetDevice(&dev);
	if (e != cudaSuccess)
		return gio__cuda_fail_rt(e, "a stream on the SMs of the executor's stream: its device (cudaStreamGetDevice)");
	cudaStream_t s = nullptr;
	const int rc = ordinary_stream(dev, 0, &s);
	*out = s;
	return rc;
}

int gio_sm_partition_destroy(struct gio_sm_partition *part)
{
	gio__clear_error();
	if (!part)
		return 0;
	// Bounded: a side's stream still busy (a persistent kernel never told to stop) keeps it all.
	const uint64_t deadline = gio_deadline_in(kDrainTimeoutNs);
	for (int side = 0; side < part->sides; side++) {
		while (cudaStreamQuery(part->stream[side]) == cudaErrorNotReady) {
			if (gio_deadline_passed(deadline))
				return gio__fail(-ETIME,
						 "giouring: gio_sm_partition_destroy: the %s stream still has work after %llu "
						 "s: nothing destroyed (stop its kernels, then destroy again)",
						 side == GIO_SM_IO ? "I/O" : side == GIO_SM_EXEC ? "executors'" : "compute",
						 (unsigned long long)(kDrainTimeoutNs / 1000000000ull));
			gio_host_sleep_ns(100000);
		}
	}
	int first = 0;
	release(part, &first);
	free(part);
	return first;
}
