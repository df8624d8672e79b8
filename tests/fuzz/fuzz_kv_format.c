/*
 * libFuzzer target: the KV store's on-device format (include/giouring/kv/format.h), the bytes a
 * reopen reads from a device that may hold anything: another program's data, a torn write, an
 * earlier store, a hostile image.
 *
 * Input (constants in fuzz_common.h, FZ_KV_*; missing bytes read 0):
 *   byte 0  mode: bits 0-1 where the superblock's 128 bytes come from (0-2: made by
 *           gio_kv_layout_compute() + gio_kv_sb_init() + gio_kv_sb_encode() from the parameters
 *           below, then mutated; 3: raw input bytes); bit 2 the CRC of raw bytes made right;
 *           bit 3 the CRC of raw entries made right; bit 4 raw layers and object bytes (else
 *           layers 1 + v % 128 and object bytes 1 + v % 2^24, so that layouts fit often)
 *   then    block size selector (u8: bit 7 set -> a raw u32 follows; else 512 << (v % 8)),
 *           store bytes (u64), layers (u32), object bytes (u64), device index (u32), device
 *           count (u32; % 9 unless bit 4 of the mode), store id (2 x u64), pool signature (u64)
 *   then    mutations of a made superblock: a count (u8, at most 8), then (offset u8 % 124,
 *           value u8) pairs, written before the CRC is made right again; or, in mode 3, 128 raw
 *           bytes
 *   then    the device as opened now: block size selector (as above), blocks (u64)
 *   then    entries: a count (u8, at most 4), each an entry mode (u8: bit 0 the slot taken modulo
 *           the slots, bit 1 raw entry bytes (80) else encoded from fields), the slot (u64), then
 *           80 raw bytes or state (u16), key (2 x u64), seq (u64), data length (u64)
 *
 * Checks:
 *   - gio_kv_layout_compute(): -EINVAL exactly for a bad block size or geometry, -ENOSPC exactly
 *     when no slot fits, each with its reason, the layout all zero on error; a layout it gives
 *     fits its device (no overflow), puts the index and data where the format says, and is the
 *     largest that fits (one slot more would not);
 *   - gio_kv_sb_init() refuses a zero store id and a device index not below the count, each with
 *     its reason; what it makes encodes, and decodes to itself;
 *   - gio_kv_sb_decode() on any 128 bytes: -ENODATA exactly for zeros, else -EPROTO or 0, its
 *     output untouched on error; a superblock it accepts satisfies every field rule, re-encodes to
 *     the same bytes, and describes a layout that passes the checks above;
 *   - gio_kv_sb_check_device(), gio_kv_sb_check_shape() and gio_kv_sb_check_set() against a model;
 *   - gio_kv_entry_decode() on any 80 bytes: as the superblock's (an accepted entry names this
 *     slot, device and store, re-encodes to the same bytes); gio_kv_entry_encode() against a
 *     model of its reasons, its buffer untouched on error, and what it writes decodes to the same
 *     fields;
 *   - gio_kv_layer_span() of every accepted slot: the object's blocks inside the slot's, head and
 *     tail under a block, -EINVAL for a layer or slot out of range.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <giouring/kv/format.h>

#include "fuzz_common.h"

typedef unsigned __int128 u128;

static uint32_t block_size(struct fz_reader *r)
{
	const uint8_t sel = fz_u8(r);
	return sel & 0x80u ? fz_u32(r) : 512u << (sel % 8u);
}

static int good_block(uint32_t b)
{
	return b >= GIO_KV_BLOCK_MIN && b <= GIO_KV_BLOCK_MAX && (b & (b - 1)) == 0;
}

static uint64_t align_blocks(uint32_t b)
{
	return b >= GIO_KV_DATA_ALIGN ? 1u : GIO_KV_DATA_ALIGN / b;
}

/* Every property of a layout gio_kv_layout_compute() made for store_blocks blocks. */
static void check_layout(const struct gio_kv_layout *l, uint64_t store_blocks, uint32_t layers, uint64_t object_bytes)
{
	const uint64_t b = l->block_bytes, align = align_blocks(l->block_bytes);
	const u128 objs = (u128)layers * object_bytes;
	u128 end, more;
	FZ_CHECK(good_block(l->block_bytes), "block size %u", l->block_bytes);
	FZ_CHECK(l->layers == layers && l->object_bytes == object_bytes, "shape %u x %llu", l->layers,
		 (unsigned long long)l->object_bytes);
	FZ_CHECK((u128)l->slot_blocks * b == l->slot_bytes, "slot blocks %llu x %llu != slot bytes %llu",
		 (unsigned long long)l->slot_blocks, (unsigned long long)b, (unsigned long long)l->slot_bytes);
	FZ_CHECK(l->slot_bytes >= objs && l->slot_bytes - objs < b, "slot bytes %llu for %u x %llu",
		 (unsigned long long)l->slot_bytes, layers, (unsigned long long)object_bytes);
	FZ_CHECK(l->index_lba == (GIO_KV_SB_REGION_BYTES + b - 1) / b, "index LBA %llu", (unsigned long long)l->index_lba);
	FZ_CHECK(l->slots >= 1 && l->store_blocks == store_blocks, "slots %llu, store blocks %llu of %llu",
		 (unsigned long long)l->slots, (unsigned long long)l->store_blocks, (unsigned long long)store_blocks);
	FZ_CHECK(l->data_lba % align == 0 && (u128)l->data_lba >= (u128)l->index_lba + l->slots &&
			 (u128)l->data_lba - l->index_lba - l->slots < align,
		 "data LBA %llu (index %llu + %llu slots, alignment %llu blocks)", (unsigned long long)l->data_lba,
		 (unsigned long long)l->index_lba, (unsigned long long)l->slots, (unsigned long long)align);
	end = (u128)l->data_lba + (u128)l->slots * l->slot_blocks;
	FZ_CHECK(end <= store_blocks, "the data ends past the device: %llu slots of %llu blocks from %llu, %llu blocks",
		 (unsigned long long)l->slots, (unsigned long long)l->slot_blocks, (unsigned long long)l->data_lba,
		 (unsigned long long)store_blocks);
	/* The largest that fits: one slot more does not. */
	more = ((u128)l->index_lba + l->slots + 1 + align - 1) / align * align + ((u128)l->slots + 1) * l->slot_blocks;
	FZ_CHECK(more > store_blocks, "%llu slots fit where the layout has %llu", (unsigned long long)l->slots + 1,
		 (unsigned long long)l->slots);
}

