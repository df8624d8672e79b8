/* The KV store's host index: which slot of which device holds a key, which slots are free, and
 * which entry to evict. Pure memory, no I/O: the store's I/O code drives it and writes the
 * on-device entries it implies (docs/store-format.md, "Commit protocol"). Not installed, not part
 * of the API. One thread at a time (the caller locks).
 *
 * Slots are numbered by an id, 0 to capacity - 1, device by device (device d's slot s is
 * id base[d] + s). Each slot is in one state:
 *   FREE     on its device's free list (FIFO);
 *   WRITING  allocated to a key, pinned by its writer, invisible to lookups until committed;
 *   VALID    visible; on its device's LRU list while no reader pins it.
 * Keys live in an open-addressed hash table (linear probing, backward-shift deletion, at most
 * half full), sized at creation: nothing is allocated after gio__kv_index_create() but the
 * temporary array of gio__kv_index_rebuild_done().
 *
 * Allocation goes round-robin over the devices, so that consecutive chunks of a request land on
 * different devices and each layer's reads spread over all of them. A free slot is taken first,
 * from the first device at or after the cursor that has one; only when no device has one is an
 * entry evicted: the least recently used unpinned VALID entry of the first device at or after the
 * cursor that has one. LRU is thus per device, which keeps placement round-robin once the store
 * is full (with one device it is exact LRU). The cursor starts at device 0 in a new index; a
 * rebuild moves it to the device after the one holding the highest committed sequence, so that
 * placement continues where the last writer left off (a writer that opens, puts a few chunks and
 * closes would otherwise fill device 0 alone).
 *
 * A slot also remembers whether its on-device entry may still read VALID ("stale"): after a
 * commit, a rebuild, an eviction, a removal or an abort. Its next writer must then write the
 * entry FREE and flush before writing data (gio__kv_alloc::invalidate), or a crash in the middle
 * would leave a VALID entry over half-written data. */
#ifndef GIOURING_SRC_KV_INDEX_H
#define GIOURING_SRC_KV_INDEX_H

#include <stdint.h>

#include <giouring/config.h>
#include <giouring/kv/format.h>

GIO_EXTERN_C_BEGIN

/* No slot (list ends, empty hash cells). */
#define GIO__KV_NIL UINT32_MAX
/* Most slots an index holds (its hash table then has 2^32 cells). */
#define GIO__KV_MAX_CAPACITY 0x7fffffffu

enum { GIO__KV_FREE = 0, GIO__KV_WRITING = 1, GIO__KV_VALID = 2 };

struct gio__kv_index;

/* Where a slot is. */
struct gio__kv_loc {
	uint32_t id;     /* index-wide slot id */
	uint32_t device; /* device index */
	uint64_t slot;   /* slot on that device */
};

/* One key's result of gio__kv_index_alloc(). */
struct gio__kv_alloc {
	int rc; /* 0; -EEXIST: the key is VALID, being written, or earlier in the batch (no slot);
		   -ENOSPC: no free slot and nothing evictable */
	struct gio__kv_loc loc;
	int invalidate; /* the slot's on-device entry may read VALID: write it FREE, flush, then the data */
	int evicted;    /* a VALID entry (evicted_key) was evicted for this slot; invalidate is 1 */
	struct gio_kv_u128 evicted_key;
};

struct gio__kv_stats {
	uint64_t capacity;   /* slots of all devices */
	uint64_t used;       /* valid + writing */
	uint64_t free;       /* on the free lists */
	uint64_t valid;      /* committed */
	uint64_t writing;    /* allocated, not committed */
	uint64_t pinned;     /* slots with at least one pin (a writer's included) */
	uint64_t hits;       /* lookups that found a VALID entry */
	uint64_t misses;     /* lookups that did not (entries being written included) */
	uint64_t evictions;  /* VALID entries evicted by gio__kv_index_alloc() */
	uint64_t duplicates; /* keys found twice by gio__kv_index_rebuild_insert() */
	uint64_t bytes_read, bytes_written; /* what the caller added (gio__kv_index_add_bytes()) */
	uint64_t max_seq;    /* highest sequence committed or rebuilt: the next is above it */
};

/* An index of ndevices devices (1 to 65536), device d having slots[d] slots (0 allowed; at most
 * GIO__KV_MAX_CAPACITY in all). Every slot FREE, none stale: a freshly formatted store, or the
 * start of a rebuild. 0 and *out, or -EINVAL / -ENOMEM with a message. */
int gio__kv_index_create(struct gio__kv_index **out, const uint64_t *slots, uint32_t ndevices);
void gio__kv_index_destroy(struct gio__kv_index *ix);

/* Finds a VALID entry: 0 and *loc, the entry moved to its device's MRU end, or (pin) pinned and
 * off the LRU list. -ENOENT for a key absent or being written; -EOVERFLOW for a pin past
 * UINT32_MAX. No allocation. */
