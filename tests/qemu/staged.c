/* QEMU staged-path program: runs inside the test guest (static) against two NVMe controllers
 * bound to vfio-pci, through the public API only: the host half of the staged path
 * (docs/staged.md, "Verification in halves"). A pool in host memory the controllers are never
 * given; per controller, two queue pairs and a staging area of two rings of 32 slots that the
 * library makes and registers with its context (gio_ctx_stage_create(): an IOVA through VFIO),
 * SGL Data Blocks on the first, a staging table of PRPs on the second (URI dptr=prp); a KV store over both controllers and a plan whose
 * devices are staged (giouring/kv/plan.h, the CPU engine of giouring/kv/run.h). 128 chunks of 8
 * layers are saved through the slots and committed, the pool poisoned, and the chunks loaded back
 * through the slots, every byte compared: each slot is used 16 times. Then a hand-made plan view
 * reads one object past the end of the namespace beside a good one: the bad read keeps its NVMe
 * status (LBA Out of Range), its object untouched, its slot given back. scripts/qemu/run.sh scans
 * the logs for IOMMU faults. Prints one PASS or FAIL line per check, STAGED lines, and a RESULT
 * line; exits 0 when every check passed.
 *
 *   gio-qemu-staged BDF0 BDF1
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/host/ctx.h>
#include <giouring/host/path.h>
#include <giouring/host/stage.h>
#include <giouring/kv/plan.h>
#include <giouring/kv/pool.h>
#include <giouring/kv/run.h>
#include <giouring/kv/staged.h>
#include <giouring/kv/store.h>
#include <giouring/proto/dptr_build.h>
#include <giouring/proto/status.h>
#include <giouring/ring/clock.h>
#include <giouring/ring/stage.h>

#include "chunk_bytes.h"
#include "guest_check.h"

#define IO_TIMEOUT_NS (10ull * 1000000000ull)
#define KEY_TAG 0x676b767374616765ull /* key.hi of every chunk */
#define LAYERS 8u
#define BLOCKS 128u
#define CHUNKS 128u
#define TOKENS 16u
#define HEADS 2u
#define CHANNELS 64u
#define QPS 2u
#define SLOTS 32u /* GIO_KV_IO_GROUP_MAX: a plan's group fits one ring */
/* K and V apart (two runs an object) of 16 tokens x 2 heads x 64 channels of 2 bytes: 8 KiB. */
#define OBJECT (2ull * TOKENS * HEADS * CHANNELS * 2)

struct dev {
	struct gio_ctx *ctx;
	struct gio_ns_info info;
	struct gio_qp *qps[QPS];
	struct gio_ctx_stage *area;       /* made and registered by the library */
	const struct gio_kv_io_stage *st; /* its rings, table and slots */
	struct gio_kv_io_dev io;
};

static struct gio_kv_u128 chunk_key(uint32_t c)
{
	struct gio_kv_u128 k = {c, KEY_TAG};
	return k;
}

/* Layer l of chunk c, in device order (the object's bytes as the store keeps them). */
static void object_bytes(uint32_t c, uint32_t l, unsigned char *out)
{
	struct gio_kv_u128 k = chunk_key(c);
	k.lo |= (uint64_t)l << 32;
	gio_test_chunk_bytes(k, out, OBJECT);
}

/* Copies object (l, b) between `bytes` (device order) and the pool: to the pool, or compares. */
static int pool_object(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint32_t l, uint32_t b,
		       unsigned char *bytes, int fill)
{
	uint32_t r;
	int same = 1;
	for (r = 0; r < runs->nruns; r++) {
		unsigned char *p = (unsigned char *)(uintptr_t)gio_kv_run_addr(pool, runs, l, b, r);
		if (fill)
			memcpy(p, bytes + (uint64_t)r * runs->run_bytes, runs->run_bytes);
		else
			same = same && memcmp(p, bytes + (uint64_t)r * runs->run_bytes, runs->run_bytes) == 0;
	}
	return same;
}

static uint32_t block_of(uint32_t c)
{
	return (c * 37 + 11) % BLOCKS;
}

/* prp: the controller's commands take PRPs even where it has SGLs (URI dptr=prp), so that the
 * staging table's form runs too. */
