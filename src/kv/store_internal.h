/* The KV store's internals that the batch planner (src/kv/batch.c) and tests reach: the index's
 * steps under the store's lock, and a crash point that stops a put where a power loss could,
 * leaving the devices as it would. Not installed, not part of the API. */
#ifndef GIOURING_SRC_KV_STORE_INTERNAL_H
#define GIOURING_SRC_KV_STORE_INTERNAL_H

#include <giouring/config.h>
#include <giouring/kv/store.h>

#include "index.h"

GIO_EXTERN_C_BEGIN

enum {
	GIO__KV_CRASH_NONE = 0,
	GIO__KV_CRASH_AFTER_FREE = 1, /* the slot's entry written FREE and flushed (when it had to be) */
	GIO__KV_CRASH_AFTER_DATA = 2, /* the data written and flushed, the VALID entry not written */
};

/* Every later put stops at point (GIO__KV_CRASH_*) and returns -ECANCELED, its slot given back
 * to the index as after a failed write; GIO__KV_CRASH_NONE puts them back to normal. */
void gio__kv_store_crash_at(struct gio_kv_store *s, int point);

/* The store's index, for tests that pin chunks or look where they went (with no call of the
 * store running). */
struct gio__kv_index *gio__kv_store_index(struct gio_kv_store *s);

/* What a planner needs of a store's shape. */
struct gio__kv_shape {
	uint32_t devices;
	uint32_t layers;
	uint64_t object_bytes;
	uint64_t timeout_ns;
	uint32_t lba_bytes[GIO_KV_STORE_MAX_DEVICES];
};
void gio__kv_store_shape(struct gio_kv_store *s, struct gio__kv_shape *shape);

/* Looks keys[0..n-1] up, pinning each hit (hit[i] 1, locs[i] set; 0 for a miss). Returns the
 * hits, or -errno with a message. */
int gio__kv_store_lookup_pin(struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t n,
			     struct gio__kv_loc *locs, uint8_t *hit);

/* Drops the pins of the hits of gio__kv_store_lookup_pin(); read[i] non-zero counts the chunk's
 * bytes as delivered. */
void gio__kv_store_unpin(struct gio_kv_store *s, const struct gio__kv_loc *locs, const uint8_t *hit,
			 const uint8_t *read, uint32_t n);

/* The commit protocol's first step for a batch: slots for keys[0..n-1] (out[i].rc 0, or -EEXIST,
 * -ENOSPC, or the -errno of writing the slot's entry FREE), each entry that may read VALID written
 * FREE and flushed. Returns the keys reserved, or -errno with a message. */
int gio__kv_store_reserve(struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t n,
			  struct gio__kv_alloc *out);

/* The commit protocol's last steps for the keys reserved in a[0..n-1] whose data is written
 * (ok[i]): Flush of the data, VALID entries, Flush; the others are given back. rc[i] receives
 * each key's result. Returns the first failure of a key with ok[i], or 0. */
int gio__kv_store_commit(struct gio_kv_store *s, const struct gio_kv_u128 *keys, const struct gio__kv_alloc *a,
			 const uint8_t *ok, uint32_t n, int32_t *rc);

/* The first LBA of the chunk at loc (its layer-0 object). */
uint64_t gio__kv_store_chunk_lba(struct gio_kv_store *s, const struct gio__kv_loc *loc);

GIO_EXTERN_C_END

#endif
