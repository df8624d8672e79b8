"""The staged path through the package, on the CPU: file targets whose URI says ``path=staged``
take a staging area per plan, and the CPU engine copies each object between its slot and a host
pool (the GPU engine's staged path is test_gpu.py's). A store is one store whichever path each of
its targets takes: saved staged, loaded peer-to-peer, and the other way."""

from __future__ import annotations

import errno

import pytest

import giouring
from conftest import BLOCKS, LAYERS, fill, holds, vllm_pool


def staged(uri: str) -> str:
    return uri + "&path=staged"


def shuffled(i):
    return (i * 11 + 5) % BLOCKS


@pytest.mark.parametrize("query", ["", "&dptr=prp"], ids=["sgl", "prp"])
def test_staged_and_p2p_targets_share_one_store(uris, query):
    uris = [u + query for u in uris]
    mixed = [staged(u) if i % 2 == 0 else u for i, u in enumerate(uris)]  # targets 0 and 2 staged
    kv, pool = vllm_pool()
    keys = [7000 + i for i in range(BLOCKS)]
    with giouring.Store.create(mixed, pool, store_bytes=4 << 20) as store:
        assert [p["path"] for p in store.paths] == ["staged", "p2p", "staged", "p2p"]
        assert "path=staged" in store.paths[0]["why"] and "host memory" in store.paths[1]["why"]
        # One queue pair of 32 commands a target: its ring has 32 slots, so 128 objects a device
        # go through each slot four times.
        plan = store.plan(max_requests=BLOCKS, queues=1, queue_depth=32)
        for b, k in enumerate(keys):
            fill(kv, b, k)
        assert plan.save(keys, list(range(BLOCKS))) == [0] * BLOCKS
        for layer in range(LAYERS):
            plan.save_layer(layer)
        assert all(r.rc == 0 and r.nvme_status == 0 for r in plan.finish())
        devs = plan.device_stats()
        assert sorted(d["path"] for d in devs) == ["p2p", "p2p", "staged", "staged"]
        for d in devs:
            assert d["staged_objects"] == (d["objects"] if d["path"] == "staged" else 0)
            assert d["staged_bytes"] == (d["bytes"] if d["path"] == "staged" else 0)
        assert sum(d["bytes"] for d in devs) == BLOCKS * LAYERS * pool.object_bytes
        plan.close()
    for t in kv:
        t.fill_(3)
    # The other way round: what went through slots comes back peer-to-peer and the rest staged.
    other = [u if i % 2 == 0 else staged(u) for i, u in enumerate(uris)]
    with giouring.Store.open(other, pool) as store:
        assert [p["path"] for p in store.paths] == ["p2p", "staged", "p2p", "staged"]
        plan = store.plan(max_requests=BLOCKS, queues=2, queue_depth=32)
        assert plan.load(keys, [shuffled(i) for i in range(BLOCKS)]) == [True] * BLOCKS
        for layer in range(LAYERS):
            plan.load_layer(layer)
        for layer in range(LAYERS):
            plan.wait_layer(layer, timeout=10)
        assert all(r.rc == 0 for r in plan.finish())
        for i, k in enumerate(keys):
            assert holds(kv, shuffled(i), k), f"key {k} in block {shuffled(i)}"
        devs = plan.device_stats()
        staged_bytes = sum(d["staged_bytes"] for d in devs)
        assert 0 < staged_bytes < BLOCKS * LAYERS * pool.object_bytes
        assert sum(d["bytes"] for d in devs) == BLOCKS * LAYERS * pool.object_bytes
        plan.close()


def test_a_failed_staged_read_keeps_its_status_and_moves_nothing(uris):
    kv, pool = vllm_pool()
    uris = [staged(u) for u in uris[:1]]
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        plan = store.plan(max_requests=4)
        for b in range(4):
            fill(kv, b, 40 + b)
        assert plan.save([40, 41, 42, 43], [0, 1, 2, 3]) == [0] * 4
        for layer in range(LAYERS):
            plan.save_layer(layer)
        assert all(r.rc == 0 for r in plan.finish())
        for t in kv:
            t.fill_(5)
        before = plan.device_stats()[0]
        # The next read command fails: Unrecovered Read Error (SCT 2h, SC 81h).
        store.inject_fault(0, 1, 0x281)
        assert plan.load([40, 41], [8, 9]) == [True, True]
        for layer in range(LAYERS):
            plan.load_layer(layer)
        with pytest.raises(giouring.GiouringError) as e:
            plan.finish()
        failed = [(i, r) for i, r in enumerate(e.value.results) if r.rc]
        assert len(failed) == 1
        i, r = failed[0]
        assert (r.rc, r.nvme_status) == (-errno.EIO, 0x281)
        # A failed command's slot is released without a move: its block keeps what it held in
        # that layer, and every other object arrived.
        assert bool((kv[r.layer][:, 8 + i] == 5).all())
        dev = plan.device_stats()[0]
        assert dev["path"] == "staged" and dev["failed"] == 1
        # The statistics count a request's objects only where all its layers arrived.
        assert dev["staged_objects"] - before["staged_objects"] == dev["objects"] - before["objects"] == LAYERS
        # And the slots are free again: with the fault gone the same load goes through.
        store.inject_fault(0, 0, 0)
        assert plan.load([40, 41], [8, 9]) == [True, True]
        for layer in range(LAYERS):
            plan.load_layer(layer)
        assert all(r.rc == 0 for r in plan.finish())
        assert holds(kv, 8, 40) and holds(kv, 9, 41)
        plan.close()


def test_a_host_pool_takes_the_cpu_engine_on_the_staged_path(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create([staged(uris[0])], pool, store_bytes=4 << 20) as store:
        assert not store.gpu_targets
        with store.plan(max_requests=4) as plan:
            assert plan.engine == "cpu"
        with pytest.raises(giouring.GiouringError) as e:
            store.plan(max_requests=4, engine="gpu")
        assert e.value.errno == errno.EINVAL and "CUDA device" in e.value.strerror


def test_a_pool_in_host_memory_is_registered_unless_staging_is_asked(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create([uris[0] + "&path=p2p", uris[1]], pool, store_bytes=4 << 20) as store:
        assert [p["path"] for p in store.paths] == ["p2p", "p2p"]
    with pytest.raises(giouring.GiouringError) as e:
        giouring.Store.create([uris[0] + "&path=dma"], pool)
    assert e.value.errno == errno.EINVAL and "p2p or staged" in e.value.strerror

