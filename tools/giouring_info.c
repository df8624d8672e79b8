/* giouring-info: lists the NVMe controllers bound to the kernel's nvme driver with what giouring
 * needs to know about them (SGL support and alignment, MDTS, queues, namespaces and LBA formats,
 * whether a namespace is in use, SR-IOV and its virtual functions' controllers: sriov.c), and
 * prints the exact steps to hand one to vfio-pci, so a user can pick a drive before opening it
 * as nvme-pci://<BDF> (or one of its VFs: giouring-sriov). Uses libnvme. Exit status: 0 when it
 * listed at least one controller, 1 when there is none, 2 on a usage error. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dirent.h>

#include <libnvme.h>

#include "sriov.h"

static int is_pcie(nvme_ctrl_t c)
{
	const char *t = nvme_ctrl_get_transport(c);
	return t && !strcmp(t, "pcie");
}

/* CAP from BAR0 through sysfs (root only); 0 when it cannot be read. Read-only, one register:
 * MDTS counts in units of CAP.MPSMIN, and CAP.MQES bounds queue depth. */
static uint64_t read_cap(const char *bdf)
{
	char path[PATH_MAX];
	uint64_t cap = 0;
	volatile uint32_t *bar;
	int fd;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", bdf);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	bar = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (bar == MAP_FAILED)
		return 0;
	cap = bar[0] | (uint64_t)bar[1] << 32; /* low then high, 32-bit MMIO reads */
	munmap((void *)bar, 4096);
	return cap;
}

/* "yes (at /mnt)" when the namespace block device or one of its partitions is mounted or used
 * as swap; "no" otherwise. */
static void mount_state(const char *nsname, char *out, size_t len)
{
	char line[1024], dev[512], dir[512];
	size_t n = strlen(nsname);
	FILE *f = fopen("/proc/self/mounts", "r");
	snprintf(out, len, "no");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%511s %511s", dev, dir) == 2 && !strncmp(dev, "/dev/", 5) &&
			    !strncmp(dev + 5, nsname, n) && (dev[5 + n] == 0 || dev[5 + n] == 'p')) {
				snprintf(out, len, "yes (%s at %s)", dev, dir);
				break;
			}
		fclose(f);
	}
	f = fopen("/proc/swaps", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%511s", dev) == 1 && !strncmp(dev, "/dev/", 5) && !strncmp(dev + 5, nsname, n))
				snprintf(out, len, "yes (%s is swap)", dev);
		fclose(f);
	}
}

static const char *sgl_support(uint32_t sgls)
{
	switch (sgls & 3u) {
	case 0: return "no (PRP only)";
	case 1: return "yes, no alignment rule (byte-aligned Data Blocks)";
	case 2: return "yes, Data Blocks must be dword aligned and sized";
	default: return "reserved value 3 (unusable)";
	}
}

static void print_namespace(nvme_ns_t n, int fd, int *mounted)
{
	struct nvme_id_ns ns;
	char state[1200];
	int i, nsid = nvme_ns_get_nsid(n);
	mount_state(nvme_ns_get_name(n), state, sizeof(state));
	if (strncmp(state, "no", 2))
		*mounted = 1;
	printf("  namespace %d (/dev/%s): %" PRIu64 " blocks of %d bytes, mounted: %s\n", nsid, nvme_ns_get_name(n),
	       nvme_ns_get_lba_count(n), nvme_ns_get_lba_size(n), state);
	if (nvme_identify_ns(fd, (uint32_t)nsid, &ns) != 0)
		return;
	for (i = 0; i <= ns.nlbaf && i < 64; i++) {
		const struct nvme_lbaf *f = &ns.lbaf[i];
		const int in_use = i == ((ns.flbas & 0xf) | ((ns.flbas >> 5 & 3) << 4));
		printf("    LBA format %d: %u-byte blocks, %u bytes metadata%s\n", i, 1u << f->ds, f->ms,
		       in_use ? " (in use)" : "");
	}
}

