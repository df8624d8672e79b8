"""Plans: per-layer load and save of batches of chunks (giouring/kv/plan.h)."""

from __future__ import annotations

import array
import contextlib
import ctypes
import errno
import operator
import sys
from typing import NamedTuple, Sequence

import torch

from . import _lib
from .errors import GiouringError

#: The numbers of :meth:`Plan.stats`, in the order python/csrc/plan.c counts them.
PLAN_STATS = ("loads", "saves", "requests", "layers", "failed", "stream_timeouts")
DEVICE_STATS = ("path", "objects", "bytes", "staged_objects", "staged_bytes", "failed", "timed_out")
MOVER_STATS = ("copies", "calls", "bytes", "cpu_ns", "cq_marks")
_PATHS = {1: "p2p", 2: "staged"}

_KEY_MASK = (1 << 64) - 1


class Result(NamedTuple):
    """One key's outcome in a finished batch."""

    rc: int
    """0, or the negative errno of its first failure (``-EIO``, ``-ETIME``, ``-ECANCELED``...);
    for a key that was no request, its planning outcome (0 for a load's miss, ``-EEXIST`` for a
    save of a key stored already)."""
    nvme_status: int
    """The NVMe status field of that failure (0 unless ``-EIO``)."""
    layer: int
    """The layer that failed; 0xffff for a key that was no request."""


def _key(k) -> tuple[int, int]:
    if isinstance(k, (bytes, bytearray)):
        if len(k) != 16:
            raise GiouringError(errno.EINVAL, f"a key of bytes has 16 of them, not {len(k)}")
        k = int.from_bytes(k, "big")
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"a key is an int below 2**128 or 16 bytes, not {type(k).__name__}")
    if not 0 <= k < 1 << 128:
        raise GiouringError(errno.EINVAL, f"key {k} is not in [0, 2**128)")
    return k >> 64, k & _KEY_MASK


def keys_array(keys) -> ctypes.Array:
    """Keys as the library takes them: (hi, lo) pairs of 64 bits."""
    keys = list(keys)
    if keys and all(type(k) is int for k in keys):
        # An engine plans a batch per request, thousands of keys at long prefixes: each key's
        # 16 big-endian bytes, swapped to native 64-bit words in one pass, cost a fifth of a
        # tuple per key (2000 keys: 0.18 against 0.68 ms on the development VM).
        try:
            words = array.array("Q", b"".join([k.to_bytes(16, "big") for k in keys]))
        except OverflowError:
            pass  # a negative key or one of 2**128 and more: the checks below name it
        else:
            if sys.byteorder == "little":
                words.byteswap()
            return (ctypes.c_uint64 * len(words)).from_buffer(words)
    flat = [v for k in keys for v in _key(k)]
    return (ctypes.c_uint64 * max(len(flat), 1))(*flat)


def _blocks_array(blocks: list) -> ctypes.Array:
    try:
        words = array.array("I", blocks)  # TypeError: not an int; OverflowError: not in [0, 2**32)
    except (TypeError, OverflowError):
        words = None
    if words is None or words.itemsize != 4:
        for b in blocks:
            if not isinstance(b, int) or not 0 <= b < 1 << 32:
                raise GiouringError(errno.EINVAL, f"block {b!r} is not a pool block number")
        return (ctypes.c_uint32 * max(len(blocks), 1))(*blocks)
    return (ctypes.c_uint32 * len(words)).from_buffer(words) if words else (ctypes.c_uint32 * 1)()


def _batch(keys, blocks):
    keys = list(keys)
    blocks = blocks.tolist() if isinstance(blocks, torch.Tensor) else list(blocks)
    if len(keys) != len(blocks):
        raise GiouringError(errno.EINVAL, f"{len(keys)} keys and {len(blocks)} blocks: one block per key")
    k = keys_array(keys)
    return len(keys), k, _blocks_array(blocks)


# gpy_plan_call()'s calls (python/csrc/gpy.h).
_LOAD, _SAVE, _WAIT = 0, 1, 2
_lib._sig("gpy_plan_call", ctypes.c_int, _lib.vp, _lib.u32, _lib.u32, _lib.u64, _lib.vp)

