/*
 * libFuzzer target: the KV layer's per-batch plans (giouring/kv/plan.h, src/kv/plan.c) run with
 * the CPU engine, on a store over one or two memory targets (mem://host contexts: the software
 * NVMe target over host memory), against a model of the store's keys and of what each batch
 * documents. Links the host library (built into this fuzzer with coverage).
 *
 * One input sets up a store (1-2 devices of 512- or 4096-byte blocks, SGL or PRP tables, 1-4
 * layers of 1-4 blocks, K and V together or apart in the pool, a few slots a device), a pool of
 * 1-16 blocks registered with every context, each device's P2P table and two queue pairs, and a
 * plan (its parameters from the input, made invalid one documented way or not: an invalid one
 * must fail with -EINVAL and a message, and the valid one is made next). Then ops, each checked:
 *   - load / save of 0 to 19 requests (above max_requests too), keys from a universe of 24 (a
 *     save's made distinct, as the header asks), blocks some beyond the pool, shared or not;
 *   - a layer run or begun (out of range, the other direction, twice), all layers run in order or
 *     reversed with one skipped, a CPU plan's layer cancelled (always -EINVAL);
 *   - a wait (5 s for a layer run: more is a hang; 1 ms for one not run: -ETIME);
 *   - finish, or destroy with or without a batch open (then a plan made anew);
 *   - the view, the layer bytes, the layer times and the statistics;
 *   - an NVMe error injected into the Nth command of a device (its status known).
 * The model: which keys the store holds and the bytes each was saved with (a tag: key and
 * generation; every layer object's bytes are fz_kv_bytes() of tag and layer). A save's pool
 * blocks are filled from the tags before it is planned (a block shared by two requests holds
 * the last one's), a load's pool is poisoned first. Evictions are read from
 * gio_kv_store_removed(); once an error was injected, keys whose fate the results leave open are
 * resolved with gio_kv_store_contains(). At the end every key is read with gio_kv_store_get().
 *
 * Input layout (missing bytes read 0):
 *   u8 devices (FZ_PC_*), u8 shape (FZ_PS_*), u8 max_requests - 1 (% 16), u8 pool blocks - 1
 *   (% 16), u8 plan fault (FZ_PF_*, applied to the first create), u8 plan knobs (FZ_PK_*), the
 *   constants in fuzz_common.h;
 *   then ops until the input ends (at most MAX_OPS): an op byte (bits 0-3 FZ_OP_*, bits 4-7 its
 *   argument) and its payload:
 *     FZ_OP_LOAD / _SAVE: u8 n (FZ_N_ABOVE: max_requests + 1 requests, key i into block 0, with
 *       nothing more read; else n % 20), then n x (u8 key % 24, u8 block: bit 7 set, beyond the
 *       pool (blocks + (v & 3)); else v % blocks);
 *     FZ_OP_RUN / _BEGIN: arg bits 0-2 the layer, bit 3 the batch's other direction;
 *     FZ_OP_RUN_ALL: arg bit 0 reversed, bits 1-3 v: layer v - 1 skipped (0 or past the layers: none);
 *     FZ_OP_WAIT, FZ_OP_CANCEL: arg bits 0-2 the layer;
 *     FZ_OP_FINISH: arg bit 0 without results;
 *     FZ_OP_DESTROY: arg a plan fault (FZ_PF_*) for a create that must fail before the next one;
 *     FZ_OP_QUERY: nothing;
 *     FZ_OP_FAULT: arg bit 0 the device, bits 1-2 the status; u8 nth (0: no fault any more);
 *     FZ_OP_CYCLE (and the values above it): run every layer, then finish.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/kv/bus.h>
#include <giouring/kv/io.h>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/store.h>
#include <giouring/nvme/cqe.h>

#include "fuzz_common.h"

#define MAXDEV 2u
#define MAXL 4u
#define MAXB 16u
#define KEYS 24u
#define MAXN 20u /* requests of one call: n % 20, and max_requests + 1 <= 17 */
#define MAX_OPS 48u
#define QPS 2u
#define SECOND 1000000000ull
#define LONG_WAIT (5 * SECOND) /* a layer run that has not finished by then hangs */
#define SHORT_WAIT 1000000ull  /* a layer not run: -ETIME after this */

enum { NONE = 0, LOAD = 1, SAVE = 2 };

struct dev {
	struct gio_ctx *ctx;
	struct gio_qp *qps[QPS];
	uint32_t lba, prp, cmds;
	union gio_dptr *table;
	uint8_t *lists; /* SGL segment lists or PRP lists, registered */
};

/* The open batch as the model sees it. */
struct batch {
	int kind;
	uint32_t n, key[MAXN], block[MAXN], tag[MAXN];
	uint8_t hit[MAXN];
	int32_t rc[MAXN]; /* a save's planning outcome per key */
	uint8_t ran[MAXL];
	uint32_t requests;
};

struct rig {
	uint32_t ndev, layers, blocks, nruns;
	uint64_t object, pool_bytes, capacity, removed_seen;
	struct dev dev[MAXDEV];
	uint8_t *pool_mem;
	struct gio_kv_pool pool;
	struct gio_kv_runs runs;
	struct gio_kv_store *store;
	struct gio_kv_plan_params pp;
	struct gio_kv_io_dev iodev[MAXDEV];
	struct gio_kv_plan *plan;
	int plan_valid;   /* the model's word: a plan of pp is made */
	uint64_t batches; /* finished by this plan */
	/* The model. */
	uint8_t stored[KEYS];
	uint32_t content[KEYS]; /* a stored key's tag */
	uint32_t block_tag[MAXB];
	uint32_t gen;
	int faulty;          /* an error was injected: results may fail, fates are resolved */
	uint16_t fault_status;
	struct batch b;
	uint8_t *scratch;    /* one chunk */
};

