#!/usr/bin/env python3
"""Time to first token of a real model whose prefix KV comes back from the SSD tier.

    python3 bench/ttft_llama.py --json OUT.json [--contexts 8K,32K,64K,128K] [--hits 0.5,0.9,...]

Hugging Face transformers' Llama with the Llama3-8B configuration and random bf16 weights (nothing
is downloaded) prefills a request of T tokens whose first C = h x T tokens (hit rate h, whole
16-token blocks) were computed before and are stored; the other N = T - C are computed now. Per
(T, h), in one process, each system below serves the request and the time to its first token is
taken (wall clock, from a synchronized GPU to the token id on the host):

- recompute: the prefix is not reused; all T tokens are computed (HBM only; one figure per T).
- hbm: the prefix's KV is already in HBM: the compute alone, the reference every overhead is
  taken against (TTFT over hbm = TTFT - hbm's TTFT at the same point).
- hbm-part: the same, computed on the compute side of giouring-sched's SM partition (green
  contexts; the SMs left after --io-sms): what the partition alone costs, I/O or not. The
  scheduler's per-layer slack is taken from this run's layer times.
- offload: transformers' own offloaded cache (DynamicCache(offloading=True)): the prefix in pinned
  DRAM where its offload put it, layer l + 1 prefetched while layer l computes.
- cpu-per-object: giouring's store on file targets in /dev/shm with the CPU engine: a CPU thread
  issues one read per object and copies it into GPU memory (the LMCache-SSD / GDS shape); layer
  l + 1 is queued while layer l computes, and the host waits for each layer before its attention.
  Its targets go through the same drive timing model as the others (--cpu-model; before
  2026-12-05 they ran at the executor threads' own speed).
- giouring: the GPU engine over GPU-executed targets standing in for 4 Gen5 drives (the SSD timing
  model: MODELLED bandwidths; the bytes themselves cross PCIe from pinned host memory): one launch
  of the I/O kernel per layer, layer l + 1's load starting when layer l starts, the new tokens' KV
  saved layer by layer. Two ways:
  - giouring-naive: loads and saves issued at once on ordinary streams (reads beside writes, the
    I/O kernels sharing every SM with compute);
  - giouring-sched: the slack-aware scheduler (giouring.Scheduler) on an I/O partition of
    --io-sms SMs (green contexts): each layer's slot loads the next layer first and issues
    deferred saves only into the slack measured for that layer (the hbm run's layer times),
    its bandwidths corrected online from its loads' and saves' measured times
    (--sched-calibrate: the weight of each; 0 plans with the modelled figures as given);
  - giouring-sched-static (not in the default systems): the same scheduler planning with the
    drives' figures as given, never corrected: the baseline the correction is measured against.
- giouring-staged (not in the default systems; contexts up to --staged-max): the staged path a
  machine without peer-to-peer takes (docs/staged.md), under the same scheduler on the same
  partition: file targets in /dev/shm with path=staged, CPU-executed as cpu-per-object's are
  (threads stand in for each controller, through the same SSD timing model as the GPU-executed
  drives: MODELLED, and no faster than the threads' own copies, which --staged-model none
  shows alone), read into pinned staging slots, and the I/O kernel's warps move each object into
  the pool. Against giouring-sched at the same modelled drives it shows what the staged path
  costs where peer-to-peer is missing: the mover's and the completion polls' reads across PCIe
  beside a real prefill's compute.

The stand-in drives' executors are persistent kernels holding 2 SMs each (8 in all) during every
system's run, on a side of the SM partition of their own (--exec-placement): a real drive takes no
SM, so no compute kernel shares theirs; hbm-part and giouring compute on the same compute side.
Their warps copy from mapped host memory across PCIe (--drive-backing host), which slows kernels on
other SMs too: 0.4-0.5 ms a layer at 32K with 8 warps an executor block, 0.10-0.16 ms with 2
(--exec-warps), but with 2 the loads ran 23-27% slower than modelled (8: 12-13%).
Figures are labelled: TTFT, bubble and bulk H2D bandwidth are measured; the drives' bandwidth is
modelled; cost and endurance are derived from measured throughput with stated prices.

Correctness: the prefix KV each I/O system restored is compared bitwise with the KV the full
prefill computed, and the first token's logits with those of the hbm run (bitwise) and of the full
recompute (bf16 tolerance: the new tokens' projections run as N-row GEMMs there and T-row ones in
the recompute, whose kernels round differently).
"""

from __future__ import annotations

import argparse
import ctypes
import contextlib
import faulthandler
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

# Every kernel loaded when the context is made: a kernel loaded lazily while the stand-in drives'
# persistent executors run would wait for them for ever (docs/design.md, "Persistent kernels and
# lazy loading"); cuBLAS picks new kernels for each new shape, so no warm-up covers them all.
os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BLOCK = 16  # tokens per pool block and per stored chunk


def parse_tokens(s: str) -> int:
    s = s.strip().upper()
    return int(s[:-1]) * 1024 if s.endswith("K") else int(s)


def args_parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", default="8K,32K,64K,128K", help="context lengths T (tokens)")
    ap.add_argument("--hits", default="0.5,0.9,0.95,0.97,0.98,0.985,0.99,0.995",
                    help="hit rates (fraction of T whose KV is stored); 0 is the recompute")
    ap.add_argument("--low-hits", default="0.25,0.5,0.75",
                    help="extra hit rates run only for contexts up to --low-hits-max (they cost a near-full prefill)")
    ap.add_argument("--low-hits-max", default="32K")
    ap.add_argument("--systems", default="hbm,hbm-part,giouring-sched,giouring-naive,offload,cpu-per-object,recompute")
    ap.add_argument("--slow-hits", default="0.5,0.9,0.97,0.99",
                    help="hit rates at which the slow baselines (offload, cpu-per-object) run")
    ap.add_argument("--reps", type=int, default=2, help="repetitions of every point (medians and spread)")
    ap.add_argument("--gc", choices=("paused", "on"), default="paused",
                    help="Python's garbage collector during each timed prefill: paused (collected just before, "
                         "as timeit does and as engines freeze it after start-up: a full collection of a "
                         "process holding a model is a pause of its own, met by whichever row it falls in) "
                         "or on")
    ap.add_argument("--io-sms", type=int, default=8, help="SMs of the scheduler's I/O partition")
    ap.add_argument("--drives", type=int, default=4)
    ap.add_argument("--drive-read-gbps", type=float, default=14.0, help="MODELLED read GB/s per drive (Gen5)")
    ap.add_argument("--drive-write-gbps", type=float, default=7.0, help="MODELLED write GB/s per drive")
    ap.add_argument("--drive-mixed-gbps", type=float, default=3.0,
                    help="MODELLED GB/s per drive reading and writing at once (both together)")
    ap.add_argument("--exec-sms", type=int, default=2, help="executor SMs of each stand-in drive")
    ap.add_argument("--exec-warps", type=int, default=0,
                    help="warps of each executor block of a stand-in drive (0: the target's default, 8). With "
                         "host backing each busy warp copies across PCIe from mapped host memory, which slows "
                         "kernels on every other SM: at 32K, 8 a block slowed each layer beside the I/O by "
                         "0.4-0.5 ms and loads ran 12-13%% slower than modelled; 2 a block, 0.10-0.16 ms and 23-27%% "
                         "(bench/results/2026-12-05-exec-partition-h200.md)")
    ap.add_argument("--drive-backing", choices=("host", "hbm"), default="host",
                    help="the stand-in drives' data: 'host' (mapped pinned host memory, read across PCIe by the "
                         "executors' warps) or 'hbm' (no SM reads host memory, as with a drive's DMA; needs "
                         "the drives' size in GPU memory; their reads are then modelled no faster than the "
                         "measured bulk H2D shared among them, the link a real drive's DMA crosses)")
    ap.add_argument("--exec-placement", choices=("partition", "shared"), default="partition",
                    help="where the stand-in drives' executors run: on SMs of their own (a third side of the "
                         "SM partition, as a real drive needs no SM), or 'shared': on any SM, beside the compute "
                         "partition's kernels (before 2026-12-05)")
    ap.add_argument("--drive-room", type=float, default=2.5,
                    help="the stand-in drives' capacity, in units of the largest context's prefix KV (at least "
                         "1.25): room for the runs' new chunks beside the prefix; less room means more refills "
                         "between points (untimed), and leaves GPU memory to the model with --drive-backing hbm "
                         "(2.5 at 64K took 21 GiB of an H100's 79)")
    ap.add_argument("--drive-params", default="",
                    help="more URI parameters of every stand-in drive, e.g. queues=4 (gio_gpu_target's URI)")
    ap.add_argument("--sched-calibrate", type=float, default=0.125,
                    help="giouring-sched: weight of each measured transfer in its bandwidth correction (0: none)")
    ap.add_argument("--sched-reset", choices=("never", "context", "point"), default="never",
                    help="calibrating schedulers: forget the learnt factors before each context or each (context, "
                         "hit) point (never: one calibration over the whole grid, as before 2026-12-05; it saw "
                         "the write factor climb 1.18 -> 1.86 across the hit rates)")
    ap.add_argument("--cpu-model", choices=("drives", "none"), default="drives",
                    help="cpu-per-object: its file targets through the drives' timing model, as every SSD-tier "
                         "system's (none: the executor threads' own speed, as before 2026-12-05)")
    ap.add_argument("--cpu-max", default="32K",
                    help="cpu-per-object runs (and its file store is filled) only for contexts up to this")
    ap.add_argument("--shm", default="/dev/shm", help="where the CPU-executed file targets live")
    ap.add_argument("--staged-max", default="32K",
                    help="giouring-staged runs (and its file store is filled) only for contexts up to this")
    ap.add_argument("--staged-model", choices=("drives", "none"), default="drives",
                    help="giouring-staged: its file targets through the drives' timing model (--drive-*-gbps), "
                         "or none (the executor threads' own speed)")
    ap.add_argument("--staged-gbps", type=float, default=8.0,
                    help="giouring-staged with --staged-model none: the scheduler's starting read and write GB/s "
                         "per target (corrected online from the measured loads and saves)")
    ap.add_argument("--staged-params", default="",
                    help="more URI parameters of every giouring-staged file target, e.g. threads=4")
    ap.add_argument("--tiny", action="store_true", help="a 2-layer toy model (for a CPU check of this script)")
    ap.add_argument("--layers", type=int, default=0, help="Llama3-8B's dimensions with this many layers (0: its 32)")
    ap.add_argument("--json", help="write every figure here")
    # Prices for the cost table (Tutti's): applied to measured throughput, never measured here.
    ap.add_argument("--gpu-usd-h", type=float, default=5.0, help="GPU price, $ per hour")
    ap.add_argument("--dram-usd-gb-h", type=float, default=0.0088, help="DRAM price, $ per GB and hour")
    ap.add_argument("--ssd-usd-gb-h", type=float, default=0.000082, help="SSD price, $ per GB and hour")
    ap.add_argument("--drive-tb", type=float, default=7.68, help="capacity of each drive of the SSD tier, TB")
    ap.add_argument("--drive-dwpd", type=float, default=1.0, help="the drives' rated drive writes per day")
    ap.add_argument("--wait-timeout", type=float, default=10.0, help="GPU engine: a layer wait's deadline, s")
    ap.add_argument("--report", metavar="JSON",
                    help="no run: the analysis and tables again from a JSON this bench wrote (any machine)")
    ap.add_argument("--cufile-probe", action="store_true", help="try to register a file with cuFile and report")
    return ap.parse_args()