/* Every rule of a superblock gio_kv_sb_decode() accepted or gio_kv_sb_init() made. */
static void check_sb_fields(const struct gio_kv_sb *sb)
{
	struct gio_kv_layout l;
	FZ_CHECK(sb->magic == GIO_KV_SB_MAGIC && sb->version == GIO_KV_FORMAT_VERSION, "magic %llx version %u",
		 (unsigned long long)sb->magic, sb->version);
	FZ_CHECK(sb->reserved0 == 0 && gio__kv_all_zero(sb->reserved1, sizeof(sb->reserved1)), "reserved bytes");
	FZ_CHECK(sb->store_id.lo || sb->store_id.hi, "store id zero");
	FZ_CHECK(sb->device_index < sb->device_count, "device %u of %u", sb->device_index, sb->device_count);
	FZ_CHECK(good_block(sb->block_bytes), "block size %u", sb->block_bytes);
	gio_kv_sb_layout(sb, &l);
	check_layout(&l, sb->store_blocks, sb->layers, sb->object_bytes);
}

/* The blocks of each layer's object of a slot. */
static void check_spans(const struct gio_kv_layout *l, uint64_t slot, uint32_t layer)
{
	struct gio_kv_span s, keep;
	memset(&keep, 0x5a, sizeof(keep));
	s = keep;
	FZ_CHECK(gio_kv_layer_span(l, l->slots + (slot % 4u), 0, &s) == -EINVAL && !memcmp(&s, &keep, sizeof(s)),
		 "a slot past the last accepted");
	if (l->layers <= UINT32_MAX - 4u)
		FZ_CHECK(gio_kv_layer_span(l, slot % l->slots, l->layers + (layer % 4u), &s) == -EINVAL &&
				 !memcmp(&s, &keep, sizeof(s)),
			 "a layer past the last accepted");
	for (uint32_t k = 0; k < 3; k++) {
		const uint32_t lay = k == 0 ? 0u : k == 1 ? l->layers - 1u : layer % l->layers;
		const uint64_t sl = slot % l->slots, first = gio_kv_slot_lba(l, sl);
		FZ_CHECK(gio_kv_layer_span(l, sl, lay, &s) == 0, "slot %llu layer %u refused", (unsigned long long)sl, lay);
		FZ_CHECK(s.head < l->block_bytes && s.tail < l->block_bytes, "head %u tail %u", s.head, s.tail);
		FZ_CHECK((u128)s.nblocks * l->block_bytes == (u128)s.head + l->object_bytes + s.tail,
			 "%llu blocks for %u + %llu + %u bytes", (unsigned long long)s.nblocks, s.head,
			 (unsigned long long)l->object_bytes, s.tail);
		FZ_CHECK(s.slba >= first && (u128)s.slba + s.nblocks <= (u128)first + l->slot_blocks,
			 "layer %u of slot %llu: blocks %llu+%llu outside the slot's %llu+%llu", lay, (unsigned long long)sl,
			 (unsigned long long)s.slba, (unsigned long long)s.nblocks, (unsigned long long)first,
			 (unsigned long long)l->slot_blocks);
	}
}

