"""On a GPU (skipped elsewhere): the GPU engine over GPU-executed targets, as
examples/layerwise.cu runs it: chunks saved with one save_layer launch per layer on an I/O
stream, then restored into shuffled blocks with one load_layer launch per layer while a compute
stream waits on the device for each layer (wait_layer) and checks it; and the CPU engine
restoring into a pool in GPU memory from a file target.

The GPU-executed targets' executors are persistent kernels: a kernel loaded lazily while one
spins waits for it for ever (docs/design.md, "Persistent kernels and lazy loading"), so every
torch kernel the tests launch while the executors run is launched once before (warm()).
"""

from __future__ import annotations

import errno

import pytest
import torch

import giouring

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    pytest.mark.skipif(not giouring.has_gpu(), reason="this build of the package has no GPU engine (no nvcc)"),
]

LAYERS, BLOCKS, TOKENS, HEADS, DIM = 8, 64, 16, 8, 128  # Llama3-8B's heads, bf16: 64 KiB objects
DIMS = ("part", "block", "token", "head", "channel")
POOL_MIB = LAYERS * BLOCKS * 2 * TOKENS * HEADS * DIM * 2 >> 20


def chunk(key, layer, device="cuda"):
    """Chunk `key`'s layer-`layer` object: small integers, exact in bf16."""
    n = 2 * TOKENS * HEADS * DIM
    x = (torch.arange(n, device=device, dtype=torch.int32) * (key * 7 + layer * 3 + 1) + key) % 251
    return x.to(torch.bfloat16).view(2, TOKENS, HEADS, DIM)


def shuffled(c):
    return (c * 7 + 1) % BLOCKS


def warm(kv, expected, dst):
    """Launches every kernel the restore's checks use, before the executors start."""
    mism = torch.zeros(LAYERS, dtype=torch.int64, device="cuda")
    for layer in range(LAYERS):
        mism[layer] = (kv[layer][:, dst] != expected[layer]).sum()
    kv[0].fill_(-1)
    chunk(0, 0)
    torch.cuda.synchronize()
    return mism


def gpu_pool(layout):
    """"apart": vLLM's tensor per layer, K and V apart (two runs an object, an SGL segment list
    in device memory); "one-run": one buffer [layers, blocks, 2, ...] seen as the same per-layer
    views (an object is one range)."""
    if layout == "apart":
        kv = [torch.zeros(2, BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16, device="cuda") for _ in range(LAYERS)]
    else:
        big = torch.zeros(LAYERS, BLOCKS, 2, TOKENS, HEADS, DIM, dtype=torch.bfloat16, device="cuda")
        kv = [big[layer].transpose(0, 1) for layer in range(LAYERS)]
    pool = giouring.KVPool(kv, dims=DIMS)
    assert pool.runs == (2 if layout == "apart" else 1)
    return kv, pool


@pytest.mark.parametrize("layout", ["apart", "one-run"])
@pytest.mark.parametrize("backing", ["mem://host?exec=gpu&sms=4", "mem://hbm?sms=2"], ids=["host", "hbm"])
def test_gpu_engine_restores_layer_by_layer_while_compute_waits_on_the_device(backing, layout):
    restore_layer_by_layer(backing, layout)


def test_executors_on_the_partitions_own_side_serve_the_same_restore():
    # A third side for the stand-in drives' executors, apart from compute's SMs and I/O's.
    with giouring.SMPartition(8, exec_sms=8) as part:
        assert part.exec_stream is not None
        if part.isolated:
            assert part.exec_sms >= 8 and part.io_sms + part.exec_sms + part.compute_sms == part.device_sms
        restore_layer_by_layer("mem://host?exec=gpu&sms=4", "apart", exec_stream=part.exec_stream)


@pytest.mark.parametrize("path,mover,completions", [("auto", "warps", "poll"), ("staged", "warps", "poll"),
                                                    ("staged", "copy_engine", "poll"),
                                                    ("staged", "copy_engine", "mirror")])
