// A plan of one request on one device, 2 layers of 2 blocks (callers widen it), for tests of the per-command calls
// (GIO_HD: the GPU test builds it on the device too).
#ifndef GIOURING_TESTS_KV_ONE_REQUEST_H
#define GIOURING_TESTS_KV_ONE_REQUEST_H

#include <giouring/kv/io.h>

GIO_HD gio_kv_io_plan kv_one_request_plan(const gio_kv_io_dev *dev, const gio_kv_io_req *req, uint64_t object_bytes)
{
	gio_kv_io_plan p = {};
	p.devs = dev;
	p.reqs = req;
	p.ndevs = 1;
	p.nreqs = 1;
	p.layers = 2;
	p.blocks = 2;
	p.object_bytes = object_bytes;
	return p;
}

#endif