static const char *err(void)
{
	return gio_last_error();
}

static void check_msg(int rc, const char *what)
{
	FZ_CHECK(rc < 0 && gio_last_error()[0] != '\0', "%s: %d without a message", what, rc);
}

/* ---- The pool: objects in device order, filled from tags, checked against them ---- */

static uint64_t seed_of(uint32_t tag, uint32_t layer)
{
	return 0x9e3779b97f4a7c15ull * (((uint64_t)tag << 3) + layer + 1);
}

/* Copies object (layer, block) between the pool's runs and buf (device order). */
static void object_io(struct rig *g, uint32_t layer, uint32_t block, uint8_t *buf, int to_pool)
{
	for (uint32_t r = 0; r < g->runs.nruns; r++) {
		uint8_t *p = (uint8_t *)(uintptr_t)gio_kv_run_addr(&g->pool, &g->runs, layer, block, r);
		uint8_t *q = buf + (uint64_t)r * g->runs.run_bytes;
		if (to_pool)
			memcpy(p, q, g->runs.run_bytes);
		else
			memcpy(q, p, g->runs.run_bytes);
	}
}

static void fill_block(struct rig *g, uint32_t block, uint32_t tag)
{
	for (uint32_t l = 0; l < g->layers; l++) {
		fz_kv_bytes(seed_of(tag, l), g->scratch, g->object);
		object_io(g, l, block, g->scratch, 1);
	}
	g->block_tag[block] = tag;
}

/* Whether object (layer, block) holds tag's bytes (poisoned: tag 0, every byte 0xa5). */
static int object_is(struct rig *g, uint32_t layer, uint32_t block, uint32_t tag)
{
	uint8_t *want = g->scratch + g->object;
	object_io(g, layer, block, g->scratch, 0);
	if (tag)
		fz_kv_bytes(seed_of(tag, layer), want, g->object);
	else
		memset(want, 0xa5, g->object);
	return !memcmp(g->scratch, want, g->object);
}

/* ---- Setup ---- */

/* Page-aligned memory of at least `bytes` (aligned_alloc() takes whole pages), every byte 0xa5. */
static uint8_t *page_alloc(uint64_t bytes)
{
	const uint64_t n = (bytes + 4095) & ~4095ull;
	uint8_t *p = aligned_alloc(4096, n ? n : 4096);
	FZ_CHECK(p != NULL, "aligned_alloc of %llu bytes", (unsigned long long)n);
	memset(p, 0xa5, n ? n : 4096);
	return p;
}

static void setup_dev(struct rig *g, uint32_t d, uint32_t lba, int prp)
{
	struct dev *v = &g->dev[d];
	char uri[160];
	struct gio_kv_pool bus;
	const uint64_t objects = (uint64_t)g->layers * g->blocks;
	int rc;
	v->lba = lba;
	v->prp = (uint32_t)prp;
	snprintf(uri, sizeof(uri), "mem://host?size=1M&lba=%u&threads=1&idle_us=20&queues=4%s", lba,
		 prp ? "&dptr=prp" : "");
	rc = gio_ctx_open(uri, &v->ctx);
	FZ_CHECK(rc == 0, "open %s: %d (%s)", uri, rc, err());
	for (uint32_t q = 0; q < QPS; q++)
		FZ_CHECK(gio_ctx_qp_create(v->ctx, 64, &v->qps[q]) == 0, "queue pair: %s", err());
	FZ_CHECK(gio_ctx_register(v->ctx, g->pool_mem, g->pool_bytes, NULL) == 0, "register the pool: %s", err());
	FZ_CHECK(gio_kv_pool_bus(v->ctx, &g->pool, NULL, &bus) == 0, "pool bus: %s", err());
	const struct gio_dptr_caps *caps = gio_ctx_dptr_caps(v->ctx);
	if (!prp) {
		const uint64_t seg_bytes = objects * g->nruns * sizeof(struct gio_sgl_desc);
		uint64_t seg_addr = 0;
		v->cmds = 1;
		v->table = calloc(objects, sizeof(*v->table));
		v->lists = page_alloc(seg_bytes);
		FZ_CHECK(v->table != NULL, "calloc");
		if (g->nruns > 1)
			FZ_CHECK(gio_ctx_register(v->ctx, v->lists, seg_bytes, &seg_addr) == 0, "register: %s", err());
		for (uint64_t o = 0; o < objects; o++) {
			rc = gio_kv_table_entry(&bus, &g->runs, caps, o, seg_addr, &v->table[o].sgl,
						(struct gio_sgl_desc *)v->lists);
			FZ_CHECK(rc == 0, "SGL entry %llu: %d", (unsigned long long)o, rc);
		}
		return;
	}
	struct gio_kv_table_sizes sz;
	gio_kv_table_plan(&bus, &g->runs, caps, &sz);
	FZ_CHECK(sz.prp_rc == 0, "PRP table: %d", sz.prp_rc);
	v->cmds = gio_kv_table_prp_cmds(&bus, &g->runs, caps);
	/* Each list in a power-of-two stride within one page: it never needs a chain pointer. */
	uint64_t stride = sz.prp_list_bytes ? 8 : 0, list_addr = 0;
	while (stride && stride < sz.prp_list_bytes)
		stride <<= 1;
	const uint64_t entries = objects * v->cmds, area = (entries * stride + 4095) & ~4095ull;
	v->table = calloc(entries, sizeof(*v->table));
	v->lists = page_alloc(area);
	FZ_CHECK(v->table != NULL, "calloc");
	if (area)
		FZ_CHECK(gio_ctx_register(v->ctx, v->lists, area, &list_addr) == 0, "register: %s", err());
	for (uint64_t e = 0; e < entries; e++) {
		rc = gio_kv_table_entry_prp(&bus, &g->runs, caps, e, list_addr, stride, &v->table[e],
					    area ? v->lists : NULL);
		FZ_CHECK(rc == 0, "PRP entry %llu: %d", (unsigned long long)e, rc);
	}
}

