"""Stores over 4 file targets with the CPU engine: chunks saved layer by layer come back into
shuffled pool blocks after a reopen, misses, statistics, and the refusals of bad input."""

from __future__ import annotations

import errno
import os

import pytest
import torch

import giouring
from conftest import BLOCKS, LAYERS, fill, holds, vllm_pool


def save(plan, kv, keys, blocks):
    for k, b in zip(keys, blocks):
        fill(kv, b, k)
    assert plan.save(keys, blocks) == [0] * len(keys)
    for layer in range(LAYERS):
        plan.save_layer(layer)
    return plan.finish()


def shuffled(i):
    return (i * 7 + 3) % BLOCKS


@pytest.mark.parametrize("query", ["", "&dptr=prp"], ids=["sgl", "prp"])
def test_round_trip_through_a_reopen_into_shuffled_blocks(uris, query):
    uris = [u + query for u in uris]
    kv, pool = vllm_pool()
    keys = [1000 + i for i in range(24)]
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        plan = store.plan(max_requests=BLOCKS)
        results = save(plan, kv, keys, list(range(24)))
        assert all(r.rc == 0 and r.nvme_status == 0 for r in results)
        st = store.stats()
        assert st["valid"] == 24 and st["devices"] == 4
        assert st["bytes_written"] == 24 * LAYERS * pool.object_bytes
    for t in kv:
        t.fill_(7)  # nothing may pass unless it is loaded
    # The targets in another order: each superblock says which device it is.
    with giouring.Store.open(list(reversed(uris)), pool) as store:
        plan = store.plan(max_requests=BLOCKS)
        wanted = keys + [5000 + i for i in range(8)]  # 8 never stored
        hits = plan.load(wanted, [shuffled(i) for i in range(32)])
        assert hits == [True] * 24 + [False] * 8
        for layer in range(LAYERS):
            plan.load_layer(layer)
        for layer in range(LAYERS):
            plan.wait_layer(layer, timeout=10)
        results = plan.finish()
        assert [r.layer for r in results] == [0] * 24 + [0xFFFF] * 8
        for i in range(24):
            assert holds(kv, shuffled(i), keys[i]), f"key {keys[i]} in block {shuffled(i)}"
        for i in range(24, 32):
            assert all(bool((t[:, shuffled(i)] == 7).all()) for t in kv)
        st = store.stats()
        assert (st["hits"], st["misses"], st["pinned"]) == (24, 8, 0)
        assert st["bytes_read"] == 24 * LAYERS * pool.object_bytes
        assert plan.stats() == {"loads": 1, "saves": 0, "requests": 24, "layers": LAYERS, "failed": 0,
                                "stream_timeouts": 0}
        # Per device: the path (the file targets move the data themselves) and what moved.
        devs = plan.device_stats()
        assert len(devs) == 4 and all(d["path"] == "p2p" and d["staged_objects"] == 0 for d in devs)
        # Objects, or runs where the PRP form takes a command per run (K and V apart: two).
        assert sum(d["objects"] for d in devs) in (24 * LAYERS, 2 * 24 * LAYERS)
        assert sum(d["bytes"] for d in devs) == 24 * LAYERS * pool.object_bytes
        assert all(d["failed"] == 0 and d["timed_out"] == 0 for d in devs)


def test_k_and_v_as_separate_tensors_and_bytes_keys(tmp_path):
    pairs = [(torch.zeros(BLOCKS, 16, 2, 64), torch.zeros(BLOCKS, 16, 2, 64)) for _ in range(2)]
    pool = giouring.KVPool(pairs, dims=("block", "token", "head", "channel"))
    key = os.urandom(16)
    with giouring.Store.create([f"file://{tmp_path}/a.img?size=8M"], pool) as store:
        plan = store.plan(max_requests=4)
        for k, v in pairs:
            k[3].normal_()
            v[3].normal_()
        want = [(k[3].clone(), v[3].clone()) for k, v in pairs]
        plan.save([key], [3])
        plan.save_layer(0)
        plan.save_layer(1)
        plan.finish()
        for k, v in pairs:
            k.zero_()
            v.zero_()
        assert plan.load([key], [9]) == [True]
        plan.load_layer(0)
        plan.load_layer(1)
        plan.finish()
        for (k, v), (wk, wv) in zip(pairs, want):
            assert torch.equal(k[9], wk) and torch.equal(v[9], wv)


