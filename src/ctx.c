/* Host library context: parses a target URI, opens the controller behind it (the software target
 * and its CPU executor, or a PCI controller through VFIO: src/vfio.c), brings it up through its
 * registers and admin queue, registers memory and creates I/O queue pairs. Everything after the
 * open is one code path for both: registers and bus addresses go through struct gio__backend. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <giouring/ring/clock.h>
#include <giouring/host/ctx.h>
#include <giouring/proto/prep.h>
#include <giouring/proto/status.h>
#include <giouring/host/uri.h>

#include "internal.h"

#define ADMIN_DEPTH 32u
#define MAX_REGIONS 1024u
#define MAX_QPS GIO_TGT_MAX_IO_QUEUES
#define ADMIN_TIMEOUT_NS (5ull * 1000000000ull)
#define CLOSE_ADMIN_TIMEOUT_NS (500ull * 1000000ull)


struct qp_mem {
	struct gio_qp qp;
	void *sq, *cq, *slots;
	uint64_t sq_addr, cq_addr; /* bus addresses */
	int pinned, live;          /* live: the controller has both queues */
	void *pinned_base;         /* pinned: the one allocation holding sq, cq and slots */
	void *hbm_base;            /* GIO_CTX_QP_HBM: the GPU allocation holding sq and cq */
	/* GIO_CTX_QP_DB_PROXY: the ring writes these shadow words; the proxy thread mirrors them to
	 * the controller's doorbells (hw_db), the SQ tail in [0], the CQ head in [1]. */
	uint32_t *shadow; /* shadow_host, or after the slots in pinned memory (GPU producers) */
	uint32_t shadow_host[2], mirrored[2];
	uint32_t *hw_db[2];
	int proxied;
};

/* ---- CUDA runtime, loaded on demand -------------------------------------------------------- */

struct cudart {
	int (*get_device_count)(int *);
	int (*host_alloc)(void **, size_t, unsigned int);
	int (*free_host)(void *);
	/* For device memory served by the CPU executor (optional: NULL where the runtime lacks them). */
	int (*memcpy_async)(void *, const void *, size_t, int, void *);
	int (*stream_create)(void **, unsigned int);
	int (*stream_query)(void *);
	int (*stream_destroy)(void *);
	int (*pointer_attributes)(void *, const void *);
	int (*set_device)(int);
	int (*get_device)(int *);
	const char *(*error_string)(int);
	int (*host_register)(void *, size_t, unsigned int);
	int (*host_unregister)(void *);
	int (*host_get_device_pointer)(void **, void *, unsigned int);
	/* Queue memory in GPU memory (GIO_CTX_QP_HBM). */
	int (*dev_malloc)(void **, size_t);
	int (*dev_free)(void *);
	int (*memset_async)(void *, int, size_t, void *);
};

static pthread_once_t cudart_once = PTHREAD_ONCE_INIT;
static struct cudart cudart;
static char cudart_error[256];

static void cudart_load(void)
{
	static const char *names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12"};
	void *h = NULL;
	int n = 0;
	size_t i;
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(cudart_error, sizeof(cudart_error), "the CUDA runtime (libcudart.so) cannot be loaded: %s", dlerror());
		return;
	}
	*(void **)&cudart.get_device_count = dlsym(h, "cudaGetDeviceCount");
	*(void **)&cudart.host_alloc = dlsym(h, "cudaHostAlloc");
	*(void **)&cudart.free_host = dlsym(h, "cudaFreeHost");
	*(void **)&cudart.memcpy_async = dlsym(h, "cudaMemcpyAsync");
	*(void **)&cudart.stream_create = dlsym(h, "cudaStreamCreateWithFlags");
	*(void **)&cudart.stream_query = dlsym(h, "cudaStreamQuery");
	*(void **)&cudart.stream_destroy = dlsym(h, "cudaStreamDestroy");
	*(void **)&cudart.pointer_attributes = dlsym(h, "cudaPointerGetAttributes");
	*(void **)&cudart.set_device = dlsym(h, "cudaSetDevice");
	*(void **)&cudart.get_device = dlsym(h, "cudaGetDevice");
	*(void **)&cudart.error_string = dlsym(h, "cudaGetErrorString");
	*(void **)&cudart.host_register = dlsym(h, "cudaHostRegister");
	*(void **)&cudart.host_unregister = dlsym(h, "cudaHostUnregister");
	*(void **)&cudart.host_get_device_pointer = dlsym(h, "cudaHostGetDevicePointer");
	*(void **)&cudart.dev_malloc = dlsym(h, "cudaMalloc");
	*(void **)&cudart.dev_free = dlsym(h, "cudaFree");
	*(void **)&cudart.memset_async = dlsym(h, "cudaMemsetAsync");
	if (!cudart.get_device_count || !cudart.host_alloc || !cudart.free_host) {
		snprintf(cudart_error, sizeof(cudart_error), "libcudart.so lacks cudaHostAlloc/cudaFreeHost");
		cudart.host_alloc = NULL;
		return;
	}
	if (cudart.get_device_count(&n) != 0 || n == 0) {
		snprintf(cudart_error, sizeof(cudart_error), "the CUDA runtime reports no GPU");
		cudart.host_alloc = NULL;
	}
}

/* Pinned, GPU-mapped, zeroed host memory, or NULL (cudart_error says why). */
static void *pinned_alloc(size_t len)
{
	void *p = NULL;
	pthread_once(&cudart_once, cudart_load);
	/* cudaHostAllocPortable (1) | cudaHostAllocMapped (2): visible to every context, mapped. */
	if (!cudart.host_alloc || cudart.host_alloc(&p, len, 1u | 2u) != 0)
		return NULL;
	memset(p, 0, len);
	return p;
}

/* ---- the CUDA copy engine of the CPU executor (struct gio__devcopy) ------------------------- */

#define CUDA_NOT_READY 600       /* cudaErrorNotReady */
#define CUDA_MEMCPY_DEFAULT 4    /* cudaMemcpyDefault: direction from the unified addresses */
#define CUDA_STREAM_NON_BLOCKING 1u
#define CUDA_MEMORY_TYPE_DEVICE 2 /* cudaMemoryTypeDevice */
#define DEVCOPY_TIMEOUT_NS (10ull * 1000000000ull)

static const char *cuda_err(int e)
{
	return cudart.error_string ? cudart.error_string(e) : "CUDA error";
}

/* priv: the context's GPU ordinal (every device region lies on it). The stream belongs to that
 * GPU, so the executor thread selects it first (cudaSetDevice is per thread). */
static int cuda_stream_create(void *priv, void **stream)
{
	int e = cudart.set_device(*(const int *)priv);
	if (e == 0)
		e = cudart.stream_create(stream, CUDA_STREAM_NON_BLOCKING);
	if (e) {
		fprintf(stderr, "giouring: executor: cannot make a copy stream: %s\n", cuda_err(e));
		return -EIO;
	}
	return 0;
}

static void cuda_stream_destroy(void *priv, void *stream)
{
	(void)priv;
	(void)cudart.stream_destroy(stream); /* CUDA releases it once the queued copies are done */
}

static int cuda_copy(void *priv, void *stream, void *dst, const void *src, size_t len, int to_dev)
{
	/* The executor thread's current GPU: the streams' (selected once per thread). */
	static __thread int selected = -1;
	int e;
	if (selected != *(const int *)priv && cudart.set_device(*(const int *)priv) == 0)
		selected = *(const int *)priv;
	e = cudart.memcpy_async(dst, src, len, CUDA_MEMCPY_DEFAULT, stream);
	if (e) {
		fprintf(stderr, "giouring: executor: cudaMemcpyAsync %s of %zu bytes: %s\n", to_dev ? "to the GPU" : "from the GPU",
			len, cuda_err(e));
		return -EIO;
	}
	return 0;
}

static int cuda_query(void *priv, void *stream)
{
	const int e = cudart.stream_query(stream);
	(void)priv;
	if (e == 0)
		return 0;
	if (e == CUDA_NOT_READY)
		return -EAGAIN;
	fprintf(stderr, "giouring: executor: a copy to or from the GPU failed: %s\n", cuda_err(e));
	return -EIO;
}

static void *cuda_host_alloc(void *priv, size_t len)
{
	void *p = NULL;
	(void)priv;
	/* Portable: pinned for every GPU context; page-aligned, so O_DIRECT takes it. */
	return cudart.host_alloc(&p, len, 1u) == 0 ? p : NULL;
}

static void cuda_host_free(void *priv, void *p)
{
	(void)priv;
	(void)cudart.free_host(p);
}

