/*
 * libFuzzer target: KV pools described by strides (include/giouring/kv/pool.h), the mapping from
 * a storage object (layer, block) to the bytes of the engine's memory that the I/O moves. A wrong
 * run or range there moves the wrong bytes with no error anywhere, so every pool the check
 * accepts is compared with a model that enumerates its elements one by one.
 *
 * Input (missing bytes read 0):
 *   byte 0  mode: bits 0-1 base mode (3 -> 0); bit 2 strides as read (else made from an order of
 *           the dimensions and paddings, which every rule accepts); bit 3 bases as read (else
 *           each base's span after the one before, plus a gap); bits 4-6 element size 1 << (v % 5)
 *   then    extents: layer 1 + v % 3, block 1 + v % 4, part 1 + v % 2, token 1 + v % 4,
 *           head 1 + v % 3, channel 1 + v % 8 (one byte each)
 *   then    strides as read: 6 x u16; or an order (6 bytes: each picks among the dimensions not
 *           yet placed, innermost first) and a padding per dimension (6 bytes, v % 4 elements)
 *   then    base (u32) and, for a table of bases, gaps or raw bases (u32 each)
 *
 * Checks, for a pool gio_kv_pool_check() accepts (and that one made by order and padding with
 * bases apart is accepted):
 *   - no two elements share a byte, within a base or across bases (the model's addresses);
 *   - gio_kv_pool_runs(): the object's bytes; runs of equal length whose count times length is
 *     the object; gio_kv_object_ranges() of every object: the object's bytes exactly, in device
 *     order (each base's bytes in increasing address order, the parts of a layer-and-part table
 *     K first), refusing a layer or block out of range and a short array untouched;
 *   - gio_kv_block_range() where runs->layers_contiguous: the block's layers back to back, each
 *     object's bytes in place; -EOPNOTSUPP otherwise;
 *   - the P2P table (byte or dword SGLs by bit 7 of the mode, 4 KiB pages): where
 *     gio_kv_table_plan() says a form can be built, gio_kv_table_entry() and
 *     gio_kv_table_entry_prp() build every entry, and gio_sgl_walk() / gio_prp_walk() walk each
 *     to the object's ranges (or the run of its command), contiguous ones merged.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <giouring/kv/pool.h>
#include <giouring/proto/prp_walk.h>
#include <giouring/proto/sgl_walk.h>

#include "fuzz_common.h"

#define MAX_ELEMS (3u * 4u * 2u * 4u * 3u * 8u) /* the largest extents' product */
#define MAX_BASES 6u                           /* layers x parts */

struct elem {
	uint64_t addr;   /* its first byte */
	uint32_t object; /* layer * blocks + block */
	uint32_t group;  /* the base it hangs from within the object: the part with a layer-and-part table */
};

