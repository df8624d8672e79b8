#!/usr/bin/env python3
"""py_op_cost: the host time of one per-layer call of the Python package (giouring.Plan), beside
the ways it could be made, in one process. An engine makes three such calls per layer (load,
wait, save), and where its layers are short (small prefixes, eager Python) that host time is
what the GPU waits for.

Every row times `wait_layer` on a layer that finished already, so what is timed is the call, not
I/O: CPU engine (file:// targets), the host's check of a done layer; GPU engine (`--gpu`,
`mem://hbm` targets), the launch of the stream wait's kernel on the current stream. Rows:

  Plan.wait_layer              the package's call: eagerly straight to the library (ctypes,
                               the stream's handle, no tensors); up to dc9503d it called the op
  ... stream= another          (GPU) the same on a stream other than the current one: the
                               torch.cuda.stream() context around the op, as an engine's
                               compute stream has it
  ... stream= the current one  (GPU) the stream given is already the current one (an engine
                               inside its own torch.cuda.stream() context): no switch
  op, the layer's tensors      torch.ops.giouring.wait_layer with the same list
  op, every pool tensor        the same op given the whole pool's list (what Plan passed before)
  Plan.load_layer              a layer's load call (CPU engine: queued to the plan's thread; GPU
                               engine: the I/O kernel's launch), a batch of one key per layers calls
  Scheduler.slot               the same load through the scheduler (giouring.Scheduler), as an
                               engine with the scheduler issues it each layer: uncalibrated, and
                               calibrating (its transfers timed: GPU engine, two CUDA events
                               around each launch and a read-back of those done)
  Scheduler.defer              a save layer queued to the scheduler's backlog (issued later,
                               untimed, by drain())
  a layer's calls ...          every call a layer of bench/ttft_llama.py's giouring-sched makes,
                               in its order (a load and a save batch open): the host time its
                               hooks spend per layer, less the hooks' own Python and any wait
                               for room in a full launch queue
  Plan.save, store full        per batch, not per layer: planning the save of 32 chunks on a
                               full store, every chunk evicting one (the evicted slots' entries
                               written FREE, then a Flush), each rep the median of 4 batches
  Plan.finish of that save     the save's commit (the VALID entries, a Flush each side)

Each row: microseconds per call, `--reps` repetitions of `--calls` calls, min / median / max.
It is a program, not a test: run it in the venv of scripts/python-test.sh, e.g.

    /work/pybuild/py-venv/bin/python bench/py_op_cost.py --layers 32
"""
import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time

import torch

import giouring


def timed(fn, calls, reps):
    fn()  # the first call's one-off costs (lookups, lazy initialization) outside the timing
    per = []
    for _ in range(reps):
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        per.append((time.perf_counter_ns() - t) / calls / 1e3)
    return per


FULL_BATCH = 32


def full_store_rows(store, plan, a, batches=4):
    """Planning and finishing a save on a full store, where every chunk evicts one: the planning
    writes the evicted slots' entries FREE (and flushes) before any data, the finish writes the
    VALID entries (and flushes). Per batch of the plan's max_requests chunks, not per layer: an
    engine plans one a request, before its first layer."""
    n = FULL_BATCH
    key = 1 << 20

    def save(timed_ns=None):
        nonlocal key
        keys = list(range(key, key + n))
        key += n
        t = time.perf_counter_ns()
        rc = plan.save(keys, list(range(n)))
        t_save = time.perf_counter_ns() - t
        assert rc == [0] * n, rc
        for layer in range(a.layers):
            plan.save_layer(layer)
        for layer in range(a.layers):  # the data written: what finish() then does is the commit
            plan.wait_layer(layer, timeout=60.0)
        if a.gpu:
            torch.cuda.current_stream().synchronize()
        t = time.perf_counter_ns()
        assert all(r.rc == 0 for r in plan.finish())
        if timed_ns is not None:
            timed_ns[0].append(t_save)
            timed_ns[1].append(time.perf_counter_ns() - t)

    cap = store.stats()["capacity"]
    while store.stats()["evictions"] == 0:  # full, and one batch past it
        save()
    per_save, per_finish = [], []
    for _ in range(a.reps):
        got = ([], [])
        for _ in range(batches):
            save(got)
        per_save.append(statistics.median(got[0]) / 1e3)
        per_finish.append(statistics.median(got[1]) / 1e3)
    return [(f"Plan.save of {n} chunks, store full ({cap} slots): each evicts (FREE entries, Flush)", per_save),
            (f"Plan.finish of that save (VALID entries, Flush)", per_finish)]