static void setup_pool(struct rig *g, int apart)
{
	const uint32_t parts = 2, channels = 256, tokens = (uint32_t)(g->object / (parts * channels));
	const uint64_t run = (uint64_t)tokens * channels; /* one part of one block (elements of 1 byte) */
	memset(&g->pool, 0, sizeof(g->pool));
	g->pool.base_mode = GIO_KV_BASE_ONE;
	g->pool.elem_bytes = 1;
	g->pool.extent[GIO_KV_LAYER] = g->layers;
	g->pool.extent[GIO_KV_BLOCK] = g->blocks;
	g->pool.extent[GIO_KV_PART] = parts;
	g->pool.extent[GIO_KV_TOKEN] = tokens;
	g->pool.extent[GIO_KV_HEAD] = 1;
	g->pool.extent[GIO_KV_CHANNEL] = channels;
	g->pool.stride[GIO_KV_CHANNEL] = 1;
	g->pool.stride[GIO_KV_HEAD] = channels;
	g->pool.stride[GIO_KV_TOKEN] = channels;
	if (apart) { /* (L, part, B, ...): an object is two runs */
		g->pool.stride[GIO_KV_BLOCK] = run;
		g->pool.stride[GIO_KV_PART] = run * g->blocks;
		g->pool.stride[GIO_KV_LAYER] = 2 * run * g->blocks;
	} else {
		g->pool.stride[GIO_KV_PART] = run;
		g->pool.stride[GIO_KV_BLOCK] = 2 * run;
		g->pool.stride[GIO_KV_LAYER] = 2 * run * g->blocks;
	}
	g->pool_bytes = (uint64_t)g->layers * g->blocks * g->object;
	g->pool_mem = page_alloc(g->pool_bytes);
	g->scratch = malloc(2 * g->object);
	FZ_CHECK(g->scratch != NULL, "malloc");
	g->pool.base = (uint64_t)(uintptr_t)g->pool_mem;
	FZ_CHECK(gio_kv_pool_runs(&g->pool, &g->runs) == 0 && g->runs.object_bytes == g->object, "pool runs");
	g->nruns = g->runs.nruns;
}

/* The plan's parameters as valid as the store allows; fault one way of FZ_PF_*. Returns the
 * parameters to pass (NULL for FZ_PF_PARAMS). */
static const struct gio_kv_plan_params *plan_params(struct rig *g, uint32_t fault, struct gio_kv_plan_params *pp,
						    struct gio_kv_io_dev *devs)
{
	struct gio_kv_io_dev *last = &devs[g->ndev - 1];
	*pp = g->pp;
	memcpy(devs, g->iodev, sizeof(g->iodev));
	pp->devs = devs;
	switch (fault) {
	case FZ_PF_ENGINE: pp->engine = 2; break;
	case FZ_PF_MAX_REQ: pp->max_requests = 0; break;
	case FZ_PF_BLOCKS: pp->blocks = 0; break;
	case FZ_PF_WARPS: pp->io_warps = 33; break;
	case FZ_PF_DEVS: pp->devs = NULL; break;
	case FZ_PF_NQPS: last->nqps = 0; break;
	case FZ_PF_QPS: last->qps = NULL; break;
	case FZ_PF_TABLE: last->table = NULL; break;
	case FZ_PF_LBA: last->lba_shift = last->lba_shift == 12 ? 9 : 12; break;
	case FZ_PF_PSDT: last->psdt = GIO_PSDT_SGL_MSGL; break;
	case FZ_PF_CMDS: last->cmds = (uint32_t)(2 * g->object / (1u << last->lba_shift)); break;
	case FZ_PF_PARAMS: return NULL;
	default: break;
	}
	return pp;
}

/* Whether the store's devices take the plan as made (runs of whole blocks where a device takes a
 * command per run). */
static int plan_possible(const struct rig *g)
{
	for (uint32_t d = 0; d < g->ndev; d++) {
		const uint32_t c = g->dev[d].cmds;
		if (c > 1 && (g->object % c || (g->object / c) % g->dev[d].lba))
			return 0;
	}
	return 1;
}

/* Makes the plan: first one faulted as `fault` says (it must fail), then the valid one. */
static void make_plan(struct rig *g, uint32_t fault)
{
	struct gio_kv_plan_params pp;
	struct gio_kv_io_dev devs[MAXDEV];
	struct gio_kv_plan *p = NULL;
	int rc;
	g->plan = NULL;
	g->batches = 0;
	memset(&g->b, 0, sizeof(g->b));
	if (fault != FZ_PF_NONE && fault < FZ_PF_COUNT) {
		const struct gio_kv_plan_params *q = plan_params(g, fault, &pp, devs);
		rc = gio_kv_plan_create(g->store, q, &p);
		FZ_CHECK(rc == -EINVAL, "a plan with fault %u: %d (%s)", fault, rc, err());
		check_msg(rc, "plan create");
	}
	rc = gio_kv_plan_create(g->store, plan_params(g, FZ_PF_NONE, &pp, devs), &g->plan);
	if (!plan_possible(g)) {
		FZ_CHECK(rc == -EINVAL && g->plan == NULL, "a plan whose runs are not whole blocks: %d", rc);
		check_msg(rc, "plan create");
		g->plan_valid = 0;
		return;
	}
	FZ_CHECK(rc == 0 && g->plan, "plan create: %d (%s)", rc, err());
	g->plan_valid = 1;
}

