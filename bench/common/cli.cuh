// cli.cuh: command-line values the benches share.
#ifndef GIOURING_BENCH_COMMON_CLI_CUH
#define GIOURING_BENCH_COMMON_CLI_CUH

#include <errno.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "check.cuh"

// Parses a comma-separated list of whole numbers from lo to hi into out (at most max of them).
// Returns how many, or -1: empty, too many, or a value that is not such a number.
static inline int kv_parse_u32_list(const char *s, long lo, long hi, uint32_t *out, int max)
{
	char buf[256];
	int n = 0;
	kv_fmt(buf, sizeof(buf), "%s", s);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end = NULL;
		errno = 0;
		const long v = std::strtol(t, &end, 10);
		if (n == max || errno || end == t || *end || v < lo || v > hi)
			return -1;
		out[n++] = (uint32_t)v;
	}
	return n ? n : -1;
}

#endif // GIOURING_BENCH_COMMON_CLI_CUH
