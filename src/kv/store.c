/* The KV store's host runtime (giouring/kv/store.h): format, open, close and the CPU data path
 * over N contexts, in the format of giouring/kv/format.h with the commit protocol and reopen
 * rules of docs/store-format.md; src/kv/index.h decides placement. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/format.h>
#include <giouring/kv/store.h>

#include "../internal.h"
#include "dev.h"
#include "index.h"
#include "store_internal.h"

#define KV_DEFAULT_TIMEOUT_NS 5000000000ull

struct gio_kv_store {
	pthread_mutex_t lock;
	uint32_t n;
	struct gio__kv_dev dev[GIO_KV_STORE_MAX_DEVICES];
	struct gio__kv_index *ix;
	uint64_t timeout_ns;
	uint64_t chunk_bytes; /* L x object_bytes */
	uint64_t next_seq;
	uint64_t refused, unreadable;
	struct gio_kv_u128 id;
	int crash_at;
	/* The journal of removals (gio_kv_store_removed()): removal i is removed[i % KEPT]. */
	uint64_t nremoved;
	struct gio_kv_u128 removed[GIO_KV_STORE_REMOVED_KEPT];
	/* Keys whose load missed its deadline lately (gio_kv_store_remove_failed()): a ring, each
	 * entry live until its key misses again or a newer miss takes its place. */
	struct gio_kv_u128 strike[GIO_KV_STORE_STRIKES];
	uint8_t strike_live[GIO_KV_STORE_STRIKES];
	uint32_t strike_next;
};

/* Where layers [first, first + count) of the chunk at loc lie on its device. Every path that
 * moves chunk bytes takes its blocks from here, so that a per-layer path (one layer of a batch)
 * and the whole-chunk path cannot disagree on placement. */
static int store_place(struct gio_kv_store *s, const struct gio__kv_loc *loc, uint32_t first, uint32_t count,
		       struct gio__kv_dev **dv, struct gio_kv_span *span)
{
	struct gio_kv_span a, z;
	const struct gio_kv_layout *lay;
	if (loc->device >= s->n)
		return -EINVAL;
	lay = &s->dev[loc->device].lay;
	if (count == 0 || first >= lay->layers || count > lay->layers - first)
		return -EINVAL;
	if (gio_kv_layer_span(lay, loc->slot, first, &a) || gio_kv_layer_span(lay, loc->slot, first + count - 1, &z))
		return -EINVAL;
	span->slba = a.slba;
	span->nblocks = z.slba + z.nblocks - a.slba;
	span->head = a.head;
	span->tail = z.tail;
	*dv = &s->dev[loc->device];
	return 0;
}

/* first_rc NULL: a failed create or open, whose message the teardown's calls must not clear. */
static void store_free(struct gio_kv_store *s, int *first_rc)
{
	char msg[512];
	uint32_t d;
	snprintf(msg, sizeof(msg), "%s", gio_last_error());
	for (d = 0; d < s->n; d++)
		gio__kv_dev_detach(&s->dev[d], first_rc);
	gio__kv_index_destroy(s->ix);
	pthread_mutex_destroy(&s->lock);
	free(s);
	if (!first_rc || !*first_rc)
		gio__fail(0, "%s", msg);
}

/* Checks the arguments common to create and open, and attaches every device in the caller's
 * order: contexts (ctxs) or the caller's block devices (bds). */
