/* A physical function's SR-IOV state for the tools: sysfs and the primary controller's Identify
 * data through libnvme (see sriov.h). Read only. */
#define _GNU_SOURCE
#include "sriov.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sriov_sysfs_int(const char *bdf, const char *attr)
{
	char path[PATH_MAX];
	FILE *f;
	int v = -1;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int sriov_vf_bdf(const char *pf, unsigned vfn, char *out, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t l;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/virtfn%u", pf, vfn - 1);
	if (vfn == 0 || (l = readlink(path, target, sizeof(target) - 1)) <= 0)
		return -1;
	target[l] = 0;
	snprintf(out, len, "%s", basename(target));
	return 0;
}

void sriov_driver(const char *bdf, char *out, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t l;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bdf);
	l = readlink(path, target, sizeof(target) - 1);
	if (l <= 0) {
		snprintf(out, len, "%s", "");
		return;
	}
	target[l] = 0;
	snprintf(out, len, "%s", basename(target));
}

void sriov_read(const char *bdf, int fd, const struct nvme_id_ctrl *id, struct sriov_state *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->pf, sizeof(s->pf), "%s", bdf);
	s->fd = fd;
	s->cntlid = id->cntlid;
	s->oacs = id->oacs;
	sriov_refresh(s);
}

void sriov_refresh(struct sriov_state *s)
{
	s->have_cap = s->have_list = 0;
	s->why[0] = 0;
	s->total_vfs = sriov_sysfs_int(s->pf, "sriov_totalvfs");
	s->num_vfs = sriov_sysfs_int(s->pf, "sriov_numvfs");
	s->autoprobe = sriov_sysfs_int(s->pf, "sriov_drivers_autoprobe");
	/* OACS bit 7 says so; where it is clear, the Commands Supported and Effects log may still
	 * list the command (QEMU 7.2 does that). */
	s->virt_mgmt = !!(s->oacs & NVME_CTRL_OACS_VIRT_MGMT);
	s->virt_how = "OACS bit 7";
	if (!s->virt_mgmt) {
		struct nvme_cmd_effects_log *log = malloc(sizeof(*log));
		if (log && nvme_get_log_cmd_effects(s->fd, NVME_CSI_NVM, log) == 0 &&
		    (log->acs[nvme_admin_virtual_mgmt] & NVME_CMD_EFFECTS_CSUPP)) {
			s->virt_mgmt = 1;
			s->virt_how = "OACS bit 7 is clear, but the Commands Supported and Effects log lists it";
		}
		free(log);
	}
	if (!s->virt_mgmt) {
		snprintf(s->why, sizeof(s->why),
			 "no Virtualization Management: OACS bit 7 clear, and the Commands Supported and Effects log does not "
			 "list it");
		return;
	}
	if (nvme_identify_primary_ctrl(s->fd, s->cntlid, &s->cap) == 0)
		s->have_cap = 1;
	else
		snprintf(s->why, sizeof(s->why), "Identify Primary Controller Capabilities failed: %s", strerror(errno));
	if (nvme_identify_secondary_ctrl_list(s->fd, 0, 0, &s->list) == 0)
		s->have_list = 1;
	else
		snprintf(s->why, sizeof(s->why), "Identify Secondary Controller List failed: %s", strerror(errno));
}

const struct nvme_secondary_ctrl *sriov_entry(const struct sriov_state *s, unsigned vfn)
{
	unsigned i;
	if (!s->have_list)
		return NULL;
	for (i = 0; i < s->list.num && i < NVME_ID_SECONDARY_CTRL_MAX; i++)
		if (s->list.sc_entry[i].vfn == vfn)
			return &s->list.sc_entry[i];
	return NULL;
}

void sriov_print(const struct sriov_state *s)
{
	unsigned i;
	if (s->total_vfs <= 0) {
		printf("  SR-IOV: no (the function has no SR-IOV capability, or the kernel lists no VFs for it)\n");
		return;
	}
	printf("  SR-IOV: up to %d virtual functions, %d enabled (sriov_totalvfs, sriov_numvfs); VF drivers autoprobe %s\n",
	       s->total_vfs, s->num_vfs, s->autoprobe == 0 ? "off" : s->autoprobe == 1 ? "on" : "unknown");
	printf("  Virtualization Management: %s%s%s; Namespace Management: %s\n",
	       s->virt_mgmt ? "yes" : "no (the VFs' controllers cannot be given resources)", s->virt_mgmt ? " - " : "",
	       s->virt_mgmt ? s->virt_how : "",
	       s->oacs & NVME_CTRL_OACS_NS_MGMT ? "yes" : "no (namespaces cannot be attached to a VF)");
	if (s->why[0] && s->virt_mgmt)
		printf("  (%s)\n", s->why);
	if (s->have_cap)
		printf("  flexible resources (primary controller %u): queues %u in all, %u assigned to secondary controllers, "
		       "at most %u each%s; interrupts %u in all, %u assigned, at most %u each%s\n",
		       s->cap.cntlid, s->cap.vqfrt, s->cap.vqrfa, s->cap.vqfrsm, s->cap.crt & 1 ? "" : " (not supported)",
		       s->cap.vifrt, s->cap.virfa, s->cap.vifrsm, s->cap.crt & 2 ? "" : " (not supported)");
	for (i = 0; s->have_list && i < s->list.num && i < NVME_ID_SECONDARY_CTRL_MAX; i++) {
		const struct nvme_secondary_ctrl *e = &s->list.sc_entry[i];
		char vf[64], drv[64] = "";
		if (sriov_vf_bdf(s->pf, e->vfn, vf, sizeof(vf)) == 0) {
			sriov_driver(vf, drv, sizeof(drv));
			printf("  secondary controller %u: VF %u at %s (driver: %s), %s, %u queues, %u interrupts\n", e->scid,
			       e->vfn, vf, drv[0] ? drv : "none", e->scs & 1 ? "online" : "offline", e->nvq, e->nvi);
			if ((e->scs & 1) && !strcmp(drv, "vfio-pci"))
				printf("    ready as nvme-pci://%s?ns=NSID (%u I/O queue pairs: its queues less the admin queue)\n",
				       vf, e->nvq ? e->nvq - 1u : 0u);
		} else {
			printf("  secondary controller %u: VF %u (not enabled), %s, %u queues, %u interrupts\n", e->scid, e->vfn,
			       e->scs & 1 ? "online" : "offline", e->nvq, e->nvi);
		}
	}
	if (s->virt_mgmt)
		printf("  to give giouring a VF and a namespace of it (the kernel keeps this function): giouring-sriov setup %s "
		       "VF NSID [--dry-run]; giouring-sriov undo %s VF NSID gives them back\n",
		       s->pf, s->pf);
}
