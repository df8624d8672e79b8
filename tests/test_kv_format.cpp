// The KV store's on-device format (giouring/kv/format.h): CRC32C, layout arithmetic, superblock
// and index entry encoding, and every check a reopen relies on.
//
// The golden bytes below were written by hand from the field table of docs/store-format.md
// (little-endian, offsets in the comments), not from the header's structs; their CRCs come from
// a bitwise CRC32C written separately in this file.

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <giouring/kv/format.h>

#include "golden_bytes.h"

namespace {

// Bit at a time, straight from the definition: the reference the table-driven one is held to.
uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1u) ? 0x82f63b78u : 0u);
	}
	return ~c;
}

using golden::check_bytes;

void put(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

const gio_kv_u128 kStore = {0x0123456789abcdefull, 0xfedcba9876543210ull};
const gio_kv_u128 kKey = {0xa0a1a2a3a4a5a6a7ull, 0xb0b1b2b3b4b5b6b7ull};
const gio_kv_u128 kZero = {0, 0};
const uint64_t kPool = 0x1122334455667788ull;

// 1 GiB of 4 KiB blocks, 32 layers of 64 KiB: 2 MiB slots (512 blocks). index_lba 1; each slot
// costs 513 blocks, so at most (262144 - 1) / 513 = 511; data at align_up(1 + 511, 16) = 512,
// ending at 512 + 511 * 512 = 262144, the last block.
gio_kv_sb golden_sb()
{
	gio_kv_layout lay;
	uint32_t reason = 99;
	REQUIRE(gio_kv_layout_compute(1ull << 30, 4096, 32, 65536, &lay, &reason) == 0);
	CHECK(reason == GIO_KV_R_OK);
	gio_kv_sb sb;
	REQUIRE(gio_kv_sb_init(&sb, &lay, kStore, 2, 4, kPool, &reason) == 0);
	return sb;
}

// A copy of an encoded superblock or entry with one field changed and its CRC made right again:
// what a writer with a bug (or a later format) could produce, to reach the checks behind the CRC.
template <size_t N> void recrc(uint8_t (&b)[N])
{
	put(b + N - 4, crc32c_bitwise(b, N - 4), 4);
}

struct FieldCase {
	const char *what;
	size_t off;
	int bytes;
	uint64_t value;
	uint32_t reason; // GIO_KV_R_OK: still accepted
};

// Each case: the good bytes with one field set to a value and the CRC made right again, decoded.
template <size_t N, size_t M, typename Decode>
void check_fields(const uint8_t (&good)[N], const FieldCase (&cases)[M], Decode decode)
{
	for (const FieldCase &c : cases) {
		uint8_t bad[N];
		memcpy(bad, good, N);
		put(bad + c.off, c.value, c.bytes);
		recrc(bad);
		uint32_t reason = 99;
		INFO(c.what);
		CHECK(decode(bad, &reason) == (c.reason == GIO_KV_R_OK ? 0 : -EPROTO));
		CHECK(reason == c.reason);
	}
}

// Brute force: the largest s that fits, by trying each in turn.
uint64_t slots_brute(uint64_t store_bytes, uint32_t b, uint32_t layers, uint64_t obj)
{
	const uint64_t nb = store_bytes / b, ilba = (4096 + b - 1) / b;
	const uint64_t sblocks = (layers * obj + b - 1) / b;
	const uint64_t align = b >= 65536 ? 1 : 65536 / b;
	uint64_t best = 0;
	for (uint64_t s = 1;; s++) {
		const uint64_t data = (ilba + s + align - 1) / align * align;
		if (data + s * sblocks > nb)
			break;
		best = s;
	}
	return best;
}

} // namespace

