"""The scheduler over a store of 4 file targets (the CPU engine): deferred save layers wait for
slack, a slot's load comes first, the backlog's bound refuses instead of dropping, and what the
scheduler issues really moves the bytes."""

from __future__ import annotations

import errno

import pytest

import giouring
from conftest import BLOCKS, LAYERS, fill, holds, vllm_pool


def open_sched(store, **kw):
    # 4 devices; bandwidths in GB/s = bytes per ns. An object here is 8 KiB: one layer of 8 chunks
    # over 4 devices is 16 KiB a device, 16.4 us at 1 GB/s.
    return giouring.Scheduler(store, read_gbps=2.0, write_gbps=1.0, **kw)


def test_saves_wait_for_slack_then_come_back_through_scheduled_loads(uris):
    kv, pool = vllm_pool()
    keys = [300 + i for i in range(8)]
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        sched = open_sched(store)
        save = store.plan(max_requests=BLOCKS)
        for k, b in zip(keys, range(8)):
            fill(kv, b, k)
        assert save.save(keys, list(range(8))) == [0] * 8
        for layer in range(LAYERS):
            assert sched.defer(save, layer) == "ok"
        assert sched.pending(save) == LAYERS
        st = sched.stats()
        assert (st["queued"], st["queued_bytes"]) == (LAYERS, LAYERS * 8 * pool.object_bytes)

        # No slack: a prefill slot writes nothing (writes only in slack).
        d = sched.slot(None, 0, slack=0.0)
        assert d.saves == 0 and d.bubble == 0
        # Slack for two layers' writes (16.4 us each on every device, in FIFO order): exactly two.
        d = sched.slot(None, 0, slack=40e-6)
        assert d.saves == 2 and d.write_bytes == 2 * 8 * pool.object_bytes
        assert sched.pending(save) == LAYERS - 2
        assert sched.drain() == LAYERS - 2
        assert sched.pending(save) == 0
        results = save.finish()
        assert all(r.rc == 0 for r in results)
        assert store.stats()["valid"] == 8

        for t in kv:
            t.fill_(3)
        load = store.plan(max_requests=BLOCKS)
        assert load.load(keys, [BLOCKS - 1 - i for i in range(8)]) == [True] * 8
        for layer in range(LAYERS):
            # A layer's 16 KiB per device reads in 8.2 us at 2 GB/s: 1 us of slack leaves a bubble.
            d = sched.slot(load, layer, slack=1e-6)
            assert d.read_bytes == 8 * pool.object_bytes and d.saves == 0
            assert d.bubble == pytest.approx(d.read_end - 1e-6, abs=2e-9)
            load.wait_layer(layer, timeout=10)
        assert all(r.rc == 0 for r in load.finish())
        for i, k in enumerate(keys):
            assert holds(kv, BLOCKS - 1 - i, k), f"key {k}"
        assert sched.stats()["popped"] == LAYERS