static int dev_open(const char *bdf, int prp, struct dev *d)
{
	char uri[64];
	uint32_t q;
	int rc;
	memset(d, 0, sizeof(*d));
	snprintf(uri, sizeof(uri), "nvme-pci://%s%s", bdf, prp ? "?dptr=prp" : "");
	rc = gio_ctx_open(uri, &d->ctx);
	if (rc)
		return rc;
	gio_ctx_info(d->ctx, &d->info);
	for (q = 0; q < QPS; q++) {
		rc = gio_ctx_qp_create(d->ctx, 64, &d->qps[q]);
		if (rc)
			return rc;
	}
	rc = gio_ctx_stage_create(d->ctx, QPS, SLOTS, OBJECT, 0, &d->area);
	if (rc)
		return rc;
	d->st = gio_ctx_stage_io(d->area);
	d->io.psdt = d->st->table ? GIO_PSDT_PRP : GIO_PSDT_SGL_MPTR; /* the library chose by the controller's rules */
	d->io.qps = d->qps;
	d->io.nqps = QPS;
	d->io.nsid = d->info.nsid;
	d->io.lba_shift = (uint32_t)__builtin_ctz(d->info.lba_bytes);
	d->io.cmds = 1;
	d->io.stage = d->st;
	printf("STAGED %s: %" PRIu64 " blocks of %u bytes, %s, staging %u x %u slots of %llu bytes at IOVA %#" PRIx64 "\n",
	       bdf, d->info.nblocks, d->info.lba_bytes, d->io.psdt == GIO_PSDT_PRP ? "PRP table" : "SGL Data Blocks",
	       QPS, SLOTS, (unsigned long long)d->st->rings[0].slot_bytes, d->st->rings[0].base_bus);
	return 0;
}

static uint32_t free_slots(const struct dev *d)
{
	uint32_t q, i, n = 0;
	for (q = 0; q < QPS; q++)
		for (i = 0; i < SLOTS; i++)
			n += gio_stage_state(d->st->rings[q].slots[i]) == GIO_STAGE_FREE;
	return n;
}

/* Runs every layer of the plan's open batch on its thread. */
static int run_layers(struct gio_kv_plan *plan, int write)
{
	uint32_t l;
	int rc = 0;
	for (l = 0; l < LAYERS && !rc; l++) {
		rc = gio_kv_plan_run_layer(plan, l, write);
		if (!rc)
			rc = gio_kv_plan_wait_layer(plan, l, IO_TIMEOUT_NS);
	}
	return rc;
}

/* A hand-made view of device 0: one good read and one past the namespace's end, with the engine. */
static void past_the_end(struct dev *d, const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
			 unsigned char *want)
{
	struct gio_kv_io_req reqs[2];
	struct gio_kv_io_group group = {0, 2, 0, 0};
	struct gio_kv_io_result res[2];
	uint32_t count[1] = {0}, done[1] = {0};
	struct gio_kv_io_plan v;
	const uint64_t per = OBJECT >> d->io.lba_shift;
	int rc;
	memset(&v, 0, sizeof(v));
	memset(res, 0, sizeof(res));
	/* Blocks 0 and 1 of the pool hold what the load put there; the past-the-end one is poisoned. */
	memset(want, 0xee, OBJECT);
	pool_object(pool, runs, 0, block_of(1), want, 1);
	reqs[0].slba = 0; /* whatever the store keeps there: only its status is checked */
	reqs[0].block = block_of(0);
	reqs[0].dev = 0;
	reqs[0].part = 0;
	reqs[1].slba = d->info.nblocks - per / 2; /* starts inside, ends past the namespace */
	reqs[1].block = block_of(1);
	reqs[1].dev = 0;
	reqs[1].part = 0;
	v.devs = &d->io;
	v.reqs = reqs;
	v.groups = &group;
	v.results = res;
	v.layer_count = count;
	v.layer_done = done;
	v.object_bytes = OBJECT;
	v.timeout_ns = IO_TIMEOUT_NS;
	v.ndevs = 1;
	v.nreqs = 2;
	v.ngroups = 1;
	v.layers = 1;
	v.blocks = BLOCKS;
	v.epoch = 1;
	v.scope = GIO_SCOPE_SYS;
	v.pool = pool;
	v.runs = runs;
	rc = gio_kv_io_run_layer(&v, 0);
	printf("STAGED past the end: rc %d, results %d/%#x and %d/%#x\n", rc, res[0].rc, res[0].status, res[1].rc,
	       res[1].status);
	CHECK("past-end.good-read", res[0].rc == 0, "the read inside the namespace: %d", res[0].rc);
	CHECK("past-end.status-intact",
	      rc == -EIO && res[1].rc == -EIO && gio_status_sct(res[1].status) == GIO_SCT_GENERIC &&
		      gio_status_sc(res[1].status) == GIO_SC_LBA_RANGE,
	      "the read past the end: rc %d, result %d, status %#x (want -EIO, LBA Out of Range)", rc, res[1].rc,
	      res[1].status);
	CHECK("past-end.object-untouched", pool_object(pool, runs, 0, block_of(1), want, 0),
	      "the failed read's object changed");
	CHECK("past-end.slots-back", free_slots(d) == QPS * SLOTS, "%u of %u slots free", free_slots(d), QPS * SLOTS);
}

