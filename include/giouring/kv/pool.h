/**
 * @file giouring/kv/pool.h
 * @brief KV pools described by strides: the byte runs of each storage object, whatever the
 *        engine's layout, and the SGL table entries that move them in one command.
 *
 * Engines change their KV layout often (K and V apart or interleaved, heads before or after
 * tokens, one tensor per layer or one buffer for all layers), so a pool is never assumed to have
 * a shape: it is described by six logical dimensions (enum gio_kv_dim) with an extent and a
 * stride each. Element (l, b, p, n, h, c) lives at
 *
 *     base(l, p) + elem_bytes * (l*s_layer + b*s_block + p*s_part + n*s_token + h*s_head + c*s_channel)
 *
 * with strides in elements, as torch reports them. base(l, p) is gio_kv_pool::base for all
 * (gio_kv_pool::base_mode GIO_KV_BASE_ONE), one base per layer (GIO_KV_BASE_LAYER: a tensor per
 * layer; s_layer must then be 0) or one per layer and part (GIO_KV_BASE_LAYER_PART: separate K
 * and V buffers per layer; s_layer and s_part must then be 0). Addresses are opaque 64-bit
 * numbers: virtual addresses, or the bus addresses (IOVAs) of the bases when a table for the
 * controller is built.
 *
 * The storage **object** is one (layer, block): all its parts, tokens, heads and channels. In
 * memory it is a set of equal contiguous byte **runs**: gio_kv_pool_runs() merges the object's
 * dimensions from the smallest stride up while each is contiguous with those inside it; the
 * others, the outer dimensions, number the runs. Runs are enumerated in a canonical order, the
 * outer dimensions by decreasing stride (a part addressed by its own base outermost), so an
 * object's runs lie in increasing address order within each base. On the device an object is its
 * runs concatenated in that order: its elements sorted by the dimensions' strides, which
 * gio_kv_pool_signature() summarises so that a store refuses a layout of another byte order.
 *
 * Objects are numbered `layer * blocks + block` (the index of the P2P table's entry).
 */
#ifndef GIOURING_KV_POOL_H
#define GIOURING_KV_POOL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../config.h"
#include "../nvme/sgl.h"
#include "../proto/dptr.h"
#include "../proto/prep.h"
#include "../proto/prp_build.h"
#include "../proto/sgl_build.h"

GIO_EXTERN_C_BEGIN

/** @brief The logical dimensions of a KV pool, indexes of gio_kv_pool::extent and gio_kv_pool::stride. */
enum gio_kv_dim {
	GIO_KV_LAYER = 0,   /**< Transformer layer. */
	GIO_KV_BLOCK = 1,   /**< Block (page) of the paged pool. */
	GIO_KV_PART = 2,    /**< K or V: extent 2, or 1 for caches without a K/V split (MLA latents). */
	GIO_KV_TOKEN = 3,   /**< Token within the block. */
	GIO_KV_HEAD = 4,    /**< KV head. */
	GIO_KV_CHANNEL = 5, /**< Element within the head (head dim). */
	GIO_KV_DIMS = 6     /**< Number of dimensions. */
};

/** @brief How gio_kv_pool finds the base address of a layer (and part). */
enum gio_kv_base_mode {
	GIO_KV_BASE_ONE = 0,       /**< One base for all: gio_kv_pool::base, layers by their stride. */
	GIO_KV_BASE_LAYER = 1,     /**< gio_kv_pool::bases[layer]; the layer stride must be 0. */
	GIO_KV_BASE_LAYER_PART = 2 /**< gio_kv_pool::bases[layer * parts + part]; the layer and part
				        strides must be 0. */
};

/** @brief A KV pool: element size, extents and strides of the six dimensions, and its bases.
 *  Plain data, passed to the GPU by value; gio_kv_pool::bases must be readable where the
 *  functions below run. */
struct gio_kv_pool {
	uint64_t base;            /**< The base address, GIO_KV_BASE_ONE only. */
	const uint64_t *bases;    /**< The table of bases of the other modes; NULL with GIO_KV_BASE_ONE. */
	uint32_t base_mode;       /**< enum gio_kv_base_mode. */
	uint32_t elem_bytes;      /**< Bytes per element: 1, 2, 4, 8 or 16. */
	uint32_t extent[GIO_KV_DIMS]; /**< Extent of each dimension, at least 1. */
	uint64_t stride[GIO_KV_DIMS]; /**< Stride of each dimension in elements; ignored where the
				           extent is 1. */
};

/** @name gio_kv_pool_fault::code values
 * @{ */
#define GIO_KV_FAULT_NONE 0u         /**< The pool is valid. */
#define GIO_KV_FAULT_ELEM_BYTES 1u   /**< elem_bytes is not 1, 2, 4, 8 or 16. */
#define GIO_KV_FAULT_EXTENT 2u       /**< dim_a has extent 0. */
#define GIO_KV_FAULT_BASES 3u        /**< base_mode is unknown, or bases is NULL where the mode
					  needs a table, or set where it does not. */
#define GIO_KV_FAULT_BASE_STRIDE 4u  /**< dim_a is addressed by the table of bases, but its stride is not 0. */
#define GIO_KV_FAULT_OVERFLOW 5u     /**< The pool's span does not fit 64 bits: the term of dim_a,
					  or (dim_a GIO_KV_DIMS) its end past the base of
					  (layer_a, part_a). */
