/**
 * @file giouring/host/ctx.h
 * @brief Host library: open a target, bring its controller up, create queue pairs, register memory.
 *
 * A context owns one controller behind one target URI:
 *
 * | URI | backing store | executor |
 * | --- | --- | --- |
 * | `file:///path/kv.img?size=64M` | a file (O_DIRECT where the file system allows it) | CPU threads, io_uring |
 * | `mem://host?size=64M` | host memory | CPU threads |
 * | NULL or "" | a file of 64 MiB in a new temporary directory, removed at close | CPU threads |
 * | `nvme-pci://0000:01:00.0` | a PCI NVMe controller bound to vfio-pci (its namespace `ns`) | the controller |
 *
 * Query parameters (all optional): `size` (bytes, suffixes K M G T; required for a new file and for
 * memory), `lba` (block size, 512 to 65536, default 4096), `sgls` (0 PRP only, 1 SGLs, 2 SGLs with
 * the dword rule; default 1), `mdts` (default 7: 512 KiB), `queues` (I/O queue pairs offered,
 * default 16), `threads` (executor threads, default 2), `mqes` (largest queue size minus one,
 * default 4095), `idle_us` (software target: the longest sleep of an idle executor thread between
 * polls, 20 to 100000 microseconds, default 200; sleeps start at 20 us and double every 64 idle
 * passes up to it, about 20 ms into a quiet spell for 200: a higher ceiling spends less CPU while
 * nothing comes and adds up to that much latency to the first command after a quiet spell; 20
 * keeps the threads at 20 us sleeps, about 0.4 cores for 2 threads on a 2-core machine), `exec` (`cpu`; `gpu` gives `-EOPNOTSUPP`:
 * GPU-executed targets open with gio_gpu_target_open(), giouring/target/gpu_target.h), `ns` (the namespace to address, default 1), `dptr` (`auto`: SGLs where Identify Controller SGLS allows them, PRPs
 * otherwise; `prp`: gio_ctx_dptr_caps() reports no SGL support, so builders make PRPs), `iommu`
 * (`nvme-pci` only: `auto`, the default, takes iommufd where /dev/iommu and the device's VFIO cdev
 * exist and the legacy container otherwise; `iommufd` or `type1` demand one, and `iommufd` fails
 * with `-EOPNOTSUPP` where the kernel lacks it; gio_ctx_iommu() tells which was taken), `direct`
 * (files: `auto`, `0` page cache, `1` O_DIRECT required), `model_read_gbps`, `model_write_gbps`,
 * `model_mixed_gbps`, `model_lat_us` (software target: the SSD timing model the GPU-executed
 * targets take too, 0 to 1e6 each: every batch of commands books its bytes on the device's one
 * timeline at its fetch, and its completions wait until that transfer ends and at least the
 * latency after the fetch; mixed, by default the smaller of the two rates, where reads and
 * writes are in flight at once; a backing store slower than the model still shows), `check` (`1`: every queue pair
 * checks each command's data pointer, PRP lists and SGL segments against registered memory
 * before it reaches the ring and refuses one outside with `-EFAULT`, giouring/ring/check.h; for
 * GPU producers the region tables are mirrored in pinned memory, and the PRP lists and SGL
 * segments their commands name must be in memory the GPU can read; default `0`). Each target takes only its own
 * parameters: `nvme-pci` takes `ns`, `dptr`, `check` and `iommu` (the controller reports the rest),
 * `mem://host` all but `iommu` and `direct`. A parameter the target does not take, one given
 * twice, or a value out of range is refused with `-EINVAL` and a message naming it.
 *
 * `nvme-pci` opens the device through VFIO, either the device cdev bound to iommufd (/dev/iommu,
 * one IO address space per context; Linux 6.6+ built with CONFIG_IOMMUFD and
 * CONFIG_VFIO_DEVICE_CDEV, which Debian's kernels leave off) or the legacy container and group
 * with the TYPE1v2 IOMMU (the device and every device of its IOMMU group bound to vfio-pci;
 * `giouring-info` prints the steps). It maps
 * BAR0, and polls: no interrupts are used. Memory the controller reaches (queues, Identify data,
 * registered buffers) is pinned and mapped through the IOMMU at IOVAs the library allocates, so
 * bus addresses differ from pointers: use the address gio_ctx_register() returns. Needs root or
 * access to /dev/vfio, and a locked-memory limit (ulimit -l) above what is registered.
 *
 * The controller is brought up through its registers (CC.EN, AQA/ASQ/ACQ, CSTS.RDY with CAP.TO as
 * the deadline) and admin commands (Identify, Set Features Number of Queues, Create I/O CQ/SQ), the
 * path a real controller takes, and for `nvme-pci` the same code drives the real one. For the
 * software target bus addresses are host virtual addresses of registered memory, and the target
 * refuses anything else with Data Transfer Error; for `nvme-pci` they are IOVAs, and an address
 * outside every mapping is refused by the IOMMU (a DMA fault in the kernel log).
 *
 * Thread safety: gio_ctx_register(), gio_ctx_unregister() and gio_ctx_qp_create() may be called
 * from any thread; a queue pair may be used by many threads at once (giouring/ring/qp.h) until
 * gio_ctx_qp_destroy(), which no other thread may overlap; gio_ctx_close() last, alone.
 */
