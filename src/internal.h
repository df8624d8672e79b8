/* Host library internals shared by its folders; not installed, not part of the API. */
#ifndef GIOURING_SRC_INTERNAL_H
#define GIOURING_SRC_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <giouring/config.h>

GIO_EXTERN_C_BEGIN

/* Sets the calling thread's error message (gio_last_error()) and returns rc. */
int gio__fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's error message: every public entry point of the host library
 * calls it first, so that gio_last_error() only ever names the failure of the latest call. */
void gio__clear_error(void);

struct gio_qp;

/* The message of a command's outcome on a queue pair (gio_qp_put() or gio_qp_wait()'s rc, the
 * status it got): -EIO names the opcode and the NVMe status, -ETIME the ring's state, -EFAULT the
 * address a checked queue pair refused. Returns rc (0 sets nothing). */
int gio__qp_result_fail(const struct gio_qp *qp, uint8_t opc, int rc, uint16_t st);

/* Keeps p allocated for good, reachable (src/kept.c): memory a device or the kernel may still
 * write after its owner gave up on it, which must never be freed nor reused. Any thread. */
void gio__keep(void *p);

/* How a context reaches its controller: the registers and the bus addresses of memory. The
 * bring-up, admin and queue code in ctx/ is the same for every backend.
 * - software target: BAR0 is ordinary memory in this process (atomic accesses), a bus address is
 *   the virtual address (dma_map is NULL);
 * - VFIO (vfio/): BAR0 is an MMIO mapping (32-bit volatile accesses, 64-bit registers as two,
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
	/* Undoes one dma_map(ptr, len) (fd 0) or dma_map_fd(..., len) (fd 1) that returned iova:
	 * the IOMMU mapping goes, then its IOVA range is free for later maps. 0 or -errno with a
	 * message (the mapping then stays). NULL where dma_map is. */
	int (*dma_unmap)(void *priv, void *ptr, size_t len, int fd, uint64_t iova);
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

struct gio_sec_ctrl;
struct gio_sec_ctrl_list;

/* An nvme-pci function as SR-IOV sees it (vfio/sriov.c). */
struct gio__sriov_vf {
	int is_vf;          /* an SR-IOV virtual function (sysfs physfn) */
	char pf[64];        /* its physical function's BDF */
	uint16_t vfn;       /* its VF number, from 1; 0 when no virtfn link of the PF names it */
	int entry;          /* the PF's Secondary Controller Entry was read: scid to online below */
	uint16_t scid;      /* its controller ID */
	uint16_t nvq, nvi;  /* flexible queues (admin queue included) and interrupts assigned */
	uint8_t online;
	char why[192];      /* is_vf without entry: why the entry could not be read */
};

/* Fills *vf for the PCI function bdf (a PF or a plain function: is_vf 0); never fails: what it
 * could not learn, vf->why says. _at reads another sysfs devices folder than
 * /sys/bus/pci/devices (tests). */
void gio__sriov_probe(const char *bdf, struct gio__sriov_vf *vf);
void gio__sriov_probe_at(const char *root, const char *bdf, struct gio__sriov_vf *vf);
/* 1 and *out: the entry of VF number vfn in one page of the list; else 0. */
int gio__sriov_find(const struct gio_sec_ctrl_list *list, uint16_t vfn, struct gio_sec_ctrl *out);
/* -EIO with a message naming the missing step when vf is a VF known to be offline or without
 * enough flexible resources (at least 2 queues and 1 interrupt); else 0. */
int gio__sriov_unready(const char *bdf, const struct gio__sriov_vf *vf);
/* "SR-IOV virtual function V of PF, secondary controller S" (or why S is unknown); "" for a PF. */
void gio__sriov_describe(const struct gio__sriov_vf *vf, char *out, size_t len);

/* A dma-buf of GPU memory [ptr, ptr + len) from the CUDA driver (cuMemGetHandleForAddressRange,
 * BAR1 mapping where the driver knows the flag): 0 and *fd, or -EINVAL (misaligned, not GPU
 * memory) / -EOPNOTSUPP (no driver, no export) with a message (cuda/dmabuf.c). */
int gio__gpu_dmabuf(void *ptr, size_t len, int *fd);

GIO_EXTERN_C_END

#endif