def test_a_stored_key_is_not_saved_twice_and_a_batch_of_misses_finishes(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create(uris, pool) as store:
        plan = store.plan(max_requests=8)
        save(plan, kv, [1, 2], [0, 1])
        assert plan.save([2, 3], [1, 2]) == [-errno.EEXIST, 0]
        for layer in range(LAYERS):
            plan.save_layer(layer)
        assert [r.rc for r in plan.finish()] == [-errno.EEXIST, 0]
        assert plan.load([7, 8], [0, 1]) == [False, False]
        for layer in range(LAYERS):
            plan.load_layer(layer)
        assert plan.finish() == [giouring.Result(0, 0, 0xFFFF)] * 2


def expect(exc_errno, fn, *words):
    with pytest.raises(giouring.GiouringError) as e:
        fn()
    assert e.value.errno == exc_errno, str(e.value)
    for w in words:
        assert w in e.value.strerror, e.value.strerror
    assert isinstance(e.value, OSError)
    return e.value


def test_bad_input_raises_with_errno_and_the_library_message(uris, tmp_path):
    kv, pool = vllm_pool()
    expect(errno.EINVAL, lambda: giouring.Store.create([uris[0] + "&lbz=512"], pool), "target 0", "lbz")
    expect(errno.ENODATA, lambda: giouring.Store.open(uris[:1], pool), "ctxs[0]", "never written")
    expect(errno.EINVAL, lambda: giouring.Store.create([], pool))
    with giouring.Store.create(uris[:2], pool) as store:
        plan = store.plan(max_requests=4)
        expect(errno.EINVAL, lambda: plan.load([1, 2], [0, BLOCKS]), "request 1", f"block {BLOCKS}")
        expect(errno.EINVAL, lambda: plan.load(list(range(5)), list(range(5))), "5 requests")
        expect(errno.EINVAL, lambda: plan.load([1], [0, 1]), "one block per key")
        expect(errno.EINVAL, lambda: plan.load([1 << 128], [0]), "2**128")
        expect(errno.EINVAL, lambda: plan.finish(), "no batch open")
        with pytest.raises(TypeError):
            plan.load(["key"], [0])
        plan.save([1], [0])
        expect(errno.EINVAL, lambda: plan.load_layer(LAYERS), f"layer {LAYERS} beyond")
        plan.save_layer(0)
        expect(errno.EALREADY, lambda: plan.save_layer(0))
        # Layers 1.. never ran: nothing commits.
        e = expect(errno.ECANCELED, lambda: plan.finish())
        assert [r.rc for r in e.results] == [-errno.ECANCELED]
        assert store.stats()["valid"] == 0
        # The GPU engine fills any target's queues, but moves data into GPU memory only.
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, engine="gpu"), "GPU engine", "CUDA device")
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, move_depth=17), "move_depth 17")
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, poll_ns=2_000_000), "poll_ns above 1 ms")
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, poll_ns=-1), "poll_ns -1")
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, move_depth=1 << 32), "move_depth")
        # The copy engine moves a GPU-engine plan's staged loads; the CPU engine moves its own.
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, mover="copy_engine"), "for the GPU engine")
        with pytest.raises(ValueError, match="mover"):
            store.plan(max_requests=4, mover="dma")
        # Mirrored completions: the copy-engine mover's thread watches the CQs, so only with it.
        with pytest.raises(ValueError, match="completions"):
            store.plan(max_requests=4, completions="interrupts")
        expect(errno.EINVAL, lambda: store.plan(max_requests=4, completions="mirror"),
               "mirrored completions need the copy-engine mover")
        assert plan.mover_stats() == {"copies": 0, "calls": 0, "bytes": 0, "cpu_ns": 0, "cq_marks": 0}
        expect(errno.EINVAL, lambda: plan.wait_layer(-1), "layer -1 out of range")
        with pytest.raises(TypeError):
            plan.wait_layer(0.5)
        expect(errno.EOPNOTSUPP, lambda: plan.wait_times(), "GPU engine")
        # An integer tensor is an index: past the type check, the library answers (the batch ended).
        expect(errno.EINVAL, lambda: plan.wait_layer(torch.tensor(0)), "no batch open")
    # A store of one layout refuses a pool of another.
    t = torch.zeros(LAYERS, BLOCKS, 2, 2, 16, 64, dtype=torch.bfloat16)
    heads_first = giouring.KVPool(t, dims=("layer", "block", "part", "head", "token", "channel"))
    expect(errno.EINVAL, lambda: giouring.Store.open(uris[:2], heads_first), "signature")
    with pytest.raises(ValueError):
        store.stats()