#define GIO_KV_FAULT_OVERLAP 6u      /**< dim_a's stride is shorter than the span of the dimensions
					  inside it, the largest of which is dim_b (dim_b == dim_a: a
					  stride of 0 with an extent above 1). */
#define GIO_KV_FAULT_BASE_OVERLAP 7u /**< The spans from the bases of (layer_a, part_a) and
					  (layer_b, part_b) overlap. */
/** @} */

/** @brief What gio_kv_pool_check() found wrong, for a message that names it. */
struct gio_kv_pool_fault {
	uint32_t code;    /**< GIO_KV_FAULT_*. */
	uint32_t dim_a;   /**< The dimension concerned (enum gio_kv_dim), else 0. */
	uint32_t dim_b;   /**< The other dimension concerned, else 0. */
	uint32_t layer_a; /**< Layer of the base concerned, else 0. */
	uint32_t layer_b; /**< Layer of the other base concerned, else 0. */
	uint32_t part_a;  /**< Part of the base concerned (GIO_KV_BASE_LAYER_PART), else 0. */
	uint32_t part_b;  /**< Part of the other base concerned, else 0. */
};

/** @brief An object's runs, as gio_kv_pool_runs() computes them from a valid pool. */
struct gio_kv_runs {
	uint64_t object_bytes;         /**< Bytes of one object: parts x tokens x heads x channels x elem_bytes. */
	uint64_t run_bytes;            /**< Bytes of each run. */
	uint32_t nruns;                /**< Runs per object. */
	uint32_t ndims;                /**< Dimensions of the object with an extent above 1, listed in order[]. */
	uint32_t nouter;               /**< The first nouter of order[] number the runs; the rest are inside a run. */
	uint32_t layers_contiguous;    /**< 1 when an object is one run and a block's layers follow each
					    other in memory in layer order (blocks-first pools with one
					    base; any pool of one layer and one run):
					    gio_kv_block_range() then moves them in one range. */
	uint32_t order[4];             /**< The object's dimensions in device byte order, outermost first. */
	uint32_t outer_extent[4];      /**< Extent of outer dimension i. */
	uint64_t outer_stride[4];      /**< Byte stride of outer dimension i; 0 for a part addressed
					    by its own base. */
};

/** @brief What the P2P table of a pool takes, as gio_kv_table_plan() computes it. */
struct gio_kv_table_sizes {
	uint64_t objects;          /**< Objects: layers x blocks. */
	uint32_t nruns;            /**< Runs per object. */
	int sgl_rc;                /**< 0 when each object is one SGL command; else why not: -EOPNOTSUPP
				        and -E2BIG as gio_kv_table_entry() returns them for every object,
				        -EINVAL where the controller wants dword granularity and some run
				        start or length is not a multiple of 4. */
	uint64_t sgl_desc_bytes;   /**< The descriptor table: 16 bytes per object. */
	uint64_t sgl_list_stride;  /**< Segment list bytes of one object: 16 per run, 0 for one run. */
	uint64_t sgl_list_bytes;   /**< The segment list area: objects x sgl_list_stride. */
	uint64_t sgl_object_bytes; /**< SGL metadata per object: 16 + sgl_list_stride. */
	uint64_t sgl_bytes;        /**< SGL metadata of the pool: sgl_desc_bytes + sgl_list_bytes. */
	int prp_rc;                /**< 0 when PRPs can move the objects; -EINVAL: the page size is not a
				        power of two >= 4096 or a command would start at an address that is
				        not dword aligned; -E2BIG: a command exceeds the transfer limit. */
	uint32_t prp_cmds;         /**< PRP commands per object: 1, or nruns where the runs' inner
				        boundaries are not all page aligned (PRPs cannot express them)
				        or the runs are more than GIO_KV_PRP_MAX_RUNS
				        (gio_kv_table_prp_cmds()). */
	uint64_t prp_pages;        /**< Most memory pages one of those commands touches. */
	uint64_t prp_list_bytes;   /**< PRP list bytes of such a command, its list starting on a page
				        boundary, chain pointers included (0 when PRP1/PRP2 suffice). */
	uint64_t prp_object_bytes; /**< PRP metadata per object: prp_cmds x (16 + prp_list_bytes). */
	uint64_t prp_bytes;        /**< PRP metadata of the pool: objects x prp_object_bytes. */
};

/**
 * @brief Name of a dimension, for messages.
 * @param dim  an enum gio_kv_dim value.
 * @return "layer", "block", "part", "token", "head" or "channel"; "?" for anything else.
 *
 * Pure; any thread, host or device.
 */
GIO_HD const char *gio_kv_dim_name(uint32_t dim)
{
	switch (dim) { /* no table: a static array would need a device copy of its own */
	case GIO_KV_LAYER:
		return "layer";
	case GIO_KV_BLOCK:
		return "block";
	case GIO_KV_PART:
		return "part";
	case GIO_KV_TOKEN:
		return "token";
	case GIO_KV_HEAD:
		return "head";
	case GIO_KV_CHANNEL:
		return "channel";
	default:
		return "?";
	}
}

/* a * b into *out; 1 when it does not fit 64 bits. */
GIO_HD int gio__kv_mul(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a != 0 && b > UINT64_MAX / a)
		return 1;
	*out = a * b;
	return 0;
}

/* Whether dimension d is addressed by the table of bases rather than by its stride. */
GIO_HD int gio__kv_by_base(const struct gio_kv_pool *pool, uint32_t d)
{
	return (d == GIO_KV_LAYER && pool->base_mode != GIO_KV_BASE_ONE) ||
	       (d == GIO_KV_PART && pool->base_mode == GIO_KV_BASE_LAYER_PART);
}