#ifndef GIOURING_HOST_CTX_H
#define GIOURING_HOST_CTX_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "../ring/qp.h"

GIO_EXTERN_C_BEGIN

/** @brief An open target and its controller (opaque). */
struct gio_ctx;

/** @brief What the context's namespace and controller offer. */
struct gio_ns_info {
	uint64_t nblocks;        /**< Namespace size in logical blocks. */
	uint32_t lba_bytes;      /**< Logical block size. */
	uint32_t sgls;           /**< Identify Controller SGLS. */
	uint64_t max_xfer_bytes; /**< Largest transfer (MDTS); 0 means no limit. */
	uint32_t page_bytes;     /**< Memory page size in use (CC.MPS). */
	uint32_t max_queue_entries; /**< CAP.MQES + 1. */
	uint32_t io_queues;      /**< I/O queue pairs granted. */
	uint32_t nsid;           /**< The namespace to address. */
};

/** @brief Faults the software target injects, for tests (all zero: none). */
struct gio_fault {
	uint64_t fail_nth;   /**< Fail the Nth I/O command (1-based) from now on, once. */
	uint16_t fail_status; /**< With this status field (e.g. GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ)). */
	uint16_t rsvd;       /**< Zero. */
	uint32_t delay_us;   /**< Delay every I/O completion by this much. */
	uint64_t drop_nth;   /**< Never complete the Nth I/O command (1-based) from now on. */
	/** Ignore doorbells for this long, starting now: gio_ctx_inject() returns once no executor
	 *  pass begun before it is still fetching (-ETIME after a second if one is held up in the
	 *  backing store; the stall is set either way). */
	uint32_t stall_ms;
	uint32_t rsvd2;      /**< Zero. */
	/** File targets: the Nth I/O command (1-based) from now on never comes back from the backing
	 *  store, as on a file system that stopped answering: its read, write or flush becomes an
	 *  io_uring read of a pipe nobody writes; a Write Zeroes (a synchronous write) blocks its
	 *  executor thread in a read of that pipe. For gio_ctx_close()'s bounds. */
	uint64_t hang_nth;
};

/**
 * @brief Opens a target and brings its controller up.
 * @param uri  the target (table above), or NULL / "" for a temporary file.
 * @param out  receives the context.
 * @return 0, or `-EINVAL` (bad URI or parameter; the message says which, see gio_last_error()),
 *         `-ENOMEM`, `-errno` of a failed file operation, `-ETIME` (controller not ready within
 *         CAP.TO), `-EIO` (an admin command failed; the message names its NVMe status),
 *         `-EOPNOTSUPP` (a URI scheme this build does not serve, `nvme-pci` on an architecture
 *         other than x86-64 and aarch64, or a controller needing pages above 4 KiB), `-ENODEV` (no such PCI device, no IOMMU group, or namespace @p ns
 *         absent or inactive), `-EBUSY` (the device is not bound to vfio-pci, or its IOMMU group
 *         is not viable), or `-errno` of a failed VFIO call (the message names it).
 *
 * Any host thread.
 */
int gio_ctx_open(const char *uri, struct gio_ctx **out);