/* ---- The model's checks ---- */

/* Every key of the universe: contains agrees with the model, but for the keys of `resolve` (a
 * bitmap), whose fate an injected error left open: contains says it. */
static void sync_contains(struct rig *g, uint32_t resolve)
{
	struct gio_kv_u128 keys[KEYS];
	uint8_t found[KEYS];
	for (uint32_t i = 0; i < KEYS; i++)
		keys[i] = fz_kv_key(i);
	memset(found, 2, sizeof(found));
	FZ_CHECK(gio_kv_store_contains(g->store, keys, KEYS, found) >= 0, "contains: %s", err());
	for (uint32_t i = 0; i < KEYS; i++) {
		if (resolve >> i & 1u)
			g->stored[i] = found[i];
		FZ_CHECK(found[i] == g->stored[i], "key %u: contains says %u, the model %u", i, found[i], g->stored[i]);
	}
}

/* The evictions since the last look: gone from the model. Returns a bitmap of them. */
static uint32_t take_removed(struct rig *g)
{
	struct gio_kv_u128 gone[64];
	uint32_t mask = 0;
	for (;;) {
		uint64_t next = 0;
		const int got = gio_kv_store_removed(g->store, g->removed_seen, gone, 64, &next);
		FZ_CHECK(got >= 0, "removed: %d (%s)", got, err());
		for (int j = 0; j < got; j++)
			for (uint32_t i = 0; i < KEYS; i++)
				if (gio_kv_u128_eq(gone[j], fz_kv_key(i))) {
					g->stored[i] = 0;
					mask |= 1u << i;
				}
		g->removed_seen = next;
		if (got < 64)
			return mask;
	}
}

static uint32_t layers_ran(const struct rig *g)
{
	uint32_t k = 0;
	for (uint32_t l = 0; l < g->layers; l++)
		k += g->b.ran[l];
	return k;
}

/* A load's pool after its layers: the objects of a block that one hit targets hold its key's
 * bytes in every layer run (where its result is 0); a block no hit targets, and every layer not
 * run, stay poisoned. ok[i]: request i's result is 0. */
static void check_load_data(struct rig *g, const uint8_t *ok)
{
	for (uint32_t blk = 0; blk < g->blocks; blk++) {
		uint32_t writers = 0, who = 0;
		for (uint32_t i = 0; i < g->b.n; i++)
			if (g->b.hit[i] && g->b.block[i] == blk) {
				writers++;
				who = i;
			}
		if (writers > 1)
			continue; /* two reads into one block: either may land last, torn even */
		for (uint32_t l = 0; l < g->layers; l++) {
			if (writers && g->b.ran[l] && !ok[who])
				continue; /* a failed read leaves its object as it may */
			const uint32_t tag = writers && g->b.ran[l] ? g->content[g->b.key[who]] : 0;
			FZ_CHECK(object_is(g, l, blk, tag),
				 "pool block %u layer %u (run %u): holds other bytes than %s (request %u, key %u, tag %#x)", blk,
				 l, g->b.ran[l], tag ? "its key's" : "before the load", who, g->b.key[who], tag);
		}
	}
}

/* After a finish or a destroy of the open batch: the model takes the batch's outcome. res: the
 * results (NULL: a destroy, whose return frc is all there is). */
static void end_batch(struct rig *g, const struct gio_kv_io_result *res, int frc)
{
	const int all_ran = layers_ran(g) == g->layers;
	uint8_t ok[MAXN];
	int first = 0;
	for (uint32_t i = 0; i < g->b.n; i++) {
		const int request = g->b.kind == LOAD ? g->b.hit[i] : g->b.rc[i] == 0;
		ok[i] = request && !g->faulty;
		if (!res)
			continue;
		const struct gio_kv_io_result *r = &res[i];
		if (!request) { /* a miss, or a key a save did not plan: its planning outcome */
			const int32_t want = g->b.kind == LOAD ? 0 : g->b.rc[i];
			FZ_CHECK(r->rc == want && r->status == 0 && r->layer == 0xffff,
				 "key %u (no request): result rc %d status %#x layer %u, want rc %d layer 0xffff", i, r->rc,
				 r->status, r->layer, want);
			continue;
		}
		ok[i] = r->rc == 0;
		if (r->rc && !first)
			first = r->rc;
		if (g->b.kind == SAVE && !all_ran && !g->faulty) {
			FZ_CHECK(r->rc == -ECANCELED && r->layer == 0xffff,
				 "saved key %u with a layer not run: rc %d layer %u, want -ECANCELED", i, r->rc, r->layer);
			continue;
		}
		if (!g->faulty) {
			FZ_CHECK(r->rc == 0 && r->status == 0, "request %u: rc %d status %#x layer %u, nothing failed", i,
				 r->rc, r->status, r->layer);
			continue;
		}
		/* An injected error: a layer's command (its status, a layer run), a save's commit, or a
		 * layer not run. */
		FZ_CHECK(r->rc == 0 || r->rc == -EIO || r->rc == -ETIME || (g->b.kind == SAVE && r->rc == -ECANCELED),
			 "request %u: rc %d after an injected error", i, r->rc);
		if (r->rc == -EIO && r->layer != 0xffff)
			FZ_CHECK(r->layer < g->layers && g->b.ran[r->layer] && r->status == g->fault_status,
				 "request %u: -EIO in layer %u (run %u) with status %#x, the injected one %#x", i, r->layer,
				 r->layer < g->layers ? g->b.ran[r->layer] : 0, r->status, g->fault_status);
	}
	if (res && !g->faulty)
		FZ_CHECK(frc == first, "finish returned %d, the first failing request %d", frc, first);
	/* After an injected error a save whose requests all succeeded may still return the failure of
	 * the commit's last Flush: its chunks are stored, not durably (0 only "committed durably"). */
	if (res && g->faulty)
		FZ_CHECK(first ? frc != 0 : frc == 0 || (g->b.kind == SAVE && (frc == -EIO || frc == -ETIME)),
			 "finish returned %d, the first failing request %d", frc, first);
	if (!res && !g->faulty) /* destroy: as finish would */
		FZ_CHECK(frc == (g->b.kind == SAVE && g->b.requests && !all_ran ? -ECANCELED : 0),
			 "destroy with a %s batch open (%u of %u layers run): %d (%s)", g->b.kind == SAVE ? "save" : "load",
			 layers_ran(g), g->layers, frc, err());
	if (!res && g->faulty && frc == 0)
		memset(ok, 1, sizeof(ok));
	if (g->b.kind == LOAD) {
		if (res || frc == 0)
			check_load_data(g, ok);
	} else {
		for (uint32_t i = 0; i < g->b.n; i++) {
			if (g->b.rc[i] != 0)
				continue;
			g->stored[g->b.key[i]] = !g->faulty && all_ran;
			g->content[g->b.key[i]] = g->b.tag[i];
			if (res && res[i].rc == 0)
				g->stored[g->b.key[i]] = 1;
		}
	}
	uint32_t open = 0; /* after an injected error the store says what committed */
	for (uint32_t i = 0; g->faulty && g->b.kind == SAVE && i < g->b.n; i++)
		if (g->b.rc[i] == 0)
			open |= 1u << g->b.key[i];
	sync_contains(g, open);
	if (g->faulty && res && g->b.kind == SAVE)
		for (uint32_t i = 0; i < g->b.n; i++)
			FZ_CHECK(g->b.rc[i] != 0 || res[i].rc != 0 || g->stored[g->b.key[i]],
				 "key %u: saved with result 0, not stored", g->b.key[i]);
	memset(&g->b, 0, sizeof(g->b));
}