struct gio_ctx {
	struct gio__backend be;
	struct gio_tgt tgt;
	struct gio_tgt_bar *bar; /* the software target's registers, or NULL */
	struct gio_dma_region regions[MAX_REGIONS];
	struct gio_dma_map map;
	/* Device memory (gio_ctx_register_device): the executor reaches it with copies only. */
	struct gio_dma_region dev_regions[MAX_REGIONS];
	struct gio_dma_map dev_map;
	struct gio__devcopy cuda_dc; /* the CUDA copy engine, filled at the first device region */
	int dev_ordinal;             /* GPU of every device region */
	int dc_injected;             /* gio__ctx_set_devcopy() replaced it */
	int bar_mapped;              /* the software target's BAR0 is registered with CUDA (GPU producers) */
	int mmio_gpu;                /* nvme-pci BAR0 for GPU threads: 0 untried, 1 registered, -1 refused */
	int proxy_noticed;           /* the fallback to the proxy was reported once */
	char mmio_gpu_why[256];      /* why it was refused */
	pthread_mutex_t lock; /* registration, queue creation, admin commands */
	struct gio__exec exec;
	struct gio_dptr_caps caps;
	struct gio_ns_info info;
	struct gio_qp admin;
	void *admin_sq, *admin_cq, *admin_slots, *idbuf;
	uint64_t admin_sq_addr, admin_cq_addr, idbuf_addr;
	uint64_t cap;
	struct qp_mem *qps[MAX_QPS + 1];
	uint32_t nqps; /* written under lock, read by the proxy with acquire */
	pthread_t proxy;
	uint32_t proxy_stop;
	int proxy_started;
	char path[4096];
	char tmpdir[4000];
	int remove_file;
	uint64_t size;
	int started, enabled;
};

/* ---- URI ---------------------------------------------------------------------------------- */

struct params {
	uint64_t size;
	uint32_t lba, sgls, mdts, queues, threads, mqes, ns, idle_us;
	int have_size;
	int direct; /* -1 auto, 0 buffered, 1 O_DIRECT required */
	int dptr; /* GIO__DPTR_* */
	int iommu; /* GIO__IOMMU_*, nvme-pci */
};

/* dptr= : which data pointers gio_ctx_dptr_caps() lets the builders use. */
enum { GIO__DPTR_AUTO, GIO__DPTR_PRP };

static int parse_u64(const char *key, const char *v, uint64_t *out)
{
	const int rc = gio_uri_number(v, out);
	if (rc == -ERANGE)
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s is out of range", key, v);
	if (rc)
		return gio__fail(-EINVAL, "giouring: URI parameter %s=%s is not a number (digits, then K, M, G or T)", key, v);
	return 0;
}

static int parse_query(char *q, struct params *p)
{
	char *save = NULL, *kv;
	for (kv = strtok_r(q, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');
		uint64_t v = 0;
		int rc;
		if (!eq)
			return gio__fail(-EINVAL, "giouring: URI parameter '%s' has no value", kv);
		*eq = 0;
		if (!strcmp(kv, "exec")) {
			if (!strcmp(eq + 1, "gpu"))
				return gio__fail(-EOPNOTSUPP, "giouring: exec=gpu: the GPU executor runs from CUDA code: gio_gpu_target_open() in giouring/target/gpu_target.cuh");
			if (strcmp(eq + 1, "cpu"))
				return gio__fail(-EINVAL, "giouring: exec=%s: cpu or gpu", eq + 1);
			continue;
		}
		if (!strcmp(kv, "direct")) {
			if (!strcmp(eq + 1, "auto"))
				p->direct = -1;
			else if (!strcmp(eq + 1, "0") || !strcmp(eq + 1, "1"))
				p->direct = eq[1] - '0';
			else
				return gio__fail(-EINVAL, "giouring: direct=%s: auto, 0 (page cache) or 1 (O_DIRECT, required)", eq + 1);
			continue;
		}
		if (!strcmp(kv, "iommu")) {
			if (!strcmp(eq + 1, "auto"))
				p->iommu = GIO__IOMMU_AUTO;
			else if (!strcmp(eq + 1, "iommufd"))
				p->iommu = GIO__IOMMU_IOMMUFD;
			else if (!strcmp(eq + 1, "type1"))
				p->iommu = GIO__IOMMU_TYPE1;
			else
				return gio__fail(-EINVAL, "giouring: iommu=%s: auto, iommufd or type1", eq + 1);
			continue;
		}
		if (!strcmp(kv, "dptr")) {
			if (!strcmp(eq + 1, "prp"))
				p->dptr = GIO__DPTR_PRP;
			else if (!strcmp(eq + 1, "auto"))
				p->dptr = GIO__DPTR_AUTO;
			else
				return gio__fail(-EINVAL, "giouring: dptr=%s: auto (SGLs where the controller has them) or prp", eq + 1);
			continue;
		}
		if (strcmp(kv, "size") && strcmp(kv, "lba") && strcmp(kv, "sgls") && strcmp(kv, "mdts") &&
		    strcmp(kv, "queues") && strcmp(kv, "threads") && strcmp(kv, "mqes") && strcmp(kv, "ns") &&
		    strcmp(kv, "idle_us"))
			return gio__fail(-EINVAL, "giouring: unknown URI parameter '%s' (size, lba, sgls, mdts, queues, threads, mqes, ns, dptr, direct, exec, iommu, idle_us)", kv);
		rc = parse_u64(kv, eq + 1, &v);
		if (rc)
			return rc;
		if (!strcmp(kv, "ns")) {
			if (v < 1 || v > 0xfffffffeull)
				return gio__fail(-EINVAL, "giouring: ns=%" PRIu64 ": a namespace ID from 1 to 0xfffffffe", v);
			p->ns = (uint32_t)v;
		} else if (!strcmp(kv, "size")) {
			p->size = v;
			p->have_size = 1;
		} else if (!strcmp(kv, "lba")) {
			if (v < 512 || v > 65536 || (v & (v - 1)))
				return gio__fail(-EINVAL, "giouring: lba=%" PRIu64 ": a power of two from 512 to 65536", v);
			p->lba = (uint32_t)v;
		} else if (!strcmp(kv, "sgls")) {
			if (v > 2)
				return gio__fail(-EINVAL, "giouring: sgls=%" PRIu64 ": 0 (PRP only), 1 (SGLs) or 2 (SGLs, dword rule)", v);
			p->sgls = (uint32_t)v;
		} else if (!strcmp(kv, "mdts")) {
			if (v > 20)
				return gio__fail(-EINVAL, "giouring: mdts=%" PRIu64 ": 0 (no limit) to 20", v);
			p->mdts = (uint32_t)v;
		} else if (!strcmp(kv, "queues")) {
			if (v < 1 || v > GIO_TGT_MAX_IO_QUEUES)
				return gio__fail(-EINVAL, "giouring: queues=%" PRIu64 ": 1 to %u", v, GIO_TGT_MAX_IO_QUEUES);
			p->queues = (uint32_t)v;
		} else if (!strcmp(kv, "idle_us")) {
			if (v < 20 || v > 100000)
				return gio__fail(-EINVAL, "giouring: idle_us=%" PRIu64 ": 20 to 100000 (microseconds)", v);
			p->idle_us = (uint32_t)v;
		} else if (!strcmp(kv, "threads")) {
			if (v < 1 || v > GIO__EXEC_MAX_THREADS)
				return gio__fail(-EINVAL, "giouring: threads=%" PRIu64 ": 1 to %d", v, GIO__EXEC_MAX_THREADS);
			p->threads = (uint32_t)v;
		} else if (!strcmp(kv, "mqes")) {
			if (v < 1 || v > 65535)
				return gio__fail(-EINVAL, "giouring: mqes=%" PRIu64 ": 1 to 65535", v);
			p->mqes = (uint32_t)v;
		}
	}
	return 0;
}

/* ---- backing store ------------------------------------------------------------------------ */

/* Switches the file target to one O_DIRECT descriptor for every command, where the file system
 * takes O_DIRECT at offsets of one logical block. One access mode per file: io_uring requests were
 * seen to stall for seconds when one file was read and written through an O_DIRECT and a buffered
 * descriptor at once. Commands whose memory is not aligned for O_DIRECT go through a bounce
 * buffer (src/executor.c). direct=auto falls back to the page cache with a notice. */
static int use_direct(struct gio_ctx *c, const struct params *p)
{
	struct statx sx;
	uint32_t mem_align = 4096, off_align = 4096;
	const char *why = NULL;
	char whybuf[160];
	int fd = open(c->path, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		snprintf(whybuf, sizeof(whybuf), "O_DIRECT: %s", strerror(errno));
		why = whybuf;
	} else {
		/* The file system's own rule where it reports one (Linux 6.1), else 4 KiB, which every
		 * block device's logical block divides. */
		if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
			if (sx.stx_dio_offset_align == 0) {
				why = "the file system refuses O_DIRECT on this file";
			} else {
				mem_align = sx.stx_dio_mem_align > 8 ? sx.stx_dio_mem_align : 8;
				off_align = sx.stx_dio_offset_align;
			}
		}
		if (!why && off_align > p->lba) {
			snprintf(whybuf, sizeof(whybuf), "O_DIRECT needs %u-byte offsets, above lba=%u", off_align, p->lba);
			why = whybuf;
		}
	}
	if (why) {
		if (fd >= 0)
			close(fd);
		if (p->direct == 1)
			return gio__fail(-EINVAL, "giouring: %s: direct=1 but %s", c->path, why);
		fprintf(stderr, "giouring: notice: %s: %s; using the page cache\n", c->path, why);
		return 0;
	}
	close(c->exec.fd);
	c->exec.fd = fd;
	c->exec.direct = 1;
	c->exec.mem_align = mem_align;
	return 0;
}

