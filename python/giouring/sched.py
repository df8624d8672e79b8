"""The slack-aware I/O scheduler and the SM partition it runs on (giouring/sched/, giouring/host/partition.h).

Per slot (a layer's compute window in prefill, or a decode step) the scheduler issues the next
layer's load first, then the deferred save layers that still end within the slot's slack, and
never a save beside a read (docs/scheduler.md argues the rules). Bandwidths are the devices' (a
model), corrected online from the transfers' measured times where the scheduler is asked to
(``calibrate``).
"""

from __future__ import annotations

import ctypes
import errno
from typing import NamedTuple, Sequence

import torch

from . import _lib
from .errors import GiouringError

_lib._sig("gpy_sched_create", ctypes.c_int, _lib.vp, _lib.P(ctypes.c_double), _lib.u32, _lib.u32, _lib.u32, _lib.u32,
          _lib.u64, _lib.u64, _lib.u64, ctypes.c_double, _lib.u32, _lib.P(_lib.vp))
_lib._sig("gpy_sched_rates", ctypes.c_int, _lib.vp, _lib.P(ctypes.c_double), _lib.u32)
_lib._sig("gpy_sched_rates_reset", ctypes.c_int, _lib.vp)
_lib._sig("gpy_sched_destroy", ctypes.c_int, _lib.vp)
_lib._sig("gpy_sched_defer", ctypes.c_int, _lib.vp, _lib.vp, _lib.u32)
_lib._sig("gpy_sched_pending", _lib.u32, _lib.vp, _lib.vp)
_lib._sig("gpy_sched_slot", ctypes.c_int, _lib.vp, _lib.vp, _lib.u32, _lib.u32, _lib.u64, _lib.u32, _lib.vp,
          _lib.P(_lib.u64), _lib.u32)
_lib._sig("gpy_sched_idle", None, _lib.vp)
_lib._sig("gpy_sched_stats", ctypes.c_int, _lib.vp, _lib.P(_lib.u64), _lib.u32)
_lib._sig("gpy_sched_transfers", ctypes.c_int, _lib.vp, _lib.P(_lib.u64), _lib.u32)
_lib._sig("gpy_partition_create", ctypes.c_int, ctypes.c_int, _lib.u32, _lib.u32, ctypes.c_int, _lib.P(_lib.vp))
_lib._sig("gpy_partition_info", ctypes.c_int, _lib.vp, _lib.P(_lib.u32), _lib.u32)
_lib._sig("gpy_partition_stream", _lib.vp, _lib.vp, ctypes.c_int)
_lib._sig("gpy_partition_destroy", ctypes.c_int, _lib.vp)

#: The numbers of :meth:`Scheduler.stats`, in the order python/csrc/sched.c gives them.
SCHED_STATS = ("queued", "queued_bytes", "high_items", "high_bytes", "pushed", "popped", "refused", "pressured",
               "transfers_lost")

PHASES = {"prefill": 0, "decode": 1}


class Decision(NamedTuple):
    """What a slot issued, with the scheduler's modelled times (seconds from the slot's start)."""

    read_end: float
    """When the slot's reads end (modelled)."""
    bubble: float
    """How long the reads outlast the slack: the stall the model predicts."""
    slot_end: float
    """When the next slot starts: the later of the slack and the reads."""
    write_end: float
    """When the last save issued ends (0 with none)."""
    read_bytes: int
    write_bytes: int
    saves: int
    """Save layers issued (the oldest deferred ones, in order)."""
    sm: int
    """The slot's SM budget."""


class Transfer(NamedTuple):
    """A load or save layer the scheduler timed (:meth:`Scheduler.transfers`)."""

    kind: str
    """``"load"`` or ``"save"``."""
    layer: int
    bytes: int
    """Every device's bytes of the layer."""
    seconds: float
    """MEASURED: GPU engine, between CUDA events around its kernel on the slot's stream (from
    when the stream reached the kernel, so after what the stream waited for); CPU engine, by the
    plan's thread. 0 below the clock's resolution."""
    modelled: float
    """Its time at the bandwidths as given (before calibration)."""