/* ---- Ops ---- */

static void no_batch_view(struct rig *g)
{
	struct gio_kv_io_plan v;
	FZ_CHECK(gio_kv_plan_view(g->plan, &v) == -EINVAL, "a view without a batch open");
}

static void plan_batch(struct rig *g, struct fz_reader *r, int kind)
{
	struct gio_kv_u128 keys[MAXN];
	uint32_t key[MAXN], blocks[MAXN];
	uint8_t hit[MAXN];
	int32_t rcs[MAXN];
	const uint8_t nb = fz_u8(r);
	const uint32_t n = nb == FZ_N_ABOVE ? g->pp.max_requests + 1 : nb % MAXN;
	int bad_block = 0, rc;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t kb = nb == FZ_N_ABOVE ? (uint8_t)i : fz_u8(r), bb = nb == FZ_N_ABOVE ? 0 : fz_u8(r);
		key[i] = kb % KEYS;
		for (uint32_t j = 0; kind == SAVE && j < i; j++) /* a save's keys distinct (plan.h) */
			if (key[j] == key[i]) {
				key[i] = (key[i] + 1) % KEYS;
				j = (uint32_t)-1;
			}
		blocks[i] = bb & 0x80u ? g->blocks + (bb & 3u) : bb % g->blocks;
		bad_block |= blocks[i] >= g->blocks;
		keys[i] = fz_kv_key(key[i]);
	}
	const int expect_ok = g->b.kind == NONE && n <= g->pp.max_requests && !bad_block;
	if (g->b.kind == NONE) { /* nothing of a batch is in the pool now: set it up */
		if (kind == LOAD) {
			memset(g->pool_mem, 0xa5, g->pool_bytes);
		} else {
			g->gen++;
			for (uint32_t i = 0; i < n; i++)
				if (blocks[i] < g->blocks)
					fill_block(g, blocks[i], (g->gen << 8) | (key[i] + 1));
		}
	}
	memset(hit, 7, sizeof(hit));
	for (uint32_t i = 0; i < MAXN; i++)
		rcs[i] = 1;
	rc = kind == LOAD ? gio_kv_plan_load(g->plan, keys, blocks, n, hit) : gio_kv_plan_save(g->plan, keys, blocks, n, rcs);
	if (!expect_ok) {
		FZ_CHECK(rc == -EINVAL, "%s of %u requests (max %u, a block beyond the pool %d, batch open %d): %d (%s)",
			 kind == LOAD ? "load" : "save", n, g->pp.max_requests, bad_block, g->b.kind != NONE, rc, err());
		check_msg(rc, kind == LOAD ? "load" : "save");
		if (g->b.kind == NONE)
			no_batch_view(g);
		return;
	}
	FZ_CHECK(rc >= 0, "%s of %u requests: %d (%s)", kind == LOAD ? "load" : "save", n, rc, err());
	memset(&g->b, 0, sizeof(g->b));
	g->b.kind = kind;
	g->b.n = n;
	for (uint32_t i = 0; i < n; i++) {
		g->b.key[i] = key[i];
		g->b.block[i] = blocks[i];
	}
	if (kind == LOAD) {
		uint32_t hits = 0;
		for (uint32_t i = 0; i < n; i++) {
			FZ_CHECK(hit[i] == g->stored[key[i]], "load: key %u (request %u) hit %u, the model %u", key[i], i, hit[i],
				 g->stored[key[i]]);
			g->b.hit[i] = hit[i];
			hits += hit[i];
		}
		FZ_CHECK((uint32_t)rc == hits, "load returned %d for %u hits", rc, hits);
		g->b.requests = hits;
		return;
	}
	/* A save: -EEXIST for a key held (not evicted by an earlier key of the batch), -ENOSPC once
	 * every slot is reserved by the batch, else a request. */
	uint8_t before[KEYS];
	uint32_t reserved = 0;
	memcpy(before, g->stored, sizeof(before));
	const uint32_t evicted = take_removed(g);
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t k = key[i];
		g->b.rc[i] = rcs[i];
		g->b.tag[i] = g->block_tag[blocks[i]];
		if (rcs[i] == -EEXIST) {
			FZ_CHECK(before[k], "save: key %u (request %u) -EEXIST, the model does not hold it", k, i);
			continue;
		}
		FZ_CHECK(!before[k] || (evicted >> k & 1u) || rcs[i] != 0,
			 "save: key %u (request %u) planned (%d), the model holds it and it was not evicted", k, i, rcs[i]);
		if (!g->faulty)
			FZ_CHECK(rcs[i] == (reserved < g->capacity ? 0 : -ENOSPC),
				 "save: key %u (request %u) rc %d with %u of %llu slots reserved", k, i, rcs[i], reserved,
				 (unsigned long long)g->capacity);
		else
			FZ_CHECK(rcs[i] == 0 || rcs[i] == -ENOSPC || rcs[i] == -EIO || rcs[i] == -ETIME,
				 "save: key %u (request %u) rc %d after an injected error", k, i, rcs[i]);
		reserved += rcs[i] == 0;
	}
	FZ_CHECK((uint32_t)rc == reserved, "save returned %d for %u requests", rc, reserved);
	g->b.requests = reserved;
}

