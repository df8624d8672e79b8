"""The torch ops: their schemas, fake implementations (FakeTensor, torch.compile), and what they
refuse (a plan handle that is not live, tensors that are not the plan's pool)."""

from __future__ import annotations

import errno

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import giouring
from conftest import LAYERS, fill, holds, vllm_pool

OPS = ("load_layer", "save_layer", "wait_layer")


def test_schemas_declare_that_the_ops_write_the_pool():
    for name in OPS:
        schema = getattr(torch.ops.giouring, name).default._schema
        pool = [a for a in schema.arguments if a.name == "pool"][0]
        assert pool.alias_info is not None and pool.alias_info.is_write, str(schema)
        assert len(schema.returns) == 0


def test_fake_implementations_run_without_touching_a_plan():
    # Under FakeTensorMode the real kernels must not run: handle 0 is no plan, and the real op
    # would refuse it.
    with FakeTensorMode():
        fake = [torch.empty(2, 4, 16, 2, 64, dtype=torch.bfloat16) for _ in range(LAYERS)]
        torch.ops.giouring.load_layer(0, 0, fake)
        torch.ops.giouring.save_layer(0, 1, fake)
        torch.ops.giouring.wait_layer(0, 1, 10**9, fake)
    pool = [torch.empty(2, 4, 16, 2, 64, dtype=torch.bfloat16) for _ in range(LAYERS)]
    with pytest.raises(RuntimeError, match=r"giouring: \[errno 22\] no live plan"):
        torch.ops.giouring.load_layer(0, 0, pool)


def compiled_restore_sees_the_layers(kv, plan, keys, first, restore, *args):
    """Compiles restore (fullgraph, inductor), runs it with args over a load of keys into blocks
    first, first + 1, ..., and checks the blocks restored and the sum restore computed over them
    after its waits."""
    compiled = torch.compile(restore, backend="inductor", fullgraph=True)
    assert plan.load(keys, range(first, first + len(keys))) == [True] * len(keys)
    total = compiled(*args)
    plan.finish()
    assert all(holds(kv, first + i, k) for i, k in enumerate(keys))
    want = sum(float(t[:, first:first + len(keys)].float().abs().sum()) for t in kv)
    assert want > 0 and abs(float(total) - want) <= 1e-5 * want


def test_torch_compile_fullgraph_restores_every_layer(uris):
    # Inductor runs the ops on the pool's own tensors (it re-inplaces functionalized mutations).
    kv, pool = vllm_pool()
    with giouring.Store.create(uris[:2], pool) as store:
        plan = store.plan(max_requests=8)
        for i in range(4):
            fill(kv, i, 100 + i)
        plan.save([100 + i for i in range(4)], range(4))
        for layer in range(LAYERS):
            plan.save_layer(layer)
        plan.finish()
        for t in kv:
            t.zero_()

        def restore(handle, tensors):
            for layer in range(LAYERS):
                torch.ops.giouring.load_layer(handle, layer, tensors)
            for layer in range(LAYERS):
                torch.ops.giouring.wait_layer(handle, layer, 10**10, tensors)
            # Compute after the waits sees the restored bytes (the ops' writes order it).
            return sum(t[:, 4:8].float().abs().sum() for t in tensors)

        compiled_restore_sees_the_layers(kv, plan, [100 + i for i in range(4)], 4, restore, plan.handle, pool.tensors)


def test_a_backend_that_copies_mutated_tensors_is_refused_not_fed_a_copy(uris):
    # aot_eager functionalizes the ops' writes onto copies of the pool; the I/O goes to the
    # registered memory whatever tensors are passed, so the op refuses the copies.
    kv, pool = vllm_pool()
    with giouring.Store.create(uris[:1], pool) as store:
        plan = store.plan(max_requests=4)
        plan.load([1], [0])

        def load(handle, tensors):
            torch.ops.giouring.load_layer(handle, 0, tensors)

        with pytest.raises(RuntimeError, match="pool tensor 0 is not the one the store registered"):
            torch.compile(load, backend="aot_eager", fullgraph=True)(plan.handle, pool.tensors)
        plan.finish()


def test_a_handle_that_is_no_live_plan_is_refused(uris):
    _, pool = vllm_pool()
    with giouring.Store.create(uris[:1], pool) as store:
        plan = store.plan(max_requests=4)
        handle = plan.handle
        plan.close()
    with pytest.raises(RuntimeError, match="no live plan"):
        torch.ops.giouring.load_layer(handle, 0, pool.tensors)
    with pytest.raises(ValueError):
        plan.load_layer(0)


def test_tensors_other_than_the_plans_pool_are_refused(uris):
    kv, pool = vllm_pool()
    other, _ = vllm_pool()
    with giouring.Store.create(uris[:1], pool) as store:
        plan = store.plan(max_requests=4)
        plan.load([1], [0])
        with pytest.raises(RuntimeError, match=r"giouring: \[errno 22\] pool tensor 0 is not the one"):
            torch.ops.giouring.load_layer(plan.handle, 0, other)
        with pytest.raises(RuntimeError, match=f"given 2 pool tensors: the plan's pool has {LAYERS}, 1 per layer"):
            torch.ops.giouring.load_layer(plan.handle, 0, kv[:2])
        plan.finish()


