/* A host library context (struct gio_ctx) and what its files share: open.c (open and close),
 * ctrl.c (registers, admin commands, controller bring-up), memory.c (DMA registration and the
 * memory providers), queues.c (I/O queue pairs), proxy.c (the doorbell proxy thread). */
#ifndef GIOURING_SRC_CTX_CTX_H
#define GIOURING_SRC_CTX_CTX_H

#include <pthread.h>
#include <stdint.h>

#include <giouring/host/ctx.h>
#include <giouring/target/core.h>

#include "../cuda/hbm.h"
#include "../exec/exec.h"
#include "../internal.h"

#define GIO__ADMIN_DEPTH 32u
/* The software target's emulated BAR0, in whole pages (cudaHostRegister takes pages). */
#define GIO__BAR_BYTES ((sizeof(struct gio_tgt_bar) + 4095) & ~(size_t)4095)
#define GIO__MAX_REGIONS 1024u
#define GIO__MAX_QPS GIO_TGT_MAX_IO_QUEUES
#define GIO__ADMIN_TIMEOUT_NS (5ull * 1000000000ull)
#define GIO__CLOSE_ADMIN_TIMEOUT_NS (500ull * 1000000ull)
/* How long close waits for the backing store to finish requests in flight (gio__exec_stop). */
#define GIO__CLOSE_EXEC_TIMEOUT_NS (2ull * 1000000000ull)
/* Bound of a copy-engine batch, and of zeroing queues in GPU memory. */
#define GIO__DEVCOPY_TIMEOUT_NS (10ull * 1000000000ull)
/* Bound of waiting for the executor's threads to finish their passes (unregistration): longer
 * than a copy-engine batch, which a pass may be waiting for. */
#define GIO__QUIESCE_TIMEOUT_NS (15ull * 1000000000ull)

/* One I/O queue pair and its memory. */
struct gio__qp_mem {
	struct gio_qp qp;
	void *sq, *cq, *slots;
	uint64_t sq_addr, cq_addr; /* bus addresses */
	int pinned;
	/* The controller has, or may have (a create or delete that timed out), the SQ / the CQ:
	 * what gio_ctx_qp_destroy() and close still have to delete. */
	uint8_t sq_on, cq_on;
	/* Regions to unregister before the memory is freed: sq and cq (plain and pinned memory),
	 * or sq alone covering both (GIO_CTX_QP_HBM). */
	uint8_t sq_reg, cq_reg;
	uint8_t hbm;
	uint8_t db_taken; /* proxied doorbells taken back by a destroy: it rings them itself */
	uint32_t qid;
	void *pinned_base;         /* pinned: the one allocation holding sq, cq and slots */
	struct gio__hbm hbm_mem;   /* GIO_CTX_QP_HBM: the GPU allocation holding sq and cq */
	/* GIO_CTX_QP_DB_PROXY: the ring writes these shadow words; the proxy thread mirrors them to
	 * the controller's doorbells (hw_db), the SQ tail in [0], the CQ head in [1]. */
	uint32_t *shadow; /* shadow_host, or after the slots in pinned memory (GPU producers) */
	uint32_t shadow_host[2], mirrored[2];
	uint32_t *hw_db[2];
	uint32_t proxied; /* read by the proxy thread with acquire; cleared to take the doorbells back */
};

/* What the library knows of a host region beyond struct gio_dma_region. */
struct gio__region_meta {
	uint8_t lib;     /* the library's own (queues, Identify data): gio_ctx_unregister() refuses it */
	uint8_t from_fd; /* mapped from a file or dma-buf (gio_ctx_register_fd) */
};

struct gio_ctx {
	struct gio__backend be;
	struct gio_tgt tgt;
	struct gio_tgt_bar *bar; /* the software target's registers, or NULL */
	struct gio_dma_region regions[GIO__MAX_REGIONS];
	struct gio__region_meta region_meta[GIO__MAX_REGIONS]; /* by the index of regions[] */
	struct gio_dma_map map;
	/* Device memory (gio_ctx_register_device): the executor reaches it with copies only. */
	struct gio_dma_region dev_regions[GIO__MAX_REGIONS];
	struct gio_dma_map dev_map;
	struct gio__devcopy cuda_dc; /* the CUDA copy engine, filled at the first device region */
	int dev_ordinal;             /* GPU of every device region */
	int dc_injected;             /* gio__ctx_set_devcopy() replaced it */
	/* The software target's BAR0 (GPU producers): registered with CUDA (cudaHostRegister, or
	 * taken registered from the pinned cache at open), and whether the GPU reaches it at the
	 * CPU's address (0 untried, 1 yes, -1 no). A registered one goes back to the cache at close. */
	int bar_registered;
	int bar_mapped;
	int mmio_gpu;                /* nvme-pci BAR0 for GPU threads: 0 untried, 1 usable, -1 refused */
	int mmio_gpu_registered;     /* BAR0 is registered with CUDA (also when refused for its address) */
	int proxy_noticed;           /* the fallback to the proxy was reported once */
	char mmio_gpu_why[256];      /* why it was refused */
	pthread_mutex_t lock;        /* registration, queue creation, admin commands */
	struct gio__exec exec;
	struct gio_dptr_caps caps;
	struct gio_ns_info info;
	struct gio_qp admin;
	void *admin_sq, *admin_cq, *admin_slots, *idbuf;
	uint64_t admin_sq_addr, admin_cq_addr, idbuf_addr;
	uint64_t cap;
	/* By qid; NULL: free for gio_ctx_qp_create (the lowest free one is taken). Written under
	 * lock with release stores, read by the proxy thread with acquire loads. */
	struct gio__qp_mem *qps[GIO__MAX_QPS + 1];
	uint32_t nqps; /* the highest qid handed out so far: the proxy looks at 1..nqps */
	pthread_t proxy;
	uint32_t proxy_stop;
	uint64_t proxy_pass; /* passes the proxy thread finished (seq_cst): see gio__proxy_wait_pass */
	int proxy_started;
	char path[4096];
	char tmpdir[4000];
	int remove_file;
	uint64_t size;
	int started, enabled;
	uint16_t cntlid;          /* the controller's ID (Identify Controller) */
	int ns_inactive;          /* the bring-up found the namespace not active on this controller */
	struct gio__sriov_vf vf;  /* nvme-pci: what SR-IOV says of the function (vfio/sriov.c) */
	/* URI check=1: queue pairs check every command's data pointer (check.c). */
	int checked;
	int gpu_path;  /* GIO_GPU_PATH_* from the URI's path= */
	struct gio_qp_check check;           /* CPU producers' */
	struct gio__check_mirror *gpu_check; /* GPU producers', in pinned memory; NULL until needed */
};

