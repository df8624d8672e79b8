/*
 * plan_restore: plans the restore of a KV-cache prefix from SSDs into a paged GPU pool and prints
 * the NVMe commands and SGL descriptors it would submit, with their byte counts.
 *
 * It runs anywhere (no GPU, no SSD): it is the integration template for the part of an engine
 * that turns (block, layer) into NVMe commands. Every planned command is checked by the SGL
 * walker, the controller's view of the command, before it is counted. For comparison it prints
 * the PRP list memory the same objects would need (a page per list, Linux's 256-byte pool, exact)
 * and checks the exact figure by building and walking one list in a 256-byte chunk.
 *
 *   plan_restore [--tokens N] [--devices N] [--show N] [--pool-blocks N] [--seed N]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/giouring.h>
#include <giouring/proto/prp_walk.h> /* the controller's view of the PRP alternative */
#include <giouring/proto/sgl_walk.h> /* the controller's view, to check each planned command */

struct options {
	uint64_t tokens;
	uint32_t devices;
	uint32_t show;
	uint32_t pool_blocks; /* 0: twice the prefix, so restored blocks land scattered */
	uint32_t seed;
};

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *s < '0' || *s > '9' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "plan_restore: %s wants a whole number from %" PRIu64 " to %" PRIu64 ", got '%s'\n", name, min, max, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	int i;
	o->tokens = 4096;
	o->devices = 4;
	o->show = 8;
	o->pool_blocks = 0;
	o->seed = 1;
	for (i = 1; i < argc; i++) {
		uint64_t v;
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: plan_restore [--tokens N] [--devices N] [--show N] [--pool-blocks N] [--seed N]\n");
			exit(0);
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "plan_restore: unknown or incomplete option '%s' (try --help)\n", a);
			return -EINVAL;
		}
		if (!strcmp(a, "--tokens")) {
			if (parse_u64(a, argv[++i], 1, 1ull << 24, &v))
				return -EINVAL;
			o->tokens = v;
		} else if (!strcmp(a, "--devices")) {
			if (parse_u64(a, argv[++i], 1, 1024, &v))
				return -EINVAL;
			o->devices = (uint32_t)v;
		} else if (!strcmp(a, "--show")) {
			if (parse_u64(a, argv[++i], 0, 1u << 20, &v))
				return -EINVAL;
			o->show = (uint32_t)v;
		} else if (!strcmp(a, "--pool-blocks")) {
			if (parse_u64(a, argv[++i], 1, 1u << 24, &v))
				return -EINVAL;
			o->pool_blocks = (uint32_t)v;
		} else if (!strcmp(a, "--seed")) {
			if (parse_u64(a, argv[++i], 1, 0xffffffffu, &v))
				return -EINVAL;
			o->seed = (uint32_t)v;
		} else {
			fprintf(stderr, "plan_restore: unknown option '%s' (try --help)\n", a);
			return -EINVAL;
		}
	}
	return 0;
}

