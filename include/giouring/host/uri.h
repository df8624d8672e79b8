/**
 * @file giouring/host/uri.h
 * @brief Numbers in target URIs (`size=64G`), parsed one way for every target.
 */
#ifndef GIOURING_HOST_URI_H
#define GIOURING_HOST_URI_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "../config.h"

GIO_EXTERN_C_BEGIN

/**
 * @brief Parses a URI parameter's number: decimal digits, then optionally K, M, G or T
 * (binary multiples: 2^10, 2^20, 2^30, 2^40; either case).
 * @param v    the text.
 * @param out  receives the value; untouched on error.
 * @return 0, `-EINVAL` (no leading digit, or anything after the number and its suffix), or
 *         `-ERANGE` (above 2^64 - 1, suffix included).
 *
 * Any host thread.
 */
GIO_INLINE int gio_uri_number(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x;
	unsigned shift = 0;
	if (!v || *v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno)
		return -ERANGE;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	default: break;
	}
	if (*end)
		return -EINVAL;
	if (shift && (x >> (64 - shift)) != 0)
		return -ERANGE;
	*out = (uint64_t)x << shift;
	return 0;
}

GIO_EXTERN_C_END

#endif /* GIOURING_HOST_URI_H */
