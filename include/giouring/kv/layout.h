/**
 * @file giouring/kv/layout.h
 * @brief KV object layout: where each (block, layer, K/V) object lives on the SSDs and in HBM.
 *
 * One **GPU file** per KV block holds 2L objects (K and V of each of L
 * layers), each a whole tensor of block_tokens x kv_heads x head_dim elements. Files are spread
 * round-robin over the devices, so every layer's reads hit every device (tensor-stripe layout).
 * On the GPU side, each layer's cache is a vLLM FlashAttention tensor
 * `[2, num_blocks, block_tokens, kv_heads, head_dim]`: K objects first, then V objects.
 */
#ifndef GIOURING_KV_LAYOUT_H
#define GIOURING_KV_LAYOUT_H

#include <errno.h>
#include <stdint.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/** @brief Shape of a model's KV cache. */
struct gio_kv_geometry {
	uint32_t layers;       /**< Transformer layers L. */
	uint32_t kv_heads;     /**< KV heads per layer. */
	uint32_t head_dim;     /**< Elements per head. */
	uint32_t dtype_bytes;  /**< Bytes per element (2 for bf16). */
	uint32_t block_tokens; /**< Tokens per KV block (page of the paged pool). */
};

/** @brief Which half of a layer's cache an object holds. */
enum gio_kv_half {
	GIO_KV_K = 0, /**< Keys. */
	GIO_KV_V = 1  /**< Values. */
};

/** @brief Where GPU files live: devices (namespaces or targets) and their block size. */
struct gio_kv_store_layout {
	uint32_t ndevices;  /**< Devices the files are striped over, round-robin by file id. */
	uint32_t lba_bytes; /**< Logical block size of every device. */
	uint64_t base_lba;  /**< First LBA of the file area on each device. */
};

/** @brief An object's place on a device. */
struct gio_kv_extent {
	uint32_t device;  /**< Index of the device, 0 to ndevices - 1. */
	uint32_t nblocks; /**< Logical blocks of the object. */
	uint64_t slba;    /**< Its first LBA. */
};

/**
 * @brief Bytes of one K or V object.
 * @param g  the geometry.
 * @return block_tokens x kv_heads x head_dim x dtype_bytes (32 KiB for Llama3-8B, block 16).
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_object_bytes(const struct gio_kv_geometry *g)
{
	return (uint64_t)g->block_tokens * g->kv_heads * g->head_dim * g->dtype_bytes;
}

/**
 * @brief Device and LBA range of object (file, layer, half).
 * @param g       the geometry.
 * @param s       the store layout.
 * @param file    GPU file id (one per KV block in the store).
 * @param layer   layer, 0 to layers - 1.
 * @param half    GIO_KV_K or GIO_KV_V.
 * @param ext     receives the extent; untouched on error.
 * @return 0, or `-EINVAL` when @p layer or @p half is out of range, a count in @p g or @p s is 0,
 *         the LBA size is not a power of two of at least 512, or the object is not a whole number
 *         of blocks or is longer than one command can move (65536 blocks).
 *
 * Pure; any thread, host or device. File f lives on device f mod ndevices, in slot
 * f / ndevices; its 2L objects follow each other in the order (layer 0 K, layer 0 V, layer 1 K ...).
 */
GIO_HD int gio_kv_object_extent(const struct gio_kv_geometry *g, const struct gio_kv_store_layout *s,
				uint64_t file, uint32_t layer, uint32_t half, struct gio_kv_extent *ext)
{
	const uint64_t obj = gio_kv_object_bytes(g);
	uint64_t blocks;
	if (obj == 0 || g->layers == 0 || layer >= g->layers || half > 1 || s->ndevices == 0 ||
	    s->lba_bytes < 512 || (s->lba_bytes & (s->lba_bytes - 1)) || obj % s->lba_bytes)
		return -EINVAL;
	blocks = obj / s->lba_bytes;
	if (blocks > 65536u)
		return -EINVAL;
	ext->device = (uint32_t)(file % s->ndevices);
	ext->nblocks = (uint32_t)blocks;
	ext->slba = s->base_lba + ((file / s->ndevices) * 2u * g->layers + 2u * layer + half) * blocks;
	return 0;
}

/**
 * @brief Address of object (pool block, half) inside one layer's paged KV tensor.
 * @param g           the geometry.
 * @param layer_base  address of the layer's tensor `[2, num_blocks, block_tokens, kv_heads, head_dim]`.
 * @param num_blocks  blocks in the pool.
 * @param block       pool block, 0 to num_blocks - 1 (not checked: the fast path).
 * @param half        GIO_KV_K or GIO_KV_V.
 * @return `layer_base + (half * num_blocks + block) * object bytes`.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_pool_addr(const struct gio_kv_geometry *g, uint64_t layer_base,
				 uint32_t num_blocks, uint32_t block, uint32_t half)
{
	return layer_base + ((uint64_t)half * num_blocks + block) * gio_kv_object_bytes(g);
}

GIO_EXTERN_C_END

#endif /* GIOURING_KV_LAYOUT_H */
