/**
 * @file giouring/kv/format.h
 * @brief The KV store's on-device format: superblock, index entries, data slots, and their checks.
 *
 * A store keeps fixed-size **slots** (one KV chunk each: L layer objects of object_bytes) on N
 * devices (NVMe namespaces, files, memory targets). Each device holds, in logical blocks of its
 * own size B (little-endian fields throughout):
 *
 * | region     | first LBA        | blocks                 | holds |
 * | ---------- | ---------------- | ---------------------- | ----- |
 * | superblock | 0                | ceil(4096 / B)         | struct gio_kv_sb in its first 128 bytes, zeros after |
 * | index      | index_lba        | slots                  | one struct gio_kv_entry per slot, each at the start of a block of its own |
 * | data       | data_lba         | slots x slot_blocks    | slot s at data_lba + s x slot_blocks; layer l's object at byte l x object_bytes of it |
 *
 * data_lba is index_lba + slots rounded up to GIO_KV_DATA_ALIGN bytes, so that every slot starts
 * on that boundary whenever slot_bytes is a multiple of it (the writes of large flash pages).
 *
 * One entry per block is what makes a commit safe: a single-block write is atomic on NVMe (AWUPF is
 * at least one block), and where it is not (a file on a device with smaller sectors) a torn write
 * can only damage the block being written, never another committed entry, and the entry's CRC
 * turns the torn one into a free slot. The commit protocol and the rules of a reopen are in
 * docs/store-format.md; the functions below are the pure part of both (`GIO_HD`: host or GPU).
 *
 * Errors: -EINVAL for arguments the caller got wrong (and for a valid superblock that does not fit
 * what the caller expects), -EPROTO for bytes read from a device that are not a valid
 * superblock or entry, -ENODATA for bytes that are all zero (never written), -ENOSPC for a device
 * too small for one slot. Each also stores a reason (enum gio_kv_reason) that
 * gio_kv_reason_str() names, so that the caller can say which field was wrong.
 */
#ifndef GIOURING_KV_FORMAT_H
#define GIOURING_KV_FORMAT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/** @brief Format version this header writes and the only one it reads. */
#define GIO_KV_FORMAT_VERSION 1u
/** @brief Superblock magic: the bytes "GIOKVST\0" read as a little-endian 64-bit number. */
#define GIO_KV_SB_MAGIC 0x005453564b4f4947ull
/** @brief Index entry magic: the bytes "GKVE" read as a little-endian 32-bit number. */
#define GIO_KV_ENTRY_MAGIC 0x45564b47u
/** @brief Bytes of the encoded superblock (struct gio_kv_sb); its CRC covers the 124 before it. */
#define GIO_KV_SB_BYTES 128u
/** @brief Bytes at the start of each device the superblock region spans (at least one block). */
#define GIO_KV_SB_REGION_BYTES 4096u
/** @brief Bytes of an encoded index entry (struct gio_kv_entry); its CRC covers the 76 before it. */
#define GIO_KV_ENTRY_BYTES 80u
/** @brief Smallest logical block size a store accepts. */
#define GIO_KV_BLOCK_MIN 512u
/** @brief Largest logical block size a store accepts (each entry takes a whole block). */
#define GIO_KV_BLOCK_MAX 65536u
/** @brief Alignment in bytes of the data region's start (or the block size, when larger). */
#define GIO_KV_DATA_ALIGN 65536u

/** @brief Index entry state: the slot holds nothing (gio_kv_entry::state). */
#define GIO_KV_ENTRY_FREE 0u
/** @brief Index entry state: the slot holds a completely written chunk (gio_kv_entry::state). */
#define GIO_KV_ENTRY_VALID 1u

/**
 * @brief A 128-bit number: a chunk's key (the engine's, e.g. a hash of its tokens) or a store id.
 * On the device the low half comes first.
 */
struct gio_kv_u128 {
	uint64_t lo; /**< Bits 63:0. */
	uint64_t hi; /**< Bits 127:64. */
};

/**
 * @brief The superblock: first 128 bytes of every device of a store (zeros fill the rest of
 * its region). Identical on every device but for device_index and what depends on the device's
 * own size and block size (block_bytes, slot_bytes, slots, index_lba, data_lba, store_blocks).
 */