def test_gpu_engine_fills_cpu_executed_targets_queues_peer_to_peer_or_staged(tmp_path, path, mover, completions):
    # File targets: a CPU thread stands in for each controller. Peer-to-peer, it copies into the
    # pool on CUDA streams; staged, it reads into pinned slots and the I/O kernel's warps, or the
    # copy engine driven by a thread of the plan, move each loaded object into the pool: the
    # same calls either way (docs/python.md).
    uris = [f"file://{tmp_path}/d{i}.img?size={POOL_MIB // 2 + 64}M&path={path}" for i in range(2)]
    want = "staged" if path == "staged" else "p2p"
    restore_layer_by_layer(None, "apart", uris=uris, paths=[want, want], mover=mover, completions=completions)


def test_a_gpu_pool_on_the_staged_path_refuses_the_cpu_engine(tmp_path):
    kv, pool = gpu_pool("apart")
    with giouring.Store.create([f"file://{tmp_path}/s.img?size=64M&path=staged"], pool) as store:
        with pytest.raises(giouring.GiouringError) as e:
            store.plan(max_requests=4, engine="cpu")
        assert e.value.errno == errno.EOPNOTSUPP and "engine='gpu'" in e.value.strerror
        with store.plan(max_requests=4) as plan:
            assert plan.engine == "gpu"


def restore_layer_by_layer(backing, layout, exec_stream=None, uris=None, paths=None, mover="warps",
                           completions="poll"):
    kv, pool = gpu_pool(layout)
    uris = uris or [f"{backing}&size={POOL_MIB // 2 + 64}M" for _ in range(2)]
    keys = [0x6C61796572000000 + c for c in range(BLOCKS)]
    dst = torch.tensor([shuffled(c) for c in range(BLOCKS)], device="cuda")
    # expected[l][:, c] is chunk c's layer-l object, in the order dst gathers the pool.
    expected = [torch.stack([chunk(c, layer) for c in range(BLOCKS)], dim=1) for layer in range(LAYERS)]
    with giouring.Store.create(uris, pool, exec_stream=exec_stream) as store:
        assert store.gpu_targets == (paths is None)
        if paths is not None:
            assert [p["path"] for p in store.paths] == paths, store.paths
        plan = store.plan(max_requests=BLOCKS, engine="gpu", mover=mover, completions=completions)
        assert plan.engine == "gpu"
        io, compute = torch.cuda.Stream(), torch.cuda.Stream()
        mism = warm(kv, expected, dst)
        for layer in range(LAYERS):
            kv[layer].copy_(expected[layer])  # chunk c in block c
        torch.cuda.synchronize()

        assert plan.save(keys, range(BLOCKS)) == [0] * BLOCKS  # the executors start here
        for layer in range(LAYERS):
            plan.save_layer(layer, stream=io)
        io.synchronize()
        assert all(r.rc == 0 for r in plan.finish())
        assert store.stats()["valid"] == BLOCKS

        for t in kv:
            t.fill_(-1)  # poison: an object not restored cannot pass
        # The stream, never the device: torch.cuda.synchronize() would wait for the executors,
        # persistent kernels that end only at the store's close.
        torch.cuda.current_stream().synchronize()
        assert plan.load(keys, [shuffled(c) for c in range(BLOCKS)]) == [True] * BLOCKS
        # The compute stream first: each layer's check waits on the device for its layer.
        with torch.cuda.stream(compute):
            for layer in range(LAYERS):
                # Odd layers name the stream that is current already (no switch: the fast path).
                plan.wait_layer(layer, stream=compute if layer % 2 else None, timeout=30)
                mism[layer] = (kv[layer][:, dst] != expected[layer]).sum()
        for layer in range(LAYERS):
            plan.load_layer(layer, stream=io)  # one launch a layer, every target in it
        compute.synchronize()
        io.synchronize()
        # The compute stream's waits were enqueued before the loads were launched: the first
        # stalled for its layer's I/O (later ones may find theirs done), and the GPU clock says
        # how long.
        waited = plan.wait_times()
        assert len(waited) == LAYERS and waited[0] > 0.0 and all(0.0 <= w < 30.0 for w in waited), waited
        results = plan.finish()
        assert all(r.rc == 0 for r in results)
        assert mism.tolist() == [0] * LAYERS
        st = plan.stats()
        assert (st["loads"], st["saves"], st["layers"], st["stream_timeouts"]) == (1, 1, 2 * LAYERS, 0)
        moved = sum(d["bytes"] for d in plan.device_stats())
        assert moved == 2 * BLOCKS * LAYERS * pool.object_bytes  # the save, then the load
        if paths is not None and "staged" in paths:
            assert sum(d["staged_bytes"] for d in plan.device_stats()) == moved
        ms = plan.mover_stats()
        if mover == "copy_engine":  # the load's objects, not the save's (the warps move those)
            assert ms["bytes"] == BLOCKS * LAYERS * pool.object_bytes and ms["calls"] > 0, ms
            assert (ms["cq_marks"] > 0) == (completions == "mirror"), ms
        else:
            assert ms["copies"] == 0, ms


