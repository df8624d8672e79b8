/* Opening and closing a context: the target URI, the controller behind it (the software target
 * with its CPU executor over a file or memory, or a PCI controller through VFIO: ../vfio/), its
 * bring-up (ctrl.c), and everything undone in reverse at close. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <giouring/proto/prep.h>
#include <giouring/ring/clock.h>

#include "../cuda/cudart.h"
#include "../uri/uri.h"
#include "ctx.h"

/* What a URI asks of the context. */
struct params {
	uint64_t size; /* 0: the file's own size */
	uint32_t lba, sgls, mdts, queues, threads, mqes, ns, idle_us;
	int direct; /* GIO__DIRECT_* */
	int dptr;   /* GIO__DPTR_* */
	int iommu;  /* GIO__IOMMU_*, nvme-pci */
	int check;  /* check=1: checked submission on every queue pair */
	int path;   /* GIO_GPU_PATH_*: how GPU memory reaches the controller */
	double model[4]; /* software target: the timing model (gio__uri_model()) */
	int modelled;
};

enum target_kind { TARGET_TEMP_FILE, TARGET_FILE, TARGET_MEM, TARGET_PCI };

static const char *const dptr_choices[] = {"auto", "prp", NULL};
static const char *const iommu_choices[] = {"auto", "iommufd", "type1", NULL};
static const char *const direct_choices[] = {"auto", "0", "1", NULL};
static const char *const exec_choices[] = {"cpu", "gpu", NULL};
static const char *const path_choices[] = {"auto", "p2p", "staged", NULL}; /* GIO_GPU_PATH_* order */

/* The parameters of @kind from @u, checked; gio__uri_done() refuses any other. */
static int parse_params(struct gio__uri *u, enum target_kind kind, struct params *p, const char *what)
{
	uint64_t v;
	int rc, i;
	if ((rc = gio__uri_u32(u, "ns", 1, 0xfffffffeu, "a namespace ID from 1 to 0xfffffffe", &p->ns)) < 0)
		return rc;
	if ((rc = gio__uri_choice(u, "dptr", dptr_choices, "auto (SGLs where the controller has them) or prp", &i)) < 0)
		return rc;
	if (rc)
		p->dptr = i == 1 ? GIO__DPTR_PRP : GIO__DPTR_AUTO;
	if ((rc = gio__uri_u64(u, "check", 0, 1, "0, or 1 (refuse data pointers outside registered memory: -EFAULT)", &v)) < 0)
		return rc;
	if (rc)
		p->check = (int)v;
	if ((rc = gio__uri_choice(u, "path", path_choices,
				  "auto (peer-to-peer where GPU memory can be registered, else staged), p2p or staged", &i)) < 0)
		return rc;
	if (rc)
		p->path = i;
	if (kind == TARGET_PCI) {
		if ((rc = gio__uri_choice(u, "iommu", iommu_choices, "auto, iommufd or type1", &i)) < 0)
			return rc;
		if (rc)
			p->iommu = i == 1 ? GIO__IOMMU_IOMMUFD : i == 2 ? GIO__IOMMU_TYPE1 : GIO__IOMMU_AUTO;
		return gio__uri_done(u, what);
	}
	/* The software target. */
	if ((rc = gio__uri_choice(u, "exec", exec_choices, "cpu or gpu", &i)) < 0)
		return rc;
	if (rc && i == 1)
		return gio__fail(-EOPNOTSUPP, "giouring: exec=gpu: the GPU executor is opened with gio_gpu_target_open() "
				 "(giouring/target/gpu_target.h, library giouring::gpu)");
	if ((rc = gio__uri_u64(u, "size", 0, UINT64_MAX, NULL, &p->size)) < 0)
		return rc;
	if (rc && p->size == 0)
		return gio__fail(-EINVAL, "giouring: size=0: the namespace needs at least one block (e.g. size=64M)");
	if ((rc = gio__uri_pow2(u, "lba", 512, 65536, &v)) < 0)
		return rc;
	if (rc)
		p->lba = (uint32_t)v;
	if ((rc = gio__uri_u32(u, "sgls", 0, 2, "0 (PRP only), 1 (SGLs) or 2 (SGLs, dword rule)", &p->sgls)) < 0 ||
	    (rc = gio__uri_u32(u, "mdts", 0, 20, "0 (no limit) to 20", &p->mdts)) < 0 ||
	    (rc = gio__uri_u32(u, "queues", 1, GIO_TGT_MAX_IO_QUEUES, NULL, &p->queues)) < 0 ||
	    (rc = gio__uri_u32(u, "threads", 1, GIO__EXEC_MAX_THREADS, NULL, &p->threads)) < 0 ||
	    (rc = gio__uri_u32(u, "mqes", 1, 65535, NULL, &p->mqes)) < 0 ||
	    (rc = gio__uri_u32(u, "idle_us", 20, 100000, "20 to 100000 (microseconds)", &p->idle_us)) < 0)
		return rc;
	if ((rc = gio__uri_model(u, p->model)) < 0)
		return rc;
	p->modelled = rc;
	if (kind != TARGET_MEM) {
		if ((rc = gio__uri_choice(u, "direct", direct_choices, "auto, 0 (page cache) or 1 (O_DIRECT, required)", &i)) < 0)
			return rc;
		if (rc)
			p->direct = i == 0 ? GIO__DIRECT_AUTO : i == 1 ? GIO__DIRECT_OFF : GIO__DIRECT_ON;
	}
	return gio__uri_done(u, what);
}