class Plan:
    """Per-layer load and save of batches over a store (make one with :meth:`Store.plan`).

    A batch is planned once (:meth:`load` looks the keys up and pins the hits; :meth:`save`
    reserves a slot per key), then each layer is one call (:meth:`load_layer`,
    :meth:`save_layer`), and :meth:`finish` ends it with each key's :class:`Result`. GPU engine,
    the layer calls and :meth:`wait_layer` go on the current CUDA stream of the pool's device (or
    ``stream``, of that device); CPU engine, a thread of the plan runs each layer and
    :meth:`wait_layer` waits on the host. Under torch.compile they are torch ops
    (``torch.ops.giouring.*``, which the compiler traces); eagerly they call the library
    directly, the same calls without the op's dispatch. One thread drives a plan.
    """

    def __init__(self, store, handle: int, engine: str):
        self.store = store
        self._h = handle
        self.engine = engine
        """``"cpu"`` or ``"gpu"``."""

    @property
    def handle(self) -> int:
        """The integer the torch ops take for this plan."""
        if self._h is None:
            raise ValueError("the plan is closed")
        return self._h

    def load(self, keys: Sequence, blocks) -> list[bool]:
        """Plans a restore: chunk ``keys[i]``'s layer-l object goes to object (l, ``blocks[i]``).

        Args:
            keys: chunk keys, each an int below 2**128 or 16 bytes (an engine: a hash of the
                chunk's tokens).
            blocks: a pool block per key (a sequence of ints or an integer tensor).

        Returns:
            For each key whether it was found (a miss is no error: its blocks are left alone).

        Raises:
            GiouringError: ``EINVAL`` (a block beyond the pool, more keys than the plan's
                max_requests, a batch open already: the message names it).
        """
        n, k, b = _batch(keys, blocks)
        hit = (ctypes.c_uint8 * max(n, 1))()
        _lib.check(_lib.lib.gpy_plan_load(self.handle, k, b, n, hit))
        return [bool(hit[i]) for i in range(n)]

    def save(self, keys: Sequence, blocks) -> list[int]:
        """Plans an offload: chunk ``keys[i]``'s layer-l object comes from object (l, ``blocks[i]``).

        Returns:
            Each key's outcome: 0 (a request), ``-errno.EEXIST`` (stored already: nothing to do),
            ``-errno.ENOSPC`` (no free slot), or the error writing its slot's entry.
        """
        n, k, b = _batch(keys, blocks)
        rc = (ctypes.c_int32 * max(n, 1))()
        _lib.check(_lib.lib.gpy_plan_save(self.handle, k, b, n, rc))
        return [rc[i] for i in range(n)]

    def _op(self, what, layer, timeout_ns=0, stream=None):
        pool = self.store.pool
        if isinstance(layer, bool):
            raise TypeError("a layer is an int, not bool")
        layer = operator.index(layer)  # an int, numpy's and torch's integers included; else TypeError
        if not 0 <= layer < pool.layers:
            raise GiouringError(errno.EINVAL, f"layer {layer} beyond the pool's {pool.layers} layers" if layer >= 0
                                else f"layer {layer} out of range")
        if timeout_ns < 0:
            raise GiouringError(errno.EINVAL, "a negative timeout")
        if torch.compiler.is_compiling():
            self._traced(what, layer, timeout_ns, stream)
            return
        # Eager: straight to the library, which the op would call the same way. A stream= then
        # needs no switch of the current stream, which cost 28 us a call through the op on an
        # H100 machine's host; with none the direct call costs about what the op does
        # (py_op_cost.py, bench/results/2026-12-06-py-op-cost-direct-h100.md).
        s = None
        if self.engine == "gpu":
            dev = pool.device_index
            if stream is None:
                s = _lib.current_raw_stream(dev)
            elif stream.device_index != dev:
                raise GiouringError(errno.EINVAL, f"a stream of cuda:{stream.device_index} for a pool on cuda:{dev}")
            else:
                s = stream.cuda_stream
        _lib.check(_lib.lib.gpy_plan_call(self.handle, layer, what, timeout_ns, s))

    def _traced(self, what, layer, timeout_ns, stream):
        """The layer call as a torch op, for torch.compile to trace (its graph holds the op, which
        declares that it writes the layer's tensors, so no access to them moves across it)."""
        pool = self.store.pool
        op = (torch.ops.giouring.load_layer.default, torch.ops.giouring.save_layer.default,
              torch.ops.giouring.wait_layer.default)[what]
        args = (timeout_ns,) if what == _WAIT else ()
        try:
            # The layer's tensors only: each tensor of an op's list costs dispatch time.
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                op(self.handle, layer, *args, pool.layer_tensors[layer])
        except RuntimeError as e:
            err = _lib.op_error(e)
            if err is None:
                raise
            raise err from None

    def load_layer(self, layer: int, stream: torch.cuda.Stream | None = None) -> None:
        """Loads layer ``layer`` of the batch into the pool: GPU engine, one kernel launch on
        ``stream`` (default: the current stream); CPU engine, queued to the plan's thread.
        Returns at once; wait with :meth:`wait_layer` or :meth:`finish`."""
        self._op(_LOAD, layer, stream=stream)

    def save_layer(self, layer: int, stream: torch.cuda.Stream | None = None) -> None:
        """Saves layer ``layer`` of the batch from the pool; as :meth:`load_layer`. The chunks
        commit at :meth:`finish`, once every layer ran."""
        self._op(_SAVE, layer, stream=stream)

    def wait_layer(self, layer: int, stream: torch.cuda.Stream | None = None, timeout: float = 10.0) -> None:
        """Waits until layer ``layer`` is done. GPU engine: ``stream`` (default: the current
        stream) waits on the device, up to ``timeout`` seconds from when the wait starts there (a
        timeout makes :meth:`finish` fail with ``ETIME``); CPU engine: the host waits.

        Raises:
            GiouringError: ``ETIME`` (CPU engine: not done in time), ``EINVAL``.
        """
        self._op(_WAIT, layer, int(timeout * 1e9), stream=stream)

    def finish(self, timeout: float | None = None, check: bool = True) -> list[Result]:
        """Ends the batch: waits for the layers run, commits a save's chunks (those whose layers
        all succeeded) or drops a load's pins, and gives each key's :class:`Result`.

        Args:
            timeout: how long to wait for layers still running, seconds (None: the plan's).
            check: raise when a key failed (else only return the results).

        Raises:
            GiouringError: the first failure by key order, its errno and NVMe status, with every
                key's result in ``results``: ``EIO`` (an NVMe error), ``ETIME``, ``ECANCELED`` (a
                save whose layers did not all run).
        """
        h = self.handle
        n = _lib.lib.gpy_plan_batch_keys(h)
        rc = (ctypes.c_int32 * max(n, 1))()
        st = (ctypes.c_uint16 * max(n, 1))()
        ly = (ctypes.c_uint16 * max(n, 1))()
        ret = _lib.lib.gpy_plan_finish(h, rc, st, ly, int((timeout or 0) * 1e9))
        results = [Result(rc[i], st[i], ly[i]) for i in range(n)]
        if ret < 0 and check:
            status = next((r.nvme_status for r in results if r.rc == ret and r.layer != 0xffff), 0)
            raise _lib.error(ret, status, results)
        return results

    def stats(self) -> dict[str, int]:
        """The plan's counters: batches planned (loads, saves), requests, layer calls, requests
        failed, stream waits that timed out."""
        out = (ctypes.c_uint64 * len(PLAN_STATS))()
        _lib.check(_lib.lib.gpy_plan_stats(self.handle, out, len(PLAN_STATS)))
        return dict(zip(PLAN_STATS, out))

    def wait_times(self) -> list[float]:
        """GPU engine: per layer, how long its last :meth:`wait_layer` in this batch (or the last
        one) stalled its stream for the layer's I/O, in seconds: from when the wait started running
        on the stream until the layer had finished, by the GPU's clock; 0.0 for a layer not waited
        for. Time the stream sat empty before the wait (a host behind its GPU) is not in it, where
        events recorded around the wait count both. Read it after that stream passed its waits.

        Raises:
            GiouringError: ``EOPNOTSUPP`` for a CPU-engine plan (its waits are the host's).
        """
        n = self.store.pool.layers
        out = (ctypes.c_uint64 * n)()
        _lib.check(_lib.lib.gpy_plan_wait_times(self.handle, out, n))
        return [out[i] / 1e9 for i in range(n)]

    def device_stats(self) -> list[dict]:
        """Per device of the store, in the store's order, what the finished batches moved and the
        path the data took: ``path`` ("p2p": the target moved it to and from the pool itself;
        "staged": through staging slots), ``objects`` and ``bytes`` (layer objects, or runs where a
        device takes a command per run, that completed), the ``staged_`` share of them, ``failed``
        requests and staged ones that ``timed_out`` (gio_kv_plan_info())."""
        n = _lib.lib.gpy_plan_devices(self.handle, None, 0)  # the store's devices
        _lib.check(n)
        out = (ctypes.c_uint64 * (len(DEVICE_STATS) * max(n, 1)))()
        n = _lib.lib.gpy_plan_devices(self.handle, out, n)
        _lib.check(n)
        rows = []
        for d in range(n):
            row = dict(zip(DEVICE_STATS, out[d * len(DEVICE_STATS):(d + 1) * len(DEVICE_STATS)]))
            row["path"] = _PATHS.get(row["path"], str(row["path"]))
            rows.append(row)
        return rows

    def mover_stats(self) -> dict[str, int]:
        """The copy-engine mover's counters (a plan made with ``mover="copy_engine"``; zeros
        otherwise): ``copies`` issued to the copy engine, their ``calls`` (cudaMemcpyBatchAsync,
        the groups' marks included), ``bytes``, ``cpu_ns``, its thread's CPU time so far, and
        ``cq_marks``, the CQ mirror words it stored (``completions="mirror"``)."""
        out = (ctypes.c_uint64 * len(MOVER_STATS))()
        _lib.check(_lib.lib.gpy_plan_mover(self.handle, out, len(MOVER_STATS)))
        return dict(zip(MOVER_STATS, out))

    def close(self) -> None:
        """Destroys the plan (a batch still open is finished first, its failure raised).

        Raises GiouringError(EBUSY), and leaves the plan as it was, while a :class:`Scheduler`
        still holds save layers of its batch."""
        if self._h is None:
            return
        rc = _lib.lib.gpy_plan_destroy(self._h)
        if rc == -errno.EBUSY:
            _lib.check(rc)
        self._h = None  # destroyed, also when finishing its batch failed
        if self in self.store._plans:
            self.store._plans.remove(self)
        _lib.check(rc)

    def __enter__(self) -> "Plan":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
