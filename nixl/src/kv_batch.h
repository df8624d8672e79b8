/*
 * The store side of the GIOURING backend: a giouring KV store over the backend's targets, one
 * CPU-engine plan over it, and the host pool its layers move through. Every chunk goes through
 * the KV layer's batch calls (plan a batch of keys, one call per layer, finish), the path an
 * engine's connector takes, never through the store's one-chunk put/get.
 *
 * Targets executed on the CPU (file://, mem://host, nvme-pci://) take the CPU engine and a pool in
 * host memory; GPU-executed targets (mem://hbm, exec=gpu; CUDA builds) the GPU engine and a pool
 * in the GPU's memory. VRAM_SEG buffers (CUDA builds) are copied to and from either pool on the
 * backend's stream.
 *
 * Why a pool of the backend's own and not NIXL's buffers directly: a plan's destinations are
 * pool blocks whose P2P table is built once, when the store opens; NIXL hands over arbitrary
 * registered buffers per transfer. The pool is registered with every target once; chunks are
 * copied between it and NIXL's buffers (docs/nixl.md, "Data path").
 */
#ifndef GIOURING_NIXL_KV_BATCH_H
#define GIOURING_NIXL_KV_BATCH_H

#include <cstdint>
#include <string>
#include <vector>

#include <giouring/kv/format.h>

#ifdef GIOURING_NIXL_CUDA
#include "device.h"
#endif

struct gpy_store;
struct gpy_plan;

namespace gio_nixl {

/** What the backend's parameters say about its store (plugin.cpp lists them with defaults). */
struct kv_config {
	std::vector<std::string> uris; /* targets, one device each */
	uint32_t layers = 1;           /* layer objects per chunk */
	uint64_t object_bytes = 0;     /* bytes of one layer object */
	uint32_t blocks = 64;          /* chunks of the pool: the most one batch moves */
	uint32_t queues = 2;           /* queue pairs per device */
	bool create = false;           /* format the targets (destroys what they hold) */
	uint64_t store_bytes = 0;      /* bytes of each device to use (0: all) */
	uint64_t timeout_ns = 5000000000ull;
	int device = 0;                /* CUDA device of the pool and the VRAM buffers (CUDA builds) */
};

/** One chunk of a transfer: its key and the caller's memory. */
struct kv_item {
	gio_kv_u128 key;
	uintptr_t addr;
	bool vram = false; /* GPU memory (VRAM_SEG) */
};

/** Whether this build moves VRAM_SEG buffers (CUDA was found where it was built). */
bool kv_has_cuda();

class kv_batch {
public:
	kv_batch() = default;
	kv_batch(const kv_batch &) = delete;
	kv_batch &operator=(const kv_batch &) = delete;
	~kv_batch();

	/** Opens (or formats) the store and makes the plan: 0, or -errno with @p msg set. */
	int open(const kv_config &c, std::string &msg);
	/** Bytes of one chunk: layers x object_bytes. */
	uint64_t chunk_bytes() const { return chunk_; }
	/** Moves @p items (write: memory to store; else store to memory) in batches of the pool's
	 *  blocks. 0 when every chunk moved; else -errno and @p msg naming the first failed chunk and
	 *  the library's message. A read writes the caller's memory only after all of its batch's
	 *  chunks arrived whole; a miss is a failure (-ENOENT). A chunk whose read the device
	 *  failed (-EIO) is removed from the store, so that the next write of its key stores it
	 *  anew. One thread at a time. */
	int transfer(bool write, const std::vector<kv_item> &items, std::string &msg);
	/** Test hook: fail the @p nth I/O command of device @p dev from now on with NVMe @p status. */
	int inject(uint32_t dev, uint64_t nth, uint32_t status, std::string &msg);

private:
	int batch(bool write, const kv_item *items, uint32_t n, uint32_t first, std::string &msg);
	/* Removes the chunks of a finished load whose failure would repeat (gio_kv_store_remove_failed()
	 * through gpy_store_remove_failed(): -EIO, or -ETIME a second time); removed[i] says whether
	 * key i went. Returns what to add to a failure's message where the removal itself failed,
	 * else "". keys: (hi, lo) pairs. */
	std::string remove_unreadable(const std::vector<uint64_t> &keys, const std::vector<int32_t> &rcs,
				      std::vector<uint8_t> &removed);
	/* Copies between the caller's chunk and pool block @p block, to the pool for a write; the
	 * device copies are queued, and finish with copies_wait(). */
	int copy(bool to_pool, const kv_item &item, uint32_t block, std::string &msg);
	int copies_wait(std::string &msg);
	/* The GPU engine's stream (its layers are launched there), or null. */
	void *stream() const;

	gpy_store *store_ = nullptr;
	gpy_plan *plan_ = nullptr;
	uint8_t *pool_ = nullptr;
	uint64_t chunk_ = 0;
	bool gpu_ = false; /* GPU-executed targets: the GPU engine, the pool in device memory */
	kv_config cfg_;
#ifdef GIOURING_NIXL_CUDA
	device_stream dev_;
	bool dev_open_ = false;
#endif
};

/** Formats a key as 32 hex digits (hi then lo), as OBJ_SEG's metaInfo spells it. */
std::string key_hex(gio_kv_u128 key);
/** Parses 32 hex digits into a key: true, or false for anything else. */
bool key_parse(const std::string &s, gio_kv_u128 &key);

} // namespace gio_nixl

#endif