/* Entries of the table of bases (0 for GIO_KV_BASE_ONE). */
GIO_HD uint64_t gio__kv_nbases(const struct gio_kv_pool *pool)
{
	if (pool->base_mode == GIO_KV_BASE_LAYER)
		return pool->extent[GIO_KV_LAYER];
	if (pool->base_mode == GIO_KV_BASE_LAYER_PART)
		return (uint64_t)pool->extent[GIO_KV_LAYER] * pool->extent[GIO_KV_PART];
	return 0;
}

/* Base entry i of the table, or the one base. Entry i is (layer i / parts, part i % parts). */
GIO_HD uint64_t gio__kv_base_entry(const struct gio_kv_pool *pool, uint64_t i)
{
	return pool->base_mode == GIO_KV_BASE_ONE ? pool->base : pool->bases[i];
}

GIO_HD void gio__kv_fault_base(const struct gio_kv_pool *pool, uint64_t i, uint32_t *layer, uint32_t *part)
{
	const uint64_t parts = pool->base_mode == GIO_KV_BASE_LAYER_PART ? pool->extent[GIO_KV_PART] : 1;
	*layer = (uint32_t)(i / parts);
	*part = (uint32_t)(i % parts);
}

/* The dimensions from `first` on that strides address with an extent above 1, by increasing
 * stride (ties by dimension, so that the order is fixed). Returns how many. */
GIO_HD uint32_t gio__kv_sorted_dims(const struct gio_kv_pool *pool, uint32_t first, uint32_t *dims)
{
	uint32_t d, n = 0, i;
	for (d = first; d < GIO_KV_DIMS; d++) {
		if (pool->extent[d] <= 1 || gio__kv_by_base(pool, d))
			continue;
		for (i = n; i > 0 && pool->stride[dims[i - 1]] > pool->stride[d]; i--)
			dims[i] = dims[i - 1];
		dims[i] = d;
		n++;
	}
	return n;
}

GIO_HD int gio__kv_fail(struct gio_kv_pool_fault *f, uint32_t code, uint32_t dim_a, uint32_t dim_b)
{
	if (f) {
		f->code = code;
		f->dim_a = dim_a;
		f->dim_b = dim_b;
	}
	return -EINVAL;
}

/* The rules on elem_bytes, extents and bases that need no arithmetic. */
GIO_HD int gio__kv_check_form(const struct gio_kv_pool *pool, struct gio_kv_pool_fault *f)
{
	const uint32_t e = pool->elem_bytes;
	uint32_t d;
	if (e == 0 || e > 16 || (e & (e - 1)))
		return gio__kv_fail(f, GIO_KV_FAULT_ELEM_BYTES, 0, 0);
	for (d = 0; d < GIO_KV_DIMS; d++)
		if (pool->extent[d] == 0)
			return gio__kv_fail(f, GIO_KV_FAULT_EXTENT, d, d);
	if (pool->base_mode > GIO_KV_BASE_LAYER_PART || (pool->bases == NULL) != (pool->base_mode == GIO_KV_BASE_ONE))
		return gio__kv_fail(f, GIO_KV_FAULT_BASES, 0, 0);
	for (d = 0; d < GIO_KV_DIMS; d++)
		if (gio__kv_by_base(pool, d) && pool->stride[d] != 0)
			return gio__kv_fail(f, GIO_KV_FAULT_BASE_STRIDE, d, d);
	return 0;
}

/* Bytes from a base to the end of the last element it reaches, in *span. */
GIO_HD int gio__kv_check_span(const struct gio_kv_pool *pool, uint64_t *span, struct gio_kv_pool_fault *f)
{
	uint64_t elems = 1, term;
	uint32_t d;
	for (d = 0; d < GIO_KV_DIMS; d++) {
		if (gio__kv_mul(pool->extent[d] - 1u, pool->stride[d], &term) || elems + term < elems)
			return gio__kv_fail(f, GIO_KV_FAULT_OVERFLOW, d, d);
		elems += term;
	}
	if (gio__kv_mul(elems, pool->elem_bytes, span))
		return gio__kv_fail(f, GIO_KV_FAULT_OVERFLOW, GIO_KV_DIMS, GIO_KV_DIMS);
	return 0;
}

/* Every strided dimension's stride reaches past all the dimensions inside it (sufficient for
 * no two index tuples to share a byte). */
GIO_HD int gio__kv_check_overlap(const struct gio_kv_pool *pool, struct gio_kv_pool_fault *f)
{
	uint32_t dims[GIO_KV_DIMS], i;
	const uint32_t n = gio__kv_sorted_dims(pool, 0, dims);
	uint64_t inner = 1; /* elements spanned by dims[0..i-1]; fits: the span was checked */
	for (i = 0; i < n; i++) {
		const uint32_t d = dims[i];
		if (pool->stride[d] < inner)
			return gio__kv_fail(f, GIO_KV_FAULT_OVERLAP, d, i ? dims[i - 1] : d);
		inner += (uint64_t)(pool->extent[d] - 1u) * pool->stride[d];
	}
	return 0;
}