static int print_ctrl(nvme_ctrl_t c)
{
	const char *bdf = nvme_ctrl_get_address(c), *name = nvme_ctrl_get_name(c);
	struct nvme_id_ctrl id;
	char link[PATH_MAX], path[PATH_MAX];
	uint64_t cap = read_cap(bdf);
	uint32_t mpsmin = cap ? 4096u << ((cap >> 48) & 0xf) : 4096u, dw0 = 0, sgls;
	int fd = nvme_ctrl_get_fd(c), mounted = 0;
	ssize_t l;
	nvme_ns_t n;

	printf("%s at %s: %s, serial %s, firmware %s\n", name, bdf, nvme_ctrl_get_model(c), nvme_ctrl_get_serial(c),
	       nvme_ctrl_get_firmware(c));
	if (fd < 0 || nvme_identify_ctrl(fd, &id) != 0) {
		printf("  (Identify Controller failed: %s; run as root)\n", strerror(errno));
		return 0;
	}
	sgls = id.sgls;
	printf("  SGL support: %s (SGLS 0x%08x)\n", sgl_support(sgls), sgls);
	if (id.mdts)
		printf("  MDTS: %u (largest transfer %" PRIu64 " KiB%s)\n", id.mdts, ((uint64_t)mpsmin << id.mdts) >> 10,
		       cap ? "" : ", assuming 4 KiB minimum pages: CAP unreadable");
	else
		printf("  MDTS: 0 (no transfer size limit)\n");
	if (cap)
		printf("  queue entries: up to %u per queue (CAP.MQES + 1), doorbell stride %u bytes\n",
		       (unsigned)(cap & 0xffff) + 1, 4u << ((cap >> 32) & 0xf));
	if (nvme_get_features_num_queues(fd, NVME_GET_FEATURES_SEL_CURRENT, &dw0) == 0)
		printf("  I/O queues granted (Number of Queues): %u submission, %u completion\n", (dw0 & 0xffff) + 1,
		       (dw0 >> 16) + 1);
	printf("  namespaces: %u (NN)\n", id.nn);
	nvme_ctrl_for_each_ns(c, n) print_namespace(n, fd, &mounted);
	{
		nvme_subsystem_t s = nvme_ctrl_get_subsystem(c);
		if (s)
			nvme_subsystem_for_each_ns(s, n) print_namespace(n, fd, &mounted);
	}
	{
		struct sriov_state *sr = malloc(sizeof(*sr));
		if (sr) {
			sriov_read(bdf, fd, &id, sr);
			sriov_print(sr);
			free(sr);
		}
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
	l = readlink(path, link, sizeof(link) - 1);
	if (l > 0)
		link[l] = 0;
	printf("  to use it with giouring (nvme-pci://%s):\n", bdf);
	if (mounted)
		printf("    ! a namespace is mounted or in use: unmount it first; the kernel loses the device\n");
	printf("    modprobe vfio-pci\n");
	printf("    echo vfio-pci > /sys/bus/pci/devices/%s/driver_override\n", bdf);
	printf("    echo %s > /sys/bus/pci/devices/%s/driver/unbind\n", bdf, bdf);
	printf("    echo %s > /sys/bus/pci/drivers_probe\n", bdf);
	if (l > 0)
		printf("    (IOMMU group %s: every device in /sys/kernel/iommu_groups/%s/devices must be bound to vfio-pci;"
		       " /dev/vfio/%s must be accessible)\n",
		       basename(link), basename(link), basename(link));
	else
		printf("    ! no IOMMU group: boot with intel_iommu=on (or amd_iommu=on); VFIO needs an IOMMU\n");
	printf("    to give it back: echo > /sys/bus/pci/devices/%s/driver_override; echo %s > "
	       "/sys/bus/pci/drivers/vfio-pci/unbind; echo %s > /sys/bus/pci/drivers_probe\n",
	       bdf, bdf, bdf);
	return 1;
}

/* NVMe functions (class 0x010802) already bound to vfio-pci: ready for nvme-pci://. */
static void list_vfio(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[PATH_MAX], buf[64] = "", drv[PATH_MAX];
		FILE *f;
		ssize_t l;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		if (strncmp(buf, "0x010802", 8))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", e->d_name);
		l = readlink(path, drv, sizeof(drv) - 1);
		if (l > 0) {
			drv[l] = 0;
			if (!strcmp(basename(drv), "vfio-pci")) {
				char pf_link[PATH_MAX], pf[PATH_MAX], vf[96] = "";
				ssize_t pl;
				/* An SR-IOV VF names its physical function through physfn. */
				snprintf(pf_link, sizeof(pf_link), "/sys/bus/pci/devices/%s/physfn", e->d_name);
				pl = readlink(pf_link, pf, sizeof(pf) - 1);
				if (pl > 0) {
					pf[pl] = 0;
					snprintf(vf, sizeof(vf), ", an SR-IOV virtual function of %s", basename(pf));
				}
				/* A VFIO device cdev means nvme-pci's iommu=auto takes iommufd for it. */
				snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vfio-dev", e->d_name);
				printf("%s: bound to vfio-pci%s, ready as nvme-pci://%s (%s)\n", e->d_name, vf, e->d_name,
				       access(path, F_OK) == 0 && access("/dev/iommu", F_OK) == 0
					       ? "iommufd: VFIO device cdev and /dev/iommu present"
					       : "VFIO type1 container: no device cdev or no /dev/iommu");
			}
		}
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	nvme_root_t r;
	nvme_host_t h;
	nvme_subsystem_t s;
	nvme_ctrl_t c;
	int found = 0;
	if (argc > 1) {
		fprintf(stderr, "usage: %s\n  lists NVMe controllers bound to the kernel's nvme driver and how to hand one to "
				"vfio-pci for giouring (nvme-pci://<BDF>)\n",
			argv[0]);
		return 2;
	}
	r = nvme_create_root(stderr, 3 /* LOG_ERR */);
	if (!r) {
		fprintf(stderr, "giouring-info: libnvme: %s\n", strerror(errno));
		return 1;
	}
	nvme_scan_topology(r, NULL, NULL);
	nvme_for_each_host(r, h) nvme_for_each_subsystem(h, s) nvme_subsystem_for_each_ctrl(s, c) if (is_pcie(c)) found +=
		print_ctrl(c);
	nvme_free_tree(r);
	/* Which IOMMU interface nvme-pci gets here: only iommufd imports dma-bufs (GPU memory). */
	printf("IOMMU interface for nvme-pci: %s\n",
	       access("/dev/iommu", F_OK) == 0
		       ? "iommufd (/dev/iommu present): files and dma-bufs can be mapped (gio_ctx_register_fd)"
		       : "VFIO type1 container (/dev/iommu absent: a kernel without CONFIG_IOMMUFD); GPU memory "
			 "and other dma-bufs cannot be mapped for the controller");
	/* Which way a KV pool in GPU memory and the controller exchange data (giouring/host/path.h):
	 * the same rule gio_ctx_gpu_path() applies when a store's pool registers. */
	printf("GPU memory path (URI path=auto): %s\n",
	       access("/dev/iommu", F_OK) == 0
		       ? "peer-to-peer where this kernel's iommufd pins the GPU driver's dma-buf (no released kernel does "
			 "yet: Linux 7.3 pins only VFIO-exported BARs), else staged through pinned host memory; "
			 "gio_ctx_gpu_path() decides when the pool registers and says why"
		       : "staged through pinned host memory (docs/staged.md): the type1 container cannot map GPU memory "
			 "for the controller; path=staged asks for it anywhere");
	list_vfio();
	if (!found) {
		fprintf(stderr, "giouring-info: no NVMe controller is bound to the kernel's nvme driver "
				"(/sys/class/nvme is empty or has no PCIe controller). Load it with 'modprobe nvme'; "
				"controllers already bound to vfio-pci are listed above, if any.\n");
		return 1;
	}
	return 0;
}