/* What gio_kv_entry_encode() must answer for these fields. */
static uint32_t entry_model(const struct gio_kv_sb *sb, uint64_t slot, uint32_t state, struct gio_kv_u128 key,
			    uint64_t seq, uint64_t len)
{
	if (slot >= sb->slots)
		return GIO_KV_R_SLOT;
	if (state != GIO_KV_ENTRY_FREE && state != GIO_KV_ENTRY_VALID)
		return GIO_KV_R_STATE;
	if (state == GIO_KV_ENTRY_VALID && seq == 0)
		return GIO_KV_R_SEQ;
	if (len > sb->slot_bytes)
		return GIO_KV_R_LENGTH;
	if (state == GIO_KV_ENTRY_FREE && (key.lo || key.hi || len))
		return GIO_KV_R_FREE_FIELDS;
	return GIO_KV_R_OK;
}

static void check_entry(struct fz_reader *r, const struct gio_kv_sb *sb, uint8_t mode)
{
	const uint8_t emode = fz_u8(r);
	uint64_t slot = fz_u64(r);
	uint8_t buf[GIO_KV_ENTRY_BYTES], keep[GIO_KV_ENTRY_BYTES], again[GIO_KV_ENTRY_BYTES];
	struct gio_kv_entry e, ekeep;
	uint32_t reason = GIO_KV_R_COUNT;
	int rc;
	struct gio_kv_layout l;
	gio_kv_sb_layout(sb, &l);
	if (emode & 1u)
		slot %= sb->slots;
	memset(&ekeep, 0xa5, sizeof(ekeep));
	if (emode & 2u) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = fz_u8(r);
		if (mode & FZ_KV_M_ENTRY_CRC)
			fz_wr32(buf + offsetof(struct gio_kv_entry, crc),
				gio_kv_crc32c(0, buf, offsetof(struct gio_kv_entry, crc)));
	} else {
		const uint32_t state = fz_u16(r);
		struct gio_kv_u128 key;
		uint64_t seq, len;
		uint32_t want;
		key.lo = fz_u64(r);
		key.hi = fz_u64(r);
		seq = fz_u64(r);
		len = fz_u64(r);
		if (emode & 4u) /* the fields a FREE entry must have */
			key.lo = key.hi = len = 0;
		if (emode & 8u)
			len %= sb->slot_bytes + 1;
		want = entry_model(sb, slot, state, key, seq, len);
		memset(buf, 0x3c, sizeof(buf));
		memcpy(keep, buf, sizeof(buf));
		rc = gio_kv_entry_encode(buf, sb, slot, state, key, seq, len, &reason);
		FZ_CHECK(reason == want && rc == (want == GIO_KV_R_OK ? 0 : -EINVAL),
			 "entry encode: rc %d reason %u (%s), model %u (slot %llu of %llu, state %u, seq %llu, length %llu of %llu)",
			 rc, reason, gio_kv_reason_str(reason), want, (unsigned long long)slot, (unsigned long long)sb->slots,
			 state, (unsigned long long)seq, (unsigned long long)len, (unsigned long long)sb->slot_bytes);
		if (rc) {
			FZ_CHECK(!memcmp(buf, keep, sizeof(buf)), "a refused entry encode wrote its buffer");
			return;
		}
		e = ekeep;
		rc = gio_kv_entry_decode(buf, sb, slot, &e, &reason);
		FZ_CHECK(rc == 0 && e.state == state && gio_kv_u128_eq(e.key, key) && e.seq == seq && e.data_len == len &&
				 e.slot == slot,
			 "an encoded entry decodes to rc %d (%s)", rc, gio_kv_reason_str(reason));
	}
	e = ekeep;
	reason = GIO_KV_R_COUNT;
	rc = gio_kv_entry_decode(buf, sb, slot, &e, &reason);
	FZ_CHECK(reason < GIO_KV_R_COUNT, "entry decode: reason %u", reason);
	if (gio__kv_all_zero(buf, sizeof(buf)))
		FZ_CHECK(rc == -ENODATA && reason == GIO_KV_R_BLANK, "a zero entry: rc %d (%s)", rc, gio_kv_reason_str(reason));
	else
		FZ_CHECK(rc == 0 ? reason == GIO_KV_R_OK : rc == -EPROTO && reason != GIO_KV_R_OK && reason != GIO_KV_R_BLANK,
			 "entry decode: rc %d reason %u", rc, reason);
	if (rc) {
		FZ_CHECK(!memcmp(&e, &ekeep, sizeof(e)), "a refused entry decode wrote its output");
		return;
	}
	FZ_CHECK(e.slot == slot && slot < sb->slots && e.device == sb->device_index &&
			 gio_kv_u128_eq(e.store_id, sb->store_id),
		 "an accepted entry of slot %llu names slot %llu, device %u", (unsigned long long)slot,
		 (unsigned long long)e.slot, e.device);
	FZ_CHECK(e.state == GIO_KV_ENTRY_VALID ? e.seq >= 1 : e.state == GIO_KV_ENTRY_FREE && !e.key.lo && !e.key.hi && !e.data_len,
		 "an accepted entry: state %u seq %llu", e.state, (unsigned long long)e.seq);
	FZ_CHECK(e.data_len <= sb->slot_bytes && !e.reserved0 && !e.reserved1, "an accepted entry's length or reserved fields");
	memset(again, 0, sizeof(again));
	FZ_CHECK(gio_kv_entry_encode(again, sb, e.slot, e.state, e.key, e.seq, e.data_len, &reason) == 0 &&
			 !memcmp(again, buf, sizeof(buf)),
		 "an accepted entry does not re-encode to its bytes (%s)", gio_kv_reason_str(reason));
	check_spans(&l, slot, (uint32_t)e.seq);
}