static int open_file(struct gio_ctx *c, const struct params *p)
{
	struct stat st;
	int fd = open(c->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return gio__fail(-errno, "giouring: cannot open %s: %s", c->path, strerror(errno));
	if (fstat(fd, &st)) {
		int rc = -errno;
		close(fd);
		return gio__fail(rc, "giouring: fstat %s: %s", c->path, strerror(-rc));
	}
	c->size = p->have_size ? p->size : (uint64_t)st.st_size;
	if (c->size == 0) {
		close(fd);
		return gio__fail(-EINVAL, "giouring: %s is empty and the URI gives no size=", c->path);
	}
	if ((uint64_t)st.st_size < c->size && ftruncate(fd, (off_t)c->size)) {
		int rc = -errno;
		close(fd);
		return gio__fail(rc, "giouring: cannot size %s to %" PRIu64 " bytes: %s", c->path, c->size, strerror(-rc));
	}
	c->exec.kind = GIO__BACKING_FILE;
	c->exec.fd = fd;
	return p->direct ? use_direct(c, p) : 0;
}

/* ---- registers ---------------------------------------------------------------------------- */

/* MMIO registers take 32-bit volatile accesses only (a controller may not decode wider ones);
 * the software target's registers are memory another thread watches, hence acquire/release. */
static uint32_t reg_read(struct gio_ctx *c, uint32_t off)
{
	if (c->be.mmio)
		return *(volatile uint32_t *)((char *)c->be.bar + off);
	return gio_load_acquire((uint32_t *)((char *)c->be.bar + off));
}

static void reg_write(struct gio_ctx *c, uint32_t off, uint32_t v)
{
	if (c->be.mmio) {
		gio_fence_release(); /* queue memory written before the register that announces it */
		*(volatile uint32_t *)((char *)c->be.bar + off) = v;
		return;
	}
	gio_store_release((uint32_t *)((char *)c->be.bar + off), v);
}

/* 64-bit registers (CAP, ASQ, ACQ) as two 32-bit accesses, low then high, as the NVMe
 * specification allows for hosts that cannot do 64-bit MMIO. */
static uint64_t reg_read64(struct gio_ctx *c, uint32_t off)
{
	const uint64_t lo = reg_read(c, off);
	return lo | (uint64_t)reg_read(c, off + 4) << 32;
}

static void reg_write64(struct gio_ctx *c, uint32_t off, uint64_t v)
{
	reg_write(c, off, (uint32_t)v);
	reg_write(c, off + 4, (uint32_t)(v >> 32));
}

/* Doorbell of a queue, where the ring code writes it. */
static uint32_t *doorbell(struct gio_ctx *c, uint64_t off)
{
	return (uint32_t *)((char *)c->be.bar + off);
}

static uint16_t qp_flags(const struct gio_ctx *c)
{
	return c->be.mmio ? GIO_QP_MMIO_DOORBELLS : 0;
}

static uint64_t cap_timeout_ns(uint64_t cap)
{
	return (GIO_GET(cap, CAP_TO) ? GIO_GET(cap, CAP_TO) : 1) * 500000000ull;
}

static int wait_csts(struct gio_ctx *c, uint32_t mask, uint32_t want, uint64_t timeout_ns, const char *what)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	for (;;) {
		const uint32_t csts = reg_read(c, GIO_REG_CSTS);
		if (GIO_GET(csts, CSTS_CFS))
			return gio__fail(-EIO, "giouring: controller fatal status (CSTS.CFS) while waiting for %s", what);
		if ((csts & mask) == want)
			return 0;
		if (gio_deadline_passed(deadline))
			return gio__fail(-ETIME, "giouring: controller did not report %s within %" PRIu64 " ms (CSTS 0x%x)",
					 what, timeout_ns / 1000000, csts);
		usleep(100);
	}
}

/* ---- admin -------------------------------------------------------------------------------- */

static const char *opc_name(uint8_t opc)
{
	switch (opc) {
	case GIO_ADMIN_OPC_IDENTIFY: return "Identify";
	case GIO_ADMIN_OPC_CREATE_CQ: return "Create I/O Completion Queue";
	case GIO_ADMIN_OPC_CREATE_SQ: return "Create I/O Submission Queue";
	case GIO_ADMIN_OPC_DELETE_SQ: return "Delete I/O Submission Queue";
	case GIO_ADMIN_OPC_DELETE_CQ: return "Delete I/O Completion Queue";
	case GIO_ADMIN_OPC_SET_FEATURES: return "Set Features";
	default: return "admin command";
	}
}

static int admin(struct gio_ctx *c, const struct gio_sqe *sqe, uint32_t *dw0)
{
	uint16_t st = 0;
	int rc = gio_qp_submit_wait(&c->admin, sqe, ADMIN_TIMEOUT_NS, &st, dw0);
	if (rc == -EIO)
		return gio__fail(-EIO, "giouring: %s failed: %s (status 0x%04x, SCT %u SC 0x%02x%s)", opc_name(sqe->opc),
				 gio_status_str(st), st, gio_status_sct(st), gio_status_sc(st), gio_status_dnr(st) ? ", DNR" : "");
	if (rc == -ETIME)
		return gio__fail(-ETIME, "giouring: %s timed out (%s)", opc_name(sqe->opc), gio_last_error());
	return rc;
}