def test_a_stream_wait_that_times_out_fails_the_batch():
    kv = [torch.zeros(2, BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16, device="cuda") for _ in range(LAYERS)]
    pool = giouring.KVPool(kv, dims=DIMS)
    with giouring.Store.create([f"mem://hbm?sms=2&size={POOL_MIB + 64}M"], pool) as store:
        plan = store.plan(max_requests=4)
        torch.cuda.synchronize()
        assert plan.load([1, 2], [0, 1]) == [False, False]  # a batch of misses: no request
        compute = torch.cuda.Stream()
        plan.wait_layer(0, stream=compute, timeout=0.001)  # before its layer is launched
        compute.synchronize()
        for layer in range(LAYERS):
            plan.load_layer(layer)
        with pytest.raises(giouring.GiouringError) as e:
            plan.finish()
        assert e.value.errno == errno.ETIME and "layer 0" in e.value.strerror
        assert plan.stats()["stream_timeouts"] == 1


def test_an_sm_partition_made_while_executors_run_is_refused_not_waited_for():
    # Making green contexts waits until no kernel runs: beside the executors it never returned.
    kv = [torch.zeros(2, BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16, device="cuda") for _ in range(LAYERS)]
    pool = giouring.KVPool(kv, dims=DIMS)
    with giouring.Store.create([f"mem://hbm?sms=2&size={POOL_MIB + 64}M"], pool) as store:
        plan = store.plan(max_requests=4)
        assert plan.load([1], [0]) == [False]  # the first batch: the executors start
        with pytest.raises(giouring.GiouringError) as e:
            giouring.SMPartition(8)
        assert e.value.errno == errno.EBUSY and "before starting GPU-executed targets" in e.value.strerror
        plan.finish(check=False)
    with giouring.SMPartition(8) as part:  # the store closed: its executors ended
        assert part.io_stream is not None


def test_cpu_engine_restores_into_a_pool_in_gpu_memory(tmp_path):
    kv = [torch.zeros(2, BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16, device="cuda") for _ in range(2)]
    pool = giouring.KVPool(kv, dims=DIMS)
    with giouring.Store.create([f"file://{tmp_path}/kv.img?size=64M"], pool) as store:
        plan = store.plan(max_requests=8)
        for layer in range(2):
            for c in range(8):
                kv[layer][:, c].copy_(chunk(c, layer))
        torch.cuda.synchronize()
        plan.save(list(range(8)), range(8))
        plan.save_layer(0)
        plan.save_layer(1)
        plan.finish()
        for t in kv:
            t.fill_(-1)
        torch.cuda.synchronize()
        plan.load(list(range(8)), range(8, 16))
        plan.load_layer(0)
        plan.load_layer(1)
        plan.wait_layer(0)
        plan.wait_layer(1)
        plan.finish()
        for layer in range(2):
            for c in range(8):
                assert torch.equal(kv[layer][:, 8 + c], chunk(c, layer))


