/* giouring-sriov: gives giouring one SR-IOV virtual function of an NVMe SSD and one namespace
 * for it, while the physical function stays with the kernel's nvme driver (and its
 * filesystems); and gives them back. Uses libnvme for the admin commands, which go to the PF's
 * controller through the kernel (the PF must be bound to nvme). Run as root.
 *
 *   giouring-sriov setup PF VF NSID [--queues N] [--interrupts N] [--dry-run]
 *   giouring-sriov undo PF VF NSID [--dry-run]
 *
 * PF is the physical function's PCI address (dddd:bb:dd.f), VF the virtual function's number
 * (1 for the first), NSID the namespace. setup: VF drivers autoprobe off; the PF's VFs enabled;
 * the VF's secondary controller given flexible queues and interrupts and set online
 * (Virtualization Management); the namespace attached to it (Namespace Attachment); the VF bound
 * to vfio-pci. undo: the reverse. Each step is printed before it is done, with the command that
 * does the same by hand; a step already in place is skipped and says so; --dry-run prints the
 * steps and does none. The namespace must be attached to no other controller: a namespace the
 * kernel (or another VF) also sees would be written by both, uncoordinated, so a filesystem's
 * namespace is never given to a VF. Exit status: 0 done, 1 a step failed or was refused (the
 * message says why), 2 usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libnvme.h>

#include "sriov.h"

/* How long a sysfs write may take: unbinding a device from vfio-pci waits until the process
 * that has it open lets go. */
#define SYSFS_WRITE_TIMEOUT_S 10

struct opts {
	int setup;         /* 1 setup, 0 undo */
	int dry_run;
	char pf[64];
	unsigned vfn;
	unsigned nsid;
	unsigned queues;   /* 0: the most a secondary controller may have, within what is free */
	unsigned irqs;     /* 0: one (giouring polls; the controller needs one to be online) */
};

static struct opts o;
static int nstep;

static void usage(FILE *f)
{
	fprintf(f, "usage: giouring-sriov setup PF VF NSID [--queues N] [--interrupts N] [--dry-run]\n"
		   "       giouring-sriov undo PF VF NSID [--dry-run]\n"
		   "  PF: the physical function's PCI address (on the kernel's nvme driver); VF: the virtual function's\n"
		   "  number, from 1; NSID: the namespace to give it (attached to no other controller)\n");
}

/* One step: printed first (with the command doing the same by hand), then done unless --dry-run. */
static int step(const char *what, const char *by_hand)
{
	printf("step %d: %s\n    by hand: %s\n", ++nstep, what, by_hand);
	if (o.dry_run)
		printf("    (dry run: not done)\n");
	fflush(stdout);
	return !o.dry_run;
}

static void skip(const char *what)
{
	printf("step %d: %s: already so, skipped\n", ++nstep, what);
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "giouring-sriov: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* An NVMe command's outcome: "" on success, else what failed (errno or the NVMe status). */
static const char *nvme_outcome(int rc, char *buf, size_t len)
{
	if (rc == 0)
		snprintf(buf, len, "%s", "");
	else if (rc < 0)
		snprintf(buf, len, "%s", strerror(errno));
	else
		snprintf(buf, len, "NVMe status 0x%04x (%s)", rc, nvme_status_to_string(rc, false));
	return buf;
}

/* Writes value to a sysfs file within SYSFS_WRITE_TIMEOUT_S (a child does the write: a write
 * that blocks, such as an unbind while a process holds the device, cannot hold this tool). */
static int sysfs_write(const char *path, const char *value)
{
	struct timespec start, now;
	int status;
	pid_t pid = fork();
	if (pid < 0)
		return fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		ssize_t n;
		if (fd < 0)
			_exit(errno & 0xff);
		n = write(fd, value, strlen(value));
		_exit(n == (ssize_t)strlen(value) ? 0 : n < 0 ? (errno & 0xff) : EIO);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= SYSFS_WRITE_TIMEOUT_S)
			return fail("writing '%s' to %s did not finish within %d s (a process still has the device open? the "
				    "write completes when it lets go; run this again then)",
				    value, path, SYSFS_WRITE_TIMEOUT_S);
		usleep(10000);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return fail("writing '%s' to %s: %s", value, path,
			    WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "the writer died");
	return 0;
}