/* Every base's span fits below 2^64, and no two bases' spans overlap. */
GIO_HD int gio__kv_check_bases(const struct gio_kv_pool *pool, uint64_t span, struct gio_kv_pool_fault *f)
{
	const uint64_t n = pool->base_mode == GIO_KV_BASE_ONE ? 1 : gio__kv_nbases(pool);
	uint64_t i, j;
	for (i = 0; i < n; i++) {
		const uint64_t bi = gio__kv_base_entry(pool, i);
		if (span - 1 > UINT64_MAX - bi) {
			if (f)
				gio__kv_fault_base(pool, i, &f->layer_a, &f->part_a);
			return gio__kv_fail(f, GIO_KV_FAULT_OVERFLOW, GIO_KV_DIMS, GIO_KV_DIMS);
		}
		for (j = 0; j < i; j++) {
			const uint64_t bj = gio__kv_base_entry(pool, j);
			if (bi <= bj + (span - 1) && bj <= bi + (span - 1)) {
				if (f) {
					gio__kv_fault_base(pool, j, &f->layer_a, &f->part_a);
					gio__kv_fault_base(pool, i, &f->layer_b, &f->part_b);
				}
				return gio__kv_fail(f, GIO_KV_FAULT_BASE_OVERLAP, GIO_KV_LAYER, GIO_KV_LAYER);
			}
		}
	}
	return 0;
}

/**
 * @brief Checks that a pool description is valid and that no two elements share a byte.
 * @param pool   the pool.
 * @param fault  receives what was wrong (GIO_KV_FAULT_NONE when nothing), for a message naming
 *               the dimensions (gio_kv_dim_name()) or the layers; may be NULL.
 * @return 0, or `-EINVAL` when:
 *   - elem_bytes is not 1, 2, 4, 8 or 16 (the element sizes of torch's dtypes; describe
 *     anything else in bytes, elem_bytes 1);
 *   - an extent is 0;
 *   - base_mode is unknown, or bases is NULL with a table mode or set with GIO_KV_BASE_ONE;
 *   - a dimension addressed by the table of bases (the layer; the part with
 *     GIO_KV_BASE_LAYER_PART) has a stride other than 0;
 *   - the span of a base (from it to the end of the last element it reaches) or its end does
 *     not fit 64 bits;
 *   - two dimensions may reach the same byte: sorted by stride, a dimension's stride must be at
 *     least the span of all those inside it (a sufficient test: a layout whose dimensions
 *     interleave without aliasing is refused too);
 *   - two entries of the table of bases have overlapping spans.
 *
 * Pure; any thread, host or device. With a table of bases, quadratic in its entries (it runs
 * once, where the pool is registered).
 */
GIO_HD int gio_kv_pool_check(const struct gio_kv_pool *pool, struct gio_kv_pool_fault *fault)
{
	uint64_t span;
	int rc;
	if (fault) {
		const struct gio_kv_pool_fault none = {GIO_KV_FAULT_NONE, 0, 0, 0, 0, 0, 0};
		*fault = none;
	}
	rc = gio__kv_check_form(pool, fault);
	if (rc == 0)
		rc = gio__kv_check_span(pool, &span, fault);
	if (rc == 0)
		rc = gio__kv_check_overlap(pool, fault);
	if (rc == 0)
		rc = gio__kv_check_bases(pool, span, fault);
	return rc;
}

/**
 * @brief Bytes of one storage object (one layer of one block).
 * @param pool  the pool.
 * @return parts x tokens x heads x channels x elem_bytes (it fits 64 bits for a pool that
 *         gio_kv_pool_check() accepts).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_pool_object_bytes(const struct gio_kv_pool *pool)
{
	return (uint64_t)pool->extent[GIO_KV_PART] * pool->extent[GIO_KV_TOKEN] * pool->extent[GIO_KV_HEAD] *
	       pool->extent[GIO_KV_CHANNEL] * pool->elem_bytes;
}

/**
 * @brief Splits a pool's objects into their contiguous runs.
 * @param pool  the pool.
 * @param runs  receives the runs' shape; untouched on failure.
 * @return 0, or the errors of gio_kv_pool_check(), or `-E2BIG` when an object has more than
 *         2^32 - 1 runs.
 *
 * Pure; any thread, host or device. It checks the pool, so a gio_kv_runs exists only for a
 * valid one.
 */
