/**
 * @file giouring/kv/store.h
 * @brief The KV store's host runtime: format, open, close, and the CPU data path (put, get) of
 *        chunks kept in slots over N targets.
 *
 * A store spans N already-open contexts (giouring/host/ctx.h), one device each, in the on-device
 * format of giouring/kv/format.h (docs/store-format.md). A **chunk** is L layer objects of
 * object_bytes each, stored under a 128-bit key in one slot of one device; the host index places
 * consecutive chunks round-robin over the devices and evicts the least recently used chunk of a
 * device when no slot is free.
 *
 * gio_kv_store_put() follows the commit protocol (entry FREE and Flush where the slot's entry may
 * still read VALID, data and Flush, then the VALID entry), so that a reopen never serves a chunk
 * that was not completely written, then a last Flush, so that a chunk whose put returned 0 survives
 * a power loss. Data moves through one registered host buffer per device (a bounce of one slot), every
 * command with the deadline of gio_kv_store_params::timeout_ns.
 *
 * Thread safety: gio_kv_store_put(), gio_kv_store_get() and gio_kv_store_info() may be called
 * from any thread; the store serializes them on one lock. gio_kv_store_close() last, alone. The
 * contexts stay the caller's: the store creates one queue pair on each and destroys it at close,
 * and no other user of a context may write the blocks the store uses.
 */
#ifndef GIOURING_KV_STORE_H
#define GIOURING_KV_STORE_H

#include <stdint.h>

#include "../config.h"
#include "format.h"

GIO_EXTERN_C_BEGIN

struct gio_ctx;

/** @brief Most devices a store spans. */
#define GIO_KV_STORE_MAX_DEVICES 16u

/** @brief An open store (opaque). */
struct gio_kv_store;

/** @brief What the caller's chunks are, and how the store uses its devices. */
struct gio_kv_store_params {
	uint32_t layers;         /**< Layer objects L per chunk, at least 1. */
	uint32_t reserved0;      /**< Zero. */
	uint64_t object_bytes;   /**< Bytes of one layer's object, at least 1. */
	uint64_t pool_signature; /**< The caller's number for what chunks hold (gio_kv_pool_signature(), say): a reopen refuses a store formatted with another. */
	uint64_t store_bytes;    /**< gio_kv_store_create(): bytes of each device to use from LBA 0 (0: the whole device); ignored by gio_kv_store_open(), which takes each superblock's. */
	uint64_t timeout_ns;     /**< Deadline of each NVMe command (0: 5 s). */
};

/** @brief Counters and sizes of an open store. */
struct gio_kv_store_stats {
	uint64_t capacity;      /**< Slots of all devices. */
	uint64_t valid;         /**< Chunks served. */
	uint64_t free;          /**< Free slots. */
	uint64_t pinned;        /**< Slots being read or written now. */
	uint64_t hits;          /**< gio_kv_store_get() calls that found their key. */
	uint64_t misses;        /**< gio_kv_store_get() calls that did not. */
	uint64_t evictions;     /**< Chunks evicted to make room. */
	uint64_t duplicates;    /**< Keys found twice by the open's scan (the older commit dropped, its entry written FREE by the open). */
	uint64_t refused;       /**< Entries the open's scan refused (torn, damaged, another store's): free slots now. */
	uint64_t unreadable;    /**< Entry blocks the open's scan could not read (free slots, written FREE by the open). */
	uint64_t bytes_read;    /**< Chunk bytes gio_kv_store_get() delivered. */
	uint64_t bytes_written; /**< Chunk bytes gio_kv_store_put() committed. */
	uint64_t next_seq;      /**< The sequence the next commit gets. */
	uint32_t devices;       /**< Devices N. */
	uint32_t reserved0;     /**< Zero. */
	struct gio_kv_u128 store_id; /**< The store's id (the same in every superblock). */
};

