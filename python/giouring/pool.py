"""KV pools described by torch tensors: which tensor dimension is which of giouring's six logical
dimensions, with the strides torch reports (a layout is never assumed from a shape)."""

from __future__ import annotations

import ctypes
import errno
from typing import Sequence

import torch

from . import _lib
from .errors import GiouringError

#: giouring's logical dimensions (enum gio_kv_dim), in its order.
DIMS = ("layer", "block", "part", "token", "head", "channel")

BASE_ONE, BASE_LAYER, BASE_LAYER_PART = 0, 1, 2


def _bad(message: str) -> GiouringError:
    return GiouringError(errno.EINVAL, "pool: " + message)


class KVPool:
    """A paged KV pool, described from the engine's tensors by their strides.

    Args:
        tensors: one tensor holding every layer (its ``dims`` name ``"layer"``); or a list of
            tensors, one per layer (``dims`` without ``"layer"``); or a list of tuples, one per
            layer, of that layer's parts as separate tensors, K then V (``dims`` without
            ``"layer"`` or ``"part"``). Every tensor has the same shape, strides, dtype and
            device; the tensors stay referenced for as long as the pool is.
        dims: for each dimension of a tensor, the logical dimension it is: ``"layer"``,
            ``"block"``, ``"part"`` (K/V), ``"token"``, ``"head"``, ``"channel"``, each at most
            once; or ``None`` for a dimension of size 1. A logical dimension not named has
            extent 1.

    A storage object is one (layer, block): all its parts, tokens, heads and channels. Objects
    may be scattered in memory in any way strides describe (K and V apart, heads before tokens,
    padding between blocks); the library moves each with one command where the target allows.

    Example, vLLM's layout, a tensor per layer of shape [2, blocks, block_size, heads, dim]::

        pool = KVPool(kv_caches, dims=("part", "block", "token", "head", "channel"))

    Raises:
        GiouringError: (``EINVAL``) tensors of different shapes, strides, dtypes or devices, a
            dimension of size above 1 not named, a name twice or unknown, a device other than the
            CPU or CUDA, or a pool the library refuses: elements that overlap, strides that
            interleave (the message names the dimensions), tensors that overlap (it names their
            layers).
    """

    def __init__(self, tensors, dims: Sequence[str | None]):
        if isinstance(tensors, torch.Tensor):
            mode, flat, parts = BASE_ONE, [tensors], 1
        elif isinstance(tensors, (list, tuple)) and tensors and all(isinstance(t, torch.Tensor) for t in tensors):
            mode, flat, parts = BASE_LAYER, list(tensors), 1
        elif (isinstance(tensors, (list, tuple)) and tensors
              and all(isinstance(t, (list, tuple)) and t and all(isinstance(x, torch.Tensor) for x in t)
                      for t in tensors)):
            parts = len(tensors[0])
            if any(len(t) != parts for t in tensors):
                raise _bad("every layer needs the same number of parts")
            mode, flat = BASE_LAYER_PART, [x for t in tensors for x in t]
        else:
            raise TypeError("tensors: a tensor, a list of tensors (one per layer), or a list of tuples of "
                            "tensors (one per layer, its parts)")
        t0 = flat[0]
        for i, t in enumerate(flat):
            for what in ("shape", "stride()", "dtype", "device"):
                a = t.stride() if what == "stride()" else getattr(t, what)
                b = t0.stride() if what == "stride()" else getattr(t0, what)
                if a != b:
                    raise _bad(f"tensor {i} has {what} {a}, tensor 0 {b}")
        if t0.device.type not in ("cpu", "cuda"):
            raise _bad(f"the tensors are on {t0.device}: a pool is in host memory or on a CUDA device")
        dims = tuple(dims)
        if len(dims) != t0.dim():
            raise _bad(f"dims names {len(dims)} dimensions, the tensors have {t0.dim()}")
        given = {BASE_ONE: (), BASE_LAYER: ("layer",), BASE_LAYER_PART: ("layer", "part")}[mode]
        extent = [1] * 6
        stride = [0] * 6
        seen = set()
        for i, name in enumerate(dims):
            if name is None:
                if t0.shape[i] != 1:
                    raise _bad(f"dimension {i} (size {t0.shape[i]}) has no name: name every dimension above size 1")
                continue
            if name not in DIMS:
                raise _bad(f"dimension {i}: unknown name {name!r} (use {', '.join(DIMS)} or None)")
            if name in seen:
                raise _bad(f"{name!r} named twice")
            if name in given:
                raise _bad(f"{name!r} is given by the list of tensors, not by a tensor dimension")
            seen.add(name)
            extent[DIMS.index(name)] = t0.shape[i]
            stride[DIMS.index(name)] = t0.stride(i)
        if mode != BASE_ONE:
            extent[0] = len(tensors)
        if mode == BASE_LAYER_PART:
            extent[2] = parts

        self.tensors = flat
        """The pool's tensors, per layer and part: what the ops take for any layer."""
        per = {BASE_ONE: None, BASE_LAYER: 1, BASE_LAYER_PART: parts}[mode]
        self.layer_tensors = [flat] * extent[0] if per is None else [flat[i:i + per] for i in range(0, len(flat), per)]
        """Per layer, the tensors holding it (its own one, its parts, or the pool's one tensor):
        what the ops take for that layer. Fewer tensors make each op cheaper to dispatch (every
        tensor of an op's list costs host time), and tell a compiler that a layer's op touches
        that layer only."""
        self.dims = dims
        self.base_mode = mode
        self.extent = tuple(extent)
        self.stride = tuple(stride)
        self.device = t0.device
        self.dtype = t0.dtype
        # The memory to register with each target: the tensors' storages, each once.
        regions = {}
        for t in flat:
            st = t.untyped_storage()
            regions[st.data_ptr()] = st.nbytes()
        self._regions = (ctypes.c_uint64 * (2 * len(regions)))(*[v for kv in regions.items() for v in kv])
        self._bases = (ctypes.c_uint64 * len(flat))(*[t.data_ptr() for t in flat])
        d = _lib.PoolDesc()
        d.base_mode = mode
        d.elem_bytes = t0.element_size()
        d.extent[:] = extent
        d.stride[:] = stride
        d.base = t0.data_ptr() if mode == BASE_ONE else 0
        d.bases = self._bases if mode != BASE_ONE else None
        d.regions = self._regions
        d.nregions = len(regions)
        d.device = -1 if t0.device.type == "cpu" else (
            t0.device.index if t0.device.index is not None else torch.cuda.current_device())
        self._desc = d
        self.device_index = d.device
        """The CUDA device of the tensors, or -1 for host memory."""
        obj, sig, runs = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint32()
        _lib.check(_lib.lib.gpy_pool_check(ctypes.byref(d), ctypes.byref(obj), ctypes.byref(sig), ctypes.byref(runs)))
        self.object_bytes = obj.value
        """Bytes of one storage object (one layer of one block)."""
        self.signature = sig.value
        """The device byte order of the pool's objects: a store refuses a pool of another."""
        self.runs = runs.value
        """Contiguous runs of memory per object (1: each object is one range)."""

    @property
    def layers(self) -> int:
        """Layers: the layer objects of a chunk."""
        return self.extent[0]

    @property
    def blocks(self) -> int:
        """Blocks of the pool: the pool blocks a batch's keys go to or come from."""
        return self.extent[1]

    def __repr__(self) -> str:
        shape = ", ".join(f"{n}={e}" for n, e in zip(DIMS, self.extent))
        return f"KVPool({shape}, {self.dtype}, {self.device}, object {self.object_bytes} B in {self.runs} run(s))"