/**
 * @brief Deletes the I/O queues, shuts the controller down (CC.SHN, waiting for CSTS.SHST) and
 * releases everything.
 * @param ctx  the context, or NULL.
 * @return 0, or `-ETIME` when the shutdown did not complete within CAP.TO or the software
 *         target's backing store did not answer (below), or `-errno` of the file's final flush
 *         (the data written before is then not known to be stable). The message says which.
 *
 * One thread, after every other use has ended. Data written before close is read back by a later
 * context on the same file or controller. Queue deletion is best effort (500 ms per command):
 * the shutdown that follows stops the controller either way, and its result is what is returned.
 *
 * Bounded: the software target's executor threads wait for the backing store in slices of at
 * most 100 ms. Requests still in it 2 s after the shutdown (which such a request holds up too,
 * for its own bounds) are abandoned: close returns `-ETIME` and does not flush the file; their
 * bounce buffers stay allocated, and the memory those commands named may still be written when
 * the store answers (the kernel holds the requests), so keep it. A thread that has not ended a
 * second later is inside a call that does not return (a synchronous write, Write Zeroes, into a
 * file system that stopped answering): close returns `-ETIME` and frees none of the context
 * (registers, queues, executor and backing store state), since that thread may come back and
 * touch any of it. Either way close returns within about 5 s on a software target.
 *
 * No CUDA call of close waits for kernels running on the device, with one exception: pinned
 * queue memory, the copy engine's staging and a software target's registers registered for GPU
 * producers go to the process's pinned cache (gio_cuda_trim()), and HBM queues are released
 * with cudaFreeAsync; but `nvme-pci` BAR0 registered for direct GPU doorbells is unregistered
 * (cudaHostUnregister, which waits while any kernel runs) before the device is closed, since the
 * mapping goes with it. Close such a context when no kernel runs.
 */
int gio_ctx_close(struct gio_ctx *ctx);

/**
 * @brief Describes the namespace and the controller's rules.
 * @param ctx   the context, or NULL.
 * @param info  receives the description: all zero for a NULL @p ctx (no namespace, no queues:
 *              nothing a caller can act on); NULL does nothing.
 *
 * Any thread.
 */
void gio_ctx_info(const struct gio_ctx *ctx, struct gio_ns_info *info);

/**
 * @brief The controller's data pointer rules, for gio_sgl_build() and gio_prp_build().
 * @param ctx  the context, or NULL.
 * @return the rules (SGLS, page size, MDTS), valid until gio_ctx_close(); NULL for a NULL @p ctx.
 *
 * Any thread.
 */
const struct gio_dptr_caps *gio_ctx_dptr_caps(const struct gio_ctx *ctx);

/**
 * @brief Registers memory the controller may transfer to and from.
 * @param ctx   the context.
 * @param ptr   start of the memory.
 * @param len   its length, at least 1.
 * @param addr  receives the bus address of @p ptr (use it in data pointers), or NULL.
 * @return 0, `-EINVAL` (NULL, empty, or overlapping a registered region), `-ENOSPC` (the region
 *         table or the IOVA space is full), or for `nvme-pci` `-errno` of VFIO_IOMMU_MAP_DMA or
 *         IOMMU_IOAS_MAP (`-ENOMEM` often means the locked-memory limit).
 *
 * Any thread. Registration lasts until gio_ctx_unregister() of @p ptr or the context closes.
 */
int gio_ctx_register(struct gio_ctx *ctx, void *ptr, size_t len, uint64_t *addr);

/**
 * @brief Removes a region registered by gio_ctx_register(), gio_ctx_register_device(),
 * gio_ctx_register_ex() or gio_ctx_register_fd().
 * @param ctx  the context.
 * @param ptr  the pointer the region was registered with (its first byte), as given to the
 *             register call: every one of them takes it, whatever the bus address became (an
 *             IOVA on `nvme-pci`, the pointer itself on a software target), and it is what the
 *             program frees afterwards.
 * @return 0; `-EINVAL` for a NULL @p ctx; `-ENOENT` when no region starts at @p ptr (the message
 *         says so when @p ptr lies inside one); `-EBUSY` for the library's own queue or Identify
 *         memory (gio_ctx_qp_destroy() releases a queue pair's); `-ETIME` when the software
 *         target's executor threads did not finish their passes within 15 s (a command still in
 *         the backing store; the region stays registered); for `nvme-pci` `-errno` of
 *         VFIO_IOMMU_UNMAP_DMA or IOMMU_IOAS_UNMAP (the region stays registered). Each with a
 *         message (gio_last_error()).
 *
 * Any thread. The region's bus addresses stop being valid: on `nvme-pci` the IOMMU mapping is
 * removed (unpinning the memory, releasing a dma-buf's reference) and its IOVA range is free for
 * later registrations; the software target takes it out of its tables while every executor
 * thread is between commands, so a command that names the region afterwards completes with Data
 * Transfer Error, and none touches the memory. Commands in flight that name the region must end
 * first: on `nvme-pci` a controller's DMA to the unmapped range is refused by the IOMMU (a fault
 * in the kernel log; the controller reports what it reports: QEMU's completes with success and
 * moves no data), so free the memory only after those commands completed.
 */
int gio_ctx_unregister(struct gio_ctx *ctx, const void *ptr);

