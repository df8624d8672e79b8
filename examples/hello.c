/*
 * hello: the KV layer in its smallest form. A paged KV pool described by strides, a store over
 * one or more targets, chunks saved layer by layer, then one layer loaded back into other pool
 * blocks, and every byte of it checked.
 *
 * Integration template: the calls an engine makes (giouring/kv/plan.h) with the CPU engine, which
 * runs on every target kind (file://, mem://host, nvme-pci://) and on machines without a GPU; the
 * GPU engine takes the same plan with one kernel launch per layer (examples/layerwise.cu).
 *
 *   hello [URI ...]
 *
 * Default: two targets, each a file in a new temporary directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/giouring.h>

enum { LAYERS = 4, BLOCKS = 16, TOKENS = 16, HEADS = 8, DIM = 128, CHUNKS = 8, MAX_DEVS = 8 };

/* Byte k of chunk c's layer-l object: what the "engine" computed. */
static unsigned char byte_of(uint32_t c, uint32_t l, uint64_t k)
{
	return (unsigned char)((c * 131u + l * 29u + k * 7u) ^ (k >> 9));
}

int main(int argc, char **argv)
{
	const char *uris[MAX_DEVS] = {"", ""};
	uint32_t n = 2, d, i, l;
	struct gio_ctx *ctx[MAX_DEVS] = {0};
	struct gio_qp *qps[MAX_DEVS] = {0};
	union gio_dptr *table[MAX_DEVS] = {0};
	struct gio_kv_io_dev devs[MAX_DEVS];
	struct gio_kv_store *store = NULL;
	struct gio_kv_plan *plan = NULL;
	struct gio_kv_pool pool;
	struct gio_kv_runs runs;
	struct gio_kv_u128 keys[CHUNKS];
	uint32_t blocks[CHUNKS];
	struct gio_kv_io_result res[CHUNKS];
	unsigned char *mem;
	uint64_t obj, bad = 0;
	int rc = 1;

	if (argc > 1) {
		n = (uint32_t)(argc - 1) < MAX_DEVS ? (uint32_t)(argc - 1) : MAX_DEVS;
		for (d = 0; d < n; d++)
			uris[d] = argv[d + 1];
	}
	/* 1. The pool: (layer, block, K/V, token, head, dim) of bf16, contiguous. Any engine's layout
	 * is strides like these (giouring/kv/pool.h); an object is one (layer, block). */
	memset(&pool, 0, sizeof(pool));
	pool.elem_bytes = 2;
	pool.extent[GIO_KV_LAYER] = LAYERS;
	pool.extent[GIO_KV_BLOCK] = BLOCKS;
	pool.extent[GIO_KV_PART] = 2;
	pool.extent[GIO_KV_TOKEN] = TOKENS;
	pool.extent[GIO_KV_HEAD] = HEADS;
	pool.extent[GIO_KV_CHANNEL] = DIM;
	pool.stride[GIO_KV_CHANNEL] = 1;
	pool.stride[GIO_KV_HEAD] = DIM;
	pool.stride[GIO_KV_TOKEN] = DIM * HEADS;
	pool.stride[GIO_KV_PART] = DIM * HEADS * TOKENS;
	pool.stride[GIO_KV_BLOCK] = 2 * pool.stride[GIO_KV_PART];
	pool.stride[GIO_KV_LAYER] = BLOCKS * pool.stride[GIO_KV_BLOCK];
	obj = 2ull * TOKENS * HEADS * DIM * 2; /* 64 KiB */
	mem = aligned_alloc(4096, LAYERS * BLOCKS * obj);
	if (!mem)
		return 1;
	pool.base = (uint64_t)(uintptr_t)mem;
	if (gio_kv_pool_check(&pool, NULL) || gio_kv_pool_runs(&pool, &runs)) {
		fprintf(stderr, "hello: pool refused\n");
		return 1;
	}

	/* 2. The targets; the pool registered with each and its P2P table (one data pointer per
	 * object, at that target's bus address of the pool); a queue pair each. */
	for (d = 0; d < n; d++) {
		struct gio_kv_pool bus; /* the pool at this target's bus addresses */
		struct gio_ns_info ns;
		uint64_t o;
		if (gio_ctx_open(uris[d], &ctx[d]) || gio_ctx_register(ctx[d], mem, LAYERS * BLOCKS * obj, NULL) ||
		    gio_kv_pool_bus(ctx[d], &pool, NULL, &bus) || gio_ctx_qp_create(ctx[d], 64, &qps[d]))
			goto fail;
		table[d] = calloc(LAYERS * BLOCKS, sizeof(union gio_dptr));
		for (o = 0; table[d] && o < LAYERS * BLOCKS; o++)
			if (gio_kv_table_entry(&bus, &runs, gio_ctx_dptr_caps(ctx[d]), o, 0, &table[d][o].sgl, NULL)) {
				fprintf(stderr, "hello: target %u takes no SGL (a PRP table would be needed)\n", d);
				goto out;
			}
		gio_ctx_info(ctx[d], &ns);
		memset(&devs[d], 0, sizeof(devs[d]));
		devs[d].qps = &qps[d];
		devs[d].table = table[d];
		devs[d].nqps = 1;
		devs[d].nsid = ns.nsid;
		devs[d].lba_shift = (uint32_t)__builtin_ctz(ns.lba_bytes);
		devs[d].psdt = GIO_PSDT_SGL_MPTR;
	}

	/* 3. A store over the targets (formatted: what they held is gone) and a plan for it. */
	{
		struct gio_kv_store_params sp = {0};
		struct gio_kv_plan_params pp = {0};
		sp.layers = LAYERS;
		sp.object_bytes = obj;
		sp.pool_signature = gio_kv_pool_signature(&pool, &runs);
		sp.store_bytes = 16u << 20;
		pp.engine = GIO_KV_ENGINE_CPU;
		pp.max_requests = CHUNKS;
		pp.blocks = BLOCKS;
		pp.devs = devs;
		if (gio_kv_store_create(ctx, n, &sp, &store) || gio_kv_plan_create(store, &pp, &plan))
			goto fail;
	}

	/* 4. Save: chunk c from pool block c, one call per layer, committed at finish. */
	for (i = 0; i < CHUNKS; i++) {
		keys[i].hi = 0x68656c6c6fu;
		keys[i].lo = i; /* an engine uses a hash of the chunk's tokens */
		blocks[i] = i;
		for (l = 0; l < LAYERS; l++)
			for (uint64_t k = 0; k < obj; k++)
				mem[(l * BLOCKS + i) * obj + k] = byte_of(i, l, k);
	}
	if (gio_kv_plan_save(plan, keys, blocks, CHUNKS, NULL) != CHUNKS)
		goto fail;
	for (l = 0; l < LAYERS; l++)
		if (gio_kv_plan_run_layer(plan, l, 1))
			goto fail;
	if (gio_kv_plan_finish(plan, res, 0))
		goto fail;

	/* 5. Load layer 0 of every chunk into blocks 8..15 (and one key never stored: a miss). */
	memset(mem, 0, LAYERS * BLOCKS * obj);
	for (i = 0; i < CHUNKS; i++)
		blocks[i] = BLOCKS - 1 - i;
	keys[CHUNKS - 1].lo = 999;
	rc = gio_kv_plan_load(plan, keys, blocks, CHUNKS, NULL);
	if (rc < 0 || gio_kv_plan_run_layer(plan, 0, 0) || gio_kv_plan_wait_layer(plan, 0, 10000000000ull))
		goto fail;
	printf("hello: %u targets, %d of %u keys found, layer 0 loaded\n", n, rc, CHUNKS);
	rc = gio_kv_plan_finish(plan, res, 0);
	if (rc)
		goto fail;
	for (i = 0; i + 1 < CHUNKS; i++)
		for (uint64_t k = 0; k < obj; k++)
			bad += mem[(uint64_t)blocks[i] * obj + k] != byte_of(i, 0, k);
	printf("hello: %" PRIu64 " wrong bytes in %u objects of %" PRIu64 " KiB: %s\n", bad, CHUNKS - 1, obj >> 10,
	       bad ? "FAIL" : "PASS");
	rc = bad != 0;
	goto out;
fail:
	fprintf(stderr, "hello: %s\n", gio_last_error());
	rc = 1;
out:
	gio_kv_plan_destroy(plan);
	gio_kv_store_close(store);
	for (d = 0; d < n; d++) {
		if (qps[d])
			gio_ctx_qp_destroy(ctx[d], qps[d], 1000000000ull, NULL, NULL);
		gio_ctx_close(ctx[d]);
		free(table[d]);
	}
	free(mem);
	return rc;
}