/* A layer run (or begun): its errno as plan.h documents it. */
static void run_layer(struct rig *g, uint32_t layer, int flip, int begin)
{
	const int write = (g->b.kind == SAVE) != (flip != 0);
	int rc, want = 0, also = 0;
	if (begin) {
		struct gio_kv_plan_launch l;
		rc = gio_kv_plan_layer_begin(g->plan, layer, write, NULL, &l);
	} else {
		rc = gio_kv_plan_run_layer(g->plan, layer, write);
	}
	if (g->b.kind == NONE || layer >= g->layers || flip) {
		want = -EINVAL;
		if (g->b.kind != NONE && layer < g->layers && g->b.ran[layer])
			also = -EALREADY; /* both apply: the header orders neither */
	} else if (g->b.ran[layer]) {
		want = -EALREADY;
	}
	FZ_CHECK(rc == want || (also && rc == also), "%s layer %u (%s, batch %d, ran %d): %d, want %d (%s)",
		 begin ? "begin" : "run", layer, write ? "write" : "read", g->b.kind,
		 layer < MAXL ? g->b.ran[layer] : -1, rc, want, err());
	if (rc)
		check_msg(rc, "run layer");
	else
		g->b.ran[layer] = 1;
}

static void wait_layer(struct rig *g, uint32_t layer)
{
	const int ran = g->b.kind != NONE && layer < g->layers && g->b.ran[layer];
	const int rc = gio_kv_plan_wait_layer(g->plan, layer, ran ? LONG_WAIT : SHORT_WAIT);
	const int want = g->b.kind == NONE || layer >= g->layers ? -EINVAL : ran ? 0 : -ETIME;
	FZ_CHECK(rc == want, "wait for layer %u (batch %d, ran %d): %d, want %d", layer, g->b.kind, ran, rc, want);
}

static void finish(struct rig *g, int with_results)
{
	struct gio_kv_io_result res[MAXN];
	struct gio_kv_plan_stats st;
	uint64_t ns;
	memset(res, 0x5a, sizeof(res));
	const int rc = gio_kv_plan_finish(g->plan, with_results ? res : NULL, 0);
	if (g->b.kind == NONE) {
		FZ_CHECK(rc == -EINVAL, "finish without a batch: %d", rc);
		return;
	}
	FZ_CHECK(rc != -ETIME, "finish: -ETIME, the layers run did not finish (%s)", err());
	uint8_t ran[MAXL];
	memcpy(ran, g->b.ran, sizeof(ran));
	end_batch(g, with_results ? res : NULL, rc); /* without results, the return is all: as a destroy */
	g->batches++;
	no_batch_view(g);
	/* The times of the batch's layers stay readable until the next batch. */
	for (uint32_t l = 0; l < g->layers; l++) {
		const int t = gio_kv_plan_layer_time(g->plan, l, &ns);
		FZ_CHECK(t == (ran[l] ? 0 : -EAGAIN), "layer %u time after finish (ran %u): %d", l, ran[l], t);
	}
	FZ_CHECK(gio_kv_plan_info(g->plan, &st) == 0 && st.batches == g->batches && st.devices == g->ndev,
		 "info: %llu batches on %u devices, the model %llu on %u", (unsigned long long)st.batches, st.devices,
		 (unsigned long long)g->batches, g->ndev);
}

static void destroy(struct rig *g, uint32_t fault)
{
	const int rc = gio_kv_plan_destroy(g->plan);
	g->plan = NULL;
	if (g->b.kind != NONE) {
		FZ_CHECK(rc != -ETIME, "destroy: -ETIME, the layers run did not finish (%s)", err());
		end_batch(g, NULL, rc);
	} else {
		FZ_CHECK(rc == 0, "destroy without a batch: %d (%s)", rc, err());
	}
	make_plan(g, fault);
}