/* URI dptr=: which data pointers gio_ctx_dptr_caps() lets the builders use. */
enum { GIO__DPTR_AUTO, GIO__DPTR_PRP };

/* ctrl.c */
uint32_t gio__reg_read(struct gio_ctx *c, uint32_t off);
void gio__reg_write(struct gio_ctx *c, uint32_t off, uint32_t v);
uint32_t *gio__doorbell(struct gio_ctx *c, uint64_t off);
uint16_t gio__qp_flags(const struct gio_ctx *c);
uint64_t gio__cap_timeout_ns(uint64_t cap);
int gio__wait_csts(struct gio_ctx *c, uint32_t mask, uint32_t want, uint64_t timeout_ns, const char *what);
/* One admin command, GIO__ADMIN_TIMEOUT_NS; -EIO names the command and its status. */
int gio__admin(struct gio_ctx *c, const struct gio_sqe *sqe, uint32_t *dw0);
/* The same within timeout_ns; *status receives the status field (0 unless -EIO). */
int gio__admin_within(struct gio_ctx *c, const struct gio_sqe *sqe, uint64_t timeout_ns, uint16_t *status,
		      uint32_t *dw0);
/* Reset, admin queue, enable, Identify, Number of Queues; c->lock held. */
int gio__bring_up(struct gio_ctx *c, uint32_t nsid, int dptr);

/* memory.c; c->lock held where named _locked. */
int gio__register_locked(struct gio_ctx *c, void *ptr, size_t len, uint64_t *addr);
int gio__add_region_locked(struct gio_ctx *c, void *ptr, size_t len, int fd, uint64_t off, int lib, uint64_t *addr);
/* Removes the region registered at ptr (host or device table): its IOMMU mapping, then its table
 * entry with the executor quiesced (within timeout_ns). lib_ok: the library's own memory may go
 * too. 0, -ENOENT, -EBUSY (library memory, !lib_ok), -ETIME (no quiesce) or the unmap's -errno,
 * with a message. */
int gio__remove_region_locked(struct gio_ctx *c, const void *ptr, int lib_ok, uint64_t timeout_ns);
/* Why this context cannot map files and dma-bufs, or NULL where it can. */
const char *gio__no_fd_mapping(const struct gio_ctx *c);
/* Zeroed, page-aligned memory the controller can reach; *addr receives its bus address. */
void *gio__alloc_dma(struct gio_ctx *c, size_t len, uint64_t *addr);

/* check.c */
struct gio__check_mirror;
/* Fills c->check from the controller's rules, after bring-up. */
void gio__check_setup(struct gio_ctx *c);
/* What a new queue pair checks against: *out NULL without check=1; for GPU producers (gpu) the
 * pinned mirror, made at the first use. 0, or -ENODEV with a message. c->lock held. */
int gio__check_for_qp_locked(struct gio_ctx *c, int gpu, struct gio_qp_check **out);
/* Rewrites the GPU producers' mirror after a region came or went; c->lock held. */
void gio__check_sync_locked(struct gio_ctx *c);
/* Frees the mirror (close). */
void gio__check_free(struct gio_ctx *c);

/* proxy.c */
int gio__proxy_start(struct gio_ctx *c);
void gio__proxy_stop(struct gio_ctx *c);
/* Waits, by deadline, until the proxy thread finished a whole pass begun after the call: after
 * it, the thread holds no pointer it loaded before (a qps[] entry or a proxied flag cleared
 * first). 0 at once without a proxy thread, or -ETIME with a message naming `what`. */
int gio__proxy_wait_pass(struct gio_ctx *c, uint64_t deadline, const char *what);
/* Frees a queue pair's memory and structure (close, and gio_ctx_qp_destroy() once its queues
 * and regions are gone); queues.c. */
void gio__qp_free(struct gio__qp_mem *m);

#endif