def test_a_device_failing_mid_layer_fails_only_its_key_with_the_nvme_status(uris):
    kv, pool = vllm_pool()
    keys = list(range(16))
    with giouring.Store.create(uris, pool) as store:
        plan = store.plan(max_requests=16)
        save(plan, kv, keys, keys)
        for t in kv:
            t.zero_()
        assert plan.load(keys, keys) == [True] * 16
        for layer in range(2):
            plan.load_layer(layer)
            plan.wait_layer(layer)
        unrecovered_read = 0x0281  # SCT 2 (media), SC 81h
        store.inject_fault(2, 2, unrecovered_read)
        for layer in range(2, LAYERS):
            plan.load_layer(layer)
        with pytest.raises(giouring.GiouringError) as e:
            plan.finish()
        err = e.value
        assert err.errno == errno.EIO and err.nvme_status == unrecovered_read
        assert "0x0281" in str(err) and giouring.status_name(unrecovered_read) in str(err)
        failed = [i for i, r in enumerate(err.results) if r.rc]
        assert len(failed) == 1
        assert err.results[failed[0]] == giouring.Result(-errno.EIO, unrecovered_read, 2)
        for i in keys:
            if i not in failed:
                assert holds(kv, i, i)
        assert plan.stats()["failed"] == 1
        # The chunk stays stored (a read failed, not the data): a second load serves it.
        store.inject_fault(2, 0, 0)
        plan.load(keys, keys)
        for layer in range(LAYERS):
            plan.load_layer(layer)
        plan.finish()
        assert holds(kv, failed[0], failed[0])
        assert store.stats()["pinned"] == 0


def test_a_chunk_that_failed_to_load_is_removed_and_saved_anew(uris):
    kv, pool = vllm_pool()
    keys = list(range(8))
    with giouring.Store.create(uris, pool) as store:
        plan = store.plan(max_requests=8)
        save(plan, kv, keys, keys)
        unrecovered_read = 0x0281
        store.inject_fault(1, 1, unrecovered_read)
        plan.load(keys, keys)
        # Held by the plan until it finishes: not removable.
        with pytest.raises(giouring.GiouringError) as e:
            store.remove([keys[0]])
        assert e.value.errno == errno.EBUSY and "being read or written" in e.value.strerror
        for layer in range(LAYERS):
            plan.load_layer(layer)
        results = plan.finish(check=False)
        store.inject_fault(1, 0, 0)
        bad = [k for k, r in zip(keys, results) if r.rc]
        assert len(bad) == 1 and results[bad[0]].nvme_status == unrecovered_read
        # Saving it again changes nothing while it is stored: removed, it is saved anew.
        assert [r.rc for r in save_results(plan, kv, bad, bad)] == [-errno.EEXIST]
        assert store.remove(bad + [999]) == [True, False]
        assert store.contains(bad) == [False]
        assert store.removed() == (bad, 1, False)
        assert [r.rc for r in save_results(plan, kv, bad, bad)] == [0]
        for t in kv:
            t.zero_()
        assert plan.load(keys, keys) == [True] * 8
        for layer in range(LAYERS):
            plan.load_layer(layer)
        plan.finish()
        assert all(holds(kv, k, k) for k in keys)
        assert store.remove([]) == []