/**
 * @brief Formats @p n devices as one new store, then opens it.
 * @param ctxs  @p n open contexts; ctxs[d] becomes device d of the store.
 * @param n     devices, 1 to GIO_KV_STORE_MAX_DEVICES.
 * @param p     the chunks' shape and pool signature, the bytes of each device to use, the deadline.
 * @param out   receives the store (NULL on failure).
 * @return 0; `-EINVAL` (NULL arguments, @p n out of range, a context given twice, a reserved field
 *         not zero, a shape or block size the format refuses, store_bytes above a device's size,
 *         more slots in all than the host index holds), `-ENOSPC` (a device too small for one slot),
 *         `-ENOMEM`, `-EIO` (an NVMe command failed: the message names the device, the command
 *         and its status), `-ETIME` (a command missed its deadline), or `-errno` of queue pair
 *         creation, registration or getrandom(). The message (gio_last_error()) names the device index.
 *
 * Any host thread. Writes a random store id, invalidates each old superblock first, writes every
 * index entry FREE and Flushes, then writes each superblock and Flushes (docs/store-format.md,
 * "Format"): a format cut short leaves a device without a valid superblock. Whatever the devices
 * held before is lost. On failure nothing stays open.
 */
int gio_kv_store_create(struct gio_ctx *const *ctxs, uint32_t n, const struct gio_kv_store_params *p,
			struct gio_kv_store **out);

/**
 * @brief Opens a store formatted by gio_kv_store_create(): checks every superblock, scans every
 * index entry and serves the chunks whose entries read VALID.
 * @param ctxs  @p n open contexts, the store's devices in any order (each superblock says which
 *              device it is).
 * @param n     devices, 1 to GIO_KV_STORE_MAX_DEVICES: all of the store's.
 * @param p     the chunks' shape and pool signature (compared with the superblocks), the deadline.
 * @param out   receives the store (NULL on failure).
 * @return 0, or with a message naming the context's position and the reason
 *         (gio_kv_reason_str()):
 *   - `-ENODATA`: a device holds no superblock (never formatted, or a format cut short);
 *   - `-EPROTO`: a superblock is damaged or not one of this format (magic, version, CRC, fields);
 *   - `-EINVAL`: NULL arguments, @p n out of range, a context given twice, a reserved field not
 *     zero; a superblock whose block size or size does not fit its device; the caller's layers,
 *     object bytes or pool signature differ from the store's; the devices are not one whole store
 *     (another store's, a count other than @p n, a device index twice);
 *   - `-ENOSPC`, `-ENOMEM`, `-EIO`, `-ETIME`, `-errno` as gio_kv_store_create().
 *
 * Any host thread. The scan treats every entry that is not a valid FREE or VALID entry of its
 * slot as a free slot and counts it (gio_kv_store_stats::refused); of two VALID entries of one
 * key the higher sequence wins. An entry block that cannot be read is a free slot. Before it
 * returns, the open writes FREE (and Flushes) the loser of each such pair and each entry block
 * it could not read: left as they were, a later open could serve them (a key removed since, or an
 * older chunk of a key stored again since, whose unread entry may carry a higher sequence). A
 * device that fails those writes (`-EIO`) leaves its slots to be written FREE before their reuse,
 * and the open goes on; one that misses a deadline (`-ETIME`) fails the open. Nothing else is
 * written by the open. On failure nothing stays open.
 */
int gio_kv_store_open(struct gio_ctx *const *ctxs, uint32_t n, const struct gio_kv_store_params *p,
		      struct gio_kv_store **out);

/**
 * @brief A device the store reaches through the caller's functions instead of a context: a
 * memory target whose blocks the host copies directly (a GPU-executed target's backing store,
 * gio_gpu_target_blockdev() of giouring/target/gpu_target.h), or any other block device.
 *
 * The store's own I/O (format, entries, the CPU data path) goes through @p rw and @p flush;
 * engines move chunk data through their queue pairs (giouring/kv/plan.h) as with contexts.
 */
struct gio_kv_blockdev {
	uint32_t lba_bytes;      /**< Block size: a power of two from GIO_KV_BLOCK_MIN to GIO_KV_BLOCK_MAX. */
	uint32_t reserved0;      /**< Zero. */
	uint64_t nblocks;        /**< Blocks of the device. */
	uint64_t max_xfer_bytes; /**< Largest transfer of one rw call (0: no limit). */
	/** Moves blocks [slba, slba + nblocks) to (@p write 1) or from @p buf within @p timeout_ns:
	 *  0, or -errno (its message in gio_last_error(): -EIO, -ETIME...). Any thread, one at a time. */
	int (*rw)(void *arg, int write, uint64_t slba, uint64_t nblocks, void *buf, uint64_t timeout_ns);
	/** Makes every completed write durable: 0 or -errno; NULL: nothing to do (memory). */
	int (*flush)(void *arg, uint64_t timeout_ns);
	void *arg;               /**< Passed to rw and flush. */
};