int main(int argc, char **argv)
{
	struct dev devs[2];
	struct gio_ctx *ctxs[2];
	struct gio_kv_io_dev io[2];
	struct gio_kv_pool pool;
	struct gio_kv_runs runs;
	struct gio_kv_store_params sp;
	struct gio_kv_plan_params pp;
	struct gio_kv_store *store = NULL;
	struct gio_kv_plan *plan = NULL;
	struct gio_kv_u128 keys[CHUNKS];
	uint32_t blocks[CHUNKS], c, l, d, q, mismatched = 0;
	int32_t prc[CHUNKS];
	uint8_t hit[CHUNKS];
	unsigned char *mem, *obj;
	const uint32_t ext[GIO_KV_DIMS] = {LAYERS, BLOCKS, 2, TOKENS, HEADS, CHANNELS};
	int rc, i;
	memset(devs, 0, sizeof(devs));
	if (argc != 3) {
		fprintf(stderr, "usage: gio-qemu-staged BDF0 BDF1\n");
		return 2;
	}
	for (d = 0; d < 2; d++) {
		rc = dev_open(argv[1 + d], d == 1, &devs[d]);
		CHECK("open", rc == 0, "%s: %d", argv[1 + d], rc);
		if (rc)
			goto out;
		ctxs[d] = devs[d].ctx;
		io[d] = devs[d].io;
	}
	/* The pool: (layer, part, block, token, head, channel), K and V apart; never registered. */
	memset(&pool, 0, sizeof(pool));
	mem = aligned_alloc(4096, LAYERS * BLOCKS * OBJECT);
	obj = malloc(OBJECT);
	if (!mem || !obj)
		return 1;
	/* The path the library picks for this pool: peer-to-peer needs a dma-buf through iommufd, which
	 * type1 has not, so path=auto stages, with the refusal as its reason and nothing registered. */
	for (d = 0; d < 2; d++) {
		struct gio_gpu_path gp;
		rc = gio_ctx_gpu_path(devs[d].ctx, mem, LAYERS * BLOCKS * OBJECT, &gp);
		printf("STAGED path of device %u: %s (asked %s, p2p rc %d): %s\n", d, gio_gpu_path_name(gp.path),
		       gio_gpu_path_name(gp.asked), gp.p2p_rc, gp.why);
		CHECK("path.auto-staged",
		      rc == 0 && gp.path == GIO_GPU_PATH_STAGED && gp.asked == GIO_GPU_PATH_AUTO && gp.p2p_rc == -EOPNOTSUPP &&
			      strstr(gp.why, "peer-to-peer refused") && gio_ctx_unregister(devs[d].ctx, mem) == -ENOENT,
		      "device %u: rc %d, path %u, p2p_rc %d: %s", d, rc, gp.path, gp.p2p_rc, gp.why);
	}
	pool.base = (uint64_t)(uintptr_t)mem;
	pool.elem_bytes = 2;
	for (i = 0; i < GIO_KV_DIMS; i++)
		pool.extent[i] = ext[i];
	pool.stride[GIO_KV_CHANNEL] = 1;
	pool.stride[GIO_KV_HEAD] = CHANNELS;
	pool.stride[GIO_KV_TOKEN] = CHANNELS * HEADS;
	pool.stride[GIO_KV_BLOCK] = CHANNELS * HEADS * TOKENS;
	pool.stride[GIO_KV_PART] = pool.stride[GIO_KV_BLOCK] * BLOCKS;
	pool.stride[GIO_KV_LAYER] = pool.stride[GIO_KV_PART] * 2;
	rc = gio_kv_pool_runs(&pool, &runs);
	CHECK("pool", rc == 0 && runs.nruns == 2 && runs.object_bytes == OBJECT, "runs %d: %u of %llu bytes", rc,
	      runs.nruns, (unsigned long long)runs.run_bytes);
	memset(&sp, 0, sizeof(sp));
	sp.layers = LAYERS;
	sp.object_bytes = OBJECT;
	sp.pool_signature = gio_kv_pool_signature(&pool, &runs);
	sp.store_bytes = 16ull << 20;
	sp.timeout_ns = IO_TIMEOUT_NS;
	rc = gio_kv_store_create(ctxs, 2, &sp, &store);
	CHECK("store", rc == 0, "gio_kv_store_create: %d", rc);
	if (rc)
		goto out;
	memset(&pp, 0, sizeof(pp));
	pp.engine = GIO_KV_ENGINE_CPU;
	pp.max_requests = CHUNKS;
	pp.blocks = BLOCKS;
	pp.devs = io;
	pp.pool = &pool;
	rc = gio_kv_plan_create(store, &pp, &plan);
	CHECK("plan", rc == 0, "gio_kv_plan_create with staged devices: %d", rc);
	if (rc)
		goto out;

	/* Save: every chunk's objects into the pool, through the slots to the controllers. */
	for (c = 0; c < CHUNKS; c++) {
		keys[c] = chunk_key(c);
		blocks[c] = block_of(c);
		for (l = 0; l < LAYERS; l++) {
			object_bytes(c, l, obj);
			pool_object(&pool, &runs, l, blocks[c], obj, 1);
		}
	}
	rc = gio_kv_plan_save(plan, keys, blocks, CHUNKS, prc);
	CHECK("save.plan", rc == (int)CHUNKS, "gio_kv_plan_save: %d", rc);
	if (rc == (int)CHUNKS) {
		rc = run_layers(plan, 1);
		CHECK("save.layers", rc == 0, "a layer of the save: %d", rc);
		rc = gio_kv_plan_finish(plan, NULL, IO_TIMEOUT_NS);
		CHECK("save.committed", rc == 0, "gio_kv_plan_finish: %d", rc);
	}
	memset(hit, 0, sizeof(hit));
	rc = gio_kv_store_contains(store, keys, CHUNKS, hit);
	CHECK("save.in-store", rc == (int)CHUNKS, "%d of %u chunks in the store", rc, CHUNKS);

	/* Load: the pool poisoned, every chunk back through the slots. */
	memset(mem, 0xa5, LAYERS * BLOCKS * OBJECT);
	rc = gio_kv_plan_load(plan, keys, blocks, CHUNKS, hit);
	CHECK("load.plan", rc == (int)CHUNKS, "gio_kv_plan_load: %d hits", rc);
	if (rc == (int)CHUNKS) {
		rc = run_layers(plan, 0);
		CHECK("load.layers", rc == 0, "a layer of the load: %d", rc);
		rc = gio_kv_plan_finish(plan, NULL, IO_TIMEOUT_NS);
		CHECK("load.finished", rc == 0, "gio_kv_plan_finish: %d", rc);
	}
	for (c = 0; c < CHUNKS; c++)
		for (l = 0; l < LAYERS; l++) {
			object_bytes(c, l, obj);
			mismatched += !pool_object(&pool, &runs, l, blocks[c], obj, 0);
		}
	CHECK("load.every-byte", mismatched == 0, "%u of %u objects differ", mismatched, CHUNKS * LAYERS);
	for (d = 0; d < 2; d++) {
		uint32_t used = 0;
		for (q = 0; q < QPS; q++) {
			used += devs[d].st->rings[q].reserved;
			printf("STAGED device %u ring %u: %u tickets over %u slots (each slot used %u times)\n", d, q,
			       devs[d].st->rings[q].reserved, SLOTS, devs[d].st->rings[q].reserved / SLOTS);
		}
		CHECK("slots.reused",
		      used == 2 * LAYERS * CHUNKS / 2 && free_slots(&devs[d]) == QPS * SLOTS &&
			      devs[d].st->rings[0].reserved == devs[d].st->rings[1].reserved,
		      "device %u: %u tickets (want %u, even over its queue pairs: %u and %u), %u of %u slots free", d, used,
		      2 * LAYERS * CHUNKS / 2, devs[d].st->rings[0].reserved, devs[d].st->rings[1].reserved,
		      free_slots(&devs[d]), QPS * SLOTS);
	}
	past_the_end(&devs[0], &pool, &runs, obj);
out:
	if (plan)
		CHECK("plan.destroy", gio_kv_plan_destroy(plan) == 0, "gio_kv_plan_destroy");
	if (store)
		CHECK("store.close", gio_kv_store_close(store) == 0, "gio_kv_store_close");
	for (d = 0; d < 2; d++) {
		if (!devs[d].ctx)
			continue;
		for (q = 0; q < QPS; q++)
			if (devs[d].qps[q])
				(void)gio_ctx_qp_destroy(devs[d].ctx, devs[d].qps[q], IO_TIMEOUT_NS, NULL, NULL);
		if (devs[d].area)
			CHECK("staging.destroy", gio_ctx_stage_destroy(devs[d].area) == 0, "device %u", d);
		gio_ctx_close(devs[d].ctx);
	}
	printf("RESULT staged pass=%d fail=%d\n", npass, nfail);
	return nfail ? 1 : 0;
}