int gio_qp_submit_wait(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t timeout_ns, uint16_t *status, uint32_t *dw0)
{
	const uint64_t deadline = gio_deadline_in(timeout_ns);
	uint32_t idx;
	int rc = gio_qp_reserve_wait(qp, 1, deadline, &idx);
	if (rc == 0) {
		gio__qp_put(qp, idx, sqe);
		rc = gio__qp_publish(qp, idx, 1, deadline);
	}
	if (rc == 0)
		rc = gio_qp_wait(qp, idx & (qp->sq_depth - 1), deadline, status, dw0);
	if (rc == -ETIME) {
		const struct gio_qp_state *s = &qp->last_timeout;
		gio__fail(-ETIME,
			  "giouring: queue %u: deadline passed (cid %d; sq reserved %u committed %u rung %u head %u; cq head %u)",
			  qp->qid, (int)s->cid, s->sq_reserved, s->sq_committed, s->sq_rung, s->sq_head, s->cq_head);
	}
	return rc;
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Host and device pointers share one address space (CUDA's unified addressing), and bus
 * addresses of the software target are those pointers: one overlap check over both tables keeps
 * every bus address in one region. */
static int overlap_check(struct gio_ctx *c, void *ptr, size_t len)
{
	const uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t i;
	for (i = 0; i < c->map.count + c->dev_map.count; i++) {
		const struct gio_dma_region *r = i < c->map.count ? &c->regions[i] : &c->dev_regions[i - c->map.count];
		const uint64_t p = (uint64_t)(uintptr_t)r->ptr;
		if (a < p + r->len && p < a + len)
			return gio__fail(-EINVAL, "giouring: %p + %zu overlaps registered memory at %p", ptr, len, r->ptr);
	}
	return 0;
}

/* Adds [ptr, ptr + len) to the region table; its bus address comes from the backend: for ptr
 * itself (fd < 0), or for bytes [off, off + len) of the file or dma-buf fd. c->lock held. */
static int add_region_locked(struct gio_ctx *c, void *ptr, size_t len, int fd, uint64_t off, uint64_t *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t n = c->map.count;
	int rc;
	if (!ptr || len == 0 || a + len < a)
		return gio__fail(-EINVAL, "giouring: cannot register %p + %zu: empty or wrapping", ptr, len);
	if ((rc = overlap_check(c, ptr, len)))
		return rc;
	if (n == MAX_REGIONS)
		return gio__fail(-ENOSPC, "giouring: %u regions registered already", MAX_REGIONS);
	/* Bus address: an IOVA where an IOMMU stands between (VFIO); the virtual address for the
	 * software target, which runs in this process. */
	if (fd >= 0)
		rc = c->be.dma_map_fd(c->be.priv, fd, off, len, &a);
	else if (c->be.dma_map)
		rc = c->be.dma_map(c->be.priv, ptr, len, &a);
	if (rc)
		return rc;
	c->regions[n].addr = a;
	c->regions[n].len = len;
	c->regions[n].ptr = ptr;
	gio_store_release(&c->map.count, n + 1); /* pairs with the acquire in gio_dma_map_find */
	if (addr)
		*addr = a;
	return 0;
}

static int register_locked(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	return add_region_locked(c, ptr, len, -1, 0, addr);
}

/* Why this context cannot map files and dma-bufs, or NULL where it can. */
static const char *no_fd_mapping(const struct gio_ctx *c)
{
	if (!c->be.mmio)
		return "the software target reaches memory by address: register it with gio_ctx_register() or "
		       "gio_ctx_register_device()";
	if (!c->be.dma_map_fd)
		return "this context uses the VFIO type1 container, which maps only process memory; files and dma-bufs "
		       "need iommufd (URI iommu=iommufd; Linux 6.6+ with CONFIG_IOMMUFD and CONFIG_VFIO_DEVICE_CDEV, "
		       "IOMMU_IOAS_MAP_FILE since 6.13)";
	return NULL;
}

int gio_ctx_register_fd(struct gio_ctx *c, int fd, uint64_t offset, size_t len, void *ptr, uint64_t *addr)
{
	const char *why;
	int rc;
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_register_fd: no context");
	if ((why = no_fd_mapping(c)))
		return gio__fail(-EOPNOTSUPP, "giouring: gio_ctx_register_fd: %s", why);
	if (fd < 0)
		return gio__fail(-EBADF, "giouring: gio_ctx_register_fd: fd %d", fd);
	pthread_mutex_lock(&c->lock);
	rc = add_region_locked(c, ptr, len, fd, offset, addr);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

const char *gio_ctx_iommu(const struct gio_ctx *c)
{
	return c && c->be.iommu ? c->be.iommu : "none";
}

int gio_ctx_register(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	int rc;
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_register: no context");
	pthread_mutex_lock(&c->lock);
	rc = register_locked(c, ptr, len, addr);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* DMA-address providers: who turns memory of a kind into a bus address. Host memory goes through
 * the backend (identity for the software target, an IOMMU mapping for nvme-pci). GPU memory
 * (HBM) on nvme-pci goes through a dma-buf of the range from the CUDA driver
 * (cuMemGetHandleForAddressRange), imported into the context's IOAS with IOMMU_IOAS_MAP_FILE
 * (gio_ctx_register_fd). Each step is probed at run time and a refusal names the step: no
 * iommufd backend, no CUDA driver, a driver that exports no dma-buf, a kernel that cannot pin
 * the GPU driver's dma-buf (Linux 7.3 pins only VFIO-exported BARs). */
struct cudrv {
	int (*init)(unsigned);
	int (*pointer_get_attribute)(void *, int, unsigned long long);
	int (*ctx_push)(void *);
	int (*ctx_pop)(void **);
	int (*get_handle)(void *, unsigned long long, size_t, int, unsigned long long);
	int (*error_string)(int, const char **);
};

static pthread_once_t cudrv_once = PTHREAD_ONCE_INIT;
static struct cudrv cudrv;
static char cudrv_error[256];

enum { CU_POINTER_ATTRIBUTE_CONTEXT_ = 1, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD_ = 1 };
#define CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE_ 1ull /* a BAR1 (PCIe) mapping, not C2C */

static void cudrv_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int e;
	if (!h) {
		snprintf(cudrv_error, sizeof(cudrv_error), "the CUDA driver (libcuda.so.1) cannot be loaded: %s", dlerror());
		return;
	}
	*(void **)&cudrv.init = dlsym(h, "cuInit");
	*(void **)&cudrv.pointer_get_attribute = dlsym(h, "cuPointerGetAttribute");
	*(void **)&cudrv.ctx_push = dlsym(h, "cuCtxPushCurrent_v2");
	*(void **)&cudrv.ctx_pop = dlsym(h, "cuCtxPopCurrent_v2");
	*(void **)&cudrv.get_handle = dlsym(h, "cuMemGetHandleForAddressRange");
	*(void **)&cudrv.error_string = dlsym(h, "cuGetErrorString");
	if (!cudrv.init || !cudrv.pointer_get_attribute || !cudrv.ctx_push || !cudrv.ctx_pop || !cudrv.get_handle) {
		snprintf(cudrv_error, sizeof(cudrv_error),
			 "the CUDA driver lacks cuMemGetHandleForAddressRange (CUDA 11.7 or later) or the context calls");
		cudrv.get_handle = NULL;
		return;
	}
	if ((e = cudrv.init(0))) {
		snprintf(cudrv_error, sizeof(cudrv_error), "cuInit: CUresult %d (no GPU or driver)", e);
		cudrv.get_handle = NULL;
	}
}

static const char *cu_err(int e)
{
	const char *s = NULL;
	if (cudrv.error_string)
		cudrv.error_string(e, &s);
	return s ? s : "unknown CUresult";
}

int gio__gpu_dmabuf(void *ptr, size_t len, int *fd)
{
	const long pg = sysconf(_SC_PAGESIZE);
	void *cuctx = NULL, *popped;
	int e;
	*fd = -1;
	if (!ptr || len == 0 || (((uintptr_t)ptr | len) & (uintptr_t)(pg - 1)))
		return gio__fail(-EINVAL, "giouring: GPU memory at %p + %zu: start and length must be multiples of the %ld-byte "
				 "page (a dma-buf of a range covers whole pages)", ptr, len, pg);
	pthread_once(&cudrv_once, cudrv_load);
	if (!cudrv.get_handle)
		return gio__fail(-EOPNOTSUPP, "giouring: GPU memory at %p + %zu: no dma-buf from the GPU: %s", ptr, len,
				 cudrv_error);
	e = cudrv.pointer_get_attribute(&cuctx, CU_POINTER_ATTRIBUTE_CONTEXT_, (unsigned long long)(uintptr_t)ptr);
	if (e || !cuctx)
		return gio__fail(-EINVAL, "giouring: %p is not GPU memory (cuPointerGetAttribute: %s)", ptr, cu_err(e));
	if ((e = cudrv.ctx_push(cuctx)))
		return gio__fail(-EINVAL, "giouring: GPU memory at %p: cuCtxPushCurrent: %s", ptr, cu_err(e));
	e = cudrv.get_handle(fd, (unsigned long long)(uintptr_t)ptr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD_,
			     CU_MEM_RANGE_FLAG_DMA_BUF_MAPPING_TYPE_PCIE_);
	if (e) /* drivers before CUDA 12.8 know no flags */
		e = cudrv.get_handle(fd, (unsigned long long)(uintptr_t)ptr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD_, 0);
	(void)cudrv.ctx_pop(&popped);
	if (e) {
		*fd = -1;
		return gio__fail(-EOPNOTSUPP,
				 "giouring: GPU memory at %p + %zu: the GPU driver exports no dma-buf for it "
				 "(cuMemGetHandleForAddressRange: %s; needs CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, i.e. the open "
				 "kernel modules on Linux 5.12+)", ptr, len, cu_err(e));
	}
	return 0;
}

/* GIO_CTX_QP_HBM: the SQ and CQ in one GPU allocation (on the calling thread's current GPU),
 * zeroed on a non-blocking stream (a persistent kernel already running must not hold this up),
 * and mapped for the controller through the HBM provider; c->lock held. */
static int hbm_queues(struct gio_ctx *c, struct qp_mem *m, size_t sq_bytes, size_t cq_bytes)
{
	const size_t len = sq_bytes + cq_bytes;
	void *stream = NULL;
	uint64_t addr, deadline;
	int e, fd, rc;
	if (!cudart.dev_malloc || !cudart.dev_free || !cudart.memset_async || !cudart.stream_create ||
	    !cudart.stream_query || !cudart.stream_destroy)
		return gio__fail(-ENODEV, "giouring: GIO_CTX_QP_HBM: libcudart.so lacks cudaMalloc, cudaFree, cudaMemsetAsync "
				 "or the stream calls");
	if ((e = cudart.dev_malloc(&m->hbm_base, len + 4095))) {
		m->hbm_base = NULL;
		return gio__fail(-ENOMEM, "giouring: GIO_CTX_QP_HBM: cudaMalloc of %zu bytes: %s", len + 4095, cuda_err(e));
	}
	/* Queues start on 4 KiB (Create I/O SQ/CQ) and a dma-buf covers whole pages. */
	m->sq = (void *)(((uintptr_t)m->hbm_base + 4095) & ~(uintptr_t)4095);
	m->cq = (char *)m->sq + sq_bytes;
	if ((e = cudart.stream_create(&stream, CUDA_STREAM_NON_BLOCKING)))
		return gio__fail(-EIO, "giouring: GIO_CTX_QP_HBM: cudaStreamCreateWithFlags: %s", cuda_err(e));
	e = cudart.memset_async(m->sq, 0, len, stream);
	deadline = gio_deadline_in(DEVCOPY_TIMEOUT_NS);
	while (!e && (e = cudart.stream_query(stream)) == CUDA_NOT_READY && !gio_deadline_passed(deadline))
		gio_host_sleep_ns(100000);
	(void)cudart.stream_destroy(stream);
	if (e == CUDA_NOT_READY)
		return gio__fail(-ETIME, "giouring: GIO_CTX_QP_HBM: zeroing the queues did not finish within 10 s");
	if (e)
		return gio__fail(-EIO, "giouring: GIO_CTX_QP_HBM: cudaMemsetAsync: %s", cuda_err(e));
	if ((rc = gio__gpu_dmabuf(m->sq, len, &fd)))
		return rc;
	rc = add_region_locked(c, m->sq, len, fd, 0, &addr);
	close(fd); /* on success the IOAS holds its own reference */
	if (rc)
		return rc;
	m->sq_addr = addr;
	m->cq_addr = addr + sq_bytes;
	return 0;
}

static int hbm_provider(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	const char *why = no_fd_mapping(c);
	char msg[512];
	int fd, rc;
	if (why)
		return gio__fail(-EOPNOTSUPP,
				 "giouring: GPU memory at %p + %zu: a controller reaches GPU memory only through a dma-buf of the "
				 "range imported with iommufd, but %s. Register pinned host memory instead.",
				 ptr, len, why);
	if ((rc = gio__gpu_dmabuf(ptr, len, &fd)))
		return rc;
	rc = gio_ctx_register_fd(c, fd, 0, len, ptr, addr);
	close(fd); /* on success the IOAS holds its own reference to the dma-buf */
	if (rc) {
		snprintf(msg, sizeof(msg), "%s", gio_last_error());
		return gio__fail(rc, "giouring: GPU memory at %p + %zu: %s", ptr, len, msg);
	}
	return 0;
}

/* Fills the CUDA copy engine, checking that ptr is device memory; c->lock held. */
static int devcopy_cuda(struct gio_ctx *c, void *ptr, size_t len)
{
	/* struct cudaPointerAttributes (CUDA 11 on): type, device, then pointers; room to spare. */
	union {
		struct {
			int type;
			int device;
		} a;
		unsigned char bytes[256];
	} attr;
	int e;
	pthread_once(&cudart_once, cudart_load);
	if (!cudart.host_alloc)
		return gio__fail(-ENODEV, "giouring: device memory at %p + %zu: %s", ptr, len,
				 cudart_error[0] ? cudart_error : "no CUDA runtime");
	if (!cudart.memcpy_async || !cudart.stream_create || !cudart.stream_query || !cudart.stream_destroy ||
	    !cudart.pointer_attributes || !cudart.set_device)
		return gio__fail(-ENODEV, "giouring: device memory: libcudart.so lacks cudaMemcpyAsync, cudaStreamCreateWithFlags, "
				 "cudaStreamQuery, cudaStreamDestroy, cudaPointerGetAttributes or cudaSetDevice");
	memset(&attr, 0, sizeof(attr));
	e = cudart.pointer_attributes(&attr, ptr);
	if (e || attr.a.type != CUDA_MEMORY_TYPE_DEVICE)
		return gio__fail(-EINVAL, "giouring: %p is not GPU memory (cudaPointerGetAttributes: %s, type %d); register host "
				 "memory with gio_ctx_register()", ptr, e ? cuda_err(e) : "ok", attr.a.type);
	if (c->dev_map.count && attr.a.device != c->dev_ordinal)
		return gio__fail(-EINVAL, "giouring: %p is on GPU %d, earlier device regions on GPU %d: one GPU per context "
				 "in this release", ptr, attr.a.device, c->dev_ordinal);
	c->dev_ordinal = attr.a.device;
	c->cuda_dc.priv = &c->dev_ordinal;
	c->cuda_dc.timeout_ns = DEVCOPY_TIMEOUT_NS;
	c->cuda_dc.stream_create = cuda_stream_create;
	c->cuda_dc.stream_destroy = cuda_stream_destroy;
	c->cuda_dc.copy = cuda_copy;
	c->cuda_dc.query = cuda_query;
	c->cuda_dc.host_alloc = cuda_host_alloc;
	c->cuda_dc.host_free = cuda_host_free;
	c->cuda_dc.name = "CUDA";
	c->exec.dc = &c->cuda_dc;
	return 0;
}

int gio_ctx_register_device(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	const uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t n;
	int rc;
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_register_device: no context");
	if (c->be.mmio)
		return hbm_provider(c, ptr, len, addr);
	if (!ptr || len == 0 || a + len < a)
		return gio__fail(-EINVAL, "giouring: cannot register device memory %p + %zu: empty or wrapping", ptr, len);
	pthread_mutex_lock(&c->lock);
	n = c->dev_map.count;
	if (!c->dc_injected && (rc = devcopy_cuda(c, ptr, len)))
		goto out;
	if (!c->exec.dev_prepared) {
		/* Streams are made on the current GPU of the calling thread: select the memory's GPU
		 * for the call, then give the caller its own back. */
		int cur = -1;
		if (!c->dc_injected && cudart.get_device && cudart.get_device(&cur) == 0 && cur != c->dev_ordinal)
			(void)cudart.set_device(c->dev_ordinal);
		else
			cur = -1;
		rc = gio__exec_dev_prepare(&c->exec);
		if (cur >= 0)
			(void)cudart.set_device(cur);
		if (rc)
			goto out;
	}
	if ((rc = overlap_check(c, ptr, len)))
		goto out;
	if (n == MAX_REGIONS) {
		rc = gio__fail(-ENOSPC, "giouring: %u device regions registered already", MAX_REGIONS);
		goto out;
	}
	c->dev_regions[n].addr = a; /* the bus address is the device pointer */
	c->dev_regions[n].len = len;
	c->dev_regions[n].ptr = ptr;
	/* Pairs with the acquire in gio_dma_map_find: the region and exec.dc before the count. */
	gio_store_release(&c->dev_map.count, n + 1);
	if (addr)
		*addr = a;
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int gio__ctx_set_devcopy(struct gio_ctx *c, const struct gio__devcopy *dc)
{
	int rc = 0;
	if (!c || !dc || !dc->copy || !dc->query || !dc->stream_create || !dc->stream_destroy || !dc->host_alloc ||
	    !dc->host_free)
		return gio__fail(-EINVAL, "giouring: gio__ctx_set_devcopy: NULL context or operation");
	if (c->be.mmio)
		return gio__fail(-EOPNOTSUPP, "giouring: gio__ctx_set_devcopy: only the software target copies");
	pthread_mutex_lock(&c->lock);
	if (c->dev_map.count) {
		rc = gio__fail(-EBUSY, "giouring: gio__ctx_set_devcopy: device memory is registered already");
	} else {
		c->exec.dc = dc;
		c->dc_injected = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int gio_ctx_register_ex(struct gio_ctx *c, void *ptr, size_t len, uint32_t kind, uint64_t *addr)
{
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_register_ex: no context");
	switch (kind) {
	case GIO_MEM_HOST:
		return gio_ctx_register(c, ptr, len, addr);
	case GIO_MEM_HBM:
		if (!c->be.mmio)
			return gio_ctx_register_device(c, ptr, len, addr);
		return hbm_provider(c, ptr, len, addr);
	default:
		return gio__fail(-EINVAL, "giouring: gio_ctx_register_ex: unknown memory kind %u (GIO_MEM_HOST, GIO_MEM_HBM)", kind);
	}
}

/* Zeroed, page-aligned memory the controller can reach; *addr receives its bus address. */
static void *alloc_dma(struct gio_ctx *c, size_t len, uint64_t *addr)
{
	void *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!p) {
		gio__fail(-ENOMEM, "giouring: no memory for %zu bytes of queue or Identify memory", len);
		return NULL;
	}
	memset(p, 0, len);
	if (register_locked(c, p, (len + 4095) & ~(size_t)4095, addr)) {
		free(p);
		return NULL;
	}
	return p;
}

/* ---- bring-up ----------------------------------------------------------------------------- */

static int bring_up(struct gio_ctx *c, uint32_t nsid, int dptr)
{
	const uint64_t cap = c->cap = reg_read64(c, GIO_REG_CAP);
	const uint64_t to_ns = cap_timeout_ns(cap);
	struct gio_id_ctrl *id;
	struct gio_id_ns *ns;
	struct gio_sqe sqe;
	uint32_t dw0, nsq, ncq;
	int rc;

	/* Reset: CC.EN to 0, then CSTS.RDY to 0 before the admin queue registers may change. RDY is
	 * waited for even when EN already reads 0: a controller a previous user just disabled may
	 * still be finishing its reset. */
	if (GIO_GET(reg_read(c, GIO_REG_CC), CC_EN))
		reg_write(c, GIO_REG_CC, 0);
	rc = wait_csts(c, GIO_CSTS_RDY_MASK, 0, to_ns, "not ready (disable)");
	if (rc)
		return rc;
	if (GIO_GET(cap, CAP_MPSMIN) != 0 || !(GIO_GET(cap, CAP_CSS) & GIO_CAP_CSS_NVM))
		return gio__fail(-EOPNOTSUPP, "giouring: controller needs pages above 4 KiB or lacks the NVM command set (CAP 0x%016" PRIx64 ")",
				 cap);
	if (c->be.mmio && gio_cq_doorbell_offset(cap, 1) + 4 > c->be.bar_len)
		return gio__fail(-ENODEV, "giouring: BAR0 of %zu bytes is too small for one I/O queue pair's doorbells",
				 c->be.bar_len);
	c->admin_sq = alloc_dma(c, ADMIN_DEPTH * sizeof(struct gio_sqe), &c->admin_sq_addr);
	c->admin_cq = alloc_dma(c, ADMIN_DEPTH * sizeof(struct gio_cqe), &c->admin_cq_addr);
	c->admin_slots = calloc(ADMIN_DEPTH, sizeof(struct gio_cmd_slot));
	c->idbuf = alloc_dma(c, GIO_IDENTIFY_BYTES, &c->idbuf_addr);
	if (!c->admin_sq || !c->admin_cq || !c->admin_slots || !c->idbuf)
		return c->admin_slots ? -ENOMEM /* alloc_dma said why */ : gio__fail(-ENOMEM, "giouring: no memory for the admin queue");
	reg_write(c, GIO_REG_AQA, GIO_SET(AQA_ASQS, ADMIN_DEPTH - 1) | GIO_SET(AQA_ACQS, ADMIN_DEPTH - 1));
	reg_write64(c, GIO_REG_ASQ, c->admin_sq_addr);
	reg_write64(c, GIO_REG_ACQ, c->admin_cq_addr);
	rc = gio_qp_init(&c->admin, c->admin_sq, ADMIN_DEPTH, c->admin_cq, ADMIN_DEPTH, c->admin_slots, 0,
			 doorbell(c, gio_sq_doorbell_offset(cap, 0)), doorbell(c, gio_cq_doorbell_offset(cap, 0)), qp_flags(c));
	if (rc)
		return gio__fail(rc, "giouring: admin queue init");
	/* Release: AQA/ASQ/ACQ before EN (the controller reads them when it sees EN). */
	reg_write(c, GIO_REG_CC, GIO_SET(CC_EN, 1u) | GIO_SET(CC_CSS, GIO_CC_CSS_NVM) | GIO_SET(CC_MPS, 0u) |
					 GIO_SET(CC_IOSQES, GIO_SQE_SHIFT) | GIO_SET(CC_IOCQES, GIO_CQE_SHIFT));
	rc = wait_csts(c, GIO_CSTS_RDY_MASK, 1, to_ns, "ready (CSTS.RDY)");
	if (rc)
		return rc;
	c->enabled = 1;

	gio_prep_identify(&sqe, GIO_CNS_CTRL, 0, c->idbuf_addr, 0);
	if ((rc = admin(c, &sqe, &dw0)))
		return rc;
	id = c->idbuf;
	rc = gio_dptr_caps_init(&c->caps, cap, reg_read(c, GIO_REG_CC), id);
	if (rc)
		return gio__fail(rc, "giouring: controller reports unusable SGLS/MDTS/page size");
	c->info.sgls = id->sgls;
	if (dptr == GIO__DPTR_PRP) /* the builders then take PRPs; info.sgls keeps what the controller said */
		c->caps.sgls = 0;
	if (nsid > id->nn)
		return gio__fail(-ENODEV, "giouring: namespace %u: the controller has %u", nsid, id->nn);
	gio_prep_identify(&sqe, GIO_CNS_NS, nsid, c->idbuf_addr, 0);
	if ((rc = admin(c, &sqe, &dw0)))
		return rc;
	ns = c->idbuf;
	if (ns->nsze == 0)
		return gio__fail(-ENODEV, "giouring: namespace %u is not active", nsid);
	if (gio_id_ns_lba_bytes(ns) < 512 || gio_id_ns_lba_bytes(ns) > (1u << 16))
		return gio__fail(-EOPNOTSUPP, "giouring: namespace %u: LBA size %u is outside 512..65536", nsid, gio_id_ns_lba_bytes(ns));
	c->info.nblocks = ns->nsze;
	c->info.lba_bytes = gio_id_ns_lba_bytes(ns);
	c->info.nsid = nsid;
	c->info.max_xfer_bytes = c->caps.max_xfer_bytes;
	c->info.page_bytes = c->caps.page_bytes;
	c->info.max_queue_entries = (uint32_t)GIO_GET(cap, CAP_MQES) + 1;
	gio_prep_set_num_queues(&sqe, MAX_QPS, MAX_QPS);
	if ((rc = admin(c, &sqe, &dw0)))
		return rc;
	gio_num_queues_granted(dw0, &nsq, &ncq);
	c->info.io_queues = nsq < ncq ? nsq : ncq;
	/* No more queue pairs than BAR0 has doorbells for. */
	while (c->be.mmio && c->info.io_queues && gio_cq_doorbell_offset(cap, (uint16_t)c->info.io_queues) + 4 > c->be.bar_len)
		c->info.io_queues--;
	return 0;
}

int gio_ctx_open(const char *uri, struct gio_ctx **out)
{
	struct params p = {.size = 0, .lba = 4096, .sgls = 1, .mdts = 7, .queues = 16, .threads = 2, .mqes = 4095,
			   .ns = GIO_TGT_NSID, .idle_us = 200, .have_size = 0, .direct = -1, .dptr = GIO__DPTR_AUTO,
			   .iommu = GIO__IOMMU_AUTO};
	struct gio_tgt_config cfg;
	struct gio_ctx *c;
	char buf[4096];
	char *query;
	int rc;

	if (!out)
		return gio__fail(-EINVAL, "giouring: gio_ctx_open: out is NULL");
	*out = NULL;
	if (uri && strlen(uri) >= sizeof(buf))
		return gio__fail(-EINVAL, "giouring: URI longer than %zu bytes", sizeof(buf) - 1);
	snprintf(buf, sizeof(buf), "%s", uri ? uri : "");
	query = strchr(buf, '?');
	if (query)
		*query++ = 0;
	if (query && (rc = parse_query(query, &p)))
		return rc;
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63); /* C11: size a multiple of the alignment */
	if (!c)
		return gio__fail(-ENOMEM, "giouring: no memory for a context");
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->map.regions = c->regions;
	c->dev_map.regions = c->dev_regions;
	c->exec.fd = -1;

	if (buf[0] == 0) {
		const char *tmp = getenv("TMPDIR");
		snprintf(c->tmpdir, sizeof(c->tmpdir), "%s/giouring-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(c->tmpdir)) {
			rc = gio__fail(-errno, "giouring: mkdtemp %s: %s", c->tmpdir, strerror(errno));
			goto fail;
		}
		snprintf(c->path, sizeof(c->path), "%s/kv.img", c->tmpdir);
		c->remove_file = 1;
		if (!p.have_size) {
			p.size = 64ull << 20;
			p.have_size = 1;
		}
		rc = open_file(c, &p);
	} else if (!strncmp(buf, "file://", 7)) {
		if (buf[7] != '/') {
			rc = gio__fail(-EINVAL, "giouring: '%s': file URIs need an absolute path (file:///dir/file)", buf);
			goto fail;
		}
		snprintf(c->path, sizeof(c->path), "%s", buf + 7);
		rc = open_file(c, &p);
	} else if (!strcmp(buf, "mem://host")) {
		if (!p.have_size || p.size == 0) {
			rc = gio__fail(-EINVAL, "giouring: mem://host needs size= (e.g. mem://host?size=64M)");
			goto fail;
		}
		c->size = p.size;
		c->exec.kind = GIO__BACKING_MEM;
		c->exec.mem = aligned_alloc(4096, (c->size + 4095) & ~(uint64_t)4095);
		if (!c->exec.mem) {
			rc = gio__fail(-ENOMEM, "giouring: no memory for a %" PRIu64 "-byte store", c->size);
			goto fail;
		}
		memset(c->exec.mem, 0, c->size);
		rc = 0;
	} else if (!strncmp(buf, "nvme-pci://", 11)) {
		/* A real controller: no software target, no executor; the rest is the same path. */
		if ((rc = gio__vfio_open(buf + 11, p.iommu, &c->be)))
			goto fail;
		pthread_mutex_lock(&c->lock);
		rc = bring_up(c, p.ns, p.dptr);
		pthread_mutex_unlock(&c->lock);
		if (rc)
			goto fail;
		*out = c;
		return 0;
	} else if (!strncmp(buf, "mem://hbm", 9)) {
		rc = gio__fail(-EOPNOTSUPP, "giouring: '%s': gio_ctx_open() serves file:// and mem://host; GPU-executed targets "
				 "open with gio_gpu_target_open() (giouring/target/gpu_target.cuh, CUDA)", buf);
		goto fail;
	} else {
		rc = gio__fail(-EINVAL, "giouring: '%s': unknown target (file:///path, mem://host, or none)", buf);
		goto fail;
	}
	if (rc)
		goto fail;
	if (c->size % p.lba) {
		rc = gio__fail(-EINVAL, "giouring: size %" PRIu64 " is not a multiple of the block size %u", c->size, p.lba);
		goto fail;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.sgls = p.sgls;
	cfg.mdts = (uint8_t)p.mdts;
	cfg.lba_shift = (uint8_t)__builtin_ctz(p.lba);
	cfg.max_io_queues = (uint16_t)p.queues;
	cfg.mqes = (uint16_t)p.mqes;
	cfg.nsze = c->size / p.lba;
	c->bar = aligned_alloc(4096, (sizeof(*c->bar) + 4095) & ~(size_t)4095);
	if (!c->bar) {
		rc = gio__fail(-ENOMEM, "giouring: no memory for registers");
		goto fail;
	}
	c->be.bar = c->bar;
	c->be.bar_len = sizeof(*c->bar);
	rc = gio_tgt_init(&c->tgt, c->bar, &cfg, &c->map);
	if (rc) {
		rc = gio__fail(rc, "giouring: invalid target configuration");
		goto fail;
	}
	c->tgt.copy_map = &c->dev_map; /* after gio_tgt_init, which clears the target */
	c->exec.tgt = &c->tgt;
	c->exec.idle_us = p.idle_us;
	rc = gio__exec_start(&c->exec, (int)p.threads);
	if (rc)
		goto fail;
	c->started = 1;
	pthread_mutex_lock(&c->lock);
	rc = bring_up(c, p.ns, p.dptr);
	pthread_mutex_unlock(&c->lock);
	if (rc)
		goto fail;
	*out = c;
	return 0;
fail: {
	char msg[512];
	snprintf(msg, sizeof(msg), "%s", gio_last_error()); /* close may overwrite it */
	gio_ctx_close(c);
	gio__fail(rc, "%s", msg);
	return rc;
}
}

void gio_ctx_info(const struct gio_ctx *c, struct gio_ns_info *info)
{
	*info = c->info;
}

const struct gio_dptr_caps *gio_ctx_dptr_caps(const struct gio_ctx *c)
{
	return &c->caps;
}

uint32_t gio_ctx_qp_doorbells(struct gio_ctx *c, const struct gio_qp *qp)
{
	uint32_t i, n, mode = 0;
	if (!c || !qp)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->nqps;
	for (i = 1; i <= n; i++) {
		const struct qp_mem *m = c->qps[i];
		if (m && &m->qp == qp)
			mode = !c->be.mmio ? 0 : m->proxied ? GIO_CTX_QP_DB_PROXY : GIO_CTX_QP_DB_DIRECT;
	}
	pthread_mutex_unlock(&c->lock);
	return mode;
}

int gio_ctx_inject(struct gio_ctx *c, const struct gio_fault *f)
{
	static const struct gio_fault none;
	if (!c->started)
		return gio__fail(-EOPNOTSUPP, "giouring: fault injection needs the software target (file:// or mem://host)");
	pthread_mutex_lock(&c->exec.fault_lock);
	c->exec.fault = f ? *f : none;
	if (c->exec.fault.fail_nth)
		c->exec.fault.fail_nth += c->exec.io_seen;
	if (c->exec.fault.drop_nth)
		c->exec.fault.drop_nth += c->exec.io_seen;
	pthread_mutex_unlock(&c->exec.fault_lock);
	__atomic_store_n(&c->exec.stall_until_ns, f && f->stall_ms ? gio_host_now_ns() + f->stall_ms * 1000000ull : 0,
			 __ATOMIC_RELAXED);
	return 0;
}

/* ---- doorbell proxy ----------------------------------------------------------------------- */

/* Mirrors the shadow doorbells of proxied queue pairs to the controller's MMIO doorbells, one
 * write per change (a batch of commands costs one write). For rings whose producers cannot write
 * MMIO themselves: GPU threads where the GPU driver refuses to map BAR0 for them. */
static void *proxy_main(void *arg)
{
	struct gio_ctx *c = arg;
	uint32_t spins = 0;
	while (!gio_load_acquire(&c->proxy_stop)) {
		/* Pairs with the release of nqps after a queue pair is complete. */
		const uint32_t n = gio_load_acquire(&c->nqps);
		uint32_t i, k, moved = 0;
		for (i = 1; i <= n; i++) {
			struct qp_mem *m = c->qps[i];
			if (!m || !m->proxied)
				continue;
			for (k = 0; k < 2; k++) {
				/* Pairs with the ring's release store of the shadow tail/head: the entries
				 * it announces are written (SQ) or consumed (CQ). */
				const uint32_t v = gio_load_acquire(&m->shadow[k]);
				if (v != m->mirrored[k]) {
					m->mirrored[k] = v;
					gio_fence_release(); /* then the controller may fetch them */
					gio_mmio_write32((volatile uint32_t *)m->hw_db[k], v);
					moved++;
				}
			}
		}
		if (moved)
			spins = 0;
		else
			gio_backoff(&spins);
	}
	return NULL;
}

static int proxy_start(struct gio_ctx *c)
{
	int rc;
	if (c->proxy_started)
		return 0;
	rc = pthread_create(&c->proxy, NULL, proxy_main, c);
	if (rc)
		return gio__fail(-rc, "giouring: cannot start the doorbell proxy thread: %s", strerror(rc));
	c->proxy_started = 1;
	return 0;
}

/* GPU producers of a software target's queue pair write its doorbells, which live in the
 * emulated BAR0 (ordinary host memory): pin it and map it for the GPU, once, at the address the
 * CPU uses (unified addressing), so that the doorbell pointers in struct gio_qp hold on both
 * sides. c->lock held. */
/* Direct GPU doorbells on a real controller: BAR0 registered with the GPU as I/O memory
 * (cudaHostRegisterIoMemory), at the same address for GPU threads (unified addressing), so the
 * ring's doorbell pointers serve host and GPU alike. Tried once per context; a refusal is kept
 * with its reason (recent open GPU kernel modules refuse it; so does a machine without a GPU). */
static int mmio_map_for_gpu(struct gio_ctx *c)
{
	void *dev = NULL;
	int e;
	if (c->mmio_gpu)
		return c->mmio_gpu > 0 ? 0 : -EOPNOTSUPP;
	c->mmio_gpu = -1;
	pthread_once(&cudart_once, cudart_load);
	if (!cudart.host_alloc) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "%s", cudart_error);
		return -EOPNOTSUPP;
	}
	if (!cudart.host_register || !cudart.host_unregister || !cudart.host_get_device_pointer) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "libcudart.so lacks cudaHostRegister");
		return -EOPNOTSUPP;
	}
	/* cudaHostRegisterPortable (1) | cudaHostRegisterMapped (2) | cudaHostRegisterIoMemory (4). */
	e = cudart.host_register(c->be.bar, c->be.bar_len, 1u | 2u | 4u);
	if (e) {
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "cudaHostRegister(BAR0, IoMemory): %s", cuda_err(e));
		return -EOPNOTSUPP;
	}
	e = cudart.host_get_device_pointer(&dev, c->be.bar, 0);
	if (e || dev != c->be.bar) {
		(void)cudart.host_unregister(c->be.bar);
		snprintf(c->mmio_gpu_why, sizeof(c->mmio_gpu_why), "the GPU maps BAR0 at another address (%p, not %p)", dev,
			 c->be.bar);
		return -EOPNOTSUPP;
	}
	c->mmio_gpu = 1;
	return 0;
}