/**
 * @brief gio_kv_store_create() over the caller's block devices.
 * @param devs  @p n devices (the structs are read during the call and must stay valid, unchanged,
 *              until gio_kv_store_close()).
 * @param n     devices, 1 to GIO_KV_STORE_MAX_DEVICES.
 * @param p     as gio_kv_store_create().
 * @param out   receives the store (NULL on failure).
 * @return as gio_kv_store_create(); `-EINVAL` also for a device without rw, and `-errno` of rw.
 */
int gio_kv_store_create_blockdevs(const struct gio_kv_blockdev *devs, uint32_t n, const struct gio_kv_store_params *p,
				  struct gio_kv_store **out);

/**
 * @brief gio_kv_store_open() over the caller's block devices (the lifetime rule of
 * gio_kv_store_create_blockdevs()).
 * @param devs  @p n devices, in any order.
 * @param n     devices: all of the store's.
 * @param p     as gio_kv_store_open().
 * @param out   receives the store (NULL on failure).
 * @return as gio_kv_store_open().
 */
int gio_kv_store_open_blockdevs(const struct gio_kv_blockdev *devs, uint32_t n, const struct gio_kv_store_params *p,
				struct gio_kv_store **out);

struct gio_gpu_target;

/**
 * @brief The block device of a GPU-executed target's backing store (giouring/target/gpu_target.h),
 * for gio_kv_store_create_blockdevs(): the store's own I/O copies blocks directly (host memory:
 * memcpy; HBM: a copy on a stream of its own, polled with the deadline, never waiting for the
 * executor); engines move chunk data through the target's queue pairs.
 * @param g   an open target (kept open until the store closes).
 * @param bd  receives the device (its `arg` is @p g).
 * @return 0, or `-EINVAL` for NULL arguments.
 *
 * In `giouring::gpu`. Any host thread. The target has no volatile cache: flush is NULL.
 */
int gio_kv_gpu_target_blockdev(struct gio_gpu_target *g, struct gio_kv_blockdev *bd);

/**
 * @brief Writes FREE the entries whose FREE write failed earlier (a removal's, an eviction's),
 * flushes every device, destroys the store's queue pairs and frees the store.
 * @param store  the store, or NULL.
 * @return 0; or the first failure (`-EIO`, `-ETIME` of an entry's write, a Flush, or a queue
 *         pair's destroy), with a message naming the device: the store is freed regardless. A
 *         failed entry write ("close: writing FREE ...") means a key removed or evicted in this
 *         open may be served again after the next open.
 *
 * One thread, after every other call on @p store returned. Bounded: each Flush and each queue
 * pair's destroy has gio_kv_store_params::timeout_ns. The contexts stay open.
 */
int gio_kv_store_close(struct gio_kv_store *store);

/**
 * @brief Stores a chunk: its L layer objects, one after another, from host memory.
 * @param store  the store.
 * @param key    the chunk's key (the engine's: a hash of its tokens, say).
 * @param src    L x object_bytes bytes: layer l's object at byte l x object_bytes; any memory.
 * @param len    bytes at @p src: must be L x object_bytes.
 * @return 0 once the chunk is committed and durable; or
 *   - `-EINVAL`: NULL arguments or a wrong @p len (the message says what it must be);
 *   - `-EEXIST`: the key is stored or being stored already (a key names its bytes: nothing to do);
 *   - `-ENOSPC`: no free slot, and every chunk is pinned (being read or written);
 *   - `-EIO` / `-ETIME`: a command failed or missed its deadline; the message names the device,
 *     the command and the NVMe status. The chunk is not stored, and the slot is written FREE
 *     before its next use; except where only the last Flush failed (the message says "flush of
 *     the VALID entries"): the chunk is then stored and served, but may not survive a power loss.
 *
 * Any thread (serialized with the store's other calls). When the store is full the least recently
 * used chunk of the device whose turn it is is evicted first (its entry written FREE).
 */
int gio_kv_store_put(struct gio_kv_store *store, struct gio_kv_u128 key, const void *src, uint64_t len);

