/* Host library internals shared by its source files; not installed, not part of the API. */
#ifndef GIOURING_SRC_INTERNAL_H
#define GIOURING_SRC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <giouring/host/ctx.h>
#include <giouring/target/core.h>

/* Sets the calling thread's error message (gio_last_error) and returns rc. */
int gio__fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

enum gio__backing { GIO__BACKING_MEM, GIO__BACKING_FILE };

#include "devcopy.h"

#define GIO__EXEC_MAX_THREADS 16

/* The CPU executor: threads that run the software target over a memory or file backing store. */
struct gio__exec {
	struct gio_tgt *tgt;
	enum gio__backing kind;
	unsigned char *mem; /* GIO__BACKING_MEM */
	int fd;             /* GIO__BACKING_FILE: the file, opened once */
	int direct;         /* fd is O_DIRECT: offsets and lengths are whole blocks */
	uint32_t mem_align; /* O_DIRECT: memory alignment it needs (address and length) */
	int nthreads;
	uint32_t idle_us; /* longest sleep of an idle thread between polls (URI idle_us, default 200) */
	pthread_t threads[GIO__EXEC_MAX_THREADS];
	uint32_t stop;
	pthread_rwlock_t quiesce; /* I/O serving holds it shared; CC changes and admin, exclusive */
	pthread_mutex_t fault_lock;
	struct gio_fault fault; /* under fault_lock */
	uint64_t io_seen;       /* I/O commands fetched, under fault_lock */
	uint64_t stall_until_ns; /* atomic */
	void *workers_mem;       /* the threads' state */
	/* Copy engine for segments in device memory (tgt->copy_map); set before the first device
	 * region is published (the release of copy_map->count orders it for the workers). */
	const struct gio__devcopy *dc;
	int dev_prepared; /* gio__exec_dev_prepare() done */
};

int gio__exec_start(struct gio__exec *e, int nthreads);
void gio__exec_stop(struct gio__exec *e);
/* Copy streams and pinned staging for device segments, made in the calling thread before the
 * first device region is published (see executor.c); 0 or -errno with a message. */
int gio__exec_dev_prepare(struct gio__exec *e);

/* How a context reaches its controller: the registers and the bus addresses of memory. The
 * bring-up, admin and queue code in ctx.c is the same for every backend.
 * - software target: BAR0 is ordinary memory in this process (atomic accesses), a bus address is
 *   the virtual address (dma_map is NULL);
 * - VFIO (vfio.c): BAR0 is an MMIO mapping (32-bit volatile accesses, 64-bit registers as two,
 *   low then high), bus addresses are IOVAs mapped through the IOMMU. */
struct gio__backend {
	void *bar;      /* BAR0 */
	size_t bar_len; /* its mapped length */
	int mmio;       /* 1: MMIO registers and doorbells */
	void *priv;
	/* Maps [ptr, ptr + len) for device DMA; *iova receives the bus address of ptr. */
	int (*dma_map)(void *priv, void *ptr, size_t len, uint64_t *iova);
	/* Maps bytes [off, off + len) of a file or dma-buf (page multiples); NULL where the backend
	 * cannot (the software target, VFIO type1). */
	int (*dma_map_fd)(void *priv, int fd, uint64_t off, size_t len, uint64_t *iova);
	const char *iommu; /* "iommufd", "type1", or NULL for the software target */
	void (*close)(void *priv);
};

/* How nvme-pci reaches the IOMMU (URI iommu=): iommufd where /dev/iommu and the device's VFIO
 * cdev exist, else the legacy type1 container; or either one demanded. */
enum { GIO__IOMMU_AUTO, GIO__IOMMU_IOMMUFD, GIO__IOMMU_TYPE1 };

/* Opens the PCI function `bdf` (dddd:bb:dd.f) through VFIO (iommufd or container and group with
 * the TYPE1v2 IOMMU, see GIO__IOMMU_*), BAR0 mapped, bus mastering on. Fills *be; gio__fail()
 * message on error. */
int gio__vfio_open(const char *bdf, int iommu, struct gio__backend *be);

/* A dma-buf of GPU memory [ptr, ptr + len) from the CUDA driver (cuMemGetHandleForAddressRange,
 * BAR1 mapping where the driver knows the flag): 0 and *fd, or -EINVAL (misaligned, not GPU
 * memory) / -EOPNOTSUPP (no driver, no export) with a message. The GPU half of the HBM provider,
 * on its own so that a GPU test can check it where no VFIO device exists. */
int gio__gpu_dmabuf(void *ptr, size_t len, int *fd);

#endif