struct gio_kv_sb {
	uint64_t magic;             /**< Bytes 0-7: GIO_KV_SB_MAGIC. */
	uint32_t version;           /**< Bytes 8-11: GIO_KV_FORMAT_VERSION. */
	uint32_t block_bytes;       /**< Bytes 12-15: logical block size B of this device, a power of two in [GIO_KV_BLOCK_MIN, GIO_KV_BLOCK_MAX]. */
	struct gio_kv_u128 store_id; /**< Bytes 16-31: random at format time, the same on every device; never zero. */
	uint32_t device_index;      /**< Bytes 32-35: this device's place d in the store, 0 to device_count - 1. */
	uint32_t device_count;      /**< Bytes 36-39: devices N of the store, at least 1. */
	uint32_t layers;            /**< Bytes 40-43: layer objects L per slot, at least 1. */
	uint32_t reserved0;         /**< Bytes 44-47: zero. */
	uint64_t object_bytes;      /**< Bytes 48-55: bytes of one layer's object, at least 1. */
	uint64_t slot_bytes;        /**< Bytes 56-63: L x object_bytes rounded up to B. */
	uint64_t pool_signature;    /**< Bytes 64-71: opaque number of the caller's (model, dtype, layout); the same on every device. */
	uint64_t slots;             /**< Bytes 72-79: slots on this device, at least 1. */
	uint64_t index_lba;         /**< Bytes 80-87: first LBA of the index region, ceil(4096 / B). */
	uint64_t data_lba;          /**< Bytes 88-95: first LBA of the data region. */
	uint64_t store_blocks;      /**< Bytes 96-103: blocks of the device, from LBA 0, the layout was computed for. */
	uint8_t reserved1[20];      /**< Bytes 104-123: zero. */
	uint32_t crc;               /**< Bytes 124-127: CRC32C of bytes 0-123. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_kv_u128) == 16, "a 128-bit number is 16 bytes");
GIO_STATIC_ASSERT(sizeof(struct gio_kv_sb) == GIO_KV_SB_BYTES, "superblock is 128 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, magic) == 0, "magic at byte 0");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, version) == 8, "version at byte 8");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, block_bytes) == 12, "block_bytes at byte 12");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, store_id) == 16, "store_id at byte 16");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, device_index) == 32, "device_index at byte 32");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, device_count) == 36, "device_count at byte 36");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, layers) == 40, "layers at byte 40");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, reserved0) == 44, "reserved0 at byte 44");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, object_bytes) == 48, "object_bytes at byte 48");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, slot_bytes) == 56, "slot_bytes at byte 56");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, pool_signature) == 64, "pool_signature at byte 64");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, slots) == 72, "slots at byte 72");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, index_lba) == 80, "index_lba at byte 80");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, data_lba) == 88, "data_lba at byte 88");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, store_blocks) == 96, "store_blocks at byte 96");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, reserved1) == 104, "reserved1 at byte 104");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_sb, crc) == 124, "crc at byte 124");

/**
 * @brief An index entry: first 80 bytes of block index_lba + slot (zeros fill the rest of it).
 *
 * A VALID entry says that the slot's data was completely written (and flushed) before the entry
 * was; a FREE entry says the slot holds nothing. Which of two VALID entries of one key is current
 * is decided by seq (docs/store-format.md, "Reopen").
 */
struct gio_kv_entry {
	uint32_t magic;              /**< Bytes 0-3: GIO_KV_ENTRY_MAGIC. */
	uint16_t version;            /**< Bytes 4-5: GIO_KV_FORMAT_VERSION. */
	uint16_t state;              /**< Bytes 6-7: GIO_KV_ENTRY_FREE or GIO_KV_ENTRY_VALID. */
	uint32_t device;             /**< Bytes 8-11: the device's gio_kv_sb::device_index. */
	uint32_t reserved0;          /**< Bytes 12-15: zero. */
	struct gio_kv_u128 store_id; /**< Bytes 16-31: the store's gio_kv_sb::store_id, so that an entry left by an earlier store on the same blocks is never taken for one of this store. */
	struct gio_kv_u128 key;      /**< Bytes 32-47: the chunk's key; zero in a FREE entry. */
	uint64_t slot;               /**< Bytes 48-55: the slot, which must equal the entry's position in the index. */
	uint64_t seq;                /**< Bytes 56-63: commit sequence, store-wide and increasing; at least 1 in a VALID entry, any value in a FREE one (0 at format time). */
	uint64_t data_len;           /**< Bytes 64-71: bytes of the slot the chunk fills, at most slot_bytes (0: not recorded, the whole slot); zero in a FREE entry. */
	uint32_t reserved1;          /**< Bytes 72-75: zero. */
	uint32_t crc;                /**< Bytes 76-79: CRC32C of bytes 0-75. */
};

GIO_STATIC_ASSERT(sizeof(struct gio_kv_entry) == GIO_KV_ENTRY_BYTES, "index entry is 80 bytes");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, magic) == 0, "magic at byte 0");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, version) == 4, "version at byte 4");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, state) == 6, "state at byte 6");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, device) == 8, "device at byte 8");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, reserved0) == 12, "reserved0 at byte 12");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, store_id) == 16, "store_id at byte 16");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, key) == 32, "key at byte 32");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, slot) == 48, "slot at byte 48");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, seq) == 56, "seq at byte 56");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, data_len) == 64, "data_len at byte 64");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, reserved1) == 72, "reserved1 at byte 72");
GIO_STATIC_ASSERT(offsetof(struct gio_kv_entry, crc) == 76, "crc at byte 76");

/**
 * @brief A device's layout, in host order: what the superblock fixes and the addressing helpers
 * use. gio_kv_layout_compute() makes one; gio_kv_sb_layout() reads one from a superblock.
 */
struct gio_kv_layout {
	uint32_t block_bytes;  /**< Logical block size B. */
	uint32_t layers;       /**< Layer objects L per slot. */
	uint64_t object_bytes; /**< Bytes of one layer's object. */
	uint64_t slot_bytes;   /**< L x object_bytes rounded up to B. */
	uint64_t slot_blocks;  /**< slot_bytes / B. */
	uint64_t slots;        /**< Slots on the device. */
	uint64_t index_lba;    /**< First LBA of the index region (entry of slot s at index_lba + s). */
	uint64_t data_lba;     /**< First LBA of the data region. */
	uint64_t store_blocks; /**< Blocks of the device the layout was computed for. */
};