GIO_HD int gio_kv_pool_runs(const struct gio_kv_pool *pool, struct gio_kv_runs *runs)
{
	struct gio_kv_runs s = {0, 0, 0, 0, 0, 0, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
	uint32_t dims[GIO_KV_DIMS], n, k, i;
	uint64_t nruns = 1;
	int rc = gio_kv_pool_check(pool, NULL);

	if (rc)
		return rc;
	n = gio__kv_sorted_dims(pool, GIO_KV_PART, dims);
	s.run_bytes = pool->elem_bytes;
	for (k = 0; k < n && pool->stride[dims[k]] * pool->elem_bytes == s.run_bytes; k++)
		s.run_bytes *= pool->extent[dims[k]];
	s.ndims = 0;
	if (gio__kv_by_base(pool, GIO_KV_PART) && pool->extent[GIO_KV_PART] > 1) {
		s.order[0] = GIO_KV_PART; /* K, then V: their buffers have no order of their own */
		s.outer_extent[0] = pool->extent[GIO_KV_PART];
		s.outer_stride[0] = 0;
		s.ndims = 1;
		nruns = pool->extent[GIO_KV_PART];
	}
	for (i = n; i > k; i--, s.ndims++) { /* the outer dimensions, largest stride first */
		s.order[s.ndims] = dims[i - 1];
		s.outer_extent[s.ndims] = pool->extent[dims[i - 1]];
		s.outer_stride[s.ndims] = pool->stride[dims[i - 1]] * pool->elem_bytes;
		nruns *= pool->extent[dims[i - 1]];
	}
	s.nouter = s.ndims;
	for (i = k; i > 0; i--)
		s.order[s.ndims++] = dims[i - 1];
	if (nruns > UINT32_MAX)
		return -E2BIG;
	s.nruns = (uint32_t)nruns;
	s.object_bytes = gio_kv_pool_object_bytes(pool);
	/* Tables of bases have a layer stride of 0: their layers are never found contiguous. */
	s.layers_contiguous = s.nruns == 1 && (pool->extent[GIO_KV_LAYER] == 1 ||
					       pool->stride[GIO_KV_LAYER] * pool->elem_bytes == s.object_bytes);
	*runs = s;
	return 0;
}

/**
 * @brief Address of run @p r of object (@p layer, @p block).
 * @param pool   a pool that gio_kv_pool_runs() accepted.
 * @param runs   its runs.
 * @param layer  layer, below the layer extent (not checked: the fast path).
 * @param block  block, below the block extent (not checked).
 * @param r      run, below runs->nruns (not checked).
 * @return the run's first byte address; its length is runs->run_bytes.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_run_addr(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint32_t layer,
				uint32_t block, uint32_t r)
{
	uint64_t off = (uint64_t)block * pool->stride[GIO_KV_BLOCK] * pool->elem_bytes;
	uint32_t part = 0, i;
	for (i = runs->nouter; i-- > 0;) { /* the innermost outer dimension is the fastest digit */
		const uint32_t digit = r % runs->outer_extent[i];
		r /= runs->outer_extent[i];
		if (runs->order[i] == GIO_KV_PART)
			part = digit;
		off += digit * runs->outer_stride[i];
	}
	if (pool->base_mode == GIO_KV_BASE_ONE)
		return pool->base + (uint64_t)layer * pool->stride[GIO_KV_LAYER] * pool->elem_bytes + off;
	if (pool->base_mode == GIO_KV_BASE_LAYER)
		return pool->bases[layer] + off;
	return pool->bases[(uint64_t)layer * pool->extent[GIO_KV_PART] + part] + off;
}

/**
 * @brief The ranges of object (@p layer, @p block), in canonical (device) order.
 * @param pool   a pool that gio_kv_pool_runs() accepted.
 * @param runs   its runs.
 * @param layer  layer.
 * @param block  block.
 * @param out    receives runs->nruns ranges of runs->run_bytes each.
 * @param cap    entries available at @p out.
 * @return the number of ranges written (runs->nruns), or
 *   - `-EINVAL`: @p layer or @p block is beyond its extent;
 *   - `-E2BIG`: a run is longer than a range can say (2^32 - 1 bytes), or the runs are more than
 *     the int returned can count (2^31 - 1);
 *   - `-ENOSPC`: @p cap is below runs->nruns.
 *   Nothing is written on error.
 *
 * Pure; any thread, host or device. The ranges go to gio_sgl_build() or gio_prp_build() as they are.
 */
GIO_HD int gio_kv_object_ranges(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint32_t layer,
				uint32_t block, struct gio_range *out, uint32_t cap)
{
	uint32_t r;
	if (layer >= pool->extent[GIO_KV_LAYER] || block >= pool->extent[GIO_KV_BLOCK])
		return -EINVAL;
	if (runs->run_bytes > UINT32_MAX || runs->nruns > INT32_MAX)
		return -E2BIG;
	if (cap < runs->nruns)
		return -ENOSPC;
	for (r = 0; r < runs->nruns; r++) {
		out[r].addr = gio_kv_run_addr(pool, runs, layer, block, r);
		out[r].len = (uint32_t)runs->run_bytes;
	}
	return (int)runs->nruns;
}

/**
 * @brief The one range that holds layers @p first_layer to @p first_layer + @p nlayers - 1 of
 *        @p block, in layer order, where a block's layers are contiguous.
 * @param pool         a pool that gio_kv_pool_runs() accepted.
 * @param runs         its runs.
 * @param block        block.
 * @param first_layer  first layer.
 * @param nlayers      layers, at least 1.
 * @param out          receives the range: the objects back to back, as their own commands
 *                     would place them on the device.
 * @return 0, or
 *   - `-EOPNOTSUPP`: runs->layers_contiguous is 0 (move the objects one by one);
 *   - `-EINVAL`: @p block or a layer is beyond its extent, or @p nlayers is 0;
 *   - `-E2BIG`: the range is longer than 2^32 - 1 bytes.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_block_range(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint32_t block,
			      uint32_t first_layer, uint32_t nlayers, struct gio_range *out)
{
	const uint64_t bytes = (uint64_t)nlayers * runs->object_bytes; /* fits: the pool's span does */
	if (!runs->layers_contiguous)
		return -EOPNOTSUPP;
	if (block >= pool->extent[GIO_KV_BLOCK] || nlayers == 0 || first_layer >= pool->extent[GIO_KV_LAYER] ||
	    nlayers > pool->extent[GIO_KV_LAYER] - first_layer)
		return -EINVAL;
	if (bytes > UINT32_MAX)
		return -E2BIG;
	out->addr = gio_kv_run_addr(pool, runs, first_layer, block, 0);
	out->len = (uint32_t)bytes;
	return 0;
}