static int store_alloc(struct gio_ctx *const *ctxs, const struct gio_kv_blockdev *bds, uint32_t n,
		       const struct gio_kv_store_params *p, struct gio_kv_store **out)
{
	struct gio_kv_store *s;
	uint32_t i, j;
	int rc;
	if ((!ctxs && !bds) || !p || !out)
		return gio__fail(-EINVAL, "giouring: kv store: NULL argument");
	*out = NULL;
	if (n == 0 || n > GIO_KV_STORE_MAX_DEVICES)
		return gio__fail(-EINVAL, "giouring: kv store: %u devices (1 to %u)", n, GIO_KV_STORE_MAX_DEVICES);
	if (p->reserved0)
		return gio__fail(-EINVAL, "giouring: kv store: params.reserved0 is not zero");
	if (p->layers == 0 || p->object_bytes == 0 || p->object_bytes > (UINT64_MAX / 2) / p->layers)
		return gio__fail(-EINVAL, "giouring: kv store: %u layers of %llu bytes: not a chunk shape", p->layers,
				 (unsigned long long)p->object_bytes);
	for (i = 0; ctxs && i < n; i++) {
		if (!ctxs[i])
			return gio__fail(-EINVAL, "giouring: kv store: ctxs[%u] is NULL", i);
		for (j = 0; j < i; j++)
			if (ctxs[j] == ctxs[i])
				return gio__fail(-EINVAL, "giouring: kv store: ctxs[%u] and ctxs[%u] are one context", j, i);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return gio__fail(-ENOMEM, "giouring: kv store: no memory");
	pthread_mutex_init(&s->lock, NULL);
	s->n = n;
	s->timeout_ns = p->timeout_ns ? p->timeout_ns : KV_DEFAULT_TIMEOUT_NS;
	s->chunk_bytes = (uint64_t)p->layers * p->object_bytes;
	s->next_seq = 1;
	for (i = 0; i < n; i++) {
		rc = ctxs ? gio__kv_dev_attach(&s->dev[i], ctxs[i], i, s->chunk_bytes, s->timeout_ns)
			  : gio__kv_dev_attach_bd(&s->dev[i], &bds[i], i, s->chunk_bytes, s->timeout_ns);
		if (rc) {
			s->n = i + 1;
			store_free(s, NULL);
			return rc;
		}
	}
	*out = s;
	return 0;
}

static int store_index_create(struct gio_kv_store *s)
{
	uint64_t slots[GIO_KV_STORE_MAX_DEVICES];
	uint32_t d;
	for (d = 0; d < s->n; d++)
		slots[d] = s->dev[d].lay.slots;
	return gio__kv_index_create(&s->ix, slots, s->n);
}

/* Writes device dv's format: old superblock gone, every entry FREE, Flush, superblock, Flush. */
static int dev_format(struct gio__kv_dev *dv)
{
	const uint64_t b = dv->lay.block_bytes, batch = dv->buf_bytes / b;
	const struct gio_kv_u128 zero = {0, 0};
	uint64_t slot, k;
	uint32_t reason = GIO_KV_R_OK;
	int rc;
	/* A format cut short must not leave the old superblock over entries of the new store. */
	memset(dv->mem, 0, dv->lay.index_lba * b);
	rc = gio__kv_dev_rw(dv, 1, 0, dv->lay.index_lba, "format: clearing the superblock");
	if (!rc)
		rc = gio__kv_dev_flush(dv, "format: flush");
	for (slot = 0; !rc && slot < dv->lay.slots; slot += batch) {
		const uint64_t nb = dv->lay.slots - slot < batch ? dv->lay.slots - slot : batch;
		memset(dv->mem, 0, nb * b);
		for (k = 0; k < nb; k++)
			if (gio_kv_entry_encode(dv->mem + k * b, &dv->sb, slot + k, GIO_KV_ENTRY_FREE, zero, 0, 0, &reason))
				return gio__fail(-EINVAL, "giouring: kv store: device %u: format: entry of slot %llu: %s",
						 dv->sb.device_index, (unsigned long long)(slot + k),
						 gio_kv_reason_str(reason));
		rc = gio__kv_dev_rw(dv, 1, gio_kv_entry_lba(&dv->lay, slot), nb, "format: writing FREE entries");
	}
	if (!rc)
		rc = gio__kv_dev_flush(dv, "format: flush of the index");
	if (rc)
		return rc;
	memset(dv->mem, 0, dv->lay.index_lba * b);
	if (gio_kv_sb_encode(dv->mem, &dv->sb, &reason))
		return gio__fail(-EINVAL, "giouring: kv store: device %u: format: superblock: %s", dv->sb.device_index,
				 gio_kv_reason_str(reason));
	rc = gio__kv_dev_rw(dv, 1, 0, dv->lay.index_lba, "format: writing the superblock");
	if (!rc)
		rc = gio__kv_dev_flush(dv, "format: flush of the superblock");
	return rc;
}

static int store_create(struct gio_ctx *const *ctxs, const struct gio_kv_blockdev *bds, uint32_t n,
			const struct gio_kv_store_params *p, struct gio_kv_store **out)
{
	struct gio_kv_store *s;
	uint32_t d, reason = GIO_KV_R_OK;
	int rc;
	gio__clear_error();
	if (out) /* nothing to close on failure, whatever *out held */
		*out = NULL;
	rc = store_alloc(ctxs, bds, n, p, &s);
	if (rc)
		return rc;
	do {
		if (getrandom(&s->id, sizeof(s->id), 0) != (ssize_t)sizeof(s->id)) {
			rc = gio__fail(-errno, "giouring: kv store: getrandom for the store id failed");
			goto fail;
		}
	} while (s->id.lo == 0 && s->id.hi == 0);
	for (d = 0; d < n; d++) {
		struct gio__kv_dev *dv = &s->dev[d];
		const uint64_t dev_bytes = dv->info.nblocks * dv->info.lba_bytes;
		const uint64_t bytes = p->store_bytes ? p->store_bytes : dev_bytes;
		if (bytes > dev_bytes) {
			rc = gio__fail(-EINVAL, "giouring: kv store: device %u: store_bytes %llu above its %llu bytes", d,
				       (unsigned long long)bytes, (unsigned long long)dev_bytes);
			goto fail;
		}
		rc = gio_kv_layout_compute(bytes, dv->info.lba_bytes, p->layers, p->object_bytes, &dv->lay, &reason);
		if (!rc)
			rc = gio_kv_sb_init(&dv->sb, &dv->lay, s->id, d, n, p->pool_signature, &reason);
		if (rc) {
			rc = gio__fail(rc, "giouring: kv store: device %u: layout of %llu bytes in %u-byte blocks: %s", d,
				       (unsigned long long)bytes, dv->info.lba_bytes, gio_kv_reason_str(reason));
			goto fail;
		}
	}
	rc = store_index_create(s);
	for (d = 0; !rc && d < n; d++)
		rc = dev_format(&s->dev[d]);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	store_free(s, NULL);
	return rc;
}

/* Reads, decodes and checks the superblock of each device, then puts the devices in the store's
 * order (dev[d] is the device whose superblock says d). */
static int store_read_superblocks(struct gio_kv_store *s, const struct gio_kv_store_params *p)
{
	struct gio_kv_sb sbs[GIO_KV_STORE_MAX_DEVICES];
	struct gio__kv_dev tmp[GIO_KV_STORE_MAX_DEVICES];
	uint32_t i, which = 0, reason = GIO_KV_R_OK;
	int rc;
	for (i = 0; i < s->n; i++) {
		struct gio__kv_dev *dv = &s->dev[i];
		rc = gio__kv_dev_rw(dv, 0, 0, 1, "open: reading the superblock");
		if (rc)
			return rc;
		rc = gio_kv_sb_decode(dv->mem, &sbs[i], &reason);
		if (!rc)
			rc = gio_kv_sb_check_device(&sbs[i], dv->info.lba_bytes, dv->info.nblocks, &reason);
		if (!rc)
			rc = gio_kv_sb_check_shape(&sbs[i], p->layers, p->object_bytes, p->pool_signature, &reason);
		if (rc)
			return gio__fail(rc, "giouring: kv store: ctxs[%u]: superblock refused: %s", i,
					 gio_kv_reason_str(reason));
	}
	rc = gio_kv_sb_check_set(sbs, s->n, &reason, &which);
	if (rc)
		return gio__fail(rc, "giouring: kv store: ctxs[%u]: superblock refused: %s (device %u of %u, against ctxs[0])",
				 which, gio_kv_reason_str(reason), sbs[which].device_index, sbs[which].device_count);
	for (i = 0; i < s->n; i++) {
		struct gio__kv_dev *dv = &tmp[sbs[i].device_index];
		*dv = s->dev[i];
		dv->sb = sbs[i];
		gio_kv_sb_layout(&sbs[i], &dv->lay);
	}
	memcpy(s->dev, tmp, s->n * sizeof(tmp[0]));
	s->id = sbs[0].store_id;
	return 0;
}

struct scan_arg {
	struct gio_kv_store *s;
	uint32_t d;
};

/* One entry of the open's scan (docs/store-format.md, "Reopen", step 2). */
static int scan_visit(void *arg, uint64_t slot, int rc, uint32_t reason, const struct gio_kv_entry *e)
{
	struct scan_arg *a = arg;
	(void)reason;
	if (rc == -EPROTO)
		a->s->refused++;
	else if (rc && rc != -ENODATA) {
		/* An unread entry may read VALID later: its slot is written FREE before reuse. */
		if (gio__kv_index_mark_stale(a->s->ix, a->d, slot) == 0)
			a->s->unreadable++;
	}
	if (rc || e->state != GIO_KV_ENTRY_VALID)
		return 0;
	rc = gio__kv_index_rebuild_insert(a->s->ix, e->key, a->d, slot, e->seq, NULL);
	if (rc < 0)
		return gio__fail(rc, "giouring: kv store: device %u: slot %llu: %s", a->d, (unsigned long long)slot,
				 gio_last_error());
	return 0;
}

/* Rebuilds the index from every entry of device d. */
static int dev_scan(struct gio_kv_store *s, uint32_t d)
{
	struct scan_arg a = {s, d};
	return gio__kv_dev_scan(&s->dev[d], scan_visit, &a);
}

/* Slots a scrub writes before each Flush: a bound on the ids it holds, not a tuning. */
#define KV_SCRUB_BATCH 256

/* Writes FREE, then flushes, the entry of every free slot that may still read VALID (a stale FREE
 * slot of the index): the losers of duplicate keys and the unreadable entries an open found, and
 * at a close the slots whose FREE write failed earlier (a removal's, an eviction's). Left as they
 * were, each could serve a key again at a later open: a key removed since, or an older chunk of a
 * key stored again since (an unreadable entry may even hold a sequence above the next one).
 * Each slot written and flushed is clean in the index. A failed write or Flush leaves its slots
 * stale, written FREE before their next use as before, and the scrub goes on with the next device;
 * -ETIME abandons the device (its bounce may still be written). Returns -ETIME where any device
 * missed a deadline, else the first error, with its message, or 0. Under the lock, or before the
 * store is handed out. */
static int store_scrub_locked(struct gio_kv_store *s, const char *what)
{
	struct gio__kv_entry_write w[KV_SCRUB_BATCH]; /* 12 KiB */
	uint32_t ids[KV_SCRUB_BATCH];
	char msg[512] = "";
	uint32_t d, n, k, written;
	uint64_t slot;
	int first = 0, rc, f;
	for (d = 0; d < s->n; d++) {
		struct gio__kv_dev *dv = &s->dev[d];
		for (slot = 0, rc = 0; slot < dv->lay.slots && !rc && !dv->abandoned;) {
			/* A batch of stale slots, written FREE together, then one Flush. */
			for (n = 0; slot < dv->lay.slots && n < KV_SCRUB_BATCH; slot++) {
				uint32_t id = 0, state = 0;
				int stale = 0;
				if (gio__kv_index_locate(s->ix, d, slot, &id) ||
				    gio__kv_index_peek(s->ix, id, NULL, &state, NULL, &stale, NULL, NULL) ||
				    state != GIO__KV_FREE || !stale)
					continue;
				memset(&w[n], 0, sizeof(w[n]));
				w[n].slot = slot;
				w[n].seq = s->next_seq - 1;
				w[n].state = GIO_KV_ENTRY_FREE;
				ids[n++] = id;
			}
			rc = n ? gio__kv_dev_write_entries(dv, w, n, what) : 0;
			gio__kv_note_failure(rc, &first, msg, sizeof(msg));
			for (k = 0, written = 0; k < n; k++)
				written += w[k].rc == 0;
			if (!written || dv->abandoned)
				continue;
			f = gio__kv_dev_flush(dv, what);
			for (k = 0; !f && k < n; k++)
				if (w[k].rc == 0)
					gio__kv_index_mark_clean(s->ix, ids[k]);
			gio__kv_note_failure(f, &first, msg, sizeof(msg));
			rc = rc ? rc : f;
		}
	}
	return first ? gio__fail(first, "%s", msg) : 0;
}

static int store_open(struct gio_ctx *const *ctxs, const struct gio_kv_blockdev *bds, uint32_t n,
		      const struct gio_kv_store_params *p, struct gio_kv_store **out)
{
	struct gio_kv_store *s;
	struct gio__kv_stats st;
	uint32_t d;
	int rc;
	gio__clear_error();
	if (out) /* nothing to close on failure, whatever *out held */
		*out = NULL;
	rc = store_alloc(ctxs, bds, n, p, &s);
	if (rc)
		return rc;
	rc = store_read_superblocks(s, p);
	if (!rc)
		rc = store_index_create(s);
	for (d = 0; !rc && d < n; d++)
		rc = dev_scan(s, d);
	if (!rc)
		rc = gio__kv_index_rebuild_done(s->ix);
	if (rc) {
		store_free(s, NULL);
		return rc;
	}
	gio__kv_index_stats(s->ix, &st);
	s->next_seq = st.max_seq + 1;
	/* Duplicates' losers and unreadable entries written FREE now, not when their slots are
	 * reused: until then a later open could serve them. A device that refuses the writes
	 * leaves them stale, as before; one that stops answering fails the open. */
	rc = store_scrub_locked(s, "open: writing FREE an older duplicate's or an unreadable entry");
	if (rc == -ETIME) {
		store_free(s, NULL);
		return rc;
	}
	gio__clear_error();
	*out = s;
	return 0;
}

int gio_kv_store_create(struct gio_ctx *const *ctxs, uint32_t n, const struct gio_kv_store_params *p,
			struct gio_kv_store **out)
{
	return store_create(ctxs, NULL, n, p, out);
}

int gio_kv_store_create_blockdevs(const struct gio_kv_blockdev *devs, uint32_t n, const struct gio_kv_store_params *p,
				  struct gio_kv_store **out)
{
	return store_create(NULL, devs, n, p, out);
}

int gio_kv_store_open(struct gio_ctx *const *ctxs, uint32_t n, const struct gio_kv_store_params *p,
		      struct gio_kv_store **out)
{
	return store_open(ctxs, NULL, n, p, out);
}

int gio_kv_store_open_blockdevs(const struct gio_kv_blockdev *devs, uint32_t n, const struct gio_kv_store_params *p,
				struct gio_kv_store **out)
{
	return store_open(NULL, devs, n, p, out);
}

int gio_kv_store_close(struct gio_kv_store *s)
{
	char msg[512];
	uint32_t d;
	int rc = 0;
	gio__clear_error();
	if (!s)
		return 0;
	/* A removal's or an eviction's FREE write that failed is tried again: its entry would
	 * otherwise serve the key again at the next open. */
	rc = store_scrub_locked(s, "close: writing FREE the entry of a removal or eviction that failed");
	if (rc) /* kept aside: the Flushes clear the message */
		snprintf(msg, sizeof(msg), "%s", gio_last_error());
	/* The last VALID entries are durable only after a Flush. */
	for (d = 0; d < s->n; d++)
		if (!s->dev[d].abandoned) {
			const int f = gio__kv_dev_flush(&s->dev[d], "close: flush");
			if (f && !rc) {
				rc = f;
				snprintf(msg, sizeof(msg), "%s", gio_last_error());
			}
		}
	if (rc)
		gio__fail(rc, "%s", msg);
	store_free(s, &rc);
	return rc;
}

void gio__kv_store_crash_at(struct gio_kv_store *s, int point)
{
	pthread_mutex_lock(&s->lock);
	s->crash_at = point;
	pthread_mutex_unlock(&s->lock);
}

struct gio__kv_index *gio__kv_store_index(struct gio_kv_store *s)
{
	return s->ix;
}

static int check_len(const struct gio_kv_store *s, const void *p, uint64_t len, const char *what)
{
	if (!s || !p)
		return gio__fail(-EINVAL, "giouring: kv store: %s: NULL argument", what);
	if (len != s->chunk_bytes)
		return gio__fail(-EINVAL, "giouring: kv store: %s: %llu bytes, a chunk is %llu", what,
				 (unsigned long long)len, (unsigned long long)s->chunk_bytes);
	return 0;
}

/* Entries to write across the store's devices: w[i] on device on[i], for the caller's item at[i]. */
struct entry_batch {
	struct gio__kv_entry_write *w;
	uint32_t *on, *at;
	uint32_t n;
};

static int batch_alloc(struct entry_batch *e, uint32_t n, const char *what)
{
	e->n = 0;
	e->w = malloc(sizeof(*e->w) * (n ? n : 1));
	e->on = malloc(sizeof(*e->on) * (n ? n : 1));
	e->at = malloc(sizeof(*e->at) * (n ? n : 1));
	if (e->w && e->on && e->at)
		return 0;
	free(e->w);
	free(e->on);
	free(e->at);
	e->w = NULL;
	e->on = e->at = NULL;
	return gio__fail(-ENOMEM, "giouring: kv store: %s: no memory for %u entries", what, n);
}

static void batch_free(struct entry_batch *e)
{
	free(e->w);
	free(e->on);
	free(e->at);
}

static void batch_add(struct entry_batch *e, uint32_t at, const struct gio__kv_loc *loc, uint32_t state,
		      struct gio_kv_u128 key, uint64_t seq, uint64_t data_len)
{
	struct gio__kv_entry_write *w = &e->w[e->n];
	memset(w, 0, sizeof(*w));
	w->slot = loc->slot;
	w->state = state;
	w->key = key;
	w->seq = seq;
	w->data_len = data_len;
	e->on[e->n] = loc->device;
	e->at[e->n++] = at;
}

/* Writes the batch's entries, one gio__kv_dev_write_entries() per device, and sets each one's
 * rc: the slots freed or committed together cost a few commands a device, not one each. Returns
 * the first failure with its message (-ETIME before any other), or 0. */
static int batch_write(struct gio_kv_store *s, struct entry_batch *e, const char *what)
{
	struct gio__kv_entry_write *part;
	uint32_t *from, d, i, m;
	char msg[512] = "";
	int first = 0;
	if (!e->n)
		return 0;
	part = malloc(sizeof(*part) * e->n);
	from = malloc(sizeof(*from) * e->n);
	if (!part || !from) {
		free(part);
		free(from);
		for (i = 0; i < e->n; i++)
			e->w[i].rc = -ENOMEM;
		return gio__fail(-ENOMEM, "giouring: kv store: %s: no memory for %u entries", what, e->n);
	}
	for (d = 0; d < s->n; d++) {
		for (i = 0, m = 0; i < e->n; i++)
			if (e->on[i] == d) {
				part[m] = e->w[i];
				from[m++] = i;
			}
		if (!m)
			continue;
		gio__kv_note_failure(gio__kv_dev_write_entries(&s->dev[d], part, m, what), &first, msg, sizeof(msg));
		for (i = 0; i < m; i++)
			e->w[from[i]].rc = part[i].rc;
	}
	free(part);
	free(from);
	return first ? gio__fail(first, "%s", msg) : 0;
}

/* Allocates slots to keys[0..n-1] (out[i] as gio__kv_index_alloc() says) and writes FREE and
 * flushes the entries that may still read VALID: the first step of the commit protocol
 * (docs/store-format.md). A key whose invalidation failed gets its slot back and the error in
 * out[i].rc. Returns the keys allocated, or -errno of the index. Under the lock. */
static int reserve_locked(struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t n, struct gio__kv_alloc *out)
{
	static const struct gio_kv_u128 zero = {0, 0};
	uint8_t dirty[GIO_KV_STORE_MAX_DEVICES] = {0};
	struct entry_batch e;
	uint32_t i, j, d, m = 0;
	int rc = gio__kv_index_alloc(s->ix, keys, n, out), got = rc;
	if (rc < 0)
		return rc;
	for (i = 0; i < n; i++) {
		if (out[i].evicted) /* gone from the index now, whatever becomes of the new key's write */
			s->removed[s->nremoved++ % GIO_KV_STORE_REMOVED_KEPT] = out[i].evicted_key;
		m += out[i].rc == 0 && out[i].invalidate;
	}
	if (m && (rc = batch_alloc(&e, m, "writing entries FREE")) != 0) {
		for (i = 0; i < n; i++)
			if (out[i].rc == 0 && out[i].invalidate) {
				gio__kv_index_abort(s->ix, out[i].loc.id);
				out[i].rc = rc;
				got--;
			}
		return got;
	}
	if (m) {
		for (i = 0; i < n; i++)
			if (out[i].rc == 0 && out[i].invalidate)
				batch_add(&e, i, &out[i].loc, GIO_KV_ENTRY_FREE, zero, s->next_seq - 1, 0);
		(void)batch_write(s, &e, "writing an entry FREE");
		for (j = 0; j < e.n; j++) {
			i = e.at[j];
			if (e.w[j].rc) {
				gio__kv_index_abort(s->ix, out[i].loc.id);
				out[i].rc = e.w[j].rc;
				got--;
			} else {
				dirty[e.on[j]] = 1;
			}
		}
		batch_free(&e);
	}
	/* One Flush per device makes its FREE entries durable before any data lands on their slots. */
	for (d = 0; d < s->n; d++)
		if (dirty[d] && (rc = gio__kv_dev_flush(&s->dev[d], "flush of the FREE entries")) != 0)
			for (i = 0; i < n; i++)
				if (out[i].rc == 0 && out[i].loc.device == d) {
					gio__kv_index_abort(s->ix, out[i].loc.id);
					out[i].rc = rc;
					got--;
				}
	return got;
}

/* The last steps of the commit protocol for the keys reserved in a[0..n-1] whose data is written
 * (ok[i] non-zero; the others are given back): a Flush of the data on each device, the VALID
 * entries (written together: gio__kv_dev_write_entries()), and a Flush that makes them durable.
 * rc[i] receives each key's result (0: committed). Returns the first failure (a missed deadline
 * before any other) with its message, or 0. Under the lock. */
static int commit_locked(struct gio_kv_store *s, const struct gio_kv_u128 *keys, const struct gio__kv_alloc *a,
			 const uint8_t *ok, uint32_t n, int32_t *rc)
{
	uint8_t used[GIO_KV_STORE_MAX_DEVICES] = {0}, committed[GIO_KV_STORE_MAX_DEVICES] = {0};
	int drc[GIO_KV_STORE_MAX_DEVICES] = {0};
	struct entry_batch e;
	char msg[512] = "";
	uint64_t seq0 = s->next_seq;
	uint32_t i, j, d;
	int noted = 0, r;
	for (i = 0; i < n; i++)
		if (a[i].rc == 0 && ok[i])
			used[a[i].loc.device] = 1;
	for (d = 0; d < s->n; d++)
		if (used[d]) {
			drc[d] = gio__kv_dev_flush(&s->dev[d], "flush of the data");
			gio__kv_note_failure(drc[d], &noted, msg, sizeof(msg));
		}
	if (s->crash_at == GIO__KV_CRASH_AFTER_DATA)
		for (d = 0; d < s->n; d++)
			if (used[d] && !drc[d]) {
				drc[d] = gio__fail(-ECANCELED, "giouring: kv store: stopped at crash point %d", s->crash_at);
				gio__kv_note_failure(drc[d], &noted, msg, sizeof(msg));
			}
	/* The VALID entries of the keys whose data is durable, written together. */
	for (i = 0, j = 0; i < n; i++)
		j += a[i].rc == 0 && ok[i] && !drc[a[i].loc.device];
	memset(&e, 0, sizeof(e));
	if (j && (r = batch_alloc(&e, j, "writing the VALID entries")) != 0) {
		gio__kv_note_failure(r, &noted, msg, sizeof(msg));
	} else if (j) {
		for (i = 0; i < n; i++)
			if (a[i].rc == 0 && ok[i] && !drc[a[i].loc.device])
				batch_add(&e, i, &a[i].loc, GIO_KV_ENTRY_VALID, keys[i], seq0 + i, s->chunk_bytes);
		gio__kv_note_failure(batch_write(s, &e, "writing the VALID entry"), &noted, msg, sizeof(msg));
	}
	for (i = 0, j = 0; i < n; i++) {
		if (a[i].rc) {
			rc[i] = a[i].rc;
			continue;
		}
		r = ok[i] ? drc[a[i].loc.device] : -ECANCELED;
		if (!r)
			r = e.w && j < e.n && e.at[j] == i ? e.w[j++].rc : -ENOMEM;
		rc[i] = r;
		if (r) {
			gio__kv_index_abort(s->ix, a[i].loc.id);
			continue;
		}
		gio__kv_index_commit(s->ix, a[i].loc.id, seq0 + i);
		gio__kv_index_add_bytes(s->ix, 0, s->chunk_bytes);
		committed[a[i].loc.device] = 1;
	}
	batch_free(&e);
	s->next_seq = seq0 + n;
	/* The VALID entries durable before the call returns: a committed chunk survives a power loss.
	 * The Flushes' calls clear the message of an earlier failure: it is kept aside. */
	for (d = 0; d < s->n; d++)
		if (committed[d]) {
			const int f = gio__kv_dev_flush(&s->dev[d], "flush of the VALID entries");
			gio__kv_note_failure(f, &noted, msg, sizeof(msg));
		}
	/* Every failure of a written key's step was noted (-ETIME first), so rc and message agree. */
	return noted ? gio__fail(noted, "%s", msg) : 0;
}

/* The commit protocol (docs/store-format.md) for one chunk through the bounce. */
static int put_locked(struct gio_kv_store *s, struct gio_kv_u128 key, const void *src)
{
	struct gio__kv_alloc a;
	struct gio_kv_span span;
	struct gio__kv_dev *dv;
	uint8_t ok = 0;
	int32_t res = 0;
	int rc = reserve_locked(s, &key, 1, &a);
	if (rc < 0)
		return rc;
	if (a.rc == -EEXIST)
		return gio__fail(-EEXIST, "giouring: kv store: put: key %016llx%016llx is stored or being stored",
				 (unsigned long long)key.hi, (unsigned long long)key.lo);
	if (a.rc == -ENOSPC)
		return gio__fail(a.rc, "giouring: kv store: put: no free slot and every chunk is pinned");
	if (a.rc)
		return a.rc; /* the invalidation's message */
	rc = store_place(s, &a.loc, 0, s->dev[a.loc.device].lay.layers, &dv, &span);
	if (rc) {
		gio__kv_index_abort(s->ix, a.loc.id);
		return gio__fail(rc, "giouring: kv store: put: device %u slot %llu has no place", a.loc.device,
				 (unsigned long long)a.loc.slot);
	}
	if (s->crash_at == GIO__KV_CRASH_AFTER_FREE) {
		rc = gio__fail(-ECANCELED, "giouring: kv store: put: stopped at crash point %d", s->crash_at);
	} else {
		const uint64_t bytes = span.nblocks * dv->lay.block_bytes;
		memcpy(dv->mem, src, s->chunk_bytes);
		memset(dv->mem + s->chunk_bytes, 0, bytes - s->chunk_bytes);
		rc = gio__kv_dev_rw(dv, 1, span.slba, span.nblocks, "put: writing the data");
		ok = rc == 0;
	}
	{
		const int c = commit_locked(s, &key, &a, &ok, 1, &res);
		return rc ? rc : res ? res : c;
	}
}

int gio_kv_store_put(struct gio_kv_store *s, struct gio_kv_u128 key, const void *src, uint64_t len)
{
	int rc;
	gio__clear_error();
	rc = check_len(s, src, len, "put");
	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	rc = put_locked(s, key, src);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int get_locked(struct gio_kv_store *s, struct gio_kv_u128 key, void *dst)
{
	struct gio__kv_loc loc;
	struct gio_kv_span span;
	struct gio__kv_dev *dv;
	int rc = gio__kv_index_lookup(s->ix, key, 1, &loc);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return gio__fail(rc, "giouring: kv store: get: lookup failed: %s", gio_last_error());
	rc = store_place(s, &loc, 0, s->dev[loc.device].lay.layers, &dv, &span);
	if (!rc)
		rc = gio__kv_dev_rw(dv, 0, span.slba, span.nblocks, "get: reading the data");
	if (!rc)
		memcpy(dst, dv->mem, s->chunk_bytes);
	gio__kv_index_unpin(s->ix, loc.id);
	if (rc)
		return rc;
	gio__kv_index_add_bytes(s->ix, s->chunk_bytes, 0);
	return 1;
}

int gio_kv_store_get(struct gio_kv_store *s, struct gio_kv_u128 key, void *dst, uint64_t len)
{
	int rc;
	gio__clear_error();
	rc = check_len(s, dst, len, "get");
	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	rc = get_locked(s, key, dst);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int gio_kv_store_contains(struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t n, uint8_t *found)
{
	uint32_t i;
	int hits = 0;
	gio__clear_error();
	if (!s || (n && (!keys || !found)))
		return gio__fail(-EINVAL, "giouring: kv store: contains: NULL %s", !s ? "store" : !keys ? "keys" : "found");
	if (n > INT32_MAX)
		return gio__fail(-EINVAL, "giouring: kv store: contains: %u keys (at most INT32_MAX)", n);
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < n; i++) {
		found[i] = (uint8_t)gio__kv_index_contains(s->ix, keys[i]);
		hits += found[i];
	}
	pthread_mutex_unlock(&s->lock);
	return hits;
}

/* gio_kv_store_remove() under the lock. */
static int remove_locked(struct gio_kv_store *s, struct gio_kv_u128 key)
{
	struct gio__kv_entry_write w;
	struct gio__kv_loc loc;
	struct gio__kv_dev *dv;
	int rc = gio__kv_index_remove(s->ix, key, &loc);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return gio__fail(rc, "giouring: kv store: remove: key %016llx%016llx is being read or written",
				 (unsigned long long)key.hi, (unsigned long long)key.lo);
	/* Out of the index first, whatever the device then says: a chunk whose entry cannot be
	 * written FREE is still not served again, and its slot, left stale by the index, is written
	 * FREE before its next use. */
	s->removed[s->nremoved++ % GIO_KV_STORE_REMOVED_KEPT] = key;
	dv = &s->dev[loc.device];
	memset(&w, 0, sizeof(w));
	w.slot = loc.slot;
	w.seq = s->next_seq - 1;
	w.state = GIO_KV_ENTRY_FREE;
	rc = gio__kv_dev_write_entries(dv, &w, 1, "remove: writing the entry FREE");
	if (!rc)
		rc = gio__kv_dev_flush(dv, "remove: flush of the FREE entry");
	if (!rc) /* its next writer need not write it FREE again */
		gio__kv_index_mark_clean(s->ix, loc.id);
	return rc ? rc : 1;
}

int gio_kv_store_remove(struct gio_kv_store *s, struct gio_kv_u128 key)
{
	int rc;
	gio__clear_error();
	if (!s)
		return gio__fail(-EINVAL, "giouring: kv store: remove: NULL store");
	pthread_mutex_lock(&s->lock);
	rc = remove_locked(s, key);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* Whether key k missed a deadline before, within the ring: if so it leaves the ring (it is to be
 * removed), else it enters it in the oldest entry's place. Under the lock. */
static int struck_twice(struct gio_kv_store *s, struct gio_kv_u128 k)
{
	uint32_t i;
	for (i = 0; i < GIO_KV_STORE_STRIKES; i++)
		if (s->strike_live[i] && gio_kv_u128_eq(s->strike[i], k)) {
			s->strike_live[i] = 0;
			return 1;
		}
	i = s->strike_next++ % GIO_KV_STORE_STRIKES;
	s->strike[i] = k;
	s->strike_live[i] = 1;
	return 0;
}

int gio_kv_store_remove_failed(struct gio_kv_store *s, const struct gio_kv_u128 *keys, const int32_t *rcs,
			       uint32_t n, uint8_t *removed)
{
	uint32_t i;
	int got = 0, rc = 0;
	gio__clear_error();
	if (!s || (n && (!keys || !rcs)))
		return gio__fail(-EINVAL, "giouring: kv store: remove_failed: NULL %s", !s ? "store" : !keys ? "keys" : "results");
	if (removed)
		memset(removed, 0, n);
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < n; i++) {
		if (rcs[i] != -EIO && !(rcs[i] == -ETIME && struck_twice(s, keys[i])))
			continue;
		if ((rc = remove_locked(s, keys[i])) < 0)
			break;
		if (rc > 0) {
			got++;
			if (removed)
				removed[i] = 1;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		return gio__fail(rc, "giouring: kv store: remove_failed: key %u, whose load failed with %s: %s", i,
				 rcs[i] == -EIO ? "EIO" : "ETIME a second time", gio_last_error());
	return got;
}

/* The argument checks of the calls that give keys from a cursor (removed, keys). */
static int check_key_query(const struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t cap,
			   const uint64_t *next, const char *what)
{
	gio__clear_error();
	if (!s || !next || (cap && !keys))
		return gio__fail(-EINVAL, "giouring: kv store: %s: NULL %s", what, !s ? "store" : !next ? "next" : "keys");
	if (cap > INT32_MAX)
		return gio__fail(-EINVAL, "giouring: kv store: %s: room for %u keys (at most INT32_MAX)", what, cap);
	return 0;
}

int gio_kv_store_removed(struct gio_kv_store *s, uint64_t since, struct gio_kv_u128 *keys, uint32_t cap,
			 uint64_t *next)
{
	uint64_t i, n;
	int rc = check_key_query(s, keys, cap, next, "removed");
	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	if (since > s->nremoved) {
		n = s->nremoved;
		pthread_mutex_unlock(&s->lock);
		return gio__fail(-EINVAL, "giouring: kv store: removed: since %llu, but the store removed %llu keys",
				 (unsigned long long)since, (unsigned long long)n);
	}
	if (s->nremoved - since > GIO_KV_STORE_REMOVED_KEPT) {
		n = s->nremoved - since;
		*next = s->nremoved;
		pthread_mutex_unlock(&s->lock);
		return gio__fail(-ERANGE, "giouring: kv store: removed: %llu keys since %llu, the journal keeps %u",
				 (unsigned long long)n, (unsigned long long)since, GIO_KV_STORE_REMOVED_KEPT);
	}
	n = s->nremoved - since < cap ? s->nremoved - since : cap;
	for (i = 0; i < n; i++)
		keys[i] = s->removed[(since + i) % GIO_KV_STORE_REMOVED_KEPT];
	*next = since + n;
	rc = (int)n;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int gio_kv_store_keys(struct gio_kv_store *s, uint64_t from, struct gio_kv_u128 *keys, uint32_t cap, uint64_t *next)
{
	struct gio__kv_stats x;
	uint64_t id;
	uint32_t state;
	int n = check_key_query(s, keys, cap, next, "keys");
	if (n)
		return n;
	pthread_mutex_lock(&s->lock);
	gio__kv_index_stats(s->ix, &x);
	if (from > x.capacity) {
		pthread_mutex_unlock(&s->lock);
		return gio__fail(-EINVAL, "giouring: kv store: keys: from slot %llu, the store has %llu",
				 (unsigned long long)from, (unsigned long long)x.capacity);
	}
	for (id = from; id < x.capacity && (uint32_t)n < cap; id++)
		if (gio__kv_index_peek(s->ix, (uint32_t)id, NULL, &state, NULL, NULL, &keys[n], NULL) == 0 &&
		    state == GIO__KV_VALID)
			n++;
	*next = id;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void gio_kv_store_info(struct gio_kv_store *s, struct gio_kv_store_stats *st)
{
	struct gio__kv_stats x;
	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	gio__kv_index_stats(s->ix, &x);
	st->capacity = x.capacity;
	st->valid = x.valid;
	st->free = x.free;
	st->pinned = x.pinned;
	st->hits = x.hits;
	st->misses = x.misses;
	st->evictions = x.evictions;
	st->duplicates = x.duplicates;
	st->refused = s->refused;
	st->unreadable = s->unreadable;
	st->bytes_read = x.bytes_read;
	st->bytes_written = x.bytes_written;
	st->next_seq = s->next_seq;
	st->devices = s->n;
	st->store_id = s->id;
	pthread_mutex_unlock(&s->lock);
}

int gio_kv_store_device_pos(const struct gio_kv_store *s, uint32_t d)
{
	gio__clear_error();
	if (!s || d >= s->n)
		return gio__fail(-EINVAL, "giouring: kv store: no device %u", d);
	return (int)s->dev[d].pos; /* set once at open, never changed: no lock */
}

void gio__kv_store_shape(struct gio_kv_store *s, struct gio__kv_shape *shape)
{
	uint32_t d;
	memset(shape, 0, sizeof(*shape));
	shape->devices = s->n;
	shape->layers = s->dev[0].lay.layers;
	shape->object_bytes = s->dev[0].lay.object_bytes;
	shape->timeout_ns = s->timeout_ns;
	for (d = 0; d < s->n; d++)
		shape->lba_bytes[d] = s->dev[d].info.lba_bytes;
}

int gio__kv_store_lookup_pin(struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t n,
			     struct gio__kv_loc *locs, uint8_t *hit)
{
	uint32_t i;
	int hits = 0, rc = 0;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < n; i++) {
		const int r = gio__kv_index_lookup(s->ix, keys[i], 1, &locs[i]);
		hit[i] = r == 0;
		if (r == 0) {
			hits++;
		} else if (r != -ENOENT) {
			rc = gio__fail(r, "giouring: kv store: lookup of key %u failed: %s", i, gio_last_error());
			break;
		}
	}
	if (rc) /* nothing pinned on failure */
		while (i-- > 0)
			if (hit[i]) {
				gio__kv_index_unpin(s->ix, locs[i].id);
				hit[i] = 0;
			}
	pthread_mutex_unlock(&s->lock);
	return rc ? rc : hits;
}

void gio__kv_store_unpin(struct gio_kv_store *s, const struct gio__kv_loc *locs, const uint8_t *hit,
			 const uint8_t *read, uint32_t n)
{
	uint32_t i;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < n; i++)
		if (hit[i]) {
			gio__kv_index_unpin(s->ix, locs[i].id);
			if (read[i])
				gio__kv_index_add_bytes(s->ix, s->chunk_bytes, 0);
		}
	pthread_mutex_unlock(&s->lock);
}

int gio__kv_store_reserve(struct gio_kv_store *s, const struct gio_kv_u128 *keys, uint32_t n,
			  struct gio__kv_alloc *out)
{
	int rc;
	pthread_mutex_lock(&s->lock);
	rc = reserve_locked(s, keys, n, out);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int gio__kv_store_commit(struct gio_kv_store *s, const struct gio_kv_u128 *keys, const struct gio__kv_alloc *a,
			 const uint8_t *ok, uint32_t n, int32_t *rc)
{
	int r;
	pthread_mutex_lock(&s->lock);
	r = commit_locked(s, keys, a, ok, n, rc);
	pthread_mutex_unlock(&s->lock);
	return r;
}

uint64_t gio__kv_store_chunk_lba(struct gio_kv_store *s, const struct gio__kv_loc *loc)
{
	return gio_kv_slot_lba(&s->dev[loc->device].lay, loc->slot);
}
