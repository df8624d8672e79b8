/* The nvme-pci backend: a PCI NVMe controller bound to vfio-pci, driven from user space.
 * VFIO legacy container + group with the TYPE1v2 IOMMU; BAR0 mapped for registers and
 * doorbells; DMA memory pinned and mapped with VFIO_IOMMU_MAP_DMA at IOVAs from the IOMMU's
 * usable ranges (a virtual Intel IOMMU has 39 bits, so IOVA != virtual address).
 * iommufd (/dev/iommu) is not used yet: the legacy container works on every kernel that has VFIO,
 * and on kernels with iommufd's compatibility mode /dev/vfio/vfio is iommufd underneath. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "internal.h"
#include "iova.h"

/* IOVAs start at 1 MiB: a zero or tiny bus address in a command is a bug that should fault. */
#define IOVA_FLOOR (1ull << 20)

struct vfio {
	int container, group, device;
	void *bar;
	size_t bar_len;
	pthread_mutex_t lock; /* the IOVA space */
	struct gio__iova_space iova;
	uint64_t mapped_bytes;
};

static int valid_bdf(const char *s)
{
	unsigned dom, bus, dev, fn;
	char tail;
	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) == 4 && dev < 32 &&
	       fn < 8;
}

/* The usable IOVA ranges the IOMMU reports (the MSI window and reserved regions excluded). */
static int iommu_ranges(struct vfio *v)
{
	struct vfio_iommu_type1_info probe = {.argsz = sizeof(probe)};
	struct gio__iova_range r[16];
	uint32_t n = 0;
	char *buf;
	if (ioctl(v->container, VFIO_IOMMU_GET_INFO, &probe))
		return gio__fail(-errno, "giouring: VFIO_IOMMU_GET_INFO: %s", strerror(errno));
	buf = calloc(1, probe.argsz > sizeof(probe) ? probe.argsz : sizeof(probe));
	if (!buf)
		return gio__fail(-ENOMEM, "giouring: no memory for the IOMMU info");
	((struct vfio_iommu_type1_info *)buf)->argsz = probe.argsz;
	if (ioctl(v->container, VFIO_IOMMU_GET_INFO, buf)) {
		int rc = -errno;
		free(buf);
		return gio__fail(rc, "giouring: VFIO_IOMMU_GET_INFO: %s", strerror(-rc));
	}
	{
		const struct vfio_iommu_type1_info *info = (const void *)buf;
		uint32_t off = (info->flags & VFIO_IOMMU_INFO_CAPS) ? info->cap_offset : 0;
		while (off && off + sizeof(struct vfio_info_cap_header) <= info->argsz) {
			const struct vfio_info_cap_header *h = (const void *)(buf + off);
			if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
				const struct vfio_iommu_type1_info_cap_iova_range *c = (const void *)h;
				uint32_t i;
				for (i = 0; i < c->nr_iovas && n < 16; i++, n++) {
					r[n].start = c->iova_ranges[i].start;
					r[n].end = c->iova_ranges[i].end;
				}
			}
			off = h->next;
		}
	}
	free(buf);
	if (n == 0) { /* an old kernel without the capability: assume 39 bits, the smallest in use */
		r[0].start = 0;
		r[0].end = (1ull << 39) - 1;
		n = 1;
	}
	gio__iova_init(&v->iova, r, n, IOVA_FLOOR);
	return 0;
}

static int dma_map(void *priv, void *ptr, size_t len, uint64_t *iova)
{
	struct vfio *v = priv;
	const long pg = sysconf(_SC_PAGESIZE);
	const uintptr_t start = (uintptr_t)ptr & ~(uintptr_t)(pg - 1);
	const uint64_t span = (((uintptr_t)ptr + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1)) - start;
	struct vfio_iommu_type1_dma_map m = {.argsz = sizeof(m)};
	uint64_t base;
	int rc;
	pthread_mutex_lock(&v->lock);
	/* Whole pages: the IOMMU maps pages. Memory sharing a page with another registration is
	 * mapped twice at two IOVAs, which VFIO allows. */
	rc = gio__iova_alloc(&v->iova, span, (uint64_t)pg, &base);
	pthread_mutex_unlock(&v->lock);
	if (rc)
		return gio__fail(-ENOSPC, "giouring: no IOVA space left for %" PRIu64 " bytes (%" PRIu64 " mapped)", span,
				 v->mapped_bytes);
	m.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	m.vaddr = start;
	m.iova = base;
	m.size = span;
	if (ioctl(v->container, VFIO_IOMMU_MAP_DMA, &m)) {
		rc = -errno;
		return gio__fail(rc, "giouring: VFIO_IOMMU_MAP_DMA of %p + %zu at IOVA 0x%" PRIx64 ": %s%s", ptr, len, base,
				 strerror(-rc), rc == -ENOMEM ? " (the locked-memory limit, ulimit -l, may be too low)" : "");
	}
	__atomic_fetch_add(&v->mapped_bytes, span, __ATOMIC_RELAXED);
	*iova = base + ((uintptr_t)ptr - start);
	return 0;
}