/* The software target over the backing store already opened in c->exec: registers, command
 * core, executor threads, bring-up. */
static int start_software_target(struct gio_ctx *c, const struct params *p)
{
	struct gio_tgt_config cfg;
	int rc;
	if (c->size % p->lba)
		return gio__fail(-EINVAL, "giouring: size %" PRIu64 " is not a multiple of the block size %u", c->size, p->lba);
	memset(&cfg, 0, sizeof(cfg));
	cfg.sgls = p->sgls;
	cfg.mdts = (uint8_t)p->mdts;
	cfg.lba_shift = (uint8_t)__builtin_ctz(p->lba);
	cfg.max_io_queues = (uint16_t)p->queues;
	cfg.mqes = (uint16_t)p->mqes;
	cfg.nsze = c->size / p->lba;
	/* A BAR0 a closed context left registered with CUDA first (GPU producers map it without a
	 * new registration); the cache holds one only where the runtime is loaded already. */
	{
		int e;
		c->bar = gio__pinned_get(&gio__cudart_registered, GIO__BAR_BYTES, &e);
		c->bar_registered = c->bar != NULL;
	}
	if (!c->bar)
		c->bar = aligned_alloc(4096, GIO__BAR_BYTES);
	if (!c->bar)
		return gio__fail(-ENOMEM, "giouring: no memory for registers");
	c->be.bar = c->bar;
	c->be.bar_len = sizeof(*c->bar);
	if ((rc = gio_tgt_init(&c->tgt, c->bar, &cfg, &c->map)))
		return gio__fail(rc, "giouring: invalid target configuration");
	c->tgt.copy_map = &c->dev_map; /* after gio_tgt_init, which clears the target */
	c->exec.tgt = &c->tgt;
	c->exec.idle_us = p->idle_us;
	c->exec.model.on = p->modelled;
	c->exec.model.read_gbps = p->model[0];
	c->exec.model.write_gbps = p->model[1];
	c->exec.model.mixed_gbps = p->model[2];
	c->exec.model.lat_us = p->model[3];
	if ((rc = gio__exec_start(&c->exec, (int)p->threads)))
		return rc;
	c->started = 1;
	pthread_mutex_lock(&c->lock);
	rc = gio__bring_up(c, p->ns, p->dptr);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The bring-up of a PCI controller bound to vfio-pci. An SR-IOV virtual function whose PF has
 * not made it usable fails before the bring-up touches it, and a failed bring-up of a VF says
 * which VF it is and the step its PF still owes (vfio/sriov.c). */
static int bring_up_pci(struct gio_ctx *c, const char *bdf, const struct params *p)
{
	char vf[320], msg[512];
	int rc;
	gio__sriov_probe(bdf, &c->vf);
	if ((rc = gio__sriov_unready(bdf, &c->vf)))
		return rc;
	pthread_mutex_lock(&c->lock);
	rc = gio__bring_up(c, p->ns, p->dptr);
	pthread_mutex_unlock(&c->lock);
	if (rc == 0 || !c->vf.is_vf)
		return rc;
	gio__sriov_describe(&c->vf, vf, sizeof(vf));
	snprintf(msg, sizeof(msg), "%s", gio_last_error());
	if (c->ns_inactive)
		return gio__fail(rc, "%s; %s is %s: attach the namespace to controller %u from the PF (Namespace Attachment), "
				 "e.g. giouring-sriov setup %s %u %u", msg, bdf, vf, c->cntlid, c->vf.pf, c->vf.vfn, p->ns);
	if (c->vf.entry) /* online with resources, as the PF says: the failure is the controller's own */
		return gio__fail(rc, "%s (%s is %s)", msg, bdf, vf);
	return gio__fail(rc, "%s (%s is %s: one its PF has not set online fails so; giouring-info shows its state)", msg,
			 bdf, vf);
}

/* A new directory under $TMPDIR (else /tmp) holding kv.img, removed at close. */
static int make_temp_file(struct gio_ctx *c)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(c->tmpdir, sizeof(c->tmpdir), "%s/giouring-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(c->tmpdir))
		return gio__fail(-errno, "giouring: mkdtemp %s: %s", c->tmpdir, strerror(errno));
	snprintf(c->path, sizeof(c->path), "%s/kv.img", c->tmpdir);
	c->remove_file = 1;
	return 0;
}

static int open_ctx(struct gio_ctx *c, const char *uri)
{
	struct params p = {.size = 0, .lba = 4096, .sgls = 1, .mdts = 7, .queues = 16, .threads = 2, .mqes = 4095,
			   .ns = GIO_TGT_NSID, .idle_us = 200, .direct = GIO__DIRECT_AUTO, .dptr = GIO__DPTR_AUTO,
			   .iommu = GIO__IOMMU_AUTO};
	struct gio__uri *u = malloc(sizeof(*u));
	enum target_kind kind;
	const char *loc, *what;
	int rc;
	if (!u)
		return gio__fail(-ENOMEM, "giouring: no memory to parse a URI");
	if ((rc = gio__uri_split(u, uri)))
		goto out;
	loc = u->location;
	if (loc[0] == 0) {
		kind = TARGET_TEMP_FILE;
		what = "the default target (a file in a new temporary directory)";
	} else if (!strncmp(loc, "file://", 7)) {
		kind = TARGET_FILE;
		what = "file:// targets";
	} else if (!strcmp(loc, "mem://host")) {
		kind = TARGET_MEM;
		what = "mem://host";
	} else if (!strncmp(loc, "nvme-pci://", 11)) {
		kind = TARGET_PCI;
		what = "nvme-pci:// controllers";
	} else if (!strncmp(loc, "mem://hbm", 9)) {
		rc = gio__fail(-EOPNOTSUPP, "giouring: '%s': gio_ctx_open() serves file://, mem://host and nvme-pci://; "
			       "GPU-executed targets open with gio_gpu_target_open() (giouring/target/gpu_target.h, "
			       "library giouring::gpu)", loc);
		goto out;
	} else {
		rc = gio__fail(-EINVAL, "giouring: '%s': unknown target (file:///path, mem://host, nvme-pci://dddd:bb:dd.f, "
			       "or \"\" for a file in a temporary directory)", loc);
		goto out;
	}
	if ((rc = parse_params(u, kind, &p, what)))
		goto out;
	switch (kind) {
	case TARGET_PCI:
		/* A real controller: no software target, no executor; the rest is the same path. */
		if ((rc = gio__vfio_open(loc + 11, p.iommu, &c->be)))
			goto out;
		rc = bring_up_pci(c, loc + 11, &p);
		goto out;
	case TARGET_TEMP_FILE:
		if ((rc = make_temp_file(c)))
			goto out;
		rc = gio__backing_file(&c->exec, c->path, p.size ? p.size : 64ull << 20, p.direct, p.lba, &c->size);
		break;
	case TARGET_FILE:
		if (loc[7] != '/') {
			rc = gio__fail(-EINVAL, "giouring: '%s': file URIs need an absolute path (file:///dir/file)", loc);
			goto out;
		}
		snprintf(c->path, sizeof(c->path), "%s", loc + 7);
		rc = gio__backing_file(&c->exec, c->path, p.size, p.direct, p.lba, &c->size);
		break;
	case TARGET_MEM:
		if (p.size == 0) {
			rc = gio__fail(-EINVAL, "giouring: mem://host needs size= (e.g. mem://host?size=64M)");
			goto out;
		}
		c->size = p.size;
		rc = gio__backing_mem(&c->exec, p.size);
		break;
	}
	if (rc == 0)
		rc = start_software_target(c, &p);
out:
	c->gpu_path = p.path;
	if (rc == 0 && p.check) {
		c->checked = 1;
		gio__check_setup(c);
	}
	free(u);
	return rc;
}

int gio_ctx_open(const char *uri, struct gio_ctx **out)
{
	struct gio_ctx *c;
	int rc;
	gio__clear_error();
	if (!out)
		return gio__fail(-EINVAL, "giouring: gio_ctx_open: out is NULL");
	*out = NULL;
	c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t)63); /* C11: size a multiple of the alignment */
	if (!c)
		return gio__fail(-ENOMEM, "giouring: no memory for a context");
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	c->map.regions = c->regions;
	c->dev_map.regions = c->dev_regions;
	c->exec.fd = -1;
	c->exec.hang_pipe[0] = c->exec.hang_pipe[1] = -1;
	rc = open_ctx(c, uri);
	if (rc) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", gio_last_error()); /* close may overwrite it */
		gio_ctx_close(c);
		return gio__fail(rc, "%s", msg);
	}
	*out = c;
	return 0;
}