static int pci_write(const char *bdf, const char *attr, const char *value)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	return sysfs_write(path, value);
}

static int virt_mgmt(const struct sriov_state *s, enum nvme_virt_mgmt_act act, enum nvme_virt_mgmt_rt rt, uint16_t scid,
		     uint16_t nr, const char *what)
{
	char err[160];
	__u32 result = 0;
	struct nvme_virtual_mgmt_args a = {
		.result = &result,
		.args_size = sizeof(a),
		.fd = s->fd,
		.timeout = SRIOV_ADMIN_TIMEOUT_MS,
		.act = act,
		.rt = rt,
		.cntlid = scid,
		.nr = nr,
	};
	const int rc = nvme_virtual_mgmt(&a);
	if (rc)
		return fail("Virtualization Management (%s) failed: %s", what, nvme_outcome(rc, err, sizeof(err)));
	return 0;
}

/* The controllers the namespace is attached to (Identify CNS 12h), into l. */
static int attached(const struct sriov_state *s, struct nvme_ctrl_list *l)
{
	char err[160];
	const int rc = nvme_identify_nsid_ctrl_list(s->fd, o.nsid, 0, l);
	if (rc)
		return fail("namespace %u: Identify Attached Controller List failed: %s", o.nsid, nvme_outcome(rc, err, sizeof(err)));
	return 0;
}

static int has_ctrl(const struct nvme_ctrl_list *l, uint16_t id)
{
	unsigned i;
	for (i = 0; i < l->num && i < NVME_ID_CTRL_LIST_MAX; i++)
		if (l->identifier[i] == id)
			return 1;
	return 0;
}

/* A controller other than id the namespace is attached to, or -1. */
static int other_ctrl(const struct nvme_ctrl_list *l, uint16_t id)
{
	unsigned i;
	for (i = 0; i < l->num && i < NVME_ID_CTRL_LIST_MAX; i++)
		if (l->identifier[i] != id)
			return l->identifier[i];
	return -1;
}

static int ns_attach(const struct sriov_state *s, uint16_t scid, int attach)
{
	struct nvme_ctrl_list l;
	char err[160];
	int rc;
	nvme_init_ctrl_list(&l, 1, &scid);
	rc = attach ? nvme_ns_attach_ctrls(s->fd, o.nsid, &l) : nvme_ns_detach_ctrls(s->fd, o.nsid, &l);
	if (rc)
		return fail("Namespace Attachment (%s namespace %u, controller %u) failed: %s", attach ? "attach" : "detach",
			    o.nsid, scid, nvme_outcome(rc, err, sizeof(err)));
	return 0;
}

/* The VF's PCI function bound to vfio-pci (from whatever it had, if anything). */
static int bind_vfio(const char *vf)
{
	char drv[64], by_hand[512];
	sriov_driver(vf, drv, sizeof(drv));
	if (!strcmp(drv, "vfio-pci")) {
		skip("bind the VF to vfio-pci");
		return 0;
	}
	if (access("/sys/bus/pci/drivers/vfio-pci", F_OK))
		return fail("vfio-pci is not loaded: load it first (modprobe vfio-pci), then run this again");
	if (drv[0])
		snprintf(by_hand, sizeof(by_hand),
			 "echo %s > /sys/bus/pci/devices/%s/driver/unbind; echo vfio-pci > /sys/bus/pci/devices/%s/driver_override; "
			 "echo %s > /sys/bus/pci/drivers_probe",
			 vf, vf, vf, vf);
	else
		snprintf(by_hand, sizeof(by_hand),
			 "echo vfio-pci > /sys/bus/pci/devices/%s/driver_override; echo %s > /sys/bus/pci/drivers_probe", vf, vf);
	if (!step("bind the VF to vfio-pci", by_hand))
		return 0;
	if (drv[0] && pci_write(vf, "driver/unbind", vf))
		return 1;
	if (pci_write(vf, "driver_override", "vfio-pci"))
		return 1;
	if (sysfs_write("/sys/bus/pci/drivers_probe", vf))
		return 1;
	sriov_driver(vf, drv, sizeof(drv));
	if (strcmp(drv, "vfio-pci"))
		return fail("%s is bound to %s after the probe, not to vfio-pci (the kernel log says why; is it in an IOMMU "
			    "group? boot with intel_iommu=on or amd_iommu=on)",
			    vf, drv[0] ? drv : "no driver");
	return 0;
}