/**
 * @brief Registers GPU memory (a device pointer) for data pointers of the software target.
 * @param ctx      the context (`file://`, `mem://host` or the temporary file).
 * @param dev_ptr  start of the memory: from cudaMalloc (or any allocation that
 *                 cudaPointerGetAttributes reports as device memory), on one GPU per context.
 * @param len      its length, at least 1.
 * @param addr     receives the bus address, which is @p dev_ptr itself; or NULL.
 * @return 0, `-EINVAL` (NULL, empty, wrapping, overlapping a registered region, not device
 *         memory, or on another GPU than earlier device regions), `-ENOSPC` (region table full),
 *         `-ENODEV` (the CUDA runtime cannot be loaded or reports no GPU; the message says which),
 *         a CUDA error of the copy engine's streams or pinned staging as gio_cuda_errno() maps
 *         it, and for `nvme-pci` as gio_ctx_register_ex() with GIO_MEM_HBM (a dma-buf of the range
 *         through iommufd; the address is then an IOVA, not @p dev_ptr).
 *
 * The CPU executor never dereferences this memory. Commands whose data segments lie in it move
 * their data with cudaMemcpyAsync on a stream of the executor thread: a file target reads (or
 * writes) through a pinned bounce buffer, a memory target copies straight from (or into) its
 * backing store. All copies of one fetched batch (one doorbell's worth of commands) are enqueued,
 * then waited for once (cudaStreamQuery against a 10 s deadline), and only then are the batch's
 * completions posted, so a completion never precedes its data. A copy that fails or misses the
 * deadline gives its command Data Transfer Error. Queues, PRP lists and SGL segments must stay
 * in host memory: a command that points them into device memory gets Data Transfer Error.
 *
 * A kernel that waits on the GPU for this data (gio_kv_wait_layer(), say) while the copies run
 * can hold them back: CUDA maps every stream onto one of CUDA_DEVICE_MAX_CONNECTIONS hardware
 * queues (8 unless the environment says otherwise), and a copy queued behind that waiting kernel
 * in a shared queue does not start until the kernel ends. Measured on the H200 with four such
 * targets (tests/gpu/test_gpu_kv_layer.cu): the copies missed their deadline with the default of
 * 8 and with 1, and completed with 32. Set CUDA_DEVICE_MAX_CONNECTIONS=32 in the environment
 * before the process's first CUDA call. Only this CPU-executed stand-in copies with CUDA streams:
 * a real controller's DMA and the GPU-executed targets (`exec=gpu`, `mem://hbm`) do not.
 *
 * Any thread. Registration lasts until gio_ctx_unregister() or the context closes; free the
 * memory after that.
 */
int gio_ctx_register_device(struct gio_ctx *ctx, void *dev_ptr, size_t len, uint64_t *addr);

/** @name Memory kinds for gio_ctx_register_ex()
 * @{ */
#define GIO_MEM_HOST 0u /**< Host memory (pageable or pinned): what gio_ctx_register() takes. */
#define GIO_MEM_HBM 1u  /**< GPU memory (a device pointer): copied by the software target's CPU executor; needs a DMA-address provider on `nvme-pci`. */
/** @} */

/**
 * @brief Registers memory of a given kind the controller may transfer to and from.
 * @param ctx   the context.
 * @param ptr   start of the memory (a device pointer for GIO_MEM_HBM).
 * @param len   its length, at least 1.
 * @param kind  GIO_MEM_HOST or GIO_MEM_HBM.
 * @param addr  receives the bus address of @p ptr, or NULL.
 * @return as gio_ctx_register() for GIO_MEM_HOST; as gio_ctx_register_device() for GIO_MEM_HBM
 *         on a software target. GIO_MEM_HBM on `nvme-pci` needs the bus address of GPU memory:
 *         the library asks the CUDA driver for a dma-buf of the range
 *         (cuMemGetHandleForAddressRange, BAR1 mapping) and imports it with gio_ctx_register_fd().
 *         `-EINVAL` for an unknown @p kind, for @p ptr or @p len not multiples of the page, or for
 *         memory the CUDA driver does not know; `-EOPNOTSUPP` where any step is missing, with
 *         gio_last_error() naming it: the context uses the type1 container (no iommufd), no CUDA
 *         driver, a driver that exports no dma-buf (proprietary kernel modules), or a kernel
 *         whose iommufd cannot pin the GPU driver's dma-buf (Linux 7.3 pins only VFIO-exported
 *         BARs); other `-errno` as gio_ctx_register_fd().
 *
 * Any thread. Nothing is mapped on failure. The GPU path is built and its refusals are tested;
 * no machine this project runs on can import a GPU dma-buf yet, so the success path has only
 * been exercised with a peer PCI BAR (tests/qemu: a VFIO-exported BAR of a second controller).
 */
int gio_ctx_register_ex(struct gio_ctx *ctx, void *ptr, size_t len, uint32_t kind, uint64_t *addr);

