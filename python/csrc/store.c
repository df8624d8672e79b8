/* Stores over N targets: each target opened from its URI, the pool's torch storages registered
 * with it, its P2P table built (SGL where the controller takes SGLs, PRP otherwise), and the KV
 * store created (formatted) or opened over them (giouring/kv/store.h). GPU-executed targets are
 * gpu.cu's. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpy.h"

static const uint64_t kDefaultTimeout = 5000000000ull;

/* The lists of a context's table live in host memory registered with the context. */
static int ctx_lists_bus(struct gpy_store *s, struct gpy_dev *d, uint64_t *addr)
{
	int rc = gio_ctx_register(d->ctx, d->lists, d->lists_bytes, addr);
	(void)s;
	return rc ? gpy_lib(rc, "registering the P2P table's lists") : 0;
}

int gpy_table_build(struct gpy_store *s, struct gpy_dev *d, const struct gio_kv_pool *bus, int allow_prp,
		    int (*lists_bus_of)(struct gpy_store *s, struct gpy_dev *d, uint64_t *addr))
{
	struct gio_kv_table_sizes sz;
	uint64_t list_stride = 0, addr = 0, e;
	int rc;
	gio_kv_table_plan(bus, &s->runs, &d->caps, &sz);
	if (sz.sgl_rc == 0) {
		d->psdt = GIO_PSDT_SGL_MPTR;
		d->cmds = 1;
		d->table_entries = sz.objects;
		d->lists_bytes = sz.sgl_list_bytes;
	} else if (allow_prp && sz.prp_rc == 0) {
		d->psdt = GIO_PSDT_PRP;
		d->cmds = gio_kv_table_prp_cmds(bus, &s->runs, &d->caps);
		/* One command an object: lists in 256-byte chunks, as Linux's driver allocates them;
		 * one a run: the plan's bound for a run's list. */
		list_stride = d->cmds == 1 ? gio_prp_object_alloc_bytes(s->runs.object_bytes, d->caps.page_bytes,
									GIO_PRP_CHUNK_LINUX)
					   : sz.prp_list_bytes;
		d->table_entries = sz.objects * d->cmds;
		d->lists_bytes = d->table_entries * list_stride;
	} else {
		return gpy_fail(allow_prp ? sz.sgl_rc : -EOPNOTSUPP,
				"the pool's objects fit neither an SGL command (%d) nor %s", sz.sgl_rc,
				allow_prp ? "PRP commands" : "PRPs on this kind of target");
	}
	d->table = calloc(d->table_entries, sizeof(*d->table));
	if (!d->table)
		return gpy_fail(-ENOMEM, "no memory for a P2P table of %llu entries", (unsigned long long)d->table_entries);
	if (d->lists_bytes) {
		d->lists = aligned_alloc(4096, (d->lists_bytes + 4095) / 4096 * 4096);
		if (!d->lists)
			return gpy_fail(-ENOMEM, "no memory for the P2P table's lists");
		memset(d->lists, 0, d->lists_bytes);
		if ((rc = lists_bus_of(s, d, &addr)) != 0)
			return rc;
	}
	for (e = 0; e < d->table_entries; e++) {
		rc = d->psdt == GIO_PSDT_PRP
			     ? gio_kv_table_entry_prp(bus, &s->runs, &d->caps, e, addr, list_stride, &d->table[e], d->lists)
			     : gio_kv_table_entry(bus, &s->runs, &d->caps, e, addr, &d->table[e].sgl, d->lists);
		if (rc)
			return gpy_fail(rc, "P2P table entry %llu refused", (unsigned long long)e);
	}
	return 0;
}

/* Commands per object on the staged path: the fewest that divide the object into whole blocks the
 * controller takes in one command (a slot holds one command's data, contiguous). */
static int staged_cmds(const struct gpy_store *s, const struct gpy_dev *d, uint32_t *cmds)
{
	const uint64_t obj = s->runs.object_bytes, lba = 1ull << d->lba_shift;
	const uint64_t max = d->caps.max_xfer_bytes ? d->caps.max_xfer_bytes : obj;
	uint32_t c;
	for (c = 1; c <= 1024; c++)
		if (obj % c == 0 && (obj / c) % lba == 0 && obj / c <= max) {
			*cmds = c;
			return 0;
		}
	return gpy_fail(-EINVAL, "an object of %llu bytes splits into no commands of whole %llu-byte blocks of at most %llu "
			"bytes (the controller's transfer limit)", (unsigned long long)obj, (unsigned long long)lba,
			(unsigned long long)max);
}