static void query(struct rig *g)
{
	struct gio_kv_io_plan v;
	uint64_t bytes[MAXDEV + 1], ns;
	const int rc = gio_kv_plan_view(g->plan, &v);
	const int lb = gio_kv_plan_layer_bytes(g->plan, bytes, g->ndev + 1);
	if (g->b.kind == NONE) {
		FZ_CHECK(rc == -EINVAL && lb == -EINVAL, "view %d, layer bytes %d without a batch", rc, lb);
		return;
	}
	FZ_CHECK(rc == 0 && lb == 0, "view %d, layer bytes %d with a batch open (%s)", rc, lb, err());
	uint32_t cmds_max = 1;
	for (uint32_t d = 0; d < g->ndev; d++)
		cmds_max = g->dev[d].cmds > cmds_max ? g->dev[d].cmds : cmds_max;
	FZ_CHECK(v.nreqs >= g->b.requests && v.nreqs <= g->b.requests * cmds_max && v.write == (g->b.kind == SAVE) &&
			 v.layers == g->layers && v.blocks == g->blocks && v.ndevs == g->ndev && v.epoch != 0 &&
			 v.object_bytes == g->object,
		 "view: %u requests (model %u), write %u, %u layers, %u blocks, %u devices, epoch %u", v.nreqs,
		 g->b.requests, v.write, v.layers, v.blocks, v.ndevs, v.epoch);
	uint64_t sum = 0, per_dev[MAXDEV] = {0};
	for (uint32_t i = 0; i < v.nreqs; i++) /* each device's objects by the requests themselves */
		if (v.reqs[i].part == 0 && v.reqs[i].dev < MAXDEV)
			per_dev[v.reqs[i].dev] += g->object;
	for (uint32_t d = 0; d < g->ndev; d++) {
		sum += bytes[d];
		FZ_CHECK(bytes[d] == per_dev[d], "layer bytes: device %u: %llu, its requests' objects %llu", d,
			 (unsigned long long)bytes[d], (unsigned long long)per_dev[d]);
	}
	FZ_CHECK(sum == g->b.requests * g->object && bytes[g->ndev] == 0,
		 "layer bytes: %llu in all (model %u objects of %llu), %llu past the devices", (unsigned long long)sum,
		 g->b.requests, (unsigned long long)g->object, (unsigned long long)bytes[g->ndev]);
	FZ_CHECK(g->ndev < 2 || gio_kv_plan_layer_bytes(g->plan, bytes, g->ndev - 1) == -EINVAL,
		 "layer bytes with room for fewer devices than the store's");
	for (uint32_t l = 0; l < g->layers; l++) {
		const int t = gio_kv_plan_layer_time(g->plan, l, &ns);
		FZ_CHECK(t == 0 || t == -EAGAIN, "layer %u time: %d", l, t);
		FZ_CHECK(g->b.ran[l] || t == -EAGAIN, "layer %u not run has a time", l);
	}
	FZ_CHECK(gio_kv_plan_layer_time(g->plan, g->layers, &ns) == -EINVAL, "a time for a layer past the store's");
}

static void inject(struct rig *g, uint32_t arg, uint8_t nth)
{
	static const uint16_t statuses[4] = {
		GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ), GIO_SF(GIO_SCT_MEDIA, GIO_SC_WRITE_FAULT),
		GIO_SF(GIO_SCT_GENERIC, GIO_SC_INTERNAL), GIO_SF(GIO_SCT_MEDIA, GIO_SC_UNRECOVERED_READ) | (1u << 14)};
	struct gio_fault f;
	if (nth && !g->faulty) { /* one status an input: a failed result's must be it */
		g->faulty = 1;
		g->fault_status = statuses[(arg >> 1) & 3u];
	}
	memset(&f, 0, sizeof(f));
	f.fail_nth = nth;
	f.fail_status = g->fault_status;
	FZ_CHECK(gio_ctx_inject(g->dev[(arg & 1u) % g->ndev].ctx, nth ? &f : NULL) == 0, "inject: %s", err());
}

static void run_all(struct rig *g, uint32_t arg)
{
	const uint32_t skip = ((arg >> 1) & 7u) - 1u; /* 0: none (UINT32_MAX) */
	for (uint32_t k = 0; k < g->layers; k++) {
		const uint32_t l = arg & 1u ? g->layers - 1 - k : k;
		if (l != skip)
			run_layer(g, l, 0, 0);
	}
}

static void op(struct rig *g, struct fz_reader *r)
{
	const uint8_t o = fz_u8(r);
	const uint32_t kind = o & 15u, arg = o >> 4;
	switch (kind) {
	case FZ_OP_LOAD: plan_batch(g, r, LOAD); break;
	case FZ_OP_SAVE: plan_batch(g, r, SAVE); break;
	case FZ_OP_RUN: run_layer(g, arg & 7u, arg & 8u, 0); break;
	case FZ_OP_BEGIN: run_layer(g, arg & 7u, arg & 8u, 1); break;
	case FZ_OP_RUN_ALL: run_all(g, arg); break;
	case FZ_OP_WAIT: wait_layer(g, arg & 7u); break;
	case FZ_OP_FINISH: finish(g, !(arg & 1u)); break;
	case FZ_OP_DESTROY: destroy(g, arg); break;
	case FZ_OP_CANCEL: {
		/* A CPU plan's layers are queued to its thread, never launched: nothing to take back. */
		const int rc = gio_kv_plan_layer_cancel(g->plan, arg & 7u);
		FZ_CHECK(rc == -EINVAL, "cancel of layer %u on a CPU plan: %d", arg & 7u, rc);
		break;
	}
	case FZ_OP_QUERY: query(g); break;
	case FZ_OP_FAULT: inject(g, arg, fz_u8(r)); break;
	default:
		run_all(g, 0);
		finish(g, 1);
		break;
	}
}

/* ---- The input ---- */