static int setup(struct sriov_state *s, const char *dev)
{
	const struct nvme_secondary_ctrl *e = sriov_entry(s, o.vfn);
	struct nvme_ctrl_list l;
	char by_hand[512], what[256], vf[64];
	unsigned queues = o.queues, irqs = o.irqs ? o.irqs : 1;
	uint16_t scid;
	int ready;

	if (!e)
		return fail("%s has no secondary controller for VF %u (%s)", s->pf, o.vfn,
			    s->have_list ? "the Secondary Controller List lists none" : s->why);
	scid = e->scid;
	if (!s->have_cap || !(s->cap.crt & 1))
		return fail("%s: its secondary controllers take no flexible queue resources (%s)", s->pf,
			    s->have_cap ? "CRT bit 0 clear" : s->why);
	if (!(s->oacs & NVME_CTRL_OACS_NS_MGMT))
		return fail("%s has no Namespace Management: a namespace cannot be attached to a VF", s->pf);
	/* Online with enough already: a second run of the same setup changes nothing. */
	ready = (e->scs & 1) && e->nvq >= 2 && e->nvi >= 1;
	/* Queues: the most one secondary may take, within the pool less what the others hold. */
	if (!ready) {
		const unsigned held_by_others = s->cap.vqrfa - e->nvq;
		const unsigned pool = s->cap.vqfrt > s->cap.vqrfap + held_by_others ? s->cap.vqfrt - s->cap.vqrfap - held_by_others : 0;
		const unsigned most = s->cap.vqfrsm < pool ? s->cap.vqfrsm : pool;
		if (!queues)
			queues = most;
		if (queues < 2 || queues > most)
			return fail("%s: VF %u needs 2 to %u flexible queues (at most %u per secondary controller, %u free; the "
				    "primary holds %u: Virtualization Management action 1 with 0 gives them up at its next "
				    "reset); asked %u",
				    s->pf, o.vfn, most, s->cap.vqfrsm, pool, s->cap.vqrfap, queues);
	}
	if (!ready && (s->cap.crt & 2) && irqs > s->cap.vifrsm)
		return fail("%s: at most %u interrupts per secondary controller; asked %u", s->pf, s->cap.vifrsm, irqs);
	/* The safety rule: a namespace attached elsewhere is someone else's (the kernel's, with its
	 * filesystem, or another VF's): never shared with this VF. */
	if (attached(s, &l))
		return 1;
	if (other_ctrl(&l, scid) >= 0)
		return fail("namespace %u is attached to controller %d%s: a VF gets a namespace no other controller sees (that "
			    "one would write it too, uncoordinated: never give a filesystem's namespace to a VF). Detach it "
			    "there first if it holds nothing, or choose another",
			    o.nsid, other_ctrl(&l, scid), other_ctrl(&l, scid) == s->cntlid ? " (the PF's: the kernel's)" : "");

	printf("giouring-sriov: setting up VF %u of %s (secondary controller %u) with namespace %u through %s%s\n", o.vfn,
	       s->pf, scid, o.nsid, dev, o.dry_run ? " (dry run)" : "");
	/* Autoprobe off: otherwise the kernel's nvme driver takes every VF as it appears. */
	if (s->autoprobe == 0) {
		skip("VF drivers autoprobe off");
	} else {
		snprintf(by_hand, sizeof(by_hand), "echo 0 > /sys/bus/pci/devices/%s/sriov_drivers_autoprobe", s->pf);
		if (step("VF drivers autoprobe off (the kernel's nvme driver must not take the VFs)", by_hand) &&
		    pci_write(s->pf, "sriov_drivers_autoprobe", "0"))
			return 1;
	}
	/* All the PF's VFs at once: the kernel changes the count only from 0, and a VF whose
	 * secondary controller is offline is inert (and no driver takes it, above). */
	if (s->num_vfs >= (int)o.vfn) {
		skip("enable the PF's VFs");
	} else if (s->num_vfs > 0) {
		return fail("%s has %d VFs enabled, VF %u is not among them; the kernel changes the count only from 0 (which "
			    "takes the enabled ones away): undo those first",
			    s->pf, s->num_vfs, o.vfn);
	} else {
		char n[16];
		snprintf(n, sizeof(n), "%d", s->total_vfs);
		snprintf(by_hand, sizeof(by_hand), "echo %d > /sys/bus/pci/devices/%s/sriov_numvfs", s->total_vfs, s->pf);
		snprintf(what, sizeof(what), "enable the PF's %d VFs (each inert until its secondary controller is online)",
			 s->total_vfs);
		if (step(what, by_hand) && pci_write(s->pf, "sriov_numvfs", n))
			return 1;
	}
	if (ready) {
		if ((o.queues && o.queues != e->nvq) || (o.irqs && o.irqs != e->nvi))
			return fail("secondary controller %u is online with %u queues and %u interrupts; resources change only "
				    "offline: undo it first",
				    scid, e->nvq, e->nvi);
		skip("flexible queues and interrupts assigned, secondary controller online");
	} else {
		if (e->scs & 1) { /* online without enough: resources change only offline */
			snprintf(by_hand, sizeof(by_hand), "nvme virt-mgmt %s --cntlid=%u --act=7", dev, scid);
			if (step("set the secondary controller offline (it is online without enough resources)", by_hand) &&
			    virt_mgmt(s, NVME_VIRT_MGMT_ACT_OFFLINE_SEC_CTRL, NVME_VIRT_MGMT_RT_VQ_RESOURCE, scid, 0, "offline"))
				return 1;
		}
		snprintf(what, sizeof(what), "assign %u flexible queues (one of them its admin queue) to secondary controller %u",
			 queues, scid);
		snprintf(by_hand, sizeof(by_hand), "nvme virt-mgmt %s --cntlid=%u --rt=0 --act=8 --nr=%u", dev, scid, queues);
		if (step(what, by_hand) && virt_mgmt(s, NVME_VIRT_MGMT_ACT_ASSIGN_SEC_CTRL, NVME_VIRT_MGMT_RT_VQ_RESOURCE, scid,
						     (uint16_t)queues, "assign queues"))
			return 1;
		if (s->cap.crt & 2) {
			snprintf(what, sizeof(what), "assign %u flexible interrupt%s to secondary controller %u", irqs,
				 irqs == 1 ? "" : "s", scid);
			snprintf(by_hand, sizeof(by_hand), "nvme virt-mgmt %s --cntlid=%u --rt=1 --act=8 --nr=%u", dev, scid, irqs);
			if (step(what, by_hand) && virt_mgmt(s, NVME_VIRT_MGMT_ACT_ASSIGN_SEC_CTRL, NVME_VIRT_MGMT_RT_VI_RESOURCE,
							     scid, (uint16_t)irqs, "assign interrupts"))
				return 1;
		}
		snprintf(by_hand, sizeof(by_hand), "nvme virt-mgmt %s --cntlid=%u --act=9", dev, scid);
		if (step("set the secondary controller online", by_hand) &&
		    virt_mgmt(s, NVME_VIRT_MGMT_ACT_ONLINE_SEC_CTRL, NVME_VIRT_MGMT_RT_VQ_RESOURCE, scid, 0, "online"))
			return 1;
	}
	snprintf(what, sizeof(what), "attach namespace %u to secondary controller %u", o.nsid, scid);
	if (has_ctrl(&l, scid)) {
		skip(what);
	} else {
		snprintf(by_hand, sizeof(by_hand), "nvme attach-ns %s --namespace-id=%u --controllers=%u", dev, o.nsid, scid);
		if (step(what, by_hand) && ns_attach(s, scid, 1))
			return 1;
	}
	if (sriov_vf_bdf(s->pf, o.vfn, vf, sizeof(vf))) {
		if (!o.dry_run)
			return fail("VF %u of %s has no PCI function (no virtfn%u link) after its VFs were enabled", o.vfn, s->pf,
				    o.vfn - 1);
		step("bind the VF to vfio-pci", "echo vfio-pci > /sys/bus/pci/devices/VF/driver_override; echo VF > "
						 "/sys/bus/pci/drivers_probe (VF: the PCI address the virtfn link names once enabled)");
		printf("giouring-sriov: dry run done: nothing was changed\n");
		return 0;
	}
	if (bind_vfio(vf))
		return 1;
	if (o.dry_run)
		printf("giouring-sriov: dry run done: nothing was changed\n");
	else
		printf("giouring-sriov: VF %u of %s is ready: nvme-pci://%s?ns=%u\n", o.vfn, s->pf, vf, o.nsid);
	return 0;
}