/* The pool's storages with a context: registered, peer-to-peer (gio_ctx_gpu_path() for GPU memory:
 * p2p where the controller reaches it), or not at all on the staged path. */
static int ctx_register_pool(struct gpy_store *s, struct gpy_dev *d)
{
	struct gio_gpu_path gp;
	uint32_t i;
	int rc;
	if (s->device < 0) { /* host memory: registered, unless the URI asks for staging */
		d->path = gio_ctx_path_asked(d->ctx) == GIO_GPU_PATH_STAGED ? GIO_GPU_PATH_STAGED : GIO_GPU_PATH_P2P;
		snprintf(d->why, sizeof(d->why), "%s", d->path == GIO_GPU_PATH_STAGED
				 ? "staged: path=staged in the URI (a host pool: the CPU engine copies through the staging area)"
				 : "p2p: the pool is in host memory, registered with the target");
		for (i = 0; d->path == GIO_GPU_PATH_P2P && i < s->nregions; i++)
			if ((rc = gio_ctx_register(d->ctx, (void *)(uintptr_t)s->regions[2 * i], (size_t)s->regions[2 * i + 1],
						   NULL)) != 0)
				return gpy_lib(rc, "registering the pool's memory");
		return 0;
	}
	for (i = 0; i < s->nregions; i++) {
		rc = gio_ctx_gpu_path(d->ctx, (void *)(uintptr_t)s->regions[2 * i], (size_t)s->regions[2 * i + 1], &gp);
		if (rc)
			return gpy_lib(rc, "registering the pool's GPU memory");
		if (i == 0) {
			d->path = gp.path;
			snprintf(d->why, sizeof(d->why), "%s", gp.why);
		}
		if (gp.path != d->path) /* the pool's first storage was registered: one path per device */
			return gpy_fail(-EOPNOTSUPP, "pool storage %u takes the staged path (%s) where storage 0 was "
					"registered peer-to-peer: give the URI path=staged", i, gp.why);
		if (gp.path == GIO_GPU_PATH_STAGED)
			return 0; /* the rest would be staged too: nothing registered */
	}
	return 0;
}

/* Registers the pool with a context and builds its table (staged: only the commands' shape). */
static int ctx_attach(struct gpy_store *s, struct gpy_dev *d)
{
	struct gio_kv_pool bus;
	struct gio_ns_info ns;
	uint64_t *bases = NULL;
	int rc;
	gio_ctx_info(d->ctx, &ns);
	d->caps = *gio_ctx_dptr_caps(d->ctx);
	d->nsid = ns.nsid;
	d->lba_shift = (uint32_t)__builtin_ctz(ns.lba_bytes);
	if ((rc = ctx_register_pool(s, d)) != 0)
		return rc;
	if (d->path == GIO_GPU_PATH_STAGED) /* the form (SGL or PRP) is the staging area's, at the plan */
		return staged_cmds(s, d, &d->cmds);
	if (s->pool.base_mode != GIO_KV_BASE_ONE &&
	    !(bases = calloc((size_t)s->pool.extent[GIO_KV_LAYER] * s->pool.extent[GIO_KV_PART], sizeof(*bases))))
		return gpy_fail(-ENOMEM, "no memory");
	rc = gio_kv_pool_bus(d->ctx, &s->pool, bases, &bus);
	if (rc == 0)
		rc = gpy_table_build(s, d, &bus, 1, ctx_lists_bus);
	else
		rc = gpy_lib(rc, "the pool at the target's bus addresses");
	free(bases);
	return rc;
}

