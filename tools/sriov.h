/* A physical function's SR-IOV state as the tools read it (tools/sriov.c): sysfs (how many VFs,
 * how many enabled, their PCI functions and drivers) and the primary controller through libnvme
 * (Virtualization Management support, Primary Controller Capabilities, the Secondary Controller
 * List). giouring-info prints it; giouring-sriov decides its steps from it. */
#ifndef GIOURING_TOOLS_SRIOV_H
#define GIOURING_TOOLS_SRIOV_H

#include <stddef.h>
#include <stdint.h>

#include <libnvme.h>

#define SRIOV_ADMIN_TIMEOUT_MS 5000u

struct sriov_state {
	char pf[64];       /* the PF's BDF */
	int fd;            /* its controller's character device (libnvme's), not owned */
	uint16_t cntlid;   /* the primary controller's ID */
	uint16_t oacs;     /* Optional Admin Command Support */
	int virt_mgmt;     /* Virtualization Management supported: OACS bit 7, or the effects log */
	const char *virt_how; /* where virt_mgmt was found */
	int total_vfs;     /* sriov_totalvfs, -1 when absent (no SR-IOV capability) */
	int num_vfs;       /* sriov_numvfs, -1 when absent */
	int autoprobe;     /* sriov_drivers_autoprobe, -1 when absent */
	int have_cap;      /* cap read (Identify CNS 14h) */
	struct nvme_primary_ctrl_cap cap;
	int have_list;     /* list read (Identify CNS 15h) */
	struct nvme_secondary_ctrl_list list;
	char why[160];     /* why cap or list is missing */
};

/* Reads the state of the PF at bdf, whose controller is open as fd and identified as id. */
void sriov_read(const char *bdf, int fd, const struct nvme_id_ctrl *id, struct sriov_state *s);
/* Reads it again: sysfs, the capabilities and the list (after a change). */
void sriov_refresh(struct sriov_state *s);
/* The secondary controller entry of VF number vfn (from 1), or NULL. */
const struct nvme_secondary_ctrl *sriov_entry(const struct sriov_state *s, unsigned vfn);
/* The BDF of the PF's VF number vfn into out: 0, or -1 when it is not enabled (no virtfn link). */
int sriov_vf_bdf(const char *pf, unsigned vfn, char *out, size_t len);
/* The driver the PCI function bdf is bound to into out ("" when none). */
void sriov_driver(const char *bdf, char *out, size_t len);
/* An integer sysfs attribute of the PCI function bdf, or -1. */
int sriov_sysfs_int(const char *bdf, const char *attr);
/* giouring-info's lines about it, indented by two spaces. */
void sriov_print(const struct sriov_state *s);

#endif