/* Whether every VF of the PF is offline and bound to no driver: then they can all go. */
static int vfs_idle(const struct sriov_state *s, unsigned except_vfn, char *busy, size_t len)
{
	unsigned i;
	for (i = 0; s->have_list && i < s->list.num && i < NVME_ID_SECONDARY_CTRL_MAX; i++) {
		const struct nvme_secondary_ctrl *e = &s->list.sc_entry[i];
		char vf[64], drv[64] = "";
		if (e->vfn == except_vfn || e->vfn == 0)
			continue;
		if (sriov_vf_bdf(s->pf, e->vfn, vf, sizeof(vf)) == 0)
			sriov_driver(vf, drv, sizeof(drv));
		if ((e->scs & 1) || drv[0]) {
			snprintf(busy, len, "VF %u is %s%s%s", e->vfn, e->scs & 1 ? "online" : "offline", drv[0] ? ", bound to " : "",
				 drv);
			return 0;
		}
	}
	return 1;
}

static int undo(struct sriov_state *s, const char *dev)
{
	const struct nvme_secondary_ctrl *e = sriov_entry(s, o.vfn);
	struct nvme_ctrl_list l;
	char by_hand[512], what[256], vf[64], drv[64] = "", busy[128];
	uint16_t scid;
	if (!e)
		return fail("%s has no secondary controller for VF %u (%s)", s->pf, o.vfn,
			    s->have_list ? "the Secondary Controller List lists none" : s->why);
	scid = e->scid;
	printf("giouring-sriov: giving back VF %u of %s (secondary controller %u) and namespace %u through %s%s\n", o.vfn,
	       s->pf, scid, o.nsid, dev, o.dry_run ? " (dry run)" : "");
	if (sriov_vf_bdf(s->pf, o.vfn, vf, sizeof(vf)) == 0)
		sriov_driver(vf, drv, sizeof(drv));
	if (!drv[0]) {
		skip("unbind the VF from its driver");
	} else {
		snprintf(by_hand, sizeof(by_hand),
			 "echo %s > /sys/bus/pci/devices/%s/driver/unbind; echo > /sys/bus/pci/devices/%s/driver_override", vf,
			 vf, vf);
		snprintf(what, sizeof(what), "unbind the VF (%s) from %s", vf, drv);
		if (step(what, by_hand) && (pci_write(vf, "driver/unbind", vf) || pci_write(vf, "driver_override", "\n")))
			return 1;
	}
	if (attached(s, &l))
		return 1;
	snprintf(what, sizeof(what), "detach namespace %u from secondary controller %u", o.nsid, scid);
	if (!has_ctrl(&l, scid)) {
		skip(what);
	} else {
		snprintf(by_hand, sizeof(by_hand), "nvme detach-ns %s --namespace-id=%u --controllers=%u", dev, o.nsid, scid);
		if (step(what, by_hand) && ns_attach(s, scid, 0))
			return 1;
	}
	if (!(e->scs & 1)) {
		skip("set the secondary controller offline");
	} else {
		snprintf(by_hand, sizeof(by_hand), "nvme virt-mgmt %s --cntlid=%u --act=7", dev, scid);
		if (step("set the secondary controller offline", by_hand) &&
		    virt_mgmt(s, NVME_VIRT_MGMT_ACT_OFFLINE_SEC_CTRL, NVME_VIRT_MGMT_RT_VQ_RESOURCE, scid, 0, "offline"))
			return 1;
	}
	/* Back to the pool. Read again: some controllers free them when going offline. */
	if (!o.dry_run) {
		sriov_refresh(s);
		if (!(e = sriov_entry(s, o.vfn)))
			return fail("VF %u: its secondary controller entry is gone after going offline", o.vfn);
	}
	if (!e->nvq && !e->nvi) {
		skip("return the secondary controller's flexible queues and interrupts to the pool");
	} else {
		snprintf(by_hand, sizeof(by_hand),
			 "nvme virt-mgmt %s --cntlid=%u --rt=0 --act=8 --nr=0; nvme virt-mgmt %s --cntlid=%u --rt=1 --act=8 --nr=0",
			 dev, scid, dev, scid);
		if (step("return the secondary controller's flexible queues and interrupts to the pool", by_hand) &&
		    (virt_mgmt(s, NVME_VIRT_MGMT_ACT_ASSIGN_SEC_CTRL, NVME_VIRT_MGMT_RT_VQ_RESOURCE, scid, 0, "free queues") ||
		     ((s->cap.crt & 2) &&
		      virt_mgmt(s, NVME_VIRT_MGMT_ACT_ASSIGN_SEC_CTRL, NVME_VIRT_MGMT_RT_VI_RESOURCE, scid, 0, "free interrupts"))))
			return 1;
	}
	/* The VFs go only when none is in use: another process may hold its own VF. */
	if (s->num_vfs <= 0) {
		skip("disable the PF's VFs");
	} else if (!vfs_idle(s, o.vfn, busy, sizeof(busy))) {
		printf("step %d: disable the PF's VFs: left enabled, %s (its own undo disables them)\n", ++nstep, busy);
	} else {
		snprintf(by_hand, sizeof(by_hand),
			 "echo 0 > /sys/bus/pci/devices/%s/sriov_numvfs; echo 1 > /sys/bus/pci/devices/%s/sriov_drivers_autoprobe",
			 s->pf, s->pf);
		if (step("disable the PF's VFs (none is in use) and turn VF drivers autoprobe back on", by_hand) &&
		    (pci_write(s->pf, "sriov_numvfs", "0") || pci_write(s->pf, "sriov_drivers_autoprobe", "1")))
			return 1;
	}
	printf("giouring-sriov: %s\n", o.dry_run ? "dry run done: nothing was changed" : "undone");
	return 0;
}

