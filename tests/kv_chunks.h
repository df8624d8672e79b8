// The KV tests' chunks: keys, and object bytes that are a function of (chunk, layer, byte), so
// that a test checks any object in the pool without keeping a copy of what it stored.
#ifndef GIOURING_TESTS_KV_CHUNKS_H
#define GIOURING_TESTS_KV_CHUNKS_H

#include <cstdint>

#include <giouring/kv/store.h>

inline gio_kv_u128 kv_chunk_key(uint64_t i)
{
	return gio_kv_u128{0x9e3779b97f4a7c15ull * (i + 1), i ^ 0xabcdefull};
}

// Byte k of chunk i's layer-l object, in the device order of the object (its runs concatenated).
inline unsigned char kv_chunk_byte(uint64_t i, uint32_t l, uint64_t k)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t(l) << 40) ^ (k * 0xbf58476d1ce4e5b9ull);
	x ^= x >> 29;
	return static_cast<unsigned char>(x * 0x94d049bb133111ebull >> 56);
}

#endif