/* Frees a store; the first failure's rc (messages are the caller's to set). */
static int store_free(struct gpy_store *s)
{
	int ret = 0, rc;
	uint32_t i;
	if (s->store && (rc = gio_kv_store_close(s->store)) != 0 && !ret)
		ret = gpy_lib(rc, "closing the store");
	/* Every executor stopped before the first target's tables are freed (gpy_gpu_stop()). */
	if ((rc = gpy_gpu_stop(s)) != 0 && !ret)
		ret = rc;
	for (i = 0; i < s->ndevs; i++) {
		struct gpy_dev *d = &s->dev[i];
		if (d->gpu && (rc = gpy_gpu_close(s, d)) != 0 && !ret)
			ret = rc;
		if (d->ctx && (rc = gio_ctx_close(d->ctx)) != 0 && !ret)
			ret = gpy_lib(rc, "closing a target");
		free(d->table);
		free(d->lists);
	}
	gpy_gpu_release(s);
	free(s->pool_bases);
	free(s);
	return ret;
}

int gpy_store_open(const char *const *uris, uint32_t n, const struct gpy_pool_desc *desc, int create,
		   uint64_t store_bytes, uint64_t timeout_ns, struct gpy_store **out)
{
	struct gio_kv_store_params sp;
	struct gio_ctx *ctxs[GIO_KV_STORE_MAX_DEVICES];
	struct gpy_store *s;
	uint64_t object_bytes, signature;
	uint32_t i, gpu = 0;
	int rc;
	gpy_clear_error();
	if (!uris || !out || n == 0 || n > GIO_KV_STORE_MAX_DEVICES)
		return gpy_fail(-EINVAL, "a store spans 1 to %u targets, not %u", GIO_KV_STORE_MAX_DEVICES, n);
	if ((rc = gpy_pool_check(desc, &object_bytes, &signature, NULL)) != 0)
		return rc;
	if (!(s = calloc(1, sizeof(*s))))
		return gpy_fail(-ENOMEM, "no memory");
	s->device = desc->device;
	if (desc->nregions > GPY_MAX_REGIONS || (desc->nregions && !desc->regions)) {
		free(s);
		return gpy_fail(-EINVAL, "the pool's tensors are in %u storages; at most %u", desc->nregions, GPY_MAX_REGIONS);
	}
	s->nregions = desc->nregions;
	memcpy(s->regions, desc->regions, 2 * sizeof(uint64_t) * desc->nregions);
	s->timeout_ns = timeout_ns ? timeout_ns : kDefaultTimeout;
	if (!(s->pool_bases = calloc((size_t)desc->extent[GIO_KV_LAYER] * desc->extent[GIO_KV_PART] + 1, sizeof(uint64_t)))) {
		free(s);
		return gpy_fail(-ENOMEM, "no memory");
	}
	gpy_pool_from_desc(desc, &s->pool, s->pool_bases);
	if (s->pool.base_mode == GIO_KV_BASE_ONE)
		s->pool.bases = NULL;
	gio_kv_pool_runs(&s->pool, &s->runs); /* checked by gpy_pool_check() */
	for (i = 0; i < n; i++, s->ndevs++) {
		struct gpy_dev *d = &s->dev[i];
		rc = gpy_gpu_open(s, d, uris[i]);
		if (rc == 1) {
			gpu++;
			continue;
		}
		if (rc == 0 && (rc = gio_ctx_open(uris[i], &d->ctx)) != 0)
			rc = gpy_lib(rc, "opening the target");
		if (rc) {
			gpy_fail(rc, "target %u (%s): %s", i, uris[i], gpy_last_error());
			goto fail;
		}
	}
	if (gpu && gpu != n) {
		rc = gpy_fail(-EINVAL, "a store's targets are all GPU-executed (mem://hbm, exec=gpu) or none is");
		goto fail;
	}
	s->gpu_targets = gpu == n;
	for (i = 0; i < n; i++) {
		rc = s->gpu_targets ? gpy_gpu_attach(s, &s->dev[i]) : ctx_attach(s, &s->dev[i]);
		if (rc == 0 && s->gpu_targets) {
			s->dev[i].path = GIO_GPU_PATH_P2P;
			snprintf(s->dev[i].why, sizeof(s->dev[i].why), "p2p: a GPU-executed target moves data into the pool itself");
		}
		if (rc) {
			gpy_fail(rc, "target %u (%s): %s", i, uris[i], gpy_last_error());
			goto fail;
		}
		ctxs[i] = s->dev[i].ctx;
		s->bds[i] = s->dev[i].bd;
	}
	memset(&sp, 0, sizeof(sp));
	sp.layers = s->pool.extent[GIO_KV_LAYER];
	sp.object_bytes = object_bytes;
	sp.pool_signature = signature;
	sp.store_bytes = store_bytes;
	sp.timeout_ns = s->timeout_ns;
	if (s->gpu_targets)
		rc = create ? gio_kv_store_create_blockdevs(s->bds, n, &sp, &s->store)
			    : gio_kv_store_open_blockdevs(s->bds, n, &sp, &s->store);
	else
		rc = create ? gio_kv_store_create(ctxs, n, &sp, &s->store) : gio_kv_store_open(ctxs, n, &sp, &s->store);
	if (rc) {
		rc = gpy_lib(rc, create ? "creating the store" : "opening the store");
		goto fail;
	}
	for (i = 0; i < n; i++)
		s->order[i] = (uint32_t)gio_kv_store_device_pos(s->store, i); /* i < n: cannot fail */
	*out = s;
	return 0;
fail: {
	struct gpy_saved_error e;
	gpy_error_save(&e);
	store_free(s);
	return gpy_error_restore(rc, &e);
}
}