/** @brief Blocks covering one layer's object inside a slot, for a read or write of it alone. */
struct gio_kv_span {
	uint64_t slba;    /**< First LBA. */
	uint64_t nblocks; /**< Blocks. */
	uint32_t head;    /**< Bytes of the first block before the object (0 when object_bytes is a multiple of B). */
	uint32_t tail;    /**< Bytes of the last block after the object. */
};

/** @brief Why a layout, superblock or entry was refused: stored through the `reason` arguments. */
enum gio_kv_reason {
	GIO_KV_R_OK = 0,          /**< Nothing wrong. */
	GIO_KV_R_BLANK,           /**< All bytes zero: never written (an unformatted device, a slot never committed). */
	GIO_KV_R_MAGIC,           /**< Wrong magic: not a giouring KV store superblock or entry. */
	GIO_KV_R_VERSION,         /**< A format version this header does not read. */
	GIO_KV_R_CRC,             /**< CRC32C mismatch: damaged or torn. */
	GIO_KV_R_RESERVED,        /**< A reserved field is not zero. */
	GIO_KV_R_BLOCK_SIZE,      /**< Block size not a power of two in [GIO_KV_BLOCK_MIN, GIO_KV_BLOCK_MAX]. */
	GIO_KV_R_GEOMETRY,        /**< layers or object_bytes zero, or a slot larger than 64 bits can count. */
	GIO_KV_R_LAYOUT,          /**< slot_bytes, slots, index_lba or data_lba differ from the layout of store_blocks. */
	GIO_KV_R_STORE_ID,        /**< Store id zero, or not the store's. */
	GIO_KV_R_DEVICE,          /**< Device index not below the device count, or not this device's. */
	GIO_KV_R_SLOT,            /**< Slot number not the entry's position, or not below the device's slots. */
	GIO_KV_R_STATE,           /**< Entry state neither FREE nor VALID. */
	GIO_KV_R_SEQ,             /**< A VALID entry with sequence 0. */
	GIO_KV_R_LENGTH,          /**< Data length larger than the slot. */
	GIO_KV_R_FREE_FIELDS,     /**< A FREE entry with a key or a data length. */
	GIO_KV_R_DEVICE_COUNT,    /**< Device count differs between devices, or from the devices given. */
	GIO_KV_R_DUP_DEVICE,      /**< Two devices claim the same device index. */
	GIO_KV_R_SHAPE,           /**< layers or object_bytes differ from what the caller expects or from another device. */
	GIO_KV_R_POOL,            /**< Pool signature differs from what the caller expects or from another device. */
	GIO_KV_R_BLOCK_MISMATCH,  /**< The device's block size is not the superblock's. */
	GIO_KV_R_DEVICE_SMALL,    /**< The device has fewer blocks than the store was laid out for. */
	GIO_KV_R_NOSPACE,         /**< Not even one slot fits on the device. */
	GIO_KV_R_COUNT            /**< Number of reasons (not a reason). */
};

/**
 * @brief Name of a reason, for messages.
 * @param reason  an enum gio_kv_reason value.
 * @return a static string (e.g. "CRC mismatch"); "unknown reason" for a value out of range.
 *
 * Pure; any thread, host or device.
 */
GIO_HD const char *gio_kv_reason_str(uint32_t reason)
{
	switch (reason) {
	case GIO_KV_R_OK: return "ok";
	case GIO_KV_R_BLANK: return "all zero (never written)";
	case GIO_KV_R_MAGIC: return "bad magic";
	case GIO_KV_R_VERSION: return "unsupported format version";
	case GIO_KV_R_CRC: return "CRC mismatch";
	case GIO_KV_R_RESERVED: return "reserved field not zero";
	case GIO_KV_R_BLOCK_SIZE: return "bad block size";
	case GIO_KV_R_GEOMETRY: return "bad geometry (layers, object bytes)";
	case GIO_KV_R_LAYOUT: return "layout fields inconsistent with the store size";
	case GIO_KV_R_STORE_ID: return "store id zero or foreign";
	case GIO_KV_R_DEVICE: return "bad device index";
	case GIO_KV_R_SLOT: return "slot number not the entry's position";
	case GIO_KV_R_STATE: return "bad entry state";
	case GIO_KV_R_SEQ: return "valid entry with sequence 0";
	case GIO_KV_R_LENGTH: return "data length larger than the slot";
	case GIO_KV_R_FREE_FIELDS: return "free entry with a key or length";
	case GIO_KV_R_DEVICE_COUNT: return "device count mismatch";
	case GIO_KV_R_DUP_DEVICE: return "two devices with the same index";
	case GIO_KV_R_SHAPE: return "geometry mismatch (layers, object bytes)";
	case GIO_KV_R_POOL: return "pool signature mismatch";
	case GIO_KV_R_BLOCK_MISMATCH: return "device block size differs from the superblock's";
	case GIO_KV_R_DEVICE_SMALL: return "device smaller than the store";
	case GIO_KV_R_NOSPACE: return "no slot fits on the device";
	default: return "unknown reason";
	}
}

/**
 * @brief CRC32C (Castagnoli, reflected polynomial 0x82F63B78), chainable.
 * @param crc  0 to start, or the result over the bytes before @p buf.
 * @param buf  the bytes.
 * @param len  their count.
 * @return the CRC32C of everything so far: gio_kv_crc32c(0, "123456789", 9) is 0xE3069283, and
 *         gio_kv_crc32c(gio_kv_crc32c(0, a, n), b, m) is the CRC of a followed by b.
 *
 * Pure; any thread, host or device. Four bits a step from a 16-entry table: the table lives in
 * the function, so the same code runs on the GPU without a device copy of a global.
 */