/**
 * @brief Reads a chunk: its L layer objects, one after another, into host memory.
 * @param store  the store.
 * @param key    the chunk's key.
 * @param dst    receives L x object_bytes bytes on a hit; untouched on a miss; any memory.
 * @param len    bytes at @p dst: must be L x object_bytes.
 * @return 1 on a hit (the bytes are in @p dst), 0 on a miss (the key is not stored, or is still
 *         being written); `-EINVAL` for NULL arguments or a wrong @p len; `-EIO` / `-ETIME`
 *         as gio_kv_store_put() (@p dst may then hold part of the chunk; the chunk stays stored).
 *
 * Any thread (serialized with the store's other calls). A hit makes the chunk the most recently
 * used of its device.
 */
int gio_kv_store_get(struct gio_kv_store *store, struct gio_kv_u128 key, void *dst, uint64_t len);

/**
 * @brief Which keys are stored: a query, without reading, pinning or counting anything.
 * @param store  the store.
 * @param keys   @p n chunk keys.
 * @param n      how many.
 * @param found  receives 1 for each key stored and committed, 0 for one absent or still being
 *               written.
 * @return how many were found, or `-EINVAL` for NULL arguments with @p n > 0 or @p n above
 *         INT32_MAX.
 *
 * Any thread (serialized with the store's other calls). For a scheduler deciding how much of a
 * prompt it could load: the answer may be stale by the time the load is planned (an eviction in
 * between), which gio_kv_plan_load() reports as a miss. It moves no chunk in the LRU order and
 * changes no hit or miss counter, so that asking is not mistaken for using.
 */
int gio_kv_store_contains(struct gio_kv_store *store, const struct gio_kv_u128 *keys, uint32_t n, uint8_t *found);

/**
 * @brief Removes a chunk: its entry written FREE and made durable, its key gone from the index.
 * @param store  the store.
 * @param key    the chunk's key.
 * @return 1 when it was removed, 0 when it was not stored; or
 *   - `-EINVAL`: a NULL @p store;
 *   - `-EBUSY`: the chunk is being read or written (a load planned or in flight, a put): nothing
 *     changed;
 *   - `-EIO` / `-ETIME`: writing its entry FREE, or the Flush after, failed (the message names the
 *     device and the NVMe status). The key is gone from the index all the same (it is not served
 *     again in this open, and a put may store it anew); gio_kv_store_close() writes the entry
 *     FREE again, and says so where that fails too (the key may then be served after the next
 *     open).
 *
 * Any thread (serialized with the store's other calls). For a chunk whose reads fail: a chunk
 * stays stored after a failed get or load, and a put of its key answers `-EEXIST`, so an engine
 * that recomputed it removes it first to store it again (the write may then succeed where the
 * read failed: drives remap a bad block when it is written). The removal is one of
 * gio_kv_store_removed()'s.
 */
int gio_kv_store_remove(struct gio_kv_store *store, struct gio_kv_u128 key);

/** @brief Missed deadlines a store remembers (gio_kv_store_remove_failed()): a key's second within
 *  the last this many removes it. */
#define GIO_KV_STORE_STRIKES 256u

/**
 * @brief The failed-load policy: removes the chunks whose loads failed in a way that says their
 *        bytes are not to be had, given a batch's keys and results.
 * @param store    the store.
 * @param keys     the batch's keys (NULL when @p n is 0).
 * @param rcs      each key's result: gio_kv_io_result::rc, or the engine's own -errno.
 * @param n        how many.
 * @param removed  receives 1 for each key this call removed, 0 for the others; or NULL.
 * @return how many were removed; `-EINVAL` for a NULL @p store, or NULL @p keys or @p rcs with
 *         @p n > 0; or the -errno of the first removal that failed (gio_kv_store_remove(), with a
 *         message naming the key's position and why it was removed), the keys after it not looked
 *         at.
 *
 * `-EIO` (the device refused the read: a bad block) removes the key at once. `-ETIME` (a load
 * that missed its deadline) removes it the second time within the store's last
 * GIO_KV_STORE_STRIKES reported misses: once is no proof the bytes are bad, but a chunk whose
 * loads keep timing out stays a hit, and every hit costs the whole deadline before the engine
 * recomputes. Every other result leaves the key stored. A removed key is recomputed and stored
 * anew by the engine like any miss (a drive remaps a bad block when it is written).
 *
 * Any thread (serialized with the store's other calls).
 */