/* splitmix64's finaliser over h ^ v: every input bit reaches every output bit. */
GIO_HD uint64_t gio__kv_mix(uint64_t h, uint64_t v)
{
	uint64_t z = h ^ v;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/**
 * @brief A 64-bit value identifying the device byte order of a pool's objects.
 * @param pool  a pool that gio_kv_pool_runs() accepted.
 * @param runs  its runs.
 * @return a hash of elem_bytes, the extents of part, token, head and channel, and the order of
 *         the object's dimensions (runs->order). Pools whose objects are laid out alike on the
 *         device (whatever their runs, bases, layer and block strides) get the same value;
 *         a store written through one layout refuses to be read through a layout of another.
 *
 * Pure; any thread, host or device. The function is part of the on-device format: it never
 * changes for a given leading tag (the first word hashed, "giokvsg1").
 */
GIO_HD uint64_t gio_kv_pool_signature(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs)
{
	uint64_t h = gio__kv_mix(0, 0x67696f6b76736731ull), order = 0;
	uint32_t d, i;
	h = gio__kv_mix(h, pool->elem_bytes);
	for (d = GIO_KV_PART; d < GIO_KV_DIMS; d++)
		h = gio__kv_mix(h, pool->extent[d]);
	for (i = 0; i < runs->ndims; i++) /* 4 bits a dimension, 0 for none */
		order = order << 4 | (runs->order[i] + 1u);
	return gio__kv_mix(h, order);
}

/* Lowest set bit of x, the largest power of two dividing it (2^63 for 0: no constraint). */
GIO_HD uint64_t gio__kv_align_of(uint64_t x)
{
	return x ? x & (~x + 1) : 1ull << 63;
}

/* The largest power of two that divides every object's first byte address, and with
 * with_outer every run's. */
GIO_HD uint64_t gio__kv_align(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, int with_outer)
{
	const uint64_t n = pool->base_mode == GIO_KV_BASE_ONE ? 1 : gio__kv_nbases(pool);
	uint64_t bits = 0, i;
	for (i = 0; i < n; i++)
		bits |= gio__kv_base_entry(pool, i);
	if (pool->base_mode == GIO_KV_BASE_ONE && pool->extent[GIO_KV_LAYER] > 1)
		bits |= pool->stride[GIO_KV_LAYER] * pool->elem_bytes;
	if (pool->extent[GIO_KV_BLOCK] > 1)
		bits |= pool->stride[GIO_KV_BLOCK] * pool->elem_bytes;
	for (i = 0; with_outer && i < runs->nouter; i++)
		bits |= runs->outer_stride[i];
	return gio__kv_align_of(bits);
}

/* Whether the caps allow one SGL command per object, whatever its addresses (those are checked
 * per object where the caps ask for dword granularity). */
GIO_HD int gio__kv_sgl_check(const struct gio_kv_runs *runs, const struct gio_dptr_caps *caps)
{
	const uint32_t support = gio_dptr_sgl_support(caps);
	if (support == GIO_SGLS_SUPPORT_NONE)
		return -EOPNOTSUPP;
	if (runs->nruns > 1 && caps->seg_max_descs != 0 && runs->nruns > caps->seg_max_descs)
		return -EOPNOTSUPP;
	if (runs->run_bytes > UINT32_MAX || (caps->max_xfer_bytes != 0 && runs->object_bytes > caps->max_xfer_bytes) ||
	    (uint64_t)runs->nruns * GIO_SGL_DESC_BYTES > 0x7fffffffull)
		return -E2BIG;
	if (support == GIO_SGLS_SUPPORT_DWORD && (runs->run_bytes & 3u))
		return -EINVAL;
	return 0;
}

/** @brief Most runs of an object gio_kv_table_entry_prp() puts in one PRP command (more: one
 * command per run). */
#define GIO_KV_PRP_MAX_RUNS 64u

/* Whether PRPs move an object in one command: one run, or every inner run boundary on a page
 * boundary (and runs few enough to chain on a builder's stack). Else one command per run. */
GIO_HD int gio__kv_prp_one_cmd(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs, uint64_t pg)
{
	return runs->nruns == 1 || (runs->nruns <= GIO_KV_PRP_MAX_RUNS && gio__kv_align(pool, runs, 1) >= pg &&
				    runs->run_bytes % pg == 0);
}

/* The PRP form: commands per object and, for each command of `bytes` starting `align`-aligned,
 * its pages and list. */
GIO_HD int gio__kv_prp_plan(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
			    const struct gio_dptr_caps *caps, struct gio_kv_table_sizes *t)
{
	const uint64_t pg = caps->page_bytes, run_align = gio__kv_align(pool, runs, 1);
	uint64_t align, bytes;
	if (pg < 4096 || (pg & (pg - 1)))
		return -EINVAL;
	if (gio__kv_prp_one_cmd(pool, runs, pg)) {
		t->prp_cmds = 1; /* every inner run boundary on a page boundary */
		align = runs->nruns == 1 ? gio__kv_align(pool, runs, 0) : run_align;
		bytes = runs->object_bytes;
	} else {
		t->prp_cmds = runs->nruns;
		align = run_align;
		bytes = runs->run_bytes;
	}
	if (align < 4)
		return -EINVAL;
	if (caps->max_xfer_bytes != 0 && bytes > caps->max_xfer_bytes)
		return -E2BIG;
	if (align > pg)
		align = pg;
	/* A command starting at byte pg - align of a page reaches furthest. */
	t->prp_pages = (pg - align + bytes + pg - 1) / pg;
	t->prp_list_bytes = gio_prp_list_bytes_at(t->prp_pages, caps->page_bytes, 0);
	t->prp_object_bytes = t->prp_cmds * (16u + t->prp_list_bytes);
	t->prp_bytes = t->objects * t->prp_object_bytes;
	return 0;
}

/**
 * @brief What the P2P table of a pool takes in either data pointer form.
 * @param pool   a pool that gio_kv_pool_runs() accepted.
 * @param runs   its runs.
 * @param caps   the controller's rules.
 * @param sizes  receives the figures (the fields of a form are 0 where its rc is not 0).
 * @return 0. Whether each form is usable is in sizes->sgl_rc and sizes->prp_rc.
 *
 * Pure; any thread, host or device. SGL form: a table of one 16-byte descriptor per object
 * (gio_kv_table_entry()), and for objects of several runs a segment list area of 16 bytes per
 * run per object. PRP form: PRP1 and PRP2 (16 bytes) and a list per command, one command per
 * object where every run but the first starts on a page boundary and every run but the last ends
 * on one, else one per run. The PRP figures are bounds from the pool's alignment (the largest
 * power of two dividing its bases and strides): where objects start page aligned they are exact.
 * Commands per run also need runs of whole logical blocks, which the store checks.
 */
GIO_HD int gio_kv_table_plan(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
			     const struct gio_dptr_caps *caps, struct gio_kv_table_sizes *sizes)
{
	struct gio_kv_table_sizes t = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	t.objects = (uint64_t)pool->extent[GIO_KV_LAYER] * pool->extent[GIO_KV_BLOCK];
	t.nruns = runs->nruns;
	t.sgl_rc = gio__kv_sgl_check(runs, caps);
	if (t.sgl_rc == 0 && gio_dptr_sgl_support(caps) == GIO_SGLS_SUPPORT_DWORD &&
	    gio__kv_align(pool, runs, 1) < 4)
		t.sgl_rc = -EINVAL;
	if (t.sgl_rc == 0) {
		t.sgl_desc_bytes = t.objects * GIO_SGL_DESC_BYTES;
		t.sgl_list_stride = runs->nruns > 1 ? (uint64_t)runs->nruns * GIO_SGL_DESC_BYTES : 0;
		t.sgl_list_bytes = t.objects * t.sgl_list_stride;
		t.sgl_object_bytes = GIO_SGL_DESC_BYTES + t.sgl_list_stride;
		t.sgl_bytes = t.sgl_desc_bytes + t.sgl_list_bytes;
	}
	t.prp_rc = gio__kv_prp_plan(pool, runs, caps, &t);
	if (t.prp_rc) {
		t.prp_cmds = 0;
		t.prp_pages = 0;
		t.prp_list_bytes = 0;
		t.prp_object_bytes = 0;
		t.prp_bytes = 0;
	}
	*sizes = t;
	return 0;
}

/**
 * @brief Writes the SGL table entry of one object: the descriptor its command's DPTR takes.
 * @param pool           a pool that gio_kv_pool_runs() accepted.
 * @param runs           its runs.
 * @param caps           the controller's rules.
 * @param object         the object, `layer * blocks + block`.
 * @param seg_area_addr  bus address of the segment list area, 8-byte aligned; object i's list of
 *                       runs->nruns Data Block descriptors lies at `seg_area_addr + i *
 *                       gio_kv_table_sizes::sgl_list_stride`. Unused for objects of one run.
 * @param desc           receives the descriptor: a Data Block for one run, else a Last Segment
 *                       pointing to the object's list.
 * @param seg_area       CPU- or GPU-visible pointer to the segment list area (the memory at
 *                       @p seg_area_addr), of which the object's list is written; NULL allowed
 *                       for objects of one run.
 * @return 0, or
 *   - `-EOPNOTSUPP`: the controller has no SGLs, or an object's runs are more descriptors than
 *     a segment may hold (gio_dptr_caps::seg_max_descs): one command per run then;
 *   - `-E2BIG`: an object exceeds the transfer limit, or a run or the list is longer than a
 *     descriptor can say;
 *   - `-EINVAL`: @p object is beyond the pool; dword granularity (SGLS support 2) and a run whose
 *     address or length is not a multiple of 4; several runs and @p seg_area NULL,
 *     @p seg_area_addr not 8-byte aligned, or the object's list past the end of the 64-bit
 *     address space.
 *   Nothing is written on error.
 *
 * Pure; any thread, host or device: the table is built by one thread per object.
 */
GIO_HD int gio_kv_table_entry(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
			      const struct gio_dptr_caps *caps, uint64_t object, uint64_t seg_area_addr,
			      struct gio_sgl_desc *desc, struct gio_sgl_desc *seg_area)
{
	const uint32_t blocks = pool->extent[GIO_KV_BLOCK];
	const uint64_t stride = (uint64_t)runs->nruns * GIO_SGL_DESC_BYTES;
	uint64_t list_off = 0;
	uint32_t layer, block, r;
	int rc = gio__kv_sgl_check(runs, caps);

	if (rc)
		return rc;
	if (object >= (uint64_t)pool->extent[GIO_KV_LAYER] * blocks)
		return -EINVAL;
	layer = (uint32_t)(object / blocks);
	block = (uint32_t)(object % blocks);
	if (gio_dptr_sgl_support(caps) == GIO_SGLS_SUPPORT_DWORD)
		for (r = 0; r < runs->nruns; r++)
			if (gio_kv_run_addr(pool, runs, layer, block, r) & 3u)
				return -EINVAL;
	if (runs->nruns == 1) {
		gio_sgl_set(desc, gio_kv_run_addr(pool, runs, layer, block, 0), (uint32_t)runs->run_bytes,
			    GIO_SGL_TYPE_DATA_BLOCK);
		return 0;
	}
	if (seg_area == NULL || (seg_area_addr & 7u) || gio__kv_mul(object, stride, &list_off) ||
	    list_off + (stride - 1) < list_off || list_off + (stride - 1) > UINT64_MAX - seg_area_addr)
		return -EINVAL;
	for (r = 0; r < runs->nruns; r++)
		gio_sgl_set(&seg_area[object * runs->nruns + r], gio_kv_run_addr(pool, runs, layer, block, r),
			    (uint32_t)runs->run_bytes, GIO_SGL_TYPE_DATA_BLOCK);
	gio_sgl_set(desc, seg_area_addr + list_off, (uint32_t)stride, GIO_SGL_TYPE_LAST_SEGMENT);
	return 0;
}

/**
 * @brief PRP commands per object of a pool: 1, or its runs where PRPs cannot chain them.
 * @param pool  a pool that gio_kv_pool_runs() accepted.
 * @param runs  its runs.
 * @param caps  the controller's rules (page size).
 * @return gio_kv_table_sizes::prp_cmds: 1 where the object has one run or every inner run
 *         boundary is on a page boundary, else runs->nruns.
 *
 * Pure; any thread. The PRP table has `objects x prp_cmds` entries: entry `object x prp_cmds + k`
 * is command k of the object (gio_kv_table_entry_prp()), and a device of a plan takes that many
 * commands per object (gio_kv_io_dev::cmds).
 */
GIO_HD uint32_t gio_kv_table_prp_cmds(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
				      const struct gio_dptr_caps *caps)
{
	return gio__kv_prp_one_cmd(pool, runs, caps->page_bytes) ? 1u : runs->nruns;
}

/**
 * @brief Writes one PRP table entry: the PRP1/PRP2 a command's DPTR takes, and its PRP list
 * where it touches more than two pages.
 * @param pool            a pool that gio_kv_pool_runs() accepted.
 * @param runs            its runs.
 * @param caps            the controller's rules (page size, transfer limit).
 * @param entry           the entry, `(layer * blocks + block) * cmds + k`: command k of that
 *                        object, where cmds is gio_kv_table_prp_cmds() (1: the entry is the
 *                        object's, its runs chained; else command k moves run k alone).
 * @param list_area_addr  bus address of the list area: entry i's list lies at
 *                        `list_area_addr + i * list_stride`.
 * @param list_stride     bytes of each entry's list: at least what its list needs
 *                        (gio_kv_table_sizes::prp_list_bytes; Linux's nvme driver sets aside 256
 *                        bytes for lists of up to 32 entries: gio_prp_object_alloc_bytes() with
 *                        GIO_PRP_CHUNK_LINUX); 0 where no command touches more than two pages.
 * @param dptr            receives PRP1 and PRP2.
 * @param list_area       CPU- or GPU-visible pointer to the list area; NULL allowed when no
 *                        command needs a list.
 * @return 0, or
 *   - `-EINVAL`: @p entry beyond the pool's objects x cmds, or as gio_prp_build() refuses (a
 *     list needed and @p list_area NULL, an address not dword aligned);
 *   - `-ENOSPC`: @p list_stride smaller than the entry's list; `-E2BIG`: beyond the transfer
 *     limit. Nothing is written on error.
 *
 * Pure; any thread, host or device: the table is built by one thread per entry.
 */
GIO_HD int gio_kv_table_entry_prp(const struct gio_kv_pool *pool, const struct gio_kv_runs *runs,
				  const struct gio_dptr_caps *caps, uint64_t entry, uint64_t list_area_addr,
				  uint64_t list_stride, union gio_dptr *dptr, void *list_area)
{
	const uint32_t blocks = pool->extent[GIO_KV_BLOCK];
	const uint32_t cmds = gio_kv_table_prp_cmds(pool, runs, caps);
	const uint32_t nr = cmds == 1 ? runs->nruns : 1; /* runs this entry's command moves */
	struct gio_range r[GIO_KV_PRP_MAX_RUNS];
	struct gio_sqe sqe;
	uint64_t off = 0, object;
	uint32_t i;
	int rc;
	if (entry / cmds >= (uint64_t)pool->extent[GIO_KV_LAYER] * blocks || gio__kv_mul(entry, list_stride, &off))
		return -EINVAL;
	object = entry / cmds;
	for (i = 0; i < nr; i++) {
		r[i].addr = gio_kv_run_addr(pool, runs, (uint32_t)(object / blocks), (uint32_t)(object % blocks),
					    cmds == 1 ? i : (uint32_t)(entry % cmds));
		r[i].len = (uint32_t)runs->run_bytes;
	}
	gio_prep_cmd(&sqe, GIO_NVM_OPC_READ, 1); /* a whole entry for the builder (only DPTR is kept) */
	rc = gio_prp_build(&sqe, r, nr, caps, list_area ? (gio_prp_entry *)((unsigned char *)list_area + off) : NULL,
			   list_area_addr + off, list_stride);
	if (rc < 0)
		return rc;
	*dptr = sqe.dptr;
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_KV_POOL_H */