/* xorshift32: a fixed, portable sequence so the shuffled pool is the same on every machine. */
static uint32_t next_rand(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void print_sqe(const struct gio_sqe *sqe)
{
	uint32_t dw[16];
	int i;
	memcpy(dw, sqe, sizeof(dw));
	printf("      SQE:");
	for (i = 0; i < 16; i++)
		printf("%s%08" PRIx32, i == 8 ? "\n          " : " ", dw[i]);
	printf("\n");
}

static const char *mib(uint64_t bytes, char *buf, size_t n)
{
	if (bytes >= (1ull << 30))
		snprintf(buf, n, "%.2f GiB", bytes / 1073741824.0);
	else if (bytes >= (1ull << 20))
		snprintf(buf, n, "%.2f MiB", bytes / 1048576.0);
	else
		snprintf(buf, n, "%.2f KiB", bytes / 1024.0);
	return buf;
}

/* PRP list memory for one object of obj bytes, and a check that the exact figure is what a list
 * takes: built in the second 256-byte chunk of a page, walked with exactly those bytes registered,
 * it must describe the object. Returns 0, or 1 after a message. */
static int prp_object_figures(const char *what, uint64_t obj, const struct gio_dptr_caps *caps, uint64_t *page,
			      uint64_t *lnx, uint64_t *exact)
{
	static uint64_t chunks[4096 / 8];
	const uint64_t chunk_off = 256, chunk_addr = 0x10000 + chunk_off; /* bus address (illustrative) */
	const uint64_t data = 0x7f0000000000ull;
	const struct gio_range r = {data, (uint32_t)obj};
	struct gio_dma_region reg;
	struct gio_dma_map map;
	struct gio_xfer_seg seg;
	struct gio_xfer_list out = {&seg, 1, 0};
	struct gio_sqe sqe;
	uint16_t st;
	int rc;

	*page = gio_prp_object_alloc_bytes(obj, caps->page_bytes, caps->page_bytes);
	*lnx = gio_prp_object_alloc_bytes(obj, caps->page_bytes, GIO_PRP_CHUNK_LINUX);
	*exact = gio_prp_object_alloc_bytes(obj, caps->page_bytes, GIO_PRP_CHUNK_EXACT);
	rc = gio_prep_read(&sqe, 1, 0, (uint32_t)(obj / 4096));
	if (rc == 0)
		rc = gio_prp_build(&sqe, &r, 1, caps, &chunks[chunk_off / 8], chunk_addr, GIO_PRP_CHUNK_LINUX);
	if (rc < 0 || (uint64_t)rc != *exact) {
		fprintf(stderr, "plan_restore: %s: the PRP list in a 256-byte chunk: %d, want %" PRIu64 " bytes\n", what, rc,
			*exact);
		return 1;
	}
	reg.addr = chunk_addr;
	reg.len = (uint64_t)rc;
	reg.ptr = &chunks[chunk_off / 8];
	map.regions = &reg;
	map.count = rc > 0 ? 1u : 0u;
	st = gio_prp_walk(&sqe, obj, caps, &map, &out);
	if (st != 0 || out.n != 1 || seg.addr != data || seg.len != obj) {
		fprintf(stderr, "plan_restore: %s: the PRP list does not describe the object (%s)\n", what, gio_status_str(st));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* Llama3-8B geometry (docs/benchmarking.md, "Workload"): 32 layers, 8 KV heads, head dim 128,
	 * bf16, 16-token blocks. */
	const struct gio_kv_geometry g = {32, 8, 128, 2, 16};
	const uint64_t pool_base = 0x7f0000000000ull; /* IOVA of the pool (illustrative) */
	struct gio_kv_store_layout store;
	struct gio_dptr_caps caps;
	struct options o;
	uint32_t *dest, nblocks, pool_blocks, i, layer, half, seed;
	uint64_t obj, layer_bytes, commands = 0, bytes = 0, walked = 0;
	/* PRP list memory the same objects would need: a page per list, Linux's 256-byte pool, exact. */
	uint64_t prp_page = 0, prp_linux = 0, prp_exact = 0;
	uint64_t per_dev_cmds[1024] = {0};
	char b1[32], b2[32], b3[32], b4[32], b5[32];

	if (parse_options(argc, argv, &o))
		return 2;
	obj = gio_kv_object_bytes(&g);
	nblocks = (uint32_t)((o.tokens + g.block_tokens - 1) / g.block_tokens);
	pool_blocks = o.pool_blocks ? o.pool_blocks : 2 * nblocks;
	if (pool_blocks < nblocks) {
		fprintf(stderr, "plan_restore: --pool-blocks %u cannot hold the %u blocks of the prefix\n", pool_blocks, nblocks);
		return 2;
	}
	layer_bytes = 2ull * pool_blocks * obj;
	store.ndevices = o.devices;
	store.lba_bytes = 4096;
	store.base_lba = 0;
	/* A controller like QEMU's: SGLs with dword alignment rule, MDTS 512 KiB, 4 KiB pages. */
	memset(&caps, 0, sizeof(caps));
	caps.sgls = GIO_SGLS_SUPPORT_DWORD;
	caps.page_bytes = 4096;
	caps.max_xfer_bytes = 512 * 1024;

	/* The engine's allocator hands out pool blocks in no particular order: shuffle them. */
	dest = malloc((size_t)pool_blocks * sizeof(*dest));
	if (dest == NULL) {
		fprintf(stderr, "plan_restore: out of memory for %u pool blocks\n", pool_blocks);
		return 1;
	}
	for (i = 0; i < pool_blocks; i++)
		dest[i] = i;
	seed = o.seed;
	for (i = pool_blocks - 1; i > 0; i--) {
		uint32_t j = next_rand(&seed) % (i + 1), t = dest[i];
		dest[i] = dest[j];
		dest[j] = t;
	}

	printf("giouring %s plan_restore: the NVMe commands a KV restore submits (planned, not submitted)\n",
	       gio_version_string());
	printf("model   Llama3-8B geometry: %u layers, %u KV heads, head dim %u, %u-byte elements, %u-token blocks\n",
	       g.layers, g.kv_heads, g.head_dim, g.dtype_bytes, g.block_tokens);
	printf("prefix  %" PRIu64 " tokens = %u blocks; %" PRIu64 " objects (K and V x %u layers x %u blocks) of %" PRIu64 " bytes = %s\n",
	       o.tokens, nblocks, (uint64_t)2 * g.layers * nblocks, g.layers, nblocks, obj,
	       mib((uint64_t)2 * g.layers * nblocks * obj, b1, sizeof(b1)));
	printf("store   %u devices, %u-byte LBAs, one file of %u objects per block, files round-robin over devices\n",
	       store.ndevices, store.lba_bytes, 2 * g.layers);
	printf("pool    %u blocks per layer tensor [2, %u, %u, %u, %u], blocks shuffled (seed %u)\n", pool_blocks,
	       pool_blocks, g.block_tokens, g.kv_heads, g.head_dim, o.seed);
	printf("ctrl    SGLS support %u (dword rule), MDTS %s, page %u bytes\n\n", gio_dptr_sgl_support(&caps),
	       mib(caps.max_xfer_bytes, b1, sizeof(b1)), caps.page_bytes);

	for (layer = 0; layer < g.layers; layer++) {
		const uint64_t layer_base = pool_base + layer * layer_bytes;
		for (i = 0; i < nblocks; i++) {
			for (half = 0; half < 2; half++) {
				struct gio_kv_extent ext;
				struct gio_sqe sqe;
				struct gio_range r;
				struct gio_prp_sizes ps;
				struct gio_xfer_seg seg;
				struct gio_xfer_list out = {&seg, 1, 0};
				const struct gio_dma_map none = {NULL, 0};
				uint16_t st;
				int rc = gio_kv_object_extent(&g, &store, i, layer, half, &ext);
				if (rc == 0)
					rc = gio_prep_read(&sqe, 1, ext.slba, ext.nblocks);
				r.addr = gio_kv_pool_addr(&g, layer_base, pool_blocks, dest[i], half);
				r.len = (uint32_t)obj;
				if (rc == 0)
					rc = gio_sgl_build(&sqe, &r, 1, &caps, NULL, 0, 0);
				if (rc != 0) {
					fprintf(stderr, "plan_restore: block %u layer %u: %s\n", i, layer, strerror(-rc));
					return 1;
				}
				/* The controller's view: exactly this object's bytes, at its pool address. */
				st = gio_sgl_walk(&sqe, (uint64_t)ext.nblocks * store.lba_bytes, 0, &caps, &none, &out);
				if (st != 0 || out.n != 1 || seg.addr != r.addr || seg.len != obj) {
					fprintf(stderr, "plan_restore: block %u layer %u: the SGL does not describe the object (%s)\n",
						i, layer, gio_status_str(st));
					return 1;
				}
				walked++;
				/* The PRP alternative for the same object, for its metadata bytes only: the
				 * list's exact bytes (the plan's), and as allocators set lists aside. */
				if (gio_prp_plan(&r, 1, &caps, &ps) == 0) {
					prp_exact += ps.list_bytes;
					prp_linux += gio_prp_list_alloc_bytes(ps.npages, caps.page_bytes, GIO_PRP_CHUNK_LINUX);
					prp_page += gio_prp_list_alloc_bytes(ps.npages, caps.page_bytes, caps.page_bytes);
				}
				if (commands < o.show) {
					if (commands == 0)
						printf("first %u commands (layer 0 first; one NVMe Read per object):\n", o.show);
					printf("  #%-4" PRIu64 " dev %u  Read nsid %u slba %-8" PRIu64 " nlb %u (%" PRIu64 " bytes)  %s of block %u -> pool block %u\n",
					       commands, ext.device, sqe.nsid, ext.slba, ext.nblocks, obj, half ? "V" : "K", i, dest[i]);
					printf("      SGL1 Data Block: addr 0x%016" PRIx64 " len %" PRIu32 " id 0x%02x (16 bytes, in the SQE)\n",
					       sqe.dptr.sgl.addr, sqe.dptr.sgl.len, sqe.dptr.sgl.id);
					print_sqe(&sqe);
				}
				commands++;
				bytes += obj;
				per_dev_cmds[ext.device]++;
			}
		}
		if (layer == 0) {
			printf("\nper layer: %" PRIu64 " commands, %s, one I/O kernel launch\n", commands,
			       mib(bytes, b1, sizeof(b1)));
		}
	}
	printf("\ntotal   %" PRIu64 " NVMe Read commands, %s of KV, %u I/O kernel launches (one per layer)\n", commands,
	       mib(bytes, b1, sizeof(b1)), g.layers);
	printf("devices");
	for (i = 0; i < store.ndevices; i++)
		printf(" dev%u:%" PRIu64, i, per_dev_cmds[i]);
	printf(" commands\n");
	{
		const double sgl = (double)gio_sgl_pool_bytes(commands), per = commands ? (double)commands : 1.0;
		printf("metadata SGL: %" PRIu64 " Data Block descriptors = %s (16 B per object, P2P table)\n", commands,
		       mib(gio_sgl_pool_bytes(commands), b1, sizeof(b1)));
		printf("metadata PRP lists for the same objects (besides PRP1/PRP2, 16 B in each SQE):\n");
		printf("         a page per list %s (%.0f B per object, %.0fx SGL)\n", mib(prp_page, b1, sizeof(b1)),
		       prp_page / per, prp_page / sgl);
		printf("         Linux's 256-byte pool %s (%.0f B per object, %.0fx)\n", mib(prp_linux, b2, sizeof(b2)),
		       prp_linux / per, prp_linux / sgl);
		printf("         exact %s (%.0f B per object, %.1fx)\n", mib(prp_exact, b3, sizeof(b3)), prp_exact / per,
		       prp_exact / sgl);
	}
	printf("checked %" PRIu64 "/%" PRIu64 " commands through the SGL walker: each moves exactly its object\n", walked, commands);
	free(dest);

	/* Per object, and for Tutti's example: a 60 GiB pool of 64 KiB objects, one command each. */
	{
		const uint64_t tutti_pool = 60ull << 30, tutti_obj = 64u << 10, tutti_n = tutti_pool / tutti_obj;
		uint64_t pg, lnx, ex, tpg, tlnx, tex;
		if (prp_object_figures("Llama3-8B object", obj, &caps, &pg, &lnx, &ex) ||
		    prp_object_figures("Tutti's object", tutti_obj, &caps, &tpg, &tlnx, &tex))
			return 1;
		printf("\nPRP list memory per object, %u-byte pages (SGL: 16 B each; PRP1/PRP2: 16 B in the SQE):\n",
		       caps.page_bytes);
		printf("  Llama3-8B object %" PRIu64 " KiB (%" PRIu64 " list entries): page %" PRIu64 " B, Linux 256-byte pool %" PRIu64
		       " B, exact %" PRIu64 " B\n",
		       obj >> 10, ex / 8, pg, lnx, ex);
		printf("  Tutti's object %" PRIu64 " KiB (%" PRIu64 " list entries): page %" PRIu64 " B, Linux 256-byte pool %" PRIu64
		       " B, exact %" PRIu64 " B\n",
		       tutti_obj >> 10, tex / 8, tpg, tlnx, tex);
		printf("  Tutti's pool %s of %" PRIu64 " KiB objects (%" PRIu64 "): SGL %s; PRP page %s, Linux %s, exact %s\n",
		       mib(tutti_pool, b1, sizeof(b1)), tutti_obj >> 10, tutti_n, mib(gio_sgl_pool_bytes(tutti_n), b2, sizeof(b2)),
		       mib(gio_prp_pool_alloc_bytes(tutti_n, tutti_obj, caps.page_bytes, caps.page_bytes), b3, sizeof(b3)),
		       mib(gio_prp_pool_alloc_bytes(tutti_n, tutti_obj, caps.page_bytes, GIO_PRP_CHUNK_LINUX), b4, sizeof(b4)),
		       mib(gio_prp_pool_alloc_bytes(tutti_n, tutti_obj, caps.page_bytes, GIO_PRP_CHUNK_EXACT), b5, sizeof(b5)));
		printf("checked both PRP lists built in a 256-byte chunk 256 bytes into its page: each takes its exact bytes and,\n"
		       "        through the PRP walker given only those, moves exactly its object\n");
	}
	return walked == commands ? 0 : 1;
}