static int parse(int argc, char **argv)
{
	int i, pos = 0;
	for (i = 1; i < argc; i++) {
		char *end;
		unsigned long v;
		if (!strcmp(argv[i], "--dry-run")) {
			o.dry_run = 1;
			continue;
		}
		if (!strcmp(argv[i], "--queues") || !strcmp(argv[i], "--interrupts")) {
			if (i + 1 >= argc)
				return fail("%s needs a number", argv[i]);
			v = strtoul(argv[i + 1], &end, 10);
			if (*end || v == 0 || v > 0xffff)
				return fail("%s %s: want a number from 1 to 65535", argv[i], argv[i + 1]);
			*(argv[i][2] == 'q' ? &o.queues : &o.irqs) = (unsigned)v;
			i++;
			continue;
		}
		switch (pos++) {
		case 0:
			if (strcmp(argv[i], "setup") && strcmp(argv[i], "undo"))
				return fail("unknown command '%s': setup or undo", argv[i]);
			o.setup = !strcmp(argv[i], "setup");
			break;
		case 1: {
			unsigned dom, bus, dev, fn;
			char tail;
			if (strlen(argv[i]) != 12 || sscanf(argv[i], "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &tail) != 4)
				return fail("PF '%s': want a PCI address dddd:bb:dd.f", argv[i]);
			snprintf(o.pf, sizeof(o.pf), "%s", argv[i]);
			break;
		}
		case 2:
		case 3:
			v = strtoul(argv[i], &end, 10);
			if (*end || v == 0 || v > (pos == 3 ? 0xffffu : 0xfffffffeu))
				return fail("%s '%s': want a number from 1", pos == 3 ? "VF" : "NSID", argv[i]);
			*(pos == 3 ? &o.vfn : &o.nsid) = (unsigned)v;
			break;
		default:
			return fail("unexpected argument '%s'", argv[i]);
		}
	}
	if (pos != 4)
		return fail("want a command, a PF, a VF and a NSID");
	if (!o.setup && (o.queues || o.irqs))
		return fail("--queues and --interrupts belong to setup");
	return 0;
}

int main(int argc, char **argv)
{
	nvme_root_t r;
	nvme_host_t h;
	nvme_subsystem_t sys;
	nvme_ctrl_t c, pf = NULL;
	struct nvme_id_ctrl id;
	struct sriov_state *s;
	char dev[64];
	int rc, fd;
	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (parse(argc, argv)) {
		usage(stderr);
		return 2;
	}
	if (!(r = nvme_create_root(stderr, 3 /* LOG_ERR */)))
		return fail("libnvme: %s", strerror(errno));
	nvme_scan_topology(r, NULL, NULL);
	nvme_for_each_host(r, h) nvme_for_each_subsystem(h, sys) nvme_subsystem_for_each_ctrl(sys, c)
	{
		const char *a = nvme_ctrl_get_address(c), *t = nvme_ctrl_get_transport(c);
		if (!pf && a && t && !strcmp(t, "pcie") && !strcmp(a, o.pf))
			pf = c;
	}
	if (!pf) {
		nvme_free_tree(r);
		return fail("%s is not an NVMe controller on the kernel's nvme driver: the PF stays with the kernel (giouring-info "
			    "lists those)",
			    o.pf);
	}
	snprintf(dev, sizeof(dev), "/dev/%s", nvme_ctrl_get_name(pf));
	if ((fd = nvme_ctrl_get_fd(pf)) < 0 || nvme_identify_ctrl(fd, &id)) {
		rc = fail("%s: Identify Controller failed: %s (run as root)", dev, strerror(errno));
		nvme_free_tree(r);
		return rc;
	}
	if (!(s = malloc(sizeof(*s)))) {
		nvme_free_tree(r);
		return fail("no memory");
	}
	sriov_read(o.pf, fd, &id, s);
	if (s->total_vfs <= 0)
		rc = fail("%s has no SR-IOV virtual functions (no sriov_totalvfs, or 0)", o.pf);
	else if (!s->virt_mgmt)
		rc = fail("%s has no Virtualization Management: its VFs' controllers cannot be given queues or set online", o.pf);
	else if (o.vfn > (unsigned)s->total_vfs)
		rc = fail("%s has %d VFs; VF %u does not exist", o.pf, s->total_vfs, o.vfn);
	else
		rc = o.setup ? setup(s, dev) : undo(s, dev);
	free(s);
	nvme_free_tree(r);
	return rc ? 1 : 0;
}
