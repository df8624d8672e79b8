/* The KV store's internals that tests reach: a crash point that stops a put where a power loss
 * could, leaving the devices as it would. Not installed, not part of the API. */
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

GIO_EXTERN_C_END

#endif