static int bar_map_for_gpu(struct gio_ctx *c)
{
	void *dev = NULL;
	int e;
	if (c->bar_mapped || !c->bar)
		return 0;
	if (!cudart.host_register || !cudart.host_unregister || !cudart.host_get_device_pointer)
		return gio__fail(-ENODEV, "giouring: libcudart.so lacks cudaHostRegister/cudaHostGetDevicePointer");
	/* cudaHostRegisterPortable (1) | cudaHostRegisterMapped (2). */
	e = cudart.host_register(c->bar, (sizeof(*c->bar) + 4095) & ~(size_t)4095, 1u | 2u);
	if (e)
		return gio__fail(-ENODEV, "giouring: cannot map the target's doorbells for the GPU: cudaHostRegister: %s",
				 cuda_err(e));
	e = cudart.host_get_device_pointer(&dev, c->bar, 0);
	if (e || dev != (void *)c->bar) {
		(void)cudart.host_unregister(c->bar);
		return gio__fail(-EOPNOTSUPP, "giouring: the GPU maps the target's doorbells at another address (%p, not %p): "
				 "GPU producers need unified addressing", dev, (void *)c->bar);
	}
	c->bar_mapped = 1;
	return 0;
}

int gio_ctx_qp_create(struct gio_ctx *c, uint32_t depth, struct gio_qp **out)
{
	return gio_ctx_qp_create_ex(c, depth, 0, out);
}