GIO_HD uint32_t gio_kv_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint32_t t[16] = {0x00000000u, 0x105ec76fu, 0x20bd8edeu, 0x30e349b1u, 0x417b1dbcu, 0x5125dad3u,
				0x61c69362u, 0x7198540du, 0x82f63b78u, 0x92a8fc17u, 0xa24bb5a6u, 0xb21572c9u,
				0xc38d26c4u, 0xd3d3e1abu, 0xe330a81au, 0xf36e6f75u};
	const uint8_t *p = (const uint8_t *)buf;
	size_t i;
	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ t[crc & 15u];
		crc = (crc >> 4) ^ t[crc & 15u];
	}
	return ~crc;
}

/**
 * @brief Whether two 128-bit numbers are equal.
 * @param a  one.
 * @param b  the other.
 * @return 1 when equal, else 0.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_u128_eq(struct gio_kv_u128 a, struct gio_kv_u128 b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

GIO_HD int gio__kv_set_reason(uint32_t *reason, uint32_t r, int rc)
{
	if (reason)
		*reason = r;
	return rc;
}

GIO_HD int gio__kv_all_zero(const void *buf, size_t len)
{
	const uint8_t *p = (const uint8_t *)buf;
	size_t i;
	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

GIO_HD uint64_t gio__kv_align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/**
 * @brief Lays a device out: how many slots fit and where the regions start.
 * @param store_bytes   bytes of the device the store may use, from LBA 0 (the device's size,
 *                      or less to leave the rest alone); a partial last block is not used.
 * @param block_bytes   the device's logical block size.
 * @param layers        layer objects L per slot.
 * @param object_bytes  bytes of one layer's object.
 * @param lay           receives the layout; all zero on error (so that no compiler takes it for
 *                      uninitialized on the success path).
 * @param reason        receives GIO_KV_R_OK or why it failed; may be NULL.
 * @return 0; `-EINVAL` when @p block_bytes is not a power of two in [GIO_KV_BLOCK_MIN,
 *         GIO_KV_BLOCK_MAX] (reason GIO_KV_R_BLOCK_SIZE), or @p layers or @p object_bytes is 0 or
 *         a slot would not fit in 64 bits (GIO_KV_R_GEOMETRY); `-ENOSPC` when not even one slot
 *         fits (GIO_KV_R_NOSPACE).
 *
 * Pure; any thread, host or device. The layout is the largest number of slots s for which
 * align_up(index_lba + s, data alignment) + s x slot_blocks <= store_blocks, where index_lba is
 * ceil(4096 / B) and the data alignment is max(GIO_KV_DATA_ALIGN, B) bytes. A reader recomputes it
 * from store_blocks and refuses a superblock that disagrees, so the rule is part of the format.
 */