/**
 * @brief Registers the memory behind a file or dma-buf descriptor (`nvme-pci` with iommufd).
 * @param ctx     the context.
 * @param fd      a dma-buf (a GPU driver's, a VFIO-exported PCI BAR) or a memfd; the caller keeps
 *                it and may close it after the call (the mapping holds its own reference).
 * @param offset  first byte of @p fd to map, a multiple of the page.
 * @param len     bytes to map, a multiple of the page.
 * @param ptr     the address the program knows this memory by (a GPU pointer, an mmap of @p fd,
 *                the BAR mapping): recorded for the overlap check, never dereferenced.
 * @param addr    receives the bus address of byte @p offset, or NULL.
 * @return 0; `-EOPNOTSUPP` on a software target, on a type1 context (only iommufd maps files), on
 *         a kernel without IOMMU_IOAS_MAP_FILE (before 6.13) or whose iommufd cannot pin this
 *         dma-buf's exporter; `-EINVAL` (misaligned, empty, overlapping a registered region, or a
 *         file that is neither a memfd nor on hugetlbfs), `-EBADF`, `-ENOSPC`; the message names
 *         the kernel release and its errno.
 *
 * Any thread. The mapping lasts until gio_ctx_unregister() of @p ptr or the context closes:
 * keep the memory and its exporter (the GPU allocation, the VFIO device) alive until then.
 */
int gio_ctx_register_fd(struct gio_ctx *ctx, int fd, uint64_t offset, size_t len, void *ptr, uint64_t *addr);

/**
 * @brief How the context reaches the IOMMU.
 * @param ctx  the context, or NULL.
 * @return "iommufd" or "type1" for `nvme-pci`, "none" for software targets (and a NULL context).
 */
const char *gio_ctx_iommu(const struct gio_ctx *ctx);

/** @brief gio_ctx_qp_create_ex() flag: queue memory in pinned host memory mapped into the GPU
 *  (cudaHostAlloc with cudaHostAllocMapped), for rings that GPU threads fill. On a software
 *  target the emulated doorbells are registered with the GPU too (cudaHostRegister, once), so
 *  that GPU threads may use a device-memory copy of the returned struct gio_qp as it is (take
 *  the copy before any use, and then use the queue pair from the GPU alone). On `nvme-pci` the
 *  doorbells are direct where the GPU may write BAR0, else proxied (see GIO_CTX_QP_DB_PROXY).
 *  The pinned memory comes from, and goes back to, the process's cache (gio_cuda_trim()): no
 *  call on the way waits for kernels running on the device. */
#define GIO_CTX_QP_PINNED 1u

/**
 * @brief gio_ctx_qp_create_ex() flag (`nvme-pci` only): doorbells through a proxy thread.
 *
 * Doorbell modes of a real controller: *direct* has the ring's producers write the MMIO doorbell
 * themselves; *proxy* has them write shadow words in host memory (release stores) that one CPU
 * thread per context mirrors to the MMIO doorbells, one write per change. Proxy is for producers
 * that cannot write MMIO: GPU threads where the GPU driver refuses to map BAR0 for them. It costs
 * a CPU thread that polls (it backs off to yielding when idle) and the latency of one hop.
 *
 * Without either flag: CPU producers use direct doorbells; GPU producers (GIO_CTX_QP_PINNED) use
 * direct doorbells where BAR0 can be registered with the GPU as I/O memory
 * (cudaHostRegister with cudaHostRegisterIoMemory, at the same address for the GPU), and the
 * proxy otherwise, with a notice on stderr that names the refusal (recent open GPU kernel modules
 * refuse it). gio_ctx_qp_doorbells() tells which a queue pair got.
 */
#define GIO_CTX_QP_DB_PROXY 2u

/**
 * @brief gio_ctx_qp_create_ex() flag (`nvme-pci` only): direct doorbells or nothing. With
 * GIO_CTX_QP_PINNED, creation fails with `-EOPNOTSUPP` (and the reason) where GPU threads cannot
 * write BAR0, instead of falling back to the proxy.
 */
#define GIO_CTX_QP_DB_DIRECT 4u