int gpy_store_close(struct gpy_store *s)
{
	gpy_clear_error();
	if (!s)
		return 0;
	if (s->plans)
		return gpy_fail(-EBUSY, "%u plans of the store are alive: destroy them first", s->plans);
	return store_free(s);
}

int gpy_store_stats(struct gpy_store *s, uint64_t *out, uint32_t n)
{
	struct gio_kv_store_stats st;
	uint64_t all[16];
	gpy_clear_error();
	if (!s || !out || n > 16)
		return gpy_fail(-EINVAL, "no store, or more than 16 numbers asked");
	gio_kv_store_info(s->store, &st);
	all[0] = st.capacity;
	all[1] = st.valid;
	all[2] = st.free;
	all[3] = st.pinned;
	all[4] = st.hits;
	all[5] = st.misses;
	all[6] = st.evictions;
	all[7] = st.duplicates;
	all[8] = st.refused;
	all[9] = st.unreadable;
	all[10] = st.bytes_read;
	all[11] = st.bytes_written;
	all[12] = st.next_seq;
	all[13] = st.devices;
	all[14] = st.store_id.hi;
	all[15] = st.store_id.lo;
	memcpy(out, all, n * sizeof(uint64_t));
	return 0;
}

int gpy_store_inject(struct gpy_store *s, uint32_t dev, uint64_t fail_nth, uint32_t status)
{
	struct gio_fault f;
	int rc;
	gpy_clear_error();
	if (!s || dev >= s->ndevs)
		return gpy_fail(-EINVAL, "no device %u", dev);
	if (!s->dev[dev].ctx)
		return gpy_fail(-EOPNOTSUPP, "device %u is GPU-executed: faults are injected into CPU-executed targets only", dev);
	if (status > 0xffff)
		return gpy_fail(-EINVAL, "an NVMe status field has 16 bits, not 0x%x", status);
	memset(&f, 0, sizeof(f));
	f.fail_nth = fail_nth;
	f.fail_status = (uint16_t)status;
	rc = gio_ctx_inject(s->dev[dev].ctx, fail_nth ? &f : NULL);
	return rc ? gpy_lib(rc, "injecting the fault") : 0;
}

int gpy_store_contains(struct gpy_store *s, const uint64_t *keys, uint32_t n, uint8_t *found)
{
	struct gio_kv_u128 *k;
	int rc;
	gpy_clear_error();
	if (!s || (n && (!keys || !found)))
		return gpy_fail(-EINVAL, "contains: no store, keys or output");
	if (!(k = gpy_keys_of(keys, n)))
		return gpy_fail(-ENOMEM, "contains: %u keys", n);
	rc = gio_kv_store_contains(s->store, k, n, found);
	free(k);
	return rc < 0 ? gpy_lib(rc, "looking the keys up") : rc;
}