TEST_CASE("kv format: CRC32C matches the known vectors and chains")
{
	CHECK(gio_kv_crc32c(0, "123456789", 9) == 0xe3069283u);
	CHECK(gio_kv_crc32c(0, "", 0) == 0u);
	// iSCSI's test vectors (32 bytes each): zeros, ones, incrementing, decrementing.
	uint8_t v[32];
	memset(v, 0, sizeof(v));
	CHECK(gio_kv_crc32c(0, v, 32) == 0x8a9136aau);
	memset(v, 0xff, sizeof(v));
	CHECK(gio_kv_crc32c(0, v, 32) == 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		v[i] = (uint8_t)i;
	CHECK(gio_kv_crc32c(0, v, 32) == 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		v[i] = (uint8_t)(31 - i);
	CHECK(gio_kv_crc32c(0, v, 32) == 0x113fdb5cu);

	std::mt19937_64 rng(7);
	std::vector<uint8_t> buf(4096);
	for (auto &x : buf)
		x = (uint8_t)rng();
	for (int t = 0; t < 200; t++) {
		const size_t n = rng() % buf.size(), cut = n ? rng() % n : 0;
		const uint32_t whole = gio_kv_crc32c(0, buf.data(), n);
		CHECK(whole == crc32c_bitwise(buf.data(), n));
		CHECK(gio_kv_crc32c(gio_kv_crc32c(0, buf.data(), cut), buf.data() + cut, n - cut) == whole);
	}
}

TEST_CASE("kv format: every reason has its own name")
{
	std::set<std::string> names;
	for (uint32_t r = 0; r < GIO_KV_R_COUNT; r++) {
		const std::string s = gio_kv_reason_str(r);
		INFO("reason " << r << ": " << s);
		CHECK(s != "unknown reason");
		CHECK(names.insert(s).second);
	}
	CHECK(std::string(gio_kv_reason_str(GIO_KV_R_COUNT)) == "unknown reason");
	CHECK(std::string(gio_kv_reason_str(GIO_KV_R_CRC)) == "CRC mismatch");
}

TEST_CASE("kv format: layout of a 1 GiB device of 4 KiB blocks")
{
	gio_kv_layout l;
	REQUIRE(gio_kv_layout_compute(1ull << 30, 4096, 32, 65536, &l, nullptr) == 0);
	CHECK(l.block_bytes == 4096);
	CHECK(l.layers == 32);
	CHECK(l.object_bytes == 65536);
	CHECK(l.slot_bytes == 2u << 20);
	CHECK(l.slot_blocks == 512);
	CHECK(l.slots == 511);
	CHECK(l.index_lba == 1);
	CHECK(l.data_lba == 512);
	CHECK(l.store_blocks == 262144);
	CHECK(gio_kv_entry_lba(&l, 0) == 1);
	CHECK(gio_kv_entry_lba(&l, 510) == 511);
	CHECK(gio_kv_slot_lba(&l, 0) == 512);
	CHECK(gio_kv_slot_lba(&l, 510) == 512 + 510 * 512);
	CHECK(gio_kv_slot_lba(&l, 510) + l.slot_blocks == l.store_blocks); // the last block is used
	CHECK(gio_kv_slot_offset(&l, 3) == (512ull + 3 * 512) * 4096);
	CHECK(gio_kv_layer_offset(&l, 0) == 0);
	CHECK(gio_kv_layer_offset(&l, 31) == 31ull * 65536);
}

TEST_CASE("kv format: layout of 512-byte blocks with objects that are not whole blocks")
{
	// 3 layers of 1000 bytes: 3000 -> 3072 bytes, 6 blocks a slot. index_lba 8 (4096 / 512),
	// data aligned to 65536 / 512 = 128 blocks. 1 MiB = 2048 blocks: at most (2048 - 8) / 7 = 291;
	// 291: data at align_up(299, 128) = 384, + 1746 = 2130 > 2048; 277: align_up(285) = 384,
	// + 1662 = 2046 fits; 278: 384 + 1668 = 2052 does not.
	gio_kv_layout l;
	REQUIRE(gio_kv_layout_compute(1u << 20, 512, 3, 1000, &l, nullptr) == 0);
	CHECK(l.slot_bytes == 3072);
	CHECK(l.slot_blocks == 6);
	CHECK(l.index_lba == 8);
	CHECK(l.slots == 277);
	CHECK(l.data_lba == 384);
	CHECK(l.store_blocks == 2048);

	gio_kv_span sp;
	REQUIRE(gio_kv_layer_span(&l, 0, 0, &sp) == 0);
	CHECK(sp.slba == 384);
	CHECK(sp.nblocks == 2);
	CHECK(sp.head == 0);
	CHECK(sp.tail == 24);
	REQUIRE(gio_kv_layer_span(&l, 2, 1, &sp) == 0); // bytes 1000-1999 of slot 2
	CHECK(sp.slba == 384 + 12 + 1);
	CHECK(sp.nblocks == 3); // blocks 1-3: bytes 512-2047
	CHECK(sp.head == 488);
	CHECK(sp.tail == 48);
	REQUIRE(gio_kv_layer_span(&l, 276, 2, &sp) == 0); // bytes 2000-2999
	CHECK(sp.slba == 384 + 276 * 6 + 3);
	CHECK(sp.nblocks == 3); // blocks 3-5: bytes 1536-3071
	CHECK(sp.head == 464);
	CHECK(sp.tail == 72);
	CHECK(gio_kv_layer_span(&l, 277, 0, &sp) == -EINVAL);
	CHECK(gio_kv_layer_span(&l, 0, 3, &sp) == -EINVAL);
}

TEST_CASE("kv format: layout edge cases: one slot, zero slots, large blocks, large devices")
{
	gio_kv_layout l;
	uint32_t reason = 0;
	// One 4 KiB object a slot: sb 1 block, entry 1, data at 16: one slot needs 17 blocks, two 18.
	REQUIRE(gio_kv_layout_compute(17 * 4096, 4096, 1, 4096, &l, &reason) == 0);
	CHECK(l.slots == 1);
	CHECK(l.data_lba == 16);
	REQUIRE(gio_kv_layout_compute(18 * 4096 - 1, 4096, 1, 4096, &l, nullptr) == 0);
	CHECK(l.slots == 1); // a partial block is not used
	REQUIRE(gio_kv_layout_compute(18 * 4096, 4096, 1, 4096, &l, nullptr) == 0);
	CHECK(l.slots == 2);
	CHECK(gio_kv_layout_compute(17 * 4096 - 1, 4096, 1, 4096, &l, &reason) == -ENOSPC);
	CHECK(reason == GIO_KV_R_NOSPACE);
	CHECK(l.slots == 0); // zeroed on error, not left as the last call's
	CHECK(l.block_bytes == 0);
	CHECK(gio_kv_layout_compute(0, 4096, 1, 4096, &l, &reason) == -ENOSPC);
	CHECK(gio_kv_layout_compute(4096, 4096, 1, 4096, &l, &reason) == -ENOSPC);
	// A slot larger than the device.
	CHECK(gio_kv_layout_compute(1u << 20, 4096, 32, 1u << 20, &l, &reason) == -ENOSPC);

	// 64 KiB blocks: the superblock region is one block, no extra alignment.
	REQUIRE(gio_kv_layout_compute(10 * 65536, 65536, 2, 65536, &l, nullptr) == 0);
	CHECK(l.index_lba == 1);
	CHECK(l.slot_blocks == 2);
	CHECK(l.slots == 3); // 1 + 3 + 3 * 2 = 10
	CHECK(l.data_lba == 4);

	// 8 TiB of 512-byte blocks (2^34), 2 MiB slots (4096 blocks): at most (2^34 - 8) / 4097 =
	// 4193280 slots, data at align_up(8 + 4193280, 128) = 4193408, ending 896 blocks short of the
	// end (4193408 + 4193280 * 4096 = 17179868288); one more slot would need 4096.
	REQUIRE(gio_kv_layout_compute(8ull << 40, 512, 32, 65536, &l, nullptr) == 0);
	CHECK(l.store_blocks == (1ull << 34));
	CHECK(l.slots == 4193280);
	CHECK(l.data_lba == 4193408);
	CHECK(l.data_lba + l.slots * l.slot_blocks == 17179868288ull);

	// Refusals.
	CHECK(gio_kv_layout_compute(1u << 30, 256, 1, 4096, &l, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_BLOCK_SIZE);
	CHECK(gio_kv_layout_compute(1u << 30, 131072, 1, 4096, &l, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_BLOCK_SIZE);
	CHECK(gio_kv_layout_compute(1u << 30, 3000, 1, 4096, &l, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_BLOCK_SIZE);
	CHECK(gio_kv_layout_compute(1u << 30, 4096, 0, 4096, &l, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_GEOMETRY);
	CHECK(gio_kv_layout_compute(1u << 30, 4096, 1, 0, &l, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_GEOMETRY);
	CHECK(gio_kv_layout_compute(1u << 30, 4096, 2, UINT64_MAX / 2, &l, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_GEOMETRY);
}

TEST_CASE("kv format: the layout is the largest that fits, for many sizes")
{
	std::mt19937_64 rng(11);
	const uint32_t blocks[] = {512, 1024, 4096, 8192, 65536};
	for (int t = 0; t < 3000; t++) {
		const uint32_t b = blocks[rng() % 5];
		const uint32_t layers = 1 + (uint32_t)(rng() % 8);
		const uint64_t obj = 1 + rng() % (3 * (uint64_t)b);
		const uint64_t store = rng() % (2ull << 20) + (t % 7 == 0 ? 0 : 64 * (uint64_t)b);
		gio_kv_layout l;
		uint32_t reason = 99;
		const int rc = gio_kv_layout_compute(store, b, layers, obj, &l, &reason);
		const uint64_t want = slots_brute(store, b, layers, obj);
		INFO("store " << store << " block " << b << " layers " << layers << " object " << obj);
		if (want == 0) {
			CHECK(rc == -ENOSPC);
			CHECK(reason == GIO_KV_R_NOSPACE);
			continue;
		}
		REQUIRE(rc == 0);
		CHECK(l.slots == want);
		CHECK(l.slot_bytes % b == 0);
		CHECK(l.slot_bytes >= layers * obj);
		CHECK(l.slot_bytes < layers * obj + b);
		CHECK(l.index_lba * b >= 4096);
		CHECK(l.data_lba >= l.index_lba + l.slots);         // regions do not overlap
		CHECK(l.data_lba * b % (b > 65536 ? b : 65536) == 0); // data aligned
		CHECK(l.data_lba + l.slots * l.slot_blocks <= l.store_blocks);
	}
}

TEST_CASE("kv format: superblock golden bytes")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t got[128], want[128];
	memset(got, 0xee, sizeof(got));
	uint32_t reason = 99;
	REQUIRE(gio_kv_sb_encode(got, &sb, &reason) == 0);
	CHECK(reason == GIO_KV_R_OK);

	memset(want, 0, sizeof(want));
	memcpy(want + 0, "GIOKVST\0", 8);       // magic
	put(want + 8, 1, 4);                   // version
	put(want + 12, 4096, 4);               // block_bytes
	put(want + 16, 0x0123456789abcdefull, 8); // store_id low
	put(want + 24, 0xfedcba9876543210ull, 8); // store_id high
	put(want + 32, 2, 4);                  // device_index
	put(want + 36, 4, 4);                  // device_count
	put(want + 40, 32, 4);                 // layers; 44-47 reserved
	put(want + 48, 65536, 8);              // object_bytes
	put(want + 56, 2u << 20, 8);           // slot_bytes
	put(want + 64, kPool, 8);              // pool_signature
	put(want + 72, 511, 8);                // slots
	put(want + 80, 1, 8);                  // index_lba
	put(want + 88, 512, 8);                // data_lba
	put(want + 96, 262144, 8);             // store_blocks; 104-123 reserved
	put(want + 124, 0x69ba3bd1u, 4);       // CRC32C of bytes 0-123
	CHECK(crc32c_bitwise(want, 124) == 0x69ba3bd1u);
	check_bytes(got, want, 128);

	gio_kv_sb back;
	REQUIRE(gio_kv_sb_decode(want, &back, &reason) == 0);
	CHECK(reason == GIO_KV_R_OK);
	CHECK(memcmp(&back, want, sizeof(back)) == 0);
	gio_kv_layout l;
	gio_kv_sb_layout(&back, &l);
	CHECK(l.slots == 511);
	CHECK(l.slot_blocks == 512);
	CHECK(l.data_lba == 512);
}

TEST_CASE("kv format: index entry golden bytes")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t got[80], want[80];
	memset(got, 0xee, sizeof(got));
	uint32_t reason = 99;
	REQUIRE(gio_kv_entry_encode(got, &sb, 7, GIO_KV_ENTRY_VALID, kKey, 0x1234, 2u << 20, &reason) == 0);
	CHECK(reason == GIO_KV_R_OK);

	memset(want, 0, sizeof(want));
	memcpy(want + 0, "GKVE", 4);            // magic
	put(want + 4, 1, 2);                    // version
	put(want + 6, 1, 2);                    // state VALID
	put(want + 8, 2, 4);                    // device; 12-15 reserved
	put(want + 16, 0x0123456789abcdefull, 8); // store_id
	put(want + 24, 0xfedcba9876543210ull, 8);
	put(want + 32, 0xa0a1a2a3a4a5a6a7ull, 8); // key
	put(want + 40, 0xb0b1b2b3b4b5b6b7ull, 8);
	put(want + 48, 7, 8);                   // slot
	put(want + 56, 0x1234, 8);              // seq
	put(want + 64, 2u << 20, 8);            // data_len; 72-75 reserved
	put(want + 76, 0x8e9b0bb3u, 4);         // CRC32C of bytes 0-75
	CHECK(crc32c_bitwise(want, 76) == 0x8e9b0bb3u);
	check_bytes(got, want, 80);

	gio_kv_entry e;
	REQUIRE(gio_kv_entry_decode(want, &sb, 7, &e, &reason) == 0);
	CHECK(e.state == GIO_KV_ENTRY_VALID);
	CHECK(gio_kv_u128_eq(e.key, kKey));
	CHECK(e.slot == 7);
	CHECK(e.seq == 0x1234);
	CHECK(e.data_len == (2u << 20));
	CHECK(e.device == 2);
}

TEST_CASE("kv format: superblock round trips for several devices and block sizes")
{
	const uint32_t blocks[] = {512, 4096, 65536};
	for (uint32_t b : blocks)
		for (uint32_t d = 0; d < 3; d++) {
			gio_kv_layout l;
			REQUIRE(gio_kv_layout_compute((64ull << 20) + d * 12345, b, 5, 3 * 4096 + 7, &l, nullptr) == 0);
			gio_kv_sb sb, back;
			REQUIRE(gio_kv_sb_init(&sb, &l, kStore, d, 3, kPool + d, nullptr) == 0);
			uint8_t buf[128];
			REQUIRE(gio_kv_sb_encode(buf, &sb, nullptr) == 0);
			REQUIRE(gio_kv_sb_decode(buf, &back, nullptr) == 0);
			gio_kv_layout l2;
			gio_kv_sb_layout(&back, &l2);
			CHECK(memcmp(&l, &l2, sizeof(l)) == 0);
			CHECK(back.device_index == d);
			CHECK(back.device_count == 3);
			CHECK(back.pool_signature == kPool + d);
			CHECK(gio_kv_u128_eq(back.store_id, kStore));
		}
}

TEST_CASE("kv format: every damaged superblock byte is refused")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t good[128];
	REQUIRE(gio_kv_sb_encode(good, &sb, nullptr) == 0);
	const uint8_t flips[] = {0x01, 0x10, 0x80, 0xff};
	for (size_t i = 0; i < sizeof(good); i++)
		for (uint8_t f : flips) {
			uint8_t bad[128];
			memcpy(bad, good, sizeof(bad));
			bad[i] ^= f;
			gio_kv_sb out;
			memset(&out, 0x5a, sizeof(out));
			uint32_t reason = GIO_KV_R_OK;
			INFO("byte " << i << " xor " << (int)f);
			CHECK(gio_kv_sb_decode(bad, &out, &reason) == -EPROTO);
			CHECK(reason != GIO_KV_R_OK);
			if (i >= 8 && i < 12)
				CHECK(reason == GIO_KV_R_VERSION);
			else if (i < 8)
				CHECK(reason == GIO_KV_R_MAGIC);
			else
				CHECK(reason == GIO_KV_R_CRC);
			const uint8_t *o = reinterpret_cast<const uint8_t *>(&out);
			CHECK(o[0] == 0x5a); // untouched
		}
	uint8_t zero[128] = {0};
	uint32_t reason = 0;
	gio_kv_sb out;
	CHECK(gio_kv_sb_decode(zero, &out, &reason) == -ENODATA);
	CHECK(reason == GIO_KV_R_BLANK);
}

TEST_CASE("kv format: superblock fields behind a right CRC are checked")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t good[128];
	REQUIRE(gio_kv_sb_encode(good, &sb, nullptr) == 0);
	const FieldCase cases[] = {
		{"block size not a power of two", 12, 4, 3000, GIO_KV_R_BLOCK_SIZE},
		{"block size 256", 12, 4, 256, GIO_KV_R_BLOCK_SIZE},
		{"block size 0", 12, 4, 0, GIO_KV_R_BLOCK_SIZE},
		{"block size 512 (layout differs)", 12, 4, 512, GIO_KV_R_LAYOUT},
		{"store id zero", 16, 8, 0, GIO_KV_R_OK}, // high half still set: fine
		{"device index = count", 32, 4, 4, GIO_KV_R_DEVICE},
		{"device count 0", 36, 4, 0, GIO_KV_R_DEVICE},
		{"layers 0", 40, 4, 0, GIO_KV_R_GEOMETRY},
		{"layers 33", 40, 4, 33, GIO_KV_R_LAYOUT},
		{"reserved0", 44, 4, 1, GIO_KV_R_RESERVED},
		{"object bytes 0", 48, 8, 0, GIO_KV_R_GEOMETRY},
		{"slot bytes", 56, 8, 4u << 20, GIO_KV_R_LAYOUT},
		{"slots + 1", 72, 8, 512, GIO_KV_R_LAYOUT},
		{"slots - 1", 72, 8, 510, GIO_KV_R_LAYOUT},
		{"index lba", 80, 8, 2, GIO_KV_R_LAYOUT},
		{"data lba", 88, 8, 513, GIO_KV_R_LAYOUT},
		{"store blocks - 1 (510 slots fit)", 96, 8, 262143, GIO_KV_R_LAYOUT},
		{"store blocks + 1 (the same layout)", 96, 8, 262145, GIO_KV_R_OK},
		{"store blocks huge", 96, 8, UINT64_MAX / 1024, GIO_KV_R_LAYOUT},
		{"reserved1", 110, 1, 1, GIO_KV_R_RESERVED},
		{"pool signature (any value)", 64, 8, 42, GIO_KV_R_OK},
	};
	check_fields(good, cases, [](const uint8_t *b, uint32_t *reason) {
		gio_kv_sb out;
		return gio_kv_sb_decode(b, &out, reason);
	});
	uint8_t bad[128];
	memcpy(bad, good, sizeof(bad));
	put(bad + 16, 0, 8);
	put(bad + 24, 0, 8);
	recrc(bad);
	gio_kv_sb out;
	uint32_t reason = 0;
	CHECK(gio_kv_sb_decode(bad, &out, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_STORE_ID);
	// A later version is named as such, whatever its CRC.
	memcpy(bad, good, sizeof(bad));
	put(bad + 8, 2, 4);
	recrc(bad);
	CHECK(gio_kv_sb_decode(bad, &out, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_VERSION);
}

TEST_CASE("kv format: superblock init and encode refuse bad fields")
{
	gio_kv_layout l;
	REQUIRE(gio_kv_layout_compute(1ull << 30, 4096, 32, 65536, &l, nullptr) == 0);
	gio_kv_sb sb;
	memset(&sb, 0x5a, sizeof(sb));
	uint32_t reason = 0;
	CHECK(gio_kv_sb_init(&sb, &l, kZero, 0, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_STORE_ID);
	CHECK(reinterpret_cast<const uint8_t *>(&sb)[0] == 0x5a);
	CHECK(gio_kv_sb_init(&sb, &l, kStore, 1, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_DEVICE);
	CHECK(gio_kv_sb_init(&sb, &l, kStore, 0, 0, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_DEVICE);
	gio_kv_layout wrong = l;
	wrong.slots++;
	CHECK(gio_kv_sb_init(&sb, &wrong, kStore, 0, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_LAYOUT);
	wrong = l;
	wrong.block_bytes = 1000;
	CHECK(gio_kv_sb_init(&sb, &wrong, kStore, 0, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_BLOCK_SIZE);

	REQUIRE(gio_kv_sb_init(&sb, &l, kStore, 0, 1, 0, &reason) == 0);
	uint8_t buf[128];
	memset(buf, 0x77, sizeof(buf));
	gio_kv_sb b = sb;
	b.magic ^= 1;
	CHECK(gio_kv_sb_encode(buf, &b, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_MAGIC);
	b = sb;
	b.version = 2;
	CHECK(gio_kv_sb_encode(buf, &b, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_VERSION);
	b = sb;
	b.reserved1[3] = 1;
	CHECK(gio_kv_sb_encode(buf, &b, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_RESERVED);
	b = sb;
	b.data_lba++;
	CHECK(gio_kv_sb_encode(buf, &b, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_LAYOUT);
	CHECK(buf[0] == 0x77); // untouched
}

TEST_CASE("kv format: a superblock is checked against its device and the caller's chunks")
{
	const gio_kv_sb sb = golden_sb();
	uint32_t reason = 99;
	CHECK(gio_kv_sb_check_device(&sb, 4096, 262144, &reason) == 0);
	CHECK(reason == GIO_KV_R_OK);
	CHECK(gio_kv_sb_check_device(&sb, 4096, 1ull << 40, &reason) == 0); // a grown device: the rest unused
	CHECK(gio_kv_sb_check_device(&sb, 4096, 262143, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_DEVICE_SMALL);
	CHECK(gio_kv_sb_check_device(&sb, 512, 262144 * 8, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_BLOCK_MISMATCH);

	CHECK(gio_kv_sb_check_shape(&sb, 32, 65536, kPool, &reason) == 0);
	CHECK(gio_kv_sb_check_shape(&sb, 31, 65536, kPool, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_SHAPE);
	CHECK(gio_kv_sb_check_shape(&sb, 32, 32768, kPool, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_SHAPE);
	CHECK(gio_kv_sb_check_shape(&sb, 32, 65536, kPool + 1, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_POOL);
}

TEST_CASE("kv format: the superblocks of a store's devices agree")
{
	// Four devices of different sizes and block sizes, handed over out of order.
	const uint64_t sizes[] = {1ull << 30, 3ull << 29, 1ull << 31, 1ull << 30};
	const uint32_t blocks[] = {4096, 512, 4096, 8192};
	gio_kv_sb sbs[4];
	const uint32_t order[] = {2, 0, 3, 1};
	for (int i = 0; i < 4; i++) {
		const uint32_t d = order[i];
		gio_kv_layout l;
		REQUIRE(gio_kv_layout_compute(sizes[d], blocks[d], 32, 65536, &l, nullptr) == 0);
		REQUIRE(gio_kv_sb_init(&sbs[i], &l, kStore, d, 4, kPool, nullptr) == 0);
	}
	uint32_t reason = 99, which = 99;
	CHECK(gio_kv_sb_check_set(sbs, 4, &reason, &which) == 0);
	CHECK(reason == GIO_KV_R_OK);
	CHECK(sbs[1].slots != sbs[0].slots); // they may differ

	CHECK(gio_kv_sb_check_set(sbs, 3, &reason, &which) == -EINVAL); // one missing
	CHECK(reason == GIO_KV_R_DEVICE_COUNT);
	CHECK(which == 0);
	CHECK(gio_kv_sb_check_set(sbs, 0, &reason, &which) == -EINVAL);
	CHECK(reason == GIO_KV_R_DEVICE_COUNT);

	// One device's superblock spoiled at a time: which one, and why, must come back.
	struct SetCase {
		const char *what;
		uint32_t which;
		uint32_t reason;
		void (*spoil)(gio_kv_sb *bad);
	};
	const SetCase cases[] = {
		{"index of another device", 3, GIO_KV_R_DUP_DEVICE, [](gio_kv_sb *b) { b[3].device_index = b[1].device_index; }},
		{"another store", 2, GIO_KV_R_STORE_ID, [](gio_kv_sb *b) { b[2].store_id.hi ^= 1; }},
		{"other objects", 1, GIO_KV_R_SHAPE, [](gio_kv_sb *b) { b[1].object_bytes = 32768; }},
		{"other pool", 3, GIO_KV_R_POOL, [](gio_kv_sb *b) { b[3].pool_signature = 1; }},
		{"other count", 2, GIO_KV_R_DEVICE_COUNT, [](gio_kv_sb *b) { b[2].device_count = 5; }},
	};
	for (const SetCase &c : cases) {
		gio_kv_sb bad[4];
		memcpy(bad, sbs, sizeof(bad));
		c.spoil(bad);
		INFO(c.what);
		CHECK(gio_kv_sb_check_set(bad, 4, &reason, &which) == -EINVAL);
		CHECK(reason == c.reason);
		CHECK(which == c.which);
	}
}

TEST_CASE("kv format: entry round trips and the slot, device and store it names")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t buf[80];
	gio_kv_entry e;
	uint32_t reason = 99;
	REQUIRE(gio_kv_entry_encode(buf, &sb, 0, GIO_KV_ENTRY_FREE, kZero, 0, 0, &reason) == 0);
	REQUIRE(gio_kv_entry_decode(buf, &sb, 0, &e, &reason) == 0);
	CHECK(e.state == GIO_KV_ENTRY_FREE);
	CHECK(e.seq == 0);
	REQUIRE(gio_kv_entry_encode(buf, &sb, 510, GIO_KV_ENTRY_VALID, kKey, UINT64_MAX, 0, &reason) == 0);
	REQUIRE(gio_kv_entry_decode(buf, &sb, 510, &e, &reason) == 0);
	CHECK(e.seq == UINT64_MAX);
	CHECK(e.data_len == 0);

	// The same bytes at another position, on another device, or of another store are refused.
	CHECK(gio_kv_entry_decode(buf, &sb, 509, &e, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_SLOT);
	gio_kv_sb other = sb;
	other.device_index = 1;
	CHECK(gio_kv_entry_decode(buf, &other, 510, &e, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_DEVICE);
	other = sb;
	other.store_id.lo++;
	CHECK(gio_kv_entry_decode(buf, &other, 510, &e, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_STORE_ID);
	other = sb;
	other.slots = 510; // a smaller store over the same blocks
	CHECK(gio_kv_entry_decode(buf, &other, 510, &e, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_SLOT);
	other = sb;
	other.slot_bytes = 4096;
	REQUIRE(gio_kv_entry_encode(buf, &sb, 3, GIO_KV_ENTRY_VALID, kKey, 5, 8192, &reason) == 0);
	CHECK(gio_kv_entry_decode(buf, &other, 3, &e, &reason) == -EPROTO);
	CHECK(reason == GIO_KV_R_LENGTH);

	uint8_t zero[80] = {0};
	CHECK(gio_kv_entry_decode(zero, &sb, 3, &e, &reason) == -ENODATA);
	CHECK(reason == GIO_KV_R_BLANK);
}

TEST_CASE("kv format: entry encode refuses bad fields")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t buf[80];
	memset(buf, 0x77, sizeof(buf));
	uint32_t reason = 0;
	CHECK(gio_kv_entry_encode(buf, &sb, 511, GIO_KV_ENTRY_VALID, kKey, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_SLOT);
	CHECK(gio_kv_entry_encode(buf, &sb, 0, 2, kKey, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_STATE);
	CHECK(gio_kv_entry_encode(buf, &sb, 0, GIO_KV_ENTRY_VALID, kKey, 0, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_SEQ);
	CHECK(gio_kv_entry_encode(buf, &sb, 0, GIO_KV_ENTRY_VALID, kKey, 1, (2u << 20) + 1, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_LENGTH);
	CHECK(gio_kv_entry_encode(buf, &sb, 0, GIO_KV_ENTRY_FREE, kKey, 1, 0, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_FREE_FIELDS);
	CHECK(gio_kv_entry_encode(buf, &sb, 0, GIO_KV_ENTRY_FREE, kZero, 1, 4096, &reason) == -EINVAL);
	CHECK(reason == GIO_KV_R_FREE_FIELDS);
	CHECK(buf[0] == 0x77);
	CHECK(gio_kv_entry_encode(buf, &sb, 0, GIO_KV_ENTRY_VALID, kKey, 1, 2u << 20, &reason) == 0);
}

TEST_CASE("kv format: every damaged entry byte is refused")
{
	const gio_kv_sb sb = golden_sb();
	for (uint32_t state : {GIO_KV_ENTRY_VALID, GIO_KV_ENTRY_FREE}) {
		uint8_t good[80];
		const gio_kv_u128 key = state == GIO_KV_ENTRY_VALID ? kKey : kZero;
		REQUIRE(gio_kv_entry_encode(good, &sb, 7, state, key, 0x1234, state == GIO_KV_ENTRY_VALID ? 100 : 0,
					    nullptr) == 0);
		const uint8_t flips[] = {0x01, 0x08, 0x80, 0xff};
		for (size_t i = 0; i < sizeof(good); i++)
			for (uint8_t f : flips) {
				uint8_t bad[80];
				memcpy(bad, good, sizeof(bad));
				bad[i] ^= f;
				gio_kv_entry out;
				uint32_t reason = GIO_KV_R_OK;
				INFO("state " << state << " byte " << i << " xor " << (int)f);
				CHECK(gio_kv_entry_decode(bad, &sb, 7, &out, &reason) == -EPROTO);
				if (i < 4)
					CHECK(reason == GIO_KV_R_MAGIC);
				else if (i < 6)
					CHECK(reason == GIO_KV_R_VERSION);
				else
					CHECK(reason == GIO_KV_R_CRC);
			}
	}
}

TEST_CASE("kv format: entry fields behind a right CRC are checked")
{
	const gio_kv_sb sb = golden_sb();
	uint8_t good[80];
	REQUIRE(gio_kv_entry_encode(good, &sb, 7, GIO_KV_ENTRY_VALID, kKey, 0x1234, 100, nullptr) == 0);
	const FieldCase cases[] = {
		{"state 2", 6, 2, 2, GIO_KV_R_STATE},
		{"state FREE with a key", 6, 2, 0, GIO_KV_R_FREE_FIELDS},
		{"device", 8, 4, 3, GIO_KV_R_DEVICE},
		{"reserved0", 12, 4, 1, GIO_KV_R_RESERVED},
		{"store id", 16, 8, 1, GIO_KV_R_STORE_ID},
		{"slot", 48, 8, 8, GIO_KV_R_SLOT},
		{"seq 0", 56, 8, 0, GIO_KV_R_SEQ},
		{"data length", 64, 8, (2u << 20) + 1, GIO_KV_R_LENGTH},
		{"data length = slot", 64, 8, 2u << 20, GIO_KV_R_OK},
		{"reserved1", 72, 4, 1, GIO_KV_R_RESERVED},
	};
	check_fields(good, cases, [&sb](const uint8_t *b, uint32_t *reason) {
		gio_kv_entry out;
		return gio_kv_entry_decode(b, &sb, 7, &out, reason);
	});
}
