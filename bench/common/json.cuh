// json.cuh: what the benches' --json writers share.
#ifndef GIOURING_BENCH_COMMON_JSON_CUH
#define GIOURING_BENCH_COMMON_JSON_CUH

#include <cstdio>

// Writes s as a JSON string (quotes and control characters escaped).
static inline void kv_json_string(FILE *f, const char *s)
{
	std::fputc('"', f);
	for (; *s; s++) {
		const unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			std::fprintf(f, "\\%c", c);
		else if (c < 0x20)
			std::fprintf(f, "\\u%04x", c);
		else
			std::fputc(c, f);
	}
	std::fputc('"', f);
}

#endif // GIOURING_BENCH_COMMON_JSON_CUH