/**
 * @brief gio_ctx_qp_create_ex() flag (`nvme-pci` with iommufd only): the SQ and CQ in GPU memory.
 *
 * The queues are allocated with cudaMallocAsync on a non-blocking stream of the queue pair, on
 * the calling thread's current GPU, zeroed there, and released at destroy with cudaFreeAsync on
 * it, so that neither waits for kernels running on the device (a runtime older than CUDA 11.2
 * has neither: cudaMalloc then, and cudaFree, which does wait, with a notice on stderr); and
 * mapped for the controller like GIO_MEM_HBM data (a dma-buf of the range from the CUDA driver,
 * imported with IOMMU_IOAS_MAP_FILE): GPU producers then write SQEs and read CQEs in HBM, and the
 * controller reaches both across PCIe. The command slots and the proxy's shadow doorbells stay
 * in pinned host memory, as with GIO_CTX_QP_PINNED, whose doorbell rules apply. Use the queue
 * pair from the GPU alone (take a device copy of the struct first): the CPU cannot read its rings.
 * Refused with `-EOPNOTSUPP` on a software target (the GPU-executed target serves HBM rings), on a
 * type1 context and wherever the dma-buf cannot be imported (the message names the step), and
 * with `-ENODEV` where the CUDA runtime is missing. Built and its refusals tested; the success
 * path needs a GPU, VFIO and a kernel that imports the GPU driver's dma-bufs, which no machine
 * here has.
 */
#define GIO_CTX_QP_HBM 8u

/**
 * @brief Creates an I/O queue pair (Create I/O CQ, then Create I/O SQ).
 * @param ctx    the context.
 * @param depth  entries of the SQ and CQ, a power of two from 2 to CAP.MQES + 1.
 * @param qp     receives the queue pair, owned by the context until gio_ctx_qp_destroy() or
 *               gio_ctx_close().
 * @return 0, `-EINVAL` (depth), `-EBUSY` (every granted queue pair is in use), `-ENOMEM`,
 *         `-EIO` (the controller refused; gio_last_error() names the status), `-ETIME`.
 *
 * Any thread. The queue identifier is the lowest one free: destroyed queue pairs give theirs
 * back. A failed creation leaves nothing on the controller and gives memory and identifier back,
 * unless the controller did not answer (`-ETIME`): then both stay reserved until close.
 */
int gio_ctx_qp_create(struct gio_ctx *ctx, uint32_t depth, struct gio_qp **qp);

/**
 * @brief Creates an I/O queue pair with a choice of queue memory.
 * @param ctx    the context.
 * @param depth  entries of the SQ and CQ, a power of two from 2 to CAP.MQES + 1.
 * @param flags  0 for plain host memory and direct doorbells, or GIO_CTX_QP_PINNED or
 *               GIO_CTX_QP_HBM, and at most one of GIO_CTX_QP_DB_PROXY and GIO_CTX_QP_DB_DIRECT.
 * @param qp     receives the queue pair, owned by the context.
 * @return as gio_ctx_qp_create(), plus `-ENODEV` for GIO_CTX_QP_PINNED where the CUDA runtime
 *         cannot be loaded or reports no GPU (the message says which), a CUDA error of the
 *         pinned allocation or the doorbells' registration as gio_cuda_errno() maps it
 *         (`-ENOMEM` where pinned memory runs out), `-EINVAL` for an
 *         unknown flag or both doorbell flags, and `-EOPNOTSUPP` for a doorbell flag on a
 *         software target (its doorbells are memory) or GIO_CTX_QP_DB_DIRECT where GPU threads
 *         cannot write BAR0 (the message says why); GIO_CTX_QP_HBM as documented there.
 *
 * Any thread. The CUDA runtime is loaded at run time only when pinned memory is asked for, so the
 * host library has no link-time dependency on CUDA.
 */
int gio_ctx_qp_create_ex(struct gio_ctx *ctx, uint32_t depth, uint32_t flags, struct gio_qp **qp);

/** @brief How one command of a queue pair ended, as gio_ctx_qp_destroy() reports it. */
struct gio_qp_outcome {
	uint16_t cid;    /**< The command's identifier (its SQ slot, giouring/ring/qp.h). */
	uint16_t status; /**< Its status field (gio_status_str()): 0, an NVMe error, or Command Aborted due to SQ Deletion (SCT 0, SC 08h). */
	uint32_t dw0;    /**< Completion Dword 0; 0 where none was posted. */
	uint8_t posted;  /**< 1: the controller posted this completion. 0: it posted none before its Delete I/O Submission Queue completed; the NVMe specification has the deletion abort every command it did not complete and lets a controller do so without a completion (QEMU 7.2 posts none for commands it had not fetched), so @p status is Command Aborted due to SQ Deletion. */
	uint8_t rsvd[3]; /**< Zero. */
	uint64_t user_data; /**< The user data it was put with (gio_qp_put()). */
};

/** @brief Receives one outcome of gio_ctx_qp_destroy(); called on the destroying thread, with the
 *  context's lock held: it must not call the host library. */
typedef void (*gio_qp_outcome_fn)(void *arg, const struct gio_qp_outcome *outcome);

