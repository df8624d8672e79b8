/* The bytes of a KV chunk in the QEMU guest programs, made from its key, so that a reader checks
 * a chunk without keeping a copy: a word-wide xorshift (a byte-wide one costs seconds in TCG). */
#ifndef GIOURING_TESTS_QEMU_CHUNK_BYTES_H
#define GIOURING_TESTS_QEMU_CHUNK_BYTES_H

#include <stdint.h>

#include <giouring/kv/format.h>

static inline void gio_test_chunk_bytes(struct gio_kv_u128 key, unsigned char *p, uint64_t len)
{
	uint64_t s = (key.lo * 0x9e3779b97f4a7c15ull) ^ key.hi, i, w = 0;
	for (i = 0; i < len; i++) {
		if ((i & 7) == 0) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			w = s;
		}
		p[i] = (unsigned char)(w >> (8 * (i & 7)));
	}
}

#endif
