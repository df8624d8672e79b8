// A pool over a host buffer whose dimensions, outermost first, are `order` (letters of LBPNHC): the
// strides of a contiguous tensor of that shape, for the host tests of the staged path.
#ifndef GIOURING_TESTS_KV_CONTIGUOUS_H
#define GIOURING_TESTS_KV_CONTIGUOUS_H

#include <giouring/kv/pool.h>

#include <string>

inline gio_kv_pool kv_contiguous_pool(const std::string &order, const uint32_t ext[GIO_KV_DIMS], uint32_t elem_bytes,
				      uint64_t base)
{
	gio_kv_pool pool{};
	uint64_t s = 1;
	pool.base = base;
	pool.elem_bytes = elem_bytes;
	for (uint32_t d = 0; d < GIO_KV_DIMS; d++)
		pool.extent[d] = ext[d];
	for (size_t i = order.size(); i-- > 0;) {
		const uint32_t d = (uint32_t)std::string("LBPNHC").find(order[i]);
		pool.stride[d] = s;
		s *= ext[d];
	}
	return pool;
}

#endif