/**
 * @brief Destroys an I/O queue pair: Delete I/O Submission Queue, the last completions, Delete
 * I/O Completion Queue, then its memory and queue identifier are given back.
 * @param ctx         the context.
 * @param qp          a queue pair of @p ctx (from gio_ctx_qp_create() or gio_ctx_qp_create_ex()).
 * @param timeout_ns  how long the whole destroy may take (each admin command and every wait
 *                    share this deadline).
 * @param fn          receives each command of @p qp that had not been collected (submitted and
 *                    not yet taken with gio_qp_wait() or gio_qp_try_result()), once, with how it
 *                    ended; or NULL. A command whose submitter gave up at a deadline (its slot
 *                    abandoned, giouring/ring/qp.h) is not reported again.
 * @param arg         passed to @p fn.
 * @return the number of commands reported (0 or more), or:
 *   - `-EINVAL`: @p ctx or @p qp is NULL, or @p qp is no queue pair of @p ctx (another
 *     context's, or destroyed already; a pointer from before a destroy may name a queue pair
 *     created since at the same address);
 *   - `-ETIME`: the deadline passed: the message names the queue and what it waited for (an
 *     admin command, the doorbell proxy thread, the executor's threads to let go of the queue
 *     memory);
 *   - `-EIO`: the controller refused Delete I/O SQ or CQ (the message names its status);
 *   - for `nvme-pci`, `-errno` of VFIO_IOMMU_UNMAP_DMA or IOMMU_IOAS_UNMAP of the queue memory.
 *   After a failure @p qp must not be used for I/O again; call gio_ctx_qp_destroy() again to go
 *   on from where it stopped (each command is reported once, in whichever call deleted the SQ),
 *   or leave it to gio_ctx_close(). Only the last step's failure keeps the memory for good: when
 *   the proxy thread does not let go of the entry, the qid is free again and the queue pair's
 *   memory is left allocated (the thread may yet read it).
 *
 * Who may call: any thread, while no other thread uses @p qp, during the call or after it
 * (submitters and waiters must have returned: the call reaps the CQ itself and frees the ring).
 * A queue pair used by GPU threads through a device copy of struct gio_qp: copy it back over
 * @p qp first (the ring's indices live there); for GIO_CTX_QP_HBM the CPU cannot read the CQ, so
 * nothing is reaped or reported: end every command on the GPU first. The context's lock is held
 * throughout: other creates, destroys and registrations wait for it.
 *
 * Every command ends: on the software target the deletion completes each command of the queue
 * that was fetched and not completed (a command whose completion the drop fault of
 * gio_ctx_inject() withheld) or that the tail doorbell shows and was not fetched with Command
 * Aborted due to SQ Deletion, before the Delete's own completion; a controller may complete some
 * normally first (QEMU does, for commands it had started). The qid goes back to the pool:
 * gio_ctx_qp_create() hands out the lowest free one.
 */
int gio_ctx_qp_destroy(struct gio_ctx *ctx, struct gio_qp *qp, uint64_t timeout_ns, gio_qp_outcome_fn fn, void *arg);

/**
 * @brief How a queue pair's doorbells are written.
 * @param ctx  the context.
 * @param qp   a queue pair of @p ctx.
 * @return GIO_CTX_QP_DB_DIRECT or GIO_CTX_QP_DB_PROXY on `nvme-pci`; 0 on a software target (its
 *         doorbells are memory) or for a queue pair not of @p ctx.
 *
 * Any thread.
 */
uint32_t gio_ctx_qp_doorbells(struct gio_ctx *ctx, const struct gio_qp *qp);

/**
 * @brief Sets the faults the software target injects from now on.
 * @param ctx    the context.
 * @param fault  the faults, or NULL for none.
 * @return 0, `-EINVAL` for a NULL @p ctx, or `-EOPNOTSUPP` for a context that has no software
 *         target (`nvme-pci`) or gio_fault::hang_nth on a memory target; `-errno` of pipe2().
 *
 * Any thread; for tests.
 */
int gio_ctx_inject(struct gio_ctx *ctx, const struct gio_fault *fault);

/**
 * @brief What went wrong in the calling thread's latest host library call.
 * @return a string naming the problem and the values involved (URI parameter, queue, NVMe status,
 *         errno text), or "" when that call succeeded; valid until the thread's next host library
 *         call.
 *
 * Any host thread. Every function of the host library (`giouring::host`, `giouring::gpu`) that can
 * fail clears the message when it is called and sets it when it returns a negative errno, so a message never
 * outlives the call it describes: read it right after the call that failed. The inline ring
 * functions of giouring/ring/ do not touch it (they return -errno and keep the ring state in
 * gio_qp::last_timeout).
 */
const char *gio_last_error(void);