static int by_addr(const void *a, const void *b)
{
	const struct elem *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Device order within an object: each group's bytes in increasing address order, groups in order. */
static int by_object_order(const void *a, const void *b)
{
	const struct elem *x = a, *y = b;
	if (x->object != y->object)
		return x->object < y->object ? -1 : 1;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct elem g_el[MAX_ELEMS];

/* Ranges with contiguous neighbours merged, as the walkers list them. */
static uint32_t merged(const struct gio_range *r, uint32_t n, struct gio_xfer_seg *out)
{
	uint32_t m = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (m && out[m - 1].addr + out[m - 1].len == r[i].addr) {
			out[m - 1].len += r[i].len;
			continue;
		}
		out[m].addr = r[i].addr;
		out[m].len = r[i].len;
		out[m].flags = out[m].rsvd = 0;
		m++;
	}
	return m;
}

static void same_segments(const struct gio_xfer_list *got, const struct gio_xfer_seg *want, uint32_t n, const char *what,
			  uint64_t which)
{
	FZ_CHECK(got->n == n, "%s %llu: the walk lists %u segments, the ranges %u", what, (unsigned long long)which, got->n,
		 n);
	for (uint32_t i = 0; i < n; i++)
		FZ_CHECK(got->segs[i].addr == want[i].addr && got->segs[i].len == want[i].len && !got->segs[i].flags,
			 "%s %llu segment %u: the walk 0x%llx + %llu, the ranges 0x%llx + %llu", what, (unsigned long long)which,
			 i, (unsigned long long)got->segs[i].addr, (unsigned long long)got->segs[i].len,
			 (unsigned long long)want[i].addr, (unsigned long long)want[i].len);
}

#define SEG_AREA_BUS 0x7f0000000000ull  /* where the tables' lists are, for the walkers */
#define PRP_AREA_BUS 0x7e0000000000ull

/* The P2P table's entries of every object, in SGL and PRP form where the plan says they can be
 * built, walked as a controller walks them: the same bytes as the object's ranges. */
static void check_tables(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint8_t sel)
{
	const uint64_t objects = (uint64_t)pool->extent[GIO_KV_LAYER] * pool->extent[GIO_KV_BLOCK];
	static struct gio_range rng[MAX_ELEMS];
	static struct gio_xfer_seg want[MAX_ELEMS], got[MAX_ELEMS];
	struct gio_dptr_caps caps;
	struct gio_kv_table_sizes t;
	struct gio_dma_region reg;
	struct gio_dma_map map = {&reg, 1};
	struct gio_xfer_list out = {got, MAX_ELEMS, 0};
	memset(&caps, 0, sizeof(caps));
	caps.sgls = sel & 1u ? GIO_SGLS_SUPPORT_DWORD : GIO_SGLS_SUPPORT_BYTE;
	caps.page_bytes = 4096;
	FZ_CHECK(gio_kv_table_plan(pool, runs, &caps, &t) == 0 && t.objects == objects && t.nruns == runs->nruns,
		 "table plan");
	if (t.sgl_rc == 0) {
		struct gio_sgl_desc *seg = t.sgl_list_bytes ? calloc(1, t.sgl_list_bytes) : NULL;
		reg.addr = SEG_AREA_BUS;
		reg.len = t.sgl_list_bytes ? t.sgl_list_bytes : 16;
		reg.ptr = seg;
		for (uint64_t o = 0; o < objects; o++) {
			struct gio_sqe sqe;
			const uint32_t l = (uint32_t)(o / pool->extent[GIO_KV_BLOCK]), b = (uint32_t)(o % pool->extent[GIO_KV_BLOCK]);
			const int nr = gio_kv_object_ranges(pool, runs, l, b, rng, MAX_ELEMS);
			const uint32_t nw = merged(rng, (uint32_t)nr, want);
			uint16_t st;
			memset(&sqe, 0, sizeof(sqe));
			FZ_CHECK(gio_kv_table_entry(pool, runs, &caps, o, SEG_AREA_BUS, &sqe.dptr.sgl, seg) == 0,
				 "SGL entry of object %llu refused where the plan takes it", (unsigned long long)o);
			gio_sqe_set_psdt(&sqe, GIO_PSDT_SGL_MPTR);
			st = gio_sgl_walk(&sqe, runs->object_bytes, 0, &caps, &map, &out);
			FZ_CHECK(st == 0, "the SGL entry of object %llu walks to status 0x%x", (unsigned long long)o, st);
			same_segments(&out, want, nw, "SGL object", o);
		}
		free(seg);
	}
	if (t.prp_rc == 0) {
		const uint32_t cmds = gio_kv_table_prp_cmds(pool, runs, &caps);
		const uint64_t stride = (t.prp_list_bytes + 4095u) / 4096u * 4096u, entries = objects * cmds;
		uint8_t *lists = stride ? aligned_alloc(4096, stride * entries) : NULL;
		reg.addr = PRP_AREA_BUS;
		reg.len = stride ? stride * entries : 4096;
		reg.ptr = lists;
		for (uint64_t e = 0; e < entries; e++) {
			struct gio_sqe sqe;
			const uint64_t o = e / cmds;
			const uint32_t l = (uint32_t)(o / pool->extent[GIO_KV_BLOCK]), b = (uint32_t)(o % pool->extent[GIO_KV_BLOCK]);
			const int nr = gio_kv_object_ranges(pool, runs, l, b, rng, MAX_ELEMS);
			const uint32_t nw = cmds == 1 ? merged(rng, (uint32_t)nr, want) : merged(&rng[e % cmds], 1, want);
			uint16_t st;
			memset(&sqe, 0, sizeof(sqe));
			FZ_CHECK(gio_kv_table_entry_prp(pool, runs, &caps, e, PRP_AREA_BUS, stride, &sqe.dptr, lists) == 0,
				 "PRP entry %llu refused where the plan takes it (%u commands an object, list stride %llu)",
				 (unsigned long long)e, cmds, (unsigned long long)stride);
			st = gio_prp_walk(&sqe, cmds == 1 ? runs->object_bytes : runs->run_bytes, &caps, &map, &out);
			FZ_CHECK(st == 0, "PRP entry %llu walks to status 0x%x", (unsigned long long)e, st);
			same_segments(&out, want, nw, "PRP entry", e);
		}
		free(lists);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t ext_mod[GIO_KV_DIMS] = {3, 4, 2, 4, 3, 8};
	struct fz_reader r = {data, size};
	const uint8_t mode = fz_u8(&r);
	struct gio_kv_pool pool;
	struct gio_kv_runs runs;
	struct gio_kv_pool_fault f;
	uint64_t bases[MAX_BASES];
	struct gio_range rng[MAX_ELEMS + 1];
	uint32_t nel = 0, nbases;
	int rc, made;

	memset(&pool, 0, sizeof(pool));
	pool.base_mode = (mode & 3u) == 3u ? 0u : mode & 3u;
	pool.elem_bytes = 1u << ((mode >> 4) % 5u);
	for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
		pool.extent[d] = 1u + fz_u8(&r) % ext_mod[d];
	made = !(mode & 4u) && !(mode & 8u);
	if (mode & 4u) {
		for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
			pool.stride[d] = fz_u16(&r);
	} else {
		/* Innermost first: each dimension's stride the span of those placed before it, plus a
		 * padding; the dimensions the table of bases addresses keep stride 0. */
		uint32_t left[GIO_KV_DIMS], nleft = 0, pad[GIO_KV_DIMS];
		uint64_t span = 1;
		uint8_t pick[GIO_KV_DIMS];
		for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
			pick[d] = fz_u8(&r);
		for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
			pad[d] = fz_u8(&r) % 4u;
		for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
			if (!gio__kv_by_base(&pool, d))
				left[nleft++] = d;
		for (uint32_t k = 0; nleft; k++) {
			const uint32_t at = pick[k] % nleft, d = left[at];
			left[at] = left[--nleft];
			pool.stride[d] = span + pad[d];
			span = pool.stride[d] * pool.extent[d];
		}
	}
	nbases = (uint32_t)gio__kv_nbases(&pool);
	pool.base = fz_u32(&r);
	if (nbases) {
		/* Each base after the span of the one before (and a gap), or as read. */
		uint64_t span = 1;
		for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
			span += (uint64_t)(pool.extent[d] - 1u) * pool.stride[d];
		span *= pool.elem_bytes;
		for (uint32_t i = 0; i < nbases; i++) {
			const uint32_t v = fz_u32(&r);
			bases[i] = mode & 8u ? v : i ? bases[i - 1] + span + v % 64u : pool.base;
		}
		pool.bases = bases;
		pool.base = 0;
	}

	rc = gio_kv_pool_check(&pool, &f);
	if (made)
		FZ_CHECK(rc == 0, "a pool made by an order of its dimensions and bases apart refused: fault %u (%s, %s)",
			 f.code, gio_kv_dim_name(f.dim_a), gio_kv_dim_name(f.dim_b));
	if (rc) {
		FZ_CHECK(rc == -EINVAL && f.code != GIO_KV_FAULT_NONE, "check: %d with fault %u", rc, f.code);
		return 0;
	}
	FZ_CHECK(f.code == GIO_KV_FAULT_NONE, "an accepted pool with fault %u", f.code);

	/* The model: every element's address, with its object and the base it hangs from. */
	for (uint32_t l = 0; l < pool.extent[GIO_KV_LAYER]; l++)
		for (uint32_t b = 0; b < pool.extent[GIO_KV_BLOCK]; b++)
			for (uint32_t p = 0; p < pool.extent[GIO_KV_PART]; p++)
				for (uint32_t n = 0; n < pool.extent[GIO_KV_TOKEN]; n++)
					for (uint32_t h = 0; h < pool.extent[GIO_KV_HEAD]; h++)
						for (uint32_t c = 0; c < pool.extent[GIO_KV_CHANNEL]; c++) {
							const uint32_t idx[GIO_KV_DIMS] = {l, b, p, n, h, c};
							uint64_t off = 0, base;
							for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
								off += (uint64_t)idx[d] * pool.stride[d];
							base = pool.base_mode == GIO_KV_BASE_ONE     ? pool.base
							       : pool.base_mode == GIO_KV_BASE_LAYER ? bases[l]
												     : bases[l * pool.extent[GIO_KV_PART] + p];
							g_el[nel].addr = base + off * pool.elem_bytes;
							g_el[nel].object = l * pool.extent[GIO_KV_BLOCK] + b;
							g_el[nel].group = pool.base_mode == GIO_KV_BASE_LAYER_PART ? p : 0;
							nel++;
						}
	qsort(g_el, nel, sizeof(g_el[0]), by_addr);
	for (uint32_t i = 1; i < nel; i++)
		FZ_CHECK(g_el[i].addr - g_el[i - 1].addr >= pool.elem_bytes,
			 "an accepted pool has elements at 0x%llx and 0x%llx (%u bytes each)",
			 (unsigned long long)g_el[i - 1].addr, (unsigned long long)g_el[i].addr, pool.elem_bytes);

	FZ_CHECK(gio_kv_pool_runs(&pool, &runs) == 0, "runs of an accepted pool refused");
	{
		const uint64_t per = (uint64_t)nel / (pool.extent[GIO_KV_LAYER] * pool.extent[GIO_KV_BLOCK]);
		FZ_CHECK(runs.object_bytes == per * pool.elem_bytes && runs.object_bytes == gio_kv_pool_object_bytes(&pool),
			 "object bytes %llu for %llu elements", (unsigned long long)runs.object_bytes, (unsigned long long)per);
		FZ_CHECK(runs.nruns >= 1 && runs.nruns <= per && (uint64_t)runs.nruns * runs.run_bytes == runs.object_bytes,
			 "%u runs of %llu bytes for an object of %llu", runs.nruns, (unsigned long long)runs.run_bytes,
			 (unsigned long long)runs.object_bytes);
	}

	/* Every object's ranges against the model's device order. */
	qsort(g_el, nel, sizeof(g_el[0]), by_object_order);
	{
		const uint32_t per = nel / (pool.extent[GIO_KV_LAYER] * pool.extent[GIO_KV_BLOCK]);
		struct gio_range guard = {0xdeadbeefull, 0x5a5a};
		for (uint32_t l = 0; l < pool.extent[GIO_KV_LAYER]; l++)
			for (uint32_t b = 0; b < pool.extent[GIO_KV_BLOCK]; b++) {
				const struct elem *e = &g_el[(l * pool.extent[GIO_KV_BLOCK] + b) * per];
				uint32_t k = 0;
				int nr = gio_kv_object_ranges(&pool, &runs, l, b, rng, MAX_ELEMS + 1);
				FZ_CHECK(nr == (int)runs.nruns, "object (%u, %u): %d ranges, %u runs", l, b, nr, runs.nruns);
				for (int i = 0; i < nr; i++) {
					FZ_CHECK(rng[i].len == runs.run_bytes && rng[i].len % pool.elem_bytes == 0,
						 "object (%u, %u) range %d: %u bytes", l, b, i, rng[i].len);
					for (uint64_t o = 0; o < rng[i].len; o += pool.elem_bytes, k++)
						FZ_CHECK(k < per && rng[i].addr + o == e[k].addr,
							 "object (%u, %u): byte %llu of range %d at 0x%llx, the model's element %u at 0x%llx",
							 l, b, (unsigned long long)o, i, (unsigned long long)(rng[i].addr + o), k,
							 (unsigned long long)(k < per ? e[k].addr : 0));
				}
				FZ_CHECK(k == per, "object (%u, %u): ranges of %u elements, %u in it", l, b, k, per);
				rng[0] = guard;
				FZ_CHECK(runs.nruns < 2 || gio_kv_object_ranges(&pool, &runs, l, b, rng, runs.nruns - 1) == -ENOSPC,
					 "a short array not refused");
				FZ_CHECK(!memcmp(&rng[0], &guard, sizeof(guard)), "a refused object_ranges wrote its array");
			}
		FZ_CHECK(gio_kv_object_ranges(&pool, &runs, pool.extent[GIO_KV_LAYER], 0, rng, MAX_ELEMS + 1) == -EINVAL &&
				 gio_kv_object_ranges(&pool, &runs, 0, pool.extent[GIO_KV_BLOCK], rng, MAX_ELEMS + 1) == -EINVAL,
			 "a layer or block out of range not refused");

		/* A block's layers in one range where they are contiguous. */
		for (uint32_t b = 0; b < pool.extent[GIO_KV_BLOCK]; b++) {
			struct gio_range one;
			rc = gio_kv_block_range(&pool, &runs, b, 0, pool.extent[GIO_KV_LAYER], &one);
			if (!runs.layers_contiguous) {
				FZ_CHECK(rc == -EOPNOTSUPP, "block_range without contiguous layers: %d", rc);
				continue;
			}
			FZ_CHECK(rc == 0 && one.len == runs.object_bytes * pool.extent[GIO_KV_LAYER],
				 "block %u: block_range %d, %u bytes", b, rc, one.len);
			for (uint32_t l = 0; l < pool.extent[GIO_KV_LAYER]; l++) {
				const struct elem *e = &g_el[(l * pool.extent[GIO_KV_BLOCK] + b) * per];
				for (uint32_t k = 0; k < per; k++)
					FZ_CHECK(one.addr + l * runs.object_bytes + (uint64_t)k * pool.elem_bytes == e[k].addr,
						 "block %u layer %u element %u: the range says 0x%llx, the model 0x%llx", b, l, k,
						 (unsigned long long)(one.addr + l * runs.object_bytes + (uint64_t)k * pool.elem_bytes),
						 (unsigned long long)e[k].addr);
			}
		}
	}
	check_tables(&pool, &runs, mode >> 7);
	return 0;
}