static void check_store_end(struct rig *g)
{
	struct gio_kv_store_stats st;
	const uint64_t chunk = g->layers * g->object;
	uint8_t *buf = malloc(chunk), *want = malloc(g->object);
	FZ_CHECK(buf && want, "malloc");
	gio_kv_store_info(g->store, &st);
	FZ_CHECK(st.pinned == 0, "%llu slots pinned with no batch open", (unsigned long long)st.pinned);
	for (uint32_t i = 0; i < KEYS; i++) {
		const int rc = gio_kv_store_get(g->store, fz_kv_key(i), buf, chunk);
		FZ_CHECK(rc == g->stored[i], "get of key %u: %d, the model %s it (%s)", i, rc,
			 g->stored[i] ? "holds" : "does not hold", err());
		for (uint32_t l = 0; rc == 1 && l < g->layers; l++) {
			fz_kv_bytes(seed_of(g->content[i], l), want, g->object);
			FZ_CHECK(!memcmp(buf + l * g->object, want, g->object), "key %u layer %u: other bytes than saved (tag %#x)",
				 i, l, g->content[i]);
		}
	}
	free(buf);
	free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_reader r = {data, size};
	struct rig *g = calloc(1, sizeof(*g));
	const uint8_t cfg = fz_u8(&r), shape = fz_u8(&r);
	struct gio_kv_store_params sp;
	struct gio_ctx *ctxs[MAXDEV];
	uint32_t max_lba = 512;
	int rc;

	FZ_CHECK(g != NULL, "calloc");
	g->ndev = cfg & FZ_PC_TWO ? 2 : 1;
	g->layers = FZ_PS_LAYERS(shape);
	for (uint32_t d = 0; d < g->ndev; d++)
		if (!(cfg & (d ? FZ_PC_512_1 : FZ_PC_512_0)))
			max_lba = 4096;
	g->object = (uint64_t)FZ_PS_BLOCKS(shape) * max_lba;
	g->pp.max_requests = 1u + fz_u8(&r) % 16u;
	g->blocks = 1u + fz_u8(&r) % MAXB;
	const uint32_t fault = fz_u8(&r), knobs = fz_u8(&r);
	setup_pool(g, cfg & FZ_PC_APART);
	for (uint32_t d = 0; d < g->ndev; d++) {
		setup_dev(g, d, cfg & (d ? FZ_PC_512_1 : FZ_PC_512_0) ? 512 : 4096, cfg & (d ? FZ_PC_PRP_1 : FZ_PC_PRP_0));
		ctxs[d] = g->dev[d].ctx;
	}

	/* The store: a few slots a device (the superblock and index, then the slots from the data
	 * alignment on: docs/store-format.md). */
	memset(&sp, 0, sizeof(sp));
	sp.layers = g->layers;
	sp.object_bytes = g->object;
	sp.pool_signature = gio_kv_pool_signature(&g->pool, &g->runs);
	sp.store_bytes = GIO_KV_DATA_ALIGN + FZ_PS_SLOTS(shape) * g->layers * g->object;
	sp.timeout_ns = 2 * SECOND;
	rc = gio_kv_store_create(ctxs, g->ndev, &sp, &g->store);
	FZ_CHECK(rc == 0, "store create: %d (%s)", rc, err());
	{
		struct gio_kv_store_stats st;
		gio_kv_store_info(g->store, &st);
		g->capacity = st.capacity;
	}

	g->pp.engine = GIO_KV_ENGINE_CPU;
	g->pp.blocks = g->blocks;
	g->pp.timeout_ns = cfg & FZ_PC_TIMEOUT ? SECOND : 0;
	g->pp.scope = knobs & FZ_PK_SCOPE_SYS ? GIO_SCOPE_SYS : GIO_SCOPE_GPU;
	g->pp.io_warps = FZ_PK_WARPS(knobs);
	g->pp.io_ctas = knobs >> 6;
	for (uint32_t d = 0; d < g->ndev; d++) {
		struct gio_kv_io_dev *v = &g->iodev[d];
		v->qps = g->dev[d].qps;
		v->table = g->dev[d].table;
		v->nqps = cfg & FZ_PC_ONE_QP ? 1 : QPS;
		v->nsid = 1;
		v->lba_shift = g->dev[d].lba == 512 ? 9 : 12;
		v->psdt = g->dev[d].prp ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR;
		v->cmds = g->dev[d].cmds;
	}
	make_plan(g, fault);

	for (uint32_t k = 0; g->plan_valid && k < MAX_OPS && r.n; k++)
		op(g, &r);

	for (uint32_t d = 0; d < g->ndev; d++) /* no error injected any more: the last checks read */
		FZ_CHECK(gio_ctx_inject(g->dev[d].ctx, NULL) == 0, "inject: %s", err());
	if (g->plan_valid) {
		if (g->b.kind != NONE)
			finish(g, 1);
		FZ_CHECK(gio_kv_plan_destroy(g->plan) == 0, "destroy: %s", err());
		check_store_end(g);
	}
	FZ_CHECK(gio_kv_store_close(g->store) == 0, "store close: %s", err());
	for (uint32_t d = 0; d < g->ndev; d++) {
		struct dev *v = &g->dev[d];
		for (uint32_t q = 0; q < QPS; q++)
			FZ_CHECK(gio_ctx_qp_destroy(v->ctx, v->qps[q], 2 * SECOND, NULL, NULL) >= 0, "qp destroy: %s", err());
		FZ_CHECK(gio_ctx_close(v->ctx) == 0, "close: %s", err());
		free(v->table);
		free(v->lists);
	}
	free(g->pool_mem);
	free(g->scratch);
	free(g);
	return 0;
}