/**
 * @brief The negative errno the library returns for a CUDA runtime error.
 * @param cuda_error  a `cudaError_t` value (0 is cudaSuccess).
 * @return 0 for cudaSuccess; otherwise:
 *   - `-ENOMEM`: cudaErrorMemoryAllocation;
 *   - `-EINVAL`: cudaErrorInvalidValue, InvalidConfiguration, InvalidDevicePointer,
 *     InvalidHostPointer, InvalidMemcpyDirection, InvalidResourceHandle, InvalidSymbol,
 *     InvalidDeviceFunction (not a kernel of this program);
 *   - `-ENODEV`: cudaErrorNoDevice, InvalidDevice, InsufficientDriver, InitializationError,
 *     DevicesUnavailable, NoKernelImageForDevice, InvalidKernelImage, StartupFailure,
 *     SystemDriverMismatch, CompatNotSupportedOnDevice;
 *   - `-EOPNOTSUPP`: cudaErrorNotSupported; `-EPERM`: cudaErrorNotPermitted;
 *   - `-EEXIST`: cudaErrorHostMemoryAlreadyRegistered; `-ENOENT`: cudaErrorHostMemoryNotRegistered;
 *   - `-EAGAIN`: cudaErrorNotReady; `-ETIME`: cudaErrorLaunchTimeout, cudaErrorTimeout;
 *   - `-E2BIG`: cudaErrorLaunchOutOfResources, CooperativeLaunchTooLarge;
 *   - `-EIO`: the sticky device faults (cudaErrorIllegalAddress, LaunchFailure, Assert,
 *     HardwareStackError, IllegalInstruction, MisalignedAddress, InvalidAddressSpace, InvalidPc,
 *     ECCUncorrectable: the CUDA context is lost, every later call fails), ContextIsDestroyed,
 *     CudartUnloading, and every other error.
 *
 * Pure; any thread, no CUDA call. Every function of the host library (`giouring::host`,
 * `giouring::gpu`) that fails in a CUDA call returns this value and sets gio_last_error() to
 * "giouring: <what it did>: <cudaGetErrorName>: <cudaGetErrorString>".
 */
int gio_cuda_errno(int cuda_error);

/**
 * @brief Releases the pinned host memory the library keeps for reuse.
 * @return the bytes released (0 when nothing was kept). Where the runtime refuses to release a
 *         block (a lost CUDA context), the block is forgotten, not counted, and gio_last_error()
 *         says how many there were; otherwise the message is "".
 *
 * Releasing pinned memory (cudaFreeHost, cudaHostUnregister) waits while any kernel runs on the
 * device, and a persistent kernel (an engine's I/O kernel, a GPU target's executor) may run for
 * as long as the process does. So the library never releases pinned memory where a kernel may
 * run: gio_ctx_qp_destroy() and gio_ctx_close() (pinned queue pairs, the copy engine's staging,
 * the software target's registers registered for GPU producers) and gio_gpu_target_close()
 * (giouring/target/gpu_target.h) give theirs to a cache of the process, with no CUDA call, and
 * later allocations of the same kind take a cached block that fits first (zeroed).
 * gio_cuda_cached_bytes() tells how much is kept.
 *
 * **Waits while any kernel runs on the device: call it when none does (at shutdown, or after
 * your persistent kernels ended).** Any thread; pinned memory in use is not touched.
 */
size_t gio_cuda_trim(void);

/**
 * @brief Pinned host memory the library keeps for reuse (released by gio_cuda_trim()).
 * @return bytes, for statistics.
 *
 * Any thread; no CUDA call.
 */
size_t gio_cuda_cached_bytes(void);

/**
 * @brief Submits one prepared command and waits for it (a convenience over giouring/ring/qp.h).
 * @param qp          the queue pair.
 * @param sqe         the command (its CID is set here).
 * @param timeout_ns  how long to wait in total.
 * @param status      receives the status field, or NULL.
 * @param dw0         receives completion Dword 0, or NULL.
 * @return 0, `-EIO` (NVMe error: see @p status; gio_last_error() names the queue, the opcode and
 *         the status), `-ETIME` (deadline; the ring state is in gio_qp::last_timeout and in
 *         gio_last_error()), `-EINVAL` (a NULL argument, or a reservation the ring refuses),
 *         `-EFAULT` (URI `check=1`: the command's data pointer, PRP list or SGL segment reaches
 *         outside registered memory; it was not submitted, and gio_last_error() names the
 *         address).
 *
 * Any thread.
 */
int gio_qp_submit_wait(struct gio_qp *qp, const struct gio_sqe *sqe, uint64_t timeout_ns, uint16_t *status,
		       uint32_t *dw0);

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_CTX_H */