# ---------------------------------------------------------------- model and attention


def register_attention():
    """SDPA with a lower-right causal mask and GQA, as the per-layer times in the bench's notes
    were measured: transformers' own SDPA path materializes an N x T mask when N < T."""
    from torch.nn.attention.bias import causal_lower_right
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    def attention(module, q, k, v, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kw):
        n, t = q.shape[2], k.shape[2]
        mask = None if n == t else causal_lower_right(n, t)
        try:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=n == t, scale=scaling,
                                               enable_gqa=True)
        except RuntimeError:  # a kernel without GQA: heads repeated instead
            g = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=n == t, scale=scaling)
        return o.transpose(1, 2).contiguous(), None

    AttentionInterface.register("gio_sdpa", attention)
    AttentionMaskInterface.register("gio_sdpa", lambda *a, **k: None)


def make_model(tiny: bool, device, layers: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    if tiny:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=64, vocab_size=1000, max_position_embeddings=1 << 18)
    else:  # Llama3-8B
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                          num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=1 << 18,
                          rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False)
        if layers:
            cfg.num_hidden_layers = layers
    cfg._attn_implementation = "gio_sdpa"
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(old)
    return model.eval(), cfg


# ---------------------------------------------------------------- the pool cache


# The systems that go through a giouring.Scheduler on the SM partition: corrected, as given, and
# over the staged path.
SCHED_SYSTEMS = ("giouring-sched", "giouring-sched-static", "giouring-staged")


class Hooks:
    """What a system does around each layer: the base does nothing (the hbm run)."""

    def start(self, ctx):  # before the forward, inside the timed region
        pass

    def layer_start(self, l):
        pass

    def before_attention(self, l):
        pass

    def after_write(self, l):
        pass


def pool_cache_class():
    from transformers.cache_utils import Cache, CacheLayerMixin

    class PoolLayer(CacheLayerMixin):
        is_sliding = False

        def __init__(self, cache, idx):
            super().__init__()
            self.cache, self.idx = cache, idx
            self.is_initialized = True

        def lazy_initialization(self, key_states, value_states):
            pass

        def update(self, key_states, value_states, *a, **kw):
            return self.cache.update_layer(self.idx, key_states, value_states)

        def get_mask_sizes(self, query_length, *a):
            return self.cache.prefix + query_length, 0

        def get_seq_length(self):
            return self.cache.prefix

        def get_max_length(self):
            return -1

    class PoolCache(Cache):
        """The prefix's KV in the engine's paged pool (one tensor per layer, [2, blocks, 16, heads,
        dim], vLLM's layout, token-major), the new tokens' KV written after it, and attention reading
        the pool in place: keys and values are views, never copies."""

        def __init__(self, pool, prefix, hooks):
            self.pool, self.prefix, self.hooks = pool, prefix, hooks
            super().__init__(layers=[PoolLayer(self, i) for i in range(len(pool))])

        def flat(self, l, part):
            t = self.pool[l][part]
            return t.view(t.shape[0] * t.shape[1], t.shape[2], t.shape[3])  # [tokens, heads, dim]

        def update_layer(self, l, k, v):
            self.hooks.before_attention(l)
            n = k.shape[2]
            c = self.prefix
            self.flat(l, 0)[c:c + n].copy_(k[0].transpose(0, 1))
            self.flat(l, 1)[c:c + n].copy_(v[0].transpose(0, 1))
            self.hooks.after_write(l)
            return (self.flat(l, 0)[:c + n].transpose(0, 1).unsqueeze(0),
                    self.flat(l, 1)[:c + n].transpose(0, 1).unsqueeze(0))

    return PoolCache


# ---------------------------------------------------------------- systems