def test_an_op_takes_its_layers_tensors_and_refuses_another_layers(uris):
    # What Plan passes (KVPool.layer_tensors): the layer's tensors alone, which the op checks
    # against that layer; the whole pool's list is taken as well.
    kv, pool = vllm_pool()
    assert [len(ts) for ts in pool.layer_tensors] == [1] * LAYERS
    assert all(ts[0] is kv[l] for l, ts in enumerate(pool.layer_tensors))
    with giouring.Store.create(uris[:2], pool) as store:
        plan = store.plan(max_requests=4, poll_ns=5000, move_depth=16)  # GPU-engine settings: kept
        fill(kv, 0, 7)
        plan.save([7], [0])
        for layer in range(LAYERS):
            torch.ops.giouring.save_layer(plan.handle, layer, pool.layer_tensors[layer])
        plan.finish()
        assert plan.load([7], [3]) == [True]
        with pytest.raises(RuntimeError, match=r"\[errno 22\] pool tensor 0 of layer 1 is not the one the store"):
            torch.ops.giouring.load_layer(plan.handle, 1, pool.layer_tensors[0])
        with pytest.raises(RuntimeError, match=f"layer {LAYERS} beyond the pool's {LAYERS} layers"):
            torch.ops.giouring.load_layer(plan.handle, LAYERS, pool.layer_tensors[0])
        for layer in range(LAYERS):
            torch.ops.giouring.load_layer(plan.handle, layer, pool.layer_tensors[layer])
        for layer in range(LAYERS):
            torch.ops.giouring.wait_layer(plan.handle, layer, 10**10, pool.layer_tensors[layer])
        plan.finish()
        assert holds(kv, 3, 7)


def test_layer_tensors_of_each_pool_form():
    one = torch.zeros(LAYERS, 2, 4, 16, 2, 64, dtype=torch.bfloat16)
    p1 = giouring.KVPool(one, dims=("layer", "part", "block", "token", "head", "channel"))
    assert len(p1.layer_tensors) == LAYERS and all(ts == [one] for ts in p1.layer_tensors)
    parts = [(torch.zeros(4, 16, 2, 64), torch.zeros(4, 16, 2, 64)) for _ in range(LAYERS)]
    p2 = giouring.KVPool(parts, dims=("block", "token", "head", "channel"))
    assert [len(ts) for ts in p2.layer_tensors] == [2] * LAYERS
    assert all(ts[0] is k and ts[1] is v for ts, (k, v) in zip(p2.layer_tensors, parts))


def test_plan_calls_go_straight_to_the_library_eagerly_and_are_ops_under_torch_compile(uris, monkeypatch):
    # Eagerly, Plan's layer calls skip the op's dispatch (ctypes into the library); traced by
    # torch.compile they must be the ops, whose schemas order the pool's reads after them.
    kv, pool = vllm_pool()
    with giouring.Store.create(uris[:2], pool) as store:
        plan = store.plan(max_requests=4)
        fill(kv, 0, 9)
        plan.save([9], [0])
        for layer in range(LAYERS):
            plan.save_layer(layer)
        plan.finish()
        dispatched = []

        def spy(name, real):
            return lambda *a: (dispatched.append(name), real(*a))[1]

        for name in OPS:
            packet = getattr(torch.ops.giouring, name)
            monkeypatch.setattr(packet, "default", spy(name, packet.default))
        assert plan.load([9], [2]) == [True]
        for layer in range(LAYERS):
            plan.load_layer(layer)
        for layer in range(LAYERS):
            plan.wait_layer(layer, timeout=10.0)
        plan.finish()
        assert holds(kv, 2, 9) and dispatched == []  # eager: no op was called
        monkeypatch.undo()

        for t in kv:
            t.zero_()

        def restore(p):
            for layer in range(LAYERS):
                p.load_layer(layer)
            for layer in range(LAYERS):
                p.wait_layer(layer, timeout=10.0)
            return sum(t[:, 5:6].float().abs().sum() for t in kv)

        # fullgraph: a ctypes call would break the graph, so only the ops can compile.
        compiled_restore_sees_the_layers(kv, plan, [9], 5, restore, plan)


def test_plan_calls_refuse_a_negative_timeout_and_a_layer_out_of_range(uris):
    _, pool = vllm_pool()
    with giouring.Store.create(uris[:1], pool) as store:
        plan = store.plan(max_requests=4)
        with pytest.raises(giouring.GiouringError) as e:
            plan.wait_layer(0, timeout=-1.0)
        assert e.value.errno == errno.EINVAL and "negative timeout" in str(e.value)
        with pytest.raises(giouring.GiouringError) as e:
            plan.load_layer(LAYERS)
        assert e.value.errno == errno.EINVAL and "beyond the pool" in str(e.value)
        with pytest.raises(giouring.GiouringError) as e:
            plan.wait_layer(0)  # no batch open: the library's own check, through the eager call
        assert e.value.errno == errno.EINVAL and "no batch open" in str(e.value)
