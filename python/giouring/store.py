"""Stores: the KV store (giouring/kv/store.h) over 1 to 16 targets, with a pool registered."""

from __future__ import annotations

import ctypes
import errno
from typing import Sequence

from . import _lib
from .errors import GiouringError
from .plan import Plan, keys_array
from .pool import KVPool

#: The numbers of :meth:`Store.stats`, in the order python/csrc/store.c gives them.
STORE_STATS = ("capacity", "valid", "free", "pinned", "hits", "misses", "evictions", "duplicates", "refused",
               "unreadable", "bytes_read", "bytes_written", "next_seq", "devices", "store_id_hi", "store_id_lo")

ENGINES = {"cpu": 0, "gpu": 1}
# gio_kv_plan_params::mover: who moves a staged load's objects into the pool.
MOVERS = {"warps": 0, "copy_engine": 1}
# gio_kv_plan_params::completions: how a staged load's warps learn of their completions.
COMPLETIONS = {"poll": 0, "mirror": 1}

#: Removals :meth:`Store.removed` keeps (GIO_KV_STORE_REMOVED_KEPT).
REMOVED_KEPT = 65536


class Store:
    """A KV store over targets, the pool registered with each of them.

    Open one with :meth:`create` (formats the targets) or :meth:`open` (a store created before,
    its targets in any order), then make plans (:meth:`plan`). Close it (or use ``with``) after
    its plans; the pool's tensors must live until then.

    Targets are URIs (README, "Targets"): ``file:///path/kv.img?size=1G``, ``mem://host?size=1G``
    and ``nvme-pci://0000:01:00.0`` are CPU-executed (a controller, or a thread standing in for
    one); ``mem://hbm?size=8G`` and ``mem://host?exec=gpu&size=8G`` are GPU-executed (a persistent
    executor kernel on SMs of its own stands in for the SSDs) and take the GPU engine, with the
    pool on that GPU.

    With the pool on a GPU, each CPU-executed target takes one of two paths (:attr:`paths`):
    peer-to-peer, where it reaches GPU memory (a software target copies on CUDA streams;
    ``nvme-pci`` needs a dma-buf of the GPU memory in iommufd), or staged, where that is refused
    or the URI says ``path=staged``: each plan then gets a pinned host staging area per target,
    and the GPU engine's warps move every object between its slot and the pool (docs/staged.md).
    A plan's calls are the same on both paths.
    """

    def __init__(self, handle: int, pool: KVPool, uris: list[str]):
        self._h = handle
        self.pool = pool
        """The pool registered with every target."""
        self.uris = uris
        """The targets, as given."""
        self._plans: list[Plan] = []

    @classmethod
    def create(cls, uris: Sequence[str], pool: KVPool, *, store_bytes: int = 0, timeout: float = 5.0,
               exec_stream=None) -> "Store":
        """Formats the targets as a new store for ``pool``'s chunks (what they held is lost).

        Args:
            uris: 1 to 16 target URIs; target d becomes device d.
            pool: the pool whose objects the chunks hold: its layers, object bytes and signature
                are written into each superblock.
            store_bytes: bytes of each target to use from its start (0: all of it).
            timeout: deadline of each NVMe command, seconds.
            exec_stream: GPU-executed targets: a stream on whose SMs their executor kernels run
                (each on a stream of its own there, started with the first batch), e.g.
                :attr:`SMPartition.exec_stream`; None: each target's own stream, on any SM. A
                ``torch.cuda.Stream`` or a ``cudaStream_t`` as an int; keep it alive until the
                first batch.

        Raises:
            GiouringError: a target that does not open (the message names it and why), a pool
                that cannot be registered or tabled there, a target too small (``ENOSPC``), an
                NVMe error (``EIO``, with the status in the message).
        """
        return cls._open(uris, pool, True, store_bytes, timeout, exec_stream)

    @classmethod
    def open(cls, uris: Sequence[str], pool: KVPool, *, timeout: float = 5.0, exec_stream=None) -> "Store":
        """Opens a store that :meth:`create` made: every committed chunk is served.

        Raises:
            GiouringError: ``ENODATA`` (a target was never formatted), ``EPROTO`` (a damaged
                superblock), ``EINVAL`` (a pool of another layout or shape than the store's, or
                targets that are not one whole store), and as :meth:`create`.
        """
        return cls._open(uris, pool, False, 0, timeout, exec_stream)

    @classmethod
    def _open(cls, uris, pool, create, store_bytes, timeout, exec_stream=None):
        if isinstance(uris, str):
            raise TypeError("uris: a list of target URIs")
        uris = list(uris)
        arr = (ctypes.c_char_p * max(len(uris), 1))(*[u.encode() for u in uris])
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.gpy_store_open(arr, len(uris), ctypes.byref(pool._desc), int(create), int(store_bytes),
                                           int(timeout * 1e9), ctypes.byref(h)))
        st = cls(h.value, pool, uris)
        if exec_stream is not None:
            s = exec_stream if isinstance(exec_stream, int) else getattr(exec_stream, "cuda_stream", None)
            try:
                if not isinstance(s, int):
                    raise TypeError("exec_stream: a torch.cuda.Stream or a cudaStream_t as an int")
                _lib.check(_lib.lib.gpy_store_exec_stream(st._h, s))
            except BaseException:
                st.close()
                raise
        return st

    @property
    def paths(self) -> list[dict[str, str]]:
        """Per target, as given: ``{"path": "p2p" or "staged", "why": ...}``, how it and the pool
        exchange data and why (the peer-to-peer refusal, for a staged one)."""
        out, why = [], ctypes.create_string_buffer(512)
        for i in range(len(self.uris)):
            path = _lib.check(_lib.lib.gpy_store_path(self._handle(), i, why, len(why)))
            out.append({"path": "staged" if path == 2 else "p2p", "why": why.value.decode(errors="replace")})
        return out

    def engine_for(self, engine: str | None = None) -> str:
        """``engine`` checked, or for None the one a plan takes by default: ``"gpu"`` for
        GPU-executed targets and for a pool on a GPU with a staged target, else ``"cpu"``."""
        if engine is None:
            staged_gpu = self.pool.device.type == "cuda" and any(p["path"] == "staged" for p in self.paths)
            return "gpu" if self.gpu_targets or staged_gpu else "cpu"
        if engine not in ENGINES:
            raise ValueError(f"engine: 'cpu' or 'gpu', not {engine!r}")
        return engine

    @property
    def gpu_targets(self) -> bool:
        """Whether the targets are GPU-executed (they take the GPU engine)."""
        return bool(_lib.lib.gpy_store_gpu_targets(self._handle()))

    def plan(self, max_requests: int, *, engine: str | None = None, queues: int | None = None,
             queue_depth: int | None = None,
             io_ctas: int = 0, io_warps: int = 0, timeout: float | None = None, poll_ns: int = 0,
             move_depth: int = 0, mover: str = "warps", completions: str = "poll") -> Plan:
        """Makes a plan: batches of up to ``max_requests`` keys, then one call per layer.

        Args:
            max_requests: most keys of one batch.
            engine: ``"cpu"`` (a thread of the plan runs each layer: CPU-executed targets) or
                ``"gpu"`` (one launch of the library's I/O kernel per layer on the current
                stream: GPU-executed targets, or CPU-executed ones whose queue pairs the GPU
                fills; the pool on a GPU); None: GPU-executed targets and a GPU pool with a
                staged target take the GPU engine, the rest the CPU engine.
            queues, queue_depth: CPU-executed targets: queue pairs per target and their depth
                (None: 2 of 64 for the CPU engine, 4 of 256 for the GPU engine, whose I/O kernel
                has 64 warps submitting; a staged target's staging area holds as many slots per
                queue pair, 32 to 64, each a command's data).
            io_ctas, io_warps: GPU engine: thread blocks of the I/O kernel and warps in each
                (0: the library's defaults, 8 and 8).
            timeout: deadline of each command group, seconds (None: the store's).
            poll_ns: GPU engine: the least pause, in nanoseconds, between a warp's polls of its
                completions (0: a back-off from 32 ns to 1 us; at most 1 ms). Where completion
                queues are in host memory each poll reads across PCIe: longer pauses read less,
                at the cost of completion latency.
            move_depth: GPU engine, staged devices: 16-byte loads in flight per lane while an
                object moves between its staging slot and the pool, 1 to 16 (0: the library's
                default, 4). Deeper moves faster and costs kernels in the other SM partition more
                (docs/staged.md).
            mover: GPU engine, staged devices: who moves a load's objects from their slots into
                the pool: ``"warps"`` (the I/O kernel's, ``move_depth`` loads in flight a lane) or
                ``"copy_engine"`` (a thread of the plan issues the copies to the copy engine; the
                warps only submit, reap and wait: docs/staged.md, "Design E"). Saves are moved by
                the warps either way.
            completions: with ``mover="copy_engine"``, how a load's warps learn of their
                completions: ``"poll"`` (they poll their CQs in host memory) or ``"mirror"`` (the
                mover's thread watches the CQs and moves a word in GPU memory when one changed; the
                warps read their CQ only then: docs/staged.md, "Design C over E").

        With GPU-executed targets, make every plan before the first batch: the targets'
        executors start with it.
        """
        engine = self.engine_for(engine)
        if mover not in MOVERS:
            raise ValueError(f"mover: 'warps' or 'copy_engine', not {mover!r}")
        if completions not in COMPLETIONS:
            raise ValueError(f"completions: 'poll' or 'mirror', not {completions!r}")
        if queues is None:
            queues = 4 if engine == "gpu" else 2
        if queue_depth is None:
            queue_depth = 256 if engine == "gpu" else 64
        for name, v in (("poll_ns", poll_ns), ("move_depth", move_depth)):
            if not isinstance(v, int) or not 0 <= v < 1 << 32:
                raise GiouringError(errno.EINVAL, f"{name} {v!r}: an int from 0")
        h = ctypes.c_void_p()
        _lib.check(_lib.lib.gpy_plan_create(self._handle(), ENGINES[engine], max_requests, queues, queue_depth,
                                            io_ctas, io_warps, int((timeout or 0) * 1e9), poll_ns, move_depth,
                                            MOVERS[mover], COMPLETIONS[completions],
                                            ctypes.byref(h)))
        p = Plan(self, h.value, engine)
        self._plans.append(p)
        return p

    def contains(self, keys: Sequence) -> list[bool]:
        """Which of ``keys`` are stored (committed), without reading, pinning or counting them.

        For a scheduler deciding how much of a prompt it could load: nothing is reserved, so a
        chunk found here may be evicted before :meth:`Plan.load` (which then reports a miss).
        Asking moves no chunk in the LRU order and counts no hit or miss.

        Raises:
            TypeError: a key that is neither an int nor bytes; GiouringError: ``EINVAL`` for one
                outside [0, 2**128) or of other than 16 bytes.
        """
        keys = list(keys)
        found = (ctypes.c_uint8 * max(len(keys), 1))()
        _lib.check(_lib.lib.gpy_store_contains(self._handle(), keys_array(keys), len(keys), found))
        return [bool(found[i]) for i in range(len(keys))]

    def remove(self, keys: Sequence) -> list[bool]:
        """Removes the chunks of ``keys``: each entry written FREE and made durable, each key out
        of the index (one of :meth:`removed`'s). Returns, per key, whether it was stored.

        For a chunk whose reads fail: it stays stored after a failed load, and saving its key
        again is ``EEXIST``; remove it, and the next save stores it anew (a drive remaps a bad
        block when it is written).

        Raises:
            TypeError / GiouringError as :meth:`contains`; GiouringError ``EBUSY`` for a chunk
                being loaded or saved (a plan holds it), ``EIO`` / ``ETIME`` when writing its entry
                FREE failed (it is out of the index all the same; :meth:`close` writes the entry
                FREE again, and raises where that fails too: the key may then be found again at
                the next open). The keys before the failing one are removed, those after it are
                not.
        """
        keys = list(keys)
        done = (ctypes.c_uint8 * max(len(keys), 1))()
        _lib.check(_lib.lib.gpy_store_remove(self._handle(), keys_array(keys), len(keys), done))
        return [bool(done[i]) for i in range(len(keys))]

    def remove_failed(self, keys: Sequence, rcs: Sequence[int]) -> list[bool]:
        """After a load batch: removes the chunks whose load failed in a way that would repeat,
        so that the recompute's save stores them anew (left stored, a save of the key is
        ``EEXIST`` and every later hit fails again). ``rcs[i]`` is key i's outcome
        (:attr:`Result.rc`): ``-EIO`` (the device failed the read) removes it at once;
        ``-ETIME`` (the read missed its deadline) the second time that key's load does so
        within the store's last 256 such misses (once is no proof the chunk is bad: a busy
        device, and a chunk whose reads always time out would otherwise cost every hit the
        whole deadline); anything else leaves it. The policy is the core store's
        (``gio_kv_store_remove_failed()``), which C embedders call the same way. Returns, per
        key, whether it was removed.

        Raises:
            GiouringError: as :meth:`remove`, naming the key; ``EINVAL`` for a length mismatch.
        """
        keys, rcs = list(keys), [int(r) for r in rcs]
        if len(keys) != len(rcs):
            raise GiouringError(errno.EINVAL, f"{len(keys)} keys and {len(rcs)} outcomes: one outcome per key")
        done = (ctypes.c_uint8 * max(len(keys), 1))()
        _lib.check(_lib.lib.gpy_store_remove_failed(self._handle(), keys_array(keys),
                                                    (ctypes.c_int32 * max(len(rcs), 1))(*rcs), len(keys), done))
        return [bool(done[i]) for i in range(len(keys))]

    def keys(self) -> list[int]:
        """The keys of the chunks the store holds (committed), as ints, slot by slot: what an index
        kept elsewhere starts from. No I/O, no pin, no change to the LRU order. A chunk stored or
        evicted while this runs (another thread) may or may not be listed: take
        :meth:`removed`'s cursor first to learn what went since."""
        out, piece = [], 65536
        buf = (ctypes.c_uint64 * (2 * piece))()
        nxt, at = ctypes.c_uint64(), 0
        while True:
            n = _lib.check(_lib.lib.gpy_store_keys(self._handle(), at, buf, piece, ctypes.byref(nxt)))
            out += [(buf[2 * i] << 64) | buf[2 * i + 1] for i in range(n)]
            if nxt.value == at or n < piece:
                return out
            at = nxt.value

    def removed(self, since: int = 0, *, max_keys: int = 4096) -> tuple[list[int], int, bool]:
        """The keys the store removed (evicted, or by :meth:`remove`) since ``since``, oldest
        first, as ints:
        ``(keys, next, lost)``. ``since`` is 0 after the open, then the ``next`` of the last call;
        ``keys`` holds at most ``max_keys`` (call again from ``next`` for the rest).

        The store keeps the last :data:`REMOVED_KEPT` removals of this open in memory. ``lost``
        is True when more happened since ``since``: ``keys`` is then empty and ``next`` is where
        the journal is now; a caller keeping an index of the store must rebuild it (from
        :meth:`contains`) before going on from ``next``.

        Raises:
            GiouringError: ``EINVAL`` for ``since`` beyond the removals so far.
        """
        if not isinstance(max_keys, int) or not 1 <= max_keys <= 1 << 24:
            raise ValueError(f"max_keys: 1 to 2**24, not {max_keys!r}")
        out = (ctypes.c_uint64 * (2 * max_keys))()
        nxt = ctypes.c_uint64()
        rc = _lib.lib.gpy_store_removed(self._handle(), since, out, max_keys, ctypes.byref(nxt))
        if rc == -errno.ERANGE:
            return [], nxt.value, True
        _lib.check(rc)
        return [(out[2 * i] << 64) | out[2 * i + 1] for i in range(rc)], nxt.value, False

    def stats(self) -> dict[str, int]:
        """The store's counters and sizes (gio_kv_store_stats): slots (capacity, valid, free,
        pinned), hits, misses, evictions, what the open's scan found (duplicates, refused,
        unreadable), bytes_read, bytes_written, next_seq, devices and the store's id."""
        out = (ctypes.c_uint64 * len(STORE_STATS))()
        _lib.check(_lib.lib.gpy_store_stats(self._handle(), out, len(STORE_STATS)))
        return dict(zip(STORE_STATS, out))

    def inject_fault(self, device: int, fail_nth: int, nvme_status: int) -> None:
        """For tests: device ``device`` (a CPU-executed software target) fails its
        ``fail_nth``-th I/O command from now on with ``nvme_status``; ``fail_nth`` 0 clears it.

        Raises:
            GiouringError: ``EOPNOTSUPP`` on a target with no software fault injection
                (``nvme-pci``, GPU-executed), ``EINVAL`` for a device beyond the store.
        """
        _lib.check(_lib.lib.gpy_store_inject(self._handle(), device, fail_nth, nvme_status))

    def close(self) -> None:
        """Destroys the store's plans, closes the store (flushing each target) and its targets.

        A plan a :class:`Scheduler` still holds save layers of stays, and so does the store: the
        EBUSY is raised, and closing the scheduler first lets a second close succeed."""
        if self._h is None:
            return
        first = None
        for p in list(self._plans):  # each close takes its plan off the list
            try:
                p.close()
            except Exception as e:  # every plan it can is destroyed; the first failure is raised
                first = first or e
        if self._plans:  # plans refused (EBUSY): the store stays open for them
            raise first
        h, self._h = self._h, None
        _lib.check(_lib.lib.gpy_store_close(h))
        if first:
            raise first

    def _handle(self) -> int:
        if self._h is None:
            raise ValueError("the store is closed")
        return self._h

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