int gio_ctx_qp_create_ex(struct gio_ctx *c, uint32_t depth, uint32_t flags, struct gio_qp **out)
{
	struct qp_mem *m;
	struct gio_sqe sqe;
	uint32_t dw0, qid;
	int rc;
	if (!c || !out)
		return gio__fail(-EINVAL, "giouring: gio_ctx_qp_create: NULL argument");
	if (flags & ~(GIO_CTX_QP_PINNED | GIO_CTX_QP_DB_PROXY | GIO_CTX_QP_DB_DIRECT | GIO_CTX_QP_HBM))
		return gio__fail(-EINVAL, "giouring: gio_ctx_qp_create_ex: unknown flags 0x%x", flags);
	if ((flags & GIO_CTX_QP_HBM) && !c->be.mmio)
		return gio__fail(-EOPNOTSUPP, "giouring: GIO_CTX_QP_HBM: the CPU executor cannot read rings in GPU memory; the "
				 "GPU-executed target serves them (gio_gpu_target_open() with rings=hbm, giouring/target/gpu_target.cuh)");
	if (flags & GIO_CTX_QP_HBM) {
		const char *why = no_fd_mapping(c);
		if (why)
			return gio__fail(-EOPNOTSUPP, "giouring: GIO_CTX_QP_HBM: the controller reaches GPU memory only through "
					 "a dma-buf imported with iommufd, but %s", why);
	}
	if ((flags & GIO_CTX_QP_DB_PROXY) && (flags & GIO_CTX_QP_DB_DIRECT))
		return gio__fail(-EINVAL, "giouring: GIO_CTX_QP_DB_PROXY and GIO_CTX_QP_DB_DIRECT: choose one");
	if ((flags & (GIO_CTX_QP_DB_PROXY | GIO_CTX_QP_DB_DIRECT)) && !c->be.mmio)
		return gio__fail(-EOPNOTSUPP,
				 "giouring: GIO_CTX_QP_DB_%s: this target's doorbells are memory already (no MMIO doorbell)",
				 (flags & GIO_CTX_QP_DB_PROXY) ? "PROXY" : "DIRECT");
	if (depth < 2 || (depth & (depth - 1)) || depth > c->info.max_queue_entries)
		return gio__fail(-EINVAL, "giouring: queue depth %u: a power of two from 2 to %u", depth, c->info.max_queue_entries);
	pthread_mutex_lock(&c->lock);
	if (c->nqps >= c->info.io_queues) {
		pthread_mutex_unlock(&c->lock);
		return gio__fail(-EBUSY, "giouring: all %u granted I/O queue pairs are in use", c->info.io_queues);
	}
	qid = c->nqps + 1;
	m = calloc(1, sizeof(*m));
	if (!m) {
		pthread_mutex_unlock(&c->lock);
		return gio__fail(-ENOMEM, "giouring: no memory for a queue pair");
	}
	if (flags & (GIO_CTX_QP_PINNED | GIO_CTX_QP_HBM)) {
		const size_t sq_bytes = (depth * sizeof(struct gio_sqe) + 4095) & ~(size_t)4095;
		const size_t cq_bytes = (depth * sizeof(struct gio_cqe) + 4095) & ~(size_t)4095;
		const size_t slot_bytes = depth * sizeof(struct gio_cmd_slot) + 2 * sizeof(uint32_t);
		const int hbm = (flags & GIO_CTX_QP_HBM) != 0;
		m->pinned = 1;
		/* One allocation, aligned here: queues must start on 4 KiB (Create I/O SQ/CQ), and
		 * cudaHostAlloc suballocates small sizes below page alignment (seen on the H200: the
		 * second queue pair's CQ was refused). SQ, CQ, then the slots and the two shadow
		 * doorbells of GIO_CTX_QP_DB_PROXY (both written by GPU threads). With GIO_CTX_QP_HBM
		 * the queues are in GPU memory and this holds the slots and shadows alone: the library
		 * initialises the slots and the proxy thread reads the shadows, from the CPU. */
		m->pinned_base = pinned_alloc((hbm ? 0 : sq_bytes + cq_bytes) + slot_bytes + 4095);
		if (m->pinned_base && hbm) {
			m->slots = m->pinned_base;
		} else if (m->pinned_base) {
			m->sq = (void *)(((uintptr_t)m->pinned_base + 4095) & ~(uintptr_t)4095);
			m->cq = (char *)m->sq + sq_bytes;
			m->slots = (char *)m->cq + cq_bytes;
		}
		if (!m->slots) { /* nothing registered yet: give everything back, keep the qid */
			free(m);
			pthread_mutex_unlock(&c->lock);
			return gio__fail(-ENODEV, "giouring: no pinned queue memory: %s",
					 cudart_error[0] ? cudart_error : "cudaHostAlloc failed");
		}
		if (hbm)
			rc = hbm_queues(c, m, sq_bytes, cq_bytes);
		else if (!(rc = register_locked(c, m->sq, sq_bytes, &m->sq_addr)))
			rc = register_locked(c, m->cq, cq_bytes, &m->cq_addr);
		if (!rc && !c->be.mmio)
			rc = bar_map_for_gpu(c);
		if (rc)
			goto fail;
	} else {
		m->sq = alloc_dma(c, depth * sizeof(struct gio_sqe), &m->sq_addr);
		m->cq = m->sq ? alloc_dma(c, depth * sizeof(struct gio_cqe), &m->cq_addr) : NULL;
		m->slots = calloc(depth, sizeof(struct gio_cmd_slot));
	}
	if (!m->sq || !m->cq || !m->slots) {
		rc = m->slots ? -ENOMEM /* alloc_dma said why */
			      : gio__fail(-ENOMEM, "giouring: no memory for a queue pair of depth %u", depth);
		goto fail;
	}
	/* GPU producers on a real controller: direct doorbells where the GPU may write BAR0, else
	 * (unless direct was demanded) the proxy thread, with a notice saying why. */
	if (m->pinned && c->be.mmio && !(flags & GIO_CTX_QP_DB_PROXY) && mmio_map_for_gpu(c)) {
		if (flags & GIO_CTX_QP_DB_DIRECT) {
			rc = gio__fail(-EOPNOTSUPP, "giouring: GIO_CTX_QP_DB_DIRECT: GPU threads cannot write the doorbells: %s",
				       c->mmio_gpu_why);
			goto fail;
		}
		if (!c->proxy_noticed) {
			fprintf(stderr, "giouring: notice: direct GPU doorbells refused (%s); using the doorbell proxy thread\n",
				c->mmio_gpu_why);
			c->proxy_noticed = 1;
		}
		flags |= GIO_CTX_QP_DB_PROXY;
	}
	m->hw_db[0] = doorbell(c, gio_sq_doorbell_offset(c->cap, (uint16_t)qid));
	m->hw_db[1] = doorbell(c, gio_cq_doorbell_offset(c->cap, (uint16_t)qid));
	m->proxied = (flags & GIO_CTX_QP_DB_PROXY) != 0;
	m->shadow = m->pinned ? (uint32_t *)((struct gio_cmd_slot *)m->slots + depth) : m->shadow_host;
	if (m->proxied && (rc = proxy_start(c)))
		goto fail;
	/* A proxied ring writes its shadow words with release stores, like the software target's. */
	rc = m->proxied ? gio_qp_init(&m->qp, m->sq, depth, m->cq, depth, m->slots, (uint16_t)qid, &m->shadow[0],
				      &m->shadow[1], 0)
			: gio_qp_init(&m->qp, m->sq, depth, m->cq, depth, m->slots, (uint16_t)qid, m->hw_db[0], m->hw_db[1],
				      qp_flags(c));
	if (rc)
		goto fail;
	if ((rc = gio_prep_create_cq(&sqe, (uint16_t)qid, depth, m->cq_addr, 0, 0)) ||
	    (rc = gio_prep_create_sq(&sqe, (uint16_t)qid, depth, (uint16_t)qid, m->sq_addr))) {
		rc = gio__fail(rc, "giouring: queue memory at bus address 0x%" PRIx64 "/0x%" PRIx64 " is not 4 KiB aligned",
			       m->cq_addr, m->sq_addr);
		goto fail;
	}
	if ((rc = gio_prep_create_cq(&sqe, (uint16_t)qid, depth, m->cq_addr, 0, 0)) || (rc = admin(c, &sqe, &dw0)))
		goto fail;
	if ((rc = gio_prep_create_sq(&sqe, (uint16_t)qid, depth, (uint16_t)qid, m->sq_addr)) ||
	    (rc = admin(c, &sqe, &dw0))) {
		/* The CQ exists on the controller: remove it so the qid is not left half made. */
		if (gio_prep_delete_cq(&sqe, (uint16_t)qid) == 0)
			(void)gio_qp_submit_wait(&c->admin, &sqe, ADMIN_TIMEOUT_NS, NULL, NULL);
		goto fail;
	}
	m->live = 1;
	c->qps[qid] = m;
	gio_store_release(&c->nqps, qid); /* pairs with the proxy's acquire: the entry is complete */
	pthread_mutex_unlock(&c->lock);
	*out = &m->qp;
	return 0;
fail:
	/* Queue memory stays registered (regions are never removed); it is freed at close. */
	m->proxied = 0;
	c->qps[qid] = m;
	gio_store_release(&c->nqps, qid);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int gio_ctx_close(struct gio_ctx *c)
{
	int rc = 0;
	uint32_t i;
	if (!c)
		return 0;
	/* No doorbell writes to queues being deleted. */
	if (c->proxy_started) {
		gio_store_release(&c->proxy_stop, 1);
		pthread_join(c->proxy, NULL);
	}
	if (c->enabled) {
		const uint64_t to_ns = cap_timeout_ns(c->cap);
		/* Delete the I/O queues first (SQ before its CQ), as the specification asks of a host
		 * before shutdown; best effort with a short deadline, since the shutdown that follows
		 * stops the controller either way and its status is what close reports. */
		for (i = MAX_QPS; i >= 1; i--) {
			struct gio_sqe sqe;
			struct qp_mem *m = c->qps[i];
			if (!m || !m->live)
				continue;
			if (gio_prep_delete_sq(&sqe, (uint16_t)i) ||
			    gio_qp_submit_wait(&c->admin, &sqe, CLOSE_ADMIN_TIMEOUT_NS, NULL, NULL) == -ETIME)
				break;
			if (gio_prep_delete_cq(&sqe, (uint16_t)i) ||
			    gio_qp_submit_wait(&c->admin, &sqe, CLOSE_ADMIN_TIMEOUT_NS, NULL, NULL) == -ETIME)
				break;
		}
		reg_write(c, GIO_REG_CC, reg_read(c, GIO_REG_CC) | GIO_SET(CC_SHN, GIO_CC_SHN_NORMAL));
		rc = wait_csts(c, GIO_CSTS_SHST_MASK << GIO_CSTS_SHST_SHIFT,
			       GIO_CSTS_SHST_COMPLETE << GIO_CSTS_SHST_SHIFT, to_ns, "shutdown complete (CSTS.SHST)");
	}
	if (c->started)
		gio__exec_stop(&c->exec);
	/* Unmaps DMA (unpinning) before the memory below is freed. */
	if (c->mmio_gpu > 0) /* before BAR0 is unmapped */
		(void)cudart.host_unregister(c->be.bar);
	if (c->be.close)
		c->be.close(c->be.priv);
	if (c->exec.kind == GIO__BACKING_FILE && c->exec.fd >= 0) {
		if (fsync(c->exec.fd) && rc == 0)
			rc = gio__fail(-errno, "giouring: fsync %s: %s", c->path, strerror(errno));
	}
	if (c->exec.fd >= 0)
		close(c->exec.fd);
	if (c->remove_file) {
		unlink(c->path);
		rmdir(c->tmpdir);
	}
	for (i = 1; i <= MAX_QPS; i++) {
		struct qp_mem *m = c->qps[i];
		if (!m)
			continue;
		if (m->pinned) {
			if (m->pinned_base)
				cudart.free_host(m->pinned_base);
			if (m->hbm_base)
				(void)cudart.dev_free(m->hbm_base);
		} else {
			free(m->sq);
			free(m->cq);
			free(m->slots);
		}
		free(m);
	}
	free(c->admin_sq);
	free(c->admin_cq);
	free(c->admin_slots);
	free(c->idbuf);
	free(c->exec.mem);
	if (c->bar_mapped)
		(void)cudart.host_unregister(c->bar);
	free(c->bar);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return rc;
}