/* The superblock checks against the device and the caller, and a set of stores, by model. */
static void check_sb_against(const struct gio_kv_sb *sb, uint32_t dev_block, uint64_t dev_blocks, uint64_t pool)
{
	uint32_t reason = GIO_KV_R_COUNT, which = 99;
	struct gio_kv_sb set[3];
	int rc = gio_kv_sb_check_device(sb, dev_block, dev_blocks, &reason);
	const uint32_t want = sb->block_bytes != dev_block ? GIO_KV_R_BLOCK_MISMATCH
			      : dev_blocks < sb->store_blocks ? GIO_KV_R_DEVICE_SMALL
							      : GIO_KV_R_OK;
	FZ_CHECK(reason == want && rc == (want ? -EINVAL : 0), "check_device: rc %d reason %u, model %u", rc, reason, want);
	rc = gio_kv_sb_check_shape(sb, sb->layers, sb->object_bytes, pool, &reason);
	FZ_CHECK(rc == (pool == sb->pool_signature ? 0 : -EINVAL) && reason == (rc ? GIO_KV_R_POOL : GIO_KV_R_OK),
		 "check_shape: rc %d reason %u", rc, reason);
	rc = gio_kv_sb_check_shape(sb, sb->layers + 1u, sb->object_bytes, sb->pool_signature, &reason);
	FZ_CHECK(rc == -EINVAL && reason == GIO_KV_R_SHAPE, "check_shape of other layers: rc %d reason %u", rc, reason);
	/* A store of one: whole exactly when it says so. */
	rc = gio_kv_sb_check_set(sb, 1, &reason, &which);
	FZ_CHECK(rc == (sb->device_count == 1 ? 0 : -EINVAL) && which == 0 &&
			 reason == (rc ? GIO_KV_R_DEVICE_COUNT : GIO_KV_R_OK),
		 "check_set of 1 (count %u): rc %d reason %u", sb->device_count, rc, reason);
	/* The same device twice, then its neighbour in a set of the right count. */
	set[0] = set[1] = *sb;
	rc = gio_kv_sb_check_set(set, 2, &reason, &which);
	FZ_CHECK(rc == -EINVAL && ((sb->device_count == 2 && reason == GIO_KV_R_DUP_DEVICE && which == 1) ||
				   (sb->device_count != 2 && reason == GIO_KV_R_DEVICE_COUNT && which == 0)),
		 "check_set of a device twice (count %u): rc %d reason %u which %u", sb->device_count, rc, reason, which);
	set[0].device_count = 3;
	set[1] = set[2] = set[0];
	set[0].device_index = 0;
	set[1].device_index = 2;
	set[2].device_index = 1;
	rc = gio_kv_sb_check_set(set, 3, &reason, &which);
	FZ_CHECK(rc == 0 && reason == GIO_KV_R_OK, "check_set of a whole store of 3: rc %d reason %u", rc, reason);
	set[2].store_id.hi ^= 1u;
	rc = gio_kv_sb_check_set(set, 3, &reason, &which);
	FZ_CHECK(rc == -EINVAL && reason == GIO_KV_R_STORE_ID && which == 2, "check_set with another store's: rc %d reason %u",
		 rc, reason);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_reader r = {data, size};
	const uint8_t mode = fz_u8(&r);
	const uint32_t block = block_size(&r);
	const uint64_t store_bytes = fz_u64(&r);
	uint32_t layers = fz_u32(&r), dev_index, dev_count, reason = GIO_KV_R_COUNT;
	uint64_t object_bytes = fz_u64(&r), pool;
	struct gio_kv_u128 id;
	struct gio_kv_layout lay;
	struct gio_kv_sb sb, made, keep;
	uint8_t bytes[GIO_KV_SB_BYTES], again[GIO_KV_SB_BYTES];
	int rc;
	if (!(mode & FZ_KV_M_RAW_SHAPE)) {
		layers = 1u + layers % 128u;
		object_bytes = 1u + object_bytes % (1u << 24);
	}
	dev_index = fz_u32(&r);
	dev_count = fz_u32(&r);
	if (!(mode & FZ_KV_M_RAW_SHAPE))
		dev_count %= 9u;
	id.lo = fz_u64(&r);
	id.hi = fz_u64(&r);
	pool = fz_u64(&r);

	/* The layout, by model. */
	rc = gio_kv_layout_compute(store_bytes, block, layers, object_bytes, &lay, &reason);
	if (!good_block(block))
		FZ_CHECK(rc == -EINVAL && reason == GIO_KV_R_BLOCK_SIZE, "block size %u: rc %d reason %u", block, rc, reason);
	else if ((u128)layers * object_bytes + block > UINT64_MAX || !layers || !object_bytes)
		FZ_CHECK(rc == -EINVAL && reason == GIO_KV_R_GEOMETRY, "%u x %llu: rc %d reason %u", layers,
			 (unsigned long long)object_bytes, rc, reason);
	else
		FZ_CHECK(rc == 0 ? reason == GIO_KV_R_OK : rc == -ENOSPC && reason == GIO_KV_R_NOSPACE,
			 "layout: rc %d reason %u", rc, reason);
	if (rc) {
		static const struct gio_kv_layout zero;
		FZ_CHECK(!memcmp(&lay, &zero, sizeof(lay)), "a refused layout is not all zero");
		if (rc == -ENOSPC) { /* not even one slot: its entry and data, aligned, pass the end */
			const uint64_t ilba = (GIO_KV_SB_REGION_BYTES + block - 1) / block, align = align_blocks(block);
			const u128 sblocks = ((u128)layers * object_bytes + block - 1) / block;
			FZ_CHECK((ilba + 1 + align - 1) / align * align + sblocks > store_bytes / block,
				 "-ENOSPC where one slot fits: %llu blocks", (unsigned long long)(store_bytes / block));
		}
	} else {
		check_layout(&lay, store_bytes / block, layers, object_bytes);
		memset(&made, 0x77, sizeof(made));
		keep = made;
		rc = gio_kv_sb_init(&made, &lay, id, dev_index, dev_count, pool, &reason);
		if (!id.lo && !id.hi)
			FZ_CHECK(rc == -EINVAL && reason == GIO_KV_R_STORE_ID, "init with id 0: rc %d reason %u", rc, reason);
		else if (dev_index >= dev_count)
			FZ_CHECK(rc == -EINVAL && reason == GIO_KV_R_DEVICE, "init of device %u of %u: rc %d reason %u",
				 dev_index, dev_count, rc, reason);
		else
			FZ_CHECK(rc == 0, "init refused a good layout: rc %d reason %u (%s)", rc, reason, gio_kv_reason_str(reason));
		if (rc) {
			FZ_CHECK(!memcmp(&made, &keep, sizeof(made)), "a refused init wrote its superblock");
		} else {
			check_sb_fields(&made);
			FZ_CHECK(gio_kv_sb_encode(bytes, &made, &reason) == 0, "encode refused init's superblock (%s)",
				 gio_kv_reason_str(reason));
			FZ_CHECK(gio_kv_sb_decode(bytes, &sb, &reason) == 0 &&
					 !memcmp(&sb, &made, offsetof(struct gio_kv_sb, crc)),
				 "init's superblock does not decode to itself (%s)", gio_kv_reason_str(reason));
		}
	}

	/* The superblock's bytes as a device might hold them. */
	if ((mode & FZ_KV_M_SB_MASK) == FZ_KV_M_SB_RAW || rc) {
		for (size_t i = 0; i < sizeof(bytes); i++)
			bytes[i] = (mode & FZ_KV_M_SB_MASK) == FZ_KV_M_SB_RAW ? fz_u8(&r) : 0;
		if (mode & FZ_KV_M_SB_CRC)
			fz_wr32(bytes + offsetof(struct gio_kv_sb, crc), gio_kv_crc32c(0, bytes, offsetof(struct gio_kv_sb, crc)));
	} else {
		uint8_t n = fz_u8(&r) % (FZ_KV_MAX_MUTATIONS + 1u);
		while (n--) {
			const uint8_t at = fz_u8(&r) % (uint8_t)offsetof(struct gio_kv_sb, crc);
			bytes[at] = fz_u8(&r);
		}
		fz_wr32(bytes + offsetof(struct gio_kv_sb, crc), gio_kv_crc32c(0, bytes, offsetof(struct gio_kv_sb, crc)));
	}
	memset(&sb, 0x5a, sizeof(sb));
	keep = sb;
	reason = GIO_KV_R_COUNT;
	rc = gio_kv_sb_decode(bytes, &sb, &reason);
	FZ_CHECK(reason < GIO_KV_R_COUNT, "decode: reason %u", reason);
	if (gio__kv_all_zero(bytes, sizeof(bytes)))
		FZ_CHECK(rc == -ENODATA && reason == GIO_KV_R_BLANK, "zeros: rc %d reason %u", rc, reason);
	else
		FZ_CHECK(rc == 0 ? reason == GIO_KV_R_OK : rc == -EPROTO && reason != GIO_KV_R_OK && reason != GIO_KV_R_BLANK,
			 "decode: rc %d reason %u", rc, reason);
	if (rc) {
		FZ_CHECK(!memcmp(&sb, &keep, sizeof(sb)), "a refused decode wrote its output");
		return 0;
	}
	check_sb_fields(&sb);
	memset(again, 0, sizeof(again));
	FZ_CHECK(gio_kv_sb_encode(again, &sb, &reason) == 0 && !memcmp(again, bytes, sizeof(bytes)),
		 "an accepted superblock does not re-encode to its bytes (%s)", gio_kv_reason_str(reason));
	{
		const uint32_t dev_block = block_size(&r);
		const uint64_t dev_blocks = fz_u64(&r);
		uint8_t n;
		check_sb_against(&sb, dev_block, dev_blocks, pool);
		n = fz_u8(&r) % (FZ_KV_MAX_ENTRIES + 1u);
		while (n--)
			check_entry(&r, &sb, mode);
	}
	return 0;
}