def layer_calls_row(store, load, save, sched, io, comp, per_layer, a, where):
    """Every call a layer of bench/ttft_llama.py's giouring-sched makes, in its order, with a load
    and a save batch open: GPU engine, the layer's start event on the compute stream (the current
    one) and the I/O stream's wait for it, the slot (layer l + 1's load and the deferred saves the
    slack takes: calibrating, on the I/O stream), the two events around the compute stream's
    wait for layer l, and the save layer deferred; CPU engine, the slot, the wait and the defer.
    What the TTFT bench's hooks time per layer less the hooks' own Python: whether the host
    time a forward spends in them is the calls' or the GPU's (a full launch queue)."""
    gpu = a.gpu
    ev = [torch.cuda.Event() for _ in range(3)] if gpu else []

    def begin():
        assert load.load([1], [1]) == [True]
        assert save.save([3], [3]) == [0]
        sched.slot(load, 0, slack=0.0, stream=io)  # the first layer's load, as the bench's start()

    def layer(l):
        if gpu:
            ev[0].record(comp)
            io.wait_event(ev[0])
        sched.slot(load if l + 1 < a.layers else None, (l + 1) % a.layers, slack=1e-3, stream=io)
        if gpu:
            ev[1].record(comp)
        load.wait_layer(l, stream=comp, timeout=60.0)
        if gpu:
            ev[2].record(comp)
        sched.defer(save, l)

    def end():
        sched.drain(stream=io)
        if gpu:
            io.synchronize()
            comp.synchronize()
        sched.idle()
        assert all(r.rc == 0 for r in load.finish(timeout=60.0))
        assert all(r.rc == 0 for r in save.finish(timeout=60.0))
        assert store.remove([3]) == [True]  # the next batch saves it again

    what = ("start event, I/O stream's wait, " if gpu else "") + "Scheduler.slot (calibrating), " + (
        "2 events around " if gpu else "") + "Plan.wait_layer, Scheduler.defer"
    with torch.cuda.stream(comp) if gpu else contextlib.nullcontext():  # the compute stream current, as in the bench
        per = per_layer(begin, layer, end)
    return f"a layer's calls in the TTFT bench's giouring-sched order ({what}){where}", per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--gpu", action="store_true", help="GPU engine over mem://hbm targets (needs CUDA)")
    a = ap.parse_args()
    dev = "cuda" if a.gpu else "cpu"
    # vLLM's layout, a tensor per layer: [2, blocks, 16 tokens, 8 heads, 128 channels], bf16.
    kv = [torch.zeros(2, 64, 16, 8, 128, dtype=torch.bfloat16, device=dev) for _ in range(a.layers)]
    pool = giouring.KVPool(kv, dims=("part", "block", "token", "head", "channel"))
    tmp = tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    uri = "mem://hbm?sms=2&size=256M" if a.gpu else f"file://{tmp}/dev0.img?size=256M"
    gpu = torch.cuda.get_device_name() if a.gpu else "none"
    print(f"machine: {platform.node()}, {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, torch {torch.__version__}, GPU {gpu}")
    print(f"py_op_cost: wait_layer on a finished layer, {a.layers}-layer pool (a tensor per layer), "
          f"{'GPU engine, ' + uri if a.gpu else 'CPU engine, file:// target'}; {a.reps} x {a.calls} calls\n")
    rows = []
    side = torch.cuda.Stream() if a.gpu else None  # made before the executors start
    # The TTFT bench's I/O and compute streams (made before the executors start: making green
    # contexts waits for every kernel); the executors themselves run beside them, on no side.
    part = giouring.SMPartition(io_sms=8) if a.gpu else None
    with giouring.Store.create([uri], pool) as store:
        # Schedulers before the first batch: the GPU engine's timers are made before the executors start.
        scheds = {c: giouring.Scheduler(store, read_gbps=14.0, write_gbps=7.0, calibrate=c) for c in (0.0, 0.125)}
        plan = store.plan(max_requests=4)
        # Every plan before the first batch: GPU-executed targets' executors start with it, and
        # a plan made after would wait behind them (the store refuses it with EBUSY).
        full_plan = store.plan(max_requests=FULL_BATCH)
        save_plan = store.plan(max_requests=4)
        plan.save([1], [0])
        for layer in range(a.layers):
            plan.save_layer(layer)
        plan.finish()
        assert plan.load([1], [1]) == [True]
        for layer in range(a.layers):
            plan.load_layer(layer)
        for layer in range(a.layers):
            plan.wait_layer(layer)
        if a.gpu:
            # The stream, never the device: the targets' executors are persistent kernels.
            torch.cuda.current_stream().synchronize()
        h, op, layer = plan.handle, torch.ops.giouring.wait_layer.default, a.layers // 2
        mine, every = pool.layer_tensors[layer], pool.tensors
        rows.append(("Plan.wait_layer", timed(lambda: plan.wait_layer(layer), a.calls, a.reps)))
        if a.gpu:
            rows.append(("Plan.wait_layer, stream= another", timed(lambda: plan.wait_layer(layer, stream=side), a.calls,
                                                                  a.reps)))
            cur = torch.cuda.current_stream()
            rows.append(("Plan.wait_layer, stream= the current one", timed(lambda: plan.wait_layer(layer, stream=cur),
                                                                          a.calls, a.reps)))
        rows.append(("op, the layer's tensors", timed(lambda: op(h, layer, 10**10, mine), a.calls, a.reps)))
        rows.append(("op, every pool tensor", timed(lambda: op(h, layer, 10**10, every), a.calls, a.reps)))
        if a.gpu:
            torch.cuda.current_stream().synchronize()
            side.synchronize()
        plan.finish()
        # Plan.load_layer: each layer runs once a batch, so a batch of one key per 'layers' calls;
        # only the calls are timed (the CPU engine queues the layer to its thread; the GPU engine
        # launches the I/O kernel on the current stream).
        def per_layer(begin, call, end):
            """us per call(layer), a batch per `layers` calls: begin() and end() untimed."""
            per = []
            for _ in range(a.reps):
                ns, n = 0, 0
                while n < a.calls:
                    begin()
                    t = time.perf_counter_ns()
                    for layer in range(a.layers):
                        call(layer)
                    ns += time.perf_counter_ns() - t
                    n += a.layers
                    end()
                per.append(ns / n / 1e3)
            return per

        def load_batch():
            assert plan.load([1], [1]) == [True]

        def finish():
            if a.gpu:
                torch.cuda.current_stream().synchronize()
            assert all(r.rc == 0 for r in plan.finish())

        rows.append(("Plan.load_layer (a batch of one key per layers calls)",
                     per_layer(load_batch, plan.load_layer, finish)))
        for c, sched in scheds.items():
            rows.append((f"Scheduler.slot, {'calibrating' if c else 'uncalibrated'} (the same loads)",
                         per_layer(load_batch, lambda layer: sched.slot(plan, layer, slack=0.0), finish)))
        sched = scheds[0.0]

        def save_batch():
            assert plan.save([2], [2]) == [0]

        def drain():
            sched.drain()
            finish()
            assert store.remove([2]) == [True]  # the next batch saves it again

        rows.append(("Scheduler.defer (a save batch of one key, drained after)",
                     per_layer(save_batch, lambda layer: sched.defer(plan, layer), drain)))
        if a.gpu:
            rows.append(layer_calls_row(store, plan, save_plan, scheds[0.125], side, torch.cuda.current_stream(),
                                        per_layer, a, ", ordinary streams"))
            if part is not None:
                rows.append(layer_calls_row(store, plan, save_plan, scheds[0.125], part.io_stream, part.compute_stream,
                                            per_layer, a, f", the SM partition's streams ({part.io_sms} I/O SMs, "
                                            f"{'green contexts' if part.isolated else 'fallback: ordinary streams'})"))
        else:
            rows.append(layer_calls_row(store, plan, save_plan, scheds[0.125], None, None, per_layer, a, ""))
        for sched in scheds.values():
            sched.close()
        rows += full_store_rows(store, full_plan, a)
    if part is not None:
        part.close()  # after the store: its executors ended with it
    print("| call | tensors passed | us per call: min | median | max |")
    print("| --- | --- | --- | --- | --- |")
    for name, per in rows:
        n = len(every) if name == "op, every pool tensor" else len(mine) if name.startswith("op") else "-"
        print(f"| {name} | {n} | {min(per):.2f} | {statistics.median(per):.2f} | {max(per):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
