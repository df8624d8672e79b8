/**
 * @file giouring/nvme/sgl.h
 * @brief NVMe Scatter Gather List descriptors (16 bytes each).
 *
 * NVM Express Base Specification 2.0c, "Scatter Gather List (SGL)".
 * A descriptor is an address (bytes 0-7), a length (bytes 8-11), three reserved bytes
 * and the SGL Identifier in byte 15: descriptor type in bits 7:4, sub type in bits 3:0.
 *
 * - Data Block: one contiguous data buffer.
 * - Bit Bucket: on reads, discard Length bytes; the address is ignored.
 * - Segment: points to the next SGL segment (an array of descriptors; Length = its bytes), which
 *   is not the last one. It may only be the last descriptor of a segment.
 * - Last Segment: as Segment, but the segment it points to is the last and holds no Segment or
 *   Last Segment descriptor.
 */
#ifndef GIOURING_NVME_SGL_H
#define GIOURING_NVME_SGL_H

#include <stddef.h>
#include <stdint.h>

#include "../config.h"

/** @name SGL descriptor types (SGL Identifier bits 7:4)
 * @{ */
#define GIO_SGL_TYPE_DATA_BLOCK 0x0u        /**< SGL Data Block descriptor. */
#define GIO_SGL_TYPE_BIT_BUCKET 0x1u        /**< SGL Bit Bucket descriptor. */
#define GIO_SGL_TYPE_SEGMENT 0x2u           /**< SGL Segment descriptor. */
#define GIO_SGL_TYPE_LAST_SEGMENT 0x3u      /**< SGL Last Segment descriptor. */
#define GIO_SGL_TYPE_KEYED_DATA_BLOCK 0x4u  /**< Keyed SGL Data Block descriptor (fabrics). */
#define GIO_SGL_TYPE_TRANSPORT_DATA 0x5u    /**< Transport SGL Data Block descriptor (fabrics). */
#define GIO_SGL_TYPE_VENDOR 0xfu            /**< Vendor specific. */
/** @} */

/** @name SGL descriptor sub types (SGL Identifier bits 3:0)
 * @{ */
#define GIO_SGL_SUBTYPE_ADDRESS 0x0u   /**< The Address field is a memory address. */
#define GIO_SGL_SUBTYPE_OFFSET 0x1u    /**< The Address field is an offset (fabrics, CMB). */
#define GIO_SGL_SUBTYPE_TRANSPORT 0xau /**< Transport specific. */
/** @} */

/** @name SGL Identifier byte layout
 * @{ */
#define GIO_SGL_ID_TYPE_SHIFT 4 /**< Descriptor type field. */
#define GIO_SGL_ID_TYPE_MASK 0xfu
#define GIO_SGL_ID_SUBTYPE_SHIFT 0 /**< Sub type field. */
#define GIO_SGL_ID_SUBTYPE_MASK 0xfu
/** @brief SGL Identifier byte for descriptor type @p t and sub type @p s. */
#define GIO_SGL_ID(t, s) ((uint8_t)((((t) & 0xfu) << 4) | ((s) & 0xfu)))
/** @} */

/** @brief Size in bytes of one SGL descriptor. */
#define GIO_SGL_DESC_BYTES 16u

/**
 * @brief One SGL descriptor: Data Block, Bit Bucket, Segment or Last Segment.
 *
 * Keyed descriptors (fabrics only) reuse bytes 8-14 differently and are not built here.
 */
struct gio_sgl_desc {
	uint64_t addr;   /**< Bytes 0-7: address (ignored for Bit Bucket). */
	uint32_t len;    /**< Bytes 8-11: length in bytes. */
	uint8_t rsvd[3]; /**< Bytes 12-14: reserved, zero. */
	uint8_t id;      /**< Byte 15: SGL Identifier, see GIO_SGL_ID(). */
};

GIO_STATIC_ASSERT(sizeof(struct gio_sgl_desc) == 16, "SGL descriptor is 16 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_sgl_desc, addr) == 0, "SGL address at byte 0");
GIO_STATIC_ASSERT(offsetof(struct gio_sgl_desc, len) == 8, "SGL length at byte 8");
GIO_STATIC_ASSERT(offsetof(struct gio_sgl_desc, rsvd) == 12, "SGL reserved at byte 12");
GIO_STATIC_ASSERT(offsetof(struct gio_sgl_desc, id) == 15, "SGL identifier at byte 15");

#endif /* GIOURING_NVME_SGL_H */