int gio_kv_store_remove_failed(struct gio_kv_store *store, const struct gio_kv_u128 *keys, const int32_t *rcs,
			       uint32_t n, uint8_t *removed);

/**
 * @brief The keys the store holds, slot by slot: what an index kept elsewhere starts from.
 * @param store  the store.
 * @param from   the slot to start at: 0, then what the last call put in @p next.
 * @param keys   receives up to @p cap keys of committed chunks (NULL when @p cap is 0).
 * @param cap    room in @p keys.
 * @param next   receives the slot after the last one looked at: gio_kv_store_stats::capacity
 *               once every slot was.
 * @return how many keys were written; `-EINVAL` for NULL arguments, @p cap above INT32_MAX or
 *         @p from beyond the store's capacity.
 *
 * Any thread (serialized with the store's other calls). Each call is a snapshot of the slots it
 * looks at; across calls a chunk stored or evicted meanwhile may or may not appear (take
 * gio_kv_store_removed()'s count first to learn what went since). No I/O, no pin, no LRU move.
 */
int gio_kv_store_keys(struct gio_kv_store *store, uint64_t from, struct gio_kv_u128 *keys, uint32_t cap,
		      uint64_t *next);

/** Removals gio_kv_store_removed() keeps: a caller that asks less often than this many evictions
 *  happen loses the older ones (-ERANGE) and must start over from gio_kv_store_contains(). */
#define GIO_KV_STORE_REMOVED_KEPT 65536u

/**
 * @brief The keys the store removed since a point, oldest first: what an engine that keeps an index
 *        of the store elsewhere (a scheduler in another process) must drop from it.
 * @param store  the store.
 * @param since  removals already seen: 0 after the open, then what the last call put in @p next.
 * @param keys   receives up to @p cap keys (NULL when @p cap is 0).
 * @param cap    room in @p keys.
 * @param next   receives @p since plus the keys written: where the next call starts.
 * @return how many keys were written (0 to @p cap; fewer than were removed when @p cap is short:
 *         call again from @p next); `-EINVAL` for NULL arguments, @p cap above INT32_MAX or
 *         @p since beyond the removals so far; `-ERANGE` when more than GIO_KV_STORE_REMOVED_KEPT
 *         keys were removed since @p since (the older ones are no longer kept): @p next then
 *         receives the count of removals now, from which to go on once the caller rebuilt its index.
 *
 * Any thread (serialized with the store's other calls). A removal is a committed chunk that went
 * out of the index: an eviction to make room (gio_kv_store_stats::evictions counts them too), even
 * when the write that evicted it then failed, or a gio_kv_store_remove(). The journal lives in
 * memory: it starts empty at each open (the chunks a store holds when it opens are
 * gio_kv_store_contains()'s to say).
 */
int gio_kv_store_removed(struct gio_kv_store *store, uint64_t since, struct gio_kv_u128 *keys, uint32_t cap,
			 uint64_t *next);

/**
 * @brief The store's counters and sizes.
 * @param store  the store, or NULL.
 * @param st     receives them (all zero for a NULL @p store); NULL does nothing.
 *
 * Any thread.
 */
void gio_kv_store_info(struct gio_kv_store *store, struct gio_kv_store_stats *st);

/**
 * @brief Where device @p d of the store was in the array given to create or open.
 * @param store  the store.
 * @param d      a device of the store, in the store's order (the order gio_kv_plan_params::devs
 *               takes): below gio_kv_store_stats::devices.
 * @return its position in the ctxs (or devs) array of gio_kv_store_create() / gio_kv_store_open()
 *         and their _blockdevs forms; `-EINVAL` for a NULL @p store or @p d out of range.
 *
 * Any thread. A store opened with its devices in another order than it was created in (each
 * superblock says which device it is) has its own order, which a plan's devices must follow:
 * plan device d is the one at position gio_kv_store_device_pos(store, d) of the caller's array.
 */
int gio_kv_store_device_pos(const struct gio_kv_store *store, uint32_t d);

GIO_EXTERN_C_END

#endif /* GIOURING_KV_STORE_H */
