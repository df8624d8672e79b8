/*
 * kv_restore: stores a Llama3-8B-geometry KV-cache prefix to an NVMe target and restores it into
 * a paged, shuffled KV pool through giouring's rings, one IOCB (one "I/O kernel launch") per
 * layer, then checks every byte.
 *
 * Integration template: the part of a serving engine that offloads a finished prefix and brings
 * it back before attention. On a machine without a GPU the pool lives in host memory and a CPU
 * thread plays the I/O kernel; the commands are the same ones the GPU path submits.
 *
 *   kv_restore [--tokens N] [--uri URI] [--queues N] [--depth N] [--seed N]
 *
 * Default URI: a file target in a temporary directory (removed afterwards).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <giouring/giouring.h>

struct options {
	uint64_t tokens;
	const char *uri;
	uint32_t queues, depth, seed;
};

static int parse_num(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *s < '0' || *s > '9' || *end || v < min || v > max) {
		fprintf(stderr, "kv_restore: %s wants a whole number from %" PRIu64 " to %" PRIu64 ", got '%s'\n", name, min,
			max, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	int i;
	uint64_t v;
	o->tokens = 4096;
	o->uri = NULL;
	o->queues = 4;
	o->depth = 256;
	o->seed = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: kv_restore [--tokens N] [--uri URI] [--queues N] [--depth N] [--seed N]\n");
			exit(0);
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "kv_restore: unknown or incomplete option '%s' (try --help)\n", a);
			return -EINVAL;
		}
		if (!strcmp(a, "--uri")) {
			o->uri = argv[++i];
			continue;
		}
		if (!strcmp(a, "--tokens")) {
			if (parse_num(a, argv[++i], 16, 1u << 20, &v))
				return -EINVAL;
			o->tokens = v;
		} else if (!strcmp(a, "--queues")) {
			if (parse_num(a, argv[++i], 1, 16, &v))
				return -EINVAL;
			o->queues = (uint32_t)v;
		} else if (!strcmp(a, "--depth")) {
			if (parse_num(a, argv[++i], 2, 4096, &v) || (v & (v - 1))) {
				fprintf(stderr, "kv_restore: --depth wants a power of two from 2 to 4096\n");
				return -EINVAL;
			}
			o->depth = (uint32_t)v;
		} else if (!strcmp(a, "--seed")) {
			if (parse_num(a, argv[++i], 1, 0xffffffffu, &v))
				return -EINVAL;
			o->seed = (uint32_t)v;
		} else {
			fprintf(stderr, "kv_restore: unknown option '%s' (try --help)\n", a);
			return -EINVAL;
		}
	}
	return 0;
}

static uint32_t next_rand(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void shuffle(uint32_t *v, uint32_t n, uint32_t *seed)
{
	uint32_t i;
	for (i = 0; i < n; i++)
		v[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint32_t j = next_rand(seed) % (i + 1), t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

/* The bytes object (block, layer, half) holds: a function of all three and the byte index. */
static void fill_object(unsigned char *p, uint64_t bytes, uint32_t block, uint32_t layer, uint32_t half)
{
	uint64_t i, x = 0x9e3779b97f4a7c15ull * (1 + block * 64u + layer * 2u + half);
	for (i = 0; i < bytes; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

static double now_s(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct phase {
	double wall, cpu;
	uint64_t commands, bytes;
};

/* One IOCB per layer: every object of the prefix for that layer, like one I/O kernel launch. */
static int run_layers(const struct gio_kv_geometry *g, const struct gio_kv_store_layout *s, uint32_t nblocks,
		      const uint32_t *dest, uint32_t pool_blocks, uint64_t pool_addr, uint64_t layer_bytes,
		      uint8_t dir, struct gio_uring *u, const struct gio_iocb_target *tg, struct gio_ioctx *ctx,
		      struct phase *ph)
{
	const uint64_t obj = gio_kv_object_bytes(g);
	const double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	struct gio_iocb iocb;
	uint32_t layer, b, h;
	memset(&iocb, 0, sizeof(iocb));
	for (layer = 0; layer < g->layers; layer++) {
		uint32_t n = 0;
		int rc;
		for (b = 0; b < nblocks; b++) {
			for (h = 0; h < 2; h++) {
				struct gio_kv_extent e;
				struct gio_ioctx *x = &ctx[n++];
				if (gio_kv_object_extent(g, s, b, layer, h, &e))
					return -EINVAL;
				gio_sgl_set(&x->dptr, gio_kv_pool_addr(g, pool_addr + layer * layer_bytes, pool_blocks, dest[b], h),
					    (uint32_t)obj, GIO_SGL_TYPE_DATA_BLOCK);
				x->offset = e.slba * s->lba_bytes;
				x->len = (uint32_t)obj;
				x->dir = dir;
			}
		}
		iocb.ctx = ctx;
		iocb.nctx = n;
		iocb.timeout_ns = 60ull * 1000000000ull;
		rc = gio_uring_submit(u, &iocb);
		if (rc == 0) {
			gio_uring_process(u, tg, 1); /* this thread plays the I/O kernel */
			rc = gio_iocb_wait(&iocb, gio_deadline_in(60ull * 1000000000ull));
		}
		if (rc) {
			fprintf(stderr, "kv_restore: layer %u: %s", layer, strerror(-rc));
			if (rc == -EIO)
				fprintf(stderr, " (IOCTX %u: %s)", iocb.first_error, gio_status_str(iocb.first_status));
			fprintf(stderr, "\n");
			return rc;
		}
		ph->commands += n;
		ph->bytes += n * obj;
	}
	ph->wall = now_s(CLOCK_MONOTONIC) - w0;
	ph->cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	return 0;
}

int main(int argc, char **argv)
{
	const struct gio_kv_geometry g = {32, 8, 128, 2, 16}; /* Llama3-8B, block 16 (docs/benchmarking.md, "Workload") */
	struct options o;
	struct gio_ctx *ctx = NULL;
	struct gio_ns_info info;
	struct gio_kv_store_layout store;
	struct gio_qp *qps[16];
	struct gio_iocb_target tg;
	struct gio_iocb *ring_slots[4];
	struct gio_uring u;
	struct gio_ioctx *ioctx = NULL;
	struct phase st = {0, 0, 0, 0}, rs = {0, 0, 0, 0};
	uint32_t *src_dest = NULL, *dst_dest = NULL, nblocks, pool_blocks, i, layer, h, seed;
	uint64_t obj, layer_bytes, pool_bytes, bad = 0, pool_addr;
	unsigned char *pool = NULL;
	char uri[512];
	int rc;

	if (parse_options(argc, argv, &o))
		return 2;
	obj = gio_kv_object_bytes(&g);
	nblocks = (uint32_t)((o.tokens + g.block_tokens - 1) / g.block_tokens);
	if ((uint64_t)nblocks * 2 > GIO_IOCB_MAX_CTX) {
		fprintf(stderr, "kv_restore: %u blocks need %u IOCTXs per layer; one IOCB holds %u (use --tokens <= %u)\n",
			nblocks, nblocks * 2, GIO_IOCB_MAX_CTX, GIO_IOCB_MAX_CTX / 2 * g.block_tokens);
		return 2;
	}
	pool_blocks = nblocks + nblocks / 2; /* a pool with free blocks, so placement is scattered */
	layer_bytes = 2ull * pool_blocks * obj;
	pool_bytes = layer_bytes * g.layers;
	if (!o.uri) {
		snprintf(uri, sizeof(uri), "?size=%" PRIu64 "&queues=%u", (uint64_t)nblocks * 2 * g.layers * obj, o.queues);
		o.uri = uri;
	}
	rc = gio_ctx_open(o.uri, &ctx);
	if (rc) {
		fprintf(stderr, "kv_restore: %s\n", gio_last_error());
		return 1;
	}
	gio_ctx_info(ctx, &info);
	store.ndevices = 1;
	store.lba_bytes = info.lba_bytes;
	store.base_lba = 0;
	if ((uint64_t)nblocks * 2 * g.layers * obj > info.nblocks * info.lba_bytes) {
		fprintf(stderr, "kv_restore: the target holds %" PRIu64 " bytes; the prefix needs %" PRIu64 "\n",
			info.nblocks * info.lba_bytes, (uint64_t)nblocks * 2 * g.layers * obj);
		gio_ctx_close(ctx);
		return 1;
	}
	if (o.queues > info.io_queues)
		o.queues = info.io_queues;
	for (i = 0; i < o.queues; i++) {
		rc = gio_ctx_qp_create(ctx, o.depth, &qps[i]);
		if (rc) {
			fprintf(stderr, "kv_restore: %s\n", gio_last_error());
			gio_ctx_close(ctx);
			return 1;
		}
	}
	pool = aligned_alloc(4096, pool_bytes);
	ioctx = calloc(GIO_IOCB_MAX_CTX, sizeof(*ioctx));
	src_dest = malloc(pool_blocks * sizeof(*src_dest));
	dst_dest = malloc(pool_blocks * sizeof(*dst_dest));
	if (!pool || !ioctx || !src_dest || !dst_dest) {
		fprintf(stderr, "kv_restore: out of memory for a %" PRIu64 "-byte pool\n", pool_bytes);
		return 1;
	}
	rc = gio_ctx_register(ctx, pool, pool_bytes, &pool_addr);
	if (rc) {
		fprintf(stderr, "kv_restore: %s\n", gio_last_error());
		return 1;
	}
	tg.qps = qps;
	tg.nqps = o.queues;
	tg.nsid = info.nsid;
	tg.lba_shift = (uint32_t)__builtin_ctz(info.lba_bytes);
	tg.batch = 32;
	gio_uring_init(&u, ring_slots, 4);

	printf("giouring %s kv_restore: store and restore a KV prefix through NVMe queue pairs\n", gio_version_string());
	printf("model   Llama3-8B geometry: %u layers x %u KV heads x head dim %u, bf16, %u-token blocks: %" PRIu64
	       "-byte objects\n", g.layers, g.kv_heads, g.head_dim, g.block_tokens, obj);
	printf("prefix  %" PRIu64 " tokens = %u blocks = %u objects = %.1f MiB\n", o.tokens, nblocks, nblocks * 2 * g.layers,
	       nblocks * 2.0 * g.layers * obj / 1048576.0);
	printf("target  %s: %" PRIu64 " x %u-byte blocks, SGLS 0x%x, MDTS %" PRIu64 " KiB, %u queue pairs of depth %u\n",
	       o.uri[0] == '?' ? "temporary file (file target, CPU executor)" : o.uri, info.nblocks, info.lba_bytes,
	       info.sgls, info.max_xfer_bytes / 1024, o.queues, o.depth);
	printf("pool    %u blocks per layer tensor [2, %u, %u, %u, %u]; blocks shuffled, differently for store and restore\n\n",
	       pool_blocks, pool_blocks, g.block_tokens, g.kv_heads, g.head_dim);

	/* Store: the prefix sits in the pool at one scattered placement... */
	seed = o.seed;
	shuffle(src_dest, pool_blocks, &seed);
	for (layer = 0; layer < g.layers; layer++)
		for (i = 0; i < nblocks; i++)
			for (h = 0; h < 2; h++)
				fill_object(pool + (gio_kv_pool_addr(&g, layer * layer_bytes, pool_blocks, src_dest[i], h)), obj, i,
					    layer, h);
	rc = run_layers(&g, &store, nblocks, src_dest, pool_blocks, pool_addr, layer_bytes, GIO_IOCTX_WRITE, &u, &tg,
			ioctx, &st);
	/* ... restore: the pool is reused, poisoned, and the prefix lands at another placement. */
	if (rc == 0) {
		memset(pool, 0xa5, pool_bytes);
		shuffle(dst_dest, pool_blocks, &seed);
		rc = run_layers(&g, &store, nblocks, dst_dest, pool_blocks, pool_addr, layer_bytes, GIO_IOCTX_READ, &u, &tg,
				ioctx, &rs);
	}
	if (rc == 0) {
		unsigned char *want = aligned_alloc(4096, obj);
		for (layer = 0; layer < g.layers && want; layer++)
			for (i = 0; i < nblocks; i++)
				for (h = 0; h < 2; h++) {
					fill_object(want, obj, i, layer, h);
					if (memcmp(want, pool + gio_kv_pool_addr(&g, layer * layer_bytes, pool_blocks, dst_dest[i], h), obj))
						bad++;
				}
		free(want);
	}
	if (rc == 0) {
		printf("%-8s %10s %10s %10s %9s %14s\n", "phase", "commands", "MiB", "wall ms", "GB/s", "CPU us/command");
		printf("%-8s %10" PRIu64 " %10.1f %10.1f %9.2f %14.2f\n", "store", st.commands, st.bytes / 1048576.0,
		       st.wall * 1e3, st.bytes / st.wall / 1e9, st.cpu * 1e6 / st.commands);
		printf("%-8s %10" PRIu64 " %10.1f %10.1f %9.2f %14.2f\n", "restore", rs.commands, rs.bytes / 1048576.0,
		       rs.wall * 1e3, rs.bytes / rs.wall / 1e9, rs.cpu * 1e6 / rs.commands);
		printf("(CPU = the issuing thread, which here also plays the GPU's I/O kernel; the target's executor threads\n"
		       " stand in for the SSD controller and are not counted. %u IOCBs per phase, one per layer.)\n",
		       g.layers);
		printf("\nverified %" PRIu64 " of %u restored objects byte for byte: %s\n", (uint64_t)nblocks * 2 * g.layers - bad,
		       nblocks * 2 * g.layers, bad ? "MISMATCH" : "all match");
	}
	rc = gio_ctx_close(ctx) || rc || bad;
	free(pool);
	free(ioctx);
	free(src_dest);
	free(dst_dest);
	return rc ? 1 : 0;
}