def save_results(plan, kv, keys, blocks):
    for k, b in zip(keys, blocks):
        fill(kv, b, k)
    plan.save(keys, blocks)
    for layer in range(LAYERS):
        plan.save_layer(layer)
    return plan.finish(check=False)


def test_a_save_whose_write_fails_commits_the_other_chunks(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create(uris[:2], pool) as store:
        plan = store.plan(max_requests=8)
        write_fault_dnr = 0x4280  # SCT 2, SC 80h (write fault), Do Not Retry
        store.inject_fault(1, 3, write_fault_dnr)
        for i in range(8):
            fill(kv, i, i)
        plan.save(list(range(8)), list(range(8)))
        for layer in range(LAYERS):
            plan.save_layer(layer)
        results = plan.finish(check=False)
        assert sorted(r.rc for r in results) == [-errno.EIO] + [0] * 7
        assert [r.nvme_status for r in results if r.rc] == [write_fault_dnr]
        assert store.stats()["valid"] == 7


def test_faults_are_for_software_targets_of_the_store(uris):
    _, pool = vllm_pool()
    with giouring.Store.create(uris[:1], pool) as store:
        expect(errno.EINVAL, lambda: store.inject_fault(1, 1, 0x0281), "no device 1")


def test_contains_answers_without_counting_or_pinning(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        plan = store.plan(max_requests=BLOCKS)
        save(plan, kv, [1, 2, 3], [0, 1, 2])
        assert store.contains([1, 99, 3, (2).to_bytes(16, "big")]) == [True, False, True, True]
        assert store.contains([]) == []
        st = store.stats()
        assert (st["hits"], st["misses"], st["pinned"]) == (0, 0, 0)
        with pytest.raises(giouring.GiouringError) as e:
            store.contains([1 << 128])
        assert e.value.errno == errno.EINVAL
        with pytest.raises(TypeError):
            store.contains(["1"])


def test_removed_gives_the_evicted_keys_oldest_first_and_keys_what_is_left(tmp_path):
    kv, pool = vllm_pool()
    uris = [f"file://{tmp_path}/kv0.img?size=1M"]  # one small target: a few dozen chunks
    with giouring.Store.create(uris, pool) as store:
        plan = store.plan(max_requests=BLOCKS)
        cap = store.stats()["capacity"]
        assert store.removed() == ([], 0, False)
        assert store.keys() == []
        keys = list(range(1, cap + 6))
        for k in keys:
            save(plan, kv, [k], [k % BLOCKS])
        assert store.stats()["evictions"] == 5
        got, nxt, lost = store.removed()
        assert (got, nxt, lost) == (keys[:5], 5, False)  # one device: exact LRU order
        assert store.contains(got) == [False] * 5
        assert store.removed(2, max_keys=2) == (keys[2:4], 4, False)
        assert store.removed(5) == ([], 5, False)
        assert sorted(store.keys()) == keys[5:]  # what it holds now
        with pytest.raises(giouring.GiouringError) as e:
            store.removed(6)
        assert e.value.errno == errno.EINVAL
        with pytest.raises(ValueError):
            store.removed(0, max_keys=0)
    assert giouring.store.REMOVED_KEPT == 65536


def test_an_executor_stream_is_refused_for_cpu_executed_targets(uris):
    # Only GPU-executed targets run an executor kernel that a stream could place.
    kv, pool = vllm_pool()
    with pytest.raises(giouring.GiouringError) as e:
        giouring.Store.create(uris, pool, store_bytes=4 << 20, exec_stream=1)
    assert e.value.errno == errno.EINVAL and "CPU-executed" in e.value.strerror
    with pytest.raises(TypeError):
        giouring.Store.create(uris, pool, store_bytes=4 << 20, exec_stream="stream")


def test_closing_a_store_destroys_every_plan(uris):
    # Store.close once skipped every other plan (each close took its plan off the list being
    # walked) and then failed with EBUSY: "1 plans of the store are alive".
    kv, pool = vllm_pool()
    store = giouring.Store.create(uris, pool, store_bytes=4 << 20)
    plans = [store.plan(max_requests=4) for _ in range(3)]
    store.close()
    for p in plans:
        with pytest.raises(ValueError):
            p.handle


def test_keys_and_blocks_go_to_the_library_as_words_whatever_path_converts_them():
    # Plain ints take a fast path (bytes swapped in one pass); bytes keys, bools and bad keys the
    # checked one. Both give (hi, lo) pairs of 64 bits, and bad input still names the problem.
    from giouring.plan import _batch, keys_array

    mask = (1 << 64) - 1
    ks = [0, 1, mask, 1 << 64, (1 << 128) - 1, 0x0123456789ABCDEF_FEDCBA9876543210]
    want = [v for k in ks for v in (k >> 64, k & mask)]
    assert list(keys_array(ks)) == want
    assert list(keys_array([k.to_bytes(16, "big") for k in ks])) == want  # the checked path
    assert list(keys_array([ks[5].to_bytes(16, "big"), 7])) == [want[10], want[11], 0, 7]
    for bad in (-1, 1 << 128):
        with pytest.raises(giouring.GiouringError) as e:
            keys_array([5, bad])
        assert e.value.errno == errno.EINVAL and "2**128" in str(e.value)
    with pytest.raises(TypeError):
        keys_array([5, True])
    n, k, b = _batch(ks, torch.arange(len(ks), dtype=torch.int32))
    assert n == len(ks) and list(k) == want and list(b) == list(range(len(ks)))
    assert list(_batch([3], [(1 << 32) - 1])[2]) == [(1 << 32) - 1]
    for bad in (1 << 32, -1, 1.5, "0"):
        with pytest.raises(giouring.GiouringError) as e:
            _batch([3, 4], [0, bad])
        assert e.value.errno == errno.EINVAL and f"block {bad!r}" in str(e.value)


def test_a_load_failure_that_would_repeat_removes_its_chunk(uris):
    # remove_failed: -EIO removes at once, -ETIME the second time within the store's last 256
    # misses, anything else never; what it removes goes to the journal like any removal.
    kv, pool = vllm_pool()
    keys = [700 + i for i in range(6)]
    with giouring.Store.create(uris, pool) as store:
        plan = store.plan(max_requests=BLOCKS)
        assert plan.save(keys, range(6)) == [0] * 6
        for layer in range(LAYERS):
            plan.save_layer(layer)
        plan.finish()
        EIO, ETIME, CANCELED = -errno.EIO, -errno.ETIME, -errno.ECANCELED
        assert store.remove_failed(keys[:4], [EIO, ETIME, 0, CANCELED]) == [True, False, False, False]
        assert store.contains(keys) == [False, True, True, True, True, True]
        assert store.remove_failed([keys[1], keys[2]], [ETIME, ETIME]) == [True, False]  # keys[1]'s second
        assert store.contains(keys[1:3]) == [False, True]
        # 256 misses of other keys push keys[2]'s first one out: its next is a first again.
        assert store.remove_failed(list(range(10_000, 10_256)), [ETIME] * 256) == [False] * 256
        assert store.remove_failed([keys[2]], [ETIME]) == [False]
        assert store.remove_failed([keys[2]], [ETIME]) == [True]
        assert store.remove_failed([keys[0]], [EIO]) == [False]  # gone already: nothing to remove
        assert store.removed(0)[0] == [keys[0], keys[1], keys[2]]
        with pytest.raises(giouring.GiouringError) as e:
            store.remove_failed(keys[:2], [EIO])
        assert e.value.errno == errno.EINVAL and "one outcome per key" in str(e.value)
        assert store.remove_failed([], []) == []
