/* The nvme-pci backend: a PCI NVMe controller bound to vfio-pci, driven from user space.
 * Two ways to own the device and its IOMMU mappings, chosen per context (URI iommu=):
 * - iommufd: the VFIO device cdev (/dev/vfio/devices/vfioN) bound to /dev/iommu, one IOAS;
 *   memory mapped with IOMMU_IOAS_MAP, files and dma-bufs with IOMMU_IOAS_MAP_FILE (the way in
 *   for peer memory such as a GPU's BAR). Linux 6.6+ built with IOMMUFD and VFIO_DEVICE_CDEV.
 * - type1: the legacy container + group with the TYPE1v2 IOMMU, VFIO_IOMMU_MAP_DMA. Every kernel
 *   with VFIO has it (Debian's kernels have nothing else: they leave IOMMUFD off).
 * Either way BAR0 is mapped for registers and doorbells, and IOVAs come from the IOMMU's usable
 * ranges (a virtual Intel IOMMU has 39 bits, so IOVA != virtual address). */
#define _GNU_SOURCE
#include <dirent.h>
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
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "../internal.h"
#include "iommufd_uapi.h"
#include "iova.h"

/* IOVAs start at 1 MiB: a zero or tiny bus address in a command is a bug that should fault. */
#define IOVA_FLOOR (1ull << 20)