GIO_HD int gio_kv_layout_compute(uint64_t store_bytes, uint32_t block_bytes, uint32_t layers, uint64_t object_bytes,
				 struct gio_kv_layout *lay, uint32_t *reason)
{
	uint64_t nb, ilba, sblocks, align, lo, hi;
	memset(lay, 0, sizeof(*lay));
	if (block_bytes < GIO_KV_BLOCK_MIN || block_bytes > GIO_KV_BLOCK_MAX || (block_bytes & (block_bytes - 1)))
		return gio__kv_set_reason(reason, GIO_KV_R_BLOCK_SIZE, -EINVAL);
	if (layers == 0 || object_bytes == 0 || object_bytes > (UINT64_MAX - block_bytes) / layers)
		return gio__kv_set_reason(reason, GIO_KV_R_GEOMETRY, -EINVAL);
	nb = store_bytes / block_bytes;
	ilba = (GIO_KV_SB_REGION_BYTES + block_bytes - 1) / block_bytes;
	sblocks = gio__kv_align_up((uint64_t)layers * object_bytes, block_bytes) / block_bytes;
	align = block_bytes >= GIO_KV_DATA_ALIGN ? 1u : GIO_KV_DATA_ALIGN / block_bytes;
	/* Each slot costs at least its entry block and its data, so hi bounds the answer; the
	 * alignment gap only shrinks it, and fitting is monotone in s: bisect. */
	lo = 0;
	hi = nb > ilba ? (nb - ilba) / (sblocks + 1) : 0;
	while (lo < hi) {
		const uint64_t mid = hi - (hi - lo) / 2;
		if (gio__kv_align_up(ilba + mid, align) + mid * sblocks <= nb)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo == 0)
		return gio__kv_set_reason(reason, GIO_KV_R_NOSPACE, -ENOSPC);
	lay->block_bytes = block_bytes;
	lay->layers = layers;
	lay->object_bytes = object_bytes;
	lay->slot_bytes = sblocks * block_bytes;
	lay->slot_blocks = sblocks;
	lay->slots = lo;
	lay->index_lba = ilba;
	lay->data_lba = gio__kv_align_up(ilba + lo, align);
	lay->store_blocks = nb;
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief The layout a superblock describes (its fields, no check: decode it first).
 * @param sb   a superblock gio_kv_sb_decode() accepted or gio_kv_sb_init() filled.
 * @param lay  receives the layout.
 *
 * Pure; any thread, host or device.
 */
GIO_HD void gio_kv_sb_layout(const struct gio_kv_sb *sb, struct gio_kv_layout *lay)
{
	lay->block_bytes = sb->block_bytes;
	lay->layers = sb->layers;
	lay->object_bytes = sb->object_bytes;
	lay->slot_bytes = sb->slot_bytes;
	lay->slot_blocks = sb->slot_bytes / sb->block_bytes;
	lay->slots = sb->slots;
	lay->index_lba = sb->index_lba;
	lay->data_lba = sb->data_lba;
	lay->store_blocks = sb->store_blocks;
}

/* Every rule of a superblock's fields but magic, version and CRC. */
GIO_HD int gio__kv_sb_check_fields(const struct gio_kv_sb *sb, int rc, uint32_t *reason)
{
	struct gio_kv_layout l;
	uint32_t r = GIO_KV_R_OK;
	if (sb->reserved0 || !gio__kv_all_zero(sb->reserved1, sizeof(sb->reserved1)))
		return gio__kv_set_reason(reason, GIO_KV_R_RESERVED, rc);
	if (sb->store_id.lo == 0 && sb->store_id.hi == 0)
		return gio__kv_set_reason(reason, GIO_KV_R_STORE_ID, rc);
	if (sb->device_count == 0 || sb->device_index >= sb->device_count)
		return gio__kv_set_reason(reason, GIO_KV_R_DEVICE, rc);
	if (sb->block_bytes < GIO_KV_BLOCK_MIN || sb->block_bytes > GIO_KV_BLOCK_MAX ||
	    (sb->block_bytes & (sb->block_bytes - 1)))
		return gio__kv_set_reason(reason, GIO_KV_R_BLOCK_SIZE, rc);
	if (sb->store_blocks > UINT64_MAX / sb->block_bytes)
		return gio__kv_set_reason(reason, GIO_KV_R_LAYOUT, rc);
	if (gio_kv_layout_compute(sb->store_blocks * sb->block_bytes, sb->block_bytes, sb->layers, sb->object_bytes, &l,
				  &r))
		return gio__kv_set_reason(reason, r == GIO_KV_R_NOSPACE ? (uint32_t)GIO_KV_R_LAYOUT : r, rc);
	if (l.slot_bytes != sb->slot_bytes || l.slots != sb->slots || l.index_lba != sb->index_lba ||
	    l.data_lba != sb->data_lba)
		return gio__kv_set_reason(reason, GIO_KV_R_LAYOUT, rc);
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief Fills the superblock of device @p device_index of a store being formatted.
 * @param sb              receives the superblock (crc 0: gio_kv_sb_encode() computes it).
 * @param lay             the device's layout, from gio_kv_layout_compute().
 * @param store_id        the store's id: random, the same for every device, not zero.
 * @param device_index    this device's place in the store, below @p device_count.
 * @param device_count    devices of the store.
 * @param pool_signature  the caller's number for what the chunks hold (a reopen compares it).
 * @param reason          receives GIO_KV_R_OK or why it failed; may be NULL.
 * @return 0; `-EINVAL` with reason GIO_KV_R_STORE_ID (id zero), GIO_KV_R_DEVICE (index not below
 *         the count), or the reason a layout not made by gio_kv_layout_compute() fails on
 *         (GIO_KV_R_BLOCK_SIZE, GIO_KV_R_GEOMETRY, GIO_KV_R_LAYOUT).
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_sb_init(struct gio_kv_sb *sb, const struct gio_kv_layout *lay, struct gio_kv_u128 store_id,
			  uint32_t device_index, uint32_t device_count, uint64_t pool_signature, uint32_t *reason)
{
	struct gio_kv_sb s;
	memset(&s, 0, sizeof(s));
	s.magic = GIO_KV_SB_MAGIC;
	s.version = GIO_KV_FORMAT_VERSION;
	s.block_bytes = lay->block_bytes;
	s.store_id = store_id;
	s.device_index = device_index;
	s.device_count = device_count;
	s.layers = lay->layers;
	s.object_bytes = lay->object_bytes;
	s.slot_bytes = lay->slot_bytes;
	s.pool_signature = pool_signature;
	s.slots = lay->slots;
	s.index_lba = lay->index_lba;
	s.data_lba = lay->data_lba;
	s.store_blocks = lay->store_blocks;
	if (gio__kv_sb_check_fields(&s, -EINVAL, reason))
		return -EINVAL;
	*sb = s;
	return 0;
}

/**
 * @brief Encodes a superblock: its 128 bytes, with magic, version and CRC32C, into @p buf.
 * @param buf     receives GIO_KV_SB_BYTES bytes (any alignment). The rest of the superblock
 *                region (GIO_KV_SB_REGION_BYTES, or one block when larger) is the caller's to
 *                write as zeros.
 * @param sb      the superblock, from gio_kv_sb_init().
 * @param reason  receives GIO_KV_R_OK or why it failed; may be NULL.
 * @return 0; `-EINVAL` when a field breaks a rule (the reasons of gio_kv_sb_init(), or
 *         GIO_KV_R_MAGIC / GIO_KV_R_VERSION / GIO_KV_R_RESERVED for a superblock not made by it);
 *         @p buf is untouched then.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_sb_encode(void *buf, const struct gio_kv_sb *sb, uint32_t *reason)
{
	struct gio_kv_sb s = *sb;
	if (s.magic != GIO_KV_SB_MAGIC)
		return gio__kv_set_reason(reason, GIO_KV_R_MAGIC, -EINVAL);
	if (s.version != GIO_KV_FORMAT_VERSION)
		return gio__kv_set_reason(reason, GIO_KV_R_VERSION, -EINVAL);
	if (gio__kv_sb_check_fields(&s, -EINVAL, reason))
		return -EINVAL;
	s.crc = gio_kv_crc32c(0, &s, offsetof(struct gio_kv_sb, crc));
	memcpy(buf, &s, sizeof(s));
	return 0;
}

/**
 * @brief Decodes and checks the superblock read from a device's first bytes.
 * @param buf     the first GIO_KV_SB_BYTES bytes of the device (any alignment).
 * @param sb      receives the superblock; untouched on error.
 * @param reason  receives GIO_KV_R_OK or why it was refused; may be NULL.
 * @return 0; `-ENODATA` when all 128 bytes are zero (GIO_KV_R_BLANK: not formatted); `-EPROTO`
 *         for anything else that is not a valid superblock: GIO_KV_R_MAGIC, GIO_KV_R_VERSION
 *         (checked before the CRC, so that a later format is named as such), GIO_KV_R_CRC,
 *         GIO_KV_R_RESERVED, GIO_KV_R_STORE_ID, GIO_KV_R_DEVICE, GIO_KV_R_BLOCK_SIZE,
 *         GIO_KV_R_GEOMETRY, GIO_KV_R_LAYOUT.
 *
 * Pure; any thread, host or device. It checks the superblock alone; whether it is the store the
 * caller means, on the device it came from, is gio_kv_sb_check_shape(), gio_kv_sb_check_device()
 * and gio_kv_sb_check_set().
 */
GIO_HD int gio_kv_sb_decode(const void *buf, struct gio_kv_sb *sb, uint32_t *reason)
{
	struct gio_kv_sb s;
	memcpy(&s, buf, sizeof(s));
	if (gio__kv_all_zero(&s, sizeof(s)))
		return gio__kv_set_reason(reason, GIO_KV_R_BLANK, -ENODATA);
	if (s.magic != GIO_KV_SB_MAGIC)
		return gio__kv_set_reason(reason, GIO_KV_R_MAGIC, -EPROTO);
	if (s.version != GIO_KV_FORMAT_VERSION)
		return gio__kv_set_reason(reason, GIO_KV_R_VERSION, -EPROTO);
	if (s.crc != gio_kv_crc32c(0, &s, offsetof(struct gio_kv_sb, crc)))
		return gio__kv_set_reason(reason, GIO_KV_R_CRC, -EPROTO);
	if (gio__kv_sb_check_fields(&s, -EPROTO, reason))
		return -EPROTO;
	*sb = s;
	return 0;
}

/**
 * @brief Checks a decoded superblock against the device it was read from.
 * @param sb             the decoded superblock.
 * @param block_bytes    the device's logical block size now.
 * @param device_blocks  the device's size in blocks now.
 * @param reason         receives GIO_KV_R_OK or why it was refused; may be NULL.
 * @return 0; `-EINVAL` when the block size differs (GIO_KV_R_BLOCK_MISMATCH: the namespace was
 *         reformatted) or the device is smaller than the store (GIO_KV_R_DEVICE_SMALL).
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_sb_check_device(const struct gio_kv_sb *sb, uint32_t block_bytes, uint64_t device_blocks,
				  uint32_t *reason)
{
	if (sb->block_bytes != block_bytes)
		return gio__kv_set_reason(reason, GIO_KV_R_BLOCK_MISMATCH, -EINVAL);
	if (device_blocks < sb->store_blocks)
		return gio__kv_set_reason(reason, GIO_KV_R_DEVICE_SMALL, -EINVAL);
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief Checks a decoded superblock against what the caller's chunks are.
 * @param sb              the decoded superblock.
 * @param layers          layer objects per chunk the caller stores.
 * @param object_bytes    bytes of each.
 * @param pool_signature  the caller's pool signature.
 * @param reason          receives GIO_KV_R_OK or why it was refused; may be NULL.
 * @return 0; `-EINVAL` with GIO_KV_R_SHAPE (layers or object bytes differ) or GIO_KV_R_POOL.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_sb_check_shape(const struct gio_kv_sb *sb, uint32_t layers, uint64_t object_bytes,
				 uint64_t pool_signature, uint32_t *reason)
{
	if (sb->layers != layers || sb->object_bytes != object_bytes)
		return gio__kv_set_reason(reason, GIO_KV_R_SHAPE, -EINVAL);
	if (sb->pool_signature != pool_signature)
		return gio__kv_set_reason(reason, GIO_KV_R_POOL, -EINVAL);
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief Checks that decoded superblocks are the devices of one whole store.
 * @param sbs     @p n decoded superblocks, in any order (one per device opened).
 * @param n       their count.
 * @param reason  receives GIO_KV_R_OK or why they were refused; may be NULL.
 * @param which   receives the position in @p sbs of the first one found wrong (0 when @p n is 0);
 *                may be NULL.
 * @return 0 when every superblock has device_count @p n, the store id, layers, object bytes and
 *         pool signature of sbs[0], and the device indices are 0 to n - 1 each once; else
 *         `-EINVAL` with GIO_KV_R_DEVICE_COUNT (also for @p n 0), GIO_KV_R_STORE_ID,
 *         GIO_KV_R_SHAPE, GIO_KV_R_POOL or GIO_KV_R_DUP_DEVICE.
 *
 * Pure; any thread, host or device. Quadratic in @p n (a store has a few devices). Block sizes and
 * slot counts may differ between devices.
 */
GIO_HD int gio_kv_sb_check_set(const struct gio_kv_sb *sbs, uint32_t n, uint32_t *reason, uint32_t *which)
{
	uint32_t i, j;
	if (which)
		*which = 0;
	if (n == 0)
		return gio__kv_set_reason(reason, GIO_KV_R_DEVICE_COUNT, -EINVAL);
	for (i = 0; i < n; i++) {
		uint32_t r = GIO_KV_R_OK;
		if (sbs[i].device_count != n)
			r = GIO_KV_R_DEVICE_COUNT;
		else if (!gio_kv_u128_eq(sbs[i].store_id, sbs[0].store_id))
			r = GIO_KV_R_STORE_ID;
		else
			gio_kv_sb_check_shape(&sbs[i], sbs[0].layers, sbs[0].object_bytes, sbs[0].pool_signature, &r);
		for (j = 0; j < i && r == GIO_KV_R_OK; j++)
			if (sbs[j].device_index == sbs[i].device_index)
				r = GIO_KV_R_DUP_DEVICE;
		if (r != GIO_KV_R_OK) {
			if (which)
				*which = i;
			return gio__kv_set_reason(reason, r, -EINVAL);
		}
	}
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief Encodes the index entry of a slot: its 80 bytes, with magic, version and CRC32C.
 * @param buf       receives GIO_KV_ENTRY_BYTES bytes (any alignment); the rest of the entry's
 *                  block is the caller's to write as zeros.
 * @param sb        the device's superblock (store id, device index, slots, slot bytes).
 * @param slot      the slot, below sb->slots; the entry goes to LBA gio_kv_entry_lba().
 * @param state     GIO_KV_ENTRY_FREE or GIO_KV_ENTRY_VALID.
 * @param key       the chunk's key (VALID); zero for FREE.
 * @param seq       the commit sequence: at least 1 for VALID.
 * @param data_len  bytes of the slot the chunk fills, at most sb->slot_bytes (0: the whole
 *                  slot); 0 for FREE.
 * @param reason    receives GIO_KV_R_OK or why it failed; may be NULL.
 * @return 0; `-EINVAL` (and @p buf untouched) with GIO_KV_R_SLOT, GIO_KV_R_STATE, GIO_KV_R_SEQ,
 *         GIO_KV_R_LENGTH or GIO_KV_R_FREE_FIELDS.
 *
 * Pure; any thread, host or device.
 */
GIO_HD int gio_kv_entry_encode(void *buf, const struct gio_kv_sb *sb, uint64_t slot, uint32_t state,
			       struct gio_kv_u128 key, uint64_t seq, uint64_t data_len, uint32_t *reason)
{
	struct gio_kv_entry e;
	if (slot >= sb->slots)
		return gio__kv_set_reason(reason, GIO_KV_R_SLOT, -EINVAL);
	if (state != GIO_KV_ENTRY_FREE && state != GIO_KV_ENTRY_VALID)
		return gio__kv_set_reason(reason, GIO_KV_R_STATE, -EINVAL);
	if (state == GIO_KV_ENTRY_VALID && seq == 0)
		return gio__kv_set_reason(reason, GIO_KV_R_SEQ, -EINVAL);
	if (data_len > sb->slot_bytes)
		return gio__kv_set_reason(reason, GIO_KV_R_LENGTH, -EINVAL);
	if (state == GIO_KV_ENTRY_FREE && (key.lo || key.hi || data_len))
		return gio__kv_set_reason(reason, GIO_KV_R_FREE_FIELDS, -EINVAL);
	memset(&e, 0, sizeof(e));
	e.magic = GIO_KV_ENTRY_MAGIC;
	e.version = (uint16_t)GIO_KV_FORMAT_VERSION;
	e.state = (uint16_t)state;
	e.device = sb->device_index;
	e.store_id = sb->store_id;
	e.key = key;
	e.slot = slot;
	e.seq = seq;
	e.data_len = data_len;
	e.crc = gio_kv_crc32c(0, &e, offsetof(struct gio_kv_entry, crc));
	memcpy(buf, &e, sizeof(e));
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief Decodes and checks the index entry read from a slot's entry block.
 * @param buf     the first GIO_KV_ENTRY_BYTES bytes of block gio_kv_entry_lba(slot) (any alignment).
 * @param sb      the device's superblock.
 * @param slot    the slot whose block was read (the entry's position).
 * @param e       receives the entry; untouched on error.
 * @param reason  receives GIO_KV_R_OK or why it was refused; may be NULL.
 * @return 0 for a FREE or VALID entry of this slot, device and store; `-ENODATA` when all 80
 *         bytes are zero (GIO_KV_R_BLANK: never written, a free slot); `-EPROTO` otherwise:
 *         GIO_KV_R_MAGIC, GIO_KV_R_VERSION, GIO_KV_R_CRC (torn or damaged), GIO_KV_R_RESERVED,
 *         GIO_KV_R_STATE, GIO_KV_R_STORE_ID (an earlier store's), GIO_KV_R_DEVICE, GIO_KV_R_SLOT,
 *         GIO_KV_R_SEQ, GIO_KV_R_LENGTH, GIO_KV_R_FREE_FIELDS.
 *
 * Pure; any thread, host or device. A reopen treats every refused entry as a free slot
 * (docs/store-format.md, "Reopen"), so a slot is served only when this returns 0 with a VALID
 * entry.
 */
GIO_HD int gio_kv_entry_decode(const void *buf, const struct gio_kv_sb *sb, uint64_t slot, struct gio_kv_entry *e,
			       uint32_t *reason)
{
	struct gio_kv_entry x;
	uint32_t r = GIO_KV_R_OK;
	memcpy(&x, buf, sizeof(x));
	if (gio__kv_all_zero(&x, sizeof(x)))
		return gio__kv_set_reason(reason, GIO_KV_R_BLANK, -ENODATA);
	if (x.magic != GIO_KV_ENTRY_MAGIC)
		r = GIO_KV_R_MAGIC;
	else if (x.version != GIO_KV_FORMAT_VERSION)
		r = GIO_KV_R_VERSION;
	else if (x.crc != gio_kv_crc32c(0, &x, offsetof(struct gio_kv_entry, crc)))
		r = GIO_KV_R_CRC;
	else if (x.reserved0 || x.reserved1)
		r = GIO_KV_R_RESERVED;
	else if (x.state != GIO_KV_ENTRY_FREE && x.state != GIO_KV_ENTRY_VALID)
		r = GIO_KV_R_STATE;
	else if (!gio_kv_u128_eq(x.store_id, sb->store_id))
		r = GIO_KV_R_STORE_ID;
	else if (x.device != sb->device_index)
		r = GIO_KV_R_DEVICE;
	else if (x.slot != slot || x.slot >= sb->slots)
		r = GIO_KV_R_SLOT;
	else if (x.state == GIO_KV_ENTRY_VALID && x.seq == 0)
		r = GIO_KV_R_SEQ;
	else if (x.data_len > sb->slot_bytes)
		r = GIO_KV_R_LENGTH;
	else if (x.state == GIO_KV_ENTRY_FREE && (x.key.lo || x.key.hi || x.data_len))
		r = GIO_KV_R_FREE_FIELDS;
	if (r != GIO_KV_R_OK)
		return gio__kv_set_reason(reason, r, -EPROTO);
	*e = x;
	return gio__kv_set_reason(reason, GIO_KV_R_OK, 0);
}

/**
 * @brief LBA of a slot's index entry.
 * @param lay   the device's layout.
 * @param slot  the slot (below lay->slots: not checked, the fast path).
 * @return lay->index_lba + @p slot.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_entry_lba(const struct gio_kv_layout *lay, uint64_t slot)
{
	return lay->index_lba + slot;
}

/**
 * @brief First LBA of a slot's data.
 * @param lay   the device's layout.
 * @param slot  the slot (below lay->slots: not checked, the fast path).
 * @return lay->data_lba + @p slot x lay->slot_blocks.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_slot_lba(const struct gio_kv_layout *lay, uint64_t slot)
{
	return lay->data_lba + slot * lay->slot_blocks;
}

/**
 * @brief Byte offset on the device of a slot's data.
 * @param lay   the device's layout.
 * @param slot  the slot (below lay->slots: not checked, the fast path).
 * @return gio_kv_slot_lba() x lay->block_bytes.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_slot_offset(const struct gio_kv_layout *lay, uint64_t slot)
{
	return gio_kv_slot_lba(lay, slot) * lay->block_bytes;
}

/**
 * @brief Byte offset of layer @p layer's object inside a slot.
 * @param lay    the device's layout.
 * @param layer  the layer (below lay->layers: not checked, the fast path).
 * @return @p layer x lay->object_bytes.
 *
 * Pure; any thread, host or device.
 */
GIO_HD uint64_t gio_kv_layer_offset(const struct gio_kv_layout *lay, uint32_t layer)
{
	return (uint64_t)layer * lay->object_bytes;
}

/**
 * @brief Blocks to read or write for layer @p layer's object of a slot alone.
 * @param lay    the device's layout.
 * @param slot   the slot, below lay->slots.
 * @param layer  the layer, below lay->layers.
 * @param span   receives the blocks and the bytes of them outside the object; untouched on error.
 * @return 0, or `-EINVAL` when @p slot or @p layer is out of range.
 *
 * Pure; any thread, host or device. When object_bytes is a multiple of the block size, head and
 * tail are 0 and the object is exactly the blocks; otherwise a read discards head and tail bytes
 * (an SGL bit bucket) and a write of one object alone would overwrite its neighbours' bytes, so
 * objects that share a block are written together (the whole slot).
 */
GIO_HD int gio_kv_layer_span(const struct gio_kv_layout *lay, uint64_t slot, uint32_t layer, struct gio_kv_span *span)
{
	uint64_t first, end, b;
	if (slot >= lay->slots || layer >= lay->layers)
		return -EINVAL;
	b = lay->block_bytes;
	first = gio_kv_layer_offset(lay, layer);
	end = first + lay->object_bytes;
	span->slba = gio_kv_slot_lba(lay, slot) + first / b;
	span->nblocks = (end + b - 1) / b - first / b;
	span->head = (uint32_t)(first % b);
	span->tail = (uint32_t)((b - end % b) % b);
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_KV_FORMAT_H */
