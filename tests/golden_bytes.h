// Byte-level comparison for the golden tests of wire and on-device formats (test_wire_golden,
// test_kv_format): a mismatch lists every differing byte, and both buffers in hex.
#ifndef GIO_TESTS_GOLDEN_BYTES_H
#define GIO_TESTS_GOLDEN_BYTES_H

#include <stddef.h>
#include <stdint.h>

#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace golden {

// " 01 02 ... 08 | 09 ...": a bar every 8 bytes, to count offsets by eye.
inline std::string hex(const uint8_t *p, size_t n)
{
	std::ostringstream os;
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		if (i && i % 8 == 0)
			os << " |";
		os << ' ' << digits[p[i] >> 4] << digits[p[i] & 0xf];
	}
	return os.str();
}

// Compares @p n raw bytes with the expected ones; on mismatch lists every differing byte.
inline void check_bytes(const uint8_t *got, const uint8_t *expected, size_t n)
{
	std::ostringstream diffs;
	for (size_t i = 0; i < n; i++)
		if (got[i] != expected[i])
			diffs << "byte " << i << ": got 0x" << hex(&got[i], 1).substr(1) << ", expected 0x"
			      << hex(&expected[i], 1).substr(1) << "\n";
	INFO("got:     " << hex(got, n));
	INFO("expected:" << hex(expected, n));
	INFO(diffs.str());
	CHECK(diffs.str().empty());
}

} // namespace golden

#endif