int gpy_store_remove(struct gpy_store *s, const uint64_t *keys, uint32_t n, uint8_t *removed)
{
	struct gio_kv_u128 *k;
	uint32_t i;
	int got = 0, rc = 0;
	gpy_clear_error();
	if (!s || (n && (!keys || !removed)))
		return gpy_fail(-EINVAL, "remove: no store, keys or output");
	if (!(k = gpy_keys_of(keys, n)))
		return gpy_fail(-ENOMEM, "remove: %u keys", n);
	memset(removed, 0, n);
	for (i = 0; i < n && rc >= 0; i++) {
		rc = gio_kv_store_remove(s->store, k[i]);
		if (rc > 0) {
			removed[i] = 1;
			got++;
		}
	}
	free(k);
	return rc < 0 ? gpy_lib(rc, "removing a key") : got;
}

int gpy_store_remove_failed(struct gpy_store *s, const uint64_t *keys, const int32_t *rcs, uint32_t n,
			    uint8_t *removed)
{
	struct gio_kv_u128 *k;
	int rc;
	gpy_clear_error();
	if (!s || (n && (!keys || !rcs || !removed)))
		return gpy_fail(-EINVAL, "remove_failed: no store, keys, outcomes or output");
	if (!(k = gpy_keys_of(keys, n)))
		return gpy_fail(-ENOMEM, "remove_failed: %u keys", n);
	rc = gio_kv_store_remove_failed(s->store, k, rcs, n, removed);
	free(k);
	return rc < 0 ? gpy_lib(rc, "removing the keys whose loads failed") : rc;
}

/* gio_kv_store_removed() or gio_kv_store_keys() with the keys as (hi, lo) pairs. */
static int key_query(struct gpy_store *s, int (*fn)(struct gio_kv_store *, uint64_t, struct gio_kv_u128 *, uint32_t,
						 uint64_t *),
		     uint64_t at, uint64_t *keys, uint32_t cap, uint64_t *next, const char *what)
{
	struct gio_kv_u128 *k;
	int rc;
	uint32_t i;
	gpy_clear_error();
	if (!s || !next || (cap && !keys))
		return gpy_fail(-EINVAL, "%s: no store, keys or next", what);
	if (!(k = calloc(cap ? cap : 1, sizeof(*k))))
		return gpy_fail(-ENOMEM, "%s: room for %u keys", what, cap);
	rc = fn(s->store, at, k, cap, next);
	for (i = 0; rc > 0 && i < (uint32_t)rc; i++) {
		keys[2 * i] = k[i].hi;
		keys[2 * i + 1] = k[i].lo;
	}
	free(k);
	return rc < 0 ? gpy_lib(rc, what) : rc;
}

int gpy_store_removed(struct gpy_store *s, uint64_t since, uint64_t *keys, uint32_t cap, uint64_t *next)
{
	return key_query(s, gio_kv_store_removed, since, keys, cap, next, "reading the journal of removed keys");
}

int gpy_store_keys(struct gpy_store *s, uint64_t from, uint64_t *keys, uint32_t cap, uint64_t *next)
{
	return key_query(s, gio_kv_store_keys, from, keys, cap, next, "listing the keys");
}

int gpy_store_path(const struct gpy_store *s, uint32_t dev, char *why, uint32_t len)
{
	gpy_clear_error();
	if (!s || dev >= s->ndevs)
		return gpy_fail(-EINVAL, "no device %u", dev);
	if (why && len)
		snprintf(why, len, "%s", s->dev[dev].why);
	return (int)s->dev[dev].path;
}

int gpy_store_gpu_targets(const struct gpy_store *s)
{
	return s && s->gpu_targets;
}

int gpy_store_exec_stream(struct gpy_store *s, void *stream)
{
	gpy_clear_error();
	if (!s)
		return gpy_fail(-EINVAL, "the store is closed");
	if (!s->gpu_targets)
		return gpy_fail(-EINVAL, "exec_stream: the store's targets are CPU-executed (no executor kernel to place)");
	if (s->started)
		return gpy_fail(-EBUSY, "exec_stream: the GPU targets' executors already run (they start with the first "
					"batch): set it before");
	s->exec_stream = stream;
	return 0;
}