void gio_ctx_info(const struct gio_ctx *c, struct gio_ns_info *info)
{
	static const struct gio_ns_info none;
	if (info)
		*info = c ? c->info : none;
}

const struct gio_dptr_caps *gio_ctx_dptr_caps(const struct gio_ctx *c)
{
	return c ? &c->caps : NULL;
}

const char *gio_ctx_iommu(const struct gio_ctx *c)
{
	return c && c->be.iommu ? c->be.iommu : "none";
}

int gio_ctx_inject(struct gio_ctx *c, const struct gio_fault *f)
{
	static const struct gio_fault none;
	gio__clear_error();
	if (!c)
		return gio__fail(-EINVAL, "giouring: gio_ctx_inject: no context");
	if (!c->started)
		return gio__fail(-EOPNOTSUPP, "giouring: fault injection needs the software target (file:// or mem://host)");
	if (f && f->hang_nth) {
		if (c->exec.kind != GIO__BACKING_FILE)
			return gio__fail(-EOPNOTSUPP, "giouring: hang_nth needs a file target: a memory store has nothing to wait for");
		pthread_mutex_lock(&c->lock);
		if (c->exec.hang_pipe[0] < 0 && pipe2(c->exec.hang_pipe, O_CLOEXEC)) {
			const int err = errno;
			pthread_mutex_unlock(&c->lock);
			return gio__fail(-err, "giouring: hang_nth: pipe2: %s", strerror(err));
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_lock(&c->exec.fault_lock);
	c->exec.fault = f ? *f : none;
	if (c->exec.fault.fail_nth)
		c->exec.fault.fail_nth += c->exec.io_seen;
	if (c->exec.fault.drop_nth)
		c->exec.fault.drop_nth += c->exec.io_seen;
	if (c->exec.fault.hang_nth)
		c->exec.fault.hang_nth += c->exec.io_seen;
	pthread_mutex_unlock(&c->exec.fault_lock);
	__atomic_store_n(&c->exec.stall_until_ns, f && f->stall_ms ? gio_host_now_ns() + f->stall_ms * 1000000ull : 0,
			 __ATOMIC_RELAXED);
	if (f && f->stall_ms) {
		/* A pass already past its stall check would still fetch the next doorbell: wait for
		 * every pass in flight to end, so the stall holds for whatever is submitted after. */
		const int rc = gio__exec_quiesce(&c->exec, 1000000000ull);
		if (rc)
			return rc;
		gio__exec_resume(&c->exec);
	}
	return 0;
}

/* Delete the I/O queues (SQ before its CQ), as the specification asks of a host before
 * shutdown, then shut the controller down; best effort with a short deadline per command, since
 * the shutdown stops the controller either way and its status is what close reports. */
static int shut_down(struct gio_ctx *c)
{
	uint32_t i;
	for (i = GIO__MAX_QPS; i >= 1; i--) {
		struct gio_sqe sqe;
		struct gio__qp_mem *m = c->qps[i];
		if (!m)
			continue;
		if (m->sq_on && (gio_prep_delete_sq(&sqe, (uint16_t)i) ||
				 gio_qp_submit_wait(&c->admin, &sqe, GIO__CLOSE_ADMIN_TIMEOUT_NS, NULL, NULL) == -ETIME))
			break;
		if (m->cq_on && (gio_prep_delete_cq(&sqe, (uint16_t)i) ||
				 gio_qp_submit_wait(&c->admin, &sqe, GIO__CLOSE_ADMIN_TIMEOUT_NS, NULL, NULL) == -ETIME))
			break;
	}
	gio__clear_error(); /* a refused delete is not the close's failure */
	gio__reg_write(c, GIO_REG_CC, gio__reg_read(c, GIO_REG_CC) | GIO_SET(CC_SHN, GIO_CC_SHN_NORMAL));
	return gio__wait_csts(c, GIO_CSTS_SHST_MASK << GIO_CSTS_SHST_SHIFT, GIO_CSTS_SHST_COMPLETE << GIO_CSTS_SHST_SHIFT,
			      gio__cap_timeout_ns(c->cap), "shutdown complete (CSTS.SHST)");
}

static void free_queues(struct gio_ctx *c)
{
	uint32_t i;
	for (i = 1; i <= GIO__MAX_QPS; i++)
		if (c->qps[i])
			gio__qp_free(c->qps[i]);
}

int gio_ctx_close(struct gio_ctx *c)
{
	int rc = 0, rc2, stuck = 0, sync = 1;
	gio__clear_error();
	if (!c)
		return 0;
	gio__proxy_stop(c); /* no doorbell writes to queues being deleted */
	if (c->enabled)
		rc = shut_down(c);
	if (c->started && (rc2 = gio__exec_stop(&c->exec, GIO__CLOSE_EXEC_TIMEOUT_NS, &stuck))) {
		/* The backing store did not answer: its failure is the close's (the shutdown's
		 * timeout, if any, followed from it), and a store that does not answer is not
		 * flushed either. */
		rc = rc2;
		sync = 0;
		if (stuck) {
			/* Executor threads may come back from the store at any time and touch the
			 * context: none of it is freed (gio__exec_stop's message says so). */
			if (c->remove_file) {
				unlink(c->path);
				rmdir(c->tmpdir);
			}
			return rc;
		}
	}
	/* Unmaps DMA (unpinning) before the memory below is freed. */
	/* Before BAR0 is unmapped. This one waits while any kernel runs on the device
	 * (cudaHostUnregister): the mapping goes with the VFIO device right below, so it cannot
	 * wait in the pinned cache (docs/design.md, "Bounded CUDA calls"). */
	if (c->mmio_gpu_registered)
		(void)gio__cudart()->host_unregister(c->be.bar);
	if (c->be.close)
		c->be.close(c->be.priv);
	rc2 = gio__backing_close(&c->exec, c->path, sync);
	if (rc == 0)
		rc = rc2;
	if (c->remove_file) {
		unlink(c->path);
		rmdir(c->tmpdir);
	}
	free_queues(c);
	gio__check_free(c);
	free(c->admin_sq);
	free(c->admin_cq);
	free(c->admin_slots);
	free(c->idbuf);
	/* A registered BAR0 goes to the pinned cache, registered: cudaHostUnregister waits while any
	 * kernel runs on the device (gio_cuda_trim() releases it; a later context reuses it). */
	if (!c->bar_registered) {
		free(c->bar);
	} else if (gio__pinned_put(c->bar)) { /* not in the cache's records: cannot happen, but never free it registered */
		(void)gio__cudart()->host_unregister(c->bar);
		free(c->bar);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
	return rc;
}
