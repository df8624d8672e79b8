// The package's torch ops, registered through PyTorch's stable ABI (torch/csrc/stable: the
// STABLE_TORCH_LIBRARY macros, torch::stable::Tensor, TORCH_BOX), so that this library depends
// on libtorch's stable C shim alone:
//
//   giouring::load_layer(int plan, int layer, Tensor(a!)[] pool) -> ()
//   giouring::save_layer(int plan, int layer, Tensor(a!)[] pool) -> ()
//   giouring::wait_layer(int plan, int layer, int timeout_ns, Tensor(a!)[] pool) -> ()
//
// `plan` is the integer handle of a live plan (plan.c checks it); `pool` is the tensors holding
// the op's layer (KVPool.layer_tensors[layer]: giouring/plan.py passes those) or all the pool's
// tensors, checked against the plan's. The I/O is asynchronous, so every op is declared to write
// the tensors it is given: the compiler then never moves a read or a write of them across one of
// the ops (a save's source must not change before its layer is on the devices either). Each
// tensor of the list costs dispatch time on every call, hence the layer's only. Fake implementations are in
// giouring/ops.py. GPU engine: the layer kernel, or the stream wait, goes on PyTorch's current
// stream of the pool's device (set it with torch.cuda.stream()); CPU engine: the plan's thread
// runs the layer, and wait_layer waits on the host.
//
// Errors leave as std::runtime_error "giouring: [errno N] message" (the stable ABI carries no
// exception type of ours): giouring/_lib.py turns that into GiouringError.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include "gpy.h"

namespace {

using torch::stable::Tensor;

[[noreturn]] void raise(int rc)
{
	throw std::runtime_error("giouring: [errno " + std::to_string(-rc) + "] " + gpy_last_error());
}

uint32_t layer_of(int64_t layer)
{
	if (layer < 0 || layer > UINT32_MAX)
		raise(gpy_fail(-EINVAL, "layer %lld out of range", (long long)layer));
	return (uint32_t)layer;
}

// The live plan of `handle`, after checking that `pool` holds `layer` (giouring/plan.py passes
// the layer's tensors; all of the pool's are taken as well).
struct gpy_plan *plan_of(int64_t handle, uint32_t layer, const std::vector<Tensor> &pool)
{
	gpy_clear_error();
	struct gpy_plan *p = gpy_plan_lookup(handle);
	if (!p)
		raise(gpy_fail(-EINVAL, "no live plan has handle %lld (destroyed?)", (long long)handle));
	std::vector<uint64_t> ptrs;
	ptrs.reserve(pool.size());
	for (const Tensor &t : pool)
		ptrs.push_back((uint64_t)(uintptr_t)t.data_ptr());
	const int rc = gpy_plan_check_pool(p, layer, ptrs.data(), (uint32_t)ptrs.size());
	if (rc)
		raise(rc);
	return p;
}

// The stream a GPU-engine op enqueues on: PyTorch's current stream of the pool's device. At 2.11
// the stable C++ API gives a stream only as an id (torch::stable::accelerator::Stream::id()); the
// cudaStream_t itself comes from the stable C shim's aoti_torch_get_current_cuda_stream.
void *stream_of(const struct gpy_plan *p, const std::vector<Tensor> &pool)
{
	if (gpy_plan_engine(p) != GIO_KV_ENGINE_GPU)
		return nullptr;
#ifdef USE_CUDA
	void *stream = nullptr;
	if (aoti_torch_get_current_cuda_stream(pool.at(0).get_device(), &stream) != AOTI_TORCH_SUCCESS)
		raise(gpy_fail(-EIO, "PyTorch gave no current CUDA stream for device %d", (int)pool.at(0).get_device()));
	return stream;
#else
	(void)pool;
	raise(gpy_fail(-EOPNOTSUPP, "this build has no CUDA"));
#endif
}

void layer_op(int64_t handle, int64_t layer, const std::vector<Tensor> &pool, int write)
{
	const uint32_t l = layer_of(layer);
	struct gpy_plan *p = plan_of(handle, l, pool);
	const int rc = gpy_plan_layer(p, l, write, stream_of(p, pool));
	if (rc)
		raise(rc);
}

void load_layer(int64_t plan, int64_t layer, std::vector<Tensor> pool)
{
	layer_op(plan, layer, pool, 0);
}

void save_layer(int64_t plan, int64_t layer, std::vector<Tensor> pool)
{
	layer_op(plan, layer, pool, 1);
}

void wait_layer(int64_t plan, int64_t layer, int64_t timeout_ns, std::vector<Tensor> pool)
{
	const uint32_t l = layer_of(layer);
	struct gpy_plan *p = plan_of(plan, l, pool);
	if (timeout_ns < 0)
		raise(gpy_fail(-EINVAL, "a negative timeout"));
	const int rc = gpy_plan_wait(p, l, stream_of(p, pool), (uint64_t)timeout_ns);
	if (rc)
		raise(rc);
}

} // namespace

STABLE_TORCH_LIBRARY(giouring, m)
{
	m.def("load_layer(int plan, int layer, Tensor(a!)[] pool) -> ()");
	m.def("save_layer(int plan, int layer, Tensor(a!)[] pool) -> ()");
	m.def("wait_layer(int plan, int layer, int timeout_ns, Tensor(a!)[] pool) -> ()");
}

STABLE_TORCH_LIBRARY_IMPL(giouring, CPU, m)
{
	m.impl("load_layer", TORCH_BOX(&load_layer));
	m.impl("save_layer", TORCH_BOX(&save_layer));
	m.impl("wait_layer", TORCH_BOX(&wait_layer));
}

STABLE_TORCH_LIBRARY_IMPL(giouring, CUDA, m)
{
	m.impl("load_layer", TORCH_BOX(&load_layer));
	m.impl("save_layer", TORCH_BOX(&save_layer));
	m.impl("wait_layer", TORCH_BOX(&wait_layer));
}