def test_a_full_backlog_refuses_and_drops_nothing(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        save = store.plan(max_requests=BLOCKS)
        assert save.save([1, 2], [0, 1]) == [0, 0]
        with open_sched(store, max_items=2, soft_bytes=pool.object_bytes) as sched:
            assert sched.defer(save, 0) == "pressure"  # 2 objects: above the soft mark of one
            sched.defer(save, 1)
            with pytest.raises(giouring.GiouringError) as e:
                sched.defer(save, 2)
            assert e.value.errno == errno.EAGAIN and "full" in str(e.value)
            assert sched.stats()["refused"] == 1 and sched.stats()["queued"] == 2
            assert sched.drain() == 2
            sched.defer(save, 2)
            sched.defer(save, 3)
            assert sched.drain() == 2
        assert all(r.rc == 0 for r in save.finish())
        with open_sched(store, max_bytes=pool.object_bytes) as sched:
            save.save([7, 8], [2, 3])
            with pytest.raises(giouring.GiouringError) as e:
                sched.defer(save, 0)  # two objects never fit a bound of one
            assert e.value.errno == errno.E2BIG
            for layer in range(LAYERS):
                save.save_layer(layer)
            save.finish()


def test_a_plan_with_layers_queued_is_neither_finished_nor_closed(uris):
    # The scheduler holds the plan's batch: finishing it would leave layers to be issued on a
    # batch that ended, closing it would leave them pointing at freed memory.
    kv, pool = vllm_pool()
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        for b in range(2):
            fill(kv, b, 40 + b)
        save = store.plan(max_requests=BLOCKS)
        assert save.save([40, 41], [0, 1]) == [0, 0]
        sched = open_sched(store)
        for layer in range(LAYERS):
            sched.defer(save, layer)
        d = sched.slot(None, 0, slack=20e-6)  # issues some of them
        left = LAYERS - d.saves
        assert 1 < left < LAYERS
        for call in (save.finish, save.close, store.close):
            with pytest.raises(giouring.GiouringError) as e:
                call()
            assert e.value.errno == errno.EBUSY and f"{left} save layers of this batch are" in str(e.value)
        assert sched.drain() == left  # the plan is intact: its layers all run
        assert all(r.rc == 0 for r in save.finish())
        # Closing the scheduler drops what it still holds: the batch then ends with those layers
        # reported as not run, and nothing is committed.
        assert save.save([50], [2]) == [0]
        sched.defer(save, 0)
        sched.close()
        results = save.finish(check=False)
        assert [r.rc for r in results] == [-errno.ECANCELED]
        assert store.contains([40, 41, 50]) == [True, True, False]
        save.close()


def test_bad_input_is_refused_by_name(uris):
    kv, pool = vllm_pool()
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        with pytest.raises(giouring.GiouringError) as e:
            giouring.Scheduler(store, read_gbps=[1.0, 2.0], write_gbps=1.0)
        assert e.value.errno == errno.EINVAL and "2 figures for 4 devices" in str(e.value)
        with pytest.raises(giouring.GiouringError) as e:
            giouring.Scheduler(store, read_gbps=float("nan"), write_gbps=1.0)
        assert e.value.errno == errno.EINVAL and "bandwidth" in str(e.value)
        with pytest.raises(giouring.GiouringError) as e:
            giouring.Scheduler(store, read_gbps=1.0, write_gbps=1.0, sm_min=9, sm_max=8)
        assert "sm_min" in str(e.value)
        with open_sched(store) as sched:
            plan = store.plan(max_requests=BLOCKS)
            with pytest.raises(giouring.GiouringError) as e:
                sched.defer(plan, 0)
            assert e.value.errno == errno.EINVAL and "save batch" in str(e.value)
            plan.load([1], [0])
            with pytest.raises(giouring.GiouringError) as e:
                sched.slot(plan, LAYERS, slack=1.0)
            assert "beyond" in str(e.value)
            with pytest.raises(ValueError):
                sched.slot(plan, 0, phase="later")
            plan.finish()


def test_the_cpu_engines_calibration_learns_from_its_threads_layer_times(uris):
    # Bandwidths given 1e5 GB/s: a layer of 16 KiB a device modelled at 0.16 ns, where the file
    # targets take microseconds. Every load layer (timed as the slot waits for it) and every
    # save layer (read back at a later slot) raises its factor, at most 2x an observation.
    kv, pool = vllm_pool()
    keys = [900 + i for i in range(8)]
    with giouring.Store.create(uris, pool, store_bytes=4 << 20) as store:
        sched = giouring.Scheduler(store, read_gbps=1e5, write_gbps=1e5, calibrate=0.5)
        save = store.plan(max_requests=BLOCKS)
        for k, b in zip(keys, range(8)):
            fill(kv, b, k)
        assert save.save(keys, list(range(8))) == [0] * 8
        for layer in range(LAYERS):
            sched.defer(save, layer)
        assert sched.drain() == LAYERS
        # Committed before they can be loaded; the plan keeps its layers' times until its next batch.
        assert all(r.rc == 0 for r in save.finish())
        load = store.plan(max_requests=BLOCKS)
        for rep in range(3):
            assert load.load(keys, list(range(8, 16))) == [True] * 8
            for layer in range(LAYERS):
                sched.slot(load, layer, slack=0.0)
                load.wait_layer(layer)  # as an engine does before the layer's attention
            assert all(r.rc == 0 for r in load.finish())
        r = sched.rates()
        # The saves were read back at the first load slot (their plan's batch still its last).
        assert r["write_observed"] == LAYERS and r["write_factor"] > 4.0
        # Each load is read back at the next slot; a batch's last one is dropped there, since its
        # plan has begun the next batch (the layer's time went with the old one).
        assert r["read_observed"] == 3 * (LAYERS - 1) and r["read_factor"] > 4.0
        # The same transfers, one by one, and the last batch's last load: its plan has begun no
        # other batch, so it is read back now.
        got = sched.transfers()
        assert [(t.kind, t.layer) for t in got] == ([("save", layer) for layer in range(LAYERS)] +
                                                    [("load", layer) for layer in range(LAYERS - 1)] * 2 +
                                                    [("load", layer) for layer in range(LAYERS)])
        assert len({t.bytes for t in got}) == 1 and got[0].bytes > 0  # the same 8 chunks' layer
        assert all(t.seconds > 10 * t.modelled > 0 for t in got)
        assert sched.rates()["read_observed"] == 3 * (LAYERS - 1) + 1 and sched.transfers() == []
        assert sched.stats()["transfers_lost"] == 0
        for i, k in enumerate(keys):
            assert holds(kv, 8 + i, k)
        sched.close()


def test_calibration_weight_is_checked(uris):
    _, pool = vllm_pool()
    with giouring.Store.create(uris, pool) as store:
        for bad in (-0.1, 1.5, float("nan")):
            with pytest.raises(giouring.GiouringError) as e:
                open_sched(store, calibrate=bad)
            assert e.value.errno == errno.EINVAL and "calibrate" in e.value.strerror
        sched = open_sched(store)  # no calibration: the model as given
        assert sched.calibrate == 0.0
        assert sched.rates() == {"read_factor": 1.0, "write_factor": 1.0, "read_observed": 0, "write_observed": 0}
        assert sched.engine == "cpu"
        with pytest.raises(giouring.GiouringError) as e:
            sched.transfers()  # nothing is timed without calibration
        assert e.value.errno == errno.EINVAL and "calibrate" in e.value.strerror
        sched.reset_rates()  # nothing learnt, nothing to forget: the figures as given
        assert sched.rates()["read_factor"] == 1.0
        sched.close()
        with pytest.raises(ValueError):
            sched.reset_rates()
        # The GPU engine's scheduler needs a pool on a GPU, as its plans do.
        with pytest.raises(giouring.GiouringError) as e:
            open_sched(store, engine="gpu")
        assert e.value.errno == errno.EINVAL and "host memory" in e.value.strerror
        with pytest.raises(ValueError):
            open_sched(store, engine="tpu")


def test_a_partition_needs_the_gpu_build_or_a_gpu():
    if giouring.has_gpu():
        pytest.skip("this build has the GPU half: test_gpu.py covers the partition")
    with pytest.raises(giouring.GiouringError) as e:
        giouring.SMPartition(8, device=0)
    assert e.value.errno == errno.EOPNOTSUPP
