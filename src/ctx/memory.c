/* Memory of a context: DMA registration of host memory, files and dma-bufs, and the providers
 * that turn GPU memory into something a controller reaches (a dma-buf imported through iommufd
 * for nvme-pci; the CPU executor's copy engine for the software target). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../cuda/cudart.h"
#include "../cuda/devcopy.h"
#include "ctx.h"

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
 * itself (fd < 0), or for bytes [off, off + len) of the file or dma-buf fd. `lib`: memory the
 * library owns (queues, Identify data), which gio_ctx_unregister() refuses. c->lock held. */
int gio__add_region_locked(struct gio_ctx *c, void *ptr, size_t len, int fd, uint64_t off, int lib, uint64_t *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t n = c->map.count;
	int rc;
	if (!ptr || len == 0 || a + len < a)
		return gio__fail(-EINVAL, "giouring: cannot register %p + %zu: empty or wrapping", ptr, len);
	if ((rc = overlap_check(c, ptr, len)))
		return rc;
	if (n == GIO__MAX_REGIONS)
		return gio__fail(-ENOSPC, "giouring: %u regions registered already", GIO__MAX_REGIONS);
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
	c->region_meta[n].lib = (uint8_t)(lib != 0);
	c->region_meta[n].from_fd = (uint8_t)(fd >= 0);
	gio_store_release(&c->map.count, n + 1); /* pairs with the acquire in gio_dma_map_find */
	gio__check_sync_locked(c);
	if (addr)
		*addr = a;
	return 0;
}

int gio__register_locked(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	return gio__add_region_locked(c, ptr, len, -1, 0, 1, addr);
}

/* Removes entry i of a table (n entries) by moving the last into its place; the software
 * target's executor is quiesced (or there is none), so no reader walks the table meanwhile. */
static void table_remove(struct gio_dma_region *t, struct gio__region_meta *meta, struct gio_dma_map *map, uint32_t i)
{
	const uint32_t n = map->count;
	t[i] = t[n - 1];
	if (meta)
		meta[i] = meta[n - 1];
	gio_store_release(&map->count, n - 1);
}

int gio__remove_region_locked(struct gio_ctx *c, const void *ptr, int lib_ok, uint64_t timeout_ns)
{
	const uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t i, k;
	int rc;
	for (k = 0; k < 2; k++) {
		struct gio_dma_region *t = k ? c->dev_regions : c->regions;
		struct gio_dma_map *map = k ? &c->dev_map : &c->map;
		for (i = 0; i < map->count && t[i].ptr != ptr; i++)
			;
		if (i == map->count)
			continue;
		if (!k && c->region_meta[i].lib && !lib_ok)
			return gio__fail(-EBUSY, "giouring: gio_ctx_unregister: %p is queue or Identify memory of the library "
					 "(gio_ctx_qp_destroy() releases a queue pair's)", ptr);
		/* The IOMMU mapping first: while it fails the region stays registered, whole. */
		if (!k && c->be.dma_unmap &&
		    (rc = c->be.dma_unmap(c->be.priv, t[i].ptr, (size_t)t[i].len, c->region_meta[i].from_fd, t[i].addr)))
			return rc;
		/* The software target reads the tables while it serves: out of them only with every
		 * executor thread between passes, so no command holds a pointer into the region. */
		if (c->started && (rc = gio__exec_quiesce(&c->exec, timeout_ns)))
			return rc;
		table_remove(t, k ? NULL : c->region_meta, map, i);
		gio__check_sync_locked(c);
		if (c->started)
			gio__exec_resume(&c->exec);
		return 0;
	}
	for (k = 0; k < 2; k++) {
		const struct gio_dma_region *t = k ? c->dev_regions : c->regions;
		const uint32_t n = k ? c->dev_map.count : c->map.count;
		for (i = 0; i < n; i++) {
			const uint64_t p = (uint64_t)(uintptr_t)t[i].ptr;
			if (a > p && a - p < t[i].len)
				return gio__fail(-ENOENT, "giouring: gio_ctx_unregister: %p lies inside the region registered "
						 "at %p + %" PRIu64 ": unregister it by its start", ptr, t[i].ptr, t[i].len);
		}
	}
	return gio__fail(-ENOENT, "giouring: gio_ctx_unregister: no region registered at %p", ptr);
}