static void vfio_close(void *priv)
{
	struct vfio *v = priv;
	if (!v)
		return;
	if (v->bar && v->bar != MAP_FAILED)
		munmap(v->bar, v->bar_len);
	/* Closing the container removes every DMA mapping and unpins the memory. */
	if (v->device >= 0)
		close(v->device);
	if (v->group >= 0)
		close(v->group);
	if (v->container >= 0)
		close(v->container);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

/* Memory space and bus mastering on in the PCI command register: the controller's DMA and
 * BAR0 decoding need both (vfio-pci leaves bus mastering off). */
static int enable_pci(struct vfio *v)
{
	struct vfio_region_info cfg = {.argsz = sizeof(cfg), .index = VFIO_PCI_CONFIG_REGION_INDEX};
	uint16_t cmd;
	if (ioctl(v->device, VFIO_DEVICE_GET_REGION_INFO, &cfg))
		return gio__fail(-errno, "giouring: VFIO config space info: %s", strerror(errno));
	if (pread(v->device, &cmd, 2, (off_t)(cfg.offset + PCI_COMMAND)) != 2)
		return gio__fail(-EIO, "giouring: cannot read the PCI command register");
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(v->device, &cmd, 2, (off_t)(cfg.offset + PCI_COMMAND)) != 2)
		return gio__fail(-EIO, "giouring: cannot write the PCI command register");
	return 0;
}

int gio__vfio_open(const char *bdf, struct gio__backend *be)
{
	struct vfio_group_status gs = {.argsz = sizeof(gs)};
	struct vfio_region_info bar = {.argsz = sizeof(bar), .index = VFIO_PCI_BAR0_REGION_INDEX};
	char path[PATH_MAX], link[PATH_MAX];
	struct vfio *v;
	ssize_t n;
	int rc;

	if (!valid_bdf(bdf))
		return gio__fail(-EINVAL, "giouring: nvme-pci://%s: want a PCI address dddd:bb:dd.f (e.g. 0000:01:00.0)", bdf);
	v = calloc(1, sizeof(*v));
	if (!v)
		return gio__fail(-ENOMEM, "giouring: no memory for VFIO state");
	v->container = v->group = v->device = -1;
	pthread_mutex_init(&v->lock, NULL);

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		rc = gio__fail(errno == ENOENT ? -ENODEV : -errno,
			       "giouring: %s: %s (no such PCI device, or no IOMMU: boot with intel_iommu=on or amd_iommu=on)",
			       path, strerror(errno));
		goto fail;
	}
	link[n] = 0;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bdf);
	{
		char drv[PATH_MAX];
		ssize_t d = readlink(path, drv, sizeof(drv) - 1);
		const char *name = "none";
		if (d > 0) {
			drv[d] = 0;
			name = basename(drv);
		}
		if (strcmp(name, "vfio-pci")) {
			rc = gio__fail(-EBUSY,
				       "giouring: %s is bound to %s, not vfio-pci (see giouring-info for the steps to hand it over)",
				       bdf, name);
			goto fail;
		}
	}
	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (v->container < 0) {
		rc = gio__fail(-errno, "giouring: /dev/vfio/vfio: %s (is the vfio module loaded?)", strerror(errno));
		goto fail;
	}
	if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1) {
		rc = gio__fail(-EOPNOTSUPP, "giouring: VFIO API %d without the TYPE1v2 IOMMU", VFIO_API_VERSION);
		goto fail;
	}
	snprintf(path, sizeof(path), "/dev/vfio/%s", basename(link));
	v->group = open(path, O_RDWR | O_CLOEXEC);
	if (v->group < 0) {
		rc = gio__fail(-errno, "giouring: %s: %s", path, strerror(errno));
		goto fail;
	}
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &gs) || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		rc = gio__fail(-EBUSY, "giouring: %s is not viable: every device of the IOMMU group must be bound to vfio-pci",
			       path);
		goto fail;
	}
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container)) {
		rc = gio__fail(-errno, "giouring: VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
		goto fail;
	}
	if (ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)) {
		rc = gio__fail(-errno, "giouring: VFIO_SET_IOMMU (TYPE1v2): %s%s", strerror(errno),
			       errno == EPERM ? " (interrupt remapping off? a virtual Intel IOMMU needs intremap=on)" : "");
		goto fail;
	}
	if ((rc = iommu_ranges(v)))
		goto fail;
	v->device = ioctl(v->group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	if (v->device < 0) {
		rc = gio__fail(-errno, "giouring: VFIO_GROUP_GET_DEVICE_FD %s: %s", bdf, strerror(errno));
		goto fail;
	}
	if (ioctl(v->device, VFIO_DEVICE_GET_REGION_INFO, &bar) || !(bar.flags & VFIO_REGION_INFO_FLAG_MMAP) ||
	    bar.size < 0x2000) {
		rc = gio__fail(-ENODEV, "giouring: %s: BAR0 cannot be mapped (size %" PRIu64 ", flags 0x%x)", bdf,
			       (uint64_t)bar.size, bar.flags);
		goto fail;
	}
	v->bar_len = bar.size;
	v->bar = mmap(NULL, v->bar_len, PROT_READ | PROT_WRITE, MAP_SHARED, v->device, (off_t)bar.offset);
	if (v->bar == MAP_FAILED) {
		rc = gio__fail(-errno, "giouring: mmap of BAR0: %s", strerror(errno));
		v->bar = NULL;
		goto fail;
	}
	if ((rc = enable_pci(v)))
		goto fail;
	memset(be, 0, sizeof(*be));
	be->bar = v->bar;
	be->bar_len = v->bar_len;
	be->mmio = 1;
	be->priv = v;
	be->dma_map = dma_map;
	be->close = vfio_close;
	return 0;
fail:
	vfio_close(v);
	return rc;
}