int gio__kv_index_lookup(struct gio__kv_index *ix, struct gio_kv_u128 key, int pin, struct gio__kv_loc *loc);

/* Whether key is VALID (1) or not (0: absent or being written); no pin, no LRU move, no count:
 * a query that may never be followed by a read (an engine asking what it could load). */
int gio__kv_index_contains(const struct gio__kv_index *ix, struct gio_kv_u128 key);

/* Allocates a slot to each of keys[0..n-1] (see the top of this file for which), in order;
 * out[i] says what became of key i. Each allocated slot is WRITING with one pin, its key
 * reserved (a second allocation of it gets -EEXIST) but invisible to lookups. Returns how many
 * were allocated (0 to n), or -EINVAL (n and no keys or out, or n above INT32_MAX). */
int gio__kv_index_alloc(struct gio__kv_index *ix, const struct gio_kv_u128 *keys, uint32_t n,
			struct gio__kv_alloc *out);

/* The writer's data and VALID entry are written: the slot becomes VALID with sequence seq, its
 * writer's pin dropped (so at its device's MRU end). -EINVAL (with a message) unless WRITING. */
int gio__kv_index_commit(struct gio__kv_index *ix, uint32_t id, uint64_t seq);

/* The write failed: the slot goes back FREE (stale), its key released. -EINVAL unless WRITING. */
int gio__kv_index_abort(struct gio__kv_index *ix, uint32_t id);

/* A reader's pin on a VALID slot (off the LRU list while pinned), and its release (back at the
 * MRU end when the last goes). -EINVAL unless VALID (and, for unpin, pinned); -EOVERFLOW. */
int gio__kv_index_pin(struct gio__kv_index *ix, uint32_t id);
int gio__kv_index_unpin(struct gio__kv_index *ix, uint32_t id);

/* Drops a key: its VALID, unpinned slot goes back FREE (stale); *loc (may be NULL) receives where
 * it was. -ENOENT, or -EBUSY when it is pinned or being written. No hit or miss is counted. */
int gio__kv_index_remove(struct gio__kv_index *ix, struct gio_kv_u128 key, struct gio__kv_loc *loc);

/* Reopen: a VALID entry scanned from (device, slot), which must still be FREE in the index.
 * Returns 0, or 1 when the key was already there: the higher sequence wins (on a tie, the one
 * already there) and *lost (may be NULL) names the losing slot, which is FREE and stale. -EINVAL
 * (a bad device or slot, a slot given twice, seq 0) or -EBUSY (the key is being written). */
int gio__kv_index_rebuild_insert(struct gio__kv_index *ix, struct gio_kv_u128 key, uint32_t device, uint64_t slot,
				 uint64_t seq, struct gio__kv_loc *lost);

/* Reopen: a FREE slot whose on-device entry could not be read may read VALID later; mark it
 * stale. -EINVAL unless FREE. */
int gio__kv_index_mark_stale(struct gio__kv_index *ix, uint32_t device, uint64_t slot);

/* The on-device entry of FREE slot id was written FREE and flushed: it can no longer read VALID,
 * so its next writer need not invalidate it. -EINVAL unless FREE. */
int gio__kv_index_mark_clean(struct gio__kv_index *ix, uint32_t id);

/* After the last rebuild_insert: orders each device's LRU list by sequence (the oldest commit
 * evicted first), the best recency a device records, and sets the cursor to the device after the
 * one whose VALID entry has the highest sequence (device 0 when none is VALID). 0 or -ENOMEM. */
int gio__kv_index_rebuild_done(struct gio__kv_index *ix);

/* The id of (device, slot): 0, or -EINVAL. */
int gio__kv_index_locate(const struct gio__kv_index *ix, uint32_t device, uint64_t slot, uint32_t *id);

/* What slot id holds: its location, state (GIO__KV_*), pins, stale flag, key and sequence (key
 * and seq are the last ones it held when FREE). Any pointer may be NULL. -EINVAL for a bad id. */
int gio__kv_index_peek(const struct gio__kv_index *ix, uint32_t id, struct gio__kv_loc *loc, uint32_t *state,
		       uint32_t *pins, int *stale, struct gio_kv_u128 *key, uint64_t *seq);

void gio__kv_index_add_bytes(struct gio__kv_index *ix, uint64_t read, uint64_t written);
void gio__kv_index_stats(const struct gio__kv_index *ix, struct gio__kv_stats *st);

/* Every invariant of the structure (lists, hash table, counters): 0, or -EUCLEAN with a message
 * naming the first one broken. Linear in the capacity: for tests. */
int gio__kv_index_check(const struct gio__kv_index *ix);

GIO_EXTERN_C_END

#endif