struct vfio {
	int container, group, device; /* type1: container and group; both: the device */
	int iommufd;                  /* iommufd: /dev/iommu, or -1 */
	uint32_t ioas;                /* iommufd: the IO address space the device is attached to */
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

/* The usable IOVA ranges the type1 IOMMU reports (the MSI window and reserved regions excluded). */
static int type1_ranges(struct vfio *v, struct gio__iova_range *r, uint32_t *nr)
{
	struct vfio_iommu_type1_info probe = {.argsz = sizeof(probe)};
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
	*nr = n;
	return 0;
}

/* The IOAS's allowed ranges, which the kernel narrows to what every attached device may use. */
static int iommufd_ranges(struct vfio *v, struct gio__iova_range *r, uint32_t *nr)
{
	struct gio__iommu_iova_range k[16];
	struct gio__iommu_ioas_iova_ranges q = {.size = sizeof(q), .ioas_id = v->ioas, .num_iovas = 16};
	uint32_t i;
	q.allowed_iovas = (uint64_t)(uintptr_t)k;
	/* EMSGSIZE: more than 16 ranges; the first 16 are filled in, which is plenty. */
	if (ioctl(v->iommufd, GIO__IOMMU_IOAS_IOVA_RANGES, &q) && errno != EMSGSIZE)
		return gio__fail(-errno, "giouring: IOMMU_IOAS_IOVA_RANGES: %s", strerror(errno));
	for (i = 0; i < q.num_iovas && i < 16; i++) {
		r[i].start = k[i].start;
		r[i].end = k[i].last;
	}
	*nr = i;
	return 0;
}

static void init_space(struct vfio *v, struct gio__iova_range *r, uint32_t n)
{
	if (n == 0) { /* an old kernel without the capability: assume 39 bits, the smallest in use */
		r[0].start = 0;
		r[0].end = (1ull << 39) - 1;
		n = 1;
	}
	gio__iova_init(&v->iova, r, n, IOVA_FLOOR);
}

/* IOVA space for span bytes, whole pages (the IOMMU maps pages). */
static int iova_reserve(struct vfio *v, uint64_t span, uint64_t *base)
{
	const long pg = sysconf(_SC_PAGESIZE);
	int rc;
	pthread_mutex_lock(&v->lock);
	rc = gio__iova_alloc(&v->iova, span, (uint64_t)pg, base);
	pthread_mutex_unlock(&v->lock);
	if (rc)
		return gio__fail(-ENOSPC, "giouring: no IOVA space left for %" PRIu64 " bytes (%" PRIu64 " mapped)", span,
				 __atomic_load_n(&v->mapped_bytes, __ATOMIC_RELAXED));
	return 0;
}

static int dma_map(void *priv, void *ptr, size_t len, uint64_t *iova)
{
	struct vfio *v = priv;
	const long pg = sysconf(_SC_PAGESIZE);
	const uintptr_t start = (uintptr_t)ptr & ~(uintptr_t)(pg - 1);
	const uint64_t span = (((uintptr_t)ptr + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1)) - start;
	const char *what;
	uint64_t base;
	int rc;
	/* Memory sharing a page with another registration is mapped twice at two IOVAs, which both
	 * IOMMU interfaces allow. */
	if ((rc = iova_reserve(v, span, &base)))
		return rc;
	if (v->iommufd >= 0) {
		struct gio__iommu_ioas_map m = {.size = sizeof(m), .ioas_id = v->ioas};
		m.flags = GIO__IOMMU_IOAS_MAP_FIXED_IOVA | GIO__IOMMU_IOAS_MAP_READABLE | GIO__IOMMU_IOAS_MAP_WRITEABLE;
		m.user_va = start;
		m.length = span;
		m.iova = base;
		what = "IOMMU_IOAS_MAP";
		rc = ioctl(v->iommufd, GIO__IOMMU_IOAS_MAP, &m);
	} else {
		struct vfio_iommu_type1_dma_map m = {.argsz = sizeof(m)};
		m.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
		m.vaddr = start;
		m.iova = base;
		m.size = span;
		what = "VFIO_IOMMU_MAP_DMA";
		rc = ioctl(v->container, VFIO_IOMMU_MAP_DMA, &m);
	}
	if (rc) {
		rc = -errno;
		return gio__fail(rc, "giouring: %s of %p + %zu at IOVA 0x%" PRIx64 ": %s%s", what, ptr, len, base, strerror(-rc),
				 rc == -ENOMEM ? " (the locked-memory limit, ulimit -l, may be too low)" : "");
	}
	__atomic_fetch_add(&v->mapped_bytes, span, __ATOMIC_RELAXED);
	*iova = base + ((uintptr_t)ptr - start);
	return 0;
}

/* Bytes [off, off + len) of a file or dma-buf, mapped through IOMMU_IOAS_MAP_FILE (iommufd only:
 * the type1 backend leaves dma_map_fd NULL). The kernel decides what it can pin: memfd and
 * hugetlbfs files since Linux 6.13; dma-bufs only from exporters that hand iommufd a physical
 * range (in Linux 7.3, VFIO-exported PCI BARs alone; a GPU driver's dma-buf is refused). So the
 * refusal is the answer of a run-time probe, reported as -EOPNOTSUPP with the kernel's errno. */
static int dma_map_fd(void *priv, int fd, uint64_t off, size_t len, uint64_t *iova)
{
	struct vfio *v = priv;
	const long pg = sysconf(_SC_PAGESIZE);
	struct gio__iommu_ioas_map_file m = {.size = sizeof(m), .ioas_id = v->ioas, .fd = fd};
	struct utsname u;
	uint64_t base;
	int rc;
	if ((off | len) & (uint64_t)(pg - 1))
		return gio__fail(-EINVAL, "giouring: fd %d: offset %" PRIu64 " and length %zu must be multiples of the %ld-byte page",
				 fd, off, len, pg);
	if ((rc = iova_reserve(v, len, &base)))
		return rc;
	m.flags = GIO__IOMMU_IOAS_MAP_FIXED_IOVA | GIO__IOMMU_IOAS_MAP_READABLE | GIO__IOMMU_IOAS_MAP_WRITEABLE;
	m.start = off;
	m.length = len;
	m.iova = base;
	if (ioctl(v->iommufd, GIO__IOMMU_IOAS_MAP_FILE, &m) == 0) {
		__atomic_fetch_add(&v->mapped_bytes, len, __ATOMIC_RELAXED);
		*iova = base;
		return 0;
	}
	rc = -errno;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	if (rc == -ENOTTY)
		return gio__fail(-EOPNOTSUPP, "giouring: fd %d: this kernel (%s) has no IOMMU_IOAS_MAP_FILE (Linux 6.13 or later)",
				 fd, u.release);
	if (rc == -EOPNOTSUPP)
		return gio__fail(-EOPNOTSUPP,
				 "giouring: fd %d: IOMMU_IOAS_MAP_FILE: this kernel's iommufd (%s) cannot pin this dma-buf: its "
				 "exporter gives iommufd no physical range (Linux 7.3 takes only VFIO-exported PCI BARs)",
				 fd, u.release);
	if (rc == -EBADF)
		return gio__fail(-EBADF, "giouring: fd %d is not an open file", fd);
	return gio__fail(rc, "giouring: fd %d: IOMMU_IOAS_MAP_FILE of %zu bytes at offset %" PRIu64 ": %s%s", fd, len, off,
			 strerror(-rc), rc == -EINVAL ? " (a file must be a memfd or on hugetlbfs; a dma-buf must cover the range)" : "");
}

static int dma_unmap(void *priv, void *ptr, size_t len, int fd, uint64_t iova)
{
	struct vfio *v = priv;
	const long pg = sysconf(_SC_PAGESIZE);
	const uintptr_t start = (uintptr_t)ptr & ~(uintptr_t)(pg - 1);
	/* The range dma_map or dma_map_fd mapped: whole pages around ptr, or the fd's bytes. */
	const uint64_t base = fd ? iova : iova - ((uintptr_t)ptr - start);
	const uint64_t span = fd ? len : (((uintptr_t)ptr + len + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1)) - start;
	const char *what;
	uint64_t done;
	int rc;
	if (v->iommufd >= 0) {
		struct gio__iommu_ioas_unmap u = {.size = sizeof(u), .ioas_id = v->ioas, .iova = base, .length = span};
		what = "IOMMU_IOAS_UNMAP";
		rc = ioctl(v->iommufd, GIO__IOMMU_IOAS_UNMAP, &u);
		done = u.length;
	} else {
		struct vfio_iommu_type1_dma_unmap u = {.argsz = sizeof(u), .iova = base, .size = span};
		what = "VFIO_IOMMU_UNMAP_DMA";
		rc = ioctl(v->container, VFIO_IOMMU_UNMAP_DMA, &u);
		done = u.size;
	}
	if (rc)
		return gio__fail(-errno, "giouring: %s of IOVA 0x%" PRIx64 " + %" PRIu64 ": %s", what, base, span,
				 strerror(errno));
	if (done != span) /* both interfaces unmap whole mappings: another size means another mapping */
		return gio__fail(-EIO, "giouring: %s of IOVA 0x%" PRIx64 " + %" PRIu64 " unmapped %" PRIu64 " bytes", what,
				 base, span, done);
	__atomic_fetch_sub(&v->mapped_bytes, span, __ATOMIC_RELAXED);
	pthread_mutex_lock(&v->lock);
	rc = gio__iova_free(&v->iova, base, span);
	pthread_mutex_unlock(&v->lock);
	if (rc) /* neither can happen (a full extent table, a range free already); the unmap stands */
		fprintf(stderr, "giouring: notice: IOVA 0x%" PRIx64 " + %" PRIu64 " is unmapped but not given back to the "
			"allocator (%s)\n", base, span, rc == -ENOSPC ? "its extent table is full" : "it was free already");
	return 0;
}

static void vfio_close(void *priv)
{
	struct vfio *v = priv;
	if (!v)
		return;
	if (v->bar && v->bar != MAP_FAILED)
		munmap(v->bar, v->bar_len);
	/* Closing the container (or the device, then /dev/iommu, which frees the IOAS) removes every
	 * DMA mapping and unpins the memory. */
	if (v->device >= 0)
		close(v->device);
	if (v->group >= 0)
		close(v->group);
	if (v->container >= 0)
		close(v->container);
	if (v->iommufd >= 0)
		close(v->iommufd);
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

/* Legacy container + group, TYPE1v2 IOMMU; group names the IOMMU group (a number). */
static int open_type1(struct vfio *v, const char *bdf, const char *group, struct gio__iova_range *r, uint32_t *nr)
{
	struct vfio_group_status gs = {.argsz = sizeof(gs)};
	char path[PATH_MAX];
	int rc;
	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (v->container < 0)
		return gio__fail(-errno, "giouring: /dev/vfio/vfio: %s (is the vfio module loaded?)", strerror(errno));
	if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1)
		return gio__fail(-EOPNOTSUPP, "giouring: VFIO API %d without the TYPE1v2 IOMMU", VFIO_API_VERSION);
	snprintf(path, sizeof(path), "/dev/vfio/%s", group);
	v->group = open(path, O_RDWR | O_CLOEXEC);
	if (v->group < 0)
		return gio__fail(-errno, "giouring: %s: %s", path, strerror(errno));
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &gs) || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE))
		return gio__fail(-EBUSY, "giouring: %s is not viable: every device of the IOMMU group must be bound to vfio-pci",
				 path);
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container))
		return gio__fail(-errno, "giouring: VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
	if (ioctl(v->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return gio__fail(-errno, "giouring: VFIO_SET_IOMMU (TYPE1v2): %s%s", strerror(errno),
				 errno == EPERM ? " (interrupt remapping off? a virtual Intel IOMMU needs intremap=on)" : "");
	if ((rc = type1_ranges(v, r, nr)))
		return rc;
	v->device = ioctl(v->group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	if (v->device < 0)
		return gio__fail(-errno, "giouring: VFIO_GROUP_GET_DEVICE_FD %s: %s", bdf, strerror(errno));
	return 0;
}

/* The device's VFIO cdev (/dev/vfio/devices/vfioN) into *cdev; 0, or -ENOENT where the kernel
 * makes none (no VFIO_DEVICE_CDEV). */
static int find_cdev(const char *bdf, char *cdev, size_t len)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int rc = -ENOENT;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vfio-dev", bdf);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "vfio", 4) && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
			snprintf(cdev, len, "/dev/vfio/devices/%s", e->d_name);
			rc = 0;
			break;
		}
	closedir(d);
	return rc;
}

/* The device cdev bound to an iommufd, attached to a fresh IOAS. */
static int open_iommufd(struct vfio *v, const char *cdev, struct gio__iova_range *r, uint32_t *nr)
{
	struct gio__vfio_device_bind_iommufd bind = {.argsz = sizeof(bind)};
	struct gio__vfio_device_attach_iommufd_pt at = {.argsz = sizeof(at)};
	struct gio__iommu_ioas_alloc ioas = {.size = sizeof(ioas)};
	v->iommufd = open("/dev/iommu", O_RDWR | O_CLOEXEC);
	if (v->iommufd < 0)
		return gio__fail(-errno, "giouring: /dev/iommu: %s", strerror(errno));
	v->device = open(cdev, O_RDWR | O_CLOEXEC);
	if (v->device < 0)
		return gio__fail(-errno, "giouring: %s: %s%s", cdev, strerror(errno),
				 errno == EBUSY ? " (the device is open through its VFIO group elsewhere)" : "");
	bind.iommufd = v->iommufd;
	if (ioctl(v->device, GIO__VFIO_DEVICE_BIND_IOMMUFD, &bind))
		return gio__fail(-errno, "giouring: VFIO_DEVICE_BIND_IOMMUFD %s: %s", cdev, strerror(errno));
	if (ioctl(v->iommufd, GIO__IOMMU_IOAS_ALLOC, &ioas))
		return gio__fail(-errno, "giouring: IOMMU_IOAS_ALLOC: %s", strerror(errno));
	v->ioas = ioas.out_ioas_id;
	at.pt_id = v->ioas;
	if (ioctl(v->device, GIO__VFIO_DEVICE_ATTACH_IOMMUFD_PT, &at))
		return gio__fail(-errno, "giouring: VFIO_DEVICE_ATTACH_IOMMUFD_PT %s to IOAS %u: %s%s", cdev, v->ioas,
				 strerror(errno),
				 errno == EPERM ? " (interrupt remapping off? a virtual Intel IOMMU needs intremap=on)" : "");
	return iommufd_ranges(v, r, nr);
}

int gio__vfio_open(const char *bdf, int iommu, struct gio__backend *be)
{
	struct vfio_region_info bar = {.argsz = sizeof(bar), .index = VFIO_PCI_BAR0_REGION_INDEX};
	struct gio__iova_range r[16];
	uint32_t nr = 0;
	char path[PATH_MAX], link[PATH_MAX], cdev[PATH_MAX];
	int have_cdev, have_iommufd, use_iommufd;
	struct vfio *v;
	ssize_t n;
	int rc;

	if (!valid_bdf(bdf))
		return gio__fail(-EINVAL, "giouring: nvme-pci://%s: want a PCI address dddd:bb:dd.f (e.g. 0000:01:00.0)", bdf);
#if !defined(__x86_64__) && !defined(__aarch64__)
	/* The barrier before an MMIO doorbell is argued for these two only (giouring/ring/ordering.h). */
	return gio__fail(-EOPNOTSUPP, "giouring: nvme-pci://%s: this architecture has no argued barrier before MMIO "
			 "doorbells (giouring/ring/ordering.h covers x86-64 and aarch64)", bdf);
#endif
	v = calloc(1, sizeof(*v));
	if (!v)
		return gio__fail(-ENOMEM, "giouring: no memory for VFIO state");
	v->container = v->group = v->device = v->iommufd = -1;
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
	have_cdev = find_cdev(bdf, cdev, sizeof(cdev)) == 0 && access(cdev, F_OK) == 0;
	have_iommufd = access("/dev/iommu", F_OK) == 0;
	use_iommufd = iommu == GIO__IOMMU_IOMMUFD || (iommu == GIO__IOMMU_AUTO && have_cdev && have_iommufd);
	if (use_iommufd && !(have_cdev && have_iommufd)) {
		rc = gio__fail(-EOPNOTSUPP, "giouring: %s: iommu=iommufd needs /dev/iommu (%s) and the device's VFIO cdev "
			       "(%s): Linux 6.6 or later with CONFIG_IOMMUFD and CONFIG_VFIO_DEVICE_CDEV; iommu=type1 works "
			       "without", bdf, have_iommufd ? "present" : "absent", have_cdev ? "present" : "absent");
		goto fail;
	}
	rc = use_iommufd ? open_iommufd(v, cdev, r, &nr) : open_type1(v, bdf, basename(link), r, &nr);
	if (rc)
		goto fail;
	init_space(v, r, nr);
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
	be->dma_map_fd = use_iommufd ? dma_map_fd : NULL;
	be->dma_unmap = dma_unmap;
	be->iommu = use_iommufd ? "iommufd" : "type1";
	be->close = vfio_close;
	return 0;
fail:
	vfio_close(v);
	return rc;
}
