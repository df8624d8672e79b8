#!/usr/bin/env python3
"""py_op_cost: the host time of one per-layer call of the Python package (giouring.Plan), beside
the ways it could be made, in one process. An engine makes three such calls per layer (load,
wait, save), and where its layers are short (small prefixes, eager Python) that host time is
what the GPU waits for.

Every row times `wait_layer` on a layer that finished already, so what is timed is the call, not
I/O: CPU engine (file:// targets), the host's check of a done layer; GPU engine (`--gpu`,
`mem://hbm` targets), the launch of the stream wait's kernel on the current stream. Rows:

  Plan.wait_layer              the package's call (the layer's tensors, KVPool.layer_tensors)
  ... stream= another          (GPU) the same on a stream other than the current one: the
                               torch.cuda.stream() context around the op, as an engine's
                               compute stream has it
  ... stream= the current one  (GPU) the stream given is already the current one (an engine
                               inside its own torch.cuda.stream() context): no switch
  op, the layer's tensors      torch.ops.giouring.wait_layer with the same list
  op, every pool tensor        the same op given the whole pool's list (what Plan passed before)
  Plan.load_layer              a layer's load call (CPU engine: queued to the plan's thread; GPU
                               engine: the I/O kernel's launch), a batch of one key per layers calls

Each row: microseconds per call, `--reps` repetitions of `--calls` calls, min / median / max.
It is a program, not a test: run it in the venv of scripts/python-test.sh, e.g.

    /work/pybuild/py-venv/bin/python bench/py_op_cost.py --layers 32
"""
import argparse
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
    with giouring.Store.create([uri], pool) as store:
        plan = store.plan(max_requests=4)
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
        per = []
        for _ in range(a.reps):
            ns, n = 0, 0
            while n < a.calls:
                assert plan.load([1], [1]) == [True]
                t = time.perf_counter_ns()
                for layer in range(a.layers):
                    plan.load_layer(layer)
                ns += time.perf_counter_ns() - t
                n += a.layers
                if a.gpu:
                    torch.cuda.current_stream().synchronize()
                plan.finish()
            per.append(ns / n / 1e3)
        rows.append(("Plan.load_layer (a batch of one key per layers calls)", per))
    print("| call | tensors passed | us per call: min | median | max |")
    print("| --- | --- | --- | --- | --- |")
    for name, per in rows:
        n = len(every) if name == "op, every pool tensor" else len(mine)
        print(f"| {name} | {n} | {min(per):.2f} | {statistics.median(per):.2f} | {max(per):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
