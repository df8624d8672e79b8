/* SR-IOV virtual functions as nvme-pci targets: whether a PCI function is a VF (sysfs physfn),
 * which VF of which physical function, and, where the PF is on the kernel's nvme driver, its
 * secondary controller's state and resources from the PF's Secondary Controller List (Identify
 * CNS 15h through the kernel's admin passthrough, read only). A VF is usable only once its PF
 * gave its secondary controller flexible queues and interrupts and set it online; before that
 * the function reads CSTS.CFS (QEMU) or never becomes ready, and this is what lets open name the
 * missing step instead of reporting a fatal controller (docs/hardware.md, "SR-IOV"). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/nvme_ioctl.h>

#include <giouring/nvme/identify.h>
#include <giouring/nvme/sqe.h>

#include "../internal.h"

#define PCI_DEVICES "/sys/bus/pci/devices"
/* Pages of the Secondary Controller List read at most (127 entries each). */
#define SEC_LIST_PAGES 8

/* The last path component of the symlink at path, or -1. */
static int link_name(const char *path, char *out, size_t len)
{
	char target[PATH_MAX];
	const ssize_t l = readlink(path, target, sizeof(target) - 1);
	if (l <= 0)
		return -1;
	target[l] = 0;
	snprintf(out, len, "%s", basename(target));
	return 0;
}

int gio__sriov_find(const struct gio_sec_ctrl_list *list, uint16_t vfn, struct gio_sec_ctrl *out)
{
	uint32_t i;
	for (i = 0; i < list->num && i < GIO_SEC_CTRL_LIST_MAX; i++)
		if (list->sc[i].vfn == vfn) {
			*out = list->sc[i];
			return 1;
		}
	return 0;
}

/* The PF's entry for vf->vfn from its character device (/dev/nvmeN of the PF's nvme/ folder). */
static void read_entry(const char *root, struct gio__sriov_vf *vf)
{
	char path[PATH_MAX], dev[64] = "";
	struct gio_sec_ctrl_list *list;
	struct dirent *e;
	uint32_t from = 0;
	int fd, page;
	DIR *d;
	snprintf(path, sizeof(path), "%s/%s/nvme", root, vf->pf);
	if (!(d = opendir(path))) {
		snprintf(vf->why, sizeof(vf->why), "the PF %s is not on the kernel's nvme driver", vf->pf);
		return;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "nvme", 4))
			snprintf(dev, sizeof(dev), "/dev/%.48s", e->d_name);
	closedir(d);
	if (!dev[0] || (fd = open(dev, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(vf->why, sizeof(vf->why), "the PF's %s cannot be opened: %s", dev[0] ? dev : "controller node",
			 dev[0] ? strerror(errno) : "none");
		return;
	}
	if (!(list = aligned_alloc(4096, sizeof(*list)))) {
		close(fd);
		snprintf(vf->why, sizeof(vf->why), "no memory");
		return;
	}
	for (page = 0; page < SEC_LIST_PAGES; page++) {
		struct nvme_admin_cmd cmd;
		struct gio_sec_ctrl sc;
		memset(&cmd, 0, sizeof(cmd));
		memset(list, 0, sizeof(*list));
		cmd.opcode = GIO_ADMIN_OPC_IDENTIFY;
		cmd.addr = (uint64_t)(uintptr_t)list;
		cmd.data_len = sizeof(*list);
		cmd.cdw10 = GIO_CNS_SEC_CTRL_LIST | from << GIO_IDENTIFY_CDW10_CNTID_SHIFT;
		cmd.timeout_ms = 5000;
		if (ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd)) {
			snprintf(vf->why, sizeof(vf->why), "Identify Secondary Controller List on %s: %s", dev, strerror(errno));
			break;
		}
		if (gio__sriov_find(list, vf->vfn, &sc)) {
			vf->entry = 1;
			vf->scid = sc.scid;
			vf->nvq = sc.nvq;
			vf->nvi = sc.nvi;
			vf->online = sc.scs & GIO_SCS_ONLINE;
			break;
		}
		if (list->num < GIO_SEC_CTRL_LIST_MAX || list->sc[list->num - 1].scid == 0xffff) {
			snprintf(vf->why, sizeof(vf->why), "the PF's Secondary Controller List has no entry for VF %u", vf->vfn);
			break;
		}
		from = list->sc[list->num - 1].scid + 1u;
	}
	free(list);
	close(fd);
}

void gio__sriov_probe_at(const char *root, const char *bdf, struct gio__sriov_vf *vf)
{
	char path[PATH_MAX], name[64];
	int i;
	memset(vf, 0, sizeof(*vf));
	snprintf(path, sizeof(path), "%s/%s/physfn", root, bdf);
	if (link_name(path, vf->pf, sizeof(vf->pf)))
		return; /* a physical function (or no such device: VFIO said so already) */
	vf->is_vf = 1;
	/* The PF's virtfnN links name its VFs; VF numbers count from 1. */
	for (i = 0; i < 4096; i++) {
		snprintf(path, sizeof(path), "%s/%s/virtfn%d", root, vf->pf, i);
		if (link_name(path, name, sizeof(name)))
			break;
		if (!strcmp(name, bdf)) {
			vf->vfn = (uint16_t)(i + 1);
			break;
		}
	}
	if (!vf->vfn) {
		snprintf(vf->why, sizeof(vf->why), "no virtfn link of %s names it", vf->pf);
		return;
	}
	read_entry(root, vf);
}

void gio__sriov_probe(const char *bdf, struct gio__sriov_vf *vf)
{
	gio__sriov_probe_at(PCI_DEVICES, bdf, vf);
}

int gio__sriov_unready(const char *bdf, const struct gio__sriov_vf *vf)
{
	if (!vf->is_vf || !vf->entry || (vf->online && vf->nvq >= 2 && vf->nvi >= 1))
		return 0;
	return gio__fail(-EIO,
			 "giouring: %s is SR-IOV virtual function %u of %s, and its secondary controller %u is %s (%u flexible "
			 "queues, %u interrupts): the PF must give it at least 2 queues and 1 interrupt, then set it online "
			 "(Virtualization Management), e.g. giouring-sriov setup %s %u NSID",
			 bdf, vf->vfn, vf->pf, vf->scid, vf->online ? "online without enough resources" : "offline", vf->nvq,
			 vf->nvi, vf->pf, vf->vfn);
}

void gio__sriov_describe(const struct gio__sriov_vf *vf, char *out, size_t len)
{
	if (!vf->is_vf)
		snprintf(out, len, "%s", "");
	else if (vf->entry)
		snprintf(out, len, "SR-IOV virtual function %u of %s, secondary controller %u", vf->vfn, vf->pf, vf->scid);
	else
		snprintf(out, len, "SR-IOV virtual function %u of %s (its secondary controller unknown: %s)", vf->vfn, vf->pf,
			 vf->why);
}