int gio_ctx_unregister(struct gio_ctx *c, const void *ptr)
{
	int rc;
	gio__clear_error();
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_unregister: no context");
	if (!ptr)
		return gio__fail(-ENOENT, "giouring: gio_ctx_unregister: no region registered at NULL");
	pthread_mutex_lock(&c->lock);
	rc = gio__remove_region_locked(c, ptr, 0, GIO__QUIESCE_TIMEOUT_NS);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Why this context cannot map files and dma-bufs, or NULL where it can. */
const char *gio__no_fd_mapping(const struct gio_ctx *c)
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
	gio__clear_error();
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_register_fd: no context");
	if ((why = gio__no_fd_mapping(c)))
		return gio__fail(-EOPNOTSUPP, "giouring: gio_ctx_register_fd: %s", why);
	if (fd < 0)
		return gio__fail(-EBADF, "giouring: gio_ctx_register_fd: fd %d", fd);
	pthread_mutex_lock(&c->lock);
	rc = gio__add_region_locked(c, ptr, len, fd, offset, 0, addr);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int gio_ctx_register(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	int rc;
	gio__clear_error();
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_register: no context");
	pthread_mutex_lock(&c->lock);
	rc = gio__add_region_locked(c, ptr, len, -1, 0, 0, addr);
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
static int hbm_provider(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	const char *why = gio__no_fd_mapping(c);
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
	const struct gio__cudart *rt = gio__cudart();
	int e;
	if (!rt)
		return gio__fail(-ENODEV, "giouring: device memory at %p + %zu: %s", ptr, len, gio__cudart_why());
	if (!rt->memcpy_async || !rt->stream_create || !rt->stream_query || !rt->stream_destroy || !rt->pointer_attributes ||
	    !rt->set_device)
		return gio__fail(-ENODEV, "giouring: device memory: libcudart.so lacks cudaMemcpyAsync, cudaStreamCreateWithFlags, "
				 "cudaStreamQuery, cudaStreamDestroy, cudaPointerGetAttributes or cudaSetDevice");
	memset(&attr, 0, sizeof(attr));
	e = rt->pointer_attributes(&attr, ptr);
	if (e)
		return gio__cuda_fail(e, "device memory at %p: cudaPointerGetAttributes", ptr);
	if (attr.a.type != GIO__CUDA_MEMORY_TYPE_DEVICE)
		return gio__fail(-EINVAL, "giouring: %p is not GPU memory (cudaPointerGetAttributes: type %d); register host "
				 "memory with gio_ctx_register()", ptr, attr.a.type);
	if (c->dev_map.count && attr.a.device != c->dev_ordinal)
		return gio__fail(-EINVAL, "giouring: %p is on GPU %d, earlier device regions on GPU %d: one GPU per context "
				 "in this release", ptr, attr.a.device, c->dev_ordinal);
	c->dev_ordinal = attr.a.device;
	gio__devcopy_cuda(&c->cuda_dc, &c->dev_ordinal, GIO__DEVCOPY_TIMEOUT_NS);
	c->exec.dc = &c->cuda_dc;
	return 0;
}

int gio_ctx_register_device(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr)
{
	const uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t n;
	int rc;
	gio__clear_error();
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
		const struct gio__cudart *rt = c->dc_injected ? NULL : gio__cudart();
		int cur = -1;
		if (rt && rt->get_device && rt->get_device(&cur) == 0 && cur != c->dev_ordinal)
			(void)rt->set_device(c->dev_ordinal);
		else
			cur = -1;
		rc = gio__exec_dev_prepare(&c->exec);
		if (cur >= 0)
			(void)rt->set_device(cur);
		if (rc)
			goto out;
	}
	if ((rc = overlap_check(c, ptr, len)))
		goto out;
	if (n == GIO__MAX_REGIONS) {
		rc = gio__fail(-ENOSPC, "giouring: %u device regions registered already", GIO__MAX_REGIONS);
		goto out;
	}
	c->dev_regions[n].addr = a; /* the bus address is the device pointer */
	c->dev_regions[n].len = len;
	c->dev_regions[n].ptr = ptr;
	/* Pairs with the acquire in gio_dma_map_find: the region and exec.dc before the count. */
	gio_store_release(&c->dev_map.count, n + 1);
	gio__check_sync_locked(c);
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
	gio__clear_error();
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
void *gio__alloc_dma(struct gio_ctx *c, size_t len, uint64_t *addr)
{
	void *p = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);
	if (!p) {
		gio__fail(-ENOMEM, "giouring: no memory for %zu bytes of queue or Identify memory", len);
		return NULL;
	}
	memset(p, 0, len);
	if (gio__register_locked(c, p, (len + 4095) & ~(size_t)4095, addr)) {
		free(p);
		return NULL;
	}
	return p;
}