class Ctx:
    """One request: T tokens, C of them a stored prefix, keys of its chunks."""

    def __init__(self, T, C, ids, tag):
        self.T, self.C, self.N = T, C, T - C
        self.ids = ids
        self.tag = tag
        self.prefix_keys = [key(tag, T, i) for i in range(C // BLOCK)]
        self.new_chunks = list(range(C // BLOCK, T // BLOCK))  # whole chunks of the new tokens

    runs = 0

    def fresh_new_keys(self):
        """The new tokens' chunk keys for one run: new to the store in every run (a store that
        held them would answer EEXIST and write nothing)."""
        Ctx.runs += 1
        return [key(self.tag | Ctx.runs << 20, self.T, i) for i in self.new_chunks]


def key(tag, T, chunk):
    # A chunk's key: the bench's stand-in for a hash of its tokens (the same prompt, the same keys).
    return (tag << 96) | (T << 40) | chunk


class LayerEvents(Hooks):
    """Stamps each layer's start on the compute stream (per-layer compute times, bubbles)."""

    def __init__(self, layers, stream_fn):
        self.layers = layers
        self.stream_fn = stream_fn
        self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(layers + 1)]
        self.wait_ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                        for _ in range(layers)]
        self.waited = [False] * layers
        self.ev0 = torch.cuda.Event(enable_timing=True)
        self.h0 = None
        self.host_t = [0.0] * layers

    def begin(self):
        """The forward's start, on both clocks, with the stream empty (after a synchronize): the
        GPU reaches ev0 as soon as it is recorded, so that later events and host times compare."""
        self.h0 = time.perf_counter()
        self.ev0.record(self.stream_fn())

    def layer_start(self, l):
        self.host_t[l] = time.perf_counter()
        self.ev[l].record(self.stream_fn())

    def lead_ms(self):
        """Per layer, how far the host ran ahead of the GPU at the layer's start (MEASURED): when
        the GPU reached the layer's start event, less when the host recorded it, both from
        begin(). About 0 where the GPU had nothing queued and waited for the host (a host-bound
        layer); the queued work's time where the host was ahead (a GPU-bound one). None before
        begin()."""
        if self.h0 is None:
            return None
        return [self.ev0.elapsed_time(self.ev[l]) - (self.host_t[l] - self.h0) * 1e3 for l in range(self.layers)]

    def before_attention(self, l):
        # The two records a system that waits here makes around its wait (its bubble's events),
        # with nothing between: every row pays the bench's own instruments alike.
        s = self.stream_fn()
        a, z = self.wait_ev[l]
        a.record(s)
        z.record(s)

    def end(self):
        self.ev[self.layers].record(self.stream_fn())

    def layer_ms(self):
        return [self.ev[i].elapsed_time(self.ev[i + 1]) for i in range(self.layers)]

    def bubble_ms(self):
        return [a.elapsed_time(b) if w else 0.0 for (a, b), w in zip(self.wait_ev, self.waited)]


@contextlib.contextmanager
def gc_paused(mode):
    """The timed region of one prefill with Python's collector paused (--gc paused): collected
    first, so that every row starts from the same heap, and enabled again after."""
    if mode != "paused":
        yield
        return
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def timed_host(part):
    """Adds the host time of the hook it wraps to self.host_s[part]: where TTFT over the HBM run
    goes besides the GPU's waits (planning the batch, the per-layer calls)."""
    def wrap(fn):
        def hook(self, *args):
            t = time.perf_counter()
            try:
                return fn(self, *args)
            finally:
                self.host_s[part] += time.perf_counter() - t
        return hook
    return wrap


class GiouringHooks(LayerEvents):
    def __init__(self, bench, layers, sched, system):
        """sched: the giouring.Scheduler the layers go through (on the partition), or None (naive)."""
        self.b = bench
        self.sched = sched
        self.system = system
        self.comp = bench.part.compute_stream if sched else torch.cuda.current_stream()
        self.io = bench.part.io_stream if sched else bench.io_stream
        self.save_stream = bench.save_stream
        super().__init__(layers, lambda: self.comp)
        self.write_ev = [torch.cuda.Event() for _ in range(layers)]
        self.decisions = []
        # Host time inside these hooks (MEASURED), by hook: "start" plans the batch, the others
        # are each layer's calls (their sum is the forward's per-layer host time).
        self.host_s = {"start": 0.0, "layer_start": 0.0, "before_attention": 0.0, "after_write": 0.0}

    @timed_host("start")
    def start(self, ctx):
        b = self.b
        self.ctx = ctx
        self.load, self.save = b.plans_of(self.system)
        hits = self.load.load(ctx.prefix_keys, list(range(len(ctx.prefix_keys))))
        if not all(hits):
            raise RuntimeError(f"{hits.count(False)} prefix chunks missing from the store")
        self.saving = bool(ctx.new_chunks)
        if self.saving:
            rc = self.save.save(ctx.fresh_new_keys(), ctx.new_chunks)
            if any(r != 0 for r in rc):
                raise RuntimeError(f"save planning: {rc}")
        self.io.wait_stream(self.comp)
        if self.sched:
            d = self.sched.slot(self.load, 0, slack=0.0, stream=self.io, sm=b.args.io_sms)
            self.decisions.append(d)
        else:
            self.load.load_layer(0, stream=self.io)

    @timed_host("layer_start")
    def layer_start(self, l):
        super().layer_start(l)  # stamps the layer's start on the compute stream ...
        self.io.wait_event(self.ev[l])  # ... which the I/O waits for: one event, one host call fewer
        nxt = l + 1 < self.layers
        if self.sched:
            slack = self.b.profile[l] if self.b.profile else 0.0
            d = self.sched.slot(self.load if nxt else None, l + 1 if nxt else 0, slack=slack, stream=self.io,
                                  sm=self.b.args.io_sms)
            self.decisions.append(d)
        elif nxt:
            self.load.load_layer(l + 1, stream=self.io)

    @timed_host("before_attention")
    def before_attention(self, l):
        a, z = self.wait_ev[l]
        a.record(self.comp)
        self.load.wait_layer(l, stream=self.comp, timeout=self.b.args.wait_timeout)
        z.record(self.comp)
        self.waited[l] = True

    @timed_host("after_write")
    def after_write(self, l):
        if not self.saving:
            return
        if self.sched:
            self.sched.defer(self.save, l)  # its slot's stream waits for this layer's start
        else:
            self.write_ev[l].record(self.comp)
            self.save_stream.wait_event(self.write_ev[l])
            self.save.save_layer(l, stream=self.save_stream)

    def timed(self):
        """Whether this system's scheduler times its transfers (it calibrates)."""
        return self.sched is not None and self.sched.calibrate > 0

    def forget_transfers(self):
        """Before the timed region: drops the transfers timed by earlier forwards."""
        if self.timed():
            self.sched.transfers()

    def load_ms(self):
        """After finish(): each layer's load as the scheduler timed it on the I/O stream (MEASURED,
        CUDA events around its kernel), ms; None for a layer not timed."""
        if not self.timed():
            return None
        got = {t.layer: t.seconds * 1e3 for t in self.sched.transfers() if t.kind == "load"}
        return [got.get(l) for l in range(self.layers)]

    def finish(self):
        """After the first token: the saves still deferred, then both batches' results."""
        saved = 0
        if self.sched and self.saving:
            saved = self.sched.drain(stream=self.io)
        self.b.sync()
        if self.sched:
            self.sched.idle()
        res = self.load.finish(timeout=60)
        bad = [r for r in res if r.rc]
        if self.saving:
            res2 = self.save.finish(timeout=60)
            bad += [r for r in res2 if r.rc]
        if bad:
            raise RuntimeError(f"giouring: failed requests {bad[:4]}")
        return saved


class CpuHooks(LayerEvents):
    """The CPU engine: a thread issues each object's read and copy; the host waits per layer."""

    def __init__(self, bench, layers):
        super().__init__(layers, torch.cuda.current_stream)
        self.b = bench

    def start(self, ctx):
        self.load = self.b.cpu_load
        hits = self.load.load(ctx.prefix_keys, list(range(len(ctx.prefix_keys))))
        if not all(hits):
            raise RuntimeError(f"{hits.count(False)} prefix chunks missing from the file store")
        self.load.load_layer(0)

    def layer_start(self, l):
        super().layer_start(l)
        if l + 1 < self.layers:
            self.load.load_layer(l + 1)

    def before_attention(self, l):
        a, z = self.wait_ev[l]
        a.record(torch.cuda.current_stream())
        self.load.wait_layer(l, timeout=120.0)
        z.record(torch.cuda.current_stream())
        self.waited[l] = True

    def finish(self):
        res = self.load.finish(timeout=60)
        bad = [r for r in res if r.rc]
        if bad:
            raise RuntimeError(f"cpu-per-object: failed requests {bad[:4]}")
        return 0


# ---------------------------------------------------------------- the bench


class Bench:
    def __init__(self, args):
        self.args = args
        self.dev = torch.device("cuda")
        register_attention()
        self.model, self.cfg = make_model(args.tiny, self.dev, args.layers)
        self.L = self.cfg.num_hidden_layers
        self.kvh = self.cfg.num_key_value_heads
        self.hd = self.cfg.head_dim
        self.PoolCache = pool_cache_class()
        self.contexts = [parse_tokens(x) for x in args.contexts.split(",")]
        self.Tmax = max(self.contexts)
        self.blocks = self.Tmax // BLOCK
        self.pool = [torch.zeros(2, self.blocks, BLOCK, self.kvh, self.hd, dtype=torch.bfloat16, device=self.dev)
                     for _ in range(self.L)]
        self.layers_mod = self.model.model.layers
        self.hooks = Hooks()
        for i, layer in enumerate(self.layers_mod):
            layer.register_forward_pre_hook(lambda m, a, i=i: self.hooks.layer_start(i))
        self.profile = None
        self.broken = set()
        self.results = []
        self.kv_token_bytes = 2 * self.kvh * self.hd * 2  # K and V, bf16, per token and layer

    def fail(self, system, T, h, e):
        """A system that failed is recorded and left out from then on (its plans' batches ended)."""
        self.broken.add(system)
        self.results.append(dict(T=T, hit=h, system=system, error=f"{type(e).__name__}: {e}"))
        log(f"FAILED T={T} h={h} {system}: {type(e).__name__}: {e}")
        if system in SCHED_SYSTEMS:  # save layers it still holds would keep their batch open
            self.scheds[system].close()
            # No new CUDA events beside the executors (calibrate 0); the system is not run again.
            self.scheds[system] = self.make_sched(calibrate=0.0, staged=system == "giouring-staged")
        for p in (getattr(self, n, None) for n in ("gpu_load", "gpu_save", "cpu_load", "staged_load", "staged_save")):
            try:
                if p is not None:
                    p.finish(timeout=5, check=False)
            except Exception:  # noqa: BLE001  (no batch open)
                pass

    def sync(self):
        """Waits for the streams this bench uses, never for the device: the stand-in drives'
        executors are persistent kernels, so cudaDeviceSynchronize (torch.cuda.synchronize), and
        every cudaFree (torch.cuda.empty_cache), would wait for them for ever."""
        torch.cuda.default_stream().synchronize()
        for s in (getattr(self, n, None) for n in ("io_stream", "save_stream")):
            if s is not None:
                s.synchronize()
        if getattr(self, "part", None) is not None:
            self.part.io_stream.synchronize()
            self.part.compute_stream.synchronize()

    def memory(self):
        """GPU memory: free on the device, and what PyTorch's caching allocator holds (no call here waits)."""
        free, total = torch.cuda.mem_get_info()
        st = torch.cuda.memory_stats()
        return (f"GPU free {free / 2**30:.1f} of {total / 2**30:.1f} GiB, torch reserved "
                f"{torch.cuda.memory_reserved() / 2**30:.1f} GiB, allocated {torch.cuda.memory_allocated() / 2**30:.1f} GiB, "
                f"alloc retries {st.get('num_alloc_retries', 0)}, OOMs {st.get('num_ooms', 0)}")

    # -- setup of the stores, the partition and the scheduler (before any persistent kernel)
    def setup_io(self):
        import giouring

        a = self.args
        exec_sms = a.drives * a.exec_sms if a.exec_placement == "partition" else 0
        self.part = giouring.SMPartition(a.io_sms, exec_sms=exec_sms)
        if exec_sms and self.part.isolated and self.part.exec_sms < exec_sms:
            raise SystemExit(f"the executors' side has {self.part.exec_sms} SMs for {exec_sms} executor blocks")
        self.io_stream = torch.cuda.Stream()
        self.save_stream = torch.cuda.Stream()
        self.kvpool = giouring.KVPool(self.pool, dims=("part", "block", "token", "head", "channel"))
        per_drive = drive_bytes(a, self.Tmax // BLOCK * self.kvpool.object_bytes * self.L)
        if a.drive_backing == "hbm":
            free, _ = torch.cuda.mem_get_info()
            # The model's activations and the baselines' caches need the rest: half at most.
            if a.drives * per_drive > free // 2:
                raise SystemExit(f"--drive-backing hbm: {a.drives} drives of {per_drive >> 20} MiB need more than "
                                 f"half of the {free >> 20} MiB of GPU memory free; use fewer or shorter contexts, "
                                 f"or --drive-backing host")
        bulk = statistics.median(self.bulk)
        uris = drive_uris(a, per_drive, bulk)
        if drive_read_gbps(a, bulk) < a.drive_read_gbps:
            log(f"stand-in drives in HBM: reads modelled at {drive_read_gbps(a, bulk):.3f} GB/s each, the measured "
                f"bulk H2D ({bulk:.1f} GB/s) shared by {a.drives}, not {a.drive_read_gbps} (a real drive's DMA "
                f"crosses that link)")
        self.uris = uris
        self.gpu_store = giouring.Store.create(uris, self.kvpool, exec_stream=self.part.exec_stream)
        maxreq = self.blocks
        self.gpu_load = self.gpu_store.plan(max_requests=maxreq)
        self.gpu_save = self.gpu_store.plan(max_requests=maxreq)
        # The schedulers: CUDA events of a calibrating one are made here, before the executors start.
        self.scheds = {"giouring-sched": self.make_sched(), "giouring-sched-static": self.make_sched(calibrate=0.0)}
        self.cpu_store = self.staged_store = None
        self.shm = None
        self.cpu_max = parse_tokens(a.cpu_max)
        self.staged_max = parse_tokens(a.staged_max)
        staged_T = max([T for T in self.contexts if T <= self.staged_max], default=0)
        if "giouring-staged" in a.systems.split(",") and staged_T:
            self.shm = tempfile.mkdtemp(prefix="gio-ttft-", dir=a.shm)
            try:
                self.setup_staged(staged_T, maxreq)
            except Exception as e:  # noqa: BLE001  (recorded; the other systems still run)
                self.broken.add("giouring-staged")
                self.results.append(dict(T=staged_T, hit=0.0, system="giouring-staged", error=f"setup: {e}"))
                log(f"FAILED giouring-staged's setup: {type(e).__name__}: {e}")
                if self.staged_store is not None:
                    self.staged_store.close()
                self.staged_store = None
        cpu_T = max([T for T in self.contexts if T <= self.cpu_max], default=0)
        if "cpu-per-object" in a.systems and cpu_T:
            self.shm = self.shm or tempfile.mkdtemp(prefix="gio-ttft-", dir=a.shm)
            cpu_bytes = cpu_T // BLOCK * self.kvpool.object_bytes * self.L
            fsize = ((cpu_bytes // a.drives) * 5 // 4 + (256 << 20)) >> 20  # no new chunks saved here
            furis = [f"file://{self.shm}/kv{i}.img?size={fsize}M{self.drive_model(a.cpu_model)}" for i in range(a.drives)]
            self.cpu_store = giouring.Store.create(furis, self.kvpool)
            self.cpu_load = self.cpu_store.plan(max_requests=maxreq)
            self.cpu_fill = self.cpu_store.plan(max_requests=maxreq)

    def setup_staged(self, staged_T, maxreq):
        """giouring-staged's store over file targets with path=staged, its plans and scheduler."""
        import giouring

        a = self.args
        # Room for the context's chunks and the new chunks of its runs, as the GPU store's.
        sbytes = staged_T // BLOCK * self.kvpool.object_bytes * self.L
        ssize = ((sbytes // a.drives) * 5 // 2 + (256 << 20)) >> 20
        extra = f"&{a.staged_params.lstrip('&')}" if a.staged_params else ""
        suris = [f"file://{self.shm}/st{i}.img?size={ssize}M&path=staged{self.drive_model(a.staged_model)}{extra}"
                 for i in range(a.drives)]
        self.staged_store = giouring.Store.create(suris, self.kvpool)
        paths = {p["path"] for p in self.staged_store.paths}
        if paths != {"staged"}:
            raise RuntimeError(f"the file targets took {paths}, not the staged path")
        # Plans and their staging areas (pinned, GPU-mapped) now, before any executor runs: 4
        # queue pairs of 256 a target, rings of 64 slots (16 MiB of slots a target).
        self.staged_load = self.staged_store.plan(max_requests=maxreq, engine="gpu", queues=4, queue_depth=256)
        self.staged_save = self.staged_store.plan(max_requests=maxreq, engine="gpu", queues=4, queue_depth=256)
        self.scheds["giouring-staged"] = self.make_sched(staged=True)

    def drive_model(self, which):
        """URI parameters that put a CPU-executed file target through the drives' timing model
        ("drives"), or none ("none": the executor threads' own speed)."""
        a = self.args
        return (f"&model_read_gbps={a.drive_read_gbps}&model_write_gbps={a.drive_write_gbps}"
                f"&model_mixed_gbps={a.drive_mixed_gbps}") if which == "drives" else ""

    def make_sched(self, calibrate=None, staged=False):
        import giouring

        a = self.args
        calibrate = a.sched_calibrate if calibrate is None else calibrate
        if staged and a.staged_model == "none":  # no model: a figure, corrected from the measured transfers
            return giouring.Scheduler(self.staged_store, read_gbps=a.staged_gbps, write_gbps=a.staged_gbps,
                                      sm_min=1, sm_max=a.io_sms, max_items=4 * self.L, max_bytes=1 << 40,
                                      calibrate=calibrate, engine="gpu")
        return giouring.Scheduler(self.staged_store if staged else self.gpu_store, read_gbps=a.drive_read_gbps,
                                  write_gbps=a.drive_write_gbps, mixed_gbps=a.drive_mixed_gbps, sm_min=1,
                                  sm_max=a.io_sms, max_items=4 * self.L, max_bytes=1 << 40, calibrate=calibrate,
                                  engine="gpu")

    def reset_scheds(self):
        """--sched-reset: every scheduler plans from the figures as given again (no CUDA call)."""
        for sched in self.scheds.values():
            sched.reset_rates()

    def plans_of(self, system):
        """The (load, save) plans a giouring system runs."""
        if system == "giouring-staged":
            return self.staged_load, self.staged_save
        return self.gpu_load, self.gpu_save

    def close(self):
        for sched in self.scheds.values():
            sched.close()  # first: they may hold save layers of the stores' plans
        # The GPU-executed targets first: their executors stop before the staged plans' pinned
        # staging areas are freed (cudaFreeHost waits for every kernel).
        for s in (self.gpu_store, self.cpu_store, self.staged_store):
            if s is not None:
                s.close()
        self.part.close()
        if self.shm is not None:
            for f in os.listdir(self.shm):
                os.unlink(os.path.join(self.shm, f))
            os.rmdir(self.shm)

    # -- one forward
    def forward(self, ctx, hooks, cache):
        self.hooks = hooks
        ids = ctx.ids[:, ctx.C:]
        try:
            out = self.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        finally:
            self.hooks = Hooks()
        return out.logits[0, -1]

    def bulk_h2d_gbps(self, nbytes=4 << 30, reps=3):
        src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        dst = torch.empty(nbytes, dtype=torch.uint8, device=self.dev)
        out = []
        for _ in range(reps + 1):
            self.sync()
            t = time.perf_counter()
            dst.copy_(src, non_blocking=True)
            self.sync()
            out.append(nbytes / (time.perf_counter() - t) / 1e9)
        del src, dst
        return out[1:]

    def prefill_reference(self, T, ids, cache_cls=None):
        """The full prefill: its time (recompute), its logits, and the KV it leaves (the reference).
        cache_cls: the cache to fill (default transformers' DynamicCache)."""
        if cache_cls is None:
            from transformers import DynamicCache as cache_cls

        times = []
        # One run unless recompute is measured; the last run's cache and logits are kept.
        runs = max(1, self.args.reps if "recompute" in self.args.systems else 1)
        for r in range(runs):
            cache = cache_cls(config=self.cfg)
            self.sync()
            with gc_paused(self.args.gc):
                t = time.perf_counter()
                out = self.model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
                tok = int(out.logits[0, -1].argmax())
                times.append(time.perf_counter() - t)
            if r + 1 < runs:
                del cache, out
        logits = out.logits[0, -1].float().clone()
        ref = [(cache.layers[l].keys, cache.layers[l].values) for l in range(self.L)]
        return times, logits, ref, tok

    def put_prefix(self, ref, C):
        for l in range(self.L):
            for p in range(2):
                t = self.pool[l][p]
                t.view(-1, self.kvh, self.hd)[:C].copy_(ref[l][p][0, :, :C].transpose(0, 1))

    def poison(self, C):
        for l in range(self.L):
            self.pool[l].view(2, -1, self.kvh, self.hd)[:, :C].fill_(float("nan"))

    def prefix_equal(self, ref, C):
        for l in range(self.L):
            for p in range(2):
                got = self.pool[l][p].view(-1, self.kvh, self.hd)[:C]
                if not torch.equal(got, ref[l][p][0, :, :C].transpose(0, 1)):
                    return False
        return True

    def fill_stores(self, T, ref, tag):
        """Saves the context's chunks into both stores (the earlier request that computed them)."""
        self.put_prefix(ref, T)
        keys = [key(tag, T, i) for i in range(T // BLOCK)]
        blocks = list(range(T // BLOCK))
        self.sync()
        t = time.perf_counter()
        self.gpu_save.save(keys, blocks)
        for l in range(self.L):
            self.gpu_save.save_layer(l, stream=self.io_stream)
        self.gpu_save.finish(timeout=120)
        t_gpu = time.perf_counter() - t
        if self.staged_store is not None and T <= self.staged_max:
            self.staged_save.save(keys, blocks)
            for l in range(self.L):
                self.staged_save.save_layer(l, stream=self.io_stream)
            self.io_stream.synchronize()
            self.staged_save.finish(timeout=600)
        t_cpu = None
        if self.cpu_store is not None and T <= self.cpu_max:
            t = time.perf_counter()
            self.cpu_fill.save(keys, blocks)
            for l in range(self.L):
                self.cpu_fill.save_layer(l)
            self.cpu_fill.finish(timeout=600)
            t_cpu = time.perf_counter() - t
        return t_gpu, t_cpu

    def offload_short(self, ctx):
        """Why the offload baseline cannot run at this point without risking a hang, or None.
        Its cache is built from copies of the prefix (a clone, then transformers' concatenation:
        about twice the prefix's KV) before it offloads them; where the device has less free memory
        than that, PyTorch's allocator would release its cached blocks with cudaFree, which waits
        for the stand-in drives' executors for ever (seen at 128K: 129.6 GiB reserved for 47 GiB
        in use after the smaller contexts' shapes). Memory already cached by PyTorch is not counted:
        after many shapes it is fragmented, and whether a block fits is not known ahead."""
        need = 2.2 * ctx.C * self.kv_token_bytes * self.L
        return memory_short(need, torch.cuda.mem_get_info()[0], "transformers' offloaded cache")

    def refill(self, ctx, ref):
        """Saves again the prefix chunks the GPU store evicted. Every run saves its new tokens'
        chunks under new keys, and the store evicts its least recently used chunks to make room:
        the context's chunks that the earlier (lower-hit) points never read go first."""
        if not any(s.startswith("giouring") for s in self.args.systems.split(",")):
            return
        stores = [(self.gpu_store, self.gpu_save, "GPU-executed")]
        if self.staged_store is not None and ctx.T <= self.staged_max:
            stores.append((self.staged_store, self.staged_save, "staged"))
        for store, plan, what in stores:
            found = store.contains(ctx.prefix_keys)
            missing = [i for i, ok in enumerate(found) if not ok]
            if not missing:
                continue
            self.put_prefix(ref, ctx.C)
            self.sync()
            plan.save([ctx.prefix_keys[i] for i in missing], missing)
            for l in range(self.L):
                plan.save_layer(l, stream=self.io_stream)
            self.io_stream.synchronize()
            plan.finish(timeout=120)
            log(f"T={ctx.T} C={ctx.C}: {len(missing)} prefix chunks saved again in the {what} store (evicted by "
                f"the runs' new chunks)")

    def run_system(self, system, ctx, ref):
        """One TTFT of one system: (seconds, token, logits, per-layer ms, per-layer bubble ms, extra)."""
        PoolCache = self.PoolCache
        extra = {}
        if system in ("hbm", "hbm-part"):
            self.put_prefix(ref, ctx.C)
            st = self.part.compute_stream if system == "hbm-part" else torch.cuda.current_stream()
            h = LayerEvents(self.L, lambda: st)
            cache = PoolCache(self.pool, ctx.C, h)
        elif system.startswith("giouring"):
            self.poison(ctx.C)
            h = GiouringHooks(self, self.L, self.scheds.get(system), system)
            cache = PoolCache(self.pool, ctx.C, h)
        elif system == "cpu-per-object":
            self.poison(ctx.C)
            h = CpuHooks(self, self.L)
            cache = PoolCache(self.pool, ctx.C, h)
        elif system == "offload":
            from transformers import DynamicCache

            cache = DynamicCache(ddp_cache_data=[(ref[l][0][:, :, :ctx.C].clone(), ref[l][1][:, :, :ctx.C].clone())
                                                 for l in range(self.L)], config=self.cfg, offloading=True)
            for l in range(self.L):
                cache.offload(l)  # their tier: pinned DRAM, as their own offload leaves it
            self.sync()
            h = LayerEvents(self.L, torch.cuda.current_stream)
        else:
            raise ValueError(system)
        comp = h.comp if isinstance(h, GiouringHooks) else h.stream_fn() if system == "hbm-part" else torch.cuda.current_stream()
        self.sync()
        if isinstance(h, GiouringHooks):
            h.forget_transfers()  # (the stream waited for: every earlier one is read back)
        with gc_paused(self.args.gc):
            t0 = time.perf_counter()
            with torch.cuda.stream(comp):
                if isinstance(h, LayerEvents):
                    h.begin()
                if system == "offload":
                    cache.prefetch(0)
                h.start(ctx)
                logits = self.forward(ctx, h, cache)
                h.end()
                tok = int(logits.argmax())  # the first token, on the host
            ttft = time.perf_counter() - t0
        if hasattr(h, "finish"):
            extra["saved_after_ttft"] = h.finish()
        self.sync()
        if isinstance(h, GiouringHooks) and h.decisions:
            extra["predicted_bubble_ms"] = sum(d.bubble for d in h.decisions) * 1e3
            extra["saves_in_prefill"] = sum(d.saves for d in h.decisions)
            extra["sched_rates"] = h.sched.rates()  # the bandwidth correction after this run
        if isinstance(h, GiouringHooks):
            # The stall of each layer's stream wait for its I/O, by the GPU's clock inside the wait
            # (the events around it also count a host behind its GPU: the host-bound rows).
            extra["io_wait_layer_ms"] = [x * 1e3 for x in h.load.wait_times()]
            lm = h.load_ms()
            if lm is not None:
                extra["load_layer_ms"] = lm
            extra["host_start_ms"] = h.host_s["start"] * 1e3
            extra["host_layers_ms"] = sum(v for k, v in h.host_s.items() if k != "start") * 1e3
            extra["host_hooks_ms"] = {k: round(v * 1e3, 3) for k, v in h.host_s.items() if k != "start"}
        if isinstance(h, LayerEvents) and h.h0 is not None:
            extra["host_lead_ms"] = [round(x, 4) for x in h.lead_ms()]
        if system not in ("hbm", "hbm-part", "offload"):
            extra["prefix_bitwise"] = self.prefix_equal(ref, ctx.C)
        del cache
        return ttft, tok, logits.float().clone(), h.layer_ms(), h.bubble_ms(), extra

    def points(self, T):
        """The (hit rate, prefix tokens C) points run at context T: C in whole blocks, below T (the
        last token is always computed)."""
        a = self.args
        hits = [float(x) for x in a.hits.split(",") if x]
        low = [float(x) for x in a.low_hits.split(",") if x]
        out = []
        for h in sorted(set(hits + (low if T <= parse_tokens(a.low_hits_max) else []))):
            C = min(int(h * T) // BLOCK * BLOCK, T - 1)
            out.append((h, C // BLOCK * BLOCK))
        return out

    def warm_shapes(self):
        """Every forward shape the runs use, run once on each stream they compute on, before the
        executors start: the full prefill of every context (recompute) and, for every point, the
        prefill of its N new tokens over its C-token prefix in the pool (every cached system's
        shape: its GEMMs and its lower-right causal attention). cuBLAS picks GEMM kernels and SDPA
        picks attention kernels by shape, and a kernel first loaded while the executors run would
        wait for them for ever (suspected for the second stop in
        bench/results/2026-12-04-ttft-h200.md: CUDA_MODULE_LOADING=EAGER may not reach the
        libraries that load kernels themselves). The pool's contents do not matter here."""
        from transformers import DynamicCache

        streams = [torch.cuda.current_stream()] + ([self.part.compute_stream] if self.part is not None else [])
        t = time.perf_counter()
        n = 0
        for T in self.contexts:
            ids = torch.randint(0, self.cfg.vocab_size, (1, T), device=self.dev)
            for st in streams:
                with torch.cuda.stream(st):
                    self.model(input_ids=ids, past_key_values=DynamicCache(config=self.cfg), use_cache=True,
                               logits_to_keep=1)
                st.synchronize()
                n += 1
            for _, C in self.points(T):
                ctx = Ctx(T, C, ids, 0)
                for st in streams:
                    h = LayerEvents(self.L, lambda st=st: st)
                    with torch.cuda.stream(st):
                        self.forward(ctx, h, self.PoolCache(self.pool, C, h))
                    st.synchronize()
                    n += 1
        log(f"warm-up: {n} forwards (every shape on {len(streams)} streams) in {time.perf_counter() - t:.1f} s; "
            f"{self.memory()}")

    def run(self, on_context=None):
        a = self.args
        systems = [s for s in a.systems.split(",") if s]
        slow = {float(x) for x in a.slow_hits.split(",") if x}
        io_systems = [s for s in systems if s in (*SCHED_SYSTEMS, "giouring-naive", "cpu-per-object", "offload")]
        if "giouring-staged" in io_systems and not any(T <= parse_tokens(a.staged_max) for T in self.contexts):
            io_systems.remove("giouring-staged")
        # Bulk H2D first: stand-in drives in HBM read no faster than it (drive_read_gbps()).
        self.bulk = self.bulk_h2d_gbps()
        log(f"bulk H2D (measured, pinned, 4 GiB): {', '.join(f'{x:.1f}' for x in self.bulk)} GB/s; {self.memory()}")
        self.setup_io()
        # Warm-up: every kernel the runs use is loaded before the stores' executors start (lazy loading).
        tag = 1
        warm_T = min(self.contexts)
        ids = torch.randint(0, self.cfg.vocab_size, (1, warm_T), device=self.dev)
        # (a line before each long step: scripts/gpu-ttft.sh takes a silent bench for a stuck one)
        log(f"warm-up: {max(1, a.reps if 'recompute' in a.systems else 1)} full prefill(s) of {warm_T} tokens")
        _, _, ref, _ = self.prefill_reference(warm_T, ids)
        for system in ["hbm"]:
            self.run_system(system, Ctx(warm_T, warm_T // 2 // BLOCK * BLOCK, ids, tag), ref)
        log(f"warm-up: hbm ran; {self.memory()}")
        self.warm_shapes()
        self.fill_stores(warm_T, ref, tag)  # the stand-in drives' executors start here
        log("warm-up: stores filled")
        for system in io_systems:
            if (system == "cpu-per-object" and self.cpu_store is None) or (
                    system == "giouring-staged" and self.staged_store is None):
                continue
            try:
                self.run_system(system, Ctx(warm_T, warm_T // 2 // BLOCK * BLOCK, ids, tag), ref)
                log(f"warm-up: {system} ran; {self.memory()}")
            except Exception as e:  # noqa: BLE001
                self.fail(system, warm_T, 0.5, e)
        del ref
        log("warm-up done")
        for T in self.contexts:
            tag += 1
            ids = torch.randint(0, self.cfg.vocab_size, (1, T), device=self.dev, generator=None)
            log(f"T={T}: the full prefill (recompute) ...")
            rt, ref_logits, ref, ref_tok = self.prefill_reference(T, ids)
            self.results.append(dict(T=T, hit=0.0, system="recompute", ttft_s=rt, token=ref_tok))
            log(f"T={T}: recompute {fmt_s(rt)}; {self.memory()}")
            tg, tc = self.fill_stores(T, ref, tag)
            log(f"T={T}: stores filled ({self.L * T * self.kv_token_bytes / 2**30:.2f} GiB; GPU engine {tg:.2f} s, "
                f"CPU engine {tc if tc is None else round(tc, 2)} s)")
            if a.sched_reset == "context":
                self.reset_scheds()
            for h, C in self.points(T):
                ctx = Ctx(T, C, ids, tag)
                self.refill(ctx, ref)
                if a.sched_reset == "point":
                    self.reset_scheds()
                hbm_logits = None
                for system in systems:
                    if system == "recompute":
                        continue
                    if system in ("offload", "cpu-per-object") and h not in slow:
                        continue
                    if system == "cpu-per-object" and (self.cpu_store is None or T > self.cpu_max):
                        continue
                    if system == "giouring-staged" and (self.staged_store is None or T > self.staged_max):
                        continue
                    if system in self.broken:
                        continue
                    short = self.offload_short(ctx) if system == "offload" else None
                    if short:
                        self.results.append(dict(T=T, hit=h, system=system, error=short))
                        log(f"SKIPPED T={T} h={h} {system}: {short}")
                        continue
                    runs = []
                    for r in range(a.reps):
                        try:
                            ttft, tok, logits, lms, bms, extra = self.run_system(system, ctx, ref)
                        except Exception as e:  # noqa: BLE001  (recorded, and the system is left out from here)
                            self.fail(system, T, h, e)
                            break
                        runs.append((ttft, tok, lms, bms, extra))
                        if system == "hbm":
                            hbm_logits = logits
                        if system in ("hbm", "hbm-part"):  # the scheduler's slack per layer: the
                            self.profile = [x / 1e3 for x in lms]  # partition's when it ran (it runs later)
                        d = {}
                        if hbm_logits is not None:
                            d["logits_bitwise_vs_hbm"] = bool(torch.equal(logits, hbm_logits))
                        d["logits_maxabs_vs_recompute"] = float((logits - ref_logits).abs().max())
                        d["logits_ref_maxabs"] = float(ref_logits.abs().max())
                        d["token_eq_recompute"] = tok == ref_tok
                        runs[-1][4].update(d)
                    if not runs:
                        continue
                    ttfts = [x[0] for x in runs]
                    row = dict(T=T, hit=h, C=C, N=T - C, system=system, ttft_s=ttfts,
                               layer_ms=runs[-1][2], bubble_layer_ms=runs[-1][3], **runs[-1][4])
                    self.results.append(row)
                    log(f"T={T} h={h:.3f} C={C} N={T - C} {system}: TTFT {fmt_s(ttfts)}"
                        + (f" waits {sum(runs[-1][3]):.1f} ms" if any(runs[-1][3]) else "")
                        + "".join(f" {k}={v}" for k, v in runs[-1][4].items()
                                  if k in ("prefix_bitwise", "logits_bitwise_vs_hbm", "saves_in_prefill",
                                           "predicted_bubble_ms", "host_start_ms", "host_layers_ms", "host_hooks_ms"))
                        + f"; {self.memory()}")
            del ref
            if on_context:
                on_context()
        self.close()


def memory_short(need, free, what):
    """A refusal naming the shortfall when `need` bytes exceed the device's `free` ones, else None."""
    if need <= free:
        return None
    return (f"skipped: {what} needs about {need / 2**30:.1f} GiB of new GPU memory and the device has "
            f"{free / 2**30:.1f} GiB free; PyTorch would free its cache with cudaFree, which waits for the "
            f"persistent executors")


def fmt_s(xs):
    xs = list(xs)
    m = statistics.median(xs)
    return f"{m * 1e3:.1f} ms" + (f" ({min(xs) * 1e3:.1f}-{max(xs) * 1e3:.1f})" if len(xs) > 1 else "")


T0 = time.time()


def log(s):
    print(f"[{time.time() - T0:7.1f} s] {s}" if not s.startswith(("|", "\n")) else s, flush=True)


# ---------------------------------------------------------------- analysis


def median(x):
    return statistics.median(x) if isinstance(x, list) else x


HOST_PACED_MS = 0.1  # a layer start the GPU reached with less than this queued: it waited for the host


def host_paced(r):
    """The share of a row's layers (1 .. L-1: layer 0 follows the planning) whose start the GPU
    reached with less than HOST_PACED_MS of work queued ahead of it (host_lead_ms), so that the
    host, not the GPU, set their pace; None for a row without the figures."""
    lead = r.get("host_lead_ms")
    if not lead or len(lead) < 2:
        return None
    inner = lead[1:]
    return sum(x < HOST_PACED_MS for x in inner) / len(inner)


def analyse(bench, results):
    """Bubbles against hbm, crossovers, the physical limit, cost and endurance."""
    by = {}
    for r in results:
        if "error" not in r:
            by.setdefault((r["T"], r["system"]), []).append(r)
    out = {"crossover": [], "rows": [], "cost": [], "goals": [], "paced": []}
    bulk = statistics.median(bench.bulk)
    for T in bench.contexts:
        hbm = {r["hit"]: r for r in by.get((T, "hbm"), [])}
        rec = by.get((T, "recompute"), [{}])[0].get("ttft_s")
        # Physical limit: a layer's prefix at the bulk H2D bandwidth takes as long as its compute,
        # on every SM (hbm's layers) and on the compute side alone (hbm-part's: where the
        # scheduled systems compute, beside the I/O side and the stand-in drives' executors).
        part = {r["hit"]: r for r in by.get((T, "hbm-part"), [])}

        def limit_of(runs):
            f = []
            for h, r in sorted(runs.items()):
                layer = statistics.median(r["layer_ms"]) / 1e3
                load = r["C"] * bench.kv_token_bytes / (bulk * 1e9)
                f.append((h, load - layer))
            return crossing(f)

        limit, limit_part = limit_of(hbm), limit_of(part) if part else None
        ideal = ideal_crossover(part or hbm, bulk, bench.kv_token_bytes)
        for system in ("hbm-part", *SCHED_SYSTEMS, "giouring-naive", "offload", "cpu-per-object"):
            pts, waits, stalls, comp = [], [], [], []
            for r in by.get((T, system), []):
                if r["hit"] not in hbm:
                    continue
                if system != "hbm-part" and compute_over_part(r, part.get(r["hit"])):
                    comp.append(r["compute_over_part_frac"])
                base = median(hbm[r["hit"]]["ttft_s"])
                t = median(r["ttft_s"])
                # TTFT over hbm: everything the system costs (GPU waits, host calls, SMs given up).
                r["bubble_s"] = max(0.0, t - base)
                r["bubble_frac"] = r["bubble_s"] / t
                # The bubble proper: the compute stream waiting for its layer's KV (event-timed).
                r["wait_s"] = sum(r.get("bubble_layer_ms") or []) / 1e3
                r["wait_frac"] = r["wait_s"] / t
                # The I/O stall proper: the GPU clock inside each wait (giouring systems).
                if r.get("io_wait_layer_ms") is not None:
                    r["io_wait_s"] = sum(r["io_wait_layer_ms"]) / 1e3
                    r["io_wait_frac"] = r["io_wait_s"] / t
                    stalls.append((r["hit"], r["io_wait_frac"] - 0.05))
                if system in SCHED_SYSTEMS and r["hit"] in part:  # the rest, against its own SMs
                    r["over_part_s"] = t - median(part[r["hit"]]["ttft_s"])
                pts.append((r["hit"], r["bubble_frac"] - 0.05))
                waits.append((r["hit"], r["wait_frac"] - 0.05))
            if system == "hbm-part" or not pts:  # a reference; a system not run at this T
                continue
            pts.sort()
            waits.sort()
            stalls.sort()
            margins = sorted((r["hit"], m) for r in by.get((T, system), []) if r["hit"] in hbm
                             for m in [load_margin_ms(r)] if m is not None)
            out["crossover"].append(dict(T=T, system=system, crossover=crossing(pts, first_positive=True),
                                         onset=crossing(margins, first_positive=True) if margins else None,
                                         onset_below_grid=bool(margins) and margins[0][1] > 0,
                                         onset_points=len(margins), onset_highest=margins[-1][0] if margins else None,
                                         crossover_wait=crossing(waits, first_positive=True),
                                         crossover_io_wait=crossing(stalls, first_positive=True) if stalls else None,
                                         limit=limit, limit_part=limit_part, ideal=ideal,
                                         compute_over_part_frac=statistics.median(comp) if comp else None,
                                         waits_timed=system != "offload"))
        out["rows"].append(dict(T=T, recompute_s=rec, limit=limit, limit_part=limit_part, ideal=ideal, bulk_gbps=bulk))
        for system in sorted({sy for (t, sy) in by if t == T}):
            fr = sorted((r["hit"], f) for r in by[(T, system)] for f in [host_paced(r)] if f is not None)
            if fr:
                out["paced"].append(dict(T=T, system=system, fracs=fr))
        out["cost"] += cost_rows(bench.args, T, rec, hbm, by, bench.kv_token_bytes * bench.L)
        out["goals"] += goals_of(bench.args, T, limit, [c for c in out["crossover"] if c["T"] == T], by)
    return out


def load_margin_ms(r):
    """How much longer row r's loads took than the compute they ran beside, ms, MEASURED in one
    forward: the median over layers l = 1 .. L-2 of layer l + 1's load (the scheduler's timer:
    events around its kernel on the I/O stream, which starts it at layer l's start) less layer
    l's compute (its time less its wait, events). Negative: the loads hid behind the compute;
    positive: each layer waits that long. Its zero is the hit rate where the I/O stops hiding,
    the measured counterpart of the physical limit (the same equation with the prefix at bulk
    H2D and hbm's layers), with no threshold. None without per-layer load times (a system whose
    scheduler does not calibrate, or a model of fewer than 3 layers)."""
    lm, wm, ld = r.get("layer_ms"), r.get("bubble_layer_ms"), r.get("load_layer_ms")
    if not lm or not wm or not ld or not (len(lm) == len(wm) == len(ld)):
        return None
    d = [ld[l + 1] - (lm[l] - wm[l]) for l in range(1, len(lm) - 1) if ld[l + 1] is not None]
    return statistics.median(d) if d else None


def ideal_crossover(runs, bulk_gbps, kv_token_bytes):
    """The crossover of an ideal mover (MODELLED from measured inputs): a system that moves each
    layer's prefix at the run's bulk H2D bandwidth with nothing else to it, layer l + 1's load wholly
    behind layer l's compute, on `runs`' layers ({hit: run}: hbm-part's, the compute side's, where it
    ran). At hit rate h its stall is the sum over the layers but the last of max(0, load - layer),
    its TTFT that run's plus the stall; its crossover is where the stall passes 5% of its TTFT,
    interpolated on the same grid as the systems' own. Layer 0's load is taken as hidden (as if started
    when the request was admitted), where the measured systems' has only the host's launch of the
    forward to hide behind and may wait: the ideal is the more demanding. The physical limit is where
    the stall starts; a system's 5% crossover lies past it by however slowly its stall grows there
    (slowly where the layers hardly shorten with the hit rate). A mover that leaves those layers as
    they are crosses no later than this one, so a system's distance below it is what the system
    costs; one that crosses later has slowed the layers beside its I/O (compute_over_part)."""
    pts = []
    for h, r in sorted(runs.items()):
        load = r["C"] * kv_token_bytes / (bulk_gbps * 1e9)
        stall = sum(max(0.0, load - ms / 1e3) for ms in r["layer_ms"][:-1])
        t = median(r["ttft_s"]) + stall
        pts.append((h, stall / t - GOAL_BUBBLE))
    return crossing(pts, first_positive=True)


GOAL_GAP = 0.003    # the crossover within 0.3 points of the physical limit
GOAL_BUBBLE = 0.05  # the bubble at most 5% of TTFT at every hit rate below the limit
GOAL_IO_SMS = 8     # with at most 8 I/O SMs


def goals_of(a, T, limit, crossovers, by):
    """The issue's goals, per giouring system that ran at T, from the analysed rows: the measured
    crossover against the physical limit (the I/O stall by the GPU clock where the system has it:
    the GPU waiting for its I/O; else the event-timed waits), the largest bubble at the hit rates
    below the limit (every hit rate run where the grid never reaches the limit), and the I/O SMs.
    Each verdict is True, False, or None where the run cannot tell (no limit within the grid, or no
    crossover up to its highest hit rate). A crossover past the limit with compute slowed beside
    the I/O (more than 2% over hbm-part) is no win and fails. The onset (load_margin_ms()'s zero:
    where the measured loads stop hiding, no threshold) is judged against the limit the same way
    (onset_met), beside the 5% crossover (crossover_met)."""
    out = []
    for c in crossovers:
        system = c["system"]
        if system not in SCHED_SYSTEMS:
            continue
        runs = sorted(by.get((T, system), []), key=lambda r: r["hit"])
        runs = [r for r in runs if "wait_frac" in r]
        has_io = any("io_wait_frac" in r for r in runs)
        measured = c.get("crossover_io_wait") if has_io else c.get("crossover_wait")
        below = [r for r in runs if limit is None or r["hit"] < limit]
        bub_io = max((r["io_wait_frac"] for r in below if "io_wait_frac" in r), default=None)
        bub_ev = max((r["wait_frac"] for r in below), default=None)
        bubble = bub_io if bub_io is not None else bub_ev
        gap = None if limit is None or measured is None else limit - measured
        ideal = c.get("ideal")
        gap_ideal = None if ideal is None or measured is None else ideal - measured
        cf = c.get("compute_over_part_frac")

        def within(g):  # past the limit with the compute slowed beside the I/O is no win
            return None if g is None else abs(g) <= GOAL_GAP + 1e-12 and not (g < 0 and cf is not None and cf > 0.02)

        cross_ok = within(gap)
        onset = c.get("onset")
        gap_onset = None if limit is None or onset is None else limit - onset
        onset_ok = within(gap_onset)
        if c.get("onset_below_grid") and onset_ok:  # at or below the grid's first point: no nearer than that
            onset_ok = None
        top = c.get("onset_highest")
        if onset is None and top is not None and limit is not None and limit - top < -GOAL_GAP:
            # Hidden past the grid, the limit inside it: further past than 0.3 points, which is no
            # win where the compute beside the I/O was slower (it hid more), else cannot tell.
            onset_ok = False if cf is not None and cf > 0.02 else None
        io_sms = getattr(a, "io_sms", None)
        out.append(dict(T=T, system=system, limit=limit, crossover=measured,
                        crossover_by="I/O stall (GPU clock)" if has_io else "GPU waits (events)", crossover_wait=c.get("crossover_wait"), gap=gap, crossover_met=cross_ok,
                        ideal=ideal, gap_ideal=gap_ideal,
                        onset=onset, gap_onset=gap_onset, onset_met=onset_ok, onset_below_grid=c.get("onset_below_grid", False), onset_highest=top,
                        onset_points=c.get("onset_points", 0),
                        highest_hit=runs[-1]["hit"] if runs else None, points_below=len(below),
                        bubble_max=bubble, bubble_max_events=bub_ev,
                        bubble_met=None if bubble is None else bubble <= GOAL_BUBBLE + 1e-12,
                        io_sms=io_sms, io_sms_met=None if io_sms is None else io_sms <= GOAL_IO_SMS))
    return out


def compute_over_part(r, part):
    """What computing beside the I/O cost row r's layers: each layer's time less its timed wait,
    against the same layer of hbm-part (the same SMs, no I/O), the median over the layers that had
    I/O in flight (not the first, whose load starts with the prefill, nor the last). Sets
    r["compute_over_part_ms"] and r["compute_over_part_frac"] (of hbm-part's layer) and returns
    True; False where either side has no per-layer times or the waits were not timed (offload).
    Slower compute hides more I/O: a crossover above the physical limit with compute slowed is no
    win, and this is how to see it."""
    lm, wm = r.get("layer_ms"), r.get("bubble_layer_ms")
    pm = part.get("layer_ms") if part else None
    if not lm or not wm or not pm or not (len(lm) == len(wm) == len(pm)):
        return False
    idx = range(1, len(lm) - 1) if len(lm) >= 3 else range(len(lm))
    d = statistics.median(lm[i] - wm[i] - pm[i] for i in idx)
    r["compute_over_part_ms"] = d
    r["compute_over_part_frac"] = d / statistics.median(pm[i] for i in idx)
    return True


# Which tier holds each system's prefix KV (the price its holding is charged at).
TIER = {"giouring-sched": "ssd", "giouring-sched-static": "ssd", "giouring-staged": "ssd", "giouring-naive": "ssd",
        "cpu-per-object": "ssd", "offload": "dram"}


def cost_rows(a, T, rec, hbm, by, token_bytes):
    """Cost and endurance per (T, hit, system), from MEASURED TTFT and the STATED prices:
    - throughput: T / TTFT tokens per second (one GPU serving such prefills back to back);
    - GPU $ per 1M tokens: the GPU hours those tokens take at that throughput x --gpu-usd-h;
    - holding $ per 1M tokens and hour: their KV (token_bytes each) held one hour in the
      system's tier (DRAM or SSD price); the recompute holds nothing;
    - SSD writes: the new tokens' KV (1 - hit of them) is written once: bytes per 1M tokens, and
      the drive writes per day that the throughput implies over --drives drives of --drive-tb TB
      (against their rated --drive-dwpd)."""
    rows = []
    gb = 1e6 * token_bytes / 1e9  # GB of KV per 1M tokens
    if rec:
        tps = T / median(rec)
        rows.append(dict(T=T, hit=0.0, system="recompute", tokens_per_s=tps,
                         gpu_usd_per_mtok=a.gpu_usd_h * 1e6 / tps / 3600, hold_usd_per_mtok_h=0.0,
                         written_gb_per_mtok=0.0, dwpd=0.0))
    for system, tier in TIER.items():
        for r in by.get((T, system), []):
            if r["hit"] not in hbm:
                continue
            tps = T / median(r["ttft_s"])
            new = 1.0 - r["C"] / T
            written = gb * new if tier == "ssd" else 0.0
            per_day = tps * 86400 * new * token_bytes if tier == "ssd" else 0.0
            rows.append(dict(T=T, hit=r["hit"], system=system, tokens_per_s=tps,
                             gpu_usd_per_mtok=a.gpu_usd_h * 1e6 / tps / 3600,
                             hold_usd_per_mtok_h=gb * (a.ssd_usd_gb_h if tier == "ssd" else a.dram_usd_gb_h),
                             written_gb_per_mtok=written,
                             dwpd=per_day / (a.drives * a.drive_tb * 1e12), dwpd_rated=a.drive_dwpd))
    return rows


def drive_read_gbps(a, bulk_gbps=None):
    """Each stand-in drive's modelled read rate: --drive-read-gbps, but backed by HBM no more than
    its share of the measured bulk H2D (bulk_gbps), the link a real drive's DMA into HBM crosses and
    these stand-ins do not (in host memory their warps cross it already)."""
    if a.drive_backing == "hbm" and bulk_gbps:
        return min(a.drive_read_gbps, bulk_gbps / a.drives)
    return a.drive_read_gbps


def drive_bytes(a, prefix_bytes):
    """Each stand-in drive's size in bytes (whole MiB): --drive-room times the largest context's
    prefix KV (prefix_bytes), spread over the drives, plus 256 MiB. The room beyond the prefix holds
    the runs' new chunks (each run's are new keys, and the store evicts its least recently used
    chunks to make room); refill() saves again any prefix chunk evicted, between points."""
    if a.drive_room < 1.25:
        raise SystemExit(f"--drive-room {a.drive_room}: at least 1.25 (the prefix, and room for a run's new chunks)")
    per_drive = int(prefix_bytes * a.drive_room) // a.drives + (256 << 20)
    return (per_drive + (1 << 20) - 1) >> 20 << 20


def drive_uris(a, per_drive, bulk_gbps=None):
    """The stand-in drives' URIs: --drive-backing, --exec-sms, --exec-warps (0: the target's
    default; a warps= in --drive-params wins), the timing model (reads capped by drive_read_gbps()),
    then --drive-params."""
    base = "mem://host?exec=gpu&" if a.drive_backing == "host" else "mem://hbm?"
    model = (f"&model_read_gbps={drive_read_gbps(a, bulk_gbps)}&model_write_gbps={a.drive_write_gbps}"
             f"&model_mixed_gbps={a.drive_mixed_gbps}")
    extra = f"&{a.drive_params.lstrip('&')}" if a.drive_params else ""
    warps = f"&warps={a.exec_warps}" if a.exec_warps and "warps=" not in a.drive_params else ""
    return [f"{base}size={per_drive >> 20}M&sms={a.exec_sms}{warps}{model}{extra}" for _ in range(a.drives)]


def crossing(pts, first_positive=False):
    """The h where a sampled f(h) first turns positive, linearly interpolated (None if never;
    the first point if it is positive already)."""
    prev = None
    for h, v in pts:
        if v > 0:
            if prev is None:
                return h if first_positive else None
            h0, v0 = prev
            return h0 + (h - h0) * (-v0) / (v - v0)
        prev = (h, v)
    return None


def report_from(path):
    """The analysis and tables of a run, again from the JSON it wrote: a later analysis (a new
    column) over figures measured before, without a GPU or the model."""
    with open(path) as f:
        d = json.load(f)
    b = argparse.Namespace(contexts=sorted({r["T"] for r in d["results"]}), bulk=d["bulk_gbps"],
                           args=argparse.Namespace(**d["args"]), kv_token_bytes=d["kv_token_bytes"], L=d["layers"],
                           results=d["results"])
    an = analyse(b, b.results)
    report(b, an)
    return an


def main():
    a = args_parse()
    if a.report:
        report_from(a.report)
        return
    env = dict(python=sys.version.split()[0], torch=torch.__version__, cuda=torch.version.cuda,
               gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
               host=platform.node(), argv=sys.argv)
    try:
        import transformers

        env["transformers"] = transformers.__version__
    except ImportError:
        pass
    log(json.dumps(env))
    if a.cufile_probe:
        env["cufile"] = cufile_probe(a.shm)
        log(f"cufile probe: {env['cufile']}")
    # A run that hangs behind a persistent kernel says where, before the caller's timeout.
    faulthandler.dump_traceback_later(float(os.environ.get("GIO_TTFT_STACKS_AFTER", "900")), exit=False)
    # Inference only: with autograd on, every forward's activations stay alive through its logits
    # (71 GiB at 8K tokens), PyTorch's allocator runs out, frees its cache with cudaFree, and that
    # waits for the stand-in drives' executors for ever (seen on the H200: cuMemFree_v2 under
    # release_cached_blocks).
    torch.set_grad_enabled(False)
    b = Bench(a)

    def save():
        an = analyse(b, b.results)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(dict(bench="ttft_llama", env=env, args=vars(a), bulk_gbps=b.bulk, results=b.results, analysis=an,
                               kv_token_bytes=b.kv_token_bytes, layers=b.L), f, indent=1)
        return an

    b.run(on_context=save)  # each context's figures are kept as soon as it ends
    report(b, save())


def report(b, an):
    log("\n| T | hit | system | TTFT ms (median, spread) | over hbm, ms | over hbm, % TTFT | GPU waits (bubble), ms | "
        "bubble % TTFT | I/O stall (GPU clock), ms | I/O stall % TTFT | compute over hbm-part, ms a layer (%) | "
        "restored prefix bitwise | logits = hbm |")
    log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in b.results:
        if "error" in r:
            what = "SKIPPED" if r["error"].startswith("skipped") else "FAILED"
            log(f"| {r['T'] // 1024}K | {r['hit']:.3f} | {r['system']} | {what}: {r['error'][:160]} | | | | | | | | | |")
            continue
        if r["system"] == "recompute":
            log(f"| {r['T'] // 1024}K | - | recompute | {fmt_s(r['ttft_s'])} | - | - | - | - | - | - | - | - | - |")
            continue
        bub = r.get("bubble_s")
        bub_ms = "-" if bub is None else f"{bub * 1e3:.1f}"
        bub_pc = "-" if bub is None else f"{100 * r['bubble_frac']:.1f}"
        w = r.get("wait_s") if any(r.get("bubble_layer_ms") or []) else None
        w_ms = "-" if w is None else f"{w * 1e3:.1f}"
        w_pc = "-" if w is None else f"{100 * r['wait_frac']:.1f}"
        io = r.get("io_wait_s")
        io_ms = "-" if io is None else f"{io * 1e3:.1f}"
        io_pc = "-" if io is None else f"{100 * r['io_wait_frac']:.1f}"
        co = r.get("compute_over_part_ms")
        co_s = "-" if co is None else f"{co:.2f} ({100 * r['compute_over_part_frac']:.1f}%)"
        log(f"| {r['T'] // 1024}K | {r['hit']:.3f} | {r['system']} | {fmt_s(r['ttft_s'])} | {bub_ms} | {bub_pc} | "
            f"{w_ms} | {w_pc} | {io_ms} | {io_pc} | {co_s} | {r.get('prefix_bitwise', '-')} | {r.get('logits_bitwise_vs_hbm', '-')} |")
    log("\n| T | system | crossover: bubble (GPU waits) > 5% of TTFT | crossover: I/O stall (GPU clock) > 5% | "
        "crossover: TTFT over hbm > 5% | physical limit (bulk H2D = layer compute) | the same on the compute side "
        "(hbm-part's layers) | compute beside I/O over hbm-part |")
    log("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in an["crossover"]:
        f = lambda x: "-" if x is None else f"{100 * x:.2f}%"  # noqa: E731
        cw = f(c.get("crossover_wait")) if c.get("waits_timed", True) else "not timed"
        ci = f(c.get("crossover_io_wait")) if c.get("crossover_io_wait") is not None or c["system"].startswith(
            "giouring") else "not timed"
        cf = c.get("compute_over_part_frac")
        # A crossover past the limit with compute slowed beside the I/O: the slower layers hid more.
        past = [x for x in (c.get("crossover_wait"), c.get("crossover_io_wait")) if x is not None]
        # (The compute side's limit where there is one: that compute is against hbm-part's.)
        lim = c.get("limit_part") if c.get("limit_part") is not None else c["limit"]
        flag = (" (slower compute: the crossovers past the limit are not a win)"
                if cf is not None and cf > 0.02 and lim is not None and past and max(past) > lim else "")
        log(f"| {c['T'] // 1024}K | {c['system']} | {cw} | {ci} | {f(c['crossover'])} | "
            f"{f(c['limit'])} | {f(c.get('limit_part'))} | {'-' if cf is None else f'{100 * cf:.1f}%'}{flag} |")
    log("(-: not reached up to the grid's highest hit rate; offload's waits happen inside transformers' cache and are "
        "not timed: its bubble shows only in TTFT over hbm. The GPU waits are events around each wait on the compute "
        "stream: they also count a host behind its GPU (eager Python at small prefixes); the I/O stall is the GPU's "
        "clock inside the giouring waits: the stream waiting for the I/O alone)")
    if an.get("paced"):
        log("\n| T | system | layers the host paced: median over the hit rates | least - most | hit rates with most "
            "of them host-paced |")
        log("| --- | --- | --- | --- | --- |")
        for g in an["paced"]:
            fr = [f for _, f in g["fracs"]]
            most = [f"{100 * h:.1f}" for h, f in g["fracs"] if f > 0.5]
            log(f"| {g['T'] // 1024}K | {g['system']} | {100 * statistics.median(fr):.0f}% | {100 * min(fr):.0f}-"
                f"{100 * max(fr):.0f}% | {', '.join(most) if most else 'none'} |")
        log(f"(MEASURED: a layer is host-paced where the GPU reached its start event with less than {HOST_PACED_MS} ms "
            "of work queued, the host's and the GPU's clocks compared from an event recorded on an empty stream at "
            "the forward's start; layers 1 .. L-1. Where hbm's layers are host-paced, the limit is set by the host's "
            "pace, which moves between runs, not by the GPU's compute)")
    log("\n| T | system | physical limit | crossover (measured) | below the limit by, points | crossover within "
        "0.3 points | an ideal mover's crossover (modelled) | below it by, points | largest bubble below the limit, "
        "% TTFT (GPU clock / events) | at most 5% | I/O SMs |")
    log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    verdict = lambda v: {True: "yes", False: "no", None: "cannot tell"}[v]  # noqa: E731
    for g in an.get("goals", []):
        f = lambda x: "-" if x is None else f"{100 * x:.2f}%"  # noqa: E731
        lim = f(g["limit"]) if g["limit"] is not None else "not within the grid"
        cr = (f"{f(g['crossover'])} ({g['crossover_by']})" if g["crossover"] is not None
              else f"not reached up to {f(g['highest_hit'])}")
        gap = "-" if g["gap"] is None else f"{100 * g['gap']:+.2f}"
        ideal = f(g.get("ideal")) if g.get("ideal") is not None else "not within the grid"
        gap_ideal = "-" if g.get("gap_ideal") is None else f"{100 * g['gap_ideal']:+.2f}"
        bio = "-" if g["bubble_max"] is None else f"{100 * g['bubble_max']:.1f}"
        bev = "-" if g["bubble_max_events"] is None else f"{100 * g['bubble_max_events']:.1f}"
        log(f"| {g['T'] // 1024}K | {g['system']} | {lim} | {cr} | {gap} | {verdict(g['crossover_met'])} | "
            f"{ideal} | {gap_ideal} | {bio} / {bev} ({g['points_below']} hit rates) | {verdict(g['bubble_met'])} | {g['io_sms']} |")
    log("(the goals of the bench's issue: crossover within 0.3 points of the physical limit, bubble at most 5% of "
        "TTFT below it, at most 8 I/O SMs; the bubble judged by the GPU clock inside the waits where the system has "
        "it, the GPU waiting for its I/O; 'cannot tell': no limit or no crossover within the grid's hit rates. The "
        "ideal mover (modelled from this run's compute-side layers and bulk H2D): the prefix at bulk H2D, each load "
        "behind the layer before, nothing else; its stall passes 5% of TTFT past the limit, by as much as the "
        "layers' slow shortening there allows; a mover that leaves these layers as they are crosses no later)")
    onsets = [g for g in an.get("goals", []) if g.get("onset_points")]
    if onsets:
        log("\n| T | hit | system | load per layer, ms (median) | compute beside it, ms (median) | load - compute, ms "
            "(median of layers) | I/O stall per layer, ms (GPU clock, median) | host in the hooks, ms: planning and "
            "first slot / per-layer calls |")
        log("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in b.results:
            m = load_margin_ms(r) if "error" not in r else None
            if m is None:
                continue
            lm, wm, ld = r["layer_ms"], r["bubble_layer_ms"], r["load_layer_ms"]
            inner = range(1, len(lm) - 1)
            io = r.get("io_wait_layer_ms")
            stall = f"{statistics.median(io[l + 1] for l in inner):.3f}" if io else "-"
            load = statistics.median(ld[l + 1] for l in inner if ld[l + 1] is not None)
            host = (f"{r['host_start_ms']:.2f} / {r['host_layers_ms']:.2f}" if "host_start_ms" in r
                    else "-")  # runs before these were recorded have none
            log(f"| {r['T'] // 1024}K | {r['hit']:.3f} | {r['system']} | {load:.3f} | "
                f"{statistics.median(lm[l] - wm[l] for l in inner):.3f} | {m:+.3f} | {stall} | {host} |")
        log("(MEASURED in each point's last forward: layer l + 1's load, timed by the scheduler on the I/O stream, "
            "beside layer l's compute (its time less its wait), l = 1 .. L-2; where load - compute is positive each "
            "layer stalls about that long, which the I/O stall shows by the GPU clock. Host: the time.perf_counter "
            "time inside giouring's hooks in that forward, the batch's planning and first slot, then the sum of "
            "every layer's calls)")
        log("\n| T | system | physical limit | crossover: loads as long as the compute (measured, no threshold) | "
            "below the limit by, points | within 0.3 points | crossover: I/O stall > 5% of TTFT |")
        log("| --- | --- | --- | --- | --- | --- | --- |")
        for g in onsets:
            f = lambda x: "-" if x is None else f"{100 * x:.2f}%"  # noqa: E731
            lim = f(g["limit"]) if g["limit"] is not None else "not within the grid"
            on = f(g["onset"]) if g["onset"] is not None else "not within the grid"
            gap = "-" if g["gap_onset"] is None else f"{100 * g['gap_onset']:+.2f}"
            if g.get("onset_below_grid"):
                on, gap = f"at or below {on}", f"at least {gap}"
            elif g["onset"] is None and g.get("onset_highest") is not None:
                on = f"above the grid (hidden up to {f(g['onset_highest'])})"
                if g["limit"] is not None:
                    gap = f"below {100 * (g['limit'] - g['onset_highest']):+.2f}"
            log(f"| {g['T'] // 1024}K | {g['system']} | {lim} | {on} | {gap} | {verdict(g['onset_met'])} | "
                f"{f(g['crossover'])} |")
        log("(the crossover as the issue words it, the hit rate above which the I/O no longer hides behind the "
            "compute: where the measured load - compute turns positive, interpolated on the grid as the limit is; "
            "the limit is the same equation with the prefix at bulk H2D beside hbm's layers; 'above the grid': the "
            "loads hid at every hit rate run, which past the limit with the compute beside them more than 2% slower "
            "than hbm-part's is no win; 'at or below': they hid at none)")
    log("\n| T | hit | system | tokens/s (measured) | GPU $ per 1M tokens | holding $ per 1M tokens and hour | "
        "SSD GB written per 1M tokens | drive writes per day |")
    log("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in an["cost"]:
        log(f"| {c['T'] // 1024}K | {c['hit']:.3f} | {c['system']} | {c['tokens_per_s']:.0f} | {c['gpu_usd_per_mtok']:.3f} | "
            f"{c['hold_usd_per_mtok_h']:.4f} | {c['written_gb_per_mtok']:.1f} | {c['dwpd']:.2f} |")
    log("(prices: GPU ${:.2f}/h, DRAM ${}/GB/h, SSD ${}/GB/h; {} drives of {} TB rated {} DWPD; "
        "throughput measured, the rest derived)".format(b.args.gpu_usd_h, b.args.dram_usd_gb_h, b.args.ssd_usd_gb_h,
                                                      b.args.drives, b.args.drive_tb, b.args.drive_dwpd))


def cufile_probe(shm):
    """Tries cuFile on this machine: in a child process per setting (default, and compatibility
    mode forced), opens the driver and registers a file on the tmpfs, in the temp dir and in the
    home dir, each opened with O_DIRECT and buffered; gives each step's status and cuFile's log."""
    res = {}
    for name, extra in (("default", {}), ("compat-forced", {"CUFILE_FORCE_COMPAT_MODE": "true"})):
        env = dict(os.environ, **extra)
        d = tempfile.mkdtemp(prefix="gio-cufile-")
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--cufile-child", shm], env=env, cwd=d,
                               capture_output=True, text=True, timeout=120)
            try:
                res[name] = json.loads(p.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                res[name] = {"rc": p.returncode, "stderr": p.stderr[-2000:]}
            logf = os.path.join(d, "cufile.log")
            if os.path.exists(logf):
                with open(logf, errors="replace") as f:
                    res[name]["log_tail"] = f.read()[-3000:]
        finally:
            subprocess.run(["rm", "-rf", d])
    try:
        res["df"] = subprocess.run(["df", "-T", shm, tempfile.gettempdir(), os.path.expanduser("~")],
                                   capture_output=True, text=True).stdout
    except OSError:
        pass
    return res


def cufile_child(shm):
    res = {}
    try:
        lib = ctypes.CDLL("libcufile.so.0")
    except OSError as e:
        print(json.dumps({"load": str(e)}))
        return

    class Err(ctypes.Structure):
        _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]

    class Descr(ctypes.Structure):  # CUfileDescr_t: type, a union {int fd; void *handle}, fs_ops
        _fields_ = [("type", ctypes.c_int), ("pad", ctypes.c_int), ("fd", ctypes.c_int), ("fd_rest", ctypes.c_int),
                    ("fs_ops", ctypes.c_void_p)]  # the union is 8-byte aligned: the fd at offset 8

    lib.cuFileDriverOpen.restype = Err
    lib.cuFileHandleRegister.restype = Err
    lib.cuFileHandleRegister.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Descr)]
    lib.cuFileHandleDeregister.argtypes = [ctypes.c_void_p]
    e = lib.cuFileDriverOpen()
    res["driver_open"] = [e.err, e.cu_err]
    for where in (shm, tempfile.gettempdir(), os.path.expanduser("~")):
        path = os.path.join(where, f"gio-cufile-{os.getpid()}")
        try:
            with open(path, "wb") as f:
                f.write(b"\0" * (1 << 20))
            for direct in (True, False):
                flags = os.O_RDWR | (os.O_DIRECT if direct else 0)
                tag = f"{where}:{'O_DIRECT' if direct else 'buffered'}"
                try:
                    fd = os.open(path, flags)
                except OSError as ex:
                    res[tag] = f"open: {ex}"
                    continue
                d = Descr(1, 0, fd, 0, None)  # CU_FILE_HANDLE_TYPE_OPAQUE_FD
                h = ctypes.c_void_p()
                e = lib.cuFileHandleRegister(ctypes.byref(h), ctypes.byref(d))
                res[tag] = [e.err, e.cu_err]
                if e.err == 0:
                    lib.cuFileHandleDeregister(h)
                os.close(fd)
        except OSError as ex:
            res[where] = str(ex)
        finally:
            if os.path.exists(path):
                os.unlink(path)
    print(json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--cufile-child":
        cufile_child(sys.argv[2])
    else:
        main()