class Scheduler:
    """A scheduler over a store's devices, with a bounded backlog of deferred save layers.

    Args:
        store: the store (its devices, in its order).
        read_gbps, write_gbps: each device's bandwidths, GB/s: one number for all, or one per device.
        mixed_gbps: reads and writes at once (the naive baseline's figure); None: the smaller.
        sm_min, sm_max: the I/O kernels' SMs per slot (GPU engine).
        max_items, max_bytes: the backlog's bound (save layers, bytes); ``soft_bytes``: above it a
            :meth:`defer` answers ``"pressure"`` (evict or recompute before it fills).
        timeout: CPU engine: how long a slot waits for its load layer before it queues saves.
        calibrate: the weight, in (0, 1], with which each measured transfer corrects the
            bandwidths (0: none, the model as given). Every load and save layer a slot issues is
            timed: GPU engine, on its stream (a pair of CUDA events, read back at a later slot,
            never waited for); CPU engine, by the plan's thread (read back at a later slot, while
            the plan has not begun another batch). Each direction keeps a factor, measured over
            modelled time, that divides its bandwidths (giouring/sched/rate.h). Where transfers run slower than the
            figures given, an uncorrected scheduler sees slack that is not there and puts saves
            into it, and each such save delays the next load. :meth:`rates` shows the factors.
        engine: the engine of every plan given to it (``"cpu"`` or ``"gpu"``); None: the one the
            store's plans take by default (:meth:`Store.engine_for`). A plan of the other engine
            is refused (``EINVAL``).
    """

    def __init__(self, store, read_gbps, write_gbps, mixed_gbps=None, sm_min: int = 1, sm_max: int = 8,
                 max_items: int = 1024, max_bytes: int = 1 << 34, soft_bytes: int = 0, timeout: float = 10.0,
                 calibrate: float = 0.0, engine: str | None = None):
        n = store.stats()["devices"]
        self.engine = store.engine_for(engine)
        """The engine of the plans it takes."""

        def per_dev(v, what):
            v = list(v) if isinstance(v, Sequence) else [v] * n
            if len(v) != n:
                raise GiouringError(errno.EINVAL, f"{what}: {len(v)} figures for {n} devices")
            return [float(x) for x in v]

        r, w = per_dev(read_gbps, "read_gbps"), per_dev(write_gbps, "write_gbps")
        m = per_dev(mixed_gbps, "mixed_gbps") if mixed_gbps is not None else [min(a, b) for a, b in zip(r, w)]
        gbps = (ctypes.c_double * (3 * n))(*[x for d in range(n) for x in (r[d], w[d], m[d])])
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.gpy_sched_create(store._handle(), gbps, n, sm_min, sm_max, max_items, max_bytes,
                                             soft_bytes, int(timeout * 1e9), float(calibrate),
                                             1 if self.engine == "gpu" else 0, ctypes.byref(h)))
        self.store = store
        self.calibrate = float(calibrate)
        """The calibration's weight (0: none, and no transfer is timed)."""
        self._h = h.value

    def _handle(self):
        if self._h is None:
            raise ValueError("the scheduler is closed")
        return self._h

    def defer(self, plan, layer: int) -> str:
        """Queues save layer ``layer`` of ``plan`` (a save batch open) for a later slot's slack.

        Returns:
            ``"ok"``, or ``"pressure"`` (queued; the backlog is above its soft mark).

        Raises:
            GiouringError: ``EAGAIN`` (the backlog is full: nothing was queued; issue slots or
                :meth:`drain` first), ``E2BIG`` (one layer exceeds the bound), ``EINVAL``.
        """
        rc = _lib.check(_lib.lib.gpy_sched_defer(self._handle(), plan.handle, layer))
        return "pressure" if rc == 1 else "ok"

    def pending(self, plan) -> int:
        """Save layers of ``plan`` still queued: finish a save plan only when this is 0."""
        return _lib.lib.gpy_sched_pending(self._handle(), plan.handle)

    def slot(self, load_plan=None, layer: int = 0, slack: float = 0.0, stream: torch.cuda.Stream | None = None,
             sm: int = 0, phase: str = "prefill") -> Decision:
        """Issues one slot: layer ``layer`` of ``load_plan`` (None: no reads), then the oldest
        deferred saves that end within ``slack`` seconds after the reads (in decode, at least
        the oldest one). GPU engine: everything on ``stream`` (default: the current stream), in
        that order, each I/O kernel on at most ``sm`` SMs (0: ``sm_max``); the stream must
        already wait for the compute that wrote the saves' KV. CPU engine: the plan's thread runs
        the layers; the host waits for the load before the saves are queued.
        """
        if phase not in PHASES:
            raise ValueError(f"phase: 'prefill' or 'decode', not {phase!r}")
        s = 0
        if self.engine == "gpu":
            # The current stream by its raw handle, as Plan's calls take it (no Stream object made).
            s = stream.cuda_stream if stream is not None else _lib.current_raw_stream(self.store.pool.device_index)
        out = (_lib.u64 * 8)()
        _lib.check(_lib.lib.gpy_sched_slot(self._handle(), load_plan.handle if load_plan is not None else None,
                                           layer, PHASES[phase], int(max(slack, 0.0) * 1e9), sm, s, out, 8))
        ns = [out[i] / 1e9 for i in range(4)]
        return Decision(*ns, out[4], out[5], out[6], out[7])

    def rates(self) -> dict:
        """The bandwidth calibration: ``read_factor`` and ``write_factor`` (measured over modelled
        transfer time; 1.0 until observed, above 1 where the devices run slower than the figures
        given) and how many transfers of each were observed."""
        out = (ctypes.c_double * 4)()
        _lib.check(_lib.lib.gpy_sched_rates(self._handle(), out, 4))
        return {"read_factor": out[0], "write_factor": out[1], "read_observed": int(out[2]),
                "write_observed": int(out[3])}

    def transfers(self) -> list[Transfer]:
        """The load and save layers timed since the last call, oldest first: how long each took
        against its compute window is whether the I/O hid behind it. Waits for nothing: a
        layer still running is given by a later call (synchronize the slots' stream first for
        all of them). Timed only with ``calibrate`` > 0; the newest 1024 are kept, and how many
        older ones were dropped unread is ``stats()["transfers_lost"]``. CPU engine: a plan's
        last load layer of a batch is timed only while the plan has not begun its next batch.

        Raises:
            GiouringError: ``EINVAL`` (a scheduler made without calibration), or the CUDA error
                reading a timer back.
        """
        out = (_lib.u64 * (5 * 256))()
        got: list[Transfer] = []
        while True:
            n = _lib.check(_lib.lib.gpy_sched_transfers(self._handle(), out, 256))
            for i in range(n):
                w, layer, nbytes, modelled, ns = out[5 * i:5 * i + 5]
                got.append(Transfer("save" if w else "load", layer, nbytes, ns / 1e9, modelled / 1e9))
            if n < 256:
                return got

    def reset_rates(self) -> None:
        """Forgets what the calibration learnt: the factors back to 1 and the observation counts
        to 0; transfers timed and not yet read back are dropped. For a workload whose conditions
        changed (a new context length, a bench's next point), where the old factors would plan
        its first slots."""
        _lib.check(_lib.lib.gpy_sched_rates_reset(self._handle()))

    def drain(self, stream: torch.cuda.Stream | None = None) -> int:
        """Issues every deferred save (decode-phase slots without reads until the backlog is
        empty); returns how many. For the end of a batch or before finishing a save plan."""
        n = 0
        while self.stats()["queued"]:
            d = self.slot(None, 0, slack=0.0, stream=stream, phase="decode")
            if d.saves == 0:
                raise GiouringError(errno.EIO, "scheduler: a decode slot issued no save with the backlog not empty")
            n += d.saves
        return n

    def idle(self) -> None:
        """Tells the scheduler the devices are idle (the streams were waited for)."""
        _lib.lib.gpy_sched_idle(self._handle())

    def stats(self) -> dict[str, int]:
        """The backlog: queued items and bytes, high water marks, pushed, popped, refused,
        pressured; ``transfers_lost``: timed transfers dropped before :meth:`transfers` took them."""
        out = (_lib.u64 * len(SCHED_STATS))()
        _lib.check(_lib.lib.gpy_sched_stats(self._handle(), out, len(SCHED_STATS)))
        return dict(zip(SCHED_STATS, out))

    def close(self) -> None:
        """Destroys the scheduler. Save layers still deferred are dropped: their plans' batches
        can then be finished (those layers reported as not run: ``ECANCELED``)."""
        if self._h is not None:
            h, self._h = self._h, None
            _lib.lib.gpy_sched_destroy(h)

    def __enter__(self) -> "Scheduler":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SMPartition:
    """A split of one GPU's SMs: ``io_sms`` for I/O kernels (rounded up to the driver's
    granularity), ``exec_sms`` (0: none) for GPU-executed targets' executors, the rest for
    compute, each side with a stream (green contexts). Hand ``exec_stream`` to
    :meth:`Store.create` or :meth:`Store.open` so that the executors standing in for drives hold
    none of compute's SMs (a real drive needs none). Make it before
    any persistent kernel starts: before the first batch of a store over GPU-executed targets
    (their executors start then); made after, it raises GiouringError(EBUSY), since making green
    contexts waits until no kernel runs. Close it after those stores.

    With ``fallback`` (default), ordinary streams where green contexts are unavailable
    (``isolated`` is then False).
    """

    def __init__(self, io_sms: int = 8, device: int | None = None, fallback: bool = True, exec_sms: int = 0):
        dev = torch.cuda.current_device() if device is None else device
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.gpy_partition_create(dev, io_sms, exec_sms, int(fallback), ctypes.byref(h)))
        self._h = h.value
        info = (_lib.u32 * 7)()
        _lib.check(_lib.lib.gpy_partition_info(self._h, info, 7))
        self.device_sms, self.io_sms, self.compute_sms = info[0], info[1], info[2]
        self.exec_sms = info[6]
        """SMs of the executors' side (0: none)."""
        self.isolated = bool(info[5])
        self.io_stream = torch.cuda.ExternalStream(_lib.lib.gpy_partition_stream(self._h, 0), device=dev)
        """Where the I/O kernels go (torch.cuda.ExternalStream)."""
        self.compute_stream = torch.cuda.ExternalStream(_lib.lib.gpy_partition_stream(self._h, 1), device=dev)
        """Where the engine's compute goes."""
        es = _lib.lib.gpy_partition_stream(self._h, 2) if exec_sms else None
        self.exec_stream = torch.cuda.ExternalStream(es, device=dev) if es else None
        """Where GPU-executed targets' executors go (:meth:`Store.create`'s ``exec_stream``), or None."""

    def close(self) -> None:
        """Destroys the partition (after every kernel on its streams ended)."""
        if self._h is not None:
            h, self._h = self._h, None
            _lib.check(_lib.lib.gpy_partition_destroy(h))

    def __enter__(self) -> "SMPartition":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