@pytest.mark.parametrize("target", ["mem://hbm?sms=2", "file://{tmp}/c.img?path=staged"], ids=["gpu-target", "staged"])
def test_a_calibrating_scheduler_learns_that_loads_run_slower_than_configured(tmp_path, target):
    # Bandwidths given 1000x what the targets deliver: every timed load teaches the read factor
    # (clamped to 2x a step), and the slots' modelled reads grow with it. The staged file target
    # is a CPU-executed one under the GPU engine: the scheduler takes the engine of its plans.
    kv = [torch.zeros(2, BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16, device="cuda") for _ in range(LAYERS)]
    pool = giouring.KVPool(kv, dims=DIMS)
    uri = target.format(tmp=tmp_path) + f"&size={POOL_MIB + 64}M"
    with giouring.Store.create([uri], pool) as store:
        plan = store.plan(max_requests=BLOCKS)
        assert plan.engine == "gpu"
        sched = giouring.Scheduler(store, read_gbps=1e5, write_gbps=1e5, calibrate=0.5)
        assert sched.engine == "gpu"
        io = torch.cuda.Stream()
        assert sched.rates() == {"read_factor": 1.0, "write_factor": 1.0, "read_observed": 0, "write_observed": 0}
        torch.cuda.synchronize()
        assert plan.save(list(range(BLOCKS)), range(BLOCKS)) == [0] * BLOCKS  # the executors start
        for layer in range(LAYERS):
            plan.save_layer(layer, stream=io)
        io.synchronize()
        plan.finish()
        ends = []
        for rep in range(3):
            assert plan.load(list(range(BLOCKS)), range(BLOCKS)) == [True] * BLOCKS
            for layer in range(LAYERS):
                ends.append(sched.slot(plan, layer, slack=0.0, stream=io).read_end)
            io.synchronize()  # the stream, never the device: the executors run
            assert all(r.rc == 0 for r in plan.finish())
        r = sched.rates()
        assert r["read_observed"] >= 2 * LAYERS  # the last slot's timer is read at a later slot
        assert r["read_factor"] > 4.0 and r["write_observed"] == 0
        assert ends[-1] > 4 * ends[0]
        # Every load the slots timed, in issue order, the stream waited for: the last slot's too.
        got = sched.transfers()
        assert [(t.kind, t.layer) for t in got] == [("load", layer) for _ in range(3) for layer in range(LAYERS)]
        assert len({t.bytes for t in got}) == 1 and got[0].bytes > 0
        assert all(t.seconds > 10 * t.modelled > 0 for t in got)
        assert sched.rates()["read_observed"] == 3 * LAYERS and sched.transfers() == []
        assert sched.stats()["transfers_lost"] == 0
        # A reset plans with the figures as given again, and learns again from there.
        sched.reset_rates()
        sched.idle()  # the stream was waited for: nothing carried into the next slot
        assert sched.rates() == {"read_factor": 1.0, "write_factor": 1.0, "read_observed": 0, "write_observed": 0}
        # A slot reads back the timers of transfers already done: a batch's own are read at the
        # next batch's first slot (the GPU is behind the host within one; on the H100 no timer of
        # a batch was done while its slots were issued), so two batches.
        again = []
        for rep in range(2):
            assert plan.load(list(range(BLOCKS)), range(BLOCKS)) == [True] * BLOCKS
            again += [sched.slot(plan, layer, slack=0.0, stream=io).read_end for layer in range(LAYERS)]
            io.synchronize()
            assert all(r.rc == 0 for r in plan.finish())
        assert again[0] == pytest.approx(ends[0], rel=1e-6)  # the first slot: nothing learnt yet
        assert sched.rates()["read_observed"] >= LAYERS
        sched.close()
